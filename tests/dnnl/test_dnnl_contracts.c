/* Operand contracts (rt_json_graph_check, runtime/json/json_contract.c): a JSON graph whose node's
 * operands disagree with each other (a matmul's K, a convolution's channels or groups, a
 * binary op's broadcast, a concat's other axes, a reshape's element count, a pooling window
 * larger than its input) is refused when an engine prepares it, on the reference engine and on
 * oneDNN alike: GR_ERR_INVALID, naming the node, its op and its layer. Before, each engine
 * built the node from the shapes the graph declared: graft's GEMV read past a weight of 35 rows
 * for a K of 36 (the json_graph fuzz target's finding, fuzz/regress/json_graph/), other
 * handlers read past or gave wrong answers. Each case also runs with its operands made to
 * agree, which both engines must prepare and run: the check refuses the broken graph, not the
 * op. Also: a call's tensors must be compact (a strided view is refused by both engines' run),
 * and a symbolic graph is never prepared itself (only its specializations are). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"
#include "tests/test_util.h"

static const rt_json_engine *const ENGINES[] = {&rt_json_reference_engine, &rt_dnnl_engine};

/* A graph made from fmt with every %s replaced by v (the cases' one varying dim). */
static char *graph_text(const char *fmt, const char *v) {
    char *s = malloc(8192);
    cr_assert(s);
    snprintf(s, 8192, fmt, v, v, v, v);
    return s;
}

/* Tensor of node nid's output o as declared, values 0.125 * (i % 9). */
static rt_tensor *declared(rt_json_graph *g, uint32_t nid, uint32_t o) {
    const rt_json_node *n = rt_json_graph_node(g, nid);
    rt_tensor *t = rt_tensor_new(n->dtypes[o], n->ndims[o], n->shapes[o]);
    cr_assert(t);
    float *p = rt_tensor_data(t);
    for (int64_t i = 0; i < rt_tensor_numel(t); i++) p[i] = 0.125f * (float)(i % 9);
    return t;
}

/* Loads text, binds its constants, prepares it on eng and, when that succeeds, runs it once.
 * Returns the first failure (d filled) or GR_OK. */
static gr_status prepare_and_run(const char *text, const rt_json_engine *eng, gr_diag *d) {
    rt_json_graph *g = NULL;
    gr_diag_clear(d);
    cr_assert_eq(rt_json_graph_load("contract", text, strlen(text), &g, d), GR_OK, "%s", d->msg);
    uint32_t nc = rt_json_graph_num_consts(g), ni = rt_json_graph_num_inputs(g), nh = rt_json_graph_num_heads(g);
    rt_tensor *consts[8] = {0}, *io[8] = {0};
    DLTensor *args[8];
    cr_assert(nc <= 8 && ni + nh <= 8);
    for (uint32_t nid = 0, c = 0; nid < rt_json_graph_num_nodes(g); nid++)
        if (rt_json_graph_node(g, nid)->kind == RT_JSON_CONST) consts[c++] = declared(g, nid, 0);
    cr_assert_eq(rt_json_graph_init(g, consts, nc, d), GR_OK, "%s", d->msg);
    void *state = NULL;
    gr_status st = eng->prepare(g, NULL, &state, d);
    if (!st) {
        for (uint32_t i = 0; i < ni; i++) io[i] = declared(g, rt_json_graph_input_nid(g, i), 0);
        for (uint32_t h = 0; h < nh; h++) io[ni + h] = declared(g, rt_json_graph_head(g, h).nid, rt_json_graph_head(g, h).index);
        for (uint32_t k = 0; k < ni + nh; k++) args[k] = &io[k]->dl;
        st = eng->run(g, state, args, ni, nh, d);
        eng->release(g, state);
    }
    for (uint32_t k = 0; k < ni + nh; k++) rt_tensor_release(io[k]);
    for (uint32_t c = 0; c < nc; c++) rt_tensor_release(consts[c]);
    rt_json_graph_free(g);
    return st;
}

/* The broken graph is refused by both engines at prepare, naming node nid, op and layer; the
 * agreeing one prepares and runs on both. */
