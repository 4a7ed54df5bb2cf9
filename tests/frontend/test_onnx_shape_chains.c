/* Shape computations feeding each consumer: Shape -> Gather -> arithmetic (Mod, Sub, Div, Mul,
 * Cast, Unsqueeze) -> Concat (and torch's reversed-pads reshape / slice / transpose) into Pad,
 * Reshape, Slice, Expand, Range, Tile, ConstantOfShape and Resize sizes; and Swin's roll and
 * patch merging (slices of a symbolic axis, concatenated).
 * - static (--input-shape): the chain folds at import: main holds only the consumer's own ops,
 *   with static dims;
 * - symbolic (H, W left free): the import keeps the dims as expressions, and the one module runs
 *   at two sizes with the output shape the formula gives and the values of the static import
 *   at that size (bit for bit: the same host kernels on the same data). */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/exec/executor.h"
#include "tests/frontend/onnx_test_util.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

static void i64_init(tm *t, const char *name, int ndim, int64_t n, const int64_t *v) {
    tm_init(t, tm_tensor(t, name, I64, ndim, &n, (size_t)n, v));
}

static void f32_init(tm *t, const char *name, int ndim, const int64_t *dims, size_t n, const float *v) {
    tm_init(t, tm_tensor(t, name, F32, ndim, dims, n, v));
}

static void attr_str(tm *t, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = tm_attr(t, n, name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.data = (uint8_t *)tm_str(t, v);
    a->s.len = strlen(v);
}

/* x: [1, 3, H, W]; H and W: its dims 2 and 3 (0-D int64). */
static tm *chain_start(void) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"1", "3", "H", "W"};
    tm_input(t, "x", F32, 4, xd);
    int64_t two = 2, three = 3, zero = 0;
    i64_init(t, "i2", 0, 1, &two);
    i64_init(t, "i3", 0, 1, &three);
    i64_init(t, "ax0", 1, 1, &zero);
    tm_node(t, "Shape", "shape", "x", "s");
    tm_attr_int(t, tm_node(t, "Gather", "gather_h", "s,i2", "H"), "axis", 0);
    tm_attr_int(t, tm_node(t, "Gather", "gather_w", "s,i3", "W"), "axis", 0);
    return t;
}

/* Swin's window pad: (7 - d % 7) % 7 after H and W, written as torch writes pads (reversed
 * through a [-1, 2] reshape, a negative-step slice and a transpose). */
static tm *m_pad(void) {
    tm *t = chain_start();
    int64_t seven = 7, z1 = 0, m12[2] = {-1, 2}, st = -1, en = -INT64_MAX, m1 = -1, z = 0;
    i64_init(t, "seven", 0, 1, &seven);
    i64_init(t, "z1", 1, 1, &z1);
    i64_init(t, "m12", 1, 2, m12);
    i64_init(t, "st", 1, 1, &st);
    i64_init(t, "en", 1, 1, &en);
    i64_init(t, "sax", 1, 1, &z);
    i64_init(t, "m1", 1, 1, &m1);
    tm_node(t, "Mod", "mod_h", "H,seven", "hm");
    tm_node(t, "Sub", "sub_h", "seven,hm", "hs");
    tm_node(t, "Mod", "mod_hb", "hs,seven", "pb");
    tm_node(t, "Mod", "mod_w", "W,seven", "wm");
    tm_node(t, "Sub", "sub_w", "seven,wm", "ws");
    tm_node(t, "Mod", "mod_wr", "ws,seven", "pr");
    tm_node(t, "Unsqueeze", "unsq_b", "pb,ax0", "pb1");
    tm_node(t, "Unsqueeze", "unsq_r", "pr,ax0", "pr1");
    tm_attr_int(t, tm_node(t, "Concat", "cat", "z1,pr1,z1,pb1,z1,z1,z1,z1", "p8"), "axis", 0);
    tm_node(t, "Reshape", "rs1", "p8,m12", "p42");
    tm_node(t, "Slice", "rev", "p42,st,en,sax,st", "p42r");
    int64_t perm[2] = {1, 0};
    tm_attr_ints(t, tm_node(t, "Transpose", "tr", "p42r", "p24"), "perm", 2, perm);
    tm_node(t, "Reshape", "rs2", "p24,m1", "p8b");
    tm_attr_int(t, tm_node(t, "Cast", "cast", "p8b", "pads"), "to", I64);
    tm_node(t, "Pad", "pad", "x,pads", "y");
    tm_output(t, "y");
    return t;
}

