/* Fused composites of the oneDNN engine (see dnnl.h): their names, and the primitive with its
 * post-ops built from a composite's name and the codegen's annotation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/dnnl/dnnl_impl.h"
#include "backends/dnnl/dnnl_ops_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"

/* ------------------------------------------------------------------- names ---- */

static const struct {
    const char *name;
    ir_op_id op;
} ANCHORS[RT_DNNL_NANCHORS] = {
    [RT_DNNL_CONV1D] = {"conv1d", IR_OP_CONV1D},
    [RT_DNNL_CONV2D] = {"conv2d", IR_OP_CONV2D},
    [RT_DNNL_CONV2D_TRANSPOSE] = {"conv2d_transpose", IR_OP_CONV2D_TRANSPOSE},
    [RT_DNNL_MATMUL] = {"matmul", IR_OP_MATMUL},
    [RT_DNNL_DENSE] = {"dense", IR_OP_MATMUL},
};

/* name, eltwise post-ops taken, oneDNN algorithm and default alpha / beta (eltwise posts) */
static const struct {
    const char *name;
    int nelt;
    dnnl_alg_kind_t alg;
    float alpha, beta;
} POSTS[RT_DNNL_NPOSTS] = {
    [RT_DNNL_BIAS] = {"bias", 0, dnnl_binary_add, 0.f, 0.f},
    [RT_DNNL_AFFINE] = {"affine", 0, dnnl_binary_mul, 0.f, 0.f},
    [RT_DNNL_RELU] = {"relu", 1, dnnl_eltwise_relu, 0.f, 0.f},
    [RT_DNNL_LEAKY_RELU] = {"leaky_relu", 1, dnnl_eltwise_relu, 0.01f, 0.f},
    [RT_DNNL_RELU6] = {"relu6", 1, dnnl_eltwise_clip_v2, 0.f, 6.f},
    [RT_DNNL_CLIP] = {"clip", 1, dnnl_eltwise_clip_v2, 0.f, 0.f},
    [RT_DNNL_HARDSIGMOID] = {"hardsigmoid", 2, dnnl_eltwise_linear, 0.2f, 0.5f},
    [RT_DNNL_HARDSWISH] = {"hardswish", 1, dnnl_eltwise_hardswish, 0.f, 0.f},
    [RT_DNNL_SIGMOID] = {"sigmoid", 1, dnnl_eltwise_logistic, 0.f, 0.f},
    [RT_DNNL_SWISH] = {"swish", 1, dnnl_eltwise_swish, 1.f, 0.f},
    [RT_DNNL_GELU] = {"gelu", 1, dnnl_eltwise_gelu_erf, 0.f, 0.f},
    [RT_DNNL_GELU_TANH] = {"gelu_tanh", 1, dnnl_eltwise_gelu_tanh, 0.f, 0.f},
    [RT_DNNL_TANH] = {"tanh", 1, dnnl_eltwise_tanh, 0.f, 0.f},
    [RT_DNNL_ELU] = {"elu", 1, dnnl_eltwise_elu, 1.f, 0.f},
    [RT_DNNL_ADD] = {"add", 0, dnnl_binary_add, 0.f, 0.f},
    [RT_DNNL_MUL] = {"mul", 0, dnnl_binary_mul, 0.f, 0.f},
};

const char *rt_dnnl_anchor_name(rt_dnnl_anchor a) { return a < RT_DNNL_NANCHORS ? ANCHORS[a].name : "?"; }
ir_op_id rt_dnnl_anchor_op(rt_dnnl_anchor a) { return a < RT_DNNL_NANCHORS ? ANCHORS[a].op : IR_OP_NONE; }
const char *rt_dnnl_post_name(rt_dnnl_post p) { return p < RT_DNNL_NPOSTS ? POSTS[p].name : "?"; }
int rt_dnnl_post_eltwise(rt_dnnl_post p) { return p < RT_DNNL_NPOSTS ? POSTS[p].nelt : 0; }

/* Length of the longest name of `names` (stride `stride` bytes apart) that s starts with as a
 * whole word (followed by '_' or the end); *which gets its index. */
