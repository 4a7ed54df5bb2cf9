/* The oneDNN engine's data-movement ops: concat (and channel shuffles), resize, reductions
 * (global pooling in the producer's layout), reshape, permute and strided slices as views or
 * reorders. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* ---------------------------------------------------------------- concat ---- */

/* The sole kernel consumer of entry e when it is op `op` reading e as its first argument. */
static const rt_json_node *sole_op(dn_state *S, int e, ir_op_id op) {
    if (e < 0 || S->is_head[e] || S->cons[e].len != 1) return NULL;
    const rt_json_node *c = S->cons[e].data[0];
    return c->op == op && dn_arg_entry(S, c, 0) == e ? c : NULL;
}

/* ShuffleNet's channel shuffle: concat over axis 1 of g sources of c channels, reshape to
 * (N, g, c, ...), permute_dims swapping axes 1 and 2, reshape to (N, g*c, ...). Output channel
 * j*g + k is channel j of source k, so each source is reordered once, from its own layout,
 * straight into its interleaved channels of the plain output: g reorders of one source each
 * instead of a reorder to a common layout, the concat, the permute's reorder (3 passes over
 * the whole tensor). */
static bool try_shuffle(dn_state *S, const rt_json_node *n, uint32_t cnt, const dn_arg *src, int64_t axis,
                        gr_status *st) {
    int nd = n->ndims[0];
    if (axis != 1 || cnt < 2 || nd < 3 || nd + 1 > DNNL_MAX_NDIMS) return false;
    const dnnl_memory_desc_t m0c = S->vals.data[src[0].val].md, *m0 = &m0c;   /* vals grows below */
    for (uint32_t i = 1; i < cnt; i++)
        for (int d = 0; d < nd; d++)
            if (S->vals.data[src[i].val].md.dims[d] != m0->dims[d]) return false;
    int64_t c = m0->dims[1];
    const rt_json_node *r1 = sole_op(S, dn_out_entry(S, n), IR_OP_RESHAPE);
    const rt_json_node *p = r1 ? sole_op(S, dn_out_entry(S, r1), IR_OP_PERMUTE_DIMS) : NULL;
    const rt_json_node *r2 = p ? sole_op(S, dn_out_entry(S, p), IR_OP_RESHAPE) : NULL;
    if (!r2 || r1->ndims[0] != nd + 1 || p->ndims[0] != nd + 1 || r2->ndims[0] != nd) return false;
    if (r1->shapes[0][0] != m0->dims[0] || r1->shapes[0][1] != (int64_t)cnt || r1->shapes[0][2] != c) return false;
    for (int d = 2; d < nd; d++)
        if (r1->shapes[0][d + 1] != m0->dims[d]) return false;
    int64_t axes[DNNL_MAX_NDIMS];
    if (dn_attr_ints(p, "axes", axes, DNNL_MAX_NDIMS) != nd + 1 || axes[0] != 0 || axes[1] != 2 || axes[2] != 1) return false;
    for (int d = 3; d <= nd; d++)
        if (axes[d] != d) return false;
    for (int d = 0; d < nd; d++)
        if (r2->shapes[0][d] != n->shapes[0][d]) return false;
    /* the output plain, or channels-last when the first source is (the interleaving is then
     * a copy of single channels within each position, not a transposition, and the next
     * unit's slices are channels-last views) */
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, nd, n->shapes[0]);
    if (!S->opts.no_layout_plan && !S->is_head[dn_out_entry(S, r2)] && dn_cl_order(m0)) dn_channels_last(&omd, &omd);
    int v = dn_val_new(S, V_TMP, &omd);
    for (uint32_t k = 0; k < cnt; k++) {
        /* source k's channels j at output channels j*cnt + k */
        dnnl_dims_t vs;
        for (int d = 0; d < nd; d++) vs[d] = omd.format_desc.blocking.strides[d];
        vs[1] *= (int64_t)cnt;
        dnnl_memory_desc_t view;
        dnnl_memory_desc_init_by_strides(&view, nd, m0->dims, dnnl_f32, vs);
        view.offset0 = (int64_t)k * omd.format_desc.blocking.strides[1];
        const dnnl_memory_desc_t smd0 = S->vals.data[src[k].val].md, *smd = &smd0;
        dnnl_primitive_desc_t pd;
        dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, smd, S->eng, &view, S->eng, S->attr_plain);
        if (ds != dnnl_success) {
            *st = dn_fail(S, n, ds, "oneDNN rejects the channel-shuffle reorder");
            return true;
        }
        dn_arg a[2] = {{DNNL_ARG_FROM, src[k].val, *smd, NULL}, {DNNL_ARG_TO, v, view, NULL}};
        const rt_json_node *folded[3] = {r1, p, r2};
        for (int f = 0; f < 3; f++) gr_vec_push(&S->pend, folded[f]);
        *st = dn_emit(S, n, pd, a, 2, false);
        if (*st) return true;
    }
    const rt_json_node *folded[3] = {r1, p, r2};
    for (int f = 0; f < 3; f++) {
        if (!S->consumed[folded[f] - S->node0]) S->stats.nfused_nodes++;
        S->consumed[folded[f] - S->node0] = true;
    }
    S->ent_val[dn_out_entry(S, r2)] = v;
    *st = GR_OK;
    return true;
}

static dnnl_format_tag_t block_tag(int nd, int block);

/* Concatenation of plain tensors along `axis` is one along axis 1 of their 2-D views (rows: the
 * product of the dims before it; one row: along axis 0 of the columns), which oneDNN's simple
 * concat takes where the N-D one falls to ref:any (unit dims around the axis). The sources of
 * args become plain views; NULL (st GR_OK) when that is ref too. */
static dnnl_primitive_desc_t concat_2d(dn_state *S, const rt_json_node *n, uint32_t cnt, int axis, dn_arg *args, gr_status *st) {
    dnnl_memory_desc_t v2[64];
    int vals[64];
    int64_t rows = 1;
    for (int d = 0; d < axis; d++) rows *= n->shapes[0][d];
    *st = GR_OK;
    for (uint32_t i = 0; i < cnt; i++) {
        if ((*st = dn_plain(S, n, args[i].val, &vals[i]))) return NULL;
        const dnnl_memory_desc_t *md = &S->vals.data[vals[i]].md;
        int64_t cols = 1;
        for (int d = axis; d < md->ndims; d++) cols *= md->dims[d];
        dn_plain_md(&v2[i], 2, rows > 1 ? (int64_t[]){rows, cols} : (int64_t[]){cols, 1});
    }
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_concat_primitive_desc_create(&pd, NULL, (int)cnt, rows > 1, v2, S->attr_plain, S->eng) != dnnl_success) return NULL;
    if (dn_pd_is_ref(pd)) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    for (uint32_t i = 0; i < cnt; i++)
        args[i] = (dn_arg){DNNL_ARG_MULTIPLE_SRC + (int)i, dn_alias_new(S, vals[i], &v2[i]), v2[i], NULL};
    return pd;
}

