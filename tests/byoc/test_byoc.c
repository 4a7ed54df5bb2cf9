/* BYOC: FuseOpsByPattern, MergeCompositeFunctions, RunCodegen, the json backend (JSON codegen +
 * runtime) and the partition report.
 *
 * Golden tests: tests/golden/byoc/<input>.relax is partitioned with a pattern file (or the json
 * backend) up to a stage and printed (spans included) and compared with
 * tests/golden/byoc/expected/<case>.relax. GRAFT_UPDATE_GOLDEN=1 rewrites the expected files
 * (review the diff!). Scenarios follow research/tvm_relax_byoc.md §8.1-§8.3. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "byoc/byoc.h"
#include "backends/json/json_codegen.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "ir/wellformed.h"
#include "patterns/pattern_text.h"
#include "runtime/exec/executor.h"
#include "runtime/json/json_runtime.h"
#include "tests/compare_util.h"
#include "tests/test_util.h"

#define GOLDEN "tests/golden/byoc/"


static ir_module *parse(ir_ctx_t *ctx, const char *path) {
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL;
    gr_status st = ir_parse_file(ctx, path, &m, &d);
    cr_assert_eq(st, GR_OK, "%s: %s", path, d.msg);
    return m;
}

/* Partitions `input` with the patterns of `pat_file` (NULL: the json backend) up to `stage`. */
static ir_module *partition(ir_ctx_t *ctx, const char *input, const char *pat_file, byoc_stage stage,
                            byoc_notes *notes, ir_module **merged) {
    ir_module *m = parse(ctx, input);
    gr_diag d;
    gr_diag_clear(&d);
    pat_table *t = NULL;
    byoc_pattern *extra = NULL;
    byoc_partition_opts po = {0};
    po.stop_after = stage;
    po.notes = notes;
    const char *json = "json";
    uint32_t nb = 1;
    if (pat_file) {
        cr_assert_eq(pat_table_read_file(ctx, pat_file, &t, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(byoc_patterns_from_table(ctx, t, NULL, &extra, &d), GR_OK, "%s", d.msg);
        po.extra = extra;
        po.nextra = t->n;
        nb = 0;
    }
    ir_module *out = NULL;
    gr_status st = byoc_partition(ctx, m, &json, nb, &po, &out, &d);
    free(extra);
    pat_table_free(t);
    cr_assert_eq(st, GR_OK, "%s: %s", input, d.msg);
    cr_assert_eq(ir_wellformed_check(out, &d), GR_OK, "%s: %s", input, d.msg);
    if (merged) *merged = po.after_merge;
    return out;
}

static void check_golden(const ir_module *m, const char *name) {
    char path[512];
    snprintf(path, sizeof path, GOLDEN "expected/%s.relax", name);
    char *got = ir_print_module_str(m, NULL);
    if (getenv("GRAFT_UPDATE_GOLDEN")) {
        mkdir(GOLDEN "expected", 0777);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(got, f);
        fclose(f);
    }
    char *want = tu_read_file(path, NULL);
    cr_assert(want, "missing golden %s", path);
    cr_expect_str_eq(got, want, "%s differs from the golden file", name);
    free(want);
    free(got);
}

static void golden_case(const char *name, const char *input, const char *pats, byoc_stage stage) {
    ir_ctx_t *ctx = ir_ctx_new();
    char in[256], pf[256];
    snprintf(in, sizeof in, GOLDEN "%s.relax", input);
    if (pats) snprintf(pf, sizeof pf, GOLDEN "%s.relax", pats);
    ir_module *out = partition(ctx, in, pats ? pf : NULL, stage, NULL, NULL);
    check_golden(out, name);
    /* no frontend layer is lost at any stage */
    ir_module *before = parse(ctx, in);
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(before, out, &nl);
    cr_expect_eq(nl, 0, "%s lost %u layers (first: %s)", name, nl, nl ? lost[0] : "");
    free((void *)lost);
    ir_ctx_free(ctx);
}

/* ---------------------------------------------------------------- §8.1 FuseOps ---- */

Test(byoc_fuse, conv2d_relu_x2) { golden_case("fuse_conv2d_relu_x2", "conv2d_relu_x2", "pat_conv_relu_conv", BYOC_STOP_FUSE); }
Test(byoc_fuse, multiple_patterns) {
    golden_case("fuse_multiple_patterns", "conv2d_conv2d_relu", "pat_conv_relu_conv", BYOC_STOP_FUSE);
}
Test(byoc_fuse, partition_order) {
    golden_case("fuse_partition_order", "conv2d_conv2d_relu", "pat_conv_then_conv_relu", BYOC_STOP_FUSE);
}
Test(byoc_fuse, branch_tuple_output) {
    golden_case("fuse_branch_tuple_output", "branch_tuple_output", "pat_conv_relu_conv", BYOC_STOP_FUSE);
}
Test(byoc_fuse, all_functions) {
    golden_case("fuse_all_functions", "multiple_functions", "pat_conv_relu_conv", BYOC_STOP_FUSE);
}

/* A match that would close a cycle is rejected (not an error) and the report says why. */
Test(byoc_fuse, cyclic_dependency_rejected) {
    ir_ctx_t *ctx = ir_ctx_new();
    byoc_notes notes;
    byoc_notes_init(&notes);
    ir_module *out = partition(ctx, GOLDEN "cyclic_dependency.relax", GOLDEN "pat_conv_relu_add.relax", BYOC_STOP_FUSE,
                               &notes, NULL);
    cr_expect_eq(out->nfuncs, 1, "nothing is fused");
    json_t *r = byoc_report_json(ctx, out, NULL, 0, &notes);
    json_t *host = json_object_get(r, "host");
    cr_assert_eq(json_array_size(host), 4);
    const char *why = json_string_value(json_object_get(json_array_get(host, 3), "reason"));
    cr_expect(strstr(why, "cycle through lv2 = relax.sigmoid (layer sig)"), "reason: %s", why);
    json_decref(r);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

static ir_module *fuse_text(ir_ctx_t *ctx, const char *path, const char *pats, const byoc_fuse_opts *o,
                            gr_status *st, gr_diag *d) {
    ir_module *m = parse(ctx, path);
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read_file(ctx, pats, &t, d), GR_OK, "%s", d->msg);
    byoc_pattern *ps = calloc(t->n, sizeof(*ps));
    for (uint32_t i = 0; i < t->n; i++) ps[i] = (byoc_pattern){t->entries[i].name, t->entries[i].pattern, NULL, NULL};
    ir_module *out = NULL;
    *st = byoc_fuse_ops_by_pattern(ctx, m, ps, t->n, o, NULL, &out, d);
    free(ps);
    pat_table_free(t);
    return out;
}

Test(byoc_fuse, annotate_codegen_and_idempotent) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    byoc_fuse_opts o = {true, true, 0, NULL};
    ir_module *out = fuse_text(ctx, GOLDEN "conv2d_relu_x2.relax", GOLDEN "pat_conv_relu_conv.relax", &o, &st, &d);
    cr_assert_eq(st, GR_OK, "%s", d.msg);
    const ir_func *w = ir_module_func(out, "fused_relax_nn_conv2d_relax_nn_relu_dnnl");
    cr_assert(w, "wrapper named <composite>_<backend>");
    cr_expect_str_eq(ir_attrs_get_str(w->attrs, "Codegen"), "dnnl");
    cr_expect_str_eq(ir_attrs_get_str(w->attrs, "global_symbol"), "fused_relax_nn_conv2d_relax_nn_relu_dnnl");
    cr_assert_eq(ir_wellformed_check(out, &d), GR_OK, "%s", d.msg);
    /* running again changes nothing */
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read_file(ctx, GOLDEN "pat_conv_relu_conv.relax", &t, &d), GR_OK);
    byoc_pattern ps[4];
    for (uint32_t i = 0; i < t->n && i < 4; i++) ps[i] = (byoc_pattern){t->entries[i].name, t->entries[i].pattern, NULL, NULL};
    ir_module *again = NULL;
    cr_assert_eq(byoc_fuse_ops_by_pattern(ctx, out, ps, t->n, &o, NULL, &again, &d), GR_OK);
    cr_expect_eq(again, out);
    pat_table_free(t);
    ir_ctx_free(ctx);
}

