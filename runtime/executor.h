/* The reference executor: runs any function of an IRModule on the reference kernels, including
 * calls of other functions, if/else, tuples, match_cast checks and call_dps_packed into the
 * runtime modules of the module's `external_mods`. */
#ifndef GRAFT_RUNTIME_EXECUTOR_H
#define GRAFT_RUNTIME_EXECUTOR_H

#include "ir/expr.h"
#include "runtime/value.h"

typedef struct rt_exec rt_exec_t;

/* Prepares `func` (e.g. "main") of m: resolves kernels and externs once. The module and its
 * context must outlive the executor. Pair with rt_exec_free(). */
gr_status rt_exec_new(const ir_module *m, const char *func, rt_exec_t **out, gr_diag *diag);
void rt_exec_free(rt_exec_t *x);
uint32_t rt_exec_num_inputs(const rt_exec_t *x);
/* Name and struct info of input i. */
const char *rt_exec_input_name(const rt_exec_t *x, uint32_t i);
const ir_sinfo *rt_exec_input_sinfo(const rt_exec_t *x, uint32_t i);
/* Runs with `nin` inputs (borrowed). Inputs are checked against the params' struct info (dtype,
 * rank, static dims, symbolic dims bound consistently): a mismatch is GR_ERR_INVALID naming the
 * input. The result (a tensor or a tuple) is owned by the caller: rt_value_clear() it. */
gr_status rt_exec_run(rt_exec_t *x, const rt_value *inputs, uint32_t nin, rt_value *result,
                      gr_diag *diag);

#endif
