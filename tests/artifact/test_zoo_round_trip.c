/* A zoo CNN (resnet18) and transformer (encoder_seqfirst) built into artifacts (format 5: their
 * weights stored only prepacked where every consumer only reorders them), loaded and run: the
 * in-process run's bits exactly (the same kernels on the same weights), every pack used in
 * place; and with the packs keyed for another ISA (the weights laid out plain again from
 * their prepacked form and reordered for this CPU), the same bits again. The transformer's
 * matmuls may read their weights in place (no pack: AVX2's GEMV); the CNN must have packs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "tests/artifact/pack_edit.h"
#include "tests/cached_model.h"

static void expect_same_bits(const rt_value *got, const rt_value *want, const char *what) {
    cr_assert_eq(got->kind, RT_VAL_TENSOR);
    cr_assert_eq(want->kind, RT_VAL_TENSOR);
    size_t n = rt_tensor_nbytes(want->u.t);
    cr_assert_eq(rt_tensor_nbytes(got->u.t), n, "%s", what);
    const float *a = rt_tensor_data(got->u.t), *b = rt_tensor_data(want->u.t);
    size_t i = 0;
    while (i < n / sizeof(float) && !memcmp(&a[i], &b[i], sizeof(float))) i++;
    cr_expect_eq(i, n / sizeof(float), "%s: element %zu is %.9g, in process %.9g", what, i, a[i], b[i]);
}

static void run_artifact(const uint8_t *buf, size_t len, const rt_tensor *input, rt_value *out, graft_model_info *in) {
    graft_model *gm = NULL;
    gr_diag d = {0};
    cr_assert_eq(graft_model_load_buffer(buf, len, &gm, &d), GR_OK, "%s", d.msg);
    graft_model_get_info(gm, in);
    rt_value x = rt_value_tensor((rt_tensor *)input);
    cr_assert_eq(graft_model_run(gm, &x, 1, out, &d), GR_OK, "%s", d.msg);
    graft_model_free(gm);
}

static void round_trip(const char *name, bool need_packs) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4096];
    rt_tensor *input = NULL, *ref = NULL;
    if (!cached_model_load(zoo, name, "scripts/fetch_zoo.sh", path, sizeof path, &input, &ref)) return;
    gr_diag d = {0};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *opt = cached_model_import(ctx, path, input), *part = NULL;
    const char *be[1] = {"dnnl"};
    byoc_partition_opts po = {0};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    uint8_t *a = NULL;
    size_t alen = 0;
    cr_assert_eq(graft_model_build(part, &a, &alen, &d), GR_OK, "%s: %s", name, d.msg);

    rt_exec_t *x = NULL;
    rt_value arg = rt_value_tensor(input), want = {0}, got = {0};
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_exec_run(x, &arg, 1, &want, &d), GR_OK, "%s", d.msg);
    rt_exec_free(x);

    graft_model_info in;
    run_artifact(a, alen, input, &got, &in);
    cr_expect((in.npacked > 0 || !need_packs) && in.npacked_used == in.npacked && !in.nrepacked && !in.nunpacked,
              "%s: %u packs, %u used, %u laid out again, %u unpacked", name, in.npacked, in.npacked_used, in.nrepacked, in.nunpacked);
    expect_same_bits(&got, &want, name);
    rt_value_clear(&got);

    size_t blen;
    uint32_t nedited;
    uint8_t *b = tu_packs_edited(a, alen, tu_pack_other_isa, &blen, &nedited);
    cr_assert(nedited > 0 || !need_packs);
    if (nedited) {
        run_artifact(b, blen, input, &got, &in);
        cr_expect(in.npacked_used == 0 && in.nunpacked > 0 && in.nunpacked <= in.nrepacked,
                  "%s, packs for another ISA: %u used, %u laid out again, %u unpacked", name, in.npacked_used, in.nrepacked,
                  in.nunpacked);
        expect_same_bits(&got, &want, name);
        rt_value_clear(&got);
    }
    rt_value_clear(&want);
    free(b);
    free(a);
    rt_tensor_release(input);
    rt_tensor_release(ref);
    ir_ctx_free(ctx);
}

Test(zoo_round_trip, resnet18, .timeout = 120) { round_trip("resnet18", true); }
Test(zoo_round_trip, encoder_seqfirst, .timeout = 120) { round_trip("encoder_seqfirst", false); }
