/* Grouping the bindings of a block into functions: the machinery FuseOpsByPattern and
 * MergeCompositeFunctions share (TVM's OperatorFusor / FunctionCreator). The grouping is checked
 * on the contracted graph (every group one node), so a cycle at any depth is found, and the
 * block is re-emitted in a topological order of that graph (each unit as late as its last
 * binding allows). */
#include <stdio.h>
#include <string.h>

#include "byoc/byoc_impl.h"
#include "ir/builder.h"
#include "ir/idtab_impl.h"
#include "ir/visit.h"

/* ------------------------------------------------------------------ var enumeration ---- */

/* Calls fn on every var (and const) used in e, in argument order; local function bodies are
 * opaque (their free vars are not reported). */
void byoc_each_leaf(ir_expr *e, byoc_leaf_fn fn, void *user) {
    if (!e) return;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
    case IR_CONST:
        fn(e, user);
        return;
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        for (uint32_t i = 0; i < t->n; i++) byoc_each_leaf(t->fields[i], fn, user);
        return;
    }
    case IR_TGI:
        byoc_each_leaf(IR_AS(e, ir_tgi)->tuple, fn, user);
        return;
    case IR_CALL: {
        const ir_call *c = IR_AS(e, ir_call);
        if (c->callee->kind != IR_OP && c->callee->kind != IR_GVAR) byoc_each_leaf(c->callee, fn, user);
        for (uint32_t i = 0; i < c->nargs; i++) byoc_each_leaf(c->args[i], fn, user);
        return;
    }
    case IR_IF: {
        const ir_if *f = IR_AS(e, ir_if);
        byoc_each_leaf(f->cond, fn, user);
        byoc_each_leaf(f->then_branch, fn, user);
        byoc_each_leaf(f->else_branch, fn, user);
        return;
    }
    case IR_SEQ: {
        const ir_seq *s = IR_AS(e, ir_seq);
        for (uint32_t b = 0; b < s->nblocks; b++)
            for (uint32_t i = 0; i < s->blocks[b]->n; i++) byoc_each_leaf(s->blocks[b]->bindings[i].value, fn, user);
        byoc_each_leaf(s->body, fn, user);
        return;
    }
    default:
        return;
    }
}

/* ------------------------------------------------------------------------ use counts ---- */

typedef struct uses_ctx {
    ir_idtab *uses, *bound;
    const ir_var *dup;
} uses_ctx;

static void count_rec(const ir_expr *e, uses_ctx *u);

static void note_bound(const ir_var *v, uses_ctx *u) {
    if (!u->bound) return;
    if (ir_idtab_get(u->bound, v->base.id)) {
        if (!u->dup) u->dup = v;
        return;
    }
    ir_idtab_put(u->bound, v->base.id, 1);
}

static void count_rec(const ir_expr *e, uses_ctx *u) {
    if (!e) return;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        ir_idtab_put(u->uses, e->id, ir_idtab_get(u->uses, e->id) + 1);
        return;
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        for (uint32_t i = 0; i < t->n; i++) count_rec(t->fields[i], u);
        return;
    }
    case IR_TGI:
        count_rec(IR_AS(e, ir_tgi)->tuple, u);
        return;
    case IR_CALL: {
        const ir_call *c = IR_AS(e, ir_call);
        count_rec(c->callee, u);
        for (uint32_t i = 0; i < c->nargs; i++) count_rec(c->args[i], u);
        return;
    }
    case IR_IF: {
        const ir_if *f = IR_AS(e, ir_if);
        count_rec(f->cond, u);
        count_rec(f->then_branch, u);
        count_rec(f->else_branch, u);
        return;
    }
    case IR_SEQ: {
        const ir_seq *s = IR_AS(e, ir_seq);
        for (uint32_t b = 0; b < s->nblocks; b++)
            for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
                const ir_binding *bd = &s->blocks[b]->bindings[i];
                count_rec(bd->value, u);
                note_bound(bd->var, u);
            }
        count_rec(s->body, u);
        return;
    }
    case IR_FUNC: {
        const ir_func *f = IR_AS(e, ir_func);
        for (uint32_t i = 0; i < f->nparams; i++) note_bound(f->params[i], u);
        count_rec(f->body, u);
        return;
    }
    default:
        return;
    }
}

