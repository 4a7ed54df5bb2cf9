/* The dnnl backend's fused composites end to end: a small module (weights, biases and
 * per-channel constants bound as constants), partitioned for `dnnl` (patterns, checks,
 * codegen annotation, engine), must take the expected composite names and give the reference
 * executor's outputs within the tolerance of dnnl_test_util.h (|d - r| <= 1e-4 + 1e-4 |r|).
 * Shapes are drawn from a seeded generator. Then: each check rejects with its reason (the
 * partition notes the report prints), and a dnnl module survives serialize -> load. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "byoc/byoc.h"
#include "backends/dnnl/dnnl_codegen.h"
#include "backends/dnnl/dnnl_pattern_impl.h"
#include "ir/text/parser.h"
#include "ir/transform/transform.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "tests/compare_util.h"
#include "tests/dnnl/dnnl_test_util.h"
#include "tests/test_util.h"

#define CT_RTOL 1e-4
#define CT_ATOL 1e-4

typedef struct ct {
    ir_ctx_t *ctx;
    ir_module *m;        /* parameters bound */
    ir_module *part;     /* partitioned for dnnl */
    ir_module *merged;
    byoc_notes notes;
    uint32_t seed;
} ct;

static float ct_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* patterns ahead of the backend's (a --patterns table) */
static const byoc_pattern *g_extra;
static uint32_t g_nextra;

/* Parses `text`; params whose names start with w, b, c bind to constants (p: positive ones, as
 * a divisor); the others stay inputs. */
static void ct_load(ct *t, const char *text, uint32_t seed) {
    memset(t, 0, sizeof(*t));
    t->seed = seed;
    t->ctx = ir_ctx_new();
    gr_diag d = {0};
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_module(t->ctx, "case", text, strlen(text), &m, &d), GR_OK, "%s\n%s", d.msg, text);
    const ir_func *f = ir_module_func(m, "main");
    cr_assert(f);
    const char *names[16];
    rt_tensor *ts[16];
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nparams; i++) {
        const char *nm = f->params[i]->name;
        if (!strchr("wbcp", nm[0])) continue;
        const ir_sinfo *s = f->params[i]->base.sinfo;
        int64_t shape[RT_MAX_NDIM];
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *x = rt_tensor_new(s->dtype, s->ndim, shape);
        float *p = rt_tensor_data(x);
        for (int64_t k = 0; k < rt_tensor_numel(x); k++)
            p[k] = nm[0] == 'p' ? 1.f + 0.5f * ct_rand(&t->seed) : 0.5f * ct_rand(&t->seed);
        names[n] = nm;
        ts[n++] = x;
    }
    ir_pass *bp = ir_pass_bind_params_new("main", n, names, ts);
    cr_assert_eq(ir_pass_run(bp, NULL, m, &t->m, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bp);
    for (uint32_t i = 0; i < n; i++) rt_tensor_release(ts[i]);
    byoc_notes_init(&t->notes);
    byoc_partition_opts po = {0};
    po.notes = &t->notes;
    po.extra = g_extra;
    po.nextra = g_nextra;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(t->ctx, t->m, be, 1, &po, &t->part, &d), GR_OK, "%s", d.msg);
    t->merged = po.after_merge;
}

static void ct_free(ct *t) {
    byoc_notes_free(&t->notes);
    ir_ctx_free(t->ctx);
}

/* How many composites named `name` the partition made. */
static int ct_count(ct *t, const char *name) {
    json_t *r = byoc_report_json(t->ctx, t->merged, (const char *[]){"dnnl"}, 1, &t->notes);
    int k = 0;
    size_t i, j;
    json_t *g, *c;
    json_array_foreach(json_object_get(r, "regions"), i, g) json_array_foreach(json_object_get(g, "composites"), j, c) k +=
        !strcmp(json_string_value(json_object_get(c, "name")), name);
    json_decref(r);
    return k;
}

/* The composite names, for messages. */
static char *ct_names(ct *t) {
    static char buf[1024];
    buf[0] = 0;
    json_t *r = byoc_report_json(t->ctx, t->merged, (const char *[]){"dnnl"}, 1, &t->notes);
    size_t i, j;
    json_t *g, *c;
    json_array_foreach(json_object_get(r, "regions"), i, g) json_array_foreach(json_object_get(g, "composites"), j, c) {
        strncat(buf, json_string_value(json_object_get(c, "name")), sizeof buf - strlen(buf) - 2);
        strncat(buf, " ", sizeof buf - strlen(buf) - 1);
    }
    json_decref(r);
    return buf;
}

static void run_main(const ir_module *m, uint32_t seed, rt_value *out) {
    rt_exec_t *x = NULL;
    gr_diag d = {0};
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    uint32_t n = rt_exec_num_inputs(x);
    rt_value in[8];
    for (uint32_t i = 0; i < n; i++) {
        const ir_sinfo *s = rt_exec_input_sinfo(x, i);
        int64_t shape[RT_MAX_NDIM];
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
        float *p = rt_tensor_data(t);
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) p[k] = 2.f * ct_rand(&seed);
        in[i] = rt_value_tensor(t);
    }
    cr_assert_eq(rt_exec_run(x, in, n, out, &d), GR_OK, "%s", d.msg);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
}

static void ct_compare(const rt_value *a, const rt_value *b) {
    cr_assert_eq(a->kind, RT_VAL_TENSOR);
    cr_assert_eq(b->kind, RT_VAL_TENSOR);
    tc_expect_tensor(b->u.t, a->u.t, (gr_cmp_opts){.atol = CT_ATOL, .rtol = CT_RTOL}, "dnnl against the reference");
}

/* Reference vs dnnl on the same random inputs. */
static void ct_check(ct *t) {
    rt_value a = {0}, b = {0};
    run_main(t->m, t->seed, &a);
    run_main(t->part, t->seed, &b);
    ct_compare(&a, &b);
    rt_value_clear(&a);
    rt_value_clear(&b);
}

/* One case: text partitions into exactly `want` once (plus what else it needs) and matches. */
static void ct_case(const char *text, const char *want, uint32_t seed) {
    ct t;
    ct_load(&t, text, seed);
    cr_expect_eq(ct_count(&t, want), 1, "want %s, got %s", want, ct_names(&t));
    ct_check(&t);
    ct_free(&t);
}

