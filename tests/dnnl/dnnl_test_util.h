/* Helpers for the oneDNN engine tests: small JSON graphs (the backends/json format) built by
 * hand, run once with the reference engine and once with the oneDNN engine, compared.
 *
 * Tolerance: |dnnl - ref| <= DT_ATOL + DT_RTOL * |ref|, fp32. oneDNN sums convolutions and
 * matmuls in another order (blocked channels, vector lanes) and fuses post-ops in registers;
 * with <= ~2000 products per output of values ~1, fp32 rounding (eps 1.2e-7) accumulates to
 * ~1e-5 relative in the worst case; its exp/erf/tanh approximations are within a few ulp. */
#ifndef GRAFT_TESTS_DNNL_UTIL_H
#define GRAFT_TESTS_DNNL_UTIL_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"
#include "runtime/module.h"
#include "tests/compare_util.h"

#define DT_RTOL 1e-4
#define DT_ATOL 1e-4
#define DT_CMP ((gr_cmp_opts){.atol = DT_ATOL, .rtol = DT_RTOL})
#define DT_MAX 64
/* Winograd convolutions (oneDNN's and graft's, dnnl_wino.c): |got - ref| <= DT_WINO_ATOL_OF_MAX *
 * max|ref| + DT_WINO_RTOL * |ref|, their error being relative to the largest outputs (the F(4x4)
 * transforms' coefficients reach 5 on the input and 8 on the output); test_dnnl_wino.c argues it */
#define DT_WINO_ATOL_OF_MAX 1e-4
#define DT_WINO_RTOL 1e-3

typedef struct dt_graph {
    json_t *nodes, *rows, *heads, *argn;
    int nnodes, nrows;
    rt_tensor *consts[DT_MAX];
    int nconsts;
    rt_tensor *inputs[DT_MAX];
    int ninputs;
    int64_t out_shapes[DT_MAX][RT_MAX_NDIM];
    int out_nd[DT_MAX];
    int nheads;
    uint32_t seed;
    const rt_dnnl_opts *opts; /* the oneDNN engine's options (NULL: defaults) */
} dt_graph;

/* No oneDNN primitive created since rt_dnnl_totals was last reset is on its reference kernels
 * (whatever the ISA: make test reruns these under ONEDNN_MAX_CPU_ISA=AVX2); with need_some, at
 * least one primitive was created. what names the case in the message. */
static inline void dt_expect_no_ref(const char *what, bool need_some) {
    uint64_t np = 0, nref = 0;
    char last[512] = "";
    rt_dnnl_totals(&np, &nref, last, sizeof last);
    if (need_some) cr_expect_gt(np, 0, "%s: no oneDNN primitive", what);
    cr_expect_eq(nref, 0, "%s (ISA %s): %lu of %lu primitives on ref; last: %s", what, rt_dnnl_isa(),
                 (unsigned long)nref, (unsigned long)np, last);
}

