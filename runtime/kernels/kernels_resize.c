/* image.resize2d (NCHW or NHWC): nearest_neighbor / linear / cubic with TVM's coordinate
 * transformation modes and rounding methods (the ONNX Resize semantics), and ONNX's given
 * scales when the output size in * scale was fractional (attr scales). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

enum { CT_HALF, CT_ALIGN, CT_ASYM, CT_PT_HALF, CT_TF_NN, CT_TF_CROP };
enum { RM_ROUND, RM_PREFER_FLOOR, RM_PREFER_CEIL, RM_FLOOR, RM_CEIL };

static int lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* Input coordinate of output index x along a dim. inv is in / out, or 1 / the given scale;
 * align_corners then uses the unrounded output length in * scale, as ONNX. */
static double in_coord(int mode, int64_t x, int64_t in, int64_t out, double inv, bool given, double r0,
                       double r1) {
    double scale = inv, outf = given ? (double)in / inv : (double)out;
    switch (mode) {
    case CT_HALF: return (x + 0.5) * scale - 0.5;
    case CT_ALIGN: return out > 1 ? x * (double)(in - 1) / (outf - 1) : 0.0;
    case CT_ASYM: return x * scale;
    case CT_PT_HALF: return out > 1 ? (x + 0.5) * scale - 0.5 : 0.0;
    case CT_TF_NN: return (x + 0.5) * scale;
    default: /* tf_crop_and_resize */
        return out > 1 ? r0 * (in - 1) + x * (r1 - r0) * (in - 1) / (double)(out - 1)
                       : 0.5 * (r0 + r1) * (in - 1);
    }
}

static int64_t round_idx(int rm, double v) {
    switch (rm) {
    case RM_ROUND: return (int64_t)round(v);
    case RM_PREFER_FLOOR: return (int64_t)ceil(v - 0.5);
    case RM_PREFER_CEIL: return (int64_t)floor(v + 0.5);
    case RM_FLOOR: return (int64_t)floor(v);
    default: return (int64_t)ceil(v);
    }
}

