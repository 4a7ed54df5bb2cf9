/* Golden before/after tests, one per pass: parse NAME.before.relax, run the pass (with the
 * well-formedness instrument), print with spans and compare with NAME.after.relax; the printed
 * result must parse back to an equal module (spans included), the pass must have changed the
 * module, and no frontend layer may be lost. GRAFT_UPDATE_GOLDEN=1 rewrites the .after files
 * (review the diff before committing). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/equal.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/value.h"
#include "tests/test_util.h"

#define GOLDEN_DIR "tests/golden/passes/"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }
TestSuite(pass_golden, .init = setup, .fini = teardown);


static ir_module *parse(const char *path) {
    ir_module *m = NULL;
    gr_status st = ir_parse_file(ctx, path, &m, &diag);
    cr_assert_eq(st, GR_OK, "%s: %s", path, diag.msg);
    return m;
}

/* Runs `pass` on `before` and checks the result against NAME.after.relax. */
static ir_module *check_golden(const char *name, const ir_pass *pass, ir_module *before) {
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_opt_level(pc, 4);
    ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
    ir_module *after = NULL;
    gr_status st = ir_pass_run(pass, pc, before, &after, &diag);
    ir_pass_ctx_free(pc);
    cr_assert_eq(st, GR_OK, "%s: %s", name, diag.msg);
    cr_assert_neq(after, before, "%s: the pass changed nothing", name);
    char *text = ir_print_module_str(after, NULL);
    char path[256];
    snprintf(path, sizeof(path), GOLDEN_DIR "%s.after.relax", name);
    if (getenv("GRAFT_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(text, f);
        fclose(f);
    }
    char *want = tu_read_file(path, NULL);
    cr_assert_not_null(want, "missing %s", path);
    cr_assert_str_eq(text, want, "%s differs from the printed result:\n%s", path, text);
    /* The golden file parses back to the same module, spans included. */
    ir_module *again = parse(path);
    char why[512] = "";
    cr_assert(ir_module_struct_equal_explain(again, after, IR_EQ_SPANS, why, sizeof(why)),
              "%s: reparsed module differs: %s", name, why);
    uint32_t nlost = 0;
    const char **lost = ir_lost_layers(before, after, &nlost);
    cr_assert_eq(nlost, 0, "%s: lost layer '%s'", name, nlost ? lost[0] : "");
    free(lost);
    lost = ir_lost_outputs(before, after, &nlost);
    cr_assert_eq(nlost, 0, "%s: no expression is marked as producing '%s' any more", name, nlost ? lost[0] : "");
    free(lost);
    free(want);
    free(text);
    return after;
}

static ir_module *golden(const char *name, const char *pass_name) {
    char path[256];
    snprintf(path, sizeof(path), GOLDEN_DIR "%s.before.relax", name);
    const ir_pass *p = ir_pass_find(pass_name);
    cr_assert_not_null(p, "no pass %s", pass_name);
    return check_golden(name, p, parse(path));
}

/* Runs function `fn` of both modules on the same pseudo-random inputs through the reference
 * executor: a rewrite must not change the numbers. */
static void check_same_outputs(const ir_module *a, const ir_module *b, const char *fn) {
    rt_exec_t *xa = NULL, *xb = NULL;
    cr_assert_eq(rt_exec_new(a, fn, &xa, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(rt_exec_new(b, fn, &xb, &diag), GR_OK, "%s", diag.msg);
    uint32_t n = rt_exec_num_inputs(xb);
    cr_assert_eq(n, rt_exec_num_inputs(xa));
    rt_value in[8];
    uint32_t seed = 12345;
    for (uint32_t i = 0; i < n && i < 8; i++) {
        int64_t shape[8];
        const ir_sinfo *s = rt_exec_input_sinfo(xa, i);
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) {
            seed = seed * 1103515245u + 12345u;
            rt_tensor_set_f64(t, k, (double)((seed >> 8) % 2000) / 1000.0 - 1.0);
        }
        in[i] = rt_value_tensor(t);
    }
    rt_value ra = {0}, rb = {0};
    cr_assert_eq(rt_exec_run(xa, in, n, &ra, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(rt_exec_run(xb, in, n, &rb, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(ra.kind, RT_VAL_TENSOR);
    cr_assert_eq(rb.kind, RT_VAL_TENSOR);
    cr_assert(rt_tensor_same_shape(ra.u.t, rb.u.t));
    for (int64_t k = 0; k < rt_tensor_numel(ra.u.t); k++) {
        double va = rt_tensor_get_f64(ra.u.t, k), vb = rt_tensor_get_f64(rb.u.t, k);
        cr_assert(va - vb < 1e-4 && vb - va < 1e-4, "%s: element %ld: %g vs %g", fn, (long)k, va, vb);
    }
    rt_value_clear(&ra);
    rt_value_clear(&rb);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(xa);
    rt_exec_free(xb);
}

static ir_module *golden_checked(const char *name, const char *pass_name, const char *fn2) {
    char path[256];
    snprintf(path, sizeof(path), GOLDEN_DIR "%s.before.relax", name);
    ir_module *before = parse(path);
    ir_module *after = golden(name, pass_name);
    check_same_outputs(before, after, "main");
    if (fn2) check_same_outputs(before, after, fn2);
    return after;
}

Test(pass_golden, canonicalize_bindings) { golden("canonicalize", "CanonicalizeBindings"); }
Test(pass_golden, dead_code_elimination) { golden("dce", "DeadCodeElimination"); }
Test(pass_golden, eliminate_common_subexpr) { golden("cse", "EliminateCommonSubexpr"); }
Test(pass_golden, decompose_ops_for_inference) { golden_checked("decompose", "DecomposeOpsForInference", NULL); }
Test(pass_golden, fold_batch_norm_into_conv) { golden_checked("fold_bn", "FoldBatchNormIntoConv", "decomposed"); }
/* relu -> conv 1x1 -> avg pool and a grouped conv with bias under a ceil-mode pool swap; a 3x3
 * conv, a bias under a padded pool and a conv read twice stay */
Test(pass_golden, pool_before_conv1x1) { golden_checked("pool_conv", "PoolBeforeConv1x1", "biased"); }
Test(pass_golden, simplify_expr) { golden_checked("simplify", "SimplifyExpr", NULL); }
/* torch-exported layer norms (x ^ 2 and x * x, scalar and [1,1,C] affine) and erf GELUs (both
 * orders) fuse; a GELU with another constant and a norm over another axis stay */
Test(pass_golden, fuse_layer_norm_gelu) { golden_checked("fuse_norm", "FuseLayerNormGelu", NULL); }
Test(pass_golden, fold_constant) { golden_checked("fold_constant", "FoldConstant", NULL); }
Test(pass_golden, to_non_dataflow) { golden("to_non_dataflow", "ToNonDataflow"); }
Test(pass_golden, default_pipeline_on_fold_bn) { golden_checked("pipeline_fold_bn", "default", "decomposed"); }
Test(pass_golden, default_pipeline_on_decompose) { golden_checked("pipeline_decompose", "default", NULL); }

/* The parser already normalizes, so Normalize's input is built here: nested calls with spans
 * (the same module normalize.before.relax shows). */
Test(pass_golden, normalize) {
    int64_t shape[2] = {2, 3};
    const ir_sinfo *t = ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 2, shape);
    ir_var *x = ir_var_new(ctx, "x", t, NULL), *y = ir_var_new(ctx, "y", t, NULL);
    ir_expr *exp = &ir_call_new(ctx, &ir_op_get(ctx, "relax.exp")->base, 1, (ir_expr *[]){&y->base}, NULL, 0, NULL,
                                ir_span_named(ctx, "exp1", false))->base;
    ir_expr *add = &ir_call_new(ctx, &ir_op_get(ctx, "relax.add")->base, 2, (ir_expr *[]){&x->base, exp}, NULL, 0,
                                NULL, ir_span_named(ctx, "add1", true))->base;
    ir_expr *relu = &ir_call_new(ctx, &ir_op_get(ctx, "relax.nn.relu")->base, 1, (ir_expr *[]){add}, NULL, 0, NULL,
                                 ir_span_named(ctx, "relu1", true))->base;
    ir_var *gv = ir_var_new(ctx, "gv", t, relu->span);
    ir_binding b = {gv, relu, NULL};
    const ir_block *blk = ir_block_new(ctx, true, 1, &b);
    ir_seq *body = ir_seq_new(ctx, 1, &blk, &gv->base, NULL);
    const char *key = "global_symbol";
    ir_attr val = ir_attr_str(ctx, "main");
    ir_func *f = ir_func_new(ctx, 2, (ir_var *[]){x, y}, &body->base, t, ir_attrs_new(ctx, 1, &key, &val), NULL);
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    char *text = ir_print_module_str(m, NULL);
    char *want = tu_read_file(GOLDEN_DIR "normalize.before.relax", NULL);
    cr_assert_not_null(want);
    cr_assert_str_eq(text, want, "the nested input prints as normalize.before.relax:\n%s", text);
    free(text);
    free(want);
    ir_module *after = check_golden("normalize", ir_pass_find("Normalize"), m);
    ir_seq *ns = IR_AS(IR_AS(after->funcs[0], ir_func)->body, ir_seq);
    cr_assert_eq(ns->blocks[0]->n, 3);
}

static rt_tensor *vec4(const float *v) {
    int64_t shape[1] = {4};
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, shape);
    for (int i = 0; i < 4; i++) rt_tensor_set_f64(t, i, v[i]);
    return t;
}

Test(pass_golden, bind_params) {
    const float g[4] = {1, 2, 3, 4}, b[4] = {0, 0.5f, 1, -1}, mu[4] = {0, 1, 2, 3}, var[4] = {1, 1, 4, 4};
    rt_tensor *ts[4] = {vec4(g), vec4(b), vec4(mu), vec4(var)};
    const char *names[4] = {"gamma", "beta", "mean", "var"};
    ir_pass *bp = ir_pass_bind_params_new("main", 4, names, ts);
    for (int i = 0; i < 4; i++) rt_tensor_release(ts[i]);
    ir_module *after = check_golden("bind_params", bp, parse(GOLDEN_DIR "decompose.before.relax"));
    ir_pass_free(bp);
    cr_assert_eq(IR_AS(after->funcs[0], ir_func)->nparams, 1);
    /* A value of the wrong shape is an error naming the param. */
    int64_t s2[1] = {3};
    rt_tensor *bad = rt_tensor_new(IR_DTYPE_F32, 1, s2);
    const char *n1[1] = {"gamma"};
    bp = ir_pass_bind_params_new("main", 1, n1, &bad);
    rt_tensor_release(bad);
    ir_module *out = NULL;
    gr_diag_clear(&diag);
    cr_assert_eq(ir_pass_run(bp, NULL, parse(GOLDEN_DIR "decompose.before.relax"), &out, &diag), GR_ERR_TYPE);
    cr_assert(strstr(diag.msg, "gamma"), "%s", diag.msg);
    ir_pass_free(bp);
}