static tm *m_reshape(void) {
    tm *t = chain_start();
    int64_t n13[2] = {1, 3};
    i64_init(t, "n13", 1, 2, n13);
    tm_node(t, "Mul", "mul", "H,W", "hw");
    tm_node(t, "Unsqueeze", "unsq", "hw,ax0", "hw1");
    tm_attr_int(t, tm_node(t, "Concat", "cat", "n13,hw1", "shp"), "axis", 0);
    tm_node(t, "Reshape", "reshape", "x,shp", "y");
    tm_output(t, "y");
    return t;
}

/* x[:, :, (H - 1) // 2 : H] */
static tm *m_slice(void) {
    tm *t = chain_start();
    int64_t one = 1, two = 2;
    i64_init(t, "one", 0, 1, &one);
    i64_init(t, "two", 0, 1, &two);
    i64_init(t, "axes", 1, 1, &two);
    tm_node(t, "Sub", "sub", "H,one", "h1");
    tm_node(t, "Div", "div", "h1,two", "hh");
    tm_node(t, "Unsqueeze", "unsq_s", "hh,ax0", "st");
    tm_node(t, "Unsqueeze", "unsq_e", "H,ax0", "en");
    tm_node(t, "Slice", "slice", "x,st,en,axes", "y");
    tm_output(t, "y");
    return t;
}

static const float bias3[3] = {0.5f, -1.f, 2.f};
static const int64_t bias_dims[4] = {1, 3, 1, 1};

/* a [1, 3, 1, 1] constant expanded to x's shape, added */
static tm *m_expand(void) {
    tm *t = chain_start();
    f32_init(t, "b", 4, bias_dims, 3, bias3);
    tm_node(t, "Expand", "expand", "b,s", "e");
    tm_node(t, "Add", "add", "x,e", "y");
    tm_output(t, "y");
    return t;
}

/* x + arange(0, float(W)) */
static tm *m_range(void) {
    tm *t = chain_start();
    float f0 = 0, f1 = 1;
    f32_init(t, "f0", 0, NULL, 1, &f0);
    f32_init(t, "f1", 0, NULL, 1, &f1);
    tm_attr_int(t, tm_node(t, "Cast", "cast", "W", "wf"), "to", F32);
    tm_node(t, "Range", "range", "f0,wf,f1", "r");
    tm_node(t, "Add", "add", "x,r", "y");
    tm_output(t, "y");
    return t;
}

/* x * tile(b, (1, 1, H, W)) */
static tm *m_tile(void) {
    tm *t = chain_start();
    int64_t n11[2] = {1, 1};
    i64_init(t, "n11", 1, 2, n11);
    f32_init(t, "b", 4, bias_dims, 3, bias3);
    tm_node(t, "Unsqueeze", "unsq_h", "H,ax0", "H1");
    tm_node(t, "Unsqueeze", "unsq_w", "W,ax0", "W1");
    tm_attr_int(t, tm_node(t, "Concat", "cat", "n11,H1,W1", "rep"), "axis", 0);
    tm_node(t, "Tile", "tile", "b,rep", "tb");
    tm_node(t, "Mul", "mul", "x,tb", "y");
    tm_output(t, "y");
    return t;
}

