/* Rewriting: rewrite_call to a fixed point with backtracking, rewrite_bindings with graph
 * constraints; spans of every rewrite (SequentialSpan of the replaced layers, output mark kept)
 * and well-formedness after each. Graph matching tests are here too. */
#include "pat_test_util.h"

#include "base/tensor.h"
#include "ir/ops/op_impl.h"

static ir_expr *mk_call(ir_ctx_t *ctx, const char *op, uint32_t nargs, ir_expr *const *args,
                        uint32_t nattrs, const char *const *keys, const ir_attr *vals) {
    const ir_op_def *def = ir_op_def_find(op);
    cr_assert_not_null(def);
    const ir_attrs *attrs = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_op_attrs_normalize(ctx, def, nattrs ? ir_attrs_new(ctx, nattrs, keys, vals) : NULL,
                                       &attrs, &d), GR_OK, "%s", d.msg);
    return &ir_call_new(ctx, &ir_op_get_def(ctx, def)->base, nargs, args, attrs, 0, NULL, NULL)->base;
}

static ir_expr *scalar_f32(ir_ctx_t *ctx, float v) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    *(float *)rt_tensor_data(t) = v;
    ir_expr *c = &ir_const_new(ctx, t, NULL)->base;
    rt_tensor_release(t);
    return c;
}

static const ir_span *value_span(const ir_func *f, const char *var) {
    const ir_binding *b = pt_binding(f, var);
    cr_assert_not_null(b, "no binding %s", var);
    return b->value->span;
}

/* ---- x + x -> x * 2 ---- */

typedef struct dbl { const pat_t *w; int calls; } dbl;

static ir_expr *rw_double(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                          gr_diag *diag) {
    (void)matched; (void)diag;
    dbl *d = user;
    d->calls++;
    ir_expr *args[2] = {pat_match_get_reached(m, d->w), scalar_f32(ctx, 2.0f)};
    return mk_call(ctx, "relax.multiply", 2, args, 0, NULL, NULL);
}

Test(patterns_rewrite, double_nested_fixed_point) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv = R.add(x, x)  # span: \"add1\"\n"
        "            lv1 = R.add(lv, lv)  # span: \"add2\"!\n"
        "            lv2 = R.add(lv1, lv1)  # span: \"add3\"\n"
        "            gv = R.nn.relu(lv2)  # span: \"relu\"!\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_t *w = pat_wildcard(ctx);
    dbl d = {w, 0};
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, pat_call2(ctx, "relax.add", w, w), rw_double, &d, f, &out, &diag), GR_OK,
                 "%s", diag.msg);
    cr_assert_neq(out, f);
    pt_wellformed(ctx, out);
    cr_assert_eq(pt_count_op(out, "relax.add"), 0);
    cr_assert_eq(pt_count_op(out, "relax.multiply"), 3);
    cr_assert_eq(d.calls, 3);
    /* each multiply carries its add's span, output marks kept on the values they produced */
    cr_assert(ir_span_has_source(value_span(out, "lv"), "add1"));
    cr_assert(ir_span_is_output_of(value_span(out, "lv1"), "add2"));
    cr_assert(ir_span_has_source(value_span(out, "lv2"), "add3"));
    cr_assert_not(ir_span_is_output_of(value_span(out, "lv2"), "add3"));
    cr_assert(ir_span_is_output_of(value_span(out, "gv"), "relu"));
    /* the rewritten function matches nothing: a second run changes nothing */
    ir_func *again = NULL;
    cr_assert_eq(pat_rewrite_call(ctx, pat_call2(ctx, "relax.add", w, w), rw_double, &d, out, &again, &diag), GR_OK);
    cr_assert_eq(again, out);
    ir_ctx_free(ctx);
}

/* ---- attention ---- */

