/* The executor's compiled form and run state, shared by its three files: runtime/exec/executor.c
 * (the API: new, free, inputs, taps), runtime/exec/exec_compile.c (a function into instructions,
 * liveness, the memory plan) and runtime/exec/exec_run.c (frames, value checks, instructions, planned
 * buffers at run time). See runtime/exec/executor.c for the design. */
#ifndef GRAFT_RUNTIME_EXEC_EXECUTOR_IMPL_H
#define GRAFT_RUNTIME_EXEC_EXECUTOR_IMPL_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "runtime/exec/exec_impl.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/kernels.h"
#include "runtime/kernels/kernels_impl.h"
#include "runtime/module.h"

typedef struct rt_plan rt_plan;
typedef struct rt_seq rt_seq;

/* ---- symbolic dims ---- */

enum { DIM_CONST, DIM_VAR, DIM_PROG };
typedef struct rt_dim {
    uint8_t kind;
    int64_t v;          /* CONST: value; VAR: symbol index; PROG: offset in plan->code */
} rt_dim;

enum { SYM_PUSH_C, SYM_PUSH_V, SYM_ADD, SYM_MUL, SYM_FDIV, SYM_FMOD, SYM_END };
typedef struct rt_symop {
    uint8_t op;
    int64_t v;
} rt_symop;

/* ---- operands ---- */

enum { OPD_SLOT, OPD_CONST, OPD_SHAPE, OPD_PRIM, OPD_TUPLE };
typedef struct rt_opd rt_opd;
struct rt_opd {
    uint8_t kind;
    uint32_t slot;      /* SLOT */
    rt_value cval;      /* CONST (tensor reference owned by the exec's const list) */
    uint32_t n;         /* SHAPE: ndim; TUPLE: fields */
    rt_dim *dims;       /* SHAPE: n dims; PRIM: one */
    rt_opd *items;      /* TUPLE */
};

/* ---- struct info patterns (compiled from ir_sinfo for input checks and match_cast) ---- */

enum { PAT_ANY, PAT_TENSOR, PAT_SHAPE, PAT_PRIM, PAT_TUPLE };
typedef struct rt_pat rt_pat;
struct rt_pat {
    uint8_t kind;
    ir_dtype dtype;     /* void = any */
    int32_t ndim;       /* -1 = any */
    rt_dim *dims;       /* NULL = any (PRIM: the known value, or NULL) */
    uint32_t n;
    rt_pat *fields;
    const ir_sinfo *sinfo;
};

/* ---- instructions ---- */

enum { INS_OP, INS_HOST, INS_DPS, INS_MOVE, INS_TGI, INS_CALL, INS_IF, INS_MATCH };
/* by INS_*: the instruction kinds profiles and the plan view report */
extern const char *const rt_x_ins_kind_name[];

typedef struct rt_outspec {
    ir_dtype dtype;
    int32_t ndim;
    rt_dim *dims;
} rt_outspec;

typedef GR_VEC(uint32_t) slot_vec;
typedef GR_VEC(DLTensor *) dl_vec;
struct slot_def {
    rt_seq *seq;                /* the sequence whose instruction writes the slot */
    int32_t pos;                /* that instruction; -1 for params */
};

typedef struct rt_instr {
    uint8_t kind;
    uint32_t dst;
    const char *var;            /* binding var name ("" for temporaries) */
    const char *name;           /* op text name, extern symbol or callee name (profiling) */
    const ir_span *span;
    uint32_t nargs;
    rt_opd *args;               /* OP/CALL: nargs; DPS: args[0] the inputs; MOVE/TGI/IF/MATCH:
                                   args[0] */
    rt_kernel_fn kernel;        /* OP */
    rt_kernel_call call;        /* OP: template (args filled per run) */
    rt_module *mod;             /* DPS */
    uint32_t nout;              /* DPS */
    rt_outspec *outs;           /* DPS */
    bool out_tuple;             /* DPS */
    int32_t index;              /* TGI */
    rt_plan *callee;            /* CALL */
    rt_seq *then_s, *else_s;    /* IF */
    rt_pat *pat;                /* MATCH */
    const rt_fuse_group *group; /* HOST */
    rt_host_fn hostfn;          /* HOST */
    int32_t buf;                /* the planned buffer of dst, -1 when none */
    slot_vec frees;             /* slots released after this instruction */
} rt_instr;

struct rt_seq {
    uint32_t n;
    rt_instr *instrs;
    rt_opd result;
    slot_vec free_end;          /* released after the result was taken */
};

typedef struct shape_plan shape_plan;

typedef struct rt_frame {
    rt_value *slots;
    int64_t *syms;
    const char **sym_from;      /* NULL = unbound; else what bound it (for messages) */
    struct rt_frame *next_free;
    /* the entry function's frames: the arena, its tensor views (per planned buffer) and the
     * shape plan they were made for */
    void *arena;
    size_t arena_cap;
    rt_tensor **views;
    shape_plan *vplan;
    void **bufs;                /* a host kernel's buffers */
    int64_t *dyn_args;          /* a dyn host kernel's extents and strides (RT_FUSE_DYN_ARGS) */
    int64_t *dyn_dims;          /* its inputs' shapes */
    const int64_t **dyn_ins;    /* pointers into dyn_dims */
} rt_frame;

