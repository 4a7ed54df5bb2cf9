/* The oneDNN engine's convolutions (1-D, 2-D, 3-D, transposed, grouped and depthwise): oneDNN's
 * primitives, the stem that reads its input in place, pixel-shuffle deconvolutions, and graft's
 * own AVX2 Winograd kernel (dnnl_wino.c) for 3x3 convolutions where it beats oneDNN's and for
 * 3x3x3 ones, which oneDNN has none for. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* ---------------------------------------------------------------- conv ---- */

/* Node c is a 2-D transposed convolution conv_build runs as op_deconv_pixel (its conditions,
 * read from c before it is built): kernel == stride, no padding, no dilation, one group,
 * canonical layouts, constant weights. */
static bool pixel_deconv(dn_state *S, const rt_json_node *c) {
    if (c->op != IR_OP_CONV2D_TRANSPOSE || S->opts.no_pixel_deconv || dn_attr_int(c, "groups", 1) != 1 ||
        strcmp(dn_attr_str(c, "data_layout", "NCHW"), "NCHW") || strcmp(dn_attr_str(c, "kernel_layout", "IOHW"), "IOHW") ||
        strcmp(dn_attr_str(c, "out_layout", "NCHW"), "NCHW"))
        return false;
    int w = dn_arg_entry(S, c, 1);
    if (w < 0 || S->ent_node[w].node->kind != RT_JSON_CONST || dn_entry_ndim(S, w) != 4 || c->ndims[0] != 4) return false;
    const int64_t *ws = dn_entry_shape(S, w);
    int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pad[4] = {0}, op[2] = {0, 0};
    dn_attr_axes(c, "strides", st, 2);
    dn_attr_axes(c, "dilation", dl, 2);
    dn_attr_axes(c, "output_padding", op, 2);
    dn_attr_pads(c, pad, 2);
    return st[0] == ws[2] && st[1] == ws[3] && dl[0] == 1 && dl[1] == 1 && !op[0] && !op[1] && !pad[0] && !pad[1] &&
           !pad[2] && !pad[3];
}

/* The index in S->pix_defer of entry e (-1: none). */
static int pix_deferred(dn_state *S, int e) {
    for (int i = 0; i < S->npix_defer; i++)
        if (S->pix_defer[i].e == e) return i;
    return -1;
}

/* A 2-D transposed convolution whose kernel equals its stride (no padding, no overlap), as in
 * FPN upsampling: a 1x1 convolution to O*kh*kw channels, then a reorder that interleaves them
 * into the output pixels. oneDNN 2.6's own deconvolution kernels take hundreds of ms on such
 * shapes. Bias and per-channel affine ops fold first; eltwise post-ops commute with the
 * interleave and stay fused. When another such convolution alone reads the result (PP-OCR
 * det's head), the interleave waits: the channels go (kh, kw, O), so the 1x1 result is the
 * channels-last image (N, O, H, W * kh * kw) that the reader's 1x1 convolution (per pixel, so
 * blind to the pixel order) reads as it is, and the reader's interleave places both kernels'
 * pixels: one reorder of the larger map fewer. */