bool byoc_count_uses(const ir_func *f, ir_idtab *uses, ir_idtab *bound, const char *fname,
                     gr_diag *diag) {
    uses_ctx u = {uses, bound, NULL};
    count_rec(&f->base, &u);
    if (u.dup) {
        gr_diag_set(diag, GR_ERR_INVALID,
                    "function '%s' is not in SSA form: var '%s' is defined more than once (a "
                    "function shared by two global names, or a var bound twice)",
                    fname ? fname : "?", u.dup->name);
        return false;
    }
    return true;
}

/* --------------------------------------------------------------------------- helpers ---- */

bool byoc_is_entry_func(const ir_func *f) {
    return !ir_func_tir_text(&f->base) && !ir_attrs_get(f->attrs, BYOC_ATTR_PRIMITIVE) && !ir_attrs_get(f->attrs, BYOC_ATTR_COMPOSITE) &&
           !ir_attrs_get(f->attrs, BYOC_ATTR_CODEGEN);
}

void byoc_append_op_name(char *buf, size_t size, const char *op_name) {
    size_t len = strlen(buf);
    if (len + 2 >= size) return;
    if (len) buf[len++] = '_';
    for (const char *p = op_name; *p && len + 1 < size; p++) buf[len++] = (*p == '.') ? '_' : *p;
    buf[len] = '\0';
}

const char *byoc_backend_of(ir_ctx_t *ctx, const char *composite) {
    const char *dot = strchr(composite, '.');
    return dot ? ir_intern_n(ctx, composite, (size_t)(dot - composite)) : ir_intern(ctx, composite);
}

const char *byoc_unique_name(ir_ctx_t *ctx, const ir_module *m, const char *base) {
    if (!ir_module_gvar(m, base)) return ir_intern(ctx, base);
    for (uint32_t k = 1;; k++) {
        const char *s = ir_internf(ctx, "%s%u", base, k);
        if (!ir_module_gvar(m, s)) return s;
    }
}

/* spans of the non-var leaves (constants, prim values, shapes) of a call: their layers */
typedef GR_VEC(const ir_span *) span_vec;

static void leaf_spans(ir_ctx_t *ctx, const ir_expr *v, span_vec *out) {
    if (v->kind != IR_CALL) return;
    const ir_call *c = IR_AS(v, ir_call);
    for (uint32_t k = 0; k < c->nargs; k++) {
        const ir_expr *a = c->args[k];
        uint32_t nf = a->kind == IR_TUPLE ? IR_AS(a, ir_tuple)->n : 1;
        for (uint32_t q = 0; q < nf; q++) {
            const ir_expr *x = a->kind == IR_TUPLE ? IR_AS(a, ir_tuple)->fields[q] : a;
            if (!ir_is_var(x) && x->span) gr_vec_push(out, ir_span_with_output(ctx, x->span, false));
        }
    }
}

const ir_span *byoc_group_span(ir_ctx_t *ctx, const ir_block *blk, const byoc_group_info *gi) {
    span_vec parts = {0};
    for (uint32_t k = 0; k < gi->nmembers; k++) {
        const ir_binding *b = &blk->bindings[gi->members[k]];
        leaf_spans(ctx, b->value, &parts);
        const ir_span *s = b->value->span ? b->value->span : b->var->base.span;
        bool out = false;
        for (uint32_t o = 0; o < gi->noutputs; o++) out |= gi->outputs[o] == b->var;
        /* an output keeps its marks; an intermediate's layer output stays inside */
        if (s) gr_vec_push(&parts, out ? s : ir_span_with_output(ctx, s, false));
    }
    const ir_span *r = ir_span_seq(ctx, parts.data, parts.len);
    gr_vec_free(&parts);
    return r;
}

/* ---------------------------------------------------------------- group functions ---- */

/* Substitutes vars (and lifted constants) in a member value: `map` is old var / const ->
 * replacement. Rebuilt nodes keep span, attrs and struct info (the replacements have the same
 * struct info). Values other than leaves, tuples, projections and calls go through a mutator. */
