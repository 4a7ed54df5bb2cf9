/* LLVM host kernels over symbolic shapes: a model with `n` (and `b`) dims is compiled once and
 * run at several sizes; its groups take their extents and strides at run time
 * (rt_fuse_dyn_args). Each run is compared with the reference executor at the same size, through
 * the JIT and through an artifact (build -> load -> run), and the profile must show the groups
 * as "host" events (LLVM kernels), not reference kernels. Tolerances as tests/llvm/
 * test_llvm_tails.c: elementwise chains and max exact up to float rounding of the fused chain
 * (2e-6 relative), sums / means / softmax 2e-6 relative, layer_norm 1e-5 absolute. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/llvm/llvm_host.h"
#include "deploy/graft_model.h"
#include "ir/text/parser.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"
#include "tests/compare_util.h"

static uint32_t rng(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static rt_tensor *rand_tensor(int32_t nd, const int64_t *shape, uint32_t seed, float scale) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, nd, shape);
    float *p = rt_tensor_data(t);
    uint32_t s = seed * 2654435761u + 7;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++)
        p[i] = scale * ((float)(rng(&s) & 0xffff) / 32768.0f - 1.0f);
    return t;
}

/* a: graft's, b: the reference executor's (its NaN, for NaN inputs, is the answer). */
static void expect_close(const rt_value *a, const rt_value *b, double rel, double abs_tol, const char *what) {
    tc_expect_value(a, b, (gr_cmp_opts){.atol = abs_tol, .rtol = rel, .nan_expected = true}, "%s", what);
}

/* x: (b, n, 16); c: (n, 1) broadcast along the last axis; w, g, be: (16,). Groups:
 *   {multiply, add, sigmoid, sum over the last axis}, {max over the last axis}, {add, softmax},
 *   {layer_norm}, {subtract, exp, multiply} (elementwise only); the mean over the symbolic axis n
 *   stays a reference kernel (reduced axes must be static). */
static const char *k_model =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"b\", \"n\", 16), dtype=\"float32\"), c: R.Tensor((\"n\", 1), dtype=\"float32\"),\n"
    "             w: R.Tensor((16,), dtype=\"float32\"), g: R.Tensor((16,), dtype=\"float32\"),\n"
    "             be: R.Tensor((16,), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv0 = R.multiply(x, w)  # span: \"scale\"\n"
    "            lv1 = R.add(lv0, c)\n"
    "            lv2 = R.sigmoid(lv1)\n"
    "            lv3 = R.sum(lv2, axis=[-1], keepdims=True)  # span: \"pool\"\n"
    "            lv4 = R.mean(x, axis=[1], keepdims=False)\n"
    "            lv5 = R.max(x, axis=[2], keepdims=False)\n"
    "            lv6 = R.add(x, c)  # span: \"logits\"\n"
    "            lv7 = R.nn.softmax(lv6, axis=-1)  # span: \"attn\"\n"
    "            lv8 = R.nn.layer_norm(x, g, be, axes=[-1], epsilon=1e-5)  # span: \"ln\"\n"
    "            lv9 = R.subtract(x, c)\n"
    "            lv10 = R.exp(lv9)\n"
    "            lv11 = R.multiply(lv10, w)\n"

    "            gv = (lv3, lv4, lv5, lv7, lv8, lv11)\n"
    "            R.output(gv)\n"
    "        return gv\n";

static const int64_t k_sizes[][2] = {{1, 1}, {2, 3}, {1, 17}, {3, 64}, {2, 5}};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])

static void make_inputs(rt_value *in, int64_t b, int64_t n, uint32_t seed) {
    int64_t sx[3] = {b, n, 16}, sc[2] = {n, 1}, sw[1] = {16};
    in[0] = rt_value_tensor(rand_tensor(3, sx, seed, 4.0f));
    in[1] = rt_value_tensor(rand_tensor(2, sc, seed + 1, 2.0f));
    in[2] = rt_value_tensor(rand_tensor(1, sw, seed + 2, 1.5f));
    in[3] = rt_value_tensor(rand_tensor(1, sw, seed + 3, 1.0f));
    in[4] = rt_value_tensor(rand_tensor(1, sw, seed + 4, 1.0f));
}

static void clear_inputs(rt_value *in) {
    for (int i = 0; i < 5; i++) rt_value_clear(&in[i]);
}

static ir_module *parse(ir_ctx_t *ctx) {
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "sym.relax", k_model, strlen(k_model), &m, &d), GR_OK, "%s", d.msg);
    return m;
}

