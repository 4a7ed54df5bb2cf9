/* The optimizers of ai.onnx.preview.training as elementwise updates: Adam's bias correction
 * depends on the run-time iteration count T (R.where on T > 0), checked against the spec's
 * formula in double for T = 0 and T = 3 on test_adam's model. */
#include <criterion/criterion.h>
#include <math.h>

#include "base/compare.h"
#include "frontend/onnx/onnx_import.h"
#include "runtime/exec/executor.h"

#define ADAM "/usr/share/libonnx-testdata/data/node/test_adam/"

static rt_tensor *vec(const float *v, int64_t n) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, &n);
    for (int64_t i = 0; i < n; i++) rt_tensor_set_f64(t, i, v[i]);
    return t;
}

Test(onnx_train, adam_bias_correction_follows_the_run_time_t) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_import_file(ctx, ADAM "model.onnx", NULL, &m, &d), GR_OK, "%s", d.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    const double alpha = 0.95f, beta = 0.1f, eps = 1e-7f, nc = 0.001f, r = 0.1f;
    const float X[2] = {1.2f, 2.8f}, G[2] = {-0.94f, -2.5f}, V[2] = {1.7f, 3.6f}, H[2] = {0.1f, 0.1f};
    for (int64_t T = 0; T <= 3; T += 3) {
        rt_tensor *rt = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
        rt_tensor_set_f64(rt, 0, r);
        rt_value args[6] = {rt_value_tensor(rt), {0}, rt_value_tensor(vec(X, 2)), rt_value_tensor(vec(G, 2)),
                            rt_value_tensor(vec(V, 2)), rt_value_tensor(vec(H, 2))};
        /* T is 0-D */
        rt_tensor *tt = rt_tensor_new(IR_DTYPE_I64, 0, NULL);
        rt_tensor_set_f64(tt, 0, (double)T);
        args[1] = rt_value_tensor(tt);
        rt_value res = {0};
        cr_assert_eq(rt_exec_run(x, args, 6, &res, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(res.kind, RT_VAL_TUPLE);
        for (int i = 0; i < 2; i++) {
            double g = nc * X[i] + G[i];
            double v = alpha * V[i] + (1 - alpha) * g, h = beta * H[i] + (1 - beta) * g * g;
            double ra = T > 0 ? r * sqrt(1 - pow(beta, (double)T)) / (1 - pow(alpha, (double)T)) : r;
            double want = X[i] - ra * v / (sqrt(h) + eps);
            double got = rt_tensor_get_f64(res.u.tuple.items[0].u.t, i);
            cr_assert(gr_cmp_value(got, want, 1e-6, 1e-5, false), "T %lld x[%d]: %.9g vs %.9g", (long long)T, i, got, want);
        }
        rt_value_clear(&res);
        for (int k = 0; k < 6; k++) rt_value_clear(&args[k]);
    }
    rt_exec_free(x);
    ir_ctx_free(ctx);
}
