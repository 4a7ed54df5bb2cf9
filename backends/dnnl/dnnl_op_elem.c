/* The oneDNN engine's pooling, eltwise and binary ops, softmax and the normalizations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

gr_status dn_single_src_create(dn_state *S, const rt_json_node *n, int xv, const dnnl_memory_desc_t *dst, int nd,
                               const int64_t *os, src_desc_fn init, const void *ctx, void *desc, const dn_step *steps,
                               int k, const char *why, dnnl_primitive_desc_t *pd, int *used, dn_arg *args,
                               int *na) {
    dnnl_memory_desc_t ax[4], ad[4], xcl;
    dnnl_dims_t od;
    for (int i = 0; i < nd; i++) od[i] = os[i];
    int nalt = 0;
    ax[nalt] = S->vals.data[xv].md;
    /* oneDNN 2.6's jit resampling and simple_nchw pooling read a source at an offset (a slice
     * of a larger tensor) from the start of its memory (generator seed 151516: a resize of row
     * 1 of a (1, 3, 17) product, every value off, at both ISAs; a max pool too): such a view is
     * read through a plain copy */
    if (ax[nalt].offset0) {
        dnnl_memory_desc_t view = ax[nalt];
        dn_plain_like(&ax[nalt], &view);
    }
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
    if (!dn_is_plain(&ax[0])) { /* a permuted view: plain src, dst `any` */
        dn_plain_like(&ax[nalt], &ax[0]);
        dnnl_memory_desc_init_by_tag(&ad[nalt++], nd, od, dnnl_f32, dnnl_format_tag_any);
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
        ds = dn_try_create(S, n, desc, nd, steps, k, 0, t < nalt, pd, used, args, na, &st);
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

void dn_pool_window(const rt_json_node *n, int sd, const int64_t *xs, const int64_t *os, dnnl_dims_t kk, dnnl_dims_t s,
                    dnnl_dims_t d, dnnl_dims_t pl, dnnl_dims_t pr) {
    int64_t ps[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pad[6] = {0};
    dn_attr_axes(n, "pool_size", ps, sd);
    dn_attr_axes(n, "strides", st, sd);
    dn_attr_axes(n, "dilation", dl, sd);
    dn_attr_pads(n, pad, sd);
    for (int i = 0; i < sd; i++) {
        kk[i] = ps[i];
        s[i] = st[i];
        d[i] = dl[i] - 1;
        pl[i] = pad[i];
        /* ceil_mode: the output size decides the right padding */
        pr[i] = (os[2 + i] - 1) * s[i] + (kk[i] - 1) * dl[i] + 1 - xs[2 + i] - pl[i];
        if (pr[i] < 0) pr[i] = 0;
    }
}

/* 2-D max pooling whose every window holds an input, by graft's own kernel (dnnl_pool.c) in
 * nChw8c (its result in a concat slot when it has one): below avx512_core for a source already
 * in that layout (oneDNN's jit:avx2 kernel is several times slower), and dilated pools at any
 * ISA, reordered there (oneDNN 2.6 has only ref:any for them from avx512_core on). Average
 * pooling too where no window reaches into padding (every divisor is the window's size:
 * DenseNet's transitions, 2x2 / 2). *done false: not taken, nothing emitted. */
static gr_status own_pool(dn_state *S, const rt_json_node *n, int xv, bool is_max, const int64_t *xs, const int64_t *os,
                          const int64_t *kk, const int64_t *s, const int64_t *d, const int64_t *pl, const int64_t *pr,
                          bool *done) {
    *done = false;
    int oe = dn_out_entry(S, n);
    dnnl_memory_desc_t xmd, omd, slot;
    dnnl_dims_t xd = {xs[0], xs[1], xs[2], xs[3]}, od = {os[0], os[1], os[2], os[3]};
    dnnl_memory_desc_init_by_tag(&xmd, 4, xd, dnnl_f32, dnnl_aBcd8b);
    dnnl_memory_desc_init_by_tag(&omd, 4, od, dnnl_f32, dnnl_aBcd8b);
    bool blocked8 = dnnl_memory_desc_equal(&S->vals.data[xv].md, &xmd), dilated = d[0] || d[1];
    bool below512 = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
    if (!dn_avx2_kernels_ok() || S->is_head[oe] || !(dilated || (blocked8 && below512)) ||
        (!is_max && (pl[0] || pl[1] || pr[0] || pr[1])) || (kk[1] - 1) * (d[1] + 1) + 1 > DN_POOL_SPAN ||
        kk[0] > DN_POOL_ROWS)
        return GR_OK;
    for (int a = 0; a < 2; a++)
        for (int64_t o = 0; o < os[2 + a]; o++) {
            bool any = false;
            for (int64_t t = 0; t < kk[a] && !any; t++) {
                int64_t i = o * s[a] - pl[a] + t * (d[a] + 1);
                any = i >= 0 && i < xs[2 + a];
            }
            if (!any) return GR_OK;
        }
    gr_status st = blocked8 ? GR_OK : dn_as(S, n, xv, &xmd, &xv);
    if (st) return st;
    dn_pool *p = malloc(sizeof *p);
    if (!p) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    *p = (dn_pool){.N = xs[0], .Cb = (xs[1] + 7) / 8, .H = xs[2], .W = xs[3], .OH = os[2], .OW = os[3], .kh = kk[0],
                   .kw = kk[1], .sh = s[0], .sw = s[1], .dh = d[0] + 1, .dw = d[1] + 1, .pt = pl[0], .pl = pl[1],
                   .avg = is_max ? 0.f : 1.f / (float)(kk[0] * kk[1])};
    int ov = dn_slot_md(S, oe, &slot) && dnnl_memory_desc_equal(&slot, &omd) ? dn_slot_val(S, oe) : dn_val_new(S, V_TMP, &omd);
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, xmd, NULL}, {DNNL_ARG_DST, ov, omd, NULL}};
    *done = true;
    st = dn_emit_fn(S, n, dn_pool_run, p, free, "pooling", "graft_pool:avx2", args, 2);
    if (!st) S->ent_val[oe] = ov;
    return st;
}