Test(byoc_fuse, ssa_violation_is_an_error) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "conv2d_relu_x2.relax");
    ir_module_set_func(m, "main_again", m->funcs[0]);  /* one function object under two names */
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read_file(ctx, GOLDEN "pat_conv_relu_conv.relax", &t, &d), GR_OK);
    byoc_pattern ps[4];
    for (uint32_t i = 0; i < t->n && i < 4; i++) ps[i] = (byoc_pattern){t->entries[i].name, t->entries[i].pattern, NULL, NULL};
    ir_module *out = NULL;
    gr_status st = byoc_fuse_ops_by_pattern(ctx, m, ps, t->n, NULL, NULL, &out, &d);
    cr_expect_eq(st, GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "SSA"), "%s", d.msg);
    pat_table_free(t);
    ir_ctx_free(ctx);
}

/* ------------------------------------------------------------------ §8.2 Merge ---- */

Test(byoc_merge, conv2d_relu_x2) { golden_case("merge_conv2d_relu_x2", "conv2d_relu_x2", "pat_conv_relu_conv", BYOC_STOP_MERGE); }
Test(byoc_merge, diamond_cyclic_dep) { golden_case("merge_diamond_cyclic", "merge_diamond_cyclic", "pat_ab", BYOC_STOP_MERGE); }
Test(byoc_merge, diamond) { golden_case("merge_diamond", "merge_diamond", "pat_ab", BYOC_STOP_MERGE); }
Test(byoc_merge, producers) { golden_case("merge_producers", "merge_producers", "pat_ab", BYOC_STOP_MERGE); }
Test(byoc_merge, producers_cyclic_dep) {
    golden_case("merge_producers_cyclic", "merge_producers_cyclic", "pat_ab", BYOC_STOP_MERGE);
}
Test(byoc_merge, call_tir) { golden_case("merge_call_tir", "merge_call_tir", "pat_ab", BYOC_STOP_MERGE); }
Test(byoc_merge, tuple_projection) {
    golden_case("merge_tuple_projection", "merge_tuple_projection", "pat_ab", BYOC_STOP_MERGE);
}
Test(byoc_merge, tuple_escape) { golden_case("merge_tuple_escape", "merge_tuple_escape", "pat_ab", BYOC_STOP_MERGE); }
Test(byoc_merge, all_functions) {
    golden_case("merge_all_functions", "multiple_functions", "pat_conv_relu_conv", BYOC_STOP_MERGE);
}

