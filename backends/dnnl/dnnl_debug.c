/* The oneDNN engine's debug run (graft diff): the primitives run one at a time, and after each
 * one the kernel-node outputs it wrote are copied out in plain row-major layout and handed to
 * the graph's tap. Outputs folded into another primitive's post-ops have no buffer: they are
 * reported once per run with that primitive's name. Kept apart from the engine's fast path,
 * which it only reads (the value table and the primitive list built by prepare). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "backends/dnnl/dnnl_impl.h"

typedef struct dn_tap_plan {
    uint32_t *start;              /* per primitive + 1 (slot 0: before any): index into ents */
    int *ents;                    /* entries, grouped by the primitive after which they are read */
    int *fused;                   /* unobservable entries ... */
    int *fused_prim;              /* ... and the primitive their node was folded into */
    uint32_t nfused;
} dn_tap_plan;

void dn_debug_free(dn_state *S) {
    dn_tap_plan *t = S->tap;
    if (!t) return;
    free(t->start);
    free(t->ents);
    free(t->fused);
    free(t->fused_prim);
    free(t);
    S->tap = NULL;
}

static bool writes(int arg) { return arg == DNNL_ARG_DST || arg == DNNL_ARG_TO; }

/* The value whose memory an entry is read from: aliases (reshapes, views) share their base's,
 * up to one written in place over its base (a residual accumulated into), a value of its own
 * here since the base's entries must be read before that primitive overwrites them. */
static int tap_root(const dn_state *S, int v) {
    while (S->vals.data[v].alias >= 0 && !S->vals.data[v].inplace) v = S->vals.data[v].alias;
    return v;
}

/* Every value is written once, by the last primitive with it as destination (a residual is
 * preloaded into a fresh value just before the primitive that adds it, or that primitive writes
 * an in-place alias of it), and aliases share their tap root's memory: an entry can be read
 * right after the last writer of its tap root. */
static dn_tap_plan *plan_taps(dn_state *S) {
    uint32_t np = S->prims.len, nv = S->vals.len;
    dn_tap_plan *t = calloc(1, sizeof(*t));
    int *lw = malloc(sizeof(int) * (nv + 1)), *at = malloc(sizeof(int) * (S->nent + 1));
    t->start = calloc(np + 2, sizeof(uint32_t));
    t->ents = malloc(sizeof(int) * (S->nent + 1));
    t->fused = malloc(sizeof(int) * (S->nent + 1));
    t->fused_prim = malloc(sizeof(int) * (S->nent + 1));
    for (uint32_t v = 0; v < nv; v++) lw[v] = -1;
    for (uint32_t p = 0; p < np; p++) {
        dn_prim *pr = &S->prims.data[p];
        for (int a = 0; a < pr->nargs; a++)
            if (writes(pr->args[a].arg) && pr->args[a].val >= 0) lw[tap_root(S, pr->args[a].val)] = (int)p;
    }
    /* counting sort of the observable entries by the slot they are read in (0: before any
     * primitive, a reshape of a region input; p + 1: after primitive p) */
    for (uint32_t e = 0; e < S->nent; e++) {
        at[e] = -1;
        const rt_json_node *n = S->ent_node[e].node;
        if (!n || n->kind != RT_JSON_KERNEL || S->ent_val[e] < 0) continue;
        int r = tap_root(S, S->ent_val[e]);
        int kind = S->vals.data[r].kind;
        if (lw[r] >= 0) at[e] = lw[r] + 1;
        else if (kind == V_IN || kind == V_CONST || kind == V_OWNED) at[e] = 0;  /* a view of an input or weights */
        if (at[e] >= 0) t->start[at[e] + 1]++;
    }
    for (uint32_t p = 0; p <= np; p++) t->start[p + 1] += t->start[p];
    uint32_t *fill = calloc(np + 2, sizeof(uint32_t));
    for (uint32_t e = 0; e < S->nent; e++)
        if (at[e] >= 0) t->ents[t->start[at[e]] + fill[at[e]]++] = (int)e;
    free(fill);
    /* a float output with no value was folded: follow its first consumer to the entry that
     * got the value (the end of the post-op chain) and the primitive that wrote that */
    for (uint32_t e = 0; e < S->nent; e++) {
        const rt_json_node *n = S->ent_node[e].node;
        if (!n || n->kind != RT_JSON_KERNEL || S->ent_val[e] >= 0 || !dn_entry_f32(S, (int)e)) continue;
        int x = (int)e, prim = -1;
        for (int hop = 0; hop < 32 && prim < 0 && S->cons[x].len; hop++) {
            const rt_json_node *c = S->cons[x].data[0];
            x = (int)S->row_ptr_of[c - S->node0];
            if (S->ent_val[x] >= 0) prim = lw[tap_root(S, S->ent_val[x])];
        }
        t->fused[t->nfused] = (int)e;
        t->fused_prim[t->nfused++] = prim;
    }
    free(lw);
    free(at);
    return t;
}

