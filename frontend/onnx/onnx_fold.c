/* Import-time evaluation of cheap nodes whose inputs are known (initializers, Constant nodes,
 * Shape of tensors with known rank), so Reshape/Expand/Resize/Slice get constant targets.
 * Two kinds of known values: numeric tensors (rt_tensor) and small int vectors of symbolic dims
 * (onnx_val.sym). Folders return 1 when they produced every output, 0 to let the converter run,
 * or a negative status. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

enum { FOLD_MAX_MOVE = 1 << 16, FOLD_MAX_MATH = 1 << 12, VEC_MAX = 2 * RT_MAX_NDIM };

static bool all_known(const onnx_cv *cv) {
    for (uint32_t i = 0; i < cv->nin; i++)
        if (cv_has(cv, i) && !cv->in[i]->known) return false;
    return true;
}

static bool is_intlike(ir_dtype t) { return t.code == kDLInt || t.code == kDLUInt; }

/* The dtype of input i's known or sym value; void when the input is absent. */
static ir_dtype val_dtype(const onnx_cv *cv, uint32_t i) {
    const onnx_val *v = cv_has(cv, i) ? cv->in[i] : NULL;
    return !v ? IR_DTYPE_VOID : v->sym ? v->sym_dtype : v->known ? v->known->dl.dtype : IR_DTYPE_VOID;
}

/* Input i as a small vector of whole numbers (dims): a sym value, or a known tensor of rank <= 1
 * (integer, or float holding whole numbers). */
static bool get_vec(onnx_cv *cv, uint32_t i, const ir_prim **out, int *n, bool *scalar) {
    if (!cv_has(cv, i)) return false;
    const onnx_val *v = cv->in[i];
    if (v->sym) {
        if (v->nsym > VEC_MAX || v->sym_ndim > 1) return false;
        memcpy(out, v->sym, sizeof(*out) * (size_t)v->nsym);
        *n = v->nsym;
        *scalar = v->sym_ndim == 0;
        return true;
    }
    const rt_tensor *t = v->known;
    if (!t || t->dl.ndim > 1 || t->dl.dtype.bits == 1) return false;
    int64_t len = rt_tensor_numel(t);
    if (len > VEC_MAX) return false;
    for (int64_t k = 0; k < len; k++) {
        if (!is_intlike(t->dl.dtype)) {
            double d = rt_tensor_get_f64(t, k);
            if (!(d == floor(d) && fabs(d) < 1e15)) return false;
        }
        out[k] = ir_prim_int(cv->ctx, onnx_tensor_get_i64(t, k));
    }
    *n = (int)len;
    *scalar = t->dl.ndim == 0;
    return true;
}

static const ir_prim **arena_dims(onnx_cv *cv, const ir_prim *const *src, int n) {
    const ir_prim **d = IR_NEW_ARRAY(cv->ctx, const ir_prim *, n ? n : 1);
    if (n) memcpy(d, src, sizeof(*d) * (size_t)n);
    return d;
}

/* ---- elementwise ops ---- */

typedef enum ew_code {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_POW, EW_MAX, EW_MIN, EW_EQ, EW_LT, EW_GT,
    EW_NEG, EW_ABS, EW_RELU, EW_SQRT, EW_RECIP, EW_WHERE, EW_FLOOR, EW_CEIL, EW_NOT,
    EW_MOD,  /* Mod, fmod=0: the remainder takes the divisor's sign (Python's %) */
    EW_FMOD, /* Mod, fmod=1: the dividend's sign (C's fmod) */
} ew_code;

static const struct {
    const char *op;
    ew_code code;
} ew_ops[] = {
    {"Add", EW_ADD},   {"Sum", EW_ADD},  {"Sub", EW_SUB},   {"Mul", EW_MUL},
    {"Div", EW_DIV},   {"Pow", EW_POW},  {"Max", EW_MAX},   {"Min", EW_MIN},
    {"Equal", EW_EQ},  {"Less", EW_LT},  {"Greater", EW_GT}, {"Neg", EW_NEG},
    {"Abs", EW_ABS},   {"Relu", EW_RELU}, {"Sqrt", EW_SQRT}, {"Reciprocal", EW_RECIP},
    {"Where", EW_WHERE}, {"Floor", EW_FLOOR}, {"Ceil", EW_CEIL}, {"Not", EW_NOT},
    {"Mod", EW_MOD},
};

static bool ew_find(const char *op, ew_code *code) {
    for (size_t i = 0; i < sizeof(ew_ops) / sizeof(ew_ops[0]); i++)
        if (!strcmp(ew_ops[i].op, op)) {
            *code = ew_ops[i].code;
            return true;
        }
    return false;
}

