/* A build that prepares its regions as it writes them (byoc_partition_opts.defer_prepare, as
 * `graft build`), each reordered weight streamed to the file as oneDNN makes it, writes the
 * same bytes as the build of a partition prepared beforehand (the weights held in memory), and
 * so does a second build of the same module. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
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

Test(stream_packs, streamed_build_writes_the_prepared_builds_bytes, .timeout = 120) {
    char *cls = model_path("GRAFT_MODEL_CLS");
    if (!cls) cr_skip("GRAFT_MODEL_CLS: no model (run scripts/fetch_models.sh)");
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    onnx_input_shape sh = {"x", 4, {1, 3, 48, 192}};
    onnx_import_opts io = {&sh, 1, NULL, 0, NULL, 0, false, NULL};
    ir_module *m = NULL, *opt = NULL, *held = NULL, *deferred = NULL;
    cr_assert_eq(onnx_import_file(ctx, cls, &io, &m, &d), GR_OK, "%s", d.msg);
    free(cls);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
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
