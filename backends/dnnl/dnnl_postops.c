/* Post-op chains: the eltwise and binary nodes after a primitive that fold into it (as oneDNN
 * post-ops or graft's own fused steps), matched along the graph, and the primitive attributes
 * made from them. */
#include <math.h>
#include <string.h>

#include "backends/dnnl/dnnl_impl.h"
#include "backends/dnnl/dnnl_op_table.h"

static const dn_op_row ROWS[IR_OP_COUNT] = {
#define X(op, kind, check, handler, alg, alpha, beta) [IR_OP_##op] = {true, kind, alg, alpha, beta},
    DNNL_OPS(X)
#undef X
};

const dn_op_row *dn_op_row_of(int op) {
    return op >= 0 && op < IR_OP_COUNT && ROWS[op].in_table ? &ROWS[op] : NULL;
}

static const dn_op_row *row_of(const rt_json_node *n) {
    return n->kind == RT_JSON_KERNEL ? dn_op_row_of(n->op) : NULL;
}

/* Unary eltwise of node n on its first argument. */
static bool unary_of(const rt_json_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    const dn_op_row *r = row_of(n);
    if (!r || r->kind != DN_K_ELT) return false;
    *alg = r->alg;
    *alpha = r->alpha;
    *beta = r->beta;
    if (n->op == IR_OP_LEAKYRELU) *alpha = (float)dn_attr_float(n, "alpha", 0.01);
    if (n->op == IR_OP_CLIP) {
        double lo, hi;
        if (!dn_arg_num(n, 1, &lo) || !dn_arg_num(n, 2, &hi)) return false;
        /* max everywhere when min > max (ONNX's min(max(x, min), max)) */
        *alpha = (float)(lo < hi ? lo : hi);
        *beta = (float)hi;
    }
    return true;
}

static bool is_op(const rt_json_node *n, ir_op_id op) { return n->kind == RT_JSON_KERNEL && n->op == op; }

/* For a binary node n with one operand `e`: the other operand's entry, and whether e is
 * the first operand. */
static int other_operand(dn_state *S, const rt_json_node *n, int e, bool *e_first) {
    int a = dn_arg_entry(S, n, 0), b = dn_arg_entry(S, n, 1);
    if (a == e && b != e) {
        *e_first = true;
        return b;
    }
    if (b == e && a != e) {
        *e_first = false;
        return a;
    }
    return -1;
}

static bool is_binary(const rt_json_node *n) {
    const dn_op_row *r = row_of(n);
    return r && r->kind == DN_K_BIN;
}

/* Binary node with a scalar constant operand as an eltwise on e. */
static bool scalar_eltwise(dn_state *S, const rt_json_node *n, int e, dnnl_alg_kind_t *alg, float *alpha,
                           float *beta) {
    if (!is_binary(n)) return false;
    bool first;
    int o = other_operand(S, n, e, &first);
    float c;
    if (o < 0 || !dn_scalar_const(S, o, &c)) return false;
    ir_op_id op = n->op;
    *alg = dnnl_eltwise_linear;
    *alpha = 1.f;
    *beta = 0.f;
    if (op == IR_OP_ADD) *beta = c;
    else if (op == IR_OP_SUBTRACT) {
        *alpha = first ? 1.f : -1.f;
        *beta = first ? -c : c;
    } else if (op == IR_OP_MULTIPLY) *alpha = c;
    else if (op == IR_OP_DIVIDE) {
        if (!first) { /* c / x = c * x^-1 */
            *alg = dnnl_eltwise_pow;
            *alpha = c;
            *beta = -1.f;
        } else if (c == 0.f) {
            return false;
        } else {
            *alpha = 1.f / c;
        }
    } else if (op == IR_OP_POWER) {
        if (!first) return false;
        *alg = dnnl_eltwise_pow;
        *beta = c;
    } else if (op == IR_OP_MAXIMUM) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = c;
        *beta = INFINITY;
    } else if (op == IR_OP_MINIMUM) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = -INFINITY;
        *beta = c;
    } else return false;
    return true;
}

static bool sole_consumer(dn_state *S, int e, const rt_json_node **out) {
    if (S->is_head[e] || S->cons[e].len != 1) return false;
    *out = S->cons[e].data[0];
    return true;
}

