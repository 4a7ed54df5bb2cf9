/* Converters: convolutions, normalization, pooling, resize, pad. Spatial ops are NCHW (2-D);
 * Conv also takes 1-D. */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* The spatial window of a conv/pool node: kernel, strides, dilations and explicit pads
 * (begin..., end...) after auto_pad. in[] are the static spatial input dims (or -1). */
typedef struct window {
    int nsp;
    int64_t kernel[3], strides[3], dil[3], pads[6];
} window;

static gr_status read_window(onnx_cv *cv, int nsp, const int64_t *kernel, const int64_t *in,
                             bool ceil_mode, window *w) {
    w->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        w->kernel[i] = kernel[i];
        w->strides[i] = 1;
        w->dil[i] = 1;
        w->pads[i] = w->pads[i + nsp] = 0;
    }
    int64_t v[6];
    int n = cv_attr_ints(cv, "strides", v, 6);
    if (n >= 0 && n != nsp) return cv_fail(cv, GR_ERR_INVALID, "strides has %d values", n);
    for (int i = 0; i < n; i++) w->strides[i] = v[i];
    n = cv_attr_ints(cv, "dilations", v, 6);
    if (n >= 0 && n != nsp) return cv_fail(cv, GR_ERR_INVALID, "dilations has %d values", n);
    for (int i = 0; i < n; i++) w->dil[i] = v[i];
    for (int i = 0; i < nsp; i++)
        if (w->strides[i] <= 0 || w->dil[i] <= 0 || w->kernel[i] <= 0 || w->strides[i] > ONNX_DIM_MAX ||
            w->dil[i] > ONNX_DIM_MAX || w->kernel[i] > ONNX_DIM_MAX)
            return cv_fail(cv, GR_ERR_INVALID, "kernel, stride or dilation out of range");
    const char *auto_pad = cv_attr_str(cv, "auto_pad", "NOTSET");
    if (!strcmp(auto_pad, "NOTSET")) {
        n = cv_attr_ints(cv, "pads", v, 6);
        if (n >= 0 && n != 2 * nsp) return cv_fail(cv, GR_ERR_INVALID, "pads has %d values", n);
        for (int i = 0; i < n; i++) {
            if (v[i] < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "negative pads");
            if (v[i] > ONNX_DIM_MAX) return cv_fail(cv, GR_ERR_INVALID, "pads out of range");
            w->pads[i] = v[i];
        }
    } else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
        for (int i = 0; i < nsp; i++) {
            if (in[i] < 0)
                return cv_fail(cv, GR_ERR_UNSUPPORTED, "auto_pad %s needs static spatial dims",
                               auto_pad);
            int64_t out = (in[i] + w->strides[i] - 1) / w->strides[i];
            int64_t eff = (w->kernel[i] - 1) * w->dil[i] + 1;
            int64_t total = (out - 1) * w->strides[i] + eff - in[i];
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            bool upper = !strcmp(auto_pad, "SAME_UPPER");
            w->pads[i] = upper ? small : big;
            w->pads[i + nsp] = upper ? big : small;
        }
        (void)ceil_mode;
    } else if (strcmp(auto_pad, "VALID")) {
        return cv_fail(cv, GR_ERR_INVALID, "unknown auto_pad '%s'", auto_pad);
    }
    return GR_OK;
}

/* Static spatial dims of input 0 (from dim 2), -1 where unknown. */
static void spatial_in(onnx_cv *cv, int nsp, int64_t *in) {
    const ir_prim *const *dims = cv_prim_dims(cv, 0);
    for (int i = 0; i < nsp; i++)
        if (!dims || !ir_prim_is_int(dims[i + 2], &in[i])) in[i] = -1;
}

/* A known bias reshaped to [1, C, 1, ...] as a constant carrying the initializer's span; a
 * dynamic bias goes through relax.reshape. */
static ir_expr *bias_for(onnx_cv *cv, uint32_t i, int32_t rank) {
    rt_tensor *b = cv_known(cv, i);
    int64_t shape[RT_MAX_NDIM];
    for (int32_t k = 0; k < rank; k++) shape[k] = 1;
    if (b && b->dl.ndim == 1) {
        shape[1] = b->shape[0];
        rt_tensor *t = rt_tensor_new(b->dl.dtype, rank, shape);
        if (!t) return NULL;
        memcpy(rt_tensor_data(t), rt_tensor_data(b), rt_tensor_nbytes(b));
        ir_expr *c = (ir_expr *)ir_const_new(cv->ctx, t, cv->in[i]->span);
        rt_tensor_release(t);
        return c;
    }
    const ir_prim *dims[RT_MAX_NDIM];
    for (int32_t k = 0; k < rank; k++) dims[k] = ir_prim_int(cv->ctx, 1);
    const ir_sinfo *bs = cv_sinfo(cv, i);
    if (!bs || bs->ndim != 1 || !bs->dims) {
        cv_fail(cv, GR_ERR_INVALID, "bias must be 1-D");
        return NULL;
    }
    dims[1] = bs->dims[0];
    return cv_op2(cv, IR_OP_RESHAPE, cv_in(cv, i), cv_shape_expr(cv, (uint32_t)rank, dims), NULL);
}

