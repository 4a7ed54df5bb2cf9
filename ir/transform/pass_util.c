/* The binding rewriter shared by the generic passes (see ir/transform/pass_impl.h). */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "base/tensor.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/transform_impl.h"

void pu_init(pu_rewriter *r, ir_ctx_t *ctx, gr_diag *diag) {
    memset(r, 0, sizeof(*r));
    r->ctx = ctx;
    r->diag = diag;
    gr_map_init(&r->remap);
    gr_map_init(&r->defs);
    gr_map_init(&r->uses);
    gr_map_init(&r->out_pos);
}

void pu_deinit(pu_rewriter *r) {
    gr_map_free(&r->remap);
    gr_map_free(&r->defs);
    gr_map_free(&r->uses);
    gr_map_free(&r->out_pos);
    gr_vec_free(&r->pending);
}

void pu_finish(pu_rewriter *r, ir_pass_ctx_t *pc) {
    ir__pass_ctx_note_remap(pc, &r->remap);
    pu_deinit(r);
}

static ir_expr *keep_sinfo(const ir_expr *old, ir_expr *nw) {
    if (old->sinfo && !nw->sinfo) ir_expr_set_sinfo(nw, old->sinfo);
    return nw;
}

static ir_expr *rewrite_seq(pu_rewriter *r, ir_seq *seq);
static void flush_pending(pu_rewriter *r, uint32_t base);

/* Substitutes an array; a heap copy when something changed, else NULL. */
static ir_expr **subst_array(pu_rewriter *r, ir_expr *const *xs, uint32_t n) {
    ir_expr **out = NULL;
    for (uint32_t i = 0; i < n; i++) {
        ir_expr *nx = pu_subst(r, xs[i]);
        if (nx != xs[i] && !out) {
            out = gr_xmalloc(sizeof(*out) * n);
            memcpy(out, xs, sizeof(*out) * n);
        }
        if (out) out[i] = nx;
    }
    return out;
}

ir_expr *pu_subst(pu_rewriter *r, ir_expr *e) {
    if (!e) return e;
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR: case IR_DFVAR: {
        uint64_t v;
        if (gr_map_get(&r->remap, GR_MAP_PTR(e), &v)) return (ir_expr *)(uintptr_t)v;
        return e;
    }
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        ir_expr *callee = ir_is_var(c->callee) ? pu_subst(r, c->callee) : c->callee;
        ir_expr **args = subst_array(r, c->args, c->nargs);
        if (!args && callee == c->callee) return e;
        ir_call *nc = ir_call_new(r->ctx, callee, c->nargs, args ? args : c->args, c->attrs,
                                  c->nsinfo_args, c->sinfo_args, e->span);
        free(args);
        return keep_sinfo(e, &nc->base);
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        ir_expr **fs = subst_array(r, t->fields, t->n);
        if (!fs) return e;
        ir_tuple *nt = ir_tuple_new(r->ctx, t->n, fs, e->span);
        free(fs);
        return keep_sinfo(e, &nt->base);
    }
    case IR_TGI: {
        ir_tgi *g = (ir_tgi *)e;
        ir_expr *t = pu_subst(r, g->tuple);
        if (t == g->tuple) return e;
        return keep_sinfo(e, &ir_tgi_new(r->ctx, t, g->index, e->span)->base);
    }
    case IR_IF: {
        ir_if *f = (ir_if *)e;
        ir_expr *c = pu_subst(r, f->cond), *t = pu_subst(r, f->then_branch),
                *el = pu_subst(r, f->else_branch);
        if (!t || !el) return NULL;
        if (c == f->cond && t == f->then_branch && el == f->else_branch) return e;
        return keep_sinfo(e, &ir_if_new(r->ctx, c, t, el, e->span)->base);
    }
    case IR_SEQ: return rewrite_seq(r, (ir_seq *)e);
    case IR_FUNC: {
        ir_func *f = (ir_func *)e;
        ir_expr *body = pu_subst(r, f->body);
        if (!body) return NULL;
        if (body == f->body) return e;
        ir_func *nf = ir_func_new(r->ctx, f->nparams, f->params, body, f->ret_sinfo, f->attrs, e->span);
        return keep_sinfo(e, &nf->base);
    }
    default: return e;
    }
}

