/* The oneDNN engine's own Winograd convolution F(m x m, 3x3), m = 2 or 4: 3x3 (2-D) or 3x3x3
 * (3-D) kernels, stride 1, dilation 1, one group, float32. 2-D for the CPUs where oneDNN 2.6 has
 * none (it implements dnnl_convolution_winograd for avx512_core only), on nChw8c src and dst
 * (the layout the region's other convolutions use on AVX2, so no reorders around it); 3-D at
 * every ISA with AVX2 (oneDNN has no 3-D Winograd), over the two spatial dims and direct over
 * depth: out[d] = sum_t conv2d_3x3(in[d + t - pf], W[:, :, t]), on the layout src has
 * (channels-last or nCdhw8c).
 *
 * Three steps (see wino_conv in dnnl_op_conv.c): the input transform of every input depth slice
 * here, a oneDNN batched matmul V [a*a][rows][kd Cp] x U [a*a][kd Cp][Op] -> M [a*a][rows][Op]
 * (a = m + 2 points; rows: tiles of m x m outputs over the batch and the output depths; a row
 * holds the transformed tiles of its kd input depths side by side, so one matmul sums over
 * the channels and the depth taps: each transformed input slice is stored kd times), and the
 * output transform here, with the bias, a residual add and eltwise post-ops applied on the way
 * out.
 *
 * The transforms are compiled for AVX2 + FMA (AVX2_FN; the library itself for generic x86-64):
 * dn_wino_run must only run when the CPU has them (dn_avx2_kernels_ok checks). They work on 8
 * channels at once (a block of nC[d]hw8c, 8 of channels-last), and split
 * their work over oneDNN's OpenMP team (rt_dnnl_parallel). */
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

/* G g: 3 taps -> a points, for 8 output channels at once (once per weight at prepare) */
AVX2_FN static inline void g4(const v8 *g, int s, v8 *u, int us) {
    v8 g0 = g[0], g1 = g[s], g2 = g[2 * s], g02 = _mm256_add_ps(g0, g2);
    v8 q = _mm256_fmadd_ps(_mm256_set1_ps(1.f / 24.f), g0, _mm256_mul_ps(_mm256_set1_ps(1.f / 6.f), g2));
    v8 h1 = _mm256_mul_ps(_mm256_set1_ps(1.f / 12.f), g1);
    u[0] = _mm256_mul_ps(_mm256_set1_ps(0.25f), g0);
    u[us] = _mm256_mul_ps(_mm256_set1_ps(-1.f / 6.f), _mm256_add_ps(g02, g1));
    u[2 * us] = _mm256_mul_ps(_mm256_set1_ps(-1.f / 6.f), _mm256_sub_ps(g02, g1));
    u[3 * us] = _mm256_add_ps(q, h1);
    u[4 * us] = _mm256_sub_ps(q, h1);
    u[5 * us] = g2;
}

AVX2_FN static inline void g2(const v8 *g, int s, v8 *u, int us) {
    v8 g0 = g[0], g1 = g[s], g2v = g[2 * s], g02 = _mm256_add_ps(g0, g2v), half = _mm256_set1_ps(0.5f);
    u[0] = g0;
    u[us] = _mm256_mul_ps(half, _mm256_add_ps(g02, g1));
    u[2 * us] = _mm256_mul_ps(half, _mm256_sub_ps(g02, g1));
    u[3 * us] = g2v;
}

/* ---------------------------------------------------------------- weights ---- */

/* 8 output channels at a time: each (c, t) then writes 8 consecutive floats of U per point. */
AVX2_FN void dn_wino_weights(const dn_wino *p, const float *w, const int64_t *wstr, float *u) {
    int a = p->m + 2, aa = a * a;
    int64_t K = p->kd * p->Cp;
    memset(u, 0, sizeof(float) * (size_t)(aa * K * p->Op));
    for (int t = 0; t < p->kd; t++)
        for (int64_t c = 0; c < p->C; c++)
            for (int64_t o0 = 0; o0 < p->O; o0 += 8) {
                int no = p->O - o0 < 8 ? (int)(p->O - o0) : 8;
                v8 g[9], tt[6 * 3], r[36];
                for (int y = 0; y < 3; y++)
                    for (int x = 0; x < 3; x++) {
                        float lane[8] = {0};
                        const float *wt = w + o0 * wstr[0] + c * wstr[1] + t * wstr[2] + y * wstr[3] + x * wstr[4];
                        for (int i = 0; i < no; i++) lane[i] = wt[i * wstr[0]];
                        g[y * 3 + x] = _mm256_loadu_ps(lane);
                    }
                /* columns of each kernel row, then the rows: r = G g G^T */
                for (int y = 0; y < 3; y++) (p->m == 4 ? g4 : g2)(g + y * 3, 1, tt + y, 3);
                for (int i = 0; i < a; i++) (p->m == 4 ? g4 : g2)(tt + i * 3, 1, r + i, a);
                for (int xi = 0; xi < aa; xi++) {
                    float *dst = u + ((int64_t)xi * K + t * p->Cp + c) * p->Op + o0;
                    if (no == 8) _mm256_storeu_ps(dst, r[xi]);
                    else _mm256_maskstore_ps(dst, dn_lanes(no), r[xi]);
                }
            }
}

