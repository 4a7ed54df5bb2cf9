/* The context: arena, ids, string interning, hash-consing. */
#include "ir/ctx_impl.h"
#include "ir/span.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Chunks grow from 64 KiB (small contexts stay small) to 4 MiB, doubling with the arena. Every
 * chunk starts zeroed (calloc, or fresh anonymous pages), and the arena never reuses memory, so
 * ir_alloc needs no memset. Chunks of 2 MiB and more are mmap'ed 2 MiB-aligned with
 * MADV_HUGEPAGE: one page fault per 2 MiB instead of 512 (first touch dominated big parses). */
#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

ir_ctx_t *ir_ctx_new(void) {
    ir_ctx_t *ctx = gr_xcalloc(1, sizeof(*ctx));
    ctx->next_id = 1;
    ctx->next_seq = 1;
    return ctx;
}

void ir_ctx_free(ir_ctx_t *ctx) {
    if (!ctx) return;
    for (uint32_t i = 0; i < ctx->owned.len; i++) gr_object_release(ctx->owned.data[i]);
    gr_vec_free(&ctx->owned);
    for (uint32_t i = 0; i < ctx->adopted.len; i++) free(ctx->adopted.data[i]);
    gr_vec_free(&ctx->adopted);
    for (ir_chunk *c = ctx->chunks, *next; c; c = next) {
        next = c->next;
        gr_free_big(c, c->map_len);
    }
    for (int i = 0; i < IR_HC_NTABLES; i++)
        gr_free_big(ctx->hc[i].slots, (size_t)ctx->hc[i].cap * sizeof(uint64_t));
    gr_free_big(ctx->sfilt, (size_t)ctx->sfilt_words * sizeof(uint64_t));
    free(ctx->pend);
    free(ctx->chunk_mem);
    free(ctx->ops);
    free(ctx->op_dflt);
    free(ctx);
}

/* Hash-cons slots name an object by chunk index and offset / 8 (ctx_impl.h): offsets in a
 * shared chunk stay below CHUNK_MAX, and a chunk of its own holds one object at offset 0. */
#define REF_OFF_BITS 19
#define REF_MAX_CHUNKS ((uint32_t)1 << (32 - REF_OFF_BITS))

