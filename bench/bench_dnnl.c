/* graft with oneDNN vs ONNX Runtime and OpenVINO on the PP-OCR models and the model zoo, side by side.
 *
 *   build/bench/bench_dnnl [--runs N] [--warmup N] [--pause-ms N] [--model NAME]...
 *                          [--isa native|avx2]... [--report] [--artifact]
 *
 * Models: PP-OCR det / rec / cls (build/third_party/models.env, scripts/fetch_models.sh) and the
 * zoo (build/third_party/zoo or GRAFT_ZOO, scripts/fetch_zoo.sh; the input shape is that of the
 * saved reference input), and int8 variants of two of them from ORT's quantizer, the QDQ model as
 * it is, and resnet18 in ORT's QOperator form too (build/third_party/int8 or GRAFT_INT8, scripts/fetch_int8_zoo.sh). One table per ISA:
 * `native` is oneDNN's choice on this CPU, `avx2` caps oneDNN with ONEDNN_MAX_CPU_ISA=AVX2 (set in each model's child before oneDNN starts);
 * default both (only native when ONEDNN_MAX_CPU_ISA is already set). The peers run at the CPU's
 * own ISA in both tables: ONNX Runtime has no such cap, and the cap is cleared for OpenVINO's
 * process (its CPU plugin is built on oneDNN). Each table ends with the geometric mean of the ratios.
 *
 * Per model (in its own child process, so peak memory is per model): import with the fixed
 * input shape, default pipeline, partition for `dnnl` (the rest on the host), check the output
 * against ONNX Runtime's reference output for the same input (build/third_party/refs), then
 * alternate graft, two ORT sessions and OpenVINO in processes of their own (scripts/bench_dnnl_ort.js
 * and scripts/bench_dnnl_ov.py, servers on a pipe; ORT's figures are the faster session's;
 * OpenVINO's CPU plugin with PERFORMANCE_HINT=LATENCY and f32 inference precision, from the venv of
 * scripts/openvino_env.sh, or GRAFT_OV_PYTHON; without it the OpenVINO columns are "-") for N
 * rounds after the warm-up:
 * each side, --pause-ms (default 50) after the previous one's, runs twice, an "idle" run and a
 * "warm" one right after it. Prints the medians of both, the peak memory above each process's
 * baseline, the latency ratios (to ORT, to OpenVINO and to the faster of the two) and the share
 * of conv/matmul FLOPs offloaded; OpenVINO's output is checked against the reference as graft's
 * is. Threads: the same count for every engine (GRAFT_NUM_THREADS, default all cores). Models come from
 * build/third_party/models.env (scripts/fetch_models.sh).
 *
 * The order of the sides rotates every round (see the loop). --artifact adds the deployable path: the same partitioned module through graft_model_build
 * (what `graft build --backend dnnl` writes: fused host groups compiled by LLVM, the dnnl
 * regions as their JSON graphs and constants) -> graft_model_load_buffer -> graft_model_run,
 * timed in the same alternation (in-process, artifact, ORT, ORT), checked against ORT's output too.
 * Its build and load times are printed; graft_MiB then covers both executors. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <oneapi/dnnl/dnnl.h>

#include "base/compare.h"
#include "bench/bench_util.h"
#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "runtime/npy.h"

typedef struct model_def {
    const char *name, *env_key; /* env_key NULL: a zoo model */
    bool int8;                  /* an int8 model from ORT's quantizer, in build/third_party/int8
                                   or GRAFT_INT8 (scripts/fetch_int8_zoo.sh) */
} model_def;

static const model_def MODELS[] = {
    {"det", "GRAFT_MODEL_DET"},
    {"rec", "GRAFT_MODEL_REC"},
    {"cls", "GRAFT_MODEL_CLS"},
    {"resnet18", NULL},
    {"mobilenet_v3_large", NULL},
    {"regnet_y_400mf", NULL},
    {"shufflenet_v2_x1_0", NULL},
    {"mnasnet1_0", NULL},
    {"convnext_tiny", NULL},
    {"googlenet", NULL},
    {"bert_encoder", NULL},
    {"swin_t", NULL},
    {"densenet121", NULL},
    {"r3d_18", NULL},
    {"lraspp_mobilenet_v3_large", NULL},
    {"deit_tiny", NULL},
    {"gpt2_small", NULL},
    {"encoder_prenorm_gelu", NULL},
    {"encoder_seqfirst", NULL},
    {"audio_encoder", NULL},
    {"resnet18_qdq_pc", NULL, true},
    {"mobilenet_v3_large_qdq_pc", NULL, true},
    {"resnet18_qop", NULL, true},
};
#define NMODELS ((int)(sizeof(MODELS) / sizeof(MODELS[0])))

