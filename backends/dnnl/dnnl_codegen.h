/* The dnnl backend (oneDNN): pattern table "dnnl.*" with checks (dnnl_patterns.c: fused
 * composites such as "dnnl.conv2d_bias_hardswish_add" first, then one pattern per op), and its
 * codegen: each region becomes a JSON graph (backends/json, one node per op) whose fused
 * composites carry the annotation the oneDNN engine (backends/dnnl/dnnl.h) builds their primitive and
 * post-ops from, plus its constants. Registered in the backend registry as "dnnl"; its options
 * (dnnl.threads, dnnl.disable, ...) are listed by `graft backends`. */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_CODEGEN_H
#define GRAFT_BACKENDS_DNNL_DNNL_CODEGEN_H

#include "byoc/backend.h"

extern const byoc_backend byoc_dnnl_backend;

/* One runtime module ("dnnl_json") for all regions; every region's primitives are built once
 * here so that oneDNN rejections name the region and its layers at compile time. */
gr_status dnnl_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const byoc_options *options,
                          rt_module **out, gr_diag *diag);

#endif
