/* The dnnl backend: pattern table with checks, codegen (region -> JSON graph + constants run
 * by the oneDNN engine of runtime/dnnl.h) and module loading.
 *
 * Patterns are one per op ("dnnl.conv2d", "dnnl.add", ...); MergeCompositeFunctions joins
 * neighbouring composites into regions, and the engine fuses inside a region: a convolution /
 * matmul with its bias, eltwise chain (relu, clip, hardswish in its exporter forms, swish,
 * gelu, ...), residual add and broadcast multiply becomes one primitive with post-ops. So the
 * composite name says which primitive an op maps to, and fusion never depends on which
 * pattern matched first. Every check rejects with a reason the partition report prints. */
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "codegen/dnnl/dnnl_codegen.h"
#include "codegen/json/json_codegen.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"
#include "runtime/dnnl.h"
#include "runtime/json_runtime.h"

/* ---- checks ---- */

typedef const char *(*op_check)(const ir_call *c, ir_ctx_t *ctx);

static bool f32_static(const ir_sinfo *s, int64_t *shape, int32_t *nd) {
    int64_t tmp[RT_MAX_NDIM];
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM || !ir_dtype_eq(s->dtype, IR_DTYPE_F32))
        return false;
    if (nd) *nd = s->ndim;
    return ir_sinfo_static_shape(s, shape ? shape : tmp);
}

static bool is_tensor_leaf(const ir_expr *a) { return a && (ir_is_var(a) || a->kind == IR_CONST); }

static bool scalar_expr(const ir_expr *a) {
    int64_t s[RT_MAX_NDIM];
    int32_t nd;
    if (!a || a->kind != IR_CONST || !f32_static(a->sinfo, s, &nd)) return false;
    int64_t n = 1;
    for (int32_t i = 0; i < nd; i++) n *= s[i];
    return n == 1;
}

static bool same_shape(const ir_sinfo *a, const ir_sinfo *b) {
    int64_t sa[RT_MAX_NDIM], sb[RT_MAX_NDIM];
    int32_t na, nb;
    return f32_static(a, sa, &na) && f32_static(b, sb, &nb) && na == nb && !memcmp(sa, sb, sizeof(int64_t) * (size_t)na);
}

static const char *chk_none(const ir_call *c, ir_ctx_t *ctx) {
    (void)c;
    (void)ctx;
    return NULL;
}

static const char *chk_binary(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const ir_expr *a = c->args[0], *b = c->args[1];
    if (scalar_expr(a) || scalar_expr(b)) return NULL;
    if (same_shape(a->sinfo, c->base.sinfo) || same_shape(b->sinfo, c->base.sinfo)) return NULL;
    return "both operands broadcast to a larger shape";
}

static const char *chk_power(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    return scalar_expr(c->args[1]) ? NULL : "power needs a scalar constant exponent";
}

static const char *chk_clip(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    for (uint32_t i = 1; i < 3; i++)
        if (c->nargs < 3 || c->args[i]->kind != IR_PRIMVAL ||
            (IR_AS(c->args[i], ir_primval)->value && !ir_prim_is_int(IR_AS(c->args[i], ir_primval)->value, NULL)))
            return "clip bounds are not constants";
    return NULL;
}

static const char *layout_is(const ir_call *c, const char *key, const char *want) {
    const char *v = ir_attrs_get_str(c->attrs, key);
    return v && strcmp(v, want) ? "layout other than NCHW/OIHW" : NULL;
}

static const char *chk_conv2d(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *r = layout_is(c, "data_layout", "NCHW");
    if (!r) r = layout_is(c, "kernel_layout", "OIHW");
    if (!r) r = layout_is(c, "out_layout", "NCHW");
    return r;
}

static const char *chk_conv1d(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *r = layout_is(c, "data_layout", "NCW");
    if (!r) r = layout_is(c, "kernel_layout", "OIW");
    return r;
}

