/* graft fmt / graft import: load a model and print its IRModule in the text format. */
#include <stdio.h>
#include <string.h>

#include "ir/text/printer.h"
#include "tools/cli.h"
#include "tools/commands.h"

static int write_module(const ir_module *m, const char *out_path, const ir_print_opts *po) {
    if (!out_path) {
        ir_print_module(m, stdout, po);
        return fflush(stdout) == 0 ? CLI_OK : CLI_ERR;
    }
    FILE *f = fopen(out_path, "w");
    if (!f) {
        fprintf(stderr, "error: %s: cannot open for writing\n", out_path);
        return CLI_ERR;
    }
    ir_print_module(m, f, po);
    if (fclose(f) != 0) {
        fprintf(stderr, "error: %s: write failed\n", out_path);
        return CLI_ERR;
    }
    return CLI_OK;
}

/* Both commands: INPUT [--no-spans] [-o OUT] [--input-shape N=D]... (import only). */
static int load_and_print(const char *cmd, int argc, char **argv, bool allow_shapes) {
    const char *input = NULL, *out_path = NULL, *v;
    static cli_load_opts lo; /* large (names); one per process */
    memset(&lo, 0, sizeof(lo));
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "-o", &out_path, &missing)) {
            if (missing) return cli_usage_error(cmd, "-o needs a file");
        } else if (allow_shapes && cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error(cmd, "--input-shape takes NAME=DIMxDIM...");
        } else if (strcmp(argv[i], "--no-spans") == 0) {
            lo.no_spans = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        } else if (!input) {
            input = argv[i];
        } else {
            return cli_usage_error(cmd, "more than one input ('%s')", argv[i]);
        }
    }
    if (!input) return cli_usage_error(cmd, "no input file");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    int rc;
    if (cli_load_model(ctx, input, &lo, &m, &d) != GR_OK) {
        rc = cli_fail(&d, input);
    } else {
        ir_print_opts po = {.no_spans = lo.no_spans};
        rc = write_module(m, out_path, &po);
    }
    ir_ctx_free(ctx);
    return rc;
}

int cmd_fmt(int argc, char **argv) { return load_and_print("fmt", argc, argv, false); }
int cmd_import(int argc, char **argv) { return load_and_print("import", argc, argv, true); }
