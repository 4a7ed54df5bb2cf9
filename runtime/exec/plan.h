/* The executor seen with its host lowering and memory plan (runtime/exec/executor.c; rt_px is the
 * same object as rt_exec_t, and rt_exec_new(m, f) is rt_px_new(m, f, NULL)).
 *
 * Host lowering is pluggable (backends/llvm provides one): when given, chains of elementwise /
 * broadcast float32 ops of the entry function's body are fused into groups (rt_fuse_group),
 * each compiled into one host function `void fn(void *const *bufs)` (bufs = group inputs in
 * order, then the output) that writes into its planned buffer. Without it every op runs its
 * reference kernel.
 *
 * Memory plan: results of kernels, host kernels and single-output extern calls of the entry
 * body that do not escape get buffers in one arena; tensors whose lifetimes do not overlap share
 * storage. Buffer sizes may be expressions of the symbolic vars the inputs bind: the offsets are
 * then computed once per distinct binding of those vars (cached, bounded) and a run's profile
 * shows the time as a "plan" event. Reference kernels allocate their own outputs
 * (runtime/kernels/kernels.h): the executor points the kernel's output allocation at the buffer
 * (rt_kernel_out_hint) and copies only when the output lands elsewhere. Outputs of the function
 * are never planned (the caller owns them across runs); tuples stay heap values.
 *
 * Everything else (if/else, calls of other functions, match_cast, symbolic shapes) runs as in
 * runtime/exec/executor.h. */
#ifndef GRAFT_RUNTIME_EXEC_PLAN_H
#define GRAFT_RUNTIME_EXEC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ir/expr.h"
#include "ir/op.h"
#include "runtime/exec/executor.h"
#include "runtime/value.h"

#define RT_FUSE_MAX_ARGS 3

/* One op of a fused group. Each arg is a group input (>= 0: index into the group's inputs) or
 * an earlier node (< 0: node -(a + 1)), or a scalar (RT_FUSE_SCALAR: value in scalars[k]). */
#define RT_FUSE_SCALAR INT32_MIN
typedef struct rt_fuse_node {
    const ir_op_def *op;
    const ir_attrs *attrs;
    uint32_t nargs;
    int32_t args[RT_FUSE_MAX_ARGS];
    double scalars[RT_FUSE_MAX_ARGS];
} rt_fuse_node;

/* A fused elementwise group: one loop nest over the output's shape; inputs broadcast to it
 * numpy-style (right-aligned). All tensors are float32. The last node is the output.
 * Shapes may hold symbolic dims (RT_FUSE_DYN; dyn is then true): the kernel takes its extents
 * and strides at run time (rt_fuse_dyn_args), computed from the concrete shapes of a run. */
#define RT_FUSE_DYN (-1)
typedef struct rt_fuse_group {
    const char *name;            /* unique symbol: fused_add_relu__conv1_bn1 */
    const ir_span *span;         /* the members' spans merged */
    uint32_t nin;
    int32_t *in_ndim;            /* nin */
    int64_t (*in_shape)[RT_MAX_NDIM];
    int32_t ndim;
    int64_t shape[RT_MAX_NDIM];
    uint32_t nnodes;
    rt_fuse_node *nodes;
    /* A tail at the end (the last node is a reduction or a row-wise normalization, see
     * rt_fuse_tail): the loop nest runs over iter_shape (the tail's input; inputs broadcast to
     * it) and reduce_mask marks its reduced (or normalized) axes; shape is the output. Without
     * one, tail is RT_TAIL_NONE, reduce_mask is 0 and iter_shape == shape. */
    int32_t iter_ndim;
    int64_t iter_shape[RT_MAX_NDIM];
    uint32_t reduce_mask;
    uint8_t tail;                /* rt_fuse_tail */
    bool dyn;                    /* some shape has a symbolic dim */
    const ir_sinfo *out_sinfo;   /* the output's (its dims size the planned buffer) */
} rt_fuse_group;

/* What ends a group. Reductions (R.sum, R.mean, R.max, R.min and a global
 * R.nn.adaptive_avg_pool2d, which is a mean over H and W) write one value per kept index;
 * softmax / log_softmax normalize along their axis, layer_norm / rms_norm along their trailing
 * axes (output shape == iter_shape; gamma and beta are further args of the tail node, indexed
 * like any broadcast input). A tail may also form a group of its own. */
typedef enum rt_fuse_tail {
    RT_TAIL_NONE,
    RT_TAIL_SUM,
    RT_TAIL_MEAN,
    RT_TAIL_MAX,
    RT_TAIL_MIN,
    RT_TAIL_SOFTMAX,
    RT_TAIL_LOG_SOFTMAX,
    RT_TAIL_LAYER_NORM,
    RT_TAIL_RMS_NORM,
} rt_fuse_tail;

/* The tail kind of an op call (RT_TAIL_NONE when op is not one), and in *mask the axes of its
 * input it reduces / normalizes (0 when the attributes are not ones the tail handles). */
rt_fuse_tail rt_fuse_tail_of(const ir_call *call, uint32_t *mask);

typedef void (*rt_host_fn)(void *const *bufs);

