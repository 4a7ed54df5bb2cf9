/* The oneDNN engine's own Winograd convolution F(m x m, 3x3), m = 2 or 4, for the CPUs where
 * oneDNN 2.6 has none (it implements dnnl_convolution_winograd for avx512_core only): 3x3,
 * stride 1, dilation 1, one group, float32, src and dst in nChw8c (the layout the region's
 * other convolutions use on AVX2, so no reorders around it).
 *
 * Three steps (see dn_wino_conv in dnnl_ops.c): the input transform here, a oneDNN batched
 * matmul V [a*a][T][Cp] x U [a*a][Cp][Op] -> M [a*a][T][Op] (a = m + 2 points, T tiles of m x m
 * outputs over the batch, channels rounded up to 8), and the output transform here, with the
 * bias, a residual add and eltwise post-ops applied on the way out.
 *
 * The transforms are compiled for AVX2 + FMA (AVX2_FN; the library itself for generic x86-64):
 * dn_wino_run must only run when the CPU has them (wino_isa_ok in dnnl_ops.c checks). They work
 * on 8 channels at once (one nChw8c block), and split their work over oneDNN's OpenMP team
 * (rt_dnnl_parallel). */
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_avx2_impl.h"

/* ---------------------------------------------------------------- 1-D transforms ---- */
/* Each maps a points (stride s) to a points (stride rs), or a to m for the output. The
 * matrices are Lavin & Gray's for interpolation points 0, +-1, +-2 (m = 4) and 0, +-1 (m = 2). */

AVX2_FN static inline void bt4(const v8 *d, int s, v8 *r, int rs) {
    v8 d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s];
    v8 f4 = _mm256_set1_ps(4.f), f5 = _mm256_set1_ps(5.f), f2 = _mm256_set1_ps(2.f);
    v8 t0 = _mm256_fnmadd_ps(f4, d2, d4);  /* d4 - 4 d2 */
    v8 t1 = _mm256_fnmadd_ps(f4, d1, d3);  /* d3 - 4 d1 */
    v8 t2 = _mm256_sub_ps(d4, d2);
    v8 t3 = _mm256_mul_ps(f2, _mm256_sub_ps(d3, d1));
    r[0] = _mm256_fnmadd_ps(f5, d2, _mm256_fmadd_ps(f4, d0, d4));
    r[rs] = _mm256_add_ps(t0, t1);
    r[2 * rs] = _mm256_sub_ps(t0, t1);
    r[3 * rs] = _mm256_add_ps(t2, t3);
    r[4 * rs] = _mm256_sub_ps(t2, t3);
    r[5 * rs] = _mm256_fnmadd_ps(f5, d3, _mm256_fmadd_ps(f4, d1, d5));
}

AVX2_FN static inline void at4(const v8 *m, int s, v8 *o, int os) {
    v8 m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
    v8 p12 = _mm256_add_ps(m1, m2), n12 = _mm256_sub_ps(m1, m2);
    v8 p34 = _mm256_add_ps(m3, m4), n34 = _mm256_sub_ps(m3, m4);
    o[0] = _mm256_add_ps(_mm256_add_ps(m0, p12), p34);
    o[os] = _mm256_fmadd_ps(_mm256_set1_ps(2.f), n34, n12);
    o[2 * os] = _mm256_fmadd_ps(_mm256_set1_ps(4.f), p34, p12);
    o[3 * os] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.f), n34, n12), m5);
}

AVX2_FN static inline void bt2(const v8 *d, int s, v8 *r, int rs) {
    v8 d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s];
    r[0] = _mm256_sub_ps(d0, d2);
    r[rs] = _mm256_add_ps(d1, d2);
    r[2 * rs] = _mm256_sub_ps(d2, d1);
    r[3 * rs] = _mm256_sub_ps(d1, d3);
}

AVX2_FN static inline void at2(const v8 *m, int s, v8 *o, int os) {
    v8 m1 = m[s], m2 = m[2 * s];
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m1), m2);
    o[os] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m[3 * s]);
}

/* B^T d B of one a x a tile (a = m + 2; rows: along x, then columns: along y), constant strides
 * so that the compiler unrolls it */
AVX2_FN static inline void in_tile(int m, const v8 *d, v8 *v) {
    v8 r[36];
    if (m == 4) {
        for (int y = 0; y < 6; y++) bt4(d + y * 6, 1, r + y * 6, 1);
        for (int x = 0; x < 6; x++) bt4(r + x, 6, v + x, 6);
    } else {
        for (int y = 0; y < 4; y++) bt2(d + y * 4, 1, r + y * 4, 1);
        for (int x = 0; x < 4; x++) bt2(r + x, 4, v + x, 4);
    }
}

