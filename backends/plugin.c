/* Backend plugins behind the backend contract (backends/plugin.h). A plugin sees graft only
 * through the graft_host_api table below: views of a region's JSON graph and of a pattern
 * match, its option values and an error slot. */
#include <dlfcn.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/json/json_codegen.h"
#include "backends/plugin.h"
#include "base/map.h"
#include "base/sys.h"
#include "byoc/byoc.h"
#include "ir/ctx.h"
#include "patterns/pattern_text.h"
#include "runtime/json/json_runtime.h"

/* ---- dtypes ---- */

static const struct {
    graft_dtype g;
    DLDataType dl;
} DTYPES[] = {
    {GRAFT_FLOAT32, {kDLFloat, 32, 1}}, {GRAFT_FLOAT64, {kDLFloat, 64, 1}}, {GRAFT_FLOAT16, {kDLFloat, 16, 1}},
    {GRAFT_BFLOAT16, {kDLBfloat, 16, 1}}, {GRAFT_INT8, {kDLInt, 8, 1}},    {GRAFT_UINT8, {kDLUInt, 8, 1}},
    {GRAFT_INT16, {kDLInt, 16, 1}},     {GRAFT_INT32, {kDLInt, 32, 1}},    {GRAFT_INT64, {kDLInt, 64, 1}},
    {GRAFT_BOOL, {kDLUInt, 1, 1}},      {GRAFT_UINT16, {kDLUInt, 16, 1}},  {GRAFT_UINT32, {kDLUInt, 32, 1}},
    {GRAFT_UINT64, {kDLUInt, 64, 1}},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

graft_dtype byoc_plugin_dtype(DLDataType t) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].dl.code == t.code && DTYPES[i].dl.bits == t.bits && DTYPES[i].dl.lanes == t.lanes)
            return DTYPES[i].g;
    return GRAFT_DTYPE_UNKNOWN;
}

bool byoc_plugin_dl_dtype(graft_dtype t, DLDataType *out) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].g == t) {
            *out = DTYPES[i].dl;
            return true;
        }
    return false;
}

int byoc_plugin_version_major(const char *version) {
    if (!version || *version < '0' || *version > '9') return -1;
    long v = strtol(version, NULL, 10);
    return v > INT_MAX ? -1 : (int)v;
}

/* ---- the adapter ---- */

#define MAX_PLUGIN_OPTIONS 32
#define OPTION_VALUE_MAX 256

typedef struct plugin_backend {
    byoc_backend b;                /* registered; first, so a byoc_backend * is the adapter */
    rt_json_engine eng;
    const graft_plugin *p;
    void *dl;
    char kind[96];                 /* "plugin:<name>" */
    char *dir;                     /* the library's folder (pattern_file is read from there) */
    byoc_option *options;
} plugin_backend;

#define MAX_PLUGINS 16
static plugin_backend *g_plugins[MAX_PLUGINS];
static uint32_t g_nplugins;
static pthread_mutex_t g_plugin_lock = PTHREAD_MUTEX_INITIALIZER;

const graft_plugin *byoc_plugin_of(const byoc_backend *b) {
    for (uint32_t i = 0; i < g_nplugins; i++)
        if (&g_plugins[i]->b == b) return g_plugins[i]->p;
    return NULL;
}

/* What a module keeps of a compile's options (the engine's opts, copied by the module). */
struct graft_plugin_options {
    const plugin_backend *pb;
    char values[MAX_PLUGIN_OPTIONS][OPTION_VALUE_MAX];
};

struct graft_plugin_error {
    char msg[1024];
};

