/* The oneDNN engine: graph state, values, memory planning, post-op chains, run (see dnnl.h).
 * Op handlers live in dnnl_ops.c. */
#include <immintrin.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl_debug.h>
#include <stdatomic.h>

#include "runtime/dnnl.h"
#include "runtime/dnnl_impl.h"
#include "runtime/dnnl_op_table.h"

/* process-wide tallies of the primitives prepared (rt_dnnl_totals) */
static atomic_uint_fast64_t g_nprims, g_nref;
static pthread_mutex_t g_ref_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_last_ref[512];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------- helpers ---- */

gr_status dn_fail(dn_state *S, const rt_json_node *n, dnnl_status_t ds, const char *what) {
    return gr_fail(S->diag, GR_ERR_UNSUPPORTED, n ? n->layer : NULL, n ? n->name : NULL,
                   "dnnl region '%s': %s%s%s (layer '%s'): %s%s%s", S->symbol, what, n ? " for " : "",
                   n ? n->name : "", n && n->layer ? n->layer : "", ds == dnnl_success ? "" : "oneDNN: ",
                   ds == dnnl_success ? "" : dnnl_status_str(ds), "");
}

const char *dnnl_status_str(dnnl_status_t s) {
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "no implementation for these shapes/attributes";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "error";
    }
}

void dn_plain_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims) {
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    if (nd == 0) {
        nd = 1;
        d[0] = 1;
    }
    dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, NULL);
}

/* Same dims, plain row-major. */
void dn_plain_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_init_by_strides(out, md->ndims, md->dims, dnnl_f32, NULL);
}

bool dn_is_plain(const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t p;
    dn_plain_like(&p, md);
    return dnnl_memory_desc_equal(&p, md);
}

bool dn_pd_is_ref(const_dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
           !strncmp(impl, "ref", 3);
}

/* oneDNN 2.6 on avx512_core lists brdgmm_dw before jit_dw for depthwise convolutions, but
 * jit_dw runs them in 0.53-0.82 of brdgmm_dw's time (batch 1, channels-last, 2 threads: 3x3 /
 * 5x5, stride 1 / 2, maps 7-320, 16-1152 channels; 7x7 0.92-0.97). Swapped only for a jit_dw
 * descriptor with the same src and dst layouts, so nothing around it changes. */
void dn_pd_prefer_jit_dw(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, dnnl_engine_t eng,
                         dnnl_primitive_desc_t *pd) {
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
        strncmp(impl, "brdgmm_dw", 9))
        return;
    dnnl_primitive_desc_iterator_t it;
    if (dnnl_primitive_desc_iterator_create(&it, desc, attr, eng, NULL) != dnnl_success) return;
    const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(*pd, dnnl_query_src_md, 0),
                             *dst = dnnl_primitive_desc_query_md(*pd, dnnl_query_dst_md, 0);
    do {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        if (!c) break;
        const char *ci = NULL;
        if (dnnl_primitive_desc_query(c, dnnl_query_impl_info_str, 0, &ci) == dnnl_success && ci &&
            !strncmp(ci, "jit_dw:", 7) &&
            dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(c, dnnl_query_src_md, 0), src) &&
            dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(c, dnnl_query_dst_md, 0), dst)) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = c;
            break;
        }
        dnnl_primitive_desc_destroy(c);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
}

/* Activation layouts by rank: plain, channels-last, 8- and 16-channel blocks. */
static const dnnl_format_tag_t LIKE_TAGS[][4] = {
    [3] = {dnnl_abc, dnnl_acb, dnnl_aBc8b, dnnl_aBc16b},
    [4] = {dnnl_abcd, dnnl_acdb, dnnl_aBcd8b, dnnl_aBcd16b},
    [5] = {dnnl_abcde, dnnl_acdeb, dnnl_aBcde8b, dnnl_aBcde16b},
};

bool dn_md_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *like, int nd, const int64_t *dims) {
    if (like->ndims != nd || nd < 3 || nd > 5) {
        if (!dn_is_plain(like)) return false;
        dn_plain_md(out, nd, dims);
        return true;
    }
    dnnl_dims_t d;
    for (int i = 0; i < nd; i++) d[i] = dims[i];
    for (int t = 0; t < 4; t++) {
        dnnl_memory_desc_t m;
        if (dnnl_memory_desc_init_by_tag(&m, nd, like->dims, dnnl_f32, LIKE_TAGS[nd][t]) != dnnl_success ||
            !dnnl_memory_desc_equal(&m, like))
            continue;
        return dnnl_memory_desc_init_by_tag(out, nd, d, dnnl_f32, LIKE_TAGS[nd][t]) == dnnl_success;
    }
    return false;
}

void dn_channels_last(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md) {
    if (md->ndims < 3 || md->ndims > 5) dn_plain_like(out, md);
    else dnnl_memory_desc_init_by_tag(out, md->ndims, md->dims, dnnl_f32, LIKE_TAGS[md->ndims][1]);
}

/* Plain md of dims expanded with leading 1s to nd. */
void dn_plain_expand(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int nd) {
    int64_t d[DNNL_MAX_NDIMS];
    int pad = nd - md->ndims;
    for (int i = 0; i < nd; i++) d[i] = i < pad ? 1 : md->dims[i - pad];
    dn_plain_md(out, nd, d);
}

int dn_val_new(dn_state *S, int kind, const dnnl_memory_desc_t *md) {
    dn_val v = {0};
    v.kind = kind;
    v.md = *md;
    v.alias = -1;
    v.ext = -1;
    v.first = v.last = -1;
    gr_vec_push(&S->vals, v);
    return (int)S->vals.len - 1;
}

static int root_of(const dn_state *S, int v) {
    while (S->vals.data[v].alias >= 0) v = S->vals.data[v].alias;
    return v;
}

int root_val(const dn_state *S, int v) { return root_of(S, v); }

int dn_alias_new(dn_state *S, int base, const dnnl_memory_desc_t *md) {
    int v = dn_val_new(S, S->vals.data[root_of(S, base)].kind == V_TMP ? V_TMP : S->vals.data[root_of(S, base)].kind, md);
    S->vals.data[v].alias = base;
    return v;
}

static gr_status push_prim(dn_state *S, const rt_json_node *n, dn_prim p, const dn_arg *args, int nargs, bool reorder);

/* Appends a primitive; args are copied. */
gr_status dn_emit(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, const dn_arg *args, int nargs,
                  bool reorder) {
    dn_prim p = {0};
    dnnl_status_t ds = dnnl_primitive_create(&p.prim, pd);
    if (ds != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return dn_fail(S, n, ds, "cannot create primitive");
    }
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sz = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (sz > S->scratch_bytes) S->scratch_bytes = sz;
    p.nargs = nargs + (sz ? 1 : 0);
    p.args = calloc((size_t)p.nargs + 1, sizeof(dn_arg));
    memcpy(p.args, args, sizeof(dn_arg) * (size_t)nargs);
    if (sz) {
        p.args[nargs].arg = DNNL_ARG_SCRATCHPAD;
        p.args[nargs].val = -2;
        p.args[nargs].md = *sp;
    }
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) impl = "?";
    snprintf(p.impl, sizeof p.impl, "%s", impl);
    dnnl_primitive_kind_t pk = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &pk);
    p.kind = dnnl_prim_kind2str(pk);
    dnnl_primitive_desc_destroy(pd);
    return push_prim(S, n, p, args, nargs, reorder);
}

