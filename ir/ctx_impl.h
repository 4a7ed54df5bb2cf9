/* Internal layout of the context (ir/ only). */
#ifndef GRAFT_IR_CTX_IMPL_H
#define GRAFT_IR_CTX_IMPL_H

#include "ir/ctx.h"
#include "ir/object.h"

struct ir_op;

typedef struct ir_chunk {
    struct ir_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char mem[];
} ir_chunk;

typedef struct ir_hc_entry {
    uint64_t hash;            /* 0 = empty */
    uint32_t tag, size;
    const void *ptr;
} ir_hc_entry;

struct ir_ctx {
    ir_chunk *chunks;         /* current chunk first */
    size_t arena_bytes;
    uint32_t next_id;
    uint32_t next_seq;        /* creation order of hash-consed prims */
    ir_hc_entry *hc;          /* hash-cons table (strings use tag 0) */
    uint32_t hc_cap, hc_len;
    GR_VEC(gr_object *) owned;/* references released in ir_ctx_free */
    struct ir_op **ops;       /* one Op node per op-table row, made on demand */
};

/* Keeps a reference to obj until the context is freed (retains it). */
void ir__ctx_keep(ir_ctx_t *ctx, gr_object *obj);
uint32_t ir__ctx_next_seq(ir_ctx_t *ctx);

#endif