/* The reason noted for binding `var` of main (the root of the rejected composite). */
static const char *ct_reason(ct *t, const char *var) {
    const ir_func *f = ir_module_func(t->m, "main");
    const ir_seq *s = IR_AS(f->body, ir_seq);
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_var *v = s->blocks[b]->bindings[i].var;
            uint64_t r;
            if (!strcmp(v->name, var) && gr_map_get(&t->notes.reason, GR_MAP_PTR(v), &r)) return (const char *)(uintptr_t)r;
        }
    return "";
}

#define HDR "@I.ir_module\nclass Module:\n    @R.function\n"
#define CLIP(x, lo, hi) "R.clip(" x ", R.prim_value(T.float32(" lo ")), R.prim_value(T.float32(" hi ")))"

static uint32_t g_seed = 2026;
static int rnd(int lo, int hi) {
    g_seed = g_seed * 1103515245u + 12345u;
    return lo + (int)((g_seed >> 16) % (uint32_t)(hi - lo + 1));
}

/* ------------------------------------------------------------------ conv2d ---- */

/* random shapes: strided, padded convolutions + bias + relu */
Test(dnnl_composites, conv2d_bias_relu_random) {
    for (int it = 0; it < 5; it++) {
        int C = rnd(1, 12), O = rnd(2, 16), H = rnd(5, 14), K = 1 + 2 * rnd(0, 1), S = rnd(1, 2), P = K / 2;
        char text[2048];
        snprintf(text, sizeof text,
                 HDR "    def main(x: R.Tensor((1, %d, %d, %d), dtype=\"float32\"), w: R.Tensor((%d, %d, %d, %d), dtype=\"float32\"),"
                     " b: R.Tensor((%d, 1, 1), dtype=\"float32\")):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.nn.conv2d(x, w, strides=[%d, %d], padding=[%d, %d, %d, %d])\n"
                     "            lv1 = R.add(b, lv)\n"
                     "            gv = R.nn.relu(lv1)\n"
                     "            R.output(gv)\n"
                     "        return gv\n",
                 C, H, H + 1, O, C, K, K, O, S, S, P, P, P, P);
        ct_case(text, "dnnl.conv2d_bias_relu", (uint32_t)it + 1);
    }
}

#define CONV_MAIN(args) HDR "    def main(" args "):\n        with R.dataflow():\n"
#define END "            R.output(gv)\n        return gv\n"

