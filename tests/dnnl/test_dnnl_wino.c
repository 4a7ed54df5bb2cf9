/* The oneDNN engine's own Winograd convolution (backends/dnnl/dnnl_wino.c), used for 3x3 stride-1
 * convolutions where oneDNN has no Winograd (below avx512_core), against the reference host
 * kernels, over a table of shapes: sizes that are not multiples of the tile, channels that are
 * not multiples of 8, asymmetric padding, batch 2, several passes (tile ranges that split an
 * image), bias, relu / leaky relu, a residual add, a
 * per-channel scale folded into the weights, a post-op the transform does not take (sigmoid,
 * its own primitive), and convolutions it must leave to oneDNN (stride 2, dilation 2, groups,
 * fewer than 16 channels).
 *
 * Tolerance: |wino - ref| <= DT_WINO_ATOL_OF_MAX * max|ref| + DT_WINO_RTOL * |ref|. Winograd sums
 * each output as transformed products whose magnitudes exceed the result's (the F(4x4)
 * transforms' coefficients reach 5 on the input and 8 on the output), so its rounding error is
 * relative to the largest outputs rather than to each one; it grows with C. The bound is the zoo
 * tests' (tests/dnnl/test_dnnl_zoo.c); the worst seen here is printed.
 *
 * Which implementation: on an ISA below avx512_core with AVX2 + FMA (ONEDNN_MAX_CPU_ISA=AVX2
 * in `make test`, or an AVX2 machine) the table's tile size is asserted (one primitive
 * graft_wino_4x3:avx2 or graft_wino_2x3:avx2); on AVX-512 none of ours runs. 3x3x3
 * convolutions (CASES3: odd sizes, channels no multiple of 8, one-sided depth padding, batch 2,
 * bias / residual / relu, several passes, and those left to oneDNN) run ours at every ISA with
 * AVX2 + FMA (graft_wino3d_4x3:avx2), in channels-last on AVX-512 and nCdhw8c below. */
#include "tests/dnnl/dnnl_test_util.h"


enum { P_NONE, P_BIAS_RELU, P_BIAS_ADD_RELU, P_BIAS_SIGMOID, P_MUL_BIAS_LEAKY };

typedef struct wcase {
    int64_t N, C, H, W, O;
    const char *pad, *stride, *dil, *groups;
    int post;
    int m; /* the tile expected under AVX2 (0: oneDNN's own convolution) */
} wcase;

static const wcase CASES[] = {
    /* 2 x 4 x 3 = 24 tiles of F(4x4): WINO_MIN_TILES */
    {2, 20, 13, 11, 24, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 4},
    {1, 16, 17, 19, 19, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_ADD_RELU, 4},
    {2, 33, 22, 22, 17, "0, 0, 0, 0", "1, 1", "1, 1", "1", P_NONE, 4},
    /* 18 tiles of F(4x4), 50 of F(2x2) */
    {2, 128, 10, 10, 128, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 2},
    {1, 24, 21, 20, 32, "1, 0, 2, 1", "1, 1", "1, 1", "1", P_BIAS_SIGMOID, 4},
    {1, 16, 20, 20, 16, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_MUL_BIAS_LEAKY, 4},
    /* too few tiles (F(4x4) 16 at 14x14, F(2x2) 16 at 7x7), or F(2x2) on fewer than
     * WINO_F2_MIN_CO channel pairs: oneDNN's direct convolution (DenseNet's 128-32) */
    {1, 128, 14, 14, 32, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 0},
    {1, 160, 7, 7, 320, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 0},
    {1, 96, 14, 14, 208, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 2},
    /* batch 4 at 7x7: 64 tiles of F(2x2) */
    {4, 128, 7, 7, 128, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_ADD_RELU, 2},
    {1, 64, 28, 28, 64, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_ADD_RELU, 4},
    /* 500 tiles of 18 KiB (V + M): 3 passes of 167, 167 and 166 tiles, one boundary mid-image */
    {2, 64, 40, 100, 64, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_ADD_RELU, 4},
    /* 144 tiles of 72 KiB: 4 passes of 36 (at least 32 a pass, not 6 of 24), F(4x4) over 256 channels */
    {1, 256, 48, 48, 256, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 4},
    {1, 16, 9, 9, 16, "1, 1, 1, 1", "2, 2", "1, 1", "1", P_BIAS_RELU, 0},
    {1, 16, 9, 9, 16, "2, 2, 2, 2", "1, 1", "2, 2", "1", P_BIAS_RELU, 0},
    {1, 32, 9, 9, 32, "1, 1, 1, 1", "1, 1", "1, 1", "2", P_BIAS_RELU, 0},
    {1, 8, 9, 9, 16, "1, 1, 1, 1", "1, 1", "1, 1", "1", P_BIAS_RELU, 0},
};

