/* libtriton_graft.so: a Triton Inference Server backend that serves graft artifacts, the way
 * Triton's ONNX Runtime and OpenVINO backends serve their models.
 *
 * A model repository entry is MODEL/config.pbtxt (backend: "graft") and MODEL/1/model.graft.
 *   - One graft_session_load per model, in TRITONBACKEND_ModelInitialize; every instance of the
 *     model runs that one loaded artifact (graft_session_run is thread-safe), so N instances cost
 *     one copy of the weights and compiled code. Built against graft's public API alone
 *     (include/graft/graft.h).
 *   - The config may leave out inputs, outputs and max_batch_size: the backend fills them in
 *     from the artifact's signature (auto-complete). Dim 0 of every input and output being one
 *     symbolic var (`graft build` without --input-shape of an ONNX model with a dynamic batch)
 *     makes the model batchable: max_batch_size defaults to the server's
 *     --backend-config=default-max-batch-size (Triton's default: 4) and dynamic batching is
 *     turned on; a config that lists its inputs keeps its own max_batch_size.
 *   - Requests that Triton's dynamic batcher hands over together are concatenated along the
 *     batch dim (those with equal non-batch shapes, in order) and run once.
 *   - The config's parameters are backend options: parameters { key: "dnnl.threads" value:
 *     { string_value: "2" } } is dnnl.threads=2 for the artifact's oneDNN regions.
 *   - graft's errors reach the client as Triton errors that keep graft's wording: the file, the
 *     frontend layer and the op. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <graft/graft.h>

#include "triton_api.h"

#define GT_MAX_IO 16
#define GT_MAX_NDIM 8

/* graft's element types and Triton's, one row each. */
typedef struct gt_dtype {
    graft_dtype graft;
    TRITONSERVER_DataType triton;
    const char *config;            /* config.pbtxt's data_type */
} gt_dtype;

static const gt_dtype DTYPES[] = {
    {GRAFT_FLOAT32, TRITONSERVER_TYPE_FP32, "TYPE_FP32"}, {GRAFT_FLOAT16, TRITONSERVER_TYPE_FP16, "TYPE_FP16"},
    {GRAFT_FLOAT64, TRITONSERVER_TYPE_FP64, "TYPE_FP64"}, {GRAFT_BFLOAT16, TRITONSERVER_TYPE_BF16, "TYPE_BF16"},
    {GRAFT_INT8, TRITONSERVER_TYPE_INT8, "TYPE_INT8"},    {GRAFT_INT16, TRITONSERVER_TYPE_INT16, "TYPE_INT16"},
    {GRAFT_INT32, TRITONSERVER_TYPE_INT32, "TYPE_INT32"}, {GRAFT_INT64, TRITONSERVER_TYPE_INT64, "TYPE_INT64"},
    {GRAFT_UINT8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8"}, {GRAFT_UINT16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16"},
    {GRAFT_UINT32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32"}, {GRAFT_UINT64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64"},
    {GRAFT_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL"},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

static const gt_dtype *dtype_of_graft(graft_dtype t) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].graft == t) return &DTYPES[i];
    return NULL;
}

static const gt_dtype *dtype_of_triton(TRITONSERVER_DataType t) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].triton == t) return &DTYPES[i];
    return NULL;
}

static size_t dtype_bytes(const gt_dtype *t) { return graft_dtype_size(t->graft); }

/* An input or output of the artifact. */
typedef struct gt_sig {
    const char *name;              /* the artifact's */
    const gt_dtype *dtype;
    int32_t ndim;
    int64_t dims[GT_MAX_NDIM];     /* -1: symbolic */
} gt_sig;

typedef struct gt_model {
    graft_session *gs;
    char name[256];
    uint32_t nin, nout;
    gt_sig in[GT_MAX_IO], out[GT_MAX_IO];
    bool batchable;                /* dim 0 of every input and output is one symbolic var */
    int64_t max_batch;             /* the config's; > 0: requests carry the batch dim */
} gt_model;

