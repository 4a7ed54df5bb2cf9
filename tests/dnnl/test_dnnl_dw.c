/* dnnl.dw_jit (default on): depthwise convolutions run oneDNN's jit_dw kernel where oneDNN
 * would pick brdgmm_dw (avx512_core), against the reference host kernels over a table of
 * shapes: kernel 3, 5 and 7, stride 1 and 2, odd and non-square maps, channels that are not
 * multiples of 8 or 16, batch 2, bias + relu, bias + residual add + relu, hardswish, none.
 *
 * Tolerance: the suite's (DT_ATOL + DT_RTOL * |ref|, dnnl_test_util.h).
 *
 * Which implementation, on every CPU: each case is prepared with the option on and off. Off,
 * oneDNN's own choice; where that is brdgmm_dw, on must be jit_dw (oneDNN 2.6 offers it for
 * every such shape, with the same layouts); elsewhere (AVX2-only CPUs, ONEDNN_MAX_CPU_ISA=AVX2)
 * both must be the same implementation. */
#include "tests/dnnl/dnnl_test_util.h"

#define CONV_1X1                                                                                                  \
    "{\"strides\":[1,1],\"padding\":[0,0,0,0],\"dilation\":[1,1],\"groups\":1,\"data_layout\":\"NCHW\","        \
    "\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}"

enum { P_NONE, P_BIAS_RELU, P_BIAS_ADD_RELU, P_HARDSWISH };

typedef struct dcase {
    int64_t N, C, H, W, K, S;
    int post;
} dcase;

static const dcase CASES[] = {
    {1, 48, 23, 19, 3, 2, P_BIAS_RELU},     /* mnasnet's expand-dw, odd map */
    {1, 20, 17, 21, 5, 1, P_BIAS_RELU},     /* channels no multiple of 8 */
    {2, 72, 14, 14, 3, 1, P_BIAS_ADD_RELU}, /* batch 2, residual sum */
    {1, 40, 9, 11, 5, 2, P_NONE},
    {1, 24, 30, 30, 3, 1, P_HARDSWISH},
    {1, 116, 15, 13, 3, 2, P_BIAS_RELU},    /* shufflenet's channels */
    {1, 96, 12, 12, 7, 1, P_NONE},          /* convnext's 7x7 */
    {1, 8, 5, 7, 3, 1, P_BIAS_RELU},
};

static const char *const LAYERS[] = {"expand", "project", "dw", "bias", "residual", "relu", "hs_add", "hs_clip", "hs_div", "hs_mul"};

/* 1x1 convolution of x (ci channels, dims os but channels) to co channels, no bias */
static int conv1x1(dt_graph *g, int x, int64_t ci, int64_t co, const int64_t *os, const char *layer) {
    int w = dt_const(g, 4, S4(co, ci, 1, 1));
    return dt_op(g, "relax.nn.conv2d", CONV_1X1, 2, IN(x, w), NULL, 4, S4(os[0], co, os[2], os[3]), layer);
}

/* expand 1x1 (C/2 -> C) -> depthwise with case c's post-ops -> project 1x1 (C -> C/2), as
 * inverted-residual networks have it: the depthwise convolution then reads and writes the
 * layout its neighbours plan (channels-last on AVX-512) rather than the region's plain NCHW
 * edges (which oneDNN runs as gemm) */
