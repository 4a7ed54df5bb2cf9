/* Random region graphs for the dnnl backend: "no reference kernel on any graph".
 *
 * A seeded generator writes small Relax modules (text) from every op family the dnnl patterns
 * accept (backends/dnnl/dnnl_op_table.h, dnnl_patterns.c, dnnl_vol_patterns.c): convolutions
 * 1-D / 2-D / 3-D (depthwise, grouped, dilated, strided, asymmetric padding, NCHW / NHWC and
 * their kernel layouts), transposed convolutions, matmul 2-D..4-D with broadcast batch, dense,
 * pools (max / avg, ceil mode, adaptive), binary ops under every broadcast pattern (same shape,
 * ones anywhere, lower rank, scalar, both sides broadcast), eltwise ops, softmax, layer norm,
 * reductions, resize, concat and the data movements (reshape, permute_dims, strided_slice,
 * squeeze / expand_dims) that feed later ops as permuted and strided views, and the fused post-op
 * chains of the composites (bias, relu / clip / hard-swish / gelu / ..., residual add / multiply
 * with broadcast operands, an activation after them), and sibling convolutions / matmuls on one
 * input (merged by the default pipeline, their slices views of the merged result). Shapes are odd, have 1s, channel counts
 * that are no multiple of 8 or 16.
 *
 * Each graph is bound (w / c params to constants, p ones to positive constants, x params stay
 * inputs), run through the default pipeline, partitioned for dnnl, and run on the same inputs
 * through the host executor and through the partition. Then:
 *   - every output matches within |dnnl - host| <= GEN_ATOL + GEN_ATOL_SCALE * max|host|
 *     + GEN_RTOL * |host| (fp32; oneDNN's blocked sums and its exp / erf / tanh approximations,
 *     as tests/dnnl/dnnl_test_util.h argues; the scale term covers sums of a few hundred products
 *     whose result cancels to near 0; a graph where a Winograd convolution ran takes that
 *     algorithm's stated tolerance instead, DT_WINO_* of dnnl_test_util.h); a NaN matches only a NaN of the host's (drawn values that
 *     overflow, then inf - inf: IEEE's answer, which dnnl must give too), an infinity only the
 *     same infinity; an output made by elementwise ops or a layer norm from a value of another
 *     op (a sigmoid or relu6 of a convolution, a layer norm of a log_softmax: fused, or never
 *     compared itself) may differ by that value's bound carried through them too (error
 *     propagation, below);
 *   - no primitive that ran is on oneDNN's reference kernels (rt_prim_info.impl "ref...", at this
 *     ISA: make test runs the suite again under ONEDNN_MAX_CPU_ISA=AVX2);
 *   - an op of the dnnl op table left on the host carries the reason its check gave in the
 *     partition report (never the bare "no pattern matched");
 *   - the partition built into an artifact (format 5: weights whose consumers only reorder
 *     them stored only prepacked), loaded and run gives the in-process run's bits exactly (the
 *     same kernels on the same weights; a NaN only as the very same NaN), every stored pack used
 *     in place; and every GEN_OTHER_ISA-th graph also with its packs keyed for another ISA, so
 *     that the load lays such weights out plain again and reorders them for this CPU.
 * A graph that once failed stays in tests/golden/dnnl_gen (dnnl_gen/regressions). Searches and
 * reductions: GRAFT_GEN_SEED=S GRAFT_GEN_COUNT=N run seeds S..S+N-1 instead of the fixed budget;
 * GRAFT_GEN_PRINT=1 prints each graph; GRAFT_GEN_STATS=1 each output's largest difference,
 * largest host value and bound; GRAFT_GEN_OPT=dnnl.NAME=VALUE sets one backend option
 * (dnnl.debug=1 lists the primitives); GRAFT_GEN_FILE=F.relax runs that module instead. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "byoc/byoc.h"
#include "ir/op.h"
#include "ir/sinfo.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_op_table.h"
#include "deploy/graft_model.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "tests/artifact/pack_edit.h"
#include "tests/compare_util.h"
#include "tests/dnnl/dnnl_test_util.h"
#include "tests/test_util.h"

#define GEN_ATOL 1e-4
#define GEN_ATOL_SCALE 1e-5
#define GEN_RTOL 1e-4

/* the fixed budget of make test: four tests of GEN_PER_BATCH seeds each (seeds 1000-1299,
 * about 20 ms a graph) */
#define GEN_PER_BATCH 75
/* every how many graphs the artifact round trip also runs with packs for another ISA */
#define GEN_OTHER_ISA 4

/* graphs that once failed, kept as regressions: tests/golden/dnnl_gen/seed_<seed>.relax, each
 * with what it found on its first line (saved, so a change of the generator keeps them) */
#define REGRESS_DIR "tests/golden/dnnl_gen"

/* ------------------------------------------------------------------ generator ---- */

#define G_MAXV 96

typedef struct gval {
    char name[16];
    int nd;
    int64_t s[RT_MAX_NDIM];
    bool param, used, mask; /* mask: a bool tensor (elu's x > 0), no operand of later ops */
} gval;

typedef struct gen {
    uint32_t r;
    char params[8192], body[32768];
    size_t pl, bl;
    gval v[G_MAXV];
    int nv, nparam, nline;
    char ops[512]; /* the families drawn, for messages */
} gen;

static uint32_t g_u(gen *g, uint32_t n) {
    g->r ^= g->r << 13;
    g->r ^= g->r >> 17;
    g->r ^= g->r << 5;
    return n ? g->r % n : 0;
}
static int g_ri(gen *g, int lo, int hi) { return lo + (int)g_u(g, (uint32_t)(hi - lo + 1)); }
static bool g_p(gen *g, int percent) { return (int)g_u(g, 100) < percent; }

__attribute__((format(printf, 4, 5))) static void g_cat(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    cr_assert(k >= 0 && (size_t)k < cap - *len, "generated graph too large");
    *len += (size_t)k;
}

static void g_note(gen *g, const char *what) {
    if (strlen(g->ops) + strlen(what) + 2 < sizeof g->ops) {
        strcat(g->ops, what);
        strcat(g->ops, " ");
    }
}

static const char *g_shape_text(int nd, const int64_t *s) {
    static __thread char buf[8][128];
    static __thread int k;
    char *b = buf[k++ & 7];
    size_t l = 0;
    b[0] = 0;
    g_cat(b, 128, &l, "(");
    for (int i = 0; i < nd; i++) g_cat(b, 128, &l, "%s%lld", i ? ", " : "", (long long)s[i]);
    g_cat(b, 128, &l, nd == 1 ? ",)" : ")");
    return b;
}

/* a param: x... an input, w... / c... a constant, p... a positive constant (a divisor) */
static int g_param(gen *g, char kind, int nd, const int64_t *s) {
    cr_assert(g->nv < G_MAXV);
    gval *v = &g->v[g->nv];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%c%d", kind, g->nparam++);
    v->nd = nd;
    memcpy(v->s, s, sizeof(int64_t) * (size_t)nd);
    v->param = true;
    g_cat(g->params, sizeof g->params, &g->pl, "%s%s: R.Tensor(%s, dtype=\"float32\")", g->nparam > 1 ? ", " : "", v->name,
          g_shape_text(nd, s));
    return g->nv++;
}

/* the name of value i, marked used */
static const char *N(gen *g, int i) {
    g->v[i].used = true;
    return g->v[i].name;
}

/* binds a new value of shape (nd, s) to the expression */
__attribute__((format(printf, 4, 5))) static int g_emit(gen *g, int nd, const int64_t *s, const char *fmt, ...) {
    cr_assert(g->nv < G_MAXV);
    gval *v = &g->v[g->nv];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "lv%d", g->nline++);
    v->nd = nd;
    memcpy(v->s, s, sizeof(int64_t) * (size_t)nd);
    char expr[2048];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(expr, sizeof expr, fmt, ap);
    va_end(ap);
    cr_assert(k > 0 && (size_t)k < sizeof expr);
    g_cat(g->body, sizeof g->body, &g->bl, "            %s = %s\n", v->name, expr);
    return g->nv++;
}