static bool ew_is_cmp(ew_code c) { return c == EW_EQ || c == EW_LT || c == EW_GT; }

/* Two's-complement wrap without signed-overflow UB. */
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* One integer op; false when it cannot be evaluated (division by zero). */
static bool ew_int(ew_code c, int64_t a, int64_t b, int64_t *r) {
    switch (c) {
    case EW_ADD: *r = wrap_add(a, b); return true;
    case EW_SUB: *r = wrap_sub(a, b); return true;
    case EW_MUL: *r = wrap_mul(a, b); return true;
    case EW_DIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return false;
        *r = a / b;
        return true;
    case EW_MOD:
    case EW_FMOD:
        if (b == 0) return false;
        *r = b == -1 ? 0 : a % b;
        if (c == EW_MOD && *r != 0 && (*r < 0) != (b < 0)) *r += b;
        return true;
    case EW_MAX: *r = a > b ? a : b; return true;
    case EW_MIN: *r = a < b ? a : b; return true;
    case EW_EQ: *r = a == b; return true;
    case EW_LT: *r = a < b; return true;
    case EW_GT: *r = a > b; return true;
    case EW_NEG: *r = wrap_sub(0, a); return true;
    case EW_ABS: *r = a < 0 ? wrap_sub(0, a) : a; return true;
    case EW_RELU: *r = a < 0 ? 0 : a; return true;
    case EW_FLOOR: case EW_CEIL: *r = a; return true;
    case EW_NOT: *r = a == 0; return true;
    default: return false;
    }
}

static double ew_float(ew_code c, double a, double b) {
    switch (c) {
    case EW_ADD: return a + b;
    case EW_SUB: return a - b;
    case EW_MUL: return a * b;
    case EW_DIV: return a / b;
    case EW_POW: return pow(a, b);
    case EW_MAX: return a > b ? a : b;
    case EW_MIN: return a < b ? a : b;
    case EW_EQ: return a == b;
    case EW_LT: return a < b;
    case EW_GT: return a > b;
    case EW_NEG: return -a;
    case EW_ABS: return fabs(a);
    case EW_RELU: return a < 0 ? 0 : a;
    case EW_SQRT: return sqrt(a);
    case EW_RECIP: return 1.0 / a;
    case EW_FLOOR: return floor(a);
    case EW_CEIL: return ceil(a);
    case EW_NOT: return a == 0;
    case EW_FMOD: return fmod(a, b);
    default: return NAN;
    }
}

/* numpy broadcast of known tensors' shapes; false on mismatch. */
static bool bcast_shape(rt_tensor *const *ts, uint32_t n, int32_t *ondim, int64_t *shape) {
    int32_t nd = 0;
    for (uint32_t i = 0; i < n; i++)
        if (ts[i]->dl.ndim > nd) nd = ts[i]->dl.ndim;
    for (int32_t d = 0; d < nd; d++) shape[d] = 1;
    for (uint32_t i = 0; i < n; i++) {
        int32_t off = nd - ts[i]->dl.ndim;
        for (int32_t d = 0; d < ts[i]->dl.ndim; d++) {
            int64_t s = ts[i]->shape[d];
            if (s == shape[off + d] || s == 1) continue;
            if (shape[off + d] != 1) return false;
            shape[off + d] = s;
        }
    }
    *ondim = nd;
    return true;
}

/* Linear index into ts (broadcast) for output multi-index idx. */
static int64_t bcast_index(const rt_tensor *t, int32_t nd, const int64_t *idx) {
    int64_t off = 0;
    int32_t skip = nd - t->dl.ndim;
    for (int32_t d = 0; d < t->dl.ndim; d++) {
        int64_t i = t->shape[d] == 1 ? 0 : idx[skip + d];
        off = off * t->shape[d] + i;
    }
    return off;
}