static ir_expr *subst(ir_ctx_t *ctx, const ir_module *mod, ir_expr *e, const gr_map *map, gr_diag *diag) {
    uint64_t v;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
    case IR_CONST:
    case IR_GVAR:  /* a callee rewritten by byoc_build_group_func_ex's hook */
        return gr_map_get(map, GR_MAP_PTR(e), &v) ? (ir_expr *)(uintptr_t)v : e;
    case IR_OP:
    case IR_EXTERN:
    case IR_SHAPE:
    case IR_PRIMVAL:
    case IR_STR:
        return e;
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        ir_expr **f = IR_NEW_ARRAY(ctx, ir_expr *, t->n ? t->n : 1);
        bool ch = false;
        for (uint32_t i = 0; i < t->n; i++) {
            if (!(f[i] = subst(ctx, mod, t->fields[i], map, diag))) return NULL;
            ch |= f[i] != t->fields[i];
        }
        if (!ch) return e;
        ir_tuple *nt = ir_tuple_new(ctx, t->n, f, e->span);
        ir_expr_set_sinfo(&nt->base, e->sinfo);
        return &nt->base;
    }
    case IR_TGI: {
        const ir_tgi *t = IR_AS(e, ir_tgi);
        ir_expr *nt = subst(ctx, mod, t->tuple, map, diag);
        if (!nt) return NULL;
        if (nt == t->tuple) return e;
        ir_tgi *ng = ir_tgi_new(ctx, nt, t->index, e->span);
        ir_expr_set_sinfo(&ng->base, e->sinfo);
        return &ng->base;
    }
    case IR_CALL: {
        const ir_call *c = IR_AS(e, ir_call);
        ir_expr *callee = subst(ctx, mod, c->callee, map, diag);
        if (!callee) return NULL;
        ir_expr **a = IR_NEW_ARRAY(ctx, ir_expr *, c->nargs ? c->nargs : 1);
        bool ch = callee != c->callee;
        for (uint32_t i = 0; i < c->nargs; i++) {
            if (!(a[i] = subst(ctx, mod, c->args[i], map, diag))) return NULL;
            ch |= a[i] != c->args[i];
        }
        if (!ch) return e;
        ir_call *nc = ir_call_new(ctx, callee, c->nargs, a, c->attrs, c->nsinfo_args, c->sinfo_args, e->span);
        ir_expr_set_sinfo(&nc->base, e->sinfo);
        return &nc->base;
    }
    default: {
        ir_mutator mu;
        ir_mutator_init(&mu, ctx, diag);
        mu.module = mod;
        for (uint32_t k = 0; k < map->cap; k++)
            if (map->keys[k] && ir_is_var((const ir_expr *)(uintptr_t)map->keys[k]))
                ir_mutator_remap_var(&mu, (ir_var *)(uintptr_t)map->keys[k], (ir_var *)(uintptr_t)map->vals[k]);
        ir_expr *r = ir_mutate_expr(&mu, e);
        ir_mutator_deinit(&mu);
        return r;
    }
    }
}

static ir_var *fresh_like(ir_ctx_t *ctx, const ir_var *v, bool dataflow) {
    return dataflow ? ir_dfvar_new(ctx, v->name, v->base.sinfo, v->base.span)
                    : ir_var_new(ctx, v->name, v->base.sinfo, v->base.span);
}

ir_func *byoc_build_group_func(ir_ctx_t *ctx, const ir_module *mod, const ir_block *blk,
                               const byoc_group_info *gi, bool dataflow, const ir_attrs *attrs,
                               gr_diag *diag) {
    return byoc_build_group_func_ex(ctx, mod, blk, gi, dataflow, attrs, NULL, NULL, diag);
}

typedef struct inline_ctx {
    const gr_map *leaves;
    gr_map *map;
} inline_ctx;

static void inline_leaf(ir_expr *leaf, void *user) {
    inline_ctx *ic = user;
    uint64_t v;
    if (gr_map_get(ic->leaves, GR_MAP_PTR(leaf), &v)) gr_map_put(ic->map, GR_MAP_PTR(leaf), v);
}

static ir_walk_result static_leaf_binding(ir_walker *w, const ir_binding *b, const ir_block *blk) {
    (void)blk;
    const ir_expr *v = b->value;
    bool ok = false;
    if (b->match_sinfo) return IR_WALK_CONTINUE;
    if (v->kind == IR_SHAPE) {
        ok = true;
        for (uint32_t i = 0; i < IR_AS(v, ir_shape_expr)->n && ok; i++) ok = ir_prim_is_int(IR_AS(v, ir_shape_expr)->dims[i], NULL);
    } else if (v->kind == IR_PRIMVAL) {
        const ir_primval *pv = IR_AS(v, ir_primval);
        ok = !pv->value || ir_prim_is_int(pv->value, NULL);
    }
    if (ok) gr_map_put(w->user, GR_MAP_PTR(b->var), GR_MAP_PTR(v));
    return IR_WALK_CONTINUE;
}