static bool near(float a, float b) { return fabsf(a - b) <= 1e-5f * fmaxf(1.f, fabsf(b)); }

static bool hswish_ok(float lo, float hi, float A, float B, float C) {
    /* x * clip(x*A + B, lo, hi) * C == hardswish(x) == x * clip(x/6 + 1/2, 0, 1) when C > 0
     * (C moves into the clip: clip(x*A*C + B*C, lo*C, hi*C)); crossed bounds (lo > hi, with
     * C < 0 the products below still hold) make the clip hi everywhere, another function */
    return lo < hi && C > 0.f && near(lo, 0.f) && near((hi - lo) * C, 1.f) && near(A * C, 1.f / 6.f) &&
           near(B * C, 0.5f);
}

/* The multiply x * y where y is entry `y` and x is e, as y's sole consumer. */
static const rt_json_node *mul_with(dn_state *S, int y, int e) {
    const rt_json_node *next;
    bool f;
    if (!sole_consumer(S, y, &next) || !is_op(next, IR_OP_MULTIPLY) || other_operand(S, next, y, &f) != e) return NULL;
    return next;
}

/* x * f(x) forms starting at consumer n of e: swish (x * sigmoid(x)) and hardswish in the
 * exporters' forms: linears, clip, [scaling], multiply by x, [scaling] -- e.g.
 * x * clip(x + 3, 0, 6) / 6, (x * clip(x + 3, 0, 6)) / 6, x * clip(x / 6 + 1/2, 0, 1).
 * Returns the last node. */
static const rt_json_node *match_xfx(dn_state *S, int e, const rt_json_node *n, dnnl_alg_kind_t *alg,
                                     float *alpha, const rt_json_node **chain, int *nchain) {
    const rt_json_node *cur = n, *next, *m;
    int k = 0;
    chain[k++] = n;
    dnnl_alg_kind_t a1;
    float al, be;
    if (is_op(n, IR_OP_SIGMOID)) {
        if (dn_arg_entry(S, n, 0) != e || !(m = mul_with(S, dn_out_entry(S, n), e))) return NULL;
        chain[k++] = m;
        *alg = dnnl_eltwise_swish;
        *alpha = 1.f;
        *nchain = k;
        return m;
    }
    if (!scalar_eltwise(S, n, e, &a1, &al, &be) || a1 != dnnl_eltwise_linear) return NULL;
    float A = al, B = be, lo, hi, C = 1.f;
    for (;;) {
        if (!sole_consumer(S, dn_out_entry(S, cur), &next) || k >= 4) return NULL;
        if (is_op(next, IR_OP_CLIP)) break;
        if (!scalar_eltwise(S, next, dn_out_entry(S, cur), &a1, &al, &be) || a1 != dnnl_eltwise_linear) return NULL;
        A *= al;
        B = B * al + be;
        cur = next;
        chain[k++] = cur;
    }
    double dlo, dhi;
    if (!dn_arg_num(next, 1, &dlo) || !dn_arg_num(next, 2, &dhi) || dn_arg_entry(S, next, 0) != dn_out_entry(S, cur))
        return NULL;
    lo = (float)dlo;
    hi = (float)dhi;
    cur = next;
    chain[k++] = cur;
    if (!(m = mul_with(S, dn_out_entry(S, cur), e))) {
        if (!sole_consumer(S, dn_out_entry(S, cur), &next) || !scalar_eltwise(S, next, dn_out_entry(S, cur), &a1, &al, &be) ||
            a1 != dnnl_eltwise_linear || be != 0.f)
            return NULL;
        C = al;
        cur = next;
        chain[k++] = cur;
        if (!(m = mul_with(S, dn_out_entry(S, cur), e))) return NULL;
    }
    chain[k++] = m;
    if (!hswish_ok(lo, hi, A, B, C)) {
        /* a scaling after the product */
        if (!sole_consumer(S, dn_out_entry(S, m), &next) || !scalar_eltwise(S, next, dn_out_entry(S, m), &a1, &al, &be) ||
            a1 != dnnl_eltwise_linear || be != 0.f || !hswish_ok(lo, hi, A, B, C * al))
            return NULL;
        m = next;
        chain[k++] = m;
    }
    *alg = dnnl_eltwise_hardswish;
    *alpha = 0.f;
    *nchain = k;
    return m;
}

