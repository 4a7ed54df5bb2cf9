/* graft opt / graft trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "ir/var_map.h"
#include "tools/cli.h"
#include "tools/cmd_inspect.h"
#include "tools/cmd_opt.h"

typedef struct opt_args {
    const char *input, *out_path, *passes, *dump_dir, *layer;
    bool time_passes, no_spans, var_map;
    ir_pass_ctx_t *pc;
    cli_load_opts lo;
} opt_args;

/* Parses the options shared by opt and trace into a (and its pass context). */
static int parse_args(const char *cmd, int argc, char **argv, opt_args *a) {
    const char *v;
    gr_diag d;
    gr_diag_clear(&d);
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "-o", &a->out_path, &missing) ||
            cli_opt(argc, argv, &i, "--passes", &a->passes, &missing) ||
            cli_opt(argc, argv, &i, "--dump-ir", &a->dump_dir, &missing) ||
            cli_opt(argc, argv, &i, "--layer", &a->layer, &missing)) {
            if (missing) return cli_usage_error(cmd, "%s needs a value", argv[i]);
        } else if (cli_opt(argc, argv, &i, "--opt-level", &v, &missing)) {
            char *end = NULL;
            long lvl = missing ? 0 : strtol(v, &end, 10);
            if (missing || !*v || *end || lvl < 0 || lvl > 4)
                return cli_usage_error(cmd, "--opt-level takes 0..4");
            ir_pass_ctx_set_opt_level(a->pc, (int)lvl);
        } else if (cli_opt(argc, argv, &i, "--disable", &v, &missing)) {
            if (missing) return cli_usage_error(cmd, "--disable needs a pass name");
            ir_pass_ctx_force_off(a->pc, v);
        } else if (cli_opt(argc, argv, &i, "--config", &v, &missing)) {
            if (missing) return cli_usage_error(cmd, "--config needs KEY=VALUE");
            if (ir_pass_ctx_set_config_str(a->pc, v, &d) != GR_OK) return cli_usage_error(cmd, "%s", d.msg);
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&a->lo, v))
                return cli_usage_error(cmd, "--input-shape takes NAME=DIMxDIM...");
        } else if (strcmp(argv[i], "--time-passes") == 0) {
            a->time_passes = true;
        } else if (strcmp(argv[i], "--var-map") == 0) {
            a->var_map = true;
        } else if (strcmp(argv[i], "--no-spans") == 0) {
            a->no_spans = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else if (!a->input) {
            a->input = argv[i];
        } else {
            return cli_usage_error(cmd, "more than one input ('%s')", argv[i]);
        }
    }
    if (!a->input) return cli_usage_error(cmd, "no input file");
    return CLI_OK;
}

/* Loads the input and runs the pipeline; *before / *after live in ctx. */
static int load_and_run(opt_args *a, ir_ctx_t *ctx, ir_module **before, ir_module **after) {
    gr_diag d;
    gr_diag_clear(&d);
    if (cli_load_model(ctx, a->input, &a->lo, before, &d) != GR_OK) return cli_fail(&d, a->input);
    /* Seed the var_map (importer var -> itself) so the output shows where each var went. */
    if (a->var_map) *before = ir_var_map_init_module(*before);
    ir_pass *seq = NULL;
    if (a->passes) {
        if (ir_pass_sequential_from_names(a->passes, &seq, &d) != GR_OK)
            return cli_usage_error(a->layer ? "trace" : "opt", "%s", d.msg);
    }
    ir_instrument *timing = a->time_passes ? ir_pass_ctx_add_instrument(a->pc, ir_instrument_timing_new()) : NULL;
    if (a->dump_dir) ir_pass_ctx_add_instrument(a->pc, ir_instrument_dump_ir_new(a->dump_dir, a->no_spans));
    gr_status st = ir_pass_run(seq ? seq : ir_pass_default_pipeline(), a->pc, *before, after, &d);
    ir_pass_free(seq);
    if (timing) ir_instrument_timing_print(timing, stderr);
    if (st != GR_OK) return cli_fail(&d, a->input);
    uint32_t n = 0;
    const char **lost = ir_lost_layers(*before, *after, &n);
    if (n) {
        fprintf(stderr, "note: %u frontend layer(s) no longer appear in any span:", n);
        for (uint32_t i = 0; i < n; i++) fprintf(stderr, " %s", lost[i]);
        fputc('\n', stderr);
    }
    free(lost);
    return CLI_OK;
}

