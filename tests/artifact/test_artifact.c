/* graft_model artifacts: build -> load -> run gives the reference executor's outputs; damaged,
 * truncated or wrong-version files are clear errors. */
#include "runtime/kernels/const_eval.h"
#include "tests/models_env.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deploy/artifact_impl.h"
#include "graft/graft_artifact.pb-c.h"
#include "ir/text/parser.h"
#include "runtime/exec/executor.h"
#include "deploy/graft_model.h"
#include "tests/compare_util.h"

static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")) -> R.Tuple(R.Tensor((1, 8, 14, 14), dtype=\"float32\"), R.Tensor((1, 8, 14, 14), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            lv1: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.add(lv, b)  # span: \"bn1\"\n"
    "            lv2: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.nn.relu(lv1)  # span: \"relu1\"!\n"
    "            lv3: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.sigmoid(lv2)  # span: \"act2\"\n"
    "            lv4: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.multiply(lv3, lv2)  # span: \"act2\"!\n"
    "            gv: R.Tuple(R.Tensor((1, 8, 14, 14), dtype=\"float32\"), R.Tensor((1, 8, 14, 14), dtype=\"float32\")) = (lv4, lv2)\n"
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

static void build(uint8_t **buf, size_t *len, rt_value *in, rt_value *ref) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_build(m, buf, len, &d), GR_OK, "%s", d.msg);
    if (in) {
        int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
        in[0] = rt_value_tensor(rand_tensor(4, sx, 1));
        in[1] = rt_value_tensor(rand_tensor(4, sw, 2));
        in[2] = rt_value_tensor(rand_tensor(4, sb, 3));
        rt_exec_t *x;
        cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_exec_run(x, in, 3, ref, &d), GR_OK, "%s", d.msg);
        rt_exec_free(x);
    }
    ir_ctx_free(ctx);  /* the artifact stands alone */
}

Test(artifact, build_load_run_matches_reference) {
    uint8_t *buf;
    size_t len;
    rt_value in[3], ref = {0}, got = {0};
    build(&buf, &len, in, &ref);
    graft_model *gm;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_num_inputs(gm), 3);
    cr_assert_eq(graft_model_num_outputs(gm), 2);
    for (uint32_t k = 0; k < 2; k++) {
        char name[16];
        snprintf(name, sizeof name, "output_%u", k);
        cr_assert_str_eq(graft_model_output_name(gm, k), name);
        int64_t shape[4];
        const ir_sinfo *s = graft_model_output_sinfo(gm, k);
        cr_assert(s && s->kind == IR_SINFO_TENSOR && s->ndim == 4 && ir_sinfo_static_shape(s, shape));
        cr_assert(shape[0] == 1 && shape[1] == 8 && shape[2] == 14 && shape[3] == 14);
    }
    cr_assert_null(graft_model_output_sinfo(gm, 2));
    cr_assert_eq(graft_model_run(gm, in, 3, &got, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(got.kind, RT_VAL_TUPLE);
    for (uint32_t k = 0; k < 2; k++)
        tc_expect_tensor(got.u.tuple.items[k].u.t, ref.u.tuple.items[k].u.t, (gr_cmp_opts){.atol = 1e-6, .rtol = 1e-6},
                         "out %u", k);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_eq(info.nhost, 2, "{add, relu} and {sigmoid, multiply}: %u", info.nhost);
    cr_assert_gt(info.host_object_bytes, 0);
    bool found = false;
    for (uint32_t r = 0; r < graft_model_num_regions(gm); r++) {
        const char *name, *kind, *layers;
        graft_model_region(gm, r, &name, &kind, &layers);
        found |= strcmp(kind, "host") == 0 && strstr(layers, "bn1") && strstr(layers, "relu1");
    }
    cr_assert(found, "span table maps the fused kernel to bn1 and relu1");
    rt_value_clear(&got);
    graft_model_free(gm);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    free(buf);
}

static void expect_error(const uint8_t *buf, size_t len, const char *needle) {
    graft_model *gm = (graft_model *)0x1;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_neq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK);
    cr_assert_null(gm);
    cr_assert(strstr(d.msg, needle), "message '%s' lacks '%s'", d.msg, needle);
}

