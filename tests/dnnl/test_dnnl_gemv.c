/* The oneDNN engine's own product for one row (backends/dnnl/dnnl_gemv.c): matmuls with constant
 * weights, K x N (read in place) or N x K read transposed ("dense": the engine's K x N copy),
 * and one row (all batch elements' rows), against the reference host kernels, over a table
 * of shapes: a classifier head (1280 x 1000), K and N not multiples of 8 or 16 (masked
 * columns), 3-D inputs of one and of three batch rows, with and without a bias, and with
 * the eltwise post-ops the kernel applies (relu, clip, hardswish in the exporter's form) or one
 * it does not (gelu: oneDNN's matmul then), and two rows and more (oneDNN's). The weights are
 * held once: read in place (the graph constant kept, no copy) or one K x N copy.
 *
 * Tolerance: dnnl_test_util.h's (|d - r| <= 1e-4 + 1e-4 |r|): each output is the sum of the
 * two threads' partial sums, each in fp32 in k order over K <= 1280 products of values below
 * 1; the worst error seen is printed.
 *
 * Which implementation: where the CPU has AVX2 + FMA and oneDNN's ISA is avx2 or above (every
 * machine `make test` runs on, natively and under ONEDNN_MAX_CPU_ISA=AVX2) every one-row case
 * with ops it applies runs on ours, and the profile names the primitive "graft_gemv:avx2" with the
 * graph's layers; elsewhere none of ours runs. */
#include "tests/dnnl/dnnl_test_util.h"

enum { P_NONE, P_BIAS, P_BIAS_RELU, P_BIAS_CLIP, P_BIAS_HARDSWISH, P_BIAS_GELU };

typedef struct gcase {
    int64_t B, M, K, N; /* B > 0: a 3-D input B x M x K */
    bool dense;         /* weights N x K read transposed */
    int post;
} gcase;

static const gcase CASES[] = {
    {0, 1, 1280, 1000, false, P_BIAS},        /* mnasnet1_0's head (the ONNX importer's K x N) */
    {0, 1, 1280, 1000, true, P_BIAS},         /* the same as a dense (transposed weights) */
    {0, 1, 37, 23, false, P_NONE},            /* 16 + 7 columns (masked) */
    {0, 1, 5, 16, false, P_BIAS_RELU},        /* K odd, smaller than the threads' split */
    {0, 1, 100, 9, true, P_BIAS_CLIP},        /* N < 16 */
    {0, 1, 9, 5, false, P_BIAS_HARDSWISH},    /* N < 8 */
    {1, 1, 960, 1280, true, P_BIAS_HARDSWISH}, /* mobilenet_v3_large's first head layer, 3-D */
    {1, 1, 24, 30, false, P_BIAS_RELU},       /* 1 x 1 x K */
    {0, 1, 19, 1000, false, P_BIAS_HARDSWISH}, /* K not a multiple of 8 */
    {0, 1, 64, 48, false, P_BIAS_GELU},       /* a post-op the kernel does not apply: oneDNN's */
    {3, 1, 24, 30, false, P_BIAS},            /* three batch rows of one: 3 rows, oneDNN's */
    {0, 2, 40, 24, false, P_BIAS},            /* two rows and more: oneDNN's */
    {0, 4, 9, 40, true, P_BIAS_HARDSWISH},
    {0, 16, 40, 24, false, P_BIAS_RELU},
};

static bool gemv_cpu(void) {
    __builtin_cpu_init();
    const char *isa = rt_dnnl_isa();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && (!strncmp(isa, "avx2", 4) || !strncmp(isa, "avx512", 6));
}

/* whether case c should run on ours on this machine */
static bool expect_ours(const gcase *c) {
    return gemv_cpu() && c->post != P_BIAS_GELU && (c->B ? c->B : 1) * c->M == 1;
}

static const char *const LAYERS[] = {"wT", "fc", "bias", "relu", "clip", "hs_add", "hs_clip", "hs_div", "hs_mul", "gelu"};

