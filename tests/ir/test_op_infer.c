/* The op table, attribute normalization and struct info inference of every op. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "ir/op.h"
#include "ir/text/parser.h"

static ir_ctx_t *ctx;
static gr_diag diag;

static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(op_table, .init = setup, .fini = teardown);
TestSuite(op_infer, .init = setup, .fini = teardown);

/* ---- helpers ---- */

#define F32 IR_DTYPE_F32
#define MAXD 8

/* A var of tensor type with static dims; dims[i] < -1 is not allowed, -1 is literal. */
static ir_expr *tvar_v(ir_dtype dt, int n, const int64_t *shape) {
    return (ir_expr *)ir_var_new(ctx, "x", ir_sinfo_tensor_static(ctx, dt, n, shape), NULL);
}
#define TV(dt, ...) \
    tvar_v(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define T(...) TV(F32, __VA_ARGS__)

static ir_expr *tvar_s(ir_dtype dt, int n, const ir_prim *const *dims) {
    return (ir_expr *)ir_var_new(ctx, "x", ir_sinfo_tensor(ctx, dt, n, dims), NULL);
}
static ir_expr *tvar_ndim(ir_dtype dt, int n) { return tvar_s(dt, n, NULL); }
static ir_expr *scalar(ir_dtype dt) { return tvar_s(dt, 0, NULL); }

static const ir_prim *I(int64_t v) { return ir_prim_int(ctx, v); }

static ir_expr *shape_v(int n, const int64_t *v) {
    const ir_prim *dims[MAXD];
    for (int i = 0; i < n; i++) dims[i] = I(v[i]);
    return (ir_expr *)ir_shape_expr_new(ctx, (uint32_t)n, dims, NULL);
}
#define SHAPE(...) \
    shape_v((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static ir_expr *pv(int64_t v) { return (ir_expr *)ir_primval_int(ctx, I(v), NULL); }

static ir_expr *tuple_v(int n, ir_expr *const *f) {
    ir_tuple *t = ir_tuple_new(ctx, (uint32_t)n, f, NULL);
    const ir_sinfo *fs[32];
    for (int i = 0; i < n; i++) fs[i] = f[i]->sinfo;
    ir_expr_set_sinfo(&t->base, ir_sinfo_tuple(ctx, (uint32_t)n, fs));
    return &t->base;
}
#define TUP(...) \
    tuple_v((int)(sizeof((ir_expr *[]){__VA_ARGS__}) / sizeof(ir_expr *)), (ir_expr *[]){__VA_ARGS__})
static ir_expr *ints_tuple(int n, const int64_t *v) {
    ir_expr *f[MAXD];
    for (int i = 0; i < n; i++) f[i] = pv(v[i]);
    return tuple_v(n, f);
}
#define ITUP(...) \
    ints_tuple((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static ir_attr ints(int n, const int64_t *v) { return ir_attr_ints(ctx, (uint32_t)n, v); }
#define INTS(...) ints((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define STR(s) ir_attr_str(ctx, s)

/* attrs(n, "k", attr, ...) */
static const ir_attrs *attrs(int n, ...) {
    const char *keys[16];
    ir_attr vals[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        keys[i] = va_arg(ap, const char *);
        vals[i] = va_arg(ap, ir_attr);
    }
    va_end(ap);
    return ir_attrs_new(ctx, (uint32_t)n, keys, vals);
}

static const ir_call *last_call;

/* Builds op(args...) with attrs normalized, span "layer1", and infers it. */
static const ir_sinfo *infer_sa(const char *op, const ir_attrs *given, uint32_t nsi,
                                const ir_sinfo *const *si, int nargs, ir_expr *const *args) {
    gr_diag_clear(&diag);
    const ir_op_def *def = ir_op_def_find(op);
    cr_assert_not_null(def, "no op %s", op);
    const ir_attrs *norm = NULL;
    if (ir_op_attrs_normalize(ctx, def, given, &norm, &diag) != GR_OK) return NULL;
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get_def(ctx, def), (uint32_t)nargs, args, norm,
                             nsi, si, ir_span_named(ctx, "layer1", false));
    last_call = c;
    return ir_op_infer(ctx, c, &diag);
}
#define INFER(op, at, ...)                                                                   \
    infer_sa(op, at, 0, NULL, (int)(sizeof((ir_expr *[]){__VA_ARGS__}) / sizeof(ir_expr *)), \
             (ir_expr *[]){__VA_ARGS__})

static const char *S(const ir_sinfo *s) {
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ % 4];
    ir_sinfo_snprint(s, b, 1024);
    return b;
}

#define EXPECT(got, want)                                          \
    do {                                                           \
        const ir_sinfo *g_ = (got);                                \
        cr_assert_not_null(g_, "unexpected error: %s", diag.msg); \
        cr_assert_str_eq(S(g_), want);                             \
    } while (0)

#define EXPECT_ERR(got, substr)                                                         \
    do {                                                                                \
        const ir_sinfo *g_ = (got);                                                     \
        cr_assert_null(g_, "expected an error, got %s", g_ ? S(g_) : "");               \
        cr_assert_neq(diag.code, GR_OK);                                                \
        cr_assert(strstr(diag.msg, substr), "message '%s' lacks '%s'", diag.msg, substr); \
    } while (0)

#define TS(...) "R.Tensor((" __VA_ARGS__ "), dtype=\"float32\")"

/* ---- table ---- */

Test(op_table, lookup_by_every_spelling) {
    cr_assert_gt(ir_op_def_count(), 60);
    for (uint32_t i = 0; i < ir_op_def_count(); i++) {
        const ir_op_def *d = ir_op_def_at(i);
        cr_assert_eq(d->index, i);
        cr_assert_eq(ir_op_def_find(d->name), d);
        cr_assert_eq(ir_op_def_find(d->text_name), d);
        cr_assert_eq(ir_op_def_find(d->name + 6), d);
        cr_assert_eq(strncmp(d->name, "relax.", 6), 0);
        cr_assert_str_eq(d->text_name + 2, d->name + 6);
        cr_assert_not_null(d->infer);
        cr_assert_eq(ir_op_get_def(ctx, d), ir_op_get(ctx, d->text_name));
    }
    cr_assert_null(ir_op_def_at(ir_op_def_count()));
    cr_assert_null(ir_op_def_find("relax.no_such_op"));
    cr_assert_null(ir_op_def_find("nn.conv3d_missing"));
    cr_assert_null(ir_op_def_find(NULL));
    cr_assert_str_eq(ir_op_def_find("nn.conv2d")->text_name, "R.nn.conv2d");
    cr_assert_str_eq(ir_op_def_find("R.image.resize2d")->name, "relax.image.resize2d");
    cr_assert(ir_op_def_find("call_dps_packed")->flags & IR_OPF_CALL_LIKE);
}

Test(op_table, every_default_parses) {
    /* Normalizing with required fields supplied fills every field in schema order. */
    for (uint32_t i = 0; i < ir_op_def_count(); i++) {
        const ir_op_def *d = ir_op_def_at(i);
        const char *keys[32];
        ir_attr vals[32];
        uint32_t n = 0;
        for (uint16_t j = 0; j < d->nattrs; j++)
            if (!d->attrs[j].dflt) {
                keys[n] = d->attrs[j].name;
                uint8_t k = d->attrs[j].kind;
                vals[n++] = k == IR_ATTR_DTYPE ? ir_attr_dtype(F32)
                            : k == IR_ATTR_INT ? ir_attr_int(1)
                            : k == IR_ATTR_STR ? ir_attr_str(ctx, "ij->ji")
                                               : INTS(0);
            }
        const ir_attrs *out = NULL;
        gr_diag_clear(&diag);
        cr_assert_eq(ir_op_attrs_normalize(ctx, d, n ? ir_attrs_new(ctx, n, keys, vals) : NULL,
                                           &out, &diag),
                     GR_OK, "%s: %s", d->name, diag.msg);
        cr_assert_eq(out ? out->n : 0, d->nattrs);
        for (uint16_t j = 0; j < d->nattrs; j++) cr_assert_str_eq(out->keys[j], d->attrs[j].name);
    }
}

/* The op ids: one per row, in table order; every id has a name that resolves back to it, and
 * a call's id is its op's. A stand-in def that is not a row of the table has no id. */
Test(op_table, op_ids_round_trip) {
    cr_assert_eq((uint32_t)IR_OP_COUNT, ir_op_def_count());
    cr_assert_eq(ir_op_def_at(IR_OP_CONV2D), ir_op_def_find("relax.nn.conv2d"));
    cr_assert_eq(ir_op_def_at(IR_OP_ADD), ir_op_def_find("R.add"));
    cr_assert_eq(ir_op_def_at(IR_OP_CALL_TIR), ir_op_def_find("call_tir"));
    for (uint32_t i = 0; i < IR_OP_COUNT; i++) {
        const ir_op_def *d = ir_op_def_at(i);
        cr_assert_not_null(d->name);
        cr_assert_eq(ir_op_def_id(d), (ir_op_id)i, "%s", d->name);
        cr_assert_eq(ir_op_id_find(d->name), (ir_op_id)i, "%s", d->name);
        cr_assert_eq(ir_op_id_find(d->text_name), (ir_op_id)i, "%s", d->text_name);
    }
    cr_assert_eq(ir_op_id_find("relax.no_such_op"), IR_OP_NONE);
    cr_assert_eq(ir_op_id_find(NULL), IR_OP_NONE);
    ir_op_def fake = *ir_op_def_at(IR_OP_ADD);
    cr_assert_eq(ir_op_def_id(&fake), IR_OP_NONE);
    cr_assert_eq(ir_op_def_id(NULL), IR_OP_NONE);
    ir_expr *x = T(2, 3);
    ir_expr *args[1] = {x};
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.nn.relu"), 1, args, NULL, 0,
                             NULL, NULL);
    cr_assert_eq(ir_op_id_of(&c->base), IR_OP_RELU);
    cr_assert_eq(ir_op_id_of(x), IR_OP_NONE);
    cr_assert_eq(ir_op_id_of(NULL), IR_OP_NONE);
}

Test(op_table, is_op_call) {
    ir_expr *x = T(2, 3);
    ir_expr *args[1] = {x};
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.nn.relu"), 1, args, NULL, 0,
                             NULL, NULL);
    cr_assert(ir_is_op_call(&c->base, "relax.nn.relu"));
    cr_assert(ir_is_op_call(&c->base, "R.nn.relu"));
    cr_assert(ir_is_op_call(&c->base, "nn.relu"));
    cr_assert_not(ir_is_op_call(&c->base, "relax.nn.gelu"));
    cr_assert_not(ir_is_op_call(x, "relax.nn.relu"));
    cr_assert_not(ir_is_op_call(NULL, "relax.nn.relu"));
}

Test(op_table, conv2d_schema_order_and_defaults) {
    const ir_op_def *d = ir_op_def_find("relax.nn.conv2d");
    static const char *const order[] = {"strides", "padding", "dilation", "groups", "data_layout",
                                        "kernel_layout", "out_layout", "out_dtype"};
    cr_assert_eq(d->nattrs, 8);
    for (int i = 0; i < 8; i++) cr_assert_str_eq(d->attrs[i].name, order[i]);
    const ir_attrs *out;
    cr_assert_eq(ir_op_attrs_normalize(ctx, d, attrs(1, "padding", INTS(1, 2)), &out, &diag), GR_OK);
    int64_t v[8];
    cr_assert_eq(ir_attrs_get_ints(out, "padding", v, 8), 4); /* [t, l] -> [t, l, t, l] */
    cr_assert_eq(v[0], 1);
    cr_assert_eq(v[1], 2);
    cr_assert_eq(v[2], 1);
    cr_assert_eq(v[3], 2);
    cr_assert_eq(ir_attrs_get_ints(out, "strides", v, 8), 2);
    cr_assert_eq(v[0], 1);
    cr_assert_eq(ir_attrs_get_int(out, "groups", 0), 1);
    cr_assert_str_eq(ir_attrs_get_str(out, "data_layout"), "NCHW");
    const ir_attr *od = ir_attrs_get(out, "out_dtype");
    cr_assert_eq(od->kind, IR_ATTR_DTYPE);
    cr_assert(ir_dtype_is_void(od->u.dtype));
    /* pools print dilation before padding, as TVM does */
    const ir_op_def *p = ir_op_def_find("R.nn.max_pool2d");
    cr_assert_str_eq(p->attrs[2].name, "dilation");
    cr_assert_str_eq(p->attrs[3].name, "padding");
}

Test(op_table, normalize_coerces_and_rejects) {
    const ir_op_def *pool = ir_op_def_find("relax.nn.max_pool2d");
    const ir_attrs *out;
    /* one int for a list attr expands to the default's length */
    cr_assert_eq(ir_op_attrs_normalize(ctx, pool, attrs(2, "pool_size", ir_attr_int(3), "padding",
                                                        ir_attr_int(1)), &out, &diag), GR_OK);
    int64_t v[8];
    cr_assert_eq(ir_attrs_get_ints(out, "pool_size", v, 8), 2);
    cr_assert_eq(v[1], 3);
    cr_assert_eq(ir_attrs_get_ints(out, "padding", v, 8), 4);
    cr_assert_eq(v[3], 1);
    /* ints are accepted where floats are expected */
    const ir_op_def *lr = ir_op_def_find("relax.nn.leakyrelu");
    cr_assert_eq(ir_op_attrs_normalize(ctx, lr, attrs(1, "alpha", ir_attr_int(1)), &out, &diag), GR_OK);
    cr_assert_eq(ir_attrs_get(out, "alpha")->kind, IR_ATTR_FLOAT);
    /* dtype given as a string */
    const ir_op_def *as = ir_op_def_find("relax.astype");
    cr_assert_eq(ir_op_attrs_normalize(ctx, as, attrs(1, "dtype", STR("float16")), &out, &diag), GR_OK);
    cr_assert(ir_dtype_eq(ir_attrs_get(out, "dtype")->u.dtype, IR_DTYPE_F16));
    /* unknown key */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, pool, attrs(1, "kernel", ir_attr_int(3)), &out, &diag), GR_OK);
    cr_assert(strstr(diag.msg, "R.nn.max_pool2d") && strstr(diag.msg, "'kernel'"), "%s", diag.msg);
    cr_assert_str_eq(diag.op, "R.nn.max_pool2d");
    /* wrong kind */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, pool, attrs(1, "layout", ir_attr_int(3)), &out, &diag), GR_OK);
    cr_assert(strstr(diag.msg, "layout"), "%s", diag.msg);
    /* missing required */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, as, NULL, &out, &diag), GR_OK);
    cr_assert(strstr(diag.msg, "dtype"), "%s", diag.msg);
    /* None only where the attr is optional */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, pool, attrs(1, "strides", ir_attr_none()), &out, &diag), GR_OK);
    cr_assert_eq(ir_op_attrs_normalize(ctx, ir_op_def_find("relax.mean"),
                                       attrs(1, "axis", ir_attr_none()), &out, &diag), GR_OK);
    /* bad dtype name */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, as, attrs(1, "dtype", STR("float33")), &out, &diag), GR_OK);
    /* attrs on an op without a schema */
    gr_diag_clear(&diag);
    cr_assert_neq(ir_op_attrs_normalize(ctx, ir_op_def_find("relax.add"),
                                        attrs(1, "axis", ir_attr_int(0)), &out, &diag), GR_OK);
}