static void expect_contract(const char *what, const char *good, const char *bad, uint32_t nid, const char *op,
                            const char *layer) {
    char node[32];
    snprintf(node, sizeof node, "node %u (", nid);
    for (size_t e = 0; e < sizeof ENGINES / sizeof ENGINES[0]; e++) {
        const char *kind = ENGINES[e]->kind;
        gr_diag d;
        cr_expect_eq(prepare_and_run(good, ENGINES[e], &d), GR_OK, "%s, %s, operands that agree: %s", what, kind, d.msg);
        gr_status st = prepare_and_run(bad, ENGINES[e], &d);
        cr_expect_eq(st, GR_ERR_INVALID, "%s, %s: status %s, %s", what, kind, gr_status_name(st), d.msg);
        cr_expect(strstr(d.msg, "operand contract") && strstr(d.msg, node) && strstr(d.msg, op), "%s, %s: %s", what, kind,
                  d.msg);
        cr_expect_str_eq(d.layer, layer, "%s, %s: layer '%s'", what, kind, d.layer);
        if (layer[0]) cr_expect(strstr(d.msg, layer), "%s, %s: %s", what, kind, d.msg);
    }
}

static void expect_case(const char *what, const char *fmt, const char *good_v, const char *bad_v, uint32_t nid, const char *op,
                        const char *layer) {
    char *good = graph_text(fmt, good_v), *bad = graph_text(fmt, bad_v);
    expect_contract(what, good, bad, nid, op, layer);
    free(good);
    free(bad);
}

#define T32 "\"dtype\":[\"float32\"]"
#define INPUT(name, shape) "{\"op\":\"input\",\"name\":\"" name "\",\"attrs\":{\"shape\":[" shape "]," T32 ",\"span\":[]}}"
#define CONST(name, shape) "{\"op\":\"const\",\"name\":\"" name "\",\"attrs\":{\"shape\":[" shape "]," T32 ",\"span\":[]}}"
#define KERNEL(op, inputs, op_attrs, args, shape, layer)                                                                 \
    "{\"op\":\"kernel\",\"name\":\"" op "\",\"inputs\":[" inputs "],\"attrs\":{\"op_attrs\":" op_attrs ",\"args\":[" args \
    "],\"shape\":[" shape "]," T32 ",\"span\":[[\"" layer "\",false]]}}"
#define GRAPH(nodes, heads, arg_nodes, rows) \
    "{\"nodes\":[" nodes "],\"heads\":[" heads "],\"arg_nodes\":[" arg_nodes "],\"node_row_ptr\":[" rows "]}"
#define CONV_ATTRS(groups)                                                                                          \
    "{\"strides\":[1,1],\"padding\":[0,0,0,0],\"dilation\":[1,1],\"groups\":" groups ",\"data_layout\":\"NCHW\"," \
    "\"kernel_layout\":\"OIHW\",\"out_layout\":\"NCHW\",\"out_dtype\":\"void\"}"

Test(dnnl_contracts, gemv_k_mismatch_regression) {
    /* the fuzzer's input: matmul of a (1, 36) softmax with a (35, 16) constant */
    const char *path = "fuzz/regress/json_graph/gemv_k_mismatch.json";
    char *bad = tu_read_file(path, NULL);
    cr_assert(bad && *bad, "%s", path);
    char *good = strdup(bad), *w = strstr(good, "[[35,16]]");
    cr_assert(w);
    w[3] = '6'; /* (36, 16): K agrees */
    expect_contract("gemv K", good, bad, 7, "relax.matmul", "");
    free(good);
    free(bad);
}

Test(dnnl_contracts, matmul_k_mismatch) {
    /* two rows: oneDNN's matmul, not the GEMV */
    expect_case("matmul K",
                GRAPH(INPUT("x", "[2,%s]") "," CONST("w", "[8,4]") "," KERNEL("relax.matmul", "[0,0,0],[1,0,0]",
                      "{\"out_dtype\":\"void\"}", "{\"in\":0},{\"in\":1}", "[2,4]", "fc"),
                      "[2,0,0]", "0,1", "0,1,2,3"),
                "8", "7", 2, "relax.matmul", "fc");
}

Test(dnnl_contracts, conv_channel_mismatch) {
    expect_case("conv channels",
                GRAPH(INPUT("x", "[1,3,8,8]") "," CONST("w", "[4,%s,3,3]") "," KERNEL("relax.nn.conv2d", "[0,0,0],[1,0,0]",
                      CONV_ATTRS("1"), "{\"in\":0},{\"in\":1}", "[1,4,6,6]", "conv_c"),
                      "[2,0,0]", "0,1", "0,1,2,3"),
                "3", "2", 2, "relax.nn.conv2d", "conv_c");
}

