/* Runtime modules: what a codegen produces and `external_mods` holds. A module exposes
 * destination-passing functions by symbol: fn(args..., outs...) with DLTensors. */
#ifndef GRAFT_RUNTIME_MODULE_H
#define GRAFT_RUNTIME_MODULE_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "base/object.h"
#include "base/status.h"

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
rt_module *rt_module_retain(rt_module *m);
/* obj as a runtime module, or NULL when it is something else. */
rt_module *rt_module_from_object(gr_object *obj);

/* Calls `symbol` (checks the api version); errors name the module and the symbol. */
gr_status rt_module_call(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin,
                         uint32_t nout, gr_diag *diag);

/* ---- The `external_mods` module attribute: an IR_ATTR_ARRAY of IR_ATTR_OBJ rt_modules. ---- */
struct ir_module;
/* Number of runtime modules in m's external_mods (0 when absent). */
uint32_t rt_module_count(const struct ir_module *m);
/* Runtime module i of external_mods (borrowed), or NULL when out of range / not a module. */
rt_module *rt_module_at(const struct ir_module *m, uint32_t i);
/* The first module of external_mods that defines `symbol` (borrowed), or NULL. */
rt_module *rt_module_find_function(const struct ir_module *m, const char *symbol);
/* Appends mod to m's external_mods (kept modules stay first, as TVM's RunCodegen does). The
 * module's context takes its own reference; the caller keeps its one. */
void rt_module_attach(struct ir_module *m, rt_module *mod);

#endif