static int fold_ew_known(onnx_cv *cv, ew_code code) {
    rt_tensor *ts[16];
    uint32_t n = 0;
    for (uint32_t i = 0; i < cv->nin; i++) {
        if (!cv_has(cv, i)) continue;
        if (n == 16) return 0;
        ts[n++] = cv->in[i]->known;
    }
    if (n == 0) return 0;
    int32_t nd;
    int64_t shape[RT_MAX_NDIM];
    if (!bcast_shape(ts, n, &nd, shape)) return 0;  /* the converter reports it */
    int64_t numel = 1;
    for (int32_t d = 0; d < nd; d++) numel *= shape[d];
    if (numel > FOLD_MAX_MATH) return 0;
    rt_tensor *val0 = code == EW_WHERE ? ts[1] : ts[0];
    if (code == EW_WHERE && n != 3) return 0;
    ir_dtype dt = ew_is_cmp(code) ? IR_DTYPE_BOOL : val0->dl.dtype;
    bool intmath = is_intlike(val0->dl.dtype) && code != EW_POW && code != EW_SQRT &&
                   code != EW_RECIP;
    rt_tensor *out = rt_tensor_new(dt, nd, shape);
    if (!out) return 0;
    int64_t idx[RT_MAX_NDIM] = {0};
    for (int64_t e = 0; e < numel; e++) {
        if (code == EW_WHERE) {
            bool c = rt_tensor_get_f64(ts[0], bcast_index(ts[0], nd, idx)) != 0.0;
            rt_tensor *src = c ? ts[1] : ts[2];
            int64_t k = bcast_index(src, nd, idx);
            size_t eb = ir_dtype_bytes(dt);
            if (!ir_dtype_eq(src->dl.dtype, dt)) {
                rt_tensor_release(out);
                return 0;
            }
            memcpy((char *)out->dl.data + e * (int64_t)eb, (char *)src->dl.data + k * (int64_t)eb, eb);
        } else if (intmath) {
            int64_t acc = onnx_tensor_get_i64(ts[0], bcast_index(ts[0], nd, idx));
            if (n == 1 && !ew_int(code, acc, 0, &acc)) {
                rt_tensor_release(out);
                return 0;
            }
            for (uint32_t i = 1; i < n; i++) {
                int64_t b = onnx_tensor_get_i64(ts[i], bcast_index(ts[i], nd, idx));
                if (!ew_int(code, acc, b, &acc)) {
                    rt_tensor_release(out);
                    return 0;
                }
            }
            onnx_tensor_set_i64(out, e, acc);
        } else {
            double acc = rt_tensor_get_f64(ts[0], bcast_index(ts[0], nd, idx));
            if (n == 1) acc = ew_float(code, acc, 0);
            for (uint32_t i = 1; i < n; i++)
                acc = ew_float(code, acc, rt_tensor_get_f64(ts[i], bcast_index(ts[i], nd, idx)));
            onnx_tensor_set_f64(out, e, acc);
        }
        for (int32_t d = nd - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
    cv_set_known(cv, 0, out);
    return 1;
}

/* Elementwise ops on symbolic int vectors (shape arithmetic on dynamic dims). */
static int fold_ew_sym(onnx_cv *cv, ew_code code) {
    ir_ctx_t *ctx = cv->ctx;
    if (code == EW_WHERE) {
        const rt_tensor *c = cv_known(cv, 0);
        const ir_prim *x[VEC_MAX], *y[VEC_MAX];
        int nx, ny;
        bool sx, sy;
        if (!c || c->dl.ndim > 1 || !get_vec(cv, 1, x, &nx, &sx) || !get_vec(cv, 2, y, &ny, &sy))
            return 0;
        int64_t nc = rt_tensor_numel(c);
        int n = (int)nc > nx ? (int)nc : nx;
        if (ny > n) n = ny;
        if ((nc != n && nc != 1) || (nx != n && nx != 1) || (ny != n && ny != 1)) return 0;
        const ir_prim *r[VEC_MAX];
        for (int k = 0; k < n; k++)
            r[k] = rt_tensor_get_f64(c, nc == 1 ? 0 : k) != 0.0 ? x[nx == 1 ? 0 : k] : y[ny == 1 ? 0 : k];
        cv_set_sym(cv, 0, arena_dims(cv, r, n), n, c->dl.ndim == 0 && sx && sy, val_dtype(cv, 1));
        return 1;
    }
    bool unary = code == EW_NEG || code == EW_FLOOR || code == EW_CEIL;
    if (cv->nin != 2 && !(cv->nin == 1 && unary)) return 0;
    const ir_prim *a[VEC_MAX], *b[VEC_MAX];
    int na, nb;
    bool sa, sb;
    if (!get_vec(cv, 0, a, &na, &sa)) return 0;
    if (cv->nin == 2) {
        if (!get_vec(cv, 1, b, &nb, &sb)) return 0;
    } else {
        b[0] = ir_prim_int(ctx, 0);
        nb = 1;
        sb = true;
    }
    int n = na > nb ? na : nb;
    if ((na != n && na != 1) || (nb != n && nb != 1)) return 0;
    const ir_prim *r[VEC_MAX];
    bool cmp = ew_is_cmp(code);
    int64_t bits[VEC_MAX];
    for (int k = 0; k < n; k++) {
        const ir_prim *x = a[na == 1 ? 0 : k], *y = b[nb == 1 ? 0 : k];
        int64_t vx, vy, vr;
        bool ix = ir_prim_is_int(x, &vx), iy = ir_prim_is_int(y, &vy);
        if (ix && iy) {
            if (!ew_int(code, vx, vy, &vr)) return 0;
            r[k] = ir_prim_int(ctx, vr);
            bits[k] = vr;
            continue;
        }
        switch (code) {
        case EW_ADD: r[k] = ir_prim_add(ctx, x, y); break;
        case EW_SUB: r[k] = ir_prim_sub(ctx, x, y); break;
        case EW_MUL: r[k] = ir_prim_mul(ctx, x, y); break;
        case EW_NEG: r[k] = ir_prim_sub(ctx, ir_prim_int(ctx, 0), x); break;
        case EW_DIV:
            /* Shape arithmetic is on non-negative dims: integer truncation is floor. A float
             * quotient of a symbolic dim is not a whole number in general. A symbolic divisor
             * (Swin's batch * windows / windows) is a dim or a product of dims: positive. */
            if ((iy && vy <= 0) || !is_intlike(val_dtype(cv, 0))) return 0;
            r[k] = ir_prim_floordiv(ctx, x, y);
            break;
        case EW_MOD:
            /* A dim is never negative, so fmod=1 and fmod=0 agree on a positive divisor. */
        case EW_FMOD:
            if ((iy && vy <= 0) || !is_intlike(val_dtype(cv, 0))) return 0;
            r[k] = ir_prim_floormod(ctx, x, y);
            break;
        case EW_FLOOR:
        case EW_CEIL:
            r[k] = x;  /* sym values are whole numbers */
            break;
        case EW_EQ:
            /* A dim is never negative; the same expression is equal to itself. */
            if (x == y) bits[k] = 1;
            else if ((ix && vx < 0) || (iy && vy < 0)) bits[k] = 0;
            else return 0;
            break;
        default:
            return 0;
        }
        if (!cmp && !r[k]) return 0;
    }
    if (cmp) {
        int64_t len = n;
        rt_tensor *t = rt_tensor_new(IR_DTYPE_BOOL, sa && sb ? 0 : 1, &len);
        if (!t) return 0;
        for (int k = 0; k < n; k++) ((uint8_t *)t->dl.data)[k] = bits[k] != 0;
        cv_set_known(cv, 0, t);
        return 1;
    }
    cv_set_sym(cv, 0, arena_dims(cv, r, n), n, sa && sb, val_dtype(cv, 0));
    return 1;
}

int onnx_fold_generic(onnx_cv *cv) {
    ew_code code;
    if (!ew_find(cv->node->op_type, &code)) return 0;
    if (code == EW_MOD && cv_attr_int(cv, "fmod", 0)) code = EW_FMOD;
    else if (code == EW_MOD && !is_intlike(val_dtype(cv, 0))) return 0;  /* the converter refuses it */
    if (all_known(cv)) return fold_ew_known(cv, code);
    return fold_ew_sym(cv, code);
}

/* ---- Cast, Identity ---- */

int onnx_fold_cast(onnx_cv *cv) {
    ir_dtype to;
    if (!onnx_dtype_from_elem((int32_t)cv_attr_int(cv, "to", 0), &to)) return 0;
    if (cv_has(cv, 0) && cv->in[0]->sym) {
        if (to.bits == 1) return 0;
        const onnx_val *v = cv->in[0];
        cv_set_sym_nd(cv, 0, v->sym, v->sym_ndim, v->sym_shape, to);
        return 1;
    }
    rt_tensor *t = cv_known(cv, 0);
    if (!t || rt_tensor_numel(t) > FOLD_MAX_MOVE) return 0;
    rt_tensor *out = rt_tensor_new(to, t->dl.ndim, t->shape);
    if (!out) return 0;
    int64_t n = rt_tensor_numel(t);
    bool src_int = is_intlike(t->dl.dtype);
    for (int64_t i = 0; i < n; i++) {
        if (src_int) onnx_tensor_set_i64(out, i, onnx_tensor_get_i64(t, i));
        else onnx_tensor_set_f64(out, i, rt_tensor_get_f64(t, i));
    }
    cv_set_known(cv, 0, out);
    return 1;
}

int onnx_fold_identity(onnx_cv *cv) {
    if (!cv_has(cv, 0)) return 0;
    const onnx_val *v = cv->in[0];
    if (v->known) {
        cv_set_known(cv, 0, rt_tensor_retain(v->known));
        return 1;
    }
    if (v->sym) {
        cv_set_sym_nd(cv, 0, v->sym, v->sym_ndim, v->sym_shape, v->sym_dtype);
        return 1;
    }
    return 0;
}

/* ---- ConstantOfShape, Range ---- */

int onnx_fold_constant_of_shape(onnx_cv *cv) {
    int64_t shape[RT_MAX_NDIM];
    int n = cv_ints(cv, 0, shape, RT_MAX_NDIM);
    if (n < 0 || n > RT_MAX_NDIM) return 0;
    int64_t numel = 1;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) return cv_fail(cv, GR_ERR_INVALID, "negative dim %lld", (long long)shape[i]);
        if (shape[i] && numel > FOLD_MAX_MOVE / shape[i]) return 0;
        numel *= shape[i];
    }
    if (numel > FOLD_MAX_MOVE) return 0;
    gr_status st;
    rt_tensor *v = onnx_cos_value(cv, &st);
    if (!v) return st;
    rt_tensor *out = rt_tensor_new(v->dl.dtype, n, shape);
    if (out) {
        size_t eb = ir_dtype_bytes(v->dl.dtype);
        for (int64_t i = 0; i < numel; i++) memcpy((char *)out->dl.data + i * (int64_t)eb, v->dl.data, eb);
    }
    rt_tensor_release(v);
    if (!out) return 0;
    cv_set_known(cv, 0, out);
    return 1;
}

