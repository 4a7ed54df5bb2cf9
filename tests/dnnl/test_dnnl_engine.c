/* The oneDNN engine against the reference engine on the same JSON graphs (tolerance in
 * dnnl_test_util.h), plus fusion / planning checks and errors. */
#include <dirent.h>
#include <oneapi/dnnl/dnnl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include "dnnl_test_util.h"

#define CONV_ATTRS(s, p, d, g) \
    "{\"strides\":[" s "],\"padding\":[" p "],\"dilation\":[" d "],\"groups\":" g \
    ",\"data_layout\":\"NCHW\",\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}"

/* conv (strided, padded) + bias + relu: one primitive with the bias and one post-op */
Test(dnnl_engine, conv_bias_relu) {
    dt_graph g;
    dt_init(&g, 1);
    int x = dt_input(&g, 4, S4(1, 5, 13, 11));
    int w = dt_const(&g, 4, S4(16, 5, 3, 3));
    int b = dt_const(&g, 4, S4(1, 16, 1, 1));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("2, 2", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4, S4(1, 16, 7, 6), "conv1");
    int a = dt_op(&g, "relax.add", NULL, 2, IN(c, b), NULL, 4, S4(1, 16, 7, 6), "conv1_bias");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 4, S4(1, 16, 7, 6), "relu1");
    dt_head(&g, r);
    /* without a composite annotation a convolution gets no post-ops (the composite decides):
     * the bias add is its own binary primitive, which takes the relu */
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(st.npostops, 1);
    cr_expect_eq(st.nfused_nodes, 1);
    cr_expect_eq(st.ncomposites, 0);
    char posts[200];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, b, r);
    dt_composite(&g, "dnnl.conv2d_bias_relu", c, 3, IN(c, a, r), posts);
    dt_check(&g);
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(st.npostops, 2);
    cr_expect_eq(st.nfused_nodes, 2);
    cr_expect_eq(st.ncomposites, 1);
    dt_free(&g);
}

/* a malformed annotation fails prepare naming the region and the layer */
Test(dnnl_engine, bad_composite_annotation) {
    dt_graph g;
    dt_init(&g, 16);
    int x = dt_input(&g, 4, S4(1, 3, 5, 5));
    int w = dt_const(&g, 4, S4(4, 3, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(x, w), NULL, 4, S4(1, 4, 3, 3), "convA");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 4, 3, 3), "reluA");
    dt_head(&g, r);
    dt_composite(&g, "dnnl.conv2d_bias_relu", c, 2, IN(c, r), "[{\"out\":[99,0]}]");
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "test_region") && strstr(d.msg, "composite annotation"), "%s", d.msg);
    dt_free(&g);
}

/* depthwise, dilated, asymmetric padding + hardswish in the exporter's form */
Test(dnnl_engine, depthwise_dilated_hardswish) {
    dt_graph g;
    dt_init(&g, 2);
    int x = dt_input(&g, 4, S4(2, 8, 12, 12));
    int w = dt_const(&g, 4, S4(8, 1, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "2, 1, 2, 3", "2, 2", "8"), 2, IN(x, w), NULL, 4, S4(2, 8, 12, 12), NULL);
    int t3 = dt_scalar(&g, 3.f), z = dt_scalar(&g, 6.f);
    int a = dt_op(&g, "relax.add", NULL, 2, IN(c, t3), NULL, 4, S4(2, 8, 12, 12), NULL);
    int cl = dt_op(&g, "relax.clip", NULL, 1, IN(a), "[{\"float\":0.0},{\"float\":6.0}]", 4, S4(2, 8, 12, 12), NULL);
    int dv = dt_op(&g, "relax.divide", NULL, 2, IN(cl, z), NULL, 4, S4(2, 8, 12, 12), NULL);
    int m = dt_op(&g, "relax.multiply", NULL, 2, IN(c, dv), NULL, 4, S4(2, 8, 12, 12), NULL);
    dt_head(&g, m);
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", m);
    dt_composite(&g, "dnnl.conv2d_hardswish", c, 5, IN(c, a, cl, dv, m), posts);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(st.npostops, 1, "hardswish is one post-op, got %u", st.npostops);
    dt_free(&g);
}

/* grouped conv + x * hardsigmoid(x) (multiply, add, clip) + squeeze-excitation + residual */
Test(dnnl_engine, se_block_residual) {
    dt_graph g;
    dt_init(&g, 3);
    int x = dt_input(&g, 4, S4(1, 8, 9, 9));
    int w = dt_const(&g, 4, S4(8, 4, 3, 3));
    int b = dt_const(&g, 4, S4(1, 8, 1, 1));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "2"), 2, IN(x, w), NULL, 4, S4(1, 8, 9, 9), NULL);
    int cb = dt_op(&g, "relax.add", NULL, 2, IN(c, b), NULL, 4, S4(1, 8, 9, 9), NULL);
    int k6 = dt_scalar(&g, 1.f / 6.f), h = dt_scalar(&g, 0.5f);
    int m1 = dt_op(&g, "relax.multiply", NULL, 2, IN(cb, k6), NULL, 4, S4(1, 8, 9, 9), NULL);
    int a1 = dt_op(&g, "relax.add", NULL, 2, IN(m1, h), NULL, 4, S4(1, 8, 9, 9), NULL);
    int cl = dt_op(&g, "relax.clip", NULL, 1, IN(a1), "[{\"float\":0.0},{\"float\":1.0}]", 4, S4(1, 8, 9, 9), NULL);
    int hs = dt_op(&g, "relax.multiply", NULL, 2, IN(cl, cb), NULL, 4, S4(1, 8, 9, 9), NULL);
    /* SE: global pool -> conv 1x1 -> relu -> conv 1x1 -> hardsigmoid -> scale */
    int p = dt_op(&g, "relax.nn.adaptive_avg_pool2d", "{\"output_size\":[1,1],\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}", 1, IN(hs), NULL, 4, S4(1, 8, 1, 1), NULL);
    int w1 = dt_const(&g, 4, S4(4, 8, 1, 1)), w2 = dt_const(&g, 4, S4(8, 4, 1, 1));
    int s1 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(p, w1), NULL, 4, S4(1, 4, 1, 1), NULL);
    int r1 = dt_op(&g, "relax.nn.relu", NULL, 1, IN(s1), NULL, 4, S4(1, 4, 1, 1), NULL);
    int s2 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(r1, w2), NULL, 4, S4(1, 8, 1, 1), NULL);
    int k2 = dt_scalar(&g, 0.2f), h2 = dt_scalar(&g, 0.5f);
    int m2 = dt_op(&g, "relax.multiply", NULL, 2, IN(s2, k2), NULL, 4, S4(1, 8, 1, 1), NULL);
    int a2 = dt_op(&g, "relax.add", NULL, 2, IN(m2, h2), NULL, 4, S4(1, 8, 1, 1), NULL);
    int c2 = dt_op(&g, "relax.clip", NULL, 1, IN(a2), "[{\"float\":0.0},{\"float\":1.0}]", 4, S4(1, 8, 1, 1), NULL);
    int se = dt_op(&g, "relax.multiply", NULL, 2, IN(hs, c2), NULL, 4, S4(1, 8, 9, 9), NULL);
    int w3 = dt_const(&g, 4, S4(8, 8, 1, 1));
    int c3 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(se, w3), NULL, 4, S4(1, 8, 9, 9), NULL);
    int res = dt_op(&g, "relax.add", NULL, 2, IN(c3, x), NULL, 4, S4(1, 8, 9, 9), NULL);
    dt_head(&g, res);
    dt_head(&g, p);
    char posts[300];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", cb, b, hs);
    dt_composite(&g, "dnnl.conv2d_bias_hardswish", c, 6, IN(c, cb, m1, a1, cl, hs), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r1);
    dt_composite(&g, "dnnl.conv2d_relu", s1, 2, IN(s1, r1), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"mid\":[%d,0],\"alpha\":0.2,\"beta\":0.5}]", c2, a2);
    dt_composite(&g, "dnnl.conv2d_hardsigmoid", s2, 4, IN(s2, m2, a2, c2), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}]", res, x);
    dt_composite(&g, "dnnl.conv2d_add", c3, 2, IN(c3, res), posts);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_geq(st.nfused_nodes, 10, "fused %u", st.nfused_nodes);
    dt_free(&g);
}

/* conv2d_transpose (IOHW weights, stride 2, output padding) + bias + sigmoid; grouped */
Test(dnnl_engine, conv2d_transpose) {
    for (int grp = 1; grp <= 2; grp++) {
        dt_graph g;
        dt_init(&g, 4 + (uint32_t)grp);
        int x = dt_input(&g, 4, S4(1, 4, 5, 6));
        int w = dt_const(&g, 4, S4(4, 6 / grp, 3, 3));
        int b = dt_const(&g, 4, S4(1, 6, 1, 1));
        char attrs[400];
        snprintf(attrs, sizeof attrs,
                 "{\"strides\":[2,2],\"padding\":[1,1,1,1],\"output_padding\":[1,1],\"dilation\":[1,1],\"groups\":%d,"
                 "\"data_layout\":\"NCHW\",\"kernel_layout\":\"IOHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}",
                 grp);
        int c = dt_op(&g, "relax.nn.conv2d_transpose", attrs, 2, IN(x, w), NULL, 4, S4(1, 6, 10, 12), NULL);
        int a = dt_op(&g, "relax.add", NULL, 2, IN(c, b), NULL, 4, S4(1, 6, 10, 12), NULL);
        int s = dt_op(&g, "relax.sigmoid", NULL, 1, IN(a), NULL, 4, S4(1, 6, 10, 12), NULL);
        dt_head(&g, s);
        dt_check(&g);
        dt_free(&g);
    }
}

