/* Converters: NonMaxSuppression, RoiAlign, GridSample, MaxUnpool, and MaxPool with its Indices
 * output (onnx_cv_pool hands it over). */
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

gr_status onnx_cv_nms(onnx_cv *cv) {
    ir_expr *args[5];
    uint32_t n = 0;
    for (uint32_t i = 0; i < 5 && i < cv->nin; i++) {
        if (!cv_has(cv, i)) {
            if (i < 2) return cv_fail(cv, GR_ERR_INVALID, "boxes and scores are required");
            /* an absent input before a given one: an empty tensor means "not given" */
            int64_t zero = 0;
            rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, &zero);
            if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
            args[n++] = (ir_expr *)ir_const_new(cv->ctx, t, cv->span);
            rt_tensor_release(t);
            continue;
        }
        if (!(args[n++] = cv_in(cv, i))) return cv_status(cv);
    }
    while (n > 2 && args[n - 1]->kind == IR_CONST && rt_tensor_numel(((ir_const *)args[n - 1])->data) == 0) n--;
    cv_attrs at = {0};
    cv_set(&at, "center_point_box", ir_attr_int(cv_attr_int(cv, "center_point_box", 0)));
    return cv_out(cv, 0, cv_call(cv, IR_OP_NMS, n, args, &at));
}

/* rois (R, 4) and batch_indices (R,) become TVM's (R, 5) rois with the index in column 0 */
gr_status onnx_cv_roi_align(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *rois = cv_in(cv, 1), *bi = cv_in(cv, 2);
    if (!x || !rois || !bi) return cv_status(cv);
    if (cv_rank(cv, 0) != 4) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input must be 4-D (NCHW)");
    ir_dtype dt = cv_dtype(cv, 1);
    cv_attrs ex = {0}, ty = {0}, ca = {0};
    int64_t one = 1;
    cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &one));
    cv_set(&ty, "dtype", ir_attr_dtype(dt));
    ir_expr *col = cv_op1(cv, IR_OP_ASTYPE, cv_op1(cv, IR_OP_EXPAND_DIMS, bi, &ex), &ty);
    ir_expr *f[2] = {col, rois};
    if (!col) return cv_status(cv);
    cv_set(&ca, "axis", ir_attr_int(1));
    ir_expr *r5 = cv_op1(cv, IR_OP_CONCAT, (ir_expr *)ir_tuple_new(cv->ctx, 2, f, cv->span), &ca);
    const char *ctm = cv->opset >= 16 ? cv_attr_str(cv, "coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
    if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
        return cv_fail(cv, GR_ERR_INVALID, "unknown coordinate_transformation_mode '%s'", ctm);
    const char *mode = cv_attr_str(cv, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max")) return cv_fail(cv, GR_ERR_INVALID, "unknown mode '%s'", mode);
    int64_t ps[2] = {cv_attr_int(cv, "output_height", 1), cv_attr_int(cv, "output_width", 1)};
    if (ps[0] <= 0 || ps[1] <= 0 || ps[0] > ONNX_DIM_MAX || ps[1] > ONNX_DIM_MAX)
        return cv_fail(cv, GR_ERR_INVALID, "output_height / output_width out of range");
    cv_attrs at = {0};
    cv_set(&at, "pooled_size", ir_attr_ints(cv->ctx, 2, ps));
    cv_set(&at, "spatial_scale", ir_attr_float(cv_attr_float(cv, "spatial_scale", 1.0)));
    cv_set(&at, "sample_ratio", ir_attr_int(cv_attr_int(cv, "sampling_ratio", 0)));
    cv_set(&at, "aligned", ir_attr_bool(!strcmp(ctm, "half_pixel")));
    cv_set(&at, "mode", ir_attr_str(cv->ctx, mode));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_ROI_ALIGN, x, r5, &at));
}

