/* Hashing and the uint64 -> uint64 hash map. */
#include "base/map.h"

#include <string.h>

#include "base/status.h"
#include "base/sys.h"

uint64_t gr_hash_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

uint64_t gr_hash_bytes(const void *p, size_t n, uint64_t seed) {
    /* FNV-1a over 8-byte words, then a final mix. */
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        s += 8;
        n -= 8;
    }
    while (n--) h = (h ^ *s++) * 0x100000001b3ull;
    return gr_hash_mix(h, seed);
}

void gr_map_init(gr_map *m) { memset(m, 0, sizeof(*m)); }

void gr_map_free(gr_map *m) {
    gr_free_big(m->keys, sizeof(uint64_t) * m->cap);
    gr_free_big(m->vals, sizeof(uint64_t) * m->cap);
    memset(m, 0, sizeof(*m));
}

void gr_map_clear(gr_map *m) {
    if (m->cap) memset(m->keys, 0, sizeof(uint64_t) * m->cap);
    m->len = 0;
}

static uint32_t map_slot(uint64_t key, uint32_t mask) {
    return (uint32_t)gr_hash_mix(key, 0x51ed27) & mask;
}

static void map_grow(gr_map *m) {
    uint32_t ncap = m->cap ? m->cap * 2 : 16;
    uint64_t *nk = gr_zalloc_big(sizeof(uint64_t) * ncap), *nv = gr_zalloc_big(sizeof(uint64_t) * ncap);
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        uint32_t j = map_slot(m->keys[i], ncap - 1);
        while (nk[j]) j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    gr_free_big(m->keys, sizeof(uint64_t) * m->cap);
    gr_free_big(m->vals, sizeof(uint64_t) * m->cap);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
}

void gr_map_put(gr_map *m, uint64_t key, uint64_t val) {
    GR_ASSERT(key != 0);
    if ((m->len + 1) * 4 >= m->cap * 3) map_grow(m);
    uint32_t mask = m->cap - 1, i = map_slot(key, mask);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & mask;
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->len++;
    }
    m->vals[i] = val;
}

bool gr_map_get(const gr_map *m, uint64_t key, uint64_t *val) {
    if (!m->cap || !key) return false;
    uint32_t mask = m->cap - 1, i = map_slot(key, mask);
    for (; m->keys[i]; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            if (val) *val = m->vals[i];
            return true;
        }
    }
    return false;
}

uint64_t gr_map_get_or(const gr_map *m, uint64_t key, uint64_t dflt) {
    uint64_t v;
    return gr_map_get(m, key, &v) ? v : dflt;
}
