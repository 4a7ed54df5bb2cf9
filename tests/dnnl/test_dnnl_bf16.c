/* dnnl.precision=bf16 (rt_dnnl_opts bf16, backends/dnnl/dnnl.h "bf16"): convolutions and
 * matmuls with constant weights in bfloat16 where oneDNN's ISA has it, float32 elsewhere.
 *
 * Tolerance against float32: bfloat16 keeps 8 significant bits, so each source and weight
 * value is rounded by at most 2^-9 of itself; a dot product of random-signed terms then moves
 * by about 2^-8 of the output's magnitude (f32 accumulation adds nothing comparable), and a
 * result kept in bfloat16 for the next layer by 2^-9 more. Each graph here chains 2-3 such
 * layers: |bf16 - f32| <= BF16_ATOL_OF_MAX * max|f32| per element, 2^-6 (4 x 2^-8). The zoo
 * models (20-50 layers deep, errors adding up as a random walk: sqrt(L) x 2^-8 <= 2.8e-2) get
 * ZOO_BF16_ATOL_OF_MAX = 2^-5 of the output's magnitude, against ONNX Runtime's float32.
 *
 * Native (a CPU with AVX512_BF16 or AMX): every convolution / matmul is a bf16 primitive
 * ("/bf16" after its implementation), results differ from float32 (so bf16 really ran), and
 * no reorder sits between two consecutive bf16 layers. Under ONEDNN_MAX_CPU_ISA=AVX2 (or on a
 * CPU without bf16): the same graphs run float32 (within the float32 suites' tolerance, no
 * "/bf16" primitive), the stats say so, and the CLI warns once. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "tests/cached_model.h"
#include "tests/dnnl/dnnl_test_util.h"
#include "tests/graft_cli.h"

#define BF16_ATOL_OF_MAX 0x1p-6
#define ZOO_BF16_ATOL_OF_MAX 0x1p-5

#define CONV_ATTRS(p) \
    "{\"strides\":[1, 1],\"padding\":[" p "],\"dilation\":[1, 1],\"groups\":1" \
    ",\"data_layout\":\"NCHW\",\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}"

/* conv 3x3 + bias + relu -> conv 3x3 + bias + relu -> conv 1x1 (the region output) */
static void cnn_graph(dt_graph *g) {
    dt_init(g, 27);
    int x = dt_input(g, 4, S4(1, 32, 14, 14));
    int w1 = dt_const_r(g, 4, S4(32, 32, 3, 3), 0.1f, 0.f);
    int c1 = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1, 1, 1"), 2, IN(x, w1), NULL, 4, S4(1, 32, 14, 14), "conv1");
    int r1 = dt_conv_bias_act(g, c1, 32, S4(1, 32, 14, 14), false, "relu");
    int w2 = dt_const_r(g, 4, S4(32, 32, 3, 3), 0.1f, 0.f);
    int c2 = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1, 1, 1"), 2, IN(r1, w2), NULL, 4, S4(1, 32, 14, 14), "conv2");
    int r2 = dt_conv_bias_act(g, c2, 32, S4(1, 32, 14, 14), false, "relu");
    int w3 = dt_const_r(g, 4, S4(64, 32, 1, 1), 0.2f, 0.f);
    int c3 = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("0, 0, 0, 0"), 2, IN(r2, w3), NULL, 4, S4(1, 64, 14, 14), "conv3");
    dt_head(g, c3);
}

/* x [64, 128] . W1 [128, 256] -> . W2 [256, 96] (a feed-forward pair of rows > 1) */
static void mlp_graph(dt_graph *g) {
    dt_init(g, 31);
    int x = dt_input(g, 2, S2(64, 128));
    int w1 = dt_const_r(g, 2, S2(128, 256), 0.1f, 0.f);
    int m1 = dt_op(g, "relax.matmul", NULL, 2, IN(x, w1), NULL, 2, S2(64, 256), "fc1");
    int w2 = dt_const_r(g, 2, S2(256, 96), 0.1f, 0.f);
    int m2 = dt_op(g, "relax.matmul", NULL, 2, IN(m1, w2), NULL, 2, S2(64, 96), "fc2");
    dt_head(g, m2);
}

