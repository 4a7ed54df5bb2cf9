/* Converters: InstanceNormalization (R.nn.instance_norm), MeanVarianceNormalization and LRN
 * (decomposed into reductions, pooling and elementwise ops), DepthToSpace / SpaceToDepth
 * (reshape, permute_dims, reshape), Einsum (R.einsum). */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

gr_status onnx_cv_instance_norm(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *s = cv_in(cv, 1), *b = cv_in(cv, 2);
    if (!x || !s || !b) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input of rank %d (needs N, C and spatial dims)", (int)rank);
    int64_t axes[RT_MAX_NDIM];
    for (int32_t i = 2; i < rank; i++) axes[i - 2] = i;
    cv_attrs at = {0};
    cv_set(&at, "channel_axis", ir_attr_int(1));
    cv_set(&at, "axes", ir_attr_ints(cv->ctx, (uint32_t)(rank - 2), axes));
    cv_set(&at, "epsilon", ir_attr_float(cv_attr_float(cv, "epsilon", 1e-5)));
    ir_expr *args[3] = {x, s, b};
    return cv_out(cv, 0, cv_call(cv, IR_OP_INSTANCE_NORM, 3, args, &at));
}

/* ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes`. */
gr_status onnx_cv_mvn(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axes[RT_MAX_NDIM] = {0, 2, 3};
    int n = cv_attr_ints(cv, "axes", axes, RT_MAX_NDIM);
    if (n < 0) n = 3;
    if (n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_INVALID, "too many axes");
    for (int i = 0; i < n; i++)
        if (!cv_axis(axes[i], rank, &axes[i])) return cv_fail(cv, GR_ERR_INVALID, "axis %lld out of range", (long long)axes[i]);
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_ints(cv->ctx, (uint32_t)n, axes));
    cv_set(&at, "keepdims", ir_attr_bool(true));
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *mean = cv_op1(cv, IR_OP_MEAN, x, &at);
    ir_expr *ex2 = cv_op1(cv, IR_OP_MEAN, cv_op2(cv, IR_OP_MULTIPLY, x, x, NULL), &at);
    ir_expr *var = cv_op2(cv, IR_OP_SUBTRACT, ex2, cv_op2(cv, IR_OP_MULTIPLY, mean, mean, NULL), NULL);
    ir_expr *den = cv_op2(cv, IR_OP_ADD, cv_op1(cv, IR_OP_SQRT, var, NULL), cv_scalar(cv, dt, 1e-9), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_DIVIDE, cv_op2(cv, IR_OP_SUBTRACT, x, mean, NULL), den, NULL));
}

/* y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta: the window sum is an
 * average pool (count_include_pad) over x^2 viewed as (N, 1, C, rest). */
gr_status onnx_cv_lrn(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input of rank %d (needs N, C and spatial dims)", (int)rank);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "unknown input shape");
    int64_t size = cv_attr_int(cv, "size", 0);
    if (size <= 0 || size > ONNX_DIM_MAX) return cv_fail(cv, GR_ERR_INVALID, "size must be positive");
    double alpha = cv_attr_float(cv, "alpha", 1e-4), beta = cv_attr_float(cv, "beta", 0.75),
           bias = cv_attr_float(cv, "bias", 1.0);
    ir_dtype dt = cv_dtype(cv, 0);
    const ir_prim *rest = ir_prim_int(cv->ctx, 1);
    for (int32_t i = 2; i < rank; i++) rest = ir_prim_mul(cv->ctx, rest, dims[i]);
    const ir_prim *v4[4] = {dims[0], ir_prim_int(cv->ctx, 1), dims[1], rest};
    ir_expr *sq = cv_op2(cv, IR_OP_MULTIPLY, x, x, NULL);
    ir_expr *sq4 = cv_op2(cv, IR_OP_RESHAPE, sq, cv_shape_expr(cv, 4, v4), NULL);
    int64_t pool[2] = {size, 1}, one[2] = {1, 1}, pad[4] = {(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0};
    cv_attrs at = {0};
    cv_set(&at, "pool_size", ir_attr_ints(cv->ctx, 2, pool));
    cv_set(&at, "strides", ir_attr_ints(cv->ctx, 2, one));
    cv_set(&at, "dilation", ir_attr_ints(cv->ctx, 2, one));
    cv_set(&at, "padding", ir_attr_ints(cv->ctx, 4, pad));
    cv_set(&at, "count_include_pad", ir_attr_bool(true));
    ir_expr *avg = cv_op1(cv, IR_OP_AVG_POOL2D, sq4, &at);
    ir_expr *avgx = cv_op2(cv, IR_OP_RESHAPE, avg, cv_shape_expr(cv, (uint32_t)rank, dims), NULL);
    ir_expr *base = cv_op2(cv, IR_OP_ADD, cv_op2(cv, IR_OP_MULTIPLY, avgx, cv_scalar(cv, dt, alpha), NULL),
                           cv_scalar(cv, dt, bias), NULL);
    ir_expr *den = cv_op2(cv, IR_OP_POWER, base, cv_scalar(cv, dt, beta), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_DIVIDE, x, den, NULL));
}

