/* rewrite_call and rewrite_bindings: rebuild a function's blocks with a block builder (nested
 * replacement expressions land in A-normal form), carry spans over, then clean up with the
 * generic passes (CanonicalizeBindings, EliminateCommonSubexpr, DeadCodeElimination). */
#include "patterns/rewrite.h"

#include <string.h>

#include "ir/builder.h"
#include "ir/transform/si_builder.h"
#include "ir/transform/transform.h"
#include "ir/visit.h"

enum { PAT_MAX_ROUNDS = 64 };

/* ---- var substitution (after a binding had to take a new var) ---- */

static ir_expr *subst(ir_ctx_t *ctx, const gr_map *remap, ir_expr *e, gr_diag *diag) {
    if (!e || !remap->len) return e;
    switch (e->kind) {
    case IR_VAR: case IR_DFVAR: {
        uint64_t v = gr_map_get_or(remap, GR_MAP_PTR(e), 0);
        return v ? (ir_expr *)(uintptr_t)v : e;
    }
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        ir_expr *args[c->nargs + 1];
        bool changed = false;
        for (uint32_t i = 0; i < c->nargs; i++) {
            args[i] = subst(ctx, remap, c->args[i], diag);
            changed |= args[i] != c->args[i];
        }
        ir_expr *callee = subst(ctx, remap, c->callee, diag);
        if (!changed && callee == c->callee) return e;
        return &ir_call_new(ctx, callee, c->nargs, args, c->attrs, c->nsinfo_args, c->sinfo_args,
                            e->span)->base;
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        ir_expr *fs[t->n + 1];
        bool changed = false;
        for (uint32_t i = 0; i < t->n; i++) {
            fs[i] = subst(ctx, remap, t->fields[i], diag);
            changed |= fs[i] != t->fields[i];
        }
        return changed ? &ir_tuple_new(ctx, t->n, fs, e->span)->base : e;
    }
    case IR_TGI: {
        ir_tgi *t = (ir_tgi *)e;
        ir_expr *tu = subst(ctx, remap, t->tuple, diag);
        return tu == t->tuple ? e : &ir_tgi_new(ctx, tu, t->index, e->span)->base;
    }
    case IR_SEQ: case IR_IF: case IR_FUNC: {
        ir_mutator mu;
        ir_mutator_init(&mu, ctx, diag);
        for (uint32_t i = 0; i < remap->cap; i++)
            if (remap->keys[i])
                ir_mutator_remap_var(&mu, (ir_var *)(uintptr_t)remap->keys[i],
                                     (ir_var *)(uintptr_t)remap->vals[i]);
        ir_expr *r = ir_mutate_expr(&mu, e);
        ir_mutator_deinit(&mu);
        return r;
    }
    default:
        return e;
    }
}

/* ---- spans ---- */

static const ir_span *binding_span(const ir_binding *b) {
    return b->value->span ? b->value->span : b->var->base.span;
}

/* SequentialSpan of bindings in block order; output marks kept only for `keep` (NULL: none). */
static const ir_span *seq_span(ir_ctx_t *ctx, const ir_binding *const *bs, uint32_t n,
                               const ir_binding *keep) {
    const ir_span *parts[n + 1];
    for (uint32_t i = 0; i < n; i++) {
        const ir_span *s = binding_span(bs[i]);
        parts[i] = bs[i] == keep ? s : (s ? ir_span_with_output(ctx, s, false) : NULL);
    }
    return ir_span_seq(ctx, parts, n);
}

/* Gives the root `root_span` (merged with its own) and every new nested node without a span
 * `fill_span` (vars are left alone). */
