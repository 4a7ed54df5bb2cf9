/* Kernels added for ONNX coverage: unique (ONNX Unique: values, first indices, inverse
 * indices, counts; flattened or along an axis, sorted or in order of first occurrence) and
 * linalg.det (LU with partial pivoting in double). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static const DLDataType I64 = {kDLInt, 64, 1};

/* ---- unique ---- */

/* The items compared are slices of x along the axis: item i is x[o, i, j] for every outer o
 * and inner j, compared lexicographically in that order (one element each when flattened). */
typedef struct uq_ctx {
    const rt_tensor *x;
    int64_t outer, n, inner;
} uq_ctx;

static int uq_cmp_items(const uq_ctx *u, int64_t a, int64_t b) {
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t j = 0; j < u->inner; j++) {
            double va = rt_tensor_get_f64(u->x, (o * u->n + a) * u->inner + j);
            double vb = rt_tensor_get_f64(u->x, (o * u->n + b) * u->inner + j);
            if (va < vb) return -1;
            if (va > vb) return 1;
        }
    return 0;
}

/* Stable merge sort of idx[0..n) by item value (ties keep the first occurrence first). */
static void uq_sort(const uq_ctx *u, int64_t *idx, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t h = n / 2;
    uq_sort(u, idx, tmp, h);
    uq_sort(u, idx + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = uq_cmp_items(u, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
}

static gr_status k_unique(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    bool flat = rt_attr_is_none(c->attrs, "axis");
    int64_t axis = flat ? 0 : ir_attrs_get_int(c->attrs, "axis", 0);
    if (!flat && (nd == 0 || !rt_norm_axis(&axis, nd)))
        return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
    uq_ctx u = {x, 1, rt_tensor_numel(x), 1};
    if (!flat) {
        u.outer = rt_numel((int)axis, x->dl.shape);
        u.n = x->dl.shape[axis];
        u.inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    }
    int64_t n = u.n;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(n ? n : 1) * 4);
    if (!order) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    int64_t *tmp = order + n, *group = order + 2 * n, *first = order + 3 * n;
    for (int64_t i = 0; i < n; i++) order[i] = i;
    uq_sort(&u, order, tmp, n);
    /* group[i]: the unique item of input item i, numbered in sorted order; first[g]: its first
     * input item (the sort is stable). */
    int64_t ng = 0;
    for (int64_t r = 0; r < n; r++) {
        if (r == 0 || uq_cmp_items(&u, order[r - 1], order[r]) != 0) first[ng++] = order[r];
        group[order[r]] = ng - 1;
    }
    bool sorted = ir_attrs_get_bool(c->attrs, "sorted", true);
    /* pos[g]: output position of sorted group g; unsorted output follows first occurrence. */
    int64_t *pos = tmp;
    if (sorted) {
        for (int64_t g = 0; g < ng; g++) pos[g] = g;
    } else {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (first[group[i]] == i) pos[group[i]] = k++;
    }
    int64_t vshape[RT_MAX_NDIM];
    int vnd = flat ? 1 : nd;
    if (flat) vshape[0] = ng;
    else {
        memcpy(vshape, x->dl.shape, sizeof(int64_t) * (size_t)nd);
        vshape[axis] = ng;
    }
    rt_tensor *vals = NULL, *idx = NULL, *inv = NULL, *cnt = NULL;
    if ((st = rt_out_new(c, x->dl.dtype, vnd, vshape, &vals, d)) ||
        (st = rt_out_new(c, I64, 1, &ng, &idx, d)) || (st = rt_out_new(c, I64, 1, &n, &inv, d)) ||
        (st = rt_out_new(c, I64, 1, &ng, &cnt, d))) {
        rt_tensor_release(vals);
        rt_tensor_release(idx);
        rt_tensor_release(inv);
        free(order);
        return st;
    }
    size_t es = rt_dtype_size(x->dl.dtype);
    int64_t *pi = idx->dl.data, *pv = inv->dl.data, *pc = cnt->dl.data;
    for (int64_t g = 0; g < ng; g++) {
        int64_t p = pos[g], src = first[g];
        pi[p] = src;
        pc[p] = 0;
        for (int64_t o = 0; o < u.outer; o++)
            memcpy((char *)vals->dl.data + (size_t)((o * ng + p) * u.inner) * es,
                   (const char *)x->dl.data + (size_t)((o * n + src) * u.inner) * es,
                   (size_t)u.inner * es);
    }
    for (int64_t i = 0; i < n; i++) {
        pv[i] = pos[group[i]];
        pc[pos[group[i]]]++;
    }
    free(order);
    rt_value t = rt_value_tuple(4);
    t.u.tuple.items[0] = rt_value_tensor(vals);
    t.u.tuple.items[1] = rt_value_tensor(idx);
    t.u.tuple.items[2] = rt_value_tensor(inv);
    t.u.tuple.items[3] = rt_value_tensor(cnt);
    *out = t;
    return GR_OK;
}

/* ---- linalg.det ---- */

static gr_status k_det(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    if (nd < 2 || x->dl.shape[nd - 1] != x->dl.shape[nd - 2] || !rt_is_floatish(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "needs float (..., M, M) matrices, got %s", RT_SHAPE_STR(x));
    int64_t m = x->dl.shape[nd - 1], nb = rt_numel(nd - 2, x->dl.shape);
    rt_tensor *o;
    if ((st = rt_out_new(c, x->dl.dtype, nd - 2, x->dl.shape, &o, d))) return st;
    double *a = malloc(sizeof(double) * (size_t)(m > 0 ? m * m : 1));
    if (!a) {
        rt_tensor_release(o);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t i = 0; i < m * m; i++) a[i] = rt_tensor_get_f64(x, b * m * m + i);
        double det = 1;
        for (int64_t k = 0; k < m && det != 0; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++)
                if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
            if (a[p * m + k] == 0) {
                det = 0;
                break;
            }
            if (p != k) {
                for (int64_t j = 0; j < m; j++) {
                    double t = a[k * m + j];
                    a[k * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            det *= a[k * m + k];
            for (int64_t i = k + 1; i < m; i++) {
                double f = a[i * m + k] / a[k * m + k];
                for (int64_t j = k; j < m; j++) a[i * m + j] -= f * a[k * m + j];
            }
        }
        rt_tensor_set_f64(o, b, det);
    }
    free(a);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ONNX coverage */
const rt_kernel_entry rt_kernels_index[] = {
    RT_K(UNIQUE, k_unique),
    RT_K(DET, k_det),
};
RT_FAMILY_COUNT(index, rt_kernels_index);
