/* ToNonDataflow: every dataflow block becomes a plain binding block and its dataflow vars
 * plain vars (same names, spans and struct info). */
#include "ir/transform/pass_impl.h"

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

PU_FUNC_PASS(ir_pass_to_non_dataflow, "ToNonDataflow", 0, .binding = tnd_binding,
             .no_dataflow = true);