gr_status dn_op_pool(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (st) return st;
    bool is_max = n->op == IR_OP_MAX_POOL1D || n->op == IR_OP_MAX_POOL2D || n->op == IR_OP_MAX_POOL3D ||
                  n->op == IR_OP_ADAPTIVE_MAX_POOL2D;
    bool adaptive = n->op == IR_OP_ADAPTIVE_AVG_POOL1D || n->op == IR_OP_ADAPTIVE_AVG_POOL2D || n->op == IR_OP_ADAPTIVE_MAX_POOL2D;
    int nd = dn_entry_ndim(S, x), sd = nd - 2;
    static const char *const CX[3] = {"NCW", "NCHW", "NCDHW"};
    if (sd < 1 || sd > 3) return dn_fail(S, n, dnnl_success, "rank");
    const char *cx = CX[sd - 1], *lay = dn_attr_str(n, "layout", cx);
    /* NHWC (any permutation): canonical axes over dn_strided views, as for convolutions */
    dnnl_dims_t xs, xstr, os, ostr;
    if (n->ndims[0] != nd || strcmp(dn_attr_str(n, "out_layout", lay), lay) ||
        !dn_layout_view(lay, cx, dn_entry_shape(S, x), xs, xstr) || !dn_layout_view(lay, cx, n->shapes[0], os, ostr))
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
        dn_pool_window(n, sd, xs, os, kk, s, d, pl, pr);
        if (!is_max && dn_attr_bool(n, "ceil_mode", false) && dn_attr_bool(n, "count_include_pad", false))
            return dn_fail(S, n, dnnl_success, "avg pooling with ceil_mode and count_include_pad is not supported");
    }
    if (!adaptive && sd == 2 && !perm) {
        bool done;
        if ((st = own_pool(S, n, xv, is_max, xs, os, kk, s, d, pl, pr, &done)) || done) return st;
    }
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max
                          : (!adaptive && dn_attr_bool(n, "count_include_pad", false)) ? dnnl_pooling_avg_include_padding
                                                                                       : dnnl_pooling_avg_exclude_padding;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = dn_chain_of(S, n, NULL, steps, true, nd, os, &dst);
    /* permuted: dn_strided views, and only eltwise post-ops (binary ones see the node's shapes) */
    if (perm) {
        dnnl_dims_t od;
        for (int i = 0; i < nd; i++) od[i] = os[i];
        if ((st = dn_layout_in(S, n, &xv, nd, xs, xstr))) return st;
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
    st = dn_single_src_create(S, n, xv, &dst, nd, os, pool_init, &pc, &desc, steps, k,
                           "no jit pooling for these shapes in any layout tried (src's, dst any, channels-last)", &pd, &used,
                           args, &na);
    if (st) return st;
    int oe = dn_chain_out(S, n, steps, used);
    st = dn_finish(S, n, pd, args, na, steps, used, NULL);
    return st || !perm ? st : dn_layout_out(S, n, oe, &operm);
}