static const char *k_attn = MOD_HEAD
"    def main(Q: R.Tensor((2, 16, 4, 8), dtype=\"float32\"), K: R.Tensor((2, 16, 4, 8), dtype=\"float32\"), V: R.Tensor((2, 16, 4, 8), dtype=\"float32\")) -> R.Tensor((2, 16, 4, 8), dtype=\"float32\"):\n"
"        with R.dataflow():\n"
"            q1 = R.permute_dims(Q, axes=[0, 2, 1, 3])  # span: \"q_t\"\n"
"            q2 = R.reshape(q1, R.shape([8, 16, 8]))  # span: \"q_r\"\n"
"            k1 = R.permute_dims(K, axes=[0, 2, 1, 3])  # span: \"k_t\"\n"
"            k2 = R.reshape(k1, R.shape([8, 16, 8]))  # span: \"k_r\"\n"
"            v1 = R.permute_dims(V, axes=[0, 2, 1, 3])  # span: \"v_t\"\n"
"            v2 = R.reshape(v1, R.shape([8, 16, 8]))  # span: \"v_r\"\n"
"            kt = R.permute_dims(k2, axes=[0, 2, 1])  # span: \"k_tt\"\n"
"            s = R.matmul(q2, kt)  # span: \"qk\"\n"
"            sc = R.multiply(s, R.const(0.35, \"float32\"))  # span: \"scale\"!\n"
"            p = R.nn.softmax(sc, axis=-1)  # span: \"softmax\"\n"
"            o = R.matmul(p, v2)  # span: \"pv\"\n"
"            o1 = R.reshape(o, R.shape([2, 4, 16, 8]))  # span: \"o_r\"\n"
"            gv = R.permute_dims(o1, axes=[0, 2, 1, 3])  # span: \"o_t\"!\n"
"            R.output(gv)\n"
"        return gv\n";

typedef struct attn { const pat_t *q, *k, *v; } attn;

static pat_t *bsnh_to_bsh(ir_ctx_t *ctx, const pat_t *x) {
    return pat_call2(ctx, "relax.reshape", pat_call1(ctx, "relax.permute_dims", x), pat_wildcard(ctx));
}

static ir_expr *rw_attention(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                             gr_diag *diag) {
    (void)diag;
    attn *a = user;
    ir_expr *qkv[3] = {pat_match_get_reached(m, a->q), pat_match_get_reached(m, a->k),
                       pat_match_get_reached(m, a->v)};
    ir_expr *args[2] = {&ir_extern_new(ctx, "attention", NULL)->base, &ir_tuple_new(ctx, 3, qkv, NULL)->base};
    const ir_sinfo *out = matched->sinfo;
    return &ir_call_new(ctx, &ir_op_get(ctx, "relax.call_dps_packed")->base, 2, args, NULL, 1, &out, NULL)->base;
}

Test(patterns_rewrite, attention) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, k_attn));
    attn a = {pat_wildcard(ctx), pat_wildcard(ctx), pat_wildcard(ctx)};
    pat_t *q = bsnh_to_bsh(ctx, a.q), *k = bsnh_to_bsh(ctx, a.k), *v = bsnh_to_bsh(ctx, a.v);
    pat_t *s = pat_call2(ctx, "relax.matmul", q, pat_call1(ctx, "relax.permute_dims", k));
    pat_t *sc = pat_call2(ctx, "relax.multiply", s, pat_const(ctx));
    pat_t *o = pat_call2(ctx, "relax.matmul", pat_call1(ctx, "relax.nn.softmax", sc), v);
    pat_t *root = pat_call1(ctx, "relax.permute_dims",
                            pat_call2(ctx, "relax.reshape", o, pat_wildcard(ctx)));
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, root, rw_attention, &a, f, &out, &diag), GR_OK, "%s", diag.msg);
    pt_wellformed(ctx, out);
    cr_assert_eq(pt_nbindings(out), 1);
    const ir_binding *gv = pt_binding(out, "gv");
    cr_assert(ir_is_op_call(gv->value, "relax.call_dps_packed"));
    /* one SequentialSpan of the 13 layers in block order; only the root's output mark stays */
    const ir_span *sp = gv->value->span;
    cr_assert_not_null(sp);
    cr_assert_eq(sp->n, 13);
    cr_assert_str_eq(sp->locs[0].source, "q_t");
    cr_assert_str_eq(sp->locs[12].source, "o_t");
    cr_assert(ir_span_is_output_of(sp, "o_t"));
    cr_assert(ir_span_has_source(sp, "scale"));
    cr_assert_not(ir_span_is_output_of(sp, "scale"));
    /* the same model with relu instead of softmax is left alone */
    char *alt = gr_xstrdup(k_attn);
    char *at = strstr(alt, "R.nn.softmax(sc, axis=-1)");
    memcpy(at, "R.nn.relu(sc)            ", strlen("R.nn.softmax(sc, axis=-1)"));
    ir_func *g = pt_main(pt_parse(ctx, alt));
    free(alt);
    cr_assert_eq(pat_rewrite_call(ctx, root, rw_attention, &a, g, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out, g);
    ir_ctx_free(ctx);
}