/* The concatenation as one reorder per source into its slice of the result (a view of it) in
 * layout omd (plain, channels-last, or blocked where each source fills whole blocks), when
 * none of those is on ref; *done false otherwise. */
static gr_status concat_copies(dn_state *S, const rt_json_node *n, uint32_t cnt, int axis, const dn_arg *args,
                               const dnnl_memory_desc_t *omd0, bool *done) {
    dnnl_memory_desc_t omd = *omd0, views[64];
    dnnl_primitive_desc_t pds[64];
    int64_t off = 0;
    uint32_t made = 0;
    *done = false;
    for (; made < cnt; made++) {
        const dnnl_memory_desc_t *md = &S->vals.data[args[made].val].md;
        dnnl_dims_t offs = {0};
        offs[axis] = off;
        off += md->dims[axis];
        if (dnnl_memory_desc_init_submemory(&views[made], &omd, md->dims, offs) != dnnl_success ||
            dnnl_reorder_primitive_desc_create(&pds[made], md, S->eng, &views[made], S->eng, S->attr_plain) != dnnl_success)
            break;
        if (dn_pd_is_ref(pds[made])) {
            dnnl_primitive_desc_destroy(pds[made]);
            break;
        }
    }
    if (made < cnt) {
        while (made) dnnl_primitive_desc_destroy(pds[--made]);
        return GR_OK;
    }
    int v = dn_val_new(S, V_TMP, &omd);
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < cnt; i++) {
        if (st) {
            dnnl_primitive_desc_destroy(pds[i]);
            continue;
        }
        dn_arg a[2] = {{DNNL_ARG_FROM, args[i].val, S->vals.data[args[i].val].md, NULL},
                       {DNNL_ARG_TO, dn_alias_new(S, v, &views[i]), views[i], NULL}};
        st = dn_emit(S, n, pds[i], a, 2, false);
    }
    if (!st) S->ent_val[dn_out_entry(S, n)] = v;
    *done = !st;
    return st;
}

/* The concat's source count (0 when bad) and the entry of source i (-1 when bad). */
static uint32_t concat_count(const rt_json_node *n) {
    json_t *a0 = json_array_get(json_object_get(n->attrs, "args"), 0);
    json_t *tup = a0 ? json_object_get(a0, "tuple") : NULL;
    uint32_t cnt = tup ? (uint32_t)json_array_size(tup) : n->ninputs;
    return cnt <= 64 ? cnt : 0;
}

static int concat_src(dn_state *S, const rt_json_node *n, uint32_t i) {
    json_t *a0 = json_array_get(json_object_get(n->attrs, "args"), 0);
    json_t *tup = a0 ? json_object_get(a0, "tuple") : NULL;
    if (!tup) return dn_in_entry(S, n, i);
    json_t *in = json_object_get(json_array_get(tup, i), "in");
    return json_is_integer(in) ? dn_in_entry(S, n, (uint32_t)json_integer_value(in)) : -1;
}

/* Concats in place. A channel concat of one image (N = 1, axis 1) in a blocked layout whose
 * channel block divides every source's channels has each source's bytes as one contiguous run
 * of the output: the sources' own layout, at an offset. Its producers write there (dn_finish,
 * the convolutions asking for that layout first) and the concat copies only what is not there
 * already: region inputs, constants, heads, sources a layout or another concat put elsewhere,
 * a source given twice. Planned from the last concat back, so that a concat of a prefix of a
 * larger one's sources (DenseNet's) is a view of that one's buffer and copies nothing. */

/* Tag of the channel-blocked activation layout for nd dims (3-5) and a block of 8 or 16. */
static dnnl_format_tag_t block_tag(int nd, int block) {
    static const dnnl_format_tag_t T8[6] = {[3] = dnnl_aBc8b, [4] = dnnl_aBcd8b, [5] = dnnl_aBcde8b},
                                   T16[6] = {[3] = dnnl_aBc16b, [4] = dnnl_aBcd16b, [5] = dnnl_aBcde16b};
    return block == 16 ? T16[nd] : T8[nd];
}

/* Block tag of the ISA's blocked activation layout for nd dims. */
static dnnl_format_tag_t slot_tag(int nd) { return block_tag(nd, rt_dnnl_channel_block()); }

/* Bytes per channel of entry e (N = 1) and whether its channels fit whole blocks. */
static bool slot_shape(dn_state *S, int e, int nd, const int64_t *like, size_t *per_ch, int64_t *ch) {
    if (e < 0 || dn_entry_ndim(S, e) != nd) return false;
    const int64_t *s = dn_entry_shape(S, e);
    size_t b = sizeof(float);
    for (int d = 2; d < nd; d++) {
        if (s[d] != like[d]) return false;
        b *= (size_t)s[d];
    }
    *per_ch = b;
    *ch = s[1];
    return s[0] == 1 && s[1] > 0 && s[1] % rt_dnnl_channel_block() == 0;
}

/* A concat the plan may put in place: its sources' entries (count in *cnt). */
static bool slot_concat(dn_state *S, const rt_json_node *n, int *src, uint32_t *cnt, size_t *per_ch) {
    int nd = n->ndims[0];
    int64_t axis = dn_attr_int(n, "axis", 0), ch;
    if (axis < 0) axis += nd;
    *cnt = concat_count(n);
    if (n->kind != RT_JSON_KERNEL || n->op != IR_OP_CONCAT || nd < 3 || nd > 5 || axis != 1 || *cnt == 0) return false;
    /* ShuffleNet's channel shuffle interleaves the sources instead (try_shuffle) */
    int out = dn_out_entry(S, n);
    if (S->cons[out].len == 1 && S->cons[out].data[0]->op == IR_OP_RESHAPE) return false;
    int64_t total = 0;
    for (uint32_t i = 0; i < *cnt; i++) {
        src[i] = concat_src(S, n, i);
        if (!slot_shape(S, src[i], nd, n->shapes[0], per_ch, &ch)) return false;
        total += ch;
    }
    return total == n->shapes[0][1];
}