/* ------------------------------------------------------- eltwise / binary ---- */

/* ------------------------------------------------------- affine runs ---- */

/* The data of constant entry e (float32) as an operand of a result of x's dims xd (nd dims):
 * values along axis *axis only, as many as xd[*axis] (*axis -1: one value). NULL when it varies
 * along more than one axis or broadcasts x. */
static const float *axis_const(dn_state *S, int e, int nd, const int64_t *xd, int *axis) {
    if (e < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || S->ent_val[e] < 0 || !dn_entry_f32(S, e)) return NULL;
    int cnd = dn_entry_ndim(S, e), v = S->ent_val[e];
    const int64_t *cs = dn_entry_shape(S, e);
    if (cnd > nd || !dn_is_plain(&S->vals.data[v].md)) return NULL;
    *axis = -1;
    for (int i = 0; i < cnd; i++) {
        if (cs[i] == 1) continue;
        if (*axis >= 0 || cs[i] != xd[nd - cnd + i]) return NULL;
        *axis = nd - cnd + i;
    }
    const char *p = dn_const_data(S, v);
    return p ? (const float *)(p + dn_val_boff(S, v)) : NULL;
}

/* The entries an affine run's folded operands are bound to while its primitive is built. */
typedef struct affine_fold {
    int n, e[2], saved[2];
} affine_fold;

/* A run of constant add / subtract / multiply / divide by values along one axis (or one value)
 * and scalar linears at the head of a binary op's chain -- a batch norm left after a concat or
 * a pool, (x - mean) / sqrt(var + eps) * gamma + beta, DenseNet's norm1 -- folds into x * scale
 * + shift: one multiply with an add post-op (or one of them) instead of a post-op per constant,
 * and no division. The two results are bound to two of the run's operand entries for the build
 * (dn_elem_prim reads operands by entry; affine_unbind puts the graph's values back). Only
 * divisors that are finite and not 0, so that no inf - inf appears where the graph has none. */
