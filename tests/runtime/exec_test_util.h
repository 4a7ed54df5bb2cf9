/* Helpers for the executor tests: IR built through the block builder, small tensors, and a test
 * runtime module whose functions compute add (and add + multiply) in destination-passing style. */
#ifndef GRAFT_TESTS_RUNTIME_EXEC_TEST_UTIL_H
#define GRAFT_TESTS_RUNTIME_EXEC_TEST_UTIL_H

#include <stdarg.h>
#include <string.h>

#include "ir/builder.h"
#include "ir/op.h"
#include "runtime/exec/executor.h"
#include "runtime/module.h"

static inline const ir_sinfo *h5_tensor(ir_ctx_t *ctx, ir_dtype dt, int32_t ndim,
                                        const int64_t *shape) {
    return ir_sinfo_tensor_static(ctx, dt, ndim, shape);
}

static inline const ir_sinfo *h5_f32(ir_ctx_t *ctx, int64_t a, int64_t b) {
    int64_t s[2] = {a, b};
    return ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 2, s);
}

static inline ir_expr *h5_call(ir_ctx_t *ctx, const char *op, uint32_t n, ir_expr *const *args,
                               const char *layer) {
    ir_op *o = ir_op_get(ctx, op);
    if (!o) return NULL;
    return (ir_expr *)ir_call_new(ctx, (ir_expr *)o, n, args, NULL, 0, NULL,
                                  layer ? ir_span_named(ctx, layer, false) : NULL);
}

static inline ir_expr *h5_call2(ir_ctx_t *ctx, const char *op, ir_expr *a, ir_expr *b,
                                const char *layer) {
    ir_expr *args[2] = {a, b};
    return h5_call(ctx, op, 2, args, layer);
}

static inline ir_expr *h5_call1(ir_ctx_t *ctx, const char *op, ir_expr *a, const char *layer) {
    return h5_call(ctx, op, 1, &a, layer);
}

/* R.call_dps_packed(R.ExternFunc(sym), (args...), out_sinfo=out) */
static inline ir_expr *h5_dps(ir_ctx_t *ctx, const char *sym, uint32_t n, ir_expr *const *args,
                              const ir_sinfo *out) {
    ir_expr *cargs[2] = {(ir_expr *)ir_extern_new(ctx, sym, NULL),
                         (ir_expr *)ir_tuple_new(ctx, n, args, NULL)};
    return (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.call_dps_packed"), 2,
                                  cargs, NULL, 1, &out, NULL);
}

static inline ir_func *h5_func(ir_ctx_t *ctx, uint32_t n, ir_var *const *params, ir_seq *body) {
    return body ? ir_func_new(ctx, n, params, (ir_expr *)body, NULL, NULL, NULL) : NULL;
}

/* A float tensor with the given values (cast to dtype). */
static inline rt_tensor *h5_tensor_vals(ir_dtype dt, int32_t ndim, const int64_t *shape,
                                        const double *vals) {
    rt_tensor *t = rt_tensor_new(dt, ndim, shape);
    if (vals)
        for (int64_t i = 0; i < rt_tensor_numel(t); i++) rt_tensor_set_f64(t, i, vals[i]);
    return t;
}

static inline rt_value h5_val(ir_dtype dt, int32_t ndim, const int64_t *shape,
                              const double *vals) {
    return rt_value_tensor(h5_tensor_vals(dt, ndim, shape, vals));
}

/* ---- the test runtime module: "test_add" (a + b -> out) and "test_add_mul" (a + b, a * b) ---- */

typedef struct h5_mod_ctx {
    int calls;
    int destroyed;
} h5_mod_ctx;

static int h5_has(rt_module *m, const char *sym) {
    (void)m;
    return strcmp(sym, "test_add") == 0 || strcmp(sym, "test_add_mul") == 0;
}

static gr_status h5_call_fn(rt_module *m, const char *sym, DLTensor *const *args, uint32_t nin,
                            uint32_t nout, gr_diag *diag) {
    h5_mod_ctx *c = m->context;
    c->calls++;
    bool mul = strcmp(sym, "test_add_mul") == 0;
    if (nin != 2 || nout != (mul ? 2u : 1u))
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: wrong arity %u/%u", sym, nin, nout);
    int64_t n = 1;
    for (int32_t i = 0; i < args[0]->ndim; i++) n *= args[0]->shape[i];
    const float *a = args[0]->data, *b = args[1]->data;
    float *o = args[2]->data;
    for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
    if (mul) {
        float *o2 = args[3]->data;
        for (int64_t i = 0; i < n; i++) o2[i] = a[i] * b[i];
    }
    return GR_OK;
}

static void h5_destroy(rt_module *m) { ((h5_mod_ctx *)m->context)->destroyed++; }

static const rt_module_i h5_mod_iface = {
    /* .api_version  = */ RT_MODULE_API_VERSION,
    /* .kind         = */ "test",
    /* .call         = */ h5_call_fn,
    /* .has_function = */ h5_has,
    /* .serialize    = */ NULL,
    /* .destroy      = */ h5_destroy,
};

#endif
