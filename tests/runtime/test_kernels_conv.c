/* GEMM-based kernels against naive direct implementations with double accumulation
 * (tolerance: 1e-4 relative + 1e-5 absolute), pooling and resize against direct references. */
#include <time.h>

#include "kernels_test_util.h"
#include "runtime/kernels/kernels_impl.h"

TestSuite(kernels_conv, .init = kt_setup, .fini = kt_teardown);

static void naive_gemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
                       const float *B, int64_t rsb, int64_t csb, double *C) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += (double)A[i * rsa + k * csa] * B[k * rsb + j * csb];
            C[i * N + j] = s;
        }
}

static void assert_close_f(const float *got, const double *want, int64_t n, double rtol,
                           double atol) {
    tc_expect_f32_f64(got, want, n, (gr_cmp_opts){.atol = atol, .rtol = rtol}, "against the naive kernel");
}

Test(kernels_conv, sgemm_shapes_transposes_accumulate) {
    static const int64_t dims[][3] = {{1, 1, 1}, {5, 7, 3}, {6, 16, 256}, {13, 33, 257},
                                      {97, 130, 70}, {7, 600, 300}, {200, 40, 9}};
    for (size_t t = 0; t < sizeof(dims) / sizeof(dims[0]); t++) {
        int64_t M = dims[t][0], N = dims[t][1], K = dims[t][2];
        for (int trans = 0; trans < 4; trans++) {
            float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
            float *C = malloc(sizeof(float) * (size_t)(M * N));
            double *W = malloc(sizeof(double) * (size_t)(M * N));
            for (int64_t i = 0; i < M * K; i++) A[i] = (float)kt_uniform();
            for (int64_t i = 0; i < K * N; i++) B[i] = (float)kt_uniform();
            for (int64_t i = 0; i < M * N; i++) C[i] = 1.0f;
            int64_t rsa = trans & 1 ? 1 : K, csa = trans & 1 ? M : 1;
            int64_t rsb = trans & 2 ? 1 : N, csb = trans & 2 ? K : 1;
            bool acc = trans == 3;
            rt_sgemm(M, N, K, A, rsa, csa, B, rsb, csb, C, N, acc);
            naive_gemm(M, N, K, A, rsa, csa, B, rsb, csb, W);
            if (acc)
                for (int64_t i = 0; i < M * N; i++) W[i] += 1.0;
            assert_close_f(C, W, M * N, 1e-4, 1e-5);
            free(A);
            free(B);
            free(C);
            free(W);
        }
    }
}

