/* The oneDNN engine of the JSON runtime (runtime/json_runtime.h): runs a region's graph of
 * op-level kernel nodes ("relax.nn.conv2d", "relax.add", ...) with oneDNN primitives.
 *
 * prepare (once per graph, after its constants are bound):
 *   - walks the nodes in order; convolution, deconvolution and matmul are created with
 *     dnnl_format_tag_any so oneDNN picks blocked layouts; constant weights are reordered once;
 *   - folds the ops that follow a primitive into its post-op chain: a per-channel constant add
 *     becomes the bias, unary ops / ops with a scalar constant become eltwise post-ops
 *     (relu, clip, sigmoid, tanh, gelu, linear, ...), x * sigmoid(x) becomes swish,
 *     x * clip(x + 3, 0, 6) / 6 and x * hardsigmoid(x) become hardswish, an add / multiply
 *     with another tensor (residual, squeeze-excitation scale) becomes a binary post-op;
 *   - activations keep the layout oneDNN chose; reorders only where a primitive needs another
 *     layout, at the region's inputs, and into the outputs (outputs written in place when the
 *     producing primitive already writes plain row-major data);
 *   - intermediate buffers share one arena planned from their lifetimes; one user scratchpad.
 * run: binds the caller's input and output buffers and executes the primitive list on one
 * stream (serialized per graph).
 *
 * Threads: oneDNN's OpenMP pool; GRAFT_NUM_THREADS sets its size (default: all cores).
 * A primitive that oneDNN rejects fails prepare with an error naming the region (symbol),
 * the node's op and its frontend layer. */
#ifndef GRAFT_RUNTIME_DNNL_H
#define GRAFT_RUNTIME_DNNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/json_runtime.h"

/* kind "dnnl_json" */
extern const rt_json_engine rt_dnnl_engine;

/* What prepare built, for tests and reports. */
typedef struct rt_dnnl_stats {
    uint32_t nprims;              /* primitives executed per run (reorders included) */
    uint32_t nreorders;           /* of which reorders */
    uint32_t npostops;            /* post-ops fused (bias counts as one) */
    uint32_t nfused_nodes;        /* kernel nodes folded into another node's primitive */
    size_t arena_bytes;           /* planned intermediate memory */
    size_t naive_bytes;           /* sum of all intermediate sizes (no reuse) */
    size_t scratch_bytes;
    size_t weight_bytes;          /* weights reordered and owned by the engine */
} rt_dnnl_stats;
void rt_dnnl_get_stats(const void *state, rt_dnnl_stats *out);

/* True when the engine has a dedicated handler for `op` (conv, matmul, pools, softmax, norms,
 * concat, resize, reductions, reshapes, permute); elementwise / binary ops are handled too. */
bool rt_dnnl_supports_op(const char *op);

/* Threads oneDNN uses (GRAFT_NUM_THREADS or all cores); sets them on first call. */
int rt_dnnl_num_threads(void);

#endif
