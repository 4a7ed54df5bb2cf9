/* Expression matching: every pattern kind, memo, commutativity, optional, names, checks. */
#include "pat_test_util.h"

static const char *k_mod = MOD_HEAD
"    def main(x: R.Tensor((2, 3), dtype=\"float32\"), y: R.Tensor((2, 3), dtype=\"float32\"), w: R.Tensor((4, 3, 3, 3), dtype=\"float32\"), d: R.Tensor((1, 3, 8, 8), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
"        with R.dataflow():\n"
"            a = R.add(x, y)\n"
"            b = R.add(x, x)\n"
"            c = R.add(x, R.const(1.5, \"float32\"))\n"
"            t = (a, b)\n"
"            t1 = t[1]\n"
"            cv = R.nn.conv2d(d, w, strides=[2, 2])\n"
"            cb = R.add(cv, R.const(0.5, \"float32\"))\n"
"            r1 = R.nn.relu(cb)\n"
"            r2 = R.nn.relu(cv)\n"
"            m = R.multiply(c, t1)\n"
"            gv = R.nn.relu(m)\n"
"            R.output(gv)\n"
"        return gv\n";

typedef struct fx {
    ir_ctx_t *ctx;
    ir_func *f;
    pat_block_info *info;
    pat_match_result m;
} fx;

static void fx_init(fx *s) {
    s->ctx = ir_ctx_new();
    s->f = pt_main(pt_parse(s->ctx, k_mod));
    s->info = pat_block_info_build(s->ctx, pt_block(s->f, 0));
    pat_match_result_init(&s->m);
}

static void fx_free(fx *s) {
    pat_match_result_free(&s->m);
    pat_block_info_free(s->info);
    ir_ctx_free(s->ctx);
}

static bool fx_match(fx *s, const pat_t *p, const char *var) {
    return pat_match(p, pt_var(s->f, var), s->info, &s->m);
}

Test(patterns_match, leaves) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    cr_assert(fx_match(&s, pat_wildcard(ctx), "x"));
    cr_assert(fx_match(&s, pat_var(ctx, NULL), "x"));
    cr_assert(fx_match(&s, pat_var(ctx, "x"), "x"));
    cr_assert_not(fx_match(&s, pat_var(ctx, "y"), "x"));
    cr_assert_not(fx_match(&s, pat_dfvar(ctx, NULL), "x"));   /* a param is a plain Var */
    cr_assert(fx_match(&s, pat_dfvar(ctx, NULL), "a"));       /* a is a DataflowVar */
    cr_assert_not(fx_match(&s, pat_dfvar(ctx, NULL), "gv"));
    cr_assert_not(fx_match(&s, pat_const(ctx), "x"));
    /* const through the call's argument */
    pat_t *c = pat_const(ctx);
    cr_assert(fx_match(&s, pat_call2(ctx, "relax.add", pat_wildcard(ctx), c), "c"));
    cr_assert_eq(pat_match_get(&s.m, c)->kind, IR_CONST);
    /* gvar substring, extern symbol, expr */
    ir_gvar *g = ir_gvar_new(ctx, "fused_conv2d_relu");
    cr_assert(pat_match(pat_gvar(ctx, "conv2d"), &g->base, NULL, &s.m));
    cr_assert_not(pat_match(pat_gvar(ctx, "matmul"), &g->base, NULL, &s.m));
    ir_extern *ex = ir_extern_new(ctx, "dnnl_conv", NULL);
    cr_assert(pat_match(pat_extern(ctx, "dnnl_conv"), &ex->base, NULL, &s.m));
    cr_assert(pat_match(pat_extern(ctx, NULL), &ex->base, NULL, &s.m));
    cr_assert_not(pat_match(pat_extern(ctx, "other"), &ex->base, NULL, &s.m));
    cr_assert(fx_match(&s, pat_expr(ctx, pt_var(s.f, "x")), "x"));
    cr_assert_null(pat_op(ctx, "relax.no_such_op"));
    fx_free(&s);
}