static void host_set_error(graft_plugin_error *err, const char *fmt, ...) {
    if (!err || err->msg[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

static const char *host_option(const graft_plugin_options *o, const char *name) {
    for (uint32_t i = 0; o && name && i < o->pb->p->noptions; i++)
        if (strcmp(o->pb->p->options[i].name, name) == 0) return o->values[i];
    return NULL;
}

/* ---- region views: a prepared static JSON graph ---- */

struct graft_region {
    rt_json_graph *g;
    uint32_t *const_index;         /* node id -> constant index (UINT32_MAX: not a constant) */
    int observed;                  /* compiled for graft diff's taps */
};

static rt_json_node *rnode(const graft_region *r, uint32_t nid) {
    return nid < rt_json_graph_num_nodes(r->g) ? rt_json_graph_node(r->g, nid) : NULL;
}

static const char *r_symbol(const graft_region *r) { return rt_json_graph_symbol(r->g); }
static int r_observed(const graft_region *r) { return r->observed; }
static uint32_t r_num_nodes(const graft_region *r) { return rt_json_graph_num_nodes(r->g); }
static uint32_t r_num_inputs(const graft_region *r) { return rt_json_graph_num_inputs(r->g); }
static uint32_t r_input(const graft_region *r, uint32_t i) {
    return i < rt_json_graph_num_inputs(r->g) ? rt_json_graph_input_nid(r->g, i) : UINT32_MAX;
}
static uint32_t r_num_outputs(const graft_region *r) { return rt_json_graph_num_heads(r->g); }
static uint32_t r_output(const graft_region *r, uint32_t i, uint32_t *index) {
    if (i >= rt_json_graph_num_heads(r->g)) return UINT32_MAX;
    rt_json_entry e = rt_json_graph_head(r->g, i);
    if (index) *index = e.index;
    return e.nid;
}

static graft_node_kind n_kind(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    static const graft_node_kind KINDS[] = {[RT_JSON_INPUT] = GRAFT_NODE_INPUT, [RT_JSON_CONST] = GRAFT_NODE_CONST,
                                            [RT_JSON_KERNEL] = GRAFT_NODE_KERNEL};
    return n ? KINDS[n->kind] : GRAFT_NODE_INPUT;
}
static const char *n_name(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    return n ? n->name : NULL;
}
static const char *n_layer(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    return n && n->layer ? n->layer : "";
}
static uint32_t n_num_inputs(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    return n ? n->ninputs : 0;
}
static uint32_t n_input(const graft_region *r, uint32_t nid, uint32_t i, uint32_t *index) {
    rt_json_node *n = rnode(r, nid);
    if (!n || i >= n->ninputs) return UINT32_MAX;
    if (index) *index = n->inputs[i].index;
    return n->inputs[i].nid;
}
static uint32_t n_num_outputs(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    return n ? n->noutputs : 0;
}
static graft_dtype n_dtype(const graft_region *r, uint32_t nid, uint32_t out) {
    rt_json_node *n = rnode(r, nid);
    return n && out < n->noutputs ? byoc_plugin_dtype(n->dtypes[out]) : GRAFT_DTYPE_UNKNOWN;
}
static int n_ndim(const graft_region *r, uint32_t nid, uint32_t out) {
    rt_json_node *n = rnode(r, nid);
    return n && out < n->noutputs ? n->ndims[out] : -1;
}
static const int64_t *n_shape(const graft_region *r, uint32_t nid, uint32_t out) {
    rt_json_node *n = rnode(r, nid);
    return n && out < n->noutputs ? n->shapes[out] : NULL;
}
static const void *n_const_data(const graft_region *r, uint32_t nid) {
    if (!rnode(r, nid) || r->const_index[nid] == UINT32_MAX) return NULL;
    rt_tensor *t = rt_json_graph_const(r->g, r->const_index[nid]);
    return t ? rt_tensor_data(t) : NULL;
}

/* Op k of a kernel node: {"name", "op_attrs"} in per-composite mode; the node itself in
 * per-op mode. */
static json_t *n_op_obj(const graft_region *r, uint32_t nid, uint32_t k, const char **name) {
    rt_json_node *n = rnode(r, nid);
    if (!n || n->kind != RT_JSON_KERNEL) return NULL;
    json_t *ops = json_object_get(n->attrs, "ops");
    if (json_is_array(ops)) {
        json_t *o = json_array_get(ops, k);
        if (name) *name = json_string_value(json_object_get(o, "name"));
        return json_object_get(o, "op_attrs");
    }
    if (k != 0) return NULL;
    if (name) *name = n->name;
    return json_object_get(n->attrs, "op_attrs");
}
static uint32_t n_num_ops(const graft_region *r, uint32_t nid) {
    rt_json_node *n = rnode(r, nid);
    if (!n || n->kind != RT_JSON_KERNEL) return 0;
    json_t *ops = json_object_get(n->attrs, "ops");
    return json_is_array(ops) ? (uint32_t)json_array_size(ops) : 1;
}
static const char *n_op(const graft_region *r, uint32_t nid, uint32_t k) {
    const char *name = NULL;
    n_op_obj(r, nid, k, &name);
    return name;
}
static int json_ints(const json_t *v, int64_t *vals, int cap) {
    if (json_is_integer(v) || json_is_boolean(v)) {
        if (cap > 0) vals[0] = json_is_integer(v) ? json_integer_value(v) : json_is_true(v);
        return 1;
    }
    if (!json_is_array(v)) return -1;
    int n = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_integer(x)) return -1;
        if (n < cap) vals[n] = json_integer_value(x);
        n++;
    }
    return n < cap ? n : cap;
}
static int n_attr_ints(const graft_region *r, uint32_t nid, uint32_t k, const char *attr, int64_t *vals, int cap) {
    return json_ints(json_object_get(n_op_obj(r, nid, k, NULL), attr), vals, cap);
}
static int n_attr_float(const graft_region *r, uint32_t nid, uint32_t k, const char *attr, double *val) {
    json_t *v = json_object_get(n_op_obj(r, nid, k, NULL), attr);
    if (!json_is_number(v)) return -1;
    *val = json_number_value(v);
    return 0;
}
static const char *n_attr_str(const graft_region *r, uint32_t nid, uint32_t k, const char *attr) {
    return json_string_value(json_object_get(n_op_obj(r, nid, k, NULL), attr));
}

static int n_arg_num(const graft_region *r, uint32_t nid, uint32_t i, double *val) {
    rt_json_node *n = rnode(r, nid);
    json_t *a = n && n->kind == RT_JSON_KERNEL ? json_array_get(json_object_get(n->attrs, "args"), i) : NULL;
    json_t *x = json_object_get(a, "float");
    if (!x) x = json_object_get(a, "int");
    if (!json_is_number(x)) return -1;
    *val = json_number_value(x);
    return 0;
}

/* ---- match views: a pattern check's context ---- */

struct graft_match {
    const pat_check_ctx *c;
};

static const ir_call *m_call(const graft_match *m, const char *binding) {
    const ir_expr *e = !binding || !strcmp(binding, "root") ? m->c->matched_expr
                                                            : pat_match_named(m->c->match, binding);
    if (!e || e->kind != IR_CALL || IR_AS(e, ir_call)->callee->kind != IR_OP) return NULL;
    return IR_AS(e, ir_call);
}
static const ir_sinfo *m_arg_sinfo(const graft_match *m, const char *binding, uint32_t i) {
    const ir_call *c = m_call(m, binding);
    const ir_sinfo *s = c && i < c->nargs ? c->args[i]->sinfo : NULL;
    return s && s->kind == IR_SINFO_TENSOR ? s : NULL;
}
static int64_t sinfo_dim(const ir_sinfo *s, int axis) {
    int64_t v;
    if (!s || axis < 0 || axis >= s->ndim || !s->dims || !ir_prim_is_int(s->dims[axis], &v)) return -1;
    return v;
}
static const char *m_op(const graft_match *m, const char *binding) {
    const ir_call *c = m_call(m, binding);
    return c ? IR_AS(c->callee, ir_op)->def->name : NULL;
}
static uint32_t m_num_args(const graft_match *m, const char *binding) {
    const ir_call *c = m_call(m, binding);
    return c ? c->nargs : 0;
}
static graft_dtype m_arg_dtype(const graft_match *m, const char *binding, uint32_t i) {
    const ir_sinfo *s = m_arg_sinfo(m, binding, i);
    return s ? byoc_plugin_dtype(s->dtype) : GRAFT_DTYPE_UNKNOWN;
}
static int m_arg_ndim(const graft_match *m, const char *binding, uint32_t i) {
    const ir_sinfo *s = m_arg_sinfo(m, binding, i);
    return s ? s->ndim : -1;
}
static int64_t m_arg_dim(const graft_match *m, const char *binding, uint32_t i, int axis) {
    return sinfo_dim(m_arg_sinfo(m, binding, i), axis);
}
static int m_arg_const(const graft_match *m, const char *binding, uint32_t i) {
    const ir_call *c = m_call(m, binding);
    return c && i < c->nargs && c->args[i]->kind == IR_CONST;
}
static int m_arg_num(const graft_match *m, const char *binding, uint32_t i, double *val) {
    const ir_call *c = m_call(m, binding);
    const ir_expr *a = c && i < c->nargs ? c->args[i] : NULL;
    if (!a || a->kind != IR_PRIMVAL) return -1;
    const ir_primval *pv = IR_AS(a, ir_primval);
    int64_t iv;
    if (!pv->value) *val = pv->fvalue;
    else if (ir_prim_is_int(pv->value, &iv)) *val = (double)iv;
    else return -1;
    return 0;
}
static const ir_sinfo *m_sinfo(const graft_match *m, const char *binding) {
    const ir_call *c = m_call(m, binding);
    const ir_sinfo *s = c ? c->base.sinfo : NULL;
    return s && s->kind == IR_SINFO_TENSOR ? s : NULL;
}
static int m_ndim(const graft_match *m, const char *binding) {
    const ir_sinfo *s = m_sinfo(m, binding);
    return s ? s->ndim : -1;
}
static int64_t m_dim(const graft_match *m, const char *binding, int axis) { return sinfo_dim(m_sinfo(m, binding), axis); }
static int m_arg_fields(const graft_match *m, const char *binding, uint32_t i) {
    const ir_call *c = m_call(m, binding);
    const ir_sinfo *s = c && i < c->nargs ? c->args[i]->sinfo : NULL;
    return s && s->kind == IR_SINFO_TUPLE ? (int)s->n : -1;
}
static graft_dtype m_dtype(const graft_match *m, const char *binding) {
    const ir_sinfo *s = m_sinfo(m, binding);
    return s ? byoc_plugin_dtype(s->dtype) : GRAFT_DTYPE_UNKNOWN;
}
static int m_attr_ints(const graft_match *m, const char *binding, const char *attr, int64_t *vals, int cap) {
    const ir_call *c = m_call(m, binding);
    const ir_attr *a = c && c->attrs ? ir_attrs_get(c->attrs, attr) : NULL;
    if (!a) return -1;
    if (a->kind == IR_ATTR_INT || a->kind == IR_ATTR_BOOL) {
        if (cap > 0) vals[0] = a->kind == IR_ATTR_INT ? a->u.i : a->u.b;
        return 1;
    }
    return a->kind == IR_ATTR_ARRAY ? ir_attrs_get_ints(c->attrs, attr, vals, cap) : -1;
}
static const char *m_attr_str(const graft_match *m, const char *binding, const char *attr) {
    const ir_call *c = m_call(m, binding);
    return c && c->attrs ? ir_attrs_get_str(c->attrs, attr) : NULL;
}

static const graft_host_api HOST_API = {
    GRAFT_PLUGIN_ABI_MAJOR, GRAFT_PLUGIN_ABI_MINOR, host_set_error, host_option,
    r_symbol, r_num_nodes, r_num_inputs, r_input, r_num_outputs, r_output,
    n_kind, n_name, n_layer, n_num_inputs, n_input, n_num_outputs, n_dtype, n_ndim, n_shape, n_const_data,
    n_num_ops, n_op, n_attr_ints, n_attr_float, n_attr_str, n_arg_num,
    m_op, m_num_args, m_arg_dtype, m_arg_ndim, m_arg_dim, m_arg_const, m_ndim, m_dim, m_arg_num, m_attr_ints, m_attr_str,
    r_observed, m_dtype, m_arg_fields,
};

/* ---- the engine: compile per static graph, run per call ---- */

typedef struct plugin_state {
    const plugin_backend *pb;
    void *state;
    void *observed;                /* compiled with region_observed on a tap's first run */
    graft_plugin_options opts;
    pthread_mutex_t lock;          /* the plugin runs a state from one thread at a time */
    uint8_t *blob;                 /* the stored form's envelope, made when an artifact is written */
} plugin_state;

/* The plugin's serialize / deserialize when its struct has them (ABI 1.2). */
static bool has_blob_hooks(const graft_plugin *p) {
    return p->abi_minor >= 2 && p->struct_size >= offsetof(graft_plugin, deserialize) + sizeof(p->deserialize) &&
           p->serialize && p->deserialize;
}

/* ---- a plugin's stored form in an artifact: an envelope around what serialize wrote ----
 *   [0, 8) "GRPLUGIN", u32 envelope version, u32 header bytes, u64 payload bytes, u64 payload
 *   checksum (gr_hash_bytes), plugin name (64 bytes, NUL-padded), plugin version (32), payload
 * stored as one prepacked constant of the region's graph under BLOB_KEY. */
#define BLOB_MAGIC "GRPLUGIN"
#define BLOB_VERSION 1u
#define BLOB_HEADER 128u
#define BLOB_NAME_AT 32u
#define BLOB_VERSION_AT 96u
#define BLOB_SEED 0x706c7567ull
#define BLOB_KEY_FMT "plugin:%s:blob"

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The payload of a provided envelope, NULL with diag set when it is not one of this plugin's
 * that is whole and unaltered; *made_by: the version that wrote it. */
static const uint8_t *blob_open(const plugin_backend *pb, const rt_json_graph *g, const uint8_t *env, size_t len,
                                size_t *plen, char made_by[33], gr_diag *diag) {
    const char *name = pb->p->name, *sym = rt_json_graph_symbol(g);
    if (len < BLOB_HEADER || memcmp(env, BLOB_MAGIC, 8) != 0 || rd32(env + 8) != BLOB_VERSION ||
        rd32(env + 12) != BLOB_HEADER) {
        gr_diag_set(diag, GR_ERR_INVALID, "artifact region %s: the %s plugin's stored form is not one (%zu bytes, no "
                    "envelope header): the artifact is damaged; rebuild it", sym, name, len);
        return NULL;
    }
    char stored[65];
    memcpy(stored, env + BLOB_NAME_AT, 64);
    stored[64] = '\0';
    memcpy(made_by, env + BLOB_VERSION_AT, 32);
    made_by[32] = '\0';
    uint64_t want = rd64(env + 16);
    if (strcmp(stored, name) != 0) {
        gr_diag_set(diag, GR_ERR_INVALID, "artifact region %s: the stored form was made by plugin '%s', not %s", sym,
                    stored, name);
        return NULL;
    }
    if (want != len - BLOB_HEADER) {
        gr_diag_set(diag, GR_ERR_INVALID, "artifact region %s: the %s plugin's stored form (made by %s %s) is %s: "
                    "%zu bytes where its header says %llu; rebuild the artifact", sym, name, name, made_by,
                    want > len - BLOB_HEADER ? "truncated" : "longer than written", len - BLOB_HEADER,
                    (unsigned long long)want);
        return NULL;
    }
    if (gr_hash_bytes(env + BLOB_HEADER, len - BLOB_HEADER, BLOB_SEED) != rd64(env + 24)) {
        gr_diag_set(diag, GR_ERR_INVALID, "artifact region %s: the %s plugin's stored form (made by %s %s) fails its "
                    "checksum: it was altered; rebuild the artifact", sym, name, name, made_by);
        return NULL;
    }
    *plen = len - BLOB_HEADER;
    return env + BLOB_HEADER;
}

/* The plugin's read_value when its struct has it (ABI 1.1). */
static int (*read_value_of(const graft_plugin *p))(void *, uint32_t, void *) {
    return p->abi_minor >= 1 && p->struct_size >= offsetof(graft_plugin, read_value) + sizeof(p->read_value)
               ? p->read_value
               : NULL;
}

/* Compiles g into *out (observed: for graft diff's taps); with a stored form (blob, ABI 1.2),
 * the plugin's deserialize builds it from that instead. */
static gr_status plugin_compile(const plugin_backend *pb, rt_json_graph *g, const graft_plugin_options *o, int observed,
                                const uint8_t *blob, size_t blob_len, const char *made_by, void **out, gr_diag *diag) {
    uint32_t nn = rt_json_graph_num_nodes(g);
    graft_region r = {g, gr_xcalloc(nn + 1, sizeof(uint32_t)), observed};
    for (uint32_t i = 0; i < nn; i++) {
        r.const_index[i] = UINT32_MAX;
        rt_json_node *n = rt_json_graph_node(g, i);
        for (uint32_t c = 0; n->kind == RT_JSON_CONST && c < rt_json_graph_num_consts(g); c++)
            if (strcmp(rt_json_graph_const_name(g, c), n->name) == 0) r.const_index[i] = c;
    }
    graft_plugin_error err = {{0}};
    int rc = blob ? pb->p->deserialize(&HOST_API, &r, o, blob, blob_len, made_by, out, &err)
                  : pb->p->compile(&HOST_API, &r, o, out, &err);
    free(r.const_index);
    if (rc)
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "%s plugin: region %s: %s%s", pb->p->name, rt_json_graph_symbol(g),
                           blob ? "its stored form does not load: " : "",
                           err.msg[0] ? err.msg : blob ? "deserialize failed" : "compile failed");
    return GR_OK;
}

