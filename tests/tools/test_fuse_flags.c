/* graft partition / build with FuseOpsByPattern's options (--annotate-codegen,
 * --no-bind-constants, --entry), and `graft run` refusing a TIR function by name; through the
 * graft binary, like test_messages.c. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

static void setup(void) { cli_mkdtemp("fuse"); }
TestSuite(fuse_flags, .init = setup, .fini = cli_rmdir);

static const char *out = "", *err = "";

/* graft ARGS (paths relative to the repository root); stdout in out, stderr in err */
static int run(const char *args) {
    int rc = cli_run("%s", args);
    out = cli_out();
    err = cli_err();
    return rc;
}

#define SUITE "tests/golden/tvm_suite/"

Test(fuse_flags, annotate_codegen_wraps_and_drops_the_composites) {
    cr_assert_eq(run("partition " SUITE "fuse_conv2d_relu_x2.input.relax --patterns " SUITE "patterns/conv2d_relu.relax "
                     "--stop-after fuse --annotate-codegen"), 0, "%s", err);
    cr_expect(strstr(out, "def fused_relax_nn_conv2d_relax_nn_relu_dnnl("), "%s", out);
    cr_expect(strstr(out, "\"Codegen\": \"dnnl\""), "%s", out);
    /* the composites live only as the wrappers' lambdas: no private global is left */
    cr_expect_null(strstr(out, "@R.function(private=True)"), "%s", out);
    /* and the whole pipeline (no merge) still ends in extern calls */
    cr_assert_eq(run("partition " SUITE "fuse_conv2d_relu_x2.input.relax --backend dnnl --annotate-codegen"), 0, "%s", err);
    cr_expect(strstr(out, "R.call_dps_packed(\""), "%s", out);
}

Test(fuse_flags, no_bind_constants_lifts_the_weight) {
    cr_assert_eq(run("partition " SUITE "fuse_bind_params.input.relax --patterns " SUITE "patterns/conv2d_relu.relax "
                     "--stop-after fuse --no-bind-constants"), 0, "%s", err);
    cr_expect(strstr(out, "param_0: R.Tensor((4, 4, 3, 3)"), "%s", out);
    cr_assert_eq(run("partition " SUITE "fuse_bind_params.input.relax --patterns " SUITE "patterns/conv2d_relu.relax "
                     "--stop-after fuse"), 0, "%s", err);
    cr_expect_null(strstr(out, "param_0"), "%s", out);
}

Test(fuse_flags, entry_limits_the_functions) {
    const char *in = SUITE "fuse_multiple_entries_same_extern.input.relax --patterns " SUITE "patterns/conv2d.relax --stop-after fuse";
    char args[512];
    snprintf(args, sizeof args, "partition %s --entry main2", in);
    cr_assert_eq(run(args), 0, "%s", err);
    /* main2's convolutions are fused, main's stay */
    const char *m = strstr(out, "def main(");
    cr_assert_not_null(m, "%s", out);
    cr_expect(strstr(m, "R.nn.conv2d("), "main is left alone: %s", out);
    cr_expect(strstr(out, "cls.fused_relax_nn_conv2d("), "%s", out);
    snprintf(args, sizeof args, "partition %s --entry", in);
    cr_expect_eq(run(args), 2, "a missing name is a usage error");
}

Test(fuse_flags, running_a_tir_function_names_it) {
    cr_expect_eq(run("run tests/golden/tir_function.relax --input x=random"), 1);
    cr_expect(strstr(err, "'add_one' is a TIR function (@T.prim_func)"), "%s", err);
    cr_expect_eq(run("build tests/golden/tir_function.relax --no-opt -o /dev/null"), 1);
    cr_expect(strstr(err, "add_one"), "%s", err);
}
