/* Volumetric ops on NCDHW: conv3d (OIDHW weights), conv3d_transpose (IODHW), max_pool3d and
 * avg_pool3d (padding, dilation, ceil_mode, count_include_pad). Direct loops with float
 * accumulation over one output element at a time: a reference, the dnnl backend is the fast
 * path for 3-D convolutions and pools. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

typedef struct vol_geom {
    int64_t in[3], k[3], s[3], dil[3], p0[3], p1[3], opad[3], out[3];
    int64_t groups;
} vol_geom;

/* strides / dilation: 1 or 3 values; padding: 1, 3 or 6 (begin..., end...). */
static gr_status vol_attrs(const rt_kernel_call *c, vol_geom *g, const char *kkey, bool transposed, gr_diag *d) {
    int64_t v[8];
    int n;
    for (int i = 0; i < 3; i++) g->s[i] = g->dil[i] = 1, g->p0[i] = g->p1[i] = g->opad[i] = 0;
    static const char *const keys[3] = {"strides", "dilation", "output_padding"};
    int64_t *dst[3] = {g->s, g->dil, g->opad};
    for (int a = 0; a < (transposed ? 3 : 2); a++)
        if ((n = rt_attr_ints(c->attrs, keys[a], v, 8)) > 0) {
            if (n != 1 && n != 3) return rt_kerr(c, d, GR_ERR_INVALID, "%s needs 1 or 3 values", keys[a]);
            for (int i = 0; i < 3; i++) dst[a][i] = v[n == 1 ? 0 : i];
        }
    if ((n = rt_attr_ints(c->attrs, "padding", v, 8)) > 0) {
        if (n != 1 && n != 3 && n != 6) return rt_kerr(c, d, GR_ERR_INVALID, "padding needs 1, 3 or 6 values");
        for (int i = 0; i < 3; i++) {
            g->p0[i] = v[n == 1 ? 0 : i];
            g->p1[i] = v[n == 1 ? 0 : n == 3 ? i : 3 + i];
        }
    }
    if (kkey && (n = rt_attr_ints(c->attrs, kkey, v, 8)) > 0) {
        if (n != 1 && n != 3) return rt_kerr(c, d, GR_ERR_INVALID, "%s needs 1 or 3 values", kkey);
        for (int i = 0; i < 3; i++) g->k[i] = v[n == 1 ? 0 : i];
    }
    g->groups = ir_attrs_get_int(c->attrs, "groups", 1);
    for (int i = 0; i < 3; i++)
        if (g->s[i] <= 0 || g->dil[i] <= 0 || g->p0[i] < 0 || g->p1[i] < 0 || g->opad[i] < 0 || g->k[i] <= 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "strides, dilation and kernel must be positive, padding non-negative");
    if (g->groups <= 0) return rt_kerr(c, d, GR_ERR_INVALID, "groups must be positive");
    return GR_OK;
}

static gr_status check_layout(const rt_kernel_call *c, const char *key, const char *want, gr_diag *d) {
    const char *l = rt_attr_str(c->attrs, key, want);
    if (l[0] && strcmp(l, want)) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "%s %s (only %s)", key, l, want);
    return GR_OK;
}

