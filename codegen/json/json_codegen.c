/* The JSON graph serializer and the json codegen (see json_codegen.h). */
#include "codegen/json/json_codegen.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "ir/op.h"
#include "runtime/json_runtime.h"

/* A serialized value: one entry (a tensor) or a tuple of values. */
typedef struct cg_val cg_val;
struct cg_val {
    bool tuple;
    uint32_t nid, index;
    uint32_t n;
    const cg_val *const *items;
};

#define CG_NSMALL 16

/* shape/dtype lists of one (hash-consed) struct info, shared by the nodes of that type */
typedef struct cg_types {
    json_t *shapes, *dtypes;
    int nout;
} cg_types;

typedef struct cg {
    ir_ctx_t *ctx;
    const byoc_region *r;
    json_cg_mode mode;
    json_t *nodes, *arg_nodes, *rows;
    uint32_t nnodes, nrows;
    gr_map vals;               /* var -> cg_val */
    gr_map lambdas;            /* var -> ir_func */
    gr_map consts;             /* const -> cg_val */
    gr_diag *diag;
    gr_status st;
    const ir_span *site;       /* span of the composite call being inlined (NULL: none) */
    /* Immutable values shared inside one document (Jansson refcounts them; nothing mutates a
     * graph doc after it is built): most nodes repeat the same small ints, types, empty attrs. */
    json_t *small[CG_NSMALL];
    json_t *in_obj[CG_NSMALL];
    json_t *empty_obj;
    gr_map types;              /* sinfo (hash-consed) -> cg_types */
} cg;

static json_t *cg_int(cg *c, json_int_t v) {
    if (v < 0 || v >= CG_NSMALL) return json_integer(v);
    if (!c->small[v]) c->small[v] = json_integer(v);
    return json_incref(c->small[v]);
}

static cg_val *val_entry(cg *c, uint32_t nid, uint32_t index) {
    cg_val *v = IR_NEW(c->ctx, cg_val);
    v->nid = nid;
    v->index = index;
    return v;
}

static gr_status fail(cg *c, const ir_span *sp, const char *fmt, const char *what) {
    if (!c->st) {
        c->st = gr_diag_set(c->diag, GR_ERR_UNSUPPORTED, "json codegen, region %s: %s %s", c->r->symbol, fmt, what ? what : "");
        if (sp) gr_diag_set_layer(c->diag, sp->locs[0].source);
    }
    return c->st;
}

static json_t *attr_json(const ir_attr *a) {
    switch (a->kind) {
    case IR_ATTR_BOOL: return json_boolean(a->u.b);
    case IR_ATTR_INT: return json_integer(a->u.i);
    case IR_ATTR_FLOAT: return json_real(a->u.f);
    case IR_ATTR_STR: return json_string(a->u.s);
    case IR_ATTR_DTYPE: return json_string(ir_dtype_name(a->u.dtype) ? ir_dtype_name(a->u.dtype) : "void");
    case IR_ATTR_ARRAY: {
        json_t *arr = json_array();
        for (uint32_t i = 0; i < a->u.arr.n; i++) json_array_append_new(arr, attr_json(&a->u.arr.items[i]));
        return arr;
    }
    case IR_ATTR_PRIM: {
        int64_t v;
        return ir_prim_is_int(a->u.prim, &v) ? json_integer(v) : json_null();
    }
    default: return json_null();
    }
}

static json_t *op_attrs_json(cg *c, const ir_attrs *attrs) {
    if (!attrs || attrs->n == 0) {
        if (!c->empty_obj) c->empty_obj = json_object();
        return json_incref(c->empty_obj);
    }
    json_t *o = json_object();
    for (uint32_t i = 0; attrs && i < attrs->n; i++) json_object_set_new(o, attrs->keys[i], attr_json(&attrs->vals[i]));
    return o;
}

/* [[source, output], ...] (arrays: far fewer allocations than objects on big graphs); a loc
 * with a source range adds [line, col]. */
