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

#include "ir/expr.h"
#include "patterns/match.h"
#include "runtime/module.h"

/* ---- Backends ---- */

/* One pattern of a backend table: name "<backend>.<pattern>", root pattern, optional check. */
typedef struct byoc_pattern {
    const char *name;
    const pat_t *pattern;
    pat_check_fn check;          /* NULL: accept every match */
    void *check_user;
} byoc_pattern;

/* A region handed to a codegen: the region function (Codegen attr, global_symbol) and the
 * names of the constants it holds, in order of appearance (`<symbol>_const_<i>`). */
typedef struct byoc_region {
    const char *symbol;
    const ir_func *func;
    uint32_t nconsts;
    const char *const *const_names;
    const ir_const *const *consts;
} byoc_region;

/* A code generator: compiles regions into one runtime module (a new reference). options may be
 * NULL. The module must define every region's symbol and be ready to run (constants bound). */
typedef gr_status (*byoc_compile_fn)(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n,
                                     const ir_attrs *options, rt_module **out, gr_diag *diag);
/* Rebuilds a module from byoc's serialize output; consts resolves constant names (may be NULL
 * when the module has none). */
typedef gr_status (*byoc_load_fn)(const uint8_t *buf, size_t len,
                                  struct rt_tensor *(*consts)(const char *name, void *user),
                                  void *user, rt_module **out, gr_diag *diag);

typedef struct byoc_backend {
    const char *name;              /* "json", "dnnl": also the Codegen attr */
    const char *description;       /* one line for `graft backends` */
    /* Ordered pattern table (earlier wins). Built on first use in `ctx` by get_patterns. */
    gr_status (*get_patterns)(ir_ctx_t *ctx, const byoc_pattern **out, uint32_t *n,
                              gr_diag *diag);
    byoc_compile_fn compile;
    byoc_load_fn load;
    const char *runtime_kind;      /* rt_module_i.kind of its modules */
} byoc_backend;

/* Registry (process-global; register at start-up). The built-in "json" backend is always
 * there. Registering a name twice replaces the old entry. */
void byoc_backend_register(const byoc_backend *b);
const byoc_backend *byoc_backend_find(const char *name);
uint32_t byoc_backend_count(void);
const byoc_backend *byoc_backend_at(uint32_t i);

/* The json backend: every op of the op table that has a reference kernel, one pattern per op
 * ("json.nn.conv2d"), checked for static shapes and tensor operands. */
extern const byoc_backend byoc_json_backend;

/* ---- Passes ---- */

typedef struct byoc_fuse_opts {
    bool bind_constants;           /* true: constants stay inside composites (TVM default) */
    bool annotate_codegen;         /* wrap each composite in a Codegen function */
    uint32_t nentry;               /* entry functions (0: every non-composite function) */
    const char *const *entry;
} byoc_fuse_opts;

/* Per-binding notes the partition report reads (why an op stayed on the host). Keyed by the
 * binding var (GR_MAP_PTR) -> interned reason string. May be NULL everywhere. */
typedef struct byoc_notes {
    gr_map reason;                 /* var -> const char * */
} byoc_notes;
void byoc_notes_init(byoc_notes *n);
void byoc_notes_free(byoc_notes *n);

gr_status byoc_fuse_ops_by_pattern(ir_ctx_t *ctx, const ir_module *m, const byoc_pattern *pats,
                                   uint32_t npats, const byoc_fuse_opts *opts, byoc_notes *notes,
                                   ir_module **out, gr_diag *diag);
gr_status byoc_merge_composite_functions(ir_ctx_t *ctx, const ir_module *m, byoc_notes *notes,
                                         ir_module **out, gr_diag *diag);
/* options: per-backend option attrs (an IR_ATTR_MAP keyed by backend name), may be NULL. */
gr_status byoc_run_codegen(ir_ctx_t *ctx, const ir_module *m, const ir_attrs *options,
                           ir_module **out, gr_diag *diag);

struct pat_table;
/* The patterns of a pattern file (patterns/pattern_text.h) as byoc patterns: each entry's
 * "only_used_by" predicates and the backend C checks it names (["check", "dnnl.nn.conv2d"]:
 * the check of that pattern of a registered backend) become its check. *out: heap array of
 * table->n, free(); GR_ERR_NOT_FOUND for a check name no backend has. */
gr_status byoc_patterns_from_table(ir_ctx_t *ctx, const struct pat_table *table, byoc_pattern **out,
                                   gr_diag *diag);

/* ---- Driver ---- */

typedef enum byoc_stage { BYOC_STOP_FUSE = 1, BYOC_STOP_MERGE = 2, BYOC_STOP_CODEGEN = 3 } byoc_stage;

typedef struct byoc_partition_opts {
    byoc_stage stop_after;         /* 0: codegen */
    const byoc_pattern *extra;     /* patterns ahead of the backends' (e.g. a --patterns file) */
    uint32_t nextra;
    byoc_notes *notes;             /* optional */
    const byoc_fuse_opts *fuse;    /* NULL: TVM's defaults (bind constants, no annotation, every
                                      function an entry). With annotate_codegen the merge stage
                                      is skipped: the Codegen wrappers go to RunCodegen as they
                                      are, as in TVM's FuseOpsByPattern(annotate_codegen=True)
                                      -> RunCodegen pipeline. */
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

/* FuseOpsByPattern names: "fused_relax_nn_conv2d_relax_nn_relu". */
#define BYOC_ATTR_COMPOSITE "Composite"
#define BYOC_ATTR_CODEGEN "Codegen"
#define BYOC_ATTR_PRIMITIVE "Primitive"
#define BYOC_ATTR_GLOBAL_SYMBOL "global_symbol"

#endif