/* ---- elementwise ---- */

Test(op_infer, unary_ops_keep_struct_info) {
    static const char *const ops[] = {"relax.exp", "relax.log", "relax.sqrt", "relax.rsqrt",
                                      "relax.erf", "relax.tanh", "relax.sigmoid", "relax.sin",
                                      "relax.cos", "relax.negative", "relax.abs", "relax.sign",
                                      "relax.floor", "relax.ceil", "relax.round", "relax.square",
                                      "relax.nn.relu", "relax.nn.gelu", "relax.nn.gelu_tanh",
                                      "relax.nn.silu", "relax.nn.leakyrelu"};
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *dims[2] = {n, I(4)};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        EXPECT(INFER(ops[i], NULL, T(2, 3)), TS("2, 3"));
        EXPECT(INFER(ops[i], NULL, tvar_s(F32, 2, dims)), TS("n, 4"));
        EXPECT(INFER(ops[i], NULL, tvar_ndim(F32, -1)), "R.Tensor(dtype=\"float32\")");
    }
    /* float-only ops reject integers, the others accept them */
    EXPECT_ERR(INFER("relax.exp", NULL, TV(IR_DTYPE_I32, 2)), "float");
    EXPECT_ERR(INFER("relax.nn.gelu", NULL, TV(IR_DTYPE_I32, 2)), "R.nn.gelu");
    EXPECT(INFER("relax.abs", NULL, TV(IR_DTYPE_I32, 2)), "R.Tensor((2,), dtype=\"int32\")");
    EXPECT(INFER("relax.logical_not", NULL, TV(IR_DTYPE_BOOL, 2)), "R.Tensor((2,), dtype=\"bool\")");
    /* wrong arity / not a tensor */
    EXPECT_ERR(INFER("relax.exp", NULL, T(2), T(2)), "expects 1 argument");
    EXPECT_ERR(INFER("relax.exp", NULL, SHAPE(2)), "tensor");
}

