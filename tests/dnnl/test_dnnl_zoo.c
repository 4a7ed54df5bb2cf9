/* The model zoo (scripts/zoo_export.py: torchvision CNNs and transformers, random
 * weights) with the dnnl backend: imported with the shape of the saved input, default pipeline,
 * partitioned for dnnl, run and compared with ONNX Runtime's output (scripts/fetch_zoo.sh).
 *
 * Tolerance: |dnnl - ORT| <= 1e-4 * max|ORT| + 1e-3 * |ORT| per element. The absolute part
 * scales with the output: random weights give outputs from ~1e-2 (mobilenet_v3) to ~10 (the
 * encoder), and a fixed 1e-4 would pass anything on the smallest. The relative part is the
 * PP-OCR tests' (tests/dnnl/test_dnnl_models.c): summation order and oneDNN's erf / exp over
 * 6 encoder layers or 50 convolutions.
 * Also: no op is left on the host, at least 99% of the conv / matmul FLOPs are in dnnl regions, and the fused conv / matmul composites are at least what the patterns take
 * today (every convolution of the CNNs; the encoder's projections and feed-forward products),
 * so a pattern that silently stops matching fails here. Skipped when the zoo cache is absent. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/op.h"
#include "ir/transform/transform.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"
#include "tests/cached_model.h"
#include "tests/compare_util.h"
#include "tests/dnnl/dnnl_test_util.h"

#define ZOO_ATOL_OF_MAX 1e-4
#define ZOO_RTOL 1e-3
#define ZOO_MIN_DENSE 0.99

/* conv / matmul FLOPs and count of such calls in main */
static double dense_flops(const ir_module *m, int *ncalls) {
    const ir_func *f = ir_module_func(m, "main");
    double t = 0;
    *ncalls = 0;
    const ir_seq *s = f && f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_expr *v = s->blocks[b]->bindings[i].value;
            if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
            const char *op = IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name;
            if (strstr(op, "conv") || !strcmp(op, "relax.matmul")) {
                t += fmax(0, byoc_call_flops(IR_AS(v, ir_call)));
                (*ncalls)++;
            }
        }
    return t;
}

/* Models whose every concat is planned in place (backends/dnnl/dnnl_op_data.c): no concat
 * primitive runs, at either ISA */
static const char *const CONCAT_IN_PLACE[] = {"densenet121", "googlenet"};