Test(dnnl_contracts, group_conv_mismatch) {
    /* 4 channels in 2 groups: 2 per group in the weights */
    expect_case("group conv",
                GRAPH(INPUT("x", "[1,4,8,8]") "," CONST("w", "[4,%s,3,3]") "," KERNEL("relax.nn.conv2d", "[0,0,0],[1,0,0]",
                      CONV_ATTRS("2"), "{\"in\":0},{\"in\":1}", "[1,4,6,6]", "conv_g"),
                      "[2,0,0]", "0,1", "0,1,2,3"),
                "2", "1", 2, "relax.nn.conv2d", "conv_g");
}

Test(dnnl_contracts, binary_not_broadcastable) {
    expect_case("binary broadcast",
                GRAPH(INPUT("x", "[2,3]") "," CONST("b", "[%s]") "," KERNEL("relax.add", "[0,0,0],[1,0,0]", "{}",
                      "{\"in\":0},{\"in\":1}", "[2,3]", "add_b"),
                      "[2,0,0]", "0,1", "0,1,2,3"),
                "3", "2", 2, "relax.add", "add_b");
}

Test(dnnl_contracts, concat_mismatch) {
    /* the axes other than the concat axis must agree */
    expect_case("concat",
                GRAPH(INPUT("x", "[1,2,4]") "," INPUT("y", "[1,3,%s]") "," KERNEL("relax.concat", "[0,0,0],[1,0,0]",
                      "{\"axis\":1}", "{\"tuple\":[{\"in\":0},{\"in\":1}]}", "[1,5,4]", "cat"),
                      "[2,0,0]", "0,1", "0,1,2,3"),
                "4", "5", 2, "relax.concat", "cat");
}

Test(dnnl_contracts, reshape_numel_mismatch) {
    /* 12 elements into 3 x 4, or (broken) into 3 x 5 */
    expect_case("reshape",
                GRAPH(INPUT("x", "[2,6]") "," KERNEL("relax.reshape", "[0,0,0]", "{}", "{\"in\":0},{\"shape\":[3,%s]}",
                      "[3,%s]", "rs"),
                      "[1,0,0]", "0", "0,1,2"),
                "4", "5", 1, "relax.reshape", "rs");
}

Test(dnnl_contracts, pool_window_larger_than_input) {
    expect_case("pool window",
                GRAPH(INPUT("x", "[1,1,%s,%s]") "," KERNEL("relax.nn.max_pool2d", "[0,0,0]",
                      "{\"pool_size\":[3,3],\"strides\":[1,1],\"dilation\":[1,1],\"padding\":[0,0,0,0],"
                      "\"ceil_mode\":false,\"count_include_pad\":false,\"layout\":\"NCHW\",\"out_layout\":\"NCHW\"}",
                      "{\"in\":0}", "[1,1,1,1]", "pool"),
                      "[1,0,0]", "0", "0,1,2"),
                "3", "2", 1, "relax.nn.max_pool2d", "pool");
}

Test(dnnl_contracts, input_not_an_argument) {
    /* a node input no argument names: what a handler reads by input index went unchecked */
    const char *fmt = GRAPH(INPUT("x", "[2,3]") "," INPUT("y", "[2,3]") "," KERNEL("relax.add", "[0,0,0],[1,0,0]%s", "{}",
                            "{\"in\":0},{\"in\":1}", "[2,3]", "add_u"),
                            "[2,0,0]", "0,1", "0,1,2,3");
    expect_case("unused input", fmt, "", ",[1,0,0]", 2, "relax.add", "add_u");
}

