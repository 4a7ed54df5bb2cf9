/* The JSON runtime base and its reference engine (see json_runtime.h). */
#include "runtime/json_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels.h"
#include "runtime/value.h"

struct rt_json_graph {
    char *symbol;
    char *text;
    json_t *doc;
    uint32_t nnodes;
    rt_json_node *nodes;
    uint32_t *row_ptr;            /* nnodes + 1 */
    uint32_t ninputs;
    uint32_t *input_nids;
    uint32_t nheads;
    rt_json_entry *heads;
    uint32_t nconsts;
    uint32_t *const_nids;
    rt_tensor **consts;
    bool initialized;
    uint32_t *consumers;          /* per entry: kernel uses + heads */
};

/* ------------------------------------------------------------------------- loading ---- */

static gr_status bad(gr_diag *d, const char *sym, const char *what) {
    return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': malformed graph: %s", sym, what);
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
        return bad(d, g->symbol, "node without shape/dtype per output");
    n->dtypes = calloc(n->noutputs ? n->noutputs : 1, sizeof(DLDataType));
    n->ndims = calloc(n->noutputs ? n->noutputs : 1, sizeof(int32_t));
    n->shapes = calloc(n->noutputs ? n->noutputs : 1, sizeof(*n->shapes));
    if (!n->dtypes || !n->ndims || !n->shapes) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    for (uint32_t o = 0; o < n->noutputs; o++) {
        json_t *s = json_array_get(shape, o), *t = json_array_get(dtype, o);
        if (!json_is_array(s) || json_array_size(s) > RT_MAX_NDIM || !json_is_string(t) ||
            !ir_dtype_parse(json_string_value(t), &n->dtypes[o]))
            return bad(d, g->symbol, "bad shape or dtype");
        n->ndims[o] = (int32_t)json_array_size(s);
        for (int32_t k = 0; k < n->ndims[o]; k++) {
            json_t *v = json_array_get(s, (size_t)k);
            if (!json_is_integer(v) || json_integer_value(v) < 0) return bad(d, g->symbol, "shape dims must be static");
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
    return rt_json_graph_load_doc(symbol, doc, out, d);
}

gr_status rt_json_graph_load_doc(const char *symbol, json_t *doc, rt_json_graph **out, gr_diag *d) {
    *out = NULL;
    rt_json_graph *g = calloc(1, sizeof(*g));
    if (!g) {
        json_decref(doc);
        return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    }
    g->symbol = strdup(symbol);
    g->doc = doc;
    gr_status st = GR_OK;
    json_t *nodes = json_object_get(doc, "nodes"), *heads = json_object_get(doc, "heads");
    json_t *rows = json_object_get(doc, "node_row_ptr"), *argn = json_object_get(doc, "arg_nodes");
    if (!json_is_array(nodes) || !json_is_array(heads) || !json_is_array(rows) || !json_is_array(argn) ||
        json_array_size(rows) != json_array_size(nodes) + 1) {
        st = bad(d, symbol, "missing nodes / heads / node_row_ptr / arg_nodes");
        goto fail;
    }
    g->nnodes = (uint32_t)json_array_size(nodes);
    g->nodes = calloc(g->nnodes + 1, sizeof(rt_json_node));
    g->row_ptr = calloc(g->nnodes + 1, sizeof(uint32_t));
    g->input_nids = calloc(g->nnodes + 1, sizeof(uint32_t));
    g->const_nids = calloc(g->nnodes + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i <= g->nnodes; i++) {
        json_t *r = json_array_get(rows, i);
        if (!json_is_integer(r) || json_integer_value(r) < 0 ||
            (i && json_integer_value(r) < (json_int_t)g->row_ptr[i - 1])) {
            st = bad(d, symbol, "node_row_ptr");
            goto fail;
        }
        g->row_ptr[i] = (uint32_t)json_integer_value(r);
    }
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        json_t *jn = json_array_get(nodes, i);
        rt_json_node *n = &g->nodes[i];
        json_t *op = json_object_get(jn, "op"), *name = json_object_get(jn, "name");
        if (!json_is_string(op) || !json_is_string(name)) {
            st = bad(d, symbol, "node without op/name");
            break;
        }
        const char *ops = json_string_value(op);
        n->kind = strcmp(ops, "input") == 0 ? RT_JSON_INPUT : strcmp(ops, "const") == 0 ? RT_JSON_CONST : RT_JSON_KERNEL;
        if (n->kind == RT_JSON_KERNEL && strcmp(ops, "kernel") != 0) {
            st = bad(d, symbol, "unknown node op");
            break;
        }
        n->name = json_string_value(name);
        n->attrs = json_object_get(jn, "attrs");
        n->noutputs = g->row_ptr[i + 1] - g->row_ptr[i];
        json_t *ins = json_object_get(jn, "inputs");
        n->ninputs = json_is_array(ins) ? (uint32_t)json_array_size(ins) : 0;
        n->inputs = calloc(n->ninputs + 1, sizeof(rt_json_entry));
        for (uint32_t k = 0; k < n->ninputs; k++) {
            if (!read_entry(json_array_get(ins, k), &n->inputs[k]) || n->inputs[k].nid >= i ||
                n->inputs[k].index >= g->nodes[n->inputs[k].nid].noutputs) {
                st = bad(d, symbol, "node input refers to a later node or a missing output");
                break;
            }
        }
        if (!st && !json_is_object(n->attrs)) st = bad(d, symbol, "node without attrs");
        if (!st) st = read_node_types(g, n, d);
        if (!st && n->kind == RT_JSON_INPUT) g->input_nids[g->ninputs++] = i;
        if (!st && n->kind == RT_JSON_CONST) g->const_nids[g->nconsts++] = i;
    }
    if (st) goto fail;
    g->nheads = (uint32_t)json_array_size(heads);
    g->heads = calloc(g->nheads + 1, sizeof(rt_json_entry));
    for (uint32_t h = 0; h < g->nheads; h++)
        if (!read_entry(json_array_get(heads, h), &g->heads[h]) || g->heads[h].nid >= g->nnodes ||
            g->heads[h].index >= g->nodes[g->heads[h].nid].noutputs) {
            st = bad(d, symbol, "heads");
            goto fail;
        }
    g->consts = calloc(g->nconsts + 1, sizeof(rt_tensor *));
    g->consumers = calloc(g->row_ptr[g->nnodes] + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < g->nnodes; i++)
        for (uint32_t k = 0; k < g->nodes[i].ninputs; k++) g->consumers[rt_json_graph_entry_id(g, g->nodes[i].inputs[k])]++;
    for (uint32_t h = 0; h < g->nheads; h++) g->consumers[rt_json_graph_entry_id(g, g->heads[h])]++;
    *out = g;
    return GR_OK;
fail:
    rt_json_graph_free(g);
    return st;
}

void rt_json_graph_free(rt_json_graph *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->nnodes && g->nodes; i++) {
        free(g->nodes[i].inputs);
        free(g->nodes[i].dtypes);
        free(g->nodes[i].ndims);
        free(g->nodes[i].shapes);
    }
    for (uint32_t i = 0; i < g->nconsts && g->consts; i++) rt_tensor_release(g->consts[i]);
    free(g->consts);
    free(g->consumers);
    free(g->nodes);
    free(g->row_ptr);
    free(g->input_nids);
    free(g->const_nids);
    free(g->heads);
    json_decref(g->doc);
    free(g->text);
    free(g->symbol);
    free(g);
}

