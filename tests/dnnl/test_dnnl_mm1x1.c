/* Matmuls with constant weights run as 1x1 convolutions where oneDNN's matmul is gemm:jit
 * (backends/dnnl/dnnl_op_matmul.c, conv1x1_matmul; option dnnl.matmul_1x1): K x N weights and
 * N x K ones read transposed ("dense"), 2-D and 3-D inputs (rows collapsed), with a bias, GELU,
 * a residual add (the sum post-op), a residual add then ReLU and a per-column multiply
 * (a broadcast binary post-op), against the reference host kernels; single rows keep graft's
 * GEMV.
 *
 * Tolerance: dnnl_test_util.h's (|d - r| <= 1e-4 + 1e-4 |r|): each output is a sum of K <= 1024
 * fp32 products of values below 1 in the kernel's order; the worst error seen is printed.
 *
 * Which implementation: below avx512_core (ONEDNN_MAX_CPU_ISA=AVX2, an AVX2-only CPU) each case
 * marked `conv` runs as one jit_1x1 convolution naming the matmul's layer, with every post-op in
 * it; at avx512_core and above none does (brgemm's matmul). */
#include "tests/dnnl/dnnl_test_util.h"

enum { P_NONE, P_BIAS, P_BIAS_GELU, P_BIAS_ADD, P_BIAS_ADD_RELU, P_BIAS_MUL };

typedef struct mcase {
    int64_t B, M, K, N; /* B > 0: a 3-D input B x M x K */
    bool dense;         /* weights N x K read transposed */
    int post;
    int conv;           /* below avx512_core: 1 a 1x1 convolution, 0 the matmul */
} mcase;

static const mcase CASES[] = {
    {0, 197, 192, 768, true, P_BIAS_GELU, 1},  /* deit_tiny's MLP expansion */
    {1, 96, 384, 384, true, P_BIAS, 1},        /* bert_encoder's projections, 3-D */
    {1, 64, 256, 1024, false, P_BIAS_GELU, 1}, /* K x N weights (the ONNX importer's) */
    {1, 50, 64, 48, false, P_BIAS_ADD, 1},     /* a residual add: the sum post-op */
    {3, 5, 64, 48, true, P_BIAS_ADD_RELU, 1},  /* three batch elements collapsed, sum then relu */
    {2, 7, 40, 24, false, P_BIAS_MUL, 1},      /* a per-column multiply (layer scale) */
    {0, 16, 40, 24, false, P_NONE, 1},         /* a plain 2-D matmul, no composite */
    {0, 33, 37, 23, false, P_BIAS_ADD, 1},     /* N and K not multiples of 8 (tails) */
    {0, 4, 1024, 64, false, P_BIAS, 1},        /* few rows over a deep K */
    {1, 1, 64, 48, false, P_BIAS, 0},          /* one row: graft's GEMV */
};

static const char *const LAYERS[] = {"wT", "fc", "bias", "gelu", "residual", "relu", "scale"};

static bool below_avx512(void) {
    const char *isa = rt_dnnl_isa();
    return strncmp(isa, "avx512", 6) != 0;
}

