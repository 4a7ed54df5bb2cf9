/* Well-formedness checker tests: one positive and one negative case per rule. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "ir/builder.h"
#include "ir/op.h"
#include "ir/wellformed.h"
#include "tests/ir/ir_build_util.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(wellformed, .init = setup, .fini = teardown);

static ir_module *mod_of(ir_func *f) {
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    return m;
}

static ir_expr *norm(ir_expr *e) {
    ir_expr *r = ir_normalize(ctx, e, &diag);
    cr_assert_not_null(r, "%s", diag.msg);
    return r;
}

/* A function from raw blocks (no builder, so ill-formed IR can be made). */
static ir_func *raw_func(uint32_t np, ir_var **params, uint32_t nb, const ir_block **blocks,
                         ir_expr *body) {
    ir_seq *s = ir_seq_new(ctx, nb, blocks, body, NULL);
    if (body->sinfo) ir_expr_set_sinfo(&s->base, body->sinfo);
    ir_func *f = ir_func_new(ctx, np, params, &s->base, NULL, NULL, NULL);
    return f;
}

static ir_binding bind(ir_var *v, ir_expr *value) {
    ir_binding b = {v, value, NULL};
    return b;
}

static void expect_ok(ir_module *m) {
    gr_diag_clear(&diag);
    cr_assert_eq(ir_wellformed_check(m, &diag), GR_OK, "%s", diag.msg);
}

static void expect_bad(ir_module *m, const char *needle) {
    gr_diag_clear(&diag);
    cr_assert_eq(ir_wellformed_check(m, &diag), GR_ERR_WELLFORMED);
    cr_assert_eq(diag.code, GR_ERR_WELLFORMED);
    cr_assert(strstr(diag.msg, needle), "message '%s' lacks '%s'", diag.msg, needle);
}

Test(wellformed, builder_output_is_wellformed) {
    expect_ok(mod_of(t_simple_func(ctx, "x", "y", "lv", "gv")));
}

Test(wellformed, var_defined_twice) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *v = t_var(ctx, "v", t_tensor(ctx, 2, 3));
    ir_binding bs[2] = {bind(v, norm(t_call1(ctx, "relax.exp", &x->base, "e1"))),
                        bind(v, norm(t_call1(ctx, "relax.exp", &x->base, "e2")))};
    const ir_block *blk = ir_block_new(ctx, false, 2, bs);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &v->base)), "var 'v': defined more than once");
    const ir_block *one = ir_block_new(ctx, false, 1, bs);
    expect_ok(mod_of(raw_func(1, &x, 1, &one, &v->base)));
}

Test(wellformed, var_defined_in_two_functions) {
    ir_func *f = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_module *m = mod_of(f);
    ir_module_set_func(m, "other", &ir_func_with_attrs(ctx, f, NULL)->base);
    expect_bad(m, "defined more than once");
    cr_assert(strstr(diag.msg, "function 'other'"));
}

Test(wellformed, use_before_definition) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_var *b = t_var(ctx, "b", t_tensor(ctx, 2, 3));
    ir_binding bad[2] = {bind(a, norm(t_call1(ctx, "relax.exp", &b->base, "e1"))),
                         bind(b, norm(t_call1(ctx, "relax.exp", &x->base, "e2")))};
    const ir_block *blk = ir_block_new(ctx, false, 2, bad);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &a->base)), "var 'b'");
    ir_var *a2 = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_var *b2 = t_var(ctx, "b", t_tensor(ctx, 2, 3));
    ir_binding good[2] = {bind(b2, norm(t_call1(ctx, "relax.exp", &x->base, "e2"))),
                          bind(a2, norm(t_call1(ctx, "relax.exp", &b2->base, "e1")))};
    const ir_block *gblk = ir_block_new(ctx, false, 2, good);
    expect_ok(mod_of(raw_func(1, &x, 1, &gblk, &a2->base)));
}