gr_status dn_emit_fn(dn_state *S, const rt_json_node *n, dn_fn fn, void *ctx, void (*ctx_free)(void *), const char *kind,
                     const char *impl, const dn_arg *args, int nargs) {
    dn_prim p = {.fn = fn, .ctx = ctx, .ctx_free = ctx_free, .kind = kind, .nargs = nargs};
    p.args = nargs <= DN_FN_MAX_ARGS ? calloc((size_t)nargs + 1, sizeof(dn_arg)) : NULL;
    if (!p.args) {
        ctx_free(ctx);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    memcpy(p.args, args, sizeof(dn_arg) * (size_t)nargs);
    snprintf(p.impl, sizeof p.impl, "%s", impl);
    return push_prim(S, n, p, args, nargs, false);
}

dnnl_status_t dn_exec(dn_state *S, const dn_prim *p) {
    if (p->prim) return dnnl_primitive_execute(p->prim, S->stream, p->nargs, p->exec);
    void *ptrs[DN_FN_MAX_ARGS] = {0};
    for (int a = 0; a < p->nargs; a++) dnnl_memory_get_data_handle(p->args[a].mem, &ptrs[a]);
    return p->fn(p->ctx, ptrs);
}

static gr_status push_prim(dn_state *S, const rt_json_node *n, dn_prim p, const dn_arg *args, int nargs, bool reorder) {
    p.layer = n ? n->layer : "";
    if (n) gr_vec_push(&p.nodes, n);
    /* the nodes folded into this primitive (a reorder only serves its consumer n) */
    if (!reorder) {
        for (uint32_t i = 0; i < S->pend.len; i++)
            if (S->pend.data[i] != n) gr_vec_push(&p.nodes, S->pend.data[i]);
        S->pend.len = 0;
    }
    atomic_fetch_add(&g_nprims, 1);
    if (!strncmp(p.impl, "ref", 3)) {
        p.ref_why = S->ref_why ? S->ref_why : "oneDNN has no other implementation of this primitive for these shapes";
        S->stats.nref++;
        atomic_fetch_add(&g_nref, 1);
        pthread_mutex_lock(&g_ref_lock);
        snprintf(g_last_ref, sizeof g_last_ref, "region '%s', layer '%s': %s %s: %s", S->symbol, p.layer, p.kind, p.impl,
                 p.ref_why);
        pthread_mutex_unlock(&g_ref_lock);
    }
    S->ref_why = NULL;
    int idx = (int)S->prims.len;
    for (int a = 0; a < nargs; a++) {
        int v = args[a].val;
        if (v < 0) continue;
        dn_val *dv = &S->vals.data[v];
        if (dv->first < 0) dv->first = idx;
        dv->last = idx;
    }
    gr_vec_push(&S->prims, p);
    if (reorder) S->stats.nreorders++;
    return GR_OK;
}

/* Runs one reorder now (constants at prepare). */
static gr_status run_reorder_now(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, void *src,
                                 const dnnl_memory_desc_t *dmd, void *dst) {
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, smd, S->eng, dmd, S->eng, NULL);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot reorder constant");
    dnnl_primitive_t p;
    ds = dnnl_primitive_create(&p, pd);
    dnnl_primitive_desc_destroy(pd);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot reorder constant");
    dnnl_memory_t ms, md;
    dnnl_memory_create(&ms, smd, S->eng, src);
    dnnl_memory_create(&md, dmd, S->eng, dst);
    dnnl_exec_arg_t ea[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
    ds = dnnl_primitive_execute(p, S->stream, 2, ea);
    if (ds == dnnl_success) ds = dnnl_stream_wait(S->stream);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(md);
    dnnl_primitive_destroy(p);
    return ds == dnnl_success ? GR_OK : dn_fail(S, n, ds, "cannot reorder constant");
}

/* Constants reordered into oneDNN's layouts, shared by every specialization of one symbolic
 * graph (rt_json_graph_shared): a region run at a new shape reuses its weights. Keyed by both
 * layouts and the source: a graph constant by its data (owned by the graph), an engine-made one
 * (weights with a batch norm folded in, made again at each prepare) by its bytes (two 64-bit
 * hashes and the size). */
typedef struct dn_wentry {
    dn_make_fn make;              /* what made buf from src (run_reorder_now's wrapper: a reorder) */
    const void *src;
    uint64_t h1, h2;
    dnnl_memory_desc_t smd, dmd;
    void *buf;
} dn_wentry;
typedef struct dn_wcache {
    pthread_mutex_t lock;
    GR_VEC(dn_wentry) e;
} dn_wcache;

static _Atomic uint64_t g_wshared_made, g_wshared_reused;

void rt_dnnl_shared_weights(uint64_t *made, uint64_t *reused) {
    if (made) *made = atomic_load(&g_wshared_made);
    if (reused) *reused = atomic_load(&g_wshared_reused);
}

static void *wcache_new(void) {
    dn_wcache *w = calloc(1, sizeof *w);
    if (w) pthread_mutex_init(&w->lock, NULL);
    return w;
}

static void wcache_free(void *p) {
    dn_wcache *w = p;
    if (!w) return;
    for (uint32_t i = 0; i < w->e.len; i++) free(w->e.data[i].buf);
    gr_vec_free(&w->e);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* Memory for constants the engine makes (reordered or folded weights). From 2 MiB on it starts
 * on a 2 MiB boundary and its whole 2 MiB pieces are asked for on transparent huge pages (the
 * rest stays on 4 KiB pages: no memory is added): weights are streamed once a run, after the
 * rest of the model has evicted them and their page translations, and a page walk every 4 KiB
 * cost a matrix-vector product (mnasnet1_0's 1280 x 1000 head, weights packed by the engine
 * then) a third of its time (0.15 -> 0.11 ms). */
#define DN_HUGE (2u << 20)
static void *weights_alloc(size_t bytes) {
    size_t sz = (bytes + 63) / 64 * 64;
    if (sz < DN_HUGE) return aligned_alloc(64, sz ? sz : 64);
    void *p;
    if (posix_memalign(&p, DN_HUGE, sz)) return NULL;
    madvise(p, sz / DN_HUGE * DN_HUGE, MADV_HUGEPAGE); /* only a hint: ignored where THP is off */
    return p;
}

/* The whole 2 MiB pieces of constant data read in place (a graph constant) moved onto huge
 * pages now (MADV_COLLAPSE, Linux 6.1 on; the data stays, one piece at a time is copied, so at
 * most 2 MiB more for a moment), for the reason above. A hint: nothing happens where the kernel
 * has no transparent huge pages or refuses. */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
void dn_hugepages(const void *p, size_t bytes) {
    uintptr_t lo = ((uintptr_t)p + DN_HUGE - 1) / DN_HUGE * DN_HUGE, hi = ((uintptr_t)p + bytes) / DN_HUGE * DN_HUGE;
    if (hi <= lo) return;
    madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    madvise((void *)lo, hi - lo, MADV_COLLAPSE);
}

static gr_status make_reorder(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, const void *src,
                              const dnnl_memory_desc_t *dmd, void *dst, void *ctx) {
    (void)ctx;
    return run_reorder_now(S, n, smd, (void *)src, dmd, dst);
}

/* Constant src (md smd) made into dmd by make (ctx: its own): from the shared cache, or made
 * now into it. */
static gr_status shared_make(dn_state *S, dn_wcache *w, const rt_json_node *n, const dnnl_memory_desc_t *smd,
                             const void *src, bool by_content, const dnnl_memory_desc_t *dmd, dn_make_fn make, void *ctx,
                             void **out) {
    uint64_t h1 = 0, h2 = 0;
    if (by_content) {
        size_t nb = dnnl_memory_desc_get_size(smd);
        h1 = gr_hash_bytes(src, nb, 0x9e3779b97f4a7c15ull) ^ nb;
        h2 = gr_hash_bytes(src, nb, 0xc2b2ae3d27d4eb4full);
    }
    const void *key = by_content ? NULL : src;
    pthread_mutex_lock(&w->lock);
    for (uint32_t i = 0; i < w->e.len; i++) {
        dn_wentry *e = &w->e.data[i];
        if (e->make == make && e->src == key && e->h1 == h1 && e->h2 == h2 && dnnl_memory_desc_equal(&e->smd, smd) &&
            dnnl_memory_desc_equal(&e->dmd, dmd)) {
            *out = e->buf;
            pthread_mutex_unlock(&w->lock);
            atomic_fetch_add(&g_wshared_reused, 1);
            return GR_OK;
        }
    }
    void *buf = weights_alloc(dnnl_memory_desc_get_size(dmd));
    gr_status st = buf ? make(S, n, smd, src, dmd, buf, ctx) : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    if (!st) {
        dn_wentry e = {make, key, h1, h2, *smd, *dmd, buf};
        gr_vec_push(&w->e, e);
        *out = buf;
        atomic_fetch_add(&g_wshared_made, 1);
    } else {
        free(buf);
    }
    pthread_mutex_unlock(&w->lock);
    return st;
}

gr_status dn_const_made(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *dmd, dn_make_fn make,
                        void *ctx, void **out) {
    int r = root_of(S, v);
    const dnnl_memory_desc_t *smd = &S->vals.data[v].md;
    const void *src = S->vals.data[r].ptr;
    dn_wcache *wc = rt_json_graph_shared(S->g, wcache_new, wcache_free);
    gr_status st;
    *out = NULL;
    if (wc) {
        st = shared_make(S, wc, n, smd, src, S->vals.data[r].kind == V_OWNED, dmd, make, ctx, out);
    } else {
        *out = dn_owned_alloc(S, dnnl_memory_desc_get_size(dmd));
        st = *out ? make(S, n, smd, src, dmd, *out, ctx) : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    if (!st) S->stats.weight_bytes += dnnl_memory_desc_get_size(dmd);
    return st;
}

void *dn_owned_alloc(dn_state *S, size_t bytes) {
    void *p = weights_alloc(bytes);
    if (p) gr_vec_push(&S->owned, p);
    return p;
}

/* The value `v` in layout `want`: v itself, a cached copy, a constant reordered now, or a new
 * reorder primitive. */
gr_status dn_as(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *want, int *out) {
    const dn_val *dv = &S->vals.data[v];
    if (dnnl_memory_desc_equal(&dv->md, want)) {
        *out = v;
        return GR_OK;
    }
    for (uint32_t i = 0; i < S->vals.len; i++)
        if (S->vals.data[i].copy_of == v + 1 && dnnl_memory_desc_equal(&S->vals.data[i].md, want)) {
            *out = (int)i;
            return GR_OK;
        }
    int r = root_of(S, v);
    if (S->vals.data[r].kind == V_CONST || S->vals.data[r].kind == V_OWNED) {
        /* a constant of a specialization: reordered once for every shape */
        void *dst;
        gr_status st = dn_const_made(S, n, v, want, make_reorder, NULL, &dst);
        if (st) return st;
        int nv = dn_val_new(S, V_OWNED, want);
        S->vals.data[nv].ptr = dst;
        S->vals.data[nv].copy_of = v + 1;
        *out = nv;
        return GR_OK;
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &S->vals.data[v].md, S->eng, want, S->eng, S->attr_plain);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "cannot reorder");
    int nv = dn_val_new(S, V_TMP, want);
    S->vals.data[nv].copy_of = v + 1;
    dn_arg a[2] = {{DNNL_ARG_FROM, v, S->vals.data[v].md, NULL}, {DNNL_ARG_TO, nv, *want, NULL}};
    gr_status st = dn_emit(S, n, pd, a, 2, true);
    if (st) return st;
    *out = nv;
    return GR_OK;
}

gr_status dn_src_weights(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, int xv, int wv, dn_arg *args,
                         int *na) {
    int xin, win;
    gr_status st = dn_as(S, n, xv, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), &xin);
    if (!st) st = dn_as(S, n, wv, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &win);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    args[(*na)++] = (dn_arg){DNNL_ARG_SRC, xin, S->vals.data[xin].md, NULL};
    args[(*na)++] = (dn_arg){DNNL_ARG_WEIGHTS, win, S->vals.data[win].md, NULL};
    return GR_OK;
}

/* Every element of md sits where the plain row-major layout of its dims puts it: a blocked or
 * permuted layout whose blocked / permuted dims are 1 or do not change the order (a 1x1 map in
 * nChw16c with one image, or with a multiple of 16 channels; channels-last with H = W = 1). A
 * plain view of its buffer then reads the same data, without a copy. */
static bool dn_plain_bytes(const dnnl_memory_desc_t *md) {
    if (md->format_kind != dnnl_blocked || md->offset0) return false;
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (b->inner_nblks > 1) return false;
    int bd = b->inner_nblks ? b->inner_idxs[0] : -1;
    int64_t bs = b->inner_nblks ? b->inner_blks[0] : 1, want = 1;
    for (int i = md->ndims - 1; i >= 0; i--) {
        int64_t d = md->dims[i];
        /* the blocked dim: (i / bs) * stride + i % bs == i * want for every i < d */
        if (i == bd && d > 1 && (want != 1 || (d > bs && b->strides[i] != bs))) return false;
        if (i != bd && d > 1 && b->strides[i] != want) return false;
        want *= d;
    }
    return true;
}

gr_status dn_plain(dn_state *S, const rt_json_node *n, int v, int *out) {
    dnnl_memory_desc_t p;
    dn_plain_like(&p, &S->vals.data[v].md);
    if (!S->opts.no_layout_plan && !dnnl_memory_desc_equal(&p, &S->vals.data[v].md) && dn_plain_bytes(&S->vals.data[v].md)) {
        *out = dn_alias_new(S, v, &p);
        return GR_OK;
    }
    return dn_as(S, n, v, &p, out);
}

/* ------------------------------------------------------------ graph queries ---- */

int dn_in_entry(dn_state *S, const rt_json_node *n, uint32_t k) {
    return k < n->ninputs ? (int)rt_json_graph_entry_id(S->g, n->inputs[k]) : -1;
}

/* Entry of call argument k when it is a node input ({"in": i}), else -1. */
int dn_arg_entry(dn_state *S, const rt_json_node *n, uint32_t k) {
    json_t *args = json_object_get(n->attrs, "args");
    json_t *a = json_array_get(args, k);
    json_t *in = a ? json_object_get(a, "in") : NULL;
    if (!json_is_integer(in)) return -1;
    return dn_in_entry(S, n, (uint32_t)json_integer_value(in));
}

bool dn_arg_num(const rt_json_node *n, uint32_t k, double *v) {
    json_t *a = json_array_get(json_object_get(n->attrs, "args"), k);
    if (!a) return false;
    json_t *x = json_object_get(a, "float");
    if (!x) x = json_object_get(a, "int");
    if (!json_is_number(x)) return false;
    *v = json_number_value(x);
    return true;
}

uint32_t dn_nargs(const rt_json_node *n) { return (uint32_t)json_array_size(json_object_get(n->attrs, "args")); }

json_t *dn_attr(const rt_json_node *n, const char *key) {
    return json_object_get(json_object_get(n->attrs, "op_attrs"), key);
}

int64_t dn_attr_int(const rt_json_node *n, const char *key, int64_t dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_integer(v) ? json_integer_value(v) : json_is_real(v) ? (int64_t)json_real_value(v) : dflt;
}

double dn_attr_float(const rt_json_node *n, const char *key, double dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

bool dn_attr_bool(const rt_json_node *n, const char *key, bool dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_boolean(v) ? json_is_true(v) : json_is_integer(v) ? json_integer_value(v) != 0 : dflt;
}

const char *dn_attr_str(const rt_json_node *n, const char *key, const char *dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* Integer list attribute (a bare int counts as one element); returns the count, -1 if absent. */
int dn_attr_ints(const rt_json_node *n, const char *key, int64_t *out, int max) {
    json_t *v = dn_attr(n, key);
    if (json_is_integer(v)) {
        out[0] = json_integer_value(v);
        return 1;
    }
    if (!json_is_array(v)) return -1;
    int c = (int)json_array_size(v);
    if (c > max) return -1;
    for (int i = 0; i < c; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x)) return -1;
        out[i] = json_is_integer(x) ? json_integer_value(x) : (int64_t)json_real_value(x);
    }
    return c;
}

bool dn_entry_f32(dn_state *S, int e) {
    (void)S;
    const rt_json_node *n = S->ent_node[e].node;
    DLDataType t = n->dtypes[S->ent_node[e].index];
    return t.code == kDLFloat && t.bits == 32 && t.lanes == 1;
}

int dn_entry_ndim(dn_state *S, int e) { return S->ent_node[e].node->ndims[S->ent_node[e].index]; }
const int64_t *dn_entry_shape(dn_state *S, int e) { return S->ent_node[e].node->shapes[S->ent_node[e].index]; }

/* A scalar float32 constant (one element). */
bool dn_scalar_const(dn_state *S, int e, float *v) {
    if (e < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || !dn_entry_f32(S, e)) return false;
    int val = S->ent_val[e];
    if (val < 0) return false;
    const dnnl_memory_desc_t *md = &S->vals.data[val].md;
    if (dnnl_memory_desc_get_size(md) != sizeof(float)) return false;
    *v = *(const float *)S->vals.data[val].ptr;
    return true;
}

/* ---------------------------------------------------------------- post-ops ---- */

/* The engine's columns of runtime/dnnl_op_table.h, by op id. */
typedef struct op_row {
    bool in_table;
    int kind;                     /* DN_K_* */
    dnnl_alg_kind_t alg;
    float alpha, beta;
} op_row;

static const op_row ROWS[IR_OP_COUNT] = {
#define X(op, kind, check, handler, alg, alpha, beta) [IR_OP_##op] = {true, kind, alg, alpha, beta},
    DNNL_OPS(X)
#undef X
};

static const op_row *row_of(const rt_json_node *n) {
    return n->kind == RT_JSON_KERNEL && n->op >= 0 && n->op < IR_OP_COUNT && ROWS[n->op].in_table ? &ROWS[n->op] : NULL;
}

/* Unary eltwise of node n on its first argument. */
static bool unary_of(const rt_json_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta) {
    const op_row *r = row_of(n);
    if (!r || r->kind != DN_K_ELT) return false;
    *alg = r->alg;
    *alpha = r->alpha;
    *beta = r->beta;
    if (n->op == IR_OP_LEAKYRELU) *alpha = (float)dn_attr_float(n, "alpha", 0.01);
    if (n->op == IR_OP_CLIP) {
        double lo, hi;
        if (!dn_arg_num(n, 1, &lo) || !dn_arg_num(n, 2, &hi)) return false;
        *alpha = (float)lo;
        *beta = (float)hi;
    }
    return true;
}

static bool is_op(const rt_json_node *n, ir_op_id op) { return n->kind == RT_JSON_KERNEL && n->op == op; }

/* For a binary node n with one operand `e`: the other operand's entry, and whether e is
 * the first operand. */
static int other_operand(dn_state *S, const rt_json_node *n, int e, bool *e_first) {
    int a = dn_arg_entry(S, n, 0), b = dn_arg_entry(S, n, 1);
    if (a == e && b != e) {
        *e_first = true;
        return b;
    }
    if (b == e && a != e) {
        *e_first = false;
        return a;
    }
    return -1;
}

static bool is_binary(const rt_json_node *n) {
    const op_row *r = row_of(n);
    return r && r->kind == DN_K_BIN;
}

/* Binary node with a scalar constant operand as an eltwise on e. */
static bool scalar_eltwise(dn_state *S, const rt_json_node *n, int e, dnnl_alg_kind_t *alg, float *alpha,
                           float *beta) {
    if (!is_binary(n)) return false;
    bool first;
    int o = other_operand(S, n, e, &first);
    float c;
    if (o < 0 || !dn_scalar_const(S, o, &c)) return false;
    ir_op_id op = n->op;
    *alg = dnnl_eltwise_linear;
    *alpha = 1.f;
    *beta = 0.f;
    if (op == IR_OP_ADD) *beta = c;
    else if (op == IR_OP_SUBTRACT) {
        *alpha = first ? 1.f : -1.f;
        *beta = first ? -c : c;
    } else if (op == IR_OP_MULTIPLY) *alpha = c;
    else if (op == IR_OP_DIVIDE) {
        if (!first) { /* c / x = c * x^-1 */
            *alg = dnnl_eltwise_pow;
            *alpha = c;
            *beta = -1.f;
        } else if (c == 0.f) {
            return false;
        } else {
            *alpha = 1.f / c;
        }
    } else if (op == IR_OP_POWER) {
        if (!first) return false;
        *alg = dnnl_eltwise_pow;
        *beta = c;
    } else if (op == IR_OP_MAXIMUM) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = c;
        *beta = INFINITY;
    } else if (op == IR_OP_MINIMUM) {
        *alg = dnnl_eltwise_clip_v2;
        *alpha = -INFINITY;
        *beta = c;
    } else return false;
    return true;
}