static int64_t numel(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* a dim: 1 sometimes, small odd and even sizes, channel counts off the 8 / 16 blocks */
static int64_t g_dim(gen *g) {
    static const int64_t D[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 20, 24, 33};
    return D[g_u(g, sizeof D / sizeof D[0])];
}

static void g_shape(gen *g, int nd, int64_t *s) {
    for (int i = 0; i < nd; i++) s[i] = g_dim(g);
    if (nd >= 3) s[0] = g_p(g, 75) ? 1 : 2;
    while (numel(nd, s) > 6000)
        for (int i = 0; i < nd; i++) s[i] = (s[i] + 1) / 2;
}

/* A data value of rank nd: the newest value of that rank (a chain), an older one, or a new input. */
static int g_data(gen *g, int nd) {
    if (g_p(g, 75))
        for (int i = g->nv - 1; i >= 0; i--)
            if (g->v[i].nd == nd && !g->v[i].mask && g->v[i].name[0] != 'w' && g->v[i].name[0] != 'c' && g->v[i].name[0] != 'p' &&
                numel(nd, g->v[i].s) <= 12000 && (i == g->nv - 1 || g_p(g, 40)))
                return i;
    int64_t s[RT_MAX_NDIM];
    g_shape(g, nd, s);
    return g_param(g, 'x', nd, s);
}

/* A value of any rank 1..5 (mostly the newest one). */
static int g_any(gen *g) {
    for (int i = g->nv - 1; i >= 0 && g_p(g, 80); i--)
        if (!g->v[i].param && !g->v[i].mask && g->v[i].nd >= 1) return i;
    return g_data(g, g_ri(g, 1, 4));
}

/* ------------------------------------------------------------------ post-ops ---- */

#define F32 "\"float32\""

/* An activation on x (of shape nd, s): the single ops and the exporters' multi-op forms the
 * composites fuse (hard-swish, hard-sigmoid, swish, elu). */
static int g_act(gen *g, int x) {
    int nd = g->v[x].nd;
    int64_t s[RT_MAX_NDIM];
    memcpy(s, g->v[x].s, sizeof s);
    const char *n = N(g, x);
    switch (g_u(g, 13)) {
    case 0: g_note(g, "relu"); return g_emit(g, nd, s, "R.nn.relu(%s)", n);
    case 1: g_note(g, "relu6"); return g_emit(g, nd, s, "R.nn.relu6(%s)", n);
    case 2: g_note(g, "leakyrelu"); return g_emit(g, nd, s, "R.nn.leakyrelu(%s, alpha=0.1)", n);
    case 3:
        g_note(g, "clip");
        return g_emit(g, nd, s, "R.clip(%s, R.prim_value(T.float32(-0.5)), R.prim_value(T.float32(%d.5)))", n, g_ri(g, 0, 3));
    case 4: g_note(g, "sigmoid"); return g_emit(g, nd, s, "R.sigmoid(%s)", n);
    case 5: g_note(g, "tanh"); return g_emit(g, nd, s, "R.tanh(%s)", n);
    case 6: g_note(g, "gelu"); return g_emit(g, nd, s, "R.nn.gelu(%s)", n);
    case 7: g_note(g, "gelu_tanh"); return g_emit(g, nd, s, "R.nn.gelu_tanh(%s)", n);
    case 8: g_note(g, "silu"); return g_emit(g, nd, s, "R.nn.silu(%s)", n);
    case 9: { /* x * clip(x + 3, 0, 6) / 6 */
        g_note(g, "hardswish");
        int a = g_emit(g, nd, s, "R.add(%s, R.const(3.0, " F32 "))", n);
        int c = g_emit(g, nd, s, "R.clip(%s, R.prim_value(T.float32(0)), R.prim_value(T.float32(6)))", N(g, a));
        int m = g_emit(g, nd, s, "R.multiply(%s, %s)", n, N(g, c));
        return g_emit(g, nd, s, "R.divide(%s, R.const(6.0, " F32 "))", N(g, m));
    }
    case 10: { /* clip(x / 6 + 0.5, 0, 1) */
        g_note(g, "hardsigmoid");
        int a = g_emit(g, nd, s, "R.divide(%s, R.const(6.0, " F32 "))", n);
        int b = g_emit(g, nd, s, "R.add(%s, R.const(0.5, " F32 "))", N(g, a));
        return g_emit(g, nd, s, "R.clip(%s, R.prim_value(T.float32(0)), R.prim_value(T.float32(1)))", N(g, b));
    }
    case 11: { /* x * sigmoid(x) */
        g_note(g, "swish");
        int a = g_emit(g, nd, s, "R.sigmoid(%s)", n);
        return g_emit(g, nd, s, "R.multiply(%s, %s)", n, N(g, a));
    }
    default: { /* where(x > 0, x, alpha * (exp(x) - 1)) */
        g_note(g, "elu");
        int e = g_emit(g, nd, s, "R.exp(%s)", n);
        int b = g_emit(g, nd, s, "R.subtract(%s, R.const(1.0, " F32 "))", N(g, e));
        int m = g_emit(g, nd, s, "R.multiply(%s, R.const(0.7, " F32 "))", N(g, b));
        int gt = g_emit(g, nd, s, "R.greater(%s, R.const(0.0, " F32 "))", n);
        g->v[gt].mask = true;
        return g_emit(g, nd, s, "R.where(%s, %s, %s)", N(g, gt), n, N(g, m));
    }
    }
}

/* A shape broadcasting to (nd, s): kind 0 same, 1 per-axis `axis` only, 2 ones at random axes,
 * 3 a trailing suffix (lower rank), 4 a scalar. */
static int g_bshape(gen *g, int nd, const int64_t *s, int axis, int kind, int64_t *o) {
    switch (kind) {
    case 0: memcpy(o, s, sizeof(int64_t) * (size_t)nd); return nd;
    case 1: {
        int r = g_p(g, 50) ? nd : nd - axis; /* (1, C, 1, 1) or (C, 1, 1) */
        for (int i = 0; i < r; i++) o[i] = nd - r + i == axis ? s[axis] : 1;
        return r;
    }
    case 2:
        for (int i = 0; i < nd; i++) o[i] = g_p(g, 50) ? 1 : s[i];
        return nd;
    case 3: {
        int r = g_ri(g, 1, nd);
        for (int i = 0; i < r; i++) o[i] = s[nd - r + i];
        return r;
    }
    default: return 0;
    }
}

/* The posts of a composite anchored at y with its channel axis ca: bias, an activation, a
 * residual add / multiply with a broadcast operand, an activation after it. */
static int g_posts(gen *g, int y, int ca) {
    int nd = g->v[y].nd;
    int64_t s[RT_MAX_NDIM], o[RT_MAX_NDIM];
    memcpy(s, g->v[y].s, sizeof s);
    if (g_p(g, 70)) {
        int r = g_bshape(g, nd, s, ca, 1, o);
        int b = g_param(g, 'c', r, o);
        g_note(g, "bias");
        y = g_p(g, 80) ? g_emit(g, nd, s, "R.add(%s, %s)", N(g, y), N(g, b)) : g_emit(g, nd, s, "R.add(%s, %s)", N(g, b), N(g, y));
    }
    if (g_p(g, 60)) y = g_act(g, y);
    if (g_p(g, 45)) {
        int kind = (int)g_u(g, 5), r = g_bshape(g, nd, s, ca, kind, o);
        /* an earlier value of the shape (a residual), else a new operand */
        int other = kind == 0 && g_p(g, 30) ? g_data(g, nd) : -1;
        if (other < 0 || g->v[other].nd != nd || memcmp(g->v[other].s, s, sizeof(int64_t) * (size_t)nd))
            other = g_param(g, kind == 0 || kind == 2 ? 'x' : 'c', r, o);
        bool mul = g_p(g, 30);
        g_note(g, mul ? "residual_mul" : "residual_add");
        y = g_p(g, 70) ? g_emit(g, nd, s, "R.%s(%s, %s)", mul ? "multiply" : "add", N(g, y), N(g, other))
                       : g_emit(g, nd, s, "R.%s(%s, %s)", mul ? "multiply" : "add", N(g, other), N(g, y));
        if (g_p(g, 40)) y = g_act(g, y);
    }
    return y;
}

/* ------------------------------------------------------------------ op families ---- */

static void g_ints(char *b, size_t cap, int n, const int64_t *v) {
    size_t l = 0;
    g_cat(b, cap, &l, "[");
    for (int i = 0; i < n; i++) g_cat(b, cap, &l, "%s%lld", i ? ", " : "", (long long)v[i]);
    g_cat(b, cap, &l, "]");
}

/* Convolution with `dims` spatial dims (1, 2, 3): layouts, groups (depthwise, grouped),
 * kernel, stride, dilation, asymmetric padding; then the composite posts. */
static int g_conv(gen *g, int dims) {
    int nd = dims + 2;
    bool last = dims < 3 && g_p(g, 35); /* channels-last data */
    int x = g_data(g, nd);
    const int64_t *xs = g->v[x].s;
    int ca = last ? nd - 1 : 1, sp0 = last ? 1 : 2;
    int64_t C = xs[ca], G = 1, O;
    switch (g_u(g, 4)) {
    case 0: G = C; O = C * g_ri(g, 1, 2); break; /* depthwise */
    case 1:
        for (int64_t k = C / 2; k > 1; k--)
            if (C % k == 0) {
                G = k;
                break;
            }
        O = G * g_ri(g, 1, 3);
        break;
    default: O = g_dim(g) + g_ri(g, 0, 8);
    }
    if (O % G) O = G;
    int64_t K[3], S[3], D[3], P[6], os[RT_MAX_NDIM];
    for (int i = 0; i < dims; i++) {
        int64_t in = xs[sp0 + i];
        static const int64_t KS[] = {1, 3, 3, 5, 2};
        K[i] = KS[g_u(g, 5)];
        S[i] = g_p(g, 30) ? 2 : 1;
        D[i] = g_p(g, 20) ? 2 : 1;
        P[i] = g_ri(g, 0, (int)(K[i] - 1));
        P[i + dims] = g_p(g, 70) ? P[i] : g_ri(g, 0, (int)(K[i] - 1));
        if (in + P[i] + P[i + dims] < D[i] * (K[i] - 1) + 1) K[i] = D[i] = 1;
        os[sp0 + i] = (in + P[i] + P[i + dims] - D[i] * (K[i] - 1) - 1) / S[i] + 1;
    }
    os[0] = xs[0];
    os[ca] = O;
    /* weights: OIHW (OIW, OIDHW), or for channels-last data OHWI / HWIO (OWI / WIO) */
    int64_t ws[RT_MAX_NDIM];
    bool hwio = last && g_p(g, 50);
    const char *dl = dims == 1 ? "NWC" : "NHWC", *kl;
    if (!last) {
        ws[0] = O;
        ws[1] = C / G;
        for (int i = 0; i < dims; i++) ws[2 + i] = K[i];
        kl = dims == 1 ? "OIW" : dims == 2 ? "OIHW" : "OIDHW";
    } else if (hwio) {
        for (int i = 0; i < dims; i++) ws[i] = K[i];
        ws[dims] = C / G;
        ws[dims + 1] = O;
        kl = dims == 1 ? "WIO" : "HWIO";
    } else {
        ws[0] = O;
        for (int i = 0; i < dims; i++) ws[1 + i] = K[i];
        ws[dims + 1] = C / G;
        kl = dims == 1 ? "OWI" : "OHWI";
    }
    int w = g_param(g, 'w', nd, ws);
    char st[64], pd[64], dd[64], lay[96] = "";
    g_ints(st, sizeof st, dims, S);
    g_ints(pd, sizeof pd, 2 * dims, P);
    g_ints(dd, sizeof dd, dims, D);
    if (last) snprintf(lay, sizeof lay, ", data_layout=\"%s\", kernel_layout=\"%s\"", dl, kl);
    char note[64];
    snprintf(note, sizeof note, "conv%dd%s%s%s%s", dims, last ? "_nhwc" : "", G == C && C > 1 ? "_dw" : G > 1 ? "_grouped" : "",
             S[0] > 1 ? "_strided" : "", D[0] > 1 ? "_dilated" : "");
    g_note(g, note);
    int y = g_emit(g, nd, os, "R.nn.conv%dd(%s, %s, strides=%s, padding=%s, dilation=%s, groups=%lld%s)", dims, N(g, x), N(g, w),
                   st, pd, dd, (long long)G, lay);
    return g_posts(g, y, ca);
}

/* 2-D transposed convolution (constant weights IOHW), stride, padding, output padding, groups. */
static int g_deconv(gen *g) {
    int x = g_data(g, 4);
    const int64_t *xs = g->v[x].s;
    int64_t C = xs[1], G = C % 2 == 0 && g_p(g, 30) ? 2 : 1, Og = g_ri(g, 1, 6);
    int64_t K = g_ri(g, 1, 4), S = g_ri(g, 1, 2), P = g_ri(g, 0, (int)(K - 1) / 2), OP = S > 1 ? g_ri(g, 0, (int)S - 1) : 0;
    int64_t os[4] = {xs[0], G * Og, 0, 0};
    for (int i = 0; i < 2; i++) os[2 + i] = (xs[2 + i] - 1) * S - 2 * P + K + OP;
    if (os[2] < 1 || os[3] < 1) return x;
    int w = g_param(g, 'w', 4, (int64_t[]){C, Og, K, K});
    g_note(g, "conv2d_transpose");
    int y = g_emit(g, 4, os, "R.nn.conv2d_transpose(%s, %s, strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], "
                             "output_padding=[%lld, %lld], groups=%lld)",
                   N(g, x), N(g, w), (long long)S, (long long)S, (long long)P, (long long)P, (long long)P, (long long)P,
                   (long long)OP, (long long)OP, (long long)G);
    return g_posts(g, y, 1);
}

/* matmul of ranks 2..4 with broadcast batch dims, transposed views of either side, constant or
 * runtime weights; dense (x @ permute_dims(w)); then the composite posts. */
static int g_matmul(gen *g) {
    int ra = g_ri(g, 2, 4), rb = g_ri(g, 2, 4), nb = (ra > rb ? ra : rb) - 2;
    int64_t B[2], as[RT_MAX_NDIM], bs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    for (int i = 0; i < nb; i++) B[i] = g_ri(g, 1, 4);
    int64_t M = g_dim(g), K = g_dim(g), Nn = g_dim(g);
    /* a: an earlier value of rank ra fixes its batch, M and K */
    int a = -1;
    for (int i = g->nv - 1; i >= 0 && a < 0 && g_p(g, 70); i--)
        if (!g->v[i].param && !g->v[i].mask && g->v[i].nd == ra) a = i;
    if (a >= 0) {
        memcpy(as, g->v[a].s, sizeof as);
        M = as[ra - 2];
        K = as[ra - 1];
        for (int i = 0; i < ra - 2; i++) B[nb - (ra - 2) + i] = as[i];
    } else {
        for (int i = 0; i < ra - 2; i++) as[i] = g_p(g, 25) ? 1 : B[nb - (ra - 2) + i];
        as[ra - 2] = M;
        as[ra - 1] = K;
    }
    for (int i = 0; i < rb - 2; i++) {
        int64_t ab = i + ra - rb >= 0 ? as[i + ra - rb] : B[nb - (rb - 2) + i];
        bs[i] = g_p(g, 25) ? 1 : ab;
        if (ab != 1 && bs[i] != 1) bs[i] = ab;
    }
    bs[rb - 2] = K;
    bs[rb - 1] = Nn;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
        int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
        os[i] = da > db ? da : db;
    }
    os[nb] = M;
    os[nb + 1] = Nn;
    if (a < 0 && g_p(g, 25)) { /* a transposed view feeding the matmul */
        int64_t ts[RT_MAX_NDIM];
        memcpy(ts, as, sizeof ts);
        ts[ra - 2] = K;
        ts[ra - 1] = M;
        int t = g_param(g, 'x', ra, ts);
        int64_t ax[RT_MAX_NDIM];
        for (int i = 0; i < ra; i++) ax[i] = i;
        ax[ra - 2] = ra - 1;
        ax[ra - 1] = ra - 2;
        char axs[64];
        g_ints(axs, sizeof axs, ra, ax);
        a = g_emit(g, ra, as, "R.permute_dims(%s, axes=%s)", N(g, t), axs);
        g_note(g, "transposed_a");
    } else if (a < 0) {
        a = g_param(g, 'x', ra, as);
    }
    /* b: a constant, an input, or a transposed view of either (dense when 2-D constant) */
    int kind = (int)g_u(g, 4);
    char bt[160];
    if (kind >= 2) {
        int64_t ts[RT_MAX_NDIM];
        memcpy(ts, bs, sizeof ts);
        ts[rb - 2] = Nn;
        ts[rb - 1] = K;
        int t = g_param(g, kind == 2 ? 'w' : 'x', rb, ts);
        int64_t ax[RT_MAX_NDIM];
        for (int i = 0; i < rb; i++) ax[i] = i;
        ax[rb - 2] = rb - 1;
        ax[rb - 1] = rb - 2;
        char axs[64];
        g_ints(axs, sizeof axs, rb, ax);
        snprintf(bt, sizeof bt, "R.permute_dims(%s, axes=%s)", N(g, t), axs);
        g_note(g, kind == 2 && rb == 2 ? "dense" : "matmul_bt");
    } else {
        snprintf(bt, sizeof bt, "%s", N(g, g_param(g, kind ? 'x' : 'w', rb, bs)));
    }
    char note[32];
    snprintf(note, sizeof note, "matmul%dx%d", ra, rb);
    g_note(g, note);
    int y = g_emit(g, nb + 2, os, "R.matmul(%s, %s)", N(g, a), bt);
    return g_posts(g, y, nb + 1);
}

