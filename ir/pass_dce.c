/* DeadCodeElimination: drops bindings whose var is never used and whose value has no side
 * effect (to a fixed point), and blocks left empty. Spans of dropped bindings go with them:
 * that layer's work is really gone. */
#include "ir/op.h"
#include "ir/pass_impl.h"

static bool removable(const ir_expr *v) {
    if (v->kind != IR_CALL) return true;
    const ir_call *c = (const ir_call *)v;
    if (c->callee->kind == IR_OP) return !(((const ir_op *)c->callee)->def->flags & IR_OPF_IMPURE);
    return c->callee->kind == IR_GVAR;  /* externs and closures may have effects */
}

static bool dce_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (gr_map_get_or(&r->uses, GR_MAP_PTR(b->var), 0) == 0 && removable(value)) {
        *(bool *)r->user = true;
        return true;
    }
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

static gr_status dce_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, const char *name,
                        ir_func *func, ir_func **out, gr_diag *diag) {
    (void)self, (void)name;
    ir_func *cur = func;
    for (;;) {
        bool dropped = false;
        pu_rewriter r;
        pu_init(&r, mod->ctx, diag);
        r.binding = dce_binding;
        r.user = &dropped;
        pu_count_uses(&r, cur);
        ir_func *nf = pu_rewrite_func(&r, cur);
        pu_finish(&r, pc);
        if (!nf) return diag && diag->code ? diag->code : GR_ERR_INVALID;
        cur = nf;
        if (!dropped) break;
    }
    *out = cur;
    return GR_OK;
}

const ir_pass ir_pass_dce = {
    .name = "DeadCodeElimination", .kind = IR_PASS_FUNCTION, .opt_level = 1, .func_fn = dce_fn,
};
