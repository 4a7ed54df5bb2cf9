/* graft opt / graft trace through the CLI binary (GRAFT, else build/graft). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

#define BEFORE "tests/golden/passes/fold_bn.before.relax"

static char tmpdir[64];
static void setup(void) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/graft_opt_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}
static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}
TestSuite(cmd_opt, .init = setup, .fini = teardown);

/* Runs `graft ARGS > tmp/out 2> tmp/err`; returns the exit status. */
static int run(const char *args) {
    char cmd[PATH_MAX + 2048];
    snprintf(cmd, sizeof(cmd), "%s %s > %s/out 2> %s/err", graft(), args, tmpdir, tmpdir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *name) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    static char buf[1 << 16];
    return tu_read_into(path, buf, sizeof buf);
}

Test(cmd_opt, runs_passes_dumps_and_times) {
    char args[1024];
    snprintf(args, sizeof(args), "opt " BEFORE " --passes FoldBatchNormIntoConv,DeadCodeElimination --dump-ir %s/ir "
             "--time-passes -o %s/opt.relax", tmpdir, tmpdir);
    cr_assert_eq(run(args), 0, "%s", slurp("err"));
    cr_assert(strstr(slurp("err"), "total"), "timing table on stderr");
    char *out = slurp("opt.relax");
    cr_assert_not_null(out);
    cr_assert(strstr(out, "[\"conv1\"!, \"bn1\"!]"), "%s", out);
    cr_assert_null(strstr(out, "batch_norm"), "dead batch_norm removed:\n%s", out);
    cr_assert_not_null(slurp("ir/00_FoldBatchNormIntoConv.relax"));
    cr_assert_not_null(slurp("ir/01_DeadCodeElimination.relax"));
}

Test(cmd_opt, default_pipeline_and_lost_layer_note) {
    cr_assert_eq(run("opt " BEFORE), 0, "%s", slurp("err"));
    cr_assert(strstr(slurp("out"), "R.nn.conv2d"));
    cr_assert_null(strstr(slurp("err"), "no longer appear"), "%s", slurp("err"));
    /* With the SIBuilder off the folded convs lose their own layer names, and opt says so. */
    cr_assert_eq(run("opt " BEFORE " --config ir.enable_si_builder=false"), 0, "%s", slurp("err"));
    cr_assert(strstr(slurp("err"), "no longer appear in any span: conv1 conv2"), "%s", slurp("err"));
}

Test(cmd_opt, var_map_records_where_vars_went) {
    cr_assert_eq(run("opt tests/golden/passes/canonicalize.before.relax --var-map"), 0, "%s", slurp("err"));
    char *out = slurp("out");
    cr_assert(strstr(out, "\"var_map\""), "%s", out);
    cr_assert(strstr(out, "\"lv1\": \"lv\""), "lv1 = lv was canonicalized into lv:\n%s", out);
    cr_assert(strstr(out, "\"t\": None"), "the dead tuple is marked eliminated:\n%s", out);
}

Test(cmd_opt, errors) {
    cr_assert_eq(run("opt " BEFORE " --layer bn1"), 2, "--layer is trace's");
    cr_assert_eq(run("opt " BEFORE " --passes Bogus"), 2);
    cr_assert(strstr(slurp("err"), "unknown pass 'Bogus'"), "%s", slurp("err"));
    cr_assert_eq(run("opt " BEFORE " --config no.such=1"), 2);
    cr_assert_eq(run("opt " BEFORE " --opt-level 9"), 2);
    cr_assert_eq(run("opt --passes Normalize"), 2, "no input");
    cr_assert_eq(run("opt /nonexistent/model.relax"), 1);
    cr_assert_eq(run("opt tests/golden/passes/fold_bn.before.relax --disable FoldBatchNormIntoConv"), 0);
    cr_assert_null(strstr(slurp("out"), "[\"conv1\"!, \"bn1\"!]"), "FoldBatchNormIntoConv was disabled");
}

Test(cmd_opt, trace_prints_every_expression_of_a_layer) {
        char cmd[256];
    snprintf(cmd, sizeof(cmd), "trace " BEFORE " --layer bn1");
    cr_assert_eq(run(cmd), 0, "%s", slurp("err"));
    char *out = slurp("out");
    cr_assert(strstr(out, "main: lv = R.nn.conv2d("), "%s", out);
    cr_assert(strstr(out, "main: lv2 = R.add("), "%s", out);
    cr_assert(strstr(out, "produces the layer's output"), "%s", out);
    cr_assert_null(strstr(out, "decomposed:"), "bn1 is not in the other function:\n%s", out);
    cr_assert_eq(run("trace " BEFORE " --layer nosuchlayer"), 1);
    cr_assert(strstr(slurp("err"), "nosuchlayer"));
    cr_assert_eq(run("trace " BEFORE), 2, "--layer is required");
}
