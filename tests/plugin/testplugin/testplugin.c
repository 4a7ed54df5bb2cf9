/* A backend plugin for the tests (include/graft/backend_plugin.h), in plain C against the public
 * headers alone: float32 relu, add and multiply of same-shape operands (a C check turns
 * broadcasts away), one kernel node per op. Built by the Makefile in variants that the loader
 * must treat differently:
 *   TESTPLUGIN_ABI_MAJOR=2        another major version of the plugin ABI: refused;
 *   TESTPLUGIN_ABI_1_0            a plugin of ABI 1.0, whose struct ends before pattern_file:
 *                                 loads, and its patterns come from pattern_text alone;
 *   TESTPLUGIN_ABI_1_1            a plugin of ABI 1.1, without serialize / deserialize: loads
 *                                 an artifact whose regions carry a stored form by compiling;
 *   TESTPLUGIN_VERSION="2.0.0"    the same plugin, another major version of it: artifacts made
 *                                 with 1.x are refused. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <graft/backend_plugin.h>

#ifndef TESTPLUGIN_ABI_MAJOR
#define TESTPLUGIN_ABI_MAJOR GRAFT_PLUGIN_ABI_MAJOR
#endif
#ifndef TESTPLUGIN_VERSION
#define TESTPLUGIN_VERSION "1.2.0"
#endif

#define PATTERN(name, op, params, args)                                                                  \
    "    @R.function(private=True)\n"                                                                     \
    "    def " name "(" params "):\n"                                                                     \
    "        R.func_attr({\"Composite\": \"testplugin." name "\"})\n"                                     \
    "        with R.dataflow():\n"                                                                        \
    "            gv = " op "(" args ")\n"                                                                 \
    "            R.output(gv)\n"                                                                          \
    "        return gv\n"

static const char PATTERNS[] = "@I.ir_module\nclass Patterns:\n"
    PATTERN("relu", "R.nn.relu", "x: R.Tensor(dtype=\"float32\")", "x")
    PATTERN("add", "R.add", "a: R.Tensor(dtype=\"float32\"), b: R.Tensor(dtype=\"float32\")", "a, b");

enum { OP_RELU, OP_ADD, OP_MUL };
static const struct {
    const char *name;
    int op;
} OPS[] = {{"relax.nn.relu", OP_RELU}, {"relax.add", OP_ADD}, {"relax.multiply", OP_MUL}};

/* add and multiply: same shapes only. */
static int same_shapes(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_arg_ndim(m, NULL, 0);
    if (nd < 0 || nd != api->match_arg_ndim(m, NULL, 1)) {
        *reason = "operands of different rank (no broadcast)";
        return 1;
    }
    for (int k = 0; k < nd; k++)
        if (api->match_arg_dim(m, NULL, 0, k) < 0 || api->match_arg_dim(m, NULL, 0, k) != api->match_arg_dim(m, NULL, 1, k)) {
            *reason = "operands of different shapes (no broadcast)";
            return 1;
        }
    return 0;
}

static const graft_plugin_check CHECKS[] = {{"testplugin.add", same_shapes}, {"testplugin.multiply", same_shapes}};

typedef struct step {
    int op;
    uint32_t out, a, b;
} step;

typedef struct state {
    uint32_t nvals, nsteps, nin, nout;
    float **vals;                  /* per node: its output (owned for consts and kernels) */
    unsigned char *owned;
    size_t *numel;
    step *steps;
    uint32_t *in, *out;
    int scale;
    unsigned char *kinds;          /* per node: 0 input, 1 const, 2 kernel */
} state;

static state *state_new(uint32_t n) {
    state *s = calloc(1, sizeof(*s));
    s->nvals = n;
    s->vals = calloc(n + 1, sizeof(float *));
    s->owned = calloc(n + 1, 1);
    s->kinds = calloc(n + 1, 1);
    s->numel = calloc(n + 1, sizeof(size_t));
    s->steps = calloc(n + 1, sizeof(step));
    return s;
}

static void release(void *p) {
    state *s = p;
    if (!s) return;
    for (uint32_t i = 0; i < s->nvals; i++)
        if (s->owned[i]) free(s->vals[i]);
    free(s->vals), free(s->owned), free(s->kinds), free(s->numel), free(s->steps), free(s->in), free(s->out), free(s);
}

static size_t node_numel(const graft_host_api *api, const graft_region *r, uint32_t nid) {
    size_t numel = 1;
    const int64_t *shape = api->node_shape(r, nid, 0);
    for (int k = 0; shape && k < api->node_ndim(r, nid, 0); k++) numel *= (size_t)shape[k];
    return numel;
}

