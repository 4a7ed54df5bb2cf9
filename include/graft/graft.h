/* graft's public C API: the only header a program (and a backend plugin, graft/backend_plugin.h)
 * builds against. `pkg-config --cflags graft` points at the folder above this one, so a program
 * writes #include <graft/graft.h> and links with `pkg-config --libs graft`.
 *
 * Everything is an opaque handle with accessor functions; no struct of graft's IR crosses this
 * line, so the library's internals can change without breaking a program built against it.
 * Compatibility: GRAFT_API_VERSION_MAJOR changes when a function's meaning or a handle's
 * contract changes; a minor release only adds. graft_api_version() is the library's own, to
 * compare with the macros a program was built with.
 *
 *     graft_session_options *o = graft_session_options_new();
 *     graft_session_options_add_backend(o, "dnnl");
 *     graft_session *s;
 *     graft_error *err = NULL;
 *     if (graft_session_load("model.onnx", o, &s, &err)) { fputs(graft_error_message(err), stderr); ... }
 *     graft_tensor *out[1];
 *     graft_session_run(s, inputs, 1, out, 1, &err);
 *
 * Errors: a function that can fail returns 0 on success, else a negative graft_status, and
 * when err is not NULL stores a graft_error (message naming the file, the layer and the op)
 * that the caller frees with graft_error_free. */
#ifndef GRAFT_PUBLIC_GRAFT_H
#define GRAFT_PUBLIC_GRAFT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What libgraft.so exports (the same visibility as its internal GR_API). */
#ifndef GRAFT_API
#if defined(__GNUC__) || defined(__clang__)
#define GRAFT_API __attribute__((visibility("default")))
#else
#define GRAFT_API
#endif
#endif

#define GRAFT_API_VERSION_MAJOR 1
#define GRAFT_API_VERSION_MINOR 1
#define GRAFT_API_VERSION ((GRAFT_API_VERSION_MAJOR << 16) | GRAFT_API_VERSION_MINOR)

/* The library's API version, (major << 16) | minor. */
GRAFT_API uint32_t graft_api_version(void);
/* The library's release ("0.1.0"). */
GRAFT_API const char *graft_version(void);
/* Frees a string the library returned (the JSON and text results). Since 1.1. */
GRAFT_API void graft_string_free(char *s);

/* ---- Errors ---- */

typedef enum graft_status {
    GRAFT_OK = 0,
    GRAFT_ERR_PARSE = -1,
    GRAFT_ERR_TYPE = -2,
    GRAFT_ERR_INVALID = -3,
    GRAFT_ERR_UNSUPPORTED = -4,
    GRAFT_ERR_IO = -5,
    GRAFT_ERR_NOMEM = -6,
    GRAFT_ERR_RUNTIME = -7,
    GRAFT_ERR_NOT_FOUND = -8,
} graft_status;

typedef struct graft_error graft_error;
/* The whole message: "FILE: layer 'L' (op O) : what went wrong", the parts known. */
GRAFT_API const char *graft_error_message(const graft_error *e);
/* Its parts: the input file, the frontend layer and the op ("" when unknown). */
GRAFT_API const char *graft_error_file(const graft_error *e);
GRAFT_API const char *graft_error_layer(const graft_error *e);
GRAFT_API const char *graft_error_op(const graft_error *e);
GRAFT_API graft_status graft_error_status(const graft_error *e);
/* The line and column in the input file (1-based; 0 when unknown). Since 1.1. */
GRAFT_API int graft_error_line(const graft_error *e);
GRAFT_API int graft_error_col(const graft_error *e);
/* graft's own message, without the file, layer and op in front. Since 1.1. */
GRAFT_API const char *graft_error_detail(const graft_error *e);
GRAFT_API void graft_error_free(graft_error *e);

/* ---- Tensors ---- */

