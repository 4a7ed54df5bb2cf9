/* Struct info: what an expression is (tensor, tuple, shape, prim value, object, function).
 * Hash-consed in the context: equal struct info (same dims, same var pointers) is one pointer. */
#ifndef GRAFT_IR_SINFO_H
#define GRAFT_IR_SINFO_H

#include "base/api.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/prim.h"

typedef enum ir_sinfo_kind {
    IR_SINFO_OBJECT,  /* R.Object */
    IR_SINFO_PRIM,    /* R.Prim("int64"), R.Prim(value=n) */
    IR_SINFO_SHAPE,   /* R.Shape([1, n]), R.Shape(ndim=2), R.Shape */
    IR_SINFO_TENSOR,  /* R.Tensor((1, n), dtype="float32"), R.Tensor(ndim=2), R.Tensor */
    IR_SINFO_TUPLE,   /* R.Tuple(a, b) */
    IR_SINFO_FUNC,    /* R.Callable((params...), ret) */
} ir_sinfo_kind;

typedef struct ir_sinfo ir_sinfo;
struct ir_sinfo {
    uint8_t kind;                   /* ir_sinfo_kind */
    uint8_t opaque;                 /* FUNC: params unknown */
    ir_dtype dtype;                 /* TENSOR, PRIM: IR_DTYPE_VOID when unknown */
    int32_t ndim;                   /* TENSOR, SHAPE: -1 when unknown */
    const ir_prim *const *dims;     /* TENSOR, SHAPE: ndim dims, or NULL when unknown */
    const ir_prim *value;           /* PRIM: known value, or NULL */
    uint32_t n;                     /* TUPLE: fields; FUNC: params */
    const ir_sinfo *const *fields;  /* TUPLE: fields; FUNC: params */
    const ir_sinfo *ret;            /* FUNC: return */
};

const ir_sinfo *ir_sinfo_object(ir_ctx_t *ctx);
const ir_sinfo *ir_sinfo_prim(ir_ctx_t *ctx, ir_dtype dtype, const ir_prim *value);
/* ndim -1 = unknown rank; dims NULL = unknown dims (ndim may still be known). */
const ir_sinfo *ir_sinfo_shape(ir_ctx_t *ctx, int32_t ndim, const ir_prim *const *dims);
const ir_sinfo *ir_sinfo_tensor(ir_ctx_t *ctx, ir_dtype dtype, int32_t ndim,
                                const ir_prim *const *dims);
/* Convenience: a static shape given as int64 values. */
const ir_sinfo *ir_sinfo_tensor_static(ir_ctx_t *ctx, ir_dtype dtype, int32_t ndim,
                                       const int64_t *shape);
const ir_sinfo *ir_sinfo_tuple(ir_ctx_t *ctx, uint32_t n, const ir_sinfo *const *fields);
const ir_sinfo *ir_sinfo_func(ir_ctx_t *ctx, uint32_t nparams, const ir_sinfo *const *params,
                              const ir_sinfo *ret);
const ir_sinfo *ir_sinfo_func_opaque(ir_ctx_t *ctx, const ir_sinfo *ret);

/* True when every value described by `derived` is also described by `base`
 * (R.Tensor((1, 2), "float32") is derived from R.Tensor(ndim=2) and R.Object). */
bool ir_sinfo_is_base_of(const ir_sinfo *base, const ir_sinfo *derived);
/* Tensor with every dim a known constant; writes them to shape (ndim entries) when not NULL. */
GR_API bool ir_sinfo_static_shape(const ir_sinfo *s, int64_t *shape);
/* Number of elements of a static tensor, -1 otherwise. */
int64_t ir_sinfo_numel(const ir_sinfo *s);
/* Substitutes symbolic vars (see ir_prim_subst). */
const ir_sinfo *ir_sinfo_subst(ir_ctx_t *ctx, const ir_sinfo *s, const gr_map *var_map);

/* Text form: R.Tensor((1, 3), dtype="float32"), R.Tuple(...), ... */
void ir_sinfo_print(const ir_sinfo *s, FILE *out);
int ir_sinfo_snprint(const ir_sinfo *s, char *buf, size_t size);

#endif