static size_t word_at(const char *s, const char *const *first, size_t stride, int count, int *which) {
    size_t best = 0;
    for (int i = 0; i < count; i++) {
        const char *nm = *(const char *const *)((const char *)first + stride * (size_t)i);
        size_t l = strlen(nm);
        if (l > best && !strncmp(s, nm, l) && (s[l] == '_' || s[l] == 0)) {
            best = l;
            *which = i;
        }
    }
    return best;
}

bool rt_dnnl_composite_parse(const char *name, rt_dnnl_composite *out) {
    memset(out, 0, sizeof(*out));
    if (!name || strncmp(name, "dnnl.", 5)) return false;
    const char *s = name + 5;
    int a = -1;
    size_t l = word_at(s, &ANCHORS[0].name, sizeof(ANCHORS[0]), RT_DNNL_NANCHORS, &a);
    if (!l) return false;
    out->anchor = (rt_dnnl_anchor)a;
    s += l;
    while (*s == '_') {
        s++;
        int p = -1;
        l = word_at(s, &POSTS[0].name, sizeof(POSTS[0]), RT_DNNL_NPOSTS, &p);
        if (!l || out->npost == RT_DNNL_MAX_POST) return false;
        out->post[out->npost++] = (rt_dnnl_post)p;
        s += l;
    }
    /* a bare anchor ("dnnl.conv2d") is the single-op pattern */
    return *s == 0 && (out->npost > 0 || out->anchor == RT_DNNL_DENSE);
}

/* s appended at buf + k (cut to n bytes with its NUL); the new length */
static size_t name_put(char *buf, size_t n, size_t k, const char *s) {
    size_t l = strlen(s);
    if (k + l >= n) l = k < n ? n - 1 - k : 0;
    memcpy(buf + k, s, l);
    buf[k + l] = '\0';
    return k + l;
}

/* without snprintf: a partition names every pattern of the table (1,100) four times */
char *rt_dnnl_composite_name(const rt_dnnl_composite *c, char *buf, size_t n) {
    if (!n) return buf;
    buf[0] = '\0';
    size_t k = name_put(buf, n, name_put(buf, n, 0, "dnnl."), rt_dnnl_anchor_name(c->anchor));
    for (int i = 0; i < c->npost && k + 1 < n; i++) k = name_put(buf, n, name_put(buf, n, k, "_"), rt_dnnl_post_name(c->post[i]));
    return buf;
}

/* ------------------------------------------------------------------ engine ---- */

json_t *dn_composite_annotation(const rt_json_node *n) { return json_object_get(n->attrs, "dnnl"); }

/* [nid, index] -> entry id, -1 when malformed */
static int ann_entry(dn_state *S, json_t *e) {
    json_t *a = json_array_get(e, 0), *b = json_array_get(e, 1);
    if (!json_is_integer(a) || !json_is_integer(b)) return -1;
    json_int_t nid = json_integer_value(a), idx = json_integer_value(b);
    if (nid < 0 || (uint32_t)nid >= rt_json_graph_num_nodes(S->g)) return -1;
    if (idx < 0 || (uint32_t)idx >= rt_json_graph_node(S->g, (uint32_t)nid)->noutputs) return -1;
    return (int)rt_json_graph_entry_id(S->g, (rt_json_entry){(uint32_t)nid, (uint32_t)idx});
}

static float ann_float(json_t *p, const char *key, float dflt) {
    json_t *v = json_object_get(p, key);
    return json_is_number(v) ? (float)json_number_value(v) : dflt;
}

gr_status dn_emit_step(dn_state *S, const rt_json_node *n, int v, const dn_step *st, int *out) {
    int used;
    return dn_elem_prim(S, n, st, v, NULL, 0, 0, false, out, &used);
}

/* An affine step's binary op, named in the annotation without "relax." ("add"). */
static dnnl_alg_kind_t affine_alg(const char *op) {
    ir_op_id id = ir_op_id_find(op);
    bool ok = id == IR_OP_ADD || id == IR_OP_SUBTRACT || id == IR_OP_MULTIPLY || id == IR_OP_DIVIDE;
    return ok ? dn_binary_alg(id, NULL) : dnnl_alg_kind_undef;
}

static gr_status bad(dn_state *S, const rt_json_node *n, const char *what) {
    return dn_fail(S, n, dnnl_success, what);
}

