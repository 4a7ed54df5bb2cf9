/* Span coverage on imported models: every built-in pass and the default pipeline, run on every
 * ONNX backend node-test model that imports, leaves the IR well formed and loses no frontend
 * layer (the "lost layers" list stays empty). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/tensor.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static const char *const PASSES[] = {
    "Normalize", "CanonicalizeBindings", "DeadCodeElimination", "EliminateCommonSubexpr",
    "DecomposeOpsForInference", "FoldBatchNormIntoConv", "SimplifyExpr", "ToNonDataflow",
    "BindParams", "FoldConstant", "default",
};

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

Test(pass_models, onnx_node_models_lose_no_layer, .timeout = 120) {
    DIR *d = opendir(NODE_DIR);
    if (!d) cr_skip("%s absent (libonnx-testdata)", NODE_DIR);
    char *names[2048];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 2048)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    int imported = 0, runs = 0;
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_opt_level(pc, 4);
    ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof(path), NODE_DIR "/%s/model.onnx", names[i]);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        ir_ctx_t *ctx = ir_ctx_new();
        rt_const_eval_attach(ctx);
        gr_diag diag;
        gr_diag_clear(&diag);
        ir_module *m = NULL;
        if (onnx_import_file(ctx, path, NULL, &m, &diag) == GR_OK) {
            imported++;
            for (size_t k = 0; k < sizeof(PASSES) / sizeof(PASSES[0]); k++) {
                ir_module *out = NULL;
                gr_diag_clear(&diag);
                gr_status s = ir_pass_run(ir_pass_find(PASSES[k]), pc, m, &out, &diag);
                cr_assert_eq(s, GR_OK, "%s: %s: %s", names[i], PASSES[k], diag.msg);
                uint32_t nlost = 0;
                const char **lost = ir_lost_layers(m, out, &nlost);
                cr_expect_eq(nlost, 0, "%s: %s lost layer '%s'", names[i], PASSES[k], nlost ? lost[0] : "");
                free(lost);
                lost = ir_lost_outputs(m, out, &nlost);
                cr_expect_eq(nlost, 0, "%s: %s lost the output mark of '%s'", names[i], PASSES[k], nlost ? lost[0] : "");
                free(lost);
                runs++;
            }
        }
        ir_ctx_free(ctx);
        free(names[i]);
    }
    ir_pass_ctx_free(pc);
    fprintf(stderr, "pass_models: %d models imported, %d pass runs checked\n", imported, runs);
    cr_assert_gt(imported, 100, "too few ONNX models imported (%d)", imported);
}

/* The PP-OCR models of the model cache (scripts/fetch_models.sh): the default pipeline loses
 * no layer. Skipped when the cache is absent. */
static bool models_env(const char *key, char *out, size_t n) {
    FILE *f = fopen("build/third_party/models.env", "r");
    if (!f) return false;
    char line[4096];
    size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) != 0 || line[klen] != '=') continue;
        line[strcspn(line, "\r\n")] = 0;
        snprintf(out, n, "%s", line + klen + 1);
        found = out[0] != 0;
    }
    fclose(f);
    return found;
}

/* Runs main of both modules on one pseudo-random input; returns the largest difference. */
static double max_diff(const ir_module *a, const ir_module *b, int64_t h, int64_t w) {
    gr_diag diag;
    gr_diag_clear(&diag);
    rt_exec_t *xa = NULL, *xb = NULL;
    cr_assert_eq(rt_exec_new(a, "main", &xa, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(rt_exec_new(b, "main", &xb, &diag), GR_OK, "%s", diag.msg);
    int64_t shape[4] = {1, 3, h, w};
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 4, shape);
    uint32_t seed = 7;
    for (int64_t k = 0; k < rt_tensor_numel(t); k++) {
        seed = seed * 1103515245u + 12345u;
        rt_tensor_set_f64(t, k, (double)((seed >> 8) % 2000) / 1000.0 - 1.0);
    }
    rt_value in = rt_value_tensor(t), ra = {0}, rb = {0};
    cr_assert_eq(rt_exec_run(xa, &in, 1, &ra, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(rt_exec_run(xb, &in, 1, &rb, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(ra.kind, RT_VAL_TENSOR);
    cr_assert_eq(rb.kind, RT_VAL_TENSOR);
    cr_assert(rt_tensor_same_shape(ra.u.t, rb.u.t));
    double worst = 0;
    for (int64_t k = 0; k < rt_tensor_numel(ra.u.t); k++) {
        double d = rt_tensor_get_f64(ra.u.t, k) - rt_tensor_get_f64(rb.u.t, k);
        if (d < 0) d = -d;
        if (!(d <= worst)) worst = d;
    }
    rt_value_clear(&ra);
    rt_value_clear(&rb);
    rt_value_clear(&in);
    rt_exec_free(xa);
    rt_exec_free(xb);
    return worst;
}

static void ppocr(const char *key, int64_t h, int64_t w, bool numeric) {
    char path[4096];
    struct stat st;
    if (!models_env(key, path, sizeof(path)) || stat(path, &st) != 0)
        cr_skip("model cache absent (%s): run scripts/fetch_models.sh", key);
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag diag;
    gr_diag_clear(&diag);
    onnx_input_shape shape = {.name = "x", .ndim = 4, .dims = {1, 3, h, w}};
    onnx_import_opts opts = {.shapes = &shape, .nshapes = 1};
    ir_module *m = NULL, *out = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, &opts, &m, &diag), GR_OK, "%s", diag.msg);
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), pc, m, &out, &diag), GR_OK, "%s", diag.msg);
    ir_pass_ctx_free(pc);
    cr_assert_neq(out, m, "the pipeline changed nothing");
    uint32_t nlost = 0;
    const char **lost = ir_lost_layers(m, out, &nlost);
    cr_expect_eq(nlost, 0, "%s: lost layer '%s' (and %u more)", key, nlost ? lost[0] : "", nlost ? nlost - 1 : 0);
    free(lost);
    lost = ir_lost_outputs(m, out, &nlost);
    cr_expect_eq(nlost, 0, "%s: lost the output mark of '%s' (and %u more)", key, nlost ? lost[0] : "", nlost ? nlost - 1 : 0);
    free(lost);
    if (numeric) {
        double d = max_diff(m, out, h, w);
        fprintf(stderr, "%s: default pipeline vs imported model: max abs difference %g\n", key, d);
        cr_expect(d < 1e-4, "%s: the optimized model differs by %g", key, d);
    }
    ir_ctx_free(ctx);
}

Test(pass_models, ppocr_det_default_pipeline, .timeout = 60) { ppocr("GRAFT_MODEL_DET", 640, 640, false); }
Test(pass_models, ppocr_rec_default_pipeline, .timeout = 60) { ppocr("GRAFT_MODEL_REC", 48, 320, false); }
/* cls is small enough to run twice through the reference executor. */
Test(pass_models, ppocr_cls_default_pipeline, .timeout = 120) { ppocr("GRAFT_MODEL_CLS", 48, 192, true); }
