/* ToNonDataflow: every dataflow block becomes a plain binding block and its dataflow vars
 * plain vars (same names, spans and struct info). */
#include "ir/pass_impl.h"

static bool tnd_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    ir_var *v = b->var;
    if (v->base.kind == IR_DFVAR) {
        ir_var *nv = ir_var_new(r->ctx, v->name, v->base.sinfo, v->base.span);
        gr_map_put(&r->remap, GR_MAP_PTR(v), GR_MAP_PTR(nv));
        v = nv;
    }
    ir_binding nb = {v, value, b->match_sinfo};
    gr_vec_push(r->out, nb);
    return true;
}

static gr_status tnd_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, const char *name,
                        ir_func *func, ir_func **out, gr_diag *diag) {
    (void)self, (void)name;
    pu_rewriter r;
    pu_init(&r, mod->ctx, diag);
    r.binding = tnd_binding;
    r.no_dataflow = true;
    ir_func *nf = pu_rewrite_func(&r, func);
    pu_finish(&r, pc);
    if (!nf) return diag && diag->code ? diag->code : GR_ERR_INVALID;
    *out = nf;
    return GR_OK;
}

const ir_pass ir_pass_to_non_dataflow = {
    .name = "ToNonDataflow", .kind = IR_PASS_FUNCTION, .opt_level = 0, .func_fn = tnd_fn,
};
