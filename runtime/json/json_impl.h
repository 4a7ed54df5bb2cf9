/* Internal helpers shared by the JSON runtime's files (json_runtime.c, json_contract.c).
 * runtime/ only. */
#ifndef GRAFT_RUNTIME_JSON_JSON_IMPL_H
#define GRAFT_RUNTIME_JSON_JSON_IMPL_H

#include "runtime/json/json_runtime.h"

/* The "op_attrs" of kernel node n decoded against def's schema and normalized (defaults filled
 * in, in schema order), allocated in ctx. An error names the graph, the node and its layer. */
gr_status rt_json__op_attrs(ir_ctx_t *ctx, const rt_json_graph *g, uint32_t nid, const rt_json_node *n,
                            const ir_op_def *def, const ir_attrs **out, gr_diag *d);

#endif