Test(wellformed, var_out_of_scope_after_if_branch) {
    ir_var *c = t_var(ctx, "c", ir_sinfo_prim(ctx, IR_DTYPE_BOOL, NULL));
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *inner = t_var(ctx, "inner", t_tensor(ctx, 2, 3));
    ir_binding ib = bind(inner, norm(t_call1(ctx, "relax.exp", &x->base, "e")));
    const ir_block *iblk = ir_block_new(ctx, false, 1, &ib);
    ir_seq *thn = ir_seq_new(ctx, 1, &iblk, &inner->base, NULL);
    ir_seq *els = ir_seq_new(ctx, 0, NULL, &x->base, NULL);
    ir_if *branch = ir_if_new(ctx, &c->base, &thn->base, &els->base, NULL);
    norm(&branch->base);
    ir_var *r = t_var(ctx, "r", t_tensor(ctx, 2, 3));
    ir_var *leak = t_var(ctx, "leak", t_tensor(ctx, 2, 3));
    ir_binding bs[2] = {bind(r, &branch->base),
                        bind(leak, norm(t_call2(ctx, "relax.add", &r->base, &inner->base, "l")))};
    ir_var *params[2] = {c, x};
    const ir_block *blk = ir_block_new(ctx, false, 2, bs);
    expect_bad(mod_of(raw_func(2, params, 1, &blk, &leak->base)), "var 'inner': used outside the scope");
    const ir_block *ok = ir_block_new(ctx, false, 1, bs);
    expect_ok(mod_of(raw_func(2, params, 1, &ok, &r->base)));
}

Test(wellformed, dataflow_var_escapes_block) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *lv = ir_dfvar_new(ctx, "lv", t_tensor(ctx, 2, 3), ir_span_named(ctx, "L1", false));
    ir_binding b = bind(lv, norm(t_call1(ctx, "relax.exp", &x->base, "L1")));
    const ir_block *blk = ir_block_new(ctx, true, 1, &b);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &lv->base)), "dataflow var used outside");
    cr_assert(strstr(diag.msg, "function 'main'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "var 'lv'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "layer 'L1'"), "%s", diag.msg);
    cr_assert_str_eq(diag.layer, "L1");
}

Test(wellformed, dataflow_var_in_plain_block) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *lv = ir_dfvar_new(ctx, "lv", t_tensor(ctx, 2, 3), NULL);
    ir_var *gv = t_var(ctx, "gv", t_tensor(ctx, 2, 3));
    ir_binding bs[2] = {bind(lv, norm(t_call1(ctx, "relax.exp", &x->base, "e"))),
                        bind(gv, norm(t_call1(ctx, "relax.exp", &lv->base, "e")))};
    const ir_block *blk = ir_block_new(ctx, false, 2, bs);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &gv->base)), "bound outside a dataflow block");
}

Test(wellformed, params_are_plain_vars) {
    ir_var *x = ir_dfvar_new(ctx, "x", t_tensor(ctx, 2, 3), NULL);
    expect_bad(mod_of(raw_func(1, &x, 0, NULL, &x->base)), "plain Var");
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 2, 3));
    expect_ok(mod_of(raw_func(1, &y, 0, NULL, &y->base)));
}

Test(wellformed, missing_struct_info) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *fields[1] = {&x->base};
    ir_tuple *t = ir_tuple_new(ctx, 1, fields, ir_span_named(ctx, "tup", false));
    const ir_sinfo *ts = ir_sinfo_tuple(ctx, 1, &x->base.sinfo);
    ir_var *v = t_var(ctx, "v", ts);
    ir_binding b = bind(v, &t->base);
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    ir_module *m = mod_of(raw_func(1, &x, 1, &blk, &v->base));
    expect_bad(m, "no struct info");
    cr_assert_str_eq(diag.layer, "tup");
    norm(&t->base);
    expect_ok(m);
}

Test(wellformed, binding_sinfo_must_be_base_of_value) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *val = norm(t_call1(ctx, "relax.exp", &x->base, "e"));
    ir_var *bad = t_var(ctx, "bad", t_tensor(ctx, 4, 4));
    ir_binding b = bind(bad, val);
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &bad->base)), "is not a base of");
    ir_var *good = t_var(ctx, "good", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_binding g = bind(good, val);
    const ir_block *gblk = ir_block_new(ctx, false, 1, &g);
    expect_ok(mod_of(raw_func(1, &x, 1, &gblk, &good->base)));
}

