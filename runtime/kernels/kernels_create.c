/* Creation ops: full, zeros, ones (shape argument, dtype attr), full_like, zeros_like,
 * ones_like, arange, tril, triu, eye. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static gr_status filled(const rt_kernel_call *c, DLDataType dt, int nd, const int64_t *shape,
                        double v, rt_value *out, gr_diag *d) {
    rt_tensor *o;
    gr_status st = rt_out_new(c, dt, nd, shape, &o, d);
    if (st) return st;
    int64_t n = rt_tensor_numel(o);
    if (v != 0.0) {
        if (rt_is_f32(dt)) {
            float f = (float)v;
            for (int64_t i = 0; i < n; i++) ((float *)o->dl.data)[i] = f;
        } else {
            for (int64_t i = 0; i < n; i++) rt_tensor_set_f64(o, i, v);
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* The shape argument (SHAPE value or 1-D int tensor). */
static gr_status shape_arg(const rt_kernel_call *c, uint32_t i, int *nd, int64_t *shape,
                           gr_diag *d) {
    if (i >= c->nargs) return rt_kerr(c, d, GR_ERR_INVALID, "missing shape argument");
    *nd = rt_value_ints(&c->args[i], shape, RT_MAX_NDIM);
    if (*nd < 0 || *nd > RT_MAX_NDIM)
        return rt_kerr(c, d, GR_ERR_INVALID, "argument %u is not a shape", i);
    return GR_OK;
}

static gr_status run_const(const rt_kernel_call *c, rt_value *out, gr_diag *d, double v) {
    int nd = 0;
    int64_t shape[RT_MAX_NDIM];
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = shape_arg(c, 0, &nd, shape, d))) return st;
    ir_dtype dt = rt_attr_dtype(c->attrs, "dtype", IR_DTYPE_F32);
    return filled(c, dt, nd, shape, v, out, d);
}
static gr_status k_zeros(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_const(c, o, d, 0.0); }
static gr_status k_ones(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_const(c, o, d, 1.0); }

/* full(shape, fill_value; dtype): dtype None takes fill_value's dtype. */
static gr_status k_full(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    int nd = 0;
    int64_t shape[RT_MAX_NDIM];
    gr_status st;
    double v;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = shape_arg(c, 0, &nd, shape, d))) return st;
    if (!rt_value_scalar(&c->args[1], &v))
        return rt_kerr(c, d, GR_ERR_INVALID, "fill_value must be a scalar");
    ir_dtype fdt = c->args[1].kind == RT_VAL_TENSOR ? c->args[1].u.t->dl.dtype
                   : c->args[1].kind == RT_VAL_INT ? IR_DTYPE_I64 : IR_DTYPE_F32;
    return filled(c, rt_attr_dtype(c->attrs, "dtype", fdt), nd, shape, v, out, d);
}

static gr_status run_like(const rt_kernel_call *c, rt_value *out, gr_diag *d, int kind) {
    const rt_tensor *x;
    gr_status st;
    double v = kind == 1 ? 1.0 : 0.0;
    if ((st = rt_check_nargs(c, kind == 2 ? 2 : 1, kind == 2 ? 2 : 1, d)) ||
        (st = rt_arg_tensor(c, 0, &x, d)))
        return st;
    if (kind == 2 && !rt_value_scalar(&c->args[1], &v))
        return rt_kerr(c, d, GR_ERR_INVALID, "fill_value must be a scalar");
    return filled(c, rt_attr_dtype(c->attrs, "dtype", x->dl.dtype), x->dl.ndim, x->dl.shape, v,
                  out, d);
}
static gr_status k_zeros_like(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_like(c, o, d, 0); }
static gr_status k_ones_like(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_like(c, o, d, 1); }
static gr_status k_full_like(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_like(c, o, d, 2); }

/* arange(start, end, step; dtype): args are PrimValues (or attrs of the same names). */
static gr_status k_arange(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    double p[3] = {0, 0, 1};
    static const char *const names[3] = {"start", "end", "step"};
    bool all_int = true;
    for (int i = 0; i < 3; i++) {
        if ((uint32_t)i < c->nargs) {
            if (!rt_value_scalar(&c->args[i], &p[i]))
                return rt_kerr(c, d, GR_ERR_INVALID, "%s must be a scalar", names[i]);
            if (c->args[i].kind == RT_VAL_FLOAT ||
                (c->args[i].kind == RT_VAL_TENSOR && rt_is_floatish(c->args[i].u.t->dl.dtype)))
                all_int = false;
        } else if (ir_attrs_get(c->attrs, names[i])) {
            p[i] = ir_attrs_get_float(c->attrs, names[i], p[i]);
        } else if (i == 1 && c->nargs == 1) { /* arange(end) */
            p[1] = p[0];
            p[0] = 0;
        }
    }
    if (p[2] == 0 || !isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad start/end/step");
    double cnt = ceil((p[1] - p[0]) / p[2]);
    if (cnt > 4e12) return rt_kerr(c, d, GR_ERR_INVALID, "arange of %.0f elements", cnt);
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    ir_dtype dt = rt_attr_dtype(c->attrs, "dtype", all_int ? IR_DTYPE_I64 : IR_DTYPE_F32);
    rt_tensor *o;
    gr_status st = rt_out_new(c, dt, 1, &n, &o, d);
    if (st) return st;
    for (int64_t i = 0; i < n; i++) rt_tensor_set_f64(o, i, p[0] + (double)i * p[2]);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* tril/triu(x[, k]; k attr in older tables): keeps the lower/upper triangle of the last 2 dims. */
static gr_status run_tri(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool lower) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    double kd = (double)ir_attrs_get_int(c->attrs, "k", 0);
    if (c->nargs > 1 && !rt_value_scalar(&c->args[1], &kd))
        return rt_kerr(c, d, GR_ERR_INVALID, "k must be a scalar");
    int64_t k = (int64_t)kd;
    if (x->dl.ndim < 2) return rt_kerr(c, d, GR_ERR_INVALID, "needs rank >= 2, got %s", RT_SHAPE_STR(x));
    rt_tensor *o;
    if ((st = rt_out_new(c, x->dl.dtype, x->dl.ndim, x->dl.shape, &o, d))) return st;
    int64_t R = x->dl.shape[x->dl.ndim - 2], C = x->dl.shape[x->dl.ndim - 1];
    int64_t nb = rt_numel(x->dl.ndim - 2, x->dl.shape);
    size_t es = rt_dtype_size(x->dl.dtype);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                bool keep = lower ? j - i <= k : j - i >= k;
                if (keep) {
                    int64_t at = (b * R + i) * C + j;
                    memcpy((char *)o->dl.data + at * (int64_t)es, (const char *)x->dl.data + at * (int64_t)es, es);
                }
            }
    *out = rt_value_tensor(o);
    return GR_OK;
}
static gr_status k_tril(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_tri(c, o, d, true); }
static gr_status k_triu(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_tri(c, o, d, false); }

const rt_kernel_entry rt_kernels_create[] = {
    RT_K(ZEROS, k_zeros),         RT_K(ONES, k_ones),
    RT_K(FULL, k_full),           RT_K(ZEROS_LIKE, k_zeros_like),
    RT_K(ONES_LIKE, k_ones_like), RT_K(FULL_LIKE, k_full_like),
    RT_K(ARANGE, k_arange),       RT_K(TRIL, k_tril),
    RT_K(TRIU, k_triu),
};
RT_FAMILY_COUNT(create, rt_kernels_create);