static gr_status affine_fold_run(dn_state *S, int xv, dn_step *first, dn_step *steps, int *k, affine_fold *f) {
    f->n = 0;
    int nd = S->vals.data[xv].md.ndims, axis = -1, len = 0, nodes = 0;
    const int64_t *xd = S->vals.data[xv].md.dims;
    const float *cv[DN_MAX_STEPS + 1];
    int cax[DN_MAX_STEPS + 1];
    bool div = false;
    for (; len <= *k; len++) {
        const dn_step *st = len ? &steps[len - 1] : first;
        if (nodes + st->nnodes > 8 || st->out < 0 || dn_entry_ndim(S, st->out) != nd ||
            memcmp(dn_entry_shape(S, st->out), xd, sizeof(int64_t) * (size_t)nd))
            break;
        cv[len] = NULL;
        if (st->kind == STEP_ELTWISE) {
            if (!len || st->alg != dnnl_eltwise_linear) break;
        } else {
            bool d = st->alg == dnnl_binary_div;
            if (st->alg != dnnl_binary_add && st->alg != dnnl_binary_sub && st->alg != dnnl_binary_mul && !d) break;
            if (!(cv[len] = axis_const(S, st->src1, nd, xd, &cax[len])) || (cax[len] >= 0 && axis >= 0 && cax[len] != axis)) break;
            bool ok = true;
            for (int64_t j = 0; d && j < (cax[len] >= 0 ? xd[cax[len]] : 1); j++) ok &= isfinite(cv[len][j]) && cv[len][j] != 0.f;
            if (!ok) break;
            if (cax[len] >= 0) axis = cax[len];
            div |= d;
        }
        nodes += st->nnodes;
    }
    if (axis < 0 || len < 2) return GR_OK;
    int64_t C = xd[axis];
    float *scale = dn_owned_alloc(S, sizeof(float) * (size_t)C), *shift = dn_owned_alloc(S, sizeof(float) * (size_t)C);
    if (!scale || !shift) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    bool scaled = false, shifted = false, finite = true;
    for (int64_t j = 0; j < C; j++) {
        float a = 1.f, b = 0.f;
        for (int i = 0; i < len; i++) {
            const dn_step *st = i ? &steps[i - 1] : first;
            float c = cv[i] ? cv[i][cax[i] >= 0 ? j : 0] : 0.f;
            if (st->kind == STEP_ELTWISE) a *= st->alpha, b = b * st->alpha + st->beta;
            else if (st->alg == dnnl_binary_add) b += c;
            else if (st->alg == dnnl_binary_sub) b -= c;
            else if (st->alg == dnnl_binary_mul) a *= c, b *= c;
            else a /= c, b /= c;
        }
        scale[j] = a;
        shift[j] = b;
        finite &= isfinite(a) && isfinite(b);
        scaled |= a != 1.f;
        shifted |= b != 0.f;
    }
    int nfold = scaled && shifted ? 2 : 1;
    if (!finite || (nfold >= len && !div)) return GR_OK;
    /* a shift is a binary post-op along the axis, which oneDNN 2.6's jit binary takes per
     * channel only; along another axis the run stays unfolded (each step then finds its own
     * jit layout, a lone broadcast as a 2-D per-channel one) rather than land on ref */
    if (nfold == 2 && axis != 1) return GR_OK;
    /* the entries of two distinct operands along the axis take the results */
    for (int i = 0; i < len && f->n < nfold; i++) {
        const dn_step *st = i ? &steps[i - 1] : first;
        if (cv[i] && cax[i] == axis && (f->n == 0 || st->src1 != f->e[0])) f->e[f->n++] = st->src1;
    }
    if (f->n < nfold) {
        f->n = 0;
        return GR_OK;
    }
    dn_step out[2] = {*first, *first};
    out[0].kind = out[1].kind = STEP_BINARY;
    out[0].alg = scaled ? dnnl_binary_mul : dnnl_binary_add;
    out[1].alg = dnnl_binary_add;
    out[0].nnodes = out[1].nnodes = 0;
    for (int i = 0; i < len; i++) {
        const dn_step *st = i ? &steps[i - 1] : first;
        dn_step *to = &out[nfold == 2 && i == len - 1];
        for (int q = 0; q < st->nnodes; q++) to->nodes[to->nnodes++] = st->nodes[q];
        to->out = st->out;
    }
    for (int i = 0; i < nfold; i++) {
        dnnl_memory_desc_t md;
        int e = f->e[i];
        dn_plain_md(&md, dn_entry_ndim(S, e), dn_entry_shape(S, e));
        int v = dn_val_new(S, V_OWNED, &md);
        S->vals.data[v].ptr = out[i].alg == dnnl_binary_mul ? scale : shift;
        f->saved[i] = S->ent_val[e];
        S->ent_val[e] = v;
        out[i].src1 = e;
    }
    *first = out[0];
    memmove(steps + (nfold - 1), steps + (len - 1), sizeof(dn_step) * (size_t)(*k - (len - 1)));
    if (nfold == 2) steps[0] = out[1];
    *k += nfold - len;
    return GR_OK;
}

static void affine_unbind(dn_state *S, const affine_fold *f) {
    for (int i = 0; i < f->n; i++) S->ent_val[f->e[i]] = f->saved[i];
}