static bool sole_consumer(dn_state *S, int e, const rt_json_node **out) {
    if (S->is_head[e] || S->cons[e].len != 1) return false;
    *out = S->cons[e].data[0];
    return true;
}

static bool near(float a, float b) { return fabsf(a - b) <= 1e-5f * fmaxf(1.f, fabsf(b)); }

static bool hswish_ok(float lo, float hi, float A, float B, float C) {
    /* x * clip(x*A + B, lo, hi) * C == hardswish(x) == x * clip(x/6 + 1/2, 0, 1) */
    return near(lo, 0.f) && near((hi - lo) * C, 1.f) && near(A * C, 1.f / 6.f) && near(B * C, 0.5f);
}

/* The multiply x * y where y is entry `y` and x is e, as y's sole consumer. */
static const rt_json_node *mul_with(dn_state *S, int y, int e) {
    const rt_json_node *next;
    bool f;
    if (!sole_consumer(S, y, &next) || !is_op(next, IR_OP_MULTIPLY) || other_operand(S, next, y, &f) != e) return NULL;
    return next;
}

/* x * f(x) forms starting at consumer n of e: swish (x * sigmoid(x)) and hardswish in the
 * exporters' forms: linears, clip, [scaling], multiply by x, [scaling] -- e.g.
 * x * clip(x + 3, 0, 6) / 6, (x * clip(x + 3, 0, 6)) / 6, x * clip(x / 6 + 1/2, 0, 1).
 * Returns the last node. */