Test(dnnl_engine, conv1d) {
    dt_graph g;
    dt_init(&g, 7);
    int x = dt_input(&g, 3, S3(2, 6, 20));
    int w = dt_const(&g, 3, S3(4, 3, 5));
    int c = dt_op(&g, "relax.nn.conv1d",
                  "{\"strides\":[2],\"padding\":[2,1],\"dilation\":[1],\"groups\":2,\"data_layout\":\"NCW\",\"kernel_layout\":\"OIW\",\"out_layout\":\"NCW\"}",
                  2, IN(x, w), NULL, 3, S3(2, 4, 10), NULL);
    int t = dt_op(&g, "relax.tanh", NULL, 1, IN(c), NULL, 3, S3(2, 4, 10), NULL);
    dt_head(&g, t);
    dt_check(&g);
    dt_free(&g);
}

/* dense with constant weights + bias + gelu; batched matmul of two activations */
Test(dnnl_engine, matmul) {
    dt_graph g;
    dt_init(&g, 8);
    int x = dt_input(&g, 3, S3(2, 5, 24));
    int w = dt_const(&g, 2, S2(24, 12));
    int b = dt_const(&g, 1, S1(12));
    int mm = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x, w), NULL, 3, S3(2, 5, 12), NULL);
    int a = dt_op(&g, "relax.add", NULL, 2, IN(mm, b), NULL, 3, S3(2, 5, 12), NULL);
    int ge = dt_op(&g, "relax.nn.gelu", NULL, 1, IN(a), NULL, 3, S3(2, 5, 12), NULL);
    int y = dt_input(&g, 3, S3(2, 12, 7));
    int bm = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(ge, y), NULL, 3, S3(2, 5, 7), NULL);
    int sw = dt_op(&g, "relax.nn.silu", NULL, 1, IN(bm), NULL, 3, S3(2, 5, 7), NULL);
    dt_head(&g, sw);
    dt_check(&g);
    dt_free(&g);
}

/* Matmuls whose weights have no batch run as one GEMM over batch * rows (the primitive sees
 * 2-D views): sequence-first 128x1x32 . 32x48 with bias, gelu and a full residual; a 4-D
 * input with 3-D weights of batch 1 and a per-column multiply. A post-op operand varying along
 * the batch keeps the batched form. All against the reference engine. */
Test(dnnl_engine, matmul_collapse_rows) {
    dt_graph g;
    dt_init(&g, 31);
    int x = dt_input(&g, 3, S3(128, 1, 32)), r = dt_input(&g, 3, S3(128, 1, 48));
    int w = dt_const(&g, 2, S2(32, 48)), b = dt_const(&g, 1, S1(48));
    int mm = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x, w), NULL, 3, S3(128, 1, 48), NULL);
    int a = dt_op(&g, "relax.add", NULL, 2, IN(mm, b), NULL, 3, S3(128, 1, 48), NULL);
    int ge = dt_op(&g, "relax.nn.gelu", NULL, 1, IN(a), NULL, 3, S3(128, 1, 48), NULL);
    int res = dt_op(&g, "relax.add", NULL, 2, IN(ge, r), NULL, 3, S3(128, 1, 48), NULL);
    int x4 = dt_input(&g, 4, S4(2, 3, 5, 16)), w3 = dt_const(&g, 3, S3(1, 16, 8)), col = dt_const(&g, 1, S1(8));
    int m4 = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x4, w3), NULL, 4, S4(2, 3, 5, 8), NULL);
    int mu = dt_op(&g, "relax.multiply", NULL, 2, IN(m4, col), NULL, 4, S4(2, 3, 5, 8), NULL);
    int xb = dt_input(&g, 3, S3(3, 4, 16)), wb = dt_const(&g, 2, S2(16, 8)), per = dt_input(&g, 3, S3(3, 1, 8));
    int mb = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(xb, wb), NULL, 3, S3(3, 4, 8), NULL);
    int mp = dt_op(&g, "relax.multiply", NULL, 2, IN(mb, per), NULL, 3, S3(3, 4, 8), NULL);
    dt_head(&g, res);
    dt_head(&g, mu);
    dt_head(&g, mp);
    char posts[300];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]},{\"out\":[%d,0],\"src\":[%d,0]}]", a, b,
             ge, res, r);
    dt_composite(&g, "dnnl.matmul_bias_gelu_add", mm, 4, IN(mm, a, ge, res), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}]", mu, col);
    dt_composite(&g, "dnnl.matmul_mul", m4, 2, IN(m4, mu), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}]", mp, per);
    dt_composite(&g, "dnnl.matmul_mul", mb, 2, IN(mb, mp), posts);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(st.ncollapsed, 2, "matmuls collapsed to one GEMM: %u", st.ncollapsed);
    /* the collapsed products keep their 4 post-ops on every ISA; AVX2's gemm:jit takes the
     * per-batch multiply only as a primitive of its own */
    cr_expect_geq(st.npostops, 4, "post-ops: %u", st.npostops);
    dt_free(&g);
}

Test(dnnl_engine, pools) {
    dt_graph g;
    dt_init(&g, 9);
    int x = dt_input(&g, 4, S4(1, 6, 11, 10));
    int mp = dt_op(&g, "relax.nn.max_pool2d",
                   "{\"pool_size\":[3,3],\"strides\":[2,2],\"dilation\":[1,1],\"padding\":[1,1,1,1],\"ceil_mode\":false,\"count_include_pad\":false,\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}",
                   1, IN(x), NULL, 4, S4(1, 6, 6, 5), NULL);
    int ap = dt_op(&g, "relax.nn.avg_pool2d",
                   "{\"pool_size\":[2,3],\"strides\":[1,2],\"dilation\":[1,1],\"padding\":[0,1,0,1],\"ceil_mode\":false,\"count_include_pad\":false,\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}",
                   1, IN(x), NULL, 4, S4(1, 6, 10, 5), NULL);
    int ai = dt_op(&g, "relax.nn.avg_pool2d",
                   "{\"pool_size\":[3,3],\"strides\":[2,2],\"dilation\":[1,1],\"padding\":[1,1,1,1],\"ceil_mode\":false,\"count_include_pad\":true,\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}",
                   1, IN(x), NULL, 4, S4(1, 6, 6, 5), NULL);
    int gp = dt_op(&g, "relax.nn.adaptive_avg_pool2d", "{\"output_size\":[1,1],\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}", 1, IN(x), NULL, 4, S4(1, 6, 1, 1), NULL);
    dt_head(&g, mp);
    dt_head(&g, ap);
    dt_head(&g, ai);
    dt_head(&g, gp);
    dt_check(&g);
    dt_free(&g);
}

Test(dnnl_engine, softmax_layer_norm_batch_norm) {
    dt_graph g;
    dt_init(&g, 10);
    int x = dt_input_r(&g, 3, S3(2, 4, 16), 3.f, 0.f);
    int sm = dt_op(&g, "relax.nn.softmax", "{\"axis\":-1}", 1, IN(x), NULL, 3, S3(2, 4, 16), NULL);
    int ls = dt_op(&g, "relax.nn.log_softmax", "{\"axis\":1}", 1, IN(x), NULL, 3, S3(2, 4, 16), NULL);
    int ga = dt_const(&g, 1, S1(16)), be = dt_const(&g, 1, S1(16));
    int ln = dt_op(&g, "relax.nn.layer_norm", "{\"axes\":[-1],\"epsilon\":1e-5,\"center\":true,\"scale\":true}", 3, IN(x, ga, be), NULL, 3, S3(2, 4, 16), NULL);
    int y = dt_input(&g, 4, S4(1, 5, 4, 3));
    int g2 = dt_const(&g, 1, S1(5)), b2 = dt_const(&g, 1, S1(5)), mu = dt_const(&g, 1, S1(5));
    int var = dt_const_r(&g, 1, S1(5), 0.4f, 1.f);
    /* batch_norm has three outputs (data, mean, var); only the first is used */
    int bn = dt_op(&g, "relax.nn.batch_norm", "{\"axis\":1,\"epsilon\":1e-5,\"center\":true,\"scale\":true,\"momentum\":0.1}", 5, IN(y, g2, b2, mu, var), NULL, 4, S4(1, 5, 4, 3), NULL);
    json_t *at = json_object_get(json_array_get(g.nodes, (size_t)bn), "attrs");
    json_array_append_new(json_object_get(at, "shape"), dt_shape(1, S1(5)));
    json_array_append_new(json_object_get(at, "shape"), dt_shape(1, S1(5)));
    json_array_append_new(json_object_get(at, "dtype"), json_string("float32"));
    json_array_append_new(json_object_get(at, "dtype"), json_string("float32"));
    g.nrows += 2;
    json_array_set_new(g.rows, (size_t)bn + 1, json_integer(g.nrows));
    int rl = dt_op(&g, "relax.nn.relu", NULL, 1, IN(bn), NULL, 4, S4(1, 5, 4, 3), NULL);
    dt_head(&g, sm);
    dt_head(&g, ls);
    dt_head(&g, ln);
    dt_head(&g, rl);
    dt_check(&g);
    dt_free(&g);
}

