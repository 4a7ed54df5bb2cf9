/* Block builder and normalizer tests. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/builder.h"
#include "ir/op.h"
#include "tests/ir/ir_build_util.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(builder, .init = setup, .fini = teardown);

Test(builder, anf_binds_nested_calls_keeping_spans) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 2, 3));
    ir_expr *add = t_call2(ctx, "relax.add", &x->base, &y->base, "add1");
    ir_expr *relu = t_call1(ctx, "relax.nn.relu", add, "relu1");
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *out = ir_bb_emit_output(bb, relu, "out");
    cr_assert_not_null(out, "%s", diag.msg);
    const ir_block *blk = ir_bb_end_block(bb);
    ir_bb_free(bb);
    cr_assert_not_null(blk);
    cr_assert(blk->dataflow);
    cr_assert_eq(blk->n, 2);
    /* The nested add was bound first, to a dataflow var carrying the add's span. */
    const ir_binding *b0 = &blk->bindings[0];
    cr_assert_eq(b0->var->base.kind, IR_DFVAR);
    cr_assert_eq(b0->value, add);
    cr_assert_eq(b0->var->base.span, add->span);
    cr_assert(ir_span_has_source(b0->var->base.span, "add1"));
    cr_assert_eq(b0->var->base.sinfo, t_tensor(ctx, 2, 3));
    /* The outer call was rebuilt around the var and kept its span. */
    const ir_binding *b1 = &blk->bindings[1];
    cr_assert_eq(b1->var, out);
    cr_assert_eq(out->base.kind, IR_VAR);
    cr_assert_str_eq(out->name, "out");
    cr_assert_eq(b1->value->kind, IR_CALL);
    const ir_call *c = (const ir_call *)b1->value;
    cr_assert_eq(c->args[0], &b0->var->base);
    cr_assert_eq(c->base.span, relu->span);
    cr_assert_eq(out->base.span, relu->span);
    cr_assert_eq(out->base.sinfo, t_tensor(ctx, 2, 3));
}

Test(builder, anf_in_plain_block_uses_plain_vars_and_tuple_fields) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *e = t_call1(ctx, "relax.exp", &x->base, "exp1");
    ir_expr *fields[2] = {e, &x->base};
    ir_expr *tup = (ir_expr *)ir_tuple_new(ctx, 2, fields, NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *t = ir_bb_emit(bb, tup, NULL);
    cr_assert_not_null(t, "%s", diag.msg);
    ir_seq *s = ir_bb_finish(bb, &t->base, NULL);
    ir_bb_free(bb);
    cr_assert_not_null(s);
    cr_assert_eq(s->nblocks, 1);
    cr_assert(!s->blocks[0]->dataflow);
    cr_assert_eq(s->blocks[0]->n, 2);
    cr_assert_eq(s->blocks[0]->bindings[0].var->base.kind, IR_VAR);
    cr_assert_str_eq(t->name, "gv");
    const ir_sinfo *fs[2] = {t_tensor(ctx, 2, 3), t_tensor(ctx, 2, 3)};
    cr_assert_eq(t->base.sinfo, ir_sinfo_tuple(ctx, 2, fs));
    cr_assert_eq(s->base.sinfo, t->base.sinfo);
}

Test(builder, dataflow_then_plain_blocks_and_finish) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *lv = ir_bb_emit(bb, t_call1(ctx, "relax.exp", &x->base, "e"), NULL);
    cr_assert_str_eq(lv->name, "lv");
    cr_assert_eq(lv->base.kind, IR_DFVAR);
    ir_var *gv = ir_bb_emit_output(bb, t_call1(ctx, "relax.nn.relu", &lv->base, "r"), "gv");
    ir_bb_end_block(bb);
    ir_bb_begin_dataflow(bb);   /* an empty block is dropped */
    ir_bb_end_block(bb);
    ir_var *z = ir_bb_emit(bb, t_call1(ctx, "relax.abs", &gv->base, "a"), "z");
    cr_assert_eq(z->base.kind, IR_VAR);
    ir_seq *s = ir_bb_finish(bb, &z->base, NULL);
    cr_assert_not_null(s);
    cr_assert_eq(s->nblocks, 2);
    cr_assert(s->blocks[0]->dataflow);
    cr_assert(!s->blocks[1]->dataflow);
    cr_assert_eq(s->body, &z->base);
    /* The builder can be reused after finish. */
    ir_var *w = ir_bb_emit(bb, t_call1(ctx, "relax.abs", &x->base, "a2"), "w");
    ir_seq *s2 = ir_bb_finish(bb, &w->base, NULL);
    ir_bb_free(bb);
    cr_assert_eq(s2->nblocks, 1);
    cr_assert_eq(s2->blocks[0]->n, 1);
}