struct rt_plan {
    const ir_func *fn;
    const char *name;
    uint32_t nslots, nsyms;
    uint32_t nparams;
    const ir_var *const *params;
    rt_pat *param_pats;
    const char **who_top, **who_call; /* "input 'x'", "argument 'x' of function 'f'" */
    rt_seq *body;
    slot_vec free_start;        /* params nobody reads */
    const char **sym_names;     /* nsyms */
    GR_VEC(rt_symop) code;
    rt_frame *frames;           /* free frames (under the exec's lock; a recursive call or a
                                   concurrent run takes another) */
    gr_map group_of;            /* entry: binding var -> fused group index + 1 */
    /* compile-time only */
    gr_map slot_of;             /* var pointer -> slot + 1 */
    gr_map sym_of;              /* prim var pointer -> symbol index + 1 */
    gr_map fn_of;               /* var bound to a local function -> its plan */
    GR_VEC(const char *) sym_names_v;
    GR_VEC(struct slot_def) defs;
};

typedef struct pa_chunk {
    struct pa_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char mem[];
} pa_chunk;

/* A planned buffer: the dst of one instruction of the entry body, live over [start, end]. */
typedef struct mbuf {
    uint32_t slot, start, end;
    ir_dtype dtype;
    int32_t ndim;
    rt_dim *dims;
    size_t static_bytes;        /* SIZE_MAX when a dim is symbolic */
} mbuf;

/* Offsets of every planned buffer for one binding of the key symbols. */
struct shape_plan {
    shape_plan *next;
    int64_t *key;
    size_t *off, *size;
    size_t arena;
    uint32_t refs;              /* frames whose views use it */
    bool evicted;
    uint64_t used;              /* last use (LRU) */
};

#define SHAPE_PLAN_CACHE 16

/* Nested calls one run may make: each is a C stack frame, so a recursion that does not end
 * must stop with an error before the thread's stack does. */
#define RT_MAX_CALL_DEPTH 256

/* What one run writes beside its frames. */
typedef struct rt_run {
    struct rt_exec *x;
    uint32_t live, peak;
    uint32_t depth;             /* nested function calls, at most RT_MAX_CALL_DEPTH */
    rt_exec_profile_fn prof;
    void *prof_user;
} rt_run;

struct rt_exec {
    const ir_module *m;
    const rt_host_lowering *host;
    rt_plan *entry;
    pthread_mutex_t lock;       /* frame pools and the shape-plan cache */
    GR_VEC(rt_fuse_group *) groups;
    uint32_t nfused_ops;
    /* memory plan */
    uint32_t nbuf;
    mbuf *bufs;
    uint32_t nkey;
    uint32_t *key_syms;         /* entry symbols the buffer sizes depend on */
    shape_plan *splans;         /* the cache, most recent first */
    uint32_t nsplans;
    uint64_t tick;
    shape_plan *static_plan;    /* nkey == 0: the one plan, made at compile time */
    uint32_t last_peak;
    GR_VEC(rt_plan *) plans;
    gr_map plan_of;             /* ir_func pointer -> plan */
    GR_VEC(rt_tensor *) consts;
    pa_chunk *chunks;
    rt_exec_profile_fn prof;
    void *prof_user;
    rt_exec_tap_fn tap;
    void *tap_user;
    gr_diag *cdiag;             /* diag of the compile in progress */
    /* compile time: the entry function and its fused groups */
    const ir_func *entry_fn;
    rt_fuse_form_in fuse;
    const ir_var **group_last;  /* per group: the binding where it runs */
    uint32_t max_host_args;
    bool entry_seen;
};

#define PA_NEW_ARRAY(x, T, n) ((T *)pa_alloc((x), sizeof(T) * (size_t)((n) ? (n) : 1)))
typedef struct cseq {
    rt_seq *seq;
    GR_VEC(rt_instr) ins;
} cseq;
typedef struct live_frame {
    const rt_seq *seq;
    int32_t pos;
} live_frame;
typedef struct live_state {
    rt_plan *p;
    struct { rt_seq *seq; int32_t pos; } *last; /* per slot; seq NULL = never used */
    live_frame stack[64];
    int depth;
} live_state;
typedef struct match_ctx {
    const rt_plan *p;
    rt_frame *f;
    const char *who;     /* "input 'x'" */
    const char *binder;  /* recorded as the origin of symbols bound here */
    gr_diag *d;
} match_ctx;

rt_plan *rt_x_compile_func(rt_exec_t *x, const ir_func *fn, const char *name);
void rt_x_fuse_done(rt_exec_t *x);
rt_frame *rt_x_frame_get(rt_exec_t *x, rt_plan *p);
gr_status rt_x_run_plan(rt_run *x, rt_plan *p, const rt_value *args, uint32_t nargs,
                        bool top, rt_value *result, gr_diag *d);
void rt_x_splan_free(shape_plan *sp);
void rt_x_splan_unref(shape_plan *sp);
gr_status rt_x_splan_make(const rt_exec_t *x, const rt_frame *f, const int64_t *key, const rt_px_stored_plan *given,
                          shape_plan **out, gr_diag *d);

#endif
