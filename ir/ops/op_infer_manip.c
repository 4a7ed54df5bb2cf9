/* Struct info inference of shape manipulation and creation ops: reshape, permute_dims,
 * flatten, squeeze, expand_dims, concat, split, strided_slice, take, broadcast_to, tile,
 * zeros / ones / full, arange. */
#include <string.h>

#include "ir/ops/op_impl.h"

static const ir_prim *pint(ir_ctx_t *ctx, int64_t v) { return ir_prim_int(ctx, v); }

bool ir__shape_arg(const ir_call *call, uint32_t i, int32_t *ndim, const ir_prim **dims,
                   bool *known, gr_diag *diag) {
    const ir_expr *e = call->args[i];
    *ndim = -1;
    *known = false;
    if (e->kind == IR_SHAPE) {
        const ir_shape_expr *s = (const ir_shape_expr *)e;
        if (s->n > IR__MAX_DIMS) {
            ir__op_err(call, diag, "shape has more than %d dims", IR__MAX_DIMS);
            return false;
        }
        *ndim = (int32_t)s->n;
        for (uint32_t k = 0; k < s->n; k++) dims[k] = s->dims[k];
        *known = true;
        return true;
    }
    const ir_sinfo *si = e->sinfo;
    if (!si || si->kind != IR_SINFO_SHAPE) {
        ir__op_err(call, diag, "argument %u must be a shape, got %s", i, ir__sinfo_str(si));
        return false;
    }
    if (si->ndim > IR__MAX_DIMS) {
        ir__op_err(call, diag, "shape has more than %d dims", IR__MAX_DIMS);
        return false;
    }
    *ndim = si->ndim;
    if (si->ndim >= 0 && (si->dims || si->ndim == 0)) {
        for (int32_t k = 0; k < si->ndim; k++) dims[k] = si->dims[k];
        *known = true;
    }
    return true;
}

bool ir__prim_arg(const ir_expr *e, const ir_prim **value) {
    if (e->kind == IR_PRIMVAL && ((const ir_primval *)e)->value) {
        *value = ((const ir_primval *)e)->value;
        return true;
    }
    if (e->sinfo && e->sinfo->kind == IR_SINFO_PRIM && e->sinfo->value) {
        *value = e->sinfo->value;
        return true;
    }
    return false;
}

/* Product of dims (NULL when none). */
static const ir_prim *prod_dims(ir_ctx_t *ctx, int32_t n, const ir_prim *const *dims) {
    const ir_prim *p = pint(ctx, 1);
    for (int32_t i = 0; i < n; i++) p = ir_prim_mul(ctx, p, dims[i]);
    return p;
}

/* ---- reshape ---- */

IR__INFER(ir__infer_reshape) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int32_t n;
    bool known;
    const ir_prim *dims[IR__MAX_DIMS];
    if (!ir__shape_arg(call, 1, &n, dims, &known, diag)) return NULL;
    if (!known) return ir_sinfo_tensor(ctx, x->dtype, n, NULL);
    int infer_at = -1;
    for (int32_t i = 0; i < n; i++) {
        int64_t v;
        if (!ir_prim_is_int(dims[i], &v)) continue;
        if (v == -1) {
            if (infer_at >= 0) return ir__op_err(call, diag, "more than one -1 in the new shape");
            infer_at = i;
        } else if (v < 0) {
            return ir__op_err(call, diag, "negative dim %lld in the new shape", (long long)v);
        }
    }
    bool have_src = x->ndim >= 0 && (x->dims || x->ndim == 0);
    const ir_prim *src = have_src ? prod_dims(ctx, x->ndim, x->dims) : NULL;
    if (infer_at >= 0) {
        if (!src) return ir_sinfo_tensor(ctx, x->dtype, n, NULL);
        const ir_prim *rest = pint(ctx, 1);
        for (int32_t i = 0; i < n; i++)
            if (i != infer_at) rest = ir_prim_mul(ctx, rest, dims[i]);
        int64_t s, r;
        if (ir_prim_is_int(src, &s) && ir_prim_is_int(rest, &r) && (r == 0 || s % r != 0))
            return ir__op_err(call, diag, "cannot reshape %s to a shape with %lld elements per -1",
                              ir__sinfo_str(x), (long long)r);
        const ir_prim *q = ir_prim_floordiv(ctx, src, rest);
        if (!q) return ir_sinfo_tensor(ctx, x->dtype, n, NULL);
        dims[infer_at] = q;
        return ir_sinfo_tensor(ctx, x->dtype, n, dims);
    }
    if (src) {
        const ir_prim *dst = prod_dims(ctx, n, dims);
        int64_t s, d;
        if (ir_prim_is_int(src, &s) && ir_prim_is_int(dst, &d) && s != d) {
            const ir_sinfo *to = ir_sinfo_tensor(ctx, x->dtype, n, dims);
            return ir__op_err(call, diag, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                              ir__sinfo_str(x), (long long)s, ir__sinfo_str(to), (long long)d);
        }
    }
    return ir_sinfo_tensor(ctx, x->dtype, n, dims);
}

