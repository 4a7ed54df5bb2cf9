/* The planned executor (static memory plan) and the LLVM host lowering: same outputs as the
 * reference executor, buffers sharing storage only when their lifetimes do not overlap. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "backends/llvm/llvm_host.h"
#include "ir/text/parser.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "tests/compare_util.h"

static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((2, 8, 5, 7), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\"), c: R.Tensor((7,), dtype=\"float32\")) -> R.Tuple(R.Tensor((2, 1, 5, 7), dtype=\"float32\"), R.Tensor((2, 8, 5, 7), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv0: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.multiply(x, b)  # span: \"conv1\"\n"
    "            lv1: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.add(lv0, c)  # span: \"bn1\"\n"
    "            lv2: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.clip(lv1, R.prim_value(T.float32(-0.5)), R.prim_value(T.float32(0.75)))  # span: \"act1\"\n"
    "            lv3: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.sigmoid(lv2)\n"
    "            lv4: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.nn.relu(x)  # span: \"relu2\"\n"
    "            lv5: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.add(lv3, lv4)\n"
    "            lv6: R.Tensor((2, 1, 5, 7), dtype=\"float32\") = R.sum(lv5, axis=[1], keepdims=True)  # span: \"pool\"\n"
    "            lv7: R.Tensor((2, 1, 5, 7), dtype=\"float32\") = R.exp(lv6)\n"
    "            lv8: R.Tensor((2, 1, 5, 7), dtype=\"float32\") = R.maximum(lv7, lv6)\n"
    "            lv9: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.tanh(lv5)\n"
    "            lv10: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.divide(lv9, b)\n"
    "            lv11: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.subtract(lv10, lv8)\n"
    "            gv: R.Tuple(R.Tensor((2, 1, 5, 7), dtype=\"float32\"), R.Tensor((2, 8, 5, 7), dtype=\"float32\")) = (lv8, lv11)\n"
    "            R.output(gv)\n"
    "        return gv\n";

static rt_tensor *rand_tensor(int32_t nd, const int64_t *shape, uint32_t seed) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, nd, shape);
    float *p = rt_tensor_data(t);
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return t;
}

static void expect_close(const rt_value *a, const rt_value *b, double tol) {
    tc_expect_value(a, b, (gr_cmp_opts){.atol = tol, .rtol = tol}, "against the reference executor");
}

static ir_module *parse(ir_ctx_t *ctx, const char *text) {
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    return m;
}

static void inputs3(rt_value *in) {
    int64_t sx[4] = {2, 8, 5, 7}, sb[4] = {1, 8, 1, 1}, sc[1] = {7};
    in[0] = rt_value_tensor(rand_tensor(4, sx, 1));
    in[1] = rt_value_tensor(rand_tensor(4, sb, 2));
    in[2] = rt_value_tensor(rand_tensor(1, sc, 3));
}

static void run_ref(const ir_module *m, rt_value *in, uint32_t n, rt_value *out) {
    rt_exec_t *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, n, out, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
}

Test(plan, memory_plan_shares_only_disjoint_lifetimes) {
    size_t size[4] = {100, 64, 200, 64}, off[4];
    uint32_t start[4] = {0, 1, 2, 3}, end[4] = {1, 2, 3, 4};
    size_t arena = rt_plan_memory(4, size, start, end, off);
    for (uint32_t i = 0; i < 4; i++) {
        cr_assert_eq(off[i] % 64, 0);
        for (uint32_t j = 0; j < 4; j++) {
            if (i == j || start[i] > end[j] || start[j] > end[i]) continue;
            size_t ai = (size[i] + 63) / 64 * 64, aj = (size[j] + 63) / 64 * 64;
            cr_assert(off[i] + ai <= off[j] || off[j] + aj <= off[i], "buffers %u and %u overlap", i, j);
        }
    }
    /* 0 (128) and 2 (256) do not overlap in time: the arena is below the 512-byte sum */
    cr_assert_lt(arena, 128 + 64 + 256 + 64);
    cr_assert_geq(arena, 256 + 64);
}

Test(plan, reference_kernels_match_reference_executor) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, k_mod);
    rt_value in[3], ref = {0}, got = {0};
    inputs3(in);
    run_ref(m, in, 3, &ref);
    rt_px *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_px_new(m, "main", NULL, &x, &d), GR_OK, "%s", d.msg);
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_eq(rt_exec_run(x, in, 3, &got, &d), GR_OK, "%s", d.msg);
        expect_close(&got, &ref, 0);
        rt_value_clear(&got);
    }
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    cr_assert_eq(st.nhost, 0);
    cr_assert_gt(st.nplanned, 3);
    cr_assert_lt(st.arena_bytes, st.intermediate_bytes, "no sharing: %zu vs %zu", st.arena_bytes,
                 st.intermediate_bytes);
    rt_exec_free(x);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

static void count_host(const rt_exec_event *ev, void *user) {
    if (strcmp(ev->kind, "host") == 0) (*(int *)user)++;
}

