/* The op table: TVM Relax op names, attribute schemas (TVM_ATTR_FIELD order, which is also the
 * printing order) with defaults in text form, and the inference function of each op. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/op_impl.h"

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
    /* ONNX coverage (ops1), not in TVM: the (h, w) scales that map output to input coordinates
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
/* ONNX coverage (ops2) */
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
/* ONNX coverage (ops1) */
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

/* X(id, name relative to relax, min args, max args, flags, attrs, infer) */
#define IR_OPS(X)                                                                           \
    X(ADD, "add", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                                \
    X(SUBTRACT, "subtract", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                      \
    X(MULTIPLY, "multiply", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                      \
    X(DIVIDE, "divide", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                          \
    X(POWER, "power", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                            \
    X(MAXIMUM, "maximum", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                        \
    X(MINIMUM, "minimum", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                        \
    X(FLOOR_DIVIDE, "floor_divide", 2, 2, BC, NOATTRS, ir__infer_binary_arith)              \
    X(EQUAL, "equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                              \
    X(NOT_EQUAL, "not_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                      \
    X(GREATER, "greater", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                          \
    X(GREATER_EQUAL, "greater_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)              \
    X(LESS, "less", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                                \
    X(LESS_EQUAL, "less_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                    \
    X(LOGICAL_AND, "logical_and", 2, 2, BC, NOATTRS, ir__infer_binary_logical)              \
    X(LOGICAL_OR, "logical_or", 2, 2, BC, NOATTRS, ir__infer_binary_logical)                \
    X(WHERE, "where", 3, 3, BC, NOATTRS, ir__infer_where)                                   \
    X(EXP, "exp", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(LOG, "log", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(SQRT, "sqrt", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(RSQRT, "rsqrt", 1, 1, EW, NOATTRS, ir__infer_unary_float)                             \
    X(ERF, "erf", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(TANH, "tanh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(SIGMOID, "sigmoid", 1, 1, EW, NOATTRS, ir__infer_unary_float)                         \
    X(SIN, "sin", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(COS, "cos", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(ACOS, "acos", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(ACOSH, "acosh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                             \
    X(ASIN, "asin", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(ASINH, "asinh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                             \
    X(ATAN, "atan", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(ATANH, "atanh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                             \
    X(COSH, "cosh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(SINH, "sinh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(TAN, "tan", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(TRUNC, "trunc", 1, 1, EW, NOATTRS, ir__infer_unary)                                   \
    X(BITWISE_NOT, "bitwise_not", 1, 1, EW, NOATTRS, ir__infer_unary)                       \
    X(ISFINITE, "isfinite", 1, 1, EW, NOATTRS, ir__infer_unary_bool)                        \
    X(ISINF, "isinf", 1, 1, EW, NOATTRS, ir__infer_unary_bool)                              \
    X(ISNAN, "isnan", 1, 1, EW, NOATTRS, ir__infer_unary_bool)                              \
    X(NEGATIVE, "negative", 1, 1, EW, NOATTRS, ir__infer_unary)                             \
    X(ABS, "abs", 1, 1, EW, NOATTRS, ir__infer_unary)                                       \
    X(SIGN, "sign", 1, 1, EW, NOATTRS, ir__infer_unary)                                     \
    X(FLOOR, "floor", 1, 1, EW, NOATTRS, ir__infer_unary)                                   \
    X(CEIL, "ceil", 1, 1, EW, NOATTRS, ir__infer_unary)                                     \
    X(ROUND, "round", 1, 1, EW, NOATTRS, ir__infer_unary)                                   \
    X(SQUARE, "square", 1, 1, EW, NOATTRS, ir__infer_unary)                                 \
    X(LOGICAL_NOT, "logical_not", 1, 1, EW, NOATTRS, ir__infer_unary_bool)                  \
    X(CLIP, "clip", 3, 3, EW, NOATTRS, ir__infer_clip)                                      \
    X(ASTYPE, "astype", 1, 1, EW, ATTRS(A_dtype_req), ir__infer_astype)                     \
    X(RELU, "nn.relu", 1, 1, EW, NOATTRS, ir__infer_unary)                                  \
    X(LEAKYRELU, "nn.leakyrelu", 1, 1, EW, ATTRS(A_leakyrelu), ir__infer_unary_float)       \
    X(GELU, "nn.gelu", 1, 1, EW, NOATTRS, ir__infer_unary_float)                            \
    X(GELU_TANH, "nn.gelu_tanh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                  \
    X(SILU, "nn.silu", 1, 1, EW, NOATTRS, ir__infer_unary_float)                            \
    X(RELU6, "nn.relu6", 1, 1, EW, NOATTRS, ir__infer_unary)                                \
    X(SELU, "nn.selu", 1, 1, EW, NOATTRS, ir__infer_unary_float)                            \
    X(SOFTPLUS, "nn.softplus", 1, 1, EW, ATTRS(A_softplus), ir__infer_unary_float)          \
    X(SOFTMAX, "nn.softmax", 1, 1, 0, ATTRS(A_axis_m1), ir__infer_softmax)                  \
    X(LOG_SOFTMAX, "nn.log_softmax", 1, 1, 0, ATTRS(A_axis_m1), ir__infer_softmax)          \
    X(CONV1D, "nn.conv1d", 2, 2, 0, ATTRS(A_conv1d), ir__infer_conv1d)                      \
    X(CONV2D, "nn.conv2d", 2, 2, 0, ATTRS(A_conv2d), ir__infer_conv2d)                      \
    X(CONV2D_TRANSPOSE, "nn.conv2d_transpose", 2, 2, 0, ATTRS(A_conv2d_transpose),          \
      ir__infer_conv2d_transpose)                                                           \
    X(CONV1D_TRANSPOSE, "nn.conv1d_transpose", 2, 2, 0, ATTRS(A_conv1d_transpose),          \
      ir__infer_conv1d_transpose)                                                           \
    X(MAX_POOL1D, "nn.max_pool1d", 1, 1, 0, ATTRS(A_pool1d), ir__infer_pool1d)              \
    X(AVG_POOL1D, "nn.avg_pool1d", 1, 1, 0, ATTRS(A_pool1d), ir__infer_pool1d)              \
    X(ADAPTIVE_AVG_POOL1D, "nn.adaptive_avg_pool1d", 1, 1, 0, ATTRS(A_adaptive_pool1d),     \
      ir__infer_adaptive_pool1d)                                                            \
    X(ADAPTIVE_MAX_POOL2D, "nn.adaptive_max_pool2d", 1, 1, 0, ATTRS(A_adaptive_pool2d),     \
      ir__infer_adaptive_pool2d)                                                            \
    X(MAX_POOL2D, "nn.max_pool2d", 1, 1, 0, ATTRS(A_pool2d), ir__infer_pool2d)              \
    X(AVG_POOL2D, "nn.avg_pool2d", 1, 1, 0, ATTRS(A_pool2d), ir__infer_pool2d)              \
    X(ADAPTIVE_AVG_POOL2D, "nn.adaptive_avg_pool2d", 1, 1, 0, ATTRS(A_adaptive_pool2d),     \
      ir__infer_adaptive_pool2d)                                                            \
    X(LAYER_NORM, "nn.layer_norm", 3, 3, 0, ATTRS(A_layer_norm), ir__infer_layer_norm)      \
    X(BATCH_NORM, "nn.batch_norm", 5, 5, 0, ATTRS(A_batch_norm), ir__infer_batch_norm)      \
    X(GROUP_NORM, "nn.group_norm", 3, 3, 0, ATTRS(A_group_norm), ir__infer_group_norm)      \
    X(INSTANCE_NORM, "nn.instance_norm", 3, 3, 0, ATTRS(A_instance_norm),                   \
      ir__infer_instance_norm)                                                              \
    X(RMS_NORM, "nn.rms_norm", 2, 2, 0, ATTRS(A_rms_norm), ir__infer_rms_norm)              \
    X(DROPOUT, "nn.dropout", 1, 1, 0, ATTRS(A_dropout), ir__infer_dropout)                  \
    X(PAD, "nn.pad", 1, 2, 0, ATTRS(A_pad), ir__infer_pad)                                  \
    X(MATMUL, "matmul", 2, 2, 0, ATTRS(A_out_dtype), ir__infer_matmul)                      \
    X(RESIZE2D, "image.resize2d", 2, 2, 0, ATTRS(A_resize2d), ir__infer_resize2d)           \
    X(MEAN, "mean", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                 \
    X(SUM, "sum", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                   \
    X(MAX, "max", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                   \
    X(MIN, "min", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                   \
    X(PROD, "prod", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                 \
    X(VARIANCE, "variance", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)         \
    X(STD, "std", 1, 1, IR_OPF_REDUCE, ATTRS(A_reduce), ir__infer_reduce)                   \
    X(ARGMAX, "argmax", 1, 1, 0, ATTRS(A_argmax), ir__infer_argmax)                         \
    X(ARGMIN, "argmin", 1, 1, 0, ATTRS(A_argmax), ir__infer_argmax)                         \
    X(CUMSUM, "cumsum", 1, 1, 0, ATTRS(A_cumsum), ir__infer_cumsum)                         \
    X(CUMPROD, "cumprod", 1, 1, 0, ATTRS(A_cumsum), ir__infer_cumsum)                       \
    X(RESHAPE, "reshape", 2, 2, 0, NOATTRS, ir__infer_reshape)                              \
    X(PERMUTE_DIMS, "permute_dims", 1, 1, 0, ATTRS(A_permute_dims), ir__infer_permute_dims) \
    X(FLATTEN, "flatten", 1, 1, 0, NOATTRS, ir__infer_flatten)                              \
    X(SQUEEZE, "squeeze", 1, 1, 0, ATTRS(A_squeeze), ir__infer_squeeze)                     \
    X(EXPAND_DIMS, "expand_dims", 1, 1, 0, ATTRS(A_expand_dims), ir__infer_expand_dims)     \
    X(CONCAT, "concat", 1, 1, 0, ATTRS(A_concat), ir__infer_concat)                         \
    X(SPLIT, "split", 1, 1, 0, ATTRS(A_split), ir__infer_split)                             \
    X(STRIDED_SLICE, "strided_slice", 4, 5, 0, ATTRS(A_strided_slice),                      \
      ir__infer_strided_slice)                                                              \
    X(TAKE, "take", 2, 2, 0, ATTRS(A_take), ir__infer_take)                                 \
    X(BROADCAST_TO, "broadcast_to", 2, 2, 0, NOATTRS, ir__infer_broadcast_to)               \
    X(TILE, "tile", 1, 1, 0, ATTRS(A_tile), ir__infer_tile)                                 \
    X(FLIP, "flip", 1, 1, 0, ATTRS(A_axis_req), ir__infer_flip)                             \
    X(GATHER_ELEMENTS, "gather_elements", 2, 2, 0, ATTRS(A_axis_0), ir__infer_gather_elements) \
    X(GATHER_ND, "gather_nd", 2, 2, 0, ATTRS(A_gather_nd), ir__infer_gather_nd)             \
    X(SCATTER_ELEMENTS, "scatter_elements", 3, 3, 0, ATTRS(A_scatter_elements),             \
      ir__infer_scatter_elements)                                                           \
    X(SCATTER_ND, "scatter_nd", 3, 3, 0, ATTRS(A_scatter_nd), ir__infer_scatter_nd)         \
    X(ONE_HOT, "one_hot", 3, 3, 0, ATTRS(A_one_hot), ir__infer_one_hot)                     \
    X(REPEAT, "repeat", 1, 1, 0, ATTRS(A_repeat), ir__infer_repeat)                         \
    X(TRIL, "tril", 1, 2, 0, ATTRS(A_trilu), ir__infer_trilu)                               \
    X(TRIU, "triu", 1, 2, 0, ATTRS(A_trilu), ir__infer_trilu)                               \
    X(ZEROS_LIKE, "zeros_like", 1, 1, IR_OPF_CREATION, ATTRS(A_dtype_void), ir__infer_like) \
    X(ONES_LIKE, "ones_like", 1, 1, IR_OPF_CREATION, ATTRS(A_dtype_void), ir__infer_like)   \
    X(FULL_LIKE, "full_like", 2, 2, IR_OPF_CREATION, ATTRS(A_dtype_void), ir__infer_like)   \
    X(SHAPE_TO_TENSOR, "shape_to_tensor", 1, 1, 0, NOATTRS, ir__infer_shape_to_tensor)      \
    X(TENSOR_TO_SHAPE, "tensor_to_shape", 1, 1, 0, NOATTRS, ir__infer_tensor_to_shape)      \
    X(ZEROS, "zeros", 1, 1, IR_OPF_CREATION, ATTRS(A_dtype_f32), ir__infer_zeros_ones)      \
    X(ONES, "ones", 1, 1, IR_OPF_CREATION, ATTRS(A_dtype_f32), ir__infer_zeros_ones)        \
    X(FULL, "full", 2, 2, IR_OPF_CREATION, ATTRS(A_dtype_void), ir__infer_full)             \
    X(ARANGE, "arange", 3, 3, IR_OPF_CREATION, ATTRS(A_dtype_i64), ir__infer_arange)        \
    X(SHAPE_OF, "shape_of", 1, 1, 0, NOATTRS, ir__infer_shape_of)                           \
    /* ONNX coverage (ops2) */                                                             \
    X(LSTM, "nn.lstm", 3, 8, 0, ATTRS(A_rnn), ir__infer_rnn)                                \
    X(GRU, "nn.gru", 3, 6, 0, ATTRS(A_rnn), ir__infer_rnn)                                  \
    X(RNN, "nn.rnn", 3, 6, 0, ATTRS(A_rnn), ir__infer_rnn)                                  \
    X(EINSUM, "einsum", 1, 1, 0, ATTRS(A_einsum), ir__infer_einsum)                         \
    X(REVERSE_SEQUENCE, "reverse_sequence", 2, 2, 0, ATTRS(A_reverse_sequence),             \
      ir__infer_reverse_sequence)                                                           \
    X(CONV3D, "nn.conv3d", 2, 2, 0, ATTRS(A_conv3d), ir__infer_conv3d)                      \
    X(CONV3D_TRANSPOSE, "nn.conv3d_transpose", 2, 2, 0, ATTRS(A_conv3d_transpose),          \
      ir__infer_conv3d_transpose)                                                           \
    X(MAX_POOL3D, "nn.max_pool3d", 1, 1, 0, ATTRS(A_pool3d), ir__infer_pool3d)              \
    X(AVG_POOL3D, "nn.avg_pool3d", 1, 1, 0, ATTRS(A_pool3d), ir__infer_pool3d)              \
    X(NMS, "vision.non_max_suppression", 2, 5, 0, ATTRS(A_nms), ir__infer_nms)              \
    X(ROI_ALIGN, "vision.roi_align", 2, 2, 0, ATTRS(A_roi_align), ir__infer_roi_align)      \
    X(GRID_SAMPLE, "image.grid_sample", 2, 2, 0, ATTRS(A_grid_sample), ir__infer_grid_sample) \
    X(MAX_POOL2D_INDICES, "nn.max_pool2d_with_indices", 1, 1, 0, ATTRS(A_pool2d_indices),   \
      ir__infer_pool2d_indices)                                                             \
    X(MAX_UNPOOL2D, "nn.max_unpool2d", 2, 2, 0, ATTRS(A_max_unpool2d), ir__infer_max_unpool2d) \
    X(DFT, "dft", 1, 1, 0, ATTRS(A_dft), ir__infer_dft)                                     \
    X(STFT, "stft", 1, 2, 0, ATTRS(A_stft), ir__infer_stft)                                 \
    /* ONNX coverage (ops1) */                                                             \
    X(MOD, "mod", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                                \
    X(FLOOR_MOD, "floor_mod", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                    \
    X(BITWISE_AND, "bitwise_and", 2, 2, BC, NOATTRS, ir__infer_binary_int)                  \
    X(BITWISE_OR, "bitwise_or", 2, 2, BC, NOATTRS, ir__infer_binary_int)                    \
    X(BITWISE_XOR, "bitwise_xor", 2, 2, BC, NOATTRS, ir__infer_binary_int)                  \
    X(LEFT_SHIFT, "left_shift", 2, 2, BC, NOATTRS, ir__infer_binary_int)                    \
    X(RIGHT_SHIFT, "right_shift", 2, 2, BC, NOATTRS, ir__infer_binary_int)                  \
    X(LOGICAL_XOR, "logical_xor", 2, 2, BC, NOATTRS, ir__infer_binary_logical)              \
    X(TOPK, "topk", 1, 1, 0, ATTRS(A_topk), ir__infer_topk)                                 \
    X(NONZERO, "nonzero", 1, 1, 0, NOATTRS, ir__infer_nonzero)                              \
    X(UNIQUE, "unique", 1, 1, 0, ATTRS(A_unique), ir__infer_unique)                         \
    X(NLL_LOSS, "nn.nll_loss", 2, 3, 0, ATTRS(A_nll_loss), ir__infer_nll_loss)              \
    X(DET, "linalg.det", 1, 1, 0, NOATTRS, ir__infer_det)                                   \
    X(CALL_DPS_PACKED, "call_dps_packed", 1, 2, IR_OPF_CALL_LIKE, NOATTRS,                  \
      ir__infer_call_like)                                                                  \
    X(CALL_TIR, "call_tir", 1, 3, IR_OPF_CALL_LIKE, NOATTRS, ir__infer_call_like)

enum {
#define X(id, name, mn, mx, fl, at, inf) OP_##id,
    IR_OPS(X)
#undef X
    OP_COUNT
};

static const ir_op_def op_table[OP_COUNT] = {
#define X(id, name, mn, mx, fl, at, inf) \
    [OP_##id] = {"relax." name, "R." name, mn, mx, fl, at, inf, OP_##id},
    IR_OPS(X)
#undef X
};

uint32_t ir_op_def_count(void) { return OP_COUNT; }

const ir_op_def *ir_op_def_at(uint32_t i) { return i < OP_COUNT ? &op_table[i] : NULL; }

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
    _Static_assert(OP_COUNT < INDEX_CAP / 2, "op index too small");
    for (uint32_t r = 0; r < OP_COUNT; r++) {
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