static gr_status conv_common(onnx_cv *cv, bool transpose) {
    ir_expr *x = cv_in(cv, 0), *wgt = cv_in(cv, 1);
    if (!x || !wgt) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3 || rank > 5)
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "%d-D input (supported: 3-D to 5-D)", (int)rank);
    int nsp = rank - 2;
    int64_t kernel[3], in[3];
    int n = cv_attr_ints(cv, "kernel_shape", kernel, 3);
    if (n < 0) {
        const ir_prim *const *wd = cv_prim_dims(cv, 1);
        if (!wd || cv_rank(cv, 1) != rank) return cv_fail(cv, GR_ERR_INVALID, "weight shape unknown");
        for (int i = 0; i < nsp; i++)
            if (!ir_prim_is_int(wd[i + 2], &kernel[i]))
                return cv_fail(cv, GR_ERR_UNSUPPORTED, "dynamic kernel size");
    } else if (n != nsp) {
        return cv_fail(cv, GR_ERR_INVALID, "kernel_shape has %d values", n);
    }
    spatial_in(cv, nsp, in);
    window w;
    int64_t group = cv_attr_int(cv, "group", 1);
    cv_attrs at = {0};
    ir_op_id op;
    if (!transpose) {
        gr_status st = read_window(cv, nsp, kernel, in, false, &w);
        if (st != GR_OK) return st;
        static const ir_op_id ops[4] = {IR_OP_NONE, IR_OP_CONV1D, IR_OP_CONV2D, IR_OP_CONV3D};
        op = ops[nsp];
    } else {
        /* Transposed conv: auto_pad / output_shape define pads from the output size. */
        int64_t v[6];
        int64_t opad[3] = {0, 0, 0};
        gr_status st;
        const char *auto_pad = cv_attr_str(cv, "auto_pad", "NOTSET");
        bool same = !strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER");
        st = read_window(cv, nsp, kernel, in, false, &w);
        /* read_window's SAME pads are a forward conv's; recomputed below. */
        if (same) for (int i = 0; i < 2 * nsp; i++) w.pads[i] = 0;
        if (st != GR_OK) return st;
        n = cv_attr_ints(cv, "output_padding", v, 3);
        for (int i = 0; i < n && i < nsp; i++) {
            if (v[i] < 0 || v[i] > ONNX_DIM_MAX)
                return cv_fail(cv, GR_ERR_INVALID, "output_padding out of range");
            opad[i] = v[i];
        }
        /* output_shape: the spatial dims, or (as some exporters write) the whole shape. */
        int64_t oshape[5];
        int no = cv_attr_ints(cv, "output_shape", oshape, 5);
        if (no >= 0 && no != nsp && no != nsp + 2)
            return cv_fail(cv, GR_ERR_INVALID, "output_shape has %d values", no);
        for (int i = 0; i < no; i++)
            if (oshape[i] < 0 || oshape[i] > ONNX_DIM_MAX)
                return cv_fail(cv, GR_ERR_INVALID, "output_shape out of range");
        if (no >= nsp || same) {
            for (int i = 0; i < nsp; i++) {
                if (in[i] < 0)
                    return cv_fail(cv, GR_ERR_UNSUPPORTED, "output_shape/auto_pad needs static dims");
                int64_t target = no >= nsp ? oshape[no - nsp + i] : in[i] * w.strides[i];
                int64_t total = w.strides[i] * (in[i] - 1) + opad[i] +
                                ((kernel[i] - 1) * w.dil[i] + 1) - target;
                if (total < 0) {
                    opad[i] += -total;  /* the output is larger than the natural size */
                    total = 0;
                }
                bool upper = !strcmp(auto_pad, "SAME_UPPER");
                w.pads[i] = upper ? total / 2 : total - total / 2;
                w.pads[i + nsp] = total - w.pads[i];
            }
        }
        cv_set(&at, "output_padding", ir_attr_ints(cv->ctx, (uint32_t)nsp, opad));
        static const ir_op_id ops[4] = {IR_OP_NONE, IR_OP_CONV1D_TRANSPOSE, IR_OP_CONV2D_TRANSPOSE,
                                        IR_OP_CONV3D_TRANSPOSE};
        op = ops[nsp];
    }
    cv_set(&at, "strides", ir_attr_ints(cv->ctx, (uint32_t)nsp, w.strides));
    cv_set(&at, "padding", ir_attr_ints(cv->ctx, (uint32_t)(2 * nsp), w.pads));
    cv_set(&at, "dilation", ir_attr_ints(cv->ctx, (uint32_t)nsp, w.dil));
    cv_set(&at, "groups", ir_attr_int(group));
    ir_expr *y = cv_call2(cv, op, x, wgt, &at);
    if (cv_has(cv, 2)) {
        y = cv_emit(cv, y);
        y = cv_call2(cv, IR_OP_ADD, y, bias_for(cv, 2, rank), NULL);
    }
    return cv_out(cv, 0, y);
}

