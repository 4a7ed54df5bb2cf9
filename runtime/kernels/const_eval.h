/* The runtime's constant evaluator for FoldConstant (ir_const_eval_fn, ir/transform/transform.h): runs an
 * op call whose arguments are all known on the reference kernels. The IR cannot include the
 * runtime, so the runtime hands the pass this function. */
#ifndef GRAFT_RUNTIME_KERNELS_CONST_EVAL_H
#define GRAFT_RUNTIME_KERNELS_CONST_EVAL_H

#include "base/api.h"
#include "base/tensor.h"
#include "ir/expr.h"

/* The value of `call` as a new tensor, or NULL to leave it for run time: an op without a
 * reference kernel, an argument that is not a constant, a static shape, a scalar or a string, a
 * result that is not one tensor, or a kernel error (the run reports it). `user` is unused. */
rt_tensor *rt_const_eval(void *user, const ir_call *call);
/* Makes rt_const_eval FoldConstant's evaluator for the modules of ctx (ir_ctx_set_const_eval):
 * without it (or another evaluator) the default pipeline folds no op call. */
GR_API void rt_const_eval_attach(ir_ctx_t *ctx);

#endif
