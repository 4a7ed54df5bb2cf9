/* The json backend: every op of the op table that has a reference kernel, one pattern per op
 * ("json.nn.conv2d"), checked for static dtype and rank and tensor operands; its codegen writes
 * each region as a JSON graph (json_codegen.c) run by the reference engine. It takes no
 * options. */
#include <string.h>

#include "backends/json/json_codegen.h"
#include "ir/op.h"
#include "runtime/json/json_runtime.h"
#include "runtime/kernels/kernels.h"

/* Known dtype, rank and dims; a dim may be symbolic (the JSON graph records its expression and
 * the runtime specializes the graph to each call's shapes). */
static bool static_tensor(const ir_sinfo *s) {
    return s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && s->ndim <= RT_MAX_NDIM && !ir_dtype_is_void(s->dtype) &&
           ir_dtype_name(s->dtype) && (s->ndim == 0 || s->dims);
}

static bool static_result(const ir_sinfo *s) {
    if (s && s->kind == IR_SINFO_TUPLE) {
        for (uint32_t i = 0; i < s->n; i++)
            if (!static_tensor(s->fields[i])) return false;
        return s->n > 0;
    }
    return static_tensor(s);
}

static const char *check_arg(ir_ctx_t *ctx, const ir_expr *a, uint32_t i) {
    switch (a->kind) {
    case IR_VAR:
    case IR_DFVAR:
    case IR_CONST:
        return static_tensor(a->sinfo) ? NULL : ir_internf(ctx, "argument %u is not a tensor of known dtype and rank", i);
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(a, ir_tuple);
        for (uint32_t k = 0; k < t->n; k++) {
            const ir_expr *f = t->fields[k];
            if (f->kind == IR_TUPLE) return ir_internf(ctx, "argument %u holds a nested tuple", i);
            const char *r = check_arg(ctx, f, i);
            if (r) return r;
        }
        return NULL;
    }
    case IR_SHAPE:
        return NULL; /* symbolic dims are written as expressions */
    case IR_PRIMVAL:
        return IR_AS(a, ir_primval)->value && !ir_prim_is_int(IR_AS(a, ir_primval)->value, NULL)
                   ? ir_internf(ctx, "argument %u is a symbolic value", i)
                   : NULL;
    case IR_STR:
        return NULL;
    default:
        return ir_internf(ctx, "argument %u is a %s", i, ir_expr_kind_name((ir_expr_kind)a->kind));
    }
}

static bool json_check(const pat_check_ctx *c, const char **reason, void *user) {
    (void)user;
    const ir_expr *e = c->matched_expr;
    if (!e || e->kind != IR_CALL) {
        *reason = "not a call";
        return false;
    }
    const ir_call *call = IR_AS(e, ir_call);
    if (!static_result(e->sinfo)) {
        *reason = "result is not a tensor of known dtype and rank";
        return false;
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        const char *r = check_arg(c->ctx, call->args[i], i);
        if (r) {
            *reason = r;
            return false;
        }
    }
    return true;
}

/* The table lives in ctx's arena (patterns are arena nodes of ctx). */
static gr_status json_patterns(ir_ctx_t *ctx, const byoc_options *opts, const byoc_pattern **out, uint32_t *n,
                               gr_diag *diag) {
    (void)opts;
    (void)diag;
    uint32_t nops = ir_op_def_count(), k = 0;
    byoc_pattern *pats = IR_NEW_ARRAY(ctx, byoc_pattern, nops + 1);
    for (uint32_t i = 0; i < nops; i++) {
        const ir_op_def *def = ir_op_def_at(i);
        if ((def->flags & (IR_OPF_CALL_LIKE | IR_OPF_IMPURE)) || !rt_kernel_find(def)) continue;
        pat_t *p = pat_call_varargs(ctx, pat_op(ctx, def->name), 0, NULL);
        if (!p) continue;
        const char *short_name = strncmp(def->name, "relax.", 6) == 0 ? def->name + 6 : def->name;
        pats[k++] = (byoc_pattern){ir_internf(ctx, "json.%s", short_name), p, json_check, NULL};
    }
    *out = pats;
    *n = k;
    return GR_OK;
}

static gr_status json_load(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *name, void *user),
                           void *user, const byoc_options *opts, rt_module **out, gr_diag *diag) {
    (void)opts;
    return rt_json_module_load(buf, len, &rt_json_reference_engine, NULL, consts, user, out, diag);
}

const byoc_backend byoc_json_backend = {
    .name = "json",
    .description = "JSON graph runtime running the reference kernels (one pattern per op of the op table)",
    .get_patterns = json_patterns,
    .compile = json_cg_compile,
    .load = json_load,
    .runtime_kind = "json",
};