static json_t *span_json(const ir_span *s) {
    json_t *a = json_array();
    for (uint32_t i = 0; s && i < s->n; i++) {
        json_t *o = json_array();
        json_array_append_new(o, json_string(s->locs[i].source));
        json_array_append_new(o, json_boolean(s->locs[i].is_output));
        if (s->locs[i].line) {
            json_array_append_new(o, json_integer(s->locs[i].line));
            json_array_append_new(o, json_integer(s->locs[i].col));
        }
        json_array_append_new(a, o);
    }
    return a;
}

/* shape/dtype per output of a tensor or a tuple of tensors; returns the output count or -1 */
static int types_json(const ir_sinfo *s, json_t *shapes, json_t *dtypes) {
    if (!s) return -1;
    if (s->kind == IR_SINFO_TUPLE) {
        int n = 0;
        for (uint32_t i = 0; i < s->n; i++) {
            int k = types_json(s->fields[i], shapes, dtypes);
            if (k != 1) return -1;
            n += k;
        }
        return n;
    }
    int64_t shape[RT_MAX_NDIM];
    if (s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM || !ir_sinfo_static_shape(s, shape) ||
        ir_dtype_is_void(s->dtype) || !ir_dtype_name(s->dtype))
        return -1;
    json_t *sh = json_array();
    for (int32_t k = 0; k < s->ndim; k++) json_array_append_new(sh, json_integer(shape[k]));
    json_array_append_new(shapes, sh);
    json_array_append_new(dtypes, json_string(ir_dtype_name(s->dtype)));
    return 1;
}

/* Appends a node; returns its id, or -1 (c->st set) when its type is not a static tensor. */
static int add_node(cg *c, const char *op, const char *name, json_t *inputs, json_t *attrs, const ir_sinfo *s,
                    const ir_span *sp) {
    uint64_t cached;
    cg_types *ty = NULL;
    if (s && gr_map_get(&c->types, GR_MAP_PTR(s), &cached)) {
        ty = (cg_types *)(uintptr_t)cached;
    } else {
        ty = IR_NEW(c->ctx, cg_types);
        ty->shapes = json_array();
        ty->dtypes = json_array();
        ty->nout = types_json(s, ty->shapes, ty->dtypes);
        if (ty->nout < 0) {
            json_decref(ty->shapes);
            json_decref(ty->dtypes);
            ty->shapes = ty->dtypes = NULL;
        }
        if (s) gr_map_put(&c->types, GR_MAP_PTR(s), GR_MAP_PTR(ty));
    }
    int nout = ty->nout;
    if (nout < 0) {
        json_decref(inputs);
        json_decref(attrs);
        char buf[256] = "?";
        if (s) ir_sinfo_snprint(s, buf, sizeof buf);
        fail(c, sp, "needs static tensor types, got", buf);
        return -1;
    }
    json_object_set_nocheck(attrs, "shape", ty->shapes);
    json_object_set_nocheck(attrs, "dtype", ty->dtypes);
    json_object_set_new_nocheck(attrs, "span", span_json(sp));
    json_t *n = json_object();
    json_object_set_new_nocheck(n, "op", json_string(op));
    json_object_set_new_nocheck(n, "name", json_string(name));
    if (inputs) {
        json_object_set_new_nocheck(attrs, "num_inputs", cg_int(c, (json_int_t)json_array_size(inputs)));
        json_object_set_new_nocheck(attrs, "num_outputs", cg_int(c, nout));
        json_object_set_new_nocheck(n, "inputs", inputs);
    }
    json_object_set_new_nocheck(n, "attrs", attrs);
    json_array_append_new(c->nodes, n);
    c->nrows += (uint32_t)nout;
    json_array_append_new(c->rows, cg_int(c, c->nrows));
    return (int)c->nnodes++;
}

static const cg_val *node_val(cg *c, int nid, const ir_sinfo *s) {
    if (s->kind != IR_SINFO_TUPLE) return val_entry(c, (uint32_t)nid, 0);
    cg_val *t = IR_NEW(c->ctx, cg_val);
    t->tuple = true;
    t->n = s->n;
    const cg_val **items = IR_NEW_ARRAY(c->ctx, const cg_val *, s->n ? s->n : 1);
    for (uint32_t i = 0; i < s->n; i++) items[i] = val_entry(c, (uint32_t)nid, i);
    t->items = items;
    return t;
}