/* ---- backtracking when the rewriter declines ---- */

typedef struct bt { const pat_t *relu_side; int declined; } bt;

static ir_expr *rw_decline_left(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                                gr_diag *diag) {
    (void)diag;
    bt *b = user;
    /* the matched expression is the bound value, never the var (TVM #16732 / #16828) */
    if (matched->kind != IR_CALL || matched != m->root) return NULL;
    if (pat_match_get(m, b->relu_side)) { b->declined++; return matched; }  /* no-op: backtrack */
    ir_expr *arg = ((ir_call *)matched)->args[0];
    return mk_call(ctx, "relax.nn.gelu", 1, &arg, 0, NULL, NULL);
}

Test(patterns_rewrite, backtrack_on_noop) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv = R.nn.relu(x)  # span: \"r0\"\n"
        "            gv = R.nn.relu(lv)  # span: \"r1\"!\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    /* relu(relu(*)) | relu(*): the rewriter refuses the left form, so the right one is used */
    pat_t *left = pat_call1(ctx, "relax.nn.relu", pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx)));
    pat_t *right = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    bt b = {left, 0};
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, pat_or(ctx, left, right), rw_decline_left, &b, f, &out, &diag), GR_OK,
                 "%s", diag.msg);
    pt_wellformed(ctx, out);
    cr_assert(b.declined >= 1);
    cr_assert_eq(pt_count_op(out, "relax.nn.relu"), 0);
    cr_assert_eq(pt_count_op(out, "relax.nn.gelu"), 2);
    cr_assert(ir_span_is_output_of(value_span(out, "gv"), "r1"));
    ir_ctx_free(ctx);
}

/* ---- graph constraints ---- */

static const char *k_diamond = MOD_HEAD
"    def main(x: R.Tensor((2, 3), dtype=\"float32\"), y: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
"        with R.dataflow():\n"
"            r = R.nn.relu(x)\n"
"            d = R.add(r, r)\n"
"            r1 = R.nn.relu(x)\n"
"            r2 = R.nn.relu(y)\n"
"            par = R.add(r1, r2)\n"
"            gv = R.add(d, par)\n"
"            R.output(gv)\n"
"        return gv\n";