ir_var *pu_push(pu_rewriter *r, ir_var *var, ir_expr *value, const ir_sinfo *match_sinfo) {
    ir_binding b = {var, value, match_sinfo};
    gr_vec_push(r->out, b);
    gr_map_put(&r->defs, GR_MAP_PTR(var), GR_MAP_PTR(value));
    pu_note_pos(r, var);
    return var;
}

ir_expr *pu_normalize(pu_rewriter *r, ir_expr *e) {
    if (e->sinfo) return e;
    return ir_normalize(r->ctx, e, r->diag);
}

static ir_var *fresh_var(pu_rewriter *r, const char *hint, const ir_expr *value) {
    return r->dataflow ? ir_dfvar_new(r->ctx, hint, value->sinfo, value->span)
                       : ir_var_new(r->ctx, hint, value->sinfo, value->span);
}

/* Binds the non-leaf children of e first; returns e with leaf children (normalized). */
static ir_expr *flatten(pu_rewriter *r, ir_expr *e, const char *hint) {
    if (ir_is_leaf(e)) return e;
    ir_expr **kids = NULL;
    ir_expr *const *src = NULL;
    uint32_t n = 0;
    if (e->kind == IR_CALL) src = ((ir_call *)e)->args, n = ((ir_call *)e)->nargs;
    else if (e->kind == IR_TUPLE) src = ((ir_tuple *)e)->fields, n = ((ir_tuple *)e)->n;
    for (uint32_t i = 0; i < n; i++) {
        if (ir_is_leaf(src[i])) continue;
        ir_expr *flat = flatten(r, src[i], hint);
        if (!flat || !(flat = pu_normalize(r, flat))) {
            free(kids);
            return NULL;
        }
        ir_var *v = fresh_var(r, hint, flat);
        v = pu_push(r, v, flat, NULL);
        if (!kids) {
            kids = gr_xmalloc(sizeof(*kids) * n);
            memcpy(kids, src, sizeof(*kids) * n);
        }
        kids[i] = &v->base;
    }
    if (e->kind == IR_TGI && !ir_is_leaf(((ir_tgi *)e)->tuple)) {
        ir_tgi *g = (ir_tgi *)e;
        ir_expr *flat = flatten(r, g->tuple, hint);
        if (!flat || !(flat = pu_normalize(r, flat))) return NULL;
        ir_var *v = pu_push(r, fresh_var(r, hint, flat), flat, NULL);
        e = &ir_tgi_new(r->ctx, &v->base, g->index, e->span)->base;
    }
    if (kids) {
        if (e->kind == IR_CALL) {
            ir_call *c = (ir_call *)e;
            e = &ir_call_new(r->ctx, c->callee, n, kids, c->attrs, c->nsinfo_args, c->sinfo_args,
                             e->span)->base;
        } else {
            e = &ir_tuple_new(r->ctx, n, kids, e->span)->base;
        }
        free(kids);
    }
    return pu_normalize(r, e);
}

ir_var *pu_emit_nested(pu_rewriter *r, ir_var *var, ir_expr *value, const char *hint) {
    ir_expr *flat = flatten(r, value, hint);
    if (!flat) return NULL;
    if (!var) var = fresh_var(r, hint, flat);
    return pu_push(r, var, flat, NULL);
}

static bool same_bindings(const ir_block *b, const ir_binding_vec *v) {
    if (b->n != v->len) return false;
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->bindings[i].var != v->data[i].var || b->bindings[i].value != v->data[i].value ||
            b->bindings[i].match_sinfo != v->data[i].match_sinfo)
            return false;
    }
    return true;
}