Test(patterns_match, call_memo_and_bindings) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    pat_t *w = pat_wildcard(ctx);
    pat_t *same = pat_call2(ctx, "relax.add", w, w);
    cr_assert(fx_match(&s, same, "b"));
    cr_assert_eq(pat_match_get(&s.m, w), pt_var(s.f, "x"));
    cr_assert_not(fx_match(&s, same, "a"));         /* add(x, y): the two args differ */
    /* The matched root is the unwrapped call, the root var and binding are recorded. */
    cr_assert(fx_match(&s, same, "b"));
    cr_assert_eq(s.m.root, pt_binding(s.f, "b")->value);
    cr_assert_eq(s.m.root_var, (ir_var *)pt_var(s.f, "b"));
    cr_assert_eq(s.m.bindings.len, 1);
    /* Following bindings: relu(add(conv2d(*, *), const)) over three bindings in order. */
    pat_t *conv = pat_call2(ctx, "relax.nn.conv2d", pat_wildcard(ctx), pat_wildcard(ctx));
    pat_t *p = pat_call1(ctx, "relax.nn.relu", pat_call2(ctx, "relax.add", conv, pat_const(ctx)));
    cr_assert(fx_match(&s, p, "r1"));
    cr_assert_eq(s.m.bindings.len, 3);
    cr_assert_str_eq(s.m.bindings.data[0]->var->name, "cv");
    cr_assert_str_eq(s.m.bindings.data[1]->var->name, "cb");
    cr_assert_str_eq(s.m.bindings.data[2]->var->name, "r1");
    cr_assert_eq(pat_match_get_reached(&s.m, conv), pt_var(s.f, "cv"));
    cr_assert_eq(pat_match_get(&s.m, conv), pt_binding(s.f, "cv")->value);
    cr_assert_not(fx_match(&s, p, "r2"));
    /* arity: no varargs means exact count; varargs allows more */
    const pat_t *one[1] = {pat_wildcard(ctx)};
    cr_assert_not(fx_match(&s, pat_call(ctx, pat_op(ctx, "relax.add"), 1, one), "a"));
    cr_assert(fx_match(&s, pat_call_varargs(ctx, pat_op(ctx, "relax.add"), 1, one), "a"));
    /* several op names */
    const char *ops[2] = {"relax.nn.relu", "relax.nn.gelu"};
    cr_assert(fx_match(&s, pat_call(ctx, pat_op_any(ctx, 2, ops), 1, one), "r2"));
    fx_free(&s);
}

Test(patterns_match, commutative) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    /* add(const, *) matches add(x, const) with the args swapped */
    pat_t *c = pat_const(ctx), *w = pat_wildcard(ctx);
    cr_assert(fx_match(&s, pat_call2(ctx, "relax.add", c, w), "c"));
    cr_assert_eq(pat_match_get(&s.m, w), pt_var(s.f, "x"));
    /* multiply(t1-ish add(x, x), add(x, const)) in the other order */
    pat_t *p = pat_call2(ctx, "relax.multiply", pat_call2(ctx, "relax.add", pat_wildcard(ctx), pat_const(ctx)),
                         pat_wildcard(ctx));
    cr_assert(fx_match(&s, p, "m"));
    pat_t *q = pat_call2(ctx, "relax.multiply", pat_tgi(ctx, pat_wildcard(ctx), 1),
                         pat_call2(ctx, "relax.add", pat_wildcard(ctx), pat_const(ctx)));
    cr_assert(fx_match(&s, q, "m"));
    /* not commutative: conv2d(w, d) does not match conv2d(d, w) */
    pat_t *dw = pat_call2(ctx, "relax.nn.conv2d", pat_has_shape(ctx, pat_wildcard(ctx), 4, NULL),
                          pat_has_dtype(ctx, pat_var(ctx, "d"), IR_DTYPE_F32));
    cr_assert_not(fx_match(&s, dw, "cv"));
    fx_free(&s);
}