Test(op_infer, binary_broadcasting) {
    static const char *const ops[] = {"relax.add", "relax.subtract", "relax.multiply",
                                      "relax.divide", "relax.power", "relax.maximum",
                                      "relax.minimum", "relax.floor_divide"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        EXPECT(INFER(ops[i], NULL, T(2, 3), T(2, 3)), TS("2, 3"));
        EXPECT(INFER(ops[i], NULL, T(4, 1, 3), T(5, 1)), TS("4, 5, 3"));
    }
    EXPECT(INFER("relax.add", NULL, T(1), T(2, 3)), TS("2, 3"));
    EXPECT(INFER("relax.add", NULL, scalar(F32), T(2, 3)), TS("2, 3"));
    EXPECT(INFER("relax.add", NULL, T(2, 3), tvar_ndim(F32, 3)), "R.Tensor(ndim=3, dtype=\"float32\")");
    EXPECT(INFER("relax.add", NULL, T(2, 3), tvar_ndim(F32, -1)), "R.Tensor(dtype=\"float32\")");
    /* a prim value operand is a scalar */
    const ir_expr *p = (ir_expr *)ir_primval_float(ctx, F32, 1.0, NULL);
    EXPECT(INFER("relax.multiply", NULL, T(2, 3), (ir_expr *)p), TS("2, 3"));
    /* errors name the op, the shapes and the layer */
    EXPECT_ERR(INFER("relax.add", NULL, T(2, 3), T(4)),
               "R.add: cannot broadcast R.Tensor((2, 3), dtype=\"float32\") and "
               "R.Tensor((4,), dtype=\"float32\") (layer 'layer1')");
    cr_assert_str_eq(diag.layer, "layer1");
    cr_assert_str_eq(diag.op, "R.add");
    cr_assert_eq(diag.code, GR_ERR_TYPE);
    EXPECT_ERR(INFER("relax.add", NULL, T(2), TV(IR_DTYPE_I32, 2)), "float32 and int32");
    EXPECT_ERR(INFER("relax.add", NULL, T(2)), "expects 2 arguments");
    EXPECT_ERR(INFER("relax.add", NULL, T(2), SHAPE(2)), "must be tensors");
}

Test(op_infer, broadcasting_symbolic_dims) {
    const ir_prim *n = ir_prim_var(ctx, "n"), *m = ir_prim_var(ctx, "m");
    const ir_prim *d_n1[2] = {n, I(1)}, *d_14[2] = {I(1), I(4)}, *d_n4[2] = {n, I(4)};
    const ir_prim *d_m4[2] = {m, I(4)}, *d_2n[2] = {ir_prim_mul(ctx, n, I(2)), I(4)};
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_n1), tvar_s(F32, 2, d_14)), TS("n, 4"));
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_n4), tvar_s(F32, 2, d_n4)), TS("n, 4"));
    /* equal expressions are one node, so they broadcast */
    const ir_prim *d_nn[2] = {ir_prim_add(ctx, n, n), I(4)};
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_2n), tvar_s(F32, 2, d_nn)), TS("n * 2, 4"));
    /* different symbolic dims: only the rank is known (as TVM) */
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_n4), tvar_s(F32, 2, d_m4)),
           "R.Tensor(ndim=2, dtype=\"float32\")");
    /* a side that can never be 1 fixes the dim (n is 3 or 1): a departure from TVM */
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_n4), T(3, 4)), "R.Tensor((3, 4), dtype=\"float32\")");
    const ir_prim *d_up[2] = {ir_prim_add(ctx, ir_prim_mul(ctx, ir_prim_floordiv(ctx, n, I(32)), I(2)), I(2)), I(4)};
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_m4), tvar_s(F32, 2, d_up)), TS("n // 32 * 2 + 2, 4"));
    /* n - 1 may be 1: unknown */
    const ir_prim *d_nm1[2] = {ir_prim_add(ctx, n, I(-1)), I(4)};
    EXPECT(INFER("relax.add", NULL, tvar_s(F32, 2, d_m4), tvar_s(F32, 2, d_nm1)),
           "R.Tensor(ndim=2, dtype=\"float32\")");
    /* a static mismatch in another dim is still an error */
    EXPECT_ERR(INFER("relax.add", NULL, tvar_s(F32, 2, d_n4), T(3, 5)), "cannot broadcast");
}

