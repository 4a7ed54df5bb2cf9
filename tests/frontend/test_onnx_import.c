/* The ONNX importer on small models built here: spans from node names, constants named after
 * initializers, symbolic dims and --input-shape, opset-dependent semantics, import-time folding,
 * and every error path (corrupt files, unsupported ops, bad shapes, external data). */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/frontend/onnx_test_util.h"
#include "tests/test_util.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

static const char *const D2x3[] = {"2", "3"};

/* conv1 (Conv with bias initializers w, b) -> relu1 -> gemm-like chain; named nodes. */
static tm *conv_relu_model(void) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"1", "2", "5", "5"};
    tm_input(t, "x", F32, 4, xd);
    float w[3 * 2 * 3 * 3], b[3] = {0.5f, -1.0f, 2.0f};
    for (int i = 0; i < 54; i++) w[i] = (float)i / 54.0f;
    int64_t wd[4] = {3, 2, 3, 3}, bd[1] = {3};
    tm_init(t, tm_tensor(t, "w", F32, 4, wd, 54, w));
    tm_init(t, tm_tensor(t, "b", F32, 1, bd, 3, b));
    Onnx__NodeProto *c = tm_node(t, "Conv", "conv1", "x,w,b", "c");
    int64_t pads[4] = {1, 1, 1, 1};
    tm_attr_ints(t, c, "pads", 4, pads);
    tm_node(t, "Relu", "relu1", "c", "y");
    tm_output(t, "y");
    return t;
}

Test(onnx_import, spans_name_layers_and_mark_outputs) {
    tm *t = conv_relu_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[16];
    uint32_t n = t_bindings(m, bs, 16);
    /* conv, add (bias), relu, output alias */
    cr_assert_eq(n, 4);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.nn.conv2d");
    cr_expect_str_eq(t_op_name(bs[1]->value), "relax.add");
    cr_expect_str_eq(t_op_name(bs[2]->value), "relax.nn.relu");
    /* One-to-many: conv and bias add both carry conv1; only the add produces its output. */
    cr_expect(ir_span_has_source(bs[0]->value->span, "conv1"));
    cr_expect(!ir_span_is_output_of(bs[0]->value->span, "conv1"));
    cr_expect(ir_span_is_output_of(bs[1]->value->span, "conv1"));
    cr_expect(ir_span_is_output_of(bs[2]->value->span, "relu1"));
    cr_expect(ir_span_has_source(bs[2]->var->base.span, "relu1"));
    /* Constants take the initializer names; the bias is folded to (1, 3, 1, 1). */
    const ir_call *conv = (const ir_call *)bs[0]->value;
    cr_assert_eq(conv->args[1]->kind, IR_CONST);
    cr_expect(ir_span_has_source(conv->args[1]->span, "w"));
    const ir_call *add = (const ir_call *)bs[1]->value;
    cr_assert_eq(add->args[1]->kind, IR_CONST);
    cr_expect(ir_span_has_source(add->args[1]->span, "b"));
    int64_t shape[4];
    cr_expect(ir_sinfo_static_shape(add->args[1]->sinfo, shape));
    cr_expect(shape[0] == 1 && shape[1] == 3 && shape[2] == 1 && shape[3] == 1);
    const ir_const *bc = (const ir_const *)add->args[1];
    cr_expect_float_eq(((float *)bc->data->dl.data)[1], -1.0f, 1e-6);
    /* conv2d attrs: padding from pads (top, left, bottom, right). */
    int64_t pad[4];
    cr_expect_eq(ir_attrs_get_ints(conv->attrs, "padding", pad, 4), 4);
    cr_expect(pad[0] == 1 && pad[3] == 1);
    /* Params take the input names as names and spans; result is (1, 3, 5, 5). */
    ir_func *f = t_main(m);
    cr_assert_eq(f->nparams, 1);
    cr_expect_str_eq(f->params[0]->name, "x");
    cr_expect(ir_span_has_source(f->params[0]->base.span, "x"));
    cr_expect(ir_sinfo_static_shape(t_ret(m), shape));
    cr_expect(shape[1] == 3 && shape[2] == 5);
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, unnamed_nodes_use_op_type_and_first_output) {
    tm *t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    tm_node(t, "Sigmoid", NULL, "x", "s");
    tm_output(t, "s");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect(t_layer_seen(m, "Sigmoid_s", true));
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, backend_model_spans_cover_every_computing_node) {
    static const char *const models[] = {"test_softmax_axis_1_expanded", "test_hardswish_expanded",
                                         "test_layer_normalization_3d_axis1_epsilon_expanded"};
    for (size_t k = 0; k < sizeof(models) / sizeof(models[0]); k++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", ONNX_NODE_DIR, models[k]);
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_eq(onnx_import_file(ctx, path, NULL, &m, &d), GR_OK, "%s: %s", path, d.msg);
        Onnx__ModelProto *mp = t_load_model(path);
        cr_assert_not_null(mp);
        int checked = 0;
        for (size_t i = 0; i < mp->graph->n_node; i++) {
            const Onnx__NodeProto *n = mp->graph->node[i];
            /* Nodes evaluated at import (constants, shape arithmetic) leave no binding. */
            static const char *const folded[] = {"Constant", "Shape", "Size", "Cast", "Slice",
                                                 "Concat", "Sub", "Gather", "Unsqueeze", "Identity",
                                                 "ConstantOfShape"};
            bool skip = false;
            for (size_t j = 0; j < sizeof(folded) / sizeof(folded[0]) && !skip; j++)
                skip = !strcmp(n->op_type, folded[j]) && strcmp(models[k], "test_softmax_axis_1_expanded");
            if (skip || !strcmp(n->op_type, "Constant")) continue;
            char layer[256];
            if (n->name && *n->name) snprintf(layer, sizeof(layer), "%s", n->name);
            else snprintf(layer, sizeof(layer), "%s_%s", n->op_type, n->output[0]);
            cr_expect(t_layer_seen(m, layer, false), "%s: no span names %s", models[k], layer);
            cr_expect(t_layer_seen(m, layer, true), "%s: no output mark for %s", models[k], layer);
            checked++;
        }
        cr_expect_gt(checked, 1, "%s", models[k]);
        onnx__model_proto__free_unpacked(mp, NULL);
        ir_ctx_free(ctx);
    }
}

