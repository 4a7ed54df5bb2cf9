/* libFuzzer target: the JSON graph loader (runtime/json/json_runtime.h) with both engines, compared.
 * A graph that loads gets constants and inputs of its declared types, filled with values
 * derived from the input bytes (fuzz_fill), and is initialized, prepared and called once on the
 * reference engine. When that runs it (a graph whose operands disagree fails there; only graphs
 * it runs are worth comparing), it runs on oneDNN with the default options, and again with
 * graft's own kernels and the option-picked oneDNN ones off (winograd, gemv, dw_jit) when a
 * primitive of the first run was one of those (OPTION_PRIMS). Every oneDNN run that succeeds
 * must agree with the reference on every output (TOLERANCE below); a mismatch aborts naming the
 * output's node and op. A graph with fused composite annotations is compared like any other:
 * the engine proves each annotation against the nodes it names at prepare, or refuses the
 * graph (backends/dnnl/dnnl_composite.c). Output buffers carry canaries. oneDNN reads its ISA
 * cap once per process, so the other ISA is a second run of this target (scripts/fuzz.sh
 * json_graph_avx2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"

/* Outputs get CANARY bytes of a known pattern past their end: a write beyond a head (oneDNN's
 * kernels are not instrumented, so ASan would only see the heap damage much later) aborts. */
#define CANARY 256

/* TOLERANCE. Float outputs agree when |dnnl - ref| <= ATOL_OF_MAX * max|ref| + RTOL * |ref| +
 * ABS_FLOOR, max over the output tensor; integers and bools must be equal (16-bit floats,
 * which neither engine computes in, are not compared).
 * Inputs and constants lie in [-1, 1] and tensors hold at most FUZZ_MAX_NUMEL elements, so a
 * convolution or matmul sums at most a few thousand products: fp32 in another accumulation
 * order (blocked, split over threads) differs by about sqrt(K) * 2^-24 of the largest partial
 * sums, ~1e-5. Winograd F(4x4, 3x3) scales that by its transforms' coefficients (up to 5 and
 * 8), relative to the largest outputs rather than to each one (tests/dnnl/test_dnnl_wino.c:
 * 1e-4 of the max for one convolution); a fuzzed region chains several such ops and oneDNN's
 * exp / tanh / erf approximations, hence 1e-3 of the max and of the value. ABS_FLOOR covers
 * denormals, which oneDNN flushes to zero while it runs and the reference does not.
 * Non-finite values: a NaN or Inf where the reference is finite, or a finite value where it is
 * +-Inf, is a mismatch. Which non-finite value is not compared: an Inf comes from an overflow or
 * a division by zero, where the sign of a zero (clip's, relu's, a product's) decides +Inf or
 * -Inf, and then Inf - Inf gives NaN; implementations differ there without either being wrong.
 * Where the reference is NaN the graph did something undefined (0 / 0, Inf - Inf) on these
 * inputs, and oneDNN's kernels need not keep the NaN (x86 max returns its second operand when
 * one is NaN; seen: reference NaN, oneDNN -0.12), so those elements are not compared. */
#define ATOL_OF_MAX 1e-3
#define RTOL 1e-3
#define ABS_FLOOR 1e-30

/* Implementations that an engine option picks (graft_wino_*, graft_gemv: graft's own AVX2
 * kernels; oneDNN's Winograd; jit_dw; jit_1x1, a matmul's below avx512_core): when the run with
 * the default options has a primitive whose implementation names one, the graph runs again with
 * winograd, gemv, dw_jit and matmul_1x1 off. */
static const char *const OPTION_PRIMS[] = {"graft_", "wino", "jit_dw", "jit_1x1"};

static bool canary_intact(rt_tensor *t) {
    const uint8_t *p = (const uint8_t *)rt_tensor_data(t) + rt_tensor_nbytes(t);
    for (size_t i = 0; i < CANARY; i++)
        if (p[i] != 0xA5) return false;
    return true;
}

/* t's shape and dtype over a new buffer (*buf, the caller frees it) with the canary after it. */
static rt_tensor *with_canary(const rt_tensor *t, uint8_t **buf) {
    size_t nb = rt_tensor_nbytes(t);
    *buf = malloc(nb + CANARY);
    if (!*buf) return NULL;
    memset(*buf, 0xA5, nb + CANARY);
    return rt_tensor_wrap(t->dl.dtype, t->dl.ndim, t->shape, *buf);
}

/* Tensor k's seed: its own stream (splitmix streams of nearby seeds would be shifted copies). */
#define TENSOR_SEED(seed, k) ((seed) ^ (((uint64_t)(k) + 1) * 0xD1B54A32D192ED03u))