/* Runs g with the engine options o into *out. */
static void run_with(dt_graph *g, const rt_dnnl_opts *o, rt_tensor **out) {
    gr_diag d = {0};
    g->opts = o;
    cr_assert_eq(dt_run(g, &rt_dnnl_engine, out, &d), GR_OK, "%s", d.msg);
    g->opts = NULL;
}

/* bf16 against float32 (both oneDNN), the primitives bf16 prepared, and the reorders computing
 * `between` (a layer whose source is a bf16 result): none natively. */
static void check_graph(dt_graph *g, uint32_t nlayers, const char *between) {
    rt_dnnl_opts f32 = rt_dnnl_default_opts(), bf = f32;
    bf.bf16 = true;
    rt_tensor *ref[1] = {0}, *got[1] = {0};
    run_with(g, &f32, ref);
    run_with(g, &bf, got);
    bool native = rt_dnnl_bf16_isa();
    gr_cmp_opts tol = native ? (gr_cmp_opts){.atol_scale = BF16_ATOL_OF_MAX} : DT_CMP;
    gr_cmp_result e = tc_expect_tensor(got[0], ref[0], tol, "bf16 (ISA %s) against float32", rt_dnnl_isa());
    if (native) cr_expect_gt(e.max_abs, 0, "bf16 gave float32's results bit for bit: no bf16 ran");
    rt_tensor_release(ref[0]);
    rt_tensor_release(got[0]);

    dt_prepared p;
    g->opts = &bf;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(g, &p, &d), GR_OK, "%s", d.msg);
    g->opts = NULL;
    rt_dnnl_stats st;
    rt_dnnl_get_stats(p.state, &st);
    cr_expect_eq(st.bf16_fallback, !native, "ISA %s: bf16_fallback %d", rt_dnnl_isa(), st.bf16_fallback);
    cr_expect_eq(st.nbf16, native ? nlayers : 0, "ISA %s: %u bf16 primitives, expected %u", rt_dnnl_isa(), st.nbf16,
                 native ? nlayers : 0);
    cr_expect_eq(st.nref, 0, "%u primitives on ref (ISA %s)", st.nref, rt_dnnl_isa());
    uint32_t nmarked = 0, nreorder_between = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p.state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p.state, i, &pi));
        nmarked += strstr(pi.impl, "/bf16") != NULL;
        bool mine = false;
        for (uint32_t l = 0; l < pi.nlayers; l++) mine |= !strcmp(pi.layers[l], between);
        nreorder_between += mine && !strcmp(pi.kind, "reorder");
    }
    cr_expect_eq(nmarked, st.nbf16, "%u primitives named /bf16, %u counted", nmarked, st.nbf16);
    cr_expect_eq(nreorder_between, 0, "%u reorders into %s, whose source is a bf16 result", nreorder_between, between);
    dt_release(&p);
}

Test(dnnl_bf16, convolutions) {
    dt_graph g;
    cnn_graph(&g);
    check_graph(&g, 3, "conv2");
    dt_free(&g);
}

Test(dnnl_bf16, matmuls) {
    dt_graph g;
    mlp_graph(&g);
    check_graph(&g, 2, "fc2");
    dt_free(&g);
}

/* Zoo model `name` imported with its reference input's shape, default pipeline, partitioned
 * for dnnl with dnnl.precision=bf16 in *bf (new; release: the weights handed to the runtime,
 * as graft run does). NULL (test skipped) when the zoo cache lacks it. */
