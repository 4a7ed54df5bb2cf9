/* The oneDNN engine's table for element-wise float32 ops between one tensor's levels and a
 * quantize (dn_q_lut_levels, backends/dnnl/dnnl_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* A quantize whose input is computed element by element from one dequantized tensor (float
 * ops with scalar constants, quantize -> dequantize pairs among them: MobileNetV3's
 * hard-swish, DQ(a) * DQ(Q(hardsigmoid(DQ(a))))) maps each of the 256 levels of that tensor to
 * one level: a table of the float32 ops as the host computes them, one lookup per element
 * instead of the float primitives (pruned once nothing reads them). */

#define LUT_MAX_NODES 48

typedef struct lut_walk {
    dn_state *S;
    int leaf_levels;              /* the levels value the leaf entries dequantize */
    int visits;
} lut_walk;

/* The float32 value of entry e for leaf level l (as a float32 level), as the host's kernels
 * compute it; false when e is not such a function of the leaf. */
static bool lut_eval(lut_walk *w, int e, float l, float *out) {
    dn_state *S = w->S;
    dn_qlevels lv;
    if (e < 0 || ++w->visits > LUT_MAX_NODES * 256) return false;
    if (dn_q_levels_of(S, e, &lv) && lv.levels == w->leaf_levels) {
        *out = (l - (float)lv.zp) * lv.s;
        return true;
    }
    if (dn_scalar_const(S, e, out)) return true;
    const rt_json_node *n = S->ent_node[e].node;
    if (!n || n->kind != RT_JSON_KERNEL || n->noutputs != 1 || S->is_head[e]) return false;
    float a = 0, b = 0;
    uint32_t na = dn_nargs(n);
    bool clip = n->op == IR_OP_CLIP;
    if (na < 1 || !lut_eval(w, dn_arg_entry(S, n, 0), l, &a)) return false;
    if (na >= 2 && !clip && !lut_eval(w, dn_arg_entry(S, n, 1), l, &b)) return false;
    double lo, hi;
    switch (n->op) {
    case IR_OP_ADD: *out = a + b; return na == 2;
    case IR_OP_SUBTRACT: *out = a - b; return na == 2;
    case IR_OP_MULTIPLY: *out = a * b; return na == 2;
    case IR_OP_DIVIDE: *out = a / b; return na == 2;
    case IR_OP_MAXIMUM: *out = fmaxf(a, b); return na == 2;
    case IR_OP_MINIMUM: *out = fminf(a, b); return na == 2;
    case IR_OP_ROUND: *out = nearbyintf(a); return na == 1;
    case IR_OP_RELU: *out = a > 0.f ? a : 0.f; return na == 1;
    case IR_OP_CLIP:
        if (!dn_arg_num(n, 1, &lo) || !dn_arg_num(n, 2, &hi)) return false;
        *out = fminf(fmaxf(a, (float)lo), (float)hi);
        return true;
    case IR_OP_ASTYPE: {
        /* float32, or uint8 / int8 of a whole value in the type's range (a quantize's cast) */
        dnnl_data_type_t t = dn_q_dt(n->dtypes[0]);
        bool f32 = n->dtypes[0].code == kDLFloat && n->dtypes[0].bits == 32;
        double tlo = t == dnnl_u8 ? 0 : -128, thi = t == dnnl_u8 ? 255 : 127;
        *out = a;
        return f32 || (t != dnnl_data_type_undef && a == nearbyintf(a) && a >= tlo && a <= thi);
    }
    default: return false;
    }
}

/* Entries below e (depth first, operands in order) that dequantize levels, up to max into
 * out, visiting at most *budget nodes. */
static void find_leaves(dn_state *S, int e, int *out, int *n, int max, int *budget) {
    dn_qlevels lv;
    if (e < 0 || *n >= max || --*budget < 0) return;
    if (dn_q_levels_of(S, e, &lv)) {
        for (int i = 0; i < *n; i++)
            if (out[i] == e) return;
        out[(*n)++] = e;
    }
    const rt_json_node *nd = S->ent_node[e].node;
    if (!nd || nd->kind != RT_JSON_KERNEL) return;
    for (uint32_t k = 0; k < dn_nargs(nd); k++) find_leaves(S, dn_arg_entry(S, nd, k), out, n, max, budget);
}