Test(wellformed, match_cast_var_has_cast_sinfo) {
    ir_var *x = t_var(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_var *v = t_var(ctx, "v", t_tensor(ctx, 4, 4));
    ir_binding b = {v, &x->base, t_tensor(ctx, 2, 3)};
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &v->base)), "match_cast");
    ir_var *w = t_var(ctx, "w", t_tensor(ctx, 2, 3));
    ir_binding g = {w, &x->base, t_tensor(ctx, 2, 3)};
    const ir_block *gblk = ir_block_new(ctx, false, 1, &g);
    expect_ok(mod_of(raw_func(1, &x, 1, &gblk, &w->base)));
}

Test(wellformed, op_call_reinferred) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *c = t_call1(ctx, "relax.exp", &x->base, "wrong");
    ir_expr_set_sinfo(c, t_tensor(ctx, 9, 9));
    ir_var *v = t_var(ctx, "v", t_tensor(ctx, 9, 9));
    ir_binding b = bind(v, c);
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    expect_bad(mod_of(raw_func(1, &x, 1, &blk, &v->base)), "infers");
    cr_assert_str_eq(diag.layer, "wrong");
    /* A looser recorded struct info is consistent. */
    ir_expr *c2 = t_call1(ctx, "relax.exp", &x->base, "loose");
    ir_expr_set_sinfo(c2, ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_var *v2 = t_var(ctx, "v2", c2->sinfo);
    ir_binding b2 = bind(v2, c2);
    const ir_block *blk2 = ir_block_new(ctx, false, 1, &b2);
    expect_ok(mod_of(raw_func(1, &x, 1, &blk2, &v2->base)));
}

Test(wellformed, gvar_must_be_defined) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_func *callee = raw_func(1, &x, 0, NULL, &x->base);
    ir_normalize(ctx, &callee->base, &diag);
    ir_module *m = ir_module_new(ctx);
    ir_gvar *g = ir_module_set_func(m, "callee", &callee->base);
    ir_var *a = t_var(ctx, "a", t_tensor(ctx, 2, 3));
    ir_expr *args[1] = {&a->base};
    ir_expr *call = t_gcall(ctx, g, 1, args);
    cr_assert_not_null(ir_normalize_in(ctx, m, call, &diag), "%s", diag.msg);
    ir_var *r = t_var(ctx, "r", call->sinfo);
    ir_binding b = bind(r, call);
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    ir_module_set_func(m, "main", &raw_func(1, &a, 1, &blk, &r->base)->base);
    expect_ok(m);
    ir_module_remove(m, "callee");
    expect_bad(m, "@callee is not defined");
}

Test(wellformed, symbolic_vars_defined_before_use) {
    const ir_prim *n = ir_prim_var(ctx, "n"), *k = ir_prim_var(ctx, "k");
    ir_var *x = t_var(ctx, "x", t_tensor_sym(ctx, n, ir_prim_int(ctx, 4)));
    ir_var *y = t_var(ctx, "y", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    /* v: R.Tensor((k, 4)) annotated on a plain binding: k is not defined. */
    ir_var *v = t_var(ctx, "v", t_tensor_sym(ctx, k, ir_prim_int(ctx, 4)));
    ir_expr *val = (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_extern_new(ctx, "f", NULL), 1,
                                          (ir_expr *[]){&y->base}, NULL, 1, &v->base.sinfo, NULL);
    norm(val);
    ir_binding b = bind(v, val);
    ir_var *params[2] = {x, y};
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    expect_bad(mod_of(raw_func(2, params, 1, &blk, &v->base)), "symbolic var 'k'");
    /* Defined by a match_cast first, it is fine; n comes from a parameter. */
    ir_var *mc = t_var(ctx, "mc", t_tensor_sym(ctx, k, ir_prim_int(ctx, 4)));
    ir_var *v2 = t_var(ctx, "v2", t_tensor_sym(ctx, k, ir_prim_int(ctx, 4)));
    ir_var *v3 = t_var(ctx, "v3", t_tensor_sym(ctx, n, ir_prim_int(ctx, 4)));
    ir_binding bs[3] = {{mc, &y->base, mc->base.sinfo}, bind(v2, val),
                        bind(v3, norm(t_call1(ctx, "relax.exp", &x->base, "e")))};
    const ir_block *gblk = ir_block_new(ctx, false, 3, bs);
    expect_ok(mod_of(raw_func(2, params, 1, &gblk, &v3->base)));
}

Test(wellformed, if_branches_and_bodies_are_seqs) {
    ir_var *c = t_var(ctx, "c", ir_sinfo_prim(ctx, IR_DTYPE_BOOL, NULL));
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_if *bad_if = ir_if_new(ctx, &c->base, &x->base, &x->base, NULL);
    ir_expr_set_sinfo(&bad_if->base, x->base.sinfo);
    ir_var *r = t_var(ctx, "r", t_tensor(ctx, 2, 3));
    ir_binding b = bind(r, &bad_if->base);
    ir_var *params[2] = {c, x};
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    expect_bad(mod_of(raw_func(2, params, 1, &blk, &r->base)), "if branches must be SeqExprs");

    ir_func *f = ir_func_new(ctx, 1, &x, &x->base, NULL, NULL, NULL);
    expect_bad(mod_of(f), "body must be a SeqExpr");
}

Test(wellformed, declared_return_must_fit_body) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_seq *s = ir_seq_new(ctx, 0, NULL, &x->base, NULL);
    ir_expr_set_sinfo(&s->base, x->base.sinfo);
    expect_bad(mod_of(ir_func_new(ctx, 1, &x, &s->base, t_tensor(ctx, 5, 5), NULL, NULL)), "declared return");
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 2, 3));
    ir_seq *s2 = ir_seq_new(ctx, 0, NULL, &y->base, NULL);
    ir_expr_set_sinfo(&s2->base, y->base.sinfo);
    expect_ok(mod_of(ir_func_new(ctx, 1, &y, &s2->base, ir_sinfo_tensor(ctx, IR_DTYPE_VOID, -1, NULL), NULL, NULL)));
}

