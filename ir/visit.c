/* Walker (pre/post-order, CONTINUE/PRUNE/ABORT, each node once) and mutator (post-order
 * rebuild that shares unchanged nodes). Bindings are loops over flat arrays, so only expression
 * nesting recurses: a function with a million bindings walks in constant stack. */
#include "ir/visit.h"

#include <string.h>

#include "ir/builder.h"
#include "ir/idtab_impl.h"

/* ---- Walker ---- */

typedef struct walk_st {
    ir_walker *w;
    uint64_t *seen;   /* bit per expression id (ids are dense per context) */
    uint32_t nwords;
} walk_st;

/* Marks id; returns false when it was already marked. */
static bool mark_new(walk_st *st, uint32_t id) {
    uint32_t word = id >> 6;
    if (word >= st->nwords) {
        uint32_t n = st->nwords ? st->nwords : 64;
        while (n <= word) n *= 2;
        st->seen = gr_xrealloc(st->seen, sizeof(uint64_t) * n);
        memset(st->seen + st->nwords, 0, sizeof(uint64_t) * (n - st->nwords));
        st->nwords = n;
    }
    uint64_t bit = 1ull << (id & 63);
    if (st->seen[word] & bit) return false;
    st->seen[word] |= bit;
    return true;
}

static ir_walk_result walk(walk_st *st, ir_expr *e, bool root);

#define WALK(st, x)                                                          \
    do {                                                                     \
        if (walk((st), (x), false) == IR_WALK_ABORT) return IR_WALK_ABORT;   \
    } while (0)

static ir_walk_result walk_seq(walk_st *st, ir_seq *s) {
    ir_walker *w = st->w;
    for (uint32_t i = 0; i < s->nblocks; i++) {
        const ir_block *blk = s->blocks[i];
        for (uint32_t j = 0; j < blk->n; j++) {
            const ir_binding *b = &blk->bindings[j];
            if (w->visit_binding) {
                ir_walk_result r = w->visit_binding(w, b, blk);
                if (r == IR_WALK_ABORT) return r;
                if (r == IR_WALK_PRUNE) continue;
            }
            WALK(st, b->value);
            WALK(st, &b->var->base);
        }
    }
    WALK(st, s->body);
    return IR_WALK_CONTINUE;
}

static ir_walk_result walk(walk_st *st, ir_expr *e, bool root) {
    if (!e || !mark_new(st, e->id)) return IR_WALK_CONTINUE;
    ir_walker *w = st->w;
    if (w->visit_expr) {
        ir_walk_result r = w->visit_expr(w, e);
        if (r == IR_WALK_ABORT) return r;
        if (r == IR_WALK_PRUNE) return IR_WALK_CONTINUE;
    }
    switch ((ir_expr_kind)e->kind) {
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) WALK(st, t->fields[i]);
        break;
    }
    case IR_TGI: WALK(st, ((ir_tgi *)e)->tuple); break;
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        WALK(st, c->callee);
        for (uint32_t i = 0; i < c->nargs; i++) WALK(st, c->args[i]);
        break;
    }
    case IR_FUNC: {
        ir_func *f = (ir_func *)e;
        if (!root && w->skip_local_funcs) break;
        for (uint32_t i = 0; i < f->nparams; i++) WALK(st, &f->params[i]->base);
        WALK(st, f->body);
        break;
    }
    case IR_SEQ:
        if (walk_seq(st, (ir_seq *)e) == IR_WALK_ABORT) return IR_WALK_ABORT;
        break;
    case IR_IF: {
        ir_if *x = (ir_if *)e;
        WALK(st, x->cond);
        WALK(st, x->then_branch);
        WALK(st, x->else_branch);
        break;
    }
    default:
        break;
    }
    if (w->leave_expr) w->leave_expr(w, e);
    return IR_WALK_CONTINUE;
}

ir_walk_result ir_walk_expr(ir_walker *w, ir_expr *e) {
    walk_st st = {w, NULL, 0};
    ir_walk_result r = walk(&st, e, true);
    free(st.seen);
    return r == IR_WALK_ABORT ? IR_WALK_ABORT : IR_WALK_CONTINUE;
}

ir_walk_result ir_walk_module(ir_walker *w, const ir_module *m) {
    walk_st st = {w, NULL, 0};
    ir_walk_result r = IR_WALK_CONTINUE;
    for (uint32_t i = 0; i < m->nfuncs && r != IR_WALK_ABORT; i++) r = walk(&st, m->funcs[i], true);
    free(st.seen);
    return r == IR_WALK_ABORT ? IR_WALK_ABORT : IR_WALK_CONTINUE;
}

/* ---- Mutator ---- */