/* A zeroed chunk with room for cap bytes, registered under the next chunk index. */
static ir_chunk *chunk_new(ir_ctx_t *ctx, size_t cap) {
    size_t total = sizeof(ir_chunk) + cap;
    if (total >= HUGE_PAGE) total = (total + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    ir_chunk *c = gr_zalloc_big(total);
    c->map_len = total;
    c->size = total - sizeof(ir_chunk);
    if (ctx->nchunks == ctx->chunk_cap) {
        ctx->chunk_cap = ctx->chunk_cap ? ctx->chunk_cap * 2 : 16;
        ctx->chunk_mem = gr_xrealloc(ctx->chunk_mem, sizeof(*ctx->chunk_mem) * ctx->chunk_cap);
    }
    c->idx = ctx->nchunks;
    ctx->chunk_mem[ctx->nchunks++] = c->mem;
    return c;
}

/* ir_alloc, also telling which chunk the block is in. */
static void *arena_alloc(ir_ctx_t *ctx, size_t size, ir_chunk **in) {
    size = (size + 7) & ~(size_t)7;
    ir_chunk *c = ctx->chunks;
    if (!c || c->size - c->used < size) {
        size_t grow = ctx->arena_bytes < CHUNK_MIN ? CHUNK_MIN
                      : ctx->arena_bytes > CHUNK_MAX ? CHUNK_MAX : ctx->arena_bytes;
        /* an expected size (ir__ctx_expect) skips the small doubling chunks: a big chunk is
         * huge-page backed, 512x fewer first-touch faults */
        if (ctx->arena_hint > ctx->arena_bytes && ctx->arena_hint - ctx->arena_bytes > grow)
            grow = ctx->arena_hint - ctx->arena_bytes > CHUNK_MAX ? CHUNK_MAX : ctx->arena_hint - ctx->arena_bytes;
        grow -= sizeof(ir_chunk);
        bool own = size > grow / 4;
        ir_chunk *n = chunk_new(ctx, own ? size : grow);
        if (c && own) {
            /* A big block gets a chunk of its own behind the current one, which stays open. */
            n->next = c->next;
            c->next = n;
        } else {
            n->next = c;
            ctx->chunks = n;
        }
        ctx->arena_bytes += sizeof(ir_chunk) + n->size;
        if (own) {
            /* ... and nothing else: its one block is at offset 0 (see REF_OFF_BITS). */
            n->used = n->size;
            *in = n;
            return n->mem;
        }
        c = n;
    }
    void *p = c->mem + c->used;
    c->used += size;
    *in = c;
    return p;
}

void *ir_alloc(ir_ctx_t *ctx, size_t size) {
    ir_chunk *in;
    return arena_alloc(ctx, size, &in);
}

void *ir_alloc_copy(ir_ctx_t *ctx, const void *src, size_t size) {
    void *p = ir_alloc(ctx, size);
    if (size) memcpy(p, src, size);
    return p;
}

size_t ir_ctx_arena_bytes(const ir_ctx_t *ctx) { return ctx->arena_bytes; }

uint32_t ir_ctx_next_id(ir_ctx_t *ctx) {
    GR_ASSERT(ctx->next_id != UINT32_MAX);
    return ctx->next_id++;
}
uint32_t ir_ctx_id_bound(const ir_ctx_t *ctx) { return ctx->next_id; }
uint32_t ir__ctx_next_seq(ir_ctx_t *ctx) { return ctx->next_seq++; }

void ir__ctx_keep(ir_ctx_t *ctx, gr_object *obj) {
    if (!obj) return;
    gr_object_retain(obj);
    gr_vec_push(&ctx->owned, obj);
}

uint32_t ir_ctx_disown(ir_ctx_t *ctx, struct gr_object *obj) {
    uint32_t n = 0, w = 0;
    for (uint32_t i = 0; i < ctx->owned.len; i++) {
        if (ctx->owned.data[i] == obj) n++;
        else ctx->owned.data[w++] = ctx->owned.data[i];
    }
    ctx->owned.len = w;
    for (uint32_t i = 0; i < n; i++) gr_object_release(obj);
    return n;
}

void ir__ctx_adopt(ir_ctx_t *ctx, void *p, size_t size) {
    gr_vec_push(&ctx->adopted, p);
    ctx->arena_bytes += size;
}


/* ---- hash-consing ----
 * Slots are 8 bytes (ctx_impl.h): half the memory of a pointer + hash + size entry, which is
 * most of the tables' share of a big parse. The size each comparison needs is kept with the
 * object: strings carry a 4-byte length before their first byte (the 8-byte rounding of the
 * arena mostly absorbs it), spans know theirs from their loc count, and other objects carry an
 * 8-byte header (they are few: shapes, struct info, attrs). */

enum { HC_STR, HC_SPAN, HC_OTHER };

/* A string's 4-byte header: its length, and whether the block also holds the one-loc span of
 * that source without a range (is_output 0 or 1) right after the string's NUL (8-aligned).
 * That span is made with the string (ir__span_named_n) and is in no table: the header is how
 * every later request for it finds it, which saves the span table a slot (and a cache miss)
 * per layer name on big parses. Strings made otherwise never get it; their spans go to the
 * span table as any other. */
#define STR_LEN 0x3fffffffu
#define STR_SPAN0 0x40000000u
#define STR_SPAN1 0x80000000u
static uint32_t str_header(const char *s) {
    uint32_t hdr;
    memcpy(&hdr, s - 4, sizeof(hdr));
    return hdr;
}
static size_t str_block(size_t n) { return (4 + n + 1 + 7) & ~(size_t)7; }

static uint64_t hc_slot(ir_chunk *c, const void *obj, uint32_t h) {
    size_t off = (size_t)((const unsigned char *)obj - c->mem);
    if (c->idx >= REF_MAX_CHUNKS)
        gr_abort(__FILE__, __LINE__, "IR arena has too many chunks (%u) for its hash-cons tables", c->idx);
    GR_ASSERT((off & 7) == 0 && (off >> 3) < ((size_t)1 << REF_OFF_BITS));
    return (uint64_t)h << 32 | (uint64_t)c->idx << REF_OFF_BITS | off >> 3;
}

static unsigned char *hc_obj(const ir_ctx_t *ctx, uint64_t slot) {
    uint32_t ref = (uint32_t)slot;
    return ctx->chunk_mem[ref >> REF_OFF_BITS] + ((size_t)(ref & ((1u << REF_OFF_BITS) - 1)) << 3);
}

static void hc_grow(ir_hc_table *t) {
    uint32_t ncap = t->cap ? t->cap * 2 : 1024;
    uint64_t *n = gr_zalloc_big((size_t)ncap * sizeof(*n));
    for (uint32_t i = 0; i < t->cap; i++) {
        uint64_t e = t->slots[i];
        if (!e) continue;
        uint32_t j = (uint32_t)(e >> 33) & (ncap - 1);
        while (n[j]) j = (j + 1) & (ncap - 1);
        n[j] = e;
    }
    gr_free_big(t->slots, (size_t)t->cap * sizeof(*n));
    t->slots = n;
    t->cap = ncap;
}

void ir__ctx_expect(ir_ctx_t *ctx, size_t arena_bytes) { ctx->arena_hint = ctx->arena_bytes + arena_bytes; }

/* Whether the stored object at `obj` (its block start) holds the key. */
static bool hc_same(int kind, const unsigned char *obj, const void *key, size_t size) {
    switch (kind) {
    case HC_STR: {
        uint32_t len;
        memcpy(&len, obj, sizeof(len));
        return (len & STR_LEN) == size && memcmp(obj + 4, key, size) == 0;
    }
    case HC_SPAN:
        return ((const ir_span *)(const void *)obj)->n == ((const ir_span *)key)->n &&
               memcmp(obj, key, size) == 0;
    default: {
        uint32_t sz;
        memcpy(&sz, obj, sizeof(sz));
        return sz == size && memcmp(obj + 8, key, size) == 0;
    }
    }
}

/* The hash of a string's bytes (its slot hash in the string table). */
static uint32_t str_hash(const char *s, size_t n) { return (uint32_t)gr_hash_bytes(s, n, 0) | 1; }

static ir_hc_table *hc_table(ir_ctx_t *ctx, int kind) {
    return &ctx->hc[kind == HC_STR ? IR_HC_STRINGS : kind == HC_SPAN ? IR_HC_SPANS : IR_HC_OTHER];
}

static uint32_t recent_slot(const char *s) { return (uint32_t)((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) & 15; }

/* The span kept with source string s (see STR_SPAN0), or NULL. */
static const ir_span *adjacent_span(const char *s, bool is_output) {
    uint32_t hdr = str_header(s);
    if (!(hdr & (is_output ? STR_SPAN1 : STR_SPAN0))) return NULL;
    return (const ir_span *)(const void *)(s - 4 + str_block(hdr & STR_LEN));
}

static bool rangeless_one(const ir_span *s) {
    const ir_loc *l = &s->locs[0];
    return s->n == 1 && !l->line && !l->col && !l->end_line && !l->end_col;
}

/* A new object's block in the arena: head bytes (strings: the length; others: the size), the
 * key, a NUL for strings (ir_alloc zero-fills), then `extra` bytes of room. */
static const unsigned char *hc_new_block(ir_ctx_t *ctx, int kind, const void *key, size_t size,
                                         uint32_t h, size_t extra, uint64_t *slot) {
    static const size_t head[] = {4, 0, 8}; /* bytes stored before the object */
    ir_chunk *in;
    unsigned char *block = arena_alloc(ctx, head[kind] + size + (kind == HC_STR) + extra, &in);
    uint32_t sz = (uint32_t)size;
    if (head[kind]) memcpy(block, &sz, sizeof(sz));
    memcpy(block + head[kind], key, size);
    *slot = hc_slot(in, block, h);
    return block;
}

/* ---- big string tables ----
 * Past ~100k strings the string table outgrows the caches, and a big parse interns mostly NEW
 * strings (each binding's var name and layer name): probing a random slot to prove a string
 * absent is a DRAM miss, twice a binding, each stalling the parse. Instead, a blocked Bloom
 * filter over the slots' hashes (3 bits in one 64-bit word a string; 4 bits a table slot, 1/16
 * of the table) proves most absences from cache, and the new strings' slots wait in a small
 * cache-resident table until PEND_MAX of them enter the big table in one batch with prefetches:
 * their misses overlap instead of stalling one by one. A filter hit (the string may exist)
 * probes the waiting slots, then the big table, as before: pointer-uniqueness is unchanged. */
#define STR_FILTER_MIN ((uint32_t)1 << 17) /* table slots from which the filter is used */
#define PEND_SLOTS 2048u                   /* the waiting slots' table (16 KiB) ... */
#define PEND_MAX 512u                      /* ... holds at most this many (load 1/4) */

static uint64_t filt_bits(uint32_t h) {
    uint64_t g = (uint64_t)h * 0xd6e8feb86659fd93ull;
    g ^= g >> 32;
    return 1ull << (g & 63) | 1ull << (g >> 6 & 63) | 1ull << (g >> 12 & 63);
}

static uint64_t *filt_word(ir_ctx_t *ctx, uint32_t h) {
    return &ctx->sfilt[(uint32_t)(((uint64_t)h * 0x9e3779b97f4a7c15ull) >> 32) & (ctx->sfilt_words - 1)];
}

/* Moves the waiting slots into the table (which has room: its len counts them). */
static void str_flush(ir_ctx_t *ctx) {
    if (!ctx->npend) return;
    ir_hc_table *t = &ctx->hc[IR_HC_STRINGS];
    const uint64_t *order = ctx->pend + PEND_SLOTS;
    uint32_t mask = t->cap - 1, n = ctx->npend;
    enum { AHEAD = 16 };
    for (uint32_t k = 0; k < n && k < AHEAD; k++)
        __builtin_prefetch(&t->slots[(uint32_t)(order[k] >> 33) & mask], 1);
    for (uint32_t k = 0; k < n; k++) {
        if (k + AHEAD < n) __builtin_prefetch(&t->slots[(uint32_t)(order[k + AHEAD] >> 33) & mask], 1);
        uint64_t e = order[k];
        uint32_t i = (uint32_t)(e >> 33) & mask;
        while (t->slots[i]) i = (i + 1) & mask;
        t->slots[i] = e;
    }
    memset(ctx->pend, 0, PEND_SLOTS * sizeof(uint64_t));
    ctx->npend = 0;
}

/* (Re)builds the filter for the string table's current capacity. */
static void filt_build(ir_ctx_t *ctx) {
    ir_hc_table *t = &ctx->hc[IR_HC_STRINGS];
    gr_free_big(ctx->sfilt, (size_t)ctx->sfilt_words * sizeof(uint64_t));
    ctx->sfilt_words = t->cap / 16;
    ctx->sfilt = gr_zalloc_big((size_t)ctx->sfilt_words * sizeof(uint64_t));
    if (!ctx->pend) ctx->pend = gr_xcalloc(PEND_SLOTS + PEND_MAX, sizeof(uint64_t));
    for (uint32_t i = 0; i < t->cap; i++) {
        uint64_t e = t->slots[i];
        if (e) *filt_word(ctx, (uint32_t)(e >> 32)) |= filt_bits((uint32_t)(e >> 32));
    }
}

static const void *str_lookup_big(ir_ctx_t *ctx, const void *key, size_t size, uint32_t h,
                                  size_t extra, bool *created) {
    ir_hc_table *t = &ctx->hc[IR_HC_STRINGS];
    uint64_t bits = filt_bits(h), *w = filt_word(ctx, h);
    if ((*w & bits) == bits) {
        for (uint32_t i = (h >> 1) & (PEND_SLOTS - 1);; i = (i + 1) & (PEND_SLOTS - 1)) {
            uint64_t e = ctx->pend[i];
            if (!e) break;
            if ((uint32_t)(e >> 32) == h) {
                const unsigned char *obj = hc_obj(ctx, e);
                if (hc_same(HC_STR, obj, key, size)) return obj + 4;
            }
        }
        uint32_t mask = t->cap - 1;
        for (uint32_t i = (h >> 1) & mask;; i = (i + 1) & mask) {
            uint64_t e = t->slots[i];
            if (!e) break;
            if ((uint32_t)(e >> 32) == h) {
                const unsigned char *obj = hc_obj(ctx, e);
                if (hc_same(HC_STR, obj, key, size)) return obj + 4;
            }
        }
    }
    uint64_t e;
    const unsigned char *block = hc_new_block(ctx, HC_STR, key, size, h, extra, &e);
    *w |= bits;
    uint32_t i = (h >> 1) & (PEND_SLOTS - 1);
    while (ctx->pend[i]) i = (i + 1) & (PEND_SLOTS - 1);
    ctx->pend[i] = e;
    ctx->pend[PEND_SLOTS + ctx->npend++] = e;
    t->len++;
    if (created) *created = true;
    if (ctx->npend == PEND_MAX) str_flush(ctx);
    return block + 4;
}

/* h: odd (a slot is never 0); the home slot comes from the other bits (h & mask would only
 * ever pick odd slots: twice the clustering). */
static const void *hc_lookup_ex(ir_ctx_t *ctx, int kind, const void *key, size_t size, uint32_t h,
                                size_t extra, bool *created) {
    ir_hc_table *t = hc_table(ctx, kind);
    static const size_t head[] = {4, 0, 8}; /* bytes stored before the object */
    if ((t->len + 1) * 4 >= t->cap * 3) {
        if (kind == HC_STR) str_flush(ctx);
        hc_grow(t);
        if (kind == HC_STR && t->cap >= STR_FILTER_MIN) filt_build(ctx);
    }
    if (kind == HC_STR && ctx->sfilt_words) return str_lookup_big(ctx, key, size, h, extra, created);
    uint32_t mask = t->cap - 1, i = (h >> 1) & mask;
    for (;; i = (i + 1) & mask) {
        uint64_t e = t->slots[i];
        if (!e) break;
        if ((uint32_t)(e >> 32) == h) {
            const unsigned char *obj = hc_obj(ctx, e);
            if (hc_same(kind, obj, key, size)) return obj + head[kind];
        }
    }
    uint64_t e;
    const unsigned char *block = hc_new_block(ctx, kind, key, size, h, extra, &e);
    t->slots[i] = e;
    t->len++;
    if (created) *created = true;
    return block + head[kind];
}

static const void *hc_lookup(ir_ctx_t *ctx, int kind, const void *key, size_t size, uint32_t h) {
    return hc_lookup_ex(ctx, kind, key, size, h, 0, NULL);
}

const ir_span *ir__span_named_n(ir_ctx_t *ctx, const char *s, size_t n, bool is_output) {
    if (n == 0) return NULL;
    GR_ASSERT(n <= STR_LEN);
    bool created = false;
    size_t room = str_block(n) - (4 + n + 1) + sizeof(ir_span) + sizeof(ir_loc);
    char *src = (char *)hc_lookup_ex(ctx, HC_STR, s, n, str_hash(s, n), room, &created);
    ctx->recent[recent_slot(src)] = src;
    if (created) {
        ir_span *sp = (ir_span *)(void *)(src - 4 + str_block(n)); /* zeroed arena memory */
        sp->n = 1;
        sp->locs[0].source = src;
        sp->locs[0].is_output = is_output ? 1 : 0;
        uint32_t hdr = (uint32_t)n | (is_output ? STR_SPAN1 : STR_SPAN0);
        memcpy(src - 4, &hdr, sizeof(hdr));
        return sp;
    }
    const ir_span *sp = adjacent_span(src, is_output);
    if (sp) return sp;
    _Alignas(16) unsigned char key[sizeof(ir_span) + sizeof(ir_loc)];
    memset(key, 0, sizeof(key));
    ir_span *k = (ir_span *)(void *)key;
    k->n = 1;
    k->locs[0].source = src;
    k->locs[0].is_output = is_output ? 1 : 0;
    return hc_lookup(ctx, HC_SPAN, key, sizeof(key),
                     (uint32_t)gr_hash_bytes(key, sizeof(key), IR_HC_SPAN_TAG) | 1);
}

const void *ir_hashcons(ir_ctx_t *ctx, uint32_t tag, const void *key, size_t size) {
    GR_ASSERT(tag != 0 && size < UINT32_MAX);
    if (tag == IR_HC_SPAN_TAG) {
        const ir_span *s = key;
        if (rangeless_one(s)) {
            const ir_span *a = adjacent_span(s->locs[0].source, s->locs[0].is_output);
            if (a) return a;
        }
        return hc_lookup(ctx, HC_SPAN, key, size, (uint32_t)gr_hash_bytes(key, size, tag) | 1);
    }
    return hc_lookup(ctx, HC_OTHER, key, size, (uint32_t)gr_hash_bytes(key, size, tag) | 1);
}

const char *ir_intern_n(ir_ctx_t *ctx, const char *s, size_t n) {
    GR_ASSERT(n <= STR_LEN);
    const char **r = &ctx->recent[recent_slot(s)];
    if (*r == s) { /* an interned string: itself, when the length matches */
        if ((str_header(s) & STR_LEN) == n) return s;
    }
    const char *c = hc_lookup(ctx, HC_STR, s, n, str_hash(s, n));
    ctx->recent[recent_slot(c)] = c;
    return c;
}

const char *ir__intern_new(ir_ctx_t *ctx, const char *s, size_t n, bool *created) {
    GR_ASSERT(n <= STR_LEN);
    const char *c = hc_lookup_ex(ctx, HC_STR, s, n, str_hash(s, n), 0, created);
    ctx->recent[recent_slot(c)] = c;
    return c;
}

const char *ir_intern(ir_ctx_t *ctx, const char *s) {
    /* Re-interning a string this context handed out lately (a name passed on to a node
     * constructor) costs no strlen and no table probe. */
    if (ctx->recent[recent_slot(s)] == s) return s;
    return ir_intern_n(ctx, s, strlen(s));
}

const char *ir_internf(ir_ctx_t *ctx, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0) return ir_intern(ctx, "");
    if ((size_t)n < sizeof(buf)) return ir_intern_n(ctx, buf, (size_t)n);
    char *big = gr_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    const char *r = ir_intern_n(ctx, big, (size_t)n);
    free(big);
    return r;
}

