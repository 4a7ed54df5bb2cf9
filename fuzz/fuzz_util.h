/* Shared by the libFuzzer targets: bounded tensors for whatever shapes an input declares. */
#ifndef GRAFT_FUZZ_UTIL_H
#define GRAFT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/tensor.h"
#include "ir/dtype.h"

/* Inputs may declare any shape: tensors above this many elements are not made (the run is
 * skipped), so a fuzzed "1000000x1000000" costs nothing. */
#define FUZZ_MAX_NUMEL (1 << 16)

/* A tensor of dtype dt and the given shape filled with small varied values, or NULL when the
 * shape is negative, too large, or the dtype is not one graft names. */
static inline rt_tensor *fuzz_tensor(DLDataType dt, int32_t ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > RT_MAX_NDIM || !ir_dtype_name(dt) || dt.lanes != 1) return NULL;
    int64_t n = 1;
    for (int32_t k = 0; k < ndim; k++) {
        if (shape[k] < 0 || (shape[k] && n > FUZZ_MAX_NUMEL / shape[k])) return NULL;
        n *= shape[k];
    }
    if (n > FUZZ_MAX_NUMEL) return NULL;
    rt_tensor *t = rt_tensor_new(dt, ndim, shape);
    if (!t) return NULL;
    uint8_t *p = rt_tensor_data(t);
    size_t nb = rt_tensor_nbytes(t), eb = (dt.bits + 7) / 8;
    for (size_t i = 0; i < nb; i += eb) {
        /* 0.25 * (i % 7) for floats, i % 5 for integers and bools: no NaN, no overflow */
        if (dt.code == kDLFloat && dt.bits == 32) {
            float v = 0.25f * (float)((i / eb) % 7);
            memcpy(p + i, &v, 4);
        } else if (dt.code == kDLFloat && dt.bits == 64) {
            double v = 0.25 * (double)((i / eb) % 7);
            memcpy(p + i, &v, 8);
        } else if (dt.code != kDLFloat) {
            p[i] = (uint8_t)((i / eb) % (dt.bits == 1 ? 2 : 5));
        }
    }
    return t;
}

/* A seed for fuzz_fill from an input's bytes (FNV-1a): the same input fills the same values. */
static inline uint64_t fuzz_seed(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211u;
    return h;
}

/* Overwrites t's values with ones drawn from seed (splitmix64): floats uniform in [-1, 1] (no
 * NaN, no Inf, comparisons of two engines stay meaningful), integers in [0, 4], bools 0 or 1
 * (valid indices for small axes, no overflow). */
static inline void fuzz_fill(rt_tensor *t, uint64_t seed) {
    DLDataType dt = t->dl.dtype;
    uint8_t *p = rt_tensor_data(t);
    size_t nb = rt_tensor_nbytes(t), eb = (dt.bits + 7) / 8;
    uint64_t s = seed;
    for (size_t i = 0; i + eb <= nb; i += eb) {
        uint64_t z = (s += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        double u = (double)(z >> 11) * 0x1p-53 * 2.0 - 1.0;
        if (dt.code == kDLFloat && dt.bits == 32) {
            float v = (float)u;
            memcpy(p + i, &v, 4);
        } else if (dt.code == kDLFloat && dt.bits == 64) {
            memcpy(p + i, &u, 8);
        } else if (dt.code != kDLFloat) {
            memset(p + i, 0, eb);
            p[i] = (uint8_t)(z % (dt.bits == 1 ? 2 : 5));
        }
    }
}

/* print -> parse -> print: p1 is the print of what an input parsed to, p2 the print of p1
 * parsed again (NULL when it did not parse, why in d). Aborts, showing the first line that
 * differs, unless the two are byte-identical. */
static inline void fuzz_check_round_trip(const char *target, const char *p1, const char *p2, const gr_diag *d) {
    if (p2 && !strcmp(p1, p2)) return;
    if (!p2) {
        fprintf(stderr, "%s: the print does not parse again: %s\n--- print:\n%s\n", target, d->msg, p1);
        abort();
    }
    size_t i = 0, line = 1, bol = 0;
    for (; p1[i] && p1[i] == p2[i]; i++)
        if (p1[i] == '\n') line++, bol = i + 1;
    int n1 = (int)strcspn(p1 + bol, "\n"), n2 = (int)strcspn(p2 + bol, "\n");
    fprintf(stderr, "%s: print -> parse -> print differs at line %zu:\n  first:  %.*s\n  second: %.*s\n", target,
            line, n1, p1 + bol, n2, p2 + bol);
    abort();
}

#endif
