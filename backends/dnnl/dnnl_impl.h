/* Internal state of the oneDNN engine, shared by its files, each calling only those below it:
 * dnnl_engine.c (the driver: plan, prepare, run) over dnnl_composite.c and the op table
 * (dnnl_ops.c, handlers in dnnl_op_*.c, dnnl_rnn.c), which sit over dnnl_postops.c
 * (post-op chains), dnnl_node.c (node queries) and dnnl_prim.c (values, primitives, reorders,
 * constants). */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_IMPL_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

#include "ir/ctx.h"
#include "backends/dnnl/dnnl.h"

/* Value kinds: region input / output (bound per run), constant (the graph's constant data: a
 * constant still read after prepare, by a primitive or a debug tap, is retained by the state,
 * see dn_state.held; the others may be released by the graph, see rt_json_graph_release_const),
 * owned (engine-owned, e.g. reordered weights), temporary (in the planned arena). */
enum { V_IN, V_OUT, V_CONST, V_OWNED, V_TMP };

typedef struct dn_val {
    int kind;
    int ext;                      /* input / head index for V_IN / V_OUT */
    dnnl_memory_desc_t md;
    void *ptr;                    /* V_CONST / V_OWNED data */
    int alias;                    /* >= 0: shares the memory of that value (reshape) */
    size_t boff;                  /* an alias: its bytes start this far into its base's (a
                                     concat source written into its slot of the output) */
    bool inplace;                 /* an alias a primitive writes over its base's data (a residual
                                     accumulated in place): a value of its own for the debug taps */
    int copy_of;                  /* value + 1 this one is a reordered copy of (cache) */
    int first, last;              /* primitive indices of first and last use */
    size_t off;                   /* arena offset (V_TMP roots) */
} dn_val;

typedef struct dn_arg {
    int arg;                      /* DNNL_ARG_* */
    int val;                      /* value id; -2: scratchpad */
    dnnl_memory_desc_t md;        /* how the primitive sees it (may differ from the value's) */
    dnnl_memory_t mem;
    size_t need;                  /* C code (dn_emit_fn): the bytes it reads or writes from the
                                     start of the value's memory (0: the whole md) */
} dn_arg;

/* A primitive of the engine's own C code (dnnl_wino.c): fn(ctx, ptrs) with ptrs[i] the data of
 * args[i]; it runs on the calling thread and starts its own parallel regions. */
#define DN_FN_MAX_ARGS 8
typedef dnnl_status_t (*dn_fn)(void *ctx, void *const *ptrs);

typedef struct dn_prim {
    dnnl_primitive_t prim;        /* NULL: fn, or not made yet (pd) */
    dnnl_primitive_desc_t pd;     /* until the primitive is made: after the build for those a
                                     plain run executes, on the first tapped run for the pruned */
    dn_fn fn;
    void *ctx;                    /* fn's, freed with the state by ctx_free */
    void (*ctx_free)(void *ctx);
    int nargs;
    dn_arg *args;
    dnnl_exec_arg_t *exec;
    const char *layer;
    char impl[40];                /* oneDNN's implementation name ("jit:avx2", "ref:any", ...) */
    const char *kind;             /* "convolution", "reorder", ... */
    const char *ref_why;          /* an impl on ref: why no faster one was found (static text) */
    bool serves;                  /* a reorder serving its consumer (counted in stats.nreorders) */
    bool pruned;                  /* nothing a plain run reads: skipped there, run by a tapped run
                                     (its values observable, dnnl_debug.c) */
    GR_VEC(const rt_json_node *) nodes;   /* the kernel nodes it computes (node first) */
    GR_VEC(const char *) layers;          /* their span sources, distinct, owned (after build) */
} dn_prim;

typedef struct dn_ext {
    dnnl_memory_t mem;
    bool is_input;
    int index;
} dn_ext;

typedef struct dn_entry {
    const rt_json_node *node;
    uint32_t index;
} dn_entry;

enum { STEP_ELTWISE, STEP_BINARY };

/* One post-op: the nodes it folds and the entry it produces. */
typedef struct dn_step {
    int kind;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    int src1;                     /* binary: entry of the other operand */
    int nnodes;
    const rt_json_node *nodes[8];
    int out;
} dn_step;