/* x[:, :, :H // 2] + ConstantOfShape((1, 3, H // 2, W), 1.5) */
static tm *m_cos(void) {
    tm *t = chain_start();
    int64_t two = 2, zero = 0, n13[2] = {1, 3};
    i64_init(t, "two", 0, 1, &two);
    i64_init(t, "axes", 1, 1, &two);
    i64_init(t, "zs", 1, 1, &zero);
    i64_init(t, "n13", 1, 2, n13);
    tm_node(t, "Div", "div", "H,two", "hh");
    tm_node(t, "Unsqueeze", "unsq_h", "hh,ax0", "hh1");
    tm_node(t, "Unsqueeze", "unsq_w", "W,ax0", "W1");
    tm_attr_int(t, tm_node(t, "Concat", "cat", "n13,hh1,W1", "shp"), "axis", 0);
    Onnx__NodeProto *c = tm_node(t, "ConstantOfShape", "cos", "shp", "z");
    Onnx__AttributeProto *a = tm_attr(t, c, "value");
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    float v = 1.5f;
    int64_t one = 1;
    a->t = tm_tensor(t, "value", F32, 1, &one, 1, &v);
    tm_node(t, "Slice", "slice", "x,zs,hh1,axes", "top");
    tm_node(t, "Add", "add", "top,z", "y");
    tm_output(t, "y");
    return t;
}

/* nearest resize to sizes (1, 3, 2H, 2W) */
static tm *m_resize(void) {
    tm *t = chain_start();
    int64_t two = 2, n13[2] = {1, 3}, none = 0;
    i64_init(t, "two", 0, 1, &two);
    i64_init(t, "n13", 1, 2, n13);
    f32_init(t, "roi", 1, &none, 0, NULL);
    f32_init(t, "sc", 1, &none, 0, NULL);
    tm_node(t, "Mul", "mul_h", "H,two", "h2");
    tm_node(t, "Mul", "mul_w", "W,two", "w2");
    tm_node(t, "Unsqueeze", "unsq_h", "h2,ax0", "h21");
    tm_node(t, "Unsqueeze", "unsq_w", "w2,ax0", "w21");
    tm_attr_int(t, tm_node(t, "Concat", "cat", "n13,h21,w21", "sz"), "axis", 0);
    Onnx__NodeProto *r = tm_node(t, "Resize", "resize", "x,roi,sc,sz", "y");
    attr_str(t, r, "mode", "nearest");
    tm_output(t, "y");
    return t;
}

/* Swin's roll along H: concat(x[:, :, 3:], x[:, :, :3]), constant bounds on a symbolic axis */
static tm *m_roll(void) {
    tm *t = chain_start();
    int64_t three = 3, zero = 0, big = INT64_MAX, two = 2;
    i64_init(t, "s3", 1, 1, &three);
    i64_init(t, "s0", 1, 1, &zero);
    i64_init(t, "end", 1, 1, &big);
    i64_init(t, "axes", 1, 1, &two);
    tm_node(t, "Slice", "tail", "x,s3,end,axes", "a");
    tm_node(t, "Slice", "head", "x,s0,s3,axes", "b");
    tm_attr_int(t, tm_node(t, "Concat", "roll", "a,b", "y"), "axis", 2);
    tm_output(t, "y");
    return t;
}

/* Swin's patch merging along H: even and odd rows side by side (x[:, :, 0::2], x[:, :, 1::2]
 * on the channel axis), whose row counts inference cannot prove equal for a symbolic H */
static tm *m_merge(void) {
    tm *t = chain_start();
    int64_t zero = 0, one = 1, two = 2, big = INT64_MAX;
    i64_init(t, "s0", 1, 1, &zero);
    i64_init(t, "s1", 1, 1, &one);
    i64_init(t, "end", 1, 1, &big);
    i64_init(t, "axes", 1, 1, &two);
    i64_init(t, "step", 1, 1, &two);
    tm_node(t, "Slice", "even", "x,s0,end,axes,step", "a");
    tm_node(t, "Slice", "odd", "x,s1,end,axes,step", "b");
    tm_attr_int(t, tm_node(t, "Concat", "merge", "a,b", "y"), "axis", 1);
    tm_output(t, "y");
    return t;
}