/* The index of the plugin's stored form among g's packs (provided by an artifact, or
 * recorded), -1 when none; key: its key. */
static int blob_index(const plugin_backend *pb, const rt_json_graph *g, char key[96]) {
    snprintf(key, 96, BLOB_KEY_FMT, pb->p->name);
    const char *k;
    for (uint32_t i = 0; (k = rt_json_graph_pack_at(g, i, NULL, NULL)); i++)
        if (strcmp(k, key) == 0) return (int)i;
    return -1;
}

/* The envelope provided for g (an artifact's), NULL when none; counted as used. */
static const uint8_t *provided_blob(const plugin_backend *pb, rt_json_graph *g, size_t *len) {
    char key[96];
    int i = blob_index(pb, g, key);
    if (i < 0) return NULL;
    rt_json_graph_pack_at(g, (uint32_t)i, NULL, len);
    return rt_json_graph_pack_find(g, key, *len);
}

static gr_status eng_prepare(rt_json_graph *g, const void *opts, void **state, gr_diag *diag) {
    const graft_plugin_options *o = opts;
    gr_status st = rt_json_graph_check(g, diag);
    void *ps = NULL;
    size_t env_len = 0, blob_len = 0;
    /* an artifact's stored form; a plugin without the hooks (an older minor) compiles */
    const uint8_t *env = !st && has_blob_hooks(o->pb->p) ? provided_blob(o->pb, g, &env_len) : NULL, *blob = NULL;
    char made_by[33] = "";
    if (env && !(blob = blob_open(o->pb, g, env, env_len, &blob_len, made_by, diag))) st = diag ? diag->code : GR_ERR_INVALID;
    if (!st) st = plugin_compile(o->pb, g, o, 0, blob, blob_len, made_by, &ps, diag);
    if (st) return st;
    plugin_state *s = gr_xcalloc(1, sizeof(*s));
    s->pb = o->pb;
    s->state = ps;
    s->opts = *o;
    pthread_mutex_init(&s->lock, NULL);
    *state = s;
    return GR_OK;
}