Test(patterns_graph, diamond_vs_parallel) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, k_diamond));
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    /* diamond: one relu feeding both args of an add */
    pat_t *relu = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pat_t *add = pat_call2(ctx, "relax.add", pat_wildcard(ctx), pat_wildcard(ctx));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_used_by(pc, relu, add, 0);
    pat_ctx_used_by(pc, relu, add, 1);
    pat_graph_match gm;
    cr_assert(pat_ctx_match_block(pc, info, NULL, &gm));
    cr_assert_str_eq(pat_graph_match_get(&gm, relu)->name, "r");
    cr_assert_str_eq(pat_graph_match_get(&gm, add)->name, "d");
    pat_ctx_free(pc);
    /* parallel: two relus into the two args */
    pat_t *ra = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pat_t *rb = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_used_by(pc, ra, add, 0);
    pat_ctx_used_by(pc, rb, add, 1);
    cr_assert(pat_ctx_match_block(pc, info, NULL, &gm));
    cr_assert_str_eq(pat_graph_match_get(&gm, add)->name, "par");
    cr_assert_str_eq(pat_graph_match_get(&gm, ra)->name, "r1");
    cr_assert_str_eq(pat_graph_match_get(&gm, rb)->name, "r2");
    /* incremental child: adds "the add is used by another add at index 1" -> still par */
    pat_t *top = pat_call2(ctx, "relax.add", pat_wildcard(ctx), pat_wildcard(ctx));
    pat_ctx_t *child = pat_ctx_new(ctx, pc, true);
    pat_ctx_only_used_by(child, add, top, 1);
    cr_assert(pat_ctx_match_block(child, info, NULL, &gm));
    cr_assert_eq(pat_ctx_count(child), 4);
    cr_assert_str_eq(pat_graph_match_get(&gm, top)->name, "gv");
    pat_ctx_free(child);
    /* a non-incremental child knows nothing of the parent */
    child = pat_ctx_new(ctx, pc, false);
    cr_assert_eq(pat_ctx_count(child), 0);
    pat_ctx_free(child);
    /* index 0 on the add's first arg: par's first arg is r1, which is not used at index 1 */
    pat_ctx_free(pc);
    pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_used_by(pc, ra, add, 1);
    pat_ctx_used_by(pc, rb, add, 1);
    cr_assert_not(pat_ctx_match_block(pc, info, NULL, &gm));   /* distinct vars, one slot */
    pat_ctx_free(pc);
    pat_block_info_free(info);
    ir_ctx_free(ctx);
}

Test(patterns_graph, only_used_by) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            c = R.nn.relu(x)\n"
        "            a = R.sigmoid(c)\n"
        "            b = R.tanh(c)\n"
        "            c2 = R.nn.relu(b)\n"
        "            a2 = R.sigmoid(c2)\n"
        "            gv = R.add(a, a2)\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    pat_t *relu = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pat_t *sig = pat_call1(ctx, "relax.sigmoid", pat_wildcard(ctx));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_only_used_by(pc, relu, sig, 0);
    pat_graph_match gm;
    /* c has two users (a and b): only c2 -> a2 satisfies >> */
    cr_assert(pat_ctx_match_block(pc, info, NULL, &gm));
    cr_assert_str_eq(pat_graph_match_get(&gm, relu)->name, "c2");
    /* excluding c2 leaves nothing */
    gr_map ex;
    gr_map_init(&ex);
    gr_map_put(&ex, GR_MAP_PTR(pt_var(f, "c2")), 1);
    cr_assert_not(pat_ctx_match_block(pc, info, &ex, &gm));
    gr_map_free(&ex);
    pat_ctx_free(pc);
    /* used_by (^) accepts c */
    pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_used_by(pc, relu, sig, -1);
    cr_assert(pat_ctx_match_block(pc, info, NULL, &gm));
    cr_assert_str_eq(pat_graph_match_get(&gm, relu)->name, "c");
    pat_ctx_free(pc);
    pat_block_info_free(info);
    ir_ctx_free(ctx);
}

/* ---- three matmuls sharing an input -> one matmul + split ---- */

static const char *k_qkv = MOD_HEAD
"    def main(x: R.Tensor((4, 8), dtype=\"float32\"), w0: R.Tensor((8, 6), dtype=\"float32\"), w1: R.Tensor((8, 6), dtype=\"float32\"), w2: R.Tensor((8, 6), dtype=\"float32\")) -> R.Tensor((4, 6), dtype=\"float32\"):\n"
"        with R.dataflow():\n"
"            lv0 = R.matmul(x, w0)  # span: \"q\"!\n"
"            lv1 = R.matmul(x, w1)  # span: \"k\"!\n"
"            lv2 = R.matmul(x, w2)  # span: \"v\"!\n"
"            lv3 = R.add(lv0, lv1)  # span: \"sum1\"\n"
"            gv = R.add(lv3, lv2)  # span: \"sum2\"!\n"
"            R.output(gv)\n"
"        return gv\n";

