/* Converters: constants and shape manipulation (Constant, ConstantOfShape, Shape, Gather,
 * Concat, Split, Slice, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand, Tile, Range).
 * The output-shape rules here are shared with the folders (onnx_fold.c). */
#include <limits.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* ---- Constant ---- */

gr_status onnx_cv_constant(onnx_cv *cv) {
    const Onnx__AttributeProto *a = NULL;
    rt_tensor *t = NULL;
    gr_status st;
    if ((a = cv_attr(cv, "value")) && a->t) {
        st = onnx_tensor_from_proto(a->t, cv->imp->dir, cv->imp->file, &t, cv->imp->diag);
        if (st != GR_OK) {
            gr_diag_set_layer(cv->imp->diag, cv->layer);
            gr_diag_set_op(cv->imp->diag, "Constant");
            return st;
        }
    } else if ((a = cv_attr(cv, "value_float"))) {
        t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
        if (t) ((float *)t->dl.data)[0] = a->f;
    } else if ((a = cv_attr(cv, "value_int"))) {
        t = rt_tensor_new(IR_DTYPE_I64, 0, NULL);
        if (t) ((int64_t *)t->dl.data)[0] = a->i;
    } else if ((a = cv_attr(cv, "value_floats"))) {
        int64_t n = (int64_t)a->n_floats;
        t = rt_tensor_new(IR_DTYPE_F32, 1, &n);
        if (t && n) memcpy(t->dl.data, a->floats, sizeof(float) * (size_t)n);
    } else if ((a = cv_attr(cv, "value_ints"))) {
        int64_t n = (int64_t)a->n_ints;
        t = rt_tensor_new(IR_DTYPE_I64, 1, &n);
        if (t && n) memcpy(t->dl.data, a->ints, sizeof(int64_t) * (size_t)n);
    } else {
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "only tensor, float(s) and int(s) values");
    }
    if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    cv_set_known(cv, 0, t);
    return GR_OK;
}

/* The fill value of ConstantOfShape (default float32 0). */
rt_tensor *onnx_cos_value(onnx_cv *cv, gr_status *st) {
    const Onnx__AttributeProto *a = cv_attr(cv, "value");
    rt_tensor *v = NULL;
    *st = GR_OK;
    if (a && a->t) {
        *st = onnx_tensor_from_proto(a->t, cv->imp->dir, cv->imp->file, &v, cv->imp->diag);
        if (*st == GR_OK && rt_tensor_numel(v) != 1) {
            rt_tensor_release(v);
            *st = cv_fail(cv, GR_ERR_INVALID, "value must have one element");
            return NULL;
        }
        return v;
    }
    v = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    if (!v) *st = cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    return v;
}

gr_status onnx_cv_constant_of_shape(onnx_cv *cv) {
    const ir_prim *dims[RT_MAX_NDIM];
    int n = cv_dims(cv, 0, dims, RT_MAX_NDIM);
    if (n < 0 || n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the shape must be known");
    gr_status st;
    rt_tensor *v = onnx_cos_value(cv, &st);
    if (!v) return st;
    /* A 0-D constant of the value's dtype. */
    rt_tensor *s = rt_tensor_new(v->dl.dtype, 0, NULL);
    if (!s) {
        rt_tensor_release(v);
        return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    }
    memcpy(s->dl.data, v->dl.data, rt_tensor_nbytes(s));
    ir_dtype dt = v->dl.dtype;
    rt_tensor_release(v);
    ir_expr *fill = (ir_expr *)ir_const_new(cv->ctx, s, cv->span);
    rt_tensor_release(s);
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(dt));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_FULL, cv_shape_expr(cv, (uint32_t)n, dims), fill, &at));
}

/* ---- Shape (always folded when the rank is known) ---- */

gr_status onnx_cv_shape(onnx_cv *cv) {
    return cv_fail(cv, GR_ERR_UNSUPPORTED, "the input's rank is unknown");
}

/* Shape's [start, end) (opset 15), clamped. */
void onnx_shape_range(onnx_cv *cv, int32_t rank, int32_t *start, int32_t *end) {
    int64_t s = cv_attr_int(cv, "start", 0), e = cv_attr_int(cv, "end", rank);
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    if (s < 0) s = 0;
    if (s > rank) s = rank;
    if (e < s) e = s;
    if (e > rank) e = rank;
    *start = (int32_t)s;
    *end = (int32_t)e;
}

/* ---- Gather ---- */