static inline float dt_rand(dt_graph *g) {
    g->seed = g->seed * 1664525u + 1013904223u;
    return (float)((g->seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static inline void dt_init(dt_graph *g, uint32_t seed) {
    memset(g, 0, sizeof(*g));
    g->nodes = json_array();
    g->rows = json_array();
    g->heads = json_array();
    g->argn = json_array();
    g->seed = seed;
    json_array_append_new(g->rows, json_integer(0));
}

static inline json_t *dt_shape(int nd, const int64_t *s) {
    json_t *a = json_array();
    for (int i = 0; i < nd; i++) json_array_append_new(a, json_integer(s[i]));
    return a;
}

static inline json_t *dt_types(int nd, const int64_t *s, const char *layer) {
    json_t *at = json_object();
    json_t *sh = json_array(), *dt = json_array();
    json_array_append_new(sh, dt_shape(nd, s));
    json_array_append_new(dt, json_string("float32"));
    json_object_set_new(at, "shape", sh);
    json_object_set_new(at, "dtype", dt);
    json_t *sp = json_array(), *o = json_object();
    json_object_set_new(o, "source", json_string(layer ? layer : ""));
    json_object_set_new(o, "output", json_true());
    json_array_append_new(sp, o);
    json_object_set_new(at, "span", sp);
    return at;
}

static inline int dt_push(dt_graph *g, json_t *node) {
    json_array_append_new(g->nodes, node);
    g->nrows++;
    json_array_append_new(g->rows, json_integer(g->nrows));
    return g->nnodes++;
}

/* A random input (scale * U(-1, 1) + shift). */
static inline int dt_input_r(dt_graph *g, int nd, const int64_t *s, float scale, float shift) {
    char name[32];
    snprintf(name, sizeof name, "in%d", g->ninputs);
    json_t *n = json_object();
    json_object_set_new(n, "op", json_string("input"));
    json_object_set_new(n, "name", json_string(name));
    json_object_set_new(n, "attrs", dt_types(nd, s, NULL));
    rt_tensor *t = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, nd, s);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = dt_rand(g) * scale + shift;
    g->inputs[g->ninputs++] = t;
    int id = dt_push(g, n);
    json_array_append_new(g->argn, json_integer(id));
    return id;
}
static inline int dt_input(dt_graph *g, int nd, const int64_t *s) { return dt_input_r(g, nd, s, 1.f, 0.f); }

static inline int dt_const_r(dt_graph *g, int nd, const int64_t *s, float scale, float shift) {
    char name[32];
    snprintf(name, sizeof name, "c%d", g->nconsts);
    json_t *n = json_object();
    json_object_set_new(n, "op", json_string("const"));
    json_object_set_new(n, "name", json_string(name));
    json_object_set_new(n, "attrs", dt_types(nd, s, NULL));
    rt_tensor *t = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, nd, s);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = dt_rand(g) * scale + shift;
    g->consts[g->nconsts++] = t;
    int id = dt_push(g, n);
    json_array_append_new(g->argn, json_integer(id));
    return id;
}
static inline int dt_const(dt_graph *g, int nd, const int64_t *s) { return dt_const_r(g, nd, s, 0.5f, 0.f); }

/* A scalar constant. */
static inline int dt_scalar(dt_graph *g, float v) {
    int id = dt_const_r(g, 0, NULL, 0.f, v);
    return id;
}

/* A kernel node: op, attrs (JSON text or NULL), inputs (node ids), extra args after the inputs
 * (JSON text array or NULL), output shape. args_json replaces the default {"in": k} list when
 * it starts with '!'. */
static inline int dt_op(dt_graph *g, const char *op, const char *attrs, int nin, const int *ins, const char *extra,
                        int nd, const int64_t *os, const char *layer) {
    json_t *n = json_object();
    json_object_set_new(n, "op", json_string("kernel"));
    json_object_set_new(n, "name", json_string(op));
    json_t *in = json_array();
    for (int i = 0; i < nin; i++) {
        json_t *e = json_array();
        json_array_append_new(e, json_integer(ins[i]));
        json_array_append_new(e, json_integer(0));
        json_array_append_new(e, json_integer(0));
        json_array_append_new(in, e);
    }
    json_object_set_new(n, "inputs", in);
    json_t *at = dt_types(nd, os, layer ? layer : op);
    json_error_t err;
    json_object_set_new(at, "op_attrs", attrs ? json_loads(attrs, 0, &err) : json_object());
    json_t *args;
    if (extra && extra[0] == '!') {
        args = json_loads(extra + 1, 0, &err);
    } else {
        args = json_array();
        for (int i = 0; i < nin; i++) {
            json_t *a = json_object();
            json_object_set_new(a, "in", json_integer(i));
            json_array_append_new(args, a);
        }
        if (extra) {
            json_t *x = json_loads(extra, 0, &err);
            size_t k;
            json_t *v;
            json_array_foreach(x, k, v) json_array_append(args, v);
            json_decref(x);
        }
    }
    cr_assert(args, "bad test args json");
    json_object_set_new(at, "args", args);
    json_object_set_new(n, "attrs", at);
    return dt_push(g, n);
}

/* Marks nodes[0..n) as one fused composite `name` built from node `anchor`, as the dnnl codegen
 * annotates them (backends/dnnl/dnnl.h "Composites"); posts: the "post" array as JSON text. */
static inline void dt_composite(dt_graph *g, const char *name, int anchor, int n, const int *nodes, const char *posts) {
    json_error_t err;
    json_t *ann = json_object(), *ns = json_array(), *p = json_loads(posts, 0, &err);
    cr_assert(p, "bad test posts json: %s", err.text);
    for (int i = 0; i < n; i++) {
        json_array_append_new(ns, json_integer(nodes[i]));
        json_t *at = json_object_get(json_array_get(g->nodes, (size_t)nodes[i]), "attrs");
        json_object_set_new(at, "dnnl_group", json_integer(nodes[0]));
    }
    json_object_set_new(ann, "composite", json_string(name));
    json_object_set_new(ann, "anchor", json_integer(anchor));
    json_object_set_new(ann, "nodes", ns);
    json_object_set_new(ann, "post", p);
    json_object_set_new(json_object_get(json_array_get(g->nodes, (size_t)nodes[0]), "attrs"), "dnnl", ann);
}

static inline void dt_head(dt_graph *g, int nid) {
    json_t *e = json_array();
    json_array_append_new(e, json_integer(nid));
    json_array_append_new(e, json_integer(0));
    json_array_append_new(e, json_integer(0));
    json_array_append_new(g->heads, e);
    json_t *n = json_array_get(g->nodes, (size_t)nid);
    json_t *s = json_array_get(json_object_get(json_object_get(n, "attrs"), "shape"), 0);
    g->out_nd[g->nheads] = (int)json_array_size(s);
    for (size_t k = 0; k < json_array_size(s); k++) g->out_shapes[g->nheads][k] = json_integer_value(json_array_get(s, k));
    g->nheads++;
}

static inline char *dt_text(dt_graph *g) {
    json_t *root = json_object();
    json_object_set_new(root, "symbol", json_string("test_region"));
    json_object_set(root, "nodes", g->nodes);
    json_object_set(root, "arg_nodes", g->argn);
    json_object_set(root, "heads", g->heads);
    json_object_set(root, "node_row_ptr", g->rows);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* Runs with engine eng; outputs allocated into outs. Returns status, fills diag, and the
 * engine stats through the module (prepare happens inside the call). */
static inline gr_status dt_run(dt_graph *g, const rt_json_engine *eng, rt_tensor **outs, gr_diag *d) {
    char *text = dt_text(g);
    rt_json_graph *gr = NULL;
    gr_status st = rt_json_graph_load("test_region", text, strlen(text), &gr, d);
    free(text);
    if (st) return st;
    st = rt_json_graph_init(gr, g->consts, (uint32_t)g->nconsts, d);
    if (st) {
        rt_json_graph_free(gr);
        return st;
    }
    rt_module *m = rt_json_module_new("test", eng, eng == &rt_dnnl_engine ? g->opts : NULL, &gr, 1);
    DLTensor *args[2 * DT_MAX];
    int na = 0;
    for (int i = 0; i < g->ninputs; i++) args[na++] = &g->inputs[i]->dl;
    for (int h = 0; h < g->nheads; h++) {
        outs[h] = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, g->out_nd[h], g->out_shapes[h]);
        float *p = rt_tensor_data(outs[h]);
        for (int64_t i = 0; i < rt_tensor_numel(outs[h]); i++) p[i] = NAN;
        args[na++] = &outs[h]->dl;
    }
    st = rt_module_call(m, "test_region", args, (uint32_t)g->ninputs, (uint32_t)g->nheads, d);
    /* run twice: buffers are reused across calls */
    if (!st && !getenv("DT_ONCE")) st = rt_module_call(m, "test_region", args, (uint32_t)g->ninputs, (uint32_t)g->nheads, d);
    rt_module_release(m);
    return st;
}

static inline void dt_free(dt_graph *g) {
    for (int i = 0; i < g->nconsts; i++) rt_tensor_release(g->consts[i]);
    for (int i = 0; i < g->ninputs; i++) rt_tensor_release(g->inputs[i]);
    json_decref(g->nodes);
    json_decref(g->rows);
    json_decref(g->heads);
    json_decref(g->argn);
}

/* Reference vs oneDNN on every head; returns the max abs error. */
static inline double dt_check(dt_graph *g) {
    rt_tensor *ref[DT_MAX] = {0}, *got[DT_MAX] = {0};
    gr_diag d = {0};
    gr_status st = dt_run(g, &rt_json_reference_engine, ref, &d);
    cr_assert_eq(st, GR_OK, "reference: %s", d.msg);
    gr_diag_clear(&d);
    st = dt_run(g, &rt_dnnl_engine, got, &d);
    cr_assert_eq(st, GR_OK, "dnnl: %s", d.msg);
    double worst = 0;
    for (int h = 0; h < g->nheads; h++) {
        gr_cmp_result e = tc_expect_tensor(got[h], ref[h], DT_CMP, "head %d: dnnl against the reference", h);
        if (e.max_abs > worst) worst = e.max_abs;
        rt_tensor_release(ref[h]);
        rt_tensor_release(got[h]);
    }
    return worst;
}

/* The graph prepared by the oneDNN engine (dt_release frees it). */
typedef struct dt_prepared {
    rt_json_graph *gr;
    void *state;
} dt_prepared;

static inline gr_status dt_prepare(dt_graph *g, dt_prepared *p, gr_diag *d) {
    char *text = dt_text(g);
    p->gr = NULL;
    p->state = NULL;
    gr_status st = rt_json_graph_load("test_region", text, strlen(text), &p->gr, d);
    free(text);
    if (!st) st = rt_json_graph_init(p->gr, g->consts, (uint32_t)g->nconsts, d);
    if (!st) st = rt_dnnl_engine.prepare(p->gr, g->opts, &p->state, d);
    if (st) {
        rt_json_graph_free(p->gr);
        p->gr = NULL;
    }
    return st;
}

static inline void dt_release(dt_prepared *p) {
    if (p->state) rt_dnnl_engine.release(p->gr, p->state);
    rt_json_graph_free(p->gr);
}

/* Prepares the graph with the oneDNN engine and returns what it built. */
static inline gr_status dt_stats(dt_graph *g, rt_dnnl_stats *out, gr_diag *d) {
    dt_prepared p;
    gr_status st = dt_prepare(g, &p, d);
    if (!st) {
        rt_dnnl_get_stats(p.state, out);
        dt_release(&p);
    }
    return st;
}

/* How many of p's primitives run on implementation impl (profile name, e.g. "graft_pool:avx2"). */
static inline int dt_count_impl(const dt_prepared *p, const char *impl) {
    int n = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p->state, i, &pi));
        n += !strcmp(pi.impl, impl);
    }
    return n;
}

