/* Reductions: sum, mean, prod, max, min, variance, std (axis None = all, keepdims), argmax,
 * argmin, cumsum, cumprod. Floats accumulate in double, integers in int64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

enum { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_VAR, R_STD };

typedef struct red_plan {
    int nd;
    int64_t shape[RT_MAX_NDIM];
    int64_t ostride[RT_MAX_NDIM];   /* output stride per input dim, 0 on reduced dims */
    int64_t out_n, red_n;
    int ond;
    int64_t oshape[RT_MAX_NDIM];
} red_plan;

/* Reads axis (None, int or list) and keepdims into a plan. */
static gr_status red_plan_init(const rt_kernel_call *c, const rt_tensor *x, red_plan *p,
                               gr_diag *d) {
    int nd = x->dl.ndim;
    bool red[RT_MAX_NDIM] = {0};
    int64_t ax[RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "axis", ax, RT_MAX_NDIM);
    if (n < 0) {
        for (int i = 0; i < nd; i++) red[i] = true;
    } else {
        if (n > nd) return rt_kerr(c, d, GR_ERR_INVALID, "too many axes for %s", RT_SHAPE_STR(x));
        for (int i = 0; i < n; i++) {
            int64_t a = ax[i];
            if (!rt_norm_axis(&a, nd) || red[a])
                return rt_kerr(c, d, GR_ERR_INVALID, "axis %lld invalid for %s",
                               (long long)ax[i], RT_SHAPE_STR(x));
            red[a] = true;
        }
    }
    bool keep = ir_attrs_get_bool(c->attrs, "keepdims", false);
    p->nd = nd;
    p->ond = 0;
    p->red_n = 1;
    for (int i = 0; i < nd; i++) {
        p->shape[i] = x->dl.shape[i];
        if (red[i]) {
            p->red_n *= x->dl.shape[i];
            if (keep) p->oshape[p->ond++] = 1;
        } else {
            p->oshape[p->ond++] = x->dl.shape[i];
        }
    }
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        p->ostride[i] = red[i] ? 0 : s;
        if (!red[i]) s *= x->dl.shape[i];
    }
    p->out_n = s;
    return GR_OK;
}

/* Visits every input element with its output offset. */
#define RED_LOOP(p, BODY)                                                               \
    do {                                                                                \
        int64_t idx_[RT_MAX_NDIM] = {0}, oo_ = 0, total_ = rt_numel((p)->nd, (p)->shape); \
        for (int64_t ii_ = 0; ii_ < total_; ii_++) {                                    \
            int64_t io = ii_, oo = oo_;                                                 \
            (void)io; (void)oo;                                                         \
            BODY;                                                                       \
            for (int k_ = (p)->nd - 1; k_ >= 0; k_--) {                                 \
                oo_ += (p)->ostride[k_];                                                \
                if (++idx_[k_] < (p)->shape[k_]) break;                                 \
                oo_ -= (p)->ostride[k_] * idx_[k_];                                     \
                idx_[k_] = 0;                                                           \
            }                                                                           \
        }                                                                               \
    } while (0)