/* broadcasting binaries, scalar ops, concat, resize, reductions, reshape, permute */
Test(dnnl_engine, elementwise_and_layout_ops) {
    dt_graph g;
    dt_init(&g, 11);
    int x = dt_input(&g, 4, S4(1, 4, 6, 6));
    int y = dt_input(&g, 4, S4(1, 4, 1, 6));
    int z = dt_input_r(&g, 2, S2(6, 6), 0.5f, 2.f);
    int sub = dt_op(&g, "relax.subtract", NULL, 2, IN(y, x), NULL, 4, S4(1, 4, 6, 6), NULL);
    int dv = dt_op(&g, "relax.divide", NULL, 2, IN(sub, z), NULL, 4, S4(1, 4, 6, 6), NULL);
    int two = dt_scalar(&g, 2.f);
    int pw = dt_op(&g, "relax.power", NULL, 2, IN(dv, two), NULL, 4, S4(1, 4, 6, 6), NULL);
    int mx = dt_op(&g, "relax.maximum", NULL, 2, IN(pw, x), NULL, 4, S4(1, 4, 6, 6), NULL);
    int cat = dt_op(&g, "relax.concat", "{\"axis\":1}", 2, IN(mx, x), "![{\"tuple\":[{\"in\":0},{\"in\":1}]}]", 4, S4(1, 8, 6, 6), NULL);
    int rz = dt_op(&g, "relax.image.resize2d",
                   "{\"roi\":[0.0,0.0,0.0,0.0],\"layout\":\"NCHW\",\"method\":\"nearest_neighbor\",\"coordinate_transformation_mode\":\"asymmetric\",\"rounding_method\":\"floor\",\"cubic_alpha\":-0.75,\"cubic_exclude\":0,\"extrapolation_value\":0.0,\"out_dtype\":\"void\"}",
                   1, IN(cat), "[{\"shape\":[12,12]}]", 4, S4(1, 8, 12, 12), NULL);
    int rl = dt_op(&g, "relax.image.resize2d",
                   "{\"roi\":[0.0,0.0,0.0,0.0],\"layout\":\"NCHW\",\"method\":\"linear\",\"coordinate_transformation_mode\":\"half_pixel\",\"rounding_method\":\"\",\"cubic_alpha\":-0.75,\"cubic_exclude\":0,\"extrapolation_value\":0.0,\"out_dtype\":\"void\"}",
                   1, IN(x), "[{\"shape\":[9,15]}]", 4, S4(1, 4, 9, 15), NULL);
    int mean = dt_op(&g, "relax.mean", "{\"axis\":[1,3],\"keepdims\":false}", 1, IN(rz), NULL, 2, S2(1, 12), NULL);
    int mk = dt_op(&g, "relax.max", "{\"axis\":[-1],\"keepdims\":true}", 1, IN(rl), NULL, 4, S4(1, 4, 9, 1), NULL);
    int rs = dt_op(&g, "relax.reshape", NULL, 1, IN(mk), "[{\"shape\":[4,9]}]", 2, S2(4, 9), NULL);
    int pm = dt_op(&g, "relax.permute_dims", "{\"axes\":[1,0]}", 1, IN(rs), NULL, 2, S2(9, 4), NULL);
    int ex = dt_op(&g, "relax.exp", NULL, 1, IN(pm), NULL, 2, S2(9, 4), NULL);
    dt_head(&g, mean);
    dt_head(&g, ex);
    dt_check(&g);
    dt_free(&g);
}

/* random shapes: conv + bias + relu6 / leaky relu / elu-free chains with a residual add */
Test(dnnl_engine, random_convs) {
    uint32_t seed = 12345;
    for (int it = 0; it < 8; it++) {
        dt_graph g;
        dt_init(&g, 100 + (uint32_t)it);
        seed = seed * 1103515245u + 12345u;
        int C = 1 + (int)(seed >> 16) % 12, O = 2 + (int)(seed >> 8) % 14, H = 5 + (int)(seed >> 4) % 9, K = 1 + 2 * (int)((seed >> 20) % 2);
        int S = 1 + (int)((seed >> 24) % 2), P = K / 2;
        int OH = (H + 2 * P - K) / S + 1;
        int x = dt_input(&g, 4, S4(1, C, H, H + 1));
        int OW = (H + 1 + 2 * P - K) / S + 1;
        int w = dt_const(&g, 4, S4(O, C, K, K));
        int b = dt_const(&g, 3, S3(O, 1, 1));
        char attrs[300];
        snprintf(attrs, sizeof attrs, CONV_ATTRS("%d, %d", "%d, %d, %d, %d", "1, 1", "1"), S, S, P, P, P, P);
        int c = dt_op(&g, "relax.nn.conv2d", attrs, 2, IN(x, w), NULL, 4, S4(1, O, OH, OW), NULL);
        int a = dt_op(&g, "relax.add", NULL, 2, IN(b, c), NULL, 4, S4(1, O, OH, OW), NULL);
        int act = it % 2 ? dt_op(&g, "relax.nn.relu6", NULL, 1, IN(a), NULL, 4, S4(1, O, OH, OW), NULL)
                         : dt_op(&g, "relax.nn.leakyrelu", "{\"alpha\":0.1}", 1, IN(a), NULL, 4, S4(1, O, OH, OW), NULL);
        int r = dt_input(&g, 4, S4(1, O, OH, OW));
        int res = dt_op(&g, "relax.add", NULL, 2, IN(act, r), NULL, 4, S4(1, O, OH, OW), NULL);
        dt_head(&g, res);
        dt_check(&g);
        dt_free(&g);
    }
}

/* an unsupported op fails prepare naming the region, the op and the layer */
Test(dnnl_engine, unsupported_op_error) {
    dt_graph g;
    dt_init(&g, 12);
    int x = dt_input(&g, 2, S2(3, 4));
    int c = dt_op(&g, "relax.cumsum", "{\"axis\":1}", 1, IN(x), NULL, 2, S2(3, 4), "my_layer");
    dt_head(&g, c);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "test_region") && strstr(d.msg, "my_layer"), "%s", d.msg);
    cr_expect_str_eq(d.layer, "my_layer");
    dt_free(&g);
}

/* buffers are shared once their lifetime ends */
Test(dnnl_engine, memory_reuse) {
    dt_graph g;
    dt_init(&g, 13);
    int x = dt_input(&g, 4, S4(1, 8, 16, 16));
    int cur = x;
    for (int i = 0; i < 6; i++) {
        int w = dt_const(&g, 4, S4(8, 8, 3, 3));
        cur = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(cur, w), NULL, 4, S4(1, 8, 16, 16), NULL);
        int cv = cur;
        int sg = dt_op(&g, "relax.sigmoid", NULL, 1, IN(cur), NULL, 4, S4(1, 8, 16, 16), NULL);
        cur = dt_op(&g, "relax.nn.relu", NULL, 1, IN(sg), NULL, 4, S4(1, 8, 16, 16), NULL);
        char posts[100];
        snprintf(posts, sizeof posts, "[{\"out\":[%d,0]},{\"out\":[%d,0]}]", sg, cur);
        dt_composite(&g, "dnnl.conv2d_sigmoid_relu", cv, 3, IN(cv, sg, cur), posts);
    }
    dt_head(&g, cur);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_lt(st.arena_bytes, st.naive_bytes, "arena %zu naive %zu", st.arena_bytes, st.naive_bytes);
    cr_expect_eq(st.npostops, 12);
    dt_free(&g);
}

/* layer norm as ONNX exporters decompose it: mean, subtract, power, mean, add eps, sqrt,
 * divide, scale, shift */
Test(dnnl_engine, layer_norm_decomposed) {
    dt_graph g;
    dt_init(&g, 14);
    int x = dt_input_r(&g, 3, S3(1, 40, 120), 2.f, 0.5f);
    int m = dt_op(&g, "relax.mean", "{\"axis\":[-1],\"keepdims\":true}", 1, IN(x), NULL, 3, S3(1, 40, 1), NULL);
    int d = dt_op(&g, "relax.subtract", NULL, 2, IN(x, m), NULL, 3, S3(1, 40, 120), NULL);
    int two = dt_scalar(&g, 2.f);
    int p = dt_op(&g, "relax.power", NULL, 2, IN(d, two), NULL, 3, S3(1, 40, 120), NULL);
    int v = dt_op(&g, "relax.mean", "{\"axis\":[-1],\"keepdims\":true}", 1, IN(p), NULL, 3, S3(1, 40, 1), NULL);
    int eps = dt_scalar(&g, 1e-5f);
    int ve = dt_op(&g, "relax.add", NULL, 2, IN(v, eps), NULL, 3, S3(1, 40, 1), NULL);
    int sd = dt_op(&g, "relax.sqrt", NULL, 1, IN(ve), NULL, 3, S3(1, 40, 1), NULL);
    int nrm = dt_op(&g, "relax.divide", NULL, 2, IN(d, sd), NULL, 3, S3(1, 40, 120), NULL);
    int ga = dt_const(&g, 1, S1(120)), be = dt_const(&g, 1, S1(120));
    int sc = dt_op(&g, "relax.multiply", NULL, 2, IN(nrm, ga), NULL, 3, S3(1, 40, 120), NULL);
    int sh = dt_op(&g, "relax.add", NULL, 2, IN(sc, be), NULL, 3, S3(1, 40, 120), NULL);
    dt_head(&g, sh);
    dt_check(&g);
    dt_free(&g);
}

