/* The JSON runtime base: loading, building, prepacked constants and the module (see
 * json_runtime.h); the reference engine is json_ref_engine.c. */
#include "runtime/json/json_runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "runtime/json/json_impl.h"
#include "runtime/kernels/kernels.h"
#include "runtime/value.h"


/* ------------------------------------------------------------------------- loading ---- */

gr_status rt_json__bad(gr_diag *d, const char *sym, const char *what) {
    return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': malformed graph: %s", sym, what);
}

static rt_json_graph *graph_alloc(const char *symbol) {
    rt_json_graph *g = calloc(1, sizeof(*g));
    if (!g) return NULL;
    g->symbol = strdup(symbol);
    pthread_mutex_init(&g->doc_lock, NULL);
    pthread_mutex_init(&g->shared_lock, NULL);
    return g;
}

static bool read_entry(json_t *e, rt_json_entry *out) {
    if (!json_is_array(e) || json_array_size(e) < 2) return false;
    json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
    if (!json_is_integer(a) || !json_is_integer(b) || json_integer_value(a) < 0 || json_integer_value(b) < 0)
        return false;
    out->nid = (uint32_t)json_integer_value(a);
    out->index = (uint32_t)json_integer_value(b);
    return true;
}

static gr_status read_node_types(rt_json_graph *g, rt_json_node *n, gr_diag *d) {
    json_t *shape = json_object_get(n->attrs, "shape"), *dtype = json_object_get(n->attrs, "dtype");
    if (!json_is_array(shape) || !json_is_array(dtype) || json_array_size(shape) != n->noutputs ||
        json_array_size(dtype) != n->noutputs)
        return rt_json__bad(d, g->symbol, "node without shape/dtype per output");
    for (uint32_t o = 0; o < n->noutputs; o++) {
        json_t *s = json_array_get(shape, o), *t = json_array_get(dtype, o);
        if (!json_is_array(s) || json_array_size(s) > RT_MAX_NDIM || !json_is_string(t) ||
            !ir_dtype_parse(json_string_value(t), &n->dtypes[o]))
            return rt_json__bad(d, g->symbol, "bad shape or dtype");
        n->ndims[o] = (int32_t)json_array_size(s);
        for (int32_t k = 0; k < n->ndims[o]; k++) {
            json_t *v = json_array_get(s, (size_t)k);
            if (json_is_string(v)) { /* symbolic: bound per call (runtime/json/json_specialize.c) */
                n->shapes[o][k] = -1;
                g->symbolic = true;
                continue;
            }
            if (!json_is_integer(v) || json_integer_value(v) < 0) return rt_json__bad(d, g->symbol, "bad shape dim");
            n->shapes[o][k] = json_integer_value(v);
        }
    }
    json_t *span = json_object_get(n->attrs, "span");
    json_t *first = json_is_array(span) ? json_array_get(span, 0) : NULL;
    /* [source, output] pairs; {"source": ...} objects are read too */
    json_t *src = json_is_array(first) ? json_array_get(first, 0) : json_object_get(first, "source");
    n->layer = json_is_string(src) ? json_string_value(src) : "";
    return GR_OK;
}

gr_status rt_json_graph_load(const char *symbol, const char *text, size_t len, rt_json_graph **out,
                             gr_diag *d) {
    *out = NULL;
    json_error_t err;
    json_t *doc = json_loadb(text, len, 0, &err);
    if (!doc) return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %s (line %d)", symbol, err.text, err.line);
    gr_status st = rt_json_graph_load_doc(symbol, doc, out, d);
    /* the text kept: an engine that drops the document (rt_json_graph_drop_doc) need not write it again */
    char *copy = st ? NULL : malloc(len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = 0;
        (*out)->text = copy;
        (*out)->text_len = len;
    }
    return st;
}

/* input / const node lists, consumer counts: the same for loaded and built graphs */
static gr_status graph_index(rt_json_graph *g, gr_diag *d) {
    g->input_nids = calloc(g->nnodes + 1, sizeof(uint32_t));
    g->const_nids = calloc(g->nnodes + 1, sizeof(uint32_t));
    g->consumers = calloc(g->row_ptr[g->nnodes] + 1, sizeof(uint32_t));
    if (!g->input_nids || !g->const_nids || !g->consumers) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    for (uint32_t i = 0; i < g->nnodes; i++) {
        if (g->nodes[i].kind == RT_JSON_INPUT) g->input_nids[g->ninputs++] = i;
        if (g->nodes[i].kind == RT_JSON_CONST) g->const_nids[g->nconsts++] = i;
    }
    g->consts = calloc(g->nconsts + 1, sizeof(rt_tensor *));
    if (!g->consts) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].ninputs; k++) g->consumers[rt_json_graph_entry_id(g, g->nodes[i].inputs[k])]++;
    for (uint32_t h = 0; h < g->nheads; h++) g->consumers[rt_json_graph_entry_id(g, g->heads[h])]++;
    return GR_OK;
}

