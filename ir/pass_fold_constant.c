/* FoldConstant: an op call whose arguments are all known (constants, static shapes, scalars)
 * is evaluated with the reference kernels (runtime/kernels.h) and replaced by the resulting
 * constant; an `if` whose condition is a constant becomes the branch it takes. The new constant
 * carries the SequentialSpan of the folded call and of the constants it consumed; the taken
 * branch carries SequentialSpan(branch, if) (seed 001's FoldConstant example). */
#include <string.h>

#include "ir/op.h"
#include "ir/pass_impl.h"
#include "ir/si_builder.h"
#include "runtime/kernels.h"
#include "base/tensor.h"

enum { FOLD_MAX_ELEMS = 1 << 24 };  /* do not materialize huge constants */

/* Converts a known argument into a kernel value; false when it is not known. */
static bool known_value(const ir_expr *e, rt_value *out) {
    memset(out, 0, sizeof(*out));
    switch ((ir_expr_kind)e->kind) {
    case IR_CONST:
        *out = rt_value_tensor(rt_tensor_retain(((const ir_const *)e)->data));
        return true;
    case IR_SHAPE: {
        const ir_shape_expr *s = (const ir_shape_expr *)e;
        if (s->n > RT_MAX_NDIM) return false;
        int64_t dims[RT_MAX_NDIM];
        /* the dims of the expression itself (its struct info is a Shape, not a Tensor) */
        for (uint32_t i = 0; i < s->n; i++)
            if (!ir_prim_is_int(s->dims[i], &dims[i])) return false;
        out->kind = RT_VAL_SHAPE;
        out->u.shape.ndim = (int32_t)s->n;
        memcpy(out->u.shape.dims, dims, sizeof(int64_t) * s->n);
        return true;
    }
    case IR_PRIMVAL: {
        const ir_primval *p = (const ir_primval *)e;
        if (ir_dtype_is_float(p->dtype)) {
            out->kind = RT_VAL_FLOAT;
            out->u.f = p->fvalue;
            return true;
        }
        if (!p->value || !ir_prim_is_int(p->value, &out->u.i)) return false;
        out->kind = RT_VAL_INT;
        return true;
    }
    case IR_STR:
        out->kind = RT_VAL_STR;
        out->u.s = ((const ir_str *)e)->value;
        return true;
    default: return false;
    }
}

static bool foldable(const ir_call *c) {
    if (c->callee->kind != IR_OP) return false;
    const ir_op_def *def = ((const ir_op *)c->callee)->def;
    if (def->flags & (IR_OPF_IMPURE | IR_OPF_CALL_LIKE)) return false;
    if (!c->base.sinfo || c->base.sinfo->kind != IR_SINFO_TENSOR) return false;
    int64_t n = ir_sinfo_numel(c->base.sinfo);
    if (n < 0 || n > FOLD_MAX_ELEMS) return false;
    bool has_tensor = false;
    for (uint32_t i = 0; i < c->nargs; i++) {
        ir_expr_kind k = (ir_expr_kind)c->args[i]->kind;
        if (k != IR_CONST && k != IR_SHAPE && k != IR_PRIMVAL && k != IR_STR) return false;
        has_tensor |= k == IR_CONST;
    }
    /* Creation ops (zeros/ones/full from a shape) fold too; anything else needs a constant. */
    return has_tensor || (def->flags & IR_OPF_CREATION);
}

