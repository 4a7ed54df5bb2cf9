/* The oneDNN engine's int8 ops on the levels a quantize -> dequantize pair wrote, between
 * quantized composites (dn_q_levels_op, backends/dnnl/dnnl_impl.h): convolutions, adds, pools
 * and matmuls whose float32 source is such a pair's result run on its levels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_q_build_impl.h"

/* The levels float32 entry e is a dequantize of (*out, val unused): a value a quantize ->
 * dequantize pair, a dequantize or a cast of levels wrote (qlevels), or the float ops after a
 * cast that dequantize it (qdeq, see note_float_dequant). */
bool dn_q_levels_of(dn_state *S, int e, dn_qlevels *out) {
    for (uint32_t i = 0; e >= 0 && i < S->qlevels.len; i++)
        if (S->qlevels.data[i].val == S->ent_val[e]) {
            *out = S->qlevels.data[i];
            return true;
        }
    for (uint32_t i = 0; e >= 0 && i < S->qdeq.len; i++)
        if (S->qdeq.data[i].val == e) {
            *out = S->qdeq.data[i];
            return true;
        }
    return false;
}

/* Job j of a fused float32 composite whose first u steps it took (a bias): the relu / clip
 * steps after them as its post-ops, then built on int8 (nothing when split_ok says no); the
 * steps taken are consumed (*used, *done). */
static gr_status levels_job(dn_state *S, q_job *j, const dn_step *steps, int k, int u, int *used, bool *done) {
    for (; u < k && steps[u].kind == STEP_ELTWISE && j->npost < DN_MAX_STEPS; u++) {
        if (steps[u].alg != dnnl_eltwise_relu && steps[u].alg != dnnl_eltwise_clip_v2) break;
        j->alg[j->npost] = steps[u].alg;
        j->alpha[j->npost] = steps[u].alpha;
        j->beta[j->npost++] = steps[u].beta;
    }
    j->out = u ? steps[u - 1].out : dn_out_entry(S, j->n);
    if (j->split && !dn_q_split_ok(S, j)) return GR_OK;
    dn_consume(S, steps, u);
    gr_status st = dn_q_build_int8(S, j);
    *used = u;
    *done = st == GR_OK;
    return st;
}

/* A fused float32 convolution composite whose source is the result of a quantize ->
 * dequantize pair (dnnl.qdq) that others read too (a residual block's input, so no qconv2d
 * composite could hold the pair): where int8 sums exactly (int8_exact_for), int8 on the
 * pair's levels, taking a leading
 * per-channel bias and the relu / clip posts after it; the caller runs the posts left. */
static gr_status levels_conv(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int *used, bool *done) {
    int xe = dn_arg_entry(S, n, 0), we = dn_arg_entry(S, n, 1);
    if (n->op != IR_OP_CONV2D || xe < 0 || we < 0 || S->ent_val[xe] < 0 || n->ndims[0] != 4 ||
        strcmp(dn_attr_str(n, "data_layout", "NCHW"), "NCHW") || strcmp(dn_attr_str(n, "kernel_layout", "OIHW"), "OIHW") ||
        strcmp(dn_attr_str(n, "out_layout", "NCHW"), "NCHW") || dn_entry_ndim(S, we) != 4)
        return GR_OK;
    dn_qlevels lvs;
    bool exact = dn_q_levels_of(S, xe, &lvs) && dn_q_int8_exact_for(S, n, lvs.qt);
    const dn_qlevels *lv = exact || (dn_q_levels_of(S, xe, &lvs) && dn_q_split_for(S, n, lvs.qt)) ? &lvs : NULL;
    const int64_t *ws = dn_entry_shape(S, we);
    int64_t C = ws[0], per = ws[1] * ws[2] * ws[3];
    bool pt, grid = lv && dn_q_weight_int8(S, we, 0, C, NULL, &pt) >= 0;
    const float *w = lv && !grid ? dn_q_const_f32(S, we, C * per) : NULL;
    float *sc = w ? malloc(sizeof(float) * (size_t)C) : NULL;
    grid = grid || (sc && dnnl_q_weights(w, 1, C, per, NULL, sc, &pt));
    free(sc);
    if (!grid) return GR_OK;
    q_job j = {.n = n, .kind = DNNL_Q_CONV2D, .xv = lv->levels, .levels = true, .s = lv->s, .zp = lv->zp, .qt = lv->qt, .split = !exact};
    int u = 0;
    if (u < k && steps[u].kind == STEP_BINARY && steps[u].alg == dnnl_binary_add && steps[u].src1 >= 0) {
        const int64_t *bs = dn_entry_shape(S, steps[u].src1);
        int bn = dn_entry_ndim(S, steps[u].src1);
        /* (C, 1, 1) or (1, C, 1, 1): one value per output channel */
        if (bn >= 3 && bn <= 4 && bs[bn - 1] == 1 && bs[bn - 2] == 1 && (j.bias = dn_q_const_f32(S, steps[u].src1, C))) u++;
    }
    return levels_job(S, &j, steps, k, u, used, done);
}

