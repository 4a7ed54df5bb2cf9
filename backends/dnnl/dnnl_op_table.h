/* The oneDNN backend's ops: one row per op, read by both sides of the backend. The codegen
 * (backends/dnnl) takes the ops a region may hold and the check each must pass; the engine
 * (backends/dnnl/dnnl_*.c) takes the handler that builds an op's primitive and, for eltwise, binary
 * and reduction ops, the oneDNN algorithm. Each side expands only its own columns; a row names
 * IR_OP_<op>, so a misspelt op is a compile error.
 *
 * Row order is the single-op patterns' priority (compute ops first) and `graft backends`' order.
 *
 * X(op, kind, check, handler, algorithm, alpha, beta)
 *   kind       DN_K_ANCHOR  convolution / matmul: post-ops come from fused composites only
 *              DN_K_PRIM    a primitive of its own (pool, softmax, concat, reshape, ...)
 *              DN_K_ELT     unary eltwise: algorithm, alpha, beta (leakyrelu's alpha comes from
 *                           its attrs, clip's bounds from its args)
 *              DN_K_BIN     binary: algorithm (undef: only as an eltwise with a scalar operand)
 *              DN_K_RED     reduction: algorithm
 *              DN_K_OWN     checked by its own check alone (dnnl_rnn/vol_patterns.c, where's
 *                           chk_where), without the common float32 checks of single ops
 *   check      the codegen's check (backends/dnnl/dnnl_patterns.c, chk_*)
 *   handler    the engine's builder (backends/dnnl/dnnl_op_*.c, dn_op_*)
 *   algorithm  dnnl_alg_kind_t, with its alpha and beta */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_OP_TABLE_H
#define GRAFT_BACKENDS_DNNL_DNNL_OP_TABLE_H

enum { DN_K_ANCHOR, DN_K_PRIM, DN_K_ELT, DN_K_BIN, DN_K_RED, DN_K_OWN };