Test(op_infer, comparisons_and_logical) {
    static const char *const ops[] = {"relax.equal", "relax.not_equal", "relax.greater",
                                      "relax.greater_equal", "relax.less", "relax.less_equal"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        EXPECT(INFER(ops[i], NULL, T(2, 3), T(3)), "R.Tensor((2, 3), dtype=\"bool\")");
    EXPECT_ERR(INFER("relax.less", NULL, T(2, 3), T(2)), "cannot broadcast");
    EXPECT(INFER("relax.logical_and", NULL, TV(IR_DTYPE_BOOL, 2), TV(IR_DTYPE_BOOL, 1)),
           "R.Tensor((2,), dtype=\"bool\")");
    EXPECT(INFER("relax.logical_or", NULL, TV(IR_DTYPE_BOOL, 2), TV(IR_DTYPE_BOOL, 2)),
           "R.Tensor((2,), dtype=\"bool\")");
    EXPECT_ERR(INFER("relax.logical_and", NULL, T(2), T(2)), "bool");
}

Test(op_infer, where_and_clip) {
    EXPECT(INFER("relax.where", NULL, TV(IR_DTYPE_BOOL, 2, 1), T(1, 3), T(3)), TS("2, 3"));
    EXPECT_ERR(INFER("relax.where", NULL, T(2, 3), T(2, 3), T(2, 3)), "bool");
    EXPECT_ERR(INFER("relax.where", NULL, TV(IR_DTYPE_BOOL, 2), T(2), TV(IR_DTYPE_I32, 2)),
               "float32 and int32");
    EXPECT_ERR(INFER("relax.where", NULL, TV(IR_DTYPE_BOOL, 2), T(3), T(3)), "cannot broadcast");
    EXPECT(INFER("relax.clip", NULL, T(1, 8), pv(0), pv(6)), TS("1, 8"));
    EXPECT_ERR(INFER("relax.clip", NULL, T(1, 8), T(1), pv(6)), "prim value");
    EXPECT_ERR(INFER("relax.clip", NULL, T(1, 8)), "expects 3 arguments");
}

Test(op_infer, astype) {
    EXPECT(INFER("relax.astype", attrs(1, "dtype", STR("float16")), T(2, 3)),
           "R.Tensor((2, 3), dtype=\"float16\")");
    EXPECT(INFER("relax.astype", attrs(1, "dtype", ir_attr_dtype(IR_DTYPE_I8)), tvar_ndim(F32, 4)),
           "R.Tensor(ndim=4, dtype=\"int8\")");
    EXPECT_ERR(INFER("relax.astype", NULL, T(2)), "missing required attribute 'dtype'");
}

/* ---- nn ---- */

Test(op_infer, softmax) {
    EXPECT(INFER("relax.nn.softmax", NULL, T(2, 10)), TS("2, 10"));
    EXPECT(INFER("relax.nn.log_softmax", attrs(1, "axis", ir_attr_int(0)), T(2, 10)), TS("2, 10"));
    EXPECT_ERR(INFER("relax.nn.softmax", attrs(1, "axis", ir_attr_int(2)), T(2, 10)),
               "axis 2 is out of range");
    EXPECT_ERR(INFER("relax.nn.softmax", NULL, TV(IR_DTYPE_I32, 2)), "float");
}

Test(op_infer, conv2d) {
    EXPECT(INFER("relax.nn.conv2d", NULL, T(1, 3, 224, 224), T(64, 3, 7, 7)), TS("1, 64, 218, 218"));
    /* strides, padding, dilation */
    EXPECT(INFER("relax.nn.conv2d",
                 attrs(2, "strides", INTS(2, 2), "padding", INTS(3, 3, 3, 3)),
                 T(1, 3, 224, 224), T(64, 3, 7, 7)),
           TS("1, 64, 112, 112"));
    EXPECT(INFER("relax.nn.conv2d", attrs(2, "dilation", INTS(2, 2), "padding", INTS(2)),
                 T(1, 8, 32, 32), T(8, 8, 3, 3)),
           TS("1, 8, 32, 32"));
    /* asymmetric padding: (top, left, bottom, right) */
    EXPECT(INFER("relax.nn.conv2d", attrs(1, "padding", INTS(0, 1, 2, 3)), T(1, 3, 10, 10),
                 T(4, 3, 3, 3)),
           TS("1, 4, 10, 12"));
    /* groups (depthwise) */
    EXPECT(INFER("relax.nn.conv2d", attrs(1, "groups", ir_attr_int(32)), T(1, 32, 16, 16),
                 T(32, 1, 3, 3)),
           TS("1, 32, 14, 14"));
    /* out_dtype */
    EXPECT(INFER("relax.nn.conv2d", attrs(1, "out_dtype", STR("float16")), T(1, 3, 8, 8),
                 T(4, 3, 1, 1)),
           "R.Tensor((1, 4, 8, 8), dtype=\"float16\")");
    /* symbolic spatial dims */
    const ir_prim *n = ir_prim_var(ctx, "n"), *h = ir_prim_var(ctx, "h");
    const ir_prim *xd[4] = {n, I(3), h, h};
    EXPECT(INFER("relax.nn.conv2d", attrs(2, "strides", INTS(2, 2), "padding", INTS(1, 1, 1, 1)),
                 tvar_s(F32, 4, xd), T(16, 3, 3, 3)),
           TS("n, 16, (h - 1) // 2 + 1, (h - 1) // 2 + 1"));
    EXPECT(INFER("relax.nn.conv2d", attrs(1, "padding", INTS(1, 1, 1, 1)), tvar_s(F32, 4, xd),
                 T(16, 3, 3, 3)),
           TS("n, 16, h, h"));
    /* unknown shape: rank only */
    EXPECT(INFER("relax.nn.conv2d", NULL, tvar_ndim(F32, 4), T(16, 3, 3, 3)),
           "R.Tensor(ndim=4, dtype=\"float32\")");
    /* errors */
    EXPECT_ERR(INFER("relax.nn.conv2d", NULL, T(1, 4, 8, 8), T(16, 3, 3, 3)), "input channels");
    EXPECT_ERR(INFER("relax.nn.conv2d", NULL, T(1, 3, 8), T(16, 3, 3, 3)), "data must be 4-D");
    EXPECT_ERR(INFER("relax.nn.conv2d", NULL, T(1, 3, 8, 8), T(16, 3, 3)), "weight must be 4-D");
    EXPECT(INFER("relax.nn.conv2d", attrs(1, "data_layout", STR("NHWC")), T(1, 8, 8, 3),
                 T(16, 3, 3, 3)),
           TS("1, 6, 6, 16"));
    EXPECT_ERR(INFER("relax.nn.conv2d", attrs(1, "data_layout", STR("NCHW8c")), T(1, 8, 8, 3),
                     T(16, 3, 3, 3)),
               "unsupported layout");
    EXPECT_ERR(INFER("relax.nn.conv2d", NULL, T(1, 3, 2, 2), T(16, 3, 3, 3)), "not positive");
    EXPECT_ERR(INFER("relax.nn.conv2d", NULL, T(1, 3, 8, 8), TV(IR_DTYPE_F16, 16, 3, 3, 3)),
               "must be equal");
    EXPECT_ERR(INFER("relax.nn.conv2d", attrs(1, "strides", INTS(0, 1)), T(1, 3, 8, 8),
                     T(16, 3, 3, 3)),
               "strides");
    EXPECT_ERR(INFER("relax.nn.conv2d", attrs(1, "groups", ir_attr_int(2)), T(1, 4, 8, 8),
                     T(3, 2, 3, 3)),
               "divisible by groups");
}

Test(op_infer, conv1d_and_transpose) {
    EXPECT(INFER("relax.nn.conv1d", attrs(2, "strides", INTS(2), "padding", INTS(1, 1)),
                 T(1, 4, 16), T(8, 4, 3)),
           TS("1, 8, 8"));
    EXPECT_ERR(INFER("relax.nn.conv1d", NULL, T(1, 4, 16, 1), T(8, 4, 3)), "3-D");
    /* (H - 1) * s - pads + dil * (k - 1) + output_padding + 1 */
    EXPECT(INFER("relax.nn.conv2d_transpose",
                 attrs(3, "strides", INTS(2, 2), "padding", INTS(1, 1, 1, 1), "output_padding",
                       INTS(1, 1)),
                 T(1, 16, 8, 8), T(16, 4, 3, 3)),
           TS("1, 4, 16, 16"));
    EXPECT(INFER("relax.nn.conv2d_transpose", attrs(1, "groups", ir_attr_int(2)), T(1, 16, 5, 5),
                 T(16, 4, 3, 3)),
           TS("1, 8, 7, 7"));
    EXPECT_ERR(INFER("relax.nn.conv2d_transpose", NULL, T(1, 8, 5, 5), T(16, 4, 3, 3)),
               "input channels");
}

Test(op_infer, pooling) {
    EXPECT(INFER("relax.nn.max_pool2d",
                 attrs(3, "pool_size", INTS(3, 3), "strides", INTS(2, 2), "padding",
                       INTS(1, 1, 1, 1)),
                 T(1, 64, 112, 112)),
           TS("1, 64, 56, 56"));
    EXPECT(INFER("relax.nn.avg_pool2d", attrs(2, "pool_size", INTS(2, 2), "strides", INTS(2, 2)),
                 T(1, 8, 7, 7)),
           TS("1, 8, 3, 3"));
    /* ceil_mode rounds up */
    EXPECT(INFER("relax.nn.max_pool2d",
                 attrs(3, "pool_size", INTS(2, 2), "strides", INTS(2, 2), "ceil_mode",
                       ir_attr_bool(true)),
                 T(1, 8, 7, 7)),
           TS("1, 8, 4, 4"));
    /* dilation */
    EXPECT(INFER("relax.nn.max_pool2d", attrs(2, "pool_size", INTS(3, 3), "dilation", INTS(2, 2)),
                 T(1, 1, 9, 9)),
           TS("1, 1, 5, 5"));
    const ir_prim *h = ir_prim_var(ctx, "h");
    const ir_prim *xd[4] = {I(1), I(8), h, I(8)};
    EXPECT(INFER("relax.nn.max_pool2d", attrs(2, "pool_size", INTS(2, 2), "strides", INTS(2, 2)),
                 tvar_s(F32, 4, xd)),
           TS("1, 8, (h - 2) // 2 + 1, 4"));
    EXPECT_ERR(INFER("relax.nn.max_pool2d", NULL, T(1, 8, 7)), "4-D");
    EXPECT(INFER("relax.nn.max_pool2d", attrs(2, "layout", STR("NHWC"), "pool_size", INTS(2, 2)), T(1, 7, 7, 8)),
           TS("1, 6, 6, 8"));
    EXPECT_ERR(INFER("relax.nn.max_pool2d", attrs(1, "layout", STR("NCHW4c")), T(1, 7, 7, 8)),
               "unsupported layout");
    EXPECT_ERR(INFER("relax.nn.avg_pool2d", attrs(1, "pool_size", INTS(9, 9)), T(1, 8, 7, 7)),
               "not positive");
    /* adaptive */
    EXPECT(INFER("relax.nn.adaptive_avg_pool2d", attrs(1, "output_size", INTS(1, 1)),
                 T(1, 512, 7, 7)),
           TS("1, 512, 1, 1"));
    EXPECT(INFER("relax.nn.adaptive_avg_pool2d", attrs(1, "output_size", INTS(3)), T(1, 5, 7, 7)),
           TS("1, 5, 3, 3"));
    EXPECT(INFER("relax.nn.adaptive_avg_pool2d", NULL, T(1, 5, 7, 7)), TS("1, 5, 7, 7"));
    EXPECT_ERR(INFER("relax.nn.adaptive_avg_pool2d", NULL, T(5, 7, 7)), "4-D");
}

Test(op_infer, layer_norm_and_batch_norm) {
    EXPECT(INFER("relax.nn.layer_norm", attrs(1, "axes", INTS(-1)), T(2, 8, 16), T(16), T(16)),
           TS("2, 8, 16"));
    EXPECT(INFER("relax.nn.layer_norm", attrs(1, "axes", INTS(1, 2)), T(2, 8, 16), T(8, 16),
                 T(8, 16)),
           TS("2, 8, 16"));
    EXPECT_ERR(INFER("relax.nn.layer_norm", attrs(1, "axes", INTS(-1)), T(2, 8, 16), T(8), T(16)),
               "gamma");
    EXPECT_ERR(INFER("relax.nn.layer_norm", attrs(1, "axes", INTS(3)), T(2, 8, 16), T(16), T(16)),
               "out of range");
    EXPECT_ERR(INFER("relax.nn.layer_norm", attrs(1, "axes", INTS(-1)), T(2, 8, 16), T(2, 16),
                     T(16)),
               "1-D");
    EXPECT(INFER("relax.nn.batch_norm", attrs(1, "axis", ir_attr_int(1)), T(2, 3, 28, 28), T(3),
                 T(3), T(3), T(3)),
           "R.Tuple(" TS("2, 3, 28, 28") ", " TS("3,") ", " TS("3,") ")");
    EXPECT_ERR(INFER("relax.nn.batch_norm", NULL, T(2, 3, 28, 28), T(4), T(3), T(3), T(3)),
               "gamma");
    EXPECT_ERR(INFER("relax.nn.batch_norm", attrs(1, "axis", ir_attr_int(4)), T(2, 3, 28, 28),
                     T(3), T(3), T(3), T(3)),
               "out of range");
    EXPECT_ERR(INFER("relax.nn.batch_norm", NULL, T(2, 3, 28, 28), T(3), T(3), T(3)),
               "expects 5 arguments");
}

Test(op_infer, dropout_and_pad) {
    EXPECT(INFER("relax.nn.dropout", attrs(1, "rate", ir_attr_float(0.1)), T(2, 3)),
           "R.Tuple(" TS("2, 3") ", " TS("2, 3") ")");
    EXPECT_ERR(INFER("relax.nn.dropout", attrs(1, "rate", ir_attr_float(1.5)), T(2, 3)), "rate");
    EXPECT(INFER("relax.nn.pad", attrs(1, "pad_width", INTS(0, 0, 0, 0, 2, 2, 1, 1)),
                 T(1, 3, 10, 10)),
           TS("1, 3, 14, 12"));
    EXPECT_ERR(INFER("relax.nn.pad", attrs(1, "pad_width", INTS(1, 1)), T(1, 3, 10, 10)),
               "pad_width needs 8 entries");
    EXPECT_ERR(INFER("relax.nn.pad", attrs(2, "pad_width", INTS(1, 1), "pad_mode", STR("wrap")),
                     T(3)),
               "pad_mode");
}

Test(op_infer, matmul) {
    EXPECT(INFER("relax.matmul", NULL, T(2, 3), T(3, 4)), TS("2, 4"));
    EXPECT(INFER("relax.matmul", NULL, T(5, 1, 2, 3), T(7, 3, 4)), TS("5, 7, 2, 4"));
    EXPECT(INFER("relax.matmul", NULL, T(3), T(3, 4)), TS("4,"));
    EXPECT(INFER("relax.matmul", NULL, T(2, 3), T(3)), TS("2,"));
    EXPECT(INFER("relax.matmul", NULL, T(3), T(3)), "R.Tensor((), dtype=\"float32\")");
    EXPECT(INFER("relax.matmul", attrs(1, "out_dtype", STR("float16")), T(2, 3), T(3, 4)),
           "R.Tensor((2, 4), dtype=\"float16\")");
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *ad[3] = {n, I(8), I(16)};
    EXPECT(INFER("relax.matmul", NULL, tvar_s(F32, 3, ad), T(16, 32)), TS("n, 8, 32"));
    EXPECT(INFER("relax.matmul", NULL, T(2, 3), tvar_ndim(F32, -1)), "R.Tensor(dtype=\"float32\")");
    EXPECT_ERR(INFER("relax.matmul", NULL, T(2, 3), T(4, 5)), "reduction dims");
    EXPECT_ERR(INFER("relax.matmul", NULL, T(2, 2, 3), T(3, 3, 4)), "batch dims");
    EXPECT_ERR(INFER("relax.matmul", NULL, scalar(F32), T(3, 4)), "at least 1-D");
    EXPECT_ERR(INFER("relax.matmul", NULL, T(2, 3), TV(IR_DTYPE_I32, 3, 4)), "must be equal");
}

Test(op_infer, resize2d) {
    EXPECT(INFER("relax.image.resize2d", NULL, T(1, 3, 8, 8), SHAPE(16, 24)), TS("1, 3, 16, 24"));
    EXPECT(INFER("relax.image.resize2d", attrs(1, "out_dtype", STR("float16")), T(1, 3, 8, 8),
                 SHAPE(4)),
           "R.Tensor((1, 3, 4, 4), dtype=\"float16\")");
    EXPECT_ERR(INFER("relax.image.resize2d", attrs(1, "layout", STR("NHWC")), T(1, 8, 8, 3),
                     SHAPE(16, 16)),
               "unsupported layout");
    EXPECT_ERR(INFER("relax.image.resize2d", NULL, T(1, 3, 8, 8), T(2)), "shape");
    EXPECT_ERR(INFER("relax.image.resize2d", NULL, T(1, 3, 8, 8), SHAPE(1, 2, 3)), "1 or 2");
}

/* ---- reductions ---- */

Test(op_infer, reductions) {
    static const char *const ops[] = {"relax.mean", "relax.sum", "relax.max", "relax.min",
                                      "relax.prod", "relax.variance"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        EXPECT(INFER(ops[i], attrs(1, "axis", INTS(1)), T(2, 3, 4)), TS("2, 4"));
        EXPECT(INFER(ops[i], attrs(2, "axis", INTS(-1, 0), "keepdims", ir_attr_bool(true)),
                     T(2, 3, 4)),
               TS("1, 3, 1"));
        EXPECT(INFER(ops[i], NULL, T(2, 3, 4)), "R.Tensor((), dtype=\"float32\")");
        EXPECT_ERR(INFER(ops[i], attrs(1, "axis", INTS(3)), T(2, 3, 4)), "out of range");
    }
    EXPECT(INFER("relax.mean", attrs(1, "keepdims", ir_attr_bool(true)), T(2, 3)), TS("1, 1"));
    EXPECT(INFER("relax.sum", attrs(1, "axis", ir_attr_int(0)), T(2, 3)), TS("3,"));
    EXPECT_ERR(INFER("relax.sum", attrs(1, "axis", INTS(0, -2)), T(2, 3)), "repeats");
    EXPECT(INFER("relax.sum", attrs(1, "axis", INTS(0)), tvar_ndim(F32, -1)),
           "R.Tensor(dtype=\"float32\")");
    EXPECT(INFER("relax.cumsum", attrs(1, "axis", ir_attr_int(1)), T(2, 3)), TS("2, 3"));
    EXPECT(INFER("relax.cumsum", NULL, T(2, 3)), TS("6,"));
    EXPECT(INFER("relax.cumsum", attrs(1, "dtype", STR("float64")), T(2)),
           "R.Tensor((2,), dtype=\"float64\")");
    EXPECT_ERR(INFER("relax.cumsum", attrs(1, "axis", ir_attr_int(-3)), T(2, 3)), "out of range");
}

/* ---- manipulation ---- */

Test(op_infer, reshape) {
    EXPECT(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(6, 4)), TS("6, 4"));
    EXPECT(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(-1, 4)), TS("6, 4"));
    EXPECT(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(2, -1)), TS("2, 12"));
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *xd[3] = {n, I(3), I(4)};
    EXPECT(INFER("relax.reshape", NULL, tvar_s(F32, 3, xd), SHAPE(-1, 12)), TS("n, 12"));
    EXPECT(INFER("relax.reshape", NULL, tvar_s(F32, 3, xd), SHAPE(-1)), TS("n * 12,"));
    const ir_prim *sd[2] = {n, I(12)};
    EXPECT(INFER("relax.reshape", NULL, tvar_s(F32, 3, xd),
                 (ir_expr *)ir_shape_expr_new(ctx, 2, sd, NULL)),
           TS("n, 12"));
    /* a shape-typed var with unknown dims */
    ir_expr *sv = (ir_expr *)ir_var_new(ctx, "s", ir_sinfo_shape(ctx, 2, NULL), NULL);
    EXPECT(INFER("relax.reshape", NULL, T(2, 3), sv), "R.Tensor(ndim=2, dtype=\"float32\")");
    EXPECT_ERR(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(5, 5)), "cannot reshape");
    EXPECT_ERR(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(-1, 5)), "cannot reshape");
    EXPECT_ERR(INFER("relax.reshape", NULL, T(2, 3, 4), SHAPE(-1, -1)), "more than one -1");
    EXPECT_ERR(INFER("relax.reshape", NULL, T(2, 3, 4), T(2)), "shape");
}

