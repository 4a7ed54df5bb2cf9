/* MergeSiblings: 1x1 convolutions (and, with the pass config "ir.merge_sibling_matmuls", matmuls)
 * with constant weights that read the same input with the same attributes run as one with their
 * weights (and bias adds) concatenated along the output channel axis, and a split hands each
 * consumer its slice: GoogLeNet's inception blocks (the two reducing 1x1 convolutions on the
 * block input), attention written as separate q / k / v Linear layers. One wide product reads
 * the shared input once and keeps the vector units busier than several narrow ones.
 *
 * Siblings: conv2d(x, W_i) with the same x, attrs and dtypes, 1x1 kernels, groups 1, NCHW/OIHW,
 * W_i constant; or matmul(x, W_i) with W_i a constant matrix (K, N_i). Each sibling's epilogue is
 * the chain of single-use ops after it: adds of a constant bias that varies along the output
 * channels only, and unary activations. A sibling whose result a concat alone reads stays out
 * (see below). Siblings merge only when their epilogues are the same sequence (same ops, same
 * attrs); the merged product then carries the merged epilogue (the biases concatenated) and the
 * backends fuse it as before. Siblings whose epilogues differ form
 * separate groups: a per-slice epilogue after the split would split a fused post-op chain.
 *
 * What pays (oneDNN backend, Sapphire Rapids, per-primitive medians of `graft run --profile`):
 *   - googlenet's inception 1x1s on the block input: the slices are views of the blocked
 *     result (dn_op_split). All three merged (27 as 9): 3.92 -> 3.68 ms at 1 thread, 2.15-2.50
 *     -> 1.99-2.13 at 2, 3.50-3.71 -> 3.21-3.57 under ONEDNN_MAX_CPU_ISA=AVX2, but the first
 *     branch's slice, which the block's concat reads, is then copied into its slot (+0.05 ms
 *     native, +0.11-0.14 AVX2 for the 9 blocks). Without that branch (a sibling a concat alone
 *     reads stays: its conv writes its slot in place), 1 thread, 1x1s and reorders, three
 *     rounds on a loaded machine: 5.07 / 5.41 / 5.12 ms unmerged, 5.35 / 5.17 / 5.01 all three
 *     merged, 5.07 / 4.84 / 4.57 the two reductions merged; AVX2 6.50 / 7.69 / 7.19, 7.89 /
 *     7.13 / 7.42, 7.46 / 6.76 / 7.11.
 *   - Larger kernels are not merged: not measured, and oneDNN picks Winograd per convolution by
 *     its channel counts, which a merge changes.
 *   - Matmuls are off by default: a BERT-like block with separate q / k / v Linear layers
 *     (seq 128, hidden 256, 4 layers) runs its projections merged in the same time (1.24 vs 1.21
 *     ms at 1 thread, 0.65-0.73 vs 0.70 at 2), and natively attention then copies its q, k, v
 *     slices (brgemm takes no views whose rows lie 3 H apart: +0.11 ms at 1 thread, +0.18 at
 *     2); bert_encoder under AVX2 2.90 -> 3.17-3.25 ms. The config turns them on (the dnnl
 *     generator tests do, for the backend's slices of merged matmuls).
 *
 * Order: the merged op lists the siblings whose width is a multiple of 16 first, then those of 8,
 * then at most one other (a group takes no second one), so that in a channel-blocked layout (8
 * or 16 channels a block) every slice but the last starts on a block and is a view of the merged
 * result (backends/dnnl: dn_op_split); a slice off the blocks would be a copy.
 *
 * Spans: the merged product and each merged epilogue op carry the SequentialSpan of the ops they
 * replace, without output marks; the split carries every sibling's; each sibling's last var is
 * rebound to its slice (a TupleGetItem) with the span of the value it had, so the layer whose
 * output it was still owns it. The replaced bindings are dropped. */
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

#define SIB_MAX_STEPS 4
#define SIB_MAX_GROUP 16

typedef struct sib_member {
    const ir_binding *root;                 /* the conv / matmul */
    const ir_binding *steps[SIB_MAX_STEPS]; /* its epilogue, in order */
    int nsteps;
    int64_t width;                          /* output channels / columns */
    int group;                              /* -1: not merged */
} sib_member;

typedef struct sib_group {
    int members[SIB_MAX_GROUP];             /* in the merged op's channel order */
    int n;
    const ir_binding *first;                /* the member binding met first: the merged op goes there */
    ir_var *parts;                          /* the split, once emitted */
} sib_group;