const char *rt_json_graph_symbol(const rt_json_graph *g) { return g->symbol; }
const char *rt_json_graph_text(rt_json_graph *g) {
    if (!g->text) g->text = json_dumps(g->doc, JSON_COMPACT);  /* made on demand (serialization) */
    return g->text;
}
uint32_t rt_json_graph_num_nodes(const rt_json_graph *g) { return g->nnodes; }
rt_json_node *rt_json_graph_node(rt_json_graph *g, uint32_t nid) { return nid < g->nnodes ? &g->nodes[nid] : NULL; }
uint32_t rt_json_graph_num_inputs(const rt_json_graph *g) { return g->ninputs; }
uint32_t rt_json_graph_input_nid(const rt_json_graph *g, uint32_t i) { return g->input_nids[i]; }
uint32_t rt_json_graph_num_heads(const rt_json_graph *g) { return g->nheads; }
rt_json_entry rt_json_graph_head(const rt_json_graph *g, uint32_t i) { return g->heads[i]; }
uint32_t rt_json_graph_entry_id(const rt_json_graph *g, rt_json_entry e) { return g->row_ptr[e.nid] + e.index; }
uint32_t rt_json_graph_num_entries(const rt_json_graph *g) { return g->row_ptr[g->nnodes]; }
uint32_t rt_json_graph_num_consts(const rt_json_graph *g) { return g->nconsts; }
const char *rt_json_graph_const_name(const rt_json_graph *g, uint32_t i) { return g->nodes[g->const_nids[i]].name; }
bool rt_json_graph_initialized(const rt_json_graph *g) { return g->initialized; }
rt_tensor *rt_json_graph_const(const rt_json_graph *g, uint32_t i) { return i < g->nconsts ? g->consts[i] : NULL; }

