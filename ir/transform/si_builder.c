/* SIBuilder: span filling and collapsing for passes (seed 001), and a span walk over modules. */
#include "ir/transform/si_builder.h"

#include <string.h>

#include "ir/transform/transform_impl.h"

bool ir_si_enabled(void) { return ir__si_enabled_slow(); }

/* ---- fill ---- */

typedef struct fill_state {
    ir_ctx_t *ctx;
    const ir_span *span;
    ir_expr *const *inputs;
    uint32_t ninputs;
    gr_map memo;        /* old node -> rebuilt node */
} fill_state;

static bool is_input(ir_expr *const *inputs, uint32_t n, const ir_expr *e) {
    for (uint32_t i = 0; i < n; i++)
        if (inputs[i] == e) return true;
    return false;
}

static ir_expr *fill_rec(fill_state *s, ir_expr *e);

/* Fills an array of children; returns a heap copy when one changed (else NULL). */
static ir_expr **fill_array(fill_state *s, ir_expr *const *xs, uint32_t n) {
    ir_expr **out = NULL;
    for (uint32_t i = 0; i < n; i++) {
        ir_expr *nx = fill_rec(s, xs[i]);
        if (nx != xs[i] && !out) {
            out = gr_xmalloc(sizeof(*out) * n);
            memcpy(out, xs, sizeof(*out) * n);
        }
        if (out) out[i] = nx;
    }
    return out;
}

static ir_expr *finish(ir_expr *old, ir_expr *nw) {
    if (old->sinfo && !nw->sinfo) ir_expr_set_sinfo(nw, old->sinfo);
    return nw;
}

static ir_expr *fill_node(fill_state *s, ir_expr *e) {
    ir_ctx_t *ctx = s->ctx;
    const ir_span *sp = e->span ? e->span : s->span;
    switch ((ir_expr_kind)e->kind) {
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        ir_expr *callee = c->callee;
        if (callee->kind == IR_FUNC || callee->kind == IR_EXTERN) callee = fill_rec(s, callee);
        ir_expr **args = fill_array(s, c->args, c->nargs);
        if (!args && callee == c->callee && e->span) return e;
        ir_call *nc = ir_call_new(ctx, callee, c->nargs, args ? args : c->args, c->attrs,
                                  c->nsinfo_args, c->sinfo_args, sp);
        free(args);
        return finish(e, &nc->base);
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        ir_expr **fs = fill_array(s, t->fields, t->n);
        if (!fs && e->span) return e;
        ir_tuple *nt = ir_tuple_new(ctx, t->n, fs ? fs : t->fields, sp);
        free(fs);
        return finish(e, &nt->base);
    }
    case IR_TGI: {
        ir_tgi *g = (ir_tgi *)e;
        ir_expr *t = fill_rec(s, g->tuple);
        if (t == g->tuple && e->span) return e;
        return finish(e, &ir_tgi_new(ctx, t, g->index, sp)->base);
    }
    case IR_IF: {
        ir_if *f = (ir_if *)e;
        ir_expr *c = fill_rec(s, f->cond), *t = fill_rec(s, f->then_branch),
                *el = fill_rec(s, f->else_branch);
        if (c == f->cond && t == f->then_branch && el == f->else_branch && e->span) return e;
        return finish(e, &ir_if_new(ctx, c, t, el, sp)->base);
    }
    case IR_SEQ: {
        ir_seq *q = (ir_seq *)e;
        const ir_block **blocks = NULL;
        for (uint32_t i = 0; i < q->nblocks; i++) {
            const ir_block *b = q->blocks[i];
            ir_binding *nb = NULL;
            for (uint32_t j = 0; j < b->n; j++) {
                ir_expr *v = fill_rec(s, b->bindings[j].value);
                if (v != b->bindings[j].value && !nb) {
                    nb = gr_xmalloc(sizeof(*nb) * b->n);
                    memcpy(nb, b->bindings, sizeof(*nb) * b->n);
                }
                if (nb) nb[j].value = v;
            }
            if (nb && !blocks) {
                blocks = gr_xmalloc(sizeof(*blocks) * q->nblocks);
                memcpy(blocks, q->blocks, sizeof(*blocks) * q->nblocks);
            }
            if (nb) {
                blocks[i] = ir_block_new(ctx, b->dataflow, b->n, nb);
                free(nb);
            }
        }
        ir_expr *body = fill_rec(s, q->body);
        if (!blocks && body == q->body && e->span) return e;
        ir_seq *ns = ir_seq_new(ctx, q->nblocks, blocks ? blocks : q->blocks, body, sp);
        free(blocks);
        return finish(e, &ns->base);
    }
    case IR_VAR: case IR_DFVAR: case IR_OP: case IR_GVAR:
        return e;
    default: /* leaves and local functions (their bodies are another scope) */
        return e->span ? e : ir_expr_with_span(ctx, e, sp);
    }
}

