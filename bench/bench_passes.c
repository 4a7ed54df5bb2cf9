/* Pass-pipeline benchmark: the default pipeline on a generated model of ~100k bindings, with the
 * SIBuilder on ("ir.enable_si_builder" = true) and off, plus the memory spans cost.
 *
 *   bench_passes [BINDINGS] [RUNS]     (defaults 100000 and 5)
 *   BENCH_ONLY=on|off bench_passes ...  one configuration only (for profilers); a deterministic
 *       overhead figure on a busy machine: instructions of ir_pass_run under
 *       valgrind --tool=callgrind --toggle-collect=ir_pass_run, on vs off.
 *   BENCH_VERBOSE=1                     per-pass times and arena growth on stderr
 *
 * The model repeats one unit of 11 bindings that every pass of the pipeline has work in:
 * conv2d + batch_norm + [0] (FoldBatchNormIntoConv), reshape(reshape) and multiply by one
 * (SimplifyExpr), two equal relus (EliminateCommonSubexpr), a var-to-var binding
 * (CanonicalizeBindings) and a dead exp (DeadCodeElimination). Each unit's bindings carry
 * spans naming that unit's layers, as an importer writes them. Times are CPU time of this
 * process (medians over alternating on/off runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tensor.h"
#include "bench/bench_util.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"

/* CPU time of this process: the machine is shared, wall time would measure the neighbours. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const gr_diag *d) {
    fprintf(stderr, "bench_passes: %s\n", d->msg);
    exit(1);
}

static ir_expr *op_call(ir_ctx_t *ctx, const char *op, uint32_t n, ir_expr *const *args, const ir_span *span,
                        gr_diag *d) {
    const ir_op_def *def = ir_op_def_find(op);
    const ir_attrs *attrs = NULL;
    if (def->nattrs && ir_op_attrs_normalize(ctx, def, NULL, &attrs, d) != GR_OK) die(d);
    return &ir_call_new(ctx, &ir_op_get_def(ctx, def)->base, n, args, attrs, 0, NULL, span)->base;
}

static rt_tensor *filled(int32_t ndim, const int64_t *shape, double base) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, ndim, shape);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) rt_tensor_set_f64(t, i, base + 0.01 * (double)i);
    return t;
}

static ir_expr *konst(ir_ctx_t *ctx, rt_tensor *t, const char *name, bool spans) {
    ir_expr *c = &ir_const_new(ctx, t, spans ? ir_span_named(ctx, name, false) : NULL)->base;
    rt_tensor_release(t);
    return c;
}

/* Builds main(x) with `units` units of 11 bindings. */
static ir_module *build_model(ir_ctx_t *ctx, uint32_t units, bool spans) {
    gr_diag d;
    gr_diag_clear(&d);
    int64_t xs[4] = {1, 4, 4, 4}, ws[4] = {4, 4, 1, 1}, cs[1] = {4}, fs[3] = {1, 4, 16};
    ir_var *x = ir_var_new(ctx, "x", ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 4, xs),
                           spans ? ir_span_named(ctx, "input", false) : NULL);
    ir_expr *w = konst(ctx, filled(4, ws, 0.1), "w", spans);
    ir_expr *g = konst(ctx, filled(1, cs, 1.0), "gamma", spans), *b = konst(ctx, filled(1, cs, 0.5), "beta", spans);
    ir_expr *m = konst(ctx, filled(1, cs, 0.1), "mean", spans), *v = konst(ctx, filled(1, cs, 2.0), "var", spans);
    rt_tensor *one_t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    rt_tensor_set_f64(one_t, 0, 1.0);
    ir_expr *one = konst(ctx, one_t, "one", false);
    const ir_prim *d16[3] = {ir_prim_int(ctx, fs[0]), ir_prim_int(ctx, fs[1]), ir_prim_int(ctx, fs[2])};
    const ir_prim *d4[4] = {ir_prim_int(ctx, 1), ir_prim_int(ctx, 4), ir_prim_int(ctx, 4), ir_prim_int(ctx, 4)};
    ir_expr *shape16 = &ir_shape_expr_new(ctx, 3, d16, NULL)->base;
    ir_expr *shape4 = &ir_shape_expr_new(ctx, 4, d4, NULL)->base;
    ir_bb_t *bb = ir_bb_new(ctx, &d);
    ir_bb_begin_dataflow(bb);
    ir_expr *cur = &x->base;
    char name[64];
