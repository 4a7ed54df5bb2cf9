/* Comparing a tensor with a reference, element by element: the one rule every test, tool
 * (graft compare, graft diff, graft conformance) and benchmark uses.
 *
 * A value g matches its reference w when |g - w| <= atol + rtol * |w|, where
 * atol = opts.atol + opts.atol_scale * max|w| (max over the finite reference values: float32
 * sums taken in another order differ by ulps of their largest terms, not of each result).
 * Values that are not finite:
 *   - NaN never matches: not a number, not an infinity, not another NaN. A path that outputs
 *     NaN is wrong even when the path it is compared with outputs NaN too. The one exception is
 *     opts.nan_expected, for a reference that states NaN as the answer (ONNX test data of 0/0,
 *     log(-1)): there a NaN matches a NaN, and nothing else does.
 *   - An infinity matches only the same infinity (+Inf with +Inf); +Inf against -Inf or a
 *     finite number is a mismatch, and so is a finite value where the reference is infinite.
 * So a NaN or infinity where the reference is finite is always a mismatch. */
#ifndef GRAFT_BASE_COMPARE_H
#define GRAFT_BASE_COMPARE_H

#include "base/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "base/tensor.h"

typedef struct gr_cmp_opts {
    double atol, rtol;     /* >= 0 */
    double atol_scale;     /* adds atol_scale * max|reference| to atol */
    bool nan_expected;     /* a NaN in the reference is the answer: NaN matches NaN there */
} gr_cmp_opts;

typedef struct gr_cmp_result {
    int64_t numel;         /* values compared */
    int64_t bad;           /* values that do not match */
    int64_t first_bad;     /* flat index of the first mismatch; -1 when none */
    int64_t worst;         /* flat index of the mismatch furthest beyond its bound (a
                            * non-finite mismatch is infinitely far); -1 when none */
    double max_abs;        /* largest |g - w| over the values; INFINITY when a non-finite
                            * value mismatches; 0 when none */
    double max_rel;        /* largest |g - w| / |w| where |w| >= the effective atol (below
                            * it the absolute bound rules); INFINITY as max_abs */
    double atol;           /* the effective atol (opts.atol + opts.atol_scale * max|w|) */
    double max_ref;        /* max|w| over the finite reference values */
} gr_cmp_result;

/* Does one value match its reference (atol already effective)? */
GR_API bool gr_cmp_value(double got, double want, double atol, double rtol, bool nan_expected);
/* Compares n float32 values; true when all match. r may be NULL. */
GR_API bool gr_cmp_f32(const float *got, const float *want, int64_t n, const gr_cmp_opts *o, gr_cmp_result *r);
/* Compares two tensors of any dtypes (read as double). Shapes that differ are a mismatch of
 * every value (bad = numel of want or 1 when empty, first_bad = worst = 0, max_abs = INFINITY). */
GR_API bool gr_cmp_tensor(const rt_tensor *got, const rt_tensor *want, const gr_cmp_opts *o, gr_cmp_result *r);

#endif