static const cg_val *visit(cg *c, ir_expr *e);

static const cg_val *const_val(cg *c, ir_expr *e) {
    uint64_t v;
    if (gr_map_get(&c->consts, GR_MAP_PTR(e), &v)) return (const cg_val *)(uintptr_t)v;
    const char *name = NULL;
    for (uint32_t i = 0; i < c->r->nconsts; i++)
        if (&c->r->consts[i]->base == e) name = c->r->const_names[i];
    if (!name) {
        fail(c, e->span, "constant without a name", NULL);
        return NULL;
    }
    int nid = add_node(c, "const", name, NULL, json_object(), e->sinfo, e->span);
    if (nid < 0) return NULL;
    json_array_append_new(c->arg_nodes, json_integer(nid));
    const cg_val *cv = val_entry(c, (uint32_t)nid, 0);
    gr_map_put(&c->consts, GR_MAP_PTR(e), GR_MAP_PTR(cv));
    return cv;
}

/* args encoding: tensors become inputs, leaves are inlined */
static json_t *arg_json(cg *c, ir_expr *a, json_t *inputs, const ir_span *sp) {
    json_t *o = json_object();
    if (a->kind == IR_SHAPE) {
        const ir_shape_expr *s = IR_AS(a, ir_shape_expr);
        json_t *d = json_array();
        for (uint32_t k = 0; k < s->n; k++) {
            int64_t v;
            if (!ir_prim_is_int(s->dims[k], &v)) fail(c, sp, "symbolic shape argument", NULL);
            json_array_append_new(d, json_integer(v));
        }
        json_object_set_new_nocheck(o, "shape", d);
        return o;
    }
    if (a->kind == IR_PRIMVAL) {
        const ir_primval *p = IR_AS(a, ir_primval);
        int64_t v;
        if (p->value) {
            if (!ir_prim_is_int(p->value, &v)) fail(c, sp, "symbolic prim value argument", NULL);
            json_object_set_new_nocheck(o, "int", json_integer(v));
        } else {
            json_object_set_new_nocheck(o, "float", json_real(p->fvalue));
        }
        json_object_set_new_nocheck(o, "dtype", json_string(ir_dtype_name(p->dtype) ? ir_dtype_name(p->dtype) : "void"));
        return o;
    }
    if (a->kind == IR_STR) {
        json_object_set_new_nocheck(o, "str", json_string(IR_AS(a, ir_str)->value));
        return o;
    }
    if (a->kind == IR_TUPLE) {  /* a literal tuple: fields may be tensors or inline leaves */
        const ir_tuple *t = IR_AS(a, ir_tuple);
        json_t *items = json_array();
        for (uint32_t k = 0; k < t->n && !c->st; k++) json_array_append_new(items, arg_json(c, t->fields[k], inputs, sp));
        json_object_set_new_nocheck(o, "tuple", items);
        return o;
    }
    const cg_val *v = visit(c, a);
    if (!v) return o;
    if (v->tuple) {
        json_t *items = json_array();
        for (uint32_t k = 0; k < v->n; k++) {
            const cg_val *it = v->items[k];
            if (it->tuple) {
                fail(c, sp, "nested tuple argument", NULL);
                break;
            }
            json_t *io = json_object();
            json_object_set_new_nocheck(io, "in", cg_int(c, (json_int_t)json_array_size(inputs)));
            json_t *en = json_array();
            json_array_append_new(en, cg_int(c, it->nid));
            json_array_append_new(en, cg_int(c, it->index));
            json_array_append_new(en, cg_int(c, 0));
            json_array_append_new(inputs, en);
            json_array_append_new(items, io);
        }
        json_object_set_new_nocheck(o, "tuple", items);
        return o;
    }
    size_t k = json_array_size(inputs);
    json_t *en = json_array();
    json_array_append_new(en, cg_int(c, v->nid));
    json_array_append_new(en, cg_int(c, v->index));
    json_array_append_new(en, cg_int(c, 0));
    json_array_append_new(inputs, en);
    if (k >= CG_NSMALL) {
        json_object_set_new_nocheck(o, "in", cg_int(c, (json_int_t)k));
        return o;
    }
    json_decref(o);  /* {"in": k} for small k: one shared object per doc */
    if (!c->in_obj[k]) {
        c->in_obj[k] = json_object();
        json_object_set_new_nocheck(c->in_obj[k], "in", cg_int(c, (json_int_t)k));
    }
    return json_incref(c->in_obj[k]);
}

