/* Graph constraints over a dataflow block (TVM PatternContext / match_dfb): every pattern of
 * the context is assigned a distinct var of the block by backtracking, each pattern matching
 * its var (the expression matcher, following bindings) and every used_by / only_used_by edge
 * between assigned patterns holding. Patterns are placed in an order where each one touches an
 * assigned neighbour when it can, so candidates come from the use-def lists, not the block. */
#include "patterns/match.h"

#include <string.h>

typedef struct pat_edge {
    uint32_t a, b;          /* producer, consumer (indices into pats) */
    int index;
    uint8_t kind;           /* pat_edge_kind */
} pat_edge;

struct pat_ctx {
    ir_ctx_t *ctx;
    GR_VEC(const pat_t *) pats;
    GR_VEC(pat_edge) edges;
    GR_VEC(uint64_t) same_shape;   /* (a << 32) | b */
    /* match scratch */
    GR_VEC(ir_var *) assign;
    GR_VEC(uint32_t) order;
    pat_match_result scratch;
    gr_map used;            /* var -> 1 while assigned */
};

pat_ctx_t *pat_ctx_new(ir_ctx_t *ctx, const pat_ctx_t *parent, bool incremental) {
    pat_ctx_t *pc = gr_xcalloc(1, sizeof(*pc));
    pc->ctx = ctx;
    pat_match_result_init(&pc->scratch);
    gr_map_init(&pc->used);
    if (parent && incremental) {
        for (uint32_t i = 0; i < parent->pats.len; i++) gr_vec_push(&pc->pats, parent->pats.data[i]);
        for (uint32_t i = 0; i < parent->edges.len; i++) gr_vec_push(&pc->edges, parent->edges.data[i]);
        for (uint32_t i = 0; i < parent->same_shape.len; i++) gr_vec_push(&pc->same_shape, parent->same_shape.data[i]);
    }
    return pc;
}

void pat_ctx_free(pat_ctx_t *pc) {
    if (!pc) return;
    gr_vec_free(&pc->pats);
    gr_vec_free(&pc->edges);
    gr_vec_free(&pc->same_shape);
    gr_vec_free(&pc->assign);
    gr_vec_free(&pc->order);
    pat_match_result_free(&pc->scratch);
    gr_map_free(&pc->used);
    free(pc);
}

static uint32_t index_of(pat_ctx_t *pc, const pat_t *p) {
    for (uint32_t i = 0; i < pc->pats.len; i++)
        if (pc->pats.data[i] == p) return i;
    gr_vec_push(&pc->pats, p);
    return pc->pats.len - 1;
}

static void add_edge(pat_ctx_t *pc, const pat_t *a, const pat_t *b, int index, pat_edge_kind k) {
    if (!pc || !a || !b) return;
    pat_edge e = {index_of(pc, a), index_of(pc, b), index < 0 ? -1 : index, (uint8_t)k};
    gr_vec_push(&pc->edges, e);
}

void pat_ctx_used_by(pat_ctx_t *pc, const pat_t *a, const pat_t *b, int index) {
    add_edge(pc, a, b, index, PAT_USED_BY);
}

void pat_ctx_only_used_by(pat_ctx_t *pc, const pat_t *a, const pat_t *b, int index) {
    add_edge(pc, a, b, index, PAT_ONLY_USED_BY);
}

void pat_ctx_same_shape(pat_ctx_t *pc, const pat_t *a, const pat_t *b) {
    if (!pc || !a || !b) return;
    uint64_t ia = index_of(pc, a), ib = index_of(pc, b);
    gr_vec_push(&pc->same_shape, (ia << 32) | ib);
}

static bool same_shape(const ir_var *a, const ir_var *b) {
    const ir_sinfo *x = a->base.sinfo, *y = b->base.sinfo;
    if (!x || !y || x->kind != IR_SINFO_TENSOR || y->kind != IR_SINFO_TENSOR) return false;
    if (x->ndim < 0 || x->ndim != y->ndim || !x->dims || !y->dims) return false;
    for (int32_t i = 0; i < x->ndim; i++)
        if (x->dims[i] != y->dims[i]) return false;
    return true;
}