/* One reorder between a value's layout and plain row-major (to_plain) or back. */
static dnnl_status_t copy_plain(dn_state *S, const dnnl_memory_desc_t *md, void *data, void *plain, bool to_plain) {
    dnnl_memory_desc_t pm;
    dn_plain_like(&pm, md);
    pm.data_type = md->data_type; /* the tap's tensor has the entry's type (uint8 / int8 levels too) */
    const dnnl_memory_desc_t *smd = to_plain ? md : &pm, *dmd = to_plain ? &pm : md;
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, smd, S->eng, dmd, S->eng, NULL);
    if (ds != dnnl_success) return ds;
    dnnl_primitive_t p;
    ds = dnnl_primitive_create(&p, pd);
    dnnl_primitive_desc_destroy(pd);
    if (ds != dnnl_success) return ds;
    dnnl_memory_t ms, mdst;
    dnnl_memory_create(&ms, smd, S->eng, to_plain ? data : plain);
    dnnl_memory_create(&mdst, dmd, S->eng, to_plain ? plain : data);
    dnnl_exec_arg_t ea[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, mdst}};
    ds = dnnl_primitive_execute(p, S->stream, 2, ea);
    if (ds == dnnl_success) ds = dnnl_stream_wait(S->stream);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(mdst);
    dnnl_primitive_destroy(p);
    return ds;
}

/* The data pointer of entry e's root memory after primitive p (its destination's handle) or,
 * for a view of a region input or of constant data, that buffer. */
static void *entry_data(dn_state *S, int e, int p) {
    int r = tap_root(S, S->ent_val[e]);
    if (p >= 0) {
        dn_prim *pr = &S->prims.data[p];
        for (int a = 0; a < pr->nargs; a++)
            if (writes(pr->args[a].arg) && pr->args[a].val >= 0 && tap_root(S, pr->args[a].val) == r) {
                void *h = NULL;
                dnnl_memory_get_data_handle(pr->args[a].mem, &h);
                /* the writer may fill another part of the buffer (a concat slot) */
                return h ? (char *)h - dn_val_boff(S, pr->args[a].val) + dn_val_boff(S, S->ent_val[e]) : NULL;
            }
        return NULL;
    }
    if (S->vals.data[r].kind != V_IN) return S->vals.data[r].ptr;
    for (uint32_t x = 0; x < S->exts.len; x++) {
        dn_ext *ex = &S->exts.data[x];
        if (ex->is_input && ex->index == S->vals.data[r].ext) {
            void *h = NULL;
            dnnl_memory_get_data_handle(ex->mem, &h);
            return h;
        }
    }
    return NULL;
}

static dnnl_status_t tap_slot(dn_state *S, uint32_t slot, rt_json_tap_fn tap, void *user) {
    dn_tap_plan *t = S->tap;
    int p = (int)slot - 1;
    for (uint32_t k = t->start[slot]; k < t->start[slot + 1]; k++) {
        int e = t->ents[k];
        const rt_json_node *n = S->ent_node[e].node;
        uint32_t o = S->ent_node[e].index;
        const dnnl_memory_desc_t *md = &S->vals.data[S->ent_val[e]].md;
        void *data = entry_data(S, e, p);
        rt_tensor *v = data ? rt_tensor_new(n->dtypes[o], n->ndims[o], n->shapes[o]) : NULL;
        if (!v) continue;
        dnnl_status_t ds = copy_plain(S, md, data, rt_tensor_data(v), true);
        const dn_prim *pr = p >= 0 ? &S->prims.data[p] : NULL;
        rt_json_tap_point tp = {S->symbol, n, (uint32_t)(n - S->node0), o, p, pr ? pr->kind : NULL, pr ? pr->impl : NULL, NULL};
        if (ds == dnnl_success && tap(&tp, v, user)) ds = copy_plain(S, md, data, rt_tensor_data(v), false);
        rt_tensor_release(v);
        if (ds != dnnl_success) return ds;
    }
    return dnnl_success;
}

dnnl_status_t dn_debug_run(dn_state *S, rt_json_tap_fn tap, void *user, uint32_t *failed) {
    if (!S->tap) S->tap = plan_taps(S);
    dn_tap_plan *t = S->tap;
    dnnl_status_t ds = tap_slot(S, 0, tap, user);
    uint32_t p = 0;
    for (; p < S->prims.len && ds == dnnl_success; p++) {
        ds = dn_exec(S, &S->prims.data[p]);
        if (ds == dnnl_success) ds = dnnl_stream_wait(S->stream);
        if (ds == dnnl_success) ds = tap_slot(S, p + 1, tap, user);
    }
    *failed = p;
    for (uint32_t k = 0; k < t->nfused && ds == dnnl_success; k++) {
        int e = t->fused[k], fp = t->fused_prim[k];
        const rt_json_node *n = S->ent_node[e].node;
        const dn_prim *pr = fp >= 0 ? &S->prims.data[fp] : NULL;
        char what[160];
        if (pr) snprintf(what, sizeof what, "primitive %d (%s)", fp, pr->kind);
        else snprintf(what, sizeof what, "another primitive");
        rt_json_tap_point tp = {S->symbol, n, (uint32_t)(n - S->node0), S->ent_node[e].index, fp,
                                pr ? pr->kind : NULL, pr ? pr->impl : NULL, what};
        tap(&tp, NULL, user);
    }
    return ds;
}
