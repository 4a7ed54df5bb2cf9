/* 3-D convolutions and pools on oneDNN (backends/dnnl/dnnl_op_conv.c, dnnl_op_elem.c) against
 * the reference kernels (runtime/kernels/kernels_conv3d.c), with dnnl_test_util.h's tolerance
 * (1e-4 absolute + 1e-4 relative: <= 3 * 27 * 8 products per output of values ~0.5); a
 * following bias add and relu must fold into the primitive as post-ops, and no primitive may
 * be on oneDNN's reference kernels. A video-net residual block (conv3d, bias, relu, conv3d,
 * bias, residual add, relu) must run its convolutions on the blocked / channels-last jit
 * kernels as 2-D ones do, neither on gemm nor on ref, with every post-op fused (with
 * dnnl.winograd=0: graft's 3-D Winograd, which takes such blocks otherwise, is
 * test_dnnl_wino.c's).
 * DepthToSpace (reshape -> permute_dims -> reshape) must land in dnnl whole, as one reorder. */
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/op.h"
#include "tests/dnnl/dnnl_test_util.h"

#define S(...) ((const int64_t[]){__VA_ARGS__})

static void conv_case(uint32_t seed, bool deconv, int64_t C, int64_t O, int64_t G, const int64_t *in, const int64_t *k,
                      const char *attrs, const int64_t *out, bool bias_relu) {
    dt_graph g;
    dt_init(&g, seed);
    int x = dt_input(&g, 5, S(1, C, in[0], in[1], in[2]));
    int w = deconv ? dt_const(&g, 5, S(C, O / G, k[0], k[1], k[2])) : dt_const(&g, 5, S(O, C / G, k[0], k[1], k[2]));
    const int64_t os[5] = {1, O, out[0], out[1], out[2]};
    int y = dt_op(&g, deconv ? "relax.nn.conv3d_transpose" : "relax.nn.conv3d", attrs, 2, IN(x, w), NULL, 5, os, NULL);
    if (bias_relu) {
        int b = dt_const(&g, 5, S(1, O, 1, 1, 1));
        y = dt_op(&g, "relax.add", NULL, 2, IN(y, b), NULL, 5, os, NULL);
        y = dt_op(&g, "relax.nn.relu", NULL, 1, IN(y), NULL, 5, os, NULL);
    }
    dt_head(&g, y);
    rt_dnnl_stats st;
    dt_stats_no_ref(&g, &st);
    if (bias_relu) cr_expect_eq(st.npostops, 2, "bias add and relu fold into the convolution (%u post-ops)", st.npostops);
    dt_check(&g);
    dt_free(&g);
}

Test(dnnl_vol, conv3d) {
    conv_case(1, false, 3, 8, 1, S(6, 7, 8), S(3, 3, 3), "{\"padding\": [1, 1, 1, 1, 1, 1]}", S(6, 7, 8), true);
    conv_case(2, false, 4, 6, 2, S(5, 9, 9), S(2, 3, 3),
              "{\"strides\": [1, 2, 2], \"padding\": [0, 1, 0, 1, 0, 1], \"dilation\": [2, 1, 1], \"groups\": 2}", S(4, 4, 4),
              false);
    conv_case(3, false, 2, 4, 1, S(4, 4, 4), S(1, 1, 1), NULL, S(4, 4, 4), true);
}

Test(dnnl_vol, conv3d_transpose) {
    conv_case(11, true, 4, 3, 1, S(3, 4, 5), S(3, 3, 3), "{\"strides\": [2, 2, 2], \"padding\": [1, 1, 1, 1, 1, 1]}",
              S(5, 7, 9), false);
    conv_case(12, true, 4, 6, 2, S(2, 3, 3), S(2, 2, 2),
              "{\"strides\": [2, 2, 2], \"output_padding\": [1, 0, 1], \"groups\": 2}", S(5, 6, 7), true);
}

/* The primitives of p that are convolutions: none on gemm or ref. */
static int jit_convs(dt_prepared *p) {
    int nconv = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p->state, i, &pi));
        if (strcmp(pi.kind, "convolution")) continue;
        nconv++;
        cr_expect(!strstr(pi.impl, "gemm") && strncmp(pi.impl, "ref", 3), "convolution %u on %s (ISA %s)", i, pi.impl,
                  rt_dnnl_isa());
    }
    return nconv;
}

Test(dnnl_vol, residual_block_on_jit) {
    static const int64_t C = 32;
    dt_graph g;
    dt_init(&g, 31);
    rt_dnnl_opts o = rt_dnnl_default_opts();
    o.winograd = false;
    g.opts = &o;
    const int64_t *os = S(1, C, 4, 10, 10);
    int x = dt_input(&g, 5, os), y = x;
    for (int i = 0; i < 2; i++) {
        int w = dt_const(&g, 5, S(C, C, 3, 3, 3)), b = dt_const(&g, 5, S(1, C, 1, 1, 1));
        y = dt_op(&g, "relax.nn.conv3d", "{\"padding\": [1, 1, 1, 1, 1, 1]}", 2, IN(y, w), NULL, 5, os, NULL);
        y = dt_op(&g, "relax.add", NULL, 2, IN(y, b), NULL, 5, os, NULL);
        if (i) y = dt_op(&g, "relax.add", NULL, 2, IN(y, x), NULL, 5, os, NULL);
        y = dt_op(&g, "relax.nn.relu", NULL, 1, IN(y), NULL, 5, os, NULL);
    }
    dt_head(&g, y);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    cr_expect_eq(jit_convs(&p), 2);
    cr_expect_eq(st.npostops, 5, "bias, relu, bias, residual add, relu fused (%u post-ops)", st.npostops);
    dt_release(&p);
    dt_check(&g);
    dt_free(&g);
}

