/* Every kernel of the op table on bad input: missing args, wrong kinds, random tensors of
 * random ranks and dtypes, absent attrs. A kernel must return GR_OK with a value or an error
 * with a message naming the op; it must never crash (ASan/UBSan runs check memory too). */
#include "kernels_test_util.h"

TestSuite(kernels_robust, .init = kt_setup, .fini = kt_teardown);

static rt_value random_value(int kind) {
    static const DLDataType dts[] = {KT_F32, KT_I64, KT_I32, KT_BOOL, KT_U8, KT_F64};
    if (kind == 0) return kt_int(kt_randint(-3, 3));
    if (kind == 1) return kt_flt(kt_uniform() * 4);
    if (kind == 2) {
        int64_t dims[3] = {kt_randint(0, 3), kt_randint(1, 3), kt_randint(1, 4)};
        return kt_shape((int)kt_randint(0, 3), dims);
    }
    if (kind == 3) {
        rt_value v = {.kind = RT_VAL_NONE};
        return v;
    }
    int nd = (int)kt_randint(0, 5);
    int64_t shape[5];
    for (int i = 0; i < nd; i++) shape[i] = kt_randint(0, 4);
    rt_tensor *t = kt_tensor(dts[kt_randint(0, 5)], nd, shape, NULL);
    for (int64_t i = 0, n = rt_tensor_numel(t); i < n; i++) rt_tensor_set_f64(t, i, (double)kt_randint(-3, 3));
    return rt_value_tensor(t);
}

static void check_call(const ir_op_def *op, const ir_attrs *attrs, const rt_value *args,
                       uint32_t nargs) {
    rt_kernel_call call = {op, attrs, args, nargs, NULL, ir_span_named(kt_ctx, "fuzz_layer", false)};
    rt_value out = {.kind = RT_VAL_NONE};
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = rt_kernel_run(&call, &out, &d);
    if (st == GR_OK) {
        cr_assert_neq(out.kind, RT_VAL_NONE, "%s returned GR_OK without a value", op->name);
    } else {
        cr_assert_eq(out.kind, RT_VAL_NONE, "%s failed but left a value", op->name);
        cr_assert(strstr(d.msg, op->text_name), "%s: message does not name the op: %s", op->name, d.msg);
    }
    rt_value_clear(&out);
}

Test(kernels_robust, random_inputs_never_crash) {
    uint32_t n = ir_op_def_count();
    for (uint32_t oi = 0; oi < n; oi++) {
        const ir_op_def *op = ir_op_def_at(oi);
        if ((op->flags & IR_OPF_CALL_LIKE) || !rt_kernel_find(op)) continue;
        const ir_attrs *dflt = NULL;
        gr_diag d;
        if (ir_op_attrs_normalize(kt_ctx, op, NULL, &dflt, &d) != GR_OK) dflt = NULL;
        check_call(op, dflt, NULL, 0);
        for (int trial = 0; trial < 60; trial++) {
            rt_value args[8];   /* nn.lstm takes 8 */
            int max_args = op->max_args >= 0 ? op->max_args : 3;
            cr_assert_leq(max_args, 8, "%s: grow args[]", op->name);
            uint32_t nargs = (uint32_t)kt_randint(op->min_args > 0 ? op->min_args : 0, max_args);
            for (uint32_t i = 0; i < nargs; i++) {
                int kind = trial % 7 == 0 ? (int)kt_randint(0, 4) : (kt_randint(0, 5) == 0 ? (int)kt_randint(0, 3) : 4);
                if (op->flags & IR_OPF_CREATION && i == 0 && trial % 2) kind = 2;
                args[i] = random_value(kind);
            }
            /* concat takes a tuple */
            if (strcmp(op->name, "relax.concat") == 0 && nargs == 1 && trial % 2) {
                rt_value_clear(&args[0]);
                args[0] = rt_value_tuple((uint32_t)kt_randint(1, 3));
                for (uint32_t i = 0; i < args[0].u.tuple.n; i++) args[0].u.tuple.items[i] = random_value(4);
            }
            check_call(op, trial % 3 == 0 ? NULL : dflt, args, nargs);
            for (uint32_t i = 0; i < nargs; i++) rt_value_clear(&args[i]);
        }
    }
}

/* Attributes with wrong values: negative strides, huge axes, bad strings. */
Test(kernels_robust, bad_attrs_are_errors) {
    rt_tensor *x = kt_rand(KSHAPE(1, 2, 5, 5)), *w = kt_rand(KSHAPE(2, 2, 3, 3));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"strides", KI(0, 1)}), KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"padding", KI(1, 2, 3)}), KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.conv2d", 1, KV({"dilation", KI(-1, 1)}), KARGS(kt_val(x), kt_val(w)), 2, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.max_pool2d", 1, KV({"strides", KI(-2, 1)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.mean", 1, KV({"axis", KI(0, 0)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.nn.pad", 2, KV({"pad_width", KI(0, 0, 0, 0, 1, 1, 1, 1)}, {"pad_mode", ir_attr_str(kt_ctx, "wrap")}),
                        KARGS(kt_val(x)), 1, &o, &d), GR_ERR_UNSUPPORTED);
    cr_assert_eq(kt_run("relax.image.resize2d", 1, KV({"coordinate_transformation_mode", ir_attr_str(kt_ctx, "bogus")}),
                        KARGS(kt_val(x), kt_shape(KSHAPE(3, 3))), 2, &o, &d), GR_ERR_UNSUPPORTED);
    cr_assert_eq(kt_run("relax.split", 1, KV({"indices_or_sections", ir_attr_int(0)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    cr_assert_eq(kt_run("relax.arange", 0, NULL, KARGS(kt_flt(0), kt_flt(1e30), kt_flt(1)), 3, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(w);
}
