/* Blocked single-precision GEMM (packed 6x16 micro-kernel, GCC vector extensions, an AVX2
 * clone picked at load time) and the matmul kernel built on it. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

#define MR 6
#define NR 16
#define KC 256
#define MC 96   /* multiple of MR */
#define NC 512  /* multiple of NR */

typedef float v8f __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define GEMM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GEMM_CLONES
#endif

/* c[MR x NR] (+)= a-panel[kc x MR] * b-panel[kc x NR]; only mr x nr of c is stored. */
GEMM_CLONES
static void ukernel(int64_t kc, const float *restrict a, const float *restrict b,
                    float *restrict c, int64_t ldc, int mr, int nr, bool acc) {
    v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    v8f c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    for (int64_t k = 0; k < kc; k++) {
        v8f b0, b1;
        memcpy(&b0, b + k * NR, sizeof(b0));
        memcpy(&b1, b + k * NR + 8, sizeof(b1));
        const float *ak = a + k * MR;
        v8f t;
        t = (v8f){0} + ak[0]; c00 += t * b0; c01 += t * b1;
        t = (v8f){0} + ak[1]; c10 += t * b0; c11 += t * b1;
        t = (v8f){0} + ak[2]; c20 += t * b0; c21 += t * b1;
        t = (v8f){0} + ak[3]; c30 += t * b0; c31 += t * b1;
        t = (v8f){0} + ak[4]; c40 += t * b0; c41 += t * b1;
        t = (v8f){0} + ak[5]; c50 += t * b0; c51 += t * b1;
    }
    float tile[MR][NR];
    memcpy(tile[0], &c00, 32); memcpy(tile[0] + 8, &c01, 32);
    memcpy(tile[1], &c10, 32); memcpy(tile[1] + 8, &c11, 32);
    memcpy(tile[2], &c20, 32); memcpy(tile[2] + 8, &c21, 32);
    memcpy(tile[3], &c30, 32); memcpy(tile[3] + 8, &c31, 32);
    memcpy(tile[4], &c40, 32); memcpy(tile[4] + 8, &c41, 32);
    memcpy(tile[5], &c50, 32); memcpy(tile[5] + 8, &c51, 32);
    for (int i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (acc)
            for (int j = 0; j < nr; j++) ci[j] += tile[i][j];
        else
            for (int j = 0; j < nr; j++) ci[j] = tile[i][j];
    }
}

/* Packs A[ic.., pc..] (mc x kc) into MR-row panels, zero padded. */
static void pack_a(int64_t mc, int64_t kc, const float *A, int64_t rsa, int64_t csa, float *dst) {
    for (int64_t i0 = 0; i0 < mc; i0 += MR) {
        int64_t mr = mc - i0 < MR ? mc - i0 : MR;
        for (int64_t k = 0; k < kc; k++) {
            for (int64_t i = 0; i < mr; i++) dst[i] = A[(i0 + i) * rsa + k * csa];
            for (int64_t i = mr; i < MR; i++) dst[i] = 0.0f;
            dst += MR;
        }
    }
}

/* Packs B[pc.., jc..] (kc x nc) into NR-column panels, zero padded. */
static void pack_b(int64_t kc, int64_t nc, const float *B, int64_t rsb, int64_t csb, float *dst) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
        int64_t nr = nc - j0 < NR ? nc - j0 : NR;
        for (int64_t k = 0; k < kc; k++) {
            const float *src = B + k * rsb + j0 * csb;
            if (csb == 1 && nr == NR) {
                memcpy(dst, src, sizeof(float) * NR);
            } else {
                for (int64_t j = 0; j < nr; j++) dst[j] = src[j * csb];
                for (int64_t j = nr; j < NR; j++) dst[j] = 0.0f;
            }
            dst += NR;
        }
    }
}

typedef struct gemm_job {
    int64_t M, N, K;
    const float *A;
    int64_t rsa, csa;
    const float *B;
    int64_t rsb, csb;
    float *C;
    int64_t ldc;
    bool accumulate;
    int64_t j_begin, j_end;  /* column range of this worker */
} gemm_job;

static void gemm_range(const gemm_job *g) {
    float *ap = rt_scratch_get(sizeof(float) * MC * KC);
    float *bp = rt_scratch_get(sizeof(float) * KC * NC);
    if (!ap || !bp) {
        /* out of memory: fall back to the plain triple loop (slow but correct) */
        for (int64_t i = 0; i < g->M; i++)
            for (int64_t j = g->j_begin; j < g->j_end; j++) {
                float s = g->accumulate ? g->C[i * g->ldc + j] : 0.0f;
                for (int64_t k = 0; k < g->K; k++)
                    s += g->A[i * g->rsa + k * g->csa] * g->B[k * g->rsb + j * g->csb];
                g->C[i * g->ldc + j] = s;
            }
        rt_scratch_put(ap);
        rt_scratch_put(bp);
        return;
    }
    for (int64_t jc = g->j_begin; jc < g->j_end; jc += NC) {
        int64_t nc = g->j_end - jc < NC ? g->j_end - jc : NC;
        for (int64_t pc = 0; pc < g->K; pc += KC) {
            int64_t kc = g->K - pc < KC ? g->K - pc : KC;
            bool acc = g->accumulate || pc > 0;
            pack_b(kc, nc, g->B + pc * g->rsb + jc * g->csb, g->rsb, g->csb, bp);
            for (int64_t ic = 0; ic < g->M; ic += MC) {
                int64_t mc = g->M - ic < MC ? g->M - ic : MC;
                pack_a(mc, kc, g->A + ic * g->rsa + pc * g->csa, g->rsa, g->csa, ap);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int nr = (int)(nc - jr < NR ? nc - jr : NR);
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        int mr = (int)(mc - ir < MR ? mc - ir : MR);
                        ukernel(kc, ap + ir * kc, bp + jr * kc,
                                g->C + (ic + ir) * g->ldc + jc + jr, g->ldc, mr, nr, acc);
                    }
                }
            }
        }
    }
    rt_scratch_put(ap);
    rt_scratch_put(bp);
}