/* ---- permute_dims / flatten / squeeze / expand_dims ---- */

IR__INFER(ir__infer_permute_dims) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t axes[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "axes", axes, IR__MAX_DIMS);
    if (n == -2 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "axes must be a list of ints");
    if (x->ndim < 0) return n < 0 ? x : ir_sinfo_tensor(ctx, x->dtype, n, NULL);
    if (n >= 0 && n != x->ndim)
        return ir__op_err(call, diag, "axes has %d entries but %s has rank %d", n,
                          ir__sinfo_str(x), x->ndim);
    int32_t perm[IR__MAX_DIMS];
    bool seen[IR__MAX_DIMS] = {0};
    for (int32_t i = 0; i < x->ndim; i++) {
        if (n < 0) {
            perm[i] = x->ndim - 1 - i;
            continue;
        }
        if (!ir__norm_axis(axes[i], x->ndim, &perm[i]) || seen[perm[i]])
            return ir__op_err(call, diag, "axes is not a permutation of the dims of %s",
                              ir__sinfo_str(x));
        seen[perm[i]] = true;
    }
    if (!x->dims) return x;
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++) dims[i] = x->dims[perm[i]];
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
}

IR__INFER(ir__infer_flatten) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (x->ndim < 0 || (x->ndim > 0 && !x->dims)) return ir_sinfo_tensor(ctx, x->dtype, 1, NULL);
    const ir_prim *d = prod_dims(ctx, x->ndim, x->dims);
    return ir_sinfo_tensor(ctx, x->dtype, 1, &d);
}

IR__INFER(ir__infer_squeeze) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t axes[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "axis", axes, IR__MAX_DIMS);
    if (n == -2 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "axis must be a list of ints");
    if (x->ndim < 0) return x;
    bool drop[IR__MAX_DIMS] = {0};
    if (n < 0) {
        if (!x->dims) return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
        for (int32_t i = 0; i < x->ndim; i++) {
            int64_t v;
            if (!ir_prim_is_int(x->dims[i], &v)) /* may or may not be 1: rank unknown */
                return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
            drop[i] = v == 1;
        }
    } else {
        for (int i = 0; i < n; i++) {
            int32_t a;
            if (!ir__norm_axis(axes[i], x->ndim, &a))
                return ir__op_err(call, diag, "axis %lld is out of range for %s",
                                  (long long)axes[i], ir__sinfo_str(x));
            int64_t v;
            if (x->dims && ir_prim_is_int(x->dims[a], &v) && v != 1)
                return ir__op_err(call, diag, "cannot squeeze axis %lld of %s: its size is %lld",
                                  (long long)axes[i], ir__sinfo_str(x), (long long)v);
            drop[a] = true;
        }
    }
    int32_t m = 0;
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++)
        if (!drop[i]) {
            if (x->dims) dims[m] = x->dims[i];
            m++;
        }
    return ir_sinfo_tensor(ctx, x->dtype, m, x->dims ? dims : NULL);
}

IR__INFER(ir__infer_expand_dims) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t axes[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "axis", axes, IR__MAX_DIMS);
    if (n < 0 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "axis must be a list of ints");
    if (x->ndim < 0) return x;
    int32_t out = x->ndim + n;
    if (out > IR__MAX_DIMS) return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
    bool added[IR__MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        int32_t a;
        if (!ir__norm_axis(axes[i], out, &a) || added[a])
            return ir__op_err(call, diag, "axis %lld is out of range or repeated for %s",
                              (long long)axes[i], ir__sinfo_str(x));
        added[a] = true;
    }
    if (!x->dims && x->ndim > 0) return ir_sinfo_tensor(ctx, x->dtype, out, NULL);
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0, j = 0; i < out; i++) dims[i] = added[i] ? pint(ctx, 1) : x->dims[j++];
    return ir_sinfo_tensor(ctx, x->dtype, out, dims);
}

/* ---- concat / split ---- */

