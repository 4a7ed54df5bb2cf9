/* Data movement: reshape, permute_dims, concat, split, squeeze, expand_dims, flatten,
 * broadcast_to, strided_slice, dynamic_strided_slice, take, tile, repeat, flip,
 * gather_elements, gather_nd, scatter_elements, scatter_nd, pad, one_hot and the shape ops.
 * All work on raw element bytes, so every dtype is supported. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static const DLDataType I64 = {kDLInt, 64, 1};

/* Copies a strided view: output element at multi-index i reads src[base + sum i_k*istride_k]. */
static void copy_view(const char *src, int64_t base, const int64_t *istride, int ond,
                      const int64_t *oshape, char *dst, size_t es) {
    int64_t total = rt_numel(ond, oshape);
    if (total == 0) return;
    if (ond == 0) {
        memcpy(dst, src + base * (int64_t)es, es);
        return;
    }
    int64_t inner = oshape[ond - 1], is = istride[ond - 1];
    int64_t idx[RT_MAX_NDIM] = {0}, off = base;
    for (int64_t r = 0; r < total / inner; r++) {
        if (is == 1) {
            memcpy(dst, src + off * (int64_t)es, (size_t)inner * es);
        } else if (es == 4) {
            const float *s = (const float *)src + off;
            float *t = (float *)dst;
            for (int64_t j = 0; j < inner; j++) t[j] = s[j * is];
        } else {
            for (int64_t j = 0; j < inner; j++)
                memcpy(dst + j * (int64_t)es, src + (off + j * is) * (int64_t)es, es);
        }
        dst += inner * (int64_t)es;
        for (int k = ond - 2; k >= 0; k--) {
            off += istride[k];
            if (++idx[k] < oshape[k]) break;
            off -= istride[k] * idx[k];
            idx[k] = 0;
        }
    }
}

static gr_status new_like_shape(const rt_kernel_call *c, const rt_tensor *x, int nd,
                                const int64_t *shape, rt_tensor **o, gr_diag *d) {
    return rt_out_new_raw(c, x->dl.dtype, nd, shape, o, d); /* callers write every element */
}

/* ---- reshape / flatten / squeeze / expand_dims (a copy with a new shape) ---- */

static gr_status reshaped(const rt_kernel_call *c, const rt_tensor *x, int nd,
                          const int64_t *shape, rt_value *out, gr_diag *d) {
    if (rt_numel(nd, shape) != rt_tensor_numel(x))
        return rt_kerr(c, d, GR_ERR_INVALID, "cannot reshape %s to %s", RT_SHAPE_STR(x),
                       RT_DIMS_STR(nd, shape));
    rt_tensor *o;
    gr_status st = new_like_shape(c, x, nd, shape, &o, d);
    if (st) return st;
    memcpy(o->dl.data, x->dl.data, rt_tensor_nbytes(x));
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_reshape(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t shape[RT_MAX_NDIM];
    int nd = rt_value_ints(&c->args[1], shape, RT_MAX_NDIM);
    if (nd < 0 || nd > RT_MAX_NDIM)
        return rt_kerr(c, d, GR_ERR_INVALID, "argument 1 is not a shape of rank <= %d", RT_MAX_NDIM);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == -1 && infer < 0) infer = i;
        else if (shape[i] < 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "bad target shape %s", RT_DIMS_STR(nd, shape));
        else known *= shape[i];
    }
    if (infer >= 0) {
        int64_t n = rt_tensor_numel(x);
        if (known == 0 || n % known)
            return rt_kerr(c, d, GR_ERR_INVALID, "cannot reshape %s to %s", RT_SHAPE_STR(x),
                           RT_DIMS_STR(nd, shape));
        shape[infer] = n / known;
    }
    return reshaped(c, x, nd, shape, out, d);
}

static gr_status k_flatten(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t n = rt_tensor_numel(x);
    return reshaped(c, x, 1, &n, out, d);
}

static gr_status k_squeeze(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    bool drop[RT_MAX_NDIM] = {0};
    int64_t ax[RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "axis", ax, RT_MAX_NDIM);
    if (n < 0) {
        for (int i = 0; i < nd; i++) drop[i] = x->dl.shape[i] == 1;
    } else {
        for (int i = 0; i < n && i < RT_MAX_NDIM; i++) {
            int64_t a = ax[i];
            if (!rt_norm_axis(&a, nd) || x->dl.shape[a] != 1)
                return rt_kerr(c, d, GR_ERR_INVALID, "cannot squeeze axis %lld of %s",
                               (long long)ax[i], RT_SHAPE_STR(x));
            drop[a] = true;
        }
    }
    int64_t shape[RT_MAX_NDIM];
    int m = 0;
    for (int i = 0; i < nd; i++)
        if (!drop[i]) shape[m++] = x->dl.shape[i];
    return reshaped(c, x, m, shape, out, d);
}

