/* The expression matcher: a goal list solved depth first with full backtracking (an Or, an
 * optional, an unordered tuple or a commutative call can retry its other choices when a later
 * sibling fails), memoized through the trail of matched entries. */
#include "patterns/match.h"

#include <string.h>

#include "ir/equal.h"
#include "ir/op.h"
#include "ir/visit.h"

/* ---- block info ---- */

typedef GR_VEC(uint64_t) u64_vec;

/* var -> 1 + slot. The dense table (zeroed, so memory checkers stay quiet) is also checked like
 * a sparse set: an entry counts only when vars[] points back at the var. */
static uint32_t slot_get(const pat_block_info *bi, const ir_expr *v) {
    uint32_t rel = v->id - bi->id_lo;
    if (rel < bi->id_n) {
        uint32_t k = bi->slot_by_id[rel];
        return k - 1 < bi->nvars && &bi->vars[k - 1]->base == v ? k : 0;
    }
    return (uint32_t)gr_map_get_or(&bi->slot_far, GR_MAP_PTR(v), 0);
}

static void slot_put(pat_block_info *bi, const ir_expr *v, uint32_t slot) {
    uint32_t rel = v->id - bi->id_lo;
    if (rel < bi->id_n) bi->slot_by_id[rel] = slot;
    else gr_map_put(&bi->slot_far, GR_MAP_PTR(v), slot);
}

/* One walk over the block assigns var slots, counts uses and records the slot of every use in
 * binding order; the CSR user lists are then filled from that compact list (a second walk
 * over the expressions costs cache misses on large blocks). */
typedef struct ubuild {
    pat_block_info *bi;
    GR_VEC(ir_var *) vars;
    GR_VEC(uint32_t) count;    /* uses per slot */
    GR_VEC(uint32_t) uslot;    /* slot of every use, in binding order */
} ubuild;

static uint32_t slot_add(ubuild *u, ir_var *v) {
    uint32_t s = slot_get(u->bi, &v->base);
    if (!s) {
        gr_vec_push(&u->vars, v);
        gr_vec_push(&u->count, 0);
        s = u->vars.len;
        u->bi->vars = u->vars.data;
        u->bi->nvars = s;
        slot_put(u->bi, &v->base, s);
    }
    return s;
}

static void note_use(ubuild *u, ir_var *v, uint32_t user) {
    (void)user;
    uint32_t s = slot_add(u, v);
    u->count.data[s - 1]++;
    gr_vec_push(&u->uslot, s - 1);
}

typedef struct use_walk {
    ir_walker w;
    ubuild *u;
    uint32_t user;
} use_walk;

static ir_walk_result use_visit(ir_walker *w, ir_expr *e) {
    use_walk *uw = (use_walk *)w;
    if (ir_is_var(e)) note_use(uw->u, (ir_var *)e, uw->user);
    return IR_WALK_CONTINUE;
}

static void collect_uses(ubuild *u, ir_expr *e, uint32_t user) {
    if (!e) return;
    switch (e->kind) {
    case IR_VAR: case IR_DFVAR: note_use(u, (ir_var *)e, user); return;
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        if (c->callee->kind != IR_OP) collect_uses(u, c->callee, user);
        for (uint32_t i = 0; i < c->nargs; i++) {
            ir_expr *a = c->args[i];
            if (a->kind == IR_VAR || a->kind == IR_DFVAR) note_use(u, (ir_var *)a, user);
            else if (a->kind != IR_CONST && a->kind != IR_SHAPE) collect_uses(u, a, user);
        }
        return;
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) collect_uses(u, t->fields[i], user);
        return;
    }
    case IR_TGI: collect_uses(u, ((ir_tgi *)e)->tuple, user); return;
    case IR_SEQ: case IR_IF: case IR_FUNC: {
        use_walk w = {.w = {.visit_expr = use_visit}, .u = u, .user = user};
        ir_walk_expr(&w.w, e);
        return;
    }
    default: return;
    }
}

