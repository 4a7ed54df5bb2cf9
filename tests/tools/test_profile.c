/* graft run MODEL.graft --profile / --profile-json through the CLI binary (GRAFT, else the
 * graft next to this test binary's directory, else build/graft): the text profile has one line
 * per reference op, host kernel and extern region, each with its frontend layers; the Chrome
 * trace parses and holds complete events ("ph": "X") whose args carry the layers. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tensor.h"
#include "ir/dtype.h"
#include "runtime/npy.h"

#include "tests/compare_util.h"
#include "tests/graft_cli.h"
#include "tests/models_env.h"
#include "tests/test_util.h"

static void setup(void) { cli_mkdtemp("profile"); }
TestSuite(profile, .init = setup, .fini = cli_rmdir);

/* conv (a reference kernel), {add, relu} and {sigmoid, multiply, softmax} (host kernels; the
 * softmax ends the second group): each op with layer names in its span. */
static const char *k_model =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 8, 1, 1), dtype=\"float32\")):\n"
    "        with R.dataflow():\n"
    "            lv = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            lv1 = R.add(lv, b)  # span: \"bn1\"\n"
    "            lv2 = R.nn.relu(lv1)  # span: \"relu1\"\n"
    "            lv3 = R.sigmoid(lv2)  # span: \"act2\"\n"
    "            lv4 = R.multiply(lv3, lv2)  # span: \"act2_mul\"\n"
    "            lv5 = R.nn.softmax(lv4, axis=-1)  # span: \"head_softmax\"\n"
    "            gv = (lv5, lv2)\n"
    "            R.output(gv)\n"
    "        return gv\n";

static void write_model(void) { cli_write("m.relax", k_model); }

/* The profile line (after the header) whose kind and region match; NULL when none. Columns:
 * ms/run (mean), median, %, kind, region, layers. */
static bool find_line(const char *text, const char *kind, const char *region_prefix, const char *layer,
                      double *ms) {
    const char *p = strstr(text, "profile (");
    if (!p) return false;
    for (p = strchr(p, '\n'); p && *p; p = strchr(p + 1, '\n')) {
        char k[32], r[512], l[2048] = "";
        double t, med, pct;
        if (sscanf(p + 1, " %lf %lf %lf%% %31s %511s %2047s", &t, &med, &pct, k, r, l) < 5) continue;
        cr_assert(med >= 0 && pct >= 0 && pct <= 100.05, "%.80s", p + 1);
        if (strcmp(k, kind) || strncmp(r, region_prefix, strlen(region_prefix))) continue;
        if (layer && !strstr(l, layer)) continue;
        if (ms) *ms = t;
        return true;
    }
    return false;
}

Test(profile, text_lines_name_regions_and_layers) {
    write_model();
    cr_assert_eq(cli_run_here("build m.relax -o m.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run m.graft --profile --repeat 2"), 0, "%s", cli_err());
    const char *err = cli_err();
    cr_assert(strstr(err, "profile (2 runs,"), "the warm-up run is not profiled:\n%s", err);
    double ms = -1;
    cr_assert(find_line(err, "op", "R.nn.conv2d", "conv1", &ms), "conv line with its layer:\n%s", err);
    cr_assert_geq(ms, 0);
    cr_assert(find_line(err, "host", "fused_add_relu", "bn1,relu1", NULL), "{add, relu} kernel:\n%s", err);
    cr_assert(find_line(err, "host", "fused_sigmoid_multiply_softmax", "act2,act2_mul,head_softmax", NULL),
              "{sigmoid, multiply, softmax}:\n%s", err);
    /* no bookkeeping rows (tuples) and nothing unnamed */
    cr_assert(!find_line(err, "other", "", NULL, NULL), "%s", err);
}

/* With a BYOC backend, the extern region's line carries its layers from the span table. */
Test(profile, extern_regions_carry_their_layers) {
    write_model();
    cr_assert_eq(cli_run_here("build m.relax --backend json -o m.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run m.graft --profile"), 0, "%s", cli_err());
    const char *err = cli_err();
    cr_assert(find_line(err, "extern", "", "conv1", NULL), "extern region with conv1:\n%s", err);
}