/* A run under graft diff's tap: the observed state runs, then each op node's output is read
 * back from the plugin and handed to the tap (a tap's change to it is not written back). */
static int run_observed(plugin_state *s, rt_json_graph *g, rt_json_tap_fn tap, void *user, const void *const *ins,
                        uint32_t nin, void *const *outs, uint32_t nout, graft_plugin_error *err, gr_diag *diag) {
    int (*read)(void *, uint32_t, void *) = read_value_of(s->pb->p);
    if (!s->observed && plugin_compile(s->pb, g, &s->opts, 1, NULL, 0, NULL, &s->observed, diag)) return -1;
    int rc = s->pb->p->run(s->observed, ins, nin, outs, nout, err);
    for (uint32_t nid = 0; !rc && nid < rt_json_graph_num_nodes(g); nid++) {
        const rt_json_node *n = rt_json_graph_node(g, nid);
        if (n->kind != RT_JSON_KERNEL || n->noutputs != 1) continue;
        rt_tensor *v = rt_tensor_new(n->dtypes[0], n->ndims[0], n->shapes[0]);
        bool got = v && read(s->observed, nid, rt_tensor_data(v)) == 0;
        rt_json_tap_point tp = {rt_json_graph_symbol(g), n, nid, 0, -1, s->pb->p->name, NULL,
                                got ? NULL : "another operator of the plugin"};
        tap(&tp, got ? v : NULL, user);
        rt_tensor_release(v);
    }
    return rc;
}

