/* Reference kernels: registry coverage, elementwise/broadcast ops, activations, where, astype,
 * softmax and normalizations. Float tolerances: rtol 1e-5 / atol 1e-6 unless stated. */
#include "kernels_test_util.h"
#include "runtime/kernels/kernels_impl.h"

TestSuite(kernels, .init = kt_setup, .fini = kt_teardown);

/* Every op of the op table that is not call-like has a reference kernel. */
Test(kernels, every_table_op_has_a_kernel) {
    uint32_t n = ir_op_def_count(), missing = 0;
    cr_assert_gt(n, 0);
    char list[2048] = "";
    for (uint32_t i = 0; i < n; i++) {
        const ir_op_def *op = ir_op_def_at(i);
        if (op->flags & IR_OPF_CALL_LIKE) continue;
        if (!rt_kernel_find(op)) {
            missing++;
            strncat(list, op->name, sizeof(list) - strlen(list) - 2);
            strncat(list, " ", sizeof(list) - strlen(list) - 1);
        }
    }
    cr_assert_eq(missing, 0, "ops without a kernel: %s", list);
}

/* The family tables give each op of the op table one kernel at most (the registry is indexed
 * by op id: a second row would silently win), and a row off the table names an op the table
 * does not have (else it would hide from lookups by id). */
Test(kernels, kernel_rows_are_one_per_op) {
    uint32_t seen[IR_OP_COUNT] = {0};
    char dup[512] = "";
#define CHECK_FAMILY(f)                                                                  \
    for (size_t i = 0; i < rt_kernels_##f##_count; i++) {                                \
        const rt_kernel_entry *e = &rt_kernels_##f[i];                                   \
        if (e->op == IR_OP_NONE) {                                                       \
            cr_assert_not_null(e->name);                                                 \
            cr_assert_null(ir_op_def_find(e->name), "%s is in the op table", e->name);   \
            cr_assert_eq(rt_kernel_find(kt_op(e->name)), e->fn, "%s", e->name);          \
            continue;                                                                    \
        }                                                                                \
        cr_assert(e->op >= 0 && e->op < IR_OP_COUNT);                                    \
        if (seen[e->op]++) strncat(dup, ir_op_def_at((uint32_t)e->op)->name,             \
                                   sizeof(dup) - strlen(dup) - 1);                       \
        cr_assert_eq(rt_kernel_find(ir_op_def_at((uint32_t)e->op)), e->fn);              \
    }
    RT_KERNEL_FAMILIES(CHECK_FAMILY)
#undef CHECK_FAMILY
    cr_assert_str_empty(dup, "ops with two kernels: %s", dup);
}

Test(kernels, unknown_op_is_unsupported) {
    ir_op_def fake = {.name = "relax.no_such_op", .text_name = "R.no_such_op"};
    rt_kernel_call call = {.op = &fake};
    rt_value out;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_null(rt_kernel_find(&fake));
    cr_assert_eq(rt_kernel_run(&call, &out, &d), GR_ERR_UNSUPPORTED);
    cr_assert(strstr(d.msg, "R.no_such_op"));
}

Test(kernels, add_same_shape_and_scalar) {
    rt_tensor *a = kt_tensor(KT_F32, KSHAPE(2, 2), KVALS(1, 2, 3, 4));
    rt_tensor *b = kt_tensor(KT_F32, KSHAPE(2, 2), KVALS(10, 20, 30, 40));
    rt_tensor *s = kt_tensor(KT_F32, KSHAPE(), KVALS(0.5));
    rt_value o1, o2;
    rt_tensor *r = kt_ok("relax.add", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o1);
    kt_assert_shape(r, KSHAPE(2, 2));
    kt_assert_vals(r, 4, KVALS(11, 22, 33, 44));
    r = kt_ok("relax.multiply", 0, NULL, KARGS(kt_val(s), kt_val(a)), 2, &o2);
    kt_assert_shape(r, KSHAPE(2, 2));
    kt_assert_vals(r, 4, KVALS(0.5, 1, 1.5, 2));
    rt_value_clear(&o1);
    rt_value_clear(&o2);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(s);
}

