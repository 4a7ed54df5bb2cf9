/* The dnnl backend's options reach what they steer: dnnl.disable its pattern table (the op
 * stays on the host and the partition report says why), dnnl.threads each model's own thread
 * team (two models in one process), the profiler each model's own, and the engine options a region loaded from an artifact
 * (graft_model_load_buffer_opts): dnnl.no_fuse makes the conv + relu composite two primitives
 * instead of one, with the same outputs (within 1e-5 of the reference executor). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
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

/* OpenMP's team size for the calling thread (what oneDNN's next primitive gets), read from
 * libgomp itself; 0 when oneDNN does not run on OpenMP. */
static int omp_team(void) {
    int (*fn)(void) = NULL;
    void *p = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    memcpy(&fn, &p, sizeof fn);
    return fn ? fn() : 0;
}

/* What one model's primitives saw, from its own profiler. */
typedef struct team_probe {
    int nprims, lo, hi;           /* events, and the least and most team sizes they reported */
    int omp_lo, omp_hi;           /* the same read from OpenMP inside the run */
} team_probe;

static void probe_prim(const rt_prim_event *ev, void *user) {
    team_probe *p = user;
    int omp = omp_team();
    if (!p->nprims++) p->lo = p->hi = ev->threads, p->omp_lo = p->omp_hi = omp;
    p->lo = ev->threads < p->lo ? ev->threads : p->lo;
    p->hi = ev->threads > p->hi ? ev->threads : p->hi;
    p->omp_lo = omp < p->omp_lo ? omp : p->omp_lo;
    p->omp_hi = omp > p->omp_hi ? omp : p->omp_hi;
}

typedef struct team_model {
    fixture f;
    rt_exec_t *x;
    team_probe probe;
    rt_value in[2];
    int runs;
    gr_status st;
} team_model;

static rt_tensor *ramp(int32_t nd, const int64_t *shape, float scale);

/* k_mod partitioned for dnnl with dnnl.threads=threads (never "small": the team runs it), its
 * profiler counting into tm->probe */
static void team_model_init(team_model *tm, int threads) {
    memset(tm, 0, sizeof *tm);
    fx_init(&tm->f);
    char a[64];
    snprintf(a, sizeof a, "dnnl.threads=%d", threads);
    set(&tm->f, a);
    set(&tm->f, "dnnl.small_kb=0");
    json_decref(partition(&tm->f));
    cr_assert_eq(rt_exec_new(tm->f.part, "main", &tm->x, &tm->f.d), GR_OK, "%s", tm->f.d.msg);
    cr_assert_eq(rt_module_set_profilers(tm->f.part, probe_prim, &tm->probe), 1);
    int64_t xs[4] = {1, 3, 10, 10}, ws[4] = {8, 3, 3, 3};
    tm->in[0] = rt_value_tensor(ramp(4, xs, 0.1f));
    tm->in[1] = rt_value_tensor(ramp(4, ws, 0.05f));
}

static void *team_model_run(void *arg) {
    team_model *tm = arg;
    for (int r = 0; r < tm->runs && !tm->st; r++) {
        rt_value out = {0};
        gr_diag d;
        gr_diag_clear(&d);
        tm->st = rt_exec_run(tm->x, tm->in, 2, &out, &d);
        rt_value_clear(&out);
    }
    return NULL;
}

static void team_model_free(team_model *tm) {
    rt_value_clear(&tm->in[0]);
    rt_value_clear(&tm->in[1]);
    rt_exec_free(tm->x);
    fx_free(&tm->f);
}

/* Two models in one process with dnnl.threads 1 and 3 (neither this machine's default when
 * it has 2 CPUs): each region is built for its own team (stats) and each primitive of each
 * run reports it, as OpenMP itself says inside the run (the team oneDNN's primitives get):
 * one model after the other on one thread, then both at once on two threads. The caller's
 * own OpenMP setting is back after a run. */
Test(dnnl_options, two_models_run_each_on_its_own_threads) {
    if (!omp_team()) cr_skip_test("oneDNN does not run on OpenMP here");
    static const int counts[2] = {1, 3};
    team_model tm[2];
    for (int k = 0; k < 2; k++) team_model_init(&tm[k], counts[k]);
    for (int k = 0; k < 2; k++) {
        rt_dnnl_stats s;
        rt_dnnl_get_stats(rt_json_module_state(rt_module_at(tm[k].f.part, 0), 0), &s);
        cr_expect_eq(s.threads, counts[k], "model %d: built for %d threads", k, s.threads);
    }
    int before = omp_team();
    for (int k = 0; k < 2; k++) {
        tm[k].runs = 2;
        team_model_run(&tm[k]);
        cr_assert_eq(tm[k].st, GR_OK);
        cr_expect_eq(omp_team(), before, "the caller's team size is back after model %d", k);
    }
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        tm[k].runs = 20;
        pthread_create(&th[k], NULL, team_model_run, &tm[k]);
    }
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        team_probe *p = &tm[k].probe;
        cr_assert_eq(tm[k].st, GR_OK);
        cr_expect_geq(p->nprims, 22, "model %d: %d primitive events", k, p->nprims);
        cr_expect(p->lo == counts[k] && p->hi == counts[k], "model %d: teams %d..%d, asked %d", k, p->lo, p->hi,
                  counts[k]);
        cr_expect(p->omp_lo == counts[k] && p->omp_hi == counts[k], "model %d: OpenMP teams %d..%d, asked %d", k,
                  p->omp_lo, p->omp_hi, counts[k]);
    }
    for (int k = 0; k < 2; k++) team_model_free(&tm[k]);
}

/* The profiler is the model's: one model's primitives never reach another's. */
Test(dnnl_options, profiler_is_per_model) {
    team_model tm[2];
    for (int k = 0; k < 2; k++) team_model_init(&tm[k], 1);
    rt_module_set_profilers(tm[1].f.part, NULL, NULL);
    tm[0].runs = tm[1].runs = 1;
    team_model_run(&tm[1]);
    cr_expect_eq(tm[0].probe.nprims, 0);
    cr_expect_eq(tm[1].probe.nprims, 0, "profiler turned off");
    team_model_run(&tm[0]);
    cr_assert_eq(tm[0].st, GR_OK);
    cr_assert_eq(tm[1].st, GR_OK);
    cr_expect_gt(tm[0].probe.nprims, 0);
    cr_expect_eq(tm[1].probe.nprims, 0);
    for (int k = 0; k < 2; k++) team_model_free(&tm[k]);
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
