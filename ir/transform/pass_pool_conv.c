/* PoolBeforeConv1x1: avg_pool2d(conv2d(x, W)) becomes conv2d(avg_pool2d(x), W) when the conv is
 * pointwise (1x1 kernel, stride 1, no padding, any groups and dilation) and that moves fewer
 * multiply-adds (a pool that shrinks the image: DenseNet's transitions, BN -> ReLU -> conv 1x1
 * -> avg pool 2x2 / 2, run their conv on a quarter of the pixels).
 *
 * Why it is exact: a pointwise conv is one linear map per pixel, y[p] = W x[p], and an average
 * pool is one weighted sum per window with the same weights for every channel, pool(y)[q] =
 * sum_{p in S_q} y[p] / D_q; so pool(W x) = W pool(x) for any window set S_q and divisor D_q
 * (padding, ceil mode, dilation and count_include_pad included; an empty window gives 0 on both
 * sides). A bias b added to the conv before the pool contributes b |S_q| / D_q afterwards, which
 * is b only when every divisor counts exactly the window's input pixels and no window is empty:
 * then add(conv2d(pool(x), W), b). That holds for a pool without padding (ceil-mode windows
 * start inside the input, and the divisor of the part past the edge counts no padding), so a
 * bias is taken only there.
 *
 * Spans: the new pool carries the pool's span without its output mark (its result is no
 * layer's output); the expression that produces the result carries the SequentialSpan of the
 * matched chain, conv first, as FoldBatchNormIntoConv does. The old bindings become dead (DCE).
 * Layouts: NCHW data and results, OIHW kernel. */
#include <string.h>

#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

static bool str_is(const ir_attrs *a, const char *key, const char *want) {
    const char *s = ir_attrs_get_str(a, key);
    return !s || strcmp(s, want) == 0;
}

/* Every entry of int array attribute `key` (absent: the default, fine) equals v. */
static bool ints_all(const ir_attrs *a, const char *key, int64_t v) {
    int64_t x[8];
    int n = ir_attrs_get_ints(a, key, x, 8);
    if (n > 8) return false;
    for (int i = 0; i < n; i++)
        if (x[i] != v) return false;
    return true;
}

/* A float tensor of rank 4 with static dims. */
static bool static4(const ir_expr *e, int64_t *shape) {
    const ir_sinfo *s = e ? e->sinfo : NULL;
    return s && s->kind == IR_SINFO_TENSOR && s->ndim == 4 && ir_dtype_is_float(s->dtype) &&
           ir_sinfo_static_shape(s, shape);
}

/* The var v when it is read once (by the pool or add being rewritten). */
static bool single_use(pu_rewriter *r, ir_expr *v) {
    return ir_is_var(v) && gr_map_get_or(&r->uses, GR_MAP_PTR(v), 0) == 1;
}

/* The pointwise conv2d bound to var v (read once), or NULL. */
static ir_call *pointwise_conv(pu_rewriter *r, ir_expr *v) {
    if (!single_use(r, v)) return NULL;
    ir_call *c = pu_op_call(pu_def(r, v), IR_OP_CONV2D);
    int64_t ws[4], xs[4];
    if (!c || c->nargs != 2 || !static4(c->args[1], ws) || !static4(c->args[0], xs)) return NULL;
    if (ws[2] != 1 || ws[3] != 1 || !ints_all(c->attrs, "strides", 1) || !ints_all(c->attrs, "padding", 0))
        return NULL;
    if (!str_is(c->attrs, "data_layout", "NCHW") || !str_is(c->attrs, "kernel_layout", "OIHW") ||
        !str_is(c->attrs, "out_layout", "NCHW"))
        return NULL;
    const ir_attr *od = ir_attrs_get(c->attrs, "out_dtype");
    if (od && od->kind == IR_ATTR_DTYPE && !ir_dtype_is_void(od->u.dtype) &&
        !ir_dtype_eq(od->u.dtype, c->args[0]->sinfo->dtype))
        return NULL;
    return c;
}

/* A bias that is one value per (batch, channel) at most: rank <= 4, its last two dims 1 (a 1-D
 * bias broadcasts along W, so only a single value), and no wider than the conv's result. */