gr_status rt_json_graph_load_doc(const char *symbol, json_t *doc, rt_json_graph **out, gr_diag *d) {
    *out = NULL;
    rt_json_graph *g = graph_alloc(symbol);
    if (!g) {
        json_decref(doc);
        return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    }
    g->doc = doc;
    atomic_store(&g->doc_ready, true);
    gr_status st = GR_OK;
    json_t *nodes = json_object_get(doc, "nodes"), *heads = json_object_get(doc, "heads");
    json_t *rows = json_object_get(doc, "node_row_ptr"), *argn = json_object_get(doc, "arg_nodes");
    if (!json_is_array(nodes) || !json_is_array(heads) || !json_is_array(rows) || !json_is_array(argn) ||
        json_array_size(rows) != json_array_size(nodes) + 1) {
        st = rt_json__bad(d, symbol, "missing nodes / heads / node_row_ptr / arg_nodes");
        goto fail;
    }
    g->nnodes = (uint32_t)json_array_size(nodes);
    g->nodes = calloc(g->nnodes + 1, sizeof(rt_json_node));
    g->row_ptr = calloc(g->nnodes + 1, sizeof(uint32_t));
    if (!g->nodes || !g->row_ptr) {
        st = gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i <= g->nnodes; i++) {
        json_t *r = json_array_get(rows, i);
        if (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > (json_int_t)UINT32_MAX / 2 ||
            (i && json_integer_value(r) < (json_int_t)g->row_ptr[i - 1])) {
            st = rt_json__bad(d, symbol, "node_row_ptr");
            goto fail;
        }
        g->row_ptr[i] = (uint32_t)json_integer_value(r);
    }
    /* each node's outputs are its declared shapes: row_ptr agrees before it sizes anything */
    size_t nin = 0, nent = g->row_ptr[g->nnodes];
    for (uint32_t i = 0; i < g->nnodes; i++) {
        json_t *jn = json_array_get(nodes, i), *ins = json_object_get(jn, "inputs");
        json_t *shape = json_object_get(json_object_get(jn, "attrs"), "shape");
        if (g->row_ptr[i + 1] - g->row_ptr[i] != json_array_size(shape)) {
            st = rt_json__bad(d, symbol, "node_row_ptr disagrees with the nodes' output shapes");
            goto fail;
        }
        nin += json_is_array(ins) ? json_array_size(ins) : 0;
    }
    g->in_pool = calloc(nin + 1, sizeof(rt_json_entry));
    g->dt_pool = calloc(nent + 1, sizeof(DLDataType));
    g->nd_pool = calloc(nent + 1, sizeof(int32_t));
    g->sh_pool = calloc(nent + 1, sizeof(*g->sh_pool));
    if (!g->in_pool || !g->dt_pool || !g->nd_pool || !g->sh_pool) {
        st = gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
        goto fail;
    }
    nin = 0;
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        json_t *jn = json_array_get(nodes, i);
        rt_json_node *n = &g->nodes[i];
        json_t *op = json_object_get(jn, "op"), *name = json_object_get(jn, "name");
        if (!json_is_string(op) || !json_is_string(name)) {
            st = rt_json__bad(d, symbol, "node without op/name");
            break;
        }
        const char *ops = json_string_value(op);
        n->kind = strcmp(ops, "input") == 0 ? RT_JSON_INPUT : strcmp(ops, "const") == 0 ? RT_JSON_CONST : RT_JSON_KERNEL;
        if (n->kind == RT_JSON_KERNEL && strcmp(ops, "kernel") != 0) {
            st = rt_json__bad(d, symbol, "unknown node op");
            break;
        }
        n->name = json_string_value(name);
        n->op = n->kind == RT_JSON_KERNEL ? ir_op_id_find(n->name) : IR_OP_NONE;
        n->attrs = json_object_get(jn, "attrs");
        n->noutputs = g->row_ptr[i + 1] - g->row_ptr[i];
        n->dtypes = &g->dt_pool[g->row_ptr[i]];
        n->ndims = &g->nd_pool[g->row_ptr[i]];
        n->shapes = &g->sh_pool[g->row_ptr[i]];
        json_t *ins = json_object_get(jn, "inputs");
        n->ninputs = json_is_array(ins) ? (uint32_t)json_array_size(ins) : 0;
        n->inputs = &g->in_pool[nin];
        nin += n->ninputs;
        for (uint32_t k = 0; k < n->ninputs; k++) {
            if (!read_entry(json_array_get(ins, k), &n->inputs[k]) || n->inputs[k].nid >= i ||
                n->inputs[k].index >= g->nodes[n->inputs[k].nid].noutputs) {
                st = rt_json__bad(d, symbol, "node input refers to a later node or a missing output");
                break;
            }
        }
        if (!st && !json_is_object(n->attrs)) st = rt_json__bad(d, symbol, "node without attrs");
        if (!st) st = read_node_types(g, n, d);
    }
    if (st) goto fail;
    g->nheads = (uint32_t)json_array_size(heads);
    g->heads = calloc(g->nheads + 1, sizeof(rt_json_entry));
    for (uint32_t h = 0; h < g->nheads; h++)
        if (!read_entry(json_array_get(heads, h), &g->heads[h]) || g->heads[h].nid >= g->nnodes ||
            g->heads[h].index >= g->nodes[g->heads[h].nid].noutputs) {
            st = rt_json__bad(d, symbol, "heads");
            goto fail;
        }
    if ((st = graph_index(g, d))) goto fail;
    *out = g;
    return GR_OK;
fail:
    rt_json_graph_free(g);
    return st;
}

/* ------------------------------------------------------------------------ building ---- */

rt_json_graph *rt_json_graph_begin(const char *symbol) {
    rt_json_graph *g = graph_alloc(symbol);
    if (g) g->build = calloc(1, sizeof(rt_json_build));
    if (g && !g->build) {
        rt_json_graph_free(g);
        return NULL;
    }
    if (g) gr_vec_push(&g->build->rows, 0);
    return g;
}

#define RESERVE(v, n)                                                              \
    do {                                                                           \
        if ((v).cap < (n)) {                                                       \
            (v).data = gr_xrealloc((v).data, sizeof(*(v).data) * (size_t)(n));     \
            (v).cap = (uint32_t)(n);                                               \
            gr_advise_huge((v).data, sizeof(*(v).data) * (size_t)(n));                \
        }                                                                          \
    } while (0)

/* Room for k more elements (doubling). */
#define GROW(v, k)                                                                 \
    do {                                                                           \
        if ((v).len + (size_t)(k) > (v).cap) {                                     \
            size_t c_ = (v).cap ? (v).cap : 8;                                     \
            while (c_ < (v).len + (size_t)(k)) c_ *= 2;                            \
            RESERVE(v, c_);                                                        \
        }                                                                          \
    } while (0)

static uint32_t pool_str(rt_json_build *b, const char *s) {
    uint32_t off = b->strs.len;
    size_t n = strlen(s ? s : "") + 1;
    GROW(b->strs, n);
    memcpy(b->strs.data + b->strs.len, s ? s : "", n);
    b->strs.len += (uint32_t)n;
    return off;
}

uint32_t rt_json_graph_add_node(rt_json_graph *g, rt_json_node_kind kind, const char *name, uint32_t ninputs,
                                const rt_json_entry *inputs, uint32_t noutputs, const DLDataType *dtypes,
                                const int32_t *ndims, const int64_t (*shapes)[RT_MAX_NDIM], const char *layer) {
    rt_json_build *b = g->build;
    rt_json_node n = {0};
    n.kind = kind;
    n.ninputs = ninputs;
    n.noutputs = noutputs;
    gr_vec_push(&b->in_off, b->ins.len);
    GROW(b->ins, ninputs);
    if (ninputs) memcpy(b->ins.data + b->ins.len, inputs, sizeof(*inputs) * ninputs);
    b->ins.len += ninputs;
    GROW(b->dts, noutputs);
    GROW(b->nds, noutputs);
    GROW(b->shs, (size_t)noutputs * RT_MAX_NDIM);
    for (uint32_t o = 0; o < noutputs; o++) {
        b->dts.data[b->dts.len++] = dtypes[o];
        b->nds.data[b->nds.len++] = ndims[o];
        int64_t *sh = b->shs.data + b->shs.len;
        for (int k = 0; k < RT_MAX_NDIM; k++) sh[k] = k < ndims[o] ? shapes[o][k] : 0;
        for (int k = 0; k < ndims[o]; k++) g->symbolic |= shapes[o][k] < 0;
        b->shs.len += RT_MAX_NDIM;
    }
    gr_vec_push(&b->name_off, pool_str(b, name));
    gr_vec_push(&b->layer_off, pool_str(b, layer));
    uint32_t row = b->rows.data[b->rows.len - 1] + noutputs;
    gr_vec_push(&b->rows, row);
    gr_vec_push(&b->nodes, n);
    return b->nodes.len - 1;
}