/* Naive broadcast reference: index each operand by the output multi-index. */
static double bcast_get(const rt_tensor *t, int ond, const int64_t *oshape, int64_t flat) {
    int64_t idx[RT_MAX_NDIM], off = 0, stride = 1;
    for (int i = ond - 1; i >= 0; i--) {
        idx[i] = flat % oshape[i];
        flat /= oshape[i];
    }
    for (int i = t->dl.ndim - 1; i >= 0; i--) {
        int j = i + ond - t->dl.ndim;
        int64_t k = t->dl.shape[i] == 1 ? 0 : idx[j];
        off += k * stride;
        stride *= t->dl.shape[i];
    }
    return rt_tensor_get_f64(t, off);
}

typedef struct bcase {
    int na, nb;
    int64_t a[4], b[4];
    int no;
    int64_t o[4];
} bcase;

Test(kernels, binary_broadcast_vs_naive) {
    static const bcase cases[] = {
        {2, 1, {2, 3}, {3}, 2, {2, 3}},
        {3, 2, {2, 1, 3}, {4, 1}, 3, {2, 4, 3}},
        {4, 3, {1, 5, 1, 7}, {5, 3, 1}, 4, {1, 5, 3, 7}},
        {4, 4, {2, 3, 4, 5}, {1, 3, 1, 1}, 4, {2, 3, 4, 5}},
        {1, 4, {1}, {2, 1, 3, 1}, 4, {2, 1, 3, 1}},
        {2, 2, {4, 1}, {1, 6}, 2, {4, 6}},
    };
    static const char *const ops[] = {"relax.add", "relax.subtract", "relax.multiply",
                                      "relax.divide", "relax.maximum", "relax.minimum",
                                      "relax.power"};
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        const bcase *bc = &cases[ci];
        rt_tensor *a = kt_rand(bc->na, bc->a), *b = kt_rand(bc->nb, bc->b);
        for (int64_t i = 0; i < rt_tensor_numel(b); i++) /* keep divide/power well defined */
            ((float *)b->dl.data)[i] = 0.5f + fabsf(((float *)b->dl.data)[i]);
        for (int64_t i = 0; i < rt_tensor_numel(a); i++)
            ((float *)a->dl.data)[i] = fabsf(((float *)a->dl.data)[i]) + 0.1f;
        for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++) {
            rt_value out;
            rt_tensor *r = kt_ok(ops[oi], 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &out);
            kt_assert_shape(r, bc->no, bc->o);
            int64_t n = rt_tensor_numel(r);
            double *want = malloc(sizeof(double) * (size_t)n);
            for (int64_t i = 0; i < n; i++) {
                double x = bcast_get(a, bc->no, bc->o, i), y = bcast_get(b, bc->no, bc->o, i);
                want[i] = oi == 0 ? x + y : oi == 1 ? x - y : oi == 2 ? x * y : oi == 3 ? x / y
                        : oi == 4 ? fmax(x, y) : oi == 5 ? fmin(x, y) : pow(x, y);
            }
            kt_assert_close(r, want, n, 1e-5, 1e-6);
            free(want);
            rt_value_clear(&out);
        }
        rt_tensor_release(a);
        rt_tensor_release(b);
    }
}

Test(kernels, binary_shape_mismatch_is_error) {
    rt_tensor *a = kt_tensor(KT_F32, KSHAPE(2, 3), NULL), *b = kt_tensor(KT_F32, KSHAPE(4), NULL);
    rt_value out;
    gr_diag d;
    cr_assert_eq(kt_run("relax.add", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &out, &d),
                 GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "R.add"), "%s", d.msg);
    cr_assert(strstr(d.msg, "layer_x"), "%s", d.msg);
    cr_assert(strstr(d.msg, "(2, 3)") && strstr(d.msg, "(4,)"), "%s", d.msg);
    cr_assert_str_eq(d.layer, "layer_x");
    cr_assert_eq(out.kind, RT_VAL_NONE);
    rt_tensor *i = kt_tensor(KT_I32, KSHAPE(2, 3), NULL);
    cr_assert_eq(kt_run("relax.add", 0, NULL, KARGS(kt_val(a), kt_val(i)), 2, &out, &d),
                 GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "dtype"), "%s", d.msg);
    /* a shape argument where a tensor belongs */
    int64_t dims[1] = {3};
    cr_assert_eq(kt_run("relax.add", 0, NULL, KARGS(kt_val(a), kt_shape(1, dims)), 2, &out, &d),
                 GR_ERR_INVALID);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(i);
}

