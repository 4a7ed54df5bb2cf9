/* The remaining kernels: more unary math and activations, predicates, bitwise and modulo ops,
 * rms_norm, std, cumprod, *_like creation, triu, shape/tensor conversions, dynamic slices,
 * gather_nd with batch dims, scatter_nd. Hand-computed values or libm references. */
#include "kernels_test_util.h"

TestSuite(kernels_more, .init = kt_setup, .fini = kt_teardown);

static double r_relu6(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
static double r_selu(double x) { return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * (exp(x) - 1)); }
static double r_softplus(double x) { return log1p(exp(x)); }

Test(kernels_more, more_unary_vs_libm) {
    static const struct { const char *op; double (*f)(double); double lo, hi; } cases[] = {
        {"relax.nn.relu6", r_relu6, -8, 8}, {"relax.nn.selu", r_selu, -3, 3},
        {"relax.nn.softplus", r_softplus, -5, 5}, {"relax.tan", tan, -1, 1},
        {"relax.asin", asin, -0.9, 0.9}, {"relax.acos", acos, -0.9, 0.9},
        {"relax.atan", atan, -5, 5}, {"relax.sinh", sinh, -3, 3}, {"relax.cosh", cosh, -3, 3},
        {"relax.asinh", asinh, -5, 5}, {"relax.acosh", acosh, 1.1, 5},
        {"relax.atanh", atanh, -0.9, 0.9}, {"relax.trunc", trunc, -5, 5},
        {"relax.log2", log2, 0.1, 9}, {"relax.log10", log10, 0.1, 9},
        {"relax.log1p", log1p, -0.5, 9}, {"relax.exp2", exp2, -5, 5},
        {"relax.sqrt", sqrt, 0, 9},
    };
    double v[50], want[50];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int i = 0; i < 50; i++) v[i] = (float)(cases[k].lo + (cases[k].hi - cases[k].lo) * i / 49.0);
        rt_tensor *x = kt_tensor(KT_F32, KSHAPE(50), v);
        rt_value o;
        gr_diag d;
        if (kt_run(cases[k].op, 0, NULL, KARGS(kt_val(x)), 1, &o, &d) != GR_OK)
            cr_assert_fail("%s: %s", cases[k].op, d.msg);
        for (int i = 0; i < 50; i++) want[i] = cases[k].f(v[i]);
        kt_assert_close(o.u.t, want, 50, 1e-5, 1e-6);
        rt_value_clear(&o);
        /* float64 goes through the double loops */
        rt_tensor *x64 = kt_tensor(KT_F64, KSHAPE(50), v);
        rt_tensor *r = kt_ok(cases[k].op, 0, NULL, KARGS(kt_val(x64)), 1, &o);
        cr_assert_eq(r->dl.dtype.bits, 64);
        kt_assert_close(r, want, 50, 1e-12, 1e-12);
        rt_value_clear(&o);
        rt_tensor_release(x);
        rt_tensor_release(x64);
    }
}

