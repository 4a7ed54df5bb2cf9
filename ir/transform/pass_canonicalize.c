/* CanonicalizeBindings: `y = x` bindings disappear (uses of y read x), `y = (a, b)[i]` reads the
 * field directly, and `gv = lv` at the end of a dataflow block binds lv's value to gv when lv
 * has no other use. Spans of removed bindings are merged into the binding that now stands for
 * them (when it is in the same block). */
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

static bool canon_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (b->match_sinfo) {
        pu_push(r, b->var, value, b->match_sinfo);
        return true;
    }
    if (value->kind == IR_TGI) {
        ir_tgi *g = (ir_tgi *)value;
        ir_expr *t = ir_is_var(g->tuple) ? pu_def(r, g->tuple) : g->tuple;
        if (t && t->kind == IR_TUPLE && g->index >= 0 && (uint32_t)g->index < ((ir_tuple *)t)->n) {
            ir_expr *field = ((ir_tuple *)t)->fields[g->index];
            if (ir_is_leaf(field)) {
                /* The field now stands for the tuple and the projection: keep both spans. */
                ir_tuple *tt = (ir_tuple *)t;
                pu_alias(r, b, field, ir_si_collapse_bound(r->ctx, value, tt->fields, tt->n, &r->defs));
                return true;
            }
        }
    }
    if (ir_is_var(value)) {
        ir_var *src = (ir_var *)value;
        int i = pu_out_index(r, src);
        if (b->var->base.kind == IR_VAR && src->base.kind == IR_DFVAR && i >= 0 &&
            gr_map_get_or(&r->uses, GR_MAP_PTR(src), 0) == 1) {
            /* gv = lv, lv used only here: lv's binding now defines gv. */
            ir_binding *ob = &r->out->data[i];
            ob->var = b->var;
            gr_map_put(&r->out_pos, GR_MAP_PTR(b->var), ((uint64_t)r->block_serial << 32) | (uint32_t)(i + 1));
            gr_map_put(&r->remap, GR_MAP_PTR(src), GR_MAP_PTR(b->var)); /* for var_map */
            gr_map_put(&r->defs, GR_MAP_PTR(b->var), GR_MAP_PTR(ob->value));
            pu_merge_span(r, i, b->var->base.span);
            return true;
        }
        pu_alias(r, b, value, NULL);
        return true;
    }
    pu_push(r, b->var, value, NULL);
    return true;
}

PU_FUNC_PASS(ir_pass_canonicalize_bindings, "CanonicalizeBindings", 0, .binding = canon_binding,
             .count_uses = true);
