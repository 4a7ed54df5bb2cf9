/* Elementwise kernels: binary ops with numpy broadcasting, comparisons, logical and bitwise
 * ops, unary math and activations, clip, where, astype.
 *
 * Binary and unary loops are generated per dtype for float32/float64/int32/int64 so the
 * compiler can vectorize them; other dtypes are computed in a wider type (int64 for small ints
 * and bool, float32 for float16/bfloat16) and converted back. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static const DLDataType DT_F32 = {kDLFloat, 32, 1}, DT_F64 = {kDLFloat, 64, 1},
                        DT_I32 = {kDLInt, 32, 1}, DT_I64 = {kDLInt, 64, 1},
                        DT_BOOL = {kDLUInt, 1, 1};

/* The type a dtype is computed in: itself when it has generated loops, else a wider one. */
static DLDataType compute_dtype(DLDataType t) {
    if (rt_dt_eq(t, DT_F32) || rt_dt_eq(t, DT_F64) || rt_dt_eq(t, DT_I32) || rt_dt_eq(t, DT_I64))
        return t;
    if (rt_is_floatish(t)) return DT_F32;
    return DT_I64;
}

/* index of the generated loop for a compute dtype */
enum { TI_F32, TI_F64, TI_I32, TI_I64, TI_COUNT };
static int type_index(DLDataType t) {
    if (rt_dt_eq(t, DT_F32)) return TI_F32;
    if (rt_dt_eq(t, DT_F64)) return TI_F64;
    if (rt_dt_eq(t, DT_I32)) return TI_I32;
    return TI_I64;
}

/* ---------------- binary ---------------- */

typedef void (*bin_row)(const void *pa, int64_t sa, const void *pb, int64_t sb, void *po,
                        int64_t n);

#define BIN_ROW(NAME, SUF, T, OT, EXPR)                                                   \
    static void NAME##_##SUF(const void *pa, int64_t sa, const void *pb, int64_t sb,     \
                             void *po, int64_t n) {                                      \
        const T *A = pa, *B = pb;                                                          \
        OT *O = po;                                                                        \
        if (sa == 1 && sb == 1) {                                                          \
            for (int64_t i = 0; i < n; i++) { T a = A[i], b = B[i]; O[i] = (OT)(EXPR); }   \
        } else if (sa == 1 && sb == 0) {                                                   \
            T b = B[0];                                                                    \
            for (int64_t i = 0; i < n; i++) { T a = A[i]; O[i] = (OT)(EXPR); }             \
        } else if (sa == 0 && sb == 1) {                                                   \
            T a = A[0];                                                                    \
            for (int64_t i = 0; i < n; i++) { T b = B[i]; O[i] = (OT)(EXPR); }             \
        } else {                                                                           \
            for (int64_t i = 0; i < n; i++) {                                              \
                T a = A[i * sa], b = B[i * sb];                                            \
                O[i] = (OT)(EXPR);                                                         \
            }                                                                              \
        }                                                                                  \
    }