/* A pool's output length (k, s, padding p0 / p1): ceil mode drops a last window that would start
 * past the input and its left padding, as the IR's shape inference and the kernels do. */
static int64_t g_pool_out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, bool ceil_mode) {
    int64_t span = in + p0 + p1 - k, o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    return ceil_mode && (o - 1) * s >= in + p0 ? o - 1 : o;
}

/* Pooling with `dims` spatial dims: max / avg, layouts, kernel, stride, padding, ceil mode,
 * count_include_pad; or adaptive (2-D, 1-D), even windows or not. */
static int g_pool(gen *g, int dims) {
    int nd = dims + 2;
    bool last = dims < 3 && g_p(g, 30);
    int x = g_data(g, nd);
    const int64_t *xs = g->v[x].s;
    int sp0 = last ? 1 : 2;
    int64_t os[RT_MAX_NDIM];
    memcpy(os, xs, sizeof os);
    const char *lay = dims == 1 ? (last ? "NWC" : "NCW") : dims == 2 ? (last ? "NHWC" : "NCHW") : "NCDHW";
    if (dims < 3 && g_p(g, 25)) {
        bool even = g_p(g, 80), mx = dims == 2 && g_p(g, 40);
        int64_t o[2];
        for (int i = 0; i < dims; i++) {
            int64_t in = xs[sp0 + i];
            o[i] = 1;
            for (int64_t k = g_ri(g, 1, 4); k >= 1 && even; k--)
                if (in % k == 0) {
                    o[i] = k;
                    break;
                }
            if (!even) o[i] = in > 2 ? in - 1 : 1;
            os[sp0 + i] = o[i];
        }
        g_note(g, mx ? "adaptive_max_pool" : "adaptive_avg_pool");
        char osz[32];
        g_ints(osz, sizeof osz, dims, o);
        return g_emit(g, nd, os, "R.nn.adaptive_%s_pool%dd(%s, output_size=%s, layout=\"%s\")", mx ? "max" : "avg", dims, N(g, x), osz,
                      lay);
    }
    bool mx = g_p(g, 50), ceil_mode = g_p(g, 20), cip = !mx && g_p(g, 40);
    int64_t K[3], S[3], P[6];
    for (int i = 0; i < dims; i++) {
        K[i] = g_ri(g, 1, 3);
        if (K[i] > xs[sp0 + i]) K[i] = xs[sp0 + i];
        S[i] = g_ri(g, 1, 2);
        P[i] = g_ri(g, 0, (int)(K[i] / 2));
        P[i + dims] = g_ri(g, 0, (int)(K[i] / 2));
    }
    for (int i = 0; i < dims; i++) os[sp0 + i] = g_pool_out(xs[sp0 + i], K[i], S[i], P[i], P[i + dims], ceil_mode);
    char ks[64], st[64], pd[64], note[48];
    g_ints(ks, sizeof ks, dims, K);
    g_ints(st, sizeof st, dims, S);
    g_ints(pd, sizeof pd, 2 * dims, P);
    snprintf(note, sizeof note, "%s_pool%dd%s%s", mx ? "max" : "avg", dims, last ? "_nhwc" : "", ceil_mode ? "_ceil" : "");
    g_note(g, note);
    int y = g_emit(g, nd, os, "R.nn.%s_pool%dd(%s, pool_size=%s, strides=%s, padding=%s, ceil_mode=%s, count_include_pad=%s, layout=\"%s\")",
                   mx ? "max" : "avg", dims, N(g, x), ks, st, pd, ceil_mode ? "True" : "False", cip ? "True" : "False", lay);
    return g_p(g, 30) ? g_act(g, y) : y;
}

/* A pointwise convolution (any groups, a bias sometimes, an activation before it sometimes)
 * under an average pool: the default pipeline's PoolBeforeConv1x1 runs the pool first where
 * the pool shrinks the image (DenseNet's transitions); paddings and ceil mode where it stays. */
static int g_conv1x1_pool(gen *g) {
    int x = g_data(g, 4);
    if (g_p(g, 40)) x = g_act(g, x);
    const int64_t *xs = g->v[x].s;
    int64_t C = xs[1], G = C % 2 == 0 && g_p(g, 30) ? 2 : 1, O = G * g_ri(g, 1, 12);
    int w = g_param(g, 'w', 4, (int64_t[]){O, C / G, 1, 1});
    int64_t ys[4] = {xs[0], O, xs[2], xs[3]};
    g_note(g, "conv1x1_avg_pool");
    int y = g_emit(g, 4, ys, "R.nn.conv2d(%s, %s, groups=%lld)", N(g, x), N(g, w), (long long)G);
    if (g_p(g, 50)) {
        int b = g_param(g, 'c', 4, (int64_t[]){1, O, 1, 1});
        y = g_emit(g, 4, ys, "R.add(%s, %s)", N(g, y), N(g, b));
    }
    int64_t K[2], S[2], P[4], os[4] = {ys[0], O, 0, 0};
    bool pad = g_p(g, 25), ceil_mode = g_p(g, 25), cip = g_p(g, 40);
    for (int i = 0; i < 2; i++) {
        K[i] = g_ri(g, 1, 3);
        if (K[i] > ys[2 + i]) K[i] = ys[2 + i];
        S[i] = g_ri(g, 1, 3);
        P[i] = pad ? g_ri(g, 0, (int)(K[i] / 2)) : 0;
        P[i + 2] = pad ? g_ri(g, 0, (int)(K[i] / 2)) : 0;
    }
    for (int i = 0; i < 2; i++) os[2 + i] = g_pool_out(ys[2 + i], K[i], S[i], P[i], P[i + 2], ceil_mode);
    return g_emit(g, 4, os, "R.nn.avg_pool2d(%s, pool_size=[%lld, %lld], strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld], "
                            "ceil_mode=%s, count_include_pad=%s)",
                  N(g, y), (long long)K[0], (long long)K[1], (long long)S[0], (long long)S[1], (long long)P[0], (long long)P[1],
                  (long long)P[2], (long long)P[3], ceil_mode ? "True" : "False", cip ? "True" : "False");
}

/* Siblings: 2..4 convolutions (mostly 1x1, groups 1) or matmuls with constant weights reading
 * one input with the same attrs, each with the same epilogue (a bias, an activation) or now and
 * then one of its own, or another stride: the default pipeline's MergeSiblings runs the 1x1 ones that
 * agree as one, and a split hands out the slices (inception branches, q / k / v projections);
 * the results go on to a concat (which keeps a result it alone reads out of the merge), out,
 * or to the next family. */
