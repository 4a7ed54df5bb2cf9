/* Pattern tables in the text format: reading, matching with written attrs only, printing and
 * reading back (same matches), errors. */
#include "pat_test_util.h"

#include "patterns/pattern_text.h"

static const char *k_model = MOD_HEAD
"    def main(d: R.Tensor((1, 3, 8, 8), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), b: R.Tensor((1, 4, 1, 1), dtype=\"float32\"), h: R.Tensor((1, 3, 8, 8), dtype=\"float16\"), wh: R.Tensor((4, 3, 3, 3), dtype=\"float16\"), x: R.Tensor((2, 5), dtype=\"float32\"), y: R.Tensor((3, 5), dtype=\"float32\")) -> R.Tensor((1, 4, 6, 6), dtype=\"float32\"):\n"
"        with R.dataflow():\n"
"            c1 = R.nn.conv2d(d, w, padding=[0, 0])\n"
"            a1 = R.add(c1, b)\n"
"            r1 = R.nn.relu(a1)\n"
"            c2 = R.nn.conv2d(d, w, strides=[2, 2])\n"
"            a2 = R.add(c2, R.const(1.0, \"float32\"))\n"
"            r2 = R.nn.relu(a2)\n"
"            c3 = R.nn.conv2d(h, wh)\n"
"            a3 = R.add(c3, R.const(1.0, \"float16\"))\n"
"            r3 = R.nn.relu(a3)\n"
"            c4 = R.nn.conv2d(h, wh)\n"
"            r4 = R.nn.relu(c4)\n"
"            dx = R.add(x, x)\n"
"            dy = R.add(y, y)\n"
"            s1 = R.nn.softmax(x, axis=-1)\n"
"            s2 = R.nn.softmax(x, axis=0)\n"
"            s3 = R.nn.softmax(x)\n"
"            R.output(r1)\n"
"        return r1\n";

/* "r1:A.conv2d_bias_relu r2:- ..." : the first entry matching each binding (by name). */
static void first_matches(pat_table *t, ir_func *f, char *buf, size_t size) {
    pat_block_info *info = pat_block_info_build(NULL, pt_block(f, 0));
    pat_match_result m;
    pat_match_result_init(&m);
    buf[0] = 0;
    const ir_block *blk = pt_block(f, 0);
    for (uint32_t i = 0; i < blk->n; i++) {
        const char *hit = "-";
        for (uint32_t k = 0; k < t->n; k++)
            if (pat_match(t->entries[k].pattern, &blk->bindings[i].var->base, info, &m)) { hit = t->entries[k].name; break; }
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s%s:%s", i ? " " : "", blk->bindings[i].var->name, hit);
    }
    pat_match_result_free(&m);
    pat_block_info_free(info);
}

static const char *k_expect =
    "c1:- a1:- r1:A.conv2d_bias_relu c2:- a2:- r2:- c3:- a3:- r3:- c4:- r4:A.conv2d_relu "
    "dx:B.double dy:- s1:B.softmax_last s2:- s3:B.softmax_last";

Test(patterns_text, read_match_print_roundtrip) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read_file(ctx, "tests/golden/patterns/basic.relax", &t, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(t->n, 4);
    cr_assert_str_eq(t->entries[0].name, "A.conv2d_bias_relu");
    cr_assert_str_eq(t->entries[0].backend, "A");
    cr_assert_str_eq(t->entries[2].backend, "B");
    cr_assert_eq(t->entries[0].nparams, 3);
    ir_func *f = pt_main(pt_parse(ctx, k_model));
    char got[1024];
    first_matches(t, f, got, sizeof got);
    /* r1: the written strides [1, 1] match (padding left out matches anything); r2: strides
     * [2, 2] fail the bias pattern and relu(add) is not relu(conv2d); r3: float16 data fails
     * the dtype; r4 has no strides written against it; dy: shape (3, 5) is not (2, n); s2: the
     * written axis differs; s3: the default axis -1 equals the written one. */
    cr_assert_str_eq(got, k_expect);
    /* named sub-patterns: params by name, bindings by var name, the root as "root" */
    pat_match_result m;
    pat_match_result_init(&m);
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    cr_assert(pat_match(t->entries[0].pattern, pt_var(f, "r1"), info, &m));
    cr_assert_eq(pat_match_named(&m, "bias"), pt_var(f, "b"));
    cr_assert_eq(pat_match_named(&m, "lv"), pt_binding(f, "c1")->value);
    cr_assert_eq(pat_match_named(&m, "root"), pt_binding(f, "r1")->value);
    pat_block_info_free(info);
    pat_match_result_free(&m);
    /* print, read back, same matches */
    char *text = pat_print_table_str(t, &d);
    cr_assert_not_null(text, "%s", d.msg);
    pat_table *t2 = NULL;
    cr_assert_eq(pat_table_read(ctx, "printed", text, strlen(text), &t2, &d), GR_OK, "%s\n%s", d.msg, text);
    cr_assert_eq(t2->n, 4);
    char got2[1024];
    first_matches(t2, f, got2, sizeof got2);
    cr_assert_str_eq(got2, k_expect, "%s", text);
    /* printing is stable */
    char *text2 = pat_print_table_str(t2, &d);
    cr_assert_str_eq(text, text2);
    free(text);
    free(text2);
    pat_table_free(t);
    pat_table_free(t2);
    ir_ctx_free(ctx);
}

