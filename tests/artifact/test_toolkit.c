/* deploy/toolkit.h, the calls the Python package is built on: backends, layers and signatures
 * as JSON, passes by name, the partition with its report, diff and the explorer document, the
 * primitive profiler, and onnx_model_io_names. Each result is read back and checked against
 * what the model says (tests/golden/inspect/conv_host_conv.relax: two dnnl regions around a
 * host cumsum). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/toolkit.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/text/parser.h"

#define MODEL "tests/golden/inspect/conv_host_conv.relax"
#define ONNX_ADD "/usr/share/libonnx-testdata/data/node/test_add/model.onnx"

static json_t *parse_json(char *s) {
    cr_assert(s, "no JSON returned");
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    cr_assert(j, "not JSON: %s", e.text);
    free(s);
    return j;
}

static ir_module *load(ir_ctx_t *ctx) {
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_file(ctx, MODEL, &m, &d), GR_OK, "%s", d.msg);
    return m;
}

static bool has_string(json_t *arr, const char *s) {
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) if (json_is_string(x) && strcmp(json_string_value(x), s) == 0) return true;
    return false;
}

Test(toolkit, backends_with_options_and_patterns) {
    json_t *all = parse_json(graft_backends_json());
    size_t i;
    json_t *b;
    bool dnnl = false;
    json_array_foreach(all, i, b) {
        if (strcmp(json_string_value(json_object_get(b, "name")), "dnnl") != 0) continue;
        dnnl = true;
        json_t *o, *opts = json_object_get(b, "options");
        size_t k;
        bool threads = false;
        json_array_foreach(opts, k, o) threads |= strcmp(json_string_value(json_object_get(o, "name")), "threads") == 0 &&
                                                  strcmp(json_string_value(json_object_get(o, "type")), "int") == 0;
        cr_expect(threads, "dnnl.threads (int) is listed");
        cr_expect(has_string(json_object_get(b, "patterns"), "dnnl.conv2d_bias_relu"));
    }
    cr_expect(dnnl);
    json_decref(all);
}

Test(toolkit, layers_in_binding_order_and_signature) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = load(ctx);
    json_t *layers = parse_json(graft_module_layers_json(m));
    const char *want[] = {"conv1", "relu1", "cumsum", "conv2", "act2", "residual"};
    cr_assert_eq(json_array_size(layers), 6);
    for (size_t i = 0; i < 6; i++) cr_expect_str_eq(json_string_value(json_array_get(layers, i)), want[i]);
    json_decref(layers);
    json_t *sig = parse_json(graft_module_signature_json(m));
    json_t *in0 = json_array_get(json_object_get(sig, "inputs"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(in0, "name")), "x");
    cr_expect_str_eq(json_string_value(json_object_get(in0, "dtype")), "float32");
    cr_expect_eq(json_integer_value(json_array_get(json_object_get(in0, "shape"), 1)), 4);
    cr_expect_eq(json_array_size(json_object_get(sig, "inputs")), 4);
    cr_expect_eq(json_array_size(json_object_get(sig, "outputs")), 1);
    json_decref(sig);
    ir_ctx_free(ctx);
}

Test(toolkit, symbolic_dims_print_as_text) {
    ir_ctx_t *ctx = ir_ctx_new();
    const char *text = "@I.ir_module\nclass Module:\n    @R.function\n"
                       "    def main(x: R.Tensor((\"n\", 4), dtype=\"float32\")):\n"
                       "        with R.dataflow():\n"
                       "            a = R.nn.relu(x)\n"
                       "            R.output(a)\n"
                       "        return a\n";
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "sym.relax", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    json_t *sig = parse_json(graft_module_signature_json(m));
    json_t *shape = json_object_get(json_array_get(json_object_get(sig, "inputs"), 0), "shape");
    cr_expect_str_eq(json_string_value(json_array_get(shape, 0)), "n");
    cr_expect_eq(json_integer_value(json_array_get(shape, 1)), 4);
    json_decref(sig);
    ir_ctx_free(ctx);
}

Test(toolkit, passes_by_name) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = load(ctx), *out = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_expect_eq(graft_module_optimize(m, "Normalize,DeadCodeElimination", -1, &out, &d), GR_OK, "%s", d.msg);
    cr_expect(out);
    gr_diag_clear(&d);
    cr_expect_eq(graft_module_optimize(m, "Normalize,NoSuchPass", -1, &out, &d), GR_ERR_NOT_FOUND);
    cr_expect(strstr(d.msg, "NoSuchPass"), "%s", d.msg);
    ir_ctx_free(ctx);
}

Test(toolkit, partition_report_names_regions_and_host_ops) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = load(ctx), *part = NULL;
    char *report = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(graft_module_partition(ctx, m, (const char *[]){"dnnl"}, 1, NULL, NULL, &part, &report, &d), GR_OK,
                 "%s", d.msg);
    json_t *r = parse_json(report);
    cr_expect_eq(json_array_size(json_object_get(r, "regions")), 2);
    json_t *host = json_object_get(r, "host");
    cr_assert_eq(json_array_size(host), 1);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(host, 0), "op")), "relax.cumsum");
    cr_expect(*json_string_value(json_object_get(json_array_get(host, 0), "reason")), "a host op says why");
    json_decref(r);
    gr_diag_clear(&d);
    cr_expect_eq(graft_module_partition(ctx, m, (const char *[]){"nosuch"}, 1, NULL, NULL, &part, &report, &d),
                 GR_ERR_NOT_FOUND);
    cr_expect(strstr(d.msg, "nosuch"), "%s", d.msg);
    ir_ctx_free(ctx);
}

static bool bump_relu1(const char *layer, rt_tensor *t, void *user) {
    if (strcmp(layer, "relu1") != 0) return false;
    ((float *)rt_tensor_data(t))[0] += 10.0f;
    ++*(int *)user;
    return true;
}

static void inputs_for(const ir_module *m, rt_value *in, uint32_t *n) {
    json_t *sig = parse_json(graft_module_signature_json(m));
    json_t *ins = json_object_get(sig, "inputs");
    *n = (uint32_t)json_array_size(ins);
    uint32_t s = 7;
    for (uint32_t p = 0; p < *n; p++) {
        json_t *shape = json_object_get(json_array_get(ins, p), "shape");
        int64_t dims[RT_MAX_NDIM];
        for (size_t k = 0; k < json_array_size(shape); k++) dims[k] = json_integer_value(json_array_get(shape, k));
        rt_tensor *t = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, (int32_t)json_array_size(shape), dims);
        for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
            s = s * 1664525u + 1013904223u;
            ((float *)rt_tensor_data(t))[i] = (float)((s >> 8) / 16777216.0 * 2.0 - 1.0);
        }
        in[p] = rt_value_tensor(t);
    }
    json_decref(sig);
}

Test(toolkit, diff_finds_the_perturbed_layer) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = load(ctx);
    rt_value in[4];
    uint32_t n;
    inputs_for(m, in, &n);
    int hits = 0;
    graft_inspect_opts o = {.diff = true, .rtol = 1e-3, .atol_scale = 1e-5, .perturb = bump_relu1, .perturb_user = &hits};
    char *diff = NULL, *doc = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(graft_module_inspect(ctx, m, (const char *[]){"dnnl"}, 1, NULL, &o, in, n, &diff, &doc, &d), GR_OK,
                 "%s", d.msg);
    cr_expect_eq(hits, 1);
    json_t *dj = parse_json(diff), *docj = parse_json(doc);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(dj, "first_divergence"), "name")), "relu1");
    cr_expect_eq(json_array_size(json_object_get(docj, "regions")), 2);
    cr_expect_eq(json_array_size(json_object_get(docj, "layers")), 6);
    json_decref(dj);
    json_decref(docj);
    /* without the perturbation every layer is within tolerance */
    o.perturb = NULL;
    gr_diag_clear(&d);
    cr_assert_eq(graft_module_inspect(ctx, m, (const char *[]){"dnnl"}, 1, NULL, &o, in, n, &diff, NULL, &d), GR_OK,
                 "%s", d.msg);
    dj = parse_json(diff);
    cr_expect(json_is_null(json_object_get(dj, "first_divergence")) || !json_object_get(dj, "first_divergence"));
    json_decref(dj);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    ir_ctx_free(ctx);
}

