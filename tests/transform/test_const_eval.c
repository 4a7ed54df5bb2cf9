/* FoldConstant evaluates through the pass context's evaluator (ir/transform/transform.h), which the
 * runtime installs (runtime/kernels/const_eval.h): the IR never includes the runtime. Without an
 * evaluator no call folds (the `if` on a constant still inlines); with the runtime's, the same
 * module folds to the kernel's values; a caller's own evaluator sees every foldable call. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"

static const char *k_text =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
    "        lv: R.Tensor((2, 3), dtype=\"float32\") = R.full(R.shape([2, 3]), R.const(1.5, \"float32\"), dtype=\"float32\")\n"
    "        lv1: R.Tensor((2, 3), dtype=\"float32\") = R.multiply(lv, R.const(2.0, \"float32\"))\n"
    "        gv: R.Tensor((2, 3), dtype=\"float32\") = R.add(x, lv1)\n"
    "        return gv\n";

/* FoldConstant then DCE on k_text under pc; returns the printed module (free it). */
static char *fold(ir_ctx_t *ctx, ir_pass_ctx_t *pc) {
    gr_diag d = {0};
    ir_module *m = NULL, *out = NULL, *out2 = NULL;
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_text, strlen(k_text), &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(&ir_pass_fold_constant, pc, m, &out, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(&ir_pass_dce, pc, out, &out2, &d), GR_OK, "%s", d.msg);
    return ir_print_module_str(out2, NULL);
}

Test(const_eval, runtime_evaluator_is_the_default) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    void *user = &user;
    cr_assert_eq(ir_pass_ctx_const_eval(pc, &user), rt_const_eval);
    cr_expect_null(user);
    char *s = fold(ctx, NULL);
    cr_expect(strstr(s, "R.full") == NULL && strstr(s, "R.multiply") == NULL, "%s", s);
    cr_expect(strstr(s, "R.add(x, metadata[\"relax.expr.Constant\"][0])") != NULL, "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(const_eval, no_evaluator_folds_no_call) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_const_eval(pc, NULL, NULL);
    char *s = fold(ctx, pc);
    cr_expect(strstr(s, "R.full(") != NULL && strstr(s, "R.multiply(lv,") != NULL, "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

/* Counts the calls it is asked about and folds none. */
static rt_tensor *count_calls(void *user, const ir_call *call) {
    (void)call;
    ++*(int *)user;
    return NULL;
}

Test(const_eval, caller_evaluator_sees_each_foldable_call) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    int calls = 0;
    ir_pass_ctx_set_const_eval(pc, count_calls, &calls);
    char *s = fold(ctx, pc);
    /* R.full (a creation op on a shape) is foldable; R.multiply is not once R.full stayed; R.add
     * reads the parameter x. */
    cr_expect_eq(calls, 1);
    cr_expect(strstr(s, "R.full(") != NULL, "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}
