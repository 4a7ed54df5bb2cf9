/* Group tails of the LLVM host lowering (R.sum / R.mean / R.max / R.min, softmax, log_softmax,
 * global average pooling, layer_norm, rms_norm): random shapes with broadcasting elementwise chains before the tail
 * and tails on their own, compared with the reference kernels (reference executor), and
 * through an artifact (build -> load -> run). Tolerances: max / min exact; sums, means and
 * softmax 2e-6 relative (both accumulate in double; the only difference is float rounding
 * inside the fused chain); log_softmax 1e-5 absolute; layer_norm / rms_norm 1e-5 absolute
 * (outputs are O(1): normalized values times gamma plus beta). */
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

static void shape_str(char *buf, size_t cap, int32_t nd, const int64_t *s) {
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int32_t i = 0; i < nd; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    snprintf(buf + n, cap - n, "%s)", nd == 1 ? "," : "");
}

/* a: graft's, b: the reference executor's (its NaN, for NaN inputs, is the answer). */
static void expect_close(const rt_value *a, const rt_value *b, double rel, double abs_tol, const char *what) {
    tc_expect_value(a, b, (gr_cmp_opts){.atol = abs_tol, .rtol = rel, .nan_expected = true}, "%s", what);
}

static ir_module *parse(ir_ctx_t *ctx, const char *text) {
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", text, strlen(text), &m, &d), GR_OK, "%s\n%s", d.msg, text);
    return m;
}

/* Runs m through the reference executor and the LLVM-lowered planned executor; the host
 * groups must take every op (no reference kernel left) and agree within the tolerances. */
static void check(const char *text, rt_value *in, uint32_t nin, uint32_t want_groups, double rel,
                  double abs_tol) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    gr_diag d;
    gr_diag_clear(&d);
    rt_exec_t *rx;
    rt_value ref = {0}, got = {0};
    cr_assert_eq(rt_exec_new(m, "main", &rx, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(rx, in, nin, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(rx);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s\n%s", d.msg, text);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    cr_assert_eq(st.nkernel, 0, "every op lowered: %u reference kernels left\n%s", st.nkernel, text);
    cr_assert_eq(st.nhost, want_groups, "groups: %u, want %u\n%s", st.nhost, want_groups, text);
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_eq(rt_exec_run(x, in, nin, &got, &d), GR_OK, "%s", d.msg);
        expect_close(&got, &ref, rel, abs_tol, text);
        rt_value_clear(&got);
    }
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&ref);
    ir_ctx_free(ctx);
}

static const char *const k_red_ops[] = {"R.sum", "R.mean", "R.max", "R.min"};

/* x (shape S) and b (S with random dims set to 1, maybe of lower rank): two outputs,
 *   tail(exp-chain(x, b)) with a fused prefix, and tail(x) alone. */
