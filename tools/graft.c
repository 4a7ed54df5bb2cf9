/* graft: the command line. One table of subcommands drives dispatch and --help. */
#include <stdio.h>
#include <string.h>

#include "runtime/kernels/const_eval.h"
#include "tools/cli.h"
#include "tools/cmd_build.h"
#include "tools/cmd_inspect.h"
#include "tools/cmd_opt.h"
#include "tools/cmd_partition.h"
#include "tools/commands.h"
#include "tools/conformance/conformance.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
} command;

static const command COMMANDS[] = {
    {"fmt", cmd_fmt, "fmt FILE.relax [--no-spans] [-o OUT.relax]\n"
                     "      parse, check and print a module in the text format"},
    {"import", cmd_import, "import MODEL.onnx [--input-shape NAME=1x3x224x224]... [--no-spans] "
                           "[-o OUT.relax]\n      import an ONNX model and print its IRModule"},
    {"partition", cmd_partition,
     "partition INPUT [--backend NAME]... [--backend-lib PLUGIN.so]... [--patterns FILE.relax] [--stop-after fuse|merge|codegen]\n"
     "      [--report text|json] [--input-shape NAME=DIMS]... [--no-opt] [-o OUT.relax]\n"
     "      [--annotate-codegen] [--no-bind-constants] [--entry FUNC]... [--backend-opt BACKEND.NAME=VALUE]...\n"
     "      offload regions to backends; report what went where and why"},
    {"run", cmd_run, "run INPUT [--backend NAME]... [--backend-lib PLUGIN.so]... [--input NAME=FILE.npy|random]... "
                     "[--input-shape NAME=DIMS]...\n"
                     "      [--output-dir DIR] [--repeat N] [--profile] [--profile-json FILE] [--no-opt]\n"
                     "      [--backend-opt BACKEND.NAME=VALUE]...\n"
                     "      run a model (.onnx, .relax or a built .graft artifact); no --backend: "
                     "all on the host"},
    {"build", cmd_build, "build INPUT [--backend NAME]... [--backend-lib PLUGIN.so]... [--input-shape NAME=DIMS]... [--no-opt] -o MODEL.graft\n"
                         "      [--annotate-codegen] [--no-bind-constants] [--entry FUNC]... "
                         "[--backend-opt BACKEND.NAME=VALUE]...\n"
                         "      compile to one deployable artifact (the default pass pipeline first;\n"
                         "      --no-opt: the module as imported)"},
    {"compare", cmd_compare, "compare ACTUAL.npy REFERENCE.npy [--rtol R] [--atol A]\n"
                             "      max abs/rel error; exit 1 when |a-b| > atol + rtol*|b| anywhere (NaN never\n"
                             "      matches, an infinity only the same infinity)"},
    {"backends", cmd_backends, "backends [--backend-lib PLUGIN.so]...\n      list backends (built-in and plugins, with versions), their options (--backend-opt), their patterns in "
                               "priority order, and their codegens"},
    {"opt", cmd_opt, "opt INPUT [--passes a,b,c] [--opt-level N] [--disable NAME]... "
                     "[--config KEY=VALUE]...\n"
                     "      [--dump-ir DIR] [--time-passes] [--no-spans] [-o OUT.relax]\n"
                     "      run passes (default pipeline without --passes); lists lost layers"},
    {"trace", cmd_trace, "trace INPUT --layer NAME [opt's pipeline options]\n"
                         "      print every expression whose span names that layer, after the "
                         "pipeline\n"
                         "  graft trace INPUT --layer NAME --backend NAME [--backend-lib PLUGIN.so]... [--input NAME=FILE.npy|random]... "
                         "[--input-shape NAME=DIMS]... [--no-opt]\n"
                         "      [--backend-opt BACKEND.NAME=VALUE]...\n"
                         "      follow the layer through FuseOps, Merge and RunCodegen to its composite, "
                         "region and\n"
                         "      primitive(s), or to the host op and the reason it stayed there"},
    {"diff", cmd_diff, "diff INPUT --backend NAME [--backend-lib PLUGIN.so]... [--against reference|BACKEND] [--input NAME=FILE.npy|random]...\n"
                       "      [--against-model FLOAT.onnx | --against-dumps DIR] [--input-shape NAME=DIMS]... [--rtol R] [--atol A|Ax]\n"
                       "      [--atol-steps N] [--json OUT] [--no-opt]\n"
                       "      [--backend-opt BACKEND.NAME=VALUE]...\n"
                       "      run both paths on the same inputs and compare every frontend layer's output "
                       "(layers\n"
                       "      inside offloaded regions too); exit 1 when a layer is out of tolerance. --against-model: the\n"
                       "      other path runs that model (the float32 model a quantized INPUT was made from), layers matched\n"
                       "      by name; --against-dumps: ONNX Runtime's intermediate tensors (scripts/ort_dump.py), by node\n"
                       "      name; a QDQ INPUT's layers show their scales and zero points, errors in quantization steps"},
    {"explore", cmd_explore, "explore INPUT --backend NAME [--backend-lib ...] [--profile] [--diff] [--against ...] "
                             "[--input ...] [--input-shape ...] [--no-opt] [--backend-opt ...] -o REPORT.html\n"
                             "      one self-contained HTML page: the graph by layer coloured by region, "
                             "host ops and\n"
                             "      why, near misses, search; per layer its IR, placement, primitives, "
                             "time, error"},
    {"conformance", cmd_conformance,
     "conformance [DIR...] [--backend NAME]... [--backend-lib PLUGIN.so]... [--host llvm] [--json OUT] [--filter SUBSTR] [--jobs N]\n"
     "            [--timeout SEC] [-v]\n"
     "      run the ONNX backend test data (on the reference path; partitioned for the backends;\n"
     "      --host llvm: through graft build -> load -> run)"},
};
#define NCOMMANDS (sizeof(COMMANDS) / sizeof(COMMANDS[0]))

