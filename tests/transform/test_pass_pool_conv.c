/* PoolBeforeConv1x1 on generated graphs: avg_pool2d(conv2d(x, W) [+ b]) with random channels,
 * groups, image sizes, pool windows, strides, dilations, paddings, ceil mode and
 * count_include_pad, run through the reference executor before and after the pass on the same
 * random inputs. Results must agree within 1e-5 (sums of at most 8 x 8 products of values in
 * [-1, 1] in float32); the rewrite must happen where it is exact and pays (no padding or no
 * bias; a pool that shrinks the image and a conv that does not narrow the channels), and must
 * not happen for a bias under a padded pool. */
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
TestSuite(pass_pool_conv, .init = setup, .fini = teardown);

static uint32_t rng = 7;
static int pick(int lo, int hi) {
    rng = rng * 1103515245u + 12345u;
    return lo + (int)((rng >> 8) % (uint32_t)(hi - lo + 1));
}
static double unit_value(void) { return pick(-1000, 1000) / 1000.0; }

typedef struct pc_case {
    int cin, cout, groups, h, w, kh, kw, sh, sw, dh, dw, pad[4], bias; /* bias: 0 none, 1 [1,C,1,1], 2 [C,1,1], 3 scalar */
    bool ceil, include_pad;
} pc_case;

static int pool_out(int in, int k, int s, int d, int p0, int p1, bool ceil_mode) {
    int span = in + p0 + p1 - d * (k - 1) - 1;
    if (span < 0) return 0;
    int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

static const char *bias_type(const pc_case *c, char *buf, size_t n) {
    if (c->bias == 1) snprintf(buf, n, "R.Tensor((1, %d, 1, 1), dtype=\"float32\")", c->cout);
    else if (c->bias == 2) snprintf(buf, n, "R.Tensor((%d, 1, 1), dtype=\"float32\")", c->cout);
    else snprintf(buf, n, "R.Tensor((), dtype=\"float32\")");
    return buf;
}

static char *module_text(const pc_case *c) {
    char *t = malloc(4096), bt[96];
    int n = snprintf(t, 4096,
                     "@I.ir_module\nclass Module:\n    @R.function\n"
                     "    def main(x: R.Tensor((1, %d, %d, %d), dtype=\"float32\"), "
                     "w: R.Tensor((%d, %d, 1, 1), dtype=\"float32\")%s%s):\n"
                     "        with R.dataflow():\n"
                     "            lv = R.nn.conv2d(x, w, groups=%d)  # span: \"conv\"!\n",
                     c->cin, c->h, c->w, c->cout, c->cin / c->groups, c->bias ? ", b: " : "",
                     c->bias ? bias_type(c, bt, sizeof bt) : "", c->groups);
    if (c->bias) n += snprintf(t + n, 4096 - (size_t)n, "            lv1 = R.add(lv, b)  # span: \"conv\"!\n");
    snprintf(t + n, 4096 - (size_t)n,
             "            gv = R.nn.avg_pool2d(%s, pool_size=[%d, %d], strides=[%d, %d], dilation=[%d, %d], "
             "padding=[%d, %d, %d, %d], ceil_mode=%s, count_include_pad=%s)  # span: \"pool\"!\n"
             "            R.output(gv)\n        return gv\n",
             c->bias ? "lv1" : "lv", c->kh, c->kw, c->sh, c->sw, c->dh, c->dw, c->pad[0], c->pad[1], c->pad[2],
             c->pad[3], c->ceil ? "True" : "False", c->include_pad ? "True" : "False");
    return t;
}


static pc_case draw(void) {
    pc_case c = {0};
    c.groups = pick(1, 2);
    c.cin = c.groups * pick(1, 4);
    c.cout = c.groups * pick(1, 4);
    c.kh = pick(1, 3);
    c.kw = pick(1, 3);
    c.sh = pick(1, 3);
    c.sw = pick(1, 3);
    c.dh = pick(1, 4) == 4 ? 2 : 1;
    c.dw = pick(1, 4) == 4 ? 2 : 1;
    bool padded = pick(0, 2) == 0;
    for (int i = 0; i < 4; i++) c.pad[i] = padded ? pick(0, (i % 2 ? c.kw : c.kh) / 2) : 0;
    c.ceil = pick(0, 1);
    c.include_pad = pick(0, 1);
    c.bias = pick(0, 3);
    do {
        c.h = pick(1, 9);
        c.w = pick(1, 9);
    } while (pool_out(c.h, c.kh, c.sh, c.dh, c.pad[0], c.pad[2], c.ceil) <= 0 ||
             pool_out(c.w, c.kw, c.sw, c.dw, c.pad[1], c.pad[3], c.ceil) <= 0);
    return c;
}

Test(pass_pool_conv, generated_graphs_keep_their_values) {
    const ir_pass *p = ir_pass_find("PoolBeforeConv1x1");
    cr_assert_not_null(p);
    int rewritten = 0, must = 0;
    for (int i = 0; i < 300; i++) {
        pc_case c = draw();
        char *text = module_text(&c);
        ir_module *before = NULL, *after = NULL;
        cr_assert_eq(ir_parse_module(ctx, "gen", text, strlen(text), &before, &diag), GR_OK, "%s\n%s", diag.msg, text);
        ir_pass_ctx_t *pc = ir_pass_ctx_new();
        ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
        cr_assert_eq(ir_pass_run(p, pc, before, &after, &diag), GR_OK, "%s\n%s", diag.msg, text);
        ir_pass_ctx_free(pc);
        char *out = ir_print_module_str(after, NULL);
        bool swapped = strstr(out, "avg_pool2d(x,") != NULL;
        bool padded = c.pad[0] || c.pad[1] || c.pad[2] || c.pad[3];
        int oh = pool_out(c.h, c.kh, c.sh, c.dh, c.pad[0], c.pad[2], c.ceil);
        int ow = pool_out(c.w, c.kw, c.sw, c.dw, c.pad[1], c.pad[3], c.ceil);
        bool shrinks = oh * ow < c.h * c.w;
        if (c.bias && padded) cr_assert(!swapped, "a bias under a padded pool moved:\n%s", text);
        if ((!c.bias || !padded) && shrinks && c.cin <= c.cout) {
            cr_assert(swapped, "no rewrite of:\n%s", text);
            must++;
        }
        double d = ed_max_diff(before, after, unit_value, &diag);
        cr_assert(d <= 1e-5, "case %d: results differ by %g\n%s\n%s", i, d, text, out);
        rewritten += swapped;
        free(out);
        free(text);
    }
    /* the draw covers both sides of the conditions */
    cr_assert(must >= 30 && rewritten < 300, "%d rewritten, %d required", rewritten, must);
}
