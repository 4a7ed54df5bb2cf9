/* Well-formedness checker: one pass per function with a scope map for vars, a set of defined
 * symbolic dim vars, and a cache of struct info already checked against that set. Bindings are
 * loops, so only expression nesting recurses. */
#include "ir/wellformed.h"

#include <stdarg.h>
#include <string.h>

#include "ir/idtab_impl.h"
#include "ir/op.h"

/* State of a var in the id table: scope bits (OUT = not visible) and a defined-once bit. */
enum { OUT = 0, IN_SCOPE = 1, IN_DATAFLOW = 2, SCOPE_MASK = 3, DEFINED = 4 };

typedef struct wf {
    const ir_module *m;
    ir_ctx_t *ctx;
    gr_diag *diag;
    const char *fname;
    ir_idtab vars;                  /* var id -> DEFINED (module-wide) | scope state */
    GR_VEC(uint64_t) stack;         /* vars in scope, innermost last: id << 8 | kind (the
                                       passes that take them out of scope read no var: on big
                                       functions those would be cache misses) */
    gr_map sym;                     /* symbolic var -> 1 while defined */
    GR_VEC(const ir_prim *) symstack;
    gr_map sinfo_ok;                /* sinfo -> epoch in which all its vars were defined */
    uint64_t epoch;
    const ir_expr *cur_func;        /* the module-level function (its node may lack sinfo) */
} wf;

static bool wf_err(wf *w, const ir_var *v, const ir_span *span, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool wf_err(wf *w, const ir_var *v, const ir_span *span, const char *fmt, ...) {
    if (!w->diag || w->diag->code != GR_OK) return false;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!span && v) span = v->base.span;
    const char *layer = ir_span_layer(span);
    char var[300] = "";
    if (v) snprintf(var, sizeof(var), "var '%s': ", v->name);
    char lay[300] = "";
    if (layer) snprintf(lay, sizeof(lay), " (layer '%s')", layer);
    gr_fail(w->diag, GR_ERR_WELLFORMED, layer, NULL, "function '%s': %s%s%s", w->fname ? w->fname : "?",
            var, msg, lay);
    return false;
}

/* ---- symbolic vars ---- */

static void def_sym(const ir_prim *v, void *user) {
    wf *w = user;
    if (gr_map_get_or(&w->sym, GR_MAP_PTR(v), 0)) return;
    gr_map_put(&w->sym, GR_MAP_PTR(v), 1);
    gr_vec_push(&w->symstack, v);
}

static void sinfo_vars(const ir_sinfo *s, void (*fn)(const ir_prim *, void *), void *user) {
    if (!s) return;
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_PRIM:
        if (s->value) ir_prim_visit_vars(s->value, fn, user);
        return;
    case IR_SINFO_SHAPE:
    case IR_SINFO_TENSOR:
        if (s->dims)
            for (int32_t i = 0; i < s->ndim; i++) ir_prim_visit_vars(s->dims[i], fn, user);
        return;
    case IR_SINFO_TUPLE:
        for (uint32_t i = 0; i < s->n; i++) sinfo_vars(s->fields[i], fn, user);
        return;
    case IR_SINFO_FUNC:
        /* A callable's own params define its vars; only its return can leak ours. */
        return;
    case IR_SINFO_OBJECT:
        return;
    }
}

typedef struct sym_check {
    wf *w;
    const ir_prim *bad;
} sym_check;

static void check_sym(const ir_prim *v, void *user) {
    sym_check *c = user;
    if (!c->bad && !gr_map_get_or(&c->w->sym, GR_MAP_PTR(v), 0)) c->bad = v;
}

static bool sinfo_syms_ok(wf *w, const ir_sinfo *s, const ir_var *v, const ir_span *span) {
    if (!s || s->kind == IR_SINFO_OBJECT) return true;
    if (gr_map_get_or(&w->sinfo_ok, GR_MAP_PTR(s), 0) == w->epoch) return true;
    sym_check c = {w, NULL};
    sinfo_vars(s, check_sym, &c);
    if (c.bad) {
        char buf[256];
        ir_sinfo_snprint(s, buf, sizeof(buf));
        return wf_err(w, v, span, "symbolic var '%s' in %s is not defined by a parameter or a "
                      "match_cast before this use", c.bad->name, buf);
    }
    gr_map_put(&w->sinfo_ok, GR_MAP_PTR(s), w->epoch);
    return true;
}

static void pop_syms(wf *w, uint32_t mark) {
    if (w->symstack.len == mark) return;
    while (w->symstack.len > mark) gr_map_put(&w->sym, GR_MAP_PTR(w->symstack.data[--w->symstack.len]), 0);
    w->epoch++; /* fewer vars defined: cached verdicts no longer hold */
}

/* ---- vars ---- */

