/* The xnnpack backend plugin (plugins/xnnpack, build/plugins/libgraft_xnnpack.so) on real
 * models against ONNX Runtime's outputs (build/third_party: PP-OCR cls/rec, zoo CNNs), through
 * the public API; mixed with dnnl by priority; in artifacts. Tolerances as tests/models:
 * atol 1e-4 + rtol 1e-3 (XNNPACK's kernels sum in another order than ORT's). */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "include/graft/graft.h"
#include "runtime/npy.h"
#include "tests/compare_util.h"
#include "tests/graft_cli.h"
#include "tests/models_env.h"

#define XNN_ATOL 1e-4
#define XNN_RTOL 1e-3

static const char *xnnpack_plugin(void) {
    static char path[PATH_MAX];
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", graft());
    snprintf(path, sizeof path, "%s/plugins/libgraft_xnnpack.so", dirname(dir));
    struct stat st;
    if (stat(path, &st) != 0) cr_skip("%s is not built (make plugins; Debian libxnnpack-dev)", path);
    return path;
}

/* A model of the cache and its reference folder: "cls" / "rec" (models.env) or a zoo name. */
typedef struct model_ref {
    char model[PATH_MAX], refs[PATH_MAX];
} model_ref;

static model_ref find_model(const char *name) {
    model_ref m;
    char key[64];
    snprintf(key, sizeof key, "GRAFT_MODEL_%s", name);
    for (char *p = key; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    char *ppocr = model_path(key), *refs = model_path("GRAFT_REFS");
    if (ppocr) {
        snprintf(m.model, sizeof m.model, "%s", ppocr);
        snprintf(m.refs, sizeof m.refs, "%s/%s", refs ? refs : "build/third_party/refs", name);
    } else {
        snprintf(m.model, sizeof m.model, "build/third_party/zoo/%s.onnx", name);
        snprintf(m.refs, sizeof m.refs, "build/third_party/zoo/refs/%s", name);
    }
    free(ppocr);
    free(refs);
    struct stat st;
    char out[PATH_MAX + 32];
    snprintf(out, sizeof out, "%s/output_0.npy", m.refs);
    if (stat(m.model, &st) != 0 || stat(out, &st) != 0)
        cr_skip("%s: model or ORT reference absent (%s, %s): make models", name, m.model, out);
    return m;
}

static rt_tensor *npy(const char *dir, const char *file) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_npy_load(path, &t, &d), GR_OK, "%s", d.msg);
    return t;
}

/* The session of a model for backends in priority order; patterns (NULL: none), a pattern file
 * ahead of the backends' (graft_irmodule_partition). */
