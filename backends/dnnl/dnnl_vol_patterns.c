/* The dnnl backend's check for the volumetric ops (rows of backends/dnnl/dnnl_op_table.h): R.nn.conv3d, R.nn.conv3d_transpose,
 * R.nn.max_pool3d, R.nn.avg_pool3d -> one oneDNN (de)convolution / pooling primitive each
 * (backends/dnnl/dnnl_op_conv.c, dnnl_op_elem.c). The check requires float32 tensors of static shape, NCDHW data and
 * OIDHW / IODHW weights, and no average pooling that counts padding in ceil mode (oneDNN
 * would count the implicit right padding too). */
#include <string.h>

#include "backends/dnnl/dnnl_pattern_impl.h"
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

const char *dnnl_vol_check(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    ir_op_id op = ir_op_id_of(&c->base);
    if (!f32_static(c->base.sinfo)) return "result is not a 5-D float32 tensor of static shape";
    for (uint32_t i = 0; i < c->nargs; i++)
        if (!(ir_is_var(c->args[i]) || c->args[i]->kind == IR_CONST) || !f32_static(c->args[i]->sinfo))
            return "an operand is not a 5-D float32 tensor of static shape";
    if (op == IR_OP_MAX_POOL3D || op == IR_OP_AVG_POOL3D) {
        if (!str_is(c, "layout", "NCDHW") || !str_is(c, "out_layout", "NCDHW")) return "layout other than NCDHW";
        if (op == IR_OP_AVG_POOL3D && ir_attrs_get_bool(c->attrs, "ceil_mode", false) &&
            ir_attrs_get_bool(c->attrs, "count_include_pad", false))
            return "avg pooling with ceil_mode and count_include_pad";
        return NULL;
    }
    bool t = op == IR_OP_CONV3D_TRANSPOSE;
    if (!str_is(c, "data_layout", "NCDHW") || !str_is(c, "out_layout", "NCDHW") ||
        !str_is(c, "kernel_layout", t ? "IODHW" : "OIDHW"))
        return "layout other than NCDHW / OIDHW (IODHW)";
    return NULL;
}