Test(patterns_match, tuples) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    pat_t *pa = pat_call2(ctx, "relax.add", pat_wildcard(ctx), pat_var(ctx, "y"));
    pat_t *w = pat_wildcard(ctx);
    pat_t *pb = pat_call2(ctx, "relax.add", w, w);
    const pat_t *ab[2] = {pa, pb}, *ba[2] = {pb, pa};
    cr_assert(fx_match(&s, pat_tuple(ctx, 2, ab), "t"));
    cr_assert_not(fx_match(&s, pat_tuple(ctx, 2, ba), "t"));
    cr_assert(fx_match(&s, pat_tuple_unordered(ctx, 2, ba), "t"));
    const pat_t *three[3] = {pa, pb, pa};
    cr_assert_not(fx_match(&s, pat_tuple(ctx, 3, three), "t"));
    cr_assert(fx_match(&s, pat_tgi(ctx, pat_tuple(ctx, 2, ab), 1), "t1"));
    cr_assert(fx_match(&s, pat_tgi(ctx, pat_wildcard(ctx), -1), "t1"));
    cr_assert_not(fx_match(&s, pat_tgi(ctx, pat_wildcard(ctx), 0), "t1"));
    fx_free(&s);
}

Test(patterns_match, constraints) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    cr_assert(fx_match(&s, pat_has_dtype(ctx, pat_wildcard(ctx), IR_DTYPE_F32), "x"));
    cr_assert_not(fx_match(&s, pat_has_dtype(ctx, pat_wildcard(ctx), IR_DTYPE_F16), "x"));
    const ir_prim *d23[2] = {ir_prim_int(ctx, 2), ir_prim_int(ctx, 3)};
    const ir_prim *dany[2] = {NULL, ir_prim_int(ctx, 3)};
    const ir_prim *d33[2] = {ir_prim_int(ctx, 3), ir_prim_int(ctx, 3)};
    cr_assert(fx_match(&s, pat_has_shape(ctx, pat_wildcard(ctx), 2, d23), "x"));
    cr_assert(fx_match(&s, pat_has_shape(ctx, pat_wildcard(ctx), 2, dany), "x"));
    cr_assert_not(fx_match(&s, pat_has_shape(ctx, pat_wildcard(ctx), 2, d33), "x"));
    cr_assert_not(fx_match(&s, pat_has_shape(ctx, pat_wildcard(ctx), 3, NULL), "x"));
    cr_assert(fx_match(&s, pat_has_sinfo(ctx, pat_wildcard(ctx), ir_sinfo_tensor(ctx, IR_DTYPE_F32, 2, NULL)), "x"));
    cr_assert_not(fx_match(&s, pat_has_sinfo(ctx, pat_wildcard(ctx), ir_sinfo_tensor(ctx, IR_DTYPE_F32, 4, NULL)), "x"));
    /* op attrs: only the keys given */
    ir_attr st22 = ir_attr_ints(ctx, 2, (int64_t[]){2, 2});
    ir_attr st11 = ir_attr_ints(ctx, 2, (int64_t[]){1, 1});
    const char *k[1] = {"strides"};
    pat_t *conv = pat_call2(ctx, "relax.nn.conv2d", pat_wildcard(ctx), pat_wildcard(ctx));
    cr_assert(fx_match(&s, pat_has_attr(ctx, conv, ir_attrs_new(ctx, 1, k, &st22)), "cv"));
    cr_assert_not(fx_match(&s, pat_has_attr(ctx, conv, ir_attrs_new(ctx, 1, k, &st11)), "cv"));
    /* function attrs */
    ir_attr comp = ir_attr_str(ctx, "dnnl.conv2d");
    const char *ck[1] = {"Composite"};
    ir_func *fa = ir_func_with_attrs(ctx, s.f, ir_attrs_new(ctx, 1, ck, &comp));
    cr_assert(pat_match(pat_has_attr(ctx, pat_wildcard(ctx), ir_attrs_new(ctx, 1, ck, &comp)), &fa->base, NULL, &s.m));
    ir_attr other = ir_attr_str(ctx, "x.y");
    cr_assert_not(pat_match(pat_has_attr(ctx, pat_wildcard(ctx), ir_attrs_new(ctx, 1, ck, &other)), &fa->base, NULL, &s.m));
    /* is_shape */
    const ir_prim *sd[2] = {ir_prim_int(ctx, 16), NULL};
    ir_shape_expr *se = ir_shape_expr_new(ctx, 2, (const ir_prim *[]){ir_prim_int(ctx, 16), ir_prim_int(ctx, 5)}, NULL);
    cr_assert(pat_match(pat_shape(ctx, 2, sd), &se->base, NULL, &s.m));
    cr_assert_not(pat_match(pat_shape(ctx, 1, sd), &se->base, NULL, &s.m));
    fx_free(&s);
}

