/* graft diff, graft trace --backend and graft explore through the CLI binary (GRAFT, else
 * build/graft), and the explorer page opened in headless Chromium (scripts/explore_check.js:
 * no console errors, every region and host op of the partition report listed, searching a
 * layer selects it and shows its region; it saves a screenshot under build/explore/). */
#include "tests/models_env.h"
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/graft_cli.h"
#include "tests/test_util.h"

#define SMALL "tests/golden/inspect/conv_host_conv.relax"

static char root[PATH_MAX];

static void setup(void) {
    cli_mkdtemp("inspect");
    cr_assert_not_null(getcwd(root, sizeof root));
}
TestSuite(inspect_cli, .init = setup, .fini = cli_rmdir);

static int sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


Test(inspect_cli, diff_reports_layers_and_exit_status) {
    cr_assert_eq(cli_run("diff " SMALL " --backend dnnl --json %s/d.json", cli_dir()), 0, "%s%s", cli_out(), cli_err());
    const char *out = cli_out();
    cr_assert(strstr(out, "every observable layer is within tolerance"), "%s", out);
    cr_assert(strstr(out, "cumsum") && strstr(out, "host op R.cumsum"), "%s", out);
    cr_assert(strstr(out, "conv1") && strstr(out, "unobservable"), "%s", out);
    char path[128];
    snprintf(path, sizeof path, "%s/d.json", cli_dir());
    json_t *doc = json_load_file(path, 0, NULL);
    cr_assert_not_null(doc);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "summary"), "diverging")), 0);
    cr_assert_eq(json_array_size(json_object_get(doc, "layers")), 6);
    json_decref(doc);
    cr_assert_eq(cli_run("diff " SMALL " --backend dnnl --against json"), 0, "%s", cli_err());
    /* usage errors: 2; a missing file: 1 */
    cr_assert_eq(cli_run("diff " SMALL " --backend nosuch"), 2);
    cr_assert_eq(cli_run("diff " SMALL), 2);
    cr_assert_eq(cli_run("diff " SMALL " --backend dnnl --against dnnl"), 2);
    cr_assert_eq(cli_run("diff " SMALL " --backend dnnl --rtol x"), 2);
    cr_assert_eq(cli_run("diff /nonexistent.relax --backend dnnl"), 1);
    cr_assert_eq(cli_run("diff " SMALL " --backend dnnl --input x=/nonexistent.npy"), 1);
    cr_assert(strstr(cli_err(), "nonexistent.npy"), "%s", cli_err());
}

Test(inspect_cli, trace_names_region_primitive_or_host_reason) {
    cr_assert_eq(cli_run("trace " SMALL " --backend dnnl --layer act2"), 0, "%s", cli_err());
    const char *out = cli_out();
    cr_assert(strstr(out, "FuseOps:    composite dnnl.conv2d"), "%s", out);
    cr_assert(strstr(out, "Merge:      region fused_"), "%s", out);
    cr_assert(strstr(out, "RunCodegen: R.call_dps_packed"), "%s", out);
    cr_assert(strstr(out, "runtime:    primitive") && strstr(out, "convolution"), "%s", out);
    cr_assert_eq(cli_run("trace " SMALL " --backend dnnl --layer conv1"), 0, "%s", cli_err());
    cr_assert(strstr(cli_out(), "fused into primitive"), "%s", cli_out());
    cr_assert_eq(cli_run("trace " SMALL " --backend dnnl --layer cumsum"), 0, "%s", cli_err());
    out = cli_out();
    cr_assert(strstr(out, "stays on the host: relax.cumsum") && strstr(out, "json.cumsum"), "%s", out);
    cr_assert_eq(cli_run("trace " SMALL " --backend dnnl --layer nosuch"), 1);
    /* without --backend: the pipeline trace as before */
    cr_assert_eq(cli_run("trace " SMALL " --layer act2"), 0, "%s", cli_err());
    cr_assert(strstr(cli_out(), "R.sigmoid"), "%s", cli_out());
}

/* PP-OCR with --backend dnnl: every observable layer within the default tolerance. */
static void ppocr_diff(const char *key, const char *shape) {
    char *path = model_path(key);
    if (!path) cr_skip("%s: no model (run scripts/fetch_models.sh)", key);
    int rc = cli_run("diff '%s' --input-shape x=%s --backend dnnl", path, shape);
    cr_assert_eq(rc, 0, "%s\n%s", cli_out(), cli_err());
    cr_assert(strstr(cli_out(), " 0 diverging"), "%s", cli_out());
    free(path);
}
Test(inspect_cli, ppocr_cls_diff_dnnl, .timeout = 120) { ppocr_diff("GRAFT_MODEL_CLS", "1x3x48x192"); }
Test(inspect_cli, ppocr_rec_diff_dnnl, .timeout = 120) { ppocr_diff("GRAFT_MODEL_REC", "1x3x48x320"); }
Test(inspect_cli, ppocr_det_diff_dnnl, .timeout = 300) { ppocr_diff("GRAFT_MODEL_DET", "1x3x640x640"); }

