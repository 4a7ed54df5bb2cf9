/* Operand contracts of a JSON graph's kernel nodes (rt_json_graph_check, json_runtime.h).
 *
 * One rule for every op of every engine: the op table's own struct info inference
 * (ir/ops/op_infer_*.c), run on the node's arguments (its operands typed as their producers
 * declare them, its literal arguments, its attributes), must accept them and give exactly the
 * outputs the node declares. That is where a matmul's K, a convolution's channels and groups,
 * a binary op's broadcast, a concat's other axes, a pooling window or a reshape's element
 * count are already checked for the IR; here it guards the engines, whose handlers and kernels
 * size their reads from the declared shapes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "base/vec.h"
#include "ir/builder.h"
#include "ir/span.h"
#include "runtime/json/json_impl.h"

/* ------------------------------------------------------------------ attributes ---- */

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

gr_status rt_json__op_attrs(ir_ctx_t *ctx, const rt_json_graph *g, uint32_t nid, const rt_json_node *n,
                            const ir_op_def *def, const ir_attrs **out, gr_diag *d) {
    json_t *oa = json_object_get(n->attrs, "op_attrs");
    const char *key;
    json_t *val;
    GR_VEC(const char *) keys = {0};
    GR_VEC(ir_attr) vals = {0};
    gr_status st = GR_OK;
    json_object_foreach(oa, key, val) {
        uint8_t want = IR_ATTR_NONE;
        for (uint16_t f = 0; f < def->nattrs; f++)
            if (strcmp(def->attrs[f].name, key) == 0) want = def->attrs[f].kind;
        ir_attr a;
        if (!decode_attr(ctx, val, want, &a)) {
            st = gr_fail(d, GR_ERR_INVALID, n->layer, n->name, "json runtime '%s': node %u (%s): malformed op attribute '%s'",
                         rt_json_graph_symbol(g), nid, n->name, key);
            break;
        }
        gr_vec_push(&keys, ir_intern(ctx, key));
        gr_vec_push(&vals, a);
    }
    if (!st) {
        const ir_attrs *given = ir_attrs_new(ctx, keys.len, keys.data, vals.data);
        st = ir_op_attrs_normalize(ctx, def, given, out, d);
        if (st) {
            gr_diag_set_layer(d, n->layer);
            gr_diag_set_op(d, n->name);
        }
    }
    gr_vec_free(&keys);
    gr_vec_free(&vals);
    return st;
}

/* --------------------------------------------------------------------- messages ---- */

/* The node's layers for messages: every source of its "span" list, quoted ("none" when it has
 * none). */
static void layers_text(const rt_json_node *n, char *buf, size_t size) {
    json_t *span = json_object_get(n->attrs, "span");
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < json_array_size(span) && len + 1 < size; i++) {
        json_t *p = json_array_get(span, i);
        json_t *src = json_is_array(p) ? json_array_get(p, 0) : json_object_get(p, "source");
        if (!json_is_string(src)) continue;
        int w = snprintf(buf + len, size - len, "%s'%s'", len ? ", " : "", json_string_value(src));
        len = w < 0 ? size : len + (size_t)w;
    }
    if (!buf[0]) snprintf(buf, size, "none");
}