void dn_concat_plan(dn_state *S) {
    if (S->opts.no_layout_plan) return;
    int src[64];
    for (uint32_t i = rt_json_graph_num_nodes(S->g); i-- > 0;) {
        const rt_json_node *n = rt_json_graph_node(S->g, i);
        uint32_t cnt;
        size_t per_ch;
        if (!slot_concat(S, n, src, &cnt, &per_ch)) continue;
        int out = dn_out_entry(S, n);
        /* unplaced: a view where its sources already lie in order in another buffer, else a
         * buffer of its own */
        if (S->slot_root[out] < 0) {
            int r = S->slot_root[src[0]];
            size_t off = S->slot_off[src[0]], o = 0;
            bool view = r >= 0;
            for (uint32_t k = 0; k < cnt && view; k++) {
                view = S->slot_root[src[k]] == r && S->slot_off[src[k]] == off + o;
                o += (size_t)dn_entry_shape(S, src[k])[1] * per_ch;
            }
            S->slot_root[out] = view ? r : out;
            S->slot_off[out] = view ? off : 0;
        }
        size_t o = S->slot_off[out];
        for (uint32_t k = 0; k < cnt; k++) {
            int e = src[k];
            bool twice = false;
            for (uint32_t q = 0; q < k; q++) twice |= src[q] == e;
            if (S->slot_root[e] < 0 && !twice && !S->is_head[e] && S->ent_node[e].node->kind == RT_JSON_KERNEL) {
                S->slot_root[e] = S->slot_root[out];
                S->slot_off[e] = o;
            }
            o += (size_t)dn_entry_shape(S, e)[1] * per_ch;
        }
    }
}

/* Entry e's dims in the blocked layout of the plan. */
static bool block_md(dn_state *S, int e, dnnl_memory_desc_t *md) {
    int nd = dn_entry_ndim(S, e);
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dn_entry_shape(S, e)[i];
    return dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, slot_tag(nd)) == dnnl_success;
}

bool dn_slot_md(dn_state *S, int e, dnnl_memory_desc_t *md) { return e >= 0 && S->slot_root[e] >= 0 && block_md(S, e, md); }

int dn_slot_val(dn_state *S, int e) {
    int r = S->slot_root[e];
    dnnl_memory_desc_t md;
    if (S->slot_buf[r] < 0) {
        dn_slot_md(S, r, &md);
        S->slot_buf[r] = dn_val_new(S, V_TMP, &md);
    }
    dn_slot_md(S, e, &md);
    int v = dn_alias_new(S, S->slot_buf[r], &md);
    S->vals.data[v].boff = S->slot_off[e];
    return v;
}

/* A planned concat: each source not in its slot yet copied there, the output a view. */
static gr_status concat_in_place(dn_state *S, const rt_json_node *n) {
    int src[64], out = dn_out_entry(S, n);
    uint32_t cnt;
    size_t per_ch;
    if (!slot_concat(S, n, src, &cnt, &per_ch)) return dn_fail(S, n, dnnl_success, "concat plan");
    int ov = dn_slot_val(S, out), buf = dn_root(S, ov);
    size_t o = S->slot_off[out];
    for (uint32_t k = 0; k < cnt; k++) {
        int v = -1;
        gr_status st = dn_need_val(S, n, src[k], &v);
        if (st) return st;
        dnnl_memory_desc_t md;
        if (!block_md(S, src[k], &md)) return dn_fail(S, n, dnnl_success, "concat plan");
        size_t here = o;
        o += (size_t)dn_entry_shape(S, src[k])[1] * per_ch;
        if (dn_root(S, v) == buf && dn_val_boff(S, v) == here && dnnl_memory_desc_equal(&S->vals.data[v].md, &md)) {
            S->stats.nslots++;
            continue;
        }
        int sv = dn_alias_new(S, buf, &md);
        S->vals.data[sv].boff = here;
        dnnl_primitive_desc_t pd;
        dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &S->vals.data[v].md, S->eng, &md, S->eng, S->attr_plain);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot copy a concat source into its slot");
        dn_arg a[2] = {{DNNL_ARG_FROM, v, S->vals.data[v].md, NULL}, {DNNL_ARG_TO, sv, md, NULL}};
        if ((st = dn_emit(S, n, pd, a, 2, true))) return st;
        /* a concat planned in the same buffer later finds it there */
        if (S->slot_root[src[k]] == S->slot_root[out] && S->slot_off[src[k]] == here) S->ent_val[src[k]] = sv;
    }
    S->ent_val[out] = ov;
    return GR_OK;
}