#define SPAN(fmt) (spans ? (snprintf(name, sizeof(name), fmt, u), ir_span_named(ctx, name, true)) : NULL)
#define EMIT(e) ({ ir_var *r_ = ir_bb_emit(bb, (e), NULL); if (!r_) die(&d); &r_->base; })
    for (uint32_t u = 0; u < units; u++) {
        ir_expr *c = EMIT(op_call(ctx, "relax.nn.conv2d", 2, (ir_expr *[]){cur, w}, SPAN("conv%u"), &d));
        ir_expr *bn = EMIT(op_call(ctx, "relax.nn.batch_norm", 5, (ir_expr *[]){c, g, b, m, v}, SPAN("bn%u"), &d));
        ir_expr *y = EMIT(&ir_tgi_new(ctx, bn, 0, SPAN("bn%u"))->base);
        ir_expr *r1 = EMIT(op_call(ctx, "relax.reshape", 2, (ir_expr *[]){y, shape16}, SPAN("flat%u"), &d));
        ir_expr *r2 = EMIT(op_call(ctx, "relax.reshape", 2, (ir_expr *[]){r1, shape4}, SPAN("unflat%u"), &d));
        ir_expr *a1 = EMIT(op_call(ctx, "relax.nn.relu", 1, (ir_expr *[]){r2}, SPAN("relu%u_a"), &d));
        ir_expr *a2 = EMIT(op_call(ctx, "relax.nn.relu", 1, (ir_expr *[]){r2}, SPAN("relu%u_b"), &d));
        ir_expr *s = EMIT(op_call(ctx, "relax.add", 2, (ir_expr *[]){a1, a2}, SPAN("add%u"), &d));
        ir_var *idv = ir_dfvar_new(ctx, "id", s->sinfo, SPAN("identity%u"));
        if (!ir_bb_emit_to(bb, idv, s, NULL)) die(&d);
        EMIT(op_call(ctx, "relax.exp", 1, (ir_expr *[]){&idv->base}, SPAN("add%u"), &d)); /* dead */
        cur = EMIT(op_call(ctx, "relax.multiply", 2, (ir_expr *[]){&idv->base, one}, SPAN("scale%u"), &d));
    }
#undef EMIT
#undef SPAN
    ir_var *out = ir_bb_emit_output(bb, cur, "gv");
    if (!out) die(&d);
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, &out->base, NULL);
    ir_bb_free(bb);
    if (!body) die(&d);
    const char *key = "global_symbol";
    ir_attr val = ir_attr_str(ctx, "main");
    ir_func *f = ir_func_new(ctx, 1, &x, &body->base, NULL, ir_attrs_new(ctx, 1, &key, &val), NULL);
    if (!ir_normalize(ctx, &f->base, &d)) die(&d);
    ir_module *mod = ir_module_new(ctx);
    ir_module_set_func(mod, "main", &f->base);
    return mod;
}

static gr_status mem_after(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    (void)d;
    size_t *last = ins->user;
    size_t now_b = ir_ctx_arena_bytes(m->ctx);
    fprintf(stderr, "  %-28s arena +%.2f MB\n", p->name, (double)(now_b - *last) / 1e6);
    *last = now_b;
    return GR_OK;
}

typedef struct run_result {
    double seconds;
    size_t model_bytes, pass_bytes;
    uint32_t lost;
} run_result;

