/* The oneDNN engine's op handlers: one primitive per node, plus the nodes folded into its
 * post-op chain (see dnnl.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/dnnl_impl.h"
#include "runtime/dnnl_op_table.h"

/* ------------------------------------------------------------------ common ---- */

/* runtime/dnnl_op_table.h's kinds and algorithms by op id */
static const struct op_info {
    bool in_table;
    int kind;
    dnnl_alg_kind_t alg;
} INFO[IR_OP_COUNT] = {
#define X(op, kind, check, handler, alg, alpha, beta) [IR_OP_##op] = {true, kind, alg},
    DNNL_OPS(X)
#undef X
};

/* convolutions and matmul: post-ops from their fused composite only */
static bool is_anchor(const rt_json_node *n) {
    return n->op >= 0 && n->op < IR_OP_COUNT && INFO[n->op].in_table && INFO[n->op].kind == DN_K_ANCHOR;
}

/* The entry n's primitive produces with its first k post-op steps: the last step's, a folded
 * bias add's (pending_out), else n's own output. */
static int chain_out(dn_state *S, const rt_json_node *n, const dn_step *steps, int k) {
    return k ? steps[k - 1].out : S->pending_out >= 0 ? S->pending_out : dn_out_entry(S, n);
}

static gr_status need_val(dn_state *S, const rt_json_node *n, int e, int *v) {
    *v = -1;
    if (e < 0 || S->ent_val[e] < 0) return dn_fail(S, n, dnnl_success, "operand is not a float32 tensor of the region");
    *v = S->ent_val[e];
    return GR_OK;
}

/* Creates the primitive descriptor with as many of the steps as oneDNN accepts as post-ops
 * (all, then fewer), preferring fewer post-ops to a reference kernel. need_jit: a reference
 * kernel even without post-ops is a failure too (the caller has other layouts to try);
 * returns dnnl_unimplemented then, with *err GR_OK. args/nargs: the fixed args; binary
 * post-op sources are appended. */
static dnnl_status_t try_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                                const dn_step *steps, int nsteps, int kmin, bool need_jit, dnnl_primitive_desc_t *pd,
                                int *kused, dn_arg *args, int *nargs, gr_status *err) {
    dnnl_status_t ds = dnnl_unimplemented;
    *err = GR_OK;
    for (int k = nsteps; k >= kmin; k--) {
        int na = *nargs;
        dnnl_primitive_attr_t attr;
        if ((*err = dn_make_attr(S, n, steps, k, nd, &attr, args, &na))) return dnnl_runtime_error;
        ds = dnnl_primitive_desc_create(pd, desc, attr, S->eng, NULL);
        if (ds == dnnl_success && S->opts.dw_jit) dn_pd_prefer_jit_dw(desc, attr, S->eng, pd);
        dnnl_primitive_attr_destroy(attr);
        /* post-ops that push oneDNN onto its reference kernels cost more than they save */
        if (ds == dnnl_success && (k > kmin || need_jit) && dn_pd_is_ref(*pd)) {
            dnnl_primitive_desc_destroy(*pd);
            ds = dnnl_unimplemented;
            continue;
        }
        if (ds == dnnl_success) {
            *nargs = na;
            *kused = k;
            return ds;
        }
    }
    return ds;
}

static gr_status fuse_create_min(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                                 const dn_step *steps, int nsteps, int kmin, dnnl_primitive_desc_t *pd, int *kused,
                                 dn_arg *args, int *nargs) {
    gr_status err;
    dnnl_status_t ds = try_create(S, n, desc, nd, steps, nsteps, kmin, false, pd, kused, args, nargs, &err);
    if (err) return err;
    return ds == dnnl_success ? GR_OK : dn_fail(S, n, ds, "oneDNN rejects the primitive");
}

/* For primitives emitted through finish(), which preloads a sum post-op's residual. */
static gr_status fuse_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                             const dn_step *steps, int nsteps, dnnl_primitive_desc_t *pd, int *kused, dn_arg *args,
                             int *nargs) {
    S->sum_ok = true;
    gr_status st = fuse_create_min(S, n, desc, nd, steps, nsteps, 0, pd, kused, args, nargs);
    S->sum_ok = false;
    return st;
}

/* The residual value sv (in dst's layout) may be overwritten by n's primitive, which adds it as
 * a sum post-op: its memory is an intermediate no argument of the primitive shares, and every
 * value sharing that memory is read by no region output and by no node but n, the nodes
 * folded into the primitive and the nodes built before (those before the build loop's). */
static bool overwritable(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int sv, const dn_arg *args, int nargs) {
    int r = root_val(S, sv);
    if (S->opts.no_layout_plan || S->vals.data[r].kind != V_TMP) return false;
    for (int a = 0; a < nargs; a++)
        if (args[a].val >= 0 && root_val(S, args[a].val) == r) return false;
    for (uint32_t e = 0; e < S->nent; e++) {
        if (S->ent_val[e] < 0 || root_val(S, S->ent_val[e]) != r) continue;
        if (S->is_head[e]) return false;
        for (uint32_t i = 0; i < S->cons[e].len; i++) {
            const rt_json_node *c = S->cons[e].data[i];
            bool done = c == n || (uint32_t)(c - S->node0) < S->building;
            for (int j = 0; j < k && !done; j++) {
                done = steps[j].out >= 0 && S->ent_node[steps[j].out].node == c;
                for (int q = 0; q < steps[j].nnodes && !done; q++) done = steps[j].nodes[q] == c;
            }
            if (!done) return false;
        }
    }
    return true;
}

/* Output value of pd's dst, bound to the last folded entry; emits and consumes the steps. A
 * sum post-op's residual is preloaded into dst: in place when the residual's memory is free
 * after this primitive (a reorder into dst's layout made just for it, or a last use), else a
 * copy. */
static gr_status finish(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, dn_arg *args, int nargs,
                        const dn_step *steps, int k, const dnnl_memory_desc_t *dst_override) {
    /* a copy: dst_override may point into the value array, which grows below */
    dnnl_memory_desc_t dmd = *(dst_override ? dst_override : dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    int e = chain_out(S, n, steps, k);
    S->pending_out = -1;
    int v = -1;
    int sum = S->pending_sum;
    S->pending_sum = -1;
    if (sum >= 0) {
        /* the residual in dst's layout */
        int sv;
        gr_status st = dn_as(S, n, S->ent_val[sum], &dmd, &sv);
        if (!st && overwritable(S, n, steps, k, sv, args, nargs)) {
            /* no copy: the primitive accumulates into the residual's memory; a reordered copy
             * of the residual (made now or cached) is no copy of it any more */
            if (sv != S->ent_val[sum]) S->vals.data[sv].copy_of = 0;
            v = dn_alias_new(S, sv, &dmd);
            S->vals.data[v].inplace = true;
        } else if (!st) {
            v = dn_val_new(S, V_TMP, &dmd);
            dnnl_primitive_desc_t cpd;
            dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&cpd, &dmd, S->eng, &dmd, S->eng, S->attr_plain);
            if (ds != dnnl_success) st = dn_fail(S, n, ds, "cannot copy the residual");
            dn_arg ca[2] = {{DNNL_ARG_FROM, sv, dmd, NULL}, {DNNL_ARG_TO, v, dmd, NULL}};
            if (!st) st = dn_emit(S, n, cpd, ca, 2, true);
        }
        if (st) {
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
    }
    if (v < 0) v = dn_val_new(S, V_TMP, &dmd);
    args[nargs++] = (dn_arg){DNNL_ARG_DST, v, dmd, NULL};
    dn_consume(S, steps, k);
    gr_status st = dn_emit(S, n, pd, args, nargs, false);
    if (st) return st;
    S->ent_val[e] = v;
    return GR_OK;
}

/* The chain after n's output, and the dst md to ask for: plain when the chain ends in a
 * region output, else `any`. */
static int chain_of(dn_state *S, const rt_json_node *n, const dn_comp *comp, dn_step *steps, bool fuse, int nd,
                    const int64_t *dims, dnnl_memory_desc_t *dst) {
    int k = 0, last = dn_out_entry(S, n);
    bool nofuse = S->opts.no_fuse;
    if (comp) {
        /* a fused composite: its post-ops, all of them (dnnl.no_fuse: none, dn_composite
         * then runs them as their own primitives); the dst layout by where its output goes */
        k = nofuse ? 0 : comp->k;
        memcpy(steps, comp->steps, sizeof(dn_step) * (size_t)k);
        if (comp->k) last = comp->steps[comp->k - 1].out;
    } else if (fuse && !nofuse && !is_anchor(n)) {
        /* convolutions and matmuls get post-ops from their composite only; chains of single
         * ops after other primitives (pool -> relu, resize -> add) still fold */
        k = dn_collect_chain(S, dn_out_entry(S, n), steps, DN_MAX_STEPS);
        if (k) last = steps[k - 1].out;
    }
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    if (S->is_head[last]) dn_plain_md(dst, nd, dims);
    else dnnl_memory_desc_init_by_tag(dst, nd, d, dnnl_f32, dnnl_format_tag_any);
    return k;
}

/* A constant that broadcasts along `axis` only (C values). */
static bool per_channel_const(dn_state *S, int e, int axis, int nd, int64_t C) {
    if (e < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || S->ent_val[e] < 0) return false;
    int cnd = dn_entry_ndim(S, e);
    const int64_t *cs = dn_entry_shape(S, e);
    if (cnd < nd - axis) return false;
    for (int i = 0; i < cnd; i++) {
        int ax = nd - cnd + i;
        if (cs[i] != (ax == axis ? C : 1)) return false;
    }
    return true;
}

static bool bias_step(dn_state *S, const dn_step *st, int axis, int nd, int64_t C) {
    return st->kind == STEP_BINARY && st->alg == dnnl_binary_add && per_channel_const(S, st->src1, axis, nd, C);
}

/* Per-channel constant adds at the head of the chain become the bias (several are summed
 * once, into an engine-owned buffer). */
static bool take_bias(dn_state *S, dn_step *steps, int *k, int axis, int nd, int64_t C, int *bias_val) {
    int nb = 0;
    while (nb < *k && bias_step(S, &steps[nb], axis, nd, C)) nb++;
    if (!nb) return false;
    *bias_val = S->ent_val[steps[0].src1];
    if (nb > 1) {
        float *sum = dn_owned_alloc(S, sizeof(float) * (size_t)C);
        if (!sum) return false;
        memset(sum, 0, sizeof(float) * (size_t)C);
        for (int i = 0; i < nb; i++) {
            const float *c = S->vals.data[root_val(S, S->ent_val[steps[i].src1])].ptr;
            for (int64_t j = 0; j < C; j++) sum[j] += c[j];
        }
        dnnl_memory_desc_t md;
        dn_plain_md(&md, 1, &C);
        *bias_val = dn_val_new(S, V_OWNED, &md);
        S->vals.data[*bias_val].ptr = sum;
    }
    S->pending_out = steps[nb - 1].out;
    dn_consume(S, steps, nb);
    memmove(steps, steps + nb, sizeof(dn_step) * (size_t)(*k - nb));
    *k -= nb;
    return true;
}

/* Per-channel constant add / subtract / multiply / divide and scalar linears at the head of a
 * convolution's chain (a bias, an unfolded batch norm) fold into its weights and bias once:
 * y = conv(x, w) * scale + shift, scale per output channel into w, shift into the bias.
 * axis: the channel axis of the result as the graph has it (1, or 3 for NHWC). */
static void take_affine(dn_state *S, dn_step *steps, int *k, int64_t O, bool wconst, int *wv, int *bias_val,
                        bool deconv, int64_t ig, int64_t og, int64_t K, int axis) {
    int nb = 0;
    float *scale = dn_owned_alloc(S, sizeof(float) * (size_t)O), *shift = dn_owned_alloc(S, sizeof(float) * (size_t)O);
    if (!scale || !shift) return;
    for (int64_t j = 0; j < O; j++) {
        scale[j] = 1.f;
        shift[j] = 0.f;
    }
    bool scaled = false;
    for (; nb < *k; nb++) {
        const dn_step *st = &steps[nb];
        if (st->kind == STEP_ELTWISE) {
            if (st->alg != dnnl_eltwise_linear || (!wconst && st->alpha != 1.f)) break;
            for (int64_t j = 0; j < O; j++) {
                scale[j] *= st->alpha;
                shift[j] = shift[j] * st->alpha + st->beta;
            }
            scaled |= st->alpha != 1.f;
            continue;
        }
        if (!per_channel_const(S, st->src1, axis, dn_entry_ndim(S, st->out), O)) break;
        bool mul = st->alg == dnnl_binary_mul || st->alg == dnnl_binary_div;
        if (mul && !wconst) break;
        if (st->alg != dnnl_binary_add && st->alg != dnnl_binary_sub && !mul) break;
        const float *c = S->vals.data[root_val(S, S->ent_val[st->src1])].ptr;
        for (int64_t j = 0; j < O; j++) {
            if (st->alg == dnnl_binary_add) shift[j] += c[j];
            else if (st->alg == dnnl_binary_sub) shift[j] -= c[j];
            else if (st->alg == dnnl_binary_mul) {
                scale[j] *= c[j];
                shift[j] *= c[j];
            } else {
                scale[j] /= c[j];
                shift[j] /= c[j];
            }
        }
        scaled |= mul;
    }
    if (!nb) return;
    if (scaled) {
        dn_val *w = &S->vals.data[*wv];
        size_t bytes = dnnl_memory_desc_get_size(&w->md);
        int64_t n = (int64_t)(bytes / sizeof(float));
        const float *src = S->vals.data[root_val(S, *wv)].ptr;
        float *dst = dn_owned_alloc(S, bytes);
        if (!dst) return;
        for (int64_t f = 0; f < n; f++) {
            int64_t o = deconv ? ((f / (og * K)) / ig) * og + (f / K) % og : f / (ig * K);
            dst[f] = src[f] * scale[o];
        }
        dnnl_memory_desc_t md = S->vals.data[*wv].md;
        *wv = dn_val_new(S, V_OWNED, &md);
        S->vals.data[*wv].ptr = dst;
    }
    dnnl_memory_desc_t bmd;
    dn_plain_md(&bmd, 1, &O);
    *bias_val = dn_val_new(S, V_OWNED, &bmd);
    S->vals.data[*bias_val].ptr = shift;
    S->pending_out = steps[nb - 1].out;
    dn_consume(S, steps, nb);
    memmove(steps, steps + nb, sizeof(dn_step) * (size_t)(*k - nb));
    *k -= nb;
}

/* ---------------------------------------------------------------- conv ---- */

/* A 2-D transposed convolution whose kernel equals its stride (no padding, no overlap), as in
 * FPN upsampling: a 1x1 convolution to O*kh*kw channels, then a reorder that interleaves them
 * into the output pixels. oneDNN 2.6's own deconvolution kernels take hundreds of ms on such
 * shapes. Bias and per-channel affine ops fold first; eltwise post-ops commute with the
 * interleave and stay fused. */
static gr_status op_deconv_pixel(dn_state *S, const rt_json_node *n, const dn_comp *comp, int x, int xv, int w,
                                 int wv, int64_t kh, int64_t kw) {
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    int64_t N = xs[0], I = xs[1], H = xs[2], W = xs[3], O = os[1], K = kh * kw, OK = O * K;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    int k = chain_of(S, n, comp, steps, true, 4, os, &ignore);
    int bv = -1;
    take_affine(S, steps, &k, O, S->ent_node[w].node->kind == RT_JSON_CONST, &wv, &bv, true, I, O, K, 1);
    for (int i = 0; i < k; i++)
        if (steps[i].kind != STEP_ELTWISE) k = i;
    const float *wsrc = S->vals.data[root_val(S, wv)].ptr;
    float *w2 = dn_owned_alloc(S, sizeof(float) * (size_t)(OK * I)), *b2 = dn_owned_alloc(S, sizeof(float) * (size_t)OK);
    if (!w2 || !b2) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    const float *bsrc = bv >= 0 ? S->vals.data[root_val(S, bv)].ptr : NULL;
    for (int64_t o = 0; o < O; o++)
        for (int64_t q = 0; q < K; q++) {
            for (int64_t c = 0; c < I; c++) w2[(o * K + q) * I + c] = wsrc[(c * O + o) * K + q];
            b2[o * K + q] = bsrc ? bsrc[o] : 0.f;
        }
    dnnl_dims_t wd = {OK, I, 1, 1}, xd = {N, I, H, W}, td = {N, OK, H, W}, one = {1, 1}, zero = {0, 0}, bd = {OK};
    dnnl_memory_desc_t wuser, wany, xany, tmd, bmd;
    dnnl_memory_desc_init_by_tag(&wuser, 4, wd, dnnl_f32, dnnl_abcd);
    dnnl_memory_desc_init_by_tag(&wany, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&xany, 4, xd, dnnl_f32, dnnl_format_tag_any);
    /* channels-last everywhere: oneDNN's brgemm 1x1 kernels, and the layout the region's other
     * convolutions use */
    dnnl_memory_desc_init_by_tag(&tmd, 4, td, dnnl_f32, dnnl_acdb);
    dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_a);
    int wval = dn_val_new(S, V_OWNED, &wuser), bval = dn_val_new(S, V_OWNED, &bmd);
    S->vals.data[wval].ptr = w2;
    S->vals.data[bval].ptr = b2;
    /* src `any` (oneDNN's choice), else channels-last like dst: the AVX2 jit kernels want src
     * and dst in one layout, and a mixed pair left only ref */
    dnnl_memory_desc_t xcl;
    dnnl_memory_desc_init_by_tag(&xcl, 4, xd, dnnl_f32, dnnl_acdb);
    const dnnl_memory_desc_t *alt_x[2] = {&xany, &xcl};
    dnnl_convolution_desc_t desc;
    dnnl_status_t ds = dnnl_success;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0;
    dnnl_primitive_desc_t pd = NULL;
    gr_status st = GR_OK;
    for (int a = 0; a < 2 && !pd && !st; a++) {
        ds = dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, alt_x[a],
                                                        &wany, &bmd, &tmd, one, zero, zero, zero);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid convolution");
        if (a == 1) S->ref_why = "no jit 1x1 convolution for the transposed convolution's shapes";
        ds = try_create(S, n, &desc, 4, steps, k, 0, a == 0, &pd, &used, args, &na, &st);
        if (ds != dnnl_success) pd = NULL;
    }
    if (st) return st;
    if (!pd) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    if ((st = dn_src_weights(S, n, pd, xv, wval, args, &na))) return st;
    args[na++] = (dn_arg){DNNL_ARG_BIAS, bval, bmd, NULL};
    int tv = dn_val_new(S, V_TMP, &tmd);
    args[na++] = (dn_arg){DNNL_ARG_DST, tv, tmd, NULL};
    dn_consume(S, steps, used);
    st = dn_emit(S, n, pd, args, na, false);
    if (st) return st;
    /* interleave: tmp [N][H][W][O][kh][kw] -> out [N][H][kh][W][kw][O] (both channels-last),
     * as 6-D views with dims (N, O, H, kh, W, kw) */
    int64_t OH = os[2], OW = os[3];
    dnnl_dims_t vd = {N, O, H, kh, W, kw}, vs = {H * W * OK, K, W * OK, kw, OK, 1};
    dnnl_dims_t us = {OH * OW * O, 1, kh * OW * O, OW * O, kw * O, O}, od = {N, O, OH, OW};
    dnnl_memory_desc_t view, out6, omd;
    dnnl_memory_desc_init_by_strides(&view, 6, vd, dnnl_f32, vs);
    dnnl_memory_desc_init_by_strides(&out6, 6, vd, dnnl_f32, us);
    dnnl_memory_desc_init_by_tag(&omd, 4, od, dnnl_f32, dnnl_acdb);
    dnnl_primitive_desc_t rpd;
    ds = dnnl_reorder_primitive_desc_create(&rpd, &view, S->eng, &out6, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot interleave the transposed convolution");
    int ov = dn_val_new(S, V_TMP, &omd);
    dn_arg ra[2] = {{DNNL_ARG_FROM, tv, view, NULL}, {DNNL_ARG_TO, ov, out6, NULL}};
    st = dn_emit(S, n, rpd, ra, 2, true);
    if (st) return st;
    int e = chain_out(S, n, steps, used);
    S->pending_out = -1;
    S->ent_val[e] = ov;
    return GR_OK;
}

