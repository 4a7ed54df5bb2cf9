/* XNNPACK as a graft backend plugin (include/graft/backend_plugin.h), built as its own
 * libgraft_xnnpack.so against the public headers alone and Debian's libxnnpack-dev
 * (0.0~git20220216).
 *
 * Each region becomes one XNNPACK subgraph: a value per node output, one subgraph node per op
 * (conv 2-D, grouped and depthwise included; fully connected; max / average / global average
 * pooling; add, subtract, multiply, divide, maximum, minimum with numpy broadcasting; clamp,
 * relu, relu6, sigmoid, leaky relu, abs, negate, floor, ceiling, square, square root; softmax;
 * reshape; bilinear resize; concat, written as zero pads and adds since this XNNPACK has no
 * concatenate node). XNNPACK's own subgraph optimizer fuses clamps into their producers; this
 * file folds a constant channel bias added to a convolution or a fully connected layer into
 * it, and ONNX's HardSwish (imported as x * clip(x + 3, 0, 6) / 6) into one hardswish node.
 *
 * Not mapped, for want of a node in this XNNPACK: transpose (so a channel shuffle's reshape and
 * transpose stay on the host), slicing and split. No stored form (ABI 1.2 serialize): this
 * XNNPACK packs weights inside xnn_create_runtime and offers no way to read them back, so an
 * artifact's region recompiles from its graph at load.
 *
 * Layout: every 4-D value inside a region is NHWC (XNNPACK's layout); the region's 4-D inputs
 * and outputs are NCHW as graft gives and takes them, converted at the region's boundary in
 * run(). Constants are rewritten once at compile: conv filters OIHW -> OHWI, dense weights
 * [K, M] -> [M, K], 4-D binary operands NCHW -> NHWC (lower-rank ones first padded to 4-D as
 * numpy broadcasting reads them). The checks keep away what would need a transpose inside a
 * region (a reshape across the spatial dims, a softmax over another axis, a non-constant
 * lower-rank operand broadcast against a 4-D one).
 *
 * Threads: one pthreadpool per thread count (option xnnpack.threads, 0: one per core), shared
 * by the regions of the process. */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthreadpool.h>
#include <xnnpack.h>

#include <graft/backend_plugin.h>

#define MAXD 6 /* XNN_MAX_TENSOR_DIMS */

/* ---- checks (on pattern matches) ---- */

static int reject(const char **reason, const char *why) {
    *reason = why;
    return 1;
}

static int str_is(const char *s, const char *want) { return s && strcmp(s, want) == 0; }

static int check_conv(const graft_host_api *api, const graft_match *m, const char **reason) {
    if (!str_is(api->match_attr_str(m, NULL, "data_layout"), "NCHW") ||
        !str_is(api->match_attr_str(m, NULL, "kernel_layout"), "OIHW") ||
        !str_is(api->match_attr_str(m, NULL, "out_layout"), "NCHW"))
        return reject(reason, "layouts other than NCHW / OIHW");
    /* symbolic dims of the data are fine: a region is compiled per call shape */
    return 0;
}

static int check_pool(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t v[4];
    if (!str_is(api->match_attr_str(m, NULL, "layout"), "NCHW") || !str_is(api->match_attr_str(m, NULL, "out_layout"), "NCHW"))
        return reject(reason, "layout other than NCHW");
    if (api->match_attr_ints(m, NULL, "ceil_mode", v, 1) == 1 && v[0])
        return reject(reason, "ceil_mode (XNNPACK pools round down)");
    return 0;
}

static int check_max_pool(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t ps[2];
    if (api->match_attr_ints(m, NULL, "pool_size", ps, 2) != 2 || ps[0] * ps[1] < 2)
        return reject(reason, "a 1x1 max pool (XNNPACK wants a window of 2 or more)");
    return check_pool(api, m, reason);
}

static int check_avg_pool(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t v[4], d[2];
    int np = api->match_attr_ints(m, NULL, "padding", v, 4);
    bool padded = false;
    for (int k = 0; k < np; k++) padded |= v[k] != 0;
    int64_t inc[1] = {0};
    if (padded && api->match_attr_ints(m, NULL, "count_include_pad", inc, 1) == 1 && inc[0])
        return reject(reason, "count_include_pad with padding (XNNPACK averages the valid pixels)");
    if (api->match_attr_ints(m, NULL, "dilation", d, 2) == 2 && (d[0] != 1 || d[1] != 1))
        return reject(reason, "dilated average pool");
    return check_pool(api, m, reason);
}

static int check_global_pool(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t os[2];
    if (!str_is(api->match_attr_str(m, NULL, "layout"), "NCHW")) return reject(reason, "layout other than NCHW");
    if (api->match_attr_ints(m, NULL, "output_size", os, 2) != 2 || os[0] != 1 || os[1] != 1)
        return reject(reason, "output size other than 1x1");
    return 0;
}

static int check_mean(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t ax[4];
    int n = api->match_attr_ints(m, NULL, "axis", ax, 4);
    if (n != 2 || !((ax[0] == 2 || ax[0] == -2) && (ax[1] == 3 || ax[1] == -1)))
        return reject(reason, "a mean over other axes than the spatial ones");
    return 0;
}

/* Numpy broadcasting inside a region whose 4-D values are NHWC: against a 4-D result, an
 * operand is 4-D too or a constant (padded and permuted at compile). */
static int check_binary(const graft_host_api *api, const graft_match *m, const char **reason) {
    int out = api->match_ndim(m, NULL);
    if (out < 0 || out > MAXD) return reject(reason, "rank unknown or above 6");
    for (uint32_t i = 0; i < 2; i++) {
        int nd = api->match_arg_ndim(m, NULL, i);
        if (nd < 0) return reject(reason, "operand of unknown rank");
        if (out == 4 && nd != 4 && !api->match_arg_const(m, NULL, i))
            return reject(reason, "a non-constant lower-rank operand broadcast against a 4-D one (needs NHWC)");
    }
    return 0;
}

static int check_unary(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_ndim(m, NULL);
    return nd < 0 || nd > MAXD ? reject(reason, "rank unknown or above 6") : 0;
}

/* ONNX's clip with min above max gives max everywhere; XNNPACK's clamp wants min < max. */
static int check_clip(const graft_host_api *api, const graft_match *m, const char **reason) {
    double lo, hi;
    if (api->match_arg_num(m, NULL, 1, &lo) || api->match_arg_num(m, NULL, 2, &hi))
        return reject(reason, "clip bounds that are not constant numbers");
    if (!(lo < hi)) return reject(reason, "clip with min not below max (XNNPACK's clamp needs min < max)");
    return check_unary(api, m, reason);
}

static int check_softmax(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_ndim(m, NULL);
    int64_t ax;
    if (nd < 1 || nd > MAXD || api->match_attr_ints(m, NULL, "axis", &ax, 1) != 1) return reject(reason, "rank");
    if (ax < 0) ax += nd;
    /* the innermost axis in memory: the last one, or the channels of a 4-D (NHWC) value */
    if (!(nd == 4 ? ax == 1 : ax == nd - 1)) return reject(reason, "softmax over an axis that is not innermost in NHWC");
    return 0;
}

