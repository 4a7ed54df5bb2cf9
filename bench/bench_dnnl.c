/* graft with oneDNN vs ONNX Runtime on the PP-OCR models, side by side in one run.
 *
 *   build/bench/bench_dnnl [--runs N] [--warmup N] [--model det|rec|cls]... [--report] [--artifact]
 *
 * Per model (in its own child process, so peak memory is per model): import with the fixed
 * input shape, default pipeline, partition for `dnnl` (the rest on the host), check the output
 * against ONNX Runtime's reference output for the same input (build/third_party/refs), then
 * alternate one graft run and one ORT run (scripts/bench_dnnl_ort.js, a server on a pipe) for
 * N runs after the warm-up, and print the medians, the peak memory above each process's
 * baseline, the latency ratio and the share of conv/matmul FLOPs offloaded. Threads: the same
 * count for both (GRAFT_NUM_THREADS, default all cores). Models come from
 * build/third_party/models.env (scripts/fetch_models.sh).
 *
 * The order of the sides rotates every round (see the loop). --artifact adds the deployable path: the same partitioned module through graft_model_build
 * (what `graft build --backend dnnl` writes: fused host groups compiled by LLVM, the dnnl
 * regions as their JSON graphs and constants) -> graft_model_load_buffer -> graft_model_run,
 * timed in the same alternation (in-process, artifact, ORT), checked against ORT's output too.
 * Its build and load times are printed; graft_MiB then covers both executors. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench_util.h"
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform.h"
#include "runtime/dnnl.h"
#include "runtime/executor.h"
#include "runtime/graft_model.h"
#include "runtime/npy.h"

typedef struct model_def {
    const char *name, *env_key;
    int64_t shape[4];
} model_def;

static const model_def MODELS[] = {
    {"det", "GRAFT_MODEL_DET", {1, 3, 640, 640}},
    {"rec", "GRAFT_MODEL_REC", {1, 3, 48, 320}},
    {"cls", "GRAFT_MODEL_CLS", {1, 3, 48, 192}},
};

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

typedef struct ort_proc {
    pid_t pid;
    FILE *to, *from;
} ort_proc;

static int ort_start(ort_proc *p, const char *onnx, const int64_t *shape, int threads, const char *input) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return -1;
    char sh[64], th[16];
    snprintf(sh, sizeof sh, "%ldx%ldx%ldx%ld", (long)shape[0], (long)shape[1], (long)shape[2], (long)shape[3]);
    snprintf(th, sizeof th, "%d", threads);
    p->pid = fork();
    if (p->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp("node", "node", "scripts/bench_dnnl_ort.js", "--onnx", onnx, "--shape", sh, "--threads", th, "--input",
               input, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    char line[64];
    if (!fgets(line, sizeof line, p->from) || strncmp(line, "ready", 5)) return -1;
    return 0;
}

static double ort_cmd(ort_proc *p, const char *cmd) {
    char line[64];
    fprintf(p->to, "%s\n", cmd);
    fflush(p->to);
    if (!fgets(line, sizeof line, p->from)) return -1;
    return atof(line);
}

static void ort_stop(ort_proc *p) {
    fprintf(p->to, "quit\n");
    fflush(p->to);
    fclose(p->to);
    fclose(p->from);
    waitpid(p->pid, NULL, 0);
}

static double max_abs_diff(const rt_value *res, const rt_tensor *ref) {
    const rt_tensor *out = res->kind == RT_VAL_TENSOR   ? res->u.t
                           : res->kind == RT_VAL_TUPLE ? res->u.tuple.items[0].u.t
                                                        : NULL;
    if (!out || rt_tensor_numel(out) != rt_tensor_numel(ref)) return -1;
    double max_abs = 0;
    for (int64_t i = 0; i < rt_tensor_numel(ref); i++) {
        double e = fabs(rt_tensor_get_f64(out, i) - rt_tensor_get_f64(ref, i));
        if (e > max_abs || isnan(e)) max_abs = isnan(e) ? INFINITY : e;
    }
    return max_abs;
}

static int run_model(const model_def *md, int runs, int warmup, bool report, bool artifact) {
    long base_kb = status_kb("VmRSS");
    char *path = env_value(md->env_key), *refs = env_value("GRAFT_REFS");
    if (!path || !refs) {
        fprintf(stderr, "bench_dnnl: %s: no model path; run scripts/fetch_models.sh\n", md->name);
        return 1;
    }
    char in_path[4096], out_path[4096];
    snprintf(in_path, sizeof in_path, "%s/%s/input_0.npy", refs, md->name);
    snprintf(out_path, sizeof out_path, "%s/%s/output_0.npy", refs, md->name);
    int rc = 1;
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    onnx_input_shape sh = {"x", 4, {0}};
    memcpy(sh.dims, md->shape, sizeof md->shape);
    onnx_import_opts io = {&sh, 1, NULL, 0, false};
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
    double t0 = bench_now_ms();
    gr_status st = onnx_import_file(ctx, path, &io, &m, &d);
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
    if (!st) st = rt_npy_load(in_path, &input, &d);
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
    int threads = rt_dnnl_num_threads();
    ort_proc op;
    if (ort_start(&op, path, md->shape, threads, in_path)) {
        fprintf(stderr, "bench_dnnl: cannot start the ONNX Runtime side (node scripts/bench_dnnl_ort.js)\n");
        rt_value_clear(&arg);
        goto done;
    }
    double *tg = calloc((size_t)runs, sizeof(double)), *to = calloc((size_t)runs, sizeof(double));
    double *ta = calloc((size_t)runs, sizeof(double));
    /* the order rotates every round: a run right after ORT's shares the cores with its
     * spinning pool threads, and no side should always be the one that follows it */
    for (int r = -warmup; r < runs && !st; r++) {
        double g = 0, t_art = 0, o = 0;
        for (int k = 0; k < 3 && !st; k++) {
            int which = ((r + warmup) + k) % 3;
            double a = bench_now_ms();
            if (which == 0) {
                st = rt_exec_run(x, &arg, 1, &res, &d);
                g = bench_now_ms() - a;
                rt_value_clear(&res);
            } else if (which == 1 && gm) {
                st = graft_model_run(gm, &arg, 1, &res, &d);
                t_art = bench_now_ms() - a;
                rt_value_clear(&res);
            } else if (which == 2) {
                o = ort_cmd(&op, "run");
            }
        }
        if (r >= 0) {
            tg[r] = g;
            ta[r] = t_art;
            to[r] = o;
        }
    }
    long ort_kb = (long)ort_cmd(&op, "mem");
    ort_stop(&op);
    rt_value_clear(&arg);
    if (st) {
        fprintf(stderr, "bench_dnnl: %s: run: %s\n", md->name, d.msg);
        free(tg);
        free(to);
        free(ta);
        goto done;
    }
    long graft_kb = status_kb("VmHWM") - base_kb;
    double mg = bench_median(tg, runs), mo = bench_median(to, runs), ma = bench_median(ta, runs);
    printf("%-4s %7d %10.2f %10.2f %7.3f %11.1f %11.1f %8.1f%% %10.2e %7.1fs", md->name, threads, mg, mo, mg / mo,
           (double)graft_kb / 1024.0, (double)ort_kb / 1024.0, total > 0 ? 100.0 * (total - host) / total : 0.0,
           max_abs, t_build / 1e3);
    if (gm) {
        graft_model_info info;
        graft_model_get_info(gm, &info);
        printf(" %10.2f %9.3f %10.2e %8.0fms %8.0fms %5u/%u/%u", ma, ma / mo, art_abs, t_abuild, t_aload, info.nextern,
               info.nhost, info.nkernel);
    }
    printf("\n");
    fflush(stdout);
    free(tg);
    free(to);
    free(ta);
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

