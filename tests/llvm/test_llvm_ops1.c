/* The LLVM host lowering of the elementwise ops added for ONNX coverage (tan, asin, acos, atan,
 * sinh, cosh, asinh, acosh, atanh, round, trunc, mod, floor_mod): all 24 ops fused, no
 * reference kernel left, the reference executor's outputs (the same libm functions: 1e-6). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "backends/llvm/llvm_host.h"
#include "ir/text/parser.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "tests/compare_util.h"

#define T4 "R.Tensor((2, 8, 5, 7), dtype=\"float32\")"
static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: " T4 ", b: " T4 ") -> " T4 ":\n"
    "        with R.dataflow():\n"
    "            s: " T4 " = R.multiply(x, R.const(0.9, \"float32\"))\n"
    "            a1: " T4 " = R.tan(s)\n"
    "            a2: " T4 " = R.asin(s)\n"
    "            a3: " T4 " = R.acos(s)\n"
    "            a4: " T4 " = R.atan(a1)\n"
    "            a5: " T4 " = R.sinh(s)\n"
    "            a6: " T4 " = R.cosh(s)\n"
    "            a7: " T4 " = R.asinh(a5)\n"
    "            a8: " T4 " = R.acosh(a6)\n"
    "            a9: " T4 " = R.atanh(s)\n"
    "            x4: " T4 " = R.multiply(x, R.const(4.0, \"float32\"))\n"
    "            r1: " T4 " = R.round(x4)\n"
    "            r2: " T4 " = R.trunc(x4)\n"
    "            r3: " T4 " = R.mod(x4, b)\n"
    "            r4: " T4 " = R.floor_mod(x4, b)\n"
    "            c1: " T4 " = R.add(a2, a3)\n"
    "            c2: " T4 " = R.add(c1, a4)\n"
    "            c3: " T4 " = R.add(c2, a7)\n"
    "            c4: " T4 " = R.add(c3, a8)\n"
    "            c5: " T4 " = R.add(c4, a9)\n"
    "            c6: " T4 " = R.add(c5, r1)\n"
    "            c7: " T4 " = R.add(c6, r2)\n"
    "            c8: " T4 " = R.add(c7, r3)\n"
    "            gv: " T4 " = R.add(c8, r4)\n"
    "            R.output(gv)\n"
    "        return gv\n";

static rt_tensor *rand_tensor(const int64_t *shape, uint32_t seed, float lo) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 4, shape);
    float *p = rt_tensor_data(t);
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
        s = s * 1664525u + 1013904223u;
        float v = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f; /* [-1, 1) */
        p[i] = fabsf(v) < lo ? (v < 0 ? -lo : lo) : v;
    }
    return t;
}

Test(llvm, onnx_coverage_ops_fuse) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    int64_t sh[4] = {2, 8, 5, 7};
    rt_value in[2] = {rt_value_tensor(rand_tensor(sh, 1, 0)), rt_value_tensor(rand_tensor(sh, 2, 0.25f))};
    rt_value ref = {0}, got = {0};
    rt_exec_t *e;
    cr_assert_eq(rt_exec_new(m, "main", &e, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(e, in, 2, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(e);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 2, &got, &d), GR_OK, "%s", d.msg);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    cr_expect_eq(st.nkernel, 0, "%u ops left to reference kernels", st.nkernel);
    cr_expect_eq(st.nfused_ops, 24, "%u of 24 ops fused", st.nfused_ops);
    tc_expect_tensor(got.u.t, ref.u.t, (gr_cmp_opts){.atol = 1e-6, .rtol = 1e-6}, "compiled against the reference");
    rt_value_clear(&got);
    rt_value_clear(&ref);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    ir_ctx_free(ctx);
}
