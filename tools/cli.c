/* Shared helpers of the graft command line. */
#include "tools/cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_codegen.h"
#include "backends/plugin.h"
#include "ir/text/parser.h"
#include "ir/transform/transform.h"
#include "ir/wellformed.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"

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
    rt_const_eval_attach(ctx); /* FoldConstant folds on the reference kernels */
    gr_status st;
    if (cli_ends_with(path, ".onnx")) {
        onnx_import_opts o = {0};
        if (opts) {
            o.shapes = opts->shapes;
            o.nshapes = opts->nshapes;
            o.seqs = opts->seqs;
            o.nseqs = opts->nseqs;
            o.no_spans = opts->no_spans;
        }
        st = onnx_import_file(ctx, path, &o, out, diag);
    } else {
        st = ir_parse_file(ctx, path, out, diag);
    }
    if (st == GR_OK) st = ir_wellformed_check(*out, diag);
    if (st == GR_OK && opts && opts->optimize) st = ir_pass_run(ir_pass_default_pipeline(), NULL, *out, out, diag);
    return st;
}

double cli_now_ms(void) {
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

gr_status cli_random_input(const char *name, const ir_sinfo *s, const cli_load_opts *lo, uint64_t seed,
                           rt_tensor **out, gr_diag *d) {
    int64_t shape[RT_MAX_NDIM];
    int32_t ndim = s && s->kind == IR_SINFO_TENSOR ? s->ndim : -1;
    const onnx_input_shape *given = NULL;
    for (uint32_t k = 0; lo && k < lo->nshapes && !given; k++)
        if (!strcmp(lo->shape_names[k], name)) given = &lo->shapes[k];
    if (given && s && s->kind == IR_SINFO_TENSOR && given->ndim <= RT_MAX_NDIM) {
        ndim = (int32_t)given->ndim;
        memcpy(shape, given->dims, sizeof(int64_t) * (size_t)ndim);
    } else if (!s || s->kind != IR_SINFO_TENSOR || s->ndim > RT_MAX_NDIM || !ir_sinfo_static_shape(s, shape))
        return gr_diag_set(d, GR_ERR_INVALID,
                           "input '%s' has no static shape: give --input %s=FILE.npy or "
                           "--input-shape %s=DIMS", name, name, name);
    if (ir_dtype_is_void(s->dtype))
        return gr_diag_set(d, GR_ERR_INVALID, "input '%s' has no dtype", name);
    rt_tensor *t = rt_tensor_new(s->dtype, ndim, shape);
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

int cli_write_outputs(const rt_value *r, const char *dir, gr_diag *d) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "error: %s: cannot create directory\n", dir);
        return CLI_ERR;
    }
    uint32_t n = r->kind == RT_VAL_TUPLE ? r->u.tuple.n : 1;
    const rt_value *items = r->kind == RT_VAL_TUPLE ? r->u.tuple.items : r;
    /* a sequence output (a tuple) among several: its elements as output_I_K.npy; a model whose one
     * output is a sequence returns that tuple itself, written as output_K.npy */
    for (uint32_t i = 0; i < n; i++) {
        bool seq = items[i].kind == RT_VAL_TUPLE;
        uint32_t ne = seq ? items[i].u.tuple.n : 1;
        for (uint32_t k = 0; k < ne; k++) {
            const rt_value *e = seq ? &items[i].u.tuple.items[k] : &items[i];
            if (e->kind != RT_VAL_TENSOR) {
                fprintf(stderr, "error: output %u is not a tensor or a sequence of tensors\n", i);
                return CLI_ERR;
            }
            char path[4096];
            if (seq) snprintf(path, sizeof(path), "%s/output_%u_%u.npy", dir, i, k);
            else snprintf(path, sizeof(path), "%s/output_%u.npy", dir, i);
            if (rt_npy_save(path, e->u.t, d) != GR_OK) return cli_fail(d, path);
        }
    }
    return CLI_OK;
}

