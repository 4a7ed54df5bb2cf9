/* The dnnl backend's check for the recurrent layers (rows of backends/dnnl/dnnl_op_table.h): R.nn.lstm, R.nn.gru with
 * linear_before_reset (PyTorch's form) or without, R.nn.rnn -> oneDNN's LSTM, LBR-GRU / GRU and
 * vanilla RNN primitives (backends/dnnl/dnnl_rnn.c). What the check requires is what those primitives
 * compute: float32 with static shapes, ONNX layout 0 (time-major), constant weights, biases and
 * peepholes (reordered into oneDNN's gate order at prepare), no clip, no coupled input-forget
 * gate, and every sequence running the full length (sequence_lens left out, or a constant
 * equal to T everywhere). */
#include <string.h>

#include "base/tensor.h"
#include "backends/dnnl/dnnl_pattern_impl.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"

static bool f32_static(const ir_sinfo *s) {
    int64_t shape[RT_MAX_NDIM];
    return s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && s->ndim <= RT_MAX_NDIM &&
           ir_dtype_eq(s->dtype, IR_DTYPE_F32) && ir_sinfo_static_shape(s, shape);
}

static bool is_empty_const(const ir_expr *a) {
    return a->kind == IR_CONST && rt_tensor_numel(IR_AS(a, ir_const)->data) == 0;
}

const char *dnnl_rnn_check(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const ir_sinfo *rs = c->base.sinfo;
    if (!rs || rs->kind != IR_SINFO_TUPLE) return "result is not a tuple";
    for (uint32_t i = 0; i < rs->n; i++)
        if (!f32_static(rs->fields[i])) return "result is not float32 tensors of static shape";
    if (ir_attrs_get_int(c->attrs, "layout", 0) != 0) return "batch-major layout (layout=1)";
    const char *acts = ir_attrs_get_str(c->attrs, "activations");
    if (acts && *acts) return "activations other than the defaults";
    if (ir_attrs_get_float(c->attrs, "clip", 0) != 0) return "clip (oneDNN's cells do not clip)";
    const ir_attr *inf = ir_attrs_get(c->attrs, "input_forget");
    if (inf && inf->kind == IR_ATTR_BOOL && inf->u.b) return "input_forget (coupled input and forget gates)";
    int64_t T = -1, xs[RT_MAX_NDIM];
    for (uint32_t i = 0; i < c->nargs; i++) {
        const ir_expr *a = c->args[i];
        if (is_empty_const(a)) continue;
        if (i == 4) { /* sequence_lens */
            if (a->kind != IR_CONST) return "sequence_lens not known at build (oneDNN runs every sequence in full)";
            const rt_tensor *t = IR_AS(a, ir_const)->data;
            for (int64_t k = 0; k < rt_tensor_numel(t); k++)
                if ((int64_t)rt_tensor_get_f64(t, k) != T) return "sequence_lens shorter than the input (oneDNN runs every sequence in full)";
            continue;
        }
        if (!(ir_is_var(a) || a->kind == IR_CONST) || !f32_static(a->sinfo))
            return i == 0 ? "X is not a float32 tensor of static shape" : "an operand is not a float32 tensor of static shape";
        if (i == 0) {
            ir_sinfo_static_shape(a->sinfo, xs);
            T = xs[0];
        }
        if ((i == 1 || i == 2 || i == 3 || i == 7) && a->kind != IR_CONST)
            return "weights, biases and peepholes must be constants";
    }
    return NULL;
}
