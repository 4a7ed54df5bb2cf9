/* graft's deployable model: one file (`graft build -o MODEL.graft`) loaded and run with no
 * compiler in the loop.
 *
 * The file is a protobuf message of our own (deploy/graft_artifact.proto): a format version, a
 * checksum of the body, and the body: the lowered main function as Relax text with its
 * constants, the fused host kernels as an ELF object file emitted by LLVM for the build host's
 * CPU, the memory plan (arena size and every planned buffer), the input and output signatures
 * and the span table (each host kernel / extern region -> its frontend layers).
 *
 * The weights are not in the body: they precede it in a constants section, each 64-byte
 * aligned, and graft_model_load maps the file (read-only, private) so that constants are read
 * in place; only what a backend lays out anew (oneDNN's blocked weights) is copied, and the
 * original pages are handed back once it has (deploy/artifact_impl.h has the layout).
 * Loading parses the text, re-derives the flat instruction list and checks it reproduces the
 * stored memory plan, and links the object file in-process with LLVM ORC's LLJIT (relocation and
 * symbol resolution only: no IR, no optimization, no code generation at load time).
 * External runtime modules (BYOC regions called through R.call_dps_packed) are stored as their
 * rt_module_i.serialize blobs with their kind, and their constants (const_name_to_constant) as
 * named tensors; the loader rebuilds them through a table of loaders by kind ("json": the JSON
 * runtime's reference engine) and attaches them to the module's external_mods.
 *
 *     graft_model *gm;
 *     gr_diag d;
 *     if (graft_model_load("model.graft", &gm, &d) != GR_OK) gr_diag_print(&d);
 *     rt_value out;
 *     graft_model_run(gm, inputs, graft_model_num_inputs(gm), &out, &d);
 *     rt_value_clear(&out);
 *     graft_model_free(gm);
 */
#ifndef GRAFT_DEPLOY_GRAFT_MODEL_H
#define GRAFT_DEPLOY_GRAFT_MODEL_H

#include "base/api.h"

#include <stddef.h>
#include <stdint.h>

#include "ir/expr.h"
#include "runtime/exec/executor.h"
#include "runtime/module.h"
#include "runtime/value.h"

/* 5: a header, a page-aligned constants section mapped at load, then the body (written last,
 * so that a build writes each prepacked weight once, at its place); a weight whose prepacked
 * form is a pure layout change is stored in that form only; the module in binary, read
 * without parsing text (4: the plain form beside every prepacked one; 3: the body before the
 * constants; 2: the module as text only; 1: one protobuf message with the weights inside; all
 * refused with "rebuild it"). */
#define GRAFT_MODEL_FORMAT_VERSION 5

typedef struct graft_model graft_model;

/* Builds the artifact of m's main (fused groups compiled by LLVM, other ops on the reference
 * kernels, R.call_dps_packed into m's external_mods) into a heap buffer the caller frees. */
GR_API gr_status graft_model_build(const ir_module *m, uint8_t **buf, size_t *len, gr_diag *diag);
/* Writes the artifact to `path` (graft_model_build + write). */
GR_API gr_status graft_model_build_file(const ir_module *m, const char *path, gr_diag *diag);

/* Loads an artifact from a file or a buffer (copied as needed). Errors (GR_ERR_INVALID unless
 * noted): not an artifact / truncated, wrong format version, checksum mismatch, bad module text
 * (GR_ERR_PARSE), memory plan mismatch, a malformed host object (backends/llvm/elf_check.h:
 * checked before LLVM links it), missing host kernel.
 * Trust: an artifact is code, like a shared library. The checksum catches damage, not malice,
 * and the checks make a damaged or hand-edited file an error instead of a crash; load only
 * artifacts from a source you would take a shared library from. */
GR_API gr_status graft_model_load(const char *path, graft_model **out, gr_diag *diag);
GR_API gr_status graft_model_load_buffer(const uint8_t *buf, size_t len, graft_model **out, gr_diag *diag);
/* The same with backend options (byoc/backend.h: e.g. dnnl.threads, dnnl.debug) for the
 * runtimes of the artifact's regions; NULL: the defaults. */
struct byoc_options;
GR_API gr_status graft_model_load_opts(const char *path, const struct byoc_options *opts, graft_model **out,
                                       gr_diag *diag);
GR_API gr_status graft_model_load_buffer_opts(const uint8_t *buf, size_t len, const struct byoc_options *opts,
                                              graft_model **out, gr_diag *diag);
GR_API void graft_model_free(graft_model *gm);

GR_API uint32_t graft_model_num_inputs(const graft_model *gm);
GR_API const char *graft_model_input_name(const graft_model *gm, uint32_t i);
GR_API const ir_sinfo *graft_model_input_sinfo(const graft_model *gm, uint32_t i);
/* The outputs as stored in the artifact: output_0, output_1, ... (the names `graft run
 * --output-dir` writes), one per field of a tuple result, else one. A symbolic dim is the same
 * ir_prim var as the input dim it follows (e.g. the batch). */