IR__INFER(ir__infer_concat) {
    const ir_sinfo *t = call->args[0]->sinfo;
    if (t->kind != IR_SINFO_TUPLE)
        return ir__op_err(call, diag, "the first argument must be a tuple of tensors, got %s",
                          ir__sinfo_str(t));
    if (t->n == 0) return ir__op_err(call, diag, "needs at least one tensor");
    int64_t axis = ir__attr_int(call, "axis", 0);
    ir_dtype dt = IR_DTYPE_VOID;
    int32_t ndim = -1;
    for (uint32_t i = 0; i < t->n; i++) {
        const ir_sinfo *f = t->fields[i];
        if (f->kind != IR_SINFO_TENSOR)
            return ir__op_err(call, diag, "field %u must be a tensor, got %s", i, ir__sinfo_str(f));
        if (!ir_dtype_is_void(f->dtype)) {
            if (!ir_dtype_is_void(dt) && !ir_dtype_eq(dt, f->dtype))
                return ir__op_err(call, diag, "data types %s and %s must be equal",
                                  ir_dtype_name(dt), ir_dtype_name(f->dtype));
            dt = f->dtype;
        }
        if (f->ndim >= 0) {
            if (ndim >= 0 && ndim != f->ndim)
                return ir__op_err(call, diag, "ranks differ: %s and %s",
                                  ir__sinfo_str(t->fields[0]), ir__sinfo_str(f));
            ndim = f->ndim;
        }
    }
    if (ndim == 0) return ir__op_err(call, diag, "cannot concatenate 0-D tensors");
    if (ndim < 0) return ir_sinfo_tensor(ctx, dt, -1, NULL);
    int32_t a;
    if (!ir__norm_axis(axis, ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for rank %d", (long long)axis, ndim);
    const ir_prim *dims[IR__MAX_DIMS];
    if (ndim > IR__MAX_DIMS) return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
    bool ok = true;
    for (uint32_t i = 0; i < t->n && ok; i++) {
        const ir_sinfo *f = t->fields[i];
        if (f->ndim < 0 || !f->dims) {
            ok = false;
            break;
        }
        for (int32_t d = 0; d < ndim; d++) {
            if (i == 0) {
                dims[d] = f->dims[d];
            } else if (d == a) {
                dims[d] = ir_prim_add(ctx, dims[d], f->dims[d]);
            } else if (dims[d] != f->dims[d]) {
                if (dims[d]->kind == IR_PRIM_INT && f->dims[d]->kind == IR_PRIM_INT)
                    return ir__op_err(call, diag, "dim %d differs: %s and %s", d,
                                      ir__sinfo_str(t->fields[0]), ir__sinfo_str(f));
                ok = false;
            }
        }
    }
    return ir_sinfo_tensor(ctx, dt, ndim, ok ? dims : NULL);
}

IR__INFER(ir__infer_split) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    const ir_attr *ios = ir__attr(call, "indices_or_sections");
    int64_t axis = ir__attr_int(call, "axis", 0);
    int64_t idx[IR__MAX_DIMS * 4];
    int nidx = -1;
    int64_t sections = 0;
    if (ios && ios->kind == IR_ATTR_INT) {
        sections = ios->u.i;
        if (sections < 1)
            return ir__op_err(call, diag, "sections must be >= 1, got %lld", (long long)sections);
    } else {
        nidx = ir__attr_ints(call, "indices_or_sections", idx, IR__MAX_DIMS * 4);
        if (nidx < 0 || nidx >= IR__MAX_DIMS * 4)
            return ir__op_err(call, diag, "indices_or_sections must be an int or a list of ints");
        for (int i = 1; i < nidx; i++)
            if (idx[i] < idx[i - 1])
                return ir__op_err(call, diag, "split indices must be ascending");
    }
    uint32_t nout = nidx >= 0 ? (uint32_t)nidx + 1 : (uint32_t)sections;
    if (nout > 4096) return ir__op_err(call, diag, "too many outputs (%u)", nout);
    int32_t a = -1;
    if (x->ndim >= 0 && !ir__norm_axis(axis, x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(x));
    const ir_sinfo **fields = gr_xmalloc(sizeof(*fields) * nout);
    const ir_sinfo *unknown = ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
    if (x->ndim < 0 || !x->dims) {
        for (uint32_t i = 0; i < nout; i++) fields[i] = unknown;
    } else {
        const ir_prim *dims[IR__MAX_DIMS];
        for (int32_t d = 0; d < x->ndim; d++) dims[d] = x->dims[d];
        const ir_prim *len = x->dims[a];
        int64_t L;
        bool slen = ir_prim_is_int(len, &L);
        for (uint32_t i = 0; i < nout; i++) {
            const ir_prim *sz;
            if (nidx < 0) {
                /* Equal parts of ceil(len / sections); the last one takes the rest. */
                const ir_prim *part = ir_prim_floordiv(
                    ctx, ir_prim_add(ctx, len, pint(ctx, sections - 1)), pint(ctx, sections));
                sz = i + 1 < nout ? part
                                  : ir_prim_sub(ctx, len, ir_prim_mul(ctx, part, pint(ctx, sections - 1)));
                if (slen && sz->kind == IR_PRIM_INT && sz->value < 0) sz = pint(ctx, 0);
            } else if (slen) {
                int64_t b = i == 0 ? 0 : idx[i - 1], e = i + 1 < nout ? idx[i] : L;
                b = b < 0 ? 0 : b > L ? L : b;
                e = e < 0 ? 0 : e > L ? L : e;
                sz = pint(ctx, e > b ? e - b : 0);
            } else {
                const ir_prim *b = pint(ctx, i == 0 ? 0 : idx[i - 1]);
                const ir_prim *e = i + 1 < nout ? pint(ctx, idx[i]) : len;
                sz = ir_prim_sub(ctx, e, b);
            }
            dims[a] = sz;
            fields[i] = ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
        }
    }
    const ir_sinfo *r = ir_sinfo_tuple(ctx, nout, fields);
    free(fields);
    return r;
}

/* ---- strided_slice ---- */

/* Reads a tuple argument of prim values into v (n entries); false when not all known ints. */
static int tuple_ints(const ir_expr *e, int64_t *v, int max, bool *all_known) {
    *all_known = true;
    if (e->kind == IR_TUPLE) {
        const ir_tuple *t = (const ir_tuple *)e;
        if ((int)t->n > max) return -1;
        for (uint32_t i = 0; i < t->n; i++) {
            const ir_prim *p;
            if (!ir__prim_arg(t->fields[i], &p) || !ir_prim_is_int(p, &v[i])) *all_known = false;
        }
        return (int)t->n;
    }
    const ir_sinfo *s = e->sinfo;
    if (!s || s->kind != IR_SINFO_TUPLE || (int)s->n > max) return -1;
    for (uint32_t i = 0; i < s->n; i++) {
        const ir_sinfo *f = s->fields[i];
        if (f->kind != IR_SINFO_PRIM) return -1;
        if (!f->value || !ir_prim_is_int(f->value, &v[i])) *all_known = false;
    }
    return (int)s->n;
}

IR__INFER(ir__infer_strided_slice) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t axes[IR__MAX_DIMS], begin[IR__MAX_DIMS], end[IR__MAX_DIMS], strides[IR__MAX_DIMS];
    bool k1, k2, k3, k4 = true;
    int na = tuple_ints(call->args[1], axes, IR__MAX_DIMS, &k1);
    int nb = tuple_ints(call->args[2], begin, IR__MAX_DIMS, &k2);
    int ne = tuple_ints(call->args[3], end, IR__MAX_DIMS, &k3);
    int ns = na;
    if (call->nargs > 4) ns = tuple_ints(call->args[4], strides, IR__MAX_DIMS, &k4);
    else for (int i = 0; i < na && i < IR__MAX_DIMS; i++) strides[i] = 1;
    if (na < 0 || nb < 0 || ne < 0 || ns < 0)
        return ir__op_err(call, diag, "axes, begin, end and strides must be tuples of prim values");
    if (nb != na || ne != na || ns != na)
        return ir__op_err(call, diag, "axes, begin, end and strides lengths differ (%d, %d, %d, %d)",
                          na, nb, ne, ns);
    if (!k1) return ir__op_err(call, diag, "axes must be constant ints");
    if (x->ndim < 0) return x;
    int32_t norm[IR__MAX_DIMS];
    bool seen[IR__MAX_DIMS] = {0};
    for (int i = 0; i < na; i++) {
        if (!ir__norm_axis(axes[i], x->ndim, &norm[i]) || seen[norm[i]])
            return ir__op_err(call, diag, "axis %lld is out of range or repeated for %s",
                              (long long)axes[i], ir__sinfo_str(x));
        seen[norm[i]] = true;
        if (k4 && strides[i] == 0) return ir__op_err(call, diag, "strides must be non-zero");
    }
    const ir_prim *dims[IR__MAX_DIMS];
    bool sym_axis = false;
    for (int i = 0; x->dims && i < na; i++) sym_axis |= !ir_prim_is_int(x->dims[norm[i]], NULL);
    if (x->dims && k4 && (!k2 || !k3 || sym_axis) && ir__attr_bool(call, "assume_inbound") &&
        call->args[2]->kind == IR_TUPLE && call->args[3]->kind == IR_TUPLE) {
        /* Symbolic begin / end (shape arithmetic of symbolic dims) or a symbolic axis, in range
         * as the attr promises: ceil((end - begin) / stride) elements along a forward stride. */
        const ir_tuple *tb = (const ir_tuple *)call->args[2], *te = (const ir_tuple *)call->args[3];
        for (int32_t d = 0; d < x->ndim; d++) dims[d] = x->dims[d];
        for (int i = 0; i < na; i++) {
            const ir_prim *b, *e;
            if (strides[i] <= 0 || !ir__prim_arg(tb->fields[i], &b) || !ir__prim_arg(te->fields[i], &e))
                return ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
            dims[norm[i]] = ir_prim_floordiv(ctx, ir_prim_add(ctx, ir_prim_sub(ctx, e, b), pint(ctx, strides[i] - 1)),
                                             pint(ctx, strides[i]));
        }
        return ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
    }
    if (!x->dims || !k2 || !k3 || !k4) return ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
    for (int32_t d = 0; d < x->ndim; d++) dims[d] = x->dims[d];
    for (int i = 0; i < na; i++) {
        int64_t L;
        if (!ir_prim_is_int(x->dims[norm[i]], &L)) /* needs min/max of symbolic dims */
            return ir_sinfo_tensor(ctx, x->dtype, x->ndim, NULL);
        int64_t b = begin[i], e = end[i], s = strides[i], n;
        /* Python slice semantics with clamping. */
        if (b < 0) b += L;
        if (e < 0) e += L;
        if (s > 0) {
            b = b < 0 ? 0 : b > L ? L : b;
            e = e < 0 ? 0 : e > L ? L : e;
            n = e > b ? (e - b + s - 1) / s : 0;
        } else {
            b = b < -1 ? -1 : b > L - 1 ? L - 1 : b;
            e = e < -1 ? -1 : e > L - 1 ? L - 1 : e;
            n = b > e ? (b - e + (-s) - 1) / (-s) : 0;
        }
        dims[norm[i]] = pint(ctx, n);
    }
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
}

/* ---- take / broadcast_to / tile ---- */

IR__INFER(ir__infer_take) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *ind = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!ind) return NULL;
    if (!ir_dtype_is_void(ind->dtype) && !ir_dtype_is_int(ind->dtype))
        return ir__op_err(call, diag, "indices must be integers, got %s", ir__sinfo_str(ind));
    const ir_attr *ax = ir__attr(call, "axis");
    bool flat = !ax || ax->kind == IR_ATTR_NONE;
    if (flat) {
        if (x->ndim >= 0 && x->ndim != 1)
            return ir__op_err(call, diag, "without axis the data must be 1-D, got %s",
                              ir__sinfo_str(x));
        return ir_sinfo_tensor(ctx, x->dtype, ind->ndim, ind->dims);
    }
    int64_t axis = ir__attr_int(call, "axis", 0);
    if (x->ndim < 0 || ind->ndim < 0) return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
    int32_t a;
    if (!ir__norm_axis(axis, x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(x));
    int32_t out = x->ndim - 1 + ind->ndim;
    if (out > IR__MAX_DIMS) return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
    if ((x->ndim && !x->dims) || (ind->ndim && !ind->dims))
        return ir_sinfo_tensor(ctx, x->dtype, out, NULL);
    const ir_prim *dims[IR__MAX_DIMS];
    int32_t k = 0;
    for (int32_t i = 0; i < a; i++) dims[k++] = x->dims[i];
    for (int32_t i = 0; i < ind->ndim; i++) dims[k++] = ind->dims[i];
    for (int32_t i = a + 1; i < x->ndim; i++) dims[k++] = x->dims[i];
    return ir_sinfo_tensor(ctx, x->dtype, out, dims);
}