static ir_expr *give_spans(ir_ctx_t *ctx, ir_expr *r, const ir_span *root_span,
                           const ir_span *fill_span) {
    if (!ir_si_enabled()) return r;
    if (root_span && !ir_is_var(r)) {
        /* The replacement stands for the replaced bindings: their span first, then whatever
         * span the rewriter gave (or the reused node had). */
        const ir_span *parts[2] = {root_span, r->span};
        const ir_span *sp = ir_span_seq(ctx, parts, 2);
        if (sp != r->span) r = ir_expr_with_span(ctx, r, sp);
    }
    if (fill_span) r = ir_si_fill(ctx, fill_span, r, NULL, 0);
    return r;
}

/* ---- emitting ---- */

typedef struct emitter {
    ir_ctx_t *ctx;
    gr_diag *diag;
    ir_bb_t *bb;
    gr_map remap;          /* old var -> new var (struct info changed) */
} emitter;

/* Binds new_value to b's var (a fresh var of the same kind, name and span when the value's
 * struct info no longer fits the var's). */
static bool emit_binding(emitter *em, const ir_binding *b, ir_expr *value, bool replaced) {
    value = subst(em->ctx, &em->remap, value, em->diag);
    if (!value) return false;
    ir_var *var = b->var;
    if (replaced && !b->match_sinfo) {
        if (!ir_normalize(em->ctx, value, em->diag)) return false;
        if (var->base.sinfo && value->sinfo && !ir_sinfo_is_base_of(var->base.sinfo, value->sinfo)) {
            ir_var *nv = var->base.kind == IR_DFVAR
                             ? ir_dfvar_new(em->ctx, var->name, NULL, var->base.span)
                             : ir_var_new(em->ctx, var->name, NULL, var->base.span);
            gr_map_put(&em->remap, GR_MAP_PTR(var), GR_MAP_PTR(nv));
            var = nv;
        }
    }
    return ir_bb_emit_to(em->bb, var, value, b->match_sinfo);
}

static gr_status cleanup(ir_ctx_t *ctx, ir_func *f, ir_func **out, gr_diag *diag) {
    static const ir_pass *const passes[] = {&ir_pass_canonicalize_bindings, &ir_pass_cse,
                                            &ir_pass_dce};
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    ir_pass *seq = ir_pass_sequential_new("PatternCleanup", 0, 3, passes);
    ir_module *res = NULL;
    gr_status st = ir_pass_run(seq, NULL, m, &res, diag);
    ir_pass_free(seq);
    if (st != GR_OK) return st;
    *out = ir_module_func(res, "main");
    return *out ? GR_OK : gr_diag_set(diag, GR_ERR_INVALID, "pattern cleanup lost the function");
}

/* ---- rewrite_call ---- */

typedef struct call_rw {
    ir_ctx_t *ctx;
    gr_diag *diag;
    pat_rewrite_fn fn;
    void *user;
    ir_expr *result;
    bool failed;
} call_rw;

static bool accept_call(const pat_match_result *m, void *user) {
    call_rw *c = user;
    ir_expr *r = c->fn(c->ctx, m->root, m, c->user, c->diag);
    if (!r) { c->failed = true; return true; }
    if (r == m->root || (m->root_var && r == &m->root_var->base)) return false;  /* no rewrite */
    c->result = r;
    return true;
}