void byoc_static_leaves(const ir_func *f, gr_map *out) {
    ir_walker w = {0};
    w.visit_binding = static_leaf_binding;
    w.skip_local_funcs = true;
    w.user = out;
    ir_walk_expr(&w, f->body);
}

ir_func *byoc_build_group_func_ex(ir_ctx_t *ctx, const ir_module *mod, const ir_block *blk,
                                  const byoc_group_info *gi, bool dataflow, const ir_attrs *attrs,
                                  byoc_callee_fn fn, void *user, gr_diag *diag) {
    gr_map map;
    gr_map_init(&map);
    ir_var **params = IR_NEW_ARRAY(ctx, ir_var *, gi->ninputs ? gi->ninputs : 1);
    uint32_t nlift = 0;
    for (uint32_t i = 0; i < gi->ninputs; i++) {
        ir_expr *in = gi->inputs[i];
        if (in->kind == IR_CONST)
            params[i] = ir_var_new(ctx, ir_internf(ctx, "param_%u", nlift++), in->sinfo, NULL);
        else
            params[i] = ir_var_new(ctx, IR_AS(in, ir_var)->name, in->sinfo, NULL);
        gr_map_put(&map, GR_MAP_PTR(in), GR_MAP_PTR(params[i]));
    }
    if (gi->leaves && gi->leaves->len) {
        inline_ctx ic = {gi->leaves, &map};
        for (uint32_t k = 0; k < gi->nmembers; k++) byoc_each_leaf(blk->bindings[gi->members[k]].value, inline_leaf, &ic);
    }
    ir_binding_vec bs = {0};  /* heap scratch: ir_block_new copies */
    ir_var **newout = IR_NEW_ARRAY(ctx, ir_var *, gi->noutputs ? gi->noutputs : 1);
    ir_func *f = NULL;
    for (uint32_t k = 0; k < gi->nmembers; k++) {
        const ir_binding *b = &blk->bindings[gi->members[k]];
        if (fn && b->value->kind == IR_CALL && IR_AS(b->value, ir_call)->callee->kind == IR_GVAR) {
            ir_expr *callee = IR_AS(b->value, ir_call)->callee;
            if (!gr_map_get(&map, GR_MAP_PTR(callee), NULL)) {
                ir_expr *to = fn(user, IR_AS(callee, ir_gvar), &bs, diag);
                if (diag && diag->code) goto done;
                gr_map_put(&map, GR_MAP_PTR(callee), GR_MAP_PTR(to ? to : callee));
            }
        }
        ir_expr *nv = subst(ctx, mod, b->value, &map, diag);
        if (!nv) goto done;
        int oi = -1;
        for (uint32_t o = 0; o < gi->noutputs; o++)
            if (gi->outputs[o] == b->var) oi = (int)o;
        bool df = dataflow && oi < 0;  /* outputs leave the dataflow block, as in TVM */
        ir_var *v = fresh_like(ctx, b->var, df);
        if (oi >= 0) newout[oi] = v;
        gr_map_put(&map, GR_MAP_PTR(b->var), GR_MAP_PTR(v));
        gr_vec_push(&bs, ((ir_binding){v, nv, b->match_sinfo}));
    }
    ir_expr *body;
    if (gi->noutputs == 1) {
        body = &newout[0]->base;
    } else {
        ir_tuple *t = ir_tuple_new(ctx, gi->noutputs, (ir_expr *const *)newout, NULL);
        const ir_sinfo **fs = IR_NEW_ARRAY(ctx, const ir_sinfo *, gi->noutputs ? gi->noutputs : 1);
        for (uint32_t o = 0; o < gi->noutputs; o++) fs[o] = newout[o]->base.sinfo;
        ir_expr_set_sinfo(&t->base, ir_sinfo_tuple(ctx, gi->noutputs, fs));
        body = &t->base;  /* `return (a, b)` after the block, as TVM writes it */
    }
    const ir_block *nbk = ir_block_new(ctx, dataflow, bs.len, bs.data);
    ir_seq *seq = ir_seq_new(ctx, 1, &nbk, body, NULL);
    f = ir_func_new(ctx, gi->ninputs, params, &seq->base, body->sinfo, attrs, NULL);
    /* every node already has struct info (subst keeps it): no normalizer pass needed */
    ir_expr_set_sinfo(&seq->base, body->sinfo);
    ir_expr_set_sinfo(&f->base, ir_func_sinfo(ctx, f));
done:
    gr_vec_free(&bs);
    gr_map_free(&map);
    return f;
}