Test(onnx_import, no_spans_turns_spans_off) {
    tm *t = conv_relu_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    onnx_import_opts o = {.no_spans = true};
    cr_assert_eq(tm_import(t, ctx, &o, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[16];
    uint32_t n = t_bindings(m, bs, 16);
    for (uint32_t i = 0; i < n; i++) {
        cr_expect_null(bs[i]->value->span);
        if (bs[i]->value->kind == IR_CALL) {
            const ir_call *c = (const ir_call *)bs[i]->value;
            for (uint32_t a = 0; a < c->nargs; a++) cr_expect_null(c->args[a]->span);
        }
    }
    cr_expect_null(t_main(m)->params[0]->base.span);
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, constant_node_takes_the_node_name) {
    tm *t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    Onnx__NodeProto *c = tm_node(t, "Constant", "my_const", NULL, "k");
    Onnx__AttributeProto *a = tm_attr(t, c, "value");
    float v[3] = {1, 2, 3};
    int64_t dims[1] = {3};
    a->t = tm_tensor(t, "", F32, 1, dims, 3, v);
    tm_node(t, "Add", "add1", "x,k", "y");
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[8];
    t_bindings(m, bs, 8);
    const ir_call *add = (const ir_call *)bs[0]->value;
    cr_assert_eq(add->args[1]->kind, IR_CONST);
    cr_expect(ir_span_has_source(add->args[1]->span, "my_const"));
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, initializer_that_is_also_an_input_is_a_constant) {
    tm *t = conv_relu_model();
    static const char *const wd[] = {"3", "2", "3", "3"};
    tm_input(t, "w", F32, 4, wd);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(t_main(m)->nparams, 1);
    ir_ctx_free(ctx);
    tm_free(t);
}

/* x: [N, 3, 4, 4], y: [N, 5], z: [2, ?]: N is one shared var; "?" gets its own. */
static tm *dynamic_model(void) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"N", "3", "4", "4"}, *const yd[] = {"N", "5"},
                             *const zd[] = {"2", "?"};
    tm_input(t, "x", F32, 4, xd);
    tm_input(t, "y", F32, 2, yd);
    tm_input(t, "z", F32, 2, zd);
    /* flatten the dynamic batch through a shape subgraph: Shape -> Gather(0) -> Unsqueeze ->
     * Concat([-1]) -> Reshape */
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
    tm_node(t, "Reshape", "flat", "x,shp", "xf");
    tm_node(t, "Relu", "r", "y", "yr");
    tm_node(t, "Relu", "rz", "z", "zr");
    tm_output(t, "xf");
    tm_output(t, "yr");
    tm_output(t, "zr");
    return t;
}

