/* Text format: golden round trips, TVM-printed inputs, malformed inputs, fuzzing, speed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tensor.h"
#include "ir/builder.h"
#include "ir/equal.h"
#include "ir/op.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "tests/test_util.h"


typedef struct names {
    char **v;
    int n;
} names;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of the .relax paths in dir. */
static names list_relax(const char *dir) {
    names r = {0};
    DIR *d = opendir(dir);
    if (!d) return r;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".relax") != 0) continue;
        r.v = realloc(r.v, sizeof(char *) * (size_t)(r.n + 1));
        size_t n = strlen(dir) + l + 2;
        r.v[r.n] = malloc(n);
        snprintf(r.v[r.n++], n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    qsort(r.v, (size_t)r.n, sizeof(char *), cmp_str);
    return r;
}

static void names_free(names *r) {
    for (int i = 0; i < r->n; i++) free(r->v[i]);
    free(r->v);
}

static int count_substr(const char *s, const char *sub) {
    int n = 0;
    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub)) n++;
    return n;
}

Test(text, golden_round_trip) {
    names files = list_relax("tests/golden");
    cr_assert_geq(files.n, 30, "expected >= 30 golden files, found %d", files.n);
    int spans = 0, consts = 0;
    for (int i = 0; i < files.n; i++) {
        size_t len = 0;
        char *text = tu_read_file(files.v[i], &len);
        cr_assert_not_null(text);
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL, *m2 = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_eq(ir_parse_module(ctx, files.v[i], text, len, &m, &d), GR_OK, "%s", d.msg);
        char *printed = ir_print_module_str(m, NULL);
        cr_expect_str_eq(printed, text, "%s: print(parse(file)) differs from the file", files.v[i]);
        gr_diag_clear(&d);
        cr_assert_eq(ir_parse_module(ctx, "printed", printed, strlen(printed), &m2, &d), GR_OK,
                     "%s: reparse: %s", files.v[i], d.msg);
        char why[1024] = "";
        cr_expect(ir_module_struct_equal_explain(m, m2, IR_EQ_SPANS | IR_EQ_NAMES, why, sizeof(why)),
                  "%s: parse(print(m)) != m: %s", files.v[i], why);
        spans += strstr(text, "# span:") != NULL;
        consts += strstr(text, "metadata = {") != NULL;
        free(printed);
        free(text);
        ir_ctx_free(ctx);
    }
    cr_expect_geq(spans, 8);
    cr_expect_geq(consts, 3);
    names_free(&files);
}

Test(text, tvm_printed_inputs) {
    names files = list_relax("tests/golden/tvm");
    cr_assert_geq(files.n, 5);
    for (int i = 0; i < files.n; i++) {
        const char *base = strrchr(files.v[i], '/') + 1;
        char canon[512];
        snprintf(canon, sizeof(canon), "tests/golden/%s", base);
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *a = NULL, *b = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_eq(ir_parse_file(ctx, files.v[i], &a, &d), GR_OK, "%s", d.msg);
        gr_diag_clear(&d);
        cr_assert_eq(ir_parse_file(ctx, canon, &b, &d), GR_OK, "%s: %s", canon, d.msg);
        char why[1024] = "";
        cr_expect(ir_module_struct_equal_explain(a, b, IR_EQ_SPANS | IR_EQ_NAMES, why, sizeof(why)),
                  "%s vs %s: %s", files.v[i], canon, why);
        /* and it prints as the canonical file */
        char *printed = ir_print_module_str(a, NULL);
        char *ctext = tu_read_file(canon, NULL);
        cr_expect_str_eq(printed, ctext, "%s does not print as %s", files.v[i], canon);
        free(printed);
        free(ctext);
        ir_ctx_free(ctx);
    }
    names_free(&files);
}