static const rt_json_node *match_xfx(dn_state *S, int e, const rt_json_node *n, dnnl_alg_kind_t *alg,
                                     float *alpha, const rt_json_node **chain, int *nchain) {
    const rt_json_node *cur = n, *next, *m;
    int k = 0;
    chain[k++] = n;
    dnnl_alg_kind_t a1;
    float al, be;
    if (is_op(n, IR_OP_SIGMOID)) {
        if (!(m = mul_with(S, dn_out_entry(S, n), e))) return NULL;
        chain[k++] = m;
        *alg = dnnl_eltwise_swish;
        *alpha = 1.f;
        *nchain = k;
        return m;
    }
    if (!scalar_eltwise(S, n, e, &a1, &al, &be) || a1 != dnnl_eltwise_linear) return NULL;
    float A = al, B = be, lo, hi, C = 1.f;
    for (;;) {
        if (!sole_consumer(S, dn_out_entry(S, cur), &next) || k >= 4) return NULL;
        if (is_op(next, IR_OP_CLIP)) break;
        if (!scalar_eltwise(S, next, dn_out_entry(S, cur), &a1, &al, &be) || a1 != dnnl_eltwise_linear) return NULL;
        A *= al;
        B = B * al + be;
        cur = next;
        chain[k++] = cur;
    }
    double dlo, dhi;
    if (!dn_arg_num(next, 1, &dlo) || !dn_arg_num(next, 2, &dhi) || dn_arg_entry(S, next, 0) != dn_out_entry(S, cur))
        return NULL;
    lo = (float)dlo;
    hi = (float)dhi;
    cur = next;
    chain[k++] = cur;
    if (!(m = mul_with(S, dn_out_entry(S, cur), e))) {
        if (!sole_consumer(S, dn_out_entry(S, cur), &next) || !scalar_eltwise(S, next, dn_out_entry(S, cur), &a1, &al, &be) ||
            a1 != dnnl_eltwise_linear || be != 0.f)
            return NULL;
        C = al;
        cur = next;
        chain[k++] = cur;
        if (!(m = mul_with(S, dn_out_entry(S, cur), e))) return NULL;
    }
    chain[k++] = m;
    if (!hswish_ok(lo, hi, A, B, C)) {
        /* a scaling after the product */
        if (!sole_consumer(S, dn_out_entry(S, m), &next) || !scalar_eltwise(S, next, dn_out_entry(S, m), &a1, &al, &be) ||
            a1 != dnnl_eltwise_linear || be != 0.f || !hswish_ok(lo, hi, A, B, C * al))
            return NULL;
        m = next;
        chain[k++] = m;
    }
    *alg = dnnl_eltwise_hardswish;
    *alpha = 0.f;
    *nchain = k;
    return m;
}

