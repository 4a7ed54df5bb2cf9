/* The executor: the one engine behind `graft run MODEL`, `graft run M.graft` and the library
 * API (runtime/executor.h, runtime/plan.h, deploy/graft_model.h).
 *
 * rt_exec_new() / rt_px_new() compile a function once into instructions: every var gets a dense
 * slot index, every binding an instruction whose operands are slots or prepared constants,
 * kernels and extern symbols are resolved, symbolic dims are compiled into tiny stack programs
 * over dense symbol indices, and liveness says which slots to release after each instruction.
 * if/else branches are nested sequences; calls of other functions run their own plan in a frame
 * of their own. With a host lowering, chains of elementwise float32 ops of the entry function
 * become fused host kernels (runtime/exec_fuse.c).
 *
 * Memory: the results of the entry function's kernels, host kernels and single-output extern
 * calls that do not escape get planned buffers in one arena. Their sizes are expressions of the
 * symbolic vars the inputs bind; the offsets (the plan) are computed once per distinct binding
 * of those vars and cached (a bounded cache), so a model with symbolic dims runs at any input
 * size without reallocating per run.
 *
 * Runs are thread-safe: everything a run writes lives in frames (slots, symbol values, the arena
 * and its tensor views) taken from per-function pools under a lock; the compiled instructions
 * are read-only while runs are in flight. */
#include "runtime/executor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/op.h"
#include "runtime/kernels.h"
#include "runtime/kernels_impl.h"
#include "runtime/module.h"
#include "runtime/exec_impl.h"

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
static const char *const ins_kind_name[] = {"op", "host", "extern", "other", "other", "call", "other", "other"};

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

/* What one run writes beside its frames. */
typedef struct rt_run {
    struct rt_exec *x;
    uint32_t live, peak;
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

/* ---- plan arena ---- */

static void *pa_alloc(rt_exec_t *x, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!x->chunks || x->chunks->size - x->chunks->used < n) {
        size_t sz = n > 16384 ? n : 16384;
        pa_chunk *c = gr_xcalloc(1, sizeof(pa_chunk) + sz);
        c->size = sz;
        c->next = x->chunks;
        x->chunks = c;
    }
    void *p = x->chunks->mem + x->chunks->used;
    x->chunks->used += n;
    return p;
}
static const char *pa_strf(rt_exec_t *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *pa_strf(rt_exec_t *x, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf) + 1;
    return memcpy(pa_alloc(x, n), buf, n);
}
#define PA_NEW_ARRAY(x, T, n) ((T *)pa_alloc((x), sizeof(T) * (size_t)((n) ? (n) : 1)))

/* ======================================================================================== */
/* Compilation                                                                               */
/* ======================================================================================== */

typedef struct cseq {
    rt_seq *seq;
    GR_VEC(rt_instr) ins;
} cseq;

static rt_plan *compile_func(rt_exec_t *x, const ir_func *fn, const char *name);

static gr_status cfail(rt_exec_t *x, rt_plan *p, const char *var, const ir_span *span,
                       gr_status code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static gr_status cfail(rt_exec_t *x, rt_plan *p, const char *var, const ir_span *span,
                       gr_status code, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *layer = ir_span_layer(span);
    if (var && *var)
        return gr_fail(x->cdiag, code, layer, NULL, "function '%s', binding '%s': %s", p->name, var, what);
    return gr_fail(x->cdiag, code, layer, NULL, "function '%s': %s", p->name, what);
}

static uint32_t sym_index(rt_plan *p, const ir_prim *var) {
    uint64_t v;
    if (gr_map_get(&p->sym_of, GR_MAP_PTR(var), &v)) return (uint32_t)(v - 1);
    uint32_t i = p->nsyms++;
    gr_map_put(&p->sym_of, GR_MAP_PTR(var), i + 1);
    gr_vec_push(&p->sym_names_v, var->name);
    return i;
}

static void emit_prim(rt_plan *p, const ir_prim *e) {
    switch ((ir_prim_kind)e->kind) {
    case IR_PRIM_INT: gr_vec_push(&p->code, ((rt_symop){SYM_PUSH_C, e->value})); break;
    case IR_PRIM_VAR: gr_vec_push(&p->code, ((rt_symop){SYM_PUSH_V, sym_index(p, e)})); break;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        emit_prim(p, e->a);
        emit_prim(p, e->b);
        gr_vec_push(&p->code,
                    ((rt_symop){e->kind == IR_PRIM_FLOORDIV ? SYM_FDIV : SYM_FMOD, 0}));
        break;
    case IR_PRIM_POLY:
        gr_vec_push(&p->code, ((rt_symop){SYM_PUSH_C, e->value}));
        for (uint32_t t = 0; t < e->nterms; t++) {
            gr_vec_push(&p->code, ((rt_symop){SYM_PUSH_C, e->terms[t].coef}));
            for (uint32_t f = 0; f < e->terms[t].nfactors; f++) {
                emit_prim(p, e->terms[t].factors[f]);
                gr_vec_push(&p->code, ((rt_symop){SYM_MUL, 0}));
            }
            gr_vec_push(&p->code, ((rt_symop){SYM_ADD, 0}));
        }
        break;
    }
}

static rt_dim compile_dim(rt_plan *p, const ir_prim *e) {
    rt_dim d = {0};
    if (e->kind == IR_PRIM_INT) {
        d.kind = DIM_CONST;
        d.v = e->value;
    } else if (e->kind == IR_PRIM_VAR) {
        d.kind = DIM_VAR;
        d.v = sym_index(p, e);
    } else {
        d.kind = DIM_PROG;
        d.v = p->code.len;
        emit_prim(p, e);
        gr_vec_push(&p->code, ((rt_symop){SYM_END, 0}));
    }
    return d;
}

static rt_dim *compile_dims(rt_exec_t *x, rt_plan *p, uint32_t n, const ir_prim *const *dims) {
    rt_dim *d = PA_NEW_ARRAY(x, rt_dim, n);
    for (uint32_t i = 0; i < n; i++) d[i] = compile_dim(p, dims[i]);
    return d;
}

static void compile_pat(rt_exec_t *x, rt_plan *p, const ir_sinfo *s, rt_pat *out) {
    memset(out, 0, sizeof *out);
    out->sinfo = s;
    out->ndim = -1;
    if (!s) return;
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_TENSOR:
    case IR_SINFO_SHAPE:
        out->kind = s->kind == IR_SINFO_TENSOR ? PAT_TENSOR : PAT_SHAPE;
        out->dtype = s->dtype;
        out->ndim = s->ndim;
        if (s->dims && s->ndim >= 0) out->dims = compile_dims(x, p, (uint32_t)s->ndim, s->dims);
        break;
    case IR_SINFO_PRIM:
        out->kind = PAT_PRIM;
        out->dtype = s->dtype;
        if (s->value) out->dims = compile_dims(x, p, 1, &s->value);
        break;
    case IR_SINFO_TUPLE:
        out->kind = PAT_TUPLE;
        out->n = s->n;
        out->fields = PA_NEW_ARRAY(x, rt_pat, s->n);
        for (uint32_t i = 0; i < s->n; i++) compile_pat(x, p, s->fields[i], &out->fields[i]);
        break;
    default: out->kind = PAT_ANY; break; /* objects, functions: nothing to check */
    }
}

static uint32_t new_slot(rt_plan *p, cseq *cs, int32_t pos) {
    uint32_t s = p->nslots++;
    struct slot_def d = {cs ? cs->seq : NULL, pos};
    gr_vec_push(&p->defs, d);
    return s;
}

static uint32_t bind_var(rt_plan *p, const ir_var *v, cseq *cs, int32_t pos) {
    uint32_t s = new_slot(p, cs, pos);
    gr_map_put(&p->slot_of, GR_MAP_PTR(v), s + 1);
    return s;
}

static gr_status compile_value(rt_exec_t *x, rt_plan *p, cseq *cs, ir_expr *e, uint32_t dst,
                               const char *var, const ir_span *span);

static gr_status compile_opd(rt_exec_t *x, rt_plan *p, cseq *cs, ir_expr *e, rt_opd *o,
                             const char *var) {
    memset(o, 0, sizeof *o);
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR: {
        uint64_t s;
        if (gr_map_get(&p->fn_of, GR_MAP_PTR(e), NULL))
            return cfail(x, p, var, e->span, GR_ERR_UNSUPPORTED,
                         "local function '%s' used as a value (only direct calls are supported)",
                         IR_AS(e, ir_var)->name);
        if (!gr_map_get(&p->slot_of, GR_MAP_PTR(e), &s))
            return cfail(x, p, var, e->span, GR_ERR_UNSUPPORTED,
                         "var '%s' is not defined in this function (before this use); closures "
                         "capturing outer vars are not supported",
                         IR_AS(e, ir_var)->name);
        o->kind = OPD_SLOT;
        o->slot = (uint32_t)(s - 1);
        return GR_OK;
    }
    case IR_CONST: {
        rt_tensor *t = IR_AS(e, ir_const)->data;
        if (!t) return cfail(x, p, var, e->span, GR_ERR_INVALID, "constant without data");
        gr_vec_push(&x->consts, rt_tensor_retain(t));
        o->kind = OPD_CONST;
        o->cval.kind = RT_VAL_TENSOR;
        o->cval.u.t = t;
        return GR_OK;
    }
    case IR_SHAPE: {
        ir_shape_expr *se = IR_AS(e, ir_shape_expr);
        if (se->n > RT_MAX_NDIM)
            return cfail(x, p, var, e->span, GR_ERR_UNSUPPORTED, "shape of rank %u exceeds %d",
                         se->n, RT_MAX_NDIM);
        o->kind = OPD_SHAPE;
        o->n = se->n;
        o->dims = compile_dims(x, p, se->n, se->dims);
        return GR_OK;
    }
    case IR_PRIMVAL: {
        ir_primval *pv = IR_AS(e, ir_primval);
        int64_t iv;
        o->kind = OPD_CONST;
        if (!pv->value) {
            o->cval.kind = RT_VAL_FLOAT;
            o->cval.u.f = pv->fvalue;
        } else if (ir_prim_is_int(pv->value, &iv)) {
            o->cval.kind = RT_VAL_INT;
            o->cval.u.i = iv;
        } else {
            o->kind = OPD_PRIM;
            o->dims = compile_dims(x, p, 1, &pv->value);
        }
        return GR_OK;
    }
    case IR_STR:
        o->kind = OPD_CONST;
        o->cval.kind = RT_VAL_STR;
        o->cval.u.s = IR_AS(e, ir_str)->value;
        return GR_OK;
    case IR_TUPLE: {
        ir_tuple *t = IR_AS(e, ir_tuple);
        o->kind = OPD_TUPLE;
        o->n = t->n;
        o->items = PA_NEW_ARRAY(x, rt_opd, t->n);
        for (uint32_t i = 0; i < t->n; i++) {
            gr_status st = compile_opd(x, p, cs, t->fields[i], &o->items[i], var);
            if (st) return st;
        }
        return GR_OK;
    }
    case IR_CALL:
    case IR_TGI:
    case IR_IF:
    case IR_SEQ: {
        /* not in A-normal form: evaluate into a temporary first (pure, so order is kept) */
        uint32_t tmp = new_slot(p, cs, -2);
        gr_status st = compile_value(x, p, cs, e, tmp, var, e->span);
        if (st) return st;
        o->kind = OPD_SLOT;
        o->slot = tmp;
        return GR_OK;
    }
    default:
        return cfail(x, p, var, e->span, GR_ERR_UNSUPPORTED,
                     "a %s cannot be used as a value by the executor",
                     ir_expr_kind_name((ir_expr_kind)e->kind));
    }
}

