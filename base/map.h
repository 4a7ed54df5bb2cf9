/* Hashing, and a small open-addressing hash map: uint64 key -> uint64 value (pointers fit in
 * both). Key 0 is reserved (empty slot). Heap-allocated: pair init with free. */
#ifndef GRAFT_BASE_MAP_H
#define GRAFT_BASE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