IR__INFER(ir__infer_broadcast_to) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int32_t n;
    bool known;
    const ir_prim *dims[IR__MAX_DIMS];
    if (!ir__shape_arg(call, 1, &n, dims, &known, diag)) return NULL;
    if (x->ndim >= 0 && n >= 0 && x->ndim > n)
        return ir__op_err(call, diag, "cannot broadcast %s to a rank-%d shape", ir__sinfo_str(x), n);
    if (!known) return ir_sinfo_tensor(ctx, x->dtype, n, NULL);
    const ir_sinfo *to = ir_sinfo_tensor(ctx, x->dtype, n, dims);
    if (x->ndim >= 0 && x->dims) {
        for (int32_t i = 0; i < x->ndim; i++) {
            const ir_prim *s = x->dims[x->ndim - 1 - i], *d = dims[n - 1 - i];
            int64_t sv;
            if (ir_prim_is_int(s, &sv) && sv == 1) continue;
            if (s->kind == IR_PRIM_INT && d->kind == IR_PRIM_INT && s->value != d->value)
                return ir__op_err(call, diag, "cannot broadcast %s to %s", ir__sinfo_str(x),
                                  ir__sinfo_str(to));
        }
    }
    return to;
}

IR__INFER(ir__infer_tile) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t reps[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "repeats", reps, IR__MAX_DIMS);
    if (n < 0 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "repeats must be a list of ints");
    for (int i = 0; i < n; i++)
        if (reps[i] < 0) return ir__op_err(call, diag, "repeats must be non-negative");
    if (x->ndim < 0) return x;
    int32_t out = x->ndim > n ? x->ndim : n;
    if (!x->dims && x->ndim > 0) return ir_sinfo_tensor(ctx, x->dtype, out, NULL);
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0; i < out; i++) {
        int32_t xi = i - (out - x->ndim), ri = i - (out - n);
        const ir_prim *d = xi >= 0 ? x->dims[xi] : pint(ctx, 1);
        dims[i] = ri >= 0 ? ir_prim_mul(ctx, d, pint(ctx, reps[ri])) : d;
    }
    return ir_sinfo_tensor(ctx, x->dtype, out, dims);
}

