/* Reference executor tests: IR built with the block builder (the text-format tests are in
 * test_executor_text.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/runtime/exec_test_util.h"

static ir_ctx_t *ctx;
static ir_module *mod;
static gr_diag diag;

static void setup(void) {
    ctx = ir_ctx_new();
    mod = ir_module_new(ctx);
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(executor, .init = setup, .fini = teardown);

static const int64_t S23[2] = {2, 3};
static const double A6[6] = {1, -2, 3, -4, 5, -6};
static const double B6[6] = {10, 20, 30, 40, 50, 60};

/* main(x, y) = relu((x + y) * x) */
static void build_chain(void) {
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *y = ir_var_new(ctx, "y", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *a = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &x->base, &y->base, "add1"), "a");
    ir_var *b = ir_bb_emit(bb, h5_call2(ctx, "relax.multiply", &a->base, &x->base, "mul1"), "b");
    ir_var *c = ir_bb_emit_output(bb, h5_call1(ctx, "relax.nn.relu", &b->base, "relu1"), "c");
    cr_assert_not_null(c, "%s", diag.msg);
    ir_seq *s = ir_bb_finish(bb, &c->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, s));
}

Test(executor, straight_line_chain) {
    build_chain();
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(rt_exec_num_inputs(x), 2);
    cr_assert_str_eq(rt_exec_input_name(x, 1), "y");
    cr_assert_eq(rt_exec_input_sinfo(x, 0), h5_f32(ctx, 2, 3));
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    for (int rep = 0; rep < 2; rep++) { /* the plan is reusable */
        rt_value out;
        cr_assert_eq(rt_exec_run(x, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
        cr_assert_eq(out.kind, RT_VAL_TENSOR);
        cr_assert(rt_tensor_same_shape(out.u.t, in[0].u.t));
        for (int i = 0; i < 6; i++) {
            double want = (A6[i] + B6[i]) * A6[i];
            if (want < 0) want = 0;
            cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), want, 1e-5, "elem %d", i);
        }
        rt_value_clear(&out);
    }
    /* inputs stay the caller's: still one reference each */
    cr_assert_eq(in[0].u.t->obj.refcount, 1);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    rt_exec_free(x);
}

Test(executor, missing_function_is_not_found) {
    build_chain();
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "nope", &x, &diag), GR_ERR_NOT_FOUND);
    cr_assert_null(x);
    cr_assert(strstr(diag.msg, "nope"), "%s", diag.msg);
}

static gr_status run_chain_with(rt_value *in, uint32_t n) {
    build_chain();
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    rt_value out;
    gr_status st = rt_exec_run(x, in, n, &out, &diag);
    cr_assert_eq(out.kind, RT_VAL_NONE);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
    return st;
}

Test(executor, input_wrong_dtype) {
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F64, 2, S23, B6)};
    cr_assert_eq(run_chain_with(in, 2), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'y'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "float64"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "float32"), "%s", diag.msg);
}

Test(executor, input_wrong_rank) {
    int64_t s3[3] = {2, 3, 1};
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 3, s3, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    cr_assert_eq(run_chain_with(in, 2), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'x'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "rank 3, expected 2"), "%s", diag.msg);
}

Test(executor, input_wrong_dim) {
    int64_t s32[2] = {3, 2};
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, s32, B6)};
    cr_assert_eq(run_chain_with(in, 2), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'y'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "dim 0 is 3, expected 2"), "%s", diag.msg);
}

Test(executor, input_wrong_count_and_kind) {
    rt_value in[1] = {h5_val(IR_DTYPE_F32, 2, S23, A6)};
    cr_assert_eq(run_chain_with(in, 1), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "takes 2 inputs, got 1"), "%s", diag.msg);
    teardown();
    setup();
    rt_value in2[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), rt_value_tuple(0)};
    cr_assert_eq(run_chain_with(in2, 2), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'y': not a tensor"), "%s", diag.msg);
}

