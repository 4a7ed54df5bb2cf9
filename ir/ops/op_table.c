/* The op table: TVM Relax op names, attribute schemas (TVM_ATTR_FIELD order, which is also the
 * printing order) with defaults in text form, and the inference function of each op. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ops/op_impl.h"

/* ---- attribute schemas (TVM's field order; defaults from TVM's Python wrappers) ---- */
#define F(name, kind, dflt) {name, IR_ATTR_##kind, dflt}

static const ir_attr_field A_conv1d[] = {
    F("strides", ARRAY, "[1]"), F("padding", ARRAY, "[0, 0]"), F("dilation", ARRAY, "[1]"),
    F("groups", INT, "1"), F("data_layout", STR, "\"NCW\""), F("kernel_layout", STR, "\"OIW\""),
    F("out_layout", STR, "\"NCW\""), F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_conv2d[] = {
    F("strides", ARRAY, "[1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0]"),
    F("dilation", ARRAY, "[1, 1]"), F("groups", INT, "1"), F("data_layout", STR, "\"NCHW\""),
    F("kernel_layout", STR, "\"OIHW\""), F("out_layout", STR, "\"NCHW\""),
    F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_conv2d_transpose[] = {
    F("strides", ARRAY, "[1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0]"),
    F("output_padding", ARRAY, "[0, 0]"), F("dilation", ARRAY, "[1, 1]"), F("groups", INT, "1"),
    F("data_layout", STR, "\"NCHW\""), F("kernel_layout", STR, "\"IOHW\""),
    F("out_layout", STR, "\"NCHW\""), F("out_dtype", DTYPE, "\"void\"")};
/* Pool2DAttrs declares dilation before padding, and TVM prints it that way. */
static const ir_attr_field A_pool2d[] = {
    F("pool_size", ARRAY, "[1, 1]"), F("strides", ARRAY, "[1, 1]"),
    F("dilation", ARRAY, "[1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0]"),
    F("ceil_mode", BOOL, "False"), F("count_include_pad", BOOL, "False"),
    F("layout", STR, "\"NCHW\""), F("out_layout", STR, "\"NCHW\"")};
static const ir_attr_field A_adaptive_pool2d[] = {
    F("output_size", ARRAY, "None"), F("layout", STR, "\"NCHW\""),
    F("out_layout", STR, "\"NCHW\"")};
static const ir_attr_field A_axis_m1[] = {F("axis", INT, "-1")};
static const ir_attr_field A_leakyrelu[] = {F("alpha", FLOAT, "0.01")};
static const ir_attr_field A_layer_norm[] = {
    F("axes", ARRAY, NULL), F("epsilon", FLOAT, "1e-05"), F("center", BOOL, "True"),
    F("scale", BOOL, "True")};
static const ir_attr_field A_batch_norm[] = {
    F("axis", INT, "1"), F("epsilon", FLOAT, "1e-05"), F("center", BOOL, "True"),
    F("scale", BOOL, "True"), F("momentum", FLOAT, "0.1")};
static const ir_attr_field A_dropout[] = {F("rate", FLOAT, "0.5")};
static const ir_attr_field A_pad[] = {
    F("pad_width", ARRAY, NULL), F("pad_value", FLOAT, "0.0"), F("pad_mode", STR, "\"constant\"")};
static const ir_attr_field A_out_dtype[] = {F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_dtype_req[] = {F("dtype", DTYPE, NULL)};
static const ir_attr_field A_dtype_f32[] = {F("dtype", DTYPE, "\"float32\"")};
static const ir_attr_field A_dtype_void[] = {F("dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_dtype_i64[] = {F("dtype", DTYPE, "\"int64\"")};
static const ir_attr_field A_reduce[] = {F("axis", ARRAY, "None"), F("keepdims", BOOL, "False")};
static const ir_attr_field A_cumsum[] = {
    F("axis", INT, "None"), F("dtype", DTYPE, "\"void\""), F("exclusive", BOOL, "False")};
static const ir_attr_field A_permute_dims[] = {F("axes", ARRAY, "None")};
static const ir_attr_field A_squeeze[] = {F("axis", ARRAY, "None")};
static const ir_attr_field A_expand_dims[] = {F("axis", ARRAY, NULL)};
static const ir_attr_field A_concat[] = {F("axis", INT, "0")};
/* indices_or_sections: an int (sections) or a list of split indices (see op_attrs.c). */
static const ir_attr_field A_split[] = {F("indices_or_sections", ARRAY, NULL), F("axis", INT, "0")};
static const ir_attr_field A_strided_slice[] = {F("assume_inbound", BOOL, "False")};
static const ir_attr_field A_take[] = {F("axis", INT, "None")};
static const ir_attr_field A_tile[] = {F("repeats", ARRAY, NULL)};
static const ir_attr_field A_resize2d[] = {
    F("roi", ARRAY, "[0.0, 0.0, 0.0, 0.0]"), F("layout", STR, "\"NCHW\""),
    F("method", STR, "\"linear\""), F("coordinate_transformation_mode", STR, "\"half_pixel\""),
    F("rounding_method", STR, "\"round\""), F("cubic_alpha", FLOAT, "-0.75"),
    F("cubic_exclude", INT, "0"), F("extrapolation_value", FLOAT, "0.0"),
    F("out_dtype", DTYPE, "\"void\""),
    /* ONNX coverage, not in TVM: the (h, w) scales that map output to input coordinates
     * (ONNX Resize with scales whose output size in * scale is fractional); None: out / in */
    F("scales", ARRAY, "None")};
static const ir_attr_field A_softplus[] = {F("beta", FLOAT, "1.0"), F("threshold", FLOAT, "20.0")};
static const ir_attr_field A_group_norm[] = {
    F("num_groups", INT, NULL), F("channel_axis", INT, NULL), F("axes", ARRAY, NULL),
    F("epsilon", FLOAT, "1e-05"), F("center", BOOL, "True"), F("scale", BOOL, "True")};
static const ir_attr_field A_instance_norm[] = {
    F("channel_axis", INT, "1"), F("axes", ARRAY, NULL), F("epsilon", FLOAT, "1e-05"),
    F("center", BOOL, "True"), F("scale", BOOL, "True")};
static const ir_attr_field A_rms_norm[] = {F("axes", ARRAY, "[-1]"), F("epsilon", FLOAT, "1e-05")};
static const ir_attr_field A_pool1d[] = {
    F("pool_size", ARRAY, "[1]"), F("strides", ARRAY, "[1]"), F("dilation", ARRAY, "[1]"),
    F("padding", ARRAY, "[0, 0]"), F("ceil_mode", BOOL, "False"),
    F("count_include_pad", BOOL, "False"), F("layout", STR, "\"NCW\""),
    F("out_layout", STR, "\"NCW\"")};
static const ir_attr_field A_adaptive_pool1d[] = {
    F("output_size", ARRAY, "None"), F("layout", STR, "\"NCW\""), F("out_layout", STR, "\"NCW\"")};
static const ir_attr_field A_conv1d_transpose[] = {
    F("strides", ARRAY, "[1]"), F("padding", ARRAY, "[0, 0]"), F("output_padding", ARRAY, "[0]"),
    F("dilation", ARRAY, "[1]"), F("groups", INT, "1"), F("data_layout", STR, "\"NCW\""),
    F("kernel_layout", STR, "\"IOW\""), F("out_layout", STR, "\"NCW\""),
    F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_argmax[] = {F("axis", INT, "None"), F("keepdims", BOOL, "False")};
static const ir_attr_field A_axis_req[] = {F("axis", INT, NULL)};
static const ir_attr_field A_axis_0[] = {F("axis", INT, "0")};
static const ir_attr_field A_gather_nd[] = {F("batch_dims", INT, "0")};
static const ir_attr_field A_scatter_elements[] = {
    F("axis", INT, "0"), F("reduction", STR, "\"update\"")};
static const ir_attr_field A_scatter_nd[] = {F("reduction", STR, "\"update\"")};
static const ir_attr_field A_one_hot[] = {F("depth", INT, NULL), F("axis", INT, "-1")};
static const ir_attr_field A_repeat[] = {F("repeats", INT, NULL), F("axis", INT, "None")};
static const ir_attr_field A_trilu[] = {F("k", INT, "0")};
/* ONNX coverage */
/* activations: ONNX's names, comma-separated, f, g[, h] per direction (None: the defaults) */
static const ir_attr_field A_rnn[] = {
    F("hidden_size", INT, NULL), F("direction", STR, "\"forward\""), F("layout", INT, "0"),
    F("clip", FLOAT, "0.0"), F("input_forget", BOOL, "False"),
    F("linear_before_reset", BOOL, "False"), F("activations", STR, "None"),
    F("activation_alpha", ARRAY, "None"), F("activation_beta", ARRAY, "None")};
static const ir_attr_field A_einsum[] = {F("subscripts", STR, NULL)};
static const ir_attr_field A_conv3d[] = {
    F("strides", ARRAY, "[1, 1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0, 0, 0]"),
    F("dilation", ARRAY, "[1, 1, 1]"), F("groups", INT, "1"), F("data_layout", STR, "\"NCDHW\""),
    F("kernel_layout", STR, "\"OIDHW\""), F("out_layout", STR, "\"NCDHW\""),
    F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_conv3d_transpose[] = {
    F("strides", ARRAY, "[1, 1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0, 0, 0]"),
    F("output_padding", ARRAY, "[0, 0, 0]"), F("dilation", ARRAY, "[1, 1, 1]"), F("groups", INT, "1"),
    F("data_layout", STR, "\"NCDHW\""), F("kernel_layout", STR, "\"IODHW\""),
    F("out_layout", STR, "\"NCDHW\""), F("out_dtype", DTYPE, "\"void\"")};
static const ir_attr_field A_pool3d[] = {
    F("pool_size", ARRAY, "[1, 1, 1]"), F("strides", ARRAY, "[1, 1, 1]"),
    F("dilation", ARRAY, "[1, 1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0, 0, 0]"),
    F("ceil_mode", BOOL, "False"), F("count_include_pad", BOOL, "False"),
    F("layout", STR, "\"NCDHW\""), F("out_layout", STR, "\"NCDHW\"")};
static const ir_attr_field A_nms[] = {F("center_point_box", INT, "0")};
static const ir_attr_field A_roi_align[] = {
    F("pooled_size", ARRAY, NULL), F("spatial_scale", FLOAT, "1.0"), F("sample_ratio", INT, "-1"),
    F("aligned", BOOL, "False"), F("layout", STR, "\"NCHW\""), F("mode", STR, "\"avg\"")};
static const ir_attr_field A_grid_sample[] = {
    F("method", STR, "\"bilinear\""), F("layout", STR, "\"NCHW\""), F("padding_mode", STR, "\"zeros\""),
    F("align_corners", BOOL, "True")};
static const ir_attr_field A_pool2d_indices[] = {
    F("pool_size", ARRAY, "[1, 1]"), F("strides", ARRAY, "[1, 1]"),
    F("dilation", ARRAY, "[1, 1]"), F("padding", ARRAY, "[0, 0, 0, 0]"),
    F("ceil_mode", BOOL, "False"), F("count_include_pad", BOOL, "False"),
    F("layout", STR, "\"NCHW\""), F("out_layout", STR, "\"NCHW\""), F("storage_order", INT, "0")};
/* index_size: the (H, W) the indices refer to (MaxPool's input), when other than output_size */
static const ir_attr_field A_max_unpool2d[] = {F("output_size", ARRAY, NULL), F("index_size", ARRAY, "None")};
static const ir_attr_field A_dft[] = {
    F("axis", INT, "1"), F("inverse", BOOL, "False"), F("onesided", BOOL, "False"), F("dft_length", INT, "0")};
static const ir_attr_field A_stft[] = {
    F("frame_step", INT, NULL), F("frame_length", INT, NULL), F("onesided", BOOL, "True")};
static const ir_attr_field A_reverse_sequence[] = {F("batch_axis", INT, "1"), F("time_axis", INT, "0")};
/* ONNX coverage */
static const ir_attr_field A_topk[] = {
    F("k", INT, "1"), F("axis", INT, "-1"), F("ret_type", STR, "\"both\""),
    F("largest", BOOL, "True"), F("dtype", DTYPE, "\"int32\"")};
static const ir_attr_field A_nll_loss[] = {
    F("reduction", STR, "\"mean\""), F("ignore_index", INT, "-100")};
static const ir_attr_field A_unique[] = {F("sorted", BOOL, "True"), F("axis", INT, "None")};

#undef F

/* ---- the table ---- */
#define NOATTRS NULL, 0
#define ATTRS(a) a, (uint16_t)(sizeof(a) / sizeof((a)[0]))
#define EW IR_OPF_ELEMWISE
#define BC (IR_OPF_ELEMWISE | IR_OPF_BROADCAST)

static const ir_op_def op_table[IR_OP_COUNT] = {
#define X(id, name, mn, mx, fl, at, inf) \
    [IR_OP_##id] = {"relax." name, "R." name, mn, mx, fl, at, inf, IR_OP_##id},
    IR_OPS(X)
#undef X
};

uint32_t ir_op_def_count(void) { return IR_OP_COUNT; }

const ir_op_def *ir_op_def_at(uint32_t i) { return i < IR_OP_COUNT ? &op_table[i] : NULL; }

/* Name lookup: a small hash index over the relax-relative names, built once on first use. */
enum { INDEX_CAP = 512 };
static uint16_t op_index[INDEX_CAP]; /* row + 1; 0 = empty */
static pthread_once_t op_index_once = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void build_index(void) {
    _Static_assert(IR_OP_COUNT < INDEX_CAP / 2, "op index too small");
    for (uint32_t r = 0; r < IR_OP_COUNT; r++) {
        const char *rel = op_table[r].name + 6; /* after "relax." */
        uint32_t i = name_hash(rel, strlen(rel)) & (INDEX_CAP - 1);
        while (op_index[i]) i = (i + 1) & (INDEX_CAP - 1);
        op_index[i] = (uint16_t)(r + 1);
    }
}

const ir_op_def *ir_op_def_find(const char *name) {
    if (!name) return NULL;
    pthread_once(&op_index_once, build_index);
    if (strncmp(name, "relax.", 6) == 0) name += 6;
    else if (strncmp(name, "R.", 2) == 0) name += 2;
    size_t n = strlen(name);
    for (uint32_t i = name_hash(name, n) & (INDEX_CAP - 1); op_index[i];
         i = (i + 1) & (INDEX_CAP - 1)) {
        const ir_op_def *d = &op_table[op_index[i] - 1];
        if (strcmp(d->name + 6, name) == 0) return d;
    }
    return NULL;
}

ir_op_id ir_op_id_find(const char *name) {
    const ir_op_def *d = ir_op_def_find(name);
    return d ? (ir_op_id)d->index : IR_OP_NONE;
}

ir_op_id ir_op_def_id(const ir_op_def *d) {
    return d && d->index < IR_OP_COUNT && d == &op_table[d->index] ? (ir_op_id)d->index : IR_OP_NONE;
}

ir_op_id ir_op_id_of(const ir_expr *e) {
    return ir_op_def_id(e && e->kind == IR_CALL ? ir__call_op((const ir_call *)e) : NULL);
}

bool ir_is_op_call(const ir_expr *e, const char *name) {
    if (!e || e->kind != IR_CALL) return false;
    const ir_op_def *d = ir__call_op((const ir_call *)e);
    if (!d || !name) return false;
    if (strncmp(name, "relax.", 6) == 0) return strcmp(d->name, name) == 0;
    if (strncmp(name, "R.", 2) == 0) return strcmp(d->text_name, name) == 0;
    return strcmp(d->name + 6, name) == 0;
}

const ir_op_def *ir__call_op(const ir_call *call) {
    if (!call || !call->callee || call->callee->kind != IR_OP) return NULL;
    return ((const ir_op *)call->callee)->def;
}

/* ---- diagnostics ---- */

const char *ir__sinfo_str(const ir_sinfo *s) {
    static _Thread_local char bufs[4][512];
    static _Thread_local unsigned next;
    char *b = bufs[next++ % 4];
    if (!s) snprintf(b, 512, "(no struct info)");
    else ir_sinfo_snprint(s, b, 512);
    return b;
}

const ir_sinfo *ir__op_err(const ir_call *call, gr_diag *diag, const char *fmt, ...) {
    const ir_op_def *d = ir__call_op(call);
    const char *op = d ? d->text_name : "call";
    const char *layer = call ? ir_span_layer(call->base.span) : NULL;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (layer) gr_fail(diag, GR_ERR_TYPE, layer, op, "%s: %s (layer '%s')", op, msg, layer);
    else gr_fail(diag, GR_ERR_TYPE, NULL, op, "%s: %s", op, msg);
    return NULL;
}

/* ---- inference entry ---- */

static bool attrs_normalized(const ir_op_def *d, const ir_attrs *a) {
    if (!a || a->n != d->nattrs) return false;
    for (uint16_t i = 0; i < d->nattrs; i++)
        if (strcmp(a->keys[i], d->attrs[i].name) != 0) return false;
    return true;
}

const ir_sinfo *ir_op_infer(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag) {
    const ir_op_def *d = ir__call_op(call);
    if (!d) {
        gr_diag_set(diag, GR_ERR_INVALID, "ir_op_infer: callee is not an op");
        return NULL;
    }
    if ((int)call->nargs < d->min_args || (d->max_args >= 0 && (int)call->nargs > d->max_args)) {
        if (d->min_args == d->max_args)
            return ir__op_err(call, diag, "expects %d argument%s, got %u", d->min_args,
                              d->min_args == 1 ? "" : "s", call->nargs);
        return ir__op_err(call, diag, "expects %d to %d arguments, got %u", d->min_args,
                          d->max_args, call->nargs);
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        if (!call->args[i]) return ir__op_err(call, diag, "argument %u is missing", i);
        const ir_sinfo *s = call->args[i]->sinfo;
        /* Call-like ops take a callee (a gvar or extern func) that may lack struct info. */
        if (!s && !((d->flags & IR_OPF_CALL_LIKE) && i == 0))
            return ir__op_err(call, diag, "argument %u has no struct info", i);
        if (s && s->kind == IR_SINFO_TENSOR && s->ndim > IR__MAX_DIMS)
            return ir__op_err(call, diag, "rank %d is above the supported %d", s->ndim,
                              IR__MAX_DIMS);
    }
    /* A call built without normalized attrs (every schema field present, in order) is
     * normalized on the fly, so inference always sees defaults. */
    if (d->nattrs && !attrs_normalized(d, call->attrs)) {
        const ir_attrs *norm = NULL;
        if (ir_op_attrs_normalize(ctx, d, call->attrs, &norm, diag) != GR_OK) {
            gr_diag_set_layer(diag, ir_span_layer(call->base.span));
            return NULL;
        }
        ir_call tmp = *call;
        tmp.attrs = norm;
        return d->infer(ctx, &tmp, diag);
    }
    return d->infer(ctx, call, diag);
}
