/* The oneDNN engine's quantized composites (backends/dnnl/dnnl_q_impl.h), read from their
 * nodes: the codegen's annotation lists them in binding order,
 *     divide, round, [add], clip, astype, astype, [subtract], multiply    (quantize, dequantize)
 *     [conv2d | matmul, [add], [relu | clip]]
 * Quantizing is a oneDNN reorder of float32 into u8 / s8 with the scale 1 / s and the zero
 * point: oneDNN rounds half to even (the CPU's default rounding, as ONNX's) and saturates to
 * the type, as QuantizeLinear; it multiplies by 1 / s where ONNX divides by s, which differs
 * only by an ulp, so only at a rounding tie (the tests count those). Dequantizing is the
 * reverse reorder (src zero point, scale s). */
#include <emmintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_q_build_impl.h"


static gr_status bad(dn_state *S, const rt_json_node *n, const char *what) { return dn_fail(S, n, dnnl_success, what); }

/* The scalar constant operand of binary node n (the second, or either when `either`). */
static bool scalar_arg(dn_state *S, const rt_json_node *n, bool either, float *v) {
    return dn_scalar_const(S, dn_arg_entry(S, n, 1), v) || (either && dn_scalar_const(S, dn_arg_entry(S, n, 0), v));
}

dnnl_data_type_t dn_q_dt(DLDataType t) {
    return t.code == kDLUInt && t.bits == 8 ? dnnl_u8 : t.code == kDLInt && t.bits == 8 ? dnnl_s8 : dnnl_data_type_undef;
}

/* The nodes of the annotation, by their ops in binding order (see the header comment). */
static gr_status read_nodes(dn_state *S, const rt_json_node *first, json_t *ids, dnnl_q_kind kind, q_nodes *q) {
    memset(q, 0, sizeof *q);
    const rt_json_node *ns[16];
    size_t cnt = json_array_size(ids), i = 0;
    uint32_t nn = rt_json_graph_num_nodes(S->g);
    if (cnt < 1 || cnt > 16) return bad(S, first, "quantized composite annotation: wrong number of nodes");
    for (size_t k = 0; k < cnt; k++) {
        json_t *x = json_array_get(ids, k);
        json_int_t id = json_is_integer(x) ? json_integer_value(x) : -1;
        if (id < 0 || (uint32_t)id >= nn || rt_json_graph_node(S->g, (uint32_t)id)->kind != RT_JSON_KERNEL)
            return bad(S, first, "quantized composite annotation: a listed node is not a kernel node of the graph");
        ns[k] = rt_json_graph_node(S->g, (uint32_t)id);
    }
    /* the weights' dequantize (a cast of a constant and the ops on it) out of the chain */
    for (size_t k = 0; (kind == DNNL_Q_CONV2D || kind == DNNL_Q_MATMUL) && k < cnt;) {
        const rt_json_node *n = ns[k];
        int a0 = dn_nargs(n) ? dn_arg_entry(S, n, 0) : -1;
        bool w = n->op == IR_OP_ASTYPE && a0 >= 0 && S->ent_node[a0].node->kind == RT_JSON_CONST;
        for (int j = 0; j < q->nw && !w; j++)
            w = (n->op == IR_OP_SUBTRACT || n->op == IR_OP_MULTIPLY || n->op == IR_OP_PERMUTE_DIMS) && a0 == dn_out_entry(S, q->w[j]);
        if (!w) {
            k++;
            continue;
        }
        if (q->nw == 4) return bad(S, first, "quantized composite annotation: weights of more than four nodes");
        q->w[q->nw++] = n;
        memmove(&ns[k], &ns[k + 1], sizeof(ns[0]) * (cnt - k - 1));
        cnt--;
    }
#define TAKE(field, id) (i < cnt && ns[i]->op == IR_OP_##id ? (q->field = ns[i++]) : NULL)
    const rt_json_node *rnd = NULL;
    bool quant = kind != DNNL_Q_DEQUANT, dequant = kind != DNNL_Q_QUANT, ok = true;
    if (kind == DNNL_Q_MAXPOOL) ok = TAKE(anchor, MAX_POOL2D) != NULL;
    if (kind == DNNL_Q_RESHAPE) ok = TAKE(anchor, RESHAPE) != NULL;
    if (kind == DNNL_Q_CAST) ok = TAKE(dqcast, ASTYPE) != NULL;
    if (kind == DNNL_Q_MAXPOOL || kind == DNNL_Q_RESHAPE || kind == DNNL_Q_CAST) quant = dequant = false;
    if (quant) {
        ok = TAKE(div, DIVIDE) && (rnd = i < cnt && ns[i]->op == IR_OP_ROUND ? ns[i++] : NULL);
        if (ok) TAKE(zp, ADD);
        ok = ok && TAKE(clip, CLIP) && TAKE(qcast, ASTYPE);
    }
    if (ok && dequant) {
        ok = TAKE(dqcast, ASTYPE);
        if (ok) TAKE(dqzp, SUBTRACT);
        ok = ok && TAKE(mul, MULTIPLY);
    }
    if (ok && kind == DNNL_Q_CONV2D) ok = TAKE(anchor, CONV2D) != NULL;
    if (ok && kind == DNNL_Q_MATMUL) ok = TAKE(anchor, MATMUL) != NULL;
    if (ok && (kind == DNNL_Q_CONV2D || kind == DNNL_Q_MATMUL)) {
        TAKE(bias, ADD);
        if (!TAKE(act, RELU)) TAKE(act, CLIP);
    }
#undef TAKE
    if (!ok || i != cnt) return bad(S, first, "quantized composite annotation does not match its nodes");
    /* a chain: each node reads the one before it (a graph from a file may wire them otherwise) */
    for (size_t k = 1; k < cnt; k++) {
        int prev = dn_out_entry(S, ns[k - 1]);
        bool reads = false;
        for (uint32_t a = 0; a < dn_nargs(ns[k]) && !reads; a++) reads = dn_arg_entry(S, ns[k], a) == prev;
        if (!reads) return bad(S, ns[k], "quantized composite annotation: its nodes are not a chain");
    }
    q->last = ns[cnt - 1];
    /* the levels' type: the quantize's result, else the source of the dequantize / op */
    const rt_json_node *src = quant ? NULL : q->dqcast ? q->dqcast : q->anchor;
    int se = src ? dn_arg_entry(S, src, 0) : -1;
    if (quant) q->qt = dn_q_dt(q->qcast->dtypes[0]);
    else if (se >= 0) q->qt = dn_q_dt(S->ent_node[se].node->dtypes[S->ent_node[se].index]);
    if (q->qt == dnnl_data_type_undef) return bad(S, first, "quantized type other than uint8 / int8");
    if (q->anchor && !quant && dn_q_dt(q->anchor->dtypes[0]) != q->qt) return bad(S, q->anchor, "result of another type than its levels");
    if (kind == DNNL_Q_CAST && !(q->dqcast->dtypes[0].code == kDLFloat && q->dqcast->dtypes[0].bits == 32))
        return bad(S, q->dqcast, "cast of levels to a type other than float32");
    double lo = q->qt == dnnl_u8 ? 0 : -128, hi = q->qt == dnnl_u8 ? 255 : 127, clo, chi;
    if (quant && (!dn_arg_num(q->clip, 1, &clo) || !dn_arg_num(q->clip, 2, &chi) || clo != lo || chi != hi))
        return bad(S, q->clip, "quantize saturating to a range other than its type's");
    if ((quant && (!scalar_arg(S, q->div, false, &q->s) || !(q->s > 0.f))) ||
        (dequant && (!scalar_arg(S, q->mul, true, &q->dq_s) || !(q->dq_s > 0.f))))
        return bad(S, first, "quantization scales are not positive scalar constants");
    if ((q->zp && !scalar_arg(S, q->zp, true, &q->zpv)) || (q->dqzp && !scalar_arg(S, q->dqzp, false, &q->dq_zpv)) ||
        q->zpv != nearbyintf(q->zpv) || q->dq_zpv != nearbyintf(q->dq_zpv) || q->zpv < lo || q->zpv > hi || q->dq_zpv < lo ||
        q->dq_zpv > hi)
        return bad(S, first, "zero points are not whole scalar constants in the type's range");
    if (quant && dequant && q->anchor && (q->s != q->dq_s || q->zpv != q->dq_zpv))
        return bad(S, q->div, "the dequantize's scale / zero point differ from the quantize's");
    return GR_OK;
}

