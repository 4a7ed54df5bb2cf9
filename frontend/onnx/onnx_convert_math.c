/* Converters: elementwise math, activations, matmul/gemm, softmax, reductions, cast. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

static const cv_op_map unary_ops[] = {
    {"Relu", IR_OP_RELU},   {"Sigmoid", IR_OP_SIGMOID}, {"Tanh", IR_OP_TANH},
    {"Erf", IR_OP_ERF},     {"Sqrt", IR_OP_SQRT},       {"Exp", IR_OP_EXP},
    {"Log", IR_OP_LOG},     {"Abs", IR_OP_ABS},         {"Neg", IR_OP_NEGATIVE},
    {"Floor", IR_OP_FLOOR}, {"Ceil", IR_OP_CEIL},       {"Round", IR_OP_ROUND},
    {"Sin", IR_OP_SIN},     {"Cos", IR_OP_COS},         {"Sign", IR_OP_SIGN},
    {"Not", IR_OP_LOGICAL_NOT},
};

gr_status onnx_cv_unary(onnx_cv *cv) {
    ir_op_id op = CV_MAP_OP(unary_ops, cv->node->op_type);
    return cv_out(cv, 0, cv_call1(cv, op, cv_in(cv, 0), NULL));
}

gr_status onnx_cv_gelu(onnx_cv *cv) {
    const char *approx = cv_attr_str(cv, "approximate", "none");
    ir_op_id op = !strcmp(approx, "tanh") ? IR_OP_GELU_TANH : IR_OP_GELU;
    return cv_out(cv, 0, cv_call1(cv, op, cv_in(cv, 0), NULL));
}

gr_status onnx_cv_leaky_relu(onnx_cv *cv) {
    cv_attrs a = {0};
    cv_set(&a, "alpha", ir_attr_float(cv_attr_float(cv, "alpha", 0.01)));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_LEAKYRELU, cv_in(cv, 0), &a));
}

/* where(x < 0, x * slope, x): slope broadcasts to x (unidirectionally). */
gr_status onnx_cv_prelu(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *slope = cv_in(cv, 1);
    if (!x || !slope) return cv_status(cv);
    /* A per-channel slope of shape (C,) that does not broadcast against the last dim (exporters
     * before opset 7 wrote it so): reshape to (C, 1, ..., 1). */
    const ir_sinfo *xs = cv_sinfo(cv, 0), *ss = cv_sinfo(cv, 1);
    int64_t c, last;
    if (xs && ss && xs->ndim >= 3 && xs->dims && ss->ndim == 1 && ss->dims &&
        ss->dims[0] == xs->dims[1] && ir_prim_is_int(ss->dims[0], &c) && c != 1 &&
        !(ir_prim_is_int(xs->dims[xs->ndim - 1], &last) && last == c)) {
        const ir_prim *d[RT_MAX_NDIM];
        d[0] = ss->dims[0];
        for (int32_t i = 1; i < xs->ndim - 1; i++) d[i] = ir_prim_int(cv->ctx, 1);
        slope = cv_op2(cv, IR_OP_RESHAPE, slope, cv_shape_expr(cv, (uint32_t)(xs->ndim - 1), d), NULL);
    }
    ir_expr *neg = cv_op2(cv, IR_OP_LESS, x, cv_scalar(cv, cv_dtype(cv, 0), 0.0), NULL);
    ir_expr *scaled = cv_op2(cv, IR_OP_MULTIPLY, x, slope, NULL);
    ir_expr *args[3] = {neg, scaled, x};
    return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, args, NULL));
}

/* Known scalar value of input i (0-D or one element). */
static bool known_scalar(const onnx_cv *cv, uint32_t i, double *v) {
    const rt_tensor *t = cv_known(cv, i);
    if (!t || rt_tensor_numel(t) != 1) return false;
    *v = rt_tensor_get_f64(t, 0);
    return true;
}