static int check_dense(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_arg_ndim(m, NULL, 0);
    if (nd < 1 || nd > 3) return reject(reason, "dense of a 4-D or higher input");
    return 0;
}

/* A 4-D value is NHWC in a region: a reshape into or out of it keeps its data order only when
 * its spatial dims are 1. */
static int check_reshape(const graft_host_api *api, const graft_match *m, const char **reason) {
    int in = api->match_arg_ndim(m, NULL, 0), out = api->match_ndim(m, NULL);
    if (in < 0 || out < 0 || in > MAXD || out > MAXD) return reject(reason, "rank unknown or above 6");
    if (in == 4 && (api->match_arg_dim(m, NULL, 0, 2) != 1 || api->match_arg_dim(m, NULL, 0, 3) != 1))
        return reject(reason, "reshape of a 4-D value with spatial dims (would need NCHW order)");
    if (out == 4 && (api->match_dim(m, NULL, 2) != 1 || api->match_dim(m, NULL, 3) != 1))
        return reject(reason, "reshape into a 4-D value with spatial dims (would need NCHW order)");
    return 0;
}

/* A concat of float32 values of rank 1..6, of at most MAX_CONCAT inputs (XNNPACK of 2022 has no
 * concatenate node: the plugin writes it as zero pads and adds, a pass over the output per
 * input, see op_concat; DenseNet's concats of dozens are cheaper on the host). */
#define MAX_CONCAT 4
static int check_concat(const graft_host_api *api, const graft_match *m, const char **reason) {
    int nd = api->match_ndim(m, NULL);
    if (nd < 1 || nd > MAXD) return reject(reason, "rank unknown or above 6");
    if (api->abi_minor < 2 || api->match_dtype(m, NULL) != GRAFT_FLOAT32) return reject(reason, "not float32");
    int k = api->match_arg_fields(m, NULL, 0);
    if (k < 1 || k > MAX_CONCAT)
        return reject(reason, "a concat of more than 4 inputs (written as a zero pad and an add per input: XNNPACK "
                              "of 2022 has no concatenate node)");
    return 0;
}

/* ONNX's coordinate modes XNNPACK's bilinear resize has (flags): half_pixel (XNNPACK's default,
 * half-pixel centers), align_corners, asymmetric (TensorFlow's legacy mode); pytorch_half_pixel
 * is half_pixel for an output dim above 1. */
static const struct {
    const char *mode;
    uint32_t flags;
    bool needs_dims_above_1;
} RESIZE_MODES[] = {{"half_pixel", 0, false},
                    {"pytorch_half_pixel", 0, true},
                    {"align_corners", XNN_FLAG_ALIGN_CORNERS, false},
                    {"asymmetric", XNN_FLAG_TENSORFLOW_LEGACY_MODE, false}};

static int resize_mode(const char *mode) {
    for (size_t k = 0; mode && k < sizeof RESIZE_MODES / sizeof RESIZE_MODES[0]; k++)
        if (strcmp(mode, RESIZE_MODES[k].mode) == 0) return (int)k;
    return -1;
}

static int check_resize(const graft_host_api *api, const graft_match *m, const char **reason) {
    int64_t sc[2];
    if (!str_is(api->match_attr_str(m, NULL, "layout"), "NCHW")) return reject(reason, "layout other than NCHW");
    if (!str_is(api->match_attr_str(m, NULL, "method"), "linear")) return reject(reason, "a method other than linear");
    int k = resize_mode(api->match_attr_str(m, NULL, "coordinate_transformation_mode"));
    if (k < 0) return reject(reason, "a coordinate mode XNNPACK's bilinear resize does not have");
    if (RESIZE_MODES[k].needs_dims_above_1 && (api->match_dim(m, NULL, 2) <= 1 || api->match_dim(m, NULL, 3) <= 1))
        return reject(reason, "pytorch_half_pixel to an output dim of 1");
    if (api->match_attr_ints(m, NULL, "scales", sc, 2) >= 0)
        return reject(reason, "explicit fractional scales (XNNPACK scales by input / output size)");
    return 0;
}

static const graft_plugin_check CHECKS[] = {
    {"xnnpack.conv2d", check_conv},         {"xnnpack.dense", check_dense},
    {"xnnpack.max_pool2d", check_max_pool}, {"xnnpack.avg_pool2d", check_avg_pool},
    {"xnnpack.global_avg_pool2d", check_global_pool}, {"xnnpack.mean", check_mean},
    {"xnnpack.add", check_binary},          {"xnnpack.subtract", check_binary},
    {"xnnpack.multiply", check_binary},     {"xnnpack.divide", check_binary},
    {"xnnpack.maximum", check_binary},      {"xnnpack.minimum", check_binary},
    {"xnnpack.relu", check_unary},          {"xnnpack.relu6", check_unary},
    {"xnnpack.clip", check_clip},          {"xnnpack.sigmoid", check_unary},
    {"xnnpack.leakyrelu", check_unary},     {"xnnpack.abs", check_unary},
    {"xnnpack.negative", check_unary},      {"xnnpack.floor", check_unary},
    {"xnnpack.ceil", check_unary},          {"xnnpack.square", check_unary},
    {"xnnpack.sqrt", check_unary},          {"xnnpack.softmax", check_softmax},
    {"xnnpack.reshape", check_reshape},     {"xnnpack.concat", check_concat},
    {"xnnpack.resize2d", check_resize},
};

/* ---- thread pools, shared per thread count ---- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    size_t threads;
    pthreadpool_t pool;
    int refs;
} g_pools[8];
static int g_xnn_ready;

static pthreadpool_t pool_get(size_t threads) {
    pthreadpool_t p = NULL;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < 8 && !p; i++)
        if (g_pools[i].refs && g_pools[i].threads == threads) g_pools[i].refs++, p = g_pools[i].pool;
    for (int i = 0; i < 8 && !p; i++)
        if (!g_pools[i].refs) {
            g_pools[i].pool = pthreadpool_create(threads);
            if (!g_pools[i].pool) break;
            g_pools[i].threads = threads;
            g_pools[i].refs = 1;
            p = g_pools[i].pool;
        }
    pthread_mutex_unlock(&g_lock);
    return p;
}

static void pool_put(pthreadpool_t p) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < 8; i++)
        if (g_pools[i].refs && g_pools[i].pool == p && --g_pools[i].refs == 0) pthreadpool_destroy(p);
    pthread_mutex_unlock(&g_lock);
}

/* ---- compile ---- */

typedef struct io {
    uint32_t ext;                  /* external value id */
    bool nhwc;                     /* 4-D: converted at the boundary through scratch */
    int64_t shape[4];              /* NCHW */
    float *scratch;
    size_t bytes;
} io;