/* host_ok: ops the dnnl patterns do not take, left on the host by design */
static void check_zoo_host(const char *name, int min_fused, size_t host_ok) {
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4096];
    rt_tensor *input = NULL, *ref = NULL;
    if (!cached_model_load(zoo, name, "scripts/fetch_zoo.sh", path, sizeof path, &input, &ref)) return;
    gr_diag d = {0};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *opt = cached_model_import(ctx, path, input), *part = NULL;
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {0};
    po.notes = &notes;
    /* as graft run: the weights go to the runtime, which keeps only its own copies */
    po.release_consts = true;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    /* held once: after the (compile-time) prepare no region's graph references a constant, the
     * context handed them over, and most bytes went (what is left is read in place) */
    const ir_attr *rel = ir_attrs_get(part->attrs, BYOC_ATTR_CONSTS_RELEASED);
    cr_assert(rel && rel->kind == IR_ATTR_INT && rel->u.i > 0, "%s: no constants handed to the runtime", name);
    size_t graph_bytes = 0, released = 0, held = 0;
    uint32_t nconcat = 0, nslots = 0, nsib_reorders = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++) {
        rt_json_graph *gr;
        for (uint32_t q = 0; (gr = rt_json_module_graph(rt_module_at(part, k), q)); q++) {
            graph_bytes += rt_json_graph_const_bytes(gr);
            rt_dnnl_stats rs;
            const void *state = rt_json_module_state(rt_module_at(part, k), q);
            rt_dnnl_get_stats(state, &rs);
            released += rs.released_bytes;
            held += rs.const_bytes;
            nslots += rs.nslots;
            for (uint32_t p = 0; p < rt_dnnl_num_prims(state); p++) {
                rt_dnnl_prim_info pi;
                if (!rt_dnnl_prim(state, p, &pi)) continue;
                nconcat += !strcmp(pi.kind, "concat");
                for (uint32_t l = 0; l < pi.nlayers && !strcmp(pi.kind, "reorder"); l++)
                    nsib_reorders += strstr(pi.layers[l], "/branch2.0/") != NULL;
            }
        }
    }
    for (size_t c = 0; c < sizeof CONCAT_IN_PLACE / sizeof CONCAT_IN_PLACE[0]; c++)
        if (!strcmp(name, CONCAT_IN_PLACE[c])) {
            cr_expect_eq(nconcat, 0, "%s (ISA %s): %u concat primitives", name, rt_dnnl_isa(), nconcat);
            cr_expect_gt(nslots, 0, "%s: no concat source written in place", name);
        }
    /* googlenet's inception 1x1s merged two by two (MergeSiblings) read the block input and hand
     * their slices to the 3x3 branches in the blocked layout: no reorder on either side */
    if (!strcmp(name, "googlenet"))
        cr_expect_eq(nsib_reorders, 0, "%s (ISA %s): %u reorders around the merged 1x1 convolutions", name, rt_dnnl_isa(), nsib_reorders);
    cr_expect_eq(graph_bytes, 0, "%s: the regions' graphs still reference %zu constant bytes", name, graph_bytes);
    cr_expect_geq(released + held, (size_t)rel->u.i, "%s: %zu bytes handed over, %zu released + %zu held", name,
                  (size_t)rel->u.i, released, held);
    uint8_t *abuf = NULL;
    size_t alen = 0;
    cr_expect_neq(graft_model_build(part, &abuf, &alen, &d), GR_OK, "%s: an artifact without its constants", name);
    free(abuf);
    json_t *rep = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
    size_t i, j;
    json_t *g, *c;
    int fused = 0;
    json_array_foreach(json_object_get(rep, "regions"), i, g) json_array_foreach(json_object_get(g, "composites"), j, c) {
        const char *cn = json_string_value(json_object_get(c, "name"));
        fused += !strncmp(cn, "dnnl.conv", 9) || !strncmp(cn, "dnnl.matmul_", 12) || !strncmp(cn, "dnnl.dense", 10);
    }
    /* every op of the zoo runs on dnnl (layer norms and erf GELUs included, FuseLayerNormGelu) */
    cr_expect_eq(json_array_size(json_object_get(rep, "host")), host_ok, "%s: %zu host ops left, expected %zu", name,
                 json_array_size(json_object_get(rep, "host")), host_ok);
    json_decref(rep);
    int ndense = 0, nhost = 0;
    double total = dense_flops(opt, &ndense), host = dense_flops(part, &nhost);
    cr_expect(total > 0 && (total - host) / total >= ZOO_MIN_DENSE, "%s: %.2f%% of conv/matmul FLOPs offloaded", name,
              total > 0 ? 100 * (total - host) / total : 0);
    cr_expect_eq(nhost, 0, "%s: %d convolutions / matmuls left on the host", name, nhost);
    cr_expect_geq(fused, min_fused, "%s: %d of %d convolutions / matmuls in fused composites, expected >= %d", name, fused,
                  ndense, min_fused);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    cr_assert_eq(rt_exec_run(x, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    cr_assert_eq(rt_tensor_numel(res.u.t), rt_tensor_numel(ref));
    gr_cmp_result e = tc_expect_tensor(res.u.t, ref, (gr_cmp_opts){.atol_scale = ZOO_ATOL_OF_MAX, .rtol = ZOO_RTOL},
                                       "%s: dnnl against ORT", name);
    cr_expect(e.max_ref > 0, "%s: ONNX Runtime's output is all zeros", name);
    /* no primitive on oneDNN's reference kernels, whatever the ISA (make test runs these under
     * ONEDNN_MAX_CPU_ISA=AVX2 too) */
    dt_expect_no_ref(name, false);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
    rt_exec_free(x);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

static void check_zoo(const char *name, int min_fused) { check_zoo_host(name, min_fused, 0); }

Test(dnnl_zoo, resnet18, .timeout = 120) { check_zoo("resnet18", 21); }
Test(dnnl_zoo, mobilenet_v3_large, .timeout = 120) { check_zoo("mobilenet_v3_large", 64); }
Test(dnnl_zoo, regnet_y_400mf, .timeout = 120) { check_zoo("regnet_y_400mf", 86); }
Test(dnnl_zoo, shufflenet_v2_x1_0, .timeout = 120) { check_zoo("shufflenet_v2_x1_0", 57); }
Test(dnnl_zoo, mnasnet1_0, .timeout = 120) { check_zoo("mnasnet1_0", 53); }
Test(dnnl_zoo, convnext_tiny, .timeout = 240) { check_zoo("convnext_tiny", 59); }
/* googlenet's 18 reducing 1x1 convolutions on inception block inputs run as 9 (MergeSiblings) */
Test(dnnl_zoo, googlenet, .timeout = 120) { check_zoo("googlenet", 49); }
Test(dnnl_zoo, bert_encoder, .timeout = 120) { check_zoo("bert_encoder", 36); }
/* window pads, roll and the shifted-window mask from shape arithmetic folded at import */
Test(dnnl_zoo, swin_t, .timeout = 240) { check_zoo("swin_t", 62); }
Test(dnnl_zoo, densenet121, .timeout = 120) { check_zoo("densenet121", 60); }
/* 3-D convolutions are no fused composites (dnnl_vol_patterns.c): their post-ops fold from the
 * chain; the classifier's dense is the one composite */
Test(dnnl_zoo, r3d_18, .timeout = 120) { check_zoo("r3d_18", 1); }
Test(dnnl_zoo, lraspp_mobilenet_v3_large, .timeout = 120) { check_zoo("lraspp_mobilenet_v3_large", 66); }
/* transformers beyond the BERT encoder: ViT (DeiT-tiny), a GPT-2-style decoder (causal mask,
 * tanh GELU), nn.TransformerEncoder batch-first pre-norm with a padding mask and
 * sequence-first post-norm, a conformer-like audio encoder (1-D convolutions + attention) */
Test(dnnl_zoo, deit_tiny, .timeout = 120) { check_zoo("deit_tiny", 50); }
/* the causal mask's where(mask, scores, min) per layer is a min / max pair on dnnl (dn_op_where):
 * one region */
Test(dnnl_zoo, gpt2_small, .timeout = 120) { check_zoo("gpt2_small", 16); }
Test(dnnl_zoo, encoder_prenorm_gelu, .timeout = 120) { check_zoo("encoder_prenorm_gelu", 20); }
Test(dnnl_zoo, encoder_seqfirst, .timeout = 120) { check_zoo("encoder_seqfirst", 16); }
Test(dnnl_zoo, audio_encoder, .timeout = 120) { check_zoo("audio_encoder", 30); }