typedef struct qkv { const pat_t *inp, *m[3]; } qkv;

static bool rw_qkv(ir_ctx_t *ctx, const pat_graph_match *gm, const pat_block_info *info, void *user,
                   pat_var_value_vec *out, gr_diag *diag) {
    (void)diag;
    qkv *q = user;
    ir_expr *ws[3];
    ir_var *mv[3];
    for (int i = 0; i < 3; i++) {
        mv[i] = pat_graph_match_get(gm, q->m[i]);
        ws[i] = ((ir_call *)info->block->bindings[pat_block_binding_of(info, &mv[i]->base)].value)->args[1];
    }
    ir_expr *tup = &ir_tuple_new(ctx, 3, ws, NULL)->base;
    const char *ck[1] = {"axis"};
    ir_attr one = ir_attr_int(1);
    ir_expr *cat = mk_call(ctx, "relax.concat", 1, &tup, 1, ck, &one);
    ir_expr *margs[2] = {&pat_graph_match_get(gm, q->inp)->base, cat};
    ir_expr *mm = mk_call(ctx, "relax.matmul", 2, margs, 0, NULL, NULL);
    const char *sk[2] = {"indices_or_sections", "axis"};
    ir_attr sv[2] = {ir_attr_ints(ctx, 2, (int64_t[]){6, 12}), ir_attr_int(1)};
    ir_expr *split = mk_call(ctx, "relax.split", 1, &mm, 2, sk, sv);
    for (int i = 0; i < 3; i++) {
        pat_var_value vv = {mv[i], &ir_tgi_new(ctx, split, i, NULL)->base};
        gr_vec_push(out, vv);
    }
    return true;
}

static void qkv_setup(ir_ctx_t *ctx, qkv *q, pat_ctx_t *pc) {
    q->inp = pat_wildcard(ctx);
    for (int i = 0; i < 3; i++) {
        q->m[i] = pat_call2(ctx, "relax.matmul", q->inp, pat_wildcard(ctx));
        pat_ctx_used_by(pc, q->inp, q->m[i], 0);
    }
}

