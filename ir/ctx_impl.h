/* Internal layout of the context (ir/ only). */
#ifndef GRAFT_IR_CTX_IMPL_H
#define GRAFT_IR_CTX_IMPL_H

#include "base/object.h"
#include "ir/ctx.h"

struct ir_op;

typedef struct ir_chunk {
    struct ir_chunk *next;
    size_t size, used;
    size_t map_len;           /* bytes from gr_zalloc_big (header included) */
    uint32_t idx;             /* index in ir_ctx.chunk_mem (hash-cons slots name chunks by it) */
    _Alignas(16) unsigned char mem[];
} ir_chunk;

/* One open-addressing table of 8-byte slots: the 32-bit hash (odd, so 0 = empty) above a
 * 32-bit arena reference (chunk index << 19 | offset / 8), so growing re-slots without touching
 * the objects. Strings, spans and the rest (prims, struct info, attrs) live in separate tables:
 * the small hot sets (shapes, dtypes, attrs) then stay in cache while the big per-binding sets
 * (names, layer names) grow. */
typedef struct ir_hc_table {
    uint64_t *slots;
    uint32_t cap, len;
} ir_hc_table;

enum { IR_HC_STRINGS, IR_HC_SPANS, IR_HC_OTHER, IR_HC_NTABLES };

struct ir_call;
struct rt_tensor;

struct ir_ctx {
    ir_chunk *chunks;         /* current chunk first */
    size_t arena_bytes;
    size_t arena_hint;        /* arena size expected soon (ir__ctx_expect) */
    uint32_t next_id;
    uint32_t next_seq;        /* creation order of hash-consed prims */
    ir_hc_table hc[IR_HC_NTABLES]; /* hash-cons tables (strings use tag 0) */
    unsigned char **chunk_mem;/* every chunk's mem, by ir_chunk.idx */
    uint32_t nchunks, chunk_cap;
    const char *recent[16];   /* recently interned strings, by address: re-interning one is free */
    /* Big string tables (ctx.c, str_lookup): a blocked Bloom filter of the table's hashes, and
     * new strings' slots waiting to enter the table in a batch (pend: a small table of them). */
    uint64_t *sfilt;          /* cap / 16 words (0 words: small table, no filter) */
    uint32_t sfilt_words;
    uint32_t npend;
    uint64_t *pend;           /* IR_STR_PEND_SLOTS slots, then IR_STR_PEND_MAX in arrival order */
    GR_VEC(gr_object *) owned;/* references released in ir_ctx_free */
    GR_VEC(void *) adopted;   /* heap blocks freed in ir_ctx_free (ir__ctx_adopt) */
    struct ir_op **ops;       /* one Op node per op-table row, made on demand */
    struct ir_op_dflt *op_dflt; /* per op-table row: parsed attr defaults (ir/ops/op_attrs.c) */
    /* Last binary-arithmetic inference (ir/builder.c): arg struct infos -> result. */
    const struct ir_sinfo *bin_memo_a, *bin_memo_b, *bin_memo_r;
    /* FoldConstant's evaluator for modules of this context (ir_ctx_set_const_eval) */
    struct rt_tensor *(*const_eval)(void *user, const struct ir_call *call);
    void *const_eval_user;
};

/* A hint that about arena_bytes more arena is coming (a parser knows from its line count): the
 * chunks are sized for it, so a mid-sized parse skips the small chunks (4 KiB pages: 512x the
 * first-touch faults of the huge-page-backed big ones). (Presizing the string table too was
 * tried: slower at 1M, a big sparse table from the start costs more misses than the rehashes.) */
void ir__ctx_expect(ir_ctx_t *ctx, size_t arena_bytes);
/* Keeps a reference to obj until the context is freed (retains it). */
void ir__ctx_keep(ir_ctx_t *ctx, gr_object *obj);
/* The context takes a malloc'ed block of `size` bytes (counted as arena) and frees it with
 * itself: a big vector built on the heap becomes IR without a copy. */
void ir__ctx_adopt(ir_ctx_t *ctx, void *p, size_t size);
/* The tag spans are hash-consed with (they get a table of their own). */
#define IR_HC_SPAN_TAG 0x5350414eu
uint32_t ir__ctx_next_seq(ir_ctx_t *ctx);
/* ir_span_from_loc for a loc whose source is already interned (skips a second lookup of the
 * source in the string table: one cache miss a binding on big parses). */
struct ir_loc;
struct ir_span;
/* The span of one loc named source[0..n) (interned here) without a range: ir_span_named for a
 * source not yet interned. NULL when n is 0. */
const struct ir_span *ir__span_named_n(ir_ctx_t *ctx, const char *source, size_t n, bool is_output);
/* ir_intern_n that also tells whether the string is new to this context (*created). */
const char *ir__intern_new(ir_ctx_t *ctx, const char *s, size_t n, bool *created);
const struct ir_span *ir__span_interned(ir_ctx_t *ctx, const struct ir_loc *loc);

#endif
