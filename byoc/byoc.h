/* BYOC as an IRModule -> IRModule transformation (seed 004, research/tvm_relax_byoc.md §2-§4).
 *
 *   FuseOpsByPattern   each pattern match in a dataflow block -> a private composite function
 *                      {Primitive: 1, Composite: "<backend>.<pattern>"} and a call to it;
 *   MergeCompositeFunctions   composites of one backend -> regions {Codegen, global_symbol},
 *                      never creating a cycle;
 *   RunCodegen         calls of regions -> R.call_dps_packed(R.ExternFunc(sym), args, out_sinfo),
 *                      runtime modules appended to `external_mods`, constants named in
 *                      `const_name_to_constant`. The new call carries the SequentialSpan of the
 *                      frontend layers inside the region (output marks of layers whose outputs
 *                      leave the region).
 *
 * Every function of the module is processed (entry functions: every function without
 * Primitive / Composite / Codegen, or the names given). Spans are kept everywhere.
 *
 *     byoc_partition_opts o = {0};
 *     ir_module *out;
 *     if (byoc_partition_for_backends(ctx, m, (const char *[]){"json"}, 1, &out, &diag) == GR_OK)
 *         ... out has call_dps_packed into external_mods ...
 */
#ifndef GRAFT_BYOC_BYOC_H
#define GRAFT_BYOC_BYOC_H

#include "base/api.h"

#include <stdio.h>

#include "base/vec.h"
#include "byoc/backend.h"
#include "ir/expr.h"
#include "patterns/match.h"
#include "runtime/module.h"

/* ---- Backends ----
 * The contract a backend fills in and its options: byoc/backend.h. The registry
 * (byoc/registry.c) starts with the built-in backends, json and dnnl; a program may register
 * more at start-up. Registering a name twice replaces the old entry. */
/* The built-in backends, NULL-terminated: defined by backends/builtin.c, the one file above
 * every backend folder (this layer cannot include them). */
extern const byoc_backend *const byoc_builtin_backends[];
void byoc_backend_register(const byoc_backend *b);
const byoc_backend *byoc_backend_find(const char *name);
/* The backend whose loader reads module blobs of this kind ("dnnl_json"), NULL when none. */
const byoc_backend *byoc_backend_for_kind(const char *kind);
uint32_t byoc_backend_count(void);
const byoc_backend *byoc_backend_at(uint32_t i);

/* ---- Passes ---- */

typedef struct byoc_fuse_opts {
    bool bind_constants;           /* true: constants stay inside composites (TVM default) */
    bool annotate_codegen;         /* wrap each composite in a Codegen function */
    uint32_t nentry;               /* entry functions (0: every non-composite function) */
    const char *const *entry;
} byoc_fuse_opts;

/* Why one backend's patterns did not take a binding (a chain per binding var, one entry per
 * backend): its check rejected the match, the match would have closed a cycle, or a pattern of
 * another backend ahead of it in priority had claimed the binding first. A backend with no
 * entry had no pattern that matched there. */
typedef struct byoc_why_not {
    struct byoc_why_not *next;
    const char *backend;           /* interned */
    const char *why;               /* interned */
} byoc_why_not;

/* An op binding FuseOpsByPattern saw and the composite pattern that took it (NULL: none). */
typedef struct byoc_layer_note {
    const ir_var *var;
    const char *op;
    const char *layer;             /* its frontend layer, NULL when unknown */
    const char *taken;
} byoc_layer_note;

/* Per-binding notes the partition report reads (why an op stayed on the host; for a partition
 * over several backends, which took each op and why each other did not). Keyed by the binding
 * var (GR_MAP_PTR). May be NULL everywhere. */
typedef struct byoc_notes {
    gr_map reason;                 /* var -> const char *: the first note */
    gr_map why_not;                /* var -> byoc_why_not * (heap, freed by byoc_notes_free) */
    GR_VEC(byoc_layer_note) layers;  /* the op bindings of the fused blocks, in block order */
} byoc_notes;
void byoc_notes_init(byoc_notes *n);
void byoc_notes_free(byoc_notes *n);

gr_status byoc_fuse_ops_by_pattern(ir_ctx_t *ctx, const ir_module *m, const byoc_pattern *pats,
                                   uint32_t npats, const byoc_fuse_opts *opts, byoc_notes *notes,
                                   ir_module **out, gr_diag *diag);
gr_status byoc_merge_composite_functions(ir_ctx_t *ctx, const ir_module *m, byoc_notes *notes,
                                         ir_module **out, gr_diag *diag);
/* options: the backends' option values, handed to each codegen; NULL: the defaults. */
gr_status byoc_run_codegen(ir_ctx_t *ctx, const ir_module *m, const byoc_options *options,
                           ir_module **out, gr_diag *diag);