Test(op_infer, permute_flatten_squeeze_expand) {
    EXPECT(INFER("relax.permute_dims", attrs(1, "axes", INTS(0, 2, 1)), T(2, 3, 4)), TS("2, 4, 3"));
    EXPECT(INFER("relax.permute_dims", NULL, T(2, 3, 4)), TS("4, 3, 2"));
    EXPECT(INFER("relax.permute_dims", attrs(1, "axes", INTS(-1, 0)), T(2, 3)), TS("3, 2"));
    EXPECT_ERR(INFER("relax.permute_dims", attrs(1, "axes", INTS(0, 0, 1)), T(2, 3, 4)),
               "permutation");
    EXPECT_ERR(INFER("relax.permute_dims", attrs(1, "axes", INTS(0, 1)), T(2, 3, 4)), "rank");
    EXPECT(INFER("relax.flatten", NULL, T(2, 3, 4)), TS("24,"));
    EXPECT(INFER("relax.flatten", NULL, scalar(F32)), TS("1,"));
    EXPECT(INFER("relax.squeeze", NULL, T(1, 3, 1, 4)), TS("3, 4"));
    EXPECT(INFER("relax.squeeze", attrs(1, "axis", INTS(-2)), T(1, 3, 1, 4)), TS("1, 3, 4"));
    EXPECT_ERR(INFER("relax.squeeze", attrs(1, "axis", INTS(1)), T(1, 3, 1, 4)), "size is 3");
    EXPECT_ERR(INFER("relax.squeeze", attrs(1, "axis", INTS(4)), T(1, 3, 1, 4)), "out of range");
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *xd[2] = {n, I(1)};
    EXPECT(INFER("relax.squeeze", NULL, tvar_s(F32, 2, xd)), "R.Tensor(dtype=\"float32\")");
    EXPECT(INFER("relax.squeeze", attrs(1, "axis", INTS(1)), tvar_s(F32, 2, xd)), TS("n,"));
    EXPECT(INFER("relax.expand_dims", attrs(1, "axis", INTS(0)), T(3, 4)), TS("1, 3, 4"));
    EXPECT(INFER("relax.expand_dims", attrs(1, "axis", INTS(-1, 1)), T(3, 4)), TS("3, 1, 4, 1"));
    EXPECT_ERR(INFER("relax.expand_dims", attrs(1, "axis", INTS(3)), T(3, 4)), "out of range");
    EXPECT_ERR(INFER("relax.expand_dims", NULL, T(3, 4)), "axis");
}

Test(op_infer, concat) {
    EXPECT(INFER("relax.concat", attrs(1, "axis", ir_attr_int(1)), TUP(T(2, 3), T(2, 5))),
           TS("2, 8"));
    EXPECT(INFER("relax.concat", NULL, TUP(T(2, 3), T(4, 3), T(1, 3))), TS("7, 3"));
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *xd[2] = {n, I(3)};
    EXPECT(INFER("relax.concat", NULL, TUP(tvar_s(F32, 2, xd), T(2, 3))), TS("n + 2, 3"));
    EXPECT_ERR(INFER("relax.concat", attrs(1, "axis", ir_attr_int(1)), TUP(T(2, 3), T(3, 3))),
               "dim 0 differs");
    EXPECT_ERR(INFER("relax.concat", NULL, TUP(T(2, 3), T(3))), "ranks differ");
    EXPECT_ERR(INFER("relax.concat", NULL, TUP(T(2, 3), TV(IR_DTYPE_I32, 2, 3))), "must be equal");
    EXPECT_ERR(INFER("relax.concat", attrs(1, "axis", ir_attr_int(2)), TUP(T(2, 3), T(2, 3))),
               "out of range");
    EXPECT_ERR(INFER("relax.concat", NULL, T(2, 3)), "tuple");
}