int onnx_fold_range(onnx_cv *cv) {
    rt_tensor *s = cv_known(cv, 0), *l = cv_known(cv, 1), *d = cv_known(cv, 2);
    if (!s || !l || !d || rt_tensor_numel(s) != 1 || rt_tensor_numel(l) != 1 || rt_tensor_numel(d) != 1)
        return 0;
    ir_dtype dt = s->dl.dtype;
    int64_t n;
    if (is_intlike(dt)) {
        int64_t a = onnx_tensor_get_i64(s, 0), b = onnx_tensor_get_i64(l, 0), c = onnx_tensor_get_i64(d, 0);
        if (c == 0) return cv_fail(cv, GR_ERR_INVALID, "delta is 0");
        double q = ceil(((double)b - (double)a) / (double)c);
        n = q > 0 ? (q > FOLD_MAX_MOVE ? FOLD_MAX_MOVE + 1 : (int64_t)q) : 0;
        if (n > FOLD_MAX_MOVE) return 0;
        rt_tensor *out = rt_tensor_new(dt, 1, &n);
        if (!out) return 0;
        for (int64_t i = 0; i < n; i++) onnx_tensor_set_i64(out, i, wrap_add(a, wrap_mul(i, c)));
        cv_set_known(cv, 0, out);
        return 1;
    }
    double a = rt_tensor_get_f64(s, 0), b = rt_tensor_get_f64(l, 0), c = rt_tensor_get_f64(d, 0);
    if (c == 0 || isnan(a) || isnan(b) || isnan(c)) return cv_fail(cv, GR_ERR_INVALID, "bad range");
    double q = ceil((b - a) / c);
    if (!(q <= FOLD_MAX_MOVE)) return 0;
    n = q > 0 ? (int64_t)q : 0;
    rt_tensor *out = rt_tensor_new(dt, 1, &n);
    if (!out) return 0;
    for (int64_t i = 0; i < n; i++) onnx_tensor_set_f64(out, i, a + (double)i * c);
    cv_set_known(cv, 0, out);
    return 1;
}