dnnl_alg_kind_t dn_binary_alg(ir_op_id op, bool *commutes) {
    if (op < 0 || op >= IR_OP_COUNT || !ROWS[op].in_table || ROWS[op].kind != DN_K_BIN) return dnnl_alg_kind_undef;
    dnnl_alg_kind_t alg = ROWS[op].alg;
    if (commutes) *commutes = alg != dnnl_binary_sub && alg != dnnl_binary_div;
    return alg;
}

static bool same_shape(dn_state *S, int a, int b) {
    int nd = dn_entry_ndim(S, a);
    return nd == dn_entry_ndim(S, b) && !memcmp(dn_entry_shape(S, a), dn_entry_shape(S, b), sizeof(int64_t) * (size_t)nd);
}

/* Binary node n of e and a tensor operand that broadcasts to e (e's shape is n's): a binary
 * post-op. */
static bool binary_step(dn_state *S, int e, const rt_json_node *n, dn_step *ps) {
    if (!is_binary(n) || !same_shape(S, e, dn_out_entry(S, n))) return false;
    bool first;
    int o = other_operand(S, n, e, &first);
    if (o < 0 || !dn_entry_f32(S, o) || S->ent_val[o] < 0) return false;
    bool comm;
    dnnl_alg_kind_t alg = dn_binary_alg(n->op, &comm);
    if (alg == dnnl_alg_kind_undef || (!first && !comm)) return false;
    int nd = dn_entry_ndim(S, e), ond = dn_entry_ndim(S, o);
    if (ond > nd) return false;
    const int64_t *os = dn_entry_shape(S, o), *es = dn_entry_shape(S, e);
    for (int k = 0; k < ond; k++)
        if (os[k] != 1 && os[k] != es[nd - ond + k]) return false;
    ps->kind = STEP_BINARY;
    ps->alg = alg;
    ps->src1 = o;
    ps->nnodes = 1;
    ps->nodes[0] = n;
    ps->out = dn_out_entry(S, n);
    return true;
}

/* One post-op step on entry e at consumer n, whatever composite n is in. excl: e must be used
 * only by the step. Every form keeps e's shape: a post-op writes the primitive's dst. */
static bool match_step(dn_state *S, int e, const rt_json_node *n, bool excl, dn_step *ps) {
    memset(ps, 0, sizeof(*ps));
    if (n->kind != RT_JSON_KERNEL || n->noutputs != 1) return false;
    int oe = dn_out_entry(S, n);
    if (!dn_entry_f32(S, oe)) return false;
    const rt_json_node *chain[8];
    int nchain = 0;
    const rt_json_node *last = match_xfx(S, e, n, &ps->alg, &ps->alpha, chain, &nchain);
    if (last) {
        if ((excl && (S->is_head[e] || S->cons[e].len != 2)) || !same_shape(S, e, dn_out_entry(S, last))) return false;
        ps->kind = STEP_ELTWISE;
        ps->nnodes = nchain;
        memcpy(ps->nodes, chain, sizeof(chain[0]) * (size_t)nchain);
        ps->out = dn_out_entry(S, last);
        return true;
    }
    if (excl && (S->is_head[e] || S->cons[e].len != 1)) return false;
    ps->nnodes = 1;
    ps->nodes[0] = n;
    ps->out = oe;
    /* same shape in and out (no broadcast growth of e) */
    if (!same_shape(S, e, oe)) return false;
    if (dn_arg_entry(S, n, 0) == e && unary_of(n, &ps->alg, &ps->alpha, &ps->beta)) {
        ps->kind = STEP_ELTWISE;
        return true;
    }
    if (scalar_eltwise(S, n, e, &ps->alg, &ps->alpha, &ps->beta)) {
        ps->kind = STEP_ELTWISE;
        return true;
    }
    return binary_step(S, e, n, ps);
}

bool dn_match_step(dn_state *S, int e, const rt_json_node *n, bool excl, dn_step *ps) {
    /* nodes of fused composites are built by their composite only */
    if (!match_step(S, e, n, excl, ps)) return false;
    for (int i = 0; i < ps->nnodes; i++)
        if (dn_in_composite(ps->nodes[i])) return false;
    return true;
}

