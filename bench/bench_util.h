/* Timing, statistics and the peers' server processes shared by the benchmarks (each bench file
 * is its own program). */
#ifndef GRAFT_BENCH_UTIL_H
#define GRAFT_BENCH_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- a peer (ONNX Runtime, OpenVINO) as a server in a child process, on a pipe ----
 * The servers (scripts/bench_dnnl_ort.js, scripts/bench_dnnl_ov.py) print "ready" once loaded,
 * then answer each command line ("run": the run's ms; "mem": peak KiB) with one number. */

typedef struct bench_peer {
    pid_t pid;
    FILE *to, *from;
} bench_peer;

/* Starts argv (argv[0] found on PATH, without oneDNN's ISA cap) and waits for its "ready" line; what follows "ready" on
 * it (OpenVINO's max |difference| from the reference) goes to *extra. 0 on success. */
static inline int bench_peer_start(bench_peer *p, char *const argv[], double *extra) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return -1;
    fflush(stdout); /* before the fork: the child would print it again */
    p->pid = fork();
    if (p->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        /* the peers run at the CPU's own ISA: OpenVINO's CPU plugin is built on oneDNN and
         * would read the cap set for graft's side */
        unsetenv("ONEDNN_MAX_CPU_ISA");
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    char line[128];
    if (!fgets(line, sizeof line, p->from) || strncmp(line, "ready", 5)) {
        fclose(p->to);
        fclose(p->from);
        waitpid(p->pid, NULL, 0);
        return -1;
    }
    if (extra) *extra = line[5] == ' ' ? strtod(line + 6, NULL) : NAN;
    return 0;
}

/* Sends one command; its answer, -1 when the peer is gone. */
static inline double bench_peer_cmd(bench_peer *p, const char *cmd) {
    char line[64];
    fprintf(p->to, "%s\n", cmd);
    fflush(p->to);
    if (!fgets(line, sizeof line, p->from)) return -1;
    return atof(line);
}

static inline void bench_peer_stop(bench_peer *p) {
    fprintf(p->to, "quit\n");
    fflush(p->to);
    fclose(p->to);
    fclose(p->from);
    waitpid(p->pid, NULL, 0);
}

/* "1x3x224x224" */
static inline void bench_shape_arg(const int64_t *dims, int ndim, char *sh, size_t n) {
    int at = 0;
    sh[0] = 0;
    for (int i = 0; i < ndim && (size_t)at < n; i++)
        at += snprintf(sh + at, n - (size_t)at, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

/* ONNX Runtime's server on model onnx with its input (an .npy file) of that shape. */
static inline int bench_ort_start(bench_peer *p, const char *onnx, const int64_t *dims, int ndim, int threads,
                                  const char *input) {
    char sh[128], th[16];
    bench_shape_arg(dims, ndim, sh, sizeof sh);
    snprintf(th, sizeof th, "%d", threads);
    char *argv[] = {"node", "scripts/bench_dnnl_ort.js", "--onnx", (char *)onnx, "--shape", sh, "--threads", th, "--input",
                    (char *)input, NULL};
    return bench_peer_start(p, argv, NULL);
}

#endif