#define DN_MAX_STEPS 8

/* A float32 value a quantize -> dequantize pair wrote (dnnl_op_quant.c), and the levels it
 * dequantized: val = s * (levels - zp). */
typedef struct dn_qlevels {
    int val, levels;
    float s;
    int32_t zp;
    dnnl_data_type_t qt;
} dn_qlevels;

/* A float32 weight the import left as a dequantize of constant levels (dnnl_op_quant.c):
 * entry ent is (levels - zp[c]) * s[c] with c the index along `axis` (-1: one zero point and
 * scale for the whole tensor, n = 1). No value computes it: an int8 convolution reads the
 * levels, a float op the float32 weight made when it is built (dn_q_weight_val). */
typedef struct dn_qweight {
    int ent;
    int levels;                   /* the levels' constant value (s8 / u8) */
    int axis;
    int64_t n;
    float *zp, *s;                /* n each (one allocation, zp first) */
} dn_qweight;

/* An entry a scaling by a constant computes (x * s, x / c) that no primitive writes: the one
 * matmul reading it reads x (value val) and scales its product by s (dn_fold_scale). */
typedef struct dn_scaled {
    int ent, val;
    float s;
} dn_scaled;

/* The fused composite whose anchor a handler builds (dn_composite): its post-op steps and, for
 * "dense", the entry of the weights read transposed (else -1). */
typedef struct dn_comp {
    const dn_step *steps;
    int k;
    int b;
} dn_comp;

/* dnnl_threads.c: the calling thread's OpenMP team for the length of a region's prepare or
 * run: `threads` (its model's dnnl.threads), or the caller alone when single; with bind, the
 * team pinned one thread per CPU (see there). end puts the caller's own setting back. */
typedef struct rt_dnnl_team {
    int saved_n;      /* the caller's team size, restored at the end (0: nothing to restore) */
    bool pinned;
    cpu_set_t saved_mask; /* the caller's own mask, restored at the end */
} rt_dnnl_team;
void rt_dnnl_team_begin(rt_dnnl_team *t, int threads, bool single, bool bind);
void rt_dnnl_team_end(rt_dnnl_team *t);
/* Runs fn(ctx, ithr, nthr) on every thread of oneDNN's OpenMP team (the calling thread alone
 * when libgomp is not there). */
void rt_dnnl_parallel(void (*fn)(void *ctx, int ithr, int nthr), void *ctx);

/* Node nid made something of graph constant c (dn_const_made): a pure layout change of it
 * (inv: a float32 reorder, undone at load for another CPU) or anything else. */
typedef struct dn_const_use {
    uint32_t c, nid;
    bool inv;
    bool plain;   /* a handler read its plain data (dn_const_data): kept plain whoever reads it */
} dn_const_use;