Test(kernels_conv, matmul_batched_broadcast_and_vectors) {
    struct { int na, nb; int64_t a[4], b[4]; int no; int64_t o[4]; } cases[] = {
        {2, 2, {3, 4}, {4, 5}, 2, {3, 5}},
        {3, 2, {2, 3, 4}, {4, 5}, 3, {2, 3, 5}},
        {4, 3, {2, 1, 3, 4}, {3, 4, 6}, 4, {2, 3, 3, 6}},
        {1, 2, {4}, {4, 5}, 1, {5}},
        {3, 1, {2, 3, 4}, {4}, 2, {2, 3}},
        {1, 1, {7}, {7}, 0, {0}},
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        rt_tensor *a = kt_rand(cases[ci].na, cases[ci].a), *b = kt_rand(cases[ci].nb, cases[ci].b);
        rt_value o;
        rt_tensor *r = kt_ok("relax.matmul", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
        kt_assert_shape(r, cases[ci].no, cases[ci].o);
        /* reference: promote to (batch..., M, K) x (batch..., K, N) by hand */
        int an = cases[ci].na, bn = cases[ci].nb;
        int64_t M = an == 1 ? 1 : cases[ci].a[an - 2], K = cases[ci].a[an - 1];
        int64_t N = bn == 1 ? 1 : cases[ci].b[bn - 1];
        int64_t n = rt_tensor_numel(r);
        double *want = malloc(sizeof(double) * (size_t)n);
        int64_t nbatch = n / (M * N);
        for (int64_t bi = 0; bi < nbatch; bi++) {
            /* batch index -> a and b batch offsets (broadcast over leading dims) */
            int ob = cases[ci].no - (an > 1) - (bn > 1);
            int64_t rem = bi, aoff = 0, boff = 0, as = 1, bs = 1;
            for (int k = ob - 1; k >= 0; k--) {
                int64_t idx = rem % cases[ci].o[k];
                rem /= cases[ci].o[k];
                int ia = k - (ob - (an - 2)), ib = k - (ob - (bn - 2));
                int64_t da = ia >= 0 ? cases[ci].a[ia] : 1, db = ib >= 0 ? cases[ci].b[ib] : 1;
                aoff += (da == 1 ? 0 : idx) * as;
                boff += (db == 1 ? 0 : idx) * bs;
                as *= da;
                bs *= db;
            }
            naive_gemm(M, N, K, (float *)a->dl.data + aoff * M * K, K, 1,
                       (float *)b->dl.data + boff * K * N, N, 1, want + bi * M * N);
        }
        kt_assert_close(r, want, n, 1e-4, 1e-5);
        free(want);
        rt_value_clear(&o);
        rt_tensor_release(a);
        rt_tensor_release(b);
    }
    rt_tensor *a = kt_rand(KSHAPE(3, 4)), *b = kt_rand(KSHAPE(5, 6));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.matmul", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "R.matmul") && strstr(d.msg, "(3, 4)"), "%s", d.msg);
    rt_tensor_release(a);
    rt_tensor_release(b);
    /* int64 matmul is exact */
    rt_tensor *ia = kt_tensor(KT_I64, KSHAPE(2, 2), KVALS(1, 2, 3, 4));
    rt_tensor *ib = kt_tensor(KT_I64, KSHAPE(2, 2), KVALS(5, 6, 7, 8));
    rt_tensor *r = kt_ok("relax.matmul", 0, NULL, KARGS(kt_val(ia), kt_val(ib)), 2, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 4, KVALS(19, 22, 43, 50));
    rt_value_clear(&o);
    rt_tensor_release(ia);
    rt_tensor_release(ib);
}

/* ---- conv ---- */

typedef struct conv_case {
    int64_t N, C, H, W, O, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr, groups, oph, opw;
} conv_case;

static void naive_conv2d(const conv_case *k, const float *x, const float *w, double *y,
                         int64_t OH, int64_t OW) {
    int64_t Cg = k->C / k->groups, Og = k->O / k->groups;
    for (int64_t n = 0; n < k->N; n++)
        for (int64_t o = 0; o < k->O; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = 0;
                    int64_t g = o / Og;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t i = 0; i < k->KH; i++)
                            for (int64_t j = 0; j < k->KW; j++) {
                                int64_t ih = oh * k->sh - k->pt + i * k->dh, iw = ow * k->sw - k->pl + j * k->dw;
                                if (ih < 0 || ih >= k->H || iw < 0 || iw >= k->W) continue;
                                s += (double)x[((n * k->C + g * Cg + ci) * k->H + ih) * k->W + iw] *
                                     w[((o * Cg + ci) * k->KH + i) * k->KW + j];
                            }
                    y[((n * k->O + o) * OH + oh) * OW + ow] = s;
                }
}

/* Transposed conv by scattering every input pixel (IOHW weights). */
static void naive_conv2d_t(const conv_case *k, const float *x, const float *w, double *y,
                           int64_t OH, int64_t OW) {
    int64_t Cg = k->C / k->groups, Og = k->O / k->groups;
    memset(y, 0, sizeof(double) * (size_t)(k->N * k->O * OH * OW));
    for (int64_t n = 0; n < k->N; n++)
        for (int64_t c = 0; c < k->C; c++)
            for (int64_t ih = 0; ih < k->H; ih++)
                for (int64_t iw = 0; iw < k->W; iw++) {
                    int64_t g = c / Cg;
                    for (int64_t oc = 0; oc < Og; oc++)
                        for (int64_t i = 0; i < k->KH; i++)
                            for (int64_t j = 0; j < k->KW; j++) {
                                int64_t oh = ih * k->sh - k->pt + i * k->dh, ow = iw * k->sw - k->pl + j * k->dw;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                y[((n * k->O + g * Og + oc) * OH + oh) * OW + ow] +=
                                    (double)x[((n * k->C + c) * k->H + ih) * k->W + iw] *
                                    w[((c * Og + oc) * k->KH + i) * k->KW + j];
                            }
                }
}