/* Region counts by backend, checked structurally (independent of the golden text). */
Test(byoc_merge, diamond_regions) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *merged = NULL;
    partition(ctx, GOLDEN "merge_diamond_cyclic.relax", GOLDEN "pat_ab.relax", BYOC_STOP_MERGE, NULL, &merged);
    json_t *r = byoc_report_json(ctx, merged, NULL, 0, NULL);
    json_t *regions = json_object_get(r, "regions");
    cr_assert_eq(json_array_size(regions), 3);
    const char *want[3] = {"A", "B", "A"};
    size_t want_n[3] = {2, 1, 1};
    for (size_t i = 0; i < 3; i++) {
        json_t *g = json_array_get(regions, i);
        cr_expect_str_eq(json_string_value(json_object_get(g, "backend")), want[i]);
        cr_expect_eq(json_array_size(json_object_get(g, "composites")), want_n[i]);
    }
    json_decref(r);
    ir_ctx_free(ctx);
}

/* -------------------------------------------------------------- §8.3 RunCodegen ---- */

static void run_random(const ir_module *m, rt_value *out) {
    rt_exec_t *x = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    uint32_t n = rt_exec_num_inputs(x);
    rt_value in[8];
    for (uint32_t i = 0; i < n; i++) {
        const ir_sinfo *s = rt_exec_input_sinfo(x, i);
        int64_t shape[RT_MAX_NDIM];
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) rt_tensor_set_f64(t, k, sin(0.3 * (double)k + i) * 2.0);
        in[i] = rt_value_tensor(t);
    }
    cr_assert_eq(rt_exec_run(x, in, n, out, &d), GR_OK, "%s", d.msg);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
}

/* json backend end to end: golden module, same outputs as the reference path. */
static void codegen_case(const char *name, const char *input, bool run) {
    ir_ctx_t *ctx = ir_ctx_new();
    char in[256];
    snprintf(in, sizeof in, GOLDEN "%s.relax", input);
    ir_module *out = partition(ctx, in, NULL, 0, NULL, NULL);
    check_golden(out, name);
    cr_expect_eq(rt_module_count(out), 1);
    ir_module *ref = parse(ctx, in);
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(ref, out, &nl);
    cr_expect_eq(nl, 0, "lost %s", nl ? lost[0] : "");
    free((void *)lost);
    rt_value a = {0}, b = {0};
    if (!run) {
        ir_ctx_free(ctx);
        return;
    }
    run_random(ref, &a);
    run_random(out, &b);
    /* the same reference kernels: bit-identical */
    tc_expect_value(&b, &a, (gr_cmp_opts){0}, "%s: json path against the reference", name);
    rt_value_clear(&a);
    rt_value_clear(&b);
    ir_ctx_free(ctx);
}

Test(byoc_codegen, json_conv2d_relu_x2) { codegen_case("codegen_conv2d_relu_x2", "conv2d_relu_x2", true); }
Test(byoc_codegen, json_branch_tuple) { codegen_case("codegen_branch_tuple_output", "branch_tuple_output", true); }
Test(byoc_codegen, json_split_projection) { codegen_case("codegen_tuple_projection", "merge_tuple_projection", true); }
Test(byoc_codegen, json_tuple_escape) { codegen_case("codegen_tuple_escape", "merge_tuple_escape", true); }
Test(byoc_codegen, call_tir_left_alone) { codegen_case("codegen_call_tir", "merge_call_tir", false); }
Test(byoc_codegen, multiple_calls_same_extern) { codegen_case("codegen_multiple_calls", "codegen_multiple_calls", true); }

