/* Symbolic shapes end to end (issue 14): a model imported without --input-shape keeps its
 * symbolic dims, is partitioned for dnnl, built into one artifact, loaded, and run at several
 * input sizes; each output matches ONNX Runtime's (scripts/fetch_symbolic.sh writes the models'
 * references per size). Also: the partition offloads >= 95% of the conv / matmul FLOPs, the
 * shape-arithmetic dims (w // 4, (h - 1) // 16 + 1) work, an input that breaks the signature is a
 * clear error naming the input and the dim, and a symbolic region on the json backend matches
 * the reference executor. Skipped when the caches are absent.
 *
 * Tolerance: PP-OCR's outputs are probabilities in [0, 1]: |got - ORT| <= 1e-4 + 1e-3 * |ORT|, as
 * tests/dnnl/test_dnnl_models.c; the zoo model's logits: 1e-4 * max|ORT| + 1e-3 * |ORT|, as
 * tests/dnnl/test_dnnl_zoo.c. */
#include "runtime/kernels/const_eval.h"
#include "tests/models_env.h"
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/op.h"
#include "ir/text/parser.h"
#include "ir/transform/transform.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "runtime/npy.h"
#include "runtime/exec/plan.h"
#include "tests/compare_util.h"

#define SYM_ATOL_OF_MAX 1e-4
#define SYM_ATOL_PROB 1e-4
#define SYM_RTOL 1e-3
#define SYM_MIN_FLOPS 0.95

static const char *sym_dir(void) {
    return getenv("GRAFT_SYMBOLIC") ? getenv("GRAFT_SYMBOLIC") : "build/third_party/symbolic";
}


static bool exists(const char *p) {
    struct stat sb;
    return p && stat(p, &sb) == 0;
}

/* path imported without input shapes, through the default pipeline */
static ir_module *import_symbolic(ir_ctx_t *ctx, const char *path) {
    gr_diag d = {0};
    onnx_import_opts io = {0};
    ir_module *m = NULL, *opt = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, &io, &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
    return opt;
}

/* import (no input shapes) -> default pipeline -> partition (backend, or none) -> artifact;
 * the FLOPs share of the partition report in *share. */
static graft_model *build_symbolic(const char *path, const char *backend, double *share) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *opt = import_symbolic(ctx, path), *part = opt;
    *share = 0;
    if (backend) {
        byoc_notes notes;
        byoc_notes_init(&notes);
        byoc_partition_opts po = {0};
        po.notes = &notes;
        const char *be[1] = {backend};
        cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
        json_t *rep = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
        *share = json_real_value(json_object_get(json_object_get(json_object_get(rep, "coverage"), "flops"), "share"));
        json_decref(rep);
        byoc_notes_free(&notes);
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm = NULL;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    return gm;
}

/* Runs gm (or, gm NULL, the executor x) on refs/<name>/input_0.npy and compares with
 * output_0.npy. */