typedef struct dn_state {
    rt_json_graph *g;
    rt_dnnl_opts opts;
    const char *symbol;
    gr_diag *diag;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr_plain;   /* user scratchpad, no post-ops */
    pthread_mutex_t lock;
    const rt_json_node *node0;
    uint32_t building;            /* node the build loop is at (a composite's first): the nodes
                                     before it are built */
    uint32_t nent;
    int *ent_val;                 /* entry -> value (-1: none yet / not float32) */
    dn_entry *ent_node;
    bool *is_head;
    GR_VEC(const rt_json_node *) *cons;   /* entry -> distinct kernel consumers */
    bool *consumed;               /* node folded into an earlier primitive */
    uint32_t *row_ptr_of;         /* node -> first entry */
    GR_VEC(dn_val) vals;
    GR_VEC(dn_prim) prims;
    GR_VEC(dn_ext) exts;
    GR_VEC(void *) owned;
    GR_VEC(rt_tensor *) held;     /* graph constants read after prepare (one reference each) */
    GR_VEC(dn_const_use) const_uses;      /* while building: what each node made of a constant */
    void *pack_buf;               /* an artifact build's streamed packs, one at a time (reused) */
    size_t pack_buf_bytes;
    struct dn_cst *csts;          /* while building: the graph's constants (dnnl_engine.c) */
    size_t untrimmed;             /* bytes of constants released since the heap was last trimmed */
    size_t scratch_bytes;
    void *arena, *scratch;
    rt_dnnl_stats stats;
    int pending_sum;              /* entry the sum post-op of the attrs being built adds */
    bool small;                   /* every tensor is small: run single-threaded */
    int threads;                  /* its team (opts.threads, 0 resolved): built and run with */
    bool ftz;                     /* flush denormals while running (dnnl.denormals=1: keep) */
    bool sum_ok;                  /* the caller handles pending_sum (finish) */
    bool bf16;                    /* opts.bf16 on a CPU with bfloat16 kernels (dnnl.h "bf16") */
    int pending_out;              /* entry a folded bias add produced (see take_bias) */
    GR_VEC(const rt_json_node *) pend;    /* nodes folded into the next primitive emitted */
    const char *ref_why;          /* why the next primitive may stay on ref (see dn_emit) */
    struct dn_tap_plan *tap;      /* dnnl_debug.c: where each entry can be read (first tapped run) */
    /* concats in place (dnnl_op_data.c): entry -> the entry of the concat whose output buffer
     * holds it (-1: none) and its byte offset there; a buffer's entry -> its value once made */
    int *slot_root;
    size_t *slot_off;
    int *slot_buf;
    /* pixel-shuffle deconvolutions whose interleave their reader (another one) does
     * (dnnl_op_conv.c): the entry (its value the 1x1 convolution's result, an image of
     * (N, O, H, W * kh * kw)) and the kernel */
    struct {
        int e;
        int64_t kh, kw;
    } pix_defer[4];
    int npix_defer;
    GR_VEC(dn_qlevels) qlevels;   /* values quantize -> dequantize pairs wrote */
    GR_VEC(dn_qlevels) qents;     /* entries an int8 primitive wrote as the levels of the quantize
                                     that reads them (val: the entry; it has no float value) */
    GR_VEC(dn_scaled) scaled;     /* scalings a matmul applies (dn_fold_scale) */
    float out_scale;              /* output scale of the primitive being made (0: none) */
    GR_VEC(dn_qlevels) qdeq;      /* entries multiply(subtract(cast of levels, zp), s) computes:
                                     the levels they dequantize (val: the entry) */
    GR_VEC(dn_qweight) qweights;  /* weights kept as their levels (dnnl_q_weight.c) */
} dn_state;

const char *dnnl_status_str(dnnl_status_t s);
gr_status dn_fail(dn_state *S, const rt_json_node *n, dnnl_status_t ds, const char *what);
void dn_plain_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims);
/* The index of the graph constant whose value is root (while building), else -1. */
int dn_const_index(const dn_state *S, int root);
/* The plain data of value v's root, as every handler reads a constant's bytes (NULL: none, as
 * a run-time input or a constant released after its consumers). A graph constant read so is
 * kept plain in an artifact; one stored only prepacked is laid out plain from its pack first
 * (NULL with the diagnostic set when that fails). */
const void *dn_const_data(dn_state *S, int v);
/* The failure of node n whose constant had no data (dn_const_data NULL). */
gr_status dn_const_missing(dn_state *S, const rt_json_node *n);
/* Whether a pack keyed `key` was made by this oneDNN on this ISA (dnnl_prim.c). */
bool dn_pack_current(const char *key);
/* ... and for node `node`'s use of graph constant c. */
bool dn_pack_for(const char *key, uint32_t node, uint32_t c);
/* Graph constant c (value root), stored only prepacked, laid out plain from its pack now
 * (rt_json_graph_deferred_pack; drop_pack: that pack is not read in place here): an error
 * under another oneDNN ("rebuild") or when its stored layout does not describe its pack. */
gr_status dn_const_plain(dn_state *S, const rt_json_node *n, uint32_t c, int root, bool drop_pack);
void dn_plain_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md);
void dn_plain_expand(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int nd);
bool dn_is_plain(const dnnl_memory_desc_t *md);
/* md rewritten as the plain layout when its memory is laid out as that one */
void dn_md_canon(dnnl_memory_desc_t *md);
/* md with a dim of 1 inserted at / removed from axis, over the same memory (false: oneDNN
 * cannot express it) */