typedef struct sib_state {
    bool matmuls;                           /* IR_CONFIG_MERGE_SIBLING_MATMULS */
    GR_VEC(sib_member) members;
    GR_VEC(sib_group) groups;
    gr_map role;                            /* binding var -> (member << 8) | (1 + step), 0 = root */
} sib_state;

/* Unary ops an epilogue may hold (elementwise, one tensor argument). */
static const ir_op_id UNARY_STEPS[] = {
    IR_OP_RELU, IR_OP_RELU6, IR_OP_LEAKYRELU, IR_OP_SIGMOID, IR_OP_TANH, IR_OP_GELU, IR_OP_GELU_TANH, IR_OP_SILU,
};

static bool str_is(const ir_attrs *a, const char *key, const char *want) {
    const char *s = ir_attrs_get_str(a, key);
    return !s || strcmp(s, want) == 0;
}

static const rt_tensor *const_of(const ir_expr *e) {
    return e && e->kind == IR_CONST ? ((const ir_const *)e)->data : NULL;
}

static bool float_tensor(const ir_expr *e) {
    const ir_sinfo *s = e ? e->sinfo : NULL;
    return s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && ir_dtype_is_float(s->dtype);
}

/* The channel axis of a product's result (-1: not a sibling candidate) and its width. */
static int product_axis(const ir_call *c, bool matmuls, int64_t *width) {
    if (!c || c->nargs != 2 || !float_tensor(c->args[0]) || !float_tensor(&c->base)) return -1;
    const rt_tensor *w = const_of(c->args[1]);
    if (!w || w->dl.dtype.code != kDLFloat) return -1;
    if (ir_op_id_of(&c->base) == IR_OP_CONV2D) {
        if (w->dl.ndim != 4 || w->shape[2] != 1 || w->shape[3] != 1 || ir_attrs_get_int(c->attrs, "groups", 1) != 1 ||
            !str_is(c->attrs, "data_layout", "NCHW") || !str_is(c->attrs, "kernel_layout", "OIHW") ||
            !str_is(c->attrs, "out_layout", "NCHW") || c->base.sinfo->ndim != 4)
            return -1;
        *width = w->shape[0];
        return 1;
    }
    if (!matmuls || w->dl.ndim != 2 || c->args[0]->sinfo->ndim < 1 || c->base.sinfo->ndim < 1) return -1;
    *width = w->shape[1];
    return c->base.sinfo->ndim - 1;
}

/* A bias constant of an add after a product whose result has rank nd and `width` channels on
 * `axis`: every dim 1 but the one on the axis, and no wider rank than the result. */
static bool channel_bias(const ir_expr *e, int nd, int axis, int64_t width) {
    const rt_tensor *t = const_of(e);
    if (!t || t->dl.ndim > nd || t->dl.ndim < nd - axis || t->dl.dtype.code != kDLFloat) return false;
    for (int j = 0; j < t->dl.ndim; j++)
        if (t->shape[j] != (nd - t->dl.ndim + j == axis ? width : 1)) return false;
    return true;
}

/* The bias operand of epilogue add c reading v (NULL: c is not one). */
static ir_expr *bias_of(const ir_call *c, const ir_expr *v, int nd, int axis, int64_t width) {
    if (ir_op_id_of(&c->base) != IR_OP_ADD || c->nargs != 2 || !c->base.sinfo || c->base.sinfo->ndim != nd) return NULL;
    for (int i = 0; i < 2; i++)
        if (c->args[i] == v && c->args[1 - i] != v && channel_bias(c->args[1 - i], nd, axis, width)) return c->args[1 - i];
    return NULL;
}

static bool unary_step(const ir_call *c, const ir_expr *v) {
    ir_op_id op = ir_op_id_of(&c->base);
    for (size_t i = 0; i < sizeof(UNARY_STEPS) / sizeof(UNARY_STEPS[0]); i++)
        if (op == UNARY_STEPS[i]) return c->nargs == 1 && c->args[0] == v;
    return false;
}