/* A pool after a 3-D convolution reads the convolution's blocked / channels-last layout as it
 * is: the only reorders are the region input's and output's. */
Test(dnnl_vol, pool_after_conv_keeps_layout) {
    dt_graph g;
    dt_init(&g, 32);
    int x = dt_input(&g, 5, S(1, 16, 4, 8, 8)), w = dt_const(&g, 5, S(16, 16, 3, 3, 3));
    int y = dt_op(&g, "relax.nn.conv3d", "{\"padding\": [1, 1, 1, 1, 1, 1]}", 2, IN(x, w), NULL, 5, S(1, 16, 4, 8, 8), NULL);
    y = dt_op(&g, "relax.nn.relu", NULL, 1, IN(y), NULL, 5, S(1, 16, 4, 8, 8), NULL);
    for (int i = 0; i < 2; i++)
        y = dt_op(&g, i ? "relax.nn.avg_pool3d" : "relax.nn.max_pool3d", "{\"pool_size\": [2, 2, 2], \"strides\": [2, 2, 2]}",
                  1, IN(y), NULL, 5, i ? S(1, 16, 1, 2, 2) : S(1, 16, 2, 4, 4), NULL);
    dt_head(&g, y);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    cr_expect_eq(jit_convs(&p), 1);
    cr_expect_leq(st.nreorders, 2, "%u reorders", st.nreorders);
    dt_release(&p);
    dt_check(&g);
    dt_free(&g);
}

static void pool_case(uint32_t seed, const char *op, const int64_t *in, const char *attrs, const int64_t *out) {
    dt_graph g;
    dt_init(&g, seed);
    int x = dt_input(&g, 5, S(2, 5, in[0], in[1], in[2]));
    int y = dt_op(&g, op, attrs, 1, IN(x), NULL, 5, S(2, 5, out[0], out[1], out[2]), NULL);
    dt_head(&g, y);
    rt_dnnl_stats st;
    dt_stats_no_ref(&g, &st);
    dt_check(&g);
    dt_free(&g);
}

Test(dnnl_vol, pool3d) {
    pool_case(21, "relax.nn.max_pool3d", S(6, 6, 6), "{\"pool_size\": [2, 2, 2], \"strides\": [2, 2, 2]}", S(3, 3, 3));
    pool_case(22, "relax.nn.max_pool3d", S(5, 7, 6),
              "{\"pool_size\": [3, 3, 3], \"strides\": [2, 2, 2], \"padding\": [1, 1, 1, 1, 1, 1]}", S(3, 4, 3));
    pool_case(23, "relax.nn.avg_pool3d", S(5, 7, 6),
              "{\"pool_size\": [3, 2, 3], \"strides\": [2, 2, 1], \"padding\": [1, 0, 1, 1, 0, 1], \"count_include_pad\": true}",
              S(3, 3, 6));
    pool_case(24, "relax.nn.avg_pool3d", S(5, 7, 6),
              "{\"pool_size\": [3, 3, 3], \"strides\": [2, 2, 2], \"padding\": [1, 1, 1, 1, 1, 1]}", S(3, 4, 3));
    pool_case(25, "relax.nn.max_pool3d", S(5, 6, 7),
              "{\"pool_size\": [2, 2, 2], \"strides\": [2, 2, 2], \"ceil_mode\": true}", S(3, 3, 4));
}

/* DepthToSpace imports as reshape -> permute_dims -> reshape; the dnnl backend takes all three
 * (reshapes are views, the permute one reorder). */
Test(dnnl_vol, depth_to_space_in_dnnl) {
    static const char *const models[] = {"test_depthtospace_crd_mode_example", "test_depthtospace_example",
                                         "test_spacetodepth_example"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "/usr/share/libonnx-testdata/data/node/%s/model.onnx", models[i]);
        ir_ctx_t *ctx = ir_ctx_new();
        gr_diag d = {0};
        ir_module *m = NULL, *part = NULL;
        onnx_import_opts io = {0};
        cr_assert_eq(onnx_import_file(ctx, path, &io, &m, &d), GR_OK, "%s", d.msg);
        byoc_partition_opts po = {0};
        const char *be[1] = {"dnnl"};
        cr_assert_eq(byoc_partition(ctx, m, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
        const ir_func *f = ir_module_func(part, "main");
        const ir_seq *s = IR_AS(f->body, ir_seq);
        int host = 0;
        for (uint32_t b = 0; b < s->nblocks; b++)
            for (uint32_t k = 0; k < s->blocks[b]->n; k++) {
                const ir_expr *v = s->blocks[b]->bindings[k].value;
                host += v->kind == IR_CALL && IR_AS(v, ir_call)->callee->kind == IR_OP &&
                        !ir_is_op_call(v, "relax.call_dps_packed");
            }
        cr_expect_eq(host, 0, "%s: %d ops left on the host", models[i], host);
        ir_ctx_free(ctx);
    }
}