gr_status onnx_cv_gather(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis = cv_attr_int(cv, "axis", 0);
    if (!cv_axis(axis, rank, &axis)) return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    ir_expr *idx;
    rt_tensor *ki = cv_known(cv, 1);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    int64_t dim;
    if (ki && dims && ir_prim_is_int(dims[axis], &dim)) {
        /* Constant indices: normalize negative ones (take does not wrap). */
        bool neg = false;
        int64_t n = rt_tensor_numel(ki);
        for (int64_t i = 0; i < n && !neg; i++) neg = onnx_tensor_get_i64(ki, i) < 0;
        if (neg) {
            rt_tensor *t = rt_tensor_new(IR_DTYPE_I64, ki->dl.ndim, ki->shape);
            if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
            for (int64_t i = 0; i < n; i++) {
                int64_t v = onnx_tensor_get_i64(ki, i);
                ((int64_t *)t->dl.data)[i] = v < 0 ? v + dim : v;
            }
            idx = (ir_expr *)ir_const_new(cv->ctx, t, cv->in[1]->span);
            rt_tensor_release(t);
        } else {
            idx = cv_in(cv, 1);
        }
    } else {
        idx = cv_in(cv, 1);
    }
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    return cv_out(cv, 0, cv_call2(cv, IR_OP_TAKE, x, idx, &at));
}

/* ---- Concat ---- */

gr_status onnx_cv_concat(onnx_cv *cv) {
    if (cv->nin == 0) return cv_fail(cv, GR_ERR_INVALID, "no inputs");
    ir_expr **fields = gr_xcalloc(cv->nin, sizeof(*fields));
    uint32_t n = 0;
    int32_t rank = -1;
    for (uint32_t i = 0; i < cv->nin; i++) {
        if (!cv_has(cv, i)) continue;
        if (!(fields[n++] = cv_in(cv, i))) {
            free(fields);
            return cv_status(cv);
        }
        if (rank < 0) rank = cv_rank(cv, i);
    }
    int64_t axis = cv_attr_int(cv, "axis", 0);
    if (rank >= 0 && !cv_axis(axis, rank, &axis)) {
        free(fields);
        return cv_fail(cv, GR_ERR_INVALID, "axis out of range");
    }
    ir_expr *tup = (ir_expr *)ir_tuple_new(cv->ctx, n, fields, cv->span);
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    ir_expr *c = cv_call1(cv, IR_OP_CONCAT, tup, &at);
    /* Dims that inference cannot prove equal (Swin's patch merging: (h + h % 2 + 2) // 2 and
     * (h + h % 2 + 1) // 2 rows of the even / odd halves): ONNX requires them equal, so the
     * result takes the first input's, checked at run time by a match_cast. */
    const ir_sinfo *f0 = n && c ? fields[0]->sinfo : NULL;
    bool all_dims = f0 && f0->kind == IR_SINFO_TENSOR && f0->ndim > 0 && f0->ndim <= RT_MAX_NDIM && f0->dims &&
                    axis >= 0 && axis < f0->ndim;
    bool differ = false;
    const ir_prim *dims[RT_MAX_NDIM];
    if (all_dims) {
        memcpy(dims, f0->dims, sizeof(*dims) * (size_t)f0->ndim);
        dims[axis] = ir_prim_int(cv->ctx, 0);
    }
    for (uint32_t i = 0; all_dims && i < n; i++) {
        const ir_sinfo *fi = fields[i]->sinfo;
        all_dims = fi && fi->kind == IR_SINFO_TENSOR && fi->ndim == f0->ndim && fi->dims;
        /* (two different ints are an invalid model: inference reports it) */
        for (int32_t d = 0; all_dims && d < f0->ndim; d++)
            differ |= d != axis && fi->dims[d] != f0->dims[d] &&
                      !(ir_prim_is_int(fi->dims[d], NULL) && ir_prim_is_int(f0->dims[d], NULL));
        if (all_dims) dims[axis] = ir_prim_add(cv->ctx, dims[axis], fi->dims[axis]);
    }
    if (all_dims && differ) {
        ir_expr *e = cv_emit(cv, c);
        free(fields);
        if (!e) return cv_status(cv);
        ir_var *v = ir_bb_emit_match_cast(cv->imp->bb, e, ir_sinfo_tensor(cv->ctx, f0->dtype, f0->ndim, dims), NULL);
        return v ? cv_out(cv, 0, (ir_expr *)v) : cv_status(cv);
    }
    free(fields);
    return cv_out(cv, 0, c);
}

