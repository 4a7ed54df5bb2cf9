/* The toolkit's compile-side calls for language bindings (the Python package, python/graft):
 * what the CLI's commands do (graft backends, opt, partition --report json, diff, explore)
 * over the public types, with structured results as JSON text, so a binding needs no struct
 * of the internal layers.
 *
 * Every char * result is a heap string the caller frees with free(). Functions taking a ctx
 * build their output modules in it (ctx must outlive them). Errors fill the gr_diag as
 * everywhere (message, file, layer, op).
 *
 *     char *report;
 *     ir_module *part;
 *     if (graft_module_partition(ctx, m, (const char *[]){"dnnl"}, 1, NULL, NULL, &part, &report,
 *                                &d) == GR_OK) { puts(report); free(report); }
 */
#ifndef GRAFT_DEPLOY_TOOLKIT_H
#define GRAFT_DEPLOY_TOOLKIT_H

#include "base/api.h"

#include <stdbool.h>
#include <stdint.h>

#include "byoc/backend.h"
#include "deploy/graft_model.h"
#include "ir/expr.h"
#include "runtime/value.h"

/* [{"name", "description", "runtime_kind", "options": [{"name", "type": "bool"|"int"|"string",
 *   "default", "help", "choices"}], "patterns": ["dnnl.conv2d_bias_relu", ...], "version",
 *   "path"}] (priority order; version and path: a backend plugin's, absent for a built-in one),
 * one entry per registered backend. NULL when a backend's pattern table fails. */
GR_API char *graft_backends_json(void);

/* The frontend layers the spans of m's functions name, in binding order, each once: a JSON
 * array of strings. */
GR_API char *graft_module_layers_json(const ir_module *m);

/* The signature of m's "main" (NULL when m has none) or of a loaded model:
 * {"inputs": [{"name", "shape": [1, "n", ...], "dtype"}], "outputs": [{"name", "shape",
 * "dtype"}]}. A symbolic dim is its expression as text, an unknown one null; an output that
 * is a tuple gives one entry per field ("output_<i>", as the artifact names them). */
GR_API char *graft_module_signature_json(const ir_module *m);
GR_API char *graft_model_signature_json(const graft_model *gm);
/* The plan's summary: {"arena_bytes", "intermediate_bytes", "host_object_bytes", "host_kernels",
 * "kernels", "externs", "fused_ops", "planned", "load_ms", "host_cpu", "external_modules":
 * [[name, engine], ...]} (graft_session_info_json). */
char *graft_model_info_json(const graft_model *gm);

/* Runs passes over m: passes NULL, the default pipeline; else a comma-separated list of
 * registered pass names ("Normalize,DeadCodeElimination"), unknown names GR_ERR_NOT_FOUND
 * listing the known ones. opt_level < 0: the pass context's default. The output is built in
 * m's context. */
GR_API gr_status graft_module_optimize(const ir_module *m, const char *passes, int opt_level, ir_module **out,
                                       gr_diag *diag);

/* byoc_partition for the named backends (graft partition): patterns, when not NULL, is a
 * pattern file (text format) whose patterns go ahead of the backends'; options NULL: the
 * defaults. *out: the partitioned module (RunCodegen done, constants kept, so it can be built
 * into an artifact); *report (may be NULL): the partition report as JSON (graft partition
 * --report json: regions, host ops and why, coverage). */
GR_API gr_status graft_module_partition(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t n,
                                        const char *patterns, const byoc_options *options, ir_module **out,
                                        char **report, gr_diag *diag);

/* A test's fault injection for graft_module_inspect: called with each observed output of the
 * backend path; may change the tensor's data in place and return true. */
typedef bool (*graft_perturb_fn)(const char *layer, rt_tensor *value, void *user);

typedef struct graft_inspect_opts {
    bool observe;                 /* run once with taps: what computed each layer */
    bool profile;                 /* ... and time it (per host op, per oneDNN primitive) */
    bool diff;                    /* compare every layer's output with the against-path */
    /* out of tolerance: |a - b| > atol + atol_scale * max|B| + rtol * |b| (graft diff) */
    double rtol, atol, atol_scale;
    const char *against;          /* NULL or "reference": m on the host; else a backend */
    graft_perturb_fn perturb;     /* NULL: none */
    void *perturb_user;
    /* nrefs > 0: no against-path runs; layer ref_layers[i]'s reference is refs[i] (borrowed:
     * ONNX Runtime's intermediate tensors, graft diff --against-dumps) */
    const char *const *ref_layers;
    rt_tensor *const *refs;
    uint32_t nrefs;
    /* NULL or the QDQ ONNX model m was imported from: its layers' scales give their steps
     * (insp_diff_opts.qparams), atol_steps of them added to each one's atol */
    const char *qparams_onnx;
    double atol_steps;
} graft_inspect_opts;

/* graft diff / graft explore: partitions m's main for the backends and, as o asks, observes
 * and diffs it on `inputs` (main's params, in order). *diff (when o->diff; may be NULL): the
 * per-layer rows {"against", "rtol", "atol", "layers": [...], "first_divergence", "summary"};
 * *doc (may be NULL): the explorer's model document (layers, regions, host ops, primitives). */
GR_API gr_status graft_module_inspect(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t n,
                                      const byoc_options *options, const graft_inspect_opts *o,
                                      const rt_value *inputs, uint32_t nin, char **diff, char **doc,
                                      gr_diag *diag);

#endif