/* depthwise, dilated, asymmetric padding + bias + hard-swish as the ONNX importer writes it */
Test(dnnl_composites, depthwise_dilated_hardswish) {
    ct_case(CONV_MAIN("x: R.Tensor((2, 8, 12, 12), dtype=\"float32\"), w: R.Tensor((8, 1, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, padding=[2, 1, 2, 3], dilation=[2, 2], groups=8)\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.add(lv1, R.const(3.0, \"float32\"))\n"
            "            lv3 = " CLIP("lv2", "0.0", "6.0") "\n"
            "            lv4 = R.divide(lv3, R.const(6.0, \"float32\"))\n"
            "            gv = R.multiply(lv1, lv4)\n" END,
            "dnnl.conv2d_bias_hardswish", 3);
}

/* grouped conv + (x * clip(x + 3, 0, 6)) / 6 (PaddlePaddle's export) and x * hardsigmoid(x) */
Test(dnnl_composites, hardswish_forms) {
    ct_case(CONV_MAIN("x: R.Tensor((1, 6, 9, 9), dtype=\"float32\"), w: R.Tensor((12, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 12, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], groups=2)\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.add(lv1, R.const(3.0, \"float32\"))\n"
            "            lv3 = " CLIP("lv2", "0.0", "6.0") "\n"
            "            lv4 = R.multiply(lv1, lv3)\n"
            "            gv = R.divide(lv4, R.const(6.0, \"float32\"))\n" END,
            "dnnl.conv2d_bias_hardswish", 4);
    ct_case(CONV_MAIN("x: R.Tensor((1, 6, 9, 9), dtype=\"float32\"), w: R.Tensor((6, 6, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w)\n"
            "            lv2 = R.multiply(lv, R.const(0.16666667, \"float32\"))\n"
            "            lv3 = R.add(lv2, R.const(0.5, \"float32\"))\n"
            "            lv4 = " CLIP("lv3", "0.0", "1.0") "\n"
            "            gv = R.multiply(lv4, lv)\n" END,
            "dnnl.conv2d_hardswish", 5);
}

/* bias + hard-sigmoid + squeeze-excitation style multiply by a broadcast tensor */
Test(dnnl_composites, hardsigmoid_mul_broadcast) {
    ct_case(CONV_MAIN("x: R.Tensor((1, 4, 7, 7), dtype=\"float32\"), w: R.Tensor((8, 4, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\"), s: R.Tensor((1, 8, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.divide(lv1, R.const(6.0, \"float32\"))\n"
            "            lv3 = R.add(lv2, R.const(0.5, \"float32\"))\n"
            "            lv4 = " CLIP("lv3", "0.0", "1.0") "\n"
            "            gv = R.multiply(lv4, s)\n" END,
            "dnnl.conv2d_bias_hardsigmoid_mul", 6);
}

/* bias + residual add (sum post-op) + relu, and bias + relu + residual */
Test(dnnl_composites, residual_add) {
    ct_case(CONV_MAIN("x: R.Tensor((1, 8, 10, 10), dtype=\"float32\"), w: R.Tensor((8, 8, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.add(x, lv1)\n"
            "            gv = R.nn.relu(lv2)\n" END,
            "dnnl.conv2d_bias_add_relu", 7);
    ct_case(CONV_MAIN("x: R.Tensor((1, 8, 10, 10), dtype=\"float32\"), r: R.Tensor((1, 16, 5, 5), dtype=\"float32\"), w: R.Tensor((16, 8, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 16, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, strides=[2, 2], padding=[1, 1, 1, 1])\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.nn.relu6(lv1)\n"
            "            gv = R.add(lv2, r)\n" END,
            "dnnl.conv2d_bias_relu6_add", 8);
}

/* A binary primitive with linear, binary, linear post-ops (a QDQ model's dequantize, residual
 * add and requantize scale): oneDNN 2.6 computed it wrong (errors of 60 and more), so the
 * chain keeps one linear post-op. */
Test(dnnl_composites, linear_binary_linear_chain) {
    ct t;
    ct_load(&t, CONV_MAIN("x: R.Tensor((1, 16, 8, 8), dtype=\"float32\"), y: R.Tensor((1, 16, 8, 8), dtype=\"float32\"), c: R.Tensor((), dtype=\"float32\"), p: R.Tensor((), dtype=\"float32\")")
                    "            lv = R.subtract(x, y)\n"
                    "            lv1 = R.multiply(lv, c)\n"
                    "            lv2 = R.add(y, lv1)\n"
                    "            gv = R.divide(lv2, p)\n" END, 11);
    ct_check(&t);
    ct_free(&t);
}

/* an unfolded batch norm ((x - m) / s * g + b) and a scalar affine after the activation */
Test(dnnl_composites, affine) {
    ct_case(CONV_MAIN("x: R.Tensor((1, 5, 9, 9), dtype=\"float32\"), w: R.Tensor((6, 5, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 6, 1, 1), dtype=\"float32\"),"
                      " c1: R.Tensor((6, 1, 1), dtype=\"float32\"), p1: R.Tensor((6, 1, 1), dtype=\"float32\"), c2: R.Tensor((6, 1, 1), dtype=\"float32\"), c3: R.Tensor((6, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w)\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.subtract(lv1, c1)\n"
            "            lv3 = R.divide(lv2, p1)\n"
            "            lv4 = R.multiply(lv3, c2)\n"
            "            lv5 = R.add(lv4, c3)\n"
            "            gv = R.nn.leakyrelu(lv5, alpha=0.2)\n" END,
            "dnnl.conv2d_bias_affine_leaky_relu", 9);
    ct_case(CONV_MAIN("x: R.Tensor((1, 5, 9, 9), dtype=\"float32\"), w: R.Tensor((6, 5, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 6, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w)\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.multiply(R.const(1.5, \"float32\"), lv1)\n"
            "            lv3 = R.add(lv2, R.const(-0.25, \"float32\"))\n"
            "            lv4 = R.nn.silu(lv3)\n"
            "            lv5 = R.multiply(R.const(0.5, \"float32\"), lv4)\n"
            "            gv = R.add(lv5, R.const(0.125, \"float32\"))\n" END,
            "dnnl.conv2d_bias_affine_swish_affine", 10);
}

/* every eltwise post-op on a conv1d (grouped, strided, padded) */
Test(dnnl_composites, conv1d_eltwise) {
    static const struct {
        const char *body, *name;
    } E[] = {
        {"            gv = R.nn.gelu(lv1)\n", "dnnl.conv1d_bias_gelu"},
        {"            gv = R.nn.gelu_tanh(lv1)\n", "dnnl.conv1d_bias_gelu_tanh"},
        {"            gv = R.tanh(lv1)\n", "dnnl.conv1d_bias_tanh"},
        {"            gv = R.sigmoid(lv1)\n", "dnnl.conv1d_bias_sigmoid"},
        {"            lv2 = R.sigmoid(lv1)\n            gv = R.multiply(lv1, lv2)\n", "dnnl.conv1d_bias_swish"},
        {"            gv = " CLIP("lv1", "-0.5", "0.75") "\n", "dnnl.conv1d_bias_clip"},
        {"            lv2 = R.exp(lv1)\n            lv3 = R.subtract(lv2, R.const(1.0, \"float32\"))\n"
         "            lv4 = R.multiply(lv3, R.const(0.7, \"float32\"))\n            lv5 = R.greater(lv1, R.const(0.0, \"float32\"))\n"
         "            gv = R.where(lv5, lv1, lv4)\n",
         "dnnl.conv1d_bias_elu"},
    };
    for (size_t i = 0; i < sizeof(E) / sizeof(E[0]); i++) {
        int C = 2 * rnd(1, 4), O = 2 * rnd(1, 5), L = rnd(8, 24);
        char text[2048];
        snprintf(text, sizeof text,
                 HDR "    def main(x: R.Tensor((2, %d, %d), dtype=\"float32\"), w: R.Tensor((%d, %d, 5), dtype=\"float32\"), b: R.Tensor((%d, 1), dtype=\"float32\")):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.nn.conv1d(x, w, strides=[2], padding=[2, 1], groups=2)\n"
                     "            lv1 = R.add(lv, b)\n%s" END,
                 C, L, O, C / 2, O, E[i].body);
        ct_case(text, E[i].name, 20 + (uint32_t)i);
    }
}

/* ----------------------------------------------------------- conv2d_transpose ---- */

Test(dnnl_composites, conv2d_transpose) {
    /* stride 2, padding, output padding, grouped + bias + sigmoid */
    ct_case(CONV_MAIN("x: R.Tensor((1, 4, 5, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 6, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d_transpose(x, w, strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1], groups=2)\n"
            "            lv1 = R.add(lv, b)\n"
            "            gv = R.sigmoid(lv1)\n" END,
            "dnnl.conv2d_transpose_bias_sigmoid", 30);
    /* stride == kernel (1x1 conv + interleave) + bias + batch norm + relu */
    ct_case(CONV_MAIN("x: R.Tensor((1, 6, 5, 5), dtype=\"float32\"), w: R.Tensor((6, 4, 2, 2), dtype=\"float32\"), b: R.Tensor((1, 4, 1, 1), dtype=\"float32\"),"
                      " c1: R.Tensor((1, 4, 1, 1), dtype=\"float32\"), p1: R.Tensor((1, 4, 1, 1), dtype=\"float32\"), c2: R.Tensor((1, 4, 1, 1), dtype=\"float32\"), c3: R.Tensor((1, 4, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d_transpose(x, w, strides=[2, 2])\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.subtract(lv1, c1)\n"
            "            lv3 = R.divide(lv2, p1)\n"
            "            lv4 = R.multiply(lv3, c2)\n"
            "            lv5 = R.add(lv4, c3)\n"
            "            gv = R.nn.relu(lv5)\n" END,
            "dnnl.conv2d_transpose_bias_affine_relu", 31);
    /* stride == kernel with a residual: the add runs as its own primitive after the interleave */
    ct_case(CONV_MAIN("x: R.Tensor((1, 6, 5, 5), dtype=\"float32\"), r: R.Tensor((1, 4, 10, 10), dtype=\"float32\"), w: R.Tensor((6, 4, 2, 2), dtype=\"float32\"), b: R.Tensor((1, 4, 1, 1), dtype=\"float32\")")
            "            lv = R.nn.conv2d_transpose(x, w, strides=[2, 2])\n"
            "            lv1 = R.add(lv, b)\n"
            "            lv2 = R.nn.relu(lv1)\n"
            "            gv = R.add(lv2, r)\n" END,
            "dnnl.conv2d_transpose_bias_relu_add", 32);
}

/* ---------------------------------------------------------------- matmul ---- */

Test(dnnl_composites, matmul) {
    int M = rnd(2, 9), K = rnd(3, 40), N = rnd(2, 30);
    char text[2048];
    /* 2-D dense with constant weights + bias + gelu */
    snprintf(text, sizeof text,
             CONV_MAIN("x: R.Tensor((%d, %d), dtype=\"float32\"), w: R.Tensor((%d, %d), dtype=\"float32\"), b: R.Tensor((%d,), dtype=\"float32\")")
             "            lv = R.matmul(x, w)\n            lv1 = R.add(lv, b)\n            gv = R.nn.gelu(lv1)\n" END,
             M, K, K, N, N);
    ct_case(text, "dnnl.matmul_bias_gelu", 40);
    /* batched + bias + residual */
    snprintf(text, sizeof text,
             CONV_MAIN("x: R.Tensor((3, %d, %d), dtype=\"float32\"), r: R.Tensor((3, %d, %d), dtype=\"float32\"), w: R.Tensor((%d, %d), dtype=\"float32\"), b: R.Tensor((1, 1, %d), dtype=\"float32\")")
             "            lv = R.matmul(x, w)\n            lv1 = R.add(lv, b)\n            gv = R.add(lv1, r)\n" END,
             M, K, M, N, K, N, N);
    ct_case(text, "dnnl.matmul_bias_add", 41);
    /* transposed constant weights (dense) + bias + swish */
    snprintf(text, sizeof text,
             CONV_MAIN("x: R.Tensor((%d, %d), dtype=\"float32\"), w: R.Tensor((%d, %d), dtype=\"float32\"), b: R.Tensor((%d,), dtype=\"float32\")")
             "            lv = R.matmul(x, R.permute_dims(w, axes=[1, 0]))\n            lv1 = R.add(lv, b)\n            gv = R.nn.silu(lv1)\n" END,
             M, K, N, K, N);
    ct_case(text, "dnnl.dense_bias_swish", 42);
    /* q @ k^T of two activations (batched dense) + scale... as a broadcast multiply */
    snprintf(text, sizeof text,
             CONV_MAIN("q: R.Tensor((2, 3, %d, %d), dtype=\"float32\"), k: R.Tensor((2, 3, %d, %d), dtype=\"float32\"), s: R.Tensor((1, 3, 1, 1), dtype=\"float32\")")
             "            lv = R.matmul(q, R.permute_dims(k, axes=[0, 1, 3, 2]))\n            gv = R.multiply(lv, s)\n" END,
             M, K, N, K);
    ct_case(text, "dnnl.dense_mul", 43);
}

/* --------------------------------------------------------------- rejections ---- */

static void ct_reject(const char *text, const char *var, const char *want) {
    ct t;
    ct_load(&t, text, 77);
    const char *r = ct_reason(&t, var);
    cr_expect(strstr(r, want), "%s: want reason '%s', got '%s' (composites %s)", var, want, r, ct_names(&t));
    ct_check(&t);  /* the fallback (smaller composites, single ops, host) still computes the same */
    ct_free(&t);
}

Test(dnnl_composites, rejections) {
    /* a bias that varies over the image, not per output channel: conv2d_add_relu takes it */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 1, 4, 4), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv1 = R.add(lv, b)\n            gv = R.nn.relu(lv1)\n" END,
              "gv", "dnnl.conv2d_bias_relu: bias is not per-output-channel");
    /* hard-swish with / 5 */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv2 = R.add(lv, R.const(3.0, \"float32\"))\n"
              "            lv3 = " CLIP("lv2", "0.0", "6.0") "\n            lv4 = R.divide(lv3, R.const(5.0, \"float32\"))\n"
              "            gv = R.multiply(lv, lv4)\n" END,
              "gv", "hard-swish constants are not 3 and 6");
    /* hard-sigmoid (2 eltwise post-ops) + a scalar affine (1 more) */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv1 = R.divide(lv, R.const(6.0, \"float32\"))\n"
              "            lv2 = R.add(lv1, R.const(0.5, \"float32\"))\n            lv3 = " CLIP("lv2", "0.0", "1.0") "\n"
              "            lv4 = R.multiply(lv3, R.const(2.0, \"float32\"))\n            gv = R.add(lv4, R.const(1.0, \"float32\"))\n" END,
              "gv", "post-op chain longer than oneDNN 2.6 allows (3 eltwise post-ops, at most 2)");
    /* hard-sigmoid clipping to [0, 2] */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv1 = R.divide(lv, R.const(6.0, \"float32\"))\n"
              "            lv2 = R.add(lv1, R.const(0.5, \"float32\"))\n            gv = " CLIP("lv2", "0.0", "2.0") "\n" END,
              "gv", "hard-sigmoid clip bounds are not 0 and 1");
    /* the conv result is also an output: the composite would hide it */
    ct_reject(HDR "    def main(x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")):\n"
                  "        with R.dataflow():\n            lv = R.nn.conv2d(x, w)\n            lv1 = R.nn.relu(lv)\n"
                  "            gv = R.add(lv1, lv)\n            R.output(gv)\n        return gv\n",
              "lv1", "intermediate has a user outside the match");
    /* the SE multiply grows the result: not a post-op */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 4, 1, 1), dtype=\"float32\"), y: R.Tensor((1, 4, 5, 5), dtype=\"float32\"), w: R.Tensor((4, 4, 1, 1), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv1 = R.sigmoid(lv)\n            gv = R.multiply(lv1, y)\n" END,
              "gv", "post-op operand does not broadcast to the result");
    /* matmul bias that is a full matrix */
    ct_reject(CONV_MAIN("x: R.Tensor((4, 6), dtype=\"float32\"), w: R.Tensor((6, 5), dtype=\"float32\"), b: R.Tensor((4, 5), dtype=\"float32\")")
              "            lv = R.matmul(x, w)\n            gv = R.add(lv, b)\n" END,
              "gv", "dnnl.matmul_bias: bias is not per-output-channel");
    /* permute_dims that is not a transpose of the last two axes */
    ct_reject(CONV_MAIN("x: R.Tensor((4, 8, 16), dtype=\"float32\"), y: R.Tensor((16, 4, 8), dtype=\"float32\")")
              "            gv = R.matmul(x, R.permute_dims(y, axes=[1, 0, 2]))\n" END,
              "gv", "weight permutation is not a transpose of the last two axes");
    /* a batch-norm-like scale that varies over the image */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), c1: R.Tensor((1, 1, 4, 4), dtype=\"float32\"), c2: R.Tensor((1, 4, 1, 1), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv1 = R.multiply(lv, c1)\n            gv = R.add(lv1, c2)\n" END,
              "gv", "affine scale / shift are not per-output-channel or scalar constants");
    /* elu whose where keeps x above 0.5 */
    ct_reject(CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")")
              "            lv = R.nn.conv2d(x, w)\n            lv2 = R.exp(lv)\n            lv3 = R.subtract(lv2, R.const(1.0, \"float32\"))\n"
              "            lv4 = R.multiply(lv3, R.const(0.7, \"float32\"))\n            lv5 = R.greater(lv, R.const(0.5, \"float32\"))\n"
              "            gv = R.where(lv5, lv, lv4)\n" END,
              "gv", "elu constants are not 0 and 1");
}

/* a float64 convolution stays on the host, and the report says why */
Test(dnnl_composites, report_host_reason) {
    ct t;
    ct_load(&t,
            CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float64\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float64\")")
            "            gv = R.nn.conv2d(x, w)\n" END,
            5);
    json_t *r = byoc_report_json(t.ctx, t.merged, (const char *[]){"dnnl"}, 1, &t.notes);
    json_t *h = json_array_get(json_object_get(r, "host"), 0);
    cr_assert(h, "the conv should be a host op");
    const char *why = json_string_value(json_object_get(h, "reason"));
    cr_expect(why && strstr(why, "dnnl.nn.conv2d: result is not a float32 tensor"), "%s", why ? why : "(none)");
    json_decref(r);
    ct_free(&t);
}

/* ------------------------------------------------------------ save / reload ---- */

static rt_tensor *ct_const(const char *name, void *user) {
    const ir_module *m = user;
    const ir_attr *map = ir_attrs_get(m->attrs, "const_name_to_constant");
    for (uint32_t k = 0; map && k < map->u.arr.n; k++) {
        const ir_attr *key = &map->u.arr.items[2 * k], *val = &map->u.arr.items[2 * k + 1];
        if (key->kind == IR_ATTR_STR && !strcmp(key->u.s, name) && val->kind == IR_ATTR_EXPR && val->u.expr->kind == IR_CONST)
            return IR_AS(val->u.expr, ir_const)->data;
    }
    return NULL;
}

Test(dnnl_composites, save_reload) {
    ct t;
    ct_load(&t,
            CONV_MAIN("x: R.Tensor((1, 4, 8, 8), dtype=\"float32\"), w: R.Tensor((8, 4, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\"), w2: R.Tensor((4, 8), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n            lv1 = R.add(lv, b)\n"
            "            lv2 = R.add(lv1, R.const(3.0, \"float32\"))\n            lv3 = " CLIP("lv2", "0.0", "6.0") "\n"
            "            lv4 = R.divide(lv3, R.const(6.0, \"float32\"))\n            lv5 = R.multiply(lv1, lv4)\n"
            "            lv6 = R.nn.max_pool2d(lv5, pool_size=[2, 2], strides=[2, 2])\n"
            "            gv = R.matmul(lv6, w2)\n" END,
            11);
    cr_assert_eq(rt_module_count(t.part), 1);
    rt_module *m = rt_module_at(t.part, 0);
    cr_assert_str_eq(m->name, "dnnl");
    uint8_t *buf = NULL;
    size_t len = 0;
    gr_diag d = {0};
    cr_assert(m->iface->serialize);
    cr_assert_eq(m->iface->serialize(m, &buf, &len, &d), GR_OK, "%s", d.msg);
    cr_expect(memmem(buf, len, "dnnl.conv2d_bias_hardswish", strlen("dnnl.conv2d_bias_hardswish")), "annotation saved");
    rt_module *m2 = NULL;
    cr_assert_eq(byoc_dnnl_backend.load(buf, len, ct_const, t.part, NULL, &m2, &d), GR_OK, "%s", d.msg);
    free(buf);
    /* the same module with the reloaded runtime module */
    ir_module *again = ir_module_copy(t.part);
    ir_module_set_attr(again, "external_mods", ir_attr_array(t.ctx, 0, NULL));
    rt_module_attach(again, m2);
    rt_module_release(m2);
    rt_value a = {0}, b = {0}, c = {0};
    run_main(t.m, 5, &a);
    run_main(t.part, 5, &b);
    run_main(again, 5, &c);
    ct_compare(&a, &b);
    /* same engine, same primitives: bit-identical */
    for (int64_t i = 0; i < rt_tensor_numel(b.u.t); i++)
        cr_assert_eq(rt_tensor_get_f64(b.u.t, i), rt_tensor_get_f64(c.u.t, i), "elem %ld", (long)i);
    rt_value_clear(&a);
    rt_value_clear(&b);
    rt_value_clear(&c);
    ct_free(&t);
}

/* ------------------------------------------------------------ strided_slice ---- */

/* a strided view reordered into place: steps, negative begin, several axes */
Test(dnnl_composites, strided_slice) {
    ct t;
    ct_load(&t,
            CONV_MAIN("x: R.Tensor((3, 4, 10, 9), dtype=\"float32\")")
            "            lv = R.strided_slice(x, (R.prim_value(0), R.prim_value(2), R.prim_value(3)), (R.prim_value(1), R.prim_value(1), R.prim_value(-7)),"
            " (R.prim_value(2), R.prim_value(9), R.prim_value(9)), (R.prim_value(1), R.prim_value(3), R.prim_value(2)))\n"
            "            gv = R.nn.relu(lv)\n" END,
            12);
    json_t *r = byoc_report_json(t.ctx, t.merged, (const char *[]){"dnnl"}, 1, &t.notes);
    cr_expect_eq(json_array_size(json_object_get(r, "host")), 0, "strided_slice should be offloaded: %s", ct_names(&t));
    json_decref(r);
    ct_check(&t);
    ct_free(&t);
    /* a negative step is not a strided view: host, with the reason */
    ct_reject(CONV_MAIN("x: R.Tensor((3, 4, 10, 9), dtype=\"float32\")")
              "            gv = R.strided_slice(x, (R.prim_value(2),), (R.prim_value(8),), (R.prim_value(1),), (R.prim_value(-2),))\n" END,
              "gv", "strided_slice with a negative step");
}

/* ------------------------------------------------------------------- golden ---- */

/* tests/golden/byoc/dnnl_lcnet_block.relax: a PP-LCNet block takes five fused composites,
 * keeps every frontend layer, and computes what the reference does */
Test(dnnl_composites, golden_lcnet_block) {
    char *text = tu_read_file("tests/golden/byoc/dnnl_lcnet_block.relax", NULL);
    cr_assert(text, "run from the repository root");
    ct t;
    ct_load(&t, text, 99);
    free(text);
    static const char *const want[] = {"dnnl.conv2d_bias_affine_hardswish_affine", "dnnl.conv2d_bias_hardswish",
                                       "dnnl.conv2d_bias_relu", "dnnl.conv2d_bias_affine_clip", "dnnl.conv2d_bias_add"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_expect_eq(ct_count(&t, want[i]), 1, "want %s, got %s", want[i], ct_names(&t));
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(t.m, t.part, &nl);
    cr_expect_eq(nl, 0, "lost layer %s", nl ? lost[0] : "");
    free((void *)lost);
    ct_check(&t);
    ct_free(&t);
}

/* tests/golden/byoc/dnnl_nhwc_block.relax: a TFLite-style NHWC block (OHWI, depthwise HWOI,
 * pointwise HWIO) offloads entirely, keeps every frontend layer, computes what the reference
 * does, with no primitive on ref */
Test(dnnl_composites, golden_nhwc_block) {
    char *text = tu_read_file("tests/golden/byoc/dnnl_nhwc_block.relax", NULL);
    cr_assert(text, "run from the repository root");
    ct t;
    ct_load(&t, text, 98);
    free(text);
    static const char *const want[] = {"dnnl.conv2d_bias_clip", "dnnl.conv2d_bias_relu", "dnnl.conv2d_bias"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        cr_expect_eq(ct_count(&t, want[i]), 1, "want %s, got %s", want[i], ct_names(&t));
    json_t *r = byoc_report_json(t.ctx, t.merged, (const char *[]){"dnnl"}, 1, &t.notes);
    cr_expect_eq(json_array_size(json_object_get(r, "regions")), 1);
    json_decref(r);
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(t.m, t.part, &nl);
    cr_expect_eq(nl, 0, "lost layer %s", nl ? lost[0] : "");
    free((void *)lost);
    ct_check(&t);
    ct_free(&t);
    dt_expect_no_ref("conv2d sweep", false);
}

/* ------------------------------------------------------- random conv2d sweep ---- */

/* every post after conv2d + bias, on random shapes (groups, kernel, stride, dilation); %1$s is
 * the post's input, lv9 its output */
Test(dnnl_composites, conv2d_posts_random) {
    static const struct {
        const char *post, *body;
    } P[] = {
        {"relu", "            lv9 = R.nn.relu(lv1)\n"},
        {"leaky_relu", "            lv9 = R.nn.leakyrelu(lv1, alpha=0.05)\n"},
        {"relu6", "            lv9 = R.nn.relu6(lv1)\n"},
        {"clip", "            lv9 = " CLIP("lv1", "-0.25", "0.5") "\n"},
        {"hardsigmoid", "            lv2 = R.divide(lv1, R.const(5.0, \"float32\"))\n            lv3 = R.add(lv2, R.const(0.5, \"float32\"))\n"
                        "            lv9 = " CLIP("lv3", "0.0", "1.0") "\n"},
        {"hardswish", "            lv2 = R.add(lv1, R.const(3.0, \"float32\"))\n            lv3 = " CLIP("lv2", "0.0", "6.0") "\n"
                      "            lv4 = R.divide(lv3, R.const(6.0, \"float32\"))\n            lv9 = R.multiply(lv1, lv4)\n"},
        {"sigmoid", "            lv9 = R.sigmoid(lv1)\n"},
        {"swish", "            lv9 = R.nn.silu(lv1)\n"},
        {"gelu", "            lv9 = R.nn.gelu(lv1)\n"},
        {"gelu_tanh", "            lv9 = R.nn.gelu_tanh(lv1)\n"},
        {"tanh", "            lv9 = R.tanh(lv1)\n"},
        {"elu", "            lv2 = R.exp(lv1)\n            lv3 = R.subtract(lv2, R.const(1.0, \"float32\"))\n"
                "            lv4 = R.multiply(R.const(1.3, \"float32\"), lv3)\n            lv5 = R.greater(lv1, R.const(0.0, \"float32\"))\n"
                "            lv9 = R.where(lv5, lv1, lv4)\n"},
        {"add", "            lv9 = R.add(r, lv1)\n"},
        {"mul", "            lv9 = R.multiply(lv1, s)\n"},
    };
    for (size_t i = 0; i < sizeof(P) / sizeof(P[0]); i++) {
        int G = rnd(1, 3), C = G * rnd(1, 4), O = G * rnd(1, 5), K = rnd(0, 1) ? 3 : 1, S = rnd(1, 2), D = K == 3 ? rnd(1, 2) : 1;
        int H = rnd(K * D + 1, 13), W = rnd(K * D + 1, 13), P0 = (K / 2) * D;
        int OH = (H + 2 * P0 - D * (K - 1) - 1) / S + 1, OW = (W + 2 * P0 - D * (K - 1) - 1) / S + 1;
        char text[4096], want[64];
        snprintf(text, sizeof text,
                 HDR "    def main(x: R.Tensor((2, %d, %d, %d), dtype=\"float32\"), r: R.Tensor((2, %d, %d, %d), dtype=\"float32\"),"
                     " s: R.Tensor((1, %d, 1, %d), dtype=\"float32\"), w: R.Tensor((%d, %d, %d, %d), dtype=\"float32\"),"
                     " b: R.Tensor((1, %d, 1, 1), dtype=\"float32\")):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.nn.conv2d(x, w, strides=[%d, %d], padding=[%d, %d, %d, %d], dilation=[%d, %d], groups=%d)\n"
                     "            lv1 = R.add(lv, b)\n%s"
                     "            gv = R.add(lv9, r)\n" END,
                 C, H, W, O, OH, OW, O, OW, O, C / G, K, K, O, S, S, P0, P0, P0, P0, D, D, G, P[i].body);
        /* the trailing residual add joins an eltwise post (e b); after a binary post it is a
         * single op (no b b composites) */
        bool bin = !strcmp(P[i].post, "add") || !strcmp(P[i].post, "mul");
        snprintf(want, sizeof want, "dnnl.conv2d_bias_%s%s", P[i].post, bin ? "" : "_add");
        ct_case(text, want, 200 + (uint32_t)i);
    }
}

/* a user's pattern named like a fused composite, without our checks, on a bias that is not per
 * output channel: the codegen runs that composite op by op (still the reference's result) */
Test(dnnl_composites, unchecked_user_composite) {
    ir_ctx_t *pctx = ir_ctx_new();
    const pat_t *conv = pat_call_varargs(pctx, pat_op(pctx, "relax.nn.conv2d"), 2,
                                         (const pat_t *[]){pat_wildcard(pctx), pat_wildcard(pctx)});
    const pat_t *p = pat_call1(pctx, "relax.nn.relu", pat_call2(pctx, "relax.add", conv, pat_wildcard(pctx)));
    byoc_pattern bp = {"dnnl.conv2d_bias_relu", p, NULL, NULL};
    g_extra = &bp;
    g_nextra = 1;
    ct t;
    ct_load(&t,
            CONV_MAIN("x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 1, 4, 4), dtype=\"float32\")")
            "            lv = R.nn.conv2d(x, w)\n            lv1 = R.add(lv, b)\n            gv = R.nn.relu(lv1)\n" END,
            13);
    g_extra = NULL;
    g_nextra = 0;
    cr_expect_eq(ct_count(&t, "dnnl.conv2d_bias_relu"), 1, "got %s", ct_names(&t));
    ct_check(&t);
    ct_free(&t);
    ir_ctx_free(pctx);
}

/* ------------------------------------------------------------ divide forms ---- */

/* c / x with a scalar constant c is one eltwise (pow, alpha c, beta -1); y / x with a broadcast
 * y is x^-1 with a multiply post-op, right from 2-D up; the 1-D form stays on the host, with
 * the reason (ONNX's test_reciprocal_example computed 0 before) */
Test(dnnl_composites, divide_broadcast_numerator) {
    static const char *const scalar[] = {
        CONV_MAIN("x: R.Tensor((2,), dtype=\"float32\")")
        "            gv = R.divide(R.const(1.0, \"float32\"), x)\n" END,
        CONV_MAIN("x: R.Tensor((3, 5), dtype=\"float32\")")
        "            gv = R.divide(R.const(-2.5, \"float32\"), x)\n" END,
        CONV_MAIN("x: R.Tensor((7,), dtype=\"float32\")")
        "            lv = R.nn.relu(x)\n            gv = R.divide(R.const(0.5, \"float32\"), lv)\n" END,
    };
    for (size_t i = 0; i < sizeof(scalar) / sizeof(scalar[0]); i++) {
        ct t;
        ct_load(&t, scalar[i], 40 + (uint32_t)i);
        json_t *r = byoc_report_json(t.ctx, t.merged, (const char *[]){"dnnl"}, 1, &t.notes);
        cr_expect_eq(json_array_size(json_object_get(r, "host")), 0, "case %zu should be offloaded: %s", i, ct_names(&t));
        json_decref(r);
        ct_check(&t);
        ct_free(&t);
    }
    ct t;
    ct_load(&t,
            CONV_MAIN("x: R.Tensor((2, 6), dtype=\"float32\"), y: R.Tensor((1, 6), dtype=\"float32\")")
            "            gv = R.divide(y, x)\n" END,
            47);
    cr_expect_eq(ct_count(&t, "dnnl.divide"), 1, "2-D y / x should be offloaded: %s", ct_names(&t));
    ct_check(&t);
    ct_free(&t);
    ct_reject(CONV_MAIN("x: R.Tensor((5,), dtype=\"float32\"), y: R.Tensor((1,), dtype=\"float32\")")
              "            gv = R.divide(y, x)\n" END,
              "gv", "1-D divide with a broadcast numerator");
}

/* ------------------------------------------------- NHWC / OHWI / HWIO layouts ---- */

/* Checked against the reference kernels like the others; and no primitive of the process (the
 * convolutions and pools read in place through strided memory descriptors) is on ref, at the
 * native ISA and under ONEDNN_MAX_CPU_ISA=AVX2. */
static void ct_case_noref(const char *text, const char *want, uint32_t seed) {
    ct_case(text, want, seed);
    dt_expect_no_ref(want, true);
}

/* random shapes: NHWC data with OHWI or HWIO weights, plain, depthwise and grouped, + bias
 * along the last axis + relu, then NHWC max / avg pools */
Test(dnnl_composites, nhwc_conv_pool_random) {
    static const char *const KL[] = {"OHWI", "HWIO", "OIHW"};
    for (int it = 0; it < 6; it++) {
        int C = rnd(1, 12), H = rnd(6, 14), K = 1 + 2 * rnd(0, 1), S = rnd(1, 2), P = K / 2, G = 1;
        if (it % 3 == 1) G = C;                         /* depthwise */
        else if (it % 3 == 2) G = 2, C = 2 * rnd(1, 6); /* grouped */
        int O = G * rnd(1, 4);
        const char *kl = KL[(it + it / 3) % 3]; /* every weights layout with every kind */
        int64_t wd[4];
        /* weights dims in kl's letter order: O, I (per group), K, K */
        for (int i = 0; i < 4; i++) wd[i] = kl[i] == 'O' ? O : kl[i] == 'I' ? C / G : K;
        char text[2048];
        snprintf(text, sizeof text,
                 HDR "    def main(x: R.Tensor((1, %d, %d, %d), dtype=\"float32\"), w: R.Tensor((%ld, %ld, %ld, %ld), dtype=\"float32\"),"
                     " b: R.Tensor((%d,), dtype=\"float32\")):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.nn.conv2d(x, w, strides=[%d, %d], padding=[%d, %d, %d, %d], groups=%d,"
                     " data_layout=\"NHWC\", kernel_layout=\"%s\")\n"
                     "            lv1 = R.add(lv, b)\n"
                     "            lv2 = R.nn.relu(lv1)\n"
                     "            lv3 = R.nn.max_pool2d(lv2, pool_size=[2, 2], strides=[1, 1], padding=[0, 0, 1, 1], layout=\"NHWC\")\n"
                     "            gv = R.nn.avg_pool2d(lv3, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], layout=\"NHWC\")\n"
                     END,
                 H, H + 1, C, (long)wd[0], (long)wd[1], (long)wd[2], (long)wd[3], O, S, S, P, P, P, P, G, kl);
        ct_case_noref(text, "dnnl.conv2d_bias_relu", (uint32_t)it + 11);
    }
}

/* NWC conv1d with WIO weights; NHWC transposed convolution (HWOI weights); NHWC adaptive
 * average pool */
Test(dnnl_composites, nhwc_conv1d_transpose_adaptive) {
    ct_case_noref(CONV_MAIN("x: R.Tensor((2, 17, 6), dtype=\"float32\"), w: R.Tensor((3, 6, 8), dtype=\"float32\")")
                  "            lv = R.nn.conv1d(x, w, strides=[2], padding=[1, 1], data_layout=\"NWC\", kernel_layout=\"WIO\")\n"
                  "            gv = R.nn.relu(lv)\n" END,
                  "dnnl.conv1d_relu", 3);
    ct_case_noref(CONV_MAIN("x: R.Tensor((1, 7, 9, 8), dtype=\"float32\"), w: R.Tensor((3, 3, 5, 8), dtype=\"float32\")")
                  "            lv = R.nn.conv2d_transpose(x, w, strides=[2, 2], padding=[1, 1, 1, 1], data_layout=\"NHWC\","
                  " kernel_layout=\"HWOI\")\n"
                  "            gv = R.nn.relu(lv)\n" END,
                  "dnnl.conv2d_transpose_relu", 4);
    ct_case_noref(CONV_MAIN("x: R.Tensor((2, 8, 12, 5), dtype=\"float32\"), w: R.Tensor((5, 1, 1, 5), dtype=\"float32\")")
                  "            lv = R.nn.conv2d(x, w, data_layout=\"NHWC\", kernel_layout=\"OHWI\")\n"
                  "            lv1 = R.nn.relu(lv)\n"
                  "            gv = R.nn.adaptive_avg_pool2d(lv1, output_size=[2, 3], layout=\"NHWC\")\n" END,
                  "dnnl.conv2d_relu", 5);
}

/* ------------------------------------------------------- parts from the match ---- */

/* The composite analysis reads each post's parts from the match of the composite's pattern
 * (named "anchor", "p<i>", "p<i>.<part>"), not by walking the bindings again: the names point
 * at the right calls, the analysis finds the bindings from them, and the value checks still
 * run on what they point at (hard-swish constants 4 and 6 are not hard-swish). */
static const char *analyze_main(ct *t, const char *composite, dc_comp *out, const pat_match_result **mres,
                                pat_match_result *m, const ir_block **blk_out) {
    const ir_func *f = ir_module_func(t->m, "main");
    const ir_seq *s = IR_AS(f->body, ir_seq);
    const ir_block *blk = s->blocks[0];
    *blk_out = blk;
    rt_dnnl_composite spec;
    cr_assert(rt_dnnl_composite_parse(composite, &spec));
    pat_block_info *info = pat_block_info_build(t->ctx, blk);
    cr_assert(pat_match(dc_pattern(t->ctx, &spec), s->body, info, m), "%s does not match", composite);
    *mres = m;
    dc_bind bs[DC_MAX_BINDS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->bindings.len; i++)
        bs[n++] = (dc_bind){&m->bindings.data[i]->var->base, IR_AS(m->bindings.data[i]->value, ir_call)};
    const char *why = dc_analyze(t->ctx, &spec, m, bs, n, out);
    pat_block_info_free(info);
    return why;
}

Test(dnnl_composites, parts_are_read_from_the_match) {
    static const char *const body =
        "            lv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n"
        "            lv1 = R.add(lv, b)\n"
        "            lv2 = R.add(lv1, R.const(%s, \"float32\"))\n"
        "            lv3 = " CLIP("lv2", "0.0", "6.0") "\n"
        "            lv4 = R.multiply(lv1, lv3)\n"
        "            gv = R.divide(lv4, R.const(6.0, \"float32\"))\n" END;
    for (int bad = 0; bad < 2; bad++) {
        char text[2048], b2[1024];
        snprintf(b2, sizeof b2, body, bad ? "4.0" : "3.0");
        snprintf(text, sizeof text, "%s%s",
                 CONV_MAIN("x: R.Tensor((1, 4, 6, 6), dtype=\"float32\"), w: R.Tensor((8, 4, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")"),
                 b2);
        ct t;
        ct_load(&t, text, 31);
        pat_match_result m;
        pat_match_result_init(&m);
        const pat_match_result *mr;
        const ir_block *blk;
        dc_comp c;
        const char *why = analyze_main(&t, "dnnl.conv2d_bias_hardswish", &c, &mr, &m, &blk);
        /* the names point at the calls of the block: conv2d, bias add, clip, the product, the
         * scaling after it */
        cr_assert_eq(pat_match_named(mr, "anchor"), blk->bindings[0].value);
        cr_assert_eq(pat_match_named(mr, "p0"), blk->bindings[1].value);
        cr_assert_eq(pat_match_named(mr, "p1.l1"), blk->bindings[2].value);
        cr_assert_eq(pat_match_named(mr, "p1.clip"), blk->bindings[3].value);
        cr_assert_eq(pat_match_named(mr, "p1.prod"), blk->bindings[4].value);
        cr_assert_eq(pat_match_named(mr, "p1.after"), blk->bindings[5].value);
        cr_assert_eq(pat_match_named(mr, "p1"), blk->bindings[5].value);
        cr_assert_null(pat_match_named(mr, "p1.l0"));
        cr_assert_null(pat_match_named(mr, "p1.scale"));
        if (bad) {
            cr_assert_str_eq(why ? why : "(accepted)", "hard-swish constants are not 3 and 6");
        } else {
            cr_assert_null(why, "%s", why);
            cr_assert_eq(c.anchor, 0);
            cr_assert_eq(c.post[0].src_b, 1); /* the bias: add's operand 1 */
            cr_assert_eq(c.post[0].src_a, 1);
            cr_assert_eq(c.post[0].out, 1);
            cr_assert_eq(c.post[1].out, 5);   /* hard-swish ends at the divide */
        }
        pat_match_result_free(&m);
        ct_free(&t);
    }
}
