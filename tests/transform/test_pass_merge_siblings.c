/* MergeSiblings: which siblings merge (same input, attrs, dtypes and epilogue, 1x1 kernels,
 * groups 1, constant weights, at most one width off the 8-channel blocks) and which do not, that a merged module computes what the original
 * did (reference executor, same random inputs: within 1e-5, sums of at most 3 x 3 x 24 products
 * of values in [-1, 1] in float32, each output channel summed in the same order), and that every
 * layer of the originals is still named (spans) with its output mark on its slice. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/value.h"
#include "tests/transform/exec_diff.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }
TestSuite(pass_merge_siblings, .init = setup, .fini = teardown);

static uint32_t rng = 11;
static double uniform(void) {
    rng = rng * 1103515245u + 12345u;
    return (double)((rng >> 8) % 2001) / 1000.0 - 1.0;
}


/* The module of text with its w* / b* params bound to random constants (x* stay inputs). */
static ir_module *bound(const char *text) {
    ir_module *m = NULL, *out = NULL;
    cr_assert_eq(ir_parse_module(ctx, "sib", text, strlen(text), &m, &diag), GR_OK, "%s\n%s", diag.msg, text);
    const ir_func *f = ir_module_func(m, "main");
    const char *names[16];
    rt_tensor *ts[16];
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nparams && n < 16; i++)
        if (f->params[i]->name[0] == 'w' || f->params[i]->name[0] == 'b') {
            names[n] = f->params[i]->name;
            ts[n++] = ed_random_tensor(f->params[i]->base.sinfo, uniform);
        }
    ir_pass *bp = ir_pass_bind_params_new("main", n, names, ts);
    cr_assert_eq(ir_pass_run(bp, NULL, m, &out, &diag), GR_OK, "%s", diag.msg);
    ir_pass_free(bp);
    for (uint32_t i = 0; i < n; i++) rt_tensor_release(ts[i]);
    return out;
}

static bool with_matmuls; /* the pass config IR_CONFIG_MERGE_SIBLING_MATMULS */

static ir_module *merged(const ir_module *m) {
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_config_value on = {.kind = IR_CONFIG_BOOL, .u.b = with_matmuls};
    cr_assert_eq(ir_pass_ctx_set_config(pc, IR_CONFIG_MERGE_SIBLING_MATMULS, on, &diag), GR_OK, "%s", diag.msg);
    ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
    ir_module *out = NULL;
    cr_assert_eq(ir_pass_run(ir_pass_find("MergeSiblings"), pc, m, &out, &diag), GR_OK, "%s", diag.msg);
    ir_pass_ctx_free(pc);
    return out;
}


static int count(const char *s, const char *what) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* Runs MergeSiblings on text; expects `splits` merged groups; checks values and spans. Returns
 * the printed result (caller frees). */
static char *check(const char *text, int splits) {
    ir_module *before = bound(text), *after = merged(before);
    char *out = ir_print_module_str(after, NULL);
    cr_assert_eq(count(out, "R.split("), splits, "%d splits expected:\n%s", splits, out);
    double d = ed_max_diff(before, after, uniform, &diag);
    cr_assert(d <= 1e-5, "results differ by %g\n%s", d, out);
    uint32_t nl = 0, no = 0;
    const char **lost = ir_lost_layers(before, after, &nl), **lost_out = ir_lost_outputs(before, after, &no);
    cr_assert_eq(nl, 0, "layer %s lost:\n%s", nl ? lost[0] : "", out);
    cr_assert_eq(no, 0, "output mark of %s lost:\n%s", no ? lost_out[0] : "", out);
    free(lost);
    free(lost_out);
    return out;
}

#define HEAD "@I.ir_module\nclass Module:\n    @R.function\n    def main("
#define T4(c, h, w) "R.Tensor((1, " #c ", " #h ", " #w "), dtype=\"float32\")"
#define TW(o, i, k) "R.Tensor((" #o ", " #i ", " #k ", " #k "), dtype=\"float32\")"
#define TB(c) "R.Tensor((1, " #c ", 1, 1), dtype=\"float32\")"