/* Two members merge: same op, input, attrs, weight shape but for the width, dtypes, epilogue. */
static bool same_kind(const sib_member *a, const sib_member *b) {
    const ir_call *x = (const ir_call *)a->root->value, *y = (const ir_call *)b->root->value;
    const rt_tensor *wx = const_of(x->args[1]), *wy = const_of(y->args[1]);
    if (x->callee != y->callee || x->args[0] != y->args[0] || !pu_attrs_equal(x->attrs, y->attrs) ||
        !ir_dtype_eq(wx->dl.dtype, wy->dl.dtype) || !ir_dtype_eq(x->base.sinfo->dtype, y->base.sinfo->dtype) ||
        a->nsteps != b->nsteps)
        return false;
    int od = ir_op_id_of(&x->base) == IR_OP_CONV2D ? 0 : 1;
    for (int d = 0; d < wx->dl.ndim; d++)
        if (d != od && wx->shape[d] != wy->shape[d]) return false;
    for (int k = 0; k < a->nsteps; k++) {
        const ir_call *s = (const ir_call *)a->steps[k]->value, *t = (const ir_call *)b->steps[k]->value;
        if (s->callee != t->callee || !pu_attrs_equal(s->attrs, t->attrs)) return false;
        if (ir_op_id_of(&s->base) == IR_OP_ADD) {
            const rt_tensor *bs = const_of(s->args[0]) ? const_of(s->args[0]) : const_of(s->args[1]);
            const rt_tensor *bt = const_of(t->args[0]) ? const_of(t->args[0]) : const_of(t->args[1]);
            if (bs->dl.ndim != bt->dl.ndim || !ir_dtype_eq(bs->dl.dtype, bt->dl.dtype)) return false;
        }
    }
    return true;
}

/* ---- planning (prepare): members and groups of the function's top-level blocks ---- */

static void plan_block(pu_rewriter *r, sib_state *st, const ir_block *blk) {
    /* var -> 1 + index of the binding of this block reading it (0 when none here) */
    gr_map user, concat_src;   /* concat_src: vars a concat of this block reads in its tuple */
    gr_map_init(&user);
    gr_map_init(&concat_src);
    for (uint32_t i = 0; i < blk->n; i++) {
        const ir_expr *v = blk->bindings[i].value;
        if (v->kind != IR_CALL) continue;
        const ir_call *c = (const ir_call *)v;
        for (uint32_t a = 0; a < c->nargs; a++)
            if (ir_is_var(c->args[a])) gr_map_put(&user, GR_MAP_PTR(c->args[a]), i + 1);
        if (ir_op_id_of(v) == IR_OP_CONCAT && c->nargs == 1 && c->args[0]->kind == IR_TUPLE)
            for (uint32_t f = 0; f < ((const ir_tuple *)c->args[0])->n; f++)
                gr_map_put(&concat_src, GR_MAP_PTR(((const ir_tuple *)c->args[0])->fields[f]), 1);
    }
    uint32_t base = st->members.len;
    for (uint32_t i = 0; i < blk->n; i++) {
        const ir_binding *b = &blk->bindings[i];
        ir_op_id op = ir_op_id_of(b->value);
        if (b->match_sinfo || (op != IR_OP_CONV2D && op != IR_OP_MATMUL)) continue;
        sib_member m = {.root = b, .group = -1};
        int axis = product_axis((const ir_call *)b->value, st->matmuls, &m.width);
        if (axis < 0 || !ir_is_var(((const ir_call *)b->value)->args[0])) continue;
        int nd = b->value->sinfo->ndim;
        /* the epilogue: single-use dataflow vars, each read by the next step */
        const ir_binding *cur = b;
        while (m.nsteps < SIB_MAX_STEPS && cur->var->base.kind == IR_DFVAR &&
               gr_map_get_or(&r->uses, GR_MAP_PTR(cur->var), 0) == 1) {
            uint32_t u = (uint32_t)gr_map_get_or(&user, GR_MAP_PTR(cur->var), 0);
            if (!u || blk->bindings[u - 1].match_sinfo || blk->bindings[u - 1].value->kind != IR_CALL) break;
            const ir_call *c = (const ir_call *)blk->bindings[u - 1].value;
            if (!bias_of(c, &cur->var->base, nd, axis, m.width) && !unary_step(c, &cur->var->base)) break;
            cur = m.steps[m.nsteps++] = &blk->bindings[u - 1];
        }
        /* read by a concat alone: its producer writes its slot of the concat in place, where
         * as a slice it would be copied there */
        if (gr_map_get_or(&r->uses, GR_MAP_PTR(cur->var), 0) == 1 && gr_map_get(&concat_src, GR_MAP_PTR(cur->var), NULL)) continue;
        gr_vec_push(&st->members, m);
    }
    for (uint32_t i = base; i < st->members.len; i++) {
        if (st->members.data[i].group >= 0) continue;
        sib_group g = {.n = 0};
        int odd = 0;   /* members whose width is no multiple of 8: one a group, the last slice */
        for (uint32_t j = i; j < st->members.len && g.n < SIB_MAX_GROUP; j++) {
            const sib_member *m = &st->members.data[j];
            if (m->group >= 0 || !same_kind(&st->members.data[i], m) || (m->width % 8 && odd)) continue;
            odd += m->width % 8 != 0;
            g.members[g.n++] = (int)j;
        }
        if (g.n < 2) continue;
        /* widths that are multiples of 16 first, then of 8, then the odd one: every slice but
         * the last starts on a channel block; order kept otherwise */
        int sorted[SIB_MAX_GROUP], k = 0;
        for (int cls = 0; cls < 3; cls++)
            for (int j = 0; j < g.n; j++) {
                int64_t w = st->members.data[g.members[j]].width;
                if ((w % 16 == 0 ? 0 : w % 8 == 0 ? 1 : 2) == cls) sorted[k++] = g.members[j];
            }
        memcpy(g.members, sorted, sizeof(sorted[0]) * (size_t)g.n);
        g.first = st->members.data[i].root;
        for (int j = 0; j < g.n; j++) {
            sib_member *m = &st->members.data[g.members[j]];
            m->group = (int)st->groups.len;
            uint64_t id = (uint64_t)g.members[j] << 8;
            gr_map_put(&st->role, GR_MAP_PTR(m->root->var), id);
            for (int s = 0; s < m->nsteps; s++) gr_map_put(&st->role, GR_MAP_PTR(m->steps[s]->var), id | (uint64_t)(s + 1));
        }
        gr_vec_push(&st->groups, g);
    }
    gr_map_free(&user);
    gr_map_free(&concat_src);
}

