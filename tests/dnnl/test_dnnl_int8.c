/* int8 zoo models made by ONNX Runtime's own quantizer (scripts/make_int8_zoo.py, run by
 * scripts/fetch_int8_zoo.sh: resnet18 and mobilenet_v3_large, QDQ with per-channel and with
 * per-tensor int8 weights, uint8 activations, calibrated on 4 seeded random inputs) with the
 * dnnl backend, against ONNX Runtime's outputs for them (its integer kernels).
 *
 * Checked: no op left on the host (no quantize, dequantize, round or cast: the model's float
 * input and output are quantized and dequantized by oneDNN reorders too; in the QOperator
 * models the uint8 tensors several ops read stay on oneDNN as levels); at least the int8
 * composites (dnnl.qconv2d*, dnnl.qmatmul*) the patterns take today, and with VNNI / AMX every
 * convolution and matmul on int8 (those after a pair a residual shares too), each writing the
 * next layer's u8 levels itself (in these models every int8 result is read by a quantize
 * alone: ORT's quantizer puts one after each convolution and matmul; the QOperator models'
 * QGemm runs float32 as a dense with transposed weights, so they have one int8 matmul fewer,
 * resnet18: 20 convolutions + 1 matmul, mobilenet_v3_large: 62 + 2); no primitive on oneDNN's
 * reference kernels (make test runs this under ONEDNN_MAX_CPU_ISA=AVX2 too); the outputs.
 *
 * Tolerance, in steps of the output's quantization grid (its DequantizeLinear scale, read from
 * ORT's output as the smallest gap between two of its distinct values): ORT requantizes each
 * layer's integer sums with a float multiplier, graft (as the ONNX spec writes it) divides a
 * float sum by the scale; the two land a float error apart, which flips a rounding tie to its
 * other neighbour, and a flipped level feeds every later layer. So an output value may be off
 * by one step, on at most INT8_MAX_OFF of them, by two on at most INT8_MAX_OFF2, never more;
 * the top-1 class is ORT's. Measured (2026-11-28, dnnl, AVX-512 with AMX / AVX2), values one
 * step off of 1000: resnet18 per-channel 229 / 237, per-tensor 223 / 256, QOperator 240 / 237;
 * mobilenet_v3_large per-channel 111 / 181, per-tensor 133 / 147, QOperator 110 / 182; none
 * two steps off. The host path (float32 quantize / dequantize) is alike (resnet18
 * per-channel 247).
 * Skipped when the models are absent.
 *
 * All on the host (no backend), the weights' dequantizes the pipeline leaves on their int8
 * levels run once, when the executor is made, not in the run (FoldLevels).
 *
 * Also, on small modules: QuantizeLinear -> DequantizeLinear as oneDNN runs it (dnnl.qdq)
 * rounds half to even and saturates to the type, exactly as the ONNX spec and the host path
 * (values at ties and beyond the range; scales powers of two, so x / s is exact both ways);
 * and a convolution whose weights are not int8 levels keeps its pair off the int8 composite,
 * with the reason in the partition report. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_q_impl.h"
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/op.h"
#include "ir/text/parser.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/json/json_runtime.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"
#include "tests/cached_model.h"
#include "tests/dnnl/dnnl_test_util.h"

#define INT8_MAX_OFF 0.30   /* share of values one step off */
#define INT8_MAX_OFF2 0.01  /* share two steps off */
#define INT8_FLOAT_TOL 1e-5 /* of max |ORT|: a dequantized value's float error */

/* The output's grid step: the smallest gap between distinct values of ref. */
static double grid_step(const rt_tensor *ref) {
    int64_t n = rt_tensor_numel(ref);
    double *v = malloc(sizeof(double) * (size_t)n), step = INFINITY;
    for (int64_t i = 0; i < n; i++) v[i] = rt_tensor_get_f64(ref, i);
    for (int64_t i = 1; i < n; i++) /* insertion sort: 1000 values */
        for (int64_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[i - 1] && v[i] - v[i - 1] < step) step = v[i] - v[i - 1];
    free(v);
    return step;
}

static int64_t argmax(const rt_tensor *t) {
    int64_t best = 0;
    for (int64_t i = 1; i < rt_tensor_numel(t); i++)
        if (rt_tensor_get_f64(t, i) > rt_tensor_get_f64(t, best)) best = i;
    return best;
}

/* out is ORT's ref within the tolerance above (steps of its grid), with ORT's top-1 class. */
static void expect_like_ort(const char *name, const rt_tensor *out, const rt_tensor *ref) {
    int64_t n = rt_tensor_numel(ref);
    cr_assert_eq(rt_tensor_numel(out), n);
    double step = grid_step(ref), mx = 0;
    cr_assert(isfinite(step) && step > 0, "%s: ORT's output has no two distinct values", name);
    for (int64_t k = 0; k < n; k++) mx = fmax(mx, fabs(rt_tensor_get_f64(ref, k)));
    double tol = INT8_FLOAT_TOL * mx;
    int64_t off = 0, off2 = 0, worse = 0;
    for (int64_t k = 0; k < n; k++) {
        double gv = rt_tensor_get_f64(out, k), rv = rt_tensor_get_f64(ref, k), e = fabs(gv - rv);
        if (!(e <= tol)) off++; /* NaN counts */
        if (!(e <= step + tol)) off2++;
        if (!(e <= 2 * step + tol)) worse++;
    }
    fprintf(stderr, "%s: step %.6g, %lld of %lld values off ORT's, %lld by two steps, %lld by more\n", name, step, (long long)off,
            (long long)n, (long long)off2, (long long)worse);
    cr_expect_eq(worse, 0, "%s: %lld values more than two steps off ORT's", name, (long long)worse);
    cr_expect_leq(off, (int64_t)(INT8_MAX_OFF * (double)n), "%s: %lld of %lld values off ORT's", name, (long long)off,
                  (long long)n);
    cr_expect_leq(off2, (int64_t)(INT8_MAX_OFF2 * (double)n), "%s: %lld of %lld values two steps off ORT's", name,
                  (long long)off2, (long long)n);
    cr_expect_eq(argmax(out), argmax(ref), "%s: top-1 class %lld, ORT's %lld", name, (long long)argmax(out),
                 (long long)argmax(ref));
}