/* ---- Split ---- */

gr_status onnx_cv_split(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis = cv_attr_int(cv, "axis", 0);
    if (!cv_axis(axis, rank, &axis)) return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    int64_t dim = -1;
    if (dims) ir_prim_is_int(dims[axis], &dim);
    int64_t sizes[64];
    int ns;
    if (cv->opset < 13) {
        ns = cv_attr_ints(cv, "split", sizes, 64);
    } else if (cv_has(cv, 1)) {
        ns = cv_ints(cv, 1, sizes, 64);
        if (ns < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "split sizes must be a constant");
    } else {
        ns = -1;
    }
    uint32_t nout = cv->nout;
    if (nout == 0 || nout > 64) return cv_fail(cv, GR_ERR_UNSUPPORTED, "%u outputs", nout);
    cv_attrs at = {0};
    if (ns >= 0) {
        if ((uint32_t)ns != nout) return cv_fail(cv, GR_ERR_INVALID, "%d sizes for %u outputs", ns, nout);
        int64_t idx[64], acc = 0;
        for (int i = 0; i + 1 < ns; i++) {
            if (sizes[i] < 0 || sizes[i] > ONNX_DIM_MAX)
                return cv_fail(cv, GR_ERR_INVALID, "split size %lld out of range", (long long)sizes[i]);
            acc += sizes[i];
            idx[i] = acc;
        }
        cv_set(&at, "indices_or_sections", ir_attr_ints(cv->ctx, (uint32_t)(ns - 1), idx));
    } else {
        int64_t parts = cv->opset >= 18 ? cv_attr_int(cv, "num_outputs", nout) : nout;
        if (parts != (int64_t)nout)
            return cv_fail(cv, GR_ERR_INVALID, "num_outputs %lld for %u outputs", (long long)parts, nout);
        if (dim >= 0 && dim % parts) {
            /* Opset 18: uneven split, the last chunk is smaller. */
            int64_t chunk = (dim + parts - 1) / parts, idx[64];
            for (int64_t i = 0; i + 1 < parts; i++) idx[i] = chunk * (i + 1) < dim ? chunk * (i + 1) : dim;
            cv_set(&at, "indices_or_sections", ir_attr_ints(cv->ctx, (uint32_t)(parts - 1), idx));
        } else {
            cv_set(&at, "indices_or_sections", ir_attr_int(parts));
        }
    }
    cv_set(&at, "axis", ir_attr_int(axis));
    ir_expr *sp = cv_emit(cv, cv_call1(cv, IR_OP_SPLIT, x, &at));
    if (!sp) return cv_status(cv);
    for (uint32_t i = 0; i < nout; i++)
        cv->out[i] = (ir_expr *)ir_tgi_new(cv->ctx, sp, (int32_t)i, cv->span);
    return GR_OK;
}

/* ---- Slice ---- */

/* Reads Slice's starts/ends/axes/steps (attrs before opset 10, inputs after) and normalizes
 * them against dims as ONNX clamps: per sliced axis, begin/end/step; begin/end are ints for a
 * static dim (end may be -1 with a negative step: "before index 0") and prims otherwise.
 * Returns the number of sliced axes, or -1 with the diag set. */
