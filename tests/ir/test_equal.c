/* Structural equality and hash tests. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "base/tensor.h"
#include "ir/builder.h"
#include "ir/equal.h"
#include "ir/op.h"
#include "tests/ir/ir_build_util.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(equal, .init = setup, .fini = teardown);

static ir_module *mod_of(const char *name, ir_func *f) {
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, name, &f->base);
    return m;
}

/* fn(x, y) { lv = <op2>(x, y) [span s1]; gv = relu(lv) [span s2] } */
static ir_func *mk(const char *op2, const char *s1, const char *s2) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_var *y = t_var(ctx, "y", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *a = ir_bb_emit(bb, t_call2(ctx, op2, &x->base, &y->base, s1), "lv");
    ir_var *r = ir_bb_emit_output(bb, t_call1(ctx, "relax.nn.relu", &a->base, s2), "gv");
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, &r->base, NULL);
    ir_bb_free(bb);
    ir_var *params[2] = {x, y};
    ir_func *f = ir_func_new(ctx, 2, params, &body->base, NULL, NULL, NULL);
    return (ir_func *)ir_normalize(ctx, &f->base, &diag);
}

Test(equal, alpha_equivalent_functions) {
    ir_func *a = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_func *b = t_simple_func(ctx, "x", "y", "lv", "gv");
    cr_assert_neq(a, b);
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert(ir_struct_equal(&a->base, &b->base, IR_EQ_NAMES | IR_EQ_SPANS));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, IR_EQ_NAMES | IR_EQ_SPANS),
                 ir_struct_hash(&b->base, IR_EQ_NAMES | IR_EQ_SPANS));
    cr_assert(ir_struct_equal(&a->base, &a->base, 0));
}

Test(equal, names_only_with_flag) {
    ir_func *a = t_simple_func(ctx, "x", "y", "lv", "gv");
    ir_func *b = t_simple_func(ctx, "p", "q", "t0", "out");
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    cr_assert_not(ir_struct_equal(&a->base, &b->base, IR_EQ_NAMES));
    cr_assert_neq(ir_struct_hash(&a->base, IR_EQ_NAMES), ir_struct_hash(&b->base, IR_EQ_NAMES));
}

Test(equal, spans_only_with_flag) {
    ir_func *a = mk("relax.add", "add1", "relu1");
    ir_func *b = mk("relax.add", "other", "relu1");
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    cr_assert_not(ir_struct_equal(&a->base, &b->base, IR_EQ_SPANS));
    cr_assert_neq(ir_struct_hash(&a->base, IR_EQ_SPANS), ir_struct_hash(&b->base, IR_EQ_SPANS));
    ir_func *c = mk("relax.add", "add1", "relu1");
    cr_assert(ir_struct_equal(&a->base, &c->base, IR_EQ_SPANS));
}

Test(equal, different_ops_and_explain) {
    ir_func *a = mk("relax.add", "s", "t");
    ir_func *b = mk("relax.multiply", "s", "t");
    cr_assert_not(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_neq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    char buf[512];
    cr_assert_not(ir_module_struct_equal_explain(mod_of("main", a), mod_of("main", b), 0, buf, sizeof(buf)));
    cr_assert(strstr(buf, "function 'main'"), "%s", buf);
    cr_assert(strstr(buf, "block 0, binding 0"), "%s", buf);
    cr_assert(strstr(buf, "R.add vs R.multiply"), "%s", buf);
    cr_assert(ir_module_struct_equal_explain(mod_of("main", a), mod_of("main", mk("relax.add", "s", "t")), 0,
                                             buf, sizeof(buf)));
    cr_assert_str_eq(buf, "");
}

Test(equal, dataflow_vs_plain_and_var_kinds) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *v = ir_bb_emit(bb, t_call1(ctx, "relax.exp", &x->base, "e"), "v");
    ir_seq *plain = ir_bb_finish(bb, &v->base, NULL);
    ir_bb_begin_dataflow(bb);
    ir_var *w = ir_bb_emit_output(bb, t_call1(ctx, "relax.exp", &x->base, "e"), "v");
    ir_seq *df = ir_bb_finish(bb, &w->base, NULL);
    ir_bb_free(bb);
    cr_assert_not(ir_struct_equal(&plain->base, &df->base, 0));
}

/* f(x: R.Tensor((d0, 4)), y: R.Tensor((d1, 4))) { r = add(x, y) } */
static ir_func *sym_func(const ir_prim *d0, const ir_prim *d1) {
    ir_var *x = t_var(ctx, "x", t_tensor_sym(ctx, d0, ir_prim_int(ctx, 4)));
    ir_var *y = t_var(ctx, "y", t_tensor_sym(ctx, d1, ir_prim_int(ctx, 4)));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *r = ir_bb_emit(bb, t_call2(ctx, "relax.add", &x->base, &y->base, "a"), "r");
    ir_seq *s = ir_bb_finish(bb, &r->base, NULL);
    ir_bb_free(bb);
    cr_assert_not_null(s, "%s", diag.msg);
    ir_var *params[2] = {x, y};
    return (ir_func *)ir_normalize(ctx, &ir_func_new(ctx, 2, params, &s->base, NULL, NULL, NULL)->base, &diag);
}

