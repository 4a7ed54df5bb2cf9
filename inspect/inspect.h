/* Inspecting a partition (graft diff, graft trace --backend, graft explore): where each
 * frontend layer went, what computed it, and how far its output is from another path's.
 *
 * A layer is a source name that a binding's span marks as producing that layer's output
 * (seed 002); model order is the order of those bindings in the input module. The model
 * document (insp_model_json) lists, per layer: its op, its inputs (other layers), its IR before
 * and after partitioning, its weights (the constants it reads: initializer name, type), and its
 * placement: a region (symbol, backend, composite) or the host with the reason it stayed there
 * and any near miss from the partition report. A layer whose mark only rides on another layer's
 * binding (an Identity of a weight, a batch norm folded into its convolution) has
 * "folded_into": that layer's index, which lists it in its "folds".
 *
 * Observation runs the partitioned module with debug taps: the executor's for host ops, each
 * engine's for region intermediates (rt_json_graph_set_tap): the JSON reference engine reports
 * every node output, the oneDNN engine every value a primitive wrote, and the outputs folded
 * into a primitive's post-ops as unobservable.
 *
 *     insp_model *im;
 *     insp_model_build(ctx, m, (const char *[]){"dnnl"}, 1, NULL, &im, &diag);
 *     json_t *doc = insp_model_json(im);               // borrowed
 *     json_t *diff;
 *     insp_diff_opts o = {.rtol = 1e-3, .atol_scale = 1e-5};
 *     insp_diff(im, &o, inputs, nin, &diff, &diag);    // new reference
 *     insp_model_free(im);
 */
#ifndef GRAFT_INSPECT_INSPECT_H
#define GRAFT_INSPECT_INSPECT_H

#include <jansson.h>
#include <stdbool.h>

#include "base/tensor.h"
#include "byoc/byoc.h"
#include "runtime/value.h"

typedef struct insp_model insp_model;

/* Partitions m (its "main") for the backends and indexes its layers. m and ctx must outlive
 * the model. */
gr_status insp_model_build(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t nbackends,
                           const byoc_options *options, insp_model **out, gr_diag *diag);
/* options (NULL: defaults) are borrowed until insp_model_free. */
void insp_model_free(insp_model *im);
/* {"backends": [...], "layers": [{"name", "order", "op", "var", "type", "inputs": [order...],
 *  "place": "host"|"region", "region", "backend", "composite", "reason", "near_miss",
 *  "before", "after"}...], "regions": [...], "host": [...], "coverage": {...}} (the last three
 * from the partition report). Borrowed. */
json_t *insp_model_json(insp_model *im);
/* Index of a layer by name, -1 when the model has no such layer. */
int insp_model_find(const insp_model *im, const char *layer);

/* A test's perturbation: called with each observed output of the backend path; may change the
 * tensor's data in place and return true (the run goes on with the changed value). */
typedef bool (*insp_perturb_fn)(const char *layer, rt_tensor *value, void *user);

/* Runs the partitioned module once on `inputs` with taps and adds to each layer of the model
 * document what computed it: "where" (host / region symbol), "node_op", "prim" (index),
 * "prim_kind", "prim_impl", or "unobservable" (what it was folded into); with profile, "ms"
 * (the host op's time, or its region's: "time_of": "region"), and for oneDNN regions the
 * document's "primitives" ({region, index, kind, impl, ms, layers}, one timed run; the
 * engine's per-primitive profile) with each layer's "prims" (indices into it). */
gr_status insp_observe(insp_model *im, const rt_value *inputs, uint32_t nin, bool profile, gr_diag *diag);

/* One layer's reference value from outside graft (ONNX Runtime's intermediate tensors,
 * scripts/ort_dump.py), by layer name. */
typedef struct insp_layer_value {
    const char *layer;
    const rt_tensor *value;       /* borrowed */
} insp_layer_value;

typedef struct insp_diff_opts {
    /* a value is out of tolerance (base/compare.h; a NaN always is) when |a - b| > atol +
     * atol_scale * max|B| + rtol * |b|, b from the against-path, max|B| the largest magnitude
     * of that layer's output */
    double rtol, atol, atol_scale;
    const char *against;          /* NULL or "reference": the input module on the host; else a backend */
    insp_perturb_fn perturb;      /* NULL: none */
    void *perturb_user;
    const ir_module *against_module; /* NULL: the input module; else another model run instead
                                     (on the host, or partitioned for `against`), its layers
                                     matched by name: the float32 model a quantized one was made
                                     from (same ctx, same inputs) */
    const insp_layer_value *against_values; /* nagainst_values > 0: no against-path runs; these
                                     are the reference (a layer without one is "not computed") */
    uint32_t nagainst_values;
    /* NULL or a QDQ model's quantization parameters by layer (onnx_model_qparams' document):
     * a layer with a per-tensor scale (its own, a Q/DQ layer's, else its output's) compares an
     * 8-bit integer output of either path as its value, (q - zero_point) * scale, and a float
     * value with levels as those levels; gives its error also in steps ("step", "max_steps");
     * and adds atol_steps steps to its atol */
    const json_t *qparams;
    double atol_steps;
} insp_diff_opts;

/* Runs the against-path and the partitioned module on the same inputs and compares every
 * layer's output. *out: {"against", "rtol", "atol", "layers": [{"name", "order", "status":
 * "ok"|"diverges"|"unobservable"|"missing"|"mismatch", "max_abs", "max_rel", "bad", "numel",
 * "where", "composite", "prim_kind", "prim_impl", "unobservable", ...}...] (model order),
 * "first_divergence": the first layer out of tolerance or null, "summary": {...}}. Also sets
 * each model layer's "diff" (status, max_abs, max_rel, bad). */
gr_status insp_diff(insp_model *im, const insp_diff_opts *o, const rt_value *inputs, uint32_t nin, json_t **out,
                    gr_diag *diag);

#endif