Test(op_infer, split) {
    EXPECT(INFER("relax.split", attrs(1, "indices_or_sections", ir_attr_int(2)), T(4, 6)),
           "R.Tuple(" TS("2, 6") ", " TS("2, 6") ")");
    EXPECT(INFER("relax.split", attrs(2, "indices_or_sections", ir_attr_int(3), "axis",
                                      ir_attr_int(-1)),
                 T(4, 7)),
           "R.Tuple(" TS("4, 3") ", " TS("4, 3") ", " TS("4, 1") ")");
    EXPECT(INFER("relax.split", attrs(2, "indices_or_sections", INTS(2, 5), "axis", ir_attr_int(1)),
                 T(4, 6)),
           "R.Tuple(" TS("4, 2") ", " TS("4, 3") ", " TS("4, 1") ")");
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *xd[1] = {ir_prim_mul(ctx, n, I(2))};
    EXPECT(INFER("relax.split", attrs(1, "indices_or_sections", ir_attr_int(2)), tvar_s(F32, 1, xd)),
           "R.Tuple(" TS("n,") ", " TS("n,") ")");
    EXPECT_ERR(INFER("relax.split", attrs(2, "indices_or_sections", ir_attr_int(2), "axis",
                                          ir_attr_int(2)),
                     T(4, 6)),
               "out of range");
    EXPECT_ERR(INFER("relax.split", attrs(1, "indices_or_sections", ir_attr_int(0)), T(4)),
               "sections");
    EXPECT_ERR(INFER("relax.split", attrs(1, "indices_or_sections", INTS(3, 1)), T(4)),
               "ascending");
}

Test(op_infer, strided_slice) {
    EXPECT(INFER("relax.strided_slice", NULL, T(8, 9, 10, 10), ITUP(0, 1, 3), ITUP(1, 0, 8),
                 ITUP(8, 9, 0), ITUP(2, 1, -3)),
           TS("4, 9, 10, 3"));
    EXPECT(INFER("relax.strided_slice", NULL, T(10, 4), ITUP(0), ITUP(1), ITUP(8)), TS("7, 4"));
    EXPECT(INFER("relax.strided_slice", NULL, T(10, 4), ITUP(0), ITUP(-3), ITUP(100)), TS("3, 4"));
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_prim *xd[2] = {I(10), n};
    EXPECT(INFER("relax.strided_slice", NULL, tvar_s(F32, 2, xd), ITUP(0), ITUP(1), ITUP(8),
                 ITUP(3)),
           TS("3, n"));
    EXPECT(INFER("relax.strided_slice", NULL, tvar_s(F32, 2, xd), ITUP(1), ITUP(1), ITUP(8)),
           "R.Tensor(ndim=2, dtype=\"float32\")");
    EXPECT_ERR(INFER("relax.strided_slice", NULL, T(10, 4), ITUP(2), ITUP(1), ITUP(8)),
               "out of range");
    EXPECT_ERR(INFER("relax.strided_slice", NULL, T(10, 4), ITUP(0), ITUP(1, 2), ITUP(8)),
               "lengths differ");
    EXPECT_ERR(INFER("relax.strided_slice", NULL, T(10, 4), ITUP(0), ITUP(1), ITUP(8), ITUP(0)),
               "non-zero");
}

Test(op_infer, take) {
    EXPECT(INFER("relax.take", attrs(1, "axis", ir_attr_int(1)), T(2, 3, 4),
                 TV(IR_DTYPE_I64, 5, 6)),
           TS("2, 5, 6, 4"));
    EXPECT(INFER("relax.take", attrs(1, "axis", ir_attr_int(0)), T(100, 16), TV(IR_DTYPE_I32, 7)),
           TS("7, 16"));
    EXPECT(INFER("relax.take", NULL, T(10), TV(IR_DTYPE_I64, 3)), TS("3,"));
    EXPECT_ERR(INFER("relax.take", attrs(1, "axis", ir_attr_int(0)), T(10), T(3)), "integers");
    EXPECT_ERR(INFER("relax.take", attrs(1, "axis", ir_attr_int(3)), T(2, 3, 4),
                     TV(IR_DTYPE_I64, 2)),
               "out of range");
}

Test(op_infer, broadcast_to_and_tile) {
    EXPECT(INFER("relax.broadcast_to", NULL, T(3, 1), SHAPE(2, 3, 4)), TS("2, 3, 4"));
    EXPECT_ERR(INFER("relax.broadcast_to", NULL, T(3, 2), SHAPE(2, 3, 4)), "cannot broadcast");
    EXPECT_ERR(INFER("relax.broadcast_to", NULL, T(1, 3, 2), SHAPE(3, 2)), "cannot broadcast");
    EXPECT(INFER("relax.tile", attrs(1, "repeats", INTS(2, 3)), T(4, 5)), TS("8, 15"));
    EXPECT(INFER("relax.tile", attrs(1, "repeats", INTS(2, 1, 1)), T(4, 5)), TS("2, 4, 5"));
    EXPECT(INFER("relax.tile", attrs(1, "repeats", INTS(3)), T(4, 5)), TS("4, 15"));
    EXPECT_ERR(INFER("relax.tile", attrs(1, "repeats", INTS(-1)), T(4)), "non-negative");
}

Test(op_infer, creation) {
    EXPECT(INFER("relax.zeros", attrs(1, "dtype", STR("float32")), SHAPE(2, 3)), TS("2, 3"));
    EXPECT(INFER("relax.ones", attrs(1, "dtype", STR("int64")), SHAPE(4)),
           "R.Tensor((4,), dtype=\"int64\")");
    EXPECT(INFER("relax.full", attrs(1, "dtype", STR("float32")), SHAPE(2, 3), scalar(F32)),
           TS("2, 3"));
    EXPECT(INFER("relax.full", NULL, SHAPE(2, 3), scalar(IR_DTYPE_I32)),
           "R.Tensor((2, 3), dtype=\"int32\")");
    EXPECT_ERR(INFER("relax.full", NULL, SHAPE(2, 3), T(2)), "0-D");
    EXPECT_ERR(INFER("relax.zeros", NULL, T(2)), "shape");
    EXPECT_ERR(INFER("relax.zeros", NULL, SHAPE(-2)), "negative");
    EXPECT(INFER("relax.arange", NULL, pv(0), pv(10), pv(3)), "R.Tensor((4,), dtype=\"int64\")");
    EXPECT(INFER("relax.arange", NULL, pv(10), pv(0), pv(-2)), "R.Tensor((5,), dtype=\"int64\")");
    EXPECT_ERR(INFER("relax.arange", NULL, pv(0), pv(10), pv(0)), "non-zero");
    EXPECT(INFER("relax.shape_of", NULL, T(2, 3)), "R.Shape([2, 3])");
}

Test(op_infer, call_dps_packed_and_call_tir) {
    const ir_sinfo *out = ir_sinfo_tensor_static(ctx, F32, 2, (int64_t[]){2, 3});
    ir_expr *ext = (ir_expr *)ir_extern_new(ctx, "my_kernel", NULL);
    ir_expr *args1[2] = {ext, TUP(T(2, 3), T(2, 3))};
    EXPECT(infer_sa("relax.call_dps_packed", NULL, 1, &out, 2, args1), TS("2, 3"));
    const ir_sinfo *two[2] = {out, out};
    EXPECT(infer_sa("relax.call_dps_packed", NULL, 2, two, 2, args1),
           "R.Tuple(" TS("2, 3") ", " TS("2, 3") ")");
    EXPECT_ERR(infer_sa("relax.call_dps_packed", NULL, 0, NULL, 2, args1), "out_sinfo");
    ir_expr *bad[2] = {ext, T(2, 3)};
    EXPECT_ERR(infer_sa("relax.call_dps_packed", NULL, 1, &out, 2, bad), "tuple");
    ir_expr *g = (ir_expr *)ir_gvar_new(ctx, "fused_add");
    ir_expr *args2[2] = {g, TUP(T(2, 3))};
    EXPECT(infer_sa("relax.call_tir", NULL, 1, &out, 2, args2), TS("2, 3"));
    EXPECT_ERR(infer_sa("relax.call_tir", NULL, 1, &out, 2, args1), "global var");
}

Test(op_infer, error_without_span_and_non_op_callee) {
    ir_expr *args[2] = {T(2), T(3)};
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.add"), 2, args, NULL, 0, NULL,
                             NULL);
    gr_diag_clear(&diag);
    cr_assert_null(ir_op_infer(ctx, c, &diag));
    cr_assert(strstr(diag.msg, "R.add: cannot broadcast") == diag.msg, "%s", diag.msg);
    cr_assert_null(strstr(diag.msg, "layer"));
    cr_assert_str_eq(diag.layer, "");
    /* args without struct info */
    ir_expr *raw[2] = {(ir_expr *)ir_var_new(ctx, "u", NULL, NULL), T(2)};
    c = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.add"), 2, raw, NULL, 0, NULL, NULL);
    gr_diag_clear(&diag);
    cr_assert_null(ir_op_infer(ctx, c, &diag));
    cr_assert(strstr(diag.msg, "no struct info"), "%s", diag.msg);
    /* a non-op callee */
    ir_expr *g = (ir_expr *)ir_gvar_new(ctx, "f");
    c = ir_call_new(ctx, g, 2, args, NULL, 0, NULL, NULL);
    gr_diag_clear(&diag);
    cr_assert_null(ir_op_infer(ctx, c, &diag));
    cr_assert_neq(diag.code, GR_OK);
}

