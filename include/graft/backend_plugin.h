/* The backend plugin interface: a backend built outside graft, as a shared library that graft
 * loads at run time (graft_backend_load, `graft ... --backend-lib PATH`, GRAFT_BACKEND_PATH).
 * docs/writing-a-backend.md walks through one.
 *
 * The library exports one function, graft_backend_plugin, returning a graft_plugin that
 * lives as long as the library: the ABI version it was built for, its name and version, its
 * options, its patterns (the pattern file format of docs/backends.md, as text in the struct
 * and/or a file shipped next to the library), optional C checks on pattern matches, and a
 * codegen: for each region graft partitioned to it, `compile` builds the plugin's runtime
 * state from a read-only view of the region's graph, `run` runs it, `release` frees it.
 *
 * The plugin links nothing of graft: every call into graft goes through the graft_host_api
 * table it is handed (as ONNX Runtime's OrtApi), so one .so works with the CLI (libgraft
 * linked in statically), libgraft.so and the Python module alike.
 *
 * Artifacts: a region's graph (with its constants) is what an artifact stores, together with
 * the plugin's name and version; loading one calls the plugin's `compile` again on that graph,
 * so the graph is the serialized form of the plugin's runtime module and `compile` its loader.
 * A plugin of ABI 1.2 may also store its own prepared form of a compiled region (packed
 * weights, a program): `serialize` writes it when an artifact is built, graft stores it beside
 * the graph in a checked envelope (plugin name and version, length, checksum), and loading calls
 * `deserialize` on it instead of `compile`. A plugin without these hooks (NULL, or built for
 * an older minor) is compiled from the graph as before. An artifact whose plugin is not loaded,
 * or was made by another major version of it, is refused with a message naming the plugin and
 * both versions; a stored form that is truncated or altered is refused naming the region.
 *
 * Versioning: graft loads a plugin whose abi_major equals GRAFT_PLUGIN_ABI_MAJOR and whose
 * abi_minor is at most graft's own; minor versions only add fields at the end of the structs
 * (a plugin for an older minor leaves them out, graft reads them as NULL). */
#ifndef GRAFT_PUBLIC_BACKEND_PLUGIN_H
#define GRAFT_PUBLIC_BACKEND_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "graft.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GRAFT_PLUGIN_ABI_MAJOR 1
#define GRAFT_PLUGIN_ABI_MINOR 2
/* The entry point's name, for dlsym. */
#define GRAFT_PLUGIN_ENTRY "graft_backend_plugin"

#if defined(__GNUC__) || defined(__clang__)
#define GRAFT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GRAFT_PLUGIN_EXPORT
#endif

/* ---- What graft hands a plugin ---- */

/* A region: the graph of the ops graft partitioned to the plugin, inputs first. Node ids
 * are 0..num_nodes-1 in topological order; an input or constant node has one output, a
 * kernel node one per result. Valid during compile only. */
typedef struct graft_region graft_region;
/* A pattern match being checked: the bindings of the pattern by name (the root is "root";
 * the others are named after the pattern's body vars). Valid during the check only. */
typedef struct graft_match graft_match;
/* Where a plugin reports a failure: set it and return non-zero. */
typedef struct graft_plugin_error graft_plugin_error;
/* The option values of one compile (a plugin's options by name, set or default). */
typedef struct graft_plugin_options graft_plugin_options;

typedef enum graft_node_kind { GRAFT_NODE_INPUT, GRAFT_NODE_CONST, GRAFT_NODE_KERNEL } graft_node_kind;

/* How graft writes a region for the plugin. PER_OP: one kernel node per op ("relax.nn.conv2d",
 * one op); PER_COMPOSITE: one kernel node per pattern match, named after the pattern
 * ("mybackend.conv2d_relu"), its ops listed in order (graft_host_api.node_num_ops). */
typedef enum graft_region_mode { GRAFT_REGION_PER_OP = 0, GRAFT_REGION_PER_COMPOSITE = 1 } graft_region_mode;

