/* Small IR-building helpers shared by the builder / visit / equal / wellformed tests. */
#ifndef GRAFT_TESTS_IR_IR_BUILD_UTIL_H
#define GRAFT_TESTS_IR_IR_BUILD_UTIL_H

#include "ir/builder.h"
#include "ir/op.h"

static inline const ir_sinfo *t_tensor(ir_ctx_t *ctx, int64_t a, int64_t b) {
    int64_t shape[2] = {a, b};
    return ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 2, shape);
}

/* R.Tensor((d0, d1), "float32") with symbolic dims. */
static inline const ir_sinfo *t_tensor_sym(ir_ctx_t *ctx, const ir_prim *d0, const ir_prim *d1) {
    const ir_prim *dims[2] = {d0, d1};
    return ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, dims);
}

static inline ir_expr *t_call1(ir_ctx_t *ctx, const char *op, ir_expr *a, const char *span) {
    ir_expr *args[1] = {a};
    return (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, op), 1, args, NULL, 0, NULL,
                                  ir_span_named(ctx, span, false));
}

static inline ir_expr *t_call2(ir_ctx_t *ctx, const char *op, ir_expr *a, ir_expr *b,
                               const char *span) {
    ir_expr *args[2] = {a, b};
    return (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, op), 2, args, NULL, 0, NULL,
                                  ir_span_named(ctx, span, false));
}

static inline ir_expr *t_gcall(ir_ctx_t *ctx, ir_gvar *g, uint32_t n, ir_expr *const *args) {
    return (ir_expr *)ir_call_new(ctx, (ir_expr *)g, n, args, NULL, 0, NULL, NULL);
}

static inline ir_var *t_var(ir_ctx_t *ctx, const char *name, const ir_sinfo *s) {
    return ir_var_new(ctx, name, s, NULL);
}

/* fn(x: T(2, 3), y: T(2, 3)) { with dataflow: lv = add(x, y); gv = relu(lv) (output); return gv }
 * Built through the builder. `names` picks the var names (so tests can rename). */
static inline ir_func *t_simple_func(ir_ctx_t *ctx, const char *px, const char *py,
                                     const char *lv, const char *gv) {
    gr_diag d;
    gr_diag_clear(&d);
    ir_var *x = t_var(ctx, px, t_tensor(ctx, 2, 3));
    ir_var *y = t_var(ctx, py, t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &d);
    ir_bb_begin_dataflow(bb);
    ir_var *a = ir_bb_emit(bb, t_call2(ctx, "relax.add", &x->base, &y->base, "add1"), lv);
    ir_var *r = ir_bb_emit_output(bb, t_call1(ctx, "relax.nn.relu", &a->base, "relu1"), gv);
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, &r->base, NULL);
    ir_bb_free(bb);
    ir_var *params[2] = {x, y};
    ir_func *f = ir_func_new(ctx, 2, params, &body->base, NULL, NULL, NULL);
    return (ir_func *)ir_normalize(ctx, &f->base, &d);
}

#endif