static bool fresh_binding(ir_mutator *m, const ir_binding *b, ir_expr *nv, ir_binding_vec *out) {
    ir_var *v = fresh_like(m->ctx, b->var, b->var->base.kind == IR_DFVAR);
    ir_mutator_remap_var(m, b->var, v);
    gr_vec_push(out, ((ir_binding){v, nv, b->match_sinfo}));
    return true;
}

ir_func *byoc_copy_func_fresh(ir_ctx_t *ctx, const ir_func *f, gr_diag *diag) {
    ir_mutator mu;
    ir_mutator_init(&mu, ctx, diag);
    mu.rewrite_binding = fresh_binding;
    ir_var **params = IR_NEW_ARRAY(ctx, ir_var *, f->nparams ? f->nparams : 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        params[i] = fresh_like(ctx, f->params[i], false);
        ir_mutator_remap_var(&mu, f->params[i], params[i]);
    }
    ir_func *nf = NULL;
    ir_expr *body = ir_mutate_expr(&mu, f->body);
    if (body) {
        nf = ir_func_new(ctx, f->nparams, params, body, f->ret_sinfo, f->attrs, f->base.span);
        if (!ir_normalize(ctx, &nf->base, diag)) nf = NULL;
    }
    ir_mutator_deinit(&mu);
    return nf;
}

/* ------------------------------------------------------------------- apply groups ---- */

/* Side tables below are keyed by expression id (ir/idtab_impl.h): a block's vars have
 * neighbouring ids, so a million-binding block stays cache-friendly where pointer-keyed hash
 * maps missed on nearly every lookup. */
typedef struct edge_ctx {
    const ir_idtab *vidx;       /* binding var id -> index + 1 */
    const uint32_t *unit;
    uint32_t dst;
    GR_VEC(uint64_t) edges;   /* src << 32 | dst */
} edge_ctx;

static void edge_leaf(ir_expr *leaf, void *user) {
    edge_ctx *ec = user;
    uint64_t j;
    if (leaf->kind == IR_CONST || !(j = ir_idtab_get(ec->vidx, leaf->id))) return;
    uint32_t src = ec->unit[j - 1];
    if (src != ec->dst) gr_vec_push(&ec->edges, ((uint64_t)src << 32) | ec->dst);
}

typedef struct io_ctx {
    const ir_idtab *vidx;
    const gr_map *leaves;
    const int32_t *grp;
    int32_t g;
    bool lift;
    ir_idtab seen;             /* leaf id -> 1 */
    ir_idtab internal;         /* var id -> uses by members */
    GR_VEC(ir_expr *) inputs;
} io_ctx;

static void io_leaf(ir_expr *leaf, void *user) {
    io_ctx *io = user;
    uint64_t j;
    if (leaf->kind == IR_CONST) {
        if (!io->lift || ir_idtab_get(&io->seen, leaf->id)) return;
        ir_idtab_put(&io->seen, leaf->id, 1);
        gr_vec_push(&io->inputs, leaf);
        return;
    }
    ir_idtab_put(&io->internal, leaf->id, ir_idtab_get(&io->internal, leaf->id) + 1);
    if ((j = ir_idtab_get(io->vidx, leaf->id)) && io->grp[j - 1] == io->g) return;
    if (io->leaves && io->leaves->len && gr_map_get(io->leaves, GR_MAP_PTR(leaf), NULL)) return;
    if (ir_idtab_get(&io->seen, leaf->id)) return;
    ir_idtab_put(&io->seen, leaf->id, 1);
    gr_vec_push(&io->inputs, leaf);
}

/* min-heap of uint64 keys */
typedef GR_VEC(uint64_t) heap_t;
static void heap_push(heap_t *h, uint64_t k) {
    gr_vec_push(h, k);
    uint32_t i = h->len - 1;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->data[p] <= h->data[i]) break;
        uint64_t t = h->data[p];
        h->data[p] = h->data[i];
        h->data[i] = t;
        i = p;
    }
}
static uint64_t heap_pop(heap_t *h) {
    uint64_t top = h->data[0];
    h->data[0] = h->data[--h->len];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < h->len && h->data[l] < h->data[s]) s = l;
        if (r < h->len && h->data[r] < h->data[s]) s = r;
        if (s == i) break;
        uint64_t t = h->data[s];
        h->data[s] = h->data[i];
        h->data[i] = t;
        i = s;
    }
    return top;
}

