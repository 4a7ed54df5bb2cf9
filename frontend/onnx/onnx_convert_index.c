/* Converters added for ONNX coverage: index and selection ops (ArgMax/ArgMin, TopK,
 * Hardmax, OneHot, Gather/Scatter families, NonZero, Compress, Unique, Trilu, EyeLike), the
 * losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), integer/boolean/bitwise binary
 * ops, more unary math (trigonometric, hyperbolic, IsNaN, IsInf, Celu, Shrink) and Det. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* ---- elementwise ---- */

static const cv_op_map unary_ops[] = {
    {"Acos", IR_OP_ACOS},   {"Asin", IR_OP_ASIN},   {"Atan", IR_OP_ATAN},
    {"Acosh", IR_OP_ACOSH}, {"Asinh", IR_OP_ASINH}, {"Atanh", IR_OP_ATANH},
    {"Tan", IR_OP_TAN},     {"Sinh", IR_OP_SINH},   {"Cosh", IR_OP_COSH},
    {"IsNaN", IR_OP_ISNAN}, {"BitwiseNot", IR_OP_BITWISE_NOT},
};

gr_status onnx_cv_unary_more(onnx_cv *cv) {
    return cv_out(cv, 0, cv_call1(cv, CV_MAP_OP(unary_ops, cv->node->op_type), cv_in(cv, 0), NULL));
}

static const cv_op_map binary_ops[] = {
    {"Xor", IR_OP_LOGICAL_XOR},         {"BitwiseAnd", IR_OP_BITWISE_AND},
    {"BitwiseOr", IR_OP_BITWISE_OR},    {"BitwiseXor", IR_OP_BITWISE_XOR},
};

/* Xor, Bitwise*, Mod (fmod=1: C fmod / truncated remainder; 0: sign of the divisor), BitShift. */
gr_status onnx_cv_binary_more(onnx_cv *cv) {
    const char *t = cv->node->op_type;
    ir_op_id op = CV_MAP_OP(binary_ops, t);
    if (!strcmp(t, "Mod")) {
        bool fm = cv_attr_int(cv, "fmod", 0) != 0;
        if (!fm && ir_dtype_is_float(cv_dtype(cv, 0)))
            return cv_fail(cv, GR_ERR_INVALID, "fmod=0 on floating-point inputs (the spec requires fmod=1)");
        op = fm ? IR_OP_MOD : IR_OP_FLOOR_MOD;
    } else if (!strcmp(t, "BitShift")) {
        const char *dir = cv_attr_str(cv, "direction", "");
        if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
            return cv_fail(cv, GR_ERR_INVALID, "direction must be LEFT or RIGHT, got \"%s\"", dir);
        op = !strcmp(dir, "LEFT") ? IR_OP_LEFT_SHIFT : IR_OP_RIGHT_SHIFT;
    }
    return cv_out(cv, 0, cv_call2(cv, op, cv_in(cv, 0), cv_in(cv, 1), NULL));
}

/* IsInf(detect_positive, detect_negative): isinf, narrowed by the sign when one is off. */
gr_status onnx_cv_isinf(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    bool pos = cv_attr_int(cv, "detect_positive", 1) != 0, neg = cv_attr_int(cv, "detect_negative", 1) != 0;
    if (pos && neg) return cv_out(cv, 0, cv_call1(cv, IR_OP_ISINF, x, NULL));
    if (!pos && !neg) {
        cv_attrs at = {0};
        cv_set(&at, "dtype", ir_attr_dtype(IR_DTYPE_BOOL));
        return cv_out(cv, 0, cv_call1(cv, IR_OP_ZEROS_LIKE, x, &at));
    }
    ir_expr *inf = cv_op1(cv, IR_OP_ISINF, x, NULL);
    ir_expr *sign = cv_op2(cv, pos ? IR_OP_GREATER : IR_OP_LESS, x,
                           cv_scalar(cv, cv_dtype(cv, 0), 0.0), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_LOGICAL_AND, inf, sign, NULL));
}

/* Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
gr_status onnx_cv_celu(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    double alpha = cv_attr_float(cv, "alpha", 1.0);
    if (alpha == 0) return cv_fail(cv, GR_ERR_INVALID, "alpha must not be 0");
    ir_expr *pos = cv_op1(cv, IR_OP_RELU, x, NULL);
    ir_expr *e = cv_op1(cv, IR_OP_EXP, cv_op2(cv, IR_OP_DIVIDE, x, cv_scalar(cv, dt, alpha), NULL), NULL);
    e = cv_op2(cv, IR_OP_MULTIPLY, cv_op2(cv, IR_OP_SUBTRACT, e, cv_scalar(cv, dt, 1.0), NULL),
               cv_scalar(cv, dt, alpha), NULL);
    ir_expr *negp = cv_op2(cv, IR_OP_MINIMUM, e, cv_scalar(cv, dt, 0.0), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_ADD, pos, negp, NULL));
}

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0 */
gr_status onnx_cv_shrink(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    double l = cv_attr_float(cv, "lambd", 0.5), b = cv_attr_float(cv, "bias", 0.0);
    ir_expr *lo = cv_op2(cv, IR_OP_LESS, x, cv_scalar(cv, dt, -l), NULL);
    ir_expr *hi = cv_op2(cv, IR_OP_GREATER, x, cv_scalar(cv, dt, l), NULL);
    ir_expr *xp = cv_op2(cv, IR_OP_ADD, x, cv_scalar(cv, dt, b), NULL);
    ir_expr *xm = cv_op2(cv, IR_OP_SUBTRACT, x, cv_scalar(cv, dt, b), NULL);
    ir_expr *a1[3] = {hi, xm, cv_scalar(cv, dt, 0.0)};
    ir_expr *inner = cv_emit(cv, cv_call(cv, IR_OP_WHERE, 3, a1, NULL));
    ir_expr *a2[3] = {lo, xp, inner};
    return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, a2, NULL));
}

gr_status onnx_cv_det(onnx_cv *cv) {
    return cv_out(cv, 0, cv_call1(cv, IR_OP_DET, cv_in(cv, 0), NULL));
}

/* ---- selection ---- */

/* Static length of dim `axis` of input i, or -1. */
static int64_t static_dim(onnx_cv *cv, uint32_t i, int64_t axis) {
    const ir_sinfo *s = cv_sinfo(cv, i);
    int64_t n;
    if (!s || !s->dims || axis < 0 || axis >= s->ndim || !ir_prim_is_int(s->dims[axis], &n)) return -1;
    return n;
}

/* ArgMax/ArgMin(axis, keepdims, select_last_index): the last index is found on the input
 * flipped along the axis, as n - 1 - index. */
gr_status onnx_cv_argmax(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t axis;
    if (!cv_axis(cv_attr_int(cv, "axis", 0), cv_rank(cv, 0), &axis))
        return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    ir_op_id op = !strcmp(cv->node->op_type, "ArgMax") ? IR_OP_ARGMAX : IR_OP_ARGMIN;
    bool last = cv_attr_int(cv, "select_last_index", 0) != 0;
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    cv_set(&at, "keepdims", ir_attr_bool(cv_attr_int(cv, "keepdims", 1) != 0));
    if (!last) return cv_out(cv, 0, cv_call1(cv, op, x, &at));
    int64_t n = static_dim(cv, 0, axis);
    if (n < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "select_last_index on a dynamic axis");
    cv_attrs fa = {0};
    cv_set(&fa, "axis", ir_attr_int(axis));
    ir_expr *i = cv_op1(cv, op, cv_op1(cv, IR_OP_FLIP, x, &fa), &at);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_SUBTRACT, cv_scalar(cv, IR_DTYPE_I64, (double)(n - 1)), i, NULL));
}

/* TopK(x, K; axis, largest, sorted): values and int64 indices. The result is always sorted
 * (an order the spec allows for sorted=0 too). */
