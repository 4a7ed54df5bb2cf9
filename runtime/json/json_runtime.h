/* The JSON runtime base (TVM's JSONRuntimeBase): a graph of `input` / `const` /
 * `kernel` nodes serialized by backends/json, loaded once, initialized once with its constants
 * by name, run with DLTensors (inputs then caller-allocated outputs), serialized and loaded
 * back. The graph format is documented in backends/json/json_codegen.h.
 *
 * An engine runs the kernel nodes: the reference engine (here) runs each node with the
 * reference kernel of its op; other backends (oneDNN) plug their own engine into the same
 * graph and module code:
 *
 *     rt_json_graph *g;
 *     rt_json_graph_load("sym", text, len, &g, &diag);      // parse + validate
 *     rt_json_graph_init(g, tensors, n, &diag);             // constants in rt_json_graph_const_name order
 *     rt_module *m = rt_json_module_new("json", NULL, NULL, &g, 1);  // takes the graph; NULL = reference
 *     rt_module_call(m, "sym", args, nin, nout, &diag);
 */
#ifndef GRAFT_RUNTIME_JSON_JSON_RUNTIME_H
#define GRAFT_RUNTIME_JSON_JSON_RUNTIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/tensor.h"
#include "ir/op.h"
#include "runtime/module.h"

typedef struct rt_json_entry {
    uint32_t nid, index;
} rt_json_entry;

typedef enum rt_json_node_kind { RT_JSON_INPUT, RT_JSON_CONST, RT_JSON_KERNEL } rt_json_node_kind;

typedef struct rt_json_node {
    rt_json_node_kind kind;
    ir_op_id op;                  /* kernel: the op, resolved from name at load; IR_OP_NONE for
                                     inputs, constants and names the op table does not have */
    const char *name;             /* input: param name; const: constant name; kernel: op name
                                     ("relax.nn.conv2d") or composite name */
    uint32_t ninputs;
    rt_json_entry *inputs;
    uint32_t noutputs;
    json_t *attrs;                /* borrowed from the graph's document: shape, dtype, op_attrs,
                                     args, span, composite (a built graph parses its document on
                                     the first rt_json_graph_node call) */
    /* per output: dtype and static shape */
    DLDataType *dtypes;
    int32_t *ndims;
    int64_t (*shapes)[RT_MAX_NDIM];
    const char *layer;            /* first span source, for messages ("" when none) */
    void *engine_data;            /* the engine's per-node state */
} rt_json_node;

typedef struct rt_json_graph rt_json_graph;

gr_status rt_json_graph_load(const char *symbol, const char *json, size_t len, rt_json_graph **out,
                             gr_diag *diag);
/* Same from a parsed document (the graph takes the reference). */
gr_status rt_json_graph_load_doc(const char *symbol, json_t *doc, rt_json_graph **out, gr_diag *diag);

/* Building a graph node by node (codegen), without building and re-reading a document: the
 * typed node fields come from the calls, the graph's JSON text from finish. That text must
 * describe the same nodes (what rt_json_graph_load would read from it); it is parsed only when
 * a node's attrs are first needed (rt_json_graph_node, the engines' prepare), not here.
 *
 *     rt_json_graph *g = rt_json_graph_begin("sym");
 *     uint32_t x = rt_json_graph_add_node(g, RT_JSON_INPUT, "x", 0, NULL, 1, dt, nd, sh, "layer");
 *     ...
 *     rt_json_graph_add_head(g, (rt_json_entry){y, 0});
 *     rt_json_graph_finish(g, text, len, &diag);     // takes text (malloc'd, NUL-terminated)
 */
rt_json_graph *rt_json_graph_begin(const char *symbol);
/* Appends a node (name, layer and the arrays are copied); returns its id. */
uint32_t rt_json_graph_add_node(rt_json_graph *g, rt_json_node_kind kind, const char *name, uint32_t ninputs,
                                const rt_json_entry *inputs, uint32_t noutputs, const DLDataType *dtypes,
                                const int32_t *ndims, const int64_t (*shapes)[RT_MAX_NDIM], const char *layer);
