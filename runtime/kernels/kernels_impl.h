/* Internal helpers shared by the reference kernels (runtime/kernels/kernels_*.c). */
#ifndef GRAFT_RUNTIME_KERNELS_KERNELS_IMPL_H
#define GRAFT_RUNTIME_KERNELS_KERNELS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/attrs.h"
#include "ir/dtype.h"
#include "runtime/kernels/kernels.h"

/* The kernels' loops are written to be vectorized; -O2 in GCC 12 only vectorizes loops whose
 * trip count is a known multiple of the vector width, so the kernel files ask for O3. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__)
#pragma GCC optimize("O3")
#endif

/* One row of a kernel table: op id -> kernel. RT_K(ADD, k_binary) names an op of the op table
 * (a misspelt op is a compile error); RT_K_OFF("relax.sort", k_sort) a kernel of an op the
 * table does not have yet, reachable only through a stand-in op def of that name (tests). */
typedef struct rt_kernel_entry {
    ir_op_id op;                  /* IR_OP_NONE: off the table, see name */
    const char *name;             /* off-table rows only */
    rt_kernel_fn fn;
} rt_kernel_entry;
#define RT_K(id, fn) {IR_OP_##id, NULL, fn}
#define RT_K_OFF(name, fn) {IR_OP_NONE, name, fn}

/* Each family file exports its rows; kernels.c merges them. */
#define RT_KERNEL_FAMILIES(X) \
    X(elemwise) X(gemm) X(conv) X(pool) X(norm) X(reduce) X(manip) X(create) X(resize) \
    X(sort) X(loss) X(einsum) X(attention) \
    X(rnn) X(conv3d) X(vision) X(signal) /* ONNX coverage */ X(index) /* ONNX coverage */
#define RT_DECLARE_FAMILY(f) \
    extern const rt_kernel_entry rt_kernels_##f[]; extern const size_t rt_kernels_##f##_count;
RT_KERNEL_FAMILIES(RT_DECLARE_FAMILY)
#undef RT_DECLARE_FAMILY
#define RT_FAMILY_COUNT(f, table) const size_t rt_kernels_##f##_count = sizeof(table) / sizeof(table[0])