static bool matches_node(const rt_json_node *n, uint32_t o, const DLTensor *t) {
    if (t->dtype.code != n->dtypes[o].code || t->dtype.bits != n->dtypes[o].bits || t->ndim != n->ndims[o]) return false;
    for (int32_t k = 0; k < t->ndim; k++)
        if (t->shape[k] != n->shapes[o][k]) return false;
    return true;
}

gr_status rt_json_graph_init(rt_json_graph *g, rt_tensor *const *consts, uint32_t n, gr_diag *d) {
    if (g->initialized) return GR_OK;
    if (n != g->nconsts)
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %u constants given, the graph uses %u",
                           g->symbol, n, g->nconsts);
    for (uint32_t i = 0; i < n; i++) {
        const rt_json_node *nd = &g->nodes[g->const_nids[i]];
        if (!consts[i] || !matches_node(nd, 0, &consts[i]->dl))
            return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': constant '%s' has the wrong dtype or shape",
                               g->symbol, nd->name);
    }
    for (uint32_t i = 0; i < n; i++) g->consts[i] = rt_tensor_retain(consts[i]);
    g->initialized = true;
    return GR_OK;
}

/* -------------------------------------------------------------- reference engine ---- */

typedef enum ref_arg_kind { RA_IN, RA_SHAPE, RA_INT, RA_FLOAT, RA_STR, RA_TUPLE, RA_NONE } ref_arg_kind;

typedef struct ref_arg ref_arg;
struct ref_arg {
    ref_arg_kind kind;
    uint32_t in;
    int32_t n;
    int64_t dims[RT_MAX_NDIM];
    int64_t i;
    double f;
    const char *s;
    ref_arg *items;
};

typedef struct ref_node {
    const ir_op_def *def;
    const ir_attrs *attrs;
    uint32_t nargs;
    ref_arg *args;
} ref_node;

typedef struct ref_state {
    ir_ctx_t *ctx;                /* attrs and strings */
    ref_node *nodes;
    uint32_t nnodes;
} ref_state;

