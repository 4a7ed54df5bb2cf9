/* Element-wise comparison with a reference (the rule is in compare.h). */
#include "base/compare.h"

#include <math.h>

bool gr_cmp_value(double got, double want, double atol, double rtol, bool nan_expected) {
    if (isnan(got) || isnan(want)) return nan_expected && isnan(got) && isnan(want);
    if (isinf(got) || isinf(want)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* One reader for both element types, so the rule is written once. */
typedef struct cmp_src {
    const float *f32;          /* fast path; else the tensor */
    const rt_tensor *t;
} cmp_src;

static inline double src_get(const cmp_src *s, int64_t i) {
    return s->f32 ? (double)s->f32[i] : rt_tensor_get_f64(s->t, i);
}

static bool compare(const cmp_src *got, const cmp_src *want, int64_t n, const gr_cmp_opts *o, gr_cmp_result *out) {
    gr_cmp_result r = {.numel = n, .first_bad = -1, .worst = -1};
    for (int64_t i = 0; i < n; i++) {
        double w = src_get(want, i);
        if (isfinite(w) && fabs(w) > r.max_ref) r.max_ref = fabs(w);
    }
    r.atol = o->atol + o->atol_scale * r.max_ref;
    double worst_excess = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double g = src_get(got, i), w = src_get(want, i);
        bool ok = gr_cmp_value(g, w, r.atol, o->rtol, o->nan_expected);
        /* a matching non-finite pair is no error; any other non-finite one is unbounded */
        double err = isfinite(g) && isfinite(w) ? fabs(g - w) : ok ? 0 : INFINITY;
        double rel = isinf(err) ? INFINITY : fabs(w) >= r.atol && w != 0 ? err / fabs(w) : 0;
        if (err > r.max_abs) r.max_abs = err;
        if (rel > r.max_rel) r.max_rel = rel;
        if (ok) continue;
        double excess = isinf(err) ? INFINITY : err - (r.atol + o->rtol * fabs(w));
        if (r.first_bad < 0) r.first_bad = i;
        if (excess > worst_excess) {
            worst_excess = excess;
            r.worst = i;
        }
        r.bad++;
    }
    if (out) *out = r;
    return r.bad == 0;
}

bool gr_cmp_f32(const float *got, const float *want, int64_t n, const gr_cmp_opts *o, gr_cmp_result *r) {
    cmp_src g = {.f32 = got}, w = {.f32 = want};
    return compare(&g, &w, n, o, r);
}

bool gr_cmp_tensor(const rt_tensor *got, const rt_tensor *want, const gr_cmp_opts *o, gr_cmp_result *r) {
    if (!rt_tensor_same_shape(got, want)) {
        int64_t n = rt_tensor_numel(want);
        if (r)
            *r = (gr_cmp_result){.numel = n, .bad = n ? n : 1, .first_bad = 0, .worst = 0, .max_abs = INFINITY,
                                 .max_rel = INFINITY, .atol = o->atol};
        return false;
    }
    bool f32 = got->dl.dtype.code == kDLFloat && got->dl.dtype.bits == 32 && want->dl.dtype.code == kDLFloat &&
               want->dl.dtype.bits == 32;
    cmp_src g = {.f32 = f32 ? rt_tensor_data(got) : NULL, .t = got};
    cmp_src w = {.f32 = f32 ? rt_tensor_data(want) : NULL, .t = want};
    return compare(&g, &w, rt_tensor_numel(want), o, r);
}
