/* libFuzzer target: the JSON graph loader (runtime/json/json_runtime.h) with both engines. A graph
 * that loads gets constants of its declared types, is initialized, prepared and called once on
 * the reference engine and once on oneDNN, with inputs and outputs of the declared shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"

/* Outputs get CANARY bytes of a known pattern past their end: a write beyond a head (oneDNN's
 * kernels are not instrumented, so ASan would only see the heap damage much later) aborts. */
#define CANARY 256

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

/* Tensor for output o of node nid as declared, NULL when it cannot (or should not) be made. */
static rt_tensor *declared(rt_json_graph *g, uint32_t nid, uint32_t o) {
    const rt_json_node *n = rt_json_graph_node(g, nid);
    if (!n || o >= n->noutputs) return NULL;
    return fuzz_tensor(n->dtypes[o], n->ndims[o], n->shapes[o]);
}

static void run_engine(const uint8_t *data, size_t size, const rt_json_engine *eng) {
    rt_json_graph *g = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (rt_json_graph_load("fuzz", (const char *)data, size, &g, &d) != GR_OK) return;
    uint32_t nc = rt_json_graph_num_consts(g), ni = rt_json_graph_num_inputs(g), nh = rt_json_graph_num_heads(g);
    uint32_t nn = rt_json_graph_num_nodes(g);
    rt_tensor **consts = calloc(nc + 1, sizeof(rt_tensor *));
    rt_tensor **io = calloc(ni + nh + 1, sizeof(rt_tensor *));
    DLTensor **args = calloc(ni + nh + 1, sizeof(DLTensor *));
    uint8_t **bufs = calloc(nh + 1, sizeof(uint8_t *));
    bool ok = true;
    /* constants are the const nodes in node order (rt_json_graph_const_name order) */
    for (uint32_t nid = 0, c = 0; nid < nn && ok; nid++) {
        const rt_json_node *n = rt_json_graph_node(g, nid);
        if (n->kind != RT_JSON_CONST) continue;
        ok = c < nc && (consts[c++] = declared(g, nid, 0)) != NULL;
    }
    if (ok && rt_json_graph_init(g, consts, nc, &d) == GR_OK) {
        for (uint32_t i = 0; i < ni && ok; i++) ok = (io[i] = declared(g, rt_json_graph_input_nid(g, i), 0)) != NULL;
        for (uint32_t h = 0; h < nh && ok; h++) {
            rt_json_entry e = rt_json_graph_head(g, h);
            rt_tensor *t = declared(g, e.nid, e.index);
            ok = t && (io[ni + h] = with_canary(t, &bufs[h])) != NULL;
            rt_tensor_release(t);
        }
        void *state = NULL;
        if (ok && eng->prepare(g, NULL, &state, &d) == GR_OK) {
            for (uint32_t k = 0; k < ni + nh; k++) args[k] = &io[k]->dl;
            eng->run(g, state, args, ni, nh, &d);
            for (uint32_t h = 0; h < nh; h++)
                if (!canary_intact(io[ni + h])) {
                    fprintf(stderr, "fuzz_json_graph: engine %s wrote past the end of output %u\n", eng->kind, h);
                    abort();
                }
            if (eng->release) eng->release(g, state);
        }
    }
    for (uint32_t k = 0; k < ni + nh; k++) rt_tensor_release(io[k]);
    for (uint32_t h = 0; h < nh; h++) free(bufs[h]);
    free(bufs);
    for (uint32_t c = 0; c < nc; c++) rt_tensor_release(consts[c]);
    free(args);
    free(io);
    free(consts);
    rt_json_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run_engine(data, size, &rt_json_reference_engine);
    run_engine(data, size, &rt_dnnl_engine);
    return 0;
}