static gr_status eng_run(rt_json_graph *g, void *state, DLTensor *const *args, uint32_t nin, uint32_t nout,
                         gr_diag *diag) {
    plugin_state *s = state;
    gr_status st = rt_json_graph_check_args(g, args, nin, nout, diag);
    if (st) return st;
    const void *ins[64];
    void *outs[64];
    if (nin > 64 || nout > 64)
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "%s plugin: region %s has more than 64 inputs or outputs",
                           s->pb->p->name, rt_json_graph_symbol(g));
    for (uint32_t i = 0; i < nin; i++) ins[i] = args[i]->data;
    for (uint32_t i = 0; i < nout; i++) outs[i] = args[nin + i]->data;
    graft_plugin_error err = {{0}};
    void *tap_user = NULL;
    rt_json_tap_fn tap = rt_json_graph_tap(g, &tap_user);
    pthread_mutex_lock(&s->lock);
    int rc = tap && read_value_of(s->pb->p) ? run_observed(s, g, tap, tap_user, ins, nin, outs, nout, &err, diag)
                                            : s->pb->p->run(s->state, ins, nin, outs, nout, &err);
    pthread_mutex_unlock(&s->lock);
    if (rc < 0) return diag ? diag->code : GR_ERR_UNSUPPORTED;
    if (rc)
        return gr_diag_set(diag, GR_ERR_RUNTIME, "%s plugin: region %s: %s", s->pb->p->name, rt_json_graph_symbol(g),
                           err.msg[0] ? err.msg : "run failed");
    return GR_OK;
}

static void eng_release(rt_json_graph *g, void *state) {
    (void)g;
    plugin_state *s = state;
    if (!s) return;
    if (s->pb->p->release) s->pb->p->release(s->state);
    if (s->pb->p->release && s->observed) s->pb->p->release(s->observed);
    pthread_mutex_destroy(&s->lock);
    free(s->blob);
    free(s);
}

/* An artifact is being written: the plugin's stored form of the state, in its envelope, as
 * the graph's pack (once; not when the graph came with one). */