/* ------------------------------------------------------- layout letters ---- */

/* A plain tensor of shape `shape` in layout `lay` (NHWC, OHWI, ...) read in the axis order of
 * `canon` (NCHW, OIHW, ...): its dims and strides in that order, over the tensor's own memory.
 * False when lay is not a permutation of canon's letters. */
static bool layout_view(const char *lay, const char *canon, const int64_t *shape, int64_t *dims, int64_t *str) {
    size_t nd = strlen(canon);
    if (strlen(lay) != nd) return false;
    int64_t st[DNNL_MAX_NDIMS], acc = 1;
    for (size_t i = nd; i-- > 0;) {
        st[i] = acc;
        acc *= shape[i];
    }
    for (size_t j = 0; j < nd; j++) {
        const char *q = strchr(lay, canon[j]);
        if (!q || strchr(q + 1, canon[j])) return false;
        dims[j] = shape[q - lay];
        str[j] = st[q - lay];
    }
    return true;
}

/* permute_dims node p's axes as perm (input axis i is output axis perm[i]); false on bad axes. */
static bool permute_perm(const rt_json_node *p, int nd, int *perm) {
    int64_t axes[DNNL_MAX_NDIMS];
    int na = dn_attr_ints(p, "axes", axes, DNNL_MAX_NDIMS);
    if (na < 0) {
        for (int i = 0; i < nd; i++) perm[nd - 1 - i] = i;
        return true;
    }
    if (na != nd) return false;
    bool seen[DNNL_MAX_NDIMS] = {false};
    for (int k = 0; k < nd; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + nd : axes[k];
        if (a < 0 || a >= nd || seen[a]) return false;
        seen[a] = true;
        perm[a] = k;
    }
    return true;
}

/* Entry e is read by a permute_dims moving the channel axis last (NCHW -> NHWC, as ConvNeXt
 * does around its layer norms and linears): written channels-last, e makes that permute a
 * plain view without a copy (see op_permute). */
static bool wants_channels_last(dn_state *S, int e) {
    if (e < 0 || S->is_head[e] || S->opts.no_layout_plan) return false;
    int nd = dn_entry_ndim(S, e);
    if (nd < 3 || nd > 5) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        int perm[DNNL_MAX_NDIMS];
        if (c->op != IR_OP_PERMUTE_DIMS || dn_arg_entry(S, c, 0) != e || !permute_perm(c, nd, perm)) continue;
        bool cl = perm[0] == 0 && perm[1] == nd - 1;
        for (int d = 2; d < nd; d++) cl &= perm[d] == d - 1;
        if (cl) return true;
    }
    return false;
}

/* md is a strided layout without blocks (plain, channels-last, or a view of one). */
static bool strided(const dnnl_memory_desc_t *md) {
    return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0;
}

/* md is channels-last, or a strided view of a channels-last tensor (a slice of its channels):
 * the channels vary fastest. Reordered into a dense channels-last layout, it is a copy of
 * contiguous runs, into a blocked or plain one a transposition. */
static bool cl_order(const dnnl_memory_desc_t *md) {
    if (md->ndims < 3 || md->ndims > 5 || !strided(md) || md->dims[1] < 2) return false;
    const int64_t *s = md->format_desc.blocking.strides;
    for (int i = 2; i < md->ndims; i++)
        if (md->dims[i] > 1 && s[i] < s[1] * md->dims[1]) return false;
    return true;
}

/* *xv as the strided view (dims, str) of its plain self: what a primitive with canonical axes
 * reads for a channels-last (or any permuted) tensor, without a copy. */
static gr_status layout_in(dn_state *S, const rt_json_node *n, int *xv, int nd, const dnnl_dims_t dims, const dnnl_dims_t str) {
    gr_status st = dn_plain(S, n, *xv, xv);
    if (st) return st;
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_strides(&md, nd, dims, dnnl_f32, str);
    *xv = dn_alias_new(S, *xv, &md);
    return GR_OK;
}

/* Entry e, computed with canonical axes: in the strided md `want` (the permuted view of the
 * node's own shape), then seen as the plain tensor of that shape. */
static gr_status layout_out(dn_state *S, const rt_json_node *n, int e, const dnnl_memory_desc_t *want) {
    int v;
    gr_status st = dn_as(S, n, S->ent_val[e], want, &v);
    if (st) return st;
    dnnl_memory_desc_t md;
    dn_plain_md(&md, n->ndims[0], n->shapes[0]);
    S->ent_val[e] = dn_alias_new(S, v, &md);
    return GR_OK;
}

/* ------------------------------------------------------------ winograd ---- */

/* graft's own AVX2 kernels (dnnl_avx2_impl.h) may run: oneDNN's ISA is at least avx2 (it
 * honours ONEDNN_MAX_CPU_ISA) and the CPU has AVX2 and FMA (the code's target). */
static bool avx2_kernels_ok(void) {
    static int ok = -1; /* the CPU and ONEDNN_MAX_CPU_ISA do not change within a process */
    if (ok < 0) {
        __builtin_cpu_init();
        ok = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2 && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
    }
    return ok;
}

/* Our Winograd (dnnl_wino.c) runs where oneDNN has none: ISAs below avx512_core. */
static bool wino_isa_ok(void) {
    return avx2_kernels_ok() && (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
}

/* A convolution Winograd F(m x m, 3x3) computes (graft's or oneDNN's): 3x3 weights (ws: O, I,
 * kh, kw), stride 1, no dilation, one group. */
static bool wino_shape(const int64_t *ws, const int64_t *strides, const int64_t *dil, int64_t G) {
    return G == 1 && ws[2] == 3 && ws[3] == 3 && strides[0] == 1 && strides[1] == 1 && dil[0] == 1 && dil[1] == 1;
}

/* oneDNN's Winograd from this many channels in and out (measured at batch 1, square maps
 * 20-160, 2 threads: 0.34-0.83 of brgconv's time from 24 up, up to 2.1x more below 16) */
#define ONEDNN_WINO_MIN_CH 24

/* The output tile for a 3x3 stride-1 convolution of batch N (0: oneDNN's direct kernel).
 * The batched matmul streams the transformed weights (a*a*C*O floats) once for few tiles, so
 * the choice goes by weight bytes per tile. Measured under ONEDNN_MAX_CPU_ISA=AVX2 on the EPYC
 * (2 threads; two convs + relu / residual, ms, direct / F(2x2) / F(4x4)):
 *   C-O @HxW       direct   F2     F4         C-O @HxW       direct   F2     F4
 *   16-16 @112     2.19    1.00   0.52        112-224 @14    3.14    1.28   1.09
 *   32-32 @112     5.34    2.65   1.89        256-256 @14    5.20    2.37   2.56
 *   64-64 @56      3.95    1.77   0.92        160-320 @7     1.65    0.87   2.02
 *   192-192 @28    6.00    2.52   1.56        512-512 @7     5.65    4.50   7.79
 * F(4x4) wins wherever it has tiles enough; it stores 36/9 of the weights (F(2x2) 16/9, oneDNN's
 * direct copy 9/9), which matters for the peak memory (googlenet under AVX2: every 3x3 in F(4x4)
 * put it 4 MiB above ONNX Runtime's). So F(4x4) up to 96 KiB of transformed weights per tile
 * (128-192 @28: 72 KiB), F(2x2) up to 128 KiB (256-256 @14: 85 KiB), else direct (160-320 @7:
 * 205 KiB per tile in F(2x2), 2x faster for 3.3 MiB more per conv; 512-512 @7: 1 MiB, 20%
 * faster for 7.4 MiB more). Below 16 channels the 8-lane blocks are mostly padding: not
 * measured, left to oneDNN. */
static int wino_tile(int64_t N, int64_t C, int64_t O, int64_t OH, int64_t OW) {
    if (C < 16 || O < 16) return 0;
    double cp = (double)((C + 7) / 8 * 8), op = (double)((O + 7) / 8 * 8);
    double t4 = (double)(N * ((OH + 3) / 4) * ((OW + 3) / 4)), t2 = (double)(N * ((OH + 1) / 2) * ((OW + 1) / 2));
    if (36 * cp * op * 4 / t4 <= 96 * 1024) return 4;
    if (16 * cp * op * 4 / t2 <= 128 * 1024) return 2;
    return 0;
}

/* The eltwise step st as an op of graft's own kernels (dnnl_avx2_impl.h), or false. */
static bool eltwise_vop(const dn_step *st, dn_vop *op) {
    static const struct {
        dnnl_alg_kind_t alg;
        int kind;
    } MAP[] = {{dnnl_eltwise_relu, DN_VOP_RELU},
               {dnnl_eltwise_linear, DN_VOP_LINEAR},
               {dnnl_eltwise_clip, DN_VOP_CLIP},
               {dnnl_eltwise_clip_v2, DN_VOP_CLIP},
               {dnnl_eltwise_hardswish, DN_VOP_HARDSWISH}};
    if (st->kind != STEP_ELTWISE) return false;
    for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++)
        if (MAP[i].alg == st->alg) {
            *op = (dn_vop){MAP[i].kind, st->alpha, st->beta};
            return true;
        }
    return false;
}

/* The post-op steps the output transform applies (eltwise ops and one residual add of a full
 * tensor), from the first, until one it does not. */