void rt_json_graph_add_head(rt_json_graph *g, rt_json_entry e) { gr_vec_push(&g->build->heads, e); }

void rt_json_graph_reserve(rt_json_graph *g, uint32_t nodes) {
    rt_json_build *b = g->build;
    if (!b || nodes > UINT32_MAX / (4 * RT_MAX_NDIM)) return;
    RESERVE(b->nodes, nodes);
    RESERVE(b->rows, nodes + 1);
    RESERVE(b->in_off, nodes);
    RESERVE(b->name_off, nodes);
    RESERVE(b->layer_off, nodes);
    RESERVE(b->ins, 2 * nodes);
    RESERVE(b->dts, nodes);
    RESERVE(b->nds, nodes);
    RESERVE(b->shs, (size_t)nodes * RT_MAX_NDIM);
    RESERVE(b->strs, 32 * nodes);
}

/* Moves a vector's block out (the graph owns it from now on). */
#define TAKE(dst, v) ((dst) = (void *)(v).data, (v).data = NULL, (v).len = (v).cap = 0)

gr_status rt_json_graph_finish(rt_json_graph *g, char *text, size_t len, gr_diag *d) {
    rt_json_build *b = g->build;
    g->text = text;
    g->text_len = len;
    g->nnodes = b->nodes.len;
    g->nheads = b->heads.len;
    TAKE(g->nodes, b->nodes);
    TAKE(g->row_ptr, b->rows);
    TAKE(g->heads, b->heads);
    TAKE(g->in_pool, b->ins);
    TAKE(g->dt_pool, b->dts);
    TAKE(g->nd_pool, b->nds);
    TAKE(g->sh_pool, b->shs);
    TAKE(g->str_pool, b->strs);
    gr_status st = GR_OK;
    /* every pool non-NULL, so node pointers into them are well-defined even when empty */
    if (!g->in_pool) g->in_pool = calloc(1, sizeof(*g->in_pool));
    if (!g->dt_pool) g->dt_pool = calloc(1, sizeof(*g->dt_pool));
    if (!g->nd_pool) g->nd_pool = calloc(1, sizeof(*g->nd_pool));
    if (!g->sh_pool) g->sh_pool = calloc(1, sizeof(*g->sh_pool));
    if (!g->nodes) g->nodes = calloc(1, sizeof(*g->nodes));
    if (!g->heads) g->heads = calloc(1, sizeof(*g->heads));
    if (!g->in_pool || !g->dt_pool || !g->nd_pool || !g->sh_pool || !g->nodes || !g->heads)
        st = gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        rt_json_node *n = &g->nodes[i];
        n->inputs = &g->in_pool[b->in_off.data[i]];
        n->dtypes = &g->dt_pool[g->row_ptr[i]];
        n->ndims = &g->nd_pool[g->row_ptr[i]];
        n->shapes = &g->sh_pool[g->row_ptr[i]];
        n->name = &g->str_pool[b->name_off.data[i]];
        n->op = n->kind == RT_JSON_KERNEL ? ir_op_id_find(n->name) : IR_OP_NONE;
        n->layer = &g->str_pool[b->layer_off.data[i]];
        for (uint32_t k = 0; k < n->ninputs; k++)
            if (n->inputs[k].nid >= i || n->inputs[k].index >= g->nodes[n->inputs[k].nid].noutputs)
                st = rt_json__bad(d, g->symbol, "node input refers to a later node or a missing output");
    }
    for (uint32_t h = 0; h < g->nheads && !st; h++)
        if (g->heads[h].nid >= g->nnodes || g->heads[h].index >= g->nodes[g->heads[h].nid].noutputs)
            st = rt_json__bad(d, g->symbol, "heads");
    gr_vec_free(&b->in_off);
    gr_vec_free(&b->name_off);
    gr_vec_free(&b->layer_off);
    free(b);
    g->build = NULL;
    if (!st) st = graph_index(g, d);
    if (st) rt_json_graph_free(g);
    return st;
}

/* Parses the text of a built graph the first time a node's attrs are needed (thread-safe). */
bool rt_json__graph_doc(rt_json_graph *g) {
    if (atomic_load(&g->doc_ready)) return true;
    pthread_mutex_lock(&g->doc_lock);
    if (!atomic_load(&g->doc_ready) && g->text) {
        json_t *doc = json_loadb(g->text, g->text_len, 0, NULL);
        json_t *nodes = json_object_get(doc, "nodes");
        if (json_array_size(nodes) == g->nnodes) {
            for (uint32_t i = 0; i < g->nnodes; i++) g->nodes[i].attrs = json_object_get(json_array_get(nodes, i), "attrs");
            g->doc = doc;
            atomic_store(&g->doc_ready, true);
        } else {
            json_decref(doc);
        }
    }
    pthread_mutex_unlock(&g->doc_lock);
    return atomic_load(&g->doc_ready);
}

void rt_json_graph_free(rt_json_graph *g) {
    if (!g) return;
    if (g->build) {
        rt_json_build *b = g->build;
        gr_vec_free(&b->nodes);
        gr_vec_free(&b->rows);
        gr_vec_free(&b->in_off);
        gr_vec_free(&b->name_off);
        gr_vec_free(&b->layer_off);
        gr_vec_free(&b->ins);
        gr_vec_free(&b->dts);
        gr_vec_free(&b->nds);
        gr_vec_free(&b->shs);
        gr_vec_free(&b->strs);
        gr_vec_free(&b->heads);
        free(b);
    }
    for (uint32_t i = 0; i < g->nconsts && g->consts; i++) rt_tensor_release(g->consts[i]);
    free(g->consts);
    for (uint32_t i = 0; i < g->npacks; i++) {
        free(g->packs[i].key);
        free(g->packs[i].layout);
        rt_tensor_release(g->packs[i].t);
    }
    free(g->packs);
    free(g->deferred);
    free(g->consumers);
    free(g->nodes);
    free(g->row_ptr);
    free(g->input_nids);
    free(g->const_nids);
    free(g->heads);
    free(g->in_pool);
    free(g->dt_pool);
    free(g->nd_pool);
    free(g->sh_pool);
    free(g->str_pool);
    json_decref(g->doc);
    free(g->text);
    free(g->symbol);
    if (g->shared && g->shared_free) g->shared_free(g->shared);
    pthread_mutex_destroy(&g->shared_lock);
    pthread_mutex_destroy(&g->doc_lock);
    free(g);
}