Test(dnnl_contracts, strided_call_tensor_refused) {
    /* a (2, 3) input given as a transposed view (strides 1, 2): both engines address tensors
     * as dense blocks, so it must be refused, not read as if it were one */
    const char *text = GRAPH(INPUT("x", "[2,3]") "," KERNEL("relax.nn.relu", "[0,0,0]", "{}", "{\"in\":0}", "[2,3]", "r"),
                             "[1,0,0]", "0", "0,1,2");
    for (size_t e = 0; e < sizeof ENGINES / sizeof ENGINES[0]; e++) {
        rt_json_graph *g = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_eq(rt_json_graph_load("contract", text, strlen(text), &g, &d), GR_OK, "%s", d.msg);
        cr_assert_eq(rt_json_graph_init(g, NULL, 0, &d), GR_OK, "%s", d.msg);
        void *state = NULL;
        cr_assert_eq(ENGINES[e]->prepare(g, NULL, &state, &d), GR_OK, "%s", d.msg);
        float xd[6] = {0}, yd[6] = {0};
        int64_t shape[2] = {2, 3}, strides[2] = {1, 2}, dense[2] = {3, 1};
        DLTensor x = {xd, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, strides, 0};
        DLTensor y = {yd, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
        DLTensor *args[2] = {&x, &y};
        cr_expect_eq(ENGINES[e]->run(g, state, args, 1, 1, &d), GR_ERR_INVALID, "%s: %s", ENGINES[e]->kind, d.msg);
        gr_diag_clear(&d);
        x.strides = dense;
        cr_expect_eq(ENGINES[e]->run(g, state, args, 1, 1, &d), GR_OK, "%s, dense strides: %s", ENGINES[e]->kind, d.msg);
        ENGINES[e]->release(g, state);
        rt_json_graph_free(g);
    }
}

Test(dnnl_contracts, symbolic_graph_not_prepared) {
    /* a dim named "n": only a specialization to call shapes (rt_json_graph_specialize) has the
     * static shapes an engine builds from */
    const char *text = GRAPH(INPUT("x", "[\"n\",3]") "," KERNEL("relax.nn.relu", "[0,0,0]", "{}", "{\"in\":0}", "[\"n\",3]", "r"),
                             "[1,0,0]", "0", "0,1,2");
    for (size_t e = 0; e < sizeof ENGINES / sizeof ENGINES[0]; e++) {
        rt_json_graph *g = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        cr_assert_eq(rt_json_graph_load("contract", text, strlen(text), &g, &d), GR_OK, "%s", d.msg);
        cr_assert(rt_json_graph_symbolic(g));
        cr_assert_eq(rt_json_graph_init(g, NULL, 0, &d), GR_OK, "%s", d.msg);
        void *state = NULL;
        gr_status st = ENGINES[e]->prepare(g, NULL, &state, &d);
        cr_expect_eq(st, GR_ERR_INVALID, "%s: %s", ENGINES[e]->kind, d.msg);
        cr_expect(strstr(d.msg, "symbolic dim"), "%s: %s", ENGINES[e]->kind, d.msg);
        if (!st) ENGINES[e]->release(g, state);
        rt_json_graph_free(g);
    }
}

/* A composite annotation is part of the graph, so it is checked too: a post-op whose output is
 * a region input, or an input the annotation lists among its nodes, made oneDNN write the
 * post's result into the caller's input (past the end of the output buffer when sizes differ,
 * found by the json_graph fuzz target). Now prepare refuses the annotation. */
static void expect_annotation_refused(const char *file) {
    char *text = tu_read_file(file, NULL);
    cr_assert(text && *text, "%s", file);
    gr_diag d;
    gr_status st = prepare_and_run(text, &rt_dnnl_engine, &d);
    cr_expect_neq(st, GR_OK, "%s: oneDNN ran a composite whose annotation does not hold", file);
    cr_expect(strstr(d.msg, "composite annotation"), "%s: %s", file, d.msg);
    free(text);
}

Test(dnnl_contracts, post_op_output_outside_the_composite) {
    expect_annotation_refused("fuzz/regress/json_graph/post_out_is_region_input.json");
    expect_annotation_refused("fuzz/regress/json_graph/post_out_is_listed_input.json");
}

/* The engine builds a composite from its annotation, so every value the annotation gives must be
 * what the nodes it names compute: the op of a post-op's node, its constants (a relu's slope, a
 * clip's bounds), its operand, and that it reads the previous step. Each of these graphs ran on
 * oneDNN as the annotation said while the reference computed the nodes (the json_graph fuzz
 * target had to skip annotated graphs); now prepare refuses them, naming the node. */
Test(dnnl_contracts, annotation_disagrees_with_its_nodes) {
    static const char *const FILES[] = {
        "fuzz/regress/json_graph/annotation_clip_bound_differs.json",
        "fuzz/regress/json_graph/annotation_post_op_differs.json",
        "fuzz/regress/json_graph/annotation_post_skips_previous.json",
        "fuzz/regress/json_graph/annotation_relu_alpha_differs.json",
    };
    for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) expect_annotation_refused(FILES[i]);
}