static bool wino_isa(void) {
    __builtin_cpu_init();
    return !strncmp(rt_dnnl_isa(), "avx2", 4) && __builtin_cpu_supports("fma"); /* avx2, avx2_vnni */
}

static int64_t out_size(int64_t in, int64_t lo, int64_t hi, int64_t s, int64_t d) { return (in + lo + hi - d * 2 - 1) / s + 1; }

/* The graph of case c; *layers: its layer names. */
static void build(dt_graph *g, const wcase *c, uint32_t seed) {
    dt_init(g, seed);
    int64_t p[4], s[2], d[2];
    sscanf(c->pad, "%ld, %ld, %ld, %ld", (long *)&p[0], (long *)&p[1], (long *)&p[2], (long *)&p[3]);
    sscanf(c->stride, "%ld, %ld", (long *)&s[0], (long *)&s[1]);
    sscanf(c->dil, "%ld, %ld", (long *)&d[0], (long *)&d[1]);
    int64_t G = atoi(c->groups), OH = out_size(c->H, p[0], p[2], s[0], d[0]), OW = out_size(c->W, p[1], p[3], s[1], d[1]);
    const int64_t *os = S4(c->N, c->O, OH, OW);
    int x = dt_input(g, 4, S4(c->N, c->C, c->H, c->W));
    int w = dt_const(g, 4, S4(c->O, c->C / G, 3, 3));
    char attrs[400];
    snprintf(attrs, sizeof attrs,
             "{\"strides\":[%s],\"padding\":[%s],\"dilation\":[%s],\"groups\":%s,\"data_layout\":\"NCHW\","
             "\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}",
             c->stride, c->pad, c->dil, c->groups);
    int cv = dt_op(g, "relax.nn.conv2d", attrs, 2, IN(x, w), NULL, 4, os, "conv");
    char posts[300];
    int head = cv;
    if (c->post == P_BIAS_RELU || c->post == P_BIAS_ADD_RELU || c->post == P_BIAS_SIGMOID) {
        head = dt_conv_bias_act(g, cv, c->O, os, c->post == P_BIAS_ADD_RELU, c->post == P_BIAS_SIGMOID ? "sigmoid" : "relu");
    } else if (c->post == P_MUL_BIAS_LEAKY) {
        int k = dt_const_r(g, 4, S4(1, c->O, 1, 1), 1.f, 1.5f);
        int mu = dt_op(g, "relax.multiply", NULL, 2, IN(cv, k), NULL, 4, os, "scale");
        int b = dt_const(g, 4, S4(1, c->O, 1, 1));
        int a = dt_op(g, "relax.add", NULL, 2, IN(mu, b), NULL, 4, os, "bias");
        head = dt_op(g, "relax.nn.leakyrelu", "{\"alpha\":0.1}", 1, IN(a), NULL, 4, os, "leaky");
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0],\"alpha\":0.1}]",
                 mu, k, a, b, head);
        dt_composite(g, "dnnl.conv2d_mul_bias_leaky_relu", cv, 4, IN(cv, mu, a, head), posts);
    }
    dt_head(g, head);
}

static const char *const LAYERS[] = {"conv", "bias", "residual", "relu", "sigmoid", "scale", "leaky"};

