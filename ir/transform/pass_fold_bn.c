/* FoldBatchNormIntoConv: conv2d(x, W) followed by an inference batch_norm (taken at [0]) or by
 * its decomposed form multiply(conv, S) + B, with W, S, B and the batch-norm params constant,
 * becomes add(conv2d(x, W'), bias) with W' = W * s[o] and bias = beta - mean * s (s = gamma /
 * sqrt(var + eps)), computed here in C. The new expressions carry the SequentialSpan of the conv
 * and the batch-norm layers (SIBuilder collapse over the matched chain); the new constants carry the spans of the
 * constants they came from. The old conv/batch_norm bindings become dead (DCE removes them).
 * Layouts: NCHW data, OIHW kernel, channel axis 1. */
#include <math.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

static bool str_is(const ir_attrs *a, const char *key, const char *want) {
    const char *s = ir_attrs_get_str(a, key);
    return !s || strcmp(s, want) == 0;
}

/* The conv2d bound to var v, usable for folding (single use, constant 4-d float weight). */
static ir_call *foldable_conv(pu_rewriter *r, ir_expr *v) {
    if (!ir_is_var(v) || gr_map_get_or(&r->uses, GR_MAP_PTR(v), 0) != 1) return NULL;
    ir_call *c = pu_op_call(pu_def(r, v), IR_OP_CONV2D);
    if (!c || c->nargs != 2 || c->args[1]->kind != IR_CONST) return NULL;
    const rt_tensor *w = ((ir_const *)c->args[1])->data;
    if (w->dl.ndim != 4 || w->dl.dtype.code != kDLFloat) return NULL;
    if (!str_is(c->attrs, "data_layout", "NCHW") || !str_is(c->attrs, "kernel_layout", "OIHW")) return NULL;
    const char *ol = ir_attrs_get_str(c->attrs, "out_layout");
    if (ol && strcmp(ol, "NCHW") != 0) return NULL;
    return c;
}

/* Per-channel value i of a constant holding C values (or one, broadcast). */
static bool per_channel(const ir_expr *e, int64_t C) {
    if (!e || e->kind != IR_CONST) return false;
    int64_t n = rt_tensor_numel(((const ir_const *)e)->data);
    return n == C || n == 1;
}
static double chan(const ir_expr *e, int64_t i) {
    const rt_tensor *t = ((const ir_const *)e)->data;
    return rt_tensor_get_f64(t, rt_tensor_numel(t) == 1 ? 0 : i);
}

/* Emits add(conv2d(x, W * scale[o]), shift[o] as [C,1,1]) with `span`; binds it to b's var. */
static bool emit_folded(pu_rewriter *r, const ir_binding *b, ir_call *conv, const double *scale,
                        const double *shift, const ir_span *span, const ir_span *wspan,
                        const ir_span *bspan) {
    const rt_tensor *w = ((ir_const *)conv->args[1])->data;
    int64_t C = w->shape[0], per = rt_tensor_numel(w) / (C ? C : 1);
    rt_tensor *nw = rt_tensor_new(w->dl.dtype, 4, w->shape);
    int64_t bshape[3] = {C, 1, 1};
    rt_tensor *nb = rt_tensor_new(w->dl.dtype, 3, bshape);
    if (!nw || !nb) {
        rt_tensor_release(nw);
        rt_tensor_release(nb);
        gr_diag_set(r->diag, GR_ERR_NOMEM, "FoldBatchNormIntoConv: out of memory");
        return false;
    }
    for (int64_t o = 0; o < C; o++) {
        for (int64_t k = 0; k < per; k++)
            rt_tensor_set_f64(nw, o * per + k, rt_tensor_get_f64(w, o * per + k) * scale[o]);
        rt_tensor_set_f64(nb, o, shift[o]);
    }
    ir_expr *wc = &ir_const_new(r->ctx, nw, wspan)->base;
    ir_expr *bc = &ir_const_new(r->ctx, nb, bspan)->base;
    rt_tensor_release(nw);
    rt_tensor_release(nb);
    ir_expr *cargs[2] = {conv->args[0], wc};
    /* the scaled conv produces no layer's output (graft diff would compare it with the conv's
     * or the batch norm's); the bias add produces the batch norm's */
    ir_expr *nconv =
        &ir_call_new(r->ctx, conv->callee, 2, cargs, conv->attrs, 0, NULL, ir_span_with_output(r->ctx, span, false))->base;
    ir_expr *aargs[2] = {nconv, bc};
    ir_expr *add = pu_call(r, IR_OP_ADD, 2, aargs, 0, NULL, NULL, span);
    return add && pu_emit_nested(r, b->var, add, "lv") != NULL;
}

static const ir_span *spans_of(ir_ctx_t *ctx, ir_expr *const *es, uint32_t n) {
    const ir_span *parts[8];
    for (uint32_t i = 0; i < n && i < 8; i++) parts[i] = es[i] ? es[i]->span : NULL;
    return ir_span_seq(ctx, parts, n < 8 ? n : 8);
}

