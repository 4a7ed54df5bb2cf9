/* Converters of the sequence ops. A sequence whose length is known at import is a Relax tuple
 * (R.Tuple of its tensors): SequenceConstruct / SequenceEmpty build one, SplitToSequence is a
 * split, SequenceAt a tuple item, SequenceInsert / SequenceErase a new tuple of the items,
 * SequenceLength a constant, ConcatFromSequence a concat (or a stack with new_axis). Positions
 * must be known at import: a sequence graph input is a tuple param specialized to the length it
 * runs with (onnx_import_opts.seqs). An Optional is a tuple of 0 or 1 element. SequenceMap is
 * unrolled over the known length, like Loop. */
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* The items of a tuple-valued input (TupleGetItem of a var, the fields of a literal); -1 after
 * reporting when the input is not a sequence. items: arena array. */
static int seq_items(onnx_cv *cv, uint32_t i, ir_expr ***items) {
    ir_expr *s = cv_in(cv, i);
    if (!s) return -1;
    /* a sequence made in this import is a tuple literal (a leaf: the importer binds none) */
    const ir_sinfo *si = s->sinfo;
    if (s->kind != IR_TUPLE && (!si || si->kind != IR_SINFO_TUPLE)) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "input %u is not a sequence of known length", i);
        return -1;
    }
    uint32_t n = s->kind == IR_TUPLE ? IR_AS(s, ir_tuple)->n : si->n;
    ir_expr **it = IR_NEW_ARRAY(cv->ctx, ir_expr *, n ? n : 1);
    for (uint32_t k = 0; k < n; k++)
        it[k] = s->kind == IR_TUPLE ? IR_AS(s, ir_tuple)->fields[k] : (ir_expr *)ir_tgi_new(cv->ctx, s, (int32_t)k, cv->span);
    *items = it;
    return (int)n;
}

/* A position input (scalar), normalized into [0, n] (insert: n allowed) or [0, n). */
static bool seq_pos(onnx_cv *cv, uint32_t i, int n, bool insert, int64_t dflt, int64_t *out) {
    int64_t p = dflt;
    if (cv_has(cv, i) && cv_ints(cv, i, &p, 1) != 1) {
        cv_fail(cv, GR_ERR_UNSUPPORTED, "the position must be known at import");
        return false;
    }
    if (p < 0) p += n;
    if (p < 0 || p > n || (!insert && p == n)) {
        cv_fail(cv, GR_ERR_INVALID, "position %lld is out of range for a sequence of %d", (long long)p, n);
        return false;
    }
    *out = p;
    return true;
}

static gr_status seq_out_at(onnx_cv *cv, uint32_t o, uint32_t n, ir_expr **items) {
    return cv_out(cv, o, (ir_expr *)ir_tuple_new(cv->ctx, n, items, cv->span));
}

static gr_status seq_out(onnx_cv *cv, uint32_t n, ir_expr **items) { return seq_out_at(cv, 0, n, items); }

gr_status onnx_cv_seq_construct(onnx_cv *cv) {
    ir_expr **items = IR_NEW_ARRAY(cv->ctx, ir_expr *, cv->nin ? cv->nin : 1);
    for (uint32_t i = 0; i < cv->nin; i++)
        if (!(items[i] = cv_in(cv, i))) return cv_status(cv);
    return seq_out(cv, cv->nin, items);
}

gr_status onnx_cv_seq_empty(onnx_cv *cv) { return seq_out(cv, 0, NULL); }

gr_status onnx_cv_seq_at(onnx_cv *cv) {
    ir_expr **items;
    int n = seq_items(cv, 0, &items);
    int64_t p;
    if (n < 0 || !seq_pos(cv, 1, n, false, 0, &p)) return cv_status(cv);
    if (!cv_has(cv, 1)) return cv_fail(cv, GR_ERR_INVALID, "position is required");
    return cv_out(cv, 0, items[p]);
}

gr_status onnx_cv_seq_insert(onnx_cv *cv) {
    ir_expr **items, *t = cv_in(cv, 1);
    int n = seq_items(cv, 0, &items);
    int64_t p;
    if (n < 0 || !t || !seq_pos(cv, 2, n, true, n, &p)) return cv_status(cv);
    ir_expr **out = IR_NEW_ARRAY(cv->ctx, ir_expr *, (size_t)n + 1);
    for (int k = 0, j = 0; k <= n; k++) out[k] = k == p ? t : items[j++];
    return seq_out(cv, (uint32_t)n + 1, out);
}

