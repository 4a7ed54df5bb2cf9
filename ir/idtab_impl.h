/* A side table indexed by expression id (ir/, the byoc passes and their json codegen): ids are
 * dense per context and nodes built together get neighbouring ids, so a two-level page table
 * keeps lookups to two memory accesses with good locality, where a pointer-keyed hash map
 * misses the cache on every lookup once it holds millions of vars. Values are uint64 (pointers
 * fit); 0 means absent.
 *
 * Most tables are short-lived and tiny (structural hash / equality of one small function), and
 * their ids are far apart in a big context: the first IR_IDTAB_SMALL entries live in an inline
 * array scanned linearly, so such a table allocates and clears nothing; the pages (and the
 * top-level array, whose size grows with the largest id) come in only past that. */
#ifndef GRAFT_IR_IDTAB_IMPL_H
#define GRAFT_IR_IDTAB_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"

enum { IR_IDTAB_SHIFT = 10, IR_IDTAB_PAGE = 1 << IR_IDTAB_SHIFT, IR_IDTAB_SMALL = 16 };

typedef struct ir_idtab {
    uint64_t **pages;      /* pages[id >> SHIFT], NULL until touched */
    uint32_t npages;
    GR_VEC(uint32_t) touched; /* page numbers in use, for a cheap clear */
    bool paged;            /* entries live in the pages (else in small_*) */
    uint32_t nsmall;
    uint32_t small_id[IR_IDTAB_SMALL];
    uint64_t small_val[IR_IDTAB_SMALL];
} ir_idtab;

static inline void ir_idtab_init(ir_idtab *t) { memset(t, 0, sizeof(*t)); }

static inline void ir_idtab_free(ir_idtab *t) {
    for (uint32_t i = 0; i < t->touched.len; i++) free(t->pages[t->touched.data[i]]);
    free(t->pages);
    gr_vec_free(&t->touched);
    memset(t, 0, sizeof(*t));
}

/* Forgets every value (keeps the pages for reuse; they are zeroed). */
static inline void ir_idtab_clear(ir_idtab *t) {
    if (t->paged)
        for (uint32_t i = 0; i < t->touched.len; i++)
            memset(t->pages[t->touched.data[i]], 0, sizeof(uint64_t) * IR_IDTAB_PAGE);
    t->paged = false;
    t->nsmall = 0;
}

static inline uint64_t ir_idtab_get(const ir_idtab *t, uint32_t id) {
    if (!t->paged) {
        for (uint32_t i = 0; i < t->nsmall; i++)
            if (t->small_id[i] == id) return t->small_val[i];
        return 0;
    }
    uint32_t p = id >> IR_IDTAB_SHIFT;
    return p < t->npages && t->pages[p] ? t->pages[p][id & (IR_IDTAB_PAGE - 1)] : 0;
}

static inline void ir_idtab_put_paged(ir_idtab *t, uint32_t id, uint64_t val) {
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

static inline void ir_idtab_put(ir_idtab *t, uint32_t id, uint64_t val) {
    if (!t->paged) {
        for (uint32_t i = 0; i < t->nsmall; i++)
            if (t->small_id[i] == id) {
                t->small_val[i] = val;
                return;
            }
        if (!val) return;
        if (t->nsmall < IR_IDTAB_SMALL) {
            t->small_id[t->nsmall] = id;
            t->small_val[t->nsmall++] = val;
            return;
        }
        t->paged = true;  /* spill the inline entries into the pages */
        for (uint32_t i = 0; i < t->nsmall; i++) ir_idtab_put_paged(t, t->small_id[i], t->small_val[i]);
        t->nsmall = 0;
    }
    ir_idtab_put_paged(t, id, val);
}

#endif