Test(onnx_import, dynamic_dims_are_shared_symbolic_vars_and_shapes_fold) {
    tm *t = dynamic_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    ir_func *f = t_main(m);
    cr_assert_eq(f->nparams, 3);
    const ir_sinfo *xs = f->params[0]->base.sinfo, *ys = f->params[1]->base.sinfo,
                   *zs = f->params[2]->base.sinfo;
    cr_assert_eq(xs->dims[0]->kind, IR_PRIM_VAR);
    cr_expect_str_eq(xs->dims[0]->name, "N");
    cr_expect_eq(xs->dims[0], ys->dims[0], "N is one var for every input");
    cr_expect_eq(zs->dims[1]->kind, IR_PRIM_VAR);
    const ir_sinfo *ret = t_ret(m);
    cr_assert_eq(ret->kind, IR_SINFO_TUPLE);
    const ir_sinfo *xf = ret->fields[0];
    cr_assert_eq(xf->ndim, 2);
    cr_expect_eq(xf->dims[0], xs->dims[0], "the batch dim flows through the folded shape");
    int64_t v;
    cr_expect(ir_prim_is_int(xf->dims[1], &v) && v == 48);
    /* The shape subgraph leaves only the reshape and the two relus (+ the output tuple). */
    const ir_binding *bs[16];
    uint32_t n = t_bindings(m, bs, 16);
    cr_expect_eq(n, 4);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.reshape");
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, input_shape_binds_dynamic_dims) {
    tm *t = dynamic_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    onnx_input_shape shapes[2] = {{.name = "x", .ndim = 4, .dims = {2, 3, 4, 4}},
                                  {.name = "z", .ndim = 2, .dims = {2, 7}}};
    onnx_import_opts o = {.shapes = shapes, .nshapes = 2};
    cr_assert_eq(tm_import(t, ctx, &o, &m, &d), GR_OK, "%s", d.msg);
    ir_func *f = t_main(m);
    int64_t s[4];
    cr_expect(ir_sinfo_static_shape(f->params[0]->base.sinfo, s) && s[0] == 2);
    /* y shares N with x, so binding x binds y too. */
    cr_expect(ir_sinfo_static_shape(f->params[1]->base.sinfo, s) && s[0] == 2 && s[1] == 5);
    cr_expect(ir_sinfo_static_shape(f->params[2]->base.sinfo, s) && s[1] == 7);
    cr_expect(ir_sinfo_static_shape(t_ret(m)->fields[0], s) && s[0] == 2 && s[1] == 48);
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, bad_input_shape_specs_are_invalid) {
    tm *t = dynamic_model();
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    onnx_input_shape rank = {.name = "x", .ndim = 3, .dims = {2, 3, 4}};
    onnx_import_opts o = {.shapes = &rank, .nshapes = 1};
    cr_expect_eq(tm_import(t, ctx, &o, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "rank") != NULL, "%s", d.msg);
    cr_expect_str_eq(d.file, "test.onnx");
    onnx_input_shape name = {.name = "nope", .ndim = 1, .dims = {2}};
    o.shapes = &name;
    cr_expect_eq(tm_import(t, ctx, &o, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "nope") != NULL, "%s", d.msg);
    onnx_input_shape fixed = {.name = "x", .ndim = 4, .dims = {2, 9, 4, 4}};
    o.shapes = &fixed;
    cr_expect_eq(tm_import(t, ctx, &o, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "fixes") != NULL, "%s", d.msg);
    ir_ctx_free(ctx);
    tm_free(t);
}

static tm *softmax_model(int64_t opset, int64_t axis) {
    tm *t = tm_new(opset);
    static const char *const xd[] = {"2", "3", "4"};
    tm_input(t, "x", F32, 3, xd);
    Onnx__NodeProto *n = tm_node(t, "Softmax", "sm", "x", "y");
    tm_attr_int(t, n, "axis", axis);
    tm_output(t, "y");
    return t;
}

