/* The op list: one row per op (an X-macro). It drives the op id enum (ir/op.h) and, in
 * ir/ops/op_table.c, the names, attribute schemas, inference and printing. The last columns name
 * ir/ops/op_table.c's schemas and ir/ops/op_impl.h's inference functions; other users expand only the
 * id and the name. */
#ifndef GRAFT_IR_OP_LIST_H
#define GRAFT_IR_OP_LIST_H

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
    /* ONNX coverage */                                                             \
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
    /* ONNX coverage */                                                             \
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

#endif