int cmd_opt(int argc, char **argv) {
    static opt_args a; /* large (shape names); one per process */
    memset(&a, 0, sizeof(a));
    a.pc = ir_pass_ctx_new();
    int rc = parse_args("opt", argc, argv, &a);
    if (rc == CLI_OK && a.layer) rc = cli_usage_error("opt", "--layer belongs to graft trace");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *before = NULL, *after = NULL;
    if (rc == CLI_OK) rc = load_and_run(&a, ctx, &before, &after);
    if (rc == CLI_OK) {
        ir_print_opts po = {.no_spans = a.no_spans};
        FILE *f = a.out_path ? fopen(a.out_path, "w") : stdout;
        if (!f) {
            fprintf(stderr, "error: %s: cannot open for writing\n", a.out_path);
            rc = CLI_ERR;
        } else {
            ir_print_module(after, f, &po);
            if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
                fprintf(stderr, "error: %s: write failed\n", a.out_path ? a.out_path : "stdout");
                rc = CLI_ERR;
            }
        }
    }
    ir_ctx_free(ctx);
    ir_pass_ctx_free(a.pc);
    return rc;
}

/* ---- trace ---- */

typedef struct trace_state {
    const char *layer;
    const char *func;
    uint32_t hits;
} trace_state;

static void print_hit(trace_state *t, const char *what, const ir_expr *value, const ir_span *span) {
    ir_print_opts po = {.no_spans = true, .no_metadata = true};
    char *text = value ? ir_print_expr_str(value, &po) : NULL;
    if (text) text[strcspn(text, "\n")] = 0;  /* the expression line, not the metadata note */
    printf("%s: %s%s%s  # span: ", t->func, what, text ? " = " : "", text ? text : "");
    ir_span_print(span, stdout);
    if (ir_span_is_output_of(span, t->layer)) printf("  (produces the layer's output)");
    putchar('\n');
    free(text);
    t->hits++;
}

static void trace_expr(trace_state *t, const ir_expr *e);

static void trace_seq(trace_state *t, const ir_seq *q) {
    for (uint32_t i = 0; i < q->nblocks; i++) {
        for (uint32_t j = 0; j < q->blocks[i]->n; j++) {
            const ir_binding *b = &q->blocks[i]->bindings[j];
            const ir_span *s = b->value->span ? b->value->span : b->var->base.span;
            if (ir_span_has_source(s, t->layer) || ir_span_has_source(b->var->base.span, t->layer))
                print_hit(t, b->var->name, b->value, ir_span_has_source(s, t->layer) ? s : b->var->base.span);
            if (b->value->kind == IR_IF) {
                trace_expr(t, ((const ir_if *)b->value)->then_branch);
                trace_expr(t, ((const ir_if *)b->value)->else_branch);
            }
        }
    }
    if (ir_span_has_source(q->body->span, t->layer) && !ir_is_var(q->body)) print_hit(t, "return", q->body, q->body->span);
}

static void trace_expr(trace_state *t, const ir_expr *e) {
    if (e && e->kind == IR_SEQ) trace_seq(t, (const ir_seq *)e);
}

int cmd_trace(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strncmp(argv[i], "--backend", 9) == 0) return cmd_trace_backend(argc, argv);
    static opt_args a;
    memset(&a, 0, sizeof(a));
    a.pc = ir_pass_ctx_new();
    int rc = parse_args("trace", argc, argv, &a);
    if (rc == CLI_OK && !a.layer) rc = cli_usage_error("trace", "--layer NAME is required");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *before = NULL, *after = NULL;
    if (rc == CLI_OK) rc = load_and_run(&a, ctx, &before, &after);
    if (rc == CLI_OK) {
        trace_state t = {a.layer, NULL, 0};
        for (uint32_t i = 0; i < after->nfuncs; i++) {
            if (after->funcs[i]->kind != IR_FUNC) continue;
            const ir_func *f = (const ir_func *)after->funcs[i];
            t.func = after->gvars[i]->name;
            for (uint32_t p = 0; p < f->nparams; p++)
                if (ir_span_has_source(f->params[p]->base.span, a.layer))
                    print_hit(&t, f->params[p]->name, NULL, f->params[p]->base.span);
            trace_expr(&t, f->body);
        }
        if (!t.hits) {
            fprintf(stderr, "error: %s: no expression's span names layer '%s'\n", a.input, a.layer);
            rc = CLI_ERR;
        }
    }
    ir_ctx_free(ctx);
    ir_pass_ctx_free(a.pc);
    return rc;
}
