/* NumPy .npy files (format 1.0-3.0, little-endian, C order) <-> tensors. */
#ifndef GRAFT_RUNTIME_NPY_H
#define GRAFT_RUNTIME_NPY_H

#include "base/api.h"

#include "base/tensor.h"

/* *out: new tensor (refcount 1). Malformed files are GR_ERR_INVALID naming the file. */
GR_API gr_status rt_npy_load(const char *path, rt_tensor **out, gr_diag *diag);
GR_API gr_status rt_npy_save(const char *path, const rt_tensor *t, gr_diag *diag);

#endif
