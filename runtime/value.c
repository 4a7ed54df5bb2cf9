/* Runtime values: copy, clear, tuples. */
#include "runtime/value.h"

#include <stdlib.h>

#include "ir/ctx.h"

rt_value rt_value_tuple(uint32_t n) {
    rt_value v = {.kind = RT_VAL_TUPLE};
    v.u.tuple.n = n;
    v.u.tuple.items = n ? gr_xcalloc(n, sizeof(rt_value)) : NULL;
    return v;
}

rt_value rt_value_copy(const rt_value *v) {
    rt_value r = *v;
    switch ((rt_value_kind)v->kind) {
    case RT_VAL_TENSOR: rt_tensor_retain(v->u.t); break;
    case RT_VAL_OBJ: gr_object_retain(v->u.obj); break;
    case RT_VAL_TUPLE:
        r = rt_value_tuple(v->u.tuple.n);
        for (uint32_t i = 0; i < v->u.tuple.n; i++)
            r.u.tuple.items[i] = rt_value_copy(&v->u.tuple.items[i]);
        break;
    default: break;
    }
    return r;
}

void rt_value_clear(rt_value *v) {
    if (!v) return;
    switch ((rt_value_kind)v->kind) {
    case RT_VAL_TENSOR: rt_tensor_release(v->u.t); break;
    case RT_VAL_OBJ: gr_object_release(v->u.obj); break;
    case RT_VAL_TUPLE:
        for (uint32_t i = 0; i < v->u.tuple.n; i++) rt_value_clear(&v->u.tuple.items[i]);
        free(v->u.tuple.items);
        break;
    default: break;
    }
    v->kind = RT_VAL_NONE;
    v->u.t = NULL;
}
