/* The oneDNN engine of the JSON runtime (runtime/json/json_runtime.h): runs a region's graph of
 * op-level kernel nodes ("relax.nn.conv2d", "relax.add", ...) with oneDNN primitives.
 *
 * prepare (once per graph, after its constants are bound):
 *   - walks the nodes in order; convolution, deconvolution and matmul are created with
 *     dnnl_format_tag_any so oneDNN picks blocked layouts; constant weights are reordered once;
 *   - a fused composite (see "Composites" below) becomes one convolution / deconvolution /
 *     matmul primitive with the bias and post-ops its name lists, read from the codegen's
 *     annotation: per-channel constants at the head (bias, an unfolded batch norm, scalar
 *     affines) fold into the weights and bias once, eltwise posts become eltwise post-ops
 *     (hard-sigmoid as linear + clip), a full-size residual add the sum post-op, a broadcast
 *     add / multiply a binary post-op. Posts oneDNN rejects (or that would push it onto its
 *     reference kernels) run as their own primitives after it. A stride == kernel 2-D
 *     transposed convolution is a 1x1 convolution + an interleaving reorder (oneDNN 2.6's own
 *     deconvolution kernels were very slow on such shapes);
 *   - a matmul of one row with constant weights (a classifier head) runs on the engine's own
 *     kernel (dnnl_gemv.c, option gemv), its weights read in place, bias and eltwise posts fused;
 *   - a depthwise 1-D convolution (stride 1, no dilation) oneDNN has only its im2col + GEMM
 *     kernel for (AVX2: widths above jit_dw's 12) runs on the engine's own (dnnl_dw1d.c), its
 *     weights copied once, bias and eltwise posts fused;
 *   - convolutions and matmuls outside composites get no post-ops; single ops (pools, resize,
 *     softmax, eltwise, binary, ...) still take the chain of single eltwise / binary ops that
 *     follows them as post-ops (never a node of a fused composite);
 *   - activations keep the layout oneDNN chose; reorders only where a primitive needs another
 *     layout, at the region's inputs, and into the outputs (outputs written in place when the
 *     producing primitive already writes plain row-major data); a value whose layout has the
 *     bytes of plain row-major (a 1x1 map with one image or whole channel blocks) is read plain
 *     as a view; a mean / max over all spatial axes (global pooling as ONNX ReduceMean
 *     imports) is a pooling primitive in its source's layout; a stem convolution (<= 4 plain
 *     input channels) followed by a pooling reads the region input in place (oneDNN's
 *     first-convolution kernels);
 *   - never a reference kernel where a jit one exists: every primitive descriptor's
 *     implementation is queried (dnnl_query_impl_info_str); on "ref" the handler tries other
 *     layouts before keeping it -- convolutions all `any`, then channels-last src and dst;
 *     binary ops the broadcast operand in src0's layout (oneDNN's blocked nChw8c on AVX2,
 *     nChw16c on AVX-512, read from the layout it chose, never hard-coded), then channels-last;
 *     eltwise, pooling and resampling dst `any`, then channels-last; post-ops that would force
 *     ref are dropped into their own primitives. What stays on ref keeps its reason
 *     (rt_dnnl_prim, the option dnnl.debug=1 lists every primitive with its implementation);
 *   - every value's shape is checked against its node's declared shape before anything runs;
 *   - intermediate buffers share one arena planned from their lifetimes; one user scratchpad.
 *   - constants: the weights it reorders or folds are its own copies (stats.weight_bytes);
 *     the graph constants its primitives read in place (plain matmul weights, biases, binary
 *     operands) it retains (stats.const_bytes). On a disposable graph (one owned by a
 *     JSON-runtime module, runtime/json/json_runtime.h "Constant ownership") it releases the
 *     graph's reference to every constant as soon as the last node that reads it is built, so
 *     the originals and its copies of all of them never coexist (stats.released_bytes); such
 *     a graph cannot be prepared again.
 * run: binds the caller's input and output buffers and executes the primitive list on one
 * stream (serialized per graph).
 *
 * Threads: oneDNN's OpenMP team, the region's own (rt_dnnl_opts threads: size, default every
 * CPU the process may use; pinned one per CPU unless no_bind, see dnnl_threads.c for why). Set
 * on the calling thread for the length of each prepare and run, so regions of models with
 * different counts run each with its own, in one process.
 * A primitive that oneDNN rejects fails prepare with an error naming the region (symbol),
 * the node's op and its frontend layer. */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_H
