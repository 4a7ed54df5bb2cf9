/* The oneDNN engine's recurrent layers: relax.nn.lstm -> LSTM (with peepholes), relax.nn.gru ->
 * LBR-GRU (linear_before_reset) or GRU, relax.nn.rnn -> vanilla RNN (tanh), one primitive per
 * node over all time steps and both directions.
 *
 * ONNX keeps each direction's weights as (gates * H, in) rows in its own gate order (LSTM i, o,
 * f, c; GRU z, r, h) with separate input and recurrent biases; oneDNN wants (layer, direction,
 * in, gate, out) in its order (LSTM i, f, c, o; GRU u, r, o) and one bias per gate (LBR-GRU: a
 * fourth, the recurrent h bias). The weights are copied once at prepare in oneDNN's ldgoi order
 * (which is ONNX's row layout), then reordered to the layout the primitive picks. The time-major
 * output (T, N, D * H) is ONNX's Y (T, D, N, H) for one direction and a strided view of it for
 * two; the final states (1, D, N, H) are Y_h / Y_c. The pattern (backends/dnnl/dnnl_rnn_patterns.c)
 * admits only what this computes; the checks are repeated here for hand-written graphs. */
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_impl.h"

enum { R_LSTM, R_GRU, R_RNN };

/* ONNX gate of oneDNN gate g */
static const int LSTM_GATE[4] = {0, 2, 3, 1}; /* i, f, c, o <- i, o, f, c */
static const int PEEP_GATE[3] = {0, 2, 1};    /* i, f, o <- i, o, f */

/* The constant tensor of entry e (graph constants are numbered in node order). */
static const rt_tensor *entry_const(dn_state *S, int e) {
    const rt_json_node *n = S->ent_node[e].node;
    if (n->kind != RT_JSON_CONST) return NULL;
    uint32_t ci = 0;
    for (const rt_json_node *m = S->node0; m < n; m++) ci += m->kind == RT_JSON_CONST;
    return rt_json_graph_const(S->g, ci);
}

static bool entry_empty(dn_state *S, int e) {
    if (e < 0) return true;
    return dn_entry_ndim(S, e) == 1 && dn_entry_shape(S, e)[0] == 0;
}

/* Entry of optional argument k, -1 when left out or empty. */
static int opt_entry(dn_state *S, const rt_json_node *n, uint32_t k) {
    if (k >= dn_nargs(n)) return -1;
    int e = dn_arg_entry(S, n, k);
    return entry_empty(S, e) ? -1 : e;
}

static const float *const_f32(dn_state *S, int e) {
    int v = e >= 0 ? S->ent_val[e] : -1;
    return v >= 0 && S->vals.data[dn_root(S, v)].kind == V_CONST ? dn_const_data(S, v) : NULL;
}

/* A new owned constant value of plain dims filled by the caller. */
static int owned_val(dn_state *S, int nd, const int64_t *dims, dnnl_format_tag_t tag, float **data) {
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_tag(&md, nd, d, dnnl_f32, tag);
    *data = dn_owned_alloc(S, dnnl_memory_desc_get_size(&md));
    if (!*data) return -1;
    int v = dn_val_new(S, V_OWNED, &md);
    S->vals.data[v].ptr = *data;
    return v;
}

/* State (D, N, H) as oneDNN's (1, D, N, H). */
static gr_status state_in(dn_state *S, const rt_json_node *n, int e, int64_t D, int64_t N, int64_t H, int *out) {
    *out = -1;
    if (e < 0) return GR_OK;
    int v = S->ent_val[e];
    if (v < 0 || dn_entry_ndim(S, e) != 3) return dn_fail(S, n, dnnl_success, "initial state is not a float32 (D, N, H) tensor");
    gr_status st = dn_plain(S, n, v, &v);
    if (st) return st;
    int64_t d4[4] = {1, D, N, H};
    dnnl_memory_desc_t md;
    dn_plain_md(&md, 4, d4);
    *out = dn_alias_new(S, v, &md);
    return GR_OK;
}