/* An attr with a user scratchpad (the engine's one arena), output scales and a zero point. */
dnnl_status_t dn_q_make_attr(dnnl_primitive_attr_t *a, dnnl_dim_t nsc, int mask, const float *sc, int zp_arg, int32_t zp) {
    dnnl_status_t ds = dnnl_primitive_attr_create(a);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_scratchpad_mode(*a, dnnl_scratchpad_mode_user);
    if (ds == dnnl_success && nsc) ds = dnnl_primitive_attr_set_output_scales(*a, nsc, mask, sc);
    if (ds == dnnl_success && zp) ds = dnnl_primitive_attr_set_zero_points(*a, zp_arg, 1, 0, &zp);
    return ds;
}


/* One reorder of value v into md `to` with scale and zero point (zp_arg: DNNL_ARG_SRC or
 * DNNL_ARG_DST); *out: the new value. */
static gr_status reorder1(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *to, float scale, int zp_arg,
                          int32_t zp, bool own, int *out) {
    dnnl_primitive_attr_t a = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dn_q_make_attr(&a, 1, 0, &scale, zp_arg, zp);
    if (ds == dnnl_success) ds = dnnl_reorder_primitive_desc_create(&pd, &S->vals.data[v].md, S->eng, to, S->eng, a);
    dnnl_primitive_attr_destroy(a);
    if (ds != dnnl_success) return dn_fail(S, n, ds, zp_arg == DNNL_ARG_DST ? "cannot quantize" : "cannot dequantize");
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    else S->ref_why = "oneDNN has no jit reorder with scales / zero points for these layouts";
    int nv = dn_val_new(S, V_TMP, to);
    dn_arg args[2] = {{DNNL_ARG_FROM, v, S->vals.data[v].md, NULL}, {DNNL_ARG_TO, nv, *to, NULL}};
    gr_status st = dn_emit(S, n, pd, args, 2, !own);
    *out = nv;
    return st;
}

/* Reorder of value v into md `to` with scale and zero point (zp_arg: DNNL_ARG_SRC when
 * dequantizing, DNNL_ARG_DST when quantizing); *out: the new value. own: a primitive of the
 * composite's own (it takes the nodes folded so far), else a reorder serving the next one.
 * oneDNN quantizes as round(x * scale + zp), ONNX as round(x / s) + zp: the same for an even
 * zero point, but a tie goes to the other neighbour with an odd one (half to even is not
 * shift-invariant by odd amounts). So an odd zero point is added after rounding, exactly, in
 * a second reorder from int32. */
static gr_status scaled_reorder(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *to, float scale,
                                int zp_arg, int32_t zp, bool own, int *out) {
    if (zp_arg != DNNL_ARG_DST || !(zp & 1)) return reorder1(S, n, v, to, scale, zp_arg, zp, own, out);
    dnnl_memory_desc_t imd;
    dn_q_dense_like(to, dnnl_s32, &imd);
    int iv;
    gr_status st = reorder1(S, n, v, &imd, scale, zp_arg, 0, false, &iv);
    return st ? st : reorder1(S, n, iv, to, 1.f, zp_arg, zp, own, out);
}

/* A dense tensor of md's dims in md's layout (md may be a view: a strided slice, an offset
 * into a larger buffer), plain when that layout is none dn_md_like knows, of type dt. The
 * levels keep their source's layout: oneDNN 2.6's reorder of channels-last float32 into plain
 * u8 with a zero point writes wrong values (every other pair of layouts is right). */
void dn_q_dense_like(const dnnl_memory_desc_t *md, dnnl_data_type_t dt, dnnl_memory_desc_t *out) {
    /* dn_md_like knows float32 layouts; strides count elements, so a layout is one whatever
     * the type */
    dnnl_memory_desc_t f = *md;
    f.data_type = dnnl_f32;
    if (!dn_md_like(out, &f, f.ndims, f.dims)) dn_plain_like(out, &f);
    out->data_type = dt;
}

static const dn_qlevels *qent_of(const dn_state *S, int e);
gr_status dn_q_pool_levels(dn_state *S, const rt_json_node *n, int xv, dnnl_data_type_t qt, int *out);

/* A quantize -> dequantize pair: two reorders (f32 -> u8 / s8 -> f32) in the input's layout,
 * the first left out when an int8 primitive wrote the levels (qent_of); the result into entry
 * out. */
static gr_status build_qdq(dn_state *S, const q_nodes *q, int out) {
    int xe = dn_arg_entry(S, q->div, 0), xv = -1, qv, ov;
    const dn_qlevels *in = qent_of(S, xe);
    if (!in) in = dn_q_lut_levels(S, q->div, q->s, q->zpv, q->qt, xe);
    gr_status st = in ? GR_OK : dn_need_val(S, q->div, xe, &xv);
    if (st) return st;
    dnnl_memory_desc_t md, qmd;
    if (in) {
        qv = in->levels;
        gr_vec_push(&S->pend, q->div);
    } else {
        dn_q_dense_like(&S->vals.data[xv].md, q->qt, &qmd);
        if ((st = scaled_reorder(S, q->div, xv, &qmd, (float)(1.0 / q->s), DNNL_ARG_DST, (int32_t)q->zpv, true, &qv))) return st;
    }
    dn_q_dense_like(&S->vals.data[qv].md, dnnl_f32, &md);
    if ((st = scaled_reorder(S, q->mul, qv, &md, q->dq_s, DNNL_ARG_SRC, (int32_t)q->dq_zpv, true, &ov))) return st;
    S->ent_val[out] = ov;
    /* a convolution reading ov may read the levels instead (dn_q_levels_op) */
    gr_vec_push(&S->qlevels, ((dn_qlevels){ov, qv, q->dq_s, (int32_t)q->dq_zpv, q->qt}));
    return GR_OK;
}

/* The data of constant entry e (float32) with n elements, or NULL. */
const float *dn_q_const_f32(dn_state *S, int e, int64_t n) {
    if (e < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || !dn_entry_f32(S, e) || S->ent_val[e] < 0) return NULL;
    int v = S->ent_val[e];
    if (dnnl_memory_desc_get_size(&S->vals.data[v].md) != (size_t)n * sizeof(float) || !dn_is_plain(&S->vals.data[v].md))
        return NULL;
    return dn_const_data(S, v);
}

typedef struct q_anchor {
    int64_t C;                    /* output channels / columns */
    int64_t outer, inner;         /* the weights as [outer][C][inner] */
    int wnd;
    dnnl_dims_t wdims;            /* the weights as oneDNN sees them */
} q_anchor;

/* oneDNN's int8 kernels sum u8 x s8 products exactly with VNNI (or AMX): below it, pairs of
 * products meet in a saturating 16-bit add (vpmaddubsw), which ORT-quantized weights (up to
 * 127 levels) overflow. There a composite runs in float32 on the same levels (build_float),
 * unless its weights fit in 7 bits (int8_exact_for). */
static bool exact_int8(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_vnni || isa == dnnl_cpu_isa_avx512_core_bf16 ||
           isa == dnnl_cpu_isa_avx512_core_amx || isa == dnnl_cpu_isa_avx2_vnni;
}

/* Whether anchor n (convolution / matmul with constant weights on an int8 grid) sums exactly
 * on int8 with a source of type qt: always with VNNI / AMX; below it when the source is u8 and
 * the convolution is depthwise (one input and one output channel per group: oneDNN's kernel
 * widens each product to 32 bits, no pair sums), or every weight level is within [-64, 64]
 * (ORT's quantizer with reduce_range: 255 * 64 * 2 < 32768, so vpmaddubsw's 16-bit pair sums
 * cannot saturate; an s8 source is shifted to u8 by oneDNN with its weights halved, which
 * rounds, depthwise too). */