Test(artifact, damaged_files_are_clear_errors) {
    uint8_t *buf;
    size_t len;
    build(&buf, &len, NULL, NULL);
    /* truncated at many lengths */
    for (size_t cut = 0; cut < len; cut += len / 13 + 1) {
        graft_model *gm = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_neq(graft_model_load_buffer(buf, cut, &gm, &d), GR_OK, "cut at %zu loads", cut);
        cr_assert_null(gm);
    }
    expect_error(buf, len / 2, "");
    /* one flipped byte in the body: checksum mismatch */
    uint8_t *bad = malloc(len);
    memcpy(bad, buf, len);
    bad[len - 100] ^= 0x5a;
    expect_error(bad, len, "checksum");
    /* garbage */
    memset(bad, 0xff, len);
    expect_error(bad, len, "artifact");
    free(bad);
    /* another format version */
    uint8_t *b2 = malloc(len);
    memcpy(b2, buf, len);
    uint32_t v = 99;
    memcpy(b2 + 8, &v, 4);
    gr_art_reseal(b2, len);
    expect_error(b2, len, "version 99");
    free(b2);
    /* a version 1 file (one protobuf message) is named as such */
    Graft__Artifact v1;
    graft__artifact__init(&v1);
    v1.format_version = 1;
    v1.body.data = buf + GR_ART_HEADER;
    v1.body.len = 16;
    size_t n1 = graft__artifact__get_packed_size(&v1);
    uint8_t *b1 = malloc(n1);
    graft__artifact__pack(&v1, b1);
    expect_error(b1, n1, "version 1, this runtime reads version 5");
    free(b1);
    /* a header that claims more bytes than the file has */
    gr_art_header h;
    cr_assert(gr_art_header_read(buf, len, &h));
    h.body_len += 4096;
    uint8_t *b3 = malloc(len);
    memcpy(b3, buf, len);
    gr_art_header_write(b3, &h);
    expect_error(b3, len, "truncated");
    free(b3);
    free(buf);
}

Test(artifact, missing_file_is_an_error) {
    graft_model *gm;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(graft_model_load("/nonexistent/model.graft", &gm, &d), GR_ERR_IO);
    cr_assert(strstr(d.msg, "/nonexistent/model.graft"));
}

#include "byoc/byoc.h"
#include "runtime/exec/plan.h"
#include "backends/llvm/llvm_host.h"

/* BYOC regions (json backend) become R.call_dps_packed into external_mods: the planned executor
 * runs them, and the artifact carries the module blob and its constants. */