/* A test backend that accepts symbolic shapes: RunCodegen keeps the call's struct info. */
static int stub_has(rt_module *m, const char *s) {
    (void)m;
    return strncmp(s, "stub_", 5) == 0;
}
static gr_status stub_call(rt_module *m, const char *s, DLTensor *const *a, uint32_t ni, uint32_t no, gr_diag *d) {
    (void)m, (void)s, (void)a, (void)ni, (void)no;
    return gr_diag_set(d, GR_ERR_UNSUPPORTED, "stub");
}
static void stub_destroy(rt_module *m) { (void)m; }
static const rt_module_i STUB_I = {RT_MODULE_API_VERSION, "stub", stub_call, stub_has, NULL, stub_destroy};
static int g_stub_regions;
static gr_status stub_compile(ir_ctx_t *ctx, const byoc_region *r, uint32_t n, const byoc_options *o, rt_module **out,
                              gr_diag *d) {
    (void)ctx, (void)r, (void)o, (void)d;
    g_stub_regions += (int)n;
    *out = rt_module_new(&STUB_I, NULL, "stub");
    return GR_OK;
}
static gr_status stub_patterns(ir_ctx_t *ctx, const byoc_options *o, const byoc_pattern **out, uint32_t *n, gr_diag *d) {
    (void)ctx, (void)o, (void)d;
    *out = NULL;
    *n = 0;
    return GR_OK;
}
static const byoc_backend STUB = {"stubcg", "test stub", stub_patterns, stub_compile, NULL, "stub"};

