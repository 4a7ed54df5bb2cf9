/* Matching patterns against expressions (TVM's MatchExpr / ExtractMatchedExpr) and against a
 * whole dataflow block under graph constraints (TVM's PatternContext / match_dfb).
 *
 * Following bindings: when a pattern that needs a value (a call, tuple, const, ...) meets a var
 * bound in the block described by `info`, the matcher follows var -> value (recording that
 * binding as matched). It never leaves the block: params, vars of other blocks and match_cast
 * bindings are opaque leaves that only wildcards, var patterns and constraints match.
 *
 *     pat_block_info *info = pat_block_info_build(ctx, block);   // once per block
 *     pat_match_result m;
 *     pat_match_result_init(&m);
 *     for (uint32_t i = 0; i < block->n; i++)
 *         if (pat_match(p, &block->bindings[i].var->base, info, &m)) use(m.root, m.bindings);
 *     pat_match_result_free(&m);
 *     pat_block_info_free(info);
 */
#ifndef GRAFT_PATTERNS_MATCH_H
#define GRAFT_PATTERNS_MATCH_H

#include "patterns/pattern.h"

/* ---- Block info: use-def of one binding block (heap; pair build with free) ---- */
typedef struct pat_block_info {
    ir_ctx_t *ctx;
    const ir_block *block;
    /* Every var used in the block (bound here or free: params, vars of earlier blocks), dense:
     * vars[k]. Uses are CSR: users of vars[k] are the binding indices users[user_off[k] ..
     * user_off[k+1]) in block order (a binding using a var twice is listed twice). use_count[k]
     * counts those uses plus one for a plain Var bound in the block (it escapes through
     * R.output). bind_of[k] is the binding index of vars[k], or -1 for a free var. */
    uint32_t nvars;
    ir_var **vars;
    uint32_t *user_off;
    uint32_t *users;
    uint32_t *use_count;
    int32_t *bind_of;
    /* internal: var -> 1 + k. Ids in [id_lo, id_lo + id_n) use the dense table, others the map. */
    uint32_t id_lo, id_n;
    uint32_t *slot_by_id;
    gr_map slot_far;
    gr_map value_var_;         /* built on the first pat_block_value_var call */
    bool value_var_built_;
} pat_block_info;

pat_block_info *pat_block_info_build(ir_ctx_t *ctx, const ir_block *block);
void pat_block_info_free(pat_block_info *info);
/* The binding index of var in the block, or -1. */
int pat_block_binding_of(const pat_block_info *info, const ir_expr *var);
/* Number of uses of var (see use_count); 0 for a var the block never uses. */
uint32_t pat_block_use_count(const pat_block_info *info, const ir_expr *var);
/* Users of var: binding indices in block order (*n gets the count). */
const uint32_t *pat_block_users(const pat_block_info *info, const ir_expr *var, uint32_t *n);
/* The var a value (pointer) is bound to in the block (TVM's value_to_bound_var), or NULL. The
 * table is built on the first call (not thread safe for one info). */
ir_var *pat_block_value_var(const pat_block_info *info, const ir_expr *value);

/* ---- One expression match ---- */
typedef struct pat_match_entry {
    const pat_t *pat;
    ir_expr *reached;          /* the expression as met (may be a var of the block) */
    ir_expr *value;            /* the unwrapped expression: a followed var's bound value */
} pat_match_entry;

typedef struct pat_match_result {
    ir_expr *root;             /* the root expression, unwrapped (TVM's matched_expr) */
    ir_var *root_var;          /* the bound var of the root when the match started at one */
    /* Every sub-pattern on the successful path (Or/And nodes included), in visit order. */
    GR_VEC(pat_match_entry) entries;
    /* Bindings followed by the match, in block order, without duplicates (the bindings a fusion
     * of this match would absorb; the root's binding last when the root is bound). */
    GR_VEC(const ir_binding *) bindings;
    GR_VEC(uint32_t) binding_idx;  /* their indices in the block (parallel to bindings) */
    /* internal scratch */
    GR_VEC(uint32_t) trail_;
} pat_match_result;

void pat_match_result_init(pat_match_result *m);
void pat_match_result_free(pat_match_result *m);

/* Matches p against e (a var of info's block is followed). info may be NULL (no following).
 * On success fills *out (reused between calls) and returns true; on failure *out is cleared. */
