/* One loaded model run from several threads (deploy/graft_model.h: runs may be concurrent),
 * shared by the Criterion tests (test_concurrency.c) and the ThreadSanitizer program
 * (tests/concurrency_main.c: Criterion's forking runner does not start under TSan). Each of
 * NTHREADS threads runs its own NINPUTS inputs NRUNS times; every output must equal, bit for
 * bit, the single-threaded run of the same input. The symbolic variant has a symbolic batch and
 * gives the threads inputs of different batches at once (memory plans and region
 * specializations made and shared concurrently). */
#ifndef GRAFT_TESTS_CONCURRENCY_IMPL_H
#define GRAFT_TESTS_CONCURRENCY_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compare.h"
#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "ir/text/parser.h"

#define NTHREADS 4
#define NINPUTS 3     /* distinct inputs per thread */
#define NRUNS 12      /* runs per thread */

static const char *conc_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")) -> R.Tuple(R.Tensor((1, 8, 14, 14), dtype=\"float32\"), R.Tensor((1, 8, 14, 14), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            lv1: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.add(lv, b)  # span: \"bn1\"\n"
    "            lv2: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.nn.relu(lv1)  # span: \"relu1\"\n"
    "            lv3: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.sigmoid(lv2)  # span: \"act2\"\n"
    "            lv4: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.multiply(lv3, lv2)  # span: \"act2\"\n"
    "            lv5: R.Tensor((1, 8, 14, 14), dtype=\"float32\") = R.subtract(lv4, lv1)  # span: \"tail\"\n"
    "            gv: R.Tuple(R.Tensor((1, 8, 14, 14), dtype=\"float32\"), R.Tensor((1, 8, 14, 14), dtype=\"float32\")) = (lv5, lv2)\n"
    "            R.output(gv)\n"
    "        return gv\n";

/* conc_mod with a symbolic batch n. */
static const char *conc_sym_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"n\", 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")):\n"
    "        n = T.int64()\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            lv1: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.add(lv, b)  # span: \"bn1\"\n"
    "            lv2: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.nn.relu(lv1)  # span: \"relu1\"\n"
    "            lv3: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.sigmoid(lv2)  # span: \"act2\"\n"
    "            lv4: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.multiply(lv3, lv2)  # span: \"act2\"\n"
    "            lv5: R.Tensor((n, 8, 14, 14), dtype=\"float32\") = R.subtract(lv4, lv1)  # span: \"tail\"\n"
    "            gv = (lv5, lv2)\n"
    "            R.output(gv)\n"
    "        return gv\n";

static rt_tensor *conc_rand(int32_t nd, const int64_t *shape, uint32_t seed) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, nd, shape);
    float *p = rt_tensor_data(t);
    uint32_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return t;
}

/* The artifact of conc_mod, partitioned for `backend` first unless NULL (host code only);
 * NULL with the reason in err. */
static graft_model *conc_load(const char *backend, bool sym, char *err, size_t cap) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL, *part = NULL;
    graft_model *gm = NULL;
    uint8_t *buf = NULL;
    size_t len;
    gr_diag d;
    gr_diag_clear(&d);
    const char *text = sym ? conc_sym_mod : conc_mod;
    if (ir_parse_module(ctx, "t.relax", text, strlen(text), &m, &d) == GR_OK &&
        (!backend || byoc_partition_for_backends(ctx, m, &backend, 1, &part, &d) == GR_OK) &&
        graft_model_build(part ? part : m, &buf, &len, &d) == GR_OK)
        graft_model_load_buffer(buf, len, &gm, &d);
    free(buf);
    ir_ctx_free(ctx);
    if (!gm) snprintf(err, cap, "%s: build / load: %.200s", backend ? backend : "host", d.msg);
    return gm;
}

typedef struct conc_job {
    graft_model *gm;
    rt_value in[NINPUTS][3];
    rt_value ref[NINPUTS];
    int failed_runs, wrong_outputs;
    char first_error[256];
} conc_job;

