/* graft compare: compares two .npy tensors element by element with a stated tolerance, the way
 * the tests do (base/compare.h: |a - b| <= atol + rtol * |b|, b the reference; NaN never
 * matches, an infinity only the same infinity). Prints the max abs and relative errors and the
 * worst value; exit 0 when within tolerance, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compare.h"
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
    gr_cmp_opts o = {.atol = atol, .rtol = rtol};
    gr_cmp_result r;
    bool ok = gr_cmp_tensor(a, b, &o, &r);
    printf("%lld values, max abs err %.3g, max rel err %.3g, %lld out of tolerance (atol %g + rtol %g)\n",
           (long long)r.numel, r.max_abs, r.max_rel, (long long)r.bad, atol, rtol);
    if (!ok)
        printf("worst at flat index %lld: %.9g, reference %.9g\n", (long long)r.worst, rt_tensor_get_f64(a, r.worst),
               rt_tensor_get_f64(b, r.worst));
    rc = ok ? CLI_OK : CLI_ERR;
done:
    rt_tensor_release(a);
    rt_tensor_release(b);
    return rc;
}