Test(profile, chrome_trace_has_complete_events_with_layers) {
    write_model();
    cr_assert_eq(cli_run_here("build m.relax -o m.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run m.graft --profile-json trace.json --repeat 2"), 0, "%s", cli_err());
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", cli_dir());
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    cr_assert_not_null(root, "trace.json does not parse: %s (line %d)", je.text, je.line);
    cr_assert(json_is_array(root));
    size_t n = json_array_size(root);
    /* the 2 runs of --repeat 2 (not the warm-up) of conv, {add, relu}, {sigmoid, multiply,
     * softmax} */
    cr_assert_eq(n, 2 * 3, "%zu events", n);
    bool conv = false, host = false, softmax = false;
    int runs_seen[3] = {0, 0, 0};
    double last_ts = -1;
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(root, i);
        cr_assert(json_is_object(ev));
        cr_assert_str_eq(json_string_value(json_object_get(ev, "ph")), "X", "event %zu", i);
        const char *name = json_string_value(json_object_get(ev, "name"));
        cr_assert_not_null(name);
        json_t *dur = json_object_get(ev, "dur"), *ts = json_object_get(ev, "ts");
        cr_assert(json_is_number(dur) && json_is_number(ts), "event %zu needs dur and ts", i);
        cr_assert_geq(json_number_value(dur), 0);
        cr_assert_geq(json_number_value(ts), last_ts, "events in time order");
        last_ts = json_number_value(ts);
        json_t *args = json_object_get(ev, "args");
        cr_assert(json_is_object(args));
        const char *layers = json_string_value(json_object_get(args, "layers"));
        const char *kind = json_string_value(json_object_get(args, "op_name"));
        cr_assert(layers && kind, "event %zu: args.layers and args.op_name", i);
        cr_assert_neq(layers[0], '\0', "event %zu (%s) has no layers", i, name);
        const char *run_s = json_string_value(json_object_get(args, "run"));
        cr_assert_not_null(run_s);
        int r = atoi(run_s);
        cr_assert(r >= 1 && r < 3, "run %d", r);
        runs_seen[r]++;
        conv |= strcmp(name, "R.nn.conv2d") == 0 && strstr(layers, "conv1") && strcmp(kind, "op") == 0;
        host |= strncmp(name, "fused_add_relu", 14) == 0 && strstr(layers, "bn1") && strstr(layers, "relu1") &&
                strcmp(kind, "host") == 0;
        softmax |= strstr(name, "_softmax_") && strstr(layers, "head_softmax") && strcmp(kind, "host") == 0;
    }
    cr_assert(conv && host && softmax, "conv %d, host %d, softmax %d", conv, host, softmax);
    for (int r = 1; r < 3; r++) cr_assert_eq(runs_seen[r], 3, "run %d: %d events", r, runs_seen[r]);
    json_decref(root);
}

Test(profile, bad_uses_are_clear_errors) {
    write_model();
    cr_assert_neq(cli_run_here("run m.relax --profile-json /nonexistent_dir/t.json"), 0);
    cr_assert(strstr(cli_err(), "/nonexistent_dir/t.json"), "%s", cli_err());
    cr_assert_neq(cli_run_here("run m.relax --profile-json"), 0);
    cr_assert_eq(cli_run_here("build m.relax -o m.graft"), 0, "%s", cli_err());
    cr_assert_neq(cli_run_here("run m.graft --profile-json /nonexistent_dir/t.json"), 0);
    cr_assert(strstr(cli_err(), "/nonexistent_dir/t.json"), "%s", cli_err());
    cr_assert_neq(cli_run_here("run m.graft --profile-json"), 0);
}

/* graft run MODEL --backend dnnl --profile: under its region's line, each oneDNN primitive with
 * its kind, implementation (never ref here) and the frontend layers it computes; the trace has a
 * "Primitive" event for each, and the region keeps its own event. Works on the model directly
 * and on a built artifact. */
static void check_prim_lines(const char *err) {
    static const char *const layers[] = {"conv1", "bn1", "relu1", "act2", "act2_mul", "head_softmax"};
    int nprim = 0;
    bool conv = false;
    for (const char *p = strstr(err, "profile ("); p && *p; p = strchr(p + 1, '\n')) {
        char idx[32], kind[64], impl[64], lay[1024] = "";
        double t, med, pct;
        if (sscanf(p + 1, " %lf %lf %lf%% prim %31s %63s %63s %1023s", &t, &med, &pct, idx, kind, impl, lay) < 6) continue;
        nprim++;
        cr_assert_eq(idx[0], '#', "%.120s", p + 1);
        cr_assert(strchr(impl, ':'), "implementation name like jit:avx2: %.120s", p + 1);
        cr_assert(strncmp(impl, "ref", 3), "on ref: %.120s", p + 1);
        cr_assert_neq(lay[0], '\0', "primitive without layers: %.120s", p + 1);
        /* every layer is one of the model's */
        char *save = NULL;
        for (char *l = strtok_r(lay, ",", &save); l; l = strtok_r(NULL, ",", &save)) {
            bool known = false;
            for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++) known |= !strcmp(l, layers[k]);
            cr_assert(known, "layer '%s' is not a layer of the model: %.120s", l, p + 1);
        }
        conv |= !strcmp(kind, "convolution");
    }
    cr_assert_geq(nprim, 2, "primitive lines:\n%s", err);
    cr_assert(conv, "a convolution primitive:\n%s", err);
    cr_assert(find_line(err, "extern", "", NULL, NULL), "the region keeps its own line:\n%s", err);
}