int onnx_slice_params(onnx_cv *cv, int32_t rank, const ir_prim *const *dims, int64_t *axes,
                      const ir_prim **begin, const ir_prim **end, int64_t *steps) {
    ir_ctx_t *ctx = cv->ctx;
    int64_t st[RT_MAX_NDIM], en[RT_MAX_NDIM], ax[RT_MAX_NDIM], sp[RT_MAX_NDIM];
    const ir_prim *sym_st[RT_MAX_NDIM] = {NULL}, *sym_en[RT_MAX_NDIM] = {NULL};
    int n, ne, na = -1, nsp = -1;
    if (cv->opset < 10) {
        n = cv_attr_ints(cv, "starts", st, RT_MAX_NDIM);
        ne = cv_attr_ints(cv, "ends", en, RT_MAX_NDIM);
        na = cv_attr_ints(cv, "axes", ax, RT_MAX_NDIM);
    } else {
        n = cv_ints(cv, 1, st, RT_MAX_NDIM);
        ne = cv_ints(cv, 2, en, RT_MAX_NDIM);
        /* Starts / ends computed from symbolic dims (H // 2): taken as in range. */
        if (n < 0) n = cv_dims(cv, 1, sym_st, RT_MAX_NDIM);
        if (ne < 0) ne = cv_dims(cv, 2, sym_en, RT_MAX_NDIM);
        if (cv_has(cv, 3) && (na = cv_ints(cv, 3, ax, RT_MAX_NDIM)) < 0) n = -1;
        if (cv_has(cv, 4) && (nsp = cv_ints(cv, 4, sp, RT_MAX_NDIM)) < 0) n = -1;
        if (n < 0 || ne < 0) {
            cv_fail(cv, GR_ERR_UNSUPPORTED, "starts/ends/axes/steps must be constants");
            return -1;
        }
    }
    if (n < 0 || n != ne || n > rank || (na >= 0 && na != n) || (nsp >= 0 && nsp != n)) {
        cv_fail(cv, GR_ERR_INVALID, "inconsistent starts/ends/axes/steps");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = na >= 0 ? ax[i] : i;
        if (!cv_axis(a, rank, &a)) {
            cv_fail(cv, GR_ERR_INVALID, "axis %lld out of range", (long long)(na >= 0 ? ax[i] : i));
            return -1;
        }
        int64_t step = nsp >= 0 ? sp[i] : 1;
        if (step == 0) {
            cv_fail(cv, GR_ERR_INVALID, "step 0");
            return -1;
        }
        axes[i] = a;
        steps[i] = step;
        int64_t d;
        if (sym_st[0] || sym_en[0]) {
            /* Symbolic starts or ends (each element an int or an expression of dims, which is
             * never negative): used as they are, forward only. */
            int64_t v;
            const ir_prim *bs = sym_st[0] ? sym_st[i] : ir_prim_int(ctx, st[i]);
            const ir_prim *es = sym_en[0] ? sym_en[i] : ir_prim_int(ctx, en[i]);
            if (step < 0 || (ir_prim_is_int(bs, &v) && v < 0) || (ir_prim_is_int(es, &v) && v < 0)) {
                cv_fail(cv, GR_ERR_UNSUPPORTED, "symbolic starts/ends need a positive step and non-negative indices");
                return -1;
            }
            begin[i] = bs;
            end[i] = ir_prim_is_int(es, &v) && v >= INT32_MAX ? dims[a] : es;
            continue;
        }
        if (ir_prim_is_int(dims[a], &d)) {
            /* A step longer than the dim takes one element either way; clamping keeps the
             * count arithmetic in range. */
            if (step > d + 1) steps[i] = step = d + 1;
            if (step < -(d + 1)) steps[i] = step = -(d + 1);
            int64_t s = st[i], e = en[i];
            if (s < 0) s = s < -d ? 0 : s + d;
            if (e < 0) e = e < -d ? -1 : e + d;
            if (step > 0) {
                if (s > d) s = d;
                if (e > d) e = d;
                if (e < 0) e = 0;
            } else {
                if (s > d - 1) s = d - 1;
                if (e > d - 1) e = d - 1;
            }
            begin[i] = ir_prim_int(ctx, s);
            end[i] = ir_prim_int(ctx, e);
        } else {
            /* A symbolic dim: assume the indices are in range; "to the end" is the dim. */
            const ir_prim *D = dims[a];
            int64_t s = st[i], e = en[i];
            begin[i] = s < 0 ? ir_prim_add(ctx, D, ir_prim_int(ctx, s)) : ir_prim_int(ctx, s);
            if (step > 0 && e >= INT32_MAX) end[i] = D;
            else if (step < 0 && e <= INT32_MIN) end[i] = ir_prim_int(ctx, -1);
            else end[i] = e < 0 ? ir_prim_add(ctx, D, ir_prim_int(ctx, e)) : ir_prim_int(ctx, e);
        }
    }
    return n;
}