/* an unfolded batch norm after a transposed convolution folds into its weights and bias */
Test(dnnl_engine, deconv_affine_fold) {
    dt_graph g;
    dt_init(&g, 15);
    int x = dt_input(&g, 4, S4(1, 6, 5, 5));
    int w = dt_const(&g, 4, S4(6, 4, 2, 2));
    int c = dt_op(&g, "relax.nn.conv2d_transpose",
                  "{\"strides\":[2,2],\"padding\":[0,0,0,0],\"output_padding\":[0,0],\"dilation\":[1,1],\"groups\":1,"
                  "\"data_layout\":\"NCHW\",\"kernel_layout\":\"IOHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}",
                  2, IN(x, w), NULL, 4, S4(1, 4, 10, 10), NULL);
    int mu = dt_const(&g, 3, S3(4, 1, 1)), sd = dt_const_r(&g, 3, S3(4, 1, 1), 0.3f, 1.f);
    int ga = dt_const(&g, 3, S3(4, 1, 1)), be = dt_const(&g, 3, S3(4, 1, 1));
    int a = dt_op(&g, "relax.subtract", NULL, 2, IN(c, mu), NULL, 4, S4(1, 4, 10, 10), NULL);
    int b = dt_op(&g, "relax.divide", NULL, 2, IN(a, sd), NULL, 4, S4(1, 4, 10, 10), NULL);
    int m = dt_op(&g, "relax.multiply", NULL, 2, IN(b, ga), NULL, 4, S4(1, 4, 10, 10), NULL);
    int ad = dt_op(&g, "relax.add", NULL, 2, IN(m, be), NULL, 4, S4(1, 4, 10, 10), NULL);
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(ad), NULL, 4, S4(1, 4, 10, 10), NULL);
    dt_head(&g, r);
    char posts[400];
    snprintf(posts, sizeof posts,
             "[{\"out\":[%d,0],\"steps\":[{\"op\":\"subtract\",\"src\":[%d,0],\"out\":[%d,0]},"
             "{\"op\":\"divide\",\"src\":[%d,0],\"out\":[%d,0]},{\"op\":\"multiply\",\"src\":[%d,0],\"out\":[%d,0]},"
             "{\"op\":\"add\",\"src\":[%d,0],\"out\":[%d,0]}]},{\"out\":[%d,0]}]",
             ad, mu, a, sd, b, ga, m, be, ad, r);
    dt_composite(&g, "dnnl.conv2d_transpose_affine_relu", c, 6, IN(c, a, b, m, ad, r), posts);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    cr_expect_leq(st.nprims, 4, "at most reorder in, 1x1 conv, interleave, reorder out: got %u", st.nprims);
    cr_expect_eq(st.nfused_nodes, 5);
    dt_free(&g);
}

/* composite names: anchor and posts by whole words (relu vs relu6, gelu vs gelu_tanh) */
Test(dnnl_engine, composite_names) {
    rt_dnnl_composite c;
    char buf[160];
    cr_assert(rt_dnnl_composite_parse("dnnl.conv2d_transpose_bias_affine_leaky_relu_add", &c));
    cr_expect_eq(c.anchor, RT_DNNL_CONV2D_TRANSPOSE);
    cr_expect_eq(c.npost, 4);
    cr_expect_eq(c.post[0], RT_DNNL_BIAS);
    cr_expect_eq(c.post[1], RT_DNNL_AFFINE);
    cr_expect_eq(c.post[2], RT_DNNL_LEAKY_RELU);
    cr_expect_eq(c.post[3], RT_DNNL_ADD);
    cr_expect_str_eq(rt_dnnl_composite_name(&c, buf, sizeof buf), "dnnl.conv2d_transpose_bias_affine_leaky_relu_add");
    cr_assert(rt_dnnl_composite_parse("dnnl.conv1d_relu6_mul_gelu_tanh", &c));
    cr_expect(c.post[0] == RT_DNNL_RELU6 && c.post[1] == RT_DNNL_MUL && c.post[2] == RT_DNNL_GELU_TANH && c.npost == 3);
    cr_assert(rt_dnnl_composite_parse("dnnl.dense", &c));
    cr_expect(c.anchor == RT_DNNL_DENSE && c.npost == 0);
    cr_expect_not(rt_dnnl_composite_parse("dnnl.conv2d", &c), "a bare convolution is the single-op pattern");
    cr_expect_not(rt_dnnl_composite_parse("dnnl.nn.conv2d", &c));
    cr_expect_not(rt_dnnl_composite_parse("dnnl.conv2d_relux", &c));
    cr_expect_not(rt_dnnl_composite_parse("dnnl.conv2d_bias_", &c));
    cr_expect_not(rt_dnnl_composite_parse("json.conv2d_bias", &c));
    cr_expect_not(rt_dnnl_composite_parse(NULL, &c));
    cr_expect_eq(rt_dnnl_post_eltwise(RT_DNNL_HARDSIGMOID), 2);
    cr_expect_eq(rt_dnnl_post_eltwise(RT_DNNL_BIAS), 0);
}

/* the region's primitives: each names its oneDNN implementation and kind, and computes frontend
 * layers of the graph (a reorder: its consumer's) */
static void check_prims(dt_prepared *p, const char *const *layers, int nlayers) {
    rt_dnnl_stats st;
    rt_dnnl_get_stats(p->state, &st);
    cr_expect_eq(rt_dnnl_num_prims(p->state), st.nprims);
    uint32_t nref = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi = dt_prim_in(p, i, layers, (size_t)nlayers);
        cr_expect(pi.impl && *pi.impl && pi.kind && *pi.kind, "primitive %u without implementation / kind", i);
        bool ref = !strncmp(pi.impl, "ref", 3);
        nref += ref;
        cr_expect(!ref || (pi.ref_reason && *pi.ref_reason), "primitive %u on %s without a reason", i, pi.impl);
    }
    cr_expect_eq(nref, st.nref);
    cr_expect(!rt_dnnl_prim(p->state, rt_dnnl_num_prims(p->state), &(rt_dnnl_prim_info){0}));
}

/* a squeeze-excitation block: the conv output (blocked: nChw8c on AVX2, nChw16c / nhwc on
 * AVX-512, as oneDNN picks) times a per-channel gate computed at run time, and times a
 * per-channel constant. oneDNN's jit binary wants the broadcast operand in src0's blocking;
 * plain, it fell to ref:any on AVX2. Nothing runs on ref, whatever the ISA. */
Test(dnnl_engine, squeeze_excitation_no_ref) {
    dt_graph g;
    dt_init(&g, 17);
    int x = dt_input(&g, 4, S4(1, 24, 20, 20));
    int w = dt_const(&g, 4, S4(24, 24, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4, S4(1, 24, 20, 20), "conv");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 24, 20, 20), "relu");
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
    dt_composite(&g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
    int pool = dt_op(&g, "relax.nn.adaptive_avg_pool2d", "{\"output_size\":[1,1],\"layout\":\"NCHW\"}", 1, IN(r), NULL, 4,
                     S4(1, 24, 1, 1), "pool");
    int w2 = dt_const(&g, 4, S4(24, 24, 1, 1));
    int q = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(pool, w2), NULL, 4, S4(1, 24, 1, 1),
                  "squeeze");
    int sg = dt_op(&g, "relax.sigmoid", NULL, 1, IN(q), NULL, 4, S4(1, 24, 1, 1), "gate");
    int m = dt_op(&g, "relax.multiply", NULL, 2, IN(r, sg), NULL, 4, S4(1, 24, 20, 20), "excite");
    int k = dt_const(&g, 4, S4(1, 24, 1, 1));
    int m2 = dt_op(&g, "relax.multiply", NULL, 2, IN(m, k), NULL, 4, S4(1, 24, 20, 20), "scale");
    int x2 = dt_op(&g, "relax.sigmoid", NULL, 1, IN(m2), NULL, 4, S4(1, 24, 20, 20), "act");
    int w3 = dt_const(&g, 4, S4(60, 24, 1, 1));
    int c3 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(x2, w3), NULL, 4, S4(1, 60, 20, 20),
                   "expand");
    /* 60 channels: zero-padded blocks, which oneDNN's jit eltwise rejects for sigmoid */
    int s3 = dt_op(&g, "relax.sigmoid", NULL, 1, IN(c3), NULL, 4, S4(1, 60, 20, 20), "act2");
    int pool2 = dt_op(&g, "relax.nn.max_pool2d",
                      "{\"pool_size\":[2,2],\"strides\":[2,2],\"padding\":[0,0,0,0],\"dilation\":[1,1],\"layout\":\"NCHW\"}", 1,
                      IN(s3), NULL, 4, S4(1, 60, 10, 10), "pool2");
    dt_head(&g, pool2);
    dt_check(&g);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    const char *layers[] = {"conv", "relu", "pool", "squeeze", "gate", "excite", "scale", "act", "expand", "act2", "pool2"};
    check_prims(&p, layers, 11);
    dt_release(&p);
    dt_free(&g);
}

/* issue 18: x op x with a declared output shape other than x's is refused at prepare (it wrote
 * 91 floats into the 1-float output): by the operand contract, which names the layer */
Test(dnnl_engine, x_op_x_declared_shape) {
    dt_graph g;
    dt_init(&g, 18);
    int x = dt_input(&g, 2, S2(1, 91));
    int a = dt_op(&g, "relax.add", NULL, 2, IN(x, x), NULL, 2, S2(1, 1), "twice");
    dt_head(&g, a);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "operand contract") && strstr(d.msg, "declares (1, 1)") && strstr(d.msg, "twice"), "%s", d.msg);
    dt_free(&g);
    /* the same with a unary and an x * x feeding it: each node's output is checked */
    dt_init(&g, 18);
    x = dt_input(&g, 2, S2(1, 91));
    a = dt_op(&g, "relax.multiply", NULL, 2, IN(x, x), NULL, 2, S2(1, 91), "square");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a), NULL, 2, S2(91, 1), "relu");
    dt_head(&g, r);
    gr_diag_clear(&d);
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "operand contract") && strstr(d.msg, "declares (91, 1)") && strstr(d.msg, "relu"), "%s", d.msg);
    dt_free(&g);
}

/* A composite's post-op node declared other than float32 is refused at prepare (by the operand
 * contract: relu of float32 is float32): the fused primitive writes float32 into the node's
 * buffer (fuzz_json_graph: a float16 relu of a conv2d_relu composite got 256 bytes written into
 * its 128) */
Test(dnnl_engine, composite_post_declared_dtype) {
    dt_graph g;
    dt_init(&g, 19);
    int x = dt_input(&g, 4, S4(1, 4, 8, 8));
    int w = dt_const(&g, 4, S4(4, 4, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(x, w), NULL, 4,
                  S4(1, 4, 6, 6), "conv1");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 4, 6, 6), "relu1");
    dt_head(&g, r);
    char posts[64];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
    dt_composite(&g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
    json_t *attrs = json_object_get(json_array_get(g.nodes, (size_t)r), "attrs");
    json_array_set_new(json_object_get(attrs, "dtype"), 0, json_string("float16"));
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "operand contract") && strstr(d.msg, "float16") && strstr(d.msg, "relu1"), "%s", d.msg);
    dt_free(&g);
}

