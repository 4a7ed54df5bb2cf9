/* Converters: LSTM, GRU, RNN (one R.nn.lstm / R.nn.gru / R.nn.rnn per node) and
 * ReverseSequence. */
#include <string.h>
#include <strings.h>

#include "frontend/onnx/onnx_impl.h"

/* The activation functions the kernels know (ONNX's list for recurrent layers). */
static const char *const KNOWN_ACTS[] = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                         "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};

/* 1: the activations attribute is absent or the defaults (f, g, h per direction); 0: others,
 * all known (written to *out as comma-separated names); -1: invalid. */
static int read_activations(onnx_cv *cv, const char *const *want, int nwant, int D, ir_attr *out) {
    const Onnx__AttributeProto *a = cv_attr(cv, "activations");
    if (!a || a->n_strings == 0) return 1;
    if ((int)a->n_strings != nwant * D) return -1;
    bool dflt = true;
    char list[128] = "";
    for (size_t i = 0; i < a->n_strings; i++) {
        const ProtobufCBinaryData *s = &a->strings[i];
        const char *w = want[i % (size_t)nwant], *name = NULL;
        if (s->len != strlen(w) || strncasecmp((const char *)s->data, w, s->len)) dflt = false;
        for (size_t k = 0; k < sizeof KNOWN_ACTS / sizeof KNOWN_ACTS[0]; k++)
            if (s->len == strlen(KNOWN_ACTS[k]) && !strncasecmp((const char *)s->data, KNOWN_ACTS[k], s->len)) name = KNOWN_ACTS[k];
        if (!name) return -1;
        if (i) strcat(list, ",");
        strcat(list, name); /* at most 6 names of at most 15 characters */
    }
    if (dflt) return 1;
    *out = ir_attr_str(cv->ctx, list);
    return 0;
}

static ir_attr float_list(onnx_cv *cv, const char *name) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    if (!a || !a->n_floats) return ir_attr_none();
    ir_attr items[6];
    uint32_t n = a->n_floats < 6 ? (uint32_t)a->n_floats : 6;
    for (uint32_t i = 0; i < n; i++) items[i] = ir_attr_float(a->floats[i]);
    return ir_attr_array(cv->ctx, n, items);
}

/* An empty tensor standing for an optional input left out before a given one. */
static ir_expr *empty_arg(onnx_cv *cv, ir_dtype dt) {
    int64_t zero = 0;
    rt_tensor *t = rt_tensor_new(dt, 1, &zero);
    if (!t) {
        cv_fail(cv, GR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    ir_expr *c = (ir_expr *)ir_const_new(cv->ctx, t, cv->span);
    rt_tensor_release(t);
    return c;
}

gr_status onnx_cv_rnn(onnx_cv *cv) {
    const char *t = cv->node->op_type;
    bool lstm = !strcmp(t, "LSTM"), gru = !strcmp(t, "GRU");
    static const char *const f_lstm[] = {"Sigmoid", "Tanh", "Tanh"}, *const f_gru[] = {"Sigmoid", "Tanh"},
                             *const f_rnn[] = {"Tanh"};
    const char *dir = cv_attr_str(cv, "direction", "forward");
    int D = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && D != 2)
        return cv_fail(cv, GR_ERR_INVALID, "unknown direction '%s'", dir);
    ir_attr acts = ir_attr_none();
    int da = read_activations(cv, lstm ? f_lstm : gru ? f_gru : f_rnn, lstm ? 3 : gru ? 2 : 1, D, &acts);
    if (da < 0)
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "activations: %d per direction of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                       "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus", lstm ? 3 : gru ? 2 : 1);
    if (cv_rank(cv, 0) != 3) return cv_fail(cv, GR_ERR_INVALID, "X must be 3-D");
    int64_t H = cv_attr_int(cv, "hidden_size", 0);
    if (H <= 0) {
        const ir_prim *const *rd = cv_prim_dims(cv, 2);
        if (!rd || cv_rank(cv, 2) != 3 || !ir_prim_is_int(rd[2], &H))
            return cv_fail(cv, GR_ERR_INVALID, "hidden_size is not given and R's shape is unknown");
    }
    if (H <= 0 || H > ONNX_DIM_MAX) return cv_fail(cv, GR_ERR_INVALID, "hidden_size out of range");
    uint32_t maxin = lstm ? 8 : 6, last = 2;
    for (uint32_t i = 3; i < maxin && i < cv->nin; i++)
        if (cv_has(cv, i)) last = i;
    ir_expr *args[8];
    ir_dtype xdt = cv_dtype(cv, 0);
    for (uint32_t i = 0; i <= last; i++) {
        if (cv_has(cv, i)) args[i] = cv_in(cv, i);
        else if (i < 3) return cv_fail(cv, GR_ERR_INVALID, "input %u is required", i);
        else args[i] = empty_arg(cv, i == 4 ? IR_DTYPE_I32 : xdt);
        if (!args[i]) return cv_status(cv);
    }
    cv_attrs at = {0};
    cv_set(&at, "hidden_size", ir_attr_int(H));
    cv_set(&at, "direction", ir_attr_str(cv->ctx, dir));
    cv_set(&at, "layout", ir_attr_int(cv_attr_int(cv, "layout", 0)));
    cv_set(&at, "clip", ir_attr_float(cv_attr(cv, "clip") ? cv_attr_float(cv, "clip", 0) : 0.0));
    if (lstm) cv_set(&at, "input_forget", ir_attr_bool(cv_attr_int(cv, "input_forget", 0) != 0));
    if (gru) cv_set(&at, "linear_before_reset", ir_attr_bool(cv_attr_int(cv, "linear_before_reset", 0) != 0));
    if (da == 0) {
        cv_set(&at, "activations", acts);
        cv_set(&at, "activation_alpha", float_list(cv, "activation_alpha"));
        cv_set(&at, "activation_beta", float_list(cv, "activation_beta"));
    }
    ir_op_id op = lstm ? IR_OP_LSTM : gru ? IR_OP_GRU : IR_OP_RNN;
    ir_expr *r = cv_emit(cv, cv_call(cv, op, last + 1, args, &at));
    if (!r) return cv_status(cv);
    uint32_t nres = lstm ? 3 : 2;
    for (uint32_t i = 0; i < cv->nout && i < nres; i++)
        cv->out[i] = (ir_expr *)ir_tgi_new(cv->ctx, r, (int32_t)i, cv->span);
    return GR_OK;
}

gr_status onnx_cv_reverse_sequence(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *l = cv_in(cv, 1);
    if (!x || !l) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "batch_axis", ir_attr_int(cv_attr_int(cv, "batch_axis", 1)));
    cv_set(&at, "time_axis", ir_attr_int(cv_attr_int(cv, "time_axis", 0)));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_REVERSE_SEQUENCE, x, l, &at));
}