gr_status dn_op_concat(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    uint32_t cnt = concat_count(n);
    if (cnt == 0) return dn_fail(S, n, dnnl_success, "concat arity");
    /* a concat with a slot in a later one's buffer but whose own sources fit no blocks (a value
     * concatenated with itself, its channels cut by the block) builds as any producer: dn_finish
     * writes its slot when the layouts agree, else the later concat copies it there */
    int src[64];
    uint32_t planned;
    size_t per_ch;
    if (S->slot_root[dn_out_entry(S, n)] >= 0 && slot_concat(S, n, src, &planned, &per_ch)) return concat_in_place(S, n);
    dnnl_memory_desc_t mds[64];
    dn_arg args[66];
    int nd = n->ndims[0];
    for (uint32_t i = 0; i < cnt; i++) {
        int e = concat_src(S, n, i);
        int v = -1;
        gr_status st = dn_need_val(S, n, e, &v);
        if (st) return st;
        if (S->vals.data[v].md.ndims != nd) return dn_fail(S, n, dnnl_success, "rank");
        mds[i] = S->vals.data[v].md;
        args[i] = (dn_arg){DNNL_ARG_MULTIPLE_SRC + (int)i, v, mds[i], NULL};
    }
    int64_t axis = dn_attr_int(n, "axis", 0);
    if (axis < 0) axis += nd;
    gr_status sst;
    if (try_shuffle(S, n, cnt, args, axis, &sst)) return sst;
    /* the sources as they are; oneDNN's jit concat wants them in one layout (ref:any for mixed
     * layouts or channel blocks cut by the axis): then all in the first one's layout,
     * channels-last, plain */
    dnnl_memory_desc_t (*alt)[64] = malloc(sizeof(*alt) * 4);
    if (!alt) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    int nalt = 0;
    memcpy(alt[nalt++], mds, sizeof(mds[0]) * cnt);
    bool ok1 = true, ok2 = true, plain = true;
    for (uint32_t i = 0; i < cnt; i++) {
        ok1 &= dn_md_like(&alt[nalt][i], &mds[0], nd, mds[i].dims);
        dn_channels_last(&alt[nalt + 1][i], &mds[i]);
        ok2 &= nd >= 3 && nd <= 5;
        dn_plain_like(&alt[nalt + 2][i], &mds[i]);
        plain &= dn_is_plain(&mds[i]);
    }
    int base = nalt;
    if (ok1) nalt++;
    if (ok2) memcpy(alt[nalt++], alt[base + 1], sizeof(mds[0]) * cnt);
    if (!plain) memcpy(alt[nalt++], alt[base + 2], sizeof(mds[0]) * cnt);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_success;
    int pick = 0;
    for (int t = 0; t <= nalt && !pd; t++) {
        int a = t < nalt ? t : 0;
        if (t == nalt) S->ref_why = "no jit concat for these layouts (tried the sources' own, the first one's, channels-last, plain)";
        /* plain sources get a plain destination named: left to oneDNN, it derives one from the
         * first source's strides, which a size-1 dim leaves ambiguous, and takes ref:any */
        bool allp = true;
        for (uint32_t i = 0; i < cnt; i++) allp &= dn_is_plain(&alt[a][i]);
        dnnl_memory_desc_t dplain;
        dn_plain_md(&dplain, n->ndims[0], n->shapes[0]);
        ds = dnnl_concat_primitive_desc_create(&pd, allp ? &dplain : NULL, (int)cnt, (int)axis, alt[a], S->attr_plain, S->eng);
        if (ds != dnnl_success) {
            pd = NULL;
            if (t == nalt) break;
            continue;
        }
        if (t < nalt && dn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
            continue;
        }
        pick = a;
    }
    if (!pd) {
        free(alt);
        return dn_fail(S, n, ds, "oneDNN rejects the primitive");
    }
    if (dn_pd_is_ref(pd)) {
        gr_status st2;
        dnnl_primitive_desc_t pd2 = concat_2d(S, n, cnt, (int)axis, args, &st2);
        bool copied = false;
        dnnl_memory_desc_t pmd;
        dn_plain_md(&pmd, nd, n->shapes[0]);
        if (!pd2 && !st2) st2 = concat_copies(S, n, cnt, (int)axis, args, &pmd, &copied);
        if (copied || st2) {
            free(alt);
            dnnl_primitive_desc_destroy(pd);
            S->ref_why = NULL;
            return st2;
        }
        if (pd2) {
            free(alt);
            dnnl_primitive_desc_destroy(pd);
            S->ref_why = NULL;
            dnnl_memory_desc_t dmd;
            dn_plain_md(&dmd, nd, n->shapes[0]);
            return dn_finish(S, n, pd2, args, (int)cnt, NULL, 0, &dmd);
        }
    }
    if (!dn_pd_is_ref(pd)) S->ref_why = NULL;
    /* sources to reorder into the concat's layout first: each reordered straight into its
     * slice of the result instead, when that layout has no blocks (one pass over the data, not
     * two). Blocked sources whose channels fit 8-blocks, some not the ISA's 16 (PP-OCR det's
     * upsampled maps, 24 channels each, which went channels-last): into an nChw8c result, each
     * source one contiguous run of it (a third of the time of a reorder into a channels-last
     * slice), which its readers reorder as they would the channels-last one */
    int out = dn_out_entry(S, n);
    bool moved = false, cut = false, b8 = axis == 1 && nd >= 3 && nd <= 5 && rt_dnnl_channel_block() == 16 && !S->is_head[out];
    for (uint32_t i = 0; i < cnt; i++) {
        const dnnl_memory_desc_t *md = &S->vals.data[args[i].val].md;
        moved |= !dnnl_memory_desc_equal(md, &alt[pick][i]);
        b8 &= !dn_strided(md) && md->dims[1] % 8 == 0;
        cut |= md->dims[1] % 16 != 0;
    }
    b8 &= cut;
    dnnl_memory_desc_t cmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), smd;
    if (b8) dnnl_memory_desc_init_by_tag(&cmd, nd, cmd.dims, dnnl_f32, block_tag(nd, 8));
    if ((b8 || (moved && dn_strided(&cmd))) && !dn_pd_is_ref(pd) && !dn_slot_md(S, out, &smd)) {
        bool copied = false;
        gr_status st = concat_copies(S, n, cnt, (int)axis, args, &cmd, &copied);
        if (copied || st) {
            free(alt);
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
    }
    for (uint32_t i = 0; i < cnt; i++) {
        int v;
        gr_status st = dn_as(S, n, args[i].val, &alt[pick][i], &v);
        if (st) {
            free(alt);
            dnnl_primitive_desc_destroy(pd);
            return st;
        }
        args[i] = (dn_arg){DNNL_ARG_MULTIPLE_SRC + (int)i, v, alt[pick][i], NULL};
    }
    free(alt);
    return dn_finish(S, n, pd, args, (int)cnt, NULL, 0, NULL);
}

/* --------------------------------------------------------------- resize ---- */

static dnnl_status_t resample_init(void *desc, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                                   const void *ctx) {
    return dnnl_resampling_forward_desc_init(desc, dnnl_forward_inference, *(const dnnl_alg_kind_t *)ctx, NULL, src, dst);
}

gr_status dn_op_resize(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (st) return st;
    if (strcmp(dn_attr_str(n, "layout", "NCHW"), "NCHW")) return dn_fail(S, n, dnnl_success, "layout");
    const char *method = dn_attr_str(n, "method", "linear");
    const char *ctm = dn_attr_str(n, "coordinate_transformation_mode", "half_pixel");
    const char *rnd = dn_attr_str(n, "rounding_method", "round");
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    dnnl_alg_kind_t alg;
    if (!strcmp(method, "linear")) {
        if (strcmp(ctm, "half_pixel") && !(strcmp(ctm, "pytorch_half_pixel") == 0 && os[2] > 1 && os[3] > 1))
            return dn_fail(S, n, dnnl_success, "linear resize supports half_pixel coordinates only");
        alg = dnnl_resampling_linear;
    } else if (!strcmp(method, "nearest_neighbor") || !strcmp(method, "nearest")) {
        /* integer up-scaling: every coordinate mode / rounding agrees with oneDNN's */
        bool integer = os[2] % xs[2] == 0 && os[3] % xs[3] == 0;
        bool ok_mode = (!strcmp(ctm, "asymmetric") && (!strcmp(rnd, "floor") || !strcmp(rnd, ""))) ||
                       (!strcmp(ctm, "half_pixel") && (!strcmp(rnd, "round_prefer_ceil") || !strcmp(rnd, "round")||
                                                      !strcmp(rnd, "round_prefer_floor")));
        if (!integer || !ok_mode) return dn_fail(S, n, dnnl_success, "nearest resize supports integer up-scaling only");
        alg = dnnl_resampling_nearest;
    } else {
        return dn_fail(S, n, dnnl_success, "resize method not supported");
    }
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = dn_chain_of(S, n, NULL, steps, true, 4, os, &dst);
    /* oneDNN 2.6's jit resampling reads a binary post-op's operand at the wrong place for a 1x1
     * dst (generator seed 132036: one image of 17 channels plus a per-channel constant, 16 of
     * 17 values wrong plain, some channels-last, at both ISAs; a full-size operand too): only
     * eltwise post-ops then */
    for (int i = 0; os[2] == 1 && os[3] == 1 && i < k; i++)
        if (steps[i].kind == STEP_BINARY) k = i;
    dnnl_resampling_desc_t desc;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used;
    dnnl_primitive_desc_t pd;
    st = dn_single_src_create(S, n, xv, &dst, 4, os, resample_init, &alg, &desc, steps, k,
                           "no jit resampling for these shapes in any layout tried (src's, dst any, channels-last)", &pd,
                           &used, args, &na);
    if (st) return st;
    return dn_finish(S, n, pd, args, na, steps, used, NULL);
}

