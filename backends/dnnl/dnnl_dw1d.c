/* The engine's own depthwise 1-D convolution (stride 1, no dilation, one filter per channel)
 * on plain N x C x W data: y[n][c][t] = bias[c] + sum_k w[c][k] x[n][c][t + k - pl], then
 * eltwise ops. oneDNN 2.6 runs such a convolution on im2col + GEMM (x64:gemm:jit) where it has
 * no depthwise kernel for it: at AVX2 its jit_dw takes widths up to 12 only, and a Conformer's
 * convolution module has 15 or 31 (dnnl_op_conv.c, dw1d_conv).
 *
 * Each thread of oneDNN's OpenMP team takes a range of the N x C rows. A row is copied into the
 * thread's piece of the workspace between zeros (its padding), so every tap is one unaligned
 * load of 8 outputs' inputs: 8 outputs cost K loads, K broadcasts and K multiply-adds.
 *
 * Compiled for AVX2 + FMA (AVX2_FN; the library itself for generic x86-64): dn_dw1d_run must
 * only run when the CPU has them (dnnl_op_conv.c checks). */
#include <string.h>

#include "backends/dnnl/dnnl_avx2_impl.h"

typedef struct dw1d_run {
    const dn_dw1d *p;
    const float *x;
    float *y, *ws;
} dw1d_run;

int64_t dn_dw1d_row(const dn_dw1d *p) { return (p->OW + 7) / 8 * 8 + p->K + 8; }

AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const dw1d_run *R = ctx;
    const dn_dw1d *p = R->p;
    if (nthr > p->nparts) nthr = p->nparts; /* never: the team is the one prepare saw, or one */
    if (ithr >= nthr) return;
    int64_t lo, hi, len = dn_dw1d_row(p);
    float *row = R->ws + ithr * len;
    dn_split(p->N * p->C, ithr, nthr, &lo, &hi);
    memset(row, 0, sizeof(float) * (size_t)len);
    for (int64_t r = lo; r < hi; r++) {
        int64_t c = r % p->C;
        memcpy(row + p->pl, R->x + r * p->W, sizeof(float) * (size_t)p->W);
        const float *w = p->w + c * p->K;
        float *y = R->y + r * p->OW;
        v8 b = _mm256_set1_ps(p->bias ? p->bias[c] : 0.f);
        for (int64_t t = 0; t < p->OW; t += 8) {
            v8 acc = b;
            for (int64_t k = 0; k < p->K; k++)
                acc = _mm256_fmadd_ps(_mm256_broadcast_ss(w + k), _mm256_loadu_ps(row + t + k), acc);
            acc = dn_vop_apply(p->ops, p->nops, acc, NULL);
            if (t + 8 <= p->OW) _mm256_storeu_ps(y + t, acc);
            else _mm256_maskstore_ps(y + t, dn_lanes(p->OW - t), acc);
        }
    }
}

dnnl_status_t dn_dw1d_run(void *ctx, void *const *ptrs) {
    const dn_dw1d *p = ctx;
    dw1d_run R = {p, ptrs[0], ptrs[1], ptrs[2]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}
