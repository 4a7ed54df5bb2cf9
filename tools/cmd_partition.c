/* graft partition / graft backends. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "byoc/byoc.h"
#include "ir/text/printer.h"
#include "ir/wellformed.h"
#include "patterns/pattern_text.h"
#include "tools/cli.h"
#include "tools/cmd_partition.h"

#define MAX_BACKENDS 16

int cmd_partition(int argc, char **argv) {
    static cli_load_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.optimize = true;
    const char *input = NULL, *out_path = NULL, *patterns = NULL, *report = NULL, *stop = NULL, *v;
    const char *names[MAX_BACKENDS];
    uint32_t nnames = 0;
    cli_fuse_args fa = {0};
    int fr;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "-o", &out_path, &missing) ||
            cli_opt(argc, argv, &i, "--patterns", &patterns, &missing) ||
            cli_opt(argc, argv, &i, "--report", &report, &missing) ||
            cli_opt(argc, argv, &i, "--stop-after", &stop, &missing)) {
            if (missing) return cli_usage_error("partition", "%s needs a value", argv[i]);
        } else if (cli_backend_lib_arg(argc, argv, &i)) {
            /* loaded before the command ran */
        } else if (cli_opt(argc, argv, &i, "--backend", &v, &missing)) {
            if (missing || nnames == MAX_BACKENDS) return cli_usage_error("partition", "--backend needs a name");
            names[nnames++] = v;
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error("partition", "--input-shape takes NAME=DIMxDIM...");
        } else if ((fr = cli_fuse_arg(argc, argv, &i, &fa, "partition")) != 0) {
            if (fr < 0) return CLI_USAGE;
        } else if ((fr = cli_backend_opt_arg(argc, argv, &i, "partition")) >= 0) {
            if (fr) return fr;
        } else if (strcmp(argv[i], "--no-opt") == 0) {
            lo.optimize = false;
        } else if ((fr = cli_input_arg(argv[i], &input, "partition")) != CLI_OK) {
            return fr;
        }
    }
    if (!input) return cli_usage_error("partition", "no input model");
    if (report && strcmp(report, "text") != 0 && strcmp(report, "json") != 0)
        return cli_usage_error("partition", "--report takes text or json");
    byoc_partition_opts po = {0};
    byoc_fuse_opts fo = cli_fuse_opts(&fa);
    po.fuse = &fo;
    po.options = cli_backend_options();
    if (stop) {
        if (strcmp(stop, "fuse") == 0) po.stop_after = BYOC_STOP_FUSE;
        else if (strcmp(stop, "merge") == 0) po.stop_after = BYOC_STOP_MERGE;
        else if (strcmp(stop, "codegen") == 0) po.stop_after = BYOC_STOP_CODEGEN;
        else return cli_usage_error("partition", "--stop-after takes fuse, merge or codegen");
    }
    if (nnames == 0 && !patterns) names[nnames++] = "json";
    for (uint32_t i = 0; i < nnames; i++)
        if (!byoc_backend_find(names[i])) return cli_usage_error("partition", "unknown backend '%s' (see graft backends)", names[i]);

    int rc = CLI_ERR;
    ir_ctx_t *ctx = ir_ctx_new();
    pat_table *table = NULL;
    byoc_pattern *extra = NULL;
    byoc_notes notes;
    byoc_notes_init(&notes);
    po.notes = &notes;
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL, *out = NULL;
    if (cli_load_model(ctx, input, &lo, &m, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    if (patterns) {
        if (pat_table_read_file(ctx, patterns, &table, &d) != GR_OK) {
            rc = cli_fail(&d, patterns);
            goto done;
        }
        if (byoc_patterns_from_table(ctx, table, po.options, &extra, &d) != GR_OK) {
            rc = cli_fail(&d, patterns);
            goto done;
        }
        po.extra = extra;
        po.nextra = table->n;
    }
    if (byoc_partition(ctx, m, names, nnames, &po, &out, &d) != GR_OK || ir_wellformed_check(out, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    FILE *mf = stdout;
    if (out_path) {
        mf = fopen(out_path, "w");
        if (!mf) {
            fprintf(stderr, "error: %s: cannot write\n", out_path);
            goto done;
        }
    }
    if (report) {
        const ir_module *part = po.after_merge ? po.after_merge : po.after_fuse ? po.after_fuse : out;
        json_t *r = byoc_report_json(ctx, part, names, nnames, &notes);
        if (strcmp(report, "json") == 0) {
            json_dumpf(r, stdout, JSON_INDENT(1));
            fputc('\n', stdout);
        } else {
            byoc_report_print(r, stdout);
        }
        json_decref(r);
    }
    if (out_path || !report) ir_print_module(out, mf, NULL);
    if (out_path) fclose(mf);
    rc = CLI_OK;
done:
    byoc_notes_free(&notes);
    free(extra);
    pat_table_free(table);
    ir_ctx_free(ctx);
    return rc;
}

int cmd_backends(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!cli_backend_lib_arg(argc, argv, &i)) return cli_usage_error("backends", "takes only --backend-lib PATH");
    ir_ctx_t *ctx = ir_ctx_new();
    for (uint32_t i = 0; i < byoc_backend_count(); i++) {
        const byoc_backend *b = byoc_backend_at(i);
        const byoc_pattern *ps = NULL;
        uint32_t np = 0;
        gr_diag d;
        gr_diag_clear(&d);
        printf("%s: %s\n  codegen: %s, runtime: %s\n", b->name, b->description ? b->description : "",
               b->compile ? "yes" : "no", b->runtime_kind ? b->runtime_kind : "-");
        if (b->path) printf("  plugin: version %s, %s\n", b->version, b->path);
        else printf("  built in\n");
        if (b->noptions) printf("  options (--backend-opt %s.NAME=VALUE):\n", b->name);
        for (uint32_t k = 0; k < b->noptions; k++) {
            const byoc_option *o = &b->options[k];
            printf("    %s.%s (%s%s%s, default %s): %s\n", b->name, o->name, byoc_opt_type_name(o->type), o->choices ? ": " : "",
                   o->choices ? o->choices : "", *o->dflt ? o->dflt : "none", o->help);
        }
        if (b->get_patterns(ctx, NULL, &ps, &np, &d) != GR_OK) {
            printf("  patterns: error: %s\n", d.msg);
            continue;
        }
        printf("  patterns (%u, priority order):\n", np);
        for (uint32_t k = 0; k < np; k++) {
            printf("    %3u %s%s  ", k + 1, ps[k].name, ps[k].check ? " [check]" : "");
            pat_dump(ps[k].pattern, stdout);
            printf("\n");
        }
    }
    ir_ctx_free(ctx);
    return CLI_OK;
}