static const char *chk_deconv2d(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *r = layout_is(c, "data_layout", "NCHW");
    if (!r) r = layout_is(c, "kernel_layout", "IOHW");
    if (!r && c->args[1]->kind != IR_CONST) r = "transposed convolution weights must be constant";
    return r;
}

static const char *chk_deconv1d(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *r = layout_is(c, "data_layout", "NCW");
    if (!r) r = layout_is(c, "kernel_layout", "IOW");
    if (!r && c->args[1]->kind != IR_CONST) r = "transposed convolution weights must be constant";
    return r;
}

static const char *chk_matmul(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    int32_t na = 0, nb = 0;
    f32_static(c->args[0]->sinfo, NULL, &na);
    f32_static(c->args[1]->sinfo, NULL, &nb);
    return na < 2 || nb < 2 ? "matmul with a 1-D operand" : NULL;
}

static const char *chk_pool(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *lay = ir_attrs_get_str(c->attrs, "layout");
    if (lay && strcmp(lay, "NCHW") && strcmp(lay, "NCW")) return "layout other than NCHW";
    return NULL;
}

static const char *chk_adaptive(const ir_call *c, ir_ctx_t *ctx) {
    const char *r = chk_pool(c, ctx);
    if (r) return r;
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int32_t xn, on;
    if (!f32_static(c->args[0]->sinfo, xs, &xn) || !f32_static(c->base.sinfo, os, &on) || xn != on) return "shapes";
    for (int32_t i = 2; i < xn; i++)
        if (!os[i] || xs[i] % os[i]) return "adaptive pooling with uneven windows";
    return NULL;
}

static const char *chk_layer_norm(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    int64_t axes[8];
    int n = ir_attrs_get_ints(c->attrs, "axes", axes, 8);
    int32_t nd = 0;
    f32_static(c->args[0]->sinfo, NULL, &nd);
    return n == 1 && (axes[0] == -1 || axes[0] == nd - 1) ? NULL : "layer_norm over axes other than the last";
}

static const char *chk_batch_norm(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    return ir_attrs_get_int(c->attrs, "axis", 1) == 1 ? NULL : "batch_norm on an axis other than 1";
}

static const char *chk_resize(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const char *m = ir_attrs_get_str(c->attrs, "method"), *ctm = ir_attrs_get_str(c->attrs, "coordinate_transformation_mode");
    const char *rnd = ir_attrs_get_str(c->attrs, "rounding_method");
    const char *lay = ir_attrs_get_str(c->attrs, "layout");
    if (lay && strcmp(lay, "NCHW")) return "layout other than NCHW";
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int32_t xn, on;
    if (!f32_static(c->args[0]->sinfo, xs, &xn) || !f32_static(c->base.sinfo, os, &on) || xn != 4) return "shapes";
    if (m && !strcmp(m, "linear")) {
        if (ctm && strcmp(ctm, "half_pixel") && !(strcmp(ctm, "pytorch_half_pixel") == 0 && os[2] > 1 && os[3] > 1))
            return "linear resize with coordinates other than half_pixel";
        return NULL;
    }
    if (m && (!strcmp(m, "nearest_neighbor") || !strcmp(m, "nearest"))) {
        if (os[2] % xs[2] || os[3] % xs[3]) return "nearest resize that is not an integer up-scaling";
        bool ok = (ctm && !strcmp(ctm, "asymmetric") && (!rnd || !strcmp(rnd, "floor") || !rnd[0])) ||
                  (ctm && !strcmp(ctm, "half_pixel") &&
                   (!rnd || !strcmp(rnd, "round") || !strcmp(rnd, "round_prefer_ceil") || !strcmp(rnd, "round_prefer_floor")));
        return ok ? NULL : "nearest resize with this coordinate mode / rounding";
    }
    return "resize method other than linear / nearest";
}