Test(builder, match_cast_binding) {
    ir_var *x = t_var(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, -1, NULL));
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_sinfo *cast = t_tensor_sym(ctx, n, ir_prim_int(ctx, 4));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *v = ir_bb_emit_match_cast(bb, &x->base, cast, "v");
    cr_assert_not_null(v);
    const ir_block *blk = ir_bb_end_block(bb);
    ir_bb_free(bb);
    cr_assert_eq(blk->n, 1);
    cr_assert_eq(blk->bindings[0].match_sinfo, cast);
    cr_assert_eq(blk->bindings[0].value, &x->base);
    cr_assert_eq(v->base.sinfo, cast);
}

Test(builder, emit_to_keeps_var) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *mine = ir_var_new(ctx, "mine", NULL, ir_span_named(ctx, "L", false));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    cr_assert(ir_bb_emit_to(bb, mine, t_call1(ctx, "relax.exp", &x->base, "e"), NULL));
    const ir_block *blk = ir_bb_end_block(bb);
    ir_bb_free(bb);
    cr_assert_eq(blk->bindings[0].var, mine);
    cr_assert_eq(mine->base.sinfo, t_tensor(ctx, 2, 3));
}

Test(builder, inference_error_names_layer) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 4, 5));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *v = ir_bb_emit(bb, t_call2(ctx, "relax.add", &x->base, &y->base, "bad_add"), NULL);
    cr_assert_null(v);
    cr_assert_eq(diag.code, GR_ERR_TYPE);
    cr_assert_str_eq(diag.layer, "bad_add");
    /* Later emits fail too instead of building on a broken block. */
    cr_assert_null(ir_bb_emit(bb, &x->base, NULL));
    ir_bb_free(bb);
}

Test(builder, nested_error_is_reported) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 4, 5));
    ir_expr *bad = t_call2(ctx, "relax.multiply", &x->base, &y->base, "inner");
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    cr_assert_null(ir_bb_emit(bb, t_call1(ctx, "relax.exp", bad, "outer"), NULL));
    cr_assert_eq(diag.code, GR_ERR_TYPE);
    cr_assert_str_eq(diag.layer, "inner");
    ir_bb_free(bb);
}

Test(builder, finish_without_body_is_an_error) {
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    cr_assert_null(ir_bb_finish(bb, NULL, NULL));
    cr_assert_eq(diag.code, GR_ERR_TYPE);
    ir_bb_free(bb);
}

/* ---- normalizer ---- */

TestSuite(normalize, .init = setup, .fini = teardown);

Test(normalize, tuple_and_tgi) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_primval *p = ir_primval_int(ctx, ir_prim_int(ctx, 7), NULL);
    ir_expr *fields[2] = {&x->base, &p->base};
    ir_expr *tup = (ir_expr *)ir_tuple_new(ctx, 2, fields, NULL);
    ir_expr *g = (ir_expr *)ir_tgi_new(ctx, tup, 1, NULL);
    cr_assert_eq(ir_normalize(ctx, g, &diag), g);
    cr_assert_eq(g->sinfo, p->base.sinfo);
    cr_assert_eq(tup->sinfo->kind, IR_SINFO_TUPLE);
    cr_assert_eq(tup->sinfo->n, 2);
    cr_assert_eq(tup->sinfo->fields[0], x->base.sinfo);
    /* Normalizing again changes nothing (struct info is set once). */
    cr_assert_eq(ir_normalize(ctx, g, &diag), g);
}

