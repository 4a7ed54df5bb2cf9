/* graft compare: compares two .npy tensors element by element with a stated tolerance, the way
 * the tests do (|a - b| <= atol + rtol * |b|, b the reference). Prints the max abs and relative
 * errors; exit 0 when within tolerance, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npy.h"
#include "tools/cli.h"
#include "tools/commands.h"

static bool parse_double(const char *s, double *out) {
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && *out >= 0;
}

int cmd_compare(int argc, char **argv) {
    const char *files[2] = {NULL, NULL}, *v;
    double rtol = 1e-3, atol = 1e-5;
    int nfiles = 0;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "--rtol", &v, &missing)) {
            if (missing || !parse_double(v, &rtol)) return cli_usage_error("compare", "--rtol takes a number >= 0");
        } else if (cli_opt(argc, argv, &i, "--atol", &v, &missing)) {
            if (missing || !parse_double(v, &atol)) return cli_usage_error("compare", "--atol takes a number >= 0");
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("compare", "unknown option '%s'", argv[i]);
        } else if (nfiles < 2) {
            files[nfiles++] = argv[i];
        } else {
            return cli_usage_error("compare", "takes two files");
        }
    }
    if (nfiles != 2) return cli_usage_error("compare", "takes two files: ACTUAL.npy REFERENCE.npy");
    rt_tensor *a = NULL, *b = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    int rc = CLI_ERR;
    if (rt_npy_load(files[0], &a, &d) != GR_OK) {
        rc = cli_fail(&d, files[0]);
        goto done;
    }
    if (rt_npy_load(files[1], &b, &d) != GR_OK) {
        rc = cli_fail(&d, files[1]);
        goto done;
    }
    if (!rt_tensor_same_shape(a, b)) {
        fprintf(stderr, "error: %s and %s have different shapes\n", files[0], files[1]);
        goto done;
    }
    int64_t n = rt_tensor_numel(a), bad = 0;
    double max_abs = 0, max_rel = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = rt_tensor_get_f64(a, i), y = rt_tensor_get_f64(b, i), e = fabs(x - y);
        if (isnan(x) != isnan(y)) e = INFINITY;
        if (isnan(x) && isnan(y)) e = 0;
        if (e > max_abs) max_abs = e;
        if (fabs(y) >= atol && e / fabs(y) > max_rel) max_rel = e / fabs(y);
        if (e > atol + rtol * fabs(y)) bad++;
    }
    printf("%lld values, max abs err %.3g, max rel err %.3g, %lld out of tolerance "
           "(atol %g + rtol %g)\n", (long long)n, max_abs, max_rel, (long long)bad, atol, rtol);
    rc = bad ? CLI_ERR : CLI_OK;
done:
    rt_tensor_release(a);
    rt_tensor_release(b);
    return rc;
}