static gr_status rewrite_seq_once(ir_ctx_t *ctx, const pat_t *pat, call_rw *c, ir_seq *s,
                                  ir_seq **out, gr_diag *diag) {
    *out = s;
    emitter em = {ctx, diag, ir_bb_new(ctx, diag), {0}};
    gr_map_init(&em.remap);
    pat_match_result m;
    pat_match_result_init(&m);
    bool changed = false;
    gr_status st = GR_OK;
    for (uint32_t bi = 0; bi < s->nblocks && st == GR_OK; bi++) {
        const ir_block *blk = s->blocks[bi];
        pat_block_info *info = pat_block_info_build(ctx, blk);
        if (blk->dataflow) ir_bb_begin_dataflow(em.bb);
        else ir_bb_begin_block(em.bb);
        for (uint32_t i = 0; i < blk->n && st == GR_OK; i++) {
            const ir_binding *b = &blk->bindings[i];
            ir_expr *value = b->value;
            bool replaced = false;
            c->result = NULL;
            if (!b->match_sinfo && pat_match_each(pat, &b->var->base, info, &m, accept_call, c)) {
                if (c->failed) {
                    st = diag && diag->code != GR_OK ? diag->code
                                                     : gr_diag_set(diag, GR_ERR_INVALID, "pattern rewriter failed");
                    break;
                }
                if (c->result) {
                    /* The replaced bindings, the root's own binding included even when the
                     * pattern did not follow it (a wildcard root). */
                    bool has_root = false;
                    for (uint32_t k = 0; k < m.bindings.len; k++) has_root |= m.bindings.data[k] == b;
                    if (!has_root) gr_vec_push(&m.bindings, b);
                    const ir_span *sp = seq_span(ctx, m.bindings.data, m.bindings.len, b);
                    const ir_span *fill = seq_span(ctx, m.bindings.data, m.bindings.len, NULL);
                    value = give_spans(ctx, c->result, sp, fill);
                    replaced = changed = true;
                }
            }
            if (!emit_binding(&em, b, value, replaced))
                st = diag && diag->code != GR_OK ? diag->code : GR_ERR_TYPE;
        }
        ir_bb_end_block(em.bb);
        pat_block_info_free(info);
    }
    if (st == GR_OK && changed) {
        ir_expr *body = subst(ctx, &em.remap, s->body, diag);
        ir_seq *ns = body ? ir_bb_finish(em.bb, body, s->base.span) : NULL;
        if (!ns) st = diag && diag->code != GR_OK ? diag->code : GR_ERR_TYPE;
        else *out = ns;
    }
    pat_match_result_free(&m);
    gr_map_free(&em.remap);
    ir_bb_free(em.bb);
    return st;
}

static ir_func *func_with_body(ir_ctx_t *ctx, const ir_func *f, ir_expr *body) {
    ir_func *nf = ir_func_new(ctx, f->nparams, f->params, body, f->ret_sinfo, f->attrs, f->base.span);
    return nf;
}

gr_status pat_rewrite_call(ir_ctx_t *ctx, const pat_t *pattern, pat_rewrite_fn fn, void *user,
                           ir_func *func, ir_func **out, gr_diag *diag) {
    *out = func;
    if (!pattern || !fn || !func) return gr_diag_set(diag, GR_ERR_INVALID, "pat_rewrite_call: missing argument");
    if (func->body->kind != IR_SEQ) return GR_OK;
    call_rw c = {ctx, diag, fn, user, NULL, false};
    ir_func *cur = func;
    for (int round = 0; round < PAT_MAX_ROUNDS; round++) {
        ir_seq *ns = NULL;
        gr_status st = rewrite_seq_once(ctx, pattern, &c, (ir_seq *)cur->body, &ns, diag);
        if (st != GR_OK) return st;
        if (ns == (ir_seq *)cur->body) break;
        ir_func *nf = func_with_body(ctx, cur, &ns->base);
        if (!ir_normalize(ctx, &nf->base, diag)) return diag && diag->code ? diag->code : GR_ERR_TYPE;
        st = cleanup(ctx, nf, &cur, diag);
        if (st != GR_OK) return st;
    }
    *out = cur;
    return GR_OK;
}

gr_status pat_rewrite_call_module(const pat_t *pattern, pat_rewrite_fn fn, void *user,
                                  const ir_module *m, ir_module **out, gr_diag *diag) {
    *out = (ir_module *)m;
    ir_module *res = NULL;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        ir_func *f = (ir_func *)m->funcs[i];
        if (f->base.kind != IR_FUNC || ir_attrs_get(f->attrs, "Codegen")) continue;
        ir_func *nf = NULL;
        gr_status st = pat_rewrite_call(m->ctx, pattern, fn, user, f, &nf, diag);
        if (st != GR_OK) return st;
        if (nf == f) continue;
        if (!res) res = ir_module_copy(m);
        ir_module_set(res, m->gvars[i], &nf->base);
    }
    if (res) *out = res;
    return GR_OK;
}