static rt_value reference(const ir_module *m, rt_value *in) {
    gr_diag d;
    gr_diag_clear(&d);
    rt_exec_t *rx;
    rt_value ref = {0};
    cr_assert_eq(rt_exec_new(m, "main", &rx, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(rx, in, 5, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(rx);
    return ref;
}

typedef struct counts {
    uint32_t host, op;
    bool softmax_host, ln_host;
} counts;

static void count_event(const rt_exec_event *ev, void *user) {
    counts *c = user;
    if (strcmp(ev->kind, "host") == 0) {
        c->host++;
        c->softmax_host |= strstr(ev->name, "softmax") != NULL;
        c->ln_host |= strstr(ev->name, "layer_norm") != NULL;
    } else if (strcmp(ev->kind, "op") == 0) {
        c->op++;
    }
}

#define WANT_GROUPS 5u

static void check_counts(const counts *c, const char *what, int64_t b, int64_t n) {
    cr_assert_eq(c->host, WANT_GROUPS, "%s b=%lld n=%lld: %u host kernels ran", what, (long long)b, (long long)n, c->host);
    cr_assert_eq(c->op, 1, "%s: %u reference kernels ran (the mean over n only)", what, c->op);
    cr_assert(c->softmax_host && c->ln_host, "%s: softmax and layer_norm ran as LLVM kernels", what);
}

Test(llvm_symbolic, one_jit_kernel_serves_every_size) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    cr_assert_eq(st.nhost, WANT_GROUPS, "groups: %u", st.nhost);
    cr_assert_eq(st.nkernel, 1, "reference kernels: %u", st.nkernel);
    uint32_t ndyn = 0;
    for (uint32_t i = 0; i < rt_px_num_groups(x); i++) ndyn += rt_px_group(x, i)->dyn;
    cr_assert_eq(ndyn, WANT_GROUPS, "every group has symbolic extents: %u", ndyn);
    uint64_t compile_ns = gr_llvm_host_compile_ns(h);
    for (int rep = 0; rep < 2; rep++)
        for (size_t k = 0; k < NSIZES; k++) {
            rt_value in[5], got = {0};
            make_inputs(in, k_sizes[k][0], k_sizes[k][1], (uint32_t)(k * 10 + (size_t)rep));
            rt_value ref = reference(m, in);
            counts c = {0};
            rt_exec_set_profiler(x, count_event, &c);
            cr_assert_eq(rt_exec_run(x, in, 5, &got, &d), GR_OK, "%s", d.msg);
            rt_exec_set_profiler(x, NULL, NULL);
            check_counts(&c, "jit", k_sizes[k][0], k_sizes[k][1]);
            expect_close(&got, &ref, 2e-6, 1e-5, "jit");
            rt_value_clear(&got);
            rt_value_clear(&ref);
            clear_inputs(in);
        }
    cr_assert_eq(gr_llvm_host_compile_ns(h), compile_ns, "compiled once, not per size");
    rt_exec_free(x);
    gr_llvm_host_free(h);
    ir_ctx_free(ctx);
}

Test(llvm_symbolic, one_artifact_serves_every_size) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    rt_value refs[NSIZES], ins[NSIZES][5];
    for (size_t k = 0; k < NSIZES; k++) {
        make_inputs(ins[k], k_sizes[k][0], k_sizes[k][1], (uint32_t)(k + 100));
        refs[k] = reference(m, ins[k]);
    }
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(m, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_eq(info.nhost, WANT_GROUPS, "host kernels: %u", info.nhost);
    cr_assert_eq(info.nkernel, 1, "reference kernels: %u", info.nkernel);
    for (size_t k = 0; k < NSIZES; k++) {
        rt_value got = {0};
        counts c = {0};
        graft_model_set_profiler(gm, count_event, &c);
        cr_assert_eq(graft_model_run(gm, ins[k], 5, &got, &d), GR_OK, "%s", d.msg);
        graft_model_set_profiler(gm, NULL, NULL);
        check_counts(&c, "artifact", k_sizes[k][0], k_sizes[k][1]);
        expect_close(&got, &refs[k], 2e-6, 1e-5, "artifact");
        rt_value_clear(&got);
        rt_value_clear(&refs[k]);
        clear_inputs(ins[k]);
    }
    graft_model_free(gm);
}

/* The run-time arguments: extents and strides from concrete shapes (broadcast inputs stride 0),
 * and shapes that break a group's static dims or broadcasting are errors naming the kernel (the
 * signature check catches them first in a run; this is the kernel's own guard). */
Test(llvm_symbolic, dyn_args_from_concrete_shapes) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    const rt_fuse_group *g = NULL;
    for (uint32_t i = 0; i < rt_px_num_groups(x); i++)
        if (strstr(rt_px_group(x, i)->name, "softmax")) g = rt_px_group(x, i);
    cr_assert(g && g->nin == 2 && g->dyn, "the {add, softmax} group");
    int64_t sx[3] = {2, 5, 16}, sc[2] = {5, 1}, args[RT_FUSE_DYN_ARGS(2)], out[RT_MAX_NDIM], numel = 0;
    const int64_t *ins[2] = {sx, sc};
    cr_assert_eq(rt_fuse_dyn_args(g, ins, args, out, &numel, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(numel, 160);
    cr_assert(out[0] == 2 && out[1] == 5 && out[2] == 16);
    /* levels b, n, then the softmax axis; output strides 80, 16, 1; x 80, 16, 1; c 0, 1, 0 */
    static const int64_t want[12] = {2, 5, 16, 80, 16, 1, 80, 16, 1, 0, 1, 0};
    for (int i = 0; i < 12; i++) cr_assert_eq(args[i], want[i], "args[%d] = %lld", i, (long long)args[i]);
    int64_t bad_c[2] = {4, 1}; /* n = 4 against x's 5 */
    ins[1] = bad_c;
    cr_assert_eq(rt_fuse_dyn_args(g, ins, args, out, &numel, &d), GR_ERR_RUNTIME);
    cr_assert(strstr(d.msg, g->name) && strstr(d.msg, "broadcast"), "%s", d.msg);
    int64_t bad_x[3] = {2, 5, 15}; /* the static 16 */
    ins[0] = bad_x;
    ins[1] = sc;
    gr_diag_clear(&d);
    cr_assert_eq(rt_fuse_dyn_args(g, ins, args, out, &numel, &d), GR_ERR_RUNTIME);
    cr_assert(strstr(d.msg, g->name) && strstr(d.msg, "wants 16"), "%s", d.msg);
    int64_t empty[3] = {0, 5, 16}; /* an empty kept axis: nothing to run */
    ins[0] = empty;
    cr_assert_eq(rt_fuse_dyn_args(g, ins, args, out, &numel, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(numel, 0);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    ir_ctx_free(ctx);
}
