/* Sorting and selection: sort, argsort, topk (ret_type both/values/indices), nonzero. Stable
 * sorts along one axis; NaN sorts last (ascending), like numpy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

typedef struct sort_item {
    double v;
    int64_t i;
} sort_item;

static int cmp_asc(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    bool an = isnan(a->v), bn = isnan(b->v);
    if (an != bn) return an ? 1 : -1;
    if (!an && a->v != b->v) return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i); /* stable */
}
static int cmp_desc(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    bool an = isnan(a->v), bn = isnan(b->v);
    if (an != bn) return an ? -1 : 1;  /* NaN counts as the largest */
    if (!an && a->v != b->v) return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Sorts every lane along `axis`; writes the first k items of each lane with fn. */
typedef void (*lane_out)(void *ctx, int64_t lane_base, int64_t inner, int64_t j,
                         const sort_item *it);

static gr_status sort_lanes(const rt_kernel_call *c, const rt_tensor *x, int64_t axis,
                            bool desc, int64_t k, lane_out fn, void *ctx, gr_diag *d) {
    int nd = x->dl.ndim;
    int64_t outer = rt_numel((int)axis, x->dl.shape), n = x->dl.shape[axis];
    int64_t inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    sort_item *buf = malloc(sizeof(sort_item) * (size_t)(n ? n : 1));
    if (!buf) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    for (int64_t a = 0; a < outer; a++)
        for (int64_t b = 0; b < inner; b++) {
            for (int64_t i = 0; i < n; i++) {
                buf[i].v = rt_tensor_get_f64(x, (a * n + i) * inner + b);
                buf[i].i = i;
            }
            qsort(buf, (size_t)n, sizeof(sort_item), desc ? cmp_desc : cmp_asc);
            for (int64_t j = 0; j < k; j++) fn(ctx, a * k * inner + b, inner, j, &buf[j]);
        }
    free(buf);
    return GR_OK;
}

typedef struct out2 {
    rt_tensor *vals, *idx;
    const rt_tensor *src;
} out2;

static void put_both(void *vctx, int64_t base, int64_t inner, int64_t j, const sort_item *it) {
    out2 *o = vctx;
    int64_t at = base + j * inner;
    if (o->vals) rt_tensor_set_f64(o->vals, at, it->v);
    if (o->idx) rt_tensor_set_f64(o->idx, at, (double)it->i);
}

static gr_status axis_arg(const rt_kernel_call *c, const rt_tensor *x, int64_t *axis, gr_diag *d) {
    *axis = ir_attrs_get_int(c->attrs, "axis", -1);
    if (x->dl.ndim == 0 || !rt_norm_axis(axis, x->dl.ndim))
        return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
    return GR_OK;
}

/* sort and argsort: the same lane sort, keeping the values or the indices. */
static gr_status sort_one(const rt_kernel_call *c, bool want_idx, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    int64_t axis;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = axis_arg(c, x, &axis, d)))
        return st;
    out2 o = {NULL, NULL, x};
    rt_tensor **kept = want_idx ? &o.idx : &o.vals;
    ir_dtype dt = want_idx ? rt_attr_dtype(c->attrs, "dtype", IR_DTYPE_I32) : x->dl.dtype;
    if ((st = rt_out_new(c, dt, x->dl.ndim, x->dl.shape, kept, d))) return st;
    if ((st = sort_lanes(c, x, axis, ir_attrs_get_bool(c->attrs, "descending", false),
                         x->dl.shape[axis], put_both, &o, d))) {
        rt_tensor_release(*kept);
        return st;
    }
    *out = rt_value_tensor(*kept);
    return GR_OK;
}

static gr_status k_sort(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    return sort_one(c, false, out, d);
}

static gr_status k_argsort(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    return sort_one(c, true, out, d);
}

/* topk(data; k, axis, ret_type "both" | "values" | "indices", largest, dtype). k < 1 takes
 * the whole axis (TVM). */
static gr_status k_topk(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    int64_t axis;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = axis_arg(c, x, &axis, d)))
        return st;
    int64_t k = ir_attrs_get_int(c->attrs, "k", 1), n = x->dl.shape[axis];
    if (k < 1 || k > n) {
        if (k > n)
            return rt_kerr(c, d, GR_ERR_INVALID, "k=%lld exceeds axis length %lld of %s",
                           (long long)k, (long long)n, RT_SHAPE_STR(x));
        k = n;
    }
    const char *ret = rt_attr_str(c->attrs, "ret_type", "both");
    bool want_v = strcmp(ret, "indices") != 0, want_i = strcmp(ret, "values") != 0;
    if (!want_v && !want_i) return rt_kerr(c, d, GR_ERR_INVALID, "bad ret_type \"%s\"", ret);
    int64_t oshape[RT_MAX_NDIM];
    memcpy(oshape, x->dl.shape, sizeof(int64_t) * (size_t)x->dl.ndim);
    oshape[axis] = k;
    out2 o = {NULL, NULL, x};
    ir_dtype idt = rt_attr_dtype(c->attrs, "dtype", IR_DTYPE_I32);
    if ((want_v && (st = rt_out_new(c, x->dl.dtype, x->dl.ndim, oshape, &o.vals, d))) ||
        (want_i && (st = rt_out_new(c, idt, x->dl.ndim, oshape, &o.idx, d))) ||
        (st = sort_lanes(c, x, axis, ir_attrs_get_bool(c->attrs, "largest", true), k, put_both,
                         &o, d))) {
        rt_tensor_release(o.vals);
        rt_tensor_release(o.idx);
        return st;
    }
    if (want_v && want_i) {
        rt_value t = rt_value_tuple(2);
        t.u.tuple.items[0] = rt_value_tensor(o.vals);
        t.u.tuple.items[1] = rt_value_tensor(o.idx);
        *out = t;
    } else {
        *out = rt_value_tensor(want_v ? o.vals : o.idx);
    }
    return GR_OK;
}

/* nonzero(x): int64 (ndim, count) coordinates in row-major order. */
static gr_status k_nonzero(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    int64_t n = rt_tensor_numel(x), cnt = 0;
    for (int64_t i = 0; i < n; i++) cnt += rt_tensor_get_f64(x, i) != 0;
    int64_t oshape[2] = {nd, cnt};
    rt_tensor *o;
    if ((st = rt_out_new(c, (DLDataType){kDLInt, 64, 1}, 2, oshape, &o, d))) return st;
    int64_t *op = o->dl.data, j = 0;
    for (int64_t i = 0; i < n; i++) {
        if (rt_tensor_get_f64(x, i) == 0) continue;
        int64_t rem = i;
        for (int k = nd - 1; k >= 0; k--) {
            op[k * cnt + j] = rem % x->dl.shape[k];
            rem /= x->dl.shape[k];
        }
        j++;
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_sort[] = {
    RT_K_OFF("relax.sort", k_sort),
    RT_K_OFF("relax.argsort", k_argsort),
    RT_K(TOPK, k_topk),
    RT_K(NONZERO, k_nonzero),
};
RT_FAMILY_COUNT(sort, rt_kernels_sort);
