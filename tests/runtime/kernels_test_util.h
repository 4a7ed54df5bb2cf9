/* Helpers for the reference-kernel tests: build calls through the op table (attrs normalized
 * with TVM defaults), make tensors, compare results. Header-only (static functions). */
#ifndef GRAFT_TESTS_KERNELS_TEST_UTIL_H
#define GRAFT_TESTS_KERNELS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/attrs.h"
#include "ir/op.h"
#include "ir/span.h"
#include "runtime/kernels/kernels.h"
#include "runtime/value.h"
#include "tests/compare_util.h"

static ir_ctx_t *kt_ctx;
static void kt_setup(void) { kt_ctx = ir_ctx_new(); }
static void kt_teardown(void) { ir_ctx_free(kt_ctx); }

#define KT_F32 ((DLDataType){kDLFloat, 32, 1})
#define KT_F64 ((DLDataType){kDLFloat, 64, 1})
#define KT_I32 ((DLDataType){kDLInt, 32, 1})
#define KT_I64 ((DLDataType){kDLInt, 64, 1})
#define KT_U8 ((DLDataType){kDLUInt, 8, 1})
#define KT_BOOL ((DLDataType){kDLUInt, 1, 1})

/* An op def: the op table's row, or (for ops the table does not have yet) a local stand-in
 * carrying just the names. */
__attribute__((unused)) static const ir_op_def *kt_op(const char *name) {
    const ir_op_def *d = ir_op_def_find(name);
    if (d) return d;
    static ir_op_def fakes[64];
    static unsigned nf;
    for (unsigned i = 0; i < nf; i++)
        if (strcmp(fakes[i].name, name) == 0) return &fakes[i];
    cr_assert(nf < 64);
    ir_op_def *f = &fakes[nf++];
    memset(f, 0, sizeof(*f));
    f->name = name;
    f->text_name = name;
    return f;
}

/* Integer array attr. */
__attribute__((unused)) static ir_attr kt_ints(int n, ...) {
    int64_t v[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) v[i] = va_arg(ap, int64_t);
    va_end(ap);
    return ir_attr_ints(kt_ctx, (uint32_t)n, v);
}
#define KI(...) kt_ints(KT_NARG(__VA_ARGS__), KT_CAST64(__VA_ARGS__))
#define KT_NARG(...) KT_NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1)
#define KT_NARG_(a, b, c, d, e, f, g, h, N, ...) N
#define KT_C1(a) (int64_t)(a)
#define KT_CAST64(...) KT_CASTN(KT_NARG(__VA_ARGS__), __VA_ARGS__)
#define KT_CASTN(n, ...) KT_CASTN_(n, __VA_ARGS__)
#define KT_CASTN_(n, ...) KT_CAST_##n(__VA_ARGS__)
#define KT_CAST_1(a) KT_C1(a)
#define KT_CAST_2(a, b) KT_C1(a), KT_C1(b)
#define KT_CAST_3(a, b, c) KT_C1(a), KT_C1(b), KT_C1(c)
#define KT_CAST_4(a, b, c, d) KT_C1(a), KT_C1(b), KT_C1(c), KT_C1(d)
#define KT_CAST_5(a, b, c, d, e) KT_CAST_4(a, b, c, d), KT_C1(e)
#define KT_CAST_6(a, b, c, d, e, f) KT_CAST_5(a, b, c, d, e), KT_C1(f)
#define KT_CAST_7(a, b, c, d, e, f, g) KT_CAST_6(a, b, c, d, e, f), KT_C1(g)
#define KT_CAST_8(a, b, c, d, e, f, g, h) KT_CAST_7(a, b, c, d, e, f, g), KT_C1(h)

/* Attrs from (key, value) pairs, normalized against the op's schema when the table has one. */
typedef struct kt_kv {
    const char *k;
    ir_attr v;
} kt_kv;
__attribute__((unused)) static const ir_attrs *kt_attrs(const ir_op_def *op, int n,
                                                        const kt_kv *kv) {
    const char *keys[32];
    ir_attr vals[32];
    for (int i = 0; i < n; i++) {
        keys[i] = kv[i].k;
        vals[i] = kv[i].v;
    }
    const ir_attrs *given = ir_attrs_new(kt_ctx, (uint32_t)n, keys, vals);
    if (op->nattrs == 0 && !op->infer) return given; /* stand-in op: no schema */
    const ir_attrs *norm = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = ir_op_attrs_normalize(kt_ctx, op, given, &norm, &d);
    cr_assert_eq(st, GR_OK, "normalize %s: %s", op->name, d.msg);
    return norm;
}