dnnl_alg_kind_t dn_binary_alg(ir_op_id op, bool *commutes) {
    if (op < 0 || op >= IR_OP_COUNT || !ROWS[op].in_table || ROWS[op].kind != DN_K_BIN) return dnnl_alg_kind_undef;
    dnnl_alg_kind_t alg = ROWS[op].alg;
    if (commutes) *commutes = alg != dnnl_binary_sub && alg != dnnl_binary_div;
    return alg;
}

/* One post-op step on entry e at consumer n. excl: e must be used only by the step. */
bool dn_match_step(dn_state *S, int e, const rt_json_node *n, bool excl, dn_step *ps) {
    memset(ps, 0, sizeof(*ps));
    /* nodes of fused composites are built by their composite only */
    if (n->kind != RT_JSON_KERNEL || n->noutputs != 1 || dn_in_composite(n)) return false;
    int oe = dn_out_entry(S, n);
    if (!dn_entry_f32(S, oe)) return false;
    const rt_json_node *chain[8];
    int nchain = 0;
    const rt_json_node *last = match_xfx(S, e, n, &ps->alg, &ps->alpha, chain, &nchain);
    if (last) {
        if (excl && (S->is_head[e] || S->cons[e].len != 2)) return false;
        for (int i = 0; i < nchain; i++)
            if (dn_in_composite(chain[i])) return false;
        ps->kind = STEP_ELTWISE;
        ps->nnodes = nchain;
        memcpy(ps->nodes, chain, sizeof(chain[0]) * (size_t)nchain);
        ps->out = dn_out_entry(S, last);
        return true;
    }
    if (excl && (S->is_head[e] || S->cons[e].len != 1)) return false;
    ps->nnodes = 1;
    ps->nodes[0] = n;
    ps->out = oe;
    /* same shape in and out (no broadcast growth of e) */
    int nd = dn_entry_ndim(S, e);
    if (nd != dn_entry_ndim(S, oe) || memcmp(dn_entry_shape(S, e), dn_entry_shape(S, oe), sizeof(int64_t) * (size_t)nd))
        return false;
    if (dn_arg_entry(S, n, 0) == e && unary_of(n, &ps->alg, &ps->alpha, &ps->beta)) {
        ps->kind = STEP_ELTWISE;
        return true;
    }
    if (scalar_eltwise(S, n, e, &ps->alg, &ps->alpha, &ps->beta)) {
        ps->kind = STEP_ELTWISE;
        return true;
    }
    if (!is_binary(n)) return false;
    bool first;
    int o = other_operand(S, n, e, &first);
    if (o < 0 || !dn_entry_f32(S, o) || S->ent_val[o] < 0) return false;
    bool comm;
    dnnl_alg_kind_t alg = dn_binary_alg(n->op, &comm);
    if (alg == dnnl_alg_kind_undef || (!first && !comm)) return false;
    int ond = dn_entry_ndim(S, o);
    if (ond > nd) return false;
    const int64_t *os = dn_entry_shape(S, o), *es = dn_entry_shape(S, e);
    for (int k = 0; k < ond; k++)
        if (os[k] != 1 && os[k] != es[nd - ond + k]) return false;
    ps->kind = STEP_BINARY;
    ps->alg = alg;
    ps->src1 = o;
    return true;
}

