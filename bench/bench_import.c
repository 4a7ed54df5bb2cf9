/* ONNX import and reference-executor benchmark on the PP-OCR models, side by side with ONNX
 * Runtime's session creation (scripts/ort_reference.js --bench, same machine, same run).
 *
 *   build/bench/bench_import [--runs N]      (models from build/third_party/models.env) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "frontend/onnx/onnx_import.h"
#include "runtime/exec/executor.h"
#include "runtime/npy.h"

/* Reads KEY=VALUE from models.env. */
static int env_get(const char *key, char *out, size_t size) {
    FILE *f = fopen("build/third_party/models.env", "r");
    char line[4096];
    size_t n = strlen(key);
    int found = 0;
    if (!f) return 0;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, n) == 0 && line[n] == '=') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, size, "%s", line + n + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* Session-creation median of ONNX Runtime for one model, in ms (-1 when node fails). */
static double ort_session_ms(const char *model, int runs) {
    char cmd[512], buf[8192];
    snprintf(cmd, sizeof(cmd), "node scripts/ort_reference.js --bench %d --model %s --threads 1 2>/dev/null",
             runs, model);
    FILE *p = popen(cmd, "r");
    double v = -1;
    if (!p) return v;
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    pclose(p);
    const char *s = strstr(buf, "\"session_create_ms\":{\"median\":");
    if (s) v = strtod(s + strlen("\"session_create_ms\":{\"median\":"), NULL);
    return v;
}

int main(int argc, char **argv) {
    int runs = 10;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    }
    if (runs < 1 || runs > 200) runs = 10;
    static const char *const MODELS[][3] = {{"det", "GRAFT_MODEL_DET", "x=1x3x640x640"},
                                            {"rec", "GRAFT_MODEL_REC", NULL},
                                            {"cls", "GRAFT_MODEL_CLS", NULL}};
    char refs[4096];
    if (!env_get("GRAFT_REFS", refs, sizeof(refs))) {
        fprintf(stderr, "bench_import: run scripts/fetch_models.sh first\n");
        return 1;
    }
    printf("%-5s %14s %18s %10s %22s\n", "model", "graft import", "ORT session create", "ratio",
           "reference executor");
    for (size_t m = 0; m < sizeof(MODELS) / sizeof(MODELS[0]); m++) {
        char path[4096], in_path[4200];
        if (!env_get(MODELS[m][1], path, sizeof(path))) continue;
        onnx_input_shape shape = {.name = "x", .ndim = 4, .dims = {1, 3, 640, 640}};
        onnx_import_opts opts = {.shapes = MODELS[m][2] ? &shape : NULL, .nshapes = MODELS[m][2] ? 1 : 0};
        double t_imp[200], t_run[200];
        ir_module *mod = NULL;
        ir_ctx_t *keep = NULL;
        gr_diag d;
        for (int r = 0; r < runs; r++) {
            ir_ctx_t *ctx = ir_ctx_new();
            gr_diag_clear(&d);
            double t0 = bench_now_ms();
            if (onnx_import_file(ctx, path, &opts, &mod, &d) != GR_OK) {
                gr_diag_print(&d);
                return 1;
            }
            t_imp[r] = bench_now_ms() - t0;
            if (r == runs - 1) keep = ctx;
            else ir_ctx_free(ctx);
        }
        snprintf(in_path, sizeof(in_path), "%s/%s/input_0.npy", refs, MODELS[m][0]);
        rt_tensor *t = NULL;
        rt_exec_t *x = NULL;
        if (rt_npy_load(in_path, &t, &d) != GR_OK || rt_exec_new(mod, "main", &x, &d) != GR_OK) {
            gr_diag_print(&d);
            return 1;
        }
        rt_value in = rt_value_tensor(t);
        int nrun = runs < 5 ? runs : 5;
        for (int r = 0; r <= nrun; r++) {
            rt_value out = {0};
            double t0 = bench_now_ms();
            if (rt_exec_run(x, &in, 1, &out, &d) != GR_OK) {
                gr_diag_print(&d);
                return 1;
            }
            if (r) t_run[r - 1] = bench_now_ms() - t0; /* the first run is a warm-up */
            rt_value_clear(&out);
        }
        double imp = bench_median(t_imp, runs), ort = ort_session_ms(MODELS[m][0], runs);
        printf("%-5s %11.1f ms %15.1f ms %10.2f %19.1f ms\n", MODELS[m][0], imp, ort,
               ort > 0 ? imp / ort : 0.0, bench_median(t_run, nrun));
        rt_value_clear(&in);
        rt_exec_free(x);
        ir_ctx_free(keep);
    }
    printf("(medians of %d runs; ORT 1 intra-op thread, graph optimizations on; the reference "
           "executor is single-threaded plain C apart from its 2-thread GEMM)\n", runs);
    return 0;
}
