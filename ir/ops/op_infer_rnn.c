/* Struct info of the recurrent ops nn.lstm, nn.gru and nn.rnn (ONNX LSTM / GRU / RNN, one op
 * per layer; graft extensions, TVM Relax has none). Arguments follow ONNX's input order:
 * X, W, R [, B, sequence_lens, initial_h [, initial_c, P]]; a trailing argument may be left
 * out and one in the middle given as an empty tensor (shape (0,)). The result is a tuple
 * (Y, Y_h) or, for lstm, (Y, Y_h, Y_c):
 *   layout 0: X (T, N, I), Y (T, D, N, H), Y_h (D, N, H)
 *   layout 1: X (N, T, I), Y (N, T, D, H), Y_h (N, D, H)
 * with D = 2 for direction "bidirectional", else 1, and H = hidden_size. */
#include <string.h>

#include "ir/ops/op_impl.h"

/* gates per op: lstm 4 (i, o, f, c), gru 3 (z, r, h), rnn 1 */
static int op_gates(const ir_call *call) {
    ir_op_id op = ir_op_id_of(&call->base);
    return op == IR_OP_LSTM ? 4 : op == IR_OP_GRU ? 3 : 1;
}

static bool dim_differs(const ir_prim *a, int64_t want) {
    int64_t v;
    return a && ir_prim_is_int(a, &v) && v != want;
}

IR__INFER(ir__infer_rnn) {
    int gates = op_gates(call);
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *w = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    const ir_sinfo *r = w ? ir__arg_tensor(ctx, call, 2, false, diag) : NULL;
    if (!r) return NULL;
    for (uint32_t i = 3; i < call->nargs; i++)
        if (!ir__arg_tensor(ctx, call, i, false, diag)) return NULL;
    ir_dtype dt;
    if (!ir__common_dtype(call, x, w, &dt, diag) || !ir__common_dtype(call, x, r, &dt, diag))
        return NULL;
    if (!ir_dtype_is_void(x->dtype) && !ir_dtype_is_float(x->dtype))
        return ir__op_err(call, diag, "X must be a float tensor, got %s", ir__sinfo_str(x));
    const char *dir = ir__attr_str(call, "direction");
    int64_t D;
    if (!dir || !strcmp(dir, "forward") || !strcmp(dir, "reverse")) D = 1;
    else if (!strcmp(dir, "bidirectional")) D = 2;
    else return ir__op_err(call, diag, "unknown direction \"%s\"", dir);
    int64_t layout = ir__attr_int(call, "layout", 0);
    if (layout != 0 && layout != 1) return ir__op_err(call, diag, "layout must be 0 or 1");
    int64_t H = ir__attr_int(call, "hidden_size", 0);
    if (H <= 0 || H > (INT64_C(1) << 31))
        return ir__op_err(call, diag, "hidden_size must be positive, got %lld", (long long)H);
    if (x->ndim >= 0 && x->ndim != 3)
        return ir__op_err(call, diag, "X must be 3-D, got %s", ir__sinfo_str(x));
    if (w->ndim >= 0 && w->ndim != 3)
        return ir__op_err(call, diag, "W must be 3-D, got %s", ir__sinfo_str(w));
    if (r->ndim >= 0 && r->ndim != 3)
        return ir__op_err(call, diag, "R must be 3-D, got %s", ir__sinfo_str(r));
    if (w->dims && (dim_differs(w->dims[0], D) || dim_differs(w->dims[1], gates * H)))
        return ir__op_err(call, diag, "W %s does not match (%lld, %lld, input_size)",
                          ir__sinfo_str(w), (long long)D, (long long)(gates * H));
    if (r->dims && (dim_differs(r->dims[0], D) || dim_differs(r->dims[1], gates * H) ||
                    dim_differs(r->dims[2], H)))
        return ir__op_err(call, diag, "R %s does not match (%lld, %lld, %lld)", ir__sinfo_str(r),
                          (long long)D, (long long)(gates * H), (long long)H);
    if (x->dims && w->dims) {
        int64_t a, b;
        if (ir_prim_is_int(x->dims[2], &a) && ir_prim_is_int(w->dims[2], &b) && a != b)
            return ir__op_err(call, diag, "X %s and W %s disagree on the input size",
                              ir__sinfo_str(x), ir__sinfo_str(w));
    }
    uint32_t nout = gates == 4 ? 3 : 2;
    const ir_sinfo *fields[3];
    if (!x->dims) {
        fields[0] = ir_sinfo_tensor(ctx, x->dtype, 4, NULL);
        for (uint32_t i = 1; i < nout; i++) fields[i] = ir_sinfo_tensor(ctx, x->dtype, 3, NULL);
    } else {
        const ir_prim *T = x->dims[layout ? 1 : 0], *N = x->dims[layout ? 0 : 1];
        const ir_prim *pd = ir_prim_int(ctx, D), *ph = ir_prim_int(ctx, H);
        const ir_prim *y[4] = {T, pd, N, ph}, *yb[4] = {N, T, pd, ph};
        const ir_prim *hs[3] = {pd, N, ph}, *hb[3] = {N, pd, ph};
        fields[0] = ir_sinfo_tensor(ctx, x->dtype, 4, layout ? yb : y);
        for (uint32_t i = 1; i < nout; i++)
            fields[i] = ir_sinfo_tensor(ctx, x->dtype, 3, layout ? hb : hs);
    }
    return ir_sinfo_tuple(ctx, nout, fields);
}
