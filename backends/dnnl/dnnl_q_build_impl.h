/* The oneDNN engine's quantized composites, shared by their builders (dnnl_op_quant.c) and
 * the int8 ops on levels between them (dnnl_q_levels.c). Internal. */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_Q_BUILD_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_Q_BUILD_IMPL_H

#include "backends/dnnl/dnnl_ops_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"

/* A quantized composite's nodes (dnnl_op_quant.c read_nodes). */
typedef struct q_nodes {
    const rt_json_node *div, *zp, *clip, *qcast, *dqcast, *dqzp, *mul, *anchor, *bias, *act, *last;
    const rt_json_node *w[4];     /* the weights' dequantize of constant levels (cast, [subtract],
                                     multiply, [transpose]), nw of them, listed anywhere */
    int nw;
    float s, zpv, dq_s, dq_zpv;
    dnnl_data_type_t qt;          /* dnnl_u8 or dnnl_s8 */
} q_nodes;

/* One int8 convolution / matmul to build: its source (float32 to quantize, or the levels a
 * quantize -> dequantize pair made), the quantization of that source, the bias and the
 * eltwise post-ops. */
typedef struct q_job {
    const rt_json_node *n;        /* the convolution / matmul */
    dnnl_q_kind kind;
    int xv;
    bool levels;                  /* xv holds the levels (u8 / s8), not float32 */
    const rt_json_node *qnode;    /* the node the quantize reorder names */
    float s;
    int32_t zp;
    dnnl_data_type_t qt;
    const float *bias;            /* one per output channel, or NULL */
    int npost;
    dnnl_alg_kind_t alg[DN_MAX_STEPS];
    float alpha[DN_MAX_STEPS], beta[DN_MAX_STEPS];
    int out;                      /* the entry its result is */
    bool split;                   /* below VNNI with 8-bit weights: two convolutions (split_pds) */
} q_job;

dnnl_status_t dn_q_make_attr(dnnl_primitive_attr_t *a, dnnl_dim_t nsc, int mask, const float *sc, int zp_arg, int32_t zp);
/* constant entry e as n plain float32 values, or NULL */
const float *dn_q_const_f32(dn_state *S, int e, int64_t n);
bool dn_q_int8_exact_for(dn_state *S, const rt_json_node *n, dnnl_data_type_t qt);
bool dn_q_split_for(dn_state *S, const rt_json_node *n, dnnl_data_type_t qt);
bool dn_q_requant_of(dn_state *S, int e, q_nodes *q);
bool dn_q_split_ok(dn_state *S, const q_job *j);
gr_status dn_q_build_int8(dn_state *S, const q_job *j);
gr_status dn_q_pool_levels(dn_state *S, const rt_json_node *n, int xv, dnnl_data_type_t qt, int *out);

#endif