static const cg_val *visit_func_body(cg *c, const ir_func *f, const cg_val *const *args);

static const cg_val *visit_op_call(cg *c, const ir_call *call, const char *composite) {
    const ir_op_def *def = IR_AS(call->callee, ir_op)->def;
    json_t *inputs = json_array(), *args = json_array(), *attrs = json_object();
    for (uint32_t i = 0; i < call->nargs && !c->st; i++)
        json_array_append_new(args, arg_json(c, call->args[i], inputs, call->base.span));
    json_object_set_new_nocheck(attrs, "op_attrs", op_attrs_json(c, call->attrs));
    json_object_set_new_nocheck(attrs, "args", args);
    if (composite) json_object_set_new_nocheck(attrs, "composite", json_string(composite));
    if (c->st) {
        json_decref(inputs);
        json_decref(attrs);
        return NULL;
    }
    /* structurally equal composites are shared: the call site names the layers */
    int nid = add_node(c, "kernel", def->name, inputs, attrs, call->base.sinfo, c->site ? c->site : call->base.span);
    return nid < 0 ? NULL : node_val(c, nid, call->base.sinfo);
}

/* per-composite mode: one node for the whole lambda */
static const cg_val *visit_composite_node(cg *c, const ir_call *call, const ir_func *lam) {
    const char *comp = ir_attrs_get_str(lam->attrs, BYOC_ATTR_COMPOSITE);
    json_t *inputs = json_array(), *args = json_array(), *attrs = json_object(), *ops = json_array();
    for (uint32_t i = 0; i < call->nargs && !c->st; i++)
        json_array_append_new(args, arg_json(c, call->args[i], inputs, call->base.span));
    const ir_span *parts[64];
    uint32_t np = 0;
    const ir_seq *s = lam->body->kind == IR_SEQ ? IR_AS(lam->body, ir_seq) : NULL;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_expr *v = s->blocks[b]->bindings[i].value;
            if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
            json_t *o = json_object();
            json_object_set_new_nocheck(o, "name", json_string(IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name));
            json_object_set_new_nocheck(o, "op_attrs", op_attrs_json(c, IR_AS(v, ir_call)->attrs));
            json_array_append_new(ops, o);
            if (np < 64) parts[np++] = v->span;
        }
    json_object_set_new_nocheck(attrs, "ops", ops);
    json_object_set_new_nocheck(attrs, "args", args);
    json_object_set_new_nocheck(attrs, "composite", json_string(comp ? comp : ""));
    if (c->st) {
        json_decref(inputs);
        json_decref(attrs);
        return NULL;
    }
    const ir_span *sp = call->base.span ? call->base.span : ir_span_seq(c->ctx, parts, np);
    int nid = add_node(c, "kernel", comp ? comp : "composite", inputs, attrs, call->base.sinfo, sp);
    return nid < 0 ? NULL : node_val(c, nid, call->base.sinfo);
}