/* clip(x, lo, hi) with R.clip when both bounds are known numbers, else maximum/minimum. */
static ir_expr *clip_call(onnx_cv *cv, ir_expr *x, ir_dtype dt, bool has_lo, double lo,
                          bool has_hi, double hi) {
    if (has_lo && has_hi && ir_dtype_is_float(dt)) {
        ir_expr *args[3] = {x, (ir_expr *)ir_primval_float(cv->ctx, dt, lo, cv->span),
                            (ir_expr *)ir_primval_float(cv->ctx, dt, hi, cv->span)};
        return cv_call(cv, IR_OP_CLIP, 3, args, NULL);
    }
    if (has_lo && has_hi) {
        ir_expr *args[3] = {x, (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, (int64_t)lo), cv->span),
                            (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, (int64_t)hi), cv->span)};
        return cv_call(cv, IR_OP_CLIP, 3, args, NULL);
    }
    ir_expr *e = x;
    if (has_lo) e = cv_call2(cv, IR_OP_MAXIMUM, e, cv_scalar(cv, dt, lo), NULL);
    if (has_hi) {
        if (e != x) e = cv_emit(cv, e);
        e = cv_call2(cv, IR_OP_MINIMUM, e, cv_scalar(cv, dt, hi), NULL);
    }
    return e;
}

gr_status onnx_cv_clip(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    if (cv->opset < 11) {
        bool has_lo = cv_attr(cv, "min") != NULL, has_hi = cv_attr(cv, "max") != NULL;
        ir_expr *e = clip_call(cv, x, dt, has_lo, cv_attr_float(cv, "min", 0), has_hi,
                               cv_attr_float(cv, "max", 0));
        return cv_out(cv, 0, e);
    }
    double lo = 0, hi = 0;
    bool has_lo = cv_has(cv, 1), has_hi = cv_has(cv, 2);
    bool klo = !has_lo || known_scalar(cv, 1, &lo), khi = !has_hi || known_scalar(cv, 2, &hi);
    if (klo && khi) {
        if (!has_lo && !has_hi) return cv_out(cv, 0, x);
        return cv_out(cv, 0, clip_call(cv, x, dt, has_lo, lo, has_hi, hi));
    }
    /* Bounds computed at run time: tensor maximum/minimum. */
    ir_expr *e = x;
    if (has_lo) e = cv_call2(cv, IR_OP_MAXIMUM, e, cv_in(cv, 1), NULL);
    if (has_hi) {
        if (e != x) e = cv_emit(cv, e);
        e = cv_call2(cv, IR_OP_MINIMUM, e, cv_in(cv, 2), NULL);
    }
    return cv_out(cv, 0, e);
}

/* clip(alpha * x + beta, 0, 1) */
gr_status onnx_cv_hard_sigmoid(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *ax = cv_op2(cv, IR_OP_MULTIPLY, x, cv_scalar(cv, dt, cv_attr_float(cv, "alpha", 0.2)), NULL);
    ir_expr *axb = cv_op2(cv, IR_OP_ADD, ax, cv_scalar(cv, dt, cv_attr_float(cv, "beta", 0.5)), NULL);
    if (!axb) return cv_status(cv);
    return cv_out(cv, 0, clip_call(cv, axb, dt, true, 0.0, true, 1.0));
}

/* x * clip(x + 3, 0, 6) / 6 */
gr_status onnx_cv_hard_swish(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *x3 = cv_op2(cv, IR_OP_ADD, x, cv_scalar(cv, dt, 3.0), NULL);
    if (!x3) return cv_status(cv);
    ir_expr *c = cv_emit(cv, clip_call(cv, x3, dt, true, 0.0, true, 6.0));
    ir_expr *d = cv_op2(cv, IR_OP_DIVIDE, c, cv_scalar(cv, dt, 6.0), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MULTIPLY, x, d, NULL));
}

/* where(x > 0, x, alpha * (exp(x) - 1)) */
gr_status onnx_cv_elu(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *e = cv_op1(cv, IR_OP_EXP, x, NULL);
    ir_expr *em1 = cv_op2(cv, IR_OP_SUBTRACT, e, cv_scalar(cv, dt, 1.0), NULL);
    ir_expr *neg = cv_op2(cv, IR_OP_MULTIPLY, em1, cv_scalar(cv, dt, cv_attr_float(cv, "alpha", 1.0)), NULL);
    ir_expr *pos = cv_op2(cv, IR_OP_GREATER, x, cv_scalar(cv, dt, 0.0), NULL);
    ir_expr *args[3] = {pos, x, neg};
    return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, args, NULL));
}

/* log(exp(x) + 1) */
gr_status onnx_cv_softplus(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *e = cv_op1(cv, IR_OP_EXP, x, NULL);
    ir_expr *e1 = cv_op2(cv, IR_OP_ADD, e, cv_scalar(cv, dt, 1.0), NULL);
    return cv_out(cv, 0, cv_call1(cv, IR_OP_LOG, e1, NULL));
}