Test(patterns_text, print_api_patterns_and_unsupported) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    pat_table *t = pat_table_new();
    pat_t *x = pat_has_dtype(ctx, pat_wildcard(ctx), IR_DTYPE_F32);
    const char *k[1] = {"axis"};
    ir_attr one = ir_attr_int(1);
    pat_t *sm = pat_has_attr(ctx, pat_call1(ctx, "relax.nn.softmax", x), ir_attrs_new(ctx, 1, k, &one));
    pat_table_add(ctx, t, "C.softmax1", pat_call2(ctx, "relax.multiply", sm, pat_const(ctx)));
    char *text = pat_print_table_str(t, &d);
    cr_assert_not_null(text, "%s", d.msg);
    cr_assert_not_null(strstr(text, "R.nn.softmax(p0, axis=1)"), "%s", text);
    cr_assert_not_null(strstr(text, "\"Composite\": \"C.softmax1\""), "%s", text);
    pat_table *t2 = NULL;
    cr_assert_eq(pat_table_read(ctx, "printed", text, strlen(text), &t2, &d), GR_OK, "%s\n%s", d.msg, text);
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 5), dtype=\"float32\")) -> R.Tensor((2, 5), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            s = R.nn.softmax(x, axis=1)\n"
        "            gv = R.multiply(R.const(2.0, \"float32\"), s)\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_match_result m;
    pat_match_result_init(&m);
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    cr_assert(pat_match(t->entries[0].pattern, pt_var(f, "gv"), info, &m));
    cr_assert(pat_match(t2->entries[0].pattern, pt_var(f, "gv"), info, &m));
    pat_block_info_free(info);
    pat_match_result_free(&m);
    free(text);
    pat_table_free(t2);
    /* or-patterns have no text form */
    pat_table_add(ctx, t, "C.either", pat_or(ctx, sm, x));
    gr_diag_clear(&d);
    cr_assert_null(pat_print_table_str(t, &d));
    cr_assert_eq(d.code, GR_ERR_UNSUPPORTED);
    cr_assert_not_null(strstr(d.msg, "C.either"), "%s", d.msg);
    pat_table_free(t);
    ir_ctx_free(ctx);
}

/* An empty table prints a class body that reads back (an empty table) and prints the same. */
Test(patterns_text, empty_table_round_trip) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    pat_table *t = pat_table_new();
    char *text = pat_print_table_str(t, &d);
    cr_assert_not_null(text, "%s", d.msg);
    pat_table *t2 = NULL;
    cr_assert_eq(pat_table_read(ctx, "printed", text, strlen(text), &t2, &d), GR_OK, "%s\n%s", d.msg, text);
    cr_assert_eq(t2->n, 0);
    char *text2 = pat_print_table_str(t2, &d);
    cr_assert_str_eq(text, text2);
    free(text);
    free(text2);
    pat_table_free(t);
    pat_table_free(t2);
    ir_ctx_free(ctx);
}

Test(patterns_text, errors) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    pat_table *t = NULL;
    const char *no_comp = "@I.ir_module\nclass Module:\n    @R.function\n"
        "    def f(x: R.Tensor):\n        with R.dataflow():\n            gv = R.nn.relu(x)\n"
        "            R.output(gv)\n        return gv\n";
    gr_diag_clear(&d);
    cr_assert_eq(pat_table_read(ctx, "nocomp.relax", no_comp, strlen(no_comp), &t, &d), GR_ERR_INVALID);
    cr_assert_not_null(strstr(d.msg, "Composite"), "%s", d.msg);
    cr_assert_not_null(strstr(d.msg, "'f'"), "%s", d.msg);
    cr_assert_null(t);
    const char *bad = "@I.ir_module\nclass Module:\n    def f(:\n";
    gr_diag_clear(&d);
    cr_assert_eq(pat_table_read(ctx, "bad.relax", bad, strlen(bad), &t, &d), GR_ERR_PARSE);
    cr_assert_not_null(strstr(d.msg, "bad.relax"), "%s", d.msg);
    gr_diag_clear(&d);
    cr_assert_eq(pat_table_read_file(ctx, "/nonexistent/p.relax", &t, &d), GR_ERR_IO);
    ir_ctx_free(ctx);
}