typedef struct region {
    const graft_host_api *api;     /* for run's errors */
    xnn_runtime_t rt;
    pthreadpool_t pool;
    uint32_t nin, nout, nobs;
    io *in, *out;
    io *obs;                       /* observed (graft diff): every other op's output, external too */
    uint32_t *obs_node, *out_node; /* their nodes, and the region outputs' */
    void *const *last_out;         /* the last run's output buffers (read_value of an output) */
    struct xnn_external_value *ext;
    void **keep;                   /* constant data the subgraph points at */
    uint32_t nkeep;
    char *profile;                 /* option profile: the region's symbol, else NULL */
    uint64_t runs, ns[3];          /* with profile: NCHW->NHWC, XNNPACK, NHWC->NCHW */
} region;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct builder {
    const graft_host_api *api;
    const graft_region *r;
    xnn_subgraph_t sg;
    region *R;
    graft_plugin_error *err;
    uint32_t *val;                 /* node -> value id (XNN_INVALID_VALUE_ID: none yet) */
    uint32_t *uses;                /* node -> number of kernel inputs reading it */
    int *out_index;                /* node -> region output index, -1 */
    bool *folded;                  /* kernel node folded into its producer (bias add) or into a
                                      hardswish */
    uint32_t *hswish;              /* multiply node -> x of the hardswish it ends, UINT32_MAX */
    bool observed;                 /* every op's output readable: no folding, all external */
} builder;

static void *keep(builder *b, size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    b->R->keep = realloc(b->R->keep, sizeof(void *) * (b->R->nkeep + 1));
    b->R->keep[b->R->nkeep++] = p;
    return p;
}

static const char *xs(enum xnn_status s) {
    static const char *const NAMES[] = {"success", "uninitialized", "invalid parameter", "invalid state",
                                        "unsupported parameter", "unsupported hardware", "out of memory"};
    return (unsigned)s < sizeof NAMES / sizeof NAMES[0] ? NAMES[s] : "error";
}

static int fail_node(builder *b, uint32_t nid, const char *what, enum xnn_status s) {
    b->api->set_error(b->err, "%s (layer %s): %s: %s", b->api->node_op(b->r, nid, 0), b->api->node_layer(b->r, nid),
                      what, xs(s));
    return 1;
}

static size_t numel(const int64_t *shape, int nd) {
    size_t n = 1;
    for (int k = 0; k < nd; k++) n *= (size_t)shape[k];
    return n;
}

/* dims of a node's output as XNNPACK sees it (4-D: NHWC). */
static int xdims(const builder *b, uint32_t nid, size_t *dims) {
    int nd = b->api->node_ndim(b->r, nid, 0);
    const int64_t *s = b->api->node_shape(b->r, nid, 0);
    if (nd == 4) {
        dims[0] = (size_t)s[0], dims[1] = (size_t)s[2], dims[2] = (size_t)s[3], dims[3] = (size_t)s[1];
    } else {
        for (int k = 0; k < nd; k++) dims[k] = (size_t)s[k];
    }
    if (nd == 0) dims[0] = 1;
    return nd ? nd : 1;
}

/* The value of node nid's output (defined with its producer, or a region input). */
static int io_init(const graft_host_api *api, const graft_region *r, uint32_t nid, uint32_t ext, io *p);

static int define_out(builder *b, uint32_t nid, uint32_t *id) {
    size_t dims[MAXD];
    int nd = xdims(b, nid, dims);
    uint32_t ext = XNN_INVALID_VALUE_ID, flags = 0;
    if (b->out_index[nid] >= 0) {
        ext = b->R->nin + (uint32_t)b->out_index[nid];
        flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
    } else if (b->observed) {
        region *R = b->R;
        ext = R->nin + R->nout + R->nobs;
        flags = XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
        R->obs_node[R->nobs] = nid;
        if (io_init(b->api, b->r, nid, ext, &R->obs[R->nobs])) return fail_node(b, nid, "observed value", xnn_status_out_of_memory);
        io *o = &R->obs[R->nobs];
        if (!o->nhwc) o->scratch = malloc(o->bytes + 1);
        R->nobs++;
    }
    enum xnn_status s = xnn_define_tensor_value(b->sg, xnn_datatype_fp32, (size_t)nd, dims, NULL, ext, flags, id);
    if (s) return fail_node(b, nid, "output value", s);
    b->val[nid] = *id;
    return 0;
}

/* A constant as an elementwise operand of a result of rank `rank`: padded with leading 1s to
 * that rank, and to NHWC order when 4-D. */
static int define_const_operand(builder *b, uint32_t cid, int rank, uint32_t *id) {
    int nd = b->api->node_ndim(b->r, cid, 0);
    const int64_t *s = b->api->node_shape(b->r, cid, 0);
    const float *src = b->api->node_const_data(b->r, cid);
    if (!src || nd > rank) return 1;
    int64_t p[MAXD];
    for (int k = 0; k < rank; k++) p[k] = k < rank - nd ? 1 : s[k - (rank - nd)];
    size_t n = numel(p, rank), dims[MAXD];
    float *data = keep(b, n * sizeof(float));
    if (rank == 4) {
        size_t N = (size_t)p[0], C = (size_t)p[1], H = (size_t)p[2], W = (size_t)p[3];
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < C; c++)
                for (size_t h = 0; h < H; h++)
                    for (size_t w = 0; w < W; w++)
                        data[((i * H + h) * W + w) * C + c] = src[((i * C + c) * H + h) * W + w];
        dims[0] = (size_t)p[0], dims[1] = (size_t)p[2], dims[2] = (size_t)p[3], dims[3] = (size_t)p[1];
    } else {
        memcpy(data, src, n * sizeof(float));
        for (int k = 0; k < rank; k++) dims[k] = (size_t)p[k];
    }
    if (rank == 0) dims[0] = 1;
    return xnn_define_tensor_value(b->sg, xnn_datatype_fp32, rank ? (size_t)rank : 1, dims, data, XNN_INVALID_VALUE_ID,
                                   0, id) != xnn_status_success;
}

static int operand(builder *b, uint32_t nid, uint32_t i, int rank, uint32_t *id) {
    uint32_t src = b->api->node_input(b->r, nid, i, NULL);
    if (b->api->node_kind(b->r, src) == GRAFT_NODE_CONST) {
        if (define_const_operand(b, src, rank, id)) return fail_node(b, nid, "constant operand", xnn_status_invalid_parameter);
        return 0;
    }
    if (b->val[src] == XNN_INVALID_VALUE_ID) {
        b->api->set_error(b->err, "%s (layer %s): operand %u has no value", b->api->node_op(b->r, nid, 0),
                          b->api->node_layer(b->r, nid), i);
        return 1;
    }
    *id = b->val[src];
    return 0;
}

/* The bias of a convolution / dense output: its only user is an add of a constant with one
 * value per output channel (and none elsewhere). Returns the add's node, or UINT32_MAX. */
