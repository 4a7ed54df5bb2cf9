/* Reference kernels added for ONNX coverage (runtime/kernels/kernels_index.c): unique (sorted, in
 * order of first occurrence, along an axis) and linalg.det (pivoting, singular, batched),
 * against hand-computed results (the ONNX Unique examples). */
#include "kernels_test_util.h"

TestSuite(kernels_index, .init = kt_setup, .fini = kt_teardown);

/* values, first indices, inverse indices, counts */
static void expect_unique(const rt_value *o, int64_t n, const double *y, const double *idx,
                          int64_t ninv, const double *inv, const double *cnt) {
    cr_assert_eq(o->kind, RT_VAL_TUPLE);
    cr_assert_eq(o->u.tuple.n, 4);
    kt_assert_vals(o->u.tuple.items[0].u.t, rt_tensor_numel(o->u.tuple.items[0].u.t), y);
    cr_assert_eq(o->u.tuple.items[1].u.t->dl.shape[0], n);
    kt_assert_vals(o->u.tuple.items[1].u.t, n, idx);
    kt_assert_vals(o->u.tuple.items[2].u.t, ninv, inv);
    kt_assert_vals(o->u.tuple.items[3].u.t, n, cnt);
}

Test(kernels_index, unique) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(6), KVALS(2, 1, 1, 3, 4, 3));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.unique", 0, NULL, KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.tuple.items[0].u.t, KSHAPE(4));
    expect_unique(&o, 4, KVALS(1, 2, 3, 4), KVALS(1, 0, 3, 4), 6, KVALS(1, 0, 0, 2, 3, 2), KVALS(2, 1, 2, 1));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.unique", 1, KV({"sorted", ir_attr_bool(false)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    expect_unique(&o, 4, KVALS(2, 1, 3, 4), KVALS(0, 1, 3, 4), 6, KVALS(0, 1, 1, 2, 3, 2), KVALS(1, 2, 2, 1));
    rt_value_clear(&o);
    /* rows along axis 0: [1 0 0] twice, [2 3 4] once */
    rt_tensor *m = kt_tensor(KT_I64, KSHAPE(3, 3), KVALS(1, 0, 0, 1, 0, 0, 2, 3, 4));
    cr_assert_eq(kt_run("relax.unique", 1, KV({"axis", ir_attr_int(0)}), KARGS(kt_val(m)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.tuple.items[0].u.t, KSHAPE(2, 3));
    cr_assert_eq(o.u.tuple.items[0].u.t->dl.dtype.code, kDLInt); /* the input's dtype */
    expect_unique(&o, 2, KVALS(1, 0, 0, 2, 3, 4), KVALS(0, 2), 3, KVALS(0, 0, 1), KVALS(2, 1));
    rt_value_clear(&o);
    /* columns along axis 1, sorted lexicographically: [0 0 3] < [0 0 4] < [1 1 2] */
    cr_assert_eq(kt_run("relax.unique", 1, KV({"axis", ir_attr_int(-1)}), KARGS(kt_val(m)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.tuple.items[0].u.t, KSHAPE(3, 3));
    expect_unique(&o, 3, KVALS(0, 0, 1, 0, 0, 1, 3, 4, 2), KVALS(1, 2, 0), 3, KVALS(2, 0, 1), KVALS(1, 1, 1));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.unique", 1, KV({"axis", ir_attr_int(2)}), KARGS(kt_val(m)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(m);
}

Test(kernels_index, det) {
    /* [[1 2] [3 4]] = -2; [[0 1] [1 0]] needs a row swap: -1; [[1 2] [2 4]] is singular */
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(3, 2, 2), KVALS(1, 2, 3, 4, 0, 1, 1, 0, 1, 2, 2, 4));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.linalg.det", 0, NULL, KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(3));
    kt_assert_close(o.u.t, KVALS(-2, -1, 0), 3, 1e-6, 1e-6);
    rt_value_clear(&o);
    rt_tensor *y = kt_tensor(KT_F64, KSHAPE(3, 3), KVALS(2, 1, 0, 1, 3, 1, 0, 1, 4)); /* 2(12-1) - 1(4) = 18 */
    cr_assert_eq(kt_run("relax.linalg.det", 0, NULL, KARGS(kt_val(y)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, 0, NULL);
    kt_assert_close(o.u.t, KVALS(18), 1, 1e-12, 0);
    rt_value_clear(&o);
    rt_tensor *bad = kt_tensor(KT_F32, KSHAPE(2, 3), NULL);
    cr_assert_eq(kt_run("relax.linalg.det", 0, NULL, KARGS(kt_val(bad)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(y);
    rt_tensor_release(bad);
}

/* nn.conv2d of integer tensors (ONNX ConvInteger): exact int64 accumulation, out_dtype int32,
 * padding and groups as the float path. */
Test(kernels_index, conv2d_integer) {
    rt_tensor *x = kt_tensor(KT_I32, KSHAPE(1, 1, 3, 3), KVALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    rt_tensor *w = kt_tensor(KT_I32, KSHAPE(1, 1, 2, 2), KVALS(1, -1, 2, 100000));
    rt_value o;
    gr_diag d;
    /* y[0,0] = 1 - 2 + 8 + 5e5; a float32 sum would round it */
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"out_dtype", ir_attr_dtype(IR_DTYPE_I32)}), KARGS(kt_val(x), kt_val(w)),
                        2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(1, 1, 2, 2));
    cr_assert_eq(o.u.t->dl.dtype.code, kDLInt);
    kt_assert_vals(o.u.t, 4, KVALS(500007, 600009, 800013, 900015));
    rt_value_clear(&o);
    /* padding 1 on the left/top only, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1) */
    cr_assert_eq(kt_run("relax.nn.conv2d", 3, KV({"padding", KI(1, 1, 0, 0)}, {"strides", KI(2, 2)}, {"out_dtype", ir_attr_dtype(IR_DTYPE_I64)}),
                        KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 4, KVALS(100000, 2 * 2 + 3 * 100000, -4 + 7 * 100000, 5 - 6 + 16 + 900000));
    rt_value_clear(&o);
    rt_tensor *wf = kt_tensor(KT_F32, KSHAPE(1, 1, 2, 2), KVALS(1, 1, 1, 1));
    cr_assert_eq(kt_run("relax.nn.conv2d", 0, NULL, KARGS(kt_val(x), kt_val(wf)), 2, &o, &d), GR_ERR_UNSUPPORTED);
    rt_tensor_release(x);
    rt_tensor_release(w);
    rt_tensor_release(wf);
}

/* image.resize2d with the scales attr (ONNX Resize, in * scale fractional): 4 -> 2 at scale
 * 0.6 maps output x to (x + 0.5) / 0.6 - 0.5 = 1/3 and 2 (1.333, 3); without it out / in
 * maps to 0.5 and 2.5 (1.5, 3.5); align_corners uses the unrounded length 2.4: x * 3 / 1.4. */
Test(kernels_index, resize2d_scales) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 1, 1, 4), KVALS(1, 2, 3, 4));
    rt_value o;
    gr_diag d;
    ir_attr sc[2] = {ir_attr_float(1.0), ir_attr_float(0.6)};
    rt_value sz = kt_shape(KSHAPE(1, 2));
    cr_assert_eq(kt_run("relax.image.resize2d", 1, KV({"scales", ir_attr_array(kt_ctx, 2, sc)}), KARGS(kt_val(x), sz), 2,
                        &o, &d), GR_OK, "%s", d.msg);
    kt_assert_close(o.u.t, KVALS(1 + 1.0 / 3, 3), 2, 1e-6, 1e-6);
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.image.resize2d", 0, NULL, KARGS(kt_val(x), sz), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_close(o.u.t, KVALS(1.5, 3.5), 2, 1e-6, 1e-6);
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.image.resize2d", 2, KV({"scales", ir_attr_array(kt_ctx, 2, sc)},
                                                     {"coordinate_transformation_mode", ir_attr_str(kt_ctx, "align_corners")}),
                        KARGS(kt_val(x), sz), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_close(o.u.t, KVALS(1, 1 + 3 / 1.4), 2, 1e-6, 1e-6);
    rt_value_clear(&o);
    ir_attr bad[2] = {ir_attr_float(1.0), ir_attr_float(0)};
    cr_assert_eq(kt_run("relax.image.resize2d", 1, KV({"scales", ir_attr_array(kt_ctx, 2, bad)}), KARGS(kt_val(x), sz), 2,
                        &o, &d), GR_ERR_INVALID);
    rt_value_clear(&sz);
    rt_tensor_release(x);
}
