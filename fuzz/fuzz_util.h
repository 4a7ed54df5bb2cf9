/* Shared by the libFuzzer targets: bounded tensors for whatever shapes an input declares. */
#ifndef GRAFT_FUZZ_UTIL_H
#define GRAFT_FUZZ_UTIL_H

#include <stdint.h>
#include <string.h>

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

#endif