static gr_status eng_record_packs(rt_json_graph *g, void *state, gr_diag *diag) {
    plugin_state *s = state;
    const graft_plugin *p = s->pb->p;
    char key[96];
    if (!has_blob_hooks(p) || blob_index(s->pb, g, key) >= 0) return GR_OK;
    graft_plugin_error err = {{0}};
    size_t len = 0;
    int rc = p->serialize(s->state, NULL, 0, &len, &err);
    if (!rc && len == 0) return GR_OK;
    uint8_t *env = rc ? NULL : gr_xcalloc(1, BLOB_HEADER + len);
    size_t got = len;
    if (!env || p->serialize(s->state, env + BLOB_HEADER, len, &got, &err) || got != len) {
        free(env);
        return gr_diag_set(diag, GR_ERR_RUNTIME, "%s plugin: region %s: serialize: %s", p->name, rt_json_graph_symbol(g),
                           err.msg[0] ? err.msg : "it wrote another size than it asked for");
    }
    uint32_t ver = BLOB_VERSION, hdr = BLOB_HEADER;
    uint64_t n = len, sum = gr_hash_bytes(env + BLOB_HEADER, len, BLOB_SEED);
    memcpy(env, BLOB_MAGIC, 8);
    memcpy(env + 8, &ver, 4);
    memcpy(env + 12, &hdr, 4);
    memcpy(env + 16, &n, 8);
    memcpy(env + 24, &sum, 8);
    snprintf((char *)env + BLOB_NAME_AT, 64, "%s", p->name);
    snprintf((char *)env + BLOB_VERSION_AT, 32, "%s", p->version);
    s->blob = env;
    rt_json_graph_pack_record(g, key, env, BLOB_HEADER + len);
    return GR_OK;
}

static graft_plugin_options options_of(const plugin_backend *pb, const byoc_options *o) {
    graft_plugin_options po;
    memset(&po, 0, sizeof po);
    po.pb = pb;
    for (uint32_t i = 0; i < pb->b.noptions; i++)
        snprintf(po.values[i], OPTION_VALUE_MAX, "%s", byoc_option_str(o, &pb->b, pb->b.options[i].name));
    return po;
}

/* ---- the backend contract ---- */

static gr_status pb_compile_impl(const plugin_backend *pb, ir_ctx_t *ctx, const byoc_region *regions, uint32_t n,
                                 const byoc_options *options, rt_module **out, gr_diag *diag) {
    *out = NULL;
    rt_json_graph **graphs = gr_xcalloc(n + 1, sizeof(*graphs));
    json_cg_mode mode = pb->p->region_mode == GRAFT_REGION_PER_COMPOSITE ? JSON_CG_PER_COMPOSITE : JSON_CG_PER_OP;
    gr_status st = json_cg_build_graphs(ctx, regions, n, mode, graphs, diag);
    if (st) {
        free(graphs);
        return st;
    }
    graft_plugin_options po = options_of(pb, options);
    *out = rt_json_module_new(pb->p->name, &pb->eng, &po, graphs, n);
    free(graphs);
    return *out ? GR_OK : gr_diag_set(diag, GR_ERR_NOMEM, "%s plugin codegen: out of memory", pb->p->name);
}

/* The contract's functions get no backend pointer: one trampoline per plugin slot finds it. */

static gr_status pb_patterns_impl(const plugin_backend *pb, ir_ctx_t *ctx, const byoc_options *opts,
                                  const byoc_pattern **out, uint32_t *n, gr_diag *diag);
static gr_status pb_load_impl(const plugin_backend *pb, const uint8_t *buf, size_t len,
                              struct rt_tensor *(*consts)(const char *name, void *user), void *user,
                              const byoc_options *opts, rt_module **out, gr_diag *diag);

#define SLOT(i)                                                                                                 \
    static gr_status slot_patterns_##i(ir_ctx_t *ctx, const byoc_options *opts, const byoc_pattern **out,    \
                                       uint32_t *n, gr_diag *diag) {                                          \
        return pb_patterns_impl(g_plugins[i], ctx, opts, out, n, diag);                                          \
    }                                                                                                         \
    static gr_status slot_compile_##i(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n,                 \
                                      const byoc_options *opts, rt_module **out, gr_diag *diag) {            \
        return pb_compile_impl(g_plugins[i], ctx, regions, n, opts, out, diag);                                  \
    }                                                                                                         \
    static gr_status slot_load_##i(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *, void *), \
                                   void *user, const byoc_options *opts, rt_module **out, gr_diag *diag) {   \
        return pb_load_impl(g_plugins[i], buf, len, consts, user, opts, out, diag);                              \
    }
SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7)
SLOT(8) SLOT(9) SLOT(10) SLOT(11) SLOT(12) SLOT(13) SLOT(14) SLOT(15)
#undef SLOT
#define SLOT_FNS(i) {slot_patterns_##i, slot_compile_##i, slot_load_##i}
static const struct {
    gr_status (*patterns)(ir_ctx_t *, const byoc_options *, const byoc_pattern **, uint32_t *, gr_diag *);
    gr_status (*compile)(ir_ctx_t *, const byoc_region *, uint32_t, const byoc_options *, rt_module **, gr_diag *);
    gr_status (*load)(const uint8_t *, size_t, struct rt_tensor *(*)(const char *, void *), void *,
                      const byoc_options *, rt_module **, gr_diag *);
} SLOTS[MAX_PLUGINS] = {SLOT_FNS(0),  SLOT_FNS(1),  SLOT_FNS(2),  SLOT_FNS(3), SLOT_FNS(4),  SLOT_FNS(5),
                        SLOT_FNS(6),  SLOT_FNS(7),  SLOT_FNS(8),  SLOT_FNS(9), SLOT_FNS(10), SLOT_FNS(11),
                        SLOT_FNS(12), SLOT_FNS(13), SLOT_FNS(14), SLOT_FNS(15)};
#undef SLOT_FNS

static gr_status pb_prepare(rt_module *mod, gr_diag *diag) { return rt_json_module_prepare(mod, diag); }

/* A plugin check after the pattern file's own (only_used_by, named checks). */
typedef struct plugin_check {
    const plugin_backend *pb;
    graft_plugin_check_fn fn;
    pat_check_fn inner;
    void *inner_user;
} plugin_check;

