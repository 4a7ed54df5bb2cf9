/* Struct info inference of reductions (mean, sum, max, min, prod, variance) and scans
 * (cumsum): negative axes, axis=None (all axes) and keepdims as in TVM Relax. */
#include "ir/ops/op_impl.h"

IR__INFER(ir__infer_reduce) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t axes[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "axis", axes, IR__MAX_DIMS);
    if (n == -2 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "axis must be a list of ints");
    bool keep = ir__attr_bool(call, "keepdims");
    if (x->ndim < 0) {
        /* Reducing everything without keepdims gives a scalar whatever the rank. */
        if (n < 0 && !keep) return ir_sinfo_tensor(ctx, x->dtype, 0, NULL);
        return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
    }
    bool red[IR__MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int32_t a;
        if (!ir__norm_axis(axes[i], x->ndim, &a))
            return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axes[i],
                              ir__sinfo_str(x));
        if (red[a]) return ir__op_err(call, diag, "axis %lld repeats", (long long)axes[i]);
        red[a] = true;
    }
    const ir_prim *dims[IR__MAX_DIMS];
    int32_t m = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        bool r = n < 0 || red[i];
        if (r && !keep) continue;
        if (x->dims) dims[m] = r ? ir_prim_int(ctx, 1) : x->dims[i];
        m++;
    }
    return ir_sinfo_tensor(ctx, x->dtype, m, x->dims || m == 0 ? dims : NULL);
}

IR__INFER(ir__infer_cumsum) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    if (ir_dtype_is_void(dt)) dt = x->dtype;
    const ir_attr *ax = ir__attr(call, "axis");
    if (!ax || ax->kind == IR_ATTR_NONE) {
        /* Over the flattened tensor. */
        if (x->ndim < 0 || (x->ndim > 0 && !x->dims)) return ir_sinfo_tensor(ctx, dt, 1, NULL);
        const ir_prim *n = ir_prim_int(ctx, 1);
        for (int32_t i = 0; i < x->ndim; i++) n = ir_prim_mul(ctx, n, x->dims[i]);
        return ir_sinfo_tensor(ctx, dt, 1, &n);
    }
    int64_t axis = ir__attr_int(call, "axis", 0);
    int32_t a;
    if (x->ndim >= 0 && !ir__norm_axis(axis, x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(x));
    return ir_sinfo_tensor(ctx, dt, x->ndim, x->dims);
}

/* argmax / argmin: one axis (or all with axis=None), int64 indices. */
IR__INFER(ir__infer_argmax) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    bool keep = ir__attr_bool(call, "keepdims");
    const ir_attr *ax = ir__attr(call, "axis");
    bool all = !ax || ax->kind == IR_ATTR_NONE;
    if (x->ndim < 0)
        return ir_sinfo_tensor(ctx, IR_DTYPE_I64, all && !keep ? 0 : -1, NULL);
    int32_t a = -1;
    if (!all && !ir__norm_axis(ir__attr_int(call, "axis", 0), x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s",
                          (long long)ir__attr_int(call, "axis", 0), ir__sinfo_str(x));
    const ir_prim *dims[IR__MAX_DIMS];
    int32_t m = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        bool r = all || i == a;
        if (r && !keep) continue;
        if (x->dims) dims[m] = r ? ir_prim_int(ctx, 1) : x->dims[i];
        m++;
    }
    return ir_sinfo_tensor(ctx, IR_DTYPE_I64, m, x->dims || m == 0 ? dims : NULL);
}
