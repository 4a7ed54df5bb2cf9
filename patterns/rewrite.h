/* Pattern rewriting (TVM rewrite_call / rewrite_bindings).
 *
 * Spans: a replacement expression that comes back without a span gets the SequentialSpan of the
 * bindings it replaced (the matched bindings, in block order); new nodes nested inside it get
 * the same span (SIBuilder fill). Output marks move with the value: locs of the replaced root
 * binding keep their mark (the new expression produces that value), locs of intermediates lose
 * it. After every round the function is cleaned up with CanonicalizeBindings,
 * EliminateCommonSubexpr and DeadCodeElimination (as TVM does), so a rewrite also drops dead
 * bindings. The result is well formed when the input is. */
#ifndef GRAFT_PATTERNS_REWRITE_H
#define GRAFT_PATTERNS_REWRITE_H

#include "patterns/match.h"

/* Returns the replacement for `matched` (the unwrapped root), `matched` itself for "no rewrite"
 * (matching then backtracks into the other branches of | / optional), or NULL on error (set
 * diag). Build replacements from pat_match_get_reached() to stay in A-normal form; nested
 * expressions are bound to fresh vars when emitted. */
typedef ir_expr *(*pat_rewrite_fn)(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m,
                                   void *user, gr_diag *diag);

/* Rewrites every match of `pattern` in func (every binding block, in order) until a fixed point
 * (at most 64 rounds). *out = func when nothing changed. */
gr_status pat_rewrite_call(ir_ctx_t *ctx, const pat_t *pattern, pat_rewrite_fn fn, void *user,
                           ir_func *func, ir_func **out, gr_diag *diag);

/* Multi-binding rewriter: given a graph match, push (var, new value) pairs for matched bound
 * vars to `out` (vars absent keep their bindings). Return false on error; push nothing for "no
 * rewrite". */
typedef struct pat_var_value {
    ir_var *var;
    ir_expr *value;
} pat_var_value;
typedef GR_VEC(pat_var_value) pat_var_value_vec;
typedef bool (*pat_rewrite_bindings_fn)(ir_ctx_t *ctx, const pat_graph_match *gm,
                                        const pat_block_info *info, void *user,
                                        pat_var_value_vec *out, gr_diag *diag);

/* Matches pc in every dataflow block repeatedly (vars of earlier matches excluded) and applies
 * the rewriter's new values; bindings are re-sorted topologically, then cleaned up. Each new
 * value's root keeps the span of the binding it replaces; new nested nodes get the
 * SequentialSpan of all matched bindings (marks cleared). *out = func when nothing changed. */
gr_status pat_rewrite_bindings(ir_ctx_t *ctx, pat_ctx_t *pc, pat_rewrite_bindings_fn fn,
                               void *user, ir_func *func, ir_func **out, gr_diag *diag);

/* Module versions: every function without a Codegen attribute. *out = m when unchanged. */
gr_status pat_rewrite_call_module(const pat_t *pattern, pat_rewrite_fn fn, void *user,
                                  const ir_module *m, ir_module **out, gr_diag *diag);

#endif
