/* Spectral ops with ONNX's semantics: dft (real or complex input, last dim 1 or 2; forward or
 * inverse; dft_length pads with zeros or truncates; onesided keeps bins 0..n/2) and stft
 * (frames of frame_length every frame_step samples, times the window, onesided by default).
 * Direct O(n^2) sums in double: a reference, not an FFT. */
#include <math.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* One transform of n_in complex samples (re/im at stride `is` elements, pairs interleaved when
 * cplx) into nbins of an n-point DFT, written as (re, im) pairs at stride `os`. */
static void dft1(const float *x, int64_t is, bool cplx, int64_t n_in, int64_t n, int64_t nbins, bool inverse,
                 const float *win, float *y, int64_t os) {
    double sign = inverse ? 1.0 : -1.0;
    int64_t m = n_in < n ? n_in : n;
    for (int64_t k = 0; k < nbins; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < m; t++) {
            double w = win ? win[t] : 1.0;
            double xr = x[t * is] * w, xi = cplx ? x[t * is + 1] * w : 0.0;
            double ang = sign * 2.0 * M_PI * (double)(((uint64_t)k * (uint64_t)t) % (uint64_t)n) / (double)n;
            double cr = cos(ang), ci = sin(ang);
            re += xr * cr - xi * ci;
            im += xr * ci + xi * cr;
        }
        if (inverse) re /= (double)n, im /= (double)n;
        y[k * os] = (float)re;
        y[k * os + 1] = (float)im;
    }
}

static gr_status k_dft(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    if (nd < 2 || !rt_is_f32(x->dl.dtype) || (x->dl.shape[nd - 1] != 1 && x->dl.shape[nd - 1] != 2))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects float32 (..., 1 | 2), got %s", RT_SHAPE_STR(x));
    int64_t axis = 1, len = 0;
    rt_attr_ints(c->attrs, "axis", &axis, 1);
    rt_attr_ints(c->attrs, "dft_length", &len, 1);
    if (!rt_norm_axis(&axis, nd - 1)) return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
    bool inverse = ir_attrs_get_bool(c->attrs, "inverse", false), onesided = ir_attrs_get_bool(c->attrs, "onesided", false);
    bool cplx = x->dl.shape[nd - 1] == 2;
    int64_t n_in = x->dl.shape[axis], n = len > 0 ? len : n_in, nbins = onesided ? n / 2 + 1 : n;
    int64_t oshape[RT_MAX_NDIM];
    memcpy(oshape, x->dl.shape, sizeof(int64_t) * (size_t)nd);
    oshape[axis] = nbins;
    oshape[nd - 1] = 2;
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, x->dl.dtype, nd, oshape, &o, d))) return st;
    int64_t outer = rt_numel((int)axis, x->dl.shape), inner = rt_numel(nd - 1 - (int)axis - 1, x->dl.shape + axis + 1);
    int64_t ce = x->dl.shape[nd - 1];
    const float *xd = rt_tensor_data(x);
    float *yd = rt_tensor_data(o);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++)
            dft1(xd + (a * n_in * inner + b) * ce, inner * ce, cplx, n_in, n, nbins, inverse, NULL,
                 yd + (a * nbins * inner + b) * 2, inner * 2);
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_stft(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *win = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    if (c->nargs > 1 && (st = rt_arg_tensor(c, 1, &win, d))) return st;
    if (win && rt_tensor_numel(win) == 0) win = NULL;
    int64_t step = 0, fl = 0;
    rt_attr_ints(c->attrs, "frame_step", &step, 1);
    rt_attr_ints(c->attrs, "frame_length", &fl, 1);
    bool onesided = ir_attrs_get_bool(c->attrs, "onesided", true);
    if (x->dl.ndim != 3 || !rt_is_f32(x->dl.dtype) || (x->dl.shape[2] != 1 && x->dl.shape[2] != 2) || step <= 0 || fl <= 0 ||
        fl > x->dl.shape[1])
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a float32 (N, L, 1 | 2) signal with 0 < frame_length <= L, got %s",
                       RT_SHAPE_STR(x));
    if (win && (rt_tensor_numel(win) != fl || !rt_is_f32(win->dl.dtype)))
        return rt_kerr(c, d, GR_ERR_INVALID, "window %s does not match frame_length %lld", RT_SHAPE_STR(win), (long long)fl);
    int64_t N = x->dl.shape[0], L = x->dl.shape[1], ce = x->dl.shape[2];
    int64_t frames = (L - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
    int64_t oshape[4] = {N, frames, bins, 2};
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, x->dl.dtype, 4, oshape, &o, d))) return st;
    const float *xd = rt_tensor_data(x), *wd = win ? rt_tensor_data(win) : NULL;
    float *yd = rt_tensor_data(o);
    for (int64_t n = 0; n < N; n++)
        for (int64_t f = 0; f < frames; f++)
            dft1(xd + (n * L + f * step) * ce, ce, ce == 2, fl, fl, bins, false, wd, yd + ((n * frames + f) * bins) * 2, 2);
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_signal[] = {
    RT_K(DFT, k_dft),
    RT_K(STFT, k_stft),
};
RT_FAMILY_COUNT(signal, rt_kernels_signal);