static TRITONSERVER_Error *gt_err(TRITONSERVER_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static TRITONSERVER_Error *gt_err(TRITONSERVER_Error_Code code, const char *fmt, ...) {
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TRITONSERVER_ErrorNew(code, msg);
}

/* An error about model m: "graft: model 'NAME': ...". */
static TRITONSERVER_Error *gt_merr(const gt_model *m, TRITONSERVER_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static TRITONSERVER_Error *gt_merr(const gt_model *m, TRITONSERVER_Error_Code code, const char *fmt, ...) {
    char msg[3072];
    int n = snprintf(msg, sizeof msg, "graft: model '%s': ", m->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    return TRITONSERVER_ErrorNew(code, msg);
}

/* graft's error in its own words ("FILE: layer 'L' (op O): message"); frees it. */
static TRITONSERVER_Error *gt_graft_err(TRITONSERVER_Error_Code code, const char *what, graft_error *ge) {
    TRITONSERVER_Error *e = gt_err(code, "graft: %s: %s", what, graft_error_message(ge));
    graft_error_free(ge);
    return e;
}

/* Logs and drops an error of a call whose failure leaves nothing else to do. */
static void gt_log(TRITONSERVER_Error *e, const char *what) {
    if (!e) return;
    char msg[3200];
    snprintf(msg, sizeof msg, "graft backend: %s: %s", what, TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__, msg));
    TRITONSERVER_ErrorDelete(e);
}

#define GT_TRY(x)                                \
    do {                                         \
        TRITONSERVER_Error *gt_e_ = (x);         \
        if (gt_e_) return gt_e_;                 \
    } while (0)

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- The artifact's signature ---- */

/* Input (output false) or output i of the artifact. */
static TRITONSERVER_Error *sig_of(const gt_model *m, bool output, uint32_t i, gt_sig *out) {
    const graft_session *gs = m->gs;
    const char *kind = output ? "output" : "input";
    out->name = output ? graft_session_output_name(gs, i) : graft_session_input_name(gs, i);
    int nd = output ? graft_session_output_ndim(gs, i) : graft_session_input_ndim(gs, i);
    if (nd < 0 || nd > GT_MAX_NDIM)
        return gt_merr(m, TRITONSERVER_ERROR_UNSUPPORTED, "%s '%s' is not a tensor of known rank", kind, out->name);
    out->dtype = dtype_of_graft(output ? graft_session_output_dtype(gs, i) : graft_session_input_dtype(gs, i));
    if (!out->dtype)
        return gt_merr(m, TRITONSERVER_ERROR_UNSUPPORTED, "%s '%s' has a dtype Triton has no type for", kind,
                      out->name);
    out->ndim = nd;
    for (int k = 0; k < nd; k++)
        out->dims[k] = output ? graft_session_output_dim(gs, i, k) : graft_session_input_dim(gs, i, k);
    return NULL;
}

/* Dim 0 is the symbolic var *var (the first one seen sets it). */
static bool batch_var(const char *dim0, const char **var) {
    if (!dim0) return false;
    if (!*var) *var = dim0;
    return strcmp(*var, dim0) == 0;
}

static TRITONSERVER_Error *read_signature(gt_model *m) {
    m->nin = graft_session_num_inputs(m->gs);
    m->nout = graft_session_num_outputs(m->gs);
    if (m->nin > GT_MAX_IO || m->nout > GT_MAX_IO || m->nout == 0)
        return gt_merr(m, TRITONSERVER_ERROR_UNSUPPORTED, "%u inputs and %u outputs (at most %d each)",
                      m->nin, m->nout, GT_MAX_IO);
    const char *var = NULL;
    m->batchable = true;
    for (uint32_t i = 0; i < m->nin; i++) {
        GT_TRY(sig_of(m, false, i, &m->in[i]));
        m->batchable &= batch_var(graft_session_input_dim_symbol(m->gs, i, 0), &var);
    }
    for (uint32_t i = 0; i < m->nout; i++) {
        GT_TRY(sig_of(m, true, i, &m->out[i]));
        m->batchable &= batch_var(graft_session_output_dim_symbol(m->gs, i, 0), &var);
    }
    return NULL;
}

/* ---- The model config (Triton hands it over as JSON) ---- */

/* A JSON integer; protobuf's JSON writes int64 fields as strings. */
static bool json_int(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) return *out = json_integer_value(v), true;
    if (!json_is_string(v)) return false;
    char *end;
    *out = strtoll(json_string_value(v), &end, 10);
    return end != json_string_value(v) && *end == '\0';
}

static const gt_sig *find_sig(const gt_sig *sigs, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(sigs[i].name, name) == 0) return &sigs[i];
    return NULL;
}

