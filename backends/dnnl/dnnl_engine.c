/* The oneDNN engine's driver (see dnnl.h): the memory plan, prepare (every node's primitive
 * through the op handlers, dnnl_ops.c, and the composites, dnnl_composite.c; constants settled
 * after it), run with the profiler hook, and the stats and ISA queries. The handlers' groundwork
 * is in dnnl_prim.c, dnnl_node.c and dnnl_postops.c. */
#include <immintrin.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_impl.h"
#include "backends/dnnl/dnnl_op_table.h"
#include "backends/dnnl/dnnl_ops_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ planning ---- */

typedef struct plan_item {
    int val;
    size_t size;
    int first, last;
} plan_item;

static int cmp_size_desc(const void *a, const void *b) {
    const plan_item *x = a, *y = b;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : x->val - y->val;
}

/* Offsets of TMP roots in one arena: largest first, lowest offset free over the lifetime. */
static gr_status plan_memory(dn_state *S) {
    uint32_t nv = S->vals.len;
    int *last = malloc(sizeof(int) * (nv + 1)), *first = malloc(sizeof(int) * (nv + 1));
    for (uint32_t v = 0; v < nv; v++) {
        first[v] = S->vals.data[v].first;
        last[v] = S->vals.data[v].last;
    }
    for (uint32_t v = 0; v < nv; v++) {
        int r = dn_root(S, (int)v);
        if (r == (int)v || S->vals.data[v].first < 0) continue;
        if (first[r] < 0 || S->vals.data[v].first < first[r]) first[r] = S->vals.data[v].first;
        if (S->vals.data[v].last > last[r]) last[r] = S->vals.data[v].last;
    }
    plan_item *items = calloc(nv + 1, sizeof(plan_item));
    uint32_t ni = 0;
    for (uint32_t v = 0; v < nv; v++) {
        dn_val *dv = &S->vals.data[v];
        if (dv->alias >= 0 || dv->kind != V_TMP || first[v] < 0) continue;
        size_t sz = (dnnl_memory_desc_get_size(&dv->md) + 63) / 64 * 64;
        items[ni++] = (plan_item){(int)v, sz, first[v], last[v]};
        S->stats.naive_bytes += sz;
    }
    qsort(items, ni, sizeof(plan_item), cmp_size_desc);
    size_t total = 0;
    size_t *offs = calloc(ni + 1, sizeof(size_t));
    for (uint32_t i = 0; i < ni; i++) {
        size_t off = 0;
        bool moved = true;
        while (moved) {
            moved = false;
            for (uint32_t j = 0; j < i; j++) {
                if (!S->opts.no_reuse && (items[j].last < items[i].first || items[i].last < items[j].first)) continue;
                if (off < offs[j] + items[j].size && offs[j] < off + items[i].size) {
                    off = offs[j] + items[j].size;
                    moved = true;
                }
            }
        }
        offs[i] = off;
        if (S->opts.debug)
            fprintf(stderr, "dnnl plan: val %d size %zu live [%d, %d] off %zu\n", items[i].val, items[i].size, items[i].first,
                    items[i].last, off);
        S->vals.data[items[i].val].off = off;
        if (off + items[i].size > total) total = off + items[i].size;
    }
    free(offs);
    free(items);
    free(first);
    free(last);
    S->stats.arena_bytes = total;
    /* on huge pages, as the weights: every run goes through the whole arena */
    S->arena = total ? dn_huge_alloc(total) : NULL;
    if (S->scratch_bytes) S->scratch = dn_huge_alloc(S->scratch_bytes);
    S->stats.scratch_bytes = S->scratch_bytes;
    if ((total && !S->arena) || (S->scratch_bytes && !S->scratch))
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl region '%s': out of memory for %zu bytes", S->symbol, total);
    return GR_OK;
}

/* Some value of root r starts past its start (a concat slot): r cannot be a caller's buffer,
 * whose handle is bound at run time without the offsets. */
static bool parts_at_offsets(dn_state *S, int r) {
    for (uint32_t v = 0; v < S->vals.len; v++)
        if (dn_root(S, (int)v) == r && dn_val_boff(S, (int)v)) return true;
    return false;
}

static void *val_ptr(dn_state *S, int v) {
    size_t boff = dn_val_boff(S, v);
    int r = dn_root(S, v);
    dn_val *dv = &S->vals.data[r];
    /* no arena (nothing intermediate): never offset a NULL pointer */
    if (dv->kind == V_TMP) return S->arena ? (char *)S->arena + dv->off + boff : NULL;
    return dv->ptr ? (char *)dv->ptr + boff : NULL;
}