bool dn_q_int8_exact_for(dn_state *S, const rt_json_node *n, dnnl_data_type_t qt) {
    if (exact_int8()) return true;
    int we = dn_arg_entry(S, n, 1), nd = we >= 0 ? dn_entry_ndim(S, we) : 0;
    if (qt != dnnl_u8 || (nd != 4 && nd != 2)) return false;
    const int64_t *ws = dn_entry_shape(S, we);
    if (n->op == IR_OP_CONV2D && nd == 4 && ws[1] == 1 && dn_attr_int(n, "groups", 1) == ws[0]) return true;
    /* the weights as [outer][C][inner]: OIHW (1, O, I*H*W), matmul K x N (K, N, 1) */
    int64_t outer = nd == 4 ? 1 : ws[0], C = nd == 4 ? ws[0] : ws[1], inner = nd == 4 ? ws[1] * ws[2] * ws[3] : 1;
    bool pt;
    int lvv = dn_q_weight_int8(S, we, nd == 4 ? 0 : 1, C, NULL, &pt);
    if (lvv >= 0) {
        const int8_t *l = dn_const_data(S, lvv);
        if (!l) return false;
        for (int64_t i = 0; i < outer * C * inner; i++)
            if (l[i] < -64 || l[i] > 64) return false;
        return true;
    }
    const float *w = dn_q_const_f32(S, we, outer * C * inner);
    int8_t *q = w ? malloc((size_t)(outer * C * inner)) : NULL;
    float *sc = q ? malloc(sizeof(float) * (size_t)C) : NULL;
    bool ok = sc && dnnl_q_weights(w, outer, C, inner, q, sc, &pt);
    for (int64_t i = 0; ok && i < outer * C * inner; i++) ok = q[i] >= -64 && q[i] <= 64;
    free(q);
    free(sc);
    return ok;
}

/* Below VNNI, a convolution / matmul of a u8 source whose weights need 8 bits: split
 * (split_pds), two int8 primitives, each about as fast as oneDNN's float32 direct kernel at
 * AVX2. A convolution runs in float32 instead (build_float) where that is faster at a cost in
 * memory the peers' int8 one stays below: graft's Winograd F(4x4) (its transformed weights 16x
 * the int8 bytes; resnet18's 64-64 @56 at one thread: 2 x 1.05 ms split, 1.05 ms F(4x4); the
 * 256-256 @14 in F(2x2) would save 0.8 ms each for 4.2 MiB more), or fewer than 8 input
 * channels per group (a stem: int8 pads them to 4; resnet18's 7x7 3 -> 64: 2 x 1.9 ms split,
 * 2.0 ms float32). */
bool dn_q_split_for(dn_state *S, const rt_json_node *n, dnnl_data_type_t qt) {
    if (exact_int8() || qt != dnnl_u8 || (n->op != IR_OP_CONV2D && n->op != IR_OP_MATMUL)) return false;
    int w = dn_arg_entry(S, n, 1);
    if (n->op != IR_OP_CONV2D || w < 0 || dn_entry_ndim(S, w) != 4) return true;
    return dn_conv_wino_tile(S, n) != 4 && dn_entry_shape(S, w)[1] >= 8;
}

/* convolution descriptor (src x, weights of type wt, bias b, dst of type dt) and the weights'
 * shape */
static gr_status conv_desc(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *x, dnnl_data_type_t wt,
                           const dnnl_memory_desc_t *b, dnnl_data_type_t dt, dnnl_convolution_desc_t *d, q_anchor *qa) {
    int we = dn_arg_entry(S, n, 1), xe = dn_arg_entry(S, n, 0);
    if (we < 0 || xe < 0 || dn_entry_ndim(S, we) != 4 || dn_entry_ndim(S, xe) != 4 || n->ndims[0] != 4)
        return bad(S, n, "quantized convolution of other than 4-D tensors");
    const int64_t *ws = dn_entry_shape(S, we), *xs = dn_entry_shape(S, xe), *os = n->shapes[0];
    int64_t G = dn_attr_int(n, "groups", 1), strides[2] = {1, 1}, dil[2] = {1, 1}, pad[4] = {0, 0, 0, 0};
    if (dn_attr_ints(n, "strides", strides, 2) == 1) strides[1] = strides[0];
    if (dn_attr_ints(n, "dilation", dil, 2) == 1) dil[1] = dil[0];
    int c = dn_attr_ints(n, "padding", pad, 4);
    if (c == 1) pad[1] = pad[2] = pad[3] = pad[0];
    else if (c == 2) {
        pad[2] = pad[0];
        pad[3] = pad[1];
    }
    int64_t O = ws[0], I = xs[1];
    if (G <= 0 || O % G || I % G || ws[1] * G != I) return bad(S, n, "groups do not divide the channels");
    qa->C = O;
    qa->outer = 1;
    qa->inner = ws[1] * ws[2] * ws[3];
    qa->wnd = 0;
    if (G > 1) qa->wdims[qa->wnd++] = G;
    qa->wdims[qa->wnd++] = O / G;
    for (int i = 1; i < 4; i++) qa->wdims[qa->wnd++] = ws[i];
    dnnl_memory_desc_t wany, dany;
    dnnl_memory_desc_init_by_tag(&wany, qa->wnd, qa->wdims, wt, dnnl_format_tag_any);
    dnnl_dims_t od = {os[0], os[1], os[2], os[3]}, s = {strides[0], strides[1]}, dl = {dil[0] - 1, dil[1] - 1};
    dnnl_dims_t pl = {pad[0], pad[1]}, pr = {pad[2], pad[3]};
    dnnl_memory_desc_init_by_tag(&dany, 4, od, dt, dnnl_format_tag_any);
    dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(d, dnnl_forward_inference, dnnl_convolution_direct, x, &wany,
                                                                  b, &dany, s, dl, pl, pr);
    return ds == dnnl_success ? GR_OK : dn_fail(S, n, ds, "invalid quantized convolution");
}


/* The weights' levels and scales, the output scales s * ws[c] and the bias in the
 * accumulator's units (oneDNN 2.6: the s32 sum plus the bias, times the output scale). */
typedef struct q_consts {
    int8_t *lv;
    int lvv;                      /* >= 0: the levels are this constant value (lv NULL) */
    float *ws, *osc, *bias;
    float *rsc;                   /* osc / s of the quantize the result goes to (requant_of) */
    bool per_tensor;
} q_consts;

static void consts_free(q_consts *k) {
    free(k->lv);
    free(k->ws);
}

static gr_status build_split(dn_state *S, const q_job *j, const q_anchor *qa, q_consts *k);

/* The weights (entry we: kept as levels, else a float32 constant on an int8 grid) as levels
 * and scales, and the scales and bias derived from them. */
static gr_status read_consts(dn_state *S, const q_job *j, const q_anchor *qa, int we, q_consts *k) {
    int64_t nw = qa->outer * qa->C * qa->inner;
    k->ws = malloc(sizeof(float) * (size_t)qa->C * 4 + 1);
    if (!k->ws) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    k->osc = k->ws + qa->C;
    k->bias = k->osc + qa->C;
    k->rsc = k->bias + qa->C;
    k->lvv = dn_q_weight_int8(S, we, j->kind == DNNL_Q_CONV2D ? 0 : 1, qa->C, k->ws, &k->per_tensor);
    if (k->lvv < 0) {
        const float *w = dn_q_const_f32(S, we, nw);
        if (!w) return bad(S, j->n, "quantized weights are not a plain float32 constant");
        if (!(k->lv = malloc((size_t)nw + 1))) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
        if (!dnnl_q_weights(w, qa->outer, qa->C, qa->inner, k->lv, k->ws, &k->per_tensor))
            return bad(S, j->n, "weights are not symmetric int8 levels times a per-tensor or per-channel scale");
    }
    for (int64_t c = 0; c < qa->C; c++) k->osc[c] = (float)((double)j->s * k->ws[c]);
    for (int64_t c = 0; j->bias && c < qa->C; c++) k->bias[c] = (float)((double)j->bias[c] / k->osc[c]);
    return GR_OK;
}

typedef union q_desc {
    dnnl_convolution_desc_t c;
    dnnl_matmul_desc_t m;
} q_desc;

/* The convolution / matmul descriptor of job j with a dst of type dt, the weights' shape and
 * the bias md. */
