/* Signal generators: HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix. Their
 * outputs depend only on scalar inputs, so they are computed at import (folded) into constants
 * carrying the node's span; inputs not known at import are reported as unsupported. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

static bool out_dtype(onnx_cv *cv, ir_dtype *dt) {
    return onnx_dtype_from_elem((int32_t)cv_attr_int(cv, "output_datatype", 1), dt) &&
           !ir_dtype_eq(*dt, IR_DTYPE_BOOL);
}

static bool known_scalar(onnx_cv *cv, uint32_t i, double *v) {
    rt_tensor *t = cv_has(cv, i) ? cv_known(cv, i) : NULL;
    if (!t || rt_tensor_numel(t) != 1) return false;
    *v = rt_tensor_get_f64(t, 0);
    return true;
}

/* cos-sum windows: a0 - a1 cos(2 pi n / M) + a2 cos(4 pi n / M), M = N (periodic) or N - 1 */
int onnx_fold_window(onnx_cv *cv) {
    double size;
    ir_dtype dt;
    if (!known_scalar(cv, 0, &size) || !out_dtype(cv, &dt)) return 0;
    if (!(size >= 0 && size <= (1 << 24))) return cv_fail(cv, GR_ERR_INVALID, "size out of range");
    const char *t = cv->node->op_type;
    double a0 = 0.5, a1 = 0.5, a2 = 0;
    if (!strcmp(t, "HammingWindow")) a0 = 25.0 / 46.0, a1 = 1 - a0;
    else if (!strcmp(t, "BlackmanWindow")) a0 = 0.42, a1 = 0.5, a2 = 0.08;
    int64_t n = (int64_t)size;
    double M = cv_attr_int(cv, "periodic", 1) ? (double)n : (double)(n - 1);
    if (M <= 0) M = 1;
    rt_tensor *w = rt_tensor_new(dt, 1, &n);
    if (!w) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        double x = 2 * M_PI * (double)i / M;
        onnx_tensor_set_f64(w, i, a0 - a1 * cos(x) + a2 * cos(2 * x));
    }
    cv_set_known(cv, 0, w);
    return 1;
}

gr_status onnx_cv_window(onnx_cv *cv) {
    ir_dtype dt;
    if (!out_dtype(cv, &dt)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "output_datatype");
    int64_t v;
    if (cv_ints(cv, 0, &v, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "size must be known at import");
    return cv_fail(cv, GR_ERR_INVALID, "size is not a scalar");
}

/* Triangular mel filters over linear-frequency bins, as ONNX's reference: num_mel_bins + 2
 * points equally spaced in mel between the edges, mapped to bins floor((dft_length + 1) * f /
 * sample_rate); output (dft_length / 2 + 1, num_mel_bins). */
int onnx_fold_mel(onnx_cv *cv) {
    double nm, dl, sr, lo, hi;
    ir_dtype dt;
    if (!known_scalar(cv, 0, &nm) || !known_scalar(cv, 1, &dl) || !known_scalar(cv, 2, &sr) ||
        !known_scalar(cv, 3, &lo) || !known_scalar(cv, 4, &hi) || !out_dtype(cv, &dt))
        return 0;
    if (!(nm >= 1 && nm <= 1 << 20 && dl >= 1 && dl <= 1 << 24 && sr > 0 && lo >= 0 && hi > lo))
        return cv_fail(cv, GR_ERR_INVALID, "num_mel_bins, dft_length, sample_rate or edges out of range");
    int64_t mels = (int64_t)nm, dft = (int64_t)dl, bins = dft / 2 + 1;
    int64_t shape[2] = {bins, mels};
    rt_tensor *w = rt_tensor_new(dt, 2, shape);
    int64_t *pts = gr_xmalloc(sizeof(int64_t) * (size_t)(mels + 2));
    if (!w) {
        free(pts);
        return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    }
    double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700);
    double step = (hmel - lmel) / (double)(mels + 2);
    for (int64_t i = 0; i < mels + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lmel) / 2595) - 1);
        pts[i] = (int64_t)floor((double)(dft + 1) * hz / sr);
    }
    for (int64_t m = 0; m < mels; m++) {
        int64_t l = pts[m], c = pts[m + 1], h = pts[m + 2];
        if (l < 0 || h >= bins || l > c || c > h) continue;
        if (c == l) onnx_tensor_set_f64(w, c * mels + m, 1);
        else
            for (int64_t j = l; j <= c; j++) onnx_tensor_set_f64(w, j * mels + m, (double)(j - l) / (double)(c - l));
        if (h > c)
            for (int64_t j = c; j < h; j++) onnx_tensor_set_f64(w, j * mels + m, (double)(h - j) / (double)(h - c));
    }
    free(pts);
    cv_set_known(cv, 0, w);
    return 1;
}