/* Primitive i of p's region, expecting it to compute at least one layer and only layers among
 * the graph's (layers[0, nlayers)). */
static inline rt_dnnl_prim_info dt_prim_in(dt_prepared *p, uint32_t i, const char *const *layers, size_t nlayers) {
    rt_dnnl_prim_info pi;
    cr_assert(rt_dnnl_prim(p->state, i, &pi));
    cr_expect_geq(pi.nlayers, 1, "primitive %u (%s %s) computes no layer", i, pi.kind, pi.impl);
    for (uint32_t l = 0; l < pi.nlayers; l++) {
        bool known = false;
        for (size_t k = 0; k < nlayers; k++) known |= !strcmp(pi.layers[l], layers[k]);
        cr_expect(known, "primitive %u: layer '%s' is not a layer of the graph", i, pi.layers[l]);
    }
    return pi;
}

/* Prepares g (the test stops when that fails), returns its stats in st and expects no
 * primitive on oneDNN's reference kernels at this ISA. */
static inline void dt_prepare_no_ref(dt_graph *g, dt_prepared *p, rt_dnnl_stats *st) {
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(g, p, &d), GR_OK, "%s", d.msg);
    rt_dnnl_get_stats(p->state, st);
    cr_expect_eq(st->nref, 0, "%u primitives on ref (ISA %s)", st->nref, rt_dnnl_isa());
}