static uint32_t bias_add(builder *b, uint32_t nid, int64_t channels, const float **bias) {
    if (b->observed || b->uses[nid] != 1 || b->out_index[nid] >= 0) return UINT32_MAX;
    uint32_t n = b->api->region_num_nodes(b->r);
    int rank = b->api->node_ndim(b->r, nid, 0);
    for (uint32_t u = nid + 1; u < n; u++) {
        if (b->api->node_kind(b->r, u) != GRAFT_NODE_KERNEL || !str_is(b->api->node_op(b->r, u, 0), "relax.add")) continue;
        for (uint32_t i = 0; i < 2; i++) {
            if (b->api->node_input(b->r, u, i, NULL) != nid) continue;
            uint32_t c = b->api->node_input(b->r, u, 1 - i, NULL);
            if (b->api->node_kind(b->r, c) != GRAFT_NODE_CONST || b->api->node_ndim(b->r, u, 0) != rank) return UINT32_MAX;
            int cn = b->api->node_ndim(b->r, c, 0);
            const int64_t *cs = b->api->node_shape(b->r, c, 0);
            /* one value per channel, on the channel axis (1 for NCHW, last for dense) */
            int axis = rank == 4 ? 1 : rank - 1;
            if (numel(cs, cn) != (size_t)channels || cn > rank) return UINT32_MAX;
            for (int k = 0; k < cn; k++)
                if (cs[k] != 1 && k + (rank - cn) != axis) return UINT32_MAX;
            *bias = b->api->node_const_data(b->r, c);
            return u;
        }
    }
    return UINT32_MAX;
}

static uint32_t define_bias(builder *b, const float *bias, int64_t channels) {
    uint32_t id = XNN_INVALID_VALUE_ID;
    if (!bias) return id;
    float *data = keep(b, (size_t)channels * sizeof(float));
    memcpy(data, bias, (size_t)channels * sizeof(float));
    size_t dims[1] = {(size_t)channels};
    if (xnn_define_tensor_value(b->sg, xnn_datatype_fp32, 1, dims, data, XNN_INVALID_VALUE_ID, 0, &id)) return XNN_INVALID_VALUE_ID;
    return id;
}

static int ints(builder *b, uint32_t nid, const char *attr, int64_t *v, int n, int64_t dflt) {
    for (int k = 0; k < n; k++) v[k] = dflt;
    int got = b->api->node_attr_ints(b->r, nid, 0, attr, v, n);
    return got < 0 || got == n ? 0 : got;
}

static int op_conv(builder *b, uint32_t nid) {
    const graft_host_api *api = b->api;
    uint32_t wid = api->node_input(b->r, nid, 1, NULL), x;
    if (api->node_kind(b->r, wid) != GRAFT_NODE_CONST) return fail_node(b, nid, "weights not constant", xnn_status_invalid_parameter);
    const int64_t *ws = api->node_shape(b->r, wid, 0), *xsh = api->node_shape(b->r, api->node_input(b->r, nid, 0, NULL), 0);
    int64_t st[2], pad[4], dil[2], groups = 1;
    ints(b, nid, "strides", st, 2, 1);
    ints(b, nid, "padding", pad, 4, 0);
    ints(b, nid, "dilation", dil, 2, 1);
    api->node_attr_ints(b->r, nid, 0, "groups", &groups, 1);
    int64_t O = ws[0], I = ws[1], KH = ws[2], KW = ws[3];
    if (groups <= 0 || O % groups || I * groups != xsh[1]) return fail_node(b, nid, "groups", xnn_status_invalid_parameter);
    const float *w = api->node_const_data(b->r, wid);
    float *f = keep(b, (size_t)(O * KH * KW * I) * sizeof(float));
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t h = 0; h < KH; h++)
                for (int64_t k = 0; k < KW; k++) f[((o * KH + h) * KW + k) * I + i] = w[((o * I + i) * KH + h) * KW + k];
    size_t fd[4] = {(size_t)O, (size_t)KH, (size_t)KW, (size_t)I};
    uint32_t fid, out;
    if (xnn_define_tensor_value(b->sg, xnn_datatype_fp32, 4, fd, f, XNN_INVALID_VALUE_ID, 0, &fid))
        return fail_node(b, nid, "filter", xnn_status_invalid_parameter);
    const float *bias = NULL;
    uint32_t add = bias_add(b, nid, O, &bias), target = add == UINT32_MAX ? nid : add;
    if (operand(b, nid, 0, 4, &x) || define_out(b, target, &out)) return 1;
    if (add != UINT32_MAX) b->folded[add] = true;
    enum xnn_status s = xnn_define_convolution_2d(
        b->sg, (uint32_t)pad[0], (uint32_t)pad[3], (uint32_t)pad[2], (uint32_t)pad[1], (uint32_t)KH, (uint32_t)KW,
        (uint32_t)st[0], (uint32_t)st[1], (uint32_t)dil[0], (uint32_t)dil[1], (uint32_t)groups, (size_t)I,
        (size_t)(O / groups), -INFINITY, INFINITY, x, fid, define_bias(b, bias, O), out, 0);
    return s ? fail_node(b, nid, "convolution", s) : 0;
}

static int op_dense(builder *b, uint32_t nid) {
    const graft_host_api *api = b->api;
    uint32_t wid = api->node_input(b->r, nid, 1, NULL), x, out, fid;
    if (api->node_kind(b->r, wid) != GRAFT_NODE_CONST) return fail_node(b, nid, "weights not constant", xnn_status_invalid_parameter);
    const int64_t *ws = api->node_shape(b->r, wid, 0);
    int64_t K = ws[0], M = ws[1];
    const float *w = api->node_const_data(b->r, wid);
    float *f = keep(b, (size_t)(K * M) * sizeof(float));
    for (int64_t k = 0; k < K; k++)
        for (int64_t m = 0; m < M; m++) f[m * K + k] = w[k * M + m];
    size_t fd[2] = {(size_t)M, (size_t)K};
    if (xnn_define_tensor_value(b->sg, xnn_datatype_fp32, 2, fd, f, XNN_INVALID_VALUE_ID, 0, &fid))
        return fail_node(b, nid, "filter", xnn_status_invalid_parameter);
    const float *bias = NULL;
    uint32_t add = bias_add(b, nid, M, &bias), target = add == UINT32_MAX ? nid : add;
    if (operand(b, nid, 0, api->node_ndim(b->r, nid, 0), &x) || define_out(b, target, &out)) return 1;
    if (add != UINT32_MAX) b->folded[add] = true;
    enum xnn_status s =
        xnn_define_fully_connected(b->sg, -INFINITY, INFINITY, x, fid, define_bias(b, bias, M), out, 0);
    return s ? fail_node(b, nid, "fully connected", s) : 0;
}