/* ONNX coverage: a forward conv of x and wgt (already prepared by ConvInteger or
 * QLinearConv) with the node's window attributes; the data is input 0, the weight input wi. */
ir_expr *onnx_conv_call(onnx_cv *cv, ir_expr *x, ir_expr *wgt, uint32_t wi, ir_dtype out_dtype) {
    int32_t rank = cv_rank(cv, 0);
    if (!x || !wgt) return NULL;
    if (rank != 3 && rank != 4) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "%d-D input (supported: 3-D and 4-D)", (int)rank);
        return NULL;
    }
    int nsp = rank - 2;
    int64_t kernel[3], in[3];
    int n = cv_attr_ints(cv, "kernel_shape", kernel, 3);
    if (n < 0) {
        const ir_prim *const *wd = cv_prim_dims(cv, wi);
        if (!wd || cv_rank(cv, wi) != rank) {
            cv_fail(cv, GR_ERR_INVALID, "weight shape unknown");
            return NULL;
        }
        for (int i = 0; i < nsp; i++)
            if (!ir_prim_is_int(wd[i + 2], &kernel[i])) {
                cv_fail(cv, GR_ERR_UNSUPPORTED, "dynamic kernel size");
                return NULL;
            }
    } else if (n != nsp) {
        cv_fail(cv, GR_ERR_INVALID, "kernel_shape has %d values", n);
        return NULL;
    }
    spatial_in(cv, nsp, in);
    window w;
    if (read_window(cv, nsp, kernel, in, false, &w) != GR_OK) return NULL;
    cv_attrs at = {0};
    cv_set(&at, "strides", ir_attr_ints(cv->ctx, (uint32_t)nsp, w.strides));
    cv_set(&at, "padding", ir_attr_ints(cv->ctx, (uint32_t)(2 * nsp), w.pads));
    cv_set(&at, "dilation", ir_attr_ints(cv->ctx, (uint32_t)nsp, w.dil));
    cv_set(&at, "groups", ir_attr_int(cv_attr_int(cv, "group", 1)));
    cv_set(&at, "out_dtype", ir_attr_dtype(out_dtype));
    return cv_call2(cv, nsp == 1 ? IR_OP_CONV1D : IR_OP_CONV2D, x, wgt, &at);
}

gr_status onnx_cv_conv(onnx_cv *cv) { return conv_common(cv, false); }
gr_status onnx_cv_conv_transpose(onnx_cv *cv) { return conv_common(cv, true); }

/* BatchNormalization with training_mode=1 (opset 14+): normalized with the batch's own mean
 * and (population) variance over every axis but 1; the running statistics come out updated:
 * running = input_running * momentum + batch * (1 - momentum). */