/* The same for a graph only its stats are wanted of. */
static inline void dt_stats_no_ref(dt_graph *g, rt_dnnl_stats *st) {
    dt_prepared p;
    dt_prepare_no_ref(g, &p, st);
    dt_release(&p);
}

#define S4(a, b, c, d) ((const int64_t[]){a, b, c, d})
#define S3(a, b, c) ((const int64_t[]){a, b, c})
#define S2(a, b) ((const int64_t[]){a, b})
#define S1(a) ((const int64_t[]){a})
#define IN(...) ((const int[]){__VA_ARGS__})

/* A product of input x ([B,] M x K; B 0: 2-D) with constant weights w, N x K read transposed
 * through a permute (layer "wT") when dense, else K x N, as layer "fc": the nodes so far into
 * nodes (*nn), the composite's name so far ("dnnl.dense" / "dnnl.matmul") into name. Returns
 * the product; *wc: the weights. dt_product_end closes it. */
static inline int dt_product(dt_graph *g, int64_t B, int64_t M, int64_t K, int64_t N, bool dense, int *nodes, int *nn,
                             char *name, size_t cap, int *wc) {
    int nd = B ? 3 : 2;
    int x = dt_input(g, nd, B ? S3(B, M, K) : S2(M, K));
    int w = dense ? dt_const(g, 2, S2(N, K)) : dt_const(g, 2, S2(K, N)), wt = w;
    *nn = 0;
    if (dense) nodes[(*nn)++] = wt = dt_op(g, "relax.permute_dims", "{\"axes\":[1,0]}", 1, IN(w), NULL, 2, S2(K, N), "wT");
    int mm = dt_op(g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x, wt), NULL, nd, B ? S3(B, M, N) : S2(M, N), "fc");
    nodes[(*nn)++] = mm;
    snprintf(name, cap, "dnnl.%s", dense ? "dense" : "matmul");
    *wc = w;
    return mm;
}