static json_t *sig_json(const gt_sig *s, bool batched) {
    json_t *dims = json_array();
    for (int32_t k = batched ? 1 : 0; k < s->ndim; k++) json_array_append_new(dims, json_integer(s->dims[k]));
    return json_pack("{s:s, s:s, s:o}", "name", s->name, "data_type", s->dtype->config, "dims", dims);
}

/* Fills what the config leaves out from the artifact. Returns true when it changed anything. */
static bool complete_config(const gt_model *m, json_t *cfg, int64_t default_max_batch) {
    bool changed = false;
    json_t *ins = json_object_get(cfg, "input"), *outs = json_object_get(cfg, "output");
    int64_t mb = 0;
    if (!json_int(json_object_get(cfg, "max_batch_size"), &mb)) mb = 0;
    if (mb == 0 && m->batchable && json_array_size(ins) == 0 && default_max_batch > 0) {
        json_object_set_new(cfg, "max_batch_size", json_integer(default_max_batch));
        if (!json_object_get(cfg, "dynamic_batching")) json_object_set_new(cfg, "dynamic_batching", json_object());
        mb = default_max_batch;
        changed = true;
    }
    if (json_array_size(ins) == 0) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < m->nin; i++) json_array_append_new(a, sig_json(&m->in[i], mb > 0));
        json_object_set_new(cfg, "input", a);
        changed = true;
    }
    if (json_array_size(outs) == 0) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < m->nout; i++) json_array_append_new(a, sig_json(&m->out[i], mb > 0));
        json_object_set_new(cfg, "output", a);
        changed = true;
    }
    return changed;
}

/* The config's inputs and outputs must be the artifact's: names, types and dims. */
static TRITONSERVER_Error *check_ios(const gt_model *m, json_t *list, const gt_sig *sigs, uint32_t n,
                                     const char *kind) {
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *dt = json_string_value(json_object_get(e, "data_type"));
        const gt_sig *s = name ? find_sig(sigs, n, name) : NULL;
        if (!s)
            return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt's %s '%s' is not one of model.graft's",
                          kind, name ? name : "");
        if (!dt || strcmp(dt, s->dtype->config) != 0)
            return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "%s '%s' is %s in model.graft, %s in config.pbtxt",
                          kind, name, s->dtype->config, dt ? dt : "missing");
        json_t *dims = json_object_get(e, "dims");
        int32_t off = m->max_batch > 0 ? 1 : 0;
        bool ok = (int64_t)json_array_size(dims) == s->ndim - off;
        for (int32_t k = 0; ok && k + off < s->ndim; k++) {
            int64_t v;
            int64_t want = s->dims[k + off];
            ok = json_int(json_array_get(dims, (size_t)k), &v) && (want < 0 || v == -1 || v == want);
        }
        if (!ok)
            return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG,
                          "%s '%s': config.pbtxt's dims do not match model.graft's (%d dims%s, -1 symbolic)",
                          kind, name, s->ndim - off, off ? " after the batch dim" : "");
    }
    return NULL;
}