/* integer helpers: wrap-around like the hardware (no UB on overflow) */
#define IWRAP(T, U, op) ((T)((U)a op (U)b))
static inline int64_t i64_div(int64_t a, int64_t b) {
    return b == 0 ? 0 : (b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b);
}
static inline int64_t i64_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t i64_mod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
static inline int64_t i64_floormod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t i64_pow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    while (b) {
        if (b & 1) r *= x;
        x *= x;
        b >>= 1;
    }
    return (int64_t)r;
}
static inline double f_floormod(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline float f_floormodf(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t i64_shl(int64_t a, int64_t b) {
    return (b < 0 || b >= 64) ? 0 : (int64_t)((uint64_t)a << b);
}
static inline int64_t i64_shr(int64_t a, int64_t b) { return (b < 0 || b >= 64) ? (a < 0 ? -1 : 0) : a >> b; }

/* X(name, op id, float expr, double expr, int32 expr, int64 expr); NULL-ish ops use 0 */
#define ARITH_OPS(X)                                                                         \
    X(add, ADD, a + b, a + b, IWRAP(int32_t, uint32_t, +), IWRAP(int64_t, uint64_t, +))           \
    X(subtract, SUBTRACT, a - b, a - b, IWRAP(int32_t, uint32_t, -), IWRAP(int64_t, uint64_t, -))      \
    X(multiply, MULTIPLY, a * b, a * b, IWRAP(int32_t, uint32_t, *), IWRAP(int64_t, uint64_t, *))      \
    X(divide, DIVIDE, a / b, a / b, i64_div(a, b), i64_div(a, b))                                    \
    X(floor_divide, FLOOR_DIVIDE, floorf(a / b), floor(a / b), i64_floordiv(a, b), i64_floordiv(a, b))     \
    X(mod, MOD, fmodf(a, b), fmod(a, b), i64_mod(a, b), i64_mod(a, b))                            \
    X(floor_mod, FLOOR_MOD, f_floormodf(a, b), f_floormod(a, b), i64_floormod(a, b), i64_floormod(a, b)) \
    X(power, POWER, powf(a, b), pow(a, b), i64_pow(a, b), i64_pow(a, b))                            \
    X(maximum, MAXIMUM, (a > b || a != a) ? a : b, (a > b || a != a) ? a : b, a > b ? a : b,          \
      a > b ? a : b)                                                                         \
    X(minimum, MINIMUM, (a < b || a != a) ? a : b, (a < b || a != a) ? a : b, a < b ? a : b,          \
      a < b ? a : b)

#define GEN_ARITH(NAME, ID, EF, ED, EI32, EI64)        \
    BIN_ROW(NAME, f32, float, float, EF)              \
    BIN_ROW(NAME, f64, double, double, ED)            \
    BIN_ROW(NAME, i32, int32_t, int32_t, EI32)        \
    BIN_ROW(NAME, i64, int64_t, int64_t, EI64)
ARITH_OPS(GEN_ARITH)

#define INT_OPS(X)                                \
    X(bitwise_and, BITWISE_AND, a & b)                         \
    X(bitwise_or, BITWISE_OR, a | b)                          \
    X(bitwise_xor, BITWISE_XOR, a ^ b)                         \
    X(left_shift, LEFT_SHIFT, i64_shl(a, b))                  \
    X(right_shift, RIGHT_SHIFT, i64_shr(a, b))
#define GEN_INT(NAME, ID, E) BIN_ROW(NAME, i32, int32_t, int32_t, E) BIN_ROW(NAME, i64, int64_t, int64_t, E)
INT_OPS(GEN_INT)

/* X(name, op id, kind: CMP or LOGIC, expr) */
#define CMP_OPS(X)                              \
    X(equal, EQUAL, CMP, a == b)                       \
    X(not_equal, NOT_EQUAL, CMP, a != b)                   \
    X(less, LESS, CMP, a < b)                         \
    X(less_equal, LESS_EQUAL, CMP, a <= b)                  \
    X(greater, GREATER, CMP, a > b)                      \
    X(greater_equal, GREATER_EQUAL, CMP, a >= b)               \
    X(logical_and, LOGICAL_AND, LOGIC, (a != 0) && (b != 0)) \
    X(logical_or, LOGICAL_OR, LOGIC, (a != 0) || (b != 0))  \
    X(logical_xor, LOGICAL_XOR, LOGIC, (a != 0) != (b != 0))
#define GEN_CMP(NAME, ID, K, E)                    \
    BIN_ROW(NAME, f32, float, uint8_t, E)         \
    BIN_ROW(NAME, f64, double, uint8_t, E)        \
    BIN_ROW(NAME, i32, int32_t, uint8_t, E)       \
    BIN_ROW(NAME, i64, int64_t, uint8_t, E)
CMP_OPS(GEN_CMP)

enum { BIN_ARITH, BIN_INT, BIN_CMP, BIN_LOGIC };
typedef struct bin_def {
    uint8_t kind;
    bin_row rows[TI_COUNT];       /* all NULL: not a binary op */
} bin_def;

/* by op id */
#define ROW_ARITH(NAME, ID, EF, ED, EI32, EI64) \
    [IR_OP_##ID] = {BIN_ARITH, {NAME##_f32, NAME##_f64, NAME##_i32, NAME##_i64}},
#define ROW_INT(NAME, ID, E) [IR_OP_##ID] = {BIN_INT, {NULL, NULL, NAME##_i32, NAME##_i64}},
#define ROW_CMP(NAME, ID, K, E) \
    [IR_OP_##ID] = {BIN_##K, \
     {NAME##_f32, NAME##_f64, NAME##_i32, NAME##_i64}},
static const bin_def BIN_DEFS[IR_OP_COUNT] = {ARITH_OPS(ROW_ARITH) INT_OPS(ROW_INT) CMP_OPS(ROW_CMP)};

static const bin_def *bin_lookup(const ir_op_def *op) {
    ir_op_id id = ir_op_def_id(op);
    return id != IR_OP_NONE && BIN_DEFS[id].rows[TI_I64] ? &BIN_DEFS[id] : NULL;
}

typedef struct bin_ctx {
    bin_row fn;
    const char *a, *b;
    char *o;
    size_t ea, eo;  /* element sizes: inputs, output */
} bin_ctx;

static void bin_row_cb(void *vctx, int64_t out_off, const int64_t *in_off,
                       const int64_t *in_stride, int64_t n) {
    bin_ctx *x = vctx;
    x->fn(x->a + in_off[0] * (int64_t)x->ea, in_stride[0], x->b + in_off[1] * (int64_t)x->ea,
          in_stride[1], x->o + out_off * (int64_t)x->eo, n);
}

static gr_status k_binary(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const bin_def *def = bin_lookup(c->op);
    const rt_tensor *a, *b;
    gr_status st;
    if (!def) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "unknown binary op");
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &a, d)) ||
        (st = rt_arg_tensor(c, 1, &b, d)))
        return st;
    DLDataType dt = a->dl.dtype;
    if (!rt_dt_eq(dt, b->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "dtype mismatch: %s vs %s", RT_SHAPE_STR(a),
                       RT_SHAPE_STR(b));
    if (def->kind == BIN_INT && rt_is_floatish(dt))
        return rt_kerr(c, d, GR_ERR_INVALID, "needs integer inputs, got %s", RT_SHAPE_STR(a));
    rt_bcast plan;
    int64_t oshape[RT_MAX_NDIM];
    int ond;
    const rt_tensor *ins[2] = {a, b};
    if (!rt_bcast_init(&plan, 2, ins, oshape, &ond))
        return rt_kerr(c, d, GR_ERR_INVALID, "shapes %s and %s do not broadcast",
                       RT_SHAPE_STR(a), RT_SHAPE_STR(b));
    DLDataType cdt = compute_dtype(dt);
    bool is_cmp = def->kind == BIN_CMP || def->kind == BIN_LOGIC;
    DLDataType odt = is_cmp ? DT_BOOL : dt;
    rt_tensor *ca = rt_tensor_cast(a, cdt), *cb = rt_tensor_cast(b, cdt), *o = NULL;
    if (!ca || !cb) {
        st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = rt_out_new_raw(c, is_cmp ? DT_BOOL : cdt, ond, oshape, &o, d))) goto done;
    bin_ctx x = {def->rows[type_index(cdt)], ca->dl.data, cb->dl.data, o->dl.data,
                 rt_dtype_size(cdt), is_cmp ? 1 : rt_dtype_size(cdt)};
    if (!x.fn) {
        st = rt_kerr(c, d, GR_ERR_UNSUPPORTED, "dtype of %s", RT_SHAPE_STR(a));
        goto done;
    }
    rt_bcast_run(&plan, bin_row_cb, &x);
    st = rt_kout_as(c, o, odt, out, d);
    o = NULL;
done:
    rt_tensor_release(ca);
    rt_tensor_release(cb);
    rt_tensor_release(o);
    return st;
}

/* ---------------- unary ---------------- */

typedef void (*un_row)(const void *x, void *y, int64_t n, const double *p);

static inline float sigmoidf_(float v) { return 1.0f / (1.0f + expf(-v)); }
static inline double sigmoid_(double v) { return 1.0 / (1.0 + exp(-v)); }
static inline float signf_(float v) { return (float)((v > 0) - (v < 0)); }
static inline double sign_(double v) { return (double)((v > 0) - (v < 0)); }
#define GELU_TANH_K 0.7978845608028654 /* sqrt(2/pi) */

/* X(name, op id (NONE: an op the op table does not have yet), float expr of a, double expr
 * of a); P0/P1 are the attrs of parametric ops (hoisted
 * into locals so the loops vectorize) */
#define UN_OPS(X)                                                                         \
    X(abs, ABS, fabsf(a), fabs(a))                                                             \
    X(negative, NEGATIVE, -a, -a)                                                                   \
    X(exp, EXP, expf(a), exp(a))                                                               \
    X(log, LOG, logf(a), log(a))                                                               \
    X(sqrt, SQRT, sqrtf(a), sqrt(a))                                                            \
    X(rsqrt, RSQRT, 1.0f / sqrtf(a), 1.0 / sqrt(a))                                              \
    X(sin, SIN, sinf(a), sin(a))                                                               \
    X(cos, COS, cosf(a), cos(a))                                                               \
    X(tan, TAN, tanf(a), tan(a))                                                               \
    X(asin, ASIN, asinf(a), asin(a))                                                            \
    X(acos, ACOS, acosf(a), acos(a))                                                            \
    X(atan, ATAN, atanf(a), atan(a))                                                            \
    X(sinh, SINH, sinhf(a), sinh(a))                                                            \
    X(cosh, COSH, coshf(a), cosh(a))                                                            \
    X(tanh, TANH, tanhf(a), tanh(a))                                                            \
    X(asinh, ASINH, asinhf(a), asinh(a))                                                         \
    X(acosh, ACOSH, acoshf(a), acosh(a))                                                         \
    X(atanh, ATANH, atanhf(a), atanh(a))                                                         \
    X(sigmoid, SIGMOID, sigmoidf_(a), sigmoid_(a))                                                 \
    X(erf, ERF, erff(a), erf(a))                                                               \
    X(floor, FLOOR, floorf(a), floor(a))                                                         \
    X(ceil, CEIL, ceilf(a), ceil(a))                                                            \
    X(round, ROUND, nearbyintf(a), nearbyint(a))                                                 \
    X(trunc, TRUNC, truncf(a), trunc(a))                                                         \
    X(sign, SIGN, signf_(a), sign_(a))                                                          \
    X(square, SQUARE, a * a, a * a)                                                               \
    X(log2, NONE, log2f(a), log2(a))                                                            \
    X(log10, NONE, log10f(a), log10(a))                                                         \
    X(log1p, NONE, log1pf(a), log1p(a))                                                         \
    X(exp2, NONE, exp2f(a), exp2(a))                                                            \
    X(nn_relu, RELU, a > 0 ? a : 0.0f, a > 0 ? a : 0.0)                                         \
    X(nn_relu6, RELU6, a < 0 ? 0.0f : a > 6 ? 6.0f : a, a < 0 ? 0.0 : a > 6 ? 6.0 : a)           \
    X(nn_gelu, GELU, 0.5f * a * (1.0f + erff(a * 0.70710678118654752f)),                        \
      0.5 * a * (1.0 + erf(a * 0.70710678118654752)))                                     \
    X(nn_gelu_tanh, GELU_TANH,                                                                       \
      0.5f * a * (1.0f + tanhf((float)GELU_TANH_K * (a + 0.044715f * a * a * a))),        \
      0.5 * a * (1.0 + tanh(GELU_TANH_K * (a + 0.044715 * a * a * a))))                   \
    X(nn_silu, SILU, a * sigmoidf_(a), a * sigmoid_(a))                                         \
    X(nn_selu, SELU, 1.0507009873554805f * (a > 0 ? a : 1.6732632423543772f * (expf(a) - 1)),   \
      1.0507009873554805 * (a > 0 ? a : 1.6732632423543772 * (exp(a) - 1)))               \
    X(nn_leakyrelu, LEAKYRELU, a > 0 ? a : P0 * a, a > 0 ? a : P0 * a)                               \
    X(nn_elu, NONE, a > 0 ? a : P0 * (expf(a) - 1), a > 0 ? a : P0 * (exp(a) - 1))              \
    X(nn_softplus, SOFTPLUS,                                                                        \
      P0 * a > P1 ? a : log1pf(expf(P0 * a)) / P0,                                        \
      P0 * a > P1 ? a : log1p(exp(P0 * a)) / P0)                                          \
    X(clip, CLIP, a < P0 ? P0 : a > P1 ? P1 : a,                                                \
      a < P0 ? P0 : a > P1 ? P1 : a)

#define GEN_UN(NAME, ID, EF, ED)                                                          \
    static void un_##NAME##_f32(const void *px, void *py, int64_t n, const double *p) {  \
        const float *X = px;                                                              \
        float *Y = py;                                                                    \
        const float P0 = (float)p[0], P1 = (float)p[1];                                   \
        (void)P0, (void)P1;                                                               \
        for (int64_t i = 0; i < n; i++) { float a = X[i]; Y[i] = (EF); }                  \
    }                                                                                     \
    static void un_##NAME##_f64(const void *px, void *py, int64_t n, const double *p) {  \
        const double *X = px;                                                             \
        double *Y = py;                                                                   \
        const double P0 = p[0], P1 = p[1];                                                \
        (void)P0, (void)P1;                                                               \
        for (int64_t i = 0; i < n; i++) { double a = X[i]; Y[i] = (ED); }                 \
    }