typedef enum graft_dtype {
    GRAFT_DTYPE_UNKNOWN = 0,
    GRAFT_FLOAT32,
    GRAFT_FLOAT64,
    GRAFT_FLOAT16,
    GRAFT_BFLOAT16,
    GRAFT_INT8,
    GRAFT_UINT8,
    GRAFT_INT16,
    GRAFT_INT32,
    GRAFT_INT64,
    GRAFT_BOOL,
    GRAFT_UINT16,
    GRAFT_UINT32,
    GRAFT_UINT64,
} graft_dtype;
/* "float32", ...; NULL for GRAFT_DTYPE_UNKNOWN. */
GRAFT_API const char *graft_dtype_name(graft_dtype t);
GRAFT_API size_t graft_dtype_size(graft_dtype t);

/* The most dims a tensor has. Since 1.1. */
#define GRAFT_MAX_NDIM 8

/* A dense row-major tensor, reference counted. */
typedef struct graft_tensor graft_tensor;
/* A new zero-filled tensor (refcount 1); NULL on a bad dtype/rank or no memory. */
GRAFT_API graft_tensor *graft_tensor_new(graft_dtype dtype, int ndim, const int64_t *shape);
/* A tensor over the caller's memory (not copied, not freed: it must outlive the tensor). */
GRAFT_API graft_tensor *graft_tensor_wrap(graft_dtype dtype, int ndim, const int64_t *shape, void *data);
GRAFT_API graft_tensor *graft_tensor_retain(graft_tensor *t);
GRAFT_API void graft_tensor_release(graft_tensor *t);
GRAFT_API graft_dtype graft_tensor_dtype(const graft_tensor *t);
GRAFT_API int graft_tensor_ndim(const graft_tensor *t);
GRAFT_API int64_t graft_tensor_dim(const graft_tensor *t, int axis);
GRAFT_API size_t graft_tensor_numel(const graft_tensor *t);
GRAFT_API size_t graft_tensor_nbytes(const graft_tensor *t);
GRAFT_API void *graft_tensor_data(graft_tensor *t);
/* Nonzero when someone else holds t too (a constant of the model that a run returned as is):
 * writing to its data would change the model. Since 1.1. */
GRAFT_API int graft_tensor_is_shared(const graft_tensor *t);

/* ---- Backends ---- */

/* Loads a backend plugin (graft/backend_plugin.h) from a shared library and registers it for
 * the whole process; loading the same name again is a no-op. A plugin built for another
 * major version of the plugin ABI, or a newer minor one, is refused with a message. */
GRAFT_API graft_status graft_backend_load(const char *path, graft_error **err);
/* The registered backends: built-in ones first, then the plugins in load order. */
GRAFT_API uint32_t graft_backend_count(void);
GRAFT_API const char *graft_backend_name(uint32_t i);
/* The plugin's version ("0.1.0"); for a built-in backend, graft's own. */
GRAFT_API const char *graft_backend_version(uint32_t i);
/* The plugin's file; NULL for a built-in backend. */
GRAFT_API const char *graft_backend_path(uint32_t i);
/* Every registered backend as JSON (graft backends): [{"name", "description", "runtime_kind",
 * "options": [{"name", "type", "default", "help", "choices"}], "patterns", "version", "path"}];
 * a heap string (graft_string_free), NULL when a backend's pattern table fails. Since 1.1. */
GRAFT_API char *graft_backends_json(void);

/* ---- Sessions: a model loaded and compiled, ready to run ---- */

typedef struct graft_session_options graft_session_options;
GRAFT_API graft_session_options *graft_session_options_new(void);
GRAFT_API void graft_session_options_free(graft_session_options *o);
/* Offload to this backend (a built-in one or a loaded plugin); in priority order: the first
 * added wins where several could take an op. No backend: every op on the host. */
GRAFT_API graft_status graft_session_options_add_backend(graft_session_options *o, const char *name,
                                                         graft_error **err);
/* A backend option, "dnnl.threads=2" (graft backends lists them). */
GRAFT_API graft_status graft_session_options_set(graft_session_options *o, const char *assignment,
                                                 graft_error **err);