static gr_status batch_norm_training(onnx_cv *cv) {
    ir_expr *args[5];
    for (uint32_t i = 0; i < 5; i++)
        if (!(args[i] = cv_in(cv, i))) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 2) return cv_fail(cv, GR_ERR_INVALID, "input must be (N, C, ...)");
    int64_t axes[RT_MAX_NDIM];
    uint32_t na = 0;
    for (int32_t i = 0; i < rank; i++)
        if (i != 1) axes[na++] = i;
    cv_attrs rd = {0};
    cv_set(&rd, "axis", ir_attr_ints(cv->ctx, na, axes));
    cv_set(&rd, "keepdims", ir_attr_bool(false));
    ir_expr *mean = cv_op1(cv, IR_OP_MEAN, args[0], &rd), *var = cv_op1(cv, IR_OP_VARIANCE, args[0], &rd);
    if (!mean || !var) return cv_status(cv);
    ir_expr *bn_args[5] = {args[0], args[1], args[2], mean, var};
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(1));
    cv_set(&at, "epsilon", ir_attr_float(cv_attr_float(cv, "epsilon", 1e-5)));
    ir_expr *bn = cv_emit(cv, cv_call(cv, IR_OP_BATCH_NORM, 5, bn_args, &at));
    if (!bn) return cv_status(cv);
    gr_status st = cv_out(cv, 0, (ir_expr *)ir_tgi_new(cv->ctx, bn, 0, cv->span));
    double mom = cv_attr_float(cv, "momentum", 0.9);
    ir_dtype dt = cv_dtype(cv, 3);
    for (uint32_t k = 1; st == GR_OK && k < 3 && k < cv->nout; k++) {
        ir_expr *old = cv_op2(cv, IR_OP_MULTIPLY, args[2 + k], cv_scalar(cv, dt, mom), NULL);
        ir_expr *cur = cv_op2(cv, IR_OP_MULTIPLY, k == 1 ? mean : var, cv_scalar(cv, dt, 1.0 - mom), NULL);
        st = cv_out(cv, k, cv_call2(cv, IR_OP_ADD, old, cur, NULL));
    }
    return st;
}

gr_status onnx_cv_batch_norm(onnx_cv *cv) {
    if (cv_attr_int(cv, "training_mode", 0) && cv->opset >= 14) return batch_norm_training(cv);
    if (cv_attr_int(cv, "training_mode", 0) || !cv_attr_int(cv, "is_test", 1))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "training mode");
    if (!cv_attr_int(cv, "spatial", 1))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "spatial=0 (per-element statistics)");
    ir_expr *args[5];
    for (uint32_t i = 0; i < 5; i++)
        if (!(args[i] = cv_in(cv, i))) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(1));
    cv_set(&at, "epsilon", ir_attr_float(cv_attr_float(cv, "epsilon", 1e-5)));
    ir_expr *bn = cv_emit(cv, cv_call(cv, IR_OP_BATCH_NORM, 5, args, &at));
    if (!bn) return cv_status(cv);
    return cv_out(cv, 0, (ir_expr *)ir_tgi_new(cv->ctx, bn, 0, cv->span));
}

gr_status onnx_cv_layer_norm(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *gamma = cv_in(cv, 1);
    if (!x || !gamma) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis = cv_attr_int(cv, "axis", -1);
    if (!cv_axis(axis, rank, &axis)) return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    ir_expr *beta;
    if (cv_has(cv, 2)) {
        beta = cv_in(cv, 2);
    } else {
        int64_t gshape[RT_MAX_NDIM];
        if (!cv_static_dims(cv, 1, gshape))
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "no bias and a dynamic scale shape");
        rt_tensor *z = rt_tensor_new(cv_dtype(cv, 1), cv_rank(cv, 1), gshape);
        if (!z) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
        beta = (ir_expr *)ir_const_new(cv->ctx, z, cv->span);
        rt_tensor_release(z);
    }
    int64_t axes[RT_MAX_NDIM];
    uint32_t na = 0;
    for (int64_t i = axis; i < rank; i++) axes[na++] = i;
    cv_attrs at = {0};
    cv_set(&at, "axes", ir_attr_ints(cv->ctx, na, axes));
    cv_set(&at, "epsilon", ir_attr_float(cv_attr_float(cv, "epsilon", 1e-5)));
    ir_expr *args[3] = {x, gamma, beta};
    gr_status st = cv_out(cv, 0, cv_call(cv, IR_OP_LAYER_NORM, 3, args, &at));
    /* Optional outputs: Mean and InvStdDev = 1 / sqrt(variance + epsilon), kept dims. */
    bool want_mean = cv->nout > 1 && cv->node->output[1] && *cv->node->output[1];
    bool want_isd = cv->nout > 2 && cv->node->output[2] && *cv->node->output[2];
    if (st != GR_OK || (!want_mean && !want_isd)) return st;
    cv_attrs rt = {0};
    cv_set(&rt, "axis", ir_attr_ints(cv->ctx, na, axes));
    cv_set(&rt, "keepdims", ir_attr_bool(true));
    if (want_mean) st = cv_out(cv, 1, cv_call1(cv, IR_OP_MEAN, x, &rt));
    if (st == GR_OK && want_isd) {
        ir_expr *var = cv_op1(cv, IR_OP_VARIANCE, x, &rt);
        ir_expr *ve = cv_op2(cv, IR_OP_ADD, var,
                             cv_scalar(cv, cv_dtype(cv, 0), cv_attr_float(cv, "epsilon", 1e-5)), NULL);
        st = cv_out(cv, 2, cv_call1(cv, IR_OP_RSQRT, ve, NULL));
    }
    return st;
}

