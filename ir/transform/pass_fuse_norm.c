/* FuseLayerNormGelu: the layer norm and the erf GELU as ONNX exporters before opset 17 / 20
 * write them become one op each:
 *   mu = mean(x, [-1], keepdims); d = x - mu; v = mean(d ^ 2 | d * d, [-1], keepdims);
 *   y = d / sqrt(v + eps) * gamma + beta               -> layer_norm(x, gamma, beta, [-1], eps)
 *   (x * (erf(x / sqrt2 | x * (1/sqrt2)) + 1)) * 0.5
 *   | (x * 0.5) * (erf(...) + 1)                        -> nn.gelu(x)
 *   the same with tanh(sqrt(2/pi) * (x + 0.044715 * x^3))  -> nn.gelu_tanh(x)
 * gamma / beta are constants over the last axis (or scalars); the intermediates have no other
 * use. Backends then see the op they have a kernel for (oneDNN's layer normalization, GELU as a
 * matmul post-op) instead of 9 and 5 elementwise ops. The fused call carries the
 * SequentialSpan of the whole chain (SIBuilder collapse); the old bindings become dead (DCE
 * removes them). Constants are compared with a relative tolerance of 1e-4 (exporters write
 * sqrt(2) and 0.5 as float32). */
#include <math.h>

#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"
#include "base/tensor.h"

#define MAX_CHAIN 32

typedef struct chain {
    const ir_expr *nodes[MAX_CHAIN];
    uint32_t n;
} chain;

static void take(chain *c, const ir_expr *e) {
    if (c->n < MAX_CHAIN) c->nodes[c->n++] = e;
}

/* A call of the chain: its constant operands (their spans may mark an exporter's Constant
 * node as produced there), then the call. */
static void take_call(chain *c, const ir_call *call) {
    for (uint32_t i = 0; i < call->nargs; i++)
        if (call->args[i]->kind == IR_CONST) take(c, call->args[i]);
    take(c, &call->base);
}

static bool close_to(double v, double want) { return fabs(v - want) <= 1e-4 * fabs(want); }

/* The op call bound to var v when v has exactly `uses` uses (0: any), else NULL. */
static ir_call *def_of(pu_rewriter *r, ir_expr *v, ir_op_id op, int uses) {
    if (!v || !ir_is_var(v)) return NULL;
    if (uses && gr_map_get_or(&r->uses, GR_MAP_PTR(v), 0) != (uint64_t)uses) return NULL;
    ir_call *c = pu_op_call(pu_def(r, v), op);
    return c && c->nargs >= 1 ? c : NULL;
}

/* Binary call c with one operand a uniform constant: that constant's value, the other operand
 * in *other. */
static bool with_const(const ir_call *c, double *k, ir_expr **other) {
    if (!c || c->nargs != 2) return false;
    for (int i = 0; i < 2; i++)
        if (pu_const_uniform(c->args[i], k) && c->args[1 - i]->kind != IR_CONST) {
            *other = c->args[1 - i];
            return true;
        }
    return false;
}

static int32_t rank_of(const ir_expr *e) {
    return e && e->sinfo && e->sinfo->kind == IR_SINFO_TENSOR ? e->sinfo->ndim : -1;
}

/* mean over the last axis only, keepdims */
static bool last_axis_mean(const ir_call *m) {
    int64_t ax[8];
    int32_t nd = rank_of(m->args[0]);
    int n = ir_attrs_get_ints(m->attrs, "axis", ax, 8);
    return nd > 0 && n == 1 && (ax[0] == -1 || ax[0] == nd - 1) && ir_attrs_get_bool(m->attrs, "keepdims", false);
}