Test(kernels, integer_arithmetic) {
    rt_tensor *a = kt_tensor(KT_I64, KSHAPE(6), KVALS(7, -7, 7, -7, 0, 9));
    rt_tensor *b = kt_tensor(KT_I64, KSHAPE(6), KVALS(2, 2, -2, -2, 3, 0));
    rt_value o;
    rt_tensor *r = kt_ok("relax.divide", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 6, KVALS(3, -3, -3, 3, 0, 0)); /* truncating; x/0 gives 0, not a trap */
    rt_value_clear(&o);
    r = kt_ok("relax.floor_divide", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
    kt_assert_vals(r, 6, KVALS(3, -4, -4, 3, 0, 0));
    rt_value_clear(&o);
    r = kt_ok("relax.subtract", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
    kt_assert_vals(r, 6, KVALS(5, -9, 9, -5, -3, 9));
    rt_value_clear(&o);
    r = kt_ok("relax.power", 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
    kt_assert_vals(r, 6, KVALS(49, 49, 0, 0, 0, 1));
    rt_value_clear(&o);
    rt_tensor_release(a);
    rt_tensor_release(b);
    /* int32 and uint8 (computed wider, stored back) with broadcasting */
    rt_tensor *c = kt_tensor(KT_I32, KSHAPE(2, 2), KVALS(1, 2, 3, 4));
    rt_tensor *e = kt_tensor(KT_I32, KSHAPE(2), KVALS(10, 100));
    r = kt_ok("relax.multiply", 0, NULL, KARGS(kt_val(c), kt_val(e)), 2, &o);
    cr_assert_eq(r->dl.dtype.bits, 32);
    kt_assert_vals(r, 4, KVALS(10, 200, 30, 400));
    rt_value_clear(&o);
    rt_tensor *u = kt_tensor(KT_U8, KSHAPE(3), KVALS(250, 3, 7));
    rt_tensor *v = kt_tensor(KT_U8, KSHAPE(3), KVALS(5, 4, 1));
    r = kt_ok("relax.add", 0, NULL, KARGS(kt_val(u), kt_val(v)), 2, &o);
    cr_assert_eq(r->dl.dtype.code, kDLUInt);
    cr_assert_eq(r->dl.dtype.bits, 8);
    kt_assert_vals(r, 3, KVALS(255, 7, 8));
    rt_value_clear(&o);
    rt_tensor_release(c);
    rt_tensor_release(e);
    rt_tensor_release(u);
    rt_tensor_release(v);
}

Test(kernels, comparisons_give_bool) {
    rt_tensor *a = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(1, 2, 3, 4, 5, 6));
    rt_tensor *b = kt_tensor(KT_F32, KSHAPE(3), KVALS(2, 2, 7));
    static const char *const ops[] = {"relax.equal", "relax.not_equal", "relax.less",
                                      "relax.less_equal", "relax.greater", "relax.greater_equal"};
    static const double want[6][6] = {{0, 1, 0, 0, 0, 0}, {1, 0, 1, 1, 1, 1}, {1, 0, 1, 0, 0, 1},
                                      {1, 1, 1, 0, 0, 1}, {0, 0, 0, 1, 1, 0}, {0, 1, 0, 1, 1, 0}};
    for (int k = 0; k < 6; k++) {
        rt_value o;
        rt_tensor *r = kt_ok(ops[k], 0, NULL, KARGS(kt_val(a), kt_val(b)), 2, &o);
        cr_assert_eq(r->dl.dtype.code, kDLUInt);
        cr_assert_eq(r->dl.dtype.bits, 1);
        kt_assert_shape(r, KSHAPE(2, 3));
        kt_assert_vals(r, 6, want[k]);
        rt_value_clear(&o);
    }
    rt_tensor *i = kt_tensor(KT_I64, KSHAPE(3), KVALS(-1, 0, 5));
    rt_tensor *j = kt_tensor(KT_I64, KSHAPE(), KVALS(0));
    rt_value o;
    kt_assert_vals(kt_ok("relax.greater", 0, NULL, KARGS(kt_val(i), kt_val(j)), 2, &o), 3, KVALS(0, 0, 1));
    rt_value_clear(&o);
    rt_tensor *p = kt_tensor(KT_BOOL, KSHAPE(4), KVALS(0, 0, 1, 1));
    rt_tensor *q = kt_tensor(KT_BOOL, KSHAPE(4), KVALS(0, 1, 0, 1));
    kt_assert_vals(kt_ok("relax.logical_and", 0, NULL, KARGS(kt_val(p), kt_val(q)), 2, &o), 4, KVALS(0, 0, 0, 1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.logical_or", 0, NULL, KARGS(kt_val(p), kt_val(q)), 2, &o), 4, KVALS(0, 1, 1, 1));
    rt_value_clear(&o);
    kt_assert_vals(kt_ok("relax.logical_not", 0, NULL, KARGS(kt_val(p)), 1, &o), 4, KVALS(1, 1, 0, 0));
    rt_value_clear(&o);
    rt_tensor_release(a);
    rt_tensor_release(b);
    rt_tensor_release(i);
    rt_tensor_release(j);
    rt_tensor_release(p);
    rt_tensor_release(q);
}

typedef struct ucase {
    const char *op;
    double (*ref)(double);
} ucase;
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double r_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_rsqrt(double x) { return 1 / sqrt(fabs(x) + 0.1); }
static double r_neg(double x) { return -x; }
static double r_square(double x) { return x * x; }
static double r_sign(double x) { return (x > 0) - (x < 0); }

Test(kernels, unary_vs_libm) {
    static const ucase cases[] = {
        {"relax.nn.relu", r_relu}, {"relax.sigmoid", r_sigmoid}, {"relax.nn.gelu", r_gelu},
        {"relax.nn.gelu_tanh", r_gelu_tanh}, {"relax.nn.silu", r_silu}, {"relax.exp", exp},
        {"relax.tanh", tanh}, {"relax.erf", erf}, {"relax.sin", sin}, {"relax.cos", cos},
        {"relax.abs", fabs}, {"relax.negative", r_neg}, {"relax.floor", floor},
        {"relax.ceil", ceil}, {"relax.square", r_square}, {"relax.sign", r_sign},
    };
    rt_tensor *x = kt_rand(KSHAPE(3, 37));
    for (int64_t i = 0; i < 111; i++) ((float *)x->dl.data)[i] *= 4.0f;
    double want[111];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        rt_value o;
        rt_tensor *r = kt_ok(cases[k].op, 0, NULL, KARGS(kt_val(x)), 1, &o);
        kt_assert_shape(r, KSHAPE(3, 37));
        for (int i = 0; i < 111; i++) want[i] = cases[k].ref(((float *)x->dl.data)[i]);
        kt_assert_close(r, want, 111, 1e-5, 1e-6);
        rt_value_clear(&o);
    }
    /* positive-domain ops */
    for (int64_t i = 0; i < 111; i++) ((float *)x->dl.data)[i] = fabsf(((float *)x->dl.data)[i]) + 0.1f;
    rt_value o;
    rt_tensor *r = kt_ok("relax.rsqrt", 0, NULL, KARGS(kt_val(x)), 1, &o);
    for (int i = 0; i < 111; i++) want[i] = 1 / sqrt(((float *)x->dl.data)[i]);
    kt_assert_close(r, want, 111, 1e-5, 1e-6);
    rt_value_clear(&o);
    r = kt_ok("relax.log", 0, NULL, KARGS(kt_val(x)), 1, &o);
    for (int i = 0; i < 111; i++) want[i] = log(((float *)x->dl.data)[i]);
    kt_assert_close(r, want, 111, 1e-5, 1e-6);
    rt_value_clear(&o);
    (void)r_rsqrt;
    rt_tensor_release(x);
}

Test(kernels, unary_special_cases) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(5), KVALS(-2.5, -0.5, 0.5, 1.5, 2.5));
    rt_value o;
    kt_assert_vals(kt_ok("relax.round", 0, NULL, KARGS(kt_val(x)), 1, &o), 5, KVALS(-2, -0, 0, 2, 2));
    rt_value_clear(&o);
    rt_tensor *r = kt_ok("relax.nn.leakyrelu", 1, KV({"alpha", ir_attr_float(0.1)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_close(r, KVALS(-0.25, -0.05, 0.5, 1.5, 2.5), 5, 1e-6, 1e-7);
    rt_value_clear(&o);
    /* integer abs / negative stay integer */
    rt_tensor *i = kt_tensor(KT_I32, KSHAPE(3), KVALS(-3, 0, 4));
    r = kt_ok("relax.abs", 0, NULL, KARGS(kt_val(i)), 1, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 3, KVALS(3, 0, 4));
    rt_value_clear(&o);
    /* exp of an int tensor is an error, not a crash */
    gr_diag d;
    cr_assert_eq(kt_run("relax.exp", 0, NULL, KARGS(kt_val(i)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(i);
}

Test(kernels, clip_with_prim_args) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(5), KVALS(-3, -1, 0, 2, 9));
    rt_value o;
    rt_tensor *r = kt_ok("relax.clip", 0, NULL, KARGS(kt_val(x), kt_flt(-1.5), kt_flt(6.0)), 3, &o);
    kt_assert_vals(r, 5, KVALS(-1.5, -1, 0, 2, 6));
    rt_value_clear(&o);
    rt_tensor *i = kt_tensor(KT_I64, KSHAPE(3), KVALS(-5, 3, 50));
    r = kt_ok("relax.clip", 0, NULL, KARGS(kt_val(i), kt_int(0), kt_int(10)), 3, &o);
    cr_assert_eq(r->dl.dtype.bits, 64);
    kt_assert_vals(r, 3, KVALS(0, 3, 10));
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(i);
}

Test(kernels, where_broadcast) {
    rt_tensor *c = kt_tensor(KT_BOOL, KSHAPE(2, 1), KVALS(1, 0));
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, 2, 3));
    rt_tensor *y = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(10, 20, 30, 40, 50, 60));
    rt_value o;
    rt_tensor *r = kt_ok("relax.where", 0, NULL, KARGS(kt_val(c), kt_val(x), kt_val(y)), 3, &o);
    kt_assert_shape(r, KSHAPE(2, 3));
    kt_assert_vals(r, 6, KVALS(1, 2, 3, 40, 50, 60));
    rt_value_clear(&o);
    rt_tensor *xi = kt_tensor(KT_I64, KSHAPE(1), KVALS(7));
    rt_tensor *yi = kt_tensor(KT_I64, KSHAPE(2, 2), KVALS(1, 2, 3, 4));
    r = kt_ok("relax.where", 0, NULL, KARGS(kt_val(c), kt_val(xi), kt_val(yi)), 3, &o);
    kt_assert_vals(r, 4, KVALS(7, 7, 3, 4));
    rt_value_clear(&o);
    rt_tensor_release(c);
    rt_tensor_release(x);
    rt_tensor_release(y);
    rt_tensor_release(xi);
    rt_tensor_release(yi);
}

Test(kernels, astype) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(4), KVALS(-1.7, 0.2, 2.9, 0));
    rt_value o;
    rt_tensor *r = kt_ok("relax.astype", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_I32)}), KARGS(kt_val(x)), 1, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 4, KVALS(-1, 0, 2, 0));
    rt_value_clear(&o);
    r = kt_ok("relax.astype", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_BOOL)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 4, KVALS(1, 1, 1, 0));
    rt_value_clear(&o);
    r = kt_ok("relax.astype", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_F16)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_close(r, KVALS(-1.7, 0.2, 2.9, 0), 4, 1e-3, 0);
    rt_value_clear(&o);
    rt_tensor *big = kt_tensor(KT_I64, KSHAPE(2), NULL);
    ((int64_t *)big->dl.data)[0] = INT64_MAX;
    ((int64_t *)big->dl.data)[1] = -3;
    r = kt_ok("relax.astype", 1, KV({"dtype", ir_attr_dtype(IR_DTYPE_I64)}), KARGS(kt_val(big)), 1, &o);
    cr_assert_eq(((int64_t *)r->dl.data)[0], INT64_MAX);
    cr_assert_neq(r, big); /* a fresh tensor */
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(big);
}