static TRITONSERVER_Error *read_options(const gt_model *m, json_t *cfg, graft_session_options *opts) {
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "parameters"), key, v) {
        const char *val = json_string_value(json_object_get(v, "string_value"));
        char a[512];
        snprintf(a, sizeof a, "%s=%s", key, val ? val : "");
        graft_error *ge = NULL;
        if (graft_session_options_set(opts, a, &ge) != GRAFT_OK) {
            char what[300];
            snprintf(what, sizeof what, "model '%s': parameter '%s'", m->name, key);
            return gt_graft_err(TRITONSERVER_ERROR_INVALID_ARG, what, ge);
        }
    }
    return NULL;
}

/* A config message as JSON: the model's (backend NULL; ours to delete) or the backend's (the
 * server's). */
static TRITONSERVER_Error *get_config(TRITONBACKEND_Model *model, TRITONBACKEND_Backend *backend, json_t **cfg) {
    TRITONSERVER_Message *msg;
    GT_TRY(backend ? TRITONBACKEND_BackendConfig(backend, &msg) : TRITONBACKEND_ModelConfig(model, 1, &msg));
    const char *buf;
    size_t len;
    TRITONSERVER_Error *e = TRITONSERVER_MessageSerializeToJson(msg, &buf, &len);
    json_error_t je;
    *cfg = e ? NULL : json_loadb(buf, len, 0, &je);
    if (!backend) gt_log(TRITONSERVER_MessageDelete(msg), "model config");
    if (!e && !*cfg) e = gt_err(TRITONSERVER_ERROR_INTERNAL, "graft: a config is not JSON: %s", je.text);
    return e;
}

static TRITONSERVER_Error *set_config(TRITONBACKEND_Model *model, json_t *cfg) {
    char *s = json_dumps(cfg, JSON_COMPACT);
    TRITONSERVER_Message *msg;
    TRITONSERVER_Error *e = TRITONSERVER_MessageNewFromSerializedJson(&msg, s, strlen(s));
    free(s);
    if (e) return e;
    e = TRITONBACKEND_ModelSetConfig(model, 1, msg);
    gt_log(TRITONSERVER_MessageDelete(msg), "model config");
    return e;
}

/* ---- Backend, model and instance lifetime ---- */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
    (void)backend;
    uint32_t major, minor;
    GT_TRY(TRITONBACKEND_ApiVersion(&major, &minor));
    if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR)
        return gt_err(TRITONSERVER_ERROR_UNSUPPORTED,
                      "graft: the server's backend API is %u.%u; the graft backend needs %d.%d or a later 1.x",
                      major, minor, TRITONBACKEND_API_VERSION_MAJOR, TRITONBACKEND_API_VERSION_MINOR);
    return NULL;
}