static gr_status k_expand_dims(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t ax[RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "axis", ax, RT_MAX_NDIM);
    int ond = x->dl.ndim + (n > 0 ? n : 0);
    if (n < 0 || ond > RT_MAX_NDIM)
        return rt_kerr(c, d, GR_ERR_INVALID, "bad axis for %s", RT_SHAPE_STR(x));
    bool ins[RT_MAX_NDIM] = {0};
    for (int i = 0; i < n; i++) {
        int64_t a = ax[i];
        if (!rt_norm_axis(&a, ond) || ins[a])
            return rt_kerr(c, d, GR_ERR_INVALID, "bad axis %lld for %s", (long long)ax[i],
                           RT_SHAPE_STR(x));
        ins[a] = true;
    }
    int64_t shape[RT_MAX_NDIM];
    for (int i = 0, j = 0; i < ond; i++) shape[i] = ins[i] ? 1 : x->dl.shape[j++];
    return reshaped(c, x, ond, shape, out, d);
}

/* ---- permute_dims ---- */

static gr_status k_permute_dims(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    int64_t ax[RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "axes", ax, RT_MAX_NDIM);
    if (n < 0) {
        n = nd;
        for (int i = 0; i < nd; i++) ax[i] = nd - 1 - i;
    }
    bool seen[RT_MAX_NDIM] = {0};
    if (n != nd) return rt_kerr(c, d, GR_ERR_INVALID, "axes must list %d dims", nd);
    for (int i = 0; i < nd; i++)
        if (!rt_norm_axis(&ax[i], nd) || seen[ax[i]]) {
            return rt_kerr(c, d, GR_ERR_INVALID, "axes are not a permutation for %s",
                           RT_SHAPE_STR(x));
        } else {
            seen[ax[i]] = true;
        }
    int64_t xs[RT_MAX_NDIM], oshape[RT_MAX_NDIM], is[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    for (int i = 0; i < nd; i++) {
        oshape[i] = x->dl.shape[ax[i]];
        is[i] = xs[ax[i]];
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, oshape, &o, d))) return st;
    copy_view(x->dl.data, 0, is, nd, oshape, o->dl.data, rt_dtype_size(x->dl.dtype));
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- concat / split ---- */

static gr_status k_concat(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d))) return st;
    const rt_value *tup = &c->args[0];
    if (tup->kind != RT_VAL_TUPLE || tup->u.tuple.n == 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "argument 0 must be a non-empty tuple of tensors");
    uint32_t n = tup->u.tuple.n;
    for (uint32_t i = 0; i < n; i++)
        if (tup->u.tuple.items[i].kind != RT_VAL_TENSOR)
            return rt_kerr(c, d, GR_ERR_INVALID, "tuple field %u is not a tensor", i);
    const rt_tensor *t0 = tup->u.tuple.items[0].u.t;
    int nd = t0->dl.ndim;
    if (rt_attr_is_none(c->attrs, "axis") && ir_attrs_get(c->attrs, "axis"))
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "axis=None");
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
    if (nd == 0 || !rt_norm_axis(&axis, nd))
        return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(t0));
    int64_t oshape[RT_MAX_NDIM];
    memcpy(oshape, t0->dl.shape, sizeof(int64_t) * (size_t)nd);
    oshape[axis] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_tensor *t = tup->u.tuple.items[i].u.t;
        bool ok = t->dl.ndim == nd && rt_dt_eq(t->dl.dtype, t0->dl.dtype);
        for (int k = 0; ok && k < nd; k++) ok = k == axis || t->dl.shape[k] == t0->dl.shape[k];
        if (!ok)
            return rt_kerr(c, d, GR_ERR_INVALID, "field %u %s does not match field 0 %s on axis %lld",
                           i, RT_SHAPE_STR(t), RT_SHAPE_STR(t0), (long long)axis);
        oshape[axis] += t->dl.shape[axis];
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, t0, nd, oshape, &o, d))) return st;
    size_t es = rt_dtype_size(t0->dl.dtype);
    int64_t outer = rt_numel((int)axis, oshape), inner = rt_numel(nd - (int)axis - 1, oshape + axis + 1);
    int64_t orow = oshape[axis] * inner * (int64_t)es, at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_tensor *t = tup->u.tuple.items[i].u.t;
        int64_t row = t->dl.shape[axis] * inner * (int64_t)es;
        for (int64_t a = 0; a < outer; a++)
            memcpy((char *)o->dl.data + a * orow + at, (const char *)t->dl.data + a * row, (size_t)row);
        at += row;
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_split(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
    if (nd == 0 || !rt_norm_axis(&axis, nd))
        return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
    int64_t dim = x->dl.shape[axis];
    enum { MAXS = 256 };
    int64_t bounds[MAXS + 1];
    int ns;
    const ir_attr *ios = ir_attrs_get(c->attrs, "indices_or_sections");
    if (!ios) return rt_kerr(c, d, GR_ERR_INVALID, "missing indices_or_sections");
    if (ios->kind == IR_ATTR_INT) {
        int64_t sec = ios->u.i;
        if (sec <= 0 || sec > MAXS)
            return rt_kerr(c, d, GR_ERR_INVALID, "bad number of sections %lld", (long long)sec);
        int64_t each = (dim + sec - 1) / sec; /* TVM: ceil-sized chunks, the last may be short */
        ns = (int)sec;
        for (int i = 0; i <= ns; i++) bounds[i] = i * each < dim ? i * each : dim;
    } else {
        int64_t idx[MAXS];
        int n = rt_attr_ints(c->attrs, "indices_or_sections", idx, MAXS);
        if (n < 0 || n >= MAXS) return rt_kerr(c, d, GR_ERR_INVALID, "bad indices_or_sections");
        ns = n + 1;
        bounds[0] = 0;
        for (int i = 0; i < n; i++) {
            int64_t v = idx[i] < 0 ? idx[i] + dim : idx[i];
            v = v < 0 ? 0 : v > dim ? dim : v;
            bounds[i + 1] = v < bounds[i] ? bounds[i] : v;
        }
        bounds[ns] = dim;
    }
    size_t es = rt_dtype_size(x->dl.dtype);
    int64_t outer = rt_numel((int)axis, x->dl.shape);
    int64_t inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
    rt_value res = rt_value_tuple((uint32_t)ns);
    for (int i = 0; i < ns; i++) {
        int64_t oshape[RT_MAX_NDIM];
        memcpy(oshape, x->dl.shape, sizeof(int64_t) * (size_t)nd);
        oshape[axis] = bounds[i + 1] - bounds[i];
        rt_tensor *o;
        if ((st = new_like_shape(c, x, nd, oshape, &o, d))) {
            rt_value_clear(&res);
            return st;
        }
        int64_t row = oshape[axis] * inner * (int64_t)es, xrow = dim * inner * (int64_t)es;
        for (int64_t a = 0; a < outer; a++)
            memcpy((char *)o->dl.data + a * row,
                   (const char *)x->dl.data + a * xrow + bounds[i] * inner * (int64_t)es, (size_t)row);
        res.u.tuple.items[i] = rt_value_tensor(o);
    }
    *out = res;
    return GR_OK;
}

