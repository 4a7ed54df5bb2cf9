/* Converters of the quantization ops (ONNX coverage), as float computations on the host
 * that follow the spec's formulas: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger (exact, in int32) and QLinearMatMul; and com.microsoft's QLinearAdd,
 * QLinearMul, QLinearGlobalAveragePool and QGemm (ONNX Runtime's QOperator format) as
 * dequantize -> float op -> quantize. Rounding is half to even (relax.round),
 * saturation a clip to the output type's range; scales and zero points may be per tensor or,
 * where the spec allows, per axis. */
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* Range of a quantized type; false for a type the ops do not produce. */
static bool qrange(ir_dtype t, double *lo, double *hi) {
    static const struct {
        ir_dtype t;
        double lo, hi;
    } R[] = {{{kDLUInt, 8, 1}, 0, 255},  /* brace initializers: a compound literal is no constant */
             {{kDLInt, 8, 1}, -128, 127},
             {{kDLUInt, 16, 1}, 0, 65535},
             {{kDLInt, 16, 1}, -32768, 32767},
             {{kDLInt, 32, 1}, -2147483648.0, 2147483647.0}};
    for (size_t i = 0; i < sizeof(R) / sizeof(R[0]); i++)
        if (ir_dtype_eq(R[i].t, t)) {
            *lo = R[i].lo;
            *hi = R[i].hi;
            return true;
        }
    return false;
}

static ir_expr *astype(onnx_cv *cv, ir_expr *x, ir_dtype t) {
    if (!x) return NULL;
    if (x->sinfo && ir_dtype_eq(x->sinfo->dtype, t)) return x;
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(t));
    return cv_op1(cv, IR_OP_ASTYPE, x, &at);
}

/* Input i (a scale or zero point) shaped to broadcast against a tensor of `rank` dims: a 1-D
 * per-axis parameter becomes (C, 1, ..., 1) ending at the last dim; a scalar stays. */
static ir_expr *per_axis(onnx_cv *cv, uint32_t i, int64_t axis, int32_t rank) {
    ir_expr *p = cv_in(cv, i);
    if (!p) return NULL;
    const ir_sinfo *s = cv_sinfo(cv, i);
    int64_t n;
    if (!s || s->ndim == 0 || !s->dims) return p;
    if (s->ndim != 1 || !ir_prim_is_int(s->dims[0], &n)) {
        cv_fail(cv, GR_ERR_INVALID, "input %u must be a scalar or 1-D", i);
        return NULL;
    }
    if (n == 1 || axis == rank - 1) return p;
    const ir_prim *d[RT_MAX_NDIM];
    uint32_t k = 0;
    for (int64_t a = axis; a < rank; a++) d[k++] = ir_prim_int(cv->ctx, a == axis ? n : 1);
    return cv_op2(cv, IR_OP_RESHAPE, p, cv_shape_expr(cv, k, d), NULL);
}

/* clip(round(x) [+ zp], range of t) as t; x is float32. */
static ir_expr *saturate(onnx_cv *cv, ir_expr *x, ir_expr *zp, ir_dtype t) {
    double lo, hi;
    if (!qrange(t, &lo, &hi)) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "quantized type %s", ir_dtype_name(t) ? ir_dtype_name(t) : "?");
        return NULL;
    }
    ir_expr *r = cv_op1(cv, IR_OP_ROUND, x, NULL);
    if (zp) r = cv_op2(cv, IR_OP_ADD, r, astype(cv, zp, IR_DTYPE_F32), NULL);
    ir_expr *args[3] = {r, (ir_expr *)ir_primval_float(cv->ctx, IR_DTYPE_F32, lo, cv->span),
                        (ir_expr *)ir_primval_float(cv->ctx, IR_DTYPE_F32, hi, cv->span)};
    ir_expr *c = cv_emit(cv, cv_call(cv, IR_OP_CLIP, 3, args, NULL));
    if (!c) return NULL;
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(t));
    return cv_call1(cv, IR_OP_ASTYPE, c, &at);
}