/* the implementations of the prepared region: how many of ours, those whose impl reads as fmt
 * (2-D WINO_2D, 3-D WINO_3D; *m their tile), and every primitive's layers among the graph's */
#define WINO_2D "graft_wino_%dx3:avx2"
#define WINO_3D "graft_wino3d_%dx3:avx2"
static int count_wino(dt_prepared *p, const char *fmt, int *m) {
    int n = 0;
    *m = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi = dt_prim_in(p, i, LAYERS, sizeof LAYERS / sizeof LAYERS[0]);
        int tm;
        if (sscanf(pi.impl, fmt, &tm) == 1) {
            n++;
            *m = tm;
            cr_expect_str_eq(pi.kind, "convolution");
        }
    }
    return n;
}

Test(dnnl_wino, shapes_against_reference, .timeout = 120) {
    bool ours = wino_isa();
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const wcase *c = &CASES[i];
        dt_graph g;
        build(&g, c, 100 + (uint32_t)i);
        rt_tensor *ref[1] = {0}, *got[1] = {0};
        gr_diag d = {0};
        cr_assert_eq(dt_run(&g, &rt_json_reference_engine, ref, &d), GR_OK, "case %zu reference: %s", i, d.msg);
        cr_assert_eq(dt_run(&g, &rt_dnnl_engine, got, &d), GR_OK, "case %zu dnnl: %s", i, d.msg);
        gr_cmp_result e = tc_expect_tensor(got[0], ref[0], (gr_cmp_opts){.atol_scale = DT_WINO_ATOL_OF_MAX, .rtol = DT_WINO_RTOL},
                                           "case %zu: dnnl against the reference", i);
        dt_prepared p;
        cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "%s", d.msg);
        int m, n = count_wino(&p, WINO_2D, &m);
        /* ours: one primitive (transforms and oneDNN's matmul inside) */
        if (ours && c->m) {
            cr_expect_eq(n, 1, "case %zu: %d graft_wino primitives", i, n);
            cr_expect_eq(m, c->m, "case %zu: F(%dx%d), expected F(%dx%d)", i, m, m, c->m, c->m);
        } else {
            cr_expect_eq(n, 0, "case %zu (ISA %s): %d graft_wino primitives", i, rt_dnnl_isa(), n);
        }
        fprintf(stderr, "dnnl_wino case %zu (%ld-%ld @%ldx%ld, ISA %s): F(%dx%d), max |err| %.3g of max|ref| %.3g\n", i, (long)c->C,
                (long)c->O, (long)c->H, (long)c->W, rt_dnnl_isa(), m, m, e.max_abs, e.max_ref);
        dt_release(&p);
        rt_tensor_release(ref[0]);
        rt_tensor_release(got[0]);
        dt_free(&g);
    }
}

/* dnnl.winograd=0: oneDNN's direct convolution everywhere */
Test(dnnl_wino, option_off) {
    rt_dnnl_opts o = rt_dnnl_default_opts();
    o.winograd = false;
    dt_graph g;
    build(&g, &CASES[0], 7);
    g.opts = &o;
    dt_check(&g);
    dt_prepared p;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(&g, &p, &d), GR_OK, "%s", d.msg);
    int m;
    cr_expect_eq(count_wino(&p, WINO_2D, &m), 0);
    dt_release(&p);
    dt_free(&g);
}

/* ------------------------------------------------------------------ 3-D ---- */

/* 3x3x3 convolutions: Winograd F(4x4) over H and W, direct over depth, wherever the CPU has
 * AVX2 + FMA (oneDNN has no 3-D Winograd at any ISA), on the layout oneDNN's convolutions use
 * at the ISA (channels-last on avx512_core, nCdhw8c below). Same tolerance as the 2-D cases. */
typedef struct wcase3 {
    int64_t N, C, D, H, W, O;
    int64_t pad[6];               /* front, top, left, back, bottom, right */
    int64_t stride;
    bool bias_relu, residual;
    int m;                        /* the tile expected (0: oneDNN's own convolution) */
} wcase3;