/* Same; release_consts, defer_prepare: see byoc_partition_opts. */
gr_status byoc_run_codegen_ex(ir_ctx_t *ctx, const ir_module *m, const byoc_options *options, bool release_consts,
                              bool defer_prepare, ir_module **out, gr_diag *diag);
/* Module attribute of a partition made with release_consts: the bytes of region constants the
 * context handed to the runtime modules (the module has no const_name_to_constant for them). */
#define BYOC_ATTR_CONSTS_RELEASED "graft.consts_released"

struct pat_table;
/* The patterns of a pattern file (patterns/pattern_text.h) as byoc patterns: each entry's
 * "only_used_by" predicates and the backend C checks it names (["check", "dnnl.nn.conv2d"]:
 * the check of that pattern of a registered backend) become its check. *out: heap array of
 * table->n, free(); GR_ERR_NOT_FOUND for a check name no backend has. options: as for
 * byoc_partition (they shape the backends' tables, e.g. dnnl.disable). */
gr_status byoc_patterns_from_table(ir_ctx_t *ctx, const struct pat_table *table, const byoc_options *options,
                                   byoc_pattern **out, gr_diag *diag);

/* ---- Driver ---- */

typedef enum byoc_stage { BYOC_STOP_FUSE = 1, BYOC_STOP_MERGE = 2, BYOC_STOP_CODEGEN = 3 } byoc_stage;

typedef struct byoc_partition_opts {
    byoc_stage stop_after;         /* 0: codegen */
    const byoc_pattern *extra;     /* patterns ahead of the backends' (e.g. a --patterns file) */
    uint32_t nextra;
    byoc_notes *notes;             /* optional */
    const byoc_options *options;   /* the backends' options (byoc/backend.h); NULL: defaults */
    const byoc_fuse_opts *fuse;    /* NULL: TVM's defaults (bind constants, no annotation, every
                                      function an entry). With annotate_codegen the merge stage
                                      is skipped: the Codegen wrappers go to RunCodegen as they
                                      are, as in TVM's FuseOpsByPattern(annotate_codegen=True)
                                      -> RunCodegen pipeline. */
    /* Hand the compiled regions' constants over to their runtime modules: the IR context drops
     * its references to those no function of the output module uses, so each is freed as soon
     * as the runtime no longer reads it (the oneDNN engine keeps its own reordered copies and
     * lets the originals go while it builds, runtime/json/json_runtime.h "Constant ownership"), and
     * the weights are not held twice. The contract: afterwards the data of those constants
     * must not be read through the IR -- the input module m and every module before it refer
     * to them, and the output module has no const_name_to_constant for them (it carries
     * BYOC_ATTR_CONSTS_RELEASED; graft_model_build refuses it). For a process that partitions
     * to run (graft run, benchmarks), not for one that also builds an artifact from it. If the
     * partition fails, the constants handed over may be gone too: do not fall back to running
     * the input module then. */
    bool release_consts;
    /* The runtime modules are not prepared here (oneDNN: primitives and reordered weights) but
     * by their first call, or by an artifact build that writes each reordered weight as it is
     * made (graft_model_build_file): for a process that only builds. */
    bool defer_prepare;
    /* after the run: the module after each stage (NULL when not reached) */
    ir_module *after_fuse, *after_merge;
} byoc_partition_opts;

/* Fuse + Merge + RunCodegen for the named backends (patterns in the order given). Unknown
 * backend: GR_ERR_NOT_FOUND listing the known ones. */
GR_API gr_status byoc_partition(ir_ctx_t *ctx, const ir_module *m, const char *const *names, uint32_t n,
                                byoc_partition_opts *opts, ir_module **out, gr_diag *diag);
/* Shorthand used by `graft run --backend NAME`. */
gr_status byoc_partition_for_backends(ir_ctx_t *ctx, const ir_module *m, const char *const *names,
                                      uint32_t n, ir_module **out, gr_diag *diag);

/* ---- Partition report ---- */

struct json_t;
/* The report of a partition (graft partition --report): {"regions": [...], "host": [...],
 * "coverage": {...}} built from `part` (the module after merge, or after fuse when the run
 * stopped there), the enabled backend names and the notes the passes left. A new reference. */
struct json_t *byoc_report_json(ir_ctx_t *ctx, const ir_module *part, const char *const *names,
                                uint32_t n, const byoc_notes *notes);
/* The same report as text. */
void byoc_report_print(const struct json_t *report, FILE *out);
/* FLOPs of one op call from its struct info (conv / matmul: 2 * MACs, others: output numel);
 * -1 when the shapes are not static. */
double byoc_call_flops(const ir_call *call);

/* FuseOpsByPattern names: "fused_relax_nn_conv2d_relax_nn_relu"; the attributes regions carry
 * are in byoc/backend.h. */

#endif