/* oneDNN's effective ISA, by name */
static const char *isa_name(dnnl_cpu_isa_t isa) {
    static const struct {
        dnnl_cpu_isa_t isa;
        const char *name;
    } NAMES[] = {
        {dnnl_cpu_isa_sse41, "sse41"},
        {dnnl_cpu_isa_avx, "avx"},
        {dnnl_cpu_isa_avx2, "avx2"},
        {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
        {dnnl_cpu_isa_avx512_core, "avx512_core"},
        {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
        {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
        {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
    };
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++)
        if (NAMES[i].isa == isa) return NAMES[i].name;
    return "other";
}

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1);
    if (f) fclose(f);
    return v;
}

/* KEY=VALUE from models.env (environment variables win). */
static char *env_value(const char *key) {
    const char *e = getenv(key);
    if (e) return strdup(e);
    FILE *f = fopen("build/third_party/models.env", "r");
    char line[4096];
    char *out = NULL;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == '=') {
            line[strcspn(line, "\n")] = 0;
            out = strdup(line + kl + 1);
        }
    if (f) fclose(f);
    return out;
}

/* conv / matmul FLOPs of the entry functions' op calls (what stays on the host after a
 * partition, or everything before). */
static double dense_flops(const ir_module *m) {
    double t = 0;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->gvars[i]->name, "main") || m->funcs[i]->kind != IR_FUNC) continue;
        const ir_func *f = IR_AS(m->funcs[i], ir_func);
        if (f->body->kind != IR_SEQ) continue;
        const ir_seq *s = IR_AS(f->body, ir_seq);
        for (uint32_t b = 0; b < s->nblocks; b++)
            for (uint32_t k = 0; k < s->blocks[b]->n; k++) {
                const ir_expr *v = s->blocks[b]->bindings[k].value;
                if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
                const char *nm = IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name;
                if (strstr(nm, "conv") || !strcmp(nm, "relax.matmul")) t += byoc_call_flops(IR_AS(v, ir_call));
            }
    }
    return t;
}

/* The Python of scripts/openvino_env.sh's venv (GRAFT_OV_PYTHON wins), NULL when absent. */
static const char *ov_python(void) {
    const char *e = getenv("GRAFT_OV_PYTHON");
    if (e && *e) return e;
    static const char *venv = "build/third_party/ovvenv/bin/python";
    return access(venv, X_OK) == 0 ? venv : NULL;
}

/* OpenVINO's server; *maxabs: its output's max |difference| from ref (INFINITY: NaN / shape). */
static int ov_start(bench_peer *p, const char *onnx, const rt_tensor *x, int threads, const char *input, const char *ref,
                    double *maxabs) {
    const char *py = ov_python();
    if (!py) return -1;
    char sh[128], th[16];
    bench_shape_arg(x->shape, x->dl.ndim, sh, sizeof sh);
    snprintf(th, sizeof th, "%d", threads);
    char *argv[] = {(char *)py, "scripts/bench_dnnl_ov.py", "--onnx", (char *)onnx, "--shape", sh, "--threads", th,
                    "--input", (char *)input, "--ref", (char *)ref, NULL};
    return bench_peer_start(p, argv, maxabs);
}

static double max_abs_diff(const rt_value *res, const rt_tensor *ref) {
    const rt_tensor *out = res->kind == RT_VAL_TENSOR   ? res->u.t
                           : res->kind == RT_VAL_TUPLE ? res->u.tuple.items[0].u.t
                                                        : NULL;
    if (!out || !rt_tensor_same_shape(out, ref)) return -1;
    gr_cmp_result r; /* a NaN anywhere makes it INFINITY */
    gr_cmp_tensor(out, ref, &(gr_cmp_opts){0}, &r);
    return r.max_abs;
}

