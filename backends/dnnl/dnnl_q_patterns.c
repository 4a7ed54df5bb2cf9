/* The dnnl backend's quantized composites (backends/dnnl/dnnl_q_impl.h): patterns over the
 * bindings ONNX's QuantizeLinear / DequantizeLinear import to, and the checks that keep on the
 * float path what oneDNN's int8 primitives cannot compute as ONNX does, with the reason in the
 * partition report: scales that are not positive scalar constants, zero points off the integer
 * grid or out of the type's range, a clip other than the type's range, a quantize whose
 * dequantize has other parameters (before a convolution / matmul), weights that are not
 * symmetric int8 levels times a per-tensor or per-channel scale (weight zero points), a bias
 * that is not per output channel, layouts other than NCHW / OIHW, matmuls of more than 2-D.
 * A quantize or dequantize that no pair holds (a QOperator model's uint8 tensor read by several
 * ops), and max pooling / reshape of uint8 / int8 levels, get composites of their own, so that
 * such a tensor stays on oneDNN as levels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_pattern_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"
#include "base/tensor.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"

#define OPN(id) (ir_op_def_at(IR_OP_##id)->name)

/* ---- names ---- */

typedef struct q_spec {
    const char *name;
    dnnl_q_kind kind;
    bool bias;
    ir_op_id act;                 /* IR_OP_RELU, IR_OP_CLIP or IR_OP_NONE */
} q_spec;

/* longest first: the table's order is the patterns' priority */
static const q_spec SPECS[] = {
    {"dnnl.qconv2d_bias_relu", DNNL_Q_CONV2D, true, IR_OP_RELU},
    {"dnnl.qconv2d_bias_clip", DNNL_Q_CONV2D, true, IR_OP_CLIP},
    {"dnnl.qconv2d_bias", DNNL_Q_CONV2D, true, IR_OP_NONE},
    {"dnnl.qconv2d_relu", DNNL_Q_CONV2D, false, IR_OP_RELU},
    {"dnnl.qconv2d_clip", DNNL_Q_CONV2D, false, IR_OP_CLIP},
    {"dnnl.qconv2d", DNNL_Q_CONV2D, false, IR_OP_NONE},
    {"dnnl.qmatmul_bias_relu", DNNL_Q_MATMUL, true, IR_OP_RELU},
    {"dnnl.qmatmul_bias_clip", DNNL_Q_MATMUL, true, IR_OP_CLIP},
    {"dnnl.qmatmul_bias", DNNL_Q_MATMUL, true, IR_OP_NONE},
    {"dnnl.qmatmul_relu", DNNL_Q_MATMUL, false, IR_OP_RELU},
    {"dnnl.qmatmul_clip", DNNL_Q_MATMUL, false, IR_OP_CLIP},
    {"dnnl.qmatmul", DNNL_Q_MATMUL, false, IR_OP_NONE},
    {"dnnl.qdq", DNNL_Q_QDQ, false, IR_OP_NONE},
    {"dnnl.q_quantize", DNNL_Q_QUANT, false, IR_OP_NONE},
    {"dnnl.q_dequantize", DNNL_Q_DEQUANT, false, IR_OP_NONE},
    {"dnnl.q_cast", DNNL_Q_CAST, false, IR_OP_NONE},
    {"dnnl.qmax_pool2d", DNNL_Q_MAXPOOL, false, IR_OP_NONE},
    {"dnnl.qreshape", DNNL_Q_RESHAPE, false, IR_OP_NONE},
};
#define NSPECS (sizeof SPECS / sizeof SPECS[0])

dnnl_q_kind dnnl_q_kind_of(const char *composite) {
    for (size_t i = 0; composite && i < NSPECS; i++)
        if (!strcmp(composite, SPECS[i].name)) return SPECS[i].kind;
    return DNNL_Q_NONE;
}

/* ---- int8 weights ---- */

/* |v - round(v)| of a level read back from a float32 product level * scale: a few ulps of
 * 127 (3e-5); a value off the grid is this close by chance with odds 2e-3 per element */
#define LEVEL_EPS 1e-3

/* Levels of w[o][c][i] for c in [c0, c1) at scale s, all within LEVEL_EPS of integers in
 * [-127, 127] (q NULL: only checked). */
static bool on_grid(const float *w, int64_t outer, int64_t C, int64_t inner, int64_t c0, int64_t c1, float s, int8_t *q) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = c0; c < c1; c++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t at = (o * C + c) * inner + i;
                double v = (double)w[at] / s, r = nearbyint(v);
                if (fabs(v - r) > LEVEL_EPS || r < -127 || r > 127) return false;
                if (q) q[at] = (int8_t)r;
            }
    return true;
}

