/* Internals of the ONNX importer, shared by onnx_import.c, onnx_tensor.c, onnx_fold.c and the
 * onnx_convert_*.c converter files. */
#ifndef GRAFT_FRONTEND_ONNX_IMPL_H
#define GRAFT_FRONTEND_ONNX_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "onnx/onnx.pb-c.h"

/* Largest dim, size, stride or pad taken from a model (keeps shape arithmetic far from int64
 * overflow). */
#define ONNX_DIM_MAX (INT64_C(1) << 40)

/* One ONNX tensor name's value during import. `expr` is the Relax value (a var or constant);
 * `known` is its value when it can be computed at import (initializers, Constant nodes, folded
 * shape subgraphs); `sym` is a small int tensor (row-major, shape sym_shape[0..sym_ndim)) whose
 * elements are known symbolic dims (Shape of a tensor with dynamic dims, and what shape arithmetic
 * makes of it: torch reverses pads through a [-1, 2] reshape and a transpose). A known value gets an expr lazily, when an op needs it
 * as a tensor (onnx_val_expr). */
typedef struct onnx_val {
    const char *name;           /* interned ONNX name */
    ir_expr *expr;
    rt_tensor *known;           /* one reference owned by the importer */
    const ir_prim **sym;        /* arena array of nsym dims; NULL when none */
    int32_t nsym;
    int32_t sym_ndim;           /* 0: a scalar (nsym == 1) */
    int64_t sym_shape[RT_MAX_NDIM];
    ir_dtype sym_dtype;         /* the ONNX dtype of a sym value (its values are whole numbers) */
    const ir_span *span;        /* span of a lazily made constant */
    /* Spans of the nodes folded into this value that no binding carries (seed 001): set for a
     * node output that is known, symbolic or an alias of a leaf (the node's own span, marked,
     * then its absorbed producers); NULL for an emitted binding, an initializer, a param. Every
     * consumer appends it (marks cleared) to its own span, so folded layers never vanish. */
    const ir_span *folded;
    bool is_param;              /* a graph input left as a param */
    bool value_asked;           /* a converter asked for its value (it was not known) */
    bool as_tensor;             /* an op used it as a tensor (cv_in) */
} onnx_val;

typedef struct onnx_importer {
    ir_ctx_t *ctx;
    ir_bb_t *bb;
    gr_diag *diag;
    const char *file;           /* for messages */
    char *dir;                  /* the model's directory (external data), heap */
    const onnx_import_opts *opts;
    int64_t opset;              /* of the default domain */
    gr_map vals;                /* interned name -> onnx_val * (heap) */
    GR_VEC(onnx_val *) all;     /* every onnx_val, for freeing */
    gr_map dim_vars;            /* interned dim_param -> ir_prim var */
} onnx_importer;

/* The node being converted. */
typedef struct onnx_cv {
    onnx_importer *imp;
    ir_ctx_t *ctx;
    const Onnx__NodeProto *node;
    const char *layer;          /* span source name of the node */
    const ir_span *span;        /* unmarked (intermediate expressions) */
    const ir_span *out_span;    /* marked as producing the layer's output */
    int64_t opset;
    bool folding;               /* the folder runs (its probes of known values are no needs) */
    uint32_t nin;
    onnx_val *const *in;        /* nin entries; NULL for an absent optional input */
    uint32_t nout;
    ir_expr **out;              /* converter results (emitted or not), nout entries */
    rt_tensor **out_known;      /* fold results (reference owned by the slot) */
    const ir_prim ***out_sym;   /* fold results: symbolic int vectors */
    int32_t *out_nsym;
    int32_t *out_sym_ndim;
    int64_t (*out_sym_shape)[RT_MAX_NDIM];
    ir_dtype *out_sym_dtype;
} onnx_cv;

/* Converters return GR_OK or an error with imp->diag filled. */
typedef gr_status (*onnx_convert_fn)(onnx_cv *cv);
/* Folders return 1 when they computed every output at import, 0 to let the converter run, or a
 * negative status on error. */
typedef int (*onnx_fold_fn)(onnx_cv *cv);

typedef struct onnx_op_entry {
    const char *op_type;
    int16_t since, until;       /* supported opset range (inclusive) */
    onnx_convert_fn convert;
    onnx_fold_fn fold;          /* NULL: never folded */
} onnx_op_entry;

