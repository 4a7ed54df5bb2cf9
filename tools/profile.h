/* graft run --profile / --profile-json: aggregates the executor's events (reference ops, host
 * kernels, extern regions) and, inside oneDNN regions, each primitive's (rt_module_set_profiler)
 * into a text table and a Chrome trace. Used by graft run on models and on .graft artifacts. */
#ifndef GRAFT_TOOLS_PROFILE_H
#define GRAFT_TOOLS_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "deploy/graft_model.h"
#include "runtime/exec/executor.h"

typedef struct prof_row {
    const char *kind, *name, *layers;
    uint64_t ns;
    uint32_t count;
    GR_VEC(uint64_t) per_run;      /* ns per profiled run this row appeared in */
    uint32_t last_run;
    /* a oneDNN primitive (kind "prim"): name is its region, index its place in it */
    uint32_t index;
    const char *pkind, *impl;
} prof_row;

typedef struct prof_state {
    const graft_model *gm;        /* for the layers of regions (NULL: from the events' spans) */
    GR_VEC(prof_row) rows;
    GR_VEC(prof_row) prims;
    FILE *trace;
    bool first;
    double origin_us;
    uint32_t run;
    uint64_t pending_prep;        /* region prepare time inside the extern call in progress */
    GR_VEC(char *) names;         /* copies of the prep rows' names (regions may go) */
} prof_state;

void prof_init(prof_state *ps, const graft_model *gm);
/* Opens the Chrome trace (false: cannot open, message printed). */
bool prof_open_trace(prof_state *ps, const char *json);
/* rt_exec_profile_fn */
void prof_on_event(const rt_exec_event *ev, void *user);
/* rt_prim_profile_fn: one row per primitive of a region (set it on the model's modules) */
void prof_on_prim(const rt_prim_event *ev, void *user);
/* rt_json_prepare_fn (set it on the model's modules): "prep" rows time a BYOC region's engine
 * prepare (oneDNN primitives created for a new set of input shapes), taken out of the region's
 * "extern" row ("plan" rows, the executor's memory plan for new input shapes, come as events). */
void prof_on_prepare(const char *symbol, const char *engine, uint64_t ns, void *user);
void prof_print(prof_state *ps, uint32_t runs);
/* Closes the trace and frees; false when the trace could not be written. */
bool prof_finish(prof_state *ps);

#endif