/* main(x: (n, m), y: (n, m)) = x + y with a runtime check of n and m */
static void build_sym_add(void) {
    const ir_prim *n = ir_prim_var(ctx, "n"), *m = ir_prim_var(ctx, "m");
    const ir_prim *dims[2] = {n, m};
    const ir_sinfo *t = ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, dims);
    ir_var *x = ir_var_new(ctx, "x", t, NULL);
    ir_var *y = ir_var_new(ctx, "y", t, NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *a = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &x->base, &y->base, "add1"), "a");
    cr_assert_not_null(a, "%s", diag.msg);
    ir_seq *s = ir_bb_finish(bb, &a->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, s));
}

Test(executor, symbolic_inputs_bind_and_check_consistency) {
    build_sym_add();
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &x, &diag), GR_OK, "%s", diag.msg);
    int64_t s32[2] = {3, 2};
    rt_value ok[2] = {h5_val(IR_DTYPE_F32, 2, s32, A6), h5_val(IR_DTYPE_F32, 2, s32, B6)};
    rt_value out;
    cr_assert_eq(rt_exec_run(x, ok, 2, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.u.t->dl.shape[0], 3);
    cr_assert_float_eq(rt_tensor_get_f64(out.u.t, 5), -6 + 60, 1e-6);
    rt_value_clear(&out);
    /* bindings do not leak from one run into the next: another n works */
    rt_value ok2[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    cr_assert_eq(rt_exec_run(x, ok2, 2, &out, &diag), GR_OK, "%s", diag.msg);
    rt_value_clear(&out);
    rt_value bad[2] = {h5_val(IR_DTYPE_F32, 2, s32, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    cr_assert_eq(rt_exec_run(x, bad, 2, &out, &diag), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 'y'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "n = 3 (bound by input 'x')"), "%s", diag.msg);
    for (int i = 0; i < 2; i++) {
        rt_value_clear(&ok[i]);
        rt_value_clear(&ok2[i]);
        rt_value_clear(&bad[i]);
    }
    rt_exec_free(x);
}

/* t = (x, y); a = t[0]; b = t[1]; s = a + b; return (s, a) */
Test(executor, tuples_and_get_item) {
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *y = ir_var_new(ctx, "y", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_expr *f[2] = {&x->base, &y->base};
    ir_var *t = ir_bb_emit(bb, (ir_expr *)ir_tuple_new(ctx, 2, f, NULL), "t");
    ir_var *a = ir_bb_emit(bb, (ir_expr *)ir_tgi_new(ctx, &t->base, 0, NULL), "a");
    ir_var *b = ir_bb_emit(bb, (ir_expr *)ir_tgi_new(ctx, &t->base, 1, NULL), "b");
    ir_var *s = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &a->base, &b->base, "add1"), "s");
    cr_assert_not_null(s, "%s", diag.msg);
    ir_expr *r[2] = {&s->base, &a->base};
    ir_seq *body = ir_bb_finish(bb, (ir_expr *)ir_tuple_new(ctx, 2, r, NULL), NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, body));

    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    rt_value out;
    cr_assert_eq(rt_exec_run(ex, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.kind, RT_VAL_TUPLE);
    cr_assert_eq(out.u.tuple.n, 2);
    cr_assert_float_eq(rt_tensor_get_f64(out.u.tuple.items[0].u.t, 3), 36, 1e-6);
    /* the second output is the input tensor itself (shared, not copied) */
    cr_assert_eq(out.u.tuple.items[1].u.t, in[0].u.t);
    rt_value_clear(&out);
    cr_assert_eq(in[0].u.t->obj.refcount, 1);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    rt_exec_free(ex);
}

/* main(c: bool (), x) = if c: exp-free branch x + x else x * x */
Test(executor, if_else_picks_branch) {
    const ir_sinfo *bs = ir_sinfo_tensor_static(ctx, IR_DTYPE_BOOL, 0, NULL);
    ir_var *c = ir_var_new(ctx, "c", bs, NULL);
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *y = ir_var_new(ctx, "y", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *tv = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &x->base, &y->base, "then_add"), "tv");
    ir_seq *then_s = ir_bb_finish(bb, &tv->base, NULL);
    ir_var *ev = ir_bb_emit(bb, h5_call2(ctx, "relax.multiply", &x->base, &x->base, "else_mul"),
                            "ev");
    ir_seq *else_s = ir_bb_finish(bb, &ev->base, NULL);
    cr_assert(then_s && else_s, "%s", diag.msg);
    ir_expr *iff = (ir_expr *)ir_if_new(ctx, &c->base, (ir_expr *)then_s, (ir_expr *)else_s, NULL);
    ir_var *r = ir_bb_emit(bb, iff, "r");
    cr_assert_not_null(r, "%s", diag.msg);
    ir_var *r2 = ir_bb_emit(bb, h5_call1(ctx, "relax.negative", &r->base, "neg"), "r2");
    ir_seq *body = ir_bb_finish(bb, &r2->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[3] = {c, x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 3, ps, body));

    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    for (int cond = 0; cond < 2; cond++) {
        double cv = cond;
        rt_value in[3] = {h5_val(IR_DTYPE_BOOL, 0, NULL, &cv), h5_val(IR_DTYPE_F32, 2, S23, A6),
                          h5_val(IR_DTYPE_F32, 2, S23, B6)};
        rt_value out;
        cr_assert_eq(rt_exec_run(ex, in, 3, &out, &diag), GR_OK, "%s", diag.msg);
        for (int i = 0; i < 6; i++) {
            double want = cond ? -(A6[i] + B6[i]) : -(A6[i] * A6[i]);
            cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), want, 1e-5);
        }
        rt_value_clear(&out);
        for (int i = 0; i < 3; i++) rt_value_clear(&in[i]);
    }
    rt_exec_free(ex);
}

