/* Concats in place (backends/dnnl/dnnl_op_data.c): a channel concat of one image whose sources
 * fill whole channel blocks has its producers write their slots of its output directly, and a
 * concat of a prefix of a larger one's sources is a view of that one's buffer. Each graph hits
 * one case, in place or one of the fallbacks (a region input, a constant, a head, a source
 * given twice, channels that cut a block, a batch of two), and is checked against the
 * reference engine with dnnl_test_util.h's tolerance (1e-4 absolute + 1e-4 relative), at
 * whatever ISA the process runs (make test: native and ONEDNN_MAX_CPU_ISA=AVX2). */
#include <string.h>

#include "tests/dnnl/dnnl_test_util.h"

#define CAT1 "{\"axis\":1}"

/* A 3x3 convolution of x (C channels in, O out, H x W maps, batch N), a bias and a relu, as
 * the codegen's fused composite. */
static int conv_relu(dt_graph *g, int x, int64_t N, int64_t C, int64_t O, int64_t H, int64_t W) {
    int w = dt_const(g, 4, S4(O, C, 3, 3));
    int c = dt_op(g, "relax.nn.conv2d", "{\"padding\":[1,1,1,1]}", 2, IN(x, w), NULL, 4, S4(N, O, H, W), NULL);
    return dt_conv_bias_act(g, c, O, S4(N, O, H, W), false, "relu");
}

/* The concat of srcs[0..n) (each of ch[i] channels) over axis 1. */
static int cat(dt_graph *g, int n, const int *srcs, const int64_t *ch, int64_t N, int64_t H, int64_t W) {
    char args[512];
    size_t l = (size_t)snprintf(args, sizeof args, "![{\"tuple\":[");
    int64_t C = 0;
    for (int i = 0; i < n; i++) {
        l += (size_t)snprintf(args + l, sizeof args - l, "%s{\"in\":%d}", i ? "," : "", i);
        C += ch[i];
    }
    snprintf(args + l, sizeof args - l, "]}]");
    return dt_op(g, "relax.concat", CAT1, n, srcs, args, 4, S4(N, C, H, W), "cat");
}

/* Prepared with no primitive on ref: the in-place sources and the concat primitives. */
static void counts(dt_graph *g, uint32_t *slots, int *nconcat) {
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(g, &p, &st);
    *slots = st.nslots;
    *nconcat = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p.state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p.state, i, &pi));
        *nconcat += !strcmp(pi.kind, "concat");
    }
    dt_release(&p);
}