static void run_ref_on(graft_model *gm, rt_exec_t *x, const char *name, bool prob) {
    char in_path[4200], out_path[4200];
    snprintf(in_path, sizeof in_path, "%s/refs/%s/input_0.npy", sym_dir(), name);
    snprintf(out_path, sizeof out_path, "%s/refs/%s/output_0.npy", sym_dir(), name);
    gr_diag d = {0};
    rt_tensor *input = NULL, *ref = NULL;
    cr_assert_eq(rt_npy_load(in_path, &input, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_npy_load(out_path, &ref, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    gr_status st = gm ? graft_model_run(gm, &arg, 1, &res, &d) : rt_exec_run(x, &arg, 1, &res, &d);
    cr_assert_eq(st, GR_OK, "%s: %s", name, d.msg);
    const rt_tensor *got = res.kind == RT_VAL_TUPLE ? res.u.tuple.items[0].u.t : res.u.t;
    cr_assert(rt_tensor_same_shape(got, ref), "%s: output shape differs from ONNX Runtime's", name);
    gr_cmp_opts o = {.rtol = SYM_RTOL};
    if (prob)
        o.atol = SYM_ATOL_PROB;
    else
        o.atol_scale = SYM_ATOL_OF_MAX;
    gr_cmp_result e = tc_expect_tensor(got, ref, o, "%s: graft against ORT", name);
    fprintf(stderr, "dnnl_symbolic %s: max |graft - ORT| = %.3g\n", name, e.max_abs);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
}

static void run_ref(graft_model *gm, const char *name, bool prob) { run_ref_on(gm, NULL, name, prob); }

static char *need(const char *key, const char *ref) {
    char *path = model_path(key);
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/refs/%s/output_0.npy", sym_dir(), ref);
    if (!exists(path) || !exists(probe)) {
        free(path);
        cr_skip_test("%s: model or references absent (scripts/fetch_symbolic.sh)", key);
    }
    return path;
}

Test(dnnl_symbolic, ppocr_rec_any_width, .timeout = 300) {
    char *path = need("GRAFT_MODEL_REC", "rec_w1280");
    double share;
    graft_model *gm = build_symbolic(path, "dnnl", &share);
    cr_expect_geq(share, SYM_MIN_FLOPS, "rec: %.2f%% of FLOPs offloaded", 100 * share);
    static const char *const widths[] = {"rec_w80", "rec_w160", "rec_w320", "rec_w640", "rec_w1280", "rec_w160"};
    uint64_t made0, reused0, made1, reused1;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        rt_dnnl_shared_weights(&made0, &reused0);
        run_ref(gm, widths[i], true);
        rt_dnnl_shared_weights(&made1, &reused1);
        /* a new width creates primitives, not weights: the first made them for all */
        if (i > 0 && i < 5) {
            cr_expect_gt(reused1 - reused0, 0, "%s: no reordered weight reused", widths[i]);
            cr_expect_leq(made1 - made0, (reused1 - reused0) / 4, "%s: %llu weights reordered again, %llu reused",
                          widths[i], (unsigned long long)(made1 - made0), (unsigned long long)(reused1 - reused0));
        }
    }
    rt_dnnl_shared_weights(&made1, &reused1);
    fprintf(stderr, "dnnl_symbolic rec: %llu weights reordered once, %llu reuses by later widths\n",
            (unsigned long long)made1, (unsigned long long)reused1);
    graft_model_free(gm);
    free(path);
}

Test(dnnl_symbolic, ppocr_det_any_size, .timeout = 300) {
    char *path = need("GRAFT_MODEL_DET", "det_544x960");
    double share;
    graft_model *gm = build_symbolic(path, "dnnl", &share);
    cr_expect_geq(share, SYM_MIN_FLOPS, "det: %.2f%% of FLOPs offloaded", 100 * share);
    static const char *const sizes[] = {"det_320x320", "det_640x640", "det_544x960"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_ref(gm, sizes[i], true);
    graft_model_free(gm);
    free(path);
}

Test(dnnl_symbolic, dynamic_batch_zoo_model, .timeout = 300) {
    char path[4200];
    snprintf(path, sizeof path, "%s/resnet18_dynbatch.onnx", sym_dir());
    setenv("GRAFT_SYM_R18", path, 1);
    char *p = need("GRAFT_SYM_R18", "resnet18_dynbatch_b4");
    double share;
    graft_model *gm = build_symbolic(p, "dnnl", &share);
    cr_expect_geq(share, SYM_MIN_FLOPS, "resnet18: %.2f%% of FLOPs offloaded", 100 * share);
    uint64_t made0, reused0, made1, reused1;
    run_ref(gm, "resnet18_dynbatch_b1", false);
    rt_dnnl_shared_weights(&made0, &reused0);
    run_ref(gm, "resnet18_dynbatch_b4", false);
    rt_dnnl_shared_weights(&made1, &reused1);
    /* batch 4 reuses batch 1's weights on AVX2 ISAs: oneDNN's reordered ones and graft's
     * Winograd transformed ones alike (on avx512_core oneDNN's Winograd weight layouts depend on
     * the batch: half of them are made again) */
    cr_expect_gt(reused1 - reused0, 0, "no weight reused at batch 4");
    if (!strncmp(rt_dnnl_isa(), "avx2", 4)) {
        cr_expect_leq(made1 - made0, (reused1 - reused0) / 4, "batch 4: %llu weights made again, %llu reused",
                      (unsigned long long)(made1 - made0), (unsigned long long)(reused1 - reused0));
        /* all 20 convolutions' (3x3 ones in Winograd included) */
        cr_expect_geq(reused1 - reused0, 20, "batch 4: %llu of resnet18's 20 conv weights reused",
                      (unsigned long long)(reused1 - reused0));
    }
    fprintf(stderr, "dnnl_symbolic resnet18 batch 4 (ISA %s): %llu weights made, %llu reused\n", rt_dnnl_isa(),
            (unsigned long long)(made1 - made0), (unsigned long long)(reused1 - reused0));
    graft_model_free(gm);
    free(p);
}

/* In process, with the constants handed to the runtime (byoc_partition_opts.release_consts, as
 * graft run does): the IR context no longer holds them, and a symbolic region's graph keeps its
 * own references, so each new width prepares again from them (and from the weights reordered
 * once for every width), back and forth. */
Test(dnnl_symbolic, ppocr_rec_released_consts_new_widths, .timeout = 300) {
    char *path = need("GRAFT_MODEL_REC", "rec_w320");
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *opt = import_symbolic(ctx, path), *part = NULL;
    byoc_partition_opts po = {0};
    po.release_consts = true;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    const ir_attr *rel = ir_attrs_get(part->attrs, BYOC_ATTR_CONSTS_RELEASED);
    cr_assert(rel && rel->u.i > 0, "no constants handed to the runtime");
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    static const char *const widths[] = {"rec_w80", "rec_w320", "rec_w160", "rec_w80"};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) run_ref_on(NULL, x, widths[i], true);
    rt_exec_free(x);
    ir_ctx_free(ctx);
    free(path);
}

/* The host path (no backend): reference kernels and the symbolic memory plan. */
Test(dnnl_symbolic, ppocr_rec_host_any_width, .timeout = 300) {
    char *path = need("GRAFT_MODEL_REC", "rec_w320");
    double share;
    graft_model *gm = build_symbolic(path, NULL, &share);
    run_ref(gm, "rec_w80", true);
    run_ref(gm, "rec_w320", true);
    run_ref(gm, "rec_w80", true);
    graft_model_free(gm);
    free(path);
}

static void expect_refused(graft_model *gm, DLDataType dt, int nd, const int64_t *shape, const char *want1,
                           const char *want2) {
    rt_tensor *t = rt_tensor_new(dt, nd, shape);
    rt_value arg = rt_value_tensor(t), res = {0};
    gr_diag d = {0};
    cr_assert_eq(graft_model_run(gm, &arg, 1, &res, &d), GR_ERR_INVALID, "accepted a bad input");
    cr_assert(strstr(d.msg, want1), "message '%s' lacks '%s'", d.msg, want1);
    cr_assert(strstr(d.msg, want2), "message '%s' lacks '%s'", d.msg, want2);
    rt_value_clear(&arg);
}

Test(dnnl_symbolic, input_breaking_the_signature_is_named, .timeout = 120) {
    char *path = need("GRAFT_MODEL_REC", "rec_w80");
    double share;
    graft_model *gm = build_symbolic(path, "dnnl", &share);
    expect_refused(gm, IR_DTYPE_F32, 4, (int64_t[]){1, 4, 48, 80}, "input 'x'", "dim 1 is 4, expected 3");
    expect_refused(gm, IR_DTYPE_F32, 3, (int64_t[]){3, 48, 80}, "input 'x'", "rank 3, expected 4");
    expect_refused(gm, IR_DTYPE_F64, 4, (int64_t[]){1, 3, 48, 80}, "input 'x'", "float64");
    graft_model_free(gm);
    free(path);
}

/* A symbolic region on the json backend (its reference engine) at two sizes, against the
 * reference executor on the unpartitioned module; n // 2 exercises a computed dim. */
static const char k_json_mod[] =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"n\", 6), dtype=\"float32\"), y: R.Tensor((6,), dtype=\"float32\")) -> "
    "R.Tensor((\"n // 2\", 12), dtype=\"float32\"):\n"
    "        n = T.int64()\n"
    "        with R.dataflow():\n"
    "            a: R.Tensor((n, 6), dtype=\"float32\") = R.add(x, y)\n"
    "            b: R.Tensor((n, 6), dtype=\"float32\") = R.nn.relu(a)\n"
    "            c: R.Tensor((n // 2, 12), dtype=\"float32\") = R.reshape(b, R.shape([n // 2, 12]))\n"
    "            gv: R.Tensor((n // 2, 12), dtype=\"float32\") = R.multiply(c, c)\n"
    "            R.output(gv)\n"
    "        return gv\n";

Test(dnnl_symbolic, json_backend_symbolic_region) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *part = NULL;
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_json_mod, strlen(k_json_mod), &m, &d), GR_OK, "%s", d.msg);
    byoc_partition_opts po = {0};
    const char *be[1] = {"json"};
    cr_assert_eq(byoc_partition(ctx, m, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    rt_exec_t *ref = NULL, *got = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &ref, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_new(part, "main", &got, &d), GR_OK, "%s", d.msg);
    rt_px_stats ps;
    rt_px_get_stats(got, &ps);
    cr_assert_eq(ps.nextern, 1, "%u extern calls", ps.nextern);
    cr_assert_eq(ps.nkernel, 0, "%u ops left on the host", ps.nkernel);
    for (int64_t n = 2; n <= 10; n += 8) {
        rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 2, (int64_t[]){n, 6}), *y = rt_tensor_new(IR_DTYPE_F32, 1, (int64_t[]){6});
        for (int64_t i = 0; i < n * 6; i++) rt_tensor_set_f64(x, i, (double)((i * 7) % 11) - 5.0);
        for (int64_t i = 0; i < 6; i++) rt_tensor_set_f64(y, i, 0.5 * (double)i - 1.0);
        rt_value in[2] = {rt_value_tensor(x), rt_value_tensor(y)}, a = {0}, b = {0};
        cr_assert_eq(rt_exec_run(ref, in, 2, &a, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_exec_run(got, in, 2, &b, &d), GR_OK, "n=%lld: %s", (long long)n, d.msg);
        cr_assert(rt_tensor_same_shape(a.u.t, b.u.t));
        cr_assert_eq(b.u.t->dl.shape[0], n / 2);
        for (int64_t i = 0; i < rt_tensor_numel(a.u.t); i++)
            cr_assert_eq(rt_tensor_get_f64(a.u.t, i), rt_tensor_get_f64(b.u.t, i));
        rt_value_clear(&a);
        rt_value_clear(&b);
        rt_value_clear(&in[0]);
        rt_value_clear(&in[1]);
    }
    rt_exec_free(ref);
    rt_exec_free(got);
    ir_ctx_free(ctx);
}