static float absmax(const float *w, int64_t outer, int64_t C, int64_t inner, int64_t c0, int64_t c1) {
    float m = 0.f;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = c0; c < c1; c++)
            for (int64_t i = 0; i < inner; i++) {
                float a = fabsf(w[(o * C + c) * inner + i]);
                if (!(a <= m)) m = a; /* NaN sticks, and fails the grid */
            }
    return m;
}

/* The scale of w's channels [c0, c1): the largest magnitude is k levels for the first k from
 * 127 down that puts every weight on the grid (ORT's symmetric quantizer maps it to 127; a
 * hand-made model may use fewer levels). 0 when none does. */
static float grid_scale(const float *w, int64_t outer, int64_t C, int64_t inner, int64_t c0, int64_t c1) {
    float m = absmax(w, outer, C, inner, c0, c1);
    if (m == 0.f) return 1.f;
    if (!isfinite(m)) return 0.f;
    for (int k = 127; k >= 1; k--) {
        float s = m / (float)k;
        if (s > 0.f && on_grid(w, outer, C, inner, c0, c1, s, NULL)) return s;
    }
    return 0.f;
}

/* Channels [c0, c1) of levels q whose levels are all even: halved, their scale doubled (the
 * same products), until one is odd: the fewest levels (7-bit weights stay 7-bit, see
 * dnnl_op_quant.c's int8_exact_for). */
static void fewest_levels(int8_t *q, int64_t outer, int64_t C, int64_t inner, int64_t c0, int64_t c1, float *scale) {
    for (int pass = 0; pass < 7; pass++) {
        bool even = true, nonzero = false;
        for (int64_t o = 0; o < outer && even; o++)
            for (int64_t i = (o * C + c0) * inner; i < (o * C + c1) * inner && even; i++) {
                even = !(q[i] & 1);
                nonzero |= q[i] != 0;
            }
        if (!even || !nonzero) return;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = (o * C + c0) * inner; i < (o * C + c1) * inner; i++) q[i] = (int8_t)(q[i] / 2);
        for (int64_t c = c0; c < c1; c++) scale[c] *= 2.f;
    }
}

bool dnnl_q_weights(const float *w, int64_t outer, int64_t C, int64_t inner, int8_t *q, float *scale, bool *per_tensor) {
    float s = grid_scale(w, outer, C, inner, 0, C);
    *per_tensor = s > 0.f;
    for (int64_t c = 0; c < C; c++) {
        float sc = s > 0.f ? s : grid_scale(w, outer, C, inner, c, c + 1);
        if (sc <= 0.f) return false;
        scale[c] = sc;
        if (q && !on_grid(w, outer, C, inner, c, c + 1, sc, q)) return false;
        if (q && !*per_tensor) fewest_levels(q, outer, C, inner, c, c + 1, scale);
    }
    if (q && *per_tensor) fewest_levels(q, outer, C, inner, 0, C, scale);
    return true;
}

/* ---- patterns ---- */

static pat_t *named(ir_ctx_t *ctx, pat_t *p, const char *name) { return pat_name(ctx, p, name); }

/* QuantizeLinear of x, its parts named "q.*". */
static pat_t *q_pat(ir_ctx_t *ctx, const pat_t *x) {
    pat_t *div = named(ctx, pat_call2(ctx, OPN(DIVIDE), x, pat_const(ctx)), "q.div");
    pat_t *rnd = named(ctx, pat_call1(ctx, OPN(ROUND), div), "q.round");
    pat_t *zp = pat_optional(ctx, rnd, named(ctx, pat_call2(ctx, OPN(ADD), rnd, pat_const(ctx)), "q.zp"));
    const pat_t *ca[3] = {zp, pat_wildcard(ctx), pat_wildcard(ctx)};
    pat_t *clip = named(ctx, pat_call_op(ctx, OPN(CLIP), 3, ca), "q.clip");
    return named(ctx, pat_call1(ctx, OPN(ASTYPE), clip), "q.cast");
}

/* DequantizeLinear of x, its parts named "dq.*". */
static pat_t *dq_pat(ir_ctx_t *ctx, const pat_t *x) {
    pat_t *dc = named(ctx, pat_call1(ctx, OPN(ASTYPE), x), "dq.cast");
    pat_t *dz = pat_optional(ctx, dc, named(ctx, pat_call2(ctx, OPN(SUBTRACT), dc, pat_const(ctx)), "dq.zp"));
    return named(ctx, pat_call2(ctx, OPN(MULTIPLY), dz, pat_const(ctx)), "dq.mul");
}