static int wino_ops(dn_state *S, const dn_step *steps, int k, dn_wino *p, int *res_entry) {
    int used = 0;
    *res_entry = -1;
    for (; used < k && used < DN_VOP_MAX; used++) {
        const dn_step *st = &steps[used];
        dn_vop op = {DN_VOP_SUM, 0.f, 0.f};
        if (!eltwise_vop(st, &op)) {
            if (st->kind != STEP_BINARY || st->alg != dnnl_binary_add || *res_entry >= 0 || S->ent_val[st->src1] < 0 ||
                dn_entry_ndim(S, st->src1) != 4 ||
                memcmp(dn_entry_shape(S, st->src1), dn_entry_shape(S, st->out), 4 * sizeof(int64_t)))
                break;
            *res_entry = st->src1;
        }
        p->ops[p->nops++] = op;
    }
    return used;
}

/* The batched matmul of a pass of `tiles` tiles: primitive and its memories (V, U, M,
 * scratchpad; handles of V, M and the scratchpad set when it runs, U's once made). False: no
 * jit one. */
static bool wino_matmul(dn_state *S, dn_wino *p, int k, int64_t tiles) {
    int64_t aa = (p->m + 2) * (p->m + 2);
    dnnl_dims_t vd = {aa, tiles, p->Cp}, ud = {aa, p->Cp, p->Op}, md = {aa, tiles, p->Op};
    dnnl_memory_desc_t vmd, umd, mmd;
    dnnl_memory_desc_init_by_tag(&vmd, 3, vd, dnnl_f32, dnnl_abc);
    dnnl_memory_desc_init_by_tag(&umd, 3, ud, dnnl_f32, dnnl_abc);
    dnnl_memory_desc_init_by_tag(&mmd, 3, md, dnnl_f32, dnnl_abc);
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    if (dnnl_matmul_desc_init(&desc, &vmd, &umd, NULL, &mmd) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL) != dnnl_success)
        return false;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sz = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (sz > S->scratch_bytes) S->scratch_bytes = sz;
    bool ok = !dn_pd_is_ref(pd) && dnnl_primitive_create(&p->mm[k], pd) == dnnl_success &&
              dnnl_memory_create(&p->mem[k][0], &vmd, S->eng, DNNL_MEMORY_NONE) == dnnl_success &&
              dnnl_memory_create(&p->mem[k][1], &umd, S->eng, DNNL_MEMORY_NONE) == dnnl_success &&
              dnnl_memory_create(&p->mem[k][2], &mmd, S->eng, DNNL_MEMORY_NONE) == dnnl_success &&
              (!sz || dnnl_memory_create(&p->mem[k][3], sp, S->eng, DNNL_MEMORY_NONE) == dnnl_success);
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Tiles per pass: V and M of a pass within 2 MiB (the L2 and a share of L3), so the transforms and
 * the matmul work from cache: PP-OCR det's 96 -> 24 channel convs at 160x160 (V of 22 MiB in
 * one pass) took 5.3 ms, slower than direct (5.0 ms). */
#define WINO_PASS_BYTES (2 << 20)

/* dn_const_made's maker of U */
typedef struct wino_wctx {
    const dn_wino *p;
    const int64_t *wstr;
} wino_wctx;

static gr_status make_wino_u(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, const void *src,
                             const dnnl_memory_desc_t *dmd, void *dst, void *ctx) {
    (void)S, (void)n, (void)dmd;
    const wino_wctx *c = ctx;
    dn_wino_weights(c->p, (const float *)src + smd->offset0, c->wstr, dst);
    return GR_OK;
}

/* Conv n (3x3, stride 1, dilation 1, one group, NCHW / OIHW, constant weights wv read at
 * strides wstr; bias bv or -1; post-op steps) as one primitive of ours (dn_wino_run). *done
 * false: not taken (nothing emitted), the caller goes on with oneDNN. */
static gr_status wino_conv(dn_state *S, const rt_json_node *n, int xv, int wv, const int64_t *wstr, int bv,
                           const dn_step *steps, int k, const int64_t *xs, const int64_t *os, const int64_t *pad, bool *done) {
    *done = false;
    dn_wino q = {0};
    q.m = wino_tile(xs[0], xs[1], os[1], os[2], os[3]);
    if (!q.m) return GR_OK;
    q.N = xs[0], q.C = xs[1], q.H = xs[2], q.W = xs[3], q.O = os[1], q.OH = os[2], q.OW = os[3], q.pt = pad[0], q.pl = pad[1];
    q.tr = (q.OH + q.m - 1) / q.m, q.tc = (q.OW + q.m - 1) / q.m, q.T = q.N * q.tr * q.tc;
    q.Cp = (q.C + 7) / 8 * 8, q.Op = (q.O + 7) / 8 * 8;
    int64_t aa = (q.m + 2) * (q.m + 2), per_tile = aa * (q.Cp + q.Op) * (int64_t)sizeof(float);
    int64_t passes = (q.T * per_tile + WINO_PASS_BYTES - 1) / WINO_PASS_BYTES;
    /* at least 32 tiles a pass (many channels): the matmul's rows */
    if (passes > 1 && q.T / passes < 32) passes = q.T / 32 > 1 ? q.T / 32 : 1;
    q.chunk = (q.T + passes - 1) / passes;
    int res = -1, used = wino_ops(S, steps, k, &q, &res);
    dn_wino *p = calloc(1, sizeof *p);
    float *bias = bv >= 0 ? dn_owned_alloc(S, sizeof(float) * (size_t)q.Op) : NULL;
    if (!p || (bv >= 0 && !bias)) {
        free(p);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    *p = q;
    p->stream = S->stream;
    int64_t last = q.T - (q.T - 1) / q.chunk * q.chunk; /* tiles of the last pass */
    /* the matmuls first: nothing is emitted unless oneDNN has jit ones */
    if (!wino_matmul(S, p, 0, q.chunk) || (last != q.chunk && !wino_matmul(S, p, 1, last))) {
        dn_wino_free(p);
        return GR_OK;
    }
    *done = true;
    /* U: made once for every shape of a symbolic graph, like oneDNN's reordered weights */
    dnnl_dims_t ud = {aa, q.Cp, q.Op};
    dnnl_memory_desc_t umd;
    dnnl_memory_desc_init_by_tag(&umd, 3, ud, dnnl_f32, dnnl_abc);
    wino_wctx wc = {p, wstr};
    void *u;
    gr_status st = dn_const_made(S, n, wv, &umd, make_wino_u, &wc, &u);
    if (st) {
        dn_wino_free(p);
        return st;
    }
    for (int i = 0; i < 2; i++)
        if (p->mem[i][1]) dnnl_memory_set_data_handle(p->mem[i][1], u);
    if (bias) {
        memset(bias, 0, sizeof(float) * (size_t)q.Op);
        memcpy(bias, S->vals.data[root_val(S, bv)].ptr, sizeof(float) * (size_t)q.O);
        p->bias = bias;
    }
    dnnl_dims_t xd = {q.N, q.C, q.H, q.W}, od = {q.N, q.O, q.OH, q.OW}, vd = {aa, q.chunk, q.Cp}, md = {aa, q.chunk, q.Op};
    dnnl_memory_desc_t xmd, omd, vmd, mmd;
    dnnl_memory_desc_init_by_tag(&xmd, 4, xd, dnnl_f32, dnnl_aBcd8b);
    dnnl_memory_desc_init_by_tag(&omd, 4, od, dnnl_f32, dnnl_aBcd8b);
    dnnl_memory_desc_init_by_tag(&vmd, 3, vd, dnnl_f32, dnnl_abc);
    dnnl_memory_desc_init_by_tag(&mmd, 3, md, dnnl_f32, dnnl_abc);
    int sx, rv = -1;
    st = dn_as(S, n, xv, &xmd, &sx);
    if (!st && res >= 0) st = dn_as(S, n, S->ent_val[res], &omd, &rv);
    if (st) {
        dn_wino_free(p);
        return st;
    }
    int e = chain_out(S, n, steps, used);
    S->pending_out = -1;
    int ov = dn_val_new(S, V_TMP, &omd);
    dn_arg args[DN_FN_MAX_ARGS];
    int na = 0;
    args[na++] = (dn_arg){DNNL_ARG_SRC, sx, xmd, NULL};
    args[na++] = (dn_arg){DNNL_ARG_DST, ov, omd, NULL};
    p->ix_res = res >= 0 ? na : -1;
    if (res >= 0) args[na++] = (dn_arg){DNNL_ARG_SRC_1, rv, omd, NULL};
    p->ix_v = na;
    args[na++] = (dn_arg){DNNL_ARG_WORKSPACE, dn_val_new(S, V_TMP, &vmd), vmd, NULL};
    p->ix_m = na;
    args[na++] = (dn_arg){DNNL_ARG_WORKSPACE, dn_val_new(S, V_TMP, &mmd), mmd, NULL};
    p->ix_scratch = p->mem[0][3] || p->mem[1][3] ? na : -1;
    if (p->ix_scratch >= 0) {
        /* the engine's scratchpad, which has room for both matmuls' */
        dnnl_memory_desc_t smd;
        dnnl_dims_t sd = {(dnnl_dim_t)S->scratch_bytes};
        dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a);
        args[na++] = (dn_arg){DNNL_ARG_SCRATCHPAD, -2, smd, NULL};
    }
    dn_consume(S, steps, used);
    char impl[40];
    snprintf(impl, sizeof impl, "graft_wino_%dx3:avx2", q.m);
    if ((st = dn_emit_fn(S, n, dn_wino_run, p, dn_wino_free, "convolution", impl, args, na))) return st;
    S->ent_val[e] = ov;
    return GR_OK;
}

/* Node c is a convolution oneDNN runs with its Winograd kernel, on blocked layouts (op_conv's
 * conditions, read from c before it is built): avx512_core (below it graft's own), NCHW /
 * OIHW, constant weights, wino_shape, ONEDNN_WINO_MIN_CH channels in and out. */
static bool onednn_winograd(dn_state *S, const rt_json_node *c) {
    if (c->op != IR_OP_CONV2D || !S->opts.winograd || rt_dnnl_channel_block() != 16 || wino_isa_ok()) return false;
    int w = dn_arg_entry(S, c, 1);
    if (w < 0 || S->ent_node[w].node->kind != RT_JSON_CONST || dn_entry_ndim(S, w) != 4) return false;
    const int64_t *ws = dn_entry_shape(S, w);
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    if (dn_attr_ints(c, "strides", st, 2) == 1) st[1] = st[0];
    if (dn_attr_ints(c, "dilation", dl, 2) == 1) dl[1] = dl[0];
    return wino_shape(ws, st, dl, dn_attr_int(c, "groups", 1)) && ws[0] >= ONEDNN_WINO_MIN_CH &&
           ws[1] >= ONEDNN_WINO_MIN_CH && !strcmp(dn_attr_str(c, "data_layout", "NCHW"), "NCHW") &&
           !strcmp(dn_attr_str(c, "kernel_layout", "OIHW"), "OIHW");
}

/* A CNN's stem: a convolution of few channels (<= 4) of a plain region input, whose result
 * (e, after its post-ops) only a pooling reads, whose result in turn only convolutions oneDNN
 * runs with Winograd read, directly or as their residual (ResNet). oneDNN's jit kernels have a
 * first-convolution path reading such a source in place (plain NCHW src, blocked dst); with
 * every layout `any` avx512_core picks brgconv on channels-last instead, after a reorder of the
 * input, and the pooled map is reordered again into the blocked layout Winograd wants. Read in
 * place, the stem writes the blocked layout, the pooling keeps it and Winograd reads it: both
 * reorders gone (resnet18, ~0.06 ms a run). Elsewhere the reorder only moves: into a
 * channels-last convolution after the stem (mnasnet1_0: first-convolution path + reorder of
 * the 32x112x112 map 0.28 ms, reorder of the input + brgconv 0.22) or after the pooling
 * (googlenet: the pooled 64x56x56 map is larger than the 3x224x224 input; 0.03-0.2 ms slower),
 * so no. On avx2 oneDNN reads plain sources in place on its own. */
static bool stem_in_place(dn_state *S, int xv, int e, bool deconv, bool perm, int64_t G, int64_t I) {
    if (deconv || perm || G != 1 || I > 4 || S->opts.no_layout_plan || S->is_head[e] || S->cons[e].len != 1) return false;
    const rt_json_node *p = S->cons[e].data[0];
    if ((p->op != IR_OP_MAX_POOL2D && p->op != IR_OP_AVG_POOL2D) || S->vals.data[root_val(S, xv)].kind != V_IN ||
        !dn_is_plain(&S->vals.data[xv].md))
        return false;
    int pe = dn_out_entry(S, p), nwino = 0;
    if (S->is_head[pe]) return false;
    for (uint32_t i = 0; i < S->cons[pe].len; i++) {
        const rt_json_node *c = S->cons[pe].data[i];
        if (onednn_winograd(S, c)) {
            nwino++;
            continue;
        }
        /* or the residual add of a fused composite anchored at such a convolution (its sum
         * post-op reads the residual in the convolution's dst layout) */
        json_t *grp = json_object_get(c->attrs, "dnnl_group");
        if (c->op != IR_OP_ADD || !json_is_integer(grp) || json_integer_value(grp) < 0 ||
            (uint32_t)json_integer_value(grp) >= rt_json_graph_num_nodes(S->g) ||
            !onednn_winograd(S, rt_json_graph_node(S->g, (uint32_t)json_integer_value(grp))))
            return false;
    }
    return nwino > 0;
}

