/* Post-op chains the oneDNN engine finds in graphs without a composite annotation
 * (backends/dnnl/dnnl_postops.c): a chain folds into one eltwise post-op only when its nodes
 * compute that function for every input. Each graph here is one a matcher took for a known form
 * while its operands said otherwise; the engine must agree with the reference engine on it
 * (tolerance in dnnl_test_util.h), folded or not. */
#include "dnnl_test_util.h"

#define CONV_ATTRS                                                                                     \
    "{\"strides\":[1,1],\"padding\":[1,1,1,1],\"dilation\":[1,1],\"groups\":1,\"data_layout\":\"NCHW\"," \
    "\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}"
#define SHAPE S4(1, 8, 6, 6)

/* x: a region input (ops on it are primitives of their own) or, when conv, a convolution's
 * output (ops after it are post-op candidates). */
static int source(dt_graph *g, bool conv) {
    int x = dt_input_r(g, 4, SHAPE, 8.f, 0.f);
    if (!conv) return x;
    int w = dt_const(g, 4, S4(8, 8, 3, 3));
    return dt_op(g, "relax.nn.conv2d", CONV_ATTRS, 2, IN(x, w), NULL, 4, SHAPE, "conv");
}

static int clip(dt_graph *g, int x, float lo, float hi) {
    char b[96];
    snprintf(b, sizeof b, "[{\"float\":%.9g},{\"float\":%.9g}]", lo, hi);
    return dt_op(g, "relax.clip", NULL, 1, IN(x), b, 4, SHAPE, "clip");
}

static int bin(dt_graph *g, const char *op, int a, int b) { return dt_op(g, op, NULL, 2, IN(a, b), NULL, 4, SHAPE, op); }

/* x * clip(c0 - x, 0, hi) / c1: with hi = 6, c0 = 3, c1 = 6 it is not hardswish (the sign of x
 * is flipped); with hi = -6, c0 = -3, c1 = -6 the products the matcher checks are hardswish's
 * (A * C = 1/6, B * C = 1/2, (hi - lo) * C = 1), but the bounds cross: clip gives hi everywhere
 * and the chain is x itself. */
Test(dnnl_postop_match, hardswish_clip_bounds_crossed) {
    for (int conv = 0; conv < 2; conv++) {
        dt_graph g;
        dt_init(&g, 24);
        int x = source(&g, conv);
        int s = bin(&g, "relax.subtract", dt_scalar(&g, -3.f), x);
        int cl = clip(&g, s, 0.f, -6.f);
        int d = bin(&g, "relax.divide", cl, dt_scalar(&g, -6.f));
        int m = bin(&g, "relax.multiply", x, d);
        dt_head(&g, m);
        dt_check(&g);
        dt_free(&g);
    }
}

/* A composite annotation is proved the same way: the engine builds the post-ops the annotation
 * lists, so each must be what its nodes compute. Refused at prepare, naming the node: a bias
 * add whose operand is another constant than the annotation's, and a hardswish whose offset is
 * 2 instead of 3 (the annotation stands for hardswish's constants). */
static void expect_refused(dt_graph *g, const char *layer) {
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(g, &st, &d), GR_OK, "the annotation does not hold, yet oneDNN prepared it");
    cr_expect(strstr(d.msg, "composite annotation") && strstr(d.msg, layer), "%s", d.msg);
}

Test(dnnl_postop_match, annotation_bias_operand_differs) {
    dt_graph g;
    dt_init(&g, 25);
    int x = source(&g, true);
    int b1 = dt_const(&g, 4, S4(1, 8, 1, 1)), b2 = dt_const(&g, 4, S4(1, 8, 1, 1));
    int a = dt_op(&g, "relax.add", NULL, 2, IN(x, b2), NULL, 4, SHAPE, "bias2");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 4, SHAPE, "relu");
    dt_head(&g, r);
    char posts[128];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, b1, r);
    dt_composite(&g, "dnnl.conv2d_bias_relu", x, 3, IN(x, a, r), posts);
    expect_refused(&g, "bias2");
    dt_free(&g);
}

Test(dnnl_postop_match, annotation_hardswish_constant_differs) {
    for (int off = 2; off <= 3; off++) {
        dt_graph g;
        dt_init(&g, 26);
        int x = source(&g, true);
        int a = bin(&g, "relax.add", x, dt_scalar(&g, (float)off));
        int cl = clip(&g, a, 0.f, 6.f);
        int d = bin(&g, "relax.divide", cl, dt_scalar(&g, 6.f));
        int m = dt_op(&g, "relax.multiply", NULL, 2, IN(x, d), NULL, 4, SHAPE, "hswish");
        dt_head(&g, m);
        char posts[64];
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", m);
        dt_composite(&g, "dnnl.conv2d_hardswish", x, 5, IN(x, a, cl, d, m), posts);
        if (off == 3) dt_check(&g); /* the exporter's form: proved, and computed */
        else expect_refused(&g, "hswish");
        dt_free(&g);
    }
}

/* Two eltwise post-ops of one oneDNN algorithm with different parameters (relu's slope, clip's
 * bounds): oneDNN 2.6's jit kernels ran the second with the first's (a binary add, leaky relu,
 * relu kept the slope on 385 of 800 values; generator seed 13066: a reduction's two clips), so
 * the engine fuses the first only. */
Test(dnnl_postop_match, one_algorithm_twice) {
    for (int form = 0; form < 2; form++) {
        dt_graph g;
        dt_init(&g, 27);
        int x = dt_input_r(&g, 4, SHAPE, 4.f, 0.f), y = dt_input_r(&g, 4, SHAPE, 4.f, 0.f);
        int a = bin(&g, "relax.add", x, y), r;
        if (form == 0) {
            int l = dt_op(&g, "relax.nn.leakyrelu", "{\"alpha\":0.1}", 1, IN(a), NULL, 4, SHAPE, "leaky");
            r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(l), NULL, 4, SHAPE, "relu");
        } else {
            r = clip(&g, clip(&g, a, -0.5f, 2.f), 0.25f, 1.f);
        }
        dt_head(&g, r);
        dt_check(&g);
        dt_free(&g);
    }
}
