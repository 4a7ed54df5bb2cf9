/* Walker and mutator tests. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/builder.h"
#include "ir/op.h"
#include "ir/visit.h"
#include "tests/ir/ir_build_util.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(walker, .init = setup, .fini = teardown);

typedef struct rec {
    int kinds[64], nkinds;
    int leave[64], nleave;
    int prune_kind, abort_kind;
    int bindings;
} rec;

static ir_walk_result rec_visit(ir_walker *w, ir_expr *e) {
    rec *r = w->user;
    if (r->nkinds < 64) r->kinds[r->nkinds++] = e->kind;
    if (e->kind == r->abort_kind) return IR_WALK_ABORT;
    if (e->kind == r->prune_kind) return IR_WALK_PRUNE;
    return IR_WALK_CONTINUE;
}
static void rec_leave(ir_walker *w, ir_expr *e) {
    rec *r = w->user;
    if (r->nleave < 64) r->leave[r->nleave++] = e->kind;
}
static ir_walk_result rec_binding(ir_walker *w, const ir_binding *b, const ir_block *blk) {
    (void)b;
    (void)blk;
    rec *r = w->user;
    r->bindings++;
    return IR_WALK_CONTINUE;
}

static void assert_kinds(const int *got, int n, const int *want, int nwant) {
    cr_assert_eq(n, nwant, "visited %d nodes, want %d", n, nwant);
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "node %d: %s, want %s", i, ir_expr_kind_name(got[i]),
                     ir_expr_kind_name(want[i]));
}

Test(walker, preorder_postorder_and_sharing) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    rec r = {.prune_kind = -1, .abort_kind = -1};
    ir_walker w = {.visit_expr = rec_visit, .leave_expr = rec_leave, .visit_binding = rec_binding,
                   .user = &r};
    cr_assert_eq(ir_walk_expr(&w, &f->base), IR_WALK_CONTINUE);
    /* Vars are visited once: x and y at the params, lv and gv at their bindings. */
    int pre[] = {IR_FUNC, IR_VAR, IR_VAR, IR_SEQ, IR_CALL, IR_OP, IR_DFVAR, IR_CALL, IR_OP, IR_VAR};
    assert_kinds(r.kinds, r.nkinds, pre, 10);
    int post[] = {IR_VAR, IR_VAR, IR_OP, IR_CALL, IR_DFVAR, IR_OP, IR_CALL, IR_VAR, IR_SEQ, IR_FUNC};
    assert_kinds(r.leave, r.nleave, post, 10);
    cr_assert_eq(r.bindings, 2);
}

Test(walker, shared_node_once) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *c = t_call1(ctx, "relax.exp", &x->base, "e");
    ir_expr *fields[3] = {c, c, c};
    ir_expr *t = (ir_expr *)ir_tuple_new(ctx, 3, fields, NULL);
    rec r = {.prune_kind = -1, .abort_kind = -1};
    ir_walker w = {.visit_expr = rec_visit, .user = &r};
    ir_walk_expr(&w, t);
    int want[] = {IR_TUPLE, IR_CALL, IR_OP, IR_VAR};
    assert_kinds(r.kinds, r.nkinds, want, 4);
    /* A new walk sees everything again. */
    r.nkinds = 0;
    ir_walk_expr(&w, t);
    cr_assert_eq(r.nkinds, 4);
}

Test(walker, prune_skips_children) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    rec r = {.prune_kind = IR_CALL, .abort_kind = -1};
    ir_walker w = {.visit_expr = rec_visit, .leave_expr = rec_leave, .user = &r};
    ir_walk_expr(&w, &f->base);
    int want[] = {IR_FUNC, IR_VAR, IR_VAR, IR_SEQ, IR_CALL, IR_DFVAR, IR_CALL, IR_VAR};
    assert_kinds(r.kinds, r.nkinds, want, 8);
    for (int i = 0; i < r.nleave; i++) cr_assert_neq(r.leave[i], IR_CALL);
}

Test(walker, abort_stops) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    rec r = {.prune_kind = -1, .abort_kind = IR_OP};
    ir_walker w = {.visit_expr = rec_visit, .user = &r};
    cr_assert_eq(ir_walk_expr(&w, &f->base), IR_WALK_ABORT);
    cr_assert_eq(r.nkinds, 6);
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    r.nkinds = 0;
    cr_assert_eq(ir_walk_module(&w, m), IR_WALK_ABORT);
    cr_assert_eq(r.nkinds, 6);
}