static gr_status int8_desc(dn_state *S, const q_job *j, dnnl_data_type_t dt, q_desc *desc, q_anchor *qa,
                           dnnl_memory_desc_t *bmd) {
    const rt_json_node *n = j->n;
    int we = dn_arg_entry(S, n, 1), xe = dn_arg_entry(S, n, 0);
    int nd = j->kind == DNNL_Q_CONV2D ? 4 : 2;
    if (xe < 0 || we < 0 || dn_entry_ndim(S, xe) != nd || n->ndims[0] != nd)
        return bad(S, n, "quantized operand of an unexpected rank");
    const int64_t *xs = dn_entry_shape(S, xe);
    dnnl_dims_t xd;
    for (int i = 0; i < nd; i++) xd[i] = xs[i];
    dnnl_memory_desc_t xany;
    dnnl_memory_desc_init_by_tag(&xany, nd, xd, j->qt, dnnl_format_tag_any);
    if (j->kind == DNNL_Q_CONV2D) {
        dnnl_dims_t bd = {n->shapes[0][1]};
        dnnl_memory_desc_init_by_tag(bmd, 1, bd, dnnl_f32, dnnl_a);
        return conv_desc(S, n, &xany, dnnl_s8, j->bias ? bmd : NULL, dt, &desc->c, qa);
    }
    if (dn_entry_ndim(S, we) != 2 || n->ndims[0] != 2) return bad(S, n, "quantized matmul of other than 2-D operands");
    const int64_t *ws = dn_entry_shape(S, we);
    *qa = (q_anchor){ws[1], ws[0], 1, 2, {ws[0], ws[1]}};
    dnnl_dims_t bd = {1, ws[1]}, od = {n->shapes[0][0], n->shapes[0][1]};
    dnnl_memory_desc_t wany, dany;
    dnnl_memory_desc_init_by_tag(bmd, 2, bd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&wany, 2, qa->wdims, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dany, 2, od, dt, dnnl_format_tag_any);
    dnnl_status_t ds = dnnl_matmul_desc_init(&desc->m, &xany, &wany, j->bias ? bmd : NULL, &dany);
    return ds == dnnl_success ? GR_OK : dn_fail(S, n, ds, "invalid quantized matmul");
}

/* The quantize that alone reads entry e when it starts a quantized composite (its divide):
 * its nodes into *q. An int8 primitive that computes e writes that quantize's levels instead
 * of e (requantization folded into its output scales and dst zero point), and the composite
 * reads them (qent_of). */
bool dn_q_requant_of(dn_state *S, int e, q_nodes *q) {
    if (e < 0 || S->is_head[e] || S->slot_root[e] >= 0 || S->cons[e].len != 1) return false;
    const rt_json_node *c = S->cons[e].data[0], *first = c;
    /* the annotation is on the composite's first node (its weights' cast may come first) */
    json_t *grp = json_object_get(c->attrs, "dnnl_group");
    if (json_is_integer(grp) && json_integer_value(grp) >= 0 && (uint32_t)json_integer_value(grp) < rt_json_graph_num_nodes(S->g))
        first = rt_json_graph_node(S->g, (uint32_t)json_integer_value(grp));
    json_t *ann = dn_composite_annotation(first);
    dnnl_q_kind kind = dnnl_q_kind_of(json_string_value(json_object_get(ann, "composite")));
    if (kind == DNNL_Q_NONE || c->op != IR_OP_DIVIDE || dn_arg_entry(S, c, 0) != e) return false;
    /* a composite read_nodes rejects fails with its message when it is built */
    gr_diag quiet = {0}, *keep = S->diag;
    S->diag = &quiet;
    gr_status st = read_nodes(S, first, json_object_get(ann, "nodes"), kind, q);
    S->diag = keep;
    return st == GR_OK && q->div == c;
}

/* The levels an int8 primitive wrote for entry e (requant_of), or NULL. */
static const dn_qlevels *qent_of(const dn_state *S, int e) {
    for (uint32_t i = 0; i < S->qents.len; i++)
        if (S->qents.data[i].val == e) return &S->qents.data[i];
    return NULL;
}

/* The primitive descriptor of job j (NULL when oneDNN has none): float32 dst, or with rq the
 * levels of quantize rq (scales osc / s, rq's zero point, clip bounds in its units). */
static gr_status int8_pd(dn_state *S, const q_job *j, const q_consts *k, const q_nodes *rq, dnnl_primitive_desc_t *pd,
                         dnnl_status_t *dsp) {
    q_desc desc;
    q_anchor qa = {0};
    dnnl_memory_desc_t bmd;
    *pd = NULL;
    gr_status st = int8_desc(S, j, rq ? rq->qt : dnnl_f32, &desc, &qa, &bmd);
    if (st) return st;
    dnnl_primitive_attr_t attr = NULL;
    float d = rq ? rq->s : 1.f;
    dnnl_status_t ds = dn_q_make_attr(&attr, k->per_tensor ? 1 : qa.C, k->per_tensor ? 0 : 2, rq ? k->rsc : k->osc, DNNL_ARG_SRC, j->zp);
    int32_t dzp = rq ? (int32_t)rq->zpv : 0;
    if (ds == dnnl_success && dzp) ds = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &dzp);
    if (ds == dnnl_success && j->npost) {
        dnnl_post_ops_t po;
        ds = dnnl_post_ops_create(&po);
        for (int i = 0; i < j->npost && ds == dnnl_success; i++) {
            bool clip = j->alg[i] == dnnl_eltwise_clip_v2;
            ds = dnnl_post_ops_append_eltwise(po, 1.f, j->alg[i], clip ? j->alpha[i] / d : j->alpha[i], clip ? j->beta[i] / d : j->beta[i]);
        }
        if (ds == dnnl_success) ds = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    if (ds == dnnl_success) ds = dnnl_primitive_desc_create(pd, &desc, attr, S->eng, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) *pd = NULL;
    *dsp = ds;
    return GR_OK;
}

/* Below VNNI a u8 source times 8-bit weights overflows vpmaddubsw's 16-bit pair sums (see
 * exact_int8). A convolution then runs as two int8 ones on the halves of its source x = 2 h + l,
 * h = x >> 1 in [0, 127] and l = x & 1 (zero points with zp = 2 zh + zl, so that
 * x - zp = 2 (h - zh) + (l - zl) and padding stays zero in both), whose pair sums fit
 * (127 * 128 * 2 < 32768): the first (l) writes float32, the second (h, its output scales
 * doubled, the bias halved) adds onto it (a sum post-op) before the activation. With rq (the
 * quantize that alone reads the result, requant_of) the second writes that quantize's levels
 * instead, as build_int8 does, and adds the first's float32 result (in the levels' units, k's
 * rsc) as a binary post-op: the quantize's reorder of a float32 result is saved. Both read the
 * one int8 copy of the weights. The primitive descriptors (NULL, GR_OK: oneDNN has no jit
 * kernels for them) into *pa, *pb; the layouts both share. */
