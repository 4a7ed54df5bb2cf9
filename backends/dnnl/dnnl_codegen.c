/* The dnnl backend's codegen (region -> JSON graph + constants run by the oneDNN engine of
 * backends/dnnl/dnnl.h) and module loading. The pattern table is in dnnl_patterns.c.
 *
 * Each region is serialized one node per op (backends/json), then every fused composite call
 * is annotated on its first node with what the engine builds from it (backends/dnnl/dnnl.h
 * "Composites"): the composite name, the anchor node, the composite's nodes, and per post-op
 * its output entry, its tensor operand (bias, affine constants, residual, multiplier) and its
 * constants (clip bounds, leaky / elu alpha, hard-sigmoid slope and offset). The analysis is
 * the one the pattern check ran (dc_analyze), on a match of the composite's pattern against the
 * composite function's body (dc_analyze_func). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_codegen.h"
#include "backends/dnnl/dnnl_pattern_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"
#include "backends/json/json_codegen.h"
#include "ir/op.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"

static const char *op_name(json_t *node) {
    const char *s = json_string_value(json_object_get(node, "op"));
    return s ? s : "";
}

/* The op-call bindings of a function body, in order. */
static uint32_t op_bindings(const ir_func *f, dc_bind *bs, uint32_t max) {
    uint32_t n = 0;
    const ir_seq *s = f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->value->kind != IR_CALL || IR_AS(bd->value, ir_call)->callee->kind != IR_OP) continue;
            if (n < max) bs[n] = (dc_bind){&bd->var->base, IR_AS(bd->value, ir_call)};
            n++;
        }
    return n;
}

/* [nid, index] of argument k of kernel node `node` (an {"in": j} argument). */
static json_t *arg_entry(json_t *node, int k) {
    json_t *at = json_object_get(node, "attrs");
    json_t *in = json_object_get(json_array_get(json_object_get(at, "args"), (size_t)k), "in");
    json_t *e = json_is_integer(in) ? json_array_get(json_object_get(node, "inputs"), (size_t)json_integer_value(in)) : NULL;
    if (!e) return NULL;
    return json_pack("[OO]", json_array_get(e, 0), json_array_get(e, 1));
}

static json_t *out_entry(const int *nids, int b) { return json_pack("[ii]", nids[b], 0); }

/* The annotation of one analyzed composite whose bindings are nodes nids[]. */
static json_t *annotation(const char *name, const dc_comp *c, json_t *nodes_doc, const int *nids, uint32_t n) {
    json_t *ann = json_object(), *posts = json_array(), *nodes = json_array();
    json_object_set_new(ann, "composite", json_string(name));
    json_object_set_new(ann, "anchor", json_integer(nids[c->anchor]));
    for (uint32_t i = 0; i < n; i++) json_array_append_new(nodes, json_integer(nids[i]));
    json_object_set_new(ann, "nodes", nodes);
    if (c->perm >= 0) json_object_set_new(ann, "weight", arg_entry(json_array_get(nodes_doc, (size_t)nids[c->perm]), 0));
    for (int i = 0; i < c->spec.npost; i++) {
        const dc_post *p = &c->post[i];
        rt_dnnl_post t = c->spec.post[i];
        json_t *o = json_object();
        json_object_set_new(o, "post", json_string(rt_dnnl_post_name(t)));
        json_object_set_new(o, "out", out_entry(nids, p->out));
        if (p->src_b >= 0) json_object_set_new(o, "src", arg_entry(json_array_get(nodes_doc, (size_t)nids[p->src_b]), p->src_a));
        if (p->mid >= 0) json_object_set_new(o, "mid", out_entry(nids, p->mid));
        if (t == RT_DNNL_AFFINE) {
            json_t *steps = json_array();
            for (int k = 0; k < p->naff; k++) {
                json_t *nd = json_array_get(nodes_doc, (size_t)nids[p->aff_b[k]]);
                const char *op = json_string_value(json_object_get(nd, "name"));
                json_t *q = json_object();
                json_object_set_new(q, "out", out_entry(nids, p->aff_b[k]));
                if (p->aff_lin[k]) {  /* a scalar constant: an eltwise linear */
                    json_object_set_new(q, "op", json_string("linear"));
                    json_object_set_new(q, "alpha", json_real(p->aff_alpha[k]));
                    json_object_set_new(q, "beta", json_real(p->aff_beta[k]));
                } else {
                    json_object_set_new(q, "op", json_string(op ? op + 6 : ""));
                    json_object_set_new(q, "src", arg_entry(nd, p->aff_a[k]));
                }
                json_array_append_new(steps, q);
            }
            json_object_set_new(o, "steps", steps);
        }
        if (rt_dnnl_post_eltwise(t)) {
            json_object_set_new(o, "alpha", json_real(p->alpha));
            json_object_set_new(o, "beta", json_real(p->beta));
        }
        json_array_append_new(posts, o);
    }
    json_object_set_new(ann, "post", posts);
    return ann;
}