typedef struct chain {
    const char *name;
    tm *(*make)(void);
    const char *ops[3];  /* what the static import may hold: the consumer's own ops */
    void (*shape)(int64_t h, int64_t w, int32_t *nd, int64_t *out);
} chain;

static int64_t up7(int64_t d) { return d + (7 - d % 7) % 7; }
static void sh_pad(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 3, o[2] = up7(h), o[3] = up7(w); }
static void sh_reshape(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 3, o[0] = 1, o[1] = 3, o[2] = h * w; }
static void sh_slice(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 3, o[2] = h - (h - 1) / 2, o[3] = w; }
static void sh_same(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 3, o[2] = h, o[3] = w; }
static void sh_half(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 3, o[2] = h / 2, o[3] = w; }
static void sh_double(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 3, o[2] = 2 * h, o[3] = 2 * w; }

static void sh_merge(int64_t h, int64_t w, int32_t *nd, int64_t *o) { *nd = 4, o[0] = 1, o[1] = 6, o[2] = h / 2, o[3] = w; }

static const chain CHAINS[] = {
    {"pad", m_pad, {"relax.nn.pad"}, sh_pad},
    {"reshape", m_reshape, {"relax.reshape"}, sh_reshape},
    {"slice", m_slice, {"relax.strided_slice"}, sh_slice},
    {"expand", m_expand, {"relax.broadcast_to", "relax.add"}, sh_same},
    {"range", m_range, {"relax.add"}, sh_same},
    {"tile", m_tile, {"relax.tile", "relax.multiply"}, sh_same},
    {"cos", m_cos, {"relax.strided_slice", "relax.add"}, sh_half},
    {"resize", m_resize, {"image.resize2d", "relax.image.resize2d"}, sh_double},
    {"roll", m_roll, {"relax.strided_slice", "relax.concat"}, sh_same},
    {"merge", m_merge, {"relax.strided_slice", "relax.concat"}, sh_merge},
};

static ir_module *import(const chain *c, ir_ctx_t *ctx, int64_t h, int64_t w) {
    tm *t = c->make();
    onnx_input_shape sh = {"x", 4, {1, 3, h, w}};
    onnx_import_opts o = {&sh, h > 0 ? 1 : 0, NULL, 0, false};
    ir_module *m = NULL;
    gr_diag d;
    gr_status st = tm_import(t, ctx, &o, &m, &d);
    tm_free(t);
    cr_assert_eq(st, GR_OK, "%s: %s", c->name, d.msg);
    return m;
}

static rt_tensor *run(const chain *c, ir_module *m, const rt_tensor *x) {
    rt_exec_t *ex = NULL;
    gr_diag d = {0};
    cr_assert_eq(rt_exec_new(m, "main", &ex, &d), GR_OK, "%s: %s", c->name, d.msg);
    rt_value in = rt_value_tensor(rt_tensor_retain((rt_tensor *)x)), res = {0};
    cr_assert_eq(rt_exec_run(ex, &in, 1, &res, &d), GR_OK, "%s: %s", c->name, d.msg);
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    rt_tensor *y = rt_tensor_retain(res.u.t);
    rt_value_clear(&res);
    rt_value_clear(&in);
    rt_exec_free(ex);
    return y;
}

static void check_static(const chain *c) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = import(c, ctx, 10, 12);
    const ir_binding *bs[16];
    uint32_t n = t_bindings(m, bs, 16);
    for (uint32_t i = 0; i < n; i++) {
        const char *op = t_op_name(bs[i]->value);
        if (!*op) continue;  /* the output alias */
        bool ok = false;
        for (int k = 0; k < 3 && c->ops[k]; k++) ok |= !strcmp(op, c->ops[k]);
        cr_expect(ok, "%s: %s left after a static import (the shape chain should fold)", c->name, op);
    }
    const ir_sinfo *r = t_ret(m);
    int32_t nd;
    int64_t want[4];
    c->shape(10, 12, &nd, want);
    cr_assert(r->kind == IR_SINFO_TENSOR && r->ndim == nd && r->dims, "%s: output of unknown shape", c->name);
    for (int32_t d = 0; d < nd; d++) {
        int64_t v = -1;
        cr_expect(ir_prim_is_int(r->dims[d], &v) && v == want[d], "%s: dim %d is not %lld", c->name, d,
                  (long long)want[d]);
    }
    ir_ctx_free(ctx);
}

