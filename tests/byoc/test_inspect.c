/* inspect/inspect.h: the layer index of a partition and layer-by-layer diffs. A perturbation of
 * one layer's output (the hook insp_diff_opts.perturb: it changes what that op computed, in
 * place, and the run goes on with it) must be reported at exactly that layer, first, for an op
 * inside a dnnl region, an op inside a json region and a host op; layers folded into a
 * oneDNN post-op are listed as unobservable with the primitive they went into. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "inspect/inspect.h"
#include "ir/text/parser.h"

#define MODEL "tests/golden/inspect/conv_host_conv.relax"

typedef struct fixture {
    ir_ctx_t *ctx;
    ir_module *m;
    insp_model *im;
    rt_value in[4];
    uint32_t nin;
} fixture;

/* deterministic inputs in [-1, 1) for every parameter of main */
static void setup_model(fixture *f, const char *backend) {
    gr_diag d;
    gr_diag_clear(&d);
    f->ctx = ir_ctx_new();
    cr_assert_eq(ir_parse_file(f->ctx, MODEL, &f->m, &d), GR_OK, "%s", d.msg);
    const char *be[1] = {backend};
    cr_assert_eq(insp_model_build(f->ctx, f->m, be, 1, NULL, &f->im, &d), GR_OK, "%s", d.msg);
    const ir_func *main_fn = ir_module_func(f->m, "main");
    uint32_t seed = 12345;
    f->nin = main_fn->nparams;
    for (uint32_t p = 0; p < f->nin; p++) {
        int64_t shape[RT_MAX_NDIM];
        const ir_sinfo *s = main_fn->params[p]->base.sinfo;
        cr_assert(ir_sinfo_static_shape(s, shape));
        rt_tensor *t = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, s->ndim, shape);
        float *x = rt_tensor_data(t);
        for (int64_t i = 0; i < rt_tensor_numel(t); i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = (float)((seed >> 8) / 16777216.0 * 2.0 - 1.0);
        }
        f->in[p] = rt_value_tensor(t);
    }
}

static void teardown_model(fixture *f) {
    for (uint32_t i = 0; i < f->nin; i++) rt_value_clear(&f->in[i]);
    insp_model_free(f->im);
    ir_ctx_free(f->ctx);
}

typedef struct perturb {
    const char *layer;
    int hits;
} perturb;

/* adds 1 + |v| to the first value of the chosen layer's output */
static bool perturb_one(const char *layer, rt_tensor *t, void *user) {
    perturb *p = user;
    if (strcmp(layer, p->layer) != 0) return false;
    float *x = rt_tensor_data(t);
    x[0] += 1.0f + fabsf(x[0]);
    p->hits++;
    return true;
}

static json_t *diff(fixture *f, const char *layer, perturb *p) {
    gr_diag d;
    gr_diag_clear(&d);
    insp_diff_opts o = {.rtol = 1e-3, .atol_scale = 1e-5};
    if (layer) {
        p->layer = layer;
        p->hits = 0;
        o.perturb = perturb_one;
        o.perturb_user = p;
    }
    json_t *doc = NULL;
    cr_assert_eq(insp_diff(f->im, &o, f->in, f->nin, &doc, &d), GR_OK, "%s", d.msg);
    return doc;
}

static json_t *layer_result(json_t *doc, const char *name) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "layers"), i, r)
        if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0) return r;
    cr_assert_fail("layer %s not in the diff", name);
    return NULL;
}