static gr_status make_memories(dn_state *S) {
    for (uint32_t p = 0; p < S->prims.len; p++) {
        dn_prim *pr = &S->prims.data[p];
        pr->exec = calloc((size_t)pr->nargs + 1, sizeof(dnnl_exec_arg_t));
        for (int a = 0; a < pr->nargs; a++) {
            dn_arg *ar = &pr->args[a];
            void *ptr = ar->val == -2 ? S->scratch : val_ptr(S, ar->val);
            int r = ar->val >= 0 ? dn_root(S, ar->val) : -1;
            bool ext = r >= 0 && (S->vals.data[r].kind == V_IN || S->vals.data[r].kind == V_OUT);
            dnnl_status_t ds = dnnl_memory_create(&ar->mem, &ar->md, S->eng, ext ? DNNL_MEMORY_NONE : ptr);
            if (ds != dnnl_success) return dn_fail(S, NULL, ds, "cannot create memory");
            pr->exec[a].arg = ar->arg;
            pr->exec[a].memory = ar->mem;
            if (ext) {
                dn_ext e = {ar->mem, S->vals.data[r].kind == V_IN, S->vals.data[r].ext};
                gr_vec_push(&S->exts, e);
            }
        }
    }
    return GR_OK;
}

/* ------------------------------------------------------------------ prepare ---- */

static void dn_release(rt_json_graph *g, void *state) {
    (void)g;
    dn_state *S = state;
    if (!S) return;
    dn_debug_free(S);
    for (uint32_t p = 0; p < S->prims.len; p++) {
        dn_prim *pr = &S->prims.data[p];
        for (int a = 0; a < pr->nargs; a++)
            if (pr->args[a].mem) dnnl_memory_destroy(pr->args[a].mem);
        if (pr->prim) dnnl_primitive_destroy(pr->prim);
        if (pr->pd) dnnl_primitive_desc_destroy(pr->pd);
        if (pr->ctx) pr->ctx_free(pr->ctx);
        free(pr->args);
        free(pr->exec);
        gr_vec_free(&pr->nodes);
        for (uint32_t l = 0; l < pr->layers.len; l++) free((char *)pr->layers.data[l]);
        gr_vec_free(&pr->layers);
    }
    gr_vec_free(&S->pend);
    gr_vec_free(&S->qlevels);
    gr_vec_free(&S->qents);
    gr_vec_free(&S->qdeq);
    for (uint32_t i = 0; i < S->qweights.len; i++) free(S->qweights.data[i].zp);
    gr_vec_free(&S->qweights);
    gr_vec_free(&S->scaled);
    gr_vec_free(&S->prims);
    gr_vec_free(&S->vals);
    gr_vec_free(&S->exts);
    for (uint32_t i = 0; i < S->owned.len; i++) dn_const_free(S->owned.data[i]);
    gr_vec_free(&S->owned);
    gr_vec_free(&S->const_uses);
    free(S->pack_buf);
    free(S->csts);
    for (uint32_t i = 0; i < S->held.len; i++) rt_tensor_release(S->held.data[i]);
    gr_vec_free(&S->held);
    if (S->cons) {
        for (uint32_t e = 0; e < S->nent; e++) gr_vec_free(&S->cons[e]);
        free(S->cons);
    }
    free(S->ent_val);
    free(S->slot_root);
    free(S->slot_off);
    free(S->slot_buf);
    free(S->ent_node);
    free(S->is_head);
    free(S->consumed);
    free(S->row_ptr_of);
    free(S->arena);
    free(S->scratch);
    if (S->attr_plain) dnnl_primitive_attr_destroy(S->attr_plain);
    if (S->stream) dnnl_stream_destroy(S->stream);
    if (S->eng) dnnl_engine_destroy(S->eng);
    pthread_mutex_destroy(&S->lock);
    free(S);
}

static void add_layer(dn_prim *p, const char *src) {
    if (!src || !*src) return;
    for (uint32_t j = 0; j < p->layers.len; j++)
        if (!strcmp(p->layers.data[j], src)) return;
    char *c = strdup(src);
    if (c) gr_vec_push(&p->layers, c);
}

/* The distinct span sources of the nodes a primitive computes (span entries are [source,
 * output] pairs or {"source": ...} objects, as the json runtime reads them), copied: the
 * graph's document goes once the build has read it (build). */
static void prim_layers(dn_prim *p) {
    for (uint32_t i = 0; i < p->nodes.len; i++) {
        json_t *sp = json_object_get(p->nodes.data[i]->attrs, "span"), *o;
        size_t k;
        json_array_foreach(sp, k, o) add_layer(p, json_string_value(json_is_array(o) ? json_array_get(o, 0) : json_object_get(o, "source")));
        add_layer(p, p->nodes.data[i]->layer);
    }
}

/* ---------------------------------------------------- constants after prepare ---- */

/* Constants of the graph, tracked while the region is built so that each is let go as soon as
 * nothing more of the build can read it: its entry, value and the node after which it is next
 * checked (the last consumer of every entry whose value is a view of it). */