static int g_siblings(gen *g) {
    static const char *ACT[] = {"R.nn.relu", "R.sigmoid", "R.nn.gelu"};
    bool mm = g_p(g, 35), bias = g_p(g, 70);
    int n = g_ri(g, 2, 4), act = g_ri(g, -1, 2), x, nd, ys[4];
    int64_t s[RT_MAX_NDIM];
    if (mm) {
        nd = g_ri(g, 2, 3);
        x = g_data(g, nd);
    } else {
        nd = 4;
        x = g_data(g, 4);
    }
    memcpy(s, g->v[x].s, sizeof s);
    int64_t k = g_p(g, 75) ? 1 : 3, st = g_p(g, 80) ? 1 : 2;
    g_note(g, mm ? "sibling_matmuls" : "sibling_convs");
    for (int i = 0; i < n; i++) {
        int64_t w = g_p(g, 50) ? 8 * g_ri(g, 1, 4) : g_dim(g), os[RT_MAX_NDIM];
        memcpy(os, s, sizeof os);
        int y;
        if (mm) {
            os[nd - 1] = w;
            int wv = g_param(g, 'w', 2, (int64_t[]){s[nd - 1], w});
            y = g_emit(g, nd, os, "R.matmul(%s, %s)", N(g, x), N(g, wv));
        } else {
            int64_t si = g_p(g, 10) ? 3 - st : st; /* now and then a stride of its own */
            os[1] = w;
            os[2] = (s[2] + 2 * (k / 2) - k) / si + 1;
            os[3] = (s[3] + 2 * (k / 2) - k) / si + 1;
            int wv = g_param(g, 'w', 4, (int64_t[]){w, s[1], k, k});
            y = g_emit(g, 4, os, "R.nn.conv2d(%s, %s, strides=[%lld, %lld], padding=[%lld, %lld, %lld, %lld])", N(g, x), N(g, wv),
                       (long long)si, (long long)si, (long long)(k / 2), (long long)(k / 2), (long long)(k / 2), (long long)(k / 2));
        }
        if (bias) {
            int64_t o[RT_MAX_NDIM];
            int r = mm ? 1 : g_bshape(g, nd, os, 1, 1, o);
            if (mm) o[0] = w;
            int b = g_param(g, 'c', r, o);
            y = g_emit(g, nd, os, "R.add(%s, %s)", N(g, y), N(g, b));
        }
        int a = g_p(g, 15) ? g_ri(g, -1, 2) : act; /* now and then an epilogue of its own */
        if (a >= 0) y = g_emit(g, nd, os, "%s(%s)", ACT[a], N(g, y));
        ys[i] = y;
    }
    /* the convolutions' slices into a concat (inception's), when their images agree */
    bool same = !mm && g_p(g, 50);
    for (int i = 1; i < n && same; i++) same = g->v[ys[i]].s[2] == g->v[ys[0]].s[2] && g->v[ys[i]].s[3] == g->v[ys[0]].s[3];
    if (!same) return ys[n - 1];
    /* now and then another reader of the first result: then it merges, its slice copied into
     * the concat's slot */
    if (g_p(g, 50)) g_emit(g, 4, g->v[ys[0]].s, "R.multiply(%s, %s)", N(g, ys[0]), N(g, ys[0]));
    char fields[256];
    size_t l = 0;
    int64_t cs[RT_MAX_NDIM];
    memcpy(cs, g->v[ys[0]].s, sizeof cs);
    cs[1] = 0;
    for (int i = 0; i < n; i++) {
        g_cat(fields, sizeof fields, &l, "%s%s", i ? ", " : "", N(g, ys[i]));
        cs[1] += g->v[ys[i]].s[1];
    }
    return g_emit(g, 4, cs, "R.concat((%s), axis=1)", fields);
}

/* A binary op on x and an operand of a broadcast shape, either order; both sides broadcast
 * sometimes (the check rejects that: host, with its reason). */
static int g_binary(gen *g) {
    static const char *OPS[] = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"};
    int op = (int)g_u(g, 7), x = g_any(g), nd = g->v[x].nd;
    int64_t s[RT_MAX_NDIM], o[RT_MAX_NDIM];
    memcpy(s, g->v[x].s, sizeof s);
    if (op == 6) { /* a positive base, a scalar exponent */
        int a = g_emit(g, nd, s, "R.abs(%s)", N(g, x));
        int b = g_emit(g, nd, s, "R.add(%s, R.const(0.5, " F32 "))", N(g, a));
        g_note(g, "power");
        return g_emit(g, nd, s, "R.power(%s, R.const(%s, " F32 "))", N(g, b), g_p(g, 50) ? "2.0" : "0.5");
    }
    int kind = (int)g_u(g, 6), r;
    int64_t ys[RT_MAX_NDIM];
    memcpy(ys, s, sizeof ys);
    if (kind == 5 && nd >= 2) { /* both broadcast: x's ones where the operand has dims */
        int ax = g_ri(g, 0, nd - 1);
        r = nd;
        for (int i = 0; i < nd; i++) o[i] = i == ax ? s[i] : 1;
        int64_t xs2[RT_MAX_NDIM];
        memcpy(xs2, s, sizeof xs2);
        xs2[ax] = 1;
        x = g_param(g, 'x', nd, xs2);
    } else {
        r = g_bshape(g, nd, s, nd > 1 ? 1 : 0, kind > 4 ? 2 : kind, o);
    }
    char kind_c = op == 3 ? 'p' : g_p(g, 50) ? 'x' : 'c';
    int y = g_param(g, kind_c, r, o);
    bool swap = op != 3 && g_p(g, 40);
    for (int i = 0; i < r; i++) ys[nd - r + i] = ys[nd - r + i] > o[i] ? ys[nd - r + i] : o[i];
    static const char *KN[] = {"same", "per_channel", "ones", "suffix", "scalar", "both"};
    char note[48];
    snprintf(note, sizeof note, "%s_%s", OPS[op], KN[kind == 5 && nd >= 2 ? 5 : kind > 4 ? 2 : kind]);
    g_note(g, note);
    return swap ? g_emit(g, nd, ys, "R.%s(%s, %s)", OPS[op], N(g, y), N(g, x)) : g_emit(g, nd, ys, "R.%s(%s, %s)", OPS[op], N(g, x), N(g, y));
}

/* A unary op of the table; log / sqrt / rsqrt on a positive value. */
static int g_unary(gen *g) {
    int x = g_any(g), nd = g->v[x].nd;
    int64_t s[RT_MAX_NDIM];
    memcpy(s, g->v[x].s, sizeof s);
    static const char *U[] = {"exp", "abs", "square", "negative", "log", "sqrt", "rsqrt"};
    int k = (int)g_u(g, 9);
    if (k >= 7) return g_act(g, x);
    if (k >= 4) {
        int a = g_emit(g, nd, s, "R.abs(%s)", N(g, x));
        x = g_emit(g, nd, s, "R.add(%s, R.const(0.25, " F32 "))", N(g, a));
    }
    g_note(g, U[k]);
    return g_emit(g, nd, s, "R.%s(%s)", U[k], N(g, x));
}

static int g_softmax(gen *g) {
    int x = g_any(g), nd = g->v[x].nd, ax = g_ri(g, -nd, nd - 1);
    bool lg = g_p(g, 30);
    g_note(g, lg ? "log_softmax" : "softmax");
    return g_emit(g, nd, g->v[x].s, "R.nn.%s(%s, axis=%d)", lg ? "log_softmax" : "softmax", N(g, x), ax);
}

static int g_layer_norm(gen *g) {
    int x = g_any(g), nd = g->v[x].nd;
    int64_t C = g->v[x].s[nd - 1];
    int ga = g_param(g, 'c', 1, &C), be = g_param(g, 'c', 1, &C);
    g_note(g, "layer_norm");
    return g_emit(g, nd, g->v[x].s, "R.nn.layer_norm(%s, %s, %s, axes=[-1])", N(g, x), N(g, ga), N(g, be));
}

