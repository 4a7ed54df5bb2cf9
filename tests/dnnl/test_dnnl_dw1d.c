/* The oneDNN engine's own depthwise 1-D convolution (backends/dnnl/dnnl_dw1d.c), used where
 * oneDNN has only its im2col + GEMM kernel for one (AVX2: widths above jit_dw's), against the
 * reference host kernels, over a table of shapes: a Conformer's (256 channels, width 15, bias,
 * SiLU, which runs on its own), channels not a multiple of 8 and lengths not of 8 (masked
 * stores), batch 2, an input shorter than the kernel, asymmetric padding, relu and clip fused,
 * and convolutions it must leave to oneDNN (width 3, which jit_dw takes; stride 2; two filters
 * per channel).
 *
 * Tolerance: dnnl_test_util.h's (|d - r| <= 1e-4 + 1e-4 |r|): each output sums at most 31
 * products of values below 1 in fp32; the worst error seen is printed.
 *
 * Which implementation: on an ISA below avx512_core with AVX2 + FMA (ONEDNN_MAX_CPU_ISA=AVX2 in
 * `make test`, or an AVX2 machine) the cases marked are one primitive graft_dw1d:avx2; on
 * AVX-512 oneDNN's brdgmm_dw / jit_dw take them all. */
#include "tests/dnnl/dnnl_test_util.h"

enum { P_NONE, P_BIAS_RELU, P_BIAS_CLIP, P_BIAS_SILU };

typedef struct dcase {
    int64_t N, C, W, K, pl, pr, stride, mult; /* mult: filters per channel */
    int post;
    bool ours;                                /* expected on ours below avx512_core */
} dcase;

static const dcase CASES[] = {
    {1, 256, 200, 15, 7, 7, 1, 1, P_BIAS_SILU, true}, /* the audio encoder's */
    {2, 20, 37, 31, 15, 15, 1, 1, P_BIAS_RELU, true},
    {1, 12, 5, 13, 6, 3, 1, 1, P_NONE, true},         /* W < K: 2 outputs */
    {1, 9, 64, 17, 0, 8, 1, 1, P_BIAS_CLIP, true},
    {1, 16, 100, 3, 1, 1, 1, 1, P_BIAS_RELU, false},  /* oneDNN's jit_dw */
    {1, 16, 50, 15, 7, 7, 2, 1, P_BIAS_RELU, false},  /* stride 2 */
    {1, 8, 40, 15, 7, 7, 1, 2, P_BIAS_RELU, false},   /* two filters per channel */
};

static bool dw1d_isa(void) {
    __builtin_cpu_init();
    return !strncmp(rt_dnnl_isa(), "avx2", 4) && __builtin_cpu_supports("fma"); /* avx2, avx2_vnni */
}

static const char *const LAYERS[] = {"conv", "bias", "relu", "clip", "sig", "silu"};

static void build(dt_graph *g, const dcase *c, uint32_t seed) {
    dt_init(g, seed);
    int64_t O = c->C * c->mult, OW = (c->W + c->pl + c->pr - c->K) / c->stride + 1;
    const int64_t *os = S3(c->N, O, OW);
    int x = dt_input(g, 3, S3(c->N, c->C, c->W));
    int w = dt_const(g, 3, S3(O, 1, c->K));
    char attrs[300];
    snprintf(attrs, sizeof attrs,
             "{\"strides\":[%ld],\"padding\":[%ld,%ld],\"dilation\":[1],\"groups\":%ld,\"data_layout\":\"NCW\","
             "\"kernel_layout\":\"OIW\",\"out_layout\":\"NCW\",\"out_dtype\":\"void\"}",
             (long)c->stride, (long)c->pl, (long)c->pr, (long)c->C);
    int cv = dt_op(g, "relax.nn.conv1d", attrs, 2, IN(x, w), NULL, 3, os, "conv"), head = cv;
    if (c->post != P_NONE) {
        int b = dt_const(g, 2, S2(O, 1));
        int a = dt_op(g, "relax.add", NULL, 2, IN(cv, b), NULL, 3, os, "bias");
        char posts[300];
        int n0 = snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}", a, b);
        if (c->post == P_BIAS_RELU) {
            head = dt_op(g, "relax.nn.relu", NULL, 1, IN(a), NULL, 3, os, "relu");
            snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0]}]", head);
            dt_composite(g, "dnnl.conv1d_bias_relu", cv, 3, IN(cv, a, head), posts);
        } else if (c->post == P_BIAS_CLIP) {
            head = dt_op(g, "relax.clip", NULL, 1, IN(a), "[{\"float\":-0.25},{\"float\":0.5}]", 3, os, "clip");
            snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0],\"alpha\":-0.25,\"beta\":0.5}]", head);
            dt_composite(g, "dnnl.conv1d_bias_clip", cv, 3, IN(cv, a, head), posts);
        } else {
            /* the SiLU a Conformer writes: x * sigmoid(x), its own nodes after the composite */
            snprintf(posts + n0, sizeof posts - (size_t)n0, "]");
            dt_composite(g, "dnnl.conv1d_bias", cv, 2, IN(cv, a), posts);
            int s = dt_op(g, "relax.sigmoid", NULL, 1, IN(a), NULL, 3, os, "sig");
            head = dt_op(g, "relax.multiply", NULL, 2, IN(a, s), NULL, 3, os, "silu");
        }
    }
    dt_head(g, head);
}

/* the prepared region's primitives of ours; every primitive's layers among the graph's */
static int count_dw1d(dt_prepared *p) {
    int n = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi = dt_prim_in(p, i, LAYERS, sizeof LAYERS / sizeof LAYERS[0]);
        if (!strcmp(pi.impl, "graft_dw1d:avx2")) {
            n++;
            cr_expect_str_eq(pi.kind, "convolution");
        }
        cr_expect(strncmp(pi.impl, "ref", 3), "primitive %u (%s) on %s", i, pi.kind, pi.impl);
    }
    return n;
}

Test(dnnl_dw1d, shapes_against_reference, .timeout = 120) {
    bool isa = dw1d_isa();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const dcase *c = &CASES[i];
        dt_graph g;
        build(&g, c, 300 + (uint32_t)i);
        double worst = dt_check(&g);
        dt_prepared p;
        gr_diag d = {0};
        cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "case %zu: %s", i, d.msg);
        int n = count_dw1d(&p);
        cr_expect_eq(n, isa && c->ours ? 1 : 0, "case %zu (C %ld, W %ld, K %ld, ISA %s): %d graft_dw1d primitives", i,
                     (long)c->C, (long)c->W, (long)c->K, rt_dnnl_isa(), n);
        fprintf(stderr, "dnnl_dw1d case %zu (C %ld, W %ld, K %ld, ISA %s): %s, max |err| %.3g\n", i, (long)c->C, (long)c->W,
                (long)c->K, rt_dnnl_isa(), n ? "graft_dw1d" : "oneDNN", worst);
        dt_release(&p);
        dt_free(&g);
    }
}