/* onnx_convert.c: the table. */
const onnx_op_entry *onnx_op_find(const char *op_type, int64_t opset);
/* The entry of a node, by its domain (default, ai.onnx.preview.training's optimizers, or
 * com.microsoft's quantized ops). */
const onnx_op_entry *onnx_op_find_node(const Onnx__NodeProto *n, int64_t opset);
/* Why a standard op stays unsupported on purpose (strings, random numbers, training), or NULL. */
const char *onnx_op_unsupported_reason(const char *op_type);

/* onnx_import.c: converts subgraph g's nodes in place (an If branch, one unrolled Loop / Scan
 * iteration): its inputs are bound to copies of ins[0..nin), its initializers become known
 * values, and outs (g->n_output entries) receive its output values. Names stay global: an
 * iteration rebinds the body's names. */
gr_status onnx_subgraph_inline(onnx_importer *imp, const Onnx__GraphProto *g, const onnx_val *const *ins, uint32_t nin,
                               onnx_val **outs);

/* onnx_seqdata.c: the kind of a type. */
onnx_io_kind onnx_type_kind(const Onnx__TypeProto *tp);

/* ---- onnx_tensor.c ---- */
/* ONNX TensorProto.DataType -> dtype; false for unsupported (string, complex, ...). */
bool onnx_dtype_from_elem(int32_t elem, ir_dtype *out);
/* Why an element type is refused ("string: string tensors are not supported"). */
const char *onnx_elem_unsupported_name(int32_t elem);
/* TensorProto -> tensor (typed fields, raw_data or external data relative to dir, which may be
 * NULL). `what` names the tensor in messages. */
gr_status onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *dir, const char *file,
                                 rt_tensor **out, gr_diag *diag);
/* The same, taking tp's raw_data as the tensor's data when it is 64-byte aligned (the wire
 * unpack's allocator makes large bytes fields so; tp has no raw_data afterwards): an
 * initializer's bytes are copied once, by protobuf-c, instead of twice. */
gr_status onnx_tensor_take_proto(Onnx__TensorProto *tp, const char *dir, const char *file, rt_tensor **out,
                                 gr_diag *diag);
/* Exact int64 read of element i of an integer or bool tensor (floats are truncated, saturating). */
int64_t onnx_tensor_get_i64(const rt_tensor *t, int64_t i);
/* Stores v into element i, converting like a C cast but saturating instead of undefined. */
void onnx_tensor_set_f64(rt_tensor *t, int64_t i, double v);
void onnx_tensor_set_i64(rt_tensor *t, int64_t i, int64_t v);

/* Whole file into a heap buffer (caller frees). */
gr_status onnx_read_file(const char *path, uint8_t **buf, size_t *len, gr_diag *diag);
/* The model of an ONNX file with a graph (free with onnx__model_proto__free_unpacked), NULL with
 * diag set when it is not one. */
Onnx__ModelProto *onnx_read_model(const char *path, gr_diag *diag);
/* A model file's bytes: a read-only mapping of a regular file, else (a pipe, ...) read into the
 * heap. */
typedef struct {
    const uint8_t *data;
    size_t len;
    bool mapped;
    size_t dropped; /* mapped: the page-aligned prefix whose pages were dropped */
} onnx_file;
gr_status onnx_file_open(const char *path, onnx_file *f, gr_diag *diag);
/* Drops the resident pages of [0, upto) of a mapping (rounded down to a page); they are read
 * again from the file if touched. Nothing for a heap buffer. */
void onnx_file_drop(onnx_file *f, size_t upto);
void onnx_file_close(onnx_file *f);
/* Directory part of path ("." when none); heap. */
char *onnx_dirname(const char *path);

/* ---- onnx_wire.c: a ModelProto unpacked one node or initializer at a time ---- */
/* Where the graph and its nodes and initializers are in a serialized ModelProto (offsets). */
enum { ONNX_WIRE_NODE, ONNX_WIRE_INITIALIZER, ONNX_WIRE_KINDS };
typedef struct {
    int kind;          /* ONNX_WIRE_* */
    size_t field;      /* the field's key */
    size_t off, len;   /* its payload: a NodeProto or TensorProto */
} onnx_wire_part;
typedef struct {
    size_t graph_field, graph_off, graph_len; /* the graph field's key; its payload */
    onnx_wire_part *parts;                    /* in file order */
    size_t nparts, count[ONNX_WIRE_KINDS];
    size_t split_bytes;                       /* the parts' fields' bytes in all */
} onnx_wire_layout;
/* Walks buf (bounds-checked): false on anything malformed or unexpected (no graph, a graph field
 * twice, a truncated varint, a length past the end, a group), leaving lay empty. */
