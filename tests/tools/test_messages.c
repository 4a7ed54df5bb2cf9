/* CLI error messages for bad paths (through the graft binary, like test_profile.c): the file is
 * named once ("error: F: ...", never "error: F: F: ..."), a directory given as a file says so,
 * and an empty .onnx file says it is empty. Each exits with status 1. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

static void setup(void) { cli_mkdtemp("msg"); }
TestSuite(messages, .init = setup, .fini = cli_rmdir);

static const char *err = "";

/* graft ARGS in the scratch directory; its stderr in err */
static int run(const char *args) {
    int rc = cli_run_here("%s", args);
    err = cli_err();
    return rc;
}

static void mkdir_in(const char *name) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", cli_dir(), name);
    cr_assert_eq(mkdir(path, 0755), 0);
}

/* the message names `file` exactly once */
static void named_once(const char *file) {
    const char *a = strstr(err, file);
    cr_assert_not_null(a, "'%s' not in: %s", file, err);
    cr_assert_null(strstr(a + strlen(file), file), "'%s' printed twice: %s", file, err);
}

Test(messages, path_is_printed_once) {
    cr_assert_eq(run("run missing.graft"), 1, "%s", err);
    named_once("missing.graft");
    cr_assert(strstr(err, "cannot open"), "%s", err);
    cli_write("bad.relax", "garbage\n");
    cr_assert_eq(run("fmt bad.relax"), 1, "%s", err);
    named_once("bad.relax");
    cr_assert(strstr(err, "error: bad.relax:1:1:"), "%s", err);
}

Test(messages, a_directory_is_not_a_file) {
    static const char *const cmds[][2] = {
        {"m.relax", "fmt m.relax"},         {"m.onnx", "import m.onnx"},
        {"m.graft", "run m.graft"},         {"x.npy", "run ok.relax --input x=x.npy"},
        {"p.relax", "partition ok.relax --patterns p.relax"},
    };
    cli_write("ok.relax", "@I.ir_module\nclass Module:\n    @R.function\n"
                      "    def main(x: R.Tensor((2,), dtype=\"float32\")) -> R.Tensor((2,), dtype=\"float32\"):\n"
                      "        return x\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        mkdir_in(cmds[i][0]);
        cr_assert_eq(run(cmds[i][1]), 1, "%s: %s", cmds[i][1], err);
        cr_assert(strstr(err, "is a directory"), "%s: %s", cmds[i][1], err);
        named_once(cmds[i][0]);
    }
}

Test(messages, an_empty_onnx_file_says_empty) {
    cli_write("empty.onnx", "");
    cr_assert_eq(run("import empty.onnx"), 1, "%s", err);
    cr_assert(strstr(err, "empty file"), "%s", err);
    cr_assert_null(strstr(err, "no graph"), "%s", err);
    named_once("empty.onnx");
}

/* graft run with a sequence input given as a list of .npy files: the import specializes it to
 * that length, the sequence output is written element by element. Without the list the input
 * is refused with the reason. */
#include "ir/dtype.h"
#include "runtime/npy.h"

static void save_vec(const char *name, int64_t n, int64_t first) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_I64, 1, &n);
    for (int64_t i = 0; i < n; i++) rt_tensor_set_f64(t, i, (double)(first + i));
    char path[128];
    snprintf(path, sizeof path, "%s/%s", cli_dir(), name);
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_npy_save(path, t, &d), GR_OK);
    rt_tensor_release(t);
}

Test(messages, a_sequence_input_is_a_list_of_npy_files) {
    const char *model = "/usr/share/libonnx-testdata/data/node/test_sequence_insert_at_back/model.onnx";
    save_vec("a.npy", 4, 1);
    save_vec("b.npy", 2, 5);
    save_vec("t.npy", 3, 10);
    char args[512];
    snprintf(args, sizeof args, "run %s --input sequence=a.npy,b.npy --input tensor=t.npy --output-dir o", model);
    cr_assert_eq(run(args), 0, "%s", err);
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    char path[128];
    snprintf(path, sizeof path, "%s/o/output_2.npy", cli_dir());
    cr_assert_eq(rt_npy_load(path, &t, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_tensor_numel(t), 3);
    cr_assert_eq(rt_tensor_get_f64(t, 2), 12.0);
    rt_tensor_release(t);
    snprintf(args, sizeof args, "run %s --input tensor=t.npy", model);
    cr_assert_eq(run(args), 1);
    cr_assert(strstr(err, "its length must be given"), "%s", err);
    snprintf(args, sizeof args, "run %s --input sequence=a.npy,nothere.npy --input tensor=t.npy", model);
    cr_assert_eq(run(args), 1);
    cr_assert(strstr(err, "nothere.npy"), "%s", err);
}