pat_block_info *pat_block_info_build(ir_ctx_t *ctx, const ir_block *block) {
    pat_block_info *bi = gr_xcalloc(1, sizeof(*bi));
    bi->ctx = ctx;
    bi->block = block;
    gr_map_init(&bi->slot_far);
    gr_map_init(&bi->value_var_);
    uint32_t n = block ? block->n : 0;
    /* Dense id table over the bound vars' id range when it is not too sparse. */
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = block->bindings[i].var->base.id;
        lo = id < lo ? id : lo;
        hi = id > hi ? id : hi;
    }
    if (n && (uint64_t)(hi - lo) + 1 <= 16ull * n + 1024) {
        bi->id_lo = lo;
        bi->id_n = hi - lo + 1;
        bi->slot_by_id = gr_xcalloc(bi->id_n, sizeof(uint32_t));
    }
    ubuild u = {.bi = bi};
    u.vars.cap = u.count.cap = n + 16;
    u.vars.data = gr_xmalloc(sizeof(ir_var *) * u.vars.cap);
    u.count.data = gr_xmalloc(sizeof(uint32_t) * u.count.cap);
    u.uslot.cap = 2 * n + 16;
    u.uslot.data = gr_xmalloc(sizeof(uint32_t) * u.uslot.cap);
    uint32_t *boff = gr_xmalloc(sizeof(uint32_t) * (n + 1));
    /* Bound vars first, so a binding's var has a slot before any use. */
    for (uint32_t i = 0; i < n; i++) slot_add(&u, block->bindings[i].var);
    for (uint32_t i = 0; i < n; i++) {
        boff[i] = u.uslot.len;
        collect_uses(&u, block->bindings[i].value, i);
    }
    boff[n] = u.uslot.len;
    uint32_t nv = bi->nvars = u.vars.len;
    bi->vars = u.vars.data;
    bi->user_off = gr_xmalloc(sizeof(uint32_t) * (nv + 1));
    bi->user_off[0] = 0;
    for (uint32_t k = 0; k < nv; k++) bi->user_off[k + 1] = bi->user_off[k] + u.count.data[k];
    bi->users = gr_xmalloc(sizeof(uint32_t) * (bi->user_off[nv] + 1));
    /* count becomes the fill cursor, then the use count. */
    for (uint32_t k = 0; k < nv; k++) u.count.data[k] = bi->user_off[k];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = boff[i]; j < boff[i + 1]; j++) bi->users[u.count.data[u.uslot.data[j]]++] = i;
    free(boff);
    gr_vec_free(&u.uslot);
    bi->use_count = u.count.data;
    bi->bind_of = gr_xmalloc(sizeof(int32_t) * (nv + 1));
    for (uint32_t k = 0; k < nv; k++) {
        bi->bind_of[k] = -1;
        bi->use_count[k] = bi->user_off[k + 1] - bi->user_off[k];
    }
    for (uint32_t i = 0; i < n; i++) {
        const ir_var *v = block->bindings[i].var;
        uint32_t sl = slot_get(bi, &v->base);
        if (bi->bind_of[sl - 1] >= 0) continue;                 /* first definition */
        bi->bind_of[sl - 1] = (int32_t)i;
        if (v->base.kind == IR_VAR) bi->use_count[sl - 1]++;   /* escapes the block */
    }
    return bi;
}

void pat_block_info_free(pat_block_info *bi) {
    if (!bi) return;
    gr_map_free(&bi->slot_far);
    gr_map_free(&bi->value_var_);
    free(bi->slot_by_id);
    free(bi->vars);
    free(bi->bind_of);
    free(bi->user_off);
    free(bi->users);
    free(bi->use_count);
    free(bi);
}

int pat_block_binding_of(const pat_block_info *bi, const ir_expr *var) {
    if (!bi || !var) return -1;
    uint32_t s = slot_get(bi, var);
    return s ? bi->bind_of[s - 1] : -1;
}