static bool conc_equal(const rt_value *a, const rt_value *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == RT_VAL_TUPLE) {
        if (a->u.tuple.n != b->u.tuple.n) return false;
        for (uint32_t i = 0; i < a->u.tuple.n; i++)
            if (!conc_equal(&a->u.tuple.items[i], &b->u.tuple.items[i])) return false;
        return true;
    }
    /* equal values, and no NaN (base/compare.h): a NaN repeated run after run is no answer */
    return a->kind == RT_VAL_TENSOR && a->u.t->dl.dtype.code == b->u.t->dl.dtype.code &&
           a->u.t->dl.dtype.bits == b->u.t->dl.dtype.bits && gr_cmp_tensor(a->u.t, b->u.t, &(gr_cmp_opts){0}, NULL);
}

static void *conc_worker(void *arg) {
    conc_job *j = arg;
    for (int r = 0; r < NRUNS; r++) {
        int k = r % NINPUTS;
        rt_value out = {0};
        gr_diag d;
        gr_diag_clear(&d);
        if (graft_model_run(j->gm, j->in[k], 3, &out, &d) != GR_OK) {
            if (!j->failed_runs++) snprintf(j->first_error, sizeof j->first_error, "%.200s", d.msg);
        } else if (!conc_equal(&out, &j->ref[k])) {
            j->wrong_outputs++;
        }
        rt_value_clear(&out);
    }
    return NULL;
}

/* Runs the check for one kind of artifact; 0 when every run succeeded with the single-threaded
 * bits, else the number of bad runs (or -1 on a setup error), with a message in err. */
static int conc_check_mode(const char *backend, bool sym, char *err, size_t cap) {
    const char *kind = backend ? backend : "host";
    err[0] = 0;
    graft_model *gm = conc_load(backend, sym, err, cap);
    if (!gm) return -1;
    graft_model_info info;
    graft_model_get_info(gm, &info);
    /* host kernels are compiled for static shapes: the symbolic host artifact has none */
    if (backend ? graft_model_num_externals(gm) < 1 : (!sym && info.nhost < 1)) {
        snprintf(err, cap, "%s: the artifact has no %s", kind, backend ? "external region" : "host kernel");
        graft_model_free(gm);
        return -1;
    }
    static conc_job jobs[NTHREADS];
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    int bad = 0;
    /* references: each input run alone, on this thread */
    for (int t = 0; t < NTHREADS; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].gm = gm;
        for (int k = 0; k < NINPUTS; k++) {
            uint32_t seed = (uint32_t)(100 * t + 10 * k);
            sx[0] = sym ? 1 + (t + k) % 3 : 1;
            jobs[t].in[k][0] = rt_value_tensor(conc_rand(4, sx, seed + 1));
            jobs[t].in[k][1] = rt_value_tensor(conc_rand(4, sw, seed + 2));
            jobs[t].in[k][2] = rt_value_tensor(conc_rand(4, sb, seed + 3));
            gr_diag d;
            gr_diag_clear(&d);
            if (graft_model_run(gm, jobs[t].in[k], 3, &jobs[t].ref[k], &d) != GR_OK) {
                snprintf(err, cap, "%s: single-threaded run: %.200s", kind, d.msg);
                bad = -1;
            }
        }
    }
    if (!bad && conc_equal(&jobs[0].ref[0], &jobs[1].ref[0])) {
        snprintf(err, cap, "%s: different inputs gave the same output", kind);
        bad = -1;
    }
    if (!bad) {
        pthread_t th[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, conc_worker, &jobs[t]);
        for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < NTHREADS; t++) {
            bad += jobs[t].failed_runs + jobs[t].wrong_outputs;
            if ((jobs[t].failed_runs || jobs[t].wrong_outputs) && !err[0])
                snprintf(err, cap, "%s: thread %d: %d of %d runs failed (%s), %d outputs differ from "
                         "the single-threaded run", kind, t, jobs[t].failed_runs, NRUNS,
                         jobs[t].first_error, jobs[t].wrong_outputs);
        }
    }
    for (int t = 0; t < NTHREADS; t++)
        for (int k = 0; k < NINPUTS; k++) {
            rt_value_clear(&jobs[t].ref[k]);
            for (int i = 0; i < 3; i++) rt_value_clear(&jobs[t].in[k][i]);
        }
    graft_model_free(gm);
    return bad;
}