bool dn_md_unsqueeze(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int axis);
bool dn_md_squeeze(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md, int axis);
int dn_val_new(dn_state *S, int kind, const dnnl_memory_desc_t *md);
int dn_alias_new(dn_state *S, int base, const dnnl_memory_desc_t *md);
int dn_root(const dn_state *S, int v);
/* Where value v's bytes start in its root's: the sum of boff along its aliases. */
size_t dn_val_boff(const dn_state *S, int v);
void *dn_owned_alloc(dn_state *S, size_t bytes);
/* 64-byte aligned memory; from 2 MiB on, 2 MiB aligned with its whole 2 MiB pieces on
 * transparent huge pages (a hint; no memory is added). free() frees it. */
void *dn_huge_alloc(size_t bytes);
/* Frees what the engine made and owns (S->owned, the shared weights): a constant in a shared
 * chunk (dnnl_prim.c) or an allocation of its own. */
void dn_const_free(void *p);
gr_status dn_emit(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, const dn_arg *args, int nargs,
                  bool reorder);
/* The contract of C code of ours (GEMV, Winograd), on top of the graph's (rt_json_graph_check):
 * it reads or writes `bytes` from the start of value v's memory (-2: the scratchpad), which
 * must hold them; else fails naming node n and `who`. */
gr_status dn_need(dn_state *S, const rt_json_node *n, int v, size_t bytes, const char *who);
/* Appends a primitive of C code (see dn_fn; at most DN_FN_MAX_ARGS args); ctx is the state's
 * from here on (ctx_free'd with it, also on failure). Each arg's `need` bytes (its md's size
 * when 0) are checked with dn_need first. */
gr_status dn_emit_fn(dn_state *S, const rt_json_node *n, dn_fn fn, void *ctx, void (*ctx_free)(void *), const char *kind,
                     const char *impl, const dn_arg *args, int nargs);
/* Executes primitive p (a oneDNN primitive or C code). */
dnnl_status_t dn_exec(dn_state *S, dn_prim *p);
/* Makes primitive p from its pd (dn_emit defers it: a pruned one is made only when a tapped
 * run needs it). */
dnnl_status_t dn_prim_make(dn_prim *p);
/* The layout of `like` (same tag: blocked nChw8c / nChw16c, channels-last, plain) for dims
 * `dims`; false when like's layout is none of the tags tried. */
bool dn_md_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *like, int nd, const int64_t *dims);
/* Channels-last md (acb, acdb, acdeb; plain below 3 dims) of dims of md. */
void dn_channels_last(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md);
/* oneDNN's implementation name of pd; true when it is a reference kernel. */
bool dn_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* *pd on brdgmm_dw: replaced by the same op's jit_dw descriptor (desc, attr) with the same src
 * and dst layouts, when oneDNN has one (see dnnl.dw_jit). */
void dn_pd_prefer_jit_dw(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr, dnnl_engine_t eng,
                         dnnl_primitive_desc_t *pd);
gr_status dn_as(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *want, int *out);
/* Makes dst (md dmd) from constant src (md smd); ctx: its own. */
typedef gr_status (*dn_make_fn)(dn_state *S, const rt_json_node *n, const dnnl_memory_desc_t *smd, const void *src,
                                const dnnl_memory_desc_t *dmd, void *dst, void *ctx);
/* Constant value v (graph constant or engine-owned) made into a buffer of md dmd by make, once
 * for every specialization of a symbolic graph (the shared cache, keyed by make, v's data and
 * both mds), else engine-owned; counted in the weight bytes. */
gr_status dn_const_made(dn_state *S, const rt_json_node *n, int v, const dnnl_memory_desc_t *dmd, dn_make_fn make,
                        void *ctx, void **out);
/* md with data type dt: a plain, blocked or `any` md (strides count elements, not bytes). */
void dn_md_dt(dnnl_memory_desc_t *md, dnnl_data_type_t dt);
/* v in the plain layout of its data type: v itself, a view of v's buffer when its layout has
 * the bytes of plain row-major, else a reorder (dn_as). */
