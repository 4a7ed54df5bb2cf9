/* SIBuilder fill / collapse on the seed's examples, the on/off switch, and lost layers. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/transform/si_builder.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"

static ir_ctx_t *ctx;
static void setup(void) { ctx = ir_ctx_new(); rt_const_eval_attach(ctx); }
static void teardown(void) { ir_ctx_free(ctx); }
TestSuite(si_builder, .init = setup, .fini = teardown);

static const ir_span *sp(const char *name) { return ir_span_named(ctx, name, false); }

static ir_expr *call(const char *op, uint32_t n, ir_expr *a, ir_expr *b, const ir_span *span) {
    ir_expr *args[2] = {a, b};
    return &ir_call_new(ctx, &ir_op_get(ctx, op)->base, n, args, NULL, 0, NULL, span)->base;
}

static ir_var *tvar(const char *name, const char *span) {
    int64_t shape[1] = {4};
    return ir_var_new(ctx, name, ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 1, shape), span ? sp(span) : NULL);
}

static ir_expr *scalar(double v, const ir_span *span) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    rt_tensor_set_f64(t, 0, v);
    ir_expr *c = &ir_const_new(ctx, t, span)->base;
    rt_tensor_release(t);
    return c;
}

/* Seed: BatchNormToInferUnpack builds several new expressions and fills them once. */
Test(si_builder, fill_batch_norm_unpack) {
    ir_var *x = tvar("x", "input"), *gamma = tvar("gamma", "bn.gamma"), *beta = tvar("beta", "bn.beta"),
           *mean = tvar("mean", "bn.mean"), *var = tvar("var", "bn.var");
    ir_expr *eps = scalar(1e-5, NULL);
    ir_expr *pre = scalar(2.0, sp("kept"));       /* already has a span: keeps it */
    ir_expr *std = call("relax.sqrt", 1, call("relax.add", 2, &var->base, eps, NULL), NULL, NULL);
    ir_expr *scale = call("relax.divide", 2, &gamma->base, std, NULL);
    ir_expr *shift = call("relax.subtract", 2, &beta->base, call("relax.multiply", 2, &mean->base, scale, NULL), NULL);
    ir_expr *out = call("relax.add", 2, call("relax.multiply", 2, &x->base, scale, NULL), call("relax.multiply", 2, shift, pre, NULL), NULL);
    ir_expr *inputs[5] = {&x->base, &gamma->base, &beta->base, &mean->base, &var->base};
    const ir_span *bn = ir_span_named(ctx, "bn1", true);
    ir_expr *filled = ir_si_fill(ctx, bn, out, inputs, 5);
    cr_assert_neq(filled, out, "nodes are immutable: span-less nodes are rebuilt");
    cr_assert_null(out->span, "the original is untouched");
    cr_assert_eq(filled->span, bn);
    /* Walk the rebuilt tree: every non-input node has bn1 except the pre-spanned constant. */
    ir_call *add = (ir_call *)filled;
    ir_call *m1 = (ir_call *)add->args[0], *m2 = (ir_call *)add->args[1];
    cr_assert_eq(m1->base.span, bn);
    cr_assert_eq(m1->args[0], &x->base, "inputs are not rebuilt");
    ir_call *sc = (ir_call *)m1->args[1];
    cr_assert_eq(sc->base.span, bn);
    ir_call *sq = (ir_call *)sc->args[1];
    cr_assert_eq(sq->base.span, bn);
    ir_call *ve = (ir_call *)sq->args[0];
    cr_assert_eq(ve->base.span, bn);
    cr_assert_eq(ve->args[1]->kind, IR_CONST);
    cr_assert_eq(ve->args[1]->span, bn, "the new epsilon constant is filled too");
    cr_assert_eq(m2->args[1], pre, "a node with a span is kept as is");
    cr_assert_eq(((ir_call *)m2->args[0])->base.span, bn);
    /* The shared `scale` node is rebuilt once and shared in the result too. */
    ir_call *shift_f = (ir_call *)m2->args[0];
    ir_call *mm = (ir_call *)shift_f->args[1];
    cr_assert_eq(mm->args[1], &sc->base);
    cr_assert_eq(x->base.span, sp("input"));
}

