/* Executor tests on modules written in the text format. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text/parser.h"
#include "tests/runtime/exec_test_util.h"
#include "tests/test_util.h"

static ir_ctx_t *ctx;
static ir_module *mod;
static gr_diag diag;

static void setup(void) {
    ctx = ir_ctx_new();
    mod = NULL;
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(executor_text, .init = setup, .fini = teardown);

static void parse(const char *text) {
    gr_status st = ir_parse_module(ctx, "test.relax", text, strlen(text), &mod, &diag);
    cr_assert_eq(st, GR_OK, "%s", diag.msg);
}

static rt_exec_t *prepare(const char *text) {
    parse(text);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    return x;
}

static void clear_all(rt_value *v, int n) {
    for (int i = 0; i < n; i++) rt_value_clear(&v[i]);
}

Test(executor_text, split_tuple_get_item) {
    rt_exec_t *x = prepare(
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2, 4), dtype=\"float32\")) -> R.Tensor((2, 2), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv = R.split(x, indices_or_sections=2, axis=1)\n"
        "            a = lv[0]\n"
        "            b = lv[1]\n"
        "            gv = R.subtract(b, a)\n"
        "            R.output(gv)\n"
        "        return gv\n");
    int64_t s[2] = {2, 4};
    double v[8] = {0, 1, 2, 3, 10, 20, 40, 80};
    rt_value in = h5_val(IR_DTYPE_F32, 2, s, v), out;
    cr_assert_eq(rt_exec_run(x, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.u.t->dl.shape[1], 2);
    double want[4] = {2, 2, 30, 60};
    for (int i = 0; i < 4; i++) cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), want[i], 1e-6);
    rt_value_clear(&out);
    rt_value_clear(&in);
    rt_exec_free(x);
}

static const char *SYM_TEXT =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"n\", 3), dtype=\"float32\"), y: R.Tensor((\"n\", 3), dtype=\"float32\")):\n"
    "        n = T.int64()\n"
    "        with R.dataflow():\n"
    "            s = R.add(x, y)\n"
    "            f = R.reshape(s, R.shape([n * 3]))\n"
    "            g = R.match_cast(f, R.Tensor((n * 3,), dtype=\"float32\"))\n"
    "            R.output(g)\n"
    "        return (g, R.shape([n, n + 1]))\n";

Test(executor_text, symbolic_dims_flow_into_reshape_and_shapes) {
    rt_exec_t *x = prepare(SYM_TEXT);
    int64_t s[2] = {4, 3};
    double a[12], b[12];
    for (int i = 0; i < 12; i++) a[i] = i, b[i] = 100;
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, s, a), h5_val(IR_DTYPE_F32, 2, s, b)}, out;
    cr_assert_eq(rt_exec_run(x, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.kind, RT_VAL_TUPLE);
    rt_tensor *g = out.u.tuple.items[0].u.t;
    cr_assert_eq(g->dl.ndim, 1);
    cr_assert_eq(g->dl.shape[0], 12);
    cr_assert_float_eq(rt_tensor_get_f64(g, 11), 111, 1e-6);
    rt_value *sh = &out.u.tuple.items[1];
    cr_assert_eq(sh->kind, RT_VAL_SHAPE);
    cr_assert_eq(sh->u.shape.dims[0], 4);
    cr_assert_eq(sh->u.shape.dims[1], 5);
    rt_value_clear(&out);
    clear_all(in, 2);
    rt_exec_free(x);
}

Test(executor_text, inconsistent_symbolic_inputs) {
    rt_exec_t *x = prepare(SYM_TEXT);
    int64_t s4[2] = {4, 3}, s5[2] = {5, 3};
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, s4, NULL), h5_val(IR_DTYPE_F32, 2, s5, NULL)}, out;
    cr_assert_eq(rt_exec_run(x, in, 2, &out, &diag), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'y'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "dim 0 is 5, but n = 4"), "%s", diag.msg);
    clear_all(in, 2);
    rt_exec_free(x);
}

static const char *IF_TEXT =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def twice(a: R.Tensor((3,), dtype=\"float32\")) -> R.Tensor((3,), dtype=\"float32\"):\n"
    "        r = R.add(a, a)\n"
    "        return r\n"
    "\n"
    "    @R.function\n"
    "    def main(c: R.Tensor((), dtype=\"bool\"), x: R.Tensor((3,), dtype=\"float32\")) -> R.Tensor((3,), dtype=\"float32\"):\n"
    "        t = cls.twice(x)\n"
    "        if c:\n"
    "            u = R.multiply(t, x)\n"
    "            z = R.negative(u)\n"
    "        else:\n"
    "            z = cls.twice(t)\n"
    "        w = R.add(z, x)\n"
    "        return w\n";

Test(executor_text, if_else_and_global_calls) {
    rt_exec_t *x = prepare(IF_TEXT);
    int64_t n3 = 3;
    double xv[3] = {1, 2, -3};
    for (int cond = 0; cond < 2; cond++) {
        double cv = cond;
        rt_value in[2] = {h5_val(IR_DTYPE_BOOL, 0, NULL, &cv), h5_val(IR_DTYPE_F32, 1, &n3, xv)};
        rt_value out;
        cr_assert_eq(rt_exec_run(x, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
        for (int i = 0; i < 3; i++) {
            double t = 2 * xv[i], want = (cond ? -(t * xv[i]) : 2 * t) + xv[i];
            cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), want, 1e-5, "cond %d i %d", cond, i);
        }
        rt_value_clear(&out);
        clear_all(in, 2);
    }
    rt_exec_free(x);
}

static const char *DPS_TEXT =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"n\", 2), dtype=\"float32\")):\n"
    "        n = T.int64()\n"
    "        o = R.call_dps_packed(\"%s\", (x, x), out_sinfo=R.Tensor((n, 2), dtype=\"float32\"))\n"
    "        r = R.nn.relu(o)  # span: \"relu_after_ext\"\n"
    "        return r\n";

Test(executor_text, call_dps_packed_into_test_module) {
    char text[1024];
    snprintf(text, sizeof text, DPS_TEXT, "test_add");
    parse(text);
    h5_mod_ctx mc = {0};
    rt_module *rm = rt_module_new(&h5_mod_iface, &mc, "testmod");
    rt_module_attach(mod, rm);
    rt_module_release(rm);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    int64_t s[2] = {3, 2};
    double v[6] = {1, -1, 2, -2, 3, -3};
    rt_value in = h5_val(IR_DTYPE_F32, 2, s, v), out;
    cr_assert_eq(rt_exec_run(x, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(mc.calls, 1);
    cr_assert_eq(out.u.t->dl.shape[0], 3);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), v[i] > 0 ? 2 * v[i] : 0, 1e-6);
    rt_value_clear(&out);
    rt_value_clear(&in);
    rt_exec_free(x);
}

Test(executor_text, call_dps_packed_without_modules_names_symbol) {
    char text[1024];
    snprintf(text, sizeof text, DPS_TEXT, "fused_relax_nn_conv2d_dnnl");
    parse(text);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_ERR_NOT_FOUND);
    cr_assert(strstr(diag.msg, "'fused_relax_nn_conv2d_dnnl'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "0 modules"), "%s", diag.msg);
}

/* Recursion: main(x, k) = k > 0 ? main(x + x, k - 1) : x, so the plan needs a frame per level. */
Test(executor_text, recursive_function) {
    rt_exec_t *x = prepare(
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2,), dtype=\"float32\"), k: R.Tensor((), dtype=\"int64\")) -> R.Tensor((2,), dtype=\"float32\"):\n"
        "        c = R.greater(k, R.const(0, \"int64\"))\n"
        "        if c:\n"
        "            y = R.add(x, x)\n"
        "            k1 = R.subtract(k, R.const(1, \"int64\"))\n"
        "            r = cls.main(y, k1)\n"
        "        else:\n"
        "            r = x\n"
        "        return r\n");
    int64_t n2 = 2;
    double xv[2] = {1, -3};
    static const int ks[3] = {0, 5, 250}; /* 250 nested calls: within the executor's bound */
    for (int j = 0; j < 3; j++) {
        int k = ks[j];
        double kv = k;
        rt_value in[2] = {h5_val(IR_DTYPE_F32, 1, &n2, xv), h5_val(IR_DTYPE_I64, 0, NULL, &kv)};
        rt_value out;
        cr_assert_eq(rt_exec_run(x, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
        /* exact in float32: 3 * 2^k, or -inf once it overflows */
        cr_assert_eq((float)rt_tensor_get_f64(out.u.t, 1), (float)(-3.0 * ldexp(1.0, k)), "k %d", k);
        rt_value_clear(&out);
        clear_all(in, 2);
    }
    rt_exec_free(x);
}

/* A recursion that does not end stops with an error naming the function before the C stack
 * runs out (it crashed the process). */
Test(executor_text, endless_recursion_is_an_error) {
    rt_exec_t *x = prepare(
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def f(x: R.Tensor((2,), dtype=\"float32\")) -> R.Tensor((2,), dtype=\"float32\"):\n"
        "        y = cls.f(x)\n"
        "        return y\n"
        "\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2,), dtype=\"float32\")) -> R.Tensor((2,), dtype=\"float32\"):\n"
        "        y = cls.f(x)\n"
        "        return y\n");
    int64_t n2 = 2;
    double xv[2] = {1, -3};
    rt_value in = h5_val(IR_DTYPE_F32, 1, &n2, xv), out = {0};
    cr_assert_eq(rt_exec_run(x, &in, 1, &out, &diag), GR_ERR_RUNTIME, "%s", diag.msg);
    cr_assert(strstr(diag.msg, "function 'f'") && strstr(diag.msg, "nested deeper than"), "%s", diag.msg);
    rt_value_clear(&in);
    rt_exec_free(x);
}

/* The bundled demo (conv2d, add, relu, mean, reshape, softmax) runs end to end. */
Test(executor_text, bundled_demo_runs) {
    size_t len;
    char *text = tu_read_file("examples/demo.relax", &len);
    cr_assert_not_null(text, "run from the repository root");
    gr_status st = ir_parse_module(ctx, "examples/demo.relax", text, len, &mod, &diag);
    free(text);
    cr_assert_eq(st, GR_OK, "%s", diag.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    uint32_t n = rt_exec_num_inputs(x);
    cr_assert_eq(n, 3);
    rt_value in[3];
    unsigned seed = 7;
    for (uint32_t i = 0; i < n; i++) {
        const ir_sinfo *s = rt_exec_input_sinfo(x, i);
        int64_t shape[RT_MAX_NDIM];
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) {
            seed = seed * 1103515245u + 12345u;
            rt_tensor_set_f64(t, k, (double)((seed >> 16) % 200) / 100.0 - 1.0);
        }
        in[i] = rt_value_tensor(t);
    }
    rt_value out;
    cr_assert_eq(rt_exec_run(x, in, n, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.kind, RT_VAL_TENSOR);
    cr_assert_eq(out.u.t->dl.ndim, 2);
    cr_assert_eq(out.u.t->dl.shape[1], 8);
    double sum = 0;
    for (int k = 0; k < 8; k++) {
        double p = rt_tensor_get_f64(out.u.t, k);
        cr_assert(p > 0 && p < 1, "p[%d] = %g", k, p);
        sum += p;
    }
    cr_assert_float_eq(sum, 1.0, 1e-5);
    rt_value_clear(&out);
    clear_all(in, 3);
    rt_exec_free(x);
}

/* NHWC / OHWI convolution and NHWC pools (TensorFlow-origin layouts): struct info is inferred
 * in the layout and the reference kernels give exactly what the NCHW form gives. */
static rt_value run_file(const char *path, rt_value *in, int nin) {
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_file(ctx, path, &m, &diag), GR_OK, "%s", diag.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &x, &diag), GR_OK, "%s", diag.msg);
    rt_value out;
    cr_assert_eq(rt_exec_run(x, in, nin, &out, &diag), GR_OK, "%s", diag.msg);
    rt_exec_free(x);
    return out;
}

Test(executor_text, nhwc_conv_and_pools_equal_nchw) {
    int64_t xs[4] = {1, 8, 8, 3}, ws[4] = {4, 3, 3, 3}, bs[1] = {4};
    double xv[192], wv[108], bv[4];
    for (int i = 0; i < 192; i++) xv[i] = sin(0.37 * i);
    for (int i = 0; i < 108; i++) wv[i] = cos(0.11 * i) - 0.3;
    for (int i = 0; i < 4; i++) bv[i] = 0.1 * i - 0.15;
    rt_value in[3] = {h5_val(IR_DTYPE_F32, 4, xs, xv), h5_val(IR_DTYPE_F32, 4, ws, wv), h5_val(IR_DTYPE_F32, 1, bs, bv)};
    rt_value a = run_file("tests/golden/layouts/nhwc_conv_pool.relax", in, 3);
    rt_value b = run_file("tests/golden/layouts/nchw_equivalent.relax", in, 3);
    int64_t want[4] = {1, 3, 3, 4};
    cr_assert_eq(a.u.t->dl.ndim, 4);
    for (int i = 0; i < 4; i++) cr_assert_eq(a.u.t->dl.shape[i], want[i]);
    /* the same arithmetic in the same order: bitwise equal */
    for (int i = 0; i < 36; i++) cr_assert_eq(rt_tensor_get_f64(a.u.t, i), rt_tensor_get_f64(b.u.t, i), "element %d", i);
    rt_value_clear(&a);
    rt_value_clear(&b);
    clear_all(in, 3);
}