gr_status onnx_cv_mel(onnx_cv *cv) {
    for (uint32_t i = 0; i < 5 && i < cv->nin; i++) (void)cv_known(cv, i); /* asks for the values */
    return cv_fail(cv, GR_ERR_UNSUPPORTED, "num_mel_bins, dft_length, sample_rate and the edges must be known at import");
}

/* DFT (opset 17-19: axis and onesided attributes, dft_length an optional input known at
 * import). */
gr_status onnx_cv_dft(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 2) return cv_fail(cv, GR_ERR_INVALID, "input rank %d (needs batch, signal and a complex dim)", (int)rank);
    int64_t len = 0;
    if (cv_has(cv, 1)) {
        if (cv_ints(cv, 1, &len, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "dft_length must be known at import");
        if (len <= 0 || len > ONNX_DIM_MAX) return cv_fail(cv, GR_ERR_INVALID, "dft_length out of range");
    }
    int64_t axis = cv_attr_int(cv, "axis", 1);
    if (!cv_axis(axis, rank - 1, &axis)) return cv_fail(cv, GR_ERR_INVALID, "axis out of range");
    bool inverse = cv_attr_int(cv, "inverse", 0) != 0, onesided = cv_attr_int(cv, "onesided", 0) != 0;
    if (inverse && onesided) return cv_fail(cv, GR_ERR_UNSUPPORTED, "onesided inverse DFT");
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    cv_set(&at, "inverse", ir_attr_bool(inverse));
    cv_set(&at, "onesided", ir_attr_bool(onesided));
    cv_set(&at, "dft_length", ir_attr_int(len));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_DFT, x, &at));
}

/* STFT: frame_step (and frame_length when given) known at import; the window a tensor. */
gr_status onnx_cv_stft(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t step, fl = 0;
    if (cv_ints(cv, 1, &step, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "frame_step must be known at import");
    if (cv_has(cv, 3) && cv_ints(cv, 3, &fl, 1) != 1)
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "frame_length must be known at import");
    ir_expr *win = NULL;
    if (cv_has(cv, 2)) {
        if (!(win = cv_in(cv, 2))) return cv_status(cv);
        const ir_prim *const *wd = cv_prim_dims(cv, 2);
        int64_t wl;
        if (cv_rank(cv, 2) != 1 || !wd || !ir_prim_is_int(wd[0], &wl))
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "the window must be 1-D with a known length");
        if (fl == 0) fl = wl;
        else if (fl != wl) return cv_fail(cv, GR_ERR_INVALID, "frame_length %lld and window length %lld differ", (long long)fl, (long long)wl);
    }
    if (step <= 0 || fl <= 0 || step > ONNX_DIM_MAX || fl > ONNX_DIM_MAX)
        return cv_fail(cv, GR_ERR_INVALID, "frame_step / frame_length out of range (or neither frame_length nor window given)");
    cv_attrs at = {0};
    cv_set(&at, "frame_step", ir_attr_int(step));
    cv_set(&at, "frame_length", ir_attr_int(fl));
    cv_set(&at, "onesided", ir_attr_bool(cv_attr_int(cv, "onesided", 1) != 0));
    ir_expr *args[2] = {x, win};
    return cv_out(cv, 0, cv_call(cv, IR_OP_STFT, win ? 2 : 1, args, &at));
}