gr_status dn_plain(dn_state *S, const rt_json_node *n, int v, int *out);
/* Constant data of `bytes` at p read in place: its whole 2 MiB pieces onto transparent huge
 * pages (a hint, see dnnl_engine.c) */
void dn_hugepages(const void *p, size_t bytes);
/* Appends pd's src and weights, values xv and wv each in the layout pd wants (a reorder when
 * it is not theirs), to args; destroys pd when that fails. */
gr_status dn_src_weights(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, int xv, int wv, dn_arg *args,
                         int *na);

/* dnnl_engine.c: while building, the graph's constant that entry e is (any dtype), or NULL. */
rt_tensor *dn_const_tensor(dn_state *S, int e);

/* The entry of n's first output. */
static inline int dn_out_entry(const dn_state *S, const rt_json_node *n) { return (int)S->row_ptr_of[n - S->node0]; }
int dn_in_entry(dn_state *S, const rt_json_node *n, uint32_t k);
int dn_arg_entry(dn_state *S, const rt_json_node *n, uint32_t k);
bool dn_arg_num(const rt_json_node *n, uint32_t k, double *v);
/* The oneDNN binary algorithm of a binary op (IR_OP_ADD; undef for others) and whether it
 * commutes. */
/* The engine's columns of backends/dnnl/dnnl_op_table.h for an op id, NULL when it is not in the table. */
typedef struct dn_op_row {
    bool in_table;
    int kind;                     /* DN_K_* */
    dnnl_alg_kind_t alg;
    float alpha, beta;
} dn_op_row;
const dn_op_row *dn_op_row_of(int op);
dnnl_alg_kind_t dn_binary_alg(ir_op_id op, bool *commutes);
uint32_t dn_nargs(const rt_json_node *n);
json_t *dn_attr(const rt_json_node *n, const char *key);
int64_t dn_attr_int(const rt_json_node *n, const char *key, int64_t dflt);
double dn_attr_float(const rt_json_node *n, const char *key, double dflt);
bool dn_attr_bool(const rt_json_node *n, const char *key, bool dflt);
const char *dn_attr_str(const rt_json_node *n, const char *key, const char *dflt);
int dn_attr_ints(const rt_json_node *n, const char *key, int64_t *out, int max);
bool dn_entry_f32(dn_state *S, int e);
int dn_entry_ndim(dn_state *S, int e);
const int64_t *dn_entry_shape(dn_state *S, int e);
bool dn_scalar_const(dn_state *S, int e, float *v);

bool dn_match_step(dn_state *S, int e, const rt_json_node *n, bool excl, dn_step *ps);
bool dn_step_proved(dn_state *S, int e, const dn_step *want, const bool *listed, bool *covered);
int dn_collect_chain(dn_state *S, int e, dn_step *steps, int max);
gr_status dn_step_src1(dn_state *S, const rt_json_node *n, const dn_step *st, int nd, int *val,
                       dnnl_memory_desc_t *md);
/* False when a binary operand among the first k steps is one oneDNN 2.6's jit post-ops read
 * wrong with pd's dst: full-size in another layout, or broadcast other than per channel or as a
 * scalar with a blocked dst (dnnl_op_util.c). */
bool dn_src1_in_dst_layout(dn_state *S, const_dnnl_primitive_desc_t pd, const dn_step *steps, int k);
gr_status dn_make_attr(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int nd,
                       dnnl_primitive_attr_t *attr, dn_arg *args, int *nargs);
void dn_consume(dn_state *S, const dn_step *steps, int k);

/* dnnl_ops.c: builds the primitive(s) of kernel node n (and the nodes it folds); comp: n is
 * the anchor of that fused composite (else NULL). */
gr_status dn_node(dn_state *S, const rt_json_node *n, const dn_comp *comp);
/* Before the build: which entries are written straight into their slot of a concat's output
 * buffer (channel concats of one image in the ISA's blocked layout), and which concats are
 * views of a larger one's buffer (DenseNet's growing concats). */