static run_result run_once(uint32_t units, bool spans, bool si) {
    run_result r = {0};
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx); /* FoldConstant folds on the reference kernels */
    ir_module *m = build_model(ctx, units, spans);
    r.model_bytes = ir_ctx_arena_bytes(ctx);
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_config_value cv = {.kind = IR_CONFIG_BOOL, .u.b = si};
    gr_diag d;
    gr_diag_clear(&d);
    if (ir_pass_ctx_set_config(pc, "ir.enable_si_builder", cv, &d) != GR_OK) die(&d);
    ir_instrument *timing = getenv("BENCH_VERBOSE") ? ir_pass_ctx_add_instrument(pc, ir_instrument_timing_new()) : NULL;
    static size_t last;
    static ir_instrument mem = {.name = "mem", .after = mem_after, .user = &last};
    last = r.model_bytes;
    if (timing) ir_pass_ctx_add_instrument(pc, &mem);
    ir_module *out = NULL;
    double t0 = now();
    if (ir_pass_run(ir_pass_default_pipeline(), pc, m, &out, &d) != GR_OK) die(&d);
    r.seconds = now() - t0;
    r.pass_bytes = ir_ctx_arena_bytes(ctx) - r.model_bytes;
    if (timing) {
        fprintf(stderr, "-- SIBuilder %s\n", si ? "on" : "off");
        ir_instrument_timing_print(timing, stderr);
    }
    const char **lost = ir_lost_layers(m, out, &r.lost);
    free(lost);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
    return r;
}

int main(int argc, char **argv) {
    long target = argc > 1 ? atol(argv[1]) : 100000;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (target < 11 || runs < 1 || runs > 100) {
        fprintf(stderr, "usage: bench_passes [BINDINGS>=11] [RUNS 1..100]\n");
        return 2;
    }
    uint32_t units = (uint32_t)(target / 11);
    const char *only = getenv("BENCH_ONLY"); /* "on" / "off": one config, for profilers */
    if (only) {
        for (int i = 0; i < runs; i++) run_once(units, true, strcmp(only, "on") == 0);
        return 0;
    }
    uint32_t bindings = units * 11 + 1;
    double on[100], off[100];
    run_result ron = {0}, roff = {0};
    /* Alternate on/off so drift (other processes, frequency) hits both alike. */
    run_once(units / 10 + 1, true, true); /* warm-up */
    for (int i = 0; i < runs; i++) {
        /* Swap the order every run: the first run after freeing a context pays page faults. */
        if (i % 2) roff = run_once(units, true, false);
        ron = run_once(units, true, true);
        if (!(i % 2)) roff = run_once(units, true, false);
        on[i] = ron.seconds;
        off[i] = roff.seconds;
    }
    qsort(on, (size_t)runs, sizeof(double), bench_cmp_double);
    qsort(off, (size_t)runs, sizeof(double), bench_cmp_double);
    double mon = on[runs / 2], moff = off[runs / 2];
    run_result nospan = run_once(units, false, true);
    printf("model: %u bindings (%u units of 11), default pipeline, %d runs each, medians\n", bindings, units, runs);
    printf("SIBuilder on : %8.1f ms  (min %.1f, max %.1f)  lost layers: %u\n", mon * 1e3, on[0] * 1e3,
           on[runs - 1] * 1e3, ron.lost);
    printf("SIBuilder off: %8.1f ms  (min %.1f, max %.1f)  lost layers: %u\n", moff * 1e3, off[0] * 1e3,
           off[runs - 1] * 1e3, roff.lost);
    printf("overhead     : %+.2f%% (target <= 3%%)\n", 100.0 * (mon - moff) / moff);
    printf("memory: model with spans %.1f MB, without %.1f MB: spans add %.1f bytes per binding\n",
           (double)ron.model_bytes / 1e6, (double)nospan.model_bytes / 1e6,
           (double)((long)ron.model_bytes - (long)nospan.model_bytes) / bindings);
    printf("memory: pipeline arena growth %.1f MB with SIBuilder, %.1f MB without: %.1f bytes per binding\n",
           (double)ron.pass_bytes / 1e6, (double)roff.pass_bytes / 1e6,
           (double)((long)ron.pass_bytes - (long)roff.pass_bytes) / bindings);
    return 0;
}