static gr_status run_reduce(const rt_kernel_call *c, rt_value *out, gr_diag *d, int kind) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    red_plan p;
    if ((st = red_plan_init(c, x, &p, d))) return st;
    if ((kind == R_MAX || kind == R_MIN) && p.red_n == 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "reduction over an empty axis of %s", RT_SHAPE_STR(x));
    DLDataType dt = x->dl.dtype;
    bool is_f = rt_is_floatish(dt) || kind == R_VAR || kind == R_STD;
    rt_tensor *o;
    if ((st = rt_out_new(c, dt, p.ond, p.oshape, &o, d))) return st;
    if (is_f) {
        double *acc = malloc(sizeof(double) * (size_t)(p.out_n ? p.out_n : 1));
        double *mu = NULL;
        if (!acc) goto nomem;
        double init = kind == R_PROD ? 1.0 : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0.0;
        for (int64_t i = 0; i < p.out_n; i++) acc[i] = init;
        const float *xf = rt_is_f32(dt) ? x->dl.data : NULL;
#define XV(i) (xf ? (double)xf[i] : rt_tensor_get_f64(x, i))
        if (kind == R_SUM || kind == R_MEAN || kind == R_VAR || kind == R_STD) {
            RED_LOOP(&p, acc[oo] += XV(io));
        } else if (kind == R_PROD) {
            RED_LOOP(&p, acc[oo] *= XV(io));
        } else if (kind == R_MAX) {
            RED_LOOP(&p, { double v = XV(io); if (v > acc[oo] || v != v) acc[oo] = v; });
        } else {
            RED_LOOP(&p, { double v = XV(io); if (v < acc[oo] || v != v) acc[oo] = v; });
        }
        if (kind == R_MEAN || kind == R_VAR || kind == R_STD)
            for (int64_t i = 0; i < p.out_n; i++) acc[i] /= (double)p.red_n;
        if (kind == R_VAR || kind == R_STD) {
            mu = acc;
            acc = calloc((size_t)(p.out_n ? p.out_n : 1), sizeof(double));
            if (!acc) {
                free(mu);
                goto nomem;
            }
            RED_LOOP(&p, { double v = XV(io) - mu[oo]; acc[oo] += v * v; });
            for (int64_t i = 0; i < p.out_n; i++) {
                acc[i] /= (double)p.red_n;
                if (kind == R_STD) acc[i] = sqrt(acc[i]);
            }
        }
#undef XV
        for (int64_t i = 0; i < p.out_n; i++) rt_tensor_set_f64(o, i, acc[i]);
        free(acc);
        free(mu);
    } else {
        int64_t *acc = malloc(sizeof(int64_t) * (size_t)(p.out_n ? p.out_n : 1));
        if (!acc) goto nomem;
        int64_t init = kind == R_PROD ? 1 : kind == R_MAX ? INT64_MIN : kind == R_MIN ? INT64_MAX : 0;
        for (int64_t i = 0; i < p.out_n; i++) acc[i] = init;
        bool is64 = dt.code == kDLInt && dt.bits == 64;
#define IV(i) (is64 ? ((const int64_t *)x->dl.data)[i] : (int64_t)rt_tensor_get_f64(x, i))
        if (kind == R_SUM || kind == R_MEAN) {
            RED_LOOP(&p, acc[oo] = (int64_t)((uint64_t)acc[oo] + (uint64_t)IV(io)));
        } else if (kind == R_PROD) {
            RED_LOOP(&p, acc[oo] = (int64_t)((uint64_t)acc[oo] * (uint64_t)IV(io)));
        } else if (kind == R_MAX) {
            RED_LOOP(&p, { int64_t v = IV(io); if (v > acc[oo]) acc[oo] = v; });
        } else {
            RED_LOOP(&p, { int64_t v = IV(io); if (v < acc[oo]) acc[oo] = v; });
        }
#undef IV
        for (int64_t i = 0; i < p.out_n; i++) {
            int64_t v = acc[i];
            if (kind == R_MEAN) v = p.red_n ? v / p.red_n : 0;
            if (is64) ((int64_t *)o->dl.data)[i] = v;
            else rt_tensor_set_f64(o, i, (double)v);
        }
        free(acc);
    }
    *out = rt_value_tensor(o);
    return GR_OK;
nomem:
    rt_tensor_release(o);
    return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
}

#define RED_K(NAME, KIND) \
    static gr_status k_##NAME(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_reduce(c, o, d, KIND); }
RED_K(sum, R_SUM)
RED_K(mean, R_MEAN)
RED_K(prod, R_PROD)
RED_K(max, R_MAX)
RED_K(min, R_MIN)
RED_K(variance, R_VAR)
RED_K(std, R_STD)

/* ---- argmax / argmin: axis int or None (flattened), keepdims; int64 result ---- */

static gr_status run_arg(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool is_max) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    bool keep = ir_attrs_get_bool(c->attrs, "keepdims", false);
    int64_t outer, n, inner, oshape[RT_MAX_NDIM];
    int ond = 0;
    if (rt_attr_is_none(c->attrs, "axis")) {
        outer = inner = 1;
        n = rt_tensor_numel(x);
        if (keep)
            for (int i = 0; i < nd; i++) oshape[ond++] = 1;
    } else {
        int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
        if (!rt_norm_axis(&axis, nd))
            return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
        outer = rt_numel((int)axis, x->dl.shape);
        n = x->dl.shape[axis];
        inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
        for (int i = 0; i < nd; i++) {
            if (i != axis) oshape[ond++] = x->dl.shape[i];
            else if (keep) oshape[ond++] = 1;
        }
    }
    if (n == 0) return rt_kerr(c, d, GR_ERR_INVALID, "empty axis in %s", RT_SHAPE_STR(x));
    rt_tensor *o;
    if ((st = rt_out_new(c, (DLDataType){kDLInt, 64, 1}, ond, oshape, &o, d))) return st;
    int64_t *op = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            int64_t best = 0;
            double bv = rt_tensor_get_f64(x, a * n * inner + b);
            for (int64_t i = 1; i < n; i++) {
                double v = rt_tensor_get_f64(x, (a * n + i) * inner + b);
                if (bv != bv) break; /* NaN wins, first occurrence */
                if (is_max ? (v > bv || v != v) : (v < bv || v != v)) {
                    bv = v;
                    best = i;
                }
            }
            op[a * inner + b] = best;
        }
    *out = rt_value_tensor(o);
    return GR_OK;
}
static gr_status k_argmax(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_arg(c, o, d, true); }
static gr_status k_argmin(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_arg(c, o, d, false); }

/* ---- cumsum / cumprod(data, axis, dtype, exclusive) ---- */