/* ---- Shape ---- */

int onnx_fold_shape(onnx_cv *cv) {
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *const *dims = cv_prim_dims(cv, 0);
    if (rank > 0 && !dims && cv->in[0]->expr) {
        ir_expr *x = cv->in[0]->expr;
        if (!(dims = cv_dims_or_cast(cv, 0, &x))) return cv_status(cv);
    }
    if (rank < 0 || (rank > 0 && !dims)) return 0;
    int32_t s, e;
    onnx_shape_range(cv, rank, &s, &e);
    cv_set_sym(cv, 0, arena_dims(cv, dims + s, e - s), e - s, false, IR_DTYPE_I64);
    return 1;
}

int onnx_fold_size(onnx_cv *cv) {
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *const *dims = cv_prim_dims(cv, 0);
    if (rank < 0 || (rank > 0 && !dims)) return 0;
    const ir_prim *n = ir_prim_int(cv->ctx, 1);
    for (int32_t i = 0; i < rank; i++) n = ir_prim_mul(cv->ctx, n, dims[i]);
    cv_set_sym(cv, 0, arena_dims(cv, &n, 1), 1, true, IR_DTYPE_I64);
    return 1;
}

/* ---- data movement on known tensors ---- */

static size_t elem_bytes(const rt_tensor *t) { return ir_dtype_bytes(t->dl.dtype); }