static gr_status split_pds(dn_state *S, const q_job *j, const q_consts *k, const q_nodes *rq, dnnl_primitive_desc_t *pa,
                           dnnl_primitive_desc_t *pb, dnnl_memory_desc_t *bmd) {
    q_desc da, db;
    q_anchor qa = {0};
    dnnl_memory_desc_t bmd2;
    q_job ja = *j;
    ja.bias = NULL;
    ja.npost = 0;
    *pa = *pb = NULL;
    gr_status st = int8_desc(S, j, rq ? rq->qt : dnnl_f32, &db, &qa, bmd);
    if (!st) st = int8_desc(S, &ja, dnnl_f32, &da, &qa, &bmd2);
    float *two = st ? NULL : malloc(sizeof(float) * (size_t)qa.C);
    if (st || !two) return st ? st : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    const float *sc = rq ? k->rsc : k->osc;
    for (int64_t c = 0; c < qa.C; c++) two[c] = 2.f * sc[c];
    dnnl_dim_t nsc = k->per_tensor ? 1 : qa.C;
    int mask = k->per_tensor ? 0 : 2;
    float d = rq ? rq->s : 1.f;
    int32_t dzp = rq ? (int32_t)rq->zpv : 0;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    /* both with a zero point or neither (it adds a compensation to the weights' layout):
     * zl in {-2, -1} when zp is not 0 */
    int32_t zl = j->zp ? (j->zp & 1) - 2 : 0, zh = (j->zp - zl) / 2;
    /* with rq: the first's result in the layout oneDNN picks for the levels (from a probe
     * without post-ops) */
    dnnl_memory_desc_t lmd;
    dnnl_status_t ds = dnnl_success;
    if (rq) {
        dnnl_primitive_desc_t probe = NULL;
        ds = dn_q_make_attr(&attr, nsc, mask, two, DNNL_ARG_SRC, zh);
        if (ds == dnnl_success) ds = dnnl_primitive_desc_create(&probe, &db, attr, S->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        attr = NULL;
        if (ds == dnnl_success) {
            lmd = *dnnl_primitive_desc_query_md(probe, dnnl_query_dst_md, 0);
            lmd.data_type = dnnl_f32;
            if (j->kind == DNNL_Q_CONV2D) db.c.dst_desc = *dnnl_primitive_desc_query_md(probe, dnnl_query_dst_md, 0);
            else db.m.dst_desc = *dnnl_primitive_desc_query_md(probe, dnnl_query_dst_md, 0);
            dnnl_primitive_desc_destroy(probe);
        }
    }
    if (ds == dnnl_success) ds = dn_q_make_attr(&attr, nsc, mask, two, DNNL_ARG_SRC, zh);
    free(two);
    if (ds == dnnl_success && dzp) ds = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &dzp);
    if (ds == dnnl_success) ds = dnnl_post_ops_create(&po);
    if (ds == dnnl_success) ds = rq ? dnnl_post_ops_append_binary(po, dnnl_binary_add, &lmd) : dnnl_post_ops_append_sum(po, 1.f);
    for (int i = 0; i < j->npost && ds == dnnl_success; i++) {
        bool clip = j->alg[i] == dnnl_eltwise_clip_v2;
        ds = dnnl_post_ops_append_eltwise(po, 1.f, j->alg[i], clip ? j->alpha[i] / d : j->alpha[i], clip ? j->beta[i] / d : j->beta[i]);
    }
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_post_ops(attr, po);
    if (ds == dnnl_success) ds = dnnl_primitive_desc_create(pb, &db, attr, S->eng, NULL);
    if (ds != dnnl_success) *pb = NULL;
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    attr = NULL;
    if (ds == dnnl_success && !dn_pd_is_ref(*pb)) {
        dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(*pb, dnnl_query_dst_md, 0);
        if (rq) dmd.data_type = dnnl_f32;
        if (j->kind == DNNL_Q_CONV2D) da.c.dst_desc = dmd;
        else da.m.dst_desc = dmd;
        ds = dn_q_make_attr(&attr, nsc, mask, sc, DNNL_ARG_SRC, zl);
        if (ds == dnnl_success) ds = dnnl_primitive_desc_create(pa, &da, attr, S->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        if (ds != dnnl_success) *pa = NULL;
    }
    /* both jit, reading the source and the weights in one layout, the first writing what the
     * second adds */
    bool ok = *pa && !dn_pd_is_ref(*pa) && *pb && !dn_pd_is_ref(*pb);
    static const dnnl_query_t same[2] = {dnnl_query_src_md, dnnl_query_weights_md};
    for (int q = 0; q < 2 && ok; q++)
        ok = dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(*pa, same[q], 0), dnnl_primitive_desc_query_md(*pb, same[q], 0));
    if (ok && rq) ok = dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(*pa, dnnl_query_dst_md, 0), &lmd);
    if (ok && !rq)
        ok = dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(*pa, dnnl_query_dst_md, 0),
                                    dnnl_primitive_desc_query_md(*pb, dnnl_query_dst_md, 0));
    if (!ok) {
        if (*pa) dnnl_primitive_desc_destroy(*pa);
        if (*pb) dnnl_primitive_desc_destroy(*pb);
        *pa = *pb = NULL;
    }
    return GR_OK;
}

/* Whether job j can run split (split_pds has jit kernels for it). */
bool dn_q_split_ok(dn_state *S, const q_job *j) {
    int we = dn_arg_entry(S, j->n, 1);
    q_desc desc;
    q_anchor qa = {0};
    dnnl_memory_desc_t bmd;
    q_consts k = {0};
    dnnl_primitive_desc_t pa = NULL, pb = NULL;
    gr_diag quiet = {0}, *keep = S->diag;
    S->diag = &quiet;
    bool ok = !int8_desc(S, j, dnnl_f32, &desc, &qa, &bmd) && !read_consts(S, j, &qa, we, &k) && !split_pds(S, j, &k, NULL, &pa, &pb, &bmd) && pa;
    S->diag = keep;
    consts_free(&k);
    if (pa) dnnl_primitive_desc_destroy(pa);
    if (pb) dnnl_primitive_desc_destroy(pb);
    return ok;
}

/* dn_emit_fn of split sources: the halves h = x >> 1 and l = x & 1 of every byte of the u8
 * source (ctx: its bytes, padding included; zeros stay zeros) */
static dnnl_status_t split_src(void *ctx, void *const *ptrs) {
    size_t nb = *(const size_t *)ctx, i = 0;
    const uint8_t *x = ptrs[0];
    uint8_t *h = ptrs[1], *l = ptrs[2];
    const __m128i m7 = _mm_set1_epi8(0x7f), m1 = _mm_set1_epi8(1);
    for (; i + 16 <= nb; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(x + i));
        _mm_storeu_si128((__m128i *)(h + i), _mm_and_si128(_mm_srli_epi16(v, 1), m7));
        _mm_storeu_si128((__m128i *)(l + i), _mm_and_si128(v, m1));
    }
    for (; i < nb; i++) {
        h[i] = (uint8_t)(x[i] >> 1);
        l[i] = (uint8_t)(x[i] & 1);
    }
    return dnnl_success;
}

/* The weights of job j as an int8 value in the primitive's dims: a view of kept levels, or an
 * engine-owned copy of those recovered from float32 (k->lv). */
static int weight_levels(dn_state *S, const q_anchor *qa, const q_consts *k) {
    dnnl_memory_desc_t wuser;
    dnnl_memory_desc_init_by_strides(&wuser, qa->wnd, qa->wdims, dnnl_s8, NULL);
    /* levels kept as such: a view of their constant in the primitive's dims, reordered from
     * there (the constant is let go once read, dnnl_engine.c's const_settle) */
    const dnnl_memory_desc_t *lmd = k->lvv >= 0 ? &S->vals.data[k->lvv].md : NULL;
    bool same = lmd && lmd->ndims == qa->wnd && !memcmp(lmd->dims, qa->wdims, sizeof(int64_t) * (size_t)qa->wnd);
    return same ? k->lvv : k->lvv >= 0 ? dn_alias_new(S, k->lvv, &wuser) : dn_q_owned_val(S, &wuser, k->lv);
}

