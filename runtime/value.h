/* Runtime values passed to kernels and between executor slots: tensors, shapes, scalars,
 * strings and tuples of them. A value owns the references it holds (rt_value_clear drops
 * them). */
#ifndef GRAFT_RUNTIME_VALUE_H
#define GRAFT_RUNTIME_VALUE_H

#include "base/api.h"

#include <stdint.h>

#include "base/tensor.h"

typedef enum rt_value_kind {
    RT_VAL_NONE,
    RT_VAL_TENSOR,  /* u.t (one reference) */
    RT_VAL_SHAPE,   /* u.shape */
    RT_VAL_INT,     /* u.i */
    RT_VAL_FLOAT,   /* u.f */
    RT_VAL_STR,     /* u.s (borrowed; lives in the IR context) */
    RT_VAL_TUPLE,   /* u.tuple.items: heap array of n values, owned */
    RT_VAL_OBJ,     /* u.obj (one reference): e.g. a function closure */
} rt_value_kind;

typedef struct rt_value rt_value;
struct rt_value {
    uint8_t kind;
    union {
        rt_tensor *t;
        struct { int32_t ndim; int64_t dims[RT_MAX_NDIM]; } shape;
        int64_t i;
        double f;
        const char *s;
        struct { uint32_t n; rt_value *items; } tuple;
        gr_object *obj;
    } u;
};

static inline rt_value rt_value_tensor(rt_tensor *t) {  /* takes the reference */
    rt_value v = {.kind = RT_VAL_TENSOR, .u.t = t};
    return v;
}
/* A copy with new references (deep for tuples). */
GR_API rt_value rt_value_copy(const rt_value *v);
GR_API void rt_value_clear(rt_value *v);
/* A tuple of n NONE values (heap). */
GR_API rt_value rt_value_tuple(uint32_t n);

#endif