/* helper(a, b) = a * b + a;  main(x, y) = helper(helper(x, y), y) */
Test(executor, calls_between_functions) {
    ir_var *a = ir_var_new(ctx, "a", h5_f32(ctx, 2, 3), NULL);
    ir_var *b = ir_var_new(ctx, "b", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *m1 = ir_bb_emit(bb, h5_call2(ctx, "relax.multiply", &a->base, &b->base, "m"), "m1");
    ir_var *s1 = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &m1->base, &a->base, "s"), "s1");
    ir_seq *hb = ir_bb_finish(bb, &s1->base, NULL);
    ir_var *hps[2] = {a, b};
    ir_module_set_func(mod, "helper", (ir_expr *)h5_func(ctx, 2, hps, hb));

    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *y = ir_var_new(ctx, "y", h5_f32(ctx, 2, 3), NULL);
    ir_bb_set_module(bb, mod);
    ir_gvar *g = ir_module_gvar(mod, "helper");
    ir_expr *a1[2] = {&x->base, &y->base};
    ir_var *c1 = ir_bb_emit(bb, (ir_expr *)ir_call_new(ctx, &g->base, 2, a1, NULL, 0, NULL, NULL),
                            "c1");
    cr_assert_not_null(c1, "%s", diag.msg);
    ir_expr *a2[2] = {&c1->base, &y->base};
    ir_var *c2 = ir_bb_emit(bb, (ir_expr *)ir_call_new(ctx, &g->base, 2, a2, NULL, 0, NULL, NULL),
                            "c2");
    ir_seq *mb = ir_bb_finish(bb, &c2->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, mb));

    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    rt_value out;
    cr_assert_eq(rt_exec_run(ex, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
    for (int i = 0; i < 6; i++) {
        double h1 = A6[i] * B6[i] + A6[i];
        cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), h1 * B6[i] + h1, 1e-3);
    }
    rt_value_clear(&out);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    rt_exec_free(ex);
}

/* main(x: R.Tensor(ndim=1)) { v = match_cast(x, (n,)); o = dps test_add(v, v) -> (n,);
 *                            return (o, R.shape([n * 2, 3])) } */
