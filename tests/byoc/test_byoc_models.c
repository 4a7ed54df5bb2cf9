/* PP-OCRv4 det / rec / cls partitioned for the json backend: no frontend layer is lost (every
 * layer of the imported module appears in the span of some host expression or call_dps_packed),
 * the whole graph is offloaded, and the outputs equal the reference path's. Skipped when
 * scripts/fetch_models.sh has not cached the models. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "ir/wellformed.h"
#include "runtime/exec/executor.h"
#include "tests/compare_util.h"

static bool model_path(const char *key, char *out, size_t n) {
    const char *v = getenv(key);
    if (v && *v) {
        snprintf(out, n, "%s", v);
        return true;
    }
    FILE *f = fopen("build/third_party/models.env", "r");
    if (!f) return false;
    char line[4096];
    size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || line[klen] != '=') continue;
        line[strcspn(line, "\r\n")] = '\0';
        snprintf(out, n, "%s", line + klen + 1);
        found = out[0] != '\0';
    }
    fclose(f);
    FILE *m = found ? fopen(out, "rb") : NULL;
    if (m) fclose(m);
    return m != NULL;
}

static void check_model(const char *key, int64_t h, int64_t w) {
    char path[4096];
    if (!model_path(key, path, sizeof path)) cr_skip_test("%s not cached (scripts/fetch_models.sh)", key);
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    onnx_input_shape shape = {.name = "x", .ndim = 4, .dims = {1, 3, h, w}};
    onnx_import_opts o = {.shapes = &shape, .nshapes = 1};
    ir_module *m = NULL, *p = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, &o, &m, &d), GR_OK, "%s", d.msg);
    const char *json = "json";
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {0};
    po.notes = &notes;
    cr_assert_eq(byoc_partition(ctx, m, &json, 1, &po, &p, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_wellformed_check(p, &d), GR_OK, "%s", d.msg);
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(m, p, &nl);
    cr_expect_eq(nl, 0, "%s: %u layers lost, first %s", key, nl, nl ? lost[0] : "");
    free((void *)lost);
    /* everything is offloaded: static shapes and every op has a json pattern */
    json_t *r = byoc_report_json(ctx, po.after_merge, &json, 1, &notes);
    json_t *host = json_object_get(r, "host");
    cr_expect_eq(json_array_size(host), 0, "%s: %zu host ops, first %s (%s)", key, json_array_size(host),
                 json_string_value(json_object_get(json_array_get(host, 0), "op")),
                 json_string_value(json_object_get(json_array_get(host, 0), "reason")));
    json_decref(r);
    cr_expect_gt(rt_module_count(p), 0);
    /* same outputs as the reference path */
    rt_exec_t *x1 = NULL, *x2 = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &x1, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_new(p, "main", &x2, &d), GR_OK, "%s", d.msg);
    int64_t dims[4] = {1, 3, h, w};
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 4, dims);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) rt_tensor_set_f64(t, i, sin(0.37 * (double)i));
    rt_value in = rt_value_tensor(t), a = {0}, b = {0};
    cr_assert_eq(rt_exec_run(x1, &in, 1, &a, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x2, &in, 1, &b, &d), GR_OK, "%s", d.msg);
    const rt_value *va = a.kind == RT_VAL_TUPLE ? &a.u.tuple.items[0] : &a;
    const rt_value *vb = b.kind == RT_VAL_TUPLE ? &b.u.tuple.items[0] : &b;
    cr_assert_eq(va->kind, RT_VAL_TENSOR);
    cr_assert_eq(vb->kind, RT_VAL_TENSOR);
    /* the same reference kernels run in the same order: bit-identical */
    tc_expect_tensor(vb->u.t, va->u.t, (gr_cmp_opts){0}, "%s: json path against the reference", key);
    rt_value_clear(&in);
    rt_value_clear(&a);
    rt_value_clear(&b);
    rt_exec_free(x1);
    rt_exec_free(x2);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

Test(byoc_models, det, .timeout = 120) { check_model("GRAFT_MODEL_DET", 320, 320); }
Test(byoc_models, rec, .timeout = 120) { check_model("GRAFT_MODEL_REC", 48, 320); }
Test(byoc_models, cls, .timeout = 120) { check_model("GRAFT_MODEL_CLS", 48, 192); }
