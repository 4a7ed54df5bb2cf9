/* Kernel registry (op name -> kernel, merged from the family tables) and the helpers every
 * kernel family shares. */
#include "runtime/kernels/kernels.h"

#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* ---- registry ---- */

static rt_kernel_fn g_by_id[IR_OP_COUNT];
static const rt_kernel_entry **g_off;   /* off-table rows (stand-in defs) */
static size_t g_noff;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void registry_init(void) {
#ifdef __GLIBC__
    /* Kernels allocate and free many large activations. glibc would mmap each one and unmap it
     * on free, so every kernel call page-faults its whole output in again (2.5x slower on
     * PP-OCR det); keep large blocks in the heap for reuse instead. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    size_t n = 0;
#define COUNT_FAMILY(f) n += rt_kernels_##f##_count;
    RT_KERNEL_FAMILIES(COUNT_FAMILY)
#undef COUNT_FAMILY
    g_off = gr_xmalloc(sizeof(*g_off) * (n ? n : 1));
#define ADD_FAMILY(f)                                                          \
    for (size_t i = 0; i < rt_kernels_##f##_count; i++) {                      \
        const rt_kernel_entry *e = &rt_kernels_##f[i];                         \
        if (e->op >= 0 && e->op < IR_OP_COUNT) g_by_id[e->op] = e->fn;         \
        else g_off[g_noff++] = e;                                              \
    }
    RT_KERNEL_FAMILIES(ADD_FAMILY)
#undef ADD_FAMILY
}

rt_kernel_fn rt_kernel_find(const ir_op_def *op) {
    if (!op) return NULL;
    pthread_once(&g_once, registry_init);
    ir_op_id id = ir_op_def_id(op);
    if (id != IR_OP_NONE) return g_by_id[id];
    /* a stand-in def of an op the table does not have yet */
    for (size_t i = 0; op->name && i < g_noff; i++)
        if (strcmp(g_off[i]->name, op->name) == 0) return g_off[i]->fn;
    return NULL;
}

gr_status rt_kernel_run(const rt_kernel_call *call, rt_value *out, gr_diag *diag) {
    out->kind = RT_VAL_NONE;
    rt_kernel_fn fn = rt_kernel_find(call->op);
    if (!fn) {
        return rt_kerr(call, diag, GR_ERR_UNSUPPORTED, "no reference kernel for this op");
    }
    return fn(call, out, diag);
}

/* ---- errors ---- */

gr_status rt_kout_as(const rt_kernel_call *c, rt_tensor *o, ir_dtype dt, rt_value *out, gr_diag *d) {
    if (!rt_dt_eq(o->dl.dtype, dt)) {
        rt_tensor *conv = rt_tensor_cast(o, dt);
        rt_tensor_release(o);
        if (!conv) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
        o = conv;
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

gr_status rt_kerr(const rt_kernel_call *c, gr_diag *d, gr_status code, const char *fmt, ...) {
    if (!d) return code;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *opname = c->op ? (c->op->text_name ? c->op->text_name : c->op->name) : "?";
    const char *layer = ir_span_layer(c->span);
    if (layer) return gr_fail(d, code, layer, opname, "%s (layer '%s'): %s", opname, layer, msg);
    return gr_fail(d, code, NULL, opname, "%s: %s", opname, msg);
}

const char *rt_dims_str(int ndim, const int64_t *dims, char *buf, size_t n) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "(");
    for (int i = 0; i < ndim && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (ndim == 1 && at < n) at += (size_t)snprintf(buf + at, n - at, ",");
    if (at < n) snprintf(buf + at, n - at, ")");
    return buf;
}

const char *rt_shape_str(const rt_tensor *t, char *buf, size_t n) {
    if (!t) {
        snprintf(buf, n, "(none)");
        return buf;
    }
    rt_dims_str(t->dl.ndim, t->dl.shape, buf, n);
    size_t at = strlen(buf);
    const char *dn = ir_dtype_name(t->dl.dtype);
    if (at < n) snprintf(buf + at, n - at, " %s", dn ? dn : "?");
    return buf;
}

/* ---- arguments ---- */

gr_status rt_check_nargs(const rt_kernel_call *c, uint32_t lo, uint32_t hi, gr_diag *d) {
    if (c->nargs < lo || c->nargs > hi)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects %u to %u arguments, got %u", lo, hi,
                       c->nargs);
    return GR_OK;
}