/* Any uint8 / int8 tensor (levels). */
static pat_t *levels_pat(ir_ctx_t *ctx) {
    pat_t *w = pat_wildcard(ctx);
    return pat_or(ctx, pat_has_dtype(ctx, w, IR_DTYPE_U8), pat_has_dtype(ctx, w, IR_DTYPE_I8));
}

static const pat_t *spec_pat(ir_ctx_t *ctx, const q_spec *sp) {
    switch (sp->kind) {
    case DNNL_Q_QUANT: return q_pat(ctx, pat_wildcard(ctx));
    case DNNL_Q_DEQUANT: return dq_pat(ctx, levels_pat(ctx));
    case DNNL_Q_CAST: return named(ctx, pat_call1(ctx, OPN(ASTYPE), levels_pat(ctx)), "dq.cast");
    case DNNL_Q_MAXPOOL: return named(ctx, pat_call1(ctx, OPN(MAX_POOL2D), levels_pat(ctx)), "anchor");
    case DNNL_Q_RESHAPE: return named(ctx, pat_call2(ctx, OPN(RESHAPE), levels_pat(ctx), pat_wildcard(ctx)), "anchor");
    default: break;
    }
    pat_t *p = dq_pat(ctx, q_pat(ctx, pat_wildcard(ctx)));
    if (sp->kind == DNNL_Q_QDQ) return p;
    ir_op_id a = sp->kind == DNNL_Q_CONV2D ? IR_OP_CONV2D : IR_OP_MATMUL;
    /* the weights: a float32 constant, or the dequantize of constant levels the import keeps
     * (ir/transform FoldConstant: large 8-bit constants stay levels) */
    pat_t *wc = named(ctx, pat_call1(ctx, OPN(ASTYPE), pat_const(ctx)), "w.cast");
    pat_t *wz = pat_optional(ctx, wc, named(ctx, pat_call2(ctx, OPN(SUBTRACT), wc, pat_const(ctx)), "w.zp"));
    pat_t *wm = named(ctx, pat_call2(ctx, OPN(MULTIPLY), wz, pat_const(ctx)), "w.mul");
    /* a Gemm's transposed B: permute_dims of the dequantized (N, K) weight */
    if (sp->kind == DNNL_Q_MATMUL) wm = pat_optional(ctx, wm, named(ctx, pat_call1(ctx, OPN(PERMUTE_DIMS), wm), "w.t"));
    pat_t *w = pat_or(ctx, pat_const(ctx), wm);
    p = named(ctx, pat_call2(ctx, ir_op_def_at((uint32_t)a)->name, p, w), "anchor");
    if (sp->bias) p = named(ctx, pat_call2(ctx, OPN(ADD), p, pat_const(ctx)), "bias");
    if (sp->act == IR_OP_RELU) p = named(ctx, pat_call1(ctx, OPN(RELU), p), "act");
    if (sp->act == IR_OP_CLIP) {
        const pat_t *ca[3] = {p, pat_wildcard(ctx), pat_wildcard(ctx)};
        p = named(ctx, pat_call_op(ctx, OPN(CLIP), 3, ca), "act");
    }
    return p;
}

/* ---- checks ---- */

static const ir_call *part(const pat_match_result *m, const char *name) {
    const ir_expr *e = pat_match_named(m, name);
    return e && e->kind == IR_CALL ? IR_AS(e, ir_call) : NULL;
}

static bool f32_tensor(const ir_sinfo *s) {
    return s && s->kind == IR_SINFO_TENSOR && ir_dtype_eq(s->dtype, IR_DTYPE_F32) && s->ndim >= 0;
}

/* A float32 constant of one element. */
static bool scalar_of(const ir_expr *e, double *v) {
    if (!e || e->kind != IR_CONST || !f32_tensor(e->sinfo)) return false;
    const rt_tensor *t = IR_AS(e, ir_const)->data;
    if (!t || rt_tensor_numel(t) != 1) return false;
    *v = rt_tensor_get_f64(t, 0);
    return true;
}

/* The scalar constant operand of binary call c (any side when `either`, else the second). */
static bool const_operand(const ir_call *c, bool either, double *v) {
    if (!c || c->nargs != 2) return false;
    return scalar_of(c->args[1], v) || (either && scalar_of(c->args[0], v));
}