/* ---- broadcast_to ---- */

static gr_status k_broadcast_to(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t shape[RT_MAX_NDIM];
    int nd = rt_value_ints(&c->args[1], shape, RT_MAX_NDIM);
    if (nd < 0 || nd > RT_MAX_NDIM || nd < x->dl.ndim)
        return rt_kerr(c, d, GR_ERR_INVALID, "bad target shape for %s", RT_SHAPE_STR(x));
    int64_t xs[RT_MAX_NDIM], is[RT_MAX_NDIM];
    rt_strides(x->dl.ndim, x->dl.shape, xs);
    for (int i = 0; i < nd; i++) {
        int j = i - (nd - x->dl.ndim);
        int64_t e = j >= 0 ? x->dl.shape[j] : 1;
        if (e != shape[i] && e != 1)
            return rt_kerr(c, d, GR_ERR_INVALID, "cannot broadcast %s to %s", RT_SHAPE_STR(x),
                           RT_DIMS_STR(nd, shape));
        is[i] = (j >= 0 && e != 1) ? xs[j] : 0;
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, shape, &o, d))) return st;
    copy_view(x->dl.data, 0, is, nd, shape, o->dl.data, rt_dtype_size(x->dl.dtype));
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- strided_slice ---- */

/* numpy/TVM slice bounds for one axis; returns the output length. */
static int64_t slice_axis(int64_t dim, int64_t b, int64_t e, int64_t s, int64_t *start) {
    if (s > 0) {
        b = b < 0 ? b + dim : b;
        e = e < 0 ? e + dim : e;
        b = b < 0 ? 0 : b > dim ? dim : b;
        e = e < 0 ? 0 : e > dim ? dim : e;
        *start = b;
        return e > b ? (e - b + s - 1) / s : 0;
    }
    b = b < 0 ? b + dim : b;
    e = e < -dim ? -1 : (e < 0 ? e + dim : e);
    b = b < 0 ? -1 : b > dim - 1 ? dim - 1 : b;
    e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    *start = b;
    return b > e ? (b - e + (-s) - 1) / (-s) : 0;
}