gr_status rt_arg_tensor(const rt_kernel_call *c, uint32_t i, const rt_tensor **out, gr_diag *d) {
    if (i >= c->nargs)
        return rt_kerr(c, d, GR_ERR_INVALID, "missing argument %u (got %u)", i, c->nargs);
    const rt_value *v = &c->args[i];
    if (v->kind != RT_VAL_TENSOR || !v->u.t)
        return rt_kerr(c, d, GR_ERR_INVALID, "argument %u is not a tensor", i);
    *out = v->u.t;
    return GR_OK;
}

bool rt_value_scalar(const rt_value *v, double *out) {
    switch ((rt_value_kind)v->kind) {
    case RT_VAL_INT: *out = (double)v->u.i; return true;
    case RT_VAL_FLOAT: *out = v->u.f; return true;
    case RT_VAL_TENSOR:
        if (v->u.t && rt_tensor_numel(v->u.t) == 1) {
            *out = rt_tensor_get_f64(v->u.t, 0);
            return true;
        }
        return false;
    default: return false;
    }
}

int rt_value_ints(const rt_value *v, int64_t *out, int max) {
    switch ((rt_value_kind)v->kind) {
    case RT_VAL_SHAPE:
        for (int i = 0; i < v->u.shape.ndim && i < max; i++) out[i] = v->u.shape.dims[i];
        return v->u.shape.ndim;
    case RT_VAL_INT:
        if (max > 0) out[0] = v->u.i;
        return 1;
    case RT_VAL_TUPLE:
        for (uint32_t i = 0; i < v->u.tuple.n; i++) {
            const rt_value *it = &v->u.tuple.items[i];
            double x;
            if (it->kind != RT_VAL_INT && !(it->kind == RT_VAL_TENSOR && rt_value_scalar(it, &x)))
                return -1;
            if ((int)i < max) out[i] = it->kind == RT_VAL_INT ? it->u.i : (int64_t)x;
        }
        return (int)v->u.tuple.n;
    case RT_VAL_TENSOR: {
        const rt_tensor *t = v->u.t;
        if (!t || t->dl.ndim > 1 || rt_is_floatish(t->dl.dtype)) return -1;
        int64_t n = rt_tensor_numel(t);
        const void *p = t->dl.data;
        for (int64_t i = 0; i < n && i < max; i++) {
            if (t->dl.dtype.code == kDLInt && t->dl.dtype.bits == 64) out[i] = ((const int64_t *)p)[i];
            else out[i] = (int64_t)rt_tensor_get_f64(t, i);
        }
        return (int)n;
    }
    default: return -1;
    }
}

/* ---- attributes ---- */

int rt_attr_ints(const ir_attrs *a, const char *key, int64_t *out, int max) {
    const ir_attr *v = ir_attrs_get(a, key);
    if (!v) return -1;
    if (v->kind == IR_ATTR_INT) {
        if (max > 0) out[0] = v->u.i;
        return 1;
    }
    if (v->kind == IR_ATTR_PRIM && v->u.prim) return -1;
    if (v->kind != IR_ATTR_ARRAY) return -1;
    for (uint32_t i = 0; i < v->u.arr.n && (int)i < max; i++) {
        const ir_attr *it = &v->u.arr.items[i];
        out[i] = it->kind == IR_ATTR_INT ? it->u.i
                 : it->kind == IR_ATTR_FLOAT ? (int64_t)it->u.f
                 : it->kind == IR_ATTR_BOOL ? it->u.b : 0;
    }
    return (int)v->u.arr.n;
}

ir_dtype rt_attr_dtype(const ir_attrs *a, const char *key, ir_dtype dflt) {
    const ir_attr *v = ir_attrs_get(a, key);
    if (!v) return dflt;
    if (v->kind == IR_ATTR_DTYPE) return ir_dtype_is_void(v->u.dtype) ? dflt : v->u.dtype;
    if (v->kind == IR_ATTR_STR && v->u.s) {
        ir_dtype t;
        if (v->u.s[0] && ir_dtype_parse(v->u.s, &t) && !ir_dtype_is_void(t)) return t;
    }
    return dflt;
}

