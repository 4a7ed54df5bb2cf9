/* CNN paths of the oneDNN engine beyond the zoo's shapes: a batch norm left after a concat or a
 * pool (a run of per-channel constant subtract / divide / multiply / add) folded into one
 * multiply and one add (backends/dnnl/dnnl_op_elem.c), and graft's own max pooling and
 * per-channel affine on nChw8c below avx512_core (backends/dnnl/dnnl_pool.c, dnnl_affine.c).
 * Checked against the reference engine with dnnl_test_util.h's tolerance (1e-4 absolute + 1e-4
 * relative), at whatever ISA the process runs (make test: native and ONEDNN_MAX_CPU_ISA=AVX2). */
#include <string.h>

#include "tests/dnnl/dnnl_test_util.h"

/* op(a, b) of shape os */
static int bin(dt_graph *g, const char *op, int a, int b, const int64_t *os) { return dt_op(g, op, NULL, 2, IN(a, b), NULL, 4, os, op); }

/* (x - mean) / sd * gamma + beta, relu: the binary primitive takes one multiply and an add and
 * a relu as post-ops, not four constants' post-ops and the relu. */
Test(dnnl_cnn, batch_norm_run_folds) {
    dt_graph g;
    dt_init(&g, 3);
    const int64_t *os = S4(1, 20, 9, 11);
    int x = dt_input(&g, 4, os);
    int a = bin(&g, "relax.subtract", x, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
    a = bin(&g, "relax.divide", a, dt_const_r(&g, 3, S3(20, 1, 1), 0.25f, 1.f), os);
    a = bin(&g, "relax.multiply", a, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
    a = bin(&g, "relax.add", a, dt_const(&g, 3, S3(20, 1, 1)), os);
    dt_head(&g, dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 4, os, "relu"));
    rt_dnnl_stats st;
    dt_stats_no_ref(&g, &st);
    cr_expect_eq(st.nprims, 1, "%u primitives", st.nprims);
    cr_expect_eq(st.npostops, 2, "post-ops: the shift and the relu (%u)", st.npostops);
    dt_check(&g);
    dt_free(&g);
}

/* A divisor of 0 leaves the run as it is (x * inf + shift would be inf - inf where the graph's
 * (x - m) / 0 is an infinity). */
Test(dnnl_cnn, zero_divisor_does_not_fold) {
    dt_graph g;
    dt_init(&g, 4);
    const int64_t *os = S4(1, 8, 5, 5);
    int x = dt_input(&g, 4, os);
    int z = dt_const_r(&g, 4, S4(1, 8, 1, 1), 0.f, 0.f);
    int a = bin(&g, "relax.subtract", x, dt_const(&g, 4, S4(1, 8, 1, 1)), os);
    a = bin(&g, "relax.divide", a, z, os);
    dt_head(&g, bin(&g, "relax.add", a, dt_const(&g, 4, S4(1, 8, 1, 1)), os));
    rt_dnnl_stats st;
    dt_stats_no_ref(&g, &st);
    cr_expect_eq(st.npostops, 2, "the divide and the add stay post-ops (%u)", st.npostops);
    dt_free(&g);
}


/* x (1, ci, h, w) -> a k x k convolution to co channels (padded to keep h x w), bias, relu ->
 * a max (or avg) pool with attrs to oh x ow (layer "pool") -> a 1x1 convolution to 8 channels,
 * checked against the reference kernels with no primitive on ref; whether graft's pool ran. */
static bool pool_after_conv(uint32_t seed, int64_t ci, int64_t co, int64_t h, int64_t w, int k, bool avg, const char *attrs,
                            int64_t oh, int64_t ow) {
    dt_graph g;
    dt_init(&g, seed);
    int x = dt_input(&g, 4, S4(1, ci, h, w));
    int wc = dt_const(&g, 4, S4(co, ci, k, k));
    int cv = dt_op(&g, "relax.nn.conv2d", k == 3 ? "{\"padding\":[1,1,1,1]}" : NULL, 2, IN(x, wc), NULL, 4, S4(1, co, h, w), NULL);
    int r = dt_conv_bias_act(&g, cv, co, S4(1, co, h, w), false, "relu");
    int p = dt_op(&g, avg ? "relax.nn.avg_pool2d" : "relax.nn.max_pool2d", attrs, 1, IN(r), NULL, 4, S4(1, co, oh, ow), "pool");
    int w2 = dt_const(&g, 4, S4(8, co, 1, 1));
    dt_head(&g, dt_op(&g, "relax.nn.conv2d", NULL, 2, IN(p, w2), NULL, 4, S4(1, 8, oh, ow), "conv1x1"));
    dt_prepared pr;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &pr, &st);
    bool own = dt_count_impl(&pr, "graft_pool:avx2") > 0;
    dt_release(&pr);
    dt_check(&g);
    dt_free(&g);
    return own;
}
/* Max pools of a convolution's blocked result (20 channels: a block half padding): 3x3 / 2 in
 * ceil mode, 3x3 / 1 padded, 2x2 dilated by 2; graft's kernel runs them below avx512_core, and
 * the dilated one at every ISA (oneDNN 2.6's avx512_core pooling is ref:any for it). Average
 * pools with no window in padding on graft's kernel too: 2x2 / 2 (DenseNet's transitions) below
 * avx512_core, 3x2 / 1 dilated at every ISA; 3x3 / 2 in ceil mode (its last windows past the
 * edge) and 3x3 / 1 padded on oneDNN's. */