/* A residual add of two dequantized levels (quantize -> dequantize pairs, or int8 results),
 * with relu / clip after it, whose result a quantize alone reads: one int8 binary primitive
 * writing that quantize's levels, as QLinearAdd. With the sources' scales sa, sb as oneDNN's
 * input scales sa / s, sb / s and their zero points za, zb as one shift c:
 *     q = round(sa / s * a + sb / s * b - c + z),  c = (sa za + sb zb) / s
 * and the activation a clip in those units (oneDNN 2.6 miscomputes three eltwise post-ops,
 * dnnl_postops.c: a linear and a clip here). Exact up to float32 rounding, as ORT's float
 * requantization (a tie may land on the other neighbour). */
static gr_status levels_add(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int *used, bool *done) {
    int ae = dn_arg_entry(S, n, 0), be = dn_arg_entry(S, n, 1), nd = n->ndims[0];
    dn_qlevels la, lb;
    if (dn_nargs(n) != 2 || !dn_q_levels_of(S, ae, &la) || !dn_q_levels_of(S, be, &lb) || dn_entry_ndim(S, ae) != nd ||
        dn_entry_ndim(S, be) != nd || memcmp(dn_entry_shape(S, ae), n->shapes[0], sizeof(int64_t) * (size_t)nd) ||
        memcmp(dn_entry_shape(S, be), n->shapes[0], sizeof(int64_t) * (size_t)nd))
        return GR_OK;
    int u = 0;
    double lo = -INFINITY, hi = INFINITY;
    if (k && steps[0].kind == STEP_ELTWISE && (steps[0].alg == dnnl_eltwise_relu || steps[0].alg == dnnl_eltwise_clip_v2)) {
        bool relu = steps[0].alg == dnnl_eltwise_relu;
        if (relu && steps[0].alpha != 0.f) return GR_OK; /* leaky */
        lo = relu ? 0 : steps[0].alpha;
        hi = relu ? INFINITY : steps[0].beta;
        u = 1;
    }
    q_nodes rq;
    if (!dn_q_requant_of(S, u ? steps[u - 1].out : dn_out_entry(S, n), &rq)) return GR_OK;
    double qlo = rq.qt == dnnl_u8 ? 0 : -128, qhi = rq.qt == dnnl_u8 ? 255 : 127, s = rq.s;
    float sa = (float)(la.s / s), sb = (float)(lb.s / s);
    float shift = (float)(rq.zpv - ((double)la.s * la.zp + (double)lb.s * lb.zp) / s);
    dnnl_memory_desc_t amd = S->vals.data[la.levels].md, bmd, dmd;
    dn_q_dense_like(&amd, lb.qt, &bmd);
    dn_q_dense_like(&amd, rq.qt, &dmd);
    dnnl_binary_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_binary_desc_init(&desc, dnnl_binary_add, &amd, &bmd, &dmd);
    if (ds == dnnl_success) ds = dn_q_make_attr(&attr, 0, 0, NULL, 0, 0);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_scales(attr, DNNL_ARG_SRC_0, 1, 0, &sa);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_scales(attr, DNNL_ARG_SRC_1, 1, 0, &sb);
    if (ds == dnnl_success) ds = dnnl_post_ops_create(&po);
    if (ds == dnnl_success && shift != 0.f) ds = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_linear, 1.f, shift);
    /* the clip in the levels' units, within the type's range (the saturation clips there too) */
    if (ds == dnnl_success && u)
        ds = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_clip_v2, (float)fmax(lo / s + rq.zpv, qlo),
                                          (float)fmin(hi / s + rq.zpv, qhi));
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_post_ops(attr, po);
    if (ds == dnnl_success) ds = dnnl_primitive_desc_create(&pd, &desc, attr, S->eng, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success || dn_pd_is_ref(pd)) {
        /* the float32 path (its reorders, add and quantize) instead */
        if (ds == dnnl_success) dnnl_primitive_desc_destroy(pd);
        return GR_OK;
    }
    int bv = lb.levels;
    gr_status st = dnnl_memory_desc_equal(&S->vals.data[bv].md, &bmd) ? GR_OK : dn_as(S, n, bv, &bmd, &bv);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    dn_consume(S, steps, u);
    int ov = dn_val_new(S, V_TMP, &dmd);
    dn_arg args[3] = {{DNNL_ARG_SRC_0, la.levels, amd, NULL}, {DNNL_ARG_SRC_1, bv, bmd, NULL}, {DNNL_ARG_DST, ov, dmd, NULL}};
    int oe = u ? steps[u - 1].out : dn_out_entry(S, n);
    if ((st = dn_emit(S, n, pd, args, 3, false))) return st;
    gr_vec_push(&S->qents, ((dn_qlevels){oe, ov, rq.s, (int32_t)rq.zpv, rq.qt}));
    *used = u;
    *done = true;
    return GR_OK;
}