static gr_status do_slice(const rt_kernel_call *c, const rt_tensor *x, int n, const int64_t *axes,
                          const int64_t *begin, const int64_t *end, const int64_t *strides,
                          rt_value *out, gr_diag *d) {
    int nd = x->dl.ndim;
    int64_t start[RT_MAX_NDIM] = {0}, step[RT_MAX_NDIM], oshape[RT_MAX_NDIM], xs[RT_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        oshape[i] = x->dl.shape[i];
        step[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i;
        int64_t s = strides ? strides[i] : 1;
        if (!rt_norm_axis(&a, nd) || s == 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "bad axis or zero stride for %s", RT_SHAPE_STR(x));
        oshape[a] = slice_axis(x->dl.shape[a], begin[i], end[i], s, &start[a]);
        step[a] = s;
    }
    rt_strides(nd, x->dl.shape, xs);
    int64_t base = 0, is[RT_MAX_NDIM];
    bool empty = rt_numel(nd, oshape) == 0;
    for (int i = 0; i < nd; i++) {
        if (!empty) base += start[i] * xs[i];
        is[i] = step[i] * xs[i];
    }
    rt_tensor *o;
    gr_status st = new_like_shape(c, x, nd, oshape, &o, d);
    if (st) return st;
    if (!empty) copy_view(x->dl.data, base, is, nd, oshape, o->dl.data, rt_dtype_size(x->dl.dtype));
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* Reads slice parameter k (axes, begin, end, strides) from attrs, else from arg k+1. */
static int slice_param(const rt_kernel_call *c, const char *key, uint32_t argi, int64_t *v) {
    int n = rt_attr_ints(c->attrs, key, v, RT_MAX_NDIM);
    if (n >= 0) return n;
    if (argi < c->nargs) return rt_value_ints(&c->args[argi], v, RT_MAX_NDIM);
    return -1;
}

static gr_status k_strided_slice(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 5, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t axes[RT_MAX_NDIM], b[RT_MAX_NDIM], e[RT_MAX_NDIM], s[RT_MAX_NDIM];
    int na = slice_param(c, "axes", 1, axes), nb = slice_param(c, "begin", 2, b);
    int ne = slice_param(c, "end", 3, e), ns = slice_param(c, "strides", 4, s);
    if (na < 0 || na > x->dl.ndim || nb != na || ne != na || (ns >= 0 && ns != na))
        return rt_kerr(c, d, GR_ERR_INVALID, "axes/begin/end/strides lengths differ for %s",
                       RT_SHAPE_STR(x));
    return do_slice(c, x, na, axes, b, e, ns >= 0 ? s : NULL, out, d);
}

static gr_status k_dynamic_strided_slice(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 4, 4, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t b[RT_MAX_NDIM], e[RT_MAX_NDIM], s[RT_MAX_NDIM];
    int nb = rt_value_ints(&c->args[1], b, RT_MAX_NDIM), ne = rt_value_ints(&c->args[2], e, RT_MAX_NDIM);
    int ns = rt_value_ints(&c->args[3], s, RT_MAX_NDIM);
    if (nb != x->dl.ndim || ne != nb || ns != nb)
        return rt_kerr(c, d, GR_ERR_INVALID, "begin/end/strides must have %d values", x->dl.ndim);
    return do_slice(c, x, nb, NULL, b, e, s, out, d);
}

/* ---- take ---- */

/* Normalizes index v into [0, dim) following mode; false when out of range in "fast" mode. */
static bool fix_index(int64_t *v, int64_t dim, const char *mode) {
    int64_t i = *v;
    if (strcmp(mode, "clip") == 0) {
        i = i < 0 ? 0 : i >= dim ? dim - 1 : i;
    } else if (strcmp(mode, "wrap") == 0) {
        i = dim ? ((i % dim) + dim) % dim : 0;
    } else {
        if (i < 0) i += dim;
        if (i < 0 || i >= dim) return false;
    }
    *v = i;
    return dim > 0;
}

static gr_status k_take(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ind;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &ind, d)))
        return st;
    if (rt_is_floatish(ind->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "indices must be integers, got %s", RT_SHAPE_STR(ind));
    const char *mode = rt_attr_str(c->attrs, "mode", "fast");
    int nd = x->dl.ndim;
    int64_t outer, dim, inner, axis;
    int64_t oshape[RT_MAX_NDIM];
    int ond = 0;
    if (rt_attr_is_none(c->attrs, "axis")) {
        outer = inner = 1;
        dim = rt_tensor_numel(x);
        axis = 0;
        for (int i = 0; i < ind->dl.ndim; i++) oshape[ond++] = ind->dl.shape[i];
    } else {
        axis = ir_attrs_get_int(c->attrs, "axis", 0);
        if (nd == 0 || !rt_norm_axis(&axis, nd))
            return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
        if (nd - 1 + ind->dl.ndim > RT_MAX_NDIM)
            return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "result rank too large");
        outer = rt_numel((int)axis, x->dl.shape);
        dim = x->dl.shape[axis];
        inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
        for (int i = 0; i < axis; i++) oshape[ond++] = x->dl.shape[i];
        for (int i = 0; i < ind->dl.ndim; i++) oshape[ond++] = ind->dl.shape[i];
        for (int i = (int)axis + 1; i < nd; i++) oshape[ond++] = x->dl.shape[i];
    }
    int64_t ni = rt_tensor_numel(ind);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(ni ? ni : 1));
    if (!idx) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < ni; i++) {
        idx[i] = ind->dl.dtype.code == kDLInt && ind->dl.dtype.bits == 64
                     ? ((const int64_t *)ind->dl.data)[i] : (int64_t)rt_tensor_get_f64(ind, i);
        int64_t orig = idx[i];
        if (!fix_index(&idx[i], dim, mode)) {
            free(idx);
            return rt_kerr(c, d, GR_ERR_INVALID, "index %lld out of range [0, %lld) for %s",
                           (long long)orig, (long long)dim, RT_SHAPE_STR(x));
        }
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, ond, oshape, &o, d))) {
        free(idx);
        return st;
    }
    size_t es = rt_dtype_size(x->dl.dtype);
    size_t chunk = (size_t)inner * es;
    char *dst = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < ni; i++) {
            memcpy(dst, (const char *)x->dl.data + ((a * dim + idx[i]) * inner) * (int64_t)es, chunk);
            dst += chunk;
        }
    free(idx);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- tile / repeat / flip ---- */

