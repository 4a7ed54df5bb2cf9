/* Expression constructors and the IRModule container. */
#include "ir/expr.h"

#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ctx_impl.h"
#include "ir/op.h"

static const char *const KIND_NAMES[IR_EXPR_KIND_COUNT] = {
    "Var", "DataflowVar", "Constant", "Tuple", "TupleGetItem", "Call", "Op", "GlobalVar",
    "ExternFunc", "Function", "SeqExpr", "If", "ShapeExpr", "PrimValue", "StringImm",
};

const char *ir_expr_kind_name(ir_expr_kind k) {
    return k < IR_EXPR_KIND_COUNT ? KIND_NAMES[k] : "?";
}

void *ir__checked_cast(const void *e, uint32_t kinds) {
    const ir_expr *x = e;
    if (x && !((1u << x->kind) & kinds))
        gr_abort(__FILE__, __LINE__, "bad downcast of %s", ir_expr_kind_name(x->kind));
    return (void *)(uintptr_t)e;
}

bool ir_is_leaf(const ir_expr *e) {
    switch (e->kind) {
    case IR_VAR: case IR_DFVAR: case IR_CONST: case IR_OP: case IR_GVAR: case IR_EXTERN:
    case IR_SHAPE: case IR_PRIMVAL: case IR_STR:
        return true;
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++)
            if (!ir_is_leaf(t->fields[i])) return false;
        return true;
    }
    default:
        return false;
    }
}

static void *new_expr(ir_ctx_t *ctx, size_t size, ir_expr_kind kind, const ir_span *span) {
    ir_expr *e = ir_alloc(ctx, size);
    e->kind = (uint8_t)kind;
    e->id = ir_ctx_next_id(ctx);
    e->span = span;
    return e;
}
#define NEW_EXPR(ctx, T, kind, span) ((T *)new_expr((ctx), sizeof(T), (kind), (span)))

static void *copy_array(ir_ctx_t *ctx, const void *src, size_t n, size_t elem) {
    return n ? ir_alloc_copy(ctx, src, n * elem) : NULL;
}

ir_var *ir_var_new(ir_ctx_t *ctx, const char *name, const ir_sinfo *sinfo, const ir_span *span) {
    ir_var *v = NEW_EXPR(ctx, ir_var, IR_VAR, span);
    v->name = ir_intern(ctx, name ? name : "v");
    v->base.sinfo = sinfo;
    return v;
}

ir_var *ir_dfvar_new(ir_ctx_t *ctx, const char *name, const ir_sinfo *sinfo, const ir_span *span) {
    ir_var *v = ir_var_new(ctx, name, sinfo, span);
    v->base.kind = IR_DFVAR;
    return v;
}

ir_const *ir_const_new(ir_ctx_t *ctx, struct rt_tensor *data, const ir_span *span) {
    ir_const *c = NEW_EXPR(ctx, ir_const, IR_CONST, span);
    ir__ctx_keep(ctx, &data->obj);
    c->data = data;
    c->base.sinfo = ir_sinfo_tensor_static(ctx, data->dl.dtype, data->dl.ndim, data->dl.shape);
    return c;
}

ir_tuple *ir_tuple_new(ir_ctx_t *ctx, uint32_t n, ir_expr *const *fields, const ir_span *span) {
    ir_tuple *t = NEW_EXPR(ctx, ir_tuple, IR_TUPLE, span);
    t->n = n;
    t->fields = copy_array(ctx, fields, n, sizeof(*fields));
    return t;
}

ir_tgi *ir_tgi_new(ir_ctx_t *ctx, ir_expr *tuple, int32_t index, const ir_span *span) {
    ir_tgi *g = NEW_EXPR(ctx, ir_tgi, IR_TGI, span);
    g->tuple = tuple;
    g->index = index;
    return g;
}

