/* Runtime modules: what a codegen produces and `external_mods` holds. A module exposes
 * destination-passing functions by symbol: fn(args..., outs...) with DLTensors. */
#ifndef GRAFT_RUNTIME_MODULE_H
#define GRAFT_RUNTIME_MODULE_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/object.h"
#include "ir/status.h"

#define RT_MODULE_API_VERSION 1

typedef struct rt_module rt_module;

typedef struct rt_module_i {
    int api_version;                 /* RT_MODULE_API_VERSION */
    const char *kind;                /* "json", "dnnl", ... */
    /* Runs `symbol` with nin inputs then nout outputs (caller-allocated). */
    gr_status (*call)(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin,
                      uint32_t nout, gr_diag *diag);
    /* True when the module defines `symbol`. */
    int (*has_function)(rt_module *m, const char *symbol);
    /* (optional) Serializes to a heap buffer the caller frees. */
    gr_status (*serialize)(rt_module *m, uint8_t **buf, size_t *len, gr_diag *diag);
    /* Frees the module's context (called by the deleter). */
    void (*destroy)(rt_module *m);
} rt_module_i;

struct rt_module {
    gr_object obj;                   /* type "rt.module" */
    const rt_module_i *iface;
    void *context;
    const char *name;                /* heap copy, freed with the module */
};

/* A new module (refcount 1) over iface/context; pair with rt_module_release(). */
rt_module *rt_module_new(const rt_module_i *iface, void *context, const char *name);
void rt_module_release(rt_module *m);

#endif