static int g_reduce(gen *g) {
    static const char *R[] = {"mean", "sum", "max", "min", "prod"};
    int x = g_any(g), nd = g->v[x].nd, op = (int)g_u(g, 5);
    bool keep = g_p(g, 50);
    int64_t ax[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int na = 0, on = 0;
    int64_t span = 1;
    for (int i = 0; i < nd; i++) {
        bool r = g_p(g, 40) && (op != 4 || span * g->v[x].s[i] <= 8);
        if (r) {
            ax[na++] = i;
            span *= g->v[x].s[i];
        }
        if (!r || keep) os[on++] = r ? 1 : g->v[x].s[i];
    }
    if (!na) {
        ax[na++] = nd - 1;
        on = 0;
        for (int i = 0; i < nd; i++)
            if (i != nd - 1 || keep) os[on++] = i == nd - 1 ? 1 : g->v[x].s[i];
    }
    char axs[64];
    g_ints(axs, sizeof axs, na, ax);
    g_note(g, R[op]);
    return g_emit(g, on, os, "R.%s(%s, axis=%s, keepdims=%s)", R[op], N(g, x), axs, keep ? "True" : "False");
}

static int g_resize(gen *g) {
    int x = g_data(g, 4);
    int64_t os[4];
    memcpy(os, g->v[x].s, sizeof os);
    bool nearest = g_p(g, 50);
    for (int i = 2; i < 4; i++) os[i] = nearest ? os[i] * g_ri(g, 1, 3) : g_ri(g, 1, 2 * (int)os[i] + 2);
    g_note(g, nearest ? "resize_nearest" : "resize_linear");
    if (nearest)
        return g_emit(g, 4, os, "R.image.resize2d(%s, R.shape([%lld, %lld]), method=\"nearest_neighbor\", "
                                "coordinate_transformation_mode=\"asymmetric\", rounding_method=\"floor\")",
                      N(g, x), (long long)os[2], (long long)os[3]);
    return g_emit(g, 4, os, "R.image.resize2d(%s, R.shape([%lld, %lld]), method=\"linear\", coordinate_transformation_mode=\"half_pixel\")",
                  N(g, x), (long long)os[2], (long long)os[3]);
}

static int g_concat(gen *g) {
    int x = g_any(g), nd = g->v[x].nd, ax = g_ri(g, 0, nd - 1), nf = g_ri(g, 2, 3);
    int64_t os[RT_MAX_NDIM];
    memcpy(os, g->v[x].s, sizeof os);
    char fields[256];
    size_t l = 0;
    g_cat(fields, sizeof fields, &l, "%s", N(g, x));
    for (int f = 1; f < nf; f++) {
        int y;
        if (g_p(g, 25)) y = x;
        else {
            int64_t s[RT_MAX_NDIM];
            memcpy(s, g->v[x].s, sizeof s);
            s[ax] = g_ri(g, 1, 9);
            y = g_param(g, 'x', nd, s);
        }
        os[ax] += g->v[y].s[ax];
        g_cat(fields, sizeof fields, &l, ", %s", N(g, y));
    }
    g_note(g, "concat");
    return g_emit(g, nd, os, "R.concat((%s), axis=%d)", fields, ax);
}

/* Data movement: permute_dims, reshape (merge / split dims), strided_slice, squeeze /
 * expand_dims; the result feeds the next op as a permuted or strided view. */
static int g_move(gen *g) {
    int x = g_any(g), nd = g->v[x].nd;
    int64_t s[RT_MAX_NDIM], os[RT_MAX_NDIM];
    memcpy(s, g->v[x].s, sizeof s);
    char b[160];
    switch (g_u(g, 4)) {
    case 0: {
        int64_t p[RT_MAX_NDIM];
        for (int i = 0; i < nd; i++) p[i] = i;
        for (int i = nd - 1; i > 0; i--) {
            int j = g_ri(g, 0, i);
            int64_t t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        for (int i = 0; i < nd; i++) os[i] = s[p[i]];
        g_ints(b, sizeof b, nd, p);
        g_note(g, "permute_dims");
        return g_emit(g, nd, os, "R.permute_dims(%s, axes=%s)", N(g, x), b);
    }
    case 1: {
        int on = 0;
        if (nd >= 2 && (g_p(g, 50) || nd >= 5)) { /* merge two adjacent dims */
            int k = g_ri(g, 0, nd - 2);
            for (int i = 0; i < nd; i++) {
                if (i == k + 1) continue;
                os[on++] = i == k ? s[k] * s[k + 1] : s[i];
            }
        } else { /* split a dim */
            int k = g_ri(g, 0, nd - 1);
            int64_t f = s[k] % 3 == 0 ? 3 : s[k] % 2 == 0 ? 2 : 1;
            for (int i = 0; i < nd; i++) {
                if (i == k) {
                    os[on++] = f;
                    os[on++] = s[k] / f;
                } else os[on++] = s[i];
            }
        }
        g_ints(b, sizeof b, on, os);
        g_note(g, "reshape");
        return g_emit(g, on, os, "R.reshape(%s, R.shape(%s))", N(g, x), b);
    }
    case 2: {
        char ax[96], be[96], en[96], st[96];
        size_t la = 0, lb = 0, le = 0, ls = 0;
        int n = 0;
        memcpy(os, s, sizeof os);
        for (int i = 0; i < nd; i++) {
            if (s[i] < 2 || !g_p(g, 50)) continue;
            int64_t b0 = g_ri(g, 0, (int)s[i] - 1), e0 = g_ri(g, (int)b0 + 1, (int)s[i]), step = g_ri(g, 1, 2);
            os[i] = (e0 - b0 + step - 1) / step;
            g_cat(ax, sizeof ax, &la, "%sR.prim_value(%d)", n ? ", " : "", i);
            g_cat(be, sizeof be, &lb, "%sR.prim_value(%lld)", n ? ", " : "", (long long)b0);
            g_cat(en, sizeof en, &le, "%sR.prim_value(%lld)", n ? ", " : "", (long long)e0);
            g_cat(st, sizeof st, &ls, "%sR.prim_value(%lld)", n ? ", " : "", (long long)step);
            n++;
        }
        if (!n) return x;
        g_note(g, "strided_slice");
        return g_emit(g, nd, os, "R.strided_slice(%s, (%s%s), (%s%s), (%s%s), (%s%s))", N(g, x), ax, n == 1 ? "," : "", be,
                      n == 1 ? "," : "", en, n == 1 ? "," : "", st, n == 1 ? "," : "");
    }
    default: {
        int one = -1;
        for (int i = 0; i < nd; i++)
            if (s[i] == 1 && nd > 1) one = i;
        if (one >= 0 && g_p(g, 60)) {
            int on = 0;
            for (int i = 0; i < nd; i++)
                if (i != one) os[on++] = s[i];
            g_note(g, "squeeze");
            return g_emit(g, on, os, "R.squeeze(%s, axis=[%d])", N(g, x), one);
        }
        if (nd >= 5) return x;
        int k = g_ri(g, 0, nd), on = 0;
        for (int i = 0; i <= nd; i++) os[on++] = i == k ? 1 : s[i - (i > k)];
        g_note(g, "expand_dims");
        return g_emit(g, on, os, "R.expand_dims(%s, axis=[%d])", N(g, x), k);
    }
    }
}

typedef int (*g_family)(gen *g);
static int f_conv1d(gen *g) { return g_conv(g, 1); }
static int f_conv2d(gen *g) { return g_conv(g, 2); }
static int f_conv3d(gen *g) { return g_conv(g, 3); }

/* 3x3x3 stride-1 convolution of 16..40 channels (graft's 3-D Winograd, dnnl_wino.c, where its
 * tile rule takes it): padding 0..1 a side, 0..2 in depth (more output depths than input ones:
 * oneDNN's), batch 1..2, then the posts. */
static int f_conv3d_wino(gen *g) {
    int64_t xs[5] = {g_ri(g, 1, 2), g_ri(g, 16, 40), g_ri(g, 1, 5), g_ri(g, 1, 12), g_ri(g, 1, 12)}, P[6], os[5];
    for (int i = 0; i < 3; i++) {
        P[i] = g_ri(g, 0, i ? 1 : 2), P[i + 3] = g_ri(g, 0, i ? 1 : 2);
        if (xs[2 + i] + P[i] + P[i + 3] < 3) P[i] = P[i + 3] = 1 + (xs[2 + i] == 1);
        os[2 + i] = xs[2 + i] + P[i] + P[i + 3] - 2;
    }
    os[0] = xs[0], os[1] = g_ri(g, 16, 40);
    int x = g_param(g, 'x', 5, xs), w = g_param(g, 'w', 5, (int64_t[]){os[1], xs[1], 3, 3, 3});
    char pd[64];
    g_ints(pd, sizeof pd, 6, P);
    g_note(g, "conv3d_3x3x3");
    int y = g_emit(g, 5, os, "R.nn.conv3d(%s, %s, strides=[1, 1, 1], padding=%s, dilation=[1, 1, 1], groups=1)", N(g, x),
                   N(g, w), pd);
    return g_posts(g, y, 1);
}
static int f_pool1d(gen *g) { return g_pool(g, 1); }
static int f_pool2d(gen *g) { return g_pool(g, 2); }
static int f_pool3d(gen *g) { return g_pool(g, 3); }

/* the families, with their weights */
static const struct {
    g_family fn;
    int weight;
} FAMILIES[] = {
    {f_conv2d, 6}, {f_conv1d, 2}, {f_conv3d, 1}, {g_deconv, 1}, {g_matmul, 6}, {f_pool2d, 3}, {f_pool1d, 1},
    {f_pool3d, 1}, {g_binary, 6},  {g_unary, 3},  {g_softmax, 2}, {g_layer_norm, 1}, {g_reduce, 2}, {g_resize, 1},
    {g_concat, 2}, {g_move, 4}, {g_conv1x1_pool, 1}, {g_siblings, 2}, {f_conv3d_wino, 1},
};

/* The module of seed: 2..6 families, the values no op reads are its outputs. */
static char *g_build(uint32_t seed, char *ops, size_t nops) {
    gen *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    g->r = seed * 2654435761u + 0x9e3779b9u;
    if (!g->r) g->r = 1;
    int total = 0, nf = (int)(sizeof FAMILIES / sizeof FAMILIES[0]);
    for (int i = 0; i < nf; i++) total += FAMILIES[i].weight;
    int n = g_ri(g, 2, 6);
    for (int k = 0; k < n && g->nv < G_MAXV - 24; k++) {
        int pick = (int)g_u(g, (uint32_t)total), i = 0;
        while (pick >= FAMILIES[i].weight) pick -= FAMILIES[i++].weight;
        FAMILIES[i].fn(g);
    }
    char outs[512];
    size_t l = 0;
    int nout = 0;
    for (int i = 0; i < g->nv; i++)
        if (!g->v[i].param && !g->v[i].used && nout < 6) {
            g_cat(outs, sizeof outs, &l, "%s%s", nout ? ", " : "", g->v[i].name);
            nout++;
        }
    if (!nout) { /* every value was read (cannot happen: the last one is not) */
        free(g);
        return NULL;
    }
    size_t cap = sizeof g->params + sizeof g->body + 1024, tl = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    g_cat(text, cap, &tl, "@I.ir_module\nclass Module:\n    @R.function\n    def main(%s):\n        with R.dataflow():\n%s", g->params,
          g->body);
    if (nout == 1) g_cat(text, cap, &tl, "            gv = %s\n", outs);
    else g_cat(text, cap, &tl, "            gv = (%s)\n", outs);
    g_cat(text, cap, &tl, "            R.output(gv)\n        return gv\n");
    snprintf(ops, nops, "%s", g->ops);
    free(g);
    return text;
}

/* ------------------------------------------------------------------ checks ---- */

static float c_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* An input of shape s drawn from *seed (the same for every run of a graph) */
static rt_value draw_input(const ir_sinfo *s, uint32_t *seed) {
    int64_t shape[RT_MAX_NDIM];
    cr_assert(ir_sinfo_static_shape(s, shape));
    rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
    float *p = rt_tensor_data(t);
    for (int64_t k = 0; k < rt_tensor_numel(t); k++) p[k] = 2.f * c_rand(seed);
    return rt_value_tensor(t);
}

static void run_main(const ir_module *m, uint32_t seed, rt_value *out, bool *ok, char *err, size_t nerr) {
    rt_exec_t *x = NULL;
    gr_diag d = {0};
    *ok = false;
    if (rt_exec_new(m, "main", &x, &d)) {
        snprintf(err, nerr, "%s", d.msg);
        return;
    }
    uint32_t n = rt_exec_num_inputs(x);
    rt_value in[G_MAXV];
    cr_assert_leq(n, G_MAXV);
    for (uint32_t i = 0; i < n; i++) in[i] = draw_input(rt_exec_input_sinfo(x, i), &seed);
    gr_status st = rt_exec_run(x, in, n, out, &d);
    if (st) snprintf(err, nerr, "%s", d.msg);
    *ok = st == GR_OK;
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
}

typedef struct ref_probe {
    uint32_t nprims, nref, nwino;
    char first[512];
} ref_probe;

static void on_prim(const rt_prim_event *ev, void *user) {
    ref_probe *p = user;
    p->nprims++;
    p->nwino += strstr(ev->info->impl, "wino") != NULL;
    if (strncmp(ev->info->impl, "ref", 3)) return;
    if (!p->nref++)
        snprintf(p->first, sizeof p->first, "%s %s (%s; layer %s)", ev->info->kind, ev->info->impl,
                 ev->info->ref_reason ? ev->info->ref_reason : "no reason", ev->info->nlayers ? ev->info->layers[0] : "?");
}

/* ops of the dnnl op table: on the host they owe a reason */
static bool dnnl_op(const char *name) {
    static const ir_op_id IDS[] = {
#define X(op, kind, check, handler, alg, alpha, beta) IR_OP_##op,
        DNNL_OPS(X)
#undef X
    };
    for (size_t i = 0; i < sizeof IDS / sizeof IDS[0]; i++)
        if (!strcmp(ir_op_def_at((uint32_t)IDS[i])->name, name)) return true;
    return false;
}

static void bind_consts(ir_ctx_t *ctx, ir_module *m, uint32_t seed, ir_module **out) {
    const ir_func *f = ir_module_func(m, "main");
    cr_assert(f);
    const char *names[G_MAXV];
    rt_tensor *ts[G_MAXV];
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        const char *nm = f->params[i]->name;
        if (!strchr("wcp", nm[0])) continue;
        const ir_sinfo *s = f->params[i]->base.sinfo;
        int64_t shape[RT_MAX_NDIM];
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *x = rt_tensor_new(s->dtype, s->ndim, shape);
        float *p = rt_tensor_data(x);
        for (int64_t k = 0; k < rt_tensor_numel(x); k++) p[k] = nm[0] == 'p' ? 1.f + 0.5f * c_rand(&seed) : 0.5f * c_rand(&seed);
        names[n] = nm;
        ts[n++] = x;
    }
    (void)ctx;
    gr_diag d = {0};
    ir_pass *bp = ir_pass_bind_params_new("main", n, names, ts);
    cr_assert_eq(ir_pass_run(bp, NULL, m, out, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bp);
    for (uint32_t i = 0; i < n; i++) rt_tensor_release(ts[i]);
}

typedef struct gen_tally {
    uint32_t graphs, prims, refs, host_ops, failed, merged; /* merged: graphs MergeSiblings changed */
    uint32_t trips, packs, unpacked; /* artifacts loaded, their packs, weights laid out plain again */
} gen_tally;

/* ------------------------------------------------------- error propagation ---- */

/* An output y = f(a) where f is a tail of elementwise ops (and data movements) whose only
 * operand with an error of its own is one value a made by another op (a convolution, a matmul,
 * a reduction: its result fused with the tail, so never compared): dnnl's a may differ from the
 * host's by a's bound t (the model above, applied to a), so its y by up to |f(a +- t) - f(a)|
 * more. That is evaluated on the host at both ends of the interval: exact for monotone f
 * (sigmoid, clip, relu6, ...), no larger than the sup over the interval for the others (abs,
 * square, gelu), so the check stays at least as strict as the model. A layer norm carries its
 * input's bound to first order (norm_spread), which sum-of-products models of its own do not
 * see: normalizing divides by the rows' spread. Inputs (x...) and constants are exact. Only
 * for an output off under the model; with GRAFT_GEN_STATS=1 each says which bound held. */

#define TAIL_MAXB 96

typedef struct tail_text {
    char *buf;              /* the module text, lines cut in place */
    const char *params;     /* the text between "def main(" and "):" */
    int nb;
    const char *name[TAIL_MAXB], *expr[TAIL_MAXB];
    int nout;
    char out[8][16];
} tail_text;

/* ops that map each element of their operands to one of the result (broadcasting), and the
 * data movements (each result element one of the operand's) */
static bool tail_elementwise(const char *expr) {
    static const char *const OPS[] = {"nn.relu(", "nn.relu6(", "nn.leakyrelu(", "clip(", "sigmoid(", "tanh(", "nn.gelu(", "nn.gelu_tanh(",
                                      "nn.silu(", "add(", "subtract(", "multiply(", "divide(", "exp(", "abs(", "square(", "negative(",
                                      "log(", "sqrt(", "rsqrt(", "power(", "where(", "greater(", "maximum(", "minimum(",
                                      "permute_dims(", "reshape(", "squeeze(", "expand_dims(", "strided_slice("};
    if (strncmp(expr, "R.", 2)) return false;
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (!strncmp(expr + 2, OPS[i], strlen(OPS[i]))) return true;
    return false;
}

static bool tail_parse(const char *text, tail_text *t) {
    memset(t, 0, sizeof *t);
    t->buf = strdup(text);
    cr_assert_not_null(t->buf);
    char *save = NULL;
    for (char *line = strtok_r(t->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ') line++;
        char *eq = strstr(line, " = ");
        if (!strncmp(line, "def main(", 9)) {
            char *e = strstr(line, "):");
            if (!e) return false;
            *e = 0;
            t->params = line + 9;
        } else if (eq && !strncmp(line, "gv = ", 5)) {
            for (char *q = strtok_r(line + 5, "(), ", &eq); q && t->nout < 8; q = strtok_r(NULL, "(), ", &eq))
                snprintf(t->out[t->nout++], sizeof t->out[0], "%s", q);
        } else if (eq && t->nb < TAIL_MAXB && line[0] != '#') {
            *eq = 0;
            t->name[t->nb] = line;
            t->expr[t->nb++] = eq + 3;
        }
    }
    return t->params && t->nout > 0;
}

static int tail_find(const tail_text *t, const char *name, size_t len) {
    for (int i = 0; i < t->nb; i++)
        if (strlen(t->name[i]) == len && !strncmp(t->name[i], name, len)) return i;
    return -1;
}

/* The tail of output y: the bindings in it (in[]), and its one anchor; false when y has none or
 * several anchors, or is no elementwise op. */
static bool tail_of(const tail_text *t, const char *y, bool *in, int *anchor) {
    memset(in, 0, sizeof(bool) * TAIL_MAXB);
    int stack[TAIL_MAXB], ns = 0, b = tail_find(t, y, strlen(y));
    *anchor = -1;
    if (b < 0 || !tail_elementwise(t->expr[b])) return false;
    in[b] = true;
    stack[ns++] = b;
    while (ns) {
        const char *e = t->expr[stack[--ns]] + 2;
        while (*e) {
            if (!(isalpha((unsigned char)*e) || *e == '_')) {
                e++;
                continue;
            }
            const char *s0 = e;
            while (isalnum((unsigned char)*e) || *e == '_' || *e == '.') e++;
            int r = tail_find(t, s0, (size_t)(e - s0));
            if (r < 0 || in[r] || r == *anchor) continue;
            if (tail_elementwise(t->expr[r])) {
                in[r] = true;
                stack[ns++] = r;
            } else if (*anchor < 0) {
                *anchor = r;
            } else {
                return false;
            }
        }
    }
    return *anchor >= 0;
}

/* Module text: main's params (and `extra` after them), the bindings marked in `in`, gv = out. */
static char *tail_module(const tail_text *t, const bool *in, const char *extra, const char *out) {
    size_t cap = 65536, l = 0;
    char *m = malloc(cap);
    cr_assert_not_null(m);
    g_cat(m, cap, &l, "@I.ir_module\nclass Module:\n    @R.function\n    def main(%s%s):\n        with R.dataflow():\n", t->params,
          extra ? extra : "");
    for (int i = 0; i < t->nb; i++)
        if (in[i]) g_cat(m, cap, &l, "            %s = %s\n", t->name[i], t->expr[i]);
    g_cat(m, cap, &l, "            gv = %s\n            R.output(gv)\n        return gv\n", out);
    return m;
}

/* The host's result of module text on seed's inputs (and x as its last input when given). */
static rt_tensor *tail_host(const char *text, uint32_t seed, const rt_tensor *x) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *bound = NULL, *opt = NULL;
    rt_exec_t *ex = NULL;
    rt_tensor *res = NULL;
    if (!ir_parse_module(ctx, "tail", text, strlen(text), &m, &d)) {
        bind_consts(ctx, m, seed, &bound);
        if (!ir_pass_run(ir_pass_default_pipeline(), NULL, bound, &opt, &d) && !rt_exec_new(opt, "main", &ex, &d)) {
            uint32_t n = rt_exec_num_inputs(ex);
            rt_value inp[G_MAXV], out = {0};
            cr_assert_leq(n, G_MAXV);
            for (uint32_t i = 0; i < n; i++)
                inp[i] = x && i == n - 1 ? rt_value_tensor(rt_tensor_retain((rt_tensor *)x)) : draw_input(rt_exec_input_sinfo(ex, i), &seed);
            if (!rt_exec_run(ex, inp, n, &out, &d) && out.kind == RT_VAL_TENSOR) res = rt_tensor_retain(out.u.t);
            rt_value_clear(&out);
            for (uint32_t i = 0; i < n; i++) rt_value_clear(&inp[i]);
            rt_exec_free(ex);
        }
    }
    ir_ctx_free(ctx);
    return res;
}

/* The host's values of value `name` (a binding or a param of t). */
static rt_tensor *tail_value(const tail_text *t, const char *name, uint32_t seed) {
    bool all[TAIL_MAXB];
    for (int i = 0; i < TAIL_MAXB; i++) all[i] = i < t->nb;
    char *mt = tail_module(t, all, NULL, name);
    rt_tensor *v = tail_host(mt, seed, NULL);
    free(mt);
    if (v && (v->dl.dtype.code != kDLFloat || v->dl.dtype.bits != 32)) {
        rt_tensor_release(v);
        v = NULL;
    }
    return v;
}

static double *prop_bound(const tail_text *t, const char *name, uint32_t seed, gr_cmp_opts o, const rt_tensor *v, int depth);

/* The whole bound of value `name` (the model's own, plus what flows in), its host values into
 * *v; NULL when they cannot be had. */
static double *full_bound(const tail_text *t, const char *name, uint32_t seed, gr_cmp_opts o, rt_tensor **v, int depth) {
    *v = tail_value(t, name, seed);
    double *b = *v ? prop_bound(t, name, seed, o, *v, depth + 1) : NULL;
    if (!b) return NULL;
    int64_t n = rt_tensor_numel(*v);
    const float *x = rt_tensor_data(*v);
    double mx = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > mx) mx = fabs(x[i]);
    for (int64_t i = 0; i < n; i++) b[i] += o.atol + o.atol_scale * mx + o.rtol * fabs(x[i]);
    return b;
}

/* An elementwise tail: f at a +- ab against the host's y (v); the tail rerun at a itself must
 * give v (else it is not what made y). */
static bool tail_spread(const tail_text *t, const bool *in, const char *name, int a, const rt_tensor *av, const double *ab, uint32_t seed,
                        gr_cmp_opts o, const rt_tensor *v, double *prop) {
    char extra[160];
    size_t l = 0;
    g_cat(extra, sizeof extra, &l, ", %s: R.Tensor(%s, dtype=\"float32\")", t->name[a], g_shape_text(av->dl.ndim, av->dl.shape));
    char *mt = tail_module(t, in, extra, name);
    int64_t n = rt_tensor_numel(av), m = rt_tensor_numel(v);
    const float *xv = rt_tensor_data(av);
    rt_tensor *ends[3] = {NULL, NULL, NULL};
    bool ok = true;
    for (int side = 0; side < 3 && ok; side++) {
        rt_tensor *xs = rt_tensor_new(av->dl.dtype, av->dl.ndim, av->dl.shape);
        float *p = rt_tensor_data(xs);
        for (int64_t i = 0; i < n; i++) p[i] = (float)(xv[i] + (side == 0 ? 0. : side == 1 ? ab[i] : -ab[i]));
        ends[side] = tail_host(mt, seed, xs);
        rt_tensor_release(xs);
        ok = ends[side] && rt_tensor_numel(ends[side]) == m;
    }
    free(mt);
    if (ok) {
        gr_cmp_result same;
        gr_cmp_tensor(ends[0], v, &o, &same);
        ok = same.bad == 0;
    }
    for (int64_t i = 0; ok && i < m; i++) {
        double w = rt_tensor_get_f64(v, i), d0 = fabs(rt_tensor_get_f64(ends[1], i) - w), d1 = fabs(rt_tensor_get_f64(ends[2], i) - w);
        double dm = d0 > d1 ? d0 : d1;
        prop[i] = isfinite(dm) ? dm : 0.;
    }
    for (int side = 0; side < 3; side++)
        if (ends[side]) rt_tensor_release(ends[side]);
    return ok;
}

/* y = g (x - mean) / sd + b over the last axis (n values, sd = sqrt(var + eps)), x known to
 * within xb: to first order |dy_i| <= |g_i| / sd (xb_i + mean(xb) + |xh_i| mean(|xh_j| xb_j)),
 * xh the normalized x (d mean = mean(dx), d sd = mean(xh_j dx_j)). */
static void norm_spread(const rt_tensor *x, const double *xb, const rt_tensor *g, double eps, double *prop) {
    int64_t n = x->dl.shape[x->dl.ndim - 1], rows = rt_tensor_numel(x) / n;
    const float *xv = rt_tensor_data(x), *gv = rt_tensor_data(g);
    for (int64_t r = 0; r < rows; r++) {
        const float *row = xv + r * n;
        const double *rb = xb + r * n;
        double mu = 0, var = 0, mb = 0, mxb = 0;
        for (int64_t j = 0; j < n; j++) mu += row[j];
        mu /= (double)n;
        for (int64_t j = 0; j < n; j++) var += (row[j] - mu) * (row[j] - mu);
        double sd = sqrt(var / (double)n + eps);
        for (int64_t j = 0; j < n; j++) {
            mb += rb[j] / (double)n;
            mxb += fabs(row[j] - mu) / sd * rb[j] / (double)n;
        }
        for (int64_t j = 0; j < n; j++) prop[r * n + j] = fabs(gv[j]) / sd * (rb[j] + mb + fabs(row[j] - mu) / sd * mxb);
    }
}

/* The name of argument k of expr "R.op(a, b, ...)" into buf. */
static bool expr_arg(const char *expr, int k, char *buf, size_t cap) {
    const char *p = strchr(expr, '(');
    for (int i = 0; p && i < k; i++) p = strchr(p + 1, ',');
    if (!p) return false;
    p++;
    while (*p == ' ') p++;
    size_t l = strcspn(p, ",) ");
    if (!l || l >= cap) return false;
    memcpy(buf, p, l);
    buf[l] = 0;
    return true;
}

/* The part of value `name`'s bound that flows in from the values it is made from (its own
 * rounding is the model's): through an elementwise tail from the tail's anchor, through a
 * layer norm over the last axis from its input, else none (an input, a constant, or another
 * op whose bound the model states). v: the host's values of name. NULL when it cannot be told. */
static double *prop_bound(const tail_text *t, const char *name, uint32_t seed, gr_cmp_opts o, const rt_tensor *v, int depth) {
    int64_t m = rt_tensor_numel(v);
    double *prop = calloc((size_t)m, sizeof(double));
    cr_assert_not_null(prop);
    int b = tail_find(t, name, strlen(name)), a;
    bool in[TAIL_MAXB], ok = true;
    if (b < 0 || depth > 8) return prop;
    rt_tensor *xv = NULL, *gv = NULL;
    double *xb = NULL;
    if (tail_of(t, name, in, &a)) {
        ok = (xb = full_bound(t, t->name[a], seed, o, &xv, depth)) && tail_spread(t, in, name, a, xv, xb, seed, o, v, prop);
    } else if (!strncmp(t->expr[b], "R.nn.layer_norm(", 16) && strstr(t->expr[b], "axes=[-1]")) {
        char x[32], g[32];
        const char *e = strstr(t->expr[b], "epsilon=");
        ok = expr_arg(t->expr[b], 0, x, sizeof x) && expr_arg(t->expr[b], 1, g, sizeof g) &&
             (xb = full_bound(t, x, seed, o, &xv, depth)) && (gv = tail_value(t, g, seed)) &&
             rt_tensor_numel(xv) == m && rt_tensor_numel(gv) == xv->dl.shape[xv->dl.ndim - 1];
        if (ok) norm_spread(xv, xb, gv, e ? atof(e + 8) : 1e-5, prop);
    }
    free(xb);
    if (xv) rt_tensor_release(xv);
    if (gv) rt_tensor_release(gv);
    if (!ok) {
        free(prop);
        return NULL;
    }
    return prop;
}

/* Per element of output `out` (host want): the bound that flows into it (prop_bound), in
 * allow; false when none does or it cannot be told. */
static bool tail_allowance(const char *text, uint32_t seed, const char *out, const rt_tensor *want, gr_cmp_opts o, double *allow) {
    tail_text t;
    bool ok = tail_parse(text, &t);
    double *prop = ok ? prop_bound(&t, out, seed, o, want, 0) : NULL;
    ok = prop != NULL;
    if (ok) memcpy(allow, prop, sizeof(double) * (size_t)rt_tensor_numel(want));
    free(prop);
    free(t.buf);
    return ok;
}

/* wino: a Winograd convolution ran, whose stated tolerance (DT_WINO_*) then applies. text: the
 * module (its output names for the propagated bound), out: which output want is. */
static void compare_values(const rt_value *want, const rt_value *got, const char *text, int out, uint32_t seed, const char *ops,
                           bool wino, bool *bad) {
    cr_assert_eq(want->kind, got->kind);
    if (want->kind == RT_VAL_TUPLE) {
        cr_assert_eq(want->u.tuple.n, got->u.tuple.n);
        for (uint32_t i = 0; i < want->u.tuple.n; i++)
            compare_values(&want->u.tuple.items[i], &got->u.tuple.items[i], text, (int)i, seed, ops, wino, bad);
        return;
    }
    cr_assert_eq(want->kind, RT_VAL_TENSOR);
    gr_cmp_opts o = {.atol = GEN_ATOL, .atol_scale = GEN_ATOL_SCALE, .rtol = GEN_RTOL, .nan_expected = true};
    if (wino) {
        o.atol_scale = DT_WINO_ATOL_OF_MAX;
        o.rtol = DT_WINO_RTOL;
    }
    const rt_tensor *w = want->u.t, *g = got->u.t;
    gr_cmp_result r;
    gr_cmp_tensor(g, w, &o, &r);
    int64_t nprop = -1;
    /* off under the model: within the bound propagated from the tail's anchor? */
    char oname[16] = "";
    if (r.bad && rt_tensor_same_shape(g, w)) {
        tail_text t;
        if (tail_parse(text, &t) && out < t.nout) snprintf(oname, sizeof oname, "%s", t.out[out]);
        free(t.buf);
    }
    double *allow = oname[0] ? calloc((size_t)r.numel, sizeof(double)) : NULL;
    if (allow && tail_allowance(text, seed, oname, w, o, allow)) {
        nprop = 0;
        for (int64_t i = 0; i < r.numel; i++)
            nprop += !gr_cmp_value(rt_tensor_get_f64(g, i), rt_tensor_get_f64(w, i), r.atol + allow[i], o.rtol, o.nan_expected);
    }
    free(allow);
    if (getenv("GRAFT_GEN_STATS"))
        fprintf(stderr, "dnnl_gen seed %u: output %d (%s) of %lld values: max|dnnl - host| %.3g, max|host| %.3g, atol %.3g, %lld off%s\n",
                seed, out, oname, (long long)r.numel, r.max_abs, r.max_ref, r.atol, (long long)r.bad,
                nprop >= 0 ? (nprop ? ", off beyond the bound propagated to it too" : ", within the bound propagated to it") : "");
    if (nprop == 0) return;
    r = tc_expect_tensor(g, w, o, "seed %u (%s, ISA %s): dnnl against the host%s", seed, ops, rt_dnnl_isa(),
                         wino ? " (Winograd's tolerance)" : "");
    *bad |= r.bad != 0;
}

/* Whether got holds want's bits (one run of the same kernels on the same data). */
static void same_bits(const rt_value *want, const rt_value *got, uint32_t seed, const char *ops, const char *how, bool *bad) {
    cr_assert_eq(want->kind, got->kind);
    if (want->kind == RT_VAL_TUPLE) {
        cr_assert_eq(want->u.tuple.n, got->u.tuple.n);
        for (uint32_t i = 0; i < want->u.tuple.n; i++) same_bits(&want->u.tuple.items[i], &got->u.tuple.items[i], seed, ops, how, bad);
        return;
    }
    cr_assert_eq(want->kind, RT_VAL_TENSOR);
    const rt_tensor *a = want->u.t, *b = got->u.t;
    size_t nb = rt_tensor_nbytes(a), es = (a->dl.dtype.bits * a->dl.dtype.lanes + 7u) / 8u, at = 0;
    cr_assert_eq(rt_tensor_nbytes(b), nb, "seed %u (%s): %s: %zu bytes, in process %zu", seed, ops, how, rt_tensor_nbytes(b), nb);
    const uint8_t *pa = rt_tensor_data(a), *pb = rt_tensor_data(b);
    while (at < nb && pa[at] == pb[at]) at++;
    if (at == nb) return;
    size_t i = at / es;
    bool f32 = a->dl.dtype.code == kDLFloat && a->dl.dtype.bits == 32;
    cr_expect_fail("seed %u (%s, ISA %s): %s: element %zu is %.9g, in process %.9g", seed, ops, rt_dnnl_isa(), how, i,
                   f32 ? ((const float *)pb)[i] : 0., f32 ? ((const float *)pa)[i] : 0.);
    *bad = true;
}

/* The artifact buf loaded with the partition's backend options bo and run on seed's inputs
 * against the in-process result want; other: its packs made for another ISA. */
static void run_artifact(const uint8_t *buf, size_t len, const byoc_options *bo, bool other, uint32_t seed, const char *ops,
                         const rt_value *want, gen_tally *t, bool *bad) {
    const char *how = other ? "the artifact with packs for another ISA" : "the artifact";
    graft_model *gm = NULL;
    gr_diag d = {0};
    gr_status st = graft_model_load_buffer_opts(buf, len, bo, &gm, &d);
    cr_expect_eq(st, GR_OK, "seed %u (%s, ISA %s): %s: load: %s", seed, ops, rt_dnnl_isa(), how, d.msg);
    if (st) {
        *bad = true;
        return;
    }
    graft_model_info in;
    graft_model_get_info(gm, &in);
    /* here: every pack used in place; elsewhere: none, and every weight kept only prepacked
     * laid out plain again */
    bool packs_ok = other ? in.npacked_used == 0 && in.nunpacked <= in.nrepacked : in.npacked_used == in.npacked && !in.nrepacked && !in.nunpacked;
    cr_expect(packs_ok, "seed %u (%s, ISA %s): %s: %u packs, %u used, %u laid out again, %u unpacked", seed, ops, rt_dnnl_isa(), how,
              in.npacked, in.npacked_used, in.nrepacked, in.nunpacked);
    *bad |= !packs_ok;
    t->trips++;
    t->packs += in.npacked;
    t->unpacked += in.nunpacked;
    uint32_t n = graft_model_num_inputs(gm);
    rt_value x[G_MAXV], got = {0};
    cr_assert_leq(n, G_MAXV);
    for (uint32_t i = 0; i < n; i++) x[i] = draw_input(graft_model_input_sinfo(gm, i), &seed);
    st = graft_model_run(gm, x, n, &got, &d);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&x[i]);
    cr_expect_eq(st, GR_OK, "seed %u (%s, ISA %s): %s: run: %s", seed, ops, rt_dnnl_isa(), how, d.msg);
    if (st) *bad = true;
    else same_bits(want, &got, seed, ops, how, bad);
    rt_value_clear(&got);
    graft_model_free(gm);
}