static bool prim_num(const ir_expr *a, double *v) {
    if (!a || a->kind != IR_PRIMVAL) return false;
    const ir_primval *p = IR_AS(a, ir_primval);
    int64_t iv;
    if (p->value) {
        if (!ir_prim_is_int(p->value, &iv)) return false;
        *v = (double)iv;
    } else {
        *v = p->fvalue;
    }
    return true;
}

static bool whole(double v) { return isfinite(v) && v == nearbyint(v); }

typedef struct q_params {
    double s, zp, lo, hi, dq_s, dq_zp;
} q_params;

/* lo, hi of u8 / s8 sinfo s; false for other types */
static bool q_type(const ir_sinfo *s, double *lo, double *hi) {
    bool u8 = s && s->kind == IR_SINFO_TENSOR && ir_dtype_eq(s->dtype, IR_DTYPE_U8);
    bool s8 = s && s->kind == IR_SINFO_TENSOR && ir_dtype_eq(s->dtype, IR_DTYPE_I8);
    *lo = u8 ? 0 : -128;
    *hi = u8 ? 255 : 127;
    return u8 || s8;
}

/* The quantize's scale, zero point and range (s, zp, lo, hi). */
static const char *q_read(const pat_match_result *m, q_params *p) {
    const ir_call *div = part(m, "q.div"), *zp = part(m, "q.zp"), *clip = part(m, "q.clip"), *qc = part(m, "q.cast");
    if (!div || !clip || !qc) return "not a quantize";
    if (!f32_tensor(div->args[0]->sinfo)) return "quantized input is not float32";
    if (!const_operand(div, false, &p->s) || !(p->s > 0) || !isfinite(p->s))
        return "quantization scales are not positive scalar constants (per-axis activation scales)";
    if ((zp && !const_operand(zp, true, &p->zp)) || !whole(p->zp)) return "zero points are not whole scalar constants";
    double lo, hi;
    if (!q_type(qc->base.sinfo, &lo, &hi)) return "quantized type other than uint8 / int8";
    if (clip->nargs != 3 || !prim_num(clip->args[1], &p->lo) || !prim_num(clip->args[2], &p->hi) || p->lo != lo || p->hi != hi)
        return "quantize saturates to a range other than its type's";
    if (p->zp < p->lo || p->zp > p->hi) return "zero point out of the type's range";
    return NULL;
}

/* The dequantize's scale and zero point (dq_s, dq_zp) of a u8 / s8 source. */
static const char *dq_read(const pat_match_result *m, q_params *p) {
    const ir_call *dc = part(m, "dq.cast"), *dz = part(m, "dq.zp"), *mul = part(m, "dq.mul");
    double lo, hi;
    if (!dc || !mul) return "not a dequantize";
    if (!q_type(dc->args[0]->sinfo, &lo, &hi)) return "dequantized type other than uint8 / int8";
    if (!f32_tensor(dc->base.sinfo)) return "dequantized to a type other than float32";
    if (!const_operand(mul, true, &p->dq_s) || !(p->dq_s > 0) || !isfinite(p->dq_s))
        return "quantization scales are not positive scalar constants (per-axis activation scales)";
    if ((dz && !const_operand(dz, false, &p->dq_zp)) || !whole(p->dq_zp)) return "zero points are not whole scalar constants";
    if (p->dq_zp < lo || p->dq_zp > hi) return "zero point out of the type's range";
    return NULL;
}

static const char *qdq_read(const pat_match_result *m, q_params *p) {
    *p = (q_params){0};
    const char *r = q_read(m, p);
    return r ? r : dq_read(m, p);
}

static const char *layout_is(const ir_call *c, const char *key, const char *want);

/* max_pool2d / reshape of u8 / s8 levels into levels of the same type: exact, the scale and
 * zero point pass through. */
