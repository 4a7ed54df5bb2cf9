/* Refcounted objects that cross layers and outlive passes: tensor data of constants, runtime
 * modules. The header comes first in every such struct (tvm-ffi / DLPack style). */
#ifndef GRAFT_BASE_OBJECT_H
#define GRAFT_BASE_OBJECT_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct gr_object gr_object;
struct gr_object {
    /* starts at 1 for the creator; atomic: constants and modules are shared by concurrent runs */
    _Atomic int32_t refcount;
    const char *type;                  /* static type name, e.g. "rt.tensor" */
    void (*deleter)(gr_object *self);  /* frees the object when the count reaches 0 */
};

/* Adds a reference; returns obj (NULL passes through). */
gr_object *gr_object_retain(gr_object *obj);
/* Drops a reference, deleting at zero (NULL is fine). */
void gr_object_release(gr_object *obj);

#endif