/* The model's file and its reference directory (malloc'd), NULL when not in the cache. */
static bool model_paths(const model_def *md, char **path, char **refs) {
    if (md->env_key) {
        *path = env_value(md->env_key);
        *refs = env_value("GRAFT_REFS");
    } else if (md->int8) {
        const char *dir = getenv("GRAFT_INT8") ? getenv("GRAFT_INT8") : "build/third_party/int8";
        *path = malloc(strlen(dir) + strlen(md->name) + 8);
        *refs = malloc(strlen(dir) + 8);
        if (*path) sprintf(*path, "%s/%s.onnx", dir, md->name);
        if (*refs) sprintf(*refs, "%s/refs", dir);
    } else {
        const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
        *path = malloc(strlen(zoo) + strlen(md->name) + 8);
        *refs = malloc(strlen(zoo) + 8);
        if (*path) sprintf(*path, "%s/%s.onnx", zoo, md->name);
        if (*refs) sprintf(*refs, "%s/refs", zoo);
    }
    return *path && *refs && access(*path, R_OK) == 0;
}

#define MAX_ROUNDS 15

/* the ratios of graft's warm medians to ORT's, OpenVINO's and the faster peer's; idle to ORT's */
enum { R_ORT, R_IDLE, R_OV, R_BEST, NRATIO };
static const char *const RATIO_NAME[NRATIO] = {"/ort", "idle/ort", "/ov", "/best"};

typedef struct bench_opts {
    const byoc_options *options;  /* --backend-opt */
    int runs, warmup, pause_ms;
    bool report, artifact;
} bench_opts;

/* Writes the ratios of graft's medians to the peers' to ratio[R_*] (the parent's geomeans; NAN
 * where OpenVINO did not run). */