/* ---- softmax and normalizations ---- */

Test(kernels, softmax_and_log_softmax) {
    rt_tensor *x = kt_rand(KSHAPE(2, 5, 3));
    for (int axis = -1; axis <= 1; axis++) {
        rt_value o1, o2;
        rt_tensor *s = kt_ok("relax.nn.softmax", 1, KV({"axis", ir_attr_int(axis)}), KARGS(kt_val(x)), 1, &o1);
        rt_tensor *l = kt_ok("relax.nn.log_softmax", 1, KV({"axis", ir_attr_int(axis)}), KARGS(kt_val(x)), 1, &o2);
        int ax = axis < 0 ? 2 : axis;
        int64_t st[3] = {15, 3, 1}, dims[3] = {2, 5, 3};
        double want[30], wlog[30];
        for (int64_t i = 0; i < 30; i++) {
            int64_t base = i - ((i / st[ax]) % dims[ax]) * st[ax];
            double sum = 0;
            for (int64_t k = 0; k < dims[ax]; k++) sum += exp(((float *)x->dl.data)[base + k * st[ax]]);
            want[i] = exp(((float *)x->dl.data)[i]) / sum;
            wlog[i] = ((float *)x->dl.data)[i] - log(sum);
        }
        kt_assert_close(s, want, 30, 1e-5, 1e-6);
        kt_assert_close(l, wlog, 30, 1e-5, 1e-6);
        rt_value_clear(&o1);
        rt_value_clear(&o2);
    }
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.softmax", 1, KV({"axis", ir_attr_int(3)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
}