void dn_concat_plan(dn_state *S);
/* The md entry e has in its concat slot (true), or false when e has none. */
bool dn_slot_md(dn_state *S, int e, dnnl_memory_desc_t *md);
/* A value for entry e in its slot (dn_slot_md true), viewing the concat's buffer. */
int dn_slot_val(dn_state *S, int e);

/* dnnl_composite.c: a fused composite from its annotation (see dnnl.h) on its first node. */
json_t *dn_composite_annotation(const rt_json_node *n);
bool dn_in_composite(const rt_json_node *n);
gr_status dn_composite(dn_state *S, const rt_json_node *first, json_t *ann);
/* dnnl_op_quant.c: a quantized composite (backends/dnnl/dnnl_q_impl.h) from its nodes. */
gr_status dn_q_composite(dn_state *S, const rt_json_node *first, json_t *ann);
/* A fused float32 composite n with post-op steps whose sources quantize -> dequantize pairs
 * (or int8 results) wrote, on their levels: a convolution as int8 (CPUs with VNNI / AMX, or
 * weights that fit in 7 bits with a u8 source; weights on an int8 grid), a residual add or a max pooling whose result a quantize alone
 * reads as an int8 primitive writing its levels; *done, and *used steps taken (consumed);
 * else nothing built. */
gr_status dn_q_levels_op(dn_state *S, const rt_json_node *n, const dn_step *steps, int k, int *used, bool *done);
/* Weights kept as their levels (dn_qweight): notes node n (the cast of a constant's levels to
 * float32, or a subtract / multiply of such a weight by a constant along one axis) when it
 * dequantizes such a weight, building nothing; false otherwise. */
bool dn_q_weight_node(dn_state *S, const rt_json_node *n);
/* The float32 value of weight entry e kept as its levels, made now (-1: e is none, or out
 * of memory); dn_q_weight_done lets it go again when no primitive reads it (the op that
 * needed it keeps a reordered copy). */
int dn_q_weight_val(dn_state *S, int e);
void dn_q_weight_done(dn_state *S, int e);
/* The levels' constant value a weight entry kept as its levels dequantizes, else -1. */
int dn_q_weight_levels(const dn_state *S, int e);
/* Entry e is constant: a graph constant, or a weight kept as its levels (made at prepare). */
bool dn_const_entry(const dn_state *S, int e);
/* Weight entry we kept as s8 levels with one scale, or one per channel along axis cax (C of
 * them), and no zero point: the levels' value, their scales into ws (may be NULL); else -1. */
int dn_q_weight_int8(dn_state *S, int we, int cax, int64_t C, float *ws, bool *per_tensor);
/* A new engine-owned constant value of md with data (copied). */
int dn_q_owned_val(dn_state *S, const dnnl_memory_desc_t *md, const void *data);
/* Frees owned value v's data once its reordered copy `copy`, an engine-owned buffer of its
 * own, holds the weights (no primitive reads v; a copy from a cache shared by a symbolic
 * graph's specializations keeps v: the cache may key on it). */
void dn_q_drop_owned(dn_state *S, int v, int copy);
/* dnnl_u8 / dnnl_s8 for an 8-bit integer type, else undef. */
dnnl_data_type_t dn_q_dt(DLDataType t);
/* A dense tensor of md's dims in md's layout (plain when none dn_md_like knows), of type dt. */
void dn_q_dense_like(const dnnl_memory_desc_t *md, dnnl_data_type_t dt, dnnl_memory_desc_t *out);
/* The levels float32 entry e is a dequantize of (*out; its val unused), else false. */
bool dn_q_levels_of(dn_state *S, int e, dn_qlevels *out);
/* dnnl_q_lut.c: the levels of the quantize qn (scale qs, zero point qzp, type qt) of entry xe
 * through a 256-entry table when xe is an element-wise float32 function of one dequantized
 * tensor's levels (MobileNetV3's hard-swish), the table's primitive emitted; else NULL. */