typedef struct first_use {
    ir_var **outs;
    uint32_t n, placed;
} first_use;

static void first_use_leaf(ir_expr *e, void *user) {
    first_use *fu = user;
    if (!ir_is_var(e)) return;
    for (uint32_t k = fu->placed; k < fu->n; k++)
        if (&fu->outs[k]->base == e) {
            ir_var *t = fu->outs[fu->placed];
            fu->outs[fu->placed++] = fu->outs[k];
            fu->outs[k] = t;
            return;
        }
}

/* Reorders the outputs of group g (member order now) as TVM's OperatorFusor lists them: the
 * vars used outside the group in the order of their first use, then the rest (block outputs
 * used by no later binding), each part in member order. */
static void order_outputs(const ir_block *blk, const int32_t *grp, int32_t g, uint32_t first,
                          uint32_t nused, ir_var **outs, uint32_t n) {
    first_use fu = {outs, n, 0};
    for (uint32_t j = first + 1; j < blk->n && fu.placed < nused; j++)
        if (grp[j] != g) byoc_each_leaf(blk->bindings[j].value, first_use_leaf, &fu);
    /* the rest keep member order: sort the tail by position in the block */
    for (uint32_t a = fu.placed; a + 1 < n; a++)
        for (uint32_t b = a + 1; b < n; b++) {
            uint32_t pa = 0, pb = 0;
            for (uint32_t j = 0; j < blk->n; j++) {
                if (blk->bindings[j].var == outs[a]) pa = j;
                if (blk->bindings[j].var == outs[b]) pb = j;
            }
            if (pb < pa) {
                ir_var *t = outs[a];
                outs[a] = outs[b];
                outs[b] = t;
            }
        }
}