static gr_status op_deconv_pixel(dn_state *S, const rt_json_node *n, const dn_comp *comp, int x, int xv, int w,
                                 int wv, int64_t kh, int64_t kw) {
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    int64_t N = xs[0], I = xs[1], H = xs[2], W = xs[3], O = os[1], K = kh * kw, OK = O * K;
    /* the source's own interleave, deferred to here: (kh0, kw0) pixels per source pixel */
    int64_t kh0 = 1, kw0 = 1;
    int di = pix_deferred(S, x);
    if (di >= 0) {
        kh0 = S->pix_defer[di].kh, kw0 = S->pix_defer[di].kw;
        H /= kh0, W /= kw0;
        /* no float value of the node's shape: a tapped run follows it to this one's */
        S->ent_val[x] = -1;
    }
    int64_t Wx = W * kw0 * kh0; /* the 1x1 convolution's width */
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    int k = dn_chain_of(S, n, comp, steps, true, 4, os, &ignore);
    int bv = -1;
    dn_take_affine(S, steps, &k, O, S->ent_node[w].node->kind == RT_JSON_CONST, &wv, &bv, true, I, O, K, 1);
    for (int i = 0; i < k; i++)
        if (steps[i].kind != STEP_ELTWISE) k = i;
    int fe = dn_chain_out(S, n, steps, k);
    bool defer = kh0 == 1 && kw0 == 1 && !S->opts.no_layout_plan && !S->is_head[fe] && S->cons[fe].len == 1 &&
                 S->npix_defer < (int)(sizeof(S->pix_defer) / sizeof(S->pix_defer[0])) &&
                 dn_arg_entry(S, S->cons[fe].data[0], 0) == fe && pixel_deconv(S, S->cons[fe].data[0]);
    const float *wsrc = dn_const_data(S, wv), *bsrc = bv >= 0 ? dn_const_data(S, bv) : NULL;
    if (!wsrc || (bv >= 0 && !bsrc)) return dn_const_missing(S, n);
    float *w2 = dn_owned_alloc(S, sizeof(float) * (size_t)(OK * I)), *b2 = dn_owned_alloc(S, sizeof(float) * (size_t)OK);
    if (!w2 || !b2) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    for (int64_t o = 0; o < O; o++)
        for (int64_t q = 0; q < K; q++) {
            int64_t r = defer ? q * O + o : o * K + q; /* output channel r of the 1x1 convolution */
            for (int64_t c = 0; c < I; c++) w2[r * I + c] = wsrc[(c * O + o) * K + q];
            b2[r] = bsrc ? bsrc[o] : 0.f;
        }
    dnnl_dims_t wd = {OK, I, 1, 1}, xd = {N, I, H, Wx}, td = {N, OK, H, Wx}, one = {1, 1}, zero = {0, 0}, bd = {OK};
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
        ds = dn_try_create(S, n, &desc, 4, steps, k, 0, a == 0, &pd, &used, args, &na, &st);
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
    int e = dn_chain_out(S, n, steps, used);
    S->pending_out = -1;
    if (defer && e == fe) {
        /* the reader's source: the value (its shape is the image's, not the entry's) */
        dnnl_dims_t wide = {N, O, H, Wx * K};
        dnnl_memory_desc_t wmd;
        dnnl_memory_desc_init_by_tag(&wmd, 4, wide, dnnl_f32, dnnl_acdb);
        S->pix_defer[S->npix_defer].e = e;
        S->pix_defer[S->npix_defer].kh = kh;
        S->pix_defer[S->npix_defer++].kw = kw;
        S->ent_val[e] = dn_alias_new(S, tv, &wmd);
        return GR_OK;
    }
    /* interleave: tmp [N][H][W][kh0][kw0][O][kh][kw] ([kh][kw][O] when deferral was planned
     * but oneDNN left the chain short) -> out [N][H][kh0][kh][W][kw0][kw][O] (both
     * channels-last; kh0 = kw0 = 1 but for a deferred source interleave), as 8-D views with
     * dims (N, O, H, kh0, kh, W, kw0, kw) */
    int64_t OH = os[2], OW = os[3];
    dnnl_dims_t vd = {N, O, H, kh0, kh, W, kw0, kw},
                vs = {H * Wx * OK, defer ? 1 : K, Wx * OK, kw0 * OK, defer ? kw * O : kw, kh0 * kw0 * OK, OK, defer ? O : 1};
    dnnl_dims_t us = {OH * OW * O, 1, kh0 * kh * OW * O, kh * OW * O, OW * O, kw0 * kw * O, kw * O, O}, od = {N, O, OH, OW};
    dnnl_memory_desc_t view, out8, omd;
    dnnl_memory_desc_init_by_strides(&view, 8, vd, dnnl_f32, vs);
    dnnl_memory_desc_init_by_strides(&out8, 8, vd, dnnl_f32, us);
    dnnl_memory_desc_init_by_tag(&omd, 4, od, dnnl_f32, dnnl_acdb);
    dnnl_primitive_desc_t rpd;
    ds = dnnl_reorder_primitive_desc_create(&rpd, &view, S->eng, &out8, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot interleave the transposed convolution");
    int ov = dn_val_new(S, V_TMP, &omd);
    dn_arg ra[2] = {{DNNL_ARG_FROM, tv, view, NULL}, {DNNL_ARG_TO, ov, out8, NULL}};
    st = dn_emit(S, n, rpd, ra, 2, true);
    if (st) return st;
    S->ent_val[e] = ov;
    return GR_OK;
}

/* ------------------------------------------------------------ winograd ---- */

/* graft's own AVX2 kernels (dnnl_avx2_impl.h) may run: oneDNN's ISA is at least avx2 (it
 * honours ONEDNN_MAX_CPU_ISA) and the CPU has AVX2 and FMA (the code's target). */
bool dn_avx2_kernels_ok(void) {
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
    return dn_avx2_kernels_ok() && (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core;
}

/* A convolution Winograd F(m x m, 3x3) computes (graft's or oneDNN's): 3x3 (3x3x3) weights (ws: O,
 * I, [kd,] kh, kw), stride 1, no dilation, one group; sd spatial dims. */
static bool wino_shape(const int64_t *ws, const int64_t *strides, const int64_t *dil, int64_t G, int sd) {
    bool ok = G == 1;
    for (int i = 0; i < sd; i++) ok &= ws[2 + i] == 3 && strides[i] == 1 && dil[i] == 1;
    return ok;
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
 * measured, left to oneDNN.
 * The tiles are the batched matmul's rows: with fewer than WINO_MIN_TILES it loses to direct
 * whatever the weights (Sapphire Rapids under ONEDNN_MAX_CPU_ISA=AVX2, one thread, CPU time,
 * min of 8 runs, ms a conv, direct / F(2x2) / F(4x4); tiles of F(4x4) at 14x14: 16, of
 * F(2x2) at 7x7: 16, of F(4x4) at 20x20: 25):
 *   128-32 @14    0.126  0.132  0.157      96-208 @14    0.602  0.398  0.600
 *   128-32 @7     0.040  0.073  0.093      256-256 @14   1.953  1.249  1.812
 *   32-128 @7     0.044  0.069  0.106      160-320 @7    0.477  0.805  1.066
 *   96-24 @20     0.172  0.179  0.163      512-512 @7    2.454  4.213  5.916
 * and F(2x2), whose transforms weigh more against its 2.25x fewer products than F(4x4)'s
 * against 4x, wins only from WINO_F2_MIN_CO channel pairs (32-64 @14: 0.066 0.073; 128-32 @14
 * above; 96-208 @14 up: 0.66x). DenseNet-121's 40 convs at 14x14 and 7x7: 5.0 -> 3.7 ms. */
#define WINO_MIN_TILES 24
#define WINO_F2_MIN_CO 8192
static int wino_tile(int64_t N, int64_t C, int64_t O, int64_t OH, int64_t OW) {
    if (C < 16 || O < 16) return 0;
    double cp = (double)((C + 7) / 8 * 8), op = (double)((O + 7) / 8 * 8);
    double t4 = (double)(N * ((OH + 3) / 4) * ((OW + 3) / 4)), t2 = (double)(N * ((OH + 1) / 2) * ((OW + 1) / 2));
    if (t4 >= WINO_MIN_TILES && 36 * cp * op * 4 / t4 <= 96 * 1024) return 4;
    if (t2 >= WINO_MIN_TILES && cp * op >= WINO_F2_MIN_CO && 16 * cp * op * 4 / t2 <= 128 * 1024) return 2;
    return 0;
}

/* The output tile for a 3x3x3 stride-1 convolution of batch N (0: oneDNN's direct kernel), by
 * transformed weight bytes per tile as wino_tile (U holds 3 depth taps: 108/27 of the weights in
 * F(4x4), 48/27 in F(2x2)). r3d_18's convs on one CPU pinned (ms, direct / F(2x2) / F(4x4); a
 * shared machine, so +-20%):
 *   C-O @DxHxW     KiB/tile(F4)  avx512_core             AVX2
 *   64-64 @8x56       1.1        28.0 / 28.5 / 20.5      78 / 97 / 66
 *   128-128 @4x28      36        12.4 / 11.6 /  8.5      40 / 37 / 31
 *   256-256 @2x14     885         5.1 /  6.9 /  6.0      17 / 20 / 11
 *   512-512 @1x7     4608         1.9 /  8.5 / 15.0      5.2 / 35 / 48
 * F(2x2) never wins by much; F(4x4) up to 96 KiB a tile (wino_tile's bound). 256-256 @2x14 under
 * AVX2 would gain 6 ms a conv for 21 MiB more weights each: past ONNX Runtime's peak memory. */
static int wino_tile3(int64_t N, int64_t C, int64_t O, int64_t OD, int64_t OH, int64_t OW) {
    if (C < 16 || O < 16) return 0;
    double cp = (double)((C + 7) / 8 * 8), op = (double)((O + 7) / 8 * 8);
    double t4 = (double)(N * OD * ((OH + 3) / 4) * ((OW + 3) / 4));
    return 3 * 36 * cp * op * 4 / t4 <= 96 * 1024 ? 4 : 0;
}

/* The eltwise step st as an op of graft's own kernels (dnnl_avx2_impl.h), or false. */
bool dn_eltwise_vop(const dn_step *st, dn_vop *op) {
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
        if (!dn_eltwise_vop(st, &op)) {
            int nd = dn_entry_ndim(S, st->out);
            if (st->kind != STEP_BINARY || st->alg != dnnl_binary_add || *res_entry >= 0 || S->ent_val[st->src1] < 0 ||
                dn_entry_ndim(S, st->src1) != nd ||
                memcmp(dn_entry_shape(S, st->src1), dn_entry_shape(S, st->out), (size_t)nd * sizeof(int64_t)))
                break;
            *res_entry = st->src1;
        }
        p->ops[p->nops++] = op;
    }
    return used;
}

/* The batched matmul of a pass of P tile columns (see dn_wino): primitive and its memories (V,
 * U, M, scratchpad; handles of V, M and the scratchpad set when it runs, U's once made). False:
 * no jit one. */
static bool wino_matmul(dn_state *S, dn_wino *p, int k, int64_t P) {
    int64_t aa = (p->m + 2) * (p->m + 2), rows = p->OD * P, K = p->kd * p->Cp;
    dnnl_dims_t vd = {aa, rows, K}, ud = {aa, K, p->Op}, md = {aa, rows, p->Op};
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

/* The src / dst layout of graft's Winograd (see dn_wino_lay) of dims (nd = 4 or 5) in the format
 * of tag: channels-last or blocked by 8. */
static void wino_lay(dnnl_memory_desc_t *md, dn_wino_lay *l, int nd, const int64_t *dims, dnnl_format_tag_t tag) {
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, tag);
    const dnnl_dim_t *st = md->format_desc.blocking.strides;
    *l = (dn_wino_lay){st[0], st[1], nd == 5 ? st[2] : 0, st[nd - 2], st[nd - 1],
                       md->format_desc.blocking.inner_nblks ? (int)md->format_desc.blocking.inner_blks[0] : 1};
}

/* The layout graft's Winograd reads src value xv in (nd dims) and writes dst in: 2-D nChw8c (it
 * runs below avx512_core only, where the region's convolutions use it); 3-D the source's own when
 * it is channels-last or nCdhw8c (no reorder on either side), else what oneDNN's 3-D
 * convolutions pick at the ISA (channels-last on avx512_core, nCdhw8c below). */
static dnnl_format_tag_t wino_tag(dn_state *S, int xv, int nd) {
    if (nd == 4) return dnnl_aBcd8b;
    static const dnnl_format_tag_t TAGS[] = {dnnl_acdeb, dnnl_aBcde8b};
    const dnnl_memory_desc_t *xmd = &S->vals.data[xv].md;
    for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++) {
        dnnl_memory_desc_t m;
        if (xmd->ndims == 5 && dnnl_memory_desc_init_by_tag(&m, 5, xmd->dims, dnnl_f32, TAGS[i]) == dnnl_success &&
            dnnl_memory_desc_equal(&m, xmd))
            return TAGS[i];
    }
    return rt_dnnl_channel_block() == 16 ? dnnl_acdeb : dnnl_aBcde8b;
}

/* Conv n (sd = 2: 3x3, sd = 3: 3x3x3; stride 1, dilation 1, one group, NC[D]HW / OI[D]HW,
 * constant weights wv read at strides wstr; bias bv or -1; post-op steps; pad: sd front / top /
 * left pads, then the back / bottom / right ones) as one primitive of ours (dn_wino_run). *done
 * false: not taken (nothing emitted), the caller goes on with oneDNN. */
static gr_status wino_conv(dn_state *S, const rt_json_node *n, int sd, int xv, int wv, const int64_t *wstr, int bv,
                           const dn_step *steps, int k, const int64_t *xs, const int64_t *os, const int64_t *pad, bool *done) {
    *done = false;
    bool vol = sd == 3;
    dn_wino q = {0};
    q.kd = vol ? 3 : 1;
    q.N = xs[0], q.C = xs[1], q.D = vol ? xs[2] : 1, q.H = xs[sd], q.W = xs[sd + 1];
    q.O = os[1], q.OD = vol ? os[2] : 1, q.OH = os[sd], q.OW = os[sd + 1];
    q.pf = vol ? pad[0] : 0, q.pt = pad[sd - 2], q.pl = pad[sd - 1];
    /* every output depth has an input depth of its own (it transforms each input slice once)
     * while OD <= D */
    if (vol && q.OD > q.D) return GR_OK;
    q.m = vol ? wino_tile3(q.N, q.C, q.O, q.OD, q.OH, q.OW) : wino_tile(q.N, q.C, q.O, q.OH, q.OW);
    if (!q.m) return GR_OK;
    /* weights (O, I, kd, kh, kw), 2-D ones with one depth tap */
    int64_t w5[5] = {wstr[0], wstr[1], vol ? wstr[2] : 0, wstr[sd], wstr[sd + 1]};
    size_t wlast = (size_t)((q.O - 1) * w5[0] + (q.C - 1) * w5[1] + (q.kd - 1) * w5[2] + 2 * w5[3] + 2 * w5[4]);
    gr_status st = dn_need(S, n, wv, sizeof(float) * (wlast + 1), "graft_wino");
    if (st) return st;
    int nd = sd + 2;
    dnnl_format_tag_t tag = wino_tag(S, xv, nd);
    dnnl_memory_desc_t xmd, omd;
    wino_lay(&xmd, &q.src, nd, xs, tag);
    wino_lay(&omd, &q.dst, nd, os, tag);
    q.tr = (q.OH + q.m - 1) / q.m, q.tc = (q.OW + q.m - 1) / q.m, q.Q = q.N * q.tr * q.tc;
    q.Cp = (q.C + 7) / 8 * 8, q.Op = (q.O + 7) / 8 * 8;
    int64_t aa = (q.m + 2) * (q.m + 2), per_col = aa * q.OD * (q.kd * q.Cp + q.Op) * (int64_t)sizeof(float);
    int64_t passes = (q.Q * per_col + WINO_PASS_BYTES - 1) / WINO_PASS_BYTES;
    /* at least 32 matmul rows a pass (many channels) */
    if (passes > 1 && q.OD * q.Q / passes < 32) passes = q.OD * q.Q / 32 > 1 ? q.OD * q.Q / 32 : 1;
    q.chunk = (q.Q + passes - 1) / passes;
    int res = -1, used = wino_ops(S, steps, k, &q, &res);
    dn_wino *p = calloc(1, sizeof *p);
    float *bias = bv >= 0 ? dn_owned_alloc(S, sizeof(float) * (size_t)q.Op) : NULL;
    if (!p || (bv >= 0 && !bias)) {
        free(p);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    *p = q;
    p->stream = S->stream;
    int64_t last = q.Q - (q.Q - 1) / q.chunk * q.chunk; /* columns of the last pass */
    /* the matmuls first: nothing is emitted unless oneDNN has jit ones */
    if (!wino_matmul(S, p, 0, q.chunk) || (last != q.chunk && !wino_matmul(S, p, 1, last))) {
        dn_wino_free(p);
        return GR_OK;
    }
    *done = true;
    /* U: made once for every shape of a symbolic graph, like oneDNN's reordered weights */
    dnnl_dims_t ud = {aa, q.kd * q.Cp, q.Op};
    dnnl_memory_desc_t umd;
    dnnl_memory_desc_init_by_tag(&umd, 3, ud, dnnl_f32, dnnl_abc);
    wino_wctx wc = {p, w5};
    void *u;
    st = dn_const_made(S, n, wv, &umd, make_wino_u, &wc, &u);
    if (st) {
        dn_wino_free(p);
        return st;
    }
    for (int i = 0; i < 2; i++)
        if (p->mem[i][1]) dnnl_memory_set_data_handle(p->mem[i][1], u);
    if (bias) {
        memset(bias, 0, sizeof(float) * (size_t)q.Op);
        const float *b = dn_const_data(S, bv);
        if (!b) {
            dn_wino_free(p);
            return dn_const_missing(S, n);
        }
        memcpy(bias, b, sizeof(float) * (size_t)q.O);
        p->bias = bias;
    }
    dnnl_dims_t vd = {aa, q.OD * q.chunk, q.kd * q.Cp}, md = {aa, q.OD * q.chunk, q.Op};
    dnnl_memory_desc_t vmd, mmd;
    dnnl_memory_desc_init_by_tag(&vmd, 3, vd, dnnl_f32, dnnl_abc);
    dnnl_memory_desc_init_by_tag(&mmd, 3, md, dnnl_f32, dnnl_abc);
    int sx, rv = -1;
    st = dn_as(S, n, xv, &xmd, &sx);
    if (!st && res >= 0) st = dn_as(S, n, S->ent_val[res], &omd, &rv);
    if (st) {
        dn_wino_free(p);
        return st;
    }
    int e = dn_chain_out(S, n, steps, used);
    S->pending_out = -1;
    /* a concat source in dst's layout: written into its slot */
    dnnl_memory_desc_t slot;
    int ov = dn_slot_md(S, e, &slot) && dnnl_memory_desc_equal(&slot, &omd) ? dn_slot_val(S, e) : dn_val_new(S, V_TMP, &omd);
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
        /* the engine's scratchpad, which has room for every matmul's */
        dnnl_memory_desc_t smd;
        dnnl_dims_t sdims = {(dnnl_dim_t)S->scratch_bytes};
        dnnl_memory_desc_init_by_tag(&smd, 1, sdims, dnnl_u8, dnnl_a);
        args[na++] = (dn_arg){DNNL_ARG_SCRATCHPAD, -2, smd, NULL};
    }
    dn_consume(S, steps, used);
    char impl[40];
    snprintf(impl, sizeof impl, "graft_wino%s_%dx3:avx2", vol ? "3d" : "", q.m);
    if ((st = dn_emit_fn(S, n, dn_wino_run, p, dn_wino_free, "convolution", impl, args, na))) return st;
    S->ent_val[e] = ov;
    return GR_OK;
}

/* The output tile graft's Winograd would run float32 convolution node n (2-D, NCHW / OIHW) with
 * (op_conv's conditions, read before it is built), 0 for none: the quantized composites below
 * VNNI weigh it against int8 (dnnl_op_quant.c). */
int dn_conv_wino_tile(dn_state *S, const rt_json_node *n) {
    int w = dn_arg_entry(S, n, 1), x = dn_arg_entry(S, n, 0);
    if (n->op != IR_OP_CONV2D || !S->opts.winograd || !wino_isa_ok() || w < 0 || x < 0 || dn_entry_ndim(S, w) != 4 ||
        dn_entry_ndim(S, x) != 4 || n->ndims[0] != 4 || strcmp(dn_attr_str(n, "data_layout", "NCHW"), "NCHW") ||
        strcmp(dn_attr_str(n, "kernel_layout", "OIHW"), "OIHW"))
        return 0;
    const int64_t *ws = dn_entry_shape(S, w), *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    if (dn_attr_ints(n, "strides", st, 2) == 1) st[1] = st[0];
    if (dn_attr_ints(n, "dilation", dl, 2) == 1) dl[1] = dl[0];
    return wino_shape(ws, st, dl, dn_attr_int(n, "groups", 1), 2) ? wino_tile(os[0], xs[1], os[1], os[2], os[3]) : 0;
}

/* Node c is a convolution oneDNN runs with its Winograd kernel, on blocked layouts (op_conv's
 * conditions, read from c before it is built): avx512_core (below it graft's own), NCHW /
 * OIHW, constant weights, wino_shape, ONEDNN_WINO_MIN_CH channels in and out. */
static bool onednn_winograd(dn_state *S, const rt_json_node *c) {
    if (c->op != IR_OP_CONV2D || !S->opts.winograd || rt_dnnl_channel_block() != 16 || wino_isa_ok()) return false;
    int w = dn_arg_entry(S, c, 1);
    if (w < 0 || !dn_const_entry(S, w) || dn_entry_ndim(S, w) != 4) return false;
    const int64_t *ws = dn_entry_shape(S, w);
    int64_t st[2] = {1, 1}, dl[2] = {1, 1};
    if (dn_attr_ints(c, "strides", st, 2) == 1) st[1] = st[0];
    if (dn_attr_ints(c, "dilation", dl, 2) == 1) dl[1] = dl[0];
    return wino_shape(ws, st, dl, dn_attr_int(c, "groups", 1), 2) && ws[0] >= ONEDNN_WINO_MIN_CH &&
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
    if ((p->op != IR_OP_MAX_POOL2D && p->op != IR_OP_AVG_POOL2D) || S->vals.data[dn_root(S, xv)].kind != V_IN ||
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

/* Convolution c's result, after the nodes of its fused composite, goes into a concat slot. */
static bool into_slot(dn_state *S, const rt_json_node *c) {
    int e = dn_out_entry(S, c);
    dnnl_memory_desc_t md;
    for (int hop = 0; hop < DN_MAX_STEPS && !dn_slot_md(S, e, &md); hop++) {
        json_t *g = S->cons[e].len == 1 ? json_object_get(S->cons[e].data[0]->attrs, "dnnl_group") : NULL;
        if (S->is_head[e] || !json_is_integer(g) || json_integer_value(g) != (json_int_t)(c - S->node0)) return false;
        e = dn_out_entry(S, S->cons[e].data[0]);
    }
    return dn_slot_md(S, e, &md);
}

/* ------------------------------------------------- depthwise 1-D (ours) ---- */

/* oneDNN's kernel for the direct convolution (x, w, dst) without post-ops in plain or
 * channels-last src and dst: a jit one that is no GEMM (its depthwise kernels), else false.
 * s, d, pl, pr as for its descriptor. */
static bool dw_jit_kernel(dn_state *S, const int64_t *xd, const int64_t *od, const dnnl_memory_desc_t *w,
                          const dnnl_dims_t s, const dnnl_dims_t d, const dnnl_dims_t pl, const dnnl_dims_t pr) {
    static const dnnl_format_tag_t TAGS[] = {dnnl_abcd, dnnl_acdb};
    for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++) {
        dnnl_memory_desc_t x, y;
        dnnl_convolution_desc_t c;
        dnnl_primitive_desc_t pd;
        dnnl_memory_desc_init_by_tag(&x, 4, xd, dnnl_f32, TAGS[i]);
        dnnl_memory_desc_init_by_tag(&y, 4, od, dnnl_f32, TAGS[i]);
        if (dnnl_dilated_convolution_forward_desc_init(&c, dnnl_forward_inference, dnnl_convolution_direct, &x, w, NULL, &y,
                                                       s, d, pl, pr) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &c, S->attr_plain, S->eng, NULL) != dnnl_success)
            continue;
        const char *impl = NULL;
        bool jit = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                   !dn_pd_is_ref(pd) && !strstr(impl, "gemm");
        dnnl_primitive_desc_destroy(pd);
        if (jit) return true;
    }
    return false;
}

typedef struct dw1d_wctx {
    int64_t C, K, cs, ks;         /* weight (c, k) at c cs + k ks */
} dw1d_wctx;

static gr_status make_dw1d_w(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, const void *src,
                             const dnnl_memory_desc_t *dmd, void *dst, void *ctx) {
    (void)S, (void)n, (void)dmd;
    const dw1d_wctx *c = ctx;
    const float *w = (const float *)src + smd->offset0;
    float *o = dst;
    for (int64_t i = 0; i < c->C; i++)
        for (int64_t k = 0; k < c->K; k++) o[i * c->K + k] = w[i * c->cs + k * c->ks];
    return GR_OK;
}

/* Depthwise 1-D conv n (seen as 2-D of height 1: xs, os N x C x 1 x W; one filter per channel,
 * stride 1, no dilation, canonical layouts, constant weights wv read at strides wstr (G, 1, 1,
 * 1, K); bias bv or -1; post-op steps) as one primitive of ours (dn_dw1d_run) where oneDNN has
 * only its GEMM-based kernel for it (dw_jit_kernel). The audio encoder's 256 channels x 200
 * steps, kernel 15, at AVX2 (min of 20 runs per primitive, 1 thread): x64:gemm:jit 0.76-0.80 ms,
 * ours 0.06 (its SiLU then runs on its own, 0.03). *done false: not taken (nothing emitted). */
static gr_status dw1d_conv(dn_state *S, const rt_json_node *n, int xv, int wv, const int64_t *wstr, int bv,
                           const dn_step *steps, int k, const int64_t *xs, const int64_t *os, const int64_t *pad,
                           const dnnl_memory_desc_t *wany, const dnnl_dims_t s, const dnnl_dims_t d, const dnnl_dims_t pl,
                           const dnnl_dims_t pr, bool *done) {
    *done = false;
    dnnl_memory_desc_t slot;
    int e = dn_chain_out(S, n, steps, k);
    if (!dn_avx2_kernels_ok() || dn_slot_md(S, e, &slot) || dw_jit_kernel(S, xs, os, wany, s, d, pl, pr)) return GR_OK;
    dn_dw1d q = {.N = xs[0], .C = xs[1], .W = xs[3], .OW = os[3], .K = wany->dims[4], .pl = pad[1], .nparts = S->threads};
    int used = 0;
    for (; used < k && used < DN_VOP_MAX && dn_eltwise_vop(&steps[used], &q.ops[q.nops]); used++) q.nops++;
    size_t wlast = (size_t)((q.C - 1) * wstr[0] + (q.K - 1) * wstr[4]);
    gr_status st = dn_need(S, n, wv, sizeof(float) * (wlast + 1), "graft_dw1d");
    if (st) return st;
    dn_dw1d *p = malloc(sizeof *p);
    float *bias = bv >= 0 ? dn_owned_alloc(S, sizeof(float) * (size_t)q.C) : NULL;
    if (!p || (bv >= 0 && !bias)) {
        free(p);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    *done = true;
    dnnl_memory_desc_t wmd;
    dnnl_dims_t wd = {q.C, q.K};
    dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dnnl_f32, dnnl_ab);
    dw1d_wctx wc = {q.C, q.K, wstr[0], wstr[4]};
    void *w;
    if ((st = dn_const_made(S, n, wv, &wmd, make_dw1d_w, &wc, &w))) {
        free(p);
        return st;
    }
    q.w = w;
    if (bias) {
        const float *b = dn_const_data(S, bv);
        if (!b) {
            free(p);
            return dn_const_missing(S, n);
        }
        memcpy(bias, b, sizeof(float) * (size_t)q.C);
        q.bias = bias;
    }
    *p = q;
    dnnl_memory_desc_t xmd, omd, wsmd;
    dnnl_dims_t xd = {q.N, q.C, 1, q.W}, wsd = {q.nparts * dn_dw1d_row(&q)};
    dnnl_memory_desc_init_by_tag(&xmd, 4, xd, dnnl_f32, dnnl_abcd);
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    dnnl_memory_desc_init_by_tag(&wsmd, 1, wsd, dnnl_f32, dnnl_a);
    int sx;
    if ((st = dn_as(S, n, xv, &xmd, &sx))) {
        free(p);
        return st;
    }
    e = dn_chain_out(S, n, steps, used);
    S->pending_out = -1;
    int ov = dn_val_new(S, V_TMP, &omd);
    dn_arg args[3] = {{DNNL_ARG_SRC, sx, xmd, NULL},
                      {DNNL_ARG_DST, ov, omd, NULL},
                      {DNNL_ARG_WORKSPACE, dn_val_new(S, V_TMP, &wsmd), wsmd, NULL}};
    dn_consume(S, steps, used);
    if ((st = dn_emit_fn(S, n, dn_dw1d_run, p, free, "convolution", "graft_dw1d:avx2", args, 3))) return st;
    S->ent_val[e] = ov;
    return GR_OK;
}

/* Entry e goes on in the ISA's blocked layout towards a concat: into its slot, or only to
 * convolutions oneDNN runs with Winograd that write theirs (DenseNet's 1x1 -> 3x3
 * bottlenecks) or pools that do (the pool keeps its source's layout: DenseNet's transitions).
 * A convolution reading a blocked source then writes blocked too: on avx512_core `any` picks
 * channels-last brgconv, a reorder on either side. */
static bool goes_blocked(dn_state *S, int e);

/* c splits entry e of one image along its channels (MergeSiblings' merged convolutions): the
 * pieces are views of a blocked e (dn_op_split) when every piece but the last fills whole
 * blocks, some piece goes on blocked and the others are read only by convolutions, which
 * reorder a piece as they would the whole. */
static bool split_goes_blocked(dn_state *S, const rt_json_node *c, int e) {
    int nd = dn_entry_ndim(S, e);
    int64_t axis = dn_attr_int(c, "axis", 0);
    if (c->op != IR_OP_SPLIT || nd < 3 || nd > 5 || dn_entry_shape(S, e)[0] != 1 || (axis < 0 ? axis + nd : axis) != 1)
        return false;
    bool any = false;
    for (uint32_t o = 0; o < c->noutputs; o++) {
        int p = dn_out_entry(S, c) + (int)o;
        /* a slice off the blocks, or a region output: dn_op_split's general path, plain */
        if ((o + 1 < c->noutputs && c->shapes[o][1] % rt_dnnl_channel_block()) || S->is_head[p]) return false;
        if (!S->cons[p].len) continue;
        if (goes_blocked(S, p)) {
            any = true;
            continue;
        }
        for (uint32_t i = 0; i < S->cons[p].len; i++)
            if (S->cons[p].data[i]->op != IR_OP_CONV2D || dn_arg_entry(S, S->cons[p].data[i], 0) != p) return false;
    }
    return any;
}

static bool goes_blocked(dn_state *S, int e) {
    dnnl_memory_desc_t md;
    if (dn_slot_md(S, e, &md)) return true;
    if (S->is_head[e] || S->cons[e].len == 0) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        bool pool = (c->op == IR_OP_MAX_POOL2D || c->op == IR_OP_AVG_POOL2D) && dn_slot_md(S, dn_out_entry(S, c), &md);
        if (dn_arg_entry(S, c, 0) != e || !(pool || (onednn_winograd(S, c) && into_slot(S, c)) || split_goes_blocked(S, c, e)))
            return false;
    }
    return true;
}