/* DepthToSpace (DCR / CRD) and SpaceToDepth as reshape -> permute_dims -> reshape. */
gr_status onnx_cv_depth_space(onnx_cv *cv) {
    bool d2s = !strcmp(cv->node->op_type, "DepthToSpace");
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (cv_rank(cv, 0) != 4) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input must be 4-D (NCHW)");
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "unknown input shape");
    int64_t b = cv_attr_int(cv, "blocksize", 0);
    if (b <= 0 || b > (INT64_C(1) << 20)) return cv_fail(cv, GR_ERR_INVALID, "blocksize out of range");
    ir_ctx_t *ctx = cv->ctx;
    const ir_prim *N = dims[0], *C = dims[1], *H = dims[2], *W = dims[3], *pb = ir_prim_int(ctx, b);
    const ir_prim *bb = ir_prim_int(ctx, b * b);
    int64_t v;
    const ir_prim *six[6], *four[4];
    int64_t perm[6];
    if (d2s) {
        if (ir_prim_is_int(C, &v) && v % (b * b))
            return cv_fail(cv, GR_ERR_INVALID, "channels %lld are not a multiple of blocksize^2", (long long)v);
        const ir_prim *Cb = ir_prim_floordiv(ctx, C, bb);
        const char *mode = cv_attr_str(cv, "mode", "DCR");
        if (!strcmp(mode, "DCR")) {
            const ir_prim *s[6] = {N, pb, pb, Cb, H, W};
            int64_t p[6] = {0, 3, 4, 1, 5, 2};
            memcpy(six, s, sizeof s);
            memcpy(perm, p, sizeof p);
        } else if (!strcmp(mode, "CRD")) {
            const ir_prim *s[6] = {N, Cb, pb, pb, H, W};
            int64_t p[6] = {0, 1, 4, 2, 5, 3};
            memcpy(six, s, sizeof s);
            memcpy(perm, p, sizeof p);
        } else {
            return cv_fail(cv, GR_ERR_INVALID, "unknown mode '%s'", mode);
        }
        const ir_prim *o[4] = {N, Cb, ir_prim_mul(ctx, H, pb), ir_prim_mul(ctx, W, pb)};
        memcpy(four, o, sizeof o);
    } else {
        if ((ir_prim_is_int(H, &v) && v % b) || (ir_prim_is_int(W, &v) && v % b))
            return cv_fail(cv, GR_ERR_INVALID, "spatial dims are not multiples of blocksize");
        const ir_prim *Hb = ir_prim_floordiv(ctx, H, pb), *Wb = ir_prim_floordiv(ctx, W, pb);
        const ir_prim *s[6] = {N, C, Hb, pb, Wb, pb};
        int64_t p[6] = {0, 3, 5, 1, 2, 4};
        memcpy(six, s, sizeof s);
        memcpy(perm, p, sizeof p);
        const ir_prim *o[4] = {N, ir_prim_mul(ctx, C, bb), Hb, Wb};
        memcpy(four, o, sizeof o);
    }
    ir_expr *r6 = cv_op2(cv, IR_OP_RESHAPE, x, cv_shape_expr(cv, 6, six), NULL);
    cv_attrs at = {0};
    cv_set(&at, "axes", ir_attr_ints(ctx, 6, perm));
    ir_expr *t = cv_op1(cv, IR_OP_PERMUTE_DIMS, r6, &at);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESHAPE, t, cv_shape_expr(cv, 4, four), NULL));
}

gr_status onnx_cv_einsum(onnx_cv *cv) {
    const char *eq = cv_attr_str(cv, "equation", NULL);
    if (!eq) return cv_fail(cv, GR_ERR_INVALID, "no equation");
    if (cv->nin == 0 || cv->nin > 8) return cv_fail(cv, GR_ERR_UNSUPPORTED, "%u operands (1 to 8)", cv->nin);
    ir_expr *f[8];
    for (uint32_t i = 0; i < cv->nin; i++)
        if (!(f[i] = cv_in(cv, i))) return cv_status(cv);
    /* spaces are not part of the subscripts */
    size_t n = strlen(eq), k = 0;
    char *sub = gr_xmalloc(n + 1);
    for (size_t i = 0; i < n; i++)
        if (eq[i] != ' ') sub[k++] = eq[i];
    sub[k] = 0;
    cv_attrs at = {0};
    cv_set(&at, "subscripts", ir_attr_str(cv->ctx, sub));
    free(sub);
    ir_expr *tup = (ir_expr *)ir_tuple_new(cv->ctx, cv->nin, f, cv->span);
    return cv_out(cv, 0, cv_call1(cv, IR_OP_EINSUM, tup, &at));
}