Test(patterns_match, symbolic_shape) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((\"n\", \"m\"), dtype=\"float32\"), y: R.Tensor((\"m\", \"n\"), dtype=\"float32\")) -> R.Tensor(dtype=\"float32\"):\n"
        "        n = T.int64()\n        m = T.int64()\n"
        "        with R.dataflow():\n"
        "            a = R.reshape(x, R.shape([n + m]))\n"
        "            b = R.reshape(y, R.shape([m + n]))\n"
        "            R.output(a, b)\n"
        "        return a\n"));
    const ir_sinfo *sa = pt_var(f, "a")->sinfo;
    cr_assert_eq(sa->ndim, 1);
    pat_t *p = pat_has_shape(ctx, pat_wildcard(ctx), 1, sa->dims);   /* n + m */
    pat_match_result m;
    pat_match_result_init(&m);
    cr_assert(pat_match(p, pt_var(f, "b"), NULL, &m));                 /* m + n */
    const ir_prim *other[1] = {ir_prim_add(ctx, sa->dims[0], ir_prim_int(ctx, 1))};
    cr_assert_not(pat_match(pat_has_shape(ctx, pat_wildcard(ctx), 1, other), pt_var(f, "b"), NULL, &m));
    pat_match_result_free(&m);
    ir_ctx_free(ctx);
}

Test(patterns_match, logic_and_optional) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    pat_t *relu = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pat_t *conv = pat_call2(ctx, "relax.nn.conv2d", pat_wildcard(ctx), pat_wildcard(ctx));
    cr_assert(fx_match(&s, pat_or(ctx, conv, relu), "r2"));
    cr_assert(fx_match(&s, pat_or(ctx, conv, relu), "cv"));
    cr_assert_not(fx_match(&s, pat_or(ctx, conv, relu), "a"));
    cr_assert(fx_match(&s, pat_and(ctx, relu, pat_has_dtype(ctx, pat_wildcard(ctx), IR_DTYPE_F32)), "r2"));
    cr_assert_not(fx_match(&s, pat_and(ctx, relu, conv), "r2"));
    cr_assert(fx_match(&s, pat_not(ctx, relu), "cv"));
    cr_assert_not(fx_match(&s, pat_not(ctx, relu), "r2"));
    /* conv2d [+ const] -> relu: both forms, the bias form taking the add binding */
    pat_t *cv = pat_name(ctx, conv, "root");
    pat_t *bias = pat_name(ctx, pat_const(ctx), "bias");
    pat_t *opt = pat_optional(ctx, cv, pat_call2(ctx, "relax.add", cv, bias));
    pat_t *p = pat_call1(ctx, "relax.nn.relu", opt);
    cr_assert(fx_match(&s, p, "r1"));
    cr_assert_eq(s.m.bindings.len, 3);
    cr_assert_not_null(pat_match_named(&s.m, "bias"));
    cr_assert_eq(pat_match_named(&s.m, "root"), pt_binding(s.f, "cv")->value);
    cr_assert(fx_match(&s, p, "r2"));
    cr_assert_eq(s.m.bindings.len, 2);
    cr_assert_null(pat_match_named(&s.m, "bias"));     /* the other side took no part */
    /* Backtracking across siblings: add(or(v, var "y"), v) with v one node. On add(x, y) the
     * first order fails (v = x, then y), the swapped order needs the or's second branch to be
     * retried after its first branch succeeded locally: y by the right branch, then v = x. */
    pat_t *v = pat_var(ctx, NULL), *vy = pat_var(ctx, "y");
    const pat_t *args[2] = {pat_or(ctx, v, vy), v};
    pat_t *bt = pat_call(ctx, pat_op(ctx, "relax.add"), 2, args);
    cr_assert(fx_match(&s, bt, "a"));
    cr_assert_eq(pat_match_get(&s.m, v), pt_var(s.f, "x"));
    cr_assert_eq(pat_match_get(&s.m, vy), pt_var(s.f, "y"));
    cr_assert(fx_match(&s, bt, "b"));
    cr_assert_null(pat_match_get(&s.m, vy));
    /* root ops index */
    const char *roots[4];
    cr_assert_eq(pat_root_ops(p, roots, 4), 1);
    cr_assert_str_eq(roots[0], "relax.nn.relu");
    cr_assert_eq(pat_root_ops(pat_or(ctx, conv, relu), roots, 4), 2);
    cr_assert_eq(pat_root_ops(pat_wildcard(ctx), roots, 4), -1);
    fx_free(&s);
}

