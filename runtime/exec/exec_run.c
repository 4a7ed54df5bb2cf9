/* The executor at run time: symbolic dims, slots, checks of values against compiled struct info,
 * frames, the instructions, and planned buffers (runtime/exec/executor.c has the design). */
#include <time.h>

#include "runtime/exec/executor_impl.h"

const char *const rt_x_ins_kind_name[] = {"op", "host", "extern", "other", "other", "call", "other", "other"};

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

rt_frame *rt_x_frame_get(rt_exec_t *x, rt_plan *p) {
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

void rt_x_splan_free(shape_plan *sp) {
    free(sp->key);
    free(sp->off);
    free(sp->size);
    free(sp);
}

/* Drops a frame's reference (under the lock). */
void rt_x_splan_unref(shape_plan *sp) {
    if (sp && --sp->refs == 0 && sp->evicted) rt_x_splan_free(sp);
}

/* The plan for the frame's symbol values: buffer sizes evaluated, offsets packed. */
gr_status rt_x_splan_make(const rt_exec_t *x, const rt_frame *f, const int64_t *key,
                          const rt_px_stored_plan *given, shape_plan **out, gr_diag *d) {
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
    if (!st && given) {
        /* the build's plan: it must be one for these buffers and lie inside its arena (whether
         * it shares storage well was the build's business) */
        bool ok = given->n == x->nbuf;
        for (uint32_t b = 0; ok && b < x->nbuf; b++)
            ok = given->size[b] == sp->size[b] && given->off[b] % 64 == 0 && given->off[b] <= given->arena &&
                 given->arena - given->off[b] >= ((sp->size[b] + 63) & ~(size_t)63);
        if (ok) {
            memcpy(sp->off, given->off, sizeof(size_t) * x->nbuf);
            sp->arena = given->arena;
        } else {
            st = gr_diag_set(d, GR_ERR_INVALID, "the stored memory plan does not fit the function's %u buffers",
                             x->nbuf);
        }
    } else if (!st) {
        sp->arena = rt_plan_memory(x->nbuf, sp->size, bs, be, sp->off);
    }
    free(bs);
    free(be);
    if (st) {
        rt_x_splan_free(sp);
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
        st = rt_x_splan_make(x, f, k, NULL, &sp, d);
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
                rt_x_splan_unref(e);
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
        rt_x_splan_unref(sp);
        pthread_mutex_unlock(&x->lock);
        return GR_OK;
    }
    pthread_mutex_lock(&x->lock);
    rt_x_splan_unref(f->vplan);
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
    if (st) rt_x_splan_unref(sp);
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
                st = rt_x_run_plan(x, in->callee, av, in->nargs, false, &out, d);
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
            rt_exec_event ev = {rt_x_ins_kind_name[in->kind], in->name ? in->name : "", in->var, in->span,
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

gr_status rt_x_run_plan(rt_run *x, rt_plan *p, const rt_value *args, uint32_t nargs,
                        bool top, rt_value *result, gr_diag *d) {
    if (nargs != p->nparams)
        return gr_diag_set(d, GR_ERR_INVALID, "function '%s' takes %u inputs, got %u", p->name,
                           p->nparams, nargs);
    if (x->depth >= RT_MAX_CALL_DEPTH)
        return gr_diag_set(d, GR_ERR_RUNTIME, "function '%s': calls nested deeper than %d (a recursion that does not end?)",
                           p->name, RT_MAX_CALL_DEPTH);
    x->depth++;
    rt_frame *f = rt_x_frame_get(x->x, p);
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
    x->depth--;
    return st;
}

/* ======================================================================================== */