/* The axis of a per-axis scale (input 1); a per-tensor scale ignores it (the default 1 need
 * not exist then), and so does a 1-D scale of one element (ORT's quantizer writes those for
 * per-tensor int32 biases, whose rank 1 has no axis 1; ONNX Runtime broadcasts them). */
static bool quant_axis(onnx_cv *cv, int64_t *axis) {
    int32_t rank = cv_rank(cv, 0);
    const ir_sinfo *s = cv_sinfo(cv, 1);
    int64_t n;
    *axis = 0;
    if (s && s->ndim == 0) return true;
    if (s && s->ndim == 1 && s->dims && ir_prim_is_int(s->dims[0], &n) && n == 1) return true;
    if (!cv_axis(cv_attr_int(cv, "axis", 1), rank, axis)) {
        cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank for a per-axis scale");
        return false;
    }
    return true;
}

/* y = saturate(round(x / scale) + zero_point); the output type is the zero point's (uint8
 * without one). */
gr_status onnx_cv_quantize(onnx_cv *cv) {
    int64_t axis;
    if (!quant_axis(cv, &axis)) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    ir_expr *x = astype(cv, cv_in(cv, 0), IR_DTYPE_F32);
    ir_expr *s = astype(cv, per_axis(cv, 1, axis, rank), IR_DTYPE_F32);
    ir_expr *zp = cv_has(cv, 2) ? per_axis(cv, 2, axis, rank) : NULL;
    if (!x || !s || (cv_has(cv, 2) && !zp)) return cv_status(cv);
    ir_dtype t = cv_has(cv, 2) ? cv_dtype(cv, 2) : IR_DTYPE_U8;
    return cv_out(cv, 0, saturate(cv, cv_op2(cv, IR_OP_DIVIDE, x, s, NULL), zp, t));
}

/* y = (x - zero_point) * scale, in float32. */
gr_status onnx_cv_dequantize(onnx_cv *cv) {
    int64_t axis;
    if (!quant_axis(cv, &axis)) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    ir_expr *x = astype(cv, cv_in(cv, 0), IR_DTYPE_F32);
    ir_expr *s = per_axis(cv, 1, axis, rank);
    if (!x || !s) return cv_status(cv);
    if (cv_has(cv, 2)) {
        ir_expr *zp = per_axis(cv, 2, axis, rank);
        x = cv_op2(cv, IR_OP_SUBTRACT, x, astype(cv, zp, IR_DTYPE_F32), NULL);
    }
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MULTIPLY, x, astype(cv, s, IR_DTYPE_F32), NULL));
}

/* y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = saturate(round(-min(0, min x)
 * / y_scale)), y = saturate(round(x / y_scale) + y_zero_point), all uint8. */
gr_status onnx_cv_dynamic_quantize(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    if (!ir_dtype_eq(cv_dtype(cv, 0), IR_DTYPE_F32)) return cv_fail(cv, GR_ERR_INVALID, "input must be float32");
    ir_expr *zero = cv_scalar(cv, IR_DTYPE_F32, 0.0);
    ir_expr *mx = cv_op2(cv, IR_OP_MAXIMUM, cv_op1(cv, IR_OP_MAX, x, NULL), zero, NULL);
    ir_expr *mn = cv_op2(cv, IR_OP_MINIMUM, cv_op1(cv, IR_OP_MIN, x, NULL), zero, NULL);
    ir_expr *scale = cv_op2(cv, IR_OP_DIVIDE, cv_op2(cv, IR_OP_SUBTRACT, mx, mn, NULL),
                            cv_scalar(cv, IR_DTYPE_F32, 255.0), NULL);
    ir_expr *zpf = cv_op2(cv, IR_OP_DIVIDE, cv_op1(cv, IR_OP_NEGATIVE, mn, NULL), scale, NULL);
    ir_expr *zp = cv_emit(cv, saturate(cv, zpf, NULL, IR_DTYPE_U8));
    if (!zp) return cv_status(cv);
    gr_status st = cv_out(cv, 0, saturate(cv, cv_op2(cv, IR_OP_DIVIDE, x, scale, NULL), zp, IR_DTYPE_U8));
    if (st == GR_OK && cv->nout > 1) cv->out[1] = scale;
    if (st == GR_OK && cv->nout > 2) cv->out[2] = zp;
    return st;
}