static bool sib_prepare(pu_rewriter *r, ir_pass_ctx_t *pc, const ir_module *mod, const ir_func *func) {
    (void)mod;
    sib_state *st = r->user;
    gr_map_init(&st->role);
    st->matmuls = ir_pass_ctx_config_bool(pc, IR_CONFIG_MERGE_SIBLING_MATMULS);
    if (!func->body || func->body->kind != IR_SEQ) return false;
    const ir_seq *seq = (const ir_seq *)func->body;
    for (uint32_t i = 0; i < seq->nblocks; i++) plan_block(r, st, seq->blocks[i]);
    return st->groups.len > 0;
}

static void sib_release(void *p) {
    sib_state *st = p;
    gr_vec_free(&st->members);
    gr_vec_free(&st->groups);
    gr_map_free(&st->role);
}

/* ---- the rewrite ---- */

/* The constants ts[0..n) concatenated along `axis` (all other dims equal): a new tensor. */
static rt_tensor *concat_consts(const rt_tensor *const *ts, int n, int axis) {
    const rt_tensor *t0 = ts[0];
    int64_t shape[RT_MAX_NDIM], outer = 1, total = 0;
    memcpy(shape, t0->shape, sizeof(int64_t) * (size_t)t0->dl.ndim);
    for (int d = 0; d < axis; d++) outer *= shape[d];
    for (int i = 0; i < n; i++) total += ts[i]->shape[axis];
    shape[axis] = total;
    rt_tensor *out = rt_tensor_new(t0->dl.dtype, t0->dl.ndim, shape);
    if (!out) return NULL;
    size_t row = rt_tensor_nbytes(out) / (size_t)(outer ? outer : 1), at = 0;
    for (int i = 0; i < n; i++) {
        size_t piece = rt_tensor_nbytes(ts[i]) / (size_t)(outer ? outer : 1);
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)rt_tensor_data(out) + (size_t)o * row + at, (const char *)rt_tensor_data(ts[i]) + (size_t)o * piece, piece);
        at += piece;
    }
    return out;
}

/* The bias constant of member m's epilogue step k. */
static const ir_expr *step_bias(const sib_member *m, int k) {
    const ir_call *c = (const ir_call *)m->steps[k]->value;
    return const_of(c->args[1]) ? c->args[1] : c->args[0];
}

/* The SequentialSpan of the values and vars of the bindings at `at` (-1: the root) of the
 * group's members, without output marks. */
static const ir_span *merged_span(pu_rewriter *r, const sib_state *st, const sib_group *g, int at) {
    const ir_expr *nodes[2 * SIB_MAX_GROUP];
    for (int j = 0; j < g->n; j++) {
        const sib_member *m = &st->members.data[g->members[j]];
        const ir_binding *b = at < 0 ? m->root : m->steps[at];
        nodes[2 * j] = b->value;
        nodes[2 * j + 1] = &b->var->base;
    }
    return ir_span_with_output(r->ctx, ir_si_collapse_nodes(r->ctx, nodes, (uint32_t)(2 * g->n)), false);
}

/* A new constant: the group's member tensors (weights: from the root's arg 1; biases: step k's
 * bias) concatenated along axis, with the SequentialSpan of theirs. */