uint32_t pat_ctx_count(const pat_ctx_t *pc) { return pc ? pc->pats.len : 0; }
const pat_t *pat_ctx_at(const pat_ctx_t *pc, uint32_t i) {
    return pc && i < pc->pats.len ? pc->pats.data[i] : NULL;
}

/* Does edge e hold between the vars assigned to its ends? */
static bool edge_holds(const pat_block_info *bi, const pat_edge *e, ir_var *va, ir_var *vb) {
    int bidx = pat_block_binding_of(bi, &vb->base);
    if (bidx < 0) return false;
    uint32_t nu = 0;
    const uint32_t *us = pat_block_users(bi, &va->base, &nu);
    bool used = false;
    for (uint32_t k = 0; k < nu && !used; k++) used = us[k] == (uint32_t)bidx;
    if (!used) return false;
    if (e->index >= 0) {
        const ir_expr *val = bi->block->bindings[bidx].value;
        if (val->kind != IR_CALL) return false;
        const ir_call *c = (const ir_call *)val;
        if ((uint32_t)e->index >= c->nargs || c->args[e->index] != &va->base) return false;
    }
    if (e->kind == PAT_ONLY_USED_BY && pat_block_use_count(bi, &va->base) != 1) return false;
    return true;
}

typedef struct gsearch {
    pat_ctx_t *pc;
    const pat_block_info *bi;
    const gr_map *exclude;
} gsearch;

static bool try_var(gsearch *s, uint32_t depth, ir_var *v);

static bool place(gsearch *s, uint32_t depth) {
    pat_ctx_t *pc = s->pc;
    if (depth == pc->order.len) {
        for (uint32_t k = 0; k < pc->same_shape.len; k++) {
            uint64_t c = pc->same_shape.data[k];
            if (!same_shape(pc->assign.data[c >> 32], pc->assign.data[(uint32_t)c])) return false;
        }
        return true;
    }
    uint32_t pi = pc->order.data[depth];
    /* Candidates from an assigned neighbour when there is one. */
    for (uint32_t k = 0; k < pc->edges.len; k++) {
        const pat_edge *e = &pc->edges.data[k];
        if (e->b == pi && pc->assign.data[e->a]) {
            uint32_t nu = 0;
            const uint32_t *us = pat_block_users(s->bi, &pc->assign.data[e->a]->base, &nu);
            for (uint32_t j = 0; j < nu; j++) {
                if (j && us[j] == us[j - 1]) continue;
                if (try_var(s, depth, s->bi->block->bindings[us[j]].var)) return true;
            }
            return false;
        }
        if (e->a == pi && pc->assign.data[e->b]) {
            /* Producer: a var among the consumer's call args (or anywhere in its value). */
            int cb = pat_block_binding_of(s->bi, &pc->assign.data[e->b]->base);
            if (cb < 0) return false;
            const ir_expr *val = s->bi->block->bindings[cb].value;
            if (val->kind == IR_CALL) {
                const ir_call *c = (const ir_call *)val;
                for (uint32_t j = 0; j < c->nargs; j++) {
                    if (e->index >= 0 && (uint32_t)e->index != j) continue;
                    ir_expr *a = c->args[j];
                    if (ir_is_var(a) && try_var(s, depth, (ir_var *)a)) return true;
                    if (a->kind == IR_TUPLE)   /* call_dps_packed / concat argument tuples */
                        for (uint32_t q = 0; q < ((ir_tuple *)a)->n; q++) {
                            ir_expr *fq = ((ir_tuple *)a)->fields[q];
                            if (ir_is_var(fq) && try_var(s, depth, (ir_var *)fq)) return true;
                        }
                }
                return false;
            }
            for (uint32_t j = 0; j < s->bi->nvars; j++) {
                uint32_t nu = 0;
                const uint32_t *us = pat_block_users(s->bi, &s->bi->vars[j]->base, &nu);
                bool uses = false;
                for (uint32_t q = 0; q < nu && !uses; q++) uses = (int)us[q] == cb;
                if (uses && try_var(s, depth, s->bi->vars[j])) return true;
            }
            return false;
        }
    }
    for (uint32_t j = 0; j < s->bi->nvars; j++)
        if (try_var(s, depth, s->bi->vars[j])) return true;
    return false;
}