#define GRAFT_BACKENDS_DNNL_DNNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/json/json_runtime.h"

/* kind "dnnl_json"; its options are an rt_dnnl_opts */
extern const rt_json_engine rt_dnnl_engine;

/* The engine's options (the dnnl backend's dnnl.* options, see backends/dnnl/dnnl_codegen.c). */
typedef enum rt_dnnl_deconv_tag {
    RT_DNNL_DECONV_NHWC,          /* 2-D transposed convolutions in channels-last (default) */
    RT_DNNL_DECONV_NCHW,          /* ... in plain NCHW */
    RT_DNNL_DECONV_ANY,           /* ... in the layout oneDNN picks */
} rt_dnnl_deconv_tag;
typedef struct rt_dnnl_opts {
    bool debug;                   /* print each region's primitives and arena plan to stderr */
    bool dump;                    /* print each region's JSON graph to stderr */
    bool denormals;               /* keep denormals (default: flushed to zero while running) */
    bool no_reuse;                /* no intermediate shares memory with another */
    bool no_fuse;                 /* no post-ops: every op its own primitive */
    bool no_pixel_deconv;         /* no 1x1 convolution + interleave for stride == kernel deconvs */
    bool transpose_weights;       /* transposed copies of constant matmul weights where gemm:jit
                                     runs a widening product with few rows on an AMD CPU
                                     (default on) */
    bool no_layout_plan;          /* each value in its producer's layout, permutes copied (no views) */
    bool winograd;                /* Winograd 3x3 stride-1 convolutions (default on): oneDNN's
                                     where it has it, graft's own below avx512_core; 3x3x3 ones
                                     graft's own at every ISA with AVX2 */
    bool gemv;                    /* matmuls of one row with constant weights on graft's own
                                     kernel (dnnl_gemv.c) where the CPU has AVX2 + FMA (default on) */
    bool matmul_1x1;              /* 2-D products with constant weights as 1x1 convolutions where
                                     oneDNN's matmul is gemm:jit (below avx512_core; default on) */
    bool dw_jit;                  /* depthwise convolutions on oneDNN's jit_dw kernel where it
                                     picks brdgmm_dw (avx512_core; default on) */
    bool bf16;                    /* dnnl.precision=bf16: convolutions and matmuls with constant
                                     weights compute in bfloat16 where oneDNN's ISA has it
                                     (rt_dnnl_bf16_isa), float32 elsewhere (see "bf16" below) */
    int64_t small_kb;             /* regions whose tensors are all below this many KiB run
                                     single-threaded; 0: never */
    int64_t threads;              /* oneDNN's team for this model's regions; 0: every CPU the
                                     process may use */
    bool no_bind;                 /* leave the team unpinned (default: one thread per CPU, for
                                     the workers for good, the caller while it runs a region;
                                     skipped with more threads than CPUs) */
    rt_dnnl_deconv_tag deconv_tag;
} rt_dnnl_opts;
#define RT_DNNL_SMALL_KB_DEFAULT 256
/* The defaults (what a NULL opts means). */
rt_dnnl_opts rt_dnnl_default_opts(void);

