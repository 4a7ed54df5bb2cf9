/* The engine's own max (and average) pooling of 2-D maps in the 8-channel blocked layout
 * (nChw8c), for ISAs below avx512_core: oneDNN 2.6's jit:avx2 max pooling runs 5-9x slower
 * than its avx512_core one on the same shapes (googlenet's 3x3 / 1 inception pools, 192-256
 * channels at 28 x 28, one thread: 0.64-0.79 ms against 0.08-0.14), far more than the vector
 * width explains. Here each output vector is the max (or the mean) of its window's vectors, 8
 * channels at a time, reduced over the window's rows and then its columns (pool_row); each
 * thread of oneDNN's OpenMP team (rt_dnnl_parallel) takes a range of output rows. googlenet's
 * 13 max pools under ONEDNN_MAX_CPU_ISA=AVX2, one thread, min of 12 runs (CPU time): 2.16 ->
 * 0.64 ms (ONNX Runtime's AVX-512 ones 0.68).
 *
 * Compiled for AVX2 (AVX2_FN); dnnl_op_elem.c only emits it when the CPU has AVX2 and FMA
 * (dn_avx2_kernels_ok). */
#include "backends/dnnl/dnnl_avx2_impl.h"

typedef struct pool_run {
    const dn_pool *p;
    const float *x;
    float *y;
} pool_run;

/* Output row r: a strip of at most DN_POOL_SPAN input columns at a time, first every column's
 * reduction over the window's rows (cm), then each output's over its window's columns of cm. A
 * column then serves every window that holds it (3x3 / 1: 6 loads and 4 ops an output instead
 * of 9 and 8). Columns in the padding hold the reduction's identity. Inlined with constant
 * avg, kw, sw and dw for the common windows (pool_row's callers), so the loops unroll. */
AVX2_FN static inline __attribute__((always_inline)) void pool_row(const pool_run *R, int64_t r, bool avg, int64_t kw,
                                                                   int64_t sw, int64_t dw) {
    const dn_pool *p = R->p;
    v8 init = _mm256_set1_ps(avg ? 0.f : -__builtin_inff()), cm[DN_POOL_SPAN];
    int64_t span = (kw - 1) * dw + 1, per = (DN_POOL_SPAN - span) / sw + 1;
    int64_t oh = r % p->OH, nc = r / p->OH, h0 = oh * p->sh - p->pt;
    const float *x = R->x + nc * p->H * p->W * 8, *rows[DN_POOL_ROWS];
    float *y = R->y + r * p->OW * 8;
    int nr = 0;
    for (int64_t i = 0; i < p->kh; i++) {
        int64_t h = h0 + i * p->dh;
        if (h >= 0 && h < p->H) rows[nr++] = x + h * p->W * 8;
    }
    for (int64_t a = 0; a < p->OW; a += per) {
        int64_t b = a + per < p->OW ? a + per : p->OW, c0 = a * sw - p->pl, ncol = (b - 1 - a) * sw + span;
        for (int64_t c = 0; c < ncol; c++) {
            int64_t w = c0 + c;
            v8 m = init;
            if (w >= 0 && w < p->W) {
                if (nr == 3 && !avg) /* unrolled; max(v, m) as below: a NaN v leaves m */
                    m = _mm256_max_ps(_mm256_loadu_ps(rows[2] + w * 8),
                                      _mm256_max_ps(_mm256_loadu_ps(rows[1] + w * 8), _mm256_max_ps(_mm256_loadu_ps(rows[0] + w * 8), m)));
                else
                    for (int i = 0; i < nr; i++) {
                        v8 v = _mm256_loadu_ps(rows[i] + w * 8);
                        m = avg ? _mm256_add_ps(m, v) : _mm256_max_ps(v, m);
                    }
            }
            cm[c] = m;
        }
        for (int64_t ow = a; ow < b; ow++) {
            const v8 *c = cm + (ow - a) * sw;
            v8 m = c[0];
            for (int64_t j = 1; j < kw; j++) m = avg ? _mm256_add_ps(m, c[j * dw]) : _mm256_max_ps(c[j * dw], m);
            _mm256_storeu_ps(y + ow * 8, avg ? _mm256_mul_ps(m, _mm256_set1_ps(p->avg)) : m);
        }
    }
}

AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const pool_run *R = ctx;
    const dn_pool *p = R->p;
    bool avg = p->avg > 0.f, k3 = p->kw == 3 && p->dw == 1 && !avg;
    int64_t lo, hi;
    dn_split(p->N * p->Cb * p->OH, ithr, nthr, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        if (k3 && p->sw == 1) pool_row(R, r, false, 3, 1, 1);
        else if (k3 && p->sw == 2) pool_row(R, r, false, 3, 2, 1);
        else if (avg && p->kw == 2 && p->sw == 2 && p->dw == 1) pool_row(R, r, true, 2, 2, 1);
        else pool_row(R, r, avg, p->kw, p->sw, p->dw);
    }
}

dnnl_status_t dn_pool_run(void *ctx, void *const *ptrs) {
    pool_run R = {ctx, ptrs[0], ptrs[1]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}