static gr_status op_conv(dn_state *S, const rt_json_node *n, const dn_comp *comp, bool deconv, int sd) {
    int x = dn_arg_entry(S, n, 0), w = dn_arg_entry(S, n, 1), xv = -1, wv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (!st) st = need_val(S, n, w, &wv);
    if (st) return st;
    const char *cx = sd == 1 ? "NCW" : "NCHW", *ck = deconv ? (sd == 1 ? "IOW" : "IOHW") : (sd == 1 ? "OIW" : "OIHW");
    const char *dl = dn_attr_str(n, "data_layout", cx), *kl = dn_attr_str(n, "kernel_layout", ck);
    const char *ol = dn_attr_str(n, "out_layout", dl);
    int nd = 2 + sd;
    if (dn_entry_ndim(S, x) != nd || dn_entry_ndim(S, w) != nd || n->ndims[0] != nd) return dn_fail(S, n, dnnl_success, "rank");
    /* other layouts (NHWC, OHWI, HWIO, ...): the primitive's canonical axes over strided views
     * of the tensors as they are; oneDNN's md carries the permutation */
    dnnl_dims_t xs, xstr, ws, wcs, os, ostr;
    if (strcmp(ol, dl) || !layout_view(dl, cx, dn_entry_shape(S, x), xs, xstr) ||
        !layout_view(kl, ck, dn_entry_shape(S, w), ws, wcs) || !layout_view(dl, cx, n->shapes[0], os, ostr))
        return dn_fail(S, n, dnnl_success, "layouts that are not permutations of NCHW / OIHW (IOHW), or out_layout other than data_layout");
    bool perm = strcmp(dl, cx) || strcmp(kl, ck);
    int64_t G = dn_attr_int(n, "groups", 1);
    int64_t strides[2] = {1, 1}, dil[2] = {1, 1}, pad[4] = {0, 0, 0, 0}, opad[2] = {0, 0};
    int c;
    if ((c = dn_attr_ints(n, "strides", strides, 2)) == 1) strides[1] = strides[0];
    if ((c = dn_attr_ints(n, "dilation", dil, 2)) == 1) dil[1] = dil[0];
    if ((c = dn_attr_ints(n, "output_padding", opad, 2)) == 1) opad[1] = opad[0];
    c = dn_attr_ints(n, "padding", pad, 4);
    if (c == 1) pad[1] = pad[2] = pad[3] = pad[0];
    else if (c == sd) {
        for (int i = 0; i < sd; i++) pad[sd + i] = pad[i];
    }
    dnnl_dims_t s, d, pl, pr, wd, wstr;
    for (int i = 0; i < sd; i++) {
        s[i] = strides[i];
        d[i] = dil[i] - 1;
        pl[i] = pad[i];
        pr[i] = pad[sd + i] - (deconv ? opad[i] : 0);
    }
    int64_t O = os[1], I = xs[1], K = 1;
    for (int i = 0; i < sd; i++) K *= ws[2 + i];
    if (G <= 0 || O % G || I % G) return dn_fail(S, n, dnnl_success, "groups do not divide the channels");
    /* weights as oneDNN sees them: ([G,] O/G, I/G, k...) over the tensor's own memory */
    int wnd = 0;
    int64_t og = O / G, ig = I / G;
    if (G > 1) {
        wd[wnd] = G;
        wstr[wnd++] = (deconv ? ig : og) * wcs[0];
    }
    wd[wnd] = og;
    wstr[wnd++] = wcs[deconv ? 1 : 0];
    wd[wnd] = ig;
    wstr[wnd++] = wcs[deconv ? 0 : 1];
    for (int i = 0; i < sd; i++) {
        wd[wnd + i] = ws[2 + i];
        wstr[wnd + i] = wcs[2 + i];
    }
    wnd += sd;
    if (!perm && deconv && sd == 2 && G == 1 && strides[0] == ws[2] && strides[1] == ws[3] && !pad[0] && !pad[1] && !pad[2] &&
        !pad[3] && !opad[0] && !opad[1] && dil[0] == 1 && dil[1] == 1 && S->ent_node[w].node->kind == RT_JSON_CONST &&
        !S->opts.no_pixel_deconv)
        return op_deconv_pixel(S, n, comp, x, xv, w, wv, ws[2], ws[3]);
    dnnl_memory_desc_t wuser, wany, xany, dst;
    dnnl_memory_desc_init_by_strides(&wuser, wnd, wd, dnnl_f32, wstr);
    dnnl_memory_desc_init_by_tag(&wany, wnd, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_dims_t xd;
    for (int i = 0; i < nd; i++) xd[i] = xs[i];
    dnnl_memory_desc_init_by_tag(&xany, nd, xd, dnnl_f32, dnnl_format_tag_any);
    dn_step steps[DN_MAX_STEPS];
    int k = chain_of(S, n, comp, steps, true, nd, os, &dst);
    /* permuted: src and dst as the strided views of the tensors */
    if (perm) {
        dnnl_dims_t od;
        for (int i = 0; i < nd; i++) od[i] = os[i];
        if ((st = layout_in(S, n, &xv, nd, xs, xstr))) return st;
        xany = S->vals.data[xv].md;
        dnnl_memory_desc_init_by_strides(&dst, nd, od, dnnl_f32, ostr);
    }
    dnnl_memory_desc_t operm = dst;
    /* oneDNN 2.6's blocked jit deconvolution is very slow for small-channel 2x2/2 upsampling
     * (hundreds of ms on PP-OCR det); channels-last picks its brgemm/gemm kernels */
    if (!perm && deconv && sd == 2 && S->opts.deconv_tag != RT_DNNL_DECONV_ANY) {
        dnnl_format_tag_t tag = S->opts.deconv_tag == RT_DNNL_DECONV_NCHW ? dnnl_abcd : dnnl_acdb;
        dnnl_dims_t od;
        for (int i = 0; i < nd; i++) od[i] = os[i];
        dnnl_memory_desc_init_by_tag(&xany, nd, xd, dnnl_f32, tag);
        if (!S->is_head[chain_out(S, n, steps, k)]) dnnl_memory_desc_init_by_tag(&dst, nd, od, dnnl_f32, tag);
    }
    int bv = -1;
    /* permuted: a bias folds (scales would need the weights' own layout), eltwise post-ops
     * fuse; binary post-ops see the node's shapes, not the primitive's, and run after */
    take_affine(S, steps, &k, O, !perm && S->ent_node[w].node->kind == RT_JSON_CONST, &wv, &bv, deconv, ig, og, K,
                perm ? (int)(strchr(dl, 'C') - dl) : 1);
    for (int i = 0; perm && i < k; i++)
        if (steps[i].kind != STEP_ELTWISE) k = i;
    /* Winograd: 3x3, stride 1, dilation 1, one group, canonical layouts, constant weights (they are
     * transformed once) */
    bool wino3x3 = S->opts.winograd && !deconv && !perm && sd == 2 && wino_shape(ws, strides, dil, G) &&
                   S->ent_node[w].node->kind == RT_JSON_CONST;
    if (wino3x3 && wino_isa_ok()) {
        bool done;
        if ((st = wino_conv(S, n, xv, wv, wstr, bv, steps, k, xs, os, pad, &done)) || done) return st;
    }
    dnnl_memory_desc_t bmd;
    dnnl_dims_t bd = {O};
    dnnl_memory_desc_init_by_strides(&bmd, 1, bd, dnnl_f32, NULL);
    dnnl_status_t ds = dnnl_unimplemented;
    union {
        dnnl_convolution_desc_t c;
        dnnl_deconvolution_desc_t d;
    } desc;
    /* layouts to try, first to last, until one gets a jit kernel: the planned ones (oneDNN's
     * choice), all `any` (a fixed dst / src can leave only ref), channels-last src and dst
     * (the jit kernels want src == dst layouts, weights `any`) */
    dnnl_memory_desc_t alt_x[5], alt_d[5], odany;
    int nalt = 0;
    dnnl_dims_t odims;
    for (int i = 0; i < nd; i++) odims[i] = os[i];
    dnnl_memory_desc_init_by_tag(&odany, nd, odims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_t xa;
    dnnl_memory_desc_init_by_tag(&xa, nd, xd, dnnl_f32, dnnl_format_tag_any);
    /* planned for the consumers too: channels-last src and dst first when a consumer permutes
     * the result to NHWC (the permute is then a view) or src already is channels-last (such a
     * view, an earlier convolution's choice, a slice of its channels), so neither side needs a
     * reorder, or only a copy of contiguous runs */
    int fe = chain_out(S, n, steps, k);
    if (!perm && !S->opts.no_layout_plan && dst.format_kind == dnnl_format_kind_any &&
        (wants_channels_last(S, fe) || cl_order(&S->vals.data[xv].md))) {
        dn_channels_last(&alt_x[nalt], &xa);
        dn_channels_last(&alt_d[nalt++], &odany);
    }
    if (dst.format_kind == dnnl_format_kind_any && stem_in_place(S, xv, fe, deconv, perm, G, I)) {
        alt_x[nalt] = S->vals.data[xv].md;
        alt_d[nalt++] = dst;
    }
    alt_x[nalt] = xany;
    alt_d[nalt++] = dst;
    if (!dnnl_memory_desc_equal(&xa, &xany) || !dnnl_memory_desc_equal(&odany, &dst)) {
        alt_x[nalt] = xa;
        alt_d[nalt++] = odany;
    }
    dn_channels_last(&alt_x[nalt], &xa);
    dn_channels_last(&alt_d[nalt], &odany);
    nalt++;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0;
    dnnl_primitive_desc_t pd = NULL;
    /* oneDNN's Winograd first, where it has it (avx512_core), with every post-op fused, in the
     * planned layouts or all `any`; then the direct algorithm in each layout */
    bool wino = wino3x3 && I >= ONEDNN_WINO_MIN_CH && O >= ONEDNN_WINO_MIN_CH;
    int first = wino ? -2 : 0;
    S->sum_ok = true;
    for (int a = first; a < nalt && !pd; a++) {
        int l = a < 0 ? a + 2 : a;
        if (a < 0 && l >= nalt - 1) continue;
        dnnl_alg_kind_t alg = a < 0 ? dnnl_convolution_winograd : deconv ? dnnl_deconvolution_direct : dnnl_convolution_direct;
        if (deconv)
            ds = dnnl_dilated_deconvolution_forward_desc_init(&desc.d, dnnl_forward_inference, alg, &alt_x[l], &wany,
                                                              bv >= 0 ? &bmd : NULL, &alt_d[l], s, d, pl, pr);
        else
            ds = dnnl_dilated_convolution_forward_desc_init(&desc.c, dnnl_forward_inference, alg, &alt_x[l], &wany,
                                                            bv >= 0 ? &bmd : NULL, &alt_d[l], s, d, pl, pr);
        if (ds != dnnl_success) {
            S->sum_ok = false;
            return dn_fail(S, n, ds, "invalid convolution");
        }
        /* the last layouts keep the best oneDNN has, ref included */
        bool last = a == nalt - 1;
        if (last) S->ref_why = "no jit convolution for these shapes / groups in any layout tried (oneDNN's choice, all any, "
                               "channels-last)";
        ds = try_create(S, n, &desc, nd, steps, k, a < 0 ? k : 0, !last, &pd, &used, args, &na, &st);
        if (st || ds != dnnl_success) pd = NULL;
        if (st) break;
    }
    S->sum_ok = false;
    if (st) return st;
    if (!pd) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    /* the fixed args go after the post-op sources; order does not matter to oneDNN */
    if ((st = dn_src_weights(S, n, pd, xv, dn_alias_new(S, wv, &wuser), args, &na))) return st;
    if (bv >= 0) args[na++] = (dn_arg){DNNL_ARG_BIAS, bv, bmd, NULL};
    int oe = chain_out(S, n, steps, used);
    st = finish(S, n, pd, args, na, steps, used, NULL);
    return st || !perm ? st : layout_out(S, n, oe, &operm);
}

static gr_status op_conv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, false, 1); }
static gr_status op_conv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, false, 2); }
static gr_status op_deconv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, true, 1); }
static gr_status op_deconv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, true, 2); }

/* ---------------------------------------------------------------- matmul ---- */

/* Plain md of weights w (dims ws, rank wn) read transposed in its last two axes, expanded to
 * rank nd with leading 1s. */
static void transposed_md(dnnl_memory_desc_t *md, int nd, int wn, const dnnl_dims_t ws) {
    dnnl_dims_t d, str;
    int pad = nd - wn;
    int64_t acc = 1;
    for (int i = wn - 1; i >= 0; i--) {
        str[pad + i] = acc;
        d[pad + i] = ws[i];
        acc *= ws[i];
    }
    for (int i = 0; i < pad; i++) {
        d[i] = 1;
        str[i] = acc;
    }
    int64_t t = d[nd - 1];
    d[nd - 1] = d[nd - 2];
    d[nd - 2] = t;
    t = str[nd - 1];
    str[nd - 1] = str[nd - 2];
    str[nd - 2] = t;
    dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, str);
}

/* Rows of a matmul whose weights have batch dims of 1: the whole batch is one GEMM of
 * batch * M rows. oneDNN 2.6 runs one GEMM per batch element otherwise, a GEMV each when M = 1
 * (torch's sequence-first projections, 128x1x256 . 256x768: 2-4 ms instead of 0.2-0.5 ms).
 * Returns the row count, 0 when the product does not collapse: weights with a batch, a single
 * batch element, or a binary post-op operand that varies along the batch or rows but is not
 * the full result. */
static int64_t collapse_rows(dn_state *S, int nd, const dnnl_memory_desc_t *amd, const dnnl_memory_desc_t *bmd,
                             const dn_step *steps, int k, const int64_t *os) {
    int64_t rows = 1;
    for (int i = 0; i < nd - 2; i++) {
        if (bmd->dims[i] != 1) return 0;
        rows *= amd->dims[i];
    }
    if (rows == 1) return 0;
    for (int i = 0; i < k; i++) {
        if (steps[i].kind != STEP_BINARY) continue;
        int cn = dn_entry_ndim(S, steps[i].src1);
        const int64_t *cs = dn_entry_shape(S, steps[i].src1);
        bool full = cn == nd && !memcmp(cs, os, sizeof(int64_t) * (size_t)nd), row = true;
        for (int j = 0; j < cn - 1; j++) row &= cs[j] == 1;
        if (!full && !row) return 0;
    }
    return rows * amd->dims[nd - 2];
}

static bool gemm_impl(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
           !strncmp(impl, "gemm", 4);
}

/* ---- graft's own product for few rows (dnnl_gemv.c) ----
 * Its AVX2 code runs at every ISA from avx2 on (avx2_kernels_ok: the product is bound by
 * memory, not by the width of the multiply-adds). */

/* One row only. Measured per primitive on the EPYC (2 threads, 1280 x 1000 weights, median us
 * of 60; cold: 96 MiB read between runs, as the rest of a model does; warm: weights in L3),
 * ours / oneDNN's matmul (brg:avx512_core native, gemm:jit at AVX2, weights `any`):
 *   rows              1               2               4
 *   cold     163 / 243 / 165  159 / 237 / 275  324 / 176 / 327
 *   warm      51 /  31 /  35  101 /  34 /  61  258 /  52 /  71
 * In a model the head's weights come from DRAM: mnasnet1_0's 1 x 1280 . 1280 x 1000 (graft run
 * --repeat 60 --profile, medians of 3 processes) 0.095-0.102 ms native (brg 0.147-0.181),
 * 0.120-0.139 at AVX2 (gemm:jit 0.165-0.176). From two rows on the kernel's partial results
 * (loaded and stored per row of W and of x) bound it. */
#define GEMV_MAX_ROWS 1

/* The eltwise steps the kernel applies: all k of them, or false */
static bool gemv_ops(const dn_step *steps, int k, dn_gemv *p) {
    if (k > DN_VOP_MAX) return false;
    for (int i = 0; i < k; i++)
        if (!eltwise_vop(&steps[i], &p->ops[p->nops++])) return false;
    return true;
}

/* Matmul n with constant weights bv (K x N, or N x K read transposed: tr), rows x K plain
 * source av, bias biasv or -1 and eltwise steps, as one primitive of ours (dn_gemv_run) when
 * it has few rows. K x N weights are read in place; transposed ones are reordered into the
 * engine's own K x N copy first (oneDNN would reorder them too). *done false: not taken
 * (nothing emitted), the caller goes on with oneDNN. */
