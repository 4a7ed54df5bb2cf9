/* libFuzzer target: the JSON graph loader (runtime/json/json_runtime.h) with both engines, compared.
 * A graph that loads gets constants and inputs of its declared types, filled with values
 * derived from the input bytes (fuzz_fill), and is initialized, prepared and called once on the
 * reference engine. When that runs it (a graph whose operands disagree fails there; only graphs
 * it runs are worth comparing), it runs on oneDNN with the default options, and again with
 * graft's own kernels and the option-picked oneDNN ones off (winograd, gemv, dw_jit) when a
 * primitive of the first run was one of those (OPTION_PRIMS). Every oneDNN run that succeeds
 * must agree with the reference on every output (TOLERANCE below); a mismatch aborts naming the
 * output's node and op. Output buffers carry canaries. oneDNN reads its ISA cap once per
 * process, so the other ISA is a second run of this target (scripts/fuzz.sh json_graph_avx2). */
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
 * kernels; oneDNN's Winograd; jit_dw): when the run with the default options has a primitive
 * whose implementation names one, the graph runs again with winograd, gemv and dw_jit off. */
static const char *const OPTION_PRIMS[] = {"graft_", "wino", "jit_dw"};

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
 * times 1 +- jitter; NULL when it cannot (or should not) be made. */
static rt_tensor *declared(rt_json_graph *g, uint32_t nid, uint32_t o, uint64_t seed, double jitter) {
    const rt_json_node *n = rt_json_graph_node(g, nid);
    if (!n || o >= n->noutputs) return NULL;
    rt_tensor *t = fuzz_tensor(n->dtypes[o], n->ndims[o], n->shapes[o]);
    if (!t) return NULL;
    fuzz_fill(t, seed);
    DLDataType dt = t->dl.dtype;
    float *f = rt_tensor_data(t);
    for (size_t i = 0, k = (size_t)rt_tensor_numel(t); jitter && dt.code == kDLFloat && dt.bits == 32 && i < k; i++)
        f[i] *= (float)(1 + ((i * 2654435761u >> 7) & 1 ? jitter : -jitter));
    return t;
}

/* What one engine run leaves: its outputs (NULL when it did not run to the end) and whether a
 * primitive was one that the options pick. */