/* inception: three 1x1 convolutions with bias and relu on the block input, which a pool reads
 * too; their results go to a concat (that one stays: its conv writes the concat's slot), a 3x3
 * convolution and out */
Test(pass_merge_siblings, inception_branches_merge) {
    const char *text = HEAD "x: " T4(24, 7, 7) ", w1: " TW(16, 24, 1) ", w2: " TW(8, 24, 1) ", w3: " TW(5, 24, 1)
        ", b1: " TB(16) ", b2: " TB(8) ", b3: " TB(5) ", w4: " TW(6, 8, 3) "):\n"
        "        with R.dataflow():\n"
        "            a = R.nn.conv2d(x, w1)  # span: \"b1/conv\"\n"
        "            a1 = R.add(a, b1)  # span: \"b1/conv\"\n"
        "            a2 = R.nn.relu(a1)  # span: \"b1/relu\"!\n"
        "            c = R.nn.conv2d(x, w2)  # span: \"b2/conv\"\n"
        "            c1 = R.add(b2, c)  # span: \"b2/conv\"\n"
        "            c2 = R.nn.relu(c1)  # span: \"b2/relu\"!\n"
        "            c3 = R.nn.conv2d(c2, w4, padding=[1, 1, 1, 1])  # span: \"b2/conv3\"!\n"
        "            e = R.nn.conv2d(x, w3)  # span: \"b3/conv\"\n"
        "            e1 = R.add(e, b3)  # span: \"b3/conv\"\n"
        "            e2 = R.nn.relu(e1)  # span: \"b3/relu\"!\n"
        "            p = R.nn.max_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])  # span: \"pool\"!\n"
        "            gv = R.concat((a2, c3, p), axis=1)  # span: \"cat\"!\n"
        "            R.output(gv, e2)\n"
        "        return (gv, e2)\n";
    char *out = check(text, 1);
    /* one convolution of 13 channels, the multiple of 8 first; b1's alone */
    cr_assert(strstr(out, "R.Tensor((1, 13, 7, 7)") && strstr(out, "R.Tensor((1, 16, 7, 7)"), "%s", out);
    cr_assert(strstr(out, "indices_or_sections=[8]"), "%s", out);
    cr_assert(strstr(out, "\"b2/conv\", \"b3/conv\""), "the merged conv names both layers:\n%s", out);
    free(out);
    /* the concat reading b1's result through another op (no epilogue step): b1 merges too, 16
     * first */
    char t2[4096];
    snprintf(t2, sizeof t2, "%s", text);
    char *at = strstr(t2, "            gv = R.concat((a2, c3, p)");
    cr_assert_not_null(at);
    const char *tail = "            a3 = R.multiply(a2, a2)  # span: \"b1/square\"!\n"
                       "            gv = R.concat((a3, c3, p), axis=1)  # span: \"cat\"!\n"
                       "            R.output(gv, e2)\n"
                       "        return (gv, e2)\n";
    snprintf(at, sizeof t2 - (size_t)(at - t2), "%s", tail);
    out = check(t2, 1);
    cr_assert(strstr(out, "R.Tensor((1, 29, 7, 7)") && strstr(out, "indices_or_sections=[16, 24]"), "%s", out);
    cr_assert(strstr(out, "\"b1/conv\", \"b2/conv\", \"b3/conv\""), "the merged conv names every layer:\n%s", out);
    free(out);
}

/* q, k, v: three matmuls with biases on one input, a 3-D batch: merged when the config asks,
 * not by default */