static const char *levels_op_ok(const q_spec *sp, const pat_match_result *m) {
    const ir_call *a = part(m, "anchor");
    double lo, hi;
    if (!a || !q_type(a->args[0]->sinfo, &lo, &hi) || !a->base.sinfo || !ir_dtype_eq(a->base.sinfo->dtype, a->args[0]->sinfo->dtype))
        return "not uint8 / int8 levels in and out";
    const ir_sinfo *x = a->args[0]->sinfo, *y = a->base.sinfo;
    for (int32_t i = 0; i < x->ndim && x->dims; i++)
        if (!ir_prim_is_int(x->dims[i], &(int64_t){0})) return "levels of symbolic shape";
    for (int32_t i = 0; i < y->ndim && y->dims; i++)
        if (!ir_prim_is_int(y->dims[i], &(int64_t){0})) return "levels of symbolic shape";
    if (x->ndim < 0 || y->ndim < 0 || !x->dims || !y->dims) return "levels of unknown rank";
    if (sp->kind == DNNL_Q_MAXPOOL) {
        if (x->ndim != 4) return "max pooling of other than 4-D levels";
        const char *r = layout_is(a, "layout", "NCHW");
        return r ? r : layout_is(a, "out_layout", "NCHW");
    }
    return NULL;
}

/* A float32 constant of one value, or of one along axis `axis` of a tensor of nd dims (n of
 * them), all of them zero when `zero`, else positive and finite. */
static bool axis_values(const ir_expr *e, int axis, int nd, int64_t n, bool zero) {
    const rt_tensor *t = e && e->kind == IR_CONST ? IR_AS(e, ir_const)->data : NULL;
    if (!t || !f32_tensor(e->sinfo) || t->dl.ndim > nd) return false;
    for (int i = 0; i < t->dl.ndim; i++)
        if (t->dl.shape[i] != 1 && (nd - t->dl.ndim + i != axis || t->dl.shape[i] != n)) return false;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
        double v = rt_tensor_get_f64(t, i);
        if (zero ? v != 0 : !(v > 0) || !isfinite(v)) return false;
    }
    return true;
}

/* Weights the import kept as the dequantize of constant levels: int8 levels, no zero point,
 * one scale or one per channel C along axis `axis`; NULL when they are, else why not (or
 * "" when the weights are no such dequantize). */
static const char *levels_weights_ok(const pat_match_result *m, int axis, int nd, int64_t C) {
    const ir_call *wc = part(m, "w.cast"), *wz = part(m, "w.zp"), *wm = part(m, "w.mul");
    if (!wc || !wm) return "";
    if (!wc->args[0]->sinfo || !ir_dtype_eq(wc->args[0]->sinfo->dtype, IR_DTYPE_I8) || !f32_tensor(wc->base.sinfo))
        return "weights are not int8 levels dequantized to float32";
    if (wz && !axis_values(wz->args[1], axis, nd, C, true)) return "weights with a zero point other than 0";
    if (!axis_values(wm->args[1], axis, nd, C, false))
        return "weight scales are not positive constants per tensor or per output channel";
    return NULL;
}

/* O, I, kh, kw of a constant OIHW float32 weight; weights on an int8 grid */
static const char *weights_ok(const ir_expr *w, int64_t outer, int64_t C, int64_t inner) {
    const rt_tensor *t = w && w->kind == IR_CONST ? IR_AS(w, ir_const)->data : NULL;
    if (!t || !f32_tensor(w->sinfo) || rt_tensor_numel(t) != outer * C * inner) return "weights are not a float32 constant";
    float *sc = malloc(sizeof(float) * (size_t)(C + 1));
    bool pt;
    bool ok = sc && dnnl_q_weights(rt_tensor_data(t), outer, C, inner, NULL, sc, &pt);
    free(sc);
    return ok ? NULL
              : "weights are not symmetric int8 levels times a per-tensor or per-channel scale (a weight zero point, "
                "or more than 8 bits)";
}

static bool static_dims(const ir_sinfo *s, int32_t nd, int64_t *d) {
    if (!f32_tensor(s) || s->ndim != nd || !s->dims) return false;
    for (int32_t i = 0; i < nd; i++)
        if (!ir_prim_is_int(s->dims[i], &d[i])) return false;
    return true;
}

/* bias: a float32 constant of C values along the result's channel axis (axis of nd dims) */
static bool bias_ok(const ir_call *b, int axis, int nd, int64_t C) {
    /* the pattern's other operand of the add is the constant */
    const ir_expr *k = b->nargs != 2 ? NULL : b->args[1]->kind == IR_CONST ? b->args[1] : b->args[0];
    int64_t d[RT_MAX_NDIM];
    if (!k || k->kind != IR_CONST || !f32_tensor(k->sinfo) || k->sinfo->ndim > nd || !k->sinfo->dims) return false;
    int32_t r = k->sinfo->ndim;
    if (!static_dims(k->sinfo, r, d) || r < nd - axis) return false;
    for (int32_t i = 0; i < r; i++)
        if (d[i] != (nd - r + i == axis ? C : 1)) return false;
    return true;
}

