/* SIBuilder (seed 001): source information for expressions a pass creates.
 *
 *   ir_si_fill(ctx, span, entry, inputs, n)  gives `span` to every expression reachable from
 *       `entry` that has none, stopping at `inputs` (and at vars, ops and global vars). Nodes are
 *       immutable, so the span-less nodes and their parents are rebuilt: use the returned entry.
 *       Typical use: a one-to-many rewrite (batch_norm -> multiply/add) builds its new nested
 *       expression, fills it with the old call's span, then emits it.
 *   ir_si_collapse(ctx, entry, inputs, n)  the SequentialSpan of every span met from `entry`
 *       down to (not including) `inputs`, producers first. Typical use: a many-to-one rewrite
 *       (reshape(reshape(x)) -> reshape(x)) gives the new node the collapsed span.
 *
 * Both are no-ops (fill returns entry, collapse returns NULL) when the current pass context sets
 * "ir.enable_si_builder" to false; the check is one thread-local read. */
#ifndef GRAFT_IR_TRANSFORM_SI_BUILDER_H
#define GRAFT_IR_TRANSFORM_SI_BUILDER_H

#include "ir/expr.h"

/* True unless the current pass context disabled the SIBuilder. */
bool ir_si_enabled(void);

ir_expr *ir_si_fill(ir_ctx_t *ctx, const ir_span *span, ir_expr *entry, ir_expr *const *inputs,
                    uint32_t ninputs);

const ir_span *ir_si_collapse(ir_ctx_t *ctx, ir_expr *entry, ir_expr *const *inputs,
                              uint32_t ninputs);
/* Same, looking through bindings: `bindings` maps a var (GR_MAP_PTR) to its bound value, so a
 * collapse over A-normal form walks var -> value down to the inputs. bindings may be NULL. */
const ir_span *ir_si_collapse_bound(ir_ctx_t *ctx, ir_expr *entry, ir_expr *const *inputs,
                                    uint32_t ninputs, const gr_map *bindings);

/* The SequentialSpan of the spans of `nodes`, in the order given (producers first): the cheap
 * form of collapse for a pass that already holds every node of the matched subgraph (vars
 * included: a var's span counts). NULL when the SIBuilder is off. */
const ir_span *ir_si_collapse_nodes(ir_ctx_t *ctx, const ir_expr *const *nodes, uint32_t n);

/* Calls fn for every span held by an expression of the module (function, params, binding vars,
 * values and everything nested; each node once). */
void ir_module_for_each_span(const ir_module *m, void (*fn)(const ir_span *s, void *user), void *user);

#endif
