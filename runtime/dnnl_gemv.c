/* The engine's own matrix product for few rows and constant weights (a classifier head,
 * 1 x 1280 . 1280 x 1000 + bias): y[M][N] = x[M][K] . W[K][N] (+ bias) (+ eltwise ops).
 *
 * Such a product reads each weight once for at most a few multiply-adds, so its time is the
 * time to stream the weights from memory. The weights are packed once at prepare into panels
 * of 16 columns, each panel K rows of 16 floats (one cache line a row; the last panel has the
 * N % 16 columns left, rows of that many floats), so that each thread reads one contiguous
 * range of memory: the panels are split over oneDNN's OpenMP team (rt_dnnl_parallel), each
 * thread computing its columns for every row of x. The packed buffer is the engine's copy of
 * the weights (the original is released, runtime/json_runtime.h "Constant ownership") and is
 * allocated on transparent huge pages where it spans them (dn_owned_alloc): between runs the
 * rest of the model evicts the weights and their page translations, and a 4 KiB page walk
 * per 4 KiB of weights halved the bandwidth (see dn_gemv_eligible in dnnl_ops.c for figures).
 *
 * Compiled for AVX2 + FMA (AVX2_FN; the library itself for generic x86-64): dn_gemv_run must
 * only run when the CPU has them (dnnl_ops.c checks). AVX2 is enough at every ISA: the
 * product is bound by memory, not by the width of the multiply-adds. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/dnnl_impl.h"

typedef __m256 v8;

#define AVX2_FN __attribute__((target("avx2,fma")))

void dn_gemv_pack(const dn_gemv *p, const float *w, int64_t sk, int64_t sn, float *out) {
    for (int64_t n0 = 0; n0 < p->N; n0 += DN_GEMV_PANEL) {
        int64_t wd = p->N - n0 < DN_GEMV_PANEL ? p->N - n0 : DN_GEMV_PANEL;
        float *o = out + n0 * p->K;
        for (int64_t k = 0; k < p->K; k++)
            for (int64_t c = 0; c < wd; c++) o[k * wd + c] = w[k * sk + (n0 + c) * sn];
    }
}

/* lanes [0, n) of a vector of 8 (n may be <= 0 or >= 8) */
AVX2_FN static inline __m256i lanes(int64_t n) {
    int t = n < 0 ? 0 : n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(t), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AVX2_FN static inline v8 apply_ops(const dn_gemv *p, v8 y) {
    for (int i = 0; i < p->nops; i++) {
        const dn_gemv_op *op = &p->ops[i];
        switch (op->kind) {
        case DN_GEMV_RELU: {
            v8 neg = _mm256_mul_ps(y, _mm256_set1_ps(op->alpha));
            y = _mm256_blendv_ps(y, neg, _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ));
            break;
        }
        case DN_GEMV_LINEAR: y = _mm256_fmadd_ps(y, _mm256_set1_ps(op->alpha), _mm256_set1_ps(op->beta)); break;
        case DN_GEMV_CLIP:
            y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(op->alpha)), _mm256_set1_ps(op->beta));
            break;
        case DN_GEMV_HARDSWISH: {
            v8 r6 = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(y, _mm256_set1_ps(3.f)), _mm256_setzero_ps()),
                                  _mm256_set1_ps(6.f));
            y = _mm256_mul_ps(y, _mm256_mul_ps(r6, _mm256_set1_ps(1.f / 6.f)));
            break;
        }
        }
    }
    return y;
}

/* Rows [m0, m0 + mr) of one panel: columns [n0, n0 + wd) of the result from the panel's K
 * rows of wd floats at wp. mr (1 to 4) and full (wd == 16: plain loads, else masked ones) are
 * constants at each call, so that the sums stay in registers. */