static gr_status build_split(dn_state *S, const q_job *j, const q_anchor *qa, q_consts *k) {
    const rt_json_node *n = j->n;
    dnnl_primitive_desc_t pa, pb;
    dnnl_memory_desc_t bmd;
    q_nodes rq;
    bool fold = dn_q_requant_of(S, j->out, &rq);
    for (int64_t c = 0; fold && c < qa->C; c++) k->rsc[c] = (float)((double)k->osc[c] / rq.s);
    gr_status st = split_pds(S, j, k, fold ? &rq : NULL, &pa, &pb, &bmd);
    if (!st && !pa && fold) {
        fold = false;
        st = split_pds(S, j, k, NULL, &pa, &pb, &bmd);
    }
    if (st) return st;
    if (!pa) return bad(S, n, "oneDNN has no jit int8 convolution / matmul for a split source");
    for (int64_t c = 0; c < qa->C; c++) k->bias[c] /= 2.f; /* in the doubled scale's units */
    int wsrc = weight_levels(S, qa, k), bv = j->bias ? dn_q_owned_val(S, &bmd, k->bias) : -1;
    size_t *nb = malloc(sizeof *nb);
    if (wsrc < 0 || (j->bias && bv < 0) || !nb) st = gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    dnnl_memory_desc_t smd = *dnnl_primitive_desc_query_md(pb, dnnl_query_src_md, 0);
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pb, dnnl_query_dst_md, 0);
    int qv = j->xv, win = -1;
    if (!st) st = j->levels ? dn_as(S, n, j->xv, &smd, &qv)
                            : scaled_reorder(S, j->qnode, j->xv, &smd, (float)(1.0 / j->s), DNNL_ARG_DST, j->zp, false, &qv);
    if (!st) st = dn_as(S, n, wsrc, dnnl_primitive_desc_query_md(pb, dnnl_query_weights_md, 0), &win);
    if (!st && win != wsrc && k->lvv < 0) dn_q_drop_owned(S, wsrc, win);
    int hv = -1, lv = -1;
    if (!st) {
        hv = dn_val_new(S, V_TMP, &smd);
        lv = dn_val_new(S, V_TMP, &smd);
        *nb = dnnl_memory_desc_get_size(&smd);
        dn_arg xa[3] = {{DNNL_ARG_SRC, qv, smd, NULL, 0}, {DNNL_ARG_DST, hv, smd, NULL, 0}, {DNNL_ARG_DST, lv, smd, NULL, 0}};
        st = dn_emit_fn(S, n, split_src, nb, free, "split", "graft_split", xa, 3);
        nb = NULL;
    }
    free(nb);
    if (st) {
        dnnl_primitive_desc_destroy(pa);
        dnnl_primitive_desc_destroy(pb);
        return st;
    }
    dnnl_memory_desc_t tmd = *dnnl_primitive_desc_query_md(pa, dnnl_query_dst_md, 0);
    int tv = dn_val_new(S, V_TMP, &tmd);
    dn_arg aa[3] = {{DNNL_ARG_SRC, lv, smd, NULL, 0}, {DNNL_ARG_WEIGHTS, win, S->vals.data[win].md, NULL, 0}, {DNNL_ARG_DST, tv, tmd, NULL, 0}};
    if ((st = dn_emit(S, n, pa, aa, 3, false))) {
        dnnl_primitive_desc_destroy(pb);
        return st;
    }
    /* the second adds the first's result: a binary post-op writing the levels (fold), else
     * accumulating into it (a value of its own for the taps) */
    int ov = fold ? dn_val_new(S, V_TMP, &dmd) : dn_alias_new(S, tv, &dmd);
    if (!fold) S->vals.data[ov].inplace = true;
    dn_arg ab[5];
    int na = 0;
    ab[na++] = (dn_arg){DNNL_ARG_SRC, hv, smd, NULL, 0};
    ab[na++] = (dn_arg){DNNL_ARG_WEIGHTS, win, S->vals.data[win].md, NULL, 0};
    if (bv >= 0) ab[na++] = (dn_arg){DNNL_ARG_BIAS, bv, bmd, NULL, 0};
    if (fold) ab[na++] = (dn_arg){DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, tv, tmd, NULL, 0};
    ab[na++] = (dn_arg){DNNL_ARG_DST, ov, dmd, NULL, 0};
    if ((st = dn_emit(S, n, pb, ab, na, false))) return st;
    if (fold) {
        gr_vec_push(&S->qents, ((dn_qlevels){j->out, ov, rq.s, (int32_t)rq.zpv, rq.qt}));
        S->stats.nint8_dst++;
    } else {
        S->ent_val[j->out] = ov;
    }
    S->stats.nint8++;
    S->stats.nint8_split++;
    return GR_OK;
}

/* Below VNNI, a split matmul of one row runs as graft's int8 GEMV (dnnl_qgemv.c): exact, the
 * weights streamed once as int8. */
static bool qgemv_for(dn_state *S, const q_job *j) {
    return j->split && j->kind == DNNL_Q_MATMUL && j->qt == dnnl_u8 && S->opts.gemv && dn_avx2_kernels_ok() && j->n->ndims[0] == 2 &&
           j->n->shapes[0][0] == 1 && j->npost <= DN_VOP_MAX;
}