Test(onnx_import, softmax_before_opset_13_coerces_to_2d) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    const ir_binding *bs[8];
    int64_t s[3];
    /* opset 11, axis 1: reshape to (2, 12), softmax over the last dim, reshape back. */
    tm *t = softmax_model(11, 1);
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(t_bindings(m, bs, 8), 4);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.reshape");
    cr_expect(ir_sinfo_static_shape(bs[0]->var->base.sinfo, s) && s[0] == 2 && s[1] == 12);
    cr_expect_str_eq(t_op_name(bs[1]->value), "relax.nn.softmax");
    cr_expect_str_eq(t_op_name(bs[2]->value), "relax.reshape");
    cr_expect(ir_span_is_output_of(bs[2]->value->span, "sm"));
    cr_expect(!ir_span_is_output_of(bs[1]->value->span, "sm"));
    cr_expect(ir_sinfo_static_shape(t_ret(m), s) && s[0] == 2 && s[1] == 3 && s[2] == 4);
    tm_free(t);
    /* opset 13, axis 1: one softmax over axis 1. */
    t = softmax_model(13, 1);
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(t_bindings(m, bs, 8), 2);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.nn.softmax");
    cr_expect_eq(ir_attrs_get_int(((const ir_call *)bs[0]->value)->attrs, "axis", 99), 1);
    tm_free(t);
    /* opset 11 with the last axis needs no reshape. */
    t = softmax_model(11, -1);
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(t_bindings(m, bs, 8), 2);
    tm_free(t);
    ir_ctx_free(ctx);
}

Test(onnx_import, clip_attribute_and_input_forms) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    const ir_binding *bs[8];
    tm *t = tm_new(6);
    tm_input(t, "x", F32, 2, D2x3);
    Onnx__NodeProto *n = tm_node(t, "Clip", "c", "x", "y");
    Onnx__AttributeProto *a = tm_attr(t, n, "min");
    a->has_f = 1;
    a->f = 0;
    a = tm_attr(t, n, "max");
    a->has_f = 1;
    a->f = 6;
    tm_output(t, "y");
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    t_bindings(m, bs, 8);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.clip");
    const ir_primval *hi = (const ir_primval *)((const ir_call *)bs[0]->value)->args[2];
    cr_assert_eq(hi->base.kind, IR_PRIMVAL);
    cr_expect_float_eq(hi->fvalue, 6.0, 1e-9);
    tm_free(t);
    /* opset 13: bounds are inputs (only max here). */
    t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    float six = 6;
    tm_init(t, tm_tensor(t, "hi", F32, 0, NULL, 1, &six));
    tm_node(t, "Clip", "c", "x,,hi", "y");
    tm_output(t, "y");
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    t_bindings(m, bs, 8);
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.minimum");
    tm_free(t);
    ir_ctx_free(ctx);
}

Test(onnx_import, slice_attr_form_and_clamping) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    int64_t s[2];
    /* opset 9: attrs; ends past the end clamp; negative starts count from the end. */
    tm *t = tm_new(9);
    static const char *const xd[] = {"4", "10"};
    tm_input(t, "x", F32, 2, xd);
    Onnx__NodeProto *n = tm_node(t, "Slice", "sl", "x", "y");
    int64_t starts[2] = {1, -3}, ends[2] = {1000, INT64_MAX}, axes[2] = {0, 1};
    tm_attr_ints(t, n, "starts", 2, starts);
    tm_attr_ints(t, n, "ends", 2, ends);
    tm_attr_ints(t, n, "axes", 2, axes);
    tm_output(t, "y");
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect(ir_sinfo_static_shape(t_ret(m), s) && s[0] == 3 && s[1] == 3, "%lld %lld",
              (long long)s[0], (long long)s[1]);
    tm_free(t);
    /* opset 13 with inputs: a negative step over the whole axis reverses it. */
    t = tm_new(13);
    tm_input(t, "x", F32, 2, xd);
    int64_t st = -1, en = INT64_MIN, ax = 1, step = -1, one = 1;
    tm_init(t, tm_tensor(t, "st", I64, 1, &one, 1, &st));
    tm_init(t, tm_tensor(t, "en", I64, 1, &one, 1, &en));
    tm_init(t, tm_tensor(t, "ax", I64, 1, &one, 1, &ax));
    tm_init(t, tm_tensor(t, "sp", I64, 1, &one, 1, &step));
    tm_node(t, "Slice", "sl", "x,st,en,ax,sp", "y");
    tm_output(t, "y");
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_expect(ir_sinfo_static_shape(t_ret(m), s) && s[0] == 4 && s[1] == 10);
    tm_free(t);
    ir_ctx_free(ctx);
}