/* ---- creation ---- */

static const ir_sinfo *from_shape(ir_ctx_t *ctx, const ir_call *call, ir_dtype dt, gr_diag *diag) {
    int32_t n;
    bool known;
    const ir_prim *dims[IR__MAX_DIMS];
    if (!ir__shape_arg(call, 0, &n, dims, &known, diag)) return NULL;
    for (int32_t i = 0; known && i < n; i++) {
        int64_t v;
        if (ir_prim_is_int(dims[i], &v) && v < 0)
            return ir__op_err(call, diag, "negative dim %lld", (long long)v);
    }
    return ir_sinfo_tensor(ctx, dt, n, known ? dims : NULL);
}

IR__INFER(ir__infer_zeros_ones) {
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    if (ir_dtype_is_void(dt)) return ir__op_err(call, diag, "needs a dtype");
    return from_shape(ctx, call, dt, diag);
}

IR__INFER(ir__infer_full) {
    const ir_sinfo *v = call->args[1]->sinfo;
    if (v->kind != IR_SINFO_TENSOR && v->kind != IR_SINFO_PRIM)
        return ir__op_err(call, diag, "fill_value must be a scalar tensor, got %s", ir__sinfo_str(v));
    if (v->kind == IR_SINFO_TENSOR && v->ndim > 0)
        return ir__op_err(call, diag, "fill_value must be 0-D, got %s", ir__sinfo_str(v));
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    if (ir_dtype_is_void(dt)) dt = v->dtype;
    return from_shape(ctx, call, dt, diag);
}