static const char *str(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

Test(inspect, model_index_places_layers) {
    fixture f;
    setup_model(&f, "dnnl");
    json_t *doc = insp_model_json(f.im);
    json_t *layers = json_object_get(doc, "layers");
    cr_assert_eq(json_array_size(layers), 6, "conv1 relu1 cumsum conv2 act2 residual");
    const char *order[] = {"conv1", "relu1", "cumsum", "conv2", "act2", "residual"};
    for (int i = 0; i < 6; i++) cr_assert_str_eq(str(json_array_get(layers, (size_t)i), "name"), order[i]);
    json_t *cs = json_array_get(layers, 2);
    cr_assert_str_eq(str(cs, "place"), "host");
    cr_assert(strstr(str(cs, "reason"), "json.cumsum"), "reason: %s", str(cs, "reason"));
    json_t *c2 = json_array_get(layers, 3);
    cr_assert_str_eq(str(c2, "place"), "region");
    cr_assert_str_eq(str(c2, "backend"), "dnnl");
    cr_assert(strstr(str(c2, "composite"), "dnnl.conv2d"), "composite: %s", str(c2, "composite"));
    cr_assert(strstr(str(c2, "before"), "R.nn.conv2d"));
    cr_assert(strstr(str(c2, "after"), "R.add"));
    /* edges: conv2 reads cumsum, residual reads act2 and relu1 */
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(c2, "inputs"), 0)), 2);
    cr_assert_eq(json_array_size(json_object_get(json_array_get(layers, 5), "inputs")), 2);
    cr_assert_eq(json_array_size(json_object_get(doc, "regions")), 2);
    cr_assert_eq(json_array_size(json_object_get(doc, "host")), 1);
    teardown_model(&f);
}

Test(inspect, dnnl_unperturbed_within_tolerance) {
    fixture f;
    setup_model(&f, "dnnl");
    json_t *doc = diff(&f, NULL, NULL);
    cr_assert(json_is_null(json_object_get(doc, "first_divergence")));
    cr_assert_str_eq(str(layer_result(doc, "relu1"), "status"), "ok");
    cr_assert_str_eq(str(layer_result(doc, "cumsum"), "status"), "ok");
    cr_assert_str_eq(str(layer_result(doc, "residual"), "status"), "ok");
    /* conv1's output is the conv primitive's before its relu post-op: no buffer holds it */
    json_t *c1 = layer_result(doc, "conv1");
    cr_assert_str_eq(str(c1, "status"), "unobservable");
    cr_assert(strstr(str(c1, "unobservable"), "convolution"), "%s", str(c1, "unobservable"));
    cr_assert_str_eq(str(layer_result(doc, "relu1"), "prim_kind"), "convolution");
    json_decref(doc);
    teardown_model(&f);
}

static void caught_at(const char *backend, const char *layer, const char *where) {
    fixture f;
    setup_model(&f, backend);
    perturb p;
    json_t *doc = diff(&f, layer, &p);
    cr_assert_eq(p.hits, 1, "the hook saw %s %d times", layer, p.hits);
    json_t *first = json_object_get(doc, "first_divergence");
    cr_assert(json_is_object(first), "perturbing %s was not caught", layer);
    cr_assert_str_eq(str(first, "name"), layer);
    cr_assert_str_eq(str(first, "status"), "diverges");
    cr_assert_geq(json_integer_value(json_object_get(first, "bad")), 1);
    cr_assert(strstr(str(first, "where"), where), "%s computed by %s", layer, str(first, "where"));
    /* every layer before it still agrees, and the change reached the model's output */
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        if (strcmp(str(r, "name"), layer) == 0) break;
        cr_assert(strcmp(str(r, "status"), "ok") == 0 || strcmp(str(r, "status"), "unobservable") == 0, "%s: %s",
                  str(r, "name"), str(r, "status"));
    }
    cr_assert_str_eq(str(layer_result(doc, "residual"), "status"), "diverges");
    json_decref(doc);
    teardown_model(&f);
}

Test(inspect, perturbed_dnnl_op_caught_there) { caught_at("dnnl", "relu1", "fused_"); }
Test(inspect, perturbed_dnnl_op_second_region) { caught_at("dnnl", "act2", "fused_"); }
Test(inspect, perturbed_host_op_caught_there) { caught_at("dnnl", "cumsum", "host"); }
Test(inspect, perturbed_json_op_caught_there) { caught_at("json", "conv1", "fused_"); }

