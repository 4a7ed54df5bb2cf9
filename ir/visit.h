/* Traversal: a walker (SQLite's Walker: callbacks return CONTINUE, PRUNE or ABORT) and a mutator
 * (rebuilds only what changed, keeps spans, re-normalizes rebuilt nodes). */
#ifndef GRAFT_IR_VISIT_H
#define GRAFT_IR_VISIT_H

#include "ir/expr.h"

typedef enum ir_walk_result {
    IR_WALK_CONTINUE = 0,  /* visit the children */
    IR_WALK_PRUNE = 1,     /* skip the children of this node */
    IR_WALK_ABORT = 2,     /* stop the whole walk */
} ir_walk_result;

typedef struct ir_walker ir_walker;
struct ir_walker {
    /* Pre-order on every expression reached (a shared node, vars included, is visited once per
     * walk; a binding's var is reached after its value). PRUNE skips the children and the
     * leave_expr call of that node. */
    ir_walk_result (*visit_expr)(ir_walker *w, ir_expr *e);          /* (optional) */
    /* Before a binding's value is walked; PRUNE skips the value and the var. */
    ir_walk_result (*visit_binding)(ir_walker *w, const ir_binding *b, const ir_block *blk); /* (optional) */
    /* Post-order on every expression (after its children). */
    void (*leave_expr)(ir_walker *w, ir_expr *e);                    /* (optional) */
    bool skip_local_funcs; /* do not descend into the bodies of local functions */
    void *user;
};

/* Walks e and everything below it. Returns IR_WALK_ABORT when a callback aborted. */
ir_walk_result ir_walk_expr(ir_walker *w, ir_expr *e);
/* Walks every function of a module in order. */
ir_walk_result ir_walk_module(ir_walker *w, const ir_module *m);

typedef GR_VEC(ir_binding) ir_binding_vec;

typedef struct ir_mutator ir_mutator;
struct ir_mutator {
    ir_ctx_t *ctx;
    gr_diag *diag;
    /* Called after the children of e were mutated into `e` (which is the original node when no
     * child changed; var uses arrive already remapped). Return e to keep it, another expression
     * to replace it (normalized here if it has no struct info), NULL on error. */
    ir_expr *(*post_expr)(ir_mutator *m, ir_expr *e);                       /* (optional) */
    /* Called for a binding after its value was mutated: return false on error. The default
     * (NULL) re-emits the binding, keeping the var when the value's struct info is unchanged and
     * making a new var with the same name and span otherwise. */
    bool (*rewrite_binding)(ir_mutator *m, const ir_binding *b, ir_expr *new_value,
                            ir_binding_vec *out);                      /* (optional) */
    void *user;
    /* Optional: resolves calls of global functions when rebuilt nodes are re-normalized. */
    const ir_module *module;
    /* Internal: var remapping (old var -> new var) maintained by the mutator. */
    gr_map var_remap;
    /* Internal: expression id -> result, so a shared node is rebuilt once (an id table). */
    void *memo_;
};

void ir_mutator_init(ir_mutator *m, ir_ctx_t *ctx, gr_diag *diag);
void ir_mutator_deinit(ir_mutator *m);
/* Mutates e; returns the (possibly same) result or NULL with diag filled. */
ir_expr *ir_mutate_expr(ir_mutator *m, ir_expr *e);
/* Records that uses of `from` should now read `to`. */
void ir_mutator_remap_var(ir_mutator *m, ir_var *from, ir_var *to);
/* The default binding rewrite (for rewrite_binding hooks that keep most bindings): appends
 * (var, new_value), replacing the var by a fresh one (same kind, name and span) when the
 * value's struct info changed, and remapping later uses. */
bool ir_mutator_emit_binding(ir_mutator *m, const ir_binding *b, ir_expr *new_value,
                             ir_binding_vec *out);
/* Mutates every function of `mod` into a new module (same names and attrs; the module is
 * returned unchanged when no function changed). NULL with diag filled on error. */
ir_module *ir_mutate_module(ir_mutator *m, const ir_module *mod);

#endif