Test(dnnl_cnn, max_pool_blocked) {
    static const char *const attrs[7] = {
        "{\"pool_size\":[3,3],\"strides\":[2,2],\"padding\":[0,0,0,0],\"ceil_mode\":true}",
        "{\"pool_size\":[3,3],\"strides\":[1,1],\"padding\":[1,1,1,1]}",
        "{\"pool_size\":[2,2],\"strides\":[1,1],\"dilation\":[2,2],\"padding\":[1,0,1,0]}",
        "{\"pool_size\":[2,2],\"strides\":[2,2],\"padding\":[0,0,0,0]}",
        "{\"pool_size\":[3,2],\"strides\":[1,1],\"dilation\":[2,1],\"padding\":[0,0,0,0]}",
        "{\"pool_size\":[3,3],\"strides\":[2,2],\"padding\":[0,0,0,0],\"ceil_mode\":true}",
        "{\"pool_size\":[3,3],\"strides\":[1,1],\"padding\":[1,1,1,1],\"count_include_pad\":true}"};
    static const int64_t oh[7][2] = {{6, 6}, {13, 12}, {13, 10}, {6, 6}, {9, 11}, {6, 6}, {13, 12}};
    for (int c = 0; c < 7; c++) {
        bool own = pool_after_conv(5 + (uint32_t)c, 16, 20, 13, 12, 3, c >= 3, attrs[c], oh[c][0], oh[c][1]);
        bool avx2 = !strcmp(rt_dnnl_isa(), "avx2");
        cr_expect_eq(own, c == 2 || c == 4 || (avx2 && c <= 3), "case %d: graft's pool at ISA %s", c, rt_dnnl_isa());
    }
}

/* graft's pooling works a row at a time in strips of at most DN_POOL_SPAN input columns: maps
 * wider than a strip (610 columns; 3x3 / 1 padded, 3x3 / 2 in ceil mode, 2x2 / 2 average, 3x3
 * / 1 dilated by 3, the last strip a part one) match the reference; a window wider than a strip
 * (1 x 300) is left to oneDNN. */
Test(dnnl_cnn, pool_strips) {
    static const char *const attrs[5] = {
        "{\"pool_size\":[3,3],\"strides\":[1,1],\"padding\":[1,1,1,1]}",
        "{\"pool_size\":[3,3],\"strides\":[2,2],\"padding\":[0,0,0,0],\"ceil_mode\":true}",
        "{\"pool_size\":[2,2],\"strides\":[2,2],\"padding\":[0,0,0,0]}",
        "{\"pool_size\":[3,3],\"strides\":[1,1],\"dilation\":[1,3],\"padding\":[1,3,1,3]}",
        "{\"pool_size\":[1,300],\"strides\":[1,1],\"padding\":[0,0,0,0]}"};
    static const int64_t ow[5] = {610, 305, 305, 610, 311};
    static const int64_t oh[5] = {5, 2, 2, 5, 5};
    for (int c = 0; c < 5; c++) {
        bool own = pool_after_conv(40 + (uint32_t)c, 8, 12, 5, 610, 1, c == 2, attrs[c], oh[c], ow[c]);
        bool avx2 = !strcmp(rt_dnnl_isa(), "avx2");
        cr_expect_eq(own, c == 3 || (avx2 && c < 4), "case %d: graft's pool at ISA %s", c, rt_dnnl_isa());
    }
}

/* A per-channel affine run on a convolution's blocked result (20 channels: a block half
 * padding), then an activation, read by a 1x1 convolution: (x - m) / s * g + b, relu; x * a *
 * b, clip to [0.5, 3] (f(0) != 0: the padding lanes stay 0); x - m + b, leaky relu. graft's
 * kernel runs them below avx512_core, oneDNN's binary above. */
