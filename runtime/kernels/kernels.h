/* Reference kernels in plain C: one per op of the op table, correct first, reasonably fast.
 * Kernels compute their own output shapes (from inputs and attrs) and allocate their outputs.
 * They read attributes by the op table's names (TVM's names and defaults). */
#ifndef GRAFT_RUNTIME_KERNELS_KERNELS_H
#define GRAFT_RUNTIME_KERNELS_KERNELS_H

#include "ir/op.h"
#include "runtime/value.h"

typedef struct rt_kernel_call {
    const ir_op_def *op;
    const ir_attrs *attrs;        /* normalized: every schema field present */
    const rt_value *args;         /* the call's arguments, in order */
    uint32_t nargs;
    const ir_sinfo *out_sinfo;    /* struct info of the call (may hold symbolic dims) */
    const ir_span *span;          /* for error messages */
} rt_kernel_call;

/* Fills *out (a tensor, or a tuple for split); returns GR_OK, or an error naming the op, the
 * layer (from span) and the shapes. */
typedef gr_status (*rt_kernel_fn)(const rt_kernel_call *call, rt_value *out, gr_diag *diag);

/* The kernel for an op, or NULL when the op has none. */
rt_kernel_fn rt_kernel_find(const ir_op_def *op);
/* Convenience: looks the kernel up and runs it. */
gr_status rt_kernel_run(const rt_kernel_call *call, rt_value *out, gr_diag *diag);

/* Output placement hint (thread-local, one shot): the next output allocation of exactly `nbytes`
 * made by rt_out_new / rt_out_new_raw on this thread borrows `data` instead of the heap (zeroed
 * for rt_out_new). The executor (runtime/exec/plan.h) points it at a kernel's arena slot; a
 * kernel whose output ends up elsewhere still works (the executor copies). NULL clears it. */
void rt_kernel_out_hint(void *data, size_t nbytes);

#endif