/* Operand i of an integer matmul minus its zero point (input zi), in int32. A per-row zero
 * point of A (M,) becomes (M, 1). */
static ir_expr *int_operand(onnx_cv *cv, uint32_t i, uint32_t zi, bool is_a) {
    ir_expr *x = astype(cv, cv_in(cv, i), IR_DTYPE_I32);
    if (!x || !cv_has(cv, zi)) return x;
    ir_expr *zp = astype(cv, cv_in(cv, zi), IR_DTYPE_I32);
    const ir_sinfo *zs = cv_sinfo(cv, zi);
    int64_t n;
    if (is_a && zs && zs->ndim == 1 && zs->dims && ir_prim_is_int(zs->dims[0], &n) && n > 1) {
        const ir_prim *d[2] = {ir_prim_int(cv->ctx, n), ir_prim_int(cv->ctx, 1)};
        zp = cv_op2(cv, IR_OP_RESHAPE, zp, cv_shape_expr(cv, 2, d), NULL);
    }
    return cv_op2(cv, IR_OP_SUBTRACT, x, zp, NULL);
}

/* (A - a_zero_point) @ (B - b_zero_point) in int32. */
gr_status onnx_cv_matmul_integer(onnx_cv *cv) {
    ir_expr *a = int_operand(cv, 0, 2, true), *b = int_operand(cv, 1, 3, false);
    if (!a || !b) return cv_status(cv);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MATMUL, a, b, NULL));
}

/* y = saturate(round((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale)) + y_zp): the
 * product exact in int32, the rescale in float32. */
gr_status onnx_cv_qlinear_matmul(onnx_cv *cv) {
    ir_expr *a = int_operand(cv, 0, 2, true), *b = int_operand(cv, 3, 5, false);
    if (!a || !b) return cv_status(cv);
    ir_expr *acc = astype(cv, cv_op2(cv, IR_OP_MATMUL, a, b, NULL), IR_DTYPE_F32);
    ir_expr *m = cv_op2(cv, IR_OP_MULTIPLY, astype(cv, cv_in(cv, 1), IR_DTYPE_F32),
                        astype(cv, cv_in(cv, 4), IR_DTYPE_F32), NULL);
    m = cv_op2(cv, IR_OP_DIVIDE, m, astype(cv, cv_in(cv, 6), IR_DTYPE_F32), NULL);
    ir_expr *y = cv_op2(cv, IR_OP_MULTIPLY, acc, m, NULL);
    if (!y) return cv_status(cv);
    return cv_out(cv, 0, saturate(cv, y, cv_has(cv, 7) ? cv_in(cv, 7) : NULL, cv_dtype(cv, 7)));
}

/* Input i in int32 minus its zero point (input zi, absent: 0); a per-channel zero point of
 * the weight (M,) becomes (M, 1, ..., 1) for a weight of `rank` dims. */
static ir_expr *int_conv_operand(onnx_cv *cv, uint32_t i, uint32_t zi, int32_t rank) {
    ir_expr *x = astype(cv, cv_in(cv, i), IR_DTYPE_I32);
    if (!x || !cv_has(cv, zi)) return x;
    ir_expr *zp = astype(cv, per_axis(cv, zi, 0, rank), IR_DTYPE_I32);
    return cv_op2(cv, IR_OP_SUBTRACT, x, zp, NULL);
}

/* ConvInteger: conv(x - x_zero_point, w - w_zero_point) in int32 (exact; padding with the
 * zero point, as ONNX Runtime). */