static ir_module *zoo_bf16(ir_ctx_t *ctx, const char *name, bool release, byoc_options **bf, rt_tensor **input,
                           rt_tensor **ref) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4096];
    if (!cached_model_load(zoo, name, "scripts/fetch_zoo.sh", path, sizeof path, input, ref)) return NULL;
    gr_diag d = {0};
    ir_module *opt = cached_model_import(ctx, path, *input), *part = NULL;
    *bf = byoc_options_new();
    cr_assert_eq(byoc_options_set(*bf, "dnnl.precision=bf16", &d), GR_OK, "%s", d.msg);
    byoc_partition_opts po = {0};
    po.options = *bf;
    po.release_consts = release;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    return part;
}

/* The option through the backend's options, on zoo models, against ONNX Runtime's float32. */
static void check_zoo_bf16(const char *name) {
    rt_tensor *input = NULL, *ref = NULL;
    byoc_options *bo = NULL;
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *part = zoo_bf16(ctx, name, true, &bo, &input, &ref);
    if (!part) {
        ir_ctx_free(ctx);
        return;
    }
    gr_diag d = {0};
    uint32_t nbf16 = 0, nfallback = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++) {
        rt_json_graph *gr;
        for (uint32_t q = 0; (gr = rt_json_module_graph(rt_module_at(part, k), q)); q++) {
            rt_dnnl_stats rs;
            rt_dnnl_get_stats(rt_json_module_state(rt_module_at(part, k), q), &rs);
            nbf16 += rs.nbf16;
            nfallback += rs.bf16_fallback;
        }
    }
    bool native = rt_dnnl_bf16_isa();
    if (native) cr_expect_gt(nbf16, 0, "%s: no bf16 primitive on %s", name, rt_dnnl_isa());
    else cr_expect(nbf16 == 0 && nfallback > 0, "%s on %s: %u bf16 primitives, %u regions fell back", name, rt_dnnl_isa(),
                   nbf16, nfallback);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    cr_assert_eq(rt_exec_run(x, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    /* float32 (no bf16 here): the float32 zoo tolerance (tests/dnnl/test_dnnl_zoo.c) */
    gr_cmp_opts tol = native ? (gr_cmp_opts){.atol_scale = ZOO_BF16_ATOL_OF_MAX} : (gr_cmp_opts){.atol_scale = 1e-4, .rtol = 1e-3};
    gr_cmp_result e = tc_expect_tensor(res.u.t, ref, tol,
                                       "%s: bf16 (ISA %s) against ORT's float32", name, rt_dnnl_isa());
    fprintf(stderr, "dnnl_bf16 %s (ISA %s): %u bf16 primitives, max |bf16 - ORT| %.3g = %.3g of max |ORT| %.3g\n", name,
            rt_dnnl_isa(), nbf16, e.max_abs, e.max_ref > 0 ? e.max_abs / e.max_ref : 0, e.max_ref);
    dt_expect_no_ref(name, false);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
    rt_exec_free(x);
    byoc_options_free(bo);
    ir_ctx_free(ctx);
}

Test(dnnl_bf16, zoo_resnet18, .timeout = 120) { check_zoo_bf16("resnet18"); }
Test(dnnl_bf16, zoo_mobilenet_v3_large, .timeout = 120) { check_zoo_bf16("mobilenet_v3_large"); }
/* depthwise convolutions (kept float32) between bf16 ones, dense layers */
Test(dnnl_bf16, zoo_convnext_tiny, .timeout = 240) { check_zoo_bf16("convnext_tiny"); }
/* inception branches whose results concat in place (the bf16 convolutions write no slot) */
Test(dnnl_bf16, zoo_googlenet, .timeout = 120) { check_zoo_bf16("googlenet"); }
Test(dnnl_bf16, zoo_bert_encoder, .timeout = 120) { check_zoo_bf16("bert_encoder"); }
Test(dnnl_bf16, zoo_deit_tiny, .timeout = 120) { check_zoo_bf16("deit_tiny"); }

/* An artifact built with bf16 keeps bf16 prepacked weights keyed by their memory descriptor
 * (data type included): loaded with bf16 it uses them as they are, loaded without the option it
 * lays float32 ones out again (and computes float32); under AVX2 both are float32 packs. */
Test(dnnl_bf16, artifact_packs_keyed_by_data_type, .timeout = 120) {
    rt_tensor *input = NULL, *ref = NULL;
    byoc_options *bf = NULL, *f32 = byoc_options_new();
    ir_ctx_t *ctx = ir_ctx_new();
    /* the constants stay with the module: the artifact holds them */
    ir_module *part = zoo_bf16(ctx, "resnet18", false, &bf, &input, &ref);
    if (!part) {
        byoc_options_free(f32);
        ir_ctx_free(ctx);
        return;
    }
    gr_diag d = {0};
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(graft_model_build(part, &buf, &len, &d), GR_OK, "%s", d.msg);
    bool native = rt_dnnl_bf16_isa();
    const byoc_options *loads[2] = {bf, f32};
    for (int l = 0; l < 2; l++) {
        graft_model *gm = NULL;
        cr_assert_eq(graft_model_load_buffer_opts(buf, len, loads[l], &gm, &d), GR_OK, "%s", d.msg);
        graft_model_info in;
        graft_model_get_info(gm, &in);
        cr_expect_gt(in.npacked, 0, "no prepacked weights in the artifact");
        bool other = native && l == 1; /* bf16 packs, float32 wanted */
        cr_expect_eq(in.nrepacked > 0, other, "load %s on %s: %u of %u packs laid out again", l ? "f32" : "bf16",
                     rt_dnnl_isa(), in.nrepacked, in.npacked);
        rt_value arg = rt_value_tensor(rt_tensor_retain(input)), res = {0};
        cr_assert_eq(graft_model_run(gm, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
        gr_cmp_opts tol = native && l == 0 ? (gr_cmp_opts){.atol_scale = ZOO_BF16_ATOL_OF_MAX}
                                           : (gr_cmp_opts){.atol_scale = 1e-4, .rtol = 1e-3};
        tc_expect_tensor(res.u.t, ref, tol, "artifact loaded %s (ISA %s) against ORT", l ? "f32" : "bf16", rt_dnnl_isa());
        rt_value_clear(&res);
        rt_value_clear(&arg);
        graft_model_free(gm);
    }
    free(buf);
    rt_tensor_release(input);
    rt_tensor_release(ref);
    byoc_options_free(bf);
    byoc_options_free(f32);
    ir_ctx_free(ctx);
}

/* graft run with the option: one warning line on stderr where it falls back, none natively. */
Test(dnnl_bf16, cli_says_when_it_falls_back) {
    const char *g = graft();
    char dir[] = "/tmp/graft_bf16_XXXXXX";
    cr_assert(mkdtemp(dir));
    char model[4200], cmd[9000], err[4300];
    snprintf(model, sizeof model, "%s/m.relax", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    FILE *f = fopen(model, "w");
    cr_assert(f);
    fputs("@I.ir_module\n"
          "class Module:\n"
          "    @R.function\n"
          "    def main(x: R.Tensor((1, 3, 10, 10), dtype=\"float32\"), w: R.Tensor((8, 3, 3, 3), dtype=\"float32\")) -> R.Tensor((1, 8, 8, 8), dtype=\"float32\"):\n"
          "        with R.dataflow():\n"
          "            gv: R.Tensor((1, 8, 8, 8), dtype=\"float32\") = R.nn.conv2d(x, w)  # span: \"conv1\"\n"
          "            R.output(gv)\n"
          "        return gv\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && '%s' run m.relax --backend dnnl --backend-opt dnnl.precision=bf16 "
             "--backend-opt dnnl.precision=bf16 > /dev/null 2> stderr.txt", dir, g);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    f = fopen(err, "r");
    cr_assert(f);
    char line[512];
    int nwarn = 0;
    while (fgets(line, sizeof line, f)) nwarn += strstr(line, "warning: dnnl.precision=bf16") != NULL;
    fclose(f);
    cr_expect_eq(nwarn, rt_dnnl_bf16_isa() ? 0 : 1, "ISA %s: %d warning lines", rt_dnnl_isa(), nwarn);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}