/* The output `head` of a dt_product graph, and its composite of nodes[0..nn) with post-ops
 * posts (none for a plain matmul: a single op); a dense one names its weights. */
static inline void dt_product_end(dt_graph *g, int head, bool dense, bool fused, const char *name, int mm, int nn, const int *nodes,
                                  const char *posts, int w) {
    dt_head(g, head);
    if (dense || fused) dt_composite(g, name, mm, nn, nodes, posts);
    if (dense) {
        json_t *ann = json_object_get(json_object_get(json_array_get(g->nodes, (size_t)nodes[0]), "attrs"), "dnnl");
        json_object_set_new(ann, "weight", json_pack("[ii]", w, 0));
    }
}

/* Convolution node cv (output shape os, C channels) + a bias add (layer "bias"), with
 * `residual` + the add of a new region input ("residual"), then act ("relu" or "sigmoid"), as
 * one fused composite dnnl.conv2d_bias[_add]_<act>, as the codegen annotates it; returns the
 * activation's node. */
static inline int dt_conv_bias_act(dt_graph *g, int cv, int64_t C, const int64_t *os, bool residual, const char *act) {
    bool relu = !strcmp(act, "relu");
    char posts[300], name[64];
    int b = dt_const(g, 4, S4(1, C, 1, 1));
    int a = dt_op(g, "relax.add", NULL, 2, IN(cv, b), NULL, 4, os, "bias");
    snprintf(name, sizeof name, "dnnl.conv2d_bias_%s%s", residual ? "add_" : "", act);
    if (residual) {
        int r = dt_input(g, 4, os);
        int s2 = dt_op(g, "relax.add", NULL, 2, IN(a, r), NULL, 4, os, "residual");
        int h = dt_op(g, relu ? "relax.nn.relu" : "relax.sigmoid", NULL, 1, IN(s2), NULL, 4, os, act);
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]",
                 a, b, s2, r, h);
        dt_composite(g, name, cv, 4, IN(cv, a, s2, h), posts);
        return h;
    }
    int h = dt_op(g, relu ? "relax.nn.relu" : "relax.sigmoid", NULL, 1, IN(a), NULL, 4, os, act);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, b, h);
    dt_composite(g, name, cv, 3, IN(cv, a, h), posts);
    return h;
}

#endif