Test(llvm, fused_groups_match_reference_executor) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, k_mod);
    rt_value in[3], ref = {0}, got = {0};
    inputs3(in);
    run_ref(m, in, 3, &ref);
    gr_llvm_host *h;
    rt_px *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    int nhost = 0;
    rt_exec_set_profiler(x, count_host, &nhost);
    cr_assert_eq(rt_exec_run(x, in, 3, &got, &d), GR_OK, "%s", d.msg);
    expect_close(&got, &ref, 1e-6);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    /* {multiply, add, clip, sigmoid, relu, add} (the relu chain merges at the add), {sum} (lv5
     * has two uses: the sum is a group of its own), {exp, maximum} (lv8 is also an output),
     * {tanh, divide, subtract} */
    cr_assert_eq(st.nhost, 4, "groups: %u", st.nhost);
    cr_assert_eq(nhost, 4);
    cr_assert_eq(st.nfused_ops, 12);
    cr_assert_eq(st.nkernel, 0);
    bool named = false;
    for (uint32_t g = 0; g < rt_px_num_groups(x); g++)
        named |= strstr(rt_px_group(x, g)->name, "conv1") && strstr(rt_px_group(x, g)->name, "bn1");
    cr_assert(named, "group names carry the layers");
    size_t olen;
    cr_assert_not_null(gr_llvm_host_object(h, &olen));
    cr_assert_gt(olen, 0);
    rt_value_clear(&got);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

Test(llvm, demo_model_matches_reference) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_file(ctx, "examples/demo.relax", &m, &d), GR_OK, "%s", d.msg);
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    rt_value in[3] = {rt_value_tensor(rand_tensor(4, sx, 4)), rt_value_tensor(rand_tensor(4, sw, 5)),
                      rt_value_tensor(rand_tensor(4, sb, 6))};
    rt_value ref = {0}, got = {0};
    run_ref(m, in, 3, &ref);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 3, &got, &d), GR_OK, "%s", d.msg);
    expect_close(&got, &ref, 1e-6);
    rt_value_clear(&got);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

Test(plan, bad_inputs_are_errors) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, k_mod);
    rt_px *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_px_new(m, "main", NULL, &x, &d), GR_OK, "%s", d.msg);
    rt_value in[3], got = {0};
    inputs3(in);
    cr_assert_eq(rt_exec_run(x, in, 2, &got, &d), GR_ERR_INVALID);
    rt_value_clear(&in[2]);
    int64_t bad[1] = {6};
    in[2] = rt_value_tensor(rand_tensor(1, bad, 9));
    gr_diag_clear(&d);
    cr_assert_eq(rt_exec_run(x, in, 3, &got, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "'c'"), "%s", d.msg);
    rt_exec_free(x);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

static const char *k_red =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((2, 8, 5, 7), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\"), c: R.Tensor((7,), dtype=\"float32\")) -> R.Tuple(R.Tensor((2, 8, 1, 1), dtype=\"float32\"), R.Tensor((2, 5, 7), dtype=\"float32\"), R.Tensor((), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv0: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.multiply(x, b)  # span: \"se_mul\"\n"
    "            lv1: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.add(lv0, c)\n"
    "            lv2: R.Tensor((2, 8, 1, 1), dtype=\"float32\") = R.mean(lv1, axis=[2, 3], keepdims=True)  # span: \"se_pool\"\n"
    "            lv3: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.exp(x)\n"
    "            lv4: R.Tensor((2, 5, 7), dtype=\"float32\") = R.sum(lv3, axis=[-3])\n"
    "            lv5: R.Tensor((2, 8, 5, 7), dtype=\"float32\") = R.subtract(x, b)\n"
    "            lv6: R.Tensor((), dtype=\"float32\") = R.sum(lv5)\n"
    "            gv: R.Tuple(R.Tensor((2, 8, 1, 1), dtype=\"float32\"), R.Tensor((2, 5, 7), dtype=\"float32\"), R.Tensor((), dtype=\"float32\")) = (lv2, lv4, lv6)\n"
    "            R.output(gv)\n"
    "        return gv\n";

Test(llvm, reductions_end_groups) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, k_red);
    rt_value in[3], ref = {0}, got = {0};
    inputs3(in);
    run_ref(m, in, 3, &ref);
    gr_llvm_host *h;
    rt_px *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 3, &got, &d), GR_OK, "%s", d.msg);
    expect_close(&got, &ref, 1e-6);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    cr_assert_eq(st.nhost, 3, "groups: %u", st.nhost);
    cr_assert_eq(st.nkernel, 0, "every reduction fused: %u kernels left", st.nkernel);
    cr_assert_eq(st.nfused_ops, 7);
    rt_value_clear(&got);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

/* A result stays valid after the next run (which reuses the arena): outputs of main are never
 * planned, and the chain of same-dtype casts ending in the output keeps them off the arena. */
Test(plan, results_never_alias_the_arena) {
    static const char *txt =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4, 16), dtype=\"float32\")) -> R.Tensor((4, 16), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv0: R.Tensor((4, 16), dtype=\"float32\") = R.exp(x)\n"
        "            lv1: R.Tensor((4, 16), dtype=\"float32\") = R.astype(lv0, dtype=\"float32\")\n"
        "            gv: R.Tensor((4, 16), dtype=\"float32\") = R.astype(lv1, dtype=\"float32\")\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, txt);
    rt_px *x;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_px_new(m, "main", NULL, &x, &d), GR_OK, "%s", d.msg);
    int64_t s[2] = {4, 16};
    rt_value a = rt_value_tensor(rand_tensor(2, s, 1)), b = rt_value_tensor(rand_tensor(2, s, 2));
    rt_value ra = {0}, rb = {0}, ref = {0};
    run_ref(m, &a, 1, &ref);
    cr_assert_eq(rt_exec_run(x, &a, 1, &ra, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, &b, 1, &rb, &d), GR_OK, "%s", d.msg);
    expect_close(&ra, &ref, 0);
    rt_value_clear(&ra);
    rt_value_clear(&rb);
    rt_value_clear(&ref);
    rt_value_clear(&a);
    rt_value_clear(&b);
    rt_exec_free(x);
    ir_ctx_free(ctx);
}