const char *rt_json_graph_symbol(const rt_json_graph *g) { return g->symbol; }
const char *rt_json_graph_text(rt_json_graph *g) {
    /* made on demand (serialization, specialization), maybe by concurrent calls */
    pthread_mutex_lock(&g->doc_lock);
    if (!g->text && g->doc) {
        g->text = json_dumps(g->doc, JSON_COMPACT);
        g->text_len = g->text ? strlen(g->text) : 0;
    }
    pthread_mutex_unlock(&g->doc_lock);
    return g->text;
}
/* The nodes' names and layers copied into the graph's own pool (a graph read from a document
 * points them into it); false when out of memory. */
static bool own_strings(rt_json_graph *g) {
    size_t nb = 1;
    for (uint32_t i = 0; i < g->nnodes; i++) nb += strlen(g->nodes[i].name) + strlen(g->nodes[i].layer) + 2;
    char *pool = malloc(nb), *at = pool;
    if (!pool) return false;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const char **str[2] = {&g->nodes[i].name, &g->nodes[i].layer};
        for (int k = 0; k < 2; k++) {
            size_t n = strlen(*str[k]) + 1;
            memcpy(at, *str[k], n);
            *str[k] = at;
            at += n;
        }
    }
    g->str_pool = pool;
    return true;
}

void rt_json_graph_drop_doc(rt_json_graph *g) {
    pthread_mutex_lock(&g->doc_lock);
    if (g->doc && !g->text) {
        g->text = json_dumps(g->doc, JSON_COMPACT);
        g->text_len = g->text ? strlen(g->text) : 0;
    }
    if (g->doc && g->text && (g->str_pool || own_strings(g))) {
        atomic_store(&g->doc_ready, false);
        for (uint32_t i = 0; i < g->nnodes; i++) g->nodes[i].attrs = NULL;
        json_decref(g->doc);
        g->doc = NULL;
    }
    pthread_mutex_unlock(&g->doc_lock);
}
uint32_t rt_json_graph_num_nodes(const rt_json_graph *g) { return g->nnodes; }
rt_json_node *rt_json_graph_node(rt_json_graph *g, uint32_t nid) {
    if (nid >= g->nnodes) return NULL;
    rt_json__graph_doc(g);
    return &g->nodes[nid];
}
uint32_t rt_json_graph_num_inputs(const rt_json_graph *g) { return g->ninputs; }
uint32_t rt_json_graph_input_nid(const rt_json_graph *g, uint32_t i) { return g->input_nids[i]; }
uint32_t rt_json_graph_num_heads(const rt_json_graph *g) { return g->nheads; }
rt_json_entry rt_json_graph_head(const rt_json_graph *g, uint32_t i) { return g->heads[i]; }
uint32_t rt_json_graph_entry_id(const rt_json_graph *g, rt_json_entry e) { return g->row_ptr[e.nid] + e.index; }
uint32_t rt_json_graph_num_entries(const rt_json_graph *g) { return g->row_ptr[g->nnodes]; }
uint32_t rt_json_graph_num_consts(const rt_json_graph *g) { return g->nconsts; }
const char *rt_json_graph_const_name(const rt_json_graph *g, uint32_t i) { return g->nodes[g->const_nids[i]].name; }
bool rt_json_graph_symbolic(const rt_json_graph *g) { return g->symbolic; }
void rt_json_graph_set_root(rt_json_graph *g, rt_json_graph *root) { g->root = root; }
void *rt_json_graph_shared(rt_json_graph *g, void *(*make)(void), void (*fr)(void *)) {
    rt_json_graph *r = g->root;
    if (!r) return NULL;
    pthread_mutex_lock(&r->shared_lock);
    if (!r->shared) {
        r->shared = make();
        r->shared_free = fr;
    }
    void *o = r->shared;
    pthread_mutex_unlock(&r->shared_lock);
    return o;
}
rt_tensor *rt_json_graph_const(const rt_json_graph *g, uint32_t i) { return i < g->nconsts ? g->consts[i] : NULL; }

bool rt_json__matches_node(const rt_json_node *n, uint32_t o, const DLTensor *t) {
    if (t->dtype.code != n->dtypes[o].code || t->dtype.bits != n->dtypes[o].bits || t->ndim != n->ndims[o]) return false;
    for (int32_t k = 0; k < t->ndim; k++)
        if (t->shape[k] != n->shapes[o][k]) return false;
    return true;
}

gr_status rt_json_graph_check_args(const rt_json_graph *g, DLTensor *const *args, uint32_t nin, uint32_t nout,
                                   gr_diag *d) {
    if (nin != g->ninputs || nout != g->nheads)
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': called with %u inputs and %u outputs, expects %u and %u",
                           g->symbol, nin, nout, g->ninputs, g->nheads);
    for (uint32_t i = 0; i < nin + nout; i++) {
        const rt_json_node *n;
        uint32_t o = 0;
        if (i < nin) {
            n = &g->nodes[g->input_nids[i]];
        } else {
            n = &g->nodes[g->heads[i - nin].nid];
            o = g->heads[i - nin].index;
        }
        const DLTensor *t = args[i];
        bool ok = t && rt_json__matches_node(n, o, t);
        /* compact row-major: the engines address every tensor as one dense block */
        int64_t s = 1;
        for (int32_t k = ok && t->strides ? t->ndim - 1 : -1; k >= 0 && ok; k--) {
            ok = t->shape[k] == 1 || t->strides[k] == s;
            s *= t->shape[k];
        }
        if (!ok)
            return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %s %u ('%s') has the wrong dtype, shape or strides "
                               "(a compact row-major tensor of its declared type)", g->symbol, i < nin ? "input" : "output",
                               i < nin ? i : i - nin, n->name);
    }
    return GR_OK;
}

gr_status rt_json_graph_init(rt_json_graph *g, rt_tensor *const *consts, uint32_t n, gr_diag *d) {
    if (g->initialized) return GR_OK;
    if (n != g->nconsts)
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %u constants given, the graph uses %u",
                           g->symbol, n, g->nconsts);
    for (uint32_t i = 0; i < n; i++) {
        const rt_json_node *nd = &g->nodes[g->const_nids[i]];
        if (!consts[i] && rt_json_graph_const_deferred(g, i)) continue;
        if (!consts[i] || !rt_json__matches_node(nd, 0, &consts[i]->dl))
            return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': constant '%s' has the wrong dtype or shape",
                               g->symbol, nd->name);
    }
    for (uint32_t i = 0; i < n; i++) g->consts[i] = consts[i] ? rt_tensor_retain(consts[i]) : NULL;
    g->initialized = true;
    return GR_OK;
}