Test(text, malformed_inputs) {
    names files = list_relax("tests/golden/bad");
    cr_assert_geq(files.n, 20);
    for (int i = 0; i < files.n; i++) {
        char errpath[512];
        snprintf(errpath, sizeof(errpath), "%.*s.err", (int)(strlen(files.v[i]) - 6), files.v[i]);
        char *want = tu_read_file(errpath, NULL);
        cr_assert_not_null(want, "missing %s", errpath);
        char *nl = strchr(want, '\n');
        cr_assert_not_null(nl);
        *nl = 0;
        char *want_status = nl + 1;
        char *nl2 = strchr(want_status, '\n');
        if (nl2) *nl2 = 0;
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        gr_status st = ir_parse_file(ctx, files.v[i], &m, &d);
        cr_expect_neq(st, GR_OK, "%s parsed", files.v[i]);
        cr_expect_null(m);
        cr_expect_str_eq(gr_status_name(st), want_status, "%s: status", files.v[i]);
        /* message: first line, then the source line, then a caret under the column */
        char *msg = strdup(d.msg);
        char *l1 = msg, *l2 = strchr(l1, '\n');
        cr_assert_not_null(l2, "%s: no source line in: %s", files.v[i], d.msg);
        *l2++ = 0;
        char *l3 = strchr(l2, '\n');
        cr_assert_not_null(l3, "%s: no caret line", files.v[i]);
        *l3++ = 0;
        cr_expect_str_eq(l1, want, "%s", files.v[i]);
        cr_expect_str_eq(d.file, files.v[i]);
        cr_expect_gt(d.line, 0);
        cr_expect_gt(d.col, 0);
        /* the caret sits at col-1 spaces (lines shown are short here) */
        size_t sp = strspn(l3, " ");
        cr_expect_eq(l3[sp], '^', "%s: caret line '%s'", files.v[i], l3);
        cr_expect_eq(l3[sp + 1], 0);
        cr_expect_eq((int)sp, d.col - 1, "%s: caret at %zu, col %d", files.v[i], sp, d.col);
        /* the source line shown is line d.line of the file */
        char *src = tu_read_file(files.v[i], NULL);
        const char *ls = src;
        for (int k = 1; k < d.line && ls; k++) {
            ls = strchr(ls, '\n');
            if (ls) ls++;
        }
        if (ls && (int)strlen(l2) < 300) cr_expect(strncmp(ls, l2, strlen(l2)) == 0, "%s: shown line", files.v[i]);
        free(src);
        free(msg);
        free(want);
        ir_ctx_free(ctx);
    }
    names_free(&files);
}

/* Truncations and byte mutations of every golden file: an error or a module, never a crash
 * (run under ASan for leaks and overflows). */
Test(text, fuzz_no_crash) {
    names files = list_relax("tests/golden");
    uint32_t seed = 12345;
    int parsed = 0, failed = 0;
    for (int i = 0; i < files.n; i++) {
        size_t len = 0;
        char *text = tu_read_file(files.v[i], &len);
        cr_assert_not_null(text, "%s", files.v[i]);
        char *buf = malloc(len + 1);
        for (int k = 0; k < 40; k++) {
            size_t cut = len;
            memcpy(buf, text, len);
            if (k < 20) {
                cut = (size_t)k * len / 20;
            } else {
                for (int q = 0; q < 1 + k % 4; q++) {
                    seed = seed * 1103515245u + 12345u;
                    size_t at = (seed >> 8) % (len ? len : 1);
                    static const char pool[] = "()[]{},:.=\"'#\n \t-!;@xR0123456789\xff";
                    buf[at] = pool[(seed >> 3) % (sizeof(pool) - 1)];
                }
            }
            ir_ctx_t *ctx = ir_ctx_new();
            ir_module *m = NULL;
            gr_diag d;
            gr_diag_clear(&d);
            gr_status st = ir_parse_module(ctx, "fuzz", buf, cut, &m, &d);
            if (st == GR_OK) {
                parsed++;
                char *s = ir_print_module_str(m, NULL);
                free(s);
            } else {
                failed++;
                cr_expect(strncmp(d.msg, "fuzz:", 5) == 0, "message without position: %s", d.msg);
            }
            ir_ctx_free(ctx);
        }
        free(buf);
        free(text);
    }
    cr_expect_gt(failed, 0);
    names_free(&files);
}

static gr_status parse_str(ir_ctx_t *ctx, const char *s, ir_module **m, gr_diag *d) {
    gr_diag_clear(d);
    return ir_parse_module(ctx, "t.relax", s, strlen(s), m, d);
}

#define HDR "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n"
#define T4 "R.Tensor((1, 4), dtype=\"float32\")"

Test(text, shadowed_names_are_deduplicated) {
    const char *src = HDR
        "    @R.function\n"
        "    def main(x: " T4 ") -> " T4 ":\n"
        "        lv = R.add(x, x)\n"
        "        lv = R.multiply(lv, x)\n"
        "        lv_1 = R.add(lv, x)\n"
        "        lv = R.add(lv_1, lv)\n"
        "        return lv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m, *m2;
    gr_diag d;
    cr_assert_eq(parse_str(ctx, src, &m, &d), GR_OK, "%s", d.msg);
    char *s = ir_print_module_str(m, NULL);
    /* four distinct vars: lv, lv_1, lv_1_1 (the written lv_1 is taken), lv_2 */
    cr_expect(strstr(s, "        lv: " T4 " = R.add(x, x)\n"), "%s", s);
    cr_expect(strstr(s, "        lv_1: " T4 " = R.multiply(lv, x)\n"), "%s", s);
    cr_expect(strstr(s, " = R.add(lv_1, x)\n"), "%s", s);
    cr_expect(strstr(s, "return lv_"), "%s", s);
    cr_assert_eq(parse_str(ctx, s, &m2, &d), GR_OK, "%s", d.msg);
    cr_expect(ir_module_struct_equal(m, m2, IR_EQ_SPANS));
    free(s);
    ir_ctx_free(ctx);
}