Test(byoc_codegen, dynamic_shape_and_append) {
    byoc_backend_register(&STUB);
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "codegen_dynamic.relax");
    ir_module *out = NULL;
    g_stub_regions = 0;
    cr_assert_eq(byoc_run_codegen(ctx, m, NULL, &out, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(g_stub_regions, 1);
    check_golden(out, "codegen_dynamic");
    cr_expect_eq(rt_module_count(out), 1);
    /* a second RunCodegen appends to external_mods */
    ir_module *m2 = parse(ctx, GOLDEN "codegen_dynamic.relax");
    m2->attrs = out->attrs;
    ir_module *out2 = NULL;
    cr_assert_eq(byoc_run_codegen(ctx, m2, NULL, &out2, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(rt_module_count(out2), 2);
    ir_ctx_free(ctx);
}

/* Module name lookups switch to a hash index past 16 functions (partitioned models hold
 * thousands of composites): lookups, replacement, removal and copies must agree with the list. */
Test(byoc_module, name_index_follows_set_remove_copy) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, GOLDEN "conv2d_relu_x2.relax");
    ir_expr *f = m->funcs[0];
    uint32_t base = m->nfuncs;
    for (uint32_t i = 0; i < 100; i++) ir_module_set_func(m, ir_internf(ctx, "f%u", i), f);
    cr_assert_eq(m->nfuncs, base + 100);
    for (uint32_t i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%u", i);  /* not interned: compared by content */
        ir_gvar *g = ir_module_gvar(m, name);
        cr_assert(g, "%s", name);
        cr_expect_str_eq(g->name, name);
    }
    cr_expect_null(ir_module_gvar(m, "f100"));
    /* replacing keeps the position; removing shifts the rest */
    uint32_t n = m->nfuncs;
    ir_module_set_func(m, "f7", f);
    cr_expect_eq(m->nfuncs, n);
    for (uint32_t i = 0; i < 100; i += 3) ir_module_remove(m, ir_internf(ctx, "f%u", i));
    for (uint32_t i = 0; i < 100; i++) {
        ir_gvar *g = ir_module_gvar(m, ir_internf(ctx, "f%u", i));
        if (i % 3 == 0) cr_expect_null(g, "f%u was removed", i);
        else cr_expect(g && strcmp(g->name, ir_internf(ctx, "f%u", i)) == 0, "f%u", i);
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) cr_expect_eq(ir_module_gvar(m, m->gvars[i]->name), m->gvars[i]);
    ir_module *c = ir_module_copy(m);
    ir_module_set_func(c, "extra", f);
    cr_expect_null(ir_module_gvar(m, "extra"));
    cr_expect(ir_module_gvar(c, "extra"));
    for (uint32_t i = 0; i < m->nfuncs; i++) cr_expect_eq(ir_module_gvar(c, m->gvars[i]->name), m->gvars[i]);
    /* down to a few functions: plain search again */
    while (c->nfuncs > 3) ir_module_remove(c, c->gvars[c->nfuncs - 1]->name);
    for (uint32_t i = 0; i < c->nfuncs; i++) cr_expect_eq(ir_module_gvar(c, c->gvars[i]->name), c->gvars[i]);
    cr_expect_null(ir_module_gvar(c, "extra"));
    ir_ctx_free(ctx);
}

/* ----------------------------------------------------------- JSON runtime base ---- */

/* The codegen builds its runtime graphs node by node next to the text (no document): they must
 * be what loading that text gives, node for node, attrs included. */
static void expect_same_graph(rt_json_graph *a, rt_json_graph *b, const char *what) {
    cr_assert_eq(rt_json_graph_num_nodes(a), rt_json_graph_num_nodes(b), "%s", what);
    cr_expect_eq(rt_json_graph_num_inputs(a), rt_json_graph_num_inputs(b), "%s", what);
    cr_expect_eq(rt_json_graph_num_consts(a), rt_json_graph_num_consts(b), "%s", what);
    cr_expect_eq(rt_json_graph_num_entries(a), rt_json_graph_num_entries(b), "%s", what);
    cr_assert_eq(rt_json_graph_num_heads(a), rt_json_graph_num_heads(b), "%s", what);
    for (uint32_t h = 0; h < rt_json_graph_num_heads(a); h++) {
        cr_expect_eq(rt_json_graph_head(a, h).nid, rt_json_graph_head(b, h).nid, "%s", what);
        cr_expect_eq(rt_json_graph_head(a, h).index, rt_json_graph_head(b, h).index, "%s", what);
    }
    for (uint32_t i = 0; i < rt_json_graph_num_nodes(a); i++) {
        const rt_json_node *x = rt_json_graph_node(a, i), *y = rt_json_graph_node(b, i);
        cr_expect_eq(x->kind, y->kind, "%s node %u", what, i);
        cr_expect_str_eq(x->name, y->name, "%s node %u", what, i);
        cr_expect_str_eq(x->layer, y->layer, "%s node %u", what, i);
        cr_assert_eq(x->ninputs, y->ninputs, "%s node %u", what, i);
        for (uint32_t k = 0; k < x->ninputs; k++) {
            cr_expect_eq(x->inputs[k].nid, y->inputs[k].nid, "%s node %u", what, i);
            cr_expect_eq(x->inputs[k].index, y->inputs[k].index, "%s node %u", what, i);
        }
        cr_assert_eq(x->noutputs, y->noutputs, "%s node %u", what, i);
        for (uint32_t o = 0; o < x->noutputs; o++) {
            cr_expect_eq(x->dtypes[o].code, y->dtypes[o].code, "%s node %u", what, i);
            cr_expect_eq(x->dtypes[o].bits, y->dtypes[o].bits, "%s node %u", what, i);
            cr_assert_eq(x->ndims[o], y->ndims[o], "%s node %u", what, i);
            for (int32_t k = 0; k < x->ndims[o]; k++) cr_expect_eq(x->shapes[o][k], y->shapes[o][k], "%s node %u", what, i);
        }
        cr_assert(x->attrs, "%s node %u: attrs not parsed", what, i);
        cr_expect(json_equal(x->attrs, y->attrs), "%s node %u: attrs differ", what, i);
    }
}

Test(byoc_json_runtime, built_graph_is_its_text) {
    const char *inputs[] = {GOLDEN "conv2d_relu_x2.relax", GOLDEN "branch_tuple_output.relax",
                            GOLDEN "merge_tuple_escape.relax", GOLDEN "merge_tuple_projection.relax",
                            GOLDEN "multiple_functions.relax", GOLDEN "if_dataflow.relax",
                            "tests/golden/const_metadata.relax", "tests/golden/spans_ranges.relax",
                            "tests/golden/nn_ops.relax", "tests/golden/return_tuple.relax"};
    uint32_t ngraphs = 0;
    for (size_t f = 0; f < sizeof inputs / sizeof inputs[0]; f++) {
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *out = partition(ctx, inputs[f], NULL, 0, NULL, NULL);
        for (uint32_t m = 0; m < rt_module_count(out); m++) {
            rt_json_graph *g;
            for (uint32_t k = 0; (g = rt_json_module_graph(rt_module_at(out, m), k)); k++) {
                const char *text = rt_json_graph_text(g);
                cr_assert(text);
                rt_json_graph *back = NULL;
                gr_diag d;
                gr_diag_clear(&d);
                cr_assert_eq(rt_json_graph_load(rt_json_graph_symbol(g), text, strlen(text), &back, &d), GR_OK, "%s: %s",
                             inputs[f], d.msg);
                expect_same_graph(g, back, inputs[f]);
                rt_json_graph_free(back);
                ngraphs++;
            }
        }
        ir_ctx_free(ctx);
    }
    cr_expect_geq(ngraphs, 10);
}

Test(byoc_json_runtime, serialize_load_run) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *out = partition(ctx, GOLDEN "conv2d_relu_x2.relax", NULL, 0, NULL, NULL);
    rt_module *mod = rt_module_at(out, 0);
    cr_assert(mod);
    uint8_t *buf = NULL;
    size_t len = 0;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(mod->iface->serialize(mod, &buf, &len, &d), GR_OK);
    rt_module *back = NULL;
    cr_assert_eq(byoc_json_backend.load(buf, len, NULL, NULL, NULL, &back, &d), GR_OK, "%s", d.msg);
    /* run both on the same tensors */
    int64_t xs[4] = {1, 4, 8, 8}, ws[4] = {4, 4, 3, 3}, os[4] = {1, 4, 4, 4};
    rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 4, xs), *w1 = rt_tensor_new(IR_DTYPE_F32, 4, ws),
              *w2 = rt_tensor_new(IR_DTYPE_F32, 4, ws), *o1 = rt_tensor_new(IR_DTYPE_F32, 4, os),
              *o2 = rt_tensor_new(IR_DTYPE_F32, 4, os);
    for (int64_t i = 0; i < rt_tensor_numel(x); i++) rt_tensor_set_f64(x, i, cos((double)i));
    for (int64_t i = 0; i < rt_tensor_numel(w1); i++) {
        rt_tensor_set_f64(w1, i, sin((double)i));
        rt_tensor_set_f64(w2, i, sin(2.0 * (double)i));
    }
    const char *sym = NULL;
    for (uint32_t i = 0; i < out->nfuncs; i++) (void)i;
    /* the symbol is the extern of main's call */
    char *text = ir_print_module_str(out, NULL);
    char *q = strstr(text, "R.call_dps_packed(\"");
    cr_assert(q);
    q += strlen("R.call_dps_packed(\"");
    *strchr(q, '"') = '\0';
    sym = q;
    DLTensor *args1[4] = {&x->dl, &w1->dl, &w2->dl, &o1->dl}, *args2[4] = {&x->dl, &w1->dl, &w2->dl, &o2->dl};
    cr_assert_eq(rt_module_call(mod, sym, args1, 3, 1, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_module_call(back, sym, args2, 3, 1, &d), GR_OK, "%s", d.msg);
    tc_expect_tensor(o2, o1, (gr_cmp_opts){0}, "the reloaded module against the original");
    /* wrong arity is an error, not a crash */
    gr_diag_clear(&d);
    cr_expect_neq(rt_module_call(back, sym, args2, 2, 1, &d), GR_OK);
    free(text);
    free(buf);
    rt_module_release(back);
    rt_tensor_release(x);
    rt_tensor_release(w1);
    rt_tensor_release(w2);
    rt_tensor_release(o1);
    rt_tensor_release(o2);
    ir_ctx_free(ctx);
}