static void build(dt_graph *g, const dcase *c, uint32_t seed) {
    dt_init(g, seed);
    int64_t P = c->K / 2, OH = (c->H + 2 * P - c->K) / c->S + 1, OW = (c->W + 2 * P - c->K) / c->S + 1;
    int64_t half = (c->C + 1) / 2;
    const int64_t *os = S4(c->N, c->C, OH, OW);
    int x = dt_input(g, 4, S4(c->N, half, c->H, c->W));
    int e = conv1x1(g, x, half, c->C, S4(c->N, c->C, c->H, c->W), "expand");
    int w = dt_const(g, 4, S4(c->C, 1, c->K, c->K));
    char attrs[400];
    snprintf(attrs, sizeof attrs,
             "{\"strides\":[%ld,%ld],\"padding\":[%ld,%ld,%ld,%ld],\"dilation\":[1,1],\"groups\":%ld,"
             "\"data_layout\":\"NCHW\",\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}",
             (long)c->S, (long)c->S, (long)P, (long)P, (long)P, (long)P, (long)c->C);
    int cv = dt_op(g, "relax.nn.conv2d", attrs, 2, IN(e, w), NULL, 4, os, "dw");
    int head = cv;
    char posts[300];
    if (c->post == P_BIAS_RELU || c->post == P_BIAS_ADD_RELU) {
        head = dt_conv_bias_act(g, cv, c->C, os, c->post == P_BIAS_ADD_RELU, "relu");
    } else if (c->post == P_HARDSWISH) {
        int t3 = dt_scalar(g, 3.f), z = dt_scalar(g, 6.f);
        int a = dt_op(g, "relax.add", NULL, 2, IN(cv, t3), NULL, 4, os, "hs_add");
        int cl = dt_op(g, "relax.clip", NULL, 1, IN(a), "[{\"float\":0.0},{\"float\":6.0}]", 4, os, "hs_clip");
        int dv = dt_op(g, "relax.divide", NULL, 2, IN(cl, z), NULL, 4, os, "hs_div");
        head = dt_op(g, "relax.multiply", NULL, 2, IN(cv, dv), NULL, 4, os, "hs_mul");
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", head);
        dt_composite(g, "dnnl.conv2d_hardswish", cv, 5, IN(cv, a, cl, dv, head), posts);
    }
    dt_head(g, conv1x1(g, head, c->C, half, os, "project"));
}

/* The implementation of the region's depthwise convolution; every primitive's layers are the
 * graph's. */
static void conv_impl(dt_graph *g, const rt_dnnl_opts *o, char *impl, size_t cap) {
    g->opts = o;
    dt_prepared p;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(g, &p, &d), GR_OK, "%s", d.msg);
    int nconv = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p.state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p.state, i, &pi));
        for (uint32_t l = 0; l < pi.nlayers; l++) {
            bool known = false;
            for (size_t k = 0; k < sizeof LAYERS / sizeof LAYERS[0]; k++) known |= !strcmp(pi.layers[l], LAYERS[k]);
            cr_expect(known, "primitive %u: layer '%s' is not a layer of the graph", i, pi.layers[l]);
        }
        bool dw = false;
        for (uint32_t l = 0; l < pi.nlayers; l++) dw |= !strcmp(pi.layers[l], "dw");
        if (dw && !strcmp(pi.kind, "convolution")) {
            nconv++;
            snprintf(impl, cap, "%s", pi.impl);
        }
    }
    cr_expect_eq(nconv, 1, "%d depthwise convolution primitives", nconv);
    dt_release(&p);
    g->opts = NULL;
}

Test(dnnl_dw, shapes_against_reference, .timeout = 120) {
    rt_dnnl_opts off = rt_dnnl_default_opts();
    off.dw_jit = false;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const dcase *c = &CASES[i];
        dt_graph g;
        build(&g, c, 300 + (uint32_t)i);
        dt_check(&g); /* default options: dw_jit on */
        g.opts = &off;
        dt_check(&g);
        char on_impl[64] = "", off_impl[64] = "";
        conv_impl(&g, NULL, on_impl, sizeof on_impl);
        conv_impl(&g, &off, off_impl, sizeof off_impl);
        if (!strncmp(off_impl, "brdgmm_dw", 9))
            cr_expect(!strncmp(on_impl, "jit_dw:", 7), "case %zu (ISA %s): oneDNN's %s, with dnnl.dw_jit %s", i,
                      rt_dnnl_isa(), off_impl, on_impl);
        else
            cr_expect_str_eq(on_impl, off_impl, "case %zu (ISA %s): dnnl.dw_jit changed %s into %s", i, rt_dnnl_isa(),
                             off_impl, on_impl);
        cr_expect(strncmp(on_impl, "ref", 3), "case %zu (ISA %s): %s", i, rt_dnnl_isa(), on_impl);
        fprintf(stderr, "dnnl_dw case %zu (%ld ch %ldx%ld k%ld s%ld, ISA %s): %s, dnnl.dw_jit=0 %s\n", i, (long)c->C,
                (long)c->H, (long)c->W, (long)c->K, (long)c->S, rt_dnnl_isa(), on_impl, off_impl);
        dt_free(&g);
    }
}

