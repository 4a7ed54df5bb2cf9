/* What the oneDNN engine's op handlers share: the primitive made with as much of the node's
 * post-op chain as oneDNN takes (falling back step by step), the output written in place where
 * it can be, bias and per-channel affine folding, and the layout letters of views. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* ------------------------------------------------------------------ common ---- */

/* convolutions and matmul: post-ops from their fused composite only */
static bool is_anchor(const rt_json_node *n) {
    const dn_op_row *r = dn_op_row_of(n->op);
    return r && r->kind == DN_K_ANCHOR;
}

/* A matmul whose weights are no constant */
static bool activation_product(dn_state *S, const rt_json_node *n) {
    int b = n->op == IR_OP_MATMUL ? dn_arg_entry(S, n, 1) : -1;
    return b >= 0 && S->ent_node[b].node->kind != RT_JSON_CONST;
}

/* The entry n's primitive produces with its first k post-op steps: the last step's, a folded
 * bias add's (pending_out), else n's own output. */
int dn_chain_out(dn_state *S, const rt_json_node *n, const dn_step *steps, int k) {
    return k ? steps[k - 1].out : S->pending_out >= 0 ? S->pending_out : dn_out_entry(S, n);
}

gr_status dn_need_val(dn_state *S, const rt_json_node *n, int e, int *v) {
    *v = -1;
    if (e < 0 || S->ent_val[e] < 0) return dn_fail(S, n, dnnl_success, "operand is not a float32 tensor of the region");
    *v = S->ent_val[e];
    return GR_OK;
}

/* Creates the primitive descriptor with as many of the steps as oneDNN accepts as post-ops
 * (all, then fewer; never two eltwise ones of one algorithm that oneDNN would mix up,
 * dn_eltwise_algs_distinct), preferring fewer post-ops to a reference kernel. need_jit: a
 * reference kernel even without post-ops is a failure too (the caller has other layouts to try);
 * returns dnnl_unimplemented then, with *err GR_OK. args/nargs: the fixed args; binary
 * post-op sources are appended. */
/* oneDNN 2.6's jit post-op injectors read a full-size binary operand in dst's layout, whatever
 * its own, and a broadcast one other than a scalar or per channel right only for plain dst
 * (random region-graph findings: max_pool3d + maximum, a gemm convolution + multiply, each
 * with a plain operand; a depthwise conv1d + a (W) operand: blocked dst, wrong values). */
bool dn_src1_in_dst_layout(dn_state *S, const_dnnl_primitive_desc_t pd, const dn_step *steps, int k) {
    const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    bool sum = S->sum_ok; /* the first full-size add is the sum post-op (dn_make_attr): its operand goes to dst's layout */
    /* and a gemm convolution may read an operand other than a scalar or per-channel one at the
     * wrong offset (its channels-last path, which it takes for strides like nwc's, even where
     * those alias plain ones; generator seeds 13106: conv1d on W = 1 times a [3, 7, 1] tensor,
     * 18003: conv3d plus a [5, 7, 4] one, 80486: one image, one output channel, times a (W)
     * operand) */
    const char *impl = NULL;
    const_dnnl_op_desc_t od = NULL;
    bool gemm = dnnl_primitive_desc_query(pd, dnnl_query_convolution_d, 0, &od) == dnnl_success && od &&
                dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl && strstr(impl, "gemm");
    for (int i = 0; i < k; i++) {
        if (steps[i].kind != STEP_BINARY || S->ent_val[steps[i].src1] < 0) continue;
        const dnnl_memory_desc_t *md = &S->vals.data[S->ent_val[steps[i].src1]].md;
        bool full = md->ndims == dst->ndims && !memcmp(md->dims, dst->dims, sizeof(int64_t) * (size_t)md->ndims);
        if (full && sum && steps[i].alg == dnnl_binary_add) {
            sum = false;
            continue;
        }
        if (full && !dnnl_memory_desc_equal(md, dst)) return false;
        /* the operand's dims aligned to dst's trailing ones: other than 1 on the channel axis only? */
        bool chan = true;
        for (int d = 0; d < md->ndims; d++) chan &= md->dims[d] == 1 || dst->ndims - md->ndims + d == 1;
        if (!chan && ((!full && !dn_is_plain(dst)) || gemm)) return false;
        /* a per-channel operand of a dst of several images whose spatial dims are all 1 is read
         * at the wrong channels (generator seed 87108: a binary primitive on (2, 11, 1) with a
         * (1, 11, 1) divide post-op) */
        bool point = dst->ndims >= 3 && dst->dims[0] > 1;
        for (int d = 2; d < dst->ndims; d++) point &= dst->dims[d] == 1;
        if (point && !full && chan && md->ndims >= dst->ndims - 1 && md->dims[md->ndims - dst->ndims + 1] > 1) return false;
    }
    return true;
}