/* --------------------------------------------------------------- reduce ---- */

/* A mean or max over every spatial axis of an (N, C, spatial...) tensor in a blocked or
 * channels-last layout (global average pooling as ONNX ReduceMean over H, W imports): a
 * pooling primitive with the whole map as its window reads the source in its producer's layout.
 * oneDNN 2.6's reductions have jit kernels for plain sources only (blocked: ref), so the other
 * way is a reorder of the whole map first (mnasnet1_0's 1280x7x7 head on avx512_core: reorder
 * 47 us + reduction 10 us in the model, the pooling alone 3 us). The result keeps the
 * pooling's layout; without keepdims, the (N, C) output is a plain view of it where the bytes
 * agree (dn_plain: one image, or C a multiple of the channel block), else a copy of N x C
 * values. *done false: no jit pooling, the caller reduces a plain copy. */
static gr_status global_pool(dn_state *S, const rt_json_node *n, int xv, const int64_t *kd, bool *done) {
    *done = false;
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims, sd = nd - 2;
    dnnl_alg_kind_t alg = dn_op_row_of(n->op)->alg == dnnl_reduction_mean ? dnnl_pooling_avg_exclude_padding
                          : dn_op_row_of(n->op)->alg == dnnl_reduction_max ? dnnl_pooling_max
                                                                  : dnnl_alg_kind_undef;
    if (S->opts.no_layout_plan || alg == dnnl_alg_kind_undef || sd < 1 || sd > 3 || dn_is_plain(&xmd)) return GR_OK;
    for (int i = 0; i < nd; i++)
        if (kd[i] != (i < 2 ? xmd.dims[i] : 1)) return GR_OK;
    bool keep = n->ndims[0] == nd;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t dst;
    int k = dn_chain_of(S, n, NULL, steps, keep, nd, kd, &dst);
    dnnl_dims_t win, zero, od;
    for (int i = 0; i < sd; i++) {
        win[i] = xmd.dims[2 + i];
        zero[i] = 0;
    }
    for (int i = 0; i < nd; i++) od[i] = kd[i];
    /* dst `any`: the jit kernels want it in src's layout (a plain dst leaves ref); a region
     * output is copied out at the end */
    dnnl_memory_desc_init_by_tag(&dst, nd, od, dnnl_f32, dnnl_format_tag_any);
    dnnl_pooling_v2_desc_t desc;
    dnnl_status_t ds = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &xmd, &dst, win, win, zero,
                                                          zero, zero);
    if (ds != dnnl_success) return GR_OK;
    dn_arg args[4 + DN_MAX_STEPS];
    int na = 0, used;
    dnnl_primitive_desc_t pd;
    gr_status st;
    S->sum_ok = true;
    ds = dn_try_create(S, n, &desc, nd, steps, k, 0, true, &pd, &used, args, &na, &st);
    S->sum_ok = false;
    if (st || ds != dnnl_success) return st;
    *done = true;
    args[na++] = (dn_arg){DNNL_ARG_SRC, xv, xmd, NULL};
    int e = dn_chain_out(S, n, steps, used);
    if ((st = dn_finish(S, n, pd, args, na, steps, used, NULL)) || keep) return st;
    int pv;
    if ((st = dn_plain(S, n, S->ent_val[e], &pv))) return st;
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    S->ent_val[e] = dn_alias_new(S, pv, &omd);
    return GR_OK;
}

gr_status dn_op_reduce(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axes[DNNL_MAX_NDIMS];
    int na = dn_attr_ints(n, "axis", axes, DNNL_MAX_NDIMS);
    int64_t kd[DNNL_MAX_NDIMS];
    for (int i = 0; i < nd; i++) kd[i] = na < 0 ? 1 : S->vals.data[xv].md.dims[i];
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i];
        if (a < 0 || a >= nd) return dn_fail(S, n, dnnl_success, "axis out of range");
        kd[a] = 1;
    }
    bool done;
    if ((st = global_pool(S, n, xv, kd, &done)) || done) return st;
    if ((st = dn_plain(S, n, xv, &xv))) return st;
    dnnl_alg_kind_t alg = dn_op_row_of(n->op)->alg;
    dnnl_memory_desc_t kmd, omd;
    dn_plain_md(&kmd, nd, kd);
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    if (dnnl_memory_desc_get_size(&kmd) != dnnl_memory_desc_get_size(&omd)) return dn_fail(S, n, dnnl_success, "shape");
    /* oneDNN's jit reduction reduces the innermost dims only; its descriptor wants some dim
     * reduced. Reduced dims of size > 1: */
    int perm[DNNL_MAX_NDIMS], np = 0, nr = 0;
    for (int i = 0; i < nd; i++)
        if (kd[i] == S->vals.data[xv].md.dims[i]) perm[np++] = i;
    for (int i = 0; i < nd; i++)
        if (kd[i] != S->vals.data[xv].md.dims[i]) perm[np + nr++] = i;
    if (!nr) { /* over single values: the input itself */
        S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &omd);
        return GR_OK;
    }
    bool inner = true;
    for (int j = 0; j < nd; j++) inner &= (j < nd - nr) == (kd[j] == S->vals.data[xv].md.dims[j]);
    if (!inner) { /* a copy with the kept dims first, the reduced ones innermost (the result's bytes are the same) */
        dnnl_memory_desc_t view, dense;
        dnnl_dims_t pd_dims, pd_str, pk;
        const dnnl_memory_desc_t *xm = &S->vals.data[xv].md;
        for (int j = 0; j < nd; j++) {
            pd_dims[j] = xm->dims[perm[j]];
            pd_str[j] = xm->format_desc.blocking.strides[perm[j]];
            pk[j] = kd[perm[j]];
        }
        dnnl_memory_desc_init_by_strides(&view, nd, pd_dims, dnnl_f32, pd_str);
        dn_plain_md(&dense, nd, pd_dims);
        if ((st = dn_as(S, n, dn_alias_new(S, xv, &view), &dense, &xv))) return st;
        /* the view itself when it has dense bytes: named by dense strides (a unit dim's stride
         * takes oneDNN's jit kernel off its plain path) */
        if (memcmp(&S->vals.data[xv].md, &dense, sizeof dense)) xv = dn_alias_new(S, xv, &dense);
        dn_plain_md(&kmd, nd, pk);
    }
    const dnnl_memory_desc_t xmd_copy = S->vals.data[xv].md, *xmd = &xmd_copy;
    dn_step steps[DN_MAX_STEPS];
    dnnl_memory_desc_t ignore;
    /* post-ops only when the output keeps the rank and its dims' order (same dims for the chain) */
    int k = dn_chain_of(S, n, NULL, steps, n->ndims[0] == nd && inner, nd, kd, &ignore);
    dnnl_reduction_desc_t desc;
    dnnl_status_t ds = dnnl_reduction_desc_init(&desc, alg, xmd, &kmd, 0.f, 0.f);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid reduction");
    dn_arg args[4 + DN_MAX_STEPS];
    int nargs = 0, used;
    dnnl_primitive_desc_t pd;
    st = dn_fuse_create_min(S, n, &desc, nd, steps, k, 0, &pd, &used, args, &nargs);
    if (st) return st;
    args[nargs++] = (dn_arg){DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL};
    int v = dn_val_new(S, V_TMP, &omd);
    args[nargs++] = (dn_arg){DNNL_ARG_DST, v, kmd, NULL};
    dn_consume(S, steps, used);
    st = dn_emit(S, n, pd, args, nargs, false);
    if (st) return st;
    S->ent_val[dn_chain_out(S, n, steps, used)] = v;
    return GR_OK;
}