int onnx_fold_gather(onnx_cv *cv) {
    rt_tensor *idx = cv_known(cv, 1);
    if (!idx || !is_intlike(idx->dl.dtype)) return 0;
    int64_t axis = cv_attr_int(cv, "axis", 0);
    int64_t ni = rt_tensor_numel(idx);
    if (cv_has(cv, 0) && cv->in[0]->sym) {
        const onnx_val *v = cv->in[0];
        if (v->sym_ndim != 1 || idx->dl.ndim > 1 || (axis != 0 && axis != -1) || ni > VEC_MAX) return 0;
        const ir_prim *r[VEC_MAX];
        for (int64_t k = 0; k < ni; k++) {
            int64_t j = onnx_tensor_get_i64(idx, k);
            if (j < 0) j += v->nsym;
            if (j < 0 || j >= v->nsym)
                return cv_fail(cv, GR_ERR_INVALID, "index %lld out of range", (long long)j);
            r[k] = v->sym[j];
        }
        cv_set_sym(cv, 0, arena_dims(cv, r, (int)ni), (int)ni, idx->dl.ndim == 0, v->sym_dtype);
        return 1;
    }
    rt_tensor *x = cv_known(cv, 0);
    if (!x || x->dl.ndim == 0) return 0;
    if (!cv_axis(axis, x->dl.ndim, &axis)) return cv_fail(cv, GR_ERR_INVALID, "axis out of range");
    int32_t ond = x->dl.ndim - 1 + idx->dl.ndim;
    if (ond > RT_MAX_NDIM) return 0;
    int64_t shape[RT_MAX_NDIM], outer = 1, inner = 1, dim = x->shape[axis];
    int32_t k = 0;
    for (int32_t d = 0; d < axis; d++) outer *= (shape[k++] = x->shape[d]);
    for (int32_t d = 0; d < idx->dl.ndim; d++) shape[k++] = idx->shape[d];
    for (int32_t d = (int32_t)axis + 1; d < x->dl.ndim; d++) inner *= (shape[k++] = x->shape[d]);
    if (outer * ni * inner > FOLD_MAX_MOVE) return 0;
    rt_tensor *out = rt_tensor_new(x->dl.dtype, ond, shape);
    if (!out) return 0;
    size_t eb = elem_bytes(x), row = eb * (size_t)inner;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < ni; i++) {
            int64_t j = onnx_tensor_get_i64(idx, i);
            if (j < 0) j += dim;
            if (j < 0 || j >= dim) {
                rt_tensor_release(out);
                return cv_fail(cv, GR_ERR_INVALID, "index %lld out of range for dim %lld",
                               (long long)onnx_tensor_get_i64(idx, i), (long long)dim);
            }
            memcpy((char *)out->dl.data + (size_t)(o * ni + i) * row,
                   (char *)x->dl.data + (size_t)(o * dim + j) * row, row);
        }
    cv_set_known(cv, 0, out);
    return 1;
}

