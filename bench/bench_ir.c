/* IR core benchmark: parse, print, structural hash and well-formedness of a generated function
 * with N bindings. Each size runs in a fresh child process so its peak memory is its own.
 * Reports bindings per second per step and peak memory per binding (RSS growth during the
 * parse from the file, text pages resident at the time included); checks that the per-binding
 * cost stays within 1.5x from the smallest to the largest size.
 *
 *   build/bench/bench_ir [--sizes 10000,100000,1000000] [--no-spans] [--repeat 3] [--cpu] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "ir/equal.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/wellformed.h"

enum { STEP_PARSE, STEP_PRINT, STEP_HASH, STEP_WF, NSTEPS };
static const char *const STEP_NAMES[NSTEPS] = {"parse", "print", "hash", "wellformed"};

typedef struct result {
    long n;
    double sec[NSTEPS];       /* median over repeats */
    double parse_peak_bytes;  /* peak RSS growth during parse (resident text included) */
    double arena_bytes;       /* IR arena after parse */
    double text_bytes;
} result;

/* Wall clock by default; --cpu times the process CPU instead (steadier on a loaded machine). */
static clockid_t g_clock = CLOCK_MONOTONIC;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static long peak_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void generate(const char *path, long n, int spans) {
    static const char *const OPS[] = {"R.add(%s, x)", "R.nn.relu(%s)", "R.multiply(%s, x)",
                                      "R.sigmoid(%s)"};
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    const char *ty = "R.Tensor((1, 64), dtype=\"float32\")";
    fprintf(f, "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
               "@I.ir_module\nclass Module:\n    @R.function\n"
               "    def main(x: %s) -> %s:\n        with R.dataflow():\n", ty, ty);
    char prev[32] = "x", cur[32], call[64];
    for (long i = 0; i < n; i++) {
        if (i == n - 1) snprintf(cur, sizeof(cur), "gv");
        else if (i == 0) snprintf(cur, sizeof(cur), "lv");
        else snprintf(cur, sizeof(cur), "lv%ld", i);
        snprintf(call, sizeof(call), OPS[i % 4], prev);
        fprintf(f, "            %s: %s = %s", cur, ty, call);
        if (spans) fprintf(f, "  # span: \"node_%ld\"!", i);
        fputc('\n', f);
        memcpy(prev, cur, sizeof(cur));
    }
    fprintf(f, "            R.output(gv)\n        return gv\n");
    fclose(f);
}

/* Runs in the child: measures every step `repeat` times, writes a result to fd. */
static int measure(const char *path, long n, int repeat, int fd) {
    result r = {.n = n};
    double t[NSTEPS][16];
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    long base = rss_kb();
    r.text_bytes = (double)size;
    FILE *devnull = fopen("/dev/null", "w");
    for (int k = 0; k < repeat; k++) {
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        double t0 = now_s();
        /* From the file, as graft fmt reads it: the parse time includes reading the text, and
         * the peak counts the text pages resident at the time (ir_parse_file maps the file and
         * gives pages back behind the parser). */
        if (ir_parse_file(ctx, path, &m, &d) != GR_OK) {
            gr_diag_print(&d);
            return 1;
        }
        t[STEP_PARSE][k] = now_s() - t0;
        if (k == 0) {
            r.parse_peak_bytes = (double)(peak_kb() - base) * 1024.0;
            r.arena_bytes = (double)ir_ctx_arena_bytes(ctx);
        }
        t0 = now_s();
        ir_print_module(m, devnull, NULL);
        fflush(devnull);
        t[STEP_PRINT][k] = now_s() - t0;
        t0 = now_s();
        volatile uint64_t h = ir_module_struct_hash(m, IR_EQ_SPANS);
        (void)h;
        t[STEP_HASH][k] = now_s() - t0;
        t0 = now_s();
        if (ir_wellformed_check(m, &d) != GR_OK) {
            gr_diag_print(&d);
            return 1;
        }
        t[STEP_WF][k] = now_s() - t0;
        ir_ctx_free(ctx);
    }
    for (int s = 0; s < NSTEPS; s++) r.sec[s] = bench_median(t[s], repeat);
    fclose(devnull);
    if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    long sizes[8] = {10000, 100000, 1000000};
    int nsizes = 3, spans = 1, repeat = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-spans") == 0) {
            spans = 0;
        } else if (strcmp(argv[i], "--cpu") == 0) {
            g_clock = CLOCK_PROCESS_CPUTIME_ID;
        } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
            if (repeat < 1 || repeat > 16) repeat = 3;
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *p = argv[++i]; *p && nsizes < 8;) {
                sizes[nsizes++] = strtol(p, &p, 10);
                if (*p == ',') p++;
            }
        } else {
            fprintf(stderr, "usage: bench_ir [--sizes N,N,...] [--no-spans] [--repeat K] [--cpu]\n");
            return 2;
        }
    }
    result res[8];
    char path[] = "/tmp/graft_bench_ir_XXXXXX";
    int tfd = mkstemp(path);
    if (tfd < 0) return 1;
    close(tfd);
    for (int i = 0; i < nsizes; i++) {
        generate(path, sizes[i], spans);
        int p[2];
        if (pipe(p) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            _exit(measure(path, sizes[i], repeat, p[1]));
        }
        close(p[1]);
        int st = 0;
        ssize_t got = read(p[0], &res[i], sizeof(res[i]));
        close(p[0]);
        waitpid(pid, &st, 0);
        if (got != (ssize_t)sizeof(res[i]) || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_ir: size %ld failed\n", sizes[i]);
            unlink(path);
            return 1;
        }
    }
    unlink(path);
    printf("IR core benchmark (%s spans, median of %d runs%s)\n", spans ? "with" : "without", repeat,
           g_clock == CLOCK_MONOTONIC ? "" : ", CPU time");
    printf("%10s %12s %12s %12s %12s %14s %14s %12s\n", "bindings", "parse/s", "print/s", "hash/s",
           "wf/s", "peak B/bind", "arena B/bind", "text B/bind");
    for (int i = 0; i < nsizes; i++) {
        result *r = &res[i];
        double n = (double)r->n;
        printf("%10ld %12.0f %12.0f %12.0f %12.0f %14.1f %14.1f %12.1f\n", r->n,
               n / r->sec[STEP_PARSE], n / r->sec[STEP_PRINT], n / r->sec[STEP_HASH],
               n / r->sec[STEP_WF], r->parse_peak_bytes / n, r->arena_bytes / n, r->text_bytes / n);
    }
    if (nsizes >= 2) {
        printf("scaling %ld -> %ld (per-binding time ratio, target <= 1.5):", res[0].n,
               res[nsizes - 1].n);
        for (int s = 0; s < NSTEPS; s++) {
            double a = res[0].sec[s] / (double)res[0].n;
            double b = res[nsizes - 1].sec[s] / (double)res[nsizes - 1].n;
            printf(" %s %.2f", STEP_NAMES[s], b / a);
        }
        printf("\n");
    }
    return 0;
}