typedef struct graft_host_api {
    uint32_t abi_major, abi_minor;         /* graft's own GRAFT_PLUGIN_ABI_* */

    /* printf-style message for the failure being returned (the first one set wins). */
    void (*set_error)(graft_plugin_error *err, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* The value of one of the plugin's options ("threads"), as text: the one set, else its
     * default; NULL for a name the plugin did not declare. */
    const char *(*option)(const graft_plugin_options *o, const char *name);

    /* ---- the region ---- */
    const char *(*region_symbol)(const graft_region *r);
    uint32_t (*region_num_nodes)(const graft_region *r);
    /* The region's inputs (node ids, in call order) and outputs (node, output index). */
    uint32_t (*region_num_inputs)(const graft_region *r);
    uint32_t (*region_input)(const graft_region *r, uint32_t i);
    uint32_t (*region_num_outputs)(const graft_region *r);
    uint32_t (*region_output)(const graft_region *r, uint32_t i, uint32_t *index);

    graft_node_kind (*node_kind)(const graft_region *r, uint32_t nid);
    /* input: its param name; const: its constant name; kernel: the op or the pattern name. */
    const char *(*node_name)(const graft_region *r, uint32_t nid);
    /* The frontend layer the node computes ("" when unknown), for messages. */
    const char *(*node_layer)(const graft_region *r, uint32_t nid);
    uint32_t (*node_num_inputs)(const graft_region *r, uint32_t nid);
    /* Input i of a kernel node: the producing node, and which of its outputs in *index. */
    uint32_t (*node_input)(const graft_region *r, uint32_t nid, uint32_t i, uint32_t *index);
    uint32_t (*node_num_outputs)(const graft_region *r, uint32_t nid);
    graft_dtype (*node_dtype)(const graft_region *r, uint32_t nid, uint32_t out);
    int (*node_ndim)(const graft_region *r, uint32_t nid, uint32_t out);
    /* ndim dims; every dim is known (a region with symbolic dims is compiled per shape). */
    const int64_t *(*node_shape)(const graft_region *r, uint32_t nid, uint32_t out);
    /* A const node's data (dense row-major, node_dtype / node_shape); valid during compile:
     * copy what the runtime state keeps. */
    const void *(*node_const_data)(const graft_region *r, uint32_t nid);
    /* The ops a kernel node computes (1 in PER_OP mode) and op k's name and attributes. */
    uint32_t (*node_num_ops)(const graft_region *r, uint32_t nid);
    const char *(*node_op)(const graft_region *r, uint32_t nid, uint32_t k);
    /* An integer (or list of integers) attribute: the number of values written to vals (at
     * most cap), -1 when the op has no such attribute. */
    int (*node_attr_ints)(const graft_region *r, uint32_t nid, uint32_t k, const char *attr, int64_t *vals,
                          int cap);
    /* A float attribute: 0 and *val, -1 when absent. */
    int (*node_attr_float)(const graft_region *r, uint32_t nid, uint32_t k, const char *attr, double *val);
    /* A string attribute ("NCHW"), NULL when absent. */
    const char *(*node_attr_str)(const graft_region *r, uint32_t nid, uint32_t k, const char *attr);
    /* PER_OP mode: call argument i of the node's op when it is a number (clip's min and max):
     * 0 and *val, -1 otherwise (a tensor argument, or absent). */
    int (*node_arg_num)(const graft_region *r, uint32_t nid, uint32_t i, double *val);

    /* ---- a pattern match (checks) ---- */
    /* The op of a binding ("relax.nn.conv2d"), NULL when the name binds no op call. */
    const char *(*match_op)(const graft_match *m, const char *binding);
    /* The binding's number of arguments and argument i's dtype / rank / dims (-1: unknown or
     * symbolic); argument i is a constant: match_arg_const != 0. */
    uint32_t (*match_num_args)(const graft_match *m, const char *binding);
    graft_dtype (*match_arg_dtype)(const graft_match *m, const char *binding, uint32_t i);
    int (*match_arg_ndim)(const graft_match *m, const char *binding, uint32_t i);
    int64_t (*match_arg_dim)(const graft_match *m, const char *binding, uint32_t i, int axis);
    int (*match_arg_const)(const graft_match *m, const char *binding, uint32_t i);
    /* The binding's result rank and dims, as for the arguments. */
    int (*match_ndim)(const graft_match *m, const char *binding);
    int64_t (*match_dim)(const graft_match *m, const char *binding, int axis);
    /* Argument i of the binding when it is a number (clip's min and max): 0 and *val, -1 else. */
    int (*match_arg_num)(const graft_match *m, const char *binding, uint32_t i, double *val);
    /* Attributes of the binding's op call, as node_attr_*. */
    int (*match_attr_ints)(const graft_match *m, const char *binding, const char *attr, int64_t *vals, int cap);
    const char *(*match_attr_str)(const graft_match *m, const char *binding, const char *attr);

    /* ---- ABI 1.1 ---- */
    /* True when graft compiles the region to observe it (graft diff, graft explore): the state
     * must keep every op node's output readable by read_value after a run. */
    int (*region_observed)(const graft_region *r);

    /* ---- ABI 1.2 ---- */
    /* The dtype of the binding's result (GRAFT_DTYPE_UNKNOWN: not a tensor), e.g. a concat's,
     * whose argument is a tuple. */
    graft_dtype (*match_dtype)(const graft_match *m, const char *binding);
    /* Argument i's number of fields when it is a tuple (a concat's), -1 otherwise. */
    int (*match_arg_fields)(const graft_match *m, const char *binding, uint32_t i);
} graft_host_api;

/* ---- What a plugin hands graft ---- */

typedef enum graft_option_type { GRAFT_OPTION_BOOL, GRAFT_OPTION_INT, GRAFT_OPTION_STRING } graft_option_type;

/* One option, given as "<plugin>.<name>=<value>" (--backend-opt, graft_session_options_set). */
typedef struct graft_plugin_option {
    const char *name;
    graft_option_type type;
    const char *dflt;                      /* the default, as written */
    const char *help;                      /* one line for `graft backends` */
    const char *choices;                   /* STRING: the values allowed, "a|b"; NULL: any */
} graft_plugin_option;

/* A check on a match of one pattern: 0 accepts; else *reason says why not (a static string;
 * it shows in the partition report as why the op stayed elsewhere). */
typedef int (*graft_plugin_check_fn)(const graft_host_api *api, const graft_match *m, const char **reason);

/* A C check for the patterns of the pattern text whose Composite name is `pattern`
 * ("<plugin>.conv2d"). */
typedef struct graft_plugin_check {
    const char *pattern;
    graft_plugin_check_fn check;
} graft_plugin_check;

typedef struct graft_plugin {
    uint32_t abi_major, abi_minor;         /* GRAFT_PLUGIN_ABI_MAJOR / _MINOR it was built with */
    uint32_t struct_size;                  /* sizeof(graft_plugin) it was built with */
    const char *name;                      /* "xnnpack": the --backend name, the prefix of its
                                              patterns and options */
    const char *version;                   /* "MAJOR.MINOR.PATCH" of the plugin */
    const char *description;               /* one line for `graft backends` */

    const graft_plugin_option *options;
    uint32_t noptions;

    /* Patterns in the pattern file format (earlier wins), each function's Composite
     * "<name>.<pattern>": the text here (NULL: none), and/or pattern_file below. */
    const char *pattern_text;
    const graft_plugin_check *checks;
    uint32_t nchecks;

    graft_region_mode region_mode;

    /* Builds the runtime state of one region; 0 and *state, else non-zero with err set (the
     * message names the region's op and layer that could not be compiled). */
    int (*compile)(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o, void **state,
                   graft_plugin_error *err);
    /* Runs it: inputs and outputs as the region's input nodes and outputs give them (dtype,
     * shape), dense row-major, outputs allocated by graft. Called from one thread at a time
     * per state. */
    int (*run)(void *state, const void *const *inputs, uint32_t nin, void *const *outputs, uint32_t nout,
               graft_plugin_error *err);
    void (*release)(void *state);

    /* ---- ABI 1.1 ---- */
    /* A pattern file shipped with the plugin, read from the plugin library's folder after
     * pattern_text (NULL: none). */
    const char *pattern_file;
    /* Optional, for a state compiled with region_observed: copies op node nid's output as the
     * last run computed it into out (dense row-major, the node's dtype and shape as graft
     * declares them); 0 on success, non-zero when the node has no output of its own (fused
     * into another op). graft diff compares these with the reference, layer by layer. */
    int (*read_value)(void *state, uint32_t nid, void *out);

    /* ---- ABI 1.2 ---- */
    /* Optional, both or neither: the plugin's own prepared form of a compiled state, stored in
     * an artifact so that loading it skips the work compile does. serialize writes the form of
     * `state` into buf when cap is at least its size and sets *len to its size either way
     * (graft asks with buf NULL, then with a buffer of *len bytes); *len 0: nothing to store
     * (the artifact recompiles this region at load). Non-zero with err set fails the build.
     * Called only while an artifact is written, never on a run's path. */
    int (*serialize)(void *state, void *buf, size_t cap, size_t *len, graft_plugin_error *err);
    /* Builds a state from data (len bytes, exactly as serialize wrote them; graft checked the
     * envelope's length and checksum) for region r, the same graph compile was given (its
     * shapes, names and constants); made_by: the version of the plugin that wrote it (same
     * major). data stays valid while the state lives (it may be read in place, as mapped
     * weights). 0 and *state as compile; non-zero with err set: the artifact does not load (a
     * form the plugin cannot read is an error, not a silent recompile). */
    int (*deserialize)(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o,
                       const void *data, size_t len, const char *made_by, void **state, graft_plugin_error *err);
} graft_plugin;

/* The entry point a plugin library defines:
 *     GRAFT_PLUGIN_EXPORT const graft_plugin *graft_backend_plugin(void) { return &my_plugin; } */
typedef const graft_plugin *(*graft_backend_plugin_fn)(void);
GRAFT_PLUGIN_EXPORT const graft_plugin *graft_backend_plugin(void);

#ifdef __cplusplus
}
#endif

#endif