static void run_conv_case(const conv_case *k, bool transposed, bool one_d) {
    int64_t Cw = transposed ? k->C : k->C / k->groups;
    int64_t Ow = transposed ? k->O / k->groups : k->O;
    rt_tensor *x, *w;
    if (one_d) {
        x = kt_rand(KSHAPE(k->N, k->C, k->W));
        w = transposed ? kt_rand(KSHAPE(Cw, Ow, k->KW)) : kt_rand(KSHAPE(Ow, Cw, k->KW));
    } else {
        x = kt_rand(KSHAPE(k->N, k->C, k->H, k->W));
        w = transposed ? kt_rand(KSHAPE(Cw, Ow, k->KH, k->KW)) : kt_rand(KSHAPE(Ow, Cw, k->KH, k->KW));
    }
    int64_t OH, OW;
    if (transposed) {
        OH = (k->H - 1) * k->sh - k->pt - k->pb + k->dh * (k->KH - 1) + k->oph + 1;
        OW = (k->W - 1) * k->sw - k->pl - k->pr + k->dw * (k->KW - 1) + k->opw + 1;
    } else {
        OH = (k->H + k->pt + k->pb - k->dh * (k->KH - 1) - 1) / k->sh + 1;
        OW = (k->W + k->pl + k->pr - k->dw * (k->KW - 1) - 1) / k->sw + 1;
    }
    const char *op = one_d ? (transposed ? "relax.nn.conv1d_transpose" : "relax.nn.conv1d")
                           : (transposed ? "relax.nn.conv2d_transpose" : "relax.nn.conv2d");
    kt_kv kv[5];
    int nkv = 0;
    if (one_d) {
        kv[nkv++] = (kt_kv){"strides", KI(k->sw)};
        kv[nkv++] = (kt_kv){"padding", KI(k->pl, k->pr)};
        kv[nkv++] = (kt_kv){"dilation", KI(k->dw)};
    } else {
        kv[nkv++] = (kt_kv){"strides", KI(k->sh, k->sw)};
        kv[nkv++] = (kt_kv){"padding", KI(k->pt, k->pl, k->pb, k->pr)};
        kv[nkv++] = (kt_kv){"dilation", KI(k->dh, k->dw)};
    }
    kv[nkv++] = (kt_kv){"groups", ir_attr_int(k->groups)};
    if (transposed) kv[nkv++] = (kt_kv){"output_padding", one_d ? KI(k->opw) : KI(k->oph, k->opw)};
    rt_value o;
    rt_tensor *r = kt_ok(op, nkv, kv, KARGS(kt_val(x), kt_val(w)), 2, &o);
    if (one_d) kt_assert_shape(r, KSHAPE(k->N, k->O, OW));
    else kt_assert_shape(r, KSHAPE(k->N, k->O, OH, OW));
    int64_t n = k->N * k->O * OH * OW;
    double *want = malloc(sizeof(double) * (size_t)n);
    (transposed ? naive_conv2d_t : naive_conv2d)(k, x->dl.data, w->dl.data, want, OH, OW);
    kt_assert_close(r, want, n, 1e-4, 1e-5);
    free(want);
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(w);
}

Test(kernels_conv, conv2d_fixed_cases) {
    static const conv_case cases[] = {
        /* N C H W  O KH KW sh sw dh dw pt pl pb pr g */
        {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},       /* same padding */
        {2, 4, 9, 7, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0},       /* 1x1 direct GEMM */
        {1, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 0, 0},     /* depthwise */
        {1, 4, 11, 11, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, 0, 0},     /* depthwise x2, stride 2 */
        {1, 6, 12, 9, 4, 3, 2, 2, 1, 2, 1, 2, 0, 1, 3, 2, 0, 0},      /* groups, dilation, asym pad */
        {1, 3, 40, 40, 16, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 1, 0, 0},    /* multi-chunk im2col */
        {1, 2, 5, 5, 3, 5, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0},       /* kernel = input */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) run_conv_case(&cases[i], false, false);
}

Test(kernels_conv, conv2d_random_vs_naive) {
    for (int t = 0; t < 40; t++) {
        conv_case k = {0};
        k.groups = kt_randint(1, 3);
        if (t % 5 == 0) k.groups = kt_randint(2, 6); /* depthwise */
        k.N = kt_randint(1, 2);
        k.C = k.groups * kt_randint(1, 3);
        if (t % 5 == 0) k.C = k.groups;
        k.O = k.groups * kt_randint(1, 3);
        k.KH = kt_randint(1, 4);
        k.KW = kt_randint(1, 4);
        k.sh = kt_randint(1, 3);
        k.sw = kt_randint(1, 3);
        k.dh = kt_randint(1, 2);
        k.dw = kt_randint(1, 2);
        k.pt = kt_randint(0, 2);
        k.pl = kt_randint(0, 2);
        k.pb = kt_randint(0, 2);
        k.pr = kt_randint(0, 2);
        k.H = kt_randint(k.dh * (k.KH - 1) + 1, 14);
        k.W = kt_randint(k.dw * (k.KW - 1) + 1, 14);
        run_conv_case(&k, false, false);
    }
}