static const char *chk_concat(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    if (c->nargs != 1 || c->args[0]->kind != IR_TUPLE) return "concat of a non-literal tuple";
    const ir_tuple *t = IR_AS(c->args[0], ir_tuple);
    for (uint32_t i = 0; i < t->n; i++)
        if (!is_tensor_leaf(t->fields[i]) || !f32_static(t->fields[i]->sinfo, NULL, NULL)) return "concat field is not a float32 tensor";
    return t->n > 0 && t->n <= 64 ? NULL : "concat arity";
}

typedef struct dnnl_op_entry {
    const char *op;               /* relax op name */
    op_check check;
} dnnl_op_entry;

/* Priority order: compute ops first (the table order is also `graft backends`' order). */
static const dnnl_op_entry OPS[] = {
    {"relax.nn.conv2d", chk_conv2d},
    {"relax.nn.conv1d", chk_conv1d},
    {"relax.nn.conv2d_transpose", chk_deconv2d},
    {"relax.nn.conv1d_transpose", chk_deconv1d},
    {"relax.matmul", chk_matmul},
    {"relax.nn.max_pool2d", chk_pool},
    {"relax.nn.avg_pool2d", chk_pool},
    {"relax.nn.max_pool1d", chk_pool},
    {"relax.nn.avg_pool1d", chk_pool},
    {"relax.nn.adaptive_avg_pool2d", chk_adaptive},
    {"relax.nn.adaptive_max_pool2d", chk_adaptive},
    {"relax.nn.adaptive_avg_pool1d", chk_adaptive},
    {"relax.nn.softmax", chk_none},
    {"relax.nn.log_softmax", chk_none},
    {"relax.nn.layer_norm", chk_layer_norm},
    {"relax.nn.batch_norm", chk_batch_norm},
    {"relax.add", chk_binary},
    {"relax.subtract", chk_binary},
    {"relax.multiply", chk_binary},
    {"relax.divide", chk_binary},
    {"relax.maximum", chk_binary},
    {"relax.minimum", chk_binary},
    {"relax.power", chk_power},
    {"relax.nn.relu", chk_none},
    {"relax.nn.leakyrelu", chk_none},
    {"relax.nn.relu6", chk_none},
    {"relax.clip", chk_clip},
    {"relax.sigmoid", chk_none},
    {"relax.tanh", chk_none},
    {"relax.exp", chk_none},
    {"relax.log", chk_none},
    {"relax.sqrt", chk_none},
    {"relax.rsqrt", chk_none},
    {"relax.abs", chk_none},
    {"relax.square", chk_none},
    {"relax.negative", chk_none},
    {"relax.nn.gelu", chk_none},
    {"relax.nn.gelu_tanh", chk_none},
    {"relax.nn.silu", chk_none},
    {"relax.concat", chk_concat},
    {"relax.image.resize2d", chk_resize},
    {"relax.mean", chk_none},
    {"relax.sum", chk_none},
    {"relax.max", chk_none},
    {"relax.min", chk_none},
    {"relax.prod", chk_none},
    {"relax.reshape", chk_none},
    {"relax.flatten", chk_none},
    {"relax.squeeze", chk_none},
    {"relax.expand_dims", chk_none},
    {"relax.permute_dims", chk_none},
};