static bool per_channel_bias(const ir_expr *b, const ir_call *add, const ir_expr *conv_var) {
    const ir_sinfo *s = b->sinfo;
    int64_t shape[8];
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > 4 || !ir_sinfo_static_shape(s, shape))
        return false;
    if (s->ndim == 1 && shape[0] != 1) return false;
    if (s->ndim >= 2 && (shape[s->ndim - 1] != 1 || shape[s->ndim - 2] != 1)) return false;
    return add->base.sinfo == conv_var->sinfo;
}

/* Rewrites when the conv then runs on fewer pixels for less than the pool's extra channels
 * cost: MACs of conv + pool before vs after (the pool adds one value per window element). */
static bool pays(const ir_call *conv, const ir_call *pool) {
    int64_t xs[4], ws[4], ys[4], k[2] = {1, 1};
    if (!static4(conv->args[0], xs) || !static4(conv->args[1], ws) || !static4(&pool->base, ys)) return false;
    int n = ir_attrs_get_ints(pool->attrs, "pool_size", k, 2);
    if (n == 1) k[1] = k[0];
    double cin = (double)xs[1], cout = (double)ws[0], per = (double)ws[1] * cout;
    double in_px = (double)xs[2] * (double)xs[3], out_px = (double)ys[2] * (double)ys[3], win = (double)(k[0] * k[1]);
    double before = per * in_px + cout * out_px * win, after = per * out_px + cin * out_px * win;
    return after < before;
}

static bool try_swap(pu_rewriter *r, const ir_binding *b, ir_expr *value) {
    ir_call *pool = pu_op_call(value, IR_OP_AVG_POOL2D);
    if (!pool || pool->nargs != 1 || !str_is(pool->attrs, "layout", "NCHW") ||
        !str_is(pool->attrs, "out_layout", "NCHW"))
        return false;
    ir_expr *src = pool->args[0], *bias = NULL, *conv_var = src;
    ir_call *add = single_use(r, src) ? pu_op_call(pu_def(r, src), IR_OP_ADD) : NULL;
    if (add && add->nargs == 2) {
        for (int i = 0; i < 2 && !bias; i++)
            if (pointwise_conv(r, add->args[i]) && per_channel_bias(add->args[1 - i], add, add->args[i])) {
                conv_var = add->args[i];
                bias = add->args[1 - i];
            }
        if (!bias || !ints_all(pool->attrs, "padding", 0)) return false;
    }
    ir_call *conv = pointwise_conv(r, conv_var);
    if (!conv || !pays(conv, pool)) return false;

    /* The matched chain, producers first: conv, its var, [add, its var,] pool. */
    const ir_expr *chain[5] = {&conv->base, conv_var};
    uint32_t n = 2;
    if (bias) {
        chain[n++] = &add->base;
        chain[n++] = src;
    }
    chain[n++] = value;
    const ir_span *span = ir_si_collapse_nodes(r->ctx, chain, n);
    ir_expr *x = conv->args[0];
    ir_expr *npool = &ir_call_new(r->ctx, pool->callee, 1, &x, pool->attrs, 0, NULL,
                                  ir_span_with_output(r->ctx, value->span, false))->base;
    ir_expr *cargs[2] = {npool, conv->args[1]};
    const ir_span *cspan = bias ? ir_span_with_output(r->ctx, span, false) : span;
    ir_expr *root = &ir_call_new(r->ctx, conv->callee, 2, cargs, conv->attrs, 0, NULL, cspan)->base;
    if (bias) {
        ir_expr *aargs[2] = {root, bias};
        root = &ir_call_new(r->ctx, add->callee, 2, aargs, add->attrs, 0, NULL, span)->base;
    }
    return pu_emit_nested(r, b->var, root, "lv") != NULL;
}

static bool swap_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (!b->match_sinfo) {
        size_t before = r->out->len;
        gr_status before_code = r->diag ? r->diag->code : GR_OK;
        if (try_swap(r, b, value)) return true;
        if (r->diag && r->diag->code != before_code) return false;
        GR_ASSERT(r->out->len == before);
    }
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

PU_FUNC_PASS(ir_pass_pool_before_conv1x1, "PoolBeforeConv1x1", 2, .binding = swap_binding,
             .count_uses = true);