gr_status onnx_cv_slice(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    int64_t axes[RT_MAX_NDIM], steps[RT_MAX_NDIM];
    const ir_prim *b[RT_MAX_NDIM], *e[RT_MAX_NDIM];
    int n = onnx_slice_params(cv, rank, dims, axes, b, e, steps);
    if (n < 0) return cv_status(cv);
    /* relax.strided_slice(x, axes, begin, end, strides): tuples of prim values. */
    ir_expr *fa[RT_MAX_NDIM], *fb[RT_MAX_NDIM], *fe[RT_MAX_NDIM], *fs[RT_MAX_NDIM];
    for (int i = 0; i < n; i++) {
        int64_t v, d;
        const ir_prim *end = e[i];
        /* A negative step ending before index 0 is written -(dim + 1) (Python slice style). */
        if (steps[i] < 0 && ir_prim_is_int(e[i], &v) && v == -1 && ir_prim_is_int(dims[axes[i]], &d))
            end = ir_prim_int(cv->ctx, -d - 1);
        fa[i] = (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, axes[i]), cv->span);
        fb[i] = (ir_expr *)ir_primval_int(cv->ctx, b[i], cv->span);
        fe[i] = (ir_expr *)ir_primval_int(cv->ctx, end, cv->span);
        fs[i] = (ir_expr *)ir_primval_int(cv->ctx, ir_prim_int(cv->ctx, steps[i]), cv->span);
    }
    ir_expr *args[5] = {x, (ir_expr *)ir_tuple_new(cv->ctx, (uint32_t)n, fa, cv->span),
                        (ir_expr *)ir_tuple_new(cv->ctx, (uint32_t)n, fb, cv->span),
                        (ir_expr *)ir_tuple_new(cv->ctx, (uint32_t)n, fe, cv->span),
                        (ir_expr *)ir_tuple_new(cv->ctx, (uint32_t)n, fs, cv->span)};
    cv_attrs at = {0};
    for (int i = 0; i < n; i++)
        if (!ir_prim_is_int(b[i], NULL) || !ir_prim_is_int(e[i], NULL) || !ir_prim_is_int(dims[axes[i]], NULL)) {
            /* symbolic bounds, or bounds on a symbolic dim, are taken as in range
             * (onnx_slice_params): the extent is end - begin (Swin's roll: x[:, :3] of a
             * symbolic H) */
            cv_set(&at, "assume_inbound", ir_attr_bool(true));
            break;
        }
    return cv_out(cv, 0, cv_call(cv, IR_OP_STRIDED_SLICE, 5, args, &at));
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze: output dims ---- */