/* Annotates the fused composites of region r in its per-op graph document. The per-op
 * serializer emits one kernel node per op call of each composite call, in binding order, so
 * the k-th composite call's ops are the next kernel nodes. */
static gr_status annotate(ir_ctx_t *ctx, const byoc_region *r, json_t *doc, bool debug, gr_diag *diag) {
    json_t *nodes = json_object_get(doc, "nodes");
    size_t nn = json_array_size(nodes);
    int *kern = malloc(sizeof(int) * (nn + 1));
    if (!kern) return gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
    uint32_t nk = 0, pos = 0;
    for (size_t i = 0; i < nn; i++)
        if (!strcmp(op_name(json_array_get(nodes, i)), "kernel")) kern[nk++] = (int)i;
    gr_status st = GR_OK;
    gr_map lam;
    gr_map_init(&lam);
    const ir_seq *s = r->func->body->kind == IR_SEQ ? IR_AS(r->func->body, ir_seq) : NULL;
    for (uint32_t b = 0; s && b < s->nblocks && !st; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n && !st; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            uint64_t v;
            if (bd->value->kind == IR_FUNC) {
                gr_map_put(&lam, GR_MAP_PTR(bd->var), GR_MAP_PTR(bd->value));
                continue;
            }
            if (bd->value->kind != IR_CALL) continue;
            const ir_call *call = IR_AS(bd->value, ir_call);
            if (call->callee->kind == IR_OP) {
                pos++;
                continue;
            }
            if (!gr_map_get(&lam, GR_MAP_PTR(call->callee), &v)) continue;
            const ir_func *f = (const ir_func *)(uintptr_t)v;
            dc_bind bs[DC_MAX_BINDS];
            uint32_t nb = op_bindings(f, bs, DC_MAX_BINDS);
            if (pos + nb > nk) {
                st = gr_diag_set(diag, GR_ERR_INVALID, "dnnl codegen '%s': composites do not line up with the graph's nodes",
                                 r->symbol);
                break;
            }
            const int *nids = kern + pos;
            pos += nb;
            const char *name = ir_attrs_get_str(f->attrs, BYOC_ATTR_COMPOSITE);
            rt_dnnl_composite spec;
            bool quant = dnnl_q_kind_of(name) != DNNL_Q_NONE;
            if (!quant && !rt_dnnl_composite_parse(name, &spec)) continue;
            if (nb > DC_MAX_BINDS) {
                st = gr_diag_set(diag, GR_ERR_UNSUPPORTED, "dnnl codegen '%s': composite %s too large", r->symbol, name);
                break;
            }
            for (uint32_t k = 0; k < nb && !st; k++) {
                const char *nm = json_string_value(json_object_get(json_array_get(nodes, (size_t)nids[k]), "name"));
                if (!nm || ir_op_id_find(nm) != ir_op_id_of(&bs[k].call->base))
                    st = gr_diag_set(diag, GR_ERR_INVALID, "dnnl codegen '%s': composite %s does not line up with node %d",
                                     r->symbol, name, nids[k]);
            }
            if (st) break;
            if (quant) { /* the engine reads a quantized composite from its nodes */
                json_t *ann = json_object(), *ns = json_array();
                json_object_set_new(ann, "composite", json_string(name));
                for (uint32_t k = 0; k < nb; k++) {
                    json_array_append_new(ns, json_integer(nids[k]));
                    json_object_set_new(json_object_get(json_array_get(nodes, (size_t)nids[k]), "attrs"), "dnnl_group",
                                        json_integer(nids[0]));
                }
                json_object_set_new(ann, "nodes", ns);
                json_object_set_new(json_object_get(json_array_get(nodes, (size_t)nids[0]), "attrs"), "dnnl", ann);
                continue;
            }
            dc_comp c;
            const char *why = dc_analyze_func(ctx, &spec, f, bs, nb, &c);
            if (why) {
                /* a composite of this name that our checks did not pass (a user's --patterns
                 * table): its ops run one by one, which is always correct */
                if (debug)
                    fprintf(stderr, "dnnl codegen '%s': composite %s runs op by op: %s\n", r->symbol, name, why);
                continue;
            }
            for (uint32_t k = 0; k < nb; k++)
                json_object_set_new(json_object_get(json_array_get(nodes, (size_t)nids[k]), "attrs"), "dnnl_group",
                                    json_integer(nids[0]));
            json_object_set_new(json_object_get(json_array_get(nodes, (size_t)nids[0]), "attrs"), "dnnl",
                                annotation(name, &c, nodes, nids, nb));
        }
    if (!st && pos != nk)
        st = gr_diag_set(diag, GR_ERR_INVALID, "dnnl codegen '%s': %u kernel nodes, %u ops in composites", r->symbol, nk, pos);
    gr_map_free(&lam);
    free(kern);
    return st;
}