/* A depthwise 1-D convolution runs as a 2-D one of height 1: oneDNN 2.6 has jit depthwise
 * kernels (jit_dw, brdgmm_dw) for 2-D only and runs 1-D ones on gemm:jit. */
static bool conv1d_as_2d(int sd, bool deconv, int64_t G, int64_t I) { return sd == 1 && !deconv && G > 1 && G == I; }

/* The entries a 1-D convolution seen as 2-D swaps for views with a dim of 1 at axis 2 (its
 * input, its post-ops' binary operands) while its primitive is built; op_conv puts them back. */
typedef struct conv_views {
    int e[DN_MAX_STEPS + 1], v[DN_MAX_STEPS + 1], n;
} conv_views;

/* Insert v at index at of a[0..len-1] */
static void ins_at(int64_t *a, int len, int at, int64_t v) {
    memmove(a + at + 1, a + at, sizeof(int64_t) * (size_t)(len - at));
    a[at] = v;
}

/* Value v seen with a dim of 1 at axis 2: a view of its memory, else of a plain copy. Rank
 * below 3 (a broadcast operand): plain, with leading 1s to rank 3 first. */
static gr_status unsq_view(dn_state *S, const rt_json_node *n, int v, int *out) {
    dnnl_memory_desc_t md;
    if (S->vals.data[v].md.ndims == 3 && dn_md_unsqueeze(&md, &S->vals.data[v].md, 2)) {
        *out = dn_alias_new(S, v, &md);
        return GR_OK;
    }
    gr_status st = dn_plain(S, n, v, &v);
    if (st) return st;
    dnnl_memory_desc_t p3;
    dn_plain_expand(&p3, &S->vals.data[v].md, 3);
    if (!dn_md_unsqueeze(&md, &p3, 2)) return dn_fail(S, n, dnnl_success, "cannot view a 1-D operand as 2-D");
    *out = dn_alias_new(S, v, &md);
    return GR_OK;
}