int onnx_fold_concat(onnx_cv *cv) {
    int64_t axis = cv_attr_int(cv, "axis", 0);
    if (!all_known(cv)) {
        /* Shape vectors with symbolic dims. */
        const ir_prim *r[VEC_MAX];
        int n = 0;
        for (uint32_t i = 0; i < cv->nin; i++) {
            if (!cv_has(cv, i)) continue;
            const ir_prim *p[VEC_MAX];
            int np;
            bool sc;
            if (!get_vec(cv, i, p, &np, &sc) || sc || n + np > VEC_MAX) return 0;
            memcpy(r + n, p, sizeof(*p) * (size_t)np);
            n += np;
        }
        cv_set_sym(cv, 0, arena_dims(cv, r, n), n, false, val_dtype(cv, 0));
        return 1;
    }
    rt_tensor *ts[64];
    uint32_t n = 0;
    for (uint32_t i = 0; i < cv->nin; i++)
        if (cv_has(cv, i)) {
            if (n == 64) return 0;
            ts[n++] = cv->in[i]->known;
        }
    if (!n) return 0;
    int32_t nd = ts[0]->dl.ndim;
    if (!cv_axis(axis, nd, &axis)) return 0;
    int64_t shape[RT_MAX_NDIM];
    memcpy(shape, ts[0]->shape, sizeof(int64_t) * (size_t)nd);
    shape[axis] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ts[i]->dl.ndim != nd || !ir_dtype_eq(ts[i]->dl.dtype, ts[0]->dl.dtype)) return 0;
        for (int32_t d = 0; d < nd; d++)
            if (d != axis && ts[i]->shape[d] != ts[0]->shape[d]) return 0;
        shape[axis] += ts[i]->shape[axis];
    }
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= shape[d];
    for (int32_t d = (int32_t)axis + 1; d < nd; d++) inner *= shape[d];
    if (outer * shape[axis] * inner > FOLD_MAX_MOVE) return 0;
    rt_tensor *out = rt_tensor_new(ts[0]->dl.dtype, nd, shape);
    if (!out) return 0;
    size_t eb = elem_bytes(out);
    char *dst = out->dl.data;
    for (int64_t o = 0; o < outer; o++)
        for (uint32_t i = 0; i < n; i++) {
            size_t chunk = eb * (size_t)(ts[i]->shape[axis] * inner);
            memcpy(dst, (char *)ts[i]->dl.data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    cv_set_known(cv, 0, out);
    return 1;
}

/* ---- element moves (Slice, Reshape, Transpose) on known tensors and symbolic values ---- */

/* Input 0 as a source of moved elements: a known tensor or a symbolic value, its shape. */
typedef struct move_src {
    const rt_tensor *t;    /* known, or NULL */
    const onnx_val *s;     /* symbolic, or NULL */
    int32_t rank;
    int64_t shape[RT_MAX_NDIM];
} move_src;

static bool move_src_get(onnx_cv *cv, move_src *m) {
    memset(m, 0, sizeof(*m));
    if (!cv_has(cv, 0)) return false;
    if (cv->in[0]->sym) {
        m->s = cv->in[0];
        m->rank = m->s->sym_ndim;
        memcpy(m->shape, m->s->sym_shape, sizeof(m->shape));
        return true;
    }
    if (!(m->t = cv_known(cv, 0))) return false;
    m->rank = m->t->dl.ndim;
    memcpy(m->shape, m->t->shape, sizeof(int64_t) * (size_t)m->rank);
    return true;
}

/* Output 0: element k of the (rank, shape) result is element from[k] of the source. 1, or 0
 * when too large to fold. */
static int move_out(onnx_cv *cv, const move_src *m, int32_t rank, const int64_t *shape, const int64_t *from,
                    int64_t numel) {
    if (m->s) {
        if (numel > VEC_MAX) return 0;
        const ir_prim **r = IR_NEW_ARRAY(cv->ctx, const ir_prim *, numel ? numel : 1);
        for (int64_t k = 0; k < numel; k++) r[k] = m->s->sym[from[k]];
        cv_set_sym_nd(cv, 0, r, rank, shape, m->s->sym_dtype);
        return 1;
    }
    rt_tensor *out = rt_tensor_new(m->t->dl.dtype, rank, shape);
    if (!out) return 0;
    size_t eb = elem_bytes(m->t);
    for (int64_t k = 0; k < numel; k++)
        memcpy((char *)out->dl.data + (size_t)k * eb, (char *)m->t->dl.data + (size_t)from[k] * eb, eb);
    cv_set_known(cv, 0, out);
    return 1;
}

/* The source offsets of a strided view (per-dim start, step, count; source strides) in
 * row-major order; heap, NULL when the view is larger than FOLD_MAX_MOVE. */
static int64_t *view_offsets(int32_t rank, const int64_t *start, const int64_t *step, const int64_t *count,
                             const int64_t *stride, int64_t *numel) {
    int64_t total = 1;
    for (int32_t d = 0; d < rank; d++) {
        if (count[d] && total > FOLD_MAX_MOVE / count[d]) return NULL;
        total *= count[d];
    }
    *numel = total;
    int64_t *from = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    if (!from) return NULL;
    int64_t idx[RT_MAX_NDIM] = {0};
    for (int64_t o = 0; o < total; o++) {
        int64_t src = 0;
        for (int32_t d = 0; d < rank; d++) src += (start[d] + idx[d] * step[d]) * stride[d];
        from[o] = src;
        for (int32_t d = rank - 1; d >= 0; d--) {
            if (++idx[d] < count[d]) break;
            idx[d] = 0;
        }
    }
    return from;
}

static void row_major_strides(int32_t rank, const int64_t *shape, int64_t *stride) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= shape[d];
    }
}