static void build_match_cast_dps(const char *sym) {
    const ir_prim *n = ir_prim_var(ctx, "n");
    ir_var *x = ir_var_new(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_VOID, 1, NULL), NULL);
    const ir_sinfo *tn = ir_sinfo_tensor(ctx, IR_DTYPE_F32, 1, &n);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *v = ir_bb_emit_match_cast(bb, &x->base, tn, "v");
    cr_assert_not_null(v, "%s", diag.msg);
    ir_expr *args[2] = {&v->base, &v->base};
    ir_var *o = ir_bb_emit(bb, h5_dps(ctx, sym, 2, args, tn), "o");
    cr_assert_not_null(o, "%s", diag.msg);
    const ir_prim *dims[2] = {ir_prim_mul(ctx, n, ir_prim_int(ctx, 2)), ir_prim_int(ctx, 3)};
    ir_expr *r[2] = {&o->base, (ir_expr *)ir_shape_expr_new(ctx, 2, dims, NULL)};
    ir_seq *body = ir_bb_finish(bb, (ir_expr *)ir_tuple_new(ctx, 2, r, NULL), NULL);
    cr_assert_not_null(body, "%s", diag.msg);
    ir_bb_free(bb);
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 1, &x, body));
}

Test(executor, match_cast_symbolic_dims_and_dps_call) {
    build_match_cast_dps("test_add");
    h5_mod_ctx mc = {0};
    rt_module *rm = rt_module_new(&h5_mod_iface, &mc, "testmod");
    rt_module_attach(mod, rm);
    rt_module_release(rm); /* the IR context keeps it */
    cr_assert_eq(rt_module_count(mod), 1);
    cr_assert_eq(rt_module_find_function(mod, "test_add"), rm);
    cr_assert_null(rt_module_find_function(mod, "other"));

    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    int64_t n5 = 5;
    double v5[5] = {1, 2, 3, 4, 5};
    rt_value in = h5_val(IR_DTYPE_F32, 1, &n5, v5);
    rt_value out;
    cr_assert_eq(rt_exec_run(ex, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(mc.calls, 1);
    cr_assert_eq(out.kind, RT_VAL_TUPLE);
    rt_value *o = &out.u.tuple.items[0], *s = &out.u.tuple.items[1];
    cr_assert_eq(o->kind, RT_VAL_TENSOR);
    cr_assert_eq(o->u.t->dl.shape[0], 5);
    cr_assert_float_eq(rt_tensor_get_f64(o->u.t, 4), 10, 1e-6);
    cr_assert_eq(s->kind, RT_VAL_SHAPE);
    cr_assert_eq(s->u.shape.ndim, 2);
    cr_assert_eq(s->u.shape.dims[0], 10);
    cr_assert_eq(s->u.shape.dims[1], 3);
    rt_value_clear(&out);
    rt_value_clear(&in);

    /* match_cast rejects a wrong dtype, naming the binding */
    rt_value bad = h5_val(IR_DTYPE_F64, 1, &n5, v5);
    cr_assert_eq(rt_exec_run(ex, &bad, 1, &out, &diag), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "match_cast of 'v'"), "%s", diag.msg);
    rt_value_clear(&bad);
    rt_exec_free(ex);
    cr_assert_eq(mc.destroyed, 0);
    teardown(); /* the context drops the module */
    cr_assert_eq(mc.destroyed, 1);
    setup();
}

Test(executor, dps_two_outputs_make_a_tuple) {
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *y = ir_var_new(ctx, "y", h5_f32(ctx, 2, 3), NULL);
    const ir_sinfo *fs[2] = {h5_f32(ctx, 2, 3), h5_f32(ctx, 2, 3)};
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_expr *args[2] = {&x->base, &y->base};
    ir_var *o = ir_bb_emit(bb, h5_dps(ctx, "test_add_mul", 2, args, ir_sinfo_tuple(ctx, 2, fs)),
                           "o");
    cr_assert_not_null(o, "%s", diag.msg);
    ir_var *p1 = ir_bb_emit(bb, (ir_expr *)ir_tgi_new(ctx, &o->base, 1, NULL), "p1");
    ir_seq *body = ir_bb_finish(bb, &p1->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, body));
    h5_mod_ctx mc = {0};
    rt_module *rm = rt_module_new(&h5_mod_iface, &mc, "testmod");
    rt_module_attach(mod, rm);
    rt_module_release(rm);

    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 2, S23, A6), h5_val(IR_DTYPE_F32, 2, S23, B6)};
    rt_value out;
    cr_assert_eq(rt_exec_run(ex, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), A6[i] * B6[i], 1e-4);
    rt_value_clear(&out);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    rt_exec_free(ex);
}