uint32_t pat_block_use_count(const pat_block_info *bi, const ir_expr *var) {
    uint32_t s = bi && var ? slot_get(bi, var) : 0;
    return s ? bi->use_count[s - 1] : 0;
}

const uint32_t *pat_block_users(const pat_block_info *bi, const ir_expr *var, uint32_t *n) {
    uint32_t s = bi && var ? slot_get(bi, var) : 0;
    if (!s) { *n = 0; return NULL; }
    *n = bi->user_off[s] - bi->user_off[s - 1];
    return bi->users + bi->user_off[s - 1];
}

ir_var *pat_block_value_var(const pat_block_info *cbi, const ir_expr *value) {
    if (!cbi || !value) return NULL;
    pat_block_info *bi = (pat_block_info *)cbi;
    if (!bi->value_var_built_) {
        for (uint32_t i = 0; bi->block && i < bi->block->n; i++) {
            const ir_binding *b = &bi->block->bindings[i];
            if (!gr_map_get(&bi->value_var_, GR_MAP_PTR(b->value), NULL))
                gr_map_put(&bi->value_var_, GR_MAP_PTR(b->value), GR_MAP_PTR(b->var));
        }
        bi->value_var_built_ = true;
    }
    return (ir_var *)(uintptr_t)gr_map_get_or(&bi->value_var_, GR_MAP_PTR(value), 0);
}

/* ---- matcher ---- */

void pat_match_result_init(pat_match_result *m) { memset(m, 0, sizeof(*m)); }

void pat_match_result_free(pat_match_result *m) {
    gr_vec_free(&m->entries);
    gr_vec_free(&m->bindings);
    gr_vec_free(&m->binding_idx);
    gr_vec_free(&m->trail_);
    memset(m, 0, sizeof(*m));
}

typedef struct mstate {
    const pat_block_info *info;
    pat_match_result *r;
    ir_expr *start;                 /* the expression the match started at */
    const pat_block_info *top;      /* info of the start (m->info changes inside functions) */
    pat_match_accept_fn accept;     /* NULL: the first match wins */
    void *user;
    int depth;                      /* > 0 inside a standalone sub-match (not / function) */
} mstate;

enum { G_PAT = 0, G_UNORDERED = 1 };

typedef struct goal {
    uint8_t kind;
    const pat_t *p;
    ir_expr *e;
    const struct goal *next;
    /* G_UNORDERED */
    const ir_tuple *tup;
    uint32_t k;
    uint64_t used;
} goal;

/* The binding index that binds var e in the block (match_cast bindings are opaque), or -1. */
static int bound_at(const mstate *m, const ir_expr *e) {
    if (!m->info || !ir_is_var(e)) return -1;
    int i = pat_block_binding_of(m->info, e);
    if (i < 0 || m->info->block->bindings[i].match_sinfo) return -1;
    return i;
}

/* Follows var -> value inside the block; `record` pushes the followed bindings. */
static ir_expr *unwrap(mstate *m, ir_expr *e, bool record) {
    for (int guard = 0; guard < 1 << 20; guard++) {
        int i = bound_at(m, e);
        if (i < 0) return e;
        e = m->info->block->bindings[i].value;
        /* a var-to-var alias (`y1 = y`) is looked through but never joins the match: as in
         * TVM, only calls and projections are fused, so the alias stays outside */
        if (record && !ir_is_var(e)) gr_vec_push(&m->r->trail_, (uint32_t)i);
    }
    return e;
}

typedef struct mark { uint32_t ne, nt; } mark;
static mark save(const mstate *m) { return (mark){m->r->entries.len, m->r->trail_.len}; }
static void restore(mstate *m, mark k) { m->r->entries.len = k.ne; m->r->trail_.len = k.nt; }

