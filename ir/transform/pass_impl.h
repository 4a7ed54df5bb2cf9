/* Internal helpers of the generic passes (ir/transform/pass_*.c): a small binding rewriter over a
 * function's blocks (A-normal form in, A-normal form out) that keeps spans and struct info. */
#ifndef GRAFT_IR_TRANSFORM_PASS_IMPL_H
#define GRAFT_IR_TRANSFORM_PASS_IMPL_H

#include "ir/op.h"
#include "ir/transform/transform.h"
#include "ir/visit.h"

typedef struct pu_rewriter pu_rewriter;
struct pu_pending {
    uint32_t idx, seq;
    const ir_span *span;
};
struct pu_rewriter {
    ir_ctx_t *ctx;
    gr_diag *diag;
    /* Called for every binding once its value had remapped vars substituted. Push the
     * bindings that replace it to `out` (default when NULL: keep it). false on error. */
    bool (*binding)(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow);
    void *user;
    gr_map remap;              /* var -> replacement expression (a var or a leaf) */
    gr_map defs;               /* var -> its (new) bound value, for pattern lookups */
    gr_map uses;               /* var -> number of uses in the input function (pu_count_uses) */
    gr_map out_pos;            /* var -> (block serial << 32) | (1 + index in out) */
    ir_binding_vec *out;       /* bindings of the block being rebuilt */
    bool dataflow;             /* the block being rebuilt is a dataflow block */
    uint32_t block_serial;     /* bumped at the start of every block */
    GR_VEC(struct pu_pending) pending; /* span merges waiting for the end of the block */
    bool no_dataflow;          /* rebuild every block as a plain binding block */
};

void pu_init(pu_rewriter *r, ir_ctx_t *ctx, gr_diag *diag);
void pu_deinit(pu_rewriter *r);
/* Records r's var replacements in pc (for the var_map update), then deinits r. */
void pu_finish(pu_rewriter *r, ir_pass_ctx_t *pc);
/* Rebuilds f through r (nested seqs in if branches too). Returns f when nothing changed, NULL
 * on error. */
ir_func *pu_rewrite_func(pu_rewriter *r, ir_func *f);
/* Substitutes remapped vars in e (rebuilding only what changed). */
ir_expr *pu_subst(pu_rewriter *r, ir_expr *e);
/* Appends a binding (value already normalized). The var keeps its identity and its own span
 * (the printer shows it as var_span when the value's span differs). Returns the var. */
ir_var *pu_push(pu_rewriter *r, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo);
/* Emits a nested expression in A-normal form: every non-leaf argument first gets a fresh
 * dataflow var (named `hint`, with the argument's span), then the root is bound to `var`.
 * Struct info is inferred. NULL on error. */
ir_var *pu_emit_nested(pu_rewriter *r, ir_var *var, ir_expr *value, const char *hint);
/* Normalizes a flat expression (args already have struct info). NULL on error. */
ir_expr *pu_normalize(pu_rewriter *r, ir_expr *e);
/* Counts every use of every var in f into r->uses. */
void pu_count_uses(pu_rewriter *r, const ir_func *f);
/* Removes the uses made by e from r->uses (e is going away). */
void pu_uncount(pu_rewriter *r, const ir_expr *e);
/* The value bound to var in the rewritten function so far (NULL: a param or unknown). */
ir_expr *pu_def(pu_rewriter *r, const ir_expr *var);
/* Records that var is bound at the end of r->out (call after pushing to r->out directly). */
void pu_note_pos(pu_rewriter *r, const ir_var *var);
/* Index in r->out of the binding of var in the current block, or -1. */
int pu_out_index(pu_rewriter *r, const ir_var *var);
/* Adds `span` to the span of r->out[i]'s value. Merges are applied once per binding when the
 * block ends (many duplicates folding into one binding would otherwise rebuild a growing
 * SequentialSpan each time). */
void pu_merge_span(pu_rewriter *r, int i, const ir_span *span);

/* A function pass that is one binding rewrite: its ir_pass runs pu_pass_run, which reads
 * one of these from the pass's user pointer (PU_FUNC_PASS declares the pair). */
typedef struct pu_pass {
    bool (*binding)(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow);
    bool count_uses;           /* pu_count_uses before the rewrite */
    bool no_dataflow;          /* rebuild every block as a plain binding block */
    size_t state_size;         /* zeroed state at r->user for one function (0: none) */
    /* (optional) fills the state; false leaves the function as it is */
    bool (*prepare)(pu_rewriter *r, ir_pass_ctx_t *pc, const ir_module *mod, const ir_func *func);
    void (*release)(void *state);   /* (optional) frees what the state holds */
    /* (optional) runs on the rewritten function */
    gr_status (*post)(ir_ctx_t *ctx, ir_func *func, gr_diag *diag);
    gr_status fail_code;       /* a failed rewrite that left no code in the diag (0: INVALID) */
} pu_pass;

gr_status pu_pass_run(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                      const char *name, ir_func *func, ir_func **out, gr_diag *diag);
#define PU_FUNC_PASS(var, pass_name, level, ...)                                                 \
    static pu_pass var##_rewrite = {__VA_ARGS__};                                              \
    const ir_pass var = {.name = pass_name, .kind = IR_PASS_FUNCTION, .opt_level = level,       \
                         .func_fn = pu_pass_run, .user = &var##_rewrite}

/* Binding b becomes an alias of `target` (a var or leaf): later uses of b's var read target and
 * the binding goes away, its span merged into target's binding when that is in the current
 * block. `var = target` is kept instead when b's var escapes a dataflow block and target does
 * not, or when the span has nowhere else to go (target is a param, a constant, or bound in
 * another block). */
void pu_alias(pu_rewriter *r, const ir_binding *b, ir_expr *target, const ir_span *extra_span);

/* Same keys in the same order with equal values (normalized attrs of one op). */
bool pu_attrs_equal(const ir_attrs *a, const ir_attrs *b);
/* e as a call of op `op` (NULL when e is not one). */
ir_call *pu_op_call(ir_expr *e, ir_op_id op);
/* A scalar constant (0-d tensor) of dtype with value v, span given. */
ir_expr *pu_scalar(ir_ctx_t *ctx, ir_dtype dtype, double v, const ir_span *span);
/* The constant's single value when every element equals it (any shape). */
bool pu_const_uniform(const ir_expr *e, double *v);
/* Built op call with normalized attrs (given as key/value arrays, rest defaulted). */
ir_expr *pu_call(pu_rewriter *r, ir_op_id op, uint32_t nargs, ir_expr *const *args,
                 uint32_t nattrs, const char *const *keys, const ir_attr *vals, const ir_span *span);

/* Normalizes an axis into [0, ndim); false when out of range. */
bool ir__decompose_axis(int64_t axis, int32_t ndim, int32_t *out);

#endif