gr_status onnx_cv_seq_erase(onnx_cv *cv) {
    ir_expr **items;
    int n = seq_items(cv, 0, &items);
    int64_t p;
    if (n < 0 || !seq_pos(cv, 1, n, false, n - 1, &p)) return cv_status(cv);
    ir_expr **out = IR_NEW_ARRAY(cv->ctx, ir_expr *, n ? (size_t)n : 1);
    int m = 0;
    for (int k = 0; k < n; k++)
        if (k != p) out[m++] = items[k];
    return seq_out(cv, (uint32_t)m, out);
}

gr_status onnx_cv_seq_length(onnx_cv *cv) {
    ir_expr **items;
    int n = seq_items(cv, 0, &items);
    if (n < 0) return cv_status(cv);
    rt_tensor *t = rt_tensor_new(IR_DTYPE_I64, 0, NULL);
    if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    onnx_tensor_set_i64(t, 0, n);
    ir_expr *c = (ir_expr *)ir_const_new(cv->ctx, t, cv->span);
    rt_tensor_release(t);
    return cv_out(cv, 0, c);
}

gr_status onnx_cv_concat_from_seq(onnx_cv *cv) {
    ir_expr **items;
    int n = seq_items(cv, 0, &items);
    if (n < 0) return cv_status(cv);
    if (n == 0) return cv_fail(cv, GR_ERR_INVALID, "an empty sequence has nothing to concatenate");
    bool stack = cv_attr_int(cv, "new_axis", 0) != 0;
    const ir_sinfo *s0 = items[0]->sinfo;
    int32_t rank = s0 && s0->kind == IR_SINFO_TENSOR ? s0->ndim : -1;
    if (rank < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "items of unknown rank");
    int64_t axis = cv_attr_int(cv, "axis", 0);
    if (!cv_axis(axis, rank + (stack ? 1 : 0), &axis)) return cv_fail(cv, GR_ERR_INVALID, "axis out of range");
    ir_expr **f = items;
    if (stack) {
        f = IR_NEW_ARRAY(cv->ctx, ir_expr *, (size_t)n);
        cv_attrs ex = {0};
        cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &axis));
        for (int k = 0; k < n; k++)
            if (!(f[k] = cv_op1(cv, IR_OP_EXPAND_DIMS, items[k], &ex))) return cv_status(cv);
    }
    cv_attrs at = {0};
    cv_set(&at, "axis", ir_attr_int(axis));
    return cv_out(cv, 0, cv_call1(cv, IR_OP_CONCAT, (ir_expr *)ir_tuple_new(cv->ctx, (uint32_t)n, f, cv->span), &at));
}

