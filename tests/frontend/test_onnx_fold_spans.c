/* The importer's span filler for folded values (seed 001): a constant or shape subgraph that
 * becomes an attribute, a prim value or an R.shape of a consumer stays named in the consumer's
 * span (consumer first, then its folded producers depth-first; only the consumer marked as the
 * layer output). Also the report of graph inputs the importer needed as values (opts.wanted). */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/frontend/onnx_test_util.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

/* x: [N, 3, 4] -> Shape -> Gather(0) -> Unsqueeze -> Concat([-1]) -> Reshape. */
static tm *shape_chain_model(void) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"N", "3", "4"};
    tm_input(t, "x", F32, 3, xd);
    int64_t zero = 0, minus1 = -1, one = 1;
    tm_init(t, tm_tensor(t, "i0", I64, 0, NULL, 1, &zero));
    tm_init(t, tm_tensor(t, "m1", I64, 1, &one, 1, &minus1));
    tm_init(t, tm_tensor(t, "ax0", I64, 1, &one, 1, &zero));
    tm_node(t, "Shape", "shape", "x", "s");
    Onnx__NodeProto *g = tm_node(t, "Gather", "gather", "s,i0", "n");
    tm_attr_int(t, g, "axis", 0);
    tm_node(t, "Unsqueeze", "unsq", "n,ax0", "n1");
    Onnx__NodeProto *c = tm_node(t, "Concat", "cat", "n1,m1", "shp");
    tm_attr_int(t, c, "axis", 0);
    tm_node(t, "Reshape", "flat", "x,shp", "y");
    tm_output(t, "y");
    return t;
}

Test(onnx_fold_spans, folded_shape_chain_lives_in_the_consumer_span) {
    tm *t = shape_chain_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[8];
    uint32_t n = t_bindings(m, bs, 8);
    cr_assert_geq(n, 1);
    cr_assert_str_eq(t_op_name(bs[0]->value), "relax.reshape");
    const ir_span *s = bs[0]->value->span;
    static const char *const want[] = {"flat", "cat", "unsq", "gather", "shape"};
    cr_assert_not_null(s);
    cr_assert_eq(s->n, 5, "span of %u locs", s->n);
    for (uint32_t i = 0; i < 5; i++) {
        cr_expect_str_eq(s->locs[i].source, want[i], "loc %u", i);
        cr_expect_eq(s->locs[i].is_output, i == 0, "only the reshape marks its output (loc %u)", i);
    }
    /* Initializers are no nodes: not added. */
    cr_expect(!ir_span_has_source(s, "m1"));
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_fold_spans, constant_nodes_that_become_clip_bounds_stay_named) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"2", "3"};
    tm_input(t, "x", F32, 2, xd);
    float lo = 0, hi = 6;
    Onnx__NodeProto *k0 = tm_node(t, "Constant", "", NULL, "lo");
    tm_attr(t, k0, "value")->t = tm_tensor(t, "", F32, 0, NULL, 1, &lo);
    Onnx__NodeProto *k1 = tm_node(t, "Constant", "", NULL, "hi");
    tm_attr(t, k1, "value")->t = tm_tensor(t, "", F32, 0, NULL, 1, &hi);
    tm_node(t, "Clip", "clip", "x,lo,hi", "y");
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[8];
    t_bindings(m, bs, 8);
    cr_assert_str_eq(t_op_name(bs[0]->value), "relax.clip");
    const ir_span *s = bs[0]->value->span;
    cr_expect(ir_span_is_output_of(s, "clip"));
    cr_expect(ir_span_has_source(s, "Constant_lo"));
    cr_expect(ir_span_has_source(s, "Constant_hi"));
    cr_expect(!ir_span_is_output_of(s, "Constant_lo"));
    /* The prim-value bounds carry the same span. */
    const ir_call *c = (const ir_call *)bs[0]->value;
    cr_expect(ir_span_has_source(c->args[1]->span, "Constant_lo"));
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_fold_spans, an_alias_node_is_named_by_its_consumer) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"2", "3"};
    tm_input(t, "x", F32, 2, xd);
    tm_node(t, "Identity", "id", "x", "a");
    tm_node(t, "Relu", "r", "a", "y");
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect(t_layer_seen(m, "id", false));
    cr_expect(t_layer_seen(m, "r", true));
    cr_expect(!t_layer_seen(m, "id", true));
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_fold_spans, no_spans_still_off) {
    tm *t = shape_chain_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    onnx_import_opts o = {.no_spans = true};
    cr_assert_eq(tm_import(t, ctx, &o, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[8];
    t_bindings(m, bs, 8);
    cr_expect_null(bs[0]->value->span);
    ir_ctx_free(ctx);
    tm_free(t);
}

/* Reshape(x, shape) and Add(x, b) with shape, b graph inputs. */
static tm *shape_input_model(void) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"2", "3"}, *const sd[] = {"2"};
    tm_input(t, "x", F32, 2, xd);
    tm_input(t, "b", F32, 2, xd);
    tm_input(t, "shape", I64, 1, sd);
    tm_node(t, "Add", "add", "x,b", "s");
    tm_node(t, "Reshape", "rs", "s,shape", "y");
    tm_output(t, "y");
    return t;
}

Test(onnx_fold_spans, wanted_names_only_the_inputs_needed_as_values) {
    tm *t = shape_input_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    onnx_wanted_inputs w = {.n = 7};
    onnx_import_opts o = {.wanted = &w};
    cr_expect_neq(tm_import(t, ctx, &o, &m, &d), GR_OK);
    cr_assert_eq(w.n, 1, "%u wanted", w.n);
    cr_expect_str_eq(w.names[0], "shape");
    /* Bound, it imports and nothing more is wanted; x and b stay params. */
    int64_t sh[1] = {2}, vals[2] = {3, 2};
    rt_tensor *v = rt_tensor_new((DLDataType){kDLInt, 64, 1}, 1, sh);
    cr_assert_not_null(v);
    memcpy(v->dl.data, vals, sizeof(vals));
    onnx_input_value iv = {"shape", v};
    onnx_import_opts o2 = {.values = &iv, .nvalues = 1, .wanted = &w};
    cr_expect_eq(tm_import(t, ctx, &o2, &m, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(w.n, 0);
    cr_expect_eq(t_main(m)->nparams, 2);
    rt_tensor_release(v);
    ir_ctx_free(ctx);
    tm_free(t);
}
