/* The engine's own int8 product of one row below VNNI (a quantized classifier head, 1 x 1280 .
 * 1280 x 1000): y[N] = ((x[K] - zp) . W[K][N]) * osc[N] (+ bias) (+ eltwise ops), x u8 levels,
 * W s8 levels, summed exactly in 32 bits.
 *
 * Below VNNI oneDNN's int8 kernels add pairs of u8 x s8 products in saturating 16-bit lanes,
 * so 8-bit weights run as two primitives on the source's halves (dnnl_op_quant.c), and for one
 * row its int8 gemm:jit packs the weights on every run (mobilenet_v3_large's two heads at one
 * thread: 1.6 ms of a 9.7 ms model). Here x - zp and W are widened to 16 bits and vpmaddwd
 * adds pairs of their products into 32 bits, which cannot overflow (2 * 255 * 128); the
 * product streams the int8 weights once, a quarter of the bytes of the float32 GEMV
 * (dnnl_gemv.c), and the weights stay int8 in memory.
 *
 * W is packed at prepare into 8-column panels, each row pair of a panel 16 bytes: packed[(b *
 * Kp / 2 + p) * 16 + 2 j + t] = W[2 p + t][8 b + j] (0 past K and N). Each thread of oneDNN's
 * team (rt_dnnl_parallel) takes a range of panels; the pairs (x[2p] - zp, x[2p + 1] - zp) as one
 * 32-bit word each are made once per run into a workspace (ptrs[2]).
 *
 * Compiled for AVX2 + FMA (AVX2_FN): dn_qgemv_run must only run when the CPU has them
 * (dn_avx2_kernels_ok). */
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_avx2_impl.h"

int8_t *dn_qgemv_pack(const int8_t *w, int64_t K, int64_t N, int64_t sk, int64_t sn) {
    int64_t kp = (K + 1) / 2, nb = (N + 7) / 8;
    int8_t *p = calloc((size_t)(nb * kp * 16), 1);
    if (!p) return NULL;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) p[((n / 8) * kp + k / 2) * 16 + (n % 8) * 2 + k % 2] = w[k * sk + n * sn];
    return p;
}

void dn_qgemv_free(void *ctx) {
    dn_qgemv *q = ctx;
    if (!q) return;
    free(q->w);
    free(q->osc);
    free(q);
}

typedef struct qgemv_run {
    const dn_qgemv *q;
    const int32_t *pairs;
    float *y;
} qgemv_run;

/* a thread's panels: 8 columns each, two accumulators over alternate row pairs */
AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const qgemv_run *R = ctx;
    const dn_qgemv *q = R->q;
    int64_t kp = (q->K + 1) / 2, lo, hi;
    dn_split((q->N + 7) / 8, ithr, nthr, &lo, &hi);
    for (int64_t b = lo; b < hi; b++) {
        const int8_t *wb = q->w + b * kp * 16;
        __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
        int64_t p = 0;
        for (; p + 2 <= kp; p += 2) {
            __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + p * 16)));
            __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + p * 16 + 16)));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_set1_epi32(R->pairs[p]), w0));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_set1_epi32(R->pairs[p + 1]), w1));
        }
        if (p < kp) {
            __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + p * 16)));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_set1_epi32(R->pairs[p]), w0));
        }
        int64_t c = b * 8;
        __m256i mk = dn_lanes(q->N - c);
        v8 y = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a0, a1)), _mm256_maskload_ps(q->osc + c, mk));
        if (q->bias) y = _mm256_add_ps(y, _mm256_maskload_ps(q->bias + c, mk));
        _mm256_maskstore_ps(R->y + c, mk, dn_vop_apply(q->ops, q->nops, y, NULL));
    }
}

dnnl_status_t dn_qgemv_run(void *ctx, void *const *ptrs) {
    const dn_qgemv *q = ctx;
    const uint8_t *x = ptrs[0];
    int32_t *pairs = ptrs[2];
    for (int64_t p = 0; p < (q->K + 1) / 2; p++) {
        int32_t lo = x[2 * p] - q->zp, hi = 2 * p + 1 < q->K ? x[2 * p + 1] - q->zp : 0;
        pairs[p] = (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16);
    }
    qgemv_run R = {q, pairs, ptrs[1]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}