static int run_model(const model_def *md, const bench_opts *bo, double *ratio) {
    int runs = bo->runs, warmup = bo->warmup;
    bool report = bo->report, artifact = bo->artifact;
    long base_kb = status_kb("VmRSS");
    char *path = NULL, *refs = NULL;
    if (!model_paths(md, &path, &refs)) {
        fprintf(stderr, "bench_dnnl: %s: not in the cache; run scripts/fetch_models.sh and scripts/fetch_zoo.sh\n",
                md->name);
        free(path);
        free(refs);
        return 1;
    }
    char in_path[4096], out_path[4096];
    snprintf(in_path, sizeof in_path, "%s/%s/input_0.npy", refs, md->name);
    snprintf(out_path, sizeof out_path, "%s/%s/output_0.npy", refs, md->name);
    int rc = 1;
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx); /* FoldConstant folds on the reference kernels */
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL, *opt = NULL, *part = NULL;
    rt_exec_t *x = NULL;
    graft_model *gm = NULL;
    double t_abuild = 0, t_aload = 0, art_abs = 0;
    rt_tensor *input = NULL, *ref = NULL;
    rt_value res = {0};
    byoc_notes notes;
    byoc_notes_init(&notes);
    const char *backends[] = {getenv("BENCH_DNNL_BACKEND") ? getenv("BENCH_DNNL_BACKEND") : "dnnl"};
    byoc_partition_opts po = {0};
    po.notes = &notes;
    /* as graft run: the weights of the regions are the runtime's (the artifact is built from the
     * partitioned module, which needs them in the IR) */
    po.release_consts = !bo->artifact;
    po.options = bo->options;
    gr_status st = rt_npy_load(in_path, &input, &d);
    if (st) {
        fprintf(stderr, "bench_dnnl: %s: %s\n", md->name, d.msg);
        goto done;
    }
    onnx_input_shape sh = {"x", input->dl.ndim, {0}};
    memcpy(sh.dims, input->shape, sizeof(int64_t) * (size_t)input->dl.ndim);
    onnx_import_opts io = {&sh, 1, NULL, 0, false};
    double t0 = bench_now_ms();
    st = onnx_import_file(ctx, path, &io, &m, &d);
    if (!st) st = ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d);
    if (!st) st = byoc_partition(ctx, opt, backends, 1, &po, &part, &d);
    if (!st) st = rt_exec_new(part, "main", &x, &d);
    double t_build = bench_now_ms() - t0;
    if (!st && artifact) {
        uint8_t *buf = NULL;
        size_t len = 0;
        t0 = bench_now_ms();
        st = graft_model_build(part, &buf, &len, &d);
        t_abuild = bench_now_ms() - t0;
        t0 = bench_now_ms();
        if (!st) st = graft_model_load_buffer(buf, len, &gm, &d);
        t_aload = bench_now_ms() - t0;
        free(buf);
    }
    if (!st) st = rt_npy_load(out_path, &ref, &d);
    if (st) {
        fprintf(stderr, "bench_dnnl: %s: %s\n", md->name, d.msg);
        goto done;
    }
    if (report && po.after_merge) {
        json_t *rep = byoc_report_json(ctx, po.after_merge, backends, 1, &notes);
        byoc_report_print(rep, stdout);
        json_decref(rep);
    }
    double total = dense_flops(opt), host = dense_flops(part);
    rt_value arg = rt_value_tensor(rt_tensor_retain(input));
    st = rt_exec_run(x, &arg, 1, &res, &d);
    if (st) {
        fprintf(stderr, "bench_dnnl: %s: run: %s\n", md->name, d.msg);
        rt_value_clear(&arg);
        goto done;
    }
    double max_abs = max_abs_diff(&res, ref);
    if (max_abs < 0) {
        fprintf(stderr, "bench_dnnl: %s: output shape differs from ONNX Runtime's\n", md->name);
        rt_value_clear(&arg);
        goto done;
    }
    if (gm) {
        rt_value_clear(&res);
        st = graft_model_run(gm, &arg, 1, &res, &d);
        art_abs = st ? -1 : max_abs_diff(&res, ref);
        if (art_abs < 0) {
            fprintf(stderr, "bench_dnnl: %s: artifact run: %s\n", md->name, st ? d.msg : "output shape differs");
            rt_value_clear(&arg);
            goto done;
        }
    }
    rt_value_clear(&res);
    rt_dnnl_opts topts = {.threads = byoc_option_int(bo->options, byoc_backend_find("dnnl"), "threads")};
    int threads = rt_dnnl_threads(&topts);
    /* Two ONNX Runtime sessions, each in its own process, and ORT's figures are those of the
     * faster one: on this 2-vCPU VM a session's latency is bimodal from one process to the next
     * (PP-OCR det 52 or 92 ms at 2 threads, whatever its spinning or affinity options), and
     * graft should not win by ORT's bad luck. */
    enum { GRAFT, ARTIFACT, ORT_A, ORT_B, OV, NSIDES };
    bench_peer op[3];
    for (int o = 0; o < 2 && !st; o++)
        if (bench_ort_start(&op[o], path, input->shape, input->dl.ndim, threads, in_path)) {
            fprintf(stderr, "bench_dnnl: cannot start the ONNX Runtime side (node scripts/bench_dnnl_ort.js)\n");
            if (o) bench_peer_stop(&op[0]);
            rt_value_clear(&arg);
            goto done;
        }
    double ov_abs = NAN;
    bool ov = ov_start(&op[2], path, input, threads, in_path, out_path, &ov_abs) == 0;
    if (!ov)
        fprintf(stderr, "bench_dnnl: %s: no OpenVINO side (%s)\n", md->name,
                ov_python() ? "scripts/bench_dnnl_ov.py failed" : "run scripts/openvino_env.sh");
    /* t[side][0][r]: the side's first run after the pause ("idle"), t[side][1][r]: the run right
     * after it ("warm") */
    double *t[NSIDES][2];
    for (int k = 0; k < NSIDES; k++)
        for (int w = 0; w < 2; w++) t[k][w] = calloc((size_t)runs, sizeof(double));
    /* The order rotates every round so no side always follows another. Each side starts
     * after a pause: both sides' pool threads spin for a while after a run (libgomp's default
     * policy, ORT's allow_spinning), and a run must not share the cores with them. The first
     * run after the pause is what a server sees for a request that arrives at an idle machine
     * (worker threads asleep); the second, back to back, is the steady state. */
    for (int r = -warmup; r < runs && !st; r++) {
        for (int k = 0; k < NSIDES && !st; k++) {
            int which = ((r + warmup) + k) % NSIDES;
            if ((which == ARTIFACT && !gm) || (which == OV && !ov)) continue;
            if (bo->pause_ms > 0) usleep((useconds_t)bo->pause_ms * 1000);
            for (int w = 0; w < 2 && !st; w++) {
                double a = bench_now_ms(), ms;
                if (which >= ORT_A) ms = bench_peer_cmd(&op[which - ORT_A], "run");
                else {
                    st = which == GRAFT ? rt_exec_run(x, &arg, 1, &res, &d) : graft_model_run(gm, &arg, 1, &res, &d);
                    ms = bench_now_ms() - a;
                    rt_value_clear(&res);
                }
                if (r >= 0) t[which][w][r] = ms;
            }
        }
    }
    double med[NSIDES][2];
    for (int k = 0; k < NSIDES; k++)
        for (int w = 0; w < 2; w++) {
            med[k][w] = bench_median(t[k][w], runs);
            free(t[k][w]);
        }
    int best = med[ORT_B][1] < med[ORT_A][1];
    long ort_kb = (long)bench_peer_cmd(&op[best], "mem"), ov_kb = ov ? (long)bench_peer_cmd(&op[2], "mem") : -1;
    for (int o = 0; o < (ov ? 3 : 2); o++) bench_peer_stop(&op[o]);
    rt_value_clear(&arg);
    if (st) {
        fprintf(stderr, "bench_dnnl: %s: run: %s\n", md->name, d.msg);
        goto done;
    }
    long graft_kb = status_kb("VmHWM") - base_kb;
    double mg = med[GRAFT][1], mo = med[ORT_A + best][1], ma = med[ARTIFACT][1];
    double ig = med[GRAFT][0], idle_ort = med[ORT_A + best][0], mv = ov ? med[OV][1] : NAN;
    ratio[R_ORT] = mg / mo;
    ratio[R_IDLE] = ig / idle_ort;
    ratio[R_OV] = mg / mv;
    ratio[R_BEST] = mg / (ov && mv < mo ? mv : mo);
    char ov_ms[16] = "-", ov_r[16] = "-", ov_mib[16] = "-", ov_err[16] = "-";
    if (ov) {
        snprintf(ov_ms, sizeof ov_ms, "%.2f", mv);
        snprintf(ov_r, sizeof ov_r, "%.3f", ratio[R_OV]);
        snprintf(ov_mib, sizeof ov_mib, "%.1f", (double)ov_kb / 1024.0);
        snprintf(ov_err, sizeof ov_err, "%.2e", ov_abs);
    }
    printf("%-18s %-16s %7d %10.2f %10.2f %10s %7.3f %7s %7.3f %10.2f %10.2f %8.3f %11.1f %11.1f %11s %8.1f%% %10.2e "
           "%10s %7.1fs",
           md->name, isa_name(dnnl_get_effective_cpu_isa()), threads, mg, mo, ov_ms, ratio[R_ORT], ov_r, ratio[R_BEST], ig,
           idle_ort, ratio[R_IDLE], (double)graft_kb / 1024.0, (double)ort_kb / 1024.0, ov_mib,
           total > 0 ? 100.0 * (total - host) / total : 0.0, max_abs, ov_err, t_build / 1e3);
    if (gm) {
        graft_model_info info;
        graft_model_get_info(gm, &info);
        printf(" %10.2f %9.3f %10.2e %8.0fms %8.0fms %5u/%u/%u", ma, ma / mo, art_abs, t_abuild, t_aload, info.nextern,
               info.nhost, info.nkernel);
    }
    printf("\n");
    fflush(stdout);
    rc = 0;
