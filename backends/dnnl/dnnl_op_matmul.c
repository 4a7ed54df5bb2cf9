/* The oneDNN engine's matmul: batched, broadcast and transposed operands, rows collapsed into
 * one GEMM, and graft's own GEMV for one-row products with constant weights (dnnl_gemv.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* ---------------------------------------------------------------- matmul ---- */

/* Plain md of weights w (dims ws, rank wn) read transposed in its last two axes, expanded to
 * rank nd with leading 1s (or its leading unit dims dropped when nd is less: rows collapsed). */
static void transposed_md(dnnl_memory_desc_t *md, int nd, int wn, const dnnl_dims_t ws) {
    dnnl_dims_t d, str;
    int pad = nd - wn;
    int64_t acc = 1;
    for (int i = wn - 1; i >= 0 && pad + i >= 0; i--) {
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
 * A single batch element is collapsed too when the product is wider than 2-D: oneDNN 2.6's
 * brgemm keeps 3-D weights plain (repacked every run) where 2-D ones get its blocked layout
 * (Swin's last stage, 1 x 49 x 768 . 768 x 2304). Returns the row count, 0 when the product
 * does not collapse: weights with a batch, a 2-D product, or a binary post-op operand that
 * varies along the batch or rows but is not the full result. */
static int64_t collapse_rows(dn_state *S, int nd, const dnnl_memory_desc_t *amd, const dnnl_memory_desc_t *bmd,
                             const dn_step *steps, int k, const int64_t *os) {
    int64_t rows = 1;
    for (int i = 0; i < nd - 2; i++) {
        if (bmd->dims[i] != 1) return 0;
        rows *= amd->dims[i];
    }
    if (nd == 2) return 0;
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

/* pd's implementation name starts with `what` */
static bool impl_is(const_dnnl_primitive_desc_t pd, const char *what) {
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
           !strncmp(impl, what, strlen(what));
}

/* ---- graft's own product for few rows (dnnl_gemv.c) ----
 * Its AVX2 code runs at every ISA from avx2 on (dn_avx2_kernels_ok: the product is bound by
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
        if (!dn_eltwise_vop(&steps[i], &p->ops[p->nops++])) return false;
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
    if (!S->opts.gemv || rows > GEMV_MAX_ROWS || !dn_avx2_kernels_ok() || wmd->format_kind != dnnl_blocked ||
        S->vals.data[av].md.data_type != dnnl_f32 ||
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
        const void *wp = dn_const_data(S, bv);
        if (wp) dn_hugepages(wp, (size_t)(K * wstr[wmd->ndims - 2]) * sizeof(float));
    }
    /* a copy: dn_val_new below may move S->vals */
    const dnnl_memory_desc_t w2 = S->vals.data[wv].md;
    q.ldw = w2.format_desc.blocking.strides[w2.ndims - 2];
    q.nparts = S->threads;
    dn_gemv *p = malloc(sizeof *p);
    if (!p) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    *p = q;
    *done = true;
    dn_arg args[DN_FN_MAX_ARGS];
    int na = 0;
    args[na++] = (dn_arg){DNNL_ARG_SRC, av, S->vals.data[av].md, NULL, sizeof(float) * (size_t)(rows * K)};
    int e = dn_chain_out(S, n, steps, k);
    S->pending_out = -1;
    dnnl_memory_desc_t dmd;
    dn_plain_md(&dmd, n->ndims[0], n->shapes[0]);
    int ov = dn_val_new(S, V_TMP, &dmd);
    args[na++] = (dn_arg){DNNL_ARG_DST, ov, dmd, NULL};
    p->ix_w = na;
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS, wv, w2, NULL, sizeof(float) * (size_t)((K - 1) * q.ldw + N)};
    dnnl_dims_t partd = {p->nparts * rows * N};
    dnnl_memory_desc_t partmd;
    dnnl_memory_desc_init_by_tag(&partmd, 1, partd, dnnl_f32, dnnl_a);
    p->ix_part = na;
    args[na++] = (dn_arg){DNNL_ARG_WORKSPACE, dn_val_new(S, V_TMP, &partmd), partmd, NULL};
    if (biasv >= 0) {
        p->ix_bias = na;
        args[na++] = (dn_arg){DNNL_ARG_BIAS, biasv, S->vals.data[biasv].md, NULL, sizeof(float) * (size_t)N};
    }
    dn_consume(S, steps, k);
    gr_status st = dn_emit_fn(S, n, dn_gemv_run, p, free, "matmul", "graft_gemv:avx2", args, na);
    if (!st) S->ent_val[e] = ov;
    return st;
}

/* gemm:jit reads transposed constant weights of a widening product faster than plain ones:
 * on AMD CPUs (see dnnl.transpose_weights in matmul) */
static bool transposed_pays(void) {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
}

/* A non-plain dn_strided view of the product's rank (a permute that matmuls alone read, see
 * dn_op_permute): read in place. oneDNN 2.6's brgemm and gemm:jit take any strides, so the
 * per-head transposes of attention are no copies. bert_encoder, 1 thread, min per primitive
 * over 30 runs: its 12 attention matmuls and 24 transposes 0.67-0.69 ms, the 12 matmuls on
 * views 0.57-0.58 (QK^T slower on views, 0.29 -> 0.36, the copies gone; K^T alone copied:
 * 0.58-0.62, as good, so no exception for it). */
static bool in_place_view(const dnnl_memory_desc_t *md, int nd) {
    /* (not a row-major view at an offset: oneDNN 2.6's matmuls, gemm:jit and brgemm, read it from
     * the wrong place; generator seeds 17839, AVX2: rows 24:30:2 of the second of two batch
     * elements; 106362, AVX2: channels 16..39 of a [1, 44, 12, 13] MergeSiblings split; 110465,
     * brgemm: channels 8..9 of a [1, 10, 1, 2] result. Permuted ones, attention's heads of a
     * packed q / k / v projection, they read right) */
    const int64_t *st = md->format_desc.blocking.strides;
    bool row_major = true;
    for (int i = 0; i + 1 < md->ndims; i++) row_major &= st[i] >= st[i + 1];
    return nd >= 3 && md->ndims == nd && dn_strided(md) && !dn_is_plain(md) && !(row_major && md->offset0);
}

/* The dst of matmul n (without post-ops, not a region output) whose sole consumer is a permute:
 * in the layout that makes the permute's plain output a view of it (attention's heads merged
 * back, [B, H, S, D] -> [B, S, H, D]), else false. */
static bool permuted_dst(dn_state *S, const rt_json_node *n, int nd, dnnl_memory_desc_t *dst) {
    int e = dn_out_entry(S, n), perm[DNNL_MAX_NDIMS], inv[DNNL_MAX_NDIMS];
    const rt_json_node *p = S->cons[e].len == 1 ? S->cons[e].data[0] : NULL;
    if (S->opts.no_layout_plan || S->is_head[e] || !p || p->op != IR_OP_PERMUTE_DIMS || dn_in_composite(p) ||
        p->ndims[0] != nd || !dn_permute_perm(p, nd, perm))
        return false;
    for (int i = 0; i < nd; i++) inv[perm[i]] = i;
    dnnl_memory_desc_t pom;
    dn_plain_md(&pom, nd, p->shapes[0]);
    return dnnl_memory_desc_permute_axes(dst, &pom, inv) == dnnl_success;
}

/* md (3-D) with a leading unit dim */
static void lead_unit(dnnl_memory_desc_t *md) {
    dnnl_dims_t d = {1}, str;
    const int64_t *s = md->format_desc.blocking.strides;
    str[0] = s[0] * md->dims[0];
    for (int i = 0; i < md->ndims; i++) {
        d[i + 1] = md->dims[i];
        str[i + 1] = s[i];
        if (s[i] * md->dims[i] > str[0]) str[0] = s[i] * md->dims[i];
    }
    int64_t off = md->offset0;
    dnnl_memory_desc_init_by_strides(md, md->ndims + 1, d, dnnl_f32, str);
    md->offset0 = off;
}

/* pd, reading views, is not on brgemm while the product of plain copies would be (views
 * brgemm does not take: GPT-2's q, k, v pieces of its fused projection, rows 3 H D apart). On
 * gemm:jit views lost where copies kept brgemm (torch's 3-D heads before lead_unit,
 * encoder_seqfirst, 1 thread, min per primitive: attention 0.28 ms with copies, 0.33 on views);
 * where gemm:jit is all there is (AVX2) views win (bert_encoder's attention 1.19-1.21 ->
 * 1.07-1.08 ms, encoder_seqfirst's 0.44-0.45 -> 0.42). */
static bool views_lose_brgemm(dn_state *S, const rt_json_node *n, const_dnnl_primitive_desc_t pd,
                              const dnnl_memory_desc_t *amd, const dnnl_memory_desc_t *bmd, const dnnl_memory_desc_t *dst,
                              const dn_step *steps, int k) {
    if (impl_is(pd, "brg")) return false;
    dnnl_memory_desc_t pa, pb, pdst;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t ppd;
    dn_arg args[4 + DN_MAX_STEPS];
    int used = 0, na = 0, nd = amd->ndims;
    dn_plain_like(&pa, amd);
    dn_plain_like(&pb, bmd);
    dn_plain_like(&pdst, dst);
    if (dnnl_matmul_desc_init(&desc, &pa, &pb, NULL, &pdst) != dnnl_success ||
        dn_fuse_create(S, n, &desc, nd, steps, k, &ppd, &used, args, &na) != GR_OK) {
        if (S->diag) gr_diag_clear(S->diag);
        return false;
    }
    bool brg = impl_is(ppd, "brg");
    dnnl_primitive_desc_destroy(ppd);
    return brg;
}

/* ---- 2-D products as 1x1 convolutions below avx512_core ----
 * oneDNN 2.6's matmul there is gemm:jit, which packs both operands on every run and applies
 * bias and eltwise post-ops in a pass of its own over dst; its 1x1 convolution (jit_1x1:avx2)
 * reads weights packed once at prepare (OIhw8i8o) and applies its post-ops in the kernel.
 * A rows x K . K x N product is that convolution over one image of 1 x rows pixels in nhwc:
 * src, dst and the residual are the plain matrices as they are. Measured on Sapphire Rapids,
 * ONEDNN_MAX_CPU_ISA=AVX2, 2 threads, min of 60 runs, matmul (plain weights) -> convolution:
 * 197 x 192 . 192 x 768 + bias + GELU 0.327 -> 0.293 ms, 197 x 192 . 192 x 576 + bias
 * 0.210 -> 0.186, 197 x 768 . 768 x 192 0.270 -> 0.235, 96 x 384 . 384 x 1536 + GELU 0.631 ->
 * 0.502, 64 x 256 . 256 x 1024 0.176 -> 0.145, 3136 x 96 . 96 x 384 1.11 -> 1.00, 784 x 192 .
 * 192 x 768 1.08 -> 0.94, 13 x 256 . 256 x 768 0.033 -> 0.028, 49 x 3072 . 3072 x 768 1.56-1.67
 * -> 1.32-1.51, 8 x 768 . 768 x 3072 1.46-1.69 -> 0.42-0.51; tiny products alike (4 x 256 .
 * 256 x 768 12 us -> 14, 2 x 1024 . 1024 x 1024 191 -> 155). */

/* oneDNN's matmul runs gemm:jit: its ISA is below avx512_core (no brgemm) */
static bool matmul_on_gemm(void) {
    static int below = -1; /* the CPU and ONEDNN_MAX_CPU_ISA do not change within a process */
    if (below < 0) below = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
    return below;
}

/* The product n of plain src av (amd: rows x K), constant weights bv (bmd: K x N, a view of bv,
 * transposed or not), bias biasv or -1 and post-op steps as a 1x1 convolution, when it runs on
 * jit_1x1 with every step fused; *done false: nothing emitted. Binary steps: the residual add
 * (the sum post-op) and operands broadcast along the rows; others keep the matmul. The result
 * entry gets a view of dst_nd's shape. */
static gr_status conv1x1_matmul(dn_state *S, const rt_json_node *n, int av, int bv, int biasv, const dn_step *steps,
                                int k, const dnnl_memory_desc_t *amd, const dnnl_memory_desc_t *bmd,
                                const dnnl_memory_desc_t *dst_nd, bool *done) {
    *done = false;
    int64_t R = amd->dims[0], K = amd->dims[1], N = bmd->dims[1];
    const dnnl_memory_desc_t *avmd = &S->vals.data[av].md, *bvmd = &S->vals.data[bv].md;
    const int64_t *bst = bmd->format_desc.blocking.strides;
    if (!S->opts.matmul_1x1 || !matmul_on_gemm() || avmd->data_type != dnnl_f32 || !dn_is_plain(avmd) ||
        bvmd->format_kind != dnnl_blocked || !dn_is_plain(bvmd) || bmd->format_kind != dnnl_blocked ||
        bmd->format_desc.blocking.inner_nblks || !((bst[0] == N && bst[1] == 1) || (bst[0] == 1 && bst[1] == K)))
        return GR_OK;
    /* binary operands as [1, C, 1, rows] views of their plain memory: the residual (of the
     * result's own shape, the sum post-op) in dst's nhwc, one row plain */
    int saved_e[DN_MAX_STEPS], saved_v[DN_MAX_STEPS], nsaved = 0;
    bool sum = false, take = true;
    for (int i = 0; i < k && take; i++) {
        if (steps[i].kind != STEP_BINARY) continue;
        int e = steps[i].src1, v = S->ent_val[e], cn = dn_entry_ndim(S, e);
        const int64_t *cs = dn_entry_shape(S, e);
        int64_t cr = 1, cc = cn ? cs[cn - 1] : 1;
        for (int j = 0; j + 1 < cn; j++) cr *= cs[j];
        bool full = !sum && steps[i].alg == dnnl_binary_add && cn == dn_entry_ndim(S, steps[i].out) &&
                    !memcmp(cs, dn_entry_shape(S, steps[i].out), sizeof(int64_t) * (size_t)cn);
        if ((!full && cr != 1) || (cc != N && cc != 1) || v < 0 || !dn_is_plain(&S->vals.data[v].md) ||
            S->vals.data[v].md.data_type != dnnl_f32) {
            take = false;
            break;
        }
        sum |= full;
        dnnl_memory_desc_t vmd;
        dnnl_dims_t d4 = {1, cc, 1, full ? R : 1};
        dnnl_memory_desc_init_by_tag(&vmd, 4, d4, dnnl_f32, full ? dnnl_nhwc : dnnl_abcd);
        saved_e[nsaved] = e;
        saved_v[nsaved++] = v;
        S->ent_val[e] = dn_alias_new(S, v, &vmd);
    }
    dnnl_memory_desc_t src, wany, wview, dst, bias1;
    dnnl_dims_t sd = {1, K, 1, R}, wd = {N, K, 1, 1}, dd = {1, N, 1, R}, st11 = {1, 1}, pad0 = {0, 0};
    dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_nhwc);
    dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_nhwc);
    dnnl_memory_desc_init_by_tag(&wany, 4, wd, dnnl_f32, dnnl_format_tag_any);
    /* K x N row-major: o then i strides 1, N (bacd); N x K read transposed: plain oihw */
    dnnl_memory_desc_init_by_tag(&wview, 4, wd, dnnl_f32, bst[1] == 1 ? dnnl_bacd : dnnl_abcd);
    dn_plain_md(&bias1, 1, &N);
    dnnl_convolution_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0;
    take = take && dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &src,
                                                      &wany, biasv >= 0 ? &bias1 : NULL, &dst, st11, pad0,
                                                      pad0) == dnnl_success;
    if (take && dn_fuse_create(S, n, &desc, 4, steps, k, &pd, &used, args, &na) != GR_OK) {
        if (S->diag) gr_diag_clear(S->diag);
        pd = NULL;
        take = false;
    }
    take = take && used == k && impl_is(pd, "jit_1x1");
    if (!take) {
        if (pd) dnnl_primitive_desc_destroy(pd);
        while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
        return GR_OK;
    }
    *done = true;
    int bin;
    gr_status st = dn_as(S, n, dn_alias_new(S, bv, &wview), dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &bin);
    if (st) dnnl_primitive_desc_destroy(pd);
    if (!st) {
        args[na++] = (dn_arg){DNNL_ARG_SRC, av, src, NULL};
        args[na++] = (dn_arg){DNNL_ARG_WEIGHTS, bin, S->vals.data[bin].md, NULL};
        if (biasv >= 0) args[na++] = (dn_arg){DNNL_ARG_BIAS, biasv, bias1, NULL};
        int e = dn_chain_out(S, n, steps, used);
        st = dn_finish(S, n, pd, args, na, steps, used, &dst);
        if (!st) S->ent_val[e] = dn_alias_new(S, S->ent_val[e], dst_nd);
    }
    while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
    return st;
}