static gr_status run_conv3d(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool transposed) {
    const rt_tensor *x, *w;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) || (st = rt_arg_tensor(c, 1, &w, d)) ||
        (st = check_layout(c, "data_layout", "NCDHW", d)) ||
        (st = check_layout(c, "kernel_layout", transposed ? "IODHW" : "OIDHW", d)) ||
        (st = check_layout(c, "out_layout", "NCDHW", d)))
        return st;
    if (x->dl.ndim != 5 || w->dl.ndim != 5 || !rt_is_floatish(x->dl.dtype) || !rt_is_floatish(w->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects 5-D float data and weight, got %s and %s", RT_SHAPE_STR(x),
                       RT_SHAPE_STR(w));
    vol_geom g;
    for (int i = 0; i < 3; i++) g.k[i] = w->dl.shape[2 + i];
    if ((st = vol_attrs(c, &g, NULL, transposed, d))) return st;
    int64_t N = x->dl.shape[0], C = x->dl.shape[1], G = g.groups;
    int64_t O = transposed ? w->dl.shape[1] * G : w->dl.shape[0];
    int64_t wc = transposed ? w->dl.shape[0] : w->dl.shape[1] * G;
    if (C % G || O % G || wc != C)
        return rt_kerr(c, d, GR_ERR_INVALID, "data %s and weight %s do not match (groups=%lld)", RT_SHAPE_STR(x),
                       RT_SHAPE_STR(w), (long long)G);
    for (int i = 0; i < 3; i++) {
        g.in[i] = x->dl.shape[2 + i];
        int64_t span = g.dil[i] * (g.k[i] - 1);
        g.out[i] = transposed ? (g.in[i] - 1) * g.s[i] - g.p0[i] - g.p1[i] + span + g.opad[i] + 1
                              : (g.in[i] + g.p0[i] + g.p1[i] - span - 1 >= 0
                                     ? (g.in[i] + g.p0[i] + g.p1[i] - span - 1) / g.s[i] + 1 : 0);
        if (g.out[i] <= 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "kernel %s does not fit the padded input %s", RT_SHAPE_STR(w),
                           RT_SHAPE_STR(x));
    }
    const DLDataType f32 = {kDLFloat, 32, 1};
    int64_t oshape[5] = {N, O, g.out[0], g.out[1], g.out[2]};
    rt_tensor *cx = rt_tensor_cast(x, f32), *cw = rt_tensor_cast(w, f32), *o = NULL;
    if (!cx || !cw) st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if (!st) st = rt_out_new(c, f32, 5, oshape, &o, d);
    if (st) {
        rt_tensor_release(cx);
        rt_tensor_release(cw);
        return st;
    }
    const float *xp = cx->dl.data, *wp = cw->dl.data;
    float *yp = o->dl.data;
    int64_t Cg = C / G, Og = O / G, K = g.k[0] * g.k[1] * g.k[2];
    int64_t isz = g.in[0] * g.in[1] * g.in[2], osz = g.out[0] * g.out[1] * g.out[2];
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < G; gi++)
            for (int64_t oc = 0; oc < Og; oc++)
                for (int64_t ic = 0; ic < Cg; ic++) {
                    const float *xc = xp + (n * C + gi * Cg + ic) * isz;
                    float *yc = yp + (n * O + gi * Og + oc) * osz;
                    const float *wk = transposed ? wp + ((gi * Cg + ic) * Og + oc) * K : wp + ((gi * Og + oc) * Cg + ic) * K;
                    /* one (input channel, output channel) pair: scatter (transposed) or gather */
                    const int64_t *it = transposed ? g.in : g.out;
                    for (int64_t a = 0; a < it[0]; a++)
                        for (int64_t b = 0; b < it[1]; b++)
                            for (int64_t e = 0; e < it[2]; e++) {
                                float acc = 0;
                                float xv = transposed ? xc[(a * g.in[1] + b) * g.in[2] + e] : 0;
                                for (int64_t kd = 0; kd < g.k[0]; kd++) {
                                    int64_t pd = transposed ? a * g.s[0] - g.p0[0] + kd * g.dil[0]
                                                            : a * g.s[0] - g.p0[0] + kd * g.dil[0];
                                    if (pd < 0 || pd >= (transposed ? g.out[0] : g.in[0])) continue;
                                    for (int64_t kh = 0; kh < g.k[1]; kh++) {
                                        int64_t ph = b * g.s[1] - g.p0[1] + kh * g.dil[1];
                                        if (ph < 0 || ph >= (transposed ? g.out[1] : g.in[1])) continue;
                                        for (int64_t kw = 0; kw < g.k[2]; kw++) {
                                            int64_t pw = e * g.s[2] - g.p0[2] + kw * g.dil[2];
                                            if (pw < 0 || pw >= (transposed ? g.out[2] : g.in[2])) continue;
                                            float wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
                                            if (transposed) yc[(pd * g.out[1] + ph) * g.out[2] + pw] += xv * wv;
                                            else acc += xc[(pd * g.in[1] + ph) * g.in[2] + pw] * wv;
                                        }
                                    }
                                }
                                if (!transposed) yc[(a * g.out[1] + b) * g.out[2] + e] += acc;
                            }
                }
    rt_tensor_release(cx);
    rt_tensor_release(cw);
    ir_dtype odt = rt_attr_dtype(c->attrs, "out_dtype", x->dl.dtype);
    return rt_kout_as(c, o, odt, out, d);
}