static gr_status k_tile(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t rep[RT_MAX_NDIM];
    int nr = rt_attr_ints(c->attrs, "repeats", rep, RT_MAX_NDIM);
    int nd = x->dl.ndim;
    int ond = nr > nd ? nr : nd;
    if (nr < 0 || ond > RT_MAX_NDIM) return rt_kerr(c, d, GR_ERR_INVALID, "bad repeats");
    int64_t xshape[RT_MAX_NDIM], r[RT_MAX_NDIM], oshape[RT_MAX_NDIM];
    for (int i = 0; i < ond; i++) {
        int j = i - (ond - nd), k = i - (ond - nr);
        xshape[i] = j >= 0 ? x->dl.shape[j] : 1;
        r[i] = k >= 0 ? rep[k] : 1;
        if (r[i] < 0) return rt_kerr(c, d, GR_ERR_INVALID, "negative repeats");
        oshape[i] = xshape[i] * r[i];
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, ond, oshape, &o, d))) return st;
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    rt_strides(ond, xshape, xs);
    rt_strides(ond, oshape, os);
    size_t es = rt_dtype_size(x->dl.dtype);
    int64_t total = rt_numel(ond, oshape);
    for (int64_t i = 0; i < total; i++) {
        int64_t rem = i, src = 0;
        for (int k = 0; k < ond; k++) {
            int64_t q = rem / os[k];
            rem %= os[k];
            src += (q % xshape[k]) * xs[k];
        }
        memcpy((char *)o->dl.data + i * (int64_t)es, (const char *)x->dl.data + src * (int64_t)es, es);
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_repeat(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int64_t reps = ir_attrs_get_int(c->attrs, "repeats", 1);
    if (reps < 0) return rt_kerr(c, d, GR_ERR_INVALID, "negative repeats");
    int nd = x->dl.ndim;
    int64_t outer, dim, inner, axis = 0, oshape[RT_MAX_NDIM];
    int ond;
    if (rt_attr_is_none(c->attrs, "axis")) {
        outer = inner = 1;
        dim = rt_tensor_numel(x);
        ond = 1;
        oshape[0] = dim * reps;
    } else {
        axis = ir_attrs_get_int(c->attrs, "axis", 0);
        if (nd == 0 || !rt_norm_axis(&axis, nd))
            return rt_kerr(c, d, GR_ERR_INVALID, "axis out of range for %s", RT_SHAPE_STR(x));
        outer = rt_numel((int)axis, x->dl.shape);
        dim = x->dl.shape[axis];
        inner = rt_numel(nd - (int)axis - 1, x->dl.shape + axis + 1);
        ond = nd;
        memcpy(oshape, x->dl.shape, sizeof(int64_t) * (size_t)nd);
        oshape[axis] = dim * reps;
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, ond, oshape, &o, d))) return st;
    size_t chunk = (size_t)inner * rt_dtype_size(x->dl.dtype);
    char *dst = o->dl.data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < dim; i++)
            for (int64_t r = 0; r < reps; r++) {
                memcpy(dst, (const char *)x->dl.data + (a * dim + i) * (int64_t)chunk, chunk);
                dst += chunk;
            }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_flip(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    int64_t ax[RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "axis", ax, RT_MAX_NDIM);
    bool fl[RT_MAX_NDIM] = {0};
    for (int i = 0; i < n; i++) {
        if (!rt_norm_axis(&ax[i], nd)) return rt_kerr(c, d, GR_ERR_INVALID, "bad axis for %s", RT_SHAPE_STR(x));
        fl[ax[i]] = true;
    }
    int64_t xs[RT_MAX_NDIM], is[RT_MAX_NDIM], base = 0;
    rt_strides(nd, x->dl.shape, xs);
    for (int i = 0; i < nd; i++) {
        is[i] = fl[i] ? -xs[i] : xs[i];
        if (fl[i] && x->dl.shape[i] > 0) base += (x->dl.shape[i] - 1) * xs[i];
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, x->dl.shape, &o, d))) return st;
    if (rt_tensor_numel(x))
        copy_view(x->dl.data, base, is, nd, x->dl.shape, o->dl.data, rt_dtype_size(x->dl.dtype));
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- gather / scatter ---- */