const char *rt_attr_str(const ir_attrs *a, const char *key, const char *dflt) {
    const char *s = ir_attrs_get_str(a, key);
    return s ? s : dflt;
}

bool rt_attr_is_none(const ir_attrs *a, const char *key) {
    const ir_attr *v = ir_attrs_get(a, key);
    return !v || v->kind == IR_ATTR_NONE;
}

/* ---- tensors ---- */

static _Thread_local void *out_hint;
static _Thread_local size_t out_hint_bytes;

void rt_kernel_out_hint(void *data, size_t nbytes) {
    out_hint = data;
    out_hint_bytes = nbytes;
}

/* A tensor over the hinted buffer when the sizes agree (the hint is then used up). */
static rt_tensor *take_out_hint(DLDataType dt, int ndim, const int64_t *shape, bool zero) {
    if (!out_hint) return NULL;
    rt_tensor *t = rt_tensor_wrap(dt, ndim, shape, NULL);
    if (!t) return NULL;
    size_t n = rt_tensor_nbytes(t);
    if (n != out_hint_bytes) {
        rt_tensor_release(t);
        return NULL;
    }
    t->dl.data = out_hint;
    out_hint = NULL;
    if (zero && n) memset(t->dl.data, 0, n);
    return t;
}

gr_status rt_out_new(const rt_kernel_call *c, DLDataType dt, int ndim, const int64_t *shape,
                     rt_tensor **out, gr_diag *d) {
    if (ndim < 0 || ndim > RT_MAX_NDIM)
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "output rank %d exceeds %d", ndim, RT_MAX_NDIM);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "negative output dimension in %s",
                           RT_DIMS_STR(ndim, shape));
    *out = take_out_hint(dt, ndim, shape, true);
    if (!*out) *out = rt_tensor_new(dt, ndim, shape);
    if (!*out)
        return rt_kerr(c, d, GR_ERR_NOMEM, "cannot allocate output %s", RT_DIMS_STR(ndim, shape));
    return GR_OK;
}

rt_tensor *rt_tensor_new_raw(DLDataType dt, int ndim, const int64_t *shape) {
    rt_tensor *t = rt_tensor_wrap(dt, ndim, shape, NULL);
    if (!t) return NULL;
    size_t n = rt_tensor_nbytes(t);
    size_t alloc = n ? (n + 63) / 64 * 64 : 64;
    t->owner = aligned_alloc(64, alloc);  /* freed by the tensor's deleter (tensor.h) */
    if (!t->owner) {
        rt_tensor_release(t);
        return NULL;
    }
    t->dl.data = t->owner;
    return t;
}

gr_status rt_out_new_raw(const rt_kernel_call *c, DLDataType dt, int ndim, const int64_t *shape,
                         rt_tensor **out, gr_diag *d) {
    if (ndim < 0 || ndim > RT_MAX_NDIM)
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "output rank %d exceeds %d", ndim, RT_MAX_NDIM);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "negative output dimension in %s",
                           RT_DIMS_STR(ndim, shape));
    *out = take_out_hint(dt, ndim, shape, false);
    if (!*out) *out = rt_tensor_new_raw(dt, ndim, shape);
    if (!*out)
        return rt_kerr(c, d, GR_ERR_NOMEM, "cannot allocate output %s", RT_DIMS_STR(ndim, shape));
    return GR_OK;
}

size_t rt_dtype_size(DLDataType t) {
    size_t b = t.bits < 8 ? 1 : t.bits / 8u;
    return b * (t.lanes ? t.lanes : 1u);
}