Test(profile, dnnl_primitives_with_impl_and_layers) {
    write_model();
    cr_assert_eq(cli_run_here("run m.relax --backend dnnl --profile --repeat 2 --profile-json trace.json"), 0, "%s", cli_err());
    check_prim_lines(cli_err());
    char path[256];
    snprintf(path, sizeof path, "%s/trace.json", cli_dir());
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    cr_assert_not_null(root, "trace.json does not parse: %s (line %d)", je.text, je.line);
    size_t i;
    json_t *ev;
    int prims = 0, regions = 0;
    json_array_foreach(root, i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        json_t *args = json_object_get(ev, "args");
        if (cat && !strcmp(cat, "Primitive")) {
            prims++;
            cr_assert(json_string_value(json_object_get(args, "impl")) && json_string_value(json_object_get(args, "region")) &&
                          json_string_length(json_object_get(args, "layers")) > 0,
                      "event %zu", i);
        } else {
            regions += !strcmp(json_string_value(json_object_get(args, "op_name")), "extern");
        }
    }
    cr_assert_gt(prims, 0);
    cr_assert_eq(regions, 2, "one region event per profiled run");
    json_decref(root);
    cr_assert_eq(cli_run_here("build m.relax --backend dnnl -o m.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run m.graft --profile"), 0, "%s", cli_err());
    check_prim_lines(cli_err());
}

/* A model with a symbolic batch: built once, run at two sizes. The first run at each new size
 * shows its first-run costs on rows of their own: the memory plan of the host path ("plan") and
 * the oneDNN region's primitives created for the new shapes ("prep"). */
static const char *k_sym_model =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((\"n\", 3, 16, 16), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\")):\n"
    "        n = T.int64()\n"
    "        with R.dataflow():\n"
    "            lv = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
    "            lv1 = R.nn.relu(lv)  # span: \"relu1\"\n"
    "            gv = R.sum(lv1, axis=[1])  # span: \"head_sum\"\n"
    "            R.output(gv)\n"
    "        return gv\n";

static void write_sym_inputs(void) {
    char path[256];
    cli_write("m.relax", k_sym_model);
    static const int64_t ns[2] = {1, 3};
    for (int i = 0; i < 2; i++) {
        rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 4, (int64_t[]){ns[i], 3, 16, 16});
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) rt_tensor_set_f64(t, k, (double)(k % 7) - 3.0);
        rt_tensor *w = rt_tensor_new(IR_DTYPE_F32, 4, (int64_t[]){8, 3, 3, 3});
        for (int64_t k = 0; k < rt_tensor_numel(w); k++) rt_tensor_set_f64(w, k, (double)(k % 5) * 0.1 - 0.2);
        gr_diag d = {0};
        snprintf(path, sizeof path, "%s/x%d.npy", cli_dir(), i);
        cr_assert_eq(rt_npy_save(path, t, &d), GR_OK, "%s", d.msg);
        snprintf(path, sizeof path, "%s/w.npy", cli_dir());
        cr_assert_eq(rt_npy_save(path, w, &d), GR_OK, "%s", d.msg);
        rt_tensor_release(t);
        rt_tensor_release(w);
    }
}

Test(profile, first_run_costs_at_new_shapes) {
    write_sym_inputs();
    cr_assert_eq(cli_run_here("build m.relax -o m.graft"), 0, "%s", cli_err());
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "run m.graft --input x=x%d.npy --input w=w.npy --profile", i);
        cr_assert_eq(cli_run_here("%s", args), 0, "%s", cli_err());
        cr_assert(find_line(cli_err(), "plan", "memory", NULL, NULL), "memory plan row:\n%s", cli_err());
    }
    cr_assert_eq(cli_run_here("build m.relax --backend dnnl -o d.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run d.graft --input x=x1.npy --input w=w.npy --profile"), 0, "%s", cli_err());
    const char *err = cli_err();
    cr_assert(find_line(err, "prep", "", NULL, NULL), "region prepare row:\n%s", err);
    cr_assert(find_line(err, "extern", "", NULL, NULL), "the region's run keeps its row:\n%s", err);
    /* warm runs at one size: no first-run rows */
    cr_assert_eq(cli_run_here("run d.graft --input x=x1.npy --input w=w.npy --profile --repeat 2"), 0, "%s", cli_err());
    cr_assert(!find_line(cli_err(), "prep", "", NULL, NULL), "prepare on a warm run:\n%s", cli_err());
}

/* A symbolic artifact runs on random inputs of the shape --input-shape gives; a shape that
 * breaks the signature is an error naming the input and the dim. */
