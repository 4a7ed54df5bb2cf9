/* Converters of the optimizer ops of ai.onnx.preview.training (Adagrad, Momentum, Adam). Each is
 * an elementwise update formula of the ONNX spec, written as Relax elementwise ops, so the
 * reference kernels run it and the LLVM host codegen fuses it like any elementwise chain. The
 * iteration count T is a run-time scalar: the "T > 0" cases of the spec are R.where selects.
 * Inputs: R, T, then n tensors of each group (X..., G..., and the optimizer's state); outputs:
 * the new values of X and the state, group after group. Gradient needs autodiff: not here. */
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

static ir_expr *f_mul(onnx_cv *cv, ir_expr *a, ir_expr *b) { return cv_op2(cv, IR_OP_MULTIPLY, a, b, NULL); }
static ir_expr *f_add(onnx_cv *cv, ir_expr *a, ir_expr *b) { return cv_op2(cv, IR_OP_ADD, a, b, NULL); }
static ir_expr *f_sub(onnx_cv *cv, ir_expr *a, ir_expr *b) { return cv_op2(cv, IR_OP_SUBTRACT, a, b, NULL); }
static ir_expr *f_div(onnx_cv *cv, ir_expr *a, ir_expr *b) { return cv_op2(cv, IR_OP_DIVIDE, a, b, NULL); }

static ir_expr *f_cast(onnx_cv *cv, ir_expr *a, ir_dtype dt) {
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(dt));
    return cv_op1(cv, IR_OP_ASTYPE, a, &at);
}

static ir_expr *f_where(onnx_cv *cv, ir_expr *c, ir_expr *a, ir_expr *b) {
    ir_expr *args[3] = {c, a, b};
    return cv_op(cv, IR_OP_WHERE, 3, args, NULL);
}

/* norm_coefficient * X + G */
static ir_expr *g_reg(onnx_cv *cv, ir_expr *x, ir_expr *g, ir_dtype dt) {
    double nc = cv_attr_float(cv, "norm_coefficient", 0.0);
    if (nc == 0.0) return g;
    return f_add(cv, f_mul(cv, cv_scalar(cv, dt, nc), x), g);
}

/* The number n of optimized tensors: inputs 2 + groups * n, outputs outs_per * n. */
static int train_n(onnx_cv *cv, uint32_t groups, uint32_t outs_per) {
    if (strcmp(cv->node->domain ? cv->node->domain : "", "ai.onnx.preview.training"))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "only in domain ai.onnx.preview.training"), -1;
    if (cv->nin < 2 + groups || (cv->nin - 2) % groups || cv->nout != outs_per * ((cv->nin - 2) / groups))
        return cv_fail(cv, GR_ERR_INVALID, "%u inputs and %u outputs do not form %u groups", cv->nin,
                       cv->nout, groups), -1;
    for (uint32_t i = 0; i < cv->nin; i++) {
        ir_dtype dt = cv_dtype(cv, i);
        if (i == 1 ? dt.code != kDLInt : dt.code != kDLFloat)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "input %u: %s", i,
                           i == 1 ? "T must be an integer" : "only floating-point tensors"), -1;
    }
    return (int)((cv->nin - 2) / groups);
}

