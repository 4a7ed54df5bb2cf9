/* Relax-style expressions, bindings, blocks, functions and modules.
 *
 * All nodes live in the context arena (ir/ctx.h) and are immutable once published: a pass builds
 * new nodes and shares the unchanged ones. The one exception is struct info, which a node built
 * without it gets exactly once from the normalizer (ir_expr_set_sinfo), as TVM's normalizer
 * fills struct_info_. Every expression has a unique id (dense per context) and a span (NULL
 * when none).
 *
 * Downcasts: IR_AS(e, ir_call) checks the kind in debug builds; test with e->kind. */
#ifndef GRAFT_IR_EXPR_H
#define GRAFT_IR_EXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/attrs.h"
#include "ir/ctx.h"
#include "ir/sinfo.h"
#include "ir/span.h"

struct rt_tensor;
struct ir_op_def;

typedef enum ir_expr_kind {
    IR_VAR,         /* ir_var */
    IR_DFVAR,       /* ir_var, a dataflow var (only visible inside its dataflow block) */
    IR_CONST,       /* ir_const */
    IR_TUPLE,       /* ir_tuple */
    IR_TGI,         /* ir_tgi: tuple[index] */
    IR_CALL,        /* ir_call */
    IR_OP,          /* ir_op */
    IR_GVAR,        /* ir_gvar */
    IR_EXTERN,      /* ir_extern: R.ExternFunc("symbol") */
    IR_FUNC,        /* ir_func */
    IR_SEQ,         /* ir_seq */
    IR_IF,          /* ir_if */
    IR_SHAPE,       /* ir_shape_expr: R.shape([1, n]) */
    IR_PRIMVAL,     /* ir_primval: R.prim_value(1) */
    IR_STR,         /* ir_str: R.str("abc") */
    IR_EXPR_KIND_COUNT
} ir_expr_kind;

typedef struct ir_expr {
    uint8_t kind;              /* ir_expr_kind */
    uint8_t flags;             /* reserved, 0 */
    uint32_t id;               /* unique in the context */
    const ir_span *span;       /* NULL: none */
    const ir_sinfo *sinfo;     /* NULL until normalized */
} ir_expr;

typedef struct ir_var {        /* IR_VAR, IR_DFVAR */
    ir_expr base;
    const char *name;          /* interned name hint; not unique */
} ir_var;

typedef struct ir_const {      /* IR_CONST */
    ir_expr base;
    struct rt_tensor *data;    /* one reference held by the context */
} ir_const;

typedef struct ir_tuple {      /* IR_TUPLE */
    ir_expr base;
    uint32_t n;
    ir_expr *const *fields;
} ir_tuple;

typedef struct ir_tgi {        /* IR_TGI */
    ir_expr base;
    ir_expr *tuple;
    int32_t index;
} ir_tgi;

typedef struct ir_call {       /* IR_CALL */
    ir_expr base;
    ir_expr *callee;           /* ir_op, ir_gvar, ir_extern, a var of function type, ir_func */
    uint32_t nargs;
    ir_expr *const *args;
    const ir_attrs *attrs;     /* op calls: normalized to the op's schema; NULL when none */
    uint32_t nsinfo_args;      /* e.g. out_sinfo of call_dps_packed */
    const ir_sinfo *const *sinfo_args;
} ir_call;

typedef struct ir_op {         /* IR_OP: one node per op per context */
    ir_expr base;
    const struct ir_op_def *def;
} ir_op;

typedef struct ir_gvar {       /* IR_GVAR */
    ir_expr base;
    const char *name;          /* interned */
} ir_gvar;

typedef struct ir_extern {     /* IR_EXTERN */
    ir_expr base;
    const char *symbol;        /* interned */
} ir_extern;

typedef struct ir_binding {
    ir_var *var;
    ir_expr *value;
    const ir_sinfo *match_sinfo; /* non-NULL: MatchCast(value, match_sinfo) */
} ir_binding;

typedef struct ir_block {
    bool dataflow;             /* `with R.dataflow():` */
    uint32_t n;
    const ir_binding *bindings;
} ir_block;

typedef struct ir_seq {        /* IR_SEQ */
    ir_expr base;
    uint32_t nblocks;
    const ir_block *const *blocks;
    ir_expr *body;
} ir_seq;