/* Whether oneDNN's eltwise algorithm alg reads alpha / beta (oneDNN 2.6). */
static bool alg_reads(dnnl_alg_kind_t alg, bool beta) {
    switch (alg) {
    case dnnl_eltwise_relu:
    case dnnl_eltwise_swish:
    case dnnl_eltwise_elu: return !beta;
    case dnnl_eltwise_clip_v2:
    case dnnl_eltwise_linear:
    case dnnl_eltwise_pow: return true;
    default: return false;
    }
}

static bool same_step(const dn_step *a, const dn_step *b) {
    if (a->kind != b->kind || a->alg != b->alg || a->out != b->out) return false;
    if (a->kind == STEP_BINARY) return a->src1 == b->src1;
    return (!alg_reads(a->alg, false) || near(a->alpha, b->alpha)) && (!alg_reads(a->alg, true) || near(a->beta, b->beta));
}

/* ELU as the exporters write it: where(x > 0, x, (exp(x) - 1) * alpha), n being one of its
 * nodes that read x; alpha out. The where node, or NULL. */
static const rt_json_node *match_elu(dn_state *S, int e, const rt_json_node *n, float *alpha, const rt_json_node **chain,
                                     int *nchain) {
    if (S->is_head[e] || S->cons[e].len != 3) return NULL;
    const rt_json_node *ex = NULL, *gt = NULL, *wh = NULL, *sb, *mu, *w1, *w2;
    for (uint32_t c = 0; c < 3; c++) {
        const rt_json_node *k = S->cons[e].data[c];
        if (is_op(k, IR_OP_EXP) && dn_arg_entry(S, k, 0) == e) ex = k;
        if (is_op(k, IR_OP_GREATER)) gt = k;
        if (is_op(k, IR_OP_WHERE)) wh = k;
    }
    if (!ex || !gt || !wh || (n != ex && n != gt && n != wh)) return NULL;
    int xe = dn_out_entry(S, ex), ge = dn_out_entry(S, gt);
    float zero, one, a;
    bool first;
    /* x > 0; exp(x) - 1; that times a scalar; where(x > 0, x, ...) the sole reader of both */
    if (dn_arg_entry(S, gt, 0) != e || !dn_scalar_const(S, dn_arg_entry(S, gt, 1), &zero) || zero != 0.f ||
        !sole_consumer(S, xe, &sb) || !is_op(sb, IR_OP_SUBTRACT) || dn_arg_entry(S, sb, 0) != xe ||
        !dn_scalar_const(S, dn_arg_entry(S, sb, 1), &one) || one != 1.f || !sole_consumer(S, dn_out_entry(S, sb), &mu) ||
        !is_op(mu, IR_OP_MULTIPLY) || !dn_scalar_const(S, other_operand(S, mu, dn_out_entry(S, sb), &first), &a) ||
        !sole_consumer(S, ge, &w1) || !sole_consumer(S, dn_out_entry(S, mu), &w2) || w1 != wh || w2 != wh ||
        dn_arg_entry(S, wh, 0) != ge || dn_arg_entry(S, wh, 1) != e || dn_arg_entry(S, wh, 2) != dn_out_entry(S, mu))
        return NULL;
    *alpha = a;
    const rt_json_node *nodes[5] = {gt, ex, sb, mu, wh};
    memcpy(chain, nodes, sizeof nodes);
    *nchain = 5;
    return wh;
}

/* Whether the nodes after entry e compute the annotated step want (a composite's post-op, or
 * one step of it): a step the matchers find from e at a node that `listed` marks (by index),
 * with want's algorithm, parameters, operand and output; a linear step may span a run of
 * linear nodes (a hard-sigmoid's slope and offset). The nodes proved are marked in covered. */