static bool decode_attr(ir_ctx_t *ctx, json_t *v, uint8_t want, ir_attr *out) {
    if (json_is_null(v)) *out = ir_attr_none();
    else if (json_is_boolean(v)) *out = ir_attr_bool(json_is_true(v));
    else if (json_is_integer(v)) *out = want == IR_ATTR_FLOAT ? ir_attr_float((double)json_integer_value(v)) : ir_attr_int(json_integer_value(v));
    else if (json_is_real(v)) *out = ir_attr_float(json_real_value(v));
    else if (json_is_string(v)) {
        ir_dtype t;
        if (want == IR_ATTR_DTYPE && ir_dtype_parse(json_string_value(v), &t)) *out = ir_attr_dtype(t);
        else *out = ir_attr_str(ctx, json_string_value(v));
    } else if (json_is_array(v)) {
        size_t n = json_array_size(v);
        ir_attr *items = ir_alloc(ctx, sizeof(ir_attr) * (n ? n : 1));
        for (size_t k = 0; k < n; k++)
            if (!decode_attr(ctx, json_array_get(v, k), IR_ATTR_NONE, &items[k])) return false;
        *out = ir_attr_array(ctx, (uint32_t)n, items);
    } else {
        return false;
    }
    return true;
}

static bool decode_arg(ir_ctx_t *ctx, json_t *a, uint32_t ninputs, ref_arg *out) {
    json_t *v;
    memset(out, 0, sizeof(*out));
    if ((v = json_object_get(a, "in"))) {
        out->kind = RA_IN;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= ninputs) return false;
        out->in = (uint32_t)json_integer_value(v);
    } else if ((v = json_object_get(a, "shape"))) {
        out->kind = RA_SHAPE;
        if (!json_is_array(v) || json_array_size(v) > RT_MAX_NDIM) return false;
        out->n = (int32_t)json_array_size(v);
        for (int32_t k = 0; k < out->n; k++) {
            json_t *x = json_array_get(v, (size_t)k);
            if (!json_is_integer(x)) return false;
            out->dims[k] = json_integer_value(x);
        }
    } else if ((v = json_object_get(a, "int"))) {
        out->kind = RA_INT;
        if (!json_is_integer(v)) return false;
        out->i = json_integer_value(v);
    } else if ((v = json_object_get(a, "float"))) {
        out->kind = RA_FLOAT;
        if (!json_is_number(v)) return false;
        out->f = json_number_value(v);
    } else if ((v = json_object_get(a, "str"))) {
        out->kind = RA_STR;
        if (!json_is_string(v)) return false;
        out->s = ir_intern(ctx, json_string_value(v));
    } else if ((v = json_object_get(a, "tuple"))) {
        out->kind = RA_TUPLE;
        if (!json_is_array(v)) return false;
        out->n = (int32_t)json_array_size(v);
        out->items = ir_alloc(ctx, sizeof(ref_arg) * (size_t)(out->n ? out->n : 1));
        for (int32_t k = 0; k < out->n; k++)
            if (!decode_arg(ctx, json_array_get(v, (size_t)k), ninputs, &out->items[k])) return false;
    } else if (json_object_get(a, "none")) {
        out->kind = RA_NONE;
    } else {
        return false;
    }
    return true;
}

static void ref_release(rt_json_graph *g, void *state) {
    (void)g;
    ref_state *rs = state;
    if (!rs) return;
    if (rs->ctx) ir_ctx_free(rs->ctx);
    free(rs->nodes);
    free(rs);
}