gr_status byoc_apply_groups(ir_ctx_t *ctx, const ir_block *blk, const int32_t *grp,
                            uint32_t ngroups, const ir_idtab *uses, const gr_map *leaves, bool lift_consts,
                            byoc_make_fn make, void *user, const ir_block **out,
                            int32_t *cyclic_group, gr_diag *diag) {
    *out = NULL;
    *cyclic_group = -1;
    uint32_t n = blk->n, nunits = ngroups + n;
    gr_status st = GR_OK;
    ir_idtab vidx;
    ir_idtab_init(&vidx);
    for (uint32_t i = 0; i < n; i++) ir_idtab_put(&vidx, blk->bindings[i].var->base.id, i + 1);
    uint32_t *unit = gr_xmalloc(sizeof(uint32_t) * (n ? n : 1));
    uint32_t *gcount = gr_xcalloc(ngroups + 1, sizeof(uint32_t));
    uint32_t *goff = gr_xcalloc(ngroups + 2, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        unit[i] = grp[i] >= 0 ? (uint32_t)grp[i] : ngroups + i;
        if (grp[i] >= 0) gcount[grp[i]]++;
    }
    for (uint32_t g = 0; g < ngroups; g++) goff[g + 1] = goff[g] + gcount[g];
    uint32_t *gmem = gr_xmalloc(sizeof(uint32_t) * (goff[ngroups] ? goff[ngroups] : 1));
    memset(gcount, 0, sizeof(uint32_t) * (ngroups + 1));
    for (uint32_t i = 0; i < n; i++)
        if (grp[i] >= 0) gmem[goff[grp[i]] + gcount[grp[i]]++] = i;
    /* edges of the contracted graph, CSR by source */
    edge_ctx ec = {&vidx, unit, 0, {0}};
    for (uint32_t i = 0; i < n; i++) {
        ec.dst = unit[i];
        byoc_each_leaf(blk->bindings[i].value, edge_leaf, &ec);
    }
    uint32_t *indeg = gr_xcalloc(nunits + 1, sizeof(uint32_t));
    uint32_t *eoff = gr_xcalloc(nunits + 2, sizeof(uint32_t));
    for (uint32_t e = 0; e < ec.edges.len; e++) {
        eoff[(ec.edges.data[e] >> 32) + 1]++;
        indeg[ec.edges.data[e] & 0xffffffffu]++;
    }
    for (uint32_t u = 0; u < nunits; u++) eoff[u + 1] += eoff[u];
    uint32_t *edst = gr_xmalloc(sizeof(uint32_t) * (ec.edges.len ? ec.edges.len : 1));
    uint32_t *efill = gr_xcalloc(nunits + 1, sizeof(uint32_t));
    for (uint32_t e = 0; e < ec.edges.len; e++) {
        uint32_t s = (uint32_t)(ec.edges.data[e] >> 32);
        edst[eoff[s] + efill[s]++] = (uint32_t)ec.edges.data[e];
    }
    /* Kahn, each unit keyed by its last binding */
    heap_t heap = {0};
    uint32_t *order = gr_xmalloc(sizeof(uint32_t) * (nunits ? nunits : 1));
    uint32_t norder = 0;
    bool *live = gr_xcalloc(nunits + 1, sizeof(bool));
    for (uint32_t u = 0; u < nunits; u++) {
        live[u] = u < ngroups ? goff[u + 1] > goff[u] : grp[u - ngroups] < 0;
    }
#define UNIT_POS(u) ((u) < ngroups ? gmem[goff[(u) + 1] - 1] : (u) - ngroups)
    for (uint32_t u = 0; u < nunits; u++)
        if (live[u] && indeg[u] == 0) heap_push(&heap, ((uint64_t)UNIT_POS(u) << 32) | u);
    while (heap.len) {
        uint32_t u = (uint32_t)heap_pop(&heap);
        order[norder++] = u;
        for (uint32_t e = eoff[u]; e < eoff[u + 1]; e++)
            if (--indeg[edst[e]] == 0) heap_push(&heap, ((uint64_t)UNIT_POS(edst[e]) << 32) | edst[e]);
    }
    uint32_t nlive = 0;
    for (uint32_t u = 0; u < nunits; u++) nlive += live[u];
    if (norder < nlive) {
        for (uint32_t u = 0; u < ngroups; u++)
            if (live[u] && indeg[u] > 0) *cyclic_group = (int32_t)u;  /* the latest group */
        goto done;
    }
    /* build (the io scratch is reused from group to group: most groups are small) */
    ir_binding_vec nb = {0};
    io_ctx io = {&vidx, leaves, grp, 0, lift_consts, {0}, {0}, {0}};
    ir_idtab_init(&io.seen);
    ir_idtab_init(&io.internal);
    GR_VEC(ir_var *) outs = {0};
    for (uint32_t k = 0; k < norder; k++) {
        uint32_t u = order[k];
        if (u >= ngroups) {
            gr_vec_push(&nb, blk->bindings[u - ngroups]);
            continue;
        }
        io.g = (int32_t)u;
        io.inputs.len = 0;
        outs.len = 0;
        for (uint32_t m = goff[u]; m < goff[u + 1]; m++) byoc_each_leaf(blk->bindings[gmem[m]].value, io_leaf, &io);
        /* outputs in TVM's order: the members used by later bindings, by first use, then
         * the members that are outputs of the block (non-dataflow vars) */
        uint32_t nused = 0;
        for (uint32_t m = goff[u]; m < goff[u + 1]; m++) {
            ir_var *v = blk->bindings[gmem[m]].var;
            uint64_t total = ir_idtab_get(uses, v->base.id);
            uint64_t inside = ir_idtab_get(&io.internal, v->base.id);
            if (total > inside) nused++;
            if (v->base.kind == IR_VAR || total > inside) gr_vec_push(&outs, v);
        }
        if (outs.len > 1) order_outputs(blk, grp, (int32_t)u, gmem[goff[u]], nused, outs.data, outs.len);
        byoc_group_info gi = {goff[u + 1] - goff[u], gmem + goff[u], io.inputs.len, io.inputs.data,
                              outs.len, outs.data, leaves};
        ir_expr *callee = NULL;
        if (outs.len == 0) {
            /* dead group: keep its bindings as they are */
            for (uint32_t m = goff[u]; m < goff[u + 1]; m++) gr_vec_push(&nb, blk->bindings[gmem[m]]);
        } else {
            callee = make(user, u, blk, &gi, diag);
            if (!callee) st = diag && diag->code ? diag->code : GR_ERR_INVALID;
        }
        if (callee) {
            const ir_span *sp = byoc_group_span(ctx, blk, &gi);
            ir_call *call = ir_call_new(ctx, callee, io.inputs.len, io.inputs.data, NULL, 0, NULL, sp);
            if (outs.len == 1) {
                ir_expr_set_sinfo(&call->base, outs.data[0]->base.sinfo);
                gr_vec_push(&nb, ((ir_binding){outs.data[0], &call->base, NULL}));
            } else {
                const ir_sinfo **fs = IR_NEW_ARRAY(ctx, const ir_sinfo *, outs.len);
                for (uint32_t o = 0; o < outs.len; o++) fs[o] = outs.data[o]->base.sinfo;
                ir_expr_set_sinfo(&call->base, ir_sinfo_tuple(ctx, outs.len, fs));
                ir_var *t = blk->dataflow ? ir_dfvar_new(ctx, "lv", call->base.sinfo, sp)
                                          : ir_var_new(ctx, "lv", call->base.sinfo, sp);
                gr_vec_push(&nb, ((ir_binding){t, &call->base, NULL}));
                /* the projections in member order (TVM's), each naming its output index */
                for (uint32_t m = goff[u]; m < goff[u + 1]; m++)
                    for (uint32_t o = 0; o < outs.len; o++) {
                        if (outs.data[o] != blk->bindings[gmem[m]].var) continue;
                        ir_tgi *tg = ir_tgi_new(ctx, &t->base, (int32_t)o, outs.data[o]->base.span);
                        ir_expr_set_sinfo(&tg->base, fs[o]);
                        gr_vec_push(&nb, ((ir_binding){outs.data[o], &tg->base, NULL}));
                    }
            }
        }
        ir_idtab_clear(&io.seen);  /* small groups: a count reset; big ones: their pages */
        ir_idtab_clear(&io.internal);
        if (st) break;
    }
    ir_idtab_free(&io.seen);
    ir_idtab_free(&io.internal);
    gr_vec_free(&io.inputs);
    gr_vec_free(&outs);
    if (!st) *out = ir_block_new(ctx, blk->dataflow, nb.len, nb.data);
    gr_vec_free(&nb);
#undef UNIT_POS
done:
    gr_vec_free(&heap);
    free(order);
    free(live);
    free(edst);
    free(efill);
    free(indeg);
    free(eoff);
    gr_vec_free(&ec.edges);
    free(gmem);
    free(goff);
    free(gcount);
    free(unit);
    ir_idtab_free(&vidx);
    return st;
}

