/* The converter table (ONNX op type + opset range -> converter and folder) and the helpers the
 * converters share: attributes, inputs, op calls with the node's span. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

#define ANY 1, INT16_MAX
/* op type, since, until, converter, folder */
static const onnx_op_entry op_table[] = {
    /* onnx_convert_math.c */
    {"Relu", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Sigmoid", ANY, onnx_cv_unary, NULL},
    {"Tanh", ANY, onnx_cv_unary, NULL},
    {"Erf", ANY, onnx_cv_unary, NULL},
    {"Sqrt", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Exp", ANY, onnx_cv_unary, NULL},
    {"Log", ANY, onnx_cv_unary, NULL},
    {"Abs", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Neg", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Floor", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Ceil", ANY, onnx_cv_unary, onnx_fold_generic},
    {"Round", 11, INT16_MAX, onnx_cv_unary, NULL},
    {"Sin", 7, INT16_MAX, onnx_cv_unary, NULL},
    {"Cos", 7, INT16_MAX, onnx_cv_unary, NULL},
    {"Sign", 9, INT16_MAX, onnx_cv_unary, NULL},
    {"Not", ANY, onnx_cv_unary, onnx_fold_generic},
    {"And", 7, INT16_MAX, onnx_cv_binary, NULL},
    {"Or", 7, INT16_MAX, onnx_cv_binary, NULL},
    {"LessOrEqual", 12, INT16_MAX, onnx_cv_binary, NULL},
    {"GreaterOrEqual", 12, INT16_MAX, onnx_cv_binary, NULL},
    {"Mean", 8, INT16_MAX, onnx_cv_variadic, NULL},
    {"Softsign", ANY, onnx_cv_softsign, NULL},
    {"Selu", 6, INT16_MAX, onnx_cv_selu, NULL},
    {"ThresholdedRelu", 10, INT16_MAX, onnx_cv_selu, NULL},
    {"CastLike", 15, INT16_MAX, onnx_cv_cast_like, NULL},
    {"CumSum", 11, INT16_MAX, onnx_cv_cumsum, NULL},
    {"ReduceProd", ANY, onnx_cv_reduce, NULL},
    {"ReduceSumSquare", ANY, onnx_cv_reduce, NULL},
    {"ReduceL1", ANY, onnx_cv_reduce, NULL},
    {"ReduceL2", ANY, onnx_cv_reduce, NULL},
    {"ReduceLogSum", ANY, onnx_cv_reduce, NULL},
    {"ReduceLogSumExp", ANY, onnx_cv_reduce, NULL},
    {"Gelu", ANY, onnx_cv_gelu, NULL},
    {"LeakyRelu", ANY, onnx_cv_leaky_relu, NULL},
    {"PRelu", ANY, onnx_cv_prelu, NULL},
    {"Clip", ANY, onnx_cv_clip, NULL},
    {"HardSigmoid", ANY, onnx_cv_hard_sigmoid, NULL},
    {"HardSwish", ANY, onnx_cv_hard_swish, NULL},
    {"Elu", ANY, onnx_cv_elu, NULL},
    {"Softplus", ANY, onnx_cv_softplus, NULL},
    {"Reciprocal", ANY, onnx_cv_reciprocal, onnx_fold_generic},
    {"Add", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Sub", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Mul", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Div", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Pow", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Equal", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Less", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Greater", ANY, onnx_cv_binary, onnx_fold_generic},
    {"Max", 8, INT16_MAX, onnx_cv_variadic, onnx_fold_generic},
    {"Min", 8, INT16_MAX, onnx_cv_variadic, onnx_fold_generic},
    {"Sum", 8, INT16_MAX, onnx_cv_variadic, onnx_fold_generic},
    {"Where", 9, INT16_MAX, onnx_cv_where, onnx_fold_generic},
    {"MatMul", ANY, onnx_cv_matmul, NULL},
    {"Gemm", 6, INT16_MAX, onnx_cv_gemm, NULL},
    {"Softmax", ANY, onnx_cv_softmax, NULL},
    {"LogSoftmax", ANY, onnx_cv_softmax, NULL},
    {"ReduceMean", ANY, onnx_cv_reduce, NULL},
    {"ReduceSum", ANY, onnx_cv_reduce, NULL},
    {"ReduceMax", ANY, onnx_cv_reduce, NULL},
    {"ReduceMin", ANY, onnx_cv_reduce, NULL},
    {"Cast", 6, INT16_MAX, onnx_cv_cast, onnx_fold_cast},
    {"Identity", ANY, onnx_cv_identity, onnx_fold_identity},
    {"Dropout", 7, INT16_MAX, onnx_cv_dropout, NULL},
    /* onnx_convert_nn.c */
    {"Conv", ANY, onnx_cv_conv, NULL},
    {"ConvTranspose", ANY, onnx_cv_conv_transpose, NULL},
    {"BatchNormalization", 6, INT16_MAX, onnx_cv_batch_norm, NULL},
    {"LayerNormalization", 17, INT16_MAX, onnx_cv_layer_norm, NULL},
    {"MaxPool", ANY, onnx_cv_pool, NULL},
    {"AveragePool", ANY, onnx_cv_pool, NULL},
    {"GlobalAveragePool", ANY, onnx_cv_global_pool, NULL},
    {"GlobalMaxPool", ANY, onnx_cv_global_pool, NULL},
    {"Resize", 10, INT16_MAX, onnx_cv_resize, NULL},
    {"Upsample", 7, 9, onnx_cv_resize, NULL},
    {"Pad", 2, INT16_MAX, onnx_cv_pad, NULL},
    /* onnx_convert_shape.c */
    {"Constant", ANY, onnx_cv_constant, NULL},
    {"ConstantOfShape", 9, INT16_MAX, onnx_cv_constant_of_shape, onnx_fold_constant_of_shape},
    {"Shape", ANY, onnx_cv_shape, onnx_fold_shape},
    {"Size", ANY, onnx_cv_shape, onnx_fold_size},
    {"Gather", ANY, onnx_cv_gather, onnx_fold_gather},
    {"Concat", 4, INT16_MAX, onnx_cv_concat, onnx_fold_concat},
    {"Split", 2, INT16_MAX, onnx_cv_split, NULL},
    {"Slice", ANY, onnx_cv_slice, onnx_fold_slice},
    {"Reshape", 5, INT16_MAX, onnx_cv_reshape, onnx_fold_reshape},
    {"Flatten", ANY, onnx_cv_flatten, onnx_fold_reshape},
    {"Transpose", ANY, onnx_cv_transpose, onnx_fold_transpose},
    {"Squeeze", ANY, onnx_cv_squeeze, onnx_fold_reshape},
    {"Unsqueeze", ANY, onnx_cv_unsqueeze, onnx_fold_reshape},
    {"Expand", 8, INT16_MAX, onnx_cv_expand, NULL},
    {"Tile", 6, INT16_MAX, onnx_cv_tile, NULL},
    {"Range", 11, INT16_MAX, onnx_cv_range, onnx_fold_range},
    /* ONNX coverage */
    {"LSTM", 7, INT16_MAX, onnx_cv_rnn, NULL},
    {"GRU", 7, INT16_MAX, onnx_cv_rnn, NULL},
    {"RNN", 7, INT16_MAX, onnx_cv_rnn, NULL},
    {"ReverseSequence", 10, INT16_MAX, onnx_cv_reverse_sequence, NULL},
    {"InstanceNormalization", 6, INT16_MAX, onnx_cv_instance_norm, NULL},
    {"MeanVarianceNormalization", 9, INT16_MAX, onnx_cv_mvn, NULL},
    {"LRN", ANY, onnx_cv_lrn, NULL},
    {"DepthToSpace", ANY, onnx_cv_depth_space, NULL},
    {"SpaceToDepth", ANY, onnx_cv_depth_space, NULL},
    {"Einsum", 12, INT16_MAX, onnx_cv_einsum, NULL},
    {"HannWindow", 17, INT16_MAX, onnx_cv_window, onnx_fold_window},
    {"HammingWindow", 17, INT16_MAX, onnx_cv_window, onnx_fold_window},
    {"BlackmanWindow", 17, INT16_MAX, onnx_cv_window, onnx_fold_window},
    {"MelWeightMatrix", 17, INT16_MAX, onnx_cv_mel, onnx_fold_mel},
    {"NonMaxSuppression", 10, INT16_MAX, onnx_cv_nms, NULL},
    {"RoiAlign", 10, INT16_MAX, onnx_cv_roi_align, NULL},
    {"GridSample", 16, INT16_MAX, onnx_cv_grid_sample, NULL},
    {"MaxUnpool", 9, INT16_MAX, onnx_cv_max_unpool, NULL},
    {"DFT", 17, 19, onnx_cv_dft, NULL},
    {"STFT", 17, INT16_MAX, onnx_cv_stft, NULL},
    {"SequenceConstruct", 11, INT16_MAX, onnx_cv_seq_construct, NULL},
    {"SequenceEmpty", 11, INT16_MAX, onnx_cv_seq_empty, NULL},
    {"SequenceAt", 11, INT16_MAX, onnx_cv_seq_at, NULL},
    {"SequenceInsert", 11, INT16_MAX, onnx_cv_seq_insert, NULL},
    {"SequenceErase", 11, INT16_MAX, onnx_cv_seq_erase, NULL},
    {"SequenceLength", 11, INT16_MAX, onnx_cv_seq_length, onnx_fold_seq_length},
    {"SequenceMap", 17, INT16_MAX, onnx_cv_seq_map, NULL},
    {"Optional", 15, INT16_MAX, onnx_cv_optional, NULL},
    {"OptionalHasElement", 15, INT16_MAX, onnx_cv_opt_has, onnx_fold_opt_has},
    {"OptionalGetElement", 15, INT16_MAX, onnx_cv_opt_get, NULL},
    {"ConcatFromSequence", 11, INT16_MAX, onnx_cv_concat_from_seq, NULL},
    {"SplitToSequence", 11, INT16_MAX, onnx_cv_split_to_seq, NULL},
    {"If", ANY, onnx_cv_if, NULL},
    {"Loop", ANY, onnx_cv_loop, NULL},
    {"Scan", 8, INT16_MAX, onnx_cv_scan, NULL},
    /* ONNX coverage: onnx_convert_index.c, onnx_convert_quant.c */
    {"Acos", 7, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Asin", 7, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Atan", 7, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Tan", 7, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Acosh", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Asinh", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Atanh", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Sinh", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"Cosh", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"IsNaN", 9, INT16_MAX, onnx_cv_unary_more, NULL},
    {"BitwiseNot", 18, INT16_MAX, onnx_cv_unary_more, NULL},
    {"IsInf", 10, INT16_MAX, onnx_cv_isinf, NULL},
    {"Celu", 12, INT16_MAX, onnx_cv_celu, NULL},
    {"Shrink", 9, INT16_MAX, onnx_cv_shrink, NULL},
    {"Det", 11, INT16_MAX, onnx_cv_det, NULL},
    {"Xor", 7, INT16_MAX, onnx_cv_binary_more, NULL},
    {"Mod", 10, INT16_MAX, onnx_cv_binary_more, onnx_fold_generic},
    {"BitShift", 11, INT16_MAX, onnx_cv_binary_more, NULL},
    {"BitwiseAnd", 18, INT16_MAX, onnx_cv_binary_more, NULL},
    {"BitwiseOr", 18, INT16_MAX, onnx_cv_binary_more, NULL},
    {"BitwiseXor", 18, INT16_MAX, onnx_cv_binary_more, NULL},
    {"Max", 6, 7, onnx_cv_variadic, NULL},
    {"Min", 6, 7, onnx_cv_variadic, NULL},
    {"Sum", 6, 7, onnx_cv_variadic, NULL},
    {"ArgMax", ANY, onnx_cv_argmax, NULL},
    {"ArgMin", ANY, onnx_cv_argmax, NULL},
    {"TopK", ANY, onnx_cv_topk, NULL},
    {"Hardmax", ANY, onnx_cv_hardmax, NULL},
    {"OneHot", 9, INT16_MAX, onnx_cv_one_hot, NULL},
    {"GatherElements", 11, INT16_MAX, onnx_cv_gather_elements, NULL},
    {"GatherND", 11, INT16_MAX, onnx_cv_gather_nd, NULL},
    {"ScatterElements", 11, INT16_MAX, onnx_cv_scatter_elements, NULL},
    {"Scatter", 9, 10, onnx_cv_scatter_elements, NULL},
    {"ScatterND", 11, INT16_MAX, onnx_cv_scatter_nd, NULL},
    {"NonZero", 9, INT16_MAX, onnx_cv_nonzero, NULL},
    {"Compress", 9, INT16_MAX, onnx_cv_compress, NULL},
    {"Unique", 11, INT16_MAX, onnx_cv_unique, NULL},
    {"Trilu", 14, INT16_MAX, onnx_cv_trilu, NULL},
    {"EyeLike", 9, INT16_MAX, onnx_cv_eye_like, NULL},
    {"NegativeLogLikelihoodLoss", 12, INT16_MAX, onnx_cv_nll_loss, NULL},
    {"SoftmaxCrossEntropyLoss", 12, INT16_MAX, onnx_cv_softmax_ce, NULL},
    {"QuantizeLinear", 10, INT16_MAX, onnx_cv_quantize, NULL},
    {"DequantizeLinear", 10, INT16_MAX, onnx_cv_dequantize, NULL},
    {"DynamicQuantizeLinear", 11, INT16_MAX, onnx_cv_dynamic_quantize, NULL},
    {"MatMulInteger", 10, INT16_MAX, onnx_cv_matmul_integer, NULL},
    {"QLinearMatMul", 10, INT16_MAX, onnx_cv_qlinear_matmul, NULL},
    {"ConvInteger", 10, INT16_MAX, onnx_cv_conv_integer, NULL},
    {"QLinearConv", 10, INT16_MAX, onnx_cv_qlinear_conv, NULL},
};
#undef ANY

/* ONNX coverage: standard ops that stay out on purpose, with the reason the importer
 * gives. */
static const struct {
    const char *op_type, *reason;
} out_of_scope[] = {
    {"StringNormalizer", "string tensors are not supported"},
    {"TfIdfVectorizer", "string tensors are not supported"},
    {"RegexFullMatch", "string tensors are not supported"},
    {"StringConcat", "string tensors are not supported"},
    {"StringSplit", "string tensors are not supported"},
    {"Bernoulli", "random number generation is not supported (results are not reproducible)"},
    {"RandomUniform", "random number generation is not supported (results are not reproducible)"},
    {"RandomUniformLike", "random number generation is not supported (results are not reproducible)"},
    {"RandomNormal", "random number generation is not supported (results are not reproducible)"},
    {"RandomNormalLike", "random number generation is not supported (results are not reproducible)"},
    {"Multinomial", "random number generation is not supported (results are not reproducible)"},
    {"Gradient", "needs automatic differentiation of the graph (a training op graft does not do)"},
};

const char *onnx_op_unsupported_reason(const char *op_type) {
    for (size_t i = 0; op_type && i < sizeof(out_of_scope) / sizeof(out_of_scope[0]); i++)
        if (!strcmp(out_of_scope[i].op_type, op_type)) return out_of_scope[i].reason;
    return NULL;
}

/* ai.onnx.preview.training (opset 1 of that domain): the optimizers, elementwise updates
 * (onnx_convert_train.c). */
static const onnx_op_entry training_table[] = {
    {"Adagrad", 1, INT16_MAX, onnx_cv_adagrad, NULL},
    {"Momentum", 1, INT16_MAX, onnx_cv_momentum, NULL},
    {"Adam", 1, INT16_MAX, onnx_cv_adam, NULL},
};

/* com.microsoft (opset 1 of that domain): the QOperator ops of ONNX Runtime's quantizer that
 * have no standard form, as float computations between dequantize and quantize
 * (onnx_convert_quant.c). */
static const onnx_op_entry microsoft_table[] = {
    {"QLinearAdd", 1, INT16_MAX, onnx_cv_qlinear_add, NULL},
    {"QLinearMul", 1, INT16_MAX, onnx_cv_qlinear_mul, NULL},
    {"QLinearGlobalAveragePool", 1, INT16_MAX, onnx_cv_qlinear_global_avg_pool, NULL},
    {"QGemm", 1, INT16_MAX, onnx_cv_qgemm, NULL},
};

const onnx_op_entry *onnx_op_find_node(const Onnx__NodeProto *n, int64_t opset) {
    const char *dom = n->domain ? n->domain : "";
    if (!*dom || !strcmp(dom, "ai.onnx")) return onnx_op_find(n->op_type, opset);
    if (!n->op_type) return NULL;
    static const struct {
        const char *domain;
        const onnx_op_entry *ops;
        size_t n;
    } DOMAINS[] = {{"ai.onnx.preview.training", training_table, sizeof training_table / sizeof training_table[0]},
                   {"com.microsoft", microsoft_table, sizeof microsoft_table / sizeof microsoft_table[0]}};
    for (size_t d = 0; d < sizeof DOMAINS / sizeof DOMAINS[0]; d++)
        for (size_t i = 0; !strcmp(dom, DOMAINS[d].domain) && i < DOMAINS[d].n; i++)
            if (!strcmp(DOMAINS[d].ops[i].op_type, n->op_type)) return &DOMAINS[d].ops[i];
    return NULL;
}

const onnx_op_entry *onnx_op_find(const char *op_type, int64_t opset) {
    if (!op_type) return NULL;
    for (size_t i = 0; i < sizeof(op_table) / sizeof(op_table[0]); i++)
        if (!strcmp(op_table[i].op_type, op_type) && opset >= op_table[i].since &&
            opset <= op_table[i].until)
            return &op_table[i];
    return NULL;
}

/* ---- errors ---- */

gr_status cv_fail(onnx_cv *cv, gr_status code, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gr_fail(cv->imp->diag, code, cv->layer, cv->node->op_type, "node '%s' (%s, opset %lld): %s",
                   cv->layer, cv->node->op_type, (long long)cv->opset, msg);
}

bool cv_axis(int64_t axis, int32_t rank, int64_t *out) {
    if (rank < 0) return false;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    *out = axis;
    return true;
}

/* ---- attributes ---- */

const Onnx__AttributeProto *cv_attr(const onnx_cv *cv, const char *name) {
    for (size_t i = 0; i < cv->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = cv->node->attribute[i];
        if (a && a->name && !strcmp(a->name, name)) return a;
    }
    return NULL;
}

int64_t cv_attr_int(const onnx_cv *cv, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    if (!a) return dflt;
    if (a->has_i || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return a->i;
    /* a float where an int belongs: only a value an int64 holds (the cast of any other is
     * undefined), else as if absent */
    if (a->has_f && isfinite(a->f) && fabs(a->f) < 0x1p63) return (int64_t)a->f;
    return dflt;
}

double cv_attr_float(const onnx_cv *cv, const char *name, double dflt) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    if (!a) return dflt;
    if (a->has_f || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return a->f;
    if (a->has_i) return (double)a->i;
    return dflt;
}

const char *cv_attr_str(const onnx_cv *cv, const char *name, const char *dflt) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    if (!a || !a->has_s) return dflt ? ir_intern(cv->ctx, dflt) : NULL;
    return ir_intern_n(cv->ctx, (const char *)a->s.data, a->s.len);
}

int cv_attr_ints(const onnx_cv *cv, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    if (!a) return -1;
    int n = (int)a->n_ints;
    for (int i = 0; i < n && i < max; i++) out[i] = a->ints[i];
    return n;
}

/* ---- inputs ---- */

bool cv_has(const onnx_cv *cv, uint32_t i) { return i < cv->nin && cv->in[i]; }

ir_expr *cv_in(onnx_cv *cv, uint32_t i) {
    if (!cv_has(cv, i)) {
        cv_fail(cv, GR_ERR_INVALID, "input %u is missing", i);
        return NULL;
    }
    onnx_val *v = cv->in[i];
    v->as_tensor = true;
    if (v->expr) return v->expr;
    if (v->known) {
        v->expr = (ir_expr *)ir_const_new(cv->ctx, v->known, v->span);
        return v->expr;
    }
    if (v->sym) {
        cv_fail(cv, GR_ERR_UNSUPPORTED,
                "input '%s' is a shape with dynamic dims used as a tensor", v->name);
        return NULL;
    }
    cv_fail(cv, GR_ERR_UNSUPPORTED, "input '%s' is an output the importer does not produce",
            v->name);
    return NULL;
}

rt_tensor *cv_known(const onnx_cv *cv, uint32_t i) {
    if (!cv_has(cv, i)) return NULL;
    /* A converter (not a folder's probe) wants the value of a param: reported in opts.wanted. */
    if (!cv->folding && cv->in[i]->is_param) cv->in[i]->value_asked = true;
    return cv->in[i]->known;
}

const ir_sinfo *cv_sinfo(onnx_cv *cv, uint32_t i) {
    if (!cv_has(cv, i)) return NULL;
    onnx_val *v = cv->in[i];
    if (v->expr) return v->expr->sinfo;
    if (v->known) {
        const rt_tensor *t = v->known;
        return ir_sinfo_tensor_static(cv->ctx, t->dl.dtype, t->dl.ndim, t->shape);
    }
    if (v->sym) return ir_sinfo_tensor_static(cv->ctx, v->sym_dtype, v->sym_ndim, v->sym_shape);
    return NULL;
}

int32_t cv_rank(onnx_cv *cv, uint32_t i) {
    const ir_sinfo *s = cv_sinfo(cv, i);
    return s && s->kind == IR_SINFO_TENSOR ? s->ndim : -1;
}

ir_dtype cv_dtype(onnx_cv *cv, uint32_t i) {
    const ir_sinfo *s = cv_sinfo(cv, i);
    return s && s->kind == IR_SINFO_TENSOR ? s->dtype : IR_DTYPE_VOID;
}

int cv_ints(const onnx_cv *cv, uint32_t i, int64_t *out, int max) {
    const rt_tensor *t = cv_known(cv, i);
    if (t) {
        if (t->dl.ndim > 1 || !(ir_dtype_is_int(t->dl.dtype) || t->dl.dtype.bits == 1))
            return -1;
        int64_t n = rt_tensor_numel(t);
        for (int64_t k = 0; k < n && k < max; k++) out[k] = onnx_tensor_get_i64(t, k);
        return (int)n;
    }
    if (cv_has(cv, i) && cv->in[i]->sym) {
        const onnx_val *v = cv->in[i];
        if (v->sym_ndim > 1) return -1;
        for (int32_t k = 0; k < v->nsym; k++)
            if (!ir_prim_is_int(v->sym[k], k < max ? &out[k] : NULL)) return -1;
        return v->nsym;
    }
    return -1;
}

int cv_dims(onnx_cv *cv, uint32_t i, const ir_prim **out, int max) {
    if (cv_has(cv, i) && cv->in[i]->sym) {
        const onnx_val *v = cv->in[i];
        if (v->sym_ndim > 1) return -1;
        for (int32_t k = 0; k < v->nsym && k < max; k++) out[k] = v->sym[k];
        return v->nsym;
    }
    int64_t vals[RT_MAX_NDIM * 2];
    int n = cv_ints(cv, i, vals, RT_MAX_NDIM * 2);
    if (n < 0 || n > RT_MAX_NDIM * 2) return -1;
    for (int k = 0; k < n; k++)
        if (vals[k] < -1 || vals[k] > ONNX_DIM_MAX) return -1;  /* not a usable shape */
    for (int k = 0; k < n && k < max; k++) out[k] = ir_prim_int(cv->ctx, vals[k]);
    return n;
}

/* ---- building ---- */

ir_expr *cv_call(onnx_cv *cv, ir_op_id op, uint32_t nargs, ir_expr *const *args,
                 const cv_attrs *a) {
    for (uint32_t i = 0; i < nargs; i++)
        if (!args[i]) return NULL;  /* an input already failed (diag set) */
    if (!ir_op_def_at((uint32_t)op)) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "no op of the op table converts %s", cv->node->op_type);
        return NULL;
    }
    ir_call *c = ir_call_op(cv->ctx, op, nargs, args, a ? a->n : 0, a ? a->keys : NULL,
                            a ? a->vals : NULL, cv->span, cv->imp->diag);
    if (!c) gr_diag_set_layer(cv->imp->diag, cv->layer);
    return (ir_expr *)c;
}

ir_op_id cv_map_op(const cv_op_map *m, size_t n, const char *onnx) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].onnx, onnx)) return m[i].op;
    return IR_OP_NONE;
}