/* Output length along one dim (ONNX / PyTorch: in ceil mode a window must start inside the
 * input or the left padding). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t p0, int64_t p1, bool ceil_mode) {
    int64_t span = in + p0 + p1 - dil * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

static gr_status run_pool3d(const rt_kernel_call *c, rt_value *out, gr_diag *d, bool is_max) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = check_layout(c, "layout", "NCDHW", d)) || (st = check_layout(c, "out_layout", "NCDHW", d)))
        return st;
    if (x->dl.ndim != 5 || !rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a 5-D float tensor, got %s", RT_SHAPE_STR(x));
    vol_geom g;
    for (int i = 0; i < 3; i++) g.k[i] = 1;
    if ((st = vol_attrs(c, &g, "pool_size", false, d))) return st;
    bool ceil_mode = ir_attrs_get_bool(c->attrs, "ceil_mode", false);
    bool include_pad = ir_attrs_get_bool(c->attrs, "count_include_pad", false);
    for (int i = 0; i < 3; i++) {
        g.in[i] = x->dl.shape[2 + i];
        g.out[i] = pool_out(g.in[i], g.k[i], g.s[i], g.dil[i], g.p0[i], g.p1[i], ceil_mode);
        if (g.out[i] <= 0) return rt_kerr(c, d, GR_ERR_INVALID, "window larger than the padded input %s", RT_SHAPE_STR(x));
    }
    const DLDataType f32 = {kDLFloat, 32, 1};
    int64_t oshape[5] = {x->dl.shape[0], x->dl.shape[1], g.out[0], g.out[1], g.out[2]};
    rt_tensor *cx = rt_tensor_cast(x, f32), *o;
    if (!cx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, f32, 5, oshape, &o, d))) {
        rt_tensor_release(cx);
        return st;
    }
    int64_t NC = x->dl.shape[0] * x->dl.shape[1], isz = g.in[0] * g.in[1] * g.in[2];
    const float *xp = cx->dl.data;
    float *yp = o->dl.data;
    for (int64_t nc = 0; nc < NC; nc++) {
        const float *xc = xp + nc * isz;
        for (int64_t a = 0; a < g.out[0]; a++)
            for (int64_t b = 0; b < g.out[1]; b++)
                for (int64_t e = 0; e < g.out[2]; e++) {
                    float acc = is_max ? -INFINITY : 0.0f;
                    int64_t valid = 0, padded = 0;
                    for (int64_t kd = 0; kd < g.k[0]; kd++) {
                        int64_t id = a * g.s[0] - g.p0[0] + kd * g.dil[0];
                        if (id >= g.in[0] + g.p1[0]) break;
                        for (int64_t kh = 0; kh < g.k[1]; kh++) {
                            int64_t ih = b * g.s[1] - g.p0[1] + kh * g.dil[1];
                            if (ih >= g.in[1] + g.p1[1]) break;
                            for (int64_t kw = 0; kw < g.k[2]; kw++) {
                                int64_t iw = e * g.s[2] - g.p0[2] + kw * g.dil[2];
                                if (iw >= g.in[2] + g.p1[2]) break;
                                padded++;
                                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
                                valid++;
                                float v = xc[(id * g.in[1] + ih) * g.in[2] + iw];
                                if (is_max) acc = (v > acc || v != v) ? v : acc;
                                else acc += v;
                            }
                        }
                    }
                    if (!is_max) {
                        int64_t cnt = include_pad ? padded : valid;
                        acc = cnt > 0 ? acc / (float)cnt : 0.0f;
                    }
                    *yp++ = acc;
                }
    }
    rt_tensor_release(cx);
    return rt_kout_as(c, o, x->dl.dtype, out, d);
}

static gr_status k_conv3d(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv3d(c, o, d, false); }
static gr_status k_conv3d_t(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv3d(c, o, d, true); }
static gr_status k_max3(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_pool3d(c, o, d, true); }
static gr_status k_avg3(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_pool3d(c, o, d, false); }

const rt_kernel_entry rt_kernels_conv3d[] = {
    RT_K(CONV3D, k_conv3d),
    RT_K(CONV3D_TRANSPOSE, k_conv3d_t),
    RT_K(MAX_POOL3D, k_max3),
    RT_K(AVG_POOL3D, k_avg3),
};
RT_FAMILY_COUNT(conv3d, rt_kernels_conv3d);