Test(kernels, batch_norm_inference_tuple) {
    rt_tensor *x = kt_rand(KSHAPE(2, 3, 2, 2));
    rt_tensor *g = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, 2, 0.5));
    rt_tensor *b = kt_tensor(KT_F32, KSHAPE(3), KVALS(0, 1, -1));
    rt_tensor *m = kt_tensor(KT_F32, KSHAPE(3), KVALS(0.1, -0.2, 0.3));
    rt_tensor *v = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, 4, 0.25));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.batch_norm", 1, KV({"epsilon", ir_attr_float(1e-3)}),
                        KARGS(kt_val(x), kt_val(g), kt_val(b), kt_val(m), kt_val(v)), 5, &o, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(o.kind, RT_VAL_TUPLE);
    cr_assert_eq(o.u.tuple.n, 3);
    double want[24];
    for (int i = 0; i < 24; i++) {
        int ch = (i / 4) % 3;
        double gg[3] = {1, 2, 0.5}, bb[3] = {0, 1, -1}, mm[3] = {0.1, -0.2, 0.3}, vv[3] = {1, 4, 0.25};
        want[i] = (((float *)x->dl.data)[i] - mm[ch]) / sqrt(vv[ch] + 1e-3) * gg[ch] + bb[ch];
    }
    kt_assert_close(o.u.tuple.items[0].u.t, want, 24, 1e-5, 1e-6);
    kt_assert_vals(o.u.tuple.items[1].u.t, 3, KVALS(0.1f, -0.2f, 0.3f));
    rt_value_clear(&o);
    /* wrong parameter length */
    cr_assert_eq(kt_run("relax.nn.batch_norm", 0, NULL,
                        KARGS(kt_val(x), kt_val(g), kt_val(b), kt_val(m), kt_val(x)), 5, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
    rt_tensor_release(g);
    rt_tensor_release(b);
    rt_tensor_release(m);
    rt_tensor_release(v);
}

Test(kernels, layer_norm_vs_naive) {
    rt_tensor *x = kt_rand(KSHAPE(3, 4, 5));
    rt_tensor *g = kt_rand(KSHAPE(4, 5)), *b = kt_rand(KSHAPE(4, 5));
    rt_value o;
    rt_tensor *r = kt_ok("relax.nn.layer_norm", 2, KV({"axes", KI(-2, -1)}, {"epsilon", ir_attr_float(1e-5)}),
                         KARGS(kt_val(x), kt_val(g), kt_val(b)), 3, &o);
    double want[60];
    const float *xp = x->dl.data, *gp = g->dl.data, *bp = b->dl.data;
    for (int row = 0; row < 3; row++) {
        double mu = 0, var = 0;
        for (int i = 0; i < 20; i++) mu += xp[row * 20 + i];
        mu /= 20;
        for (int i = 0; i < 20; i++) var += (xp[row * 20 + i] - mu) * (xp[row * 20 + i] - mu);
        var /= 20;
        for (int i = 0; i < 20; i++) want[row * 20 + i] = (xp[row * 20 + i] - mu) / sqrt(var + 1e-5) * gp[i] + bp[i];
    }
    kt_assert_close(r, want, 60, 1e-5, 1e-5);
    rt_value_clear(&o);
    rt_tensor_release(x);
    rt_tensor_release(g);
    rt_tensor_release(b);
}

Test(kernels, group_norm_vs_naive) {
    rt_tensor *x = kt_rand(KSHAPE(2, 6, 3, 2));
    rt_tensor *g = kt_rand(KSHAPE(6)), *b = kt_rand(KSHAPE(6));
    rt_value o;
    gr_diag d;
    gr_status st = kt_run("relax.nn.group_norm", 3, KV({"num_groups", ir_attr_int(3)}, {"channel_axis", ir_attr_int(1)}, {"axes", KI(2, 3)}),
                          KARGS(kt_val(x), kt_val(g), kt_val(b)), 3, &o, &d);
    if (st == GR_OK) {
        double want[72];
        const float *xp = x->dl.data, *gp = g->dl.data, *bp = b->dl.data;
        for (int n = 0; n < 2; n++)
            for (int gi = 0; gi < 3; gi++) {
                const float *blk = xp + (n * 6 + gi * 2) * 6;
                double mu = 0, var = 0;
                for (int i = 0; i < 12; i++) mu += blk[i];
                mu /= 12;
                for (int i = 0; i < 12; i++) var += (blk[i] - mu) * (blk[i] - mu);
                var /= 12;
                for (int i = 0; i < 12; i++) {
                    int ch = gi * 2 + i / 6;
                    want[(n * 6 + gi * 2) * 6 + i] = (blk[i] - mu) / sqrt(var + 1e-5) * gp[ch] + bp[ch];
                }
            }
        kt_assert_close(o.u.t, want, 72, 1e-5, 1e-5);
        rt_value_clear(&o);
    } else {
        cr_assert_fail("group_norm: %s", d.msg);
    }
    rt_tensor_release(x);
    rt_tensor_release(g);
    rt_tensor_release(b);
}

Test(kernels, prelu_and_instance_norm) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 2, 2), KVALS(-1, 2, -3, 4));
    rt_tensor *a = kt_tensor(KT_F32, KSHAPE(2), KVALS(0.5, 0.25));
    rt_value o;
    rt_tensor *r = kt_ok("relax.nn.prelu", 0, NULL, KARGS(kt_val(x), kt_val(a)), 2, &o);
    kt_assert_vals(r, 4, KVALS(-0.5, 2, -0.75, 4));
    rt_value_clear(&o);
    rt_tensor *g = kt_tensor(KT_F32, KSHAPE(2), KVALS(1, 2)), *b = kt_tensor(KT_F32, KSHAPE(2), KVALS(0, 1));
    r = kt_ok("relax.nn.instance_norm", 1, KV({"axes", KI(2)}), KARGS(kt_val(x), kt_val(g), kt_val(b)), 3, &o);
    /* channel 0: (-1, 2) -> mean 0.5, var 2.25; channel 1: (-3, 4) -> mean 0.5, var 12.25 */
    kt_assert_close(r, KVALS(-1.5 / sqrt(2.25 + 1e-5), 1.5 / sqrt(2.25 + 1e-5),
                             2 * -3.5 / sqrt(12.25 + 1e-5) + 1, 2 * 3.5 / sqrt(12.25 + 1e-5) + 1), 4, 1e-5, 1e-6);
    rt_value_clear(&o);
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.instance_norm", 1, KV({"axes", KI(1)}), KARGS(kt_val(x), kt_val(g), kt_val(b)), 3, &o, &d), GR_ERR_UNSUPPORTED);
    rt_tensor_release(x);
    rt_tensor_release(a);
    rt_tensor_release(g);
    rt_tensor_release(b);
}