static gr_status ref_prepare(rt_json_graph *g, void **state, gr_diag *d) {
    ref_state *rs = calloc(1, sizeof(*rs));
    if (!rs) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    rs->ctx = ir_ctx_new();
    rs->nnodes = g->nnodes;
    rs->nodes = calloc(g->nnodes + 1, sizeof(ref_node));
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        rt_json_node *n = &g->nodes[i];
        if (n->kind != RT_JSON_KERNEL) continue;
        ref_node *r = &rs->nodes[i];
        r->def = ir_op_def_find(n->name);
        if (!r->def || !rt_kernel_find(r->def)) {
            st = gr_diag_set(d, GR_ERR_UNSUPPORTED, "json runtime '%s': node %u: no reference kernel for '%s'",
                             g->symbol, i, n->name);
            gr_diag_set_layer(d, n->layer);
            break;
        }
        json_t *oa = json_object_get(n->attrs, "op_attrs");
        const char *key;
        json_t *val;
        GR_VEC(const char *) keys = {0};
        GR_VEC(ir_attr) vals = {0};
        json_object_foreach(oa, key, val) {
            uint8_t want = IR_ATTR_NONE;
            for (uint16_t f = 0; f < r->def->nattrs; f++)
                if (strcmp(r->def->attrs[f].name, key) == 0) want = r->def->attrs[f].kind;
            ir_attr a;
            if (!decode_attr(rs->ctx, val, want, &a)) {
                st = bad(d, g->symbol, "op attribute value");
                break;
            }
            gr_vec_push(&keys, ir_intern(rs->ctx, key));
            gr_vec_push(&vals, a);
        }
        if (!st) {
            const ir_attrs *given = ir_attrs_new(rs->ctx, keys.len, keys.data, vals.data);
            st = ir_op_attrs_normalize(rs->ctx, r->def, given, &r->attrs, d);
            if (st) gr_diag_set_layer(d, n->layer);
        }
        gr_vec_free(&keys);
        gr_vec_free(&vals);
        json_t *args = json_object_get(n->attrs, "args");
        if (!st) {
            if (!json_is_array(args)) {
                st = bad(d, g->symbol, "kernel node without args");
                break;
            }
            r->nargs = (uint32_t)json_array_size(args);
            r->args = ir_alloc(rs->ctx, sizeof(ref_arg) * (r->nargs ? r->nargs : 1));
            for (uint32_t k = 0; k < r->nargs && !st; k++)
                if (!decode_arg(rs->ctx, json_array_get(args, k), n->ninputs, &r->args[k])) st = bad(d, g->symbol, "kernel arg");
        }
    }
    if (st) {
        ref_release(g, rs);
        return st;
    }
    *state = rs;
    return GR_OK;
}

static rt_value make_arg(const ref_arg *a, const rt_json_graph *g, const rt_json_node *n, rt_value *entries) {
    rt_value v = {0};
    switch (a->kind) {
    case RA_IN:
        return rt_value_copy(&entries[rt_json_graph_entry_id(g, n->inputs[a->in])]);
    case RA_SHAPE:
        v.kind = RT_VAL_SHAPE;
        v.u.shape.ndim = a->n;
        memcpy(v.u.shape.dims, a->dims, sizeof(int64_t) * (size_t)a->n);
        return v;
    case RA_INT:
        v.kind = RT_VAL_INT;
        v.u.i = a->i;
        return v;
    case RA_FLOAT:
        v.kind = RT_VAL_FLOAT;
        v.u.f = a->f;
        return v;
    case RA_STR:
        v.kind = RT_VAL_STR;
        v.u.s = a->s;
        return v;
    case RA_TUPLE:
        v = rt_value_tuple((uint32_t)a->n);
        for (int32_t k = 0; k < a->n; k++) v.u.tuple.items[k] = make_arg(&a->items[k], g, n, entries);
        return v;
    default:
        return v;
    }
}

static int64_t dl_numel(const DLTensor *t) {
    int64_t k = 1;
    for (int32_t q = 0; q < t->ndim; q++) k *= t->shape[q];
    return k;
}