static graft_session *load_session(const char *model, const char *const *backends, uint32_t nb, const char *patterns) {
    graft_error *err = NULL;
    cr_assert_eq(graft_backend_load(xnnpack_plugin(), &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_session_options *o = graft_session_options_new();
    for (uint32_t i = 0; i < nb; i++)
        cr_assert_eq(graft_session_options_add_backend(o, backends[i], &err), GRAFT_OK, "%s", graft_error_message(err));
    cr_assert_eq(graft_session_options_set_threads(o, 2, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_session *s = NULL;
    if (!patterns) {
        cr_assert_eq(graft_session_load(model, o, &s, &err), GRAFT_OK, "%s: %s", model, graft_error_message(err));
    } else {
        graft_irmodule *m = NULL, *opt = NULL, *part = NULL;
        cr_assert_eq(graft_irmodule_load(model, NULL, o, &m, &err), GRAFT_OK, "%s", graft_error_message(err));
        cr_assert_eq(graft_irmodule_optimize(m, NULL, -1, &opt, &err), GRAFT_OK, "%s", graft_error_message(err));
        cr_assert_eq(graft_irmodule_partition(opt, o, patterns, &part, NULL, &err), GRAFT_OK, "%s",
                     graft_error_message(err));
        cr_assert_eq(graft_session_from_irmodule(part, o, &s, &err), GRAFT_OK, "%s", graft_error_message(err));
        graft_irmodule_free(part);
        graft_irmodule_free(opt);
        graft_irmodule_free(m);
    }
    graft_session_options_free(o);
    return s;
}

static bool region_of(graft_session *s, uint32_t r, const char *backend) {
    const char *rn = graft_session_region_name(s, r);
    size_t len = strlen(rn), bl = strlen(backend);
    return len > bl + 1 && rn[len - bl - 1] == '_' && strcmp(rn + len - bl, backend) == 0;
}

/* Runs the model on the backends (in priority order; patterns: as load_session) with its
 * reference input and checks the output against ORT's; every backend listed must get a region. */
static void check_model_with(const char *name, const char *const *backends, uint32_t nb, const char *patterns) {
    model_ref m = find_model(name);
    graft_error *err = NULL;
    graft_session *s = load_session(m.model, backends, nb, patterns);
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t got = 0;
        for (uint32_t r = 0; r < graft_session_num_regions(s); r++) got += region_of(s, r, backends[b]);
        cr_expect_gt(got, 0, "%s: no region went to %s", name, backends[b]);
    }
    rt_tensor *in = npy(m.refs, "input_0.npy"), *want = npy(m.refs, "output_0.npy");
    graft_tensor *gin = (graft_tensor *)in, *out = NULL;
    cr_assert_eq(graft_session_run(s, &gin, 1, &out, 1, &err), GRAFT_OK, "%s: %s", name, graft_error_message(err));
    tc_expect_tensor((const rt_tensor *)out, want, (gr_cmp_opts){.atol = XNN_ATOL, .rtol = XNN_RTOL},
                     "%s on %s%s against ONNX Runtime", name, backends[0], nb > 1 ? " and others" : "");
    graft_tensor_release(out);
    rt_tensor_release(in);
    rt_tensor_release(want);
    graft_session_free(s);
}

static void check_model(const char *name, const char *const *backends, uint32_t nb) {
    check_model_with(name, backends, nb, NULL);
}

static const char *const XNN[] = {"xnnpack"};
Test(xnnpack, ppocr_cls_matches_ort) { check_model("cls", XNN, 1); }
Test(xnnpack, ppocr_rec_matches_ort) { check_model("rec", XNN, 1); }
Test(xnnpack, resnet18_matches_ort) { check_model("resnet18", XNN, 1); }
Test(xnnpack, mobilenet_v3_large_matches_ort) { check_model("mobilenet_v3_large", XNN, 1); }
Test(xnnpack, shufflenet_v2_matches_ort) { check_model("shufflenet_v2_x1_0", XNN, 1); }
Test(xnnpack, regnet_y_400mf_matches_ort) { check_model("regnet_y_400mf", XNN, 1); }
Test(xnnpack, googlenet_matches_ort) { check_model("googlenet", XNN, 1); }

/* xnnpack first: it takes the convolutions, dnnl what xnnpack's checks refuse (a reshape of a
 * 4-D value with spatial dims, a softmax over a non-innermost axis, transposes, means). */
static const char *const XNN_DNNL[] = {"xnnpack", "dnnl"};
Test(xnnpack, mixed_with_dnnl_matches_ort) { check_model("rec", XNN_DNNL, 2); }
Test(xnnpack, mixed_cnn_xnnpack_first_matches_ort) { check_model("shufflenet_v2_x1_0", XNN_DNNL, 2); }

/* dnnl listed first takes every op it can, unless a pattern file puts xnnpack's convolution
 * ahead (TVM's pattern priority over several BYOC targets; examples/plugin/
 * prefer_xnnpack_conv.relax): then xnnpack gets the convolutions and dnnl the rest, regions
 * alternating. */
static const char *const DNNL_XNN[] = {"dnnl", "xnnpack"};
Test(xnnpack, mixed_cnn_by_pattern_priority_matches_ort) {
    check_model_with("mobilenet_v3_large", DNNL_XNN, 2, "examples/plugin/prefer_xnnpack_conv.relax");
}

static int sh(char *out, size_t cap, const char *cmd) {
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *f = popen(full, "r");
    cr_assert(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    while (fgetc(f) != EOF) {
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A line of out holding both a and b. */
static bool line_with(const char *out, const char *a, const char *b) {
    for (const char *p = strstr(out, a); p; p = strstr(p + 1, a)) {
        const char *start = p, *end = strchr(p, '\n');
        while (start > out && start[-1] != '\n') start--;
        const char *q = strstr(start, b);
        if (q && (!end || q < end)) return true;
    }
    return false;
}

/* The report of a partition over two backends names, for every op, the backend that took it
 * and why the other did not: its check's reason, or the other claimed it first by priority.
 * xnnpack first takes the convolutions of rec, dnnl what xnnpack's checks refuse; dnnl first
 * takes everything. */
Test(xnnpack, mixed_partition_report_says_who_took_what_and_why) {
    model_ref m = find_model("rec");
    static char out[1 << 21];
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s partition %s --backend-lib %s --backend xnnpack --backend dnnl --report text", graft(),
             m.model, xnnpack_plugin());
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    cr_expect(strstr(out, "_xnnpack [xnnpack]"), "no xnnpack region");
    cr_expect(strstr(out, "_dnnl [dnnl]"), "no dnnl region");
    cr_expect(strstr(out, "not fused: lv (layer p2o.Softmax.0): xnnpack.softmax: softmax over an axis that is not "
                          "innermost in NHWC"),
              "no reason for the softmax");
    cr_expect(strstr(out, "coverage: 432/432 ops offloaded"), "not everything offloaded");
    cr_expect(strstr(out, "ops by backend: 432"), "no per-op lines");
    cr_expect(line_with(out, "(layer p2o.Softmax.0): dnnl (dnnl.",
                        "; xnnpack: check rejected xnnpack.softmax: softmax over an axis that is not innermost"),
              "the softmax's line does not say why xnnpack refused it");
    cr_expect(line_with(out, "= relax.nn.conv2d (layer ", ": xnnpack (xnnpack.conv2d); dnnl: xnnpack claimed it first "
                                                        "(pattern xnnpack.conv2d, ahead of dnnl."),
              "no convolution line with xnnpack ahead of dnnl");
    snprintf(cmd, sizeof cmd, "%s partition %s --backend-lib %s --backend dnnl --backend xnnpack --report text", graft(),
             m.model, xnnpack_plugin());
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    cr_expect(strstr(out, "regions: 1\n") && strstr(out, "_dnnl [dnnl]") && !strstr(out, "[xnnpack]"),
              "dnnl first should take all of rec");
    cr_expect(line_with(out, "= relax.nn.conv2d (layer ", "; xnnpack: dnnl claimed it first (pattern dnnl."),
              "no convolution line saying dnnl claimed it first");
    cr_expect(line_with(out, "(layer p2o.Softmax.0): dnnl (dnnl.", "; xnnpack: check rejected xnnpack.softmax"),
              "with dnnl first the softmax's line still gives xnnpack's own reason");
}

/* An artifact with xnnpack regions runs with the plugin and fails clearly without it. */
Test(xnnpack, artifact_needs_the_plugin) {
    model_ref m = find_model("resnet18");
    char dir[] = "/tmp/graft_xnn_XXXXXX", cmd[6 * PATH_MAX];
    static char out[1 << 16];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "%s build %s --backend-lib %s --backend xnnpack -o %s/m.graft", graft(), m.model,
             xnnpack_plugin(), dir);
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "%s run %s/m.graft --input x=%s/input_0.npy", graft(), dir, m.refs);
    cr_expect_eq(sh(out, sizeof out, cmd), 1, "%s", out);
    cr_expect(strstr(out, "made by backend plugin 'xnnpack' version 0.1.0, which is not loaded"), "%s", out);
    snprintf(cmd, sizeof cmd,
             "%s run %s/m.graft --backend-lib %s --input x=%s/input_0.npy --output-dir %s/out && %s compare "
             "%s/out/output_0.npy %s/output_0.npy --atol %g --rtol %g",
             graft(), dir, xnnpack_plugin(), m.refs, dir, graft(), dir, m.refs, XNN_ATOL, XNN_RTOL);
    cr_expect_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* graft diff sees inside an xnnpack region: every layer's output read back from the plugin
 * (compiled to observe: every op's value external, no bias folding) and compared. */
Test(xnnpack, diff_sees_inside_regions) {
    model_ref m = find_model("resnet18");
    static char out[1 << 18];
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s diff %s --backend-lib %s --backend xnnpack --input x=%s/input_0.npy", graft(), m.model,
             xnnpack_plugin(), m.refs);
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    cr_expect(!strstr(out, "missing"), "a layer inside the region was not observed:\n%s", out);
    cr_expect(strstr(out, "/layer4/layer4.1/conv2/Conv        ok"), "%s", out);
    cr_expect(strstr(out, "every observable layer is within tolerance"), "%s", out);
}

/* ONNX's clip with min above max is max everywhere; XNNPACK's clamp cannot say it, so the check
 * leaves it to the host with the reason, and the model still runs like the host. */
Test(xnnpack, clip_with_min_above_max_stays_on_the_host) {
    static const char M[] = "@I.ir_module\nclass Module:\n    @R.function\n"
                            "    def main(x: R.Tensor((2, 3), dtype=\"float32\")):\n        with R.dataflow():\n"
                            "            a = R.clip(x, R.prim_value(T.float32(2.0)), R.prim_value(T.float32(1.0)))\n"
                            "            gv = R.sigmoid(a)\n            R.output(gv)\n        return gv\n";
    char dir[] = "/tmp/graft_xnn_XXXXXX", cmd[4 * PATH_MAX];
    static char out[1 << 16];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "%s/m.relax", dir);
    FILE *f = fopen(cmd, "w");
    cr_assert(f);
    fputs(M, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s partition %s/m.relax --backend-lib %s --backend xnnpack --report text", graft(), dir,
             xnnpack_plugin());
    cr_assert_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    cr_expect(strstr(out, "check rejected xnnpack.clip: clip with min not below max"), "%s", out);
    cr_expect(strstr(out, "relax.sigmoid                offloaded 1, host 0"), "%s", out);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s run m.relax --backend-lib %s --backend xnnpack --input x=random --output-dir x && %s run m.relax "
             "--input x=random --output-dir h && %s compare x/output_0.npy h/output_0.npy --atol 1e-6 --rtol 1e-6",
             dir, graft(), xnnpack_plugin(), graft(), graft());
    cr_expect_eq(sh(out, sizeof out, cmd), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