ir_call *ir_call_new(ir_ctx_t *ctx, ir_expr *callee, uint32_t nargs, ir_expr *const *args,
                     const ir_attrs *attrs, uint32_t nsinfo_args,
                     const ir_sinfo *const *sinfo_args, const ir_span *span) {
    ir_call *c = NEW_EXPR(ctx, ir_call, IR_CALL, span);
    c->callee = callee;
    c->nargs = nargs;
    c->args = copy_array(ctx, args, nargs, sizeof(*args));
    c->attrs = attrs;
    c->nsinfo_args = nsinfo_args;
    c->sinfo_args = copy_array(ctx, sinfo_args, nsinfo_args, sizeof(*sinfo_args));
    return c;
}

ir_op *ir_op_get_def(ir_ctx_t *ctx, const ir_op_def *def) {
    if (!def) return NULL;
    if (!ctx->ops) ctx->ops = gr_xcalloc(ir_op_def_count(), sizeof(ir_op *));
    ir_op **slot = &ctx->ops[def->index];
    if (!*slot) {
        *slot = NEW_EXPR(ctx, ir_op, IR_OP, NULL);
        (*slot)->def = def;
        (*slot)->base.sinfo = ir_sinfo_object(ctx);
    }
    return *slot;
}

ir_op *ir_op_get(ir_ctx_t *ctx, const char *name) {
    return ir_op_get_def(ctx, ir_op_def_find(name));
}

ir_op *ir_op_get_id(ir_ctx_t *ctx, ir_op_id id) {
    return ir_op_get_def(ctx, ir_op_def_at((uint32_t)id));
}

ir_gvar *ir_gvar_new(ir_ctx_t *ctx, const char *name) {
    ir_gvar *g = NEW_EXPR(ctx, ir_gvar, IR_GVAR, NULL);
    g->name = ir_intern(ctx, name);
    return g;
}

ir_extern *ir_extern_new(ir_ctx_t *ctx, const char *symbol, const ir_span *span) {
    ir_extern *x = NEW_EXPR(ctx, ir_extern, IR_EXTERN, span);
    x->symbol = ir_intern(ctx, symbol);
    x->base.sinfo = ir_sinfo_func_opaque(ctx, NULL);
    return x;
}

ir_block *ir_block_new(ir_ctx_t *ctx, bool dataflow, uint32_t n, const ir_binding *bindings) {
    ir_block *b = IR_NEW(ctx, ir_block);
    b->dataflow = dataflow;
    b->n = n;
    b->bindings = copy_array(ctx, bindings, n, sizeof(*bindings));
    return b;
}

ir_seq *ir_seq_new(ir_ctx_t *ctx, uint32_t nblocks, const ir_block *const *blocks, ir_expr *body,
                   const ir_span *span) {
    ir_seq *s = NEW_EXPR(ctx, ir_seq, IR_SEQ, span);
    s->nblocks = nblocks;
    s->blocks = copy_array(ctx, blocks, nblocks, sizeof(*blocks));
    s->body = body;
    return s;
}

ir_func *ir_func_new(ir_ctx_t *ctx, uint32_t nparams, ir_var *const *params, ir_expr *body,
                     const ir_sinfo *ret_sinfo, const ir_attrs *attrs, const ir_span *span) {
    ir_func *f = NEW_EXPR(ctx, ir_func, IR_FUNC, span);
    f->nparams = nparams;
    f->params = copy_array(ctx, params, nparams, sizeof(*params));
    f->body = body;
    f->ret_sinfo = ret_sinfo;
    f->attrs = attrs;
    return f;
}

ir_if *ir_if_new(ir_ctx_t *ctx, ir_expr *cond, ir_expr *then_branch, ir_expr *else_branch,
                 const ir_span *span) {
    ir_if *x = NEW_EXPR(ctx, ir_if, IR_IF, span);
    x->cond = cond;
    x->then_branch = then_branch;
    x->else_branch = else_branch;
    return x;
}

ir_shape_expr *ir_shape_expr_new(ir_ctx_t *ctx, uint32_t n, const ir_prim *const *dims,
                                 const ir_span *span) {
    ir_shape_expr *s = NEW_EXPR(ctx, ir_shape_expr, IR_SHAPE, span);
    s->n = n;
    s->dims = copy_array(ctx, dims, n, sizeof(*dims));
    s->base.sinfo = ir_sinfo_shape(ctx, (int32_t)n, dims);
    return s;
}