/* A broken contract: GR_ERR_INVALID naming the graph, the node, its op and its layers. */
__attribute__((format(printf, 5, 6))) static gr_status broken(const rt_json_graph *g, uint32_t nid, const rt_json_node *n,
                                                              gr_diag *d, const char *fmt, ...) {
    char why[1200], layers[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    layers_text(n, layers, sizeof layers);
    return gr_fail(d, GR_ERR_INVALID, n->layer, n->name, "json runtime '%s': node %u (%s, layers %s) breaks its operand contract: %s",
                   rt_json_graph_symbol(g), nid, n->name, layers, why);
}

/* "R.Tensor((1, 36), dtype=\"float32\")" of output o as declared. */
static void declared_text(const rt_json_node *n, uint32_t o, char *buf, size_t size) {
    size_t len = (size_t)snprintf(buf, size, "(");
    for (int32_t k = 0; k < n->ndims[o] && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", k ? ", " : "", (long long)n->shapes[o][k]);
    if (len < size) {
        const char *dt = ir_dtype_name(n->dtypes[o]);
        snprintf(buf + len, size - len, "%s), %s", n->ndims[o] == 1 ? "," : "", dt ? dt : "?");
    }
}

/* -------------------------------------------------------------------- arguments ---- */

typedef struct ck {
    ir_ctx_t *ctx;
    rt_json_graph *g;
    const rt_json_node *n;
    bool *used;                   /* per node input: some argument reads it */
} ck;

/* Tuples nest this deep at most (codegen writes one level). */
#define CK_MAX_DEPTH 4

/* The IR form of one argument ({"in"}, {"shape"}, {"int"}, {"float"}, {"str"}, {"tuple"}), or
 * NULL when it has none. An input is a var typed as its producer declares it. */
static ir_expr *arg_expr(ck *c, json_t *a, int depth) {
    json_t *v;
    if ((v = json_object_get(a, "in"))) {
        json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;
        if (k < 0 || k >= (json_int_t)c->n->ninputs) return NULL;
        c->used[k] = true;
        rt_json_entry e = c->n->inputs[k];
        const rt_json_node *p = rt_json_graph_node(c->g, e.nid);
        const ir_sinfo *s = ir_sinfo_tensor_static(c->ctx, p->dtypes[e.index], p->ndims[e.index], p->shapes[e.index]);
        return &ir_var_new(c->ctx, "in", s, NULL)->base;
    }
    if ((v = json_object_get(a, "shape"))) {
        size_t n = json_array_size(v);
        if (!json_is_array(v) || n > RT_MAX_NDIM) return NULL;
        const ir_prim *dims[RT_MAX_NDIM];
        for (size_t k = 0; k < n; k++) {
            json_t *x = json_array_get(v, k);
            if (!json_is_integer(x)) return NULL;
            dims[k] = ir_prim_int(c->ctx, json_integer_value(x));
        }
        return &ir_shape_expr_new(c->ctx, (uint32_t)n, dims, NULL)->base;
    }
    if ((v = json_object_get(a, "int")))
        return json_is_integer(v) ? &ir_primval_int(c->ctx, ir_prim_int(c->ctx, json_integer_value(v)), NULL)->base : NULL;
    if ((v = json_object_get(a, "float"))) {
        json_t *t = json_object_get(a, "dtype");
        ir_dtype dt = IR_DTYPE_F32;
        if (json_is_string(t) && !ir_dtype_parse(json_string_value(t), &dt)) return NULL;
        return json_is_number(v) ? &ir_primval_float(c->ctx, dt, json_number_value(v), NULL)->base : NULL;
    }
    if ((v = json_object_get(a, "str"))) return json_is_string(v) ? &ir_str_new(c->ctx, json_string_value(v), NULL)->base : NULL;
    if ((v = json_object_get(a, "tuple"))) {
        size_t n = json_array_size(v);
        if (!json_is_array(v) || depth >= CK_MAX_DEPTH) return NULL;
        ir_expr **fields = ir_alloc(c->ctx, sizeof(ir_expr *) * (n ? n : 1));
        for (size_t k = 0; k < n; k++)
            if (!(fields[k] = arg_expr(c, json_array_get(v, k), depth + 1))) return NULL;
        return &ir_tuple_new(c->ctx, (uint32_t)n, fields, NULL)->base;
    }
    return NULL;
}

/* The node's first layer as a span: the inference's message names it. */
static const ir_span *node_span(ir_ctx_t *ctx, const rt_json_node *n) {
    return n->layer && n->layer[0] ? ir_span_named(ctx, n->layer, false) : NULL;
}

/* ------------------------------------------------------------------------ check ---- */

/* Output o as inferred (s) against the node's declaration: dtype and every dim the inference
 * knows (a data-dependent dim, e.g. nonzero's count, is the kernel's to check at run time). */
static bool output_ok(const ir_sinfo *s, const rt_json_node *n, uint32_t o) {
    if (!s || s->kind != IR_SINFO_TENSOR) return false;
    if (!ir_dtype_is_void(s->dtype) && !ir_dtype_eq(s->dtype, n->dtypes[o])) return false;
    if (s->ndim >= 0 && s->ndim != n->ndims[o]) return false;
    for (int32_t k = 0; s->dims && k < s->ndim; k++) {
        int64_t v;
        if (ir_prim_is_int(s->dims[k], &v) && v != n->shapes[o][k]) return false;
    }
    return true;
}

static gr_status check_node(ck *c, uint32_t nid, gr_diag *d) {
    const rt_json_node *n = c->n;
    const ir_op_def *def = ir_op_def_at((uint32_t)n->op);
    if (def->flags & IR_OPF_CALL_LIKE) return broken(c->g, nid, n, d, "%s is not a kernel", def->text_name);
    json_t *args = json_object_get(n->attrs, "args");
    if (!json_is_array(args)) return broken(c->g, nid, n, d, "no \"args\" list");
    uint32_t nargs = (uint32_t)json_array_size(args);
    ir_expr **av = ir_alloc(c->ctx, sizeof(ir_expr *) * (nargs ? nargs : 1));
    for (uint32_t k = 0; k < nargs; k++)
        if (!(av[k] = arg_expr(c, json_array_get(args, k), 0)))
            return broken(c->g, nid, n, d, "argument %u is not an input, shape, int, float, str or tuple of them", k);
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (!c->used[k]) return broken(c->g, nid, n, d, "input %u is not one of its arguments", k);
    const ir_attrs *attrs = NULL;
    gr_status st = rt_json__op_attrs(c->ctx, c->g, nid, n, def, &attrs, d);
    if (st) return st;
    ir_call *call = ir_call_new(c->ctx, &ir_op_get_def(c->ctx, def)->base, nargs, av, attrs, 0, NULL, node_span(c->ctx, n));
    gr_diag id;
    gr_diag_clear(&id);
    ir_expr *r = ir_normalize(c->ctx, &call->base, &id);
    if (!r) return broken(c->g, nid, n, d, "%s", id.msg);
    const ir_sinfo *s = r->sinfo;
    uint32_t nout = s && s->kind == IR_SINFO_TUPLE ? s->n : 1;
    bool ok = nout == n->noutputs;
    for (uint32_t o = 0; o < n->noutputs && ok; o++) {
        ok = output_ok(s->kind == IR_SINFO_TUPLE ? s->fields[o] : s, n, o);
        if (!ok) {
            char inf[256] = "?", dec[256];
            ir_sinfo_snprint(s->kind == IR_SINFO_TUPLE ? s->fields[o] : s, inf, sizeof inf);
            declared_text(n, o, dec, sizeof dec);
            return broken(c->g, nid, n, d, "its operands give output %u %s, it declares %s", o, inf, dec);
        }
    }
    if (!ok) {
        char inf[256] = "?";
        ir_sinfo_snprint(s, inf, sizeof inf);
        return broken(c->g, nid, n, d, "its operands give %s (%u outputs), it declares %u outputs", inf, nout, n->noutputs);
    }
    return GR_OK;
}

gr_status rt_json_graph_check(rt_json_graph *g, gr_diag *d) {
    uint32_t nn = rt_json_graph_num_nodes(g), maxin = 0;
    /* every value a static shape: engines prepare a symbolic graph's specializations only */
    for (uint32_t i = 0; i < nn; i++) {
        const rt_json_node *n = rt_json_graph_node(g, i);
        if (n->ninputs > maxin) maxin = n->ninputs;
        for (uint32_t o = 0; o < n->noutputs; o++)
            for (int32_t k = 0; k < n->ndims[o]; k++)
                if (n->shapes[o][k] < 0)
                    return broken(g, i, n, d, "output %u has a symbolic dim (only a specialization of the graph runs)", o);
    }
    ck c = {ir_ctx_new(), g, NULL, gr_xcalloc(maxin + 1, sizeof(bool))};
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < nn && !st; i++) {
        c.n = rt_json_graph_node(g, i);
        /* a name the op table does not have: the engine refuses it, naming it */
        if (c.n->kind != RT_JSON_KERNEL || c.n->op == IR_OP_NONE) continue;
        memset(c.used, 0, sizeof(bool) * (c.n->ninputs + 1));
        st = check_node(&c, i, d);
    }
    free(c.used);
    ir_ctx_free(c.ctx);
    return st;
}