Test(patterns_rewrite, qkv_bindings) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, k_qkv));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    qkv q;
    qkv_setup(ctx, &q, pc);
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_bindings(ctx, pc, rw_qkv, &q, f, &out, &diag), GR_OK, "%s", diag.msg);
    pt_wellformed(ctx, out);
    if (pt_count_op(out, "relax.matmul") != 1) ir_print_expr(&out->base, stderr, NULL);
    cr_assert_eq(pt_count_op(out, "relax.matmul"), 1);
    cr_assert_eq(pt_count_op(out, "relax.concat"), 1);   /* CSE merged the three copies */
    cr_assert_eq(pt_count_op(out, "relax.split"), 1);
    /* each projection keeps its own layer and output mark; the shared nodes carry all three */
    cr_assert(ir_span_is_output_of(value_span(out, "lv0"), "q"));
    cr_assert(ir_span_is_output_of(value_span(out, "lv2"), "v"));
    const ir_seq *s = (const ir_seq *)out->body;
    const ir_span *mm = NULL;
    for (uint32_t i = 0; i < s->blocks[0]->n; i++)
        if (ir_is_op_call(s->blocks[0]->bindings[i].value, "relax.matmul")) mm = s->blocks[0]->bindings[i].value->span;
    cr_assert_not_null(mm);
    cr_assert_eq(mm->n, 3);
    cr_assert_str_eq(mm->locs[0].source, "q");
    cr_assert_str_eq(mm->locs[2].source, "v");
    cr_assert_not(mm->locs[0].is_output);
    cr_assert(ir_span_is_output_of(value_span(out, "gv"), "sum2"));
    pat_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(patterns_rewrite, qkv_fake_inputs_differ) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((4, 8), dtype=\"float32\"), y: R.Tensor((4, 8), dtype=\"float32\"), w0: R.Tensor((8, 6), dtype=\"float32\"), w1: R.Tensor((8, 6), dtype=\"float32\"), w2: R.Tensor((8, 6), dtype=\"float32\")) -> R.Tensor((4, 6), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv0 = R.matmul(x, w0)\n"
        "            lv1 = R.matmul(y, w1)\n"
        "            lv2 = R.matmul(x, w2)\n"
        "            lv3 = R.add(lv0, lv1)\n"
        "            gv = R.add(lv3, lv2)\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    qkv q;
    qkv_setup(ctx, &q, pc);
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_bindings(ctx, pc, rw_qkv, &q, f, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(out, f);
    pat_ctx_free(pc);
    ir_ctx_free(ctx);
}

Test(patterns_rewrite, block_starting_with_match_cast) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x0: R.Tensor(dtype=\"float32\"), w0: R.Tensor((8, 6), dtype=\"float32\"), w1: R.Tensor((8, 6), dtype=\"float32\"), w2: R.Tensor((8, 6), dtype=\"float32\")) -> R.Tensor((4, 6), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            x = R.match_cast(x0, R.Tensor((4, 8), dtype=\"float32\"))\n"
        "            lv0 = R.matmul(x, w0)  # span: \"q\"\n"
        "            lv1 = R.matmul(x, w1)  # span: \"k\"\n"
        "            lv2 = R.matmul(x, w2)  # span: \"v\"\n"
        "            lv3 = R.add(lv0, lv1)\n"
        "            gv = R.add(lv3, lv2)\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    qkv q;
    qkv_setup(ctx, &q, pc);
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_bindings(ctx, pc, rw_qkv, &q, f, &out, &diag), GR_OK, "%s", diag.msg);
    pt_wellformed(ctx, out);
    cr_assert_eq(pt_count_op(out, "relax.matmul"), 1);
    cr_assert_not_null(pt_binding(out, "x"));
    cr_assert_not_null(pt_block(out, 0)->bindings[0].match_sinfo);   /* still first */
    /* rewrite_call over the same block */
    pat_t *w = pat_wildcard(ctx);
    dbl d = {w, 0};
    ir_func *out2 = NULL;
    cr_assert_eq(pat_rewrite_call(ctx, pat_call2(ctx, "relax.add", w, w), rw_double, &d, out, &out2, &diag), GR_OK);
    cr_assert_eq(out2, out);
    pat_ctx_free(pc);
    ir_ctx_free(ctx);
}

/* ---- errors and module-level rewriting ---- */

static ir_expr *rw_bad_shape(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                             gr_diag *diag) {
    (void)matched; (void)m; (void)diag;
    ir_expr *x = user;
    ir_expr *args[2] = {x, x};   /* matmul (2, 3) x (2, 3): struct info error */
    return mk_call(ctx, "relax.matmul", 2, args, 0, NULL, NULL);
}

static ir_expr *rw_fail(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                        gr_diag *diag) {
    (void)ctx; (void)matched; (void)m; (void)user;
    gr_diag_set(diag, GR_ERR_UNSUPPORTED, "rewriter refused layer");
    return NULL;
}