#define INLINE inline __attribute__((always_inline))
AVX2_FN static INLINE void panel(const dn_gemv *p, const float *x, const float *bias, float *y, const float *wp,
                                 int64_t n0, int64_t wd, int64_t m0, const int mr, const bool full) {
    int64_t K = p->K;
    __m256i mk0 = lanes(wd), mk1 = lanes(wd - 8);
    /* the sums in named variables, not an array, so that none lives in memory */
    v8 z = _mm256_setzero_ps(), s00 = z, s01 = z, s10 = z, s11 = z, s20 = z, s21 = z, s30 = z, s31 = z;
    const float *xr = x + m0 * K;
    int64_t k = 0;
    if (mr == 1 && full) {
        /* one row: two k at a time into two pairs of sums, so that the adds of one do not
         * wait for the other's (the latency of a multiply-add is 4-5 cycles) */
        for (; k + 2 <= K; k += 2) {
            const float *wk = wp + k * 16;
            v8 x0 = _mm256_broadcast_ss(xr + k), x1 = _mm256_broadcast_ss(xr + k + 1);
            s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(wk), s00);
            s01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(wk + 8), s01);
            s10 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(wk + 16), s10);
            s11 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(wk + 24), s11);
        }
        s00 = _mm256_add_ps(s00, s10);
        s01 = _mm256_add_ps(s01, s11);
    }
    for (; k < K; k++) {
        const float *wk = wp + k * wd;
        v8 w0 = full ? _mm256_loadu_ps(wk) : _mm256_maskload_ps(wk, mk0);
        v8 w1 = full ? _mm256_loadu_ps(wk + 8) : _mm256_maskload_ps(wk + 8, mk1);
        v8 xv = _mm256_broadcast_ss(xr + k);
        s00 = _mm256_fmadd_ps(xv, w0, s00);
        s01 = _mm256_fmadd_ps(xv, w1, s01);
        if (mr > 1) {
            xv = _mm256_broadcast_ss(xr + K + k);
            s10 = _mm256_fmadd_ps(xv, w0, s10);
            s11 = _mm256_fmadd_ps(xv, w1, s11);
        }
        if (mr > 2) {
            xv = _mm256_broadcast_ss(xr + 2 * K + k);
            s20 = _mm256_fmadd_ps(xv, w0, s20);
            s21 = _mm256_fmadd_ps(xv, w1, s21);
        }
        if (mr > 3) {
            xv = _mm256_broadcast_ss(xr + 3 * K + k);
            s30 = _mm256_fmadd_ps(xv, w0, s30);
            s31 = _mm256_fmadd_ps(xv, w1, s31);
        }
    }
    v8 acc[4][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}};
    v8 b0 = _mm256_setzero_ps(), b1 = b0;
    if (bias) {
        b0 = full ? _mm256_loadu_ps(bias + n0) : _mm256_maskload_ps(bias + n0, mk0);
        b1 = full ? _mm256_loadu_ps(bias + n0 + 8) : _mm256_maskload_ps(bias + n0 + 8, mk1);
    }
    for (int r = 0; r < mr; r++) {
        float *yr = y + (m0 + r) * p->N + n0;
        v8 y0 = apply_ops(p, _mm256_add_ps(acc[r][0], b0)), y1 = apply_ops(p, _mm256_add_ps(acc[r][1], b1));
        if (full) {
            _mm256_storeu_ps(yr, y0);
            _mm256_storeu_ps(yr + 8, y1);
        } else {
            _mm256_maskstore_ps(yr, mk0, y0);
            _mm256_maskstore_ps(yr + 8, mk1, y1);
        }
    }
}

/* panel() with mr and full as constants */
AVX2_FN static void panel_any(const dn_gemv *p, const float *x, const float *bias, float *y, const float *wp,
                              int64_t n0, int64_t wd, int64_t m0, int mr) {
#define PANEL(R)                                                                                                         \
    case R:                                                                                                            \
        if (wd == DN_GEMV_PANEL) panel(p, x, bias, y, wp, n0, wd, m0, R, true);                                        \
        else panel(p, x, bias, y, wp, n0, wd, m0, R, false);                                                           \
        break;
    switch (mr) {
        PANEL(1)
        PANEL(2)
        PANEL(3)
        PANEL(4)
    }
#undef PANEL
}

typedef struct gemv_run {
    const dn_gemv *p;
    const float *x, *bias;
    float *y;
} gemv_run;

/* a thread's panels, one contiguous range of the packed weights */
AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const gemv_run *R = ctx;
    const dn_gemv *p = R->p;
    int64_t np = (p->N + DN_GEMV_PANEL - 1) / DN_GEMV_PANEL, q = np / nthr, rem = np % nthr;
    int64_t lo = ithr * q + (ithr < rem ? ithr : rem), hi = lo + q + (ithr < rem);
    for (int64_t j = lo; j < hi; j++) {
        int64_t n0 = j * DN_GEMV_PANEL, wd = p->N - n0 < DN_GEMV_PANEL ? p->N - n0 : DN_GEMV_PANEL;
        const float *wp = p->w + n0 * p->K;
        for (int64_t m0 = 0; m0 < p->M; m0 += 4) {
            panel_any(p, R->x, R->bias, R->y, wp, n0, wd, m0, p->M - m0 < 4 ? (int)(p->M - m0) : 4);
        }
    }
}

dnnl_status_t dn_gemv_run(void *ctx, void *const *ptrs) {
    const dn_gemv *p = ctx;
    gemv_run R = {p, ptrs[0], p->ix_bias >= 0 ? ptrs[p->ix_bias] : NULL, ptrs[1]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}