static gr_status ref_run(rt_json_graph *g, void *state, DLTensor *const *args, uint32_t nin,
                         uint32_t nout, gr_diag *d) {
    ref_state *rs = state;
    if (nin != g->ninputs || nout != g->nheads)
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': called with %u inputs and %u outputs, expects %u and %u",
                           g->symbol, nin, nout, g->ninputs, g->nheads);
    uint32_t ne = rt_json_graph_num_entries(g);
    rt_value *entries = calloc(ne + 1, sizeof(rt_value));
    uint32_t *left = malloc(sizeof(uint32_t) * (ne + 1));
    if (!entries || !left) {
        free(entries);
        free(left);
        return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    }
    memcpy(left, g->consumers, sizeof(uint32_t) * ne);
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < nin && !st; i++) {
        rt_json_node *n = &g->nodes[g->input_nids[i]];
        const DLTensor *t = args[i];
        if (!matches_node(n, 0, t)) {
            st = gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': input %u ('%s') has the wrong dtype or shape",
                             g->symbol, i, n->name);
            break;
        }
        rt_tensor *w = rt_tensor_wrap(t->dtype, t->ndim, t->shape, (char *)t->data + t->byte_offset);
        if (!w) st = gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
        else entries[g->row_ptr[g->input_nids[i]]] = rt_value_tensor(w);
    }
    for (uint32_t c = 0; c < g->nconsts && !st; c++)
        entries[g->row_ptr[g->const_nids[c]]] = rt_value_tensor(rt_tensor_retain(g->consts[c]));
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        rt_json_node *n = &g->nodes[i];
        if (n->kind != RT_JSON_KERNEL) continue;
        ref_node *r = &rs->nodes[i];
        rt_value *av = calloc(r->nargs + 1, sizeof(rt_value));
        for (uint32_t k = 0; k < r->nargs; k++) av[k] = make_arg(&r->args[k], g, n, entries);
        rt_kernel_call kc = {r->def, r->attrs, av, r->nargs, NULL, NULL};
        rt_value res = {0};
        st = rt_kernel_run(&kc, &res, d);
        for (uint32_t k = 0; k < r->nargs; k++) rt_value_clear(&av[k]);
        free(av);
        if (st) {
            gr_diag_set_layer(d, n->layer);
            break;
        }
        uint32_t row = g->row_ptr[i];
        if (n->noutputs == 1 && res.kind == RT_VAL_TENSOR) {
            entries[row] = res;
        } else if (res.kind == RT_VAL_TUPLE && res.u.tuple.n == n->noutputs) {
            for (uint32_t o = 0; o < n->noutputs; o++) entries[row + o] = rt_value_copy(&res.u.tuple.items[o]);
            rt_value_clear(&res);
        } else {
            rt_value_clear(&res);
            st = gr_diag_set(d, GR_ERR_RUNTIME, "json runtime '%s': node %u (%s) returned an unexpected value",
                             g->symbol, i, n->name);
            gr_diag_set_layer(d, n->layer);
            break;
        }
        for (uint32_t o = 0; o < n->noutputs && !st; o++) {
            const rt_value *ev = &entries[row + o];
            if (ev->kind != RT_VAL_TENSOR || !matches_node(n, o, &ev->u.t->dl)) {
                st = gr_diag_set(d, GR_ERR_RUNTIME, "json runtime '%s': node %u (%s) output %u does not match its declared shape/dtype",
                                 g->symbol, i, n->name, o);
                gr_diag_set_layer(d, n->layer);
            }
        }
        for (uint32_t k = 0; k < n->ninputs; k++) {
            uint32_t e = rt_json_graph_entry_id(g, n->inputs[k]);
            if (left[e] && --left[e] == 0) rt_value_clear(&entries[e]);
        }
    }
    for (uint32_t h = 0; h < g->nheads && !st; h++) {
        const rt_value *ev = &entries[rt_json_graph_entry_id(g, g->heads[h])];
        DLTensor *o = args[nin + h];
        if (ev->kind != RT_VAL_TENSOR || ev->u.t->dl.dtype.code != o->dtype.code || ev->u.t->dl.dtype.bits != o->dtype.bits ||
            rt_tensor_numel(ev->u.t) != dl_numel(o)) {
            st = gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': output %u has the wrong dtype or size", g->symbol, h);
            break;
        }
        memcpy((char *)o->data + o->byte_offset, rt_tensor_data(ev->u.t), rt_tensor_nbytes(ev->u.t));
    }
    for (uint32_t e = 0; e < ne; e++) rt_value_clear(&entries[e]);
    free(entries);
    free(left);
    return st;
}

const rt_json_engine rt_json_reference_engine = {"json", ref_prepare, ref_run, ref_release};