static const cg_val *visit(cg *c, ir_expr *e) {
    if (c->st) return NULL;
    uint64_t v;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        if (gr_map_get(&c->vals, GR_MAP_PTR(e), &v)) return (const cg_val *)(uintptr_t)v;
        fail(c, e->span, "unbound var", IR_AS(e, ir_var)->name);
        return NULL;
    case IR_CONST:
        return const_val(c, e);
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        cg_val *tv = IR_NEW(c->ctx, cg_val);
        tv->tuple = true;
        tv->n = t->n;
        const cg_val **items = IR_NEW_ARRAY(c->ctx, const cg_val *, t->n ? t->n : 1);
        for (uint32_t i = 0; i < t->n; i++)
            if (!(items[i] = visit(c, t->fields[i]))) return NULL;
        tv->items = items;
        return tv;
    }
    case IR_TGI: {
        const cg_val *t = visit(c, IR_AS(e, ir_tgi)->tuple);
        int32_t i = IR_AS(e, ir_tgi)->index;
        if (!t) return NULL;
        if (!t->tuple || i < 0 || (uint32_t)i >= t->n) {
            fail(c, e->span, "bad tuple projection", NULL);
            return NULL;
        }
        return t->items[i];
    }
    case IR_CALL: {
        const ir_call *call = IR_AS(e, ir_call);
        if (call->callee->kind == IR_OP) {
            const ir_op_def *def = IR_AS(call->callee, ir_op)->def;
            if (def->flags & (IR_OPF_CALL_LIKE | IR_OPF_IMPURE)) {
                fail(c, e->span, "op not supported by the json runtime:", def->name);
                return NULL;
            }
            return visit_op_call(c, call, NULL);
        }
        if (gr_map_get(&c->lambdas, GR_MAP_PTR(call->callee), &v)) {
            const ir_func *lam = (const ir_func *)(uintptr_t)v;
            if (c->mode == JSON_CG_PER_COMPOSITE) return visit_composite_node(c, call, lam);
            const cg_val **args = IR_NEW_ARRAY(c->ctx, const cg_val *, call->nargs ? call->nargs : 1);
            for (uint32_t i = 0; i < call->nargs; i++)
                if (!(args[i] = visit(c, call->args[i]))) return NULL;
            const ir_span *saved = c->site;
            if (e->span) c->site = e->span;
            const cg_val *rv = visit_func_body(c, lam, args);
            c->site = saved;
            return rv;
        }
        fail(c, e->span, "call of something that is neither an op nor a composite", NULL);
        return NULL;
    }
    default:
        fail(c, e->span, "unsupported expression:", ir_expr_kind_name((ir_expr_kind)e->kind));
        return NULL;
    }
}

static const cg_val *visit_func_body(cg *c, const ir_func *f, const cg_val *const *args) {
    for (uint32_t i = 0; i < f->nparams; i++) gr_map_put(&c->vals, GR_MAP_PTR(f->params[i]), GR_MAP_PTR(args[i]));
    if (f->body->kind != IR_SEQ) return visit(c, f->body);
    const ir_seq *s = IR_AS(f->body, ir_seq);
    for (uint32_t b = 0; b < s->nblocks && !c->st; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n && !c->st; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->match_sinfo) {
                fail(c, bd->value->span, "match_cast is not supported", NULL);
                break;
            }
            if (bd->value->kind == IR_FUNC) {
                gr_map_put(&c->lambdas, GR_MAP_PTR(bd->var), GR_MAP_PTR(bd->value));
                continue;
            }
            const cg_val *v = visit(c, bd->value);
            if (v) gr_map_put(&c->vals, GR_MAP_PTR(bd->var), GR_MAP_PTR(v));
        }
    return c->st ? NULL : visit(c, s->body);
}

static void add_heads(json_t *heads, const cg_val *v) {
    if (v->tuple) {
        for (uint32_t i = 0; i < v->n; i++) add_heads(heads, v->items[i]);
        return;
    }
    json_t *en = json_array();
    json_array_append_new(en, json_integer(v->nid));
    json_array_append_new(en, json_integer(v->index));
    json_array_append_new(en, json_integer(0));
    json_array_append_new(heads, en);
}

static gr_status serialize_doc(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, json_t **out, gr_diag *diag);

gr_status json_cg_serialize(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, char **out, gr_diag *diag) {
    *out = NULL;
    json_t *doc = NULL;
    gr_status st = serialize_doc(ctx, r, mode, &doc, diag);
    if (st) return st;
    *out = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return *out ? GR_OK : gr_diag_set(diag, GR_ERR_NOMEM, "json codegen: cannot serialize");
}