/* Threads of every backend that has a "threads" option (0: the backend's default). */
GRAFT_API graft_status graft_session_options_set_threads(graft_session_options *o, int threads, graft_error **err);
/* The shape of an ONNX model's input whose dims the model leaves open ("x", 4, {1,3,224,224}),
 * fixed before compiling. */
GRAFT_API graft_status graft_session_options_set_input_shape(graft_session_options *o, const char *input, int ndim,
                                                             const int64_t *dims, graft_error **err);
/* Skip the default optimization passes (on by default). */
GRAFT_API void graft_session_options_set_optimize(graft_session_options *o, int on);
/* Keep the ONNX importer's spans (the frontend layer of every op; on by default). Since 1.1. */
GRAFT_API void graft_session_options_set_spans(graft_session_options *o, int on);

typedef struct graft_session graft_session;
/* Loads `path`: an ONNX model (.onnx), Relax text (.relax, .py) or a built artifact (any other name),
 * and compiles it for the options' backends (o NULL: every op on the host). An artifact keeps
 * the backends it was built with; the options' backend options still apply to its regions. */
GRAFT_API graft_status graft_session_load(const char *path, const graft_session_options *o, graft_session **out,
                                          graft_error **err);
/* The same from bytes in memory: format "onnx", "relax" or "graft". */
GRAFT_API graft_status graft_session_load_buffer(const void *buf, size_t len, const char *format,
                                                 const graft_session_options *o, graft_session **out,
                                                 graft_error **err);
GRAFT_API void graft_session_free(graft_session *s);
/* Writes the compiled session as an artifact (.graft) that graft_session_load reads back. */
GRAFT_API graft_status graft_session_save(graft_session *s, const char *path, graft_error **err);

GRAFT_API uint32_t graft_session_num_inputs(const graft_session *s);
GRAFT_API uint32_t graft_session_num_outputs(const graft_session *s);
GRAFT_API const char *graft_session_input_name(const graft_session *s, uint32_t i);
GRAFT_API const char *graft_session_output_name(const graft_session *s, uint32_t i);
GRAFT_API graft_dtype graft_session_input_dtype(const graft_session *s, uint32_t i);
GRAFT_API graft_dtype graft_session_output_dtype(const graft_session *s, uint32_t i);
/* Rank (-1: unknown) and dim `axis` (-1: symbolic, fixed by the run's inputs). */
GRAFT_API int graft_session_input_ndim(const graft_session *s, uint32_t i);
GRAFT_API int64_t graft_session_input_dim(const graft_session *s, uint32_t i, int axis);
GRAFT_API int graft_session_output_ndim(const graft_session *s, uint32_t i);
GRAFT_API int64_t graft_session_output_dim(const graft_session *s, uint32_t i, int axis);
/* A dim that is a symbolic var: its name ("n"); NULL for a static or unknown dim or an
 * expression. One name is one var (an input's batch and the output's that follows it). */
GRAFT_API const char *graft_session_input_dim_symbol(const graft_session *s, uint32_t i, int axis);
GRAFT_API const char *graft_session_output_dim_symbol(const graft_session *s, uint32_t i, int axis);

/* Runs the model: inputs borrowed, in order; outputs[i] (nout of them, as many as
 * graft_session_num_outputs) new tensors the caller releases. Safe to call from several
 * threads at once on one session. */
GRAFT_API graft_status graft_session_run(graft_session *s, graft_tensor *const *inputs, uint32_t nin,
                                         graft_tensor **outputs, uint32_t nout, graft_error **err);

/* The model's steps with the frontend layers each computes ("a,b,c"): kind "extern" for a region
 * a backend took (its name is the region's symbol, "fused_..._<backend>"), "host" for a fused
 * host kernel, "op" for a host op, "call" for a function call. */