ir_primval *ir_primval_int(ir_ctx_t *ctx, const ir_prim *value, const ir_span *span) {
    ir_primval *p = NEW_EXPR(ctx, ir_primval, IR_PRIMVAL, span);
    p->dtype = IR_DTYPE_I64;
    p->value = value;
    p->base.sinfo = ir_sinfo_prim(ctx, IR_DTYPE_I64, value);
    return p;
}

ir_primval *ir_primval_float(ir_ctx_t *ctx, ir_dtype dtype, double value, const ir_span *span) {
    ir_primval *p = NEW_EXPR(ctx, ir_primval, IR_PRIMVAL, span);
    p->dtype = dtype;
    p->fvalue = value;
    p->base.sinfo = ir_sinfo_prim(ctx, dtype, NULL);
    return p;
}

ir_str *ir_str_new(ir_ctx_t *ctx, const char *value, const ir_span *span) {
    ir_str *s = NEW_EXPR(ctx, ir_str, IR_STR, span);
    s->value = ir_intern(ctx, value);
    s->base.sinfo = ir_sinfo_object(ctx);
    return s;
}

void ir_expr_set_sinfo(ir_expr *e, const ir_sinfo *sinfo) {
    if (e->sinfo == sinfo) return;
    if (e->sinfo)
        gr_abort(__FILE__, __LINE__, "struct info of %s #%u set twice", ir_expr_kind_name(e->kind), e->id);
    e->sinfo = sinfo;
}

static size_t expr_size(ir_expr_kind k) {
    switch (k) {
    case IR_VAR: case IR_DFVAR: return sizeof(ir_var);
    case IR_CONST: return sizeof(ir_const);
    case IR_TUPLE: return sizeof(ir_tuple);
    case IR_TGI: return sizeof(ir_tgi);
    case IR_CALL: return sizeof(ir_call);
    case IR_OP: return sizeof(ir_op);
    case IR_GVAR: return sizeof(ir_gvar);
    case IR_EXTERN: return sizeof(ir_extern);
    case IR_FUNC: return sizeof(ir_func);
    case IR_SEQ: return sizeof(ir_seq);
    case IR_IF: return sizeof(ir_if);
    case IR_SHAPE: return sizeof(ir_shape_expr);
    case IR_PRIMVAL: return sizeof(ir_primval);
    case IR_STR: return sizeof(ir_str);
    default: return 0;
    }
}

ir_expr *ir_expr_with_span(ir_ctx_t *ctx, const ir_expr *e, const ir_span *span) {
    if (e->span == span) return (ir_expr *)(uintptr_t)e;
    if (ir_is_var(e) || e->kind == IR_OP || e->kind == IR_GVAR) return (ir_expr *)(uintptr_t)e;
    ir_expr *c = ir_alloc_copy(ctx, e, expr_size((ir_expr_kind)e->kind));
    c->id = ir_ctx_next_id(ctx);
    c->span = span;
    return c;
}

ir_func *ir_func_with_attrs(ir_ctx_t *ctx, const ir_func *f, const ir_attrs *attrs) {
    ir_func *c = ir_alloc_copy(ctx, f, sizeof(*f));
    c->base.id = ir_ctx_next_id(ctx);
    c->attrs = attrs;
    return c;
}

const ir_sinfo *ir_func_sinfo(ir_ctx_t *ctx, const ir_func *f) {
    const ir_sinfo *ps[256];
    const ir_sinfo **params = f->nparams <= 256 ? ps : gr_xmalloc(sizeof(*params) * f->nparams);
    for (uint32_t i = 0; i < f->nparams; i++) {
        const ir_sinfo *s = f->params[i]->base.sinfo;
        params[i] = s ? s : ir_sinfo_object(ctx);
    }
    const ir_sinfo *ret = f->ret_sinfo ? f->ret_sinfo : (f->body ? f->body->sinfo : NULL);
    const ir_sinfo *r = ir_sinfo_func(ctx, f->nparams, params, ret);
    if (params != ps) free(params);
    return r;
}