/* the ISA in use is reported, and its channel block is the one of oneDNN's blocked layouts */
Test(dnnl_engine, isa) {
    const char *isa = rt_dnnl_isa();
    int blk = rt_dnnl_channel_block();
    cr_expect(!strncmp(isa, "avx", 3) || !strcmp(isa, "sse41"), "%s", isa);
    cr_expect_eq(blk, !strncmp(isa, "avx512", 6) ? 16 : 8, "%s: %d", isa, blk);
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    if (cap && !strcmp(cap, "AVX2")) cr_expect(strncmp(isa, "avx512", 6), "capped to AVX2, got %s", isa);
}

/* x - mean(x, -1) on channels-last data (ConvNeXt's layer norm, exported decomposed) and a
 * concat of sources in different layouts (ShuffleNet): no jit kernel takes the last-axis
 * broadcast or the mixed concat as they come (ref:any, ~100 ms a layer on ConvNeXt); the engine
 * finds layouts that have one */
Test(dnnl_engine, last_axis_broadcast_and_mixed_concat_no_ref) {
    dt_graph g;
    dt_init(&g, 19);
    int x = dt_input_r(&g, 4, S4(1, 14, 14, 24), 2.f, 0.5f);
    int m = dt_op(&g, "relax.mean", "{\"axis\":[-1],\"keepdims\":true}", 1, IN(x), NULL, 4, S4(1, 14, 14, 1), "mean");
    int d = dt_op(&g, "relax.subtract", NULL, 2, IN(x, m), NULL, 4, S4(1, 14, 14, 24), "sub");
    int s2 = dt_op(&g, "relax.multiply", NULL, 2, IN(d, d), NULL, 4, S4(1, 14, 14, 24), "square");
    int v = dt_op(&g, "relax.mean", "{\"axis\":[-1],\"keepdims\":true}", 1, IN(s2), NULL, 4, S4(1, 14, 14, 1), "var");
    int q = dt_op(&g, "relax.sqrt", NULL, 1, IN(v), NULL, 4, S4(1, 14, 14, 1), "std");
    int nrm = dt_op(&g, "relax.divide", NULL, 2, IN(d, q), NULL, 4, S4(1, 14, 14, 24), "div");
    /* as NCHW [1, 14, 14, 24]: a conv (blocked / channels-last output) concatenated with the
     * plain normalized tensor */
    int w = dt_const(&g, 4, S4(12, 14, 1, 1));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(nrm, w), NULL, 4, S4(1, 12, 14, 24),
                  "conv");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 12, 14, 24), "relu");
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
    dt_composite(&g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
    int cat = dt_op(&g, "relax.concat", "{\"axis\":1}", 2, IN(r, nrm), "![{\"tuple\":[{\"in\":0},{\"in\":1}]}]", 4, S4(1, 26, 14, 24), "cat");
    int sg = dt_op(&g, "relax.sigmoid", NULL, 1, IN(cat), NULL, 4, S4(1, 26, 14, 24), "act");
    dt_head(&g, sg);
    dt_check(&g);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    const char *layers[] = {"mean", "sub", "square", "var", "std", "div", "conv", "relu", "cat", "act"};
    check_prims(&p, layers, 10);
    dt_release(&p);
    dt_free(&g);
}

/* ShuffleNet v2's unit: split the channels in two (strided_slice), a 1x1 conv + relu on one
 * half, concat, channel shuffle (reshape, permute_dims, reshape). The halves stay views (the
 * conv and the shuffle reorder from them), and concat + shuffle run as one reorder per source
 * straight into its interleaved channels: no concat primitive, no copy of the slices, two
 * reorders after the conv (at most three in all, with the conv's input) */
Test(dnnl_engine, channel_shuffle_unit) {
    dt_graph g;
    dt_init(&g, 20);
    int x = dt_input(&g, 4, S4(1, 16, 6, 5));
    int h1 = dt_op(&g, "relax.strided_slice", NULL, 1, IN(x), "[{\"tuple\":[{\"int\":1}]},{\"tuple\":[{\"int\":0}]},{\"tuple\":[{\"int\":8}]}]",
                   4, S4(1, 8, 6, 5), "slice0");
    int h2 = dt_op(&g, "relax.strided_slice", NULL, 1, IN(x), "[{\"tuple\":[{\"int\":1}]},{\"tuple\":[{\"int\":8}]},{\"tuple\":[{\"int\":16}]}]",
                   4, S4(1, 8, 6, 5), "slice1");
    int w = dt_const(&g, 4, S4(8, 8, 1, 1));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(h2, w), NULL, 4, S4(1, 8, 6, 5), "conv");
    int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 8, 6, 5), "relu");
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
    dt_composite(&g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
    int cat = dt_op(&g, "relax.concat", "{\"axis\":1}", 2, IN(h1, r), "![{\"tuple\":[{\"in\":0},{\"in\":1}]}]", 4, S4(1, 16, 6, 5), "cat");
    int64_t s5[5] = {1, 2, 8, 6, 5}, p5[5] = {1, 8, 2, 6, 5};
    int r1 = dt_op(&g, "relax.reshape", NULL, 1, IN(cat), "[{\"shape\":[1,2,8,6,5]}]", 5, s5, "view");
    int pm = dt_op(&g, "relax.permute_dims", "{\"axes\":[0,2,1,3,4]}", 1, IN(r1), NULL, 5, p5, "transpose");
    int r2 = dt_op(&g, "relax.reshape", NULL, 1, IN(pm), "[{\"shape\":[1,16,6,5]}]", 4, S4(1, 16, 6, 5), "view2");
    int sg = dt_op(&g, "relax.sigmoid", NULL, 1, IN(r2), NULL, 4, S4(1, 16, 6, 5), "act");
    dt_head(&g, sg);
    dt_check(&g);
    dt_prepared p;
    rt_dnnl_stats st;
    dt_prepare_no_ref(&g, &p, &st);
    uint32_t nconcat = 0, nreorder = 0;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p.state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p.state, i, &pi));
        nconcat += !strcmp(pi.kind, "concat");
        nreorder += !strcmp(pi.kind, "reorder");
    }
    cr_expect_eq(nconcat, 0, "the shuffle's concat is its reorders");
    cr_expect_leq(nreorder, 3, "conv input, two shuffle reorders: got %u", nreorder);
    cr_expect_geq(st.nfused_nodes, 3, "reshape, permute, reshape folded: %u", st.nfused_nodes);
    dt_release(&p);
    dt_free(&g);
}

/* The oneDNN team is pinned one thread per CPU (backends/dnnl/dnnl_threads.c): after a region ran,
 * the calling thread has its own CPU mask back, and with two or more CPUs some worker of the
 * team is pinned to a single CPU. */
static int single_cpu_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    cr_assert_not_null(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "Cpus_allowed_list:", 18)) n += !strpbrk(line + 18, ",-");
        if (f) fclose(f);
    }
    closedir(dir);
    return n;
}

Test(dnnl_engine, team_pinned_caller_mask_restored) {
    cpu_set_t before, after;
    cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
    dt_graph g;
    dt_init(&g, 5);
    /* tensors of 1 MiB: not a "small" region, so the whole team runs it */
    int x = dt_input(&g, 4, S4(1, 16, 128, 128));
    int w = dt_const(&g, 4, S4(16, 16, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4,
                  S4(1, 16, 128, 128), "conv1");
    dt_head(&g, c);
    dt_check(&g);
    dt_free(&g);
    cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
    cr_expect(CPU_EQUAL(&before, &after), "the caller's CPU mask changed after the run");
    /* oneDNN on OpenMP (Debian's) with two or more CPUs: the team has a pinned worker */
    if (CPU_COUNT(&before) >= 2 && rt_dnnl_threads(NULL) >= 2 && dlsym(RTLD_DEFAULT, "GOMP_parallel"))
        cr_expect_geq(single_cpu_threads(), 1, "no thread of the oneDNN team is pinned");
}

/* dnnl.transpose_weights (default on): where oneDNN runs the matmul on gemm:jit (AVX2) on an
 * AMD CPU, the constant weights of a widening product (N > K) with few rows get a transposed
 * copy (off, they are read in place) and the same results (dt_check against the reference
 * engine); a narrowing one keeps its weights in place either way; on other CPUs, and where
 * brgemm runs it (AVX-512), the option changes nothing. */
static size_t tw_weight_bytes(const rt_dnnl_opts *o, int64_t k, int64_t n) {
    dt_graph g;
    dt_init(&g, 9);
    g.opts = o;
    int x = dt_input(&g, 2, S2(49, k));
    int w = dt_const(&g, 2, S2(k, n));
    int m = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x, w), NULL, 2, S2(49, n), "fc1");
    dt_head(&g, m);
    dt_check(&g);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s", d.msg);
    dt_free(&g);
    return st.weight_bytes;
}

Test(dnnl_engine, transpose_weights_option) {
    rt_dnnl_opts off = rt_dnnl_default_opts();
    cr_expect(off.transpose_weights, "on by default");
    off.transpose_weights = false;
    size_t w_off = tw_weight_bytes(&off, 96, 384), w_on = tw_weight_bytes(NULL, 96, 384);
    size_t n_off = tw_weight_bytes(&off, 384, 96), n_on = tw_weight_bytes(NULL, 384, 96);
    __builtin_cpu_init();
    if (!strcmp(rt_dnnl_isa(), "avx2") && __builtin_cpu_is("amd")) {
        cr_expect_eq(w_off, 0, "off: gemm:jit reads the weights in place, got %zu bytes", w_off);
        cr_expect_eq(w_on, (size_t)96 * 384 * 4, "on, widening, gemm:jit: one transposed copy, got %zu", w_on);
        cr_expect_eq(n_on, 0, "on, narrowing: the weights stay in place, got %zu bytes", n_on);
    } else {
        cr_expect_eq(w_on, w_off, "brgemm picks its own layout: the option changes nothing");
    }
    cr_expect_eq(n_on, n_off, "a narrowing product is not transposed");
}

