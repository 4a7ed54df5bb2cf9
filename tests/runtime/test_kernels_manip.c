/* Data-movement and creation kernels: hand-computed cases, a naive permute reference, int
 * dtypes and error cases. */
#include "kernels_test_util.h"

TestSuite(kernels_manip, .init = kt_setup, .fini = kt_teardown);

static rt_tensor *iota(DLDataType dt, int nd, const int64_t *shape) {
    rt_tensor *t = kt_tensor(dt, nd, shape, NULL);
    for (int64_t i = 0, n = rt_tensor_numel(t); i < n; i++) rt_tensor_set_f64(t, i, (double)i);
    return t;
}

Test(kernels_manip, reshape_flatten_squeeze_expand) {
    rt_tensor *x = iota(KT_F32, KSHAPE(2, 3, 4));
    rt_value o;
    rt_tensor *r = kt_ok("relax.reshape", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(4, -1))), 2, &o);
    kt_assert_shape(r, KSHAPE(4, 6));
    cr_assert_eq(rt_tensor_get_f64(r, 23), 23);
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.reshape", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(5, 5))), 2, &o, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "R.reshape") && strstr(d.msg, "(2, 3, 4)"), "%s", d.msg);
    r = kt_ok("relax.flatten", 0, NULL, KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(24));
    rt_value_clear(&o);
    rt_tensor *y = iota(KT_I64, KSHAPE(1, 3, 1));
    r = kt_ok("relax.squeeze", 0, NULL, KARGS(kt_val(y)), 1, &o);
    kt_assert_shape(r, KSHAPE(3));
    rt_value_clear(&o);
    r = kt_ok("relax.squeeze", 1, KV({"axis", KI(-1)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 3));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.squeeze", 1, KV({"axis", KI(1)}), KARGS(kt_val(y)), 1, &o, &d), GR_ERR_INVALID);
    r = kt_ok("relax.expand_dims", 1, KV({"axis", KI(0, -1)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_shape(r, KSHAPE(1, 1, 3, 1, 1));
    kt_assert_vals(r, 3, KVALS(0, 1, 2));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(y);
}

Test(kernels_manip, permute_dims_vs_naive) {
    rt_tensor *x = iota(KT_F32, KSHAPE(2, 3, 4, 5));
    int64_t perms[][4] = {{0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 3, 2}, {0, 1, 2, 3}};
    for (int p = 0; p < 4; p++) {
        rt_value o;
        rt_tensor *r = kt_ok("relax.permute_dims", 1, KV({"axes", ir_attr_ints(kt_ctx, 4, perms[p])}), KARGS(kt_val(x)), 1, &o);
        int64_t xs[4] = {60, 20, 5, 1}, os[4];
        for (int i = 0; i < 4; i++) cr_assert_eq(r->dl.shape[i], x->dl.shape[perms[p][i]]);
        os[3] = 1;
        for (int i = 2; i >= 0; i--) os[i] = os[i + 1] * r->dl.shape[i + 1];
        double want[120];
        for (int64_t i = 0; i < 120; i++) {
            int64_t src = 0;
            for (int k = 0; k < 4; k++) src += ((i / os[k]) % r->dl.shape[k]) * xs[perms[p][k]];
            want[i] = (double)src;
        }
        kt_assert_vals(r, 120, want);
        rt_value_clear(&o);
    }
    rt_value o;
    rt_tensor *r = kt_ok("relax.permute_dims", 0, NULL, KARGS(kt_val(x)), 1, &o); /* None: reverse */
    kt_assert_shape(r, KSHAPE(5, 4, 3, 2));
    cr_assert_eq(rt_tensor_get_f64(r, 1), 60);
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.permute_dims", 1, KV({"axes", KI(0, 0, 1, 2)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
}

Test(kernels_manip, concat_and_split) {
    rt_tensor *a = iota(KT_I32, KSHAPE(2, 2)), *b = iota(KT_I32, KSHAPE(2, 1));
    rt_value tup = rt_value_tuple(2);
    tup.u.tuple.items[0] = rt_value_tensor(rt_tensor_retain(a));
    tup.u.tuple.items[1] = rt_value_tensor(rt_tensor_retain(b));
    rt_value o;
    rt_tensor *r = kt_ok("relax.concat", 1, KV({"axis", ir_attr_int(1)}), KARGS(tup), 1, &o);
    kt_assert_shape(r, KSHAPE(2, 3));
    cr_assert_eq(r->dl.dtype.bits, 32);
    kt_assert_vals(r, 6, KVALS(0, 1, 0, 2, 3, 1));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.concat", 1, KV({"axis", ir_attr_int(0)}), KARGS(tup), 1, &o, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "(2, 1)"), "%s", d.msg);
    rt_value_clear(&tup);
    rt_tensor *x = iota(KT_F32, KSHAPE(2, 7));
    cr_assert_eq(kt_run("relax.split", 2, KV({"indices_or_sections", KI(2, 5)}, {"axis", ir_attr_int(1)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.kind, RT_VAL_TUPLE);
    cr_assert_eq(o.u.tuple.n, 3);
    kt_assert_shape(o.u.tuple.items[0].u.t, KSHAPE(2, 2));
    kt_assert_shape(o.u.tuple.items[1].u.t, KSHAPE(2, 3));
    kt_assert_shape(o.u.tuple.items[2].u.t, KSHAPE(2, 2));
    kt_assert_vals(o.u.tuple.items[1].u.t, 6, KVALS(2, 3, 4, 9, 10, 11));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.split", 2, KV({"indices_or_sections", ir_attr_int(2)}, {"axis", ir_attr_int(0)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.u.tuple.n, 2);
    kt_assert_vals(o.u.tuple.items[1].u.t, 7, KVALS(7, 8, 9, 10, 11, 12, 13));
    rt_value_clear(&o);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(x);
}

Test(kernels_manip, broadcast_to_and_tile_repeat_flip) {
    rt_tensor *x = iota(KT_F32, KSHAPE(3, 1));
    rt_value o;
    rt_tensor *r = kt_ok("relax.broadcast_to", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(2, 3, 2))), 2, &o);
    kt_assert_shape(r, KSHAPE(2, 3, 2));
    kt_assert_vals(r, 12, KVALS(0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.broadcast_to", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(2, 2))), 2, &o, &d), GR_ERR_INVALID);
    rt_tensor *y = iota(KT_I64, KSHAPE(2, 2));
    r = kt_ok("relax.tile", 1, KV({"repeats", KI(1, 2)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_shape(r, KSHAPE(2, 4));
    kt_assert_vals(r, 8, KVALS(0, 1, 0, 1, 2, 3, 2, 3));
    rt_value_clear(&o);
    r = kt_ok("relax.repeat", 2, KV({"repeats", ir_attr_int(2)}, {"axis", ir_attr_int(0)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_vals(r, 8, KVALS(0, 1, 0, 1, 2, 3, 2, 3));
    rt_value_clear(&o);
    r = kt_ok("relax.flip", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(y)), 1, &o);
    kt_assert_vals(r, 4, KVALS(1, 0, 3, 2));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(y);
}

Test(kernels_manip, strided_slice_args) {
    rt_tensor *x = iota(KT_F32, KSHAPE(4, 5));
    rt_value o;
    /* x[1:3, ::2] via axes/begin/end/strides args */
    rt_tensor *r = kt_ok("relax.strided_slice", 0, NULL,
                         KARGS(kt_val(x), kt_shape(KSHAPE(0, 1)), kt_shape(KSHAPE(1, 0)), kt_shape(KSHAPE(3, 100)), kt_shape(KSHAPE(1, 2))), 5, &o);
    kt_assert_shape(r, KSHAPE(2, 3));
    kt_assert_vals(r, 6, KVALS(5, 7, 9, 10, 12, 14));
    rt_value_clear(&o);
    /* x[:, ::-2] and negative begin; end clamps */
    r = kt_ok("relax.strided_slice", 0, NULL,
              KARGS(kt_val(x), kt_shape(KSHAPE(1)), kt_shape(KSHAPE(-1)), kt_shape(KSHAPE(-100)), kt_shape(KSHAPE(-2))), 5, &o);
    kt_assert_shape(r, KSHAPE(4, 3));
    kt_assert_vals(r, 12, KVALS(4, 2, 0, 9, 7, 5, 14, 12, 10, 19, 17, 15));
    rt_value_clear(&o);
    /* no strides arg; empty result */
    r = kt_ok("relax.strided_slice", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(0)), kt_shape(KSHAPE(3)), kt_shape(KSHAPE(1))), 4, &o);
    kt_assert_shape(r, KSHAPE(0, 5));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.strided_slice", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(0, 1)), kt_shape(KSHAPE(0)), kt_shape(KSHAPE(1, 1))), 4, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.strided_slice", 0, NULL, KARGS(kt_val(x), kt_shape(KSHAPE(0)), kt_shape(KSHAPE(0)), kt_shape(KSHAPE(1)), kt_shape(KSHAPE(0))), 5, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
}

Test(kernels_manip, take_modes_and_errors) {
    rt_tensor *x = iota(KT_F32, KSHAPE(3, 4));
    rt_tensor *ind = kt_tensor(KT_I64, KSHAPE(2), KVALS(2, -1));
    rt_value o;
    rt_tensor *r = kt_ok("relax.take", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x), kt_val(ind)), 2, &o);
    kt_assert_shape(r, KSHAPE(3, 2));
    kt_assert_vals(r, 6, KVALS(2, 3, 6, 7, 10, 11));
    rt_value_clear(&o);
    r = kt_ok("relax.take", 1, KV({"axis", ir_attr_int(0)}), KARGS(kt_val(x), kt_val(ind)), 2, &o);
    kt_assert_shape(r, KSHAPE(2, 4));
    kt_assert_vals(r, 8, KVALS(8, 9, 10, 11, 8, 9, 10, 11));
    rt_value_clear(&o);
    r = kt_ok("relax.take", 0, NULL, KARGS(kt_val(x), kt_val(ind)), 2, &o); /* axis None: flat */
    kt_assert_vals(r, 2, KVALS(2, 11));
    rt_value_clear(&o);
    rt_tensor *scalar = kt_tensor(KT_I32, KSHAPE(), KVALS(1));
    r = kt_ok("relax.take", 1, KV({"axis", ir_attr_int(0)}), KARGS(kt_val(x), kt_val(scalar)), 2, &o);
    kt_assert_shape(r, KSHAPE(4));
    kt_assert_vals(r, 4, KVALS(4, 5, 6, 7));
    rt_value_clear(&o);
    rt_tensor *bad = kt_tensor(KT_I64, KSHAPE(1), KVALS(4));
    gr_diag d;
    cr_assert_eq(kt_run("relax.take", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x), kt_val(bad)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "out of range"), "%s", d.msg);
    rt_tensor_release(x);
    rt_tensor_release(ind);
    rt_tensor_release(scalar);
    rt_tensor_release(bad);
}

Test(kernels_manip, pad_modes) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 3), KVALS(1, 2, 3));
    rt_value o;
    rt_tensor *r = kt_ok("relax.nn.pad", 2, KV({"pad_width", KI(1, 0, 2, 1)}, {"pad_value", ir_attr_float(9)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(2, 6));
    kt_assert_vals(r, 12, KVALS(9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9));
    rt_value_clear(&o);
    r = kt_ok("relax.nn.pad", 2, KV({"pad_width", KI(0, 0, 2, 2)}, {"pad_mode", ir_attr_str(kt_ctx, "edge")}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 7, KVALS(1, 1, 1, 2, 3, 3, 3));
    rt_value_clear(&o);
    r = kt_ok("relax.nn.pad", 2, KV({"pad_width", KI(0, 0, 2, 2)}, {"pad_mode", ir_attr_str(kt_ctx, "reflect")}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 7, KVALS(3, 2, 1, 2, 3, 2, 1));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.pad", 1, KV({"pad_width", KI(1, 1)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
}

Test(kernels_manip, gather_scatter_one_hot) {
    rt_tensor *x = iota(KT_F32, KSHAPE(2, 3));
    rt_tensor *ind = kt_tensor(KT_I64, KSHAPE(2, 2), KVALS(2, 0, 1, 1));
    rt_value o;
    gr_diag d;
    if (kt_run("relax.gather_elements", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x), kt_val(ind)), 2, &o, &d) == GR_OK) {
        kt_assert_vals(o.u.t, 4, KVALS(2, 0, 4, 4));
        rt_value_clear(&o);
    } else {
        cr_assert_fail("%s", d.msg);
    }
    rt_tensor *nd_ind = kt_tensor(KT_I64, KSHAPE(2, 2), KVALS(0, 2, 1, 0));
    cr_assert_eq(kt_run("relax.gather_nd", 0, NULL, KARGS(kt_val(x), kt_val(nd_ind)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 2, KVALS(2, 3));
    rt_value_clear(&o);
    rt_tensor *upd = kt_tensor(KT_F32, KSHAPE(2, 2), KVALS(10, 20, 30, 40));
    cr_assert_eq(kt_run("relax.scatter_elements", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x), kt_val(ind), kt_val(upd)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 6, KVALS(20, 1, 10, 3, 40, 5));
    rt_value_clear(&o);
    rt_tensor *oh = kt_tensor(KT_I64, KSHAPE(3), KVALS(0, 2, -1));
    cr_assert_eq(kt_run("relax.one_hot", 1, KV({"depth", ir_attr_int(3)}), KARGS(kt_val(oh), kt_flt(1.0), kt_flt(0.0)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(3, 3));
    kt_assert_vals(o.u.t, 9, KVALS(1, 0, 0, 0, 0, 1, 0, 0, 1));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(ind);
    rt_tensor_release(nd_ind);
    rt_tensor_release(upd);
    rt_tensor_release(oh);
}

Test(kernels_manip, creation_ops) {
    rt_value o;
    rt_tensor *r = kt_ok("relax.zeros", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_I32)}), KARGS(kt_shape(KSHAPE(2, 3))), 1, &o);
    kt_assert_shape(r, KSHAPE(2, 3));
    cr_assert_eq(r->dl.dtype.bits, 32);
    kt_assert_vals(r, 6, KVALS(0, 0, 0, 0, 0, 0));
    rt_value_clear(&o);
    r = kt_ok("relax.ones", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_F32)}), KARGS(kt_shape(KSHAPE(3))), 1, &o);
    kt_assert_vals(r, 3, KVALS(1, 1, 1));
    rt_value_clear(&o);
    rt_tensor *fv = kt_tensor(KT_F32, KSHAPE(), KVALS(2.5));
    r = kt_ok("relax.full", 0, NULL, KARGS(kt_shape(KSHAPE(2)), kt_val(fv)), 2, &o);
    cr_assert_eq(r->dl.dtype.code, kDLFloat);
    kt_assert_vals(r, 2, KVALS(2.5, 2.5));
    rt_value_clear(&o);
    r = kt_ok("relax.arange", 0, NULL, KARGS(kt_int(1), kt_int(10), kt_int(3)), 3, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 3, KVALS(1, 4, 7));
    rt_value_clear(&o);
    r = kt_ok("relax.arange", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_F32)}), KARGS(kt_flt(0), kt_flt(1), kt_flt(0.25)), 3, &o);
    kt_assert_vals(r, 4, KVALS(0, 0.25, 0.5, 0.75));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.arange", 0, NULL, KARGS(kt_int(0), kt_int(5), kt_int(0)), 3, &o, &d), GR_ERR_INVALID);
    rt_tensor *m = iota(KT_F32, KSHAPE(3, 3));
    cr_assert_eq(kt_run("relax.tril", 0, NULL, KARGS(kt_val(m), kt_int(0)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 9, KVALS(0, 0, 0, 3, 4, 0, 6, 7, 8));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.shape_of", 0, NULL, KARGS(kt_val(m)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.kind, RT_VAL_SHAPE);
    cr_assert_eq(o.u.shape.ndim, 2);
    cr_assert_eq(o.u.shape.dims[1], 3);
    rt_tensor_release(fv);
    rt_tensor_release(m);
}