ir_expr *cv_emit(onnx_cv *cv, ir_expr *e) {
    if (!e) return NULL;
    if (ir_is_leaf(e)) return e;
    ir_var *v = ir_bb_emit(cv->imp->bb, e, NULL);
    if (!v) {
        gr_diag_set_layer(cv->imp->diag, cv->layer);
        gr_diag_set_op(cv->imp->diag, cv->node->op_type);
    }
    return (ir_expr *)v;
}

ir_expr *cv_op(onnx_cv *cv, ir_op_id op, uint32_t nargs, ir_expr *const *args,
               const cv_attrs *a) {
    return cv_emit(cv, cv_call(cv, op, nargs, args, a));
}

ir_expr *cv_scalar(onnx_cv *cv, ir_dtype dtype, double v) {
    rt_tensor *t = rt_tensor_new(dtype, 0, NULL);
    if (!t) {
        cv_fail(cv, GR_ERR_NOMEM, "out of memory");
        return NULL;
    }
    onnx_tensor_set_f64(t, 0, v);
    ir_expr *c = (ir_expr *)ir_const_new(cv->ctx, t, cv->span);
    rt_tensor_release(t);
    return c;
}

ir_expr *cv_shape_expr(onnx_cv *cv, uint32_t n, const ir_prim *const *dims) {
    return (ir_expr *)ir_shape_expr_new(cv->ctx, n, dims, cv->span);
}