/* part built into an artifact, loaded and run as it is and (other) with its packs made for
 * another ISA. */
static void round_trip(const ir_module *part, const byoc_options *bo, uint32_t seed, const char *ops, const rt_value *want,
                       bool other, gen_tally *t, bool *bad) {
    uint8_t *a = NULL;
    size_t alen = 0;
    gr_diag d = {0};
    gr_status st = graft_model_build(part, &a, &alen, &d);
    cr_expect_eq(st, GR_OK, "seed %u (%s): artifact build: %s", seed, ops, d.msg);
    if (st) {
        *bad = true;
        return;
    }
    /* the input seed as run_main draws it */
    uint32_t s = seed;
    run_artifact(a, alen, bo, false, s, ops, want, t, bad);
    uint32_t nedited = 0;
    size_t blen = 0;
    uint8_t *b = other ? tu_packs_edited(a, alen, tu_pack_other_isa, &blen, &nedited) : NULL;
    if (nedited) run_artifact(b, blen, bo, true, s, ops, want, t, bad);
    free(b);
    free(a);
}

static char *read_text(const char *path) {
    char *text = tu_read_file(path, NULL);
    cr_assert_not_null(text, "%s", path);
    return text;
}

/* One graph: seed's, or the module in file (its params named as the generator's; seed then
 * draws the values), built, partitioned, run both ways, checked. True when it passed. */
