/* Shared helpers of the graft command line: argument checks, loading a model, exit codes. */
#ifndef GRAFT_TOOLS_CLI_H
#define GRAFT_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "frontend/onnx/onnx_import.h"
#include "byoc/byoc.h"
#include "ir/expr.h"
#include "runtime/value.h"

#define GRAFT_VERSION "0.1.0"

/* Exit statuses (DESIGN.md): 0 success, 1 user error, 2 usage error. */
enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };

/* Prints "graft <cmd>: <message>" and the command's usage hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the diag (with the file when it has none) and returns CLI_ERR. */
int cli_fail(const gr_diag *d, const char *file);

/* Takes the value of an option: "--opt VALUE" or "--opt=VALUE". Returns true and advances *i
 * when argv[*i] is that option; sets *missing when the value is absent. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value, bool *missing);
bool cli_ends_with(const char *s, const char *suffix);

#define CLI_MAX_SHAPES 16

/* Options shared by commands that load a model. */
typedef struct cli_load_opts {
    onnx_input_shape shapes[CLI_MAX_SHAPES];
    char shape_names[CLI_MAX_SHAPES][256];
    uint32_t nshapes;
    const onnx_input_seq *seqs;   /* sequence / optional inputs' lengths (graft run --input N=a,b) */
    uint32_t nseqs;
    bool no_spans;
    bool optimize; /* run the default pipeline after loading, as `graft build` does */
} cli_load_opts;

/* Adds "--input-shape NAME=1x3x640x640"; false when malformed or too many. */
bool cli_add_input_shape(cli_load_opts *o, const char *spec);

/* Loads INPUT (.onnx or .relax) into a module in ctx and checks it is well formed; with
 * opts->optimize, runs the default pipeline over it (what relax.build does first). */
gr_status cli_load_model(ir_ctx_t *ctx, const char *path, const cli_load_opts *opts,
                         ir_module **out, gr_diag *diag);

/* The FuseOpsByPattern options of `graft partition` and `graft build`:
 * --annotate-codegen, --no-bind-constants, --entry NAME (repeatable). */
#define CLI_MAX_ENTRIES 16
typedef struct cli_fuse_args {
    bool annotate_codegen, no_bind_constants;
    const char *entry[CLI_MAX_ENTRIES];
    uint32_t nentry;
} cli_fuse_args;
/* 1: argv[*i] was one of these options (taken, *i advanced); 0: not one; -1: a usage error
 * (printed for `cmd`). */
int cli_fuse_arg(int argc, char **argv, int *i, cli_fuse_args *fa, const char *cmd);
/* The byoc options they give. */
struct byoc_fuse_opts cli_fuse_opts(const cli_fuse_args *fa);
#define CLI_FUSE_USAGE "[--annotate-codegen] [--no-bind-constants] [--entry FUNC]..."

/* ---- Backend options (byoc/backend.h) ----
 * One set per process: cli_backend_options_from_env (main, at start) turns the old GRAFT_*
 * environment variables (GRAFT_NUM_THREADS -> dnnl.threads, GRAFT_DNNL_DEBUG -> dnnl.debug,
 * ...) into options, then each --backend-opt of the command sets one; every command hands them
 * to the library. An error is printed; returns CLI_OK or CLI_ERR. */
int cli_backend_options_from_env(void);
/* Backend plugins (include/graft/backend_plugin.h), loaded before the command runs: every
 * libgraft_*.so in the folders of GRAFT_BACKEND_PATH (':'-separated; one that fails to load is
 * a warning), then each --backend-lib PATH of argv (one that fails is an error, printed).
 * Returns CLI_OK or CLI_ERR. */
int cli_backend_libs(int argc, char **argv);
/* True when argv[*i] is --backend-lib PATH (loaded already): taken, *i advanced. */
bool cli_backend_lib_arg(int argc, char **argv, int *i);
const byoc_options *cli_backend_options(void);
/* -1: argv[*i] is not --backend-opt; else it was taken (*i advanced) and this is CLI_OK, CLI_ERR
 * (an unknown option or bad value: printed naming it) or CLI_USAGE (no value). */
int cli_backend_opt_arg(int argc, char **argv, int *i, const char *cmd);
#define CLI_BACKEND_OPT_USAGE "[--backend-opt BACKEND.NAME=VALUE]..."

/* --backend NAME, a registered backend (at most CLI_MAX_BACKENDS, into names[*n]): 1 taken
 * (*i advanced), 0 not this option, -1 a usage error (printed for `cmd`). It also takes
 * --backend-lib PATH, which cli_backend_libs loaded before the command ran. */
#define CLI_MAX_BACKENDS 8
int cli_backend_arg(int argc, char **argv, int *i, const char **names, uint32_t *n, const char *cmd);
/* The last case of a command's argument loop: arg is an unknown option, the input (into
 * *input), or a second input. CLI_OK, or the usage status (printed for `cmd`). */
int cli_input_arg(const char *arg, const char **input, const char *cmd);

/* Monotonic clock in milliseconds. */
double cli_now_ms(void);
/* A deterministic input for `--input NAME=random`: uniform in [-1, 1) for floats, 0..9 for
 * integers, from `seed`. Its shape is s's static shape, or the one --input-shape gave for name
 * in lo (lo may be NULL; the run checks it against the signature). *out: new tensor. */
gr_status cli_random_input(const char *name, const ir_sinfo *s, const cli_load_opts *lo, uint64_t seed,
                           rt_tensor **out, gr_diag *d);
/* Writes a result (a tensor or a tuple of tensors) as DIR/output_<i>.npy. */
int cli_write_outputs(const rt_value *r, const char *dir, gr_diag *d);
/* Prints "latency_ms median=<x> min=<y> max=<z> runs=<n>" to stderr (sorts `times`). */
void cli_print_latency(double *times, long n);

#endif