Test(inspect, against_another_backend) {
    fixture f;
    setup_model(&f, "dnnl");
    gr_diag d;
    gr_diag_clear(&d);
    insp_diff_opts o = {.rtol = 1e-3, .atol_scale = 1e-5, .against = "json"};
    json_t *doc = NULL;
    cr_assert_eq(insp_diff(f.im, &o, f.in, f.nin, &doc, &d), GR_OK, "%s", d.msg);
    cr_assert_str_eq(str(doc, "against"), "json");
    cr_assert(json_is_null(json_object_get(doc, "first_divergence")));
    cr_assert_str_eq(str(layer_result(doc, "act2"), "status"), "ok");
    json_decref(doc);
    teardown_model(&f);
}

/* Weights are details of the layer that reads them; a layer whose mark rides on another layer's
 * binding (an ONNX Identity of a weight, folded by the import) is folded into that layer. */
Test(inspect, weights_and_folded_layers) {
    char zeros[577];
    memset(zeros, 'A', 576); /* 432 zero bytes: 4x3x3x3 float32 */
    zeros[576] = 0;
    char text[2048];
    snprintf(text, sizeof text,
             "@I.ir_module\n"
             "class Module:\n"
             "    @R.function\n"
             "    def main(x: R.Tensor((1, 3, 8, 8), dtype=\"float32\")) -> R.Tensor((1, 4, 6, 6), dtype=\"float32\"):\n"
             "        with R.dataflow():\n"
             "            lv: R.Tensor((1, 4, 6, 6), dtype=\"float32\") = R.nn.conv2d(x, metadata[\"relax.expr.Constant\"][0])"
             "  # span: [\"conv1\"!, \"w_identity\"!]\n"
             "            gv: R.Tensor((1, 4, 6, 6), dtype=\"float32\") = R.nn.relu(lv)  # span: \"relu1\"!\n"
             "            R.output(gv)\n"
             "        return gv\n\n"
             "metadata = {\"relax.expr.Constant\": [\n"
             "    R.const_data(\"float32\", (4, 3, 3, 3), \"%s\", span=\"conv1.weight\"),\n"
             "]}\n",
             zeros);
    gr_diag d;
    gr_diag_clear(&d);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    cr_assert_eq(ir_parse_module(ctx, "weights.relax", text, strlen(text), &m, &d), GR_OK, "%s", d.msg);
    const char *be[1] = {"dnnl"};
    insp_model *im = NULL;
    cr_assert_eq(insp_model_build(ctx, m, be, 1, NULL, &im, &d), GR_OK, "%s", d.msg);
    json_t *layers = json_object_get(insp_model_json(im), "layers");
    cr_assert_eq(json_array_size(layers), 3, "conv1 w_identity relu1");
    json_t *conv = json_array_get(layers, 0), *ident = json_array_get(layers, 1), *relu = json_array_get(layers, 2);
    cr_assert_str_eq(str(conv, "name"), "conv1");
    cr_assert_str_eq(str(ident, "name"), "w_identity");
    cr_assert_eq(json_integer_value(json_object_get(ident, "folded_into")), 0);
    cr_assert_eq(json_array_size(json_object_get(conv, "folds")), 1);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(conv, "folds"), 0)), 1);
    json_t *w = json_object_get(conv, "weights");
    cr_assert_eq(json_array_size(w), 1);
    cr_assert_str_eq(str(json_array_get(w, 0), "name"), "conv1.weight");
    cr_assert(strstr(str(json_array_get(w, 0), "type"), "(4, 3, 3, 3)"), "%s", str(json_array_get(w, 0), "type"));
    /* relu1 reads conv1, not a weight; it is a layer of its own */
    cr_assert_null(json_object_get(relu, "weights"));
    cr_assert_null(json_object_get(relu, "folded_into"));
    cr_assert_null(json_object_get(conv, "folded_into"));
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(relu, "inputs"), 0)), 0);
    insp_model_free(im);
    ir_ctx_free(ctx);
}