gr_status onnx_cv_grid_sample(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *g = cv_in(cv, 1);
    if (!x || !g) return cv_status(cv);
    if (cv_rank(cv, 0) != 4) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input must be 4-D (NCHW)");
    const char *mode = cv_attr_str(cv, "mode", "bilinear"), *pm = cv_attr_str(cv, "padding_mode", "zeros");
    if (!strcmp(mode, "linear")) mode = "bilinear";
    if (!strcmp(mode, "cubic")) mode = "bicubic";
    if (strcmp(mode, "bilinear") && strcmp(mode, "nearest") && strcmp(mode, "bicubic"))
        return cv_fail(cv, GR_ERR_INVALID, "unknown mode '%s'", mode);
    if (strcmp(pm, "zeros") && strcmp(pm, "border") && strcmp(pm, "reflection"))
        return cv_fail(cv, GR_ERR_INVALID, "unknown padding_mode '%s'", pm);
    cv_attrs at = {0};
    cv_set(&at, "method", ir_attr_str(cv->ctx, mode));
    cv_set(&at, "layout", ir_attr_str(cv->ctx, "NCHW"));
    cv_set(&at, "padding_mode", ir_attr_str(cv->ctx, pm));
    cv_set(&at, "align_corners", ir_attr_bool(cv_attr_int(cv, "align_corners", 0) != 0));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_GRID_SAMPLE, x, g, &at));
}

gr_status onnx_cv_max_unpool(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0), *ix = cv_in(cv, 1);
    if (!x || !ix) return cv_status(cv);
    int64_t in[4];
    if (cv_rank(cv, 0) != 4 || !cv_static_dims(cv, 0, in))
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "input must be 4-D (NCHW) with static dims");
    int64_t k[2], s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, os[2];
    if (cv_attr_ints(cv, "kernel_shape", k, 2) != 2) return cv_fail(cv, GR_ERR_INVALID, "kernel_shape must have 2 values");
    int ns = cv_attr_ints(cv, "strides", s, 2), np = cv_attr_ints(cv, "pads", p, 4);
    if ((ns >= 0 && ns != 2) || (np >= 0 && np != 4)) return cv_fail(cv, GR_ERR_INVALID, "strides / pads length");
    for (int i = 0; i < 2; i++) os[i] = (in[2 + i] - 1) * s[i] - (p[i] + p[i + 2]) + k[i];
    /* an output_shape larger than the default pads at the end: the indices keep referring to
     * the default (H, W) */
    int64_t dflt[2] = {os[0], os[1]};
    if (cv_has(cv, 2)) {
        int64_t want[4];
        if (cv_ints(cv, 2, want, 4) != 4) return cv_fail(cv, GR_ERR_UNSUPPORTED, "output_shape must be known at import");
        if (want[0] != in[0] || want[1] != in[1]) return cv_fail(cv, GR_ERR_INVALID, "output_shape changes N or C");
        os[0] = want[2], os[1] = want[3];
    }
    if (os[0] <= 0 || os[1] <= 0 || os[0] > ONNX_DIM_MAX || os[1] > ONNX_DIM_MAX)
        return cv_fail(cv, GR_ERR_INVALID, "output size out of range");
    cv_attrs at = {0};
    cv_set(&at, "output_size", ir_attr_ints(cv->ctx, 2, os));
    if (dflt[0] != os[0] || dflt[1] != os[1]) cv_set(&at, "index_size", ir_attr_ints(cv->ctx, 2, dflt));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_MAX_UNPOOL2D, x, ix, &at));
}

/* MaxPool with both outputs on 4-D input: R.nn.max_pool2d_with_indices (pads / strides /
 * dilations / ceil_mode as MaxPool; storage_order 1 gives column-major indices). */
gr_status onnx_cv_pool_indices(onnx_cv *cv, const int64_t *kernel, const int64_t *strides, const int64_t *pads,
                               const int64_t *dil) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    cv_attrs at = {0};
    cv_set(&at, "pool_size", ir_attr_ints(cv->ctx, 2, kernel));
    cv_set(&at, "strides", ir_attr_ints(cv->ctx, 2, strides));
    cv_set(&at, "dilation", ir_attr_ints(cv->ctx, 2, dil));
    cv_set(&at, "padding", ir_attr_ints(cv->ctx, 4, pads));
    cv_set(&at, "ceil_mode", ir_attr_bool(cv_attr_int(cv, "ceil_mode", 0) != 0));
    cv_set(&at, "storage_order", ir_attr_int(cv_attr_int(cv, "storage_order", 0)));
    ir_expr *r = cv_emit(cv, cv_call1(cv, IR_OP_MAX_POOL2D_INDICES, x, &at));
    if (!r) return cv_status(cv);
    for (uint32_t i = 0; i < 2 && i < cv->nout; i++) cv->out[i] = (ir_expr *)ir_tgi_new(cv->ctx, r, (int32_t)i, cv->span);
    return GR_OK;
}
