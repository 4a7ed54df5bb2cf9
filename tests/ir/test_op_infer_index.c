/* Struct info inference of the ops added for ONNX coverage (ir/ops/op_infer_index.c): integer
 * binary ops, topk, nonzero, unique, nn.nll_loss, linalg.det. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <string.h>

#include "ir/op.h"

static ir_ctx_t *ctx;
static gr_diag diag;

static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(op_infer_index, .init = setup, .fini = teardown);

static ir_expr *tv(ir_dtype dt, int n, const int64_t *shape) {
    return (ir_expr *)ir_var_new(ctx, "x", ir_sinfo_tensor_static(ctx, dt, n, shape), NULL);
}
#define TV(dt, ...) tv(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define F32 IR_DTYPE_F32
#define I64 IR_DTYPE_I64

/* attrs(n, "k", attr, ...) */
static const ir_attrs *attrs(int n, ...) {
    const char *keys[8];
    ir_attr vals[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        keys[i] = va_arg(ap, const char *);
        vals[i] = va_arg(ap, ir_attr);
    }
    va_end(ap);
    return ir_attrs_new(ctx, (uint32_t)n, keys, vals);
}

static const ir_sinfo *infer(const char *op, const ir_attrs *given, int nargs, ir_expr *const *args) {
    gr_diag_clear(&diag);
    const ir_op_def *def = ir_op_def_find(op);
    cr_assert_not_null(def, "no op %s", op);
    const ir_attrs *norm = NULL;
    if (ir_op_attrs_normalize(ctx, def, given, &norm, &diag) != GR_OK) return NULL;
    ir_call *c = ir_call_new(ctx, (ir_expr *)ir_op_get_def(ctx, def), (uint32_t)nargs, args, norm, 0, NULL,
                             ir_span_named(ctx, "layer1", false));
    return ir_op_infer(ctx, c, &diag);
}
#define INFER(op, at, ...) \
    infer(op, at, (int)(sizeof((ir_expr *[]){__VA_ARGS__}) / sizeof(ir_expr *)), (ir_expr *[]){__VA_ARGS__})

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
#define EXPECT_ERR(got, substr)                                                           \
    do {                                                                                  \
        const ir_sinfo *g_ = (got);                                                       \
        cr_assert_null(g_, "expected an error, got %s", g_ ? S(g_) : "");                 \
        cr_assert(strstr(diag.msg, substr), "message '%s' lacks '%s'", diag.msg, substr); \
    } while (0)

Test(op_infer_index, integer_binary_ops) {
    EXPECT(INFER("relax.left_shift", NULL, TV(I64, 2, 3), TV(I64, 3)), "R.Tensor((2, 3), dtype=\"int64\")");
    EXPECT(INFER("relax.bitwise_xor", NULL, TV(IR_DTYPE_U8, 4), TV(IR_DTYPE_U8, 1)), "R.Tensor((4,), dtype=\"uint8\")");
    EXPECT_ERR(INFER("relax.bitwise_and", NULL, TV(F32, 2), TV(F32, 2)), "requires integer operands");
    EXPECT(INFER("relax.floor_mod", NULL, TV(F32, 2, 1), TV(F32, 4)), "R.Tensor((2, 4), dtype=\"float32\")");
    EXPECT(INFER("relax.logical_xor", NULL, TV(IR_DTYPE_BOOL, 3), TV(IR_DTYPE_BOOL, 3)), "R.Tensor((3,), dtype=\"bool\")");
}

Test(op_infer_index, topk_nonzero_unique) {
    EXPECT(INFER("relax.topk", attrs(2, "k", ir_attr_int(2), "dtype", ir_attr_dtype(I64)), TV(F32, 3, 5)),
           "R.Tuple(R.Tensor((3, 2), dtype=\"float32\"), R.Tensor((3, 2), dtype=\"int64\"))");
    EXPECT(INFER("relax.topk", attrs(3, "k", ir_attr_int(1), "axis", ir_attr_int(0), "ret_type", ir_attr_str(ctx, "indices")),
                 TV(F32, 3, 5)),
           "R.Tensor((1, 5), dtype=\"int32\")");
    EXPECT_ERR(INFER("relax.topk", attrs(1, "k", ir_attr_int(6)), TV(F32, 3, 5)), "exceeds");
    EXPECT(INFER("relax.nonzero", NULL, TV(F32, 3, 5)), "R.Tensor(ndim=2, dtype=\"int64\")");
    EXPECT(INFER("relax.unique", NULL, TV(F32, 2, 3)),
           "R.Tuple(R.Tensor(ndim=1, dtype=\"float32\"), R.Tensor(ndim=1, dtype=\"int64\"), "
           "R.Tensor((6,), dtype=\"int64\"), R.Tensor(ndim=1, dtype=\"int64\"))");
    EXPECT(INFER("relax.unique", attrs(1, "axis", ir_attr_int(1)), TV(F32, 2, 3)),
           "R.Tuple(R.Tensor(ndim=2, dtype=\"float32\"), R.Tensor(ndim=1, dtype=\"int64\"), "
           "R.Tensor((3,), dtype=\"int64\"), R.Tensor(ndim=1, dtype=\"int64\"))");
    EXPECT_ERR(INFER("relax.unique", attrs(1, "axis", ir_attr_int(2)), TV(F32, 2, 3)), "out of range");
}

Test(op_infer_index, nll_loss_det) {
    EXPECT(INFER("relax.nn.nll_loss", NULL, TV(F32, 4, 3, 5), TV(I64, 4, 5)), "R.Tensor((), dtype=\"float32\")");
    EXPECT(INFER("relax.nn.nll_loss", attrs(1, "reduction", ir_attr_str(ctx, "none")), TV(F32, 4, 3, 5), TV(I64, 4, 5),
                 TV(F32, 3)),
           "R.Tensor((4, 5), dtype=\"float32\")");
    EXPECT_ERR(INFER("relax.nn.nll_loss", NULL, TV(F32, 4, 3), TV(F32, 4)), "targets must be integers");
    EXPECT_ERR(INFER("relax.nn.nll_loss", attrs(1, "reduction", ir_attr_str(ctx, "max")), TV(F32, 4, 3), TV(I64, 4)),
               "reduction");
    EXPECT(INFER("relax.linalg.det", NULL, TV(F32, 2, 3, 3)), "R.Tensor((2,), dtype=\"float32\")");
    EXPECT(INFER("relax.linalg.det", NULL, TV(F32, 3, 3)), "R.Tensor((), dtype=\"float32\")");
    EXPECT_ERR(INFER("relax.linalg.det", NULL, TV(F32, 3, 4)), "square");
}
