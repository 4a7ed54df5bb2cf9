/* Tensors: refcounted DLPack tensors on the CPU. Shared by IR constants, the executor and the
 * runtime modules. Data is 64-byte aligned, contiguous, row-major. */
#ifndef GRAFT_BASE_TENSOR_H
#define GRAFT_BASE_TENSOR_H

#include "base/api.h"

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/object.h"
#include "base/status.h"

#define RT_MAX_NDIM 8

typedef struct rt_tensor {
    gr_object obj;                /* refcount, type "rt.tensor", deleter */
    DLTensor dl;                  /* dl.shape points at shape[], dl.data at owned or borrowed data */
    int64_t shape[RT_MAX_NDIM];
    void *owner;                  /* non-NULL: the allocation to free (owned data) */
} rt_tensor;

/* A new zero-filled tensor (refcount 1); pair with rt_tensor_release(). NULL when ndim is out
 * of range or memory runs out. */
GR_API rt_tensor *rt_tensor_new(DLDataType dtype, int32_t ndim, const int64_t *shape);
/* A tensor that borrows `data` (not freed by the tensor). */
GR_API rt_tensor *rt_tensor_wrap(DLDataType dtype, int32_t ndim, const int64_t *shape, void *data);
/* A tensor that takes `data` (64-byte aligned, from the malloc family; freed with the tensor);
 * NULL, and data still the caller's, when the header cannot be made. */
rt_tensor *rt_tensor_adopt(DLDataType dtype, int32_t ndim, const int64_t *shape, void *data);
GR_API rt_tensor *rt_tensor_retain(rt_tensor *t);
GR_API void rt_tensor_release(rt_tensor *t);

GR_API int64_t rt_tensor_numel(const rt_tensor *t);
GR_API size_t rt_tensor_nbytes(const rt_tensor *t);
static inline void *rt_tensor_data(const rt_tensor *t) { return t->dl.data; }
bool rt_tensor_same_shape(const rt_tensor *a, const rt_tensor *b);
/* Reads element i converted to double (any dtype). */
GR_API double rt_tensor_get_f64(const rt_tensor *t, int64_t i);
GR_API void rt_tensor_set_f64(rt_tensor *t, int64_t i, double v);

#endif