/* What prepare built, for tests and reports. */
typedef struct rt_dnnl_stats {
    uint32_t nprims;              /* primitives executed per run (reorders included) */
    uint32_t nreorders;           /* of which reorders */
    uint32_t nviews;              /* permutes run as views of their input, without a copy */
    uint32_t npostops;            /* post-ops fused (bias counts as one) */
    uint32_t nfused_nodes;        /* kernel nodes folded into another node's primitive */
    uint32_t ncomposites;         /* fused composites built from their annotation */
    uint32_t ncollapsed;          /* batched matmuls with shared weights run as one 2-D GEMM */
    uint32_t nint8;               /* convolutions / matmuls run on int8 levels (quantized
                                     composites, backends/dnnl/dnnl_q_impl.h) */
    uint32_t nint8_dst;           /* of which write the next quantize's levels (u8 / s8), not
                                     float32 */
    uint32_t nint8_split;         /* of which run as two (8-bit weights below VNNI,
                                     backends/dnnl/dnnl_op_quant.c) */
    size_t arena_bytes;           /* planned intermediate memory */
    size_t naive_bytes;           /* sum of all intermediate sizes (no reuse) */
    size_t scratch_bytes;
    size_t weight_bytes;          /* weights reordered and owned by the engine */
    size_t const_bytes;           /* graph constants the region still reads after prepare, in
                                     place (plain matmul weights, biases, binary operands) */
    size_t released_bytes;        /* graph constants it released after making its own copies
                                     (a disposable graph, rt_json_graph_consts_disposable) */
    uint32_t nref;                /* primitives left on oneDNN's reference kernels ("ref:any") */
    uint32_t nslots;              /* concat sources their producer wrote in place (no copy) */
    int threads;                  /* its team (1 for a small region: see rt_dnnl_opts small_kb) */
    uint32_t nbf16;               /* convolutions / matmuls computing in bfloat16 */
    bool bf16_fallback;           /* bf16 asked for, but oneDNN's ISA has none: all float32 */
} rt_dnnl_stats;
void rt_dnnl_get_stats(const void *state, rt_dnnl_stats *out);

/* One primitive of a prepared region, in execution order. A profiler set on the region's
 * module (rt_module_set_profiler, runtime/module.h) gets each with its time and team. */
typedef rt_prim_info rt_dnnl_prim_info;
uint32_t rt_dnnl_num_prims(const void *state);
/* false when i is out of range; the strings live as long as the state */
bool rt_dnnl_prim(const void *state, uint32_t i, rt_dnnl_prim_info *out);

/* Process-wide: primitives prepared so far, how many of them on reference kernels, and the
 * last of those ("region 'r', layer 'L': binary ref:any: why") into buf. */
void rt_dnnl_totals(uint64_t *nprims, uint64_t *nref, char *last_ref, size_t n);
/* Constants of symbolic regions reordered into oneDNN's layouts in this process: made (once,
 * kept for every shape of the region) and reused by a later shape's prepare. */
void rt_dnnl_shared_weights(uint64_t *made, uint64_t *reused);

/* The instruction set oneDNN's jit kernels use in this process ("avx2", "avx512_core", ...;
 * ONEDNN_MAX_CPU_ISA caps it) and the channel block of its blocked activation layouts (8 on
 * AVX2, 16 from AVX-512). */
const char *rt_dnnl_isa(void);
int rt_dnnl_channel_block(void);

/* ---- bf16 (rt_dnnl_opts bf16) ----
 * Convolutions (not transposed nor depthwise, canonical layouts) and matmuls with constant weights (not the
 * one-row products graft's GEMV takes) compute in bfloat16 with float32 accumulation: their
 * weights are converted once at prepare (the shared cache and an artifact's prepacked weights
 * are keyed by the memory descriptor, data type included), their source is converted where it
 * arrives in float32, and their result stays in bfloat16 only when every reader is such a
 * primitive that reads it as its source (conv -> conv, dense -> dense: no conversion between
 * them); else they write float32, so every other primitive, region output and concat sees
 * float32 as before. Bias, post-ops and accumulation are float32 inside oneDNN's kernels.
 * Such primitives show "/bf16" after their implementation name (rt_dnnl_prim). */
/* oneDNN's ISA in this process has bfloat16 kernels: avx512_core_bf16 or AMX (ONEDNN_MAX_CPU_ISA
 * caps it: AVX2 has none). */
bool rt_dnnl_bf16_isa(void);
/* NULL when dnnl.precision=bf16 runs in bfloat16 here; else why it runs float32 (one line). */
const char *rt_dnnl_bf16_missing(void);

/* The team a region with options o prepares and runs on (o NULL: the defaults). */
int rt_dnnl_threads(const rt_dnnl_opts *o);
/* The team oneDNN's next primitive on the calling thread gets (OpenMP's omp_get_max_threads;
 * 1 without OpenMP): inside a run, the running region's. */
