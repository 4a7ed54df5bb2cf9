/* EliminateCommonSubexpr: inside each dataflow block, a binding whose value equals an earlier
 * one (same callee, same argument nodes, same attrs) becomes an alias of the earlier var. The
 * duplicate's span is merged into the kept binding, so both layers stay traceable. */

#include "ir/op.h"
#include "ir/transform/pass_impl.h"

typedef struct cse_state {
    gr_map first;                 /* hash -> 1 + index into entries (head of a chain) */
    GR_VEC(uint32_t) next;        /* chain: 1 + index, 0 = end */
    GR_VEC(ir_binding) entries;   /* value and the var holding it */
    uint32_t block;               /* serial of the block the table belongs to */
} cse_state;

static uint64_t value_hash(const ir_expr *v) {
    uint64_t h = gr_hash_mix(0x9e37, v->kind);
    if (v->kind == IR_CALL) {
        const ir_call *c = (const ir_call *)v;
        h = gr_hash_mix(h, GR_MAP_PTR(c->callee));
        for (uint32_t i = 0; i < c->nargs; i++) h = gr_hash_mix(h, GR_MAP_PTR(c->args[i]));
    } else if (v->kind == IR_TUPLE) {
        const ir_tuple *t = (const ir_tuple *)v;
        for (uint32_t i = 0; i < t->n; i++) h = gr_hash_mix(h, GR_MAP_PTR(t->fields[i]));
    } else if (v->kind == IR_TGI) {
        h = gr_hash_mix(gr_hash_mix(h, GR_MAP_PTR(((const ir_tgi *)v)->tuple)), (uint64_t)((const ir_tgi *)v)->index);
    }
    return h ? h : 1;
}

static bool value_equal(const ir_expr *a, const ir_expr *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == IR_CALL) {
        const ir_call *x = (const ir_call *)a, *y = (const ir_call *)b;
        if (x->callee != y->callee || x->nargs != y->nargs || x->nsinfo_args != y->nsinfo_args) return false;
        for (uint32_t i = 0; i < x->nargs; i++)
            if (x->args[i] != y->args[i]) return false;
        for (uint32_t i = 0; i < x->nsinfo_args; i++)
            if (x->sinfo_args[i] != y->sinfo_args[i]) return false;
        return pu_attrs_equal(x->attrs, y->attrs);
    }
    if (a->kind == IR_TUPLE) {
        const ir_tuple *x = (const ir_tuple *)a, *y = (const ir_tuple *)b;
        if (x->n != y->n) return false;
        for (uint32_t i = 0; i < x->n; i++)
            if (x->fields[i] != y->fields[i]) return false;
        return true;
    }
    if (a->kind == IR_TGI)
        return ((const ir_tgi *)a)->tuple == ((const ir_tgi *)b)->tuple &&
               ((const ir_tgi *)a)->index == ((const ir_tgi *)b)->index;
    return false;
}

static bool eligible(const ir_expr *v) {
    if (v->kind == IR_TUPLE || v->kind == IR_TGI) return true;
    if (v->kind != IR_CALL) return false;
    const ir_call *c = (const ir_call *)v;
    return c->callee->kind == IR_OP && !(((const ir_op *)c->callee)->def->flags & IR_OPF_IMPURE);
}

static void cse_reset(cse_state *s, uint32_t blk) {
    gr_map_clear(&s->first);
    s->next.len = 0;
    s->entries.len = 0;
    s->block = blk;
}

static bool cse_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    cse_state *s = r->user;
    if (s->block != r->block_serial) cse_reset(s, r->block_serial);
    if (!dataflow || b->match_sinfo || !eligible(value)) {
        pu_push(r, b->var, value, b->match_sinfo);
        return true;
    }
    uint64_t h = value_hash(value);
    uint64_t head = gr_map_get_or(&s->first, h, 0);
    for (uint64_t k = head; k; k = s->next.data[k - 1]) {
        ir_binding *e = &s->entries.data[k - 1];
        if (value_equal(e->value, value)) {
            pu_alias(r, b, &e->var->base, value->span);
            return true;
        }
    }
    ir_var *v = pu_push(r, b->var, value, NULL);
    ir_binding ent = {v, value, NULL};
    gr_vec_push(&s->entries, ent);
    gr_vec_push(&s->next, (uint32_t)head);
    gr_map_put(&s->first, h, s->entries.len);
    return true;
}

static void cse_release(void *state) {
    cse_state *s = state;
    gr_map_free(&s->first);
    gr_vec_free(&s->next);
    gr_vec_free(&s->entries);
}

PU_FUNC_PASS(ir_pass_cse, "EliminateCommonSubexpr", 1, .binding = cse_binding,
             .state_size = sizeof(cse_state), .release = cse_release);