/* Swaps entry e's value for its 2-D view, remembering the original in cv. */
static gr_status unsq_entry(dn_state *S, const rt_json_node *n, int e, conv_views *cv) {
    for (int i = 0; i < cv->n; i++)
        if (cv->e[i] == e) return GR_OK;
    int v;
    gr_status st = unsq_view(S, n, S->ent_val[e], &v);
    if (st) return st;
    cv->e[cv->n] = e;
    cv->v[cv->n++] = S->ent_val[e];
    S->ent_val[e] = v;
    return GR_OK;
}

/* Some output's window lies wholly in the padding (a 1x1 kernel padded by 2). oneDNN 2.6
 * writes such outputs wrong when it adds a bias and then a binary or sum post-op (random
 * region-graph seeds 3552: brgconv, a 1x1x1 conv3d padded in depth, its bias, a residual add;
 * 10468: gemm:jit, bias, clip, a multiply along W), and its brgconv crashes on a sum beside an
 * eltwise post-op there, bias or not (96143, 93217: a 1x1 conv2d padded below, tanh, a residual
 * add); binary and sum post-ops then run on their own.
 * s, d, pl: oneDNN's strides, dilations - 1, left padding. */
static bool pad_only_outputs(int sd, const int64_t *xs, const int64_t *ws, const int64_t *os, const dnnl_dims_t s,
                             const dnnl_dims_t d, const dnnl_dims_t pl) {
    for (int i = 0; i < sd; i++) {
        int64_t ext = (ws[2 + i] - 1) * (d[i] + 1) + 1, last = (os[2 + i] - 1) * s[i] - pl[i];
        if (pl[i] >= ext || last >= xs[2 + i]) return true;
    }
    return false;
}

