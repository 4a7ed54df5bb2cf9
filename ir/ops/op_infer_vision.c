/* Struct info of the detection, sampling and spectral ops: vision.non_max_suppression,
 * vision.roi_align, image.grid_sample, nn.max_pool2d_with_indices, nn.max_unpool2d, dft, stft. */
#include <string.h>

#include "ir/ops/op_impl.h"

static const ir_prim *pi(ir_ctx_t *ctx, int64_t v) { return ir_prim_int(ctx, v); }

static bool rank_is(const ir_call *call, const ir_sinfo *s, int32_t want, const char *what, gr_diag *diag) {
    if (s->ndim >= 0 && s->ndim != want) {
        ir__op_err(call, diag, "%s must be %d-D, got %s", what, want, ir__sinfo_str(s));
        return false;
    }
    return true;
}

/* boxes (N, B, 4), scores (N, C, B) [, max_output_boxes_per_class, iou_threshold, score_threshold]
 * -> selected (K, 3) int64 (batch, class, box), K known only at run time */
IR__INFER(ir__infer_nms) {
    for (uint32_t i = 0; i < call->nargs; i++)
        if (!ir__arg_tensor(ctx, call, i, false, diag)) return NULL;
    const ir_sinfo *b = call->args[0]->sinfo, *s = call->args[1]->sinfo;
    if (!rank_is(call, b, 3, "boxes", diag) || !rank_is(call, s, 3, "scores", diag)) return NULL;
    return ir_sinfo_tensor(ctx, IR_DTYPE_I64, 2, NULL);
}

/* data (N, C, H, W), rois (R, 5: batch index, x1, y1, x2, y2) -> (R, C, ph, pw) */
IR__INFER(ir__infer_roi_align) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *r = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!r || !rank_is(call, x, 4, "data", diag) || !rank_is(call, r, 2, "rois", diag)) return NULL;
    int64_t ps[2];
    if (ir__attr_ints(call, "pooled_size", ps, 2) != 2 || ps[0] <= 0 || ps[1] <= 0)
        return ir__op_err(call, diag, "pooled_size must be two positive ints");
    if (!x->dims || !r->dims) return ir_sinfo_tensor(ctx, x->dtype, 4, NULL);
    const ir_prim *d[4] = {r->dims[0], x->dims[1], pi(ctx, ps[0]), pi(ctx, ps[1])};
    return ir_sinfo_tensor(ctx, x->dtype, 4, d);
}

/* data (N, C, H, W), grid (N, Ho, Wo, 2) -> (N, C, Ho, Wo) */
IR__INFER(ir__infer_grid_sample) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *g = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!g || !rank_is(call, x, 4, "data", diag) || !rank_is(call, g, 4, "grid", diag)) return NULL;
    const char *lay = ir__attr_str(call, "layout");
    if (lay && strcmp(lay, "NCHW")) return ir__op_err(call, diag, "layout %s (only NCHW)", lay);
    if (!x->dims || !g->dims) return ir_sinfo_tensor(ctx, x->dtype, 4, NULL);
    const ir_prim *d[4] = {x->dims[0], x->dims[1], g->dims[1], g->dims[2]};
    return ir_sinfo_tensor(ctx, x->dtype, 4, d);
}

/* max pooling with the argmax: the pool2d struct info and the same shape in int64 */
IR__INFER(ir__infer_pool2d_indices) {
    const ir_sinfo *y = ir__infer_pool2d(ctx, call, diag);
    if (!y) return NULL;
    const ir_sinfo *f[2] = {y, ir_sinfo_tensor(ctx, IR_DTYPE_I64, y->ndim, y->dims)};
    return ir_sinfo_tuple(ctx, 2, f);
}

/* x (N, C, h, w), indices like x -> (N, C, output_size...) */
IR__INFER(ir__infer_max_unpool2d) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *ix = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!ix || !rank_is(call, x, 4, "data", diag)) return NULL;
    if (!ir_dtype_is_void(ix->dtype) && !ir_dtype_is_int(ix->dtype))
        return ir__op_err(call, diag, "indices must be integers, got %s", ir__sinfo_str(ix));
    int64_t os[2];
    if (ir__attr_ints(call, "output_size", os, 2) != 2 || os[0] <= 0 || os[1] <= 0)
        return ir__op_err(call, diag, "output_size must be two positive ints");
    if (!x->dims) return ir_sinfo_tensor(ctx, x->dtype, 4, NULL);
    const ir_prim *d[4] = {x->dims[0], x->dims[1], pi(ctx, os[0]), pi(ctx, os[1])};
    return ir_sinfo_tensor(ctx, x->dtype, 4, d);
}

/* x (..., n, 1 | 2) along `axis` -> (..., m, 2): m = dft_length (or n), halved + 1 when onesided */
IR__INFER(ir__infer_dft) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (!ir_dtype_is_void(x->dtype) && !ir_dtype_is_float(x->dtype))
        return ir__op_err(call, diag, "input must be float, got %s", ir__sinfo_str(x));
    if (x->ndim < 0 || !x->dims) return ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
    if (x->ndim < 2) return ir__op_err(call, diag, "input must have rank >= 2, got %s", ir__sinfo_str(x));
    int64_t last;
    if (ir_prim_is_int(x->dims[x->ndim - 1], &last) && last != 1 && last != 2)
        return ir__op_err(call, diag, "the last dim must be 1 (real) or 2 (complex), got %s", ir__sinfo_str(x));
    int32_t a;
    if (!ir__norm_axis(ir__attr_int(call, "axis", 1), x->ndim - 1, &a))
        return ir__op_err(call, diag, "axis out of range for %s", ir__sinfo_str(x));
    int64_t len = ir__attr_int(call, "dft_length", 0);
    const ir_prim *d[IR__MAX_DIMS];
    memcpy(d, x->dims, sizeof(*d) * (size_t)x->ndim);
    const ir_prim *n = len > 0 ? pi(ctx, len) : x->dims[a];
    if (ir__attr_bool(call, "onesided")) n = ir_prim_add(ctx, ir_prim_floordiv(ctx, n, pi(ctx, 2)), pi(ctx, 1));
    d[a] = n;
    d[x->ndim - 1] = pi(ctx, 2);
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim, d);
}

/* signal (N, L, 1 | 2) [, window (frame_length)] -> (N, frames, bins, 2) */
IR__INFER(ir__infer_stft) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    for (uint32_t i = 1; i < call->nargs; i++)
        if (!ir__arg_tensor(ctx, call, i, false, diag)) return NULL;
    if (!rank_is(call, x, 3, "signal", diag)) return NULL;
    int64_t step = ir__attr_int(call, "frame_step", 0), fl = ir__attr_int(call, "frame_length", 0);
    if (step <= 0 || fl <= 0) return ir__op_err(call, diag, "frame_step and frame_length must be positive");
    if (!x->dims) return ir_sinfo_tensor(ctx, x->dtype, 4, NULL);
    const ir_prim *frames =
        ir_prim_add(ctx, ir_prim_floordiv(ctx, ir_prim_sub(ctx, x->dims[1], pi(ctx, fl)), pi(ctx, step)), pi(ctx, 1));
    int64_t bins = ir__attr_bool(call, "onesided") ? fl / 2 + 1 : fl;
    const ir_prim *d[4] = {x->dims[0], frames, pi(ctx, bins), pi(ctx, 2)};
    return ir_sinfo_tensor(ctx, x->dtype, 4, d);
}
