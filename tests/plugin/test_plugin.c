/* Backend plugins (include/graft/backend_plugin.h, backends/plugin.c) through the public API
 * (include/graft/graft.h) and the CLI: the plain-C test plugin (tests/plugin/testplugin) in its
 * variants, loaded, refused, run, in artifacts; the public session API around it. The plugins
 * are built by `make plugins` (part of `make all`) next to the graft binary. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/plugin.h"
#include "byoc/byoc.h"
#include "deploy/artifact_impl.h"
#include "include/graft/graft.h"
#include "tests/compare_util.h"
#include "tests/graft_cli.h"

/* build/tests/plugins/<variant>/libgraft_testplugin.so beside the graft binary. */
static const char *test_plugin(const char *variant) {
    static char path[4][PATH_MAX];
    static int k;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", graft());
    char *p = path[k++ % 4];
    snprintf(p, PATH_MAX, "%s/tests/plugins/%s/libgraft_testplugin.so", dirname(dir), variant);
    struct stat st;
    if (stat(p, &st) != 0) cr_skip("%s is not built: make plugins", p);
    return p;
}

/* Runs a shell command line; returns its exit status and (when out) its stdout and stderr. */
static int sh(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t cap, const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);
    FILE *f = popen(cmd, "r");
    cr_assert(f, "cannot run %s", cmd);
    size_t n = 0;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        if (out && n + 1 < cap) {
            size_t take = got < cap - 1 - n ? got : cap - 1 - n;
            memcpy(out + n, buf, take);
            n += take;
        }
    if (out) out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char MODEL[] = "@I.ir_module\n"
                            "class Module:\n"
                            "    @R.function\n"
                            "    def main(x: R.Tensor((2, 3), dtype=\"float32\"), y: R.Tensor((2, 3), dtype=\"float32\")):\n"
                            "        with R.dataflow():\n"
                            "            a = R.add(x, y)\n"
                            "            b = R.nn.relu(a)\n"
                            "            c = R.multiply(b, x)\n"
                            "            d = R.add(c, R.const(1.5, \"float32\"))\n"
                            "            gv = R.nn.softmax(d, axis=-1)\n"
                            "            R.output(gv)\n"
                            "        return gv\n";

static void write_model(const char *path) {
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(MODEL, f);
    fclose(f);
}

static char g_dir[PATH_MAX];
static void in_tmpdir(void) {
    setenv("GRAFT", graft(), 1); /* absolute, before leaving the tree */
    snprintf(g_dir, sizeof g_dir, "/tmp/graft_plugin_XXXXXX");
    cr_assert(mkdtemp(g_dir));
    cr_assert(chdir(g_dir) == 0);
    write_model("m.relax");
}
static void rm_tmpdir(void) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
}

/* ---- the public API ---- */

Test(public_api, version_macros_match_the_library) {
    cr_expect_eq(graft_api_version() >> 16, (uint32_t)GRAFT_API_VERSION_MAJOR);
    cr_expect_eq(graft_api_version() & 0xffff, (uint32_t)GRAFT_API_VERSION_MINOR);
    cr_expect_str_eq(graft_dtype_name(GRAFT_FLOAT32), "float32");
    cr_expect_eq(graft_dtype_size(GRAFT_INT64), 8);
    cr_expect_null(graft_dtype_name(GRAFT_DTYPE_UNKNOWN));
}

Test(public_api, a_missing_model_is_an_error_naming_the_file) {
    graft_error *err = NULL;
    graft_session *s = NULL;
    cr_assert_neq(graft_session_load("/nonexistent/m.onnx", NULL, &s, &err), GRAFT_OK);
    cr_assert_null(s);
    cr_expect(strstr(graft_error_message(err), "/nonexistent/m.onnx"), "%s", graft_error_message(err));
    cr_expect_eq(graft_error_status(err), GRAFT_ERR_IO);
    graft_error_free(err);
    err = NULL;
    graft_session_options *o = graft_session_options_new();
    cr_expect_eq(graft_session_options_add_backend(o, "no_such_backend", &err), GRAFT_ERR_NOT_FOUND);
    cr_expect(strstr(graft_error_message(err), "no_such_backend"));
    graft_error_free(err);
    graft_session_options_free(o);
}