/* ------------------------------------------------------------- prepacked constants ---- */

static void pack_add(rt_json_graph *g, const char *key, const void *data, size_t bytes, rt_tensor *t) {
    rt_json_pack *p = realloc(g->packs, sizeof *p * (g->npacks + 1));
    char *k = strdup(key);
    if (!p || !k) {  /* a pack is an optimization: without memory, the engine makes it again */
        if (p) g->packs = p;
        free(k);
        rt_tensor_release(t);
        return;
    }
    g->packs = p;
    g->packs[g->npacks++] = (rt_json_pack){k, data, bytes, t, -1, NULL};
}

void rt_json_graph_pack_record(rt_json_graph *g, const char *key, const void *data, size_t bytes) {
    if (g->pack_sink) {
        g->pack_sink(g->pack_sink_user, data, bytes);
        data = NULL;
    }
    pack_add(g, key, data, bytes, NULL);
}

bool rt_json_graph_pack_streamed(const rt_json_graph *g) { return g->pack_sink != NULL; }
bool rt_json_graph_will_run(const rt_json_graph *g) { return !g->pack_sink && !g->checking; }

void rt_json_graph_pack_invertible(rt_json_graph *g, uint32_t c, const char *layout) {
    if (!g->npacks || c >= g->nconsts) return;
    for (uint32_t i = 0; i + 1 < g->npacks; i++)
        if (g->packs[i].plain == (int32_t)c) return; /* one form to undo is enough */
    rt_json_pack *p = &g->packs[g->npacks - 1];
    if ((p->layout = strdup(layout))) p->plain = (int32_t)c;
}

static bool *deferred_flags(rt_json_graph *g) {
    if (!g->deferred && g->nconsts) g->deferred = calloc(g->nconsts, sizeof(bool));
    return g->deferred;
}

void rt_json_graph_defer_const(rt_json_graph *g, uint32_t c) {
    bool has = false;
    for (uint32_t i = 0; i < g->npacks; i++) has |= g->packs[i].plain == (int32_t)c;
    if (has && c < g->nconsts && deferred_flags(g)) g->deferred[c] = true;
}

bool rt_json_graph_const_deferred(const rt_json_graph *g, uint32_t c) {
    return g->deferred && c < g->nconsts && g->deferred[c];
}

const char *rt_json_graph_deferred_pack(const rt_json_graph *g, uint32_t c, const void **data, size_t *bytes,
                                        const char **layout) {
    if (!rt_json_graph_const_deferred(g, c) || g->consts[c]) return NULL;
    for (uint32_t k = 0; k < g->npacks; k++)
        if (g->packs[k].plain == (int32_t)c && g->packs[k].t) {
            *data = g->packs[k].data;
            *bytes = g->packs[k].bytes;
            *layout = g->packs[k].layout;
            return g->packs[k].key;
        }
    return NULL;
}

void rt_json_graph_set_plain(rt_json_graph *g, uint32_t c, rt_tensor *t, bool drop_pack) {
    if (c >= g->nconsts || g->consts[c]) {
        rt_tensor_release(t);
        return;
    }
    g->consts[c] = t;
    g->nrecovered++;
    for (uint32_t k = 0; k < g->npacks && drop_pack; k++)
        if (g->packs[k].plain == (int32_t)c && g->packs[k].t) {
            rt_tensor_release(g->packs[k].t);
            g->packs[k].t = NULL;
            g->packs[k].data = NULL;
        }
}

/* The entries a stream left (no data): a new stream records them again. */
static void pack_drop_streamed(rt_json_graph *g) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < g->npacks; i++) {
        if (!g->packs[i].data && !g->packs[i].t) {
            free(g->packs[i].key);
            free(g->packs[i].layout);
        } else {
            g->packs[k++] = g->packs[i];
        }
    }
    g->npacks = k;
    if (g->deferred) memset(g->deferred, 0, g->nconsts * sizeof(bool));
}

void rt_json_graph_pack_provide(rt_json_graph *g, const char *key, rt_tensor *t) {
    pack_add(g, key, rt_tensor_data(t), rt_tensor_nbytes(t), rt_tensor_retain(t));
    g->nprovided++;
}

const void *rt_json_graph_pack_find(rt_json_graph *g, const char *key, size_t bytes) {
    for (uint32_t i = 0; i < g->npacks; i++)
        if (g->packs[i].t && g->packs[i].bytes == bytes && strcmp(g->packs[i].key, key) == 0) {
            g->nused++;
            return g->packs[i].data;
        }
    if (g->nprovided) g->nremade++;
    return NULL;
}

const char *rt_json_graph_pack_at(const rt_json_graph *g, uint32_t i, const void **data, size_t *bytes) {
    if (i >= g->npacks) return NULL;
    if (data) *data = g->packs[i].data;
    if (bytes) *bytes = g->packs[i].bytes;
    return g->packs[i].key;
}

void rt_json_graph_pack_counts(const rt_json_graph *g, uint32_t *provided, uint32_t *used, uint32_t *remade) {
    if (provided) *provided = g->nprovided;
    if (used) *used = g->nused;
    if (remade) *remade = g->nremade;
}

uint32_t rt_json_graph_pack_recovered(const rt_json_graph *g) { return g->nrecovered; }

void rt_json_graph_pack_name(const rt_json_graph *g, uint32_t i, char *buf, size_t n) {
    snprintf(buf, n, "%s_pack_%u", g->symbol, i);
}

void rt_json_graph_set_consts_disposable(rt_json_graph *g) { g->consts_disposable = !g->symbolic && !g->root; }

bool rt_json_graph_consts_disposable(const rt_json_graph *g) { return g->consts_disposable; }

size_t rt_json_graph_release_const(rt_json_graph *g, uint32_t i) {
    if (!g->consts_disposable || i >= g->nconsts || !g->consts[i]) return 0;
    size_t nb = rt_tensor_nbytes(g->consts[i]);
    rt_tensor_release(g->consts[i]);
    g->consts[i] = NULL;
    return nb;
}

size_t rt_json_graph_const_bytes(const rt_json_graph *g) {
    size_t nb = 0;
    for (uint32_t i = 0; i < g->nconsts && g->consts; i++)
        if (g->consts[i]) nb += rt_tensor_nbytes(g->consts[i]);
    return nb;
}

/* --------------------------------------------------------------------------- module ---- */

/* A symbolic graph specialized to one call's shapes, and the engine's state for it. */
typedef struct jm_spec {
    struct jm_spec *next;
    int64_t *key;                 /* ndim and dims of every argument */
    uint32_t nkey;
    rt_json_graph *g;
    void *state;
    uint32_t refs;                /* calls running on it */
    bool evicted;
    uint64_t used;
} jm_spec;