/* Tensor for output o of node nid as declared, values from seed (fuzz_fill), float32 ones
 * times 1 +- jitter, the sign drawn per node, element and pattern (so that two scalar constants
 * do not always move together); NULL when it cannot (or should not) be made. */
static rt_tensor *declared(rt_json_graph *g, uint32_t nid, uint32_t o, uint64_t seed, double jitter,
                           uint32_t pattern) {
    const rt_json_node *n = rt_json_graph_node(g, nid);
    if (!n || o >= n->noutputs) return NULL;
    rt_tensor *t = fuzz_tensor(n->dtypes[o], n->ndims[o], n->shapes[o]);
    if (!t) return NULL;
    fuzz_fill(t, seed);
    DLDataType dt = t->dl.dtype;
    float *f = rt_tensor_data(t);
    for (size_t i = 0, k = (size_t)rt_tensor_numel(t); jitter && dt.code == kDLFloat && dt.bits == 32 && i < k; i++)
        f[i] *= (float)(1 + (((((uint64_t)nid << 40) ^ ((uint64_t)pattern << 32) ^ i) * 0x9E3779B97F4A7C15u) >> 63
                                 ? jitter : -jitter));
    return t;
}

/* What one engine run leaves: its outputs (NULL when it did not run to the end) and whether a
 * primitive was one that the options pick. */
typedef struct run_result {
    bool ran;
    bool option_prims;
    uint32_t nh;
    rt_tensor **outs;
} run_result;

static void result_free(run_result *r) {
    for (uint32_t h = 0; r->outs && h < r->nh; h++) rt_tensor_release(r->outs[h]);
    free(r->outs);
    *r = (run_result){0};
}

static bool uses_option_prims(const void *state) {
    rt_dnnl_prim_info pi;
    for (uint32_t p = 0; rt_dnnl_prim(state, p, &pi); p++)
        for (size_t k = 0; k < sizeof OPTION_PRIMS / sizeof *OPTION_PRIMS; k++)
            if (pi.impl && strstr(pi.impl, OPTION_PRIMS[k])) return true;
    return false;
}

/* Runs the graph in data on eng with options opts, inputs and constants from seed (each float
 * times 1 +- jitter when jitter is not 0, signs by pattern). */
static run_result run_engine(const uint8_t *data, size_t size, uint64_t seed, double jitter, uint32_t pattern,
                             const rt_json_engine *eng, const void *opts) {
    run_result r = {0};
    rt_json_graph *g = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (rt_json_graph_load("fuzz", (const char *)data, size, &g, &d) != GR_OK) return r;
    uint32_t nc = rt_json_graph_num_consts(g), ni = rt_json_graph_num_inputs(g), nh = rt_json_graph_num_heads(g);
    uint32_t nn = rt_json_graph_num_nodes(g);
    rt_tensor **consts = calloc(nc + 1, sizeof(rt_tensor *));
    rt_tensor **io = calloc(ni + nh + 1, sizeof(rt_tensor *));
    DLTensor **args = calloc(ni + nh + 1, sizeof(DLTensor *));
    uint8_t **bufs = calloc(nh + 1, sizeof(uint8_t *));
    bool ok = consts && io && args && bufs;
    /* constants are the const nodes in node order (rt_json_graph_const_name order); tensor k
     * (constants, then inputs) gets the same values on every engine */
    for (uint32_t nid = 0, c = 0; nid < nn && ok; nid++) {
        const rt_json_node *n = rt_json_graph_node(g, nid);
        if (n->kind != RT_JSON_CONST) continue;
        ok = c < nc && (consts[c] = declared(g, nid, 0, TENSOR_SEED(seed, c), jitter, pattern)) != NULL;
        c++;
    }
    if (ok && rt_json_graph_init(g, consts, nc, &d) == GR_OK) {
        for (uint32_t i = 0; i < ni && ok; i++)
            ok = (io[i] = declared(g, rt_json_graph_input_nid(g, i), 0, TENSOR_SEED(seed, nc + i), jitter, pattern)) != NULL;
        for (uint32_t h = 0; h < nh && ok; h++) {
            rt_json_entry e = rt_json_graph_head(g, h);
            rt_tensor *t = declared(g, e.nid, e.index, 0, 0, 0);
            ok = t && (io[ni + h] = with_canary(t, &bufs[h])) != NULL;
            rt_tensor_release(t);
        }
        void *state = NULL;
        if (ok && eng->prepare(g, opts, &state, &d) == GR_OK) {
            for (uint32_t k = 0; k < ni + nh; k++) args[k] = &io[k]->dl;
            r.ran = eng->run(g, state, args, ni, nh, &d) == GR_OK;
            for (uint32_t h = 0; h < nh; h++)
                if (!canary_intact(io[ni + h])) {
                    fprintf(stderr, "fuzz_json_graph: engine %s wrote past the end of output %u\n", eng->kind, h);
                    abort();
                }
            if (eng == &rt_dnnl_engine) r.option_prims = uses_option_prims(state);
            if (eng->release) eng->release(g, state);
        }
        if (r.ran) {
            r.nh = nh;
            r.outs = calloc(nh + 1, sizeof(rt_tensor *));
            for (uint32_t h = 0; h < nh && r.outs; h++) {
                rt_tensor *t = io[ni + h];
                r.outs[h] = rt_tensor_new(t->dl.dtype, t->dl.ndim, t->shape);
                if (!r.outs[h]) break;
                memcpy(rt_tensor_data(r.outs[h]), rt_tensor_data(t), rt_tensor_nbytes(t));
            }
            if (!r.outs || (nh && !r.outs[nh - 1])) result_free(&r);
        }
    }
    for (uint32_t k = 0; io && k < ni + nh; k++) rt_tensor_release(io[k]);
    for (uint32_t h = 0; bufs && h < nh; h++) free(bufs[h]);
    free(bufs);
    for (uint32_t c = 0; consts && c < nc; c++) rt_tensor_release(consts[c]);
    free(args);
    free(io);
    free(consts);
    rt_json_graph_free(g);
    return r;
}