static void record(mstate *m, const pat_t *p, ir_expr *e, ir_expr *v) {
    pat_match_entry en = {p, e, v};
    gr_vec_push(&m->r->entries, en);
}

static bool solve(mstate *m, const goal *g);

static bool solve_pat(mstate *m, const pat_t *p, ir_expr *e, const goal *next) {
    goal g = {.kind = G_PAT, .p = p, .e = e, .next = next};
    return solve(m, &g);
}

static bool is_commutative(const ir_expr *callee) {
    if (!callee || callee->kind != IR_OP) return false;
    ir_op_id id = ir_op_def_id(((const ir_op *)callee)->def);
    return id == IR_OP_ADD || id == IR_OP_MULTIPLY;
}

/* Goals callee, args[order...], then next. */
static bool solve_call(mstate *m, const pat_t *p, ir_call *c, bool swap, const goal *next) {
    uint32_t n = p->n;
    goal gs[n + 1];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ai = swap ? n - 1 - i : i;
        gs[i + 1] = (goal){.kind = G_PAT, .p = p->subs[i], .e = c->args[ai],
                           .next = i + 1 < n ? &gs[i + 2] : next};
    }
    gs[0] = (goal){.kind = G_PAT, .p = p->a, .e = c->callee, .next = n ? &gs[1] : next};
    return solve(m, &gs[0]);
}

static bool dims_equal(uint32_t n, const ir_prim *const *want, const ir_prim *const *have) {
    for (uint32_t i = 0; i < n; i++)
        if (want[i] && want[i] != have[i]) return false;
    return true;
}

static bool attrs_subset(const ir_attrs *want, const ir_attrs *have) {
    if (!want) return true;
    for (uint32_t i = 0; i < want->n; i++) {
        const ir_attr *h = ir_attrs_get(have, want->keys[i]);
        if (!h || !ir_attr_equal(&want->vals[i], h)) return false;
    }
    return true;
}

static bool solve_func_inner(mstate *m, const pat_t *p, ir_func *f);

static bool solve_func(mstate *m, const pat_t *p, ir_func *f) {
    if (f->nparams != p->n) return false;
    m->depth++;
    bool ok = solve_func_inner(m, p, f);
    m->depth--;
    return ok;
}

static bool solve_func_inner(mstate *m, const pat_t *p, ir_func *f) {
    for (uint32_t i = 0; i < p->n; i++)
        if (!solve_pat(m, p->subs[i], &f->params[i]->base, NULL)) return false;
    ir_expr *body = f->body;
    const pat_block_info *saved = m->info;
    pat_block_info *inner = NULL;
    if (body->kind == IR_SEQ) {
        ir_seq *s = (ir_seq *)body;
        if (s->nblocks) inner = pat_block_info_build(m->info ? m->info->ctx : NULL, s->blocks[s->nblocks - 1]);
        body = s->body;
    }
    m->info = inner;
    uint32_t nt = m->r->trail_.len;
    bool ok = solve_pat(m, p->a, body, NULL);
    m->r->trail_.len = nt;   /* the function's own bindings are not bindings of this block */
    m->info = saved;
    pat_block_info_free(inner);
    return ok;
}

static bool finish(mstate *m);