static ir_expr *fill_rec(fill_state *s, ir_expr *e) {
    if (!e || ir_is_var(e) || e->kind == IR_OP || e->kind == IR_GVAR) return e;
    if (is_input(s->inputs, s->ninputs, e)) return e;
    uint64_t done;
    if (gr_map_get(&s->memo, GR_MAP_PTR(e), &done)) return (ir_expr *)(uintptr_t)done;
    ir_expr *r = fill_node(s, e);
    gr_map_put(&s->memo, GR_MAP_PTR(e), GR_MAP_PTR(r));
    return r;
}

ir_expr *ir_si_fill(ir_ctx_t *ctx, const ir_span *span, ir_expr *entry, ir_expr *const *inputs,
                    uint32_t ninputs) {
    if (!span || !entry || !ir_si_enabled()) return entry;
    fill_state s = {ctx, span, inputs, ninputs, {0}};
    gr_map_init(&s.memo);
    ir_expr *r = fill_rec(&s, entry);
    gr_map_free(&s.memo);
    return r;
}

/* ---- collapse ---- */

/* Collapses visit small subgraphs: the seen set and the span list start on the stack and move
 * to the heap only when they outgrow it. */
enum { SMALL = 32 };

typedef struct collapse_state {
    ir_expr *const *inputs;
    uint32_t ninputs;
    const gr_map *bindings;
    const ir_expr *seen_small[SMALL];
    uint32_t nseen;
    gr_map seen;                    /* used once nseen reaches SMALL */
    const ir_span *spans_small[SMALL];
    GR_VEC(const ir_span *) spans;  /* used once the small list is full */
    uint32_t nspans;
} collapse_state;

/* Marks e seen; false when it already was. */
static bool see(collapse_state *s, const ir_expr *e) {
    for (uint32_t i = 0; i < s->nseen && i < SMALL; i++)
        if (s->seen_small[i] == e) return false;
    if (s->nseen < SMALL) {
        s->seen_small[s->nseen++] = e;
        return true;
    }
    if (gr_map_get(&s->seen, GR_MAP_PTR(e), NULL)) return false;
    gr_map_put(&s->seen, GR_MAP_PTR(e), 1);
    return true;
}

static void add_span(collapse_state *s, const ir_span *sp) {
    /* Same span pointer already listed (a var and its value share one): the canonical list
     * keeps the first occurrence anyway, and skipping it here saves ir_span_seq the work. */
    for (uint32_t i = 0; i < s->nspans && i < SMALL; i++)
        if (s->spans_small[i] == sp) return;
    if (s->nspans < SMALL) {
        s->spans_small[s->nspans++] = sp;
        return;
    }
    if (!s->spans.len)
        for (uint32_t i = 0; i < SMALL; i++) gr_vec_push(&s->spans, s->spans_small[i]);
    gr_vec_push(&s->spans, sp);
    s->nspans++;
}