gr_status onnx_cv_topk(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t k;
    if (cv->opset < 10) k = cv_attr_int(cv, "k", -1);
    else if (cv_ints(cv, 1, &k, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "K must be a constant");
    int64_t axis;
    if (!cv_axis(cv_attr_int(cv, "axis", -1), cv_rank(cv, 0), &axis))
        return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    int64_t n = static_dim(cv, 0, axis);
    if (k < 0 || (n >= 0 && k > n))
        return cv_fail(cv, GR_ERR_INVALID, "K=%lld out of range for an axis of %lld", (long long)k, (long long)n);
    if (k == 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "K=0 (empty outputs)");
    cv_attrs at = {0};
    cv_set(&at, "k", ir_attr_int(k));
    cv_set(&at, "axis", ir_attr_int(axis));
    cv_set(&at, "ret_type", ir_attr_str(cv->ctx, "both"));
    cv_set(&at, "largest", ir_attr_bool(cv_attr_int(cv, "largest", 1) != 0));
    cv_set(&at, "dtype", ir_attr_dtype(IR_DTYPE_I64));
    ir_expr *t = cv_op1(cv, IR_OP_TOPK, x, &at);
    if (!t) return cv_status(cv);
    for (uint32_t i = 0; i < cv->nout && i < 2; i++) cv->out[i] = (ir_expr *)ir_tgi_new(cv->ctx, t, (int32_t)i, cv->span);
    return GR_OK;
}

/* Hardmax(axis): one_hot(argmax(x, axis), depth = dim) in x's dtype. Before opset 13 the input
 * is coerced to 2-D [prod(dims before axis), prod(rest)] and the result reshaped back. */
gr_status onnx_cv_hardmax(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis, shape[RT_MAX_NDIM];
    if (!cv_axis(cv_attr_int(cv, "axis", cv->opset < 13 ? 1 : -1), rank, &axis))
        return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    if (!cv_static_dims(cv, 0, shape)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input of dynamic shape");
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *in = x;
    int64_t depth = shape[axis], oaxis = axis;
    if (cv->opset < 13) {
        int64_t a = 1, b = 1;
        for (int32_t i = 0; i < rank; i++) *(i < axis ? &a : &b) *= shape[i];
        const ir_prim *d2[2] = {ir_prim_int(cv->ctx, a), ir_prim_int(cv->ctx, b)};
        in = cv_op2(cv, IR_OP_RESHAPE, x, cv_shape_expr(cv, 2, d2), NULL);
        depth = b;
        oaxis = 1;
    }
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(oaxis));
    cv_set(&at, "keepdims", ir_attr_bool(false));
    ir_expr *am = cv_op1(cv, IR_OP_ARGMAX, in, &at);
    cv_attrs oh = {0};
    cv_set(&oh, "depth", ir_attr_int(depth));
    cv_set(&oh, "axis", ir_attr_int(oaxis));
    ir_expr *args[3] = {am, (ir_expr *)ir_primval_float(cv->ctx, dt, 1.0, cv->span),
                        (ir_expr *)ir_primval_float(cv->ctx, dt, 0.0, cv->span)};
    ir_expr *y = cv_call(cv, IR_OP_ONE_HOT, 3, args, &oh);
    if (cv->opset >= 13) return cv_out(cv, 0, y);
    const ir_prim *d[RT_MAX_NDIM];
    for (int32_t i = 0; i < rank; i++) d[i] = ir_prim_int(cv->ctx, shape[i]);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESHAPE, cv_emit(cv, y), cv_shape_expr(cv, (uint32_t)rank, d), NULL));
}

/* OneHot(indices, depth, values [off, on]; axis): one_hot of 1/0 as a mask, then where(mask,
 * on, off) so the values keep their dtype exactly. Indices of a float type are truncated. */
gr_status onnx_cv_one_hot(onnx_cv *cv) {
    ir_expr *ind = cv_in(cv, 0), *vals = cv_in(cv, 2);
    if (!ind || !vals) return cv_status(cv);
    rt_tensor *dk = cv_known(cv, 1);
    if (!dk || rt_tensor_numel(dk) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "depth must be a constant scalar");
    int64_t depth = (int64_t)rt_tensor_get_f64(dk, 0);
    if (depth < 1 || depth > ONNX_DIM_MAX) return cv_fail(cv, GR_ERR_INVALID, "depth %lld out of range", (long long)depth);
    const ir_sinfo *vs = cv_sinfo(cv, 2);
    int64_t nv;
    if (!vs || vs->ndim != 1 || !vs->dims || !ir_prim_is_int(vs->dims[0], &nv) || nv != 2)
        return cv_fail(cv, GR_ERR_INVALID, "values must have shape (2,)");
    if (ir_dtype_is_float(cv_dtype(cv, 0))) {
        cv_attrs at = {0};
        cv_set(&at, "dtype", ir_attr_dtype(IR_DTYPE_I64));
        ind = cv_op1(cv, IR_OP_ASTYPE, ind, &at);
    }
    cv_attrs oh = {0};
    cv_set(&oh, "depth", ir_attr_int(depth));
    cv_set(&oh, "axis", ir_attr_int(cv_attr_int(cv, "axis", -1)));
    ir_expr *args[3] = {ind, (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, 1), cv->span),
                        (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, 0), cv->span)};
    ir_expr *m = cv_emit(cv, cv_call(cv, IR_OP_ONE_HOT, 3, args, &oh));
    cv_attrs ab = {0};
    cv_set(&ab, "dtype", ir_attr_dtype(IR_DTYPE_BOOL));
    m = cv_op1(cv, IR_OP_ASTYPE, m, &ab);
    cv_attrs tk = {0};
    cv_set(&tk, "axis", ir_attr_int(0));
    ir_expr *off = cv_op2(cv, IR_OP_TAKE, vals, cv_scalar(cv, IR_DTYPE_I64, 0), &tk);
    ir_expr *on = cv_op2(cv, IR_OP_TAKE, vals, cv_scalar(cv, IR_DTYPE_I64, 1), &tk);
    ir_expr *w[3] = {m, on, off};
    return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, w, NULL));
}