#define DNNL_OPS(X)                                                                                  \
    X(CONV2D, DN_K_ANCHOR, chk_conv2d, dn_op_conv2d, dnnl_alg_kind_undef, 0.f, 0.f)                     \
    X(CONV1D, DN_K_ANCHOR, chk_conv1d, dn_op_conv1d, dnnl_alg_kind_undef, 0.f, 0.f)                     \
    X(CONV2D_TRANSPOSE, DN_K_ANCHOR, chk_deconv2d, dn_op_deconv2d, dnnl_alg_kind_undef, 0.f, 0.f)       \
    X(CONV1D_TRANSPOSE, DN_K_ANCHOR, chk_deconv1d, dn_op_deconv1d, dnnl_alg_kind_undef, 0.f, 0.f)       \
    X(MATMUL, DN_K_ANCHOR, chk_matmul, dn_op_matmul, dnnl_alg_kind_undef, 0.f, 0.f)                     \
    X(MAX_POOL2D, DN_K_PRIM, chk_pool, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(AVG_POOL2D, DN_K_PRIM, chk_pool, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(MAX_POOL1D, DN_K_PRIM, chk_pool, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(AVG_POOL1D, DN_K_PRIM, chk_pool, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(ADAPTIVE_AVG_POOL2D, DN_K_PRIM, chk_adaptive, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)          \
    X(ADAPTIVE_MAX_POOL2D, DN_K_PRIM, chk_adaptive, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)          \
    X(ADAPTIVE_AVG_POOL1D, DN_K_PRIM, chk_adaptive, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)          \
    X(SOFTMAX, DN_K_PRIM, chk_none, dn_op_softmax, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(LOG_SOFTMAX, DN_K_PRIM, chk_none, dn_op_softmax, dnnl_alg_kind_undef, 0.f, 0.f)                   \
    X(LAYER_NORM, DN_K_PRIM, chk_layer_norm, dn_op_layer_norm, dnnl_alg_kind_undef, 0.f, 0.f)           \
    X(BATCH_NORM, DN_K_PRIM, chk_batch_norm, dn_op_batch_norm, dnnl_alg_kind_undef, 0.f, 0.f)           \
    X(ADD, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_add, 0.f, 0.f)                             \
    X(SUBTRACT, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_sub, 0.f, 0.f)                        \
    X(MULTIPLY, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_mul, 0.f, 0.f)                        \
    X(DIVIDE, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_div, 0.f, 0.f)                          \
    X(MAXIMUM, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_max, 0.f, 0.f)                         \
    X(MINIMUM, DN_K_BIN, chk_binary, dn_op_elemwise, dnnl_binary_min, 0.f, 0.f)                         \
    X(POWER, DN_K_BIN, chk_power, dn_op_elemwise, dnnl_alg_kind_undef, 0.f, 0.f)                        \
    X(RELU, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_relu, 0.f, 0.f)                            \
    X(LEAKYRELU, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_relu, 0.f, 0.f)                       \
    X(RELU6, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_clip_v2, 0.f, 6.f)                        \
    X(CLIP, DN_K_ELT, chk_clip, dn_op_elemwise, dnnl_eltwise_clip_v2, 0.f, 0.f)                         \
    X(SIGMOID, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_logistic, 0.f, 0.f)                     \
    X(TANH, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_tanh, 0.f, 0.f)                            \
    X(EXP, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_exp, 0.f, 0.f)                              \
    X(LOG, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_log, 0.f, 0.f)                              \
    X(SQRT, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_sqrt, 0.f, 0.f)                            \
    X(RSQRT, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_pow, 1.f, -0.5f)                          \
    X(ABS, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_abs, 0.f, 0.f)                              \
    X(SQUARE, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_square, 0.f, 0.f)                        \
    X(NEGATIVE, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_linear, -1.f, 0.f)                     \
    X(GELU, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_gelu_erf, 0.f, 0.f)                        \
    X(GELU_TANH, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_gelu_tanh, 0.f, 0.f)                  \
    X(SILU, DN_K_ELT, chk_none, dn_op_elemwise, dnnl_eltwise_swish, 1.f, 0.f)                           \
    X(CONCAT, DN_K_PRIM, chk_concat, dn_op_concat, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(RESIZE2D, DN_K_PRIM, chk_resize, dn_op_resize, dnnl_alg_kind_undef, 0.f, 0.f)                     \
    X(MEAN, DN_K_RED, chk_none, dn_op_reduce, dnnl_reduction_mean, 0.f, 0.f)                            \
    X(SUM, DN_K_RED, chk_none, dn_op_reduce, dnnl_reduction_sum, 0.f, 0.f)                              \
    X(MAX, DN_K_RED, chk_none, dn_op_reduce, dnnl_reduction_max, 0.f, 0.f)                              \
    X(MIN, DN_K_RED, chk_none, dn_op_reduce, dnnl_reduction_min, 0.f, 0.f)                              \
    X(PROD, DN_K_RED, chk_none, dn_op_reduce, dnnl_reduction_mul, 0.f, 0.f)                             \
    X(RESHAPE, DN_K_PRIM, chk_none, dn_op_reshape, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(FLATTEN, DN_K_PRIM, chk_none, dn_op_reshape, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(SQUEEZE, DN_K_PRIM, chk_none, dn_op_reshape, dnnl_alg_kind_undef, 0.f, 0.f)                       \
    X(EXPAND_DIMS, DN_K_PRIM, chk_none, dn_op_reshape, dnnl_alg_kind_undef, 0.f, 0.f)                   \
    X(PERMUTE_DIMS, DN_K_PRIM, chk_none, dn_op_permute, dnnl_alg_kind_undef, 0.f, 0.f)                  \
    X(STRIDED_SLICE, DN_K_PRIM, chk_strided_slice, dn_op_strided_slice, dnnl_alg_kind_undef, 0.f, 0.f)  \
    X(SPLIT, DN_K_PRIM, chk_none, dn_op_split, dnnl_alg_kind_undef, 0.f, 0.f)                           \
    /* where with a constant condition (its condition is no float32 tensor: checked alone) */      \
    X(WHERE, DN_K_OWN, chk_where, dn_op_where, dnnl_alg_kind_undef, 0.f, 0.f)                         \
    /* recurrent layers (dnnl_rnn.c, backends/dnnl/dnnl_rnn_patterns.c) */                            \
    X(LSTM, DN_K_OWN, dnnl_rnn_check, op_rnn, dnnl_alg_kind_undef, 0.f, 0.f)                         \
    X(GRU, DN_K_OWN, dnnl_rnn_check, op_rnn, dnnl_alg_kind_undef, 0.f, 0.f)                          \
    X(RNN, DN_K_OWN, dnnl_rnn_check, op_rnn, dnnl_alg_kind_undef, 0.f, 0.f)                          \
    /* volumetric ops (dnnl_op_conv.c, dnnl_op_elem.c; backends/dnnl/dnnl_vol_patterns.c) */         \
    X(CONV3D, DN_K_OWN, dnnl_vol_check, dn_op_conv3d, dnnl_alg_kind_undef, 0.f, 0.f)                 \
    X(CONV3D_TRANSPOSE, DN_K_OWN, dnnl_vol_check, dn_op_conv3d, dnnl_alg_kind_undef, 0.f, 0.f)       \
    X(MAX_POOL3D, DN_K_OWN, dnnl_vol_check, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)               \
    X(AVG_POOL3D, DN_K_OWN, dnnl_vol_check, dn_op_pool, dnnl_alg_kind_undef, 0.f, 0.f)

#endif
