/* FoldConstant folds calls whose arguments include shape expressions (R.full, R.reshape): the
 * dims come from the expression itself (a QDQ model's per-channel weight scales are reshaped
 * constants, and the whole weight dequantization folds to one constant). */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"

Test(fold_shape_args, full_and_reshape_fold) {
    static const char *text =
        "@I.ir_module\n"
        "class Module:\n"
        "    @R.function\n"
        "    def main(x: R.Tensor((3, 2), dtype=\"float32\")) -> R.Tensor((3, 2), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv: R.Tensor((2, 3), dtype=\"float32\") = R.full(R.shape([2, 3]), R.const(1.5, \"float32\"), dtype=\"float32\")\n"
        "            lv1: R.Tensor((3, 2), dtype=\"float32\") = R.reshape(lv, R.shape([3, 2]))\n"
        "            gv: R.Tensor((3, 2), dtype=\"float32\") = R.add(x, lv1)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *out = NULL, *out2 = NULL;
    cr_assert_eq(ir_parse_module(ctx, "t.relax", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(&ir_pass_fold_constant, NULL, m, &out, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(&ir_pass_dce, NULL, out, &out2, &d), GR_OK, "%s", d.msg);
    char *s = ir_print_module_str(out2, NULL);
    cr_expect(strstr(s, "R.full") == NULL && strstr(s, "R.reshape") == NULL, "%s", s);
    cr_expect(strstr(s, "R.add(x, metadata[\"relax.expr.Constant\"][0])") != NULL, "%s", s);
    free(s);
    ir_ctx_free(ctx);
}