static int op_pool(builder *b, uint32_t nid, bool max) {
    int64_t ps[2], st[2], pad[4], dil[2];
    uint32_t x, out;
    ints(b, nid, "pool_size", ps, 2, 1);
    ints(b, nid, "strides", st, 2, 1);
    ints(b, nid, "padding", pad, 4, 0);
    ints(b, nid, "dilation", dil, 2, 1);
    if (operand(b, nid, 0, 4, &x) || define_out(b, nid, &out)) return 1;
    enum xnn_status s =
        max ? xnn_define_max_pooling_2d(b->sg, (uint32_t)pad[0], (uint32_t)pad[3], (uint32_t)pad[2], (uint32_t)pad[1],
                                        (uint32_t)ps[0], (uint32_t)ps[1], (uint32_t)st[0], (uint32_t)st[1],
                                        (uint32_t)dil[0], (uint32_t)dil[1], -INFINITY, INFINITY, x, out, 0)
            : xnn_define_average_pooling_2d(b->sg, (uint32_t)pad[0], (uint32_t)pad[3], (uint32_t)pad[2],
                                            (uint32_t)pad[1], (uint32_t)ps[0], (uint32_t)ps[1], (uint32_t)st[0],
                                            (uint32_t)st[1], -INFINITY, INFINITY, x, out, 0);
    return s ? fail_node(b, nid, max ? "max pooling" : "average pooling", s) : 0;
}

/* global average pool (adaptive to 1x1, or a mean over H, W): XNNPACK writes [N, 1, 1, C];
 * a mean without keepdims reshapes that to [N, C]. */
static int op_global_pool(builder *b, uint32_t nid) {
    uint32_t x, out, mid;
    if (operand(b, nid, 0, 4, &x)) return 1;
    if (b->api->node_ndim(b->r, nid, 0) == 4) {
        if (define_out(b, nid, &out)) return 1;
        enum xnn_status s = xnn_define_global_average_pooling_2d(b->sg, -INFINITY, INFINITY, x, out, 0);
        return s ? fail_node(b, nid, "global average pooling", s) : 0;
    }
    const int64_t *xs4 = b->api->node_shape(b->r, b->api->node_input(b->r, nid, 0, NULL), 0);
    size_t dims[4] = {(size_t)xs4[0], 1, 1, (size_t)xs4[1]};
    if (xnn_define_tensor_value(b->sg, xnn_datatype_fp32, 4, dims, NULL, XNN_INVALID_VALUE_ID, 0, &mid) ||
        define_out(b, nid, &out))
        return fail_node(b, nid, "global average pooling value", xnn_status_invalid_parameter);
    enum xnn_status s = xnn_define_global_average_pooling_2d(b->sg, -INFINITY, INFINITY, x, mid, 0);
    size_t nd[MAXD];
    int n = xdims(b, nid, nd);
    if (!s) s = xnn_define_static_reshape(b->sg, (size_t)n, nd, mid, out, 0);
    return s ? fail_node(b, nid, "global average pooling", s) : 0;
}

typedef enum xnn_status (*binary_fn)(xnn_subgraph_t, uint32_t, uint32_t, uint32_t, uint32_t);
static enum xnn_status def_add(xnn_subgraph_t g, uint32_t a, uint32_t c, uint32_t o, uint32_t f) {
    return xnn_define_add2(g, -INFINITY, INFINITY, a, c, o, f);
}
static enum xnn_status def_sub(xnn_subgraph_t g, uint32_t a, uint32_t c, uint32_t o, uint32_t f) {
    return xnn_define_subtract(g, -INFINITY, INFINITY, a, c, o, f);
}
static enum xnn_status def_mul(xnn_subgraph_t g, uint32_t a, uint32_t c, uint32_t o, uint32_t f) {
    return xnn_define_multiply2(g, -INFINITY, INFINITY, a, c, o, f);
}
static enum xnn_status def_div(xnn_subgraph_t g, uint32_t a, uint32_t c, uint32_t o, uint32_t f) {
    return xnn_define_divide(g, -INFINITY, INFINITY, a, c, o, f);
}

typedef enum xnn_status (*unary_fn)(xnn_subgraph_t, uint32_t, uint32_t, uint32_t);

static const struct {
    const char *op;
    binary_fn fn;
} BINARY[] = {{"relax.add", def_add},          {"relax.subtract", def_sub},          {"relax.multiply", def_mul},
              {"relax.divide", def_div},       {"relax.maximum", xnn_define_maximum2}, {"relax.minimum", xnn_define_minimum2}};

static const struct {
    const char *op;
    unary_fn fn;
} UNARY[] = {{"relax.sigmoid", xnn_define_sigmoid}, {"relax.abs", xnn_define_abs},     {"relax.negative", xnn_define_negate},
             {"relax.floor", xnn_define_floor},     {"relax.ceil", xnn_define_ceiling}, {"relax.square", xnn_define_square},
             {"relax.sqrt", xnn_define_square_root}};

static int op_binary(builder *b, uint32_t nid, binary_fn fn) {
    int rank = b->api->node_ndim(b->r, nid, 0);
    uint32_t x, y, out;
    if (operand(b, nid, 0, rank, &x) || operand(b, nid, 1, rank, &y) || define_out(b, nid, &out)) return 1;
    enum xnn_status s = fn(b->sg, x, y, out, 0);
    return s ? fail_node(b, nid, "binary", s) : 0;
}

static int op_clamp(builder *b, uint32_t nid, float lo, float hi) {
    uint32_t x, out;
    if (operand(b, nid, 0, b->api->node_ndim(b->r, nid, 0), &x) || define_out(b, nid, &out)) return 1;
    if (!(lo <= hi)) return fail_node(b, nid, "clip with min above max", xnn_status_invalid_parameter);
    enum xnn_status s = xnn_define_clamp(b->sg, lo, hi, x, out, 0);
    return s ? fail_node(b, nid, "clamp", s) : 0;
}

/* XNNPACK's axis of a node's axis (4-D values are NHWC). */
static size_t xaxis(int rank, int64_t axis) {
    static const size_t NCHW_TO_NHWC[4] = {0, 3, 1, 2};
    if (axis < 0) axis += rank;
    return rank == 4 ? NCHW_TO_NHWC[axis] : (size_t)axis;
}

/* concat without a concatenate node (XNNPACK of 2022 has none, and no copy into a slice):
 * each input zero-padded along the axis to the output's extent at its offset, and the padded
 * values added up. x + 0 is x for every float (a -0 becomes +0), so the result is exact; it
 * costs a pass over the output per input, the price of keeping the region whole instead of
 * leaving concat to the host between two regions with their layout conversions. */