Test(equal, symbolic_dims_renamed) {
    const ir_prim *n = ir_prim_var(ctx, "n"), *m = ir_prim_var(ctx, "m"), *k = ir_prim_var(ctx, "k");
    ir_func *a = sym_func(n, n);
    ir_func *b = sym_func(m, m);
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    ir_func *c = sym_func(m, k); /* inconsistent: n pairs with m, then again with k */
    cr_assert_not(ir_struct_equal(&a->base, &c->base, 0));
    cr_assert_not(ir_struct_equal(&c->base, &a->base, 0));
    cr_assert_neq(ir_struct_hash(&a->base, 0), ir_struct_hash(&c->base, 0));
    /* Names of symbolic vars never matter; distinct-but-consistent pairs are equal. */
    const ir_prim *p = ir_prim_var(ctx, "n"), *q = ir_prim_var(ctx, "q");
    ir_func *d = sym_func(p, q), *e = sym_func(m, k);
    cr_assert(ir_struct_equal(&d->base, &e->base, 0));
    cr_assert_eq(ir_struct_hash(&d->base, 0), ir_struct_hash(&e->base, 0));
}

/* f(x: R.Tensor((v0, v1))) { y = match_cast(x, R.Tensor((v0 + v1 * 2 + v0 * v1,))) } built with
 * the vars created in the given order, so the canonical term order differs between the two. */
static ir_func *poly_func(bool swap) {
    const ir_prim *first = ir_prim_var(ctx, "a"), *second = ir_prim_var(ctx, "b");
    const ir_prim *v0 = swap ? second : first, *v1 = swap ? first : second;
    ir_var *x = t_var(ctx, "x", t_tensor_sym(ctx, v0, v1));
    const ir_prim *two = ir_prim_int(ctx, 2);
    const ir_prim *e = ir_prim_add(ctx, ir_prim_add(ctx, v0, ir_prim_mul(ctx, v1, two)), ir_prim_mul(ctx, v0, v1));
    const ir_prim *dims[1] = {e};
    const ir_sinfo *cast = ir_sinfo_tensor(ctx, IR_DTYPE_F32, 1, dims);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *y = ir_bb_emit_match_cast(bb, &x->base, cast, "y");
    ir_seq *s = ir_bb_finish(bb, &y->base, NULL);
    ir_bb_free(bb);
    return (ir_func *)ir_normalize(ctx, &ir_func_new(ctx, 1, &x, &s->base, NULL, NULL, NULL)->base, &diag);
}

Test(equal, polynomials_compare_up_to_term_order) {
    ir_func *a = poly_func(false), *b = poly_func(true);
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
}

Test(equal, free_vars_by_identity) {
    ir_var *f1 = t_var(ctx, "free", t_tensor(ctx, 2, 3));
    ir_var *f2 = t_var(ctx, "free", t_tensor(ctx, 2, 3));
    ir_expr *a = t_call1(ctx, "relax.exp", &f1->base, NULL);
    ir_expr *b = t_call1(ctx, "relax.exp", &f2->base, NULL);
    ir_expr *c = t_call1(ctx, "relax.exp", &f1->base, NULL);
    cr_assert_not(ir_struct_equal(a, b, 0));
    cr_assert(ir_struct_equal(a, c, 0));
    cr_assert_eq(ir_struct_hash(a, 0), ir_struct_hash(c, 0));
}

static ir_const *mk_const(float v) {
    int64_t shape[1] = {2};
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, shape);
    ((float *)rt_tensor_data(t))[0] = 1.0f;
    ((float *)rt_tensor_data(t))[1] = v;
    ir_const *c = ir_const_new(ctx, t, NULL);
    rt_tensor_release(t);
    return c;
}

Test(equal, constants_by_bytes) {
    ir_const *a = mk_const(2.0f), *b = mk_const(2.0f), *c = mk_const(3.0f);
    cr_assert(ir_struct_equal(&a->base, &b->base, 0));
    cr_assert_eq(ir_struct_hash(&a->base, 0), ir_struct_hash(&b->base, 0));
    cr_assert_not(ir_struct_equal(&a->base, &c->base, 0));
}

