/* The dnnl backend's patterns for the volumetric ops: R.nn.conv3d, R.nn.conv3d_transpose,
 * R.nn.max_pool3d, R.nn.avg_pool3d -> one oneDNN (de)convolution / pooling primitive each
 * (runtime/dnnl_vol.c). The check requires float32 tensors of static shape, NCDHW data and
 * OIDHW / IODHW weights, and no average pooling that counts padding in ceil mode (oneDNN
 * would count the implicit right padding too). */
#include <string.h>

#include "codegen/dnnl/dnnl_impl.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"

static bool f32_static(const ir_sinfo *s) {
    int64_t shape[RT_MAX_NDIM];
    return s && s->kind == IR_SINFO_TENSOR && s->ndim == 5 && ir_dtype_eq(s->dtype, IR_DTYPE_F32) &&
           ir_sinfo_static_shape(s, shape);
}

static bool str_is(const ir_call *c, const char *key, const char *want) {
    const char *v = ir_attrs_get_str(c->attrs, key);
    return !v || !strcmp(v, want);
}

static const char *vol_check(const ir_call *c) {
    const char *op = IR_AS(c->callee, ir_op)->def->name;
    if (!f32_static(c->base.sinfo)) return "result is not a 5-D float32 tensor of static shape";
    for (uint32_t i = 0; i < c->nargs; i++)
        if (!(ir_is_var(c->args[i]) || c->args[i]->kind == IR_CONST) || !f32_static(c->args[i]->sinfo))
            return "an operand is not a 5-D float32 tensor of static shape";
    if (strstr(op, "pool")) {
        if (!str_is(c, "layout", "NCDHW") || !str_is(c, "out_layout", "NCDHW")) return "layout other than NCDHW";
        if (strstr(op, "avg") && ir_attrs_get_bool(c->attrs, "ceil_mode", false) &&
            ir_attrs_get_bool(c->attrs, "count_include_pad", false))
            return "avg pooling with ceil_mode and count_include_pad";
        return NULL;
    }
    bool t = strstr(op, "transpose") != NULL;
    if (!str_is(c, "data_layout", "NCDHW") || !str_is(c, "out_layout", "NCDHW") ||
        !str_is(c, "kernel_layout", t ? "IODHW" : "OIDHW"))
        return "layout other than NCDHW / OIDHW (IODHW)";
    return NULL;
}

static bool check(const pat_check_ctx *pc, const char **reason, void *user) {
    (void)user;
    const ir_expr *e = pc->matched_expr;
    const char *r = !e || e->kind != IR_CALL ? "not a call" : vol_check(IR_AS(e, ir_call));
    if (r) *reason = r;
    return r == NULL;
}

static const char *const VOL_OPS[] = {"relax.nn.conv3d", "relax.nn.conv3d_transpose", "relax.nn.max_pool3d",
                                      "relax.nn.avg_pool3d"};

uint32_t dnnl_vol_patterns(ir_ctx_t *ctx, byoc_pattern *out) {
    uint32_t k = 0;
    for (size_t i = 0; i < sizeof(VOL_OPS) / sizeof(VOL_OPS[0]); i++) {
        const ir_op_def *def = ir_op_def_find(VOL_OPS[i]);
        pat_t *p = def ? pat_call_varargs(ctx, pat_op(ctx, def->name), 0, NULL) : NULL;
        if (p) out[k++] = (byoc_pattern){ir_internf(ctx, "dnnl.%s", def->name + 6), p, check, NULL};
    }
    return k;
}
