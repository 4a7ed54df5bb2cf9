/* Well-formedness: SSA (each var defined once, used after its definition, in scope), dataflow
 * vars used only inside their dataflow block, R.output vars are plain Vars, struct info present
 * and consistent (a var's struct info is a base of its value's; op calls re-infer), calls of
 * global functions resolve, symbolic vars defined before use. */
#ifndef GRAFT_IR_WELLFORMED_H
#define GRAFT_IR_WELLFORMED_H

#include "ir/expr.h"

/* GR_OK, or GR_ERR_WELLFORMED with a diag naming the function, the var and the span's layer. */
gr_status ir_wellformed_check(const ir_module *m, gr_diag *diag);

#endif