Test(normalize, tgi_errors_and_object) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *fields[1] = {&x->base};
    ir_expr *tup = (ir_expr *)ir_tuple_new(ctx, 1, fields, NULL);
    ir_expr *g = (ir_expr *)ir_tgi_new(ctx, tup, 1, ir_span_named(ctx, "idx", false));
    cr_assert_null(ir_normalize(ctx, g, &diag));
    cr_assert_eq(diag.code, GR_ERR_TYPE);
    cr_assert(strstr(diag.msg, "out of range"));
    cr_assert_str_eq(diag.layer, "idx");

    gr_diag_clear(&diag);
    ir_expr *g2 = (ir_expr *)ir_tgi_new(ctx, &x->base, 0, NULL);
    cr_assert_null(ir_normalize(ctx, g2, &diag));
    cr_assert(strstr(diag.msg, "non-tuple"));

    gr_diag_clear(&diag);
    ir_var *o = t_var(ctx, "o", ir_sinfo_object(ctx));
    ir_expr *g3 = (ir_expr *)ir_tgi_new(ctx, &o->base, 3, NULL);
    cr_assert_not_null(ir_normalize(ctx, g3, &diag));
    cr_assert_eq(g3->sinfo, ir_sinfo_object(ctx));
}

Test(normalize, var_without_sinfo_is_an_error) {
    ir_var *x = ir_var_new(ctx, "x", NULL, NULL);
    ir_expr *c = t_call1(ctx, "relax.exp", &x->base, "e");
    cr_assert_null(ir_normalize(ctx, c, &diag));
    cr_assert(strstr(diag.msg, "'x'"));
}

static ir_seq *seq_of(ir_expr *body) {
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *v = ir_bb_emit(bb, body, "v");
    ir_seq *s = ir_bb_finish(bb, &v->base, NULL);
    ir_bb_free(bb);
    return s;
}

Test(normalize, if_takes_lca) {
    ir_var *c = t_var(ctx, "c", ir_sinfo_prim(ctx, IR_DTYPE_BOOL, NULL));
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_var *b = t_var(ctx, "b", t_tensor(ctx, 4, 3));
    ir_seq *t = seq_of(t_call1(ctx, "relax.exp", &a->base, "e1"));
    ir_seq *e = seq_of(t_call1(ctx, "relax.exp", &b->base, "e2"));
    ir_if *x = ir_if_new(ctx, &c->base, &t->base, &e->base, NULL);
    cr_assert_not_null(ir_normalize(ctx, &x->base, &diag), "%s", diag.msg);
    cr_assert_eq(x->base.sinfo, ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));

    ir_seq *t2 = seq_of(t_call1(ctx, "relax.exp", &a->base, "e3"));
    ir_seq *e2 = seq_of(t_call1(ctx, "relax.exp", &a->base, "e4"));
    ir_if *y = ir_if_new(ctx, &c->base, &t2->base, &e2->base, NULL);
    ir_normalize(ctx, &y->base, &diag);
    cr_assert_eq(y->base.sinfo, t_tensor(ctx, 2, 3));

    ir_primval *p = ir_primval_int(ctx, ir_prim_int(ctx, 1), NULL);
    ir_seq *e3 = seq_of(&p->base);
    ir_seq *t3 = seq_of(t_call1(ctx, "relax.exp", &a->base, "e5"));
    ir_if *z = ir_if_new(ctx, &c->base, &t3->base, &e3->base, NULL);
    ir_normalize(ctx, &z->base, &diag);
    cr_assert_eq(z->base.sinfo, ir_sinfo_object(ctx));
}

Test(normalize, lca_rules) {
    const ir_sinfo *a = t_tensor(ctx, 2, 3);
    const ir_sinfo *i = ir_sinfo_tensor_static(ctx, IR_DTYPE_I32, 2, (int64_t[]){2, 3});
    const ir_sinfo *r3 = ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    cr_assert_eq(ir_sinfo_lca(ctx, a, a), a);
    cr_assert_eq(ir_sinfo_lca(ctx, a, i), ir_sinfo_tensor(ctx, IR_DTYPE_VOID, 2, a->dims));
    cr_assert_eq(ir_sinfo_lca(ctx, a, r3), ir_sinfo_tensor(ctx, IR_DTYPE_F32, -1, NULL));
    cr_assert_eq(ir_sinfo_lca(ctx, a, ir_sinfo_shape(ctx, 2, NULL)), ir_sinfo_object(ctx));
}