UN_OPS(GEN_UN)

enum {
#define UN_ENUM(NAME, ID, EF, ED) UN_##NAME,
    UN_OPS(UN_ENUM)
#undef UN_ENUM
    UN_COUNT
};

typedef struct un_def {
    ir_op_id op;                  /* IR_OP_NONE: an op the table does not have */
    const char *name;             /* the X-list name (nn_relu): for those ops' stand-in defs */
    un_row f32, f64;
} un_def;
#define ROW_UN(NAME, ID, EF, ED) [UN_##NAME] = {IR_OP_##ID, #NAME, un_##NAME##_f32, un_##NAME##_f64},
static const un_def UN_DEFS[UN_COUNT] = {UN_OPS(ROW_UN)};

/* Ops that are defined on integers (computed through float64, exact for |x| < 2^53). */
static const bool UN_INT_OK[UN_COUNT] = {
    [UN_abs] = true,  [UN_negative] = true, [UN_sign] = true,    [UN_square] = true,
    [UN_floor] = true, [UN_ceil] = true,    [UN_round] = true,   [UN_trunc] = true,
    [UN_nn_relu] = true, [UN_nn_relu6] = true, [UN_clip] = true, [UN_nn_leakyrelu] = true};

/* The row of op: by id; an op the table does not have yet (a stand-in def) by its name,
 * "relax.nn.elu" -> "nn_elu". */