static void check_symbolic(const chain *c) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = import(c, ctx, -1, -1);
    const ir_sinfo *r = t_ret(m);
    int32_t nd;
    int64_t want[4];
    c->shape(10, 12, &nd, want);
    cr_assert(r->kind == IR_SINFO_TENSOR && r->ndim == nd && r->dims, "%s: symbolic output of unknown dims", c->name);
    bool sym = false;
    for (int32_t d = 0; d < nd; d++) sym |= !ir_prim_is_int(r->dims[d], NULL);
    cr_expect(sym, "%s: the output dims lost H and W", c->name);
    static const int64_t sizes[2][2] = {{10, 12}, {14, 9}};
    for (int s = 0; s < 2; s++) {
        int64_t h = sizes[s][0], w = sizes[s][1], xs[4] = {1, 3, h, w};
        rt_tensor *x = rt_tensor_new(IR_DTYPE_F32, 4, xs);
        for (int64_t i = 0; i < rt_tensor_numel(x); i++) ((float *)x->dl.data)[i] = (float)((i * 37) % 101) / 10.f - 5.f;
        rt_tensor *y = run(c, m, x);
        ir_ctx_t *sctx = ir_ctx_new();
        rt_tensor *ref = run(c, import(c, sctx, h, w), x);
        c->shape(h, w, &nd, want);
        cr_assert_eq(y->dl.ndim, nd, "%s at %lldx%lld: rank", c->name, (long long)h, (long long)w);
        for (int32_t d = 0; d < nd; d++)
            cr_expect_eq(y->shape[d], want[d], "%s at %lldx%lld: dim %d is %lld, expected %lld", c->name, (long long)h,
                         (long long)w, d, (long long)y->shape[d], (long long)want[d]);
        cr_assert_eq(rt_tensor_numel(y), rt_tensor_numel(ref));
        cr_expect(!memcmp(y->dl.data, ref->dl.data, rt_tensor_nbytes(ref)),
                  "%s at %lldx%lld: the symbolic build differs from the static one", c->name, (long long)h, (long long)w);
        rt_tensor_release(y);
        rt_tensor_release(ref);
        rt_tensor_release(x);
        ir_ctx_free(sctx);
    }
    ir_ctx_free(ctx);
}

#define CHAIN_TESTS(i, n)                                                  \
    Test(onnx_shape_chains, n##_static) { check_static(&CHAINS[i]); }     \
    Test(onnx_shape_chains, n##_symbolic) { check_symbolic(&CHAINS[i]); }
CHAIN_TESTS(0, pad)
CHAIN_TESTS(1, reshape)
CHAIN_TESTS(2, slice)
CHAIN_TESTS(3, expand)
CHAIN_TESTS(4, range)
CHAIN_TESTS(5, tile)
CHAIN_TESTS(6, cos)
CHAIN_TESTS(7, resize)
CHAIN_TESTS(8, roll)
CHAIN_TESTS(9, merge)

/* A symbolic Pad in a mode whose widths relax cannot take as expressions: the error names the
 * layer and the op. */
Test(onnx_shape_chains, symbolic_reflect_pad_names_the_layer) {
    tm *t = m_pad();
    Onnx__NodeProto *p = t->g->node[t->g->n_node - 1];
    attr_str(t, p, "mode", "reflect");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_neq(tm_import(t, ctx, NULL, &m, &d), GR_OK);
    cr_expect_str_eq(d.layer, "pad");
    cr_expect_str_eq(d.op, "Pad");
    cr_expect(strstr(d.msg, "symbolic pads"), "%s", d.msg);
    ir_ctx_free(ctx);
    tm_free(t);
}
