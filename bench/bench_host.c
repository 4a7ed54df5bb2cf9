/* Host-path benchmark on the PP-OCR models (no backend): reference executor vs the planned
 * executor (reference kernels only) vs the planned executor with LLVM-fused host kernels (the
 * artifact of the module as imported) vs what `graft build` makes (default pass pipeline
 * first, then the artifact); the memory plan's arena vs the sum of all intermediates; artifact
 * build and load time.
 *
 *   build/bench/bench_host [RUNS]     (models from build/third_party/models.env, see
 *                                      scripts/fetch_models.sh; absent models are skipped)
 * CPU timings on a shared machine are noisy: the three executors run alternating (one run of
 * each per round, RUNS rounds after one warm-up round) and the medians are reported, with the
 * speed-up of the LLVM path over the reference executor measured in the same rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "backends/llvm/llvm_host.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/plan.h"

static char *env_model(const char *key) {
    const char *v = getenv(key);
    if (v && *v) return strdup(v);
    FILE *f = fopen("build/third_party/models.env", "r");
    if (!f) return NULL;
    char line[4096], *out = NULL;
    size_t kl = strlen(key);
    while (!out && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
            line[strcspn(line, "\n")] = '\0';
            out = strdup(line + kl + 1);
        }
    fclose(f);
    return out;
}

typedef gr_status (*run_fn)(void *x, const rt_value *in, uint32_t n, rt_value *out, gr_diag *d);
static gr_status run_ref(void *x, const rt_value *in, uint32_t n, rt_value *out, gr_diag *d) {
    return rt_exec_run(x, in, n, out, d);
}
static gr_status run_px(void *x, const rt_value *in, uint32_t n, rt_value *out, gr_diag *d) {
    return rt_exec_run(x, in, n, out, d);
}
static gr_status run_gm(void *x, const rt_value *in, uint32_t n, rt_value *out, gr_diag *d) {
    return graft_model_run(x, in, n, out, d);
}

/* One timed run; the last one's output is kept in *keep. */
static double time_one(run_fn fn, void *x, const rt_value *in, rt_value *keep) {
    gr_diag d;
    gr_diag_clear(&d);
    rt_value out = {0};
    double t0 = bench_now_ms();
    if (fn(x, in, 1, &out, &d) != GR_OK) {
        fprintf(stderr, "run failed: %s\n", d.msg);
        return -1;
    }
    double t = bench_now_ms() - t0;
    rt_value_clear(keep);
    *keep = out;
    return t;
}

static double max_diff(const rt_value *a, const rt_value *b) {
    if (a->kind != b->kind) return 1e300;
    if (a->kind == RT_VAL_TUPLE) {
        double m = 0;
        for (uint32_t i = 0; i < a->u.tuple.n; i++) {
            double x = max_diff(&a->u.tuple.items[i], &b->u.tuple.items[i]);
            if (x > m) m = x;
        }
        return m;
    }
    if (a->kind != RT_VAL_TENSOR || rt_tensor_numel(a->u.t) != rt_tensor_numel(b->u.t)) return 1e300;
    double m = 0;
    for (int64_t i = 0; i < rt_tensor_numel(a->u.t); i++) {
        double x = rt_tensor_get_f64(a->u.t, i) - rt_tensor_get_f64(b->u.t, i);
        if (x < 0) x = -x;
        if (x > m) m = x;
    }
    return m;
}