static ir_walk_result prune_bindings(ir_walker *w, const ir_binding *b, const ir_block *blk) {
    (void)w;
    (void)blk;
    return b->var->base.kind == IR_DFVAR ? IR_WALK_PRUNE : IR_WALK_CONTINUE;
}

Test(walker, binding_prune) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    rec r = {.prune_kind = -1, .abort_kind = -1};
    ir_walker w = {.visit_expr = rec_visit, .visit_binding = prune_bindings, .user = &r};
    ir_walk_expr(&w, &f->base);
    /* The lv binding is skipped entirely; lv is then first reached as relu's argument. */
    int want[] = {IR_FUNC, IR_VAR, IR_VAR, IR_SEQ, IR_CALL, IR_OP, IR_DFVAR, IR_VAR};
    assert_kinds(r.kinds, r.nkinds, want, 8);
}

Test(walker, skip_local_funcs) {
    ir_func *inner = t_simple_func(ctx, "a", "b", "c", "d");
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *fv = ir_bb_emit(bb, &inner->base, "local");
    ir_seq *s = ir_bb_finish(bb, &fv->base, NULL);
    ir_bb_free(bb);
    ir_func *outer = ir_func_new(ctx, 0, NULL, &s->base, NULL, NULL, NULL);
    ir_normalize(ctx, &outer->base, &diag);
    rec r = {.prune_kind = -1, .abort_kind = -1};
    ir_walker w = {.visit_expr = rec_visit, .user = &r};
    ir_walk_expr(&w, &outer->base);
    cr_assert_eq(r.nkinds, 3 + 10);
    r.nkinds = 0;
    w.skip_local_funcs = true;
    ir_walk_expr(&w, &outer->base);
    int want[] = {IR_FUNC, IR_SEQ, IR_FUNC, IR_VAR};
    assert_kinds(r.kinds, r.nkinds, want, 4);
}

/* ---- mutator ---- */

TestSuite(mutator, .init = setup, .fini = teardown);

Test(mutator, identity_when_unchanged) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    cr_assert_eq(ir_mutate_expr(&m, &f->base), &f->base);
    ir_mutator_deinit(&m);
    ir_module *mod = ir_module_new(ctx);
    ir_module_set_func(mod, "main", &f->base);
    ir_mutator_init(&m, ctx, &diag);
    cr_assert_eq(ir_mutate_module(&m, mod), mod);
    ir_mutator_deinit(&m);
}

/* relu(a) -> exp(a), keeping the call's span (the mutator does that for rebuilt nodes; here the
 * pass builds the replacement itself and passes the span along). */
static ir_expr *relu_to_exp(ir_mutator *m, ir_expr *e) {
    if (!ir_is_op_call(e, "relax.nn.relu")) return e;
    ir_call *c = (ir_call *)e;
    return (ir_expr *)ir_call_new(m->ctx, (ir_expr *)ir_op_get(m->ctx, "relax.exp"), 1, c->args,
                                  NULL, 0, NULL, e->span);
}

Test(mutator, replacement_keeps_unchanged_and_spans) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    m.post_expr = relu_to_exp;
    ir_func *g = (ir_func *)ir_mutate_expr(&m, &f->base);
    ir_mutator_deinit(&m);
    cr_assert_not_null(g, "%s", diag.msg);
    cr_assert_neq(g, f);
    const ir_seq *s0 = (const ir_seq *)f->body, *s1 = (const ir_seq *)g->body;
    const ir_block *b0 = s0->blocks[0], *b1 = s1->blocks[0];
    cr_assert_eq(b1->bindings[0].value, b0->bindings[0].value); /* add shared */
    cr_assert_eq(b1->bindings[0].var, b0->bindings[0].var);
    cr_assert(ir_is_op_call(b1->bindings[1].value, "relax.exp"));
    cr_assert_eq(b1->bindings[1].value->span, b0->bindings[1].value->span);
    cr_assert_eq(b1->bindings[1].var, b0->bindings[1].var); /* same struct info: var kept */
    cr_assert_eq(g->params[0], f->params[0]);
    cr_assert_eq(g->base.sinfo, f->base.sinfo);
    cr_assert(b1->dataflow);
}