gr_status onnx_cv_reciprocal(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_DIVIDE, cv_scalar(cv, cv_dtype(cv, 0), 1.0), x, NULL));
}

static const cv_op_map binary_ops[] = {
    {"Add", IR_OP_ADD},         {"Sub", IR_OP_SUBTRACT}, {"Mul", IR_OP_MULTIPLY},
    {"Div", IR_OP_DIVIDE},      {"Pow", IR_OP_POWER},    {"Equal", IR_OP_EQUAL},
    {"Less", IR_OP_LESS},       {"Greater", IR_OP_GREATER}, {"Max", IR_OP_MAXIMUM},
    {"Min", IR_OP_MINIMUM},     {"Sum", IR_OP_ADD},      {"Mean", IR_OP_ADD},
    {"And", IR_OP_LOGICAL_AND}, {"Or", IR_OP_LOGICAL_OR},
    {"LessOrEqual", IR_OP_LESS_EQUAL}, {"GreaterOrEqual", IR_OP_GREATER_EQUAL},
};

gr_status onnx_cv_binary(onnx_cv *cv) {
    ir_op_id op = CV_MAP_OP(binary_ops, cv->node->op_type);
    ir_expr *a = cv_in(cv, 0), *b = cv_in(cv, 1);
    if (!a || !b) return cv_status(cv);
    ir_dtype da = cv_dtype(cv, 0), db = cv_dtype(cv, 1);
    /* Before opset 7, B broadcasts only with broadcast=1, aligned at `axis` of A (default: the
     * trailing dims, as numpy): pad B's shape with trailing 1s. */
    int64_t axis = cv_attr_int(cv, "axis", -1);
    if (cv->opset < 7 && cv_attr_int(cv, "broadcast", 0) && cv_attr(cv, "axis")) {
        int32_t ra = cv_rank(cv, 0), rb = cv_rank(cv, 1);
        const ir_prim *const *bd = cv_prim_dims(cv, 1);
        if (ra < 0 || rb < 0 || !bd) return cv_fail(cv, GR_ERR_UNSUPPORTED, "broadcast with unknown ranks");
        if (axis < 0) axis += ra;
        if (axis < 0 || axis + rb > ra) return cv_fail(cv, GR_ERR_INVALID, "bad broadcast axis");
        int32_t nr = ra - (int32_t)axis;
        if (nr > rb) {
            const ir_prim *dims[RT_MAX_NDIM];
            for (int32_t i = 0; i < nr; i++) dims[i] = i < rb ? bd[i] : ir_prim_int(cv->ctx, 1);
            b = cv_op2(cv, IR_OP_RESHAPE, b, cv_shape_expr(cv, (uint32_t)nr, dims), NULL);
        }
    }
    /* Pow takes an exponent of another type; Relax wants one dtype. */
    if (!strcmp(cv->node->op_type, "Pow") && !ir_dtype_eq(da, db) && !ir_dtype_is_void(da)) {
        cv_attrs at = {0};
        cv_set(&at, "dtype", ir_attr_dtype(da));
        b = cv_op1(cv, IR_OP_ASTYPE, b, &at);
    }
    return cv_out(cv, 0, cv_call2(cv, op, a, b, NULL));
}

/* Max, Min, Sum, Mean over any number of inputs: a chain of binary ops (Mean divides). */
gr_status onnx_cv_variadic(onnx_cv *cv) {
    ir_op_id op = CV_MAP_OP(binary_ops, cv->node->op_type);
    if (cv->nin == 0) return cv_fail(cv, GR_ERR_INVALID, "no inputs");
    ir_expr *acc = cv_in(cv, 0);
    for (uint32_t i = 1; acc && i < cv->nin; i++) {
        if (i > 1) acc = cv_emit(cv, acc);
        acc = cv_call2(cv, op, acc, cv_in(cv, i), NULL);
    }
    if (acc && !strcmp(cv->node->op_type, "Mean") && cv->nin > 1)
        acc = cv_call2(cv, IR_OP_DIVIDE, cv_emit(cv, acc), cv_scalar(cv, cv_dtype(cv, 0), cv->nin),
                       NULL);
    return cv_out(cv, 0, acc);
}