static bool c_kernel(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    return dn_pd_is_ref(pd) || (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                                !strncmp(impl, "simple", 6));
}

dnnl_status_t dn_try_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                            const dn_step *steps, int nsteps, int kmin, bool need_jit, dnnl_primitive_desc_t *pd,
                            int *kused, dn_arg *args, int *nargs, gr_status *err) {
    dnnl_status_t ds = dnnl_unimplemented;
    *err = GR_OK;
    for (int k = nsteps; k >= kmin; k--) {
        if (!dn_eltwise_algs_distinct(steps, k)) continue;
        int na = *nargs;
        dnnl_primitive_attr_t attr;
        if ((*err = dn_make_attr(S, n, steps, k, nd, &attr, args, &na))) return dnnl_runtime_error;
        ds = dnnl_primitive_desc_create(pd, desc, attr, S->eng, NULL);
        if (ds == dnnl_success && S->opts.dw_jit) dn_pd_prefer_jit_dw(desc, attr, S->eng, pd);
        dnnl_primitive_attr_destroy(attr);
        /* post-ops that push oneDNN onto its reference kernels cost more than they save; onto
         * its plain C++ ones too (simple_nchw pooling with a sum post-op: wrong results, 2.6) */
        if (ds == dnnl_success &&
            ((k > kmin && (c_kernel(*pd) || !dn_src1_in_dst_layout(S, *pd, steps, k))) || (need_jit && dn_pd_is_ref(*pd)))) {
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

gr_status dn_fuse_create_min(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                             const dn_step *steps, int nsteps, int kmin, dnnl_primitive_desc_t *pd, int *kused,
                             dn_arg *args, int *nargs) {
    gr_status err;
    dnnl_status_t ds = dn_try_create(S, n, desc, nd, steps, nsteps, kmin, false, pd, kused, args, nargs, &err);
    if (err) return err;
    return ds == dnnl_success ? GR_OK : dn_fail(S, n, ds, "oneDNN rejects the primitive");
}

/* For primitives emitted through dn_finish(), which preloads a sum post-op's residual. */
gr_status dn_fuse_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                         const dn_step *steps, int nsteps, dnnl_primitive_desc_t *pd, int *kused, dn_arg *args,
                         int *nargs) {
    S->sum_ok = true;
    gr_status st = dn_fuse_create_min(S, n, desc, nd, steps, nsteps, 0, pd, kused, args, nargs);
    S->sum_ok = false;
    return st;
}

/* The residual value sv (in dst's layout) may be overwritten by n's primitive, which adds it as
 * a sum post-op: its memory is an intermediate no argument of the primitive shares, and every
 * value sharing that memory is read by no region output and by no node but n, the nodes
 * folded into the primitive and the nodes built before (those before the build loop's). */
static bool overwritable(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int sv, const dn_arg *args, int nargs) {
    int r = dn_root(S, sv);
    if (S->opts.no_layout_plan || S->vals.data[r].kind != V_TMP) return false;
    for (int a = 0; a < nargs; a++)
        if (args[a].val >= 0 && dn_root(S, args[a].val) == r) return false;
    for (uint32_t e = 0; e < S->nent; e++) {
        if (S->ent_val[e] < 0 || dn_root(S, S->ent_val[e]) != r) continue;
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
gr_status dn_finish(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, dn_arg *args, int nargs,
                    const dn_step *steps, int k, const dnnl_memory_desc_t *dst_override) {
    /* a copy: dst_override may point into the value array, which grows below */
    dnnl_memory_desc_t dmd = *(dst_override ? dst_override : dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    int e = dn_chain_out(S, n, steps, k);
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
    /* a concat source in its slot's layout: written there */
    dnnl_memory_desc_t smd;
    if (v < 0 && dn_slot_md(S, e, &smd) && dnnl_memory_desc_equal(&smd, &dmd)) v = dn_slot_val(S, e);
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
int dn_chain_of(dn_state *S, const rt_json_node *n, const dn_comp *comp, dn_step *steps, bool fuse, int nd,
                const int64_t *dims, dnnl_memory_desc_t *dst) {
    int k = 0, last = dn_out_entry(S, n);
    bool nofuse = S->opts.no_fuse;
    if (comp) {
        /* a fused composite: its post-ops, all of them (dnnl.no_fuse: none, dn_composite
         * then runs them as their own primitives); the dst layout by where its output goes */
        k = nofuse ? 0 : comp->k;
        memcpy(steps, comp->steps, sizeof(dn_step) * (size_t)k);
        if (comp->k) last = comp->steps[comp->k - 1].out;
    } else if (fuse && !nofuse && (!is_anchor(n) || activation_product(S, n))) {
        /* convolutions and matmuls get post-ops from their composite only; chains of single
         * ops after other primitives (pool -> relu, resize -> add) still fold, and after a
         * product of two activations (attention's QK^T: its scale and mask), which no
         * composite takes */
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
bool dn_take_bias(dn_state *S, dn_step *steps, int *k, int axis, int nd, int64_t C, int *bias_val) {
    int nb = 0;
    while (nb < *k && bias_step(S, &steps[nb], axis, nd, C)) nb++;
    if (!nb) return false;
    *bias_val = S->ent_val[steps[0].src1];
    if (nb > 1) {
        float *sum = dn_owned_alloc(S, sizeof(float) * (size_t)C);
        if (!sum) return false;
        memset(sum, 0, sizeof(float) * (size_t)C);
        for (int i = 0; i < nb; i++) {
            const float *c = dn_const_data(S, S->ent_val[steps[i].src1]);
            if (!c) return false;
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
void dn_take_affine(dn_state *S, dn_step *steps, int *k, int64_t O, bool wconst, int *wv, int *bias_val,
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
        const float *c = dn_const_data(S, S->ent_val[st->src1]);
        if (!c) break;
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
        const float *src = dn_const_data(S, *wv);
        float *dst = src ? dn_owned_alloc(S, bytes) : NULL;
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

/* ------------------------------------------------------ window attributes ---- */

void dn_attr_axes(const rt_json_node *n, const char *key, int64_t *v, int sd) {
    if (dn_attr_ints(n, key, v, sd) == 1)
        for (int i = 1; i < sd; i++) v[i] = v[0];
}

void dn_attr_pads(const rt_json_node *n, int64_t *pad, int sd) {
    int c = dn_attr_ints(n, "padding", pad, 2 * sd);
    if (c == 1 || c == sd)
        for (int i = 2 * sd - 1; i >= 0; i--) pad[i] = pad[c == 1 ? 0 : i % sd];
}

/* ------------------------------------------------------- layout letters ---- */

/* A plain tensor of shape `shape` in layout `lay` (NHWC, OHWI, ...) read in the axis order of
 * `canon` (NCHW, OIHW, ...): its dims and strides in that order, over the tensor's own memory.
 * False when lay is not a permutation of canon's letters. */
bool dn_layout_view(const char *lay, const char *canon, const int64_t *shape, int64_t *dims, int64_t *str) {
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
bool dn_permute_perm(const rt_json_node *p, int nd, int *perm) {
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
 * plain view without a copy (see dn_op_permute). */
bool dn_wants_channels_last(dn_state *S, int e) {
    if (e < 0 || S->is_head[e] || S->opts.no_layout_plan) return false;
    int nd = dn_entry_ndim(S, e);
    if (nd < 3 || nd > 5) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        int perm[DNNL_MAX_NDIMS];
        if (c->op != IR_OP_PERMUTE_DIMS || dn_arg_entry(S, c, 0) != e || !dn_permute_perm(c, nd, perm)) continue;
        bool cl = perm[0] == 0 && perm[1] == nd - 1;
        for (int d = 2; d < nd; d++) cl &= perm[d] == d - 1;
        if (cl) return true;
    }
    return false;
}

/* md is a dn_strided layout without blocks (plain, channels-last, or a view of one). */
bool dn_strided(const dnnl_memory_desc_t *md) {
    return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0;
}

/* md is channels-last, or a dn_strided view of a channels-last tensor (a slice of its channels):
 * the channels vary fastest. Reordered into a dense channels-last layout, it is a copy of
 * contiguous runs, into a blocked or plain one a transposition. */
bool dn_cl_order(const dnnl_memory_desc_t *md) {
    if (md->ndims < 3 || md->ndims > 5 || !dn_strided(md) || md->dims[1] < 2) return false;
    const int64_t *s = md->format_desc.blocking.strides;
    for (int i = 2; i < md->ndims; i++)
        if (md->dims[i] > 1 && s[i] < s[1] * md->dims[1]) return false;
    return true;
}

/* *xv as the dn_strided view (dims, str) of its plain self: what a primitive with canonical axes
 * reads for a channels-last (or any permuted) tensor, without a copy. */
gr_status dn_layout_in(dn_state *S, const rt_json_node *n, int *xv, int nd, const dnnl_dims_t dims, const dnnl_dims_t str) {
    gr_status st = dn_plain(S, n, *xv, xv);
    if (st) return st;
    dnnl_memory_desc_t md;
    dnnl_memory_desc_init_by_strides(&md, nd, dims, dnnl_f32, str);
    *xv = dn_alias_new(S, *xv, &md);
    return GR_OK;
}

/* Entry e, computed with canonical axes: in the dn_strided md `want` (the permuted view of the
 * node's own shape), then seen as the plain tensor of that shape. */
gr_status dn_layout_out(dn_state *S, const rt_json_node *n, int e, const dnnl_memory_desc_t *want) {
    int v;
    gr_status st = dn_as(S, n, S->ent_val[e], want, &v);
    if (st) return st;
    dnnl_memory_desc_t md;
    dn_plain_md(&md, n->ndims[0], n->shapes[0]);
    S->ent_val[e] = dn_alias_new(S, v, &md);
    return GR_OK;
}

/* ------------------------------------------------------------------- bf16 ---- */

/* The canonical layouts (op_conv reads others through strided views, kept float32). */
static bool canonical_conv(const rt_json_node *n) {
    static const char *const DL[] = {"NCW", "NCHW", "NCDHW"}, *const KL[] = {"OIW", "OIHW", "OIDHW"};
    const char *dl = dn_attr_str(n, "data_layout", NULL), *kl = dn_attr_str(n, "kernel_layout", NULL);
    bool dok = !dl, kok = !kl;
    for (int i = 0; i < 3; i++) {
        dok |= dl && !strcmp(dl, DL[i]);
        kok |= kl && !strcmp(kl, KL[i]);
    }
    return dok && kok;
}

bool dn_bf16_node(dn_state *S, const rt_json_node *n) {
    if (!S->bf16 || n->kind != RT_JSON_KERNEL) return false;
    int w = dn_arg_entry(S, n, 1);
    if (w < 0) return false;
    const rt_json_node *wn = S->ent_node[w].node;
    /* not depthwise: oneDNN's bf16 jit_dw ran convnext_tiny's 7x7 ones in 2.1-2.4x the time
     * of its f32 one (no AMX there; they are bound by memory) */
    if (n->op == IR_OP_CONV1D || n->op == IR_OP_CONV2D || n->op == IR_OP_CONV3D)
        return wn->kind == RT_JSON_CONST && canonical_conv(n) &&
               !(dn_attr_int(n, "groups", 1) > 1 && dn_entry_ndim(S, w) > 1 && dn_entry_shape(S, w)[1] == 1);
    if (n->op != IR_OP_MATMUL) return false;
    /* dense: the weights are a permute_dims of a constant */
    if (wn->kind == RT_JSON_KERNEL && wn->op == IR_OP_PERMUTE_DIMS) {
        int c = dn_arg_entry(S, wn, 0);
        wn = c >= 0 ? S->ent_node[c].node : NULL;
    }
    int a = dn_arg_entry(S, n, 0);
    if (!wn || wn->kind != RT_JSON_CONST || a < 0 || dn_entry_ndim(S, a) < 2) return false;
    /* one row: graft's GEMV reads the float32 weights in place, bound by memory (dnnl_op_matmul.c) */
    int64_t rows = 1;
    for (int i = 0; i < dn_entry_ndim(S, a) - 1; i++) rows *= dn_entry_shape(S, a)[i];
    return rows > 1 || !S->opts.gemv || !dn_avx2_kernels_ok();
}

bool dn_bf16_entry(dn_state *S, int e) {
    dnnl_memory_desc_t md;
    if (!S->bf16 || e < 0 || S->is_head[e] || !S->cons[e].len || dn_slot_md(S, e, &md)) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        if (!dn_bf16_node(S, c) || dn_arg_entry(S, c, 0) != e) return false;
        for (uint32_t k = 1; k < dn_nargs(c); k++)
            if (dn_arg_entry(S, c, k) == e) return false;
    }
    return true;
}

gr_status dn_bf16_settle(dn_state *S, const rt_json_node *n, int e) {
    int v = S->ent_val[e];
    if (v < 0 || S->vals.data[v].md.data_type != dnnl_bf16 || dn_bf16_entry(S, e)) return GR_OK;
    dnnl_memory_desc_t f = S->vals.data[v].md;
    dn_md_dt(&f, dnnl_f32);
    return dn_as(S, n, v, &f, &S->ent_val[e]);
}