/* MaxPool / AveragePool on NCHW; 1-D input (N, C, W) goes through a (N, C, 1, W) view. */
gr_status onnx_cv_pool(onnx_cv *cv) {
    bool is_max = !strcmp(cv->node->op_type, "MaxPool");
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    bool indices = cv->nout > 1 && cv->node->output[1] && *cv->node->output[1];
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3 || rank > 5)
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "%d-D input (supported: 3-D to 5-D)", (int)rank);
    int nsp = rank - 2;
    int64_t kernel[3], in[3];
    if (cv_attr_ints(cv, "kernel_shape", kernel, 3) != nsp)
        return cv_fail(cv, GR_ERR_INVALID, "kernel_shape must have %d values", nsp);
    spatial_in(cv, nsp, in);
    window w;
    gr_status st = read_window(cv, nsp, kernel, in, false, &w);
    if (st != GR_OK) return st;
    if (indices) {
        if (nsp != 2 || !is_max) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the Indices output of a %d-D pool", nsp);
        return onnx_cv_pool_indices(cv, w.kernel, w.strides, w.pads, w.dil);
    }
    if (nsp == 1) {
        w.kernel[1] = w.kernel[0], w.kernel[0] = 1;
        w.strides[1] = w.strides[0], w.strides[0] = 1;
        w.dil[1] = w.dil[0], w.dil[0] = 1;
        int64_t b = w.pads[0], e = w.pads[1];
        w.pads[0] = 0, w.pads[1] = b, w.pads[2] = 0, w.pads[3] = e;
        cv_attrs ex = {0};
        int64_t two = 2;
        cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &two));
        x = cv_op1(cv, IR_OP_EXPAND_DIMS, x, &ex);
    }
    cv_attrs at = {0};
    uint32_t psp = nsp == 3 ? 3 : 2; /* 1-D runs as 2-D */
    cv_set(&at, "pool_size", ir_attr_ints(cv->ctx, psp, w.kernel));
    cv_set(&at, "strides", ir_attr_ints(cv->ctx, psp, w.strides));
    cv_set(&at, "padding", ir_attr_ints(cv->ctx, 2 * psp, w.pads));
    cv_set(&at, "dilation", ir_attr_ints(cv->ctx, psp, w.dil));
    cv_set(&at, "ceil_mode", ir_attr_bool(cv_attr_int(cv, "ceil_mode", 0) != 0));
    if (!is_max)
        cv_set(&at, "count_include_pad", ir_attr_bool(cv_attr_int(cv, "count_include_pad", 0) != 0));
    ir_expr *y = cv_call1(cv, psp == 3 ? (is_max ? IR_OP_MAX_POOL3D : IR_OP_AVG_POOL3D)
                                       : (is_max ? IR_OP_MAX_POOL2D : IR_OP_AVG_POOL2D), x, &at);
    if (nsp == 1) {
        cv_attrs sq = {0};
        int64_t two = 2;
        cv_set(&sq, "axis", ir_attr_ints(cv->ctx, 1, &two));
        y = cv_call1(cv, IR_OP_SQUEEZE, cv_emit(cv, y), &sq);
    }
    return cv_out(cv, 0, y);
}

gr_status onnx_cv_global_pool(onnx_cv *cv) {
    bool is_max = !strcmp(cv->node->op_type, "GlobalMaxPool");
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 3) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input rank %d", (int)rank);
    cv_attrs at = {0};
    if (rank == 4 && !is_max) {
        int64_t one[2] = {1, 1};
        cv_set(&at, "output_size", ir_attr_ints(cv->ctx, 2, one));
        return cv_out(cv, 0, cv_call1(cv, IR_OP_ADAPTIVE_AVG_POOL2D, x, &at));
    }
    int64_t axes[RT_MAX_NDIM];
    for (int32_t i = 2; i < rank; i++) axes[i - 2] = i;
    cv_set(&at, "axis", ir_attr_ints(cv->ctx, (uint32_t)(rank - 2), axes));
    cv_set(&at, "keepdims", ir_attr_bool(true));
    return cv_out(cv, 0, cv_call1(cv, is_max ? IR_OP_MAX : IR_OP_MEAN, x, &at));
}