Test(pass_merge_siblings, qkv_projections_merge) {
    const char *text = HEAD "x: R.Tensor((2, 5, 16), dtype=\"float32\"), wq: R.Tensor((16, 16), dtype=\"float32\"), "
        "wk: R.Tensor((16, 16), dtype=\"float32\"), wv: R.Tensor((16, 16), dtype=\"float32\"), "
        "bq: R.Tensor((16,), dtype=\"float32\"), bk: R.Tensor((16,), dtype=\"float32\"), bv: R.Tensor((16,), dtype=\"float32\")):\n"
        "        with R.dataflow():\n"
        "            q = R.matmul(x, wq)  # span: \"q\"\n"
        "            q1 = R.add(q, bq)  # span: \"q\"!\n"
        "            k = R.matmul(x, wk)  # span: \"k\"\n"
        "            k1 = R.add(k, bk)  # span: \"k\"!\n"
        "            v = R.matmul(x, wv)  # span: \"v\"\n"
        "            v1 = R.add(v, bv)  # span: \"v\"!\n"
        "            kt = R.permute_dims(k1, axes=[0, 2, 1])\n"
        "            s = R.matmul(q1, kt)\n"
        "            gv = R.matmul(s, v1)\n"
        "            R.output(gv)\n"
        "        return gv\n";
    free(check(text, 0));
    with_matmuls = true;
    char *out = check(text, 1);
    with_matmuls = false;
    cr_assert(strstr(out, "R.Tensor((2, 5, 48)"), "%s", out);
    cr_assert(strstr(out, "axis=2"), "%s", out);
    free(out);
}

/* Two siblings that differ in one respect (a stride, groups, dilation, a 3x3 kernel): no merge.
 * And a third that agrees with the first: those two merge. */
static void differ(const char *attrs2, const char *w2type, const char *merged_type) {
    char text[2048];
    snprintf(text, sizeof text,
             HEAD "x: " T4(8, 6, 6) ", w1: " TW(8, 8, 1) ", w2: %s, w3: " TW(8, 8, 1) "):\n"
             "        with R.dataflow():\n"
             "            a = R.nn.conv2d(x, w1)  # span: \"a\"!\n"
             "            c = R.nn.conv2d(x, w2%s)  # span: \"c\"!\n"
             "            e = R.nn.conv2d(x, w3)  # span: \"e\"!\n"
             "            R.output(a, c, e)\n"
             "        return (a, c, e)\n",
             w2type, attrs2);
    char *out = check(text, 1);
    cr_assert(strstr(out, merged_type), "expected %s:\n%s", merged_type, out);
    free(out);
}

Test(pass_merge_siblings, differing_siblings_stay_apart) {
    differ("", TW(4, 8, 1), T4(20, 6, 6)); /* control: all three agree */
    differ(", strides=[2, 2]", TW(4, 8, 1), T4(16, 6, 6));
    differ(", groups=2", TW(4, 4, 1), T4(16, 6, 6));
    differ(", dilation=[2, 2]", TW(4, 8, 1), T4(16, 6, 6));
    differ(", padding=[1, 1, 1, 1]", TW(4, 8, 3), T4(16, 6, 6));
}

/* Widths off the 8-channel blocks: one a group, as its last slice; two such siblings stay apart. */
Test(pass_merge_siblings, one_odd_width_a_group) {
    const char *text = HEAD "x: " T4(8, 4, 4) ", w1: " TW(5, 8, 1) ", w2: " TW(6, 8, 1) ", w3: " TW(16, 8, 1) "):\n"
        "        with R.dataflow():\n"
        "            a = R.nn.conv2d(x, w1)  # span: \"a\"!\n"
        "            c = R.nn.conv2d(x, w2)  # span: \"c\"!\n"
        "            e = R.nn.conv2d(x, w3)  # span: \"e\"!\n"
        "            R.output(a, c, e)\n"
        "        return (a, c, e)\n";
    char *out = check(text, 1);
    /* e first (16), then a (5); c alone */
    cr_assert(strstr(out, "R.Tensor((1, 21, 4, 4)") && strstr(out, "indices_or_sections=[16]"), "%s", out);
    free(out);
}