static int op_concat(builder *b, uint32_t nid) {
    const graft_host_api *api = b->api;
    int rank = api->node_ndim(b->r, nid, 0);
    int64_t axis = 0;
    api->node_attr_ints(b->r, nid, 0, "axis", &axis, 1);
    if (axis < -rank || axis >= rank) return fail_node(b, nid, "concat axis", xnn_status_invalid_parameter);
    size_t a = xaxis(rank, axis), dims[MAXD], total, at = 0;
    xdims(b, nid, dims);
    total = dims[a];
    uint32_t k = api->node_num_inputs(b->r, nid), out, acc = XNN_INVALID_VALUE_ID;
    if (define_out(b, nid, &out)) return 1;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t x, padded = out;
        size_t xd[MAXD], pre[MAXD] = {0}, post[MAXD] = {0};
        if (operand(b, nid, i, rank, &x)) return 1;
        xdims(b, api->node_input(b->r, nid, i, NULL), xd);
        pre[a] = at;
        post[a] = total - at - xd[a];
        at += xd[a];
        /* the last input's pad goes straight to the output when it is the only one */
        if (k > 1 && xnn_define_tensor_value(b->sg, xnn_datatype_fp32, (size_t)rank, dims, NULL, XNN_INVALID_VALUE_ID, 0,
                                             &padded))
            return fail_node(b, nid, "concat value", xnn_status_invalid_parameter);
        enum xnn_status s = xnn_define_static_constant_pad(b->sg, pre, post, 0.0f, x, padded, 0);
        if (!s && i > 0) {
            uint32_t sum = out;
            if (i + 1 < k && xnn_define_tensor_value(b->sg, xnn_datatype_fp32, (size_t)rank, dims, NULL,
                                                     XNN_INVALID_VALUE_ID, 0, &sum))
                return fail_node(b, nid, "concat value", xnn_status_invalid_parameter);
            s = xnn_define_add2(b->sg, -INFINITY, INFINITY, acc, padded, sum, 0);
            padded = sum;
        }
        if (s) return fail_node(b, nid, "concat (pad and add)", s);
        acc = padded;
    }
    return at == total ? 0 : fail_node(b, nid, "concat extents", xnn_status_invalid_parameter);
}

/* A constant node holding one float equal to v. */
static bool const_is(const builder *b, uint32_t nid, float v) {
    if (b->api->node_kind(b->r, nid) != GRAFT_NODE_CONST) return false;
    const int64_t *s = b->api->node_shape(b->r, nid, 0);
    const float *d = b->api->node_const_data(b->r, nid);
    return d && numel(s, b->api->node_ndim(b->r, nid, 0)) == 1 && d[0] == v;
}

/* An op node used only by `user` and not an output (so it can be folded into it). */
static bool inner(const builder *b, uint32_t nid, const char *op) {
    return b->api->node_kind(b->r, nid) == GRAFT_NODE_KERNEL && b->uses[nid] == 1 && b->out_index[nid] < 0 &&
           str_is(b->api->node_op(b->r, nid, 0), op);
}

/* ONNX's HardSwish as the importer writes it, x * (clip(x + 3, 0, 6) / 6): the multiply's
 * node becomes one XNNPACK hardswish of x and the three others are folded (not when observed:
 * graft diff reads each). Returns x's node, or UINT32_MAX. */
static uint32_t hardswish_of(const builder *b, uint32_t mul) {
    const graft_host_api *api = b->api;
    if (b->observed || !str_is(api->node_op(b->r, mul, 0), "relax.multiply")) return UINT32_MAX;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t x = api->node_input(b->r, mul, i, NULL), d = api->node_input(b->r, mul, 1 - i, NULL);
        if (!inner(b, d, "relax.divide") || !const_is(b, api->node_input(b->r, d, 1, NULL), 6.0f)) continue;
        uint32_t c = api->node_input(b->r, d, 0, NULL);
        double lo, hi;
        if (!inner(b, c, "relax.clip") || api->node_arg_num(b->r, c, 1, &lo) || api->node_arg_num(b->r, c, 2, &hi) ||
            lo != 0.0 || hi != 6.0)
            continue;
        uint32_t a = api->node_input(b->r, c, 0, NULL);
        if (!inner(b, a, "relax.add")) continue;
        for (uint32_t j = 0; j < 2; j++)
            if (api->node_input(b->r, a, j, NULL) == x && api->node_kind(b->r, x) != GRAFT_NODE_CONST &&
                const_is(b, api->node_input(b->r, a, 1 - j, NULL), 3.0f) &&
                api->node_ndim(b->r, x, 0) == api->node_ndim(b->r, mul, 0))
                return x;
    }
    return UINT32_MAX;
}

static int op_node(builder *b, uint32_t nid) {
    const graft_host_api *api = b->api;
    const char *op = api->node_op(b->r, nid, 0);
    int rank = api->node_ndim(b->r, nid, 0);
    uint32_t x, out;
    enum xnn_status s;
    for (size_t k = 0; k < sizeof BINARY / sizeof BINARY[0]; k++)
        if (str_is(op, BINARY[k].op)) return op_binary(b, nid, BINARY[k].fn);
    for (size_t k = 0; k < sizeof UNARY / sizeof UNARY[0]; k++)
        if (str_is(op, UNARY[k].op)) {
            if (operand(b, nid, 0, rank, &x) || define_out(b, nid, &out)) return 1;
            s = UNARY[k].fn(b->sg, x, out, 0);
            return s ? fail_node(b, nid, "unary", s) : 0;
        }
    if (b->hswish[nid] != UINT32_MAX) {
        uint32_t src = b->hswish[nid];
        if (b->val[src] == XNN_INVALID_VALUE_ID) return fail_node(b, nid, "hardswish input", xnn_status_invalid_state);
        if (define_out(b, nid, &out)) return 1;
        s = xnn_define_hardswish(b->sg, b->val[src], out, 0);
        return s ? fail_node(b, nid, "hardswish", s) : 0;
    }
    if (str_is(op, "relax.concat")) return op_concat(b, nid);
    if (str_is(op, "relax.image.resize2d")) {
        int k = resize_mode(api->node_attr_str(b->r, nid, 0, "coordinate_transformation_mode"));
        const int64_t *os = api->node_shape(b->r, nid, 0);
        if (k < 0) return fail_node(b, nid, "resize mode", xnn_status_unsupported_parameter);
        if (operand(b, nid, 0, 4, &x) || define_out(b, nid, &out)) return 1;
        s = xnn_define_static_resize_bilinear_2d(b->sg, (size_t)os[2], (size_t)os[3], x, out, RESIZE_MODES[k].flags);
        return s ? fail_node(b, nid, "bilinear resize", s) : 0;
    }
    if (str_is(op, "relax.nn.conv2d")) return op_conv(b, nid);
    if (str_is(op, "relax.matmul")) return op_dense(b, nid);
    if (str_is(op, "relax.nn.max_pool2d")) return op_pool(b, nid, true);
    if (str_is(op, "relax.nn.avg_pool2d")) return op_pool(b, nid, false);
    if (str_is(op, "relax.nn.adaptive_avg_pool2d") || str_is(op, "relax.mean")) return op_global_pool(b, nid);
    if (str_is(op, "relax.nn.relu")) return op_clamp(b, nid, 0.0f, INFINITY);
    if (str_is(op, "relax.nn.relu6")) return op_clamp(b, nid, 0.0f, 6.0f);
    if (str_is(op, "relax.clip")) {
        double lo = -INFINITY, hi = INFINITY;
        api->node_arg_num(b->r, nid, 1, &lo);
        api->node_arg_num(b->r, nid, 2, &hi);
        return op_clamp(b, nid, (float)lo, (float)hi);
    }
    if (str_is(op, "relax.nn.leakyrelu")) {
        double alpha = 0.01;
        api->node_attr_float(b->r, nid, 0, "alpha", &alpha);
        if (operand(b, nid, 0, rank, &x) || define_out(b, nid, &out)) return 1;
        s = xnn_define_leaky_relu(b->sg, (float)alpha, x, out, 0);
        return s ? fail_node(b, nid, "leaky relu", s) : 0;
    }
    if (str_is(op, "relax.nn.softmax")) {
        if (operand(b, nid, 0, rank, &x) || define_out(b, nid, &out)) return 1;
        s = xnn_define_softmax(b->sg, x, out, 0);
        return s ? fail_node(b, nid, "softmax", s) : 0;
    }
    if (str_is(op, "relax.reshape")) {
        uint32_t src = api->node_input(b->r, nid, 0, NULL);
        size_t dims[MAXD];
        int nd = xdims(b, nid, dims);
        if (operand(b, nid, 0, api->node_ndim(b->r, src, 0), &x) || define_out(b, nid, &out)) return 1;
        s = xnn_define_static_reshape(b->sg, (size_t)nd, dims, x, out, 0);
        return s ? fail_node(b, nid, "reshape", s) : 0;
    }
    api->set_error(b->err, "op %s (layer %s) has no XNNPACK mapping", op ? op : "?", api->node_layer(b->r, nid));
    return 1;
}