/* Runs op `name` with attrs kv[0..nkv) and args; returns the status, result in *out. */
__attribute__((unused)) static gr_status kt_run(const char *name, int nkv, const kt_kv *kv,
                                               const rt_value *args, uint32_t nargs,
                                               rt_value *out, gr_diag *d) {
    const ir_op_def *op = kt_op(name);
    rt_kernel_call call = {op, kt_attrs(op, nkv, kv), args, nargs, NULL,
                           ir_span_named(kt_ctx, "layer_x", false)};
    gr_diag_clear(d);
    out->kind = RT_VAL_NONE;
    return rt_kernel_run(&call, out, d);
}
#define KV(...) ((const kt_kv[]){__VA_ARGS__})
#define KARGS(...) ((const rt_value[]){__VA_ARGS__})
#define KNARGS(...) (uint32_t)(sizeof((const rt_value[]){__VA_ARGS__}) / sizeof(rt_value))

/* Runs and asserts success; returns the result tensor (owned by *out). */
__attribute__((unused)) static rt_tensor *kt_ok(const char *name, int nkv, const kt_kv *kv,
                                               const rt_value *args, uint32_t nargs,
                                               rt_value *out) {
    gr_diag d;
    gr_status st = kt_run(name, nkv, kv, args, nargs, out, &d);
    cr_assert_eq(st, GR_OK, "%s failed: %s", name, d.msg);
    return out->kind == RT_VAL_TENSOR ? out->u.t : NULL;
}

__attribute__((unused)) static rt_tensor *kt_tensor(DLDataType dt, int nd, const int64_t *shape,
                                                   const double *vals) {
    rt_tensor *t = rt_tensor_new(dt, nd, shape);
    cr_assert(t);
    if (vals)
        for (int64_t i = 0, n = rt_tensor_numel(t); i < n; i++) rt_tensor_set_f64(t, i, vals[i]);
    return t;
}
#define KSHAPE(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})
#define KVALS(...) ((const double[]){__VA_ARGS__})

static uint64_t kt_rng = 88172645463325252ull;
__attribute__((unused)) static double kt_uniform(void) {
    kt_rng ^= kt_rng << 13;
    kt_rng ^= kt_rng >> 7;
    kt_rng ^= kt_rng << 17;
    return (double)(kt_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}
__attribute__((unused)) static int64_t kt_randint(int64_t lo, int64_t hi) { /* [lo, hi] */
    double u = (kt_uniform() + 1.0) / 2.0;
    int64_t v = lo + (int64_t)(u * (double)(hi - lo + 1));
    return v > hi ? hi : v;
}
__attribute__((unused)) static rt_tensor *kt_rand(int nd, const int64_t *shape) {
    rt_tensor *t = kt_tensor(KT_F32, nd, shape, NULL);
    for (int64_t i = 0, n = rt_tensor_numel(t); i < n; i++)
        ((float *)t->dl.data)[i] = (float)kt_uniform();
    return t;
}

__attribute__((unused)) static void kt_assert_shape(const rt_tensor *t, int nd,
                                                   const int64_t *shape) {
    cr_assert_not_null(t);
    cr_assert_eq(t->dl.ndim, nd, "rank %d, want %d", t->dl.ndim, nd);
    for (int i = 0; i < nd; i++)
        cr_assert_eq(t->dl.shape[i], shape[i], "dim %d is %lld, want %lld", i,
                     (long long)t->dl.shape[i], (long long)shape[i]);
}

/* |got - want| <= atol + rtol * |want| for every element (tests/compare_util.h; a NaN the
 * hand-written reference states is the answer). */
__attribute__((unused)) static void kt_assert_close(const rt_tensor *got, const double *want,
                                                   int64_t n, double rtol, double atol) {
    cr_assert_eq(rt_tensor_numel(got), n, "numel %lld, want %lld", (long long)rt_tensor_numel(got),
                 (long long)n);
    tc_expect_f64(got, want, n, (gr_cmp_opts){.atol = atol, .rtol = rtol, .nan_expected = true}, "kernel output");
}

/* Like kt_assert_close for the first n elements only. */
__attribute__((unused)) static void kt_assert_close_prefix(const rt_tensor *got, const double *want,
                                                          int64_t n, double rtol, double atol) {
    tc_expect_f64(got, want, n, (gr_cmp_opts){.atol = atol, .rtol = rtol, .nan_expected = true},
                  "kernel output (first %lld values)", (long long)n);
}

__attribute__((unused)) static void kt_assert_vals(const rt_tensor *got, int64_t n,
                                                  const double *want) {
    kt_assert_close(got, want, n, 0, 0);
}

static inline rt_value kt_val(rt_tensor *t) { return rt_value_tensor(t); }
static inline rt_value kt_int(int64_t i) { rt_value v = {.kind = RT_VAL_INT, .u.i = i}; return v; }
static inline rt_value kt_flt(double f) { rt_value v = {.kind = RT_VAL_FLOAT, .u.f = f}; return v; }
__attribute__((unused)) static rt_value kt_shape(int nd, const int64_t *dims) {
    rt_value v = {.kind = RT_VAL_SHAPE};
    v.u.shape.ndim = nd;
    memcpy(v.u.shape.dims, dims, sizeof(int64_t) * (size_t)nd);
    return v;
}

#endif