Test(llvm_tails, reductions_random_shapes) {
    uint32_t s = 12345;
    for (int trial = 0; trial < 24; trial++) {
        int32_t nd = 1 + (int32_t)(rng(&s) % 4);
        int64_t sx[4], sb[4];
        for (int32_t i = 0; i < nd; i++) sx[i] = 1 + rng(&s) % 7;
        int32_t nb = nd - (int32_t)(rng(&s) % nd);
        for (int32_t i = 0; i < nb; i++) sb[i] = rng(&s) % 2 ? sx[nd - nb + i] : 1;
        const char *op = k_red_ops[trial % 4];
        bool keep = rng(&s) % 2;
        char axis[64] = "None";
        uint32_t mask = rng(&s) % (1u << nd);
        if (trial % 5 != 0 && mask) {
            size_t n = (size_t)snprintf(axis, sizeof axis, "[");
            for (int32_t i = 0; i < nd; i++)
                if (mask >> i & 1) n += (size_t)snprintf(axis + n, sizeof axis - n, "%s%d", n > 1 ? ", " : "", i - (rng(&s) % 2 ? nd : 0));
            snprintf(axis + n, sizeof axis - n, "]");
        }
        char shx[64], shb[64], text[2048];
        shape_str(shx, sizeof shx, nd, sx);
        shape_str(shb, sizeof shb, nb, sb);
        snprintf(text, sizeof text,
                 "@I.ir_module\n"
                 "class Module:\n"
                 "    @R.function\n"
                 "    def main(x: R.Tensor(%s, dtype=\"float32\"), b: R.Tensor(%s, dtype=\"float32\")):\n"
                 "        with R.dataflow():\n"
                 "            lv0 = R.multiply(x, b)  # span: \"mul\"\n"
                 "            lv1 = R.tanh(lv0)\n"
                 "            lv2 = R.add(lv1, x)\n"
                 "            lv3 = %s(lv2, axis=%s, keepdims=%s)  # span: \"red\"\n"
                 "            lv4 = %s(x, axis=%s, keepdims=%s)\n"
                 "            gv = (lv3, lv4)\n"
                 "            R.output(gv)\n"
                 "        return gv\n",
                 shx, shb, op, axis, keep ? "True" : "False", op, axis, keep ? "True" : "False");
        rt_value in[2] = {rt_value_tensor(rand_tensor(nd, sx, (uint32_t)trial, 2.0f)),
                          rt_value_tensor(rand_tensor(nb, sb, (uint32_t)trial + 100, 2.0f))};
        check(text, in, 2, 2, 2e-6, 1e-6);
        rt_value_clear(&in[0]);
        rt_value_clear(&in[1]);
    }
}

/* softmax / log_softmax over a random axis (negative or not), with a broadcast prefix and alone.
 * The inputs span [-40, 40): without subtracting the row max, exp overflows. */
Test(llvm_tails, softmax_random_shapes) {
    uint32_t s = 777;
    for (int trial = 0; trial < 20; trial++) {
        int32_t nd = 1 + (int32_t)(rng(&s) % 4);
        int64_t sx[4], sb[4];
        for (int32_t i = 0; i < nd; i++) sx[i] = 1 + rng(&s) % (i == nd - 1 ? 40 : 6);
        int32_t nb = nd - (int32_t)(rng(&s) % nd);
        for (int32_t i = 0; i < nb; i++) sb[i] = rng(&s) % 2 ? sx[nd - nb + i] : 1;
        bool lg = trial % 2;
        int axis = trial % 3 == 0 ? -1 : (int)(rng(&s) % (uint32_t)nd) - (rng(&s) % 2 ? nd : 0);
        char shx[64], shb[64], text[2048];
        shape_str(shx, sizeof shx, nd, sx);
        shape_str(shb, sizeof shb, nb, sb);
        const char *op = lg ? "R.nn.log_softmax" : "R.nn.softmax";
        snprintf(text, sizeof text,
                 "@I.ir_module\n"
                 "class Module:\n"
                 "    @R.function\n"
                 "    def main(x: R.Tensor(%s, dtype=\"float32\"), b: R.Tensor(%s, dtype=\"float32\")):\n"
                 "        with R.dataflow():\n"
                 "            lv0 = R.add(x, b)  # span: \"logits\"\n"
                 "            lv1 = R.multiply(lv0, b)\n"
                 "            lv2 = %s(lv1, axis=%d)  # span: \"attn_softmax\"\n"
                 "            lv3 = %s(x, axis=%d)\n"
                 "            gv = (lv2, lv3)\n"
                 "            R.output(gv)\n"
                 "        return gv\n",
                 shx, shb, op, axis, op, axis);
        rt_value in[2] = {rt_value_tensor(rand_tensor(nd, sx, (uint32_t)trial, 40.0f)),
                          rt_value_tensor(rand_tensor(nb, sb, (uint32_t)trial + 50, 1.5f))};
        check(text, in, 2, 2, lg ? 0 : 2e-6, lg ? 1e-5 : 1e-7);
        rt_value_clear(&in[0]);
        rt_value_clear(&in[1]);
    }
}