/* A depthwise 1-D convolution (a conformer's 15-tap one, a strided 3-tap one) between two 1x1
 * ones, with bias + relu fused, runs as a 2-D one of height 1 on a depthwise kernel (jit_dw,
 * brdgmm_dw) where oneDNN has one, not gemm:jit, matching the reference. */
Test(dnnl_dw, conv1d_on_a_depthwise_kernel, .timeout = 120) {
    static const struct {
        int64_t N, C, W, K, S;
    } C1[] = {{1, 64, 50, 15, 1}, {2, 20, 33, 3, 2}};
    for (size_t i = 0; i < sizeof C1 / sizeof C1[0]; i++) {
        int64_t N = C1[i].N, C = C1[i].C, W = C1[i].W, K = C1[i].K, S = C1[i].S, P = K / 2, OW = (W + 2 * P - K) / S + 1;
        dt_graph g;
        dt_init(&g, 400 + (uint32_t)i);
        char a1[300], ad[300], posts[200];
        snprintf(a1, sizeof a1, "{\"strides\":[1],\"padding\":[0,0],\"dilation\":[1],\"groups\":1,\"data_layout\":\"NCW\","
                                "\"kernel_layout\":\"OIW\",\"out_layout\":\"NCW\",\"out_dtype\":\"void\"}");
        snprintf(ad, sizeof ad,
                 "{\"strides\":[%ld],\"padding\":[%ld,%ld],\"dilation\":[1],\"groups\":%ld,\"data_layout\":\"NCW\","
                 "\"kernel_layout\":\"OIW\",\"out_layout\":\"NCW\",\"out_dtype\":\"void\"}",
                 (long)S, (long)P, (long)P, (long)C);
        int x = dt_input(&g, 3, S3(N, C, W));
        int e = dt_op(&g, "relax.nn.conv1d", a1, 2, IN(x, dt_const(&g, 3, S3(C, C, 1))), NULL, 3, S3(N, C, W), "expand");
        int cv = dt_op(&g, "relax.nn.conv1d", ad, 2, IN(e, dt_const(&g, 3, S3(C, 1, K))), NULL, 3, S3(N, C, OW), "dw");
        int b = dt_const(&g, 3, S3(1, C, 1));
        int a = dt_op(&g, "relax.add", NULL, 2, IN(cv, b), NULL, 3, S3(N, C, OW), "bias");
        int h = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 3, S3(N, C, OW), "relu");
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, b, h);
        dt_composite(&g, "dnnl.conv1d_bias_relu", cv, 3, IN(cv, a, h), posts);
        dt_head(&g, dt_op(&g, "relax.nn.conv1d", a1, 2, IN(h, dt_const(&g, 3, S3(C, C, 1))), NULL, 3, S3(N, C, OW), "project"));
        dt_check(&g);
        char impl[64] = "";
        conv_impl(&g, NULL, impl, sizeof impl);
        /* oneDNN 2.6's AVX2 jit_dw does not take the 15-tap one (gemm:jit, as the 1-D form) */
        bool dw_kernel = C1[i].K <= 3 || !strncmp(rt_dnnl_isa(), "avx512", 6);
        cr_expect(!dw_kernel || strstr(impl, "dw") != NULL, "case %zu (ISA %s): the depthwise conv1d runs on %s", i,
                  rt_dnnl_isa(), impl);
        cr_expect(strncmp(impl, "ref", 3), "case %zu (ISA %s): %s", i, rt_dnnl_isa(), impl);
        fprintf(stderr, "dnnl_dw conv1d case %zu (%ld ch, w %ld, k%ld s%ld, ISA %s): %s\n", i, (long)C, (long)W, (long)K, (long)S,
                rt_dnnl_isa(), impl);
        dt_free(&g);
    }
}