/* Appends an instruction; fixes up the definition position of its dst. */
static rt_instr *push_instr(rt_plan *p, cseq *cs, uint8_t kind, uint32_t dst, const char *var,
                            const ir_span *span) {
    rt_instr in;
    memset(&in, 0, sizeof in);
    in.kind = kind;
    in.dst = dst;
    in.var = var ? var : "";
    in.span = span;
    in.buf = -1;
    gr_vec_push(&cs->ins, in);
    p->defs.data[dst].seq = cs->seq;
    p->defs.data[dst].pos = (int32_t)cs->ins.len - 1;
    return &cs->ins.data[cs->ins.len - 1];
}

static gr_status compile_seq(rt_exec_t *x, rt_plan *p, ir_expr *e, rt_seq **out);
static gr_status compile_blocks(rt_exec_t *x, rt_plan *p, cseq *cs, const ir_seq *s);

static gr_status compile_dps(rt_exec_t *x, rt_plan *p, cseq *cs, const ir_call *call,
                             uint32_t dst, const char *var, const ir_span *span) {
    if (call->nargs < 1 || call->nargs > 2)
        return cfail(x, p, var, span, GR_ERR_INVALID,
                     "R.call_dps_packed takes (callee, args), got %u arguments", call->nargs);
    ir_expr *cal = call->args[0];
    const char *sym = cal->kind == IR_EXTERN ? IR_AS(cal, ir_extern)->symbol
                      : cal->kind == IR_STR  ? IR_AS(cal, ir_str)->value
                                             : NULL;
    if (!sym)
        return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                     "R.call_dps_packed callee must be an ExternFunc, got a %s",
                     ir_expr_kind_name((ir_expr_kind)cal->kind));
    /* output specs: out_sinfo=[a, b] or a tuple struct info means a tuple result */
    const ir_sinfo *const *outs = call->sinfo_args;
    uint32_t nout = call->nsinfo_args;
    bool tuple = nout > 1;
    const ir_sinfo *one = NULL;
    if (nout == 0) {
        one = call->base.sinfo;
        outs = &one;
        nout = one ? 1 : 0;
    }
    if (nout == 1 && outs[0]->kind == IR_SINFO_TUPLE) {
        tuple = true;
        nout = outs[0]->n;
        outs = outs[0]->fields;
    }
    if (nout == 0)
        return cfail(x, p, var, span, GR_ERR_INVALID,
                     "R.call_dps_packed('%s') has no out_sinfo", sym);
    rt_module *mod = rt_module_find_function(x->m, sym);
    if (!mod)
        return cfail(x, p, var, span, GR_ERR_NOT_FOUND,
                     "R.call_dps_packed: symbol '%s' is not defined by any runtime module of "
                     "external_mods (%u modules)",
                     sym, rt_module_count(x->m));
    rt_outspec *os = PA_NEW_ARRAY(x, rt_outspec, nout);
    for (uint32_t i = 0; i < nout; i++) {
        const ir_sinfo *s = outs[i];
        if (s->kind != IR_SINFO_TENSOR || s->ndim < 0 || (s->ndim > 0 && !s->dims) || ir_dtype_is_void(s->dtype) ||
            s->ndim > RT_MAX_NDIM) {
            char buf[256];
            ir_sinfo_snprint(s, buf, sizeof buf);
            return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                         "R.call_dps_packed('%s'): output %u needs a known dtype and shape, got "
                         "%s",
                         sym, i, buf);
        }
        os[i].dtype = s->dtype;
        os[i].ndim = s->ndim;
        os[i].dims = compile_dims(x, p, (uint32_t)s->ndim, s->dims);
    }
    rt_opd *args = PA_NEW_ARRAY(x, rt_opd, 1);
    if (call->nargs == 2) {
        gr_status st = compile_opd(x, p, cs, call->args[1], &args[0], var);
        if (st) return st;
    } else {
        args[0].kind = OPD_TUPLE; /* no inputs */
    }
    rt_instr *in = push_instr(p, cs, INS_DPS, dst, var, span);
    in->name = sym;
    in->mod = mod;
    in->nargs = 1;
    in->args = args;
    in->nout = nout;
    in->outs = os;
    in->out_tuple = tuple;
    return GR_OK;
}

static gr_status compile_call(rt_exec_t *x, rt_plan *p, cseq *cs, const ir_call *call,
                              uint32_t dst, const char *var, const ir_span *span) {
    ir_expr *callee = call->callee;
    rt_plan *target = NULL;
    const ir_op_def *def = NULL;
    rt_kernel_fn kernel = NULL;
    uint64_t v;
    if (callee->kind == IR_OP) {
        def = IR_AS(callee, ir_op)->def;
        if (ir_op_def_id(def) == IR_OP_CALL_DPS_PACKED)
            return compile_dps(x, p, cs, call, dst, var, span);
        if (ir_op_def_id(def) == IR_OP_CALL_TIR) {
            char why[256];
            return cfail(x, p, var, span, GR_ERR_UNSUPPORTED, "%s", ir_call_tir_refusal(x->m, call, why, sizeof why));
        }
        kernel = (def->flags & IR_OPF_CALL_LIKE) ? NULL : rt_kernel_find(def);
        if (!kernel)
            return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                         "op %s has no reference kernel", def->text_name);
    } else if (callee->kind == IR_GVAR) {
        const char *gname = IR_AS(callee, ir_gvar)->name;
        ir_func *fn = ir_module_func(x->m, gname);
        if (!fn || fn->base.kind != IR_FUNC)
            return cfail(x, p, var, span, GR_ERR_NOT_FOUND,
                         "call of '%s', which is not a function of the module", gname);
        if (ir_func_tir_text(&fn->base))
            return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                         "call of '%s', a TIR function (@T.prim_func); graft keeps TIR functions as "
                         "text and cannot run them", gname);
        if (fn->nparams != call->nargs)
            return cfail(x, p, var, span, GR_ERR_INVALID,
                         "call of '%s' with %u arguments; it takes %u", gname, call->nargs,
                         fn->nparams);
        target = compile_func(x, fn, gname);
        if (!target) return x->cdiag ? x->cdiag->code : GR_ERR_INVALID;
    } else if (callee->kind == IR_EXTERN) {
        return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                     "direct call of ExternFunc '%s' (only R.call_dps_packed is supported)",
                     IR_AS(callee, ir_extern)->symbol);
    } else if (ir_is_var(callee) && gr_map_get(&p->fn_of, GR_MAP_PTR(callee), &v)) {
        target = (rt_plan *)(uintptr_t)v;
        if (target->nparams != call->nargs)
            return cfail(x, p, var, span, GR_ERR_INVALID,
                         "call of local function '%s' with %u arguments; it takes %u",
                         IR_AS(callee, ir_var)->name, call->nargs, target->nparams);
    } else {
        return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                     "call through a %s (function values and closures are not supported by the "
                     "executor; direct calls of global and local functions are)",
                     ir_expr_kind_name((ir_expr_kind)callee->kind));
    }
    rt_opd *args = PA_NEW_ARRAY(x, rt_opd, call->nargs);
    for (uint32_t i = 0; i < call->nargs; i++) {
        gr_status st = compile_opd(x, p, cs, call->args[i], &args[i], var);
        if (st) return st;
    }
    rt_instr *in = push_instr(p, cs, target ? INS_CALL : INS_OP, dst, var, span);
    in->nargs = call->nargs;
    in->args = args;
    if (target) {
        in->callee = target;
        in->name = target->name;
    } else {
        in->kernel = kernel;
        in->name = def->text_name;
        in->call.op = def;
        in->call.attrs = call->attrs;
        in->call.nargs = call->nargs;
        in->call.out_sinfo = call->base.sinfo;
        in->call.span = span;
    }
    return GR_OK;
}

/* Compiles expression e so that its value lands in slot dst. */
static gr_status compile_value(rt_exec_t *x, rt_plan *p, cseq *cs, ir_expr *e, uint32_t dst,
                               const char *var, const ir_span *span) {
    gr_status st;
    switch ((ir_expr_kind)e->kind) {
    case IR_CALL: return compile_call(x, p, cs, IR_AS(e, ir_call), dst, var, span);
    case IR_TGI: {
        ir_tgi *t = IR_AS(e, ir_tgi);
        rt_opd *o = PA_NEW_ARRAY(x, rt_opd, 1);
        if ((st = compile_opd(x, p, cs, t->tuple, o, var))) return st;
        rt_instr *in = push_instr(p, cs, INS_TGI, dst, var, span);
        in->nargs = 1;
        in->args = o;
        in->index = t->index;
        return GR_OK;
    }
    case IR_IF: {
        ir_if *f = IR_AS(e, ir_if);
        rt_opd *o = PA_NEW_ARRAY(x, rt_opd, 1);
        if ((st = compile_opd(x, p, cs, f->cond, o, var))) return st;
        rt_seq *ts, *es;
        if ((st = compile_seq(x, p, f->then_branch, &ts))) return st;
        if ((st = compile_seq(x, p, f->else_branch, &es))) return st;
        rt_instr *in = push_instr(p, cs, INS_IF, dst, var, span);
        in->nargs = 1;
        in->args = o;
        in->then_s = ts;
        in->else_s = es;
        in->name = "if";
        return GR_OK;
    }
    case IR_SEQ: {
        /* a nested SeqExpr: its vars are unique, so its bindings join this sequence */
        ir_seq *s = IR_AS(e, ir_seq);
        if ((st = compile_blocks(x, p, cs, s))) return st;
        return compile_value(x, p, cs, s->body, dst, var, span);
    }
    case IR_FUNC:
        return cfail(x, p, var, span, GR_ERR_UNSUPPORTED,
                     "a function used as a value (only bound and called directly is supported)");
    default: {
        rt_opd *o = PA_NEW_ARRAY(x, rt_opd, 1);
        if ((st = compile_opd(x, p, cs, e, o, var))) return st;
        rt_instr *in = push_instr(p, cs, INS_MOVE, dst, var, span);
        in->nargs = 1;
        in->args = o;
        in->name = "move";
        return GR_OK;
    }
    }
}

