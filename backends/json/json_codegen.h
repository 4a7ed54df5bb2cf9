/* The JSON graph serializer (TVM's JSONSerializer) and the `json` codegen.
 *
 * Graph format (Jansson, native JSON values as in TVM after 2026):
 *   {"symbol": "...",
 *    "nodes": [ {"op": "input",  "name": "x",              "attrs": {...}},
 *               {"op": "const",  "name": "<sym>_const_0",  "attrs": {...}},
 *               {"op": "kernel", "name": "relax.nn.conv2d", "inputs": [[nid, index, 0], ...],
 *                "attrs": {...}} ],
 *    "arg_nodes": [leaf node ids: inputs and consts],
 *    "heads": [[nid, index, 0], ...],
 *    "node_row_ptr": [prefix sums of outputs per node],
 *    "layer_outputs": [[nid, index, "layer"], ...]}   (entries producing a frontend layer's
 *                                                    output, from the output marks; optional)
 * Every node's attrs hold "shape" (a list of per-output shapes), "dtype" (a list) and "span"
 * (a list of [source, output] pairs, plus [line, col] for a source range: the frontend layers of
 * the node, beyond TVM). Kernel nodes also hold "op_attrs" (the op's attributes), "args" (the
 * call's arguments in order: {"in": k} for input k, {"shape": [...]}, {"int": v},
 * {"float": v}, {"str": s}, {"tuple": [...]}),
 * "num_inputs", "num_outputs" and, when from a composite, "composite". In per-composite mode
 * (for library backends such as oneDNN) each composite call is one kernel node named after its
 * Composite attribute, with "ops": [{"name", "op_attrs"}, ...] of the ops inside, in order. */
#ifndef GRAFT_BACKENDS_JSON_JSON_CODEGEN_H
#define GRAFT_BACKENDS_JSON_JSON_CODEGEN_H

#include "byoc/backend.h"

typedef enum json_cg_mode { JSON_CG_PER_OP, JSON_CG_PER_COMPOSITE } json_cg_mode;

/* Serializes one region; *out is a heap string (free()). Shapes must be static. */
gr_status json_cg_serialize(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, char **out,
                            gr_diag *diag);

/* The json backend (json_backend.c) and its codegen: one runtime module (reference engine) for
 * all regions. */
extern const byoc_backend byoc_json_backend;
gr_status json_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n,
                          const byoc_options *options, rt_module **out, gr_diag *diag);

/* Builds the graphs of regions with `mode` and initializes them with their constants (helper
 * for engines: the caller wraps them with rt_json_module_new). graphs: n entries. */
struct rt_json_graph;
gr_status json_cg_build_graphs(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n,
                               json_cg_mode mode, struct rt_json_graph **graphs, gr_diag *diag);

#endif
