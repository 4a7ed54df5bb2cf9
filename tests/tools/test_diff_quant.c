/* graft diff on quantized (QDQ) models through the CLI binary: each layer's scales and zero
 * points as the ONNX graph writes them (build/third_party/qdq/qdq_cnn.onnx, made by
 * scripts/make_qdq_cnn.py with known parameters), and --against-model: an int8 zoo model's
 * layers against the float32 zoo model it was quantized from (scripts/make_int8_zoo.py),
 * matched by name. Skipped when the caches are absent. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/npy.h"
#include "tests/graft_cli.h"
#include "tests/test_util.h"

#define QDQ_CNN "build/third_party/qdq/qdq_cnn.onnx"
#define INT8_RESNET "build/third_party/int8/resnet18_qdq_pt.onnx"
#define F32_RESNET "build/third_party/zoo/resnet18.onnx"
#define INT8_ZOO "build/third_party/int8/"

static void setup(void) { cli_mkdtemp("diffq"); }
TestSuite(diff_quant, .init = setup, .fini = cli_rmdir);

static bool have(const char *path) { return access(path, R_OK) == 0; }

static json_t *layer(json_t *doc, const char *name) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "layers"), i, r) if (!strcmp(json_string_value(json_object_get(r, "name")), name)) return r;
    return NULL;
}

/* The qparams entry of layer l with role `role`. */
static json_t *qp_role(json_t *l, const char *role) {
    size_t i;
    json_t *q;
    json_array_foreach(json_object_get(l, "qparams"), i, q) if (!strcmp(json_string_value(json_object_get(q, "role")), role)) return q;
    return NULL;
}

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* make_qdq_cnn.py's parameters: input uint8 at 2/255 around 128, conv1's int8 weights with 8
 * per-channel scales, its relu re-quantized uint8 at 4/255 around 0; the logits int8 at 1/64. */
Test(diff_quant, qdq_layers_show_their_scales) {
    if (!have(QDQ_CNN)) cr_skip_test("%s missing (scripts/fetch_models.sh)", QDQ_CNN);
    int rc = cli_run("diff " QDQ_CNN " --backend dnnl --json %s/d.json", cli_dir());
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, cli_err());
    char path[128];
    snprintf(path, sizeof path, "%s/d.json", cli_dir());
    json_t *doc = json_load_file(path, 0, NULL);
    cr_assert_not_null(doc, "%s", cli_err());
    json_t *conv1 = layer(doc, "conv1");
    cr_assert_not_null(conv1, "no layer conv1");
    json_t *x = qp_role(conv1, "input 0"), *w = qp_role(conv1, "input 1");
    cr_assert(x && w, "conv1 lacks its input / weight parameters");
    cr_expect_str_eq(json_string_value(json_object_get(x, "type")), "uint8");
    cr_expect_float_eq(num(x, "scale"), 2.0 / 255, 1e-9);
    cr_expect_eq(json_integer_value(json_object_get(x, "zero_point")), 128);
    cr_expect_str_eq(json_string_value(json_object_get(w, "type")), "int8");
    cr_expect_eq(json_integer_value(json_object_get(w, "channels")), 8);
    cr_expect(num(w, "scale_min") > 0 && num(w, "scale_min") < num(w, "scale_max"), "per-channel weight scales");
    json_t *relu = qp_role(layer(doc, "conv1_relu"), "output 0");
    cr_assert_not_null(relu, "conv1_relu lacks its output's parameters");
    cr_expect_float_eq(num(relu, "scale"), 4.0 / 255, 1e-9);
    json_t *out = qp_role(layer(doc, "out_Q"), "self");
    cr_assert_not_null(out, "out_Q lacks its own parameters");
    cr_expect_str_eq(json_string_value(json_object_get(out, "type")), "int8");
    cr_expect_float_eq(num(out, "scale"), 1.0 / 64, 1e-12);
    const char *text = cli_out();
    cr_expect(strstr(text, "input 0: uint8 scale 0.007843 zp 128"), "%s", text);
    cr_expect(strstr(text, "input 1: int8 scale ") && strstr(text, "(8 channels) zp 0"), "%s", text);
    json_decref(doc);
}

/* Against the float32 model: every quantized convolution / gemm finds its float32 counterpart
 * by name; the first one compared (the stem: input and weights rounded to 8 bits, 2^-8 of their
 * ranges) is within 5% of its magnitude but not equal, and no compared layer is non-finite. */