gr_status onnx_cv_where(onnx_cv *cv) {
    ir_expr *args[3] = {cv_in(cv, 0), cv_in(cv, 1), cv_in(cv, 2)};
    return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, args, NULL));
}

gr_status onnx_cv_matmul(onnx_cv *cv) {
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MATMUL, cv_in(cv, 0), cv_in(cv, 1), NULL));
}

static ir_expr *transpose2d(onnx_cv *cv, ir_expr *x) {
    cv_attrs a = {0};
    int64_t perm[2] = {1, 0};
    cv_set(&a, "axes", ir_attr_ints(cv->ctx, 2, perm));
    return cv_op1(cv, IR_OP_PERMUTE_DIMS, x, &a);
}

/* Y = alpha * op(A) @ op(B) + beta * C */
gr_status onnx_cv_gemm(onnx_cv *cv) {
    ir_expr *a = cv_in(cv, 0), *b = cv_in(cv, 1);
    if (!a || !b) return cv_status(cv);
    if (cv_rank(cv, 0) != 2 || cv_rank(cv, 1) != 2)
        return cv_fail(cv, GR_ERR_INVALID, "A and B must be 2-D");
    ir_dtype dt = cv_dtype(cv, 0);
    double alpha = cv_attr_float(cv, "alpha", 1.0), beta = cv_attr_float(cv, "beta", 1.0);
    if (cv_attr_int(cv, "transA", 0)) a = transpose2d(cv, a);
    if (cv_attr_int(cv, "transB", 0)) b = transpose2d(cv, b);
    ir_expr *y = cv_call2(cv, IR_OP_MATMUL, a, b, NULL);
    if (alpha != 1.0) y = cv_call2(cv, IR_OP_MULTIPLY, cv_emit(cv, y), cv_scalar(cv, dt, alpha), NULL);
    if (cv_has(cv, 2) && beta != 0.0) {
        ir_expr *c = cv_in(cv, 2);
        if (beta != 1.0) c = cv_op2(cv, IR_OP_MULTIPLY, c, cv_scalar(cv, dt, beta), NULL);
        y = cv_call2(cv, IR_OP_ADD, cv_emit(cv, y), c, NULL);
    }
    return cv_out(cv, 0, y);
}

/* Softmax / LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis` (default 1), the
 * op runs on the second dim, and the result takes the input's shape back. */
gr_status onnx_cv_softmax(onnx_cv *cv) {
    ir_op_id op = !strcmp(cv->node->op_type, "Softmax") ? IR_OP_SOFTMAX : IR_OP_LOG_SOFTMAX;
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis = cv_attr_int(cv, "axis", cv->opset < 13 ? 1 : -1);
    if (rank < 0) {
        if (cv->opset < 13 && axis != -1)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "input rank unknown");
    } else if (!cv_axis(axis, rank, &axis)) {
        return cv_fail(cv, GR_ERR_INVALID, "axis %lld out of range for rank %d",
                       (long long)cv_attr_int(cv, "axis", 0), (int)rank);
    }
    cv_attrs at = {0};
    if (cv->opset >= 13 || rank < 0 || axis == rank - 1) {
        cv_set(&at, "axis", ir_attr_int(rank >= 0 && axis == rank - 1 ? -1 : axis));
        return cv_out(cv, 0, cv_call1(cv, op, x, &at));
    }
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    const ir_prim *outer = ir_prim_int(cv->ctx, 1), *inner = ir_prim_int(cv->ctx, 1);
    for (int32_t i = 0; i < rank; i++) {
        if (i < axis) outer = ir_prim_mul(cv->ctx, outer, dims[i]);
        else inner = ir_prim_mul(cv->ctx, inner, dims[i]);
    }
    const ir_prim *two[2] = {outer, inner};
    ir_expr *flat = cv_op2(cv, IR_OP_RESHAPE, x, cv_shape_expr(cv, 2, two), NULL);
    cv_set(&at, "axis", ir_attr_int(-1));
    ir_expr *s = cv_op1(cv, op, flat, &at);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESHAPE, s, cv_shape_expr(cv, (uint32_t)rank, dims), NULL));
}