/* Entry e, a binary operand for a result of entry out's shape, varies along the batch but is
 * not the full result: oneDNN 2.6's convolutions read such a post-op operand wrong (a gemm:jit
 * conv2d of batch 2 times a (2, 1, 1, 1) operand: the second image's values; random
 * region-graph seeds 12053, 12276), so it runs on its own. */
static bool batch_in_part(dn_state *S, int e, int out) {
    int nd = dn_entry_ndim(S, e);
    const int64_t *es = dn_entry_shape(S, e), *os = dn_entry_shape(S, out);
    return nd == dn_entry_ndim(S, out) && nd > 0 && es[0] > 1 && memcmp(es, os, sizeof(int64_t) * (size_t)nd);
}

/* dn_emit_fn's zero fill of a padded copy (ctx: its bytes) */
static dnnl_status_t zero_fill(void *ctx, void *const *ptrs) {
    memset(ptrs[0], 0, *(const size_t *)ctx);
    return dnnl_success;
}

/* oneDNN 2.6 has neither a jit nor a gemm kernel for some convolutions padded by as much as
 * their input is wide (AVX2: a 5x5 kernel padded by 4 on a width of 3, random region-graph seed
 * 4688), and has one for the same convolution unpadded. So when only ref is left: the input
 * copied into the middle of a zeroed buffer of the padded size, plain, and the convolution run
 * without padding. On success *pd (ref) is replaced, with its args, *used and *xv (the padded
 * copy, zeroed and filled each run); else nothing changes. */