/* Runs MODEL with the given backends (NULL: host only) on fixed inputs; the result tensor. */
static graft_tensor *run_model(const char *backend, const char *option) {
    graft_error *err = NULL;
    graft_session_options *o = graft_session_options_new();
    if (backend) cr_assert_eq(graft_session_options_add_backend(o, backend, &err), GRAFT_OK, "%s", graft_error_message(err));
    if (option) cr_assert_eq(graft_session_options_set(o, option, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_session *s = NULL;
    cr_assert_eq(graft_session_load_buffer(MODEL, strlen(MODEL), "relax", o, &s, &err), GRAFT_OK, "%s",
                 graft_error_message(err));
    cr_assert_eq(graft_session_num_inputs(s), 2);
    cr_assert_str_eq(graft_session_input_name(s, 1), "y");
    cr_assert_eq(graft_session_input_dtype(s, 0), GRAFT_FLOAT32);
    cr_assert_eq(graft_session_input_ndim(s, 0), 2);
    cr_assert_eq(graft_session_input_dim(s, 0, 1), 3);
    int64_t shape[2] = {2, 3};
    graft_tensor *in[2] = {graft_tensor_new(GRAFT_FLOAT32, 2, shape), graft_tensor_new(GRAFT_FLOAT32, 2, shape)};
    for (int i = 0; i < 6; i++) {
        ((float *)graft_tensor_data(in[0]))[i] = (float)(i - 2) * 0.75f;
        ((float *)graft_tensor_data(in[1]))[i] = (float)(3 - i) * 0.5f;
    }
    graft_tensor *out = NULL;
    cr_assert_eq(graft_session_run(s, in, 2, &out, 1, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_tensor_release(in[0]);
    graft_tensor_release(in[1]);
    graft_session_free(s);
    graft_session_options_free(o);
    return out;
}

/* The IR module API: imported, printed, optimized, partitioned (its report), then built into a
 * session that computes what graft_session_load_buffer's does; derived modules outlive the
 * one they came from (the shared context is freed with the last). */
Test(public_api, an_irmodule_is_printed_partitioned_and_built) {
    graft_error *err = NULL;
    graft_irmodule *m = NULL, *opt = NULL, *part = NULL;
    cr_assert_eq(graft_irmodule_load_buffer(MODEL, strlen(MODEL), "relax", "m.relax", NULL, &m, &err), GRAFT_OK, "%s",
                 graft_error_message(err));
    char *text = graft_irmodule_text(m, 0, 1), *sig = graft_irmodule_signature_json(m);
    cr_expect(strstr(text, "R.nn.softmax") && strstr(text, "def main"), "%s", text);
    cr_expect(strstr(sig, "\"x\"") && strstr(sig, "float32"), "%s", sig);
    graft_string_free(text);
    graft_string_free(sig);
    cr_assert_eq(graft_irmodule_optimize(m, NULL, -1, &opt, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_session_options *o = graft_session_options_new();
    cr_assert_eq(graft_session_options_add_backend(o, "dnnl", &err), GRAFT_OK);
    char *report = NULL;
    cr_assert_eq(graft_irmodule_partition(opt, o, NULL, &part, &report, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_irmodule_free(m);
    graft_irmodule_free(opt);
    cr_expect(report && report[0] == '{' && strstr(report, "dnnl"), "%s", report ? report : "(null)");
    graft_string_free(report);
    text = graft_irmodule_text(part, 0, 0);
    cr_expect(strstr(text, "dnnl"), "the partitioned module calls no dnnl region:\n%s", text);
    graft_string_free(text);
    graft_session *s = NULL;
    cr_assert_eq(graft_session_from_irmodule(part, o, &s, &err), GRAFT_OK, "%s", graft_error_message(err));
    graft_irmodule_free(part);
    uint32_t externs = 0;
    for (uint32_t i = 0; i < graft_session_num_regions(s); i++)
        externs += strcmp(graft_session_region_kind(s, i), "extern") == 0;
    cr_expect_gt(externs, 0);
    int64_t shape[2] = {2, 3};
    graft_tensor *in[2] = {graft_tensor_new(GRAFT_FLOAT32, 2, shape), graft_tensor_new(GRAFT_FLOAT32, 2, shape)};
    for (int i = 0; i < 6; i++) {
        ((float *)graft_tensor_data(in[0]))[i] = (float)(i - 2) * 0.75f;
        ((float *)graft_tensor_data(in[1]))[i] = (float)(3 - i) * 0.5f;
    }
    graft_tensor *out = NULL, *host = run_model(NULL, NULL);
    cr_assert_eq(graft_session_run(s, in, 2, &out, 1, &err), GRAFT_OK, "%s", graft_error_message(err));
    tc_expect_tensor((const rt_tensor *)out, (const rt_tensor *)host, (gr_cmp_opts){.atol = 1e-5, .rtol = 1e-5},
                     "the partitioned irmodule against the host");
    graft_tensor_release(in[0]);
    graft_tensor_release(in[1]);
    graft_tensor_release(out);
    graft_tensor_release(host);
    graft_session_free(s);
    graft_session_options_free(o);
}

static void count_event(const graft_profile_event *e, void *user) {
    uint32_t *n = user;
    n[strcmp(e->kind, "prim") == 0]++;
    if (strcmp(e->kind, "prim") == 0) cr_expect(e->prim_kind && e->prim_impl, "a primitive of %s without kind", e->name);
}

static int perturb_first(const char *layer, graft_tensor *t, void *user) {
    (void)layer;
    ++*(uint32_t *)user;
    if (graft_tensor_dtype(t) != GRAFT_FLOAT32 || !graft_tensor_numel(t)) return 0;
    ((float *)graft_tensor_data(t))[0] += 100.0f;
    return 1;
}

/* MODEL's first ops with frontend layers (what graft diff compares layer by layer). */
static const char LAYERED[] = "@I.ir_module\n"
                              "class Module:\n"
                              "    @R.function\n"
                              "    def main(x: R.Tensor((2, 3), dtype=\"float32\"), y: R.Tensor((2, 3), dtype=\"float32\")):\n"
                              "        with R.dataflow():\n"
                              "            a = R.add(x, y)  # span: \"add1\"!\n"
                              "            b = R.nn.relu(a)  # span: \"relu1\"!\n"
                              "            gv = R.nn.softmax(b, axis=-1)  # span: \"softmax1\"!\n"
                              "            R.output(gv)\n"
                              "        return gv\n";

/* A session's event profiler (steps and oneDNN primitives), its JSON summaries, and graft diff
 * through the IR module API, where a perturbation of the backend path shows as a divergence. */
Test(public_api, a_session_profiles_primitives_and_an_irmodule_is_diffed) {
    graft_error *err = NULL;
    graft_irmodule *m = NULL;
    cr_assert_eq(graft_irmodule_load_buffer(LAYERED, strlen(LAYERED), "relax", NULL, NULL, &m, &err), GRAFT_OK, "%s",
                 graft_error_message(err));
    graft_session_options *o = graft_session_options_new();
    cr_assert_eq(graft_session_options_add_backend(o, "dnnl", &err), GRAFT_OK);
    graft_session *s = NULL;
    cr_assert_eq(graft_session_load_buffer(MODEL, strlen(MODEL), "relax", o, &s, &err), GRAFT_OK);
    char *sig = graft_session_signature_json(s), *info = graft_session_info_json(s);
    cr_expect(strstr(sig, "\"y\"") && strstr(sig, "float32"), "%s", sig);
    cr_expect(strstr(info, "\"external_modules\"") && strstr(info, "dnnl"), "%s", info);
    graft_string_free(sig);
    graft_string_free(info);
    uint32_t n[2] = {0, 0};
    graft_session_set_event_profiler(s, count_event, 1, n);
    int64_t shape[2] = {2, 3};
    graft_tensor *in[2] = {graft_tensor_new(GRAFT_FLOAT32, 2, shape), graft_tensor_new(GRAFT_FLOAT32, 2, shape)};
    for (int i = 0; i < 6; i++) {
        ((float *)graft_tensor_data(in[0]))[i] = (float)(i - 2) * 0.75f;
        ((float *)graft_tensor_data(in[1]))[i] = (float)(3 - i) * 0.5f;
    }
    graft_tensor *out = NULL;
    cr_assert_eq(graft_session_run(s, in, 2, &out, 1, &err), GRAFT_OK, "%s", graft_error_message(err));
    cr_expect_gt(n[0], 0, "no step reported");
    cr_expect_gt(n[1], 0, "no oneDNN primitive reported");
    cr_expect_not(graft_tensor_is_shared(out));
    graft_tensor_release(out);
    graft_session_free(s);

    char *diff = NULL, *doc = NULL;
    cr_assert_eq(graft_irmodule_inspect(m, o, GRAFT_INSPECT_DIFF, NULL, 1e-5, 1e-5, 0, in, 2, NULL, NULL, &diff, &doc,
                                        &err),
                 GRAFT_OK, "%s", graft_error_message(err));
    cr_expect(diff && strstr(diff, "\"first_divergence\":null"), "%s", diff ? diff : "(null)");
    cr_expect(doc && doc[0] == '{');
    graft_string_free(diff);
    graft_string_free(doc);
    uint32_t seen = 0;
    cr_assert_eq(graft_irmodule_inspect(m, o, GRAFT_INSPECT_DIFF, NULL, 1e-5, 1e-5, 0, in, 2, perturb_first, &seen, &diff,
                                        NULL, &err),
                 GRAFT_OK, "%s", graft_error_message(err));
    cr_expect_gt(seen, 0);
    cr_expect(diff && !strstr(diff, "\"first_divergence\":null"), "%s", diff ? diff : "(null)");
    graft_string_free(diff);
    graft_tensor_release(in[0]);
    graft_tensor_release(in[1]);
    graft_irmodule_free(m);
    graft_session_options_free(o);
}

Test(public_api, a_bad_irmodule_is_an_error_naming_the_file) {
    graft_error *err = NULL;
    graft_irmodule *m = NULL;
    const char bad[] = "@I.ir_module\nclass Module:\n    @R.function\n    def main(x: R.Tensor((2,), \"float32\")):\n"
                       "        return R.no_such_op(x)\n";
    cr_assert_neq(graft_irmodule_load_buffer(bad, strlen(bad), "relax", "bad.relax", NULL, &m, &err), GRAFT_OK);
    cr_assert_null(m);
    cr_expect(strstr(graft_error_message(err), "bad.relax"), "%s", graft_error_message(err));
    cr_expect_eq(graft_error_line(err), 5, "%s: line %d", graft_error_message(err), graft_error_line(err));
    graft_error_free(err);
    err = NULL;
    cr_expect_null(graft_onnx_io_names_json("/nonexistent/m.onnx", &err));
    cr_expect(strstr(graft_error_message(err), "/nonexistent/m.onnx"), "%s", graft_error_message(err));
    graft_error_free(err);
    err = NULL;
    cr_expect_eq(graft_irmodule_load("/nonexistent/m.onnx", NULL, NULL, &m, &err), GRAFT_ERR_IO);
    cr_expect(strstr(graft_error_message(err), "/nonexistent/m.onnx"), "%s", graft_error_message(err));
    graft_error_free(err);
}

Test(plugin, loads_lists_and_runs_like_the_host) {
    graft_error *err = NULL;
    cr_assert_eq(graft_backend_load(test_plugin("base"), &err), GRAFT_OK, "%s", graft_error_message(err));
    /* loading it again keeps the one registered */
    cr_assert_eq(graft_backend_load(test_plugin("base"), &err), GRAFT_OK);
    uint32_t found = 0;
    for (uint32_t i = 0; i < graft_backend_count(); i++) {
        if (strcmp(graft_backend_name(i), "testplugin") == 0) {
            found++;
            cr_expect_str_eq(graft_backend_version(i), "1.2.0");
            cr_expect(strstr(graft_backend_path(i), "libgraft_testplugin.so"));
        } else {
            cr_expect_null(graft_backend_path(i), "%s is built in", graft_backend_name(i));
        }
    }
    cr_assert_eq(found, 1);
    graft_tensor *host = run_model(NULL, NULL), *plug = run_model("testplugin", NULL);
    tc_expect_tensor((const rt_tensor *)plug, (const rt_tensor *)host, (gr_cmp_opts){.atol = 1e-6, .rtol = 1e-6},
                     "testplugin against the host");
    graft_tensor_release(host);
    graft_tensor_release(plug);
}

/* The plugin's option reaches its codegen: scale=0 zeroes relu, so d = 1.5 everywhere and the
 * softmax is uniform. */
Test(plugin, options_reach_the_plugin) {
    cr_assert_eq(graft_backend_load(test_plugin("base"), NULL), GRAFT_OK);
    graft_tensor *out = run_model("testplugin", "testplugin.scale=0");
    const float *y = graft_tensor_data(out);
    for (int i = 0; i < 6; i++) cr_expect_float_eq(y[i], 1.0f / 3.0f, 1e-6, "value %d: %g", i, y[i]);
    graft_tensor_release(out);
}

Test(plugin, another_abi_major_is_refused) {
    gr_diag d;
    gr_diag_clear(&d);
    const char *p = test_plugin("abi2");
    cr_assert_eq(byoc_plugin_load(p, NULL, &d), GR_ERR_UNSUPPORTED);
    cr_expect(strstr(d.msg, p) && strstr(d.msg, "ABI 2.") && strstr(d.msg, "another major version"), "%s", d.msg);
    cr_expect_null(byoc_backend_find("testplugin"));
}

Test(plugin, not_a_plugin_is_an_error_naming_the_file) {
    gr_diag d;
    gr_diag_clear(&d);
    cr_expect_eq(byoc_plugin_load("/nonexistent/libgraft_x.so", NULL, &d), GR_ERR_IO);
    cr_expect(strstr(d.msg, "/nonexistent/libgraft_x.so"), "%s", d.msg);
    /* a shared library without the entry point */
    gr_diag_clear(&d);
    cr_expect_eq(byoc_plugin_load("libm.so.6", NULL, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "no graft_backend_plugin()"), "%s", d.msg);
}

/* A plugin of ABI 1.0 ends its struct before pattern_file: it loads, and graft reads only its
 * pattern text (relu, add), not the pattern file beside it (multiply). */
Test(plugin, an_older_abi_minor_loads, .init = in_tmpdir, .fini = rm_tmpdir) {
    char out[16384];
    int rc = sh(out, sizeof out, "%s partition m.relax --backend-lib %s --backend testplugin --report text", graft(),
                test_plugin("abi10"));
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "relax.multiply               offloaded 0, host 1"), "%s", out);
    cr_expect(strstr(out, "relax.nn.relu                offloaded 1, host 0"), "%s", out);
    rc = sh(out, sizeof out, "%s partition m.relax --backend-lib %s --backend testplugin --report text", graft(),
            test_plugin("base"));
    cr_expect(strstr(out, "relax.multiply               offloaded 1, host 0"), "%s", out);
    /* and the check's reason shows for the broadcast add */
    cr_expect(strstr(out, "check rejected testplugin.add: operands of different rank (no broadcast)"), "%s", out);
}

Test(plugin, graft_backends_lists_the_plugin_with_its_version, .init = in_tmpdir, .fini = rm_tmpdir) {
    char out[65536], dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", test_plugin("base"));
    int rc = sh(out, sizeof out, "GRAFT_BACKEND_PATH=/nonexistent:%s %s backends > all.txt && sed -n '/^testplugin/,$p' all.txt",
                dirname(dir), graft());
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "testplugin: test plugin") && strstr(out, "plugin: version 1.2.0"), "%s", out);
    cr_expect(strstr(out, "testplugin.scale (int, default 1)"), "%s", out);
    rc = sh(out, sizeof out, "%s backends --backend-lib %s", graft(), test_plugin("abi2"));
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "another major version"), "%s", out);
}

/* An artifact names the plugin and its version for each region: it runs where the plugin is
 * loaded (--backend-lib or GRAFT_BACKEND_PATH) and fails clearly where it is not, or where
 * another major version of it is. */
Test(plugin, artifacts_record_the_plugin_and_its_version, .init = in_tmpdir, .fini = rm_tmpdir) {
    char out[16384];
    const char *base = test_plugin("base"), *next = test_plugin("next");
    cr_assert_eq(sh(out, sizeof out, "%s build m.relax --backend testplugin --backend-lib %s -o m.graft", graft(), base),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s run m.relax --input x=random --input y=random --output-dir host", graft()), 0,
                 "%s", out);
    int rc = sh(out, sizeof out, "%s run m.graft --input x=random --input y=random", graft());
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "made by backend plugin 'testplugin' version 1.2.0, which is not loaded"), "%s", out);
    rc = sh(out, sizeof out, "%s run m.graft --backend-lib %s --input x=random --input y=random", graft(), next);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "made by backend plugin testplugin 1.2.0") && strstr(out, "is version 2.0.0, another major"),
              "%s", out);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", base);
    rc = sh(out, sizeof out, "GRAFT_BACKEND_PATH=%s %s run m.graft --input x=random --input y=random --output-dir art",
            dirname(dir), graft());
    cr_assert_eq(rc, 0, "%s", out);
    rc = sh(out, sizeof out, "%s compare art/output_0.npy host/output_0.npy --atol 1e-6 --rtol 1e-6", graft());
    cr_expect_eq(rc, 0, "%s", out);
}

