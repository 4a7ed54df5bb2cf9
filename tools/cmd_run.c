/* graft run: run a model on the reference path, write outputs as .npy, time repeated runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "byoc/byoc.h"
#include "runtime/executor.h"
#include "runtime/npy.h"
#include "tools/cli.h"
#include "tools/cmd_build.h"
#include "tools/commands.h"

#define MAX_INPUTS 64
#define MAX_BACKENDS 8

typedef struct input_spec {
    char name[256];
    const char *source; /* a .npy path or "random" */
} input_spec;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* xorshift64*: deterministic inputs for `random`, uniform in [-1, 1) for floats. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static gr_status random_input(const char *name, const ir_sinfo *s, uint64_t seed, rt_tensor **out,
                              gr_diag *d) {
    int64_t shape[RT_MAX_NDIM];
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim > RT_MAX_NDIM || !ir_sinfo_static_shape(s, shape))
        return gr_diag_set(d, GR_ERR_INVALID,
                           "input '%s' has no static shape: give --input %s=FILE.npy or "
                           "--input-shape %s=DIMS", name, name, name);
    if (ir_dtype_is_void(s->dtype))
        return gr_diag_set(d, GR_ERR_INVALID, "input '%s' has no dtype", name);
    rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
    if (!t) return gr_diag_set(d, GR_ERR_NOMEM, "input '%s': cannot allocate", name);
    int64_t n = rt_tensor_numel(t);
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    bool fl = ir_dtype_is_float(s->dtype);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(rng_next(&st) >> 11) / 9007199254740992.0;
        rt_tensor_set_f64(t, i, fl ? 2.0 * u - 1.0 : (double)(int)(u * 10));
    }
    *out = t;
    return GR_OK;
}

static int write_outputs(const rt_value *r, const char *dir, gr_diag *d) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "error: %s: cannot create directory\n", dir);
        return CLI_ERR;
    }
    uint32_t n = r->kind == RT_VAL_TUPLE ? r->u.tuple.n : 1;
    const rt_value *items = r->kind == RT_VAL_TUPLE ? r->u.tuple.items : r;
    for (uint32_t i = 0; i < n; i++) {
        if (items[i].kind != RT_VAL_TENSOR) {
            fprintf(stderr, "error: output %u is not a tensor\n", i);
            return CLI_ERR;
        }
        char path[4096];
        snprintf(path, sizeof(path), "%s/output_%u.npy", dir, i);
        if (rt_npy_save(path, items[i].u.t, d) != GR_OK) return cli_fail(d, path);
    }
    return CLI_OK;
}