Test(byoc_json_runtime, bad_graphs) {
    const char *bad[] = {
        "", "{", "{\"nodes\": 3}", "{\"nodes\": [], \"heads\": [], \"arg_nodes\": [], \"node_row_ptr\": []}",
        "{\"nodes\": [{\"op\": \"kernel\", \"name\": \"relax.add\", \"inputs\": [[5, 0, 0]], \"attrs\": {}}], "
        "\"heads\": [], \"arg_nodes\": [], \"node_row_ptr\": [0, 1]}",
        "{\"nodes\": [{\"op\": \"input\", \"name\": \"x\", \"attrs\": {\"shape\": [[-1]], \"dtype\": [\"float32\"]}}], "
        "\"heads\": [[0, 0, 0]], \"arg_nodes\": [0], \"node_row_ptr\": [0, 1]}",
        "{\"nodes\": [{\"op\": \"input\", \"name\": \"x\", \"attrs\": {\"shape\": [[2]], \"dtype\": [\"float32\"]}}], "
        "\"heads\": [[0, 3, 0]], \"arg_nodes\": [0], \"node_row_ptr\": [0, 1]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rt_json_graph *g = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_expect_neq(rt_json_graph_load("s", bad[i], strlen(bad[i]), &g, &d), GR_OK, "case %zu", i);
        cr_expect_null(g);
        cr_expect(d.msg[0]);
    }
    /* an unknown op fails at prepare with the op named */
    const char *unk = "{\"nodes\": [{\"op\": \"input\", \"name\": \"x\", \"attrs\": {\"shape\": [[2]], \"dtype\": [\"float32\"]}},"
                      "{\"op\": \"kernel\", \"name\": \"relax.nope\", \"inputs\": [[0, 0, 0]], \"attrs\": {\"shape\": [[2]], "
                      "\"dtype\": [\"float32\"], \"args\": [{\"in\": 0}]}}], \"heads\": [[1, 0, 0]], \"arg_nodes\": [0], "
                      "\"node_row_ptr\": [0, 1, 2]}";
    rt_json_graph *g = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(rt_json_graph_load("s", unk, strlen(unk), &g, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_json_graph_init(g, NULL, 0, &d), GR_OK);
    rt_module *m = rt_json_module_new("json", NULL, NULL, &g, 1);
    int64_t sh[1] = {2};
    rt_tensor *a = rt_tensor_new(IR_DTYPE_F32, 1, sh), *b = rt_tensor_new(IR_DTYPE_F32, 1, sh);
    DLTensor *args[2] = {&a->dl, &b->dl};
    cr_expect_eq(rt_module_call(m, "s", args, 1, 1, &d), GR_ERR_UNSUPPORTED);
    cr_expect(strstr(d.msg, "relax.nope"), "%s", d.msg);
    rt_module_release(m);
    rt_tensor_release(a);
    rt_tensor_release(b);
}

/* The prepare observer is per module: two modules over the same graph, the observer on one;
 * only that one's prepare is reported (it was process-wide: a profiler of one model saw every
 * model's prepares). */
typedef struct prep_seen {
    int n;
    char symbol[16], engine[16];
} prep_seen;

static void on_prep(const char *symbol, const char *engine, uint64_t ns, void *user) {
    prep_seen *p = user;
    (void)ns;
    p->n++;
    snprintf(p->symbol, sizeof p->symbol, "%s", symbol);
    snprintf(p->engine, sizeof p->engine, "%s", engine);
}

Test(byoc_json_runtime, prepare_observer_per_module) {
    const char *text = "{\"nodes\": [{\"op\": \"input\", \"name\": \"x\", \"attrs\": {\"shape\": [[2]], \"dtype\": [\"float32\"]}},"
                       "{\"op\": \"kernel\", \"name\": \"relax.nn.relu\", \"inputs\": [[0, 0, 0]], \"attrs\": {\"shape\": [[2]], "
                       "\"dtype\": [\"float32\"], \"args\": [{\"in\": 0}]}}], \"heads\": [[1, 0, 0]], \"arg_nodes\": [0], "
                       "\"node_row_ptr\": [0, 1, 2]}";
    rt_module *m[2];
    prep_seen seen[2] = {{0}};
    gr_diag d;
    gr_diag_clear(&d);
    for (int i = 0; i < 2; i++) {
        rt_json_graph *g = NULL;
        cr_assert_eq(rt_json_graph_load("s", text, strlen(text), &g, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_json_graph_init(g, NULL, 0, &d), GR_OK, "%s", d.msg);
        m[i] = rt_json_module_new("json", NULL, NULL, &g, 1);
    }
    cr_assert(rt_json_module_set_prepare_observer(m[0], on_prep, &seen[0]));
    int64_t sh[1] = {2};
    rt_tensor *a = rt_tensor_new(IR_DTYPE_F32, 1, sh), *b = rt_tensor_new(IR_DTYPE_F32, 1, sh);
    DLTensor *args[2] = {&a->dl, &b->dl};
    for (int i = 0; i < 2; i++) cr_assert_eq(rt_module_call(m[i], "s", args, 1, 1, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(seen[0].n, 1, "the observed module's prepare: %d reports", seen[0].n);
    cr_expect_str_eq(seen[0].symbol, "s");
    cr_expect_str_eq(seen[0].engine, rt_json_reference_engine.kind);
    cr_expect_eq(seen[1].n, 0);
    for (int i = 0; i < 2; i++) rt_module_release(m[i]);
    rt_tensor_release(a);
    rt_tensor_release(b);
}

/* ------------------------------------------------------------------- report ---- */

Test(byoc_report, keys_coverage_flops) {
    ir_ctx_t *ctx = ir_ctx_new();
    byoc_notes notes;
    byoc_notes_init(&notes);
    ir_module *merged = NULL;
    partition(ctx, GOLDEN "merge_producers_cyclic.relax", GOLDEN "pat_ab.relax", BYOC_STOP_MERGE, &notes, &merged);
    json_t *r = byoc_report_json(ctx, merged, NULL, 0, &notes);
    cr_assert(json_object_get(r, "regions") && json_object_get(r, "host") && json_object_get(r, "coverage"));
    json_t *cov = json_object_get(r, "coverage");
    cr_expect_eq(json_number_value(json_object_get(json_object_get(cov, "nodes"), "total")), 4.0);
    cr_expect_eq(json_number_value(json_object_get(json_object_get(cov, "nodes"), "offloaded")), 3.0);
    /* elementwise FLOPs = numel: 3 of 4 ops of 8 elements offloaded */
    cr_expect_float_eq(json_number_value(json_object_get(json_object_get(cov, "flops"), "share")), 0.75, 1e-9);
    json_t *h = json_array_get(json_object_get(r, "host"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(h, "op")), "relax.exp");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(h, "layers"), 0)), "exp");
    cr_expect(strstr(json_string_value(json_object_get(h, "reason")), "backend disabled: json"));
    json_decref(r);
    byoc_notes_free(&notes);
    ir_ctx_free(ctx);
}

Test(byoc_report, conv_flops) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = parse(ctx, GOLDEN "conv2d_relu_x2.relax");
    const ir_seq *s = IR_AS(ir_module_func(m, "main")->body, ir_seq);
    const ir_call *conv = IR_AS(s->blocks[0]->bindings[0].value, ir_call);
    /* (1, 4, 6, 6) outputs x (4 * 3 * 3) MACs x 2 */
    cr_expect_float_eq(byoc_call_flops(conv), 2.0 * 144 * 36, 1e-9);
    ir_ctx_free(ctx);
}