const ir_prim *const *cv_dims_or_cast(onnx_cv *cv, uint32_t i, ir_expr **x) {
    const ir_prim *const *d = cv_prim_dims(cv, i);
    int32_t rank = cv_rank(cv, i);
    if (d || rank < 0 || rank > RT_MAX_NDIM || !x || !*x) return d;
    /* Known rank, unknown dims (inference could not prove symbolic dims equal): name them with
     * a match_cast so shapes can be computed; later users of the value see the named dims. */
    const ir_prim **vars = IR_NEW_ARRAY(cv->ctx, const ir_prim *, rank ? rank : 1);
    const char *base = onnx_sanitize(cv->ctx, cv->layer);
    for (int32_t k = 0; k < rank; k++) vars[k] = ir_prim_var(cv->ctx, ir_internf(cv->ctx, "%s_d%d", base, (int)k));
    const ir_sinfo *si = ir_sinfo_tensor(cv->ctx, cv_dtype(cv, i), rank, vars);
    ir_var *v = ir_bb_emit_match_cast(cv->imp->bb, *x, si, NULL);
    if (!v) {
        gr_diag_set_layer(cv->imp->diag, cv->layer);
        gr_diag_set_op(cv->imp->diag, cv->node->op_type);
        return NULL;
    }
    *x = (ir_expr *)v;
    cv->in[i]->expr = (ir_expr *)v;
    return si->dims;
}