/* A matmul of activations: its weights no constant, nor a permute of one (the weights a "dense"
 * composite reads transposed), so never graft's GEMV */
static bool activations_product(dn_state *S, const rt_json_node *c) {
    int b = c->op == IR_OP_MATMUL ? dn_arg_entry(S, c, 1) : -1;
    if (b < 0) return false;
    const rt_json_node *w = S->ent_node[b].node;
    if (w->kind == RT_JSON_KERNEL && w->op == IR_OP_PERMUTE_DIMS && dn_arg_entry(S, w, 0) >= 0)
        w = S->ent_node[dn_arg_entry(S, w, 0)].node;
    return w->kind != RT_JSON_CONST && !dn_const_entry(S, (int)S->row_ptr_of[w - S->node0]);
}

/* The scaling stays out of a primitive of its own: (s x) W = s (x W), an output scale of the
 * product's primitive, applied before its post-ops (a mask added after). dn_scale_folds is the
 * part of the check that needs no value of x yet (dn_op_permute asks it before x has one). */
bool dn_scale_folds(dn_state *S, const rt_json_node *n, int *xe, float *s) {
    if ((n->op != IR_OP_MULTIPLY && n->op != IR_OP_DIVIDE) || n->noutputs != 1 || S->opts.no_fuse || dn_in_composite(n))
        return false;
    int e = dn_out_entry(S, n), x = dn_arg_entry(S, n, 0), ce = dn_arg_entry(S, n, 1);
    float c;
    if (n->op == IR_OP_MULTIPLY && !dn_scalar_const(S, ce, &c)) {
        ce = x;
        x = dn_arg_entry(S, n, 1);
    }
    if (!dn_scalar_const(S, ce, &c) || !isfinite(c) || c == 0.f || x < 0 || S->is_head[e] || S->cons[e].len != 1 ||
        !activations_product(S, S->cons[e].data[0]) || dn_entry_ndim(S, x) != n->ndims[0] ||
        memcmp(dn_entry_shape(S, x), n->shapes[0], sizeof(int64_t) * (size_t)n->ndims[0]))
        return false;
    /* (a float dequantize of levels stays: int8 readers take its levels, dn_q_levels_conv) */
    for (uint32_t i = 0; i < S->qdeq.len; i++)
        if (S->qdeq.data[i].val == e) return false;
    *s = n->op == IR_OP_DIVIDE ? 1.f / c : c;
    *xe = x;
    return isfinite(*s);
}

