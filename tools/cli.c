/* Shared helpers of the graft command line. */
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/parser.h"
#include "ir/wellformed.h"

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "graft %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'graft --help' for usage.\n");
    return CLI_USAGE;
}

int cli_fail(const gr_diag *d, const char *file) {
    gr_diag copy = *d;
    gr_diag_set_file(&copy, file);
    gr_diag_print(&copy);
    return CLI_ERR;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value, bool *missing) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *value = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        *missing = true;
        return true;
    }
    *value = argv[++*i];
    return true;
}

bool cli_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool cli_add_input_shape(cli_load_opts *o, const char *spec) {
    const char *eq = strrchr(spec, '=');
    if (!eq || eq == spec || o->nshapes == CLI_MAX_SHAPES) return false;
    size_t nlen = (size_t)(eq - spec);
    if (nlen >= sizeof(o->shape_names[0])) return false;
    onnx_input_shape *shape = &o->shapes[o->nshapes];
    memset(shape, 0, sizeof(*shape));
    const char *p = eq + 1;
    while (*p) {
        if (shape->ndim == RT_MAX_NDIM) return false;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v <= 0) return false;
        shape->dims[shape->ndim++] = v;
        if (*end == 'x' || *end == 'X' || *end == ',') {
            end++;
            if (!*end) return false;
        } else if (*end) {
            return false;
        }
        p = end;
    }
    if (shape->ndim == 0) return false;
    memcpy(o->shape_names[o->nshapes], spec, nlen);
    o->shape_names[o->nshapes][nlen] = '\0';
    shape->name = o->shape_names[o->nshapes];
    o->nshapes++;
    return true;
}

gr_status cli_load_model(ir_ctx_t *ctx, const char *path, const cli_load_opts *opts,
                         ir_module **out, gr_diag *diag) {
    gr_status st;
    if (cli_ends_with(path, ".onnx")) {
        onnx_import_opts o = {0};
        if (opts) {
            o.shapes = opts->shapes;
            o.nshapes = opts->nshapes;
            o.no_spans = opts->no_spans;
        }
        st = onnx_import_file(ctx, path, &o, out, diag);
    } else {
        st = ir_parse_file(ctx, path, out, diag);
    }
    if (st != GR_OK) return st;
    return ir_wellformed_check(*out, diag);
}