gr_status onnx_cv_gather_elements(onnx_cv *cv) {
    cv_attrs at = {0};
    int64_t axis;
    if (!cv_axis(cv_attr_int(cv, "axis", 0), cv_rank(cv, 0), &axis))
        return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    cv_set(&at, "axis", ir_attr_int(axis));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_GATHER_ELEMENTS, cv_in(cv, 0), cv_in(cv, 1), &at));
}

gr_status onnx_cv_gather_nd(onnx_cv *cv) {
    cv_attrs at = {0};
    cv_set(&at, "batch_dims", ir_attr_int(cv_attr_int(cv, "batch_dims", 0)));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_GATHER_ND, cv_in(cv, 0), cv_in(cv, 1), &at));
}

/* ONNX reduction names -> the kernel's ("none" is "update"). */
static const char *scatter_reduction(onnx_cv *cv) {
    const char *r = cv_attr_str(cv, "reduction", "none");
    static const char *const red[] = {"update", "add", "mul", "max", "min"};
    const char *k = !strcmp(r, "none") ? red[0] : NULL;
    for (size_t i = 1; i < sizeof(red) / sizeof(red[0]) && !k; i++)
        if (!strcmp(r, red[i])) k = red[i];
    if (!k) cv_fail(cv, GR_ERR_UNSUPPORTED, "reduction \"%s\"", r);
    return k;
}

/* ScatterElements and the older Scatter. */
gr_status onnx_cv_scatter_elements(onnx_cv *cv) {
    const char *red = scatter_reduction(cv);
    if (!red) return cv_status(cv);
    int64_t axis;
    if (!cv_axis(cv_attr_int(cv, "axis", 0), cv_rank(cv, 0), &axis))
        return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    cv_set(&at, "reduction", ir_attr_str(cv->ctx, red));
    ir_expr *args[3] = {cv_in(cv, 0), cv_in(cv, 1), cv_in(cv, 2)};
    return cv_out(cv, 0, cv_call(cv, IR_OP_SCATTER_ELEMENTS, 3, args, &at));
}

gr_status onnx_cv_scatter_nd(onnx_cv *cv) {
    const char *red = scatter_reduction(cv);
    if (!red) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "reduction", ir_attr_str(cv->ctx, red));
    ir_expr *args[3] = {cv_in(cv, 0), cv_in(cv, 1), cv_in(cv, 2)};
    return cv_out(cv, 0, cv_call(cv, IR_OP_SCATTER_ND, 3, args, &at));
}

gr_status onnx_cv_nonzero(onnx_cv *cv) {
    return cv_out(cv, 0, cv_call1(cv, IR_OP_NONZERO, cv_in(cv, 0), NULL));
}

/* Compress(x, condition; axis): take(x, nonzero(condition)[0], axis); no axis: flattened. */
gr_status onnx_cv_compress(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *cond = cv_in(cv, 1);
    if (!x || !cond) return cv_status(cv);
    if (cv_rank(cv, 1) != 1) return cv_fail(cv, GR_ERR_INVALID, "condition must be 1-D");
    const Onnx__AttributeProto *ax = cv_attr(cv, "axis");
    int64_t axis = 0;
    if (ax) {
        if (!cv_axis(cv_attr_int(cv, "axis", 0), cv_rank(cv, 0), &axis))
            return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    } else {
        x = cv_op1(cv, IR_OP_FLATTEN, x, NULL);
    }
    ir_expr *nz = cv_op1(cv, IR_OP_NONZERO, cond, NULL);
    cv_attrs sq = {0};
    int64_t zero = 0;
    cv_set(&sq, "axis", ir_attr_ints(cv->ctx, 1, &zero));
    ir_expr *idx = cv_op1(cv, IR_OP_SQUEEZE, nz, &sq);
    cv_attrs tk = {0};
    cv_set(&tk, "axis", ir_attr_int(axis));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_TAKE, x, idx, &tk));
}

