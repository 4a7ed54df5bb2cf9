/* The oneDNN engine's weights kept as their int8 levels (dn_qweight, backends/dnnl/dnnl_impl.h):
 * the import leaves a large quantized weight's DequantizeLinear as ops on its levels
 * (ir/transform FoldConstant), so no float32 copy of it exists unless a float op needs one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* The import leaves a large quantized weight's DequantizeLinear as ops on its int8 levels
 * (ir/transform FoldConstant), so no float32 copy of it exists: cast, [subtract the zero
 * point], multiply by the scale, each per tensor or along one axis. Those nodes build nothing;
 * an int8 convolution / matmul reads the levels and scales (weight_of), and a float op that
 * reads the weight (a convolution kept in float32 below VNNI, a dense) gets the float32
 * weight made once as it is built, dropped again when it keeps a reordered copy. */

static const dn_qweight *qw_of(const dn_state *S, int e) {
    for (uint32_t i = 0; e >= 0 && i < S->qweights.len; i++)
        if (S->qweights.data[i].ent == e) return &S->qweights.data[i];
    return NULL;
}

int dn_q_weight_levels(const dn_state *S, int e) {
    const dn_qweight *w = qw_of(S, e);
    return w ? w->levels : -1;
}

bool dn_const_entry(const dn_state *S, int e) {
    return e >= 0 && (S->ent_node[e].node->kind == RT_JSON_CONST || qw_of(S, e));
}

/* The data of float32 constant entry ce, and the axis of entry e's shape it varies along
 * (right-aligned broadcasting; -1: one value) with *n values; NULL when it is no constant
 * broadcasting along one axis at most. */
static const float *axis_const(dn_state *S, int ce, int e, int *axis, int64_t *n) {
    if (ce < 0 || S->ent_node[ce].node->kind != RT_JSON_CONST || !dn_entry_f32(S, ce) || S->ent_val[ce] < 0) return NULL;
    const dn_val *v = &S->vals.data[S->ent_val[ce]];
    int cn = dn_entry_ndim(S, ce), en = dn_entry_ndim(S, e);
    const int64_t *cs = dn_entry_shape(S, ce), *es = dn_entry_shape(S, e);
    if (v->alias >= 0 || !dn_is_plain(&v->md) || cn > en) return NULL;
    *axis = -1;
    *n = 1;
    for (int i = 0; i < cn; i++) {
        int a = en - cn + i;
        if (cs[i] == 1) continue;
        if (cs[i] != es[a] || *axis >= 0) return NULL;
        *axis = a;
        *n = cs[i];
    }
    return dn_const_data(S, S->ent_val[ce]);
}

/* A new entry noted from w (NULL: the cast, one zero point 0 and scale 1) with constant c
 * along axis (n values) subtracted (sub) or multiplied. */
static bool qw_derive(dn_state *S, int ent, int levels, const dn_qweight *w, const float *c, int axis, int64_t n, bool sub) {
    int wa = w ? w->axis : -1;
    if (w && wa >= 0 && axis >= 0 && wa != axis) return false;
    int ax = wa >= 0 ? wa : axis;
    int64_t nn = ax >= 0 ? (wa >= 0 ? w->n : n) : 1;
    if (axis >= 0 && n != nn) return false;
    float *zs = malloc(sizeof(float) * (size_t)nn * 2);
    if (!zs) return false;
    for (int64_t i = 0; i < nn; i++) {
        float zp = w ? w->zp[wa >= 0 ? i : 0] : 0.f, s = w ? w->s[wa >= 0 ? i : 0] : 1.f, k = c ? c[axis >= 0 ? i : 0] : 0.f;
        zs[i] = zp;
        zs[nn + i] = s;
        /* (l - zp) * s - k is (l - zp - k) * s exactly while s is 1: the host's order */
        if (sub && s != 1.f) {
            free(zs);
            return false;
        }
        if (sub) zs[i] = zp + k;
        else if (c) zs[nn + i] = s * k;
    }
    gr_vec_push(&S->qweights, ((dn_qweight){ent, levels, ax, nn, zs, zs + nn}));
    return true;
}

