/* The oneDNN engine's primitives and values (see dnnl.h): errors, memory descriptors, values
 * and aliases, primitives emitted in order with their layers, reorders, constants reordered once
 * and shared (weights cache, huge pages), and the process-wide tallies of what was prepared. */
#include <immintrin.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "backends/dnnl/dnnl_impl.h"

/* process-wide tallies of the primitives prepared (rt_dnnl_totals) */
static atomic_uint_fast64_t g_nprims, g_nref;
static pthread_mutex_t g_ref_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_last_ref[512];

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

/* A strided md whose dims other than the 1s are row-major dense is the plain layout: the stride
 * of a size-1 dim addresses nothing, but oneDNN's kernels compare strides (a [1, S, C] view of a
 * permuted [S, 1, C] reads as "bac" and gets binary ref:any). */
void dn_md_canon(dnnl_memory_desc_t *md) {
    if (md->format_kind != dnnl_blocked || md->format_desc.blocking.inner_nblks || md->extra.flags || md->ndims < 1)
        return;
    int64_t want = 1;
    for (int i = md->ndims - 1; i >= 0; i--) {
        if (md->dims[i] < 1 || md->padded_dims[i] != md->dims[i] || md->padded_offsets[i]) return;
        if (md->dims[i] == 1) continue;
        if (md->format_desc.blocking.strides[i] != want) return;
        want *= md->dims[i];
    }
    dnnl_dim_t off = md->offset0;
    if (dnnl_memory_desc_init_by_strides(md, md->ndims, md->dims, md->data_type, NULL) == dnnl_success) md->offset0 = off;
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

/* md with a dim of 1 inserted at / removed from axis: the same memory, seen with one more or
 * one less dim (oneDNN's reshape; false when it refuses). */
bool dn_md_unsqueeze(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int axis) {
    dnnl_dims_t d;
    int nd = md->ndims + 1;
    if (axis < 0 || axis >= nd || nd > DNNL_MAX_NDIMS) return false;
    for (int i = 0; i < nd; i++) d[i] = i < axis ? md->dims[i] : i == axis ? 1 : md->dims[i - 1];
    return dnnl_memory_desc_reshape(out, md, nd, d) == dnnl_success;
}

bool dn_md_squeeze(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int axis) {
    dnnl_dims_t d;
    int nd = md->ndims - 1;
    if (axis < 0 || axis > nd || nd < 1 || md->dims[axis] != 1) return false;
    for (int i = 0; i < nd; i++) d[i] = md->dims[i < axis ? i : i + 1];
    return dnnl_memory_desc_reshape(out, md, nd, d) == dnnl_success;
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
    dn_md_canon(&v.md);
    v.alias = -1;
    v.ext = -1;
    v.first = v.last = -1;
    gr_vec_push(&S->vals, v);
    return (int)S->vals.len - 1;
}

int dn_root(const dn_state *S, int v) {
    while (S->vals.data[v].alias >= 0) v = S->vals.data[v].alias;
    return v;
}

size_t dn_val_boff(const dn_state *S, int v) {
    size_t b = 0;
    for (; S->vals.data[v].alias >= 0; v = S->vals.data[v].alias) b += S->vals.data[v].boff;
    return b;
}

int dn_alias_new(dn_state *S, int base, const dnnl_memory_desc_t *md) {
    int v = dn_val_new(S, S->vals.data[dn_root(S, base)].kind == V_TMP ? V_TMP : S->vals.data[dn_root(S, base)].kind, md);
    S->vals.data[v].alias = base;
    return v;
}

static gr_status push_prim(dn_state *S, const rt_json_node *n, dn_prim p, const dn_arg *args, int nargs, bool reorder);

/* Appends a primitive; args are copied. */
gr_status dn_emit(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, const dn_arg *args, int nargs,
                  bool reorder) {
    /* the primitive (its jit code) is made after the build, once it is known that a plain run
     * executes it (dnnl_engine.c's prune) */
    dn_prim p = {.pd = pd};
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
    dnnl_primitive_kind_t pk = dnnl_undefined_primitive;
    dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &pk);
    p.kind = dnnl_prim_kind2str(pk);
    /* bf16 compute shows in the profile: oneDNN's implementation names do not say it */
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    bool bf16 = (pk == dnnl_convolution || pk == dnnl_matmul) && wmd && wmd->data_type == dnnl_bf16;
    snprintf(p.impl, sizeof p.impl, "%s%s", impl, bf16 ? "/bf16" : "");
    if (bf16) S->stats.nbf16++;
    return push_prim(S, n, p, args, nargs, reorder);
}