/* Output dims of a shape-only op given input dims; returns the output rank or -1 (diag set). */
int onnx_reshape_dims(onnx_cv *cv, const ir_prim *const *in, int32_t rank, const ir_prim **out) {
    ir_ctx_t *ctx = cv->ctx;
    const char *op = cv->node->op_type;
    if (!strcmp(op, "Reshape")) {
        const ir_prim *tgt[RT_MAX_NDIM];
        int n = cv_dims(cv, 1, tgt, RT_MAX_NDIM);
        if (n < 0 || n > RT_MAX_NDIM) {
            cv_fail(cv, GR_ERR_UNSUPPORTED, "the target shape must be known at import");
            return -1;
        }
        bool allowzero = cv->opset >= 14 && cv_attr_int(cv, "allowzero", 0);
        int infer = -1;
        const ir_prim *known = ir_prim_int(ctx, 1);
        for (int i = 0; i < n; i++) {
            int64_t v;
            if (ir_prim_is_int(tgt[i], &v) && v == 0 && !allowzero) {
                if (i >= rank) {
                    cv_fail(cv, GR_ERR_INVALID, "0 at position %d copies a missing dim", i);
                    return -1;
                }
                out[i] = in[i];
            } else if (ir_prim_is_int(tgt[i], &v) && v == -1) {
                if (infer >= 0) {
                    cv_fail(cv, GR_ERR_INVALID, "more than one -1 in the target shape");
                    return -1;
                }
                infer = i;
                continue;
            } else if (ir_prim_is_int(tgt[i], &v) && v < 0) {
                cv_fail(cv, GR_ERR_INVALID, "negative dim %lld in the target shape", (long long)v);
                return -1;
            } else {
                out[i] = tgt[i];
            }
            known = ir_prim_mul(ctx, known, out[i]);
        }
        if (infer >= 0) {
            /* Cancel the target dims that are input dims (N in [N, -1]) so the inferred dim
             * of a symbolic shape stays a product, not (N * 48) // N. */
            const ir_prim *rest[RT_MAX_NDIM];
            bool used[RT_MAX_NDIM] = {0};
            const ir_prim *left = ir_prim_int(ctx, 1);
            for (int i = 0; i < n; i++) {
                if (i == infer) continue;
                int32_t j = 0;
                while (j < rank && (used[j] || in[j] != out[i])) j++;
                if (j < rank) used[j] = true;
                else left = ir_prim_mul(ctx, left, out[i]);
            }
            int32_t nrest = 0;
            for (int32_t j = 0; j < rank; j++)
                if (!used[j]) rest[nrest++] = in[j];
            const ir_prim *total = ir_prim_int(ctx, 1);
            for (int32_t j = 0; j < nrest; j++) total = ir_prim_mul(ctx, total, rest[j]);
            known = left;
            int64_t kv, tv;
            if (ir_prim_is_int(known, &kv) && kv == 0) {
                cv_fail(cv, GR_ERR_INVALID, "-1 with a zero-sized remainder");
                return -1;
            }
            if (ir_prim_is_int(known, &kv) && ir_prim_is_int(total, &tv) && tv % kv) {
                cv_fail(cv, GR_ERR_INVALID, "cannot reshape %lld elements with -1 and %lld",
                        (long long)tv, (long long)kv);
                return -1;
            }
            out[infer] = ir_prim_floordiv(ctx, total, known);
            if (!out[infer]) {
                cv_fail(cv, GR_ERR_INVALID, "bad target shape");
                return -1;
            }
        }
        return n;
    }
    if (!strcmp(op, "Flatten")) {
        int64_t axis = cv_attr_int(cv, "axis", 1);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis > rank) {
            cv_fail(cv, GR_ERR_INVALID, "axis out of range");
            return -1;
        }
        const ir_prim *a = ir_prim_int(ctx, 1), *b = ir_prim_int(ctx, 1);
        for (int32_t i = 0; i < rank; i++) {
            if (i < axis) a = ir_prim_mul(ctx, a, in[i]);
            else b = ir_prim_mul(ctx, b, in[i]);
        }
        out[0] = a;
        out[1] = b;
        return 2;
    }
    int64_t axes[RT_MAX_NDIM];
    int na;
    if (cv->opset < 13) {
        na = cv_attr_ints(cv, "axes", axes, RT_MAX_NDIM);
    } else if (cv_has(cv, 1)) {
        na = cv_ints(cv, 1, axes, RT_MAX_NDIM);
        if (na < 0) {
            cv_fail(cv, GR_ERR_UNSUPPORTED, "axes must be a constant");
            return -1;
        }
    } else {
        na = -1;
    }
    if (na > RT_MAX_NDIM) {
        cv_fail(cv, GR_ERR_INVALID, "too many axes");
        return -1;
    }
    if (!strcmp(op, "Squeeze")) {
        bool drop[RT_MAX_NDIM] = {0};
        for (int i = 0; i < na; i++) {
            int64_t a, v;
            if (!cv_axis(axes[i], rank, &a)) {
                cv_fail(cv, GR_ERR_INVALID, "axis %lld out of range", (long long)axes[i]);
                return -1;
            }
            if (ir_prim_is_int(in[a], &v) && v != 1) {
                cv_fail(cv, GR_ERR_INVALID, "cannot squeeze dim %lld of size %lld", (long long)a,
                        (long long)v);
                return -1;
            }
            drop[a] = true;
        }
        int k = 0;
        for (int32_t i = 0; i < rank; i++) {
            int64_t v;
            bool one = ir_prim_is_int(in[i], &v) && v == 1;
            if (na > 0 ? drop[i] : one) continue;
            out[k++] = in[i];
        }
        return k;
    }
    /* Unsqueeze: axes index the output. */
    if (na <= 0) {
        cv_fail(cv, GR_ERR_INVALID, "no axes");
        return -1;
    }
    int32_t orank = rank + na;
    if (orank > RT_MAX_NDIM) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "rank %d", (int)orank);
        return -1;
    }
    bool ins[RT_MAX_NDIM] = {0};
    for (int i = 0; i < na; i++) {
        int64_t a;
        if (!cv_axis(axes[i], orank, &a) || ins[a]) {
            cv_fail(cv, GR_ERR_INVALID, "bad axis %lld", (long long)axes[i]);
            return -1;
        }
        ins[a] = true;
    }
    for (int32_t i = 0, k = 0; i < orank; i++) out[i] = ins[i] ? ir_prim_int(ctx, 1) : in[k++];
    return orank;
}

gr_status onnx_cv_reshape(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    const ir_prim *out[RT_MAX_NDIM];
    int n = onnx_reshape_dims(cv, dims, cv_rank(cv, 0), out);
    if (n < 0) return cv_status(cv);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESHAPE, x, cv_shape_expr(cv, (uint32_t)n, out), NULL));
}

gr_status onnx_cv_flatten(onnx_cv *cv) { return onnx_cv_reshape(cv); }