static gr_status compile_host(rt_exec_t *x, rt_plan *p, cseq *cs, uint32_t g, uint32_t dst,
                              const char *var) {
    const rt_fuse_group *fg = x->groups.data[g];
    const ir_expr **inputs = x->fuse.inputs.data[g];
    rt_opd *args = PA_NEW_ARRAY(x, rt_opd, fg->nin);
    for (uint32_t k = 0; k < fg->nin; k++) {
        gr_status st = compile_opd(x, p, cs, (ir_expr *)inputs[k], &args[k], var);
        if (st) return st;
    }
    rt_instr *in = push_instr(p, cs, INS_HOST, dst, var, fg->span);
    in->name = fg->name;
    in->group = fg;
    in->nargs = fg->nin;
    in->args = args;
    if (x->max_host_args < fg->nin) x->max_host_args = fg->nin;
    return GR_OK;
}

/* ---- host fusion (entry function) ---- */

static void count_uses(gr_map *index_of, uint32_t *uses, const ir_expr *e) {
    uint64_t s;
    if (!e) return;
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        if (gr_map_get(index_of, GR_MAP_PTR(e), &s)) uses[s - 1]++;
        break;
    case IR_TUPLE:
        for (uint32_t i = 0; i < ((const ir_tuple *)e)->n; i++)
            count_uses(index_of, uses, ((const ir_tuple *)e)->fields[i]);
        break;
    case IR_CALL: {
        const ir_call *c = (const ir_call *)e;
        count_uses(index_of, uses, c->callee);
        for (uint32_t i = 0; i < c->nargs; i++) count_uses(index_of, uses, c->args[i]);
        break;
    }
    case IR_TGI: count_uses(index_of, uses, ((const ir_tgi *)e)->tuple); break;
    case IR_IF: {
        const ir_if *f = (const ir_if *)e;
        count_uses(index_of, uses, f->cond);
        count_uses(index_of, uses, f->then_branch);
        count_uses(index_of, uses, f->else_branch);
        break;
    }
    case IR_SEQ: {
        const ir_seq *q = (const ir_seq *)e;
        for (uint32_t b = 0; b < q->nblocks; b++)
            for (uint32_t i = 0; i < q->blocks[b]->n; i++)
                count_uses(index_of, uses, q->blocks[b]->bindings[i].value);
        count_uses(index_of, uses, q->body);
        break;
    }
    default: break;
    }
}

/* Forms the fused groups over the entry body's top-level bindings. */
static gr_status fuse_entry(rt_exec_t *x, rt_plan *p, const ir_seq *seq) {
    uint32_t nb = 0;
    for (uint32_t k = 0; k < seq->nblocks; k++) nb += seq->blocks[k]->n;
    rt_fuse_form_in *fi = &x->fuse;
    fi->ctx = x->m->ctx;
    fi->nb = nb;
    fi->b = gr_xcalloc(nb ? nb : 1, sizeof(void *));
    uint32_t *uses = gr_xcalloc(nb ? nb : 1, sizeof(uint32_t));
    fi->uses = uses;
    fi->group_of = gr_xcalloc(nb ? nb : 1, sizeof(int32_t));
    gr_map index_of;
    gr_map_init(&index_of);
    fi->index_of = &index_of;
    nb = 0;
    for (uint32_t k = 0; k < seq->nblocks; k++)
        for (uint32_t j = 0; j < seq->blocks[k]->n; j++) {
            const ir_binding *b = &seq->blocks[k]->bindings[j];
            fi->b[nb] = b;
            gr_map_put(&index_of, GR_MAP_PTR(b->var), ++nb);
        }
    for (uint32_t i = 0; i < nb; i++) count_uses(&index_of, uses, fi->b[i]->value);
    count_uses(&index_of, uses, seq->body);
    count_uses(&index_of, uses, seq->body);
    gr_status st = rt_fuse_form(fi, x->host);
    if (!st) {
        for (uint32_t g = 0; g < fi->groups.len; g++) gr_vec_push(&x->groups, fi->groups.data[g]);
        x->nfused_ops = fi->nfused_ops;
        x->group_last = PA_NEW_ARRAY(x, const ir_var *, fi->groups.len);
        for (uint32_t i = 0; i < nb; i++)
            if (fi->group_of[i] >= 0) {
                gr_map_put(&p->group_of, GR_MAP_PTR(fi->b[i]->var), (uint64_t)fi->group_of[i] + 1);
                x->group_last[fi->group_of[i]] = fi->b[i]->var;
            }
    }
    gr_map_free(&index_of);
    fi->index_of = NULL;
    free(uses);
    fi->uses = NULL;
    return st;
}

static void fuse_done(rt_exec_t *x) {
    free(x->fuse.b);
    free(x->fuse.group_of);
    rt_fuse_form_free(&x->fuse);
    memset(&x->fuse, 0, sizeof x->fuse);
}

/* Compiles the bindings of a SeqExpr's blocks into cs. */
static gr_status compile_blocks(rt_exec_t *x, rt_plan *p, cseq *cs, const ir_seq *s) {
    gr_status st;
    for (uint32_t b = 0; b < s->nblocks; b++) {
        const ir_block *blk = s->blocks[b];
        for (uint32_t i = 0; i < blk->n; i++) {
            const ir_binding *bd = &blk->bindings[i];
            const char *vn = bd->var->name;
            const ir_span *sp = bd->var->base.span ? bd->var->base.span : bd->value->span;
            if (bd->value->kind == IR_FUNC && !bd->match_sinfo) {
                /* a local function (e.g. a composite inside a merged region): planned like a
                 * global one; calls of its var are resolved here, at plan time */
                const char *fname = pa_strf(x, "%s.%s", p->name, vn);
                rt_plan *fp = compile_func(x, IR_AS(bd->value, ir_func), fname);
                if (!fp) return x->cdiag ? x->cdiag->code : GR_ERR_UNSUPPORTED;
                gr_map_put(&p->fn_of, GR_MAP_PTR(bd->var), GR_MAP_PTR(fp));
                continue;
            }
            uint64_t gv;
            if (gr_map_get(&p->group_of, GR_MAP_PTR(bd->var), &gv)) {
                /* a member of a fused group: the group runs at its last member */
                uint32_t g = (uint32_t)(gv - 1);
                if (x->group_last[g] != bd->var) continue;
                uint32_t d = bind_var(p, bd->var, cs, -2);
                if ((st = compile_host(x, p, cs, g, d, vn))) return st;
                continue;
            }
            uint32_t d = bind_var(p, bd->var, cs, -2);
            if (bd->match_sinfo) {
                rt_opd *o = PA_NEW_ARRAY(x, rt_opd, 1);
                rt_pat *pat = PA_NEW_ARRAY(x, rt_pat, 1);
                if ((st = compile_opd(x, p, cs, bd->value, o, vn))) return st;
                compile_pat(x, p, bd->match_sinfo, pat);
                rt_instr *in = push_instr(p, cs, INS_MATCH, d, vn, sp);
                in->nargs = 1;
                in->args = o;
                in->pat = pat;
                in->name = pa_strf(x, "match_cast of '%s'", vn);
            } else if ((st = compile_value(x, p, cs, bd->value, d, vn, sp))) {
                return st;
            }
        }
    }
    return GR_OK;
}

static void finish_cseq(rt_exec_t *x, cseq *cs) {
    rt_seq *s = cs->seq;
    s->n = cs->ins.len;
    s->instrs = PA_NEW_ARRAY(x, rt_instr, cs->ins.len);
    if (cs->ins.len) memcpy(s->instrs, cs->ins.data, sizeof(rt_instr) * cs->ins.len);
    gr_vec_free(&cs->ins);
}

/* Compiles a branch or function body (a SeqExpr, or any expression) into its own sequence. */
static gr_status compile_seq(rt_exec_t *x, rt_plan *p, ir_expr *e, rt_seq **out) {
    cseq cs = {.seq = pa_alloc(x, sizeof(rt_seq))};
    memset(cs.seq, 0, sizeof(rt_seq));
    *out = cs.seq;
    gr_status st = GR_OK;
    ir_expr *body = e;
    if (e->kind == IR_SEQ) {
        ir_seq *s = IR_AS(e, ir_seq);
        st = compile_blocks(x, p, &cs, s);
        body = s->body;
    }
    if (!st) st = compile_opd(x, p, &cs, body, &cs.seq->result, NULL);
    finish_cseq(x, &cs);
    return st;
}

/* ---- liveness ---- */

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

static void live_use(live_state *ls, uint32_t slot) {
    const rt_seq *def = ls->p->defs.data[slot].seq;
    for (int d = ls->depth - 1; d >= 0; d--) {
        if (ls->stack[d].seq == def) {
            ls->last[slot].seq = (rt_seq *)def;
            ls->last[slot].pos = ls->stack[d].pos;
            return;
        }
    }
}

static void live_opd(live_state *ls, const rt_opd *o) {
    if (o->kind == OPD_SLOT) live_use(ls, o->slot);
    else if (o->kind == OPD_TUPLE)
        for (uint32_t i = 0; i < o->n; i++) live_opd(ls, &o->items[i]);
}

static bool live_seq(live_state *ls, const rt_seq *s) {
    if (ls->depth >= 64) return false;
    live_frame *fr = &ls->stack[ls->depth++];
    fr->seq = s;
    for (uint32_t i = 0; i < s->n; i++) {
        fr->pos = (int32_t)i;
        const rt_instr *in = &s->instrs[i];
        for (uint32_t a = 0; a < in->nargs; a++) live_opd(ls, &in->args[a]);
        if (in->kind == INS_IF && (!live_seq(ls, in->then_s) || !live_seq(ls, in->else_s)))
            return false;
    }
    fr->pos = (int32_t)s->n;
    live_opd(ls, &s->result);
    ls->depth--;
    return true;
}

static slot_vec *free_list(rt_plan *p, rt_seq *seq, int32_t pos) {
    if (pos < 0) return &p->free_start;
    if ((uint32_t)pos >= seq->n) return &seq->free_end;
    return &seq->instrs[pos].frees;
}

static bool compute_liveness(rt_plan *p) {
    live_state ls = {.p = p};
    ls.last = gr_xcalloc(p->nslots ? p->nslots : 1, sizeof(*ls.last));
    bool ok = live_seq(&ls, p->body);
    for (uint32_t s = 0; ok && s < p->nslots; s++) {
        rt_seq *seq = ls.last[s].seq;
        int32_t pos = ls.last[s].pos;
        if (!seq) { /* never read: drop right after it is written */
            seq = p->defs.data[s].seq;
            pos = p->defs.data[s].pos;
        }
        gr_vec_push(free_list(p, seq, pos), s);
    }
    free(ls.last);
    return ok;
}

/* ---- the memory plan (entry body) ---- */

static void pat_syms(const rt_pat *pat, bool *in) {
    if (pat->kind == PAT_TUPLE)
        for (uint32_t i = 0; i < pat->n; i++) pat_syms(&pat->fields[i], in);
    if (!pat->dims) return;
    uint32_t n = pat->kind == PAT_PRIM ? 1 : (pat->ndim > 0 ? (uint32_t)pat->ndim : 0);
    for (uint32_t i = 0; i < n; i++)
        if (pat->dims[i].kind == DIM_VAR) in[pat->dims[i].v] = true;
}