static int compile(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o, void **out,
                   graft_plugin_error *err) {
    uint32_t n = api->region_num_nodes(r);
    state *s = state_new(n);
    s->scale = atoi(api->option(o, "scale"));
    for (uint32_t nid = 0; nid < n; nid++) {
        if (api->node_num_outputs(r, nid) != 1 || api->node_dtype(r, nid, 0) != GRAFT_FLOAT32) {
            api->set_error(err, "node %u (%s, layer %s): not one float32 output", nid, api->node_name(r, nid),
                           api->node_layer(r, nid));
            release(s);
            return 1;
        }
        size_t numel = node_numel(api, r, nid);
        s->numel[nid] = numel;
        graft_node_kind kind = api->node_kind(r, nid);
        if (kind == GRAFT_NODE_INPUT) continue;
        s->vals[nid] = malloc(numel * sizeof(float) + 1);
        s->owned[nid] = 1;
        s->kinds[nid] = kind == GRAFT_NODE_CONST ? 1 : 2;
        if (kind == GRAFT_NODE_CONST) {
            memcpy(s->vals[nid], api->node_const_data(r, nid), numel * sizeof(float));
            continue;
        }
        const char *op = api->node_op(r, nid, 0);
        int found = -1;
        for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
            if (op && strcmp(op, OPS[k].name) == 0) found = OPS[k].op;
        if (found < 0) {
            api->set_error(err, "op %s (layer %s) is not one of relu, add, multiply", op ? op : "?",
                           api->node_layer(r, nid));
            release(s);
            return 1;
        }
        step *st = &s->steps[s->nsteps++];
        st->op = found;
        st->out = nid;
        st->a = api->node_input(r, nid, 0, NULL);
        st->b = found == OP_RELU ? st->a : api->node_input(r, nid, 1, NULL);
    }
    s->nin = api->region_num_inputs(r);
    s->nout = api->region_num_outputs(r);
    s->in = calloc(s->nin + 1, sizeof(uint32_t));
    s->out = calloc(s->nout + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < s->nin; i++) s->in[i] = api->region_input(r, i);
    for (uint32_t i = 0; i < s->nout; i++) s->out[i] = api->region_output(r, i, NULL);
    *out = s;
    return 0;
}

static int run(void *p, const void *const *inputs, uint32_t nin, void *const *outputs, uint32_t nout,
               graft_plugin_error *err) {
    state *s = p;
    (void)err;
    for (uint32_t i = 0; i < nin && i < s->nin; i++) s->vals[s->in[i]] = (float *)inputs[i];
    for (uint32_t k = 0; k < s->nsteps; k++) {
        const step *st = &s->steps[k];
        float *y = s->vals[st->out];
        const float *a = s->vals[st->a], *b = s->vals[st->b];
        for (size_t i = 0; i < s->numel[st->out]; i++)
            y[i] = st->op == OP_RELU ? (a[i] > 0 ? a[i] : 0) * (float)s->scale
                 : st->op == OP_ADD  ? a[i] + b[i]
                                     : a[i] * b[i];
    }
    for (uint32_t i = 0; i < nout && i < s->nout; i++)
        memcpy(outputs[i], s->vals[s->out[i]], s->numel[s->out[i]] * sizeof(float));
    return 0;
}

#if !defined(TESTPLUGIN_ABI_1_0) && !defined(TESTPLUGIN_ABI_1_1)
/* ---- the stored form (ABI 1.2): the compiled program, its constants' data included ----
 *   "TPSTATE1", u32 nvals nsteps nin nout, i32 scale, per value: u8 kind (0 input, 1 const,
 *   2 kernel) and u64 numel, per step 4 u32, u32 in[nin], out[nout], then each constant's
 *   floats. deserialize checks every index and size against the region it is given. */
#define TP_MAGIC "TPSTATE1"

typedef struct wbuf {
    unsigned char *p;
    size_t at, cap;
} wbuf;

static void put(wbuf *w, const void *x, size_t n) {
    if (w->p && w->at + n <= w->cap) memcpy(w->p + w->at, x, n);
    w->at += n;
}

static int serialize(void *p, void *buf, size_t cap, size_t *len, graft_plugin_error *err) {
    state *s = p;
    (void)err;
    wbuf w = {buf, 0, cap};
    uint32_t hdr[4] = {s->nvals, s->nsteps, s->nin, s->nout};
    int32_t scale = s->scale;
    put(&w, TP_MAGIC, 8);
    put(&w, hdr, sizeof hdr);
    put(&w, &scale, 4);
    for (uint32_t i = 0; i < s->nvals; i++) {
        unsigned char kind = !s->owned[i] ? 0 : s->kinds[i];
        uint64_t numel = s->numel[i];
        put(&w, &kind, 1);
        put(&w, &numel, 8);
    }
    for (uint32_t k = 0; k < s->nsteps; k++) {
        uint32_t st[4] = {(uint32_t)s->steps[k].op, s->steps[k].out, s->steps[k].a, s->steps[k].b};
        put(&w, st, sizeof st);
    }
    put(&w, s->in, sizeof(uint32_t) * s->nin);
    put(&w, s->out, sizeof(uint32_t) * s->nout);
    for (uint32_t i = 0; i < s->nvals; i++)
        if (s->owned[i] && s->kinds[i] == 1) put(&w, s->vals[i], s->numel[i] * sizeof(float));
    *len = w.at;
    return 0;
}

