/* Normalizations and softmax: softmax, log_softmax, batch_norm (inference), layer_norm,
 * group_norm, instance_norm, rms_norm, dropout (inference: identity). float32 compute with
 * double accumulation for the statistics. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static const DLDataType F32 = {kDLFloat, 32, 1};

/* Casts arg i to float32 (new reference in *t). */
static gr_status float_arg(const rt_kernel_call *c, uint32_t i, rt_tensor **t, gr_diag *d) {
    const rt_tensor *x;
    gr_status st = rt_arg_tensor(c, i, &x, d);
    if (st) return st;
    if (!rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "argument %u must be float, got %s", i,
                       RT_SHAPE_STR(x));
    *t = rt_tensor_cast(x, F32);
    return *t ? GR_OK : rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
}

/* ---- softmax ---- */

static gr_status run_softmax(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool log_) {
    rt_tensor *x = NULL, *o = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = float_arg(c, 0, &x, d))) return st;
    DLDataType dt = c->args[0].u.t->dl.dtype;
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", -1);
    if (nd == 0 || !rt_norm_axis(&axis, nd)) {
        st = rt_kerr(c, d, GR_ERR_INVALID, "axis %lld out of range for %s",
                     (long long)ir_attrs_get_int(c->attrs, "axis", -1), RT_SHAPE_STR(x));
        goto fail;
    }
    if ((st = rt_out_new_raw(c, F32, nd, x->dl.shape, &o, d))) goto fail;
    int64_t outer = rt_numel((int)axis, x->dl.shape), n = x->dl.shape[axis];
    int64_t inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    const float *xp = x->dl.data;
    float *yp = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            const float *xr = xp + a * n * inner + b;
            float *yr = yp + a * n * inner + b;
            float mx = -INFINITY;
            for (int64_t i = 0; i < n; i++) mx = xr[i * inner] > mx ? xr[i * inner] : mx;
            double sum = 0;
            for (int64_t i = 0; i < n; i++) {
                float e = expf(xr[i * inner] - mx);
                sum += e;
                if (!log_) yr[i * inner] = e;
            }
            if (log_) {
                float ls = (float)log(sum);
                for (int64_t i = 0; i < n; i++) yr[i * inner] = xr[i * inner] - mx - ls;
            } else {
                float inv = (float)(1.0 / sum);
                for (int64_t i = 0; i < n; i++) yr[i * inner] *= inv;
            }
        }
    rt_tensor_release(x);
    return rt_kout_as(c, o, dt, out, d);
fail:
    rt_tensor_release(x);
    return st;
}
static gr_status k_softmax(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_softmax(c, o, d, false); }
static gr_status k_log_softmax(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_softmax(c, o, d, true); }

/* ---- batch_norm ---- */

static gr_status k_batch_norm(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    rt_tensor *t[5] = {0}, *o = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 5, 5, d))) return st;
    for (uint32_t i = 0; i < 5; i++)
        if ((st = float_arg(c, i, &t[i], d))) goto done;
    const rt_tensor *x = t[0];
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 1);
    if (nd == 0 || !rt_norm_axis(&axis, nd)) {
        st = rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
        goto done;
    }
    int64_t C = x->dl.shape[axis];
    for (int i = 1; i < 5; i++)
        if (t[i]->dl.ndim != 1 || t[i]->dl.shape[0] != C) {
            st = rt_kerr(c, d, GR_ERR_INVALID, "argument %d %s must have shape (%lld,) for data %s",
                         i, RT_SHAPE_STR(t[i]), (long long)C, RT_SHAPE_STR(x));
            goto done;
        }
    double eps = ir_attrs_get_float(c->attrs, "epsilon", 1e-5);
    bool center = ir_attrs_get_bool(c->attrs, "center", true);
    bool scale = ir_attrs_get_bool(c->attrs, "scale", true);
    if ((st = rt_out_new_raw(c, F32, nd, x->dl.shape, &o, d))) goto done;
    int64_t outer = rt_numel((int)axis, x->dl.shape);
    int64_t inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    const float *g = t[1]->dl.data, *b = t[2]->dl.data, *mu = t[3]->dl.data, *var = t[4]->dl.data;
    const float *xp = x->dl.data;
    float *yp = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t ch = 0; ch < C; ch++) {
            float s = (float)(1.0 / sqrt((double)var[ch] + eps)) * (scale ? g[ch] : 1.0f);
            float sh = (center ? b[ch] : 0.0f) - mu[ch] * s;
            const float *xr = xp + (a * C + ch) * inner;
            float *yr = yp + (a * C + ch) * inner;
            for (int64_t i = 0; i < inner; i++) yr[i] = xr[i] * s + sh;
        }
    rt_value res = rt_value_tuple(3);
    DLDataType dt = c->args[0].u.t->dl.dtype;
    if ((st = rt_kout_as(c, o, dt, &res.u.tuple.items[0], d))) {
        o = NULL;
        rt_value_clear(&res);
        goto done;
    }
    o = NULL;
    res.u.tuple.items[1] = rt_value_copy(&c->args[3]);
    res.u.tuple.items[2] = rt_value_copy(&c->args[4]);
    *out = res;