static void collapse_rec(collapse_state *s, ir_expr *e) {
    if (!e || e->kind == IR_OP || e->kind == IR_GVAR) return;
    if (is_input(s->inputs, s->ninputs, e)) return;
    uint64_t v = 0;
    bool bound = ir_is_var(e) && s->bindings && gr_map_get(s->bindings, GR_MAP_PTR(e), &v);
    bool leaf = !bound && (ir_is_var(e) || e->kind == IR_CONST || e->kind == IR_SHAPE ||
                           e->kind == IR_PRIMVAL || e->kind == IR_STR);
    /* Leaves have no children: only their span counts, and add_span already dedupes it. */
    if (leaf) {
        if (e->span) add_span(s, e->span);
        return;
    }
    if (!see(s, e)) return;
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR: case IR_DFVAR:
        collapse_rec(s, (ir_expr *)(uintptr_t)v);
        break;
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        if (c->callee->kind == IR_EXTERN) collapse_rec(s, c->callee);
        for (uint32_t i = 0; i < c->nargs; i++) collapse_rec(s, c->args[i]);
        break;
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) collapse_rec(s, t->fields[i]);
        break;
    }
    case IR_TGI: collapse_rec(s, ((ir_tgi *)e)->tuple); break;
    case IR_IF: {
        ir_if *f = (ir_if *)e;
        collapse_rec(s, f->cond);
        collapse_rec(s, f->then_branch);
        collapse_rec(s, f->else_branch);
        break;
    }
    case IR_SEQ: {
        ir_seq *q = (ir_seq *)e;
        for (uint32_t i = 0; i < q->nblocks; i++)
            for (uint32_t j = 0; j < q->blocks[i]->n; j++) collapse_rec(s, q->blocks[i]->bindings[j].value);
        collapse_rec(s, q->body);
        break;
    }
    default: break;
    }
    if (e->span) add_span(s, e->span);   /* post-order: producers first */
}

const ir_span *ir_si_collapse_bound(ir_ctx_t *ctx, ir_expr *entry, ir_expr *const *inputs,
                                    uint32_t ninputs, const gr_map *bindings) {
    if (!entry || !ir_si_enabled()) return NULL;
    collapse_state s;
    s.inputs = inputs;
    s.ninputs = ninputs;
    s.bindings = bindings;
    s.nseen = s.nspans = 0;
    gr_map_init(&s.seen);
    memset(&s.spans, 0, sizeof(s.spans));
    collapse_rec(&s, entry);
    const ir_span *r = s.nspans <= SMALL ? ir_span_seq(ctx, s.spans_small, s.nspans)
                                         : ir_span_seq(ctx, s.spans.data, s.spans.len);
    gr_map_free(&s.seen);
    gr_vec_free(&s.spans);
    return r;
}

const ir_span *ir_si_collapse(ir_ctx_t *ctx, ir_expr *entry, ir_expr *const *inputs, uint32_t ninputs) {
    return ir_si_collapse_bound(ctx, entry, inputs, ninputs, NULL);
}

const ir_span *ir_si_collapse_nodes(ir_ctx_t *ctx, const ir_expr *const *nodes, uint32_t n) {
    if (!ir_si_enabled()) return NULL;
    const ir_span *small[SMALL];
    const ir_span **parts = n <= SMALL ? small : gr_xmalloc(sizeof(*parts) * n);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ir_span *sp = nodes[i] ? nodes[i]->span : NULL;
        if (sp && !(k && parts[k - 1] == sp)) parts[k++] = sp;
    }
    const ir_span *r = ir_span_seq(ctx, parts, k);
    if (parts != small) free(parts);
    return r;
}

/* ---- span walk over a module ---- */

typedef struct span_walk {
    void (*fn)(const ir_span *s, void *user);
    void *user;
    gr_map seen;
    GR_VEC(ir_expr *) stack;
} span_walk;

static void walk_push(span_walk *w, ir_expr *e) {
    if (!e || gr_map_get(&w->seen, GR_MAP_PTR(e), NULL)) return;
    gr_map_put(&w->seen, GR_MAP_PTR(e), 1);
    gr_vec_push(&w->stack, e);
}