static TRITONSERVER_Error *model_init(TRITONBACKEND_Model *model, gt_model *m, json_t **cfgp) {
    const char *name, *repo;
    uint64_t version;
    TRITONBACKEND_ArtifactType at;
    GT_TRY(TRITONBACKEND_ModelName(model, &name));
    snprintf(m->name, sizeof m->name, "%s", name);
    GT_TRY(TRITONBACKEND_ModelVersion(model, &version));
    GT_TRY(TRITONBACKEND_ModelRepository(model, &at, &repo));
    if (at != TRITONBACKEND_ARTIFACT_FILESYSTEM)
        return gt_merr(m, TRITONSERVER_ERROR_UNSUPPORTED, "the repository is not a file system");
    GT_TRY(get_config(model, NULL, cfgp));
    json_t *cfg = *cfgp;
    const char *file = json_string_value(json_object_get(cfg, "default_model_filename"));
    char path[4096];
    if (!file || !file[0]) file = "model.graft";
    snprintf(path, sizeof path, "%s/%llu/%s", repo, (unsigned long long)version, file);

    graft_session_options *opts = graft_session_options_new();
    TRITONSERVER_Error *e = read_options(m, cfg, opts);
    graft_error *ge = NULL;
    if (!e && graft_session_load(path, opts, &m->gs, &ge) != GRAFT_OK) {
        char what[4400];
        bool named = graft_error_file(ge)[0];
        snprintf(what, sizeof what, "model '%s'%s%s", m->name, named ? "" : ": ", named ? "" : path);
        e = gt_graft_err(TRITONSERVER_ERROR_INVALID_ARG, what, ge);
    }
    graft_session_options_free(opts);
    if (e) return e;
    GT_TRY(read_signature(m));

    bool autocomplete = false;
    GT_TRY(TRITONBACKEND_ModelAutoCompleteConfig(model, &autocomplete));
    if (autocomplete) {
        TRITONBACKEND_Backend *backend;
        json_t *bcfg = NULL;
        int64_t dflt = 0;
        GT_TRY(TRITONBACKEND_ModelBackend(model, &backend));
        GT_TRY(get_config(NULL, backend, &bcfg));
        if (!json_int(json_object_get(json_object_get(bcfg, "cmdline"), "default-max-batch-size"), &dflt)) dflt = 4;
        json_decref(bcfg);
        if (complete_config(m, cfg, dflt)) GT_TRY(set_config(model, cfg));
    }
    if (!json_int(json_object_get(cfg, "max_batch_size"), &m->max_batch)) m->max_batch = 0;
    if (m->max_batch > 0 && !m->batchable)
        return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG,
                      "max_batch_size is %lld but model.graft has no symbolic batch dim shared by "
                      "its inputs and outputs (build it without --input-shape on the batch, or set max_batch_size 0)",
                      (long long)m->max_batch);
    GT_TRY(check_ios(m, json_object_get(cfg, "input"), m->in, m->nin, "input"));
    GT_TRY(check_ios(m, json_object_get(cfg, "output"), m->out, m->nout, "output"));
    char msg[4500];
    snprintf(msg, sizeof msg, "graft backend: model '%s': loaded %s once for all its instances (max_batch_size %lld)",
             m->name, path, (long long)m->max_batch);
    TRITONSERVER_ErrorDelete(TRITONSERVER_LogMessage(TRITONSERVER_LOG_INFO, __FILE__, __LINE__, msg));
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
    gt_model *m = calloc(1, sizeof *m);
    if (!m) return gt_err(TRITONSERVER_ERROR_INTERNAL, "graft: out of memory");
    json_t *cfg = NULL;
    TRITONSERVER_Error *e = model_init(model, m, &cfg);
    json_decref(cfg);
    if (!e) e = TRITONBACKEND_ModelSetState(model, m);
    if (e) {
        graft_session_free(m->gs);
        free(m);
    }
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
    void *state;
    GT_TRY(TRITONBACKEND_ModelState(model, &state));
    gt_model *m = state;  /* NULL: the server finalizes a model whose initialize failed too */
    if (m) graft_session_free(m->gs);
    free(m);
    return NULL;
}

/* An instance keeps no state of its own: it runs its model's one loaded artifact. */
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
    TRITONSERVER_InstanceGroupKind kind;
    GT_TRY(TRITONBACKEND_ModelInstanceKind(instance, &kind));
    if (kind != TRITONSERVER_INSTANCEGROUPKIND_CPU)
        return gt_err(TRITONSERVER_ERROR_UNSUPPORTED,
                      "graft: instances run on the CPU: use instance_group { kind: KIND_CPU }");
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
    (void)instance;
    return NULL;
}

/* ---- Execution ---- */

/* One request's inputs, checked against the artifact. */
typedef struct gt_req {
    TRITONBACKEND_Request *req;
    TRITONBACKEND_Response *resp;
    TRITONSERVER_Error *err;       /* set: answered with this error */
    int64_t batch;                 /* the batch dim's value (1 when the model does not batch) */
    const void *data[GT_MAX_IO];
    void *copy[GT_MAX_IO];         /* owned contiguous copies of inputs given in several buffers */
    int32_t ndim[GT_MAX_IO];
    int64_t shape[GT_MAX_IO][GT_MAX_NDIM];
    size_t bytes[GT_MAX_IO];
} gt_req;