static double as_double(const rt_tensor *t, size_t i) {
    const uint8_t *p = (const uint8_t *)rt_tensor_data(t) + i * ((t->dl.dtype.bits + 7) / 8);
    if (t->dl.dtype.bits == 64) {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    float v;
    memcpy(&v, p, 4);
    return v;
}

/* Largest finite |value| of a float tensor (0 for other dtypes). */
static double max_abs(const rt_tensor *t) {
    DLDataType dt = t->dl.dtype;
    if (dt.code != kDLFloat || (dt.bits != 32 && dt.bits != 64)) return 0;
    double m = 0;
    for (size_t i = 0, n = (size_t)rt_tensor_numel(t); i < n; i++) {
        double a = fabs(as_double(t, i));
        if (isfinite(a) && a > m) m = a;
    }
    return m;
}

/* Whether element i of got agrees with ref's (TOLERANCE; max_ref: max_abs(ref)). */
static bool elem_agrees(const rt_tensor *ref, const rt_tensor *got, size_t i, double max_ref) {
    DLDataType dt = ref->dl.dtype;
    size_t eb = (dt.bits + 7) / 8;
    /* 16-bit floats (neither engine computes in them; a cast's output) are not compared */
    if ((dt.code == kDLFloat || dt.code == kDLBfloat) && dt.bits != 32 && dt.bits != 64) return true;
    const uint8_t *pr = rt_tensor_data(ref), *pg = rt_tensor_data(got);
    if (dt.code != kDLFloat) return !memcmp(pr + i * eb, pg + i * eb, eb);
    double a = as_double(ref, i), b = as_double(got, i);
    if (isnan(a)) return true;
    if (isinf(a)) return !isfinite(b);
    return isfinite(b) && fabs(a - b) <= ATOL_OF_MAX * max_ref + RTOL * fabs(a) + ABS_FLOOR;
}

/* Every output of got agrees with ref's, element by element, or the run aborts. An element that
 * disagrees is excused only when the reference itself moves that far when the inputs and
 * constants move by JITTER (relative), in one of JITTER_PATTERNS sign patterns: the graph is
 * ill-conditioned there (a division by a value near zero, a comparison at a near-tie), so any
 * other fp32 summation order may move it as much. Those reference runs are made once each, from
 * the first disagreement on (jit). A graph
 * whose reference run has a non-finite value inside (a division by an exact zero) is not
 * compared either: whether that is +Inf or -Inf hangs on the sign of a zero, and a relu or clip
 * after it turns the difference into finite outputs that differ (seen: -10.95 against -10.62). */
#define JITTER 0x1p-20
/* Sign patterns of the jitter tried, one run each, while none moves the element: one pattern
 * can leave a cancellation untouched (c0 * v + c1 near 0 with c0 and c1 moved alike: seen, an
 * SE block whose divisor was such a difference, 1 % apart after a fused linear post-op). */
#define JITTER_PATTERNS 3
/* Whether every kernel node's outputs are finite on the reference engine (the graph run again
 * with all of them as heads, the same inputs); false when that run fails. */
static bool intermediates_finite(const uint8_t *data, size_t size, uint64_t seed) {
    json_t *doc = json_loadb((const char *)data, size, 0, NULL), *heads = json_array(), *x;
    size_t i;
    json_array_foreach(json_object_get(doc, "nodes"), i, x) {
        const char *op = json_string_value(json_object_get(x, "op"));
        size_t no = json_array_size(json_object_get(json_object_get(x, "attrs"), "shape"));
        for (size_t o = 0; op && !strcmp(op, "kernel") && o < no; o++)
            json_array_append_new(heads, json_pack("[III]", (json_int_t)i, (json_int_t)o, (json_int_t)0));
    }
    bool finite = false;
    char *text = doc && !json_object_set_new(doc, "heads", heads) ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (!doc) json_decref(heads);
    run_result r = text ? run_engine((const uint8_t *)text, strlen(text), seed, 0, 0, &rt_json_reference_engine, NULL)
                        : (run_result){0};
    finite = r.ran;
    for (uint32_t h = 0; finite && h < r.nh; h++) {
        const rt_tensor *t = r.outs[h];
        for (size_t k = 0, n = (size_t)rt_tensor_numel(t); finite && t->dl.dtype.code == kDLFloat && k < n; k++)
            if ((t->dl.dtype.bits == 32 || t->dl.dtype.bits == 64) && !isfinite(as_double(t, k))) finite = false;
    }
    result_free(&r);
    free(text);
    json_decref(doc);
    return finite;
}

typedef struct jittered_ref {
    uint32_t made;                /* jittered runs made so far */
    run_result r[JITTER_PATTERNS];
    int finite;                   /* intermediates_finite: -1 not asked yet */
} jittered_ref;
static void compare(const uint8_t *data, size_t size, uint64_t seed, const run_result *ref, jittered_ref *jit,
                    const run_result *got, const char *variant) {
    for (uint32_t h = 0; h < ref->nh; h++) {
        const rt_tensor *r = ref->outs[h], *o = got->outs[h];
        double max_ref = max_abs(r);
        for (size_t i = 0, ne = (size_t)rt_tensor_numel(r); i < ne; i++) {
            if (elem_agrees(r, o, i, max_ref)) continue;
            bool moves = false;
            for (uint32_t p = 0; p < JITTER_PATTERNS && !moves; p++) {
                if (jit->made == p)
                    jit->r[jit->made++] = run_engine(data, size, seed, JITTER, p + 1, &rt_json_reference_engine, NULL);
                moves = jit->r[p].ran && !elem_agrees(r, jit->r[p].outs[h], i, max_ref);
            }
            if (moves) continue;
            if (jit->finite < 0) jit->finite = intermediates_finite(data, size, seed);
            if (!jit->finite) return;
            rt_json_graph *g = NULL;
            gr_diag d;
            gr_diag_clear(&d);
            const char *op = "?";
            rt_json_entry e = {0};
            if (rt_json_graph_load("fuzz", (const char *)data, size, &g, &d) == GR_OK) {
                e = rt_json_graph_head(g, h);
                const rt_json_node *n = rt_json_graph_node(g, e.nid);
                if (n && n->name) op = n->name;
            }
            bool fl = r->dl.dtype.code == kDLFloat;
            fprintf(stderr,
                    "fuzz_json_graph: oneDNN (%s, %s) disagrees with the reference engine on output %u (node %u "
                    "'%s', output %u), element %zu: reference %.9g, oneDNN %.9g (tolerance %g of max %g + %g "
                    "relative)\n",
                    variant, rt_dnnl_isa(), h, e.nid, op, e.index, i, fl ? as_double(r, i) : 0.0,
                    fl ? as_double(o, i) : 0.0, ATOL_OF_MAX, max_ref, RTOL);
            rt_json_graph_free(g);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t seed = fuzz_seed(data, size);
    run_result ref = run_engine(data, size, seed, 0, 0, &rt_json_reference_engine, NULL);
    jittered_ref jit = {.finite = -1};
    if (ref.ran) {
        rt_dnnl_opts on = rt_dnnl_default_opts(), off = on;
        off.winograd = off.gemv = off.dw_jit = off.matmul_1x1 = false;
        run_result dn = run_engine(data, size, seed, 0, 0, &rt_dnnl_engine, &on);
        if (dn.ran) compare(data, size, seed, &ref, &jit, &dn, "default options");
        if (dn.option_prims) {
            run_result dn_off = run_engine(data, size, seed, 0, 0, &rt_dnnl_engine, &off);
            if (dn_off.ran) compare(data, size, seed, &ref, &jit, &dn_off, "winograd, gemv, dw_jit, matmul_1x1 off");
            result_free(&dn_off);
        }
        result_free(&dn);
    }
    for (uint32_t p = 0; p < jit.made; p++) result_free(&jit.r[p]);
    result_free(&ref);
    return 0;
}