const dn_qlevels *dn_q_lut_levels(dn_state *S, const rt_json_node *qn, float qs, float qzp, dnnl_data_type_t qt, int xe);
/* One step as its own primitive on value v (post-ops oneDNN would not fuse). */
gr_status dn_emit_step(dn_state *S, const rt_json_node *n, int v, const dn_step *st, int *out);
/* dnnl_ops.c: the eltwise / binary primitive of step `first` on value xv with the post-op steps
 * [kmin, k) it takes (*kused), in the first layouts that get a jit kernel; consume: fold the
 * steps taken (else only first's node is recorded as computed). *out: the output value. */
gr_status dn_elem_prim(dn_state *S, const rt_json_node *n, const dn_step *first, int xv, const dn_step *steps, int k,
                       int kmin, bool consume, int *out, int *kused);

/* An op graft's own kernels apply to their results after the bias (dnnl_avx2_impl.h). */
enum { DN_VOP_SUM, DN_VOP_RELU, DN_VOP_LINEAR, DN_VOP_CLIP, DN_VOP_HARDSWISH };
typedef struct dn_vop {
    int kind;
    float alpha, beta;            /* relu: slope; linear: y = alpha x + beta; clip: [alpha, beta];
                                     sum: adds a residual tensor of the result's shape */
} dn_vop;
#define DN_VOP_MAX 4

/* dnnl_wino.c: Winograd F(m x m, 3x3) over the two spatial dims of a 2-D or 3-D convolution
 * (direct over depth), AVX2 + FMA only; see there. */
/* Where channel c of pixel (n, d, h, w) of a src / dst is: n n + (c / blk) cb + d d + h h + w w
 * + c % blk (blocked nC[d]hw8c: blk 8; channels-last: blk 1, cb 1). */
typedef struct dn_wino_lay {
    int64_t n, cb, d, h, w;
    int blk;
} dn_wino_lay;
typedef struct dn_wino {
    int m;                        /* output tile m x m: 2 or 4 */
    int kd;                       /* depth taps: 1 (2-D) or 3 */
    int64_t N, C, D, H, W, O, OD, OH, OW, pf, pt, pl; /* pf, pt, pl: front, top and left padding */
    int64_t tr, tc, Q;            /* tile rows and columns of an image; Q = N tr tc tile columns
                                     (each over every depth) */
    int64_t Cp, Op;               /* C and O rounded up to 8 */
    int64_t chunk;                /* tile columns per pass: V and M hold one pass's */
    dn_wino_lay src, dst;         /* dst's also the residual's */
    const float *bias;            /* Op floats (padding 0), or NULL */
    int nops;
    dn_vop ops[DN_VOP_MAX];      /* after the bias, in order */
    /* the batched matmul V [a*a][OD P][kd Cp] x U [a*a][kd Cp][Op] -> M [a*a][OD P][Op] of a
     * pass of P tile columns ([1]: of the last pass, when it has fewer): row od P + j of V holds
     * the input depths od + t - pf, t < kd, side by side (0 outside the input). Its memories V,
     * U, M, scratchpad (handles of V, M and the scratchpad set per pass) */
    dnnl_stream_t stream;
    dnnl_primitive_t mm[2];
    dnnl_memory_t mem[2][4];
    int ix_res, ix_v, ix_m, ix_scratch; /* their index in the primitive's args (-1: none) */
} dn_wino;
/* U [a*a][kd][Cp][Op] (padding 0) of weights w read at strides wstr (O, I, kd, kh, kw). */
void dn_wino_weights(const dn_wino *p, const float *w, const int64_t *wstr, float *u);
/* dn_fn: ptrs[0] src, ptrs[1] dst (layouts p->src, p->dst), the others at p's ix_*. */
dnnl_status_t dn_wino_run(void *ctx, void *const *ptrs);
void dn_wino_free(void *ctx);

/* dnnl_gemv.c: y[M][N] = x[M][K] . W[K][N] (+ bias, + eltwise ops) for few rows, W read in
 * place (AVX2 + FMA only; see there). */