/* True when the `def` header of a PrimFunc's text declares a return type (`-> T.int64:`). */
static bool tir_returns_value(const char *text) {
    const char *d = strstr(text, "def ");
    int depth = 0;
    for (const char *s = d ? d : text; *s; s++) {
        if (*s == '(' || *s == '[') depth++;
        else if (*s == ')' || *s == ']') depth--;
        else if (depth == 0 && s[0] == '-' && s[1] == '>') return true;
        else if (depth == 0 && *s == ':') return false;
    }
    return false;
}

const ir_sinfo *ir_func_tir_sinfo(ir_ctx_t *ctx, const char *text) {
    /* as TVM types a PrimFunc called from Relax: a void one returns R.Tuple() */
    const ir_sinfo *ret = tir_returns_value(text) ? ir_sinfo_object(ctx) : ir_sinfo_tuple(ctx, 0, NULL);
    return ir_sinfo_func_opaque(ctx, ret);
}

ir_func *ir_func_tir_new(ir_ctx_t *ctx, const char *name, const char *text, bool is_private) {
    const char *keys[2] = {"graft.tir_text", "global_symbol"};
    ir_attr vals[2] = {ir_attr_str(ctx, text), ir_attr_str(ctx, name)};
    const ir_attrs *attrs = ir_attrs_new(ctx, is_private ? 1 : 2, keys, vals);
    ir_tuple *body = ir_tuple_new(ctx, 0, NULL, NULL);
    ir_expr_set_sinfo(&body->base, ir_sinfo_tuple(ctx, 0, NULL));
    ir_seq *seq = ir_seq_new(ctx, 0, NULL, &body->base, NULL);
    ir_expr_set_sinfo(&seq->base, body->base.sinfo);
    ir_func *f = ir_func_new(ctx, 0, NULL, &seq->base, NULL, attrs, NULL);
    ir_expr_set_sinfo(&f->base, ir_func_tir_sinfo(ctx, text));
    return f;
}

const char *ir_func_tir_text(const ir_expr *f) {
    if (!f || f->kind != IR_FUNC) return NULL;
    return ir_attrs_get_str(((const ir_func *)f)->attrs, "graft.tir_text");
}

const char *ir_call_tir_refusal(const struct ir_module *m, const ir_call *call, char *buf, size_t n) {
    const char *name = call->nargs && call->args[0]->kind == IR_GVAR ? ((const ir_gvar *)call->args[0])->name : NULL;
    if (!name) snprintf(buf, n, "R.call_tir needs a global function as its callee");
    else if (ir_func_tir_text(m ? (const ir_expr *)ir_module_func(m, name) : NULL))
        snprintf(buf, n, "R.call_tir(cls.%s, ...): '%s' is a TIR function (@T.prim_func); graft keeps "
                 "TIR functions as text and cannot run them", name, name);
    else
        snprintf(buf, n, "R.call_tir(cls.%s, ...): graft does not run R.call_tir (only op calls, "
                 "calls of Relax functions and R.call_dps_packed)", name);
    return buf;
}

/* ---- IRModule ---- */

ir_module *ir_module_new(ir_ctx_t *ctx) {
    ir_module *m = IR_NEW(ctx, ir_module);
    m->ctx = ctx;
    return m;
}

static void module_reserve(ir_module *m, uint32_t cap) {
    if (cap <= m->cap) return;
    uint32_t ncap = m->cap ? m->cap * 2 : 8;
    while (ncap < cap) ncap *= 2;
    ir_gvar **g = IR_NEW_ARRAY(m->ctx, ir_gvar *, ncap);
    ir_expr **f = IR_NEW_ARRAY(m->ctx, ir_expr *, ncap);
    if (m->nfuncs) {
        memcpy(g, m->gvars, sizeof(*g) * m->nfuncs);
        memcpy(f, m->funcs, sizeof(*f) * m->nfuncs);
    }
    m->gvars = g;
    m->funcs = f;
    m->cap = ncap;
}

/* Name lookups go through a hash table of positions once a module has more than a few
 * functions (a partitioned model can have thousands of composites, each added after a lookup
 * of its name). The table lives in the arena like the module; only the mutating calls (set,
 * copy, remove) build or update it, so lookups never write. */
static void index_build(ir_module *m);
enum { MODULE_INDEX_MIN = 16 };