/* Marks the symbols dim dm reads in used; false when one is not bound by the inputs. */
static bool dim_syms(const rt_plan *p, const rt_dim *dm, const bool *in, bool *used) {
    if (dm->kind == DIM_CONST) return true;
    if (dm->kind == DIM_VAR) {
        used[dm->v] = true;
        return in[dm->v];
    }
    for (const rt_symop *op = p->code.data + dm->v; op->op != SYM_END; op++)
        if (op->op == SYM_PUSH_V) {
            used[op->v] = true;
            if (!in[op->v]) return false;
        }
    return true;
}

static void slots_used(const rt_opd *o, uint32_t *end, uint32_t to) {
    if (o->kind == OPD_SLOT && end[o->slot] < to) end[o->slot] = to;
    if (o->kind == OPD_TUPLE)
        for (uint32_t i = 0; i < o->n; i++) slots_used(&o->items[i], end, to);
}

static void seq_slots_used(const rt_seq *q, uint32_t *end, uint32_t to) {
    for (uint32_t i = 0; i < q->n; i++) {
        const rt_instr *in = &q->instrs[i];
        for (uint32_t a = 0; a < in->nargs; a++) slots_used(&in->args[a], end, to);
        if (in->kind == INS_IF) {
            seq_slots_used(in->then_s, end, to);
            seq_slots_used(in->else_s, end, to);
        }
    }
    slots_used(&q->result, end, to);
}

/* Which results of the entry body get arena buffers, and their live intervals (positions in
 * the body). A value that escapes (the result, or through a tuple, an index, a move, a branch,
 * a call or a match_cast that may hand it on) lives as long as what holds it. */
static void plan_buffers(rt_exec_t *x, rt_plan *p) {
    rt_seq *body = p->body;
    uint32_t n = body->n;
    uint32_t *end = gr_xcalloc(p->nslots ? p->nslots : 1, sizeof(uint32_t));
    for (uint32_t k = 0; k < n; k++)
        for (uint32_t f = 0; f < body->instrs[k].frees.len; f++) end[body->instrs[k].frees.data[f]] = k;
    for (uint32_t f = 0; f < body->free_end.len; f++) end[body->free_end.data[f]] = n;
    for (uint32_t k = n; k-- > 0;) {
        const rt_instr *in = &body->instrs[k];
        if (in->kind == INS_MOVE || in->kind == INS_TGI || in->kind == INS_CALL || in->kind == INS_IF ||
            in->kind == INS_MATCH) {
            uint32_t to = end[in->dst];
            for (uint32_t a = 0; a < in->nargs; a++) slots_used(&in->args[a], end, to);
            if (in->kind == INS_IF) {
                seq_slots_used(in->then_s, end, to);
                seq_slots_used(in->else_s, end, to);
            }
        }
    }
    bool *in_sym = gr_xcalloc(p->nsyms + 1, sizeof(bool));
    for (uint32_t i = 0; i < p->nparams; i++) pat_syms(&p->param_pats[i], in_sym);
    GR_VEC(mbuf) bufs = {0};
    GR_VEC(rt_instr *) owner = {0};
    for (uint32_t k = 0; k < n; k++) {
        rt_instr *in = &body->instrs[k];
        if (end[in->dst] >= n) continue;
        mbuf mb = {.slot = in->dst, .start = k, .end = end[in->dst]};
        if (in->kind == INS_OP || in->kind == INS_HOST) {
            const ir_sinfo *s = in->kind == INS_OP ? in->call.out_sinfo : NULL;
            if (in->kind == INS_HOST) {
                mb.dtype = IR_DTYPE_F32;
                mb.ndim = in->group->ndim;
                if (in->group->dyn) {
                    mb.dims = compile_dims(x, p, (uint32_t)mb.ndim, in->group->out_sinfo->dims);
                } else {
                    mb.dims = PA_NEW_ARRAY(x, rt_dim, mb.ndim);
                    for (int32_t d = 0; d < mb.ndim; d++) mb.dims[d] = (rt_dim){DIM_CONST, in->group->shape[d]};
                }
            } else if (s && s->kind == IR_SINFO_TENSOR && !ir_dtype_is_void(s->dtype) && s->ndim >= 0 &&
                       s->ndim <= RT_MAX_NDIM && (s->ndim == 0 || s->dims)) {
                mb.dtype = s->dtype;
                mb.ndim = s->ndim;
                mb.dims = compile_dims(x, p, (uint32_t)s->ndim, s->dims);
            } else {
                continue;
            }
        } else if (in->kind == INS_DPS && !in->out_tuple && in->nout == 1) {
            mb.dtype = in->outs[0].dtype;
            mb.ndim = in->outs[0].ndim;
            mb.dims = in->outs[0].dims;
        } else {
            continue;
        }
        gr_vec_push(&bufs, mb);
        gr_vec_push(&owner, in);
    }
    /* sizes: static, or expressions of symbols the inputs bind (others stay on the heap) */
    bool *used = gr_xcalloc(p->nsyms + 1, sizeof(bool));
    uint32_t nb = 0;
    for (uint32_t b = 0; b < bufs.len; b++) {
        mbuf *mb = &bufs.data[b];
        bool *u = gr_xcalloc(p->nsyms + 1, sizeof(bool));
        bool ok = true, stat = true;
        int64_t numel = 1;
        for (int32_t d = 0; d < mb->ndim && ok; d++) {
            ok = dim_syms(p, &mb->dims[d], in_sym, u);
            if (mb->dims[d].kind == DIM_CONST) numel *= mb->dims[d].v < 0 ? 0 : mb->dims[d].v;
            else stat = false;
        }
        rt_instr *in = owner.data[b];
        if (!ok) {
            in->buf = -1;
        } else {
            for (uint32_t i = 0; i < p->nsyms; i++) used[i] |= u[i];
            mb->static_bytes = stat ? (size_t)numel * ir_dtype_bytes(mb->dtype) : SIZE_MAX;
            in->buf = (int32_t)nb;
            bufs.data[nb++] = *mb;
        }
        free(u);
    }
    gr_vec_free(&owner);
    x->nbuf = nb;
    x->bufs = PA_NEW_ARRAY(x, mbuf, nb);
    if (nb) memcpy(x->bufs, bufs.data, sizeof(mbuf) * nb);
    gr_vec_free(&bufs);
    x->key_syms = PA_NEW_ARRAY(x, uint32_t, p->nsyms);
    for (uint32_t i = 0; i < p->nsyms; i++)
        if (used[i]) x->key_syms[x->nkey++] = i;
    free(used);
    free(in_sym);
    free(end);
}

static rt_plan *compile_func(rt_exec_t *x, const ir_func *fn, const char *name) {
    uint64_t v;
    if (gr_map_get(&x->plan_of, GR_MAP_PTR(fn), &v)) return (rt_plan *)(uintptr_t)v;
    rt_plan *p = gr_xcalloc(1, sizeof(*p));
    gr_vec_push(&x->plans, p);
    gr_map_put(&x->plan_of, GR_MAP_PTR(fn), GR_MAP_PTR(p));
    p->fn = fn;
    p->name = name;
    p->nparams = fn->nparams;
    p->params = (const ir_var *const *)fn->params;
    gr_map_init(&p->slot_of);
    gr_map_init(&p->sym_of);
    gr_map_init(&p->fn_of);
    gr_map_init(&p->group_of);
    p->param_pats = PA_NEW_ARRAY(x, rt_pat, fn->nparams);
    p->who_top = PA_NEW_ARRAY(x, const char *, fn->nparams);
    p->who_call = PA_NEW_ARRAY(x, const char *, fn->nparams);
    for (uint32_t i = 0; i < fn->nparams; i++) {
        p->who_top[i] = pa_strf(x, "input '%s'", fn->params[i]->name);
        p->who_call[i] = pa_strf(x, "argument '%s' of function '%s'", fn->params[i]->name, name);
        bind_var(p, fn->params[i], NULL, -1);
        compile_pat(x, p, fn->params[i]->base.sinfo, &p->param_pats[i]);
    }
    bool entry = fn == x->entry_fn && !x->entry_seen;
    gr_status st = GR_OK;
    if (entry) {
        x->entry_seen = true;
        if (x->host && fn->body && fn->body->kind == IR_SEQ)
            st = fuse_entry(x, p, (const ir_seq *)fn->body);
    }
    if (!st) st = compile_seq(x, p, fn->body, &p->body);
    for (uint32_t i = 0; i < fn->nparams; i++) p->defs.data[i].seq = p->body;
    if (!st && !compute_liveness(p))
        st = cfail(x, p, NULL, fn->base.span, GR_ERR_UNSUPPORTED, "if/else nested too deeply");
    if (!st && entry) plan_buffers(x, p);
    p->sym_names = PA_NEW_ARRAY(x, const char *, p->nsyms);
    if (p->nsyms) memcpy(p->sym_names, p->sym_names_v.data, sizeof(char *) * p->nsyms);
    gr_vec_free(&p->sym_names_v);
    gr_map_free(&p->slot_of);
    gr_map_free(&p->sym_of);
    gr_map_free(&p->fn_of);
    gr_map_free(&p->group_of);
    return st ? NULL : p;
}

/* ======================================================================================== */
/* Running                                                                                   */
/* ======================================================================================== */

static gr_status eval_prog(const rt_plan *p, const rt_frame *f, int64_t off, int64_t *out,
                           gr_diag *d) {
    int64_t st[64];
    int sp = 0;
    for (const rt_symop *op = p->code.data + off;; op++) {
        int64_t a, b, r;
        switch (op->op) {
        case SYM_PUSH_C:
        case SYM_PUSH_V:
            if (sp >= 64)
                return gr_diag_set(d, GR_ERR_UNSUPPORTED, "symbolic expression too deep");
            if (op->op == SYM_PUSH_V && !f->sym_from[op->v])
                return gr_diag_set(d, GR_ERR_INVALID,
                                   "symbolic var '%s' has no value here (bind it from an input "
                                   "or a match_cast first)",
                                   p->sym_names[op->v]);
            st[sp++] = op->op == SYM_PUSH_C ? op->v : f->syms[op->v];
            break;
        case SYM_END: *out = st[sp - 1]; return GR_OK;
        default:
            b = st[--sp];
            a = st[--sp];
            if (op->op == SYM_ADD) {
                if (__builtin_add_overflow(a, b, &r)) goto ovf;
            } else if (op->op == SYM_MUL) {
                if (__builtin_mul_overflow(a, b, &r)) goto ovf;
            } else {
                if (b == 0) return gr_diag_set(d, GR_ERR_INVALID, "symbolic division by zero");
                int64_t q = a / b, m = a % b;
                if (m != 0 && ((m < 0) != (b < 0))) {
                    q--;
                    m += b;
                }
                r = op->op == SYM_FDIV ? q : m;
            }
            st[sp++] = r;
        }
    }
ovf:
    return gr_diag_set(d, GR_ERR_INVALID, "symbolic shape arithmetic overflows int64");
}