typedef struct lut_ctx {
    float f[256];                 /* the quantize's input per level (while building) */
    uint8_t table[256];
    size_t n;
    const uint8_t *src;
    uint8_t *dst;
} lut_ctx;

static void lut_part(void *ctx, int ithr, int nthr) {
    lut_ctx *c = ctx;
    size_t per = (c->n + (size_t)nthr - 1) / (size_t)nthr, b = per * (size_t)ithr, e = b + per < c->n ? b + per : c->n;
    for (size_t i = b; i < e; i++) c->dst[i] = c->table[c->src[i]];
}

static dnnl_status_t lut_run(void *ctx, void *const *ptrs) {
    lut_ctx *c = ctx;
    c->src = ptrs[0];
    c->dst = ptrs[1];
    rt_dnnl_parallel(lut_part, c);
    return dnnl_success;
}

const dn_qlevels *dn_q_lut_levels(dn_state *S, const rt_json_node *qn, float qs, float qzp, dnnl_data_type_t qt, int xe) {
    const rt_json_node *top = xe >= 0 && dn_entry_f32(S, xe) ? S->ent_node[xe].node : NULL;
    if (!top || top->kind != RT_JSON_KERNEL || dn_q_levels_of(S, xe, &(dn_qlevels){0})) return NULL;
    lut_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    /* the leaf: the levels of a dequantized tensor among the first found depth first from
     * top's operands (a pair's dequantize inside is a leaf candidate, not the only one) */
    dn_qlevels lv;
    bool ok = false;
    int leaves[4], nleaves = 0, budget = LUT_MAX_NODES;
    find_leaves(S, xe, leaves, &nleaves, 4, &budget);
    for (int k = 0; k < nleaves && !ok; k++) {
        int e = leaves[k];
        dn_q_levels_of(S, e, &lv);
        int nd = dn_entry_ndim(S, e);
        if (nd != dn_entry_ndim(S, xe) || memcmp(dn_entry_shape(S, e), dn_entry_shape(S, xe), sizeof(int64_t) * (size_t)nd))
            continue;
        lut_walk w = {S, lv.levels, 0};
        int base = lv.qt == dnnl_u8 ? 0 : -128;
        ok = true;
        for (int i = 0; i < 256 && ok; i++) ok = lut_eval(&w, xe, (float)(base + i), &c->f[i]);
    }
    if (!ok) {
        free(c);
        return NULL;
    }
    double lo = qt == dnnl_u8 ? 0 : -128, hi = qt == dnnl_u8 ? 255 : 127;
    for (int i = 0; i < 256; i++) {
        float x = c->f[i];
        /* the quantize, as the host computes it */
        float r = nearbyintf(x / qs) + qzp;
        r = r < lo ? (float)lo : r > hi ? (float)hi : r; /* NaN: the clip's fmin / fmax give lo */
        if (r != r) r = (float)lo;
        int8_t s8 = (int8_t)r;
        c->table[i] = qt == dnnl_u8 ? (uint8_t)r : (uint8_t)s8;
    }
    const dnnl_memory_desc_t *smd = &S->vals.data[lv.levels].md;
    dnnl_memory_desc_t dmd;
    dn_q_dense_like(smd, qt, &dmd);
    c->n = dnnl_memory_desc_get_size(smd);
    if (dnnl_memory_desc_get_size(&dmd) != c->n || smd->offset0) {
        free(c);
        return NULL;
    }
    int ov = dn_val_new(S, V_TMP, &dmd);
    dn_arg args[2] = {{DNNL_ARG_SRC, lv.levels, *smd, NULL, 0}, {DNNL_ARG_DST, ov, dmd, NULL, 0}};
    if (dn_emit_fn(S, qn, lut_run, c, free, "eltwise", "lut:c", args, 2)) {
        gr_diag_clear(S->diag);
        return NULL;
    }
    gr_vec_push(&S->qents, ((dn_qlevels){xe, ov, qs, (int32_t)qzp, qt}));
    return &S->qents.data[S->qents.len - 1];
}
