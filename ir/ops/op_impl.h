/* Internal helpers shared by the op table (ir/ops/op_table.c), attribute normalization
 * (ir/ops/op_attrs.c) and the inference functions (ir/ops/op_infer_*.c). ir/ only. */
#ifndef GRAFT_IR_OPS_OP_IMPL_H
#define GRAFT_IR_OPS_OP_IMPL_H

#include "ir/op.h"

/* The op of a call (NULL when the callee is not an op). */
const ir_op_def *ir__call_op(const ir_call *call);

/* Reports a struct info error for `call`: "<R.op>: <msg> (layer '<source>')", sets the diag's
 * layer and op, and returns NULL so inference functions write `return ir__op_err(...)`. */
const ir_sinfo *ir__op_err(const ir_call *call, gr_diag *diag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Text of a struct info for messages (a rotating set of static buffers, valid for a few calls). */
const char *ir__sinfo_str(const ir_sinfo *s);

/* Tensor struct info of arg i (TENSOR sinfo), or NULL after reporting "expects a tensor". A
 * PRIM-typed arg is accepted as a 0-d tensor of its dtype when allow_prim is set. */
const ir_sinfo *ir__arg_tensor(ir_ctx_t *ctx, const ir_call *call, uint32_t i, bool allow_prim,
                               gr_diag *diag);

/* Attribute access on a normalized call (fields always present). */
const ir_attr *ir__attr(const ir_call *call, const char *key);
int64_t ir__attr_int(const ir_call *call, const char *key, int64_t dflt);
bool ir__attr_bool(const ir_call *call, const char *key);
const char *ir__attr_str(const ir_call *call, const char *key); /* NULL when None */
ir_dtype ir__attr_dtype(const ir_call *call, const char *key);  /* VOID when None/void */
/* Ints of an array attr; returns the count, -1 when None/absent, -2 when an item is not a
 * constant int (symbolic). */
int ir__attr_ints(const ir_call *call, const char *key, int64_t *out, int max);

/* Normalizes an axis into [0, ndim) (negative counts from the end); false when out of range. */
bool ir__norm_axis(int64_t axis, int32_t ndim, int32_t *out);

/* numpy broadcasting of two tensor shapes. Returns 1 with the result dims in out (ndim in
 * *ondim), 0 when the dims cannot be proven equal (symbolic: result rank only), -1 on a static
 * mismatch. */
int ir__broadcast(ir_ctx_t *ctx, const ir_sinfo *a, const ir_sinfo *b, const ir_prim **out,
                  int32_t *ondim);

/* The dims of a shape argument (an R.shape([...]) literal or an expr with Shape struct info).
 * Returns false after reporting when arg i is not a shape; *ndim -1 / dims unset when unknown.
 * dims must hold IR__MAX_DIMS entries. */
#define IR__MAX_DIMS 64
bool ir__shape_arg(const ir_call *call, uint32_t i, int32_t *ndim, const ir_prim **dims,
                   bool *known, gr_diag *diag);
/* The int value of a prim-value argument (R.prim_value(3)); false when not a known int. */
bool ir__prim_arg(const ir_expr *e, const ir_prim **value);
/* Data type of two operands of an arithmetic op: equal dtypes or unknown; else reports. */
bool ir__common_dtype(const ir_call *call, const ir_sinfo *a, const ir_sinfo *b, ir_dtype *out,
                      gr_diag *diag);

/* ---- inference functions (one per op family) ---- */
#define IR__INFER(name) const ir_sinfo *name(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag)
/* op_infer_elemwise.c */
IR__INFER(ir__infer_unary);
IR__INFER(ir__infer_unary_float);
IR__INFER(ir__infer_unary_bool);
IR__INFER(ir__infer_binary_arith);
IR__INFER(ir__infer_binary_cmp);
IR__INFER(ir__infer_binary_logical);
IR__INFER(ir__infer_where);
IR__INFER(ir__infer_clip);
IR__INFER(ir__infer_astype);
IR__INFER(ir__infer_call_like);
IR__INFER(ir__infer_shape_of);
/* op_infer_nn.c */
IR__INFER(ir__infer_softmax);
IR__INFER(ir__infer_conv1d);
IR__INFER(ir__infer_conv2d);
IR__INFER(ir__infer_conv2d_transpose);
IR__INFER(ir__infer_pool2d);
IR__INFER(ir__infer_adaptive_pool2d);
IR__INFER(ir__infer_layer_norm);
IR__INFER(ir__infer_batch_norm);
IR__INFER(ir__infer_dropout);
IR__INFER(ir__infer_pad);
IR__INFER(ir__infer_matmul);
IR__INFER(ir__infer_resize2d);
IR__INFER(ir__infer_conv1d_transpose);
IR__INFER(ir__infer_pool1d);
IR__INFER(ir__infer_adaptive_pool1d);
IR__INFER(ir__infer_group_norm);
IR__INFER(ir__infer_instance_norm);
IR__INFER(ir__infer_rms_norm);
/* op_infer_manip.c */
IR__INFER(ir__infer_reshape);
IR__INFER(ir__infer_permute_dims);
IR__INFER(ir__infer_flatten);
IR__INFER(ir__infer_squeeze);
IR__INFER(ir__infer_expand_dims);
IR__INFER(ir__infer_concat);
IR__INFER(ir__infer_split);
IR__INFER(ir__infer_strided_slice);
IR__INFER(ir__infer_take);
IR__INFER(ir__infer_broadcast_to);
IR__INFER(ir__infer_full);
IR__INFER(ir__infer_zeros_ones);
IR__INFER(ir__infer_tile);
IR__INFER(ir__infer_arange);
IR__INFER(ir__infer_flip);
IR__INFER(ir__infer_gather_elements);
IR__INFER(ir__infer_gather_nd);
IR__INFER(ir__infer_scatter_elements);
IR__INFER(ir__infer_scatter_nd);
IR__INFER(ir__infer_one_hot);
IR__INFER(ir__infer_repeat);
IR__INFER(ir__infer_trilu);
IR__INFER(ir__infer_like);
IR__INFER(ir__infer_shape_to_tensor);
IR__INFER(ir__infer_tensor_to_shape);
/* op_infer_reduce.c */
IR__INFER(ir__infer_reduce);
IR__INFER(ir__infer_cumsum);
IR__INFER(ir__infer_argmax);
/* ONNX coverage */
IR__INFER(ir__infer_rnn);          /* op_infer_rnn.c */
IR__INFER(ir__infer_einsum);       /* op_infer_einsum.c */
IR__INFER(ir__infer_reverse_sequence);
IR__INFER(ir__infer_conv3d);       /* op_infer_nn.c */
IR__INFER(ir__infer_conv3d_transpose);
IR__INFER(ir__infer_pool3d);
IR__INFER(ir__infer_nms);          /* op_infer_vision.c */
IR__INFER(ir__infer_roi_align);
IR__INFER(ir__infer_grid_sample);
IR__INFER(ir__infer_pool2d_indices);
IR__INFER(ir__infer_max_unpool2d);
IR__INFER(ir__infer_dft);
IR__INFER(ir__infer_stft);
/* op_infer_index.c (ONNX coverage) */
IR__INFER(ir__infer_binary_int);
IR__INFER(ir__infer_topk);
IR__INFER(ir__infer_nonzero);
IR__INFER(ir__infer_unique);
IR__INFER(ir__infer_nll_loss);
IR__INFER(ir__infer_det);

#endif