/* add(x, y) -> call_dps_packed("k", (x,), out_sinfo=R.Tensor((2, 3)... but 4x4)) */
static ir_expr *add_to_packed(ir_mutator *m, ir_expr *e) {
    if (!ir_is_op_call(e, "relax.add")) return e;
    ir_call *c = (ir_call *)e;
    ir_expr *fields[1] = {c->args[0]};
    ir_expr *args[2] = {(ir_expr *)ir_extern_new(m->ctx, "k", NULL),
                        (ir_expr *)ir_tuple_new(m->ctx, 1, fields, NULL)};
    const ir_sinfo *out[1] = {t_tensor(m->ctx, 4, 4)};
    return (ir_expr *)ir_call_new(m->ctx, (ir_expr *)ir_op_get(m->ctx, "relax.call_dps_packed"), 2,
                                  args, NULL, 1, out, e->span);
}

Test(mutator, struct_info_change_remaps_vars) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    m.post_expr = add_to_packed;
    ir_func *g = (ir_func *)ir_mutate_expr(&m, &f->base);
    ir_mutator_deinit(&m);
    cr_assert_not_null(g, "%s", diag.msg);
    const ir_seq *s0 = (const ir_seq *)f->body, *s1 = (const ir_seq *)g->body;
    const ir_binding *o = s0->blocks[0]->bindings, *n = s1->blocks[0]->bindings;
    cr_assert_neq(n[0].var, o[0].var);
    cr_assert_eq(n[0].var->base.kind, IR_DFVAR);
    cr_assert_eq(n[0].var->name, o[0].var->name);
    cr_assert_eq(n[0].var->base.span, o[0].var->base.span);
    cr_assert_eq(n[0].var->base.sinfo, t_tensor(ctx, 4, 4));
    /* relu(lv) was rebuilt on the new var, re-inferred, and kept its span. */
    const ir_call *relu = (const ir_call *)n[1].value;
    cr_assert_eq(relu->args[0], &n[0].var->base);
    cr_assert_eq(relu->base.span, o[1].value->span);
    cr_assert_eq(relu->base.sinfo, t_tensor(ctx, 4, 4));
    cr_assert_neq(n[1].var, o[1].var);
    cr_assert_eq(n[1].var->base.kind, IR_VAR);
    cr_assert_eq(s1->body, &n[1].var->base);
    cr_assert_eq(g->base.sinfo->ret, t_tensor(ctx, 4, 4));
}

static bool drop_dead(ir_mutator *m, const ir_binding *b, ir_expr *nv, ir_binding_vec *out) {
    if (strcmp(b->var->name, "dead") == 0) return true;
    return ir_mutator_emit_binding(m, b, nv, out);
}

Test(mutator, rewrite_binding_drops) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_emit(bb, t_call1(ctx, "relax.exp", &x->base, "d"), "dead");
    ir_var *r = ir_bb_emit(bb, t_call1(ctx, "relax.abs", &x->base, "a"), "r");
    ir_seq *s = ir_bb_finish(bb, &r->base, NULL);
    ir_bb_free(bb);
    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    m.rewrite_binding = drop_dead;
    ir_seq *s2 = (ir_seq *)ir_mutate_expr(&m, &s->base);
    ir_mutator_deinit(&m);
    cr_assert_neq(s2, s);
    cr_assert_eq(s2->nblocks, 1);
    cr_assert_eq(s2->blocks[0]->n, 1);
    cr_assert_eq(s2->blocks[0]->bindings[0].var, r);
}