/* y = bn[0], bn = batch_norm(c, gamma, beta, mean, var), c = conv2d(x, W). */
static bool try_bn(pu_rewriter *r, const ir_binding *b, ir_expr *value) {
    if (value->kind != IR_TGI || ((ir_tgi *)value)->index != 0) return false;
    ir_expr *bnv = ((ir_tgi *)value)->tuple;
    ir_call *bn = pu_op_call(pu_def(r, bnv), IR_OP_BATCH_NORM);
    if (!bn || bn->nargs != 5 || ir_attrs_get_int(bn->attrs, "axis", 1) != 1) return false;
    ir_call *conv = foldable_conv(r, bn->args[0]);
    if (!conv) return false;
    int64_t C = ((ir_const *)conv->args[1])->data->shape[0];
    for (int i = 1; i < 5; i++)
        if (!per_channel(bn->args[i], C)) return false;
    double eps = ir_attrs_get_float(bn->attrs, "epsilon", 1e-5);
    bool use_scale = ir_attrs_get_bool(bn->attrs, "scale", true);
    bool use_center = ir_attrs_get_bool(bn->attrs, "center", true);
    double *scale = gr_xmalloc(sizeof(double) * (size_t)C * 2), *shift = scale + C;
    for (int64_t o = 0; o < C; o++) {
        double g = use_scale ? chan(bn->args[1], o) : 1.0, be = use_center ? chan(bn->args[2], o) : 0.0;
        scale[o] = g / sqrt(chan(bn->args[4], o) + eps);
        shift[o] = be - chan(bn->args[3], o) * scale[o];
    }
    /* The matched chain, producers first: conv, its var, batch_norm, its var, the [0]. */
    const ir_expr *chain[5] = {&conv->base, bn->args[0], &bn->base, bnv, value};
    const ir_span *span = ir_si_collapse_nodes(r->ctx, chain, 5);
    ir_expr *wsrc[3] = {conv->args[1], bn->args[1], bn->args[4]};
    ir_expr *bsrc[4] = {bn->args[2], bn->args[3], bn->args[1], bn->args[4]};
    bool ok = emit_folded(r, b, conv, scale, shift, span, spans_of(r->ctx, wsrc, 3), spans_of(r->ctx, bsrc, 4));
    free(scale);
    return ok;
}

/* y = add(m, B), m = multiply(c, S), c = conv2d(x, W), S and B per-channel constants. */
static bool try_mul_add(pu_rewriter *r, const ir_binding *b, ir_expr *value) {
    ir_call *add = pu_op_call(value, IR_OP_ADD);
    if (!add || add->nargs != 2 || !ir_is_var(add->args[0])) return false;
    if (gr_map_get_or(&r->uses, GR_MAP_PTR(add->args[0]), 0) != 1) return false;
    ir_call *mul = pu_op_call(pu_def(r, add->args[0]), IR_OP_MULTIPLY);
    if (!mul || mul->nargs != 2) return false;
    ir_call *conv = foldable_conv(r, mul->args[0]);
    if (!conv) return false;
    int64_t C = ((ir_const *)conv->args[1])->data->shape[0];
    ir_expr *S = mul->args[1], *B = add->args[1];
    if (!per_channel(S, C) || !per_channel(B, C)) return false;
    /* Per-channel constants must broadcast along axis 1 of NCHW: [C,1,1], [1,C,1,1] or scalar. */
    const rt_tensor *st = ((ir_const *)S)->data, *bt = ((ir_const *)B)->data;
    const rt_tensor *ts[2] = {st, bt};
    for (int k = 0; k < 2; k++) {
        const rt_tensor *t = ts[k];
        if (rt_tensor_numel(t) == 1 || C == 1) continue;
        bool ok = (t->dl.ndim == 3 && t->shape[0] == C) || (t->dl.ndim == 4 && t->shape[1] == C && t->shape[0] == 1);
        if (!ok) return false;
    }
    double *scale = gr_xmalloc(sizeof(double) * (size_t)C * 2), *shift = scale + C;
    for (int64_t o = 0; o < C; o++) {
        scale[o] = chan(S, o);
        shift[o] = chan(B, o);
    }
    const ir_expr *chain[5] = {&conv->base, mul->args[0], &mul->base, add->args[0], value};
    const ir_span *span = ir_si_collapse_nodes(r->ctx, chain, 5);
    ir_expr *wsrc[2] = {conv->args[1], S};
    bool ok = emit_folded(r, b, conv, scale, shift, span, spans_of(r->ctx, wsrc, 2), B->span);
    free(scale);
    return ok;
}

static bool fold_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (!b->match_sinfo) {
        size_t before = r->out->len;
        gr_status before_code = r->diag ? r->diag->code : GR_OK;
        if (try_bn(r, b, value) || try_mul_add(r, b, value)) return true;
        if (r->diag && r->diag->code != before_code) return false;
        GR_ASSERT(r->out->len == before);
    }
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

PU_FUNC_PASS(ir_pass_fold_bn_conv, "FoldBatchNormIntoConv", 2, .binding = fold_binding,
             .count_uses = true);