/* Two convolutions into one concat, read by a third: both write their slots. */
Test(dnnl_concat, producers_in_place) {
    dt_graph g;
    dt_init(&g, 1);
    int x = dt_input(&g, 4, S4(1, 16, 7, 9));
    int a = conv_relu(&g, x, 1, 16, 16, 7, 9), b = conv_relu(&g, x, 1, 16, 32, 7, 9);
    int c = cat(&g, 2, IN(a, b), S2(16, 32), 1, 7, 9);
    dt_head(&g, conv_relu(&g, c, 1, 48, 16, 7, 9));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 2, "both producers in place (%u)", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* DenseNet: each concat takes every earlier map; all are views of the last one's buffer. */
Test(dnnl_concat, growing_concats_are_views) {
    dt_graph g;
    dt_init(&g, 2);
    int x = dt_input(&g, 4, S4(1, 16, 6, 6));
    int x0 = conv_relu(&g, x, 1, 16, 32, 6, 6);
    int f1 = conv_relu(&g, x0, 1, 32, 16, 6, 6);
    int c1 = cat(&g, 2, IN(x0, f1), S2(32, 16), 1, 6, 6);
    int f2 = conv_relu(&g, c1, 1, 48, 16, 6, 6);
    int c2 = cat(&g, 3, IN(x0, f1, f2), S3(32, 16, 16), 1, 6, 6);
    dt_head(&g, conv_relu(&g, c2, 1, 64, 16, 6, 6));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 5, "every source of both concats in place (%u)", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* A region input and a constant are copied into their slots; the producer still writes its. */
Test(dnnl_concat, input_and_constant_copied) {
    dt_graph g;
    dt_init(&g, 3);
    int x = dt_input(&g, 4, S4(1, 16, 5, 5));
    int k = dt_const(&g, 4, S4(1, 16, 5, 5));
    int a = conv_relu(&g, x, 1, 16, 16, 5, 5);
    dt_head(&g, cat(&g, 3, IN(x, a, k), S3(16, 16, 16), 1, 5, 5));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 1, "the convolution in place (%u)", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* A source that is also a region output keeps a buffer of its own (copied into its slot); a
 * source read by another op too is written in place and read there. */
Test(dnnl_concat, head_and_other_reader) {
    dt_graph g;
    dt_init(&g, 4);
    int x = dt_input(&g, 4, S4(1, 16, 6, 7));
    int a = conv_relu(&g, x, 1, 16, 16, 6, 7), b = conv_relu(&g, x, 1, 16, 16, 6, 7);
    int p = dt_op(&g, "relax.nn.max_pool2d", "{\"pool_size\":[2,2],\"strides\":[2,2]}", 1, IN(b), NULL, 4, S4(1, 16, 3, 3),
                  NULL);
    int c = cat(&g, 2, IN(a, b), S2(16, 16), 1, 6, 7);
    dt_head(&g, a);
    dt_head(&g, p);
    dt_head(&g, c);
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 1, "b in place, a (a head) copied (%u)", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* The same map twice: written in its first slot, copied into the second. */
Test(dnnl_concat, same_source_twice) {
    dt_graph g;
    dt_init(&g, 5);
    int x = dt_input(&g, 4, S4(1, 16, 4, 6));
    int a = conv_relu(&g, x, 1, 16, 16, 4, 6);
    int c = cat(&g, 2, IN(a, a), S2(16, 16), 1, 4, 6);
    dt_head(&g, conv_relu(&g, c, 1, 32, 16, 4, 6));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 1, "%u", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* A source in two concats at different offsets: in its slot of the one planned first (the
 * later concat), copied into the other. */
Test(dnnl_concat, source_of_two_concats) {
    dt_graph g;
    dt_init(&g, 6);
    int x = dt_input(&g, 4, S4(1, 16, 5, 6));
    int a = conv_relu(&g, x, 1, 16, 16, 5, 6), b = conv_relu(&g, x, 1, 16, 16, 5, 6);
    int c1 = cat(&g, 2, IN(a, b), S2(16, 16), 1, 5, 6);
    int c2 = cat(&g, 2, IN(b, a), S2(16, 16), 1, 5, 6);
    dt_head(&g, conv_relu(&g, c1, 1, 32, 16, 5, 6));
    dt_head(&g, conv_relu(&g, c2, 1, 32, 16, 5, 6));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(slots, 2, "%u", slots);
    cr_expect_eq(ncat, 0);
    dt_check(&g);
    dt_free(&g);
}

/* Channels that cut a block (12 of 8 or 16) and a batch of two: no plan; oneDNN's concat, or
 * where the sources are in another layout than the concat's, each reordered once into its
 * slice (at most one concat primitive). */
Test(dnnl_concat, fallbacks_to_the_concat_primitive) {
    for (int t = 0; t < 2; t++) {
        int64_t N = t ? 2 : 1, C = t ? 16 : 12;
        dt_graph g;
        dt_init(&g, 7 + (uint32_t)t);
        int x = dt_input(&g, 4, S4(N, 16, 5, 5));
        int a = conv_relu(&g, x, N, 16, C, 5, 5), b = conv_relu(&g, x, N, 16, 16, 5, 5);
        dt_head(&g, cat(&g, 2, IN(a, b), S2(C, 16), N, 5, 5));
        uint32_t slots;
        int ncat;
        counts(&g, &slots, &ncat);
        cr_expect_eq(slots, 0, "%u", slots);
        cr_expect_leq(ncat, 1, "case %d: %d concat primitives", t, ncat);
        dt_check(&g);
        dt_free(&g);
    }
}

/* Three 24-channel maps from 3x3 convolutions (oneDNN's Winograd on avx512_core: blocked by
 * 16, which 24 cuts) concatenated for a fourth: no concat primitive, each source copied once
 * into its run of an nChw8c result (AVX2: blocks of 8, the producers write their slots). */
Test(dnnl_concat, sources_cut_by_the_block_copied_once) {
    dt_graph g;
    dt_init(&g, 11);
    int x = dt_input(&g, 4, S4(1, 32, 12, 12));
    int s[3];
    for (int i = 0; i < 3; i++) s[i] = conv_relu(&g, x, 1, 32, 24, 12, 12);
    int c = cat(&g, 3, s, (int64_t[]){24, 24, 24}, 1, 12, 12);
    dt_head(&g, conv_relu(&g, c, 1, 72, 24, 12, 12));
    uint32_t slots;
    int ncat;
    counts(&g, &slots, &ncat);
    cr_expect_eq(ncat, 0, "%d concat primitives", ncat);
    dt_check(&g);
    dt_free(&g);
}