gr_status dn_rnn(dn_state *S, const rt_json_node *n) {
    int kind = n->op == IR_OP_LSTM ? R_LSTM : n->op == IR_OP_GRU ? R_GRU : R_RNN;
    bool lbr = kind == R_GRU && dn_attr_bool(n, "linear_before_reset", false);
    const char *dir = dn_attr_str(n, "direction", "forward");
    int64_t D = !strcmp(dir, "bidirectional") ? 2 : 1, H = dn_attr_int(n, "hidden_size", 0);
    dnnl_rnn_direction_t rdir = D == 2                      ? dnnl_bidirectional_concat
                                : !strcmp(dir, "reverse") ? dnnl_unidirectional_right2left
                                                          : dnnl_unidirectional_left2right;
    if (dn_attr_int(n, "layout", 0) != 0) return dn_fail(S, n, dnnl_success, "batch-major layout is not supported");
    if (dn_attr_float(n, "clip", 0) != 0) return dn_fail(S, n, dnnl_success, "clip is not supported");
    if (dn_attr_bool(n, "input_forget", false)) return dn_fail(S, n, dnnl_success, "input_forget is not supported");
    const char *acts = dn_attr_str(n, "activations", NULL);
    if (acts && *acts)
        return dn_fail(S, n, dnnl_success, "activations other than the defaults are not supported");
    int x = dn_arg_entry(S, n, 0), w = dn_arg_entry(S, n, 1), r = dn_arg_entry(S, n, 2);
    int b = opt_entry(S, n, 3), lens = opt_entry(S, n, 4), h0 = opt_entry(S, n, 5);
    int c0 = kind == R_LSTM ? opt_entry(S, n, 6) : -1, p = kind == R_LSTM ? opt_entry(S, n, 7) : -1;
    if (x < 0 || w < 0 || r < 0 || S->ent_val[x] < 0 || dn_entry_ndim(S, x) != 3)
        return dn_fail(S, n, dnnl_success, "X, W and R must be float32 tensors of the region");
    const int64_t *xs = dn_entry_shape(S, x);
    int64_t T = xs[0], N = xs[1], I = xs[2], G = kind == R_LSTM ? 4 : kind == R_GRU ? 3 : 1, GH = G * H;
    const float *wd = const_f32(S, w), *rd = const_f32(S, r), *bd = b >= 0 ? const_f32(S, b) : NULL;
    const float *pd_ = p >= 0 ? const_f32(S, p) : NULL;
    if (!wd || !rd || (b >= 0 && !bd) || (p >= 0 && !pd_))
        return dn_fail(S, n, dnnl_success, "weights, biases and peepholes must be float32 constants");
    if (H <= 0 || dn_entry_ndim(S, w) != 3 || dn_entry_shape(S, w)[0] != D || dn_entry_shape(S, w)[1] != GH ||
        dn_entry_shape(S, w)[2] != I || dn_entry_ndim(S, r) != 3 || dn_entry_shape(S, r)[2] != H)
        return dn_fail(S, n, dnnl_success, "W / R shapes do not match X and hidden_size");
    if (lens >= 0) {
        const rt_tensor *lt = entry_const(S, lens);
        if (!lt) return dn_fail(S, n, dnnl_success, "sequence_lens must be a constant");
        for (int64_t i = 0; i < rt_tensor_numel(lt); i++)
            if ((int64_t)rt_tensor_get_f64(lt, i) != T)
                return dn_fail(S, n, dnnl_success, "sequences shorter than the input are not supported");
    }
    /* weights in oneDNN's gate order, ldgoi (= ONNX's rows) */
    const int *gmap = kind == R_LSTM ? LSTM_GATE : (const int[4]){0, 1, 2, 3};
    float *wl, *wi, *bias, *peep = NULL;
    int64_t wld[5] = {1, D, I, G, H}, wid[5] = {1, D, H, G, H}, GB = lbr ? 4 : G, bdims[4] = {1, D, GB, H};
    int64_t pdims[4] = {1, D, 3, H};
    int wlv = owned_val(S, 5, wld, dnnl_ldgoi, &wl), wiv = owned_val(S, 5, wid, dnnl_ldgoi, &wi);
    int bv = owned_val(S, 4, bdims, dnnl_ldgo, &bias), pv = pd_ ? owned_val(S, 4, pdims, dnnl_ldgo, &peep) : -1;
    if (wlv < 0 || wiv < 0 || bv < 0 || (pd_ && pv < 0)) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    for (int64_t d = 0; d < D; d++) {
        for (int64_t g = 0; g < G; g++) {
            int64_t og = gmap[g];
            memcpy(wl + (d * G + g) * H * I, wd + (d * GH + og * H) * I, sizeof(float) * (size_t)(H * I));
            memcpy(wi + (d * G + g) * H * H, rd + (d * GH + og * H) * H, sizeof(float) * (size_t)(H * H));
            for (int64_t k = 0; k < H; k++) {
                float wb = bd ? bd[d * 2 * GH + og * H + k] : 0, rb = bd ? bd[d * 2 * GH + GH + og * H + k] : 0;
                /* LBR-GRU: the h gate's recurrent bias is the fourth gate */
                bias[(d * GB + g) * H + k] = lbr && g == 2 ? wb : wb + rb;
                if (lbr && g == 2) bias[(d * GB + 3) * H + k] = rb;
            }
        }
        if (peep)
            for (int64_t g = 0; g < 3; g++)
                memcpy(peep + (d * 3 + g) * H, pd_ + d * 3 * H + PEEP_GATE[g] * H, sizeof(float) * (size_t)H);
    }
    S->stats.weight_bytes += sizeof(float) * (size_t)(D * (GH * (I + H) + GB * H + (peep ? 3 * H : 0)));
    /* descriptors: activations plain, weights any */
    int64_t sl[3] = {T, N, I}, dl[3] = {T, N, D * H}, it[4] = {1, D, N, H};
    dnnl_memory_desc_t src_md, dst_md, iter_md, wl_any, wi_any, b_md, p_md;
    dn_plain_md(&src_md, 3, sl);
    dn_plain_md(&dst_md, 3, dl);
    dn_plain_md(&iter_md, 4, it);
    dnnl_dims_t wldd = {1, D, I, G, H}, widd = {1, D, H, G, H};
    dnnl_memory_desc_init_by_tag(&wl_any, 5, wldd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wi_any, 5, widd, dnnl_f32, dnnl_format_tag_any);
    b_md = S->vals.data[bv].md;
    if (pv >= 0) p_md = S->vals.data[pv].md;
    int xv, h0v, c0v;
    gr_status st = dn_plain(S, n, S->ent_val[x], &xv);
    if (!st) st = state_in(S, n, h0, D, N, H, &h0v);
    if (!st) st = state_in(S, n, c0, D, N, H, &c0v);
    if (st) return st;
    dnnl_rnn_desc_t desc;
    dnnl_status_t ds;
    const dnnl_memory_desc_t *hin = h0v >= 0 ? &iter_md : NULL, *cin = c0v >= 0 ? &iter_md : NULL;
    if (kind == R_LSTM)
        ds = dnnl_lstm_forward_desc_init_v2(&desc, dnnl_forward_inference, rdir, &src_md, hin, cin, &wl_any, &wi_any,
                                            pv >= 0 ? &p_md : NULL, &b_md, &dst_md, &iter_md, &iter_md, dnnl_rnn_flags_undef);
    else if (lbr)
        ds = dnnl_lbr_gru_forward_desc_init(&desc, dnnl_forward_inference, rdir, &src_md, hin, &wl_any, &wi_any, &b_md, &dst_md,
                                            &iter_md, dnnl_rnn_flags_undef);
    else if (kind == R_GRU)
        ds = dnnl_gru_forward_desc_init(&desc, dnnl_forward_inference, rdir, &src_md, hin, &wl_any, &wi_any, &b_md, &dst_md,
                                        &iter_md, dnnl_rnn_flags_undef);
    else
        ds = dnnl_vanilla_rnn_forward_desc_init(&desc, dnnl_forward_inference, dnnl_eltwise_tanh, rdir, &src_md, hin, &wl_any,
                                                &wi_any, &b_md, &dst_md, &iter_md, dnnl_rnn_flags_undef, 0, 0);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid recurrent layer");
    dnnl_primitive_desc_t pd;
    ds = dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    int wlin, wiin;
    st = dn_as(S, n, wlv, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &wlin);
    if (!st) st = dn_as(S, n, wiv, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), &wiin);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    int yv = dn_val_new(S, V_TMP, &dst_md), hv = dn_val_new(S, V_TMP, &iter_md);
    int cv = kind == R_LSTM ? dn_val_new(S, V_TMP, &iter_md) : -1;
    dn_arg args[12];
    int na = 0;
    args[na++] = (dn_arg){DNNL_ARG_SRC_LAYER, xv, src_md, NULL};
    if (h0v >= 0) args[na++] = (dn_arg){DNNL_ARG_SRC_ITER, h0v, iter_md, NULL};
    if (c0v >= 0) args[na++] = (dn_arg){DNNL_ARG_SRC_ITER_C, c0v, iter_md, NULL};
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS_LAYER, wlin, S->vals.data[wlin].md, NULL};
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS_ITER, wiin, S->vals.data[wiin].md, NULL};
    if (pv >= 0) args[na++] = (dn_arg){DNNL_ARG_WEIGHTS_PEEPHOLE, pv, p_md, NULL};
    args[na++] = (dn_arg){DNNL_ARG_BIAS, bv, b_md, NULL};
    args[na++] = (dn_arg){DNNL_ARG_DST_LAYER, yv, dst_md, NULL};
    args[na++] = (dn_arg){DNNL_ARG_DST_ITER, hv, iter_md, NULL};
    if (cv >= 0) args[na++] = (dn_arg){DNNL_ARG_DST_ITER_C, cv, iter_md, NULL};
    /* oneDNN 2.6's only GRU kernel, and its only RNN kernel below AVX-512, is the one it names
     * "ref": its GEMM-based RNN driver (jit sgemm for the matrix work); brgemm (AVX-512) takes
     * LSTM and vanilla RNN */
    S->ref_why = "oneDNN 2.6 has no other RNN implementation here (brgemm: LSTM / vanilla RNN on AVX-512 only); "
                 "its 'ref' RNN runs the gates' GEMMs on jit sgemm";
    if ((st = dn_emit(S, n, pd, args, na, false))) return st;
    /* outputs: Y (T, D, N, H) over (T, N, D * H): the same bytes for one direction, a strided
     * view copied out for two; Y_h / Y_c (D, N, H) over (1, D, N, H) */
    int row = (int)S->row_ptr_of[n - S->node0];
    int64_t y4[4] = {T, D, N, H}, s3[3] = {D, N, H};
    dnnl_memory_desc_t ymd, smd;
    if (D == 1) {
        dn_plain_md(&ymd, 4, y4);
        S->ent_val[row] = dn_alias_new(S, yv, &ymd);
    } else {
        dnnl_dims_t yd = {T, D, N, H}, ystr = {N * D * H, H, D * H, 1};
        dnnl_memory_desc_init_by_strides(&ymd, 4, yd, dnnl_f32, ystr);
        int view = dn_alias_new(S, yv, &ymd), yp;
        if ((st = dn_plain(S, n, view, &yp))) return st;
        S->ent_val[row] = yp;
    }
    dn_plain_md(&smd, 3, s3);
    S->ent_val[row + 1] = dn_alias_new(S, hv, &smd);
    if (cv >= 0 && n->noutputs > 2) S->ent_val[row + 2] = dn_alias_new(S, cv, &smd);
    return GR_OK;
}