bool dn_q_weight_node(dn_state *S, const rt_json_node *n) {
    if (n->kind != RT_JSON_KERNEL || n->noutputs != 1 || !(n->dtypes[0].code == kDLFloat && n->dtypes[0].bits == 32)) return false;
    int out = dn_out_entry(S, n);
    if (S->is_head[out] || S->ent_val[out] >= 0 || qw_of(S, out)) return false;
    if (n->op == IR_OP_ASTYPE && dn_nargs(n) == 1) {
        int e = dn_arg_entry(S, n, 0), v = e >= 0 ? S->ent_val[e] : -1;
        if (v < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || dn_q_dt(S->ent_node[e].node->dtypes[0]) == dnnl_data_type_undef ||
            !dn_const_data(S, v))
            return false;
        return qw_derive(S, out, v, NULL, NULL, -1, 1, false);
    }
    if (n->op == IR_OP_PERMUTE_DIMS && dn_nargs(n) == 1) {
        /* a transposed 2-D weight (a Gemm's B): a view of the levels with swapped strides */
        int we = dn_arg_entry(S, n, 0);
        const dn_qweight *w = qw_of(S, we);
        int64_t ax[2] = {1, 0};
        int na = dn_attr_ints(n, "axes", ax, 2);
        if (!w || S->ent_val[we] >= 0 || dn_entry_ndim(S, we) != 2 || n->ndims[0] != 2 || (na > 0 && (na != 2 || ax[0] != 1 || ax[1] != 0)))
            return false;
        const dnnl_memory_desc_t *lmd = &S->vals.data[w->levels].md;
        const dnnl_blocking_desc_t *b = &lmd->format_desc.blocking;
        if (lmd->format_kind != dnnl_blocked || b->inner_nblks || b->strides[0] != lmd->dims[1] || b->strides[1] != 1) return false;
        dnnl_dims_t d = {lmd->dims[1], lmd->dims[0]}, st = {1, lmd->dims[1]};
        dnnl_memory_desc_t tmd;
        if (dnnl_memory_desc_init_by_strides(&tmd, 2, d, lmd->data_type, st) != dnnl_success) return false;
        dn_qweight wc = *w;
        wc.axis = wc.axis >= 0 ? 1 - wc.axis : -1;
        wc.levels = dn_alias_new(S, w->levels, &tmd);
        int64_t cnt = wc.axis >= 0 ? wc.n : 1;
        return qw_derive(S, out, wc.levels, &wc, NULL, wc.axis, cnt, false);
    }
    if ((n->op != IR_OP_SUBTRACT && n->op != IR_OP_MULTIPLY) || dn_nargs(n) != 2) return false;
    bool sub = n->op == IR_OP_SUBTRACT;
    for (int side = 0; side < (sub ? 1 : 2); side++) {
        int we = dn_arg_entry(S, n, (uint32_t)side), ce = dn_arg_entry(S, n, (uint32_t)(1 - side)), axis;
        int64_t cnt;
        const dn_qweight *w = qw_of(S, we);
        const float *c = w && S->ent_val[we] < 0 ? axis_const(S, ce, we, &axis, &cnt) : NULL;
        if (!c || n->ndims[0] != dn_entry_ndim(S, we) ||
            memcmp(n->shapes[0], dn_entry_shape(S, we), sizeof(int64_t) * (size_t)n->ndims[0]))
            continue;
        dn_qweight wc = *w; /* the vector may move */
        return qw_derive(S, out, wc.levels, &wc, c, axis, cnt, sub);
    }
    return false;
}