static gr_status build_qgemv(dn_state *S, const q_job *j, const q_anchor *qa, const q_consts *k) {
    const rt_json_node *n = j->n;
    int64_t K = qa->outer, N = qa->C, sk = N, sn = 1;
    const int8_t *w = k->lv;
    if (!w) {
        /* kept levels: K x N as their value's strides say, else row-major (weight_levels) */
        const dnnl_memory_desc_t *md = &S->vals.data[k->lvv].md;
        const int8_t *d = dn_const_data(S, k->lvv);
        if (!d) return bad(S, n, "quantized weights have no data");
        w = d + md->offset0;
        if (md->ndims == 2 && md->dims[0] == K && md->dims[1] == N && md->format_kind == dnnl_blocked &&
            !md->format_desc.blocking.inner_nblks) {
            sk = md->format_desc.blocking.strides[0];
            sn = md->format_desc.blocking.strides[1];
        }
    }
    dn_qgemv *q = calloc(1, sizeof *q);
    if (q) *q = (dn_qgemv){.K = K, .N = N, .zp = j->zp, .w = dn_qgemv_pack(w, K, N, sk, sn),
                           .osc = malloc(sizeof(float) * (size_t)N * (j->bias ? 2 : 1))};
    if (!q || !q->w || !q->osc) {
        dn_qgemv_free(q);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    memcpy(q->osc, k->osc, sizeof(float) * (size_t)N);
    if (j->bias) memcpy(q->bias = q->osc + N, j->bias, sizeof(float) * (size_t)N);
    for (int i = 0; i < j->npost; i++) {
        dn_step st = {.kind = STEP_ELTWISE, .alg = j->alg[i], .alpha = j->alpha[i], .beta = j->beta[i], .src1 = -1};
        if (!dn_eltwise_vop(&st, &q->ops[q->nops++])) {
            dn_qgemv_free(q);
            return bad(S, n, "activation the int8 GEMV does not apply");
        }
    }
    dnnl_memory_desc_t xmd, dmd, wsmd;
    dnnl_dims_t xd = {1, K}, wsd = {(K + 1) / 2};
    dnnl_memory_desc_init_by_tag(&xmd, 2, xd, j->qt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&wsmd, 1, wsd, dnnl_s32, dnnl_a);
    dn_plain_md(&dmd, 2, n->shapes[0]);
    int qv;
    gr_status st = j->levels ? dn_as(S, n, j->xv, &xmd, &qv)
                             : scaled_reorder(S, j->qnode, j->xv, &xmd, (float)(1.0 / j->s), DNNL_ARG_DST, j->zp, false, &qv);
    if (st) {
        dn_qgemv_free(q);
        return st;
    }
    int ov = dn_val_new(S, V_TMP, &dmd), wsv = dn_val_new(S, V_TMP, &wsmd);
    dn_arg args[3] = {{DNNL_ARG_SRC, qv, xmd, NULL, (size_t)K}, {DNNL_ARG_DST, ov, dmd, NULL, 0}, {DNNL_ARG_WORKSPACE, wsv, wsmd, NULL, 0}};
    if ((st = dn_emit_fn(S, n, dn_qgemv_run, q, dn_qgemv_free, "matmul", "graft_qgemv:avx2", args, 3))) return st;
    S->ent_val[j->out] = ov;
    S->stats.nint8++;
    return GR_OK;
}

/* The convolution / matmul of job j (+ bias, + eltwise posts): one int8 primitive after the
 * reorder that quantizes its source (CPUs with VNNI / AMX, see exact_int8). Its result is
 * float32, or the levels of the quantize that alone reads it (requant_of) when oneDNN has a
 * jit kernel for that. */
gr_status dn_q_build_int8(dn_state *S, const q_job *j) {
    const rt_json_node *n = j->n;
    int we = dn_arg_entry(S, n, 1);
    q_desc desc;
    q_anchor qa = {0};
    dnnl_memory_desc_t bmd;
    gr_status st = int8_desc(S, j, dnnl_f32, &desc, &qa, &bmd);
    if (st) return st;
    q_consts k = {0};
    if ((st = read_consts(S, j, &qa, we, &k))) {
        consts_free(&k);
        return st;
    }
    if (j->split) {
        st = qgemv_for(S, j) ? build_qgemv(S, j, &qa, &k) : build_split(S, j, &qa, &k);
        consts_free(&k);
        return st;
    }
    int wsrc = weight_levels(S, &qa, &k);
    int bv = j->bias ? dn_q_owned_val(S, &bmd, k.bias) : -1;
    q_nodes rq;
    bool fold = dn_q_requant_of(S, j->out, &rq);
    for (int64_t c = 0; fold && c < qa.C; c++) k.rsc[c] = (float)((double)k.osc[c] / rq.s);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_success;
    if (wsrc < 0 || (j->bias && bv < 0)) st = gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    if (!st && fold && !(st = int8_pd(S, j, &k, &rq, &pd, &ds)) && pd && dn_pd_is_ref(pd)) {
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
    }
    fold = pd != NULL;
    if (!st && !pd) st = int8_pd(S, j, &k, NULL, &pd, &ds);
    consts_free(&k);
    if (st) return st;
    if (!pd) return dn_fail(S, n, ds, "oneDNN rejects the quantized primitive");
    const char *why = dn_pd_is_ref(pd) ? "oneDNN has no jit kernel for this quantized convolution / matmul" : NULL;
    /* the source (quantized) into the layout the primitive wants */
    dnnl_memory_desc_t smd = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    int qv = j->xv, win;
    st = j->levels ? dn_as(S, n, j->xv, &smd, &qv)
                   : scaled_reorder(S, j->qnode, j->xv, &smd, (float)(1.0 / j->s), DNNL_ARG_DST, j->zp, false, &qv);
    if (!st) st = dn_as(S, n, wsrc, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &win);
    if (!st && win != wsrc && k.lvv < 0) dn_q_drop_owned(S, wsrc, win);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    S->ref_why = why;
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int ov = dn_val_new(S, V_TMP, &dmd);
    dn_arg args[4];
    int na = 0;
    args[na++] = (dn_arg){DNNL_ARG_SRC, qv, smd, NULL};
    args[na++] = (dn_arg){DNNL_ARG_WEIGHTS, win, S->vals.data[win].md, NULL};
    if (bv >= 0) args[na++] = (dn_arg){DNNL_ARG_BIAS, bv, bmd, NULL};
    args[na++] = (dn_arg){DNNL_ARG_DST, ov, dmd, NULL};
    if ((st = dn_emit(S, n, pd, args, na, false))) return st;
    if (fold) {
        gr_vec_push(&S->qents, ((dn_qlevels){j->out, ov, rq.s, (int32_t)rq.zpv, rq.qt}));
        S->stats.nint8_dst++;
    } else {
        S->ent_val[j->out] = ov;
    }
    S->stats.nint8++;
    return GR_OK;
}

/* quantize -> dequantize -> convolution / matmul (+ bias, + activation) of a composite */
static gr_status build_float(dn_state *S, const q_nodes *q);

static gr_status build_anchor(dn_state *S, const q_nodes *q, dnnl_q_kind kind, bool split) {
    q_job j = {.n = q->anchor, .kind = kind, .qnode = q->div, .s = q->s, .zp = (int32_t)q->zpv, .qt = q->qt,
               .out = dn_out_entry(S, q->last), .split = split};
    gr_status st;
    if (q->bias) {
        int be = dn_arg_entry(S, q->bias, 0) == dn_out_entry(S, q->anchor) ? dn_arg_entry(S, q->bias, 1)
                                                                             : dn_arg_entry(S, q->bias, 0);
        int64_t C = q->anchor->shapes[0][1];
        if (!(j.bias = dn_q_const_f32(S, be, C))) return bad(S, q->bias, "bias is not a float32 constant of one value per output channel");
    }
    if (q->act) {
        double lo = 0, hi = 0;
        bool clip = q->act->op == IR_OP_CLIP;
        if (clip && (!dn_arg_num(q->act, 1, &lo) || !dn_arg_num(q->act, 2, &hi))) return bad(S, q->act, "clip bounds are not constants");
        j.alg[0] = clip ? dnnl_eltwise_clip_v2 : dnnl_eltwise_relu;
        j.alpha[0] = (float)lo;
        j.beta[0] = (float)hi;
        j.npost = 1;
    }
    if (split && !dn_q_split_ok(S, &j)) return build_float(S, q);
    int xe = dn_arg_entry(S, q->div, 0);
    const dn_qlevels *in = qent_of(S, xe);
    if (!in) in = dn_q_lut_levels(S, q->div, q->s, q->zpv, q->qt, xe);
    if ((st = in ? GR_OK : dn_need_val(S, q->div, xe, &j.xv))) return st;
    if (in) {
        j.xv = in->levels;
        j.levels = true;
        gr_vec_push(&S->pend, q->div);
    }
    if ((st = dn_q_build_int8(S, &j))) return st;
    S->stats.npostops += (q->bias ? 1u : 0u) + (q->act ? 1u : 0u);
    return GR_OK;
}


/* Without VNNI / AMX (exact_int8): the pair as two reorders, then the convolution / matmul
 * with its bias and activation as the engine's float32 composites build it (its layouts,
 * Winograd, ...), the posts it did not take as their own primitives. */
static gr_status build_float(dn_state *S, const q_nodes *q) {
    gr_status st = build_qdq(S, q, dn_out_entry(S, q->mul));
    if (st) return st;
    dn_step steps[2];
    int k = 0;
    if (q->bias) {
        int be = dn_arg_entry(S, q->bias, 0) == dn_out_entry(S, q->anchor) ? dn_arg_entry(S, q->bias, 1)
                                                                             : dn_arg_entry(S, q->bias, 0);
        steps[k++] = (dn_step){.kind = STEP_BINARY, .alg = dnnl_binary_add, .src1 = be, .out = dn_out_entry(S, q->bias)};
    }
    if (q->act) {
        double lo = 0, hi = 0;
        bool clip = q->act->op == IR_OP_CLIP;
        if (clip && (!dn_arg_num(q->act, 1, &lo) || !dn_arg_num(q->act, 2, &hi))) return bad(S, q->act, "clip bounds are not constants");
        steps[k++] = (dn_step){.kind = STEP_ELTWISE, .alg = clip ? dnnl_eltwise_clip_v2 : dnnl_eltwise_relu, .alpha = (float)lo,
                               .beta = (float)hi, .src1 = -1, .out = dn_out_entry(S, q->act)};
    }
    dn_comp comp = {steps, k, -1};
    if ((st = dn_node(S, q->anchor, &comp))) return st;
    int last = -1;
    for (int i = k - 1; i >= 0 && last < 0; i--)
        if (S->ent_val[steps[i].out] >= 0) last = i;
    int cur = last >= 0 ? steps[last].out : dn_out_entry(S, q->anchor);
    if (S->ent_val[cur] < 0) return bad(S, q->anchor, "composite produced no value");
    for (int i = last + 1; i < k && !st; i++) {
        int v;
        if (!(st = dn_emit_step(S, q->anchor, S->ent_val[cur], &steps[i], &v))) S->ent_val[steps[i].out] = v;
        cur = steps[i].out;
    }
    return st;
}

/* A quantize alone (its levels read by several ops): one reorder into the levels, none when
 * an int8 primitive wrote them (qent_of). */
static gr_status build_quant(dn_state *S, const q_nodes *q) {
    int xe = dn_arg_entry(S, q->div, 0), xv, qv;
    const dn_qlevels *in = qent_of(S, xe);
    if (!in) in = dn_q_lut_levels(S, q->div, q->s, q->zpv, q->qt, xe);
    if (in) {
        qv = in->levels;
    } else {
        gr_status st = dn_need_val(S, q->div, xe, &xv);
        dnnl_memory_desc_t qmd;
        if (st) return st;
        dn_q_dense_like(&S->vals.data[xv].md, q->qt, &qmd);
        if ((st = scaled_reorder(S, q->div, xv, &qmd, (float)(1.0 / q->s), DNNL_ARG_DST, (int32_t)q->zpv, true, &qv)))
            return st;
    }
    S->ent_val[dn_out_entry(S, q->last)] = qv;
    return GR_OK;
}

/* The consumers of cast entry ce (levels lv) that dequantize it as float ops, multiply(
 * subtract(cast, zp), s) with scalar constants (a QOperator model's dequantize whose cast
 * another dequantize shares): their result is noted with the levels, scale and zero point
 * (qdeq), so a convolution reading it reads the levels (dn_q_levels_op). Read now: the
 * constants may be released once those ops are built. */
static void note_float_dequant(dn_state *S, int ce, int lv, dnnl_data_type_t qt) {
    double lo = qt == dnnl_u8 ? 0 : -128, hi = qt == dnnl_u8 ? 255 : 127;
    for (uint32_t i = 0; i < S->cons[ce].len; i++) {
        const rt_json_node *sub = S->cons[ce].data[i];
        float zp, s;
        if (sub->op != IR_OP_SUBTRACT || dn_nargs(sub) != 2 || dn_arg_entry(S, sub, 0) != ce || !scalar_arg(S, sub, false, &zp) ||
            zp != nearbyintf(zp) || zp < lo || zp > hi)
            continue;
        int se = dn_out_entry(S, sub);
        if (S->cons[se].len != 1 || S->is_head[se]) continue;
        const rt_json_node *m = S->cons[se].data[0];
        if (m->op != IR_OP_MULTIPLY || dn_nargs(m) != 2 || !scalar_arg(S, m, true, &s) || !(s > 0.f)) continue;
        gr_vec_push(&S->qdeq, ((dn_qlevels){dn_out_entry(S, m), lv, s, (int32_t)zp, qt}));
    }
}

/* A dequantize alone (or the cast alone: scale 1, zero point 0): one reorder of the levels
 * into float32; a convolution reading the result reads the levels (dn_q_levels_op). */
static gr_status build_dequant(dn_state *S, const q_nodes *q) {
    int xv, ov;
    gr_status st = dn_need_val(S, q->dqcast, dn_arg_entry(S, q->dqcast, 0), &xv);
    if (st) return st;
    dnnl_memory_desc_t md;
    dn_q_dense_like(&S->vals.data[xv].md, dnnl_f32, &md);
    if ((st = scaled_reorder(S, q->last, xv, &md, q->dq_s, DNNL_ARG_SRC, (int32_t)q->dq_zpv, true, &ov))) return st;
    S->ent_val[dn_out_entry(S, q->last)] = ov;
    gr_vec_push(&S->qlevels, ((dn_qlevels){ov, xv, q->dq_s, (int32_t)q->dq_zpv, q->qt}));
    return GR_OK;
}

/* Max pooling (NCHW) node n of levels xv of type qt: the pooling primitive on u8 / s8; *out
 * the pooled levels. */
gr_status dn_q_pool_levels(dn_state *S, const rt_json_node *n, int xv, dnnl_data_type_t qt, int *out) {
    int x = dn_arg_entry(S, n, 0);
    gr_status st;
    if (dn_entry_ndim(S, x) != 4 || n->ndims[0] != 4) return bad(S, n, "max pooling of other than 4-D levels");
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    dnnl_dims_t kk, s, d, pl, pr, od = {os[0], os[1], os[2], os[3]};
    dn_pool_window(n, 2, xs, os, kk, s, d, pl, pr);
    dnnl_memory_desc_t dany, src[2];
    dnnl_memory_desc_init_by_tag(&dany, 4, od, qt, dnnl_format_tag_any);
    /* the levels' own layout, else channels-last (oneDNN's only jit int8 pooling below AVX-512) */
    src[0] = S->vals.data[xv].md;
    dn_channels_last(&src[1], &src[0]);
    src[1].data_type = qt;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_success;
    for (int t = 0; t < 2; t++) {
        dnnl_pooling_v2_desc_t desc;
        dnnl_primitive_desc_t p = NULL;
        ds = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, dnnl_pooling_max, &src[t], &dany, s, kk, d, pl, pr);
        if (ds == dnnl_success) ds = dnnl_primitive_desc_create(&p, &desc, S->attr_plain, S->eng, NULL);
        if (ds != dnnl_success) continue;
        if (pd && dn_pd_is_ref(p)) {
            dnnl_primitive_desc_destroy(p);
            continue;
        }
        if (pd) dnnl_primitive_desc_destroy(pd);
        pd = p;
        if (!dn_pd_is_ref(pd)) break;
    }
    if (!pd) return dn_fail(S, n, ds, "cannot pool the levels");
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    if (!dnnl_memory_desc_equal(want, &S->vals.data[xv].md) && (st = dn_as(S, n, xv, want, &xv))) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    S->ref_why = dn_pd_is_ref(pd) ? "oneDNN has no jit max pooling of these levels in any layout tried (theirs, channels-last)" : NULL;
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int ov = dn_val_new(S, V_TMP, &dmd);
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL}, {DNNL_ARG_DST, ov, dmd, NULL}};
    *out = ov;
    return dn_emit(S, n, pd, args, 2, false);
}