static bool define_var(wf *w, ir_var *v, bool in_dataflow) {
    if (ir_idtab_get(&w->vars, v->base.id) & DEFINED)
        return wf_err(w, v, NULL, "defined more than once");
    if (!v->base.sinfo) return wf_err(w, v, NULL, "has no struct info");
    ir_idtab_put(&w->vars, v->base.id, DEFINED | (in_dataflow ? IN_DATAFLOW : IN_SCOPE));
    gr_vec_push(&w->stack, (uint64_t)v->base.id << 8 | v->base.kind);
    return true;
}

static void set_out(wf *w, uint64_t ent) { ir_idtab_put(&w->vars, (uint32_t)(ent >> 8), DEFINED); }

static void pop_vars(wf *w, uint32_t mark) {
    while (w->stack.len > mark) set_out(w, w->stack.data[--w->stack.len]);
}

static bool check_var_use(wf *w, const ir_var *v) {
    uint64_t st = ir_idtab_get(&w->vars, v->base.id);
    if (st & SCOPE_MASK) return true;
    if (!(st & DEFINED))
        return wf_err(w, v, NULL, "used but never defined (or used before its definition)");
    if (v->base.kind == IR_DFVAR) return wf_err(w, v, NULL, "dataflow var used outside its dataflow block");
    return wf_err(w, v, NULL, "used outside the scope of its definition");
}

/* ---- expressions ---- */

static bool check_expr(wf *w, ir_expr *e);
static bool check_func(wf *w, ir_func *f);

static bool check_seq(wf *w, ir_seq *s) {
    uint32_t mark = w->stack.len;
    for (uint32_t i = 0; i < s->nblocks; i++) {
        const ir_block *blk = s->blocks[i];
        uint32_t block_mark = w->stack.len;
        for (uint32_t j = 0; j < blk->n; j++) {
            const ir_binding *b = &blk->bindings[j];
            ir_var *v = b->var;
            if (!v) return wf_err(w, NULL, b->value ? b->value->span : NULL, "binding without a var");
            if (!b->value) return wf_err(w, v, NULL, "binding without a value");
            if (!check_expr(w, b->value)) return false;
            if (v->base.kind == IR_DFVAR && !blk->dataflow)
                return wf_err(w, v, NULL, "a DataflowVar is bound outside a dataflow block");
            if (!define_var(w, v, v->base.kind == IR_DFVAR)) return false;
            if (b->match_sinfo) {
                if (v->base.sinfo != b->match_sinfo)
                    return wf_err(w, v, NULL, "struct info differs from its match_cast's");
                sinfo_vars(b->match_sinfo, def_sym, w);
            } else if (!ir_sinfo_is_base_of(v->base.sinfo, b->value->sinfo)) {
                char vs[256], es[256];
                ir_sinfo_snprint(v->base.sinfo, vs, sizeof(vs));
                ir_sinfo_snprint(b->value->sinfo, es, sizeof(es));
                return wf_err(w, v, NULL, "struct info %s is not a base of its value's %s", vs, es);
            }
            if (!sinfo_syms_ok(w, v->base.sinfo, v, NULL)) return false;
        }
        if (blk->dataflow) /* only R.output (plain) vars escape a dataflow block */
            for (uint32_t k = block_mark; k < w->stack.len; k++)
                if ((w->stack.data[k] & 0xff) == IR_DFVAR) set_out(w, w->stack.data[k]);
    }
    bool ok = check_expr(w, s->body);
    pop_vars(w, mark);
    return ok;
}

static bool check_call(wf *w, ir_call *c) {
    if (!check_expr(w, c->callee)) return false;
    for (uint32_t i = 0; i < c->nargs; i++)
        if (!check_expr(w, c->args[i])) return false;
    for (uint32_t i = 0; i < c->nsinfo_args; i++)
        if (!sinfo_syms_ok(w, c->sinfo_args[i], NULL, c->base.span)) return false;
    if (c->callee->kind != IR_OP) return true;
    const ir_op_def *def = ((ir_op *)c->callee)->def;
    gr_diag d; /* only the fields gr_diag_set* read are cleared: this runs per binding */
    d.code = GR_OK;
    d.msg[0] = d.file[0] = d.layer[0] = d.op[0] = '\0';
    d.line = d.col = 0;
    const ir_sinfo *s = ir_op_infer(w->ctx, c, &d);
    if (!s) return wf_err(w, NULL, c->base.span, "%s does not type-check: %s", def->text_name, d.msg);
    if (s != c->base.sinfo && !ir_sinfo_is_base_of(c->base.sinfo, s)) {
        char want[256], got[256];
        ir_sinfo_snprint(s, want, sizeof(want));
        ir_sinfo_snprint(c->base.sinfo, got, sizeof(got));
        return wf_err(w, NULL, c->base.span, "%s has struct info %s but infers %s", def->text_name,
                      got, want);
    }
    return true;
}