IR__INFER(ir__infer_arange) {
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    const ir_prim *p[3];
    bool all = true;
    for (uint32_t i = 0; i < 3; i++) {
        const ir_sinfo *s = call->args[i]->sinfo;
        /* a 0-d tensor (a value computed at run time, ONNX Range): the length is unknown */
        bool scalar_tensor = s->kind == IR_SINFO_TENSOR && s->ndim == 0;
        if (s->kind != IR_SINFO_PRIM && !scalar_tensor)
            return ir__op_err(call, diag, "argument %u must be a prim value or a 0-d tensor, got %s", i,
                              ir__sinfo_str(s));
        if (scalar_tensor || !ir__prim_arg(call->args[i], &p[i])) all = false;
    }
    if (!all) return ir_sinfo_tensor(ctx, dt, 1, NULL);
    int64_t step;
    if (ir_prim_is_int(p[2], &step) && step == 0) return ir__op_err(call, diag, "step must be non-zero");
    /* ceil((end - start) / step) = (end - start + step - 1) // step for step > 0 */
    const ir_prim *span = ir_prim_sub(ctx, p[1], p[0]);
    const ir_prim *adj = ir_prim_sub(ctx, p[2], pint(ctx, ir_prim_is_int(p[2], &step) && step < 0 ? -1 : 1));
    const ir_prim *n = ir_prim_floordiv(ctx, ir_prim_add(ctx, span, adj), p[2]);
    int64_t nv;
    if (!n) return ir_sinfo_tensor(ctx, dt, 1, NULL);
    if (ir_prim_is_int(n, &nv) && nv < 0) n = pint(ctx, 0);
    return ir_sinfo_tensor(ctx, dt, 1, &n);
}

/* ---- indexing: flip, gather, scatter, one_hot, repeat, tril/triu ---- */

