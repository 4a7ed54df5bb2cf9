/* The executor's compiler: a function into instructions over dense slots, symbolic dims into
 * stack programs, host fusion of the entry function, liveness, and the memory plan of the entry
 * body (runtime/exec/executor.c has the design). */
#include <stdarg.h>

#include "runtime/exec/executor_impl.h"

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

/* ======================================================================================== */
/* Compilation                                                                               */
/* ======================================================================================== */



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
        target = rt_x_compile_func(x, fn, gname);
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

void rt_x_fuse_done(rt_exec_t *x) {
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
                rt_plan *fp = rt_x_compile_func(x, IR_AS(bd->value, ir_func), fname);
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

rt_plan *rt_x_compile_func(rt_exec_t *x, const ir_func *fn, const char *name) {
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
