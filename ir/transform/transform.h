/* The pass manager (seed 003, TVM's PassContext / Sequential): passes, a pass context with the
 * opt level, passes forced on or off by name, typed config and instruments, and a registry.
 *
 *     ir_pass_ctx_t *pc = ir_pass_ctx_new();
 *     ir_pass_ctx_set_opt_level(pc, 3);
 *     ir_instrument *timing = ir_pass_ctx_add_instrument(pc, ir_instrument_timing_new());
 *     ir_pass *seq = NULL;
 *     if (ir_pass_sequential_from_names("Normalize,DeadCodeElimination", &seq, &diag) == GR_OK &&
 *         ir_pass_run(seq, pc, mod, &out, &diag) == GR_OK)
 *         ir_instrument_timing_print(timing, stderr);
 *     ir_pass_free(seq);
 *     ir_pass_ctx_free(pc);           // also frees the instruments it holds
 *
 * Contract for every pass: the input module is never modified (modules and nodes are shared
 * with snapshots); a pass returns the input itself when nothing changed, or a new module
 * (ir_module_copy + edits). Nodes are immutable, so a snapshot is just the module pointer. */
#ifndef GRAFT_IR_TRANSFORM_TRANSFORM_H
#define GRAFT_IR_TRANSFORM_TRANSFORM_H

#include "base/api.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/tensor.h"
#include "ir/expr.h"

typedef struct ir_pass_ctx ir_pass_ctx_t;
typedef struct ir_pass ir_pass;

typedef enum ir_pass_kind {
    IR_PASS_MODULE,       /* module -> module */
    IR_PASS_FUNCTION,     /* each function without a Codegen attribute, one at a time */
    IR_PASS_DATAFLOW,     /* each dataflow block of each such function (nested ones too) */
    IR_PASS_SEQUENTIAL,   /* a list of passes */
} ir_pass_kind;

/* *out = mod when unchanged, else a new module. Must not modify mod. */
typedef gr_status (*ir_module_pass_fn)(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                                       ir_module **out, gr_diag *diag);
/* *out = func when unchanged. `name` is the function's global name. */
typedef gr_status (*ir_func_pass_fn)(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                                     const char *name, ir_func *func, ir_func **out, gr_diag *diag);
/* *out = blk when unchanged. The vars a block exports (plain Vars) must stay defined. */
typedef gr_status (*ir_block_pass_fn)(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                                      const ir_block *blk, const ir_block **out, gr_diag *diag);

/* A pass descriptor. Built-in passes are static const descriptors; ir_pass_new makes heap ones. */
struct ir_pass {
    const char *name;
    ir_pass_kind kind;
    int opt_level;                   /* runs when <= the context's opt level (or forced on) */
    const char *const *required;     /* NULL-terminated names run before this pass, or NULL */
    ir_module_pass_fn module_fn;     /* IR_PASS_MODULE */
    ir_func_pass_fn func_fn;         /* IR_PASS_FUNCTION */
    ir_block_pass_fn block_fn;       /* IR_PASS_DATAFLOW */
    uint32_t npasses;                /* IR_PASS_SEQUENTIAL */
    const ir_pass *const *passes;    /* IR_PASS_SEQUENTIAL: borrowed unless owned below */
    void *user;                      /* pass parameters (e.g. BindParams' tensors) */
    void (*user_free)(void *user);   /* (optional) called by ir_pass_free */
    uint32_t owned_;                 /* internal: bit 0 heap descriptor, bit 1 owns passes[] */
};

/* A heap copy of `tmpl` (name, required and the user pointer are shared, not copied); pair
 * with ir_pass_free. */
ir_pass *ir_pass_new(const ir_pass *tmpl);
/* A Sequential of n borrowed passes (the array is copied). */
ir_pass *ir_pass_sequential_new(const char *name, int opt_level, uint32_t n,
                                const ir_pass *const *passes);
/* A Sequential from a comma-separated list of registry names ("Normalize,DeadCodeElimination").
 * Unknown names: GR_ERR_NOT_FOUND naming the pass and listing the known ones. */
gr_status ir_pass_sequential_from_names(const char *csv, ir_pass **out, gr_diag *diag);
/* Frees a heap pass (calls user_free; static descriptors and NULL are ignored). */
void ir_pass_free(ir_pass *p);

/* ---- Registry (process-global; register during start-up, not concurrently) ---- */
/* The registered pass with this name, or NULL. Built-in passes are always registered. */
const ir_pass *ir_pass_find(const char *name);
/* Registers a pass (borrowed: it must outlive its use). Replaces one of the same name. */
void ir_pass_register(const ir_pass *p);
uint32_t ir_pass_registry_count(void);
const ir_pass *ir_pass_registry_at(uint32_t i);
/* The default inference pipeline, a Sequential of built-in passes (registered as "default"). */
GR_API const ir_pass *ir_pass_default_pipeline(void);