static TRITONSERVER_Error *read_input(const gt_model *m, gt_req *r, uint32_t i) {
    const gt_sig *s = &m->in[i];
    TRITONBACKEND_Input *in = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_RequestInput(r->req, s->name, &in);
    TRITONSERVER_ErrorDelete(e);
    if (e || !in)
        return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "the request has no input '%s'", s->name);
    TRITONSERVER_DataType dt;
    const int64_t *shape;
    uint32_t ndim, nbuf;
    uint64_t bytes;
    GT_TRY(TRITONBACKEND_InputProperties(in, NULL, &dt, &shape, &ndim, &bytes, &nbuf));
    const gt_dtype *t = dtype_of_triton(dt);
    if (t != s->dtype)
        return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "input '%s' is %s, the request's %s",
                      s->name, s->dtype->config, t ? t->config : "of another type");
    bool ok = (int32_t)ndim == s->ndim;
    uint64_t numel = 1;
    for (uint32_t k = 0; ok && k < ndim; k++) {
        ok = shape[k] >= 0 && (s->dims[k] < 0 || shape[k] == s->dims[k]);
        numel *= (uint64_t)shape[k];
        r->shape[i][k] = shape[k];
    }
    if (!ok || numel * dtype_bytes(t) != bytes)
        return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "input '%s' has a shape the model does not take",
                      s->name);
    r->ndim[i] = s->ndim;
    r->bytes[i] = bytes;
    int64_t b = m->max_batch > 0 ? shape[0] : 1;
    if (i > 0 && b != r->batch)
        return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "inputs '%s' and '%s' have different batch sizes",
                      m->in[0].name, s->name);
    r->batch = b;
    uint8_t *dst = NULL;
    uint64_t off = 0;
    for (uint32_t k = 0; k < nbuf; k++) {
        const void *p;
        uint64_t len;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mid = 0;
        GT_TRY(TRITONBACKEND_InputBuffer(in, k, &p, &len, &mt, &mid));
        if (mt == TRITONSERVER_MEMORY_GPU || off + len > bytes)
            return gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "input '%s': a buffer on a GPU or past its size",
                          s->name);
        if (nbuf == 1) {
            r->data[i] = p;
            break;
        }
        if (!dst && !(dst = r->copy[i] = malloc(bytes ? bytes : 1)))
            return gt_err(TRITONSERVER_ERROR_INTERNAL, "graft: out of memory");
        memcpy(dst + off, p, len);
        off += len;
        r->data[i] = dst;
    }
    if (nbuf == 0) r->data[i] = "";
    return NULL;
}

static bool same_item_shape(const gt_model *m, const gt_req *a, const gt_req *b) {
    for (uint32_t i = 0; i < m->nin; i++)
        if (memcmp(&a->shape[i][1], &b->shape[i][1], sizeof(int64_t) * (size_t)(a->ndim[i] - 1)) != 0) return false;
    return true;
}

/* The inputs of requests r[0..n) as one batch: the request's own buffers when n is 1, else
 * copies concatenated along dim 0. */