/* Resize (opset 10, 11, 13+) and Upsample (7-9) to image.resize2d on NCHW input. */
gr_status onnx_cv_resize(onnx_cv *cv) {
    bool upsample = !strcmp(cv->node->op_type, "Upsample");
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (rank != 4 || !dims) {
        char buf[256] = "";
        if (cv_sinfo(cv, 0)) ir_sinfo_snprint(cv_sinfo(cv, 0), buf, sizeof(buf));
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "only 4-D NCHW input with known rank (got %s)", buf);
    }
    const char *mode = cv_attr_str(cv, "mode", "nearest");
    const char *method;
    if (!strcmp(mode, "nearest")) method = "nearest_neighbor";
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) method = "linear";
    else if (!strcmp(mode, "cubic") && !upsample) method = "cubic";
    else return cv_fail(cv, GR_ERR_UNSUPPORTED, "mode '%s'", mode);
    /* Upsample picks the floor of asymmetric coordinates; Resize-10 has no attributes for
     * either and means asymmetric + round_prefer_floor (as onnxruntime). */
    const char *coord = "asymmetric", *rounding = upsample ? "floor" : "round_prefer_floor";
    if (!upsample && cv->opset >= 11) {
        coord = cv_attr_str(cv, "coordinate_transformation_mode", "half_pixel");
        rounding = cv_attr_str(cv, "nearest_mode", "round_prefer_floor");
    }
    if (cv_attr_int(cv, "antialias", 0)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "antialias");
    if (cv_attr(cv, "axes")) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the axes attribute");
    const char *policy = cv_attr_str(cv, "keep_aspect_ratio_policy", "stretch");
    if (strcmp(policy, "stretch"))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s'", policy);

    /* Output size: the sizes input, or floor(in * scale). */
    uint32_t scales_in = upsample ? 1 : cv->opset < 11 ? 1 : 2, sizes_in = 3;
    const ir_prim *out[4] = {0}, *sizes[4];
    int ns = upsample || cv->opset < 11 ? -1 : cv_has(cv, sizes_in) ? cv_dims(cv, sizes_in, sizes, 4) : -1;
    rt_tensor *scales = upsample && cv->opset < 9 ? NULL : cv_known(cv, scales_in);
    double sc[4];
    int nsc = -1;
    bool fractional = false; /* some in * scale is not whole: the kernel maps with the scales */
    if (upsample && cv->opset < 9) {
        const Onnx__AttributeProto *a = cv_attr(cv, "scales");
        if (a && a->n_floats == 4) {
            for (int i = 0; i < 4; i++) sc[i] = a->floats[i];
            nsc = 4;
        }
    } else if (scales && rt_tensor_numel(scales) > 0) {
        nsc = (int)rt_tensor_numel(scales);
        for (int i = 0; i < nsc && i < 4; i++) sc[i] = rt_tensor_get_f64(scales, i);
    }
    if (ns == 4) {
        for (int i = 0; i < 4; i++) {
            int64_t v;
            if (ir_prim_is_int(sizes[i], &v) && v < 0)
                return cv_fail(cv, GR_ERR_INVALID, "size %lld out of range", (long long)v);
            out[i] = sizes[i];  /* known ints (bounded by cv_dims) or symbolic dims */
        }
    } else if (nsc == 4) {
        for (int i = 0; i < 4; i++) {
            int64_t d;
            if (sc[i] <= 0) return cv_fail(cv, GR_ERR_INVALID, "non-positive scale");
            if (!(sc[i] <= 1e6)) return cv_fail(cv, GR_ERR_INVALID, "scale out of range");
            if (sc[i] == floor(sc[i]))
                out[i] = ir_prim_mul(cv->ctx, dims[i], ir_prim_int(cv->ctx, (int64_t)sc[i]));
            else if (ir_prim_is_int(dims[i], &d) && (double)d * sc[i] <= (double)ONNX_DIM_MAX) {
                /* ONNX maps coordinates with the scale itself (and the unrounded in * scale);
                 * resize2d maps with out / in, the same only when in * scale is whole. */
                double o = (double)d * sc[i];
                if (o != floor(o)) {
                    /* floor(in * scale), coordinates mapped with the scale (attr scales) */
                    if (i < 2) return cv_fail(cv, GR_ERR_UNSUPPORTED, "resizing the batch or channel dims");
                    fractional = true;
                    if (floor(o) < 1)
                        return cv_fail(cv, GR_ERR_INVALID, "scale %g of dim %d (size %lld) gives an empty output",
                                       sc[i], i, (long long)d);
                }
                out[i] = ir_prim_int(cv->ctx, (int64_t)floor(o));
            }
            else
                return cv_fail(cv, GR_ERR_UNSUPPORTED, "a fractional scale on a dynamic dim");
        }
    } else {
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "scales/sizes must be known 4-element constants");
    }
    if (out[0] != dims[0] || out[1] != dims[1])
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "resizing the batch or channel dims");
    cv_attrs at = {0};
    if (!upsample && cv->opset >= 11 && !strcmp(coord, "tf_crop_and_resize")) {
        rt_tensor *roi = cv_known(cv, 1);
        if (!roi || rt_tensor_numel(roi) != 8)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "tf_crop_and_resize needs a constant 4-D roi");
        ir_attr r[4];
        const int idx[4] = {2, 3, 6, 7};
        for (int i = 0; i < 4; i++) r[i] = ir_attr_float(rt_tensor_get_f64(roi, idx[i]));
        cv_set(&at, "roi", ir_attr_array(cv->ctx, 4, r));
    }
    if (fractional) {
        ir_attr sa[2] = {ir_attr_float(sc[2]), ir_attr_float(sc[3])};
        cv_set(&at, "scales", ir_attr_array(cv->ctx, 2, sa));
    }
    cv_set(&at, "layout", ir_attr_str(cv->ctx, "NCHW"));
    cv_set(&at, "method", ir_attr_str(cv->ctx, method));
    cv_set(&at, "coordinate_transformation_mode", ir_attr_str(cv->ctx, coord));
    cv_set(&at, "rounding_method", ir_attr_str(cv->ctx, rounding));
    cv_set(&at, "cubic_alpha", ir_attr_float(cv_attr_float(cv, "cubic_coeff_a", -0.75)));
    cv_set(&at, "cubic_exclude", ir_attr_int(cv_attr_int(cv, "exclude_outside", 0)));
    cv_set(&at, "extrapolation_value", ir_attr_float(cv_attr_float(cv, "extrapolation_value", 0.0)));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESIZE2D, x, cv_shape_expr(cv, 2, out + 2), &at));
}