static const char *layout_is(const ir_call *c, const char *key, const char *want) {
    const char *v = ir_attrs_get_str(c->attrs, key);
    return !v || !strcmp(v, want) ? NULL : "layouts other than NCHW / OIHW";
}

static const char *anchor_ok(const q_spec *sp, const pat_match_result *m, const q_params *p) {
    if (p->s != p->dq_s || p->zp != p->dq_zp) return "the dequantize's scale / zero point differ from the quantize's";
    const ir_call *a = part(m, "anchor"), *b = part(m, "bias"), *act = part(m, "act");
    if (!a || !f32_tensor(a->base.sinfo)) return "result is not float32";
    int64_t xd[4], wd[4], od[4];
    const char *r = NULL;
    int64_t C;
    if (sp->kind == DNNL_Q_CONV2D) {
        r = layout_is(a, "data_layout", "NCHW");
        if (!r) r = layout_is(a, "kernel_layout", "OIHW");
        if (!r) r = layout_is(a, "out_layout", "NCHW");
        if (r) return r;
        if (!static_dims(a->args[0]->sinfo, 4, xd) || !static_dims(a->args[1]->sinfo, 4, wd) || !static_dims(a->base.sinfo, 4, od))
            return "convolution of other than 4-D tensors of static shape";
        C = wd[0];
        r = levels_weights_ok(m, 0, 4, C);
        if (r && (*r || (r = weights_ok(a->args[1], 1, C, wd[1] * wd[2] * wd[3])))) return r;
        if (b && !bias_ok(b, 1, 4, C)) return "bias is not per output channel";
    } else {
        if (!static_dims(a->args[0]->sinfo, 2, xd) || !static_dims(a->args[1]->sinfo, 2, wd) || !static_dims(a->base.sinfo, 2, od))
            return "matmul of other than 2-D operands of static shape";
        C = wd[1];
        /* transposed: the scales are along the (N, K) weight's axis 0 */
        const ir_call *wt = part(m, "w.t");
        int64_t ax[2];
        int na = wt && wt->attrs ? ir_attrs_get_ints(wt->attrs, "axes", ax, 2) : 0; /* none: reversed */
        if (wt && na > 0 && (na != 2 || ax[0] != 1 || ax[1] != 0))
            return "weights permuted other than transposed";
        r = levels_weights_ok(m, wt ? 0 : 1, 2, C);
        if (r && (*r || (r = weights_ok(a->args[1], wd[0], C, 1)))) return r;
        if (b && !bias_ok(b, 1, 2, C)) return "bias is not per output column";
    }
    double lo, hi;
    if (act && ir_op_id_of(&act->base) == IR_OP_CLIP &&
        (act->nargs != 3 || !prim_num(act->args[1], &lo) || !prim_num(act->args[2], &hi) || !(lo <= hi)))
        return "clip bounds are not constants (or min > max)";
    return NULL;
}

static bool q_check(const pat_check_ctx *pc, const char **reason, void *user) {
    const q_spec *sp = user;
    if (!pat_check_no_leaking_intermediates(pc, reason, NULL)) return false;
    q_params p = {0};
    const char *r;
    switch (sp->kind) {
    case DNNL_Q_QUANT: r = q_read(pc->match, &p); break;
    case DNNL_Q_DEQUANT: r = dq_read(pc->match, &p); break;
    case DNNL_Q_CAST: {
        const ir_call *dc = part(pc->match, "dq.cast");
        r = dc && f32_tensor(dc->base.sinfo) ? NULL : "cast to a type other than float32";
        break;
    }
    case DNNL_Q_MAXPOOL:
    case DNNL_Q_RESHAPE: r = levels_op_ok(sp, pc->match); break;
    default:
        r = qdq_read(pc->match, &p);
        if (!r && sp->kind != DNNL_Q_QDQ) r = anchor_ok(sp, pc->match, &p);
    }
    if (r) *reason = r;
    return r == NULL;
}

uint32_t dnnl_q_patterns(ir_ctx_t *ctx, byoc_pattern *out) {
    uint32_t k = 0;
    for (size_t i = 0; i < NSPECS; i++) {
        const pat_t *p = spec_pat(ctx, &SPECS[i]);
        if (p) out[k++] = (byoc_pattern){SPECS[i].name, p, q_check, (void *)&SPECS[i]};
    }
    return k;
}

uint32_t dnnl_q_npatterns(void) { return (uint32_t)NSPECS; }