static gr_status gemv_matmul(dn_state *S, const rt_json_node *n, int av, int bv, bool tr, int biasv, const dn_step *steps,
                             int k, int64_t rows, int64_t K, int64_t N, bool *done) {
    *done = false;
    const dnnl_memory_desc_t *wmd = &S->vals.data[bv].md;
    if (!S->opts.gemv || rows > GEMV_MAX_ROWS || !avx2_kernels_ok() || wmd->format_kind != dnnl_blocked ||
        wmd->format_desc.blocking.inner_nblks || wmd->data_type != dnnl_f32 || S->vals.data[av].md.offset0 ||
        (biasv >= 0 && (S->vals.data[biasv].md.offset0 || !dn_is_plain(&S->vals.data[biasv].md))))
        return GR_OK;
    dn_gemv q = {.M = rows, .K = K, .N = N, .ix_bias = -1};
    if (!gemv_ops(steps, k, &q)) return GR_OK;
    /* W as a K x N row-major value: bv itself, else (transposed) a copy */
    int wv = bv;
    const int64_t *wstr = wmd->format_desc.blocking.strides;
    if (tr ? wmd->ndims != 2 || !dn_is_plain(wmd) : wmd->offset0 || wstr[wmd->ndims - 1] != 1) return GR_OK;
    if (tr) {
        dnnl_memory_desc_t view, plain;
        dnnl_dims_t d2 = {K, N};
        transposed_md(&view, 2, 2, wmd->dims);
        dnnl_memory_desc_init_by_tag(&plain, 2, d2, dnnl_f32, dnnl_ab);
        gr_status st = dn_as(S, n, dn_alias_new(S, bv, &view), &plain, &wv);
        if (st) return st;
    } else {
        /* its whole 2 MiB pieces onto huge pages: read once a run, after the rest of the model
         * evicted them and their page translations */
        dn_hugepages((const char *)S->vals.data[root_val(S, bv)].ptr, (size_t)(K * wstr[wmd->ndims - 2]) * sizeof(float));
    }
    /* a copy: dn_val_new below may move S->vals */
    const dnnl_memory_desc_t w2 = S->vals.data[wv].md;
    q.ldw = w2.format_desc.blocking.strides[w2.ndims - 2];
    q.nparts = rt_dnnl_num_threads();
    dn_gemv *p = malloc(sizeof *p);
    if (!p) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    *p = q;
    *done = true;
    dn_arg args[DN_FN_MAX_ARGS];
    int na = 0;
    args[na++] = (dn_arg){DNNL_ARG_SRC, av, S->vals.data[av].md, NULL};
    int e = chain_out(S, n, steps, k);
    S->pending_out = -1;
    dnnl_memory_desc_t dmd;
    dn_plain_md(&dmd, n->ndims[0], n->shapes[0]);
    int ov = dn_val_new(S, V_TMP, &dmd);
    args[na++] = (dn_arg){DNNL_ARG_DST, ov, dmd, NULL};
    p->ix_w = na;
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS, wv, w2, NULL};
    dnnl_dims_t partd = {p->nparts * rows * N};
    dnnl_memory_desc_t partmd;
    dnnl_memory_desc_init_by_tag(&partmd, 1, partd, dnnl_f32, dnnl_a);
    p->ix_part = na;
    args[na++] = (dn_arg){DNNL_ARG_WORKSPACE, dn_val_new(S, V_TMP, &partmd), partmd, NULL};
    if (biasv >= 0) {
        p->ix_bias = na;
        args[na++] = (dn_arg){DNNL_ARG_BIAS, biasv, S->vals.data[biasv].md, NULL};
    }
    dn_consume(S, steps, k);
    gr_status st = dn_emit_fn(S, n, dn_gemv_run, p, free, "matmul", "graft_gemv:avx2", args, na);
    if (!st) S->ent_val[e] = ov;
    return st;
}

static gr_status op_matmul(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    int a = dn_arg_entry(S, n, 0), b = dn_arg_entry(S, n, 1), av = -1, bv = -1;
    /* "dense": the weights are permute_dims(w) of the last two axes; w is read transposed */
    bool tr = comp && comp->b >= 0;
    if (tr) b = comp->b;
    gr_status st = need_val(S, n, a, &av);
    if (!st) st = need_val(S, n, b, &bv);
    if (st) return st;
    int nd = n->ndims[0];
    if (dn_entry_ndim(S, a) < 2 || dn_entry_ndim(S, b) < 2 || nd > 6)
        return dn_fail(S, n, dnnl_success, "matmul of 1-D operands is not supported");
    st = dn_plain(S, n, av, &av);
    if (st) return st;
    bool bconst = S->ent_node[b].node->kind == RT_JSON_CONST;
    if (!bconst && (st = dn_plain(S, n, bv, &bv))) return st;
    dnnl_memory_desc_t amd, bmd, bany, dst, biasmd;
    dn_plain_expand(&amd, &S->vals.data[av].md, nd);
    if (tr) transposed_md(&bmd, nd, S->vals.data[bv].md.ndims, S->vals.data[bv].md.dims);
    else dn_plain_expand(&bmd, &S->vals.data[bv].md, nd);
    bany = bmd;
    if (bconst) dnnl_memory_desc_init_by_tag(&bany, nd, bmd.dims, dnnl_f32, dnnl_format_tag_any);
    dn_plain_md(&dst, nd, n->shapes[0]);
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    int k = chain_of(S, n, comp, steps, true, nd, n->shapes[0], &ignore);
    int biasv = -1;
    int64_t N = n->shapes[0][nd - 1];
    bool bias = take_bias(S, steps, &k, nd - 1, nd, N, &biasv);
    /* collapsed: the primitive sees 2-D views of src, dst and the post-op operands (the entries
     * of those are swapped for views until the primitive is emitted); the result is a view
     * with the result's shape */
    int64_t rows = collapse_rows(S, nd, &amd, &bmd, steps, k, n->shapes[0]);
    if (bconst) {
        /* few rows (all batch elements' over weights without a batch): graft's own product */
        int64_t grows = amd.dims[nd - 2];
        bool wbatch = false;
        for (int i = 0; i < nd - 2; i++) {
            wbatch |= bmd.dims[i] != 1;
            grows *= amd.dims[i];
        }
        bool done = false;
        if (!wbatch && (st = gemv_matmul(S, n, av, bv, tr, bias ? biasv : -1, steps, k, grows, amd.dims[nd - 1], N, &done)))
            return st;
        if (done) return GR_OK;
    }
    int pnd = rows ? 2 : nd, saved_e[DN_MAX_STEPS], saved_v[DN_MAX_STEPS], nsaved = 0;
    dnnl_memory_desc_t dst_nd = dst;
    if (rows) {
        int64_t a2[2] = {rows, amd.dims[nd - 1]}, d2[2] = {rows, N}, b2[2] = {bmd.dims[nd - 2], N};
        dn_plain_md(&amd, 2, a2);
        dn_plain_md(&dst, 2, d2);
        if (tr) transposed_md(&bmd, 2, S->vals.data[bv].md.ndims, S->vals.data[bv].md.dims);
        else dn_plain_md(&bmd, 2, b2);
        bany = bmd;
        if (bconst) dnnl_memory_desc_init_by_tag(&bany, 2, bmd.dims, dnnl_f32, dnnl_format_tag_any);
        for (int i = 0; i < k && !st; i++) {
            if (steps[i].kind != STEP_BINARY) continue;
            int e = steps[i].src1, v = S->ent_val[e];
            int cn = dn_entry_ndim(S, e);
            int64_t c2[2] = {cn == nd ? rows : 1, cn ? dn_entry_shape(S, e)[cn - 1] : 1};
            dnnl_memory_desc_t vmd;
            dn_plain_md(&vmd, 2, c2);
            if (!(st = dn_plain(S, n, v, &v))) {
                saved_e[nsaved] = e;
                saved_v[nsaved++] = S->ent_val[e];
                S->ent_val[e] = dn_alias_new(S, v, &vmd);
            }
        }
    }
    if (bias) dn_plain_expand(&biasmd, &S->vals.data[biasv].md, pnd);
    dnnl_matmul_desc_t desc;
    dnnl_status_t ds = dnnl_matmul_desc_init(&desc, &amd, &bany, biasv >= 0 ? &biasmd : NULL, &dst);
    if (!st && ds != dnnl_success) st = dn_fail(S, n, ds, "invalid matmul");
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0;
    dnnl_primitive_desc_t pd;
    /* constant weights in their own layout first: no reordered copy of them (convnext_tiny:
     * 114 MB less), and oneDNN 2.6's brgemm / gemm read plain weights as fast; `any` when
     * that takes fewer post-ops or lands on ref. Transposed weights always get `any`. */
    bool placed = false;
    dnnl_matmul_desc_t pdesc;
    if (!st && bconst && !tr &&
        dnnl_matmul_desc_init(&pdesc, &amd, &bmd, biasv >= 0 ? &biasmd : NULL, &dst) == dnnl_success) {
        if (fuse_create(S, n, &pdesc, pnd, steps, k, &pd, &used, args, &na) == GR_OK) {
            const char *impl = NULL;
            placed = used == k && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
                     impl && strncmp(impl, "ref", 3);
            if (!placed) dnnl_primitive_desc_destroy(pd);
        } else if (S->diag) {
            gr_diag_clear(S->diag);
        }
        if (!placed) na = used = 0;
    }
    /* dnnl.transpose_weights (default on): oneDNN 2.6's gemm:jit (the matmul on AVX2, where
     * brgemm needs AVX-512) reads plain K x N weights slower than transposed ones when the
     * product widens (N > K) and has few rows; measured per primitive at AVX2, min of 20 runs:
     * convnext_tiny's 4x expansions at 49 rows 2.5 -> 1.5 ms, at 196 rows 1.62 -> 1.33 ms,
     * bert_encoder's (96 rows, 384 -> 1536) 0.77 -> 0.72 ms; from 784 rows on both are alike.
     * Square and narrowing products (384 -> 384, 1536 -> 384 at 96 rows; convnext's 4x
     * reductions) and single rows (GEMV) are 10-20% slower transposed, so they keep the
     * plain weights. The transposed copy is the engine's own: the original is released
     * after prepare (runtime/json_runtime.h "Constant ownership"), so it costs no memory. */
    int64_t mrows = dst.dims[pnd - 2], kdim = amd.dims[pnd - 1], ncols = dst.dims[pnd - 1];
    if (!st && placed && S->opts.transpose_weights && pnd <= 4 && mrows >= 16 && mrows < 512 && ncols > kdim &&
        gemm_impl(pd)) {
        static const dnnl_format_tag_t TR[5] = {0, 0, dnnl_ba, dnnl_acb, dnnl_abdc};
        dnnl_memory_desc_t btr;
        dnnl_primitive_desc_t tpd;
        int tused = 0, tna = 0;
        dn_arg targs[4 + DN_MAX_STEPS];
        if (dnnl_memory_desc_init_by_tag(&btr, pnd, bmd.dims, dnnl_f32, TR[pnd]) == dnnl_success &&
            dnnl_matmul_desc_init(&pdesc, &amd, &btr, biasv >= 0 ? &biasmd : NULL, &dst) == dnnl_success &&
            fuse_create(S, n, &pdesc, pnd, steps, k, &tpd, &tused, targs, &tna) == GR_OK) {
            if (tused == k && gemm_impl(tpd)) {
                dnnl_primitive_desc_destroy(pd);
                pd = tpd;
                used = tused;
                na = tna;
                memcpy(args, targs, sizeof(dn_arg) * (size_t)tna);
            } else {
                dnnl_primitive_desc_destroy(tpd);
            }
        } else if (S->diag) {
            gr_diag_clear(S->diag);
        }
    }
    if (!st && !placed) st = fuse_create(S, n, &desc, pnd, steps, k, &pd, &used, args, &na);
    if (st) {
        while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
        return st;
    }
    int bin = bv;
    if (bconst) {
        int view = dn_alias_new(S, bv, &bmd);
        st = dn_as(S, n, view, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &bin);
        if (st) {
            dnnl_primitive_desc_destroy(pd);
            while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
            return st;
        }
    }
    args[na++] = (dn_arg){DNNL_ARG_SRC, av, amd, NULL};
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS, bin, bconst ? S->vals.data[bin].md : bmd, NULL};
    if (biasv >= 0) {
        args[na++] = (dn_arg){DNNL_ARG_BIAS, biasv, biasmd, NULL};
    }
    int e = chain_out(S, n, steps, used);
    st = finish(S, n, pd, args, na, steps, used, &dst);
    while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
    if (!st && rows) {
        S->ent_val[e] = dn_alias_new(S, S->ent_val[e], &dst_nd);
        S->stats.ncollapsed++;
    }
    return st;
}

/* A primitive of one source value xv (pooling, resampling): the first of (src as it is, dst
 * as planned), (dst any), (src and dst channels-last) that gets a jit kernel, else the first
 * one. init builds the op desc for a src / dst pair. */
typedef dnnl_status_t (*src_desc_fn)(void *desc, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                     const void *ctx);
static gr_status single_src_create(dn_state *S, const rt_json_node *n, int xv, const dnnl_memory_desc_t *dst, int nd,
                                   const int64_t *os, src_desc_fn init, const void *ctx, void *desc, const dn_step *steps,
                                   int k, const char *why, dnnl_primitive_desc_t *pd, int *used, dn_arg *args,
                                   int *na) {
    dnnl_memory_desc_t ax[3], ad[3], xcl;
    dnnl_dims_t od;
    for (int i = 0; i < nd; i++) od[i] = os[i];
    int nalt = 0;
    ax[nalt] = S->vals.data[xv].md;
    ad[nalt++] = *dst;
    dnnl_memory_desc_init_by_tag(&ad[nalt], nd, od, dnnl_f32, dnnl_format_tag_any);
    if (!dnnl_memory_desc_equal(&ad[nalt], dst)) ax[nalt++] = ax[0];
    dn_channels_last(&xcl, &ax[0]);
    if (!dnnl_memory_desc_equal(&xcl, &ax[0])) {
        dnnl_memory_desc_t op;
        dn_plain_md(&op, nd, os);
        ax[nalt] = xcl;
        dn_channels_last(&ad[nalt], &op);
        nalt++;
    }
    dnnl_status_t ds = dnnl_success;
    gr_status st = GR_OK;
    int pick = -1, base = *na;
    *pd = NULL;
    S->sum_ok = true;
    for (int t = 0; t <= nalt && !*pd && !st; t++) {
        int a = t < nalt ? t : 0;
        if ((ds = init(desc, &ax[a], &ad[a], ctx)) != dnnl_success) break;
        if (t == nalt) S->ref_why = why;
        *na = base;
        ds = try_create(S, n, desc, nd, steps, k, 0, t < nalt, pd, used, args, na, &st);
        if (ds != dnnl_success) *pd = NULL;
        else pick = a;
    }
    S->sum_ok = false;
    if (st) return st;
    if (!*pd) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    if (!dn_pd_is_ref(*pd)) S->ref_why = NULL;
    int xin;
    if ((st = dn_as(S, n, xv, &ax[pick], &xin))) {
        dnnl_primitive_desc_destroy(*pd);
        return st;
    }
    args[(*na)++] = (dn_arg){DNNL_ARG_SRC, xin, ax[pick], NULL};
    return GR_OK;
}

/* ---------------------------------------------------------------- pooling ---- */

typedef struct pool_ctx {
    dnnl_alg_kind_t alg;
    const int64_t *s, *kk, *d, *pl, *pr;
} pool_ctx;