/* --------------------------------------------------------------------------- module ---- */

typedef struct json_mod {
    const rt_json_engine *eng;
    uint32_t n;
    rt_json_graph **graphs;
    void **states;
    bool *prepared;
    pthread_mutex_t lock;
} json_mod;

static int jm_find(json_mod *jm, const char *symbol) {
    for (uint32_t i = 0; i < jm->n; i++)
        if (strcmp(jm->graphs[i]->symbol, symbol) == 0) return (int)i;
    return -1;
}

static gr_status jm_call(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin, uint32_t nout,
                         gr_diag *d) {
    json_mod *jm = m->context;
    int i = jm_find(jm, symbol);
    if (i < 0) return gr_diag_set(d, GR_ERR_NOT_FOUND, "json runtime: no function '%s'", symbol);
    rt_json_graph *g = jm->graphs[i];
    if (!g->initialized)
        return gr_diag_set(d, GR_ERR_RUNTIME, "json runtime '%s': called before its constants were initialized", symbol);
    gr_status st = GR_OK;
    pthread_mutex_lock(&jm->lock);
    if (!jm->prepared[i]) {
        st = jm->eng->prepare(g, &jm->states[i], d);
        jm->prepared[i] = st == GR_OK;
    }
    pthread_mutex_unlock(&jm->lock);
    if (st) return st;
    return jm->eng->run(g, jm->states[i], args, nin, nout, d);
}

static int jm_has(rt_module *m, const char *symbol) { return jm_find(m->context, symbol) >= 0; }

static gr_status jm_serialize(rt_module *m, uint8_t **buf, size_t *len, gr_diag *d) {
    json_mod *jm = m->context;
    json_t *root = json_object(), *gs = json_array();
    json_object_set_new(root, "kind", json_string(jm->eng->kind));
    for (uint32_t i = 0; i < jm->n; i++) {
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
        rt_json_graph_free(jm->graphs[i]);
    }
    pthread_mutex_destroy(&jm->lock);
    free(jm->graphs);
    free(jm->states);
    free(jm->prepared);
    free(jm);
}

static const rt_module_i JSON_MODULE_I = {RT_MODULE_API_VERSION, "json", jm_call, jm_has, jm_serialize, jm_destroy};

rt_module *rt_json_module_new(const char *name, const rt_json_engine *eng, rt_json_graph *const *graphs,
                              uint32_t n) {
    json_mod *jm = calloc(1, sizeof(*jm));
    jm->eng = eng ? eng : &rt_json_reference_engine;
    jm->n = n;
    jm->graphs = calloc(n + 1, sizeof(*jm->graphs));
    jm->states = calloc(n + 1, sizeof(void *));
    jm->prepared = calloc(n + 1, sizeof(bool));
    memcpy(jm->graphs, graphs, sizeof(*graphs) * n);
    pthread_mutex_init(&jm->lock, NULL);
    return rt_module_new(&JSON_MODULE_I, jm, name);
}

gr_status rt_json_module_load(const uint8_t *buf, size_t len, const rt_json_engine *eng,
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
        rt_tensor **ts = calloc(nc + 1, sizeof(*ts));
        for (uint32_t c = 0; c < nc && !st; c++) {
            ts[c] = consts ? consts(rt_json_graph_const_name(graphs[i], c), user) : NULL;
            if (!ts[c]) st = gr_diag_set(d, GR_ERR_NOT_FOUND, "json runtime module: constant '%s' not provided",
                                         rt_json_graph_const_name(graphs[i], c));
        }
        if (!st) st = rt_json_graph_init(graphs[i], ts, nc, d);
        free(ts);
    }
    json_decref(root);
    if (st) {
        for (uint32_t i = 0; i < made; i++) rt_json_graph_free(graphs[i]);
        free(graphs);
        return st;
    }
    *out = rt_json_module_new("json", eng, graphs, n);
    free(graphs);
    return GR_OK;
}
