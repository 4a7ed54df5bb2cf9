/* DeadCodeElimination: drops bindings whose var is never used and whose value has no side
 * effect, and blocks left empty. One backward sweep finds every dead binding (removing one
 * releases the uses it made, so chains of dead code go at once); one rewrite drops them. Spans
 * of dropped bindings go with them: that layer's work is really gone. */
#include "ir/op.h"
#include "ir/transform/pass_impl.h"

typedef struct dce_state {
    gr_map dead;                  /* binding var -> 1 */
    const ir_module *mod;
} dce_state;

static bool removable(const dce_state *s, const ir_expr *v) {
    if (v->kind != IR_CALL) return true;
    const ir_call *c = (const ir_call *)v;
    if (c->callee->kind == IR_OP) return !(((const ir_op *)c->callee)->def->flags & IR_OPF_IMPURE);
    if (c->callee->kind != IR_GVAR) return false;  /* externs and closures may have effects */
    /* a PrimFunc writes its buffers in place: TVM marks calls of one impure */
    const ir_func *f = ir_module_func(s->mod, ((const ir_gvar *)c->callee)->name);
    return !(f && ir_func_tir_text(&f->base));
}

/* Backward sweep over a seq (and the seqs nested in if branches of live bindings). */
static void mark(pu_rewriter *r, dce_state *s, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_IF) {
        mark(r, s, ((const ir_if *)e)->then_branch);
        mark(r, s, ((const ir_if *)e)->else_branch);
        return;
    }
    if (e->kind != IR_SEQ) return;
    const ir_seq *q = (const ir_seq *)e;
    for (uint32_t i = q->nblocks; i-- > 0;) {
        const ir_block *blk = q->blocks[i];
        for (uint32_t j = blk->n; j-- > 0;) {
            const ir_binding *b = &blk->bindings[j];
            if (gr_map_get_or(&r->uses, GR_MAP_PTR(b->var), 0) == 0 && removable(s, b->value)) {
                gr_map_put(&s->dead, GR_MAP_PTR(b->var), 1);
                pu_uncount(r, b->value);
            } else {
                mark(r, s, b->value);
            }
        }
    }
}

static bool dce_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    dce_state *s = r->user;
    if (!gr_map_get(&s->dead, GR_MAP_PTR(b->var), NULL)) pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

/* Marks the dead bindings; the rewrite runs only when there are some. */
static bool dce_prepare(pu_rewriter *r, ir_pass_ctx_t *pc, const ir_module *mod, const ir_func *func) {
    (void)pc;
    dce_state *s = r->user;
    s->mod = mod;
    mark(r, s, func->body);
    return s->dead.len != 0;
}

static void dce_release(void *state) { gr_map_free(&((dce_state *)state)->dead); }

PU_FUNC_PASS(ir_pass_dce, "DeadCodeElimination", 1, .binding = dce_binding, .count_uses = true,
             .state_size = sizeof(dce_state), .prepare = dce_prepare, .release = dce_release);