static ir_pass_ctx_t *pc_off;
static ir_expr *g_in, *g_out;
static const ir_span *g_coll;
static gr_status run_off(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, ir_module **out, gr_diag *d) {
    (void)self, (void)pc, (void)d;
    ir_expr *inputs[1] = {NULL};
    g_out = ir_si_fill(ctx, sp("bn1"), g_in, inputs, 0);
    g_coll = ir_si_collapse(ctx, g_in, inputs, 0);
    *out = (ir_module *)mod;
    return GR_OK;
}

Test(si_builder, disabled_is_a_no_op) {
    ir_var *x = tvar("x", NULL);
    g_in = call("relax.nn.relu", 1, call("relax.exp", 1, &x->base, NULL, sp("e")), NULL, NULL);
    static const ir_pass p = {.name = "Off", .kind = IR_PASS_MODULE, .module_fn = run_off};
    pc_off = ir_pass_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc_off, "ir.enable_si_builder=false", &d), GR_OK);
    ir_module *m = ir_module_new(ctx), *out;
    cr_assert_eq(ir_pass_run(&p, pc_off, m, &out, &d), GR_OK);
    cr_assert_eq(g_out, g_in);
    cr_assert_null(g_coll);
    ir_pass_ctx_free(pc_off);
    /* Outside any pass context the builder is on. */
    cr_assert_neq(ir_si_fill(ctx, sp("bn1"), g_in, NULL, 0), g_in);
    cr_assert_eq(ir_si_collapse(ctx, g_in, NULL, 0), sp("e"));
}

/* Seed: SimplifyReshape collapses the spans of reshape(reshape(x)). */
Test(si_builder, collapse_reshape_reshape) {
    ir_var *x = tvar("x", "input");
    ir_expr *r1 = call("relax.reshape", 1, &x->base, NULL, sp("reshape1"));
    ir_expr *r2 = call("relax.reshape", 1, r1, NULL, ir_span_named(ctx, "reshape2", true));
    ir_expr *in[1] = {&x->base};
    const ir_span *s = ir_si_collapse(ctx, r2, in, 1);
    cr_assert_not_null(s);
    cr_assert_eq(s->n, 2, "inputs are boundaries, not part of the collapse");
    cr_assert_str_eq(s->locs[0].source, "reshape1", "producers first");
    cr_assert_str_eq(s->locs[1].source, "reshape2");
    cr_assert(ir_span_is_output_of(s, "reshape2"), "the output mark survives");
    cr_assert_not(ir_span_is_output_of(s, "reshape1"));
    /* A-normal form: lv1 = reshape(x); lv2 = reshape(lv1): look through the binding. */
    ir_var *lv1 = ir_dfvar_new(ctx, "lv1", NULL, sp("reshape1"));
    ir_expr *r2b = call("relax.reshape", 1, &lv1->base, NULL, sp("reshape2"));
    gr_map b;
    gr_map_init(&b);
    gr_map_put(&b, GR_MAP_PTR(lv1), GR_MAP_PTR(r1));
    const ir_span *s2 = ir_si_collapse_bound(ctx, r2b, in, 1, &b);
    gr_map_free(&b);
    cr_assert_eq(s2, ir_span_seq(ctx, (const ir_span *[]){sp("reshape1"), sp("reshape2")}, 2));
    /* Without the bindings, the var's own span is what is seen. */
    cr_assert_eq(ir_si_collapse(ctx, r2b, in, 1), s2);
}