int dn_q_weight_val(dn_state *S, int e) {
    const dn_qweight *w = qw_of(S, e);
    if (!w || S->ent_val[e] >= 0) return w ? S->ent_val[e] : -1;
    const dn_val *lv = &S->vals.data[w->levels];
    const void *src = dn_const_data(S, w->levels);
    int nd = dn_entry_ndim(S, e);
    const int64_t *sh = dn_entry_shape(S, e);
    int64_t inner = 1, total = 1;
    for (int i = 0; i < nd; i++) total *= sh[i];
    for (int i = w->axis + 1; w->axis >= 0 && i < nd; i++) inner *= sh[i];
    dnnl_memory_desc_t md;
    dn_plain_md(&md, nd, sh);
    float *f = src && (int64_t)dnnl_memory_desc_get_size(&lv->md) == total ? dn_owned_alloc(S, sizeof(float) * (size_t)total) : NULL;
    if (!f) return -1;
    bool u8 = lv->md.data_type == dnnl_u8;
    const dnnl_dims_t *str = &lv->md.format_desc.blocking.strides; /* a plain or transposed view */
    for (int64_t i = 0; i < total; i++) {
        int64_t c = w->axis >= 0 ? i / inner % w->n : 0, at = 0;
        for (int64_t d = nd - 1, rem = i; d >= 0; d--) {
            at += rem % sh[d] * (*str)[d];
            rem /= sh[d];
        }
        float l = u8 ? (float)((const uint8_t *)src)[at] : (float)((const int8_t *)src)[at];
        f[i] = (l - w->zp[c]) * w->s[c];
    }
    S->stats.weight_bytes += sizeof(float) * (size_t)total;
    int v = dn_val_new(S, V_OWNED, &md);
    S->vals.data[v].ptr = f;
    S->ent_val[e] = v;
    return v;
}

/* Frees value v's data when the engine owns it (dn_owned_alloc), uncounting its bytes. */
static void free_owned(dn_state *S, int v) {
    for (uint32_t i = 0; i < S->owned.len; i++)
        if (S->owned.data[i] && S->owned.data[i] == S->vals.data[v].ptr) {
            dn_const_free(S->owned.data[i]);
            S->owned.data[i] = NULL;
            S->vals.data[v].ptr = NULL;
            S->stats.weight_bytes -= dnnl_memory_desc_get_size(&S->vals.data[v].md);
            return;
        }
}

void dn_q_weight_done(dn_state *S, int e) {
    int v = qw_of(S, e) ? S->ent_val[e] : -1;
    if (v < 0) return;
    for (uint32_t p = 0; p < S->prims.len; p++)
        for (int a = 0; a < S->prims.data[p].nargs; a++)
            if (S->prims.data[p].args[a].val >= 0 && dn_root(S, S->prims.data[p].args[a].val) == v) return;
    for (uint32_t x = 0; x < S->nent; x++)
        if ((int)x != e && S->ent_val[x] >= 0 && dn_root(S, S->ent_val[x]) == v) return;
    free_owned(S, v);
    S->ent_val[e] = -1;
}

int dn_q_weight_int8(dn_state *S, int we, int cax, int64_t C, float *ws, bool *per_tensor) {
    const dn_qweight *w = qw_of(S, we);
    if (!w || S->vals.data[w->levels].md.data_type != dnnl_s8 || !dn_const_data(S, w->levels) ||
        (w->axis >= 0 && (w->axis != cax || w->n != C)))
        return -1;
    for (int64_t i = 0; i < w->n; i++)
        if (w->zp[i] != 0.f || !(w->s[i] > 0.f) || !isfinite(w->s[i])) return -1;
    *per_tensor = w->axis < 0;
    for (int64_t c = 0; ws && c < C; c++) ws[c] = w->s[w->axis >= 0 ? c : 0];
    return w->levels;
}

/* A new engine-owned constant value of md with data (copied). */
int dn_q_owned_val(dn_state *S, const dnnl_memory_desc_t *md, const void *data) {
    size_t b = dnnl_memory_desc_get_size(md);
    void *p = dn_owned_alloc(S, b);
    if (!p) return -1;
    memcpy(p, data, b);
    S->stats.weight_bytes += b;
    int v = dn_val_new(S, V_OWNED, md);
    S->vals.data[v].ptr = p;
    return v;
}

/* Frees owned value v's data once its reordered copy `copy`, an engine-owned buffer of its
 * own, holds the weights (no primitive reads v; a copy from a cache shared by a symbolic
 * graph's specializations keeps v: the cache may key on it). */
void dn_q_drop_owned(dn_state *S, int v, int copy) {
    void *c = S->vals.data[copy].ptr;
    bool own_copy = false;
    for (uint32_t i = 0; i < S->owned.len; i++) own_copy |= c && S->owned.data[i] == c;
    if (own_copy) free_owned(S, v);
}