/* Max pooling (NCHW) of dequantized levels whose result a quantize with the same scale and
 * zero point alone reads: pooling of the levels, which are that quantize's (max commutes with
 * the increasing dequantize; the quantize gives back each level). */
static gr_status levels_pool(dn_state *S, const rt_json_node *n, int k, bool *done) {
    int xe = dn_arg_entry(S, n, 0), ov;
    dn_qlevels lv;
    q_nodes rq;
    if (k || !dn_q_levels_of(S, xe, &lv) || !dn_q_requant_of(S, dn_out_entry(S, n), &rq) || rq.s != lv.s || (int32_t)rq.zpv != lv.zp ||
        rq.qt != lv.qt || dn_entry_ndim(S, xe) != 4 || strcmp(dn_attr_str(n, "layout", "NCHW"), "NCHW") ||
        strcmp(dn_attr_str(n, "out_layout", "NCHW"), "NCHW"))
        return GR_OK;
    int oe = dn_out_entry(S, n);
    gr_status st = dn_q_pool_levels(S, n, lv.levels, lv.qt, &ov);
    if (st) return st;
    gr_vec_push(&S->qents, ((dn_qlevels){oe, ov, rq.s, (int32_t)rq.zpv, rq.qt}));
    *done = true;
    return GR_OK;
}

/* Global average pooling (NCHW, to 1 x 1) of dequantized levels whose result a quantize alone
 * reads (SE blocks): int8 average pooling of the levels with the requantization as a linear
 * post-op, q = round(si / so * mean + zo - si zi / so), writing that quantize's levels. */