Test(onnx_import, shape_subgraph_on_constants_folds) {
    /* Reshape(x, Concat(Shape(c)[0:1], Range(0, 2, 1) + 5)) with c a constant: the reshape target
     * is known at import. */
    tm *t = tm_new(13);
    static const char *const xd[] = {"3", "2", "5"};
    tm_input(t, "x", F32, 3, xd);
    int64_t cd[2] = {3, 10}, zero = 0, two = 2, one = 1, five = 5, minus1 = -1;
    float cv[30] = {0};
    tm_init(t, tm_tensor(t, "c", F32, 2, cd, 30, cv));
    tm_init(t, tm_tensor(t, "z", I64, 0, NULL, 1, &zero));
    tm_init(t, tm_tensor(t, "two", I64, 0, NULL, 1, &two));
    tm_init(t, tm_tensor(t, "one", I64, 0, NULL, 1, &one));
    tm_init(t, tm_tensor(t, "five", I64, 0, NULL, 1, &five));
    tm_init(t, tm_tensor(t, "m1", I64, 1, &one, 1, &minus1));
    tm_init(t, tm_tensor(t, "s0", I64, 1, &one, 1, &zero));
    tm_init(t, tm_tensor(t, "e1", I64, 1, &one, 1, &one));
    tm_node(t, "Shape", NULL, "c", "cs");
    tm_node(t, "Slice", NULL, "cs,s0,e1", "c0");
    tm_node(t, "Range", NULL, "z,two,one", "r");
    tm_node(t, "Add", NULL, "r,five", "r5");
    tm_node(t, "ReduceMax", NULL, "r5", "rm");  /* 6, not folded: a real op on a constant */
    tm_node(t, "Div", NULL, "c0,e1", "q");
    Onnx__NodeProto *cat = tm_node(t, "Concat", NULL, "q,m1", "shp");
    tm_attr_int(t, cat, "axis", 0);
    tm_node(t, "Reshape", "resh", "x,shp", "y");
    tm_output(t, "y");
    tm_output(t, "rm");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    int64_t s[2];
    const ir_sinfo *ret = t_ret(m);
    cr_expect(ir_sinfo_static_shape(ret->fields[0], s) && s[0] == 3 && s[1] == 10);
    const ir_binding *bs[8];
    uint32_t n = t_bindings(m, bs, 8);
    cr_expect_eq(n, 3);  /* reshape, max, output tuple */
    ir_ctx_free(ctx);
    tm_free(t);
}

/* ---- errors ---- */

static uint8_t *read_all(const char *path, size_t *len) {
    uint8_t *b = (uint8_t *)tu_read_file(path, len);
    cr_assert_not_null(b, "%s", path);
    return b;
}

Test(onnx_import, truncated_files_are_invalid_and_never_crash) {
    size_t len;
    uint8_t *b = read_all(ONNX_NODE_DIR "/test_conv_with_strides_padding/model.onnx", &len);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/graft_onnx_trunc_%d.onnx", (int)getpid());
    /* Cut inside the graph: a file on disk, then every cut length through the buffer API. */
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, len / 2, f);
    fclose(f);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_expect_eq(onnx_import_file(ctx, path, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect_str_eq(d.file, path);
    cr_expect(strstr(d.msg, "truncated") != NULL, "%s", d.msg);
    cr_expect_null(m);
    unlink(path);
    for (size_t n = 0; n < len; n++) {
        gr_diag_clear(&d);
        gr_status st = onnx_import_buffer(ctx, "cut.onnx", b, n, NULL, &m, &d);
        cr_expect(st == GR_ERR_INVALID || st == GR_OK || st == GR_ERR_UNSUPPORTED,
                  "cut at %zu: %s", n, gr_status_name(st));
    }
    gr_diag_clear(&d);
    cr_expect_eq(onnx_import_file(ctx, "/nonexistent/model.onnx", NULL, &m, &d), GR_ERR_IO);
    ir_ctx_free(ctx);
    free(b);
}

Test(onnx_import, random_bytes_are_invalid) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint8_t buf[512];
    ir_ctx_t *ctx = ir_ctx_new();
    for (int k = 0; k < 200; k++) {
        size_t n = 1 + (size_t)(k * 7 % 511);
        for (size_t i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            buf[i] = (uint8_t)s;
        }
        ir_module *m = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        gr_status st = onnx_import_buffer(ctx, "rand.onnx", buf, n, NULL, &m, &d);
        cr_expect_neq(st, GR_OK, "random buffer %d imported", k);
        cr_expect_str_eq(d.file, "rand.onnx");
    }
    ir_ctx_free(ctx);
}