static bool dnnl_check(const pat_check_ctx *pc, const char **reason, void *user) {
    const dnnl_op_entry *ent = user;
    const ir_expr *e = pc->matched_expr;
    /* GRAFT_DNNL_DISABLE=relax.mean,relax.power keeps those ops off the backend (bisecting) */
    const char *dis = getenv("GRAFT_DNNL_DISABLE");
    if (dis) {
        const char *hit = strstr(dis, ent->op);
        size_t l = strlen(ent->op);
        if (hit && (hit == dis || hit[-1] == ',') && (hit[l] == ',' || hit[l] == 0)) {
            *reason = "disabled by GRAFT_DNNL_DISABLE";
            return false;
        }
    }
    if (!e || e->kind != IR_CALL) {
        *reason = "not a call";
        return false;
    }
    const ir_call *c = IR_AS(e, ir_call);
    const ir_sinfo *rs = e->sinfo;
    bool ok_result = f32_static(rs, NULL, NULL);
    if (rs && rs->kind == IR_SINFO_TUPLE) { /* batch_norm */
        ok_result = rs->n > 0;
        for (uint32_t i = 0; i < rs->n; i++) ok_result &= f32_static(rs->fields[i], NULL, NULL);
    }
    if (!ok_result) {
        *reason = "result is not a float32 tensor of static shape";
        return false;
    }
    for (uint32_t i = 0; i < c->nargs; i++) {
        const ir_expr *a = c->args[i];
        if (a->kind == IR_TUPLE || a->kind == IR_PRIMVAL || a->kind == IR_SHAPE) continue;
        if (!is_tensor_leaf(a) || !f32_static(a->sinfo, NULL, NULL)) {
            *reason = ir_internf(pc->ctx, "argument %u is not a float32 tensor of static shape", i);
            return false;
        }
    }
    const char *r = ent->check(c, pc->ctx);
    if (r) {
        *reason = r;
        return false;
    }
    return true;
}

static gr_status dnnl_patterns(ir_ctx_t *ctx, const byoc_pattern **out, uint32_t *n, gr_diag *diag) {
    (void)diag;
    uint32_t nops = sizeof(OPS) / sizeof(OPS[0]), k = 0;
    byoc_pattern *pats = IR_NEW_ARRAY(ctx, byoc_pattern, nops + 1);
    for (uint32_t i = 0; i < nops; i++) {
        const ir_op_def *def = ir_op_def_find(OPS[i].op);
        if (!def) continue;
        pat_t *p = pat_call_varargs(ctx, pat_op(ctx, def->name), 0, NULL);
        if (!p) continue;
        pats[k++] = (byoc_pattern){ir_internf(ctx, "dnnl.%s", def->name + 6), p, dnnl_check, (void *)&OPS[i]};
    }
    *out = pats;
    *n = k;
    return GR_OK;
}

/* ---- codegen ---- */

gr_status dnnl_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const ir_attrs *options,
                          rt_module **out, gr_diag *diag) {
    (void)options;
    *out = NULL;
    rt_json_graph **graphs = calloc(n + 1, sizeof(*graphs));
    if (!graphs) return gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
    gr_status st = json_cg_build_graphs(ctx, regions, n, JSON_CG_PER_OP, graphs, diag);
    if (st) {
        free(graphs);
        return st;
    }
    /* Build every region's primitives now, so oneDNN rejections surface at compile time
     * naming the region and its layers (the module prepares again lazily; cheap). */
    for (uint32_t i = 0; i < n && !st; i++) {
        void *state = NULL;
        st = rt_dnnl_engine.prepare(graphs[i], &state, diag);
        if (!st) rt_dnnl_engine.release(graphs[i], state);
    }
    if (st) {
        for (uint32_t i = 0; i < n; i++) rt_json_graph_free(graphs[i]);
        free(graphs);
        return st;
    }
    *out = rt_json_module_new("dnnl", &rt_dnnl_engine, graphs, n);
    free(graphs);
    return *out ? GR_OK : gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
}

static gr_status dnnl_load(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *name, void *user),
                           void *user, rt_module **out, gr_diag *diag) {
    return rt_json_module_load(buf, len, &rt_dnnl_engine, consts, user, out, diag);
}

const byoc_backend byoc_dnnl_backend = {
    "dnnl",
    "oneDNN: conv/deconv/matmul with fused bias + post-op chains, pools, softmax, norms, eltwise/binary, "
    "concat, resize, reduce; blocked layouts inside a region",
    dnnl_patterns, dnnl_cg_compile, dnnl_load, "dnnl_json"};