/* The post-op steps of the annotation. */
static gr_status steps_of(dn_state *S, const rt_json_node *n, const rt_dnnl_composite *c, json_t *posts, dn_step *steps,
                          int *k) {
    *k = 0;
    for (int i = 0; i < c->npost; i++) {
        json_t *p = json_array_get(posts, (size_t)i);
        int out = ann_entry(S, json_object_get(p, "out"));
        if (out < 0) return bad(S, n, "composite annotation: post-op without an output");
        rt_dnnl_post t = c->post[i];
        dn_step st = {0};
        st.out = out;
        st.alg = POSTS[t].alg;
        if (t == RT_DNNL_BIAS || t == RT_DNNL_ADD || t == RT_DNNL_MUL) {
            st.kind = STEP_BINARY;
            st.src1 = ann_entry(S, json_object_get(p, "src"));
            /* a weight kept as its levels: its float32 value, made now */
            if (st.src1 >= 0 && S->ent_val[st.src1] < 0) dn_q_weight_val(S, st.src1);
            if (st.src1 < 0 || S->ent_val[st.src1] < 0) return bad(S, n, "composite annotation: post-op operand has no value");
        } else if (t == RT_DNNL_AFFINE) {
            json_t *sub = json_object_get(p, "steps");
            size_t ns = json_array_size(sub);
            if (!ns || *k + (int)ns > DN_MAX_STEPS) return bad(S, n, "composite annotation: bad affine steps");
            for (size_t j = 0; j < ns; j++) {
                json_t *q = json_array_get(sub, j);
                const char *op = json_string_value(json_object_get(q, "op"));
                dn_step a = {0};
                a.out = ann_entry(S, json_object_get(q, "out"));
                if (op && !strcmp(op, "linear")) {
                    a.kind = STEP_ELTWISE;
                    a.alg = dnnl_eltwise_linear;
                    a.alpha = ann_float(q, "alpha", 1.f);
                    a.beta = ann_float(q, "beta", 0.f);
                } else {
                    a.kind = STEP_BINARY;
                    a.alg = affine_alg(op ? op : "");
                    a.src1 = ann_entry(S, json_object_get(q, "src"));
                    if (a.src1 >= 0 && S->ent_val[a.src1] < 0) dn_q_weight_val(S, a.src1);
                    if (a.alg == dnnl_alg_kind_undef || a.src1 < 0 || S->ent_val[a.src1] < 0)
                        return bad(S, n, "composite annotation: bad affine step");
                }
                if (a.out < 0) return bad(S, n, "composite annotation: affine step without an output");
                steps[(*k)++] = a;
            }
            continue;
        } else {
            st.kind = STEP_ELTWISE;
            st.alpha = ann_float(p, "alpha", POSTS[t].alpha);
            st.beta = ann_float(p, "beta", POSTS[t].beta);
            if (st.alg == dnnl_eltwise_clip_v2 && st.alpha > st.beta) st.alpha = st.beta; /* as ONNX's clip */
            if (t == RT_DNNL_HARDSIGMOID) {
                /* linear (a * x + b) into "mid", then clip to [0, 1] */
                int mid = ann_entry(S, json_object_get(p, "mid"));
                if (mid < 0 || *k + 2 > DN_MAX_STEPS) return bad(S, n, "composite annotation: hardsigmoid without its linear part");
                st.out = mid;
                steps[(*k)++] = st;
                st.alg = dnnl_eltwise_clip_v2;
                st.alpha = 0.f;
                st.beta = 1.f;
                st.out = out;
            }
        }
        if (*k >= DN_MAX_STEPS) return bad(S, n, "composite annotation: too many post-ops");
        steps[(*k)++] = st;
    }
    return GR_OK;
}

/* A linear step after a linear one (an affine's scale and shift) is one post-op. */
static void merge_linears(dn_step *steps, int *k) {
    int m = 0;
    for (int i = 0; i < *k; i++) {
        dn_step *p = m ? &steps[m - 1] : NULL, *q = &steps[i];
        if (p && p->kind == STEP_ELTWISE && q->kind == STEP_ELTWISE && p->alg == dnnl_eltwise_linear &&
            q->alg == dnnl_eltwise_linear) {
            p->beta = q->alpha * p->beta + q->beta;
            p->alpha *= q->alpha;
            p->out = q->out;
            continue;
        }
        steps[m++] = *q;
    }
    *k = m;
}