/* Seed: FoldConstant keeps the taken branch's span and the if's span. */
Test(si_builder, if_with_constant_condition) {
    ir_var *x = tvar("x", "input");
    ir_expr *then_b = call("relax.nn.relu", 1, &x->base, NULL, sp("relu_then"));
    ir_expr *else_b = call("relax.exp", 1, &x->base, NULL, NULL);
    ir_expr *cond = scalar(1.0, NULL);
    ir_if *iff = ir_if_new(ctx, cond, then_b, else_b, sp("if1"));
    /* Taking the branch: SequentialSpan(branch span, if span). */
    const ir_span *taken = ir_span_concat(ctx, then_b->span, iff->base.span);
    cr_assert_eq(taken->n, 2);
    cr_assert_str_eq(taken->locs[0].source, "relu_then");
    cr_assert_str_eq(taken->locs[1].source, "if1");
    /* fill descends into the condition and both branches. */
    ir_expr *in[1] = {&x->base};
    ir_if *filled = (ir_if *)ir_si_fill(ctx, sp("if1"), &iff->base, in, 1);
    cr_assert_neq(&filled->base, &iff->base);
    cr_assert_eq(filled->cond->span, sp("if1"));
    cr_assert_eq(filled->then_branch, then_b, "already spanned: shared");
    cr_assert_eq(filled->else_branch->span, sp("if1"));
    /* collapse of the whole if, post-order: cond (if1), then (relu_then), else, if; deduplicated. */
    const ir_span *all = ir_si_collapse(ctx, &filled->base, in, 1);
    cr_assert_eq(all, ir_span_seq(ctx, (const ir_span *[]){sp("if1"), sp("relu_then")}, 2));
}

static ir_module *one_func_module(ir_expr *body, ir_var *x) {
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &ir_func_new(ctx, 1, &x, body, NULL, NULL, NULL)->base);
    return m;
}

Test(si_builder, lost_layers) {
    ir_var *x = tvar("x", "input");
    ir_expr *a = call("relax.exp", 1, &x->base, NULL, sp("exp1"));
    ir_expr *b = call("relax.nn.relu", 1, a, NULL, ir_span_named(ctx, "relu1", true));
    ir_module *before = one_func_module(b, x);
    uint32_t n = 99;
    const char **lost = ir_lost_layers(before, before, &n);
    cr_assert_eq(n, 0);
    cr_assert_null(lost);
    /* relu dropped: relu1 is lost; the output mark does not matter. */
    ir_module *after = one_func_module(a, x);
    lost = ir_lost_layers(before, after, &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(lost[0], "relu1");
    free(lost);
    /* relu1's output mark is gone too; exp1 never had one. */
    lost = ir_lost_outputs(before, after, &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(lost[0], "relu1");
    free(lost);
    /* The layer name alone (no mark) keeps the layer but not its output. */
    ir_expr *unmarked = call("relax.nn.relu", 1, a, NULL, sp("relu1"));
    lost = ir_lost_layers(before, one_func_module(unmarked, x), &n);
    cr_assert_eq(n, 0);
    lost = ir_lost_outputs(before, one_func_module(unmarked, x), &n);
    cr_assert_eq(n, 1);
    free(lost);
    /* A rewrite that collapses both spans into one node loses nothing. */
    ir_expr *in[1] = {&x->base};
    ir_expr *merged = call("relax.exp", 1, &x->base, NULL, ir_si_collapse(ctx, b, in, 1));
    lost = ir_lost_layers(before, one_func_module(merged, x), &n);
    cr_assert_eq(n, 0);
    lost = ir_lost_outputs(before, one_func_module(merged, x), &n);
    cr_assert_eq(n, 0, "the collapse keeps relu1's output mark");
    /* Modules from different contexts compare by name. */
    ir_ctx_t *c2 = ir_ctx_new();
    rt_const_eval_attach(c2);
    int64_t shape[1] = {4};
    ir_var *x2 = ir_var_new(c2, "x", ir_sinfo_tensor_static(c2, IR_DTYPE_F32, 1, shape), ir_span_named(c2, "input", false));
    ir_expr *a2 = &ir_call_new(c2, &ir_op_get(c2, "relax.exp")->base, 1, (ir_expr *[]){&x2->base}, NULL, 0, NULL,
                               ir_span_named(c2, "exp1", false))->base;
    ir_module *m2 = ir_module_new(c2);
    ir_module_set_func(m2, "main", &ir_func_new(c2, 1, &x2, a2, NULL, NULL, NULL)->base);
    lost = ir_lost_layers(before, m2, &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(lost[0], "relu1");
    free(lost);
    ir_ctx_free(c2);
}
