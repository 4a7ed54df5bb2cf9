/* graft opt / graft trace through the CLI binary (GRAFT, else build/graft). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

#define BEFORE "tests/golden/passes/fold_bn.before.relax"

static void setup(void) { cli_mkdtemp("opt"); }
TestSuite(cmd_opt, .init = setup, .fini = cli_rmdir);

Test(cmd_opt, runs_passes_dumps_and_times) {
    cr_assert_eq(cli_run("opt " BEFORE " --passes FoldBatchNormIntoConv,DeadCodeElimination --dump-ir %s/ir "
                         "--time-passes -o %s/opt.relax", cli_dir(), cli_dir()), 0, "%s", cli_err());
    cr_assert(strstr(cli_err(), "total"), "timing table on stderr");
    char *out = cli_read("opt.relax");
    cr_assert_not_null(out);
    cr_assert(strstr(out, "[\"conv1\"!, \"bn1\"!]"), "%s", out);
    cr_assert_null(strstr(out, "batch_norm"), "dead batch_norm removed:\n%s", out);
    cr_assert(*cli_read("ir/00_FoldBatchNormIntoConv.relax"), "no IR dump after the first pass");
    cr_assert(*cli_read("ir/01_DeadCodeElimination.relax"), "no IR dump after the second pass");
}

Test(cmd_opt, default_pipeline_and_lost_layer_note) {
    cr_assert_eq(cli_run("opt " BEFORE), 0, "%s", cli_err());
    cr_assert(strstr(cli_out(), "R.nn.conv2d"));
    cr_assert_null(strstr(cli_err(), "no longer appear"), "%s", cli_err());
    /* With the SIBuilder off the folded convs lose their own layer names, and opt says so. */
    cr_assert_eq(cli_run("opt " BEFORE " --config ir.enable_si_builder=false"), 0, "%s", cli_err());
    cr_assert(strstr(cli_err(), "no longer appear in any span: conv1 conv2"), "%s", cli_err());
}

Test(cmd_opt, var_map_records_where_vars_went) {
    cr_assert_eq(cli_run("opt tests/golden/passes/canonicalize.before.relax --var-map"), 0, "%s", cli_err());
    char *out = cli_out();
    cr_assert(strstr(out, "\"var_map\""), "%s", out);
    cr_assert(strstr(out, "\"lv1\": \"lv\""), "lv1 = lv was canonicalized into lv:\n%s", out);
    cr_assert(strstr(out, "\"t\": None"), "the dead tuple is marked eliminated:\n%s", out);
}

Test(cmd_opt, errors) {
    cr_assert_eq(cli_run("opt " BEFORE " --layer bn1"), 2, "--layer is trace's");
    cr_assert_eq(cli_run("opt " BEFORE " --passes Bogus"), 2);
    cr_assert(strstr(cli_err(), "unknown pass 'Bogus'"), "%s", cli_err());
    cr_assert_eq(cli_run("opt " BEFORE " --config no.such=1"), 2);
    cr_assert_eq(cli_run("opt " BEFORE " --opt-level 9"), 2);
    cr_assert_eq(cli_run("opt --passes Normalize"), 2, "no input");
    cr_assert_eq(cli_run("opt /nonexistent/model.relax"), 1);
    cr_assert_eq(cli_run("opt tests/golden/passes/fold_bn.before.relax --disable FoldBatchNormIntoConv"), 0);
    cr_assert_null(strstr(cli_out(), "[\"conv1\"!, \"bn1\"!]"), "FoldBatchNormIntoConv was disabled");
}

Test(cmd_opt, trace_prints_every_expression_of_a_layer) {
    cr_assert_eq(cli_run("trace " BEFORE " --layer bn1"), 0, "%s", cli_err());
    char *out = cli_out();
    cr_assert(strstr(out, "main: lv = R.nn.conv2d("), "%s", out);
    cr_assert(strstr(out, "main: lv2 = R.add("), "%s", out);
    cr_assert(strstr(out, "produces the layer's output"), "%s", out);
    cr_assert_null(strstr(out, "decomposed:"), "bn1 is not in the other function:\n%s", out);
    cr_assert_eq(cli_run("trace " BEFORE " --layer nosuchlayer"), 1);
    cr_assert(strstr(cli_err(), "nosuchlayer"));
    cr_assert_eq(cli_run("trace " BEFORE), 2, "--layer is required");
}
