/* The smallest complete graft backend plugin (docs/writing-a-backend.md): float32 relu, sigmoid,
 * add and multiply of same-shape tensors, in plain C. Built out of tree against the public
 * headers alone:
 *
 *   cc -shared -fPIC -o libgraft_hello.so hello_plugin.c $(pkg-config --cflags graft) -lm
 *   graft run model.onnx --backend-lib ./libgraft_hello.so --backend hello */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <graft/backend_plugin.h>

/* 1. Patterns: which ops the backend takes, in graft's pattern file format (one function per
 *    pattern, named "<backend>.<pattern>" by its Composite attribute). */
#define UNARY(name, op)                                                                          \
    "    @R.function(private=True)\n"                                                            \
    "    def " name "(x: R.Tensor(dtype=\"float32\")):\n"                                        \
    "        R.func_attr({\"Composite\": \"hello." name "\"})\n"                                 \
    "        with R.dataflow():\n"                                                               \
    "            gv = " op "(x)\n"                                                               \
    "            R.output(gv)\n"                                                                 \
    "        return gv\n"
#define BINARY(name, op)                                                                         \
    "    @R.function(private=True)\n"                                                            \
    "    def " name "(a: R.Tensor(dtype=\"float32\"), b: R.Tensor(dtype=\"float32\")):\n"       \
    "        R.func_attr({\"Composite\": \"hello." name "\"})\n"                                 \
    "        with R.dataflow():\n"                                                               \
    "            gv = " op "(a, b)\n"                                                            \
    "            R.output(gv)\n"                                                                 \
    "        return gv\n"
static const char PATTERNS[] = "@I.ir_module\nclass Patterns:\n" UNARY("relu", "R.nn.relu")
    UNARY("sigmoid", "R.sigmoid") BINARY("add", "R.add") BINARY("multiply", "R.multiply");

/* 2. A check: what the pattern text cannot say. Here: no broadcasting. */
static int same_shapes(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_arg_ndim(m, NULL, 0);
    int same = nd >= 0 && nd == api->match_arg_ndim(m, NULL, 1);
    for (int k = 0; same && k < nd; k++) {
        int64_t d = api->match_arg_dim(m, NULL, 0, k);
        same = d >= 0 && d == api->match_arg_dim(m, NULL, 1, k);
    }
    if (!same) *reason = "hello does not broadcast";
    return !same;
}
static const graft_plugin_check CHECKS[] = {{"hello.add", same_shapes}, {"hello.multiply", same_shapes}};

/* 3. Codegen: a region (a graph of input, constant and op nodes) -> this backend's runtime state:
 *    here one step per op node, with a buffer per node. */
enum { RELU, SIGMOID, ADD, MUL };
typedef struct step { int op; uint32_t y, a, b; } step;
typedef struct state {
    uint32_t nnodes, nsteps, nin, nout, *in, *out;
    float **val;                   /* per node; inputs point at the caller's data */
    size_t *n;
    step *steps;
} state;

static void release(void *p) {
    state *s = p;
    for (uint32_t i = 0; s && i < s->nnodes; i++) free(s->val[i]);
    if (s) free(s->in), free(s->out), free(s->val), free(s->n), free(s->steps), free(s);
}

static int compile(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o, void **out,
                   graft_plugin_error *err) {
    static const struct { const char *op; int code; } OPS[] = {
        {"relax.nn.relu", RELU}, {"relax.sigmoid", SIGMOID}, {"relax.add", ADD}, {"relax.multiply", MUL}};
    (void)o;
    uint32_t nn = api->region_num_nodes(r);
    state *s = calloc(1, sizeof *s);
    s->nnodes = nn;
    s->val = calloc(nn, sizeof *s->val);
    s->n = calloc(nn, sizeof *s->n);
    s->steps = calloc(nn, sizeof *s->steps);
    for (uint32_t i = 0; i < nn; i++) {
        s->n[i] = 1;
        for (int k = 0; k < api->node_ndim(r, i, 0); k++) s->n[i] *= (size_t)api->node_shape(r, i, 0)[k];
        if (api->node_kind(r, i) == GRAFT_NODE_INPUT) continue;
        s->val[i] = malloc(s->n[i] * sizeof(float));
        if (api->node_kind(r, i) == GRAFT_NODE_CONST) {
            memcpy(s->val[i], api->node_const_data(r, i), s->n[i] * sizeof(float));
            continue;
        }
        step *st = &s->steps[s->nsteps++];
        st->op = -1;
        for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++)
            if (strcmp(api->node_op(r, i, 0), OPS[k].op) == 0) st->op = OPS[k].code;
        if (st->op < 0) {
            api->set_error(err, "no kernel for %s (layer %s)", api->node_op(r, i, 0), api->node_layer(r, i));
            release(s);
            return 1;
        }
        st->y = i;
        st->a = api->node_input(r, i, 0, NULL);
        st->b = api->node_num_inputs(r, i) > 1 ? api->node_input(r, i, 1, NULL) : st->a;
    }
    s->nin = api->region_num_inputs(r);
    s->nout = api->region_num_outputs(r);
    s->in = calloc(s->nin + 1, sizeof *s->in);
    s->out = calloc(s->nout + 1, sizeof *s->out);
    for (uint32_t i = 0; i < s->nin; i++) s->in[i] = api->region_input(r, i);
    for (uint32_t i = 0; i < s->nout; i++) s->out[i] = api->region_output(r, i, NULL);
    *out = s;
    return 0;
}

/* 4. Run: inputs and outputs are dense row-major buffers of the region's inputs and outputs. */
static int run(void *p, const void *const *inputs, uint32_t nin, void *const *outputs, uint32_t nout,
               graft_plugin_error *err) {
    state *s = p;
    (void)err;
    for (uint32_t i = 0; i < nin; i++) s->val[s->in[i]] = (float *)inputs[i];
    for (uint32_t k = 0; k < s->nsteps; k++) {
        const step *st = &s->steps[k];
        float *y = s->val[st->y];
        const float *a = s->val[st->a], *b = s->val[st->b];
        for (size_t i = 0; i < s->n[st->y]; i++)
            y[i] = st->op == RELU ? (a[i] > 0 ? a[i] : 0) : st->op == SIGMOID ? 1 / (1 + expf(-a[i]))
                 : st->op == ADD ? a[i] + b[i] : a[i] * b[i];
    }
    for (uint32_t i = 0; i < nin; i++) s->val[s->in[i]] = NULL; /* not ours to free */
    for (uint32_t i = 0; i < nout; i++) memcpy(outputs[i], s->val[s->out[i]], s->n[s->out[i]] * sizeof(float));
    return 0;
}

/* 5. The entry point graft looks up: the plugin, with the ABI version it was built for. */
static const graft_plugin PLUGIN = {
    .abi_major = GRAFT_PLUGIN_ABI_MAJOR,
    .abi_minor = GRAFT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(graft_plugin),
    .name = "hello",
    .version = "1.0.0",
    .description = "hello: float32 relu, sigmoid, add, multiply in plain C",
    .pattern_text = PATTERNS,
    .checks = CHECKS,
    .nchecks = 2,
    .region_mode = GRAFT_REGION_PER_OP,
    .compile = compile,
    .run = run,
    .release = release,
};

const graft_plugin *graft_backend_plugin(void) { return &PLUGIN; }