void ir_mutator_init(ir_mutator *m, ir_ctx_t *ctx, gr_diag *diag) {
    memset(m, 0, sizeof(*m));
    m->ctx = ctx;
    m->diag = diag;
    gr_map_init(&m->var_remap);
    m->memo_ = gr_xcalloc(1, sizeof(ir_idtab));
}

void ir_mutator_deinit(ir_mutator *m) {
    gr_map_free(&m->var_remap);
    if (m->memo_) ir_idtab_free(m->memo_);
    free(m->memo_);
    m->memo_ = NULL;
}

void ir_mutator_remap_var(ir_mutator *m, ir_var *from, ir_var *to) {
    gr_map_put(&m->var_remap, GR_MAP_PTR(from), GR_MAP_PTR(to));
}

static ir_expr *fail(ir_mutator *m, const char *what) {
    if (m->diag && m->diag->code == GR_OK)
        gr_diag_set(m->diag, GR_ERR_INVALID, "mutator: %s", what);
    return NULL;
}

static ir_expr *renorm(ir_mutator *m, ir_expr *e) {
    return e->sinfo ? e : ir_normalize_in(m->ctx, m->module, e, m->diag);
}

static ir_expr *mut(ir_mutator *m, ir_expr *e);

bool ir_mutator_emit_binding(ir_mutator *m, const ir_binding *b, ir_expr *new_value,
                             ir_binding_vec *out) {
    ir_var *var = b->var;
    if (!b->match_sinfo && new_value != b->value && new_value->sinfo != b->value->sinfo &&
        new_value->sinfo != var->base.sinfo) {
        var = var->base.kind == IR_DFVAR
                  ? ir_dfvar_new(m->ctx, var->name, new_value->sinfo, var->base.span)
                  : ir_var_new(m->ctx, var->name, new_value->sinfo, var->base.span);
        ir_mutator_remap_var(m, b->var, var);
    }
    ir_binding nb = {var, new_value, b->match_sinfo};
    gr_vec_push(out, nb);
    return true;
}

static ir_expr *mut_seq(ir_mutator *m, ir_seq *s) {
    const ir_block *stack[8];
    const ir_block **nb = s->nblocks <= 8 ? stack : gr_xmalloc(sizeof(*nb) * s->nblocks);
    uint32_t nblocks = 0;
    bool changed = false;
    ir_expr *result = NULL;
    ir_binding_vec out = {0};
    for (uint32_t i = 0; i < s->nblocks; i++) {
        const ir_block *blk = s->blocks[i];
        out.len = 0;
        for (uint32_t j = 0; j < blk->n; j++) {
            const ir_binding *b = &blk->bindings[j];
            ir_expr *nv = mut(m, b->value);
            if (!nv) goto out;
            bool ok = m->rewrite_binding ? m->rewrite_binding(m, b, nv, &out)
                                         : ir_mutator_emit_binding(m, b, nv, &out);
            if (!ok) {
                fail(m, "rewrite_binding failed");
                goto out;
            }
        }
        if (out.len == blk->n && (blk->n == 0 || memcmp(out.data, blk->bindings, sizeof(ir_binding) * blk->n) == 0)) {
            nb[nblocks++] = blk;
        } else {
            changed = true;
            if (out.len) nb[nblocks++] = ir_block_new(m->ctx, blk->dataflow, out.len, out.data);
        }
    }
    ir_expr *body = mut(m, s->body);
    if (!body) goto out;
    if (!changed && body == s->body) {
        result = &s->base;
    } else {
        ir_seq *ns = ir_seq_new(m->ctx, nblocks, nb, body, s->base.span);
        result = renorm(m, &ns->base);
    }
out:
    gr_vec_free(&out);
    if (nb != stack) free(nb);
    return result;
}

static ir_expr *mut_call(ir_mutator *m, ir_call *c) {
    ir_expr *callee = mut(m, c->callee);
    if (!callee) return NULL;
    ir_expr *stack[16];
    ir_expr **args = c->nargs <= 16 ? stack : gr_xmalloc(sizeof(*args) * c->nargs);
    bool changed = callee != c->callee;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < c->nargs; i++) {
        if (!(args[i] = mut(m, c->args[i]))) goto out;
        changed |= args[i] != c->args[i];
    }
    if (!changed) {
        result = &c->base;
    } else {
        ir_call *nc = ir_call_new(m->ctx, callee, c->nargs, args, c->attrs, c->nsinfo_args,
                                  c->sinfo_args, c->base.span);
        result = renorm(m, &nc->base);
    }
out:
    if (args != stack) free(args);
    return result;
}

