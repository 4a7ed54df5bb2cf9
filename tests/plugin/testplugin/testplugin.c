/* A backend plugin for the tests (include/graft/backend_plugin.h), in plain C against the public
 * headers alone: float32 relu, add and multiply of same-shape operands (a C check turns
 * broadcasts away), one kernel node per op. Built by the Makefile in variants that the loader
 * must treat differently:
 *   TESTPLUGIN_ABI_MAJOR=2        another major version of the plugin ABI: refused;
 *   TESTPLUGIN_ABI_1_0            a plugin of ABI 1.0, whose struct ends before pattern_file:
 *                                 loads, and its patterns come from pattern_text alone;
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
} state;

static void release(void *p) {
    state *s = p;
    if (!s) return;
    for (uint32_t i = 0; i < s->nvals; i++)
        if (s->owned[i]) free(s->vals[i]);
    free(s->vals), free(s->owned), free(s->numel), free(s->steps), free(s->in), free(s->out), free(s);
}

static int compile(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o, void **out,
                   graft_plugin_error *err) {
    uint32_t n = api->region_num_nodes(r);
    state *s = calloc(1, sizeof(*s));
    s->nvals = n;
    s->vals = calloc(n, sizeof(float *));
    s->owned = calloc(n, 1);
    s->numel = calloc(n, sizeof(size_t));
    s->steps = calloc(n, sizeof(step));
    s->scale = atoi(api->option(o, "scale"));
    for (uint32_t nid = 0; nid < n; nid++) {
        if (api->node_num_outputs(r, nid) != 1 || api->node_dtype(r, nid, 0) != GRAFT_FLOAT32) {
            api->set_error(err, "node %u (%s, layer %s): not one float32 output", nid, api->node_name(r, nid),
                           api->node_layer(r, nid));
            release(s);
            return 1;
        }
        size_t numel = 1;
        const int64_t *shape = api->node_shape(r, nid, 0);
        for (int k = 0; k < api->node_ndim(r, nid, 0); k++) numel *= (size_t)shape[k];
        s->numel[nid] = numel;
        graft_node_kind kind = api->node_kind(r, nid);
        if (kind == GRAFT_NODE_INPUT) continue;
        s->vals[nid] = malloc(numel * sizeof(float) + 1);
        s->owned[nid] = 1;
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

static const graft_plugin_option OPTIONS[] = {
    {"scale", GRAFT_OPTION_INT, "1", "multiplies relu's output (tests that options reach the plugin)", NULL},
};

static const graft_plugin PLUGIN = {
    .abi_major = TESTPLUGIN_ABI_MAJOR,
#ifdef TESTPLUGIN_ABI_1_0
    .abi_minor = 0,
    .struct_size = offsetof(graft_plugin, pattern_file),
#else
    .abi_minor = GRAFT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(graft_plugin),
    .pattern_file = "testplugin_patterns.relax",
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
