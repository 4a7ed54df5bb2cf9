/* The JSON runtime's reference engine: every kernel node through the host kernel table
 * (runtime/kernels), in node order, freeing each entry after its last use. */
#include <stdlib.h>
#include <string.h>

#include "runtime/json/json_impl.h"
#include "runtime/kernels/kernels.h"
#include "runtime/value.h"

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

static gr_status ref_prepare(rt_json_graph *g, const void *opts, void **state, gr_diag *d) {
    (void)opts;
    ref_state *rs = calloc(1, sizeof(*rs));
    if (!rs) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    if (!rt_json__graph_doc(g)) {
        free(rs);
        return gr_diag_set(d, GR_ERR_NOMEM, "json runtime '%s': cannot parse the graph", g->symbol);
    }
    gr_status st = rt_json_graph_check(g, d);
    if (st) {
        free(rs);
        return st;
    }
    rs->ctx = ir_ctx_new();
    rs->nnodes = g->nnodes;
    rs->nodes = calloc(g->nnodes + 1, sizeof(ref_node));
    for (uint32_t i = 0; i < g->nnodes && !st; i++) {
        rt_json_node *n = &g->nodes[i];
        if (n->kind != RT_JSON_KERNEL) continue;
        ref_node *r = &rs->nodes[i];
        r->def = ir_op_def_at((uint32_t)n->op);
        if (!r->def || !rt_kernel_find(r->def)) {
            st = gr_diag_set(d, GR_ERR_UNSUPPORTED, "json runtime '%s': node %u: no reference kernel for '%s'",
                             g->symbol, i, n->name);
            gr_diag_set_layer(d, n->layer);
            break;
        }
        st = rt_json__op_attrs(rs->ctx, g, i, n, r->def, &r->attrs, d);
        json_t *args = json_object_get(n->attrs, "args");
        if (!st) {
            if (!json_is_array(args)) {
                st = rt_json__bad(d, g->symbol, "kernel node without args");
                break;
            }
            r->nargs = (uint32_t)json_array_size(args);
            r->args = ir_alloc(rs->ctx, sizeof(ref_arg) * (r->nargs ? r->nargs : 1));
            for (uint32_t k = 0; k < r->nargs && !st; k++)
                if (!decode_arg(rs->ctx, json_array_get(args, k), n->ninputs, &r->args[k])) st = rt_json__bad(d, g->symbol, "kernel arg");
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
    gr_status st = rt_json_graph_check_args(g, args, nin, nout, d);
    if (st) return st;
    uint32_t ne = rt_json_graph_num_entries(g);
    rt_value *entries = calloc(ne + 1, sizeof(rt_value));
    uint32_t *left = malloc(sizeof(uint32_t) * (ne + 1));
    if (!entries || !left) {
        free(entries);
        free(left);
        return gr_diag_set(d, GR_ERR_NOMEM, "json runtime: out of memory");
    }
    memcpy(left, g->consumers, sizeof(uint32_t) * ne);
    for (uint32_t i = 0; i < nin && !st; i++) {
        const DLTensor *t = args[i];
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
            if (ev->kind != RT_VAL_TENSOR || !rt_json__matches_node(n, o, &ev->u.t->dl)) {
                st = gr_diag_set(d, GR_ERR_RUNTIME, "json runtime '%s': node %u (%s) output %u does not match its declared shape/dtype",
                                 g->symbol, i, n->name, o);
                gr_diag_set_layer(d, n->layer);
            }
        }
        for (uint32_t o = 0; o < n->noutputs && !st && g->tap; o++) {
            rt_json_tap_point tp = {g->symbol, n, i, o, -1, NULL, NULL, NULL};
            g->tap(&tp, entries[row + o].u.t, g->tap_user);  /* in place: nothing to write back */
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

const rt_json_engine rt_json_reference_engine = {"json", ref_prepare, ref_run, ref_release, 0};