Test(kernels, dropout_is_identity_pair) {
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(3), KVALS(1, -2, 3));
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.nn.dropout", 1, KV({"rate", ir_attr_float(0.3)}), KARGS(kt_val(x)), 1, &o, &d), GR_OK);
    cr_assert_eq(o.kind, RT_VAL_TUPLE);
    kt_assert_vals(o.u.tuple.items[0].u.t, 3, KVALS(1, -2, 3));
    rt_value_clear(&o);
    rt_tensor_release(x);
}

/* ---- reductions ---- */

Test(kernels, reductions_vs_naive) {
    rt_tensor *x = kt_rand(KSHAPE(3, 4, 5));
    const float *xp = x->dl.data;
    struct { int n; int64_t ax[2]; bool keep; } cases[] = {
        {1, {1}, false}, {1, {-1}, true}, {2, {0, 2}, false}, {0, {0}, false}, {2, {0, 2}, true}};
    static const char *const ops[] = {"relax.sum", "relax.mean", "relax.max", "relax.min", "relax.variance", "relax.prod"};
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        bool red[3] = {cases[ci].n == 0, cases[ci].n == 0, cases[ci].n == 0};
        for (int i = 0; i < cases[ci].n; i++) red[(cases[ci].ax[i] + 3) % 3] = true;
        int64_t os[3], ostr[3], s = 1, onum = 1;
        for (int i = 2; i >= 0; i--) {
            os[i] = red[i] ? 1 : (i == 0 ? 3 : i == 1 ? 4 : 5);
            ostr[i] = s;
            s *= os[i];
        }
        onum = s;
        for (size_t oi = 0; oi < 6; oi++) {
            kt_kv kv[2] = {{"axis", cases[ci].n ? ir_attr_ints(kt_ctx, (uint32_t)cases[ci].n, cases[ci].ax) : ir_attr_none()},
                           {"keepdims", ir_attr_bool(cases[ci].keep)}};
            rt_value o;
            rt_tensor *r = kt_ok(ops[oi], 2, kv, KARGS(kt_val(x)), 1, &o);
            double acc[60], acc2[60];
            int64_t cnt[60] = {0};
            for (int i = 0; i < onum; i++) {
                acc[i] = oi == 2 ? -INFINITY : oi == 3 ? INFINITY : oi == 5 ? 1 : 0;
                acc2[i] = 0;
            }
            for (int i = 0; i < 60; i++) {
                int id[3] = {i / 20, (i / 5) % 4, i % 5};
                int64_t at = 0;
                for (int k = 0; k < 3; k++) at += (red[k] ? 0 : id[k]) * ostr[k];
                double v = xp[i];
                if (oi == 2) acc[at] = fmax(acc[at], v);
                else if (oi == 3) acc[at] = fmin(acc[at], v);
                else if (oi == 5) acc[at] *= v;
                else { acc[at] += v; acc2[at] += v * v; }
                cnt[at]++;
            }
            for (int i = 0; i < onum; i++) {
                if (oi == 1) acc[i] /= (double)cnt[i];
                if (oi == 4) { double m = acc[i] / (double)cnt[i]; acc[i] = acc2[i] / (double)cnt[i] - m * m; }
            }
            int rank = 0;
            for (int k = 0; k < 3; k++) rank += cases[ci].keep || !red[k];
            cr_assert_eq(r->dl.ndim, rank, "op %s case %zu", ops[oi], ci);
            kt_assert_close(r, acc, onum, 1e-5, 1e-6);
            rt_value_clear(&o);
        }
    }
    rt_value o;
    gr_diag d;
    cr_assert_eq(kt_run("relax.sum", 1, KV({"axis", KI(3)}), KARGS(kt_val(x)), 1, &o, &d), GR_ERR_INVALID);
    rt_tensor_release(x);
}