static TRITONSERVER_Error *gather(const gt_model *m, gt_req *r, uint32_t n, int64_t batch, graft_tensor **in) {
    for (uint32_t i = 0; i < m->nin; i++) {
        int64_t shape[GT_MAX_NDIM];
        memcpy(shape, r[0].shape[i], sizeof shape);
        if (m->max_batch > 0) shape[0] = batch;
        graft_dtype dt = m->in[i].dtype->graft;
        /* the run reads its inputs only */
        graft_tensor *t = n == 1 ? graft_tensor_wrap(dt, r[0].ndim[i], shape, (void *)(uintptr_t)r[0].data[i])
                                 : graft_tensor_new(dt, r[0].ndim[i], shape);
        if (!t) return gt_merr(m, TRITONSERVER_ERROR_INTERNAL, "out of memory for input '%s'", m->in[i].name);
        in[i] = t;
        uint8_t *dst = graft_tensor_data(t);
        for (uint32_t k = 0; n > 1 && k < n; k++) {
            memcpy(dst, r[k].data[i], r[k].bytes[i]);
            dst += r[k].bytes[i];
        }
    }
    return NULL;
}

/* Output o of the batch for request r, rows [row, row + r->batch). */
static TRITONSERVER_Error *scatter_one(const gt_model *m, gt_req *r, const gt_sig *s, graft_tensor *t,
                                       int64_t row) {
    int64_t shape[GT_MAX_NDIM];
    int nd = graft_tensor_ndim(t);
    for (int k = 0; k < nd; k++) shape[k] = graft_tensor_dim(t, k);
    size_t bytes = graft_tensor_nbytes(t), off = 0;
    if (m->max_batch > 0) {
        size_t per_row = shape[0] ? bytes / (size_t)shape[0] : 0;
        shape[0] = r->batch;
        off = per_row * (size_t)row;
        bytes = per_row * (size_t)r->batch;
    }
    TRITONBACKEND_Output *out;
    GT_TRY(TRITONBACKEND_ResponseOutput(r->resp, &out, s->name, s->dtype->triton, shape, (uint32_t)nd));
    void *buf;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mid = 0;
    GT_TRY(TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mid));
    if (mt == TRITONSERVER_MEMORY_GPU)
        return gt_merr(m, TRITONSERVER_ERROR_UNSUPPORTED, "an output buffer on a GPU");
    memcpy(buf, (const uint8_t *)graft_tensor_data(t) + off, bytes);
    return NULL;
}

static TRITONSERVER_Error *scatter(const gt_model *m, gt_req *r, uint32_t n, int64_t batch, graft_tensor **items) {
    for (uint32_t o = 0; o < m->nout; o++) {
        graft_tensor *t = items[o];
        bool rows = m->max_batch == 0 || (t && graft_tensor_ndim(t) >= 1 && graft_tensor_dim(t, 0) == batch);
        if (!t || dtype_of_graft(graft_tensor_dtype(t)) != m->out[o].dtype || !rows)
            return gt_merr(m, TRITONSERVER_ERROR_INTERNAL, "output '%s' is not the %s tensor of the batch's rows",
                          m->out[o].name, m->out[o].dtype->config);
    }
    int64_t row = 0;
    for (uint32_t k = 0; k < n; row += r[k].batch, k++) {
        uint32_t nreq = 0;
        gt_log(TRITONBACKEND_RequestOutputCount(r[k].req, &nreq), "output count");
        for (uint32_t q = 0; q < nreq && !r[k].err; q++) {
            const char *name;
            const gt_sig *s = NULL;
            r[k].err = TRITONBACKEND_RequestOutputName(r[k].req, q, &name);
            if (!r[k].err && !(s = find_sig(m->out, m->nout, name)))
                r[k].err = gt_merr(m, TRITONSERVER_ERROR_INVALID_ARG, "no output '%s'", name);
            if (!r[k].err) r[k].err = scatter_one(m, &r[k], s, items[s - m->out], row);
        }
    }
    return NULL;
}