Test(artifact, external_modules_round_trip) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    const char *be = "json";
    cr_assert_eq(byoc_partition_for_backends(ctx, m, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    cr_assert_gt(rt_module_count(part), 0);
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    rt_value in[3] = {rt_value_tensor(rand_tensor(4, sx, 1)), rt_value_tensor(rand_tensor(4, sw, 2)),
                      rt_value_tensor(rand_tensor(4, sb, 3))};
    rt_value ref = {0}, got = {0}, got2 = {0};
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 3, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
    /* planned executor on the partitioned module */
    gr_llvm_host *h;
    rt_px *px;
    cr_assert_eq(gr_llvm_host_new(&h, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_px_new(part, "main", gr_llvm_host_lowering(h), &px, &d), GR_OK, "%s", d.msg);
    rt_px_stats st;
    rt_px_get_stats(px, &st);
    cr_assert_gt(st.nextern, 0);
    cr_assert_eq(rt_exec_run(px, in, 3, &got, &d), GR_OK, "%s", d.msg);
    rt_exec_free(px);
    gr_llvm_host_free(h);
    /* artifact */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_run(gm, in, 3, &got2, &d), GR_OK, "%s", d.msg);
    for (uint32_t k = 0; k < 2; k++) {
        const rt_tensor *r = ref.u.tuple.items[k].u.t;
        gr_cmp_opts tol = {.atol = 1e-5, .rtol = 1e-5};
        tc_expect_tensor(got.u.tuple.items[k].u.t, r, tol, "planned out %u", k);
        tc_expect_tensor(got2.u.tuple.items[k].u.t, r, tol, "artifact out %u", k);
    }
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_gt(info.nextern, 0);
    cr_assert_eq(graft_model_num_externals(gm), 1);
    const char *engine;
    graft_model_external(gm, 0, NULL, &engine);
    cr_assert_str_eq(engine, "json");
    graft_model_free(gm);
    free(buf);
    rt_value_clear(&got);
    rt_value_clear(&got2);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
}

/* An object built for CPU features this host lacks is refused at load (no illegal instruction). */
Test(artifact, foreign_cpu_features_are_refused) {
    uint8_t *buf;
    size_t len;
    build(&buf, &len, NULL, NULL);
    gr_art_header hd;
    cr_assert(gr_art_header_read(buf, len, &hd));
    Graft__ArtifactBody *b = graft__artifact_body__unpack(NULL, hd.body_len, buf + hd.body_off);
    cr_assert_not_null(b);
    char *old = b->host_cpu;
    cr_assert(strchr(old, ' '), "host_cpu '%s'", old);
    /* claim every feature this host lacks ("-x" -> "+x") */
    char *cpu = strdup(old);
    bool flipped = false;
    for (char *p = strchr(cpu, ' '); p && *p; p++)
        if (*p == '-' && (p[-1] == ' ' || p[-1] == ',')) *p = '+', flipped = true;
    b->host_cpu = cpu;
    size_t bl = graft__artifact_body__get_packed_size(b);
    uint8_t *bb = malloc(bl);
    graft__artifact_body__pack(b, bb);
    b->host_cpu = old;
    size_t nl;
    uint8_t *nb = gr_art_with_body(buf, len, bb, bl, &nl);
    graft_model *gm = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = graft_model_load_buffer(nb, nl, &gm, &d);
    if (flipped) {
        cr_assert_eq(st, GR_ERR_UNSUPPORTED, "%s", d.msg);
        cr_assert(strstr(d.msg, "CPU feature"), "%s", d.msg);
    } else {
        cr_assert_eq(st, GR_OK, "%s", d.msg); /* this CPU has every feature LLVM knows */
    }
    graft_model_free(gm);
    free(nb);
    free(bb);
    free(cpu);
    graft__artifact_body__free_unpacked(b, NULL);
    free(buf);
}

/* A dnnl region loads back onto oneDNN (every JSON-graph module has the interface kind "json";
 * the engine is the blob's own kind), not onto the reference kernels. */
Test(artifact, dnnl_regions_load_on_onednn) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    const char *be = "dnnl";
    cr_assert_eq(byoc_partition_for_backends(ctx, m, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    rt_value in[3] = {rt_value_tensor(rand_tensor(4, sx, 1)), rt_value_tensor(rand_tensor(4, sw, 2)),
                      rt_value_tensor(rand_tensor(4, sb, 3))};
    rt_value ref = {0}, got = {0};
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 3, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    cr_assert_geq(graft_model_num_externals(gm), 1);
    for (uint32_t i = 0; i < graft_model_num_externals(gm); i++) {
        const char *name, *engine;
        graft_model_external(gm, i, &name, &engine);
        cr_assert_str_eq(engine, "dnnl_json", "module '%s' loaded on '%s'", name, engine);
    }
    cr_assert_eq(graft_model_run(gm, in, 3, &got, &d), GR_OK, "%s", d.msg);
    for (uint32_t k = 0; k < 2; k++)
        tc_expect_tensor(got.u.tuple.items[k].u.t, ref.u.tuple.items[k].u.t, (gr_cmp_opts){.atol = 1e-4, .rtol = 1e-4},
                         "out %u", k);
    graft_model_free(gm);
    rt_value_clear(&got);
    rt_value_clear(&ref);
    for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
}

/* ---- PP-OCR through the compiled host path ---- */

#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"


/* import (+ the default pipeline when opt, as graft build) -> artifact -> load -> run, against
 * the reference executor on the imported module: max abs error within 1e-4 (outputs are
 * probabilities / maps in [0, 1]). */
static void ppocr(const char *key, int64_t h, int64_t w, bool opt) {
    char *path = model_path(key);
    struct stat sb;
    if (!path || stat(path, &sb) != 0) {
        free(path);
        cr_skip("%s: model cache absent (scripts/fetch_models.sh)", key);
    }
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    onnx_input_shape sh = {"x", 4, {1, 3, h, w}};
    onnx_import_opts o = {.shapes = &sh, .nshapes = 1};
    ir_module *m = NULL, *built = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, &o, &m, &d), GR_OK, "%s", d.msg);
    built = m;
    if (opt) cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &built, &d), GR_OK, "%s", d.msg);
    int64_t shape[4] = {1, 3, h, w};
    rt_value in = rt_value_tensor(rand_tensor(4, shape, 11)), ref = {0}, got = {0};
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, &in, 1, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(built, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_gt(info.nhost, 10, "%s: %u host kernels", key, info.nhost);
    cr_assert_eq(graft_model_run(gm, &in, 1, &got, &d), GR_OK, "%s", d.msg);
    const rt_tensor *a = got.kind == RT_VAL_TUPLE ? got.u.tuple.items[0].u.t : got.u.t;
    const rt_tensor *b = ref.kind == RT_VAL_TUPLE ? ref.u.tuple.items[0].u.t : ref.u.t;
    tc_expect_tensor(a, b, (gr_cmp_opts){.atol = 1e-4}, "%s: artifact against the reference", key);
    rt_value_clear(&got);
    rt_value_clear(&ref);
    rt_value_clear(&in);
    graft_model_free(gm);
    free(path);
}