static bool solve(mstate *m, const goal *g) {
    if (!g) return m->depth > 0 || !m->accept || finish(m);
    if (g->kind == G_UNORDERED) {
        const pat_t *up = g->p;
        if (g->k == up->n) return solve(m, g->next);
        for (uint32_t j = 0; j < g->tup->n; j++) {
            if (g->used >> j & 1) continue;
            goal cont = *g;
            cont.k = g->k + 1;
            cont.used = g->used | (1ull << j);
            mark mk = save(m);
            if (solve_pat(m, up->subs[g->k], g->tup->fields[j], &cont)) return true;
            restore(m, mk);
        }
        return false;
    }
    const pat_t *p = g->p;
    ir_expr *e = g->e;
    if (!e) return false;
    /* Memo: a pattern node that matched already must meet the same expression again. */
    for (uint32_t i = 0; i < m->r->entries.len; i++)
        if (m->r->entries.data[i].pat == p) {
            ir_expr *v = unwrap(m, e, false);
            return v == m->r->entries.data[i].value && solve(m, g->next);
        }
    mark mk = save(m);
    ir_expr *v;
    bool ok = false;
    switch ((pat_kind)p->kind) {
    case PAT_WILDCARD:
        record(m, p, e, unwrap(m, e, false));
        ok = solve(m, g->next);
        break;
    case PAT_EXPR:
        v = unwrap(m, e, false);
        if (e == p->expr || v == p->expr || ir_struct_equal(v, p->expr, 0)) {
            record(m, p, e, v);
            ok = solve(m, g->next);
        }
        break;
    case PAT_OP:
        v = unwrap(m, e, false);
        if (v->kind == IR_OP) {
            const char *name = ((ir_op *)v)->def->name;
            for (uint32_t i = 0; i < p->n && !ok; i++) ok = p->names[i] == name;
        }
        if (ok) { record(m, p, e, v); ok = solve(m, g->next); }
        break;
    case PAT_CALL: {
        v = unwrap(m, e, true);
        if (v->kind != IR_CALL) break;
        ir_call *c = (ir_call *)v;
        if (p->varargs ? c->nargs < p->n : c->nargs != p->n) break;
        record(m, p, e, v);
        mark inner = save(m);
        if (solve_call(m, p, c, false, g->next)) { ok = true; break; }
        restore(m, inner);
        if (p->n == 2 && c->nargs == 2 && is_commutative(c->callee))
            ok = solve_call(m, p, c, true, g->next);
        break;
    }
    case PAT_CONST:
        v = unwrap(m, e, true);
        if (v->kind == IR_CONST) { record(m, p, e, v); ok = solve(m, g->next); }
        break;
    case PAT_VAR: case PAT_DFVAR:
        if (ir_is_var(e) && (p->kind == PAT_VAR || e->kind == IR_DFVAR) &&
            (!p->str || strcmp(((ir_var *)e)->name, p->str) == 0)) {
            record(m, p, e, unwrap(m, e, false));
            ok = solve(m, g->next);
        }
        break;
    case PAT_GVAR:
        v = unwrap(m, e, false);
        if (v->kind == IR_GVAR && (!p->str || strstr(((ir_gvar *)v)->name, p->str))) {
            record(m, p, e, v);
            ok = solve(m, g->next);
        }
        break;
    case PAT_EXTERN:
        v = unwrap(m, e, false);
        if (v->kind == IR_EXTERN && (!p->str || strcmp(((ir_extern *)v)->symbol, p->str) == 0)) {
            record(m, p, e, v);
            ok = solve(m, g->next);
        }
        break;
    case PAT_TUPLE: case PAT_TUPLE_UNORDERED: {
        v = unwrap(m, e, true);
        if (v->kind != IR_TUPLE) break;
        ir_tuple *t = (ir_tuple *)v;
        if (t->n != p->n) break;
        record(m, p, e, v);
        if (p->kind == PAT_TUPLE_UNORDERED && p->n <= 64) {
            goal u = {.kind = G_UNORDERED, .p = p, .tup = t, .next = g->next};
            ok = solve(m, &u);
        } else if (p->kind == PAT_TUPLE) {
            uint32_t n = p->n;
            goal gs[n + 1];
            for (uint32_t i = 0; i < n; i++)
                gs[i] = (goal){.kind = G_PAT, .p = p->subs[i], .e = t->fields[i],
                               .next = i + 1 < n ? &gs[i + 1] : g->next};
            ok = solve(m, n ? &gs[0] : g->next);
        }
        break;
    }
    case PAT_TGI: {
        v = unwrap(m, e, true);
        if (v->kind != IR_TGI) break;
        ir_tgi *t = (ir_tgi *)v;
        if (p->index >= 0 && t->index != p->index) break;
        record(m, p, e, v);
        ok = solve_pat(m, p->a, t->tuple, g->next);
        break;
    }
    case PAT_SHAPE:
        v = unwrap(m, e, false);
        if (v->kind == IR_SHAPE && ((ir_shape_expr *)v)->n == p->n &&
            dims_equal(p->n, p->dims, ((ir_shape_expr *)v)->dims)) {
            record(m, p, e, v);
            ok = solve(m, g->next);
        }
        break;
    case PAT_HAS_DTYPE: {
        const ir_sinfo *s = e->sinfo;
        if (s && (s->kind == IR_SINFO_TENSOR || s->kind == IR_SINFO_PRIM) && ir_dtype_eq(s->dtype, p->dtype)) {
            record(m, p, e, unwrap(m, e, false));
            ok = solve_pat(m, p->a, e, g->next);
        }
        break;
    }
    case PAT_HAS_SHAPE: {
        const ir_sinfo *s = e->sinfo;
        if (s && s->kind == IR_SINFO_TENSOR && (p->ndim < 0 || s->ndim == p->ndim) &&
            (!p->dims || (s->dims && dims_equal(p->n, p->dims, s->dims)))) {
            record(m, p, e, unwrap(m, e, false));
            ok = solve_pat(m, p->a, e, g->next);
        }
        break;
    }
    case PAT_HAS_SINFO:
        if (e->sinfo && ir_sinfo_is_base_of(p->sinfo, e->sinfo)) {
            record(m, p, e, unwrap(m, e, false));
            ok = solve_pat(m, p->a, e, g->next);
        }
        break;
    case PAT_HAS_ATTR: {
        v = unwrap(m, e, false);
        const ir_attrs *have = v->kind == IR_CALL ? ((ir_call *)v)->attrs
                             : v->kind == IR_FUNC ? ((ir_func *)v)->attrs : NULL;
        if ((v->kind == IR_CALL || v->kind == IR_FUNC || !p->attrs || !p->attrs->n) &&
            attrs_subset(p->attrs, have)) {
            record(m, p, e, v);
            ok = solve_pat(m, p->a, e, g->next);
        }
        break;
    }
    case PAT_OR: case PAT_OPTIONAL: {
        /* Or: left first; optional: the larger form first. */
        const pat_t *first = p->kind == PAT_OR ? p->a : p->b;
        const pat_t *second = p->kind == PAT_OR ? p->b : p->a;
        v = unwrap(m, e, false);
        record(m, p, e, v);
        mark inner = save(m);
        if (solve_pat(m, first, e, g->next)) { ok = true; break; }
        restore(m, inner);
        ok = solve_pat(m, second, e, g->next);
        break;
    }
    case PAT_AND: {
        record(m, p, e, unwrap(m, e, false));
        goal gb = {.kind = G_PAT, .p = p->b, .e = e, .next = g->next};
        ok = solve_pat(m, p->a, e, &gb);
        break;
    }
    case PAT_NOT: {
        m->depth++;
        bool sub = solve_pat(m, p->a, e, NULL);
        m->depth--;
        restore(m, mk);
        if (!sub) {
            record(m, p, e, unwrap(m, e, false));
            ok = solve(m, g->next);
        }
        break;
    }
    case PAT_FUNC:
        v = unwrap(m, e, false);
        if (v->kind != IR_FUNC) break;
        record(m, p, e, v);
        ok = solve_func(m, p, (ir_func *)v) && solve(m, g->next);
        break;
    default:
        break;
    }
    if (!ok) restore(m, mk);
    return ok;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Fills root, root_var and the bindings (sorted copy of the trail) of a successful match. */
static void fill_result(mstate *m) {
    pat_match_result *out = m->r;
    const pat_block_info *saved = m->info;
    m->info = m->top;
    out->root = unwrap(m, m->start, false);
    out->root_var = pat_block_binding_of(m->top, m->start) >= 0 ? (ir_var *)m->start : NULL;
    m->info = saved;
    out->bindings.len = out->binding_idx.len = 0;
    for (uint32_t i = 0; i < out->trail_.len; i++) gr_vec_push(&out->binding_idx, out->trail_.data[i]);
    uint32_t n = out->binding_idx.len;
    if (!n) return;
    qsort(out->binding_idx.data, n, sizeof(uint32_t), cmp_u32);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t b = out->binding_idx.data[i];
        if (i && b == out->binding_idx.data[i - 1]) continue;
        out->binding_idx.data[k++] = b;
        gr_vec_push(&out->bindings, &m->top->block->bindings[b]);
    }
    out->binding_idx.len = k;
}

