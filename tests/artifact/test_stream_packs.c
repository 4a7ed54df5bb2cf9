/* A build that prepares its regions as it writes them (byoc_partition_opts.defer_prepare, as
 * `graft build`), each reordered weight streamed to the file as oneDNN makes it, writes the
 * same bytes as the build of a partition prepared beforehand (the weights held in memory), and
 * so does a second build of the same module. Weights stored only prepacked are laid out plain
 * again where the packs were made for another ISA, and refused under another oneDNN. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
#include "tests/artifact/pack_edit.h"
#include "tests/compare_util.h"
#include "tests/models_env.h"

static uint8_t *slurp_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len + 1);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* PP-OCR cls (1x3x48x192) imported into a new *ctx through the default pipeline; the test is
 * skipped without the model. */
static ir_module *cls_module(ir_ctx_t **pctx) {
    char *cls = model_path("GRAFT_MODEL_CLS");
    if (!cls) cr_skip("GRAFT_MODEL_CLS: no model (run scripts/fetch_models.sh)");
    ir_ctx_t *ctx = *pctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    onnx_input_shape sh = {"x", 4, {1, 3, 48, 192}};
    onnx_import_opts io = {&sh, 1, NULL, 0, NULL, 0, false, NULL};
    ir_module *m = NULL, *opt = NULL;
    cr_assert_eq(onnx_import_file(ctx, cls, &io, &m, &d), GR_OK, "%s", d.msg);
    free(cls);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
    return opt;
}

Test(stream_packs, streamed_build_writes_the_prepared_builds_bytes, .timeout = 120) {
    ir_ctx_t *ctx = NULL;
    gr_diag d = {0};
    ir_module *opt = cls_module(&ctx), *held = NULL, *deferred = NULL;
    const char *be[1] = {"dnnl"};
    byoc_partition_opts po = {0};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &held, &d), GR_OK, "%s", d.msg);
    po.defer_prepare = true;
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &deferred, &d), GR_OK, "%s", d.msg);

    uint8_t *a = NULL;
    size_t alen = 0;
    cr_assert_eq(graft_model_build(held, &a, &alen, &d), GR_OK, "%s", d.msg);
    char path[] = "/tmp/graft_stream_packs_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    for (int k = 0; k < 2; k++) { /* a second build of the same module streams its packs again */
        cr_assert_eq(graft_model_build_file(deferred, path, &d), GR_OK, "%s", d.msg);
        size_t blen = 0;
        uint8_t *b = slurp_file(path, &blen);
        graft_model *gm = NULL;
        cr_assert_eq(graft_model_load_buffer(b, blen, &gm, &d), GR_OK, "%s", d.msg);
        graft_model_info in;
        graft_model_get_info(gm, &in);
        cr_assert_gt(in.npacked, 0, "build %d: the streamed build stored no prepacked weights", k);
        graft_model_free(gm);
        cr_assert_eq(blen, alen, "build %d: streamed %zu bytes, held %zu", k, blen, alen);
        size_t at = 0;
        while (at < alen && a[at] == b[at]) at++;
        cr_assert_eq(at, alen, "build %d: the artifacts differ from byte %zu", k, at);
        free(b);
    }
    remove(path);
    free(a);
    ir_ctx_free(ctx);
}

/* every pack edited (at least one), resealed */
static uint8_t *with_packs_edited(const uint8_t *buf, size_t len, pack_edit edit, size_t *out_len) {
    uint32_t n;
    uint8_t *o = tu_packs_edited(buf, len, edit, out_len, &n);
    cr_assert_gt(n, 0, "no prepacked weights to edit");
    return o;
}

static void other_isa(json_t *pk) { tu_pack_other_isa(pk); }
static void other_isa_bad_layout(json_t *pk) {
    other_isa(pk);
    if (json_object_get(pk, "layout")) json_object_set_new(pk, "layout", json_string("00ff"));
}
/* a layout of the right length whose outermost stride points past the pack */
static void other_isa_stride_past_the_end(json_t *pk) {
    other_isa(pk);
    const char *l = json_string_value(json_object_get(pk, "layout"));
    if (!l) return;
    dnnl_memory_desc_t md;
    cr_assert_eq(strlen(l), 2 * sizeof md);
    for (size_t i = 0; i < sizeof md; i++) {
        unsigned v;
        cr_assert_eq(sscanf(l + 2 * i, "%2x", &v), 1);
        ((uint8_t *)&md)[i] = (uint8_t)v;
    }
    int outer = 0;
    for (int d = 1; d < md.ndims; d++)
        if (md.format_desc.blocking.strides[d] > md.format_desc.blocking.strides[outer]) outer = d;
    md.format_desc.blocking.strides[outer] *= 3;
    char hex[2 * sizeof md + 1];
    for (size_t i = 0; i < sizeof md; i++) snprintf(hex + 2 * i, 3, "%02x", ((uint8_t *)&md)[i]);
    json_object_set_new(pk, "layout", json_string(hex));
}
/* made by oneDNN 0.0.1: refused */
static void other_onednn(json_t *pk) { tu_pack_key_replace(pk, "dnnl ", "dnnl 0.0.1 "); }