done:
    byoc_notes_free(&notes);
    if (input) rt_tensor_release(input);
    if (ref) rt_tensor_release(ref);
    rt_exec_free(x);
    graft_model_free(gm);
    ir_ctx_free(ctx);
    free(path);
    free(refs);
    return rc;
}

/* Over the rounds (each model in a fresh process per round): per model the median of each
 * ratio with its range; the geomean of the medians. A VM's slow periods and a process's bimodal
 * latency move one round's ratio; the median of several is the figure to quote. */
static void print_rounds(double rr[][NRATIO][MAX_ROUNDS], int rounds) {
    printf("medians over %d rounds (each round every model in fresh processes)\n%-18s", rounds, "model");
    for (int w = 0; w < NRATIO; w++) printf(" %8s %17s", RATIO_NAME[w], "range");
    printf("\n");
    double logsum[NRATIO] = {0};
    int n[NRATIO] = {0};
    for (int k = 0; k < NMODELS; k++) {
        if (!(rr[k][R_ORT][0] > 0)) continue;
        printf("%-18s", MODELS[k].name);
        for (int w = 0; w < NRATIO; w++) {
            double v[MAX_ROUNDS];
            int m = 0;
            for (int r = 0; r < rounds; r++)
                if (rr[k][w][r] > 0) v[m++] = rr[k][w][r];
            if (m < rounds) {
                printf(" %8s %17s", "-", "");
                continue;
            }
            double med = bench_median(v, m); /* sorts v */
            printf(" %8.3f %8.3f-%-8.3f", med, v[0], v[m - 1]);
            logsum[w] += log(med);
            n[w]++;
        }
        printf("\n");
    }
    if (n[R_ORT]) {
        printf("%-18s", "geomean");
        for (int w = 0; w < NRATIO; w++)
            if (n[w]) printf(" %8.3f %17s", exp(logsum[w] / n[w]), "");
            else printf(" %8s %17s", "-", "");
        printf("   (%d models)\n", n[R_ORT]);
    }
    fflush(stdout);
}