/* A constant that varies along the last axis of an nd-d result only (C values), or a scalar. */
static bool last_axis_const(const ir_expr *k, int32_t nd, int64_t C) {
    if (!k || k->kind != IR_CONST) return false;
    const rt_tensor *t = ((const ir_const *)k)->data;
    if (t->dl.dtype.code != kDLFloat || t->dl.ndim > nd) return false;
    if (rt_tensor_numel(t) == 1) return true;
    for (int32_t i = 0; i < t->dl.ndim; i++)
        if (t->shape[i] != (i == t->dl.ndim - 1 ? C : 1)) return false;
    return true;
}

/* 1-d float32 copy of a last-axis constant (C values; a scalar is broadcast). */
static ir_expr *as_vector(pu_rewriter *r, const ir_expr *k, int64_t C) {
    const rt_tensor *t = ((const ir_const *)k)->data;
    DLDataType f32 = {kDLFloat, 32, 1};
    rt_tensor *v = rt_tensor_new(f32, 1, &C);
    if (!v) return NULL;
    bool scalar = rt_tensor_numel(t) == 1;
    for (int64_t i = 0; i < C; i++) rt_tensor_set_f64(v, i, rt_tensor_get_f64(t, scalar ? 0 : i));
    ir_expr *c = &ir_const_new(r->ctx, v, k->span)->base;
    rt_tensor_release(v);
    return c;
}

/* y = add(mul(div(d, sqrt(add(mean(pow(d, 2)), eps))), gamma), beta), d = x - mean(x) */
static bool try_layer_norm(pu_rewriter *r, const ir_binding *b, ir_expr *value) {
    ir_call *add = pu_op_call(value, IR_OP_ADD);
    if (!add || add->nargs != 2) return false;
    int32_t nd = rank_of(value);
    if (nd < 1 || !value->sinfo->dims) return false;
    int64_t shape[RT_MAX_NDIM];
    if (nd > RT_MAX_NDIM || !ir_sinfo_static_shape(value->sinfo, shape)) return false;
    int64_t C = shape[nd - 1];
    chain ch = {0};
    ir_call *mul = NULL, *div = NULL;
    ir_expr *beta = NULL, *gamma = NULL;
    for (int i = 0; i < 2 && !mul; i++)
        if ((mul = def_of(r, add->args[i], IR_OP_MULTIPLY, 1)) && mul->nargs == 2) beta = add->args[1 - i];
    if (!mul || !last_axis_const(beta, nd, C)) return false;
    for (int i = 0; i < 2 && !div; i++)
        if ((div = def_of(r, mul->args[i], IR_OP_DIVIDE, 1)) && div->nargs == 2) gamma = mul->args[1 - i];
    if (!div || !last_axis_const(gamma, nd, C)) return false;
    ir_expr *d = div->args[0];
    ir_call *sq = def_of(r, div->args[1], IR_OP_SQRT, 1);
    ir_call *ae = sq ? def_of(r, sq->args[0], IR_OP_ADD, 1) : NULL;
    double eps, two;
    ir_expr *vv = NULL, *pv = NULL;
    if (!ae || !with_const(ae, &eps, &vv) || eps < 0) return false;
    ir_call *var = def_of(r, vv, IR_OP_MEAN, 1);
    if (!var || !last_axis_mean(var)) return false;
    ir_call *pw = def_of(r, var->args[0], IR_OP_POWER, 1), *sqr = NULL;
    if (pw) {
        if (pw->nargs != 2 || pw->args[0] != d || !pu_const_uniform(pw->args[1], &two) || two != 2.0) return false;
    } else if (!(sqr = def_of(r, var->args[0], IR_OP_MULTIPLY, 1)) || sqr->nargs != 2 || sqr->args[0] != d ||
               sqr->args[1] != d)
        return false;
    /* d is used by the square and the divide (twice by d * d) only */
    if (gr_map_get_or(&r->uses, GR_MAP_PTR(d), 0) != (pw ? 2u : 3u)) return false;
    ir_call *sub = def_of(r, d, IR_OP_SUBTRACT, 0);
    if (!sub || sub->nargs != 2) return false;
    ir_expr *x = sub->args[0];
    ir_call *mu = def_of(r, sub->args[1], IR_OP_MEAN, 1);
    if (!mu || mu->args[0] != x || !last_axis_mean(mu) || rank_of(x) != nd) return false;
    const ir_sinfo *xs = x->sinfo;
    if (!xs || !ir_dtype_eq(xs->dtype, IR_DTYPE_F32) || !ir_dtype_eq(value->sinfo->dtype, IR_DTYPE_F32)) return false;
    pv = var->args[0];
    const ir_call *calls[] = {mu, sub, pw ? pw : sqr, var, ae, sq, div, mul, add};
    const ir_expr *vars[] = {sub->args[1], d, pv, vv, sq->args[0], div->args[1], mul->args[0],
                             add->args[0] == beta ? add->args[1] : add->args[0], NULL};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        take_call(&ch, calls[i]);
        if (vars[i]) take(&ch, vars[i]);
    }
    const ir_span *span = ir_si_collapse_nodes(r->ctx, ch.nodes, ch.n);
    ir_expr *g = as_vector(r, gamma, C), *bt = as_vector(r, beta, C);
    if (!g || !bt) {
        gr_diag_set(r->diag, GR_ERR_NOMEM, "FuseLayerNormGelu: out of memory");
        return false;
    }
    int64_t axes[1] = {-1};
    const char *keys[2] = {"axes", "epsilon"};
    ir_attr vals[2] = {ir_attr_ints(r->ctx, 1, axes), ir_attr_float(eps)};
    ir_expr *args[3] = {x, g, bt};
    ir_expr *ln = pu_call(r, IR_OP_LAYER_NORM, 3, args, 2, keys, vals, span);
    return ln && (ln = pu_normalize(r, ln)) && pu_push(r, b->var, ln, NULL);
}