/* ------------------------------------------------------------ layout ops ---- */

/* The strided md of dims nd / ns viewing strided md x's elements in row-major order, when
 * strides can say it (numpy's no-copy reshape: each run of x's dims that merges or splits into
 * a run of new ones must be contiguous in itself); false otherwise. */
static bool strided_reshape(const dnnl_memory_desc_t *x, int nd, const int64_t *ns, dnnl_memory_desc_t *out) {
    int64_t od[DNNL_MAX_NDIMS], os[DNNL_MAX_NDIMS], str[DNNL_MAX_NDIMS];
    int on = 0;
    for (int i = 0; i < x->ndims; i++) {
        if (x->dims[i] == 0) return false;
        if (x->dims[i] == 1) continue;
        od[on] = x->dims[i];
        os[on++] = x->format_desc.blocking.strides[i];
    }
    for (int j = 0; j < nd; j++) str[j] = 1;
    int oi = 0, ni = 0;
    while (ni < nd && oi < on) {
        int oj = oi + 1, nj = ni + 1;
        int64_t np = ns[ni], op = od[oi];
        while (np != op) {
            if (np < op) {
                if (nj >= nd) return false;
                np *= ns[nj++];
            } else {
                if (oj >= on) return false;
                op *= od[oj++];
            }
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1]) return false;
        str[nj - 1] = os[oj - 1];
        for (int k = nj - 1; k > ni; k--) str[k - 1] = str[k] * ns[k];
        ni = nj;
        oi = oj;
    }
    if (oi < on) return false;
    for (int j = ni; j < nd; j++)
        if (ns[j] != 1) return false;
    dnnl_dims_t d, s2;
    for (int j = 0; j < nd; j++) {
        d[j] = ns[j];
        s2[j] = str[j];
    }
    if (dnnl_memory_desc_init_by_strides(out, nd, d, dnnl_f32, s2) != dnnl_success) return false;
    out->offset0 = x->offset0;
    return true;
}

/* reshape / flatten / squeeze / expand_dims: the plain data viewed with the new dims; a
 * strided view (a slice, a split piece) viewed with strides where they can say it (GPT-2's
 * q, k, v pieces split into heads), else copied plain first. */
gr_status dn_op_reshape(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    dnnl_memory_desc_t view;
    if (!st && !S->opts.no_layout_plan && dn_strided(&S->vals.data[xv].md) && !dn_is_plain(&S->vals.data[xv].md) &&
        strided_reshape(&S->vals.data[xv].md, n->ndims[0], n->shapes[0], &view)) {
        S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &view);
        return GR_OK;
    }
    if (!st) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    dnnl_memory_desc_t omd;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    if (dnnl_memory_desc_get_size(&omd) != dnnl_memory_desc_get_size(&S->vals.data[xv].md))
        return dn_fail(S, n, dnnl_success, "reshape changes the size");
    S->ent_val[dn_out_entry(S, n)] = dn_alias_new(S, xv, &omd);
    return GR_OK;
}

/* md's elements fill its bytes (no slice of a larger buffer) */
static bool dense(const dnnl_memory_desc_t *md) {
    int64_t n = 1;
    for (int i = 0; i < md->ndims; i++) n *= md->dims[i];
    return dnnl_memory_desc_get_size(md) == (size_t)n * sizeof(float);
}

/* Entry e is read by matmuls only, which take any strides (dn_op_matmul: attention's per-head
 * Q, K^T and V, permuted views of the projections, read in place), or by a scaling by a
 * constant the matmul reading it folds (dn_scale_folds: torch's q / sqrt(d) before QK^T, the
 * matmul then reads e itself), or, unless no_scale, by one whose result matmuls alone read (the
 * eltwise keeps a dense view's layout; a slice it would copy) */
static bool matmuls_only(dn_state *S, int e, bool no_scale) {
    if (S->is_head[e] || !S->cons[e].len) return false;
    float c;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *k = S->cons[e].data[i];
        int xe = -1;
        bool folds = dn_scale_folds(S, k, &xe, &c) && xe == e;
        bool scale = !no_scale && (k->op == IR_OP_MULTIPLY || k->op == IR_OP_DIVIDE) && dn_arg_entry(S, k, 0) == e &&
                     dn_scalar_const(S, dn_arg_entry(S, k, 1), &c) && !dn_in_composite(k);
        if (k->op != IR_OP_MATMUL && !folds && !(scale && matmuls_only(S, dn_out_entry(S, k), true))) return false;
    }
    return true;
}

/* Ops reading a dn_strided view of their source as it is: matmuls (dn_op_matmul reads it in
 * place, or copies it plain as a reorder before it would have), slices and splits (a reorder
 * from the view, or a view again); reshapes and permutes pass the view on to their own
 * readers (dn_op_reshape views it with strides or copies it plain). */
static const struct {
    ir_op_id op;
    bool passes;
} STRIDED_READERS[] = {
    {IR_OP_MATMUL, false},  {IR_OP_STRIDED_SLICE, false}, {IR_OP_SPLIT, false},       {IR_OP_RESHAPE, true},
    {IR_OP_SQUEEZE, true}, {IR_OP_EXPAND_DIMS, true},     {IR_OP_PERMUTE_DIMS, true},
};

/* Entry e (not a region output) is read only by STRIDED_READERS, through at most `depth` more
 * reshapes / permutes: a permute or slice producing it can be a view, no copy (Swin's and
 * timm's q, k, v: the fused projection reshaped, permuted and sliced per piece, each piece
 * copied once by its own slice or read in place by its matmul, not the whole permuted first). */