bool cv_static_dims(onnx_cv *cv, uint32_t i, int64_t *shape) {
    const ir_sinfo *s = cv_sinfo(cv, i);
    return s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && s->dims && ir_sinfo_static_shape(s, shape);
}

const ir_prim *const *cv_prim_dims(onnx_cv *cv, uint32_t i) {
    static const ir_prim *const no_dims[1] = {NULL};
    const ir_sinfo *s = cv_sinfo(cv, i);
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0) return NULL;
    return s->ndim == 0 ? no_dims : s->dims;  /* a scalar has (zero) known dims */
}

void cv_set_known(onnx_cv *cv, uint32_t i, rt_tensor *t) {
    if (i >= cv->nout) {
        rt_tensor_release(t);
        return;
    }
    rt_tensor_release(cv->out_known[i]);
    cv->out_known[i] = t;
}

void cv_set_sym(onnx_cv *cv, uint32_t i, const ir_prim **dims, int32_t n, bool scalar,
                ir_dtype dtype) {
    int64_t len = n;
    cv_set_sym_nd(cv, i, dims, scalar ? 0 : 1, &len, dtype);
}

void cv_set_sym_nd(onnx_cv *cv, uint32_t i, const ir_prim **dims, int32_t ndim, const int64_t *shape,
                   ir_dtype dtype) {
    if (i >= cv->nout || ndim > RT_MAX_NDIM) return;
    int64_t numel = 1;
    for (int32_t d = 0; d < ndim; d++) numel *= shape[d];
    int32_t n = (int32_t)numel;
    bool all_int = true;
    for (int32_t k = 0; k < n && all_int; k++) all_int = ir_prim_is_int(dims[k], NULL);
    if (all_int) {
        /* Every dim is known: an ordinary known tensor. */
        rt_tensor *t = rt_tensor_new(dtype, ndim, shape);
        if (!t) return;
        for (int32_t k = 0; k < n; k++) {
            int64_t v = 0;
            ir_prim_is_int(dims[k], &v);
            onnx_tensor_set_i64(t, k, v);
        }
        cv_set_known(cv, i, t);
        return;
    }
    cv->out_sym[i] = dims;
    cv->out_nsym[i] = n;
    cv->out_sym_ndim[i] = ndim;
    memcpy(cv->out_sym_shape[i], shape, sizeof(int64_t) * (size_t)ndim);
    cv->out_sym_dtype[i] = dtype;
}
