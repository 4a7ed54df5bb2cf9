/* base/compare.h: the one comparison rule. NaN never matches (unless the reference states NaN
 * as the answer, nan_expected), an infinity matches only the same infinity, and a NaN or
 * infinity where the reference is finite is a mismatch; `graft compare` follows it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/compare.h"
#include "runtime/npy.h"
#include "tests/graft_cli.h"

static const gr_cmp_opts TIGHT = {.atol = 1e-5, .rtol = 1e-3};

Test(compare, non_finite_values) {
    static const struct {
        double got, want;
        bool match, match_nan_expected;
        const char *what;
    } cases[] = {
        {NAN, 1.0, false, false, "NaN where the reference is a number"},
        {1.0, NAN, false, false, "a number where the reference is NaN"},
        {NAN, NAN, false, true, "NaN against NaN (only an expected NaN matches)"},
        {-NAN, NAN, false, true, "NaNs of either sign"},
        {INFINITY, -INFINITY, false, false, "+Inf against -Inf"},
        {-INFINITY, INFINITY, false, false, "-Inf against +Inf"},
        {INFINITY, INFINITY, true, true, "+Inf against +Inf"},
        {-INFINITY, -INFINITY, true, true, "-Inf against -Inf"},
        {INFINITY, 1e30, false, false, "Inf where the reference is finite"},
        {1e30, INFINITY, false, false, "a finite value where the reference is Inf"},
        {NAN, INFINITY, false, false, "NaN where the reference is Inf"},
        {INFINITY, NAN, false, false, "Inf where the reference is NaN"},
        {1.0, 1.0005, true, true, "within rtol"},
        {1.0, 1.01, false, false, "beyond rtol"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(gr_cmp_value(cases[i].got, cases[i].want, 1e-5, 1e-3, false), cases[i].match, "%s",
                     cases[i].what);
        cr_expect_eq(gr_cmp_value(cases[i].got, cases[i].want, 1e-5, 1e-3, true), cases[i].match_nan_expected,
                     "%s (nan_expected)", cases[i].what);
        /* the same through the array comparison, with a huge tolerance that a NaN must not slip under */
        float g = (float)cases[i].got, w = (float)cases[i].want;
        gr_cmp_opts loose = {.atol = 1e30, .rtol = 1e30};
        bool finite_pair = isfinite(g) && isfinite(w);
        cr_expect_eq(gr_cmp_f32(&g, &w, 1, &loose, NULL), finite_pair || (cases[i].match && g == w), "%s (f32)",
                     cases[i].what);
    }
}

/* What the three tests that used `m = fmax(m, fabs(a - b))` (test_byoc.c, test_byoc_models.c,
 * test_qdq_cnn.c) did with a NaN output: fmax drops the NaN, the max diff stays 0, the test
 * passed. The helper counts it. */
Test(compare, nan_output_fails_where_fmax_passed) {
    const float want[4] = {1, 2, 3, 4}, got[4] = {1, NAN, 3, 4};
    double old = 0;
    for (int i = 0; i < 4; i++) old = fmax(old, fabs((double)got[i] - (double)want[i]));
    cr_expect_eq(old, 0.0, "the old idiom reported %g", old);
    gr_cmp_result r;
    cr_expect_not(gr_cmp_f32(got, want, 4, &TIGHT, &r));
    cr_expect_eq(r.bad, 1);
    cr_expect_eq(r.first_bad, 1);
    cr_expect_eq(r.worst, 1);
    cr_expect(isinf(r.max_abs) && isinf(r.max_rel), "max_abs %g max_rel %g", r.max_abs, r.max_rel);
    /* both paths NaN: still wrong */
    const float both[4] = {1, NAN, 3, 4};
    cr_expect_not(gr_cmp_f32(got, both, 4, &TIGHT, &r));
    cr_expect_eq(r.bad, 1);
}

