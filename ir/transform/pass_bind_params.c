/* BindParams: params of one function whose names match become constants (the constant keeps
 * the param's span, so input names stay traceable); the function loses those params. */
#include <string.h>

#include "base/tensor.h"
#include "ir/transform/pass_impl.h"

typedef struct bind_params {
    char *func;
    uint32_t n;
    char **names;
    rt_tensor **tensors;
} bind_params;

static gr_status bind_func(ir_ctx_t *ctx, ir_pass_ctx_t *pc, ir_func *f, uint32_t n, const char *const *names,
                           rt_tensor *const *tensors, ir_func **out, gr_diag *diag) {
    *out = f;
    pu_rewriter r;
    pu_init(&r, ctx, diag);
    ir_var **keep = gr_xmalloc(sizeof(*keep) * (f->nparams + 1));
    uint32_t nkeep = 0;
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < f->nparams; i++) {
        ir_var *p = f->params[i];
        int hit = -1;
        for (uint32_t k = 0; k < n; k++)
            if (strcmp(names[k], p->name) == 0) hit = (int)k;
        if (hit < 0) {
            keep[nkeep++] = p;
            continue;
        }
        rt_tensor *t = tensors[hit];
        const ir_sinfo *want = p->base.sinfo;
        const ir_sinfo *have = ir_sinfo_tensor_static(ctx, t->dl.dtype, t->dl.ndim, t->dl.shape);
        if (want && !ir_sinfo_is_base_of(want, have)) {
            char a[256], b[256];
            ir_sinfo_snprint(want, a, sizeof(a));
            ir_sinfo_snprint(have, b, sizeof(b));
            st = gr_diag_set(diag, GR_ERR_TYPE, "BindParams: param '%s' is %s but the value is %s", p->name, a, b);
            break;
        }
        ir_const *c = ir_const_new(ctx, t, p->base.span);
        gr_map_put(&r.remap, GR_MAP_PTR(p), GR_MAP_PTR(c));
    }
    if (st == GR_OK && nkeep != f->nparams) {
        ir_expr *body = pu_subst(&r, f->body);
        if (!body) {
            st = diag && diag->code ? diag->code : GR_ERR_INVALID;
        } else {
            ir_func *nf = ir_func_new(ctx, nkeep, keep, body, f->ret_sinfo, f->attrs, f->base.span);
            ir_expr_set_sinfo(&nf->base, ir_func_sinfo(ctx, nf));
            *out = nf;
        }
    }
    free(keep);
    pu_finish(&r, pc);
    return st;
}

static gr_status bind_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, const char *name,
                         ir_func *func, ir_func **out, gr_diag *diag) {
    const bind_params *bp = self->user;
    *out = func;
    if (strcmp(bp->func, name) != 0) return GR_OK;
    return bind_func(mod->ctx, pc, func, bp->n, (const char *const *)bp->names, bp->tensors, out, diag);
}

static void bp_free(void *user) {
    bind_params *bp = user;
    for (uint32_t i = 0; i < bp->n; i++) {
        free(bp->names[i]);
        rt_tensor_release(bp->tensors[i]);
    }
    free(bp->names);
    free(bp->tensors);
    free(bp->func);
    free(bp);
}

ir_pass *ir_pass_bind_params_new(const char *func_name, uint32_t n, const char *const *names,
                                 struct rt_tensor *const *tensors) {
    bind_params *bp = gr_xcalloc(1, sizeof(*bp));
    bp->func = gr_xstrdup(func_name);
    bp->n = n;
    bp->names = gr_xcalloc(n + 1, sizeof(char *));
    bp->tensors = gr_xcalloc(n + 1, sizeof(rt_tensor *));
    for (uint32_t i = 0; i < n; i++) {
        bp->names[i] = gr_xstrdup(names[i]);
        bp->tensors[i] = rt_tensor_retain(tensors[i]);
    }
    ir_pass tmpl = {.name = "BindParams", .kind = IR_PASS_FUNCTION, .opt_level = 0, .func_fn = bind_fn,
                    .user = bp, .user_free = bp_free};
    return ir_pass_new(&tmpl);
}

/* Registry form: binds the constants of a function's "params" attribute ({"name": constant}). */
static gr_status bind_attr_fn(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                              const char *name, ir_func *func, ir_func **out, gr_diag *diag) {
    (void)self, (void)name;
    *out = func;
    const ir_attr *a = ir_attrs_get(func->attrs, "params");
    if (!a || a->kind != IR_ATTR_MAP) return GR_OK;
    uint32_t n = a->u.arr.n / 2;
    const char **names = gr_xcalloc(n + 1, sizeof(char *));
    rt_tensor **ts = gr_xcalloc(n + 1, sizeof(rt_tensor *));
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ir_attr *key = &a->u.arr.items[2 * i], *val = &a->u.arr.items[2 * i + 1];
        if (key->kind == IR_ATTR_STR && val->kind == IR_ATTR_EXPR && val->u.expr->kind == IR_CONST) {
            names[k] = key->u.s;
            ts[k++] = ((ir_const *)val->u.expr)->data;
        }
    }
    gr_status st = bind_func(mod->ctx, pc, func, k, names, ts, out, diag);
    if (st == GR_OK && *out != func)
        *out = ir_func_with_attrs(mod->ctx, *out, ir_attrs_remove(mod->ctx, (*out)->attrs, "params"));
    free(names);
    free(ts);
    return st;
}

const ir_pass ir_pass_bind_params_attr = {
    .name = "BindParams", .kind = IR_PASS_FUNCTION, .opt_level = 0, .func_fn = bind_attr_fn,
};