static const wcase3 CASES3[] = {
    {1, 20, 5, 13, 11, 24, {1, 1, 1, 1, 1, 1}, 1, true, false, 4},
    {2, 16, 4, 7, 9, 19, {1, 1, 1, 1, 1, 1}, 1, true, true, 4},
    {1, 33, 3, 16, 14, 17, {0, 0, 0, 0, 0, 0}, 1, false, false, 4},
    /* depth padded on one side only: output depth 0 reads input depths 0..2, the last two taps
     * of the last output depth read past the input */
    {1, 24, 4, 9, 8, 32, {0, 1, 0, 2, 2, 1}, 1, true, true, 4},
    {2, 16, 3, 6, 5, 16, {2, 0, 1, 0, 1, 1}, 1, false, true, 4},
    /* 100 tile columns of 147 KiB (V + M over 4 depths): several passes, the last shorter */
    {1, 64, 4, 40, 40, 64, {1, 1, 1, 1, 1, 1}, 1, true, true, 4},
    /* more output depths than input ones, stride 2, fewer than 16 channels: oneDNN's */
    {1, 16, 3, 8, 8, 16, {2, 1, 1, 2, 1, 1}, 1, true, false, 0},
    {1, 16, 5, 9, 9, 16, {1, 1, 1, 1, 1, 1}, 2, true, false, 0},
    {1, 8, 4, 9, 9, 16, {1, 1, 1, 1, 1, 1}, 1, true, false, 0},
};

static void build3(dt_graph *g, const wcase3 *c, uint32_t seed) {
    dt_init(g, seed);
    const int64_t *p = c->pad;
    int64_t OD = out_size(c->D, p[0], p[3], c->stride, 1), OH = out_size(c->H, p[1], p[4], c->stride, 1),
            OW = out_size(c->W, p[2], p[5], c->stride, 1);
    const int64_t *os = (const int64_t[]){c->N, c->O, OD, OH, OW};
    int x = dt_input(g, 5, (const int64_t[]){c->N, c->C, c->D, c->H, c->W});
    int w = dt_const(g, 5, (const int64_t[]){c->O, c->C, 3, 3, 3});
    char attrs[200];
    snprintf(attrs, sizeof attrs, "{\"strides\": [%ld, %ld, %ld], \"padding\": [%ld, %ld, %ld, %ld, %ld, %ld]}", (long)c->stride,
             (long)c->stride, (long)c->stride, (long)p[0], (long)p[1], (long)p[2], (long)p[3], (long)p[4], (long)p[5]);
    int y = dt_op(g, "relax.nn.conv3d", attrs, 2, IN(x, w), NULL, 5, os, "conv");
    if (c->bias_relu) {
        int b = dt_const(g, 5, (const int64_t[]){1, c->O, 1, 1, 1});
        y = dt_op(g, "relax.add", NULL, 2, IN(y, b), NULL, 5, os, "bias");
    }
    if (c->residual) y = dt_op(g, "relax.add", NULL, 2, IN(y, dt_input(g, 5, os)), NULL, 5, os, "residual");
    if (c->bias_relu) y = dt_op(g, "relax.nn.relu", NULL, 1, IN(y), NULL, 5, os, "relu");
    dt_head(g, y);
}