static bool run_plugin_check(const pat_check_ctx *c, const char **reason, void *user) {
    const plugin_check *pc = user;
    if (pc->inner && !pc->inner(c, reason, pc->inner_user)) return false;
    graft_match m = {c};
    const char *why = NULL;
    if (pc->fn(&HOST_API, &m, &why) == 0) return true;
    *reason = why ? why : "rejected by the plugin's check";
    return false;
}

static _Thread_local int g_in_patterns;

static gr_status read_patterns(const plugin_backend *pb, ir_ctx_t *ctx, pat_table **out, gr_diag *diag) {
    const graft_plugin *p = pb->p;
    pat_table *t = NULL;
    gr_status st = GR_OK;
    if (p->pattern_text) st = pat_table_read(ctx, p->name, p->pattern_text, strlen(p->pattern_text), &t, diag);
    /* pattern_file came with ABI 1.1: a 1.0 plugin's struct ends before it */
    const char *pattern_file = p->abi_minor >= 1 && p->struct_size >= offsetof(graft_plugin, pattern_file) + sizeof(char *)
                                   ? p->pattern_file
                                   : NULL;
    if (!st && pattern_file) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", pb->dir, pattern_file);
        pat_table *f = NULL;
        st = pat_table_read_file(ctx, path, &f, diag);
        if (!st && !t) t = f, f = NULL;
        for (uint32_t i = 0; f && i < f->n; i++) {
            if (t->n == t->cap) {
                t->cap = t->cap ? 2 * t->cap : 8;
                t->entries = gr_xrealloc(t->entries, sizeof(*t->entries) * t->cap);
            }
            t->entries[t->n++] = f->entries[i];
        }
        pat_table_free(f);
    }
    if (st) {
        pat_table_free(t);
        return st;
    }
    *out = t ? t : pat_table_new();
    return GR_OK;
}

static gr_status pb_patterns_impl(const plugin_backend *pb, ir_ctx_t *ctx, const byoc_options *opts,
                                  const byoc_pattern **out, uint32_t *n, gr_diag *diag) {
    *out = NULL;
    *n = 0;
    /* a pattern naming a backend's check reads every backend's table, this one's included */
    if (g_in_patterns) return GR_OK;
    pat_table *t = NULL;
    gr_status st = read_patterns(pb, ctx, &t, diag);
    if (st) return st;
    /* the entries move into ctx's arena: the checks made below point at them */
    pat_table_entry *entries = IR_NEW_ARRAY(ctx, pat_table_entry, t->n + 1);
    if (t->n) memcpy(entries, t->entries, sizeof(*entries) * t->n);
    pat_table arena_table = {t->n, t->n, entries};
    size_t len = strlen(pb->p->name);
    for (uint32_t i = 0; i < t->n && !st; i++)
        if (strncmp(entries[i].name, pb->p->name, len) != 0 || entries[i].name[len] != '.')
            st = gr_diag_set(diag, GR_ERR_INVALID, "%s plugin: pattern '%s' is not named '%s.<pattern>'", pb->p->name,
                             entries[i].name, pb->p->name);
    pat_table_free(t);
    if (st) return st;
    byoc_pattern *ps = NULL;
    g_in_patterns++;
    st = byoc_patterns_from_table(ctx, &arena_table, opts, &ps, diag);
    g_in_patterns--;
    if (st) return st;
    byoc_pattern *res = IR_NEW_ARRAY(ctx, byoc_pattern, arena_table.n + 1);
    for (uint32_t i = 0; i < arena_table.n; i++) {
        res[i] = ps[i];
        for (uint32_t k = 0; k < pb->p->nchecks; k++) {
            const graft_plugin_check *ck = &pb->p->checks[k];
            if (!ck->pattern || !ck->check || strcmp(ck->pattern, res[i].name) != 0) continue;
            plugin_check *pc = IR_NEW(ctx, plugin_check);
            *pc = (plugin_check){pb, ck->check, res[i].check, res[i].check_user};
            res[i].check = run_plugin_check;
            res[i].check_user = pc;
        }
    }
    free(ps);
    *out = res;
    *n = arena_table.n;
    return GR_OK;
}

static gr_status pb_load_impl(const plugin_backend *pb, const uint8_t *buf, size_t len,
                              struct rt_tensor *(*consts)(const char *name, void *user), void *user,
                              const byoc_options *opts, rt_module **out, gr_diag *diag) {
    json_t *root = json_loadb((const char *)buf, len, 0, NULL);
    const char *made = json_string_value(json_object_get(root, "engine_version"));
    int have = byoc_plugin_version_major(pb->p->version), want = byoc_plugin_version_major(made);
    gr_status st = GR_OK;
    if (!made || have != want)
        st = gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                         "artifact region module was made by backend plugin %s %s; the loaded %s plugin (%s) is "
                         "version %s, another major version: load the plugin it was built with, or rebuild the "
                         "artifact",
                         pb->p->name, made ? made : "(no version)", pb->p->name, pb->b.path, pb->p->version);
    json_decref(root);
    if (st) return st;
    graft_plugin_options po = options_of(pb, opts);
    return rt_json_module_load(buf, len, &pb->eng, &po, consts, user, out, diag);
}

/* ---- loading ---- */

static bool valid_name(const char *s) {
    if (!s || !*s || strlen(s) > 64) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
    return true;
}

static const byoc_opt_type OPT_TYPES[] = {
    [GRAFT_OPTION_BOOL] = BYOC_OPT_BOOL, [GRAFT_OPTION_INT] = BYOC_OPT_INT, [GRAFT_OPTION_STRING] = BYOC_OPT_STR};