/* A unary node, a binary node with a scalar constant, an x * f(x) form, or a binary node of
 * two tensors (one may broadcast): one eltwise or binary primitive, plus post-ops. */
gr_status dn_op_elemwise(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    if (dn_fold_scale(S, n)) return GR_OK;
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
    int k = npre + dn_chain_of(S, last, NULL, steps + npre, true, nd, n->shapes[0], &ignore);
    /* the rewrite's pre step (a linear) takes part in the chain's algorithms too */
    while (k > 0 && !dn_eltwise_algs_distinct(steps, k)) k--;
    affine_fold af = {.n = 0};
    gr_status st = npre ? GR_OK : affine_fold_run(S, xv, &first, steps, &k, &af);
    if (st) return st;
    bool own = false;
    if (af.n && ((st = dn_own_affine(S, n, &first, xv, steps, k, &own)) || own)) {
        affine_unbind(S, &af);
        return st;
    }
    dn_consume(S, &first, 1);
    S->stats.npostops--;          /* the first step is the primitive itself */
    S->stats.nfused_nodes -= (uint32_t)first.nnodes > 0 ? 1 : 0;
    int v, used;
    if (npre && steps[0].kind == STEP_BINARY) {
        /* y / x: oneDNN 2.6's jit eltwise takes no binary post-op, so x^-1 is a primitive of its
         * own and x^-1 * y the binary one, with the chain */
        dn_step inv = first;
        inv.out = -1;
        if ((st = dn_elem_prim(S, n, &inv, xv, NULL, 0, 0, false, &xv, &used))) return st;
        first = steps[0];
        first.nnodes = 1;
        first.nodes[0] = n;
        memmove(steps, steps + 1, sizeof(dn_step) * (size_t)--k);
        npre = 0;
    }
    /* a folded shift is no optional post-op: its nodes hold the whole run's */
    st = dn_elem_prim(S, n, &first, xv, steps, k, af.n == 2 ? 1 : npre, true, &v, &used);
    affine_unbind(S, &af);
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
    dnnl_memory_desc_t ax[6], a1[6];
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
    dnnl_memory_desc_t axv[6], a1v[6];
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
    /*   5: any other broadcast, as a 2-D (M, K) binary with a (1, K) operand, which jit kernels
     *      take (per channel of plain data): x copied with the operand's non-broadcast axes
     *      innermost (no copy when they are already), the operand read as it is (its values
     *      vary along those axes only, in their order); eltwise post-ops only. */
    int galt = -1;
    if (bin && !full1 && pre_elt && nd >= 2) {
        int perm[DNNL_MAX_NDIMS], np = 0;
        int64_t M = 1, K = 1;
        for (int i = 0; i < nd; i++)
            if (d1[i] == 1) M *= xd[i], perm[np++] = i;
        for (int i = 0; i < nd; i++)
            if (d1[i] != 1) K *= xd[i], perm[np++] = i;
        dnnl_memory_desc_t pdense;
        dnnl_dims_t pdims, str;
        for (int j = 0; j < nd; j++) pdims[j] = xd[perm[j]];
        dn_plain_md(&pdense, nd, pdims);
        for (int j = 0; j < nd; j++) str[perm[j]] = pdense.format_desc.blocking.strides[j];
        dnnl_memory_desc_init_by_strides(&axv[nalt], nd, xd, dnnl_f32, str);
        dn_plain_md(&a1v[nalt], nd, d1);
        dn_plain_md(&ax[nalt], 2, (int64_t[]){M, K});
        dn_plain_md(&a1[nalt], 2, (int64_t[]){1, K});
        galt = nalt++;
        if (kperm == kmin)
            while (kperm < k && steps[kperm].kind == STEP_ELTWISE) kperm++;
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
        ds = dn_try_create(S, n, &desc, a == galt ? 2 : nd, steps, a == palt || a == galt ? kperm : k, kmin, t < nalt, &pd,
                           &used, args, &na, &st);
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
    /* the permuted (2-D) view writes x's layout of that alternative */
    int v = dn_val_new(S, V_TMP, pick == palt || pick == galt ? &axv[pick] : &dmd);
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

/* md's dims, dense, with `axis` innermost and the other axes in their order */
static void axis_innermost(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int axis) {
    dnnl_dims_t str;
    int64_t s = md->dims[axis];
    str[axis] = 1;
    for (int i = md->ndims - 1; i >= 0; i--)
        if (i != axis) {
            str[i] = s;
            s *= md->dims[i];
        }
    dnnl_memory_desc_init_by_strides(out, md->ndims, md->dims, dnnl_f32, str);
}

gr_status dn_op_softmax(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axis = dn_attr_int(n, "axis", -1);
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) return dn_fail(S, n, dnnl_success, "axis out of range");
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds;
    if (S->vals.data[xv].md.dims[axis] == 1) { /* over one value: 1 (log: 0) everywhere, an eltwise (jit) */
        dnnl_eltwise_desc_t ed;
        ds = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, dnnl_eltwise_linear, &S->vals.data[xv].md, 0.f,
                                            n->op == IR_OP_LOG_SOFTMAX ? 0.f : 1.f);
        if (ds == dnnl_success) ds = dnnl_primitive_desc_create(&pd, &ed, S->attr_plain, S->eng, NULL);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
        dn_arg args[2] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL}};
        return dn_finish(S, n, pd, args, 1, NULL, 0, NULL);
    }
    dnnl_softmax_v2_desc_t desc;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) { /* oneDNN's jit softmax wants its axis at stride 1: on ref, a copy with the axis innermost */
            dnnl_memory_desc_t inner;
            axis_innermost(&inner, &S->vals.data[xv].md, (int)axis);
            if (dnnl_memory_desc_equal(&inner, &S->vals.data[xv].md)) break;
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            st = dn_as(S, n, xv, &inner, &xv);
            if (st) return st;
        }
        dnnl_memory_desc_t dst = S->vals.data[xv].md;
        ds = dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference,
                                               n->op == IR_OP_LOG_SOFTMAX ? dnnl_softmax_log : dnnl_softmax_accurate,
                                               &S->vals.data[xv].md, &dst, (int)axis);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid softmax");
        ds = dnnl_primitive_desc_create(&pd, &desc, S->attr_plain, S->eng, NULL);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
        if (!dn_pd_is_ref(pd)) break;
    }
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL}};
    return dn_finish(S, n, pd, args, 1, NULL, 0, NULL);
}