static gr_status eval_dim(const rt_plan *p, const rt_frame *f, const rt_dim *dm, int64_t *out,
                          gr_diag *d) {
    switch (dm->kind) {
    case DIM_CONST: *out = dm->v; return GR_OK;
    case DIM_VAR:
        if (!f->sym_from[dm->v])
            return gr_diag_set(d, GR_ERR_INVALID,
                               "symbolic var '%s' has no value here (bind it from an input or a "
                               "match_cast first)",
                               p->sym_names[dm->v]);
        *out = f->syms[dm->v];
        return GR_OK;
    default: return eval_prog(p, f, dm->v, out, d);
    }
}

static void slot_set(rt_run *x, rt_frame *f, uint32_t s, rt_value v) {
    if (f->slots[s].kind != RT_VAL_NONE) {
        rt_value_clear(&f->slots[s]);
        x->live--;
    }
    f->slots[s] = v;
    if (v.kind != RT_VAL_NONE && ++x->live > x->peak) x->peak = x->live;
}

static void slot_free(rt_run *x, rt_frame *f, uint32_t s) {
    if (f->slots[s].kind != RT_VAL_NONE) {
        rt_value_clear(&f->slots[s]);
        x->live--;
    }
}

/* Evaluates an operand. *owned tells whether *out holds references to drop (tuples built
 * here); slot and constant values are borrowed views. */
static gr_status opd_eval(const rt_plan *p, rt_frame *f, const rt_opd *o, rt_value *out,
                          bool *owned, gr_diag *d) {
    *owned = false;
    switch (o->kind) {
    case OPD_SLOT:
        *out = f->slots[o->slot];
        if (out->kind == RT_VAL_NONE)
            return gr_diag_set(d, GR_ERR_RUNTIME, "internal: read of an empty slot %u in '%s'",
                               o->slot, p->name);
        return GR_OK;
    case OPD_CONST: *out = o->cval; return GR_OK;
    case OPD_SHAPE:
        memset(out, 0, sizeof *out);
        out->kind = RT_VAL_SHAPE;
        out->u.shape.ndim = (int32_t)o->n;
        for (uint32_t i = 0; i < o->n; i++) {
            gr_status st = eval_dim(p, f, &o->dims[i], &out->u.shape.dims[i], d);
            if (st) return st;
        }
        return GR_OK;
    case OPD_PRIM:
        memset(out, 0, sizeof *out);
        out->kind = RT_VAL_INT;
        return eval_dim(p, f, &o->dims[0], &out->u.i, d);
    default: {
        rt_value t = rt_value_tuple(o->n);
        for (uint32_t i = 0; i < o->n; i++) {
            rt_value v;
            bool own;
            gr_status st = opd_eval(p, f, &o->items[i], &v, &own, d);
            if (st) {
                rt_value_clear(&t);
                return st;
            }
            t.u.tuple.items[i] = own ? v : rt_value_copy(&v);
        }
        *out = t;
        *owned = true;
        return GR_OK;
    }
    }
}

/* An owned value of the operand. */
static gr_status opd_take(const rt_plan *p, rt_frame *f, const rt_opd *o, rt_value *out,
                          gr_diag *d) {
    bool own;
    gr_status st = opd_eval(p, f, o, out, &own, d);
    if (!st && !own) *out = rt_value_copy(out);
    return st;
}

/* ---- matching values against compiled struct info ---- */

