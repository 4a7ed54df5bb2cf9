/* Refcounted object header. */
#include "ir/object.h"

#include <stddef.h>

gr_object *gr_object_retain(gr_object *obj) {
    if (obj) obj->refcount++;
    return obj;
}

void gr_object_release(gr_object *obj) {
    if (obj && --obj->refcount == 0 && obj->deleter) obj->deleter(obj);
}
