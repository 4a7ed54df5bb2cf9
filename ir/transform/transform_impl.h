/* Internal layout of the pass context (ir/transform*.c and ir/transform/si_builder.c only). */
#ifndef GRAFT_IR_TRANSFORM_TRANSFORM_IMPL_H
#define GRAFT_IR_TRANSFORM_TRANSFORM_IMPL_H

#include "ir/transform/transform.h"

#define IR_CONFIG_SI_BUILDER "ir.enable_si_builder"

typedef struct forced_pass {
    char *name;
    bool on;
} forced_pass;

typedef struct config_entry {
    char *key;
    ir_config_value val;
    char *str;                    /* owned copy for string values */
} config_entry;

struct ir_pass_ctx {
    int opt_level;
    bool si_enabled;              /* cached "ir.enable_si_builder" (read on every fill) */
    GR_VEC(forced_pass) forced;
    GR_VEC(config_entry) config;
    GR_VEC(ir_instrument *) instruments;
    gr_map var_notes;             /* old var -> replacement, recorded by the running function pass */
    bool const_eval_set;          /* FoldConstant's evaluator given here (else the module ctx's) */
    ir_const_eval_fn const_eval;  /* ... (NULL: none) and its user pointer */
    void *const_eval_user;
};

/* SIBuilder switch for the current pass context (true outside of passes). */
bool ir__si_enabled_slow(void);

/* Records a pass's var replacements (old var -> new expr) for the var_map update. */
void ir__pass_ctx_note_remap(ir_pass_ctx_t *pc, const gr_map *remap);

#endif