/* ---- Pass context ---- */
typedef enum ir_config_kind { IR_CONFIG_BOOL, IR_CONFIG_INT, IR_CONFIG_FLOAT, IR_CONFIG_STR } ir_config_kind;

typedef struct ir_config_value {
    ir_config_kind kind;
    union { bool b; int64_t i; double f; const char *s; } u;  /* s: static or interned */
} ir_config_value;

/* Declares a config option (process-global, like TVM_REGISTER_PASS_CONFIG_OPTION); known:
 * "ir.enable_si_builder" (bool, default true), "ir.merge_sibling_matmuls" (bool, default
 * false). Re-declaring with the same kind is a no-op. */
void ir_config_declare(const char *key, ir_config_value dflt);

/* New context: opt level 2, no passes forced, default config, no instruments. */
ir_pass_ctx_t *ir_pass_ctx_new(void);
/* Frees the context and the instruments it holds. */
void ir_pass_ctx_free(ir_pass_ctx_t *pc);
void ir_pass_ctx_set_opt_level(ir_pass_ctx_t *pc, int opt_level);
int ir_pass_ctx_opt_level(const ir_pass_ctx_t *pc);
/* Forces a pass on whatever its opt level (TVM's required_pass) / off (disabled_pass). */
void ir_pass_ctx_force_on(ir_pass_ctx_t *pc, const char *name);
void ir_pass_ctx_force_off(ir_pass_ctx_t *pc, const char *name);
/* True when `p` would run in this context (off beats on, on beats the opt level). */
bool ir_pass_ctx_pass_enabled(const ir_pass_ctx_t *pc, const ir_pass *p);

/* Typed config. Unknown key: GR_ERR_NOT_FOUND; wrong kind: GR_ERR_INVALID. */
gr_status ir_pass_ctx_set_config(ir_pass_ctx_t *pc, const char *key, ir_config_value v, gr_diag *diag);
/* "key=value" as given on a command line; the value is parsed by the key's declared kind
 * (bool: true/false/1/0). */
gr_status ir_pass_ctx_set_config_str(ir_pass_ctx_t *pc, const char *key_eq_value, gr_diag *diag);
/* The value set in pc, else the declared default. Unknown key: false / 0 / NULL. */
bool ir_pass_ctx_config_bool(const ir_pass_ctx_t *pc, const char *key);
int64_t ir_pass_ctx_config_int(const ir_pass_ctx_t *pc, const char *key);
const char *ir_pass_ctx_config_str(const ir_pass_ctx_t *pc, const char *key);

/* ---- Constant evaluation (FoldConstant's hook) ----
 * The IR does not call into the runtime (layers only point down), so FoldConstant evaluates an
 * op call whose arguments are all known through an evaluator the caller installs. It returns the
 * call's value as a new tensor (FoldConstant takes the reference), or NULL to leave the call for
 * run time (no kernel for the op, or an error the run will report). The runtime's evaluator on
 * the reference kernels is rt_const_eval (runtime/kernels/const_eval.h). The evaluator is a setting of
 * an IR context (the modules built in it) or of one pass context (its runs, overriding the
 * module's): nothing process-wide, so two contexts in one program may fold differently.
 * Without an evaluator FoldConstant folds no call (it still takes the branch of an `if` on a
 * constant). */
typedef rt_tensor *(*ir_const_eval_fn)(void *user, const ir_call *call);
/* The evaluator of ctx's modules (fn NULL: none, as a new context starts). */
void ir_ctx_set_const_eval(ir_ctx_t *ctx, ir_const_eval_fn fn, void *user);
/* This pass context's evaluator, which wins over the module's; fn NULL: none, even where the
 * module's context has one. */
void ir_pass_ctx_set_const_eval(ir_pass_ctx_t *pc, ir_const_eval_fn fn, void *user);
/* The evaluator FoldConstant uses under pc (may be NULL) for modules of ctx: pc's own when it
 * was set, else ctx's (NULL: none), and its user pointer (*user, when user is not NULL). */
ir_const_eval_fn ir_pass_ctx_const_eval(const ir_pass_ctx_t *pc, const ir_ctx_t *ctx, void **user);

/* The context of the innermost ir_pass_run on this thread, or NULL outside of passes. */
ir_pass_ctx_t *ir_pass_ctx_current(void);