void cli_print_latency(double *times, long n) {
    if (n <= 0) return;
    qsort(times, (size_t)n, sizeof(double), cmp_double);
    double med = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    fprintf(stderr, "latency_ms median=%.3f min=%.3f max=%.3f runs=%ld\n", med, times[0],
            times[n - 1], n);
}

int cli_fuse_arg(int argc, char **argv, int *i, cli_fuse_args *fa, const char *cmd) {
    const char *v;
    bool missing = false;
    if (strcmp(argv[*i], "--annotate-codegen") == 0) {
        fa->annotate_codegen = true;
        return 1;
    }
    if (strcmp(argv[*i], "--no-bind-constants") == 0) {
        fa->no_bind_constants = true;
        return 1;
    }
    if (cli_opt(argc, argv, i, "--entry", &v, &missing)) {
        if (missing || !*v || fa->nentry == CLI_MAX_ENTRIES) {
            cli_usage_error(cmd, "--entry needs a function name (at most %d)", CLI_MAX_ENTRIES);
            return -1;
        }
        fa->entry[fa->nentry++] = v;
        return 1;
    }
    return 0;
}

byoc_fuse_opts cli_fuse_opts(const cli_fuse_args *fa) {
    byoc_fuse_opts o = {!fa->no_bind_constants, fa->annotate_codegen, fa->nentry, fa->entry};
    return o;
}

/* ---- backend options ---- */

static byoc_options *g_backend_opts;

const byoc_options *cli_backend_options(void) {
    if (!g_backend_opts) g_backend_opts = byoc_options_new();
    return g_backend_opts;
}

/* prefix: "graft run" or "graft: GRAFT_NUM_THREADS" */
/* dnnl.precision=bf16 where oneDNN has no bf16 kernels runs float32: said once, on stderr */
static void precision_note(void) {
    static bool said;
    const char *why = rt_dnnl_bf16_missing();
    if (said || !why || strcmp(byoc_option_str(g_backend_opts, &byoc_dnnl_backend, "precision"), "bf16")) return;
    said = true;
    fprintf(stderr, "graft: warning: dnnl.precision=bf16: %s\n", why);
}

static int set_backend_opt(const char *prefix, const char *assignment) {
    gr_diag d;
    gr_diag_clear(&d);
    cli_backend_options();
    if (byoc_options_set(g_backend_opts, assignment, &d) == GR_OK) {
        precision_note();
        return CLI_OK;
    }
    fprintf(stderr, "%s: %s\n", prefix, d.msg);
    return CLI_ERR;
}

/* How an old variable's value reads as its option's: a flag is set by any value but "0";
 * GRAFT_DNNL_DECONV_TAG took oneDNN's tags (abcd, any; else channels-last). */
static const char *env_flag(const char *v) { return strcmp(v, "0") ? "1" : "0"; }
static const char *env_deconv_tag(const char *v) { return !strcmp(v, "abcd") ? "nchw" : !strcmp(v, "any") ? "any" : "nhwc"; }

/* The environment variables graft read before the options existed: variable, option, and how
 * its value reads (NULL: as it is). */
static const struct {
    const char *var, *option;
    const char *(*value)(const char *v);
} ENV_OPTIONS[] = {
    {"GRAFT_NUM_THREADS", "dnnl.threads", NULL},
    {"GRAFT_DNNL_BIND", "dnnl.bind", NULL},
    {"GRAFT_DNNL_DISABLE", "dnnl.disable", NULL},
    {"GRAFT_DNNL_DEBUG", "dnnl.debug", env_flag},
    {"GRAFT_DNNL_DUMP", "dnnl.dump", env_flag},
    {"GRAFT_DNNL_DENORMALS", "dnnl.denormals", env_flag},
    {"GRAFT_DNNL_NOREUSE", "dnnl.no_reuse", env_flag},
    {"GRAFT_DNNL_NOFUSE", "dnnl.no_fuse", env_flag},
    {"GRAFT_DNNL_NO_PIXEL_DECONV", "dnnl.no_pixel_deconv", env_flag},
    {"GRAFT_DNNL_SMALL_KB", "dnnl.small_kb", NULL},
    {"GRAFT_DNNL_DECONV_TAG", "dnnl.deconv_tag", env_deconv_tag},
};

