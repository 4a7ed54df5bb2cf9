/* What graft's own AVX2 kernels of the dnnl engine share (dnnl_wino.c, dnnl_gemv.c): the
 * per-function target, lane masks, a thread's share of a range, and the eltwise ops fused after
 * the bias (dn_vop, see dnnl_impl.h). Only for files whose callers check the CPU has AVX2 + FMA
 * first: the library itself is compiled for generic x86-64. */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_AVX2_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_AVX2_IMPL_H

#include <immintrin.h>

#include "backends/dnnl/dnnl_impl.h"

typedef __m256 v8;

#define AVX2_FN __attribute__((target("avx2,fma")))

/* lanes [0, n) of a vector of 8 set (n may be <= 0 or >= 8) */
AVX2_FN static inline __m256i dn_lanes(int64_t n) {
    int t = n < 0 ? 0 : n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(t), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* thread ithr's share [lo, hi) of [0, n), the first n % nthr threads one more */
static inline void dn_split(int64_t n, int ithr, int nthr, int64_t *lo, int64_t *hi) {
    int64_t q = n / nthr, r = n % nthr;
    *lo = ithr * q + (ithr < r ? ithr : r);
    *hi = *lo + q + (ithr < r);
}

/* y after ops[0, nops) in order; res: the 8 residual values DN_VOP_SUM adds */
AVX2_FN static inline v8 dn_vop_apply(const dn_vop *ops, int nops, v8 y, const float *res) {
    for (int i = 0; i < nops; i++) {
        const dn_vop *op = &ops[i];
        switch (op->kind) {
        case DN_VOP_SUM: y = _mm256_add_ps(y, _mm256_loadu_ps(res)); break;
        case DN_VOP_RELU: {
            v8 neg = _mm256_mul_ps(y, _mm256_set1_ps(op->alpha));
            y = _mm256_blendv_ps(y, neg, _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ));
            break;
        }
        case DN_VOP_LINEAR: y = _mm256_fmadd_ps(y, _mm256_set1_ps(op->alpha), _mm256_set1_ps(op->beta)); break;
        case DN_VOP_CLIP: y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(op->alpha)), _mm256_set1_ps(op->beta)); break;
        case DN_VOP_HARDSWISH: {
            v8 r6 = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(y, _mm256_set1_ps(3.f)), _mm256_setzero_ps()),
                                  _mm256_set1_ps(6.f));
            y = _mm256_mul_ps(y, _mm256_mul_ps(r6, _mm256_set1_ps(1.f / 6.f)));
            break;
        }
        }
    }
    return y;
}

#endif