/* Non-constant weights, groups > 1 and an op of different dtype never merge. */
Test(pass_merge_siblings, what_never_merges) {
    /* w is an input (x2): not a constant */
    free(check(HEAD "x: " T4(8, 6, 6) ", x2: " TW(4, 8, 1) ", w1: " TW(4, 8, 1) "):\n"
          "        with R.dataflow():\n"
          "            a = R.nn.conv2d(x, x2)  # span: \"a\"!\n"
          "            c = R.nn.conv2d(x, w1)  # span: \"c\"!\n"
          "            R.output(a, c)\n"
          "        return (a, c)\n", 0));
    /* both grouped */
    free(check(HEAD "x: " T4(8, 6, 6) ", w1: " TW(4, 4, 1) ", w2: " TW(6, 4, 1) "):\n"
          "        with R.dataflow():\n"
          "            a = R.nn.conv2d(x, w1, groups=2)  # span: \"a\"!\n"
          "            c = R.nn.conv2d(x, w2, groups=2)  # span: \"c\"!\n"
          "            R.output(a, c)\n"
          "        return (a, c)\n", 0));
    /* a product of another dtype (out_dtype) */
    ir_module *m = bound(HEAD "x: R.Tensor((3, 8), dtype=\"float32\"), w1: R.Tensor((8, 4), dtype=\"float32\"), "
                         "w2: R.Tensor((8, 4), dtype=\"float32\")):\n"
                         "        with R.dataflow():\n"
                         "            a = R.matmul(x, w1)\n"
                         "            c = R.matmul(x, w2, out_dtype=\"float64\")\n"
                         "            R.output(a, c)\n"
                         "        return (a, c)\n");
    with_matmuls = true;
    char *out = ir_print_module_str(merged(m), NULL);
    with_matmuls = false;
    cr_assert_eq(count(out, "R.split("), 0, "%s", out);
    free(out);
}

/* Epilogues: siblings whose chains differ (relu vs sigmoid, a bias vs none) merge only with
 * those of the same chain; a chain stops at a value read twice (the conv itself then merges
 * with plain siblings). */
Test(pass_merge_siblings, epilogues_group_siblings) {
    char *out = check(HEAD "x: " T4(8, 5, 5) ", w1: " TW(8, 8, 1) ", w2: " TW(5, 8, 1) ", w3: " TW(8, 8, 1) ", w4: " TW(8, 8, 1)
                      ", w5: " TW(2, 8, 1) ", b1: " TB(8) ", b3: " TB(8) "):\n"
                      "        with R.dataflow():\n"
                      "            a = R.nn.conv2d(x, w1)  # span: \"a\"\n"
                      "            a1 = R.add(a, b1)  # span: \"a\"\n"
                      "            a2 = R.nn.relu(a1)  # span: \"a\"!\n"
                      "            c = R.nn.conv2d(x, w2)  # span: \"c\"\n"
                      "            c1 = R.sigmoid(c)  # span: \"c\"!\n"
                      "            e = R.nn.conv2d(x, w3)  # span: \"e\"\n"
                      "            e1 = R.add(e, b3)  # span: \"e\"\n"
                      "            e2 = R.nn.relu(e1)  # span: \"e\"!\n"
                      "            f = R.nn.conv2d(x, w4)  # span: \"f\"!\n"
                      "            f1 = R.nn.relu(f)  # span: \"f1\"!\n"
                      "            f2 = R.add(f, f1)  # span: \"f2\"!\n"
                      "            h = R.nn.conv2d(x, w5)  # span: \"h\"!\n"
                      "            R.output(a2, c1, e2, f2, h)\n"
                      "        return (a2, c1, e2, f2, h)\n",
                      2);
    /* a with e (bias, relu: 16 channels), f with h (no epilogue: 10 channels); c alone */
    cr_assert(strstr(out, "R.Tensor((1, 16, 5, 5)") && strstr(out, "R.Tensor((1, 10, 5, 5)"), "%s", out);
    free(out);
}