static void *gemm_thread(void *arg) {
    gemm_range(arg);
    return NULL;
}

/* Two workers split the columns when the product is large (the machine has 2 cores). */
#define GEMM_PAR_FLOPS (1 << 22)

void rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
              const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc, bool accumulate) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!accumulate)
            for (int64_t i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
    gemm_job g = {M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, accumulate, 0, N};
    if ((double)M * (double)N * (double)K >= GEMM_PAR_FLOPS && N >= 2 * NR) {
        gemm_job h = g;
        int64_t half = (N / 2 + NR - 1) / NR * NR;
        g.j_end = half;
        h.j_begin = half;
        pthread_t th;
        if (pthread_create(&th, NULL, gemm_thread, &h) == 0) {
            gemm_range(&g);
            pthread_join(th, NULL);
            return;
        }
        g.j_end = N;
    }
    gemm_range(&g);
}

/* ---------------- matmul ---------------- */

/* relax.matmul(a, b, out_dtype): numpy matmul (1-D operands promoted then squeezed, batch dims
 * broadcast). */
static gr_status k_matmul(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *a, *b;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &a, d)) ||
        (st = rt_arg_tensor(c, 1, &b, d)))
        return st;
    int an = a->dl.ndim, bn = b->dl.ndim;
    if (an == 0 || bn == 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "operands must have rank >= 1: %s, %s",
                       RT_SHAPE_STR(a), RT_SHAPE_STR(b));
    if (!rt_dt_eq(a->dl.dtype, b->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "dtype mismatch: %s vs %s", RT_SHAPE_STR(a),
                       RT_SHAPE_STR(b));
    int64_t M = an == 1 ? 1 : a->dl.shape[an - 2], K = a->dl.shape[an - 1];
    int64_t Kb = bn == 1 ? b->dl.shape[0] : b->dl.shape[bn - 2];
    int64_t N = bn == 1 ? 1 : b->dl.shape[bn - 1];
    if (K != Kb)
        return rt_kerr(c, d, GR_ERR_INVALID, "reduction dims differ: %s @ %s", RT_SHAPE_STR(a),
                       RT_SHAPE_STR(b));
    int abn = an > 2 ? an - 2 : 0, bbn = bn > 2 ? bn - 2 : 0;
    int obn = abn > bbn ? abn : bbn;
    int64_t oshape[RT_MAX_NDIM], ast[RT_MAX_NDIM], bst[RT_MAX_NDIM];
    int64_t sa = 1, sb = 1;
    for (int i = obn - 1; i >= 0; i--) { /* batch dims and their (0 when broadcast) strides */
        int ia = i - (obn - abn), ib = i - (obn - bbn);
        int64_t da = ia >= 0 ? a->dl.shape[ia] : 1, db = ib >= 0 ? b->dl.shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rt_kerr(c, d, GR_ERR_INVALID, "batch dims do not broadcast: %s @ %s",
                           RT_SHAPE_STR(a), RT_SHAPE_STR(b));
        oshape[i] = da == 1 ? db : da;
        ast[i] = da == 1 ? 0 : sa;
        bst[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
    }
    int ond = obn;
    if (an > 1) oshape[ond++] = M;
    if (bn > 1) oshape[ond++] = N;
    if (ond > RT_MAX_NDIM) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "rank too large");
    DLDataType dt = a->dl.dtype;
    ir_dtype odt = rt_attr_dtype(c->attrs, "out_dtype", dt);
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, rt_is_floatish(dt) ? (DLDataType){kDLFloat, 32, 1} : dt, ond, oshape,
                         &o, d)))
        return st;
    bool f32_path = rt_is_floatish(dt);
    rt_tensor *ca = f32_path ? rt_tensor_cast(a, (DLDataType){kDLFloat, 32, 1}) : NULL;
    rt_tensor *cb = f32_path ? rt_tensor_cast(b, (DLDataType){kDLFloat, 32, 1}) : NULL;
    if (f32_path && (!ca || !cb)) {
        rt_tensor_release(ca);
        rt_tensor_release(cb);
        rt_tensor_release(o);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    int64_t nbatch = rt_numel(obn, oshape);
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0;
        for (int i = obn - 1; i >= 0; i--) {
            int64_t idx = rem % oshape[i];
            rem /= oshape[i];
            aoff += idx * ast[i];
            boff += idx * bst[i];
        }
        aoff *= M * K;
        boff *= K * N;
        int64_t ooff = bi * M * N;
        if (f32_path) {
            rt_sgemm(M, N, K, (const float *)ca->dl.data + aoff, K, 1,
                     (const float *)cb->dl.data + boff, N, 1, (float *)o->dl.data + ooff, N,
                     false);
        } else { /* integers: exact int64 accumulation */
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    uint64_t s = 0;
                    for (int64_t k = 0; k < K; k++)
                        s += (uint64_t)(int64_t)rt_tensor_get_f64(a, aoff + i * K + k) *
                             (uint64_t)(int64_t)rt_tensor_get_f64(b, boff + k * N + j);
                    rt_tensor_set_f64(o, ooff + i * N + j, (double)(int64_t)s);
                }
        }
    }
    rt_tensor_release(ca);
    rt_tensor_release(cb);
    return rt_kout_as(c, o, odt, out, d);
}

const rt_kernel_entry rt_kernels_gemm[] = {
    RT_K(MATMUL, k_matmul),
};
RT_FAMILY_COUNT(gemm, rt_kernels_gemm);