/* A^T M A: a x a -> m x m (along y, then along x) */
AVX2_FN static inline void out_tile(int m, const v8 *mm, v8 *o) {
    v8 r[24];
    if (m == 4) {
        for (int x = 0; x < 6; x++) at4(mm + x, 6, r + x, 6);
        for (int y = 0; y < 4; y++) at4(r + y * 6, 1, o + y * 4, 1);
    } else {
        for (int x = 0; x < 4; x++) at2(mm + x, 4, r + x, 4);
        for (int y = 0; y < 2; y++) at2(r + y * 4, 1, o + y * 2, 1);
    }
}

/* G g: 3 taps -> a points (scalar, once per weight at prepare) */
static void g4(const float *g, int s, float *u, int us) {
    float g0 = g[0], g1 = g[s], g2 = g[2 * s];
    u[0] = g0 / 4.f;
    u[us] = -(g0 + g1 + g2) / 6.f;
    u[2 * us] = -(g0 - g1 + g2) / 6.f;
    u[3 * us] = g0 / 24.f + g1 / 12.f + g2 / 6.f;
    u[4 * us] = g0 / 24.f - g1 / 12.f + g2 / 6.f;
    u[5 * us] = g2;
}

static void g2(const float *g, int s, float *u, int us) {
    float g0 = g[0], g1 = g[s], g2v = g[2 * s];
    u[0] = g0;
    u[us] = (g0 + g1 + g2v) / 2.f;
    u[2 * us] = (g0 - g1 + g2v) / 2.f;
    u[3 * us] = g2v;
}

/* ---------------------------------------------------------------- weights ---- */

void dn_wino_weights(const dn_wino *p, const float *w, const int64_t *wstr, float *u) {
    int a = p->m + 2, aa = a * a;
    memset(u, 0, sizeof(float) * (size_t)(aa * p->Cp * p->Op));
    for (int64_t o = 0; o < p->O; o++)
        for (int64_t c = 0; c < p->C; c++) {
            float g[9], t[6 * 3], r[36];
            for (int y = 0; y < 3; y++)
                for (int x = 0; x < 3; x++) g[y * 3 + x] = w[o * wstr[0] + c * wstr[1] + y * wstr[2] + x * wstr[3]];
            /* columns of each kernel row, then the rows: r = G g G^T */
            for (int y = 0; y < 3; y++) (p->m == 4 ? g4 : g2)(g + y * 3, 1, t + y, 3);
            for (int i = 0; i < a; i++) (p->m == 4 ? g4 : g2)(t + i * 3, 1, r + i, a);
            for (int xi = 0; xi < aa; xi++) u[((int64_t)xi * p->Cp + c) * p->Op + o] = r[xi];
        }
}

/* ---------------------------------------------------------------- input ---- */

/* The lanes of the last 8-channel block that hold channels (of n in all): padded lanes masked
 * to 0 on the way in and out, as nChw8c's padding must stay. */
AVX2_FN static inline v8 tail_mask(int64_t n) {
    return _mm256_castsi256_ps(dn_lanes(n - (n + 7) / 8 * 8 + 8));
}

/* One pass: tiles [t0, t1) of the batch, V and M holding theirs from row 0. */
typedef struct wino_run {
    const dn_wino *p;
    const float *src, *res;
    float *dst;
    int64_t t0, t1;
} wino_run;

/* Tiles [lo, hi) of the batch, every channel block of each in turn, so that V[xi][t][0..Cp)
 * is written whole (a channel block at a time over the tiles left each cache line of V to be
 * fetched and written back 8 times: 3 ms instead of under 1 on PP-OCR det's 160x160 maps). */
AVX2_FN static void in_work(void *ctx, int ithr, int nthr) {
    const wino_run *R = ctx;
    const dn_wino *p = R->p;
    int m = p->m, a = m + 2, aa = a * a;
    int64_t CB = p->Cp / 8, lo, hi, step = (R->t1 - R->t0) * p->Cp, plane = p->H * p->W * 8;
    dn_split(R->t1 - R->t0, ithr, nthr, &lo, &hi);
    lo += R->t0, hi += R->t0;
    bool ragged = p->C % 8;
    v8 mask = tail_mask(p->C);
    for (int64_t t = lo; t < hi; t++) {
        int64_t tx = t % p->tc, ty = (t / p->tc) % p->tr, n = t / p->tc / p->tr;
        int64_t iy0 = ty * m - p->pt, ix0 = tx * m - p->pl;
        bool inner = iy0 >= 0 && ix0 >= 0 && iy0 + a <= p->H && ix0 + a <= p->W;
        const float *img = R->src + n * CB * plane;
        float *out = R->dst + (t - R->t0) * p->Cp;
        for (int64_t cb = 0; cb < CB; cb++, img += plane, out += 8) {
            v8 d[36], v[36];
            for (int y = 0; y < a; y++)
                for (int x = 0; x < a; x++) {
                    int64_t iy = iy0 + y, ix = ix0 + x;
                    d[y * a + x] = inner || (iy >= 0 && iy < p->H && ix >= 0 && ix < p->W)
                                       ? _mm256_loadu_ps(img + (iy * p->W + ix) * 8)
                                       : _mm256_setzero_ps();
                }
            if (cb == CB - 1 && ragged)
                for (int i = 0; i < aa; i++) d[i] = _mm256_and_ps(d[i], mask);
            in_tile(m, d, v);
            for (int i = 0; i < aa; i++) _mm256_storeu_ps(out + i * step, v[i]);
        }
    }
}

