/* Block builder and normalizer.
 *
 * The normalizer fills struct info (op calls through the op table, tuples, projections, calls
 * of functions, seq/if) and, inside a builder, puts expressions in A-normal form: a non-leaf
 * argument of a call is bound to a fresh var first. Spans are kept: a var made for a nested
 * expression gets that expression's span. Nested bindings land in the open block (DataflowVars
 * "lv" in a dataflow block, Vars "gv" otherwise) before the binding that uses them. SeqExprs,
 * ifs and functions met inside an emitted value are normalized in place (struct info only);
 * build their insides with a builder of their own to get them in A-normal form. After an
 * error the builder refuses further emits (the diag keeps the first error).
 *
 *     ir_bb_t *bb = ir_bb_new(ctx, &diag);
 *     ir_bb_begin_dataflow(bb);
 *     ir_var *lv = ir_bb_emit(bb, (ir_expr *)call, "lv");          // DataflowVar
 *     ir_var *gv = ir_bb_emit_output(bb, (ir_expr *)relu, "gv");    // Var, escapes the block
 *     ir_bb_end_block(bb);
 *     ir_seq *body = ir_bb_finish(bb, (ir_expr *)gv, NULL);        // SeqExpr of the blocks
 *     ir_bb_free(bb);
 */
#ifndef GRAFT_IR_BUILDER_H
#define GRAFT_IR_BUILDER_H

#include "ir/expr.h"

typedef struct ir_bb ir_bb_t;

/* A builder writing errors to diag (which must outlive it). Pair with ir_bb_free(). */
ir_bb_t *ir_bb_new(ir_ctx_t *ctx, gr_diag *diag);
void ir_bb_free(ir_bb_t *bb);
/* The module used to resolve calls of global functions (R.Callable return of @f); may be NULL.
 * Not owned; it must outlive the builder (or be reset). */
void ir_bb_set_module(ir_bb_t *bb, const ir_module *m);

/* Blocks: a dataflow block or a plain binding block. Emitting with no open block opens a plain
 * one. */
void ir_bb_begin_dataflow(ir_bb_t *bb);
void ir_bb_begin_block(ir_bb_t *bb);
/* Closes the open block (an empty block is dropped); returns it, or NULL when empty. */
const ir_block *ir_bb_end_block(ir_bb_t *bb);

/* Normalizes `value` and binds it to a fresh var named from `name_hint` (NULL: "lv" in a
 * dataflow block, "gv" otherwise). The var is a DataflowVar inside a dataflow block. The var
 * takes the value's span. Returns NULL with diag filled when struct info inference fails. */
ir_var *ir_bb_emit(ir_bb_t *bb, ir_expr *value, const char *name_hint);
/* Like ir_bb_emit, but the var is a plain Var even inside a dataflow block (R.output). */
ir_var *ir_bb_emit_output(ir_bb_t *bb, ir_expr *value, const char *name_hint);
/* MatchCast binding: value is checked against `sinfo` at run time; the var has `sinfo`. */
ir_var *ir_bb_emit_match_cast(ir_bb_t *bb, ir_expr *value, const ir_sinfo *sinfo,
                              const char *name_hint);
/* Binds `value` (already normalized, or normalized here) to an existing var (the parser uses
 * this to keep the names and spans written in the file). Returns false on error. */
bool ir_bb_emit_to(ir_bb_t *bb, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo);
/* The two halves of ir_bb_emit_to, for a caller that checks the value's struct info in between
 * (the parser's annotations) without normalizing twice: ir_bb_normalize fills struct info and
 * binds nested non-leaf args in the open block (NULL on error); ir_bb_emit_normalized binds its
 * result to var as is. */
ir_expr *ir_bb_normalize(ir_bb_t *bb, ir_expr *value);
void ir_bb_emit_normalized(ir_bb_t *bb, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo);

/* Closes any open block and returns a SeqExpr of all blocks emitted since the last finish, with
 * `body` (normalized) as its result. NULL on error. */
ir_seq *ir_bb_finish(ir_bb_t *bb, ir_expr *body, const ir_span *span);

/* Normalizes outside a builder: fills missing struct info bottom-up without introducing
 * bindings (nested non-leaf args stay nested). Returns e, or NULL with diag filled. A node that
 * already has struct info is left alone (its children are not revisited). Vars must already
 * have struct info (binding vars without it take their value's). Calls of a GlobalVar resolve
 * through the gvar's own struct info when set, else through `m` (ir_normalize_in). */
ir_expr *ir_normalize(ir_ctx_t *ctx, ir_expr *e, gr_diag *diag);
ir_expr *ir_normalize_in(ir_ctx_t *ctx, const ir_module *m, ir_expr *e, gr_diag *diag);
/* Struct info of a call whose callee and args are normalized (op, function, extern, var of
 * function type). Symbolic dims of the callee's params are bound from the args and substituted
 * into the return (TVM's DeriveCallRetStructInfo, best effort); m (may be NULL) resolves
 * global functions. NULL + diag on error. */
const ir_sinfo *ir_infer_call_in(ir_ctx_t *ctx, const ir_module *m, const ir_call *call,
                                 gr_diag *diag);
/* TVM's StructInfoLCA: the most specific struct info that is a base of both (equal -> that;
 * tensors keep the dtype / rank / dims they agree on; different kinds -> R.Object). */
const ir_sinfo *ir_sinfo_lca(ir_ctx_t *ctx, const ir_sinfo *a, const ir_sinfo *b);

#endif