/* Constant ownership (runtime/json/json_runtime.h): a graph owned by a module is prepared once, and
 * the engine lets go of every constant it made its own copy of (the convolution's reordered
 * weights) while it keeps a reference to each constant its primitives read in place. Here the
 * test holds the only other reference: a released constant is back to one reference, a held
 * one at two; the graph references none; the stats account for every byte; the results match
 * the reference engine, twice (buffers reused), and a second prepare of the same graph fails
 * with a message instead of reading freed data. */
Test(dnnl_engine, consts_released_after_prepare) {
    dt_graph g;
    dt_init(&g, 21);
    int x = dt_input(&g, 4, S4(1, 16, 14, 14));
    int w = dt_const(&g, 4, S4(32, 16, 3, 3));
    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4,
                  S4(1, 32, 14, 14), "conv");
    int sh = dt_const(&g, 4, S4(1, 32, 1, 1));
    int a = dt_op(&g, "relax.add", NULL, 2, IN(c, sh), NULL, 4, S4(1, 32, 14, 14), "shift");
    dt_head(&g, a);
    int x2 = dt_input(&g, 2, S2(49, 96));
    int w2 = dt_const(&g, 2, S2(96, 384));
    int m = dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(x2, w2), NULL, 2, S2(49, 384), "fc");
    dt_head(&g, m);
    rt_tensor *ref[DT_MAX] = {0};
    gr_diag d = {0};
    cr_assert_eq(dt_run(&g, &rt_json_reference_engine, ref, &d), GR_OK, "%s", d.msg);

    char *text = dt_text(&g);
    rt_json_graph *gr = NULL;
    cr_assert_eq(rt_json_graph_load("test_region", text, strlen(text), &gr, &d), GR_OK, "%s", d.msg);
    free(text);
    cr_assert_eq(rt_json_graph_init(gr, g.consts, (uint32_t)g.nconsts, &d), GR_OK, "%s", d.msg);
    rt_module *mod = rt_json_module_new("test", &rt_dnnl_engine, NULL, &gr, 1);
    size_t total = rt_json_graph_const_bytes(gr);
    cr_assert_eq(rt_json_module_prepare(mod, &d), GR_OK, "%s", d.msg);
    rt_dnnl_stats st;
    rt_dnnl_get_stats(rt_json_module_state(mod, 0), &st);
    cr_expect_eq(rt_json_graph_const_bytes(gr), 0, "the graph still references %zu constant bytes",
                 rt_json_graph_const_bytes(gr));
    size_t held = 0;
    for (int i = 0; i < g.nconsts; i++) {
        int32_t refs = atomic_load(&g.consts[i]->obj.refcount);
        cr_expect(refs == 1 || refs == 2, "constant %d: %d references", i, refs);
        if (refs == 2) held += rt_tensor_nbytes(g.consts[i]);
    }
    cr_expect_eq(atomic_load(&g.consts[0]->obj.refcount), 1, "the convolution's weights (reordered) are kept");
    cr_expect_eq(held, st.const_bytes, "held %zu bytes, stats say %zu", held, st.const_bytes);
    cr_expect_eq(st.released_bytes + st.const_bytes, total, "released %zu + held %zu of %zu bytes", st.released_bytes,
                 st.const_bytes, total);
    cr_expect_geq(st.released_bytes, (size_t)32 * 16 * 9 * 4, "the conv weights were released");

    DLTensor *args[4] = {&g.inputs[0]->dl, &g.inputs[1]->dl, NULL, NULL};
    rt_tensor *out[2];
    for (int h = 0; h < 2; h++) {
        out[h] = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, g.out_nd[h], g.out_shapes[h]);
        args[2 + h] = &out[h]->dl;
    }
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(rt_module_call(mod, "test_region", args, 2, 2, &d), GR_OK, "%s", d.msg);
        for (int h = 0; h < 2; h++)
            tc_expect_tensor(out[h], ref[h], DT_CMP, "run %d head %d: dnnl against the reference", run, h);
    }
    void *again = NULL;
    gr_status st2 = rt_dnnl_engine.prepare(gr, NULL, &again, &d);
    cr_expect_neq(st2, GR_OK, "a second prepare of a graph whose constants were released");
    cr_expect(strstr(d.msg, "released") != NULL, "%s", d.msg);
    for (int h = 0; h < 2; h++) {
        rt_tensor_release(out[h]);
        rt_tensor_release(ref[h]);
    }
    rt_module_release(mod);
    dt_free(&g);
}

/* ConvNeXt's block: depthwise 7x7 conv + bias (NCHW), permute to NHWC, layer norm over the
 * channels, linear + GELU, linear, permute back, per-channel layer scale, residual add; two
 * blocks in a row. The layout is planned for the permutes: the depthwise conv writes
 * channels-last, so the permute to NHWC is a view of it, and the permute back is a
 * channels-last view of the plain linear output, which the layer scale and the residual add
 * read and write as they are, and the next block's conv reads: no permute copies anything
 * (four views), the region's only reorders are its input's into the first conv's layout and,
 * possibly, its output's into the plain head. dnnl.no_layout_plan gives the old copies back.
 * Both against the reference engine; holds whatever the ISA (oneDNN's jit depthwise conv takes
 * channels-last on AVX2 and AVX-512). */
static int convnext_block(dt_graph *g, int x, int C, int H, int blk) {
    char l[8][24];
    const char *what[8] = {"dwconv", "dwbias", "perm", "norm", "fc1", "fc2", "unperm", "scale"};
    for (int i = 0; i < 8; i++) snprintf(l[i], sizeof l[i], "b%d.%s", blk, what[i]);
    int w = dt_const(g, 4, S4(C, 1, 7, 7)), b = dt_const(g, 4, S4(1, C, 1, 1));
    int c = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "3, 3, 3, 3", "1, 1", "32"), 2, IN(x, w), NULL, 4, S4(1, C, H, H), l[0]);
    int a = dt_op(g, "relax.add", NULL, 2, IN(c, b), NULL, 4, S4(1, C, H, H), l[1]);
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]}]", a, b);
    dt_composite(g, "dnnl.conv2d_bias", c, 2, IN(c, a), posts);
    int p = dt_op(g, "relax.permute_dims", "{\"axes\":[0,2,3,1]}", 1, IN(a), NULL, 4, S4(1, H, H, C), l[2]);
    int ga = dt_const(g, 1, S1(C)), be = dt_const(g, 1, S1(C));
    int ln = dt_op(g, "relax.nn.layer_norm", "{\"axes\":[-1],\"epsilon\":1e-6,\"center\":true,\"scale\":true}", 3, IN(p, ga, be), NULL,
                   4, S4(1, H, H, C), l[3]);
    int w1 = dt_const(g, 2, S2(C, 4 * C)), w2 = dt_const(g, 2, S2(4 * C, C));
    int m1 = dt_op(g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(ln, w1), NULL, 4, S4(1, H, H, 4 * C), l[4]);
    int ge = dt_op(g, "relax.nn.gelu", NULL, 1, IN(m1), NULL, 4, S4(1, H, H, 4 * C), l[4]);
    int m2 = dt_op(g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(ge, w2), NULL, 4, S4(1, H, H, C), l[5]);
    int q = dt_op(g, "relax.permute_dims", "{\"axes\":[0,3,1,2]}", 1, IN(m2), NULL, 4, S4(1, C, H, H), l[6]);
    int ls = dt_const(g, 3, S3(C, 1, 1));
    int s = dt_op(g, "relax.multiply", NULL, 2, IN(q, ls), NULL, 4, S4(1, C, H, H), l[7]);
    return dt_op(g, "relax.add", NULL, 2, IN(s, x), NULL, 4, S4(1, C, H, H), l[7]);
}

Test(dnnl_engine, convnext_permutes_are_views) {
    rt_dnnl_opts off = rt_dnnl_default_opts();
    off.no_layout_plan = true;
    uint32_t nreorders[2], nviews[2];
    for (int k = 0; k < 2; k++) {
        dt_graph g;
        dt_init(&g, 21);
        g.opts = k ? &off : NULL;
        int x = dt_input(&g, 4, S4(1, 32, 14, 14));
        int y = convnext_block(&g, convnext_block(&g, x, 32, 14, 0), 32, 14, 1);
        dt_head(&g, y);
        dt_check(&g);
        dt_prepared p;
        rt_dnnl_stats st;
        dt_prepare_no_ref(&g, &p, &st);
        nreorders[k] = st.nreorders;
        nviews[k] = st.nviews;
        /* no reorder serves a permute (a reorder carries the layers of the node it feeds) */
        for (uint32_t i = 0; !k && i < rt_dnnl_num_prims(p.state); i++) {
            rt_dnnl_prim_info pi;
            cr_assert(rt_dnnl_prim(p.state, i, &pi));
            for (uint32_t j = 0; j < pi.nlayers; j++)
                cr_expect(!strstr(pi.layers[j], "perm"), "primitive %u (%s %s) computes permute '%s' (ISA %s)", i, pi.kind,
                          pi.impl, pi.layers[j], rt_dnnl_isa());
        }
        dt_release(&p);
        dt_free(&g);
    }
    cr_expect_eq(nviews[0], 4, "every permute a view: %u", nviews[0]);
    cr_expect_leq(nreorders[0], 2, "the input's and the head's reorders at most: %u (ISA %s)", nreorders[0], rt_dnnl_isa());
    cr_expect_eq(nviews[1], 0, "dnnl.no_layout_plan: no views");
    cr_expect_geq(nreorders[1], nreorders[0] + 4, "dnnl.no_layout_plan: a copy per permute: %u vs %u", nreorders[1],
                  nreorders[0]);
}

