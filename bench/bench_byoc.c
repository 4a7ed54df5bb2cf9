/* bench_byoc: FuseOpsByPattern + MergeCompositeFunctions + RunCodegen (json backend) on
 * generated chains of 10k / 100k / 1M bindings and on PP-OCRv4 rec (when cached).
 *
 *     build/bench/bench_byoc [MAX_BINDINGS]      (default 100000; 1000000 needs ~3 GB)
 *
 * Prints one line per model and stage with the wall time; the target is 100k bindings under
 * 1 s in total and time growing linearly with the size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byoc/byoc.h"
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

static void run(const char *label, ir_ctx_t *ctx, const ir_module *m) {
    gr_diag d;
    gr_diag_clear(&d);
    const char *json = "json";
    const byoc_pattern *pats = NULL;
    uint32_t np = 0;
    byoc_json_backend.get_patterns(ctx, &pats, &np, &d);
    ir_module *f = NULL, *g = NULL, *c = NULL;
    double t0 = now_s();
    byoc_fuse_opts fo = {true, false, 0, NULL};
    if (byoc_fuse_ops_by_pattern(ctx, m, pats, np, &fo, NULL, &f, &d)) goto fail;
    double t1 = now_s();
    if (byoc_merge_composite_functions(ctx, f, NULL, &g, &d)) goto fail;
    double t2 = now_s();
    if (byoc_run_codegen(ctx, g, NULL, &c, &d)) goto fail;
    double t3 = now_s();
    (void)json;
    printf("%-22s fuse %8.3f s  merge %8.3f s  codegen %8.3f s  total %8.3f s  (arena %.0f MB)\n", label, t1 - t0,
           t2 - t1, t3 - t2, t3 - t0, (double)ir_ctx_arena_bytes(ctx) / 1e6);
    fflush(stdout);
    return;
fail:
    fprintf(stderr, "%s: %s\n", label, d.msg);
    exit(1);
}

int main(int argc, char **argv) {
    uint32_t max = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    for (uint32_t n = 10000; n <= max; n *= 10) {
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = gen_chain(ctx, n);
        char label[64];
        snprintf(label, sizeof label, "chain %u bindings", n);
        run(label, ctx, m);
        ir_ctx_free(ctx);
    }
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
        ir_ctx_t *ctx = ir_ctx_new();
        gr_diag d;
        gr_diag_clear(&d);
        onnx_input_shape shape = {.name = "x", .ndim = 4, .dims = {1, 3, 48, 320}};
        onnx_import_opts o = {.shapes = &shape, .nshapes = 1};
        ir_module *m = NULL;
        if (onnx_import_file(ctx, rec, &o, &m, &d) == GR_OK) run("PP-OCRv4 rec", ctx, m);
        else fprintf(stderr, "PP-OCRv4 rec: %s\n", d.msg);
        ir_ctx_free(ctx);
    } else {
        printf("PP-OCRv4 rec: not cached (scripts/fetch_models.sh)\n");
    }
    return 0;
}