gr_status onnx_cv_conv_integer(onnx_cv *cv) {
    int32_t rank = cv_rank(cv, 0);
    ir_expr *x = int_conv_operand(cv, 0, 2, rank), *w = int_conv_operand(cv, 1, 3, rank);
    if (!x || !w) return cv_status(cv);
    return cv_out(cv, 0, onnx_conv_call(cv, x, w, 1, IR_DTYPE_I32));
}

static ir_expr *dq_input(onnx_cv *cv, uint32_t xi, uint32_t si, uint32_t zi, int64_t axis);
static gr_status q_output(onnx_cv *cv, ir_expr *y, uint32_t si, uint32_t zi);

/* QLinearConv: y = quantize(conv(dequantize(x), dequantize(w)) + B * x_scale * w_scale) with
 * y_scale, y_zero_point (w_scale, w_zero_point and B per output channel): the form ONNX
 * Runtime's QDQ models have, so the constant weights fold and a backend's quantized
 * composites take it as they take QDQ (the spec's int32 sum, requantized by x_scale *
 * w_scale / y_scale, equals it up to float rounding: a tie may land on the other side). */
gr_status onnx_cv_qlinear_conv(onnx_cv *cv) {
    int32_t rank = cv_rank(cv, 0);
    ir_expr *x = dq_input(cv, 0, 1, 2, 1), *w = dq_input(cv, 3, 4, 5, 0);
    if (!x || !w) return cv_status(cv);
    ir_expr *y = cv_emit(cv, onnx_conv_call(cv, x, w, 3, IR_DTYPE_F32));
    if (!y) return cv_status(cv);
    if (cv_has(cv, 8)) {
        ir_expr *sc = cv_op2(cv, IR_OP_MULTIPLY, astype(cv, cv_in(cv, 1), IR_DTYPE_F32),
                             astype(cv, per_axis(cv, 4, 1, rank), IR_DTYPE_F32), NULL);
        y = cv_op2(cv, IR_OP_ADD, y, cv_op2(cv, IR_OP_MULTIPLY, astype(cv, per_axis(cv, 8, 1, rank), IR_DTYPE_F32), sc, NULL), NULL);
    }
    return q_output(cv, y, 6, 7);
}

/* ---- com.microsoft QOperator ops: dequantize -> float op -> quantize ---- */

/* (input xi - zero point zi) * scale si in float32; a 1-D scale / zero point applies along
 * `axis` of the input (QGemm's per-column B). */
static ir_expr *dq_input(onnx_cv *cv, uint32_t xi, uint32_t si, uint32_t zi, int64_t axis) {
    int32_t rank = cv_rank(cv, xi);
    ir_expr *x = astype(cv, cv_in(cv, xi), IR_DTYPE_F32);
    if (x && cv_has(cv, zi)) x = cv_op2(cv, IR_OP_SUBTRACT, x, astype(cv, per_axis(cv, zi, axis, rank), IR_DTYPE_F32), NULL);
    ir_expr *s = per_axis(cv, si, axis, rank);
    return x && s ? cv_op2(cv, IR_OP_MULTIPLY, x, astype(cv, s, IR_DTYPE_F32), NULL) : NULL;
}

/* y quantized with scale si and zero point zi (uint8 without one) as output 0. */
static gr_status q_output(onnx_cv *cv, ir_expr *y, uint32_t si, uint32_t zi) {
    ir_expr *s = astype(cv, cv_in(cv, si), IR_DTYPE_F32);
    if (!y || !s) return cv_status(cv);
    ir_dtype t = cv_has(cv, zi) ? cv_dtype(cv, zi) : IR_DTYPE_U8;
    return cv_out(cv, 0, saturate(cv, cv_op2(cv, IR_OP_DIVIDE, y, s, NULL), cv_has(cv, zi) ? cv_in(cv, zi) : NULL, t));
}

/* C = quantize(dequantize(A) op dequantize(B)): inputs A, A_scale, A_zp, B, B_scale, B_zp,
 * C_scale, C_zp. */