/* ---- Instruments (TVM PassInstrument) ---- */
typedef struct ir_instrument ir_instrument;
struct ir_instrument {
    const char *name;
    /* (optional) false skips the pass. */
    bool (*should_run)(ir_instrument *ins, const ir_pass *p, const ir_module *m);
    /* (optional) before a pass runs, with its input. */
    void (*before)(ir_instrument *ins, const ir_pass *p, const ir_module *m);
    /* (optional) after a pass ran, with its output; an error stops the pipeline. */
    gr_status (*after)(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *diag);
    /* (optional) frees the instrument itself (called by ir_pass_ctx_free). */
    void (*destroy)(ir_instrument *ins);
    void *user;
};

/* The context takes ownership; returns ins (borrowed) so callers can read its results. */
ir_instrument *ir_pass_ctx_add_instrument(ir_pass_ctx_t *pc, ir_instrument *ins);

/* Built-in instruments. They see leaf passes only (not the Sequential wrappers). */
ir_instrument *ir_instrument_timing_new(void);
uint32_t ir_instrument_timing_count(const ir_instrument *ins);
/* i-th pass run: its name and wall time in seconds. */
void ir_instrument_timing_get(const ir_instrument *ins, uint32_t i, const char **name, double *seconds);
/* One line per pass run, then the total. */
void ir_instrument_timing_print(const ir_instrument *ins, FILE *out);
/* Writes DIR/NN_passname.relax after each pass (NN counts from 00, the input is not dumped).
 * A write error stops the pipeline with GR_ERR_IO. */
ir_instrument *ir_instrument_dump_ir_new(const char *dir, bool no_spans);
/* Keeps the module after each pass (pointers only: modules are never modified). */
ir_instrument *ir_instrument_snapshots_new(void);
uint32_t ir_instrument_snapshot_count(const ir_instrument *ins);
const ir_module *ir_instrument_snapshot_get(const ir_instrument *ins, uint32_t i, const char **pass_name);
/* Runs ir_wellformed_check after each pass; a failure is GR_ERR_WELLFORMED naming the pass. */
ir_instrument *ir_instrument_wellformed_new(void);

/* ---- Running ---- */
/* Runs p on mod (a Sequential runs each enabled pass, its required passes first). Passes above
 * the opt level or forced off are skipped (*out = mod). Required passes run whatever their opt
 * level; a required pass that is forced off is GR_ERR_INVALID. pc may be NULL (defaults). */
GR_API gr_status ir_pass_run(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod, ir_module **out,
                             gr_diag *diag);

/* ---- Built-in passes (ir/transform/pass_*.c) ---- */
extern const ir_pass ir_pass_normalize;                  /* "Normalize" */
extern const ir_pass ir_pass_canonicalize_bindings;      /* "CanonicalizeBindings" */
extern const ir_pass ir_pass_dce;                        /* "DeadCodeElimination" */
extern const ir_pass ir_pass_cse;                        /* "EliminateCommonSubexpr" */
extern const ir_pass ir_pass_decompose_inference;        /* "DecomposeOpsForInference" */
extern const ir_pass ir_pass_fold_bn_conv;               /* "FoldBatchNormIntoConv" */
extern const ir_pass ir_pass_pool_before_conv1x1;        /* "PoolBeforeConv1x1" */
extern const ir_pass ir_pass_merge_siblings;             /* "MergeSiblings" */
/* Pass config (bool, default false): MergeSiblings merges matmuls too (see pass_merge_siblings.c
 * for why they are off by default). */
#define IR_CONFIG_MERGE_SIBLING_MATMULS "ir.merge_sibling_matmuls"
extern const ir_pass ir_pass_simplify_expr;              /* "SimplifyExpr" */
extern const ir_pass ir_pass_fuse_norm_gelu;             /* "FuseLayerNormGelu" */
extern const ir_pass ir_pass_fold_constant;              /* "FoldConstant" */
extern const ir_pass ir_pass_to_non_dataflow;            /* "ToNonDataflow" */
extern const ir_pass ir_pass_bind_params_attr;           /* "BindParams": from the "params" attr */

/* BindParams (TVM relax.transform.BindParams): replaces params of function `func_name` whose
 * names match by constants holding the given tensors (retained). Arrays are copied. */
ir_pass *ir_pass_bind_params_new(const char *func_name, uint32_t n, const char *const *names,
                                 struct rt_tensor *const *tensors);

/* ---- Span coverage ---- */
/* The frontend layers named in some span of `before` that appear in no span of `after`: a heap
 * array of interned names (caller frees it with free(); *n gets the count, NULL when none). */
const char **ir_lost_layers(const ir_module *before, const ir_module *after, uint32_t *n);
/* Same for output marks (seed 002): layers with an expression marked as producing their output
 * in `before` ("conv1"!) but none in `after`. */
const char **ir_lost_outputs(const ir_module *before, const ir_module *after, uint32_t *n);

#endif