static bool check_expr(wf *w, ir_expr *e) {
    if (!e) return wf_err(w, NULL, NULL, "missing expression");
    if (ir_is_var(e)) return check_var_use(w, (ir_var *)e);
    if (e->kind == IR_GVAR) { /* its struct info, when set, is the callee's signature */
        const ir_gvar *g = (const ir_gvar *)e;
        if (w->m && !ir_module_gvar(w->m, g->name))
            return wf_err(w, NULL, e->span, "global function @%s is not defined in the module", g->name);
        return true;
    }
    if (!e->sinfo && e != w->cur_func)
        return wf_err(w, NULL, e->span, "a %s has no struct info", ir_expr_kind_name(e->kind));
    switch ((ir_expr_kind)e->kind) {
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++)
            if (!check_expr(w, t->fields[i])) return false;
        break;
    }
    case IR_TGI:
        if (!check_expr(w, ((ir_tgi *)e)->tuple)) return false;
        break;
    case IR_CALL:
        if (!check_call(w, (ir_call *)e)) return false;
        break;
    case IR_FUNC:
        return check_func(w, (ir_func *)e);
    case IR_SEQ:
        if (!check_seq(w, (ir_seq *)e)) return false;
        break;
    case IR_IF: {
        ir_if *x = (ir_if *)e;
        if (!check_expr(w, x->cond)) return false;
        if (!x->then_branch || x->then_branch->kind != IR_SEQ || !x->else_branch ||
            x->else_branch->kind != IR_SEQ)
            return wf_err(w, NULL, e->span, "if branches must be SeqExprs");
        if (!check_expr(w, x->then_branch) || !check_expr(w, x->else_branch)) return false;
        break;
    }
    default:
        break;
    }
    return sinfo_syms_ok(w, e->sinfo, NULL, e->span);
}

static bool check_func(wf *w, ir_func *f) {
    uint32_t mark = w->stack.len, symmark = w->symstack.len;
    bool ok = true;
    for (uint32_t i = 0; i < f->nparams && ok; i++) {
        ir_var *p = f->params[i];
        if (!p) ok = wf_err(w, NULL, f->base.span, "parameter %u is missing", i);
        else if (p->base.kind != IR_VAR) ok = wf_err(w, p, NULL, "a parameter must be a plain Var, not a DataflowVar");
        else ok = define_var(w, p, false);
        if (ok) sinfo_vars(p->base.sinfo, def_sym, w);
    }
    if (ok && (!f->body || f->body->kind != IR_SEQ))
        ok = wf_err(w, NULL, f->base.span, "the function body must be a SeqExpr");
    if (ok) ok = check_expr(w, f->body);
    if (ok && f->ret_sinfo) {
        ok = sinfo_syms_ok(w, f->ret_sinfo, NULL, f->base.span);
        if (ok && f->body->sinfo && !ir_sinfo_is_base_of(f->ret_sinfo, f->body->sinfo)) {
            char rs[256], bs[256];
            ir_sinfo_snprint(f->ret_sinfo, rs, sizeof(rs));
            ir_sinfo_snprint(f->body->sinfo, bs, sizeof(bs));
            ok = wf_err(w, NULL, f->base.span, "the body's struct info %s does not fit the declared "
                        "return %s", bs, rs);
        }
    }
    pop_vars(w, mark);
    pop_syms(w, symmark);
    return ok;
}

static void wf_init(wf *w, const ir_module *m, gr_diag *diag) {
    memset(w, 0, sizeof(*w));
    w->m = m;
    w->ctx = m->ctx;
    w->diag = diag;
    w->epoch = 1;
    ir_idtab_init(&w->vars);
    gr_map_init(&w->sym);
    gr_map_init(&w->sinfo_ok);
}

static void wf_free(wf *w) {
    ir_idtab_free(&w->vars);
    gr_map_free(&w->sym);
    gr_map_free(&w->sinfo_ok);
    gr_vec_free(&w->stack);
    gr_vec_free(&w->symstack);
}

static gr_status check_top(wf *w, ir_expr *fe, const char *name) {
    w->fname = name;
    w->cur_func = fe;
    w->epoch++;
    if (!fe) return wf_err(w, NULL, NULL, "missing function"), GR_ERR_WELLFORMED;
    if (fe->kind == IR_EXTERN) return GR_OK;
    if (fe->kind != IR_FUNC) {
        wf_err(w, NULL, fe->span, "a module entry must be a function, not a %s", ir_expr_kind_name(fe->kind));
        return GR_ERR_WELLFORMED;
    }
    return check_func(w, (ir_func *)fe) ? GR_OK : GR_ERR_WELLFORMED;
}

gr_status ir_wellformed_check(const ir_module *m, gr_diag *diag) {
    wf w;
    wf_init(&w, m, diag);
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < m->nfuncs && st == GR_OK; i++) st = check_top(&w, m->funcs[i], m->gvars[i]->name);
    wf_free(&w);
    return st;
}