/* Global average pooling (output_size 1, NCHW) is a mean over H and W; after a broadcast
 * per-channel scale it fuses with it. */
Test(llvm_tails, global_avg_pool) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2, 5, 7, 9), dtype=\"float32\"), b: R.Tensor((1, 5, 1, 1), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.multiply(x, b)  # span: \"se_scale\"\n"
        "            lv1 = R.nn.adaptive_avg_pool2d(lv0, output_size=[1, 1])  # span: \"gap\"\n"
        "            lv2 = R.nn.adaptive_avg_pool2d(x, output_size=[1])\n"
        "            gv = (lv1, lv2)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    int64_t sx[4] = {2, 5, 7, 9}, sb[4] = {1, 5, 1, 1};
    rt_value in[2] = {rt_value_tensor(rand_tensor(4, sx, 3, 3.0f)), rt_value_tensor(rand_tensor(4, sb, 4, 1.0f))};
    check(text, in, 2, 2, 2e-6, 1e-7);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
}

/* A NaN sticks in max / min (as the reference kernel), softmax rows of -inf... follow the
 * reference too (NaN), and +-inf inputs reduce like the reference. */
Test(llvm_tails, nan_and_inf_follow_the_reference) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((3, 4), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.max(x, axis=[1])\n"
        "            lv1 = R.min(x, axis=[1])\n"
        "            lv2 = R.nn.softmax(x, axis=1)\n"
        "            lv3 = R.sum(x, axis=[1])\n"
        "            gv = (lv0, lv1, lv2, lv3)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    int64_t sx[2] = {3, 4};
    rt_tensor *t = rand_tensor(2, sx, 9, 1.0f);
    float *p = rt_tensor_data(t);
    p[1] = NAN;                      /* row 0: NaN after a number */
    p[4] = INFINITY;                 /* row 1: +inf first */
    p[7] = -INFINITY;
    for (int i = 8; i < 12; i++) p[i] = -INFINITY; /* row 2: all -inf */
    rt_value in = rt_value_tensor(t);
    check(text, &in, 1, 4, 2e-6, 1e-7);
    rt_value_clear(&in);
}

/* Tails survive the artifact: build -> load (link only) -> run gives the reference outputs,
 * and the span table names the tail's layer. */