Test(kernels, integer_reductions_and_arg) {
    rt_tensor *x = kt_tensor(KT_I64, KSHAPE(2, 3), KVALS(5, -1, 7, 2, 2, -9));
    rt_value o;
    rt_tensor *r = kt_ok("relax.sum", 1, KV({"axis", KI(1)}), KARGS(kt_val(x)), 1, &o);
    cr_assert_eq(r->dl.dtype.code, kDLInt);
    kt_assert_vals(r, 2, KVALS(11, -5));
    rt_value_clear(&o);
    r = kt_ok("relax.max", 1, KV({"axis", KI(0)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 3, KVALS(5, 2, 7));
    rt_value_clear(&o);
    r = kt_ok("relax.prod", 0, NULL, KARGS(kt_val(x)), 1, &o);
    kt_assert_shape(r, 0, NULL);
    kt_assert_vals(r, 1, KVALS(5.0 * -1 * 7 * 2 * 2 * -9));
    rt_value_clear(&o);
    r = kt_ok("relax.argmax", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x)), 1, &o);
    cr_assert_eq(r->dl.dtype.bits, 64);
    kt_assert_vals(r, 2, KVALS(2, 0)); /* ties pick the first */
    rt_value_clear(&o);
    r = kt_ok("relax.argmin", 0, NULL, KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 1, KVALS(5));
    rt_value_clear(&o);
    r = kt_ok("relax.cumsum", 1, KV({"axis", ir_attr_int(1)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 6, KVALS(5, 4, 11, 2, 4, -5));
    rt_value_clear(&o);
    r = kt_ok("relax.cumsum", 2, KV({"axis", ir_attr_int(0)}, {"exclusive", ir_attr_bool(true)}), KARGS(kt_val(x)), 1, &o);
    kt_assert_vals(r, 6, KVALS(0, 0, 0, 5, -1, 7));
    rt_value_clear(&o);
    rt_tensor_release(x);
}