Test(kernels_more, predicates_and_bitwise) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(4), KVALS(1, NAN, INFINITY, -INFINITY));
    rt_value o;
    kt_assert_vals(kt_ok("relax.isnan", 0, NULL, KARGS(kt_val(x)), 1, &o), 4, KVALS(0, 1, 0, 0));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.isinf", 0, NULL, KARGS(kt_val(x)), 1, &o), 4, KVALS(0, 0, 1, 1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.isfinite", 0, NULL, KARGS(kt_val(x)), 1, &o), 4, KVALS(1, 0, 0, 0));
    rt_value_clear(&o);
    rt_tensor *a = kt_tensor(KT_I32, KSHAPE(3), KVALS(12, 10, -1));
    rt_tensor *b = kt_tensor(KT_I32, KSHAPE(3), KVALS(10, 3, 1));
    kt_assert_vals(kt_ok("relax.bitwise_and", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o), 3, KVALS(8, 2, 1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.bitwise_or", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o), 3, KVALS(14, 11, -1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.bitwise_xor", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o), 3, KVALS(6, 9, -2));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.bitwise_not", 0, NULL, KARGS(kt_val(a)), 1, &o), 3, KVALS(-13, -11, 0));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.left_shift", 0, NULL, KARGS(kt_val(b), kt_val(b)), 2, &o), 3, KVALS(10240, 24, 2));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.bitwise_and", 0, NULL, KARGS(kt_val(x), kt_val(x)), 2, &o, &d), GR_ERR_INVALID);
    /* modulo: truncated (mod) and floored (floor_mod), ints and floats */
    rt_tensor *m = kt_tensor(KT_I64, KSHAPE(4), KVALS(7, -7, 7, -7));
    rt_tensor *n = kt_tensor(KT_I64, KSHAPE(4), KVALS(3, 3, -3, -3));
    kt_assert_vals(kt_ok("relax.mod", 0, NULL, KARGS(kt_val(m), kt_val(n)), 2, &o), 4, KVALS(1, -1, 1, -1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.floor_mod", 0, NULL, KARGS(kt_val(m), kt_val(n)), 2, &o), 4, KVALS(1, 2, -2, -1));
    rt_value_clear(&o);
    rt_tensor *mf = kt_tensor(KT_F32, KSHAPE(2), KVALS(-7.5, 7.5));
    rt_tensor *nf = kt_tensor(KT_F32, KSHAPE(2), KVALS(2, -2));
    kt_assert_vals(kt_ok("relax.floor_mod", 0, NULL, KARGS(kt_val(mf), kt_val(nf)), 2, &o), 2, KVALS(0.5, -0.5));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.mod", 0, NULL, KARGS(kt_val(mf), kt_val(nf)), 2, &o), 2, KVALS(-1.5, 1.5));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(m);
    rt_tensor_release(n);
    rt_tensor_release(mf);
    rt_tensor_release(nf);
}

Test(kernels_more, rms_norm_std_cumprod) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(2, 2), KVALS(3, 4, 1, -1));
    rt_tensor *w = kt_tensor(KT_F32, KSHAPE(2), KVALS(1, 2));
    rt_value o;
    rt_tensor *r = kt_ok("relax.nn.rms_norm", 0, NULL, KARGS(kt_val(x), kt_val(w)), 2, &o);
    double r0 = sqrt(12.5 + 1e-5), r1 = sqrt(1 + 1e-5);
    kt_assert_close(r, KVALS(3 / r0, 8 / r0, 1 / r1, -2 / r1), 4, 1e-5, 1e-6);
    rt_value_clear(&o);
    r = kt_ok("relax.std", 1, KV({"axis", KI(1)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_close(r, KVALS(0.5, 1), 2, 1e-6, 0);
    rt_value_clear(&o);
    r = kt_ok("relax.cumprod", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 4, KVALS(3, 12, 1, -1));
    rt_value_clear(&o);
    r = kt_ok("relax.cumsum", 0, NULL, KARGS(kt_val(x)), 1, &o); /* axis None: flattened */
    kt_assert_shape(r, KSHAPE(4));
    kt_assert_vals(r, 4, KVALS(3, 7, 8, 7));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(w);
}

Test(kernels_more, like_creation_triu_shapes) {
    rt_tensor *x = kt_tensor(KT_I32, KSHAPE(2, 3), KVALS(1, 2, 3, 4, 5, 6));
    rt_value o;
    rt_tensor *r = kt_ok("relax.zeros_like", 0, NULL, KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, KSHAPE(2, 3));
    cr_assert_eq(r->dl.dtype.bits, 32);
    kt_assert_vals(r, 6, KVALS(0, 0, 0, 0, 0, 0));
    rt_value_clear(&o);
    r = kt_ok("relax.ones_like", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_F32)}), KARGS(kt_val(x)), 1, &o);
    cr_assert_eq(r->dl.dtype.code, kDLFloat);
    kt_assert_vals(r, 6, KVALS(1, 1, 1, 1, 1, 1));
    rt_value_clear(&o);
    r = kt_ok("relax.full_like", 0, NULL, KARGS(kt_val(x), kt_int(7)), 2, &o);
    kt_assert_vals(r, 6, KVALS(7, 7, 7, 7, 7, 7));
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.triu", 1, KV({"k", ir_attr_int(1)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 6, KVALS(0, 2, 3, 0, 0, 6));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.shape_of", 0, NULL, KARGS(kt_val(x)), 1, &o, &d), GR_OK);
    rt_value args[1] = {o};
    r = kt_ok("relax.shape_to_tensor", 0, NULL, args, 1, &o);
    cr_assert_eq(r->dl.dtype.bits, 64);
    kt_assert_vals(r, 2, KVALS(2, 3));
    rt_value t2s;
    cr_assert_eq(kt_run("relax.tensor_to_shape", 0, NULL, KARGS(kt_val(r)), 1, &t2s, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(t2s.kind, RT_VAL_SHAPE);
    cr_assert_eq(t2s.u.shape.ndim, 2);
    cr_assert_eq(t2s.u.shape.dims[0], 2);
    cr_assert_eq(t2s.u.shape.dims[1], 3);
    rt_value_clear(&o);
    rt_tensor_release(x);
}

Test(kernels_more, dynamic_slice_gather_nd_scatter_nd) {
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(3, 4), v);
    rt_tensor *b = kt_tensor(KT_I64, KSHAPE(2), KVALS(2, 3)), *e = kt_tensor(KT_I64, KSHAPE(2), KVALS(-4, 0));
    rt_tensor *s = kt_tensor(KT_I64, KSHAPE(2), KVALS(-1, -2));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.dynamic_strided_slice", 0, NULL, KARGS(kt_val(x), kt_val(b), kt_val(e), kt_val(s)), 4, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(3, 2));
    kt_assert_vals(o.u.t, 6, KVALS(11, 9, 7, 5, 3, 1));
    rt_value_clear(&o);
    /* gather_nd with batch_dims = 1: per row pick one column */
    rt_tensor *ind = kt_tensor(KT_I64, KSHAPE(3, 1), KVALS(1, 3, 0));
    cr_assert_eq(kt_run("relax.gather_nd", 1, KV({"batch_dims", ir_attr_int(1)}), KARGS(kt_val(x), kt_val(ind)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(3));
    kt_assert_vals(o.u.t, 3, KVALS(1, 7, 8));
    rt_value_clear(&o);
    /* scatter_nd: rows 2 and 0 replaced, then added */
    rt_tensor *si = kt_tensor(KT_I64, KSHAPE(2, 1), KVALS(2, 0));
    rt_tensor *up = kt_tensor(KT_F32, KSHAPE(2, 4), KVALS(-1, -1, -1, -1, 5, 5, 5, 5));
    cr_assert_eq(kt_run("relax.scatter_nd", 0, NULL, KARGS(kt_val(x), kt_val(si), kt_val(up)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 12, KVALS(5, 5, 5, 5, 4, 5, 6, 7, -1, -1, -1, -1));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.scatter_nd", 1, KV({"reduction", ir_attr_str(kt_ctx, "add")}), KARGS(kt_val(x), kt_val(si), kt_val(up)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 12, KVALS(5, 6, 7, 8, 4, 5, 6, 7, 7, 8, 9, 10));
    rt_value_clear(&o);
    rt_tensor *bad = kt_tensor(KT_I64, KSHAPE(1, 1), KVALS(3));
    cr_assert_eq(kt_run("relax.scatter_nd", 0, NULL, KARGS(kt_val(x), kt_val(bad), kt_val(up)), 3, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(b);
    rt_tensor_release(e);
    rt_tensor_release(s);
    rt_tensor_release(ind);
    rt_tensor_release(si);
    rt_tensor_release(up);
    rt_tensor_release(bad);
}

Test(kernels_more, sort_argsort_topk_nonzero) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(2, 4), KVALS(3, 1, 2, 1, -1, 5, 0, 4));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.sort", 0, NULL, KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 8, KVALS(1, 1, 2, 3, -1, 0, 4, 5));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.argsort", 1, KV({"descending", ir_attr_bool(true)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.u.t->dl.dtype.bits, 32);
    kt_assert_vals(o.u.t, 8, KVALS(0, 2, 1, 3, 1, 3, 2, 0)); /* stable among the equal 1s */
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.argsort", 1, KV({"axis", ir_attr_int(0)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 8, KVALS(1, 0, 1, 0, 0, 1, 0, 1));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.topk", 1, KV({"k", ir_attr_int(2)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.kind, RT_VAL_TUPLE);
    kt_assert_shape(o.u.tuple.items[0].u.t, KSHAPE(2, 2));
    kt_assert_vals(o.u.tuple.items[0].u.t, 4, KVALS(3, 2, 5, 4));
    kt_assert_vals(o.u.tuple.items[1].u.t, 4, KVALS(0, 2, 1, 3));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.topk", 3, KV({"k", ir_attr_int(1)}, {"largest", ir_attr_bool(false)}, {"ret_type", ir_attr_str(kt_ctx, "indices")}),
                        KARGS(kt_val(x)), 1, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.kind, RT_VAL_TENSOR);
    kt_assert_vals(o.u.t, 2, KVALS(1, 0));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.topk", 1, KV({"k", ir_attr_int(9)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor *z = kt_tensor(KT_I32, KSHAPE(2, 3), KVALS(0, 7, 0, 1, 0, 2));
    cr_assert_eq(kt_run("relax.nonzero", 0, NULL, KARGS(kt_val(z)), 1, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, KSHAPE(2, 3));
    kt_assert_vals(o.u.t, 6, KVALS(0, 1, 1, 1, 0, 2));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(z);
}

Test(kernels_more, losses_fma_collapse_sum) {
    /* predictions (N=2, C=3) as log-probabilities; targets (2) */
    rt_tensor *p = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(-1, -2, -3, -4, -5, -6));
    rt_tensor *t = kt_tensor(KT_I64, KSHAPE(2), KVALS(2, 0));
    rt_tensor *w = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, 2, 3));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.nll_loss", 0, NULL, KARGS(kt_val(p), kt_val(t), kt_val(w)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_shape(o.u.t, 0, NULL);
    kt_assert_close(o.u.t, KVALS((3 * 3 + 1 * 4) / 4.0), 1, 1e-6, 0); /* mean: sum / sum(w[t]) */
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.nn.nll_loss", 1, KV({"reduction", ir_attr_str(kt_ctx, "none")}), KARGS(kt_val(p), kt_val(t)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 2, KVALS(3, 4));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.nn.nll_loss", 2, KV({"reduction", ir_attr_str(kt_ctx, "sum")}, {"ignore_index", ir_attr_int(0)}),
                        KARGS(kt_val(p), kt_val(t)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 1, KVALS(3));
    rt_value_clear(&o);
    rt_tensor *lab = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(0, 0, 1, 1, 0, 0));
    cr_assert_eq(kt_run("relax.nn.cross_entropy_with_logits", 0, NULL, KARGS(kt_val(p), kt_val(lab)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 1, KVALS(3.5));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.ewise_fma", 0, NULL, KARGS(kt_val(p), kt_val(lab), kt_val(p)), 3, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 6, KVALS(-1, -2, -6, -8, -5, -6));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.collapse_sum_to", 0, NULL, KARGS(kt_val(p), kt_shape(KSHAPE(3))), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 3, KVALS(-5, -7, -9));
    rt_value_clear(&o);
    rt_tensor *like = kt_tensor(KT_F32, KSHAPE(2, 1), NULL);
    cr_assert_eq(kt_run("relax.collapse_sum_like", 0, NULL, KARGS(kt_val(p), kt_val(like)), 2, &o, &d), GR_OK, "%s", d.msg);
    kt_assert_vals(o.u.t, 2, KVALS(-6, -15));
    rt_value_clear(&o);
    cr_assert_eq(kt_run("relax.collapse_sum_to", 0, NULL, KARGS(kt_val(p), kt_shape(KSHAPE(2))), 2, &o, &d), GR_ERR_INVALID);
    rt_tensor *bad = kt_tensor(KT_I64, KSHAPE(2), KVALS(3, 0));
    cr_assert_eq(kt_run("relax.nn.nll_loss", 0, NULL, KARGS(kt_val(p), kt_val(bad)), 2, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(p);
    rt_tensor_release(t);
    rt_tensor_release(w);
    rt_tensor_release(lab);
    rt_tensor_release(like);
    rt_tensor_release(bad);
}

static rt_value tuple_of(int n, rt_tensor *a, rt_tensor *b) {
    rt_value t = rt_value_tuple((uint32_t)n);
    t.u.tuple.items[0] = rt_value_tensor(rt_tensor_retain(a));
    if (n > 1) t.u.tuple.items[1] = rt_value_tensor(rt_tensor_retain(b));
    return t;
}

static void einsum_check(const char *subs, int n, rt_tensor *a, rt_tensor *b, int ond,
                         const int64_t *oshape, const double *want) {
    rt_value args = tuple_of(n, a, b), o;
    gr_diag d;
    const ir_op_def *op = kt_op("relax.einsum");
    kt_kv kv[1] = {{"subscripts", ir_attr_str(kt_ctx, subs)}};
    rt_kernel_call call = {op, kt_attrs(op, 1, kv), &args, 1, NULL, NULL};
    gr_diag_clear(&d);
    cr_assert_eq(rt_kernel_run(&call, &o, &d), GR_OK, "%s: %s", subs, d.msg);
    kt_assert_shape(o.u.t, ond, oshape);
    kt_assert_close(o.u.t, want, rt_tensor_numel(o.u.t), 1e-6, 1e-6);
    rt_value_clear(&o);
    rt_value_clear(&args);
}

Test(kernels_more, einsum_forms) {
    rt_tensor *a = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(1, 2, 3, 4, 5, 6));
    rt_tensor *b = kt_tensor(KT_F32, KSHAPE(3, 2), KVALS(1, 0, 0, 1, 1, 1));
    rt_tensor *sq = kt_tensor(KT_F32, KSHAPE(2, 2), KVALS(1, 2, 3, 4));
    einsum_check("ij,jk->ik", 2, a, b, KSHAPE(2, 2), KVALS(4, 5, 10, 11));
    einsum_check("ij,jk", 2, a, b, KSHAPE(2, 2), KVALS(4, 5, 10, 11));
    einsum_check("ij->ji", 1, a, NULL, KSHAPE(3, 2), KVALS(1, 4, 2, 5, 3, 6));
    einsum_check("ii->", 1, sq, NULL, 0, NULL, KVALS(5));
    einsum_check("ii->i", 1, sq, NULL, KSHAPE(2), KVALS(1, 4));
    einsum_check("ij->", 1, a, NULL, 0, NULL, KVALS(21));
    rt_tensor *u = kt_tensor(KT_F32, KSHAPE(2), KVALS(1, 2)), *v = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, 10, 100));
    einsum_check("i,j->ij", 2, u, v, KSHAPE(2, 3), KVALS(1, 10, 100, 2, 20, 200));
    /* batched with a broadcast ellipsis: (2, 2, 3) x (3, 2) */
    rt_tensor *ba = kt_tensor(KT_F32, KSHAPE(2, 2, 3), KVALS(1, 2, 3, 4, 5, 6, 0, 0, 1, 1, 0, 0));
    einsum_check("...ij,...jk->...ik", 2, ba, b, KSHAPE(2, 2, 2), KVALS(4, 5, 10, 11, 1, 1, 1, 0));
    einsum_check("bij,jk->bik", 2, ba, b, KSHAPE(2, 2, 2), KVALS(4, 5, 10, 11, 1, 1, 1, 0));
    /* errors */
    rt_value args = tuple_of(2, a, a), o;
    gr_diag d;
    const ir_op_def *op = kt_op("relax.einsum");
    kt_kv kv[1] = {{"subscripts", ir_attr_str(kt_ctx, "ij,jk->ik")}};
    rt_kernel_call call = {op, kt_attrs(op, 1, kv), &args, 1, NULL, NULL};
    cr_assert_eq(rt_kernel_run(&call, &o, &d), GR_ERR_INVALID);
    kt_kv kv2[1] = {{"subscripts", ir_attr_str(kt_ctx, "i$,jk")}};
    call.attrs = kt_attrs(op, 1, kv2);
    cr_assert_eq(rt_kernel_run(&call, &o, &d), GR_ERR_INVALID);
    rt_value_clear(&args);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(sq);
    rt_tensor_release(u);
    rt_tensor_release(v);
    rt_tensor_release(ba);
}

/* attention vs a direct softmax(q k^T * scale + bias) v per (b, n, s) row, with masks. */
Test(kernels_more, attention_vs_naive) {
    int64_t B = 2, S = 3, T = 4, N = 2, H = 5, Hv = 3;
    rt_tensor *q = kt_rand(KSHAPE(B, S, N, H)), *k = kt_rand(KSHAPE(B, T, N, H));
    rt_tensor *v = kt_rand(KSHAPE(B, T, N, Hv)), *bias = kt_rand(KSHAPE(1, N, S, T));
    const float *qp = q->dl.data, *kp = k->dl.data, *vp = v->dl.data, *bp = bias->dl.data;
    for (int mode = 0; mode < 3; mode++) {
        rt_value o;
        gr_diag d;
        gr_status st;
        if (mode == 0)
            st = kt_run("relax.nn.attention", 0, NULL, KARGS(kt_val(q), kt_val(k), kt_val(v)), 3, &o, &d);
        else
            st = kt_run("relax.nn.attention", 2, KV({"scale", ir_attr_float(0.5)}, {"causal_mask", ir_attr_str(kt_ctx, mode == 1 ? "TopLeft" : "BottomRight")}),
                        KARGS(kt_val(q), kt_val(k), kt_val(v), kt_val(bias)), 4, &o, &d);
        cr_assert_eq(st, GR_OK, "%s", d.msg);
        kt_assert_shape(o.u.t, KSHAPE(B, S, N, Hv));
        double want[2 * 3 * 2 * 3];
        for (int64_t b = 0; b < B; b++)
            for (int64_t n = 0; n < N; n++)
                for (int64_t s = 0; s < S; s++) {
                    double sc[4], mx = -INFINITY, sum = 0;
                    for (int64_t t = 0; t < T; t++) {
                        double a = 0;
                        for (int64_t h = 0; h < H; h++) a += (double)qp[((b * S + s) * N + n) * H + h] * kp[((b * T + t) * N + n) * H + h];
                        a *= mode == 0 ? 1 / sqrt((double)H) : 0.5;
                        if (mode) a += bp[(n * S + s) * T + t];
                        bool masked = (mode == 1 && t > s) || (mode == 2 && t > s + T - S);
                        sc[t] = masked ? -INFINITY : a;
                        mx = fmax(mx, sc[t]);
                    }
                    for (int64_t t = 0; t < T; t++) sum += sc[t] == -INFINITY ? 0 : exp(sc[t] - mx);
                    for (int64_t h = 0; h < Hv; h++) {
                        double a = 0;
                        for (int64_t t = 0; t < T; t++)
                            if (sc[t] != -INFINITY) a += exp(sc[t] - mx) / sum * vp[((b * T + t) * N + n) * Hv + h];
                        want[((b * S + s) * N + n) * Hv + h] = a;
                    }
                }
        kt_assert_close(o.u.t, want, B * S * N * Hv, 1e-5, 1e-6);
        rt_value_clear(&o);
    }
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.attention", 0, NULL, KARGS(kt_val(q), kt_val(v), kt_val(v)), 3, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(q);
    rt_tensor_release(k);
    rt_tensor_release(v);
    rt_tensor_release(bias);
}
