/* Control flow inlined at import: If with a condition known at import converts the chosen
 * branch in place; Loop with a known trip count and known conditions, and Scan over a static
 * length, are unrolled (each iteration converts the body again, carried values flow from one to
 * the next, scan outputs are stacked). A condition or trip count known only at run time is
 * reported as unsupported. */
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

#define MAX_UNROLL 1024

static const Onnx__GraphProto *graph_attr(onnx_cv *cv, const char *name) {
    const Onnx__AttributeProto *a = cv_attr(cv, name);
    return a ? a->g : NULL;
}

/* Node output i from a value of the subgraph. */
static gr_status out_from(onnx_cv *cv, uint32_t i, const onnx_val *v) {
    if (i >= cv->nout) return GR_OK;
    if (v->known) {
        cv_set_known(cv, i, rt_tensor_retain(v->known));
        return GR_OK;
    }
    if (v->sym) {
        cv_set_sym_nd(cv, i, v->sym, v->sym_ndim, v->sym_shape, v->sym_dtype);
        return GR_OK;
    }
    if (!v->expr) return cv_fail(cv, GR_ERR_UNSUPPORTED, "a subgraph output has no value");
    cv->out[i] = v->expr;
    return GR_OK;
}

static bool known_bool(const onnx_val *v, bool *out) {
    if (!v || !v->known || rt_tensor_numel(v->known) != 1) return false;
    *out = onnx_tensor_get_i64(v->known, 0) != 0;
    return true;
}

gr_status onnx_cv_if(onnx_cv *cv) {
    rt_tensor *c = cv_known(cv, 0);
    if (!c || rt_tensor_numel(c) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the condition must be known at import");
    const Onnx__GraphProto *g = graph_attr(cv, onnx_tensor_get_i64(c, 0) ? "then_branch" : "else_branch");
    if (!g) return cv_fail(cv, GR_ERR_INVALID, "missing branch");
    if (g->n_output != cv->nout) return cv_fail(cv, GR_ERR_INVALID, "the branch has %zu outputs, the node %u", g->n_output, cv->nout);
    onnx_val **outs = gr_xcalloc(g->n_output + 1, sizeof(*outs));
    gr_status st = onnx_subgraph_inline(cv->imp, g, NULL, 0, outs);
    for (uint32_t i = 0; !st && i < cv->nout; i++) st = out_from(cv, i, outs[i]);
    free(outs);
    return st;
}

/* Stacks per-iteration tensors along a new axis `axis`. */
static ir_expr *stack(onnx_cv *cv, ir_expr **items, uint32_t n, int64_t axis) {
    ir_expr **f = gr_xcalloc(n + 1, sizeof(*f));
    cv_attrs ex = {0}, at = {0};
    cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &axis));
    for (uint32_t k = 0; k < n; k++)
        if (!(f[k] = cv_op1(cv, IR_OP_EXPAND_DIMS, items[k], &ex))) {
            free(f);
            return NULL;
        }
    cv_set(&at, "axis", ir_attr_int(axis));
    ir_expr *r = cv_call1(cv, IR_OP_CONCAT, (ir_expr *)ir_tuple_new(cv->ctx, n, f, cv->span), &at);
    free(f);
    return r;
}

/* A value for a subgraph input: an expression or a known tensor (takes the reference). */
static onnx_val val_of(ir_expr *e, rt_tensor *known) {
    onnx_val v = {0};
    v.expr = e;
    v.known = known;
    return v;
}