/* Pad's constant_value input (opset 11), 0 when absent. */
static gr_status pad_value(onnx_cv *cv, double *value) {
    if (!cv_has(cv, 2)) return GR_OK;
    rt_tensor *v = cv_known(cv, 2);
    if (!v || rt_tensor_numel(v) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "constant_value must be a constant");
    *value = rt_tensor_get_f64(v, 0);
    return GR_OK;
}

/* A constant-mode Pad whose widths are symbolic (Swin's (7 - W % 7) % 7 of a symbolic W):
 * relax's pad takes int widths, so each padded axis becomes a concat of fills of the pad value
 * before and after. The widths are expressions of dims, taken as non-negative. */
static gr_status pad_symbolic(onnx_cv *cv, ir_expr *x, int32_t rank) {
    const ir_prim *w[2 * RT_MAX_NDIM];
    int n = cv_dims(cv, 1, w, 2 * RT_MAX_NDIM);
    const char *mode = cv_attr_str(cv, "mode", "constant");
    if (strcmp(mode, "constant"))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "symbolic pads in mode '%s' (only constant mode takes them)", mode);
    if (n != 2 * rank) return cv_fail(cv, GR_ERR_INVALID, "%d pads for a rank-%d input", n, (int)rank);
    double value = 0.0;
    gr_status st = pad_value(cv, &value);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (ir_prim_is_int(w[i], &v) && v < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "negative pads");
    }
    const ir_prim *const *dims0 = cv_dims_or_cast(cv, 0, &x);
    if (!dims0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    const ir_prim *dims[RT_MAX_NDIM];
    memcpy(dims, dims0, sizeof(*dims) * (size_t)rank);
    ir_dtype dt = cv_dtype(cv, 0);
    ir_expr *fill = cv_scalar(cv, dt, value);
    cv_attrs fa = {0};
    cv_set(&fa, "dtype", ir_attr_dtype(dt));
    bool zero[2 * RT_MAX_NDIM];
    int32_t last = -1;
    for (int i = 0; i < n; i++) {
        int64_t v;
        zero[i] = ir_prim_is_int(w[i], &v) && v == 0;
        if (!zero[i]) last = i % rank;
    }
    ir_expr *cur = x;
    for (int32_t a = 0; a <= last; a++) {
        bool zb = zero[a], ze = zero[a + rank];
        if (zb && ze) continue;
        ir_expr *parts[3];
        uint32_t np = 0;
        const ir_prim *side[RT_MAX_NDIM];
        memcpy(side, dims, sizeof(*dims) * (size_t)rank);
        if (!zb) {
            side[a] = w[a];
            parts[np++] = cv_op2(cv, IR_OP_FULL, cv_shape_expr(cv, (uint32_t)rank, side), fill, &fa);
        }
        parts[np++] = cur;
        if (!ze) {
            side[a] = w[a + rank];
            parts[np++] = cv_op2(cv, IR_OP_FULL, cv_shape_expr(cv, (uint32_t)rank, side), fill, &fa);
        }
        for (uint32_t k = 0; k < np; k++)
            if (!parts[k]) return cv_status(cv);
        cv_attrs ca = {0};
        cv_set(&ca, "axis", ir_attr_int(a));
        ir_expr *cat = cv_call1(cv, IR_OP_CONCAT, (ir_expr *)ir_tuple_new(cv->ctx, np, parts, cv->span), &ca);
        dims[a] = ir_prim_add(cv->ctx, ir_prim_add(cv->ctx, w[a], dims[a]), w[a + rank]);
        cur = a == last ? cat : cv_emit(cv, cat);
        if (!cur) return cv_status(cv);
    }
    return cv_out(cv, 0, cur);
}