/* The node whose outputs hold entry e (nn when none). */
static uint32_t entry_node(dn_state *S, int e, uint32_t nn) {
    for (uint32_t nid = 0; nid < nn; nid++) {
        uint32_t lo = rt_json_graph_entry_id(S->g, (rt_json_entry){nid, 0});
        if ((uint32_t)e >= lo && (uint32_t)e < lo + rt_json_graph_node(S->g, nid)->noutputs) return nid;
    }
    return nn;
}

/* Dense's weights: the anchor's second operand is a listed permute_dims of the annotated
 * weight entry w that swaps its last two axes (the engine reads w transposed instead). */
static bool dense_weight_ok(dn_state *S, const rt_json_node *anchor, int w, const bool *listed, bool *covered) {
    int b = dn_arg_entry(S, anchor, 1);
    const rt_json_node *p = b >= 0 ? S->ent_node[b].node : NULL;
    int nd = p ? dn_entry_ndim(S, b) : 0, perm[DNNL_MAX_NDIMS];
    if (!p || p->kind != RT_JSON_KERNEL || p->op != IR_OP_PERMUTE_DIMS || !listed[p - S->node0] ||
        dn_arg_entry(S, p, 0) != w || nd < 2 || nd > DNNL_MAX_NDIMS || !dn_permute_perm(p, nd, perm))
        return false;
    for (int i = 0; i < nd; i++)
        if (perm[i] != (i < nd - 2 ? i : 2 * nd - 3 - i)) return false;
    covered[p - S->node0] = true;
    return true;
}

/* The annotation names what the nodes compute; a graph from a file may say otherwise, and the
 * engine builds what the annotation says. So every node it lists is a kernel node of the
 * graph, and every step writes the output of one of them other than the anchor, each once
 * (the engine stores a step's result in that entry's value, which for a region input or head
 * would be memory of the caller's of another size); each step, from the anchor's output on, is
 * what its nodes compute: their ops, constants (a relu's slope, clip bounds, a hard-sigmoid's
 * slope and offset, hardswish's 3 and 6), operands and shapes, as the engine's own post-op
 * matchers find them (dn_step_proved); and each listed node is the anchor, dense's weight
 * permutation or a node of a step. steps: before linear steps are merged. */
static gr_status steps_agree(dn_state *S, const rt_json_node *first, const rt_json_node *anchor, json_t *nodes, int weight,
                             const dn_step *steps, int k) {
    uint32_t nn = rt_json_graph_num_nodes(S->g);
    bool *listed = calloc(nn + 1, sizeof(bool)), *covered = calloc(nn + 1, sizeof(bool));
    gr_status st = listed && covered ? GR_OK : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    size_t i;
    json_t *x;
    json_array_foreach(nodes, i, x) {
        if (st) break;
        json_int_t nid = json_is_integer(x) ? json_integer_value(x) : -1;
        if (nid < 0 || (uint32_t)nid >= nn || rt_json_graph_node(S->g, (uint32_t)nid)->kind != RT_JSON_KERNEL) {
            st = bad(S, first, "composite annotation: a listed node is not a kernel node of the graph");
            break;
        }
        listed[nid] = true;
    }
    for (int a = 0; !st && a < k; a++) {
        uint32_t nid = entry_node(S, steps[a].out, nn);
        if (nid >= nn || !listed[nid] || rt_json_graph_node(S->g, nid) == anchor)
            st = bad(S, first, "composite annotation: a post-op's output is not one of the composite's own nodes");
        for (int b = 0; !st && b < a; b++)
            if (steps[b].out == steps[a].out) st = bad(S, first, "composite annotation: two post-ops write one output");
    }
    if (!st) covered[anchor - S->node0] = true;
    int cur = dn_out_entry(S, anchor);
    for (int a = 0; !st && a < k; a++) {
        if (!dn_step_proved(S, cur, &steps[a], listed, covered))
            st = bad(S, S->ent_node[steps[a].out].node,
                     "composite annotation: a post-op is not what its nodes compute (its op, constants, operand or shape "
                     "differ)");
        cur = steps[a].out;
    }
    if (!st && weight >= 0 && !dense_weight_ok(S, anchor, weight, listed, covered))
        st = bad(S, anchor, "composite annotation: dense's weights are not the transposed operand of its matmul");
    for (uint32_t nid = 0; !st && nid < nn; nid++)
        if (listed[nid] && !covered[nid])
            st = bad(S, rt_json_graph_node(S->g, nid), "composite annotation: a listed node is in none of its post-ops");
    free(listed);
    free(covered);
    return st;
}