/* ---- errors ---- */
/* Records an error prefixed with the op's text name and the layer (first loc of the span). */
gr_status rt_kerr(const rt_kernel_call *c, gr_diag *d, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "(1, 3, 224, 224) float32" into buf (returns buf). */
const char *rt_shape_str(const rt_tensor *t, char *buf, size_t n);
#define RT_SHAPE_STR(t) rt_shape_str((t), (char[96]){0}, 96)
const char *rt_dims_str(int ndim, const int64_t *dims, char *buf, size_t n);
#define RT_DIMS_STR(nd, d) rt_dims_str((nd), (d), (char[96]){0}, 96)

/* Hands O (owned) to *OUT as dtype DT, converted when its dtype differs (the kernels compute in
 * a wider type than some outputs); O is released on failure. */
gr_status rt_kout_as(const rt_kernel_call *c, rt_tensor *o, ir_dtype dt, rt_value *out, gr_diag *d);

/* ---- arguments ---- */
/* Checks nargs is in [lo, hi]. */
gr_status rt_check_nargs(const rt_kernel_call *c, uint32_t lo, uint32_t hi, gr_diag *d);
/* Argument i as a tensor, or an error naming the argument. */
gr_status rt_arg_tensor(const rt_kernel_call *c, uint32_t i, const rt_tensor **out, gr_diag *d);
/* A scalar from an INT/FLOAT value or a one-element tensor. */
bool rt_value_scalar(const rt_value *v, double *out);
/* Integers from a SHAPE, a TUPLE of INT, an INT, or a 0/1-d integer tensor; returns the count
 * (at most max), or -1 when v holds none of those. */
int rt_value_ints(const rt_value *v, int64_t *out, int max);

/* ---- attributes (absent keys fall back to TVM's defaults given by the caller) ---- */
/* Int array attr: copies up to max; an int attr counts as one value; -1 when absent/None. */
int rt_attr_ints(const ir_attrs *a, const char *key, int64_t *out, int max);
/* A dtype attr given as DTYPE or STR; absent, None, "" and "void" give dflt. */
ir_dtype rt_attr_dtype(const ir_attrs *a, const char *key, ir_dtype dflt);
/* String attr or dflt. */
const char *rt_attr_str(const ir_attrs *a, const char *key, const char *dflt);
/* True when the attr is absent or None. */
bool rt_attr_is_none(const ir_attrs *a, const char *key);

/* ---- tensors ---- */
/* A new tensor or GR_ERR_NOMEM / GR_ERR_INVALID naming the op. */
gr_status rt_out_new(const rt_kernel_call *c, DLDataType dt, int ndim, const int64_t *shape,
                     rt_tensor **out, gr_diag *d);
/* Same, with uninitialized data: for kernels that write every output element. */
gr_status rt_out_new_raw(const rt_kernel_call *c, DLDataType dt, int ndim, const int64_t *shape,
                         rt_tensor **out, gr_diag *d);
/* An owned tensor with uninitialized 64-byte aligned data; NULL on bad shape or OOM. */
rt_tensor *rt_tensor_new_raw(DLDataType dt, int ndim, const int64_t *shape);
size_t rt_dtype_size(DLDataType t);
static inline bool rt_dt_eq(DLDataType a, DLDataType b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
static inline bool rt_is_f32(DLDataType t) { return t.code == kDLFloat && t.bits == 32; }
static inline bool rt_is_floatish(DLDataType t) {
    return t.code == kDLFloat || t.code == kDLBfloat;
}
static inline bool rt_is_bool(DLDataType t) { return t.code == kDLUInt && t.bits == 1; }
/* A converted copy (new reference); same dtype gives a retained t. NULL on OOM. */
rt_tensor *rt_tensor_cast(const rt_tensor *t, DLDataType to);
/* A transposed copy: output dim i is input dim perm[i]. NULL on OOM. */
rt_tensor *rt_tensor_permute(const rt_tensor *t, const int *perm);
/* Permutation taking layout `have` to layout `want` (perm[i] = position of want[i] in have),
 * e.g. "NHWC" -> "NCHW" gives {0, 3, 1, 2}; false unless have is a reordering of want. */
bool rt_layout_perm(const char *have, const char *want, int *perm);
/* Normalizes a possibly negative axis; false when out of range. */
bool rt_norm_axis(int64_t *axis, int ndim);
static inline int64_t rt_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}
/* Contiguous row-major strides in elements. */
void rt_strides(int ndim, const int64_t *shape, int64_t *strides);

/* ---- broadcasting over up to RT_BCAST_MAX operands ---- */
#define RT_BCAST_MAX 4
typedef struct rt_bcast {
    int ndim;                                 /* after collapsing; >= 1 */
    int nops;                                 /* inputs */
    int64_t shape[RT_MAX_NDIM];
    int64_t strides[RT_BCAST_MAX][RT_MAX_NDIM]; /* element strides, 0 on broadcast dims */
} rt_bcast;
/* Numpy broadcast of the input shapes: fills out_shape/out_ndim and the iteration plan; false
 * when the shapes do not broadcast. */
bool rt_bcast_init(rt_bcast *b, int nin, const rt_tensor *const *ins, int64_t *out_shape,
                   int *out_ndim);
/* Calls fn once per innermost row: output offset (contiguous), input offsets, inner strides. */
typedef void (*rt_bcast_row_fn)(void *ctx, int64_t out_off, const int64_t *in_off,
                                const int64_t *in_stride, int64_t n);
void rt_bcast_run(const rt_bcast *b, rt_bcast_row_fn fn, void *ctx);

/* ---- scratch memory ---- */
/* 64-byte aligned scratch of at least `bytes`, reused across calls (large allocations would
 * otherwise be mmap'ed and unmapped on every kernel call). NULL when memory runs out. Pair
 * with rt_scratch_put. Thread-safe. */
void *rt_scratch_get(size_t bytes);
void rt_scratch_put(void *p);

/* ---- GEMM ---- */
/* C[M,N] = A[M,K] * B[K,N] (+ C when accumulate). Element (i,k) of A is A[i*rsa + k*csa],
 * element (k,j) of B is B[k*rsb + j*csb] (so transposes are free); C is row-major with ldc. */
void rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
              const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc, bool accumulate);

#endif