Test(patterns_rewrite, errors_and_module) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *mod = pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            lv = R.nn.relu(x)  # span: \"r0\"\n"
        "            gv = R.add(lv, lv)  # span: \"a0\"!\n"
        "            R.output(gv)\n"
        "        return gv\n");
    ir_func *f = pt_main(mod);
    pat_t *relu = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, relu, rw_bad_shape, pt_var(f, "x"), f, &out, &diag), GR_ERR_TYPE);
    cr_assert_not_null(strstr(diag.msg, "matmul"), "%s", diag.msg);
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, relu, rw_fail, NULL, f, &out, &diag), GR_ERR_UNSUPPORTED);
    cr_assert_str_eq(diag.msg, "rewriter refused layer");
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, NULL, rw_fail, NULL, f, &out, &diag), GR_ERR_INVALID);
    /* module level: x + x -> x * 2 in main */
    pat_t *w = pat_wildcard(ctx);
    dbl d = {w, 0};
    ir_module *m2 = NULL;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call_module(pat_call2(ctx, "relax.add", w, w), rw_double, &d, mod, &m2, &diag), GR_OK,
                 "%s", diag.msg);
    cr_assert_neq(m2, mod);
    cr_assert_eq(ir_wellformed_check(m2, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(pt_count_op(pt_main(m2), "relax.multiply"), 1);
    cr_assert(ir_span_is_output_of(value_span(pt_main(m2), "gv"), "a0"));
    cr_assert_eq(pt_count_op(pt_main(mod), "relax.add"), 1);   /* the input is untouched */
    ir_ctx_free(ctx);
}

Test(patterns_match, functions_and_value_var) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *mod = pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\"), y: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        R.func_attr({\"Codegen\": \"dnnl\"})\n"
        "        with R.dataflow():\n"
        "            gv = R.add(x, y)\n"
        "            R.output(gv)\n"
        "        return gv\n");
    ir_func *f = pt_main(mod);
    pat_match_result m;
    pat_match_result_init(&m);
    pat_t *a = pat_wildcard(ctx), *b = pat_wildcard(ctx);
    const pat_t *ps[2] = {a, b};
    pat_t *fp = pat_func(ctx, 2, ps, pat_call2(ctx, "relax.add", a, b));
    cr_assert(pat_match(fp, &f->base, NULL, &m));
    cr_assert_eq(pat_match_get(&m, a), &f->params[0]->base);
    pat_t *fm = pat_func(ctx, 2, ps, pat_call2(ctx, "relax.multiply", a, b));
    cr_assert_not(pat_match(fm, &f->base, NULL, &m));
    const pat_t *one[1] = {a};
    cr_assert_not(pat_match(pat_func(ctx, 1, one, a), &f->base, NULL, &m));
    ir_attr cg = ir_attr_str(ctx, "dnnl");
    const char *k[1] = {"Codegen"};
    cr_assert(pat_match(pat_has_attr(ctx, fp, ir_attrs_new(ctx, 1, k, &cg)), &f->base, NULL, &m));
    /* value -> bound var */
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    cr_assert_eq(pat_block_value_var(info, pt_binding(f, "gv")->value), (ir_var *)pt_var(f, "gv"));
    cr_assert_null(pat_block_value_var(info, pt_var(f, "x")));
    cr_assert_eq(pat_block_binding_of(info, pt_var(f, "x")), -1);
    uint32_t nu = 0;
    cr_assert_not_null(pat_block_users(info, pt_var(f, "x"), &nu));
    cr_assert_eq(nu, 1);
    pat_block_info_free(info);
    /* NULL inputs never crash */
    cr_assert_not(pat_match(NULL, pt_var(f, "x"), NULL, &m));
    cr_assert_null(pat_call2(ctx, "relax.add", NULL, a));
    cr_assert_null(pat_tuple(ctx, 2, (const pat_t *[]){a, NULL}));
    pat_match_result_free(&m);
    ir_ctx_free(ctx);
}