/* The tanh form (GPT-2's, torch's approximate="tanh") after try_gelu found the outer products
 * and the `+ 1` (ap, its result one_plus) of t = ev = tanh(sqrt(2/pi) * (x + 0.044715 * x^3)). */
static bool try_gelu_tanh(pu_rewriter *r, const ir_binding *b, ir_expr *x, ir_expr *ev, ir_call *ap,
                          ir_expr *one_plus, ir_call *mid, ir_expr *mid_v, ir_call *outer) {
    double k;
    ir_expr *sv = NULL, *cv = NULL, *pv = NULL;
    ir_call *th = def_of(r, ev, IR_OP_TANH, 1);
    ir_call *sc = th ? def_of(r, th->args[0], IR_OP_MULTIPLY, 1) : NULL;
    if (!sc || !with_const(sc, &k, &sv) || !close_to(k, sqrt(2.0 / M_PI))) return false;
    ir_call *sum = def_of(r, sv, IR_OP_ADD, 1);
    if (!sum || sum->nargs != 2) return false;
    for (int i = 0; i < 2 && !cv; i++)
        if (sum->args[i] == x) cv = sum->args[1 - i];
    ir_call *cm = def_of(r, cv, IR_OP_MULTIPLY, 1);
    if (!cm || !with_const(cm, &k, &pv) || !close_to(k, 0.044715)) return false;
    ir_call *cube = def_of(r, pv, IR_OP_POWER, 1);
    if (!cube || cube->nargs != 2 || cube->args[0] != x || !pu_const_uniform(cube->args[1], &k) || k != 3.0) return false;
    if (rank_of(x) != rank_of(&outer->base)) return false;
    chain ch = {0};
    const ir_call *calls[] = {cube, cm, sum, sc, th, ap, mid, outer};
    const ir_expr *vars[] = {pv, cv, sv, th->args[0], ev, one_plus, mid_v, NULL};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        take_call(&ch, calls[i]);
        if (vars[i]) take(&ch, vars[i]);
    }
    const ir_span *span = ir_si_collapse_nodes(r->ctx, ch.nodes, ch.n);
    ir_expr *g = pu_call(r, IR_OP_GELU_TANH, 1, &x, 0, NULL, NULL, span);
    return g && (g = pu_normalize(r, g)) && pu_push(r, b->var, g, NULL);
}