static void describe_value(const rt_value *v, char *buf, size_t cap) {
    int n = 0;
    switch (v->kind) {
    case RT_VAL_TENSOR: {
        const DLTensor *t = &v->u.t->dl;
        const char *dn = ir_dtype_name(t->dtype);
        n = snprintf(buf, cap, "%s tensor (", dn ? dn : "?");
        for (int32_t i = 0; i < t->ndim && (size_t)n < cap; i++)
            n += snprintf(buf + n, cap - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        if ((size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "%s)", t->ndim == 1 ? "," : "");
        break;
    }
    case RT_VAL_SHAPE: snprintf(buf, cap, "a shape of rank %d", v->u.shape.ndim); break;
    case RT_VAL_INT: snprintf(buf, cap, "an int %lld", (long long)v->u.i); break;
    case RT_VAL_FLOAT: snprintf(buf, cap, "a float %g", v->u.f); break;
    case RT_VAL_STR: snprintf(buf, cap, "a string"); break;
    case RT_VAL_TUPLE: snprintf(buf, cap, "a tuple of %u", v->u.tuple.n); break;
    case RT_VAL_OBJ: snprintf(buf, cap, "an object"); break;
    default: snprintf(buf, cap, "nothing"); break;
    }
}

typedef struct match_ctx {
    const rt_plan *p;
    rt_frame *f;
    const char *who;     /* "input 'x'" */
    const char *binder;  /* recorded as the origin of symbols bound here */
    gr_diag *d;
} match_ctx;

static gr_status match_fail(match_ctx *mc, const rt_pat *pat, const rt_value *v, const char *path,
                            const char *why) {
    char exp[512], got[256];
    if (pat->sinfo) ir_sinfo_snprint(pat->sinfo, exp, sizeof exp);
    else snprintf(exp, sizeof exp, "any");
    describe_value(v, got, sizeof got);
    return gr_diag_set(mc->d, GR_ERR_INVALID, "%s%s: %s; expected %s, got %s", mc->who, path, why,
                       exp, got);
}

/* Checks one dim; phase 0 binds plain vars (and checks bound ones), phase 1 checks computed
 * dims once every var of the value is bound. */
static gr_status match_dim(match_ctx *mc, const rt_pat *pat, const rt_value *v, const char *path,
                           const rt_dim *dm, int64_t got, int idx, int phase) {
    char why[320];
    const char *what = pat->kind == PAT_PRIM ? "value" : "dim";
    if (dm->kind == DIM_CONST) {
        if (phase == 0 && got != dm->v) {
            snprintf(why, sizeof why, "%s %d is %lld, expected %lld", what, idx, (long long)got,
                     (long long)dm->v);
            return match_fail(mc, pat, v, path, why);
        }
    } else if (dm->kind == DIM_VAR) {
        if (phase != 0) return GR_OK;
        uint32_t s = (uint32_t)dm->v;
        if (!mc->f->sym_from[s]) {
            mc->f->syms[s] = got;
            mc->f->sym_from[s] = mc->binder;
        } else if (mc->f->syms[s] != got) {
            snprintf(why, sizeof why, "%s %d is %lld, but %s = %lld (bound by %s)", what, idx,
                     (long long)got, mc->p->sym_names[s], (long long)mc->f->syms[s],
                     mc->f->sym_from[s]);
            return match_fail(mc, pat, v, path, why);
        }
    } else if (phase == 1) {
        int64_t want;
        if (eval_prog(mc->p, mc->f, dm->v, &want, NULL)) {
            snprintf(why, sizeof why,
                     "%s %d is %lld, but its expression uses a symbolic var nothing binds (or "
                     "divides by zero)",
                     what, idx, (long long)got);
            return match_fail(mc, pat, v, path, why);
        }
        if (want != got) {
            snprintf(why, sizeof why, "%s %d is %lld, but its expression evaluates to %lld", what,
                     idx, (long long)got, (long long)want);
            return match_fail(mc, pat, v, path, why);
        }
    }
    return GR_OK;
}

static gr_status match_pat(match_ctx *mc, const rt_pat *pat, const rt_value *v, const char *path,
                           int phase) {
    char why[256];
    gr_status st;
    switch (pat->kind) {
    case PAT_ANY: return GR_OK;
    case PAT_TENSOR:
    case PAT_SHAPE: {
        bool tensor = pat->kind == PAT_TENSOR;
        if (v->kind != (tensor ? RT_VAL_TENSOR : RT_VAL_SHAPE))
            return match_fail(mc, pat, v, path, tensor ? "not a tensor" : "not a shape");
        int32_t ndim = tensor ? v->u.t->dl.ndim : v->u.shape.ndim;
        const int64_t *dims = tensor ? v->u.t->dl.shape : v->u.shape.dims;
        if (phase == 0 && tensor && !ir_dtype_is_void(pat->dtype) &&
            !ir_dtype_eq(pat->dtype, v->u.t->dl.dtype)) {
            const char *gn = ir_dtype_name(v->u.t->dl.dtype), *en = ir_dtype_name(pat->dtype);
            snprintf(why, sizeof why, "dtype %s, expected %s", gn ? gn : "?", en ? en : "?");
            return match_fail(mc, pat, v, path, why);
        }
        if (pat->ndim >= 0 && ndim != pat->ndim) {
            snprintf(why, sizeof why, "rank %d, expected %d", ndim, pat->ndim);
            return match_fail(mc, pat, v, path, why);
        }
        if (pat->dims)
            for (int32_t i = 0; i < ndim; i++)
                if ((st = match_dim(mc, pat, v, path, &pat->dims[i], dims[i], i, phase)))
                    return st;
        return GR_OK;
    }
    case PAT_PRIM:
        if (v->kind != RT_VAL_INT && v->kind != RT_VAL_FLOAT)
            return match_fail(mc, pat, v, path, "not a prim value");
        if (phase == 0 && !ir_dtype_is_void(pat->dtype) &&
            ir_dtype_is_float(pat->dtype) != (v->kind == RT_VAL_FLOAT))
            return match_fail(mc, pat, v, path, "int/float kind differs");
        if (pat->dims && v->kind == RT_VAL_INT)
            return match_dim(mc, pat, v, path, &pat->dims[0], v->u.i, 0, phase);
        return GR_OK;
    case PAT_TUPLE:
        if (v->kind != RT_VAL_TUPLE) return match_fail(mc, pat, v, path, "not a tuple");
        if (v->u.tuple.n != pat->n) {
            snprintf(why, sizeof why, "tuple of %u fields, expected %u", v->u.tuple.n, pat->n);
            return match_fail(mc, pat, v, path, why);
        }
        for (uint32_t i = 0; i < pat->n; i++) {
            char sub[128];
            snprintf(sub, sizeof sub, "%s[%u]", path, i);
            if ((st = match_pat(mc, &pat->fields[i], &v->u.tuple.items[i], sub, phase)))
                return st;
        }
        return GR_OK;
    }
    return GR_OK;
}

static gr_status match_value(match_ctx *mc, const rt_pat *pat, const rt_value *v) {
    gr_status st = match_pat(mc, pat, v, "", 0);
    return st ? st : match_pat(mc, pat, v, "", 1);
}

/* ---- frames and instructions ---- */

static rt_frame *frame_get(rt_exec_t *x, rt_plan *p) {
    pthread_mutex_lock(&x->lock);
    rt_frame *f = p->frames;
    if (f) p->frames = f->next_free;
    pthread_mutex_unlock(&x->lock);
    if (!f) {
        f = gr_xcalloc(1, sizeof(*f));
        f->slots = gr_xcalloc(p->nslots ? p->nslots : 1, sizeof(rt_value));
        f->syms = gr_xcalloc(p->nsyms ? p->nsyms : 1, sizeof(int64_t));
        f->sym_from = gr_xcalloc(p->nsyms ? p->nsyms : 1, sizeof(char *));
        if (p == x->entry) {
            f->views = gr_xcalloc(x->nbuf + 1, sizeof(rt_tensor *));
            f->bufs = gr_xcalloc(x->max_host_args + 2, sizeof(void *));
            f->dyn_args = gr_xcalloc(RT_FUSE_DYN_ARGS(x->max_host_args), sizeof(int64_t));
            f->dyn_dims = gr_xcalloc((size_t)(x->max_host_args + 1) * RT_MAX_NDIM, sizeof(int64_t));
            f->dyn_ins = gr_xcalloc(x->max_host_args + 1, sizeof(int64_t *));
        }
    }
    return f;
}

static void frame_put(rt_run *r, rt_plan *p, rt_frame *f) {
    for (uint32_t s = 0; s < p->nslots; s++) slot_free(r, f, s);
    if (p->nsyms) memset(f->sym_from, 0, sizeof(char *) * p->nsyms);
    pthread_mutex_lock(&r->x->lock);
    f->next_free = p->frames;
    p->frames = f;
    pthread_mutex_unlock(&r->x->lock);
}

static gr_status run_plan(rt_run *x, rt_plan *p, const rt_value *args, uint32_t nargs,
                          bool top, rt_value *result, gr_diag *d);

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Adds the binding's location to an error raised by a kernel, callee or module. */
static gr_status annotate(const rt_plan *p, const rt_instr *in, gr_status st, gr_diag *d) {
    if (!d) return st;
    const char *layer = ir_span_layer(in->span);
    gr_diag_set_layer(d, layer ? layer : (in->var[0] ? in->var : NULL));
    if (in->kind == INS_OP) gr_diag_set_op(d, in->name);
    size_t len = strlen(d->msg);
    if (in->var[0] && len + 64 < sizeof d->msg && in->kind != INS_CALL)
        snprintf(d->msg + len, sizeof d->msg - len, " (function '%s', binding '%s')", p->name,
                 in->var);
    return st;
}

static gr_status flatten_tensors(const rt_value *v, dl_vec *out, gr_diag *d,
                                 const char *sym) {
    if (v->kind == RT_VAL_TENSOR) {
        gr_vec_push(out, &v->u.t->dl);
        return GR_OK;
    }
    if (v->kind == RT_VAL_TUPLE) {
        for (uint32_t i = 0; i < v->u.tuple.n; i++) {
            gr_status st = flatten_tensors(&v->u.tuple.items[i], out, d, sym);
            if (st) return st;
        }
        return GR_OK;
    }
    char got[128];
    describe_value(v, got, sizeof got);
    return gr_diag_set(d, GR_ERR_INVALID, "R.call_dps_packed('%s'): argument is %s, not a tensor",
                       sym, got);
}

/* ---- planned buffers at run time ---- */

static bool same_dims(const rt_tensor *t, int32_t ndim, const int64_t *shape) {
    if (t->dl.ndim != ndim) return false;
    for (int32_t k = 0; k < ndim; k++)
        if (t->dl.shape[k] != shape[k]) return false;
    return true;
}

/* A kernel may hand back one of its inputs (e.g. a cast to the same dtype): a value that is not
 * planned must not point into the arena, whose storage is reused. */
static gr_status detach_arena(const rt_frame *f, rt_value *v) {
    if (v->kind == RT_VAL_TUPLE) {
        for (uint32_t i = 0; i < v->u.tuple.n; i++) {
            gr_status st = detach_arena(f, &v->u.tuple.items[i]);
            if (st) return st;
        }
        return GR_OK;
    }
    if (v->kind != RT_VAL_TENSOR || !f->arena) return GR_OK;
    const char *p = rt_tensor_data(v->u.t), *a = f->arena;
    if (p < a || p >= a + f->arena_cap) return GR_OK;
    rt_tensor *c = rt_tensor_new(v->u.t->dl.dtype, v->u.t->dl.ndim, v->u.t->dl.shape);
    if (!c) return GR_ERR_NOMEM;
    memcpy(rt_tensor_data(c), p, rt_tensor_nbytes(c));
    rt_value_clear(v);
    *v = rt_value_tensor(c);
    return GR_OK;
}

/* A kernel's output: in its planned buffer (where the out hint put it, or copied there), or a
 * heap value not pointing into the arena. */
static gr_status place_out(const rt_exec_t *x, rt_frame *f, const rt_instr *in, rt_value *out,
                           gr_diag *d) {
    (void)x;
    if (in->buf < 0) {
        if (detach_arena(f, out) != GR_OK)
            return gr_diag_set(d, GR_ERR_NOMEM, "%s: cannot copy the output", in->name);
        return GR_OK;
    }
    rt_tensor *view = f->views[in->buf];
    if (out->kind != RT_VAL_TENSOR || !ir_dtype_eq(out->u.t->dl.dtype, view->dl.dtype) ||
        !same_dims(out->u.t, view->dl.ndim, view->dl.shape)) {
        char got[128] = "not a tensor";
        if (out->kind == RT_VAL_TENSOR) snprintf(got, sizeof got, "%s", RT_DIMS_STR(out->u.t->dl.ndim, out->u.t->dl.shape));
        return gr_diag_set(d, GR_ERR_RUNTIME,
                           "%s: the kernel's output %s does not match the struct info of '%s' %s",
                           in->name, got, in->var, RT_DIMS_STR(view->dl.ndim, view->dl.shape));
    }
    if (rt_tensor_data(out->u.t) != rt_tensor_data(view))
        memcpy(rt_tensor_data(view), rt_tensor_data(out->u.t), rt_tensor_nbytes(view));
    rt_value_clear(out);
    *out = rt_value_tensor(rt_tensor_retain(view));
    return GR_OK;
}

static gr_status run_host(rt_run *x, const rt_plan *p, rt_frame *f, const rt_instr *in,
                          gr_diag *d) {
    const rt_fuse_group *g = in->group;
    const int64_t **ins = f->dyn_ins;
    gr_status st = GR_OK;
    for (uint32_t a = 0; a < in->nargs && !st; a++) {
        rt_value v;
        bool own;
        st = opd_eval(p, f, &in->args[a], &v, &own, d);
        if (st) break;
        bool ok = v.kind == RT_VAL_TENSOR && ir_dtype_eq(v.u.t->dl.dtype, IR_DTYPE_F32) &&
                  (g->dyn ? v.u.t->dl.ndim == g->in_ndim[a] : same_dims(v.u.t, g->in_ndim[a], g->in_shape[a]));
        if (ok) {
            f->bufs[a] = rt_tensor_data(v.u.t);
            ins[a] = memcpy(f->dyn_dims + (size_t)a * RT_MAX_NDIM, v.u.t->dl.shape,
                            sizeof(int64_t) * (size_t)v.u.t->dl.ndim);
        }
        if (own) rt_value_clear(&v);
        if (!ok)
            st = gr_diag_set(d, GR_ERR_RUNTIME, "%s: input %u is not the planned float32 tensor", g->name, a);
    }
    int64_t shape[RT_MAX_NDIM], numel = 1;
    const int64_t *oshape = g->shape;
    if (!st && g->dyn) {
        st = rt_fuse_dyn_args(g, ins, f->dyn_args, shape, &numel, d);
        oshape = shape;
        f->bufs[in->nargs + 1] = f->dyn_args;
    }
    if (st) return st;
    rt_tensor *o = NULL;
    if (in->buf >= 0 && same_dims(f->views[in->buf], g->ndim, oshape)) o = rt_tensor_retain(f->views[in->buf]);
    else if (in->buf < 0 || g->dyn) o = rt_tensor_new(IR_DTYPE_F32, g->ndim, oshape);
    if (!o) return gr_diag_set(d, GR_ERR_NOMEM, "%s: cannot allocate the output", g->name);
    f->bufs[in->nargs] = rt_tensor_data(o);
    if (numel > 0) in->hostfn(f->bufs);
    slot_set(x, f, in->dst, rt_value_tensor(o));
    return GR_OK;
}

static void splan_free(shape_plan *sp) {
    free(sp->key);
    free(sp->off);
    free(sp->size);
    free(sp);
}

/* Drops a frame's reference (under the lock). */
static void splan_unref(shape_plan *sp) {
    if (sp && --sp->refs == 0 && sp->evicted) splan_free(sp);
}

/* The plan for the frame's symbol values: buffer sizes evaluated, offsets packed. */
static gr_status splan_make(const rt_exec_t *x, const rt_frame *f, const int64_t *key,
                            shape_plan **out, gr_diag *d) {
    const rt_plan *p = x->entry;
    shape_plan *sp = gr_xcalloc(1, sizeof *sp);
    sp->key = gr_xcalloc(x->nkey + 1, sizeof(int64_t));
    if (x->nkey) memcpy(sp->key, key, sizeof(int64_t) * x->nkey);
    sp->off = gr_xcalloc(x->nbuf + 1, sizeof(size_t));
    sp->size = gr_xcalloc(x->nbuf + 1, sizeof(size_t));
    uint32_t *bs = gr_xcalloc(x->nbuf + 1, sizeof(uint32_t)), *be = gr_xcalloc(x->nbuf + 1, sizeof(uint32_t));
    gr_status st = GR_OK;
    for (uint32_t b = 0; b < x->nbuf && !st; b++) {
        const mbuf *mb = &x->bufs[b];
        size_t n = ir_dtype_bytes(mb->dtype);
        for (int32_t k = 0; k < mb->ndim && !st; k++) {
            int64_t v = 0;
            if (f) st = eval_dim(p, f, &mb->dims[k], &v, d);
            else v = mb->dims[k].v; /* static */
            if (!st && v < 0)
                st = gr_diag_set(d, GR_ERR_INVALID, "'%s' would have dim %d = %lld for these inputs",
                                 p->body->instrs[mb->start].var, k, (long long)v);
            if (!st && __builtin_mul_overflow(n, (size_t)v, &n))
                st = gr_diag_set(d, GR_ERR_INVALID, "'%s' is too large for these inputs",
                                 p->body->instrs[mb->start].var);
        }
        sp->size[b] = n;
        bs[b] = mb->start;
        be[b] = mb->end;
    }
    if (!st) sp->arena = rt_plan_memory(x->nbuf, sp->size, bs, be, sp->off);
    free(bs);
    free(be);
    if (st) {
        splan_free(sp);
        return st;
    }
    *out = sp;
    return GR_OK;
}

/* Points the entry frame's planned buffers at an arena laid out for its input shapes: the
 * cached plan for these symbol values, or a new one (a profile event "plan" times it). */
static gr_status frame_plan(rt_run *r, rt_frame *f, gr_diag *d) {
    rt_exec_t *x = r->x;
    int64_t key[64];
    int64_t *k = x->nkey <= 64 ? key : gr_xmalloc(sizeof(int64_t) * x->nkey);
    for (uint32_t i = 0; i < x->nkey; i++) k[i] = f->syms[x->key_syms[i]];
    shape_plan *sp = NULL;
    pthread_mutex_lock(&x->lock);
    if (x->static_plan) sp = x->static_plan;
    for (shape_plan *c = x->splans; c && !sp; c = c->next)
        if (!memcmp(c->key, k, sizeof(int64_t) * x->nkey)) sp = c;
    if (sp) {
        sp->refs++;
        sp->used = ++x->tick;
    }
    pthread_mutex_unlock(&x->lock);
    gr_status st = GR_OK;
    if (!sp) {
        uint64_t t0 = now_ns();
        st = splan_make(x, f, k, &sp, d);
        if (!st) {
            pthread_mutex_lock(&x->lock);
            sp->refs = 1;
            sp->used = ++x->tick;
            sp->next = x->splans;
            x->splans = sp;
            if (++x->nsplans > SHAPE_PLAN_CACHE) {
                /* evict the least recently used (freed once no frame uses it) */
                shape_plan **lru = NULL;
                for (shape_plan **c = &x->splans; *c; c = &(*c)->next)
                    if (*c != sp && (!lru || (*c)->used < (*lru)->used)) lru = c;
                shape_plan *e = *lru;
                *lru = e->next;
                x->nsplans--;
                e->evicted = true;
                e->refs++;
                splan_unref(e);
            }
            pthread_mutex_unlock(&x->lock);
            if (r->prof) {
                rt_exec_event ev = {"plan", "memory plan", "", NULL, now_ns() - t0};
                r->prof(&ev, r->prof_user);
            }
        }
    }
    if (k != key) free(k);
    if (st) return st;
    if (f->vplan == sp) {
        pthread_mutex_lock(&x->lock);
        splan_unref(sp);
        pthread_mutex_unlock(&x->lock);
        return GR_OK;
    }
    pthread_mutex_lock(&x->lock);
    splan_unref(f->vplan);
    pthread_mutex_unlock(&x->lock);
    f->vplan = NULL;
    if (sp->arena > f->arena_cap) {
        free(f->arena);
        f->arena_cap = 0;
        f->arena = aligned_alloc(64, (sp->arena + 63) & ~(size_t)63);
        if (!f->arena) st = gr_diag_set(d, GR_ERR_NOMEM, "cannot allocate the %zu-byte arena", sp->arena);
        else f->arena_cap = sp->arena;
    }
    for (uint32_t b = 0; b < x->nbuf && !st; b++) {
        const mbuf *mb = &x->bufs[b];
        int64_t shape[RT_MAX_NDIM];
        for (int32_t j = 0; j < mb->ndim && !st; j++) st = eval_dim(x->entry, f, &mb->dims[j], &shape[j], d);
        if (st) break;
        rt_tensor_release(f->views[b]);
        f->views[b] = rt_tensor_wrap(mb->dtype, mb->ndim, shape, (char *)f->arena + sp->off[b]);
        if (!f->views[b]) st = gr_diag_set(d, GR_ERR_NOMEM, "cannot allocate a tensor view");
    }
    pthread_mutex_lock(&x->lock);
    if (st) splan_unref(sp);
    else f->vplan = sp;
    pthread_mutex_unlock(&x->lock);
    return st;
}

static gr_status run_dps(rt_run *x, const rt_plan *p, rt_frame *f, const rt_instr *in,
                         gr_diag *d) {
    (void)x;
    rt_value argv;
    bool own;
    gr_status st = opd_eval(p, f, &in->args[0], &argv, &own, d);
    if (st) return st;
    dl_vec dl = {0};
    rt_value out = in->out_tuple ? rt_value_tuple(in->nout) : (rt_value){0};
    if ((st = flatten_tensors(&argv, &dl, d, in->name))) goto done;
    uint32_t nin = dl.len;
    for (uint32_t i = 0; i < in->nout; i++) {
        const rt_outspec *os = &in->outs[i];
        int64_t shape[RT_MAX_NDIM];
        for (int32_t k = 0; k < os->ndim; k++) {
            if ((st = eval_dim(p, f, &os->dims[k], &shape[k], d))) goto done;
            if (shape[k] < 0) {
                st = gr_diag_set(d, GR_ERR_INVALID,
                                 "R.call_dps_packed('%s'): output %u has negative dim %lld",
                                 in->name, i, (long long)shape[k]);
                goto done;
            }
        }
        rt_tensor *t = in->buf >= 0 ? rt_tensor_retain(f->views[in->buf])
                                    : rt_tensor_new(os->dtype, os->ndim, shape);
        if (!t) {
            st = gr_diag_set(d, GR_ERR_NOMEM, "R.call_dps_packed('%s'): cannot allocate output %u",
                             in->name, i);
            goto done;
        }
        if (in->out_tuple) out.u.tuple.items[i] = rt_value_tensor(t);
        else out = rt_value_tensor(t);
        gr_vec_push(&dl, &t->dl);
    }
    st = rt_module_call(in->mod, in->name, dl.data, nin, in->nout, d);
    if (!st) {
        slot_set(x, f, in->dst, out);
        out.kind = RT_VAL_NONE;
    } else if (d) {
        gr_diag_set_op(d, "R.call_dps_packed");
    }
done:
    rt_value_clear(&out);
    gr_vec_free(&dl);
    if (own) rt_value_clear(&argv);
    return st;
}

static gr_status run_seq(rt_run *x, rt_plan *p, rt_frame *f, const rt_seq *s,
                         rt_value *result, gr_diag *d);

static gr_status run_instr(rt_run *x, rt_plan *p, rt_frame *f, const rt_instr *in,
                           gr_diag *d) {
    gr_status st = GR_OK;
    rt_value v;
    bool own;
    switch (in->kind) {
    case INS_OP:
    case INS_CALL: {
        rt_value stackv[8];
        bool stacko[8];
        rt_value *av = in->nargs <= 8 ? stackv : gr_xmalloc(sizeof(rt_value) * in->nargs);
        bool *ao = in->nargs <= 8 ? stacko : gr_xmalloc(sizeof(bool) * in->nargs);
        uint32_t done = 0;
        for (; done < in->nargs; done++)
            if ((st = opd_eval(p, f, &in->args[done], &av[done], &ao[done], d))) break;
        if (!st) {
            rt_value out = {0};
            if (in->kind == INS_OP) {
                rt_kernel_call call = in->call;
                call.args = av;
                /* let the kernel allocate its output in its planned buffer (no copy) */
                rt_tensor *view = in->buf >= 0 ? f->views[in->buf] : NULL;
                if (view) rt_kernel_out_hint(rt_tensor_data(view), rt_tensor_nbytes(view));
                st = in->kernel(&call, &out, d);
                if (view) rt_kernel_out_hint(NULL, 0);
            } else {
                st = run_plan(x, in->callee, av, in->nargs, false, &out, d);
            }
            if (!st && in->kind == INS_OP) st = place_out(x->x, f, in, &out, d);
            if (st) {
                rt_value_clear(&out);
                annotate(p, in, st, d);
            } else {
                slot_set(x, f, in->dst, out);
            }
        }
        for (uint32_t i = 0; i < done; i++)
            if (ao[i]) rt_value_clear(&av[i]);
        if (av != stackv) {
            free(av);
            free(ao);
        }
        return st;
    }
    case INS_HOST:
        st = run_host(x, p, f, in, d);
        return st ? annotate(p, in, st, d) : st;
    case INS_DPS:
        st = run_dps(x, p, f, in, d);
        return st ? annotate(p, in, st, d) : st;
    case INS_MOVE:
        if ((st = opd_take(p, f, &in->args[0], &v, d))) return annotate(p, in, st, d);
        slot_set(x, f, in->dst, v);
        return GR_OK;
    case INS_TGI:
        if ((st = opd_eval(p, f, &in->args[0], &v, &own, d))) return annotate(p, in, st, d);
        if (v.kind != RT_VAL_TUPLE || in->index < 0 || (uint32_t)in->index >= v.u.tuple.n) {
            char got[128];
            describe_value(&v, got, sizeof got);
            st = gr_diag_set(d, GR_ERR_INVALID, "tuple index %d out of range for %s", in->index,
                             got);
        } else {
            slot_set(x, f, in->dst, rt_value_copy(&v.u.tuple.items[in->index]));
        }
        if (own) rt_value_clear(&v);
        return st ? annotate(p, in, st, d) : st;
    case INS_IF: {
        if ((st = opd_eval(p, f, &in->args[0], &v, &own, d))) return annotate(p, in, st, d);
        bool cond = false;
        if (v.kind == RT_VAL_TENSOR && rt_tensor_numel(v.u.t) == 1)
            cond = rt_tensor_get_f64(v.u.t, 0) != 0.0;
        else if (v.kind == RT_VAL_INT)
            cond = v.u.i != 0;
        else {
            char got[128];
            describe_value(&v, got, sizeof got);
            st = gr_diag_set(d, GR_ERR_INVALID, "if condition is %s, not a scalar", got);
        }
        if (own) rt_value_clear(&v);
        if (st) return annotate(p, in, st, d);
        rt_value r = {0};
        if ((st = run_seq(x, p, f, cond ? in->then_s : in->else_s, &r, d))) return st;
        slot_set(x, f, in->dst, r);
        return GR_OK;
    }
    case INS_MATCH: {
        if ((st = opd_eval(p, f, &in->args[0], &v, &own, d))) return annotate(p, in, st, d);
        match_ctx mc = {p, f, in->name, in->name, d};
        st = match_value(&mc, in->pat, &v);
        if (!st) slot_set(x, f, in->dst, own ? v : rt_value_copy(&v));
        else if (own) rt_value_clear(&v);
        return st ? annotate(p, in, st, d) : st;
    }
    }
    return gr_diag_set(d, GR_ERR_RUNTIME, "internal: bad instruction");
}

static gr_status run_seq(rt_run *x, rt_plan *p, rt_frame *f, const rt_seq *s,
                         rt_value *result, gr_diag *d) {
    for (uint32_t i = 0; i < s->n; i++) {
        const rt_instr *in = &s->instrs[i];
        gr_status st;
        if (x->prof && in->kind != INS_IF) {
            uint64_t t0 = now_ns();
            st = run_instr(x, p, f, in, d);
            rt_exec_event ev = {ins_kind_name[in->kind], in->name ? in->name : "", in->var, in->span,
                                now_ns() - t0};
            x->prof(&ev, x->prof_user);
        } else {
            st = run_instr(x, p, f, in, d);
        }
        if (st) return st;
        if (x->x->tap && (in->kind == INS_OP || in->kind == INS_TGI) && f->slots[in->dst].kind != RT_VAL_NONE) {
            rt_exec_event ev = {in->kind == INS_OP ? "op" : "other", in->name ? in->name : "", in->var, in->span, 0};
            x->x->tap(&ev, &f->slots[in->dst], x->x->tap_user);
        }
        for (uint32_t k = 0; k < in->frees.len; k++) slot_free(x, f, in->frees.data[k]);
    }
    gr_status st = opd_take(p, f, &s->result, result, d);
    for (uint32_t k = 0; k < s->free_end.len; k++) slot_free(x, f, s->free_end.data[k]);
    return st;
}

static gr_status run_plan(rt_run *x, rt_plan *p, const rt_value *args, uint32_t nargs,
                          bool top, rt_value *result, gr_diag *d) {
    if (nargs != p->nparams)
        return gr_diag_set(d, GR_ERR_INVALID, "function '%s' takes %u inputs, got %u", p->name,
                           p->nparams, nargs);
    rt_frame *f = frame_get(x->x, p);
    gr_status st = GR_OK;
    for (int phase = 0; phase < 2 && !st; phase++) {
        for (uint32_t i = 0; i < nargs && !st; i++) {
            const char *who = top ? p->who_top[i] : p->who_call[i];
            match_ctx mc = {p, f, who, who, d};
            st = match_pat(&mc, &p->param_pats[i], &args[i], "", phase);
        }
    }
    if (!st && top && x->x->nbuf) st = frame_plan(x, f, d);
    if (!st) {
        for (uint32_t i = 0; i < nargs; i++) slot_set(x, f, i, rt_value_copy(&args[i]));
        for (uint32_t k = 0; k < p->free_start.len; k++) slot_free(x, f, p->free_start.data[k]);
        st = run_seq(x, p, f, p->body, result, d);
    }
    frame_put(x, p, f);
    return st;
}

/* ======================================================================================== */
/* Public API                                                                                */
/* ======================================================================================== */

static void free_seq(rt_seq *s) {
    for (uint32_t i = 0; i < s->n; i++) {
        gr_vec_free(&s->instrs[i].frees);
        if (s->instrs[i].kind == INS_IF) {
            free_seq(s->instrs[i].then_s);
            free_seq(s->instrs[i].else_s);
        }
    }
    gr_vec_free(&s->free_end);
}

gr_status rt_px_new(const ir_module *m, const char *func, const rt_host_lowering *host,
                    rt_px **out, gr_diag *diag) {
    *out = NULL;
    ir_func *fn = ir_module_func(m, func);
    if (!fn || fn->base.kind != IR_FUNC)
        return gr_diag_set(diag, GR_ERR_NOT_FOUND, "the module has no function '%s'", func);
    rt_exec_t *x = gr_xcalloc(1, sizeof(*x));
    x->m = m;
    x->host = host;
    x->cdiag = diag;
    x->entry_fn = fn;
    pthread_mutex_init(&x->lock, NULL);
    gr_map_init(&x->plan_of);
    ir_gvar *gv = ir_module_gvar(m, func);
    x->entry = compile_func(x, fn, gv ? gv->name : func);
    fuse_done(x);
    x->cdiag = NULL;
    gr_status st = GR_OK;
    if (!x->entry) {
        if (diag && diag->code == GR_OK)
            gr_diag_set(diag, GR_ERR_INVALID, "cannot prepare function '%s'", func);
        st = diag ? diag->code : GR_ERR_INVALID;
    }
    if (!st && host) {
        for (uint32_t g = 0; g < x->groups.len && !st; g++)
            st = host->add_group(host->self, x->groups.data[g], diag);
        if (!st) st = host->finalize(host->self, diag);
        rt_seq *body = x->entry->body;
        for (uint32_t k = 0; k < body->n && !st; k++) {
            rt_instr *in = &body->instrs[k];
            if (in->kind != INS_HOST) continue;
            in->hostfn = host->lookup(host->self, in->name);
            if (!in->hostfn)
                st = gr_diag_set(diag, GR_ERR_NOT_FOUND, "host kernel '%s' was not compiled", in->name);
        }
    }
    bool stat = true;
    for (uint32_t b = 0; !st && b < x->nbuf; b++) stat &= x->bufs[b].static_bytes != SIZE_MAX;
    if (!st && x->nbuf && stat) {
        st = splan_make(x, NULL, NULL, &x->static_plan, diag);
        /* one arena up front: an arena that cannot be had fails here, not at the first run */
        if (!st) {
            rt_frame *f = frame_get(x, x->entry);
            f->arena = aligned_alloc(64, (x->static_plan->arena + 63) & ~(size_t)63);
            if (!f->arena && x->static_plan->arena)
                st = gr_diag_set(diag, GR_ERR_NOMEM, "cannot allocate the %zu-byte arena",
                                 x->static_plan->arena);
            else f->arena_cap = x->static_plan->arena;
            f->next_free = x->entry->frames;
            x->entry->frames = f;
        }
    }
    if (st) {
        rt_exec_free(x);
        return st;
    }
    *out = x;
    return GR_OK;
}

gr_status rt_exec_new(const ir_module *m, const char *func, rt_exec_t **out, gr_diag *diag) {
    return rt_px_new(m, func, NULL, out, diag);
}

static void frame_free(rt_exec_t *x, rt_frame *f) {
    free(f->slots);
    free(f->syms);
    free(f->sym_from);
    for (uint32_t b = 0; f->views && b < x->nbuf; b++) rt_tensor_release(f->views[b]);
    free(f->views);
    free(f->bufs);
    free(f->dyn_args);
    free(f->dyn_dims);
    free(f->dyn_ins);
    free(f->arena);
    splan_unref(f->vplan);
    free(f);
}

void rt_exec_free(rt_exec_t *x) {
    if (!x) return;
    for (uint32_t i = 0; i < x->plans.len; i++) {
        rt_plan *p = x->plans.data[i];
        if (p->body) free_seq(p->body);
        gr_vec_free(&p->free_start);
        gr_vec_free(&p->code);
        gr_vec_free(&p->defs);
        gr_vec_free(&p->sym_names_v);
        gr_map_free(&p->slot_of);
        gr_map_free(&p->sym_of);
        gr_map_free(&p->fn_of);
        gr_map_free(&p->group_of);
        for (rt_frame *f = p->frames, *nx; f; f = nx) {
            nx = f->next_free;
            frame_free(x, f);
        }
        free(p);
    }
    for (shape_plan *c = x->splans, *nx; c; c = nx) {
        nx = c->next;
        splan_free(c);
    }
    if (x->static_plan) splan_free(x->static_plan);
    gr_vec_free(&x->plans);
    gr_vec_free(&x->groups);
    for (uint32_t i = 0; i < x->consts.len; i++) rt_tensor_release(x->consts.data[i]);
    gr_vec_free(&x->consts);
    gr_map_free(&x->plan_of);
    pthread_mutex_destroy(&x->lock);
    for (pa_chunk *c = x->chunks, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    free(x);
}

void rt_px_free(rt_px *x) { rt_exec_free(x); }

uint32_t rt_exec_num_inputs(const rt_exec_t *x) { return x->entry->nparams; }

const char *rt_exec_input_name(const rt_exec_t *x, uint32_t i) {
    return i < x->entry->nparams ? x->entry->params[i]->name : NULL;
}

const ir_sinfo *rt_exec_input_sinfo(const rt_exec_t *x, uint32_t i) {
    return i < x->entry->nparams ? x->entry->params[i]->base.sinfo : NULL;
}

gr_status rt_exec_run(rt_exec_t *x, const rt_value *inputs, uint32_t nin, rt_value *result,
                      gr_diag *diag) {
    memset(result, 0, sizeof *result);
    rt_run r = {.x = x, .prof = x->prof, .prof_user = x->prof_user};
    gr_status st = run_plan(&r, x->entry, inputs, nin, true, result, diag);
    if (st) rt_value_clear(result);
    __atomic_store_n(&x->last_peak, r.peak, __ATOMIC_RELAXED);
    return st;
}

void rt_exec_set_tap(rt_exec_t *x, rt_exec_tap_fn fn, void *user) {
    x->tap = fn;
    x->tap_user = user;
}

void rt_exec_set_profiler(rt_exec_t *x, rt_exec_profile_fn fn, void *user) {
    x->prof = fn;
    x->prof_user = user;
}

uint32_t rt_exec_peak_live(const rt_exec_t *x) { return __atomic_load_n(&x->last_peak, __ATOMIC_RELAXED); }

/* ---- the planned-executor view (runtime/plan.h) ---- */

uint32_t rt_px_num_inputs(const rt_px *x) { return rt_exec_num_inputs(x); }
const char *rt_px_input_name(const rt_px *x, uint32_t i) { return rt_exec_input_name(x, i); }
const ir_sinfo *rt_px_input_sinfo(const rt_px *x, uint32_t i) { return rt_exec_input_sinfo(x, i); }
const ir_sinfo *rt_px_output_sinfo(const rt_px *x) {
    const ir_func *fn = x->entry->fn;
    return fn->ret_sinfo ? fn->ret_sinfo : fn->body->sinfo;
}
gr_status rt_px_run(rt_px *x, const rt_value *inputs, uint32_t nin, rt_value *result,
                    gr_diag *diag) {
    return rt_exec_run(x, inputs, nin, result, diag);
}
void rt_px_set_profiler(rt_px *x, rt_exec_profile_fn fn, void *user) { rt_exec_set_profiler(x, fn, user); }
uint32_t rt_px_num_groups(const rt_px *x) { return x->groups.len; }
const rt_fuse_group *rt_px_group(const rt_px *x, uint32_t i) { return x->groups.data[i]; }

void rt_px_buffer(const rt_px *x, uint32_t i, size_t *offset, size_t *size, const char **var) {
    const mbuf *mb = &x->bufs[i];
    if (offset) *offset = x->static_plan ? x->static_plan->off[i] : 0;
    if (size) *size = mb->static_bytes == SIZE_MAX ? 0 : mb->static_bytes;
    if (var) *var = x->entry->body->instrs[mb->start].var;
}

uint32_t rt_px_num_instrs(const rt_px *x) { return x->entry->body->n; }
void rt_px_instr(const rt_px *x, uint32_t k, const char **kind, const char **name,
                 const char **var, const ir_span **span) {
    const rt_instr *in = &x->entry->body->instrs[k];
    if (kind) *kind = ins_kind_name[in->kind];
    if (name) *name = in->name ? in->name : "";
    if (var) *var = in->var;
    if (span) *span = in->span;
}

void rt_px_get_stats(const rt_px *x, rt_px_stats *o) {
    memset(o, 0, sizeof *o);
    const rt_seq *body = x->entry->body;
    o->ninstr = body->n;
    for (uint32_t k = 0; k < body->n; k++) {
        const rt_instr *in = &body->instrs[k];
        o->nkernel += in->kind == INS_OP;
        o->nhost += in->kind == INS_HOST;
        o->nextern += in->kind == INS_DPS;
        if (in->kind == INS_OP || in->kind == INS_HOST || in->kind == INS_DPS) o->nunplanned += in->buf < 0;
    }
    o->nfused_ops = x->nfused_ops;
    o->nplanned = x->nbuf;
    o->arena_bytes = x->static_plan ? x->static_plan->arena : 0;
    for (uint32_t b = 0; b < x->nbuf; b++)
        if (x->bufs[b].static_bytes != SIZE_MAX) o->intermediate_bytes += x->bufs[b].static_bytes;
}