/* Runs requests r[0..n) as one batch and fills their responses (or their errors). */
static void run_batch(const gt_model *m, TRITONBACKEND_ModelInstance *inst, gt_req *r, uint32_t n,
                      uint64_t exec_start) {
    int64_t batch = 0;
    for (uint32_t k = 0; k < n; k++) batch += r[k].batch;
    graft_tensor *in[GT_MAX_IO] = {0}, *res[GT_MAX_IO] = {0};
    uint64_t compute_start = now_ns();
    TRITONSERVER_Error *e = gather(m, r, n, batch, in);
    graft_error *ge = NULL;
    if (!e && graft_session_run(m->gs, in, m->nin, res, m->nout, &ge) != GRAFT_OK) {
        char what[300];
        snprintf(what, sizeof what, "model '%s'", m->name);
        e = gt_graft_err(TRITONSERVER_ERROR_INVALID_ARG, what, ge);
    }
    uint64_t compute_end = now_ns();
    if (!e) e = scatter(m, r, n, batch, res);
    for (uint32_t k = 0; k < n; k++)
        if (e && !r[k].err) r[k].err = TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(e), TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    for (uint32_t i = 0; i < m->nout; i++) graft_tensor_release(res[i]);
    for (uint32_t i = 0; i < m->nin; i++) graft_tensor_release(in[i]);
    uint64_t exec_end = now_ns();
    for (uint32_t k = 0; k < n; k++)
        gt_log(TRITONBACKEND_ModelInstanceReportStatistics(inst, r[k].req, !r[k].err, exec_start, compute_start,
                                                           compute_end, exec_end),
               "statistics");
    gt_log(TRITONBACKEND_ModelInstanceReportBatchStatistics(inst, (uint64_t)batch, exec_start, compute_start,
                                                            compute_end, exec_end),
           "statistics");
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests, const uint32_t count) {
    uint64_t exec_start = now_ns();
    TRITONBACKEND_Model *model;
    void *state;
    GT_TRY(TRITONBACKEND_ModelInstanceModel(instance, &model));
    GT_TRY(TRITONBACKEND_ModelState(model, &state));
    const gt_model *m = state;
    gt_req *r = calloc(count ? count : 1, sizeof *r);
    if (!r) return gt_err(TRITONSERVER_ERROR_INTERNAL, "graft: out of memory");
    /* the good requests move to the front, in order; a bad one is answered on its own */
    uint32_t ngood = 0;
    for (uint32_t k = 0; k < count; k++) {
        gt_req *q = &r[ngood];
        memset(q, 0, sizeof *q);
        q->req = requests[k];
        q->err = TRITONBACKEND_ResponseNew(&q->resp, q->req);
        for (uint32_t i = 0; i < m->nin && !q->err; i++) q->err = read_input(m, q, i);
        if (!q->err) {
            ngood++;
            continue;
        }
        if (q->resp)
            gt_log(TRITONBACKEND_ResponseSend(q->resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, q->err), "send");
        uint64_t t = now_ns();
        gt_log(TRITONBACKEND_ModelInstanceReportStatistics(instance, q->req, false, exec_start, t, t, t),
               "statistics");
        TRITONSERVER_ErrorDelete(q->err);
        for (uint32_t i = 0; i < m->nin; i++) free(q->copy[i]);
        gt_log(TRITONBACKEND_RequestRelease(q->req, TRITONSERVER_REQUEST_RELEASE_ALL), "release");
    }
    /* runs of consecutive requests with equal shapes past the batch dim */
    for (uint32_t k = 0; k < ngood;) {
        uint32_t n = 1;
        while (m->max_batch > 0 && k + n < ngood && same_item_shape(m, &r[k], &r[k + n])) n++;
        run_batch(m, instance, &r[k], n, exec_start);
        k += n;
    }
    for (uint32_t k = 0; k < ngood; k++) {
        if (r[k].resp)
            gt_log(TRITONBACKEND_ResponseSend(r[k].resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, r[k].err), "send");
        TRITONSERVER_ErrorDelete(r[k].err);
        for (uint32_t i = 0; i < m->nin; i++) free(r[k].copy[i]);
        gt_log(TRITONBACKEND_RequestRelease(r[k].req, TRITONSERVER_REQUEST_RELEASE_ALL), "release");
    }
    free(r);
    return NULL;
}