int cli_backend_options_from_env(void) {
    for (size_t i = 0; i < sizeof ENV_OPTIONS / sizeof ENV_OPTIONS[0]; i++) {
        const char *v = getenv(ENV_OPTIONS[i].var);
        if (!v) continue;
        if (ENV_OPTIONS[i].value) v = ENV_OPTIONS[i].value(v);
        char a[512];
        snprintf(a, sizeof a, "%s=%s", ENV_OPTIONS[i].option, v);
        char who[64];
        snprintf(who, sizeof who, "graft: %s", ENV_OPTIONS[i].var);
        if (set_backend_opt(who, a)) return CLI_ERR;
    }
    return CLI_OK;
}

static int load_plugin(const char *who, const char *path) {
    gr_diag d;
    gr_diag_clear(&d);
    if (byoc_plugin_load(path, NULL, &d) == GR_OK) return CLI_OK;
    fprintf(stderr, "%s: %s\n", who, d.msg);
    return CLI_ERR;
}

/* Every libgraft_*.so of dir, in name order. */
static void load_plugin_dir(const char *dir) {
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int k = 0; k < n; k++) {
        const char *f = names[k]->d_name;
        if (strncmp(f, "libgraft_", 9) == 0 && cli_ends_with(f, ".so")) {
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s", dir, f) < (int)sizeof path)
                load_plugin("graft: warning: GRAFT_BACKEND_PATH", path);
        }
        free(names[k]);
    }
    free(names);
}

int cli_backend_libs(int argc, char **argv) {
    const char *env = getenv("GRAFT_BACKEND_PATH");
    for (const char *p = env; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        char dir[4096];
        if (len && len < sizeof dir) {
            memcpy(dir, p, len);
            dir[len] = '\0';
            load_plugin_dir(dir);
        }
        p += len + (colon != NULL);
    }
    for (int i = 0; i < argc; i++) {
        const char *v;
        bool missing = false;
        if (!cli_opt(argc, argv, &i, "--backend-lib", &v, &missing)) continue;
        if (missing) return cli_usage_error(argv[0], "--backend-lib takes a plugin library (PATH.so)");
        if (load_plugin("graft", v)) return CLI_ERR;
    }
    return CLI_OK;
}

bool cli_backend_lib_arg(int argc, char **argv, int *i) {
    const char *v;
    bool missing = false;
    return cli_opt(argc, argv, i, "--backend-lib", &v, &missing);
}

int cli_backend_arg(int argc, char **argv, int *i, const char **names, uint32_t *n, const char *cmd) {
    const char *v;
    bool missing = false;
    if (cli_backend_lib_arg(argc, argv, i)) return 1;
    if (!cli_opt(argc, argv, i, "--backend", &v, &missing)) return 0;
    if (missing || *n == CLI_MAX_BACKENDS) {
        cli_usage_error(cmd, "--backend takes a backend name, at most %d (see graft backends)", CLI_MAX_BACKENDS);
        return -1;
    }
    if (!byoc_backend_find(v)) {
        cli_usage_error(cmd, "unknown backend '%s' (see graft backends)", v);
        return -1;
    }
    names[(*n)++] = v;
    return 1;
}

int cli_input_arg(const char *arg, const char **input, const char *cmd) {
    if (arg[0] == '-' && arg[1]) return cli_usage_error(cmd, "unknown option '%s'", arg);
    if (*input) return cli_usage_error(cmd, "more than one input ('%s')", arg);
    *input = arg;
    return CLI_OK;
}

int cli_backend_opt_arg(int argc, char **argv, int *i, const char *cmd) {
    const char *v;
    bool missing = false;
    if (!cli_opt(argc, argv, i, "--backend-opt", &v, &missing)) return -1;
    if (missing) return cli_usage_error(cmd, "--backend-opt takes BACKEND.NAME=VALUE (see graft backends)");
    char who[64];
    snprintf(who, sizeof who, "graft %s", cmd);
    return set_backend_opt(who, v);
}