bool pat_match(const pat_t *p, ir_expr *e, const pat_block_info *info, pat_match_result *out);
/* Calls fn on each successful match, in search order, until fn returns true (accepted): the
 * search backtracks into the remaining choices (other | branches, the smaller optional form,
 * the other argument order, ...) when fn returns false. Returns whether a match was accepted;
 * *out then holds it. The result given to fn is complete. */
typedef bool (*pat_match_accept_fn)(const pat_match_result *m, void *user);
bool pat_match_each(const pat_t *p, ir_expr *e, const pat_block_info *info, pat_match_result *out,
                    pat_match_accept_fn fn, void *user);
/* The unwrapped expression matched by sub-pattern p, or NULL when p took no part. */
ir_expr *pat_match_get(const pat_match_result *m, const pat_t *p);
/* The expression as it was reached (a var when the value was followed through a binding): use
 * this to build replacement expressions that stay in A-normal form. NULL when p took no part. */
ir_expr *pat_match_get_reached(const pat_match_result *m, const pat_t *p);
/* The unwrapped expression matched by the sub-pattern named `name` (pat_name), or NULL. */
ir_expr *pat_match_named(const pat_match_result *m, const char *name);
ir_expr *pat_match_named_reached(const pat_match_result *m, const char *name);

/* ---- Check functions (FuseOpsByPattern's PatternCheckContext) ---- */
typedef struct pat_check_ctx {
    ir_ctx_t *ctx;
    const pat_t *pattern;
    ir_expr *matched_expr;            /* the root call (unwrapped) */
    ir_var *matched_var;              /* its bound var (NULL when not bound) */
    const pat_match_result *match;    /* named sub-expressions: pat_match_named(match, "root") */
    const pat_block_info *block;      /* var usages of the whole block, value -> bound var */
} pat_check_ctx;

/* Returns true to accept. On reject, set *reason to a short static or arena-interned string
 * (it shows in the partition report). */
typedef bool (*pat_check_fn)(const pat_check_ctx *c, const char **reason, void *user);

/* A ready check: rejects when a matched intermediate (every matched binding but the root's)
 * has a user outside the matched bindings or is not a dataflow var (TVM's
 * has_leaking_intermediate_variables). */
bool pat_check_no_leaking_intermediates(const pat_check_ctx *c, const char **reason, void *user);

/* ---- Graph constraints over a block (TVM PatternContext) ---- */
typedef struct pat_ctx pat_ctx_t;

typedef enum pat_edge_kind {
    PAT_USED_BY,       /* a ^ b: the var matched by a is used by the value matched by b */
    PAT_ONLY_USED_BY,  /* a >> b: ... and that is its only use */
} pat_edge_kind;

/* A new context; with `parent` and `incremental` it starts with a copy of the parent's patterns
 * and constraints (TVM's PatternContext(incremental=True)). Pair with pat_ctx_free. */
pat_ctx_t *pat_ctx_new(ir_ctx_t *ctx, const pat_ctx_t *parent, bool incremental);
void pat_ctx_free(pat_ctx_t *pc);
/* Edge constraints; index >= 0: a must be b's call argument number `index`; -1: any position. */
void pat_ctx_used_by(pat_ctx_t *pc, const pat_t *a, const pat_t *b, int index);
void pat_ctx_only_used_by(pat_ctx_t *pc, const pat_t *a, const pat_t *b, int index);
/* Validation constraint (TVM's SameShapeConstraint): the vars matched by a and b have tensor
 * struct info of the same rank and the same dims (symbolic dims compare canonically; an unknown
 * shape never equals anything). */
void pat_ctx_same_shape(pat_ctx_t *pc, const pat_t *a, const pat_t *b);
uint32_t pat_ctx_count(const pat_ctx_t *pc);
const pat_t *pat_ctx_at(const pat_ctx_t *pc, uint32_t i);

/* A graph match: each pattern of the context (pat_ctx_at order) -> the var it matched (a bound
 * var of the block, or a free var used in it such as a function param). */
typedef struct pat_graph_match {
    uint32_t n;
    const pat_t *const *pats;
    ir_var **vars;
} pat_graph_match;

/* Finds one assignment (backtracking), skipping vars marked in `exclude` (var -> nonzero; may
 * be NULL). Returns true and fills *out (arrays owned by pc, valid until the next call). */
bool pat_ctx_match_block(pat_ctx_t *pc, const pat_block_info *info, const gr_map *exclude,
                         pat_graph_match *out);
/* The var matched by p in a graph match, or NULL. */
ir_var *pat_graph_match_get(const pat_graph_match *gm, const pat_t *p);

#endif
