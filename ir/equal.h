/* Structural equality and hashing. Vars (and symbolic dim vars) are compared up to renaming
 * (alpha-equivalence) where they are defined: function params, bindings, match_cast shapes.
 * Free vars compare by identity. */
#ifndef GRAFT_IR_EQUAL_H
#define GRAFT_IR_EQUAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/expr.h"

enum {
    IR_EQ_SPANS = 1u << 0,    /* spans must be equal too */
    IR_EQ_NAMES = 1u << 1,    /* var names must be equal too */
    IR_EQ_FUNCS_BY_NAME = 1u << 2, /* modules: functions are matched by global name, in any
                                      order (an IRModule is a map, as TVM compares them) */
};

bool ir_struct_equal(const ir_expr *a, const ir_expr *b, unsigned flags);
/* Same function names in the same order, equal functions, equal module attrs. */
bool ir_module_struct_equal(const ir_module *a, const ir_module *b, unsigned flags);
/* Consistent with ir_struct_equal for the same flags. */
uint64_t ir_struct_hash(const ir_expr *e, unsigned flags);
uint64_t ir_module_struct_hash(const ir_module *m, unsigned flags);
/* When not equal: writes a short description of the first difference (a path and the two
 * sides) to buf. Returns the same result as ir_module_struct_equal. */
bool ir_module_struct_equal_explain(const ir_module *a, const ir_module *b, unsigned flags,
                                    char *buf, size_t size);

#endif
