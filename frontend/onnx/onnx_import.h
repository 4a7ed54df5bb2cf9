/* The ONNX importer: .onnx (protobuf, opsets 7-18) -> IRModule with one function "main", spans
 * named after the ONNX nodes (seed 001's span filler). */
#ifndef GRAFT_FRONTEND_ONNX_IMPORT_H
#define GRAFT_FRONTEND_ONNX_IMPORT_H

#include "base/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "base/tensor.h"
#include "ir/expr.h"
#include "runtime/value.h"

typedef struct onnx_input_shape {
    const char *name;             /* graph input name */
    int32_t ndim;
    int64_t dims[RT_MAX_NDIM];
} onnx_input_shape;

/* A graph input replaced by a constant (like an initializer): its value is known at import, so
 * shape inputs (Reshape's shape, Slice's starts, Resize's sizes, ...) fold. */
typedef struct onnx_input_value {
    const char *name;             /* graph input name */
    rt_tensor *value;             /* borrowed; the constants take their own references */
} onnx_input_value;

/* A graph input of sequence or optional type, specialized like --input-shape specializes dims:
 * it becomes a tuple param of n fields (an optional: n is 0 or 1, absent or present), field k
 * a tensor of shape elems[k] (elems NULL: the declared element type). An optional of a
 * sequence that is present (n 1) holds a tuple of `inner` tensors shaped by elems. */
typedef struct onnx_input_seq {
    const char *name;             /* graph input name */
    uint32_t n;
    int32_t inner;                /* optional(sequence) present: its length; else -1 */
    const onnx_input_shape *elems; /* the tensors' shapes (name unused), or NULL */
} onnx_input_seq;

/* Filled by an import (success or failure): the graph inputs (params) whose values a converter
 * needed at import (a shape, axes, scales, pads, k, ... parameter) and that no op used as a
 * tensor. Binding them through `values` and importing again folds them (the conformance runner
 * does this with each data set's tensors). Names are interned in the import's ctx. */
#define ONNX_MAX_WANTED 16
typedef struct onnx_wanted_inputs {
    uint32_t n;
    const char *names[ONNX_MAX_WANTED];
} onnx_wanted_inputs;

typedef struct onnx_import_opts {
    const onnx_input_shape *shapes; /* bind dynamic dims of these inputs */
    uint32_t nshapes;
    const onnx_input_value *values; /* inputs that become constants (may be NULL) */
    uint32_t nvalues;
    const onnx_input_seq *seqs;     /* lengths of sequence / optional inputs (may be NULL) */
    uint32_t nseqs;
    bool no_spans;                  /* graft import --no-spans */
    onnx_wanted_inputs *wanted;     /* out (may be NULL): inputs needed as values */
} onnx_import_opts;

/* opts may be NULL. Unsupported ops: GR_ERR_UNSUPPORTED listing every unsupported node (name,
 * op type, opset) at once. A truncated or corrupt file: GR_ERR_INVALID naming the file. */
GR_API gr_status onnx_import_file(ir_ctx_t *ctx, const char *path, const onnx_import_opts *opts,
                                  ir_module **out, gr_diag *diag);
GR_API gr_status onnx_import_buffer(ir_ctx_t *ctx, const char *name, const uint8_t *buf, size_t len,
                                    const onnx_import_opts *opts, ir_module **out, gr_diag *diag);

/* Reads a serialized ONNX TensorProto (.pb of the ONNX backend test data). *name may be NULL;
 * when given it receives a heap copy of the tensor's name (caller frees). */
gr_status onnx_tensor_load_pb(const char *path, rt_tensor **out, char **name, gr_diag *diag);

/* What a graph input or output holds. */
typedef enum onnx_io_kind { ONNX_IO_TENSOR, ONNX_IO_SEQUENCE, ONNX_IO_OPTIONAL, ONNX_IO_OTHER } onnx_io_kind;

/* The kinds of a model's graph inputs (initializers left out) and outputs, up to max each. */
gr_status onnx_model_io_kinds(const char *path, onnx_io_kind *ins, uint32_t *nin, onnx_io_kind *outs,
                              uint32_t *nout, uint32_t max, gr_diag *diag);

/* The names of a model's graph inputs (initializers left out) and outputs, in graph order, as
 * {"inputs": [...], "outputs": [...]} JSON (a heap string, free()); NULL with diag set when the
 * file is not a readable ONNX model. The importer keeps the inputs' order (its params) but
 * sanitizes names; bindings use this to offer the model's own names (ONNX Runtime's). */
GR_API char *onnx_model_io_names(const char *path, gr_diag *diag);

/* The quantization parameters around each layer of a QDQ model (graft diff), as JSON (a heap
 * string, free()): {"LAYER": [{"role": "self" (a Q/DQ layer's own) | "input K" (read through a
 * DequantizeLinear) | "output K" (written into a QuantizeLinear), "by": its op, "tensor", "scale"
 * (per tensor) or "scale_min", "scale_max", "channels" (per axis), "zero_point" likewise,
 * "type" ("uint8", "int8", ...)}...]}; {} for a model without them. LAYER is the importer's
 * layer name. NULL with diag set when the file is not a readable ONNX model. */
char *onnx_model_qparams(const char *path, gr_diag *diag);

/* Reads a data file of the ONNX backend test data: a TensorProto (a tensor value), a
 * SequenceProto (a tuple of its items) or an OptionalProto (a tuple of 0 or 1 value), as kind
 * says. *name as for onnx_tensor_load_pb. */
gr_status onnx_value_load_pb(const char *path, onnx_io_kind kind, rt_value *out, char **name, gr_diag *diag);

#endif