gr_status onnx_cv_split_to_seq(onnx_cv *cv) {
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    int32_t rank = cv_rank(cv, 0);
    int64_t axis = cv_attr_int(cv, "axis", 0), shape[RT_MAX_NDIM];
    if (!cv_axis(axis, rank, &axis)) return cv_fail(cv, GR_ERR_INVALID, "bad axis or unknown rank");
    if (!cv_static_dims(cv, 0, shape)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the input needs static dims");
    int64_t dim = shape[axis], sizes[256];
    int ns;
    bool squeeze = false;
    if (!cv_has(cv, 1)) {
        /* pieces of 1; keepdims=0 drops the split axis */
        if (dim > 256) return cv_fail(cv, GR_ERR_UNSUPPORTED, "more than 256 pieces");
        ns = (int)dim;
        for (int i = 0; i < ns; i++) sizes[i] = 1;
        squeeze = cv_attr_int(cv, "keepdims", 1) == 0;
    } else {
        const ir_sinfo *ss = cv_sinfo(cv, 1);
        ns = cv_ints(cv, 1, sizes, 256);
        if (ns < 0) return cv_fail(cv, GR_ERR_UNSUPPORTED, "split must be known at import");
        if (ss && ss->ndim == 0) { /* one size: equal pieces, the last one shorter */
            int64_t each = sizes[0];
            if (each <= 0) return cv_fail(cv, GR_ERR_INVALID, "split size must be positive");
            ns = 0;
            for (int64_t at = 0; at < dim && ns < 256; at += each) sizes[ns++] = at + each <= dim ? each : dim - at;
        }
    }
    if (ns < 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "an empty sequence (nothing to split)");
    int64_t acc = 0, idx[256];
    for (int i = 0; i < ns; i++) {
        if (sizes[i] < 0) return cv_fail(cv, GR_ERR_INVALID, "negative split size");
        acc += sizes[i];
        if (i + 1 < ns) idx[i] = acc;
    }
    if (acc != dim) return cv_fail(cv, GR_ERR_INVALID, "split sizes add up to %lld, not %lld", (long long)acc, (long long)dim);
    cv_attrs at = {0};
    cv_set(&at, "indices_or_sections", ir_attr_ints(cv->ctx, (uint32_t)(ns - 1), idx));
    cv_set(&at, "axis", ir_attr_int(axis));
    ir_expr *sp = cv_emit(cv, cv_call1(cv, IR_OP_SPLIT, x, &at));
    if (!sp) return cv_status(cv);
    ir_expr **items = IR_NEW_ARRAY(cv->ctx, ir_expr *, (size_t)ns);
    cv_attrs sq = {0};
    cv_set(&sq, "axis", ir_attr_ints(cv->ctx, 1, &axis));
    for (int i = 0; i < ns; i++) {
        items[i] = (ir_expr *)ir_tgi_new(cv->ctx, sp, i, cv->span);
        if (squeeze && !(items[i] = cv_op1(cv, IR_OP_SQUEEZE, cv_emit(cv, items[i]), &sq))) return cv_status(cv);
    }
    return seq_out(cv, (uint32_t)ns, items);
}

/* ---- optionals: a tuple of 0 (empty) or 1 element, its presence known at import ---- */

/* The tuple length of input i, or -1 when it is not a tuple (a tensor). */
static int tuple_len(const onnx_cv *cv, uint32_t i) {
    const onnx_val *v = i < cv->nin ? cv->in[i] : NULL;
    const ir_expr *e = v ? v->expr : NULL;
    if (!e) return -1;
    if (e->kind == IR_TUPLE) return (int)IR_AS(e, ir_tuple)->n;
    return e->sinfo && e->sinfo->kind == IR_SINFO_TUPLE ? (int)e->sinfo->n : -1;
}

/* SequenceLength and OptionalHasElement are known at import: folded to constants, so an If or
 * a Loop trip count computed from them is known too. */
int onnx_fold_seq_length(onnx_cv *cv) {
    int n = tuple_len(cv, 0);
    if (n < 0) return 0; /* the converter reports it */
    rt_tensor *t = rt_tensor_new(IR_DTYPE_I64, 0, NULL);
    if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    onnx_tensor_set_i64(t, 0, n);
    cv_set_known(cv, 0, t);
    return 1;
}

int onnx_fold_opt_has(onnx_cv *cv) {
    /* an absent input is an empty optional; a tensor (opset 18) is present */
    int n = cv_has(cv, 0) ? tuple_len(cv, 0) : 0;
    if (cv_has(cv, 0) && n < 0 && !(cv->in[0] && (cv->in[0]->expr || cv->in[0]->known))) return 0;
    rt_tensor *t = rt_tensor_new(IR_DTYPE_BOOL, 0, NULL);
    if (!t) return cv_fail(cv, GR_ERR_NOMEM, "out of memory");
    onnx_tensor_set_i64(t, 0, n != 0);
    cv_set_known(cv, 0, t);
    return 1;
}

gr_status onnx_cv_opt_has(onnx_cv *cv) {
    return cv_fail(cv, GR_ERR_UNSUPPORTED, "the input's presence must be known at import");
}

/* Optional(x): (x,); Optional() of a type: () */
gr_status onnx_cv_optional(onnx_cv *cv) {
    if (!cv_has(cv, 0)) return seq_out(cv, 0, NULL);
    ir_expr *x = cv_in(cv, 0);
    if (!x) return cv_status(cv);
    return seq_out(cv, 1, &x);
}

/* OptionalGetElement: the element of a present optional; a tensor (opset 18) is itself. */
gr_status onnx_cv_opt_get(onnx_cv *cv) {
    int n = tuple_len(cv, 0);
    if (n < 0) return cv_out(cv, 0, cv_in(cv, 0));
    if (n == 0) return cv_fail(cv, GR_ERR_INVALID, "the optional is empty");
    ir_expr **items;
    if (seq_items(cv, 0, &items) < 0) return cv_status(cv);
    return cv_out(cv, 0, items[0]);
}

/* ---- SequenceMap: the body applied to each element, unrolled at import (the length is known) ---- */

#define SEQ_MAP_MAX 1024

/* SequenceMap(seq, additional...) -> one sequence per body output. Sequence inputs give the
 * body their k-th element (all of the first one's length), tensor inputs are passed whole. */
gr_status onnx_cv_seq_map(onnx_cv *cv) {
    const Onnx__AttributeProto *a = cv_attr(cv, "body");
    const Onnx__GraphProto *g = a ? a->g : NULL;
    if (!g) return cv_fail(cv, GR_ERR_INVALID, "missing body");
    if (g->n_input != cv->nin || g->n_output != cv->nout || cv->nin < 1)
        return cv_fail(cv, GR_ERR_INVALID, "the body has %zu inputs and %zu outputs, the node %u and %u", g->n_input,
                       g->n_output, cv->nin, cv->nout);
    ir_expr ***items = IR_NEW_ARRAY(cv->ctx, ir_expr **, cv->nin);
    int n = seq_items(cv, 0, &items[0]);
    if (n < 0) return cv_status(cv);
    if (n > SEQ_MAP_MAX) return cv_fail(cv, GR_ERR_UNSUPPORTED, "more than %d elements", SEQ_MAP_MAX);
    for (uint32_t i = 1; i < cv->nin; i++) {
        items[i] = NULL;
        if (!cv_has(cv, i)) return cv_fail(cv, GR_ERR_INVALID, "input %u is missing", i);
        if (tuple_len(cv, i) < 0) continue; /* a tensor: passed whole */
        if (seq_items(cv, i, &items[i]) != n)
            return cv_fail(cv, GR_ERR_INVALID, "input %u: sequences of different lengths", i);
    }
    ir_expr ***outs = IR_NEW_ARRAY(cv->ctx, ir_expr **, cv->nout ? cv->nout : 1);
    for (uint32_t o = 0; o < cv->nout; o++) outs[o] = IR_NEW_ARRAY(cv->ctx, ir_expr *, n ? (size_t)n : 1);
    onnx_val *elem = gr_xcalloc(cv->nin, sizeof(*elem));
    const onnx_val **ins = gr_xcalloc(cv->nin, sizeof(*ins));
    onnx_val **res = gr_xcalloc(cv->nout + 1, sizeof(*res));
    gr_status st = GR_OK;
    for (int k = 0; k < n && st == GR_OK; k++) {
        for (uint32_t i = 0; i < cv->nin && st == GR_OK; i++) {
            if (!items[i]) {
                ins[i] = cv->in[i];
                continue;
            }
            ir_expr *e = items[i][k];
            if (!ir_is_leaf(e) && !(e = cv_emit(cv, e))) st = cv_status(cv);
            elem[i] = (onnx_val){.expr = e};
            ins[i] = &elem[i];
        }
        if (st == GR_OK) st = onnx_subgraph_inline(cv->imp, g, ins, cv->nin, res);
        for (uint32_t o = 0; o < cv->nout && st == GR_OK; o++) {
            const onnx_val *v = res[o];
            ir_expr *e = v->expr ? v->expr : v->known ? (ir_expr *)ir_const_new(cv->ctx, v->known, cv->span) : NULL;
            if (!e) st = cv_fail(cv, GR_ERR_UNSUPPORTED, "body output %u has no tensor value (a shape with dynamic dims)", o);
            outs[o][k] = e;
        }
    }
    free(elem), free(ins), free(res);
    for (uint32_t o = 0; o < cv->nout && st == GR_OK; o++) st = seq_out_at(cv, o, (uint32_t)n, outs[o]);
    return st;
}
