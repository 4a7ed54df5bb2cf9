/* The partition report's near misses: an op that a backend offloaded with smaller composites
 * after a check refused the larger one is listed in its region (`not_fused`: var, layers,
 * composite, reason; text: "not fused: ..." lines), so "why was my conv + hard-swish not fused?"
 * has an answer. Partitioned for dnnl: conv2d -> hard-swish written with / 5 (the check wants
 * 3 and 6) -> cumsum (host, splits the regions) -> conv2d + add + relu. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"
#include "ir/text/parser.h"

#define T44 "R.Tensor((1, 4, 4, 4), dtype=\"float32\")"
#define NM_TEXT(div)                                                                                                  \
    "@I.ir_module\nclass Module:\n    @R.function\n"                                                                  \
    "    def main(x: R.Tensor((1, 3, 6, 6), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"),"       \
    " w2: R.Tensor((4, 4, 1, 1), dtype=\"float32\"), b: R.Tensor((1, 1, 4, 4), dtype=\"float32\")) -> " T44 ":\n"    \
    "        with R.dataflow():\n"                                                                                    \
    "            lv: " T44 " = R.nn.conv2d(x, w)  # span: \"Conv_3\"!\n"                                            \
    "            lv2: " T44 " = R.add(lv, R.const(3.0, \"float32\"))  # span: \"HardSwish_4\"\n"                     \
    "            lv3: " T44 " = R.clip(lv2, R.prim_value(T.float32(0.0)), R.prim_value(T.float32(6.0)))"            \
    "  # span: \"HardSwish_4\"\n"                                                                                     \
    "            lv4: " T44 " = R.divide(lv3, R.const(" div ", \"float32\"))  # span: \"HardSwish_4\"\n"             \
    "            lv5: " T44 " = R.multiply(lv, lv4)  # span: \"HardSwish_4\"!\n"                                     \
    "            lv6: " T44 " = R.cumsum(lv5, axis=3)  # span: \"CumSum_5\"!\n"                                      \
    "            lv7: " T44 " = R.nn.conv2d(lv6, w2)  # span: \"Conv_6\"!\n"                                         \
    "            lv8: " T44 " = R.add(lv7, b)  # span: \"Add_7\"!\n"                                                 \
    "            gv: " T44 " = R.nn.relu(lv8)  # span: \"Relu_8\"!\n"                                                \
    "            R.output(gv)\n        return gv\n"

typedef struct nm_case {
    ir_ctx_t *ctx;
    byoc_notes notes;
    json_t *report;
    char *text;
} nm_case;

static void nm_run(nm_case *c, const char *src, byoc_stage stop) {
    memset(c, 0, sizeof(*c));
    c->ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL, *out = NULL;
    cr_assert_eq(ir_parse_module(c->ctx, "near_miss", src, strlen(src), &m, &d), GR_OK, "%s", d.msg);
    byoc_notes_init(&c->notes);
    byoc_partition_opts po = {0};
    po.notes = &c->notes;
    po.stop_after = stop;
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(c->ctx, m, be, 1, &po, &out, &d), GR_OK, "%s", d.msg);
    const ir_module *part = po.after_merge ? po.after_merge : po.after_fuse;
    c->report = byoc_report_json(c->ctx, part, be, 1, &c->notes);
    size_t len = 0;
    FILE *f = open_memstream(&c->text, &len);
    cr_assert(f);
    byoc_report_print(c->report, f);
    fclose(f);
}

static void nm_free(nm_case *c) {
    json_decref(c->report);
    free(c->text);
    byoc_notes_free(&c->notes);
    ir_ctx_free(c->ctx);
}

/* the region whose outputs include `out` */
static json_t *nm_region(nm_case *c, const char *out) {
    size_t i, k;
    json_t *g, *o;
    json_array_foreach(json_object_get(c->report, "regions"), i, g)
        json_array_foreach(json_object_get(g, "outputs"), k, o) if (strcmp(json_string_value(o), out) == 0) return g;
    cr_assert_fail("no region outputs %s", out);
    return NULL;
}

