/* Backends side by side on the CNNs: graft with dnnl, graft with the xnnpack plugin
 * (build/plugins/libgraft_xnnpack.so) and ONNX Runtime, through the public API
 * (include/graft/graft.h) as a program embedding graft would use it.
 *
 *   build/bench/bench_plugin [--runs N] [--threads N] [--model NAME]... [--plugin PATH]
 *
 * Per model (PP-OCR cls from build/third_party/models.env, zoo CNNs from build/third_party/zoo,
 * each with its ORT reference input): one session per backend, its output checked against
 * ORT's reference output (max abs error printed), then N rounds alternating the sides (one run
 * each, the order rotating), medians in ms. ORT runs in a process of its own
 * (scripts/bench_dnnl_ort.js, as bench_dnnl). "in regions" is the share of xnnpack's run spent
 * inside its regions (the rest: host ops left out of them); the boundary's NCHW <-> NHWC
 * conversions are inside the regions. Threads: the same count everywhere (default 1).
 *
 * Where xnnpack's time goes, per model: a "where" line from graft's profiler (the share in
 * xnnpack regions, the largest region, the host ops left between them by op), and the
 * plugin's own lines on stderr when its session ends (option xnnpack.profile: per region, its
 * NCHW <-> NHWC conversions and the XNNPACK run, per run). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "include/graft/graft.h"
#include "runtime/npy.h"

#define MAX_MODELS 16

/* ---- graft sessions ---- */

static graft_session *session(const char *onnx, const char *backend, const char *option, int threads) {
    graft_error *err = NULL;
    graft_session_options *o = graft_session_options_new();
    graft_session *s = NULL;
    if (graft_session_options_add_backend(o, backend, &err) || graft_session_options_set_threads(o, threads, &err) ||
        (option && graft_session_options_set(o, option, &err)) || graft_session_load(onnx, o, &s, &err)) {
        fprintf(stderr, "bench_plugin: %s on %s: %s\n", onnx, backend, graft_error_message(err));
        graft_error_free(err);
    }
    graft_session_options_free(o);
    return s;
}

static double run_ms(graft_session *s, graft_tensor *x, graft_tensor **out) {
    double t0 = bench_now_ms();
    graft_error *err = NULL;
    if (graft_session_run(s, &x, 1, out, 1, &err)) {
        fprintf(stderr, "bench_plugin: %s\n", graft_error_message(err));
        graft_error_free(err);
        return -1;
    }
    return bench_now_ms() - t0;
}

static double max_abs(graft_tensor *a, graft_tensor *b) {
    if (graft_tensor_numel(a) != graft_tensor_numel(b)) return INFINITY;
    const float *x = graft_tensor_data(a), *y = graft_tensor_data(b);
    double m = 0;
    for (size_t i = 0; i < graft_tensor_numel(a); i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (!(d <= m)) m = d; /* NaN wins */
    }
    return m;
}

/* One run's profile: time per step name (a region's symbol, a host op), extern or not. */
#define MAX_STEPS 512
typedef struct prof_step {
    char name[96];
    double ns;
    bool ext;
} prof_step;
typedef struct prof_sum {
    double ext_ns, all_ns;
    uint32_t n;
    prof_step step[MAX_STEPS];
} prof_sum;

static void on_step(const char *kind, const char *name, uint64_t ns, void *user) {
    prof_sum *p = user;
    bool ext = !strcmp(kind, "extern");
    p->all_ns += (double)ns;
    if (ext) p->ext_ns += (double)ns;
    uint32_t i = 0;
    while (i < p->n && strncmp(p->step[i].name, name, sizeof p->step[i].name - 1)) i++; /* names cut as stored */
    if (i == p->n && p->n < MAX_STEPS) snprintf(p->step[p->n++].name, sizeof p->step[0].name, "%s", name);
    if (i < p->n) {
        p->step[i].ns += (double)ns;
        p->step[i].ext = ext;
    }
}

static int by_ns(const void *a, const void *b) {
    double x = ((const prof_step *)a)->ns, y = ((const prof_step *)b)->ns;
    return (x < y) - (x > y);
}

/* "where": the share in regions (how many, the largest), then the host steps, largest first. */
static void print_where(prof_sum *p) {
    qsort(p->step, p->n, sizeof p->step[0], by_ns);
    uint32_t nreg = 0, top = UINT32_MAX;
    for (uint32_t i = 0; i < p->n; i++)
        if (p->step[i].ext && !nreg++) top = i;
    double all = p->all_ns > 0 ? p->all_ns : 1;
    printf("  where: %u regions %.0f%%", nreg, 100 * p->ext_ns / all);
    if (top != UINT32_MAX) printf(" (largest %s %.0f%%)", p->step[top].name, 100 * p->step[top].ns / all);
    printf(", host %.0f%%", 100 * (p->all_ns - p->ext_ns) / all);
    for (uint32_t i = 0, shown = 0; i < p->n && shown < 5; i++)
        if (!p->step[i].ext) {
            printf("%s %s %.1f%%", shown++ ? "," : ":", p->step[i].name, 100 * p->step[i].ns / all);
        }
    printf("\n");
}

static graft_tensor *npy(const char *path) {
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (rt_npy_load(path, &t, &d)) fprintf(stderr, "bench_plugin: %s\n", d.msg);
    return (graft_tensor *)t;
}