static gr_status k_gather_elements(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ind;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &ind, d)))
        return st;
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
    if (ind->dl.ndim != nd || nd == 0 || !rt_norm_axis(&axis, nd) || rt_is_floatish(ind->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "data %s and indices %s do not match",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(ind));
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, ind->dl.shape, &o, d))) return st;
    int64_t xs[RT_MAX_NDIM], is[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    rt_strides(nd, ind->dl.shape, is);
    size_t es = rt_dtype_size(x->dl.dtype);
    int64_t n = rt_tensor_numel(ind);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, src = 0;
        int64_t v = (int64_t)rt_tensor_get_f64(ind, i);
        if (v < 0) v += x->dl.shape[axis];
        for (int k = 0; k < nd; k++) {
            int64_t q = rem / is[k];
            rem %= is[k];
            if (k == axis) q = v;
            if (q < 0 || q >= x->dl.shape[k]) {
                rt_tensor_release(o);
                return rt_kerr(c, d, GR_ERR_INVALID, "index out of range for %s", RT_SHAPE_STR(x));
            }
            src += q * xs[k];
        }
        memcpy((char *)o->dl.data + i * (int64_t)es, (const char *)x->dl.data + src * (int64_t)es, es);
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_gather_nd(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ind;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &ind, d)))
        return st;
    int64_t bd = ir_attrs_get_int(c->attrs, "batch_dims", 0);
    int nd = x->dl.ndim, ni = ind->dl.ndim;
    if (ni < 1 || bd < 0 || bd >= ni || rt_is_floatish(ind->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad indices %s", RT_SHAPE_STR(ind));
    int64_t m = ind->dl.shape[ni - 1];
    if (bd + m > nd) return rt_kerr(c, d, GR_ERR_INVALID, "indices %s too deep for %s", RT_SHAPE_STR(ind), RT_SHAPE_STR(x));
    for (int i = 0; i < bd; i++)
        if (x->dl.shape[i] != ind->dl.shape[i])
            return rt_kerr(c, d, GR_ERR_INVALID, "batch dims differ: %s vs %s", RT_SHAPE_STR(x), RT_SHAPE_STR(ind));
    int64_t oshape[RT_MAX_NDIM];
    int ond = 0;
    for (int i = 0; i < ni - 1; i++) oshape[ond++] = ind->dl.shape[i];
    for (int64_t i = bd + m; i < nd; i++) {
        if (ond >= RT_MAX_NDIM) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "rank too large");
        oshape[ond++] = x->dl.shape[i];
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, ond, oshape, &o, d))) return st;
    int64_t xs[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    int64_t slice = rt_numel(nd - (int)(bd + m), x->dl.shape + bd + m);
    int64_t nb = rt_numel((int)bd, ind->dl.shape), per = rt_numel(ni - 1 - (int)bd, ind->dl.shape + bd);
    size_t es = rt_dtype_size(x->dl.dtype);
    char *dst = o->dl.data;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t p = 0; p < per; p++) {
            int64_t src = 0;
            int64_t rem = b;
            for (int k = (int)bd - 1; k >= 0; k--) {
                src += (rem % x->dl.shape[k]) * xs[k];
                rem /= x->dl.shape[k];
            }
            for (int64_t j = 0; j < m; j++) {
                int64_t v = (int64_t)rt_tensor_get_f64(ind, (b * per + p) * m + j);
                int64_t dim = x->dl.shape[bd + j];
                if (v < 0) v += dim;
                if (v < 0 || v >= dim) {
                    rt_tensor_release(o);
                    return rt_kerr(c, d, GR_ERR_INVALID, "index out of range for %s", RT_SHAPE_STR(x));
                }
                src += v * xs[bd + j];
            }
            memcpy(dst, (const char *)x->dl.data + src * (int64_t)es, (size_t)slice * es);
            dst += slice * (int64_t)es;
        }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* Applies `reduction` ("update", "add", "mul", "min", "max", "mean" is not supported). */
static double scatter_apply(const char *red, double old, double v) {
    if (strcmp(red, "add") == 0) return old + v;
    if (strcmp(red, "mul") == 0) return old * v;
    if (strcmp(red, "min") == 0) return v < old ? v : old;
    if (strcmp(red, "max") == 0) return v > old ? v : old;
    return v;
}