typedef struct dn_cst {
    int ent, val;
    uint32_t next;
    bool done;
    bool deferred;                /* stored only prepacked, not given plain */
} dn_cst;

/* Whether every consumer of constant c (entry ent, stored only prepacked) has its pack of c
 * among the graph's, made by this oneDNN on this CPU (the key names the node and the constant). */
static bool deferred_served(const dn_state *S, uint32_t c, int ent) {
    const void *data;
    size_t bytes;
    const char *layout, *key = rt_json_graph_deferred_pack(S->g, c, &data, &bytes, &layout);
    if (!key || !dn_pack_current(key) || !S->cons[ent].len) return false;
    for (uint32_t q = 0; q < S->cons[ent].len; q++) {
        uint32_t node = (uint32_t)(S->cons[ent].data[q] - S->node0);
        bool found = false;
        for (uint32_t k = 0; !found && (key = rt_json_graph_pack_at(S->g, k, &data, &bytes)); k++)
            found = data && dn_pack_for(key, node, c);
        if (!found) return false;
    }
    return true;
}

/* Whether node nid made of constant c only pure layout changes (at least one). */
static bool made_only_packs(const dn_state *S, uint32_t c, uint32_t nid) {
    bool any = false;
    for (uint32_t u = 0; u < S->const_uses.len; u++) {
        const dn_const_use *cu = &S->const_uses.data[u];
        if (cu->c != c || (cu->nid != nid && !cu->plain)) continue;
        if (!cu->inv) return false;
        any = true;
    }
    return any;
}

int dn_const_index(const dn_state *S, int root) {
    uint32_t nc = rt_json_graph_num_consts(S->g);
    for (uint32_t c = 0; S->csts && c < nc; c++)
        if (S->csts[c].val == root) return (int)c;
    return -1;
}

/* Constant c after node i was built: released (its reference held by the state when a
 * primitive or a tap reads it at run time) once every entry that views its data has had all
 * its consumers built; `final`: the build is over (heads included). Only a disposable graph
 * releases; otherwise only the bytes read in place are counted. */
static void const_settle(dn_state *S, dn_cst *cs, uint32_t c, uint32_t i, bool final) {
    dn_cst *k = &cs[c];
    if (k->done) return;
    uint32_t last = 0;
    bool held = false, only_packs = true;
    for (uint32_t e = 0; e < S->nent; e++) {
        int v = S->ent_val[e];
        /* a weight kept as these levels: read when its consumers are built */
        int lv = v < 0 ? dn_q_weight_levels(S, (int)e) : -1;
        bool levels = k->val >= 0 && lv >= 0 && dn_root(S, lv) == k->val;
        if ((int)e != k->ent && !levels && (v < 0 || k->val < 0 || dn_root(S, v) != k->val)) continue;
        if ((int)e != k->ent && !levels) held = true;  /* a node output viewing the data: a tap reads it */
        if (S->is_head[e] && !final) {   /* the output reorder reads it: at the end */
            k->next = UINT32_MAX;
            return;
        }
        only_packs &= !S->is_head[e] && !levels;
        for (uint32_t q = 0; q < S->cons[e].len; q++) {
            uint32_t nid = (uint32_t)(S->cons[e].data[q] - S->node0);
            if (nid > last) last = nid;
            only_packs &= made_only_packs(S, c, nid);
        }
    }
    if (!final && last > i) {
        k->next = last;
        return;
    }
    k->done = true;
    for (uint32_t v = 0; v < S->vals.len && k->val >= 0 && !held; v++)
        held = S->vals.data[v].first >= 0 && dn_root(S, (int)v) == k->val;
    rt_tensor *t = rt_json_graph_const(S->g, c);
    if (!t) return;
    /* scalars are held: releasing them saves nothing, and a later table of quantized levels
     * evaluates the float ops that read them (dnnl_op_quant.c) */
    held = held || rt_tensor_numel(t) <= 1;
    if (held) S->stats.const_bytes += rt_tensor_nbytes(t);
    /* read by nothing but the pure reorders of its consumers: an artifact keeps it as one of
     * those only, and lays it out plain from it where another CPU needs it */
    if (!held && only_packs) rt_json_graph_defer_const(S->g, c);
    if (!rt_json_graph_consts_disposable(S->g)) return;
    if (held) gr_vec_push(&S->held, rt_tensor_retain(t));
    else
        for (uint32_t v = 0; v < S->vals.len && k->val >= 0; v++)
            if (dn_root(S, (int)v) == k->val) S->vals.data[v].ptr = NULL;
    size_t nb = rt_json_graph_release_const(S->g, c);
    if (!held) S->stats.released_bytes += nb;
#ifdef __GLIBC__
    /* the originals were heap blocks between others: hand their pages back now, before the
     * copies still to come are allocated past them (resnet18: 36 MiB less at the peak) */
    S->untrimmed += nb;
    if (S->untrimmed >= ((size_t)8 << 20)) {
        malloc_trim(0);
        S->untrimmed = 0;
    }
#endif
}