Test(executor, dps_missing_symbol_names_it) {
    build_match_cast_dps("no_such_fn");
    h5_mod_ctx mc = {0};
    rt_module *rm = rt_module_new(&h5_mod_iface, &mc, "testmod");
    rt_module_attach(mod, rm);
    rt_module_release(rm);
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_ERR_NOT_FOUND);
    cr_assert_null(ex);
    cr_assert(strstr(diag.msg, "'no_such_fn'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "binding 'o'"), "%s", diag.msg);
}

Test(executor, unbound_symbolic_var_is_an_error_not_a_crash) {
    /* R.shape([k]) where k is bound by nothing */
    const ir_prim *k = ir_prim_var(ctx, "k");
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *s = ir_bb_emit(bb, (ir_expr *)ir_shape_expr_new(ctx, 1, &k, NULL), "s");
    cr_assert_not_null(s, "%s", diag.msg);
    ir_seq *body = ir_bb_finish(bb, &s->base, NULL);
    ir_bb_free(bb);
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 1, &x, body));
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in = h5_val(IR_DTYPE_F32, 2, S23, A6), out;
    cr_assert_eq(rt_exec_run(ex, &in, 1, &out, &diag), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "'k'"), "%s", diag.msg);
    rt_value_clear(&in);
    rt_exec_free(ex);
}

/* A kernel error (runtime shape mismatch) keeps the layer from the span. */
Test(executor, kernel_error_names_layer) {
    ir_var *x = ir_var_new(ctx, "x", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 1, NULL), NULL);
    ir_var *y = ir_var_new(ctx, "y", ir_sinfo_tensor(ctx, IR_DTYPE_F32, 1, NULL), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *a = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &x->base, &y->base, "my_add_layer"),
                           "a");
    cr_assert_not_null(a, "%s", diag.msg);
    ir_seq *body = ir_bb_finish(bb, &a->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {x, y};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, body));
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    int64_t n3 = 3, n4 = 4;
    rt_value in[2] = {h5_val(IR_DTYPE_F32, 1, &n3, A6), h5_val(IR_DTYPE_F32, 1, &n4, B6)};
    rt_value out;
    cr_assert_neq(rt_exec_run(ex, in, 2, &out, &diag), GR_OK);
    cr_assert_str_eq(diag.layer, "my_add_layer", "%s", diag.msg);
    cr_assert_eq(out.kind, RT_VAL_NONE);
    rt_value_clear(&in[0]);
    rt_value_clear(&in[1]);
    rt_exec_free(ex);
}

typedef struct prof_log {
    int n_op;
    uint64_t total;
    char last[64];
} prof_log;

static void prof_cb(const rt_exec_event *ev, void *user) {
    prof_log *l = user;
    if (strcmp(ev->kind, "op") == 0) l->n_op++;
    l->total += ev->ns;
    snprintf(l->last, sizeof l->last, "%s", ev->name);
}

