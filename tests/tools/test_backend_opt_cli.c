/* --backend-opt on the command line (through the graft binary, like test_messages.c): an
 * unknown option or a bad value exits 1 naming it; dnnl.disable shows in the partition report;
 * runtime options reach a region loaded from an artifact (dnnl.debug prints its primitives);
 * the old GRAFT_* environment variables still work as a fallback, and `graft backends` lists
 * the options. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 10, 10), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\")) -> R.Tensor((1, 8, 8, 8), dtype=\"float32\"):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((1, 8, 8, 8), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            gv: R.Tensor((1, 8, 8, 8), dtype=\"float32\") = R.nn.relu(lv)  # span: \"relu1\"\n"
    "            R.output(gv)\n"
    "        return gv\n";

static void setup(void) {
    cli_mkdtemp("bopt");
    cli_write("m.relax", k_mod);
}
TestSuite(backend_opt_cli, .init = setup, .fini = cli_rmdir);

static const char *out = "", *err = "";

/* Runs `env graft args` in the scratch directory (env: "" or "VAR=value", without the GRAFT_*
 * variables this test sets itself); stdout / stderr into out / err. Returns the exit status. */
static int run(const char *env, const char *args) {
    char e[256];
    snprintf(e, sizeof e, "-u GRAFT_DNNL_DEBUG -u GRAFT_NUM_THREADS %s", env);
    int rc = cli_run_in(cli_dir(), e, "%s", args);
    out = cli_out();
    err = cli_err();
    return rc;
}

Test(backend_opt_cli, unknown_option_and_bad_value_exit_1) {
    cr_expect_eq(run("", "partition m.relax --backend dnnl --backend-opt dnnl.nope=1"), 1);
    cr_expect(strstr(err, "dnnl.nope") && strstr(err, "no option 'nope'"), "%s", err);
    cr_expect_eq(run("", "build m.relax --backend dnnl --backend-opt dnnl.threads=many -o m.graft"), 1);
    cr_expect(strstr(err, "dnnl.threads") && strstr(err, "'many'"), "%s", err);
    cr_expect_eq(run("", "run m.relax --backend dnnl --backend-opt dnnl.deconv_tag=nchwc"), 1);
    cr_expect(strstr(err, "dnnl.deconv_tag"), "%s", err);
    cr_expect_eq(run("", "partition m.relax --backend dnnl --backend-opt dnnl.disable=conv9"), 1);
    cr_expect(strstr(err, "dnnl.disable") && strstr(err, "'conv9'"), "%s", err);
    cr_expect_eq(run("GRAFT_NUM_THREADS=some", "partition m.relax --backend dnnl"), 1);
    cr_expect(strstr(err, "GRAFT_NUM_THREADS") && strstr(err, "dnnl.threads"), "%s", err);
    cr_expect_eq(run("", "diff m.relax --backend dnnl --backend-opt dnnl.no_fuse=maybe"), 1);
    cr_expect(strstr(err, "graft diff: backend option 'dnnl.no_fuse'"), "%s", err);
    cr_expect_eq(run("", "partition m.relax --backend dnnl --backend-opt"), 2, "no value: a usage error");
}

Test(backend_opt_cli, disable_shows_in_the_report) {
    cr_assert_eq(run("", "partition m.relax --backend dnnl --report text -o p.relax"), 0, "%s", err);
    cr_expect(strstr(out, "host ops: 0"), "%s", out);
    cr_assert_eq(run("", "partition m.relax --backend dnnl --backend-opt dnnl.disable=composites,relu --report text "
                         "-o p.relax"), 0, "%s", err);
    cr_expect(strstr(out, "host ops: 1"), "%s", out);
    cr_expect(strstr(out, "relax.nn.relu") && strstr(out, "dnnl.disable=composites,relu"), "%s", out);
}

Test(backend_opt_cli, runtime_options_reach_artifact_regions) {
    cr_assert_eq(run("", "build m.relax --backend dnnl -o m.graft"), 0, "%s", err);
    cr_assert_eq(run("", "run m.graft"), 0, "%s", err);
    cr_expect_null(strstr(err, "dnnl region"), "%s", err);
    cr_assert_eq(run("", "run m.graft --backend-opt dnnl.debug=1"), 0, "%s", err);
    cr_expect(strstr(err, "dnnl region 'fused_") && strstr(err, "convolution"), "%s", err);
    cr_assert_eq(run("GRAFT_DNNL_DEBUG=1", "run m.graft"), 0, "%s", err);
    cr_expect(strstr(err, "dnnl region 'fused_"), "the environment variable as a fallback: %s", err);
    cr_assert_eq(run("GRAFT_DNNL_DEBUG=1", "run m.graft --backend-opt dnnl.debug=0"), 0, "%s", err);
    cr_expect_null(strstr(err, "dnnl region"), "the command line wins over the environment: %s", err);
}

Test(backend_opt_cli, backends_lists_the_options) {
    cr_assert_eq(run("", "backends"), 0, "%s", err);
    cr_expect(strstr(out, "dnnl.threads (int, default 0)"), "%s", out);
    cr_expect(strstr(out, "dnnl.deconv_tag (string: nhwc|nchw|any, default nhwc)"));
    cr_expect(strstr(out, "dnnl.disable"));
}