/* ----------------------------------------------------------------- where ---- */

/* where(c, x, y) with a constant condition c and a one-element constant y (chk_where; GPT-2's
 * causal mask where(tril, scores, finfo.min)): oneDNN 2.6 has no select, so it is
 * max(min(x, A), B), with A = c ? +inf : y and B = c ? -inf : y in c's shape (for
 * where(c, y, x) the other way round), one binary primitive with a binary post-op. Exact
 * for every x that is not NaN, infinities and -0 included (an additive mask is not: inf + -inf,
 * and x + finfo.min rounds); a NaN x where x is taken comes out +inf (oneDNN's min, as x86's
 * minps, returns its second operand when one is NaN), where y is taken y. */
gr_status dn_op_where(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int c = dn_arg_entry(S, n, 0), a = dn_arg_entry(S, n, 1), b = dn_arg_entry(S, n, 2), xv = -1;
    float y;
    bool take_x = dn_scalar_const(S, b, &y);   /* where(c, x, y): x where c holds */
    if (!take_x && !dn_scalar_const(S, a, &y)) return dn_fail(S, n, dnnl_success, "where with no one-element constant branch");
    rt_tensor *ct = c >= 0 ? dn_const_tensor(S, c) : NULL;
    int nd = n->ndims[0], cn = c >= 0 ? dn_entry_ndim(S, c) : -1;
    if (!ct || cn > nd) return dn_fail(S, n, dnnl_success, "where whose condition is not a constant");
    gr_status st = dn_need_val(S, n, take_x ? a : b, &xv);
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    /* A and B in c's shape when it broadcasts along leading axes only, else in the result's;
     * the primitive sees x as [M, K] and them as [1, K] (jit kernels take that broadcast, not
     * [1, 1, S, S] over [1, H, S, S]) */
    const int64_t *xd = S->vals.data[xv].md.dims, *cs = dn_entry_shape(S, c);
    int p = 0;
    while (p < nd && (p < nd - cn || cs[p - (nd - cn)] == 1)) p++;
    for (int i = p; i < nd; i++)
        if (i < nd - cn || cs[i - (nd - cn)] != xd[i]) p = 0;
    int64_t M = 1, K = 1;
    for (int i = 0; i < nd; i++) *(i < p ? &M : &K) *= xd[i];
    float *lo = dn_owned_alloc(S, sizeof(float) * (size_t)K), *hi = dn_owned_alloc(S, sizeof(float) * (size_t)K);
    if (!lo || !hi) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    for (int64_t i = 0; i < K; i++) {
        /* element i of the result's last nd - p axes, read in c (broadcast) */
        int64_t ci = 0, rem = i, cstride = 1;
        for (int d = nd - 1; d >= p; d--) {
            int64_t xi = rem % xd[d], cdim = d < nd - cn ? 1 : cs[d - (nd - cn)];
            rem /= xd[d];
            if (cdim != 1) ci += xi * cstride;
            cstride *= cdim;
        }
        bool keep = (rt_tensor_get_f64(ct, ci) != 0) == take_x;
        lo[i] = keep ? INFINITY : y;
        hi[i] = keep ? -INFINITY : y;
    }
    dnnl_memory_desc_t md1, x2, xmd = S->vals.data[xv].md;
    dn_plain_md(&md1, 2, (int64_t[]){1, K});
    dn_plain_md(&x2, 2, (int64_t[]){M, K});
    int av = dn_val_new(S, V_OWNED, &md1), bv = dn_val_new(S, V_OWNED, &md1);
    S->vals.data[av].ptr = lo;
    S->vals.data[bv].ptr = hi;
    dnnl_binary_desc_t desc;
    dnnl_status_t ds = dnnl_binary_desc_init(&desc, dnnl_binary_min, &x2, &md1, &x2);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid where");
    dn_arg args[4];
    int na = 0;
    dnnl_primitive_attr_t attr;
    if ((st = dn_make_attr(S, n, NULL, 0, 2, &attr, args, &na))) return st;
    dnnl_post_ops_t po;
    dnnl_post_ops_create(&po);
    dnnl_post_ops_append_binary(po, dnnl_binary_max, &md1);
    dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd;
    S->ref_why = "no jit binary for the where's [M, K] and [1, K] operands";
    ds = dnnl_primitive_desc_create(&pd, &desc, attr, S->eng, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the where's binary primitive");
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    args[na++] = (dn_arg){DNNL_ARG_SRC_0, xv, x2, NULL};
    args[na++] = (dn_arg){DNNL_ARG_SRC_1, av, md1, NULL};
    args[na++] = (dn_arg){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, bv, md1, NULL};
    if ((st = dn_finish(S, n, pd, args, na, NULL, 0, &x2))) return st;
    int e = dn_out_entry(S, n);
    S->ent_val[e] = dn_alias_new(S, S->ent_val[e], &xmd);
    return GR_OK;
}

/* --------------------------------------------------------- normalization ---- */

gr_status dn_op_layer_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), gmm = dn_arg_entry(S, n, 1), bet = dn_arg_entry(S, n, 2), xv = -1, gv = -1, bv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (!st) st = dn_need_val(S, n, gmm, &gv);
    if (!st) st = dn_need_val(S, n, bet, &bv);
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
    return dn_finish(S, n, pd, args, k, NULL, 0, &xcopy);
}

gr_status dn_op_batch_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int v[5];
    for (uint32_t i = 0; i < 5; i++) {
        gr_status st = dn_need_val(S, n, dn_arg_entry(S, n, i), &v[i]);
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
    return dn_finish(S, n, pd, args, k, NULL, 0, xmd);
}