Test(wellformed, million_bindings_fast, .timeout = 60) {
    const uint32_t n = 1000000;
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *v = x;
    for (uint32_t i = 0; i + 1 < n; i++) v = ir_bb_emit(bb, t_call1(ctx, "relax.nn.relu", &v->base, NULL), "lv");
    v = ir_bb_emit_output(bb, t_call1(ctx, "relax.nn.relu", &v->base, NULL), "gv");
    ir_bb_end_block(bb);
    ir_seq *s = ir_bb_finish(bb, &v->base, NULL);
    ir_bb_free(bb);
    ir_module *m = mod_of(ir_func_new(ctx, 1, &x, &s->base, NULL, NULL, NULL));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_ok(m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_log_info("wellformed: %u bindings in %.3f s", n, sec);
    cr_assert_lt(sec, 20.0); /* loose bound: sanitizer builds are ~10x slower */
}

Test(wellformed, local_function_scopes) {
    /* A local function may read an outer var (closure); its params stay inside it. */
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *p = t_var(ctx, "p", t_tensor(ctx, 2, 3));
    ir_var *q = t_var(ctx, "q", t_tensor(ctx, 2, 3));
    ir_binding ib = bind(q, norm(t_call2(ctx, "relax.add", &p->base, &x->base, "in")));
    const ir_block *iblk = ir_block_new(ctx, false, 1, &ib);
    ir_func *local = raw_func(1, &p, 1, &iblk, &q->base);
    norm(&local->base);
    ir_var *lf = t_var(ctx, "lf", local->base.sinfo);
    ir_binding ob = bind(lf, &local->base);
    const ir_block *oblk = ir_block_new(ctx, false, 1, &ob);
    expect_ok(mod_of(raw_func(1, &x, 1, &oblk, &x->base)));
    /* Using the local function's param outside it is an error. */
    ir_var *x2 = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *p2 = t_var(ctx, "p", t_tensor(ctx, 2, 3));
    ir_seq *body = ir_seq_new(ctx, 0, NULL, &p2->base, NULL);
    ir_expr_set_sinfo(&body->base, p2->base.sinfo);
    ir_func *local2 = ir_func_new(ctx, 1, &p2, &body->base, NULL, NULL, NULL);
    norm(&local2->base);
    ir_var *lf2 = t_var(ctx, "lf", local2->base.sinfo);
    ir_var *leak = t_var(ctx, "leak", t_tensor(ctx, 2, 3));
    ir_binding bs[2] = {bind(lf2, &local2->base), bind(leak, norm(t_call1(ctx, "relax.exp", &p2->base, "l")))};
    const ir_block *blk2 = ir_block_new(ctx, false, 2, bs);
    expect_bad(mod_of(raw_func(1, &x2, 1, &blk2, &leak->base)), "var 'p': used outside the scope");
}