typedef struct ir_func {       /* IR_FUNC */
    ir_expr base;
    uint32_t nparams;
    ir_var *const *params;
    ir_expr *body;             /* usually an ir_seq */
    const ir_sinfo *ret_sinfo; /* NULL: inferred from the body */
    const ir_attrs *attrs;     /* Composite, Codegen, Primitive, global_symbol, ... */
} ir_func;

typedef struct ir_if {         /* IR_IF */
    ir_expr base;
    ir_expr *cond;
    ir_expr *then_branch;      /* ir_seq */
    ir_expr *else_branch;      /* ir_seq */
} ir_if;

typedef struct ir_shape_expr { /* IR_SHAPE */
    ir_expr base;
    uint32_t n;
    const ir_prim *const *dims;
} ir_shape_expr;

typedef struct ir_primval {    /* IR_PRIMVAL */
    ir_expr base;
    ir_dtype dtype;            /* int64 for symbolic values */
    const ir_prim *value;      /* integer value (may be symbolic); NULL for a float */
    double fvalue;             /* float value when dtype is float */
} ir_primval;

typedef struct ir_str {        /* IR_STR */
    ir_expr base;
    const char *value;         /* interned */
} ir_str;

#ifdef NDEBUG
#define IR_AS(e, T) ((T *)(e))
#else
#define IR_AS(e, T) ((T *)ir__checked_cast((e), IR__KINDS_##T))
#endif
/* Bit masks of the kinds each struct covers (for IR_AS). */
#define IR__KINDS_ir_var ((1u << IR_VAR) | (1u << IR_DFVAR))
#define IR__KINDS_ir_const (1u << IR_CONST)
#define IR__KINDS_ir_tuple (1u << IR_TUPLE)
#define IR__KINDS_ir_tgi (1u << IR_TGI)
#define IR__KINDS_ir_call (1u << IR_CALL)
#define IR__KINDS_ir_op (1u << IR_OP)
#define IR__KINDS_ir_gvar (1u << IR_GVAR)
#define IR__KINDS_ir_extern (1u << IR_EXTERN)
#define IR__KINDS_ir_func (1u << IR_FUNC)
#define IR__KINDS_ir_seq (1u << IR_SEQ)
#define IR__KINDS_ir_if (1u << IR_IF)
#define IR__KINDS_ir_shape_expr (1u << IR_SHAPE)
#define IR__KINDS_ir_primval (1u << IR_PRIMVAL)
#define IR__KINDS_ir_str (1u << IR_STR)
void *ir__checked_cast(const void *e, uint32_t kinds);

static inline bool ir_is_var(const ir_expr *e) { return e && (e->kind == IR_VAR || e->kind == IR_DFVAR); }
/* Leaf = may appear as a call argument in A-normal form without a binding. */
bool ir_is_leaf(const ir_expr *e);
const char *ir_expr_kind_name(ir_expr_kind k);

/* ---- Constructors. Arrays are copied; struct info is left NULL unless given. ---- */
ir_var *ir_var_new(ir_ctx_t *ctx, const char *name, const ir_sinfo *sinfo, const ir_span *span);
ir_var *ir_dfvar_new(ir_ctx_t *ctx, const char *name, const ir_sinfo *sinfo, const ir_span *span);
/* Takes a new reference to data (the context releases it on free). Struct info = its tensor. */
ir_const *ir_const_new(ir_ctx_t *ctx, struct rt_tensor *data, const ir_span *span);
ir_tuple *ir_tuple_new(ir_ctx_t *ctx, uint32_t n, ir_expr *const *fields, const ir_span *span);
ir_tgi *ir_tgi_new(ir_ctx_t *ctx, ir_expr *tuple, int32_t index, const ir_span *span);
ir_call *ir_call_new(ir_ctx_t *ctx, ir_expr *callee, uint32_t nargs, ir_expr *const *args,
                     const ir_attrs *attrs, uint32_t nsinfo_args,
                     const ir_sinfo *const *sinfo_args, const ir_span *span);
/* The Op node for an op name ("relax.add" or "R.add"); NULL when no such op. Code that knows
 * the op uses its id: ir_op_get_id (ir/op.h). */
ir_op *ir_op_get(ir_ctx_t *ctx, const char *name);
ir_op *ir_op_get_def(ir_ctx_t *ctx, const struct ir_op_def *def);
ir_gvar *ir_gvar_new(ir_ctx_t *ctx, const char *name);
ir_extern *ir_extern_new(ir_ctx_t *ctx, const char *symbol, const ir_span *span);
ir_block *ir_block_new(ir_ctx_t *ctx, bool dataflow, uint32_t n, const ir_binding *bindings);
ir_seq *ir_seq_new(ir_ctx_t *ctx, uint32_t nblocks, const ir_block *const *blocks, ir_expr *body,
                   const ir_span *span);