/* ------------------------------------------------ overlap, constants, nesting ---- */

/* add | relu(add): at the add the small form matches; at the relu the larger match contains it
 * and wins (maximal subgraph, TVM PR #16922). */
Test(byoc_fuse, maximal_match_wins) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "merge_producers.relax");
    pat_t *w1 = pat_wildcard(ctx), *w2 = pat_wildcard(ctx);
    pat_t *add = pat_call2(ctx, "relax.add", w1, w2);
    pat_t *p = pat_or(ctx, pat_call1(ctx, "relax.nn.relu", add), add);
    byoc_pattern bp = {"T.add_relu", p, NULL, NULL};
    ir_module *out = NULL;
    cr_assert_eq(byoc_fuse_ops_by_pattern(ctx, m, &bp, 1, NULL, NULL, &out, &d), GR_OK, "%s", d.msg);
    /* merge_producers has relu chains and one add at the end (no relu after it): the add alone */
    cr_expect_neq(ir_module_func(out, "fused_relax_add"), NULL);
    ir_module *m2 = parse(ctx, GOLDEN "codegen_multiple_calls.relax");
    (void)m2;
    /* a relu(add) chain: build add -> relu */
    const char *text =
        "@I.ir_module\nclass Module:\n    @R.function\n"
        "    def main(x: R.Tensor((1, 8), dtype=\"float32\")) -> R.Tensor((1, 8), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv: R.Tensor((1, 8), dtype=\"float32\") = R.add(x, x)  # span: \"add\"!\n"
        "            gv: R.Tensor((1, 8), dtype=\"float32\") = R.nn.relu(lv)  # span: \"relu\"!\n"
        "            R.output(gv)\n        return gv\n";
    ir_module *m3 = NULL;
    cr_assert_eq(ir_parse_module(ctx, "t", text, strlen(text), &m3, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_fuse_ops_by_pattern(ctx, m3, &bp, 1, NULL, NULL, &out, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(out->nfuncs, 2, "one composite");
    cr_expect_neq(ir_module_func(out, "fused_relax_add_relax_nn_relu"), NULL);
    ir_ctx_free(ctx);
}

/* bind_constants=false lifts a constant into param_0 and the caller passes it. */
Test(byoc_fuse, lift_constants) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "conv2d_relu_x2.relax");
    int64_t ws[4] = {4, 4, 3, 3};
    rt_tensor *w = rt_tensor_new(IR_DTYPE_F32, 4, ws);
    const char *names[1] = {"weight1"};
    ir_pass *bind = ir_pass_bind_params_new("main", 1, names, &w);
    ir_module *bound = NULL;
    cr_assert_eq(ir_pass_run(bind, NULL, m, &bound, &d), GR_OK, "%s", d.msg);
    ir_pass_free(bind);
    rt_tensor_release(w);
    pat_table *t = NULL;
    cr_assert_eq(pat_table_read_file(ctx, GOLDEN "pat_conv_relu_conv.relax", &t, &d), GR_OK);
    byoc_pattern ps[4];
    for (uint32_t i = 0; i < t->n && i < 4; i++) ps[i] = (byoc_pattern){t->entries[i].name, t->entries[i].pattern, NULL, NULL};
    for (int bindc = 0; bindc < 2; bindc++) {
        byoc_fuse_opts o = {bindc == 1, false, 0, NULL};
        ir_module *out = NULL;
        cr_assert_eq(byoc_fuse_ops_by_pattern(ctx, bound, ps, t->n, &o, NULL, &out, &d), GR_OK, "%s", d.msg);
        const ir_func *f = ir_module_func(out, "fused_relax_nn_conv2d_relax_nn_relu");
        cr_assert(f);
        if (bindc) {
            cr_expect_eq(f->nparams, 1, "the constant stays inside");
        } else {
            cr_expect_eq(f->nparams, 2);
            cr_expect_str_eq(f->params[1]->name, "param_0");
        }
        cr_expect_eq(ir_wellformed_check(out, &d), GR_OK, "%s", d.msg);
    }
    pat_table_free(t);
    ir_ctx_free(ctx);
}

