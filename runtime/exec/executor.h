/* The executor (runtime/exec/executor.c; the one behind `graft run MODEL`, `graft run M.graft` and
 * deploy/graft_model.h): runs any function of an IRModule on the reference kernels, including
 * calls of other functions, if/else, tuples, match_cast checks, symbolic dims and
 * call_dps_packed into the runtime modules of the module's `external_mods`. rt_exec_new is
 * rt_px_new without a host lowering (runtime/exec/plan.h: fused host kernels, the memory plan). */
#ifndef GRAFT_RUNTIME_EXEC_EXECUTOR_H
#define GRAFT_RUNTIME_EXEC_EXECUTOR_H

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

/* Optional profiling: called after every instruction that does work (op kernel, extern call,
 * function call, tuple/match bookkeeping) with its elapsed time. kind is "op", "extern", "call"
 * or "other"; name the op ("R.add"), the extern symbol or the callee; var the binding var. */
typedef struct rt_exec_event {
    const char *kind;
    const char *name;
    const char *var;
    const ir_span *span;
    uint64_t ns;
} rt_exec_event;
typedef void (*rt_exec_profile_fn)(const rt_exec_event *ev, void *user);
/* fn NULL turns profiling off. */
void rt_exec_set_profiler(rt_exec_t *x, rt_exec_profile_fn fn, void *user);
/* Optional debug tap (graft diff): called after every op kernel and tuple item of the host
 * code with the value it produced (owned by the executor, valid during the call only: its data
 * may live in a planned buffer that a later op reuses; copy what you keep). Calls of
 * runtime modules are not tapped: their engines tap their own intermediates
 * (rt_json_graph_set_tap). The tap may change a tensor's data in place (a test's perturbation);
 * the run goes on with the changed value. fn NULL turns it off. */
typedef void (*rt_exec_tap_fn)(const rt_exec_event *ev, rt_value *value, void *user);
void rt_exec_set_tap(rt_exec_t *x, rt_exec_tap_fn fn, void *user);
/* The largest number of slot values (vars and temporaries, over all active frames) alive at once
 * during the last run: liveness releases each value after its last use. */
uint32_t rt_exec_peak_live(const rt_exec_t *x);

#endif