static const un_def *un_lookup(const ir_op_def *op) {
    ir_op_id id = ir_op_def_id(op);
    char key[64] = "";
    if (id == IR_OP_NONE) {
        const char *name = op->name;
        if (strncmp(name, "relax.", 6) == 0) name += 6;
        size_t n = strlen(name);
        if (n >= sizeof(key)) return NULL;
        for (size_t i = 0; i <= n; i++) key[i] = name[i] == '.' ? '_' : name[i];
    }
    for (size_t i = 0; i < UN_COUNT; i++)
        if (id != IR_OP_NONE ? UN_DEFS[i].op == id : UN_DEFS[i].op == IR_OP_NONE && !strcmp(UN_DEFS[i].name, key))
            return &UN_DEFS[i];
    return NULL;
}

static bool un_int_ok(const un_def *u) { return UN_INT_OK[u - UN_DEFS]; }

static gr_status run_unary(const rt_kernel_call *c, const un_def *u, const double *p,
                           rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st = rt_arg_tensor(c, 0, &x, d);
    if (st) return st;
    DLDataType dt = x->dl.dtype;
    bool is_float = rt_is_floatish(dt);
    if (!is_float && !un_int_ok(u))
        return rt_kerr(c, d, GR_ERR_INVALID, "needs a float input, got %s", RT_SHAPE_STR(x));
    DLDataType cdt = rt_dt_eq(dt, DT_F32) ? DT_F32 : DT_F64;
    if (rt_is_floatish(dt) && dt.bits < 32) cdt = DT_F32;
    rt_tensor *cx = rt_tensor_cast(x, cdt), *o = NULL;
    if (!cx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, cdt, x->dl.ndim, x->dl.shape, &o, d))) {
        rt_tensor_release(cx);
        return st;
    }
    (rt_dt_eq(cdt, DT_F32) ? u->f32 : u->f64)(cx->dl.data, o->dl.data, rt_tensor_numel(x), p);
    rt_tensor_release(cx);
    return rt_kout_as(c, o, dt, out, d);
}