bool onnx_wire_split(const uint8_t *buf, size_t len, onnx_wire_layout *lay);
void onnx_wire_layout_free(onnx_wire_layout *lay);
/* Called after each part is unpacked: bytes [0, upto) of the buffer are no longer read unless
 * the caller falls back to a whole-buffer unpack. */
typedef void (*onnx_wire_release)(void *arg, size_t upto);
/* What onnx__model_proto__unpack gives (free with onnx__model_proto__free_unpacked), unpacking
 * the model without its graph's nodes and initializers, then each of them in order. NULL when
 * onnx_wire_split refuses buf or protobuf-c fails on a part: the caller then unpacks the whole
 * buffer, which reports the error as before. */
Onnx__ModelProto *onnx_wire_unpack_model(const uint8_t *buf, size_t len, onnx_wire_release release,
                                         void *arg);

/* ---- onnx_convert.c helpers for converters ---- */
/* Attributes of the node. */
const Onnx__AttributeProto *cv_attr(const onnx_cv *cv, const char *name);
int64_t cv_attr_int(const onnx_cv *cv, const char *name, int64_t dflt);
double cv_attr_float(const onnx_cv *cv, const char *name, double dflt);
/* NULL when absent; interned. */
const char *cv_attr_str(const onnx_cv *cv, const char *name, const char *dflt);
/* Number of ints (-1 when absent), copies up to max. */
int cv_attr_ints(const onnx_cv *cv, const char *name, int64_t *out, int max);

/* Input i present (given and non-empty)? */
bool cv_has(const onnx_cv *cv, uint32_t i);
/* Input i as an expression (makes the constant of a known value); NULL + diag when absent. */
ir_expr *cv_in(onnx_cv *cv, uint32_t i);
/* Known value of input i, or NULL. */
rt_tensor *cv_known(const onnx_cv *cv, uint32_t i);
/* Struct info of input i (tensor), NULL when absent. */
const ir_sinfo *cv_sinfo(onnx_cv *cv, uint32_t i);
/* Rank of input i, -1 when unknown. */
int32_t cv_rank(onnx_cv *cv, uint32_t i);
ir_dtype cv_dtype(onnx_cv *cv, uint32_t i);
/* Input i as a list of ints (a known 0-D/1-D integer tensor); -1 when not known. */
int cv_ints(const onnx_cv *cv, uint32_t i, int64_t *out, int max);
/* Input i as a vector of dims (known ints or symbolic); -1 when not known. */
int cv_dims(onnx_cv *cv, uint32_t i, const ir_prim **out, int max);

/* Attributes given to an op call (normalized against the op's schema by cv_call). */
typedef struct cv_attrs {
    uint32_t n;
    const char *keys[16];
    ir_attr vals[16];
} cv_attrs;
static inline void cv_set(cv_attrs *a, const char *key, ir_attr v) {
    if (a->n < 16) {
        a->keys[a->n] = key;
        a->vals[a->n++] = v;
    }
}

/* Builds a call of op `op` (IR_OP_ADD, ...) with the node's span (not emitted); attrs may be
 * NULL. NULL + diag on error (also when an arg is NULL: an input already failed). */
ir_expr *cv_call(onnx_cv *cv, ir_op_id op, uint32_t nargs, ir_expr *const *args,
                 const cv_attrs *attrs);
/* Emits e with the node's span (an intermediate value); NULL + diag on error. */
ir_expr *cv_emit(onnx_cv *cv, ir_expr *e);
/* cv_call + cv_emit. */
ir_expr *cv_op(onnx_cv *cv, ir_op_id op, uint32_t nargs, ir_expr *const *args,
               const cv_attrs *attrs);