/* ---------------------------------------------------------------- input ---- */

/* Channel group g's (channels 8g .. 8g + 7) offset in a pixel of layout l */
static inline int64_t grp_off(const dn_wino_lay *l, int64_t g) { return 8 * g / l->blk * l->cb + 8 * g % l->blk; }

/* One pass: tile columns [q0, q1) of the batch, V and M holding theirs from row 0. */
typedef struct wino_run {
    const dn_wino *p;
    const float *src, *res;
    float *dst;
    int64_t q0, q1;
} wino_run;

/* Items [lo, hi) of the pass (input depth slice d, tile column q), every channel group of
 * each in turn, so that V[xi][row][..] is written whole (a channel group at a time over the
 * tiles left each cache line of V to be fetched and written back 8 times: 3 ms instead of under
 * 1 on PP-OCR det's 160x160 maps). Slice d goes to tap t of output depth d + pf - t; item (d, q)
 * also zeroes the taps of output depth d that read outside the input. The last group of C % 8
 * channels is read masked: the lanes past C are 0 (nC[d]hw8c's padding, or the next pixel of
 * channels-last). */
AVX2_FN static void in_work(void *ctx, int ithr, int nthr) {
    const wino_run *R = ctx;
    const dn_wino *p = R->p;
    const dn_wino_lay *l = &p->src;
    int m = p->m, a = m + 2, aa = a * a;
    int64_t G = p->Cp / 8, P = R->q1 - R->q0, K = p->kd * p->Cp, step = p->OD * P * K, per = p->tr * p->tc, lo, hi;
    dn_split(p->D * P, ithr, nthr, &lo, &hi);
    __m256i tail = dn_lanes(p->C - 8 * (G - 1));
    for (int64_t i = lo; i < hi; i++) {
        int64_t d = i / P, j = i % P, q = R->q0 + j, n = q / per, s = q % per;
        int64_t iy0 = s / p->tc * m - p->pt, ix0 = s % p->tc * m - p->pl;
        bool inner = iy0 >= 0 && ix0 >= 0 && iy0 + a <= p->H && ix0 + a <= p->W;
        const float *img = R->src + n * l->n + d * l->d;
        float *outs[3];
        int nout = 0;
        for (int t = 0; t < p->kd; t++) {
            int64_t od = d + p->pf - t, id = d + t - p->pf; /* the output depth slice d feeds, the input depth d reads */
            if (od >= 0 && od < p->OD) outs[nout++] = R->dst + (od * P + j) * K + t * p->Cp;
            if (d < p->OD && (id < 0 || id >= p->D))
                for (int k = 0; k < aa; k++) memset(R->dst + (d * P + j) * K + t * p->Cp + k * step, 0, sizeof(float) * (size_t)p->Cp);
        }
        for (int64_t g = 0; g < G; g++) {
            const float *base = img + grp_off(l, g);
            bool masked = g == G - 1 && p->C % 8;
            v8 dd[36], v[36];
            for (int y = 0; y < a; y++)
                for (int x = 0; x < a; x++) {
                    int64_t iy = iy0 + y, ix = ix0 + x;
                    const float *px = base + iy * l->h + ix * l->w;
                    dd[y * a + x] = !(inner || (iy >= 0 && iy < p->H && ix >= 0 && ix < p->W)) ? _mm256_setzero_ps()
                                    : masked                                                    ? _mm256_maskload_ps(px, tail)
                                                                                                : _mm256_loadu_ps(px);
                }
            in_tile(m, dd, v);
            for (int o = 0; o < nout; o++)
                for (int k = 0; k < aa; k++) _mm256_storeu_ps(outs[o] + g * 8 + k * step, v[k]);
        }
    }
}

/* ---------------------------------------------------------------- output ---- */

/* Items [lo, hi) of the pass (output depth od, tile column q: M row od P + q - q0), every
 * output channel group of each in turn (M read whole rows, as V is written). Groups past O are
 * written 0 in a blocked dst (its padding must stay 0), masked in a channels-last one (the lanes
 * past O are the next pixel's). */