static gr_status k_unary(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const un_def *u = un_lookup(c->op);
    if (!u) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "unknown unary op");
    gr_status st = rt_check_nargs(c, 1, 1, d);
    if (st) return st;
    double p[2] = {0, 0};
    if (u == &UN_DEFS[UN_nn_leakyrelu]) p[0] = ir_attrs_get_float(c->attrs, "alpha", 0.01);
    if (u == &UN_DEFS[UN_nn_elu]) p[0] = ir_attrs_get_float(c->attrs, "alpha", 1.0);
    if (u == &UN_DEFS[UN_nn_softplus]) {
        p[0] = ir_attrs_get_float(c->attrs, "beta", 1.0);
        p[1] = ir_attrs_get_float(c->attrs, "threshold", 20.0);
        if (p[0] == 0) return rt_kerr(c, d, GR_ERR_INVALID, "beta must not be 0");
    }
    return run_unary(c, u, p, out, d);
}

/* clip(x, min, max): min/max are PrimValue args (or attrs a_min/a_max in older tables). */
static gr_status k_clip(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st = rt_check_nargs(c, 1, 3, d);
    if (st) return st;
    double p[2] = {-INFINITY, INFINITY};
    for (uint32_t i = 1; i < 3; i++) {
        if (i < c->nargs && c->args[i].kind != RT_VAL_NONE) {
            if (!rt_value_scalar(&c->args[i], &p[i - 1]))
                return rt_kerr(c, d, GR_ERR_INVALID, "argument %u (%s) is not a scalar", i,
                               i == 1 ? "min" : "max");
        } else {
            p[i - 1] = ir_attrs_get_float(c->attrs, i == 1 ? "min" : "max", p[i - 1]);
        }
    }
    /* min(max(x, min), max) as ONNX and numpy define it: max everywhere when min > max */
    if (p[0] > p[1]) p[0] = p[1];
    return run_unary(c, &UN_DEFS[UN_clip], p, out, d);
}