/* Specializations kept per symbolic graph (least recently used go first), as ONNX Runtime's
 * DNNL EP bounds its per-shape primitive cache. */
#define JM_SPEC_CACHE 8

typedef struct json_mod {
    const rt_json_engine *eng;
    void *opts;                   /* the engine's options (eng->opts_size bytes), NULL: defaults */
    uint32_t n;
    rt_json_graph **graphs;
    void **states;
    bool *prepared;
    rt_json_prepare_fn prep_fn;   /* rt_json_module_set_prepare_observer */
    void *prep_user;
    jm_spec **specs;              /* per graph: its specializations */
    uint32_t *nspecs;
    uint64_t tick;
    pthread_mutex_t lock;
} json_mod;

static uint64_t jm_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static gr_status jm_prepare(json_mod *jm, rt_json_graph *g, void **state, gr_diag *d) {
    uint64_t t0 = jm_now_ns();
    gr_status st = jm->eng->prepare(g, jm->opts, state, d);
    if (jm->prep_fn && !st) jm->prep_fn(g->symbol, jm->eng->kind, jm_now_ns() - t0, jm->prep_user);
    return st;
}

static void spec_free(json_mod *jm, jm_spec *s) {
    if (s->state && jm->eng->release) jm->eng->release(s->g, s->state);
    rt_json_graph_free(s->g);
    free(s->key);
    free(s);
}

/* Under jm->lock. */
static void spec_unref(json_mod *jm, jm_spec *s) {
    if (--s->refs == 0 && s->evicted) spec_free(jm, s);
}

static gr_status jm_call_symbolic(json_mod *jm, uint32_t i, DLTensor *const *args, uint32_t nin, uint32_t nout,
                                  gr_diag *d) {
    rt_json_graph *g = jm->graphs[i];
    uint32_t nkey = 0;
    for (uint32_t a = 0; a < nin + nout; a++) nkey += 1 + (uint32_t)(args[a] ? args[a]->ndim : 0);
    int64_t *key = calloc(nkey + 1, sizeof(int64_t));
    if (!key) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    nkey = 0;
    for (uint32_t a = 0; a < nin + nout; a++) {
        key[nkey++] = args[a] ? args[a]->ndim : -1;
        for (int32_t k = 0; args[a] && k < args[a]->ndim; k++) key[nkey++] = args[a]->shape[k];
    }
    pthread_mutex_lock(&jm->lock);
    jm_spec *sp = NULL;
    for (jm_spec *c = jm->specs[i]; c && !sp; c = c->next)
        if (c->nkey == nkey && !memcmp(c->key, key, sizeof(int64_t) * nkey)) sp = c;
    if (sp) {
        sp->refs++;
        sp->used = ++jm->tick;
    }
    pthread_mutex_unlock(&jm->lock);
    gr_status st = GR_OK;
    if (!sp) {
        rt_json_graph *cg = NULL;
        void *state = NULL;
        st = rt_json_graph_specialize(g, args, nin, nout, &cg, d);
        if (!st) {
            st = jm_prepare(jm, cg, &state, d);
            if (st) rt_json_graph_free(cg);
        }
        if (st) {
            free(key);
            return st;
        }
        sp = calloc(1, sizeof *sp);
        sp->key = key;
        sp->nkey = nkey;
        key = NULL;
        sp->g = cg;
        sp->state = state;
        sp->refs = 1;
        pthread_mutex_lock(&jm->lock);
        sp->used = ++jm->tick;
        sp->next = jm->specs[i];
        jm->specs[i] = sp;
        if (++jm->nspecs[i] > JM_SPEC_CACHE) {
            jm_spec **lru = NULL;
            for (jm_spec **c = &jm->specs[i]; *c; c = &(*c)->next)
                if (*c != sp && (!lru || (*c)->used < (*lru)->used)) lru = c;
            jm_spec *e = *lru;
            *lru = e->next;
            jm->nspecs[i]--;
            e->evicted = true;
            e->refs++;
            spec_unref(jm, e);
        }
        pthread_mutex_unlock(&jm->lock);
    }
    free(key);
    st = jm->eng->run(sp->g, sp->state, args, nin, nout, d);
    pthread_mutex_lock(&jm->lock);
    spec_unref(jm, sp);
    pthread_mutex_unlock(&jm->lock);
    return st;
}

static int jm_find(json_mod *jm, const char *symbol) {
    for (uint32_t i = 0; i < jm->n; i++)
        if (strcmp(jm->graphs[i]->symbol, symbol) == 0) return (int)i;
    return -1;
}

/* Prepares static graph i once (under jm->lock). The module owns the graph and never prepares
 * it again, so its engine may drop the constants it made its own copies of. */
static gr_status jm_prepare_static(json_mod *jm, uint32_t i, gr_diag *d) {
    if (jm->prepared[i]) return GR_OK;
    rt_json_graph_set_consts_disposable(jm->graphs[i]);
    gr_status st = jm_prepare(jm, jm->graphs[i], &jm->states[i], d);
    jm->prepared[i] = st == GR_OK;
    return st;
}

static gr_status jm_call(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin, uint32_t nout,
                         gr_diag *d) {
    json_mod *jm = m->context;
    int i = jm_find(jm, symbol);
    if (i < 0) return gr_diag_set(d, GR_ERR_NOT_FOUND, "json runtime: no function '%s'", symbol);
    rt_json_graph *g = jm->graphs[i];
    if (!g->initialized)
        return gr_diag_set(d, GR_ERR_RUNTIME, "json runtime '%s': called before its constants were initialized", symbol);
    if (g->symbolic) return jm_call_symbolic(jm, (uint32_t)i, args, nin, nout, d);
    gr_status st = GR_OK;
    pthread_mutex_lock(&jm->lock);
    st = jm_prepare_static(jm, (uint32_t)i, d);
    pthread_mutex_unlock(&jm->lock);
    if (st) return st;
    return jm->eng->run(g, jm->states[i], args, nin, nout, d);
}

static int jm_has(rt_module *m, const char *symbol) { return jm_find(m->context, symbol) >= 0; }

