/* DecomposeOpsForInference: R.nn.batch_norm (inference) becomes elementwise ops,
 *   out = (x - mean) / sqrt(var + eps) * gamma + beta   (params expanded along `axis`)
 * and the batch_norm binding becomes the tuple (out, moving_mean, moving_var). Every new
 * expression gets the batch_norm's span through SIBuilder fill (seed 001's SimplifyInference). */
#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

/* v (1-d, along `axis`) expanded so it broadcasts against an ndim-d tensor. */
static ir_expr *expand(pu_rewriter *r, ir_expr *v, int32_t axis, int32_t ndim) {
    int32_t trail = ndim - 1 - axis;
    if (trail <= 0) return v;
    int64_t axes[8];
    for (int32_t i = 0; i < trail && i < 8; i++) axes[i] = i + 1;
    const char *key = "axis";
    ir_attr val = ir_attr_ints(r->ctx, (uint32_t)trail, axes);
    return pu_call(r, IR_OP_EXPAND_DIMS, 1, &v, 1, &key, &val, NULL);
}

static ir_expr *bin(pu_rewriter *r, ir_op_id op, ir_expr *a, ir_expr *b) {
    if (!a || !b) return NULL;
    ir_expr *args[2] = {a, b};
    return pu_call(r, op, 2, args, 0, NULL, NULL, NULL);
}

static bool decompose_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    ir_call *bn = pu_op_call(value, IR_OP_BATCH_NORM);
    const ir_sinfo *xs = bn && bn->nargs == 5 ? bn->args[0]->sinfo : NULL;
    /* A batch_norm nobody reads (FoldBatchNormIntoConv took its place) is left to DCE. */
    bool dead = gr_map_get_or(&r->uses, GR_MAP_PTR(b->var), 0) == 0;
    if (!xs || xs->kind != IR_SINFO_TENSOR || xs->ndim < 1 || b->match_sinfo || dead) {
        pu_push(r, b->var, value, b->match_sinfo);
        return true;
    }
    int32_t axis;
    if (!ir__decompose_axis(ir_attrs_get_int(bn->attrs, "axis", 1), xs->ndim, &axis)) {
        pu_push(r, b->var, value, NULL);
        return true;
    }
    ir_expr *x = bn->args[0], *gamma = bn->args[1], *beta = bn->args[2], *mean = bn->args[3],
            *var = bn->args[4];
    double eps = ir_attrs_get_float(bn->attrs, "epsilon", 1e-5);
    ir_expr *e = bin(r, IR_OP_ADD, var, pu_scalar(r->ctx, xs->dtype, eps, NULL));
    ir_expr *std = e ? pu_call(r, IR_OP_SQRT, 1, &e, 0, NULL, NULL, NULL) : NULL;
    ir_expr *out = bin(r, IR_OP_SUBTRACT, x, expand(r, mean, axis, xs->ndim));
    out = bin(r, IR_OP_DIVIDE, out, std ? expand(r, std, axis, xs->ndim) : NULL);
    if (ir_attrs_get_bool(bn->attrs, "scale", true)) out = bin(r, IR_OP_MULTIPLY, out, expand(r, gamma, axis, xs->ndim));
    if (ir_attrs_get_bool(bn->attrs, "center", true)) out = bin(r, IR_OP_ADD, out, expand(r, beta, axis, xs->ndim));
    if (!out) return false;
    ir_expr *inputs[5] = {x, gamma, beta, mean, var};
    out = ir_si_fill(r->ctx, value->span, out, inputs, 5);
    ir_var *ov = pu_emit_nested(r, NULL, out, "lv");
    if (!ov) return false;
    ir_expr *fields[3] = {&ov->base, mean, var};
    ir_expr *tup = pu_normalize(r, &ir_tuple_new(r->ctx, 3, fields, value->span)->base);
    if (!tup) return false;
    pu_push(r, b->var, tup, NULL);
    return true;
}

PU_FUNC_PASS(ir_pass_decompose_inference, "DecomposeOpsForInference", 0,
             .binding = decompose_binding, .count_uses = true);