GR_API uint32_t graft_model_num_outputs(const graft_model *gm);
GR_API const char *graft_model_output_name(const graft_model *gm, uint32_t i);
GR_API const ir_sinfo *graft_model_output_sinfo(const graft_model *gm, uint32_t i);
/* Runs main: inputs borrowed, the result (tensor or tuple) owned by the caller.
 *
 * Thread safety: graft_model_run may be called from any number of threads at once on one
 * loaded model (like ONNX Runtime's Run on one session), each call with its own inputs, result
 * and diag. Each run has its own execution state (activations, the planned arena, run-time
 * slots), taken from a pool in the model and given back at the end, so N concurrent runs keep
 * N arenas alive until graft_model_free. The read-only parts are shared: host code, constants,
 * the instruction list and memory plan, and the external modules with their compiled
 * primitives. A JSON-runtime region runs fully in parallel (per-call buffers); a oneDNN region
 * executes its primitives under a lock of that region only, so two runs inside the same
 * region take turns while runs in other regions and in host code go on. Results are bit-for-bit
 * those of a single-threaded run (tests/artifact/test_concurrency.c, also under `make tsan`).
 * Not safe concurrently with a run: graft_model_set_profiler and graft_model_free. */
GR_API gr_status graft_model_run(graft_model *gm, const rt_value *inputs, uint32_t nin, rt_value *result,
                                 gr_diag *diag);
/* One event per instruction (runtime/exec/plan.h kinds); NULL turns profiling off. Set it while no
 * run is in flight; with runs on several threads, fn is called from each of them. */
GR_API void graft_model_set_profiler(graft_model *gm, rt_exec_profile_fn fn, void *user);
/* Per primitive inside the model's regions, for the backends that have primitives (oneDNN):
 * this model's only; NULL turns it off. Set it as graft_model_set_profiler. */
GR_API void graft_model_set_prim_profiler(graft_model *gm, rt_prim_profile_fn fn, void *user);
/* Per engine prepare of the model's regions (symbol, engine kind, time: what a first run, or a
 * first run at new shapes, pays): this model's only; NULL turns it off. Set it as
 * graft_model_set_profiler. */
GR_API void graft_model_set_prepare_observer(graft_model *gm,
                                             void (*fn)(const char *symbol, const char *engine, uint64_t ns, void *user),
                                             void *user);

/* Where loading goes, in order: map (open and map the file, or copy a caller's buffer),
 * verify (header, version, checksum: every byte read once, in place), decode (the body, the
 * module text, the instruction list and its check against the stored memory plan), modules
 * (the external modules, their constants pointing into the mapped file), link (the host
 * object, with LLVM's ORC linker), prepare (the backends build their primitives and lay out
 * their weights, or take the artifact's prepacked ones). */
enum {
    GRAFT_MODEL_PHASE_MAP,
    GRAFT_MODEL_PHASE_VERIFY,
    GRAFT_MODEL_PHASE_DECODE,
    GRAFT_MODEL_PHASE_MODULES,
    GRAFT_MODEL_PHASE_LINK,
    GRAFT_MODEL_PHASE_PREPARE,
    GRAFT_MODEL_NPHASES
};
/* "map", "verify", ...; NULL past the end. */
GR_API const char *graft_model_phase_name(uint32_t i);

typedef struct graft_model_info {
    size_t arena_bytes, intermediate_bytes, host_object_bytes;
    uint32_t nhost, nkernel, nextern, nfused_ops, nplanned;
    uint64_t load_ns;              /* the whole load: the sum of phase_ns */
    const char *host_cpu;
    uint64_t phase_ns[GRAFT_MODEL_NPHASES];
    uint64_t phase_cpu_ns[GRAFT_MODEL_NPHASES]; /* the process's CPU time in each (all its threads) */
    size_t file_bytes;             /* the artifact's size */
    size_t const_bytes;            /* the external modules' constants, read in place from the file */
    /* Prepacked weights (a backend's own layout of a constant, stored at build for the build
     * host's CPU and library): how many the artifact has, how many were used in place, and how
     * many weights were laid out again here because they were made for another CPU. */
    uint32_t npacked, npacked_used, nrepacked;
    /* Weights the artifact keeps only prepacked (their prepacked form is a pure layout change)
     * that were laid out plain again here from it, to be laid out for this CPU. */
    uint32_t nunpacked;
} graft_model_info;
GR_API void graft_model_get_info(const graft_model *gm, graft_model_info *out);
/* The span table: region i's name, kind and layers ("a,b,c"; static storage of gm). */
GR_API uint32_t graft_model_num_regions(const graft_model *gm);
GR_API void graft_model_region(const graft_model *gm, uint32_t i, const char **name, const char **kind,
                               const char **layers);
/* External module i (a BYOC module of external_mods): its name and the engine it was loaded
 * on ("json": the JSON runtime's reference kernels, "dnnl_json": oneDNN). */
GR_API uint32_t graft_model_num_externals(const graft_model *gm);
GR_API void graft_model_external(const graft_model *gm, uint32_t i, const char **name, const char **engine);

#endif