static bool check_axis(const ir_call *call, const ir_sinfo *x, const char *key, int64_t dflt,
                       int32_t *out, gr_diag *diag) {
    int64_t axis = ir__attr_int(call, key, dflt);
    *out = -1;
    if (x->ndim < 0) return true;
    if (!ir__norm_axis(axis, x->ndim, out)) {
        ir__op_err(call, diag, "%s %lld is out of range for %s", key, (long long)axis,
                   ir__sinfo_str(x));
        return false;
    }
    return true;
}

static bool check_int_tensor(const ir_call *call, const ir_sinfo *s, const char *what,
                             gr_diag *diag) {
    if (ir_dtype_is_void(s->dtype) || ir_dtype_is_int(s->dtype)) return true;
    ir__op_err(call, diag, "%s must be integers, got %s", what, ir__sinfo_str(s));
    return false;
}

IR__INFER(ir__infer_flip) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    int32_t a;
    return x && check_axis(call, x, "axis", 0, &a, diag) ? x : NULL;
}

/* gather_elements(data, indices): the result has the indices' shape and the data's dtype. */
IR__INFER(ir__infer_gather_elements) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *ind = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    int32_t a;
    if (!ind || !check_int_tensor(call, ind, "indices", diag) ||
        !check_axis(call, x, "axis", 0, &a, diag))
        return NULL;
    if (x->ndim >= 0 && ind->ndim >= 0 && x->ndim != ind->ndim)
        return ir__op_err(call, diag, "data %s and indices %s must have the same rank",
                          ir__sinfo_str(x), ir__sinfo_str(ind));
    return ir_sinfo_tensor(ctx, x->dtype, ind->ndim, ind->dims);
}

/* gather_nd: indices[..., k] address the data dims after batch_dims. */
IR__INFER(ir__infer_gather_nd) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *ind = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!ind || !check_int_tensor(call, ind, "indices", diag)) return NULL;
    int64_t bd = ir__attr_int(call, "batch_dims", 0);
    if (bd < 0) return ir__op_err(call, diag, "batch_dims must be >= 0");
    if (x->ndim < 0 || ind->ndim < 0 || !ind->dims || (x->ndim && !x->dims))
        return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
    int64_t k;
    if (ind->ndim < 1 || !ir_prim_is_int(ind->dims[ind->ndim - 1], &k))
        return ir_sinfo_tensor(ctx, x->dtype, -1, NULL);
    if (bd + k > x->ndim)
        return ir__op_err(call, diag, "indices %s address more dims than data %s has",
                          ir__sinfo_str(ind), ir__sinfo_str(x));
    const ir_prim *dims[IR__MAX_DIMS];
    int32_t n = 0;
    for (int32_t i = 0; i < ind->ndim - 1; i++) dims[n++] = ind->dims[i];
    for (int32_t i = (int32_t)(bd + k); i < x->ndim; i++) {
        if (n == IR__MAX_DIMS) return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
        dims[n++] = x->dims[i];
    }
    return ir_sinfo_tensor(ctx, x->dtype, n, dims);
}

/* scatter_elements / scatter_nd(data, indices, updates): the result is the data's. */
static const ir_sinfo *scatter(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, bool elements) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *ind = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    const ir_sinfo *upd = ind ? ir__arg_tensor(ctx, call, 2, false, diag) : NULL;
    if (!upd || !check_int_tensor(call, ind, "indices", diag)) return NULL;
    ir_dtype dt;
    if (!ir__common_dtype(call, x, upd, &dt, diag)) return NULL;
    const char *red = ir__attr_str(call, "reduction");
    static const char *const modes[] = {"update", "add", "mul", "mean", "min", "max"};
    bool ok = false;
    for (size_t i = 0; red && i < sizeof(modes) / sizeof(modes[0]); i++) ok |= !strcmp(red, modes[i]);
    if (!ok) return ir__op_err(call, diag, "unsupported reduction \"%s\"", red ? red : "None");
    if (elements) {
        int32_t a;
        if (!check_axis(call, x, "axis", 0, &a, diag)) return NULL;
        if (ind->ndim >= 0 && upd->ndim >= 0 && ind->ndim != upd->ndim)
            return ir__op_err(call, diag, "indices %s and updates %s must have the same rank",
                              ir__sinfo_str(ind), ir__sinfo_str(upd));
    }
    return x;
}

IR__INFER(ir__infer_scatter_elements) { return scatter(ctx, call, diag, true); }
IR__INFER(ir__infer_scatter_nd) { return scatter(ctx, call, diag, false); }