/* ---- rewrite_bindings ---- */

typedef struct tsort {
    const ir_block *blk;
    const pat_block_info *info;
    ir_expr **values;        /* per binding: the value to emit */
    uint8_t *state;          /* 0 new, 1 visiting, 2 done */
    uint32_t *order;
    uint32_t n;
    bool cycle;
} tsort;

typedef struct dep_walk {
    ir_walker w;
    tsort *t;
    GR_VEC(uint32_t) *deps;
} dep_walk;

static ir_walk_result dep_visit(ir_walker *w, ir_expr *e) {
    dep_walk *d = (dep_walk *)w;
    if (ir_is_var(e)) {
        int i = pat_block_binding_of(d->t->info, e);
        if (i >= 0) gr_vec_push(d->deps, (uint32_t)i);
    }
    return IR_WALK_CONTINUE;
}

static void tvisit(tsort *t, uint32_t i) {
    if (t->state[i] == 2 || t->cycle) return;
    if (t->state[i] == 1) { t->cycle = true; return; }
    t->state[i] = 1;
    GR_VEC(uint32_t) deps = {0};
    dep_walk d = {.w = {.visit_expr = dep_visit, .skip_local_funcs = false}, .t = t, .deps = (void *)&deps};
    ir_walk_expr(&d.w, t->values[i]);
    for (uint32_t k = 0; k < deps.len; k++)
        if (deps.data[k] != i) tvisit(t, deps.data[k]);
    gr_vec_free(&deps);
    t->state[i] = 2;
    t->order[t->n++] = i;
}

typedef GR_VEC(const ir_binding *) binding_ptr_vec;

static gr_status rewrite_block_bindings(ir_ctx_t *ctx, pat_ctx_t *pc, pat_rewrite_bindings_fn fn,
                                        void *user, const ir_block *blk, emitter *em,
                                        bool *changed, gr_diag *diag) {
    pat_block_info *info = pat_block_info_build(ctx, blk);
    uint32_t n = blk->n;
    ir_expr **values = gr_xcalloc(n + 1, sizeof(*values));
    bool *repl = gr_xcalloc(n + 1, sizeof(bool));
    for (uint32_t i = 0; i < n; i++) values[i] = blk->bindings[i].value;
    gr_map exclude;
    gr_map_init(&exclude);
    pat_var_value_vec outv = {0};
    binding_ptr_vec matched = {0};
    gr_status st = GR_OK;
    pat_graph_match gm;
    while (blk->dataflow && pat_ctx_match_block(pc, info, &exclude, &gm)) {
        outv.len = 0;
        if (!fn(ctx, &gm, info, user, &outv, diag)) {
            st = diag && diag->code != GR_OK ? diag->code
                                             : gr_diag_set(diag, GR_ERR_INVALID, "binding rewriter failed");
            break;
        }
        /* Matched bindings (bound vars of the match) in block order, for spans. */
        matched.len = 0;
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < gm.n; k++)
                if (gm.vars[k] == blk->bindings[i].var) { gr_vec_push(&matched, &blk->bindings[i]); break; }
        const ir_span *fill = seq_span(ctx, matched.data, matched.len, NULL);
        bool progress = false;
        for (uint32_t k = 0; k < gm.n; k++) {
            int bi = pat_block_binding_of(info, &gm.vars[k]->base);
            if (bi >= 0) { gr_map_put(&exclude, GR_MAP_PTR(gm.vars[k]), 1); progress = true; }
        }
        /* Roots take their own binding's span; then one fill over all new values, so nodes
         * they share stay shared (CSE then merges their bindings). */
        ir_expr **roots = gr_xcalloc(outv.len + 1, sizeof(*roots));
        for (uint32_t k = 0; k < outv.len && st == GR_OK; k++) {
            int bi = outv.data[k].var ? pat_block_binding_of(info, &outv.data[k].var->base) : -1;
            if (bi < 0 || !outv.data[k].value) {
                st = gr_diag_set(diag, GR_ERR_INVALID, "binding rewriter returned a var '%s' not bound in the block",
                                 outv.data[k].var ? outv.data[k].var->name : "?");
                break;
            }
            roots[k] = give_spans(ctx, outv.data[k].value, binding_span(&blk->bindings[bi]), NULL);
        }
        if (st == GR_OK && outv.len && fill && ir_si_enabled()) {
            ir_expr *all = ir_si_fill(ctx, fill, &ir_tuple_new(ctx, outv.len, roots, NULL)->base, NULL, 0);
            if (all && all->kind == IR_TUPLE)
                for (uint32_t k = 0; k < outv.len; k++) roots[k] = ((ir_tuple *)all)->fields[k];
        }
        for (uint32_t k = 0; k < outv.len && st == GR_OK; k++) {
            int bi = pat_block_binding_of(info, &outv.data[k].var->base);
            values[bi] = roots[k];
            repl[bi] = true;
            *changed = true;
        }
        free(roots);
        if (st != GR_OK || !progress) break;
    }
    if (st == GR_OK) {
        tsort t = {blk, info, values, gr_xcalloc(n + 1, 1), gr_xcalloc(n + 1, sizeof(uint32_t)), 0, false};
        for (uint32_t i = 0; i < n; i++) tvisit(&t, i);
        if (t.cycle)
            st = gr_diag_set(diag, GR_ERR_INVALID, "binding rewrite made a cycle between bindings");
        for (uint32_t k = 0; k < t.n && st == GR_OK; k++) {
            uint32_t i = t.order[k];
            if (!emit_binding(em, &blk->bindings[i], values[i], repl[i]))
                st = diag && diag->code != GR_OK ? diag->code : GR_ERR_TYPE;
        }
        free(t.state);
        free(t.order);
    }
    gr_vec_free(&outv);
    gr_vec_free(&matched);
    gr_map_free(&exclude);
    free(values);
    free(repl);
    pat_block_info_free(info);
    return st;
}