static bool try_var(gsearch *s, uint32_t depth, ir_var *v) {
    pat_ctx_t *pc = s->pc;
    uint32_t pi = pc->order.data[depth];
    if (gr_map_get_or(&pc->used, GR_MAP_PTR(v), 0)) return false;
    if (s->exclude && gr_map_get_or(s->exclude, GR_MAP_PTR(v), 0)) return false;
    if (!pat_match(pc->pats.data[pi], &v->base, s->bi, &pc->scratch)) return false;
    pc->assign.data[pi] = v;
    bool ok = true;
    for (uint32_t k = 0; k < pc->edges.len && ok; k++) {
        const pat_edge *e = &pc->edges.data[k];
        if (e->a != pi && e->b != pi) continue;
        ir_var *va = pc->assign.data[e->a], *vb = pc->assign.data[e->b];
        if (va && vb) ok = edge_holds(s->bi, e, va, vb);
    }
    if (ok) {
        gr_map_put(&pc->used, GR_MAP_PTR(v), 1);
        if (place(s, depth + 1)) return true;
        gr_map_put(&pc->used, GR_MAP_PTR(v), 0);
    }
    pc->assign.data[pi] = NULL;
    return false;
}

bool pat_ctx_match_block(pat_ctx_t *pc, const pat_block_info *bi, const gr_map *exclude,
                         pat_graph_match *out) {
    memset(out, 0, sizeof(*out));
    if (!pc || !bi || !pc->pats.len) return false;
    uint32_t n = pc->pats.len;
    pc->assign.len = 0;
    for (uint32_t i = 0; i < n; i++) gr_vec_push(&pc->assign, NULL);
    /* Order: producers first (no incoming edge), then grow along edges. */
    pc->order.len = 0;
    bool *placed = gr_xcalloc(n, sizeof(bool));
    while (pc->order.len < n) {
        int pick = -1;
        for (uint32_t k = 0; k < pc->edges.len && pick < 0; k++) {
            const pat_edge *e = &pc->edges.data[k];
            if (placed[e->a] && !placed[e->b]) pick = (int)e->b;
            else if (placed[e->b] && !placed[e->a]) pick = (int)e->a;
        }
        for (uint32_t i = 0; i < n && pick < 0; i++) {
            const char *r[1];
            if (!placed[i] && pat_root_ops(pc->pats.data[i], r, 1) >= 0) pick = (int)i;  /* selective */
        }
        for (uint32_t i = 0; i < n && pick < 0; i++) {
            if (placed[i]) continue;
            bool has_producer = false;
            for (uint32_t k = 0; k < pc->edges.len; k++) has_producer |= pc->edges.data[k].b == i;
            if (!has_producer) pick = (int)i;
        }
        for (uint32_t i = 0; i < n && pick < 0; i++)
            if (!placed[i]) pick = (int)i;
        placed[pick] = true;
        gr_vec_push(&pc->order, (uint32_t)pick);
    }
    free(placed);
    gr_map_clear(&pc->used);
    gsearch s = {pc, bi, exclude};
    if (!place(&s, 0)) return false;
    out->n = n;
    out->pats = pc->pats.data;
    out->vars = pc->assign.data;
    return true;
}

ir_var *pat_graph_match_get(const pat_graph_match *gm, const pat_t *p) {
    for (uint32_t i = 0; i < gm->n; i++)
        if (gm->pats[i] == p) return gm->vars[i];
    return NULL;
}