static bool finish(mstate *m) {
    fill_result(m);
    return m->accept(m->r, m->user);
}

bool pat_match_each(const pat_t *p, ir_expr *e, const pat_block_info *info, pat_match_result *out,
                    pat_match_accept_fn fn, void *user) {
    out->entries.len = out->bindings.len = out->binding_idx.len = out->trail_.len = 0;
    out->root = NULL;
    out->root_var = NULL;
    if (!p || !e) return false;
    mstate m = {.info = info, .r = out, .start = e, .top = info, .accept = fn, .user = user};
    if (!solve_pat(&m, p, e, NULL)) {
        out->entries.len = out->trail_.len = out->bindings.len = out->binding_idx.len = 0;
        out->root = NULL;
        out->root_var = NULL;
        return false;
    }
    if (!fn) fill_result(&m);
    return true;
}

bool pat_match(const pat_t *p, ir_expr *e, const pat_block_info *info, pat_match_result *out) {
    return pat_match_each(p, e, info, out, NULL, NULL);
}

ir_expr *pat_match_get(const pat_match_result *m, const pat_t *p) {
    for (uint32_t i = 0; i < m->entries.len; i++)
        if (m->entries.data[i].pat == p) return m->entries.data[i].value;
    return NULL;
}

ir_expr *pat_match_get_reached(const pat_match_result *m, const pat_t *p) {
    for (uint32_t i = 0; i < m->entries.len; i++)
        if (m->entries.data[i].pat == p) return m->entries.data[i].reached;
    return NULL;
}