Test(dnnl_wino, conv3d_against_reference, .timeout = 120) {
    __builtin_cpu_init();
    bool ours = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    for (size_t i = 0; i < sizeof CASES3 / sizeof CASES3[0]; i++) {
        const wcase3 *c = &CASES3[i];
        dt_graph g;
        build3(&g, c, 300 + (uint32_t)i);
        rt_tensor *ref[1] = {0}, *got[1] = {0};
        gr_diag d = {0};
        cr_assert_eq(dt_run(&g, &rt_json_reference_engine, ref, &d), GR_OK, "3-D case %zu reference: %s", i, d.msg);
        cr_assert_eq(dt_run(&g, &rt_dnnl_engine, got, &d), GR_OK, "3-D case %zu dnnl: %s", i, d.msg);
        gr_cmp_result e = tc_expect_tensor(got[0], ref[0], (gr_cmp_opts){.atol_scale = DT_WINO_ATOL_OF_MAX, .rtol = DT_WINO_RTOL},
                                           "3-D case %zu: dnnl against the reference", i);
        dt_prepared p;
        rt_dnnl_stats st;
        dt_prepare_no_ref(&g, &p, &st);
        int m, n = count_wino(&p, WINO_3D, &m);
        cr_expect_eq(n, ours && c->m ? 1 : 0, "3-D case %zu (ISA %s): %d graft_wino3d primitives", i, rt_dnnl_isa(), n);
        if (ours && c->m) {
            cr_expect_eq(m, c->m, "3-D case %zu: F(%dx%d), expected F(%dx%d)", i, m, m, c->m, c->m);
            /* bias, residual add and relu applied by the output transform */
            uint32_t posts = (c->bias_relu ? 2u : 0u) + (c->residual ? 1u : 0u);
            cr_expect_eq(st.npostops, posts, "3-D case %zu: %u post-ops fused, expected %u", i, st.npostops, posts);
        }
        fprintf(stderr, "dnnl_wino 3-D case %zu (%ld-%ld @%ldx%ldx%ld, ISA %s): F(%dx%d), max |err| %.3g of max|ref| %.3g\n", i,
                (long)c->C, (long)c->O, (long)c->D, (long)c->H, (long)c->W, rt_dnnl_isa(), m, m, e.max_abs, e.max_ref);
        dt_release(&p);
        rt_tensor_release(ref[0]);
        rt_tensor_release(got[0]);
        dt_free(&g);
    }
}

/* Two 3-D Winograd convolutions in a row (a video net's residual block): the second reads the
 * first's result in the layout it wrote, no reorder between them. */
Test(dnnl_wino, conv3d_block_no_reorder) {
    static const int64_t C = 32;
    const int64_t *os = (const int64_t[]){1, C, 4, 10, 10};
    dt_graph g;
    dt_init(&g, 41);
    int x = dt_input(&g, 5, os), y = x;
    for (int i = 0; i < 2; i++) {
        int w = dt_const(&g, 5, (const int64_t[]){C, C, 3, 3, 3}), b = dt_const(&g, 5, (const int64_t[]){1, C, 1, 1, 1});
        y = dt_op(&g, "relax.nn.conv3d", "{\"padding\": [1, 1, 1, 1, 1, 1]}", 2, IN(y, w), NULL, 5, os, "conv");
        y = dt_op(&g, "relax.add", NULL, 2, IN(y, b), NULL, 5, os, "bias");
        if (i) y = dt_op(&g, "relax.add", NULL, 2, IN(y, x), NULL, 5, os, "residual");
        y = dt_op(&g, "relax.nn.relu", NULL, 1, IN(y), NULL, 5, os, "relu");
    }
    dt_head(&g, y);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    int m, n = count_wino(&p, WINO_3D, &m);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        cr_expect_eq(n, 2, "%d graft_wino3d primitives (ISA %s)", n, rt_dnnl_isa());
        /* the region input into the first conv's layout (once: the residual reuses it) and the
         * result out of the second's, none between */
        cr_expect_leq(st.nreorders, 2, "%u reorders (ISA %s)", st.nreorders, rt_dnnl_isa());
    }
    dt_release(&p);
    rt_tensor *ref[1] = {0}, *got[1] = {0};
    gr_diag d = {0};
    cr_assert_eq(dt_run(&g, &rt_json_reference_engine, ref, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(dt_run(&g, &rt_dnnl_engine, got, &d), GR_OK, "%s", d.msg);
    tc_expect_tensor(got[0], ref[0], (gr_cmp_opts){.atol_scale = DT_WINO_ATOL_OF_MAX, .rtol = DT_WINO_RTOL}, "dnnl against the reference");
    rt_tensor_release(ref[0]);
    rt_tensor_release(got[0]);
    dt_free(&g);
}