int onnx_fold_slice(onnx_cv *cv) {
    ir_ctx_t *ctx = cv->ctx;
    move_src m;
    if (!move_src_get(cv, &m) || m.rank == 0) return 0;
    for (uint32_t i = 1; i < cv->nin; i++)
        if (cv_has(cv, i) && !cv->in[i]->known) return 0;
    const ir_prim *dims[RT_MAX_NDIM];
    for (int32_t d = 0; d < m.rank; d++) dims[d] = ir_prim_int(ctx, m.shape[d]);
    int64_t axes[RT_MAX_NDIM], steps[RT_MAX_NDIM];
    const ir_prim *b[RT_MAX_NDIM], *e[RT_MAX_NDIM];
    int n = onnx_slice_params(cv, m.rank, dims, axes, b, e, steps);
    if (n < 0) return cv_status(cv);
    /* Per-dim start, step and count. */
    int64_t start[RT_MAX_NDIM], step[RT_MAX_NDIM], count[RT_MAX_NDIM], stride[RT_MAX_NDIM];
    for (int32_t d = 0; d < m.rank; d++) {
        count[d] = m.shape[d];
        start[d] = 0;
        step[d] = 1;
    }
    for (int i = 0; i < n; i++) {
        int64_t s, en, st = steps[i], a = axes[i];
        ir_prim_is_int(b[i], &s);
        ir_prim_is_int(e[i], &en);
        int64_t c = st > 0 ? (en > s ? (en - s - 1) / st + 1 : 0)
                           : (s > en ? (s - en - 1) / (-st) + 1 : 0);
        start[a] = s;
        step[a] = st;
        count[a] = c > 0 ? c : 0;
    }
    row_major_strides(m.rank, m.shape, stride);
    int64_t numel;
    int64_t *from = view_offsets(m.rank, start, step, count, stride, &numel);
    if (!from) return 0;
    int r = move_out(cv, &m, m.rank, count, from, numel);
    free(from);
    return r;
}

/* Transpose (torch's pads come reversed through a [-1, 2] reshape and a transpose). */
int onnx_fold_transpose(onnx_cv *cv) {
    move_src m;
    if (!move_src_get(cv, &m)) return 0;
    int64_t perm[RT_MAX_NDIM];
    int n = cv_attr_ints(cv, "perm", perm, RT_MAX_NDIM);
    if (n < 0) {
        n = m.rank;
        for (int32_t d = 0; d < m.rank; d++) perm[d] = m.rank - 1 - d;
    }
    if (n != m.rank) return 0;  /* the converter reports it */
    int64_t shape[RT_MAX_NDIM], stride[RT_MAX_NDIM], pstride[RT_MAX_NDIM], start[RT_MAX_NDIM] = {0};
    int64_t step[RT_MAX_NDIM];
    bool seen[RT_MAX_NDIM] = {false};
    row_major_strides(m.rank, m.shape, stride);
    for (int32_t d = 0; d < m.rank; d++) {
        if (perm[d] < 0 || perm[d] >= m.rank || seen[perm[d]]) return 0;
        seen[perm[d]] = true;
        shape[d] = m.shape[perm[d]];
        pstride[d] = stride[perm[d]];
        step[d] = 1;
    }
    int64_t numel;
    int64_t *from = view_offsets(m.rank, start, step, shape, pstride, &numel);
    if (!from) return 0;
    int r = move_out(cv, &m, m.rank, shape, from, numel);
    free(from);
    return r;
}

/* Reshape, Flatten, Squeeze, Unsqueeze of known or symbolic values: same data, new shape. */
int onnx_fold_reshape(onnx_cv *cv) {
    ir_ctx_t *ctx = cv->ctx;
    move_src m;
    if (!move_src_get(cv, &m)) return 0;
    const ir_prim *dims[RT_MAX_NDIM], *out[RT_MAX_NDIM];
    if (!strcmp(cv->node->op_type, "Reshape") && cv_dims(cv, 1, out, RT_MAX_NDIM) < 0) return 0;
    int64_t have = 1;
    for (int32_t d = 0; d < m.rank; d++) {
        dims[d] = ir_prim_int(ctx, m.shape[d]);
        have *= m.shape[d];
    }
    int n = onnx_reshape_dims(cv, dims, m.rank, out);
    if (n < 0) return cv_status(cv);
    int64_t shape[RT_MAX_NDIM], numel = 1;
    for (int i = 0; i < n; i++) {
        if (!ir_prim_is_int(out[i], &shape[i])) return 0;
        numel *= shape[i];
    }
    if (numel != have)
        return cv_fail(cv, GR_ERR_INVALID, "cannot reshape %lld elements into %lld", (long long)have,
                       (long long)numel);
    if (m.s) {
        cv_set_sym_nd(cv, 0, m.s->sym, n, shape, m.s->sym_dtype);
        return 1;
    }
    if (numel > FOLD_MAX_MOVE) return 0;
    rt_tensor *t = rt_tensor_new(m.t->dl.dtype, n, shape);
    if (!t) return 0;
    memcpy(t->dl.data, m.t->dl.data, rt_tensor_nbytes(m.t));
    cv_set_known(cv, 0, t);
    return 1;
}