static void region_free(region *R) {
    if (!R) return;
    if (R->profile && R->runs)
        fprintf(stderr, "xnnpack profile: %s: %llu runs, per run %.3f ms: NCHW->NHWC %.3f, XNNPACK %.3f, NHWC->NCHW %.3f\n",
                R->profile, (unsigned long long)R->runs, (double)(R->ns[0] + R->ns[1] + R->ns[2]) / 1e6 / (double)R->runs,
                (double)R->ns[0] / 1e6 / (double)R->runs, (double)R->ns[1] / 1e6 / (double)R->runs,
                (double)R->ns[2] / 1e6 / (double)R->runs);
    free(R->profile);
    if (R->rt) xnn_delete_runtime(R->rt);
    if (R->pool) pool_put(R->pool);
    for (uint32_t i = 0; i < R->nin; i++) free(R->in[i].scratch);
    for (uint32_t i = 0; i < R->nout; i++) free(R->out[i].scratch);
    for (uint32_t i = 0; i < R->nobs; i++) free(R->obs[i].scratch);
    free(R->obs), free(R->obs_node), free(R->out_node);
    for (uint32_t i = 0; i < R->nkeep; i++) free(R->keep[i]);
    free(R->in), free(R->out), free(R->ext), free(R->keep), free(R);
}

static void release(void *state) { region_free(state); }

static int io_init(const graft_host_api *api, const graft_region *r, uint32_t nid, uint32_t ext, io *p) {
    p->ext = ext;
    p->nhwc = api->node_ndim(r, nid, 0) == 4;
    p->bytes = numel(api->node_shape(r, nid, 0), api->node_ndim(r, nid, 0)) * sizeof(float);
    if (!p->nhwc) return 0;
    memcpy(p->shape, api->node_shape(r, nid, 0), sizeof p->shape);
    p->scratch = malloc(numel(p->shape, 4) * sizeof(float) + 1);
    return !p->scratch;
}

static int compile(const graft_host_api *api, const graft_region *r, const graft_plugin_options *o, void **out,
                   graft_plugin_error *err) {
    pthread_mutex_lock(&g_lock);
    if (!g_xnn_ready && xnn_initialize(NULL) == xnn_status_success) g_xnn_ready = 1;
    pthread_mutex_unlock(&g_lock);
    if (!g_xnn_ready) {
        api->set_error(err, "xnn_initialize failed (a CPU without SSE2?)");
        return 1;
    }
    uint32_t n = api->region_num_nodes(r);
    region *R = calloc(1, sizeof(*R));
    R->api = api;
    builder b = {api, r, NULL, R, err, calloc(n + 1, sizeof(uint32_t)), calloc(n + 1, sizeof(uint32_t)),
                 calloc(n + 1, sizeof(int)), calloc(n + 1, sizeof(bool)), calloc(n + 1, sizeof(uint32_t)),
                 api->abi_minor >= 1 && api->region_observed(r)};
    int rc = 0;
    R->nin = api->region_num_inputs(r);
    R->nout = api->region_num_outputs(r);
    R->in = calloc(R->nin + 1, sizeof(io));
    R->out = calloc(R->nout + 1, sizeof(io));
    R->ext = calloc(R->nin + R->nout + n + 1, sizeof(struct xnn_external_value));
    R->obs = calloc(n + 1, sizeof(io));
    R->obs_node = calloc(n + 1, sizeof(uint32_t));
    R->out_node = calloc(R->nout + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        b.val[i] = XNN_INVALID_VALUE_ID;
        b.out_index[i] = -1;
        if (api->node_num_outputs(r, i) != 1 || api->node_dtype(r, i, 0) != GRAFT_FLOAT32 || api->node_ndim(r, i, 0) > MAXD) {
            api->set_error(err, "node %s (layer %s): not one float32 output of rank 6 or less", api->node_name(r, i),
                           api->node_layer(r, i));
            rc = 1;
        }
        for (uint32_t k = 0; api->node_kind(r, i) == GRAFT_NODE_KERNEL && k < api->node_num_inputs(r, i); k++)
            b.uses[api->node_input(r, i, k, NULL)]++;
    }
    for (uint32_t i = 0; i < R->nout && !rc; i++) {
        uint32_t nid = api->region_output(r, i, NULL);
        if (api->node_kind(r, nid) != GRAFT_NODE_KERNEL || b.out_index[nid] >= 0) {
            api->set_error(err, "output %u is a region input, a constant or another output", i);
            rc = 1;
        } else {
            b.out_index[nid] = (int)i;
            R->out_node[i] = nid;
            rc = io_init(api, r, nid, R->nin + i, &R->out[i]);
        }
    }
    if (!rc && xnn_create_subgraph(R->nin + R->nout + (b.observed ? n : 0), 0, &b.sg) != xnn_status_success) {
        api->set_error(err, "xnn_create_subgraph failed");
        rc = 1;
    }
    for (uint32_t i = 0; i < R->nin && !rc; i++) {
        uint32_t nid = api->region_input(r, i), id = XNN_INVALID_VALUE_ID;
        size_t dims[MAXD];
        int nd = xdims(&b, nid, dims);
        rc = io_init(api, r, nid, i, &R->in[i]) ||
             xnn_define_tensor_value(b.sg, xnn_datatype_fp32, (size_t)nd, dims, NULL, i, XNN_VALUE_FLAG_EXTERNAL_INPUT, &id);
        b.val[nid] = id;
        if (rc) api->set_error(err, "input %u (%s): cannot define it", i, api->node_name(r, nid));
    }
    for (uint32_t nid = 0; nid < n; nid++) b.hswish[nid] = UINT32_MAX;
    for (uint32_t nid = 0; nid < n && !rc; nid++) {
        uint32_t x = hardswish_of(&b, nid);
        if (x == UINT32_MAX) continue;
        b.hswish[nid] = x;
        uint32_t d = api->node_input(r, nid, api->node_input(r, nid, 0, NULL) == x ? 1 : 0, NULL);
        uint32_t c = api->node_input(r, d, 0, NULL);
        b.folded[d] = b.folded[c] = b.folded[api->node_input(r, c, 0, NULL)] = true;
    }
    for (uint32_t nid = 0; nid < n && !rc; nid++)
        if (api->node_kind(r, nid) == GRAFT_NODE_KERNEL && !b.folded[nid]) rc = op_node(&b, nid);
    const char *prof = api->option(o, "profile");
    if (!rc && (str_is(prof, "1") || str_is(prof, "true")) && !b.observed) {
        const char *sym = api->region_symbol(r);
        R->profile = malloc(strlen(sym) + 1);
        if (R->profile) strcpy(R->profile, sym);
    }
    if (!rc) {
        const char *t = api->option(o, "threads");
        R->pool = pool_get(t ? (size_t)strtoul(t, NULL, 10) : 0);
        enum xnn_status s = xnn_create_runtime_v2(b.sg, R->pool, 0, &R->rt);
        if (s) {
            api->set_error(err, "xnn_create_runtime: %s", xs(s));
            rc = 1;
        }
    }
    if (b.sg) xnn_delete_subgraph(b.sg);
    free(b.val), free(b.uses), free(b.out_index), free(b.folded), free(b.hswish);
    if (rc) {
        region_free(R);
        return 1;
    }
    *out = R;
    return 0;
}