static bool strided_readers(dn_state *S, int e, int depth) {
    if (S->is_head[e] || !S->cons[e].len || depth < 0) return false;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        size_t t = 0, nt = sizeof STRIDED_READERS / sizeof STRIDED_READERS[0];
        while (t < nt && STRIDED_READERS[t].op != c->op) t++;
        if (t == nt || (c->op != IR_OP_MATMUL && dn_in_composite(c)) ||
            (STRIDED_READERS[t].passes && !strided_readers(S, dn_out_entry(S, c), depth - 1)))
            return false;
    }
    return true;
}

/* A permute is a view of its input, without a copy, when the input's layout permuted is the
 * plain output (channels-last NCHW read as NHWC), or when it is the channels-last layout of
 * the output (plain NHWC read as NCHW) and the output is not a region output: its consumers
 * then read it channels-last, or reorder it as this permute would have; or when matmuls alone
 * read it, or strided_readers. Otherwise a reorder of the plain input into the plain output. */
gr_status dn_op_permute(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims, e = dn_out_entry(S, n);
    int perm[DNNL_MAX_NDIMS];
    if (!dn_permute_perm(n, nd, perm)) return dn_fail(S, n, dnnl_success, "axes");
    dnnl_memory_desc_t pmd, omd, cl;
    dn_plain_md(&omd, n->ndims[0], n->shapes[0]);
    dn_channels_last(&cl, &omd);
    bool view = !S->opts.no_layout_plan && dnnl_memory_desc_permute_axes(&pmd, &S->vals.data[xv].md, perm) == dnnl_success;
    if (view) dn_md_canon(&pmd);
    if (view && (dnnl_memory_desc_equal(&pmd, &omd) || (!S->is_head[e] && nd >= 3 && dnnl_memory_desc_equal(&pmd, &cl)) ||
                 matmuls_only(S, e, !dense(&S->vals.data[xv].md)) || strided_readers(S, e, 4))) {
        S->ent_val[e] = dn_alias_new(S, xv, &pmd);
        S->stats.nviews++;
        return GR_OK;
    }
    /* (a strided view is reordered from directly) */
    if (!dn_strided(&S->vals.data[xv].md) && (st = dn_plain(S, n, xv, &xv))) return st;
    dnnl_status_t ds = dnnl_memory_desc_permute_axes(&pmd, &S->vals.data[xv].md, perm);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid permutation");
    dnnl_primitive_desc_t pd;
    ds = dnnl_reorder_primitive_desc_create(&pd, &pmd, S->eng, &omd, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "oneDNN rejects the reorder");
    int v = dn_val_new(S, V_TMP, &omd);
    dn_arg args[2] = {{DNNL_ARG_FROM, xv, pmd, NULL}, {DNNL_ARG_TO, v, omd, NULL}};
    st = dn_emit(S, n, pd, args, 2, true);
    if (!st) S->ent_val[e] = v;
    return st;
}

/* strided_slice (positive steps): a reorder from a dn_strided view of the input. */
static int tuple_ints(const rt_json_node *n, uint32_t k, int64_t *out, int max) {
    json_t *t = json_object_get(json_array_get(json_object_get(n->attrs, "args"), k), "tuple");
    int c = (int)json_array_size(t);
    if (!t || c > max) return -1;
    for (int i = 0; i < c; i++) {
        json_t *v = json_object_get(json_array_get(t, (size_t)i), "int");
        if (!json_is_integer(v)) return -1;
        out[i] = json_integer_value(v);
    }
    return c;
}

/* A slice can stay a dn_strided view of its input when every consumer reads its sources through
 * a reorder of its own: convolutions (into the layout their kernel picks) and concats
 * (ShuffleNet's split halves: into the concat's or the shuffle's layout); or reshapes, which
 * view it with strides or copy it (dn_op_reshape); or strided_readers. */
static bool slice_as_view(dn_state *S, int e) {
    if (S->is_head[e] || S->cons[e].len == 0) return false;
    if (!S->opts.no_layout_plan && strided_readers(S, e, 4)) return true;
    for (uint32_t i = 0; i < S->cons[e].len; i++) {
        const rt_json_node *c = S->cons[e].data[i];
        if (c->op == IR_OP_CONV2D ? dn_arg_entry(S, c, 0) != e : c->op != IR_OP_CONCAT && c->op != IR_OP_RESHAPE)
            return false;
    }
    return true;
}

/* Entry e of n: the view of value xv (a dn_strided layout) with dims vd, from start by step per
 * axis; kept as a view when its consumers reorder anyway, else copied plain by a reorder.
 * *rejected: oneDNN rejects the reorder of that view. */
static gr_status slice_emit(dn_state *S, const rt_json_node *n, int xv, int e, const int64_t *vd, const int64_t *start,
                            const int64_t *step, bool *rejected) {
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims;
    int64_t off = xmd.offset0;
    dnnl_dims_t d = {0}, vs = {0};
    for (int i = 0; i < nd; i++) {
        int64_t xs = xmd.format_desc.blocking.strides[i];
        d[i] = vd[i];
        vs[i] = xs * step[i];
        off += start[i] * xs;
        if (vd[i] && start[i] + (vd[i] - 1) * step[i] >= xmd.dims[i]) return dn_fail(S, n, dnnl_success, "slice out of bounds");
    }
    dnnl_memory_desc_t view, omd;
    dnnl_memory_desc_init_by_strides(&view, nd, d, dnnl_f32, vs);
    view.offset0 = off;
    bool whole = off == xmd.offset0;
    for (int i = 0; i < nd; i++) whole &= vd[i] == xmd.dims[i] && (step[i] == 1 || vd[i] == 1);
    if (whole && !S->is_head[e]) {
        /* the whole input (Swin's unpadding when there was no padding): the input itself */
        S->ent_val[e] = dn_alias_new(S, xv, &xmd);
        return GR_OK;
    }
    if (slice_as_view(S, e)) {
        /* no copy: the consumers reorder from the view into their own layouts anyway */
        S->ent_val[e] = dn_alias_new(S, xv, &view);
        return GR_OK;
    }
    dn_plain_md(&omd, nd, vd);
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &view, S->eng, &omd, S->eng, S->attr_plain);
    if ((*rejected = ds != dnnl_success)) return GR_OK;
    int v = dn_val_new(S, V_TMP, &omd);
    dn_arg args[2] = {{DNNL_ARG_FROM, xv, view, NULL}, {DNNL_ARG_TO, v, omd, NULL}};
    gr_status st = dn_emit(S, n, pd, args, 2, true);
    if (!st) S->ent_val[e] = v;
    return st;
}

