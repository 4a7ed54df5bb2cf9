/* bench_byoc: FuseOpsByPattern + MergeCompositeFunctions + RunCodegen (json backend) on
 * generated chains of 10k / 100k / 1M bindings and on PP-OCRv4 rec (when cached).
 *
 *     build/bench/bench_byoc [MAX_BINDINGS]     chains 10k, 100k, ... up to MAX (default 100000)
 *     build/bench/bench_byoc --sizes 20000,100000 [--repeat K] [--no-rec]
 *
 * Prints one line per model with the wall time of each stage, the total CPU time of the
 * process over the three stages and the wall time per binding; --repeat K keeps the fastest of
 * K runs (each on a fresh context). The target is 100k bindings under 1 s in total and time
 * growing linearly with the size. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byoc/byoc.h"
#include "backends/json/json_codegen.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/builder.h"
#include "ir/op.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* n bindings: relu / add(prev, prev2) / sigmoid / multiply, each with its own layer span. */
static ir_module *gen_chain(ir_ctx_t *ctx, uint32_t n) {
    gr_diag d;
    gr_diag_clear(&d);
    int64_t shape[2] = {1, 16};
    const ir_sinfo *ts = ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 2, shape);
    ir_var *x = ir_var_new(ctx, "x", ts, NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &d);
    ir_bb_begin_dataflow(bb);
    ir_op *ops[4] = {ir_op_get(ctx, "relax.nn.relu"), ir_op_get(ctx, "relax.add"), ir_op_get(ctx, "relax.sigmoid"),
                     ir_op_get(ctx, "relax.multiply")};
    ir_expr *prev = &x->base, *prev2 = &x->base;
    for (uint32_t i = 0; i < n; i++) {
        char layer[32];
        snprintf(layer, sizeof layer, "layer%u", i);
        const ir_span *sp = ir_span_named(ctx, layer, true);
        uint32_t k = i % 4;
        ir_expr *args[2] = {prev, prev2};
        ir_call *c = ir_call_new(ctx, &ops[k]->base, (k == 1 || k == 3) ? 2 : 1, args, NULL, 0, NULL, sp);
        ir_var *v = i + 1 == n ? ir_bb_emit_output(bb, &c->base, "gv") : ir_bb_emit(bb, &c->base, "lv");
        if (!v) {
            fprintf(stderr, "emit: %s\n", d.msg);
            exit(1);
        }
        prev2 = prev;
        prev = &v->base;
    }
    ir_bb_end_block(bb);
    ir_seq *seq = ir_bb_finish(bb, prev, NULL);
    ir_bb_free(bb);
    ir_func *f = ir_func_new(ctx, 1, &x, &seq->base, NULL, NULL, NULL);
    if (!ir_normalize(ctx, &f->base, &d)) {
        fprintf(stderr, "normalize: %s\n", d.msg);
        exit(1);
    }
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    return m;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct timing {
    double fuse, merge, codegen, total, cpu;
} timing;

static timing run(const char *label, ir_ctx_t *ctx, const ir_module *m) {
    gr_diag d;
    gr_diag_clear(&d);
    const byoc_pattern *pats = NULL;
    uint32_t np = 0;
    byoc_json_backend.get_patterns(ctx, NULL, &pats, &np, &d);
    ir_module *f = NULL, *g = NULL, *c = NULL;
    double c0 = cpu_s(), t0 = now_s();
    byoc_fuse_opts fo = {true, false, 0, NULL};
    if (byoc_fuse_ops_by_pattern(ctx, m, pats, np, &fo, NULL, &f, &d)) goto fail;
    double t1 = now_s();
    if (byoc_merge_composite_functions(ctx, f, NULL, &g, &d)) goto fail;
    double t2 = now_s();
    if (byoc_run_codegen(ctx, g, NULL, &c, &d)) goto fail;
    double t3 = now_s(), c3 = cpu_s();
    (void)c;
    return (timing){t1 - t0, t2 - t1, t3 - t2, t3 - t0, c3 - c0};
fail:
    fprintf(stderr, "%s: %s\n", label, d.msg);
    exit(1);
}