GRAFT_API uint32_t graft_session_num_regions(const graft_session *s);
GRAFT_API const char *graft_session_region_name(const graft_session *s, uint32_t i);
GRAFT_API const char *graft_session_region_kind(const graft_session *s, uint32_t i);
GRAFT_API const char *graft_session_region_layers(const graft_session *s, uint32_t i);

/* Profiling: one call per step of a run (kind "op", "extern" for a backend region, "call");
 * name the op or the region's symbol. fn NULL turns it off; set it while no run is in flight. */
typedef void (*graft_profile_fn)(const char *kind, const char *name, uint64_t ns, void *user);
GRAFT_API void graft_session_set_profiler(graft_session *s, graft_profile_fn fn, void *user);

/* One step of a run as graft_session_set_event_profiler reports it (since 1.1). The library
 * allocates it, so a minor release may add fields at its end. Strings live as long as the
 * session. */
typedef struct graft_profile_event {
    const char *kind;    /* "op", "extern", "call"; "prim" for a backend's primitive */
    const char *name;    /* the op or the region's symbol (of a primitive: its region's) */
    const char *layer;   /* the first frontend layer of the step; NULL when unknown or a primitive */
    uint64_t ns;
    /* kind "prim": its index in the region, its kind ("convolution") and implementation
     * ("brgconv:avx512_core"), the frontend layers of the nodes it computes */
    uint32_t prim_index;
    const char *prim_kind, *prim_impl;
    uint32_t nlayers;
    const char *const *layers;
} graft_profile_event;
typedef void (*graft_profile_event_fn)(const graft_profile_event *e, void *user);
/* graft_session_set_profiler with the step's layer (it replaces that one's function);
 * primitives nonzero also reports every primitive inside the session's backend regions that
 * have them (oneDNN). fn NULL turns both off; set it while no run is in flight. */
GRAFT_API void graft_session_set_event_profiler(graft_session *s, graft_profile_event_fn fn, int primitives,
                                                void *user);
/* JSON (heap strings, graft_string_free): the inputs and outputs {"inputs": [{"name", "shape",
 * "dtype"}], "outputs": [...]} (a symbolic dim is its expression as text, an unknown one null); the plan's
 * summary {"arena_bytes", "intermediate_bytes", "host_object_bytes", "host_kernels",
 * "kernels", "externs", "fused_ops", "planned", "load_ms", "host_cpu", "external_modules":
 * [[name, engine], ...]}. Since 1.1. */
GRAFT_API char *graft_session_signature_json(const graft_session *s);
GRAFT_API char *graft_session_info_json(const graft_session *s);

/* ---- IR modules: a model imported but not compiled (since 1.1) ----
 *
 * What a binding or a tool needs before compiling: the TVMScript text, the optimized and the
 * partitioned module with its report. The modules derived from one (optimize, partition)
 * share its IR context, which stays alive until the last of them is freed; calls on the
 * modules of one context are serialized, so several threads may hold them. Every char *
 * result is a heap string the caller frees with graft_string_free. */

typedef struct graft_irmodule graft_irmodule;
/* Imports `path` as format "onnx" (o's input shapes fix its open dims; o's spans setting) or
 * "relax"; format NULL: by the name (.onnx ONNX, else Relax text). o may be NULL. */
GRAFT_API graft_status graft_irmodule_load(const char *path, const char *format, const graft_session_options *o,
                                           graft_irmodule **out, graft_error **err);
/* The same from bytes in memory: format "onnx" or "relax"; name names the input in errors and
 * spans (NULL: "model.onnx" / "model.relax"). */
GRAFT_API graft_status graft_irmodule_load_buffer(const void *buf, size_t len, const char *format, const char *name,
                                                  const graft_session_options *o, graft_irmodule **out,
                                                  graft_error **err);
/* Frees m; its context goes with the last module in it. */
GRAFT_API void graft_irmodule_free(graft_irmodule *m);
/* The TVMScript text (spans, metadata: 0 leaves them out); NULL on no memory. */
GRAFT_API char *graft_irmodule_text(const graft_irmodule *m, int spans, int metadata);
/* JSON: the frontend layers its spans name (["conv1", ...]); main's signature ({"inputs":
 * [{"name", "shape", "dtype"}], "outputs": [...]}, NULL when there is no main). */
