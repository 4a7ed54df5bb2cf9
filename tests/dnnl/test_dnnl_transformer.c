/* Transformer blocks on the dnnl backend, op by op as exporters write them: each module (params
 * starting with w / b bound as constants) goes through the default pipeline (FuseLayerNormGelu)
 * and the dnnl partition, must leave nothing on the host, take the expected composites, match
 * the reference executor within |d - r| <= 1e-4 + 1e-4 |r| (fp32; the layer norms and
 * softmaxes sum <= 256 terms, oneDNN's erf / tanh / exp are within a few ulp), and run no
 * primitive on oneDNN's reference kernels (make test runs this suite under
 * ONEDNN_MAX_CPU_ISA=AVX2 too). */
#include <criterion/criterion.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "backends/dnnl/dnnl.h"
#include "byoc/byoc.h"
#include "ir/text/parser.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/module.h"
#include "tests/compare_util.h"
#include "tests/dnnl/dnnl_test_util.h"

#define TT_ATOL 1e-4
#define TT_RTOL 1e-4

static float tt_rand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static rt_tensor *rand_tensor(const ir_sinfo *s, uint32_t *seed) {
    int64_t shape[RT_MAX_NDIM];
    cr_assert(ir_sinfo_static_shape(s, shape));
    rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
    float *p = rt_tensor_data(t);
    for (int64_t k = 0; k < rt_tensor_numel(t); k++) p[k] = tt_rand(seed);
    return t;
}

/* main's inputs random from seed, or, with `fill` (nfill values), fill repeated */
static void run_main(const ir_module *m, uint32_t seed, const float *fill, int nfill, rt_value *out) {
    rt_exec_t *x = NULL;
    gr_diag d = {0};
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    uint32_t n = rt_exec_num_inputs(x);
    rt_value in[8];
    cr_assert_leq(n, 8);
    for (uint32_t i = 0; i < n; i++) {
        rt_tensor *t = rand_tensor(rt_exec_input_sinfo(x, i), &seed);
        float *p = rt_tensor_data(t);
        for (int64_t k = 0; fill && k < rt_tensor_numel(t); k++) p[k] = fill[k % nfill];
        in[i] = rt_value_tensor(t);
    }
    cr_assert_eq(rt_exec_run(x, in, n, out, &d), GR_OK, "%s", d.msg);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
}

/* text with its w / b params bound as random constants (*bound) and partitioned for dnnl
 * (*part), which must leave nothing on the host and take each composite of `want` at least
 * once; both live in ctx */
static void tt_partition(ir_ctx_t *ctx, const char *text, const char *const *want, uint32_t seed, ir_module **bound_out,
                         ir_module **part_out) {
    gr_diag d = {0};
    ir_module *m = NULL, *bound = NULL, *opt = NULL, *part = NULL;
    rt_const_eval_attach(ctx); /* FoldConstant evaluates calls on constants (a mask from w > 0) */
    cr_assert_eq(ir_parse_module(ctx, "case", text, strlen(text), &m, &d), GR_OK, "%s\n%s", d.msg, text);
    const ir_func *f = ir_module_func(m, "main");
    const char *names[8];
    rt_tensor *ts[8];
    uint32_t n = 0, s = seed;
    for (uint32_t i = 0; i < f->nparams && n < 8; i++)
        if (strchr("wb", f->params[i]->name[0])) {
            names[n] = f->params[i]->name;
            ts[n++] = rand_tensor(f->params[i]->base.sinfo, &s);
        }
    ir_pass *bp = ir_pass_bind_params_new("main", n, names, ts);
    cr_assert_eq(ir_pass_run(bp, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bp);
    for (uint32_t i = 0; i < n; i++) rt_tensor_release(ts[i]);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, bound, &opt, &d), GR_OK, "%s", d.msg);
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {0};
    po.notes = &notes;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    json_t *rep = byoc_report_json(ctx, po.after_merge, be, 1, &notes);
    char got[1024] = " ";
    size_t i, j;
    json_t *g, *c;
    json_array_foreach(json_object_get(rep, "regions"), i, g) json_array_foreach(json_object_get(g, "composites"), j, c) {
        strncat(got, json_string_value(json_object_get(c, "name")), sizeof got - strlen(got) - 2);
        strncat(got, " ", sizeof got - strlen(got) - 1);
    }
    cr_expect_eq(json_array_size(json_object_get(rep, "host")), 0, "ops left on the host; composites:%s", got);
    for (const char *const *w = want; *w; w++) {
        char key[128];
        snprintf(key, sizeof key, " %s ", *w);
        cr_expect(strstr(got, key) != NULL, "want %s, got%s", *w, got);
    }
    json_decref(rep);
    byoc_notes_free(&notes);
    *bound_out = bound;
    *part_out = part;
}