static void print_row(const char *label, uint32_t n, const timing *t, double arena) {
    printf("%-22s fuse %7.3f s  merge %7.3f s  codegen %7.3f s  total %7.3f s  cpu %7.3f s", label, t->fuse,
           t->merge, t->codegen, t->total, t->cpu);
    if (n) printf("  %6.2f us/binding", t->total * 1e6 / n);
    printf("  (arena %.0f MB)\n", arena / 1e6);
    fflush(stdout);
}

static void keep_best(timing *best, const timing *t, int rep) {
    if (rep == 0 || t->total < best->total) *best = *t;
}

static void usage(void) {
    puts("usage: bench_byoc [MAX_BINDINGS] [--sizes N,N,...] [--repeat K] [--no-rec]\n"
         "  MAX_BINDINGS   chains of 10k, 100k, ... bindings up to this (default 100000;\n"
         "                 1000000 needs ~3 GB)\n"
         "  --sizes        explicit chain sizes instead\n"
         "  --repeat K     fastest of K runs per model (default 1)\n"
         "  --no-rec       skip PP-OCRv4 rec (GRAFT_MODEL_REC or build/third_party/models.env)");
}

int main(int argc, char **argv) {
    uint32_t max = 100000, sizes[32], nsizes = 0;
    int repeat = 1;
    bool no_rec = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage();
            return 0;
        } else if (strcmp(argv[a], "--sizes") == 0 && a + 1 < argc) {
            for (char *p = argv[++a]; *p && nsizes < 32;) {
                sizes[nsizes++] = (uint32_t)strtoul(p, &p, 10);
                if (*p == ',') p++;
            }
        } else if (strcmp(argv[a], "--repeat") == 0 && a + 1 < argc) {
            repeat = atoi(argv[++a]);
            if (repeat < 1) repeat = 1;
        } else if (strcmp(argv[a], "--no-rec") == 0) {
            no_rec = true;
        } else if (argv[a][0] >= '0' && argv[a][0] <= '9') {
            max = (uint32_t)strtoul(argv[a], NULL, 10);
        } else {
            usage();
            return 2;
        }
    }
    if (!nsizes)
        for (uint32_t n = 10000; n <= max && nsizes < 32; n *= 10) sizes[nsizes++] = n;
    for (uint32_t si = 0; si < nsizes; si++) {
        uint32_t n = sizes[si];
        timing best = {0};
        double arena = 0;
        for (int rep = 0; rep < repeat; rep++) {
            ir_ctx_t *ctx = ir_ctx_new();
            ir_module *m = gen_chain(ctx, n);
            timing t = run("chain", ctx, m);
            keep_best(&best, &t, rep);
            arena = (double)ir_ctx_arena_bytes(ctx);
            ir_ctx_free(ctx);
        }
        char label[64];
        snprintf(label, sizeof label, "chain %u bindings", n);
        print_row(label, n, &best, arena);
    }
    if (no_rec) return 0;
    const char *rec = getenv("GRAFT_MODEL_REC");
    char path[4096] = "";
    if (!rec || !*rec) {
        FILE *f = fopen("build/third_party/models.env", "r");
        char line[4096];
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "GRAFT_MODEL_REC=", 16) == 0) {
                line[strcspn(line, "\r\n")] = '\0';
                snprintf(path, sizeof path, "%s", line + 16);
            }
        if (f) fclose(f);
        rec = path;
    }
    if (rec && *rec) {
        timing best = {0};
        double arena = 0;
        for (int rep = 0; rep < repeat; rep++) {
            ir_ctx_t *ctx = ir_ctx_new();
            gr_diag d;
            gr_diag_clear(&d);
            onnx_input_shape shape = {.name = "x", .ndim = 4, .dims = {1, 3, 48, 320}};
            onnx_import_opts o = {.shapes = &shape, .nshapes = 1};
            ir_module *m = NULL;
            if (onnx_import_file(ctx, rec, &o, &m, &d) != GR_OK) {
                fprintf(stderr, "PP-OCRv4 rec: %s\n", d.msg);
                ir_ctx_free(ctx);
                return 1;
            }
            timing t = run("PP-OCRv4 rec", ctx, m);
            keep_best(&best, &t, rep);
            arena = (double)ir_ctx_arena_bytes(ctx);
            ir_ctx_free(ctx);
        }
        print_row("PP-OCRv4 rec", 0, &best, arena);
    } else {
        printf("PP-OCRv4 rec: not cached (scripts/fetch_models.sh)\n");
    }
    return 0;
}