static gr_status jm_serialize(rt_module *m, uint8_t **buf, size_t *len, gr_diag *d) {
    json_mod *jm = m->context;
    json_t *root = json_object(), *gs = json_array();
    json_object_set_new(root, "kind", json_string(jm->eng->kind));
    if (jm->eng->version) json_object_set_new(root, "engine_version", json_string(jm->eng->version));
    for (uint32_t i = 0; i < jm->n; i++) {
        gr_status st = jm->prepared[i] && jm->eng->record_packs ? jm->eng->record_packs(jm->graphs[i], jm->states[i], d)
                                                                 : GR_OK;
        if (st) {
            json_decref(root);
            return st;
        }
        json_t *o = json_object(), *cs = json_array();
        json_object_set_new(o, "symbol", json_string(jm->graphs[i]->symbol));
        const char *text = rt_json_graph_text(jm->graphs[i]);
        if (!text) {
            json_decref(root);
            return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: cannot serialize");
        }
        json_object_set_new(o, "graph", json_string(text));
        for (uint32_t c = 0; c < jm->graphs[i]->nconsts; c++)
            json_array_append_new(cs, json_string(rt_json_graph_const_name(jm->graphs[i], c)));
        json_object_set_new(o, "consts", cs);
        json_t *ps = json_array();
        for (uint32_t k = 0; k < jm->graphs[i]->npacks; k++) {
            char name[512];
            rt_json_graph_pack_name(jm->graphs[i], k, name, sizeof name);
            const rt_json_pack *p = &jm->graphs[i]->packs[k];
            json_t *e = json_pack("{s:s, s:s}", "key", p->key, "const", name);
            /* the constant is stored only as this pack: the loader lays it out plain from it if needed */
            if (p->plain >= 0 && rt_json_graph_const_deferred(jm->graphs[i], (uint32_t)p->plain)) {
                json_object_set_new(e, "plain", json_integer(p->plain));
                json_object_set_new(e, "layout", json_string(p->layout));
            }
            json_array_append_new(ps, e);
        }
        json_object_set_new(o, "packs", ps);
        json_array_append_new(gs, o);
    }
    json_object_set_new(root, "graphs", gs);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!s) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: cannot serialize");
    *buf = (uint8_t *)s;
    *len = strlen(s);
    return GR_OK;
}

static void jm_destroy(rt_module *m) {
    json_mod *jm = m->context;
    for (uint32_t i = 0; i < jm->n; i++) {
        if (jm->prepared[i] && jm->eng->release) jm->eng->release(jm->graphs[i], jm->states[i]);
        for (jm_spec *c = jm->specs[i], *nx; c; c = nx) {
            nx = c->next;
            spec_free(jm, c);
        }
        rt_json_graph_free(jm->graphs[i]);
    }
    free(jm->specs);
    free(jm->nspecs);
    pthread_mutex_destroy(&jm->lock);
    free(jm->opts);
    free(jm->graphs);
    free(jm->states);
    free(jm->prepared);
    free(jm);
}

static void jm_set_profiler(rt_module *m, rt_prim_profile_fn fn, void *user) {
    json_mod *jm = m->context;
    for (uint32_t i = 0; i < jm->n; i++) rt_json_graph_set_profiler(jm->graphs[i], fn, user);
}

static const rt_module_i JSON_MODULE_I = {RT_MODULE_API_VERSION, "json",     jm_call,        jm_has,
                                          jm_serialize,          jm_destroy, jm_set_profiler};

rt_module *rt_json_module_new(const char *name, const rt_json_engine *eng, const void *opts,
                              rt_json_graph *const *graphs, uint32_t n) {
    json_mod *jm = calloc(1, sizeof(*jm));
    jm->eng = eng ? eng : &rt_json_reference_engine;
    if (opts && jm->eng->opts_size) {
        jm->opts = gr_xcalloc(1, jm->eng->opts_size);
        memcpy(jm->opts, opts, jm->eng->opts_size);
    }
    jm->n = n;
    jm->graphs = calloc(n + 1, sizeof(*jm->graphs));
    jm->states = calloc(n + 1, sizeof(void *));
    jm->prepared = calloc(n + 1, sizeof(bool));
    jm->specs = calloc(n + 1, sizeof(jm_spec *));
    jm->nspecs = calloc(n + 1, sizeof(uint32_t));
    memcpy(jm->graphs, graphs, sizeof(*graphs) * n);
    pthread_mutex_init(&jm->lock, NULL);
    return rt_module_new(&JSON_MODULE_I, jm, name);
}

bool rt_json_module_set_prepare_observer(rt_module *m, rt_json_prepare_fn fn, void *user) {
    if (!m || m->iface != &JSON_MODULE_I) return false;
    json_mod *jm = m->context;
    jm->prep_fn = fn;
    jm->prep_user = user;
    return true;
}

uint32_t rt_json_set_prepare_observers(const struct ir_module *m, rt_json_prepare_fn fn, void *user) {
    uint32_t n = rt_module_count(m), took = 0;
    for (uint32_t i = 0; i < n; i++) took += rt_json_module_set_prepare_observer(rt_module_at(m, i), fn, user);
    return took;
}

void rt_json_graph_set_tap(rt_json_graph *g, rt_json_tap_fn fn, void *user) {
    g->tap = fn;
    g->tap_user = user;
}

rt_json_tap_fn rt_json_graph_tap(const rt_json_graph *g, void **user) {
    if (user) *user = g->tap_user;
    return g->tap;
}

void rt_json_graph_set_profiler(rt_json_graph *g, rt_prim_profile_fn fn, void *user) {
    g->prof = fn;
    g->prof_user = user;
}

rt_prim_profile_fn rt_json_graph_profiler(const rt_json_graph *g, void **user) {
    const rt_json_graph *o = g->root ? g->root : g; /* a specialization reports as its symbolic graph */
    if (user) *user = o->prof_user;
    return o->prof;
}

uint32_t rt_json_module_set_taps(const struct ir_module *m, rt_json_tap_fn fn, void *user) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < rt_module_count(m); k++) {
        rt_json_graph *g;
        for (uint32_t i = 0; (g = rt_json_module_graph(rt_module_at(m, k), i)); i++, n++) rt_json_graph_set_tap(g, fn, user);
    }
    return n;
}

gr_status rt_json_module_prepare(rt_module *m, gr_diag *d) {
    if (!m || m->iface != &JSON_MODULE_I) return GR_OK;
    json_mod *jm = m->context;
    gr_status st = GR_OK;
    pthread_mutex_lock(&jm->lock);
    for (uint32_t i = 0; i < jm->n && !st; i++)
        if (jm->graphs[i]->initialized && !jm->graphs[i]->symbolic) st = jm_prepare_static(jm, i, d);
    pthread_mutex_unlock(&jm->lock);
    return st;
}

/* Prepares each static graph of module m not prepared yet into a state released at once: with
 * fn as its pack sink (recording the packs), or to check it (fn NULL). */
