/* The var_map function attribute kept by the pass manager (seed 000). */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/equal.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "ir/var_map.h"
#include "runtime/kernels/const_eval.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }
TestSuite(var_map, .init = setup, .fini = teardown);

static ir_var_map_state look(const ir_module *m, const char *name, const char **cur) {
    ir_var *v = NULL;
    ir_var_map_state st = ir_var_map_lookup(ir_module_func(m, "main"), name, &v);
    *cur = v ? v->name : NULL;
    return st;
}

Test(var_map, follows_canonicalize_and_dce) {
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_file(ctx, "tests/golden/passes/canonicalize.before.relax", &m, &diag), GR_OK, "%s", diag.msg);
    const char *cur;
    cr_assert_eq(look(m, "lv1", &cur), IR_VAR_MAP_UNKNOWN, "no var_map yet");
    ir_module *im = ir_var_map_init_module(m);
    cr_assert_eq(look(im, "lv1", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "lv1");
    ir_pass *seq = NULL;
    cr_assert_eq(ir_pass_sequential_from_names("CanonicalizeBindings,DeadCodeElimination", &seq, &diag), GR_OK);
    ir_module *out = NULL;
    cr_assert_eq(ir_pass_run(seq, NULL, im, &out, &diag), GR_OK, "%s", diag.msg);
    ir_pass_free(seq);
    /* lv1 = lv was canonicalized away: lv1 now reads lv. */
    cr_assert_eq(look(out, "lv1", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "lv");
    /* lv3 = t[0] reads the tuple's field lv2. */
    cr_assert_eq(look(out, "lv3", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "lv2");
    /* lv4's binding now defines gv. */
    cr_assert_eq(look(out, "lv4", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "gv");
    /* The tuple t was dead: eliminated, and the map says so. */
    cr_assert_eq(look(out, "t", &cur), IR_VAR_MAP_ELIMINATED);
    cr_assert_null(cur);
    cr_assert_eq(look(out, "x", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "x");
    /* The attribute prints and parses back. */
    char *text = ir_print_module_str(out, NULL);
    cr_assert(strstr(text, "\"var_map\"") && strstr(text, "\"t\": None"), "%s", text);
    ir_module *again = NULL;
    cr_assert_eq(ir_parse_module(ctx, "printed", text, strlen(text), &again, &diag), GR_OK, "%s\n%s", diag.msg, text);
    cr_assert_eq(look(again, "t", &cur), IR_VAR_MAP_ELIMINATED);
    free(text);
}

Test(var_map, bn_fold_maps_replaced_vars) {
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_file(ctx, "tests/golden/passes/fold_bn.before.relax", &m, &diag), GR_OK, "%s", diag.msg);
    ir_module *out = NULL;
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, ir_var_map_init_module(m), &out, &diag), GR_OK, "%s",
                 diag.msg);
    const char *cur;
    /* lv2 = bn[0] was replaced by the folded conv + add (a new var of the same name). */
    cr_assert_eq(look(out, "lv2", &cur), IR_VAR_MAP_PRESENT);
    cr_assert_str_eq(cur, "lv2");
    /* The batch_norm tuple itself is gone. */
    cr_assert_eq(look(out, "lv1", &cur), IR_VAR_MAP_ELIMINATED);
    cr_assert_eq(look(out, "gv", &cur), IR_VAR_MAP_PRESENT);
}