Test(compare, counts_first_and_worst) {
    const float want[6] = {0, 10, 20, 30, 40, 50}, got[6] = {0, 10.5f, 20, 31, 40, 50.001f};
    gr_cmp_result r;
    cr_expect_not(gr_cmp_f32(got, want, 6, &TIGHT, &r));
    cr_expect_eq(r.numel, 6);
    cr_expect_eq(r.bad, 2, "bad %lld", (long long)r.bad);
    cr_expect_eq(r.first_bad, 1);
    cr_expect_eq(r.worst, 3);
    cr_expect_float_eq(r.max_abs, 1.0, 1e-9);
    cr_expect_float_eq(r.max_rel, 0.05, 1e-9);
    cr_expect_float_eq(r.max_ref, 50.0, 0);
    /* atol_scale: an absolute bound of 0.03 * max|want| = 1.5 admits both */
    gr_cmp_opts scaled = {.atol_scale = 0.03};
    cr_expect(gr_cmp_f32(got, want, 6, &scaled, &r));
    cr_expect_float_eq(r.atol, 1.5, 1e-12);
    /* an infinity in the reference does not blow the scaled atol up */
    const float winf[2] = {INFINITY, 1}, ginf[2] = {INFINITY, 1.1f};
    cr_expect_not(gr_cmp_f32(ginf, winf, 2, &scaled, &r));
    cr_expect_float_eq(r.atol, 0.03, 1e-9);
}

Test(compare, tensors_of_other_dtypes_and_shapes) {
    int64_t s4[1] = {4}, s22[2] = {2, 2};
    rt_tensor *a = rt_tensor_new((DLDataType){kDLFloat, 64, 1}, 1, s4);
    rt_tensor *b = rt_tensor_new((DLDataType){kDLFloat, 16, 1}, 1, s4);
    rt_tensor *c = rt_tensor_new((DLDataType){kDLFloat, 64, 1}, 2, s22);
    for (int64_t i = 0; i < 4; i++) {
        rt_tensor_set_f64(a, i, (double)i);
        rt_tensor_set_f64(b, i, (double)i);
    }
    gr_cmp_result r;
    cr_expect(gr_cmp_tensor(a, b, &TIGHT, &r));
    rt_tensor_set_f64(a, 2, NAN);
    cr_expect_not(gr_cmp_tensor(a, b, &TIGHT, &r));
    cr_expect_eq(r.first_bad, 2);
    rt_tensor_set_f64(b, 2, NAN);
    cr_expect_not(gr_cmp_tensor(a, b, &TIGHT, &r), "NaN against NaN");
    gr_cmp_opts expected = TIGHT;
    expected.nan_expected = true;
    cr_expect(gr_cmp_tensor(a, b, &expected, &r), "NaN the reference expects");
    rt_tensor_set_f64(a, 2, 2.0);
    cr_expect_not(gr_cmp_tensor(a, b, &expected, &r), "a number where NaN is expected");
    /* same values, other shape */
    cr_expect_not(gr_cmp_tensor(c, a, &TIGHT, &r));
    cr_expect_eq(r.bad, 4);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(c);
}

/* `graft compare` goes through the helper: a NaN output fails it (exit 1), also against NaN. */
Test(compare, cli_fails_on_nan) {
    char dir[] = "/tmp/graft_compare_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int64_t s[1] = {3};
    rt_tensor *ref = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, 1, s);
    rt_tensor *out = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, 1, s);
    float *pr = rt_tensor_data(ref), *po = rt_tensor_data(out);
    static const struct {
        float out, ref;
        int rc;
    } cases[] = {{1, 1, 0}, {NAN, 1, 1}, {1, NAN, 1}, {NAN, NAN, 1}, {INFINITY, -INFINITY, 1}, {INFINITY, INFINITY, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pr[0] = pr[2] = 0.5f;
        po[0] = po[2] = 0.5f;
        po[1] = cases[i].out;
        pr[1] = cases[i].ref;
        char a[64], b[64], cmd[PATH_MAX + 256];
        gr_diag d;
        gr_diag_clear(&d);
        snprintf(a, sizeof a, "%s/out.npy", dir);
        snprintf(b, sizeof b, "%s/ref.npy", dir);
        cr_assert_eq(rt_npy_save(a, out, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_npy_save(b, ref, &d), GR_OK, "%s", d.msg);
        snprintf(cmd, sizeof cmd, "'%s' compare %s %s > /dev/null", graft(), a, b);
        int st = system(cmd);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == cases[i].rc, "graft compare of %g against %g: status %d, want %d",
                  cases[i].out, cases[i].ref, WIFEXITED(st) ? WEXITSTATUS(st) : -1, cases[i].rc);
    }
    rt_tensor_release(ref);
    rt_tensor_release(out);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    cr_expect_eq(system(rm), 0);
}
