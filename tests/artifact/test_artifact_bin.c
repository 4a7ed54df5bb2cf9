/* The artifact's module in binary (deploy/artifact_ir.c): it gives back the module the build
 * had, the loader reads it and never the text, and a damaged stream is a clear error. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "deploy/artifact_impl.h"
#include "deploy/graft_model.h"
#include "graft/graft_artifact.pb-c.h"
#include "ir/equal.h"
#include "ir/text/parser.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "tests/compare_util.h"

/* Every golden module that parses: encoded, decoded in a context of its own, it is the same
 * module, spans and names included. */
Test(artifact_bin, golden_modules_round_trip) {
    glob_t g;
    cr_assert_eq(glob("tests/golden/*.relax", 0, NULL, &g), 0);
    cr_assert_eq(glob("tests/golden/byoc/*.relax", GLOB_APPEND, NULL, &g), 0);
    uint32_t checked = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        ir_ctx_t *ctx = ir_ctx_new(), *ctx2 = ir_ctx_new();
        ir_module *m = NULL, *back = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        if (ir_parse_file(ctx, g.gl_pathv[i], &m, &d) == GR_OK) {
            uint8_t *bin = NULL;
            size_t len = 0;
            rt_tensor **cs = NULL;
            uint32_t nc = 0;
            cr_assert_eq(gr_art_ir_encode(m, &bin, &len, &cs, &nc, &d), GR_OK, "%s: %s", g.gl_pathv[i], d.msg);
            cr_assert_eq(gr_art_ir_decode(ctx2, bin, len, cs, nc, &back, &d), GR_OK, "%s: %s", g.gl_pathv[i], d.msg);
            char why[512] = "";
            cr_assert(ir_module_struct_equal_explain(m, back, IR_EQ_SPANS | IR_EQ_NAMES, why, sizeof why), "%s: %s",
                      g.gl_pathv[i], why);
            /* every proper prefix is refused */
            for (size_t cut = 0; cut < len; cut += len / 29 + 1) {
                ir_ctx_t *c3 = ir_ctx_new();
                ir_module *part = NULL;
                gr_diag_clear(&d);
                cr_assert_neq(gr_art_ir_decode(c3, bin, cut, cs, nc, &part, &d), GR_OK, "%s cut at %zu", g.gl_pathv[i], cut);
                cr_assert(strstr(d.msg, "artifact module (binary"), "%s", d.msg);
                ir_ctx_free(c3);
            }
            free(bin);
            free(cs);
            checked++;
        }
        ir_ctx_free(ctx2);
        ir_ctx_free(ctx);
    }
    globfree(&g);
    cr_assert_geq(checked, 30, "%u golden modules", checked);
}

static const char *k_host =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 4), dtype=\"float32\")) -> R.Tensor((1, 4), dtype=\"float32\"):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((1, 4), dtype=\"float32\") = R.add(x, metadata[\"relax.expr.Constant\"][0])  # span: \"add1\"\n"
    "            lv1: R.Tensor((1, 4), dtype=\"float32\") = R.nn.softmax(lv, axis=-1)  # span: \"sm\"\n"
    "            gv: R.Tensor((1, 4), dtype=\"float32\") = R.multiply(lv1, metadata[\"relax.expr.Constant\"][1])\n"
    "            R.output(gv)\n"
    "        return gv\n"
    "\n"
    "metadata = {\"relax.expr.Constant\": [\n"
    "    R.const_data(\"float32\", (1, 4), \"AACAPwAAAEAAAEBAAACAQA==\"),\n"
    "    R.const_data(\"float32\", (4,), \"AAAAPwAAAD8AAAA/AAAAPw==\"),\n"
    "]}\n";

static Graft__ArtifactBody *body_of(const uint8_t *buf, size_t len) {
    gr_art_header h;
    cr_assert(gr_art_header_read(buf, len, &h));
    Graft__ArtifactBody *b = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    cr_assert_not_null(b);
    return b;
}

/* The file with body b (re-packed) in place of its own. */
static uint8_t *with_body(const uint8_t *buf, size_t len, const Graft__ArtifactBody *b, size_t *out_len) {
    size_t n = graft__artifact_body__get_packed_size(b);
    uint8_t *p = malloc(n + 1);
    graft__artifact_body__pack(b, p);
    uint8_t *o = gr_art_with_body(buf, len, p, n, out_len);
    free(p);
    cr_assert_not_null(o);
    return o;
}

/* Host constants travel in the constants section, the loader reads the binary module (a body
 * whose text is garbage still loads and runs the same), and a body without it, or with it cut
 * short, is refused by name. */