static inline ir_expr *cv_call1(onnx_cv *cv, ir_op_id op, ir_expr *a, const cv_attrs *at) {
    ir_expr *args[1] = {a};
    return cv_call(cv, op, 1, args, at);
}
static inline ir_expr *cv_call2(onnx_cv *cv, ir_op_id op, ir_expr *a, ir_expr *b,
                                const cv_attrs *at) {
    ir_expr *args[2] = {a, b};
    return cv_call(cv, op, 2, args, at);
}
static inline ir_expr *cv_op1(onnx_cv *cv, ir_op_id op, ir_expr *a, const cv_attrs *at) {
    return cv_emit(cv, cv_call1(cv, op, a, at));
}
static inline ir_expr *cv_op2(onnx_cv *cv, ir_op_id op, ir_expr *a, ir_expr *b,
                              const cv_attrs *at) {
    return cv_emit(cv, cv_call2(cv, op, a, b, at));
}
/* The op an ONNX op type maps to in a table of rows {"Relu", IR_OP_RELU}; IR_OP_NONE when
 * the table has no row for it. */
typedef struct cv_op_map {
    const char *onnx;
    ir_op_id op;
} cv_op_map;
ir_op_id cv_map_op(const cv_op_map *m, size_t n, const char *onnx);
#define CV_MAP_OP(m, onnx) cv_map_op((m), sizeof(m) / sizeof((m)[0]), (onnx))
/* A scalar constant of dtype with the node's span. */
ir_expr *cv_scalar(onnx_cv *cv, ir_dtype dtype, double v);
/* A shape expression with the node's span. */
ir_expr *cv_shape_expr(onnx_cv *cv, uint32_t n, const ir_prim *const *dims);
/* Records an error naming the node (layer, op, file). */
gr_status cv_fail(onnx_cv *cv, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Normalizes a possibly negative axis against rank; false when out of range. */
bool cv_axis(int64_t axis, int32_t rank, int64_t *out);

/* Dims of input i; when only the rank is known, binds fresh symbolic dims with a match_cast
 * of *x (which becomes the cast var, also for later users of the value). NULL when unknown. */
const ir_prim *const *cv_dims_or_cast(onnx_cv *cv, uint32_t i, ir_expr **x);
/* An identifier made from an ONNX name ([A-Za-z0-9_], not starting with a digit); interned. */
const char *onnx_sanitize(ir_ctx_t *ctx, const char *name);

/* Static dims of input i (false when rank or a dim is unknown). */
bool cv_static_dims(onnx_cv *cv, uint32_t i, int64_t *shape);
/* Dims of input i (NULL when the rank or dims are unknown). */
const ir_prim *const *cv_prim_dims(onnx_cv *cv, uint32_t i);

/* ---- converters (onnx_convert_math.c, onnx_convert_nn.c, onnx_convert_shape.c) ---- */
#define ONNX_CONVERTERS(X)                                                                    \
    X(unary) X(gelu) X(leaky_relu) X(prelu) X(clip) X(hard_sigmoid) X(hard_swish) X(elu)      \
    X(softplus) X(reciprocal) X(binary) X(variadic) X(where) X(matmul) X(gemm) X(softmax)     \
    X(reduce) X(cast) X(identity) X(dropout) X(softsign) X(selu) X(cast_like) X(cumsum)                                                           \
    X(conv) X(conv_transpose) X(batch_norm) X(layer_norm) X(pool) X(global_pool) X(resize)    \
    X(pad)                                                                                    \
    X(constant) X(constant_of_shape) X(shape) X(gather) X(concat) X(split) X(slice)           \
    X(reshape) X(flatten) X(transpose) X(squeeze) X(unsqueeze) X(expand) X(tile) X(range)       \
    /* ONNX coverage */                                                                \
    X(rnn) X(reverse_sequence) X(instance_norm) X(mvn) X(lrn) X(depth_space) X(einsum)        \
    X(window) X(mel) X(nms) X(roi_align) X(grid_sample) X(max_unpool) X(dft) X(stft)         \
    X(seq_construct) X(seq_empty) X(seq_at) X(seq_insert) X(seq_erase) X(seq_length)          \
    X(concat_from_seq) X(split_to_seq) X(if) X(loop) X(scan) X(optional) X(opt_has) X(opt_get)     \
    X(seq_map)
/* ONNX coverage: onnx_convert_index.c, onnx_convert_quant.c */
#define ONNX_CONVERTERS_OPS1(X)                                                               \
    X(unary_more) X(binary_more) X(isinf) X(celu) X(shrink) X(det) X(argmax) X(topk)         \
    X(hardmax) X(one_hot) X(gather_elements) X(gather_nd) X(scatter_elements) X(scatter_nd)  \
    X(nonzero) X(compress) X(unique) X(trilu) X(eye_like) X(nll_loss) X(softmax_ce)          \
    X(quantize) X(dequantize) X(dynamic_quantize) X(matmul_integer) X(qlinear_matmul)        \
    X(conv_integer) X(qlinear_conv)                                                           \
    /* com.microsoft's QOperator ops ONNX Runtime's quantizer writes (onnx_convert_quant.c) */  \
    X(qlinear_add) X(qlinear_mul) X(qlinear_global_avg_pool) X(qgemm)                         \
    /* ai.onnx.preview.training optimizers (onnx_convert_train.c) */                           \
    X(adagrad) X(momentum) X(adam)
/* A forward conv of prepared x and weight with the node's window attrs (weight: input wi). */
ir_expr *onnx_conv_call(onnx_cv *cv, ir_expr *x, ir_expr *wgt, uint32_t wi, ir_dtype out_dtype);
#define ONNX_DECLARE_CV(n) gr_status onnx_cv_##n(onnx_cv *cv);
/* MaxPool with its Indices output (onnx_convert_vision.c; called by onnx_cv_pool) */
gr_status onnx_cv_pool_indices(onnx_cv *cv, const int64_t *kernel, const int64_t *strides, const int64_t *pads,
                               const int64_t *dil);
ONNX_CONVERTERS(ONNX_DECLARE_CV)
ONNX_CONVERTERS_OPS1(ONNX_DECLARE_CV)
#undef ONNX_DECLARE_CV

/* Shared shape rules (onnx_convert_shape.c). */
rt_tensor *onnx_cos_value(onnx_cv *cv, gr_status *st);
void onnx_shape_range(onnx_cv *cv, int32_t rank, int32_t *start, int32_t *end);
int onnx_slice_params(onnx_cv *cv, int32_t rank, const ir_prim *const *dims, int64_t *axes,
                      const ir_prim **begin, const ir_prim **end, int64_t *steps);
int onnx_reshape_dims(onnx_cv *cv, const ir_prim *const *in, int32_t rank, const ir_prim **out);

/* ---- folders (onnx_fold.c): evaluate cheap nodes on known inputs at import ---- */
#define ONNX_FOLDERS(X)                                                                       \
    X(generic) X(cast) X(identity) X(constant_of_shape) X(shape) X(size) X(gather) X(concat) X(slice) \
    X(reshape) X(range) X(transpose)                                                          \
    /* ONNX coverage */                                                                \
    X(window) X(mel) X(seq_length) X(opt_has)
#define ONNX_DECLARE_FOLD(n) int onnx_fold_##n(onnx_cv *cv);
ONNX_FOLDERS(ONNX_DECLARE_FOLD)
#undef ONNX_DECLARE_FOLD

/* The status of the error already in the diag (a failed helper returned NULL). */
static inline gr_status cv_status(const onnx_cv *cv) {
    return cv->imp->diag->code ? cv->imp->diag->code : GR_ERR_INVALID;
}
/* Sets output i to e (the final, not yet emitted expression), or returns the error. */
static inline gr_status cv_out(onnx_cv *cv, uint32_t i, ir_expr *e) {
    if (!e) return cv_status(cv);
    if (i < cv->nout) cv->out[i] = e;
    return GR_OK;
}

/* Output i of a folded node: a known tensor (the slot takes the reference). */
void cv_set_known(onnx_cv *cv, uint32_t i, rt_tensor *t);
/* Output i of a folded node: a symbolic int vector (arena array). */
void cv_set_sym(onnx_cv *cv, uint32_t i, const ir_prim **dims, int32_t n, bool scalar,
                ir_dtype dtype);
/* The same, of any shape (ndim dims in shape; their product elements in dims). */
void cv_set_sym_nd(onnx_cv *cv, uint32_t i, const ir_prim **dims, int32_t ndim, const int64_t *shape,
                   ir_dtype dtype);

#endif