/* A residual added as a sum post-op is accumulated in place when nothing reads it afterwards:
 * three ResNet blocks (conv + relu, conv + residual add, relu). Block 1's residual is the
 * region input, seen through its reordered copy (in place on that copy, which no later
 * primitive takes for the input any more); block 2's is block 1's output at its last use
 * (in place); block 3's is still read after the block (by the final add): copied. So two
 * copies fewer than with dnnl.no_layout_plan, the same results as the reference engine, and
 * nothing overwritten that is read later (the final add would see it). */
static int resnet_block(dt_graph *g, int x, int C, int H, int blk) {
    char l[3][16];
    for (int i = 0; i < 3; i++) snprintf(l[i], sizeof l[i], "b%d.%c", blk, "abr"[i]);
    /* weights U(-0.1, 0.1): values stay ~1 over six convolutions (DT_ATOL is absolute) */
    int w1 = dt_const_r(g, 4, S4(C, C, 3, 3), 0.1f, 0.f), w2 = dt_const_r(g, 4, S4(C, C, 3, 3), 0.1f, 0.f);
    int c1 = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w1), NULL, 4, S4(1, C, H, H), l[0]);
    int r1 = dt_op(g, "relax.nn.relu", NULL, 1, IN(c1), NULL, 4, S4(1, C, H, H), l[0]);
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r1);
    dt_composite(g, "dnnl.conv2d_relu", c1, 2, IN(c1, r1), posts);
    int c2 = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(r1, w2), NULL, 4, S4(1, C, H, H), l[1]);
    int a = dt_op(g, "relax.add", NULL, 2, IN(c2, x), NULL, 4, S4(1, C, H, H), l[1]);
    int r = dt_op(g, "relax.nn.relu", NULL, 1, IN(a), NULL, 4, S4(1, C, H, H), l[2]);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a, x, r);
    dt_composite(g, "dnnl.conv2d_add_relu", c2, 3, IN(c2, a, r), posts);
    return r;
}

Test(dnnl_engine, residual_in_place) {
    /* the direct algorithm: graft's own Winograd (AVX2) adds the residual in its output
     * transform, with no sum post-op to place */
    rt_dnnl_opts on = rt_dnnl_default_opts();
    on.winograd = false;
    rt_dnnl_opts off = on;
    off.no_layout_plan = true;
    uint32_t nreorders[2];
    for (int k = 0; k < 2; k++) {
        dt_graph g;
        dt_init(&g, 22);
        g.opts = k ? &off : &on;
        int x = dt_input(&g, 4, S4(1, 16, 10, 10));
        int r2 = resnet_block(&g, resnet_block(&g, x, 16, 10, 1), 16, 10, 2);
        int r3 = resnet_block(&g, r2, 16, 10, 3);
        int y = dt_op(&g, "relax.add", NULL, 2, IN(r3, r2), NULL, 4, S4(1, 16, 10, 10), "out");
        dt_head(&g, y);
        dt_check(&g);
        rt_dnnl_stats st;
        dt_stats_no_ref(&g, &st);
        nreorders[k] = st.nreorders;
        dt_free(&g);
    }
    cr_expect_eq(nreorders[1], nreorders[0] + 2, "two residuals in place: %u reorders, %u with copies (ISA %s)", nreorders[0],
                 nreorders[1], rt_dnnl_isa());
}

/* Two ShuffleNet units on a channels-last tensor (an NHWC input permuted to NCHW: a view):
 * the split halves are strided views of it, the unit's convolution runs channels-last, the
 * shuffle writes its output channels-last, and the second unit slices that. Against the
 * reference engine with and without the plan; the plan has no more reorders than the copies. */
static int shuffle_unit(dt_graph *g, int x, int C, int H, int W, int u) {
    char l[3][16];
    const char *what[3] = {"split", "conv", "shuffle"};
    for (int i = 0; i < 3; i++) snprintf(l[i], sizeof l[i], "u%d.%s", u, what[i]);
    int h = C / 2;
    char a0[160], a1[160], shp[64];
    snprintf(a0, sizeof a0, "[{\"tuple\":[{\"int\":1}]},{\"tuple\":[{\"int\":0}]},{\"tuple\":[{\"int\":%d}]}]", h);
    snprintf(a1, sizeof a1, "[{\"tuple\":[{\"int\":1}]},{\"tuple\":[{\"int\":%d}]},{\"tuple\":[{\"int\":%d}]}]", h, C);
    int h1 = dt_op(g, "relax.strided_slice", NULL, 1, IN(x), a0, 4, S4(1, h, H, W), l[0]);
    int h2 = dt_op(g, "relax.strided_slice", NULL, 1, IN(x), a1, 4, S4(1, h, H, W), l[0]);
    int w = dt_const(g, 4, S4(h, h, 1, 1));
    int c = dt_op(g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "0, 0, 0, 0", "1, 1", "1"), 2, IN(h2, w), NULL, 4, S4(1, h, H, W), l[1]);
    int r = dt_op(g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, h, H, W), l[1]);
    char posts[100];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
    dt_composite(g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
    int cat = dt_op(g, "relax.concat", "{\"axis\":1}", 2, IN(h1, r), "![{\"tuple\":[{\"in\":0},{\"in\":1}]}]", 4, S4(1, C, H, W), l[2]);
    int64_t s5[5] = {1, 2, h, H, W}, p5[5] = {1, h, 2, H, W};
    snprintf(shp, sizeof shp, "[{\"shape\":[1,2,%d,%d,%d]}]", h, H, W);
    int r1 = dt_op(g, "relax.reshape", NULL, 1, IN(cat), shp, 5, s5, l[2]);
    int pm = dt_op(g, "relax.permute_dims", "{\"axes\":[0,2,1,3,4]}", 1, IN(r1), NULL, 5, p5, l[2]);
    snprintf(shp, sizeof shp, "[{\"shape\":[1,%d,%d,%d]}]", C, H, W);
    return dt_op(g, "relax.reshape", NULL, 1, IN(pm), shp, 4, S4(1, C, H, W), l[2]);
}

Test(dnnl_engine, channel_shuffle_channels_last) {
    rt_dnnl_opts off = rt_dnnl_default_opts();
    off.no_layout_plan = true;
    uint32_t nreorders[2];
    for (int k = 0; k < 2; k++) {
        dt_graph g;
        dt_init(&g, 23);
        g.opts = k ? &off : NULL;
        int x = dt_input(&g, 4, S4(1, 6, 5, 32));
        int xc = dt_op(&g, "relax.permute_dims", "{\"axes\":[0,3,1,2]}", 1, IN(x), NULL, 4, S4(1, 32, 6, 5), "nchw");
        int y = shuffle_unit(&g, shuffle_unit(&g, xc, 32, 6, 5, 0), 32, 6, 5, 1);
        int sg = dt_op(&g, "relax.sigmoid", NULL, 1, IN(y), NULL, 4, S4(1, 32, 6, 5), "act");
        dt_head(&g, sg);
        dt_check(&g);
        rt_dnnl_stats st;
        dt_stats_no_ref(&g, &st);
        nreorders[k] = st.nreorders;
        dt_free(&g);
    }
    cr_expect_leq(nreorders[0], nreorders[1], "plan %u reorders, copies %u (ISA %s)", nreorders[0], nreorders[1], rt_dnnl_isa());
}

/* Whether a primitive of the graph, prepared with opts, runs a Winograd kernel. */
static bool runs_winograd(dt_graph *g, const rt_dnnl_opts *opts) {
    g->opts = opts;
    dt_prepared p;
    gr_diag d = {0};
    cr_assert_eq(dt_prepare(g, &p, &d), GR_OK, "%s", d.msg);
    bool wino = false;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p.state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p.state, i, &pi));
        wino |= strstr(pi.impl, "wino") != NULL;
    }
    dt_release(&p);
    g->opts = NULL;
    return wino;
}

/* dnnl.winograd (default on): 3x3 stride-1 convolutions (bias, relu and a residual sum fused)
 * run oneDNN's Winograd kernels where it has them (avx512_core and up), match the reference
 * within the suite's tolerance (batch 2, sizes no multiple of the tile), and run the direct
 * algorithm when the option is off. */
