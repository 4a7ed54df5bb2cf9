/* Criterion checks over base/compare.h: every test that compares tensors goes through these, so
 * one rule holds everywhere (|got - want| <= atol + atol_scale * max|want| + rtol * |want|; NaN
 * never matches, an infinity only the same infinity). On a mismatch the message names the
 * caller's printf-style label, how many values are off, and the worst one. Each returns the
 * result (max_abs for a test's log line). */
#ifndef GRAFT_TESTS_COMPARE_UTIL_H
#define GRAFT_TESTS_COMPARE_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "base/compare.h"
#include "runtime/value.h"

static inline void tc_report(const gr_cmp_result *r, const gr_cmp_opts *o, double got, double want, const char *fmt,
                             va_list ap) {
    char what[256];
    vsnprintf(what, sizeof what, fmt, ap);
    cr_expect(r->bad == 0,
              "%s: %lld of %lld values off (atol %g, rtol %g); worst at flat index %lld: got %.9g, expected %.9g",
              what, (long long)r->bad, (long long)r->numel, r->atol, o->rtol, (long long)r->worst, got, want);
}

__attribute__((format(printf, 4, 5))) static inline gr_cmp_result tc_expect_tensor(const rt_tensor *got,
                                                                                   const rt_tensor *want,
                                                                                   gr_cmp_opts o, const char *fmt,
                                                                                   ...) {
    gr_cmp_result r;
    gr_cmp_tensor(got, want, &o, &r);
    bool shapes = rt_tensor_same_shape(got, want);
    va_list ap;
    va_start(ap, fmt);
    tc_report(&r, &o, r.bad && shapes ? rt_tensor_get_f64(got, r.worst) : NAN,
              r.bad && shapes ? rt_tensor_get_f64(want, r.worst) : NAN, fmt, ap);
    va_end(ap);
    if (!shapes) cr_expect(shapes, "the shapes differ (ndim %d vs %d)", got->dl.ndim, want->dl.ndim);
    return r;
}

__attribute__((format(printf, 5, 6))) static inline gr_cmp_result tc_expect_f32(const float *got, const float *want,
                                                                                int64_t n, gr_cmp_opts o,
                                                                                const char *fmt, ...) {
    gr_cmp_result r;
    gr_cmp_f32(got, want, n, &o, &r);
    va_list ap;
    va_start(ap, fmt);
    tc_report(&r, &o, r.bad ? got[r.worst] : NAN, r.bad ? want[r.worst] : NAN, fmt, ap);
    va_end(ap);
    return r;
}

/* n values of dtype gt at got against n of dtype wt at want (flat views: a kernel test's
 * expected values are a plain double array). */
static inline gr_cmp_result tc_expect_flat(DLDataType gt, const void *got, DLDataType wt, const void *want, int64_t n,
                                           gr_cmp_opts o, const char *fmt, va_list ap) {
    rt_tensor *g = rt_tensor_wrap(gt, 1, &n, (void *)got), *w = rt_tensor_wrap(wt, 1, &n, (void *)want);
    cr_assert(g && w);
    gr_cmp_result r;
    gr_cmp_tensor(g, w, &o, &r);
    tc_report(&r, &o, r.bad ? rt_tensor_get_f64(g, r.worst) : NAN, r.bad ? rt_tensor_get_f64(w, r.worst) : NAN, fmt,
              ap);
    rt_tensor_release(g);
    rt_tensor_release(w);
    return r;
}

/* The first n values of got (any dtype) against n doubles. */
__attribute__((format(printf, 5, 6))) static inline gr_cmp_result tc_expect_f64(const rt_tensor *got,
                                                                                const double *want, int64_t n,
                                                                                gr_cmp_opts o, const char *fmt,
                                                                                ...) {
    cr_assert_geq(rt_tensor_numel(got), n);
    va_list ap;
    va_start(ap, fmt);
    gr_cmp_result r = tc_expect_flat(got->dl.dtype, rt_tensor_data(got), (DLDataType){kDLFloat, 64, 1}, want, n, o,
                                     fmt, ap);
    va_end(ap);
    return r;
}

/* n floats against n doubles. */
__attribute__((format(printf, 5, 6))) static inline gr_cmp_result tc_expect_f32_f64(const float *got,
                                                                                    const double *want, int64_t n,
                                                                                    gr_cmp_opts o, const char *fmt,
                                                                                    ...) {
    va_list ap;
    va_start(ap, fmt);
    gr_cmp_result r = tc_expect_flat((DLDataType){kDLFloat, 32, 1}, got, (DLDataType){kDLFloat, 64, 1}, want, n, o,
                                     fmt, ap);
    va_end(ap);
    return r;
}

/* A value (a tensor or a tuple of them, compared item by item); the result is summed over the
 * items: bad and numel added, max_abs and max_rel the largest. */
static inline gr_cmp_result tc_cmp_value(const rt_value *got, const rt_value *want, const gr_cmp_opts *o) {
    gr_cmp_result r = {.first_bad = -1, .worst = -1};
    cr_assert_eq(got->kind, want->kind);
    if (want->kind == RT_VAL_TENSOR) {
        gr_cmp_tensor(got->u.t, want->u.t, o, &r);
        return r;
    }
    cr_assert_eq(want->kind, RT_VAL_TUPLE);
    cr_assert_eq(got->u.tuple.n, want->u.tuple.n);
    for (uint32_t i = 0; i < want->u.tuple.n; i++) {
        gr_cmp_result e = tc_cmp_value(&got->u.tuple.items[i], &want->u.tuple.items[i], o);
        r.numel += e.numel;
        r.bad += e.bad;
        r.max_abs = fmax(r.max_abs, e.max_abs);
        r.max_rel = fmax(r.max_rel, e.max_rel);
    }
    return r;
}

__attribute__((format(printf, 4, 5))) static inline gr_cmp_result tc_expect_value(const rt_value *got,
                                                                                  const rt_value *want,
                                                                                  gr_cmp_opts o, const char *fmt,
                                                                                  ...) {
    gr_cmp_result r = tc_cmp_value(got, want, &o);
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cr_expect(r.bad == 0, "%s: %lld of %lld values off (atol %g, rtol %g), max abs diff %g", what, (long long)r.bad,
              (long long)r.numel, o.atol, o.rtol, r.max_abs);
    return r;
}

#endif