bool dn_fold_scale(dn_state *S, const rt_json_node *n) {
    int x;
    float s;
    if (!dn_scale_folds(S, n, &x, &s) || S->ent_val[x] < 0 || S->vals.data[S->ent_val[x]].md.data_type != dnnl_f32)
        return false;
    gr_vec_push(&S->scaled, ((dn_scaled){dn_out_entry(S, n), S->ent_val[x], s}));
    gr_vec_push(&S->pend, n);
    S->stats.nfused_nodes++;
    return true;
}

/* Value of matmul operand e: the unscaled one of a folded scaling (its factor into *scale) */
static gr_status operand_val(dn_state *S, const rt_json_node *n, int e, int *v, float *scale) {
    for (uint32_t i = 0; i < S->scaled.len; i++)
        if (S->scaled.data[i].ent == e) {
            *v = S->scaled.data[i].val;
            *scale *= S->scaled.data[i].s;
            return GR_OK;
        }
    return dn_need_val(S, n, e, v);
}

/* which views a matmul may use: operands read in place, a permuted dst */
enum { VIEW_SRC = 1, VIEW_DST = 2 };

static gr_status matmul(dn_state *S, const rt_json_node *n, const dn_comp *comp, int views);

gr_status dn_op_matmul(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    gr_status st = matmul(S, n, comp, VIEW_SRC | VIEW_DST);
    S->out_scale = 0.f;
    return st;
}