Test(dnnl_engine, winograd_3x3) {
    dt_graph g;
    dt_init(&g, 23);
    int x = dt_input(&g, 4, S4(2, 64, 13, 11));
    int w1 = dt_const_r(&g, 4, S4(64, 64, 3, 3), 0.1f, 0.f), b1 = dt_const(&g, 4, S4(1, 64, 1, 1));
    int c1 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w1), NULL, 4,
                   S4(2, 64, 13, 11), "conv1");
    int a1 = dt_op(&g, "relax.add", NULL, 2, IN(c1, b1), NULL, 4, S4(2, 64, 13, 11), "conv1_bias");
    int r1 = dt_op(&g, "relax.nn.relu", NULL, 1, IN(a1), NULL, 4, S4(2, 64, 13, 11), "relu1");
    int w2 = dt_const_r(&g, 4, S4(64, 64, 3, 3), 0.1f, 0.f);
    int c2 = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(r1, w2), NULL, 4,
                   S4(2, 64, 13, 11), "conv2");
    int s2 = dt_op(&g, "relax.add", NULL, 2, IN(c2, x), NULL, 4, S4(2, 64, 13, 11), "residual");
    int r2 = dt_op(&g, "relax.nn.relu", NULL, 1, IN(s2), NULL, 4, S4(2, 64, 13, 11), "relu2");
    dt_head(&g, r2);
    char posts[200];
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", a1, b1, r1);
    dt_composite(&g, "dnnl.conv2d_bias_relu", c1, 3, IN(c1, a1, r1), posts);
    snprintf(posts, sizeof posts, "[{\"out\":[%d,0],\"src\":[%d,0]},{\"out\":[%d,0]}]", s2, x, r2);
    dt_composite(&g, "dnnl.conv2d_add_relu", c2, 3, IN(c2, s2, r2), posts);
    dt_check(&g);
    rt_dnnl_opts off = rt_dnnl_default_opts();
    off.winograd = false;
    dnnl_primitive_desc_t probe = NULL;
    bool has = false;
    {
        /* does oneDNN offer Winograd for this convolution on this CPU? */
        dnnl_engine_t eng;
        cr_assert_eq(dnnl_engine_create(&eng, dnnl_cpu, 0), dnnl_success);
        dnnl_memory_desc_t xm, wm, om;
        dnnl_dims_t xd = {2, 64, 13, 11}, wd = {64, 64, 3, 3}, one = {1, 1}, zero = {0, 0};
        dnnl_memory_desc_init_by_tag(&xm, 4, xd, dnnl_f32, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&wm, 4, wd, dnnl_f32, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&om, 4, xd, dnnl_f32, dnnl_format_tag_any);
        dnnl_convolution_desc_t cd;
        dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_winograd, &xm, &wm, NULL,
                                                   &om, one, zero, one, one);
        has = dnnl_primitive_desc_create(&probe, &cd, NULL, eng, NULL) == dnnl_success;
        if (probe) dnnl_primitive_desc_destroy(probe);
        dnnl_engine_destroy(eng);
    }
    /* below avx512_core, on a CPU with AVX2 + FMA, graft's own (tests/dnnl/test_dnnl_wino.c) */
    __builtin_cpu_init();
    bool ours = !has && !strncmp(rt_dnnl_isa(), "avx2", 4) && __builtin_cpu_supports("fma");
    cr_expect_eq(runs_winograd(&g, NULL), has || ours, "oneDNN %s Winograd on %s, graft's %s", has ? "has" : "has no",
                 rt_dnnl_isa(), ours ? "runs" : "does not run");
    cr_expect_not(runs_winograd(&g, &off), "dnnl.winograd=0 still ran a Winograd kernel");
    g.opts = &off;
    dt_check(&g);
    dt_free(&g);
}

/* Primitives of kind `kind` among those computing layer `layer`; *before_kind: the kind of the
 * primitive before the first of them (NULL when none). */
static uint32_t prims_of(dt_prepared *p, const char *layer, const char *kind, const char **before_kind) {
    uint32_t cnt = 0;
    if (before_kind) *before_kind = NULL;
    for (uint32_t i = 0; i < rt_dnnl_num_prims(p->state); i++) {
        rt_dnnl_prim_info pi;
        cr_assert(rt_dnnl_prim(p->state, i, &pi));
        bool of = false;
        for (uint32_t l = 0; l < pi.nlayers; l++) of |= !strcmp(pi.layers[l], layer);
        if (!of || strcmp(pi.kind, kind)) continue;
        if (!cnt && before_kind && i) {
            rt_dnnl_prim_info prev;
            cr_assert(rt_dnnl_prim(p->state, i - 1, &prev));
            *before_kind = prev.kind;
        }
        cnt++;
    }
    return cnt;
}

/* A CNN's head: a convolution (its result blocked, nChw8c / nChw16c, or channels-last, as
 * oneDNN picks) averaged (or maxed) over H, W, as ONNX ReduceMean / ReduceMax over the spatial
 * axes imports, with and without keepdims, then a classifier matmul (or a relu post-op).
 * The mean is a pooling primitive reading the convolution's layout, no reorder of the map
 * before it; its (N, C) result is a view of the pooled 1x1 map when the bytes agree (one
 * image, or C a multiple of 16 and so of any channel block), else a copy of N x C values.
 * Channel counts a multiple of 16, of 8 only, of neither. Against the reference kernels
 * (DT_ATOL / DT_RTOL: sums of 49 values ~1 and 8-channel dot products). */
Test(dnnl_engine, global_pool_head) {
    static const int64_t CS[] = {32, 24, 20};
    for (int ci = 0; ci < 3; ci++)
        for (int64_t N = 1; N <= 2; N++)
            for (int keep = 0; keep < 2; keep++)
                for (int mx = 0; mx < 2; mx++) {
                    int64_t C = CS[ci];
                    dt_graph g;
                    dt_init(&g, (uint32_t)(40 + ci * 8 + N * 4 + keep * 2 + mx));
                    int x = dt_input(&g, 4, S4(N, 8, 7, 7));
                    int w = dt_const_r(&g, 4, S4(C, 8, 3, 3), 0.2f, 0.f);
                    int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4,
                                  S4(N, C, 7, 7), "conv");
                    char attrs[64];
                    snprintf(attrs, sizeof attrs, "{\"axis\":[2,3],\"keepdims\":%s}", keep ? "true" : "false");
                    int m = dt_op(&g, mx ? "relax.max" : "relax.mean", attrs, 1, IN(c), NULL, keep ? 4 : 2,
                                  keep ? S4(N, C, 1, 1) : S2(N, C), "head");
                    if (keep) {
                        dt_head(&g, dt_op(&g, "relax.nn.relu", NULL, 1, IN(m), NULL, 4, S4(N, C, 1, 1), "relu"));
                    } else {
                        int fw = dt_const_r(&g, 2, S2(C, 10), 0.2f, 0.f);
                        dt_head(&g, dt_op(&g, "relax.matmul", "{\"out_dtype\":\"void\"}", 2, IN(m, fw), NULL, 2, S2(N, 10),
                                          "fc"));
                    }
                    dt_check(&g);
                    dt_prepared p;
                    rt_dnnl_stats st;
                    dt_prepare_no_ref(&g, &p, &st);
                    const char *before;
                    cr_expect_eq(prims_of(&p, "head", "pooling_v2", &before), 1,
                                 "C %ld N %ld keepdims %d %s: not one pooling (ISA %s)", (long)C, (long)N, keep,
                                 mx ? "max" : "mean", rt_dnnl_isa());
                    cr_expect(before && strcmp(before, "reorder"), "C %ld N %ld: %s before the pooling (ISA %s)", (long)C,
                              (long)N, before ? before : "nothing", rt_dnnl_isa());
                    if (N == 1 || C % 16 == 0)
                        cr_expect_eq(prims_of(&p, "head", "reorder", NULL), 0, "C %ld N %ld keepdims %d: a reorder (ISA %s)",
                                     (long)C, (long)N, keep, rt_dnnl_isa());
                    dt_release(&p);
                    dt_free(&g);
                }
}

/* A CNN's stem: a strided 3x3 convolution of 1, 3 or 4 plain input channels, then a max
 * pooling and a 3x3 convolution (ResNet: oneDNN's Winograd on avx512_core, graft's on avx2),
 * or directly another convolution (mnasnet). Before the pooling, the stem reads the input in
 * place where oneDNN has a jit kernel for that (its first-convolution path, plain src and
 * blocked dst; asserted on avx2 and avx512_core, whose kernels were measured): no reorder of
 * the input, and none of the pooled map. Against the reference kernels. */
Test(dnnl_engine, stem_reads_input_in_place) {
    static const int64_t ICS[] = {1, 3, 4};
    const char *isa = rt_dnnl_isa();
    bool measured = !strcmp(isa, "avx2") || !strncmp(isa, "avx512_core", 11);
    for (int ci = 0; ci < 3; ci++)
        for (int pool = 0; pool < 2; pool++) {
            int64_t I = ICS[ci];
            dt_graph g;
            dt_init(&g, (uint32_t)(70 + ci * 2 + pool));
            int x = dt_input(&g, 4, S4(1, I, 30, 30));
            int w = dt_const_r(&g, 4, S4(32, I, 3, 3), 0.3f, 0.f);
            int c = dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("2, 2", "1, 1, 1, 1", "1, 1", "1"), 2, IN(x, w), NULL, 4,
                          S4(1, 32, 15, 15), "stem");
            int r = dt_op(&g, "relax.nn.relu", NULL, 1, IN(c), NULL, 4, S4(1, 32, 15, 15), "stem");
            char posts[64];
            snprintf(posts, sizeof posts, "[{\"out\":[%d,0]}]", r);
            dt_composite(&g, "dnnl.conv2d_relu", c, 2, IN(c, r), posts);
            int64_t H = pool ? 8 : 15;
            int y = r;
            if (pool)
                y = dt_op(&g, "relax.nn.max_pool2d",
                          "{\"pool_size\":[3,3],\"strides\":[2,2],\"dilation\":[1,1],\"padding\":[1,1,1,1],\"ceil_mode\":false,"
                          "\"count_include_pad\":false,\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}",
                          1, IN(r), NULL, 4, S4(1, 32, H, H), "pool");
            int w2 = dt_const_r(&g, 4, S4(32, 32, 3, 3), 0.1f, 0.f);
            dt_head(&g, dt_op(&g, "relax.nn.conv2d", CONV_ATTRS("1, 1", "1, 1, 1, 1", "1, 1", "1"), 2, IN(y, w2), NULL, 4,
                              S4(1, 32, H, H), "next"));
            dt_check(&g);
            dt_prepared p;
            rt_dnnl_stats st;
            dt_prepare_no_ref(&g, &p, &st);
            cr_expect_eq(prims_of(&p, "stem", "convolution", NULL), 1);
            if (pool && measured) {
                cr_expect_eq(prims_of(&p, "stem", "reorder", NULL), 0, "%ld channels: the input reordered (ISA %s)", (long)I,
                             isa);
                cr_expect_eq(prims_of(&p, "next", "reorder", NULL), 1, "%ld channels: the pooled map reordered (ISA %s)",
                             (long)I, isa);
            }
            dt_release(&p);
            dt_free(&g);
        }
}