Test(onnx_import, unsupported_ops_are_all_listed) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = onnx_import_file(ctx, ONNX_NODE_DIR "/test_bernoulli/model.onnx",
                                    NULL, &m, &d);
    cr_expect_eq(st, GR_ERR_UNSUPPORTED);
    cr_expect(strstr(d.msg, "Bernoulli, opset") != NULL, "%s", d.msg);
    cr_expect_str_eq(d.op, "Bernoulli");
    tm *t = tm_new(11);
    tm_input(t, "x", F32, 2, D2x3);
    tm_node(t, "Bernoulli", "foo", "x", "a");
    tm_node(t, "Relu", "fine", "x", "b");
    tm_node(t, "StringNormalizer", "bar", "x", "c");
    tm_output(t, "b");
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_UNSUPPORTED);
    cr_expect(strstr(d.msg, "2 unsupported nodes") != NULL, "%s", d.msg);
    cr_expect(strstr(d.msg, "'foo' (Bernoulli, opset 11)") != NULL, "%s", d.msg);
    cr_expect(strstr(d.msg, "'bar' (StringNormalizer, opset 11): string tensors are not supported") != NULL,
              "%s", d.msg);
    cr_expect(strstr(d.msg, "fine") == NULL, "%s", d.msg);
    tm_free(t);
    ir_ctx_free(ctx);
}

Test(onnx_import, structural_errors_name_the_node) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    /* An input never produced. */
    tm *t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    tm_node(t, "Add", "adder", "x,ghost", "y");
    tm_output(t, "y");
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "ghost") != NULL && strstr(d.msg, "adder") != NULL, "%s", d.msg);
    cr_expect_str_eq(d.layer, "adder");
    tm_free(t);
    /* No graph. */
    t = tm_new(13);
    t->m->graph = NULL;
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "no graph") != NULL, "%s", d.msg);
    tm_free(t);
    /* A shape error from the builder passes through with layer and op. */
    t = tm_new(13);
    static const char *const yd[] = {"4", "5"};
    tm_input(t, "x", F32, 2, D2x3);
    tm_input(t, "y", F32, 2, yd);
    tm_node(t, "Add", "bad_add", "x,y", "z");
    tm_output(t, "z");
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_TYPE);
    cr_expect_str_eq(d.layer, "bad_add");
    cr_expect(d.op[0] != 0);
    cr_expect_str_eq(d.file, "test.onnx");
    tm_free(t);
    /* An initializer of an unsupported dtype (string). */
    t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    int64_t one = 1;
    tm_init(t, tm_tensor(t, "words", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, &one, 0, NULL));
    tm_node(t, "Relu", "r", "x", "y");
    tm_output(t, "y");
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect_str_eq(d.layer, "words");
    tm_free(t);
    /* raw_data of the wrong size. */
    t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    int64_t three = 3;
    Onnx__TensorProto *tp = tm_init(t, tm_tensor(t, "k", F32, 1, &three, 0, NULL));
    static uint8_t raw[8];
    tp->has_raw_data = 1;
    tp->raw_data.len = 8;
    tp->raw_data.data = raw;
    tm_node(t, "Add", "a", "x,k", "y");
    tm_output(t, "y");
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "raw_data") != NULL, "%s", d.msg);
    tm_free(t);
    ir_ctx_free(ctx);
}

/* A model with one initializer stored in an external file next to it. */
static tm *external_model(const char *location, const char *offset, const char *length) {
    tm *t = tm_new(13);
    tm_input(t, "x", F32, 2, D2x3);
    int64_t three = 3;
    Onnx__TensorProto *tp = tm_init(t, tm_tensor(t, "ext", F32, 1, &three, 0, NULL));
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    tp->external_data = tm_alloc(t, sizeof(void *) * 3);
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = tm_alloc(t, sizeof(*e));
        onnx__string_string_entry_proto__init(e);
        e->key = tm_str(t, keys[i]);
        e->value = tm_str(t, vals[i]);
        tp->external_data[tp->n_external_data++] = e;
    }
    tm_node(t, "Add", "a", "x,ext", "y");
    tm_output(t, "y");
    return t;
}

static gr_status import_external(const char *dir, tm *t, ir_ctx_t *ctx, ir_module **m, gr_diag *d) {
    char path[256];
    snprintf(path, sizeof(path), "%s/model.onnx", dir);
    size_t len;
    uint8_t *buf = tm_pack(t, &len);
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    free(buf);
    gr_diag_clear(d);
    gr_status st = onnx_import_file(ctx, path, NULL, m, d);
    unlink(path);
    return st;
}