/* Iterative (bodies of 100k bindings would overflow a recursive walk's stack). */
static void walk_expr(span_walk *w, ir_expr *root) {
    walk_push(w, root);
    while (w->stack.len) {
        ir_expr *e = w->stack.data[--w->stack.len];
        if (e->span) w->fn(e->span, w->user);
        switch ((ir_expr_kind)e->kind) {
        case IR_CALL: {
            ir_call *c = (ir_call *)e;
            walk_push(w, c->callee);
            for (uint32_t i = 0; i < c->nargs; i++) walk_push(w, c->args[i]);
            break;
        }
        case IR_TUPLE: {
            ir_tuple *t = (ir_tuple *)e;
            for (uint32_t i = 0; i < t->n; i++) walk_push(w, t->fields[i]);
            break;
        }
        case IR_TGI: walk_push(w, ((ir_tgi *)e)->tuple); break;
        case IR_IF: {
            ir_if *f = (ir_if *)e;
            walk_push(w, f->cond);
            walk_push(w, f->then_branch);
            walk_push(w, f->else_branch);
            break;
        }
        case IR_SEQ: {
            ir_seq *q = (ir_seq *)e;
            for (uint32_t i = 0; i < q->nblocks; i++) {
                for (uint32_t j = 0; j < q->blocks[i]->n; j++) {
                    walk_push(w, &q->blocks[i]->bindings[j].var->base);
                    walk_push(w, q->blocks[i]->bindings[j].value);
                }
            }
            walk_push(w, q->body);
            break;
        }
        case IR_FUNC: {
            ir_func *f = (ir_func *)e;
            for (uint32_t i = 0; i < f->nparams; i++) walk_push(w, &f->params[i]->base);
            walk_push(w, f->body);
            break;
        }
        default: break;
        }
    }
}

void ir_module_for_each_span(const ir_module *m, void (*fn)(const ir_span *s, void *user), void *user) {
    span_walk w = {fn, user, {0}, {0}};
    gr_map_init(&w.seen);
    for (uint32_t i = 0; i < m->nfuncs; i++) walk_expr(&w, m->funcs[i]);
    gr_map_free(&w.seen);
    gr_vec_free(&w.stack);
}

/* ---- lost layers / lost output marks ---- */

typedef struct src_set {
    gr_map set;
    bool outputs_only;
} src_set;

static void collect_sources(const ir_span *s, void *user) {
    src_set *ss = user;
    for (uint32_t i = 0; i < s->n; i++)
        if (!ss->outputs_only || s->locs[i].is_output) gr_map_put(&ss->set, GR_MAP_PTR(s->locs[i].source), 1);
}

typedef struct lost_state {
    ir_ctx_t *ctx, *before_ctx;
    const gr_map *after;
    bool outputs_only;
    gr_map reported;
    GR_VEC(const char *) names;
} lost_state;

static void find_lost(const ir_span *s, void *user) {
    lost_state *ls = user;
    for (uint32_t i = 0; i < s->n; i++) {
        if (ls->outputs_only && !s->locs[i].is_output) continue;
        /* Sources are interned: look them up in the later module's context. */
        const char *src = ls->ctx == ls->before_ctx ? s->locs[i].source : ir_intern(ls->ctx, s->locs[i].source);
        uint64_t key = GR_MAP_PTR(src);
        if (gr_map_get(ls->after, key, NULL) || gr_map_get(&ls->reported, key, NULL)) continue;
        gr_map_put(&ls->reported, key, 1);
        gr_vec_push(&ls->names, s->locs[i].source);
    }
}

static const char **lost(const ir_module *before, const ir_module *after, bool outputs_only, uint32_t *n) {
    src_set seen_after = {{0}, outputs_only};
    gr_map_init(&seen_after.set);
    ir_module_for_each_span(after, collect_sources, &seen_after);
    lost_state ls = {after->ctx, before->ctx, &seen_after.set, outputs_only, {0}, {0}};
    gr_map_init(&ls.reported);
    ir_module_for_each_span(before, find_lost, &ls);
    gr_map_free(&ls.reported);
    gr_map_free(&seen_after.set);
    *n = ls.names.len;
    if (!ls.names.len) {
        gr_vec_free(&ls.names);
        return NULL;
    }
    return ls.names.data;
}

const char **ir_lost_layers(const ir_module *before, const ir_module *after, uint32_t *n) {
    return lost(before, after, false, n);
}

const char **ir_lost_outputs(const ir_module *before, const ir_module *after, uint32_t *n) {
    return lost(before, after, true, n);
}