/* ---- run ---- */

static void nchw_to_nhwc(const float *src, float *dst, const int64_t *s) {
    size_t N = (size_t)s[0], C = (size_t)s[1], HW = (size_t)(s[2] * s[3]);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < C; c++)
            for (size_t p = 0; p < HW; p++) dst[(n * HW + p) * C + c] = src[(n * C + c) * HW + p];
}

static void nhwc_to_nchw(const float *src, float *dst, const int64_t *s) {
    size_t N = (size_t)s[0], C = (size_t)s[1], HW = (size_t)(s[2] * s[3]);
    for (size_t n = 0; n < N; n++)
        for (size_t p = 0; p < HW; p++)
            for (size_t c = 0; c < C; c++) dst[(n * C + c) * HW + p] = src[(n * HW + p) * C + c];
}

static int run(void *state, const void *const *inputs, uint32_t nin, void *const *outputs, uint32_t nout,
               graft_plugin_error *err) {
    region *R = state;
    if (nin != R->nin || nout != R->nout) {
        R->api->set_error(err, "called with %u inputs and %u outputs, compiled for %u and %u", nin, nout, R->nin, R->nout);
        return 1;
    }
    uint64_t t0 = R->profile ? now_ns() : 0, t1 = 0, t2 = 0;
    for (uint32_t i = 0; i < nin; i++) {
        io *p = &R->in[i];
        if (p->nhwc) nchw_to_nhwc(inputs[i], p->scratch, p->shape);
        R->ext[i] = (struct xnn_external_value){p->ext, p->nhwc ? p->scratch : (void *)inputs[i]};
    }
    for (uint32_t i = 0; i < nout; i++)
        R->ext[nin + i] = (struct xnn_external_value){R->out[i].ext, R->out[i].nhwc ? R->out[i].scratch : outputs[i]};
    for (uint32_t i = 0; i < R->nobs; i++) R->ext[nin + nout + i] = (struct xnn_external_value){R->obs[i].ext, R->obs[i].scratch};
    R->last_out = outputs;
    if (R->profile) t1 = now_ns();
    enum xnn_status s = xnn_setup_runtime(R->rt, nin + nout + R->nobs, R->ext);
    if (!s) s = xnn_invoke_runtime(R->rt);
    if (s) {
        R->api->set_error(err, "XNNPACK runtime: %s", xs(s));
        return 1;
    }
    if (R->profile) t2 = now_ns();
    for (uint32_t i = 0; i < nout; i++)
        if (R->out[i].nhwc) nhwc_to_nchw(R->out[i].scratch, outputs[i], R->out[i].shape);
    if (R->profile) {
        R->runs++;
        R->ns[0] += t1 - t0, R->ns[1] += t2 - t1, R->ns[2] += now_ns() - t2;
    }
    return 0;
}

/* graft diff: an op's output in NCHW as the last run of an observed state left it. */
static int read_value(void *state, uint32_t nid, void *out) {
    region *R = state;
    for (uint32_t i = 0; i < R->nout; i++)
        if (R->out_node[i] == nid && R->last_out) {
            memcpy(out, R->last_out[i], R->out[i].bytes); /* NCHW already */
            return 0;
        }
    for (uint32_t i = 0; i < R->nobs; i++)
        if (R->obs_node[i] == nid) {
            const io *p = &R->obs[i];
            if (p->nhwc) nhwc_to_nchw(p->scratch, out, p->shape);
            else memcpy(out, p->scratch, p->bytes);
            return 0;
        }
    return 1;
}

static const graft_plugin_option OPTIONS[] = {
    {"threads", GRAFT_OPTION_INT, "0", "threads of the XNNPACK thread pool (0: one per core)", NULL},
    {"profile", GRAFT_OPTION_BOOL, "0",
     "time each region's layout conversions and XNNPACK run; one line per region to stderr when it is freed", NULL},
};

static const graft_plugin PLUGIN = {
    .abi_major = GRAFT_PLUGIN_ABI_MAJOR,
    .abi_minor = GRAFT_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(graft_plugin),
    .name = "xnnpack",
    .version = "0.1.0",
    .description = "XNNPACK (2022-02) subgraphs: conv2d (grouped, depthwise), dense, pools, elementwise, clamp, "
                   "sigmoid, hardswish, softmax, reshape, concat, bilinear resize; NHWC inside a region",
    .options = OPTIONS,
    .noptions = sizeof OPTIONS / sizeof OPTIONS[0],
    .checks = CHECKS,
    .nchecks = sizeof CHECKS / sizeof CHECKS[0],
    .region_mode = GRAFT_REGION_PER_OP,
    .compile = compile,
    .run = run,
    .release = release,
    .pattern_file = "xnnpack_patterns.relax",
    .read_value = read_value,
};

GRAFT_PLUGIN_EXPORT const graft_plugin *graft_backend_plugin(void) { return &PLUGIN; }