Test(kernels_conv, conv2d_transpose_random_vs_naive) {
    static const conv_case fixed = {1, 4, 5, 5, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0, 0};
    run_conv_case(&fixed, true, false);
    for (int t = 0; t < 25; t++) {
        conv_case k = {0};
        k.groups = kt_randint(1, 2);
        k.N = kt_randint(1, 2);
        k.C = k.groups * kt_randint(1, 3);
        k.O = k.groups * kt_randint(1, 3);
        k.KH = kt_randint(1, 4);
        k.KW = kt_randint(1, 4);
        k.sh = kt_randint(1, 3);
        k.sw = kt_randint(1, 3);
        k.dh = kt_randint(1, 2);
        k.dw = kt_randint(1, 2);
        k.pt = kt_randint(0, k.KH - 1);
        k.pl = kt_randint(0, k.KW - 1);
        k.pb = kt_randint(0, k.KH - 1);
        k.pr = kt_randint(0, k.KW - 1);
        k.oph = kt_randint(0, k.sh - 1);
        k.opw = kt_randint(0, k.sw - 1);
        k.H = kt_randint(2, 7);
        k.W = kt_randint(2, 7);
        run_conv_case(&k, true, false);
    }
}

Test(kernels_conv, conv1d_vs_naive) {
    for (int t = 0; t < 10; t++) {
        conv_case k = {0};
        k.groups = kt_randint(1, 2);
        k.N = 1;
        k.H = 1;
        k.KH = 1;
        k.sh = k.dh = 1;
        k.C = k.groups * kt_randint(1, 3);
        k.O = k.groups * kt_randint(1, 3);
        k.KW = kt_randint(1, 5);
        k.sw = kt_randint(1, 3);
        k.dw = kt_randint(1, 2);
        k.pl = kt_randint(0, 2);
        k.pr = kt_randint(0, 2);
        k.W = kt_randint(k.dw * (k.KW - 1) + 1, 20);
        run_conv_case(&k, false, true);
    }
}

Test(kernels_conv, conv1d_transpose_vs_naive) {
    for (int t = 0; t < 10; t++) {
        conv_case k = {0};
        k.groups = kt_randint(1, 2);
        k.N = 1;
        k.H = 1;
        k.KH = 1;
        k.sh = k.dh = 1;
        k.C = k.groups * kt_randint(1, 3);
        k.O = k.groups * kt_randint(1, 3);
        k.KW = kt_randint(1, 5);
        k.sw = kt_randint(1, 3);
        k.dw = kt_randint(1, 2);
        k.pl = kt_randint(0, k.KW - 1);
        k.pr = kt_randint(0, k.KW - 1);
        k.opw = kt_randint(0, k.sw - 1);
        k.W = kt_randint(2, 12);
        run_conv_case(&k, true, true);
    }
}