static gr_status qlinear_binary(onnx_cv *cv, ir_op_id op) {
    ir_expr *a = dq_input(cv, 0, 1, 2, 0), *b = dq_input(cv, 3, 4, 5, 0);
    if (!a || !b) return cv_status(cv);
    return q_output(cv, cv_op2(cv, op, a, b, NULL), 6, 7);
}

gr_status onnx_cv_qlinear_add(onnx_cv *cv) { return qlinear_binary(cv, IR_OP_ADD); }
gr_status onnx_cv_qlinear_mul(onnx_cv *cv) { return qlinear_binary(cv, IR_OP_MULTIPLY); }

/* Y = quantize(mean of dequantize(X) over its spatial axes, kept as 1s): inputs X, x_scale,
 * x_zp, y_scale, y_zp; channels_last: X is N, spatial..., C. */
gr_status onnx_cv_qlinear_global_avg_pool(onnx_cv *cv) {
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3) return cv_fail(cv, GR_ERR_INVALID, "input of rank %d: needs N, C and spatial axes", (int)rank);
    bool last = cv_attr_int(cv, "channels_last", 0) != 0;
    int64_t axes[RT_MAX_NDIM];
    int n = 0;
    for (int32_t a = 1; a < rank; a++)
        if (a != (last ? rank - 1 : 1)) axes[n++] = a;
    ir_expr *x = dq_input(cv, 0, 1, 2, 0);
    if (!x) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_ints(cv->ctx, (uint32_t)n, axes));
    cv_set(&at, "keepdims", ir_attr_bool(true));
    return q_output(cv, cv_op1(cv, IR_OP_MEAN, x, &at), 3, 4);
}

static ir_expr *transposed(onnx_cv *cv, ir_expr *x) {
    cv_attrs a = {0};
    int64_t perm[2] = {1, 0};
    cv_set(&a, "axes", ir_attr_ints(cv->ctx, 2, perm));
    return cv_op1(cv, IR_OP_PERMUTE_DIMS, x, &a);
}

/* Y = alpha * A' B' + C' with A' = dequantize(A) (transposed when transA), B' likewise (a
 * per-column scale: along B's axis 0 when transB, else 1), C' = C * a_scale * b_scale (an
 * int32 bias at that scale); quantized with y_scale / y_zp when given, else float32 out.
 * Inputs: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp. */
gr_status onnx_cv_qgemm(onnx_cv *cv) {
    if (cv_rank(cv, 0) != 2 || cv_rank(cv, 3) != 2) return cv_fail(cv, GR_ERR_INVALID, "A and B must be 2-D");
    bool ta = cv_attr_int(cv, "transA", 0) != 0, tb = cv_attr_int(cv, "transB", 0) != 0;
    double alpha = cv_attr_float(cv, "alpha", 1.0);
    ir_expr *a = dq_input(cv, 0, 1, 2, 0), *b = dq_input(cv, 3, 4, 5, tb ? 0 : 1);
    if (!a || !b) return cv_status(cv);
    if (ta) a = transposed(cv, a);
    if (tb) b = transposed(cv, b);
    ir_expr *y = cv_op2(cv, IR_OP_MATMUL, a, b, NULL);
    if (alpha != 1.0) y = cv_op2(cv, IR_OP_MULTIPLY, y, cv_scalar(cv, IR_DTYPE_F32, alpha), NULL);
    if (cv_has(cv, 6)) {
        ir_expr *ab = cv_op2(cv, IR_OP_MULTIPLY, astype(cv, cv_in(cv, 1), IR_DTYPE_F32), astype(cv, cv_in(cv, 4), IR_DTYPE_F32), NULL);
        y = cv_op2(cv, IR_OP_ADD, y, cv_op2(cv, IR_OP_MULTIPLY, astype(cv, cv_in(cv, 6), IR_DTYPE_F32), ab, NULL), NULL);
    }
    if (!y) return cv_status(cv);
    if (!cv_has(cv, 7)) return cv_out(cv, 0, y);
    return q_output(cv, y, 7, 8);
}