static gr_status run_model(const uint8_t *buf, size_t len, rt_value *out, graft_model_info *in, gr_diag *d) {
    graft_model *gm = NULL;
    gr_status st = graft_model_load_buffer(buf, len, &gm, d);
    if (st) return st;
    graft_model_get_info(gm, in);
    int64_t sx[4] = {1, 3, 48, 192};
    rt_tensor *xt = rt_tensor_new(IR_DTYPE_F32, 4, sx);
    float *xp = rt_tensor_data(xt);
    for (int64_t i = 0; i < 3 * 48 * 192; i++) xp[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    rt_value x = rt_value_tensor(xt);
    st = graft_model_run(gm, &x, 1, out, d);
    rt_value_clear(&x);
    graft_model_free(gm);
    return st;
}

/* PP-OCR cls's convolution weights are stored only in oneDNN's blocked layouts (the artifact
 * is smaller than its weights twice over); with the packs' keys made for another ISA, the
 * loader reorders each back to plain and lays it out again: the outputs agree with the native
 * load within float32 rounding of another summation order (|a - b| <= 1e-5 + 1e-4 |b|). A
 * stored layout that does not describe its pack (cut short, a stride past its end) is an error; packs made by another oneDNN
 * are refused with "rebuild". */
Test(stream_packs, weights_stored_only_prepacked_are_laid_out_again_elsewhere, .timeout = 120) {
    ir_ctx_t *ctx = NULL;
    gr_diag d = {0};
    ir_module *opt = cls_module(&ctx), *part = NULL;
    const char *be[1] = {"dnnl"};
    byoc_partition_opts po = {.defer_prepare = true};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    uint8_t *a = NULL;
    size_t alen = 0;
    cr_assert_eq(graft_model_build(part, &a, &alen, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);

    rt_value native = {0}, other = {0};
    graft_model_info in;
    cr_assert_eq(run_model(a, alen, &native, &in, &d), GR_OK, "%s", d.msg);
    cr_assert(in.npacked > 0 && in.npacked_used == in.npacked && in.nrepacked == 0 && in.nunpacked == 0,
              "native: %u packs, %u used, %u laid out again, %u unpacked", in.npacked, in.npacked_used, in.nrepacked,
              in.nunpacked);

    size_t blen;
    uint8_t *b = with_packs_edited(a, alen, other_isa, &blen);
    cr_assert_eq(run_model(b, blen, &other, &in, &d), GR_OK, "%s", d.msg);
    cr_assert(in.npacked_used == 0 && in.nunpacked > 0 && in.nunpacked <= in.nrepacked,
              "another ISA: %u used, %u laid out again, %u from their prepacked form", in.npacked_used, in.nrepacked,
              in.nunpacked);
    tc_expect_tensor(other.u.t, native.u.t, (gr_cmp_opts){.atol = 1e-5, .rtol = 1e-4}, "laid out from the packs");
    rt_value_clear(&other);
    free(b);

    b = with_packs_edited(a, alen, other_isa_bad_layout, &blen);
    gr_diag_clear(&d);
    cr_assert_neq(run_model(b, blen, &other, &in, &d), GR_OK);
    cr_assert(strstr(d.msg, "its stored layout does not describe its pack"), "%s", d.msg);
    free(b);

    b = with_packs_edited(a, alen, other_isa_stride_past_the_end, &blen);
    gr_diag_clear(&d);
    cr_assert_neq(run_model(b, blen, &other, &in, &d), GR_OK);
    cr_assert(strstr(d.msg, "its stored layout does not describe its pack"), "%s", d.msg);
    free(b);

    b = with_packs_edited(a, alen, other_onednn, &blen);
    gr_diag_clear(&d);
    cr_assert_neq(run_model(b, blen, &other, &in, &d), GR_OK);
    cr_assert(strstr(d.msg, "dnnl 0.0.1") && strstr(d.msg, "rebuild the artifact"), "%s", d.msg);
    free(b);
    rt_value_clear(&native);
    free(a);
}