static gr_status k_scatter_elements(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ind, *upd;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &ind, d)) || (st = rt_arg_tensor(c, 2, &upd, d)))
        return st;
    int nd = x->dl.ndim;
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", 0);
    const char *red = rt_attr_str(c->attrs, "reduction", "update");
    if (nd == 0 || !rt_norm_axis(&axis, nd) || ind->dl.ndim != nd || !rt_tensor_same_shape(ind, upd) ||
        !rt_dt_eq(x->dl.dtype, upd->dl.dtype) || rt_is_floatish(ind->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "data %s, indices %s, updates %s do not match",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(ind), RT_SHAPE_STR(upd));
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, x->dl.shape, &o, d))) return st;
    memcpy(o->dl.data, x->dl.data, rt_tensor_nbytes(x));
    int64_t xs[RT_MAX_NDIM], is[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    rt_strides(nd, ind->dl.shape, is);
    for (int64_t i = 0, n = rt_tensor_numel(ind); i < n; i++) {
        int64_t rem = i, dst = 0, v = (int64_t)rt_tensor_get_f64(ind, i);
        if (v < 0) v += x->dl.shape[axis];
        for (int k = 0; k < nd; k++) {
            int64_t q = rem / is[k];
            rem %= is[k];
            if (k == axis) q = v;
            if (q < 0 || q >= x->dl.shape[k]) {
                rt_tensor_release(o);
                return rt_kerr(c, d, GR_ERR_INVALID, "index out of range for %s", RT_SHAPE_STR(x));
            }
            dst += q * xs[k];
        }
        rt_tensor_set_f64(o, dst, scatter_apply(red, rt_tensor_get_f64(o, dst), rt_tensor_get_f64(upd, i)));
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_scatter_nd(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ind, *upd;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &ind, d)) || (st = rt_arg_tensor(c, 2, &upd, d)))
        return st;
    int nd = x->dl.ndim, ni = ind->dl.ndim;
    const char *red = rt_attr_str(c->attrs, "reduction", "update");
    if (ni < 1 || rt_is_floatish(ind->dl.dtype) || ind->dl.shape[ni - 1] > nd ||
        !rt_dt_eq(x->dl.dtype, upd->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad indices %s for %s", RT_SHAPE_STR(ind), RT_SHAPE_STR(x));
    int64_t m = ind->dl.shape[ni - 1], nupd = rt_numel(ni - 1, ind->dl.shape);
    int64_t slice = rt_numel(nd - (int)m, x->dl.shape + m);
    if (rt_tensor_numel(upd) != nupd * slice)
        return rt_kerr(c, d, GR_ERR_INVALID, "updates %s do not match indices %s", RT_SHAPE_STR(upd), RT_SHAPE_STR(ind));
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, x->dl.shape, &o, d))) return st;
    memcpy(o->dl.data, x->dl.data, rt_tensor_nbytes(x));
    int64_t xs[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    for (int64_t u = 0; u < nupd; u++) {
        int64_t dst = 0;
        for (int64_t j = 0; j < m; j++) {
            int64_t v = (int64_t)rt_tensor_get_f64(ind, u * m + j), dim = x->dl.shape[j];
            if (v < 0) v += dim;
            if (v < 0 || v >= dim) {
                rt_tensor_release(o);
                return rt_kerr(c, d, GR_ERR_INVALID, "index out of range for %s", RT_SHAPE_STR(x));
            }
            dst += v * xs[j];
        }
        for (int64_t k = 0; k < slice; k++)
            rt_tensor_set_f64(o, dst + k, scatter_apply(red, rt_tensor_get_f64(o, dst + k),
                                                        rt_tensor_get_f64(upd, u * slice + k)));
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- pad(data[, pad_value]; pad_width [b0, a0, b1, a1, ...], pad_value, pad_mode) ---- */

static gr_status k_pad(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    int nd = x->dl.ndim;
    int64_t pw[2 * RT_MAX_NDIM];
    int n = rt_attr_ints(c->attrs, "pad_width", pw, 2 * RT_MAX_NDIM);
    if (n != 2 * nd)
        return rt_kerr(c, d, GR_ERR_INVALID, "pad_width needs %d values for %s, got %d", 2 * nd,
                       RT_SHAPE_STR(x), n);
    double value = ir_attrs_get_float(c->attrs, "pad_value", 0.0);
    if (c->nargs > 1 && !rt_value_scalar(&c->args[1], &value))
        return rt_kerr(c, d, GR_ERR_INVALID, "pad value argument is not a scalar");
    const char *mode = rt_attr_str(c->attrs, "pad_mode", "constant");
    int m = strcmp(mode, "constant") == 0 ? 0 : strcmp(mode, "edge") == 0 ? 1
          : strcmp(mode, "reflect") == 0 ? 2 : -1;
    if (m < 0) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "pad_mode \"%s\"", mode);
    int64_t oshape[RT_MAX_NDIM];
    for (int i = 0; i < nd; i++) {
        oshape[i] = x->dl.shape[i] + pw[2 * i] + pw[2 * i + 1];
        if (oshape[i] < 0) return rt_kerr(c, d, GR_ERR_INVALID, "negative padded size");
        if (m != 0 && x->dl.shape[i] == 0 && oshape[i] > 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "cannot %s-pad an empty dim", mode);
        if (m == 2 && (pw[2 * i] >= x->dl.shape[i] || pw[2 * i + 1] >= x->dl.shape[i]) &&
            (pw[2 * i] > 0 || pw[2 * i + 1] > 0))
            return rt_kerr(c, d, GR_ERR_INVALID, "reflect padding must be smaller than the dim");
    }
    rt_tensor *o;
    if ((st = new_like_shape(c, x, nd, oshape, &o, d))) return st;
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    rt_strides(nd, x->dl.shape, xs);
    rt_strides(nd, oshape, os);
    size_t es = rt_dtype_size(x->dl.dtype);
    int64_t total = rt_numel(nd, oshape);
    /* fill value bytes once */
    rt_tensor *fill = rt_tensor_new(x->dl.dtype, 0, NULL);
    if (!fill) {
        rt_tensor_release(o);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    rt_tensor_set_f64(fill, 0, value);
    for (int64_t i = 0; i < total; i++) {
        int64_t rem = i, src = 0;
        bool inside = true;
        for (int k = 0; k < nd; k++) {
            int64_t q = rem / os[k] - pw[2 * k], dim = x->dl.shape[k];
            rem %= os[k];
            if (q < 0 || q >= dim) {
                if (m == 0) { inside = false; break; }
                if (m == 1) q = q < 0 ? 0 : dim - 1;
                else {
                    int64_t period = 2 * (dim - 1);
                    if (period == 0) q = 0;
                    else {
                        q = ((q % period) + period) % period;
                        if (q >= dim) q = period - q;
                    }
                }
            }
            src += q * xs[k];
        }
        memcpy((char *)o->dl.data + i * (int64_t)es,
               inside ? (const char *)x->dl.data + src * (int64_t)es : (const char *)fill->dl.data, es);
    }
    rt_tensor_release(fill);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- one_hot(indices, on_value, off_value; depth, axis) ---- */

static gr_status k_one_hot(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *ind;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 3, d)) || (st = rt_arg_tensor(c, 0, &ind, d))) return st;
    double on, off;
    if (!rt_value_scalar(&c->args[1], &on) || !rt_value_scalar(&c->args[2], &off))
        return rt_kerr(c, d, GR_ERR_INVALID, "on_value/off_value must be scalars");
    int64_t depth = ir_attrs_get_int(c->attrs, "depth", -1);
    int64_t axis = ir_attrs_get_int(c->attrs, "axis", -1);
    int ond = ind->dl.ndim + 1;
    if (depth < 0 || ond > RT_MAX_NDIM || !rt_norm_axis(&axis, ond))
        return rt_kerr(c, d, GR_ERR_INVALID, "bad depth or axis for %s", RT_SHAPE_STR(ind));
    DLDataType dt = {kDLFloat, 32, 1};
    if (c->args[1].kind == RT_VAL_TENSOR) dt = c->args[1].u.t->dl.dtype;
    else if (c->args[1].kind == RT_VAL_INT) dt = I64;
    int64_t oshape[RT_MAX_NDIM];
    for (int i = 0, j = 0; i < ond; i++) oshape[i] = i == axis ? depth : ind->dl.shape[j++];
    rt_tensor *o;
    if ((st = rt_out_new(c, dt, ond, oshape, &o, d))) return st;
    int64_t outer = rt_numel((int)axis, ind->dl.shape);
    int64_t inner = rt_numel(ind->dl.ndim - (int)axis, ind->dl.shape + axis);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t k = 0; k < depth; k++)
            for (int64_t b = 0; b < inner; b++) {
                int64_t v = (int64_t)rt_tensor_get_f64(ind, a * inner + b);
                if (v < 0) v += depth;
                rt_tensor_set_f64(o, (a * depth + k) * inner + b, v == k ? on : off);
            }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- shape ops ---- */