gr_status onnx_cv_pad(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    if (rank < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input rank unknown");
    const char *mode = cv_attr_str(cv, "mode", "constant");
    int64_t pads[2 * RT_MAX_NDIM];
    int n;
    double value = 0.0;
    if (cv->opset < 11) {
        n = cv_attr_ints(cv, cv->opset < 2 ? "paddings" : "pads", pads, 2 * RT_MAX_NDIM);
        value = cv_attr_float(cv, "value", 0.0);
    } else {
        n = cv_ints(cv, 1, pads, 2 * RT_MAX_NDIM);
        if (n < 0 && cv_has(cv, 1) && cv->in[1]->sym && !cv_has(cv, 3)) return pad_symbolic(cv, x, rank);
        if (n < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "pads must be a constant");
        gr_status st = pad_value(cv, &value);
        if (st) return st;
    }
    /* opset 18: pads cover only `axes`. */
    int64_t full[2 * RT_MAX_NDIM] = {0};
    if (cv_has(cv, 3)) {
        int64_t axes[RT_MAX_NDIM];
        int na = cv_ints(cv, 3, axes, RT_MAX_NDIM);
        if (na < 0 || na > rank || n != 2 * na)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "axes must be a constant matching pads");
        for (int i = 0; i < na; i++) {
            int64_t ax;
            if (!cv_axis(axes[i], rank, &ax)) return cv_fail(cv, GR_ERR_INVALID, "bad axis");
            full[ax] = pads[i];
            full[ax + rank] = pads[i + na];
        }
    } else {
        if (n != 2 * rank)
            return cv_fail(cv, GR_ERR_INVALID, "%d pads for a rank-%d input", n, (int)rank);
        memcpy(full, pads, sizeof(int64_t) * (size_t)n);
    }
    /* ONNX [b0, b1, ..., e0, e1, ...] -> Relax [b0, e0, b1, e1, ...] */
    int64_t width[2 * RT_MAX_NDIM];
    for (int32_t i = 0; i < rank; i++) {
        if (full[i] < 0 || full[i + rank] < 0)
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "negative pads");
        if (full[i] > ONNX_DIM_MAX || full[i + rank] > ONNX_DIM_MAX)
            return cv_fail(cv, GR_ERR_INVALID, "pads out of range");
        width[2 * i] = full[i];
        width[2 * i + 1] = full[i + rank];
    }
    /* no padding in any mode is the input itself (torch writes one before avg pools) */
    bool none = true;
    for (int32_t i = 0; i < 2 * rank; i++) none &= width[i] == 0;
    if (none) return cv_out(cv, 0, x);
    const char *pm;
    if (!strcmp(mode, "constant")) pm = "constant";
    else if (!strcmp(mode, "reflect")) pm = "reflect";
    else if (!strcmp(mode, "edge")) pm = "edge";
    else return cv_fail(cv, GR_ERR_UNSUPPORTED, "mode '%s'", mode);
    cv_attrs at = {0};
    cv_set(&at, "pad_width", ir_attr_ints(cv->ctx, (uint32_t)(2 * rank), width));
    cv_set(&at, "pad_mode", ir_attr_str(cv->ctx, pm));
    cv_set(&at, "pad_value", ir_attr_float(value));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_PAD, x, &at));
}