static ir_expr *mut_tuple(ir_mutator *m, ir_tuple *t) {
    ir_expr *stack[16];
    ir_expr **f = t->n <= 16 ? stack : gr_xmalloc(sizeof(*f) * t->n);
    bool changed = false;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!(f[i] = mut(m, t->fields[i]))) goto out;
        changed |= f[i] != t->fields[i];
    }
    result = changed ? renorm(m, &ir_tuple_new(m->ctx, t->n, f, t->base.span)->base) : &t->base;
out:
    if (f != stack) free(f);
    return result;
}

static ir_expr *mut_func(ir_mutator *m, ir_func *f) {
    ir_var *stack[16];
    ir_var **params = f->nparams <= 16 ? stack : gr_xmalloc(sizeof(*params) * f->nparams);
    bool changed = false;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < f->nparams; i++) {
        uint64_t to;
        params[i] = gr_map_get(&m->var_remap, GR_MAP_PTR(f->params[i]), &to)
                        ? (ir_var *)(uintptr_t)to : f->params[i];
        changed |= params[i] != f->params[i];
    }
    ir_expr *body = mut(m, f->body);
    if (!body) goto out;
    if (!changed && body == f->body) {
        result = &f->base;
    } else {
        /* Keep the declared return while the new body still fits it. */
        const ir_sinfo *ret = f->ret_sinfo;
        if (ret && body->sinfo && !ir_sinfo_is_base_of(ret, body->sinfo)) ret = NULL;
        ir_func *nf = ir_func_new(m->ctx, f->nparams, params, body, ret, f->attrs, f->base.span);
        result = renorm(m, &nf->base);
    }
out:
    if (params != stack) free(params);
    return result;
}

static ir_expr *mut_children(ir_mutator *m, ir_expr *e) {
    switch ((ir_expr_kind)e->kind) {
    case IR_TUPLE: return mut_tuple(m, (ir_tuple *)e);
    case IR_TGI: {
        ir_tgi *g = (ir_tgi *)e;
        ir_expr *t = mut(m, g->tuple);
        if (!t) return NULL;
        return t == g->tuple ? e : renorm(m, &ir_tgi_new(m->ctx, t, g->index, e->span)->base);
    }
    case IR_CALL: return mut_call(m, (ir_call *)e);
    case IR_FUNC: return mut_func(m, (ir_func *)e);
    case IR_SEQ: return mut_seq(m, (ir_seq *)e);
    case IR_IF: {
        ir_if *x = (ir_if *)e;
        ir_expr *c = mut(m, x->cond), *t = c ? mut(m, x->then_branch) : NULL,
                *f = t ? mut(m, x->else_branch) : NULL;
        if (!f) return NULL;
        if (c == x->cond && t == x->then_branch && f == x->else_branch) return e;
        return renorm(m, &ir_if_new(m->ctx, c, t, f, e->span)->base);
    }
    default:
        return e; /* leaves */
    }
}

static ir_expr *mut(ir_mutator *m, ir_expr *e) {
    if (!e) return fail(m, "missing expression");
    uint64_t memo;
    if (ir_is_var(e)) {
        /* Uses follow the remapping; vars are never memoized (the map changes as we go). */
        if (gr_map_get(&m->var_remap, GR_MAP_PTR(e), &memo) && memo) e = (ir_expr *)(uintptr_t)memo;
    } else if ((memo = ir_idtab_get(m->memo_, e->id)) != 0) {
        return (ir_expr *)(uintptr_t)memo;
    }
    ir_expr *r = ir_is_var(e) ? e : mut_children(m, e);
    if (!r) return NULL;
    if (m->post_expr) {
        ir_expr *p = m->post_expr(m, r);
        if (!p) return fail(m, "post_expr failed");
        if (p != r && !(r = renorm(m, p))) return NULL;
    }
    if (!ir_is_var(e)) ir_idtab_put(m->memo_, e->id, GR_MAP_PTR(r));
    return r;
}

ir_expr *ir_mutate_expr(ir_mutator *m, ir_expr *e) { return mut(m, e); }

ir_module *ir_mutate_module(ir_mutator *m, const ir_module *mod) {
    ir_module *out = NULL;
    const ir_module *saved = m->module;
    if (!m->module) m->module = mod;
    for (uint32_t i = 0; i < mod->nfuncs; i++) {
        ir_expr *f = mut(m, mod->funcs[i]);
        if (!f) {
            m->module = saved;
            return NULL;
        }
        if (f != mod->funcs[i]) {
            if (!out) out = ir_module_copy(mod);
            out->funcs[i] = f;
        }
    }
    m->module = saved;
    return out ? out : (ir_module *)(uintptr_t)mod;
}