static gr_status conv_pad_explicit(dn_state *S, const rt_json_node *n, int nd, const dnnl_memory_desc_t *wany,
                                   const dnnl_memory_desc_t *bmd, const dnnl_memory_desc_t *dst, const dnnl_dims_t s,
                                   const dnnl_dims_t d, const dnnl_dims_t pl, const dnnl_dims_t pr, const dn_step *steps,
                                   int k, int *xv, dnnl_primitive_desc_t *pd, int *used, dn_arg *args, int *na) {
    const dnnl_memory_desc_t *xmd = &S->vals.data[*xv].md;
    dnnl_dims_t pdims, off = {0}, zero = {0};
    bool padded = false;
    for (int i = 0; i < nd; i++) {
        int64_t a = i < 2 ? 0 : pl[i - 2], b = i < 2 ? 0 : pr[i - 2];
        if (a < 0 || b < 0) return GR_OK;
        padded |= a || b;
        pdims[i] = xmd->dims[i] + a + b;
        off[i] = a;
    }
    if (!padded) return GR_OK;
    dnnl_memory_desc_t pmd, sub;
    dn_plain_md(&pmd, nd, pdims);
    dnnl_convolution_desc_t desc;
    if (dnnl_memory_desc_init_submemory(&sub, &pmd, xmd->dims, off) != dnnl_success ||
        dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &pmd, wany, bmd,
                                                   dst, s, d, zero, zero) != dnnl_success)
        return GR_OK;
    dn_arg a2[4 + DN_MAX_STEPS];
    int na2 = 0, used2 = 0, sum = S->pending_sum;
    dnnl_primitive_desc_t p2 = NULL;
    gr_status st = GR_OK;
    if (dn_try_create(S, n, &desc, nd, steps, k, 0, true, &p2, &used2, a2, &na2, &st) != dnnl_success || st) {
        S->pending_sum = sum; /* the ref primitive's, kept */
        return st;
    }
    dnnl_primitive_desc_t rpd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&rpd, xmd, S->eng, &sub, S->eng, S->attr_plain);
    size_t *bytes = malloc(sizeof *bytes);
    if (ds != dnnl_success || !bytes) {
        free(bytes);
        if (ds == dnnl_success) dnnl_primitive_desc_destroy(rpd);
        dnnl_primitive_desc_destroy(p2);
        S->pending_sum = sum;
        return ds == dnnl_success ? gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory") : GR_OK;
    }
    int pv = dn_val_new(S, V_TMP, &pmd);
    *bytes = dnnl_memory_desc_get_size(&pmd);
    dn_arg za = {DNNL_ARG_DST, pv, pmd, NULL, *bytes};
    dn_arg ra[2] = {{DNNL_ARG_FROM, *xv, *xmd, NULL, 0}, {DNNL_ARG_TO, pv, sub, NULL, 0}};
    if ((st = dn_emit_fn(S, n, zero_fill, bytes, free, "fill", "graft_zero", &za, 1)) || (st = dn_emit(S, n, rpd, ra, 2, true))) {
        dnnl_primitive_desc_destroy(p2);
        return st;
    }
    dnnl_primitive_desc_destroy(*pd);
    *pd = p2;
    memcpy(args, a2, sizeof(dn_arg) * (size_t)na2);
    *na = na2;
    *used = used2;
    *xv = pv;
    return GR_OK;
}

