/* Struct info inference of elementwise ops (unary, binary with numpy broadcasting, where,
 * clip, astype), call-like ops and shared helpers. Follows TVM Relax's rules: unknown ranks
 * or dims propagate instead of erroring, mismatched dtypes of binary ops are errors. */
#include <string.h>

#include "ir/ops/op_impl.h"

/* ---- shared helpers ---- */

bool ir__norm_axis(int64_t axis, int32_t ndim, int32_t *out) {
    if (ndim < 0) return false;
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim) return false;
    *out = (int32_t)axis;
    return true;
}

const ir_sinfo *ir__arg_tensor(ir_ctx_t *ctx, const ir_call *call, uint32_t i, bool allow_prim,
                               gr_diag *diag) {
    if (i >= call->nargs) return ir__op_err(call, diag, "missing argument %u", i);
    const ir_sinfo *s = call->args[i]->sinfo;
    if (s && s->kind == IR_SINFO_TENSOR) return s;
    if (s && s->kind == IR_SINFO_PRIM && allow_prim) return ir_sinfo_tensor(ctx, s->dtype, 0, NULL);
    return ir__op_err(call, diag, "argument %u must be a tensor, got %s", i, ir__sinfo_str(s));
}

/* A dim that can never be 1 fixes the broadcast dim (a departure from TVM, which keeps only
 * the rank: PP-OCR det adds an upsampled (h - 1) // 32 * 2 + 2 map to an (h - 1) // 16 + 1 one,
 * and with the dims kept its detection head still offloads). */
static bool at_least_2(const ir_prim *d) {
    int64_t lb;
    return ir_prim_lower_bound(d, &lb) && lb >= 2;
}

int ir__broadcast(ir_ctx_t *ctx, const ir_sinfo *a, const ir_sinfo *b, const ir_prim **out,
                  int32_t *ondim) {
    int32_t na = a->ndim, nb = b->ndim, n = na > nb ? na : nb;
    *ondim = na < 0 || nb < 0 ? -1 : n;
    if (na < 0 || nb < 0 || (na > 0 && !a->dims) || (nb > 0 && !b->dims)) return 0;
    const ir_prim *one = ir_prim_int(ctx, 1);
    int ok = 1;
    for (int32_t i = 0; i < n; i++) {
        const ir_prim *da = i < n - na ? one : a->dims[i - (n - na)];
        const ir_prim *db = i < n - nb ? one : b->dims[i - (n - nb)];
        if (da == db || db == one) out[i] = da;
        else if (da == one) out[i] = db;
        else if (da->kind == IR_PRIM_INT && db->kind == IR_PRIM_INT) return -1;
        else if (at_least_2(da)) out[i] = da; /* the other side is equal or 1 */
        else if (at_least_2(db)) out[i] = db;
        else ok = 0; /* not provably equal: TVM keeps only the rank */
    }
    return ok;
}

/* ---- unary ---- */

static const ir_sinfo *unary(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, bool need_float,
                             bool to_bool) {
    const ir_sinfo *s = call->args[0]->sinfo;
    if (s->kind != IR_SINFO_TENSOR && s->kind != IR_SINFO_PRIM)
        return ir__op_err(call, diag, "argument must be a tensor, got %s", ir__sinfo_str(s));
    if (need_float && !ir_dtype_is_void(s->dtype) && !ir_dtype_is_float(s->dtype))
        return ir__op_err(call, diag, "requires a float tensor, got %s", ir__sinfo_str(s));
    if (!to_bool) return s;
    if (s->kind == IR_SINFO_PRIM) return ir_sinfo_prim(ctx, IR_DTYPE_BOOL, NULL);
    return ir_sinfo_tensor(ctx, IR_DTYPE_BOOL, s->ndim, s->dims);
}

IR__INFER(ir__infer_unary) { return unary(ctx, call, diag, false, false); }
IR__INFER(ir__infer_unary_float) { return unary(ctx, call, diag, true, false); }
IR__INFER(ir__infer_unary_bool) { return unary(ctx, call, diag, false, true); }

/* ---- binary ---- */

/* Broadcast shape of tensors a and b (already checked), with output dtype `dt`. */
static const ir_sinfo *broadcast_result(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag,
                                        const ir_sinfo *a, const ir_sinfo *b, ir_dtype dt) {
    const ir_prim *dims[64];
    int32_t ndim;
    if ((a->ndim > 64) || (b->ndim > 64)) return ir__op_err(call, diag, "rank above 64");
    int r = ir__broadcast(ctx, a, b, dims, &ndim);
    if (r < 0)
        return ir__op_err(call, diag, "cannot broadcast %s and %s", ir__sinfo_str(a),
                          ir__sinfo_str(b));
    return ir_sinfo_tensor(ctx, dt, ndim, r > 0 ? dims : NULL);
}

