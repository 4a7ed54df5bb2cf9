/* Pooling: max/avg pool 1d/2d (padding, dilation, ceil_mode, count_include_pad) and adaptive
 * average pooling, NCW/NCHW layouts. 1-D pooling runs as 2-D with H = 1. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

typedef struct pool_geom {
    int64_t NC, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool include_pad;
} pool_geom;

/* Output length along one dim (ONNX/PyTorch rule: in ceil mode a window must start inside the
 * input or the left padding). */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t p0, int64_t p1,
                        bool ceil_mode) {
    int64_t span = in + p0 + p1 - dil * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

static void pool2d(const pool_geom *g, const float *x, float *y, bool is_max) {
    for (int64_t nc = 0; nc < g->NC; nc++) {
        const float *xc = x + nc * g->H * g->W;
        float *yc = y + nc * g->OH * g->OW;
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                int64_t h0 = oh * g->sh - g->pt, w0 = ow * g->sw - g->pl;
                float acc = is_max ? -INFINITY : 0.0f;
                int64_t cnt_valid = 0, cnt_pad = 0;
                for (int64_t i = 0; i < g->kh; i++) {
                    int64_t ih = h0 + i * g->dh;
                    if (ih >= g->H + g->pb) break;
                    bool hin = ih >= 0 && ih < g->H;
                    for (int64_t j = 0; j < g->kw; j++) {
                        int64_t iw = w0 + j * g->dw;
                        if (iw >= g->W + g->pr) break;
                        cnt_pad++;
                        if (!hin || iw < 0 || iw >= g->W) continue;
                        cnt_valid++;
                        float v = xc[ih * g->W + iw];
                        if (is_max) acc = (v > acc || v != v) ? v : acc;
                        else acc += v;
                    }
                }
                if (!is_max) {
                    int64_t cnt = g->include_pad ? cnt_pad : cnt_valid;
                    acc = cnt > 0 ? acc / (float)cnt : 0.0f;
                }
                yc[oh * g->OW + ow] = acc;
            }
    }
}

static gr_status run_pool(const rt_kernel_call *c, const rt_tensor *x, rt_value *out,
                          gr_diag *d, int sp, bool is_max) {
    gr_status st;
    /* max pooling of 8/16-bit integers is exact in float32 */
    bool int_ok = is_max && !rt_is_floatish(x->dl.dtype) && x->dl.dtype.bits <= 16;
    if (x->dl.ndim != sp + 2 || (!rt_is_floatish(x->dl.dtype) && !int_ok))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a rank-%d float tensor, got %s", sp + 2,
                       RT_SHAPE_STR(x));
    pool_geom g = {0};
    int64_t v[4];
    int n;
    g.kh = g.kw = 1;
    g.sh = g.sw = g.dh = g.dw = 1;
    if ((n = rt_attr_ints(c->attrs, "pool_size", v, 4)) > 0) {
        g.kw = v[n - 1];
        g.kh = sp == 2 ? v[0] : 1;
    }
    if ((n = rt_attr_ints(c->attrs, "strides", v, 4)) > 0) {
        g.sw = v[n - 1];
        g.sh = sp == 2 ? v[0] : 1;
    }
    if ((n = rt_attr_ints(c->attrs, "dilation", v, 4)) > 0) {
        g.dw = v[n - 1];
        g.dh = sp == 2 ? v[0] : 1;
    }
    if ((n = rt_attr_ints(c->attrs, "padding", v, 4)) > 0) {
        if (sp == 2 && n == 4) { g.pt = v[0]; g.pl = v[1]; g.pb = v[2]; g.pr = v[3]; }
        else if (sp == 2 && n == 2) { g.pt = g.pb = v[0]; g.pl = g.pr = v[1]; }
        else if (sp == 1 && n == 2) { g.pl = v[0]; g.pr = v[1]; }
        else if (n == 1) { g.pl = g.pr = v[0]; if (sp == 2) g.pt = g.pb = v[0]; }
        else return rt_kerr(c, d, GR_ERR_INVALID, "bad padding length %d", n);
    }
    bool ceil_mode = ir_attrs_get_bool(c->attrs, "ceil_mode", false);
    g.include_pad = ir_attrs_get_bool(c->attrs, "count_include_pad", false);
    if (g.kh <= 0 || g.kw <= 0 || g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0 || g.pt < 0 ||
        g.pl < 0 || g.pb < 0 || g.pr < 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "bad pool_size/strides/dilation/padding");
    g.NC = x->dl.shape[0] * x->dl.shape[1];
    g.H = sp == 2 ? x->dl.shape[2] : 1;
    g.W = x->dl.shape[sp + 1];
    g.OH = pool_out(g.H, g.kh, g.sh, g.dh, g.pt, g.pb, ceil_mode);
    g.OW = pool_out(g.W, g.kw, g.sw, g.dw, g.pl, g.pr, ceil_mode);
    if (g.OH <= 0 || g.OW <= 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "window larger than the padded input %s",
                       RT_SHAPE_STR(x));
    int64_t oshape[4] = {x->dl.shape[0], x->dl.shape[1], sp == 2 ? g.OH : g.OW, g.OW};
    const DLDataType f32 = {kDLFloat, 32, 1};
    rt_tensor *cx = rt_tensor_cast(x, f32), *o;
    if (!cx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, f32, sp + 2, oshape, &o, d))) {
        rt_tensor_release(cx);
        return st;
    }
    pool2d(&g, cx->dl.data, o->dl.data, is_max);
    rt_tensor_release(cx);
    return rt_kout_as(c, o, x->dl.dtype, out, d);
}