/* ---------------------------------------------------------------- output ---- */

/* Tiles [lo, hi), every output channel block of each in turn (M read whole rows, as V is
 * written). */
AVX2_FN static void out_work(void *ctx, int ithr, int nthr) {
    const wino_run *R = ctx;
    const dn_wino *p = R->p;
    int m = p->m, a = m + 2, aa = a * a;
    int64_t OB = p->Op / 8, lo, hi, step = (R->t1 - R->t0) * p->Op, plane = p->OH * p->OW * 8;
    dn_split(R->t1 - R->t0, ithr, nthr, &lo, &hi);
    lo += R->t0, hi += R->t0;
    bool ragged = p->O % 8;
    v8 mask = tail_mask(p->O);
    for (int64_t t = lo; t < hi; t++) {
        int64_t tx = t % p->tc, ty = (t / p->tc) % p->tr, n = t / p->tc / p->tr;
        const float *in = R->src + (t - R->t0) * p->Op;
        for (int64_t ob = 0; ob < OB; ob++, in += 8) {
            int64_t off0 = (n * OB + ob) * plane;
            v8 bias = p->bias ? _mm256_loadu_ps(p->bias + ob * 8) : _mm256_setzero_ps();
            v8 mm[36], o[16];
            for (int i = 0; i < aa; i++) mm[i] = _mm256_loadu_ps(in + i * step);
            out_tile(m, mm, o);
            for (int y = 0; y < m; y++) {
                int64_t oy = ty * m + y;
                if (oy >= p->OH) break;
                for (int x = 0; x < m; x++) {
                    int64_t ox = tx * m + x;
                    if (ox >= p->OW) break;
                    int64_t off = off0 + (oy * p->OW + ox) * 8;
                    v8 yv = dn_vop_apply(p->ops, p->nops, _mm256_add_ps(o[y * m + x], bias), R->res ? R->res + off : NULL);
                    if (ob == OB - 1 && ragged) yv = _mm256_and_ps(yv, mask); /* nChw8c's padding stays 0 */
                    _mm256_storeu_ps(R->dst + off, yv);
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- run ---- */

/* Pass by pass (V and M sized for one, so that they stay in cache and the arena small): the
 * input transform, the matmul, the output transform. */
dnnl_status_t dn_wino_run(void *ctx, void *const *ptrs) {
    const dn_wino *p = ctx;
    float *V = ptrs[p->ix_v], *M = ptrs[p->ix_m];
    for (int64_t t0 = 0; t0 < p->T; t0 += p->chunk) {
        int64_t t1 = t0 + p->chunk < p->T ? t0 + p->chunk : p->T;
        int last = t1 - t0 != p->chunk && p->mm[1]; /* mm[1]: the last pass has fewer tiles */
        wino_run in = {p, ptrs[0], NULL, V, t0, t1};
        rt_dnnl_parallel(in_work, &in);
        dnnl_memory_t const *mem = p->mem[last];
        dnnl_memory_set_data_handle(mem[0], V);
        dnnl_memory_set_data_handle(mem[2], M);
        if (mem[3]) dnnl_memory_set_data_handle(mem[3], ptrs[p->ix_scratch]);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]},
                                   {DNNL_ARG_SCRATCHPAD, mem[3]}};
        dnnl_status_t ds = dnnl_primitive_execute(p->mm[last], p->stream, mem[3] ? 4 : 3, args);
        if (ds == dnnl_success) ds = dnnl_stream_wait(p->stream);
        if (ds != dnnl_success) return ds;
        wino_run out = {p, M, p->ix_res >= 0 ? ptrs[p->ix_res] : NULL, ptrs[1], t0, t1};
        rt_dnnl_parallel(out_work, &out);
    }
    return dnnl_success;
}

void dn_wino_free(void *ctx) {
    dn_wino *p = ctx;
    for (int k = 0; k < 2; k++) {
        if (p->mm[k]) dnnl_primitive_destroy(p->mm[k]);
        for (int i = 0; i < 4; i++)
            if (p->mem[k][i]) dnnl_memory_destroy(p->mem[k][i]);
    }
    free(p);
}