void rt_json_graph_add_head(rt_json_graph *g, rt_json_entry e);
/* Room for about `nodes` nodes up front (a hint: building big graphs without regrowing). */
void rt_json_graph_reserve(rt_json_graph *g, uint32_t nodes);
/* Checks the node inputs and heads; on error frees g (and text). */
gr_status rt_json_graph_finish(rt_json_graph *g, char *text, size_t len, gr_diag *diag);
void rt_json_graph_free(rt_json_graph *g);
const char *rt_json_graph_symbol(const rt_json_graph *g);
/* The graph's JSON text (made on first use; owned by the graph). */
const char *rt_json_graph_text(rt_json_graph *g);
/* Frees the graph's parsed document, keeping its text (made now if need be), from which the next
 * rt_json_graph_node call parses it anew; the nodes' attrs are NULL until then, and their names
 * and layers move into the graph's own memory (earlier pointers to them dangle). For an engine
 * done reading attrs once prepared: the document takes several times its text's memory. Not
 * while another thread reads the nodes. */
void rt_json_graph_drop_doc(rt_json_graph *g);
uint32_t rt_json_graph_num_nodes(const rt_json_graph *g);
rt_json_node *rt_json_graph_node(rt_json_graph *g, uint32_t nid);
/* Input nodes (in call order) and heads. */
uint32_t rt_json_graph_num_inputs(const rt_json_graph *g);
uint32_t rt_json_graph_input_nid(const rt_json_graph *g, uint32_t i);
uint32_t rt_json_graph_num_heads(const rt_json_graph *g);
rt_json_entry rt_json_graph_head(const rt_json_graph *g, uint32_t i);
/* Entry id of (nid, index) = node_row_ptr[nid] + index. */
uint32_t rt_json_graph_entry_id(const rt_json_graph *g, rt_json_entry e);
uint32_t rt_json_graph_num_entries(const rt_json_graph *g);
/* Constants, in the order the graph uses them. */
uint32_t rt_json_graph_num_consts(const rt_json_graph *g);
const char *rt_json_graph_const_name(const rt_json_graph *g, uint32_t i);
/* Binds the constants once (retained; later calls are no-ops returning GR_OK). Checks each
 * tensor's dtype and shape against its const node. */
gr_status rt_json_graph_init(rt_json_graph *g, rt_tensor *const *consts, uint32_t n, gr_diag *diag);
/* The constant tensor of const node i (borrowed), NULL before init and once released. */
rt_tensor *rt_json_graph_const(const rt_json_graph *g, uint32_t i);

/* ---- Constant ownership ----
 * init retains every constant: the graph holds one reference to each (the caller, e.g. the IR
 * context the constants came from, may hold more). An engine that keeps its own copy of a
 * constant (oneDNN: weights reordered into its layouts) does not need the original after its
 * prepare. When the graph is prepared exactly once and nothing else reads its constants (a
 * static graph owned by a JSON-runtime module: the module sets the flag before it prepares),
 * the graph is "disposable": its engine's prepare may release its reference to each constant
 * it no longer reads, which frees the data when no one else holds it. An engine that still
 * reads a constant at run time retains that tensor itself. Never for symbolic graphs or their
 * specializations (every new shape prepares again from the constants). */
void rt_json_graph_set_consts_disposable(rt_json_graph *g);
bool rt_json_graph_consts_disposable(const rt_json_graph *g);
/* Drops the graph's reference to constant i (rt_json_graph_const(g, i) is NULL afterwards);
 * returns its bytes, 0 when the graph is not disposable or i was released already. */
size_t rt_json_graph_release_const(rt_json_graph *g, uint32_t i);
/* Bytes of the constants the graph still references. */
size_t rt_json_graph_const_bytes(const rt_json_graph *g);

/* ---- Prepacked constants (artifacts) ----
 * What an engine made from a static graph's constants at prepare (oneDNN: weights reordered
 * into its blocked layouts), each under a key saying what it is valid for (library version,
 * ISA, node, layouts). An artifact stores them beside the constants; loaded, the engine finds
 * each by its key and reads it in place instead of making it again, and one it does not find
 * (another CPU) it makes as before. Each graph keeps its own list. */
