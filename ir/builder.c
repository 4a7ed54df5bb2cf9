/* Block builder and normalizer: struct info inference for every expression kind and A-normal
 * form inside a builder (nested non-leaf args are bound to fresh vars that keep their span). */
#include "ir/builder.h"

#include <string.h>

#include "ir/ctx_impl.h"
#include "ir/op.h"

typedef GR_VEC(ir_binding) binding_vec;
typedef GR_VEC(const ir_block *) block_vec;

struct ir_bb {
    ir_ctx_t *ctx;
    gr_diag *diag;
    const ir_module *mod;
    bool open;              /* a block is open */
    bool dataflow;          /* ... and it is a dataflow block */
    binding_vec cur;        /* bindings of the open block (heap until end_block) */
    block_vec blocks;       /* closed blocks since the last finish */
};

/* One normalization: bb non-NULL puts args in A-normal form by emitting into it. */
typedef struct norm_ctx {
    ir_ctx_t *ctx;
    const ir_module *mod;
    gr_diag *diag;
    ir_bb_t *bb;
} norm_ctx;

static void *type_error(gr_diag *diag, const ir_span *span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void *type_error(gr_diag *diag, const ir_span *span, const char *fmt, ...) {
    if (diag && diag->code == GR_OK) {
        va_list ap;
        va_start(ap, fmt);
        gr_vfail(diag, GR_ERR_TYPE, ir_span_layer(span), NULL, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

/* ---- StructInfoLCA ---- */

static bool same_dims(const ir_sinfo *a, const ir_sinfo *b) {
    if (a->ndim != b->ndim || !a->dims || !b->dims) return false;
    for (int32_t i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

const ir_sinfo *ir_sinfo_lca(ir_ctx_t *ctx, const ir_sinfo *a, const ir_sinfo *b) {
    if (a == b) return a;
    if (!a || !b || a->kind != b->kind) return ir_sinfo_object(ctx);
    switch ((ir_sinfo_kind)a->kind) {
    case IR_SINFO_OBJECT: return a;
    case IR_SINFO_PRIM: {
        ir_dtype t = ir_dtype_eq(a->dtype, b->dtype) ? a->dtype : IR_DTYPE_VOID;
        return ir_sinfo_prim(ctx, t, a->value == b->value ? a->value : NULL);
    }
    case IR_SINFO_SHAPE:
    case IR_SINFO_TENSOR: {
        int32_t ndim = a->ndim == b->ndim ? a->ndim : -1;
        const ir_prim *const *dims = same_dims(a, b) ? a->dims : NULL;
        if (a->kind == IR_SINFO_SHAPE) return ir_sinfo_shape(ctx, ndim, dims);
        ir_dtype t = ir_dtype_eq(a->dtype, b->dtype) ? a->dtype : IR_DTYPE_VOID;
        return ir_sinfo_tensor(ctx, t, ndim, dims);
    }
    case IR_SINFO_TUPLE: {
        if (a->n != b->n) return ir_sinfo_object(ctx);
        const ir_sinfo **f = gr_xmalloc(sizeof(*f) * (a->n + 1));
        for (uint32_t i = 0; i < a->n; i++) f[i] = ir_sinfo_lca(ctx, a->fields[i], b->fields[i]);
        const ir_sinfo *r = ir_sinfo_tuple(ctx, a->n, f);
        free(f);
        return r;
    }
    case IR_SINFO_FUNC:
        /* Params would need the greatest lower bound; keep only the common return. */
        return ir_sinfo_func_opaque(ctx, ir_sinfo_lca(ctx, a->ret, b->ret));
    }
    return ir_sinfo_object(ctx);
}

/* ---- Call return derivation (DeriveCallRetStructInfo, best effort) ---- */

static void add_var(const ir_prim *v, void *user) { gr_map_put(user, GR_MAP_PTR(v), 1); }

static void collect_vars(const ir_sinfo *s, gr_map *set) {
    if (!s) return;
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_PRIM:
        if (s->value) ir_prim_visit_vars(s->value, add_var, set);
        return;
    case IR_SINFO_SHAPE:
    case IR_SINFO_TENSOR:
        if (s->dims)
            for (int32_t i = 0; i < s->ndim; i++) ir_prim_visit_vars(s->dims[i], add_var, set);
        return;
    case IR_SINFO_TUPLE:
        for (uint32_t i = 0; i < s->n; i++) collect_vars(s->fields[i], set);
        return;
    default:
        return;
    }
}

/* Binds a param dim against an arg dim; false when both are known constants that differ. */
static bool match_dim(ir_ctx_t *ctx, const ir_prim *p, const ir_prim *a, gr_map *bind) {
    if (p->kind == IR_PRIM_VAR) {
        uint64_t prev;
        if (!gr_map_get(bind, GR_MAP_PTR(p), &prev)) {
            gr_map_put(bind, GR_MAP_PTR(p), GR_MAP_PTR(a));
            return true;
        }
        p = (const ir_prim *)(uintptr_t)prev;
    } else if (bind->len) {
        p = ir_prim_subst(ctx, p, bind);
    }
    int64_t x, y;
    return !(ir_prim_is_int(p, &x) && ir_prim_is_int(a, &y) && x != y);
}

/* Matches a param's struct info with an arg's; false on a definite mismatch. */
static bool match_sinfo(ir_ctx_t *ctx, const ir_sinfo *p, const ir_sinfo *a, gr_map *bind) {
    if (p == a) {
        /* the same struct info (hash-consed): its vars stand for themselves, e.g. a local
         * function whose params use the enclosing function's symbolic dims */
        gr_map own;
        gr_map_init(&own);
        collect_vars(p, &own);
        for (uint32_t i = 0; i < own.cap; i++)
            if (own.keys[i] && !gr_map_get(bind, own.keys[i], NULL)) gr_map_put(bind, own.keys[i], own.keys[i]);
        gr_map_free(&own);
        return true;
    }
    if (p->kind == IR_SINFO_OBJECT || a->kind == IR_SINFO_OBJECT) return true;
    if (p->kind != a->kind) return false;
    switch ((ir_sinfo_kind)p->kind) {
    case IR_SINFO_PRIM:
        if (!ir_dtype_is_void(p->dtype) && !ir_dtype_is_void(a->dtype) &&
            !ir_dtype_eq(p->dtype, a->dtype))
            return false;
        return !(p->value && a->value) || match_dim(ctx, p->value, a->value, bind);
    case IR_SINFO_TENSOR:
        if (!ir_dtype_is_void(p->dtype) && !ir_dtype_is_void(a->dtype) &&
            !ir_dtype_eq(p->dtype, a->dtype))
            return false;
        __attribute__((fallthrough));
    case IR_SINFO_SHAPE:
        if (p->ndim >= 0 && a->ndim >= 0 && p->ndim != a->ndim) return false;
        if (p->dims && a->dims && p->ndim == a->ndim)
            for (int32_t i = 0; i < p->ndim; i++)
                if (!match_dim(ctx, p->dims[i], a->dims[i], bind)) return false;
        return true;
    case IR_SINFO_TUPLE:
        if (p->n != a->n) return false;
        for (uint32_t i = 0; i < p->n; i++)
            if (!match_sinfo(ctx, p->fields[i], a->fields[i], bind)) return false;
        return true;
    default:
        return true;
    }
}

typedef struct leak_check {
    const gr_map *callee_vars, *bind;
    bool leaks;
} leak_check;

static void check_leak(const ir_prim *v, void *user) {
    leak_check *lc = user;
    if (gr_map_get(lc->callee_vars, GR_MAP_PTR(v), NULL) && !gr_map_get(lc->bind, GR_MAP_PTR(v), NULL))
        lc->leaks = true;
}

static bool prim_leaks(const ir_prim *p, const gr_map *callee_vars, const gr_map *bind) {
    leak_check lc = {callee_vars, bind, false};
    ir_prim_visit_vars(p, check_leak, &lc);
    return lc.leaks;
}

/* Erases parts of the return that still mention callee vars the args did not bind (they would
 * be undefined in the caller), as TVM's EraseToWellDefined. */
static const ir_sinfo *erase_unbound(ir_ctx_t *ctx, const ir_sinfo *s, const gr_map *callee_vars,
                                     const gr_map *bind) {
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_PRIM:
        if (s->value && prim_leaks(s->value, callee_vars, bind)) return ir_sinfo_prim(ctx, s->dtype, NULL);
        return s;
    case IR_SINFO_SHAPE:
    case IR_SINFO_TENSOR:
        if (s->dims)
            for (int32_t i = 0; i < s->ndim; i++)
                if (prim_leaks(s->dims[i], callee_vars, bind))
                    return s->kind == IR_SINFO_SHAPE ? ir_sinfo_shape(ctx, s->ndim, NULL)
                                                     : ir_sinfo_tensor(ctx, s->dtype, s->ndim, NULL);
        return s;
    case IR_SINFO_TUPLE: {
        const ir_sinfo **f = gr_xmalloc(sizeof(*f) * (s->n + 1));
        bool changed = false;
        for (uint32_t i = 0; i < s->n; i++) {
            f[i] = erase_unbound(ctx, s->fields[i], callee_vars, bind);
            changed |= f[i] != s->fields[i];
        }
        const ir_sinfo *r = changed ? ir_sinfo_tuple(ctx, s->n, f) : s;
        free(f);
        return r;
    }
    default:
        return s;
    }
}

static const ir_sinfo *derive_ret(ir_ctx_t *ctx, const ir_sinfo *fs, const ir_call *call,
                                  const char *callee_name, gr_diag *diag) {
    if (fs->opaque) return fs->ret;
    if (fs->n != call->nargs)
        return type_error(diag, call->base.span, "call of %s: expected %u arguments, got %u",
                          callee_name, fs->n, call->nargs);
    gr_map bind, callee_vars;
    gr_map_init(&bind);
    gr_map_init(&callee_vars);
    const ir_sinfo *ret = fs->ret;
    for (uint32_t i = 0; i < fs->n; i++) {
        collect_vars(fs->fields[i], &callee_vars);
        if (!match_sinfo(ctx, fs->fields[i], call->args[i]->sinfo, &bind)) {
            char want[256], got[256];
            ir_sinfo_snprint(fs->fields[i], want, sizeof(want));
            ir_sinfo_snprint(call->args[i]->sinfo, got, sizeof(got));
            ret = type_error(diag, call->base.span, "call of %s: argument %u is %s, expected %s",
                             callee_name, i, got, want);
            goto done;
        }
    }
    ret = ir_sinfo_subst(ctx, ret, &bind);
    if (callee_vars.len) ret = erase_unbound(ctx, ret, &callee_vars, &bind);
done:
    gr_map_free(&bind);
    gr_map_free(&callee_vars);
    return ret;
}

/* Struct info of a global function: the gvar's own, else the module's function. */
static const ir_sinfo *gvar_sinfo(ir_ctx_t *ctx, const ir_module *m, const ir_gvar *g) {
    if (g->base.sinfo && g->base.sinfo->kind == IR_SINFO_FUNC) return g->base.sinfo;
    if (!m) return NULL;
    const ir_func *f = ir_module_func(m, g->name);
    if (!f) return NULL;
    if (f->base.sinfo && f->base.sinfo->kind == IR_SINFO_FUNC) return f->base.sinfo;
    for (uint32_t i = 0; i < f->nparams; i++)
        if (!f->params[i]->base.sinfo) return NULL;
    if (!f->ret_sinfo && !(f->body && f->body->sinfo)) return NULL;
    return ir_func_sinfo(ctx, f);
}

static const ir_sinfo *sinfo_args_result(ir_ctx_t *ctx, const ir_call *call) {
    if (call->nsinfo_args == 0) return ir_sinfo_object(ctx);
    if (call->nsinfo_args == 1) return call->sinfo_args[0];
    return ir_sinfo_tuple(ctx, call->nsinfo_args, call->sinfo_args);
}

const ir_sinfo *ir_infer_call_in(ir_ctx_t *ctx, const ir_module *m, const ir_call *call,
                                 gr_diag *diag) {
    const ir_expr *callee = call->callee;
    if (callee->kind == IR_OP) {
        /* The op table checks arity and args (call-like ops: the sinfo_args give the result). */
        const ir_op_def *def = ((const ir_op *)callee)->def;
        /* Binary arithmetic's result is a pure function of the two arg struct infos (no attrs,
         * arena-lived and immutable): a one-entry memo skips re-inference on long chains. */
        bool memo = def->infer == ir__infer_binary_arith && call->nargs == 2 && call->args[0] &&
                    call->args[1] && call->args[0]->sinfo && call->args[1]->sinfo;
        if (memo && ctx->bin_memo_r && ctx->bin_memo_a == call->args[0]->sinfo &&
            ctx->bin_memo_b == call->args[1]->sinfo)
            return ctx->bin_memo_r;
        const ir_sinfo *s = ir_op_infer(ctx, call, diag);
        if (s && memo) {
            ctx->bin_memo_a = call->args[0]->sinfo;
            ctx->bin_memo_b = call->args[1]->sinfo;
            ctx->bin_memo_r = s;
        }
        if (!s) {
            gr_diag_set_op(diag, def->text_name);
            gr_diag_set_layer(diag, ir_span_layer(call->base.span));
            if (diag && diag->code == GR_OK)
                gr_diag_set(diag, GR_ERR_TYPE, "cannot infer struct info of %s", def->text_name);
        }
        return s;
    }
    for (uint32_t i = 0; i < call->nargs; i++)
        if (!call->args[i]->sinfo)
            return type_error(diag, call->base.span, "call argument %u (%s) has no struct info", i,
                              ir_expr_kind_name(call->args[i]->kind));
    switch (callee->kind) {
    case IR_GVAR: {
        const ir_gvar *g = (const ir_gvar *)callee;
        const ir_sinfo *fs = gvar_sinfo(ctx, m, g);
        if (!fs)
            return type_error(diag, call->base.span,
                              m && !ir_module_func(m, g->name)
                                  ? "call of undefined global function @%s"
                                  : "cannot resolve the return struct info of @%s",
                              g->name);
        char name[300];
        snprintf(name, sizeof(name), "@%s", g->name);
        return derive_ret(ctx, fs, call, name, diag);
    }
    case IR_EXTERN:
        return sinfo_args_result(ctx, call);
    default: {
        const ir_sinfo *fs = callee->sinfo;
        if (!fs)
            return type_error(diag, call->base.span, "callee (%s) has no struct info",
                              ir_expr_kind_name(callee->kind));
        if (fs->kind == IR_SINFO_OBJECT) return sinfo_args_result(ctx, call);
        if (fs->kind != IR_SINFO_FUNC)
            return type_error(diag, call->base.span, "callee (%s) is not callable",
                              ir_expr_kind_name(callee->kind));
        const char *nm = ir_is_var(callee) ? ((const ir_var *)callee)->name : "a local function";
        return derive_ret(ctx, fs, call, nm, diag);
    }
    }
}

/* ---- Normalizer ---- */

static ir_expr *norm(norm_ctx *nc, ir_expr *e);
static ir_var *bb_bind(ir_bb_t *bb, ir_expr *value, const char *name, bool output,
                       const ir_sinfo *match);

/* An argument position: normalized, and in a builder bound to a var unless it is a leaf. */
static ir_expr *norm_arg(norm_ctx *nc, ir_expr *e) {
    ir_expr *r = norm(nc, e);
    if (!r || !nc->bb || ir_is_leaf(r)) return r;
    return (ir_expr *)bb_bind(nc->bb, r, NULL, false, NULL);
}

static const ir_sinfo *set_sinfo(ir_expr *e, const ir_sinfo *s) {
    if (s && !e->sinfo) ir_expr_set_sinfo(e, s);
    return s;
}

/* Fills binding vars and values of one seq (outside ANF: inner seqs are normalized in place). */
static bool norm_seq_blocks(norm_ctx *nc, ir_seq *s) {
    for (uint32_t i = 0; i < s->nblocks; i++) {
        const ir_block *blk = s->blocks[i];
        for (uint32_t j = 0; j < blk->n; j++) {
            const ir_binding *b = &blk->bindings[j];
            if (!norm(nc, b->value)) return false;
            if (b->value->sinfo == NULL)
                return type_error(nc->diag, b->value->span, "binding of '%s' has no struct info",
                                  b->var->name),
                       false;
            if (!b->var->base.sinfo)
                ir_expr_set_sinfo(&b->var->base, b->match_sinfo ? b->match_sinfo : b->value->sinfo);
        }
    }
    return true;
}

static ir_expr *norm_call(norm_ctx *nc, ir_call *c) {
    ir_expr *callee = norm(nc, c->callee);
    if (!callee) return NULL;
    ir_expr *stack_args[16];
    ir_expr **args = c->nargs <= 16 ? stack_args : gr_xmalloc(sizeof(*args) * c->nargs);
    bool changed = callee != c->callee;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < c->nargs; i++) {
        args[i] = norm_arg(nc, c->args[i]);
        if (!args[i]) goto out;
        changed |= args[i] != c->args[i];
    }
    ir_call *r = c;
    if (changed) {
        r = ir_call_new(nc->ctx, callee, c->nargs, args, c->attrs, c->nsinfo_args, c->sinfo_args,
                        c->base.span);
        r->base.sinfo = c->base.sinfo; /* same meaning: args were only bound to vars */
    }
    if (!r->base.sinfo) {
        const ir_sinfo *s = ir_infer_call_in(nc->ctx, nc->mod, r, nc->diag);
        if (!s) goto out;
        ir_expr_set_sinfo(&r->base, s);
    }
    result = &r->base;
out:
    if (args != stack_args) free(args);
    return result;
}

static ir_expr *norm_tuple(norm_ctx *nc, ir_tuple *t) {
    ir_expr *stack_f[16];
    ir_expr **f = t->n <= 16 ? stack_f : gr_xmalloc(sizeof(*f) * t->n);
    const ir_sinfo *stack_s[16];
    const ir_sinfo **fs = t->n <= 16 ? stack_s : gr_xmalloc(sizeof(*fs) * t->n);
    bool changed = false;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < t->n; i++) {
        f[i] = norm_arg(nc, t->fields[i]);
        if (!f[i]) goto out;
        changed |= f[i] != t->fields[i];
        fs[i] = f[i]->sinfo;
    }
    ir_tuple *r = t;
    if (changed) {
        r = ir_tuple_new(nc->ctx, t->n, f, t->base.span);
        r->base.sinfo = t->base.sinfo;
    }
    if (!r->base.sinfo) ir_expr_set_sinfo(&r->base, ir_sinfo_tuple(nc->ctx, t->n, fs));
    result = &r->base;
out:
    if (f != stack_f) free(f);
    if (fs != stack_s) free(fs);
    return result;
}

static ir_expr *norm_tgi(norm_ctx *nc, ir_tgi *g) {
    ir_expr *tup = norm_arg(nc, g->tuple);
    if (!tup) return NULL;
    ir_tgi *r = g;
    if (tup != g->tuple) {
        r = ir_tgi_new(nc->ctx, tup, g->index, g->base.span);
        r->base.sinfo = g->base.sinfo;
    }
    if (r->base.sinfo) return &r->base;
    const ir_sinfo *ts = tup->sinfo;
    if (ts->kind == IR_SINFO_OBJECT) return ir_expr_set_sinfo(&r->base, ts), &r->base;
    if (ts->kind != IR_SINFO_TUPLE) {
        char buf[256];
        ir_sinfo_snprint(ts, buf, sizeof(buf));
        return type_error(nc->diag, g->base.span, "tuple item [%d] of a non-tuple value (%s)",
                          g->index, buf);
    }
    if (g->index < 0 || (uint32_t)g->index >= ts->n)
        return type_error(nc->diag, g->base.span, "tuple index %d out of range for a tuple of %u",
                          g->index, ts->n);
    ir_expr_set_sinfo(&r->base, ts->fields[g->index]);
    return &r->base;
}

static ir_expr *norm(norm_ctx *nc, ir_expr *e) {
    if (!e) return type_error(nc->diag, NULL, "missing expression");
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        if (!e->sinfo)
            return type_error(nc->diag, e->span, "var '%s' has no struct info", ((ir_var *)e)->name);
        return e;
    case IR_CALL: return norm_call(nc, (ir_call *)e);
    case IR_TUPLE: return norm_tuple(nc, (ir_tuple *)e);
    case IR_TGI: return norm_tgi(nc, (ir_tgi *)e);
    default: break;
    }
    if (e->sinfo) return e;
    /* Scoped kinds: their insides are normalized in place, never into the enclosing builder. */
    norm_ctx inner = *nc;
    inner.bb = NULL;
    switch ((ir_expr_kind)e->kind) {
    case IR_GVAR: {
        const ir_sinfo *s = gvar_sinfo(nc->ctx, nc->mod, (ir_gvar *)e);
        if (s) set_sinfo(e, s);
        return e; /* a gvar not in the module stays without struct info (checked on call) */
    }
    case IR_SEQ: {
        ir_seq *s = (ir_seq *)e;
        if (!norm_seq_blocks(&inner, s) || !norm(&inner, s->body)) return NULL;
        set_sinfo(e, s->body->sinfo);
        return e;
    }
    case IR_IF: {
        ir_if *x = (ir_if *)e;
        if (!norm(&inner, x->cond) || !norm(&inner, x->then_branch) || !norm(&inner, x->else_branch))
            return NULL;
        set_sinfo(e, ir_sinfo_lca(nc->ctx, x->then_branch->sinfo, x->else_branch->sinfo));
        return e;
    }
    case IR_FUNC: {
        ir_func *f = (ir_func *)e;
        for (uint32_t i = 0; i < f->nparams; i++)
            if (!f->params[i]->base.sinfo)
                return type_error(nc->diag, f->params[i]->base.span,
                                  "function parameter '%s' has no struct info", f->params[i]->name);
        if (!norm(&inner, f->body)) return NULL;
        set_sinfo(e, ir_func_sinfo(nc->ctx, f));
        return e;
    }
    case IR_OP: set_sinfo(e, ir_sinfo_object(nc->ctx)); return e;
    case IR_EXTERN: set_sinfo(e, ir_sinfo_func_opaque(nc->ctx, NULL)); return e;
    case IR_STR: set_sinfo(e, ir_sinfo_object(nc->ctx)); return e;
    case IR_SHAPE: {
        ir_shape_expr *s = (ir_shape_expr *)e;
        set_sinfo(e, ir_sinfo_shape(nc->ctx, (int32_t)s->n, s->dims));
        return e;
    }
    case IR_PRIMVAL: {
        ir_primval *p = (ir_primval *)e;
        set_sinfo(e, ir_sinfo_prim(nc->ctx, p->dtype, p->value));
        return e;
    }
    default:
        return type_error(nc->diag, e->span, "cannot normalize a %s without struct info",
                          ir_expr_kind_name(e->kind));
    }
}

ir_expr *ir_normalize_in(ir_ctx_t *ctx, const ir_module *m, ir_expr *e, gr_diag *diag) {
    norm_ctx nc = {ctx, m, diag, NULL};
    return norm(&nc, e);
}

ir_expr *ir_normalize(ir_ctx_t *ctx, ir_expr *e, gr_diag *diag) {
    return ir_normalize_in(ctx, NULL, e, diag);
}

/* ---- Block builder ---- */

ir_bb_t *ir_bb_new(ir_ctx_t *ctx, gr_diag *diag) {
    ir_bb_t *bb = gr_xcalloc(1, sizeof(*bb));
    bb->ctx = ctx;
    bb->diag = diag;
    return bb;
}

void ir_bb_free(ir_bb_t *bb) {
    if (!bb) return;
    gr_vec_free(&bb->cur);
    gr_vec_free(&bb->blocks);
    free(bb);
}

void ir_bb_set_module(ir_bb_t *bb, const ir_module *m) { bb->mod = m; }

const ir_block *ir_bb_end_block(ir_bb_t *bb) {
    if (!bb->open) return NULL;
    bb->open = false;
    if (bb->cur.len == 0) return NULL;
    ir_block *blk;
    if (bb->cur.len >= 4096) {
        /* A big block keeps the heap vector (trimmed; for big ones realloc remaps, no copy):
         * copying it to the arena would hold two copies at the parse's memory peak. */
        blk = IR_NEW(bb->ctx, ir_block);
        blk->dataflow = bb->dataflow;
        blk->n = bb->cur.len;
        size_t size = sizeof(ir_binding) * bb->cur.len;
        ir_binding *keep = gr_xrealloc(bb->cur.data, size);
        ir__ctx_adopt(bb->ctx, keep, size);
        blk->bindings = keep;
        bb->cur.data = NULL;
        bb->cur.cap = 0;
    } else {
        blk = ir_block_new(bb->ctx, bb->dataflow, bb->cur.len, bb->cur.data);
    }
    bb->cur.len = 0;
    gr_vec_push(&bb->blocks, (const ir_block *)blk);
    return blk;
}

static void begin(ir_bb_t *bb, bool dataflow) {
    ir_bb_end_block(bb);
    bb->open = true;
    bb->dataflow = dataflow;
}

void ir_bb_begin_dataflow(ir_bb_t *bb) { begin(bb, true); }
void ir_bb_begin_block(ir_bb_t *bb) { begin(bb, false); }

/* Appends a binding of a normalized value to a fresh var named from `name`. */
static ir_var *bb_bind(ir_bb_t *bb, ir_expr *value, const char *name, bool output,
                       const ir_sinfo *match) {
    if (!bb->open) begin(bb, false);
    bool df = bb->dataflow && !output;
    if (!name) name = bb->dataflow ? "lv" : "gv";
    const ir_sinfo *s = match ? match : value->sinfo;
    ir_var *v = df ? ir_dfvar_new(bb->ctx, name, s, value->span)
                   : ir_var_new(bb->ctx, name, s, value->span);
    ir_binding b = {v, value, match};
    gr_vec_push(&bb->cur, b);
    return v;
}

static ir_expr *bb_norm(ir_bb_t *bb, ir_expr *value) {
    if (bb->diag && bb->diag->code != GR_OK) return NULL; /* an earlier error stands */
    if (!bb->open) begin(bb, false); /* nested bindings land in the block of their user */
    norm_ctx nc = {bb->ctx, bb->mod, bb->diag, bb};
    return norm(&nc, value);
}

ir_var *ir_bb_emit(ir_bb_t *bb, ir_expr *value, const char *name_hint) {
    ir_expr *v = bb_norm(bb, value);
    return v ? bb_bind(bb, v, name_hint, false, NULL) : NULL;
}

ir_var *ir_bb_emit_output(ir_bb_t *bb, ir_expr *value, const char *name_hint) {
    ir_expr *v = bb_norm(bb, value);
    return v ? bb_bind(bb, v, name_hint, true, NULL) : NULL;
}

ir_var *ir_bb_emit_match_cast(ir_bb_t *bb, ir_expr *value, const ir_sinfo *sinfo,
                              const char *name_hint) {
    if (!sinfo) return type_error(bb->diag, value ? value->span : NULL, "match_cast without struct info");
    ir_expr *v = bb_norm(bb, value);
    return v ? bb_bind(bb, v, name_hint, false, sinfo) : NULL;
}

ir_expr *ir_bb_normalize(ir_bb_t *bb, ir_expr *value) { return bb_norm(bb, value); }

void ir_bb_emit_normalized(ir_bb_t *bb, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo) {
    if (!bb->open) begin(bb, false);
    if (!var->base.sinfo) ir_expr_set_sinfo(&var->base, match_sinfo ? match_sinfo : value->sinfo);
    ir_binding b = {var, value, match_sinfo};
    gr_vec_push(&bb->cur, b);
}

bool ir_bb_emit_to(ir_bb_t *bb, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo) {
    ir_expr *v = bb_norm(bb, value);
    if (!v) return false;
    ir_bb_emit_normalized(bb, var, v, match_sinfo);
    return true;
}

ir_seq *ir_bb_finish(ir_bb_t *bb, ir_expr *body, const ir_span *span) {
    ir_expr *b = body ? bb_norm(bb, body) : NULL;
    ir_bb_end_block(bb);
    if (!b) {
        if (!body) type_error(bb->diag, span, "sequence without a result");
        bb->blocks.len = 0;
        return NULL;
    }
    ir_seq *s = ir_seq_new(bb->ctx, bb->blocks.len, bb->blocks.data, b, span);
    ir_expr_set_sinfo(&s->base, b->sinfo);
    bb->blocks.len = 0;
    return s;
}