/* primitives of `kind` in part's prepared dnnl regions */
static uint32_t tt_prims(const ir_module *part, const char *kind) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < rt_module_count(part); k++) {
        const void *state;
        for (uint32_t q = 0; (state = rt_json_module_state(rt_module_at(part, k), q)); q++)
            for (uint32_t p = 0; p < rt_dnnl_num_prims(state); p++) {
                rt_dnnl_prim_info pi;
                n += rt_dnnl_prim(state, p, &pi) && !strcmp(pi.kind, kind);
            }
    }
    return n;
}

static uint32_t tt_reorders(const ir_module *part) { return tt_prims(part, "reorder"); }

/* `want`: composite names, each expected at least once ("" for none); at most max_reorders
 * reorder primitives (-1: any number) and max_eltwise eltwise ones (-1: any number) */
static void tt_case_prims(const char *text, const char *const *want, uint32_t seed, int max_reorders, int max_eltwise) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *bound = NULL, *part = NULL;
    tt_partition(ctx, text, want, seed, &bound, &part);
    rt_value a = {0}, b = {0};
    run_main(bound, seed, NULL, 0, &a);
    run_main(part, seed, NULL, 0, &b);
    if (max_reorders >= 0)
        cr_expect_leq(tt_reorders(part), (uint32_t)max_reorders, "%u reorders, expected <= %d", tt_reorders(part),
                      max_reorders);
    if (max_eltwise >= 0)
        cr_expect_leq(tt_prims(part, "eltwise"), (uint32_t)max_eltwise, "%u eltwise primitives, expected <= %d",
                      tt_prims(part, "eltwise"), max_eltwise);
    cr_assert_eq(a.kind, RT_VAL_TENSOR);
    cr_assert_eq(b.kind, RT_VAL_TENSOR);
    tc_expect_tensor(b.u.t, a.u.t, (gr_cmp_opts){.atol = TT_ATOL, .rtol = TT_RTOL}, "dnnl against the reference");
    rt_value_clear(&a);
    rt_value_clear(&b);
    dt_expect_no_ref("transformer block", true);
    ir_ctx_free(ctx);
}

static void tt_case_reorders(const char *text, const char *const *want, uint32_t seed, int max_reorders) {
    tt_case_prims(text, want, seed, max_reorders, -1);
}

static void tt_case(const char *text, const char *const *want, uint32_t seed) { tt_case_reorders(text, want, seed, -1); }

#define HDR "@I.ir_module\nclass Module:\n    @R.function\n"
#define F32(shape) "R.Tensor(" shape ", dtype=\"float32\")"
#define END "            R.output(gv)\n        return gv\n"
#define WANT(...) ((const char *const[]){__VA_ARGS__, NULL})

/* nn.MultiheadAttention's output [S, 1, C] permuted to batch-first and added to the residual:
 * the permuted view's size-1 dim once made the add binary ref:any */