/* Unique(x; sorted, axis): Y, indices, inverse_indices, counts. */
gr_status onnx_cv_unique(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "sorted", ir_attr_bool(cv_attr_int(cv, "sorted", 1) != 0));
    if (cv_attr(cv, "axis")) {
        int64_t axis;
        if (!cv_axis(cv_attr_int(cv, "axis", 0), cv_rank(cv, 0), &axis))
            return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
        cv_set(&at, "axis", ir_attr_int(axis));
    }
    ir_expr *t = cv_op1(cv, IR_OP_UNIQUE, x, &at);
    if (!t) return cv_status(cv);
    for (uint32_t i = 0; i < cv->nout && i < 4; i++) cv->out[i] = (ir_expr *)ir_tgi_new(cv->ctx, t, (int32_t)i, cv->span);
    return GR_OK;
}

/* Trilu(x, k; upper) */
gr_status onnx_cv_trilu(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t k = 0;
    if (cv_has(cv, 1) && cv_ints(cv, 1, &k, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "k must be a constant");
    cv_attrs at = {0};
    cv_set(&at, "k", ir_attr_int(k));
    ir_op_id op = cv_attr_int(cv, "upper", 1) ? IR_OP_TRIU : IR_OP_TRIL;
    return cv_out(cv, 0, cv_call1(cv, op, x, &at));
}

/* EyeLike(x; dtype, k): ones on the k-th diagonal = triu(tril(ones, k), k). */
gr_status onnx_cv_eye_like(onnx_cv *cv) {
    if (!cv_in(cv, 0)) return cv_status(cv);
    if (cv_rank(cv, 0) != 2) return cv_fail(cv, GR_ERR_INVALID, "input must be 2-D");
    const ir_prim *const *dims = cv_prim_dims(cv, 0);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input of unknown shape");
    ir_dtype dt = cv_dtype(cv, 0);
    if (cv_attr(cv, "dtype") && !onnx_dtype_from_elem((int32_t)cv_attr_int(cv, "dtype", 0), &dt))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "dtype %lld", (long long)cv_attr_int(cv, "dtype", 0));
    cv_attrs od = {0};
    cv_set(&od, "dtype", ir_attr_dtype(dt));
    ir_expr *ones = cv_op1(cv, IR_OP_ONES, cv_shape_expr(cv, 2, dims), &od);
    cv_attrs at = {0};
    cv_set(&at, "k", ir_attr_int(cv_attr_int(cv, "k", 0)));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_TRIU, cv_op1(cv, IR_OP_TRIL, ones, &at), &at));
}

/* ---- losses ---- */

/* nll_loss attrs from the node: reduction, ignore_index (absent: none, a value no target
 * can take). */
static void loss_attrs(onnx_cv *cv, cv_attrs *at) {
    cv_set(at, "reduction", ir_attr_str(cv->ctx, cv_attr_str(cv, "reduction", "mean")));
    cv_set(at, "ignore_index", ir_attr_int(cv_attr(cv, "ignore_index") ? cv_attr_int(cv, "ignore_index", 0) : INT64_MIN));
}

static ir_expr *nll_call(onnx_cv *cv, ir_expr *logp, cv_attrs *at) {
    ir_expr *args[3] = {logp, cv_in(cv, 1), cv_has(cv, 2) ? cv_in(cv, 2) : NULL};
    return cv_call(cv, IR_OP_NLL_LOSS, cv_has(cv, 2) ? 3 : 2, args, at);
}

gr_status onnx_cv_nll_loss(onnx_cv *cv) {
    cv_attrs at = {0};
    loss_attrs(cv, &at);
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (cv_rank(cv, 0) < 2) return cv_fail(cv, GR_ERR_INVALID, "input must be (N, C, ...)");
    return cv_out(cv, 0, nll_call(cv, x, &at));
}

/* SoftmaxCrossEntropyLoss: nll_loss(log_softmax(scores, axis 1), labels, weights); the second
 * output is the log-probabilities. */
gr_status onnx_cv_softmax_ce(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (cv_rank(cv, 0) < 2) return cv_fail(cv, GR_ERR_INVALID, "scores must be (N, C, ...)");
    cv_attrs ls = {0};
    cv_set(&ls, "axis", ir_attr_int(1));
    ir_expr *logp = cv_op1(cv, IR_OP_LOG_SOFTMAX, x, &ls);
    if (!logp) return cv_status(cv);
    cv_attrs at = {0};
    loss_attrs(cv, &at);
    gr_status st = cv_out(cv, 0, nll_call(cv, logp, &at));
    if (st == GR_OK && cv->nout > 1) cv->out[1] = logp;
    return st;
}