/* The longest chain of exclusive post-op steps after entry e (at most max). */
int dn_collect_chain(dn_state *S, int e, dn_step *steps, int max) {
    int k = 0, nelt = 0, nlin = 0;
    while (k < max) {
        if (S->is_head[e]) break;
        bool ok = false;
        for (uint32_t c = 0; c < S->cons[e].len && !ok; c++)
            ok = dn_match_step(S, e, S->cons[e].data[c], true, &steps[k]);
        if (!ok) break;
        /* oneDNN 2.6's jit kernels compute wrong results with three or more eltwise post-ops
         * (seen: brgconv_1x1 linear+linear+clip, binary linear+hardswish+linear); keep two
         * unless the new one merges into a linear */
        bool merges = k && steps[k].kind == STEP_ELTWISE && steps[k - 1].kind == STEP_ELTWISE &&
                      steps[k].alg == dnnl_eltwise_linear && steps[k - 1].alg == dnnl_eltwise_linear;
        if (steps[k].kind == STEP_ELTWISE && !merges && ++nelt > 2) break;
        /* two linear post-ops with a binary one between them give wrong results too (seen:
         * binary subtract + linear, add, linear in a QDQ model: errors of 60 and more); keep
         * one linear per chain unless the new one merges into the previous */
        bool lin = steps[k].kind == STEP_ELTWISE && steps[k].alg == dnnl_eltwise_linear;
        if (lin && !merges && nlin++ > 0) break;
        e = steps[k].out;
        /* linear after linear: one post-op */
        if (k && steps[k].kind == STEP_ELTWISE && steps[k - 1].kind == STEP_ELTWISE && steps[k].alg == dnnl_eltwise_linear &&
            steps[k - 1].alg == dnnl_eltwise_linear && steps[k - 1].nnodes + steps[k].nnodes <= 8) {
            dn_step *p = &steps[k - 1], *q = &steps[k];
            p->beta = q->alpha * p->beta + q->beta;
            p->alpha = q->alpha * p->alpha;
            memcpy(p->nodes + p->nnodes, q->nodes, sizeof(q->nodes[0]) * (size_t)q->nnodes);
            p->nnodes += q->nnodes;
            p->out = q->out;
            continue;
        }
        k++;
    }
    return k;
}

/* src1 md of a binary step for a dst of nd dims (plain expanded when ranks differ). */
gr_status dn_step_src1(dn_state *S, const rt_json_node *n, const dn_step *st, int nd, int *val,
                       dnnl_memory_desc_t *md) {
    int v = S->ent_val[st->src1];
    const int64_t *os = dn_entry_shape(S, st->out);
    bool bcast = S->vals.data[v].md.ndims != nd; /* a 0-d operand too */
    for (int i = 0; i < nd && !bcast; i++) bcast = S->vals.data[v].md.dims[i] != os[i];
    /* broadcast operands go plain (oneDNN's binary kernels want them so) */
    if (!bcast) {
        *val = v;
        *md = S->vals.data[v].md;
        return GR_OK;
    }
    gr_status r = dn_plain(S, n, v, &v);
    if (r) return r;
    dn_plain_expand(md, &S->vals.data[v].md, nd);
    *val = v;
    return GR_OK;
}

static bool full_shape(dn_state *S, const dn_step *st) {
    int nd = dn_entry_ndim(S, st->src1);
    return nd == dn_entry_ndim(S, st->out) &&
           !memcmp(dn_entry_shape(S, st->src1), dn_entry_shape(S, st->out), sizeof(int64_t) * (size_t)nd);
}

/* Builds attrs with user scratchpad and the first k steps as post-ops; binary src1 args
 * appended to args. */
gr_status dn_make_attr(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int nd,
                       dnnl_primitive_attr_t *attr, dn_arg *args, int *nargs) {
    dnnl_primitive_attr_create(attr);
    dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    S->pending_sum = -1;
    S->ftz = !S->opts.denormals;
    if (!k) return GR_OK;
    dnnl_post_ops_t po;
    dnnl_post_ops_create(&po);
    for (int i = 0; i < k; i++) {
        if (steps[i].kind == STEP_ELTWISE) {
            dnnl_post_ops_append_eltwise(po, 1.f, steps[i].alg, steps[i].alpha, steps[i].beta);
        } else if (S->sum_ok && S->pending_sum < 0 && steps[i].alg == dnnl_binary_add && full_shape(S, &steps[i])) {
            /* a residual add of a full tensor: the sum post-op (dst preloaded with it, in the
             * dst's own layout), so oneDNN keeps its blocked kernels */
            dnnl_post_ops_append_sum(po, 1.f);
            S->pending_sum = steps[i].src1;
        } else {
            int v;
            dnnl_memory_desc_t md;
            gr_status st = dn_step_src1(S, n, &steps[i], nd, &v, &md);
            if (st) {
                dnnl_post_ops_destroy(po);
                return st;
            }
            dnnl_post_ops_append_binary(po, steps[i].alg, &md);
            args[(*nargs)++] = (dn_arg){DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1, v, md, NULL};
        }
    }
    dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return GR_OK;
}