typedef struct rbuf {
    const unsigned char *p;
    size_t at, len;
} rbuf;

static int get(rbuf *r, void *x, size_t n) {
    if (n > r->len - r->at) return 1;
    memcpy(x, r->p + r->at, n);
    r->at += n;
    return 0;
}

static int deserialize(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o,
                       const void *data, size_t len, const char *made_by, void **out, graft_plugin_error *err) {
    (void)o;
    rbuf b = {data, 0, len};
    char magic[8];
    uint32_t hdr[4];
    int32_t scale;
    if (get(&b, magic, 8) || memcmp(magic, TP_MAGIC, 8) || get(&b, hdr, sizeof hdr) || get(&b, &scale, 4) ||
        hdr[0] != api->region_num_nodes(r) || hdr[1] > hdr[0] || hdr[2] != api->region_num_inputs(r) ||
        hdr[3] != api->region_num_outputs(r)) {
        api->set_error(err, "stored form of testplugin %s does not fit region %s", made_by, api->region_symbol(r));
        return 1;
    }
    state *s = state_new(hdr[0]);
    s->nsteps = hdr[1], s->nin = hdr[2], s->nout = hdr[3], s->scale = scale;
    s->in = calloc(s->nin + 1, sizeof(uint32_t));
    s->out = calloc(s->nout + 1, sizeof(uint32_t));
    int bad = 0;
    for (uint32_t i = 0; i < s->nvals && !bad; i++) {
        unsigned char kind;
        uint64_t numel;
        bad = get(&b, &kind, 1) || get(&b, &numel, 8) || kind > 2 || numel != node_numel(api, r, i);
        if (bad) break;
        s->numel[i] = (size_t)numel;
        s->kinds[i] = kind;
        if (kind == 0) continue;
        s->vals[i] = malloc(s->numel[i] * sizeof(float) + 1);
        s->owned[i] = 1;
    }
    for (uint32_t k = 0; k < s->nsteps && !bad; k++) {
        uint32_t st[4];
        bad = get(&b, st, sizeof st) || st[0] > OP_MUL || st[1] >= s->nvals || st[2] >= s->nvals || st[3] >= s->nvals ||
              s->kinds[st[1]] != 2;
        if (!bad) s->steps[k] = (step){(int)st[0], st[1], st[2], st[3]};
    }
    bad = bad || get(&b, s->in, sizeof(uint32_t) * s->nin) || get(&b, s->out, sizeof(uint32_t) * s->nout);
    for (uint32_t i = 0; i < s->nin && !bad; i++) bad = s->in[i] >= s->nvals || s->kinds[s->in[i]] != 0;
    for (uint32_t i = 0; i < s->nout && !bad; i++) bad = s->out[i] >= s->nvals;
    for (uint32_t i = 0; i < s->nvals && !bad; i++)
        if (s->kinds[i] == 1) bad = get(&b, s->vals[i], s->numel[i] * sizeof(float));
    if (bad || b.at != len) {
        api->set_error(err, "stored form of testplugin %s is malformed", made_by);
        release(s);
        return 1;
    }
    *out = s;
    return 0;
}
#endif

static const graft_plugin_option OPTIONS[] = {
    {"scale", GRAFT_OPTION_INT, "1", "multiplies relu's output (tests that options reach the plugin)", NULL},
};

static const graft_plugin PLUGIN = {
    .abi_major = TESTPLUGIN_ABI_MAJOR,
#if defined(TESTPLUGIN_ABI_1_0)
    .abi_minor = 0,
    .struct_size = offsetof(graft_plugin, pattern_file),
#elif defined(TESTPLUGIN_ABI_1_1)
    .abi_minor = 1,
    .struct_size = offsetof(graft_plugin, serialize),
    .pattern_file = "testplugin_patterns.relax",
#else
    .abi_minor = GRAFT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(graft_plugin),
    .pattern_file = "testplugin_patterns.relax",
    .serialize = serialize,
    .deserialize = deserialize,
#endif
    .name = "testplugin",
    .version = TESTPLUGIN_VERSION,
    .description = "test plugin: float32 relu, add, multiply in plain C",
    .options = OPTIONS,
    .noptions = sizeof OPTIONS / sizeof OPTIONS[0],
    .pattern_text = PATTERNS,
    .checks = CHECKS,
    .nchecks = sizeof CHECKS / sizeof CHECKS[0],
    .region_mode = GRAFT_REGION_PER_OP,
    .compile = compile,
    .run = run,
    .release = release,
};

const graft_plugin *graft_backend_plugin(void) { return &PLUGIN; }