/* x -> 40 chained adds; liveness keeps only a handful of values alive at once. */
Test(executor, liveness_bounds_live_values_and_profiler_sees_each_op) {
    enum { N = 40 };
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_bb_begin_dataflow(bb);
    ir_var *cur = x;
    for (int i = 0; i < N; i++) {
        ir_expr *e = h5_call2(ctx, "relax.add", &cur->base, &x->base, NULL);
        cur = i == N - 1 ? ir_bb_emit_output(bb, e, "out") : ir_bb_emit(bb, e, NULL);
        cr_assert_not_null(cur, "%s", diag.msg);
    }
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, &cur->base, NULL);
    ir_bb_free(bb);
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 1, &x, body));
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    prof_log log = {0};
    rt_exec_set_profiler(ex, prof_cb, &log);
    rt_value in = h5_val(IR_DTYPE_F32, 2, S23, A6), out;
    cr_assert_eq(rt_exec_run(ex, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_float_eq(rt_tensor_get_f64(out.u.t, 2), 3.0 * (N + 1), 1e-4);
    cr_assert_leq(rt_exec_peak_live(ex), 3, "peak %u", rt_exec_peak_live(ex));
    cr_assert_eq(log.n_op, N);
    cr_assert_str_eq(log.last, "R.add");
    rt_value_clear(&out);
    rt_value_clear(&in);
    rt_exec_free(ex);
}

/* main(x) { f = fn(p) { q = p + p (or p + x: a capture); return q }; r = f(x); return r } */
static gr_status build_local_func(bool capture, rt_exec_t **ex) {
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_var *p = ir_var_new(ctx, "p", h5_f32(ctx, 2, 3), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    ir_var *q = ir_bb_emit(bb, h5_call2(ctx, "relax.add", &p->base, capture ? &x->base : &p->base,
                                        "inner_add"),
                           "q");
    ir_seq *ib = ir_bb_finish(bb, &q->base, NULL);
    ir_func *inner = h5_func(ctx, 1, &p, ib);
    ir_var *f = ir_bb_emit(bb, (ir_expr *)inner, "f");
    cr_assert_not_null(f, "%s", diag.msg);
    ir_expr *args[1] = {&x->base};
    ir_var *r = ir_bb_emit(bb, (ir_expr *)ir_call_new(ctx, &f->base, 1, args, NULL, 0, NULL, NULL),
                           "r");
    cr_assert_not_null(r, "%s", diag.msg);
    ir_seq *body = ir_bb_finish(bb, &r->base, NULL);
    ir_bb_free(bb);
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 1, &x, body));
    return rt_exec_new(mod, "main", ex, &diag);
}

Test(executor, local_function_called_directly) {
    rt_exec_t *ex = NULL;
    cr_assert_eq(build_local_func(false, &ex), GR_OK, "%s", diag.msg);
    rt_value in = h5_val(IR_DTYPE_F32, 2, S23, A6), out;
    cr_assert_eq(rt_exec_run(ex, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    for (int i = 0; i < 6; i++) cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), 2 * A6[i], 1e-6);
    rt_value_clear(&out);
    rt_value_clear(&in);
    rt_exec_free(ex);
}

Test(executor, closure_capture_is_a_clear_error) {
    rt_exec_t *ex = NULL;
    cr_assert_eq(build_local_func(true, &ex), GR_ERR_UNSUPPORTED);
    cr_assert_null(ex);
    cr_assert(strstr(diag.msg, "'x'"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "closures"), "%s", diag.msg);
    cr_assert(strstr(diag.msg, "main.f"), "%s", diag.msg);
}

/* Not in A-normal form: r = add(multiply(x, x), (x, x)[1]) with the nested call and projection
 * evaluated into temporaries by the plan. */
Test(executor, nested_expressions_use_temporaries) {
    ir_var *x = ir_var_new(ctx, "x", h5_f32(ctx, 2, 3), NULL);
    ir_expr *mul = h5_call2(ctx, "relax.multiply", &x->base, &x->base, "mul");
    ir_expr *f[2] = {&x->base, &x->base};
    ir_expr *tgi = (ir_expr *)ir_tgi_new(ctx, (ir_expr *)ir_tuple_new(ctx, 2, f, NULL), 1, NULL);
    ir_expr *add = h5_call2(ctx, "relax.add", mul, tgi, "add");
    cr_assert_not_null(ir_normalize(ctx, add, &diag), "%s", diag.msg);
    ir_var *r = ir_var_new(ctx, "r", add->sinfo, NULL);
    ir_binding b = {.var = r, .value = add};
    const ir_block *blk = ir_block_new(ctx, false, 1, &b);
    ir_seq *body = ir_seq_new(ctx, 1, &blk, &r->base, NULL);
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 1, &x, body));
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in = h5_val(IR_DTYPE_F32, 2, S23, A6), out;
    cr_assert_eq(rt_exec_run(ex, &in, 1, &out, &diag), GR_OK, "%s", diag.msg);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(rt_tensor_get_f64(out.u.t, i), A6[i] * A6[i] + A6[i], 1e-5);
    rt_value_clear(&out);
    rt_value_clear(&in);
    rt_exec_free(ex);
}