/* The int8 zoo model `name` and ORT's input and output for it; false (skipped) when absent. */
static bool load_int8(const char *name, char *path, size_t n, rt_tensor **input, rt_tensor **ref) {
    const char *dir = getenv("GRAFT_INT8") ? getenv("GRAFT_INT8") : "build/third_party/int8";
    return cached_model_load(dir, name, "scripts/fetch_int8_zoo.sh", path, n, input, ref);
}

static void check_int8(const char *name, int min_int8, int min_int8_prims, int min_int8_dst, int min_split, int nwhole) {
    char path[4096];
    rt_tensor *input = NULL, *ref = NULL;
    if (!load_int8(name, path, sizeof path, &input, &ref)) return;
    gr_diag d = {0};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *opt = cached_model_import(ctx, path, NULL), *part = NULL;
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.notes = &notes, .release_consts = true};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    json_t *rep = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
    size_t i, j;
    json_t *g, *c;
    int nq = 0;
    json_array_foreach(json_object_get(rep, "regions"), i, g) json_array_foreach(json_object_get(g, "composites"), j, c) {
        const char *cn = json_string_value(json_object_get(c, "name"));
        nq += !strncmp(cn, "dnnl.qconv2d", 12) || !strncmp(cn, "dnnl.qmatmul", 12);
    }
    cr_expect_eq(json_array_size(json_object_get(rep, "host")), 0, "%s: %zu ops on the host", name,
                 json_array_size(json_object_get(rep, "host")));
    cr_expect_geq(nq, min_int8, "%s: %d int8 composites, expected >= %d", name, nq, min_int8);
    json_decref(rep);
    /* with VNNI / AMX every convolution and matmul runs on int8 levels (those after a pair
     * a residual shares too); below it the depthwise convolutions and one-row matmuls
     * (nwhole of them) whole, the others (8-bit weights) as two int8 ones on the halves of
     * their u8 source, or float32 where that is faster (Winograd, a stem;
     * backends/dnnl/dnnl_op_quant.c) */
    uint32_t nint8 = 0, nint8_dst = 0, nsplit = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++) {
        rt_json_graph *gr;
        for (uint32_t q = 0; (gr = rt_json_module_graph(rt_module_at(part, k), q)); q++) {
            rt_dnnl_stats rs;
            rt_dnnl_get_stats(rt_json_module_state(rt_module_at(part, k), q), &rs);
            nint8 += rs.nint8;
            nint8_dst += rs.nint8_dst;
            nsplit += rs.nint8_split;
        }
    }
    bool vnni = strstr(rt_dnnl_isa(), "vnni") || strstr(rt_dnnl_isa(), "amx");
    if (vnni) {
        cr_expect_geq(nint8, (uint32_t)min_int8_prims, "%s: %u int8 primitives, expected >= %d", name, nint8, min_int8_prims);
        cr_expect_geq(nint8_dst, (uint32_t)min_int8_dst, "%s: %u int8 primitives write the next layer's levels, expected >= %d",
                      name, nint8_dst, min_int8_dst);
    } else {
        cr_expect_eq(nint8 - nsplit, (uint32_t)nwhole, "%s (ISA %s): %u int8 convolutions / matmuls without VNNI, %u of them split, expected %d whole",
                     name, rt_dnnl_isa(), nint8, nsplit, nwhole);
        cr_expect_geq(nsplit, (uint32_t)min_split, "%s (ISA %s): %u split int8 convolutions, expected >= %d", name, rt_dnnl_isa(), nsplit,
                      min_split);
    }
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    cr_assert_eq(rt_exec_run(x, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    fprintf(stderr, "%s (ISA %s): %d int8 composites, %u int8 primitives (%u writing levels)\n", name, rt_dnnl_isa(), nq, nint8,
            nint8_dst);
    expect_like_ort(name, res.u.t, ref);
    dt_expect_no_ref(name, false);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
    rt_exec_free(x);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

/* below VNNI: resnet18's stride-2 and 1x1 convolutions (6) split whatever Winograd takes, its
 * classifier whole; mobilenet_v3_large's 15 depthwise convolutions and 2 classifier layers
 * whole, its 1x1 convolutions split */
Test(dnnl_int8, resnet18_qdq_per_channel, .timeout = 240) { check_int8("resnet18_qdq_pc", 10, 21, 21, 6, 1); }
Test(dnnl_int8, resnet18_qdq_per_tensor, .timeout = 240) { check_int8("resnet18_qdq_pt", 10, 21, 21, 6, 1); }
Test(dnnl_int8, resnet18_qoperator, .timeout = 240) { check_int8("resnet18_qop", 9, 21, 21, 6, 1); }
Test(dnnl_int8, mobilenet_v3_large_qoperator, .timeout = 240) { check_int8("mobilenet_v3_large_qop", 53, 64, 64, 44, 17); }
Test(dnnl_int8, mobilenet_v3_large_qdq_per_channel, .timeout = 240) { check_int8("mobilenet_v3_large_qdq_pc", 54, 64, 64, 44, 17); }
Test(dnnl_int8, mobilenet_v3_large_qdq_per_tensor, .timeout = 240) { check_int8("mobilenet_v3_large_qdq_pt", 54, 64, 64, 44, 17); }

/* main's casts (R.astype): all of them, and those of a constant (what FoldConstant leaves of a
 * large weight's DequantizeLinear: the cast of its int8 levels, for an int8 backend). */
static void count_casts_in(const ir_module *m, uint32_t *all, uint32_t *of_consts) {
    const ir_func *f = ir_module_func(m, "main");
    *all = *of_consts = 0;
    if (!f || f->body->kind != IR_SEQ) return;
    const ir_seq *s = IR_AS(f->body, ir_seq);
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_expr *v = s->blocks[b]->bindings[i].value;
            const ir_call *c = v->kind == IR_CALL ? IR_AS(v, ir_call) : NULL;
            if (!c || c->callee->kind != IR_OP || ir_op_def_id(IR_AS(c->callee, ir_op)->def) != IR_OP_ASTYPE) continue;
            (*all)++;
            *of_consts += c->nargs == 1 && c->args[0]->kind == IR_CONST;
        }
}

/* the run's casts (profile events of R.astype) */
static void count_cast_events(const rt_exec_event *ev, void *user) {
    *(uint32_t *)user += !strcmp(ev->kind, "op") && ev->name && !strcmp(ev->name, "R.astype");
}

/* All on the host: the weights' dequantizes the pipeline left on their levels are evaluated once
 * when the executor is made (FoldLevels, runtime/exec/executor.c), not by every run; the output
 * is ORT's within the tolerance above. */
Test(dnnl_int8, host_dequantizes_the_weights_once, .timeout = 240) {
    const char *name = "mobilenet_v3_large_qdq_pc";
    char path[4096];
    rt_tensor *input = NULL, *ref = NULL;
    if (!load_int8(name, path, sizeof path, &input, &ref)) return;
    gr_diag d = {0};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *opt = cached_model_import(ctx, path, NULL);
    uint32_t all, of_consts, ran = 0;
    count_casts_in(opt, &all, &of_consts);
    cr_assert_gt(of_consts, 0, "%s: the pipeline left no weight on its int8 levels: nothing to check", name);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(opt, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_exec_set_profiler(x, count_cast_events, &ran);
    rt_value arg = rt_value_tensor(input), res = {0};
    cr_assert_eq(rt_exec_run(x, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(ran, all - of_consts, "%s: %u casts ran; main has %u, %u of them of weight levels", name, ran, all, of_consts);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    expect_like_ort("mobilenet_v3_large_qdq_pc (host)", res.u.t, ref);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
    rt_exec_free(x);
    ir_ctx_free(ctx);
}

/* x -> quantize (scale S, zero point Z, type T in [LO, HI]) -> dequantize */
#define QDQ_TEXT(T, LO, HI, Z)                                                                     \
    "@I.ir_module\n"                                                                               \
    "class Module:\n"                                                                              \
    "    @R.function\n"                                                                            \
    "    def main(x: R.Tensor((1, 4, 4, 4), dtype=\"float32\")):\n"                                \
    "        with R.dataflow():\n"                                                                 \
    "            a = R.divide(x, R.const(0.5, \"float32\"))\n"                                     \
    "            b = R.round(a)\n"                                                                 \
    "            c = R.add(b, R.const(" Z ", \"float32\"))\n"                                      \
    "            d = R.clip(c, R.prim_value(T.float32(" LO ")), R.prim_value(T.float32(" HI ")))\n" \
    "            e = R.astype(d, dtype=\"" T "\")\n"                                               \
    "            f = R.astype(e, dtype=\"float32\")\n"                                             \
    "            g = R.subtract(f, R.const(" Z ", \"float32\"))\n"                                 \
    "            h = R.multiply(g, R.const(0.5, \"float32\"))\n"                                   \
    "            R.output(h)\n"                                                                    \
    "        return h\n"

static rt_tensor *run_module(const ir_module *m, rt_tensor *x) {
    gr_diag d = {0};
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &ex, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(x), res = {0};
    cr_assert_eq(rt_exec_run(ex, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    rt_tensor *out = rt_tensor_retain(res.u.t);
    rt_value_clear(&res);
    rt_exec_free(ex);
    return out;
}

/* The module of TEXT, as the host runs it. */
static ir_module *parse(ir_ctx_t *ctx, const char *text) {
    gr_diag d = {0};
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_module(ctx, "case", text, strlen(text), &m, &d), GR_OK, "%s\n%s", d.msg, text);
    return m;
}

/* The module partitioned for dnnl (its report's JSON into *rep). */
static ir_module *partition(ir_ctx_t *ctx, const char *text, char **rep) {
    gr_diag d = {0};
    ir_module *m = parse(ctx, text), *part = NULL;
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.notes = &notes};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, m, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    json_t *r = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
    *rep = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    byoc_notes_free(&notes);
    return part;
}

/* The module partitioned for dnnl, expecting no op left on the host. */
static ir_module *partition_all(ir_ctx_t *ctx, const char *text) {
    char *rep = NULL;
    ir_module *part = partition(ctx, text, &rep);
    cr_expect(strstr(rep, "\"host\":[]") != NULL, "ops left on the host: %s", rep);
    free(rep);
    return part;
}

/* x (1, 8, 8, 8): lo + span * frac(i * golden ratio) + nudge, spread over the range without
 * repeats (a nudge keeps values off the quantization grid's ties) */
static rt_tensor *spread_input(double lo, double span, double nudge) {
    rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 4, (int64_t[]){1, 8, 8, 8});
    float *xp = rt_tensor_data(x);
    for (int i = 0; i < 512; i++) xp[i] = (float)(lo + span * fmod(i * 0.6180339887, 1.0)) + (float)nudge;
    return x;
}

/* How many values of got differ from want's (a NaN equals nothing); the first five are
 * reported. */
static int unequal_values(const rt_tensor *got, const rt_tensor *want) {
    cr_assert_eq(rt_tensor_numel(got), rt_tensor_numel(want));
    int bad = 0;
    for (int64_t i = 0; i < rt_tensor_numel(want); i++) {
        double g = rt_tensor_get_f64(got, i), w = rt_tensor_get_f64(want, i);
        if (!(g == w) && bad++ < 5) cr_expect_fail("value %lld: %g, host %g", (long long)i, g, w);
    }
    return bad;
}

static void check_rounding(const char *text, double lo, double hi, double zp) {
    ir_ctx_t *ctx = ir_ctx_new();
    char *rep = NULL;
    ir_module *part = partition(ctx, text, &rep);
    cr_expect(strstr(rep, "\"dnnl.qdq\"") != NULL, "the pair is no dnnl.qdq composite: %s", rep);
    cr_expect(strstr(rep, "\"host\":[]") != NULL, "ops left on the host: %s", rep);
    free(rep);
    int64_t shape[4] = {1, 4, 4, 4};
    rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 4, shape);
    float *xp = rt_tensor_data(x);
    /* x / 0.5 = (9 i - 100) / 2: a tie at every odd numerator, below the range at the start,
     * above it at the end */
    for (int i = 0; i < 64; i++) xp[i] = (float)(9 * i - 100) * 0.25f;
    rt_tensor *got = run_module(part, x);
    int bad = 0;
    for (int i = 0; i < 64; i++) {
        double q = nearbyint((double)xp[i] / 0.5) + zp; /* half to even: the C default mode */
        q = q < lo ? lo : q > hi ? hi : q;
        double want = (q - zp) * 0.5, g = rt_tensor_get_f64(got, i);
        if (g != want && bad++ < 5) cr_expect_fail("x %g: %g, ONNX %g", (double)xp[i], g, want);
    }
    cr_expect_eq(bad, 0, "%d of 64 values off the spec", bad);
    rt_tensor_release(got);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

Test(dnnl_int8, qdq_rounds_half_to_even_and_saturates_u8) { check_rounding(QDQ_TEXT("uint8", "0.0", "255.0", "3.0"), 0, 255, 3); }
Test(dnnl_int8, qdq_rounds_half_to_even_and_saturates_s8) { check_rounding(QDQ_TEXT("int8", "-128.0", "127.0", "-5.0"), -128, 127, -5); }

/* weights of no int8 grid: the pair stays a dnnl.qdq of its own, the convolution float32 */
Test(dnnl_int8, weights_off_the_grid_are_rejected_with_a_reason) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 2, 4, 4), dtype=\"float32\"), w: R.Tensor((1, 2, 1, 1), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            a = R.divide(x, R.const(0.5, \"float32\"))\n"
        "            b = R.round(a)\n"
        "            d = R.clip(b, R.prim_value(T.float32(0.0)), R.prim_value(T.float32(255.0)))\n"
        "            e = R.astype(d, dtype=\"uint8\")\n"
        "            f = R.astype(e, dtype=\"float32\")\n"
        "            g = R.subtract(f, R.const(0.0, \"float32\"))\n"
        "            h = R.multiply(g, R.const(0.5, \"float32\"))\n"
        "            y = R.nn.conv2d(h, w)\n"
        "            R.output(y)\n"
        "        return y\n";
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d = {0};
    ir_module *m = NULL, *bound = NULL, *part = NULL;
    cr_assert_eq(ir_parse_module(ctx, "case", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    int64_t ws[4] = {1, 2, 1, 1};
    rt_tensor *w = rt_tensor_new(IR_DTYPE_F32, 4, ws);
    float *wp = rt_tensor_data(w), sc[1];
    wp[0] = 1.0f;
    wp[1] = 0.70710678f; /* k / sqrt(2) is no integer within 1e-3 for any k <= 127 */
    bool pt;
    cr_assert(!dnnl_q_weights(wp, 1, 1, 2, NULL, sc, &pt), "the test's weights are on an int8 grid");
    const char *names[1] = {"w"};
    ir_pass *bp = ir_pass_bind_params_new("main", 1, names, &w);
    cr_assert_eq(ir_pass_run(bp, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bp);
    rt_tensor_release(w);
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.notes = &notes};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, bound, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    json_t *r = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
    char *rep = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    cr_expect(strstr(rep, "weights are not symmetric int8 levels") != NULL, "no reason in the report: %s", rep);
    cr_expect(strstr(rep, "\"dnnl.qdq\"") != NULL, "the pair is no dnnl.qdq composite: %s", rep);
    free(rep);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

/* A QOperator model's uint8 tensor that several ops read (no quantize -> dequantize pair
 * holds it): the quantize, max pooling and reshape of the levels and each dequantize run on
 * oneDNN as their own quantized composites, nothing on the host, and the values are the host
 * path's exactly (scales powers of two, the input on ties and beyond the range; max pooling and
 * reshape of levels are exact). */
Test(dnnl_int8, shared_uint8_levels_stay_on_dnnl) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 4, 4, 4), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            a = R.divide(x, R.const(0.5, \"float32\"))\n"
        "            b = R.round(a)\n"
        "            c = R.add(b, R.const(3.0, \"float32\"))\n"
        "            d = R.clip(c, R.prim_value(T.float32(0.0)), R.prim_value(T.float32(255.0)))\n"
        "            e = R.astype(d, dtype=\"uint8\")\n"
        "            p = R.nn.max_pool2d(e, pool_size=[2, 2], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 0, 0], "
        "ceil_mode=False, count_include_pad=False, layout=\"NCHW\", out_layout=\"NCHW\")\n"
        "            f = R.astype(p, dtype=\"float32\")\n"
        "            g = R.subtract(f, R.const(3.0, \"float32\"))\n"
        "            h = R.multiply(g, R.const(0.5, \"float32\"))\n"
        "            r = R.reshape(e, R.shape([1, 64]))\n"
        "            i = R.astype(r, dtype=\"float32\")\n"
        "            j = R.subtract(i, R.const(3.0, \"float32\"))\n"
        "            k = R.multiply(j, R.const(0.25, \"float32\"))\n"
        "            hr = R.reshape(h, R.shape([1, 16]))\n"
        "            y = R.concat((hr, k), axis=1)\n"
        "            R.output(y)\n"
        "        return y\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    char *rep = NULL;
    ir_module *part = partition(ctx, text, &rep);
    static const char *const want[] = {"\"dnnl.q_quantize\"", "\"dnnl.qmax_pool2d\"", "\"dnnl.qreshape\"", "\"dnnl.q_dequantize\""};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_expect(strstr(rep, want[i]) != NULL, "no %s composite: %s", want[i], rep);
    cr_expect(strstr(rep, "\"host\":[]") != NULL, "ops left on the host: %s", rep);
    free(rep);
    int64_t shape[4] = {1, 4, 4, 4};
    rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 4, shape);
    float *xp = rt_tensor_data(x);
    for (int i = 0; i < 64; i++) xp[i] = (float)(9 * ((i * 37) % 64) - 100) * 0.25f; /* ties, both ends of the range */
    rt_tensor *got = run_module(part, x), *want_t = run_module(m, x);
    cr_assert_eq(rt_tensor_numel(got), 80);
    int bad = unequal_values(got, want_t);
    cr_expect_eq(bad, 0, "%d of 80 values differ from the host path's", bad);
    rt_tensor_release(got);
    rt_tensor_release(want_t);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

/* The reorders and the primitives of kind `kind` of a partitioned module's dnnl regions, and
 * the implementation of the last of those (or NULL). */
static const char *count_prims(ir_module *part, const char *kind, int *nreorder, int *nkind) {
    const char *impl = NULL;
    *nreorder = *nkind = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++)
        for (uint32_t q = 0; rt_json_module_graph(rt_module_at(part, k), q); q++) {
            const void *st = rt_json_module_state(rt_module_at(part, k), q);
            rt_dnnl_prim_info info;
            for (uint32_t i = 0; rt_dnnl_prim(st, i, &info); i++) {
                *nreorder += !strcmp(info.kind, "reorder");
                if (!strcmp(info.kind, kind)) {
                    ++*nkind;
                    impl = info.impl;
                }
            }
        }
    return impl;
}

#define QDQ_OF(X, Y, S, Z, T, LO, HI)                                                               \
    "            " Y "_d = R.divide(" X ", R.const(" S ", \"float32\"))\n"                          \
    "            " Y "_r = R.round(" Y "_d)\n"                                                      \
    "            " Y "_z = R.add(" Y "_r, R.const(" Z ", \"float32\"))\n"                           \
    "            " Y "_c = R.clip(" Y "_z, R.prim_value(T.float32(" LO ")), R.prim_value(T.float32(" HI ")))\n" \
    "            " Y "_q = R.astype(" Y "_c, dtype=\"" T "\")\n"                                   \
    "            " Y "_f = R.astype(" Y "_q, dtype=\"float32\")\n"                                 \
    "            " Y "_s = R.subtract(" Y "_f, R.const(" Z ", \"float32\"))\n"                      \
    "            " Y " = R.multiply(" Y "_s, R.const(" S ", \"float32\"))\n"

/* level of x at scale s, zero point zp in [lo, hi], as ONNX's QuantizeLinear (in double) */
static double q_level(double x, double s, double zp, double lo, double hi) {
    double q = nearbyint(x / s) + zp;
    return q < lo ? lo : q > hi ? hi : q;
}

/* A residual add of two dequantized levels (uint8 and int8, other scales and zero points)
 * that a quantize reads: one int8 binary on the levels writing the quantize's (QLinearAdd),
 * the dequantizes into float32 gone: three reorders (the two quantizes and the output's
 * dequantize) where the float32 path has six. Checked against the ONNX spec computed in
 * double: equal within float32 error, or one output step off at a rounding tie of the sum
 * (within TIE_EPS steps of a half: oneDNN sums scaled levels in float32, the spec divides the
 * float sum). Inputs whose own quantization is within 1e-3 of a tie are left out (the float32
 * x / s and oneDNN's x * (1 / s) may round them apart). */
Test(dnnl_int8, residual_add_of_levels_runs_in_int8) {
    static const char *text = "@I.ir_module\n"
                              "class Module:\n"
                              "    @R.function\n"
                              "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\")):\n"
                              "        with R.dataflow():\n" QDQ_OF("x", "a", "0.05", "4.0", "uint8", "0.0", "255.0")
                                  QDQ_OF("x", "b", "0.03", "-6.0", "int8", "-128.0", "127.0")
                              "            s = R.add(a, b)\n" QDQ_OF("s", "y", "0.0731", "7.0", "uint8", "0.0", "255.0")
                              "            R.output(y)\n"
                              "        return y\n";
    const double TIE_EPS = 1e-4, FTOL = 1e-5;
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *part = partition_all(ctx, text);
    rt_tensor *x = spread_input(-4.0, 17.0, 0); /* both ends of both ranges */
    const float *xp = rt_tensor_data(x);
    rt_tensor *got = run_module(part, x);
    int nre, nbin;
    count_prims(part, "binary", &nre, &nbin);
    cr_expect(nre == 3 && nbin == 1, "%d reorders and %d binary primitives; expected 3 and 1", nre, nbin);
    int bad = 0, ties = 0, off = 0, used = 0;
    for (int i = 0; i < 512; i++) {
        double va = (double)xp[i] / 0.05, vb = (double)xp[i] / 0.03;
        if (fabs(va - floor(va) - 0.5) < 1e-3 || fabs(vb - floor(vb) - 0.5) < 1e-3) continue;
        used++;
        double a = (q_level(xp[i], 0.05, 4, 0, 255) - 4) * 0.05, b = (q_level(xp[i], 0.03, -6, -128, 127) + 6) * 0.03;
        double v = (a + b) / 0.0731, want = (q_level(a + b, 0.0731, 7, 0, 255) - 7) * 0.0731, g = rt_tensor_get_f64(got, i);
        bool tie = fabs(v - floor(v) - 0.5) <= TIE_EPS;
        ties += tie;
        if (fabs(g - want) <= FTOL) continue;
        off++;
        if (tie && fabs(fabs(g - want) - 0.0731) <= FTOL) continue;
        if (bad++ < 5) cr_expect_fail("x %.9g: %.9g, ONNX %.9g (%.6f steps)", (double)xp[i], g, want, v);
    }
    fprintf(stderr, "residual add of levels: %d of %d values off the spec, %d ties\n", off, used, ties);
    cr_expect_geq(used, 400, "only %d of 512 inputs away from quantization ties", used);
    cr_expect_eq(bad, 0, "%d values off the spec where no tie allows it", bad);
    rt_tensor_release(got);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

/* Max pooling between a dequantize and a quantize of the same scale and zero point (QDQ
 * MaxPool): pooling of the uint8 levels (oneDNN's int8 pooling, "jit_int:<isa>"; its float32
 * pooling is "jit:<isa>"), exact, so the values are the host path's. */
Test(dnnl_int8, qdq_max_pool_pools_the_levels) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\")):\n"
        "        with R.dataflow():\n" QDQ_OF("x", "a", "0.05", "4.0", "uint8", "0.0", "255.0")
        "            p = R.nn.max_pool2d(a, pool_size=[3, 3], strides=[2, 2], dilation=[1, 1], padding=[1, 1, 1, 1], "
        "ceil_mode=False, count_include_pad=False, layout=\"NCHW\", out_layout=\"NCHW\")\n" QDQ_OF("p", "y", "0.05", "4.0", "uint8", "0.0", "255.0")
        "            R.output(y)\n"
        "        return y\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    ir_module *part = partition_all(ctx, text);
    rt_tensor *x = spread_input(-4.0, 17.0, 0.0125);
    rt_tensor *got = run_module(part, x), *want = run_module(m, x);
    int nre, npool;
    const char *impl = count_prims(part, "pooling_v2", &nre, &npool);
    cr_expect(npool == 1 && impl && !strncmp(impl, "jit_int", 7), "%d pooling primitives, the last %s; expected one of oneDNN's int8 kernels",
              npool, impl ? impl : "none");
    int bad = unequal_values(got, want);
    cr_expect_eq(bad, 0, "%d values differ from the host path's", bad);
    rt_tensor_release(got);
    rt_tensor_release(want);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

/* Hard-swish as ORT's quantizer writes it (MobileNetV3): DQ(a) * DQ(Q(hardsigmoid(DQ(a)))),
 * quantized. Each result level is a function of a's level alone, so it runs as one table
 * lookup per element (the best kernel the CPU and ISA allow: "lut:avx512_vbmi", "lut:avx2",
 * "lut:c"), the float ops pruned; the table holds the float32 ops as the
 * host computes them, so the values are the host path's exactly. */
Test(dnnl_int8, hard_swish_of_levels_is_one_table_lookup) {
    static const char *text = "@I.ir_module\n"
                              "class Module:\n"
                              "    @R.function\n"
                              "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\")):\n"
                              "        with R.dataflow():\n" QDQ_OF("x", "a", "0.05", "64.0", "uint8", "0.0", "255.0")
                              "            m = R.multiply(a, R.const(0.16666667, \"float32\"))\n"
                              "            p = R.add(m, R.const(0.5, \"float32\"))\n"
                              "            c = R.clip(p, R.prim_value(T.float32(0.0)), R.prim_value(T.float32(1.0)))\n"
                                  QDQ_OF("c", "h", "0.003921569", "0.0", "uint8", "0.0", "255.0")
                              "            s = R.multiply(a, h)\n" QDQ_OF("s", "y", "0.0371", "11.0", "uint8", "0.0", "255.0")
                              "            R.output(y)\n"
                              "        return y\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, text);
    ir_module *part = partition_all(ctx, text);
    rt_tensor *x = spread_input(-4.0, 17.0, 0.0125);
    rt_tensor *got = run_module(part, x), *want = run_module(m, x);
    int nre, nelt, nbin;
    const char *impl = count_prims(part, "eltwise", &nre, &nelt);
    count_prims(part, "binary", &nre, &nbin);
    const char *lut = dnnl_lut_kernel_name(dnnl_lut_kernel_best());
    cr_expect(nelt == 1 && nbin == 0 && impl && !strcmp(impl, lut), "%d eltwise primitives (the last %s), %d binary; expected one %s", nelt,
              impl ? impl : "none", nbin, lut);
    int bad = unequal_values(got, want);
    cr_expect_eq(bad, 0, "%d values differ from the host path's", bad);
    rt_tensor_release(got);
    rt_tensor_release(want);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

/* The table kernels (dnnl_q_lut.c), each the CPU and ISA allow, against table[src[i]]: sizes
 * below one vector, around the 32- and 64-byte blocks, odd, and large enough to split over
 * threads, at unaligned offsets; the bytes around dst untouched. AVX-512 only where oneDNN's ISA
 * is AVX-512 (ONEDNN_MAX_CPU_ISA=AVX2: none), a vector kernel wherever the CPU and ISA have AVX2. */
Test(dnnl_int8, table_kernels_equal_the_scalar_lookup) {
    static const size_t sizes[] = {0, 1, 7, 15, 16, 31, 32, 33, 63, 64, 65, 95, 127, 128, 129, 255, 1000, 4097, 200704, (1u << 20) + 17};
    enum { GUARD = 64, SENT = 0xa5 };
    size_t nmax = (1u << 20) + 17 + 8;
    uint8_t table[256], *src = malloc(nmax), *dst = malloc(nmax + 2 * GUARD);
    uint32_t r = 12345;
    for (int i = 0; i < 256; i++) table[i] = (uint8_t)((r = r * 1664525u + 1013904223u) >> 24);
    for (size_t i = 0; i < nmax; i++) src[i] = (uint8_t)((r = r * 1664525u + 1013904223u) >> 24);
    const char *isa = rt_dnnl_isa();
    bool avx512 = !strncmp(isa, "avx512", 6), avx2 = avx512 || !strncmp(isa, "avx2", 4);
    cr_expect(avx512 || !dnnl_lut_kernel_ok(DNNL_LUT_AVX512_VBMI), "ISA %s: the AVX-512 kernel may not run", isa);
    __builtin_cpu_init();
    cr_expect(dnnl_lut_kernel_best() != DNNL_LUT_C || !avx2 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"),
              "ISA %s: the scalar kernel on an AVX2 CPU", isa);
    int nrun = 0;
    for (int k = 0; k < DNNL_LUT_NKERNELS; k++) {
        if (!dnnl_lut_kernel_ok((dnnl_lut_kernel)k)) continue;
        nrun++;
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (size_t off = 0; off < 8; off += 3) {
                size_t n = sizes[si], bad = 0, first = 0;
                memset(dst, SENT, n + 2 * GUARD);
                dnnl_lut_apply((dnnl_lut_kernel)k, table, src + off, dst + GUARD + off % 2, n);
                for (size_t i = 0; i < n + 2 * GUARD; i++) {
                    size_t j = i - GUARD - off % 2;
                    int want = i >= GUARD + off % 2 && j < n ? table[src[off + j]] : SENT;
                    if (dst[i] != want && !bad++) first = i;
                }
                cr_expect_eq(bad, 0, "%s, n %zu, offset %zu: %zu bytes differ, the first at %zd", dnnl_lut_kernel_name((dnnl_lut_kernel)k), n, off,
                             bad, (ptrdiff_t)first - GUARD - (ptrdiff_t)(off % 2));
            }
    }
    cr_expect_geq(nrun, 1, "no table kernel ran");
    free(src);
    free(dst);
}

/* Global average pooling between a dequantize and a quantize of another scale and zero point
 * (a QDQ SE block): oneDNN's int8 average pooling of the levels ("jit_int:<isa>") with the
 * requantization as a linear post-op, from AVX-512 (oneDNN 2.6 has no jit int8 pooling with
 * post-ops below it: there the float32 path). Against the ONNX spec computed in double: equal within
 * float32 error, or one step off at a rounding tie (within TIE_EPS steps of a half). */
Test(dnnl_int8, qdq_global_average_pool_pools_the_levels) {
    static const char *text = "@I.ir_module\n"
                              "class Module:\n"
                              "    @R.function\n"
                              "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\")):\n"
                              "        with R.dataflow():\n" QDQ_OF("x", "a", "0.05", "4.0", "uint8", "0.0", "255.0")
                              "            p = R.nn.adaptive_avg_pool2d(a, output_size=[1, 1], layout=\"NCHW\", out_layout=\"NCHW\")\n"
                                  QDQ_OF("p", "y", "0.0173", "9.0", "uint8", "0.0", "255.0")
                              "            R.output(y)\n"
                              "        return y\n";
    const double TIE_EPS = 1e-4, FTOL = 1e-5;
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *part = partition_all(ctx, text);
    rt_tensor *x = spread_input(-1.0, 5.0, 0.0125);
    const float *xp = rt_tensor_data(x);
    rt_tensor *got = run_module(part, x);
    int nre, npool;
    const char *impl = count_prims(part, "pooling_v2", &nre, &npool);
    if (strstr(rt_dnnl_isa(), "avx512"))
        cr_expect(npool == 1 && impl && !strncmp(impl, "jit_int", 7), "%d pooling primitives, the last %s; expected one of oneDNN's int8 kernels",
                  npool, impl ? impl : "none");
    cr_assert_eq(rt_tensor_numel(got), 8);
    int bad = 0;
    for (int c = 0; c < 8; c++) {
        double sum = 0;
        for (int i = 0; i < 64; i++) sum += (q_level(xp[c * 64 + i], 0.05, 4, 0, 255) - 4) * 0.05;
        double mean = sum / 64, v = mean / 0.0173, want = (q_level(mean, 0.0173, 9, 0, 255) - 9) * 0.0173;
        double g = rt_tensor_get_f64(got, c);
        bool tie = fabs(v - floor(v) - 0.5) <= TIE_EPS;
        if (fabs(g - want) <= FTOL || (tie && fabs(fabs(g - want) - 0.0173) <= FTOL)) continue;
        if (bad++ < 5) cr_expect_fail("channel %d: %.9g, ONNX %.9g (%.6f steps)", c, g, want, v);
    }
    cr_expect_eq(bad, 0, "%d channels off the spec where no tie allows it", bad);
    rt_tensor_release(got);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

/* A quantized convolution that sums exactly on int8 at every ISA, below VNNI too, where the
 * 16-bit pair sums of u8 x s8 products saturate (backends/dnnl/dnnl_op_quant.c): one whose
 * weights fit in 7 bits (levels within [-63, 63], as ORT's quantizer writes them with
 * reduce_range; here at twice the levels' scale too, which the grid search would read as 8-bit
 * even levels), and a depthwise one with 8-bit weights of a source near the top of the u8
 * range (oneDNN's depthwise kernel widens each product to 32 bits; a dense one would saturate
 * there). Against the host path: equal within float32 error, or one output step off where the
 * host's pre-rounding value is within TIE_EPS steps of a tie (oneDNN requantizes an exact int32
 * sum, the host a float32 sum). */
#define CONVQ_TEXT(WSHAPE, GROUPS, OS, OUT)                                                                                     \
    "@I.ir_module\n"                                                                                                            \
    "class Module:\n"                                                                                                           \
    "    @R.function\n"                                                                                                         \
    "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\"), w: R.Tensor(" WSHAPE ", dtype=\"float32\")):\n"                \
    "        with R.dataflow():\n" QDQ_OF("x", "a", "0.05", "4.0", "uint8", "0.0", "255.0")                                     \
    "            c = R.nn.conv2d(a, w, padding=[1, 1, 1, 1], groups=" GROUPS ")\n" QDQ_OF("c", "y", OS, "128.0", "uint8", "0.0", \
                                                                                          "255.0")                             \
    "            R.output(" OUT ")\n"                                                                                         \
    "        return " OUT "\n"

typedef struct convq_case {
    const char *name, *host, *pre;  /* the module, and it without the output's pair */
    int wnd;
    int64_t ws[4];
    int levels;                     /* weight levels (i * 37) % (2 levels + 1) - levels */
    double x_lo, x_span, step;      /* the input's range; the output's scale */
    bool split;                     /* below VNNI: two int8 primitives (else one) */
    bool writes_levels;             /* the primitive writes the output quantize's levels */
} convq_case;

/* The module of TEXT with w bound to the case's weights, levels times 0.01. */
static ir_module *bind_wq(ir_ctx_t *ctx, const char *text, const convq_case *c) {
    gr_diag d = {0};
    ir_module *m = NULL, *bound = NULL;
    cr_assert_eq(ir_parse_module(ctx, "case", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    rt_tensor *w = rt_tensor_new(IR_DTYPE_F32, c->wnd, c->ws);
    float *wp = rt_tensor_data(w);
    for (int64_t i = 0; i < rt_tensor_numel(w); i++) wp[i] = (float)((i * 37) % (2 * c->levels + 1) - c->levels) * 0.01f;
    const char *names[1] = {"w"};
    ir_pass *bp = ir_pass_bind_params_new("main", 1, names, &w);
    cr_assert_eq(ir_pass_run(bp, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bp);
    rt_tensor_release(w);
    return bound;
}

static void check_convq(const convq_case *c) {
    const double TIE_EPS = 1e-4, FTOL = 1e-5;
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d = {0};
    ir_module *host = bind_wq(ctx, c->host, c), *pre = bind_wq(ctx, c->pre, c), *part = NULL;
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.notes = &notes};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, host, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    byoc_notes_free(&notes);
    rt_tensor *x = spread_input(c->x_lo, c->x_span, 0.0125);
    rt_tensor *got = run_module(part, x), *want = run_module(host, x), *pv = run_module(pre, x);
    uint32_t nint8 = 0, nsplit = 0, ndst = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++)
        for (uint32_t q = 0; rt_json_module_graph(rt_module_at(part, k), q); q++) {
            rt_dnnl_stats rs;
            rt_dnnl_get_stats(rt_json_module_state(rt_module_at(part, k), q), &rs);
            nint8 += rs.nint8;
            nsplit += rs.nint8_split;
            ndst += rs.nint8_dst;
        }
    bool vnni = strstr(rt_dnnl_isa(), "vnni") || strstr(rt_dnnl_isa(), "amx");
    uint32_t want_split = c->split && !vnni, want_dst = c->writes_levels || vnni;
    cr_expect(nint8 == 1 && nsplit == want_split && ndst == want_dst,
              "%s (ISA %s): %u int8 convolutions / matmuls (%u split, %u writing levels), expected 1 (%u, %u)", c->name, rt_dnnl_isa(),
              nint8, nsplit, ndst, want_split, want_dst);
    int nre, nprim;
    const char *kind = c->wnd == 4 ? "convolution" : "matmul", *impl = count_prims(part, kind, &nre, &nprim);
    cr_expect(nprim == 1 + (int)want_split && impl && strncmp(impl, "ref", 3), "%s: %d %s primitives on %s; expected %u on a jit kernel",
              c->name, nprim, kind, impl ? impl : "none", 1 + want_split);
    cr_assert_eq(rt_tensor_numel(got), rt_tensor_numel(want));
    int bad = 0, off = 0;
    for (int64_t i = 0; i < rt_tensor_numel(want); i++) {
        double g = rt_tensor_get_f64(got, i), w = rt_tensor_get_f64(want, i), v = rt_tensor_get_f64(pv, i) / c->step;
        bool tie = fabs(v - floor(v) - 0.5) <= TIE_EPS;
        if (fabs(g - w) <= FTOL) continue;
        off++;
        if (tie && fabs(fabs(g - w) - c->step) <= FTOL) continue;
        if (bad++ < 5) cr_expect_fail("%s: value %lld: %.9g, host %.9g (%.6f steps)", c->name, (long long)i, g, w, v);
    }
    fprintf(stderr, "%s (ISA %s): %d of %lld values off the host's\n", c->name, rt_dnnl_isa(), off, (long long)rt_tensor_numel(want));
    cr_expect_eq(bad, 0, "%s: %d values off the host's where no tie allows it", c->name, bad);
    rt_tensor_release(got);
    rt_tensor_release(want);
    rt_tensor_release(pv);
    rt_tensor_release(x);
    ir_ctx_free(ctx);
}

Test(dnnl_int8, seven_bit_weights_run_int8_at_every_isa) {
    check_convq(&(convq_case){"7-bit weights", CONVQ_TEXT("(16, 8, 3, 3)", "1", "0.25", "y"),
                              CONVQ_TEXT("(16, 8, 3, 3)", "1", "0.25", "c"), 4, {16, 8, 3, 3}, 63, -1.0, 12.0, 0.25, false, true});
}

/* source levels 204 .. 254, weights up to 127: a pair of products reaches 2 * 254 * 127 */
Test(dnnl_int8, depthwise_8bit_weights_run_int8_at_every_isa) {
    check_convq(&(convq_case){"depthwise 8-bit weights", CONVQ_TEXT("(8, 1, 3, 3)", "8", "0.5", "y"),
                              CONVQ_TEXT("(8, 1, 3, 3)", "8", "0.5", "c"), 4, {8, 1, 3, 3}, 127, 10.0, 2.5, 0.5, false, true});
}

/* 8-bit weights of a dense convolution: below VNNI two int8 primitives on the source's halves,
 * the second writing the output quantize's levels with the first's result as a binary post-op
 * (backends/dnnl/dnnl_op_quant.c, split_pds) */
Test(dnnl_int8, split_8bit_weights_write_the_next_levels) {
    check_convq(&(convq_case){"8-bit weights, split", CONVQ_TEXT("(16, 8, 3, 3)", "1", "2.0", "y"),
                              CONVQ_TEXT("(16, 8, 3, 3)", "1", "2.0", "c"), 4, {16, 8, 3, 3}, 127, 10.0, 2.5, 2.0, true, true});
}

/* one row of 511 (odd: a last pair of its own) levels 204 .. 254 times 8-bit weights, 44
 * columns (8-column panels and a tail; below VNNI graft's int8 GEMV) */
#define MATQ_TEXT(OUT)                                                                                                  \
    "@I.ir_module\n"                                                                                                    \
    "class Module:\n"                                                                                                   \
    "    @R.function\n"                                                                                                 \
    "    def main(x: R.Tensor((1, 8, 8, 8), dtype=\"float32\"), w: R.Tensor((511, 44), dtype=\"float32\")):\n"         \
    "        with R.dataflow():\n"                                                                                      \
    "            r = R.reshape(x, R.shape([1, 512]))\n"                                                                 \
    "            s = R.strided_slice(r, (R.prim_value(1),), (R.prim_value(0),), (R.prim_value(511),))\n"                  \
        QDQ_OF("s", "a", "0.05", "4.0", "uint8", "0.0", "255.0")                                                        \
    "            c = R.matmul(a, w)\n" QDQ_OF("c", "y", "2.0", "128.0", "uint8", "0.0", "255.0")                           \
    "            R.output(" OUT ")\n"                                                                                  \
    "        return " OUT "\n"

Test(dnnl_int8, one_row_matmul_8bit_weights_runs_int8_at_every_isa) {
    check_convq(&(convq_case){"one-row matmul 8-bit weights", MATQ_TEXT("y"), MATQ_TEXT("c"), 2, {511, 44}, 127, 10.0, 2.5, 2.0, false, false});
}