static void build(dt_graph *g, const gcase *c, uint32_t seed, const rt_dnnl_opts *o) {
    dt_init(g, seed);
    g->opts = o;
    int nd = c->B ? 3 : 2;
    const int64_t *os = c->B ? S3(c->B, c->M, c->N) : S2(c->M, c->N);
    int w, nodes[8], nn;
    char posts[400] = "[]", name[64];
    int mm = dt_product(g, c->B, c->M, c->K, c->N, c->dense, nodes, &nn, name, sizeof name, &w), head = mm;
    if (c->post != P_NONE) {
        int b = dt_const(g, 1, S1(c->N));
        int a = dt_op(g, "relax.add", NULL, 2, IN(mm, b), NULL, nd, os, "bias");
        nodes[nn++] = a;
        head = a;
        strcat(name, "_bias");
        int n0 = snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}", a, b);
        if (c->post == P_BIAS_RELU || c->post == P_BIAS_GELU) {
            bool relu = c->post == P_BIAS_RELU;
            head = dt_op(g, relu ? "relax.nn.relu" : "relax.nn.gelu", NULL, 1, IN(a), NULL, nd, os, relu ? "relu" : "gelu");
            strcat(name, relu ? "_relu" : "_gelu");
        } else if (c->post == P_BIAS_CLIP) {
            head = dt_op(g, "relax.clip", NULL, 1, IN(a), "[{\"float\":-0.25},{\"float\":0.5}]", nd, os, "clip");
            strcat(name, "_clip");
            n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0],\"alpha\":-0.25,\"beta\":0.5}", head);
        } else if (c->post == P_BIAS_HARDSWISH) {
            int t3 = dt_scalar(g, 3.f), six = dt_scalar(g, 6.f);
            int ad = dt_op(g, "relax.add", NULL, 2, IN(a, t3), NULL, nd, os, "hs_add");
            int cl = dt_op(g, "relax.clip", NULL, 1, IN(ad), "[{\"float\":0.0},{\"float\":6.0}]", nd, os, "hs_clip");
            int dv = dt_op(g, "relax.divide", NULL, 2, IN(cl, six), NULL, nd, os, "hs_div");
            head = dt_op(g, "relax.multiply", NULL, 2, IN(a, dv), NULL, nd, os, "hs_mul");
            nodes[nn++] = ad;
            nodes[nn++] = cl;
            nodes[nn++] = dv;
            strcat(name, "_hardswish");
        }
        if (c->post == P_BIAS_RELU || c->post == P_BIAS_GELU || c->post == P_BIAS_HARDSWISH)
            n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0]}", head);
        if (head != a) nodes[nn++] = head;
        snprintf(posts + n0, sizeof posts - (size_t)n0, "]");
    }
    dt_product_end(g, head, c->dense, c->post != P_NONE, name, mm, nn, nodes, posts, w);
}

/* The prepared region's primitives of ours; every primitive's layers among the graph's. */
static int count_gemv(dt_prepared *p) {
    int n = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi = dt_prim_in(p, i, LAYERS, sizeof LAYERS / sizeof LAYERS[0]);
        if (!strcmp(pi.impl, "graft_gemv:avx2")) {
            n++;
            cr_expect_str_eq(pi.kind, "matmul");
            bool fc = false;
            for (uint32_t l = 0; l < pi.nlayers; l++) fc |= !strcmp(pi.layers[l], "fc");
            cr_expect(fc, "primitive %u (ours) does not name the matmul's layer", i);
        }
        cr_expect(strncmp(pi.impl, "ref", 3), "primitive %u (%s) on %s", i, pi.kind, pi.impl);
    }
    return n;
}

Test(dnnl_gemv, shapes_against_reference, .timeout = 120) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const gcase *c = &CASES[i];
        dt_graph g;
        build(&g, c, 200 + (uint32_t)i, NULL);
        double worst = dt_check(&g);
        dt_prepared p;
        gr_diag d = {0};
        cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "case %zu: %s", i, d.msg);
        int n = count_gemv(&p);
        bool ours = expect_ours(c);
        cr_expect_eq(n, ours ? 1 : 0, "case %zu (%ld x %ld x %ld, ISA %s): %d graft_gemv primitives", i,
                     (long)((c->B ? c->B : 1) * c->M), (long)c->K, (long)c->N, rt_dnnl_isa(), n);
        rt_dnnl_stats st;
        rt_dnnl_get_stats(p.state, &st);
        if (ours) {
            /* the weights once: read in place, or the transposed ones' K x N copy; post-ops all
             * in the one primitive */
            size_t wb = (size_t)(c->K * c->N) * sizeof(float);
            cr_expect_eq(st.weight_bytes, c->dense ? wb : 0, "case %zu: %zu weight bytes", i, st.weight_bytes);
            cr_expect_geq(st.const_bytes, c->dense ? 0 : wb, "case %zu: the weights read in place are held (%zu bytes)", i,
                          st.const_bytes);
            cr_expect_eq(st.nprims, 1, "case %zu: %u primitives", i, st.nprims);
        }
        fprintf(stderr, "dnnl_gemv case %zu (%ld x %ld . %ld x %ld, ISA %s): %s, max |err| %.3g\n", i,
                (long)((c->B ? c->B : 1) * c->M), (long)c->K, (long)c->K, (long)c->N, rt_dnnl_isa(),
                n ? "graft_gemv" : "oneDNN", worst);
        dt_release(&p);
        dt_free(&g);
    }
}

/* dnnl.gemv=0: oneDNN's matmul, same results */
Test(dnnl_gemv, option_off) {
    rt_dnnl_opts o = rt_dnnl_default_opts();
    cr_expect(o.gemv, "on by default");
    o.gemv = false;
    dt_graph g;
    build(&g, &CASES[0], 7, &o);
    dt_check(&g);
    dt_prepared p;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(count_gemv(&p), 0);
    dt_release(&p);
    dt_free(&g);
}