static gr_status jm_prepare_unrun(rt_module *m, rt_json_pack_sink fn, void *user, gr_diag *d) {
    if (!m || m->iface != &JSON_MODULE_I) return GR_OK;
    json_mod *jm = m->context;
    gr_status st = GR_OK;
    pthread_mutex_lock(&jm->lock);
    for (uint32_t i = 0; i < jm->n && !st; i++) {
        rt_json_graph *g = jm->graphs[i];
        if (jm->prepared[i] || !g->initialized || g->symbolic) continue;
        void *state = NULL;
        if (fn) pack_drop_streamed(g);
        g->pack_sink = fn;
        g->pack_sink_user = user;
        g->checking = !fn;
        st = jm_prepare(jm, g, &state, d);
        if (!st && fn && jm->eng->record_packs) st = jm->eng->record_packs(g, state, d);
        if (state && jm->eng->release) jm->eng->release(g, state);
        g->pack_sink = NULL;
        g->pack_sink_user = NULL;
        g->checking = false;
    }
    pthread_mutex_unlock(&jm->lock);
    return st;
}

gr_status rt_json_module_stream_packs(rt_module *m, rt_json_pack_sink fn, void *user, gr_diag *d) {
    return jm_prepare_unrun(m, fn, user, d);
}

gr_status rt_json_module_check(rt_module *m, gr_diag *d) { return jm_prepare_unrun(m, NULL, NULL, d); }

bool rt_json_module_engine(rt_module *m, const char **kind, const char **version) {
    if (!m || m->iface != &JSON_MODULE_I) return false;
    const json_mod *jm = m->context;
    *kind = jm->eng->kind;
    *version = jm->eng->version;
    return true;
}

void *rt_json_module_state(rt_module *m, uint32_t i) {
    if (!m || m->iface != &JSON_MODULE_I) return NULL;
    json_mod *jm = m->context;
    return i < jm->n && jm->prepared[i] ? jm->states[i] : NULL;
}

rt_json_graph *rt_json_module_graph(rt_module *m, uint32_t i) {
    if (!m || m->iface != &JSON_MODULE_I) return NULL;
    json_mod *jm = m->context;
    return i < jm->n ? jm->graphs[i] : NULL;
}

gr_status rt_json_module_load(const uint8_t *buf, size_t len, const rt_json_engine *eng, const void *opts,
                              rt_tensor *(*consts)(const char *name, void *user), void *user,
                              rt_module **out, gr_diag *d) {
    *out = NULL;
    json_error_t err;
    json_t *root = json_loadb((const char *)buf, len, 0, &err);
    if (!root) return gr_diag_set(d, GR_ERR_INVALID, "json runtime module: %s", err.text);
    json_t *gs = json_object_get(root, "graphs");
    gr_status st = json_is_array(gs) ? GR_OK : gr_diag_set(d, GR_ERR_INVALID, "json runtime module: no graphs");
    uint32_t n = st ? 0 : (uint32_t)json_array_size(gs), made = 0;
    rt_json_graph **graphs = calloc(n + 1, sizeof(*graphs));
    for (uint32_t i = 0; i < n && !st; i++) {
        json_t *o = json_array_get(gs, i);
        json_t *sym = json_object_get(o, "symbol"), *text = json_object_get(o, "graph");
        if (!json_is_string(sym) || !json_is_string(text)) {
            st = gr_diag_set(d, GR_ERR_INVALID, "json runtime module: graph %u without symbol/graph", i);
            break;
        }
        st = rt_json_graph_load(json_string_value(sym), json_string_value(text), json_string_length(text), &graphs[i], d);
        if (st) break;
        made++;
        uint32_t nc = rt_json_graph_num_consts(graphs[i]);
        json_t *pks = json_object_get(o, "packs");
        size_t k;
        json_t *pk;
        /* constants stored only as a pack ("plain": its index): unless given plain all the same,
         * the engine lays them out plain from the pack if it needs them
         * (rt_json_graph_deferred_pack) */
        json_array_foreach(pks, k, pk) {
            json_t *pl = json_object_get(pk, "plain");
            if (!pl) continue;
            if (!(eng && eng->deferred_consts)) {
                st = gr_diag_set(d, GR_ERR_INVALID, "json runtime module: graph '%s' has constants stored only prepacked, "
                                 "which engine '%s' does not take", graphs[i]->symbol, eng ? eng->kind : "json");
                break;
            }
            if (!json_is_integer(pl) || json_integer_value(pl) < 0 || json_integer_value(pl) >= (json_int_t)nc ||
                !json_is_string(json_object_get(pk, "layout")) || !deferred_flags(graphs[i])) {
                st = gr_diag_set(d, GR_ERR_INVALID, "json runtime module: graph '%s': pack %zu names no constant to lay out",
                                 graphs[i]->symbol, k);
                break;
            }
            graphs[i]->deferred[json_integer_value(pl)] = true;
        }
        rt_tensor **ts = calloc(nc + 1, sizeof(*ts));
        for (uint32_t c = 0; c < nc && !st; c++) {
            ts[c] = consts ? consts(rt_json_graph_const_name(graphs[i], c), user) : NULL;
            if (ts[c] && rt_json_graph_const_deferred(graphs[i], c)) graphs[i]->deferred[c] = false; /* given plain */
            if (!ts[c] && !rt_json_graph_const_deferred(graphs[i], c))
                st = gr_diag_set(d, GR_ERR_NOT_FOUND, "json runtime module: constant '%s' not provided",
                                 rt_json_graph_const_name(graphs[i], c));
        }
        if (!st) st = rt_json_graph_init(graphs[i], ts, nc, d);
        free(ts);
        json_array_foreach(pks, k, pk) {
            const char *key = json_string_value(json_object_get(pk, "key"));
            const char *cn = json_string_value(json_object_get(pk, "const"));
            json_t *pl = json_object_get(pk, "plain");
            if (pl && !rt_json_graph_const_deferred(graphs[i], (uint32_t)json_integer_value(pl))) pl = NULL;
            rt_tensor *t = key && cn && consts && !st ? consts(cn, user) : NULL;
            if (!t && pl && !st)
                st = gr_diag_set(d, GR_ERR_NOT_FOUND, "json runtime module: graph '%s': pack '%s' not provided",
                                 graphs[i]->symbol, cn ? cn : "");
            if (!t) continue;
            rt_json_graph_pack_provide(graphs[i], key, t);
            rt_json_pack *p = graphs[i]->npacks ? &graphs[i]->packs[graphs[i]->npacks - 1] : NULL;
            if (pl && (!p || p->t != t || !(p->layout = strdup(json_string_value(json_object_get(pk, "layout"))))))
                st = gr_diag_set(d, GR_ERR_NOMEM, "json runtime module: out of memory");
            else if (pl)
                p->plain = (int32_t)json_integer_value(pl);
        }
    }
    json_decref(root);
    if (st) {
        for (uint32_t i = 0; i < made; i++) rt_json_graph_free(graphs[i]);
        free(graphs);
        return st;
    }
    *out = rt_json_module_new("json", eng, opts, graphs, n);
    free(graphs);
    return GR_OK;
}