static ir_expr *rewrite_seq(pu_rewriter *r, ir_seq *seq) {
    ir_binding_vec *saved_out = r->out;
    bool saved_df = r->dataflow;
    bool changed = false;
    const ir_block **blocks = gr_xmalloc(sizeof(*blocks) * (seq->nblocks + 1));
    uint32_t nb = 0;
    ir_expr *result = NULL;
    for (uint32_t i = 0; i < seq->nblocks; i++) {
        const ir_block *blk = seq->blocks[i];
        ir_binding_vec out = {0};
        r->out = &out;
        r->dataflow = blk->dataflow;
        r->block_serial++;
        uint32_t pending_base = r->pending.len;
        for (uint32_t j = 0; j < blk->n; j++) {
            const ir_binding *b = &blk->bindings[j];
            ir_expr *v = pu_subst(r, b->value);
            if (!v) goto fail;
            bool ok = true;
            if (r->binding) ok = r->binding(r, b, v, blk->dataflow);
            else pu_push(r, b->var, v, b->match_sinfo);
            if (!ok) {
                gr_vec_free(&out);
                r->pending.len = pending_base;
                goto fail;
            }
        }
        flush_pending(r, pending_base);
        if (same_bindings(blk, &out) && !(blk->dataflow && r->no_dataflow)) {
            blocks[nb++] = blk;
        } else {
            changed = true;
            if (out.len) blocks[nb++] = ir_block_new(r->ctx, blk->dataflow && !r->no_dataflow, out.len, out.data);
        }
        gr_vec_free(&out);
    }
    r->out = saved_out;
    r->dataflow = saved_df;
    ir_expr *body = pu_subst(r, seq->body);
    if (!body) goto fail_restored;
    if (!changed && body == seq->body) {
        result = &seq->base;
    } else {
        ir_seq *ns = ir_seq_new(r->ctx, nb, blocks, body, seq->base.span);
        result = keep_sinfo(&seq->base, &ns->base);
    }
    free(blocks);
    return result;
fail:
    r->out = saved_out;
    r->dataflow = saved_df;
fail_restored:
    free(blocks);
    return NULL;
}

ir_func *pu_rewrite_func(pu_rewriter *r, ir_func *f) {
    ir_expr *body = pu_subst(r, f->body);
    if (!body) return NULL;
    if (body == f->body) return f;
    ir_func *nf = ir_func_new(r->ctx, f->nparams, f->params, body, f->ret_sinfo, f->attrs, f->base.span);
    return (ir_func *)keep_sinfo(&f->base, &nf->base);
}

/* ---- uses ---- */

static void count_expr(pu_rewriter *r, const ir_expr *e, int64_t delta) {
    if (!e) return;
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR: case IR_DFVAR:
        gr_map_put(&r->uses, GR_MAP_PTR(e), (uint64_t)((int64_t)gr_map_get_or(&r->uses, GR_MAP_PTR(e), 0) + delta));
        break;
    case IR_CALL: {
        const ir_call *c = (const ir_call *)e;
        count_expr(r, c->callee, delta);
        for (uint32_t i = 0; i < c->nargs; i++) count_expr(r, c->args[i], delta);
        break;
    }
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) count_expr(r, t->fields[i], delta);
        break;
    }
    case IR_TGI: count_expr(r, ((const ir_tgi *)e)->tuple, delta); break;
    case IR_IF: {
        const ir_if *f = (const ir_if *)e;
        count_expr(r, f->cond, delta);
        count_expr(r, f->then_branch, delta);
        count_expr(r, f->else_branch, delta);
        break;
    }
    case IR_SEQ: {
        const ir_seq *q = (const ir_seq *)e;
        for (uint32_t i = 0; i < q->nblocks; i++)
            for (uint32_t j = 0; j < q->blocks[i]->n; j++) count_expr(r, q->blocks[i]->bindings[j].value, delta);
        count_expr(r, q->body, delta);
        break;
    }
    case IR_FUNC: count_expr(r, ((const ir_func *)e)->body, delta); break;
    default: break;
    }
}

void pu_count_uses(pu_rewriter *r, const ir_func *f) {
    gr_map_clear(&r->uses);
    count_expr(r, f->body, 1);
}

