/* The engine's own max (and average) pooling of 2-D maps in the 8-channel blocked layout
 * (nChw8c), for ISAs below avx512_core: oneDNN 2.6's jit:avx2 max pooling runs 5-9x slower
 * than its avx512_core one on the same shapes (googlenet's 3x3 / 1 inception pools, 192-256
 * channels at 28 x 28, one thread: 0.64-0.79 ms against 0.08-0.14), far more than the vector
 * width explains. Here each output vector is the max (or the mean) of its window's vectors, 8
 * channels at a time; each thread of oneDNN's OpenMP team (rt_dnnl_parallel) takes a range of
 * output rows.
 *
 * Compiled for AVX2 (AVX2_FN); dnnl_op_elem.c only emits it when the CPU has AVX2 and FMA
 * (dn_avx2_kernels_ok). */
#include "backends/dnnl/dnnl_avx2_impl.h"

typedef struct pool_run {
    const dn_pool *p;
    const float *x;
    float *y;
} pool_run;

AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const pool_run *R = ctx;
    const dn_pool *p = R->p;
    bool avg = p->avg > 0.f;
    int64_t lo, hi;
    dn_split(p->N * p->Cb * p->OH, ithr, nthr, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t oh = r % p->OH, nc = r / p->OH, h0 = oh * p->sh - p->pt;
        const float *x = R->x + nc * p->H * p->W * 8;
        float *y = R->y + r * p->OW * 8;
        for (int64_t ow = 0; ow < p->OW; ow++) {
            int64_t w0 = ow * p->sw - p->pl;
            v8 m = _mm256_set1_ps(avg ? 0.f : -__builtin_inff());
            for (int64_t i = 0; i < p->kh; i++) {
                int64_t h = h0 + i * p->dh;
                if (h < 0 || h >= p->H) continue;
                const float *xr = x + h * p->W * 8;
                for (int64_t j = 0; j < p->kw; j++) {
                    int64_t w = w0 + j * p->dw;
                    if (w < 0 || w >= p->W) continue;
                    v8 v = _mm256_loadu_ps(xr + w * 8);
                    m = avg ? _mm256_add_ps(m, v) : _mm256_max_ps(v, m);
                }
            }
            _mm256_storeu_ps(y + ow * 8, avg ? _mm256_mul_ps(m, _mm256_set1_ps(p->avg)) : m);
        }
    }
}

dnnl_status_t dn_pool_run(void *ctx, void *const *ptrs) {
    pool_run R = {ctx, ptrs[0], ptrs[1]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}