static ir_expr *merged_const(pu_rewriter *r, const sib_state *st, const sib_group *g, int step, int axis) {
    const rt_tensor *ts[SIB_MAX_GROUP] = {0};
    const ir_span *spans[SIB_MAX_GROUP];
    for (int j = 0; j < g->n; j++) {
        const sib_member *m = &st->members.data[g->members[j]];
        const ir_expr *e = step < 0 ? ((const ir_call *)m->root->value)->args[1] : step_bias(m, step);
        ts[j] = const_of(e);
        spans[j] = e->span;
    }
    rt_tensor *t = concat_consts(ts, g->n, axis);
    if (!t) {
        gr_diag_set(r->diag, GR_ERR_NOMEM, "MergeSiblings: out of memory");
        return NULL;
    }
    ir_expr *c = &ir_const_new(r->ctx, t, ir_span_seq(r->ctx, spans, (uint32_t)g->n))->base;
    rt_tensor_release(t);
    return c;
}

/* Emits the group's merged product, epilogue and split at the first member's binding; value is
 * that binding's value with remapped vars substituted (its input as the rewrite sees it). */
static bool emit_group(pu_rewriter *r, sib_state *st, sib_group *g, ir_expr *value) {
    const sib_member *m0 = &st->members.data[g->members[0]];
    const ir_call *p0 = (const ir_call *)m0->root->value;
    bool conv = ir_op_id_of(&p0->base) == IR_OP_CONV2D;
    int nd = p0->base.sinfo->ndim, axis = conv ? 1 : nd - 1;
    ir_expr *w = merged_const(r, st, g, -1, conv ? 0 : 1);
    if (!w) return false;
    ir_expr *args[2] = {((ir_call *)value)->args[0], w};
    ir_expr *cur = &ir_call_new(r->ctx, p0->callee, 2, args, p0->attrs, 0, NULL, merged_span(r, st, g, -1))->base;
    for (int k = 0; k < m0->nsteps; k++) {
        const ir_call *s = (const ir_call *)m0->steps[k]->value;
        const ir_span *sp = merged_span(r, st, g, k);
        if (ir_op_id_of(&s->base) == IR_OP_ADD) {
            const rt_tensor *b0 = const_of(step_bias(m0, k));
            ir_expr *b = merged_const(r, st, g, k, axis - (nd - b0->dl.ndim));
            if (!b) return false;
            ir_expr *aargs[2] = {cur, b};
            cur = &ir_call_new(r->ctx, s->callee, 2, aargs, s->attrs, 0, NULL, sp)->base;
        } else {
            cur = &ir_call_new(r->ctx, s->callee, 1, &cur, s->attrs, 0, NULL, sp)->base;
        }
    }
    int64_t idx[SIB_MAX_GROUP], at = 0;
    const ir_expr *ends[SIB_MAX_GROUP];
    for (int j = 0; j < g->n; j++) {
        const sib_member *m = &st->members.data[g->members[j]];
        idx[j] = at += m->width;
        ends[j] = m->nsteps ? m->steps[m->nsteps - 1]->value : m->root->value;
    }
    const char *keys[2] = {"indices_or_sections", "axis"};
    ir_attr vals[2] = {ir_attr_ints(r->ctx, (uint32_t)(g->n - 1), idx), ir_attr_int(axis)};
    const ir_span *ssp = ir_span_with_output(r->ctx, ir_si_collapse_nodes(r->ctx, ends, (uint32_t)g->n), false);
    ir_expr *split = pu_call(r, IR_OP_SPLIT, 1, &cur, 2, keys, vals, ssp);
    return split && (g->parts = pu_emit_nested(r, NULL, split, "sib")) != NULL;
}

static bool sib_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    sib_state *st = r->user;
    uint64_t role;
    if (!gr_map_get(&st->role, GR_MAP_PTR(b->var), &role)) {
        pu_push(r, b->var, value, b->match_sinfo);
        return true;
    }
    const sib_member *m = &st->members.data[role >> 8];
    sib_group *g = &st->groups.data[m->group];
    if (g->first->var == b->var && !emit_group(r, st, g, value)) return false;
    int step = (int)(role & 0xff) - 1;   /* -1: the root */
    if (step != m->nsteps - 1) return true;   /* inside the chain: dropped */
    int j = 0;
    while (g->members[j] != (int)(role >> 8)) j++;
    ir_expr *slice = pu_normalize(r, &ir_tgi_new(r->ctx, &g->parts->base, j, value->span)->base);
    return slice && pu_push(r, b->var, slice, NULL);
}

PU_FUNC_PASS(ir_pass_merge_siblings, "MergeSiblings", 2, .binding = sib_binding, .count_uses = true,
             .state_size = sizeof(sib_state), .prepare = sib_prepare, .release = sib_release);