Test(diff_quant, against_the_float_model, .timeout = 180) {
    if (!have(INT8_RESNET) || !have(F32_RESNET)) cr_skip_test("int8 / float32 resnet18 not cached");
    /* the float32 model on the host: every layer of it observable (no post-op folds) */
    int rc = cli_run("diff " INT8_RESNET " --backend dnnl --against-model " F32_RESNET " --rtol 0 --atol 0.05x --json %s/d.json",
                 cli_dir());
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, cli_err());
    char path[128];
    snprintf(path, sizeof path, "%s/d.json", cli_dir());
    json_t *doc = json_load_file(path, 0, NULL);
    cr_assert_not_null(doc, "%s", cli_err());
    cr_expect(json_is_true(json_object_get(doc, "against_module")));
    /* every layer with quantized weights (a conv / gemm of both models, by name) found its
     * float32 counterpart: compared, or unobservable on the int8 side (fused into its int8
     * composite), never without one */
    size_t i, compared = 0, with_q = 0;
    json_t *r, *stem = NULL;
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        const char *name = json_string_value(json_object_get(r, "name")), *st = json_string_value(json_object_get(r, "status"));
        if (json_object_get(r, "max_abs")) {
            compared++;
            cr_expect(isfinite(num(r, "max_abs")), "%s: non-finite", name);
        }
        if (!qp_role(r, "input 1")) continue;
        with_q++;
        cr_expect(!strcmp(st, "ok") || !strcmp(st, "diverges") || !strcmp(st, "unobservable"),
                  "%s: %s against the float32 model", name, st);
        if (!stem && json_object_get(r, "max_abs")) stem = r;
    }
    cr_expect_geq(with_q, 21, "%zu layers with quantized weights (resnet18: 20 convolutions + fc)", with_q);
    cr_assert_not_null(stem, "no compared layer with quantized weights (%zu compared)\n%s", compared, cli_out());
    cr_expect_leq(num(stem, "max_abs"), 0.05 * num(stem, "max_ref"), "%s: %g of max %g",
                  json_string_value(json_object_get(stem, "name")), num(stem, "max_abs"), num(stem, "max_ref"));
    cr_expect_gt(num(stem, "max_abs"), 0, "the int8 stem equals float32 bit for bit");
    json_decref(doc);
}

/* ---- against ONNX Runtime's intermediate tensors (scripts/ort_dump.py, made by
 * scripts/fetch_int8_zoo.sh into build/third_party/int8/dumps) ---- */

#define DUMPS "build/third_party/int8/dumps/"

/* The index entry of layer (node) `name`'s first output. */
static json_t *dump_entry(json_t *index, const char *name) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(index, "values"), i, e) {
        const char *node = json_string_value(json_object_get(e, "node"));
        if (node && !strcmp(node, name) && json_integer_value(json_object_get(e, "output")) == 0) return e;
    }
    return NULL;
}

/* Changes one value of DIR/FILE by `levels` quantization levels (u8/s8) or by 1 + 2 max|x|
 * (float). */
static void perturb_file(const char *dir, const char *file, int levels) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_npy_load(path, &t, &d), GR_OK, "%s: %s", path, d.msg);
    int64_t n = rt_tensor_numel(t), at = n / 2;
    bool levels_t = t->dl.dtype.bits == 8 && t->dl.dtype.code != kDLFloat;
    double v = rt_tensor_get_f64(t, at), big = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(rt_tensor_get_f64(t, i)));
    if (levels_t) v += v + levels > (t->dl.dtype.code == kDLUInt ? 255 : 127) ? -levels : levels;
    else v += 1 + 2 * big;
    rt_tensor_set_f64(t, at, v);
    cr_assert_eq(rt_npy_save(path, t, &d), GR_OK, "%s: %s", path, d.msg);
    rt_tensor_release(t);
}

/* graft diff MODEL --against-dumps DIR (a copy of the cached dumps) with TOL; the JSON report. */
static json_t *diff_ort(const char *model, const char *dir, const char *tol, int *rc) {
    *rc = cli_run("diff %s --backend dnnl --against-dumps %s %s --json %s/d.json", model, dir, tol, cli_dir());
    cr_assert(*rc == 0 || *rc == 1, "exit %d: %s", *rc, cli_err());
    char path[128];
    snprintf(path, sizeof path, "%s/d.json", cli_dir());
    json_t *doc = json_load_file(path, 0, NULL);
    cr_assert_not_null(doc, "%s", cli_err());
    return doc;
}

/* Each model's layers are matched with ORT's tensors by node name (at least min_compared of
 * them compared, every error finite, in steps of the layer's scale where it has one). Then one
 * value of ORT's tensor for a layer within tolerance before the first divergence (the last
 * such) is moved by 5 levels (or far, in float): the diff must name first exactly the first
 * layer compared with that tensor. */