Test(llvm_tails, through_an_artifact) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((2, 3, 50), dtype=\"float32\"), b: R.Tensor((50,), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.add(x, b)  # span: \"fc_bias\"\n"
        "            lv1 = R.nn.log_softmax(lv0, axis=-1)  # span: \"ctc_logsoftmax\"\n"
        "            lv2 = R.nn.softmax(x, axis=1)  # span: \"attn\"\n"
        "            lv3 = R.max(lv2, axis=[2], keepdims=True)\n"
        "            gv = (lv1, lv3)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    gr_diag d;
    gr_diag_clear(&d);
    int64_t sx[3] = {2, 3, 50}, sb[1] = {50};
    rt_value in[2] = {rt_value_tensor(rand_tensor(3, sx, 5, 10.0f)), rt_value_tensor(rand_tensor(1, sb, 6, 1.0f))};
    rt_exec_t *rx;
    rt_value ref = {0}, got = {0};
    cr_assert_eq(rt_exec_new(m, "main", &rx, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(rx, in, 2, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(rx);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(m, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_eq(info.nkernel, 0, "%u reference kernels", info.nkernel);
    cr_assert_eq(info.nhost, 3, "{add, log_softmax}, {softmax}, {max}: %u", info.nhost);
    bool named = false;
    for (uint32_t r = 0; r < graft_model_num_regions(gm); r++) {
        const char *name, *layers;
        graft_model_region(gm, r, &name, NULL, &layers);
        named |= strstr(name, "log_softmax") && strstr(layers, "ctc_logsoftmax");
    }
    cr_assert(named, "the log_softmax kernel's region names its layer");
    cr_assert_eq(graft_model_run(gm, in, 2, &got, &d), GR_OK, "%s", d.msg);
    expect_close(&got, &ref, 2e-6, 1e-5, "artifact");
    rt_value_clear(&got);
    rt_value_clear(&ref);
    graft_model_free(gm);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
}

/* layer_norm over the trailing 1..rank axes (gamma / beta of the trailing shape), center / scale on or off, after a broadcast prefix and alone; and
 * rms_norm. Inputs get a large offset so a one-pass variance would lose digits. */
Test(llvm_tails, layer_norm_random_shapes) {
    uint32_t s = 4242;
    for (int trial = 0; trial < 16; trial++) {
        int32_t nd = 1 + (int32_t)(rng(&s) % 4);
        int64_t sx[4], sb[4], sg[4];
        for (int32_t i = 0; i < nd; i++) sx[i] = 1 + rng(&s) % (i == nd - 1 ? 48 : 5);
        int32_t nb = nd - (int32_t)(rng(&s) % nd);
        for (int32_t i = 0; i < nb; i++) sb[i] = rng(&s) % 2 ? sx[nd - nb + i] : 1;
        int32_t nax = 1 + (int32_t)(rng(&s) % (uint32_t)nd);
        int32_t ng = nax;
        for (int32_t i = 0; i < ng; i++) sg[i] = sx[nd - ng + i];
        char axes[64];
        size_t n = (size_t)snprintf(axes, sizeof axes, "[");
        for (int32_t i = nd - nax; i < nd; i++)
            n += (size_t)snprintf(axes + n, sizeof axes - n, "%s%d", i > nd - nax ? ", " : "", rng(&s) % 2 ? i - nd : i);
        snprintf(axes + n, sizeof axes - n, "]");
        bool rms = trial % 4 == 3;
        bool center = trial % 3 != 1, scale = trial % 5 != 2;
        char shx[64], shb[64], shg[64], text[4096], call1[256], call2[256];
        shape_str(shx, sizeof shx, nd, sx);
        shape_str(shb, sizeof shb, nb, sb);
        shape_str(shg, sizeof shg, ng, sg);
        if (rms) {
            snprintf(call1, sizeof call1, "R.nn.rms_norm(lv1, g, axes=%s, epsilon=1e-5)", axes);
            snprintf(call2, sizeof call2, "R.nn.rms_norm(x, g, axes=%s, epsilon=1e-3)", axes);
        } else {
            snprintf(call1, sizeof call1, "R.nn.layer_norm(lv1, g, be, axes=%s, epsilon=1e-5, center=%s, scale=%s)", axes,
                     center ? "True" : "False", scale ? "True" : "False");
            snprintf(call2, sizeof call2, "R.nn.layer_norm(x, g, be, axes=%s, epsilon=1e-3)", axes);
        }
        snprintf(text, sizeof text,
                 "@I.ir_module\n"
                 "class Module:\n"
                 "    @R.function\n"
                 "    def main(x: R.Tensor(%s, dtype=\"float32\"), b: R.Tensor(%s, dtype=\"float32\"), g: R.Tensor(%s, dtype=\"float32\"), be: R.Tensor(%s, dtype=\"float32\")):\n"
                 "        with R.dataflow():\n"
                 "            lv0 = R.add(x, b)  # span: \"residual\"\n"
                 "            lv1 = R.multiply(lv0, b)\n"
                 "            lv2 = %s  # span: \"norm1\"\n"
                 "            lv3 = %s\n"
                 "            gv = (lv2, lv3)\n"
                 "            R.output(gv)\n"
                 "        return gv\n",
                 shx, shb, shg, shg, call1, call2);
        rt_tensor *x = rand_tensor(nd, sx, (uint32_t)trial, 2.0f);
        float *xp = rt_tensor_data(x);
        for (int64_t i = 0; i < rt_tensor_numel(x); i++) xp[i] += 100.0f;
        rt_value in[4] = {rt_value_tensor(x), rt_value_tensor(rand_tensor(nb, sb, (uint32_t)trial + 10, 1.5f)),
                          rt_value_tensor(rand_tensor(ng, sg, (uint32_t)trial + 20, 1.0f)),
                          rt_value_tensor(rand_tensor(ng, sg, (uint32_t)trial + 30, 1.0f))};
        check(text, in, 4, 2, 0, 1e-5);
        for (int i = 0; i < 4; i++) rt_value_clear(&in[i]);
    }
}

/* A layer_norm the lowering does not take (axes not trailing: the reference kernel reports it)
 * stays on the reference kernel, and the group before it ends there. */
Test(llvm_tails, layer_norm_on_leading_axes_stays_on_the_reference) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4, 6), dtype=\"float32\"), g: R.Tensor((6,), dtype=\"float32\"), be: R.Tensor((6,), dtype=\"float32\"), g2: R.Tensor((4,), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.exp(x)\n"
        "            lv1 = R.nn.layer_norm(lv0, g, be, axes=[-1])\n"
        "            lv2 = R.nn.layer_norm(lv1, g2, g2, axes=[0])\n"
        "            R.output(lv2)\n"
        "        return lv2\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    gr_diag d;
    gr_diag_clear(&d);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    rt_px_stats st;
    rt_px_get_stats(x, &st);
    /* {exp, layer_norm}; the second layer_norm normalizes a leading axis */
    cr_assert_eq(st.nhost, 1);
    cr_assert_eq(st.nkernel, 1);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    ir_ctx_free(ctx);
}

/* The host kernels' exp (a polynomial the vectorizer widens, not expf) over its whole range:
 * within 2 ulp of the reference kernel's expf from the denormal range to overflow, and inf,
 * -inf, NaN as expf; sigmoid built on it within 1e-7 absolute. */
Test(llvm_tails, exp_matches_expf_over_its_range) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((4099,), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.exp(x)\n"
        "            lv1 = R.sigmoid(x)\n"
        "            gv = (lv0, lv1)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    int64_t n = 4099;
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, &n);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < 4096; i++) p[i] = -110.0f + 205.0f * (float)i / 4095.0f; /* [-110, 95] */
    p[4096] = INFINITY;
    p[4097] = -INFINITY;
    p[4098] = NAN;
    rt_value in = rt_value_tensor(t);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    gr_diag d;
    gr_diag_clear(&d);
    rt_exec_t *rx;
    rt_value ref = {0}, got = {0};
    cr_assert_eq(rt_exec_new(m, "main", &rx, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(rx, &in, 1, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(rx);
    gr_llvm_host *h;
    rt_px *x;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, &in, 1, &got, &d), GR_OK, "%s", d.msg);
    const float *e = rt_tensor_data(got.u.tuple.items[0].u.t), *er = rt_tensor_data(ref.u.tuple.items[0].u.t);
    for (int64_t i = 0; i < n; i++) {
        /* 2 ulp of the result (in the denormal range ulps are absolute, 2^-149); a 0 exactly;
         * NaN for NaN, an infinity for the same infinity */
        float ulp = fmaxf(nextafterf(fabsf(er[i]), INFINITY) - fabsf(er[i]), 1.4e-45f);
        cr_assert(gr_cmp_value(e[i], er[i], er[i] == 0 ? 0 : 2 * ulp, 0, true), "exp(%.9g) = %.9g, expf %.9g", p[i], e[i],
                  er[i]);
    }
    tc_expect_tensor(got.u.tuple.items[1].u.t, ref.u.tuple.items[1].u.t, (gr_cmp_opts){.atol = 1e-7, .nan_expected = true},
                     "sigmoid");
    rt_value_clear(&got);
    rt_value_clear(&ref);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    rt_value_clear(&in);
    ir_ctx_free(ctx);
}