/* A module with f(x: R.Tensor((n, 4))) -> R.Tensor((n * 2, 4)). */
static ir_module *sym_module(void) {
    const ir_prim *n = ir_prim_var(ctx, "n");
    ir_var *x = t_var(ctx, "x", t_tensor_sym(ctx, n, ir_prim_int(ctx, 4)));
    const ir_sinfo *ret = t_tensor_sym(ctx, ir_prim_mul(ctx, n, ir_prim_int(ctx, 2)), ir_prim_int(ctx, 4));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *v = ir_bb_emit_match_cast(bb, &x->base, ret, "v"); /* shape check stands in for a body */
    ir_seq *s = ir_bb_finish(bb, &v->base, NULL);
    ir_bb_free(bb);
    ir_func *f = ir_func_new(ctx, 1, &x, &s->base, ret, NULL, NULL);
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "f", ir_normalize(ctx, &f->base, &diag));
    return m;
}

Test(normalize, gvar_call_substitutes_symbolic_dims) {
    ir_module *m = sym_module();
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 3, 4));
    ir_expr *args[1] = {&a->base};
    ir_expr *call = t_gcall(ctx, ir_module_gvar(m, "f"), 1, args);
    cr_assert_not_null(ir_normalize_in(ctx, m, call, &diag), "%s", diag.msg);
    cr_assert_eq(call->sinfo, t_tensor(ctx, 6, 4));

    /* Through a builder with the module set. */
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_set_module(bb, m);
    const ir_prim *k = ir_prim_var(ctx, "k");
    ir_var *b = t_var(ctx, "b", t_tensor_sym(ctx, k, ir_prim_int(ctx, 4)));
    ir_expr *args2[1] = {&b->base};
    ir_var *r = ir_bb_emit(bb, t_gcall(ctx, ir_module_gvar(m, "f"), 1, args2), "r");
    ir_bb_free(bb);
    cr_assert_not_null(r, "%s", diag.msg);
    cr_assert_eq(r->base.sinfo, t_tensor_sym(ctx, ir_prim_mul(ctx, k, ir_prim_int(ctx, 2)), ir_prim_int(ctx, 4)));
}

Test(normalize, gvar_call_errors) {
    ir_module *m = sym_module();
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 3, 5));
    ir_expr *args[1] = {&a->base};
    ir_expr *call = t_gcall(ctx, ir_module_gvar(m, "f"), 1, args);
    cr_assert_null(ir_normalize_in(ctx, m, call, &diag));
    cr_assert(strstr(diag.msg, "@f"), "%s", diag.msg);

    gr_diag_clear(&diag);
    ir_expr *call2 = t_gcall(ctx, ir_gvar_new(ctx, "nope"), 1, args);
    cr_assert_null(ir_normalize_in(ctx, m, call2, &diag));
    cr_assert(strstr(diag.msg, "undefined"), "%s", diag.msg);

    gr_diag_clear(&diag);
    ir_expr *call3 = t_gcall(ctx, ir_module_gvar(m, "f"), 0, NULL);
    cr_assert_null(ir_normalize_in(ctx, m, call3, &diag));
    cr_assert(strstr(diag.msg, "arguments"), "%s", diag.msg);
}