/* n's slice of value xv (dn_strided); *rejected: oneDNN rejects the reorder of that view. */
static gr_status slice_of(dn_state *S, const rt_json_node *n, int xv, bool *rejected) {
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims;
    int64_t axes[DNNL_MAX_NDIMS], beg[DNNL_MAX_NDIMS], end[DNNL_MAX_NDIMS], stp[DNNL_MAX_NDIMS];
    int na = tuple_ints(n, 1, axes, DNNL_MAX_NDIMS), nb = tuple_ints(n, 2, beg, DNNL_MAX_NDIMS),
        ne = tuple_ints(n, 3, end, DNNL_MAX_NDIMS), ns = dn_nargs(n) > 4 ? tuple_ints(n, 4, stp, DNNL_MAX_NDIMS) : na;
    if (dn_nargs(n) <= 4)
        for (int i = 0; i < na; i++) stp[i] = 1;
    if (na < 0 || nb != na || ne != na || ns != na || n->ndims[0] != nd)
        return dn_fail(S, n, dnnl_success, "strided_slice needs constant axes / begin / end / strides");
    int64_t start[DNNL_MAX_NDIMS] = {0}, step[DNNL_MAX_NDIMS];
    for (int i = 0; i < nd; i++) step[i] = 1;
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i], dim;
        if (a < 0 || a >= nd || stp[i] <= 0) return dn_fail(S, n, dnnl_success, "strided_slice with a bad axis or a step <= 0");
        dim = xmd.dims[a];
        int64_t b = beg[i] < 0 ? beg[i] + dim : beg[i];
        start[a] = b < 0 ? 0 : b > dim ? dim : b;
        step[a] = stp[i];
    }
    return slice_emit(S, n, xv, dn_out_entry(S, n), n->shapes[0], start, step, rejected);
}

gr_status dn_op_strided_slice(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    /* a slice of a dn_strided layout (plain, channels-last) is a view of it; blocked goes plain */
    if (!st && (!dn_strided(&S->vals.data[xv].md) || S->opts.no_layout_plan)) st = dn_plain(S, n, xv, &xv);
    bool rejected = false;
    if (!st) st = slice_of(S, n, xv, &rejected);
    /* oneDNN's reorder rejects views whose strides interleave (a channels-last slice of every
     * other channel): the slice of a plain copy */
    if (!st && rejected && !dn_is_plain(&S->vals.data[xv].md) && !(st = dn_plain(S, n, xv, &xv))) st = slice_of(S, n, xv, &rejected);
    if (!st && rejected) st = dn_fail(S, n, dnnl_invalid_arguments, "oneDNN rejects the strided_slice reorder");
    return st;
}

/* A channel split of one image (N = 1) in a channel-blocked layout (8 or 16 channels a block)
 * whose pieces all start on a block: each piece is a run of the input's bytes in the same
 * layout, a view at an offset without a copy (MergeSiblings' merged convolutions, each branch
 * reading its slice in the layout its producer wrote). false when it does not apply; pieces
 * that are region outputs take the general path. */
static bool split_blocked(dn_state *S, const rt_json_node *n, int xv, int64_t axis) {
    const dnnl_memory_desc_t xmd = S->vals.data[xv].md;
    int nd = xmd.ndims, row = dn_out_entry(S, n);
    if (axis != 1 || nd < 3 || nd > 5 || xmd.dims[0] != 1 || S->opts.no_layout_plan) return false;
    int block = 0;
    for (int b = 8; b <= 16 && !block; b += 8) {
        dnnl_memory_desc_t bmd;
        if (dnnl_memory_desc_init_by_tag(&bmd, nd, xmd.dims, dnnl_f32, block_tag(nd, b)) == dnnl_success &&
            dnnl_memory_desc_equal(&bmd, &xmd))
            block = b;
    }
    if (!block) return false;
    size_t per_ch = sizeof(float);
    for (int d = 2; d < nd; d++) per_ch *= (size_t)xmd.dims[d];
    int64_t total = 0;
    for (uint32_t o = 0; o < n->noutputs; o++) {
        if (n->ndims[o] != nd || S->is_head[row + (int)o] || (o + 1 < n->noutputs && n->shapes[o][1] % block)) return false;
        total += n->shapes[o][1];
    }
    if (total != xmd.dims[1]) return false;
    int64_t at = 0;
    for (uint32_t o = 0; o < n->noutputs; o++) {
        int e = row + (int)o;
        dnnl_memory_desc_t md;
        if (S->cons[e].len && dnnl_memory_desc_init_by_tag(&md, nd, n->shapes[o], dnnl_f32, block_tag(nd, block)) == dnnl_success) {
            int v = dn_alias_new(S, xv, &md);
            S->vals.data[v].boff = (size_t)at * per_ch;
            S->ent_val[e] = v;
            S->stats.nviews++;
        }
        at += n->shapes[o][1];
    }
    return true;
}

/* split: each piece a slice along the axis, the pieces' sizes read from the output shapes; a
 * view oneDNN's reorder rejects is sliced from a plain copy, as strided_slice does */
gr_status dn_op_split(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    int x = dn_arg_entry(S, n, 0), xv = -1;
    gr_status st = dn_need_val(S, n, x, &xv);
    if (!st) {
        int64_t ax = dn_attr_int(n, "axis", 0);
        if (split_blocked(S, n, xv, ax < 0 ? ax + S->vals.data[xv].md.ndims : ax)) return GR_OK;
    }
    if (!st && (!dn_strided(&S->vals.data[xv].md) || S->opts.no_layout_plan)) st = dn_plain(S, n, xv, &xv);
    if (st) return st;
    int nd = S->vals.data[xv].md.ndims;
    int64_t axis = dn_attr_int(n, "axis", 0), at = 0, start[DNNL_MAX_NDIMS] = {0}, step[DNNL_MAX_NDIMS];
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd) return dn_fail(S, n, dnnl_success, "split axis out of range");
    for (int i = 0; i < nd; i++) step[i] = 1;
    int row = dn_out_entry(S, n);
    for (uint32_t o = 0; o < n->noutputs && !st; o++) {
        int e = row + (int)o;
        if (n->ndims[o] != nd) return dn_fail(S, n, dnnl_success, "split output rank");
        start[axis] = at;
        at += n->shapes[o][axis];
        /* pieces nothing reads need no copy */
        if (!S->cons[e].len && !S->is_head[e]) continue;
        bool rejected = false;
        st = slice_emit(S, n, xv, e, n->shapes[o], start, step, &rejected);
        if (!st && rejected && !dn_is_plain(&S->vals.data[xv].md) && !(st = dn_plain(S, n, xv, &xv)))
            st = slice_emit(S, n, xv, e, n->shapes[o], start, step, &rejected);
        if (!st && rejected) st = dn_fail(S, n, dnnl_invalid_arguments, "oneDNN rejects the split reorder");
    }
    if (!st && at != S->vals.data[xv].md.dims[axis]) return dn_fail(S, n, dnnl_success, "split pieces do not add up");
    return st;
}