gr_status onnx_cv_squeeze(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *out[RT_MAX_NDIM];
    if (onnx_reshape_dims(cv, dims, rank, out) < 0) return cv_status(cv);
    int64_t axes[RT_MAX_NDIM];
    int na = cv->opset < 13 ? cv_attr_ints(cv, "axes", axes, RT_MAX_NDIM)
                            : cv_has(cv, 1) ? cv_ints(cv, 1, axes, RT_MAX_NDIM) : -1;
    for (int i = 0; i < na; i++) cv_axis(axes[i], rank, &axes[i]);
    cv_attrs at = {0};
    cv_set(&at, "axis", na > 0 ? ir_attr_ints(cv->ctx, (uint32_t)na, axes) : ir_attr_none());
    return cv_out(cv, 0, cv_call1(cv, IR_OP_SQUEEZE, x, &at));
}

gr_status onnx_cv_unsqueeze(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *out[RT_MAX_NDIM];
    int orank = onnx_reshape_dims(cv, dims, rank, out);
    if (orank < 0) return cv_status(cv);
    int64_t axes[RT_MAX_NDIM];
    int na = cv->opset < 13 ? cv_attr_ints(cv, "axes", axes, RT_MAX_NDIM) : cv_ints(cv, 1, axes, RT_MAX_NDIM);
    for (int i = 0; i < na; i++) cv_axis(axes[i], orank, &axes[i]);
    /* Sorted, as expand_dims inserts in order. */
    for (int i = 1; i < na; i++)
        for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
            int64_t t = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = t;
        }
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_ints(cv->ctx, (uint32_t)na, axes));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_EXPAND_DIMS, x, &at));
}

gr_status onnx_cv_transpose(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t perm[RT_MAX_NDIM];
    int n = cv_attr_ints(cv, "perm", perm, RT_MAX_NDIM);
    if (n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_INVALID, "perm has %d values", n);
    if (n < 0) {
        if (rank < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input rank unknown");
        n = rank;
        for (int32_t i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    }
    if (rank >= 0 && n != rank) return cv_fail(cv, GR_ERR_INVALID, "perm has %d values for rank %d", n, (int)rank);
    cv_attrs at = {0};
    cv_set(&at, "axes", ir_attr_ints(cv->ctx, (uint32_t)n, perm));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_PERMUTE_DIMS, x, &at));
}