done:
    for (int i = 0; i < 5; i++) rt_tensor_release(t[i]);
    rt_tensor_release(o);
    return st;
}

/* ---- layer_norm / rms_norm: normalize over trailing axes ---- */

/* Reads `axes` and checks they are the trailing dims; returns the number of trailing dims. */
static gr_status trailing_axes(const rt_kernel_call *c, const rt_tensor *x, int *naxes,
                               gr_diag *d) {
    int64_t ax[RT_MAX_NDIM];
    int nd = x->dl.ndim;
    int n = rt_attr_ints(c->attrs, "axes", ax, RT_MAX_NDIM);
    if (n < 0) {
        ax[0] = -1;
        n = 1;
    }
    if (n == 0 || n > nd) return rt_kerr(c, d, GR_ERR_INVALID, "bad axes for %s", RT_SHAPE_STR(x));
    bool seen[RT_MAX_NDIM] = {0};
    for (int i = 0; i < n; i++) {
        if (!rt_norm_axis(&ax[i], nd) || seen[ax[i]])
            return rt_kerr(c, d, GR_ERR_INVALID, "bad axes for %s", RT_SHAPE_STR(x));
        seen[ax[i]] = true;
    }
    for (int i = nd - n; i < nd; i++)
        if (!seen[i])
            return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "axes must be the trailing dims of %s",
                           RT_SHAPE_STR(x));
    *naxes = n;
    return GR_OK;
}

static bool param_matches(const rt_tensor *p, const rt_tensor *x, int naxes) {
    if (rt_tensor_numel(p) != rt_numel(naxes, x->dl.shape + x->dl.ndim - naxes)) return false;
    return p->dl.ndim <= naxes;
}

static gr_status run_lnorm(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool rms) {
    rt_tensor *x = NULL, *g = NULL, *b = NULL, *o = NULL;
    gr_status st;
    int naxes = 0;
    if ((st = rt_check_nargs(c, rms ? 2 : 3, rms ? 2 : 3, d)) || (st = float_arg(c, 0, &x, d)) ||
        (st = float_arg(c, 1, &g, d)) || (!rms && (st = float_arg(c, 2, &b, d))) ||
        (st = trailing_axes(c, x, &naxes, d)))
        goto done;
    if (!param_matches(g, x, naxes) || (b && !param_matches(b, x, naxes))) {
        st = rt_kerr(c, d, GR_ERR_INVALID, "gamma %s / beta %s do not match the axes of %s",
                     RT_SHAPE_STR(g), RT_SHAPE_STR(b), RT_SHAPE_STR(x));
        goto done;
    }
    double eps = ir_attrs_get_float(c->attrs, "epsilon", 1e-5);
    bool center = !rms && ir_attrs_get_bool(c->attrs, "center", true);
    bool scale = rms || ir_attrs_get_bool(c->attrs, "scale", true);
    if ((st = rt_out_new_raw(c, F32, x->dl.ndim, x->dl.shape, &o, d))) goto done;
    int64_t n = rt_numel(naxes, x->dl.shape + x->dl.ndim - naxes);
    int64_t rows = n ? rt_tensor_numel(x) / n : 0;
    const float *gp = g->dl.data, *bp = b ? b->dl.data : NULL;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = (const float *)x->dl.data + r * n;
        float *yr = (float *)o->dl.data + r * n;
        double mean = 0, var = 0;
        if (!rms) {
            for (int64_t i = 0; i < n; i++) mean += xr[i];
            mean /= (double)n;
        }
        for (int64_t i = 0; i < n; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)n;
        float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
        for (int64_t i = 0; i < n; i++) {
            float v = (xr[i] - m) * inv;
            if (scale) v *= gp[i];
            if (center) v += bp[i];
            yr[i] = v;
        }
    }
    st = rt_kout_as(c, o, c->args[0].u.t->dl.dtype, out, d);
    o = NULL;
done:
    rt_tensor_release(x);
    rt_tensor_release(g);
    rt_tensor_release(b);
    rt_tensor_release(o);
    return st;
}
static gr_status k_layer_norm(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_lnorm(c, o, d, false); }
static gr_status k_rms_norm(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_lnorm(c, o, d, true); }

/* ---- group_norm / instance_norm: channel axis 1, statistics over groups x spatial ---- */

