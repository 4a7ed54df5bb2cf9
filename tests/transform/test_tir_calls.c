/* A Relax function that calls a PrimFunc defined below it, as TVM prints modules (TVM's
 * test_no_op_for_call_to_tir): the call is typed R.Tuple() and impure, so the default pipeline
 * keeps it and partitioning (RunCodegen) returns the module unchanged. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "byoc/byoc.h"
#include "ir/equal.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
#include "tests/test_util.h"

#define CASE "tests/golden/tir_call_before_def.relax"


static ir_module *parse_case(ir_ctx_t *ctx) {
    size_t len;
    char *text = tu_read_file(CASE, &len);
    cr_assert_not_null(text, "%s", CASE);
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_module(ctx, CASE, text, len, &m, &d), GR_OK, "%s", d.msg);
    free(text);
    return m;
}

static void assert_unchanged(const ir_module *a, const ir_module *b, const char *what) {
    char why[512] = "";
    cr_assert(ir_module_struct_equal_explain(a, b, IR_EQ_FUNCS_BY_NAME, why, sizeof(why)),
              "%s changed the module: %s", what, why);
}

Test(tir_calls, call_typed_as_empty_tuple) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = parse_case(ctx);
    const ir_func *main_fn = ir_module_func(m, "main");
    cr_assert_not_null(main_fn);
    const ir_seq *body = (const ir_seq *)main_fn->body;
    cr_assert_eq(body->base.kind, IR_SEQ);
    const ir_binding *b = &body->blocks[0]->bindings[body->blocks[0]->n - 1];
    char buf[64];
    ir_sinfo_snprint(b->value->sinfo, buf, sizeof(buf));
    cr_assert_str_eq(buf, "R.Tuple()", "the PrimFunc call is typed %s", buf);
    ir_ctx_free(ctx);
}

Test(tir_calls, default_pipeline_keeps_the_impure_call) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = parse_case(ctx), *out = NULL;
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_pass_run(ir_pass_find("DeadCodeElimination"), pc, m, &out, &d), GR_OK, "%s", d.msg);
    assert_unchanged(m, out, "DeadCodeElimination");
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), pc, m, &out, &d), GR_OK, "%s", d.msg);
    assert_unchanged(m, out, "the default pipeline");
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(tir_calls, run_codegen_returns_the_module_unchanged) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = parse_case(ctx), *out = NULL;
    const char *backends[] = {"dnnl", "json"};
    byoc_partition_opts o = {0};
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(byoc_partition(ctx, m, backends, 2, &o, &out, &d), GR_OK, "%s", d.msg);
    assert_unchanged(m, out, "partitioning");
    ir_ctx_free(ctx);
}