Test(patterns_match, no_block_crossing_and_match_cast) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor(dtype=\"float32\")) -> R.Tensor(dtype=\"float32\"):\n"
        "        n = T.int64()\n"
        "        with R.dataflow():\n"
        "            lv = R.match_cast(x, R.Tensor((n,), dtype=\"float32\"))\n"
        "            lv1 = R.nn.relu(lv)\n"
        "            gv = R.nn.relu(lv1)\n"
        "            R.output(gv)\n"
        "        with R.dataflow():\n"
        "            gv2 = R.nn.relu(gv)\n"
        "            R.output(gv2)\n"
        "        return gv2\n"));
    pat_match_result m;
    pat_match_result_init(&m);
    pat_t *rr = pat_call1(ctx, "relax.nn.relu", pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx)));
    pat_block_info *b0 = pat_block_info_build(ctx, pt_block(f, 0));
    pat_block_info *b1 = pat_block_info_build(ctx, pt_block(f, 1));
    cr_assert(pat_match(rr, pt_var(f, "gv"), b0, &m));
    cr_assert_not(pat_match(rr, pt_var(f, "gv2"), b1, &m));  /* gv is bound in the other block */
    /* match_cast bindings are opaque: relu(match_cast) is not seen through */
    cr_assert_not(pat_match(pat_call1(ctx, "relax.nn.relu", pat_call1(ctx, "relax.nn.relu", pat_var(ctx, "x"))),
                            pt_var(f, "gv"), b0, &m));
    cr_assert(pat_match(pat_call1(ctx, "relax.nn.relu", pat_var(ctx, "lv")), pt_var(f, "lv1"), b0, &m));
    /* use counts: gv is a plain Var escaping the block */
    cr_assert_eq(pat_block_use_count(b0, pt_var(f, "lv1")), 1);
    cr_assert_eq(pat_block_use_count(b0, pt_var(f, "gv")), 1);
    pat_block_info_free(b0);
    pat_block_info_free(b1);
    pat_match_result_free(&m);
    ir_ctx_free(ctx);
}

static bool check_strides(const pat_check_ctx *c, const char **reason, void *user) {
    (void)user;
    ir_expr *root = pat_match_named(c->match, "root");
    if (!root || root->kind != IR_CALL) { *reason = "no root"; return false; }
    int64_t st[2];
    if (ir_attrs_get_ints(((ir_call *)root)->attrs, "strides", st, 2) == 2 && st[0] != 1) {
        *reason = ir_internf(c->ctx, "strides %lld not supported", (long long)st[0]);
        return false;
    }
    return true;
}

Test(patterns_match, check_functions) {
    fx s;
    fx_init(&s);
    ir_ctx_t *ctx = s.ctx;
    pat_t *conv = pat_name(ctx, pat_call2(ctx, "relax.nn.conv2d", pat_wildcard(ctx), pat_wildcard(ctx)), "root");
    pat_t *p = pat_call1(ctx, "relax.nn.relu", conv);
    cr_assert(fx_match(&s, p, "r2"));
    pat_check_ctx cc = {ctx, p, s.m.root, s.m.root_var, &s.m, s.info};
    const char *reason = NULL;
    cr_assert_not(check_strides(&cc, &reason, NULL));
    cr_assert_str_eq(reason, "strides 2 not supported");
    /* leaking intermediates: cv is used by cb too */
    reason = NULL;
    cr_assert_not(pat_check_no_leaking_intermediates(&cc, &reason, NULL));
    cr_assert_str_eq(reason, "intermediate has a user outside the match");
    /* add(x,x) -> multiply: t1 = t[1] from tuple t: bindings b, t, t1; b is used by t only */
    pat_t *w = pat_wildcard(ctx);
    const pat_t *fl[2] = {pat_wildcard(ctx), pat_call2(ctx, "relax.add", w, w)};
    pat_t *q = pat_tgi(ctx, pat_tuple(ctx, 2, fl), 1);
    cr_assert(fx_match(&s, q, "t1"));
    pat_check_ctx c2 = {ctx, q, s.m.root, s.m.root_var, &s.m, s.info};
    reason = NULL;
    cr_assert(pat_check_no_leaking_intermediates(&c2, &reason, NULL));
    fx_free(&s);
}