bool dn_step_proved(dn_state *S, int e, const dn_step *want, const bool *listed, bool *covered) {
    const rt_json_node *last = want->out >= 0 ? S->ent_node[want->out].node : NULL;
    if (!last || !dn_entry_f32(S, want->out)) return false;
    dn_step got;
    if (want->kind == STEP_BINARY) {
        if (!listed[last - S->node0] || !binary_step(S, e, last, &got) || !same_step(&got, want)) return false;
        covered[last - S->node0] = true;
        return true;
    }
    if (want->alg == dnnl_eltwise_elu) {
        const rt_json_node *chain[8];
        int nc = 0;
        memset(&got, 0, sizeof got);
        got.kind = STEP_ELTWISE;
        got.alg = dnnl_eltwise_elu;
        for (uint32_t c = 0; c < S->cons[e].len && !got.nnodes; c++) {
            const rt_json_node *w = match_elu(S, e, S->cons[e].data[c], &got.alpha, chain, &nc);
            if (!w || !same_shape(S, e, dn_out_entry(S, w))) continue;
            got.out = dn_out_entry(S, w);
            got.nnodes = nc;
            memcpy(got.nodes, chain, sizeof(chain[0]) * (size_t)nc);
        }
        for (int i = 0; i < got.nnodes; i++)
            if (!listed[got.nodes[i] - S->node0]) return false;
        if (!got.nnodes || !same_step(&got, want)) return false;
        for (int i = 0; i < got.nnodes; i++) covered[got.nodes[i] - S->node0] = true;
        return true;
    }
    /* linear runs are composed as dn_collect_chain does (x * a + b, then * a2 + b2) */
    dn_step acc = {0};
    for (int hop = 0; hop < 8; hop++) {
        bool found = false;
        for (uint32_t c = 0; c < S->cons[e].len && !found; c++) {
            const rt_json_node *k = S->cons[e].data[c];
            if (!listed[k - S->node0] || !match_step(S, e, k, false, &got) || got.kind != STEP_ELTWISE) continue;
            bool ok = true;
            for (int i = 0; i < got.nnodes; i++) ok &= listed[got.nodes[i] - S->node0];
            if (!ok) continue;
            if (hop) {
                if (got.alg != dnnl_eltwise_linear || acc.alg != dnnl_eltwise_linear) continue;
                got.beta = got.alpha * acc.beta + got.beta;
                got.alpha *= acc.alpha;
            }
            if (same_step(&got, want) || (got.alg == dnnl_eltwise_linear && want->alg == dnnl_eltwise_linear)) {
                found = true;
                for (int i = 0; i < got.nnodes; i++) covered[got.nodes[i] - S->node0] = true;
                acc = got;
            }
        }
        if (!found) return false;
        if (acc.out == want->out) return same_step(&acc, want);
        /* only a linear step continues, through nodes no one else reads */
        if (S->is_head[acc.out] || S->cons[acc.out].len != 1) return false;
        e = acc.out;
    }
    return false;
}

/* oneDNN 2.6's jit post-op injector keeps one eltwise injector per algorithm (a map keyed by
 * it), so a later eltwise post-op of an algorithm already in the chain runs with the first
 * one's alpha and beta (generator seed 13066: a reduction's min-with-c1 and max-with-c2, both
 * clip_v2, gave min(x, c1); a binary add, leaky relu, relu kept the leaky slope). True when
 * the first k steps hold no two eltwise ones of an algorithm with parameters it reads that
 * differ. */
bool dn_eltwise_algs_distinct(const dn_step *steps, int k) {
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i && steps[i].kind == STEP_ELTWISE; j++)
            if (steps[j].kind == STEP_ELTWISE && steps[j].alg == steps[i].alg &&
                ((alg_reads(steps[i].alg, false) && steps[j].alpha != steps[i].alpha) ||
                 (alg_reads(steps[i].alg, true) && steps[j].beta != steps[i].beta)))
                return false;
    return true;
}

/* The longest chain of exclusive post-op steps after entry e (at most max). */
int dn_collect_chain(dn_state *S, int e, dn_step *steps, int max) {
    int k = 0;
    while (k < max) {
        if (S->is_head[e]) break;
        bool ok = false;
        for (uint32_t c = 0; c < S->cons[e].len && !ok; c++)
            ok = dn_match_step(S, e, S->cons[e].data[c], true, &steps[k]);
        if (!ok) break;
        /* linear after linear: one post-op */
        bool merges = k && steps[k].kind == STEP_ELTWISE && steps[k - 1].kind == STEP_ELTWISE &&
                      steps[k].alg == dnnl_eltwise_linear && steps[k - 1].alg == dnnl_eltwise_linear &&
                      steps[k - 1].nnodes + steps[k].nnodes <= 8;
        const dn_step *q = &steps[k];
        dn_step m = *q;
        if (merges) {
            const dn_step *p = &steps[k - 1];
            m = *p;
            m.beta = q->alpha * p->beta + q->beta;
            m.alpha = q->alpha * p->alpha;
            memcpy(m.nodes + m.nnodes, q->nodes, sizeof(q->nodes[0]) * (size_t)q->nnodes);
            m.nnodes += q->nnodes;
            m.out = q->out;
        }
        /* and no eltwise step of an algorithm already in the chain with other parameters
         * (dn_eltwise_algs_distinct: oneDNN would run it with the earlier one's) */
        int at = merges ? k - 1 : k;
        dn_step keep = steps[at];
        steps[at] = m;
        if (!dn_eltwise_algs_distinct(steps, at + 1)) {
            steps[at] = keep;
            break;
        }
        e = m.out;
        if (merges) continue;
        k++;
    }
    return k;
}