static gr_status serialize_doc(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, json_t **out, gr_diag *diag) {
    *out = NULL;
    cg c = {0};
    c.ctx = ctx;
    c.r = r;
    c.mode = mode;
    c.diag = diag;
    c.nodes = json_array();
    c.arg_nodes = json_array();
    c.rows = json_array();
    json_array_append_new(c.rows, json_integer(0));
    gr_map_init(&c.types);
    gr_map_init(&c.vals);
    gr_map_init(&c.lambdas);
    gr_map_init(&c.consts);
    const ir_func *f = r->func;
    const cg_val **args = IR_NEW_ARRAY(ctx, const cg_val *, f->nparams ? f->nparams : 1);
    for (uint32_t i = 0; i < f->nparams && !c.st; i++) {
        int nid = add_node(&c, "input", f->params[i]->name, NULL, json_object(), f->params[i]->base.sinfo,
                           f->params[i]->base.span);
        if (nid < 0) break;
        if (f->params[i]->base.sinfo->kind == IR_SINFO_TUPLE) {
            fail(&c, NULL, "tuple parameter", f->params[i]->name);
            break;
        }
        json_array_append_new(c.arg_nodes, json_integer(nid));
        args[i] = val_entry(&c, (uint32_t)nid, 0);
    }
    const cg_val *res = c.st ? NULL : visit_func_body(&c, f, args);
    gr_status st = c.st;
    if (!st && res) {
        json_t *root = json_object(), *heads = json_array();
        add_heads(heads, res);
        json_object_set_new_nocheck(root, "symbol", json_string(r->symbol));
        json_object_set(root, "nodes", c.nodes);
        json_object_set(root, "arg_nodes", c.arg_nodes);
        json_object_set_new_nocheck(root, "heads", heads);
        json_object_set(root, "node_row_ptr", c.rows);
        *out = root;
    }
    json_decref(c.nodes);
    json_decref(c.arg_nodes);
    json_decref(c.rows);
    for (uint32_t k = 0; k < c.types.cap; k++)
        if (c.types.keys[k]) {
            cg_types *ty = (cg_types *)(uintptr_t)c.types.vals[k];
            json_decref(ty->shapes);
            json_decref(ty->dtypes);
        }
    for (uint32_t k = 0; k < CG_NSMALL; k++) json_decref(c.in_obj[k]);
    for (uint32_t k = 0; k < CG_NSMALL; k++) json_decref(c.small[k]);
    json_decref(c.empty_obj);
    gr_map_free(&c.types);
    gr_map_free(&c.vals);
    gr_map_free(&c.lambdas);
    gr_map_free(&c.consts);
    return st;
}

gr_status json_cg_build_graphs(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, json_cg_mode mode,
                               rt_json_graph **graphs, gr_diag *diag) {
    gr_status st = GR_OK;
    uint32_t made = 0;
    for (uint32_t i = 0; i < n && !st; i++) {
        json_t *doc = NULL;
        if ((st = serialize_doc(ctx, &regions[i], mode, &doc, diag))) break;
        st = rt_json_graph_load_doc(regions[i].symbol, doc, &graphs[i], diag);
        if (st) break;
        made++;
        uint32_t nc = rt_json_graph_num_consts(graphs[i]);
        rt_tensor **ts = gr_xcalloc(nc + 1, sizeof(*ts));
        for (uint32_t k = 0; k < nc; k++) {
            const char *cn = rt_json_graph_const_name(graphs[i], k);
            for (uint32_t q = 0; q < regions[i].nconsts; q++)
                if (strcmp(regions[i].const_names[q], cn) == 0) ts[k] = regions[i].consts[q]->data;
        }
        st = rt_json_graph_init(graphs[i], ts, nc, diag);
        free(ts);
    }
    if (st)
        for (uint32_t i = 0; i < made; i++) {
            rt_json_graph_free(graphs[i]);
            graphs[i] = NULL;
        }
    return st;
}

gr_status json_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const ir_attrs *options,
                          rt_module **out, gr_diag *diag) {
    (void)options;
    *out = NULL;
    rt_json_graph **graphs = gr_xcalloc(n + 1, sizeof(*graphs));
    gr_status st = json_cg_build_graphs(ctx, regions, n, JSON_CG_PER_OP, graphs, diag);
    if (!st) *out = rt_json_module_new("json", &rt_json_reference_engine, graphs, n);
    free(graphs);
    return st;
}