gr_status dn_composite(dn_state *S, const rt_json_node *first, json_t *ann) {
    const char *name = json_string_value(json_object_get(ann, "composite"));
    if (dnnl_q_kind_of(name) != DNNL_Q_NONE) return dn_q_composite(S, first, ann);
    rt_dnnl_composite c;
    if (!rt_dnnl_composite_parse(name, &c)) return bad(S, first, "composite annotation: unknown composite name");
    json_t *posts = json_object_get(ann, "post"), *nodes = json_object_get(ann, "nodes");
    json_t *an = json_object_get(ann, "anchor");
    if (json_array_size(posts) != (size_t)c.npost || !json_is_integer(an) || json_integer_value(an) < 0 ||
        (uint32_t)json_integer_value(an) >= rt_json_graph_num_nodes(S->g) || !json_array_size(nodes))
        return bad(S, first, "composite annotation does not match its name");
    const rt_json_node *anchor = rt_json_graph_node(S->g, (uint32_t)json_integer_value(an));
    if (anchor->kind != RT_JSON_KERNEL || anchor->op != rt_dnnl_anchor_op(c.anchor))
        return bad(S, first, "composite annotation: the anchor is not the composite's primitive");
    dn_step steps[DN_MAX_STEPS];
    int k = 0;
    gr_status st = steps_of(S, first, &c, posts, steps, &k);
    if (st) return st;
    dn_comp comp = {steps, k, -1};
    if (c.anchor == RT_DNNL_DENSE) {
        comp.b = ann_entry(S, json_object_get(ann, "weight"));
        if (comp.b < 0) return bad(S, first, "composite annotation: dense without its weights");
    }
    if ((st = steps_agree(S, first, anchor, nodes, comp.b, steps, k))) return st;
    merge_linears(steps, &k);
    comp.k = k;
    int qused = 0;
    bool qdone = false;
    /* a subtract / multiply dequantizing a weight kept as its levels: nothing built */
    bool weight = !k && dn_q_weight_node(S, anchor);
    if (!weight && (st = dn_q_levels_op(S, anchor, steps, k, &qused, &qdone))) return st;
    if (weight) qdone = true;
    if (!qdone && (st = dn_node(S, anchor, &comp))) return st;
    /* post-ops oneDNN did not take in the primitive (it rejected them, or they would have
     * pushed it onto its reference kernels) run as their own primitives, in order */
    int last = -1;
    for (int i = k - 1; i >= 0 && last < 0; i--)
        if (S->ent_val[steps[i].out] >= 0) last = i;
    /* int8 with every step taken: its result may be only the levels of the quantize that reads
     * it (no float value, dnnl_op_quant.c) */
    bool levels_only = (qdone && qused == k) || weight;
    if (levels_only) last = k - 1;
    int cur = last >= 0 ? steps[last].out : (int)rt_json_graph_entry_id(S->g, (rt_json_entry){(uint32_t)(anchor - S->node0), 0});
    if (!levels_only && S->ent_val[cur] < 0) return bad(S, anchor, "composite produced no value");
    for (int i = last + 1; i < k; i++) {
        int v;
        if ((st = dn_emit_step(S, anchor, S->ent_val[cur], &steps[i], &v))) return st;
        S->ent_val[steps[i].out] = v;
        cur = steps[i].out;
    }
    size_t i;
    json_t *x;
    json_array_foreach(nodes, i, x) {
        json_int_t nid = json_integer_value(x);
        if (nid < 0 || (uint32_t)nid >= rt_json_graph_num_nodes(S->g)) return bad(S, first, "composite annotation: bad node id");
        if (!S->consumed[nid] && rt_json_graph_node(S->g, (uint32_t)nid) != anchor) S->stats.nfused_nodes++;
        S->consumed[nid] = true;
    }
    S->stats.ncomposites++;
    return GR_OK;
}