typedef struct dn_gemv {
    int64_t M, K, N;
    int64_t ldw;                  /* W: row-major K x N, rows ldw floats apart */
    int ix_w;                     /* index of W in the primitive's args */
    int ix_part, nparts;          /* index of the workspace of nparts partial results (M x N
                                     floats each; nparts: the team's size) */
    int ix_bias;                  /* index of the bias (N floats) in the primitive's args, or -1 */
    int nops;
    dn_vop ops[DN_VOP_MAX];      /* after the bias, in order (no sum) */
} dn_gemv;
/* dn_fn: ptrs[0] x, ptrs[1] y (plain row-major), the others at p's ix_*; ctx freed by free */
dnnl_status_t dn_gemv_run(void *ctx, void *const *ptrs);

/* dnnl_qgemv.c: y[N] = ((x[K] - zp) . W[K][N]) * osc[N] (+ bias, + eltwise ops) of u8 levels x
 * and s8 levels W, summed exactly in 32 bits, below VNNI (AVX2 + FMA only; see there). */
typedef struct dn_qgemv {
    int64_t K, N;
    int32_t zp;
    int8_t *w;                    /* dn_qgemv_pack's panels, owned */
    float *osc, *bias;            /* N each, one allocation (osc, owned); bias NULL or osc + N */
    int nops;
    dn_vop ops[DN_VOP_MAX];      /* after the bias, in order (no sum) */
} dn_qgemv;
/* W (K x N, element (k, n) at w[k sk + n sn]) as the kernel's panels; NULL when out of memory */
int8_t *dn_qgemv_pack(const int8_t *w, int64_t K, int64_t N, int64_t sk, int64_t sn);
/* dn_fn: ptrs[0] x (K bytes), ptrs[1] y (N floats), ptrs[2] a workspace of (K + 1) / 2 int32 */
dnnl_status_t dn_qgemv_run(void *ctx, void *const *ptrs);
void dn_qgemv_free(void *ctx);

/* dnnl_dw1d.c: depthwise 1-D convolution, stride 1, no dilation, on plain N x C x W data (AVX2
 * + FMA only; see there). */
typedef struct dn_dw1d {
    int64_t N, C, W, OW, K, pl;   /* OW = W + pl + pr - K + 1; pl: left padding */
    const float *w;               /* C x K, the engine's */
    const float *bias;            /* C floats, the engine's, or NULL */
    int nparts;                   /* workspace rows: the team's size */
    int nops;
    dn_vop ops[DN_VOP_MAX];      /* after the bias, in order (no sum) */
} dn_dw1d;
/* floats of a thread's workspace row: a row of x between its zero padding, rounded up */
int64_t dn_dw1d_row(const dn_dw1d *p);
/* dn_fn: ptrs[0] x, ptrs[1] y, ptrs[2] workspace (nparts rows); ctx freed by free */
dnnl_status_t dn_dw1d_run(void *ctx, void *const *ptrs);

/* dnnl_pool.c: 2-D max pooling on nChw8c src / dst (AVX2 only; see there). Every output's
 * window holds at least one input. Average pooling when avg > 0: the window's sum times avg
 * (every window inside the input). */
typedef struct dn_pool {
    int64_t N, Cb, H, W, OH, OW;  /* Cb: blocks of 8 channels */
    int64_t kh, kw, sh, sw, dh, dw, pt, pl; /* dh, dw: dilation (1: none); pt, pl: top and left padding */
    float avg;                    /* 1 / window size, or 0: max */
} dn_pool;
/* the widest window (in input columns, dilation included) and the most rows it may have */
#define DN_POOL_SPAN 256
#define DN_POOL_ROWS 64
/* dn_fn: ptrs[0] src, ptrs[1] dst */
dnnl_status_t dn_pool_run(void *ctx, void *const *ptrs);

/* dnnl_rnn.c: relax.nn.lstm / gru / rnn as one oneDNN RNN primitive. */
gr_status dn_rnn(dn_state *S, const rt_json_node *n);

/* dnnl_debug.c: a run that reports intermediates to the graph's tap (rt_json_graph_set_tap):
 * executes the primitives one by one, copying out each value after the primitive that wrote
 * it. S->lock held, external memories bound. */
dnnl_status_t dn_debug_run(dn_state *S, rt_json_tap_fn tap, void *user, uint32_t *failed);
void dn_debug_free(dn_state *S);

#endif
