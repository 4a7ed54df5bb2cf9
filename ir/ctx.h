/* The IR context: owner of every IR node, interned string, span and struct info. (The heap
 * containers and allocators it uses, and that every layer uses, are in base/map.h, base/vec.h
 * and base/sys.h, included here.)
 *
 * Memory model (DESIGN.md "Memory"): one ir_ctx_t per compilation session. Every IR object
 * (expressions, bindings, blocks, functions, modules, spans, struct info, attrs) is
 * bump-allocated in the context's arena and is immutable once built, so a module before and
 * after a pass share nodes and both stay valid until ir_ctx_free(). Nobody frees a single node.
 * Tensor data of constants lives outside the arena in refcounted rt_tensor objects; the context
 * holds one reference for every constant built in it and drops them in ir_ctx_free(), or
 * earlier for constants handed over to runtime modules (ir_ctx_disown).
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

#include "base/map.h"
#include "base/status.h"
#include "base/sys.h"
#include "base/vec.h"

typedef struct ir_ctx ir_ctx_t;

/* Returns a new context; pair with ir_ctx_free(). Aborts only if the first allocation fails. */
GR_API ir_ctx_t *ir_ctx_new(void);
GR_API void ir_ctx_free(ir_ctx_t *ctx);
/* Drops every reference the context holds on obj (a constant's tensor: one per ir_const_new
 * on it); returns how many. obj then lives as long as its other holders: the caller must make
 * sure no IR node built on it is read again (byoc_partition_opts.release_consts). */
struct gr_object;
GR_API uint32_t ir_ctx_disown(ir_ctx_t *ctx, struct gr_object *obj);

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

#endif