/* Expand: bidirectional broadcast of the input against the shape. */
gr_status onnx_cv_expand(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    int32_t rank = cv_rank(cv, 0);
    const ir_prim *shp[RT_MAX_NDIM];
    int n = cv_dims(cv, 1, shp, RT_MAX_NDIM);
    if (n < 0 || n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the shape must be known at import");
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    int32_t orank = n > rank ? n : rank;
    const ir_prim *out[RT_MAX_NDIM];
    for (int32_t i = 0; i < orank; i++) {
        int32_t ia = i - (orank - rank), ib = i - (orank - n);
        const ir_prim *a = ia >= 0 ? dims[ia] : NULL, *b = ib >= 0 ? shp[ib] : NULL;
        int64_t va, vb;
        if (!a) out[i] = b;
        else if (!b) out[i] = a;
        else if (ir_prim_is_int(b, &vb) && vb == 1) out[i] = a;
        else if (ir_prim_is_int(a, &va) && va == 1) out[i] = b;
        else if (a == b) out[i] = a;
        else if (ir_prim_is_int(a, &va) && ir_prim_is_int(b, &vb))
            return cv_fail(cv, GR_ERR_INVALID, "cannot expand dim %lld to %lld", (long long)va, (long long)vb);
        else out[i] = b;
    }
    return cv_out(cv, 0, cv_call2(cv, IR_OP_BROADCAST_TO, x, cv_shape_expr(cv, (uint32_t)orank, out), NULL));
}

/* Tile by symbolic repeats (relax's tile takes ints): each axis d of x split into (1, d),
 * broadcast to (r, d) and merged back into r * d. */
static gr_status tile_symbolic(onnx_cv *cv, ir_expr *x) {
    const ir_prim *r[RT_MAX_NDIM];
    int32_t rank = cv_rank(cv, 0);
    int n = cv_dims(cv, 1, r, RT_MAX_NDIM);
    const ir_prim *const *dims = cv_dims_or_cast(cv, 0, &x);
    if (!dims) return cv_fail(cv, GR_ERR_UNSUPPORTED, "input dims unknown");
    if (n != rank || 2 * rank > RT_MAX_NDIM)
        return cv_fail(cv, GR_ERR_UNSUPPORTED, "%d symbolic repeats for rank %d (at most %d)", n, (int)rank,
                       RT_MAX_NDIM / 2);
    const ir_prim *split[RT_MAX_NDIM], *wide[RT_MAX_NDIM], *out[RT_MAX_NDIM];
    for (int32_t d = 0; d < rank; d++) {
        split[2 * d] = ir_prim_int(cv->ctx, 1);
        split[2 * d + 1] = wide[2 * d + 1] = dims[d];
        wide[2 * d] = r[d];
        out[d] = ir_prim_mul(cv->ctx, r[d], dims[d]);
    }
    ir_expr *s = cv_op2(cv, IR_OP_RESHAPE, x, cv_shape_expr(cv, (uint32_t)(2 * rank), split), NULL);
    ir_expr *b = s ? cv_op2(cv, IR_OP_BROADCAST_TO, s, cv_shape_expr(cv, (uint32_t)(2 * rank), wide), NULL) : NULL;
    if (!b) return cv_status(cv);
    return cv_out(cv, 0, cv_call2(cv, IR_OP_RESHAPE, b, cv_shape_expr(cv, (uint32_t)rank, out), NULL));
}

gr_status onnx_cv_tile(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int64_t reps[RT_MAX_NDIM];
    int n = cv_ints(cv, 1, reps, RT_MAX_NDIM);
    if (n < 0 && cv_has(cv, 1) && cv->in[1]->sym) return tile_symbolic(cv, x);
    if (n < 0 || n > RT_MAX_NDIM) return cv_fail(cv, GR_ERR_UNSUPPORTED, "repeats must be a constant");
    if (cv_rank(cv, 0) >= 0 && n != cv_rank(cv, 0))
        return cv_fail(cv, GR_ERR_INVALID, "%d repeats for rank %d", n, (int)cv_rank(cv, 0));
    for (int i = 0; i < n; i++)
        if (reps[i] < 0 || reps[i] > (1 << 20))
            return cv_fail(cv, GR_ERR_INVALID, "repeat %lld out of range", (long long)reps[i]);
    cv_attrs at = {0};
    cv_set(&at, "repeats", ir_attr_ints(cv->ctx, (uint32_t)n, reps));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_TILE, x, &at));
}

/* Range with a start, limit or delta computed at run time (the folder takes known ones):
 * arange of the 0-d tensors, of run-time length. */
gr_status onnx_cv_range(onnx_cv *cv) {
    ir_expr *args[3];
    bool sym = false;
    for (uint32_t i = 0; i < 3; i++) sym |= cv_has(cv, i) && cv->in[i]->sym;
    for (uint32_t i = 0; sym && i < 3; i++) {
        /* A bound from symbolic dims (Range(0, W)): prim values, so the length is the
         * expression ceil((limit - start) / delta) and one build serves every W. */
        const ir_prim *p[1];
        rt_tensor *k = cv_known(cv, i);
        int64_t v = k && k->dl.ndim == 0 ? onnx_tensor_get_i64(k, 0) : 0;
        if (k && k->dl.ndim == 0 && rt_tensor_get_f64(k, 0) == (double)v)
            p[0] = ir_prim_int(cv->ctx, v);
        else if (!(cv_has(cv, i) && cv->in[i]->sym && cv->in[i]->sym_ndim == 0 && cv_dims(cv, i, p, 1) == 1))
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "a symbolic bound needs whole-number scalar start, limit and delta");
        if (i == 2 && !(ir_prim_is_int(p[0], &v) && v > 0))
            return cv_fail(cv, GR_ERR_UNSUPPORTED, "a symbolic bound needs a positive constant delta");
        args[i] = (ir_expr *)ir_primval_int(cv->ctx, p[0], cv->span);
    }
    for (uint32_t i = 0; !sym && i < 3; i++) {
        if (!(args[i] = cv_in(cv, i))) return cv_status(cv);
        if (cv_rank(cv, i) != 0) return cv_fail(cv, GR_ERR_INVALID, "input %u must be a scalar", i);
    }
    cv_attrs at = {0};
    cv_set(&at, "dtype", ir_attr_dtype(cv_dtype(cv, 0)));
    return cv_out(cv, 0, cv_call(cv, IR_OP_ARANGE, 3, args, &at));
}