/* ------------------------------------------------------------------ block rewriting ---- */

gr_status byoc_rewrite_blocks(ir_ctx_t *ctx, ir_expr *body, byoc_block_fn fn, void *user,
                              ir_expr **out, gr_diag *diag) {
    *out = body;
    if (!body || body->kind != IR_SEQ) return GR_OK;
    const ir_seq *s = IR_AS(body, ir_seq);
    const ir_block **blocks = gr_xmalloc(sizeof(*blocks) * (s->nblocks ? s->nblocks : 1));
    bool changed = false;
    gr_status st = GR_OK;
    for (uint32_t b = 0; b < s->nblocks && !st; b++) {
        const ir_block *blk = s->blocks[b];
        /* nested seqs of if branches first */
        ir_binding *nbs = NULL;
        for (uint32_t i = 0; i < blk->n && !st; i++) {
            ir_expr *v = blk->bindings[i].value;
            if (v->kind != IR_IF) continue;
            const ir_if *f = IR_AS(v, ir_if);
            ir_expr *t = NULL, *e = NULL;
            if ((st = byoc_rewrite_blocks(ctx, f->then_branch, fn, user, &t, diag))) break;
            if ((st = byoc_rewrite_blocks(ctx, f->else_branch, fn, user, &e, diag))) break;
            if (t == f->then_branch && e == f->else_branch) continue;
            if (!nbs) nbs = ir_alloc_copy(ctx, blk->bindings, sizeof(ir_binding) * blk->n);
            ir_if *nf = ir_if_new(ctx, f->cond, t, e, v->span);
            ir_expr_set_sinfo(&nf->base, v->sinfo);
            nbs[i].value = &nf->base;
        }
        if (st) break;
        if (nbs) blk = ir_block_new(ctx, blk->dataflow, blk->n, nbs);
        const ir_block *nb = blk;
        if ((st = fn(user, blk, &nb, diag))) break;
        blocks[b] = nb;
        changed |= nb != s->blocks[b];
    }
    if (!st && changed) {
        ir_seq *ns = ir_seq_new(ctx, s->nblocks, blocks, s->body, body->span);
        ir_expr_set_sinfo(&ns->base, body->sinfo);
        *out = &ns->base;
    }
    free(blocks);
    return st;
}