/* y = (x * (erf(x / sqrt2) + 1)) * 0.5 or (x * 0.5) * (erf(x / sqrt2) + 1), or the tanh form */
static bool try_gelu(pu_rewriter *r, const ir_binding *b, ir_expr *value) {
    ir_call *outer = pu_op_call(value, IR_OP_MULTIPLY);
    if (!outer || outer->nargs != 2 || rank_of(value) < 0 || !ir_dtype_eq(value->sinfo->dtype, IR_DTYPE_F32)) return false;
    double k;
    ir_expr *inner_v = NULL, *x = NULL, *one_plus = NULL, *half_v = NULL;
    ir_call *inner = NULL, *half = NULL;
    if (with_const(outer, &k, &inner_v)) {   /* (x * (1 + erf)) * 0.5 */
        if (!close_to(k, 0.5) || !(inner = def_of(r, inner_v, IR_OP_MULTIPLY, 1)) || inner->nargs != 2) return false;
        for (int i = 0; i < 2 && !x; i++)
            if (def_of(r, inner->args[i], IR_OP_ADD, 1)) {
                one_plus = inner->args[i];
                x = inner->args[1 - i];
            }
    } else {                                 /* (x * 0.5) * (1 + erf) */
        for (int i = 0; i < 2 && !x; i++) {
            half = def_of(r, outer->args[i], IR_OP_MULTIPLY, 1);
            if (half && with_const(half, &k, &x) && close_to(k, 0.5)) {
                half_v = outer->args[i];
                one_plus = outer->args[1 - i];
            } else {
                x = NULL;
            }
        }
    }
    if (!x || !one_plus) return false;
    ir_call *ap = def_of(r, one_plus, IR_OP_ADD, 1);
    ir_expr *ev = NULL, *sv = NULL;
    if (!ap || !with_const(ap, &k, &ev) || !close_to(k, 1.0)) return false;
    ir_call *erf = def_of(r, ev, IR_OP_ERF, 1);
    if (!erf) return try_gelu_tanh(r, b, x, ev, ap, one_plus, half ? half : inner, half ? half_v : inner_v, outer);
    ir_call *sc = def_of(r, erf->args[0], IR_OP_DIVIDE, 1);
    bool by_div = sc != NULL;
    if (!sc) sc = def_of(r, erf->args[0], IR_OP_MULTIPLY, 1);
    if (!sc || !with_const(sc, &k, &sv) || sv != x) return false;
    if (by_div ? (sc->args[0] != x || !close_to(k, sqrt(2.0))) : !close_to(k, sqrt(0.5))) return false;
    if (rank_of(x) != rank_of(value)) return false;
    chain ch = {0};
    const ir_call *calls[] = {sc, erf, ap, half ? half : inner, outer};
    const ir_expr *vars[] = {erf->args[0], ev, one_plus, half ? half_v : inner_v, NULL};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        take_call(&ch, calls[i]);
        if (vars[i]) take(&ch, vars[i]);
    }
    const ir_span *span = ir_si_collapse_nodes(r->ctx, ch.nodes, ch.n);
    ir_expr *g = pu_call(r, IR_OP_GELU, 1, &x, 0, NULL, NULL, span);
    return g && (g = pu_normalize(r, g)) && pu_push(r, b->var, g, NULL);
}

static bool fuse_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    if (!b->match_sinfo && value->kind == IR_CALL) {
        gr_status before = r->diag ? r->diag->code : GR_OK;
        if (try_layer_norm(r, b, value) || try_gelu(r, b, value)) return true;
        if (r->diag && r->diag->code != before) return false;
    }
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

PU_FUNC_PASS(ir_pass_fuse_norm_gelu, "FuseLayerNormGelu", 1, .binding = fuse_binding,
             .count_uses = true);