/* src1 md of a binary step for a dst of nd dims (plain expanded when ranks differ). */
gr_status dn_step_src1(dn_state *S, const rt_json_node *n, const dn_step *st, int nd, int *val,
                       dnnl_memory_desc_t *md) {
    int v = S->ent_val[st->src1];
    const int64_t *os = dn_entry_shape(S, st->out);
    bool bcast = S->vals.data[v].md.ndims != nd; /* a 0-d operand too */
    for (int i = 0; i < nd && !bcast; i++) bcast = S->vals.data[v].md.dims[i] != os[i];
    /* broadcast operands go plain (oneDNN's binary kernels want them so) */
    if (!bcast) {
        *val = v;
        *md = S->vals.data[v].md;
        return GR_OK;
    }
    gr_status r = dn_plain(S, n, v, &v);
    if (r) return r;
    dn_plain_expand(md, &S->vals.data[v].md, nd);
    *val = v;
    return GR_OK;
}

static bool full_shape(dn_state *S, const dn_step *st) {
    int nd = dn_entry_ndim(S, st->src1);
    return nd == dn_entry_ndim(S, st->out) &&
           !memcmp(dn_entry_shape(S, st->src1), dn_entry_shape(S, st->out), sizeof(int64_t) * (size_t)nd);
}

/* Builds attrs with user scratchpad and the first k steps as post-ops; binary src1 args
 * appended to args. */
gr_status dn_make_attr(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int nd,
                       dnnl_primitive_attr_t *attr, dn_arg *args, int *nargs) {
    dnnl_primitive_attr_create(attr);
    dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    S->pending_sum = -1;
    S->ftz = !S->opts.denormals;
    if (S->out_scale != 0.f) dnnl_primitive_attr_set_output_scales(*attr, 1, 0, &S->out_scale);
    if (!k) return GR_OK;
    dnnl_post_ops_t po;
    dnnl_post_ops_create(&po);
    for (int i = 0; i < k; i++) {
        if (steps[i].kind == STEP_ELTWISE) {
            dnnl_post_ops_append_eltwise(po, 1.f, steps[i].alg, steps[i].alpha, steps[i].beta);
        } else if (S->sum_ok && S->pending_sum < 0 && steps[i].alg == dnnl_binary_add && full_shape(S, &steps[i])) {
            /* a residual add of a full tensor: the sum post-op (dst preloaded with it, in the
             * dst's own layout), so oneDNN keeps its blocked kernels */
            dnnl_post_ops_append_sum(po, 1.f);
            S->pending_sum = steps[i].src1;
        } else {
            int v;
            dnnl_memory_desc_t md;
            gr_status st = dn_step_src1(S, n, &steps[i], nd, &v, &md);
            if (st) {
                dnnl_post_ops_destroy(po);
                return st;
            }
            dnnl_post_ops_append_binary(po, steps[i].alg, &md);
            args[(*nargs)++] = (dn_arg){DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, v, md, NULL};
        }
    }
    dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return GR_OK;
}

/* Marks the nodes of the first k steps as folded. */
void dn_consume(dn_state *S, const dn_step *steps, int k) {
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < steps[i].nnodes; j++) {
            S->consumed[steps[i].nodes[j] - S->node0] = true;
            S->stats.nfused_nodes++;
            gr_vec_push(&S->pend, steps[i].nodes[j]);
        }
        /* a composite's steps name only their output: its producer is the node computed */
        if (!steps[i].nnodes && steps[i].out >= 0) gr_vec_push(&S->pend, S->ent_node[steps[i].out].node);
    }
    S->stats.npostops += (uint32_t)k;
}