static const pat_match_entry *named(const pat_match_result *m, const char *name) {
    if (!name) return NULL;
    for (uint32_t i = 0; i < m->entries.len; i++) {
        const char *n = m->entries.data[i].pat->name;
        if (n && (n == name || strcmp(n, name) == 0)) return &m->entries.data[i];
    }
    return NULL;
}

ir_expr *pat_match_named(const pat_match_result *m, const char *name) {
    const pat_match_entry *en = named(m, name);
    return en ? en->value : NULL;
}

ir_expr *pat_match_named_reached(const pat_match_result *m, const char *name) {
    const pat_match_entry *en = named(m, name);
    return en ? en->reached : NULL;
}

/* ---- ready checks ---- */

bool pat_check_no_leaking_intermediates(const pat_check_ctx *c, const char **reason, void *user) {
    (void)user;
    const pat_match_result *m = c->match;
    for (uint32_t i = 0; i < m->bindings.len; i++) {
        ir_var *v = m->bindings.data[i]->var;
        if (v == c->matched_var) continue;
        if (v->base.kind != IR_DFVAR) {
            *reason = "intermediate escapes the dataflow block";
            return false;
        }
        uint32_t nu = 0;
        const uint32_t *us = pat_block_users(c->block, &v->base, &nu);
        for (uint32_t k = 0; k < nu; k++) {
            bool inside = false;
            for (uint32_t j = 0; j < m->binding_idx.len && !inside; j++)
                inside = m->binding_idx.data[j] == us[k];
            if (!inside) {
                *reason = "intermediate has a user outside the match";
                return false;
            }
        }
    }
    return true;
}