Test(op_table, normalized_attrs_are_shared) {
    const ir_op_def *d = ir_op_def_find("relax.nn.conv2d");
    const ir_attrs *a = NULL, *b = NULL;
    cr_assert_eq(ir_op_attrs_normalize(ctx, d, attrs(1, "strides", INTS(2, 2)), &a, &diag), GR_OK);
    size_t before = ir_ctx_arena_bytes(ctx);
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(ir_op_attrs_normalize(ctx, d, NULL, &b, &diag), GR_OK);
        cr_assert_eq(ir_op_attrs_normalize(ctx, d, NULL, &a, &diag), GR_OK);
        cr_assert_eq(a, b);
    }
    /* after the first round, normalizing allocates nothing */
    cr_assert_lt(ir_ctx_arena_bytes(ctx) - before, (size_t)8192);
    int64_t v[4];
    cr_assert_eq(ir_attrs_get_ints(a, "strides", v, 4), 2);
    cr_assert_eq(v[0], 1);
}

Test(op_infer, unnormalized_attrs_get_defaults) {
    ir_expr *args[2] = {T(1, 3, 8, 8), T(4, 3, 3, 3)};
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.nn.conv2d"), 2, args,
                             attrs(1, "padding", INTS(1)), 0, NULL, NULL);
    gr_diag_clear(&diag);
    EXPECT(ir_op_infer(ctx, c, &diag), TS("1, 4, 8, 8"));
    ir_call *s = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.nn.softmax"), 1, args, NULL, 0,
                             NULL, ir_span_named(ctx, "sm", false));
    EXPECT(ir_op_infer(ctx, s, &diag), TS("1, 3, 8, 8"));
    ir_call *bad = ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.nn.softmax"), 1, args,
                               attrs(1, "dim", ir_attr_int(1)), 0, NULL,
                               ir_span_named(ctx, "sm", false));
    gr_diag_clear(&diag);
    cr_assert_null(ir_op_infer(ctx, bad, &diag));
    cr_assert(strstr(diag.msg, "'dim'"), "%s", diag.msg);
    cr_assert_str_eq(diag.layer, "sm");
}

Test(op_infer, more_unary_and_activations) {
    static const char *const fl[] = {"relax.acos", "relax.acosh", "relax.asin", "relax.asinh",
                                     "relax.atan", "relax.atanh", "relax.cosh", "relax.sinh",
                                     "relax.tan", "relax.nn.selu", "relax.nn.softplus"};
    for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
        EXPECT(INFER(fl[i], NULL, T(2, 3)), TS("2, 3"));
        EXPECT_ERR(INFER(fl[i], NULL, TV(IR_DTYPE_I32, 2)), "float");
    }
    EXPECT(INFER("relax.trunc", NULL, T(4)), TS("4,"));
    EXPECT(INFER("relax.nn.relu6", NULL, T(4)), TS("4,"));
    EXPECT(INFER("relax.bitwise_not", NULL, TV(IR_DTYPE_I32, 4)), "R.Tensor((4,), dtype=\"int32\")");
    static const char *const chk[] = {"relax.isfinite", "relax.isinf", "relax.isnan"};
    for (size_t i = 0; i < 3; i++)
        EXPECT(INFER(chk[i], NULL, T(2, 3)), "R.Tensor((2, 3), dtype=\"bool\")");
}

Test(op_infer, more_norms) {
    EXPECT(INFER("relax.nn.group_norm",
                 attrs(3, "num_groups", ir_attr_int(2), "channel_axis", ir_attr_int(1), "axes",
                       INTS(2, 3)),
                 T(1, 4, 5, 5), T(4), T(4)),
           TS("1, 4, 5, 5"));
    EXPECT_ERR(INFER("relax.nn.group_norm",
                     attrs(3, "num_groups", ir_attr_int(3), "channel_axis", ir_attr_int(1), "axes",
                           INTS(2, 3)),
                     T(1, 4, 5, 5), T(4), T(4)),
               "divisible");
    EXPECT_ERR(INFER("relax.nn.group_norm", attrs(1, "num_groups", ir_attr_int(2)), T(1, 4, 5, 5),
                     T(4), T(4)),
               "missing required");
    EXPECT(INFER("relax.nn.instance_norm", attrs(1, "axes", INTS(2, 3)), T(1, 4, 5, 5), T(4), T(4)),
           TS("1, 4, 5, 5"));
    EXPECT_ERR(INFER("relax.nn.instance_norm", attrs(1, "axes", INTS(1, 2)), T(1, 4, 5, 5), T(4),
                     T(4)),
               "channel axis");
    EXPECT_ERR(INFER("relax.nn.instance_norm", attrs(1, "axes", INTS(2, 3)), T(1, 4, 5, 5), T(5),
                     T(4)),
               "gamma");
    EXPECT(INFER("relax.nn.rms_norm", NULL, T(2, 8, 16), T(16)), TS("2, 8, 16"));
    EXPECT_ERR(INFER("relax.nn.rms_norm", NULL, T(2, 8, 16), T(8)), "weight");
}

Test(op_infer, pool1d_conv1d_transpose_adaptive) {
    EXPECT(INFER("relax.nn.max_pool1d", attrs(2, "pool_size", INTS(2), "strides", INTS(2)),
                 T(1, 4, 9)),
           TS("1, 4, 4"));
    EXPECT(INFER("relax.nn.avg_pool1d", attrs(2, "pool_size", INTS(3), "padding", INTS(1)),
                 T(1, 4, 9)),
           TS("1, 4, 9"));
    EXPECT_ERR(INFER("relax.nn.max_pool1d", NULL, T(1, 4, 9, 9)), "3-D");
    EXPECT(INFER("relax.nn.adaptive_avg_pool1d", attrs(1, "output_size", INTS(1)), T(1, 4, 9)),
           TS("1, 4, 1"));
    EXPECT(INFER("relax.nn.adaptive_max_pool2d", attrs(1, "output_size", INTS(2, 3)),
                 T(1, 4, 9, 9)),
           TS("1, 4, 2, 3"));
    EXPECT(INFER("relax.nn.conv1d_transpose", attrs(1, "strides", INTS(2)), T(1, 8, 5), T(8, 3, 4)),
           TS("1, 3, 12"));
}

Test(op_infer, argmax_std_cumprod) {
    EXPECT(INFER("relax.argmax", attrs(1, "axis", ir_attr_int(1)), T(2, 3, 4)),
           "R.Tensor((2, 4), dtype=\"int64\")");
    EXPECT(INFER("relax.argmin", attrs(2, "axis", ir_attr_int(-1), "keepdims", ir_attr_bool(true)),
                 T(2, 3)),
           "R.Tensor((2, 1), dtype=\"int64\")");
    EXPECT(INFER("relax.argmax", NULL, T(2, 3)), "R.Tensor((), dtype=\"int64\")");
    EXPECT_ERR(INFER("relax.argmax", attrs(1, "axis", ir_attr_int(2)), T(2, 3)), "out of range");
    EXPECT(INFER("relax.std", attrs(1, "axis", INTS(0)), T(2, 3)), TS("3,"));
    EXPECT(INFER("relax.cumprod", attrs(1, "axis", ir_attr_int(0)), T(2, 3)), TS("2, 3"));
}