static void against_ort(const char *model, const char *dumps, const char *tol, size_t min_compared, bool quantized) {
    char src[256];
    snprintf(src, sizeof src, DUMPS "%s/index.json", dumps);
    if (!have(model) || !have(src)) cr_skip_test("%s or %s missing (scripts/fetch_int8_zoo.sh)", model, src);
    char dir[128], cmd[512];
    snprintf(dir, sizeof dir, "%s/dumps", cli_dir());
    snprintf(cmd, sizeof cmd, "cp -r '" DUMPS "%s' '%s'", dumps, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    int rc;
    json_t *doc = diff_ort(model, dir, tol, &rc);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "against")), "values");
    json_t *first = json_object_get(doc, "first_divergence"), *pick = NULL, *r;
    size_t i, compared = 0;
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        const char *lname = json_string_value(json_object_get(r, "name"));
        if (!json_object_get(r, "max_abs")) continue;
        compared++;
        cr_expect(isfinite(num(r, "max_abs")) && num(r, "max_abs") < 1e300, "%s: non-finite", lname);
        if (quantized) cr_expect(json_object_get(r, "max_steps"), "%s: no step", lname);
    }
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        if (json_is_object(first) && json_integer_value(json_object_get(r, "order")) == json_integer_value(json_object_get(first, "order")))
            break;
        if (!strcmp(json_string_value(json_object_get(r, "status")), "ok")) pick = r;
    }
    cr_expect_geq(compared, min_compared, "%zu layers compared with ORT's tensors\n%s", compared, cli_out());
    cr_assert_not_null(pick, "no layer within tolerance before the first divergence\n%s", cli_out());
    char ipath[256], name[512] = "", file[64];
    snprintf(ipath, sizeof ipath, "%s/index.json", dir);
    json_t *index = json_load_file(ipath, 0, NULL);
    json_t *e = dump_entry(index, json_string_value(json_object_get(pick, "name")));
    cr_assert_not_null(e, "no tensor of %s in %s", json_string_value(json_object_get(pick, "name")), ipath);
    snprintf(file, sizeof file, "%s", json_string_value(json_object_get(e, "file")));
    /* the tensor is also the reference of other layers (a DequantizeLinear of it, the op its
     * QuantizeLinear quantizes): the first of them compared is the one to name */
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        json_t *le = dump_entry(index, json_string_value(json_object_get(r, "name")));
        if (!*name && json_object_get(r, "max_abs") && le && !strcmp(json_string_value(json_object_get(le, "file")), file))
            snprintf(name, sizeof name, "%s", json_string_value(json_object_get(r, "name")));
    }
    perturb_file(dir, file, 5);
    json_decref(index);
    json_decref(doc);
    doc = diff_ort(model, dir, tol, &rc);
    cr_expect_eq(rc, 1, "the perturbed tensor went unnoticed\n%s", cli_out());
    first = json_object_get(doc, "first_divergence");
    cr_assert(json_is_object(first), "no first divergence\n%s", cli_out());
    cr_expect_str_eq(json_string_value(json_object_get(first, "name")), name, "%s", cli_out());
    cr_expect_geq(json_integer_value(json_object_get(first, "bad")), 1);
    if (quantized) cr_expect_geq(num(first, "max_steps"), 4, "5 levels moved, at most 1 step of difference before");
    json_decref(doc);
}

/* QDQ models as ORT runs them (its integer kernels), compared at 1 quantization step: ties
 * rounded after sums taken in another order land one level apart. */
Test(diff_quant, against_ort_resnet18_qdq, .timeout = 240) {
    against_ort(INT8_ZOO "resnet18_qdq_pc.onnx", "resnet18_qdq_pc", "--atol-steps 1", 20, true);
}
Test(diff_quant, against_ort_mobilenet_v3_qdq, .timeout = 240) {
    against_ort(INT8_ZOO "mobilenet_v3_large_qdq_pc.onnx", "mobilenet_v3_large_qdq_pc", "--atol-steps 1", 80, true);
}
/* The float32 model with every node output, at graft diff's default tolerance. */
Test(diff_quant, against_ort_resnet18_f32, .timeout = 240) {
    against_ort(F32_RESNET, "resnet18_f32", "", 20, false);
}

/* A dump directory that is not one, or a missing tensor file: exit 1 naming the file; with
 * --against: a usage error. */
Test(diff_quant, against_dumps_bad_input) {
    if (!have(QDQ_CNN)) cr_skip_test("%s missing (scripts/fetch_models.sh)", QDQ_CNN);
    cr_expect_eq(cli_run("diff " QDQ_CNN " --backend dnnl --against-dumps %s/none", cli_dir()), 1);
    cr_expect(strstr(cli_err(), "none/index.json"), "%s", cli_err());
    cli_write("index.json", "{\"inputs\": [], \"values\": [{\"node\": \"conv1\", \"output\": 0, \"tensor\": \"t\", \"file\": \"gone.npy\"}]}");
    cr_expect_eq(cli_run("diff " QDQ_CNN " --backend dnnl --against-dumps %s", cli_dir()), 1);
    cr_expect(strstr(cli_err(), "gone.npy"), "%s", cli_err());
    cr_expect_eq(cli_run("diff " QDQ_CNN " --backend dnnl --against-dumps %s --against json", cli_dir()), 2);
}
