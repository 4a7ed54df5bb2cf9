/* Internal to backends/dnnl: the composite analysis shared by the pattern checks (at fuse time,
 * on the matched bindings) and the codegen (on a composite function's bindings). */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_PATTERN_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_PATTERN_IMPL_H

#include "byoc/byoc.h"
#include "backends/dnnl/dnnl.h"

#define DC_MAX_BINDS 48

/* An op-call binding of a composite, in block order. */
typedef struct dc_bind {
    const ir_expr *var;
    const ir_call *call;
} dc_bind;

/* Where one post-op of a composite is: binding indices into the dc_bind list. */
typedef struct dc_post {
    int out;                  /* binding of the post's result */
    int mid;                  /* hardsigmoid: binding of its linear part a * x + b; else -1 */
    int src_b, src_a;         /* bias / add / mul: binding and argument index of the operand */
    int naff;                 /* affine: its ops (binding, argument index of the constant) */
    int aff_b[4], aff_a[4];
    bool aff_lin[4];          /* that op has a scalar constant: x -> aff_alpha x + aff_beta */
    float aff_alpha[4], aff_beta[4];
    float alpha, beta;        /* eltwise parameters (leaky alpha, clip / hardsigmoid / elu) */
} dc_post;

typedef struct dc_comp {
    rt_dnnl_composite spec;
    int anchor;               /* binding of the convolution / matmul */
    int perm;                 /* dense: binding of permute_dims(w); else -1 */
    dc_post post[RT_DNNL_MAX_POST];
} dc_comp;

/* Reads every post of `spec` from match m of its pattern (dc_pattern names the parts), finds
 * their bindings in bs (the composite's op-call bindings, in block order), and checks what the
 * pattern cannot: dtypes, ranks, attributes, shapes and constants (per-channel bias, hard-swish
 * and elu constants, post-op limits), and that m holds every binding of bs. NULL when the
 * composite is fine, else the reason it is not (static or interned in ctx). */
const char *dc_analyze(ir_ctx_t *ctx, const rt_dnnl_composite *spec, const pat_match_result *m, const dc_bind *bs,
                       uint32_t n, dc_comp *out);
/* The pattern of composite spec, with its parts named (dnnl_patterns shares these nodes
 * between composites with a common prefix). */
const pat_t *dc_pattern(ir_ctx_t *ctx, const rt_dnnl_composite *spec);
/* dc_analyze of composite function f (the codegen): matches dc_pattern against f's result in
 * its body, then analyzes that match (the first one that passes). */
const char *dc_analyze_func(ir_ctx_t *ctx, const rt_dnnl_composite *spec, const ir_func *f, const dc_bind *bs, uint32_t n,
                            dc_comp *out);

/* The backend's ordered pattern table: fused composites (longest first), then single ops. */
/* dnnl.disable keeps the patterns it names, failing their checks. */
gr_status dnnl_patterns(ir_ctx_t *ctx, const byoc_options *opts, const byoc_pattern **out, uint32_t *n,
                        gr_diag *diag);

/* The checks of the ops whose rows in backends/dnnl/dnnl_op_table.h are DN_K_OWN: NULL when the
 * call is fine, else the reason. dnnl_rnn_patterns.c: lstm / gru / rnn; dnnl_vol_patterns.c:
 * conv3d / conv3d_transpose / max_pool3d / avg_pool3d. */
const char *dnnl_rnn_check(const ir_call *c, ir_ctx_t *ctx);
const char *dnnl_vol_check(const ir_call *c, ir_ctx_t *ctx);

/* dnnl_q_patterns.c: the quantized composites (backends/dnnl/dnnl_q_impl.h) into out (room for
 * dnnl_q_npatterns()), in priority order; returns how many. */
uint32_t dnnl_q_patterns(ir_ctx_t *ctx, byoc_pattern *out);
uint32_t dnnl_q_npatterns(void);

#endif