static const cv_op_map reduce_ops[] = {
    {"ReduceMean", IR_OP_MEAN}, {"ReduceSum", IR_OP_SUM},  {"ReduceMax", IR_OP_MAX},
    {"ReduceMin", IR_OP_MIN},   {"ReduceProd", IR_OP_PROD}, {"ReduceSumSquare", IR_OP_SUM},
    {"ReduceL1", IR_OP_SUM},    {"ReduceL2", IR_OP_SUM},    {"ReduceLogSum", IR_OP_SUM},
    {"ReduceLogSumExp", IR_OP_SUM},
};

gr_status onnx_cv_reduce(onnx_cv *cv) {
    ir_op_id op = CV_MAP_OP(reduce_ops, cv->node->op_type);
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    /* Axes became an input in opset 13 for ReduceSum and in opset 18 for the others. */
    bool axes_input = cv->opset >= (strcmp(cv->node->op_type, "ReduceSum") ? 18 : 13);
    if (cv_has(cv, 1)) axes_input = true;
    int64_t axes[RT_MAX_NDIM];
    int n;
    if (axes_input) {
        n = cv_has(cv, 1) ? cv_ints(cv, 1, axes, RT_MAX_NDIM) : 0;
        if (cv_has(cv, 1) && n < 0)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "axes must be a constant");
    } else {
        n = cv_attr_ints(cv, "axes", axes, RT_MAX_NDIM);
        if (n < 0) n = 0;
    }
    if (n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_INVALID, "too many axes");
    for (int i = 0; i < n; i++)
        if (rank >= 0 && !cv_axis(axes[i], rank, &axes[i]))
            return cv_fail(cv, GR_ERR_INVALID, "axis %lld out of range", (long long)axes[i]);
    /* The composite reductions: a map before the sum, a function after it. */
    const char *t = cv->node->op_type;
    ir_op_id pre = !strcmp(t, "ReduceL1") ? IR_OP_ABS
                   : !strcmp(t, "ReduceLogSumExp") ? IR_OP_EXP : IR_OP_NONE;
    bool square = !strcmp(t, "ReduceSumSquare") || !strcmp(t, "ReduceL2");
    ir_op_id post = !strcmp(t, "ReduceL2") ? IR_OP_SQRT
                    : (!strcmp(t, "ReduceLogSum") || !strcmp(t, "ReduceLogSumExp")) ? IR_OP_LOG
                                                                                    : IR_OP_NONE;
    if (n == 0 && cv_attr_int(cv, "noop_with_empty_axes", 0) && pre == IR_OP_NONE && !square &&
        post == IR_OP_NONE)
        return cv_out(cv, 0, x);
    if (pre != IR_OP_NONE) x = cv_op1(cv, pre, x, NULL);
    if (square) x = cv_op2(cv, IR_OP_MULTIPLY, x, x, NULL);
    cv_attrs at = {0};
    cv_set(&at, "axis", n ? ir_attr_ints(cv->ctx, (uint32_t)n, axes) : ir_attr_none());
    cv_set(&at, "keepdims", ir_attr_bool(cv_attr_int(cv, "keepdims", 1) != 0));
    ir_expr *r = cv_call1(cv, op, x, &at);
    if (post != IR_OP_NONE) r = cv_call1(cv, post, cv_emit(cv, r), NULL);
    return cv_out(cv, 0, r);
}

gr_status onnx_cv_cast(onnx_cv *cv) {
    ir_dtype to;
    if (!onnx_dtype_from_elem((int32_t)cv_attr_int(cv, "to", 0), &to))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "cast to element type %lld (%s)",
                       (long long)cv_attr_int(cv, "to", 0),
                       onnx_elem_unsupported_name((int32_t)cv_attr_int(cv, "to", 0)));
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (ir_dtype_eq(cv_dtype(cv, 0), to)) return cv_out(cv, 0, x);
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(to));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_ASTYPE, x, &at));
}

gr_status onnx_cv_identity(onnx_cv *cv) {
    return cv_out(cv, 0, cv_in(cv, 0));
}

/* Dropout at inference, or in training mode with ratio 0: the identity, and a mask of all
 * true. Training mode with a ratio above 0 drops random elements. */