const void *dn_const_data(dn_state *S, int v) {
    int r = dn_root(S, v), c = S->vals.data[r].kind == V_CONST ? dn_const_index(S, r) : -1;
    if (c < 0) return S->vals.data[r].ptr;
    if (!S->csts[c].done) gr_vec_push(&S->const_uses, ((dn_const_use){(uint32_t)c, S->building, false, true}));
    /* stored only prepacked and read before its last consumer is built (a build releases it
     * after that, and its handlers see no data then either) */
    if (!S->vals.data[r].ptr && S->csts[c].deferred && S->csts[c].next >= S->building &&
        dn_const_plain(S, rt_json_graph_node(S->g, S->building), (uint32_t)c, r, false))
        return NULL;
    return S->vals.data[r].ptr;
}

gr_status dn_const_missing(dn_state *S, const rt_json_node *n) {
    if (S->diag && S->diag->code) return S->diag->code;   /* dn_const_plain's own */
    return dn_fail(S, n, dnnl_success, "a constant it reads has no data");
}

rt_tensor *dn_const_tensor(dn_state *S, int e) {
    uint32_t nc = rt_json_graph_num_consts(S->g);
    for (uint32_t c = 0; S->csts && c < nc; c++)
        if (S->csts[c].ent == e) return rt_json_graph_const(S->g, c);
    return NULL;
}

/* The oneDNN type of a tensor the engine holds: float32, and the uint8 / int8 levels of the
 * quantized composites (backends/dnnl/dnnl_q_impl.h); undef for others. */
static dnnl_data_type_t val_type(DLDataType t) {
    if (t.lanes != 1) return dnnl_data_type_undef;
    if (t.code == kDLFloat && t.bits == 32) return dnnl_f32;
    if (t.code == kDLUInt && t.bits == 8) return dnnl_u8;
    return t.code == kDLInt && t.bits == 8 ? dnnl_s8 : dnnl_data_type_undef;
}

/* Reorders, eltwise, binary and pooling primitives whose result no primitive reads are pruned, and
 * those that only fed them: a dequantize into float32 whose consumers all read its levels
 * instead, float ops a table of levels replaced (dnnl_op_quant.c). A plain run skips them; a
 * tapped run (graft diff) runs them, so their values stay observable, and the memory plan
 * keeps their values. */
static void prune(dn_state *S) {
    uint32_t np = S->prims.len, nv = S->vals.len;
    int *uses = calloc(nv + 1, sizeof(int));
    if (!uses) return; /* nothing pruned: every primitive runs */
    for (uint32_t p = 0; p < np; p++)
        for (int a = 0; a < S->prims.data[p].nargs; a++)
            if (S->prims.data[p].args[a].val >= 0) uses[dn_root(S, S->prims.data[p].args[a].val)]++;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t p = np; p-- > 0;) {
            dn_prim *pr = &S->prims.data[p];
            if (pr->pruned || (strcmp(pr->kind, "reorder") && strcmp(pr->kind, "eltwise") && strcmp(pr->kind, "binary") &&
                               strcmp(pr->kind, "pooling_v2")))
                continue;
            int to = -1, own = 0;
            for (int a = 0; a < pr->nargs; a++)
                if ((pr->args[a].arg == DNNL_ARG_TO || pr->args[a].arg == DNNL_ARG_DST) && pr->args[a].val >= 0)
                    to = dn_root(S, pr->args[a].val);
            for (int a = 0; a < pr->nargs && to >= 0; a++) own += pr->args[a].val >= 0 && dn_root(S, pr->args[a].val) == to;
            if (to < 0 || S->vals.data[to].kind != V_TMP || uses[to] != own) continue;
            pr->pruned = changed = true;
            S->stats.nreorders -= pr->serves; /* a composite's own reorders were not counted */
            for (int a = 0; a < pr->nargs; a++)
                if (pr->args[a].val >= 0) uses[dn_root(S, pr->args[a].val)]--;
        }
    }
    free(uses);
}

/* The primitive of index i among those a plain run executes (rt_dnnl_prim's numbering). */
static const dn_prim *live_prim(const dn_state *S, uint32_t i) {
    for (uint32_t p = 0; p < S->prims.len; p++)
        if (!S->prims.data[p].pruned && i-- == 0) return &S->prims.data[p];
    return NULL;
}