static dnnl_status_t pool_init(void *desc, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst, const void *ctx) {
    const pool_ctx *c = ctx;
    return dnnl_pooling_v2_forward_desc_init(desc, dnnl_forward_inference, c->alg, src, dst, c->s, c->kk, c->d, c->pl, c->pr);
}

static gr_status op_pool(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (st) return st;
    bool is_max = n->op == IR_OP_MAX_POOL1D || n->op == IR_OP_MAX_POOL2D || n->op == IR_OP_ADAPTIVE_MAX_POOL2D;
    bool adaptive = n->op == IR_OP_ADAPTIVE_AVG_POOL1D || n->op == IR_OP_ADAPTIVE_AVG_POOL2D || n->op == IR_OP_ADAPTIVE_MAX_POOL2D;
    int nd = dn_entry_ndim(S, x), sd = nd - 2;
    if (sd < 1 || sd > 2) return dn_fail(S, n, dnnl_success, "rank");
    const char *cx = sd == 1 ? "NCW" : "NCHW", *lay = dn_attr_str(n, "layout", cx);
    /* NHWC (any permutation): canonical axes over strided views, as for convolutions */
    dnnl_dims_t xs, xstr, os, ostr;
    if (n->ndims[0] != nd || strcmp(dn_attr_str(n, "out_layout", lay), lay) ||
        !layout_view(lay, cx, dn_entry_shape(S, x), xs, xstr) || !layout_view(lay, cx, n->shapes[0], os, ostr))
        return dn_fail(S, n, dnnl_success, "layouts that are not permutations of NCHW, or out_layout other than layout");
    bool perm = strcmp(lay, cx) != 0;
    dnnl_dims_t kk, s, d, pl, pr;
    if (adaptive) {
        for (int i = 0; i < sd; i++) {
            if (os[2 + i] <= 0 || xs[2 + i] % os[2 + i])
                return dn_fail(S, n, dnnl_success, "adaptive pooling with uneven windows is not supported");
            kk[i] = s[i] = xs[2 + i] / os[2 + i];
            d[i] = pl[i] = pr[i] = 0;
        }
    } else {
        int64_t ps[2] = {1, 1}, st2[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
        int c;
        if ((c = dn_attr_ints(n, "pool_size", ps, 2)) == 1) ps[1] = ps[0];
        if ((c = dn_attr_ints(n, "strides", st2, 2)) == 1) st2[1] = st2[0];
        if ((c = dn_attr_ints(n, "dilation", dl, 2)) == 1) dl[1] = dl[0];
        c = dn_attr_ints(n, "padding", pad, 4);
        if (c == 1) pad[1] = pad[2] = pad[3] = pad[0];
        else if (c == sd)
            for (int i = 0; i < sd; i++) pad[sd + i] = pad[i];
        for (int i = 0; i < sd; i++) {
            kk[i] = ps[i];
            s[i] = st2[i];
            d[i] = dl[i] - 1;
            pl[i] = pad[i];
            /* ceil_mode: the output size decides the right padding */
            pr[i] = (os[2 + i] - 1) * s[i] + (kk[i] - 1) * dl[i] + 1 - xs[2 + i] - pl[i];
            if (pr[i] < 0) pr[i] = 0;
        }
        if (!is_max && dn_attr_bool(n, "ceil_mode", false) && dn_attr_bool(n, "count_include_pad", false))
            return dn_fail(S, n, dnnl_success, "avg pooling with ceil_mode and count_include_pad is not supported");
    }
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max
                          : (!adaptive && dn_attr_bool(n, "count_include_pad", false)) ? dnnl_pooling_avg_include_padding
                                                                                       : dnnl_pooling_avg_exclude_padding;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = chain_of(S, n, NULL, steps, true, nd, os, &dst);
    /* permuted: strided views, and only eltwise post-ops (binary ones see the node's shapes) */
    if (perm) {
        dnnl_dims_t od;
        for (int i = 0; i < nd; i++) od[i] = os[i];
        if ((st = layout_in(S, n, &xv, nd, xs, xstr))) return st;
        dnnl_memory_desc_init_by_strides(&dst, nd, od, dnnl_f32, ostr);
        for (int i = 0; i < k; i++)
            if (steps[i].kind != STEP_ELTWISE) k = i;
    }
    dnnl_memory_desc_t operm = dst;
    dnnl_pooling_v2_desc_t desc;
    pool_ctx pc = {alg, s, kk, d, pl, pr};
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used;
    dnnl_primitive_desc_t pd;
    st = single_src_create(S, n, xv, &dst, nd, os, pool_init, &pc, &desc, steps, k,
                           "no jit pooling for these shapes in any layout tried (src's, dst any, channels-last)", &pd, &used,
                           args, &na);
    if (st) return st;
    int oe = chain_out(S, n, steps, used);
    st = finish(S, n, pd, args, na, steps, used, NULL);
    return st || !perm ? st : layout_out(S, n, oe, &operm);
}

/* ------------------------------------------------------- eltwise / binary ---- */

/* A unary node, a binary node with a scalar constant, an x * f(x) form, or a binary node of
 * two tensors (one may broadcast): one eltwise or binary primitive, plus post-ops. */
static gr_status op_elemwise(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    dn_step first, steps[DN_MAX_STEPS + 1];
    int x = -1, npre = 0;
    for (uint32_t k = 0; k < 2 && x < 0; k++) {
        int e = dn_arg_entry(S, n, k);
        if (e >= 0 && S->ent_val[e] >= 0 && dn_match_step(S, e, n, false, &first)) x = e;
    }
    if (x < 0 && (n->op == IR_OP_SUBTRACT || n->op == IR_OP_DIVIDE)) {
        /* y - x = -(x - y); y / x = x^-1 * y, for a broadcast y */
        int a0 = dn_arg_entry(S, n, 0), a1 = dn_arg_entry(S, n, 1);
        int oe = dn_out_entry(S, n);
        if (a0 >= 0 && a1 >= 0 && S->ent_val[a0] >= 0 && S->ent_val[a1] >= 0 && dn_entry_ndim(S, a1) == n->ndims[0] &&
            !memcmp(dn_entry_shape(S, a1), n->shapes[0], sizeof(int64_t) * (size_t)n->ndims[0])) {
            memset(&first, 0, sizeof first);
            first.nnodes = 1;
            first.nodes[0] = n;
            first.out = oe;
            dn_step pre = first;
            pre.nnodes = 0;
            if (n->op == IR_OP_SUBTRACT) {
                first.kind = STEP_BINARY;
                first.alg = dnnl_binary_sub;
                first.src1 = a0;
                pre.kind = STEP_ELTWISE;
                pre.alg = dnnl_eltwise_linear;
                pre.alpha = -1.f;
            } else {
                first.kind = STEP_ELTWISE;
                first.alg = dnnl_eltwise_pow;
                first.alpha = 1.f;
                first.beta = -1.f;
                pre.kind = STEP_BINARY;
                pre.alg = dnnl_binary_mul;
                pre.src1 = a0;
            }
            steps[npre++] = pre;
            x = a1;
        }
    }
    if (x < 0) {
        /* x op x (a square as x * x): one binary primitive reading x twice */
        dnnl_alg_kind_t alg = dn_binary_alg(n->op, NULL);
        int a0 = dn_arg_entry(S, n, 0);
        if (alg != dnnl_alg_kind_undef && a0 >= 0 && a0 == dn_arg_entry(S, n, 1) && S->ent_val[a0] >= 0) {
            memset(&first, 0, sizeof first);
            first.kind = STEP_BINARY;
            first.alg = alg;
            first.src1 = a0;
            first.nnodes = 1;
            first.nodes[0] = n;
            first.out = dn_out_entry(S, n);
            x = a0;
        }
    }
    if (x < 0) return dn_fail(S, n, dnnl_success, "unsupported operands (both broadcast)");
    int xv = S->ent_val[x];
    int nd = S->vals.data[xv].md.ndims;
    const rt_json_node *last = first.nodes[first.nnodes - 1];
    dnnl_memory_desc_t ignore;
    int k = npre + chain_of(S, last, NULL, steps + npre, true, nd, n->shapes[0], &ignore);
    dn_consume(S, &first, 1);
    S->stats.npostops--;          /* the first step is the primitive itself */
    S->stats.nfused_nodes -= (uint32_t)first.nnodes > 0 ? 1 : 0;
    int v, used;
    gr_status st = dn_elem_prim(S, n, &first, xv, steps, k, npre, true, &v, &used);
    if (st) return st;
    S->ent_val[used > npre ? steps[used - 1].out : first.out] = v;
    return GR_OK;
}

/* Operand value v of a binary as md `want` (nd dims): a lower-rank operand is viewed plain with
 * leading 1s first. */
static gr_status src1_as(dn_state *S, const rt_json_node *n, int v, int nd, const dnnl_memory_desc_t *want, int *out) {
    if (S->vals.data[v].md.ndims != nd) {
        gr_status st = dn_plain(S, n, v, &v);
        if (st) return st;
        dnnl_memory_desc_t pe;
        dn_plain_expand(&pe, &S->vals.data[v].md, nd);
        v = dn_alias_new(S, v, &pe);
    }
    return dn_as(S, n, v, want, out);
}

/* dims of value v expanded with leading 1s to nd */
static void dims_expand(dn_state *S, int v, int nd, int64_t *out) {
    const dnnl_memory_desc_t *md = &S->vals.data[v].md;
    int pad = nd - md->ndims;
    for (int i = 0; i < nd; i++) out[i] = i < pad ? 1 : md->dims[i - pad];
}

gr_status dn_elem_prim(dn_state *S, const rt_json_node *n, const dn_step *first, int xv, const dn_step *steps, int k,
                       int kmin, bool consume, int *out, int *kused) {
    int nd = S->vals.data[xv].md.ndims;
    bool bin = first->kind == STEP_BINARY;
    int v1 = bin ? S->ent_val[first->src1] : -1;
    int64_t d1[DNNL_MAX_NDIMS];
    bool full1 = false;
    if (bin) {
        if (S->vals.data[v1].md.ndims > nd) return dn_fail(S, n, dnnl_success, "operand of higher rank than the output");
        dims_expand(S, v1, nd, d1);
        full1 = S->vals.data[v1].md.ndims == nd && !memcmp(d1, S->vals.data[xv].md.dims, sizeof(int64_t) * (size_t)nd);
    }
    /* layouts to try until one gets a jit kernel (oneDNN 2.6: jit binary wants a broadcast
     * operand blocked like src0 -- 8 channels on AVX2, 16 on AVX-512 -- and jit eltwise rejects
     * zero-padded blocks for ops with f(0) != 0):
     *   0: x as it is, the other operand plain (as it is when full-size);
     *   1: the other operand in x's layout;
     *   2: both channels-last (x reordered) */
    dnnl_memory_desc_t ax[5], a1[5];
    int nalt = 0;
    ax[0] = S->vals.data[xv].md;
    if (bin) {
        if (full1) a1[0] = S->vals.data[v1].md;
        else dn_plain_md(&a1[0], nd, d1);
    }
    nalt = 1;
    if (bin && dn_md_like(&a1[nalt], &ax[0], nd, d1) && !dnnl_memory_desc_equal(&a1[nalt], &a1[0])) ax[nalt++] = ax[0];
    dnnl_memory_desc_t cl;
    dn_channels_last(&cl, &ax[0]);
    if (!dnnl_memory_desc_equal(&cl, &ax[0]) && !dn_is_plain(&ax[0])) {
        ax[nalt] = cl;
        if (bin && !dn_md_like(&a1[nalt], &cl, nd, d1)) a1[nalt] = a1[0];
        nalt++;
    }
    /*   3: both plain (a broadcast over channels, [N,1,H,W] as layer norms over channels
     *      have it, is jit only for plain src0) */
    if (!dn_is_plain(&ax[0])) {
        dn_plain_like(&ax[nalt], &ax[0]);
        if (bin) dn_plain_md(&a1[nalt], nd, d1);
        nalt++;
    }
    /*   4: a broadcast along the last axis only (x - mean(x, -1) of a decomposed layer norm),
     *      which no jit kernel takes: plain x and operand seen with the last axis moved to
     *      axis 1 (x then reads as channels-last, the operand as a per-position one); only
     *      eltwise post-ops then. axv / a1v: the values' layouts, ax / a1 what the primitive
     *      sees. */
    dnnl_memory_desc_t axv[5], a1v[5];
    for (int a = 0; a < nalt; a++) {
        axv[a] = ax[a];
        if (bin) a1v[a] = a1[a];
    }
    int palt = -1, kperm = kmin;
    const int64_t *xd = S->vals.data[xv].md.dims;
    bool pre_elt = true;
    for (int i = 0; i < kmin; i++) pre_elt &= steps[i].kind == STEP_ELTWISE;
    if (bin && !full1 && nd >= 3 && d1[nd - 1] == 1 && xd[nd - 1] > 1 && pre_elt) {
        int perm[DNNL_MAX_NDIMS];
        perm[0] = 0;
        perm[nd - 1] = 1;
        for (int i = 1; i < nd - 1; i++) perm[i] = i + 1;
        dn_plain_like(&axv[nalt], &S->vals.data[xv].md);
        dn_plain_md(&a1v[nalt], nd, d1);
        if (dnnl_memory_desc_permute_axes(&ax[nalt], &axv[nalt], perm) == dnnl_success &&
            dnnl_memory_desc_permute_axes(&a1[nalt], &a1v[nalt], perm) == dnnl_success) {
            palt = nalt++;
            while (kperm < k && steps[kperm].kind == STEP_ELTWISE) kperm++;
        }
    }
    union {
        dnnl_eltwise_desc_t e;
        dnnl_binary_desc_t b;
    } desc;
    dnnl_status_t ds = dnnl_success;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0, pick = -1;
    dnnl_primitive_desc_t pd = NULL;
    gr_status st = GR_OK;
    /* each layout wanting a jit kernel, then the first one taking what oneDNN has */
    for (int t = 0; t <= nalt && !pd && !st; t++) {
        int a = t < nalt ? t : 0;
        if (bin) ds = dnnl_binary_desc_init(&desc.b, first->alg, &ax[a], &a1[a], &ax[a]);
        else ds = dnnl_eltwise_forward_desc_init(&desc.e, dnnl_forward_inference, first->alg, &ax[a], first->alpha, first->beta);
        if (ds != dnnl_success && a == 0) return dn_fail(S, n, ds, "invalid elementwise op");
        if (ds != dnnl_success) continue;
        na = bin ? 1 : 0;
        if (t == nalt)
            S->ref_why = bin ? "no jit binary for these layouts / broadcast (tried the operand plain, in src0's layout, "
                               "channels-last, all plain)"
                             : "no jit eltwise for this layout / algorithm (tried src's layout, channels-last, plain)";
        ds = try_create(S, n, &desc, nd, steps, a == palt ? kperm : k, kmin, t < nalt, &pd, &used, args, &na, &st);
        if (ds != dnnl_success) pd = NULL;
        else pick = a;
    }
    if (st) return st;
    if (!pd) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    int xin = xv, v1in = v1;
    st = dn_as(S, n, xv, &axv[pick], &xin);
    if (!st && bin) st = src1_as(S, n, v1, nd, &a1v[pick], &v1in);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    if (bin) args[0] = (dn_arg){DNNL_ARG_SRC_1, v1in, a1[pick], NULL};
    args[na++] = (dn_arg){DNNL_ARG_SRC, xin, ax[pick], NULL};
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    /* the permuted view writes x's plain layout */
    int v = dn_val_new(S, V_TMP, pick == palt ? &axv[pick] : &dmd);
    args[na++] = (dn_arg){DNNL_ARG_DST, v, dmd, NULL};
    if (consume) dn_consume(S, steps, used);
    else if (first->out >= 0) gr_vec_push(&S->pend, S->ent_node[first->out].node);
    st = dn_emit(S, n, pd, args, na, false);
    if (st) return st;
    *out = v;
    *kused = used;
    return GR_OK;
}

/* ---------------------------------------------------------------- softmax ---- */

static gr_status op_softmax(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axis = dn_attr_int(n, "axis", -1);
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) return dn_fail(S, n, dnnl_success, "axis out of range");
    dnnl_softmax_v2_desc_t desc;
    dnnl_memory_desc_t dst = S->vals.data[xv].md;
    dnnl_status_t ds = dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                                         n->op == IR_OP_LOG_SOFTMAX ? dnnl_softmax_log : dnnl_softmax_accurate,
                                                         &S->vals.data[xv].md, &dst, (int)axis);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid softmax");
    dnnl_primitive_desc_t pd;
    ds = dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL}};
    return finish(S, n, pd, args, 1, NULL, 0, NULL);
}