/* r = R / (1 + T * decay_factor); G' = reg(G); H' = H + G'^2; X' = X - r * G' / (sqrt(H') + eps) */
gr_status onnx_cv_adagrad(onnx_cv *cv) {
    int n = train_n(cv, 3, 2);
    if (n < 0) return cv_status(cv);
    ir_dtype rt = cv_dtype(cv, 0);
    ir_expr *r = cv_in(cv, 0), *t = cv_in(cv, 1);
    if (!r || !t) return cv_status(cv);
    double decay = cv_attr_float(cv, "decay_factor", 0.0), eps = cv_attr_float(cv, "epsilon", 1e-6);
    ir_expr *den = f_add(cv, cv_scalar(cv, rt, 1.0), f_mul(cv, f_cast(cv, t, rt), cv_scalar(cv, rt, decay)));
    r = f_div(cv, r, den);
    for (int k = 0; k < n; k++) {
        ir_expr *x = cv_in(cv, 2 + k), *g = cv_in(cv, 2 + n + k), *h = cv_in(cv, 2 + 2 * n + k);
        if (!x || !g || !h || !r) return cv_status(cv);
        ir_dtype dt = cv_dtype(cv, 2 + k);
        ir_expr *rx = ir_dtype_eq(dt, rt) ? r : f_cast(cv, r, dt);
        g = g_reg(cv, x, g, dt);
        ir_expr *hn = f_add(cv, h, f_mul(cv, g, g));
        ir_expr *ha = f_add(cv, cv_op1(cv, IR_OP_SQRT, hn, NULL), cv_scalar(cv, dt, eps));
        ir_expr *xn = cv_call2(cv, IR_OP_SUBTRACT, x, f_div(cv, f_mul(cv, rx, g), ha), NULL);
        gr_status st = cv_out(cv, (uint32_t)k, xn);
        if (st == GR_OK) st = cv_out(cv, (uint32_t)(n + k), hn);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

/* b = T > 0 ? beta : 1; V' = alpha * V + b * reg(G); standard: X' = X - R * V';
 * nesterov: X' = X - R * (reg(G) + alpha * V') */
gr_status onnx_cv_momentum(onnx_cv *cv) {
    int n = train_n(cv, 3, 2);
    if (n < 0) return cv_status(cv);
    const char *mode = cv_attr_str(cv, "mode", "standard");
    bool nesterov = mode && !strcmp(mode, "nesterov");
    if (!nesterov && (!mode || strcmp(mode, "standard")))
        return cv_fail(cv, GR_ERR_INVALID, "mode '%s' (standard or nesterov)", mode ? mode : "");
    double alpha = cv_attr_float(cv, "alpha", 0.0), beta = cv_attr_float(cv, "beta", 0.0);
    ir_expr *r = cv_in(cv, 0), *t = cv_in(cv, 1);
    if (!r || !t) return cv_status(cv);
    ir_expr *pos = cv_op2(cv, IR_OP_GREATER, t, cv_scalar(cv, cv_dtype(cv, 1), 0.0), NULL);
    for (int k = 0; k < n; k++) {
        ir_expr *x = cv_in(cv, 2 + k), *g = cv_in(cv, 2 + n + k), *v = cv_in(cv, 2 + 2 * n + k);
        if (!x || !g || !v || !pos) return cv_status(cv);
        ir_dtype dt = cv_dtype(cv, 2 + k);
        ir_expr *rx = ir_dtype_eq(dt, cv_dtype(cv, 0)) ? r : f_cast(cv, r, dt);
        ir_expr *b = f_where(cv, pos, cv_scalar(cv, dt, beta), cv_scalar(cv, dt, 1.0));
        g = g_reg(cv, x, g, dt);
        ir_expr *vn = f_add(cv, f_mul(cv, cv_scalar(cv, dt, alpha), v), f_mul(cv, b, g));
        ir_expr *step = nesterov ? f_add(cv, g, f_mul(cv, cv_scalar(cv, dt, alpha), vn)) : vn;
        ir_expr *xn = cv_call2(cv, IR_OP_SUBTRACT, x, f_mul(cv, rx, step), NULL);
        gr_status st = cv_out(cv, (uint32_t)k, xn);
        if (st == GR_OK) st = cv_out(cv, (uint32_t)(n + k), vn);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

/* G' = reg(G); V' = alpha V + (1 - alpha) G'; H' = beta H + (1 - beta) G'^2;
 * R' = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R; X' = (1 - ncp) (X - R' V' / (sqrt(H') + eps)) */
gr_status onnx_cv_adam(onnx_cv *cv) {
    int n = train_n(cv, 4, 3);
    if (n < 0) return cv_status(cv);
    double alpha = cv_attr_float(cv, "alpha", 0.9), beta = cv_attr_float(cv, "beta", 0.999);
    double eps = cv_attr_float(cv, "epsilon", 1e-6), ncp = cv_attr_float(cv, "norm_coefficient_post", 0.0);
    ir_dtype rt = cv_dtype(cv, 0);
    ir_expr *r = cv_in(cv, 0), *t = cv_in(cv, 1);
    if (!r || !t) return cv_status(cv);
    /* in float64: alpha^T and beta^T of a large T lose nothing to float32 rounding */
    ir_dtype f64 = IR_DTYPE_F64;
    ir_expr *tf = f_cast(cv, t, f64);
    ir_expr *at = cv_op2(cv, IR_OP_POWER, cv_scalar(cv, f64, alpha), tf, NULL);
    ir_expr *bt = cv_op2(cv, IR_OP_POWER, cv_scalar(cv, f64, beta), tf, NULL);
    ir_expr *num = cv_op1(cv, IR_OP_SQRT, f_sub(cv, cv_scalar(cv, f64, 1.0), bt), NULL);
    ir_expr *adj = f_div(cv, f_mul(cv, f_cast(cv, r, f64), num), f_sub(cv, cv_scalar(cv, f64, 1.0), at));
    ir_expr *pos = cv_op2(cv, IR_OP_GREATER, t, cv_scalar(cv, cv_dtype(cv, 1), 0.0), NULL);
    ir_expr *radj = f_where(cv, pos, adj, f_cast(cv, r, f64));
    (void)rt;
    for (int k = 0; k < n; k++) {
        ir_expr *x = cv_in(cv, 2 + k), *g = cv_in(cv, 2 + n + k), *v = cv_in(cv, 2 + 2 * n + k),
                *h = cv_in(cv, 2 + 3 * n + k);
        if (!x || !g || !v || !h || !radj) return cv_status(cv);
        ir_dtype dt = cv_dtype(cv, 2 + k);
        ir_expr *rx = f_cast(cv, radj, dt);
        g = g_reg(cv, x, g, dt);
        ir_expr *vn = f_add(cv, f_mul(cv, cv_scalar(cv, dt, alpha), v), f_mul(cv, cv_scalar(cv, dt, 1.0 - alpha), g));
        ir_expr *hn = f_add(cv, f_mul(cv, cv_scalar(cv, dt, beta), h),
                            f_mul(cv, cv_scalar(cv, dt, 1.0 - beta), f_mul(cv, g, g)));
        ir_expr *hs = f_add(cv, cv_op1(cv, IR_OP_SQRT, hn, NULL), cv_scalar(cv, dt, eps));
        ir_expr *xn = f_sub(cv, x, f_mul(cv, rx, f_div(cv, vn, hs)));
        ir_expr *xf = ncp == 0.0 ? xn : cv_call2(cv, IR_OP_MULTIPLY, xn, cv_scalar(cv, dt, 1.0 - ncp), NULL);
        gr_status st = cv_out(cv, (uint32_t)k, xf);
        if (st == GR_OK) st = cv_out(cv, (uint32_t)(n + k), vn);
        if (st == GR_OK) st = cv_out(cv, (uint32_t)(2 * n + k), hn);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}