static gr_status run_adaptive(const rt_kernel_call *c, const rt_tensor *x, rt_value *out,
                              gr_diag *d, int sp, bool is_max) {
    gr_status st;
    if (x->dl.ndim != sp + 2 || !rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a rank-%d float tensor, got %s", sp + 2,
                       RT_SHAPE_STR(x));
    int64_t H = sp == 2 ? x->dl.shape[2] : 1, W = x->dl.shape[sp + 1];
    int64_t OH = H, OW = W, v[4];
    int n = rt_attr_ints(c->attrs, "output_size", v, 4);
    if (n > 0) {
        OW = v[n - 1];
        if (sp == 2) OH = v[0];
    }
    if (OH <= 0 || OW <= 0 || (H == 0 || W == 0))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad output_size for input %s", RT_SHAPE_STR(x));
    int64_t NC = x->dl.shape[0] * x->dl.shape[1];
    int64_t oshape[4] = {x->dl.shape[0], x->dl.shape[1], sp == 2 ? OH : OW, OW};
    const DLDataType f32 = {kDLFloat, 32, 1};
    rt_tensor *cx = rt_tensor_cast(x, f32), *o;
    if (!cx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, f32, sp + 2, oshape, &o, d))) {
        rt_tensor_release(cx);
        return st;
    }
    const float *xp = cx->dl.data;
    float *yp = o->dl.data;
    for (int64_t nc = 0; nc < NC; nc++)
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
                float acc = is_max ? -INFINITY : 0.0f;
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++) {
                        float e = xp[(nc * H + i) * W + j];
                        if (is_max) acc = e > acc ? e : acc;
                        else acc += e;
                    }
                if (!is_max) acc /= (float)((h1 - h0) * (w1 - w0));
                yp[(nc * OH + oh) * OW + ow] = acc;
            }
        }
    rt_tensor_release(cx);
    return rt_kout_as(c, o, x->dl.dtype, out, d);
}

/* Runs a pool on NC[H]W; other reorderings of the layout letters (NHWC, ...) run through
 * transposed copies. */
static gr_status run_layout(const rt_kernel_call *c, rt_value *out, gr_diag *d, int sp,
                            bool is_max, bool adaptive) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    const char *cl = sp == 2 ? "NCHW" : "NCW";
    const char *l = rt_attr_str(c->attrs, "layout", cl);
    const char *ol = rt_attr_str(c->attrs, "out_layout", "");
    if (!ol[0]) ol = l;
    int pin[4], pout[4];
    if (!rt_layout_perm(l, cl, pin) || !rt_layout_perm(cl, ol, pout))
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED,
                       "layout %s -> %s (the reference kernel supports reorderings of %s)", l, ol, cl);
    if (x->dl.ndim != sp + 2)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a rank-%d tensor, got %s", sp + 2,
                       RT_SHAPE_STR(x));
    bool id_in = strcmp(l, cl) == 0, id_out = strcmp(ol, cl) == 0;
    rt_tensor *xc = id_in ? rt_tensor_retain((rt_tensor *)x) : rt_tensor_permute(x, pin);
    if (!xc) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    st = adaptive ? run_adaptive(c, xc, out, d, sp, is_max) : run_pool(c, xc, out, d, sp, is_max);
    rt_tensor_release(xc);
    if (st || id_out) return st;
    rt_tensor *y = rt_tensor_permute(out->u.t, pout);
    rt_value_clear(out);
    if (!y) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    *out = rt_value_tensor(y);
    return GR_OK;
}

static gr_status k_max1(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 1, true, false); }
static gr_status k_max2(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 2, true, false); }
static gr_status k_avg1(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 1, false, false); }
static gr_status k_avg2(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 2, false, false); }
static gr_status k_aavg1(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 1, false, true); }
static gr_status k_aavg2(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 2, false, true); }
static gr_status k_amax2(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_layout(c, o, d, 2, true, true); }

const rt_kernel_entry rt_kernels_pool[] = {
    RT_K(MAX_POOL1D, k_max1),
    RT_K(MAX_POOL2D, k_max2),
    RT_K(AVG_POOL1D, k_avg1),
    RT_K(AVG_POOL2D, k_avg2),
    RT_K(ADAPTIVE_AVG_POOL1D, k_aavg1),
    RT_K(ADAPTIVE_AVG_POOL2D, k_aavg2),
    RT_K(ADAPTIVE_MAX_POOL2D, k_amax2),
};
RT_FAMILY_COUNT(pool, rt_kernels_pool);