gr_status onnx_cv_dropout(onnx_cv *cv) {
    rt_tensor *training = cv_known(cv, 2), *ratio = cv_known(cv, 1);
    if (cv_has(cv, 2) && (!training || rt_tensor_numel(training) != 1 ||
                          rt_tensor_get_f64(training, 0) != 0.0)) {
        /* ratio 0 drops nothing */
        bool zero = cv_has(cv, 1) && ratio && rt_tensor_numel(ratio) == 1 && rt_tensor_get_f64(ratio, 0) == 0.0;
        if (!zero)
            return cv_fail(cv, GR_ERR_UNSUPPORTED,
                           "training mode with a ratio above 0 drops random elements (random numbers are not supported)");
    }
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (cv->nout > 1 && cv->node->output[1] && *cv->node->output[1]) {
        const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
        if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "a mask for an input of unknown shape");
        cv_attrs at = {0};
        cv_set(&at, "dtype", ir_attr_dtype(IR_DTYPE_BOOL));
        ir_expr *mask = cv_call2(cv, IR_OP_FULL, cv_shape_expr(cv, (uint32_t)cv_rank(cv, 0), dims),
                                 cv_scalar(cv, IR_DTYPE_BOOL, 1.0), &at);
        gr_status st = cv_out(cv, 1, mask);
        if (st != GR_OK) return st;
    }
    return cv_out(cv, 0, x);
}

/* x / (1 + |x|) */
gr_status onnx_cv_softsign(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_expr *a = cv_op1(cv, IR_OP_ABS, x, NULL);
    ir_expr *d = cv_op2(cv, IR_OP_ADD, a, cv_scalar(cv, cv_dtype(cv, 0), 1.0), NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_DIVIDE, x, d, NULL));
}

/* Selu: gamma * where(x > 0, x, alpha * (exp(x) - 1)); ThresholdedRelu: where(x > alpha, x, 0) */
gr_status onnx_cv_selu(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype dt = cv_dtype(cv, 0);
    if (!strcmp(cv->node->op_type, "ThresholdedRelu")) {
        ir_expr *c = cv_op2(cv, IR_OP_GREATER, x, cv_scalar(cv, dt, cv_attr_float(cv, "alpha", 1.0)),
                            NULL);
        ir_expr *args[3] = {c, x, cv_scalar(cv, dt, 0.0)};
        return cv_out(cv, 0, cv_call(cv, IR_OP_WHERE, 3, args, NULL));
    }
    ir_expr *e = cv_op1(cv, IR_OP_EXP, x, NULL);
    ir_expr *em1 = cv_op2(cv, IR_OP_SUBTRACT, e, cv_scalar(cv, dt, 1.0), NULL);
    double alpha = cv_attr_float(cv, "alpha", 1.67326319217681884765625);
    double gamma = cv_attr_float(cv, "gamma", 1.05070102214813232421875);
    ir_expr *neg = cv_op2(cv, IR_OP_MULTIPLY, em1, cv_scalar(cv, dt, alpha), NULL);
    ir_expr *pos = cv_op2(cv, IR_OP_GREATER, x, cv_scalar(cv, dt, 0.0), NULL);
    ir_expr *args[3] = {pos, x, neg};
    ir_expr *w = cv_op(cv, IR_OP_WHERE, 3, args, NULL);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MULTIPLY, w, cv_scalar(cv, dt, gamma), NULL));
}

gr_status onnx_cv_cast_like(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    ir_dtype to = cv_dtype(cv, 1);
    if (ir_dtype_is_void(to)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "target dtype unknown");
    if (ir_dtype_eq(cv_dtype(cv, 0), to)) return cv_out(cv, 0, x);
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(to));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_ASTYPE, x, &at));
}

/* CumSum(x, axis; exclusive, reverse): reverse runs on the input flipped along the axis and
 * flips the result back. */
gr_status onnx_cv_cumsum(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t axis;
    if (cv_ints(cv, 1, &axis, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "axis must be a constant");
    if (!cv_axis(axis, cv_rank(cv, 0), &axis)) return cv_fail(cv, GR_ERR_INVALID, "bad axis");
    bool reverse = cv_attr_int(cv, "reverse", 0) != 0;
    cv_attrs fa = {0};
    cv_set(&fa, "axis", ir_attr_int(axis));
    if (reverse) x = cv_op1(cv, IR_OP_FLIP, x, &fa);
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    cv_set(&at, "exclusive", ir_attr_bool(cv_attr_int(cv, "exclusive", 0) != 0));
    ir_expr *y = cv_call1(cv, IR_OP_CUMSUM, x, &at);
    if (!reverse) return cv_out(cv, 0, y);
    return cv_out(cv, 0, cv_call1(cv, IR_OP_FLIP, cv_emit(cv, y), &fa));
}