int main(int argc, char **argv) {
    /* Debian's oneDNN runs on OpenMP; with busy-waiting workers a shared machine (more
     * runnable threads than cores) stalls every barrier. libgomp reads the policy when it
     * loads, so set it and start again. */
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        execv("/proc/self/exe", argv);
    }
    int runs = 20, warmup = 3;
    bool report = false, artifact = false, pick[3] = {false, false, false}, any = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--report")) report = true;
        else if (!strcmp(argv[i], "--artifact")) artifact = true;
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            i++;
            for (int k = 0; k < 3; k++)
                if (!strcmp(argv[i], MODELS[k].name)) pick[k] = any = true;
        } else {
            fprintf(stderr, "usage: bench_dnnl [--runs N] [--warmup N] [--model det|rec|cls]... [--report] [--artifact]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    if (warmup < 0) warmup = 0;
    printf("graft (oneDNN backend) vs ONNX Runtime, alternating runs, medians of %d after %d warm-up (OMP_WAIT_POLICY=%s)\n",
           runs, warmup, getenv("OMP_WAIT_POLICY"));
    printf("%-4s %7s %10s %10s %7s %11s %11s %9s %10s %8s", "model", "threads", "graft_ms", "ort_ms", "ratio",
           "graft_MiB", "ort_MiB", "dense_dnnl", "maxabs_ort", "build");
    if (artifact)
        printf(" %10s %9s %10s %10s %10s %s", "artifact_ms", "art_ratio", "art_maxabs", "art_build", "art_load",
               "extern/host/ref");
    printf("\n");
    fflush(stdout);
    int rc = 0;
    for (int k = 0; k < 3; k++) {
        if (any && !pick[k]) continue;
        pid_t pid = fork();
        if (pid == 0) _exit(run_model(&MODELS[k], runs, warmup, report, artifact));
        int ws = 0;
        waitpid(pid, &ws, 0);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws)) rc = 1;
    }
    return rc;
}