int rt_dnnl_team_threads(void);

/* ---- Composites ----
 * A fused composite is named "dnnl.<anchor>[_<post>]...", e.g. "dnnl.conv2d_bias_hardswish_add":
 * the anchor says which primitive is built (convolution, deconvolution, matmul; "dense" is a
 * matmul whose weights are permute_dims(w) of the last two axes, read transposed in place), the
 * posts say which post-ops it gets, in order. The codegen (backends/dnnl) puts on the first node
 * of each fused composite an annotation "dnnl" = {"composite": name, "anchor": nid,
 * "nodes": [nid...], "post": [{"out": [nid, i], "src": [nid, i], "alpha", "beta", ...}...]}
 * with each post's output entry, tensor operand and constants; the engine builds the primitive
 * and its post-ops from the name and the annotation alone. Nodes outside fused composites
 * ("dnnl.relu", ...) are single ops. */
typedef enum rt_dnnl_anchor {
    RT_DNNL_CONV1D,
    RT_DNNL_CONV2D,
    RT_DNNL_CONV2D_TRANSPOSE,
    RT_DNNL_MATMUL,
    RT_DNNL_DENSE,
    RT_DNNL_NANCHORS
} rt_dnnl_anchor;

typedef enum rt_dnnl_post {
    RT_DNNL_BIAS,         /* + per-output-channel constant: the primitive's bias */
    RT_DNNL_AFFINE,       /* * scale + shift (or (x - m) / s * g + b), per-channel constants: an
                             unfolded batch norm, folded into the weights and bias */
    RT_DNNL_RELU,
    RT_DNNL_LEAKY_RELU,
    RT_DNNL_RELU6,
    RT_DNNL_CLIP,
    RT_DNNL_HARDSIGMOID,  /* clip(a * x + b, 0, 1): two eltwise post-ops (linear, clip) */
    RT_DNNL_HARDSWISH,    /* x * clip(x + 3, 0, 6) / 6 and x * hardsigmoid(x) forms */
    RT_DNNL_SIGMOID,
    RT_DNNL_SWISH,        /* silu, x * sigmoid(x) */
    RT_DNNL_GELU,         /* erf form */
    RT_DNNL_GELU_TANH,
    RT_DNNL_TANH,
    RT_DNNL_ELU,          /* where(x > 0, x, a * (exp(x) - 1)) */
    RT_DNNL_ADD,          /* + tensor: sum post-op (same shape) or binary add (broadcast) */
    RT_DNNL_MUL,          /* * tensor broadcast to the output: binary post-op */
    RT_DNNL_NPOSTS
} rt_dnnl_post;

#define RT_DNNL_MAX_POST 6
/* oneDNN 2.6's jit kernels computed wrong results with three or more eltwise post-ops (seen:
 * brgconv_1x1 linear+linear+clip, binary linear+hardswish+linear). */
#define RT_DNNL_MAX_ELTWISE 2

typedef struct rt_dnnl_composite {
    rt_dnnl_anchor anchor;
    int npost;
    rt_dnnl_post post[RT_DNNL_MAX_POST];
} rt_dnnl_composite;

const char *rt_dnnl_anchor_name(rt_dnnl_anchor a);   /* "conv2d", "conv2d_transpose", "dense" */
ir_op_id rt_dnnl_anchor_op(rt_dnnl_anchor a);        /* IR_OP_CONV2D, ..., IR_OP_MATMUL */
const char *rt_dnnl_post_name(rt_dnnl_post p);       /* "bias", "hardswish", ... */
/* oneDNN eltwise post-ops a post takes (hardsigmoid 2, bias / affine / add / mul 0). */
int rt_dnnl_post_eltwise(rt_dnnl_post p);
/* Parses "dnnl.conv2d_bias_relu"; false for a name that is not a fused composite (single ops
 * such as "dnnl.relu" included). */
bool rt_dnnl_composite_parse(const char *name, rt_dnnl_composite *out);
/* Writes the name of c ("dnnl.conv2d_bias_relu") into buf; returns buf. */
char *rt_dnnl_composite_name(const rt_dnnl_composite *c, char *buf, size_t n);

#endif