static gr_status run_cum(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool prod) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    DLDataType odt = rt_attr_dtype(c->attrs, "dtype", x->dl.dtype);
    bool excl = ir_attrs_get_bool(c->attrs, "exclusive", false);
    int64_t outer, n, inner, oshape[RT_MAX_NDIM];
    int ond;
    if (rt_attr_is_none(c->attrs, "axis")) {
        outer = inner = 1;
        n = rt_tensor_numel(x);
        ond = 1;
        oshape[0] = n;
    } else {
        int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
        if (!rt_norm_axis(&axis, nd))
            return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
        outer = rt_numel((int)axis, x->dl.shape);
        n = x->dl.shape[axis];
        inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
        ond = nd;
        memcpy(oshape, x->dl.shape, sizeof(int64_t) * (size_t)nd);
    }
    rt_tensor *o;
    if ((st = rt_out_new(c, odt, ond, oshape, &o, d))) return st;
    bool is_f = rt_is_floatish(odt);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            double accf = prod ? 1 : 0;
            int64_t acci = prod ? 1 : 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t at = (a * n + i) * inner + b;
                double v = rt_tensor_get_f64(x, at);
                if (excl) rt_tensor_set_f64(o, at, is_f ? accf : (double)acci);
                if (prod) { accf *= v; acci = (int64_t)((uint64_t)acci * (uint64_t)(int64_t)v); }
                else { accf += v; acci = (int64_t)((uint64_t)acci + (uint64_t)(int64_t)v); }
                if (!excl) rt_tensor_set_f64(o, at, is_f ? accf : (double)acci);
            }
        }
    *out = rt_value_tensor(o);
    return GR_OK;
}
static gr_status k_cumsum(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_cum(c, o, d, false); }
static gr_status k_cumprod(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_cum(c, o, d, true); }

/* collapse_sum_to(data, shape) / collapse_sum_like(data, like): sums data down to a shape it
 * broadcasts from (the gradient of broadcasting). */
static gr_status collapse_sum(const rt_kernel_call *c, rt_value *out, gr_diag *d, int tnd,
                              const int64_t *tshape) {
    const rt_tensor *x;
    gr_status st = rt_arg_tensor(c, 0, &x, d);
    if (st) return st;
    int nd = x->dl.ndim;
    if (tnd > nd) return rt_kerr(c, d, GR_ERR_INVALID, "target rank exceeds %s", RT_SHAPE_STR(x));
    int64_t ostr[RT_MAX_NDIM], s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int j = i - (nd - tnd);
        int64_t e = j >= 0 ? tshape[j] : 1;
        if (e != 1 && e != x->dl.shape[i])
            return rt_kerr(c, d, GR_ERR_INVALID, "%s does not broadcast from %s", RT_SHAPE_STR(x),
                           RT_DIMS_STR(tnd, tshape));
        ostr[i] = e == 1 ? 0 : s;
        s *= e;
    }
    rt_tensor *o;
    if ((st = rt_out_new(c, x->dl.dtype, tnd, tshape, &o, d))) return st;
    int64_t idx[RT_MAX_NDIM] = {0}, oo = 0;
    for (int64_t i = 0, n = rt_tensor_numel(x); i < n; i++) {
        rt_tensor_set_f64(o, oo, rt_tensor_get_f64(o, oo) + rt_tensor_get_f64(x, i));
        for (int k = nd - 1; k >= 0; k--) {
            oo += ostr[k];
            if (++idx[k] < x->dl.shape[k]) break;
            oo -= ostr[k] * idx[k];
            idx[k] = 0;
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_collapse_sum_to(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st = rt_check_nargs(c, 2, 2, d);
    if (st) return st;
    int64_t shape[RT_MAX_NDIM];
    int n = rt_value_ints(&c->args[1], shape, RT_MAX_NDIM);
    if (n < 0 || n > RT_MAX_NDIM) return rt_kerr(c, d, GR_ERR_INVALID, "argument 1 is not a shape");
    return collapse_sum(c, out, d, n, shape);
}

static gr_status k_collapse_sum_like(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *like;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 1, &like, d))) return st;
    return collapse_sum(c, out, d, like->dl.ndim, like->dl.shape);
}

const rt_kernel_entry rt_kernels_reduce[] = {
    RT_K_OFF("relax.collapse_sum_to", k_collapse_sum_to), RT_K_OFF("relax.collapse_sum_like", k_collapse_sum_like),
    RT_K(SUM, k_sum), RT_K(MEAN, k_mean), RT_K(PROD, k_prod),
    RT_K(MAX, k_max), RT_K(MIN, k_min), RT_K(VARIANCE, k_variance),
    RT_K(STD, k_std), RT_K(ARGMAX, k_argmax), RT_K(ARGMIN, k_argmin),
    RT_K(CUMSUM, k_cumsum), RT_K(CUMPROD, k_cumprod),
};
RT_FAMILY_COUNT(reduce, rt_kernels_reduce);