Test(dnnl_cnn, affine_blocked) {
    for (int c = 0; c < 3; c++) {
        dt_graph g;
        dt_init(&g, 9 + (uint32_t)c);
        const int64_t *os = S4(1, 20, 7, 9);
        int x = dt_input(&g, 4, S4(1, 16, 7, 9));
        int w = dt_const(&g, 4, S4(20, 16, 3, 3));
        int cv = dt_op(&g, "relax.nn.conv2d", "{\"padding\":[1,1,1,1]}", 2, IN(x, w), NULL, 4, os, NULL);
        int a = dt_conv_bias_act(&g, cv, 20, os, false, "relu");
        if (c == 0) {
            a = bin(&g, "relax.subtract", a, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
            a = bin(&g, "relax.divide", a, dt_const_r(&g, 3, S3(20, 1, 1), 0.25f, 1.f), os);
            a = bin(&g, "relax.multiply", a, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
            a = bin(&g, "relax.add", a, dt_const(&g, 3, S3(20, 1, 1)), os);
            a = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 4, os, "act");
        } else if (c == 1) {
            a = bin(&g, "relax.multiply", a, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
            a = bin(&g, "relax.multiply", a, dt_const(&g, 3, S3(20, 1, 1)), os);
            a = dt_op(&g, "relax.clip", NULL, 1, IN(a), "[{\"float\":0.5},{\"float\":3.0}]", 4, os, "act");
        } else {
            a = bin(&g, "relax.subtract", a, dt_const(&g, 4, S4(1, 20, 1, 1)), os);
            a = bin(&g, "relax.add", a, dt_const(&g, 3, S3(20, 1, 1)), os);
            a = dt_op(&g, "relax.nn.leakyrelu", "{\"alpha\":0.1}", 1, IN(a), NULL, 4, os, "act");
        }
        int w2 = dt_const(&g, 4, S4(8, 20, 1, 1));
        dt_head(&g, dt_op(&g, "relax.nn.conv2d", NULL, 2, IN(a, w2), NULL, 4, S4(1, 8, 7, 9), "conv1x1"));
        dt_prepared pr;
        rt_dnnl_stats st;
        dt_prepare_no_ref(&g, &pr, &st);
        bool own = dt_count_impl(&pr, "graft_affine:avx2") > 0;
        dt_release(&pr);
        cr_expect_eq(own, !strcmp(rt_dnnl_isa(), "avx2"), "case %d: graft's affine at ISA %s", c, rt_dnnl_isa());
        dt_check(&g);
        dt_free(&g);
    }
}

/* A stride == kernel transposed convolution + bias + act as the codegen's fused composite
 * (layer `layer`): x (C channels, H x W) to O channels, kernel kh x kw. */
static int pixel_up(dt_graph *g, int x, int64_t C, int64_t O, int64_t H, int64_t W, int64_t kh, int64_t kw,
                    const char *act, const char *layer) {
    char attrs[64], posts[160], name[64];
    snprintf(attrs, sizeof attrs, "{\"strides\":[%lld,%lld]}", (long long)kh, (long long)kw);
    const int64_t *os = S4(1, O, H * kh, W * kw);
    int w = dt_const(g, 4, S4(C, O, kh, kw));
    int c = dt_op(g, "relax.nn.conv2d_transpose", attrs, 2, IN(x, w), NULL, 4, os, layer);
    int b = dt_const(g, 4, S4(1, O, 1, 1));
    int a = dt_op(g, "relax.add", NULL, 2, IN(c, b), NULL, 4, os, layer);
    int h = dt_op(g, !strcmp(act, "relu") ? "relax.nn.relu" : "relax.sigmoid", NULL, 1, IN(a), NULL, 4, os, layer);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, b, h);
    snprintf(name, sizeof name, "dnnl.conv2d_transpose_bias_%s", act);
    dt_composite(g, name, c, 3, IN(c, a, h), posts);
    return h;
}

/* PP-OCR det's head: a pixel-shuffle transposed convolution read only by another. Its
 * interleave is left to the reader's, which places both kernels' pixels: one reorder fewer
 * than with dnnl.no_layout_plan (each interleaves on its own), the same results as the
 * reference engine either way; with a second reader (a region output) nothing is deferred. */
Test(dnnl_cnn, stacked_pixel_deconvs_interleave_once) {
    rt_dnnl_opts off = rt_dnnl_default_opts();
    off.no_layout_plan = true;
    uint32_t nre[3];
    for (int k = 0; k < 3; k++) {
        dt_graph g;
        dt_init(&g, 31);
        g.opts = k == 1 ? &off : NULL;
        int x = dt_input(&g, 4, S4(1, 8, 5, 7));
        int u1 = pixel_up(&g, x, 8, 6, 5, 7, 2, 2, "relu", "up1");
        dt_head(&g, pixel_up(&g, u1, 6, 3, 10, 14, 3, 2, "sigmoid", "up2"));
        if (k == 2) dt_head(&g, u1);
        dt_check(&g);
        rt_dnnl_stats st;
        dt_stats_no_ref(&g, &st);
        nre[k] = st.nreorders;
        dt_free(&g);
    }
    cr_expect_eq(nre[0] + 1, nre[1], "one interleave fewer: %u vs %u (dnnl.no_layout_plan)", nre[0], nre[1]);
    cr_expect_geq(nre[2], nre[1], "a second reader: both interleaves (%u vs %u)", nre[2], nre[1]);
}