/* Dataflow blocks inside both branches of an if are partitioned. */
Test(byoc_fuse, dataflow_inside_branch) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "if_dataflow.relax");
    const char *json = "json";
    ir_module *out = NULL;
    byoc_partition_opts po = {0};
    cr_assert_eq(byoc_partition(ctx, m, &json, 1, &po, &out, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_wellformed_check(out, &d), GR_OK, "%s", d.msg);
    char *text = ir_print_module_str(out, NULL);
    int n = 0;
    for (const char *q = text; (q = strstr(q, "R.call_dps_packed")); q++) n++;
    cr_expect_geq(n, 2, "both branches offloaded:\n%s", text);
    free(text);
    ir_ctx_free(ctx);
}

/* FuseOps(annotate_codegen) then RunCodegen directly (no merge): the wrappers are regions. */
Test(byoc_codegen, annotate_codegen_then_run_codegen) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = parse(ctx, GOLDEN "conv2d_relu_x2.relax");
    const byoc_pattern *ps = NULL;
    uint32_t np = 0;
    cr_assert_eq(byoc_json_backend.get_patterns(ctx, NULL, &ps, &np, &d), GR_OK);
    byoc_fuse_opts o = {true, true, 0, NULL};
    ir_module *f = NULL, *c = NULL;
    cr_assert_eq(byoc_fuse_ops_by_pattern(ctx, m, ps, np, &o, NULL, &f, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_run_codegen(ctx, f, NULL, &c, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_wellformed_check(c, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(c->nfuncs, 1, "only main is left");
    uint32_t nl = 0;
    const char **lost = ir_lost_layers(m, c, &nl);
    cr_expect_eq(nl, 0, "lost %s", nl ? lost[0] : "");
    free((void *)lost);
    rt_value a = {0}, b = {0};
    run_random(m, &a);
    run_random(c, &b);
    tc_expect_value(&b, &a, (gr_cmp_opts){0}, "codegen output against the input module");
    rt_value_clear(&a);
    rt_value_clear(&b);
    ir_ctx_free(ctx);
}