typedef struct run_result {
    bool ran;
    bool comparable;              /* no value the annotation stands for (annotation_stands_for_values) */
    bool invalid;                 /* a post writes outside its composite (not run on oneDNN) */
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

static bool annotation_stands_for_values(rt_json_graph *g, bool *invalid);

/* Runs the graph in data on eng with options opts, inputs and constants from seed (each float
 * times 1 +- jitter when jitter is not 0). */
static run_result run_engine(const uint8_t *data, size_t size, uint64_t seed, double jitter,
                             const rt_json_engine *eng, const void *opts) {
    run_result r = {0};
    rt_json_graph *g = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (rt_json_graph_load("fuzz", (const char *)data, size, &g, &d) != GR_OK) return r;
    r.comparable = !annotation_stands_for_values(g, &r.invalid);
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
        ok = c < nc && (consts[c] = declared(g, nid, 0, TENSOR_SEED(seed, c), jitter)) != NULL;
        c++;
    }
    if (ok && rt_json_graph_init(g, consts, nc, &d) == GR_OK) {
        for (uint32_t i = 0; i < ni && ok; i++)
            ok = (io[i] = declared(g, rt_json_graph_input_nid(g, i), 0, TENSOR_SEED(seed, nc + i), jitter)) != NULL;
        for (uint32_t h = 0; h < nh && ok; h++) {
            rt_json_entry e = rt_json_graph_head(g, h);
            rt_tensor *t = declared(g, e.nid, e.index, 0, 0);
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

/* Marks the node of each [nid, index] entry found anywhere in v. */
static void mark_entries(json_t *v, bool *ref, uint32_t nn) {
    if (json_is_array(v) && json_array_size(v) == 2 && json_is_integer(json_array_get(v, 0)) &&
        json_is_integer(json_array_get(v, 1))) {
        json_int_t nid = json_integer_value(json_array_get(v, 0));
        if (nid >= 0 && nid < (json_int_t)nn) ref[nid] = true;
        return;
    }
    size_t i;
    const char *key;
    json_t *x;
    if (json_is_array(v)) json_array_foreach(v, i, x) mark_entries(x, ref, nn);
    if (json_is_object(v)) json_object_foreach(v, key, x) mark_entries(x, ref, nn);
}

/* Node n's scalars (float args, real op_attrs) into out; more than max: -1. */
static int node_scalars(const rt_json_node *n, double *out, int max) {
    int k = 0;
    size_t i;
    const char *key;
    json_t *v;
    json_array_foreach(json_object_get(n->attrs, "args"), i, v) {
        json_t *f = json_object_get(v, "float");
        if (json_is_number(f) && k < max) out[k++] = json_number_value(f);
        else if (json_is_number(f)) return -1;
    }
    json_object_foreach(json_object_get(n->attrs, "op_attrs"), key, v) {
        if (json_is_real(v) && k < max) out[k++] = json_real_value(v);
        else if (json_is_real(v)) return -1;
    }
    return k;
}

/* Whether float(x) is one of the n values of xs. */
static bool among(double x, const double *xs, int n) {
    for (int i = 0; i < n; i++)
        if ((float)xs[i] == (float)x) return true;
    return false;
}

/* Whether a post and its node n hold the same scalars: each of n's is the post's alpha or beta,
 * and each nonzero alpha or beta is one of n's (a relu's 0, a clip's bounds, a leaky relu's
 * slope). */
static bool post_params_agree(const rt_json_node *n, json_t *post) {
    double sc[16], ab[2];
    int nsc = node_scalars(n, sc, 16), nab = 0;
    json_t *a = json_object_get(post, "alpha"), *b = json_object_get(post, "beta");
    if (json_is_number(a)) ab[nab++] = json_number_value(a);
    if (json_is_number(b)) ab[nab++] = json_number_value(b);
    if (nsc < 0) return false;
    for (int k = 0; k < nsc; k++)
        if (!among(sc[k], ab, nab)) return false;
    for (int k = 0; k < nab; k++)
        if (ab[k] != 0 && !among(ab[k], sc, nsc)) return false;
    return true;
}

/* The ops a post's node may be, for the posts that are one op (the others read constants the
 * annotation does not name, which annotation_stands_for_values catches). */
static const struct {
    const char *post, *ops[2];
} POST_OPS[] = {
    {"bias", {"relax.add"}},          {"add", {"relax.add"}},
    {"mul", {"relax.multiply"}},      {"relu", {"relax.nn.relu"}},
    {"leaky_relu", {"relax.nn.leakyrelu"}}, {"relu6", {"relax.nn.relu6", "relax.clip"}},
    {"clip", {"relax.clip"}},         {"sigmoid", {"relax.sigmoid"}},
    {"tanh", {"relax.tanh"}},         {"gelu", {"relax.nn.gelu"}},
    {"swish", {"relax.nn.silu"}},
};

/* Whether node n's op may be the post named kind. */
static bool post_op_ok(const char *kind, const rt_json_node *n) {
    for (size_t i = 0; i < sizeof POST_OPS / sizeof *POST_OPS; i++) {
        if (strcmp(kind, POST_OPS[i].post)) continue;
        for (size_t k = 0; k < 2; k++)
            if (POST_OPS[i].ops[k] && n->name && !strcmp(n->name, POST_OPS[i].ops[k])) return true;
        return false;
    }
    return true;
}

/* Marks in read the nodes whose outputs kernel node n reads: those its args name ({"in": k}),
 * all its inputs when it has no args. */
static void mark_reads(const rt_json_node *n, bool *read, uint32_t nn) {
    json_t *args = n->attrs ? json_object_get(n->attrs, "args") : NULL, *x;
    size_t i;
    for (uint32_t k = 0; !json_is_array(args) && k < n->ninputs; k++)
        if (n->inputs[k].nid < nn) read[n->inputs[k].nid] = true;
    json_array_foreach(args, i, x) {
        json_int_t k = json_integer_value(json_object_get(x, "in"));
        if (json_is_integer(json_object_get(x, "in")) && k >= 0 && k < (json_int_t)n->ninputs &&
            n->inputs[k].nid < nn)
            read[n->inputs[k].nid] = true;
    }
}

/* Whether composite node from reads target, directly or through other nodes of the composite
 * (in_comp); seen: scratch, cleared by the caller. */
static bool depends_on(rt_json_graph *g, uint32_t from, uint32_t target, const bool *in_comp, bool *seen, bool *own,
                       uint32_t nn) {
    if (from == target) return true;
    if (seen[from] || !in_comp[from]) return false;
    seen[from] = true;
    memset(own, 0, nn);
    mark_reads(rt_json_graph_node(g, from), own, nn);
    uint32_t srcs[RT_MAX_NDIM * 4], ns = 0;
    for (uint32_t src = 0; src < nn && ns < sizeof srcs / sizeof *srcs; src++)
        if (own[src] && in_comp[src]) srcs[ns++] = src;
    for (uint32_t k = 0; k < ns; k++)
        if (depends_on(g, srcs[k], target, in_comp, seen, own, nn)) return true;
    return false;
}

/* Whether a fused composite's annotation stands for values the engine does not read from the
 * graph, or names operands the graph's nodes do not read. The engine computes what the
 * annotation says (backends/dnnl matched the values); a fuzzed graph where the two differ makes
 * the reference compute another function, so such graphs are run but not compared:
 *   - a node the composite folds reads a value from outside the composite that the annotation
 *     does not name (hardswish's 3 and 6, a hard-sigmoid's slope: constants it stands for; or
 *     an operand the graph changed);
 *   - the annotation names an operand that no node of the composite reads;
 *   - a post's alpha and beta are not its node's scalars (post_params_agree; a swish's implied
 *     alpha of 1 too), or its node is another op (POST_OPS);
 *   - a post's node is the previous post's (or the anchor), or does not read it through the
 *     composite;
 *   - the composite's name lists other posts than its annotation.
 * *invalid: a post's output is no kernel node of the composite. oneDNN wrote such a post's result
 * into that entry, even a region input's (past the output's end when it is the output); the
 * engine's operand checks are to reject it, until then such graphs are not run on oneDNN. */
static bool annotation_stands_for_values(rt_json_graph *g, bool *invalid) {
    uint32_t nn = rt_json_graph_num_nodes(g);
    bool *in_comp = calloc(nn + 1, 1), *named = calloc(nn + 1, 1), *read = calloc(nn + 1, 1), *own = calloc(nn + 1, 1);
    bool stands = !in_comp || !named || !read || !own;
    /* every composite is looked at: one that only stands for values does not hide an invalid one */
    for (uint32_t nid = 0; nid < nn && in_comp && named && read && own && !*invalid; nid++) {
        const rt_json_node *n = rt_json_graph_node(g, nid);
        json_t *ann = n->attrs ? json_object_get(n->attrs, "dnnl") : NULL, *x;
        if (!json_is_object(ann)) continue;
        memset(in_comp, 0, nn);
        memset(named, 0, nn);
        memset(read, 0, nn);
        json_t *anchor = json_object_get(ann, "anchor");
        const char *key;
        size_t i;
        json_array_foreach(json_object_get(ann, "nodes"), i, x) {
            json_int_t m = json_integer_value(x);
            if (json_is_integer(x) && m >= 0 && m < (json_int_t)nn) in_comp[m] = true;
        }
        json_object_foreach(ann, key, x) if (strcmp(key, "nodes") && strcmp(key, "anchor")) mark_entries(x, named, nn);
        for (uint32_t m = 0; m < nn; m++) {
            const rt_json_node *f = rt_json_graph_node(g, m);
            if (!in_comp[m] || f->kind != RT_JSON_KERNEL) continue;
            memset(own, 0, nn);
            mark_reads(f, own, nn);
            bool folded = json_integer_value(anchor) != (json_int_t)m;
            for (uint32_t src = 0; src < nn; src++) {
                if (!own[src]) continue;
                read[src] = true;
                if (folded && !in_comp[src] && !named[src]) stands = true;
            }
        }
        for (uint32_t src = 0; src < nn; src++)
            if (named[src] && !in_comp[src] && !read[src]) stands = true;
        rt_dnnl_composite c = {0};
        json_t *posts = json_object_get(ann, "post");
        if (!rt_dnnl_composite_parse(json_string_value(json_object_get(ann, "composite")), &c) ||
            json_array_size(posts) != (size_t)c.npost)
            stands = true;
        json_int_t prev = json_integer_value(anchor);
        json_array_foreach(posts, i, x) {
            const char *kind = json_string_value(json_object_get(x, "post"));
            if (i >= (size_t)c.npost || !kind || strcmp(kind, rt_dnnl_post_name(c.post[i]))) stands = true;
            json_t *out = json_array_get(json_object_get(x, "out"), 0), *mid = json_object_get(x, "mid");
            json_int_t o = json_integer_value(out), mi = json_integer_value(json_array_get(mid, 0));
            if (!json_is_integer(out) || o < 0 || o >= (json_int_t)nn) continue;
            bool mid_ok = !mid || (mi >= 0 && mi < (json_int_t)nn && in_comp[mi] &&
                                   rt_json_graph_node(g, (uint32_t)mi)->kind == RT_JSON_KERNEL);
            if (!in_comp[o] || rt_json_graph_node(g, (uint32_t)o)->kind != RT_JSON_KERNEL || !mid_ok)
                *invalid = stands = true;
            const rt_json_node *on = rt_json_graph_node(g, (uint32_t)o);
            if (!post_params_agree(on, x) || (kind && !post_op_ok(kind, on))) stands = true;
            memset(read, 0, nn);
            if (o == prev || (prev >= 0 && prev < (json_int_t)nn &&
                              !depends_on(g, (uint32_t)o, (uint32_t)prev, in_comp, read, own, nn)))
                stands = true;
            prev = o;
        }
    }
    free(in_comp);
    free(named);
    free(read);
    free(own);
    return stands;
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
 * constants move by JITTER (relative): the graph is ill-conditioned there (a division by a
 * value near zero, a comparison at a near-tie), so any other fp32 summation order may move it
 * as much. That second reference run is made once, on the first disagreement (jit). A graph
 * whose reference run has a non-finite value inside (a division by an exact zero) is not
 * compared either: whether that is +Inf or -Inf hangs on the sign of a zero, and a relu or clip
 * after it turns the difference into finite outputs that differ (seen: -10.95 against -10.62). */
#define JITTER 0x1p-20
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
    run_result r = text ? run_engine((const uint8_t *)text, strlen(text), seed, 0, &rt_json_reference_engine, NULL)
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
    bool made;
    run_result r;
    int finite;                   /* intermediates_finite: -1 not asked yet */
} jittered_ref;
static void compare(const uint8_t *data, size_t size, uint64_t seed, const run_result *ref, jittered_ref *jit,
                    const run_result *got, const char *variant) {
    for (uint32_t h = 0; h < ref->nh; h++) {
        const rt_tensor *r = ref->outs[h], *o = got->outs[h];
        double max_ref = max_abs(r);
        for (size_t i = 0, ne = (size_t)rt_tensor_numel(r); i < ne; i++) {
            if (elem_agrees(r, o, i, max_ref)) continue;
            if (!jit->made) jit->r = run_engine(data, size, seed, JITTER, &rt_json_reference_engine, NULL);
            jit->made = true;
            if (jit->r.ran && !elem_agrees(r, jit->r.outs[h], i, max_ref)) continue;
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
    run_result ref = run_engine(data, size, seed, 0, &rt_json_reference_engine, NULL);
    jittered_ref jit = {.finite = -1};
    if (ref.ran && !ref.invalid) {
        rt_dnnl_opts on = rt_dnnl_default_opts(), off = on;
        off.winograd = off.gemv = off.dw_jit = false;
        run_result dn = run_engine(data, size, seed, 0, &rt_dnnl_engine, &on);
        if (dn.ran && ref.comparable) compare(data, size, seed, &ref, &jit, &dn, "default options");
        if (dn.option_prims) {
            run_result dn_off = run_engine(data, size, seed, 0, &rt_dnnl_engine, &off);
            if (dn_off.ran && ref.comparable)
                compare(data, size, seed, &ref, &jit, &dn_off, "winograd, gemv, dw_jit off");
            result_free(&dn_off);
        }
        result_free(&dn);
    }
    result_free(&jit.r);
    result_free(&ref);
    return 0;
}
