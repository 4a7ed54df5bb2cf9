/* SimplifyExpr: reshape(reshape(x)) -> reshape(x); permute_dims(permute_dims(x)) -> one
 * permute_dims (or x when the composition is the identity); reshape to x's own shape, astype to
 * x's own dtype, multiply by one and add zero -> x. A rewritten node carries the SequentialSpan
 * of everything it replaced (SIBuilder collapse); a node replaced by x has its span merged into
 * x's binding. */

#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

static bool same_tensor_sinfo(const ir_sinfo *a, const ir_sinfo *b) {
    return a && b && a == b && a->kind == IR_SINFO_TENSOR && a->dims;
}

/* value becomes plain x (a leaf): alias, with `span` merged into x's binding (or kept on the
 * binding when x is bound elsewhere). */
static bool to_input_span(pu_rewriter *r, const ir_binding *b, ir_expr *x, const ir_span *span) {
    if (!ir_is_leaf(x)) return false;
    pu_alias(r, b, x, span);
    return true;
}

/* The call's span and those of its arguments other than x (SIBuilder collapse of a call
 * whose only boundary is x). */
static const ir_span *call_span_without(pu_rewriter *r, ir_call *c, const ir_expr *x) {
    const ir_expr *nodes[9];
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nargs && n < 8; i++)
        if (c->args[i] != x) nodes[n++] = c->args[i];
    nodes[n++] = &c->base;
    return ir_si_collapse_nodes(r->ctx, nodes, n);
}

static bool to_input(pu_rewriter *r, const ir_binding *b, ir_call *c, ir_expr *x) {
    return ir_is_leaf(x) && to_input_span(r, b, x, call_span_without(r, c, x));
}

/* Span of outer(x) where x is the var bound to inner: both calls and the var between them. */
static const ir_span *chain_span(pu_rewriter *r, ir_call *inner, ir_expr *x, ir_call *outer) {
    const ir_expr *nodes[3] = {&inner->base, x, &outer->base};
    return ir_si_collapse_nodes(r->ctx, nodes, 3);
}

static int get_axes(const ir_call *c, int64_t *axes, int ndim) {
    int n = ir_attrs_get_ints(c->attrs, "axes", axes, 8);
    if (n < 0) {   /* None: reverse */
        for (int i = 0; i < ndim; i++) axes[i] = ndim - 1 - i;
        return ndim;
    }
    for (int i = 0; i < n; i++)
        if (axes[i] < 0) axes[i] += ndim;
    return n;
}

static bool simplify_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    ir_call *c = value->kind == IR_CALL ? (ir_call *)value : NULL;
    if (!c || b->match_sinfo || c->callee->kind != IR_OP) goto keep;
    ir_expr *x = c->nargs ? c->args[0] : NULL;
    ir_op_id op = ir_op_id_of(value);
    if (op == IR_OP_RESHAPE && c->nargs == 2) {
        if (same_tensor_sinfo(x->sinfo, value->sinfo) && to_input(r, b, c, x)) return true;
        ir_call *inner = pu_op_call(pu_def(r, x), IR_OP_RESHAPE);
        if (inner && inner->nargs == 2) {
            ir_expr *y = inner->args[0];
            const ir_span *sp = chain_span(r, inner, x, c);
            if (same_tensor_sinfo(y->sinfo, value->sinfo) && to_input_span(r, b, y, sp)) return true;
            ir_expr *args[2] = {y, c->args[1]};
            ir_expr *nc = &ir_call_new(r->ctx, c->callee, 2, args, c->attrs, 0, NULL, sp)->base;
            if (!(nc = pu_normalize(r, nc))) return false;
            pu_push(r, b->var, nc, NULL);
            return true;
        }
    } else if (op == IR_OP_PERMUTE_DIMS && x && x->sinfo &&
               x->sinfo->kind == IR_SINFO_TENSOR && x->sinfo->ndim > 0 && x->sinfo->ndim <= 8) {
        ir_call *inner = pu_op_call(pu_def(r, x), IR_OP_PERMUTE_DIMS);
        const ir_sinfo *ys = inner ? inner->args[0]->sinfo : NULL;
        if (inner && ys && ys->kind == IR_SINFO_TENSOR && ys->ndim == x->sinfo->ndim) {
            int nd = x->sinfo->ndim;
            int64_t a1[8], a2[8], comp[8];
            if (get_axes(inner, a1, nd) != nd || get_axes(c, a2, nd) != nd) goto keep;
            bool ident = true;
            for (int i = 0; i < nd; i++) {
                comp[i] = a1[a2[i]];
                ident &= comp[i] == i;
            }
            ir_expr *y = inner->args[0];
            const ir_span *sp = chain_span(r, inner, x, c);
            if (ident && to_input_span(r, b, y, sp)) return true;
            const char *key = "axes";
            ir_attr val = ir_attr_ints(r->ctx, (uint32_t)nd, comp);
            ir_expr *nc = pu_call(r, IR_OP_PERMUTE_DIMS, 1, &y, 1, &key, &val, sp);
            if (!nc || !(nc = pu_normalize(r, nc))) return false;
            pu_push(r, b->var, nc, NULL);
            return true;
        }
    } else if (op == IR_OP_ASTYPE) {
        if (same_tensor_sinfo(x->sinfo, value->sinfo) && to_input(r, b, c, x)) return true;
    } else if ((op == IR_OP_MULTIPLY || op == IR_OP_ADD) && c->nargs == 2) {
        double ident = op == IR_OP_MULTIPLY ? 1.0 : 0.0, v;
        for (int k = 0; k < 2; k++) {
            ir_expr *other = c->args[1 - k];
            if (pu_const_uniform(c->args[k], &v) && v == ident &&
                same_tensor_sinfo(other->sinfo, value->sinfo) && to_input(r, b, c, other))
                return true;
        }
    }
keep:
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

PU_FUNC_PASS(ir_pass_simplify_expr, "SimplifyExpr", 1, .binding = simplify_binding);
