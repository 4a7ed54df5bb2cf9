/* A pattern file's ["check", "dnnl.nn.conv2d"]: the backend's C check, found by name, refuses
 * what it refuses with nothing else in the file. The table has no attribute predicate (the
 * TVM-suite golden's ["attr", "gv", "data_layout", "NCHW"] now does that golden's rejecting), so
 * the only thing between the pattern and a conv it matches is the named check: an NHWC conv with
 * an NCHW out_layout ("out_layout other than data_layout", the conv check's own rule) and a
 * float64 conv (the check's float32 rule) stay on the host, the float32 NCHW conv is fused. The
 * same table without the check fuses all three, so the test fails if the check is dropped or
 * no longer resolved. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "ir/text/parser.h"
#include "patterns/pattern_text.h"

#define NC_PATTERNS(check)                                                                                           \
    "@I.ir_module\nclass Module:\n    @R.function\n    def conv2d(data: R.Tensor, weight: R.Tensor):\n"             \
    "        R.func_attr({\"Composite\": \"dnnl.conv2d\"" check "})\n"                                              \
    "        with R.dataflow():\n            gv = R.nn.conv2d(data, weight)\n            R.output(gv)\n"             \
    "        return gv\n"

#define T32 "R.Tensor((1, 4, 6, 6), dtype=\"float32\")"
#define T64 "R.Tensor((1, 4, 6, 6), dtype=\"float64\")"
static const char NC_INPUT[] =
    "@I.ir_module\nclass Module:\n    @R.function\n"
    "    def main(x: R.Tensor((1, 3, 8, 8), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"),"
    " y: R.Tensor((1, 8, 8, 3), dtype=\"float32\"), x64: R.Tensor((1, 3, 8, 8), dtype=\"float64\"),"
    " w64: R.Tensor((4, 3, 3, 3), dtype=\"float64\")) -> R.Tuple(" T32 ", " T32 ", " T64 "):\n"
    "        with R.dataflow():\n"
    "            a: " T32 " = R.nn.conv2d(x, w, data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\")\n"
    "            b: " T32 " = R.nn.conv2d(y, w, data_layout=\"NHWC\", kernel_layout=\"OIHW\", out_layout=\"NCHW\")\n"
    "            c: " T64 " = R.nn.conv2d(x64, w64, data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\")\n"
    "            R.output(a, b, c)\n"
    "        return (a, b, c)\n";

/* Fuses NC_INPUT with the pattern table `patterns` and returns the partition report (host ops
 * with the reasons the checks gave). */
static json_t *nc_report(ir_ctx_t *ctx, const char *patterns) {
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL, *out = NULL;
    cr_assert_eq(ir_parse_module(ctx, "named_check.relax", NC_INPUT, strlen(NC_INPUT), &m, &d), GR_OK, "%s", d.msg);
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read(ctx, "patterns.relax", patterns, strlen(patterns), &t, &d), GR_OK, "%s", d.msg);
    byoc_pattern *ps = NULL;
    cr_assert_eq(byoc_patterns_from_table(ctx, t, NULL, &ps, &d), GR_OK, "%s", d.msg);
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.stop_after = BYOC_STOP_MERGE, .extra = ps, .nextra = t->n, .notes = &notes};
    cr_assert_eq(byoc_partition(ctx, m, NULL, 0, &po, &out, &d), GR_OK, "%s", d.msg);
    json_t *r = byoc_report_json(ctx, po.after_merge, NULL, 0, &notes);
    byoc_notes_free(&notes);
    free(ps);
    pat_table_free(t);
    return r;
}

/* The reason the report gives for host op `var`; NULL when it was offloaded. */
static const char *host_reason(json_t *report, const char *var) {
    size_t i;
    json_t *h;
    json_array_foreach(json_object_get(report, "host"), i, h) {
        if (strcmp(json_string_value(json_object_get(h, "var")), var) == 0) {
            const char *why = json_string_value(json_object_get(h, "reason"));
            return why ? why : "";
        }
    }
    return NULL;
}

Test(named_check, rejects_without_an_attr_predicate) {
    ir_ctx_t *ctx = ir_ctx_new();
    json_t *r = nc_report(ctx, NC_PATTERNS(", \"check\": [[\"check\", \"dnnl.nn.conv2d\"]]"));
    cr_expect_null(host_reason(r, "a"), "the NCHW float32 conv is the check's to take: %s", host_reason(r, "a"));
    const char *b = host_reason(r, "b"), *c = host_reason(r, "c");
    cr_expect(b && strstr(b, "out_layout other than data_layout"), "NHWC in, NCHW out: %s", b ? b : "(offloaded)");
    cr_expect(c && strstr(c, "not a float32 tensor"), "float64: %s", c ? c : "(offloaded)");
    json_decref(r);
    ir_ctx_free(ctx);
}

/* The control: without the named check the same pattern takes all three, so the rejections
 * above are the check's. */
Test(named_check, pattern_alone_takes_every_conv) {
    ir_ctx_t *ctx = ir_ctx_new();
    json_t *r = nc_report(ctx, NC_PATTERNS(""));
    static const char *const vars[] = {"a", "b", "c"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        cr_expect_null(host_reason(r, vars[i]), "%s stayed on the host: %s", vars[i], host_reason(r, vars[i]));
    json_decref(r);
    ir_ctx_free(ctx);
}