static json_t *nm_entry(json_t *region, const char *var) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(region, "not_fused"), i, e)
        if (strcmp(json_string_value(json_object_get(e, "var")), var) == 0) return e;
    return NULL;
}

Test(byoc_report_near_miss, rejected_hardswish_is_reported) {
    nm_case c;
    nm_run(&c, NM_TEXT("5.0"), 0);
    /* the top level is unchanged */
    cr_expect_eq(json_object_size(c.report), 3);
    cr_expect(json_object_get(c.report, "regions") && json_object_get(c.report, "host") && json_object_get(c.report, "coverage"));
    cr_assert_eq(json_array_size(json_object_get(c.report, "regions")), 2, "%s", c.text);
    /* every op but the cumsum is offloaded: conv2d + hard-swish by smaller composites */
    cr_assert_eq(json_array_size(json_object_get(c.report, "host")), 1, "%s", c.text);
    json_t *g = nm_region(&c, "lv5");
    cr_expect_gt(json_array_size(json_object_get(g, "composites")), 1, "%s", c.text);
    json_t *e = nm_entry(g, "lv5");
    cr_assert(e, "no not_fused entry for lv5:\n%s", c.text);
    cr_expect_str_eq(json_string_value(json_object_get(e, "composite")), "dnnl.conv2d_hardswish");
    cr_expect_str_eq(json_string_value(json_object_get(e, "reason")), "hard-swish constants are not 3 and 6");
    cr_expect_eq(json_array_size(json_object_get(e, "layers")), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(e, "layers"), 0)), "HardSwish_4");
    /* entries are near misses of offloaded ops only, each in its own region */
    json_t *other = nm_region(&c, "gv");
    cr_expect_eq(json_array_size(json_object_get(other, "not_fused")), 0, "%s", c.text);
    cr_expect_null(nm_entry(g, "lv6"));
    cr_expect(strstr(c.text, "\n    not fused: lv5 (layer HardSwish_4): dnnl.conv2d_hardswish: hard-swish constants are not 3 and 6\n"),
              "%s", c.text);
    /* the host op keeps its own reason, in the host list */
    cr_expect(strstr(c.text, "lv6 = relax.cumsum (layer CumSum_5): "), "%s", c.text);
    nm_free(&c);
}

/* Stopped after fuse, the regions are the composites: the near miss sits with the multiply's. */
Test(byoc_report_near_miss, after_fuse_in_the_composite_of_the_op) {
    nm_case c;
    nm_run(&c, NM_TEXT("5.0"), BYOC_STOP_FUSE);
    json_t *g = nm_region(&c, "lv5");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(g, "composites"), 0), "name")),
                     "dnnl.multiply");
    json_t *e = nm_entry(g, "lv5");
    cr_assert(e, "%s", c.text);
    cr_expect_str_eq(json_string_value(json_object_get(e, "reason")), "hard-swish constants are not 3 and 6");
    cr_expect_null(nm_entry(nm_region(&c, "lv"), "lv5"), "%s", c.text);
    nm_free(&c);
}

/* / 6: the hard-swish composite is accepted, nothing is a near miss. */
Test(byoc_report_near_miss, nothing_rejected_nothing_listed) {
    nm_case c;
    nm_run(&c, NM_TEXT("6.0"), 0);
    size_t i;
    json_t *g;
    cr_assert_eq(json_array_size(json_object_get(c.report, "regions")), 2, "%s", c.text);
    json_array_foreach(json_object_get(c.report, "regions"), i, g) {
        cr_assert(json_is_array(json_object_get(g, "not_fused")));
        cr_expect_eq(json_array_size(json_object_get(g, "not_fused")), 0, "%s", c.text);
    }
    cr_expect_null(strstr(c.text, "not fused"), "%s", c.text);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(nm_region(&c, "lv5"), "composites"), 0),
                                                       "name")),
                     "dnnl.conv2d_hardswish", "%s", c.text);
    nm_free(&c);
}