/* --------------------------------------------------------- normalization ---- */

static gr_status op_layer_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), gmm = dn_arg_entry(S, n, 1), bet = dn_arg_entry(S, n, 2), xv = -1, gv = -1, bv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (!st) st = need_val(S, n, gmm, &gv);
    if (!st) st = need_val(S, n, bet, &bv);
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (!st) st = dn_plain(S, n, gv, &gv);
    if (!st) st = dn_plain(S, n, bv, &bv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axes[8];
    int na = dn_attr_ints(n, "axes", axes, 8);
    if (na != 1 || (axes[0] != -1 && axes[0] != nd - 1))
        return dn_fail(S, n, dnnl_success, "layer_norm over axes other than the last one is not supported");
    int64_t C = S->vals.data[xv].md.dims[nd - 1];
    if (dnnl_memory_desc_get_size(&S->vals.data[gv].md) != (size_t)C * 4 || dnnl_memory_desc_get_size(&S->vals.data[bv].md) != (size_t)C * 4)
        return dn_fail(S, n, dnnl_success, "gamma/beta sizes");
    unsigned flags = (dn_attr_bool(n, "scale", true) ? dnnl_use_scale : 0) | (dn_attr_bool(n, "center", true) ? dnnl_use_shift : 0);
    dnnl_layer_normalization_desc_t desc;
    dnnl_status_t ds = dnnl_layer_normalization_forward_desc_init(&desc, dnnl_forward_inference, &S->vals.data[xv].md, NULL,
                                                                  (float)dn_attr_float(n, "epsilon", 1e-5), flags);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid layer_norm");
    dnnl_primitive_desc_t pd;
    ds = dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    dnnl_memory_desc_t cmd;
    dnnl_dims_t cd = {C};
    dnnl_memory_desc_init_by_strides(&cmd, 1, cd, dnnl_f32, NULL);
    dn_arg args[5] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL}};
    int k = 1;
    if (flags & dnnl_use_scale) args[k++] = (dn_arg){DNNL_ARG_SCALE, gv, cmd, NULL};
    if (flags & dnnl_use_shift) args[k++] = (dn_arg){DNNL_ARG_SHIFT, bv, cmd, NULL};
    dnnl_memory_desc_t xcopy = S->vals.data[xv].md;
    return finish(S, n, pd, args, k, NULL, 0, &xcopy);
}

static gr_status op_batch_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int v[5];
    for (uint32_t i = 0; i < 5; i++) {
        gr_status st = need_val(S, n, dn_arg_entry(S, n, i), &v[i]);
        if (st) return st;
        if (i && (st = dn_plain(S, n, v[i], &v[i]))) return st;
    }
    int row = dn_out_entry(S, n);
    for (uint32_t o = 1; o < n->noutputs; o++)
        if (S->cons[row + o].len || S->is_head[row + o])
            return dn_fail(S, n, dnnl_success, "batch_norm statistics outputs are not supported");
    if (dn_attr_int(n, "axis", 1) != 1) return dn_fail(S, n, dnnl_success, "batch_norm on an axis other than 1");
    const dnnl_memory_desc_t xmd_copy = S->vals.data[v[0]].md, *xmd = &xmd_copy;
    int64_t C = xmd->dims[1];
    unsigned flags = dnnl_use_global_stats | (dn_attr_bool(n, "scale", true) ? dnnl_use_scale : 0) |
                     (dn_attr_bool(n, "center", true) ? dnnl_use_shift : 0);
    dnnl_batch_normalization_desc_t desc;
    dnnl_status_t ds = dnnl_batch_normalization_forward_desc_init(&desc, dnnl_forward_inference, xmd,
                                                                  (float)dn_attr_float(n, "epsilon", 1e-5), flags);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid batch_norm");
    dnnl_primitive_desc_t pd;
    ds = dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    dnnl_memory_desc_t cmd;
    dnnl_dims_t cd = {C};
    dnnl_memory_desc_init_by_strides(&cmd, 1, cd, dnnl_f32, NULL);
    dn_arg args[6] = {{DNNL_ARG_SRC, v[0], *xmd, NULL}, {DNNL_ARG_MEAN, v[3], cmd, NULL}, {DNNL_ARG_VARIANCE, v[4], cmd, NULL}};
    int k = 3;
    if (flags & dnnl_use_scale) args[k++] = (dn_arg){DNNL_ARG_SCALE, v[1], cmd, NULL};
    if (flags & dnnl_use_shift) args[k++] = (dn_arg){DNNL_ARG_SHIFT, v[2], cmd, NULL};
    return finish(S, n, pd, args, k, NULL, 0, xmd);
}

/* ---------------------------------------------------------------- concat ---- */

/* The sole kernel consumer of entry e when it is op `op` reading e as its first argument. */
static const rt_json_node *sole_op(dn_state *S, int e, ir_op_id op) {
    if (e < 0 || S->is_head[e] || S->cons[e].len != 1) return NULL;
    const rt_json_node *c = S->cons[e].data[0];
    return c->op == op && dn_arg_entry(S, c, 0) == e ? c : NULL;
}

/* ShuffleNet's channel shuffle: concat over axis 1 of g sources of c channels, reshape to
 * (N, g, c, ...), permute_dims swapping axes 1 and 2, reshape to (N, g*c, ...). Output channel
 * j*g + k is channel j of source k, so each source is reordered once, from its own layout,
 * straight into its interleaved channels of the plain output: g reorders of one source each
 * instead of a reorder to a common layout, the concat, the permute's reorder (3 passes over
 * the whole tensor). */
static bool try_shuffle(dn_state *S, const rt_json_node *n, uint32_t cnt, const dn_arg *src, int64_t axis,
                        gr_status *st) {
    int nd = n->ndims[0];
    if (axis != 1 || cnt < 2 || nd < 3 || nd + 1 > DNNL_MAX_NDIMS) return false;
    const dnnl_memory_desc_t m0c = S->vals.data[src[0].val].md, *m0 = &m0c;   /* vals grows below */
    for (uint32_t i = 1; i < cnt; i++)
        for (int d = 0; d < nd; d++)
            if (S->vals.data[src[i].val].md.dims[d] != m0->dims[d]) return false;
    int64_t c = m0->dims[1];
    const rt_json_node *r1 = sole_op(S, dn_out_entry(S, n), IR_OP_RESHAPE);
    const rt_json_node *p = r1 ? sole_op(S, dn_out_entry(S, r1), IR_OP_PERMUTE_DIMS) : NULL;
    const rt_json_node *r2 = p ? sole_op(S, dn_out_entry(S, p), IR_OP_RESHAPE) : NULL;
    if (!r2 || r1->ndims[0] != nd + 1 || p->ndims[0] != nd + 1 || r2->ndims[0] != nd) return false;
    if (r1->shapes[0][0] != m0->dims[0] || r1->shapes[0][1] != (int64_t)cnt || r1->shapes[0][2] != c) return false;
    for (int d = 2; d < nd; d++)
        if (r1->shapes[0][d + 1] != m0->dims[d]) return false;
    int64_t axes[DNNL_MAX_NDIMS];
    if (dn_attr_ints(p, "axes", axes, DNNL_MAX_NDIMS) != nd + 1 || axes[0] != 0 || axes[1] != 2 || axes[2] != 1) return false;
    for (int d = 3; d <= nd; d++)
        if (axes[d] != d) return false;
    for (int d = 0; d < nd; d++)
        if (r2->shapes[0][d] != n->shapes[0][d]) return false;
    /* the output plain, or channels-last when the first source is (the interleaving is then
     * a copy of single channels within each position, not a transposition, and the next
     * unit's slices are channels-last views) */
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, nd, n->shapes[0]);
    if (!S->opts.no_layout_plan && !S->is_head[dn_out_entry(S, r2)] && cl_order(m0)) dn_channels_last(&omd, &omd);
    int v = dn_val_new(S, V_TMP, &omd);
    for (uint32_t k = 0; k < cnt; k++) {
        /* source k's channels j at output channels j*cnt + k */
        dnnl_dims_t vs;
        for (int d = 0; d < nd; d++) vs[d] = omd.format_desc.blocking.strides[d];
        vs[1] *= (int64_t)cnt;
        dnnl_memory_desc_t view;
        dnnl_memory_desc_init_by_strides(&view, nd, m0->dims, dnnl_f32, vs);
        view.offset0 = (int64_t)k * omd.format_desc.blocking.strides[1];
        const dnnl_memory_desc_t smd0 = S->vals.data[src[k].val].md, *smd = &smd0;
        dnnl_primitive_desc_t pd;
        dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, smd, S->eng, &view, S->eng, S->attr_plain);
        if (ds != dnnl_success) {
            *st = dn_fail(S, n, ds, "oneDNN rejects the channel-shuffle reorder");
            return true;
        }
        dn_arg a[2] = {{DNNL_ARG_FROM, src[k].val, *smd, NULL}, {DNNL_ARG_TO, v, view, NULL}};
        const rt_json_node *folded[3] = {r1, p, r2};
        for (int f = 0; f < 3; f++) gr_vec_push(&S->pend, folded[f]);
        *st = dn_emit(S, n, pd, a, 2, false);
        if (*st) return true;
    }
    const rt_json_node *folded[3] = {r1, p, r2};
    for (int f = 0; f < 3; f++) {
        if (!S->consumed[folded[f] - S->node0]) S->stats.nfused_nodes++;
        S->consumed[folded[f] - S->node0] = true;
    }
    S->ent_val[dn_out_entry(S, r2)] = v;
    *st = GR_OK;
    return true;
}