/* views: VIEW_* taken where they come (else plain operands and dst) */
static gr_status matmul(dn_state *S, const rt_json_node *n, const dn_comp *comp, int views) {
    int a = dn_arg_entry(S, n, 0), b = dn_arg_entry(S, n, 1), av = -1, bv = -1;
    /* "dense": the weights are permute_dims(w) of the last two axes; w is read transposed */
    bool tr = comp && comp->b >= 0;
    if (tr) b = comp->b;
    float scale = 1.f;
    gr_status st = operand_val(S, n, a, &av, &scale);
    if (!st) st = operand_val(S, n, b, &bv, &scale);
    if (st) return st;
    S->out_scale = scale != 1.f ? scale : 0.f;
    int nd = n->ndims[0];
    if (dn_entry_ndim(S, a) < 2 || dn_entry_ndim(S, b) < 2 || nd > 6)
        return dn_fail(S, n, dnnl_success, "matmul of 1-D operands is not supported");
    bool bconst = dn_const_entry(S, b);
    /* views outside fused composites only: nothing is consumed before the retry below */
    if (comp) views = 0;
    bool aview = (views & VIEW_SRC) && in_place_view(&S->vals.data[av].md, nd);
    bool bview = (views & VIEW_SRC) && !bconst && in_place_view(&S->vals.data[bv].md, nd);
    if (!aview && (st = dn_plain(S, n, av, &av))) return st;
    if (!bconst && !bview && (st = dn_plain(S, n, bv, &bv))) return st;
    dnnl_memory_desc_t amd, bmd, bany, dst, biasmd;
    if (aview) amd = S->vals.data[av].md;
    else dn_plain_expand(&amd, &S->vals.data[av].md, nd);
    if (tr) transposed_md(&bmd, nd, S->vals.data[bv].md.ndims, S->vals.data[bv].md.dims);
    else if (bview) bmd = S->vals.data[bv].md;
    else dn_plain_expand(&bmd, &S->vals.data[bv].md, nd);
    bany = bmd;
    if (bconst) dnnl_memory_desc_init_by_tag(&bany, nd, bmd.dims, dnnl_f32, dnnl_format_tag_any);
    dn_plain_md(&dst, nd, n->shapes[0]);
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    int k = dn_chain_of(S, n, comp, steps, true, nd, n->shapes[0], &ignore);
    int biasv = -1;
    int64_t N = n->shapes[0][nd - 1];
    /* (a product of activations outside a composite takes no bias: nothing is consumed
     * before the retry on plain copies below; a constant add is a binary post-op then. Nor
     * does a product with a folded scaling: oneDNN scales the bias with the product, and
     * s (x W) + b is not s (x W + b); the add stays a post-op, applied after the scale) */
    bool bias = (comp || bconst) && scale == 1.f && dn_take_bias(S, steps, &k, nd - 1, nd, N, &biasv);
    /* collapsed: the primitive sees 2-D views of src, dst and the post-op operands (the entries
     * of those are swapped for views until the primitive is emitted); the result is a view
     * with the result's shape */
    int64_t rows = aview || bview ? 0 : collapse_rows(S, nd, &amd, &bmd, steps, k, n->shapes[0]);
    /* (not with collapsed rows: the product's dst is then a plain 2-D view) */
    bool dview = (views & VIEW_DST) && !bconst && !k && !bias && !rows && permuted_dst(S, n, nd, &dst);
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
    /* dnnl.precision=bf16: src, weights (`any`, converted once) and, where every reader takes
     * it, dst in bfloat16; the float32 weights are not read in place then */
    bool bf16 = bconst && dn_bf16_node(S, n);
    bool bf16_dst = bf16 && dn_bf16_entry(S, dn_chain_out(S, n, steps, k));
    dnnl_data_type_t sdt = bf16 ? dnnl_bf16 : dnnl_f32, ddt = bf16_dst ? dnnl_bf16 : dnnl_f32;
    if (S->vals.data[av].md.data_type != sdt) {
        dnnl_memory_desc_t want = S->vals.data[av].md;
        dn_md_dt(&want, sdt);
        if ((st = dn_as(S, n, av, &want, &av))) return st;
    }
    dn_md_dt(&amd, sdt);
    dn_md_dt(&dst, ddt);
    if (bf16) dn_md_dt(&bany, dnnl_bf16);
    int pnd = rows ? 2 : nd, saved_e[DN_MAX_STEPS], saved_v[DN_MAX_STEPS], nsaved = 0;
    dnnl_memory_desc_t dst_nd = dst;
    if (rows) {
        int64_t a2[2] = {rows, amd.dims[nd - 1]}, d2[2] = {rows, N}, b2[2] = {bmd.dims[nd - 2], N};
        dn_plain_md(&amd, 2, a2);
        dn_plain_md(&dst, 2, d2);
        dn_md_dt(&amd, sdt);
        dn_md_dt(&dst, ddt);
        if (tr) transposed_md(&bmd, 2, S->vals.data[bv].md.ndims, S->vals.data[bv].md.dims);
        else dn_plain_md(&bmd, 2, b2);
        bany = bmd;
        if (bconst) dnnl_memory_desc_init_by_tag(&bany, 2, bmd.dims, sdt, dnnl_format_tag_any);
        for (int i = 0; i < k && !st; i++) {
            if (steps[i].kind != STEP_BINARY) continue;
            int e = steps[i].src1, v = S->ent_val[e];
            int cn = dn_entry_ndim(S, e);
            /* a full result's rows, else one row (collapse_rows: leading 1s, whatever its rank) */
            bool full = cn == nd && !memcmp(dn_entry_shape(S, e), n->shapes[0], sizeof(int64_t) * (size_t)nd);
            int64_t c2[2] = {full ? rows : 1, cn ? dn_entry_shape(S, e)[cn - 1] : 1};
            dnnl_memory_desc_t vmd;
            dn_plain_md(&vmd, 2, c2);
            if (!(st = dn_plain(S, n, v, &v))) {
                saved_e[nsaved] = e;
                saved_v[nsaved++] = S->ent_val[e];
                S->ent_val[e] = dn_alias_new(S, v, &vmd);
            }
        }
    }
    if (!st && bconst && !bf16 && pnd == 2 && !aview) {
        bool done = false;
        st = conv1x1_matmul(S, n, av, bv, bias ? biasv : -1, steps, k, &amd, &bmd, &dst_nd, &done);
        if (done || st) {
            while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
            if (!st && rows) S->stats.ncollapsed++;
            return st;
        }
    }
    /* 3-D views seen as 4-D with a leading unit dim: oneDNN 2.6's brgemm takes strided
     * [1, B*H, S, D] (acbd-like) operands and dst, not the same strides in 3-D (gemm:jit) */
    if ((aview || bview || dview) && nd == 3) {
        lead_unit(&amd);
        lead_unit(&bmd);
        lead_unit(&dst);
        bany = bmd;
        pnd = 4;
    }
    if (bias) dn_plain_expand(&biasmd, &S->vals.data[biasv].md, pnd);
    dnnl_matmul_desc_t desc;
    dnnl_status_t ds = dnnl_matmul_desc_init(&desc, &amd, &bany, biasv >= 0 ? &biasmd : NULL, &dst);
    if (!st && ds != dnnl_success) st = dn_fail(S, n, ds, "invalid matmul");
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used = 0;
    dnnl_primitive_desc_t pd;
    /* constant weights in their own layout for gemm:jit (AVX2), which reads plain weights as
     * fast as its own; `any` when that takes fewer post-ops or lands on ref. brgemm (AVX-512)
     * repacks plain weights on every run: its own blocked layout instead (the copy replaces
     * the original after prepare, peak RSS alike). Min of 100 runs, weights cold, 2 threads,
     * plain -> blocked: 49 x 768 . 768 x 3072 2.28 -> 0.97 ms, 49 x 3072 . 3072 x 768 1.45 ->
     * 0.98, 196 x 384 . 384 x 1536 0.85 -> 0.71, 3136 x 96 . 96 x 384 0.78 -> 0.70 (1 thread:
     * 4.09 -> 1.90 ms for the first). Transposed weights always get `any`. */
    bool placed = false;
    dnnl_matmul_desc_t pdesc;
    if (!st && bconst && !tr && !bf16 &&
        dnnl_matmul_desc_init(&pdesc, &amd, &bmd, biasv >= 0 ? &biasmd : NULL, &dst) == dnnl_success) {
        if (dn_fuse_create(S, n, &pdesc, pnd, steps, k, &pd, &used, args, &na) == GR_OK) {
            const char *impl = NULL;
            placed = used == k && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
                     impl && strncmp(impl, "ref", 3) && strncmp(impl, "brg", 3);
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
     * after prepare (runtime/json/json_runtime.h "Constant ownership"), so it costs no memory.
     * Those figures are an AMD EPYC's; on Intel (Sapphire Rapids, ONEDNN_MAX_CPU_ISA=AVX2) the
     * transposed weights are the slower ones at every shape (a matmul alone, min of 20 runs, 1
     * thread, plain -> transposed: 96 x 384 . 384 x 1536 1.04 -> 1.09 ms, with its GELU 1.13
     * -> 1.21; 197 x 192 . 192 x 768 with its GELU 0.63 -> 0.80; 2 threads, 49 x 768 . 768 x
     * 3072 1.11 -> 1.20, weights cold 1.26 -> 1.39), so there the weights stay in place. */
    int64_t mrows = dst.dims[pnd - 2], kdim = amd.dims[pnd - 1], ncols = dst.dims[pnd - 1];
    if (!st && placed && S->opts.transpose_weights && pnd <= 4 && mrows >= 16 && mrows < 512 && ncols > kdim &&
        impl_is(pd, "gemm") && transposed_pays()) {
        static const dnnl_format_tag_t TR[5] = {0, 0, dnnl_ba, dnnl_acb, dnnl_abdc};
        dnnl_memory_desc_t btr;
        dnnl_primitive_desc_t tpd;
        int tused = 0, tna = 0;
        dn_arg targs[4 + DN_MAX_STEPS];
        if (dnnl_memory_desc_init_by_tag(&btr, pnd, bmd.dims, dnnl_f32, TR[pnd]) == dnnl_success &&
            dnnl_matmul_desc_init(&pdesc, &amd, &btr, biasv >= 0 ? &biasmd : NULL, &dst) == dnnl_success &&
            dn_fuse_create(S, n, &pdesc, pnd, steps, k, &tpd, &tused, targs, &tna) == GR_OK) {
            if (tused == k && impl_is(tpd, "gemm")) {
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
    if (!st && !placed) st = dn_fuse_create(S, n, &desc, pnd, steps, k, &pd, &used, args, &na);
    if (!st && bf16 && dn_pd_is_ref(pd)) {
        /* no bf16 kernel but ref: float32 as without the option */
        dnnl_primitive_desc_destroy(pd);
        while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
        S->bf16 = false;
        st = matmul(S, n, comp, views);
        S->bf16 = true;
        return st;
    }
    if ((aview || bview || dview) && (st || dn_pd_is_ref(pd) || views_lose_brgemm(S, n, pd, &amd, &bmd, &dst, steps, k))) {
        /* oneDNN rejects these strides or has no jit kernel for them, or they cost the
         * product its brgemm kernel: plain copies of the operands, then a plain dst too */
        if (st && S->diag) gr_diag_clear(S->diag);
        if (!st) dnnl_primitive_desc_destroy(pd);
        return matmul(S, n, comp, aview || bview ? views & ~VIEW_SRC : 0);
    }
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
    int e = dn_chain_out(S, n, steps, used);
    st = dn_finish(S, n, pd, args, na, steps, used, &dst);
    while (nsaved--) S->ent_val[saved_e[nsaved]] = saved_v[nsaved];
    if (!st && (rows || pnd != nd)) S->ent_val[e] = dn_alias_new(S, S->ent_val[e], &dst_nd);
    if (!st && rows) S->stats.ncollapsed++;
    if (!st && bf16_dst) st = dn_bf16_settle(S, n, e);
    return st;
}

