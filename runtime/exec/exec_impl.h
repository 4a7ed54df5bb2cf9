/* Internal to the executor (runtime/exec/executor.c, runtime/exec/exec_fuse.c). */
#ifndef GRAFT_RUNTIME_EXEC_EXEC_IMPL_H
#define GRAFT_RUNTIME_EXEC_EXEC_IMPL_H

#include "runtime/exec/plan.h"
#include "ir/ctx.h"

/* Forming host groups over nb bindings (one straight-line sequence). index_of maps a binding
 * var to its index + 1 (vars of params and other sequences are absent); uses[i] counts the
 * reads of binding i's var (the sequence's result counts twice, so it never fuses away). */
typedef struct rt_fuse_form_in {
    ir_ctx_t *ctx;
    uint32_t nb;
    const ir_binding **b;
    const uint32_t *uses;
    gr_map *index_of;
    /* results */
    int32_t *group_of;                       /* nb: group index or -1 (caller allocates) */
    GR_VEC(rt_fuse_group *) groups;
    GR_VEC(const ir_expr **) inputs;         /* per group: its nin input expressions */
    uint32_t nfused_ops;
} rt_fuse_form_in;

gr_status rt_fuse_form(rt_fuse_form_in *in, const rt_host_lowering *h);
void rt_fuse_form_free(rt_fuse_form_in *in);

#endif