Test(text, annotation_and_inference) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m;
    gr_diag d;
    /* an annotation that is a base of the inferred struct info is kept as the var's */
    const char *src = HDR
        "    @R.function\n"
        "    def main(x: " T4 ") -> R.Tensor(ndim=2):\n"
        "        lv: R.Tensor(ndim=2, dtype=\"float32\") = R.add(x, x)\n"
        "        gv = R.nn.relu(lv)\n"
        "        return gv\n";
    cr_assert_eq(parse_str(ctx, src, &m, &d), GR_OK, "%s", d.msg);
    ir_func *f = ir_module_func(m, "main");
    ir_seq *body = (ir_seq *)f->body;
    const ir_binding *b = &body->blocks[0]->bindings[0];
    cr_expect_eq(b->var->base.sinfo->ndim, 2);
    cr_expect_null(b->var->base.sinfo->dims);
    cr_expect_not_null(b->value->sinfo->dims);
    /* without annotation the var takes the value's struct info */
    const ir_binding *b2 = &body->blocks[0]->bindings[1];
    cr_expect_eq(b2->var->base.sinfo, b2->value->sinfo);
    /* attrs: any subset parses, defaults filled in schema order */
    const char *src2 = HDR
        "    @R.function\n"
        "    def main(x: R.Tensor((1, 3, 8, 8), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\")) -> R.Tensor(ndim=4):\n"
        "        gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])\n"
        "        return gv\n";
    cr_assert_eq(parse_str(ctx, src2, &m, &d), GR_OK, "%s", d.msg);
    char *s = ir_print_module_str(m, NULL);
    cr_expect(strstr(s, "R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1"), "%s", s);
    cr_expect(strstr(s, "gv: R.Tensor((1, 4, 8, 8), dtype=\"float32\")"), "%s", s);
    free(s);
    ir_ctx_free(ctx);
}

Test(text, dataflow_vars_and_outputs) {
    const char *src = HDR
        "    @R.function\n"
        "    def main(x: " T4 ") -> " T4 ":\n"
        "        with R.dataflow():\n"
        "            lv = R.add(x, x)\n"
        "            gv = R.nn.relu(lv)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m;
    gr_diag d;
    cr_assert_eq(parse_str(ctx, src, &m, &d), GR_OK, "%s", d.msg);
    ir_seq *body = (ir_seq *)ir_module_func(m, "main")->body;
    cr_assert_eq(body->nblocks, 1);
    cr_expect(body->blocks[0]->dataflow);
    cr_expect_eq(body->blocks[0]->bindings[0].var->base.kind, IR_DFVAR);
    cr_expect_eq(body->blocks[0]->bindings[1].var->base.kind, IR_VAR);
    /* public function: global_symbol = name, not printed */
    cr_expect_str_eq(ir_attrs_get_str(ir_module_func(m, "main")->attrs, "global_symbol"), "main");
    char *s = ir_print_module_str(m, NULL);
    cr_expect_eq(count_substr(s, "global_symbol"), 0);
    free(s);
    ir_ctx_free(ctx);
}

Test(text, print_options_and_missing_metadata) {
    char *text = tu_read_file("tests/golden/spans_const.relax", NULL);
    cr_assert_not_null(text);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m, *m2;
    gr_diag d;
    cr_assert_eq(parse_str(ctx, text, &m, &d), GR_OK, "%s", d.msg);
    ir_print_opts o = {.no_spans = true, .no_metadata = true};
    char *s = ir_print_module_str(m, &o);
    cr_expect_null(strstr(s, "span"));
    cr_expect(strstr(s, "# Metadata omitted"));
    cr_expect_neq(parse_str(ctx, s, &m2, &d), GR_OK);
    cr_expect(strstr(d.msg, "constant data omitted"), "%s", d.msg);
    free(s);
    ir_print_opts o2 = {.no_spans = true};
    s = ir_print_module_str(m, &o2);
    cr_assert_eq(parse_str(ctx, s, &m2, &d), GR_OK, "%s", d.msg);
    cr_expect(ir_module_struct_equal(m, m2, 0));
    cr_expect_not(ir_module_struct_equal(m, m2, IR_EQ_SPANS));
    free(s);
    free(text);
    ir_ctx_free(ctx);
}