static char *models_env(const char *key) {
    FILE *f = fopen("build/third_party/models.env", "r");
    char line[4096], *out = NULL;
    size_t kl = strlen(key);
    while (f && !out && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == '=') {
            line[strcspn(line, "\n")] = '\0';
            out = strdup(line + kl + 1);
        }
    if (f) fclose(f);
    return out;
}

int main(int argc, char **argv) {
    int runs = 10, threads = 1, nmodels = 0;
    const char *models[MAX_MODELS], *plugin = "build/plugins/libgraft_xnnpack.so";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--plugin") && i + 1 < argc) plugin = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc && nmodels < MAX_MODELS) models[nmodels++] = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--runs N] [--threads N] [--model NAME]... [--plugin PATH]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    if (!nmodels) {
        static const char *const DEFAULT[] = {"cls", "resnet18", "mobilenet_v3_large", "shufflenet_v2_x1_0", "regnet_y_400mf"};
        for (size_t i = 0; i < sizeof DEFAULT / sizeof DEFAULT[0]; i++) models[nmodels++] = DEFAULT[i];
    }
    graft_error *err = NULL;
    if (graft_backend_load(plugin, &err)) {
        printf("bench_plugin: skipped: %s\n", graft_error_message(err));
        graft_error_free(err);
        return 0;
    }
    printf("threads %d, %d rounds; medians in ms; err: max |graft - ORT reference|\n", threads, runs);
    printf("%-20s %9s %9s %9s %9s %9s %11s %11s\n", "model", "dnnl", "xnnpack", "ORT", "xnn/dnnl", "xnn/ORT",
           "xnn err", "in regions");
    for (int mi = 0; mi < nmodels; mi++) {
        char onnx[4096], refs[4096], in_path[4200], out_path[4200];
        char *ppocr = !strcmp(models[mi], "cls") ? models_env("GRAFT_MODEL_CLS") : NULL;
        char *ref_root = ppocr ? models_env("GRAFT_REFS") : NULL;
        if (ppocr) {
            snprintf(onnx, sizeof onnx, "%s", ppocr);
            snprintf(refs, sizeof refs, "%s/cls", ref_root ? ref_root : "build/third_party/refs");
        } else {
            snprintf(onnx, sizeof onnx, "build/third_party/zoo/%s.onnx", models[mi]);
            snprintf(refs, sizeof refs, "build/third_party/zoo/refs/%s", models[mi]);
        }
        free(ppocr);
        free(ref_root);
        snprintf(in_path, sizeof in_path, "%s/input_0.npy", refs);
        snprintf(out_path, sizeof out_path, "%s/output_0.npy", refs);
        if (access(onnx, R_OK) || access(in_path, R_OK)) {
            printf("%-20s (not in the model cache: make models)\n", models[mi]);
            continue;
        }
        graft_tensor *x = npy(in_path), *want = npy(out_path);
        graft_session *sd = session(onnx, "dnnl", NULL, threads),
                      *sx = session(onnx, "xnnpack", "xnnpack.profile=1", threads);
        bench_peer ort = {0};
        int64_t dims[8];
        int nd = x ? graft_tensor_ndim(x) : 0;
        for (int k = 0; k < nd && k < 8; k++) dims[k] = graft_tensor_dim(x, k);
        bool have_ort = x && bench_ort_start(&ort, onnx, dims, nd < 8 ? nd : 8, threads, in_path) == 0;
        if (!x || !want || !sd || !sx) {
            printf("%-20s (failed)\n", models[mi]);
            continue;
        }
        graft_tensor *out = NULL;
        double xerr = run_ms(sx, x, &out) < 0 ? NAN : max_abs(out, want);
        graft_tensor_release(out);
        out = NULL;
        run_ms(sd, x, &out); /* warm-up */
        graft_tensor_release(out);
        if (have_ort) bench_peer_cmd(&ort, "run");
        double *td = calloc((size_t)runs, sizeof(double)), *tx = calloc((size_t)runs, sizeof(double)),
               *to = calloc((size_t)runs, sizeof(double));
        for (int r = 0; r < runs; r++)
            for (int k = 0; k < 3; k++) {
                int side = (r + k) % 3;
                out = NULL;
                if (side == 0) td[r] = run_ms(sd, x, &out);
                if (side == 1) tx[r] = run_ms(sx, x, &out);
                if (side == 2) to[r] = have_ort ? bench_peer_cmd(&ort, "run") : NAN;
                graft_tensor_release(out);
            }
        static prof_sum ps;
        memset(&ps, 0, sizeof ps);
        graft_session_set_profiler(sx, on_step, &ps);
        out = NULL;
        run_ms(sx, x, &out);
        graft_tensor_release(out);
        graft_session_set_profiler(sx, NULL, NULL);
        double md = bench_median(td, runs), mx = bench_median(tx, runs), mo = have_ort ? bench_median(to, runs) : NAN;
        printf("%-20s %9.2f %9.2f %9.2f %9.2f %9.2f %11.2e %10.0f%%\n", models[mi], md, mx, mo, mx / md, mx / mo, xerr,
               ps.all_ns > 0 ? 100 * ps.ext_ns / ps.all_ns : 0.0);
        print_where(&ps);
        fflush(stdout);
        free(td), free(tx), free(to);
        if (have_ort) bench_peer_stop(&ort);
        graft_session_free(sd);
        graft_session_free(sx);
        graft_tensor_release(x);
        graft_tensor_release(want);
    }
    return 0;
}