Test(equal, call_attrs_and_sinfo_args) {
    ir_var *x = t_var(ctx, "x", t_tensor(ctx, 2, 3));
    ir_expr *args[1] = {&x->base};
    const char *key = "axis";
    ir_attr v1 = ir_attr_int(1), v0 = ir_attr_int(0);
    ir_op *sm = ir_op_get(ctx, "relax.nn.softmax");
    ir_expr *a = (ir_expr *)ir_call_new(ctx, &sm->base, 1, args, ir_attrs_new(ctx, 1, &key, &v1), 0, NULL, NULL);
    ir_expr *b = (ir_expr *)ir_call_new(ctx, &sm->base, 1, args, ir_attrs_new(ctx, 1, &key, &v1), 0, NULL, NULL);
    ir_expr *c = (ir_expr *)ir_call_new(ctx, &sm->base, 1, args, ir_attrs_new(ctx, 1, &key, &v0), 0, NULL, NULL);
    cr_assert(ir_struct_equal(a, b, 0));
    cr_assert_eq(ir_struct_hash(a, 0), ir_struct_hash(b, 0));
    cr_assert_not(ir_struct_equal(a, c, 0));
    ir_expr *ext = (ir_expr *)ir_extern_new(ctx, "k", NULL);
    const ir_sinfo *s1[1] = {t_tensor(ctx, 2, 3)}, *s2[1] = {t_tensor(ctx, 3, 3)};
    ir_expr *d = (ir_expr *)ir_call_new(ctx, ext, 1, args, NULL, 1, s1, NULL);
    ir_expr *e = (ir_expr *)ir_call_new(ctx, ext, 1, args, NULL, 1, s2, NULL);
    cr_assert_not(ir_struct_equal(d, e, 0));
}

Test(equal, modules_names_order_attrs) {
    ir_module *a = mod_of("main", mk("relax.add", "s", "t"));
    ir_module_set_func(a, "g", &mk("relax.add", "s", "t")->base);
    ir_module *b = mod_of("main", mk("relax.add", "s", "t"));
    ir_module_set_func(b, "g", &mk("relax.add", "s", "t")->base);
    cr_assert(ir_module_struct_equal(a, b, IR_EQ_SPANS | IR_EQ_NAMES));
    cr_assert_eq(ir_module_struct_hash(a, 0), ir_module_struct_hash(b, 0));
    ir_module *c = mod_of("g", mk("relax.add", "s", "t"));
    ir_module_set_func(c, "main", &mk("relax.add", "s", "t")->base);
    char buf[256];
    cr_assert_not(ir_module_struct_equal_explain(a, c, 0, buf, sizeof(buf)));
    cr_assert(strstr(buf, "'main' vs 'g'"), "%s", buf);
    ir_module_set_attr(b, "system_lib_prefix", ir_attr_str(ctx, "x"));
    cr_assert_not(ir_module_struct_equal_explain(a, b, 0, buf, sizeof(buf)));
    cr_assert(strstr(buf, "module attrs"), "%s", buf);
    cr_assert_neq(ir_module_struct_hash(a, 0), ir_module_struct_hash(b, 0));
}

Test(equal, explain_names_var_and_struct_info) {
    ir_var *x = t_var(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_emit(bb, t_call1(ctx, "relax.exp", &x->base, NULL), "first");
    ir_var *v = ir_bb_emit_match_cast(bb, &x->base, t_tensor(ctx, 2, 3), "cast");
    ir_seq *s = ir_bb_finish(bb, &v->base, NULL);
    ir_var *x2 = t_var(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL));
    ir_bb_emit(bb, t_call1(ctx, "relax.exp", &x2->base, NULL), "first");
    ir_var *v2 = ir_bb_emit_match_cast(bb, &x2->base, t_tensor(ctx, 2, 4), "cast");
    ir_seq *s2 = ir_bb_finish(bb, &v2->base, NULL);
    ir_bb_free(bb);
    ir_func *f = ir_func_new(ctx, 1, &x, &s->base, NULL, NULL, NULL);
    ir_func *g = ir_func_new(ctx, 1, &x2, &s2->base, NULL, NULL, NULL);
    char buf[512];
    cr_assert_not(ir_module_struct_equal_explain(mod_of("main", f), mod_of("main", g), 0, buf, sizeof(buf)));
    cr_assert(strstr(buf, "binding 1"), "%s", buf);
    cr_assert(strstr(buf, "'cast'"), "%s", buf);
    cr_assert(strstr(buf, "R.Tensor((2, 3), dtype=\"float32\") vs R.Tensor((2, 4), dtype=\"float32\")"), "%s", buf);
}

Test(equal, million_bindings_hash_fast, .timeout = 60) {
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
    ir_func *f = ir_func_new(ctx, 1, &x, &s->base, NULL, NULL, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t h = ir_struct_hash(&f->base, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_log_info("hash: %u bindings in %.3f s", n, sec);
    cr_assert_neq(h, 0);
    cr_assert_lt(sec, 20.0); /* loose: sanitizer builds are much slower */
    /* Equality against itself walks everything too (pointer-equal only at the root). */
    ir_func *g = ir_func_with_attrs(ctx, f, NULL);
    cr_assert(ir_struct_equal(&f->base, &g->base, 0));
}
