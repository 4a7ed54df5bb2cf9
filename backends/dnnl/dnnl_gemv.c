/* The engine's own matrix product for few rows and constant weights (a classifier head,
 * 1 x 1280 . 1280 x 1000 + bias): y[M][N] = x[M][K] . W[K][N] (+ bias) (+ eltwise ops).
 *
 * Such a product reads each weight once for at most a few multiply-adds, so its time is the
 * time to stream the weights from memory, and between runs the rest of the model has evicted
 * them. W is row-major (K x N, rows ldw floats apart), read in place: the graph's constant
 * itself, or for transposed weights the engine's K x N copy (oneDNN would reorder those too).
 * Each thread of oneDNN's OpenMP team (rt_dnnl_parallel) takes a range of W's rows, one
 * contiguous piece of memory that it reads in order, and sums their products into partial
 * results of its own (M x N floats, in L1 / L2); a second pass adds the threads' partial
 * results, the bias and the ops, each thread a range of columns.
 *
 * Measured in mnasnet1_0 (its head, graft run --repeat 60 --profile, medians, EPYC): one
 * row of W at a time 0.13 ms, four at a time (the partial results loaded once per four rows,
 * four streams) 0.18, eight 0.15-0.17; each thread half of every row's columns instead 0.19-0.23;
 * W packed into 16-column panels, one contiguous stream per thread, 0.14 but a copy of weights
 * read in place otherwise (the original and the copy both held while it is made: the peak of
 * mobilenet_v3_large +6 MiB); oneDNN's brg:avx512_core 0.19-0.22.
 *
 * Compiled for AVX2 + FMA (AVX2_FN; the library itself for generic x86-64): dn_gemv_run must
 * only run when the CPU has them (dnnl_ops.c checks). AVX2 is enough at every ISA: the
 * product is bound by memory, not by the width of the multiply-adds. */
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_avx2_impl.h"

typedef struct gemv_run {
    const dn_gemv *p;
    const float *x, *w, *bias;
    float *y;
    float *part;                  /* the threads' partial results, M x N each */
    int nparts;                   /* of which the first nparts were written */
} gemv_run;

/* acc[m][0, N) += x[m][k] * W[k][0, N) for every row m of x: W's row k read once, 16 columns
 * (two vectors) at a time */
AVX2_FN static void row(const dn_gemv *p, const float *wk, const float *x, int64_t k, float *acc) {
    int64_t N = p->N, c = 0;
    for (; c + 16 <= N; c += 16) {
        v8 w0 = _mm256_loadu_ps(wk + c), w1 = _mm256_loadu_ps(wk + c + 8);
        for (int64_t m = 0; m < p->M; m++) {
            v8 xv = _mm256_broadcast_ss(x + m * p->K + k);
            float *a = acc + m * N + c;
            _mm256_storeu_ps(a, _mm256_fmadd_ps(xv, w0, _mm256_loadu_ps(a)));
            _mm256_storeu_ps(a + 8, _mm256_fmadd_ps(xv, w1, _mm256_loadu_ps(a + 8)));
        }
    }
    for (; c < N; c += 8) {
        __m256i mk = dn_lanes(N - c);
        v8 w0 = _mm256_maskload_ps(wk + c, mk);
        for (int64_t m = 0; m < p->M; m++) {
            float *a = acc + m * N + c;
            v8 s = _mm256_fmadd_ps(_mm256_broadcast_ss(x + m * p->K + k), w0, _mm256_maskload_ps(a, mk));
            _mm256_maskstore_ps(a, mk, s);
        }
    }
}

/* pass 1: a thread's rows of W into its partial result */
AVX2_FN static void work_rows(void *ctx, int ithr, int nthr) {
    gemv_run *R = ctx;
    const dn_gemv *p = R->p;
    if (nthr > p->nparts) nthr = p->nparts; /* never: the team is the one prepare saw, or one */
    if (ithr >= nthr) return;
    if (ithr == 0) R->nparts = nthr;
    int64_t lo, hi;
    dn_split(p->K, ithr, nthr, &lo, &hi);
    float *acc = R->part + (int64_t)ithr * p->M * p->N;
    memset(acc, 0, sizeof(float) * (size_t)(p->M * p->N));
    for (int64_t k = lo; k < hi; k++) row(p, R->w + k * p->ldw, R->x, k, acc);
}

/* pass 2: a thread's columns of the result: the partial results summed, the bias, the ops */
AVX2_FN static void work_sum(void *ctx, int ithr, int nthr) {
    const gemv_run *R = ctx;
    const dn_gemv *p = R->p;
    int64_t lo, hi;
    dn_split((p->N + 7) / 8, ithr, nthr, &lo, &hi);
    lo *= 8;
    hi = hi * 8 < p->N ? hi * 8 : p->N;
    for (int64_t m = 0; m < p->M; m++)
        for (int64_t c = lo; c < hi; c += 8) {
            __m256i mk = dn_lanes(hi - c);
            v8 v = R->bias ? _mm256_maskload_ps(R->bias + c, mk) : _mm256_setzero_ps();
            for (int t = 0; t < R->nparts; t++)
                v = _mm256_add_ps(v, _mm256_maskload_ps(R->part + ((int64_t)t * p->M + m) * p->N + c, mk));
            _mm256_maskstore_ps(R->y + m * p->N + c, mk, dn_vop_apply(p->ops, p->nops, v, NULL));
        }
}

dnnl_status_t dn_gemv_run(void *ctx, void *const *ptrs) {
    const dn_gemv *p = ctx;
    gemv_run R = {p, ptrs[0], ptrs[p->ix_w], p->ix_bias >= 0 ? ptrs[p->ix_bias] : NULL, ptrs[1], ptrs[p->ix_part], 0};
    rt_dnnl_parallel(work_rows, &R);
    rt_dnnl_parallel(work_sum, &R);
    return dnnl_success;
}
