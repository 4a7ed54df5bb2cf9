/* A side table indexed by expression id (ir/ only): ids are dense per context and nodes built
 * together get neighbouring ids, so a two-level page table keeps lookups to two memory accesses
 * with good locality, where a pointer-keyed hash map misses the cache on every lookup once it
 * holds millions of vars. Values are uint64 (pointers fit); 0 means absent. */
#ifndef GRAFT_IR_IDTAB_IMPL_H
#define GRAFT_IR_IDTAB_IMPL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"

enum { IR_IDTAB_SHIFT = 10, IR_IDTAB_PAGE = 1 << IR_IDTAB_SHIFT };

typedef struct ir_idtab {
    uint64_t **pages;      /* pages[id >> SHIFT], NULL until touched */
    uint32_t npages;
    GR_VEC(uint32_t) touched; /* page numbers in use, for a cheap clear */
} ir_idtab;

static inline void ir_idtab_init(ir_idtab *t) { memset(t, 0, sizeof(*t)); }

static inline void ir_idtab_free(ir_idtab *t) {
    for (uint32_t i = 0; i < t->touched.len; i++) free(t->pages[t->touched.data[i]]);
    free(t->pages);
    gr_vec_free(&t->touched);
    memset(t, 0, sizeof(*t));
}

/* Forgets every value (keeps the pages for reuse). */
static inline void ir_idtab_clear(ir_idtab *t) {
    for (uint32_t i = 0; i < t->touched.len; i++)
        memset(t->pages[t->touched.data[i]], 0, sizeof(uint64_t) * IR_IDTAB_PAGE);
}

static inline uint64_t ir_idtab_get(const ir_idtab *t, uint32_t id) {
    uint32_t p = id >> IR_IDTAB_SHIFT;
    return p < t->npages && t->pages[p] ? t->pages[p][id & (IR_IDTAB_PAGE - 1)] : 0;
}

static inline void ir_idtab_put(ir_idtab *t, uint32_t id, uint64_t val) {
    uint32_t p = id >> IR_IDTAB_SHIFT;
    if (p >= t->npages) {
        uint32_t n = t->npages ? t->npages : 64;
        while (n <= p) n *= 2;
        t->pages = gr_xrealloc(t->pages, sizeof(*t->pages) * n);
        memset(t->pages + t->npages, 0, sizeof(*t->pages) * (n - t->npages));
        t->npages = n;
    }
    if (!t->pages[p]) {
        if (!val) return;
        t->pages[p] = gr_xcalloc(IR_IDTAB_PAGE, sizeof(uint64_t));
        gr_vec_push(&t->touched, p);
    }
    t->pages[p][id & (IR_IDTAB_PAGE - 1)] = val;
}

#endif