rt_tensor *rt_tensor_cast(const rt_tensor *t, DLDataType to) {
    if (rt_dt_eq(t->dl.dtype, to)) return rt_tensor_retain((rt_tensor *)t);
    rt_tensor *o = rt_tensor_new_raw(to, t->dl.ndim, t->dl.shape);
    if (!o) return NULL;
    int64_t n = rt_tensor_numel(t);
    DLDataType from = t->dl.dtype;
    const void *src = t->dl.data;
    void *dst = o->dl.data;
    bool from_i64 = from.code == kDLInt && from.bits == 64;
    bool to_i64 = to.code == kDLInt && to.bits == 64;
    if (rt_is_f32(from) && to_i64) {
        for (int64_t i = 0; i < n; i++) {
            float x = ((const float *)src)[i];
            ((int64_t *)dst)[i] = isfinite(x) ? (int64_t)x : 0;
        }
    } else if (rt_is_f32(to) && from_i64) {
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)((const int64_t *)src)[i];
    } else if (from_i64 && to.code == kDLInt && to.bits == 32) {
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)((const int64_t *)src)[i];
    } else if (to_i64 && from.code == kDLInt && from.bits == 32) {
        for (int64_t i = 0; i < n; i++) ((int64_t *)dst)[i] = ((const int32_t *)src)[i];
    } else if (from_i64) {
        /* exact for any int64 source value that fits the target */
        for (int64_t i = 0; i < n; i++) {
            int64_t x = ((const int64_t *)src)[i];
            if (to.code == kDLUInt && to.bits == 1) ((uint8_t *)dst)[i] = x != 0;
            else rt_tensor_set_f64(o, i, (double)x);
        }
    } else if (to_i64 && from.code != kDLFloat && from.code != kDLBfloat) {
        for (int64_t i = 0; i < n; i++) ((int64_t *)dst)[i] = (int64_t)rt_tensor_get_f64(t, i);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double x = rt_tensor_get_f64(t, i);
            if (!rt_is_floatish(to) && !isfinite(x)) x = 0;
            if (to.code == kDLUInt && to.bits == 1) x = x != 0.0;
            rt_tensor_set_f64(o, i, x);
        }
    }
    return o;
}

rt_tensor *rt_tensor_permute(const rt_tensor *t, const int *perm) {
    int nd = t->dl.ndim;
    int64_t oshape[RT_MAX_NDIM], ts[RT_MAX_NDIM], is[RT_MAX_NDIM];
    rt_strides(nd, t->dl.shape, ts);
    for (int i = 0; i < nd; i++) {
        oshape[i] = t->dl.shape[perm[i]];
        is[i] = ts[perm[i]];
    }
    rt_tensor *o = rt_tensor_new_raw(t->dl.dtype, nd, oshape);
    if (!o) return NULL;
    size_t es = rt_dtype_size(t->dl.dtype);
    int64_t total = rt_numel(nd, oshape), idx[RT_MAX_NDIM] = {0}, off = 0;
    const char *src = t->dl.data;
    char *dst = o->dl.data;
    for (int64_t i = 0; i < total; i++) {
        memcpy(dst + i * (int64_t)es, src + off * (int64_t)es, es);
        for (int k = nd - 1; k >= 0; k--) {
            off += is[k];
            if (++idx[k] < oshape[k]) break;
            off -= is[k] * idx[k];
            idx[k] = 0;
        }
    }
    return o;
}

bool rt_layout_perm(const char *have, const char *want, int *perm) {
    size_t n = strlen(want);
    if (strlen(have) != n || n > RT_MAX_NDIM) return false;
    bool used[RT_MAX_NDIM] = {0};
    for (size_t i = 0; i < n; i++) {
        const char *at = strchr(have, want[i]);
        if (!at || used[at - have]) return false;
        used[at - have] = true;
        perm[i] = (int)(at - have);
    }
    return true;
}

bool rt_norm_axis(int64_t *axis, int ndim) {
    if (*axis < 0) *axis += ndim;
    return *axis >= 0 && *axis < ndim;
}

void rt_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i];
    }
}

/* ---- broadcasting ---- */