Test(profile, artifact_random_input_of_a_given_shape) {
    write_sym_inputs();
    cr_assert_eq(cli_run_here("build m.relax --backend dnnl -o d.graft"), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run d.graft --input w=w.npy"), 1);
    cr_assert(strstr(cli_err(), "--input-shape x=DIMS"), "%s", cli_err());
    cr_assert_eq(cli_run_here("run d.graft --input w=w.npy --input-shape x=5x3x16x16 --output-dir o"), 0, "%s", cli_err());
    char path[256];
    snprintf(path, sizeof path, "%s/o/output_0.npy", cli_dir());
    rt_tensor *t = NULL;
    gr_diag d = {0};
    cr_assert_eq(rt_npy_load(path, &t, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(t->dl.ndim, 3);
    cr_assert_eq(t->shape[0], 5);
    rt_tensor_release(t);
    cr_assert_eq(cli_run_here("run d.graft --input w=w.npy --input-shape x=5x4x16x16"), 1);
    cr_assert(strstr(cli_err(), "input 'x': dim 1 is 4, expected 3"), "%s", cli_err());
}

/* The load phases of an artifact, and the same artifact on another ISA: built here (AVX-512
 * where the host has it), its prepacked weights used in place here; run again with oneDNN
 * limited to AVX2, the weights are laid out again (said on stderr) when the build's ISA was
 * another, those stored only prepacked reordered back to plain first, and the outputs agree within float32 rounding of a different summation order
 * (|a - b| <= 1e-5 + 1e-4 |b|). */
static rt_tensor *load_out(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s/output_0.npy", cli_dir(), dir);
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_npy_load(path, &t, &d), GR_OK, "%s", d.msg);
    return t;
}

Test(profile, artifact_load_phases_and_another_isa, .timeout = 120) {
    char *cls = model_path("GRAFT_MODEL_CLS");
    if (!cls) cr_skip("GRAFT_MODEL_CLS: no model (run scripts/fetch_models.sh)");
    char args[4096];
    snprintf(args, sizeof args, "build '%s' --input-shape x=1x3x48x192 --backend dnnl -o c.graft", cls);
    free(cls);
    setenv("ONEDNN_MAX_CPU_ISA", "ALL", 1); /* as built by default, whatever this test runs under */
    cr_assert_eq(cli_run_here("%s", args), 0, "%s", cli_err());
    cr_assert_eq(cli_run_here("run c.graft --input x=random --output-dir native --profile"), 0, "%s", cli_err());
    const char *err = cli_err();
    static const char *const phases[] = {"map ", "verify ", "decode ", "modules ", "link ", "prepare ", "first run "};
    cr_assert(strstr(err, "load c.graft ("), "%s", err);
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) cr_assert(strstr(err, phases[i]), "no %s:\n%s", phases[i], err);
    unsigned used = 0, again = 99;
    const char *pk = strstr(err, "prepacked weights: ");
    cr_assert(pk && sscanf(pk, "prepacked weights: %u used in place, %u laid out again", &used, &again) == 2, "%s", err);
    cr_assert(used > 0 && again == 0, "built here, every prepacked weight is used in place:\n%s", err);
    cr_assert(!strstr(err, "note: "), "%s", err);
    bool wider = strstr(err, "avx512") != NULL; /* the build ran on more than AVX2 */
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
    int rc = cli_run_here("run c.graft --input x=random --output-dir avx2 --profile");
    unsetenv("ONEDNN_MAX_CPU_ISA");
    err = cli_err();
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(!strstr(err, "avx512"), "oneDNN was limited to AVX2:\n%s", err);
    pk = strstr(err, "prepacked weights: ");
    unsigned unpacked = 0;
    cr_assert(pk && sscanf(pk, "prepacked weights: %u used in place, %u laid out again (%u from their prepacked form)",
                           &used, &again, &unpacked) == 3, "%s", err);
    if (wider) {
        cr_assert(used == 0 && again > 0, "made for AVX-512, laid out again for AVX2:\n%s", err);
        /* the weights stored only in their AVX-512 layout were reordered back to plain first */
        cr_assert(unpacked > 0 && unpacked <= again, "no weight laid out from its prepacked form:\n%s", err);
        cr_assert(strstr(err, "note: c.graft: ") && strstr(err, "weights laid out again at load"), "%s", err);
    } else {
        cr_assert(again == 0, "built on AVX2, used in place:\n%s", err);
    }
    rt_tensor *a = load_out("avx2"), *b = load_out("native");
    tc_expect_tensor(a, b, (gr_cmp_opts){.atol = 1e-5, .rtol = 1e-4}, "AVX2 run of the artifact built here");
    rt_tensor_release(a);
    rt_tensor_release(b);
}
