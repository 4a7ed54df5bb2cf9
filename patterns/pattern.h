/* The dataflow pattern language (TVM Relax DPL, research/tvm_relax_byoc.md §1).
 *
 * Patterns are immutable nodes allocated in an ir_ctx_t arena (they live until ir_ctx_free and
 * are never freed one by one). Build them bottom-up; a node used twice in one pattern must match
 * the same expression both times (memoization: add(w, w) matches add(x, x), not add(x, y)).
 *
 *     pat_t *x = pat_wildcard(ctx), *w = pat_wildcard(ctx), *b = pat_const(ctx);
 *     pat_t *conv = pat_name(ctx, pat_call2(ctx, "relax.nn.conv2d", x, w), "root");
 *     pat_t *biased = pat_optional(ctx, conv, pat_call2(ctx, "relax.add", conv, b));
 *     pat_t *p = pat_call1(ctx, "relax.nn.relu", biased);   // conv2d [+ bias] -> relu
 *
 * Matching and the graph constraints are in patterns/match.h, rewriting in patterns/rewrite.h,
 * pattern tables read from / printed to the text format in patterns/pattern_text.h. */
#ifndef GRAFT_PATTERNS_PATTERN_H
#define GRAFT_PATTERNS_PATTERN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/expr.h"

typedef enum pat_kind {
    PAT_WILDCARD,        /* anything */
    PAT_EXPR,            /* structurally equal to `expr` (ir_struct_equal) */
    PAT_OP,              /* an ir_op whose name is one of `names` (is_op) */
    PAT_CALL,            /* callee and args match; `varargs`: the call may have more args */
    PAT_CONST,           /* an ir_const (is_const) */
    PAT_VAR,             /* a var, any kind; `str` non-NULL: the name must be equal (is_var) */
    PAT_DFVAR,           /* a dataflow var; `str` as for PAT_VAR (is_dfv) */
    PAT_GVAR,            /* a global var whose name contains `str` (NULL: any) (is_gv) */
    PAT_EXTERN,          /* an ExternFunc with symbol `str` (NULL: any) */
    PAT_TUPLE,           /* a tuple of the same arity, fields in order */
    PAT_TUPLE_UNORDERED, /* a tuple of the same arity, fields in any order (backtracking) */
    PAT_TGI,             /* tuple[index]; index -1: any index */
    PAT_SHAPE,           /* is_shape: an R.shape([...]) whose dims equal `dims` (NULL dim: any) */
    PAT_HAS_DTYPE,       /* sub matches and the tensor's dtype is `dtype` */
    PAT_HAS_SHAPE,       /* sub matches and the tensor's shape equals `dims` (symbolic equality:
                            canonical prims compare by pointer; a NULL dim matches any dim) */
    PAT_HAS_SINFO,       /* sub matches and `sinfo` is a base of the expression's struct info */
    PAT_HAS_ATTR,        /* sub matches and the given attrs are equal: op attrs of a call, function
                            attrs of a function (only the keys given are checked) */
    PAT_OR,              /* a, else b (left first; backtracks into b when the rest fails) */
    PAT_AND,             /* a and b */
    PAT_NOT,             /* a does not match */
    PAT_OPTIONAL,        /* `with` (which contains `a`) when it matches, else `a` alone:
                            maximal first, e.g. conv2d with an optional bias add */
    PAT_FUNC,            /* a function: same number of params, params and body match */
    PAT_KIND_COUNT
} pat_kind;

typedef struct pat pat_t;
struct pat {
    uint8_t kind;                 /* pat_kind */
    bool varargs;                 /* PAT_CALL: extra call args are allowed (varg_default_wildcard) */
    uint32_t id;                  /* unique per context (ir_ctx_next_id) */
    const char *name;             /* annotation name (pat_name), interned; NULL when none */
    const pat_t *a, *b;           /* sub patterns: CALL callee (a); HAS_*, NOT, TGI tuple (a);
                                     OR / AND (a, b); OPTIONAL (a = base, b = with); FUNC body (a) */
    uint32_t n;                   /* CALL args, TUPLE fields, OP names, SHAPE / HAS_SHAPE dims,
                                     FUNC params */
    const pat_t *const *subs;     /* CALL args, TUPLE fields, FUNC params */
    const char *const *names;     /* OP: the op table's canonical names ("relax.nn.conv2d"):
                                     compare with ir_op_def.name by pointer */
    const ir_prim *const *dims;   /* SHAPE, HAS_SHAPE (NULL entries: any dim) */
    int32_t ndim;                 /* HAS_SHAPE: rank, -1: any rank (then dims is NULL) */
    int32_t index;                /* TGI: -1 any */
    ir_dtype dtype;               /* HAS_DTYPE */
    const ir_sinfo *sinfo;        /* HAS_SINFO */
    const ir_attrs *attrs;        /* HAS_ATTR */
    const char *str;              /* VAR / DFVAR / GVAR / EXTERN name */
    const ir_expr *expr;          /* EXPR */
};

