/* Internal to the oneDNN engine's op handlers (dnnl_op_*.c, and dnnl_ops.c, the table that
 * dispatches a node to its handler by op id): the helpers they share -- primitive creation with
 * post-op fusion, bias and affine folding, layout letters -- and the handlers the table lists. */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_OPS_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_OPS_IMPL_H

#include "backends/dnnl/dnnl_impl.h"
#include "backends/dnnl/dnnl_op_table.h"

/* the op descriptor of a single-source primitive for a src / dst pair */
typedef dnnl_status_t (*src_desc_fn)(void *desc, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                     const void *ctx);

int dn_chain_out(dn_state *S, const rt_json_node *n, const dn_step *steps, int k);
gr_status dn_need_val(dn_state *S, const rt_json_node *n, int e, int *v);
dnnl_status_t dn_try_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                            const dn_step *steps, int nsteps, int kmin, bool need_jit, dnnl_primitive_desc_t *pd,
                            int *kused, dn_arg *args, int *nargs, gr_status *err);
gr_status dn_fuse_create_min(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                             const dn_step *steps, int nsteps, int kmin, dnnl_primitive_desc_t *pd, int *kused,
                             dn_arg *args, int *nargs);
gr_status dn_fuse_create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, int nd,
                         const dn_step *steps, int nsteps, dnnl_primitive_desc_t *pd, int *kused, dn_arg *args,
                         int *nargs);
gr_status dn_finish(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, dn_arg *args, int nargs,
                    const dn_step *steps, int k, const dnnl_memory_desc_t *dst_override);
int dn_chain_of(dn_state *S, const rt_json_node *n, const dn_comp *comp, dn_step *steps, bool fuse, int nd,
                const int64_t *dims, dnnl_memory_desc_t *dst);
bool dn_take_bias(dn_state *S, dn_step *steps, int *k, int axis, int nd, int64_t C, int *bias_val);
void dn_take_affine(dn_state *S, dn_step *steps, int *k, int64_t O, bool wconst, int *wv, int *bias_val,
                    bool deconv, int64_t ig, int64_t og, int64_t K, int axis);
bool dn_layout_view(const char *lay, const char *canon, const int64_t *shape, int64_t *dims, int64_t *str);
bool dn_permute_perm(const rt_json_node *p, int nd, int *perm);
bool dn_wants_channels_last(dn_state *S, int e);
bool dn_strided(const dnnl_memory_desc_t *md);
bool dn_cl_order(const dnnl_memory_desc_t *md);
gr_status dn_layout_in(dn_state *S, const rt_json_node *n, int *xv, int nd, const dnnl_dims_t dims, const dnnl_dims_t str);
gr_status dn_layout_out(dn_state *S, const rt_json_node *n, int e, const dnnl_memory_desc_t *want);
bool dn_avx2_kernels_ok(void);
/* The output tile of graft's Winograd for float32 convolution node n, 0: not taken
 * (dnnl_op_conv.c). */
int dn_conv_wino_tile(dn_state *S, const rt_json_node *n);
/* ---- bf16 (dnnl.h "bf16"; dnnl_op_util.c) ----
 * Node n computes in bfloat16: a convolution or matmul with constant weights, as dnnl.h says. */
bool dn_bf16_node(dn_state *S, const rt_json_node *n);
/* Entry e may be held in bfloat16: no region output nor concat slot, and every reader is a
 * dn_bf16_node reading it as its source only. */
bool dn_bf16_entry(dn_state *S, int e);
/* Entry e's value converted to float32 (same layout) when it is bfloat16 but may not be (its
 * primitive did not take every post-op: the rest run as their own float32 primitives). */
gr_status dn_bf16_settle(dn_state *S, const rt_json_node *n, int e);
bool dn_eltwise_vop(const dn_step *st, dn_vop *op);
/* dnnl_affine.c: below avx512_core, a per-channel multiply and / or add (first, then steps[0])
 * of a value xv in the 8-channel blocked layout, and the eltwise steps after it, as graft's own
 * kernel: emitted, the steps consumed and *done set; else nothing (oneDNN's binary then). */
gr_status dn_own_affine(dn_state *S, const rt_json_node *n, const dn_step *first, int xv, const dn_step *steps, int k,
                        bool *done);
gr_status dn_op_conv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_conv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_deconv1d(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_deconv2d(dn_state *S, const rt_json_node *n, const dn_comp *comp);
/* Window attribute `key` of sd spatial axes into v (defaults kept): one value for every axis,
 * or one each. */
void dn_attr_axes(const rt_json_node *n, const char *key, int64_t *v, int sd);
/* "padding" into pad (2 * sd: begins then ends): one value, one per axis (both ends) or all. */
void dn_attr_pads(const rt_json_node *n, int64_t *pad, int sd);
/* A pooling node's window over sd spatial axes (NC then spatial shapes xs -> os): size, stride,
 * dilation (oneDNN's, from 0) and padding; the right padding follows from the output size
 * (ceil_mode). */
void dn_pool_window(const rt_json_node *n, int sd, const int64_t *xs, const int64_t *os, dnnl_dims_t kk, dnnl_dims_t s,
                    dnnl_dims_t d, dnnl_dims_t pl, dnnl_dims_t pr);
/* relax.nn.conv3d and conv3d_transpose, as the 1-D and 2-D ones */
gr_status dn_op_conv3d(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_matmul(dn_state *S, const rt_json_node *n, const dn_comp *comp);
/* n scales by a constant a value one matmul of activations alone reads: nothing emitted, the
 * matmul scales its product instead (torch's q / sqrt(d) before QK^T) */
bool dn_fold_scale(dn_state *S, const rt_json_node *n);
/* n is such a scaling whatever x's value (its checks but x's value): x's entry into *xe, the
 * factor into *s */
bool dn_scale_folds(dn_state *S, const rt_json_node *n, int *xe, float *s);
/* A primitive of one source value xv (pooling, resampling): the first of (src as it is, dst
 * as planned), (dst any), (src and dst channels-last) that gets a jit kernel, else the first
 * one. init builds the op desc for a src / dst pair. */
gr_status dn_single_src_create(dn_state *S, const rt_json_node *n, int xv, const dnnl_memory_desc_t *dst, int nd,
                               const int64_t *os, src_desc_fn init, const void *ctx, void *desc, const dn_step *steps,
                               int k, const char *why, dnnl_primitive_desc_t *pd, int *used, dn_arg *args,
                               int *na);
gr_status dn_op_pool(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_elemwise(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_softmax(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_where(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_layer_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_batch_norm(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_concat(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_resize(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_reduce(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_reshape(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_permute(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_strided_slice(dn_state *S, const rt_json_node *n, const dn_comp *comp);
gr_status dn_op_split(dn_state *S, const rt_json_node *n, const dn_comp *comp);

#endif