/* Evaluates c; NULL (no error) when it cannot be folded here. */
static ir_expr *fold_call(pu_rewriter *r, const ir_binding *b, ir_call *c) {
    const ir_op_def *def = ((const ir_op *)c->callee)->def;
    if (!rt_kernel_find(def)) return NULL;
    rt_value args[16];
    if (c->nargs > 16) return NULL;
    uint32_t n = 0;
    bool ok = true;
    for (; n < c->nargs && ok; n++) ok = known_value(c->args[n], &args[n]);
    if (!ok) n--;
    ir_expr *res = NULL;
    if (ok) {
        rt_kernel_call kc = {def, c->attrs, args, c->nargs, c->base.sinfo, c->base.span};
        rt_value out;
        memset(&out, 0, sizeof(out));
        gr_diag local;
        gr_diag_clear(&local);
        /* A kernel error here only means "leave it for run time" (it will report it there). */
        if (rt_kernel_run(&kc, &out, &local) == GR_OK && out.kind == RT_VAL_TENSOR) {
            const ir_span *parts[2 + 16];
            uint32_t k = 0;
            parts[k++] = c->base.span;
            parts[k++] = b->var->base.span;
            for (uint32_t i = 0; i < c->nargs; i++) parts[k++] = c->args[i]->span;
            const ir_span *sp = ir_si_enabled() ? ir_span_seq(r->ctx, parts, k) : c->base.span;
            ir_const *cst = ir_const_new(r->ctx, out.u.t, sp);
            if (cst->base.sinfo == c->base.sinfo || ir_sinfo_is_base_of(b->var->base.sinfo, cst->base.sinfo))
                res = &cst->base;
        }
        rt_value_clear(&out);
    }
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&args[i]);
    return res;
}

/* `if` on a constant: the taken branch's bindings join the current (plain) block and the
 * expression producing its result gets SequentialSpan(its span, the if's span). */
static bool inline_branch(pu_rewriter *r, const ir_binding *b, ir_if *f) {
    const rt_tensor *t = ((ir_const *)f->cond)->data;
    if (rt_tensor_numel(t) != 1 || r->dataflow) return false;
    ir_expr *taken = rt_tensor_get_f64(t, 0) != 0 ? f->then_branch : f->else_branch;
    if (taken->kind != IR_SEQ) return false;
    ir_seq *q = (ir_seq *)taken;
    for (uint32_t i = 0; i < q->nblocks; i++)
        if (q->blocks[i]->dataflow) return false;
    for (uint32_t i = 0; i < q->nblocks; i++)
        for (uint32_t j = 0; j < q->blocks[i]->n; j++) {
            const ir_binding *x = &q->blocks[i]->bindings[j];
            pu_push(r, x->var, pu_subst(r, x->value), x->match_sinfo);
        }
    ir_expr *res = pu_subst(r, q->body);
    int i = ir_is_var(res) ? pu_out_index(r, (ir_var *)res) : -1;
    if (ir_si_enabled() && i >= 0) {
        pu_merge_span(r, i, taken->span);
        pu_merge_span(r, i, f->base.span);
    } else if (ir_si_enabled() && !ir_is_var(res)) {
        const ir_span *parts[3] = {res->span, taken->span, f->base.span};
        res = ir_expr_with_span(r->ctx, res, ir_span_seq(r->ctx, parts, 3));
    }
    pu_push(r, b->var, res, NULL);
    return true;
}

static bool fold_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (!b->match_sinfo && value->kind == IR_CALL && foldable((ir_call *)value)) {
        ir_expr *cst = fold_call(r, b, (ir_call *)value);
        if (cst) {
            /* Uses read the constant, which carries the layer's span. */
            gr_map_put(&r->remap, GR_MAP_PTR(b->var), GR_MAP_PTR(cst));
            gr_map_put(&r->defs, GR_MAP_PTR(b->var), GR_MAP_PTR(cst));
            return true;
        }
    }
    if (!b->match_sinfo && value->kind == IR_IF && ((ir_if *)value)->cond->kind == IR_CONST &&
        inline_branch(r, b, (ir_if *)value))
        return true;
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

static gr_status fold_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, const char *name,
                         ir_func *func, ir_func **out, gr_diag *diag) {
    (void)self, (void)name;
    pu_rewriter r;
    pu_init(&r, mod->ctx, diag);
    r.binding = fold_binding;
    ir_func *nf = pu_rewrite_func(&r, func);
    pu_finish(&r, pc);
    if (!nf) return diag && diag->code ? diag->code : GR_ERR_INVALID;
    *out = nf;
    return GR_OK;
}

const ir_pass ir_pass_fold_constant = {
    .name = "FoldConstant", .kind = IR_PASS_FUNCTION, .opt_level = 0, .func_fn = fold_fn,
};