/* Marks the nodes of the first k steps as folded. */
void dn_consume(dn_state *S, const dn_step *steps, int k) {
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < steps[i].nnodes; j++) {
            S->consumed[steps[i].nodes[j] - S->node0] = true;
            S->stats.nfused_nodes++;
            gr_vec_push(&S->pend, steps[i].nodes[j]);
        }
        /* a composite's steps name only their output: its producer is the node computed */
        if (!steps[i].nnodes && steps[i].out >= 0) gr_vec_push(&S->pend, S->ent_node[steps[i].out].node);
    }
    S->stats.npostops += (uint32_t)k;
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
        int r = root_of(S, (int)v);
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
    S->arena = total ? aligned_alloc(64, total) : NULL;
    if (S->scratch_bytes) S->scratch = aligned_alloc(64, (S->scratch_bytes + 63) / 64 * 64);
    S->stats.scratch_bytes = S->scratch_bytes;
    if ((total && !S->arena) || (S->scratch_bytes && !S->scratch))
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl region '%s': out of memory for %zu bytes", S->symbol, total);
    return GR_OK;
}

static void *val_ptr(dn_state *S, int v) {
    int r = root_of(S, v);
    dn_val *dv = &S->vals.data[r];
    /* no arena (nothing intermediate): never offset a NULL pointer */
    if (dv->kind == V_TMP) return S->arena ? (char *)S->arena + dv->off : NULL;
    return dv->ptr;
}

static gr_status make_memories(dn_state *S) {
    for (uint32_t p = 0; p < S->prims.len; p++) {
        dn_prim *pr = &S->prims.data[p];
        pr->exec = calloc((size_t)pr->nargs + 1, sizeof(dnnl_exec_arg_t));
        for (int a = 0; a < pr->nargs; a++) {
            dn_arg *ar = &pr->args[a];
            void *ptr = ar->val == -2 ? S->scratch : val_ptr(S, ar->val);
            int r = ar->val >= 0 ? root_of(S, ar->val) : -1;
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
        if (pr->ctx) pr->ctx_free(pr->ctx);
        free(pr->args);
        free(pr->exec);
        gr_vec_free(&pr->nodes);
        gr_vec_free(&pr->layers);
    }
    gr_vec_free(&S->pend);
    gr_vec_free(&S->prims);
    gr_vec_free(&S->vals);
    gr_vec_free(&S->exts);
    for (uint32_t i = 0; i < S->owned.len; i++) free(S->owned.data[i]);
    gr_vec_free(&S->owned);
    free(S->csts);
    for (uint32_t i = 0; i < S->held.len; i++) rt_tensor_release(S->held.data[i]);
    gr_vec_free(&S->held);
    if (S->cons) {
        for (uint32_t e = 0; e < S->nent; e++) gr_vec_free(&S->cons[e]);
        free(S->cons);
    }
    free(S->ent_val);
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
    gr_vec_push(&p->layers, src);
}

/* The distinct span sources of the nodes a primitive computes (span entries are [source,
 * output] pairs or {"source": ...} objects, as the json runtime reads them). */
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
} dn_cst;

/* Constant c after node i was built: released (its reference held by the state when a
 * primitive or a tap reads it at run time) once every entry that views its data has had all
 * its consumers built; `final`: the build is over (heads included). Only a disposable graph
 * releases; otherwise only the bytes read in place are counted. */
