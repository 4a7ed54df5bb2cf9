/* Internal to the JSON runtime (json_runtime.c, json_ref_engine.c, json_contract.c,
 * json_specialize.c): the graph itself and helpers they share. runtime/ only. */
#ifndef GRAFT_RUNTIME_JSON_JSON_IMPL_H
#define GRAFT_RUNTIME_JSON_JSON_IMPL_H

#include "runtime/json/json_runtime.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/vec.h"

struct rt_json_graph {
    char *symbol;
    char *text;
    size_t text_len;
    json_t *doc;                  /* NULL until needed when built from text (rt_json_graph_finish) */
    atomic_bool doc_ready;        /* every node's attrs points into doc */
    pthread_mutex_t doc_lock;
    uint32_t nnodes;
    rt_json_node *nodes;
    uint32_t *row_ptr;            /* nnodes + 1 */
    uint32_t ninputs;
    uint32_t *input_nids;
    uint32_t nheads;
    rt_json_entry *heads;
    uint32_t nconsts;
    uint32_t *const_nids;
    rt_tensor **consts;           /* NULL once released (rt_json_graph_release_const) */
    bool initialized;
    bool consts_disposable;       /* its engine may release constants it made copies of */
    bool symbolic;                /* some dim is an expression (specialized per call shapes) */
    /* a symbolic graph: what its engine shares between the specializations */
    pthread_mutex_t shared_lock;
    void *shared;
    void (*shared_free)(void *);
    struct rt_json_graph *root;   /* a specialization: the symbolic graph it came from */
    uint32_t *consumers;          /* per entry: kernel uses + heads */
    /* one block per kind for all nodes (node arrays point into them) */
    rt_json_entry *in_pool;       /* node inputs */
    DLDataType *dt_pool;          /* per entry */
    int32_t *nd_pool;
    int64_t (*sh_pool)[RT_MAX_NDIM];
    char *str_pool;               /* names and layers of built graphs */
    /* while building (rt_json_graph_begin .. finish) */
    struct rt_json_build *build;
    rt_json_tap_fn tap;           /* debug tap (rt_json_graph_set_tap) */
    void *tap_user;
    rt_prim_profile_fn prof;      /* per-primitive profiler (rt_json_graph_set_profiler) */
    void *prof_user;
    struct rt_json_pack *packs;   /* prepacked constants (rt_json_graph_pack_*) */
    uint32_t npacks, nprovided, nused, nremade;
    bool *deferred;               /* per constant: kept only as a pack (rt_json_graph_defer_const) */
    uint32_t nrecovered;          /* deferred constants laid out plain again at load */
    rt_json_pack_sink pack_sink;  /* set while rt_json_module_stream_packs prepares the graph */
    void *pack_sink_user;
    bool checking;                /* prepared by rt_json_module_check: released unrun */
};

typedef struct rt_json_pack {
    char *key;
    const void *data;
    size_t bytes;
    rt_tensor *t;                 /* provided: the stored form (data points into it) */
    int32_t plain;                /* a pure layout change of this constant (index), else -1 */
    char *layout;                 /* ... and what the engine needs to undo it (heap) */
} rt_json_pack;

typedef struct rt_json_build {
    GR_VEC(rt_json_node) nodes;
    GR_VEC(uint32_t) rows;        /* row_ptr */
    GR_VEC(uint32_t) in_off, name_off, layer_off;
    GR_VEC(rt_json_entry) ins;
    GR_VEC(DLDataType) dts;
    GR_VEC(int32_t) nds;
    GR_VEC(int64_t) shs;          /* RT_MAX_NDIM per entry */
    GR_VEC(char) strs;
    GR_VEC(rt_json_entry) heads;
} rt_json_build;

/* "json runtime 'sym': malformed graph: what" */
gr_status rt_json__bad(gr_diag *d, const char *sym, const char *what);
/* g's JSON document, parsed once on first need (nodes' attrs point into it); false if it cannot be */
bool rt_json__graph_doc(rt_json_graph *g);
/* t has the dtype and shape node n declares for its output o */
bool rt_json__matches_node(const rt_json_node *n, uint32_t o, const DLTensor *t);

/* The "op_attrs" of kernel node n decoded against def's schema and normalized (defaults filled
 * in, in schema order), allocated in ctx. An error names the graph, the node and its layer. */
gr_status rt_json__op_attrs(ir_ctx_t *ctx, const rt_json_graph *g, uint32_t nid, const rt_json_node *n,
                            const ir_op_def *def, const ir_attrs **out, gr_diag *d);

#endif