/* oneDNN's effective ISA in a child (capped at AVX2 or not): the parent never starts oneDNN, whose
 * ISA, once read, its forked children would inherit. */
static void child_isa(bool avx2, char *out, size_t n) {
    int fd[2];
    snprintf(out, n, "?");
    if (pipe(fd)) return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        if (avx2) setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
        const char *name = isa_name(dnnl_get_effective_cpu_isa());
        ssize_t w = write(fd[1], name, strlen(name));
        _exit(w < 0);
    }
    close(fd[1]);
    ssize_t k = pid > 0 ? read(fd[0], out, n - 1) : -1;
    if (k > 0) out[k] = 0;
    close(fd[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
}

int main(int argc, char **argv) {
    int runs = 20, warmup = 3, nisa = 0, pause_ms = 50, rounds = 1;
    byoc_options *options = byoc_options_new();
    /* GRAFT_NUM_THREADS: the models' dnnl.threads (a --backend-opt after it wins) */
    const char *nt = getenv("GRAFT_NUM_THREADS");
    char nt_opt[64];
    snprintf(nt_opt, sizeof nt_opt, "dnnl.threads=%d", nt ? atoi(nt) : 0);
    gr_diag nt_d;
    gr_diag_clear(&nt_d);
    byoc_options_set(options, nt_opt, &nt_d);
    bool report = false, artifact = false, pick[NMODELS] = {false}, any = false;
    char opt_text[512] = "";
    const char *isas[2];
    for (int i = 1; i < argc; i++) {
        bool ok = true;
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) pause_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--report")) report = true;
        else if (!strcmp(argv[i], "--artifact")) artifact = true;
        else if (!strcmp(argv[i], "--backend-opt") && i + 1 < argc) {
            gr_diag d;
            gr_diag_clear(&d);
            /* named in the header: rows with dnnl.precision=bf16 are bf16 rows */
            size_t used = strlen(opt_text);
            snprintf(opt_text + used, sizeof opt_text - used, "%s%s", used ? " " : "; options ", argv[i + 1]);
            if (byoc_options_set(options, argv[++i], &d)) {
                fprintf(stderr, "bench_dnnl: --backend-opt: %s\n", d.msg);
                byoc_options_free(options);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc && nisa < 2 &&
                 (!strcmp(argv[i + 1], "native") || !strcmp(argv[i + 1], "avx2")))
            isas[nisa++] = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            i++;
            ok = false;
            for (int k = 0; k < NMODELS; k++)
                if (!strcmp(argv[i], MODELS[k].name)) ok = pick[k] = any = true;
        } else ok = false;
        if (!ok) {
            fprintf(stderr, "usage: bench_dnnl [--runs N] [--warmup N] [--pause-ms N] [--rounds N] [--model NAME]... "
                            "[--isa native|avx2]... [--report] [--artifact] [--backend-opt dnnl.NAME=VALUE]...\n  models:");
            for (int k = 0; k < NMODELS; k++) fprintf(stderr, " %s", MODELS[k].name);
            fprintf(stderr, "\n");
            byoc_options_free(options);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    if (warmup < 0) warmup = 0;
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    if (!nisa) {
        isas[nisa++] = "native";
        if (!getenv("ONEDNN_MAX_CPU_ISA")) isas[nisa++] = "avx2";
    }
    char cpu[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (ci && fgets(line, sizeof line, ci))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    if (ci) fclose(ci);
    /* per model, the ratio its child measured (NAN: failed or skipped) */
    double *ratios = mmap(NULL, sizeof(double) * NRATIO * NMODELS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ratios == MAP_FAILED) return 1;
    int rc = 0;
    for (int t = 0; t < nisa; t++) {
        bool avx2 = !strcmp(isas[t], "avx2");
        char isa[64];
        child_isa(avx2, isa, sizeof isa);
        printf("%sgraft (oneDNN backend) vs ONNX Runtime and OpenVINO on %s; oneDNN ISA %s%s; alternating runs, medians "
               "of %d after %d warm-up, %d ms apart%s\n",
               t ? "\n" : "", cpu, isa, avx2 ? " (capped: ONEDNN_MAX_CPU_ISA=AVX2)" : " (native)", runs, warmup, pause_ms,
               opt_text);
        printf("%-18s %-16s %7s %10s %10s %10s %7s %7s %7s %10s %10s %8s %11s %11s %11s %9s %10s %10s %8s", "model", "isa",
               "threads", "graft_ms", "ort_ms", "ov_ms", "/ort", "/ov", "/best", "idle_graft", "idle_ort", "idle/ort",
               "graft_MiB", "ort_MiB", "ov_MiB", "dense_dnnl", "maxabs_ort", "maxabs_ov", "build");
        if (artifact)
            printf(" %10s %9s %10s %10s %10s %s", "artifact_ms", "art_ratio", "art_maxabs", "art_build", "art_load",
                   "extern/host/ref");
        printf("\n");
        fflush(stdout);
        /* per model and round, the ratios (NAN: failed or skipped) */
        double rr[NMODELS][NRATIO][MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            double logsum[NRATIO] = {0};
            int nratio[NRATIO] = {0};
            if (r) printf("(round %d of %d)\n", r + 1, rounds);
            fflush(stdout); /* before the fork: the child would print it again */
            for (int k = 0; k < NMODELS; k++) {
                for (int w = 0; w < NRATIO; w++) ratios[NRATIO * k + w] = rr[k][w][r] = NAN;
                if (any && !pick[k]) continue;
                char *path = NULL, *refs = NULL;
                bool have = model_paths(&MODELS[k], &path, &refs);
                free(path);
                free(refs);
                if (!have && !any) continue; /* not fetched: only an explicit --model is an error */
                pid_t pid = fork();
                if (pid == 0) {
                    if (avx2) setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1); /* before the child's first oneDNN call */
                    bench_opts bo = {options, runs, warmup, pause_ms, report, artifact};
                    _exit(run_model(&MODELS[k], &bo, &ratios[NRATIO * k]));
                }
                int ws = 0;
                waitpid(pid, &ws, 0);
                if (!WIFEXITED(ws) || WEXITSTATUS(ws)) rc = 1;
                else if (ratios[NRATIO * k + R_ORT] > 0 && ratios[NRATIO * k + R_IDLE] > 0)
                    for (int w = 0; w < NRATIO; w++) {
                        double v = ratios[NRATIO * k + w];
                        rr[k][w][r] = v;
                        if (v > 0) {
                            logsum[w] += log(v);
                            nratio[w]++;
                        }
                    }
            }
            char g[NRATIO][16];
            for (int w = 0; w < NRATIO; w++) {
                if (nratio[w]) snprintf(g[w], sizeof g[w], "%.3f", exp(logsum[w] / nratio[w]));
                else snprintf(g[w], sizeof g[w], "-");
            }
            if (nratio[R_ORT])
                printf("%-18s %-16s %7s %10s %10s %10s %7s %7s %7s %10s %10s %8s   (%d models; /ov, /best over %d)\n",
                       "geomean", "", "", "", "", "", g[R_ORT], g[R_OV], g[R_BEST], "", "", g[R_IDLE], nratio[R_ORT],
                       nratio[R_OV]);
            fflush(stdout);
        }
        if (rounds > 1) print_rounds(rr, rounds);
    }
    munmap(ratios, sizeof(double) * NRATIO * NMODELS);
    byoc_options_free(options);
    return rc;
}
