/* Normalize: A-normal form (nested non-leaf arguments get their own bindings, carrying their
 * own spans) and struct info everywhere. Requires nothing; preserves spans. */
#include "ir/builder.h"
#include "ir/transform/pass_impl.h"

static bool has_nested(const ir_expr *v) {
    if (v->kind == IR_CALL) {
        const ir_call *c = (const ir_call *)v;
        for (uint32_t i = 0; i < c->nargs; i++)
            if (!ir_is_leaf(c->args[i])) return true;
    } else if (v->kind == IR_TUPLE) {
        const ir_tuple *t = (const ir_tuple *)v;
        for (uint32_t i = 0; i < t->n; i++)
            if (!ir_is_leaf(t->fields[i])) return true;
    } else if (v->kind == IR_TGI) {
        return !ir_is_leaf(((const ir_tgi *)v)->tuple);
    }
    return false;
}

static bool norm_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (!b->match_sinfo && has_nested(value)) return pu_emit_nested(r, b->var, value, "lv") != NULL;
    if (!value->sinfo && !ir_normalize(r->ctx, value, r->diag)) return false;
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

/* A function built without struct info gets it once its bindings have theirs. */
static gr_status norm_post(ir_ctx_t *ctx, ir_func *func, gr_diag *diag) {
    if (!func->base.sinfo && !ir_normalize(ctx, &func->base, diag)) return diag ? diag->code : GR_ERR_TYPE;
    return GR_OK;
}

PU_FUNC_PASS(ir_pass_normalize, "Normalize", 0, .binding = norm_binding, .post = norm_post,
             .fail_code = GR_ERR_TYPE);