gr_status dn_need(dn_state *S, const rt_json_node *n, int v, size_t bytes, const char *who) {
    size_t have = v >= 0 ? dnnl_memory_desc_get_size(&S->vals.data[v].md) : S->scratch_bytes;
    if (bytes <= have) return GR_OK;
    char msg[160];
    snprintf(msg, sizeof msg, "%s would access %zu bytes of an operand of %zu", who, bytes, have);
    return dn_fail(S, n, dnnl_success, msg);
}

gr_status dn_emit_fn(dn_state *S, const rt_json_node *n, dn_fn fn, void *ctx, void (*ctx_free)(void *), const char *kind,
                     const char *impl, const dn_arg *args, int nargs) {
    /* oneDNN checks its primitives' operands; C code of ours reads what it was told to */
    for (int a = 0; a < nargs; a++) {
        gr_status st = dn_need(S, n, args[a].val, args[a].need ? args[a].need : dnnl_memory_desc_get_size(&args[a].md), impl);
        if (st) {
            ctx_free(ctx);
            return st;
        }
    }
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

dnnl_status_t dn_prim_make(dn_prim *p) {
    if (p->prim || !p->pd) return dnnl_success;
    dnnl_status_t ds = dnnl_primitive_create(&p->prim, p->pd);
    if (ds != dnnl_success) p->prim = NULL;
    else {
        dnnl_primitive_desc_destroy(p->pd);
        p->pd = NULL;
    }
    return ds;
}

dnnl_status_t dn_exec(dn_state *S, dn_prim *p) {
    dnnl_status_t ds = dn_prim_make(p);
    if (ds != dnnl_success) return ds;
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
    p.serves = reorder;
    gr_vec_push(&S->prims, p);
    if (reorder) S->stats.nreorders++;
    return GR_OK;
}

static gr_status reorder_now(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, void *src,
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

/* Runs one reorder now (constants at prepare), on the calling thread: the first touch of the
 * constant's pages and its copy's dominates, and a team of two spends more on it (bert_encoder's
 * 36 weights as 1x1 convolutions under ONEDNN_MAX_CPU_ISA=AVX2: prepare 405-531 ms at 2 threads,
 * 79-186 at 1). */
static gr_status run_reorder_now(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, void *src,
                                 const dnnl_memory_desc_t *dmd, void *dst) {
    rt_dnnl_team team;
    rt_dnnl_team_begin(&team, 1, true, false);
    gr_status st = reorder_now(S, n, smd, src, dmd, dst);
    rt_dnnl_team_end(&team);
    return st;
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
    for (uint32_t i = 0; i < w->e.len; i++) dn_const_free(w->e.data[i].buf);
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
void *dn_huge_alloc(size_t bytes) {
    size_t sz = (bytes + 63) / 64 * 64;
    if (sz < DN_HUGE) return aligned_alloc(64, sz ? sz : 64);
    void *p;
    if (posix_memalign(&p, DN_HUGE, sz)) return NULL;
    madvise(p, sz / DN_HUGE * DN_HUGE, MADV_HUGEPAGE); /* only a hint: ignored where THP is off */
    return p;
}

/* The smaller constants the engine makes once (reordered weights below 2 MiB: most of a small
 * CNN's) share 4 MiB chunks, first fit, whose full 2 MiB pieces go onto huge pages, instead of
 * each its own 4 KiB pages: a run reads them all, and mnasnet1_0's 17 MiB on 4 KiB pages are
 * some 4300 translations, more than the second-level TLB holds even back to back, and evicted
 * by other work between the runs of a server. A chunk is freed when its last constant is; what
 * sits in a chunk is not reused before, so only constants that live as long as their state
 * come here (not copies freed at prepare). */
#define DN_CHUNK (2 * DN_HUGE)
/* under AddressSanitizer what a chunk has not handed out stays poisoned, so an overrun of one
 * constant into the next is still caught */
#if defined(__SANITIZE_ADDRESS__)
#define DN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DN_ASAN 1
#endif
#endif
#ifdef DN_ASAN
#include <sanitizer/asan_interface.h>
#define CHUNK_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CHUNK_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CHUNK_POISON(p, n) ((void)(p), (void)(n))
#define CHUNK_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
typedef struct wchunk {
    char *base;
    size_t used;
    uint32_t live;
} wchunk;
static pthread_mutex_t g_chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static GR_VEC(wchunk) g_chunks;

static void *const_alloc(size_t bytes) {
    size_t sz = (bytes + 63) / 64 * 64;
    if (!sz || sz >= DN_HUGE) return dn_huge_alloc(bytes);
    wchunk *c = NULL;
    pthread_mutex_lock(&g_chunk_lock);
    for (uint32_t i = 0; i < g_chunks.len && !c; i++)
        if (DN_CHUNK - g_chunks.data[i].used >= sz) c = &g_chunks.data[i];
    void *b;
    if (!c && !posix_memalign(&b, DN_HUGE, DN_CHUNK)) {
        CHUNK_POISON(b, DN_CHUNK);
        wchunk nc = {b, 0, 0};
        gr_vec_push(&g_chunks, nc);
        c = &g_chunks.data[g_chunks.len - 1];
    }
    void *p = NULL;
    if (c) {
        p = c->base + c->used;
        /* a 2 MiB piece goes onto a huge page once it is all handed out: the chunk's last, part
         * used piece stays on 4 KiB pages, so the chunks add no memory */
        for (size_t k = c->used / DN_HUGE; k < (c->used + sz) / DN_HUGE; k++)
            dn_hugepages(c->base + k * DN_HUGE, DN_HUGE);
        c->used += sz;
        c->live++;
        CHUNK_UNPOISON(p, bytes);
    }
    pthread_mutex_unlock(&g_chunk_lock);
    return p;
}

void dn_const_free(void *p) {
    if (!p) return;
    pthread_mutex_lock(&g_chunk_lock);
    for (uint32_t i = 0; i < g_chunks.len; i++) {
        wchunk *c = &g_chunks.data[i];
        if ((char *)p < c->base || (char *)p >= c->base + DN_CHUNK) continue;
        if (--c->live == 0) {
            CHUNK_UNPOISON(c->base, DN_CHUNK);
            free(c->base);
            *c = g_chunks.data[--g_chunks.len];
            if (!g_chunks.len) gr_vec_free(&g_chunks);
        }
        pthread_mutex_unlock(&g_chunk_lock);
        return;
    }
    pthread_mutex_unlock(&g_chunk_lock);
    free(p);
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
    void *buf = const_alloc(dnnl_memory_desc_get_size(dmd));
    gr_status st = buf ? make(S, n, smd, src, dmd, buf, ctx) : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    if (!st) {
        dn_wentry e = {make, key, h1, h2, *smd, *dmd, buf};
        gr_vec_push(&w->e, e);
        *out = buf;
        atomic_fetch_add(&g_wshared_made, 1);
    } else {
        dn_const_free(buf);
    }
    pthread_mutex_unlock(&w->lock);
    return st;
}

/* What a pack key says first: the oneDNN version and the ISA it runs on (a pack is made again
 * under another of either). */
static void pack_env(char *buf, size_t len, bool isa) {
    const dnnl_version_t *ver = dnnl_version();
    int k = snprintf(buf, len, "dnnl %d.%d.%d %s", ver->major, ver->minor, ver->patch, ver->hash ? ver->hash : "");
    if (isa && k > 0 && (size_t)k < len) snprintf(buf + k, len - (size_t)k, " isa %x", (unsigned)dnnl_get_effective_cpu_isa());
}

/* The key of graph constant c reordered into dmd (packs, json_runtime.h): what makes the same
 * bytes again: the oneDNN version, the ISA it runs on, the node, the constant and both
 * layouts. */
/* what a pack key says of the node that made the pack and of its constant */
#define PACK_USE " node %u const %u from "

static void pack_key(dn_state *S, const rt_json_node *n, int c, const dnnl_memory_desc_t *smd,
                     const dnnl_memory_desc_t *dmd, char *key, size_t len) {
    char env[128];
    pack_env(env, sizeof env, true);
    snprintf(key, len, "%s" PACK_USE "%016llx to %016llx", env, (unsigned)(n - S->node0), (unsigned)c,
             (unsigned long long)gr_hash_bytes(smd, sizeof *smd, 1), (unsigned long long)gr_hash_bytes(dmd, sizeof *dmd, 2));
}

bool dn_pack_current(const char *key) {
    char env[128];
    pack_env(env, sizeof env, true);
    size_t n = strlen(env);
    return key && strncmp(key, env, n) == 0 && key[n] == ' ';
}

bool dn_pack_for(const char *key, uint32_t node, uint32_t c) {
    char use[64];
    snprintf(use, sizeof use, PACK_USE, node, c);
    return dn_pack_current(key) && strstr(key, use);
}

/* A reorder of float32 constant c from a dense view smd of all its bytes into dmd, with nothing
 * added (no compensation): undone by the reorder back (dn_const_plain) from *inv, dmd with its
 * axes in the order of the constant's own bytes. */
static bool pure_layout(dn_state *S, int c, const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *dmd,
                        dnnl_memory_desc_t *inv) {
    const rt_tensor *t = rt_json_graph_const(S->g, (uint32_t)c);
    if (!t || smd->data_type != dnnl_f32 || dmd->data_type != dnnl_f32 || dmd->format_kind != dnnl_blocked ||
        smd->format_kind != dnnl_blocked || smd->format_desc.blocking.inner_nblks || dmd->extra.flags ||
        smd->ndims != dmd->ndims || dmd->offset0 || smd->offset0)
        return false;
    /* a dense view of the whole constant with its axes in another order (K x N weights read as
     * N x K) is the plain layout of its axes sorted by stride: both descriptors are seen that
     * way, so that the pack's layout lays out the constant's own bytes */
    int nd = smd->ndims, perm[DNNL_MAX_NDIMS], order[DNNL_MAX_NDIMS];
    const int64_t *str = smd->format_desc.blocking.strides;
    for (int a = 0; a < nd; a++) order[a] = a;
    for (int a = 1; a < nd; a++)
        for (int b = a; b > 0 && str[order[b]] > str[order[b - 1]]; b--) {
            int x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (int j = 0; j < nd; j++) perm[order[j]] = j;
    dnnl_memory_desc_t sp, plain;
    if (dnnl_memory_desc_permute_axes(&sp, smd, perm) != dnnl_success || dnnl_memory_desc_permute_axes(inv, dmd, perm) != dnnl_success)
        return false;
    dn_plain_md(&plain, nd, sp.dims);
    return dnnl_memory_desc_equal(&plain, &sp) && dnnl_memory_desc_get_size(&sp) == rt_tensor_nbytes(t);
}

static void hex_encode(char *out, const void *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[((const uint8_t *)p)[i] >> 4];
        out[2 * i + 1] = digits[((const uint8_t *)p)[i] & 15];
    }
    out[2 * n] = '\0';
}

static bool hex_decode(void *out, size_t n, const char *s) {
    if (strlen(s) != 2 * n) return false;
    for (size_t i = 0; i < 2 * n; i++) {
        char ch = s[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (v < 0) return false;
        uint8_t *b = (uint8_t *)out + i / 2;
        *b = (uint8_t)(i % 2 ? (*b << 4) | v : v);
    }
    return true;
}

/* Whether md (read from a file) is a dense blocked layout of float32: every inner block a
 * positive size of a real dim that divides its padded size, and the outer strides the dims'
 * outer counts laid one after another over the inner block, so that every element lies inside
 * its size (its bytes). */
static bool dense_blocked(const dnnl_memory_desc_t *md, size_t bytes) {
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (md->ndims < 1 || md->ndims > DNNL_MAX_NDIMS || md->data_type != dnnl_f32 || md->format_kind != dnnl_blocked ||
        md->extra.flags || md->offset0 || b->inner_nblks < 0 || b->inner_nblks > DNNL_MAX_NDIMS)
        return false;
    int64_t blk[DNNL_MAX_NDIMS], outer[DNNL_MAX_NDIMS], inner = 1;
    for (int d = 0; d < md->ndims; d++) blk[d] = 1;
    for (int k = 0; k < b->inner_nblks; k++) {
        if (b->inner_idxs[k] < 0 || b->inner_idxs[k] >= md->ndims || b->inner_blks[k] < 1 || b->inner_blks[k] > 4096)
            return false;
        blk[b->inner_idxs[k]] *= b->inner_blks[k];
        inner *= b->inner_blks[k];
    }
    int64_t total = inner;
    for (int d = 0; d < md->ndims; d++) {
        if (md->dims[d] < 1 || md->padded_dims[d] < md->dims[d] || md->padded_dims[d] > ((int64_t)1 << 40) ||
            md->padded_offsets[d] || blk[d] > md->padded_dims[d] || md->padded_dims[d] % blk[d])
            return false;
        outer[d] = md->padded_dims[d] / blk[d];
        if (__builtin_mul_overflow(total, outer[d], &total)) return false;
    }
    /* the outer dims by stride (those of count 1 anywhere): each the product of the ones below */
    bool used[DNNL_MAX_NDIMS] = {false};
    int64_t want = inner;
    for (int k = 0; k < md->ndims; k++) {
        int best = -1;
        for (int d = 0; d < md->ndims; d++)
            if (!used[d] && outer[d] > 1 && (best < 0 || b->strides[d] < b->strides[best])) best = d;
        if (best < 0) break;
        if (b->strides[best] != want) return false;
        used[best] = true;
        want *= outer[best];
    }
    return (uint64_t)total * sizeof(float) == bytes;
}

gr_status dn_const_plain(dn_state *S, const rt_json_node *n, uint32_t c, int root, bool drop_pack) {
    const void *packed = NULL;
    size_t bytes = 0;
    const char *layout = NULL, *key = rt_json_graph_deferred_pack(S->g, c, &packed, &bytes, &layout);
    if (!key) return dn_fail(S, n, dnnl_success, "a weight stored only prepacked has no pack");
    char env[128], msg[512];
    pack_env(env, sizeof env, false);
    size_t k = strlen(env);
    if (strncmp(key, env, k) != 0 || strncmp(key + k, " isa ", 5) != 0) {
        const char *isa = strstr(key, " isa ");
        snprintf(msg, sizeof msg, "the artifact stores this weight only in a blocked layout of '%.*s', and this runtime "
                 "has '%s': rebuild the artifact with this graft", isa ? (int)(isa - key) : 24, key, env);
        return dn_fail(S, n, dnnl_success, msg);
    }
    /* the layout is the memory descriptor of the same oneDNN version: checked before use */
    dnnl_memory_desc_t dmd;
    const dnnl_memory_desc_t *smd = &S->vals.data[root].md;
    memset(&dmd, 0, sizeof dmd);
    if (!layout || !hex_decode(&dmd, sizeof dmd, layout) || !dense_blocked(&dmd, bytes) || smd->data_type != dnnl_f32) {
        snprintf(msg, sizeof msg, "its stored layout does not describe its pack (%zu bytes)", bytes);
        return dn_fail(S, n, dnnl_success, msg);
    }
    dnnl_memory_desc_t plain;
    dn_plain_md(&plain, dmd.ndims, dmd.dims);
    rt_tensor *t = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, smd->ndims, smd->dims);
    if (!t) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    if (dnnl_memory_desc_get_size(&plain) != rt_tensor_nbytes(t)) {
        rt_tensor_release(t);
        snprintf(msg, sizeof msg, "its stored layout does not describe its pack (%zu bytes)", bytes);
        return dn_fail(S, n, dnnl_success, msg);
    }
    gr_status st = run_reorder_now(S, n, &dmd, (void *)packed, &plain, rt_tensor_data(t));
    if (st) {
        rt_tensor_release(t);
        return st;
    }
    S->vals.data[root].ptr = rt_tensor_data(t);
    rt_json_graph_set_plain(S->g, c, t, drop_pack);
    return GR_OK;
}

gr_status dn_const_made(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *dmd, dn_make_fn make,
                        void *ctx, void **out) {
    int r = dn_root(S, v);
    const dnnl_memory_desc_t *smd = &S->vals.data[v].md;
    const void *src = S->vals.data[r].ptr;
    dn_wcache *wc = rt_json_graph_shared(S->g, wcache_new, wcache_free);
    gr_status st;
    *out = NULL;
    /* a static graph's reordered weights: an artifact's stored form when it has this key */
    char key[256];
    int c = S->vals.data[r].kind == V_CONST ? dn_const_index(S, r) : -1;
    bool packable = !wc && make == make_reorder && c >= 0;
    if (packable) pack_key(S, n, c, smd, dmd, key, sizeof key);
    dnnl_memory_desc_t inv_md;
    bool inv = packable && pure_layout(S, c, smd, dmd, &inv_md);
    size_t bytes = dnnl_memory_desc_get_size(dmd);
    const void *packed = packable ? rt_json_graph_pack_find(S->g, key, bytes) : NULL;
    if (c >= 0) {
        dn_const_use u = {(uint32_t)c, (uint32_t)(n - S->node0), inv};
        gr_vec_push(&S->const_uses, u);
    }
    if (packed) {
        *out = (void *)packed;  /* read only, as every weight */
        return GR_OK;
    }
    if (!src && c >= 0 && rt_json_graph_const_deferred(S->g, (uint32_t)c)) {
        /* stored only prepacked, in a layout this CPU or these options do not take: plain now */
        st = dn_const_plain(S, n, (uint32_t)c, r, false);
        if (st) return st;
        src = S->vals.data[r].ptr;
    }
    /* a state released unrun (an artifact build's, its check load's) makes what the artifact
     * stores: the build's packs, streamed, share one buffer of their own, faulted in once (not a
     * chunk's, nor a fresh one per weight). What the artifact does not store (Winograd's
     * transforms, copies of folded weights) a load makes: here it is left unmade, pointing at
     * that buffer (R3D-18's build made its Winograd weights twice, a third of its instructions) */
    bool unrun = !wc && !rt_json_graph_will_run(S->g), streamed = unrun && rt_json_graph_pack_streamed(S->g);
    bool unmade = unrun && !packable;
    if ((streamed || unmade) && S->pack_buf_bytes < bytes) {
        free(S->pack_buf);
        S->pack_buf_bytes = (bytes + 63) / 64 * 64;
        if (!(S->pack_buf = aligned_alloc(64, S->pack_buf_bytes))) S->pack_buf_bytes = 0;
    }
    if (unmade) {
        *out = S->pack_buf;
        if (!*out) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
        S->stats.weight_bytes += bytes;
        return GR_OK;
    }
    if (wc) {
        st = shared_make(S, wc, n, smd, src, S->vals.data[r].kind == V_OWNED, dmd, make, ctx, out);
    } else {
        *out = streamed ? S->pack_buf : const_alloc(bytes);
        if (*out && !streamed) gr_vec_push(&S->owned, *out);
        st = *out ? make(S, n, smd, src, dmd, *out, ctx) : gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    if (!st) S->stats.weight_bytes += bytes;
    if (!st && packable) {
        rt_json_graph_pack_record(S->g, key, *out, bytes);
        if (inv) {
            char layout[2 * sizeof inv_md + 1];
            hex_encode(layout, &inv_md, sizeof inv_md);
            rt_json_graph_pack_invertible(S->g, (uint32_t)c, layout);
        }
    }
    return st;
}

void *dn_owned_alloc(dn_state *S, size_t bytes) {
    void *p = dn_huge_alloc(bytes);
    if (p) gr_vec_push(&S->owned, p);
    return p;
}

/* The value `v` in layout `want`: v itself, a cached copy, a constant reordered now, or a new
 * reorder primitive. */
gr_status dn_as(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *want, int *out) {
    const dn_val *dv = &S->vals.data[v];
    dnnl_memory_desc_t cw = *want; /* the values' mds are canonical (dn_val_new) */
    dn_md_canon(&cw);
    if (dnnl_memory_desc_equal(&dv->md, &cw)) {
        *out = v;
        return GR_OK;
    }
    for (uint32_t i = 0; i < S->vals.len; i++)
        if (S->vals.data[i].copy_of == v + 1 && dnnl_memory_desc_equal(&S->vals.data[i].md, &cw)) {
            *out = (int)i;
            return GR_OK;
        }
    int r = dn_root(S, v);
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
    dn_md_dt(&p, S->vals.data[v].md.data_type);
    if (!S->opts.no_layout_plan && !dnnl_memory_desc_equal(&p, &S->vals.data[v].md) && dn_plain_bytes(&S->vals.data[v].md)) {
        *out = dn_alias_new(S, v, &p);
        return GR_OK;
    }
    return dn_as(S, n, v, &p, out);
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

void dn_md_dt(dnnl_memory_desc_t *md, dnnl_data_type_t dt) { md->data_type = dt; }

bool rt_dnnl_bf16_isa(void) {
    return (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

const char *rt_dnnl_bf16_missing(void) {
    static char why[160];
    if (rt_dnnl_bf16_isa()) return NULL;
    snprintf(why, sizeof why, "oneDNN's ISA here (%s) has neither AVX512_BF16 nor AMX: the dnnl regions run in float32",
             rt_dnnl_isa());
    return why;
}

int rt_dnnl_channel_block(void) {
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
}