int cmd_run(int argc, char **argv) {
    /* A built artifact runs through the loader, with no compiler in the loop. */
    for (int i = 0; i < argc; i++)
        if (argv[i][0] != '-' && cli_ends_with(argv[i], ".graft")) return cmd_run_artifact(argc, argv);
    static cli_load_opts lo;
    const char *backends[MAX_BACKENDS];
    uint32_t nbackends = 0;
    static input_spec specs[MAX_INPUTS];
    memset(&lo, 0, sizeof(lo));
    uint32_t nspecs = 0;
    const char *input = NULL, *out_dir = NULL, *v;
    long repeat = 0;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "--output-dir", &out_dir, &missing)) {
            if (missing) return cli_usage_error("run", "--output-dir needs a directory");
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error("run", "--input-shape takes NAME=DIMxDIM...");
        } else if (cli_opt(argc, argv, &i, "--input", &v, &missing)) {
            const char *eq = v ? strrchr(v, '=') : NULL;
            if (missing || !eq || eq == v || nspecs == MAX_INPUTS || (size_t)(eq - v) >= 256)
                return cli_usage_error("run", "--input takes NAME=FILE.npy or NAME=random");
            memcpy(specs[nspecs].name, v, (size_t)(eq - v));
            specs[nspecs].name[eq - v] = '\0';
            specs[nspecs++].source = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--repeat", &v, &missing)) {
            char *end;
            repeat = missing ? -1 : strtol(v, &end, 10);
            if (missing || *end || repeat < 1 || repeat > 100000)
                return cli_usage_error("run", "--repeat takes a count from 1 to 100000");
        } else if (cli_opt(argc, argv, &i, "--backend", &v, &missing)) {
            if (missing || nbackends == MAX_BACKENDS)
                return cli_usage_error("run", "--backend takes a backend name (see graft backends)");
            if (!byoc_backend_find(v))
                return cli_usage_error("run", "unknown backend '%s' (see graft backends)", v);
            backends[nbackends++] = v;
        } else if (strcmp(argv[i], "--profile") == 0 || strncmp(argv[i], "--profile-json", 14) == 0) {
            return cli_usage_error("run", "%s needs a built artifact (graft build ... -o M.graft)",
                                   argv[i]);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("run", "unknown option '%s'", argv[i]);
        } else if (!input) {
            input = argv[i];
        } else {
            return cli_usage_error("run", "more than one input ('%s')", argv[i]);
        }
    }
    if (!input) return cli_usage_error("run", "no input model");

    int rc = CLI_ERR;
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    rt_exec_t *x = NULL;
    rt_value args[MAX_INPUTS];
    uint32_t nargs = 0;
    rt_value result = {0};
    double *times = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (cli_load_model(ctx, input, &lo, &m, &d) != GR_OK ||
        (nbackends && byoc_partition_for_backends(ctx, m, backends, nbackends, &m, &d) != GR_OK) ||
        rt_exec_new(m, "main", &x, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    uint32_t nin = rt_exec_num_inputs(x);
    if (nin > MAX_INPUTS) {
        fprintf(stderr, "error: %s: too many inputs (%u)\n", input, nin);
        goto done;
    }
    for (uint32_t s = 0; s < nspecs; s++) {
        bool found = false;
        for (uint32_t i = 0; i < nin; i++) found |= strcmp(rt_exec_input_name(x, i), specs[s].name) == 0;
        if (!found) {
            fprintf(stderr, "error: %s: the model has no input '%s'\n", input, specs[s].name);
            goto done;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        const char *name = rt_exec_input_name(x, i), *src = "random";
        for (uint32_t s = 0; s < nspecs; s++)
            if (strcmp(specs[s].name, name) == 0) src = specs[s].source;
        rt_tensor *t = NULL;
        gr_status st = strcmp(src, "random") == 0
                           ? random_input(name, rt_exec_input_sinfo(x, i), i + 1, &t, &d)
                           : rt_npy_load(src, &t, &d);
        if (st != GR_OK) {
            rc = cli_fail(&d, strcmp(src, "random") == 0 ? input : src);
            goto done;
        }
        args[nargs++] = rt_value_tensor(t);
    }
    if (rt_exec_run(x, args, nargs, &result, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    if (out_dir && write_outputs(&result, out_dir, &d) != CLI_OK) goto done;
    if (repeat > 0) {
        times = malloc(sizeof(double) * (size_t)repeat);
        if (!times) goto done;
        for (long r = 0; r < repeat; r++) {
            rt_value again = {0};
            double t0 = now_ms();
            gr_status st = rt_exec_run(x, args, nargs, &again, &d);
            times[r] = now_ms() - t0;
            rt_value_clear(&again);
            if (st != GR_OK) {
                rc = cli_fail(&d, input);
                goto done;
            }
        }
        qsort(times, (size_t)repeat, sizeof(double), cmp_double);
        double med = repeat % 2 ? times[repeat / 2] : (times[repeat / 2 - 1] + times[repeat / 2]) / 2;
        fprintf(stderr, "latency_ms median=%.3f min=%.3f max=%.3f runs=%ld\n", med, times[0],
                times[repeat - 1], repeat);
    }
    rc = CLI_OK;
done:
    free(times);
    rt_value_clear(&result);
    for (uint32_t i = 0; i < nargs; i++) rt_value_clear(&args[i]);
    rt_exec_free(x);
    ir_ctx_free(ctx);
    return rc;
}
