/* Runtime modules: what a codegen produces and `external_mods` holds. A module exposes
 * destination-passing functions by symbol: fn(args..., outs...) with DLTensors. */
#ifndef GRAFT_RUNTIME_MODULE_H
#define GRAFT_RUNTIME_MODULE_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/object.h"
#include "base/status.h"

#define RT_MODULE_API_VERSION 1

typedef struct rt_module rt_module;

/* ---- Per-primitive profiling ----
 * A module whose engine runs a region as a list of primitives (oneDNN) can report each one
 * with its time; the layers above (inspection, `graft run --profile`) read these without
 * knowing the backend. */
typedef struct rt_prim_info {
    const char *kind;             /* "convolution", "binary", "reorder", ... */
    const char *impl;             /* the backend's implementation: "jit:avx2", "brgconv:avx512_core", "ref:any" */
    const char *ref_reason;       /* impl on a reference kernel: why no faster one was found; else NULL */
    uint32_t nlayers;             /* frontend layers (spans) of the nodes it computes */
    const char *const *layers;
} rt_prim_info;
typedef struct rt_prim_event {
    const char *region;           /* the region's symbol */
    uint32_t index;               /* primitive index in the region */
    const rt_prim_info *info;
    uint64_t ns;
    int threads;                  /* the team the primitive ran on */
} rt_prim_event;
typedef void (*rt_prim_profile_fn)(const rt_prim_event *ev, void *user);

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
    /* (optional) While fn is set, the module's calls run their primitives one at a time
     * (waiting for each) and report each to fn; fn NULL turns it off. Set it while no call
     * of the module runs. */
    void (*set_profiler)(rt_module *m, rt_prim_profile_fn fn, void *user);
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
/* obj as a runtime module, or NULL when it is something else. */
rt_module *rt_module_from_object(gr_object *obj);

/* Calls `symbol` (checks the api version); errors name the module and the symbol. */
gr_status rt_module_call(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin,
                         uint32_t nout, gr_diag *diag);

/* Sets (or clears, fn NULL) m's per-primitive profiler; false when m's kind has none. */
bool rt_module_set_profiler(rt_module *m, rt_prim_profile_fn fn, void *user);

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
/* rt_module_set_profiler on every module of m's external_mods; returns how many took it. */
uint32_t rt_module_set_profilers(const struct ir_module *m, rt_prim_profile_fn fn, void *user);

#endif