static gr_status build(dn_state *S) {
    rt_json_graph *g = S->g;
    uint32_t nn = rt_json_graph_num_nodes(g);
    /* entries: producing node, values of inputs and constants */
    uint32_t ci = 0, nc = rt_json_graph_num_consts(g);
    dn_cst *cs = S->csts = calloc(nc + 1, sizeof(dn_cst));
    if (!cs) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < nn; i++) {
        rt_json_node *n = rt_json_graph_node(g, i);
        uint32_t row = rt_json_graph_entry_id(g, (rt_json_entry){i, 0});
        S->row_ptr_of[i] = row;
        for (uint32_t o = 0; o < n->noutputs; o++) S->ent_node[row + o] = (dn_entry){n, o};
        if (n->kind == RT_JSON_KERNEL) {
            for (uint32_t k = 0; k < n->ninputs; k++) {
                uint32_t e = rt_json_graph_entry_id(g, n->inputs[k]);
                bool dup = false;
                for (uint32_t q = 0; q < S->cons[e].len; q++) dup |= S->cons[e].data[q] == n;
                if (!dup) gr_vec_push(&S->cons[e], (const rt_json_node *)n);
            }
            continue;
        }
        DLDataType t = n->dtypes[0];
        dnnl_memory_desc_t md;
        dn_plain_md(&md, n->ndims[0], n->shapes[0]);
        if (n->kind == RT_JSON_INPUT) {
            if (val_type(t) != dnnl_data_type_undef) md.data_type = val_type(t);
            int v = dn_val_new(S, V_IN, &md);
            S->vals.data[v].ext = -1;
            for (uint32_t k = 0; k < rt_json_graph_num_inputs(g); k++)
                if (rt_json_graph_input_nid(g, k) == i) S->vals.data[v].ext = (int)k;
            S->ent_val[row] = val_type(t) != dnnl_data_type_undef ? v : -1;
        } else {
            rt_tensor *c = rt_json_graph_const(g, ci);
            /* deferred: an artifact's weight kept only in the layout its packs give it */
            bool deferred = !c && rt_json_graph_const_deferred(g, ci);
            if (!c && !deferred)
                return dn_fail(S, n, dnnl_success, "constant released by an earlier prepare of this graph");
            if (deferred && !(t.code == kDLFloat && t.bits == 32 && t.lanes == 1))
                return dn_fail(S, n, dnnl_success, "a constant stored only prepacked is not float32");
            cs[ci] = (dn_cst){(int)row, -1, 0, false, deferred};
            /* float32, and uint8 / int8 levels (weights kept as such, dnnl_op_quant.c) */
            if ((c || deferred) && val_type(t) != dnnl_data_type_undef) {
                md.data_type = val_type(t);
                int v = dn_val_new(S, V_CONST, &md);
                S->vals.data[v].ptr = c ? rt_tensor_data(c) : NULL;
                S->ent_val[row] = v;
                cs[ci].val = v;
            }
            ci++;
        }
    }
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t q = 0; q < S->cons[cs[c].ent].len; q++) {
            uint32_t nid = (uint32_t)(S->cons[cs[c].ent].data[q] - S->node0);
            if (nid > cs[c].next) cs[c].next = nid;
        }
    /* constants stored only prepacked stay so (their packs read in place) where each of their
     * consumers has its pack made by this oneDNN on this CPU; the others are laid out plain
     * now, their packs let go, so that no handler meets a weight without its data */
    for (uint32_t c = 0; c < nc && !st; c++)
        if (cs[c].deferred && !deferred_served(S, c, cs[c].ent)) st = dn_const_plain(S, NULL, c, cs[c].val, true);
    if (st) return st;
    for (uint32_t h = 0; h < rt_json_graph_num_heads(g); h++) S->is_head[rt_json_graph_entry_id(g, rt_json_graph_head(g, h))] = true;
    dn_concat_plan(S);
    for (uint32_t i = 0; i < nn && !st; i++) {
        rt_json_node *n = rt_json_graph_node(g, i);
        if (n->kind == RT_JSON_KERNEL && !S->consumed[i]) {
            json_t *ann = dn_composite_annotation(n);
            /* quantized composites check their own types (uint8 / int8 levels) */
            bool quant = ann && dnnl_q_kind_of(json_string_value(json_object_get(ann, "composite"))) != DNNL_Q_NONE;
            for (uint32_t o = 0; o < n->noutputs && !st && !quant; o++)
                if (!(n->dtypes[o].code == kDLFloat && n->dtypes[o].bits == 32))
                    st = dn_fail(S, n, dnnl_success, "only float32 tensors are supported");
            S->building = i;
            if (!st) st = ann ? dn_composite(S, n, ann) : dn_node(S, n, NULL);
        }
        /* weights whose consumers are all built: their originals go now, not at the end, so
         * the originals and the engine's copies of all of them never coexist */
        for (uint32_t c = 0; c < nc && !st; c++)
            if (!cs[c].done && cs[c].next <= i) const_settle(S, cs, c, i, false);
    }
    if (st) return st;
    /* every value a handler bound must have its node's declared shape and dtype: the region's
     * output buffers and the consumers' primitives are sized from the declarations (an x op x
     * with a declared [1, 1] output of a [1, 91] x would write 91 floats into one; a composite's
     * post-op node declared float16 would get float32 written into half the bytes) */
    for (uint32_t e = 0; e < S->nent; e++) {
        int v = S->ent_val[e];
        const rt_json_node *n = S->ent_node[e].node;
        if (v < 0 || !n || n->kind != RT_JSON_KERNEL) continue;
        uint32_t o = S->ent_node[e].index;
        const dnnl_memory_desc_t *md = &S->vals.data[v].md;
        int32_t nd = n->ndims[o];
        /* a float32 entry may hold bf16 between bf16 layers (dnnl.h "bf16") */
        dnnl_data_type_t want = val_type(n->dtypes[o]);
        bool ok = want != dnnl_data_type_undef &&
                  (md->data_type == want || (want == dnnl_f32 && md->data_type == dnnl_bf16 && dn_bf16_entry(S, (int)e)));
        ok = ok && (nd == 0 ? md->ndims == 1 && md->dims[0] == 1 : md->ndims == nd);
        for (int32_t k = 0; ok && k < nd; k++) ok = md->dims[k] == n->shapes[o][k];
        if (!ok) {
            char msg[96];
            snprintf(msg, sizeof msg, "output %u does not match its declared shape/dtype", o);
            return dn_fail(S, n, dnnl_success, msg);
        }
    }
    /* heads: written in place when produced plain, else copied */
    for (uint32_t h = 0; h < rt_json_graph_num_heads(g); h++) {
        uint32_t e = rt_json_graph_entry_id(g, rt_json_graph_head(g, h));
        int v = S->ent_val[e];
        const rt_json_node *n = S->ent_node[e].node;
        if (v < 0) v = dn_q_weight_val(S, (int)e);
        if (v < 0) return dn_fail(S, n, dnnl_success, "region output has no value");
        dn_val *dv = &S->vals.data[v];
        dnnl_memory_desc_t src = dv->md;
        if (dv->kind == V_TMP && dv->alias < 0 && dn_is_plain(&dv->md) && dv->first >= 0) {
            dv->kind = V_OUT;
            dv->ext = (int)h;
            continue;
        }
        /* a plain view of a whole buffer (a channels-last result seen as NHWC, collapsed
         * matmul rows): that buffer is the output */
        dn_val *rv = &S->vals.data[dn_root(S, v)];
        if (dv->alias >= 0 && rv->kind == V_TMP && rv->alias < 0 && rv->first >= 0 && dn_is_plain(&dv->md) &&
            !dv->md.offset0 && !rv->md.offset0 && dnnl_memory_desc_get_size(&dv->md) == dnnl_memory_desc_get_size(&rv->md) &&
            !parts_at_offsets(S, dn_root(S, v))) {
            rv->kind = V_OUT;
            rv->ext = (int)h;
            continue;
        }
        dnnl_memory_desc_t pm;
        dn_plain_md(&pm, n->ndims[S->ent_node[e].index], n->shapes[S->ent_node[e].index]);
        pm.data_type = src.data_type;
        int ov = dn_val_new(S, V_OUT, &pm);
        S->vals.data[ov].ext = (int)h;
        if (src.ndims != pm.ndims) {
            return dn_fail(S, n, dnnl_success, "region output rank mismatch");
        }
        dnnl_primitive_desc_t pd;
        dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &src, S->eng, &pm, S->eng, S->attr_plain);
        if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot reorder region output");
        dn_arg a[2] = {{DNNL_ARG_FROM, v, src, NULL}, {DNNL_ARG_TO, ov, pm, NULL}};
        st = dn_emit(S, n, pd, a, 2, true);
        if (st) return st;
    }
    for (uint32_t c = 0; c < nc; c++) const_settle(S, cs, c, nn, true);
    prune(S);
    for (uint32_t p = 0; p < S->prims.len; p++) prim_layers(&S->prims.data[p]);
    /* nothing reads the nodes' attrs from here on (a later prepare parses the text again): the
     * parsed document, several times the text's size, goes before the primitives' kernels and
     * the arena take its place */
    for (uint32_t p = 0; p < S->prims.len; p++) { /* its node's layer (the names move), else "" */
        dn_prim *pr = &S->prims.data[p];
        if (pr->nodes.len && pr->layer == pr->nodes.data[0]->layer) pr->layer = NULL;
    }
    rt_json_graph_drop_doc(g);
    for (uint32_t p = 0; p < S->prims.len; p++)
        if (!S->prims.data[p].layer) S->prims.data[p].layer = S->prims.data[p].nodes.data[0]->layer;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    /* the primitives a plain run executes; the pruned ones wait for a tapped run */
    for (uint32_t p = 0; p < S->prims.len; p++) {
        dn_prim *pr = &S->prims.data[p];
        dnnl_status_t ds = pr->pruned ? dnnl_success : dn_prim_make(pr);
        if (ds != dnnl_success) return dn_fail(S, pr->nodes.len ? pr->nodes.data[0] : NULL, ds, "cannot create primitive");
    }
    S->stats.nprims = 0;
    for (uint32_t p = 0; p < S->prims.len; p++) S->stats.nprims += !S->prims.data[p].pruned;
    st = plan_memory(S);
    if (!st) st = make_memories(S);
    return st;
}