static gr_status k_shape_of(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    rt_value v = {.kind = RT_VAL_SHAPE};
    v.u.shape.ndim = x->dl.ndim;
    memcpy(v.u.shape.dims, x->dl.shape, sizeof(int64_t) * (size_t)x->dl.ndim);
    *out = v;
    return GR_OK;
}

static gr_status k_tensor_to_shape(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st = rt_check_nargs(c, 1, 1, d);
    if (st) return st;
    rt_value v = {.kind = RT_VAL_SHAPE};
    int n = c->args[0].kind == RT_VAL_TENSOR ? rt_value_ints(&c->args[0], v.u.shape.dims, RT_MAX_NDIM) : -1;
    if (n < 0 || n > RT_MAX_NDIM) return rt_kerr(c, d, GR_ERR_INVALID, "needs a 1-D integer tensor");
    v.u.shape.ndim = n;
    *out = v;
    return GR_OK;
}

static gr_status k_shape_to_tensor(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st = rt_check_nargs(c, 1, 1, d);
    if (st) return st;
    if (c->args[0].kind != RT_VAL_SHAPE) return rt_kerr(c, d, GR_ERR_INVALID, "needs a shape");
    int64_t n = c->args[0].u.shape.ndim;
    rt_tensor *o;
    if ((st = rt_out_new(c, I64, 1, &n, &o, d))) return st;
    memcpy(o->dl.data, c->args[0].u.shape.dims, sizeof(int64_t) * (size_t)n);
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_manip[] = {
    RT_K(RESHAPE, k_reshape),
    RT_K(FLATTEN, k_flatten),
    RT_K(SQUEEZE, k_squeeze),
    RT_K(EXPAND_DIMS, k_expand_dims),
    RT_K(PERMUTE_DIMS, k_permute_dims),
    RT_K(CONCAT, k_concat),
    RT_K(SPLIT, k_split),
    RT_K(BROADCAST_TO, k_broadcast_to),
    RT_K(STRIDED_SLICE, k_strided_slice),
    RT_K_OFF("relax.dynamic_strided_slice", k_dynamic_strided_slice),
    RT_K(TAKE, k_take),
    RT_K(TILE, k_tile),
    RT_K(REPEAT, k_repeat),
    RT_K(FLIP, k_flip),
    RT_K(GATHER_ELEMENTS, k_gather_elements),
    RT_K(GATHER_ND, k_gather_nd),
    RT_K(SCATTER_ELEMENTS, k_scatter_elements),
    RT_K(SCATTER_ND, k_scatter_nd),
    RT_K(PAD, k_pad),
    RT_K(ONE_HOT, k_one_hot),
    RT_K(SHAPE_OF, k_shape_of),
    RT_K(TENSOR_TO_SHAPE, k_tensor_to_shape),
    RT_K(SHAPE_TO_TENSOR, k_shape_to_tensor),
};
RT_FAMILY_COUNT(manip, rt_kernels_manip);
