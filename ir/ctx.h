/* The IR context: owner of every IR node, interned string, span and struct info.
 *
 * Memory model (DESIGN.md "Memory"): one ir_ctx_t per compilation session. Every IR object
 * (expressions, bindings, blocks, functions, modules, spans, struct info, attrs) is
 * bump-allocated in the context's arena and is immutable once built, so a module before and
 * after a pass share nodes and both stay valid until ir_ctx_free(). Nobody frees a single node.
 * Tensor data of constants lives outside the arena in refcounted rt_tensor objects; the context
 * holds one reference for every constant built in it and drops them in ir_ctx_free().
 *
 *     ir_ctx_t *ctx = ir_ctx_new();
 *     ir_module *m = NULL;
 *     if (ir_parse_file(ctx, "model.relax", &m, &diag) == GR_OK) ir_print_module(m, stdout, NULL);
 *     ir_ctx_free(ctx);      // every node, module and string of ctx is gone
 */
#ifndef GRAFT_IR_CTX_H
#define GRAFT_IR_CTX_H

#include "base/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/status.h"

typedef struct ir_ctx ir_ctx_t;

/* Returns a new context; pair with ir_ctx_free(). Aborts only if the first allocation fails. */
GR_API ir_ctx_t *ir_ctx_new(void);
GR_API void ir_ctx_free(ir_ctx_t *ctx);

/* Zeroed, 8-byte aligned arena memory that lives until ir_ctx_free(). Never returns NULL
 * (out of memory aborts: the arena is the process's working set). */
void *ir_alloc(ir_ctx_t *ctx, size_t size);
void *ir_alloc_copy(ir_ctx_t *ctx, const void *src, size_t size);
#define IR_NEW(ctx, T) ((T *)ir_alloc((ctx), sizeof(T)))
#define IR_NEW_ARRAY(ctx, T, n) ((T *)ir_alloc((ctx), sizeof(T) * (size_t)(n)))

/* Interned, NUL-terminated strings: equal strings give the same pointer, so names compare by
 * pointer. The result lives as long as the context. */
const char *ir_intern(ir_ctx_t *ctx, const char *s);
const char *ir_intern_n(ir_ctx_t *ctx, const char *s, size_t n);
const char *ir_internf(ir_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A fresh id, unique within the context; every expression gets one (dense, starts at 1), so
 * analyses can index side tables by expression id. */
uint32_t ir_ctx_next_id(ir_ctx_t *ctx);
/* One past the largest id handed out so far. */
uint32_t ir_ctx_id_bound(const ir_ctx_t *ctx);

/* Bytes of arena in use (for the memory benchmarks). */
size_t ir_ctx_arena_bytes(const ir_ctx_t *ctx);

/* Hash-consing: returns the canonical copy of the `size` bytes at `key` (hashing and comparing
 * raw bytes, so callers pass fully zero-padded keys), copying it into the arena the first time.
 * Used for spans, struct info and prim expressions so equal values are pointer-equal. */
const void *ir_hashcons(ir_ctx_t *ctx, uint32_t tag, const void *key, size_t size);

/* ---- A small open-addressing hash map: uint64 key -> uint64 value (pointers fit in both). ---
 * Key 0 is reserved (empty slot). Heap-allocated (not in the arena): pair init with free. */
typedef struct gr_map {
    uint64_t *keys;
    uint64_t *vals;
    uint32_t cap, len;
} gr_map;

void gr_map_init(gr_map *m);
void gr_map_free(gr_map *m);
void gr_map_clear(gr_map *m);
/* Inserts or overwrites. */
void gr_map_put(gr_map *m, uint64_t key, uint64_t val);
/* Returns true and sets *val when present (val may be NULL). */
bool gr_map_get(const gr_map *m, uint64_t key, uint64_t *val);
/* Returns the value, or `dflt` when absent. */
uint64_t gr_map_get_or(const gr_map *m, uint64_t key, uint64_t dflt);
#define GR_MAP_PTR(p) ((uint64_t)(uintptr_t)(p))

uint64_t gr_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t gr_hash_mix(uint64_t h, uint64_t v);

/* ---- Growable heap array of any element type (free with gr_vec_free). ---- */
#define GR_VEC(T) struct { T *data; uint32_t len, cap; }
#define gr_vec_push(v, x)                                                                     \
    do {                                                                                      \
        if ((v)->len == (v)->cap) {                                                           \
            (v)->cap = (v)->cap ? (v)->cap * 2 : 8;                                           \
            (v)->data = gr_xrealloc((v)->data, sizeof(*(v)->data) * (size_t)(v)->cap);        \
        }                                                                                     \
        (v)->data[(v)->len++] = (x);                                                          \
    } while (0)
/* &v.data[i], or NULL while v has never held anything (NULL + 0 is undefined behaviour). */
#define gr_vec_at(v, i) ((v).data ? (v).data + (i) : NULL)
#define gr_vec_free(v) do { free((v)->data); (v)->data = NULL; (v)->len = (v)->cap = 0; } while (0)

/* malloc/realloc that abort on failure (for heap scratch space; user input never triggers it). */
void *gr_xmalloc(size_t n);
void *gr_xcalloc(size_t n, size_t size);
void *gr_xrealloc(void *p, size_t n);
char *gr_xstrdup(const char *s);
/* True when the open stream is a directory (fopen accepts one; every read then fails). */
bool gr_is_dir(FILE *f);
/* Transparent-huge-page advice for the 2 MiB-aligned part of a big heap block (>= 8 MiB): far
 * fewer first-touch page faults on multi-megabyte buffers. Advice only. */
void gr_advise_huge(void *p, size_t n);

#endif