static ir_module *parse_file(ir_ctx_t *ctx, const char *path) {
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_file(ctx, path, &m, &d), GR_OK, "%s", d.msg);
    return m;
}

Test(patterns_match, call_tir_and_dps_packed) {
    ir_ctx_t *ctx = ir_ctx_new();
    pat_match_result m;
    pat_match_result_init(&m);
    ir_func *f = pt_main(parse_file(ctx, "tests/golden/call_tir.relax"));
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    pat_t *x = pat_wildcard(ctx);
    cr_assert(pat_match(pat_call_tir(ctx, "add_one", 1, (const pat_t *[]){x}), pt_var(f, "gv"), info, &m));
    cr_assert_eq(pat_match_get(&m, x), pt_var(f, "x"));
    cr_assert_not(pat_match(pat_call_tir(ctx, "mul", 1, (const pat_t *[]){x}), pt_var(f, "gv"), info, &m));
    cr_assert_not(pat_match(pat_call_dps_packed(ctx, NULL, 1, (const pat_t *[]){x}), pt_var(f, "gv"), info, &m));
    pat_block_info_free(info);
    f = pt_main(parse_file(ctx, "tests/golden/call_dps_packed.relax"));
    info = pat_block_info_build(ctx, pt_block(f, 0));
    pat_t *inner = pat_call_dps_packed(ctx, "my_ext", 1, (const pat_t *[]){pat_wildcard(ctx)});
    cr_assert(pat_match(pat_call_dps_packed(ctx, "two_out", 2, (const pat_t *[]){inner, pat_var(ctx, "x")}),
                        pt_var(f, "gv"), info, &m));
    cr_assert_eq(m.bindings.len, 2);
    cr_assert_not(pat_match(pat_call_dps_packed(ctx, "my_ext", 2, (const pat_t *[]){inner, pat_var(ctx, "x")}),
                            pt_var(f, "gv"), info, &m));
    pat_block_info_free(info);
    pat_match_result_free(&m);
    ir_ctx_free(ctx);
}

/* pat_dump prints a shared sub-pattern once (#k=...) and refers to it after, so a composite
 * whose alternatives share their prefix stays linear in size. */
Test(pat_dump, shared_subpatterns_print_once) {
    ir_ctx_t *ctx = ir_ctx_new();
    const pat_t *x = pat_wildcard(ctx);
    const pat_t *conv = pat_call(ctx, pat_op(ctx, "relax.nn.conv2d"), 2, (const pat_t *[]){x, x});
    const pat_t *bias = pat_call(ctx, pat_op(ctx, "relax.add"), 2, (const pat_t *[]){conv, pat_const(ctx)});
    const pat_t *either = pat_or(ctx, bias, conv);
    const pat_t *root = pat_call(ctx, pat_op(ctx, "relax.multiply"), 2, (const pat_t *[]){either, either});
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pat_dump(root, f);
    fclose(f);
    cr_expect_str_eq(buf, "multiply(#1=or(add(#2=nn.conv2d(*, *), const), #2), #1)");
    free(buf);
    const pat_t *none = pat_call_varargs(ctx, pat_op(ctx, "relax.nn.relu"), 0, NULL);
    f = open_memstream(&buf, &len);
    pat_dump(none, f);
    fclose(f);
    cr_expect_str_eq(buf, "nn.relu(...)");
    free(buf);
    ir_ctx_free(ctx);
}