static bool gen_case(uint32_t seed, const char *file, gen_tally *t) {
    char ops[512];
    char *text = NULL;
    if (file) {
        text = read_text(file);
        snprintf(ops, sizeof ops, "%s", file);
    } else text = g_build(seed, ops, sizeof ops);
    if (!text) return true;
    if (getenv("GRAFT_GEN_PRINT")) fprintf(stderr, "---- seed %u: %s\n%s", seed, ops, text);
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *bound = NULL, *opt = NULL, *part = NULL;
    bool bad = false;
    if (ir_parse_module(ctx, "gen", text, strlen(text), &m, &d)) { /* a generator bug */
        cr_expect_fail("seed %u: %s\n%s", seed, d.msg, text);
        t->failed++;
        ir_ctx_free(ctx);
        free(text);
        return false;
    }
    bind_consts(ctx, m, seed, &bound);
    /* sibling matmuls merged too (off by default): the backend's slices of them are covered */
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    cr_assert_eq(ir_pass_ctx_set_config(pc, IR_CONFIG_MERGE_SIBLING_MATMULS, (ir_config_value){.kind = IR_CONFIG_BOOL, .u.b = true}, &d),
                 GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), pc, bound, &opt, &d), GR_OK, "seed %u: %s\n%s", seed, d.msg, text);
    ir_pass_ctx_free(pc);
    char *opt_text = ir_print_module_str(opt, NULL);
    t->merged += strstr(opt_text, "R.split(") != NULL; /* the generator writes no split */
    free(opt_text);
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {0};
    po.notes = &notes;
    /* GRAFT_GEN_OPT=dnnl.NAME=VALUE: one backend option, to bisect a finding (dnnl.no_fuse=1,
     * dnnl.debug=1) */
    byoc_options *bo = byoc_options_new();
    const char *bopt = getenv("GRAFT_GEN_OPT");
    if (bopt && *bopt) cr_assert_eq(byoc_options_set(bo, bopt, &d), GR_OK, "GRAFT_GEN_OPT: %s", d.msg);
    po.options = bo;
    const char *be[1] = {"dnnl"};
    gr_status pst = byoc_partition(ctx, opt, be, 1, &po, &part, &d);
    cr_expect_eq(pst, GR_OK, "seed %u (%s): partition: %s", seed, ops, d.msg);
    bad |= pst != GR_OK;
    if (!pst) {
        json_t *rep = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
        size_t i;
        json_t *h;
        json_array_foreach(json_object_get(rep, "host"), i, h) {
            const char *op = json_string_value(json_object_get(h, "op")), *why = json_string_value(json_object_get(h, "reason"));
            t->host_ops++;
            bool owed = dnnl_op(op) && (!why || !*why || !strcmp(why, "no pattern matched"));
            cr_expect(!owed, "seed %u: %s stayed on the host with no reason (%s)", seed, op, why ? why : "none");
            bad |= owed;
        }
        json_decref(rep);
        rt_value want = {0}, got = {0};
        bool ok1, ok2 = false;
        char e1[sizeof d.msg] = "", e2[sizeof d.msg] = "";
        run_main(opt, seed, &want, &ok1, e1, sizeof e1);
        cr_expect(ok1, "seed %u (%s): the host run failed: %s", seed, ops, e1);
        bad |= !ok1;
        ref_probe rp = {0};
        rt_module_set_profilers(part, on_prim, &rp);
        if (ok1) run_main(part, seed, &got, &ok2, e2, sizeof e2);
        rt_module_set_profilers(part, NULL, NULL);
        cr_expect(!ok1 || ok2, "seed %u (%s): the dnnl run failed: %s", seed, ops, e2);
        bad |= ok1 && !ok2;
        if (ok1 && ok2) compare_values(&want, &got, text, 0, seed, ops, rp.nwino > 0, &bad);
        if (ok2) round_trip(part, bo, seed, ops, &got, seed % GEN_OTHER_ISA == 0, t, &bad);
        cr_expect_eq(rp.nref, 0, "seed %u (%s, ISA %s): %u of %u primitives on ref; first: %s", seed, ops, rt_dnnl_isa(), rp.nref,
                     rp.nprims, rp.first);
        bad |= rp.nref != 0;
        t->prims += rp.nprims;
        t->refs += rp.nref;
        rt_value_clear(&want);
        rt_value_clear(&got);
    }
    if (bad) {
        t->failed++;
        fprintf(stderr, "---- dnnl_gen: seed %u failed (ISA %s): %s\n%s", seed, rt_dnnl_isa(), ops, text);
    }
    t->graphs++;
    byoc_notes_free(&notes);
    byoc_options_free(bo);
    ir_ctx_free(ctx);
    free(text);
    return !bad;
}