Test(dnnl_transformer, residual_add_of_a_permuted_view) {
    tt_case(HDR "    def main(x: " F32("(40, 1, 48)") ", r: " F32("(1, 40, 48)") ", w: " F32("(48, 48)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.matmul(x, w)\n"
                "            lv1 = R.permute_dims(lv, axes=[1, 0, 2])\n"
                "            gv = R.add(lv1, r)\n" END,
            WANT("dnnl.add"), 1);
}

/* the bias of a projection and an additive attention mask broadcast over heads and queries */
Test(dnnl_transformer, broadcast_adds_3d_4d) {
    tt_case(HDR "    def main(x: " F32("(1, 24, 32)") ", b: " F32("(32,)") ", s: " F32("(1, 4, 24, 24)")
                ", m: " F32("(1, 1, 1, 24)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.add(x, b)\n"
                "            lv1 = R.add(s, m)\n"
                "            lv2 = R.nn.softmax(lv1, axis=-1)\n"
                "            lv3 = R.reshape(lv2, R.shape([1, 96, 24]))\n"
                "            gv = R.matmul(lv3, lv)\n" END,
            WANT("dnnl.nn.softmax"), 2);
}

/* the opset-13 layer norm (ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add)
 * becomes oneDNN's layer normalization */
Test(dnnl_transformer, decomposed_layer_norm) {
    tt_case(HDR "    def main(x: " F32("(2, 17, 64)") ", w: " F32("(64,)") ", b: " F32("(64,)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.mean(x, axis=[2], keepdims=True)\n"
                "            lv1 = R.subtract(x, lv)\n"
                "            lv2 = R.power(lv1, R.const(2.0, \"float32\"))\n"
                "            lv3 = R.mean(lv2, axis=[2], keepdims=True)\n"
                "            lv4 = R.add(lv3, R.const(1e-5, \"float32\"))\n"
                "            lv5 = R.sqrt(lv4)\n"
                "            lv6 = R.divide(lv1, lv5)\n"
                "            lv7 = R.multiply(lv6, w)\n"
                "            gv = R.add(lv7, b)\n" END,
            WANT("dnnl.nn.layer_norm"), 3);
}

/* GPT-2's feed-forward: the tanh GELU written out becomes a post-op of the projection */
Test(dnnl_transformer, tanh_gelu_post_op) {
    tt_case(HDR "    def main(x: " F32("(1, 16, 32)") ", w: " F32("(32, 64)") ", b: " F32("(64,)") "):\n"
                "        with R.dataflow():\n"
                "            f0 = R.matmul(x, w)\n"
                "            f = R.add(f0, b)\n"
                "            h = R.multiply(f, R.const(0.5, \"float32\"))\n"
                "            p = R.power(f, R.const(3.0, \"float32\"))\n"
                "            q = R.multiply(p, R.const(0.044715, \"float32\"))\n"
                "            s = R.add(f, q)\n"
                "            t = R.multiply(s, R.const(0.7978845608, \"float32\"))\n"
                "            u = R.tanh(t)\n"
                "            v = R.add(u, R.const(1.0, \"float32\"))\n"
                "            gv = R.multiply(h, v)\n" END,
            WANT("dnnl.matmul_bias_gelu_tanh"), 4);
}

/* a fused QKV projection split in three (GPT-2), per-head reshapes, QK^T, softmax, V */
Test(dnnl_transformer, split_qkv_attention) {
    tt_case(HDR "    def main(x: " F32("(1, 12, 32)") ", w: " F32("(32, 96)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.matmul(x, w)\n"
                "            sp = R.split(lv, indices_or_sections=[32, 64], axis=2)\n"
                "            q = sp[0]\n"
                "            k = sp[1]\n"
                "            v = sp[2]\n"
                "            q1 = R.permute_dims(R.reshape(q, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                "            k1 = R.permute_dims(R.reshape(k, R.shape([1, 12, 4, 8])), axes=[0, 2, 3, 1])\n"
                "            v1 = R.permute_dims(R.reshape(v, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                "            sc = R.matmul(q1, k1)\n"
                "            pr = R.nn.softmax(sc, axis=-1)\n"
                "            gv = R.matmul(pr, v1)\n" END,
            WANT("dnnl.split", "dnnl.nn.softmax"), 5);
}

/* ViT's class token: a [1, 1, C] constant concatenated before the [1, S, C] patches (a
 * channels-last view of the patch embedding) */
Test(dnnl_transformer, class_token_concat) {
    tt_case(HDR "    def main(x: " F32("(1, 16, 5, 5)") ", w: " F32("(1, 1, 16)") ", b: " F32("(1, 26, 16)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.reshape(x, R.shape([1, 16, 25]))\n"
                "            lv1 = R.permute_dims(lv, axes=[0, 2, 1])\n"
                "            lv2 = R.concat((w, lv1), axis=1)\n"
                "            gv = R.add(lv2, b)\n" END,
            WANT("dnnl.concat"), 6);
}

/* split's pieces: one nothing reads (no copy), one a convolution reads (a view), one an add
 * reads (a jit reorder) */
Test(dnnl_transformer, split_unused_view_and_copied_pieces) {
    tt_case(HDR "    def main(x: " F32("(1, 10, 6, 6)") ", w: " F32("(4, 4, 3, 3)") "):\n"
                "        with R.dataflow():\n"
                "            sp = R.split(x, indices_or_sections=[2, 6], axis=1)\n"
                "            a = sp[1]\n"
                "            b = sp[2]\n"
                "            c = R.nn.conv2d(a, w, padding=[1, 1, 1, 1])\n"
                "            gv = R.add(c, b)\n" END,
            WANT("dnnl.split"), 7);
}

/* GPT-2's causal attention: scores scaled, where(mask, scores, finfo.min) with a constant mask
 * (here a random one, folded from w > 0), softmax, V */
Test(dnnl_transformer, causal_where_attention) {
    tt_case(HDR "    def main(x: " F32("(1, 12, 32)") ", w: " F32("(32, 96)") ", wm: " F32("(1, 1, 12, 12)") "):\n"
                "        with R.dataflow():\n"
                "            lv = R.matmul(x, w)\n"
                "            sp = R.split(lv, indices_or_sections=[32, 64], axis=2)\n"
                "            q = sp[0]\n"
                "            k = sp[1]\n"
                "            v = sp[2]\n"
                "            q1 = R.permute_dims(R.reshape(q, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                "            k1 = R.permute_dims(R.reshape(k, R.shape([1, 12, 4, 8])), axes=[0, 2, 3, 1])\n"
                "            v1 = R.permute_dims(R.reshape(v, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                "            sc = R.divide(R.matmul(q1, k1), R.const(2.8284271, \"float32\"))\n"
                "            c = R.greater(wm, R.const(0.0, \"float32\"))\n"
                "            ms = R.where(c, sc, R.const(-3.4028234663852886e+38, \"float32\"))\n"
                "            pr = R.nn.softmax(ms, axis=-1)\n"
                "            gv = R.matmul(pr, v1)\n" END,
            WANT("dnnl.where", "dnnl.nn.softmax"), 8);
}

/* the constant on the true side and a mask broadcast along the last axis (no leading-axes
 * broadcast: the min / max operands in the result's shape) */
Test(dnnl_transformer, where_constant_first_inner_broadcast) {
    tt_case(HDR "    def main(x: " F32("(2, 3, 5, 7)") ", wm: " F32("(3, 5, 1)") "):\n"
                "        with R.dataflow():\n"
                "            c = R.less(wm, R.const(0.0, \"float32\"))\n"
                "            gv = R.where(c, R.const(-1e4, \"float32\"), x)\n" END,
            WANT("dnnl.where"), 9);
}

/* where(c, x, finfo.min) is exact on infinities, -0 and the largest finite values (an additive
 * mask is not: inf + -inf is NaN, x + finfo.min rounds): the same bits as the reference, but
 * for a NaN x where x is taken, which comes out +inf (dn_op_where says why; masked NaNs give
 * finfo.min). Denormals stay out: the engine flushes them while it runs (dnnl.denormals). */
Test(dnnl_transformer, where_exact_on_infinities) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *bound = NULL, *part = NULL;
    tt_partition(ctx,
                 HDR "    def main(x: " F32("(1, 2, 3, 8)") ", wm: " F32("(1, 1, 3, 8)") "):\n"
                     "        with R.dataflow():\n"
                     "            c = R.greater(wm, R.const(0.0, \"float32\"))\n"
                     "            gv = R.where(c, x, R.const(-3.4028234663852886e+38, \"float32\"))\n" END,
                 WANT("dnnl.where"), 10, &bound, &part);
    static const float SPECIAL[] = {INFINITY, -INFINITY, -0.0f, 0.0f, 3.4e38f, -3.4e38f, 1.5f, -2.5f, NAN};
    int ns = (int)(sizeof SPECIAL / sizeof SPECIAL[0]);
    rt_value a = {0}, b = {0};
    run_main(bound, 10, SPECIAL, ns, &a);
    run_main(part, 10, SPECIAL, ns, &b);
    cr_assert_eq(rt_tensor_numel(a.u.t), rt_tensor_numel(b.u.t));
    const uint32_t *pa = rt_tensor_data(a.u.t), *pb = rt_tensor_data(b.u.t);
    int64_t kept = 0;
    for (int64_t k = 0; k < rt_tensor_numel(a.u.t); k++) {
        uint32_t want = isnan(((const float *)rt_tensor_data(a.u.t))[k]) ? 0x7f800000u : pa[k];
        cr_expect_eq(pb[k], want, "element %lld: dnnl %08x, reference %08x", (long long)k, pb[k], pa[k]);
        kept += pa[k] != 0xff7fffffu;
    }
    /* both branches taken, infinities among the kept values */
    cr_expect(kept > 0 && kept < rt_tensor_numel(a.u.t), "kept %lld of %lld", (long long)kept, (long long)rt_tensor_numel(a.u.t));
    rt_value_clear(&a);
    rt_value_clear(&b);
    dt_expect_no_ref("where", true);
    ir_ctx_free(ctx);
}

/* BERT's attention with a padding mask: per-head Q, K^T and V are strided views of the
 * projections, QK^T takes the scale and the mask add as post-ops, PV writes the heads merged
 * back ([1, H, S, D] read as [1, S, H, D]): no copy anywhere */
Test(dnnl_transformer, bert_attention_heads_in_place) {
    tt_case_reorders(HDR "    def main(x: " F32("(1, 12, 32)") ", m: " F32("(1, 1, 1, 12)") ", wq: " F32("(32, 32)")
                     ", wk: " F32("(32, 32)") ", wv: " F32("(32, 32)") ", wo: " F32("(32, 32)") ", bq: " F32("(32,)") "):\n"
                     "        with R.dataflow():\n"
                     "            q = R.add(R.matmul(x, wq), bq)\n"
                     "            k = R.matmul(x, wk)\n"
                     "            v = R.matmul(x, wv)\n"
                     "            q1 = R.permute_dims(R.reshape(q, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                     "            k1 = R.permute_dims(R.reshape(k, R.shape([1, 12, 4, 8])), axes=[0, 2, 3, 1])\n"
                     "            v1 = R.permute_dims(R.reshape(v, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                     "            sc = R.divide(R.matmul(q1, k1), R.const(2.8284271, \"float32\"))\n"
                     "            pr = R.nn.softmax(R.add(sc, m), axis=-1)\n"
                     "            ctx = R.permute_dims(R.matmul(pr, v1), axes=[0, 2, 1, 3])\n"
                     "            gv = R.matmul(R.reshape(ctx, R.shape([1, 12, 32])), wo)\n" END,
                     WANT("dnnl.nn.softmax"), 11, 0);
}

/* a fused in-projection sliced in three (copies: a slice reshaped is no strided view), q scaled
 * before QK^T (the scaling keeps the permuted view's layout), heads merged back before the
 * out-projection: only the three slices copied. (torch's nn.MultiheadAttention writes 3-D heads,
 * [B * H, S, D]: on such views oneDNN picks gemm:jit over brgemm, so those are copied where
 * brgemm runs, dn_op_matmul) */
Test(dnnl_transformer, fused_qkv_scaled_q) {
    tt_case_reorders(HDR "    def main(x: " F32("(1, 12, 32)") ", w: " F32("(32, 96)") ", b: " F32("(96,)") ", wo: " F32("(32, 32)") "):\n"
                     "        with R.dataflow():\n"
                     "            p = R.add(R.matmul(x, w), b)\n"
                     "            q = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(0),), (R.prim_value(32),))\n"
                     "            k = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(32),), (R.prim_value(64),))\n"
                     "            v = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(64),), (R.prim_value(96),))\n"
                     "            q1 = R.permute_dims(R.reshape(q, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                     "            k1 = R.permute_dims(R.reshape(k, R.shape([1, 12, 4, 8])), axes=[0, 2, 3, 1])\n"
                     "            v1 = R.permute_dims(R.reshape(v, R.shape([1, 12, 4, 8])), axes=[0, 2, 1, 3])\n"
                     "            q2 = R.divide(q1, R.const(2.8284271, \"float32\"))\n"
                     "            pr = R.nn.softmax(R.matmul(q2, k1), axis=-1)\n"
                     "            ctx = R.permute_dims(R.matmul(pr, v1), axes=[0, 2, 1, 3])\n"
                     "            gv = R.matmul(R.reshape(ctx, R.shape([1, 12, 32])), wo)\n" END,
                     WANT("dnnl.nn.softmax"), 12, 3);
}

/* torch's sequence-first nn.MultiheadAttention, its 3-D heads: on dnnl, no ref, whichever of
 * views and copies its kernels take */
Test(dnnl_transformer, seqfirst_mha_3d_heads) {
    tt_case(HDR "    def main(x: " F32("(12, 2, 32)") ", w: " F32("(32, 96)") ", b: " F32("(96,)") ", wo: " F32("(32, 32)") "):\n"
                "        with R.dataflow():\n"
                "            p = R.add(R.matmul(x, w), b)\n"
                "            q = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(0),), (R.prim_value(32),))\n"
                "            k = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(32),), (R.prim_value(64),))\n"
                "            v = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(64),), (R.prim_value(96),))\n"
                "            q1 = R.permute_dims(R.reshape(q, R.shape([12, 8, 8])), axes=[1, 0, 2])\n"
                "            k1 = R.permute_dims(R.reshape(k, R.shape([12, 8, 8])), axes=[1, 2, 0])\n"
                "            v1 = R.permute_dims(R.reshape(v, R.shape([12, 8, 8])), axes=[1, 0, 2])\n"
                "            q2 = R.divide(q1, R.const(2.8284271, \"float32\"))\n"
                "            pr = R.nn.softmax(R.matmul(q2, k1), axis=-1)\n"
                "            ctx = R.permute_dims(R.matmul(pr, v1), axes=[1, 0, 2])\n"
                "            gv = R.matmul(R.reshape(ctx, R.shape([24, 32])), wo)\n" END,
            WANT("dnnl.nn.softmax"), 13);
}

/* Swin's and timm's attention: the fused projection reshaped and permuted to [3, B, H, S, D],
 * each piece sliced off and squeezed; q scaled, a relative-position bias added to QK^T. The
 * permute and the slices are views (each piece copied at most once, by its slice or for its
 * matmul), the scaling an output scale of QK^T's primitive (no eltwise one), the bias added
 * after it. */
Test(dnnl_transformer, swin_qkv_pieces_of_a_permute) {
#define PIECE(name, i, j)                                                                                           \
    "            " name " = R.squeeze(R.strided_slice(t, (R.prim_value(0),), (R.prim_value(" #i "),), (R.prim_value(" #j \
    "),)), axis=[0])\n"
    tt_case_prims(HDR "    def main(x: " F32("(4, 12, 32)") ", w: " F32("(32, 96)") ", b: " F32("(96,)") ", rb: " F32("(1, 4, 12, 12)")
                  ", wo: " F32("(32, 32)") "):\n"
                  "        with R.dataflow():\n"
                  "            p = R.add(R.matmul(x, w), b)\n"
                  "            t = R.permute_dims(R.reshape(p, R.shape([4, 12, 3, 4, 8])), axes=[2, 0, 3, 1, 4])\n"
                  PIECE("q", 0, 1) PIECE("k", 1, 2) PIECE("v", 2, 3)
                  "            q2 = R.multiply(q, R.const(0.35355339, \"float32\"))\n"
                  "            sc = R.add(R.matmul(q2, R.permute_dims(k, axes=[0, 1, 3, 2])), rb)\n"
                  "            pr = R.nn.softmax(sc, axis=-1)\n"
                  "            ctx = R.permute_dims(R.matmul(pr, v), axes=[0, 2, 1, 3])\n"
                  "            gv = R.matmul(R.reshape(ctx, R.shape([4, 12, 32])), wo)\n" END,
                  WANT("dnnl.nn.softmax"), 14, 3, 0);
#undef PIECE
}

/* a slice of the whole tensor (Swin's unpadding when nothing was padded) is no copy */
Test(dnnl_transformer, whole_slice_is_no_copy) {
    tt_case_reorders(HDR "    def main(x: " F32("(1, 8, 8, 16)") ", w: " F32("(16, 16)") ", r: " F32("(1, 8, 8, 16)") "):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.matmul(x, w)\n"
                     "            lv1 = R.strided_slice(lv, (R.prim_value(1), R.prim_value(2)), (R.prim_value(0), R.prim_value(0)), "
                     "(R.prim_value(8), R.prim_value(8)))\n"
                     "            gv = R.add(lv1, r)\n" END,
                     WANT("dnnl.strided_slice"), 15, 0);
}

/* torch's nn.MultiheadAttention with one batch element (deit_tiny): the heads of the fused
 * projection's q slice, [S, H, D] permuted to [H, S, D], scaled before QK^T. The scaling is an
 * output scale of QK^T's primitive, so the permute is no copy for it: the block has as many
 * reorders as without the scaling (at AVX2 QK^T reads q's heads in place; where those views
 * cost brgemm, the product copies them as it would unscaled) and the same values. */
#define MHA_BLOCK(SCALE)                                                                                             \
    HDR "    def main(x: " F32("(12, 1, 32)") ", w: " F32("(32, 96)") ", b: " F32("(96,)") ", wo: " F32("(32, 32)") "):\n" \
        "        with R.dataflow():\n"                                                                                 \
        "            p = R.add(R.matmul(x, w), b)\n"                                                                   \
        "            q = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(0),), (R.prim_value(32),))\n"          \
        "            k = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(32),), (R.prim_value(64),))\n"         \
        "            v = R.strided_slice(p, (R.prim_value(2),), (R.prim_value(64),), (R.prim_value(96),))\n"         \
        "            q1 = R.permute_dims(R.reshape(q, R.shape([12, 4, 8])), axes=[1, 0, 2])\n"                       \
        "            k1 = R.permute_dims(R.reshape(k, R.shape([12, 4, 8])), axes=[1, 2, 0])\n"                       \
        "            v1 = R.permute_dims(R.reshape(v, R.shape([12, 4, 8])), axes=[1, 0, 2])\n"                       \
        "            q2 = " SCALE "\n"                                                                                 \
        "            pr = R.nn.softmax(R.matmul(q2, k1), axis=-1)\n"                                                   \
        "            ctx = R.permute_dims(R.matmul(pr, v1), axes=[1, 0, 2])\n"                                        \
        "            gv = R.matmul(R.reshape(ctx, R.shape([12, 32])), wo)\n" END
Test(dnnl_transformer, scaled_q_heads_of_a_slice_no_copy) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *bound = NULL, *plain = NULL, *scaled = NULL;
    tt_partition(ctx, MHA_BLOCK("q1"), WANT("dnnl.nn.softmax"), 5, &bound, &plain);
    tt_partition(ctx, MHA_BLOCK("R.divide(q1, R.const(2.8284271, \"float32\"))"), WANT("dnnl.nn.softmax"), 5, &bound, &scaled);
    cr_expect_eq(tt_reorders(scaled), tt_reorders(plain), "%u reorders with q scaled, %u without (ISA %s)", tt_reorders(scaled),
                 tt_reorders(plain), rt_dnnl_isa());
    cr_expect_eq(tt_prims(scaled, "eltwise") + tt_prims(scaled, "binary"), 0, "the scaling is a primitive of its own");
    ir_ctx_free(ctx);
    tt_case(MHA_BLOCK("R.divide(q1, R.const(2.8284271, \"float32\"))"), WANT("dnnl.nn.softmax"), 5);
}
#undef MHA_BLOCK