/* Patches the artifact m.graft into `to`: at the first plugin envelope ("GRPLUGIN"), adds
 * `delta` to the byte at `at` bytes from its start, then reseals the file's checksum (so that
 * the artifact's own check passes and the envelope's must catch it). */
static void patch_envelope(const char *to, size_t at, int delta) {
    FILE *f = fopen("m.graft", "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len);
    cr_assert_eq(fread(buf, 1, len, f), len);
    fclose(f);
    uint8_t *env = memmem(buf, len, "GRPLUGIN", 8);
    cr_assert(env, "no plugin envelope in the artifact");
    cr_assert_lt((size_t)(env - buf) + at, len);
    env[at] = (uint8_t)(env[at] + delta);
    gr_art_reseal(buf, len);
    f = fopen(to, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
}

/* ABI 1.2: the plugin's own form of each region (serialize) is stored in the artifact and
 * loaded (deserialize) instead of compiling; a plugin of ABI 1.1 (no hooks) compiles the same
 * artifact, and makes artifacts that the 1.2 one compiles; an envelope cut short or altered is
 * refused naming the region and the plugin. */
Test(plugin, artifacts_store_the_plugins_own_form, .init = in_tmpdir, .fini = rm_tmpdir) {
    char out[16384];
    const char *base = test_plugin("base"), *abi11 = test_plugin("abi11");
    cr_assert_eq(sh(out, sizeof out, "%s build m.relax --backend testplugin --backend-lib %s -o m.graft", graft(), base),
                 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s run m.relax --input x=random --input y=random --output-dir host", graft()), 0,
                 "%s", out);
    int rc = sh(out, sizeof out, "%s run m.graft --backend-lib %s --input x=random --input y=random --output-dir art "
                "--profile", graft(), base);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "prepacked weights: 1 used in place, 0 laid out again"), "the stored form was not used:\n%s",
              out);
    cr_expect_eq(sh(out, sizeof out, "%s compare art/output_0.npy host/output_0.npy --atol 1e-6 --rtol 1e-6", graft()), 0,
                 "%s", out);
    rc = sh(out, sizeof out, "%s run m.graft --backend-lib %s --input x=random --input y=random --output-dir old "
            "--profile", graft(), abi11);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "prepacked weights: 0 used in place"), "an ABI 1.1 plugin cannot use it:\n%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s compare old/output_0.npy host/output_0.npy --atol 1e-6 --rtol 1e-6", graft()), 0,
                 "%s", out);
    /* made by the ABI 1.1 plugin (no stored form), loaded by the 1.2 one: compiled */
    cr_assert_eq(sh(out, sizeof out, "%s build m.relax --backend testplugin --backend-lib %s -o old.graft", graft(), abi11),
                 0, "%s", out);
    rc = sh(out, sizeof out, "%s run old.graft --backend-lib %s --input x=random --input y=random --output-dir new "
            "--profile", graft(), base);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(!strstr(out, "prepacked weights"), "an ABI 1.1 plugin stored a form:\n%s", out);
    cr_expect_eq(sh(out, sizeof out, "%s compare new/output_0.npy host/output_0.npy --atol 1e-6 --rtol 1e-6", graft()), 0,
                 "%s", out);
    /* a payload byte changed: the checksum; the length raised: truncated */
    patch_envelope("altered.graft", 128 + 9, 1);
    rc = sh(out, sizeof out, "%s run altered.graft --backend-lib %s --input x=random --input y=random", graft(), base);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "the testplugin plugin's stored form (made by testplugin 1.2.0) fails its checksum"), "%s", out);
    cr_expect(strstr(out, "artifact region "), "%s", out);
    patch_envelope("cut.graft", 16, 4);
    rc = sh(out, sizeof out, "%s run cut.graft --backend-lib %s --input x=random --input y=random", graft(), base);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "stored form (made by testplugin 1.2.0) is truncated"), "%s", out);
}
