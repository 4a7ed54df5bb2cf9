/* FoldConstant evaluates through the evaluator of the module's IR context or of the pass
 * context (ir/transform/transform.h); the runtime has one (runtime/kernels/const_eval.h): the IR never includes
 * the runtime, and nothing is process-wide. Without an evaluator no call folds (the `if` on a
 * constant still inlines); with the runtime's, the same module folds to the kernel's values; a
 * caller's own evaluator sees every foldable call; two contexts in one process keep their own. */
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

/* Counts the calls it is asked about and folds none. */
static rt_tensor *count_calls(void *user, const ir_call *call) {
    (void)call;
    ++*(int *)user;
    return NULL;
}

/* R.full and R.multiply left as they were */
static bool unfolded(const char *s) { return strstr(s, "R.full(") != NULL && strstr(s, "R.multiply(lv,") != NULL; }

static bool folded(const char *s) {
    return strstr(s, "R.full") == NULL && strstr(s, "R.multiply") == NULL &&
           strstr(s, "R.add(x, metadata[\"relax.expr.Constant\"][0])") != NULL;
}

Test(const_eval, a_new_context_has_no_evaluator) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    void *user = &user;
    cr_expect_null(ir_pass_ctx_const_eval(pc, ctx, &user));
    cr_expect_null(user);
    char *s = fold(ctx, NULL);
    cr_expect(unfolded(s), "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(const_eval, runtime_evaluator_of_the_context) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    void *user = &user;
    cr_assert_eq(ir_pass_ctx_const_eval(pc, ctx, &user), rt_const_eval);
    cr_expect_null(user);
    char *s = fold(ctx, NULL);
    cr_expect(folded(s), "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

/* Two IR contexts, one with the runtime's evaluator and one with a caller's that folds
 * nothing, interleaved under one pass context that gives none: each module folds by its own
 * context's. */
Test(const_eval, two_contexts_keep_their_own) {
    ir_ctx_t *a = ir_ctx_new(), *b = ir_ctx_new();
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    int calls = 0;
    rt_const_eval_attach(a);
    ir_ctx_set_const_eval(b, count_calls, &calls);
    char *sb = fold(b, pc), *sa = fold(a, pc), *sb2 = fold(b, pc);
    cr_expect(folded(sa), "%s", sa);
    cr_expect(unfolded(sb) && strcmp(sb, sb2) == 0, "%s", sb);
    cr_expect_eq(calls, 2, "the caller's evaluator asked once per run of its context");
    free(sa);
    free(sb);
    free(sb2);
    ir_pass_ctx_free(pc);
    ir_ctx_free(a);
    ir_ctx_free(b);
}

Test(const_eval, no_evaluator_folds_no_call) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_const_eval(pc, NULL, NULL); /* none here, although the module's context has one */
    char *s = fold(ctx, pc);
    cr_expect(unfolded(s), "%s", s);
    free(s);
    ir_pass_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(const_eval, caller_evaluator_sees_each_foldable_call) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
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