Test(kernels_conv, pool1d_and_adaptive) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 1, 5), KVALS(1, 5, 2, 8, 3));
    rt_value o;
    rt_tensor *r = kt_ok("relax.nn.max_pool1d", 2, KV({"pool_size", KI(2)}, {"strides", KI(2)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 2));
    kt_assert_vals(r, 2, KVALS(5, 8));
    rt_value_clear(&o);
    r = kt_ok("relax.nn.avg_pool1d", 3, KV({"pool_size", KI(3)}, {"padding", KI(1, 1)}, {"count_include_pad", ir_attr_bool(false)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_close(r, KVALS(3, 8.0 / 3, 5, 13.0 / 3, 5.5), 5, 1e-6, 0);
    rt_value_clear(&o);
    r = kt_ok("relax.nn.adaptive_avg_pool1d", 1, KV({"output_size", KI(2)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 2));
    kt_assert_close(r, KVALS(8.0 / 3, 13.0 / 3), 2, 1e-6, 0); /* windows [0,3) and [2,5) */
    rt_value_clear(&o);
    rt_tensor *y = kt_tensor(KT_F32, KSHAPE(1, 1, 2, 3), KVALS(1, 9, 2, 4, 3, 7));
    r = kt_ok("relax.nn.adaptive_max_pool2d", 1, KV({"output_size", KI(1, 2)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 1, 2));
    kt_assert_vals(r, 2, KVALS(9, 9)); /* column windows [0,2) and [1,3) */
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(y);
}

Test(kernels_conv, conv_errors) {
    rt_tensor *x = kt_rand(KSHAPE(1, 3, 8, 8)), *w = kt_rand(KSHAPE(4, 2, 3, 3));
    rt_tensor *big = kt_rand(KSHAPE(4, 3, 9, 9)), *x3 = kt_rand(KSHAPE(3, 8, 8));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.conv2d", 0, NULL, KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "R.nn.conv2d") && strstr(d.msg, "(1, 3, 8, 8)") && strstr(d.msg, "layer_x"), "%s", d.msg);
    cr_assert_eq(kt_run("relax.nn.conv2d", 0, NULL, KARGS(kt_val(x), kt_val(big)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.conv2d", 0, NULL, KARGS(kt_val(x3), kt_val(big)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"groups", ir_attr_int(0)}), KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"data_layout", ir_attr_str(kt_ctx, "NCHW4c")}),
                        KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_UNSUPPORTED);
    cr_assert(strstr(d.msg, "NCHW4c"), "%s", d.msg);
    rt_tensor_release(x);
    rt_tensor_release(w);
    rt_tensor_release(big);
    rt_tensor_release(x3);
}

/* NHWC data with HWIO / OHWI weights gives the NCHW result transposed. */
Test(kernels_conv, conv2d_and_pool_other_layouts) {
    rt_tensor *x = kt_rand(KSHAPE(2, 3, 7, 6)), *w = kt_rand(KSHAPE(4, 3, 3, 2));
    rt_value ref, o;
    kt_kv base[] = {{"strides", KI(2, 1)}, {"padding", KI(1, 0, 1, 1)}};
    rt_tensor *r = kt_ok("relax.nn.conv2d", 2, base, KARGS(kt_val(x), kt_val(w)), 2, &ref);
    const int to_nhwc[4] = {0, 2, 3, 1}, to_hwio[4] = {2, 3, 1, 0}, to_ohwi[4] = {0, 2, 3, 1};
    rt_tensor *xh = rt_tensor_permute(x, to_nhwc), *wh = rt_tensor_permute(w, to_hwio);
    rt_tensor *wo = rt_tensor_permute(w, to_ohwi), *rh = rt_tensor_permute(r, to_nhwc);
    int64_t n = rt_tensor_numel(r);
    double *want = malloc(sizeof(double) * (size_t)n), *want_h = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        want[i] = rt_tensor_get_f64(r, i);
        want_h[i] = rt_tensor_get_f64(rh, i);
    }
    /* TVM stores out_layout = data_layout when none is given */
    kt_kv kv1[] = {base[0], base[1], {"data_layout", ir_attr_str(kt_ctx, "NHWC")}, {"kernel_layout", ir_attr_str(kt_ctx, "HWIO")},
                   {"out_layout", ir_attr_str(kt_ctx, "NHWC")}};
    rt_tensor *g = kt_ok("relax.nn.conv2d", 5, kv1, KARGS(kt_val(xh), kt_val(wh)), 2, &o);
    kt_assert_shape(g, 4, rh->dl.shape);
    kt_assert_close(g, want_h, n, 1e-5, 1e-6);
    rt_value_clear(&o);
    kt_kv kv2[] = {base[0], base[1], {"data_layout", ir_attr_str(kt_ctx, "NHWC")}, {"kernel_layout", ir_attr_str(kt_ctx, "OHWI")},
                   {"out_layout", ir_attr_str(kt_ctx, "NCHW")}};
    g = kt_ok("relax.nn.conv2d", 5, kv2, KARGS(kt_val(xh), kt_val(wo)), 2, &o);
    kt_assert_shape(g, 4, r->dl.shape);
    kt_assert_close(g, want, n, 1e-5, 1e-6);
    rt_value_clear(&o);
    /* max pool in NHWC equals the NCHW pool transposed */
    rt_value pref;
    rt_tensor *p = kt_ok("relax.nn.max_pool2d", 2, KV({"pool_size", KI(3, 2)}, {"strides", KI(2, 2)}), KARGS(kt_val(x)), 1, &pref);
    rt_tensor *ph = rt_tensor_permute(p, to_nhwc);
    g = kt_ok("relax.nn.max_pool2d", 4, KV({"pool_size", KI(3, 2)}, {"strides", KI(2, 2)}, {"layout", ir_attr_str(kt_ctx, "NHWC")},
                                           {"out_layout", ir_attr_str(kt_ctx, "NHWC")}),
              KARGS(kt_val(xh)), 1, &o);
    kt_assert_shape(g, 4, ph->dl.shape);
    for (int64_t i = 0; i < rt_tensor_numel(ph); i++) cr_assert_eq(rt_tensor_get_f64(g, i), rt_tensor_get_f64(ph, i));
    rt_value_clear(&o);
    free(want);
    free(want_h);
    rt_value_clear(&ref);
    rt_value_clear(&pref);
    rt_tensor_release(x);
    rt_tensor_release(w);
    rt_tensor_release(xh);
    rt_tensor_release(wh);
    rt_tensor_release(wo);
    rt_tensor_release(rh);
    rt_tensor_release(ph);
}

/* A PP-OCR-det-sized stack of convs must run in well under a second per layer. */
Test(kernels_conv, conv_speed_smoke) {
    rt_tensor *x = kt_rand(KSHAPE(1, 16, 160, 160)), *w = kt_rand(KSHAPE(32, 16, 3, 3));
    rt_value o;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kt_ok("relax.nn.conv2d", 1, KV({"padding", KI(1, 1, 1, 1)}), KARGS(kt_val(x), kt_val(w)), 2, &o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    cr_log_info("conv 1x16x160x160 * 32x16x3x3: %.1f ms (%.2f GFLOP/s)", ms, 2.0 * 32 * 16 * 9 * 160 * 160 / ms / 1e6);
    cr_assert_lt(ms, 2000.0);
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(w);
}

/* ---- pooling ---- */

static void naive_pool(const float *x, int64_t NC, int64_t H, int64_t W, const int64_t *k,
                       const int64_t *s, const int64_t *dil, const int64_t *p, bool is_max,
                       bool incl, double *y, int64_t OH, int64_t OW) {
    for (int64_t c = 0; c < NC; c++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double acc = is_max ? -INFINITY : 0;
                int64_t cnt = 0, cntp = 0;
                for (int64_t i = 0; i < k[0]; i++)
                    for (int64_t j = 0; j < k[1]; j++) {
                        int64_t ih = oh * s[0] - p[0] + i * dil[0], iw = ow * s[1] - p[1] + j * dil[1];
                        if (ih < H + p[2] && iw < W + p[3]) cntp++;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        double v = x[(c * H + ih) * W + iw];
                        acc = is_max ? fmax(acc, v) : acc + v;
                        cnt++;
                    }
                if (!is_max) acc /= (double)(incl ? cntp : cnt);
                y[(c * OH + oh) * OW + ow] = acc;
            }
}

Test(kernels_conv, pool2d_random_vs_naive) {
    for (int t = 0; t < 40; t++) {
        int64_t k[2] = {kt_randint(1, 3), kt_randint(1, 3)}, s[2] = {kt_randint(1, 3), kt_randint(1, 3)};
        int64_t dil[2] = {kt_randint(1, 2), kt_randint(1, 2)};
        int64_t p[4] = {kt_randint(0, k[0] / 2), kt_randint(0, k[1] / 2), kt_randint(0, k[0] / 2), kt_randint(0, k[1] / 2)};
        bool ceil_mode = t % 3 == 1, incl = t % 4 == 2, is_max = t % 2 == 0;
        int64_t H = kt_randint(dil[0] * (k[0] - 1) + 1, 12), W = kt_randint(dil[1] * (k[1] - 1) + 1, 12);
        rt_tensor *x = kt_rand(KSHAPE(2, 3, H, W));
        int64_t OH, OW;
        {
            int64_t sp = H + p[0] + p[2] - dil[0] * (k[0] - 1) - 1, sq = W + p[1] + p[3] - dil[1] * (k[1] - 1) - 1;
            OH = (ceil_mode ? (sp + s[0] - 1) / s[0] : sp / s[0]) + 1;
            OW = (ceil_mode ? (sq + s[1] - 1) / s[1] : sq / s[1]) + 1;
            if (ceil_mode && (OH - 1) * s[0] >= H + p[0]) OH--;
            if (ceil_mode && (OW - 1) * s[1] >= W + p[1]) OW--;
        }
        kt_kv kv[] = {{"pool_size", KI(k[0], k[1])}, {"strides", KI(s[0], s[1])},
                      {"dilation", KI(dil[0], dil[1])}, {"padding", KI(p[0], p[1], p[2], p[3])},
                      {"ceil_mode", ir_attr_bool(ceil_mode)}, {"count_include_pad", ir_attr_bool(incl)}};
        rt_value o;
        rt_tensor *r = kt_ok(is_max ? "relax.nn.max_pool2d" : "relax.nn.avg_pool2d", 6, kv, KARGS(kt_val(x)), 1, &o);
        kt_assert_shape(r, KSHAPE(2, 3, OH, OW));
        double *want = malloc(sizeof(double) * (size_t)(6 * OH * OW));
        naive_pool(x->dl.data, 6, H, W, k, s, dil, p, is_max, incl, want, OH, OW);
        kt_assert_close(r, want, 6 * OH * OW, 1e-5, 1e-6);
        free(want);
        rt_value_clear(&o);
        rt_tensor_release(x);
    }
}

Test(kernels_conv, pool_hand_cases) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 1, 3, 3), KVALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    rt_value o;
    /* 2x2 stride 2 ceil_mode: windows {1,2,4,5} {3,6} {7,8} {9} */
    rt_tensor *r = kt_ok("relax.nn.max_pool2d", 3, KV({"pool_size", KI(2, 2)}, {"strides", KI(2, 2)}, {"ceil_mode", ir_attr_bool(true)}),
                         KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 2, 2));
    kt_assert_vals(r, 4, KVALS(5, 6, 8, 9));
    rt_value_clear(&o);
    r = kt_ok("relax.nn.avg_pool2d", 3, KV({"pool_size", KI(2, 2)}, {"strides", KI(2, 2)}, {"ceil_mode", ir_attr_bool(true)}),
              KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 4, KVALS(3, 4.5, 7.5, 9));
    rt_value_clear(&o);
    /* 3x3 pad 1, count_include_pad: corner = (1+2+4+5)/9 */
    r = kt_ok("relax.nn.avg_pool2d", 3, KV({"pool_size", KI(3, 3)}, {"padding", KI(1, 1, 1, 1)}, {"count_include_pad", ir_attr_bool(true)}),
              KARGS(kt_val(x)), 1, &o);
    kt_assert_close(r, KVALS(12.0 / 9, 21.0 / 9, 16.0 / 9, 27.0 / 9, 5, 33.0 / 9, 24.0 / 9, 39.0 / 9, 28.0 / 9), 9, 1e-6, 0);
    rt_value_clear(&o);
    r = kt_ok("relax.nn.adaptive_avg_pool2d", 1, KV({"output_size", KI(1, 1)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 1, 1));
    kt_assert_vals(r, 1, KVALS(5));
    rt_value_clear(&o);
    r = kt_ok("relax.nn.adaptive_avg_pool2d", 1, KV({"output_size", KI(2, 2)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 4, KVALS(3, 4, 6, 7)); /* windows [0,2)x[0,2), [0,2)x[1,3), ... */
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.max_pool2d", 1, KV({"pool_size", KI(5, 5)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor *u = kt_tensor(KT_U8, KSHAPE(1, 1, 2, 2), KVALS(7, 255, 0, 3));
    r = kt_ok("relax.nn.max_pool2d", 1, KV({"pool_size", KI(2, 2)}), KARGS(kt_val(u)), 1, &o);
    cr_assert_eq(r->dl.dtype.code, kDLUInt);
    kt_assert_vals(r, 1, KVALS(255));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.nn.avg_pool2d", 1, KV({"pool_size", KI(2, 2)}), KARGS(kt_val(u)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(u);
    rt_tensor_release(x);
}

/* ---- resize2d ---- */

Test(kernels_conv, resize2d_onnx_examples) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 1, 2, 2), KVALS(1, 2, 3, 4));
    rt_value o;
    /* ONNX resize_upsample_scales_linear (half_pixel) */
    rt_tensor *r = kt_ok("relax.image.resize2d", 1, KV({"method", ir_attr_str(kt_ctx, "linear")}),
                         KARGS(kt_val(x), kt_shape(KSHAPE(4, 4))), 2, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 4, 4));
    kt_assert_close(r, KVALS(1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4), 16, 1e-6, 1e-6);
    rt_value_clear(&o);
    /* ONNX resize_upsample_scales_nearest (half_pixel, round_prefer_floor), 2x3 */
    r = kt_ok("relax.image.resize2d", 2, KV({"method", ir_attr_str(kt_ctx, "nearest_neighbor")}, {"rounding_method", ir_attr_str(kt_ctx, "round_prefer_floor")}),
              KARGS(kt_val(x), kt_shape(KSHAPE(4, 6))), 2, &o);
    kt_assert_vals(r, 24, KVALS(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4));
    rt_value_clear(&o);
    /* align_corners linear: corners preserved, midpoint exact */
    r = kt_ok("relax.image.resize2d", 2, KV({"method", ir_attr_str(kt_ctx, "linear")}, {"coordinate_transformation_mode", ir_attr_str(kt_ctx, "align_corners")}),
              KARGS(kt_val(x), kt_shape(KSHAPE(3, 3))), 2, &o);
    kt_assert_close(r, KVALS(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4), 9, 1e-6, 1e-6);
    rt_value_clear(&o);
    rt_tensor_release(x);
    /* ONNX resize_upsample_scales_cubic: 4x4 (1..16) x2, alpha -0.75, half_pixel; first row */
    double v16[16];
    for (int i = 0; i < 16; i++) v16[i] = i + 1;
    rt_tensor *x4 = kt_tensor(KT_F32, KSHAPE(1, 1, 4, 4), v16);
    r = kt_ok("relax.image.resize2d", 2, KV({"method", ir_attr_str(kt_ctx, "cubic")}, {"cubic_alpha", ir_attr_float(-0.75)}),
              KARGS(kt_val(x4), kt_shape(KSHAPE(8, 8))), 2, &o);
    kt_assert_close_prefix(r, KVALS(0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375), 8, 1e-5, 1e-5);
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.image.resize2d", 1, KV({"method", ir_attr_str(kt_ctx, "area")}),
                        KARGS(kt_val(x4), kt_shape(KSHAPE(8, 8))), 2, &o, &d), GR_ERR_UNSUPPORTED);
    rt_tensor_release(x4);
}

/* Linear resize vs a separable reference written directly from the definition. */
Test(kernels_conv, resize2d_linear_random_vs_naive) {
    static const char *const modes[] = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"};
    for (int t = 0; t < 12; t++) {
        int64_t H = kt_randint(1, 7), W = kt_randint(1, 7), OH = kt_randint(1, 12), OW = kt_randint(1, 12);
        int m = t % 4;
        rt_tensor *x = kt_rand(KSHAPE(1, 2, H, W));
        rt_value o;
        rt_tensor *r = kt_ok("relax.image.resize2d", 2,
                             KV({"method", ir_attr_str(kt_ctx, "linear")}, {"coordinate_transformation_mode", ir_attr_str(kt_ctx, modes[m])}),
                             KARGS(kt_val(x), kt_shape(KSHAPE(OH, OW))), 2, &o);
        double *want = malloc(sizeof(double) * (size_t)(2 * OH * OW));
        for (int c = 0; c < 2; c++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    double cy, cx;
                    double sy = (double)H / OH, sx = (double)W / OW;
                    if (m == 0) { cy = (i + 0.5) * sy - 0.5; cx = (j + 0.5) * sx - 0.5; }
                    else if (m == 1) { cy = OH > 1 ? i * (H - 1.0) / (OH - 1) : 0; cx = OW > 1 ? j * (W - 1.0) / (OW - 1) : 0; }
                    else if (m == 2) { cy = i * sy; cx = j * sx; }
                    else { cy = OH > 1 ? (i + 0.5) * sy - 0.5 : 0; cx = OW > 1 ? (j + 0.5) * sx - 0.5 : 0; }
                    cy = fmin(fmax(cy, 0), H - 1);
                    cx = fmin(fmax(cx, 0), W - 1);
                    int64_t y0 = (int64_t)floor(cy), x0 = (int64_t)floor(cx);
                    int64_t y1 = y0 + 1 < H ? y0 + 1 : H - 1, x1 = x0 + 1 < W ? x0 + 1 : W - 1;
                    double fy = cy - y0, fx = cx - x0;
                    const float *p = (const float *)x->dl.data + c * H * W;
                    want[(c * OH + i) * OW + j] = (p[y0 * W + x0] * (1 - fx) + p[y0 * W + x1] * fx) * (1 - fy) +
                                                  (p[y1 * W + x0] * (1 - fx) + p[y1 * W + x1] * fx) * fy;
                }
        kt_assert_close(r, want, 2 * OH * OW, 1e-5, 1e-6);
        free(want);
        rt_value_clear(&o);
        rt_tensor_release(x);
    }
}