typedef struct prims {
    int n;
    bool conv1;
} prims;

static void on_prim(const rt_prim_event *e, void *user) {
    prims *p = user;
    p->n++;
    for (uint32_t i = 0; i < e->info->nlayers; i++)
        p->conv1 |= strcmp(e->info->layers[i], "conv1") == 0 && e->info->kind && e->info->impl;
}

Test(toolkit, primitive_profiler_reports_layers) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = load(ctx), *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(graft_module_partition(ctx, m, (const char *[]){"dnnl"}, 1, NULL, NULL, &part, NULL, &d), GR_OK, "%s",
                 d.msg);
    uint8_t *buf = NULL;
    size_t len = 0;
    graft_model *gm = NULL;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    json_t *sig = parse_json(graft_model_signature_json(gm));
    cr_expect_eq(json_array_size(json_object_get(sig, "outputs")), 1);
    json_decref(sig);
    rt_value in[4], out = {0};
    uint32_t n;
    inputs_for(m, in, &n);
    prims p = {0};
    graft_model_set_prim_profiler(gm, on_prim, &p);
    cr_expect_eq(graft_model_run(gm, in, n, &out, &d), GR_OK, "%s", d.msg);
    graft_model_set_prim_profiler(gm, NULL, NULL);
    cr_expect(p.n >= 2 && p.conv1, "%d primitives, conv1 among their layers: %d", p.n, p.conv1);
    int seen = p.n;
    rt_value_clear(&out);
    cr_expect_eq(graft_model_run(gm, in, n, &out, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(p.n, seen, "no events once the profiler is off");
    rt_value_clear(&out);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    graft_model_free(gm);
    ir_ctx_free(ctx);
}

Test(toolkit, onnx_io_names) {
    gr_diag d;
    gr_diag_clear(&d);
    json_t *io = parse_json(onnx_model_io_names(ONNX_ADD, &d));
    cr_expect(has_string(json_object_get(io, "inputs"), "x") && has_string(json_object_get(io, "inputs"), "y"));
    cr_expect_eq(json_array_size(json_object_get(io, "outputs")), 1);
    json_decref(io);
    cr_expect_null(onnx_model_io_names(MODEL, &d), "a text module is not an ONNX model");
    cr_expect_neq(d.code, GR_OK);
}
