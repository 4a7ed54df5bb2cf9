/* Normalize: A-normal form (nested non-leaf arguments get their own bindings, carrying their
 * own spans) and struct info everywhere. Requires nothing; preserves spans. */
#include "ir/builder.h"
#include "ir/pass_impl.h"

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

static gr_status normalize_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                              const char *name, ir_func *func, ir_func **out, gr_diag *diag) {
    (void)self, (void)name;
    pu_rewriter r;
    pu_init(&r, mod->ctx, diag);
    r.binding = norm_binding;
    ir_func *nf = pu_rewrite_func(&r, func);
    pu_finish(&r, pc);
    if (!nf) return diag && diag->code ? diag->code : GR_ERR_TYPE;
    if (!nf->base.sinfo && !ir_normalize(mod->ctx, &nf->base, diag)) return diag ? diag->code : GR_ERR_TYPE;
    *out = nf;
    return GR_OK;
}

const ir_pass ir_pass_normalize = {
    .name = "Normalize", .kind = IR_PASS_FUNCTION, .opt_level = 0, .func_fn = normalize_fn,
};