static gr_status build_graph(ir_ctx_t *ctx, const byoc_region *r, bool debug, rt_json_graph **out, gr_diag *diag) {
    char *text = NULL;
    gr_status st = json_cg_serialize(ctx, r, JSON_CG_PER_OP, &text, diag);
    if (st) return st;
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    free(text);
    if (!doc) return gr_diag_set(diag, GR_ERR_INVALID, "dnnl codegen '%s': %s", r->symbol, err.text);
    st = annotate(ctx, r, doc, debug, diag);
    if (st) {
        json_decref(doc);
        return st;
    }
    st = rt_json_graph_load_doc(r->symbol, doc, out, diag);
    if (st) return st;
    uint32_t nc = rt_json_graph_num_consts(*out);
    rt_tensor **ts = calloc(nc + 1, sizeof(*ts));
    if (!ts) st = gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
    for (uint32_t k = 0; k < nc && !st; k++) {
        const char *cn = rt_json_graph_const_name(*out, k);
        for (uint32_t q = 0; q < r->nconsts; q++)
            if (strcmp(r->const_names[q], cn) == 0) ts[k] = r->consts[q]->data;
    }
    if (!st) st = rt_json_graph_init(*out, ts, nc, diag);
    free(ts);
    if (st) {
        rt_json_graph_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- options ---- */

#define DNNL_STR_(x) #x
#define DNNL_STR(x) DNNL_STR_(x)

static const byoc_option DNNL_OPTIONS[] = {
    {"threads", BYOC_OPT_INT, "0", "oneDNN's threads for this model's regions, 0: every CPU the process may use",
     NULL},
    {"bind", BYOC_OPT_BOOL, "1", "pin this model's oneDNN threads one per CPU while its regions run", NULL},
    {"disable", BYOC_OPT_STR, "", "patterns kept off the backend, comma-separated: names without \"dnnl.\" "
     "(nn.conv2d or conv2d, conv2d_bias_relu), or \"composites\" for every fused composite", NULL},
    {"debug", BYOC_OPT_BOOL, "0", "print each region's primitives, arena plan and the composites run op by op "
     "to stderr", NULL},
    {"dump", BYOC_OPT_BOOL, "0", "print each region's JSON graph to stderr when it is prepared", NULL},
    {"denormals", BYOC_OPT_BOOL, "0", "keep denormal floats (default: flushed to zero while a region runs)", NULL},
    {"no_reuse", BYOC_OPT_BOOL, "0", "give every intermediate its own memory instead of a shared arena", NULL},
    {"no_fuse", BYOC_OPT_BOOL, "0", "no post-ops: every op its own primitive", NULL},
    {"no_pixel_deconv", BYOC_OPT_BOOL, "0", "run stride == kernel 2-D transposed convolutions as oneDNN "
     "deconvolutions (default: 1x1 convolution + interleave)", NULL},
    {"deconv_tag", BYOC_OPT_STR, "nhwc", "layout of 2-D transposed convolutions", "nhwc|nchw|any"},
    {"transpose_weights", BYOC_OPT_BOOL, "1", "read constant matmul weights transposed where oneDNN runs gemm:jit "
     "(AVX2) on a widening product (N > K) of 16 to 511 rows on an AMD CPU: up to 1.7x faster there (slower on "
     "Intel's, which keep them in place); the transposed copy "
     "replaces the original after prepare (0: weights read in place)", NULL},
    {"no_layout_plan", BYOC_OPT_BOOL, "0", "each value in the layout its producer picks, every permute a copy "
     "(default: convolutions write channels-last where that makes a permute to NHWC a view, and keep it)", NULL},
    {"winograd", BYOC_OPT_BOOL, "1", "run 3x3 stride-1 convolutions with the Winograd algorithm: oneDNN's where "
     "it has it for the CPU (AVX-512), graft's own below (AVX2) where faster, and graft's own for 3x3x3 ones (AVX2 and up); 0: "
     "the direct algorithm only", NULL},
    {"gemv", BYOC_OPT_BOOL, "1", "run matmuls of one row (a classifier head) with constant weights on graft's own "
     "kernel, the weights read in place (CPUs with AVX2 + FMA); 0: oneDNN's matmul", NULL},
    {"matmul_1x1", BYOC_OPT_BOOL, "1", "run matmuls with constant weights whose rows collapse to one 2-D product as 1x1 "
     "convolutions (jit_1x1, weights packed once, post-ops in the kernel) where oneDNN's matmul is gemm:jit (below "
     "avx512_core) and the convolution takes every post-op: 0.8-0.9 of the time; 0: oneDNN's matmul", NULL},
    {"dw_jit", BYOC_OPT_BOOL, "1", "run depthwise convolutions on oneDNN's jit_dw kernel where it picks "
     "brdgmm_dw (avx512_core): 0.53-0.82 of its time standalone; 0: oneDNN's choice", NULL},
    {"precision", BYOC_OPT_STR, "f32", "bf16: convolutions and matmuls with constant weights in bfloat16 (weights "
     "converted once, float32 accumulation, float32 at the other ops), where oneDNN has AVX512_BF16 or AMX kernels; "
     "float32 elsewhere, with a warning", "f32|bf16"},
    {"small_kb", BYOC_OPT_INT, DNNL_STR(RT_DNNL_SMALL_KB_DEFAULT), "regions whose tensors are all smaller than this many KiB run "
     "single-threaded; 0: never", NULL},
};

/* The engine's options from the backend's. */
static rt_dnnl_opts engine_opts(const byoc_options *o) {
    const byoc_backend *b = &byoc_dnnl_backend;
    static const struct { const char *name; rt_dnnl_deconv_tag tag; } TAGS[] = {
        {"nhwc", RT_DNNL_DECONV_NHWC}, {"nchw", RT_DNNL_DECONV_NCHW}, {"any", RT_DNNL_DECONV_ANY}};
    rt_dnnl_opts r = {
        .debug = byoc_option_bool(o, b, "debug"),
        .dump = byoc_option_bool(o, b, "dump"),
        .denormals = byoc_option_bool(o, b, "denormals"),
        .no_reuse = byoc_option_bool(o, b, "no_reuse"),
        .no_fuse = byoc_option_bool(o, b, "no_fuse"),
        .no_pixel_deconv = byoc_option_bool(o, b, "no_pixel_deconv"),
        .transpose_weights = byoc_option_bool(o, b, "transpose_weights"),
        .no_layout_plan = byoc_option_bool(o, b, "no_layout_plan"),
        .winograd = byoc_option_bool(o, b, "winograd"),
        .gemv = byoc_option_bool(o, b, "gemv"),
        .dw_jit = byoc_option_bool(o, b, "dw_jit"),
        .matmul_1x1 = byoc_option_bool(o, b, "matmul_1x1"),
        .bf16 = !strcmp(byoc_option_str(o, b, "precision"), "bf16"),
        .small_kb = byoc_option_int(o, b, "small_kb"),
        .threads = byoc_option_int(o, b, "threads"),
        .no_bind = !byoc_option_bool(o, b, "bind"),
    };
    const char *tag = byoc_option_str(o, b, "deconv_tag");
    for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++)
        if (strcmp(tag, TAGS[i].name) == 0) r.deconv_tag = TAGS[i].tag;
    return r;
}

gr_status dnnl_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const byoc_options *options,
                          rt_module **out, gr_diag *diag) {
    *out = NULL;
    rt_dnnl_opts eo = engine_opts(options);
    rt_json_graph **graphs = calloc(n + 1, sizeof(*graphs));
    if (!graphs) return gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < n && !st; i++) st = build_graph(ctx, &regions[i], eo.debug, &graphs[i], diag);
    if (st) {
        for (uint32_t i = 0; i < n; i++) rt_json_graph_free(graphs[i]);
        free(graphs);
        return st;
    }
    *out = rt_json_module_new("dnnl", &rt_dnnl_engine, &eo, graphs, n);
    free(graphs);
    return *out ? GR_OK : gr_diag_set(diag, GR_ERR_NOMEM, "dnnl codegen: out of memory");
}

/* Every static region's primitives are built at compile time (RunCodegen calls this after the
 * constants were handed over), so oneDNN rejections surface there naming the region and its
 * layers; the module keeps them for its calls. A region with symbolic dims is built per call
 * shapes, at run time. */
static gr_status dnnl_prepare(rt_module *mod, gr_diag *diag) { return rt_json_module_prepare(mod, diag); }

static gr_status dnnl_load(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *name, void *user),
                           void *user, const byoc_options *opts, rt_module **out, gr_diag *diag) {
    rt_dnnl_opts eo = engine_opts(opts);
    return rt_json_module_load(buf, len, &rt_dnnl_engine, &eo, consts, user, out, diag);
}

const byoc_backend byoc_dnnl_backend = {
    "dnnl",
    "oneDNN: fused composites (conv1d/conv2d/conv2d_transpose/matmul/dense + bias, affine, eltwise, residual add, "
    "broadcast multiply), pools, softmax, norms, eltwise/binary, concat, resize, reduce, strided_slice",
    dnnl_patterns, dnnl_cg_compile, dnnl_load, "dnnl_json", DNNL_OPTIONS, sizeof DNNL_OPTIONS / sizeof DNNL_OPTIONS[0],
    dnnl_prepare};