static void gen_run(uint32_t batch) {
    uint32_t first = 1000 + batch * GEN_PER_BATCH, count = GEN_PER_BATCH;
    const char *s = getenv("GRAFT_GEN_SEED"), *c = getenv("GRAFT_GEN_COUNT");
    if (s && *s) { /* a search of its own: batch 0 runs it, the others stand by */
        if (batch) return;
        first = (uint32_t)strtoul(s, NULL, 10);
        count = c && *c ? (uint32_t)strtoul(c, NULL, 10) : 1;
    }
    gen_tally t = {0};
    const char *file = getenv("GRAFT_GEN_FILE"); /* a reduced finding */
    for (uint32_t k = 0; k < count; k++) gen_case(first + k, file && *file ? file : NULL, &t);
    /* the graphs must reach oneDNN: a backend that took nothing would pass the rest */
    cr_expect_geq(t.prims, t.graphs, "seeds %u..%u: %u primitives for %u graphs", first, first + count - 1, t.prims, t.graphs);
    /* and the sibling family must reach MergeSiblings' split views */
    /* and the round trips must meet weights stored only prepacked, laid out again for another ISA */
    if (!(s && *s)) {
        cr_expect_gt(t.merged, 0, "seeds %u..%u: no graph with merged siblings", first, first + count - 1);
        cr_expect_gt(t.unpacked, 0, "seeds %u..%u: no weight stored only prepacked laid out again", first, first + count - 1);
    }
    cr_log_info("dnnl_gen seeds %u..%u (ISA %s): %u graphs, %u primitives, %u on ref, %u host ops, %u failed, %u merged; "
                "%u artifact runs, %u packs, %u weights laid out plain again",
                first, first + count - 1, rt_dnnl_isa(), t.graphs, t.prims, t.refs, t.host_ops, t.failed, t.merged, t.trips,
                t.packs, t.unpacked);
}

Test(dnnl_gen, regressions, .timeout = 120) {
    DIR *d = opendir(REGRESS_DIR);
    cr_assert_not_null(d, "%s", REGRESS_DIR);
    gen_tally t = {0};
    struct dirent *e;
    unsigned seed;
    while ((e = readdir(d)))
        if (sscanf(e->d_name, "seed_%u.relax", &seed) == 1) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", REGRESS_DIR, e->d_name);
            gen_case(seed, path, &t);
        }
    closedir(d);
    cr_expect_geq(t.graphs, 18, "%u graphs in %s", t.graphs, REGRESS_DIR);
}

Test(dnnl_gen, batch0, .timeout = 120) { gen_run(0); }
Test(dnnl_gen, batch1, .timeout = 120) { gen_run(1); }
Test(dnnl_gen, batch2, .timeout = 120) { gen_run(2); }
Test(dnnl_gen, batch3, .timeout = 120) { gen_run(3); }