ir_func *ir_func_new(ir_ctx_t *ctx, uint32_t nparams, ir_var *const *params, ir_expr *body,
                     const ir_sinfo *ret_sinfo, const ir_attrs *attrs, const ir_span *span);
ir_if *ir_if_new(ir_ctx_t *ctx, ir_expr *cond, ir_expr *then_branch, ir_expr *else_branch,
                 const ir_span *span);
ir_shape_expr *ir_shape_expr_new(ir_ctx_t *ctx, uint32_t n, const ir_prim *const *dims,
                                 const ir_span *span);
ir_primval *ir_primval_int(ir_ctx_t *ctx, const ir_prim *value, const ir_span *span);
ir_primval *ir_primval_float(ir_ctx_t *ctx, ir_dtype dtype, double value, const ir_span *span);
ir_str *ir_str_new(ir_ctx_t *ctx, const char *value, const ir_span *span);

/* Fills struct info of a node that has none (the normalizer's one write); asserts otherwise
 * unless the new info is the same pointer. */
void ir_expr_set_sinfo(ir_expr *e, const ir_sinfo *sinfo);
/* A shallow copy of e with another span (fresh id, same children and struct info). Vars are
 * never copied (identity matters): for a var this returns e unchanged. */
ir_expr *ir_expr_with_span(ir_ctx_t *ctx, const ir_expr *e, const ir_span *span);
/* A shallow copy of a function with other attrs. */
ir_func *ir_func_with_attrs(ir_ctx_t *ctx, const ir_func *f, const ir_attrs *attrs);
/* The function's struct info: R.Callable((param sinfo...), ret). */
const ir_sinfo *ir_func_sinfo(ir_ctx_t *ctx, const ir_func *f);

/* A TIR function (`@T.prim_func`), which graft keeps but does not model: a function of no
 * params whose attribute "graft.tir_text" holds its TVMScript text verbatim (dedented to column
 * 0, decorator included). The printer writes the text back; partitioning never enters it; the
 * executors refuse to run it, naming it. `is_private`: no global_symbol. */
/* A PrimFunc's struct info from its text: opaque params; returns R.Tuple() unless the header
 * declares a return type (then R.Object). */
const ir_sinfo *ir_func_tir_sinfo(ir_ctx_t *ctx, const char *text);
ir_func *ir_func_tir_new(ir_ctx_t *ctx, const char *name, const char *text, bool is_private);
/* The verbatim text of a TIR function, or NULL for any other expression. */
const char *ir_func_tir_text(const ir_expr *f);

struct ir_module;
/* Why an executor refuses `R.call_tir(callee, ...)` of module m (graft runs no TIR): a message
 * naming the callee, written into buf. */
const char *ir_call_tir_refusal(const struct ir_module *m, const ir_call *call, char *buf, size_t n);

/* ---- IRModule: an ordered map from global names to functions, plus module attrs. ---- */
typedef struct ir_module {
    ir_ctx_t *ctx;
    uint32_t nfuncs, cap;
    ir_gvar **gvars;           /* gvars[i]->name names funcs[i] */
    ir_expr **funcs;           /* ir_func */
    const ir_attrs *attrs;     /* external_mods, const_name_to_constant, ... */
    uint32_t *index_;          /* private to expr.c: name hash table of positions + 1 (NULL: none) */
    uint32_t index_cap_;
} ir_module;

/* Modules live in the arena too (no free). Copies share functions and attrs. */
ir_module *ir_module_new(ir_ctx_t *ctx);
ir_module *ir_module_copy(const ir_module *m);
/* The gvar for `name` in this module, or NULL. */
ir_gvar *ir_module_gvar(const ir_module *m, const char *name);
ir_func *ir_module_func(const ir_module *m, const char *name);
/* Adds (appending) or replaces the function for gvar's name. Returns the gvar stored. */
ir_gvar *ir_module_set(ir_module *m, ir_gvar *gvar, ir_expr *func);
/* Same, creating the gvar from the name when the module has none for it. */
ir_gvar *ir_module_set_func(ir_module *m, const char *name, ir_expr *func);
void ir_module_remove(ir_module *m, const char *name);
void ir_module_set_attr(ir_module *m, const char *key, ir_attr val);

#endif