AVX2_FN static void out_work(void *ctx, int ithr, int nthr) {
    const wino_run *R = ctx;
    const dn_wino *p = R->p;
    const dn_wino_lay *l = &p->dst;
    int m = p->m, a = m + 2, aa = a * a;
    int64_t G = p->Op / 8, P = R->q1 - R->q0, step = p->OD * P * p->Op, per = p->tr * p->tc, lo, hi;
    dn_split(p->OD * P, ithr, nthr, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        int64_t od = i / P, q = R->q0 + i % P, n = q / per, s = q % per, ty = s / p->tc, tx = s % p->tc;
        const float *in = R->src + i * p->Op;
        for (int64_t g = 0; g < G; g++, in += 8) {
            int64_t off0 = n * l->n + od * l->d + grp_off(l, g);
            __m256i lanes = dn_lanes(p->O - 8 * g);
            bool part = p->O < 8 * g + 8, cl = l->blk == 1;
            v8 keep = _mm256_castsi256_ps(lanes);
            v8 bias = p->bias ? _mm256_loadu_ps(p->bias + g * 8) : _mm256_setzero_ps();
            v8 mm[36], o[16];
            for (int k = 0; k < aa; k++) mm[k] = _mm256_loadu_ps(in + k * step);
            out_tile(m, mm, o);
            for (int y = 0; y < m; y++) {
                int64_t oy = ty * m + y;
                if (oy >= p->OH) break;
                for (int x = 0; x < m; x++) {
                    int64_t ox = tx * m + x;
                    if (ox >= p->OW) break;
                    int64_t off = off0 + oy * l->h + ox * l->w;
                    const float *res = R->res ? R->res + off : NULL;
                    float rbuf[8];
                    if (res && part && cl) { /* the residual's lanes past O are not its own */
                        _mm256_storeu_ps(rbuf, _mm256_maskload_ps(res, lanes));
                        res = rbuf;
                    }
                    v8 yv = dn_vop_apply(p->ops, p->nops, _mm256_add_ps(o[y * m + x], bias), res);
                    if (!part) _mm256_storeu_ps(R->dst + off, yv);
                    else if (cl) _mm256_maskstore_ps(R->dst + off, lanes, yv);
                    else _mm256_storeu_ps(R->dst + off, _mm256_and_ps(yv, keep));
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- run ---- */

/* One parallel region: the output transform of the previous pass (out.p NULL: none), then the
 * input transform of the next (in.p NULL: none); they touch different buffers (M and dst, src
 * and V), so no barrier between them. */
typedef struct wino_step {
    wino_run out, in;
} wino_step;

AVX2_FN static void step_work(void *ctx, int ithr, int nthr) {
    wino_step *w = ctx;
    if (w->out.p) out_work(&w->out, ithr, nthr);
    if (w->in.p) in_work(&w->in, ithr, nthr);
}

/* Pass by pass (V and M sized for one, so that they stay in cache and the arena small): the
 * input transform, the matmul, the output transform, the last overlapping the next pass's input
 * transform in one parallel region (a fork and join fewer a pass: r3d_18's 64-channel convs
 * have 28 passes). */
dnnl_status_t dn_wino_run(void *ctx, void *const *ptrs) {
    const dn_wino *p = ctx;
    float *V = ptrs[p->ix_v], *M = ptrs[p->ix_m];
    const float *res = p->ix_res >= 0 ? ptrs[p->ix_res] : NULL;
    wino_step w = {{NULL, NULL, NULL, NULL, 0, 0}, {p, ptrs[0], NULL, V, 0, p->chunk < p->Q ? p->chunk : p->Q}};
    while (w.in.p) {
        rt_dnnl_parallel(step_work, &w);
        int64_t q0 = w.in.q0, q1 = w.in.q1;
        int last = q1 - q0 != p->chunk && p->mm[1]; /* [1]: the last pass has fewer columns */
        dnnl_memory_t const *mem = p->mem[last];
        dnnl_memory_set_data_handle(mem[0], V);
        dnnl_memory_set_data_handle(mem[2], M);
        if (mem[3]) dnnl_memory_set_data_handle(mem[3], ptrs[p->ix_scratch]);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]},
                                   {DNNL_ARG_SCRATCHPAD, mem[3]}};
        dnnl_status_t ds = dnnl_primitive_execute(p->mm[last], p->stream, mem[3] ? 4 : 3, args);
        if (ds == dnnl_success) ds = dnnl_stream_wait(p->stream);
        if (ds != dnnl_success) return ds;
        w.out = (wino_run){p, M, res, ptrs[1], q0, q1};
        w.in.q0 = q1, w.in.q1 = q1 + p->chunk < p->Q ? q1 + p->chunk : p->Q;
        if (q1 >= p->Q) w.in.p = NULL;
    }
    rt_dnnl_parallel(step_work, &w);
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