static void print_help(FILE *out) {
    fprintf(out, "graft %s: bring-your-own-codegen toolkit for Relax-style IR\n\n"
                 "usage: graft COMMAND [ARGS]\n\ncommands:\n", GRAFT_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(out, "  graft %s\n", COMMANDS[i].usage);
    fprintf(out, "\noptions:\n  --help      this help\n  --version   print the version\n"
                 "\nenvironment: GRAFT_NUM_THREADS, GRAFT_DNNL_DEBUG, ... set the dnnl backend's options\n"
                 "  (see graft backends) unless --backend-opt sets them\n"
                 "  GRAFT_BACKEND_PATH: folders (':'-separated) whose libgraft_*.so backend plugins are loaded\n"
                 "  at start (as --backend-lib PATH, which every command taking --backend accepts)\n"
                 "\nexit status: 0 success, 1 error in the input, 2 usage error\n");
}

int main(int argc, char **argv) {
    /* the environment is read here, in the tool, and handed to the library as options */
    if (cli_backend_options_from_env()) return CLI_ERR;
    if (argc < 2) {
        print_help(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        print_help(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("graft %s\n", GRAFT_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(argv[1], COMMANDS[i].name) == 0) {
            for (int j = 2; j < argc; j++) {
                if (strcmp(argv[j], "--help") == 0 || strcmp(argv[j], "-h") == 0) {
                    printf("usage: graft %s\n", COMMANDS[i].usage);
                    return CLI_OK;
                }
            }
            int rc = cli_backend_libs(argc - 1, argv + 1);
            return rc ? rc : COMMANDS[i].run(argc - 2, argv + 2);
        }
    }
    fprintf(stderr, "graft: unknown command '%s'\n\n", argv[1]);
    print_help(stderr);
    return CLI_USAGE;
}