static gr_status levels_avgpool(dn_state *S, const rt_json_node *n, int k, bool *done) {
    int xe = dn_arg_entry(S, n, 0);
    dn_qlevels lv;
    q_nodes rq;
    if (k || !dn_q_levels_of(S, xe, &lv) || !dn_q_requant_of(S, dn_out_entry(S, n), &rq) || dn_entry_ndim(S, xe) != 4 || n->ndims[0] != 4 ||
        n->shapes[0][2] != 1 || n->shapes[0][3] != 1 || strcmp(dn_attr_str(n, "layout", "NCHW"), "NCHW") ||
        strcmp(dn_attr_str(n, "out_layout", "NCHW"), "NCHW"))
        return GR_OK;
    const int64_t *xs = dn_entry_shape(S, xe), *os = n->shapes[0];
    dnnl_dims_t kk = {xs[2], xs[3]}, st1 = {1, 1}, zero = {0, 0}, od = {os[0], os[1], 1, 1};
    dnnl_memory_desc_t dany, src[2];
    dnnl_memory_desc_init_by_tag(&dany, 4, od, rq.qt, dnnl_format_tag_any);
    /* the levels' own layout, else channels-last (oneDNN's jit int8 pooling) */
    src[0] = S->vals.data[lv.levels].md;
    dn_channels_last(&src[1], &src[0]);
    src[1].data_type = lv.qt;
    float a = (float)((double)lv.s / rq.s), b = (float)(rq.zpv - (double)lv.s * lv.zp / rq.s);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dn_q_make_attr(&attr, 0, 0, NULL, 0, 0);
    if (ds == dnnl_success) ds = dnnl_post_ops_create(&po);
    if (ds == dnnl_success) ds = dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_linear, a, b);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_post_ops(attr, po);
    int t = 0;
    for (; t < 2 && ds == dnnl_success && !pd; t++) {
        dnnl_pooling_v2_desc_t desc;
        if (dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, dnnl_pooling_avg_exclude_padding, &src[t], &dany, st1, kk,
                                              zero, zero, zero) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &desc, attr, S->eng, NULL) != dnnl_success)
            pd = NULL;
        else if (dn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
    }
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (!pd) return GR_OK; /* the float32 path */
    int xv = lv.levels;
    gr_status st = t == 1 ? GR_OK : dn_as(S, n, xv, &src[1], &xv);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int ov = dn_val_new(S, V_TMP, &dmd);
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL, 0}, {DNNL_ARG_DST, ov, dmd, NULL, 0}};
    int oe = dn_out_entry(S, n);
    if ((st = dn_emit(S, n, pd, args, 2, false))) return st;
    gr_vec_push(&S->qents, ((dn_qlevels){oe, ov, rq.s, (int32_t)rq.zpv, rq.qt}));
    *done = true;
    return GR_OK;
}

/* A fused float32 2-D matmul composite (a QOperator model's QGemm: a dense) whose source is
 * dequantized levels and whose weights are kept as int8 levels (a Gemm's B through its
 * transpose): int8 as levels_conv, with a leading bias of one value per column. */
static gr_status levels_matmul(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int *used, bool *done) {
    int xe = dn_arg_entry(S, n, 0), we = dn_arg_entry(S, n, 1);
    dn_qlevels lvs;
    if (xe < 0 || we < 0 || S->ent_val[xe] < 0 || n->ndims[0] != 2 || dn_entry_ndim(S, xe) != 2 || dn_entry_ndim(S, we) != 2 ||
        !dn_q_levels_of(S, xe, &lvs))
        return GR_OK;
    const rt_json_node *p = S->ent_node[we].node;
    if (dn_q_weight_levels(S, we) < 0 && p->kind == RT_JSON_KERNEL && p->op == IR_OP_PERMUTE_DIMS) dn_q_weight_node(S, p);
    int64_t N = dn_entry_shape(S, we)[1];
    bool pt, exact = dn_q_int8_exact_for(S, n, lvs.qt);
    if ((!exact && !dn_q_split_for(S, n, lvs.qt)) || dn_q_weight_int8(S, we, 1, N, NULL, &pt) < 0) return GR_OK;
    q_job j = {.n = n, .kind = DNNL_Q_MATMUL, .xv = lvs.levels, .levels = true, .s = lvs.s, .zp = lvs.zp, .qt = lvs.qt, .split = !exact};
    int u = 0;
    if (u < k && steps[u].kind == STEP_BINARY && steps[u].alg == dnnl_binary_add && steps[u].src1 >= 0) {
        const int64_t *bs = dn_entry_shape(S, steps[u].src1);
        int bn = dn_entry_ndim(S, steps[u].src1);
        /* (N) or (1, N): one value per column */
        if ((bn == 1 || (bn == 2 && bs[0] == 1)) && bs[bn - 1] == N && (j.bias = dn_q_const_f32(S, steps[u].src1, N))) u++;
    }
    return levels_job(S, &j, steps, k, u, used, done);
}

gr_status dn_q_levels_op(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int *used, bool *done) {
    *done = false;
    *used = 0;
    if (n->op == IR_OP_CONV2D) return levels_conv(S, n, steps, k, used, done);
    if (n->op == IR_OP_MATMUL) return levels_matmul(S, n, steps, k, used, done);
    if (n->op == IR_OP_ADD) return levels_add(S, n, steps, k, used, done);
    if (n->op == IR_OP_MAX_POOL2D) return levels_pool(S, n, k, done);
    if (n->op == IR_OP_ADAPTIVE_AVG_POOL2D) return levels_avgpool(S, n, k, done);
    return GR_OK;
}