bool rt_bcast_init(rt_bcast *b, int nin, const rt_tensor *const *ins, int64_t *out_shape,
                   int *out_ndim) {
    int nd = 0;
    for (int k = 0; k < nin; k++)
        if (ins[k]->dl.ndim > nd) nd = ins[k]->dl.ndim;
    int64_t st[RT_BCAST_MAX][RT_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        int64_t dim = 1;
        for (int k = 0; k < nin; k++) {
            int j = i - (nd - ins[k]->dl.ndim);
            int64_t e = j >= 0 ? ins[k]->dl.shape[j] : 1;
            if (e == dim || e == 1) continue;
            if (dim != 1) return false;
            dim = e;
        }
        out_shape[i] = dim;
    }
    for (int k = 0; k < nin; k++) {
        int64_t s = 1;
        for (int i = nd - 1; i >= 0; i--) {
            int j = i - (nd - ins[k]->dl.ndim);
            int64_t e = j >= 0 ? ins[k]->dl.shape[j] : 1;
            st[k][i] = e == 1 ? 0 : s;
            s *= e;
        }
    }
    *out_ndim = nd;
    /* collapse dims that stay contiguous for every operand (size-1 dims vanish) */
    b->nops = nin;
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (out_shape[i] == 1) continue;
        if (m > 0) {
            bool merge = true;
            for (int k = 0; k < nin && merge; k++)
                merge = b->strides[k][m - 1] == st[k][i] * out_shape[i];
            if (merge) {
                b->shape[m - 1] *= out_shape[i];
                for (int k = 0; k < nin; k++) b->strides[k][m - 1] = st[k][i];
                continue;
            }
        }
        b->shape[m] = out_shape[i];
        for (int k = 0; k < nin; k++) b->strides[k][m] = st[k][i];
        m++;
    }
    if (m == 0) {
        b->shape[0] = 1;
        for (int k = 0; k < nin; k++) b->strides[k][0] = 0;
        m = 1;
    }
    b->ndim = m;
    return true;
}

void rt_bcast_run(const rt_bcast *b, rt_bcast_row_fn fn, void *ctx) {
    int nd = b->ndim;
    int64_t inner = b->shape[nd - 1];
    int64_t rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= b->shape[i];
    if (inner == 0 || rows == 0) return;
    int64_t idx[RT_MAX_NDIM] = {0};
    int64_t off[RT_BCAST_MAX] = {0};
    int64_t istride[RT_BCAST_MAX];
    for (int k = 0; k < b->nops; k++) istride[k] = b->strides[k][nd - 1];
    for (int64_t r = 0; r < rows; r++) {
        fn(ctx, r * inner, off, istride, inner);
        for (int i = nd - 2; i >= 0; i--) {   /* odometer over the outer dims */
            idx[i]++;
            for (int k = 0; k < b->nops; k++) off[k] += b->strides[k][i];
            if (idx[i] < b->shape[i]) break;
            for (int k = 0; k < b->nops; k++) off[k] -= b->strides[k][i] * idx[i];
            idx[i] = 0;
        }
    }
}

/* ---- scratch pool: a few grow-only slots; extra requests fall back to malloc ---- */

#define SCRATCH_SLOTS 8
static struct {
    void *p;
    size_t cap;
    bool busy;
} g_scratch[SCRATCH_SLOTS];
static pthread_mutex_t g_scratch_mu = PTHREAD_MUTEX_INITIALIZER;

void *rt_scratch_get(size_t bytes) {
    size_t want = (bytes + 63) / 64 * 64;
    if (want == 0) want = 64;
    void *r = NULL;
    pthread_mutex_lock(&g_scratch_mu);
    int best = -1;
    for (int i = 0; i < SCRATCH_SLOTS; i++) {
        if (g_scratch[i].busy) continue;
        if (g_scratch[i].cap >= want) { best = i; break; }
        if (best < 0 || g_scratch[i].cap > g_scratch[best].cap) best = i;
    }
    if (best >= 0 && g_scratch[best].cap < want) { /* grow the slot (under the lock: no races) */
        free(g_scratch[best].p);
        g_scratch[best].p = aligned_alloc(64, want);
        g_scratch[best].cap = g_scratch[best].p ? want : 0;
    }
    if (best >= 0 && g_scratch[best].p) {
        g_scratch[best].busy = true;
        r = g_scratch[best].p;
    }
    pthread_mutex_unlock(&g_scratch_mu);
    return r ? r : aligned_alloc(64, want);
}

void rt_scratch_put(void *p) {
    if (!p) return;
    pthread_mutex_lock(&g_scratch_mu);
    for (int i = 0; i < SCRATCH_SLOTS; i++)
        if (g_scratch[i].p == p && g_scratch[i].busy) {
            g_scratch[i].busy = false;
            pthread_mutex_unlock(&g_scratch_mu);
            return;
        }
    pthread_mutex_unlock(&g_scratch_mu);
    free(p);
}