Test(mutator, if_match_cast_and_nested_functions) {
    ir_var *c = t_var(ctx, "c", ir_sinfo_prim(ctx, IR_DTYPE_BOOL, NULL));
    ir_var *x = t_var(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_func *inner = t_simple_func(ctx, "a", "b", "c", "d");
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *t1 = ir_bb_emit(bb, t_call1(ctx, "relax.nn.relu", &x->base, "r1"), "t1");
    ir_seq *thn = ir_bb_finish(bb, &t1->base, NULL);
    ir_var *t2 = ir_bb_emit(bb, t_call1(ctx, "relax.abs", &x->base, "a1"), "t2");
    ir_seq *els = ir_bb_finish(bb, &t2->base, NULL);
    ir_if *branch = ir_if_new(ctx, &c->base, &thn->base, &els->base, ir_span_named(ctx, "if1", false));
    ir_bb_emit_match_cast(bb, &x->base, t_tensor(ctx, 2, 3), "mc");
    ir_var *iv = ir_bb_emit(bb, &branch->base, "iv");
    ir_var *lf = ir_bb_emit(bb, &inner->base, "lf");
    (void)lf;
    ir_seq *body = ir_bb_finish(bb, &iv->base, NULL);
    ir_bb_free(bb);
    cr_assert_not_null(body, "%s", diag.msg);
    ir_var *params[2] = {c, x};
    ir_func *f = ir_func_new(ctx, 2, params, &body->base, NULL, NULL, NULL);
    cr_assert_not_null(ir_normalize(ctx, &f->base, &diag), "%s", diag.msg);

    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    m.post_expr = relu_to_exp;
    ir_func *g = (ir_func *)ir_mutate_expr(&m, &f->base);
    ir_mutator_deinit(&m);
    cr_assert_not_null(g, "%s", diag.msg);
    const ir_block *blk = ((ir_seq *)g->body)->blocks[0];
    cr_assert_eq(blk->bindings[0].match_sinfo, t_tensor(ctx, 2, 3));
    const ir_if *ni = (const ir_if *)blk->bindings[1].value;
    cr_assert_neq(ni, branch);
    cr_assert_eq(ni->base.span, branch->base.span);
    cr_assert_eq(ni->else_branch, branch->else_branch);
    const ir_seq *nt = (const ir_seq *)ni->then_branch;
    cr_assert(ir_is_op_call(nt->blocks[0]->bindings[0].value, "relax.exp"));
    /* The nested function had a relu too. */
    const ir_func *nf = (const ir_func *)blk->bindings[2].value;
    cr_assert_neq(nf, inner);
    cr_assert(ir_is_op_call(((ir_seq *)nf->body)->blocks[0]->bindings[1].value, "relax.exp"));
}

/* A chain of n relu bindings in one dataflow block. */
static ir_func *long_chain(uint32_t n) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *v = x;
    for (uint32_t i = 0; i + 1 < n; i++) v = ir_bb_emit(bb, t_call1(ctx, "relax.nn.relu", &v->base, NULL), "lv");
    v = ir_bb_emit_output(bb, t_call1(ctx, "relax.nn.relu", &v->base, NULL), "gv");
    ir_bb_end_block(bb);
    ir_seq *s = ir_bb_finish(bb, &v->base, NULL);
    ir_bb_free(bb);
    ir_func *f = ir_func_new(ctx, 1, &x, &s->base, NULL, NULL, NULL);
    return (ir_func *)ir_normalize(ctx, &f->base, &diag);
}

static ir_walk_result count_calls(ir_walker *w, ir_expr *e) {
    if (e->kind == IR_CALL) (*(uint32_t *)w->user)++;
    return IR_WALK_CONTINUE;
}

Test(mutator, million_binding_chain_no_stack_overflow, .timeout = 60) {
    const uint32_t n = 1000000;
    ir_func *f = long_chain(n);
    cr_assert_not_null(f, "%s", diag.msg);
    uint32_t calls = 0;
    ir_walker w = {.visit_expr = count_calls, .user = &calls};
    ir_walk_expr(&w, &f->base);
    cr_assert_eq(calls, n);
    ir_mutator m;
    ir_mutator_init(&m, ctx, &diag);
    cr_assert_eq(ir_mutate_expr(&m, &f->base), &f->base);
    ir_mutator_deinit(&m);
    ir_mutator_init(&m, ctx, &diag);
    m.post_expr = relu_to_exp;
    ir_func *g = (ir_func *)ir_mutate_expr(&m, &f->base);
    ir_mutator_deinit(&m);
    cr_assert_not_null(g, "%s", diag.msg);
    const ir_block *blk = ((ir_seq *)g->body)->blocks[0];
    cr_assert_eq(blk->n, n);
    cr_assert(ir_is_op_call(blk->bindings[n - 1].value, "relax.exp"));
}