/* Loop(M, cond, v_initial...): body(iteration_num, cond_in, v...) -> (cond_out, v..., scan...) */
gr_status onnx_cv_loop(onnx_cv *cv) {
    const Onnx__GraphProto *g = graph_attr(cv, "body");
    if (!g) return cv_fail(cv, GR_ERR_INVALID, "missing body");
    int64_t M = -1;
    bool cond = true;
    if (cv_has(cv, 0) && cv_ints(cv, 0, &M, 1) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the trip count must be known at import");
    if (cv_has(cv, 1)) {
        rt_tensor *c = cv_known(cv, 1);
        if (!c || rt_tensor_numel(c) != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "the condition must be known at import");
        cond = onnx_tensor_get_i64(c, 0) != 0;
    }
    if (M < 0 && !cv_has(cv, 1)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "a loop with neither trip count nor condition");
    uint32_t ncarry = cv->nin > 2 ? cv->nin - 2 : 0;
    if (g->n_input != ncarry + 2 || g->n_output < ncarry + 1) return cv_fail(cv, GR_ERR_INVALID, "body inputs / outputs");
    uint32_t nscan = (uint32_t)g->n_output - 1 - ncarry;
    if (cv->nout != ncarry + nscan) return cv_fail(cv, GR_ERR_INVALID, "%u outputs for %u carried and %u scan values", cv->nout, ncarry, nscan);
    onnx_val *carry_v = gr_xcalloc(ncarry + 1, sizeof(*carry_v));
    const onnx_val **carry = gr_xcalloc(ncarry + 1, sizeof(*carry));
    for (uint32_t k = 0; k < ncarry; k++) {
        if (!cv_has(cv, 2 + k)) {
            free(carry_v), free(carry);
            return cv_fail(cv, GR_ERR_INVALID, "loop-carried input %u is missing", k);
        }
        carry[k] = cv->in[2 + k];
    }
    ir_expr ***scans = gr_xcalloc(nscan + 1, sizeof(*scans));
    for (uint32_t k = 0; k < nscan; k++) scans[k] = gr_xcalloc(MAX_UNROLL, sizeof(ir_expr *));
    onnx_val **outs = gr_xcalloc(g->n_output + 1, sizeof(*outs));
    const onnx_val **ins = gr_xcalloc(ncarry + 3, sizeof(*ins));
    const onnx_val **carry_in = gr_xcalloc(ncarry + 1, sizeof(*carry_in));
    onnx_val *wrap_v = gr_xcalloc(ncarry + 1, sizeof(*wrap_v));
    gr_status st = GR_OK;
    int64_t it = 0;
    for (; cond && (M < 0 || it < M); it++) {
        if (it >= MAX_UNROLL) {
            st = cv_fail(cv, GR_ERR_UNSUPPORTED, "more than %d iterations", MAX_UNROLL);
            break;
        }
        rt_tensor *itn = rt_tensor_new(IR_DTYPE_I64, 0, NULL), *ct = rt_tensor_new(IR_DTYPE_BOOL, 0, NULL);
        onnx_tensor_set_i64(itn, 0, it);
        onnx_tensor_set_i64(ct, 0, 1);
        onnx_val vi = val_of(NULL, itn), vc = val_of(NULL, ct);
        ins[0] = &vi, ins[1] = &vc;
        for (uint32_t k = 0; k < ncarry; k++) ins[2 + k] = carry_in[k] ? carry_in[k] : carry[k];
        st = onnx_subgraph_inline(cv->imp, g, ins, ncarry + 2, outs);
        memset(carry_in, 0, sizeof(*carry_in) * (ncarry + 1));
        rt_tensor_release(itn);
        rt_tensor_release(ct);
        if (st) break;
        if (!known_bool(outs[0], &cond)) {
            st = cv_fail(cv, GR_ERR_UNSUPPORTED, "the body's condition must be known at import");
            break;
        }
        for (uint32_t k = 0; k < ncarry && !st; k++) {
            carry_v[k] = *outs[1 + k], carry[k] = &carry_v[k];
            /* a body output of sequence / tensor type carried into an optional input is a present
             * optional there: wrapped as a tuple of one */
            if (onnx_type_kind(g->input[2 + k]->type) == ONNX_IO_OPTIONAL &&
                onnx_type_kind(g->output[1 + k]->type) != ONNX_IO_OPTIONAL) {
                ir_expr *e = carry_v[k].expr ? carry_v[k].expr
                           : carry_v[k].known ? (ir_expr *)ir_const_new(cv->ctx, carry_v[k].known, cv->span) : NULL;
                if (!e) st = cv_fail(cv, GR_ERR_UNSUPPORTED, "a carried optional has no value");
                else wrap_v[k] = (onnx_val){.expr = (ir_expr *)ir_tuple_new(cv->ctx, 1, &e, cv->span)}, carry_in[k] = &wrap_v[k];
            }
        }
        if (st) break;
        for (uint32_t k = 0; k < nscan && !st; k++) {
            onnx_val *sv = outs[1 + ncarry + k];
            ir_expr *e = sv->expr ? sv->expr : sv->known ? (ir_expr *)ir_const_new(cv->ctx, sv->known, cv->span) : NULL;
            if (!e) st = cv_fail(cv, GR_ERR_UNSUPPORTED, "a scan output has no value");
            scans[k][it] = e;
        }
        if (st) break;
    }
    for (uint32_t k = 0; !st && k < ncarry; k++) st = out_from(cv, k, carry[k]);
    for (uint32_t k = 0; !st && k < nscan; k++) {
        if (it == 0) {
            st = cv_fail(cv, GR_ERR_UNSUPPORTED, "a loop that runs no iteration has scan outputs of unknown shape");
            break;
        }
        st = cv_out(cv, ncarry + k, stack(cv, scans[k], (uint32_t)it, 0));
    }
    for (uint32_t k = 0; k < nscan; k++) free(scans[k]);
    free(scans), free(outs), free(ins), free(carry), free(carry_v), free(carry_in), free(wrap_v);
    return st;
}

/* Scan (opset 9+): states..., scan inputs... -> final states..., stacked scan outputs... */
gr_status onnx_cv_scan(onnx_cv *cv) {
    const Onnx__GraphProto *g = graph_attr(cv, "body");
    if (!g) return cv_fail(cv, GR_ERR_INVALID, "missing body");
    bool v8 = cv->opset < 9;
    uint32_t first = v8 ? 1 : 0; /* opset 8: sequence_lens first, a batch dim in front */
    if (v8 && cv_has(cv, 0)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "sequence_lens");
    if (cv->nin <= first) return cv_fail(cv, GR_ERR_INVALID, "no inputs");
    int64_t nsi = cv_attr_int(cv, "num_scan_inputs", 0);
    if (nsi <= 0 || (uint32_t)nsi > cv->nin - first) return cv_fail(cv, GR_ERR_INVALID, "num_scan_inputs");
    uint32_t nstate = cv->nin - first - (uint32_t)nsi, nso = (uint32_t)g->n_output - nstate;
    if (g->n_input != nstate + (uint32_t)nsi || g->n_output < nstate || cv->nout != nstate + nso)
        return cv_fail(cv, GR_ERR_INVALID, "body inputs / outputs");
    int64_t iax[16] = {0}, oax[16] = {0}, idir[16] = {0}, odir[16] = {0};
    if (nsi > 16 || nso > 16) return cv_fail(cv, GR_ERR_UNSUPPORTED, "more than 16 scan inputs / outputs");
    cv_attr_ints(cv, v8 ? "directions" : "scan_input_directions", idir, 16);
    if (!v8) {
        cv_attr_ints(cv, "scan_input_axes", iax, 16);
        cv_attr_ints(cv, "scan_output_axes", oax, 16);
        cv_attr_ints(cv, "scan_output_directions", odir, 16);
    }
    /* opset 8 with batch 1: drop the batch dim, scan along what was axis 1, add it back */
    ir_expr *xs[16];
    int64_t T = -1;
    for (int64_t k = 0; k < nsi; k++) {
        uint32_t i = first + nstate + (uint32_t)k;
        int64_t shape[RT_MAX_NDIM];
        int32_t r = cv_rank(cv, i);
        if (!(xs[k] = cv_in(cv, i))) return cv_status(cv);
        if (r < 1 || !cv_static_dims(cv, i, shape)) return cv_fail(cv, GR_ERR_UNSUPPORTED, "scan inputs need static shapes");
        if (v8 && shape[0] != 1) return cv_fail(cv, GR_ERR_UNSUPPORTED, "opset-8 Scan with a batch other than 1");
        int64_t ax = v8 ? 1 : iax[k];
        if (!cv_axis(ax, r, &ax)) return cv_fail(cv, GR_ERR_INVALID, "scan axis out of range");
        iax[k] = ax;
        if (T >= 0 && shape[ax] != T) return cv_fail(cv, GR_ERR_INVALID, "scan inputs of different lengths");
        T = shape[ax];
    }
    if (T <= 0 || T > MAX_UNROLL) return cv_fail(cv, GR_ERR_UNSUPPORTED, "scan length %lld (1 to %d)", (long long)T, MAX_UNROLL);
    /* slices: split along the axis, squeeze it (and the opset-8 batch) */
    ir_expr ***sl = gr_xcalloc((size_t)nsi + 1, sizeof(*sl));
    for (int64_t k = 0; k < nsi; k++) {
        sl[k] = gr_xcalloc((size_t)T, sizeof(ir_expr *));
        cv_attrs at = {0}, sq = {0};
        cv_set(&at, "indices_or_sections", ir_attr_int(T));
        cv_set(&at, "axis", ir_attr_int(iax[k]));
        int64_t axes[2] = {0, iax[k]};
        cv_set(&sq, "axis", v8 ? ir_attr_ints(cv->ctx, 2, axes) : ir_attr_ints(cv->ctx, 1, &iax[k]));
        ir_expr *sp = cv_op1(cv, IR_OP_SPLIT, xs[k], &at);
        if (!sp) return cv_status(cv);
        for (int64_t t = 0; t < T; t++) {
            int64_t src = idir[k] ? T - 1 - t : t;
            sl[k][t] = cv_op1(cv, IR_OP_SQUEEZE, cv_emit(cv, (ir_expr *)ir_tgi_new(cv->ctx, sp, (int32_t)src, cv->span)), &sq);
            if (!sl[k][t]) return cv_status(cv);
        }
    }
    onnx_val *state_v = gr_xcalloc(nstate + 1, sizeof(*state_v)), *sv = gr_xcalloc((size_t)nsi + 1, sizeof(*sv));
    const onnx_val **state = gr_xcalloc(nstate + 1, sizeof(*state));
    const onnx_val **ins = gr_xcalloc(nstate + (size_t)nsi + 1, sizeof(*ins));
    onnx_val **outs = gr_xcalloc(g->n_output + 1, sizeof(*outs));
    ir_expr **so = gr_xcalloc((size_t)(nso * T) + 1, sizeof(*so));
    gr_status st = GR_OK;
    for (uint32_t k = 0; k < nstate && !st; k++) {
        if (!cv_has(cv, first + k)) {
            st = cv_fail(cv, GR_ERR_INVALID, "scan state %u is missing", k);
            break;
        }
        if (!v8) {
            state[k] = cv->in[first + k];
            continue;
        }
        int64_t zero = 0;
        cv_attrs sq = {0};
        cv_set(&sq, "axis", ir_attr_ints(cv->ctx, 1, &zero));
        ir_expr *s0 = cv_in(cv, first + k);
        state_v[k] = val_of(s0 ? cv_op1(cv, IR_OP_SQUEEZE, s0, &sq) : NULL, NULL);
        if (!state_v[k].expr) st = cv_status(cv);
        state[k] = &state_v[k];
    }
    for (int64_t t = 0; t < T && !st; t++) {
        for (uint32_t k = 0; k < nstate; k++) ins[k] = state[k];
        for (int64_t k = 0; k < nsi; k++) sv[k] = val_of(sl[k][t], NULL), ins[nstate + k] = &sv[k];
        if ((st = onnx_subgraph_inline(cv->imp, g, ins, nstate + (uint32_t)nsi, outs))) break;
        for (uint32_t k = 0; k < nstate; k++) state_v[k] = *outs[k], state[k] = &state_v[k];
        for (uint32_t k = 0; k < nso && !st; k++) {
            onnx_val *o = outs[nstate + k];
            ir_expr *e = o->expr ? o->expr : o->known ? (ir_expr *)ir_const_new(cv->ctx, o->known, cv->span) : NULL;
            if (!e) st = cv_fail(cv, GR_ERR_UNSUPPORTED, "a scan output has no value");
            so[k * T + t] = e;
        }
    }
    for (uint32_t k = 0; !st && k < nstate; k++) {
        if (!v8) {
            st = out_from(cv, k, state[k]);
            continue;
        }
        int64_t zero = 0;
        cv_attrs ex = {0};
        cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &zero));
        ir_expr *e = state[k]->expr ? state[k]->expr : state[k]->known ? (ir_expr *)ir_const_new(cv->ctx, state[k]->known, cv->span) : NULL;
        st = e ? cv_out(cv, k, cv_call1(cv, IR_OP_EXPAND_DIMS, e, &ex)) : cv_fail(cv, GR_ERR_UNSUPPORTED, "a state has no value");
    }
    for (uint32_t k = 0; !st && k < nso; k++) {
        ir_expr **items = so + k * T;
        if (odir[k]) /* reverse: the last iteration first */
            for (int64_t a = 0, b = T - 1; a < b; a++, b--) {
                ir_expr *tmp = items[a];
                items[a] = items[b], items[b] = tmp;
            }
        const ir_sinfo *s0 = items[0]->sinfo;
        int64_t ax = v8 ? 0 : oax[k];
        if (!v8 && (!s0 || s0->kind != IR_SINFO_TENSOR || !cv_axis(ax, s0->ndim + 1, &ax))) {
            st = cv_fail(cv, GR_ERR_INVALID, "scan output axis out of range");
            break;
        }
        ir_expr *y = stack(cv, items, (uint32_t)T, ax);
        if (y && v8) {
            int64_t zero = 0;
            cv_attrs ex = {0};
            cv_set(&ex, "axis", ir_attr_ints(cv->ctx, 1, &zero));
            y = cv_call1(cv, IR_OP_EXPAND_DIMS, cv_emit(cv, y), &ex);
        }
        st = cv_out(cv, nstate + k, y);
    }
    for (int64_t k = 0; k < nsi; k++) free(sl[k]);
    free(sl), free(state_v), free(sv), free(state), free(ins), free(outs), free(so);
    return st;
}