Test(onnx_import, external_data_loads_with_offset_and_length_checks) {
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/graft_onnx_ext_%d", (int)getpid());
    mkdir(dir, 0700);
    char data[300];
    snprintf(data, sizeof(data), "%s/w.bin", dir);
    float vals[5] = {9, 1.5f, 2.5f, 3.5f, 9};
    FILE *f = fopen(data, "wb");
    fwrite(vals, sizeof(float), 5, f);
    fclose(f);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    tm *t = external_model("w.bin", "4", "12");
    cr_assert_eq(import_external(dir, t, ctx, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[4];
    t_bindings(m, bs, 4);
    const ir_const *c = (const ir_const *)((const ir_call *)bs[0]->value)->args[1];
    cr_assert_eq(c->base.kind, IR_CONST);
    cr_expect_float_eq(((float *)c->data->dl.data)[0], 1.5f, 1e-6);
    cr_expect_float_eq(((float *)c->data->dl.data)[2], 3.5f, 1e-6);
    cr_expect(ir_span_has_source(c->base.span, "ext"));
    tm_free(t);
    /* Too short (offset + 12 past the end), wrong length, missing file, escaping path. */
    const char *bad[][3] = {{"w.bin", "12", NULL}, {"w.bin", "0", "8"}, {"nope.bin", NULL, NULL},
                            {"../w.bin", NULL, NULL}, {"/etc/passwd", NULL, NULL}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t = external_model(bad[i][0], bad[i][1], bad[i][2]);
        cr_expect_eq(import_external(dir, t, ctx, &m, &d), GR_ERR_INVALID, "case %zu", i);
        cr_expect(strstr(d.msg, "ext") != NULL, "%s", d.msg);
        cr_expect(strstr(d.file, "model.onnx") != NULL);
        tm_free(t);
    }
    ir_ctx_free(ctx);
    unlink(data);
    rmdir(dir);
}

/* ---- .pb tensors ---- */

Test(onnx_import, tensor_pb_files_load) {
    rt_tensor *t = NULL;
    char *name = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    const char *p = ONNX_NODE_DIR "/test_conv_with_strides_padding/test_data_set_0/input_0.pb";
    cr_assert_eq(onnx_tensor_load_pb(p, &t, &name, &d), GR_OK, "%s", d.msg);
    cr_expect_str_eq(name, "x");
    cr_expect_eq(t->dl.ndim, 4);
    cr_expect(t->shape[0] == 1 && t->shape[1] == 1 && t->shape[2] == 7 && t->shape[3] == 5);
    for (int i = 0; i < 35; i++) cr_expect_float_eq(((float *)t->dl.data)[i], (float)i, 1e-6);
    rt_tensor_release(t);
    free(name);
    /* int64 data */
    p = ONNX_NODE_DIR "/test_reshape_negative_dim/test_data_set_0/input_1.pb";
    cr_assert_eq(onnx_tensor_load_pb(p, &t, NULL, &d), GR_OK, "%s", d.msg);
    cr_expect(ir_dtype_eq(t->dl.dtype, IR_DTYPE_I64));
    cr_expect_eq(((int64_t *)t->dl.data)[1], -1);
    rt_tensor_release(t);
    /* A truncated .pb */
    size_t len;
    uint8_t *b = read_all(ONNX_NODE_DIR "/test_conv_with_strides_padding/test_data_set_0/input_0.pb", &len);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/graft_onnx_pb_%d.pb", (int)getpid());
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, len - 3, f);
    fclose(f);
    gr_diag_clear(&d);
    cr_expect_neq(onnx_tensor_load_pb(path, &t, &name, &d), GR_OK);
    cr_expect_null(t);
    cr_expect_str_eq(d.file, path);
    unlink(path);
    free(b);
    gr_diag_clear(&d);
    cr_expect_eq(onnx_tensor_load_pb("/nonexistent.pb", &t, NULL, &d), GR_ERR_IO);
}

Test(onnx_import, unknown_dims_of_known_rank_get_named_by_match_cast) {
    /* N and M cannot be proven equal, so x + y has rank 4 and unknown dims; Flatten still
     * needs them. */
    tm *t = tm_new(13);
    static const char *const xd[] = {"N", "3", "4", "4"}, *const yd[] = {"M", "3", "4", "4"};
    tm_input(t, "x", F32, 4, xd);
    tm_input(t, "y", F32, 4, yd);
    tm_node(t, "Add", "sum", "x,y", "s");
    tm_node(t, "Flatten", "flat", "s", "f");
    tm_output(t, "f");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_sinfo *ret = t_ret(m);
    cr_expect_eq(ret->ndim, 2);
    const ir_binding *bs[8];
    uint32_t n = t_bindings(m, bs, 8);
    cr_assert_geq(n, 2);
    bool cast = false;
    for (uint32_t i = 0; i < n; i++) cast = cast || bs[i]->match_sinfo != NULL;
    if (bs[0]->var->base.sinfo->dims == NULL) cr_expect(cast, "no match_cast named the dims");
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, upsample_opset7_scales_attribute) {
    tm *t = tm_new(7);
    static const char *const xd[] = {"1", "2", "3", "4"};
    tm_input(t, "x", F32, 4, xd);
    Onnx__NodeProto *n = tm_node(t, "Upsample", "up", "x", "y");
    Onnx__AttributeProto *a = tm_attr(t, n, "scales");
    static float sc[4] = {1, 1, 2, 3};
    a->n_floats = 4;
    a->floats = sc;
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    int64_t s[4];
    cr_expect(ir_sinfo_static_shape(t_ret(m), s) && s[2] == 6 && s[3] == 12);
    const ir_binding *bs[4];
    t_bindings(m, bs, 4);
    const ir_call *c = (const ir_call *)bs[0]->value;
    cr_expect_str_eq(t_op_name(bs[0]->value), "relax.image.resize2d");
    cr_expect_str_eq(ir_attrs_get_str(c->attrs, "method"), "nearest_neighbor");
    cr_expect_str_eq(ir_attrs_get_str(c->attrs, "coordinate_transformation_mode"), "asymmetric");
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_import, dynamic_upsample_size_computed_through_float_casts) {
    /* sizes = Concat(Shape(x)[0:2], Cast<int64>(Floor(Cast<float>(Shape(x)[2:4]) * 2.0))) */
    tm *t = tm_new(13);
    static const char *const xd[] = {"N", "3", "H", "W"};
    tm_input(t, "x", F32, 4, xd);
    int64_t one = 1, zero = 0, two = 2, four = 4;
    float f2 = 2.0f;
    tm_init(t, tm_tensor(t, "s0", I64, 1, &one, 1, &zero));
    tm_init(t, tm_tensor(t, "s2", I64, 1, &one, 1, &two));
    tm_init(t, tm_tensor(t, "s4", I64, 1, &one, 1, &four));
    tm_init(t, tm_tensor(t, "f2", F32, 0, NULL, 1, &f2));
    tm_node(t, "Shape", "shape", "x", "sh");
    tm_node(t, "Slice", "nc", "sh,s0,s2", "nc");
    tm_node(t, "Slice", "hw", "sh,s2,s4", "hw");
    Onnx__NodeProto *c1 = tm_node(t, "Cast", "tofloat", "hw", "hwf");
    tm_attr_int(t, c1, "to", F32);
    tm_node(t, "Mul", "times2", "hwf,f2", "hw2");
    tm_node(t, "Floor", "floor", "hw2", "hw2f");
    Onnx__NodeProto *c2 = tm_node(t, "Cast", "toint", "hw2f", "hw2i");
    tm_attr_int(t, c2, "to", I64);
    Onnx__NodeProto *cat = tm_node(t, "Concat", "sizes", "nc,hw2i", "sz");
    tm_attr_int(t, cat, "axis", 0);
    Onnx__NodeProto *r = tm_node(t, "Resize", "up", "x,,,sz", "y");
    Onnx__AttributeProto *a = tm_attr(t, r, "mode");
    a->has_s = 1;
    a->s.data = (uint8_t *)tm_str(t, "nearest");
    a->s.len = 7;
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_sinfo *x = t_main(m)->params[0]->base.sinfo, *y = t_ret(m);
    cr_assert_eq(y->ndim, 4);
    cr_assert_not_null(y->dims);
    cr_expect_eq(y->dims[0], x->dims[0]);
    cr_expect_eq(y->dims[2], ir_prim_mul(ctx, x->dims[2], ir_prim_int(ctx, 2)));
    cr_expect_eq(y->dims[3], ir_prim_mul(ctx, x->dims[3], ir_prim_int(ctx, 2)));
    const ir_binding *bs[4];
    cr_expect_eq(t_bindings(m, bs, 4), 2);  /* the resize and the output */
    ir_ctx_free(ctx);
    tm_free(t);
}