static gr_status check_plugin(const char *path, const graft_plugin *p, gr_diag *diag) {
    if (!p) return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s: graft_backend_plugin() returned NULL", path);
    if (p->abi_major != GRAFT_PLUGIN_ABI_MAJOR)
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                           "backend plugin %s was built for graft plugin ABI %u.%u; this graft speaks %u.%u (another "
                           "major version): rebuild the plugin against this graft's include/graft",
                           path, p->abi_major, p->abi_minor, GRAFT_PLUGIN_ABI_MAJOR, GRAFT_PLUGIN_ABI_MINOR);
    if (p->abi_minor > GRAFT_PLUGIN_ABI_MINOR)
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                           "backend plugin %s was built for graft plugin ABI %u.%u, newer than this graft's %u.%u: "
                           "use a newer graft",
                           path, p->abi_major, p->abi_minor, GRAFT_PLUGIN_ABI_MAJOR, GRAFT_PLUGIN_ABI_MINOR);
    if (p->struct_size < offsetof(graft_plugin, release) + sizeof(p->release))
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s: struct_size %u is too small", path, p->struct_size);
    if (!valid_name(p->name))
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s: name '%s' is not [a-z0-9_]+", path,
                           p->name ? p->name : "");
    if (byoc_plugin_version_major(p->version) < 0)
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s (%s): version '%s' is not MAJOR.MINOR.PATCH", path,
                           p->name, p->version ? p->version : "");
    if (!p->compile || !p->run)
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s (%s): no compile or run function", path, p->name);
    if (p->abi_minor >= 2 && p->struct_size >= offsetof(graft_plugin, deserialize) + sizeof(p->deserialize) &&
        !p->serialize != !p->deserialize)
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s (%s): serialize and deserialize come together (one "
                           "of them is NULL)", path, p->name);
    if (p->noptions > MAX_PLUGIN_OPTIONS)
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s (%s): more than %d options", path, p->name,
                           MAX_PLUGIN_OPTIONS);
    for (uint32_t i = 0; i < p->noptions; i++) {
        const graft_plugin_option *o = &p->options[i];
        if (!valid_name(o->name) || (unsigned)o->type > GRAFT_OPTION_STRING || !o->dflt ||
            strlen(o->dflt) >= OPTION_VALUE_MAX)
            return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s (%s): option %u is malformed", path, p->name, i);
    }
    return GR_OK;
}

gr_status byoc_plugin_load(const char *path, const byoc_backend **out, gr_diag *diag) {
    if (out) *out = NULL;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) return gr_diag_set(diag, GR_ERR_IO, "backend plugin %s: %s", path, dlerror());
    graft_backend_plugin_fn entry;
    void *sym = dlsym(dl, GRAFT_PLUGIN_ENTRY);
    memcpy(&entry, &sym, sizeof entry);
    if (!sym) {
        dlclose(dl);
        return gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s: no %s() (not a graft backend plugin)", path,
                           GRAFT_PLUGIN_ENTRY);
    }
    const graft_plugin *p = entry();
    gr_status st = check_plugin(path, p, diag);
    pthread_mutex_lock(&g_plugin_lock);
    const byoc_backend *have = st ? NULL : byoc_backend_find(p->name);
    if (!st && have) {
        if (byoc_plugin_of(have)) {
            /* the same plugin again: keep the registered one */
            pthread_mutex_unlock(&g_plugin_lock);
            dlclose(dl);
            if (out) *out = have;
            return GR_OK;
        }
        st = gr_diag_set(diag, GR_ERR_INVALID, "backend plugin %s: name '%s' is a built-in backend", path, p->name);
    }
    if (!st && g_nplugins == MAX_PLUGINS)
        st = gr_diag_set(diag, GR_ERR_UNSUPPORTED, "backend plugin %s: more than %d plugins", path, MAX_PLUGINS);
    if (st) {
        pthread_mutex_unlock(&g_plugin_lock);
        dlclose(dl);
        return st;
    }
    plugin_backend *pb = gr_xcalloc(1, sizeof(*pb));
    pb->p = p;
    pb->dl = dl;
    char *full = realpath(path, NULL);
    pb->b.path = full ? full : gr_xstrdup(path);
    char *slash = strrchr(pb->b.path, '/');
    pb->dir = gr_xstrdup(slash ? pb->b.path : ".");
    if (slash) pb->dir[slash - pb->b.path] = '\0';
    snprintf(pb->kind, sizeof pb->kind, "%s%s", BYOC_PLUGIN_KIND_PREFIX, p->name);
    pb->options = gr_xcalloc(p->noptions + 1, sizeof(byoc_option));
    for (uint32_t i = 0; i < p->noptions; i++)
        pb->options[i] = (byoc_option){p->options[i].name, OPT_TYPES[p->options[i].type], p->options[i].dflt,
                                       p->options[i].help ? p->options[i].help : "", p->options[i].choices};
    uint32_t slot = g_nplugins;
    pb->b.name = p->name;
    pb->b.description = p->description ? p->description : "";
    pb->b.get_patterns = SLOTS[slot].patterns;
    pb->b.compile = SLOTS[slot].compile;
    pb->b.load = SLOTS[slot].load;
    pb->b.runtime_kind = pb->kind;
    pb->b.options = pb->options;
    pb->b.noptions = p->noptions;
    pb->b.prepare = pb_prepare;
    pb->b.version = p->version;
    pb->eng = (rt_json_engine){pb->kind,  eng_prepare,      eng_run, eng_release, sizeof(graft_plugin_options),
                               p->version, eng_record_packs};
    g_plugins[slot] = pb;
    g_nplugins++;
    byoc_backend_register(&pb->b);
    pthread_mutex_unlock(&g_plugin_lock);
    if (out) *out = &pb->b;
    return GR_OK;
}