rt_dnnl_opts rt_dnnl_default_opts(void) {
    return (rt_dnnl_opts){.transpose_weights = true,
                          .small_kb = RT_DNNL_SMALL_KB_DEFAULT,
                          .winograd = true,
                          .dw_jit = true,
                          .gemv = true,
                          .matmul_1x1 = true};
}

static gr_status dn_prepare(rt_json_graph *g, const void *opts, void **state, gr_diag *d) {
    gr_status st = rt_json_graph_check(g, d);
    if (st) return st;
    dn_state *S = calloc(1, sizeof(*S));
    if (!S) return gr_diag_set(d, GR_ERR_NOMEM, "dnnl: out of memory");
    pthread_mutex_init(&S->lock, NULL);
    S->opts = opts ? *(const rt_dnnl_opts *)opts : rt_dnnl_default_opts();
    S->threads = rt_dnnl_threads(&S->opts);
    S->bf16 = S->opts.bf16 && rt_dnnl_bf16_isa();
    S->stats.bf16_fallback = S->opts.bf16 && !S->bf16;
    S->g = g;
    S->diag = d;
    S->symbol = rt_json_graph_symbol(g);
    S->pending_out = -1;
    S->pending_sum = -1;
    uint32_t nn = rt_json_graph_num_nodes(g);
    S->nent = rt_json_graph_num_entries(g);
    S->node0 = rt_json_graph_node(g, 0);
    S->ent_val = malloc(sizeof(int) * (S->nent + 1));
    S->slot_root = malloc(sizeof(int) * (S->nent + 1));
    S->slot_buf = malloc(sizeof(int) * (S->nent + 1));
    S->slot_off = calloc(S->nent + 1, sizeof(size_t));
    if (!S->ent_val || !S->slot_root || !S->slot_buf || !S->slot_off) {
        dn_release(g, S);
        return gr_diag_set(d, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    for (uint32_t e = 0; e <= S->nent; e++) S->ent_val[e] = S->slot_root[e] = S->slot_buf[e] = -1;
    S->ent_node = calloc(S->nent + 1, sizeof(dn_entry));
    S->is_head = calloc(S->nent + 1, sizeof(bool));
    S->cons = calloc(S->nent + 1, sizeof(*S->cons));
    S->consumed = calloc(nn + 1, sizeof(bool));
    S->row_ptr_of = calloc(nn + 1, sizeof(uint32_t));
    dnnl_status_t ds = dnnl_engine_create(&S->eng, dnnl_cpu, 0);
    if (ds == dnnl_success) ds = dnnl_stream_create(&S->stream, S->eng, dnnl_stream_default_flags);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_create(&S->attr_plain);
    if (ds == dnnl_success) ds = dnnl_primitive_attr_set_scratchpad_mode(S->attr_plain, dnnl_scratchpad_mode_user);
    if (ds != dnnl_success) st = dn_fail(S, NULL, ds, "cannot create the CPU engine");
    if (!st && nn == 0) st = gr_diag_set(d, GR_ERR_INVALID, "dnnl region '%s': empty graph", S->symbol);
    /* "small": no tensor of the graph above dnnl.small_kb (default 256 KiB: PP-OCR cls is
     * small, rec is not; 0: never). Small regions are built and run single-threaded: oneDNN
     * sizes its kernels' work split for the thread count it sees when creating them. */
    size_t lim = (size_t)S->opts.small_kb * 1024, biggest = 0;
    for (uint32_t i = 0; i < nn; i++) {
        const rt_json_node *nd = rt_json_graph_node(g, i);
        if (nd->kind == RT_JSON_CONST) continue;
        for (uint32_t o = 0; o < nd->noutputs; o++) {
            size_t b = (size_t)(nd->dtypes[o].bits / 8);
            for (int32_t k = 0; k < nd->ndims[o]; k++) b *= (size_t)nd->shapes[o][k];
            if (b > biggest) biggest = b;
        }
    }
    S->small = lim > 0 && biggest < lim;
    S->stats.threads = S->small ? 1 : S->threads;
    /* oneDNN sizes a primitive's work split for the team it sees when creating it */
    rt_dnnl_team team;
    rt_dnnl_team_begin(&team, S->threads, S->small, false);
    if (!st) st = build(S);
    rt_dnnl_team_end(&team);
    if (S->opts.dump) fprintf(stderr, "%s\n", rt_json_graph_text(g));
    if (!st && S->opts.debug) {
        fprintf(stderr, "dnnl region '%s': %u primitives (%u reorders, %u on ref), %u permutes as views, %u composites, %u post-ops, "
                        "%u nodes folded, arena %zu, scratch %zu, weights %zu bytes\n",
                S->symbol, S->stats.nprims, S->stats.nreorders, S->stats.nref, S->stats.nviews, S->stats.ncomposites, S->stats.npostops,
                S->stats.nfused_nodes, S->stats.arena_bytes, S->scratch_bytes, S->stats.weight_bytes);
        for (uint32_t p = 0; p < S->prims.len; p++) {
            const dn_prim *pr = &S->prims.data[p];
            fprintf(stderr, "  %3u %-14s %-24s", p, pr->kind, pr->impl);
            for (uint32_t l = 0; l < pr->layers.len; l++) fprintf(stderr, "%s%s", l ? ", " : " ", pr->layers.data[l]);
            if (pr->ref_why) fprintf(stderr, "  [ref: %s]", pr->ref_why);
            fputc('\n', stderr);
        }
    }
    if (st) {
        dn_release(g, S);
        return st;
    }
    S->diag = NULL;
    *state = S;
    return GR_OK;
}

static gr_status dn_run(rt_json_graph *g, void *state, DLTensor *const *args, uint32_t nin, uint32_t nout,
                        gr_diag *d) {
    dn_state *S = state;
    gr_status st = rt_json_graph_check_args(g, args, nin, nout, d);
    if (st) return st;
    pthread_mutex_lock(&S->lock);
    /* denormals: flush to zero / treat as zero while the region runs (tiny activations in
     * PP-OCR's FPN made oneDNN's kernels ~100x slower); restored afterwards */
    unsigned int csr = _mm_getcsr();
    if (S->ftz) _mm_setcsr(csr | 0x8040);
    for (uint32_t x = 0; x < S->exts.len; x++) {
        dn_ext *e = &S->exts.data[x];
        const DLTensor *t = e->is_input ? args[e->index] : args[nin + (uint32_t)e->index];
        dnnl_memory_set_data_handle(e->mem, (char *)t->data + t->byte_offset);
    }
    dnnl_status_t ds = dnnl_success;
    uint32_t p = 0;
    /* a region of small tensors runs on the calling thread: its parallel regions would cost
     * more than its primitives (and stall on a busy machine) */
    rt_dnnl_team team;
    rt_dnnl_team_begin(&team, S->threads, S->small, !S->opts.no_bind);
    void *tap_user, *prof_user;
    rt_json_tap_fn tap = rt_json_graph_tap(g, &tap_user);
    rt_prim_profile_fn prof = rt_json_graph_profiler(g, &prof_user);
    if (tap) {
        ds = dn_debug_run(S, tap, tap_user, &p);
    } else {
        for (uint32_t li = 0; p < S->prims.len && ds == dnnl_success; p++) {
            if (S->prims.data[p].pruned) continue;
            uint64_t t0 = prof ? now_ns() : 0;
            ds = dn_exec(S, &S->prims.data[p]);
            if (prof && ds == dnnl_success && (ds = dnnl_stream_wait(S->stream)) == dnnl_success) {
                uint64_t ns = now_ns() - t0;
                rt_dnnl_prim_info info;
                rt_dnnl_prim(S, li, &info);
                rt_prim_event ev = {S->symbol, li, &info, ns, rt_dnnl_team_threads()};
                prof(&ev, prof_user);
            }
            li++;
        }
    }
    if (ds == dnnl_success) ds = dnnl_stream_wait(S->stream);
    rt_dnnl_team_end(&team);
    _mm_setcsr(csr);
    pthread_mutex_unlock(&S->lock);
    if (ds != dnnl_success) {
        st = gr_diag_set(d, GR_ERR_RUNTIME, "dnnl region '%s': primitive %u failed: %s", S->symbol, p ? p - 1 : 0,
                       dnnl_status_str(ds));
        if (p) gr_diag_set_layer(d, S->prims.data[p - 1].layer);
        return st;
    }
    return GR_OK;
}

void rt_dnnl_get_stats(const void *state, rt_dnnl_stats *out) {
    const dn_state *S = state;
    if (S) *out = S->stats;
    else memset(out, 0, sizeof(*out));
}

uint32_t rt_dnnl_num_prims(const void *state) { return state ? ((const dn_state *)state)->stats.nprims : 0; }

bool rt_dnnl_prim(const void *state, uint32_t i, rt_dnnl_prim_info *out) {
    const dn_state *S = state;
    const dn_prim *p = S ? live_prim(S, i) : NULL;
    if (!p) return false;
    out->kind = p->kind;
    out->impl = p->impl;
    out->ref_reason = p->ref_why;
    out->nlayers = p->layers.len;
    out->layers = p->layers.data;
    return true;
}

const rt_json_engine rt_dnnl_engine = {"dnnl_json", dn_prepare, dn_run, dn_release, sizeof(rt_dnnl_opts), NULL, NULL,
                                       true};