/* ---- Leaves ---- */
pat_t *pat_wildcard(ir_ctx_t *ctx);
pat_t *pat_expr(ir_ctx_t *ctx, const ir_expr *e);
/* An op by name ("relax.nn.conv2d", "R.nn.conv2d" or "nn.conv2d"); NULL when the op is unknown. */
pat_t *pat_op(ir_ctx_t *ctx, const char *name);
/* Any of n ops; NULL when one name is unknown. */
pat_t *pat_op_any(ir_ctx_t *ctx, uint32_t n, const char *const *names);
pat_t *pat_const(ir_ctx_t *ctx);
pat_t *pat_var(ir_ctx_t *ctx, const char *name);          /* name NULL: any var */
pat_t *pat_dfvar(ir_ctx_t *ctx, const char *name);        /* name NULL: any dataflow var */
pat_t *pat_gvar(ir_ctx_t *ctx, const char *substr);       /* substring of the gvar name */
pat_t *pat_extern(ir_ctx_t *ctx, const char *symbol);     /* symbol NULL: any ExternFunc */
/* is_shape: dims copied; a NULL entry matches any dim. */
pat_t *pat_shape(ir_ctx_t *ctx, uint32_t ndims, const ir_prim *const *dims);

/* ---- Compound ---- */
/* callee(args...): nargs must equal the call's (pat_call_varargs: the call may have more). For
 * relax.add and relax.multiply with two args both argument orders are tried. */
pat_t *pat_call(ir_ctx_t *ctx, const pat_t *callee, uint32_t nargs, const pat_t *const *args);
pat_t *pat_call_varargs(ir_ctx_t *ctx, const pat_t *callee, uint32_t nargs,
                        const pat_t *const *args);
/* Shorthands: an op call by op name (NULL when the op is unknown). */
pat_t *pat_call_op(ir_ctx_t *ctx, const char *op, uint32_t nargs, const pat_t *const *args);
pat_t *pat_call1(ir_ctx_t *ctx, const char *op, const pat_t *a0);
pat_t *pat_call2(ir_ctx_t *ctx, const char *op, const pat_t *a0, const pat_t *a1);
/* R.call_dps_packed("symbol", (args...)) with any out_sinfo; symbol NULL: any ExternFunc. */
pat_t *pat_call_dps_packed(ir_ctx_t *ctx, const char *symbol, uint32_t nargs,
                           const pat_t *const *args);
/* R.call_tir(gvar, (args...)) with any out_sinfo; gvar_substr NULL: any global var. */
pat_t *pat_call_tir(ir_ctx_t *ctx, const char *gvar_substr, uint32_t nargs,
                    const pat_t *const *args);
pat_t *pat_tuple(ir_ctx_t *ctx, uint32_t n, const pat_t *const *fields);
pat_t *pat_tuple_unordered(ir_ctx_t *ctx, uint32_t n, const pat_t *const *fields);
pat_t *pat_tgi(ir_ctx_t *ctx, const pat_t *tuple, int32_t index);   /* index -1: any */
pat_t *pat_func(ir_ctx_t *ctx, uint32_t nparams, const pat_t *const *params, const pat_t *body);

/* ---- Constraints (each returns a new node wrapping p) ---- */
pat_t *pat_has_dtype(ir_ctx_t *ctx, const pat_t *p, ir_dtype dtype);
/* ndim -1: any rank. dims (ndim entries, copied) may hold NULL for "any dim"; dims NULL: only the
 * rank is checked. Prims are canonical, so n + m equals m + n by pointer. */
pat_t *pat_has_shape(ir_ctx_t *ctx, const pat_t *p, int32_t ndim, const ir_prim *const *dims);
pat_t *pat_has_sinfo(ir_ctx_t *ctx, const pat_t *p, const ir_sinfo *sinfo);
pat_t *pat_has_attr(ir_ctx_t *ctx, const pat_t *p, const ir_attrs *attrs);

/* ---- Logic ---- */
pat_t *pat_or(ir_ctx_t *ctx, const pat_t *a, const pat_t *b);
pat_t *pat_and(ir_ctx_t *ctx, const pat_t *a, const pat_t *b);
pat_t *pat_not(ir_ctx_t *ctx, const pat_t *a);
/* `with` when it matches (it should contain `base`), else `base`: maximal first. */
pat_t *pat_optional(ir_ctx_t *ctx, const pat_t *base, const pat_t *with);

/* A copy of p carrying an annotation name (interned). Use the returned node in the pattern:
 * its match is reported under `name` (pat_match_named, pat_check_ctx.named). */
pat_t *pat_name(ir_ctx_t *ctx, const pat_t *p, const char *name);

/* The op names a match of p can be rooted at (for indexing tables by root op): writes up to
 * `max` interned op names and returns how many there are, or -1 when p can match something that
 * is not an op call (a wildcard root, a tuple, ...). */
int pat_root_ops(const pat_t *p, const char **out, int max);
const char *pat_kind_name(pat_kind k);
/* A one-line debug form: relu(add(conv2d(*, *), const)); a sub-pattern used twice prints as
 * #k=... the first time and #k after. */
void pat_dump(const pat_t *p, FILE *out);

#endif
