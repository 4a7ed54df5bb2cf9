/* Refcounted object header. */
#include "base/object.h"

#include <stddef.h>

gr_object *gr_object_retain(gr_object *obj) {
    if (obj) atomic_fetch_add_explicit(&obj->refcount, 1, memory_order_relaxed);
    return obj;
}

void gr_object_release(gr_object *obj) {
    if (obj && atomic_fetch_sub_explicit(&obj->refcount, 1, memory_order_acq_rel) == 1 &&
        obj->deleter)
        obj->deleter(obj);
}
