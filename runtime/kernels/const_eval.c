/* FoldConstant's evaluator on the reference kernels (runtime/kernels/const_eval.h). */
#include "runtime/kernels/const_eval.h"

#include <string.h>

#include "ir/op.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/kernels.h"

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
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        *out = rt_value_tuple(t->n);
        for (uint32_t i = 0; i < t->n; i++)
            if (!known_value(t->fields[i], &out->u.tuple.items[i])) {
                rt_value_clear(out);
                return false;
            }
        return true;
    }
    default: return false;
    }
}

rt_tensor *rt_const_eval(void *user, const ir_call *c) {
    (void)user;
    if (c->callee->kind != IR_OP) return NULL;
    const ir_op_def *def = ((const ir_op *)c->callee)->def;
    if (!rt_kernel_find(def)) return NULL;
    rt_value args[16];
    if (c->nargs > 16) return NULL;
    uint32_t n = 0;
    bool ok = true;
    for (; n < c->nargs && ok; n++) ok = known_value(c->args[n], &args[n]);
    if (!ok) n--;
    rt_tensor *res = NULL;
    if (ok) {
        rt_kernel_call kc = {def, c->attrs, args, c->nargs, c->base.sinfo, c->base.span};
        rt_value out;
        memset(&out, 0, sizeof(out));
        gr_diag local;
        gr_diag_clear(&local);
        /* A kernel error here only means "leave it for run time" (it will report it there). */
        if (rt_kernel_run(&kc, &out, &local) == GR_OK && out.kind == RT_VAL_TENSOR)
            res = rt_tensor_retain(out.u.t);
        rt_value_clear(&out);
    }
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&args[i]);
    return res;
}

void rt_const_eval_attach(ir_ctx_t *ctx) { ir_ctx_set_const_eval(ctx, rt_const_eval, NULL); }