/* explore -> the page in Chromium, checked against `graft partition --report json`. */
static void browser_check(const char *model, const char *shape, const char *layer, const char *shot, const char *flags) {
    char shapes[128] = "";
    if (shape) snprintf(shapes, sizeof shapes, "--input-shape x=%s", shape);
    cr_assert_eq(cli_run("explore '%s' %s --backend dnnl %s -o %s/page.html", model, shapes, flags, cli_dir()), 0, "%s", cli_err());
    struct stat st;
    char page[256];
    snprintf(page, sizeof page, "%s/page.html", cli_dir());
    cr_assert_eq(stat(page, &st), 0);
    cr_assert_lt(st.st_size, 5 * 1024 * 1024, "the page is %lld bytes", (long long)st.st_size);
    const char *html = cli_read("page.html");
    /* self-contained: no external script, style, image or request (the SVG's xmlns are names) */
    const char *never[] = {"src=", "<link", "href=\"http", "url(http", "@import", "fetch(", "XMLHttpRequest", "WebSocket"};
    for (size_t k = 0; k < sizeof never / sizeof never[0]; k++)
        cr_assert(!strstr(html, never[k]), "the page must not load anything: it has %s", never[k]);
    cr_assert_eq(cli_run("partition '%s' %s --backend dnnl --report json", model, shapes), 0, "%s", cli_err());
    char cmd[PATH_MAX * 6 + 1024];
    snprintf(cmd, sizeof cmd, "cp '%s/out' '%s/report.json' && mkdir -p '%s/build/explore' && "
             "node '%s/scripts/explore_check.js' '%s/page.html' '%s/report.json' '%s' '%s/build/explore/%s' 2> '%s/check'",
             cli_dir(), cli_dir(), root, root, cli_dir(), cli_dir(), layer, root, shot, cli_dir());
    cr_assert_eq(sh(cmd), 0, "%s", cli_read("check"));
    snprintf(cmd, sizeof cmd, "%s/build/explore/%s", root, shot);
    cr_assert_eq(stat(cmd, &st), 0, "no screenshot %s", cmd);
    cr_assert_gt(st.st_size, 1000);
}

Test(inspect_cli, explore_regions_and_host_op_in_chromium, .timeout = 180) {
    browser_check(SMALL, NULL, "cumsum", "conv_host_conv.png", "--diff --profile");
    browser_check(SMALL, NULL, "act2", "conv_host_conv_act2.png", "--diff --profile");
    cr_assert(strstr(cli_read("page.html"), "\"primitives\":[{"), "--profile records oneDNN's primitives");
}

Test(inspect_cli, explore_ppocr_det_in_chromium, .timeout = 300) {
    char *path = model_path("GRAFT_MODEL_DET");
    if (!path) cr_skip("GRAFT_MODEL_DET: no model (run scripts/fetch_models.sh)");
    browser_check(path, "1x3x640x640", "p2o.Conv.12", "ppocr_det.png", "");
    free(path);
}

/* The zoo's encoder: its exported layer norms are one op each after the pipeline, so the ten
 * layers of each are folded into one node; searching a folded layer selects that node. */
Test(inspect_cli, explore_zoo_bert_folded_layers_in_chromium, .timeout = 300) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4200];
    snprintf(path, sizeof path, "%s/bert_encoder.onnx", zoo);
    struct stat st;
    if (stat(path, &st) != 0) cr_skip("bert_encoder: no zoo cache (scripts/fetch_zoo.sh)");
    browser_check(path, NULL, "/layers.0/attn_norm/ReduceMean", "zoo_bert_encoder.png", "");
    cr_assert(strstr(cli_read("page.html"), "\"folded_into\":"), "the exported layer norm's layers are folded");
}

/* The model zoo (scripts/fetch_zoo.sh) with --backend dnnl on its saved input: every
 * observable layer within the default tolerance. */
static void zoo_diff(const char *name) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char in[4200];
    snprintf(in, sizeof in, "%s/refs/%s/input_0.npy", zoo, name);
    struct stat st;
    if (stat(in, &st) != 0) cr_skip("%s: no zoo cache (scripts/fetch_zoo.sh)", name);
    int rc = cli_run("diff '%s/%s.onnx' --backend dnnl --input x='%s'", zoo, name, in);
    cr_assert_eq(rc, 0, "%s\n%s", cli_out(), cli_err());
    cr_assert(strstr(cli_out(), " 0 diverging"), "%s", cli_out());
}
Test(inspect_cli, zoo_resnet18_diff_dnnl, .timeout = 300) { zoo_diff("resnet18"); }
Test(inspect_cli, zoo_mobilenet_v3_diff_dnnl, .timeout = 300) { zoo_diff("mobilenet_v3_large"); }
Test(inspect_cli, zoo_mnasnet_diff_dnnl, .timeout = 300) { zoo_diff("mnasnet1_0"); }
Test(inspect_cli, zoo_shufflenet_diff_dnnl, .timeout = 300) { zoo_diff("shufflenet_v2_x1_0"); }
Test(inspect_cli, zoo_regnet_diff_dnnl, .timeout = 300) { zoo_diff("regnet_y_400mf"); }
Test(inspect_cli, zoo_googlenet_diff_dnnl, .timeout = 300) { zoo_diff("googlenet"); }
Test(inspect_cli, zoo_convnext_diff_dnnl, .timeout = 300) { zoo_diff("convnext_tiny"); }
Test(inspect_cli, zoo_bert_encoder_diff_dnnl, .timeout = 300) { zoo_diff("bert_encoder"); }