ir_module *ir_module_copy(const ir_module *m) {
    ir_module *c = ir_module_new(m->ctx);
    module_reserve(c, m->nfuncs);
    if (m->nfuncs) {
        memcpy(c->gvars, m->gvars, sizeof(*c->gvars) * m->nfuncs);
        memcpy(c->funcs, m->funcs, sizeof(*c->funcs) * m->nfuncs);
    }
    c->nfuncs = m->nfuncs;
    c->attrs = m->attrs;
    if (c->nfuncs >= MODULE_INDEX_MIN) index_build(c);
    return c;
}

static uint32_t name_hash(const char *name) { return (uint32_t)gr_hash_bytes(name, strlen(name), 0x6d6f64); }

static void index_insert(ir_module *m, uint32_t pos) {
    uint32_t mask = m->index_cap_ - 1, i = name_hash(m->gvars[pos]->name) & mask;
    while (m->index_[i]) i = (i + 1) & mask;
    m->index_[i] = pos + 1;
}

/* (Re)builds the table for the current functions, reusing it when it is big enough. */
static void index_build(ir_module *m) {
    if (m->index_ && 2 * m->nfuncs <= m->index_cap_) {
        memset(m->index_, 0, sizeof(uint32_t) * m->index_cap_);
    } else {
        uint32_t cap = 64;
        while (cap < 2 * m->nfuncs) cap *= 2;
        m->index_ = IR_NEW_ARRAY(m->ctx, uint32_t, cap);  /* zeroed */
        m->index_cap_ = cap;
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) index_insert(m, i);
}

static int module_find(const ir_module *m, const char *name) {
    if (m->index_) {
        uint32_t mask = m->index_cap_ - 1;
        for (uint32_t i = name_hash(name) & mask; m->index_[i]; i = (i + 1) & mask) {
            const char *n = m->gvars[m->index_[i] - 1]->name;
            if (n == name || strcmp(n, name) == 0) return (int)(m->index_[i] - 1);
        }
        return -1;
    }
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (m->gvars[i]->name == name || strcmp(m->gvars[i]->name, name) == 0) return (int)i;
    return -1;
}

ir_gvar *ir_module_gvar(const ir_module *m, const char *name) {
    int i = module_find(m, name);
    return i >= 0 ? m->gvars[i] : NULL;
}

ir_func *ir_module_func(const ir_module *m, const char *name) {
    int i = module_find(m, name);
    return i >= 0 && m->funcs[i]->kind == IR_FUNC ? (ir_func *)m->funcs[i] : NULL;
}

ir_gvar *ir_module_set(ir_module *m, ir_gvar *gvar, ir_expr *func) {
    int i = module_find(m, gvar->name);
    if (i >= 0) {
        m->funcs[i] = func;
        return m->gvars[i];
    }
    module_reserve(m, m->nfuncs + 1);
    m->gvars[m->nfuncs] = gvar;
    m->funcs[m->nfuncs++] = func;
    if (m->index_ && 2 * m->nfuncs <= m->index_cap_) index_insert(m, m->nfuncs - 1);
    else if (m->nfuncs >= MODULE_INDEX_MIN) index_build(m);
    return gvar;
}

ir_gvar *ir_module_set_func(ir_module *m, const char *name, ir_expr *func) {
    ir_gvar *g = ir_module_gvar(m, name);
    return ir_module_set(m, g ? g : ir_gvar_new(m->ctx, name), func);
}

void ir_module_remove(ir_module *m, const char *name) {
    int i = module_find(m, name);
    if (i < 0) return;
    for (uint32_t j = (uint32_t)i + 1; j < m->nfuncs; j++) {
        m->gvars[j - 1] = m->gvars[j];
        m->funcs[j - 1] = m->funcs[j];
    }
    m->nfuncs--;
    if (m->nfuncs >= MODULE_INDEX_MIN) index_build(m);  /* positions moved */
    else m->index_ = NULL;
}

void ir_module_set_attr(ir_module *m, const char *key, ir_attr val) {
    m->attrs = ir_attrs_set(m->ctx, m->attrs, key, val);
}