/* one_hot(indices, on_value, off_value): a new axis of size depth, values' dtype. */
IR__INFER(ir__infer_one_hot) {
    const ir_sinfo *ind = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!ind || !check_int_tensor(call, ind, "indices", diag)) return NULL;
    const ir_sinfo *on = call->args[1]->sinfo, *off = call->args[2]->sinfo;
    if (on->kind != IR_SINFO_PRIM || off->kind != IR_SINFO_PRIM)
        return ir__op_err(call, diag, "on_value and off_value must be prim values");
    if (!ir_dtype_is_void(on->dtype) && !ir_dtype_is_void(off->dtype) &&
        !ir_dtype_eq(on->dtype, off->dtype))
        return ir__op_err(call, diag, "on_value and off_value dtypes differ");
    int64_t depth = ir__attr_int(call, "depth", -1), axis = ir__attr_int(call, "axis", -1);
    if (depth < 1) return ir__op_err(call, diag, "depth must be >= 1, got %lld", (long long)depth);
    if (ind->ndim < 0) return ir_sinfo_tensor(ctx, on->dtype, -1, NULL);
    int32_t out = ind->ndim + 1, a;
    if (out > IR__MAX_DIMS) return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
    if (!ir__norm_axis(axis, out, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(ind));
    if (ind->ndim && !ind->dims) return ir_sinfo_tensor(ctx, on->dtype, out, NULL);
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0, j = 0; i < out; i++) dims[i] = i == a ? pint(ctx, depth) : ind->dims[j++];
    return ir_sinfo_tensor(ctx, on->dtype, out, dims);
}

IR__INFER(ir__infer_repeat) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t reps = ir__attr_int(call, "repeats", 1);
    if (reps < 0) return ir__op_err(call, diag, "repeats must be non-negative");
    const ir_attr *ax = ir__attr(call, "axis");
    const ir_prim *r = pint(ctx, reps);
    if (!ax || ax->kind == IR_ATTR_NONE) {
        if (x->ndim < 0 || (x->ndim && !x->dims)) return ir_sinfo_tensor(ctx, x->dtype, 1, NULL);
        const ir_prim *d = ir_prim_mul(ctx, prod_dims(ctx, x->ndim, x->dims), r);
        return ir_sinfo_tensor(ctx, x->dtype, 1, &d);
    }
    int32_t a;
    if (!check_axis(call, x, "axis", 0, &a, diag)) return NULL;
    if (x->ndim < 0 || !x->dims) return x;
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++) dims[i] = i == a ? ir_prim_mul(ctx, x->dims[i], r) : x->dims[i];
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
}

IR__INFER(ir__infer_trilu) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (x->ndim >= 0 && x->ndim < 2)
        return ir__op_err(call, diag, "needs at least 2 dims, got %s", ir__sinfo_str(x));
    if (call->nargs > 1 && call->args[1]->sinfo->kind != IR_SINFO_PRIM)
        return ir__op_err(call, diag, "k must be a prim value");
    return x;
}

/* ---- *_like creation and shape <-> tensor ---- */

IR__INFER(ir__infer_like) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    ir_dtype dt = ir__attr_dtype(call, "dtype");
    if (call->nargs > 1) { /* full_like(x, fill_value) */
        const ir_sinfo *v = call->args[1]->sinfo;
        if ((v->kind != IR_SINFO_TENSOR && v->kind != IR_SINFO_PRIM) ||
            (v->kind == IR_SINFO_TENSOR && v->ndim > 0))
            return ir__op_err(call, diag, "fill_value must be a scalar, got %s", ir__sinfo_str(v));
    }
    if (ir_dtype_is_void(dt)) dt = x->dtype;
    return ir_sinfo_tensor(ctx, dt, x->ndim, x->dims);
}

IR__INFER(ir__infer_shape_to_tensor) {
    const ir_sinfo *s = call->args[0]->sinfo;
    if (s->kind != IR_SINFO_SHAPE)
        return ir__op_err(call, diag, "argument must be a shape, got %s", ir__sinfo_str(s));
    if (s->ndim < 0) return ir_sinfo_tensor(ctx, IR_DTYPE_I64, 1, NULL);
    const ir_prim *d = pint(ctx, s->ndim);
    return ir_sinfo_tensor(ctx, IR_DTYPE_I64, 1, &d);
}

IR__INFER(ir__infer_tensor_to_shape) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (x->ndim >= 0 && x->ndim != 1)
        return ir__op_err(call, diag, "argument must be 1-D, got %s", ir__sinfo_str(x));
    if (!check_int_tensor(call, x, "the argument", diag)) return NULL;
    int64_t n;
    if (x->ndim == 1 && x->dims && ir_prim_is_int(x->dims[0], &n) && n <= IR__MAX_DIMS)
        return ir_sinfo_shape(ctx, (int32_t)n, NULL);
    return ir_sinfo_shape(ctx, -1, NULL);
}
