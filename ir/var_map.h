/* The `var_map` function attribute (seed 000): a best-effort map from the vars the importer
 * created to their current equivalents, kept up to date by the pass manager across passes.
 *
 * Form: R.func_attr({"var_map": {"x": "x", "lv3": "lv3_fused", "lv7": None}}): keys are the
 * importer's var names, values the name of the var that now holds the same value, or None when
 * a pass eliminated it (folded into a constant, dead code, merged away). Names keep the text
 * format round trip; vars are found by name (the first var of that name, params first). */
#ifndef GRAFT_IR_VAR_MAP_H
#define GRAFT_IR_VAR_MAP_H

#include "ir/expr.h"

#define IR_VAR_MAP_ATTR "var_map"

/* f with a var_map mapping every param and binding var to itself (f unchanged when it already
 * has one). */
ir_func *ir_var_map_init(ir_ctx_t *ctx, ir_func *f);
/* Every function of m (not external ones) with a var_map; returns a new module. */
ir_module *ir_var_map_init_module(const ir_module *m);

/* `after` (a pass's result for `before`) with before's var_map updated: entries whose var is
 * still defined keep it; others follow `remap` (old var -> replacement expr, as recorded by the
 * pass); a replacement that is not a var, or a var no longer defined, maps to None. Returns
 * `after` itself when before has no var_map. */
ir_func *ir_var_map_update(ir_ctx_t *ctx, const ir_func *before, ir_func *after, const gr_map *remap);

typedef enum ir_var_map_state {
    IR_VAR_MAP_UNKNOWN,     /* no var_map, or the name is not in it */
    IR_VAR_MAP_PRESENT,     /* *out is the current var */
    IR_VAR_MAP_ELIMINATED,  /* a pass removed it: the map says None */
} ir_var_map_state;

/* Looks up the current equivalent of the importer var `name` in f. */
ir_var_map_state ir_var_map_lookup(const ir_func *f, const char *name, ir_var **out);

#endif