static gr_status op_concat(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    json_t *a0 = json_array_get(json_object_get(n->attrs, "args"), 0);
    json_t *tup = a0 ? json_object_get(a0, "tuple") : NULL;
    uint32_t cnt = tup ? (uint32_t)json_array_size(tup) : n->ninputs;
    if (cnt == 0 || cnt > 64) return dn_fail(S, n, dnnl_success, "concat arity");
    dnnl_memory_desc_t mds[64];
    dn_arg args[66];
    int nd = n->ndims[0];
    for (uint32_t i = 0; i < cnt; i++) {
        int e;
        if (tup) {
            json_t *in = json_object_get(json_array_get(tup, i), "in");
            e = json_is_integer(in) ? dn_in_entry(S, n, (uint32_t)json_integer_value(in)) : -1;
        } else {
            e = dn_in_entry(S, n, i);
        }
        int v = -1;
        gr_status st = need_val(S, n, e, &v);
        if (st) return st;
        if (S->vals.data[v].md.ndims != nd) return dn_fail(S, n, dnnl_success, "rank");
        mds[i] = S->vals.data[v].md;
        args[i] = (dn_arg){DNNL_ARG_MULTIPLE_SRC + (int)i, v, mds[i], NULL};
    }
    int64_t axis = dn_attr_int(n, "axis", 0);
    if (axis < 0) axis += nd;
    gr_status sst;
    if (try_shuffle(S, n, cnt, args, axis, &sst)) return sst;
    /* the sources as they are; oneDNN's jit concat wants them in one layout (ref:any for mixed
     * layouts or channel blocks cut by the axis): then all in the first one's layout,
     * channels-last, plain */
    dnnl_memory_desc_t (*alt)[64] = malloc(sizeof(*alt) * 4);
    if (!alt) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    int nalt = 0;
    memcpy(alt[nalt++], mds, sizeof(mds[0]) * cnt);
    bool ok1 = true, ok2 = true, plain = true;
    for (uint32_t i = 0; i < cnt; i++) {
        ok1 &= dn_md_like(&alt[nalt][i], &mds[0], nd, mds[i].dims);
        dn_channels_last(&alt[nalt + 1][i], &mds[i]);
        ok2 &= nd >= 3 && nd <= 5;
        dn_plain_like(&alt[nalt + 2][i], &mds[i]);
        plain &= dn_is_plain(&mds[i]);
    }
    int base = nalt;
    if (ok1) nalt++;
    if (ok2) memcpy(alt[nalt++], alt[base + 1], sizeof(mds[0]) * cnt);
    if (!plain) memcpy(alt[nalt++], alt[base + 2], sizeof(mds[0]) * cnt);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_success;
    int pick = 0;
    for (int t = 0; t <= nalt && !pd; t++) {
        int a = t < nalt ? t : 0;
        if (t == nalt) S->ref_why = "no jit concat for these layouts (tried the sources' own, the first one's, channels-last, plain)";
        ds = dnnl_concat_primitive_desc_create(&pd, NULL, (int)cnt, (int)axis, alt[a], S->attr_plain, S->eng);
        if (ds != dnnl_success) {
            pd = NULL;
            if (t == nalt) break;
            continue;
        }
        if (t < nalt && dn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            continue;
        }
        pick = a;
    }
    if (!pd) {
        free(alt);
        return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    }
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    for (uint32_t i = 0; i < cnt; i++) {
        int v;
        gr_status st = dn_as(S, n, args[i].val, &alt[pick][i], &v);
        if (st) {
            free(alt);
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
        args[i] = (dn_arg){DNNL_ARG_MULTIPLE_SRC + (int)i, v, alt[pick][i], NULL};
    }
    free(alt);
    return finish(S, n, pd, args, (int)cnt, NULL, 0, NULL);
}

/* --------------------------------------------------------------- resize ---- */

static dnnl_status_t resample_init(void *desc, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                   const void *ctx) {
    return dnnl_resampling_forward_desc_init(desc, dnnl_forward_inference, *(const dnnl_alg_kind_t *)ctx, NULL, src, dst);
}

static gr_status op_resize(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (st) return st;
    if (strcmp(dn_attr_str(n, "layout", "NCHW"), "NCHW")) return dn_fail(S, n, dnnl_success, "layout");
    const char *method = dn_attr_str(n, "method", "linear");
    const char *ctm = dn_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    const char *rnd = dn_attr_str(n, "rounding_method", "round");
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    dnnl_alg_kind_t alg;
    if (!strcmp(method, "linear")) {
        if (strcmp(ctm, "half_pixel") && !(strcmp(ctm, "pytorch_half_pixel") == 0 && os[2] > 1 && os[3] > 1))
            return dn_fail(S, n, dnnl_success, "linear resize supports half_pixel coordinates only");
        alg = dnnl_resampling_linear;
    } else if (!strcmp(method, "nearest_neighbor") || !strcmp(method, "nearest")) {
        /* integer up-scaling: every coordinate mode / rounding agrees with oneDNN's */
        bool integer = os[2] % xs[2] == 0 && os[3] % xs[3] == 0;
        bool ok_mode = (!strcmp(ctm, "asymmetric") && (!strcmp(rnd, "floor") || !strcmp(rnd, ""))) ||
                       (!strcmp(ctm, "half_pixel") && (!strcmp(rnd, "round_prefer_ceil") || !strcmp(rnd, "round")||
                                                      !strcmp(rnd, "round_prefer_floor")));
        if (!integer || !ok_mode) return dn_fail(S, n, dnnl_success, "nearest resize supports integer up-scaling only");
        alg = dnnl_resampling_nearest;
    } else {
        return dn_fail(S, n, dnnl_success, "resize method not supported");
    }
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = chain_of(S, n, NULL, steps, true, 4, os, &dst);
    dnnl_resampling_desc_t desc;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used;
    dnnl_primitive_desc_t pd;
    st = single_src_create(S, n, xv, &dst, 4, os, resample_init, &alg, &desc, steps, k,
                           "no jit resampling for these shapes in any layout tried (src's, dst any, channels-last)", &pd,
                           &used, args, &na);
    if (st) return st;
    return finish(S, n, pd, args, na, steps, used, NULL);
}

/* --------------------------------------------------------------- reduce ---- */

/* A mean or max over every spatial axis of an (N, C, spatial...) tensor in a blocked or
 * channels-last layout (global average pooling as ONNX ReduceMean over H, W imports): a
 * pooling primitive with the whole map as its window reads the source in its producer's layout.
 * oneDNN 2.6's reductions have jit kernels for plain sources only (blocked: ref), so the other
 * way is a reorder of the whole map first (mnasnet1_0's 1280x7x7 head on avx512_core: reorder
 * 47 us + reduction 10 us in the model, the pooling alone 3 us). The result keeps the
 * pooling's layout; without keepdims, the (N, C) output is a plain view of it where the bytes
 * agree (dn_plain: one image, or C a multiple of the channel block), else a copy of N x C
 * values. *done false: no jit pooling, the caller reduces a plain copy. */
static gr_status global_pool(dn_state *S, const rt_json_node *n, int xv, const int64_t *kd, bool *done) {
    *done = false;
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims, sd = nd - 2;
    dnnl_alg_kind_t alg = INFO[n->op].alg == dnnl_reduction_mean ? dnnl_pooling_avg_exclude_padding
                          : INFO[n->op].alg == dnnl_reduction_max ? dnnl_pooling_max
                                                                  : dnnl_alg_kind_undef;
    if (S->opts.no_layout_plan || alg == dnnl_alg_kind_undef || sd < 1 || sd > 3 || dn_is_plain(&xmd)) return GR_OK;
    for (int i = 0; i < nd; i++)
        if (kd[i] != (i < 2 ? xmd.dims[i] : 1)) return GR_OK;
    bool keep = n->ndims[0] == nd;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = chain_of(S, n, NULL, steps, keep, nd, kd, &dst);
    dnnl_dims_t win, zero, od;
    for (int i = 0; i < sd; i++) {
        win[i] = xmd.dims[2 + i];
        zero[i] = 0;
    }
    for (int i = 0; i < nd; i++) od[i] = kd[i];
    /* dst `any`: the jit kernels want it in src's layout (a plain dst leaves ref); a region
     * output is copied out at the end */
    dnnl_memory_desc_init_by_tag(&dst, nd, od, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t desc;
    dnnl_status_t ds = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &xmd, &dst, win, win, zero,
                                                          zero, zero);
    if (ds != dnnl_success) return GR_OK;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used;
    dnnl_primitive_desc_t pd;
    gr_status st;
    S->sum_ok = true;
    ds = try_create(S, n, &desc, nd, steps, k, 0, true, &pd, &used, args, &na, &st);
    S->sum_ok = false;
    if (st || ds != dnnl_success) return st;
    *done = true;
    args[na++] = (dn_arg){DNNL_ARG_SRC, xv, xmd, NULL};
    int e = chain_out(S, n, steps, used);
    if ((st = finish(S, n, pd, args, na, steps, used, NULL)) || keep) return st;
    int pv;
    if ((st = dn_plain(S, n, S->ent_val[e], &pv))) return st;
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    S->ent_val[e] = dn_alias_new(S, pv, &omd);
    return GR_OK;
}

static gr_status op_reduce(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axes[DNNL_MAX_NDIMS];
    int na = dn_attr_ints(n, "axis", axes, DNNL_MAX_NDIMS);
    int64_t kd[DNNL_MAX_NDIMS];
    for (int i = 0; i < nd; i++) kd[i] = na < 0 ? 1 : S->vals.data[xv].md.dims[i];
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
        if (a < 0 || a >= nd) return dn_fail(S, n, dnnl_success, "axis out of range");
        kd[a] = 1;
    }
    bool done;
    if ((st = global_pool(S, n, xv, kd, &done)) || done) return st;
    if ((st = dn_plain(S, n, xv, &xv))) return st;
    dnnl_alg_kind_t alg = INFO[n->op].alg;
    const dnnl_memory_desc_t xmd_copy = S->vals.data[xv].md, *xmd = &xmd_copy;
    dnnl_memory_desc_t kmd, omd;
    dn_plain_md(&kmd, nd, kd);
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    if (dnnl_memory_desc_get_size(&kmd) != dnnl_memory_desc_get_size(&omd)) return dn_fail(S, n, dnnl_success, "shape");
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    /* post-ops only when the output keeps the rank (same dims for the chain) */
    int k = chain_of(S, n, NULL, steps, n->ndims[0] == nd, nd, kd, &ignore);
    dnnl_reduction_desc_t desc;
    dnnl_status_t ds = dnnl_reduction_desc_init(&desc, alg, xmd, &kmd, 0.f, 0.f);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid reduction");
    dn_arg args[4 + DN_MAX_STEPS];
    int nargs = 0, used;
    dnnl_primitive_desc_t pd;
    st = fuse_create_min(S, n, &desc, nd, steps, k, 0, &pd, &used, args, &nargs);
    if (st) return st;
    args[nargs++] = (dn_arg){DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL};
    int v = dn_val_new(S, V_TMP, &omd);
    args[nargs++] = (dn_arg){DNNL_ARG_DST, v, kmd, NULL};
    dn_consume(S, steps, used);
    st = dn_emit(S, n, pd, args, nargs, false);
    if (st) return st;
    S->ent_val[chain_out(S, n, steps, used)] = v;
    return GR_OK;
}

/* ------------------------------------------------------------ layout ops ---- */

/* reshape / flatten / squeeze / expand_dims: the plain data viewed with the new dims. */
static gr_status op_reshape(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    if (dnnl_memory_desc_get_size(&omd) != dnnl_memory_desc_get_size(&S->vals.data[xv].md))
        return dn_fail(S, n, dnnl_success, "reshape changes the size");
    S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &omd);
    return GR_OK;
}

/* A permute is a view of its input, without a copy, when the input's layout permuted is the
 * plain output (channels-last NCHW read as NHWC), or when it is the channels-last layout of
 * the output (plain NHWC read as NCHW) and the output is not a region output: its consumers
 * then read it channels-last, or reorder it as this permute would have. Otherwise a reorder
 * of the plain input into the plain output. */
static gr_status op_permute(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims, e = dn_out_entry(S, n);
    int perm[DNNL_MAX_NDIMS];
    if (!permute_perm(n, nd, perm)) return dn_fail(S, n, dnnl_success, "axes");
    dnnl_memory_desc_t pmd, omd, cl;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    dn_channels_last(&cl, &omd);
    if (!S->opts.no_layout_plan && dnnl_memory_desc_permute_axes(&pmd, &S->vals.data[xv].md, perm) == dnnl_success &&
        (dnnl_memory_desc_equal(&pmd, &omd) || (!S->is_head[e] && nd >= 3 && dnnl_memory_desc_equal(&pmd, &cl)))) {
        S->ent_val[e] = dn_alias_new(S, xv, &pmd);
        S->stats.nviews++;
        return GR_OK;
    }
    if ((st = dn_plain(S, n, xv, &xv))) return st;
    dnnl_status_t ds = dnnl_memory_desc_permute_axes(&pmd, &S->vals.data[xv].md, perm);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid permutation");
    dnnl_primitive_desc_t pd;
    ds = dnnl_reorder_primitive_desc_create(&pd, &pmd, S->eng, &omd, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the reorder");
    int v = dn_val_new(S, V_TMP, &omd);
    dn_arg args[2] = {{DNNL_ARG_FROM, xv, pmd, NULL}, {DNNL_ARG_TO, v, omd, NULL}};
    st = dn_emit(S, n, pd, args, 2, true);
    if (!st) S->ent_val[e] = v;
    return st;
}

/* strided_slice (positive steps): a reorder from a strided view of the input. */
static int tuple_ints(const rt_json_node *n, uint32_t k, int64_t *out, int max) {
    json_t *t = json_object_get(json_array_get(json_object_get(n->attrs, "args"), k), "tuple");
    int c = (int)json_array_size(t);
    if (!t || c > max) return -1;
    for (int i = 0; i < c; i++) {
        json_t *v = json_object_get(json_array_get(t, (size_t)i), "int");
        if (!json_is_integer(v)) return -1;
        out[i] = json_integer_value(v);
    }
    return c;
}

/* A slice can stay a strided view of its input when every consumer reads its sources through
 * a reorder of its own: convolutions (into the layout their kernel picks) and concats
 * (ShuffleNet's split halves: into the concat's or the shuffle's layout). */
static bool slice_as_view(dn_state *S, int e) {
    if (S->is_head[e] || S->cons[e].len == 0) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        if (c->op == IR_OP_CONV2D ? dn_arg_entry(S, c, 0) != e : c->op != IR_OP_CONCAT) return false;
    }
    return true;
}

static gr_status op_strided_slice(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = need_val(S, n, x, &xv);
    /* a slice of a strided layout (plain, channels-last) is a view of it; blocked goes plain */
    if (!st && (!strided(&S->vals.data[xv].md) || S->opts.no_layout_plan)) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims;
    int64_t axes[DNNL_MAX_NDIMS], beg[DNNL_MAX_NDIMS], end[DNNL_MAX_NDIMS], stp[DNNL_MAX_NDIMS];
    int na = tuple_ints(n, 1, axes, DNNL_MAX_NDIMS), nb = tuple_ints(n, 2, beg, DNNL_MAX_NDIMS),
        ne = tuple_ints(n, 3, end, DNNL_MAX_NDIMS), ns = dn_nargs(n) > 4 ? tuple_ints(n, 4, stp, DNNL_MAX_NDIMS) : na;
    if (dn_nargs(n) <= 4)
        for (int i = 0; i < na; i++) stp[i] = 1;
    if (na < 0 || nb != na || ne != na || ns != na || n->ndims[0] != nd)
        return dn_fail(S, n, dnnl_success, "strided_slice needs constant axes / begin / end / strides");
    int64_t start[DNNL_MAX_NDIMS] = {0}, step[DNNL_MAX_NDIMS], xstr[DNNL_MAX_NDIMS];
    for (int i = 0; i < nd; i++) step[i] = 1;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i], dim;
        if (a < 0 || a >= nd || stp[i] <= 0) return dn_fail(S, n, dnnl_success, "strided_slice with a bad axis or a step <= 0");
        dim = xmd.dims[a];
        int64_t b = beg[i] < 0 ? beg[i] + dim : beg[i];
        start[a] = b < 0 ? 0 : b > dim ? dim : b;
        step[a] = stp[i];
    }
    int64_t off = xmd.offset0;
    for (int i = 0; i < nd; i++) xstr[i] = xmd.format_desc.blocking.strides[i];
    dnnl_dims_t vd, vs;
    for (int i = 0; i < nd; i++) {
        vd[i] = n->shapes[0][i];
        vs[i] = xstr[i] * step[i];
        off += start[i] * xstr[i];
        if (vd[i] && start[i] + (vd[i] - 1) * step[i] >= xmd.dims[i]) return dn_fail(S, n, dnnl_success, "strided_slice out of bounds");
    }
    dnnl_memory_desc_t view, omd;
    dnnl_memory_desc_init_by_strides(&view, nd, vd, dnnl_f32, vs);
    view.offset0 = off;
    if (slice_as_view(S, dn_out_entry(S, n))) {
        /* no copy: the consumers reorder from the view into their own layouts anyway */
        S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &view);
        return GR_OK;
    }
    dn_plain_md(&omd, nd, n->shapes[0]);
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &view, S->eng, &omd, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the strided_slice reorder");
    int v = dn_val_new(S, V_TMP, &omd);
    dn_arg args[2] = {{DNNL_ARG_FROM, xv, view, NULL}, {DNNL_ARG_TO, v, omd, NULL}};
    st = dn_emit(S, n, pd, args, 2, true);
    if (!st) S->ent_val[dn_out_entry(S, n)] = v;
    return st;
}

/* ---------------------------------------------------------------- table ---- */

typedef gr_status (*op_fn)(dn_state *S, const rt_json_node *n, const dn_comp *comp);

/* the handlers of the other files */
static gr_status op_rnn(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    return dn_rnn(S, n);
}

static gr_status op_conv3d(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    return dn_conv3d(S, n);
}

static gr_status op_pool3d(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    return dn_pool3d(S, n);
}

/* runtime/dnnl_op_table.h's handlers by op id (NULL: not a oneDNN op) */
static const op_fn HANDLER[IR_OP_COUNT] = {
#define X(op, kind, check, handler, alg, alpha, beta) [IR_OP_##op] = handler,
    DNNL_OPS(X)
#undef X
};

gr_status dn_node(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    op_fn fn = n->op >= 0 && n->op < IR_OP_COUNT ? HANDLER[n->op] : NULL;
    if (!fn) return dn_fail(S, n, dnnl_success, "not an op of the oneDNN backend");
    return fn(S, n, comp);
}