/* Build side: the engine records data it owns (valid while its state lives). */
void rt_json_graph_pack_record(rt_json_graph *g, const char *key, const void *data, size_t bytes);
/* Load side: t (retained) is the stored form under key. */
void rt_json_graph_pack_provide(rt_json_graph *g, const char *key, rt_tensor *t);
/* The provided form under key when it has `bytes` bytes (counted as used), else NULL (counted
 * as made again when the graph was given any). */
const void *rt_json_graph_pack_find(rt_json_graph *g, const char *key, size_t bytes);
/* Recorded or provided entry i: its key, data and size; NULL past the end. */
const char *rt_json_graph_pack_at(const rt_json_graph *g, uint32_t i, const void **data, size_t *bytes);
/* Of the provided entries: how many were used, and how many weights the engine made anew
 * although the graph was given prepacked ones. */
void rt_json_graph_pack_counts(const rt_json_graph *g, uint32_t *provided, uint32_t *used, uint32_t *remade);
/* The constant name an artifact stores graph g's entry i under. */
void rt_json_graph_pack_name(const rt_json_graph *g, uint32_t i, char *buf, size_t n);
/* Streamed packs (an artifact build): while a sink is set, each recorded pack goes to it as it is
 * made and the list keeps its key and size only (rt_json_graph_pack_at gives data NULL); the
 * engine frees its own copy at once (rt_json_graph_pack_streamed), so a state prepared so is
 * released, never run. */
typedef void (*rt_json_pack_sink)(void *user, const void *data, size_t bytes);
bool rt_json_graph_pack_streamed(const rt_json_graph *g);
/* False while g is prepared for a state that is released unrun (streamed packs, or
 * rt_json_module_check): its engine may leave out data that only a run reads and the artifact
 * does not store (oneDNN: Winograd's transformed weights), since a load makes it anyway. */
bool rt_json_graph_will_run(const rt_json_graph *g);
/* Constants kept only as a pack (an artifact leaves their plain form out). Build side: the
 * pack just recorded is a pure layout change of constant c, undone from `layout` (the engine's
 * own words); once the engine knows it reads c only through such packs, it defers c, and the
 * module blob lists the first such pack of c with "plain": c and its layout. Load side: a
 * deferred constant is NULL in the graph; an engine that needs it plain (its packs were made
 * for another CPU or options) gets its pack (key, bytes, layout; NULL when c is there or not
 * deferred), lays it out plain and hands the tensor to the graph (set_plain takes the
 * reference; the graph releases it as any constant; drop_pack: the pack will not be read in
 * place either, its reference goes, so a mapped artifact's pages of it go too). */
void rt_json_graph_pack_invertible(rt_json_graph *g, uint32_t c, const char *layout);
void rt_json_graph_defer_const(rt_json_graph *g, uint32_t c);
bool rt_json_graph_const_deferred(const rt_json_graph *g, uint32_t c);
const char *rt_json_graph_deferred_pack(const rt_json_graph *g, uint32_t c, const void **data, size_t *bytes,
                                        const char **layout);
void rt_json_graph_set_plain(rt_json_graph *g, uint32_t c, rt_tensor *t, bool drop_pack);
/* How many deferred constants were laid out plain from their packs at load. */
uint32_t rt_json_graph_pack_recovered(const rt_json_graph *g);

/* True when some dim of the graph is symbolic (an expression string in its document, e.g.
 * "n" or "(w - 1) // 2 + 1"). A module runs such a graph through a static copy per distinct
 * set of call shapes (rt_json_graph_specialize), prepared by its engine and cached (at most 8
 * per graph, least recently used dropped): primitives are created for the concrete shapes. */
bool rt_json_graph_symbolic(const rt_json_graph *g);
/* The static copy of symbolic graph g (initialized, sharing g's constants) for one call: the
 * vars of plain-var dims of the inputs (then the outputs) are bound from args, every dim
 * expression evaluated; an argument whose dims disagree is GR_ERR_INVALID naming it and the
 * dim. */
gr_status rt_json_graph_specialize(rt_json_graph *g, DLTensor *const *args, uint32_t nin, uint32_t nout,
                                   rt_json_graph **out, gr_diag *diag);