Test(artifact_ppocr, cls_matches_reference, .timeout = 60) { ppocr("GRAFT_MODEL_CLS", 48, 192, true); }
Test(artifact_ppocr, rec_matches_reference, .timeout = 120) { ppocr("GRAFT_MODEL_REC", 48, 320, true); }
Test(artifact_ppocr, det_matches_reference_no_opt, .timeout = 300) { ppocr("GRAFT_MODEL_DET", 640, 640, false); }

/* An extern region's single-tensor result is planned like any intermediate (the call is
 * destination-passing: oneDNN writes into the arena), and runs with new inputs stay right. */
Test(artifact, extern_results_live_in_the_arena) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\"), w2: R.Tensor((8, 8, 3, 3), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
        "            lv1 = R.floor(lv0)  # span: \"floor1\"\n"
        "            lv2 = R.nn.conv2d(lv1, w2)  # span: \"conv2\"\n"
        "            lv3 = R.floor(lv2)  # span: \"floor2\"\n"
        "            R.output(lv3)\n"
        "        return lv3\n";
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    const char *be = "dnnl";
    cr_assert_eq(byoc_partition_for_backends(ctx, m, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    free(buf);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_eq(info.nextern, 2);
    cr_assert_eq(info.nplanned, 3, "lv0 and lv2 (extern) and lv1 (host): %u planned", info.nplanned);
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sw2[4] = {8, 8, 3, 3};
    for (uint32_t rep = 0; rep < 3; rep++) {
        rt_value in[3] = {rt_value_tensor(rand_tensor(4, sx, 20 + rep)), rt_value_tensor(rand_tensor(4, sw, 30 + rep)),
                          rt_value_tensor(rand_tensor(4, sw2, 40 + rep))};
        rt_value ref = {0}, got = {0};
        cr_assert_eq(rt_exec_run(x, in, 3, &ref, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(graft_model_run(gm, in, 3, &got, &d), GR_OK, "%s", d.msg);
        const float *a = rt_tensor_data(got.u.t), *b = rt_tensor_data(ref.u.t);
        /* floor of conv outputs: a conv result within rounding of an integer may floor apart */
        int64_t off = 0;
        for (int64_t i = 0; i < rt_tensor_numel(ref.u.t); i++) off += a[i] != b[i];
        cr_assert_leq(off, 2, "run %u: %lld of %lld elements differ", rep, (long long)off,
                      (long long)rt_tensor_numel(ref.u.t));
        rt_value_clear(&got);
        rt_value_clear(&ref);
        for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    }
    rt_exec_free(x);
    graft_model_free(gm);
    ir_ctx_free(ctx);
}

/* bound partitioned for backend be and built into a new temporary file (path: its name, a
 * "/tmp/graft_art_XXXXXX" buffer), with bound's own result on `in` into *ref */
static void build_temp_file(ir_ctx_t *ctx, ir_module *bound, const char *be, const rt_value *in, rt_value *ref, char *path) {
    ir_module *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(byoc_partition_for_backends(ctx, bound, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(bound, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, in, 1, ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(graft_model_build_file(part, path, &d), GR_OK, "%s", d.msg);
}

/* From a file, the artifact is mapped: the region's weights (bound as constants, run by the
 * json backend's reference engine) are laid out 64-byte aligned in a page-aligned section, the
 * model runs as the planned executor does, and a file cut short on disk is refused. */
Test(artifact, file_load_maps_aligned_constants) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *bound = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    rt_tensor *w = rand_tensor(4, sw, 2), *b = rand_tensor(4, sb, 3);
    ir_pass *bind = ir_pass_bind_params_new("main", 2, (const char *[]){"w", "b"}, (rt_tensor *[]){w, b});
    cr_assert_eq(ir_pass_run(bind, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bind);
    rt_value in = rt_value_tensor(rand_tensor(4, sx, 1)), ref = {0}, got = {0};
    char path[] = "/tmp/graft_art_XXXXXX";
    build_temp_file(ctx, bound, "json", &in, &ref, path);
    ir_ctx_free(ctx);
    rt_tensor_release(w);
    rt_tensor_release(b);
    /* the layout */
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    gr_art_header h;
    cr_assert(gr_art_header_read(buf, len, &h));
    cr_assert_eq(h.data_off % GR_ART_PAGE, 0);
    cr_assert_eq(h.body_off, h.data_off + h.data_len, "the body follows the constants");
    cr_assert_eq(h.body_off + h.body_len, len);
    Graft__ArtifactBody *body = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    cr_assert_not_null(body);
    cr_assert_eq(body->n_consts, 2, "both weights are the region's constants");
    for (size_t i = 0; i < body->n_consts; i++) {
        cr_assert(body->consts[i]->has_offset && !body->consts[i]->has_data, "constant %zu is in the section", i);
        cr_assert_eq(body->consts[i]->offset % GR_ART_ALIGN, 0);
    }
    graft__artifact_body__free_unpacked(body, NULL);
    /* load, run */
    graft_model *gm;
    cr_assert_eq(graft_model_load(path, &gm, &d), GR_OK, "%s", d.msg);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    cr_assert_eq(info.file_bytes, len);
    cr_assert_eq(info.const_bytes, (8 * 3 * 3 * 3 + 8) * sizeof(float));
    cr_assert_eq(graft_model_run(gm, &in, 1, &got, &d), GR_OK, "%s", d.msg);
    for (uint32_t k = 0; k < 2; k++)
        tc_expect_tensor(got.u.tuple.items[k].u.t, ref.u.tuple.items[k].u.t, (gr_cmp_opts){.atol = 1e-5, .rtol = 1e-5},
                         "mapped artifact out %u", k);
    graft_model_free(gm);
    /* cut short on disk */
    cr_assert_eq(truncate(path, (off_t)(len - 8)), 0);
    cr_assert_neq(graft_model_load(path, &gm, &d), GR_OK);
    cr_assert(strstr(d.msg, "truncated") && !strcmp(d.file, path), "%s (%s)", d.msg, d.file);
    unlink(path);
    rt_value_clear(&in);
    rt_value_clear(&ref);
    rt_value_clear(&got);
}

/* graft build's check load (gr_art_load_written) prepares the regions to check them and leaves
 * unmade what only a run reads and the file does not store (rt_json_module_check): the 3-D
 * Winograd's transformed weights. Run afterwards, the model prepares again and gives the bits of
 * an ordinary load of the same file; both within the Winograd tolerance of the reference
 * executor (tests/dnnl/test_dnnl_wino.c: 1e-5 of max|ref| + 1e-4 relative). */
static double max_abs_of(const rt_tensor *t) {
    const float *p = rt_tensor_data((rt_tensor *)t);
    double m = 0;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) m = fabs(p[i]) > m ? fabs(p[i]) : m;
    return m;
}

static void count_wino(const rt_prim_event *ev, void *user) {
    if (ev->info && ev->info->impl && strstr(ev->info->impl, "wino")) ++*(int *)user;
}

Test(artifact, check_load_leaves_winograd_weights_unmade) {
    static const char *mod =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 64, 4, 40, 40), dtype=\"float32\"), w: R.Tensor((64, 64, 3, 3, 3), dtype=\"float32\")) -> R.Tensor((1, 64, 4, 40, 40), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv: R.Tensor((1, 64, 4, 40, 40), dtype=\"float32\") = R.nn.conv3d(x, w, strides=[1, 1, 1], padding=[1, 1, 1, 1, 1, 1], dilation=[1, 1, 1], groups=1)  # span: \"conv\"\n"
        "            gv: R.Tensor((1, 64, 4, 40, 40), dtype=\"float32\") = R.nn.relu(lv)  # span: \"relu\"\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *bound = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", mod, strlen(mod), &m, &d), GR_OK, "%s", d.msg);
    int64_t sx[5] = {1, 64, 4, 40, 40}, sw[5] = {64, 64, 3, 3, 3};
    rt_tensor *w = rand_tensor(5, sw, 2);
    float *wp = rt_tensor_data(w);
    for (int64_t i = 0; i < rt_tensor_numel(w); i++) wp[i] *= 0.1f;
    ir_pass *bind = ir_pass_bind_params_new("main", 1, (const char *[]){"w"}, (rt_tensor *[]){w});
    cr_assert_eq(ir_pass_run(bind, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bind);
    rt_value in = rt_value_tensor(rand_tensor(5, sx, 1)), ref = {0}, got[2] = {{0}, {0}};
    char path[] = "/tmp/graft_art_XXXXXX";
    build_temp_file(ctx, bound, "dnnl", &in, &ref, path);
    ir_ctx_free(ctx);
    rt_tensor_release(w);
    int nwino = 0;
    for (int k = 0; k < 2; k++) {
        graft_model *gm;
        cr_assert_eq(k ? gr_art_load_written(path, NULL, &gm, &d) : graft_model_load(path, &gm, &d), GR_OK, "%s", d.msg);
        graft_model_set_prim_profiler(gm, count_wino, &nwino);
        cr_assert_eq(graft_model_run(gm, &in, 1, &got[k], &d), GR_OK, "%s", d.msg);
        graft_model_free(gm);
        tc_expect_tensor(got[k].u.t, ref.u.t, (gr_cmp_opts){.atol = 1e-5 * max_abs_of(ref.u.t), .rtol = 1e-4},
                         "%s", k ? "after the check load" : "ordinary load");
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        cr_expect_eq(nwino, 2, "the convolution ran graft's Winograd after each load (%d)", nwino);
    cr_expect_eq(memcmp(rt_tensor_data(got[0].u.t), rt_tensor_data(got[1].u.t), rt_tensor_nbytes(ref.u.t)), 0,
                 "the check load's model runs as the ordinary load's");
    unlink(path);
    rt_value_clear(&in);
    rt_value_clear(&ref);
    for (int k = 0; k < 2; k++) rt_value_clear(&got[k]);
}

/* A build over an existing artifact: the new file takes the old one's place at once
 * (exchanged, then the old one unlinked), a model that has the old file mapped keeps running on
 * its bytes, and nothing is left beside it. */
static ir_module *bound_module(ir_ctx_t *ctx, uint32_t seed, rt_tensor **w) {
    ir_module *m = NULL, *bound = NULL, *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    int64_t sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    rt_tensor *b = rand_tensor(4, sb, seed + 1);
    *w = rand_tensor(4, sw, seed);
    ir_pass *bind = ir_pass_bind_params_new("main", 2, (const char *[]){"w", "b"}, (rt_tensor *[]){*w, b});
    cr_assert_eq(ir_pass_run(bind, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bind);
    rt_tensor_release(b);
    const char *be = "json";
    cr_assert_eq(byoc_partition_for_backends(ctx, bound, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    return part;
}

Test(artifact, build_over_a_mapped_artifact) {
    char dir[] = "/tmp/graft_art_dir_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.graft", dir);
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    rt_tensor *w[2];
    ir_module *m0 = bound_module(ctx, 2, &w[0]), *m1 = bound_module(ctx, 7, &w[1]);
    int64_t sx[4] = {1, 3, 16, 16};
    rt_value in = rt_value_tensor(rand_tensor(4, sx, 1)), before = {0}, after = {0}, fresh = {0};
    graft_model *old = NULL, *gm = NULL;
    cr_assert_eq(graft_model_build_file(m0, path, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_load(path, &old, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_run(old, &in, 1, &before, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_build_file(m1, path, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_run(old, &in, 1, &after, &d), GR_OK, "the mapped old artifact: %s", d.msg);
    cr_expect_eq(memcmp(rt_tensor_data(before.u.tuple.items[0].u.t), rt_tensor_data(after.u.tuple.items[0].u.t),
                        rt_tensor_nbytes(before.u.tuple.items[0].u.t)), 0, "the old model's bytes changed under it");
    cr_assert_eq(graft_model_load(path, &gm, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(graft_model_run(gm, &in, 1, &fresh, &d), GR_OK, "%s", d.msg);
    cr_expect_neq(memcmp(rt_tensor_data(before.u.tuple.items[0].u.t), rt_tensor_data(fresh.u.tuple.items[0].u.t),
                         rt_tensor_nbytes(before.u.tuple.items[0].u.t)), 0, "the path does not hold the new build");
    DIR *dh = opendir(dir);
    cr_assert_not_null(dh);
    int nfiles = 0;
    for (struct dirent *e; (e = readdir(dh));) {
        if (e->d_name[0] == '.') continue;
        cr_expect_str_eq(e->d_name, "m.graft", "left beside it: %s", e->d_name);
        nfiles++;
    }
    closedir(dh);
    cr_expect_eq(nfiles, 1);
    graft_model_free(old);
    graft_model_free(gm);
    unlink(path);
    rmdir(dir);
    for (int k = 0; k < 2; k++) rt_tensor_release(w[k]);
    rt_value_clear(&in);
    rt_value_clear(&before);
    rt_value_clear(&after);
    rt_value_clear(&fresh);
    ir_ctx_free(ctx);
}