/* Ops with a bool result per element. */
static gr_status k_predicate(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    ir_op_id id = ir_op_def_id(c->op);
    int which = id == IR_OP_ISNAN ? 0 : id == IR_OP_ISINF ? 1 : id == IR_OP_ISFINITE ? 2 : 3; /* 3: logical_not */
    rt_tensor *o;
    if ((st = rt_out_new(c, DT_BOOL, x->dl.ndim, x->dl.shape, &o, d))) return st;
    int64_t n = rt_tensor_numel(x);
    uint8_t *y = o->dl.data;
    if (rt_is_f32(x->dl.dtype)) {
        const float *v = x->dl.data;
        for (int64_t i = 0; i < n; i++)
            y[i] = which == 0 ? isnan(v[i]) != 0 : which == 1 ? isinf(v[i]) != 0
                 : which == 2 ? isfinite(v[i]) != 0 : v[i] == 0;
    } else {
        for (int64_t i = 0; i < n; i++) {
            double v = rt_tensor_get_f64(x, i);
            y[i] = which == 0 ? isnan(v) != 0 : which == 1 ? isinf(v) != 0
                 : which == 2 ? isfinite(v) != 0 : v == 0; /* glibc isinf returns -1 for -inf */
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_bitwise_not(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    if (rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "needs an integer input, got %s", RT_SHAPE_STR(x));
    rt_tensor *o;
    if ((st = rt_out_new(c, x->dl.dtype, x->dl.ndim, x->dl.shape, &o, d))) return st;
    int64_t n = rt_tensor_numel(x);
    if (rt_is_bool(x->dl.dtype)) {
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o->dl.data)[i] = !((const uint8_t *)x->dl.data)[i];
    } else {
        size_t es = rt_dtype_size(x->dl.dtype);
        const uint8_t *s = x->dl.data;
        uint8_t *t = o->dl.data;
        for (size_t i = 0; i < (size_t)n * es; i++) t[i] = (uint8_t)~s[i];
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* prelu(x, alpha; axis): alpha holds one slope per channel of `axis` (or a single slope). */
static gr_status k_prelu(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *al;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &al, d)))
        return st;
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 1);
    if (!rt_is_floatish(x->dl.dtype) || nd == 0 || !rt_norm_axis(&axis, nd))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad input %s or axis", RT_SHAPE_STR(x));
    int64_t C = x->dl.shape[axis], na = rt_tensor_numel(al);
    if (na != C && na != 1)
        return rt_kerr(c, d, GR_ERR_INVALID, "alpha %s must have %lld values for %s",
                       RT_SHAPE_STR(al), (long long)C, RT_SHAPE_STR(x));
    rt_tensor *cx = rt_tensor_cast(x, DT_F32), *ca = rt_tensor_cast(al, DT_F32), *o = NULL;
    if (!cx || !ca) {
        st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = rt_out_new_raw(c, DT_F32, nd, x->dl.shape, &o, d))) goto done;
    int64_t outer = rt_numel((int)axis, x->dl.shape);
    int64_t inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    const float *xp = cx->dl.data, *ap = ca->dl.data;
    float *yp = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t ch = 0; ch < C; ch++) {
            float s = ap[na == 1 ? 0 : ch];
            const float *xr = xp + (a * C + ch) * inner;
            float *yr = yp + (a * C + ch) * inner;
            for (int64_t i = 0; i < inner; i++) yr[i] = xr[i] > 0 ? xr[i] : s * xr[i];
        }
    st = rt_kout_as(c, o, x->dl.dtype, out, d);
    o = NULL;
