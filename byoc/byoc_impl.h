/* Internal helpers shared by the BYOC passes: use counts, grouping a block's bindings into
 * functions (with a cycle check on the contracted graph), fresh-var copies, span merging. */
#ifndef GRAFT_BYOC_BYOC_IMPL_H
#define GRAFT_BYOC_BYOC_IMPL_H

#include "byoc/byoc.h"
#include "ir/idtab_impl.h"
#include "ir/visit.h"

/* Counts every use of every var in f (var id -> count; tables by expression id stay local on
 * big functions). Returns false (diag set) when a var is bound twice in f or in `bound` (the
 * module-wide set of bound var ids; may be NULL). */
bool byoc_count_uses(const ir_func *f, ir_idtab *uses, ir_idtab *bound, const char *fname,
                     gr_diag *diag);

/* Calls fn on every var and const used in e, in argument order (local function bodies are
 * opaque). */
typedef void (*byoc_leaf_fn)(ir_expr *leaf, void *user);
void byoc_each_leaf(ir_expr *e, byoc_leaf_fn fn, void *user);

/* A group of bindings of one block about to become a function. */
typedef struct byoc_group_info {
    uint32_t nmembers;
    const uint32_t *members;   /* binding indices, ascending */
    uint32_t ninputs;
    ir_expr *const *inputs;    /* vars (and lifted consts) in order of first use */
    uint32_t noutputs;
    ir_var *const *outputs;    /* member vars used outside, in TVM's output order */
    const gr_map *leaves;      /* var -> static ShapeExpr / PrimValue it is bound to (inlined) */
} byoc_group_info;

/* The vars of f bound to a static leaf value (a ShapeExpr of constant dims, a constant
 * PrimValue): a group uses the value itself instead of taking the var as a parameter, as TVM's
 * OperatorFusor inlines them. out: GR_MAP_PTR(var) -> GR_MAP_PTR(value). */
void byoc_static_leaves(const ir_func *f, gr_map *out);

/* Builds the callee for group g: returns the expression to call (a gvar), or NULL + diag. The
 * function body is built with byoc_build_group_func. */
typedef ir_expr *(*byoc_make_fn)(void *user, uint32_t g, const ir_block *blk,
                                 const byoc_group_info *gi, gr_diag *diag);

/* Rewrites blk: bindings with grp[i] >= 0 are replaced by one call per group (at the group's
 * place in a topological order of the contracted graph); outputs keep their vars (several
 * outputs come back through a tuple and projections). lift_consts: constants used by members
 * become inputs. When the grouping has a cycle, *cyclic_group gets a group on the cycle and
 * nothing is built (return GR_OK with *out NULL). */
gr_status byoc_apply_groups(ir_ctx_t *ctx, const ir_block *blk, const int32_t *grp,
                            uint32_t ngroups, const ir_idtab *uses, const gr_map *leaves, bool lift_consts,
                            byoc_make_fn make, void *user, const ir_block **out,
                            int32_t *cyclic_group, gr_diag *diag);

/* The function of a group: fresh params for gi->inputs, copies of the member bindings with
 * fresh vars (a dataflow block when `dataflow`), returning the single output or a tuple. */
ir_func *byoc_build_group_func(ir_ctx_t *ctx, const ir_module *mod, const ir_block *blk,
                               const byoc_group_info *gi, bool dataflow, const ir_attrs *attrs,
                               gr_diag *diag);

/* Same, with the callee of each member that calls a global rewritten: fn returns what to call
 * instead (NULL: keep the global) and may append bindings to `pre`, emitted right before that
 * member (Merge binds each composite's local lambda before its first call this way, without
 * building the region twice). */
typedef ir_expr *(*byoc_callee_fn)(void *user, ir_gvar *callee, ir_binding_vec *pre, gr_diag *diag);
ir_func *byoc_build_group_func_ex(ir_ctx_t *ctx, const ir_module *mod, const ir_block *blk,
                                  const byoc_group_info *gi, bool dataflow, const ir_attrs *attrs,
                                  byoc_callee_fn fn, void *user, gr_diag *diag);

/* A copy of f with fresh vars everywhere (so it can be inlined as a local function). */
ir_func *byoc_copy_func_fresh(ir_ctx_t *ctx, const ir_func *f, gr_diag *diag);

/* SequentialSpan of the member bindings' value spans; output marks kept only on the members
 * whose var is in outputs. */
const ir_span *byoc_group_span(ir_ctx_t *ctx, const ir_block *blk, const byoc_group_info *gi);

/* Op names of e's calls joined for names: "relax_nn_conv2d". */
void byoc_append_op_name(char *buf, size_t size, const char *op_name);

/* The backend of a composite name "json.nn.conv2d" -> "json" (interned). */
const char *byoc_backend_of(ir_ctx_t *ctx, const char *composite);

/* Name not yet used in m: base, base1, base2, ... (interned). */
const char *byoc_unique_name(ir_ctx_t *ctx, const ir_module *m, const char *base);

/* Walks a function's seq: calls fn for every block (nested seqs in if branches too) and
 * rebuilds the seq from the blocks fn returns. */
typedef gr_status (*byoc_block_fn)(void *user, const ir_block *blk, const ir_block **out,
                                   gr_diag *diag);
gr_status byoc_rewrite_blocks(ir_ctx_t *ctx, ir_expr *body, byoc_block_fn fn, void *user,
                              ir_expr **out, gr_diag *diag);

/* True for functions FuseOps / RunCodegen treat as entries. */
bool byoc_is_entry_func(const ir_func *f);

/* Removes the Composite/Primitive functions nothing references any more (merge.c); those `keep`
 * has (NULL: none) stay. */
void byoc_remove_dead_composites(ir_module *m, const ir_module *keep);

#endif