GRAFT_API char *graft_irmodule_layers_json(const graft_irmodule *m);
GRAFT_API char *graft_irmodule_signature_json(const graft_irmodule *m);
/* Runs passes: NULL the default pipeline, else comma-separated pass names; opt_level < 0: the
 * default. *out: a new module in m's context. */
GRAFT_API graft_status graft_irmodule_optimize(const graft_irmodule *m, const char *passes, int opt_level,
                                               graft_irmodule **out, graft_error **err);
/* Partitions m for o's backends with o's backend options (graft partition); patterns, when not
 * NULL, a pattern file whose patterns go ahead of the backends'. *out: a new module in m's
 * context; *report (may be NULL): the partition report as JSON (graft partition --report json). */
GRAFT_API graft_status graft_irmodule_partition(const graft_irmodule *m, const graft_session_options *o,
                                                const char *patterns, graft_irmodule **out, char **report,
                                                graft_error **err);
/* Builds m as it stands (no pass, no partitioning: do them first) into a session that o's
 * backend options apply to; m stays the caller's. */
GRAFT_API graft_status graft_session_from_irmodule(const graft_irmodule *m, const graft_session_options *o,
                                                   graft_session **out, graft_error **err);
/* An ONNX model's graph inputs and outputs without importing it: {"inputs": [...], "outputs":
 * [...]} (names, in order); NULL on error. */
GRAFT_API char *graft_onnx_io_names_json(const char *path, graft_error **err);

/* graft diff / graft explore on m: partitions it for o's backends and, as flags ask, runs it on
 * `inputs` (main's params, in order; borrowed) observing every layer (OBSERVE), timing it
 * (PROFILE), and comparing every layer's output with the `against` path (DIFF; NULL or
 * "reference": m on the host, else a backend): out of tolerance when |a - b| > atol +
 * atol_scale * max|B| + rtol * |b|. *diff (DIFF; may be NULL): the per-layer rows as JSON;
 * *doc (may be NULL): the explorer's model document. perturb (NULL: none), a test's fault
 * injection, sees each observed output of the backend path and may change its data in place
 * (then returns nonzero). */
#define GRAFT_INSPECT_OBSERVE 1u
#define GRAFT_INSPECT_PROFILE 2u
#define GRAFT_INSPECT_DIFF 4u
typedef int (*graft_inspect_perturb_fn)(const char *layer, graft_tensor *t, void *user);
GRAFT_API graft_status graft_irmodule_inspect(const graft_irmodule *m, const graft_session_options *o, unsigned flags,
                                              const char *against, double rtol, double atol, double atol_scale,
                                              graft_tensor *const *inputs, uint32_t nin,
                                              graft_inspect_perturb_fn perturb, void *perturb_user, char **diff,
                                              char **doc, graft_error **err);
/* graft diff --against-dumps on m: as graft_irmodule_inspect's DIFF (*diff, *doc as there), but
 * no against-path runs:
 * layer ref_layers[i]'s reference is refs[i] (borrowed; ONNX Runtime's intermediate tensors, say).
 * When qparams_onnx names the QDQ ONNX model m was imported from, a layer with a per-tensor
 * scale compares u8/s8 levels as the values they stand for, gives its error also in steps of
 * that scale ("max_steps") and adds atol_steps of them to its atol. */
GRAFT_API graft_status graft_irmodule_diff_values(const graft_irmodule *m, const graft_session_options *o, double rtol,
                                                  double atol, double atol_scale, double atol_steps,
                                                  const char *qparams_onnx, graft_tensor *const *inputs, uint32_t nin,
                                                  const char *const *ref_layers, graft_tensor *const *refs,
                                                  uint32_t nrefs, char **diff, char **doc, graft_error **err);

#ifdef __cplusplus
}
#endif

#endif
