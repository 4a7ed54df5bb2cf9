/* Shape inference of the index, selection, integer and loss ops added for ONNX coverage:
 * bitwise/shift (integer operands), topk, nonzero and unique (data-dependent lengths are left
 * as unknown dims), nn.nll_loss, linalg.det. */
#include <string.h>

#include "ir/ops/op_impl.h"

/* bitwise_and/or/xor, left_shift, right_shift: binary arithmetic on integers (or bool). */
IR__INFER(ir__infer_binary_int) {
    const ir_sinfo *s = ir__infer_binary_arith(ctx, call, diag);
    if (!s) return NULL;
    if (!ir_dtype_is_void(s->dtype) && ir_dtype_is_float(s->dtype))
        return ir__op_err(call, diag, "requires integer operands, got %s and %s",
                          ir__sinfo_str(call->args[0]->sinfo), ir__sinfo_str(call->args[1]->sinfo));
    return s;
}

/* topk(x; k, axis, ret_type, largest, dtype): values like x and/or indices of `dtype`, with
 * the axis cut to k (k < 1 keeps the whole axis). */
IR__INFER(ir__infer_topk) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t k = ir__attr_int(call, "k", 1), axis = ir__attr_int(call, "axis", -1);
    const char *ret = ir__attr_str(call, "ret_type");
    ir_dtype idt = ir__attr_dtype(call, "dtype");
    if (ir_dtype_is_void(idt)) idt = IR_DTYPE_I32;
    bool want_v = !ret || strcmp(ret, "indices") != 0, want_i = !ret || strcmp(ret, "values") != 0;
    if (!want_v && !want_i) return ir__op_err(call, diag, "bad ret_type \"%s\"", ret);
    const ir_sinfo *vs, *is;
    if (x->ndim < 0 || !x->dims) {
        vs = ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
        is = ir_sinfo_tensor(ctx, idt, x->ndim, NULL);
    } else {
        int32_t a;
        if (x->ndim == 0 || !ir__norm_axis(axis, x->ndim, &a))
            return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                              ir__sinfo_str(x));
        const ir_prim *dims[IR__MAX_DIMS];
        for (int32_t i = 0; i < x->ndim; i++) dims[i] = x->dims[i];
        int64_t n;
        if (k >= 1) {
            if (ir_prim_is_int(x->dims[a], &n) && k > n)
                return ir__op_err(call, diag, "k=%lld exceeds axis %d of %s", (long long)k, a,
                                  ir__sinfo_str(x));
            dims[a] = ir_prim_int(ctx, k);
        }
        vs = ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
        is = ir_sinfo_tensor(ctx, idt, x->ndim, dims);
    }
    if (want_v && want_i) {
        const ir_sinfo *f[2] = {vs, is};
        return ir_sinfo_tuple(ctx, 2, f);
    }
    return want_v ? vs : is;
}

/* nonzero(x): int64 (ndim, count); the count is known only at run time. */
IR__INFER(ir__infer_nonzero) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    return ir_sinfo_tensor(ctx, IR_DTYPE_I64, 2, NULL);
}

/* unique(x; sorted, axis): (values, first indices, inverse indices, counts) as ONNX Unique.
 * Values have x's rank with the unique axis (or 1-D when flattened) of run-time length. */
IR__INFER(ir__infer_unique) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    const ir_attr *ax = ir__attr(call, "axis");
    bool flat = !ax || ax->kind == IR_ATTR_NONE;
    int32_t vnd = flat ? 1 : x->ndim;
    int64_t n = flat ? ir_sinfo_numel(x) : -1; /* length of the inverse indices */
    if (!flat && x->ndim >= 0) {
        int32_t a;
        if (!ir__norm_axis(ir__attr_int(call, "axis", 0), x->ndim, &a))
            return ir__op_err(call, diag, "axis %lld is out of range for %s",
                              (long long)ir__attr_int(call, "axis", 0), ir__sinfo_str(x));
        if (!x->dims || !ir_prim_is_int(x->dims[a], &n)) n = -1;
    }
    const ir_prim *inv[1];
    if (n >= 0) inv[0] = ir_prim_int(ctx, n);
    const ir_sinfo *f[4] = {
        ir_sinfo_tensor(ctx, x->dtype, vnd, NULL), ir_sinfo_tensor(ctx, IR_DTYPE_I64, 1, NULL),
        ir_sinfo_tensor(ctx, IR_DTYPE_I64, 1, n >= 0 ? inv : NULL),
        ir_sinfo_tensor(ctx, IR_DTYPE_I64, 1, NULL)};
    return ir_sinfo_tuple(ctx, 4, f);
}

/* nn.nll_loss(predictions (N, C, d...), targets (N, d...), [weights (C,)]; reduction,
 * ignore_index): "none" has the targets' shape, "mean"/"sum" are scalars. */
IR__INFER(ir__infer_nll_loss) {
    const ir_sinfo *p = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *t = p ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!t) return NULL;
    if (!ir_dtype_is_void(p->dtype) && !ir_dtype_is_float(p->dtype))
        return ir__op_err(call, diag, "predictions must be float, got %s", ir__sinfo_str(p));
    if (!ir_dtype_is_void(t->dtype) && !ir_dtype_is_int(t->dtype))
        return ir__op_err(call, diag, "targets must be integers, got %s", ir__sinfo_str(t));
    if (p->ndim >= 2 && t->ndim >= 0 && t->ndim != p->ndim - 1)
        return ir__op_err(call, diag, "targets %s do not match predictions %s", ir__sinfo_str(t),
                          ir__sinfo_str(p));
    const char *red = ir__attr_str(call, "reduction");
    if (!red || (strcmp(red, "none") && strcmp(red, "mean") && strcmp(red, "sum")))
        return ir__op_err(call, diag, "reduction must be \"none\", \"mean\" or \"sum\"");
    if (strcmp(red, "none") == 0) return ir_sinfo_tensor(ctx, p->dtype, t->ndim, t->dims);
    static const ir_prim *const none[1] = {NULL}; /* a known 0-d shape has non-NULL dims */
    return ir_sinfo_tensor(ctx, p->dtype, 0, none);
}

/* linalg.det(x (..., M, M)): the batch dims. */
IR__INFER(ir__infer_det) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (!ir_dtype_is_void(x->dtype) && !ir_dtype_is_float(x->dtype))
        return ir__op_err(call, diag, "requires a float tensor, got %s", ir__sinfo_str(x));
    if (x->ndim < 0) return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
    if (x->ndim < 2) return ir__op_err(call, diag, "needs a (..., M, M) tensor, got %s", ir__sinfo_str(x));
    if (!x->dims) return ir_sinfo_tensor(ctx, x->dtype, x->ndim - 2, NULL);
    static const ir_prim *const none[1] = {NULL};
    int64_t m, n;
    if (ir_prim_is_int(x->dims[x->ndim - 1], &m) && ir_prim_is_int(x->dims[x->ndim - 2], &n) && m != n)
        return ir__op_err(call, diag, "needs square matrices, got %s", ir__sinfo_str(x));
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim - 2, x->ndim > 2 ? x->dims : none);
}