void pu_uncount(pu_rewriter *r, const ir_expr *e) { count_expr(r, e, -1); }

ir_expr *pu_def(pu_rewriter *r, const ir_expr *var) {
    uint64_t v;
    if (var && gr_map_get(&r->defs, GR_MAP_PTR(var), &v)) return (ir_expr *)(uintptr_t)v;
    return NULL;
}

void pu_note_pos(pu_rewriter *r, const ir_var *var) {
    gr_map_put(&r->out_pos, GR_MAP_PTR(var), ((uint64_t)r->block_serial << 32) | r->out->len);
}

int pu_out_index(pu_rewriter *r, const ir_var *var) {
    if (!r->out) return -1;
    uint64_t v;
    if (!gr_map_get(&r->out_pos, GR_MAP_PTR(var), &v) || (uint32_t)(v >> 32) != r->block_serial) return -1;
    uint32_t i = (uint32_t)v - 1;
    return i < r->out->len && r->out->data[i].var == var ? (int)i : -1;
}

void pu_merge_span(pu_rewriter *r, int i, const ir_span *span) {
    if (!span || i < 0) return;
    struct pu_pending p = {(uint32_t)i, r->pending.len, span};
    gr_vec_push(&r->pending, p);
}

static int cmp_pending(const void *a, const void *b) {
    const struct pu_pending *x = a, *y = b;
    if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Applies the span merges recorded since `base` to r->out. */
static void flush_pending(pu_rewriter *r, uint32_t base) {
    uint32_t n = r->pending.len - base;
    if (!n) return;
    struct pu_pending *p = r->pending.data + base;
    qsort(p, n, sizeof(*p), cmp_pending);
    const ir_span **parts = gr_xmalloc(sizeof(*parts) * (n + 1));
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i, k = 0;
        ir_binding *b = &r->out->data[p[i].idx];
        parts[k++] = b->value->span;
        for (; j < n && p[j].idx == p[i].idx; j++)
            if (p[j].span != parts[k - 1]) parts[k++] = p[j].span;
        const ir_span *sp = ir_span_seq(r->ctx, parts, k);
        if (sp != b->value->span) {
            b->value = ir_expr_with_span(r->ctx, b->value, sp);
            gr_map_put(&r->defs, GR_MAP_PTR(b->var), GR_MAP_PTR(b->value));
        }
        i = j;
    }
    free(parts);
    r->pending.len = base;
}

void pu_alias(pu_rewriter *r, const ir_binding *b, ir_expr *target, const ir_span *extra_span) {
    /* Look through `t = z` bindings (kept earlier for their spans): alias z, keeping t's span. */
    const ir_span *chain = NULL;
    for (int guard = 0; ir_is_var(target) && guard < 64; guard++) {
        ir_expr *d = pu_def(r, target);
        if (!d || !ir_is_leaf(d) || d->kind == IR_SHAPE || d->kind == IR_PRIMVAL) break;
        chain = ir_span_concat(r->ctx, chain, target->span);
        target = d;
    }
    /* Equal pointers are common (a var and its value share a span): drop them before
     * canonicalizing. */
    if (extra_span == b->var->base.span) extra_span = NULL;
    if (chain == b->var->base.span || chain == extra_span) chain = NULL;
    const ir_span *parts[3] = {b->var->base.span, extra_span, chain};
    const ir_span *sp = ir_span_seq(r->ctx, parts, 3);
    bool escapes = b->var->base.kind == IR_VAR && target->kind == IR_DFVAR;
    int i = ir_is_var(target) ? pu_out_index(r, (const ir_var *)target) : -1;
    if (escapes || (sp && i < 0)) {
        /* Keep `var = target`: it carries the var out of the block, or it is the only place
         * left for the span (target is a param, a constant or bound in another block). */
        ir_var *v = b->var;
        if (sp != v->base.span) {
            v = v->base.kind == IR_DFVAR ? ir_dfvar_new(r->ctx, v->name, v->base.sinfo, sp)
                                         : ir_var_new(r->ctx, v->name, v->base.sinfo, sp);
            gr_map_put(&r->remap, GR_MAP_PTR(b->var), GR_MAP_PTR(v));
        }
        ir_binding nb = {v, target, NULL};
        gr_vec_push(r->out, nb);
        gr_map_put(&r->defs, GR_MAP_PTR(v), GR_MAP_PTR(target));
        pu_note_pos(r, v);
        return;
    }
    gr_map_put(&r->remap, GR_MAP_PTR(b->var), GR_MAP_PTR(target));
    /* Uses of b's var are now uses of target (an over-count is harmless: it only blocks). */
    if (ir_is_var(target))
        gr_map_put(&r->uses, GR_MAP_PTR(target),
                   gr_map_get_or(&r->uses, GR_MAP_PTR(target), 0) + gr_map_get_or(&r->uses, GR_MAP_PTR(b->var), 0));
    if (i >= 0 && sp) pu_merge_span(r, i, sp);
}