static inline int64_t clampi(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

static void cubic_w(double t, double A, double w[4]) {
    double x;
    x = t + 1; w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;     w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t; w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t; w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

/* Sampling taps of one axis: for each output index, ntaps (input index, weight) pairs
 * (1 for nearest, 2 for linear, 4 for cubic) and whether it lies outside (tf_crop_and_resize). */
typedef struct axis_taps {
    int ntaps;
    int64_t *idx;
    float *w;
    uint8_t *outside;
} axis_taps;

static void taps_free(axis_taps *t) {
    free(t->idx);
    free(t->w);
    free(t->outside);
}

static bool taps_init(axis_taps *t, int64_t out, int64_t in, int method, int ct, int rm, double A,
                      bool exclude, double inv, bool given, double r0, double r1) {
    t->ntaps = method == 0 ? 1 : method == 1 ? 2 : 4;
    t->idx = malloc(sizeof(int64_t) * (size_t)(out * t->ntaps));
    t->w = malloc(sizeof(float) * (size_t)(out * t->ntaps));
    t->outside = calloc((size_t)out, 1);
    if (!t->idx || !t->w || !t->outside) return false;
    for (int64_t o = 0; o < out; o++) {
        double v = in_coord(ct, o, in, out, inv, given, r0, r1);
        int64_t *ix = t->idx + o * t->ntaps;
        float *w = t->w + o * t->ntaps;
        t->outside[o] = ct == CT_TF_CROP && (v < 0 || v > in - 1);
        if (method == 0) {
            ix[0] = clampi(round_idx(rm, v), in);
            w[0] = 1.0f;
        } else if (method == 1) {
            double f = floor(v), tt = v - f;
            ix[0] = clampi((int64_t)f, in);
            ix[1] = clampi((int64_t)f + 1, in);
            w[0] = (float)(1 - tt);
            w[1] = (float)tt;
        } else {
            double f = floor(v), cw[4], sum = 0;
            cubic_w(v - f, A, cw);
            for (int k = 0; k < 4; k++) {
                int64_t p = (int64_t)f - 1 + k;
                if (exclude && (p < 0 || p >= in)) cw[k] = 0;
                sum += cw[k];
                ix[k] = clampi(p, in);
            }
            for (int k = 0; k < 4; k++) w[k] = (float)(exclude ? (sum != 0 ? cw[k] / sum : 0) : cw[k]);
        }
    }
    return true;
}

static gr_status k_resize2d(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    if (x->dl.ndim != 4 || !rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a rank-4 float tensor, got %s", RT_SHAPE_STR(x));
    int64_t size[RT_MAX_NDIM];
    int ns = rt_value_ints(&c->args[1], size, RT_MAX_NDIM);
    if (ns == 1) size[1] = size[0];
    else if (ns != 2) return rt_kerr(c, d, GR_ERR_INVALID, "size must have 2 values");
    static const char *const CTS[] = {"half_pixel", "align_corners", "asymmetric",
                                      "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                      "tf_crop_and_resize"};
    static const char *const RMS[] = {"round", "round_prefer_floor", "round_prefer_ceil",
                                      "floor", "ceil"};
    static const char *const METHODS[] = {"nearest_neighbor", "linear", "cubic"};
    const char *layout = rt_attr_str(c->attrs, "layout", "NCHW");
    const char *ms = rt_attr_str(c->attrs, "method", "linear");
    const char *cts = rt_attr_str(c->attrs, "coordinate_transformation_mode", "half_pixel");
    const char *rms = rt_attr_str(c->attrs, "rounding_method", "round");
    int method = lookup(ms, METHODS, 3), ct = lookup(cts, CTS, 6);
    int rm = rms[0] ? lookup(rms, RMS, 5) : (ct == CT_ALIGN ? RM_ROUND : RM_FLOOR);
    bool nhwc = strcmp(layout, "NHWC") == 0;
    if (method < 0 || ct < 0 || rm < 0 || (!nhwc && strcmp(layout, "NCHW")))
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "method \"%s\", mode \"%s\", rounding \"%s\", layout %s",
                       ms, cts, rms, layout);
    double A = ir_attrs_get_float(c->attrs, "cubic_alpha", -0.5);
    bool exclude = ir_attrs_get_int(c->attrs, "cubic_exclude", 0) != 0;
    double extrap = ir_attrs_get_float(c->attrs, "extrapolation_value", 0.0);
    double roi[4] = {0, 0, 1, 1};
    const ir_attr *ra = ir_attrs_get(c->attrs, "roi");
    if (ra && ra->kind == IR_ATTR_ARRAY && ra->u.arr.n == 4)
        for (int i = 0; i < 4; i++) {
            const ir_attr *it = &ra->u.arr.items[i];
            roi[i] = it->kind == IR_ATTR_FLOAT ? it->u.f : it->kind == IR_ATTR_INT ? (double)it->u.i : 0;
        }
    /* scales (h, w): ONNX's coordinate mapping with the given scale; None: out / in */
    double inv[2] = {0, 0};
    const ir_attr *sa = ir_attrs_get(c->attrs, "scales");
    if (sa && sa->kind == IR_ATTR_ARRAY) {
        if (sa->u.arr.n != 2) return rt_kerr(c, d, GR_ERR_INVALID, "scales must have 2 values");
        for (int i = 0; i < 2; i++) {
            const ir_attr *it = &sa->u.arr.items[i];
            double v = it->kind == IR_ATTR_FLOAT ? it->u.f : it->kind == IR_ATTR_INT ? (double)it->u.i : 0;
            if (!(v > 0 && v <= 1e6)) return rt_kerr(c, d, GR_ERR_INVALID, "scale %g out of range", v);
            inv[i] = 1.0 / v;
        }
    }
    int64_t N = x->dl.shape[0], C = nhwc ? x->dl.shape[3] : x->dl.shape[1];
    int64_t H = nhwc ? x->dl.shape[1] : x->dl.shape[2], W = nhwc ? x->dl.shape[2] : x->dl.shape[3];
    int64_t OH = size[0], OW = size[1];
    if (OH <= 0 || OW <= 0 || H <= 0 || W <= 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "bad size %s for input %s", RT_DIMS_STR(2, size), RT_SHAPE_STR(x));
    /* strides in elements of (n, c, h, w) */
    int64_t sn = C * H * W, sc = nhwc ? 1 : H * W, sh = nhwc ? W * C : W, sw = nhwc ? C : 1;
    int64_t osn = C * OH * OW, osc = nhwc ? 1 : OH * OW, osh = nhwc ? OW * C : OW, osw = nhwc ? C : 1;
    int64_t oshape[4] = {N, nhwc ? OH : C, nhwc ? OW : OH, nhwc ? C : OW};
    const DLDataType f32 = {kDLFloat, 32, 1};
    rt_tensor *cx = rt_tensor_cast(x, f32), *o;
    if (!cx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, f32, 4, oshape, &o, d))) {
        rt_tensor_release(cx);
        return st;
    }
    /* Per-axis taps (index, weight) computed once, then a contiguous loop per output row. */
    axis_taps ty, tx;
    if (!taps_init(&ty, OH, H, method, ct, rm, A, exclude, inv[0] > 0 ? inv[0] : (double)H / (double)OH, inv[0] > 0,
                   roi[0], roi[2]) ||
        !taps_init(&tx, OW, W, method, ct, rm, A, exclude, inv[1] > 0 ? inv[1] : (double)W / (double)OW, inv[1] > 0,
                   roi[1], roi[3])) {
        taps_free(&ty);
        taps_free(&tx);
        rt_tensor_release(cx);
        rt_tensor_release(o);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    const float *xp = cx->dl.data;
    float *yp = o->dl.data;
    int nt = ty.ntaps;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            const float *src = xp + n * sn + ch * sc;
            for (int64_t oh = 0; oh < OH; oh++) {
                float *dst = yp + n * osn + ch * osc + oh * osh;
                const int64_t *yi = ty.idx + oh * nt;
                const float *wy = ty.w + oh * nt;
                for (int64_t ow = 0; ow < OW; ow++) {
                    float *dp = dst + ow * osw;
                    if (ty.outside[oh] || tx.outside[ow]) {
                        *dp = (float)extrap;
                        continue;
                    }
                    const int64_t *xi = tx.idx + ow * nt;
                    const float *wx = tx.w + ow * nt;
                    if (nt == 1) {
                        *dp = src[yi[0] * sh + xi[0] * sw];
                        continue;
                    }
                    float acc = 0.0f;
                    for (int a = 0; a < nt; a++) {
                        const float *row = src + yi[a] * sh;
                        float r = 0.0f;
                        for (int b = 0; b < nt; b++) r += wx[b] * row[xi[b] * sw];
                        acc += wy[a] * r;
                    }
                    *dp = acc;
                }
            }
        }
    taps_free(&ty);
    taps_free(&tx);
    rt_tensor_release(cx);
    ir_dtype odt = rt_attr_dtype(c->attrs, "out_dtype", x->dl.dtype);
    return rt_kout_as(c, o, odt, out, d);
}

const rt_kernel_entry rt_kernels_resize[] = {
    RT_K(RESIZE2D, k_resize2d),
};
RT_FAMILY_COUNT(resize, rt_kernels_resize);