Test(normalize, unbound_callee_dims_are_erased) {
    /* g(x: R.Tensor((n, 4))) -> R.Tensor((n, 4)) called with R.Tensor(ndim=2): n is unknown in
     * the caller, so the return keeps only dtype and rank. */
    const ir_prim *n = ir_prim_var(ctx, "n");
    const ir_sinfo *ps[1] = {t_tensor_sym(ctx, n, ir_prim_int(ctx, 4))};
    const ir_sinfo *fs = ir_sinfo_func(ctx, 1, ps, ps[0]);
    ir_var *g = t_var(ctx, "g", fs);
    ir_var *a = t_var(ctx, "a", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_expr *args[1] = {&a->base};
    ir_expr *call = (ir_expr *)ir_call_new(ctx, &g->base, 1, args, NULL, 0, NULL, NULL);
    cr_assert_not_null(ir_normalize(ctx, call, &diag), "%s", diag.msg);
    cr_assert_eq(call->sinfo, ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
}

Test(normalize, extern_and_callable_var_calls) {
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_expr *args[1] = {&a->base};
    ir_expr *ext = (ir_expr *)ir_extern_new(ctx, "my_fn", NULL);
    ir_expr *c1 = (ir_expr *)ir_call_new(ctx, ext, 1, args, NULL, 0, NULL, NULL);
    cr_assert_not_null(ir_normalize(ctx, c1, &diag));
    cr_assert_eq(c1->sinfo, ir_sinfo_object(ctx));

    const ir_sinfo *out[1] = {t_tensor(ctx, 5, 5)};
    ir_expr *c2 = (ir_expr *)ir_call_new(ctx, ext, 1, args, NULL, 1, out, NULL);
    cr_assert_not_null(ir_normalize(ctx, c2, &diag));
    cr_assert_eq(c2->sinfo, out[0]);

    const ir_sinfo *ps[1] = {t_tensor(ctx, 2, 3)};
    ir_var *fv = t_var(ctx, "fv", ir_sinfo_func(ctx, 1, ps, t_tensor(ctx, 7, 7)));
    ir_expr *c3 = (ir_expr *)ir_call_new(ctx, &fv->base, 1, args, NULL, 0, NULL, NULL);
    cr_assert_not_null(ir_normalize(ctx, c3, &diag));
    cr_assert_eq(c3->sinfo, t_tensor(ctx, 7, 7));

    ir_expr *c4 = (ir_expr *)ir_call_new(ctx, &a->base, 1, args, NULL, 0, NULL, NULL);
    cr_assert_null(ir_normalize(ctx, c4, &diag));
    cr_assert(strstr(diag.msg, "not callable"));
}

Test(normalize, call_dps_packed_uses_out_sinfo) {
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_expr *fields[1] = {&a->base};
    ir_expr *tup = (ir_expr *)ir_tuple_new(ctx, 1, fields, NULL);
    ir_expr *args[2] = {(ir_expr *)ir_extern_new(ctx, "k", NULL), tup};
    const ir_sinfo *out[1] = {t_tensor(ctx, 3, 3)};
    ir_expr *c = (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "relax.call_dps_packed"), 2,
                                        args, NULL, 1, out, NULL);
    cr_assert_not_null(ir_normalize(ctx, c, &diag), "%s", diag.msg);
    cr_assert_eq(c->sinfo, out[0]);
}

Test(normalize, function_gets_callable) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    cr_assert_not_null(f);
    cr_assert_eq(f->base.sinfo->kind, IR_SINFO_FUNC);
    cr_assert_eq(f->base.sinfo->n, 2);
    cr_assert_eq(f->base.sinfo->ret, t_tensor(ctx, 2, 3));
}

Test(builder, nested_seq_argument_is_bound) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    /* exp(x) wrapped in a SeqExpr built without a builder, used as a call argument. */
    ir_var *inner = t_var(ctx, "inner", NULL);
    ir_binding b = {inner, t_call1(ctx, "relax.exp", &x->base, "e"), NULL};
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    ir_seq *s = ir_seq_new(ctx, 1, &blk, &inner->base, ir_span_named(ctx, "seq1", false));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *r = ir_bb_emit(bb, t_call1(ctx, "relax.abs", &s->base, "abs1"), "r");
    const ir_block *out = ir_bb_end_block(bb);
    ir_bb_free(bb);
    cr_assert_not_null(r, "%s", diag.msg);
    cr_assert_eq(out->n, 2);
    cr_assert_eq(out->bindings[0].value, &s->base);
    cr_assert_eq(out->bindings[0].var->base.span, s->base.span);
    cr_assert_eq(inner->base.sinfo, t_tensor(ctx, 2, 3)); /* filled by the normalizer */
    cr_assert_eq(s->base.sinfo, t_tensor(ctx, 2, 3));
    cr_assert_eq(((ir_call *)out->bindings[1].value)->args[0], &out->bindings[0].var->base);
}