/* What every specialization of one symbolic graph shares: an engine keeps there what it derives
 * from the constants (oneDNN: weights reordered to its layouts), so a new shape does not redo it.
 * For a specialization, the object of its symbolic graph (made by make on first use, freed with
 * fr when that graph goes); NULL for any other graph. Thread-safe to get; the object guards its
 * own contents. rt_json_graph_specialize sets the link (set_root). */
void *rt_json_graph_shared(rt_json_graph *g, void *(*make)(void), void (*fr)(void *));
void rt_json_graph_set_root(rt_json_graph *g, rt_json_graph *root);
/* Observer of a json module's engine prepares (graph symbol, engine kind, time): what a first
 * call, or a first call at new shapes, pays before running. Per module: it sees m's prepares
 * only; NULL turns it off; set it while no call of m is in flight. False when m is no json
 * module. */
typedef void (*rt_json_prepare_fn)(const char *symbol, const char *engine, uint64_t ns, void *user);
bool rt_json_module_set_prepare_observer(rt_module *m, rt_json_prepare_fn fn, void *user);
/* The same on every json module of ir module m's external_mods; returns how many took it. */
uint32_t rt_json_set_prepare_observers(const struct ir_module *m, rt_json_prepare_fn fn, void *user);

/* An engine: prepare runs once per graph (after init), run per call. opts: the engine's own
 * options struct (opts_size bytes, e.g. rt_dnnl_opts; a module keeps a copy), NULL for its
 * defaults. */
typedef struct rt_json_engine {
    const char *kind;             /* module kind: "json", "dnnl_json" */
    gr_status (*prepare)(rt_json_graph *g, const void *opts, void **state, gr_diag *diag);
    gr_status (*run)(rt_json_graph *g, void *state, DLTensor *const *args, uint32_t nin,
                     uint32_t nout, gr_diag *diag);
    void (*release)(rt_json_graph *g, void *state);
    size_t opts_size;             /* 0: the engine takes no options */
    /* Optional: the version of what made the engine (a backend plugin's), written into the
     * module blob as "engine_version" so that a loader can check it. */
    const char *version;
    /* Optional: records the stored forms (rt_json_graph_pack_record) of a prepared static
     * graph that the engine only makes for an artifact (a copy it would not keep otherwise);
     * the module's serialize calls it before listing the graph's packs. */
    gr_status (*record_packs)(rt_json_graph *g, void *state, gr_diag *diag);
    /* The engine takes constants stored only as packs (rt_json_graph_deferred_pack); a blob
     * that has them is refused for another engine. */
    bool deferred_consts;
} rt_json_engine;

/* ---- Operand contracts ----
 * What every engine checks once, in its prepare, before it builds a primitive or a kernel of
 * its own for a graph (so that a graph that breaks them is an error, never a crash or a wrong
 * answer): every value has a static shape, and every kernel node of an op of the table keeps
 * its op's contract: the op's struct info inference (ir/ops/op_infer_*.c), run on its arguments
 * (each input typed as its producer declares it) and its attributes, accepts them (a matmul's
 * K, a convolution's channels and groups, a binary op's broadcast, a concat's other axes, a
 * reshape's element count, ...) and gives exactly the outputs the node declares; every input
 * is one of its arguments. A broken contract is GR_ERR_INVALID naming the graph, the node, its
 * op and its layers. Nodes of names the op table does not have are left to the engine. */
gr_status rt_json_graph_check(rt_json_graph *g, gr_diag *diag);
/* What an engine's run checks of a call's tensors: nin inputs and nout outputs, each of its
 * node's declared dtype and shape, compact row-major (strides NULL or dense). */
gr_status rt_json_graph_check_args(const rt_json_graph *g, DLTensor *const *args, uint32_t nin, uint32_t nout,
                                   gr_diag *diag);

/* ---- Debug taps (graft diff): the intermediates an engine computed ----
 * With a tap set, an engine's run reports every kernel node output it materialized, right
 * after computing it, as a plain row-major tensor: the reference engine each node's output,
 * the oneDNN engine each value a primitive wrote (copied out of its blocked layout). Outputs
 * that exist in no buffer (folded into another primitive's post-ops) are reported with value
 * NULL and `fused_into` naming that primitive. If the tap changes the tensor's data and
 * returns true, the engine writes it back before going on (a test's perturbation). */