/* Kernels of dyn groups take one more buffer, bufs[nin + 1]: int64_t args[(2 + nin) * R] with
 * R = iter_ndim and one loop level per axis of iter_shape, in the order of rt_fuse_loop_order
 * (kept axes outside, reduced / normalized ones inside). For level l: args[l] is its extent,
 * args[R + l] the output's stride and args[(2 + k) * R + l] input k's stride (elements; 0 along
 * broadcast axes). */
#define RT_FUSE_DYN_ARGS(nin) ((size_t)(2 + (nin)) * RT_MAX_NDIM)
/* The axes of iter_shape in loop order; returns how many are kept (outside). */
int32_t rt_fuse_loop_order(const rt_fuse_group *g, int32_t *order);
/* A dyn group's run: from the concrete input shapes (ins[k], ndim in_ndim[k]) checks them
 * against the group (static dims, broadcasting), fills args (RT_FUSE_DYN_ARGS(nin) entries),
 * the output's shape (g->ndim dims) and *numel, the loop nest's element count (0: no call). */
gr_status rt_fuse_dyn_args(const rt_fuse_group *g, const int64_t *const *ins, int64_t *args,
                           int64_t *out_shape, int64_t *numel, gr_diag *diag);

/* A host lowering: decides which calls it lowers and compiles groups. */
typedef struct rt_host_lowering {
    void *self;
    /* True when op `call` (normalized, args and result float32 tensors or scalar prim args) can
     * be a node of a fused group. Must be deterministic (an artifact's loader re-derives the
     * same groups). */
    bool (*can_lower)(void *self, const ir_call *call);
    /* Compiles group g (its name is the symbol); called for every group before finalize. */
    gr_status (*add_group)(void *self, const rt_fuse_group *g, gr_diag *diag);
    gr_status (*finalize)(void *self, gr_diag *diag);
    /* The compiled function for a group name, NULL when missing. */
    rt_host_fn (*lookup)(void *self, const char *name);
} rt_host_lowering;

typedef struct rt_exec rt_px;

/* Compiles `func` of m. host NULL: no fusion (reference kernels only). The module, its context
 * and the lowering must outlive the executor. */
gr_status rt_px_new(const ir_module *m, const char *func, const rt_host_lowering *host,
                    rt_px **out, gr_diag *diag);
/* A memory plan made before (an artifact's): offsets and sizes of the n planned buffers of a
 * static plan, and its arena. */
typedef struct rt_px_stored_plan {
    uint32_t n;
    const size_t *off, *size;
    size_t arena;
} rt_px_stored_plan;
/* rt_px_new taking the static plan as given instead of planning again (plan NULL: plans); a
 * plan that does not fit the function's buffers (count, sizes, inside its arena) is
 * GR_ERR_INVALID. A function whose buffer sizes are symbolic plans per input shapes anyway. */
gr_status rt_px_new_stored(const ir_module *m, const char *func, const rt_host_lowering *host,
                           const rt_px_stored_plan *plan, rt_px **out, gr_diag *diag);
/* rt_px is an rt_exec_t: free it, query its inputs, run it and profile it with the rt_exec_*
 * functions (runtime/exec/executor.h). Runs are safe from several threads at once on one rt_px: every
 * run writes only its own execution state (slot values, arena, scratch), taken from a pool in x
 * and given back; the instructions, plan, constants and compiled code are read-only after
 * rt_px_new. Extern calls go to the runtime modules as they are (each module guards its own
 * shared state). Profiling adds kind "host" (fused host kernel; name = the group symbol) and
 * "plan" (a run lays out the arena for new input shapes). */
/* The function's return struct info. */
const ir_sinfo *rt_px_output_sinfo(const rt_px *x);

typedef struct rt_px_stats {
    uint32_t ninstr, nkernel, nhost, nextern;
    uint32_t nfused_ops;          /* op bindings inside host groups */
    uint32_t nplanned;            /* buffers in the arena */
    uint32_t nunplanned;          /* heap intermediates (dynamic shape, tuples, outputs) */
    size_t arena_bytes;           /* the planned arena (0 when sizes are symbolic) */
    size_t intermediate_bytes;    /* sum of the static planned buffers' sizes (no sharing) */
} rt_px_stats;
void rt_px_get_stats(const rt_px *x, rt_px_stats *out);

/* The fused groups (for artifacts and reports). */
uint32_t rt_px_num_groups(const rt_px *x);
const rt_fuse_group *rt_px_group(const rt_px *x, uint32_t i);
/* Planned buffer i: offset and size in the arena (0 and 0 when its size is symbolic), and the
 * binding var it holds. */
void rt_px_buffer(const rt_px *x, uint32_t i, size_t *offset, size_t *size, const char **var);

/* Instruction k of the entry body: its kind ("op", "host", "extern", "call", "other"), name
 * (op, group symbol, extern symbol or callee), binding var and span. */
uint32_t rt_px_num_instrs(const rt_px *x);
void rt_px_instr(const rt_px *x, uint32_t k, const char **kind, const char **name,
                 const char **var, const ir_span **span);

/* Computes a static memory plan (exposed for tests): n buffers with sizes and live intervals
 * [start, end] (instruction indexes, inclusive); buffers whose intervals overlap get disjoint
 * ranges. Offsets are multiples of 64. Returns the arena size. */
size_t rt_plan_memory(uint32_t n, const size_t *size, const uint32_t *start, const uint32_t *end,
                      size_t *offset);

#endif