/* ---- the function pass of a binding rewrite ---- */

gr_status pu_pass_run(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                      const char *name, ir_func *func, ir_func **out, gr_diag *diag) {
    (void)name;
    const pu_pass *p = self->user;
    pu_rewriter r;
    pu_init(&r, mod->ctx, diag);
    r.binding = p->binding;
    r.no_dataflow = p->no_dataflow;
    r.user = p->state_size ? gr_xcalloc(1, p->state_size) : NULL;
    if (p->count_uses) pu_count_uses(&r, func);
    bool rewrite = !p->prepare || p->prepare(&r, pc, mod, func);
    ir_func *nf = rewrite ? pu_rewrite_func(&r, func) : func;
    pu_finish(&r, pc);
    if (p->release) p->release(r.user);
    free(r.user);
    if (!nf) return diag && diag->code ? diag->code : p->fail_code ? p->fail_code : GR_ERR_INVALID;
    gr_status st = p->post ? p->post(mod->ctx, nf, diag) : GR_OK;
    if (st == GR_OK) *out = nf;
    return st;
}

/* ---- small builders ---- */

bool pu_attrs_equal(const ir_attrs *a, const ir_attrs *b) {
    if (a == b) return true;
    if (!a || !b || a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->keys[i] != b->keys[i] || !ir_attr_equal(&a->vals[i], &b->vals[i])) return false;
    return true;
}

ir_call *pu_op_call(ir_expr *e, ir_op_id op) {
    return op != IR_OP_NONE && ir_op_id_of(e) == op ? (ir_call *)e : NULL;
}

ir_expr *pu_scalar(ir_ctx_t *ctx, ir_dtype dtype, double v, const ir_span *span) {
    rt_tensor *t = rt_tensor_new(dtype, 0, NULL);
    GR_ASSERT(t);
    rt_tensor_set_f64(t, 0, v);
    ir_const *c = ir_const_new(ctx, t, span);
    rt_tensor_release(t);
    return &c->base;
}

bool pu_const_uniform(const ir_expr *e, double *v) {
    if (!e || e->kind != IR_CONST) return false;
    const rt_tensor *t = ((const ir_const *)e)->data;
    int64_t n = rt_tensor_numel(t);
    if (n < 1) return false;
    double first = rt_tensor_get_f64(t, 0);
    for (int64_t i = 1; i < n; i++)
        if (rt_tensor_get_f64(t, i) != first) return false;
    *v = first;
    return true;
}

ir_expr *pu_call(pu_rewriter *r, ir_op_id op, uint32_t nargs, ir_expr *const *args,
                 uint32_t nattrs, const char *const *keys, const ir_attr *vals, const ir_span *span) {
    return (ir_expr *)ir_call_op(r->ctx, op, nargs, args, nattrs, keys, vals, span, r->diag);
}

bool ir__decompose_axis(int64_t axis, int32_t ndim, int32_t *out) {
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim) return false;
    *out = (int32_t)axis;
    return true;
}