/* Shape and prim params bind symbolic vars too: main(s: R.Shape([n, 2]), p: R.Prim(value=m))
 * returns R.shape([n * m, 2]). */
Test(executor, shape_and_prim_params_bind_vars) {
    const ir_prim *n = ir_prim_var(ctx, "n"), *m = ir_prim_var(ctx, "m");
    const ir_prim *sd[2] = {n, ir_prim_int(ctx, 2)};
    ir_var *s = ir_var_new(ctx, "s", ir_sinfo_shape(ctx, 2, sd), NULL);
    ir_var *p = ir_var_new(ctx, "p", ir_sinfo_prim(ctx, IR_DTYPE_I64, m), NULL);
    ir_bb_t *bb = ir_bb_new(ctx, &diag);
    const ir_prim *od[2] = {ir_prim_mul(ctx, n, m), ir_prim_int(ctx, 2)};
    ir_var *o = ir_bb_emit(bb, (ir_expr *)ir_shape_expr_new(ctx, 2, od, NULL), "o");
    cr_assert_not_null(o, "%s", diag.msg);
    ir_seq *body = ir_bb_finish(bb, &o->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[2] = {s, p};
    ir_module_set_func(mod, "main", (ir_expr *)h5_func(ctx, 2, ps, body));
    rt_exec_t *ex = NULL;
    cr_assert_eq(rt_exec_new(mod, "main", &ex, &diag), GR_OK, "%s", diag.msg);
    rt_value in[2] = {{.kind = RT_VAL_SHAPE}, {.kind = RT_VAL_INT, .u.i = 7}}, out;
    in[0].u.shape.ndim = 2;
    in[0].u.shape.dims[0] = 3;
    in[0].u.shape.dims[1] = 2;
    cr_assert_eq(rt_exec_run(ex, in, 2, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out.kind, RT_VAL_SHAPE);
    cr_assert_eq(out.u.shape.dims[0], 21);
    cr_assert_eq(out.u.shape.dims[1], 2);
    in[0].u.shape.dims[1] = 4; /* the static dim must match */
    cr_assert_eq(rt_exec_run(ex, in, 2, &out, &diag), GR_ERR_INVALID);
    cr_assert(strstr(diag.msg, "input 's': dim 1 is 4, expected 2"), "%s", diag.msg);
    rt_exec_free(ex);
}

Test(executor, runtime_module_helpers) {
    h5_mod_ctx mc = {0};
    rt_module_i old = h5_mod_iface;
    old.api_version = RT_MODULE_API_VERSION + 1;
    rt_module *m = rt_module_new(&old, &mc, "oldmod");
    cr_assert_str_eq(m->name, "oldmod");
    cr_assert_eq(rt_module_from_object(&m->obj), m);
    int64_t s = 2;
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, &s);
    cr_assert_null(rt_module_from_object(&t->obj));
    DLTensor *args[3] = {&t->dl, &t->dl, &t->dl};
    cr_assert_eq(rt_module_call(m, "test_add", args, 2, 1, &diag), GR_ERR_RUNTIME);
    cr_assert(strstr(diag.msg, "oldmod"), "%s", diag.msg);
    cr_assert_eq(mc.calls, 0);
    /* external_mods keeps earlier modules first; a non-module entry is skipped */
    cr_assert_eq(rt_module_count(mod), 0);
    cr_assert_null(rt_module_at(mod, 0));
    rt_module *m2 = rt_module_new(&h5_mod_iface, &mc, "second");
    rt_module_attach(mod, m);
    rt_module_attach(mod, m2);
    cr_assert_eq(rt_module_count(mod), 2);
    cr_assert_eq(rt_module_at(mod, 0), m);
    cr_assert_eq(rt_module_at(mod, 1), m2);
    cr_assert_eq(rt_module_find_function(mod, "test_add"), m); /* first that defines it */
    rt_module_release(m);
    rt_module_release(m2);
    rt_tensor_release(t);
    cr_assert_eq(mc.destroyed, 0);
    teardown();
    cr_assert_eq(mc.destroyed, 2);
    setup();
}
