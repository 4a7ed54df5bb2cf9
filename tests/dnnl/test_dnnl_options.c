/* The dnnl backend's options reach what they steer: dnnl.disable its pattern table (the op
 * stays on the host and the partition report says why), dnnl.threads / dnnl.bind the thread
 * team's options, and the engine options a region loaded from an artifact
 * (graft_model_load_buffer_opts): dnnl.no_fuse makes the conv + relu composite two primitives
 * instead of one, with the same outputs (within 1e-5 of the reference executor). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "byoc/byoc.h"
#include "ir/text/parser.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "tests/compare_util.h"
#include "deploy/graft_model.h"

static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 10, 10), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\")) -> R.Tensor((1, 8, 8, 8), dtype=\"float32\"):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((1, 8, 8, 8), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            gv: R.Tensor((1, 8, 8, 8), dtype=\"float32\") = R.nn.relu(lv)  # span: \"relu1\"\n"
    "            R.output(gv)\n"
    "        return gv\n";

typedef struct fixture {
    ir_ctx_t *ctx;
    ir_module *m, *part;
    byoc_notes notes;
    byoc_options *opts;
    gr_diag d;
} fixture;

static void fx_init(fixture *f) {
    memset(f, 0, sizeof *f);
    f->ctx = ir_ctx_new();
    f->opts = byoc_options_new();
    byoc_notes_init(&f->notes);
    cr_assert_eq(ir_parse_module(f->ctx, "t.relax", k_mod, strlen(k_mod), &f->m, &f->d), GR_OK, "%s", f->d.msg);
}

static void fx_free(fixture *f) {
    byoc_notes_free(&f->notes);
    byoc_options_free(f->opts);
    ir_ctx_free(f->ctx);
}

static void set(fixture *f, const char *a) { cr_assert_eq(byoc_options_set(f->opts, a, &f->d), GR_OK, "%s", f->d.msg); }

/* partitions for dnnl with f's options; returns the report (new reference) */
static json_t *partition(fixture *f) {
    const char *be[1] = {"dnnl"};
    byoc_partition_opts po = {0};
    po.notes = &f->notes;
    po.options = f->opts;
    cr_assert_eq(byoc_partition(f->ctx, f->m, be, 1, &po, &f->part, &f->d), GR_OK, "%s", f->d.msg);
    return byoc_report_json(f->ctx, po.after_merge, be, 1, &f->notes);
}

Test(dnnl_options, disable_keeps_ops_on_the_host) {
    fixture f;
    fx_init(&f);
    json_t *r = partition(&f);
    cr_expect_eq(json_array_size(json_object_get(r, "host")), 0, "no option: everything offloaded");
    json_decref(r);
    fx_free(&f);

    fx_init(&f);
    set(&f, "dnnl.disable=composites,nn.relu");
    r = partition(&f);
    json_t *host = json_object_get(r, "host");
    cr_assert_eq(json_array_size(host), 1);
    json_t *h = json_array_get(host, 0);
    cr_expect_str_eq(json_string_value(json_object_get(h, "op")), "relax.nn.relu");
    const char *why = json_string_value(json_object_get(h, "reason"));
    cr_expect(why && strstr(why, "dnnl.disable"), "reason: %s", why ? why : "(none)");
    json_t *g = json_array_get(json_object_get(r, "regions"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(g, "composites"), 0), "name")),
                     "dnnl.nn.conv2d", "the conv alone, not the conv2d_relu composite");
    json_decref(r);
    fx_free(&f);
}

Test(dnnl_options, disable_of_no_pattern_is_an_error) {
    fixture f;
    fx_init(&f);
    set(&f, "dnnl.disable=nn.conv2d,conv3x3");
    const char *be[1] = {"dnnl"};
    byoc_partition_opts po = {0};
    po.options = f.opts;
    cr_expect_eq(byoc_partition(f.ctx, f.m, be, 1, &po, &f.part, &f.d), GR_ERR_INVALID);
    cr_expect(strstr(f.d.msg, "dnnl.disable") && strstr(f.d.msg, "'conv3x3'"), "%s", f.d.msg);
    fx_free(&f);
}

/* The team is fixed by the first region; the options still land where the team reads them. */
Test(dnnl_options, threads_and_bind_reach_the_team) {
    int n = rt_dnnl_num_threads();
    fixture f;
    fx_init(&f);
    char a[64];
    snprintf(a, sizeof a, "dnnl.threads=%d", n);
    set(&f, a);
    set(&f, "dnnl.bind=0");
    json_decref(partition(&f));
    cr_expect_eq(rt_dnnl_thread_options()->threads, n);
    cr_expect_not(rt_dnnl_thread_options()->bind);
    fx_free(&f);
}

static rt_tensor *ramp(int32_t nd, const int64_t *shape, float scale) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, nd, shape);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = scale * (float)((i * 7919) % 23 - 11);
    return t;
}

/* runs the artifact loaded with opts; returns the primitives its region prepared */
static uint64_t run_artifact(const uint8_t *buf, size_t len, const byoc_options *opts, const rt_value *in,
                             const rt_tensor *ref) {
    gr_diag d;
    gr_diag_clear(&d);
    graft_model *gm = NULL;
    uint64_t before, after, nref;
    rt_dnnl_totals(&before, &nref, NULL, 0);
    cr_assert_eq(graft_model_load_buffer_opts(buf, len, opts, &gm, &d), GR_OK, "%s", d.msg);
    rt_value out = {0};
    cr_assert_eq(graft_model_run(gm, in, 2, &out, &d), GR_OK, "%s", d.msg);
    rt_dnnl_totals(&after, &nref, NULL, 0);
    cr_assert_eq(out.kind, RT_VAL_TENSOR);
    tc_expect_tensor(out.u.t, ref, (gr_cmp_opts){.atol = 1e-5, .rtol = 1e-5}, "artifact against the reference");
    rt_value_clear(&out);
    graft_model_free(gm);
    return after - before;
}

Test(dnnl_options, artifact_regions_take_runtime_options) {
    fixture f;
    fx_init(&f);
    int64_t sx[4] = {1, 3, 10, 10}, sw[4] = {8, 3, 3, 3};
    rt_value in[2] = {rt_value_tensor(ramp(4, sx, 0.1f)), rt_value_tensor(ramp(4, sw, 0.05f))}, ref = {0};
    rt_exec_t *x;
    cr_assert_eq(rt_exec_new(f.m, "main", &x, &f.d), GR_OK, "%s", f.d.msg);
    cr_assert_eq(rt_exec_run(x, in, 2, &ref, &f.d), GR_OK, "%s", f.d.msg);
    rt_exec_free(x);
    json_decref(partition(&f));
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(graft_model_build(f.part, &buf, &len, &f.d), GR_OK, "%s", f.d.msg);
    uint64_t fused = run_artifact(buf, len, NULL, in, ref.u.t);
    set(&f, "dnnl.no_fuse=1");
    uint64_t unfused = run_artifact(buf, len, f.opts, in, ref.u.t);
    cr_expect_eq(fused, 1, "conv with relu as a post-op: one primitive, got %lu", (unsigned long)fused);
    cr_expect_geq(unfused, 2, "dnnl.no_fuse: conv and relu apart, got %lu", (unsigned long)unfused);
    free(buf);
    rt_value_clear(&ref);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    fx_free(&f);
}