/* Max pooling of levels (a QOperator model's uint8 tensor, as the pattern checked). */
static gr_status build_maxpool(dn_state *S, const q_nodes *q) {
    int xv, ov;
    gr_status st = dn_need_val(S, q->anchor, dn_arg_entry(S, q->anchor, 0), &xv);
    if (!st) st = dn_q_pool_levels(S, q->anchor, xv, q->qt, &ov);
    if (!st) S->ent_val[dn_out_entry(S, q->anchor)] = ov;
    return st;
}

/* Reshape of levels: a view of them in the plain layout (a reorder into it first when they
 * are in another). */
static gr_status build_reshape(dn_state *S, const q_nodes *q) {
    const rt_json_node *n = q->anchor;
    int x = dn_arg_entry(S, n, 0), xv;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (st) return st;
    const dnnl_memory_desc_t *xmd = &S->vals.data[xv].md;
    dnnl_memory_desc_t p, omd;
    dnnl_memory_desc_init_by_strides(&p, xmd->ndims, xmd->dims, xmd->data_type, NULL);
    if (!dnnl_memory_desc_equal(&p, xmd) && (st = dn_as(S, n, xv, &p, &xv))) return st;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    omd.data_type = q->qt;
    if (dnnl_memory_desc_get_size(&omd) != dnnl_memory_desc_get_size(&p)) return bad(S, n, "reshape changes the size");
    S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &omd);
    return GR_OK;
}

gr_status dn_q_composite(dn_state *S, const rt_json_node *first, json_t *ann) {
    dnnl_q_kind kind = dnnl_q_kind_of(json_string_value(json_object_get(ann, "composite")));
    json_t *ids = json_object_get(ann, "nodes");
    q_nodes q;
    gr_status st = read_nodes(S, first, ids, kind, &q);
    if (st) return st;
    /* the nodes this composite computes, for the profile's layers (the anchor's primitive) */
    size_t i;
    json_t *x;
    json_array_foreach(ids, i, x) {
        const rt_json_node *nd = rt_json_graph_node(S->g, (uint32_t)json_integer_value(x));
        if (nd != first && nd != q.anchor) S->stats.nfused_nodes++;
        S->consumed[nd - S->node0] = true;
        if (nd != q.anchor && nd != q.div) gr_vec_push(&S->pend, nd);
    }
    uint32_t nprims = S->prims.len;
    for (int k = 0; k < q.nw; k++)
        if (!dn_q_weight_node(S, q.w[k])) return bad(S, q.w[k], "weights are not a dequantize of constant levels");
    /* a dequantize of constant levels (a weight): noted, nothing built (dn_qweight) */
    bool weight = (kind == DNNL_Q_DEQUANT || kind == DNNL_Q_CAST) && dn_q_weight_node(S, q.dqcast);
    if (weight && kind == DNNL_Q_DEQUANT && ((q.dqzp && !dn_q_weight_node(S, q.dqzp)) || !dn_q_weight_node(S, q.mul)))
        return bad(S, q.mul, "dequantize of constant levels by other than scalar constants");
    if (weight) kind = DNNL_Q_NONE;
    switch (kind) {
    case DNNL_Q_NONE: break;
    case DNNL_Q_QDQ: st = build_qdq(S, &q, dn_out_entry(S, q.last)); break;
    case DNNL_Q_QUANT: st = build_quant(S, &q); break;
    case DNNL_Q_DEQUANT: st = build_dequant(S, &q); break;
    case DNNL_Q_CAST:
        q.dq_s = 1.f;
        st = build_dequant(S, &q);
        if (!st) note_float_dequant(S, dn_out_entry(S, q.last), S->ent_val[dn_arg_entry(S, q.dqcast, 0)], q.qt);
        break;
    case DNNL_Q_MAXPOOL: st = build_maxpool(S, &q); break;
    case DNNL_Q_RESHAPE: st = build_reshape(S, &q); break;
    default: {
        bool exact = dn_q_int8_exact_for(S, q.anchor, q.qt);
        st = exact || dn_q_split_for(S, q.anchor, q.qt) ? build_anchor(S, &q, kind, !exact) : build_float(S, &q);
    }
    }
    /* a view or levels another primitive wrote: no primitive of its own takes the nodes */
    if (S->prims.len == nprims) S->pend.len = 0;
    if (!st) S->stats.ncomposites++;
    return st;
}