Test(op_infer, gather_scatter_and_friends) {
    ir_dtype i64 = IR_DTYPE_I64;
    EXPECT(INFER("relax.flip", attrs(1, "axis", ir_attr_int(1)), T(2, 3)), TS("2, 3"));
    EXPECT_ERR(INFER("relax.flip", attrs(1, "axis", ir_attr_int(2)), T(2, 3)), "out of range");
    EXPECT(INFER("relax.gather_elements", attrs(1, "axis", ir_attr_int(1)), T(2, 3), TV(i64, 2, 5)),
           TS("2, 5"));
    EXPECT_ERR(INFER("relax.gather_elements", NULL, T(2, 3), TV(i64, 5)), "same rank");
    EXPECT(INFER("relax.gather_nd", NULL, T(4, 5, 6), TV(i64, 3, 2)), TS("3, 6"));
    EXPECT(INFER("relax.gather_nd", attrs(1, "batch_dims", ir_attr_int(1)), T(4, 5, 6),
                 TV(i64, 4, 1)),
           TS("4, 6"));
    EXPECT_ERR(INFER("relax.gather_nd", NULL, T(4, 5), TV(i64, 3, 3)), "more dims");
    EXPECT(INFER("relax.scatter_elements", NULL, T(3, 3), TV(i64, 2, 3), T(2, 3)), TS("3, 3"));
    EXPECT_ERR(INFER("relax.scatter_elements", attrs(1, "reduction", STR("xor")), T(3, 3),
                     TV(i64, 2, 3), T(2, 3)),
               "reduction");
    EXPECT(INFER("relax.scatter_nd", NULL, T(8), TV(i64, 4, 1), T(4)), TS("8,"));
    EXPECT_ERR(INFER("relax.scatter_nd", NULL, T(8), T(4, 1), T(4)), "integers");
    ir_expr *on = (ir_expr *)ir_primval_float(ctx, F32, 1.0, NULL);
    ir_expr *off = (ir_expr *)ir_primval_float(ctx, F32, 0.0, NULL);
    EXPECT(INFER("relax.one_hot", attrs(1, "depth", ir_attr_int(5)), TV(i64, 2, 3), on, off),
           TS("2, 3, 5"));
    EXPECT(INFER("relax.one_hot", attrs(2, "depth", ir_attr_int(5), "axis", ir_attr_int(0)),
                 TV(i64, 2), on, off),
           TS("5, 2"));
    EXPECT_ERR(INFER("relax.one_hot", attrs(1, "depth", ir_attr_int(0)), TV(i64, 2), on, off),
               "depth");
    EXPECT(INFER("relax.repeat", attrs(2, "repeats", ir_attr_int(2), "axis", ir_attr_int(0)),
                 T(2, 3)),
           TS("4, 3"));
    EXPECT(INFER("relax.repeat", attrs(1, "repeats", ir_attr_int(2)), T(2, 3)), TS("12,"));
    EXPECT(INFER("relax.triu", attrs(1, "k", ir_attr_int(1)), T(3, 3)), TS("3, 3"));
    EXPECT(INFER("relax.tril", NULL, T(2, 3, 3)), TS("2, 3, 3"));
    EXPECT_ERR(INFER("relax.tril", NULL, T(3)), "2 dims");
    EXPECT(INFER("relax.zeros_like", NULL, T(2, 3)), TS("2, 3"));
    EXPECT(INFER("relax.ones_like", attrs(1, "dtype", STR("int32")), T(2, 3)),
           "R.Tensor((2, 3), dtype=\"int32\")");
    EXPECT(INFER("relax.full_like", NULL, T(2, 3), scalar(F32)), TS("2, 3"));
    EXPECT_ERR(INFER("relax.full_like", NULL, T(2, 3), T(2)), "scalar");
    EXPECT(INFER("relax.shape_to_tensor", NULL, SHAPE(2, 3, 4)), "R.Tensor((3,), dtype=\"int64\")");
    EXPECT(INFER("relax.tensor_to_shape", NULL, TV(i64, 3)), "R.Shape(ndim=3)");
    EXPECT_ERR(INFER("relax.tensor_to_shape", NULL, TV(i64, 3, 1)), "1-D");
}

/* conv2d / pools in NHWC with OHWI and HWIO kernels: dims read in the layout, the output in
 * out_layout (which follows data_layout when not written); blocked layouts are refused. */
Test(op_infer, nhwc_layouts) {
    ir_ctx_t *c = ir_ctx_new();
    const char *src =
        "@I.ir_module\nclass Module:\n    @R.function\n"
        "    def main(x: R.Tensor((2, 9, 7, 3), \"float32\"), w: R.Tensor((8, 3, 3, 3), \"float32\"), h: R.Tensor((3, 3, 3, 8), \"float32\")):\n"
        "        a: R.Tensor((2, 9, 7, 8), \"float32\") = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], data_layout=\"NHWC\", kernel_layout=\"OHWI\")\n"
        "        b: R.Tensor((2, 8, 4, 3), \"float32\") = R.nn.conv2d(x, h, strides=[2, 2], data_layout=\"NHWC\", kernel_layout=\"HWIO\", out_layout=\"NCHW\")\n"
        "        p: R.Tensor((2, 4, 3, 8), \"float32\") = R.nn.max_pool2d(a, pool_size=[2, 2], strides=[2, 2], layout=\"NHWC\")\n"
        "        q: R.Tensor((2, 1, 1, 8), \"float32\") = R.nn.adaptive_avg_pool2d(a, output_size=[1, 1], layout=\"NHWC\")\n"
        "        return (b, p, q)\n";
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(c, "t", src, strlen(src), &m, &d), GR_OK, "%s", d.msg);
    const char *bad =
        "@I.ir_module\nclass Module:\n    @R.function\n"
        "    def main(x: R.Tensor((2, 9, 7, 3), \"float32\"), w: R.Tensor((8, 3, 3, 3), \"float32\")):\n"
        "        a = R.nn.conv2d(x, w, data_layout=\"NCHW16c\")\n"
        "        return a\n";
    gr_diag_clear(&d);
    cr_assert_neq(ir_parse_module(c, "t", bad, strlen(bad), &m, &d), GR_OK);
    cr_expect(strstr(d.msg, "unsupported layout data_layout=\"NCHW16c\""), "%s", d.msg);
    ir_ctx_free(c);
}

/* ---- ONNX coverage: recurrent, volumetric, vision, spectral ---- */

Test(op_infer, recurrent_layers) {
    /* lstm: (Y (T, D, N, H), Y_h, Y_c); layout 1 puts the batch first */
    EXPECT(INFER("relax.nn.lstm", attrs(2, "hidden_size", ir_attr_int(5), "direction", STR("bidirectional")), T(7, 3, 4),
                 T(2, 20, 4), T(2, 20, 5)),
           "R.Tuple(" TS("7, 2, 3, 5") ", " TS("2, 3, 5") ", " TS("2, 3, 5") ")");
    EXPECT(INFER("relax.nn.gru", attrs(2, "hidden_size", ir_attr_int(6), "layout", ir_attr_int(1)), T(3, 7, 4), T(1, 18, 4),
                 T(1, 18, 6)),
           "R.Tuple(" TS("3, 7, 1, 6") ", " TS("3, 1, 6") ")");
    EXPECT(INFER("relax.nn.rnn", attrs(1, "hidden_size", ir_attr_int(2)), T(1, 1, 3), T(1, 2, 3), T(1, 2, 2)),
           "R.Tuple(" TS("1, 1, 1, 2") ", " TS("1, 1, 2") ")");
    EXPECT_ERR(INFER("relax.nn.lstm", attrs(1, "hidden_size", ir_attr_int(5)), T(7, 3, 4), T(1, 16, 4), T(1, 20, 5)),
               "does not match");
    EXPECT_ERR(INFER("relax.nn.gru", attrs(2, "hidden_size", ir_attr_int(2), "direction", STR("sideways")), T(1, 1, 3),
                     T(1, 6, 3), T(1, 6, 2)),
               "unknown direction");
    EXPECT_ERR(INFER("relax.nn.rnn", attrs(1, "hidden_size", ir_attr_int(2)), T(1, 1, 3), T(1, 2, 4), T(1, 2, 2)),
               "input size");
}

Test(op_infer, conv3d_pool3d) {
    EXPECT(INFER("relax.nn.conv3d", attrs(2, "strides", INTS(1, 2, 2), "padding", INTS(1, 1, 1, 1, 1, 1)), T(1, 3, 8, 9, 9),
                 T(4, 3, 3, 3, 3)),
           TS("1, 4, 8, 5, 5"));
    EXPECT(INFER("relax.nn.conv3d_transpose", attrs(1, "strides", INTS(2, 2, 2)), T(1, 4, 3, 3, 3), T(4, 2, 2, 2, 2)),
           TS("1, 2, 6, 6, 6"));
    EXPECT(INFER("relax.nn.max_pool3d", attrs(2, "pool_size", INTS(2, 2, 2), "strides", INTS(2, 2, 2)), T(1, 3, 8, 8, 8)),
           TS("1, 3, 4, 4, 4"));
    EXPECT_ERR(INFER("relax.nn.conv3d", NULL, T(1, 3, 8, 8), T(4, 3, 3, 3, 3)), "5-D");
}

Test(op_infer, vision_and_spectral) {
    EXPECT(INFER("relax.vision.roi_align", attrs(1, "pooled_size", INTS(2, 3)), T(1, 4, 10, 10), T(6, 5)),
           TS("6, 4, 2, 3"));
    EXPECT(INFER("relax.image.grid_sample", NULL, T(2, 3, 8, 8), T(2, 5, 6, 2)), TS("2, 3, 5, 6"));
    EXPECT(INFER("relax.vision.non_max_suppression", NULL, T(1, 6, 4), T(1, 2, 6)),
           "R.Tensor(ndim=2, dtype=\"int64\")");
    EXPECT(INFER("relax.dft", attrs(2, "axis", ir_attr_int(1), "onesided", ir_attr_bool(true)), T(2, 10, 1)),
           TS("2, 6, 2"));
    EXPECT(INFER("relax.stft", attrs(2, "frame_step", ir_attr_int(4), "frame_length", ir_attr_int(8)), T(1, 32, 1)),
           TS("1, 7, 5, 2"));
    EXPECT(INFER("relax.einsum", attrs(1, "subscripts", STR("bij,bjk->bik")), TUP(T(2, 3, 4), T(2, 4, 5))),
           TS("2, 3, 5"));
    EXPECT_ERR(INFER("relax.einsum", attrs(1, "subscripts", STR("ij,jk->ik")), TUP(T(3, 4), T(5, 6))), "differ");
    EXPECT_ERR(INFER("relax.dft", NULL, T(2, 10, 3)), "complex");
}