static void build(dt_graph *g, const mcase *c, uint32_t seed, const rt_dnnl_opts *o) {
    dt_init(g, seed);
    g->opts = o;
    int nd = c->B ? 3 : 2;
    const int64_t *os = c->B ? S3(c->B, c->M, c->N) : S2(c->M, c->N);
    int w, nodes[8], nn;
    char posts[400] = "[]", name[64];
    int mm = dt_product(g, c->B, c->M, c->K, c->N, c->dense, nodes, &nn, name, sizeof name, &w), head = mm;
    if (c->post != P_NONE) {
        int b = dt_const(g, 1, S1(c->N));
        head = dt_op(g, "relax.add", NULL, 2, IN(mm, b), NULL, nd, os, "bias");
        nodes[nn++] = head;
        strcat(name, "_bias");
        int n0 = snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}", head, b);
        if (c->post == P_BIAS_GELU) {
            head = dt_op(g, "relax.nn.gelu", NULL, 1, IN(head), NULL, nd, os, "gelu");
            strcat(name, "_gelu");
            n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0]}", head);
        } else if (c->post == P_BIAS_ADD || c->post == P_BIAS_ADD_RELU) {
            int r = dt_input(g, nd, os);
            head = dt_op(g, "relax.add", NULL, 2, IN(head, r), NULL, nd, os, "residual");
            strcat(name, "_add");
            n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0],\"src\":[%d,0]}", head, r);
            if (c->post == P_BIAS_ADD_RELU) {
                nodes[nn++] = head;
                head = dt_op(g, "relax.nn.relu", NULL, 1, IN(head), NULL, nd, os, "relu");
                strcat(name, "_relu");
                n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0]}", head);
            }
        } else if (c->post == P_BIAS_MUL) {
            int s = dt_const(g, 1, S1(c->N));
            head = dt_op(g, "relax.multiply", NULL, 2, IN(head, s), NULL, nd, os, "scale");
            strcat(name, "_mul");
            n0 += snprintf(posts + n0, sizeof posts - (size_t)n0, ",{\"out\":[%d,0],\"src\":[%d,0]}", head, s);
        }
        if (head != nodes[nn - 1]) nodes[nn++] = head;
        snprintf(posts + n0, sizeof posts - (size_t)n0, "]");
    }
    dt_product_end(g, head, c->dense, c->post != P_NONE, name, mm, nn, nodes, posts, w);
}

/* The prepared region's 1x1 convolutions, each naming the matmul's layer; *others: its
 * primitives other than those and reorders (the residual input's copy: a region input is not
 * overwritten in place) */
static int count_conv(dt_prepared *p, int *others) {
    int n = 0;
    *others = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi = dt_prim_in(p, i, LAYERS, sizeof LAYERS / sizeof LAYERS[0]);
        if (!strncmp(pi.impl, "jit_1x1", 7)) {
            n++;
            bool fc = false;
            for (uint32_t l = 0; l < pi.nlayers; l++) fc |= !strcmp(pi.layers[l], "fc");
            cr_expect(fc, "primitive %u (%s) does not name the matmul's layer", i, pi.impl);
        } else if (strcmp(pi.kind, "reorder")) {
            (*others)++;
        }
        cr_expect(strncmp(pi.impl, "ref", 3), "primitive %u (%s) on %s", i, pi.kind, pi.impl);
    }
    return n;
}

Test(dnnl_mm1x1, shapes_against_reference, .timeout = 120) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const mcase *c = &CASES[i];
        dt_graph g;
        build(&g, c, 300 + (uint32_t)i, NULL);
        double worst = dt_check(&g);
        dt_prepared p;
        gr_diag d = {0};
        cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "case %zu: %s", i, d.msg);
        int others, n = count_conv(&p, &others);
        int want = below_avx512() ? c->conv : 0;
        cr_expect_eq(n, want, "case %zu (ISA %s): %d 1x1 convolutions", i, rt_dnnl_isa(), n);
        /* every post-op in the convolution */
        if (want == 1) cr_expect_eq(others, 0, "case %zu (ISA %s): %d primitives besides", i, rt_dnnl_isa(), others);
        fprintf(stderr, "dnnl_mm1x1 case %zu (%ld x %ld . %ld x %ld, ISA %s): %s, max |err| %.3g\n", i,
                (long)((c->B ? c->B : 1) * c->M), (long)c->K, (long)c->K, (long)c->N, rt_dnnl_isa(),
                n ? "1x1 convolution" : "matmul", worst);
        dt_release(&p);
        dt_free(&g);
    }
}

/* dnnl.matmul_1x1=0: oneDNN's matmul, same results */
Test(dnnl_mm1x1, option_off) {
    rt_dnnl_opts o = rt_dnnl_default_opts();
    cr_expect(o.matmul_1x1, "on by default");
    o.matmul_1x1 = false;
    dt_graph g;
    build(&g, &CASES[0], 7, &o);
    dt_check(&g);
    dt_prepared p;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "%s", d.msg);
    int others;
    cr_expect_eq(count_conv(&p, &others), 0);
    dt_release(&p);
    dt_free(&g);
}