gr_status pat_rewrite_bindings(ir_ctx_t *ctx, pat_ctx_t *pc, pat_rewrite_bindings_fn fn,
                               void *user, ir_func *func, ir_func **out, gr_diag *diag) {
    *out = func;
    if (!pc || !fn || !func) return gr_diag_set(diag, GR_ERR_INVALID, "pat_rewrite_bindings: missing argument");
    if (func->body->kind != IR_SEQ) return GR_OK;
    ir_seq *s = (ir_seq *)func->body;
    emitter em = {ctx, diag, ir_bb_new(ctx, diag), {0}};
    gr_map_init(&em.remap);
    bool changed = false;
    gr_status st = GR_OK;
    for (uint32_t bi = 0; bi < s->nblocks && st == GR_OK; bi++) {
        if (s->blocks[bi]->dataflow) ir_bb_begin_dataflow(em.bb);
        else ir_bb_begin_block(em.bb);
        st = rewrite_block_bindings(ctx, pc, fn, user, s->blocks[bi], &em, &changed, diag);
        ir_bb_end_block(em.bb);
    }
    if (st == GR_OK && changed) {
        ir_expr *body = subst(ctx, &em.remap, s->body, diag);
        ir_seq *ns = body ? ir_bb_finish(em.bb, body, s->base.span) : NULL;
        if (!ns) st = diag && diag->code != GR_OK ? diag->code : GR_ERR_TYPE;
        else {
            ir_func *nf = func_with_body(ctx, func, &ns->base);
            if (!ir_normalize(ctx, &nf->base, diag)) st = diag && diag->code ? diag->code : GR_ERR_TYPE;
            else st = cleanup(ctx, nf, out, diag);
        }
    }
    gr_map_free(&em.remap);
    ir_bb_free(em.bb);
    return st;
}