/* A module built through the API (not parsed) prints and parses back equal. */
Test(text, api_built_module_round_trip) {
    ir_ctx_t *ctx = ir_ctx_new();
    gr_diag d;
    gr_diag_clear(&d);
    const ir_sinfo *t = ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 2, (int64_t[]){2, 3});
    ir_var *x = ir_var_new(ctx, "x", t, ir_span_named(ctx, "in", false));
    int64_t shp[2] = {2, 3};
    rt_tensor *w = rt_tensor_new(IR_DTYPE_F32, 2, shp);
    for (int i = 0; i < 6; i++) rt_tensor_set_f64(w, i, i * 0.5);
    ir_const *c = ir_const_new(ctx, w, ir_span_named(ctx, "w", false));
    rt_tensor_release(w);
    ir_bb_t *bb = ir_bb_new(ctx, &d);
    ir_bb_begin_dataflow(bb);
    ir_expr *args[2] = {&x->base, &c->base};
    ir_var *lv = ir_bb_emit(bb, (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "R.add"), 2, args, NULL, 0, NULL,
                                                       ir_span_named(ctx, "add", true)), "lv");
    ir_expr *args2[1] = {&lv->base};
    ir_var *gv = ir_bb_emit_output(bb, (ir_expr *)ir_call_new(ctx, (ir_expr *)ir_op_get(ctx, "R.nn.relu"), 1, args2, NULL, 0,
                                                              NULL, NULL), "lv");
    cr_assert_not_null(gv, "%s", d.msg);
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, &gv->base, NULL);
    ir_bb_free(bb);
    ir_var *ps[1] = {x};
    ir_func *f = ir_func_new(ctx, 1, ps, &body->base, t, NULL, NULL);
    ir_expr_set_sinfo(&f->base, ir_func_sinfo(ctx, f));
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    char *s = ir_print_module_str(m, NULL);
    cr_expect(strstr(s, "@R.function(private=True)"), "%s", s);
    cr_expect(strstr(s, "lv_1: R.Tensor((2, 3), dtype=\"float32\") = R.nn.relu(lv)"), "%s", s);
    cr_expect(strstr(s, "span=\"w\""), "%s", s);
    ir_module *m2;
    cr_assert_eq(parse_str(ctx, s, &m2, &d), GR_OK, "%s\n%s", d.msg, s);
    char why[512] = "";
    cr_expect(ir_module_struct_equal_explain(m, m2, IR_EQ_SPANS, why, sizeof(why)), "%s", why);
    free(s);
    ir_ctx_free(ctx);
}

Test(text, obj_attr_placeholder) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = ir_module_new(ctx);
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    ir_module_set_attr(m, "external_mods", ir_attr_obj(ctx, &t->obj));
    rt_tensor_release(t);
    char *s = ir_print_module_str(m, NULL);
    cr_expect(strstr(s, "I.module_attrs({\"external_mods\": \"<rt.tensor>\"})"), "%s", s);
    free(s);
    ir_ctx_free(ctx);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Smoke-level speed check (the real numbers come from bench/bench_ir.c). */
Test(text, speed_smoke) {
    enum { N = 100000 };
    size_t cap = (size_t)N * 100 + 1024, len = 0;
    char *src = malloc(cap);
    len += (size_t)snprintf(src + len, cap - len, HDR "    @R.function\n    def main(x: R.Tensor((1, 64), dtype=\"float32\")) -> R.Tensor((1, 64), dtype=\"float32\"):\n        with R.dataflow():\n");
    for (int i = 0; i < N; i++) {
        char prev[16];
        if (i) snprintf(prev, sizeof(prev), "lv%d", i - 1);
        else snprintf(prev, sizeof(prev), "x");
        len += (size_t)snprintf(src + len, cap - len, "            lv%d: R.Tensor((1, 64), dtype=\"float32\") = R.add(%s, x)\n", i, prev);
    }
    len += (size_t)snprintf(src + len, cap - len, "            R.output(lv%d)\n        return lv%d\n", N - 1, N - 1);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m;
    gr_diag d;
    gr_diag_clear(&d);
    double t0 = now_s();
    cr_assert_eq(ir_parse_module(ctx, "big", src, len, &m, &d), GR_OK, "%s", d.msg);
    double t1 = now_s();
    char *s = ir_print_module_str(m, NULL);
    double t2 = now_s();
    cr_expect_eq(strlen(s), len, "printed text differs from the generated one");
    cr_log_info("parse %.0f bindings/s, print %.0f bindings/s, arena %.0f B/binding", N / (t1 - t0),
                N / (t2 - t1), (double)ir_ctx_arena_bytes(ctx) / N);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__OPTIMIZE_SIZE__)
    /* generous floor (CPU time, shared machines); bench/bench_ir.c measures the real rates */
    cr_expect_gt(N / (t1 - t0), 50000.0);
    cr_expect_gt(N / (t2 - t1), 50000.0);
#endif
    free(s);
    free(src);
    ir_ctx_free(ctx);
}