static const ir_sinfo *binary(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, int mode) {
    const ir_sinfo *s0 = call->args[0]->sinfo, *s1 = call->args[1]->sinfo;
    bool t0 = s0->kind == IR_SINFO_TENSOR, t1 = s1->kind == IR_SINFO_TENSOR;
    bool p0 = s0->kind == IR_SINFO_PRIM, p1 = s1->kind == IR_SINFO_PRIM;
    if (!(t0 || p0) || !(t1 || p1))
        return ir__op_err(call, diag, "arguments must be tensors, got %s and %s",
                          ir__sinfo_str(s0), ir__sinfo_str(s1));
    ir_dtype dt = IR_DTYPE_VOID;
    if (!ir_dtype_is_void(s0->dtype) && !ir_dtype_is_void(s1->dtype)) {
        if (!ir_dtype_eq(s0->dtype, s1->dtype))
            return ir__op_err(call, diag, "data types %s and %s must be equal in %s and %s",
                              ir_dtype_name(s0->dtype), ir_dtype_name(s1->dtype),
                              ir__sinfo_str(s0), ir__sinfo_str(s1));
        dt = s0->dtype;
    }
    if (mode == 2 && !ir_dtype_is_void(dt) && !ir_dtype_eq(dt, IR_DTYPE_BOOL))
        return ir__op_err(call, diag, "requires bool operands, got %s and %s",
                          ir__sinfo_str(s0), ir__sinfo_str(s1));
    if (mode == 1) dt = IR_DTYPE_BOOL;
    if (p0 && p1) return ir_sinfo_prim(ctx, dt, NULL);
    const ir_sinfo *a = t0 ? s0 : ir_sinfo_tensor(ctx, s0->dtype, 0, NULL);
    const ir_sinfo *b = t1 ? s1 : ir_sinfo_tensor(ctx, s1->dtype, 0, NULL);
    return broadcast_result(ctx, call, diag, a, b, dt);
}

IR__INFER(ir__infer_binary_arith) { return binary(ctx, call, diag, 0); }
IR__INFER(ir__infer_binary_cmp) { return binary(ctx, call, diag, 1); }
IR__INFER(ir__infer_binary_logical) { return binary(ctx, call, diag, 2); }

/* where(cond, x1, x2): cond is bool, x1/x2 share a dtype, all three broadcast together. */
IR__INFER(ir__infer_where) {
    const ir_sinfo *c = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *x = c ? ir__arg_tensor(ctx, call, 1, true, diag) : NULL;
    const ir_sinfo *y = x ? ir__arg_tensor(ctx, call, 2, true, diag) : NULL;
    if (!y) return NULL;
    if (!ir_dtype_is_void(c->dtype) && !ir_dtype_eq(c->dtype, IR_DTYPE_BOOL))
        return ir__op_err(call, diag, "condition must be a bool tensor, got %s", ir__sinfo_str(c));
    ir_dtype dt = IR_DTYPE_VOID;
    if (!ir_dtype_is_void(x->dtype) && !ir_dtype_is_void(y->dtype)) {
        if (!ir_dtype_eq(x->dtype, y->dtype))
            return ir__op_err(call, diag, "data types %s and %s must be equal",
                              ir_dtype_name(x->dtype), ir_dtype_name(y->dtype));
        dt = x->dtype;
    }
    const ir_sinfo *cx = broadcast_result(ctx, call, diag, c, x, dt);
    return cx ? broadcast_result(ctx, call, diag, cx, y, dt) : NULL;
}

/* clip(x, min, max): min and max are prim values; the result is x's struct info. */
IR__INFER(ir__infer_clip) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    for (uint32_t i = 1; i < 3; i++) {
        const ir_sinfo *s = call->args[i]->sinfo;
        if (s->kind != IR_SINFO_PRIM)
            return ir__op_err(call, diag, "argument %u must be a prim value, got %s", i,
                              ir__sinfo_str(s));
    }
    return x;
}

IR__INFER(ir__infer_astype) {
    const ir_sinfo *s = call->args[0]->sinfo;
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    if (s->kind == IR_SINFO_PRIM) return ir_sinfo_prim(ctx, dt, NULL);
    if (s->kind != IR_SINFO_TENSOR)
        return ir__op_err(call, diag, "argument must be a tensor, got %s", ir__sinfo_str(s));
    return ir_sinfo_tensor(ctx, dt, s->ndim, s->dims);
}

/* call_dps_packed / call_tir: the result is the out_sinfo (a tuple when several). */
IR__INFER(ir__infer_call_like) {
    const ir_expr *callee = call->args[0];
    bool tir = ir_op_id_of(&call->base) == IR_OP_CALL_TIR;
    if (tir ? callee->kind != IR_GVAR : (callee->kind != IR_EXTERN && callee->kind != IR_GVAR))
        return ir__op_err(call, diag, "the callee must be %s",
                          tir ? "a global var" : "an extern func");
    if (call->nargs > 1) {
        const ir_expr *args = call->args[1];
        bool tuple = args->kind == IR_TUPLE || (args->sinfo && args->sinfo->kind == IR_SINFO_TUPLE);
        if (!tuple) return ir__op_err(call, diag, "the arguments must be a tuple");
    }
    if (call->nsinfo_args == 0) return ir__op_err(call, diag, "needs out_sinfo");
    if (call->nsinfo_args == 1) return call->sinfo_args[0];
    return ir_sinfo_tuple(ctx, call->nsinfo_args, call->sinfo_args);
}

IR__INFER(ir__infer_shape_of) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    return ir_sinfo_shape(ctx, x->ndim, x->dims);
}
