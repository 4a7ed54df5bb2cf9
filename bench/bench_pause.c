/* graft's latency on the oneDNN backend in the setting of bench_dnnl's timed runs, in one
 * process, without the peers: back to back; the two runs after a pause ("idle" and "warm" in
 * bench_dnnl); the two after a pause in which the caches are overwritten (a 96 MiB buffer read
 * and written from two threads, as the peers' runs between graft's do).
 *
 *   build/bench/bench_pause [--model NAME]... [--runs N] [--pause-ms N] [--backend-opt dnnl.K=V]...
 *
 * Zoo models only (build/third_party/zoo or GRAFT_ZOO, scripts/fetch_zoo.sh; input shape from the
 * saved reference input); default mnasnet1_0, 11 rounds, 50 ms pauses. Prints per mode the median
 * and minimum wall time of each run and the calling thread's CPU time: at dnnl.threads=1 that is
 * the run's own work, which holds on a loaded machine where wall time does not. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "byoc/backend.h"
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"

enum { B2B, PAUSE, THRASH, NMODES, MAX_RUNS = 1000 };
static const char *const MODE[NMODES] = {"back to back", "after pause", "pause + thrash"};
#define THRASH_BYTES ((size_t)96 << 20)

static double thread_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* each of two threads adds to every cache line of its half of the buffer */
typedef struct half {
    volatile char *p;
    size_t n;
} half;

static void *thrash_half(void *arg) {
    const half *h = arg;
    for (size_t i = 0; i < h->n; i += 64) h->p[i]++;
    return NULL;
}

static void thrash(char *buf) {
    half h[2] = {{buf, THRASH_BYTES / 2}, {buf + THRASH_BYTES / 2, THRASH_BYTES / 2}};
    pthread_t t;
    bool two = pthread_create(&t, NULL, thrash_half, &h[1]) == 0;
    thrash_half(&h[0]);
    if (two) pthread_join(t, NULL);
    else thrash_half(&h[1]);
}

static int run_model(const char *name, const byoc_options *options, int runs, int pause_ms, char *buf) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4096], in_path[4096];
    snprintf(path, sizeof path, "%s/%s.onnx", zoo, name);
    snprintf(in_path, sizeof in_path, "%s/refs/%s/input_0.npy", zoo, name);
    if (access(path, R_OK) || access(in_path, R_OK)) {
        printf("%s: not in the cache (scripts/fetch_zoo.sh), skipped\n", name);
        return 0;
    }
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL, *opt = NULL, *part = NULL;
    rt_exec_t *x = NULL;
    rt_tensor *input = NULL;
    rt_value res = {0};
    const char *backends[] = {"dnnl"};
    byoc_partition_opts po = {0};
    po.release_consts = true;
    po.options = options;
    gr_status st = rt_npy_load(in_path, &input, &d);
    if (!st) {
        onnx_input_shape sh = {"x", input->dl.ndim, {0}};
        memcpy(sh.dims, input->shape, sizeof(int64_t) * (size_t)input->dl.ndim);
        onnx_import_opts io = {&sh, 1, NULL, 0, false};
        st = onnx_import_file(ctx, path, &io, &m, &d);
    }
    if (!st) st = ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d);
    if (!st) st = byoc_partition(ctx, opt, backends, 1, &po, &part, &d);
    if (!st) st = rt_exec_new(part, "main", &x, &d);
    double *t = calloc((size_t)NMODES * 2 * 2 * (size_t)runs, sizeof(double)); /* [mode][run][wall, cpu][r] */
    if (!st && !t) st = gr_diag_set(&d, GR_ERR_NOMEM, "out of memory");
    rt_value arg = {0};
    if (!st) arg = rt_value_tensor(rt_tensor_retain(input));
    for (int w = 0; w < 3 && !st; w++) {
        st = rt_exec_run(x, &arg, 1, &res, &d);
        rt_value_clear(&res);
    }
    for (int r = 0; r < runs && !st; r++)
        for (int mo = 0; mo < NMODES && !st; mo++) {
            usleep((useconds_t)pause_ms * 1000);
            if (mo == THRASH) {
                thrash(buf);
                usleep((useconds_t)pause_ms * 1000);
            }
            /* back to back: the two runs timed follow three untimed ones */
            for (int k = 0; k < (mo == B2B ? 5 : 2) && !st; k++) {
                double c0 = thread_cpu_ms(), a = bench_now_ms();
                st = rt_exec_run(x, &arg, 1, &res, &d);
                double wall = bench_now_ms() - a, cpu = thread_cpu_ms() - c0;
                rt_value_clear(&res);
                int i = mo == B2B ? k - 3 : k;
                if (i < 0) continue;
                t[(((size_t)mo * 2 + (size_t)i) * 2 + 0) * (size_t)runs + (size_t)r] = wall;
                t[(((size_t)mo * 2 + (size_t)i) * 2 + 1) * (size_t)runs + (size_t)r] = cpu;
            }
        }
    if (st) fprintf(stderr, "bench_pause: %s: %s\n", name, d.msg);
    for (int mo = 0; mo < NMODES && !st; mo++)
        for (int i = 0; i < 2; i++) {
            double *wall = &t[(((size_t)mo * 2 + (size_t)i) * 2 + 0) * (size_t)runs];
            double *cpu = &t[(((size_t)mo * 2 + (size_t)i) * 2 + 1) * (size_t)runs];
            double wm = bench_median(wall, runs), cm = bench_median(cpu, runs); /* sorted: [0] is the min */
            printf("%-26s %-15s %-6s %10.2f %10.2f %10.2f %10.2f\n", name, MODE[mo], i ? "second" : "first", wm, wall[0],
                   cm, cpu[0]);
        }
    rt_value_clear(&arg);
    free(t);
    rt_exec_free(x);
    if (input) rt_tensor_release(input);
    ir_ctx_free(ctx);
    return st ? 1 : 0;
}

int main(int argc, char **argv) {
    int runs = 11, pause_ms = 50, nmodels = 0, rc = 0;
    const char *models[64];
    byoc_options *options = byoc_options_new();
    gr_diag d;
    gr_diag_clear(&d);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc && nmodels < 64) models[nmodels++] = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) pause_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backend-opt") && i + 1 < argc) {
            if (byoc_options_set(options, argv[++i], &d)) {
                fprintf(stderr, "bench_pause: %s\n", d.msg);
                byoc_options_free(options);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: bench_pause [--model NAME]... [--runs N] [--pause-ms N] [--backend-opt dnnl.K=V]...\n");
            byoc_options_free(options);
            return 1;
        }
    }
    if (!nmodels) models[nmodels++] = "mnasnet1_0";
    if (runs < 1) runs = 1;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    if (pause_ms < 0) pause_ms = 0;
    char *buf = malloc(THRASH_BYTES);
    if (!buf) {
        byoc_options_free(options);
        return 1;
    }
    memset(buf, 1, THRASH_BYTES);
    printf("graft (dnnl) run latency, medians and minima of %d rounds, %d ms pauses; cpu: the calling thread's\n", runs,
           pause_ms);
    printf("%-26s %-15s %-6s %10s %10s %10s %10s\n", "model", "mode", "run", "wall_ms", "min_ms", "cpu_ms", "min_cpu");
    for (int i = 0; i < nmodels; i++) rc |= run_model(models[i], options, runs, pause_ms, buf);
    free(buf);
    byoc_options_free(options);
    return rc;
}