typedef struct rt_json_tap_point {
    const char *symbol;           /* the graph (region) */
    const rt_json_node *node;     /* the kernel node whose output this is */
    uint32_t nid, index;          /* node id, output index */
    int prim;                     /* index of the engine primitive that wrote it; -1: none */
    const char *prim_kind;        /* "convolution", ...; NULL for the reference engine */
    const char *prim_impl;        /* the implementation ("brg:avx512_core"); NULL likewise */
    const char *fused_into;       /* value NULL: what it was folded into */
} rt_json_tap_point;
typedef bool (*rt_json_tap_fn)(const rt_json_tap_point *p, rt_tensor *value, void *user);
/* fn NULL turns the tap off. Taps slow a run down; they are for debugging. */
void rt_json_graph_set_tap(rt_json_graph *g, rt_json_tap_fn fn, void *user);
rt_json_tap_fn rt_json_graph_tap(const rt_json_graph *g, void **user);
/* The graph's per-primitive profiler (rt_module_i set_profiler; a specialization reads its
 * symbolic graph's): an engine that runs primitives reports each to it. fn NULL: off. */
void rt_json_graph_set_profiler(rt_json_graph *g, rt_prim_profile_fn fn, void *user);
rt_prim_profile_fn rt_json_graph_profiler(const rt_json_graph *g, void **user);
/* Sets (or clears) the tap on every graph of every JSON-runtime module in m's external_mods;
 * returns the number of graphs. */
struct ir_module;
uint32_t rt_json_module_set_taps(const struct ir_module *m, rt_json_tap_fn fn, void *user);

/* The reference engine: every kernel node runs the reference kernel of its op. */
extern const rt_json_engine rt_json_reference_engine;

/* A module over n graphs (takes ownership of them; the array is copied). eng NULL: reference;
 * opts: the engine's options (copied), NULL: its defaults. */
rt_module *rt_json_module_new(const char *name, const rt_json_engine *eng, const void *opts,
                              rt_json_graph *const *graphs, uint32_t n);
/* Prepares every static graph of a module made by rt_json_module_new / load now, as its first
 * call would (codegens call it so that an engine's rejection surfaces at compile time); the
 * module's graphs are disposable (see "Constant ownership"). GR_OK for another kind of module. */
gr_status rt_json_module_prepare(rt_module *m, gr_diag *d);
/* For an artifact: prepares each static graph of m that is not prepared yet with fn as its pack
 * sink (the packs go to fn one by one, in graph then record order), then releases that state:
 * the prepacked weights are written as they are made instead of being held all at once. The
 * graphs stay unprepared (a call prepares them as usual). GR_OK when m is no json module. */
gr_status rt_json_module_stream_packs(rt_module *m, rt_json_pack_sink fn, void *user, gr_diag *d);
/* Prepares each static graph of m that is not prepared yet as a first call would, then releases
 * that state (rt_json_graph_will_run false meanwhile): what a load of an artifact checks
 * (graft build's check load). The graphs stay unprepared. GR_OK when m is no json module. */
gr_status rt_json_module_check(rt_module *m, gr_diag *d);
/* The engine of a module made by rt_json_module_new / load: its kind and version (NULL when it
 * has none), what the blob says as "kind" and "engine_version"; false for another module. */
bool rt_json_module_engine(rt_module *m, const char **kind, const char **version);
/* The engine state of static graph i once prepared (borrowed), else NULL. */
void *rt_json_module_state(rt_module *m, uint32_t i);
/* Graph i of a module made by rt_json_module_new / load (borrowed), NULL past the end or for
 * another kind of module. */
rt_json_graph *rt_json_module_graph(rt_module *m, uint32_t i);
/* Module blob: {"kind", "graphs": [{"symbol", "graph", "consts": [names], "packs": [{"key",
 * "const"}]}]} (constants travel separately, as TVM's ConstLoaderModule does); load resolves
 * them by name and inits; a pack whose constant is not provided is left out. */
gr_status rt_json_module_load(const uint8_t *buf, size_t len, const rt_json_engine *eng, const void *opts,
                              rt_tensor *(*consts)(const char *name, void *user), void *user,
                              rt_module **out, gr_diag *diag);

#endif