static gr_status run_gnorm(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool instance) {
    rt_tensor *x = NULL, *g = NULL, *b = NULL, *o = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d)) || (st = float_arg(c, 0, &x, d)) ||
        (st = float_arg(c, 1, &g, d)) || (st = float_arg(c, 2, &b, d)))
        goto done;
    int nd = x->dl.ndim;
    int64_t cax = ir_attrs_get_int(c->attrs, "channel_axis", 1);
    if (nd < 2 || !rt_norm_axis(&cax, nd) || cax != 1) {
        st = rt_kerr(c, d, GR_ERR_UNSUPPORTED, "channel_axis must be 1 for %s", RT_SHAPE_STR(x));
        goto done;
    }
    int64_t ax[RT_MAX_NDIM];
    int nax = rt_attr_ints(c->attrs, "axes", ax, RT_MAX_NDIM);
    bool axes_ok = nax < 0 || nax == nd - 2;
    for (int i = 0; axes_ok && i < nax; i++) axes_ok = rt_norm_axis(&ax[i], nd) && ax[i] == i + 2;
    if (!axes_ok) {
        st = rt_kerr(c, d, GR_ERR_UNSUPPORTED, "axes must be the spatial dims 2..%d of %s", nd - 1,
                     RT_SHAPE_STR(x));
        goto done;
    }
    int64_t C = x->dl.shape[1];
    int64_t G = instance ? C : ir_attrs_get_int(c->attrs, "num_groups", 1);
    if (G <= 0 || C % G != 0 || rt_tensor_numel(g) != C || rt_tensor_numel(b) != C) {
        st = rt_kerr(c, d, GR_ERR_INVALID, "bad groups/gamma/beta for %s (groups %lld, gamma %s)",
                     RT_SHAPE_STR(x), (long long)G, RT_SHAPE_STR(g));
        goto done;
    }
    double eps = ir_attrs_get_float(c->attrs, "epsilon", 1e-5);
    bool center = ir_attrs_get_bool(c->attrs, "center", true);
    bool scale = ir_attrs_get_bool(c->attrs, "scale", true);
    if ((st = rt_out_new_raw(c, F32, nd, x->dl.shape, &o, d))) goto done;
    int64_t S = rt_numel(nd - 2, x->dl.shape + 2), cg = C / G;
    const float *gp = g->dl.data, *bp = b->dl.data;
    for (int64_t n = 0; n < x->dl.shape[0]; n++)
        for (int64_t gi = 0; gi < G; gi++) {
            const float *xr = (const float *)x->dl.data + (n * C + gi * cg) * S;
            float *yr = (float *)o->dl.data + (n * C + gi * cg) * S;
            int64_t m = cg * S;
            double mean = 0, var = 0;
            for (int64_t i = 0; i < m; i++) mean += xr[i];
            mean /= (double)(m ? m : 1);
            for (int64_t i = 0; i < m; i++) var += (xr[i] - mean) * (xr[i] - mean);
            var /= (double)(m ? m : 1);
            float inv = (float)(1.0 / sqrt(var + eps)), mu = (float)mean;
            for (int64_t ch = 0; ch < cg; ch++) {
                int64_t cc = gi * cg + ch;
                float s = inv * (scale ? gp[cc] : 1.0f), sh = center ? bp[cc] : 0.0f;
                for (int64_t i = 0; i < S; i++) yr[ch * S + i] = (xr[ch * S + i] - mu) * s + sh;
            }
        }
    st = rt_kout_as(c, o, c->args[0].u.t->dl.dtype, out, d);
    o = NULL;
done:
    rt_tensor_release(x);
    rt_tensor_release(g);
    rt_tensor_release(b);
    rt_tensor_release(o);
    return st;
}
static gr_status k_group_norm(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_gnorm(c, o, d, false); }
static gr_status k_instance_norm(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_gnorm(c, o, d, true); }

/* ---- dropout: inference identity; (out, mask) like TVM ---- */

static gr_status k_dropout(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    rt_tensor *y, *mask;
    if ((st = rt_out_new(c, x->dl.dtype, x->dl.ndim, x->dl.shape, &y, d))) return st;
    if ((st = rt_out_new(c, x->dl.dtype, x->dl.ndim, x->dl.shape, &mask, d))) {
        rt_tensor_release(y);
        return st;
    }
    memcpy(y->dl.data, x->dl.data, rt_tensor_nbytes(x));
    for (int64_t i = 0, n = rt_tensor_numel(x); i < n; i++) rt_tensor_set_f64(mask, i, 1.0);
    rt_value res = rt_value_tuple(2);
    res.u.tuple.items[0] = rt_value_tensor(y);
    res.u.tuple.items[1] = rt_value_tensor(mask);
    *out = res;
    return GR_OK;
}

const rt_kernel_entry rt_kernels_norm[] = {
    RT_K(SOFTMAX, k_softmax),
    RT_K(LOG_SOFTMAX, k_log_softmax),
    RT_K(BATCH_NORM, k_batch_norm),
    RT_K(LAYER_NORM, k_layer_norm),
    RT_K(RMS_NORM, k_rms_norm),
    RT_K(GROUP_NORM, k_group_norm),
    RT_K(INSTANCE_NORM, k_instance_norm),
    RT_K(DROPOUT, k_dropout),
};
RT_FAMILY_COUNT(norm, rt_kernels_norm);