/* Swin's roll with a symbolic height: slices whose bounds are expressions of h (h - 3) stay in
 * the dnnl region (the JSON graph writes them, its specialization evaluates them), at two
 * sizes, exactly the reference executor's values. */
static const char k_roll_mod[] =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, \"h\", 8), dtype=\"float32\")):\n"
    "        h = T.int64()\n"
    "        with R.dataflow():\n"
    "            a: R.Tensor((1, h, 8), dtype=\"float32\") = R.nn.relu(x)\n"
    "            b: R.Tensor((1, 3, 8), dtype=\"float32\") = R.strided_slice(a, (R.prim_value(1),), (R.prim_value(h - 3),), "
    "(R.prim_value(h),), (R.prim_value(1),), assume_inbound=True)\n"
    "            c: R.Tensor((1, h - 3, 8), dtype=\"float32\") = R.strided_slice(a, (R.prim_value(1),), (R.prim_value(0),), "
    "(R.prim_value(h - 3),), (R.prim_value(1),), assume_inbound=True)\n"
    "            gv: R.Tensor((1, h, 8), dtype=\"float32\") = R.concat((b, c), axis=1)\n"
    "            R.output(gv)\n"
    "        return gv\n";

Test(dnnl_symbolic, slices_with_symbolic_bounds) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *part = NULL;
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_roll_mod, strlen(k_roll_mod), &m, &d), GR_OK, "%s", d.msg);
    byoc_partition_opts po = {0};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, m, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    rt_exec_t *ref = NULL, *got = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &ref, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_new(part, "main", &got, &d), GR_OK, "%s", d.msg);
    rt_px_stats ps;
    rt_px_get_stats(got, &ps);
    cr_assert_eq(ps.nextern, 1, "%u extern calls", ps.nextern);
    cr_assert_eq(ps.nkernel, 0, "%u ops left on the host", ps.nkernel);
    for (int64_t h = 5; h <= 12; h += 7) {
        rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 3, (int64_t[]){1, h, 8});
        for (int64_t i = 0; i < h * 8; i++) rt_tensor_set_f64(x, i, (double)((i * 7) % 11) - 5.0);
        rt_value in[1] = {rt_value_tensor(x)}, a = {0}, b = {0};
        cr_assert_eq(rt_exec_run(ref, in, 1, &a, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_exec_run(got, in, 1, &b, &d), GR_OK, "h=%lld: %s", (long long)h, d.msg);
        cr_assert(rt_tensor_same_shape(a.u.t, b.u.t));
        for (int64_t i = 0; i < rt_tensor_numel(a.u.t); i++)
            cr_assert_eq(rt_tensor_get_f64(a.u.t, i), rt_tensor_get_f64(b.u.t, i), "h=%lld, element %lld", (long long)h, (long long)i);
        rt_value_clear(&a);
        rt_value_clear(&b);
        rt_value_clear(&in[0]);
    }
    rt_exec_free(ref);
    rt_exec_free(got);
    ir_ctx_free(ctx);
}