static void bench(const char *label, const char *key, int32_t ndim, const int64_t *dims, int runs) {
    char *path = env_model(key);
    if (!path) {
        printf("%-4s skipped (no %s; run scripts/fetch_models.sh)\n", label, key);
        return;
    }
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx); /* FoldConstant folds on the reference kernels */
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    onnx_input_shape sh = {"x", ndim, {0}};
    memcpy(sh.dims, dims, sizeof(int64_t) * (size_t)ndim);
    onnx_import_opts o = {.shapes = &sh, .nshapes = 1};
    rt_exec_t *ref = NULL;
    rt_px *px = NULL;
    graft_model *gm = NULL, *gb = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    ir_module *opt = NULL;
    rt_value in = {0}, out_ref = {0}, out_px = {0}, out_gm = {0}, out_gb = {0};
    if (onnx_import_file(ctx, path, &o, &m, &d) || rt_exec_new(m, "main", &ref, &d) ||
        rt_px_new(m, "main", NULL, &px, &d)) {
        printf("%-4s error: %s\n", label, d.msg);
        goto done;
    }
    double t0 = bench_now_ms();
    if (graft_model_build(m, &buf, &len, &d)) {
        printf("%-4s build error: %s\n", label, d.msg);
        goto done;
    }
    double t_build = bench_now_ms() - t0;
    t0 = bench_now_ms();
    if (graft_model_load_buffer(buf, len, &gm, &d)) {
        printf("%-4s load error: %s\n", label, d.msg);
        goto done;
    }
    double t_load = bench_now_ms() - t0;
    /* graft build: default pipeline, then the artifact */
    uint8_t *buf2 = NULL;
    size_t len2 = 0;
    t0 = bench_now_ms();
    if (ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d) || graft_model_build(opt, &buf2, &len2, &d) ||
        graft_model_load_buffer(buf2, len2, &gb, &d)) {
        printf("%-4s graft build path error: %s\n", label, d.msg);
        free(buf2);
        goto done;
    }
    double t_built = bench_now_ms() - t0;
    free(buf2);
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, ndim, dims);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    in = rt_value_tensor(t);
    double *tr = calloc((size_t)runs, sizeof(double)), *tp = calloc((size_t)runs, sizeof(double)),
           *tg = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double));
    bool ok = true;
    for (int r = -1; r < runs && ok; r++) { /* round -1: warm-up */
        double a = time_one(run_ref, ref, &in, &out_ref), b = time_one(run_px, px, &in, &out_px),
               c = time_one(run_gm, gm, &in, &out_gm), e = time_one(run_gm, gb, &in, &out_gb);
        ok = a >= 0 && b >= 0 && c >= 0 && e >= 0;
        if (r >= 0) tr[r] = a, tp[r] = b, tg[r] = c, tb[r] = e;
    }
    double ms_ref = ok ? bench_median(tr, runs) : -1, ms_px = ok ? bench_median(tp, runs) : -1, ms_gm = ok ? bench_median(tg, runs) : -1;
    double ms_gb = ok ? bench_median(tb, runs) : -1;
    free(tr);
    free(tp);
    free(tg);
    free(tb);
    graft_model_info info;
    graft_model_get_info(gm, &info);
    printf("%-4s ref %8.2f ms | planned %8.2f ms | planned+llvm %8.2f ms (x%.2f vs ref) | "
           "%u host kernels (%u ops) | arena %.2f MB vs intermediates %.2f MB (%u buffers) | "
           "artifact %.2f MB, build %.0f ms, load %.0f ms | max |diff| %.2g / %.2g\n",
           label, ms_ref, ms_px, ms_gm, ms_ref / ms_gm, info.nhost, info.nfused_ops,
           (double)info.arena_bytes / 1e6, (double)info.intermediate_bytes / 1e6, info.nplanned,
           (double)len / 1e6, t_build, t_load, max_diff(&out_px, &out_ref), max_diff(&out_gm, &out_ref));
    graft_model_get_info(gb, &info);
    printf("%-4s graft build (default pipeline + llvm) %8.2f ms (x%.2f vs ref) | %u host kernels (%u ops), %u "
           "reference ops | arena %.2f MB vs intermediates %.2f MB | passes + build + load %.0f ms | max |diff| %.2g\n",
           label, ms_gb, ms_ref / ms_gb, info.nhost, info.nfused_ops, info.nkernel, (double)info.arena_bytes / 1e6,
           (double)info.intermediate_bytes / 1e6, t_built, max_diff(&out_gb, &out_ref));
done:
    rt_value_clear(&in);
    rt_value_clear(&out_ref);
    rt_value_clear(&out_px);
    rt_value_clear(&out_gm);
    rt_value_clear(&out_gb);
    free(buf);
    graft_model_free(gm);
    graft_model_free(gb);
    rt_exec_free(px);
    rt_exec_free(ref);
    ir_ctx_free(ctx);
    free(path);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1) runs = 1;
    const int64_t cls[4] = {1, 3, 48, 192}, rec[4] = {1, 3, 48, 320}, det[4] = {1, 3, 640, 640};
    bench("cls", "GRAFT_MODEL_CLS", 4, cls, runs);
    bench("rec", "GRAFT_MODEL_REC", 4, rec, runs);
    bench("det", "GRAFT_MODEL_DET", 4, det, runs);
    return 0;
}