Test(patterns_graph, same_shape) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((4, 8), dtype=\"float32\"), w0: R.Tensor((8, 6), dtype=\"float32\"), w1: R.Tensor((8, 5), dtype=\"float32\"), w2: R.Tensor((8, 6), dtype=\"float32\")) -> R.Tensor((4, 6), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            a = R.matmul(x, w0)\n"
        "            b = R.matmul(x, w1)\n"
        "            c = R.matmul(x, w2)\n"
        "            R.output(a, b, c)\n"
        "        return a\n"));
    pat_block_info *info = pat_block_info_build(ctx, pt_block(f, 0));
    pat_t *inp = pat_wildcard(ctx);
    pat_t *m0 = pat_call2(ctx, "relax.matmul", inp, pat_wildcard(ctx));
    pat_t *m1 = pat_call2(ctx, "relax.matmul", inp, pat_wildcard(ctx));
    pat_ctx_t *pc = pat_ctx_new(ctx, NULL, false);
    pat_ctx_used_by(pc, inp, m0, 0);
    pat_ctx_used_by(pc, inp, m1, 0);
    pat_ctx_same_shape(pc, m0, m1);
    pat_graph_match gm;
    cr_assert(pat_ctx_match_block(pc, info, NULL, &gm));
    cr_assert_str_eq(pat_graph_match_get(&gm, m0)->name, "a");
    cr_assert_str_eq(pat_graph_match_get(&gm, m1)->name, "c");   /* b's (4, 5) differs */
    gr_map ex;
    gr_map_init(&ex);
    gr_map_put(&ex, GR_MAP_PTR(pt_var(f, "c")), 1);
    cr_assert_not(pat_ctx_match_block(pc, info, &ex, &gm));
    gr_map_free(&ex);
    pat_ctx_free(pc);
    pat_block_info_free(info);
    ir_ctx_free(ctx);
}

static ir_expr *rw_relu_relu(ir_ctx_t *ctx, ir_expr *matched, const pat_match_result *m, void *user,
                             gr_diag *diag) {
    (void)ctx; (void)diag;
    const pat_t *inner = user;
    (void)matched;
    return pat_match_get(m, inner);   /* relu(relu(x)) -> relu(x): the inner call itself */
}

Test(patterns_rewrite, relu_chain_fixed_point) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_func *f = pt_main(pt_parse(ctx, MOD_HEAD
        "    def main(x: R.Tensor((2, 3), dtype=\"float32\")) -> R.Tensor((2, 3), dtype=\"float32\"):\n"
        "        with R.dataflow():\n"
        "            r1 = R.nn.relu(x)  # span: \"r1\"\n"
        "            r2 = R.nn.relu(r1)  # span: \"r2\"\n"
        "            r3 = R.nn.relu(r2)  # span: \"r3\"\n"
        "            r4 = R.nn.relu(r3)  # span: \"r4\"\n"
        "            r5 = R.nn.relu(r4)  # span: \"r5\"\n"
        "            gv = R.add(r5, x)  # span: \"out\"!\n"
        "            R.output(gv)\n"
        "        return gv\n"));
    pat_t *inner = pat_call1(ctx, "relax.nn.relu", pat_wildcard(ctx));
    pat_t *p = pat_call1(ctx, "relax.nn.relu", inner);
    ir_func *out = NULL;
    gr_diag diag;
    gr_diag_clear(&diag);
    cr_assert_eq(pat_rewrite_call(ctx, p, rw_relu_relu, inner, f, &out, &diag), GR_OK, "%s", diag.msg);
    pt_wellformed(ctx, out);
    cr_assert_eq(pt_count_op(out, "relax.nn.relu"), 1);
    cr_assert_eq(pt_nbindings(out), 2);
    /* the one relu left names every layer it stands for */
    const ir_block *blk = pt_block(out, 0);
    const ir_span *sp = blk->bindings[0].value->span;
    cr_assert_not_null(sp);
    for (int i = 1; i <= 5; i++) {
        char n[16];
        snprintf(n, sizeof n, "r%d", i);
        cr_assert(ir_span_has_source(sp, n), "missing %s", n);
    }
    cr_assert(ir_span_is_output_of(value_span(out, "gv"), "out"));
    ir_ctx_free(ctx);
}