done:
    rt_tensor_release(cx);
    rt_tensor_release(ca);
    rt_tensor_release(o);
    return st;
}

/* ewise_fma(a, b, c) = a * b + c, equal shapes and dtypes (TVM). */
static gr_status k_ewise_fma(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *t[3];
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d))) return st;
    for (uint32_t i = 0; i < 3; i++)
        if ((st = rt_arg_tensor(c, i, &t[i], d))) return st;
    for (int i = 1; i < 3; i++)
        if (!rt_tensor_same_shape(t[0], t[i]) || !rt_dt_eq(t[0]->dl.dtype, t[i]->dl.dtype))
            return rt_kerr(c, d, GR_ERR_INVALID, "operands %s and %s differ", RT_SHAPE_STR(t[0]),
                           RT_SHAPE_STR(t[i]));
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, t[0]->dl.dtype, t[0]->dl.ndim, t[0]->dl.shape, &o, d))) return st;
    int64_t n = rt_tensor_numel(o);
    if (rt_is_f32(o->dl.dtype)) {
        const float *a = t[0]->dl.data, *b = t[1]->dl.data, *e = t[2]->dl.data;
        float *y = o->dl.data;
        for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i] + e[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            rt_tensor_set_f64(o, i, rt_tensor_get_f64(t[0], i) * rt_tensor_get_f64(t[1], i) +
                                        rt_tensor_get_f64(t[2], i));
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---------------- where ---------------- */

typedef struct where_ctx {
    const uint8_t *cond;
    const char *x, *y;
    char *o;
    size_t es;
} where_ctx;

static void where_row(void *vctx, int64_t out_off, const int64_t *in_off, const int64_t *in_st,
                      int64_t n) {
    where_ctx *w = vctx;
    const uint8_t *cd = w->cond + in_off[0];
    const char *x = w->x + in_off[1] * (int64_t)w->es, *y = w->y + in_off[2] * (int64_t)w->es;
    char *o = w->o + out_off * (int64_t)w->es;
    if (w->es == 4) {
        const float *xf = (const float *)x, *yf = (const float *)y;
        float *of = (float *)o;
        for (int64_t i = 0; i < n; i++)
            of[i] = cd[i * in_st[0]] ? xf[i * in_st[1]] : yf[i * in_st[2]];
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(o + i * (int64_t)w->es,
               cd[i * in_st[0]] ? x + i * in_st[1] * (int64_t)w->es : y + i * in_st[2] * (int64_t)w->es,
               w->es);
}

static gr_status k_where(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *cond, *x, *y;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d)) || (st = rt_arg_tensor(c, 0, &cond, d)) ||
        (st = rt_arg_tensor(c, 1, &x, d)) || (st = rt_arg_tensor(c, 2, &y, d)))
        return st;
    if (!rt_dt_eq(x->dl.dtype, y->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "dtype mismatch: %s vs %s", RT_SHAPE_STR(x),
                       RT_SHAPE_STR(y));
    rt_bcast plan;
    int64_t oshape[RT_MAX_NDIM];
    int ond;
    const rt_tensor *ins[3] = {cond, x, y};
    if (!rt_bcast_init(&plan, 3, ins, oshape, &ond))
        return rt_kerr(c, d, GR_ERR_INVALID, "shapes %s, %s and %s do not broadcast",
                       RT_SHAPE_STR(cond), RT_SHAPE_STR(x), RT_SHAPE_STR(y));
    rt_tensor *cb = rt_tensor_cast(cond, DT_BOOL), *o;
    if (!cb) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if ((st = rt_out_new_raw(c, x->dl.dtype, ond, oshape, &o, d))) {
        rt_tensor_release(cb);
        return st;
    }
    where_ctx w = {cb->dl.data, x->dl.data, y->dl.data, o->dl.data, rt_dtype_size(x->dl.dtype)};
    rt_bcast_run(&plan, where_row, &w);
    rt_tensor_release(cb);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---------------- astype ---------------- */

static gr_status k_astype(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    ir_dtype to = rt_attr_dtype(c->attrs, "dtype", IR_DTYPE_VOID);
    if (ir_dtype_is_void(to) || !ir_dtype_name(to))
        return rt_kerr(c, d, GR_ERR_INVALID, "missing or unknown target dtype");
    rt_tensor *o = rt_tensor_cast(x, to);
    if (!o) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if (o == x) { /* same dtype: a fresh copy keeps outputs unaliased */
        rt_tensor_release(o);
        if ((st = rt_out_new(c, to, x->dl.ndim, x->dl.shape, &o, d))) return st;
        memcpy(o->dl.data, x->dl.data, rt_tensor_nbytes(x));
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_elemwise[] = {
#define ENT_ARITH(NAME, ID, EF, ED, EI32, EI64) RT_K(ID, k_binary),
#define ENT_INT(NAME, ID, E) RT_K(ID, k_binary),
#define ENT_CMP(NAME, ID, K, E) RT_K(ID, k_binary),
    ARITH_OPS(ENT_ARITH) INT_OPS(ENT_INT) CMP_OPS(ENT_CMP)
    RT_K(ABS, k_unary), RT_K(NEGATIVE, k_unary), RT_K(EXP, k_unary),
    RT_K(LOG, k_unary), RT_K(SQRT, k_unary), RT_K(RSQRT, k_unary),
    RT_K(SIN, k_unary), RT_K(COS, k_unary), RT_K(TAN, k_unary),
    RT_K(ASIN, k_unary), RT_K(ACOS, k_unary), RT_K(ATAN, k_unary),
    RT_K(SINH, k_unary), RT_K(COSH, k_unary), RT_K(TANH, k_unary),
    RT_K(ASINH, k_unary), RT_K(ACOSH, k_unary), RT_K(ATANH, k_unary),
    RT_K(SIGMOID, k_unary), RT_K(ERF, k_unary), RT_K(FLOOR, k_unary),
    RT_K(CEIL, k_unary), RT_K(ROUND, k_unary), RT_K(TRUNC, k_unary),
    RT_K(SIGN, k_unary), RT_K(SQUARE, k_unary), RT_K_OFF("relax.log2", k_unary),
    RT_K_OFF("relax.log10", k_unary), RT_K_OFF("relax.log1p", k_unary), RT_K_OFF("relax.exp2", k_unary),
    RT_K(RELU, k_unary), RT_K(RELU6, k_unary), RT_K(GELU, k_unary),
    RT_K(GELU_TANH, k_unary), RT_K(SILU, k_unary), RT_K(SELU, k_unary),
    RT_K(LEAKYRELU, k_unary), RT_K_OFF("relax.nn.prelu", k_prelu), RT_K_OFF("relax.nn.elu", k_unary), RT_K(SOFTPLUS, k_unary),
    RT_K(CLIP, k_clip),
    RT_K(ISNAN, k_predicate), RT_K(ISINF, k_predicate), RT_K(ISFINITE, k_predicate),
    RT_K(LOGICAL_NOT, k_predicate), RT_K(BITWISE_NOT, k_bitwise_not),
    RT_K(WHERE, k_where), RT_K(ASTYPE, k_astype), RT_K_OFF("relax.ewise_fma", k_ewise_fma),
};
RT_FAMILY_COUNT(elemwise, rt_kernels_elemwise);