static void const_settle(dn_state *S, dn_cst *cs, uint32_t c, uint32_t i, bool final) {
    dn_cst *k = &cs[c];
    if (k->done) return;
    uint32_t last = 0;
    bool held = false;
    for (uint32_t e = 0; e < S->nent; e++) {
        int v = S->ent_val[e];
        if ((int)e != k->ent && (v < 0 || k->val < 0 || root_of(S, v) != k->val)) continue;
        if ((int)e != k->ent) held = true;  /* a node output viewing the data: a tap reads it */
        if (S->is_head[e] && !final) {   /* the output reorder reads it: at the end */
            k->next = UINT32_MAX;
            return;
        }
        for (uint32_t q = 0; q < S->cons[e].len; q++) {
            uint32_t nid = (uint32_t)(S->cons[e].data[q] - S->node0);
            if (nid > last) last = nid;
        }
    }
    if (!final && last > i) {
        k->next = last;
        return;
    }
    k->done = true;
    for (uint32_t v = 0; v < S->vals.len && k->val >= 0 && !held; v++)
        held = S->vals.data[v].first >= 0 && root_of(S, (int)v) == k->val;
    rt_tensor *t = rt_json_graph_const(S->g, c);
    if (!t) return;
    if (held) S->stats.const_bytes += rt_tensor_nbytes(t);
    if (!rt_json_graph_consts_disposable(S->g)) return;
    if (held) gr_vec_push(&S->held, rt_tensor_retain(t));
    else
        for (uint32_t v = 0; v < S->vals.len && k->val >= 0; v++)
            if (root_of(S, (int)v) == k->val) S->vals.data[v].ptr = NULL;
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
            int v = dn_val_new(S, V_IN, &md);
            S->vals.data[v].ext = -1;
            for (uint32_t k = 0; k < rt_json_graph_num_inputs(g); k++)
                if (rt_json_graph_input_nid(g, k) == i) S->vals.data[v].ext = (int)k;
            S->ent_val[row] = t.code == kDLFloat && t.bits == 32 ? v : -1;
        } else {
            rt_tensor *c = rt_json_graph_const(g, ci);
            if (!c)
                return dn_fail(S, n, dnnl_success, "constant released by an earlier prepare of this graph");
            cs[ci] = (dn_cst){(int)row, -1, 0, false};
            if (c && t.code == kDLFloat && t.bits == 32) {
                int v = dn_val_new(S, V_CONST, &md);
                S->vals.data[v].ptr = rt_tensor_data(c);
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
    for (uint32_t h = 0; h < rt_json_graph_num_heads(g); h++) S->is_head[rt_json_graph_entry_id(g, rt_json_graph_head(g, h))] = true;
    for (uint32_t i = 0; i < nn && !st; i++) {
        rt_json_node *n = rt_json_graph_node(g, i);
        if (n->kind == RT_JSON_KERNEL && !S->consumed[i]) {
            for (uint32_t o = 0; o < n->noutputs && !st; o++)
                if (!(n->dtypes[o].code == kDLFloat && n->dtypes[o].bits == 32))
                    st = dn_fail(S, n, dnnl_success, "only float32 tensors are supported");
            json_t *ann = st ? NULL : dn_composite_annotation(n);
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
        bool ok = n->dtypes[o].code == kDLFloat && n->dtypes[o].bits == 32 && md->data_type == dnnl_f32;
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
        dn_val *rv = &S->vals.data[root_of(S, v)];
        if (dv->alias >= 0 && rv->kind == V_TMP && rv->alias < 0 && rv->first >= 0 && dn_is_plain(&dv->md) &&
            !dv->md.offset0 && !rv->md.offset0 && dnnl_memory_desc_get_size(&dv->md) == dnnl_memory_desc_get_size(&rv->md)) {
            rv->kind = V_OUT;
            rv->ext = (int)h;
            continue;
        }
        dnnl_memory_desc_t pm;
        dn_plain_md(&pm, n->ndims[S->ent_node[e].index], n->shapes[S->ent_node[e].index]);
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
    S->stats.nprims = S->prims.len;
    for (uint32_t p = 0; p < S->prims.len; p++) prim_layers(&S->prims.data[p]);
    st = plan_memory(S);
    if (!st) st = make_memories(S);
    return st;
}

rt_dnnl_opts rt_dnnl_default_opts(void) {
    return (rt_dnnl_opts){.transpose_weights = true,
                          .small_kb = RT_DNNL_SMALL_KB_DEFAULT,
                          .winograd = true,
                          .dw_jit = true,
                          .gemv = true};
}

static gr_status dn_prepare(rt_json_graph *g, const void *opts, void **state, gr_diag *d) {
    dn_state *S = calloc(1, sizeof(*S));
    if (!S) return gr_diag_set(d, GR_ERR_NOMEM, "dnnl: out of memory");
    pthread_mutex_init(&S->lock, NULL);
    S->opts = opts ? *(const rt_dnnl_opts *)opts : rt_dnnl_default_opts();
    S->threads = rt_dnnl_threads(&S->opts);
    S->g = g;
    S->diag = d;
    S->symbol = rt_json_graph_symbol(g);
    S->pending_out = -1;
    S->pending_sum = -1;
    uint32_t nn = rt_json_graph_num_nodes(g);
    S->nent = rt_json_graph_num_entries(g);
    S->node0 = rt_json_graph_node(g, 0);
    S->ent_val = malloc(sizeof(int) * (S->nent + 1));
    for (uint32_t e = 0; e <= S->nent; e++) S->ent_val[e] = -1;
    S->ent_node = calloc(S->nent + 1, sizeof(dn_entry));
    S->is_head = calloc(S->nent + 1, sizeof(bool));
    S->cons = calloc(S->nent + 1, sizeof(*S->cons));
    S->consumed = calloc(nn + 1, sizeof(bool));
    S->row_ptr_of = calloc(nn + 1, sizeof(uint32_t));
    gr_status st = GR_OK;
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
    if (nin != rt_json_graph_num_inputs(g) || nout != rt_json_graph_num_heads(g))
        return gr_diag_set(d, GR_ERR_INVALID, "dnnl region '%s': called with %u inputs and %u outputs, expects %u and %u",
                           S->symbol, nin, nout, rt_json_graph_num_inputs(g), rt_json_graph_num_heads(g));
    for (uint32_t i = 0; i < nin + nout; i++) {
        const rt_json_node *n;
        uint32_t o = 0;
        if (i < nin) n = rt_json_graph_node(g, rt_json_graph_input_nid(g, i));
        else {
            rt_json_entry h = rt_json_graph_head(g, i - nin);
            n = rt_json_graph_node(g, h.nid);
            o = h.index;
        }
        const DLTensor *t = args[i];
        bool ok = t && t->dtype.code == n->dtypes[o].code && t->dtype.bits == n->dtypes[o].bits && t->ndim == n->ndims[o] &&
                  (!t->strides || t->ndim == 0);
        for (int32_t k = 0; ok && k < t->ndim; k++) ok = t->shape[k] == n->shapes[o][k];
        if (ok && t->strides) {
            int64_t s = 1;
            for (int32_t k = t->ndim - 1; k >= 0; k--) {
                ok &= t->shape[k] == 1 || t->strides[k] == s;
                s *= t->shape[k];
            }
        }
        if (!ok)
            return gr_diag_set(d, GR_ERR_INVALID, "dnnl region '%s': %s %u has the wrong dtype or shape", S->symbol,
                               i < nin ? "input" : "output", i < nin ? i : i - nin);
    }
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
        for (; p < S->prims.len && ds == dnnl_success; p++) {
            uint64_t t0 = prof ? now_ns() : 0;
            ds = dn_exec(S, &S->prims.data[p]);
            if (prof && ds == dnnl_success && (ds = dnnl_stream_wait(S->stream)) == dnnl_success) {
                uint64_t ns = now_ns() - t0;
                rt_dnnl_prim_info info;
                rt_dnnl_prim(S, p, &info);
                rt_prim_event ev = {S->symbol, p, &info, ns, rt_dnnl_team_threads()};
                prof(&ev, prof_user);
            }
        }
    }
    if (ds == dnnl_success) ds = dnnl_stream_wait(S->stream);
    rt_dnnl_team_end(&team);
    _mm_setcsr(csr);
    pthread_mutex_unlock(&S->lock);
    if (ds != dnnl_success) {
        gr_status st = gr_diag_set(d, GR_ERR_RUNTIME, "dnnl region '%s': primitive %u failed: %s", S->symbol, p ? p - 1 : 0,
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

uint32_t rt_dnnl_num_prims(const void *state) { return state ? ((const dn_state *)state)->prims.len : 0; }

bool rt_dnnl_prim(const void *state, uint32_t i, rt_dnnl_prim_info *out) {
    const dn_state *S = state;
    if (!S || i >= S->prims.len) return false;
    const dn_prim *p = &S->prims.data[i];
    out->kind = p->kind;
    out->impl = p->impl;
    out->ref_reason = p->ref_why;
    out->nlayers = p->layers.len;
    out->layers = p->layers.data;
    return true;
}

void rt_dnnl_totals(uint64_t *nprims, uint64_t *nref, char *last_ref, size_t n) {
    if (nprims) *nprims = atomic_load(&g_nprims);
    if (nref) *nref = atomic_load(&g_nref);
    if (last_ref && n) {
        pthread_mutex_lock(&g_ref_lock);
        snprintf(last_ref, n, "%s", g_last_ref);
        pthread_mutex_unlock(&g_ref_lock);
    }
}

const char *rt_dnnl_isa(void) {
    static const struct { dnnl_cpu_isa_t isa; const char *name; } ISAS[] = {
        {dnnl_cpu_isa_sse41, "sse41"},
        {dnnl_cpu_isa_avx, "avx"},
        {dnnl_cpu_isa_avx2, "avx2"},
        {dnnl_cpu_isa_avx512_mic, "avx512_mic"},
        {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
        {dnnl_cpu_isa_avx512_core, "avx512_core"},
        {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
        {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
        {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
        {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
    };
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    for (size_t i = 0; i < sizeof(ISAS) / sizeof(ISAS[0]); i++)
        if (ISAS[i].isa == isa) return ISAS[i].name;
    return "any";
}

int rt_dnnl_channel_block(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
}

const rt_json_engine rt_dnnl_engine = {"dnnl_json", dn_prepare, dn_run, dn_release, sizeof(rt_dnnl_opts)};