/* ---- Two oneDNN models with their own thread counts, run at once ----
 * Models A (dnnl.threads=1) and B (dnnl.threads=3), each run from 2 threads at once: every
 * primitive of A reports a team of 1, every one of B a team of 3 (their own profilers; the
 * counters are atomic since a model's runs report from each of its threads). */
typedef struct conc_team {
    graft_model *gm;
    int want;
    _Atomic int events, wrong;
    rt_value in[3];
    _Atomic int failed_runs;
} conc_team;

static void conc_team_prim(const rt_prim_event *ev, void *user) {
    conc_team *t = user;
    atomic_fetch_add(&t->events, 1);
    if (ev->threads != t->want) atomic_fetch_add(&t->wrong, 1);
}

static void *conc_team_worker(void *arg) {
    conc_team *t = arg;
    for (int r = 0; r < NRUNS; r++) {
        rt_value out = {0};
        gr_diag d;
        gr_diag_clear(&d);
        if (graft_model_run(t->gm, t->in, 3, &out, &d) != GR_OK) atomic_fetch_add(&t->failed_runs, 1);
        rt_value_clear(&out);
    }
    return NULL;
}

static int conc_check_teams(char *err, size_t cap) {
    err[0] = 0;
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL, *part = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    gr_diag d;
    gr_diag_clear(&d);
    const char *be = "dnnl";
    if (ir_parse_module(ctx, "t.relax", conc_mod, strlen(conc_mod), &m, &d) != GR_OK ||
        byoc_partition_for_backends(ctx, m, &be, 1, &part, &d) != GR_OK || graft_model_build(part, &buf, &len, &d) != GR_OK) {
        snprintf(err, cap, "teams: build: %.200s", d.msg);
        ir_ctx_free(ctx);
        return -1;
    }
    ir_ctx_free(ctx);
    static conc_team teams[2];
    static const int want[2] = {1, 3};
    int64_t sx[4] = {1, 3, 16, 16}, sw[4] = {8, 3, 3, 3}, sb[4] = {1, 8, 1, 1};
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        conc_team *t = &teams[k];
        memset(t, 0, sizeof *t);
        t->want = want[k];
        byoc_options *o = byoc_options_new();
        char a[64];
        snprintf(a, sizeof a, "dnnl.threads=%d", want[k]);
        if (byoc_options_set(o, a, &d) || byoc_options_set(o, "dnnl.small_kb=0", &d) ||
            graft_model_load_buffer_opts(buf, len, o, &t->gm, &d) != GR_OK) {
            snprintf(err, cap, "teams: load: %.200s", d.msg);
            bad = -1;
        }
        byoc_options_free(o);
        if (t->gm) graft_model_set_prim_profiler(t->gm, conc_team_prim, t);
        t->in[0] = rt_value_tensor(conc_rand(4, sx, 1));
        t->in[1] = rt_value_tensor(conc_rand(4, sw, 2));
        t->in[2] = rt_value_tensor(conc_rand(4, sb, 3));
    }
    free(buf);
    if (!bad) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, conc_team_worker, &teams[i % 2]);
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        for (int k = 0; k < 2 && !bad; k++) {
            conc_team *t = &teams[k];
            int ev = atomic_load(&t->events), wrong = atomic_load(&t->wrong), failed = atomic_load(&t->failed_runs);
            if (failed || wrong || ev < 2 * NRUNS) {
                snprintf(err, cap, "teams: model with dnnl.threads=%d: %d runs failed, %d of %d primitives on another team",
                         t->want, failed, wrong, ev);
                bad = failed + wrong + (ev < 2 * NRUNS);
            }
        }
    }
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++) rt_value_clear(&teams[k].in[i]);
        graft_model_free(teams[k].gm);
    }
    return bad;
}

static inline int conc_check(const char *backend, char *err, size_t cap) { return conc_check_mode(backend, false, err, cap); }

#endif