Test(artifact_bin, loader_reads_the_binary_module_not_the_text) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "h.relax", k_host, strlen(k_host), &m, &d), GR_OK, "%s", d.msg);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(m, &buf, &len, &d), GR_OK, "%s", d.msg);
    int64_t sx[2] = {1, 4};
    rt_tensor *xt = rt_tensor_new(IR_DTYPE_F32, 2, sx);
    float *xp = rt_tensor_data(xt);
    for (int i = 0; i < 4; i++) xp[i] = 0.25f * (float)i - 0.3f;
    rt_value in = rt_value_tensor(xt), ref = {0};
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, &in, 1, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);
    ir_ctx_free(ctx);

    Graft__ArtifactBody *b = body_of(buf, len);
    cr_assert(b->has_module_bin && b->module_bin.len > 4);
    cr_assert_geq(b->n_host_consts, 1, "the module's constants are in the section");
    for (size_t i = 0; i < b->n_host_consts; i++)
        cr_assert(b->host_consts[i]->has_offset && b->host_consts[i]->offset % GR_ART_ALIGN == 0);
    cr_assert(b->module_text && strstr(b->module_text, "R.nn.softmax"), "the text stays for inspection");

    char *text = b->module_text;
    b->module_text = (char *)"this is not Relax";
    size_t n2;
    uint8_t *b2 = with_body(buf, len, b, &n2);
    b->module_text = text;
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(b2, n2, &gm, &d), GR_OK, "%s", d.msg);
    rt_value got = {0};
    cr_assert_eq(graft_model_run(gm, &in, 1, &got, &d), GR_OK, "%s", d.msg);
    tc_expect_tensor(got.u.t, ref.u.t, (gr_cmp_opts){.atol = 1e-6, .rtol = 1e-6}, "garbage text, binary module");
    rt_value_clear(&got);
    graft_model_free(gm);
    free(b2);

    /* no binary module */
    b->has_module_bin = 0;
    b2 = with_body(buf, len, b, &n2);
    gr_diag_clear(&d);
    cr_assert_neq(graft_model_load_buffer(b2, n2, &gm, &d), GR_OK);
    cr_assert(strstr(d.msg, "artifact has no module"), "%s", d.msg);
    free(b2);
    b->has_module_bin = 1;

    /* cut short, or with a byte changed: an error or a model, never a crash */
    size_t full = b->module_bin.len;
    for (size_t cut = 0; cut < full; cut += full / 17 + 1) {
        b->module_bin.len = cut;
        b2 = with_body(buf, len, b, &n2);
        gr_diag_clear(&d);
        cr_assert_neq(graft_model_load_buffer(b2, n2, &gm, &d), GR_OK, "cut at %zu", cut);
        cr_assert(strstr(d.msg, "artifact module (binary"), "%s", d.msg);
        free(b2);
    }
    b->module_bin.len = full;
    for (size_t k = 4; k < full; k += 3) {
        b->module_bin.data[k] ^= 0x41;
        b2 = with_body(buf, len, b, &n2);
        gm = NULL;
        if (graft_model_load_buffer(b2, n2, &gm, &d) == GR_OK) graft_model_free(gm);
        b->module_bin.data[k] ^= 0x41;
        free(b2);
    }

    /* a version 2 file (the module as text only) is named */
    uint8_t *v2 = malloc(len);
    memcpy(v2, buf, len);
    uint32_t v = 2;
    memcpy(v2 + 8, &v, 4);
    gr_art_reseal(v2, len);
    gr_diag_clear(&d);
    cr_assert_neq(graft_model_load_buffer(v2, len, &gm, &d), GR_OK);
    cr_assert(strstr(d.msg, "version 2, this runtime reads version 5 (rebuild it"), "%s", d.msg);
    free(v2);

    graft__artifact_body__free_unpacked(b, NULL);
    rt_value_clear(&in);
    rt_value_clear(&ref);
    free(buf);
}

/* A json module's engine is stored beside its blob (loading parses the blob once); one whose
 * engine is missing is refused, not run on the reference engine in its place. */
Test(artifact_bin, json_modules_name_their_engine) {
    static const char *k_conv =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 3, 8, 8), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")) -> R.Tensor((1, 4, 6, 6), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv: R.Tensor((1, 4, 6, 6), dtype=\"float32\") = R.nn.conv2d(x, w)\n"
        "            gv: R.Tensor((1, 4, 6, 6), dtype=\"float32\") = R.nn.relu(lv)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *part = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "c.relax", k_conv, strlen(k_conv), &m, &d), GR_OK, "%s", d.msg);
    const char *be = "json";
    cr_assert_eq(byoc_partition_for_backends(ctx, m, &be, 1, &part, &d), GR_OK, "%s", d.msg);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    Graft__ArtifactBody *b = body_of(buf, len);
    cr_assert_eq(b->n_external, 1);
    cr_assert(b->external[0]->engine && !strcmp(b->external[0]->engine, "json"), "%s",
              b->external[0]->engine ? b->external[0]->engine : "(none)");
    graft_model *gm;
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    graft_model_free(gm);
    char *eng = b->external[0]->engine;
    b->external[0]->engine = NULL;
    size_t n2;
    uint8_t *b2 = with_body(buf, len, b, &n2);
    b->external[0]->engine = eng;
    gr_diag_clear(&d);
    cr_assert_neq(graft_model_load_buffer(b2, n2, &gm, &d), GR_OK);
    cr_assert(strstr(d.msg, "does not name its engine"), "%s", d.msg);
    free(b2);
    graft__artifact_body__free_unpacked(b, NULL);
    free(buf);
}