static gr_status conv_build(dn_state *S, const rt_json_node *n, const dn_comp *comp, bool deconv, int sd,
                            conv_views *cv) {
    int x = dn_arg_entry(S, n, 0), w = dn_arg_entry(S, n, 1), xv = -1, wv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (!st) st = dn_need_val(S, n, w, &wv);
    if (st) return st;
    /* canonical data / weight layouts by spatial rank (1-3) */
    static const char *const CX[3] = {"NCW", "NCHW", "NCDHW"}, *const CO[3] = {"OIW", "OIHW", "OIDHW"},
                             *const CI[3] = {"IOW", "IOHW", "IODHW"};
    const char *cx = CX[sd - 1], *ck = deconv ? CI[sd - 1] : CO[sd - 1];
    const char *dl = dn_attr_str(n, "data_layout", cx), *kl = dn_attr_str(n, "kernel_layout", ck);
    const char *ol = dn_attr_str(n, "out_layout", dl);
    int nd = 2 + sd;
    if (dn_entry_ndim(S, x) != nd || dn_entry_ndim(S, w) != nd || n->ndims[0] != nd) return dn_fail(S, n, dnnl_success, "rank");
    /* other layouts (NHWC, OHWI, HWIO, ...): the primitive's canonical axes over dn_strided views
     * of the tensors as they are; oneDNN's md carries the permutation */
    dnnl_dims_t xs, xstr, ws, wcs, os, ostr;
    if (strcmp(ol, dl) || !dn_layout_view(dl, cx, dn_entry_shape(S, x), xs, xstr) ||
        !dn_layout_view(kl, ck, dn_entry_shape(S, w), ws, wcs) || !dn_layout_view(dl, cx, n->shapes[0], os, ostr))
        return dn_fail(S, n, dnnl_success, "layouts that are not permutations of NCHW / OIHW (IOHW), or out_layout other than data_layout");
    bool perm = strcmp(dl, cx) || strcmp(kl, ck);
    int64_t G = dn_attr_int(n, "groups", 1);
    int64_t strides[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[6] = {0}, opad[3] = {0, 0, 0};
    dn_attr_axes(n, "strides", strides, sd);
    dn_attr_axes(n, "dilation", dil, sd);
    dn_attr_axes(n, "output_padding", opad, sd);
    dn_attr_pads(n, pad, sd);
    /* seen as 2-D: every array gets the height axis (size 1) before the width */
    int unsq = conv1d_as_2d(sd, deconv, G, xs[1]) ? 2 : 0;
    dnnl_memory_desc_t operm1d = {0};
    if (unsq) {
        if (perm) dnnl_memory_desc_init_by_strides(&operm1d, nd, os, dnnl_f32, ostr);
        ins_at(xs, 3, 2, 1);
        ins_at(xstr, 3, 2, xstr[2] * xs[3]);
        ins_at(os, 3, 2, 1);
        ins_at(ostr, 3, 2, ostr[2] * os[3]);
        ins_at(ws, 3, 2, 1);
        ins_at(wcs, 3, 2, wcs[2] * ws[3]);
        strides[1] = strides[0], strides[0] = 1;
        dil[1] = dil[0], dil[0] = 1;
        opad[1] = opad[0], opad[0] = 0;
        pad[3] = pad[1], pad[1] = pad[0], pad[0] = pad[2] = 0;
        sd = 2, nd = 4;
        if (!perm) {
            int v;
            if ((st = unsq_view(S, n, xv, &v))) return st;
            xv = v;
        }
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
    if (pix_deferred(S, x) >= 0) return dn_fail(S, n, dnnl_success, "source interleave deferred to a reader that cannot do it");
    dnnl_memory_desc_t wuser, wany, xany, dst;
    dnnl_memory_desc_init_by_strides(&wuser, wnd, wd, dnnl_f32, wstr);
    dnnl_memory_desc_init_by_tag(&wany, wnd, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_dims_t xd;
    for (int i = 0; i < nd; i++) xd[i] = xs[i];
    dnnl_memory_desc_init_by_tag(&xany, nd, xd, dnnl_f32, dnnl_format_tag_any);
    dn_step steps[DN_MAX_STEPS];
    int k = dn_chain_of(S, n, comp, steps, true, nd, os, &dst);
    /* 3-D: oneDNN's kernels for a plain NCDHW dst are gemm ones, several times slower than a
     * blocked one and the reorder of a region output to plain at the end */
    if (sd == 3) dnnl_memory_desc_init_by_tag(&dst, nd, (dnnl_dims_t){os[0], os[1], os[2], os[3], os[4]}, dnnl_f32,
                                              dnnl_format_tag_any);
    /* permuted: src and dst as the dn_strided views of the tensors */
    if (perm) {
        dnnl_dims_t od;
        for (int i = 0; i < nd; i++) od[i] = os[i];
        if ((st = dn_layout_in(S, n, &xv, nd, xs, xstr))) return st;
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
        if (!S->is_head[dn_chain_out(S, n, steps, k)]) dnnl_memory_desc_init_by_tag(&dst, nd, od, dnnl_f32, tag);
    }
    int bv = -1;
    /* permuted: a bias folds (scales would need the weights' own layout), eltwise post-ops
     * fuse; binary post-ops see the node's shapes, not the primitive's, and run after */
    bool wconst = dn_const_entry(S, w);
    dn_take_affine(S, steps, &k, O, !perm && wconst, &wv, &bv, deconv, ig, og, K,
                perm ? (int)(strchr(dl, 'C') - dl) : 1);
    for (int i = 0; perm && i < k; i++)
        if (steps[i].kind != STEP_ELTWISE) k = i;
    for (int i = 0; pad_only_outputs(sd, xs, ws, os, s, d, pl) && i < k; i++)
        if (steps[i].kind != STEP_ELTWISE) k = i;
    for (int i = 0; i < k; i++)
        if (steps[i].kind == STEP_BINARY && batch_in_part(S, steps[i].src1, steps[i].out)) k = i;
    for (int i = 0; unsq && i < k; i++)
        if (steps[i].kind == STEP_BINARY && (st = unsq_entry(S, n, steps[i].src1, cv))) return st;
    if (unsq && !perm && G == O && strides[1] == 1 && dil[1] == 1 && S->ent_node[w].node->kind == RT_JSON_CONST) {
        bool done;
        if ((st = dw1d_conv(S, n, xv, wv, wstr, bv, steps, k, xs, os, pad, &wany, s, d, pl, pr, &done)) || done) return st;
    }
    /* Winograd: 3x3, stride 1, dilation 1, one group, canonical layouts, constant weights (they are
     * transformed once) */
    bool wino3x3 = S->opts.winograd && !deconv && !perm && sd == 2 && wino_shape(ws, strides, dil, G, 2) && wconst;
    /* 3x3x3: oneDNN has no 3-D Winograd at any ISA, ours runs wherever it can */
    bool wino3d = S->opts.winograd && !deconv && !perm && sd == 3 && wino_shape(ws, strides, dil, G, 3) && wconst;
    if ((wino3x3 && wino_isa_ok()) || (wino3d && dn_avx2_kernels_ok())) {
        bool done;
        if ((st = wino_conv(S, n, sd, xv, wv, wstr, bv, steps, k, xs, os, pad, &done)) || done) return st;
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
    dnnl_memory_desc_t alt_x[7], alt_d[7], odany;
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
    int fe = dn_chain_out(S, n, steps, k);
    /* dnnl.precision=bf16: bfloat16 src and weights (oneDNN has no bf16 Winograd: direct), dst
     * too where every reader takes it; float32 again when oneDNN has only ref for it. Not in
     * the ISA's blocked layout: there oneDNN 2.6 runs jit_bf16 (AVX-512) instead of its AMX
     * brgconv (googlenet's 3x3 inception branches writing their concat slots: 1.1-1.6x the f32
     * Winograd time, against 0.08x on channels-last) */
    bool bf16 = !deconv && !perm && dn_bf16_node(S, n);
    bool bf16_dst = bf16 && dn_bf16_entry(S, fe);
    /* a concat source: its slot's layout first (dn_finish writes it there); a blocked source
     * going on blocked: both as they are */
    if (!perm && !bf16 && !unsq && dst.format_kind == dnnl_format_kind_any && dn_slot_md(S, fe, &alt_d[nalt]))
        alt_x[nalt++] = xa;
    const dnnl_memory_desc_t *xmd = &S->vals.data[xv].md;
    if (!perm && !bf16 && !S->opts.no_layout_plan && dst.format_kind == dnnl_format_kind_any && G == 1 && goes_blocked(S, fe) &&
        dn_md_like(&alt_d[nalt], xmd, nd, os) && !dn_is_plain(xmd) && !dn_cl_order(xmd)) {
        alt_x[nalt] = *xmd;
        if (nalt == 0 || !dnnl_memory_desc_equal(&alt_d[nalt], &alt_d[0])) nalt++;
    }
    if (!perm && !S->opts.no_layout_plan && dst.format_kind == dnnl_format_kind_any &&
        (dn_wants_channels_last(S, fe) || dn_cl_order(&S->vals.data[xv].md))) {
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
    for (int l = 0; bf16 && l < nalt; l++) {
        dn_md_dt(&alt_x[l], dnnl_bf16);
        if (bf16_dst) dn_md_dt(&alt_d[l], dnnl_bf16);
    }
    if (bf16) {
        dn_md_dt(&wany, dnnl_bf16);
        first = 0;
    }
again:
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
        ds = dn_try_create(S, n, &desc, nd, steps, k, a < 0 ? k : 0, !last, &pd, &used, args, &na, &st);
        if (st || ds != dnnl_success) pd = NULL;
        if (st) break;
    }
    if (!st && pd && dn_pd_is_ref(pd) && !deconv && !perm)
        st = conv_pad_explicit(S, n, nd, &wany, bv >= 0 ? &bmd : NULL, &dst, s, d, pl, pr, steps, k, &xv, &pd, &used, args, &na);
    S->sum_ok = false;
    if (st) return st;
    if (bf16 && (!pd || dn_pd_is_ref(pd))) {
        if (pd) dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        na = used = 0;
        bf16 = false;
        for (int l = 0; l < nalt; l++) {
            dn_md_dt(&alt_x[l], dnnl_f32);
            dn_md_dt(&alt_d[l], dnnl_f32);
        }
        dn_md_dt(&wany, dnnl_f32);
        first = wino ? -2 : 0;
        goto again;
    }
    if (!pd) return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    /* the fixed args go after the post-op sources; order does not matter to oneDNN. The
     * reorders into its layouts come first: the reason to stay on ref stays the convolution's */
    const char *why = S->ref_why;
    if ((st = dn_src_weights(S, n, pd, xv, dn_alias_new(S, wv, &wuser), args, &na))) return st;
    S->ref_why = why;
    if (bv >= 0) args[na++] = (dn_arg){DNNL_ARG_BIAS, bv, bmd, NULL};
    int oe = dn_chain_out(S, n, steps, used);
    st = dn_finish(S, n, pd, args, na, steps, used, NULL);
    if (!st && bf16_dst) st = dn_bf16_settle(S, n, oe);
    if (!st && unsq) { /* the result as the node's 1-D tensor */
        dnnl_memory_desc_t md;
        if (!dn_md_squeeze(&md, &S->vals.data[S->ent_val[oe]].md, unsq))
            return dn_fail(S, n, dnnl_success, "cannot view a 2-D result as 1-D");
        S->ent_val[oe] = dn_alias_new(S, S->ent_val[oe], &md);
        if (perm) operm = operm1d;
    }
    return st || !perm ? st : dn_layout_out(S, n, oe, &operm);
}

static gr_status op_conv(dn_state *S, const rt_json_node *n, const dn_comp *comp, bool deconv, int sd) {
    conv_views cv = {.n = 0};
    gr_status st = conv_build(S, n, comp, deconv, sd, &cv);
    while (cv.n--) S->ent_val[cv.e[cv.n]] = cv.v[cv.n];
    return st;
}

gr_status dn_op_conv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, false, 1); }
gr_status dn_op_conv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, false, 2); }
gr_status dn_op_deconv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, true, 1); }
gr_status dn_op_deconv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp) { return op_conv(S, n, comp, true, 2); }
gr_status dn_op_conv3d(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    return op_conv(S, n, comp, n->op == IR_OP_CONV3D_TRANSPOSE, 3);
}
