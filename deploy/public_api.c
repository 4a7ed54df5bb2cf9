/* The public API (include/graft/graft.h) over the internal layers: a session is a built
 * artifact (deploy/graft_model.h) loaded in memory; from ONNX or Relax text it is imported,
 * optimized, partitioned for the options' backends and built first, as `graft build` does. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plugin.h"
#include "base/sys.h"
#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "deploy/toolkit.h"
#include "frontend/onnx/onnx_import.h"
#include "include/graft/graft.h"
#include "ir/ctx.h"
#include "ir/prim.h"
#include "ir/sinfo.h"
#include "ir/wellformed.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"

#define GRAFT_RELEASE "0.1.0"

uint32_t graft_api_version(void) { return GRAFT_API_VERSION; }
const char *graft_version(void) { return GRAFT_RELEASE; }

/* ---- errors ---- */

struct graft_error {
    graft_status status;
    int line, col;
    char detail[sizeof(((gr_diag *)0)->msg) + 640];
    char msg[sizeof(((gr_diag *)0)->msg) + 640];
    char file[sizeof(((gr_diag *)0)->file)], layer[sizeof(((gr_diag *)0)->layer)], op[sizeof(((gr_diag *)0)->op)];
};

static graft_status fail(graft_error **err, graft_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static graft_status fail(graft_error **err, graft_status st, const char *fmt, ...) {
    if (err) {
        graft_error *e = gr_xcalloc(1, sizeof(*e));
        e->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        snprintf(e->detail, sizeof e->detail, "%s", e->msg);
        *err = e;
    }
    return st;
}

/* gr_status and graft_status share their codes (base/status.h); an ill-formed module is
 * invalid input. The message in gr_diag_print's words. */
static graft_status fail_diag(graft_error **err, const gr_diag *d) {
    graft_status st = d->code == GR_ERR_WELLFORMED ? GRAFT_ERR_INVALID : (graft_status)d->code;
    if (!st) st = GRAFT_ERR_RUNTIME;
    if (!err) return st;
    char text[sizeof d->msg + sizeof d->file + sizeof d->layer + sizeof d->op + 32];
    gr_diag_format(d, text, sizeof text);
    fail(err, st, "%s", text);
    snprintf((*err)->file, sizeof (*err)->file, "%s", d->file);
    snprintf((*err)->layer, sizeof (*err)->layer, "%s", d->layer);
    snprintf((*err)->op, sizeof (*err)->op, "%s", d->op);
    (*err)->line = d->line;
    snprintf((*err)->detail, sizeof (*err)->detail, "%s", d->msg);
    (*err)->col = d->col;
    return st;
}

const char *graft_error_message(const graft_error *e) { return e ? e->msg : ""; }
const char *graft_error_file(const graft_error *e) { return e ? e->file : ""; }
const char *graft_error_layer(const graft_error *e) { return e ? e->layer : ""; }
const char *graft_error_op(const graft_error *e) { return e ? e->op : ""; }
graft_status graft_error_status(const graft_error *e) { return e ? e->status : GRAFT_OK; }
int graft_error_line(const graft_error *e) { return e ? e->line : 0; }
int graft_error_col(const graft_error *e) { return e ? e->col : 0; }
const char *graft_error_detail(const graft_error *e) { return e ? e->detail : ""; }
void graft_error_free(graft_error *e) { free(e); }

/* ---- tensors ---- */

#define T(t) ((rt_tensor *)(t))
#define CT(t) ((const rt_tensor *)(t))

const char *graft_dtype_name(graft_dtype t) {
    DLDataType dl;
    return byoc_plugin_dl_dtype(t, &dl) ? ir_dtype_name(dl) : NULL;
}

size_t graft_dtype_size(graft_dtype t) {
    DLDataType dl;
    return byoc_plugin_dl_dtype(t, &dl) ? ir_dtype_bytes(dl) : 0;
}

graft_tensor *graft_tensor_new(graft_dtype dtype, int ndim, const int64_t *shape) {
    DLDataType dl;
    if (!byoc_plugin_dl_dtype(dtype, &dl) || ndim < 0 || ndim > RT_MAX_NDIM || (ndim && !shape)) return NULL;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return NULL;
    return (graft_tensor *)rt_tensor_new(dl, ndim, shape);
}

graft_tensor *graft_tensor_wrap(graft_dtype dtype, int ndim, const int64_t *shape, void *data) {
    DLDataType dl;
    if (!byoc_plugin_dl_dtype(dtype, &dl) || ndim < 0 || ndim > RT_MAX_NDIM || (ndim && !shape)) return NULL;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return NULL;
    return (graft_tensor *)rt_tensor_wrap(dl, ndim, shape, data);
}

graft_tensor *graft_tensor_retain(graft_tensor *t) { return t ? (graft_tensor *)rt_tensor_retain(T(t)) : NULL; }
void graft_tensor_release(graft_tensor *t) { rt_tensor_release(T(t)); }
graft_dtype graft_tensor_dtype(const graft_tensor *t) { return byoc_plugin_dtype(CT(t)->dl.dtype); }
int graft_tensor_ndim(const graft_tensor *t) { return CT(t)->dl.ndim; }
int64_t graft_tensor_dim(const graft_tensor *t, int axis) {
    return axis >= 0 && axis < CT(t)->dl.ndim ? CT(t)->shape[axis] : -1;
}
size_t graft_tensor_numel(const graft_tensor *t) { return (size_t)rt_tensor_numel(CT(t)); }
size_t graft_tensor_nbytes(const graft_tensor *t) { return rt_tensor_nbytes(CT(t)); }
void *graft_tensor_data(graft_tensor *t) { return rt_tensor_data(T(t)); }
int graft_tensor_is_shared(const graft_tensor *t) { return CT(t)->obj.refcount > 1; }

/* ---- backends ---- */

graft_status graft_backend_load(const char *path, graft_error **err) {
    gr_diag d;
    gr_diag_clear(&d);
    if (!path) return fail(err, GRAFT_ERR_INVALID, "graft_backend_load: no path");
    return byoc_plugin_load(path, NULL, &d) ? fail_diag(err, &d) : GRAFT_OK;
}

uint32_t graft_backend_count(void) { return byoc_backend_count(); }
const char *graft_backend_name(uint32_t i) {
    const byoc_backend *b = byoc_backend_at(i);
    return b ? b->name : NULL;
}
const char *graft_backend_version(uint32_t i) {
    const byoc_backend *b = byoc_backend_at(i);
    return b ? (b->version ? b->version : GRAFT_RELEASE) : NULL;
}
const char *graft_backend_path(uint32_t i) {
    const byoc_backend *b = byoc_backend_at(i);
    return b ? b->path : NULL;
}

/* ---- session options ---- */

#define MAX_SESSION_BACKENDS 8
#define MAX_SESSION_SHAPES 16

struct graft_session_options {
    const char *backends[MAX_SESSION_BACKENDS];
    uint32_t nbackends;
    byoc_options *opts;
    onnx_input_shape shapes[MAX_SESSION_SHAPES];
    char shape_names[MAX_SESSION_SHAPES][256];
    uint32_t nshapes;
    int no_optimize;
    int no_spans;
};

graft_session_options *graft_session_options_new(void) {
    graft_session_options *o = gr_xcalloc(1, sizeof(*o));
    o->opts = byoc_options_new();
    return o;
}

void graft_session_options_free(graft_session_options *o) {
    if (!o) return;
    byoc_options_free(o->opts);
    free(o);
}

graft_status graft_session_options_add_backend(graft_session_options *o, const char *name, graft_error **err) {
    const byoc_backend *b = name ? byoc_backend_find(name) : NULL;
    if (!b)
        return fail(err, GRAFT_ERR_NOT_FOUND, "unknown backend '%s' (load a plugin first: graft_backend_load)",
                    name ? name : "");
    for (uint32_t i = 0; i < o->nbackends; i++)
        if (o->backends[i] == b->name) return GRAFT_OK;
    if (o->nbackends == MAX_SESSION_BACKENDS)
        return fail(err, GRAFT_ERR_INVALID, "more than %d backends", MAX_SESSION_BACKENDS);
    o->backends[o->nbackends++] = b->name;
    return GRAFT_OK;
}

graft_status graft_session_options_set(graft_session_options *o, const char *assignment, graft_error **err) {
    gr_diag d;
    gr_diag_clear(&d);
    if (!assignment) return fail(err, GRAFT_ERR_INVALID, "no option");
    return byoc_options_set(o->opts, assignment, &d) ? fail_diag(err, &d) : GRAFT_OK;
}

graft_status graft_session_options_set_threads(graft_session_options *o, int threads, graft_error **err) {
    if (threads < 0) return fail(err, GRAFT_ERR_INVALID, "threads must be >= 0, not %d", threads);
    for (uint32_t i = 0; i < byoc_backend_count(); i++) {
        const byoc_backend *b = byoc_backend_at(i);
        for (uint32_t k = 0; k < b->noptions; k++) {
            if (strcmp(b->options[k].name, "threads") != 0) continue;
            char a[128];
            snprintf(a, sizeof a, "%s.threads=%d", b->name, threads);
            graft_status st = graft_session_options_set(o, a, err);
            if (st) return st;
        }
    }
    return GRAFT_OK;
}

graft_status graft_session_options_set_input_shape(graft_session_options *o, const char *input, int ndim,
                                                   const int64_t *dims, graft_error **err) {
    if (!input || strlen(input) >= sizeof o->shape_names[0] || ndim <= 0 || ndim > RT_MAX_NDIM || !dims)
        return fail(err, GRAFT_ERR_INVALID, "input shape: a name and 1..%d dims", RT_MAX_NDIM);
    if (o->nshapes == MAX_SESSION_SHAPES) return fail(err, GRAFT_ERR_INVALID, "more than %d input shapes", MAX_SESSION_SHAPES);
    onnx_input_shape *s = &o->shapes[o->nshapes];
    memset(s, 0, sizeof(*s));
    snprintf(o->shape_names[o->nshapes], sizeof o->shape_names[0], "%s", input);
    s->name = o->shape_names[o->nshapes];
    s->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] <= 0) return fail(err, GRAFT_ERR_INVALID, "input shape of '%s': dim %d is %lld", input, i,
                                      (long long)dims[i]);
        s->dims[i] = dims[i];
    }
    o->nshapes++;
    return GRAFT_OK;
}

void graft_session_options_set_optimize(graft_session_options *o, int on) { o->no_optimize = !on; }
void graft_session_options_set_spans(graft_session_options *o, int on) { o->no_spans = !on; }

/* ---- sessions ---- */

struct graft_session {
    graft_model *gm;
    /* what graft_session_save writes: the artifact's bytes, or the file it was loaded from */
    uint8_t *art;
    size_t art_len;
    char *path;
    graft_profile_fn prof;
    void *prof_user;
    graft_profile_event_fn ev;
    void *ev_user;
};

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Imports, optimizes, partitions and builds a model into an artifact buffer. */
static gr_status compile_source(const char *path, const void *buf, size_t len, bool onnx,
                                const graft_session_options *o, uint8_t **art, size_t *art_len, gr_diag *d) {
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    ir_module *m = NULL, *part = NULL;
    gr_status st;
    if (onnx) {
        onnx_import_opts io = {0};
        if (o) io.shapes = o->shapes, io.nshapes = o->nshapes, io.no_spans = o->no_spans;
        st = buf ? onnx_import_buffer(ctx, "model.onnx", buf, len, &io, &m, d) : onnx_import_file(ctx, path, &io, &m, d);
    } else {
        st = buf ? ir_parse_module(ctx, "model.relax", buf, len, &m, d) : ir_parse_file(ctx, path, &m, d);
    }
    if (!st) st = ir_wellformed_check(m, d);
    if (!st && !(o && o->no_optimize)) st = ir_pass_run(ir_pass_default_pipeline(), NULL, m, &m, d);
    if (!st && o && o->nbackends) {
        byoc_partition_opts po = {0};
        po.options = o->opts;
        st = byoc_partition(ctx, m, o->backends, o->nbackends, &po, &part, d);
        if (!st) m = part;
    }
    if (!st) st = graft_model_build(m, art, art_len, d);
    ir_ctx_free(ctx);
    return st;
}

static graft_status session_from(const char *path, const void *buf, size_t len, const char *format,
                                 const graft_session_options *o, graft_session **out, graft_error **err) {
    *out = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    graft_model *gm = NULL;
    const byoc_options *bo = o ? o->opts : NULL;
    uint8_t *art = NULL;
    size_t art_len = 0;
    if (!strcmp(format, "graft")) {
        if (buf) {
            art = gr_xmalloc(len + 1);
            memcpy(art, buf, len);
            art_len = len;
        }
        st = buf ? graft_model_load_buffer_opts(buf, len, bo, &gm, &d) : graft_model_load_opts(path, bo, &gm, &d);
    } else if (!strcmp(format, "onnx") || !strcmp(format, "relax")) {
        st = compile_source(path, buf, len, !strcmp(format, "onnx"), o, &art, &art_len, &d);
        if (!st) st = graft_model_load_buffer_opts(art, art_len, bo, &gm, &d);
    } else {
        return fail(err, GRAFT_ERR_INVALID, "unknown model format '%s' (onnx, relax or graft)", format);
    }
    if (st) {
        free(art);
        return fail_diag(err, &d);
    }
    graft_session *s = gr_xcalloc(1, sizeof(*s));
    s->gm = gm;
    s->art = art;
    s->art_len = art_len;
    s->path = art ? NULL : gr_xstrdup(path);
    *out = s;
    return GRAFT_OK;
}

graft_status graft_session_load(const char *path, const graft_session_options *o, graft_session **out,
                                graft_error **err) {
    if (!path || !out) return fail(err, GRAFT_ERR_INVALID, "graft_session_load: no path");
    const char *format = ends_with(path, ".onnx")                              ? "onnx"
                         : ends_with(path, ".relax") || ends_with(path, ".py") ? "relax"
                                                                               : "graft";
    return session_from(path, NULL, 0, format, o, out, err);
}

graft_status graft_session_load_buffer(const void *buf, size_t len, const char *format, const graft_session_options *o,
                                       graft_session **out, graft_error **err) {
    if (!buf || !format || !out) return fail(err, GRAFT_ERR_INVALID, "graft_session_load_buffer: no buffer or format");
    return session_from(NULL, buf, len, format, o, out, err);
}

void graft_session_free(graft_session *s) {
    if (!s) return;
    graft_model_free(s->gm);
    free(s->art);
    free(s->path);
    free(s);
}

graft_status graft_session_save(graft_session *s, const char *path, graft_error **err) {
    if (!path) return fail(err, GRAFT_ERR_INVALID, "graft_session_save: no path");
    uint8_t *buf = s->art;
    size_t len = s->art_len;
    if (!buf) {
        FILE *in = fopen(s->path, "rb");
        if (!in) return fail(err, GRAFT_ERR_IO, "%s: cannot open", s->path);
        size_t cap = 0, n;
        do {
            if (len == cap) buf = gr_xrealloc(buf, cap = cap ? 2 * cap : 1 << 20);
            n = fread(buf + len, 1, cap - len, in);
            len += n;
        } while (n > 0);
        fclose(in);
    }
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f)) ok = false;
    if (buf != s->art) free(buf);
    return ok ? GRAFT_OK : fail(err, GRAFT_ERR_IO, "%s: cannot write", path);
}

uint32_t graft_session_num_inputs(const graft_session *s) { return graft_model_num_inputs(s->gm); }
uint32_t graft_session_num_outputs(const graft_session *s) { return graft_model_num_outputs(s->gm); }
const char *graft_session_input_name(const graft_session *s, uint32_t i) { return graft_model_input_name(s->gm, i); }
const char *graft_session_output_name(const graft_session *s, uint32_t i) { return graft_model_output_name(s->gm, i); }

static const ir_sinfo *tensor_sinfo(const ir_sinfo *si) { return si && si->kind == IR_SINFO_TENSOR ? si : NULL; }
static graft_dtype sinfo_dtype(const ir_sinfo *si) {
    si = tensor_sinfo(si);
    return si ? byoc_plugin_dtype(si->dtype) : GRAFT_DTYPE_UNKNOWN;
}
static int sinfo_ndim(const ir_sinfo *si) {
    si = tensor_sinfo(si);
    return si ? si->ndim : -1;
}
static int64_t sinfo_dim(const ir_sinfo *si, int axis) {
    si = tensor_sinfo(si);
    int64_t v;
    if (!si || !si->dims || axis < 0 || axis >= si->ndim || !ir_prim_is_int(si->dims[axis], &v)) return -1;
    return v;
}
static const char *sinfo_dim_symbol(const graft_session *s, const ir_sinfo *si, int axis) {
    si = tensor_sinfo(si);
    if (!si || !si->dims || axis < 0 || axis >= si->ndim || ir_prim_is_int(si->dims[axis], NULL)) return NULL;
    (void)s;
    return si->dims[axis]->kind == IR_PRIM_VAR ? si->dims[axis]->name : NULL;
}
const char *graft_session_input_dim_symbol(const graft_session *s, uint32_t i, int axis) {
    return sinfo_dim_symbol(s, graft_model_input_sinfo(s->gm, i), axis);
}
const char *graft_session_output_dim_symbol(const graft_session *s, uint32_t i, int axis) {
    return sinfo_dim_symbol(s, graft_model_output_sinfo(s->gm, i), axis);
}

graft_dtype graft_session_input_dtype(const graft_session *s, uint32_t i) {
    return sinfo_dtype(graft_model_input_sinfo(s->gm, i));
}
graft_dtype graft_session_output_dtype(const graft_session *s, uint32_t i) {
    return sinfo_dtype(graft_model_output_sinfo(s->gm, i));
}
int graft_session_input_ndim(const graft_session *s, uint32_t i) { return sinfo_ndim(graft_model_input_sinfo(s->gm, i)); }
int64_t graft_session_input_dim(const graft_session *s, uint32_t i, int axis) {
    return sinfo_dim(graft_model_input_sinfo(s->gm, i), axis);
}
int graft_session_output_ndim(const graft_session *s, uint32_t i) { return sinfo_ndim(graft_model_output_sinfo(s->gm, i)); }
int64_t graft_session_output_dim(const graft_session *s, uint32_t i, int axis) {
    return sinfo_dim(graft_model_output_sinfo(s->gm, i), axis);
}

graft_status graft_session_run(graft_session *s, graft_tensor *const *inputs, uint32_t nin, graft_tensor **outputs,
                               uint32_t nout, graft_error **err) {
    uint32_t want_in = graft_model_num_inputs(s->gm), want_out = graft_model_num_outputs(s->gm);
    if (nin != want_in || nout != want_out)
        return fail(err, GRAFT_ERR_INVALID, "graft_session_run: the model takes %u inputs and gives %u outputs, not %u and %u",
                    want_in, want_out, nin, nout);
    rt_value *ins = gr_xcalloc(nin + 1, sizeof(*ins));
    for (uint32_t i = 0; i < nin; i++) {
        if (!inputs[i]) {
            free(ins);
            return fail(err, GRAFT_ERR_INVALID, "graft_session_run: input %u ('%s') is NULL", i,
                        graft_model_input_name(s->gm, i));
        }
        ins[i] = rt_value_tensor(T(inputs[i])); /* borrowed: not cleared */
    }
    rt_value res = {0};
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = graft_model_run(s->gm, ins, nin, &res, &d);
    free(ins);
    if (st) return fail_diag(err, &d);
    bool tup = res.kind == RT_VAL_TUPLE;
    for (uint32_t i = 0; i < nout; i++) {
        const rt_value *v = tup ? (i < res.u.tuple.n ? &res.u.tuple.items[i] : NULL) : &res;
        outputs[i] = v && v->kind == RT_VAL_TENSOR ? (graft_tensor *)rt_tensor_retain(v->u.t) : NULL;
    }
    rt_value_clear(&res);
    for (uint32_t i = 0; i < nout; i++)
        if (!outputs[i]) {
            for (uint32_t k = 0; k < nout; k++) graft_tensor_release(outputs[k]), outputs[k] = NULL;
            return fail(err, GRAFT_ERR_UNSUPPORTED, "graft_session_run: output %u is not a tensor", i);
        }
    return GRAFT_OK;
}

uint32_t graft_session_num_regions(const graft_session *s) { return graft_model_num_regions(s->gm); }
static const char *region_field(const graft_session *s, uint32_t i, int which) {
    const char *f[3] = {NULL, NULL, NULL};
    if (i >= graft_model_num_regions(s->gm)) return NULL;
    graft_model_region(s->gm, i, &f[0], &f[1], &f[2]);
    return f[which];
}
const char *graft_session_region_name(const graft_session *s, uint32_t i) { return region_field(s, i, 0); }
const char *graft_session_region_kind(const graft_session *s, uint32_t i) { return region_field(s, i, 1); }
const char *graft_session_region_layers(const graft_session *s, uint32_t i) { return region_field(s, i, 2); }

static void profile_event(const rt_exec_event *ev, void *user) {
    graft_session *s = user;
    if (s->prof) s->prof(ev->kind, ev->name, ev->ns, s->prof_user);
}

void graft_session_set_profiler(graft_session *s, graft_profile_fn fn, void *user) {
    s->prof = fn;
    s->prof_user = user;
    graft_model_set_profiler(s->gm, fn ? profile_event : NULL, fn ? s : NULL);
}

static void step_event(const rt_exec_event *ev, void *user) {
    graft_session *s = user;
    graft_profile_event e = {ev->kind, ev->name, ev->span && ev->span->n ? ev->span->locs[0].source : NULL, ev->ns,
                             0, NULL, NULL, 0, NULL};
    s->ev(&e, s->ev_user);
}

static void prim_event(const rt_prim_event *ev, void *user) {
    graft_session *s = user;
    graft_profile_event e = {"prim", ev->region, NULL, ev->ns, ev->index, ev->info->kind, ev->info->impl,
                             ev->info->nlayers, ev->info->layers};
    s->ev(&e, s->ev_user);
}

void graft_session_set_event_profiler(graft_session *s, graft_profile_event_fn fn, int primitives, void *user) {
    s->ev = fn;
    s->ev_user = user;
    graft_model_set_profiler(s->gm, fn ? step_event : NULL, fn ? s : NULL);
    graft_model_set_prim_profiler(s->gm, fn && primitives ? prim_event : NULL, fn && primitives ? s : NULL);
}

char *graft_session_signature_json(const graft_session *s) { return graft_model_signature_json(s->gm); }
char *graft_session_info_json(const graft_session *s) { return graft_model_info_json(s->gm); }

/* ---- IR modules ---- */

/* An IR context shared by the modules derived from one import; the lock serializes the calls
 * that build in it or walk it. */
typedef struct irctx {
    ir_ctx_t *ctx;
    pthread_mutex_t lock;
    uint32_t refs; /* under lock */
} irctx;

struct graft_irmodule {
    irctx *c;
    ir_module *m;
};

void graft_string_free(char *s) { free(s); }

static graft_irmodule *irmodule_new(irctx *c, ir_module *m) {
    graft_irmodule *g = gr_xcalloc(1, sizeof(*g));
    g->c = c;
    g->m = m;
    c->refs++;
    return g;
}

static void irctx_release(irctx *c) {
    pthread_mutex_lock(&c->lock);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (!last) return;
    ir_ctx_free(c->ctx);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void graft_irmodule_free(graft_irmodule *m) {
    if (!m) return;
    irctx_release(m->c);
    free(m);
}

static graft_status irmodule_import(const char *path, const void *buf, size_t len, const char *format, const char *name,
                                    const graft_session_options *o, graft_irmodule **out, graft_error **err) {
    *out = NULL;
    bool onnx = !strcmp(format, "onnx");
    if (!onnx && strcmp(format, "relax") != 0)
        return fail(err, GRAFT_ERR_INVALID, "unknown module format '%s' (onnx or relax)", format);
    irctx *c = gr_xcalloc(1, sizeof(*c));
    c->ctx = ir_ctx_new();
    rt_const_eval_attach(c->ctx); /* optimize folds constants on the reference kernels */
    pthread_mutex_init(&c->lock, NULL);
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    if (onnx) {
        onnx_import_opts io = {0};
        if (o) io.shapes = o->shapes, io.nshapes = o->nshapes, io.no_spans = o->no_spans;
        st = buf ? onnx_import_buffer(c->ctx, name ? name : "model.onnx", buf, len, &io, &m, &d)
                 : onnx_import_file(c->ctx, path, &io, &m, &d);
    } else {
        st = buf ? ir_parse_module(c->ctx, name ? name : "model.relax", buf, len, &m, &d)
                 : ir_parse_file(c->ctx, path, &m, &d);
    }
    if (st) {
        if (!d.file[0] && path) gr_diag_set_file(&d, path);
        c->refs = 1;
        irctx_release(c);
        return fail_diag(err, &d);
    }
    *out = irmodule_new(c, m);
    return GRAFT_OK;
}

graft_status graft_irmodule_load(const char *path, const char *format, const graft_session_options *o,
                                 graft_irmodule **out, graft_error **err) {
    if (!path || !out) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_load: no path");
    if (!format) format = ends_with(path, ".onnx") ? "onnx" : "relax";
    return irmodule_import(path, NULL, 0, format, NULL, o, out, err);
}

graft_status graft_irmodule_load_buffer(const void *buf, size_t len, const char *format, const char *name,
                                        const graft_session_options *o, graft_irmodule **out, graft_error **err) {
    if (!buf || !format || !out) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_load_buffer: no buffer or format");
    return irmodule_import(NULL, buf, len, format, name, o, out, err);
}

/* Runs `stmt` with m's context locked. */
#define LOCKED(g, stmt)                      \
    do {                                     \
        pthread_mutex_lock(&(g)->c->lock);   \
        stmt;                                \
        pthread_mutex_unlock(&(g)->c->lock); \
    } while (0)

char *graft_irmodule_text(const graft_irmodule *m, int spans, int metadata) {
    ir_print_opts po = {.no_spans = !spans, .no_metadata = !metadata};
    char *s;
    LOCKED(m, s = ir_print_module_str(m->m, &po));
    return s;
}

char *graft_irmodule_layers_json(const graft_irmodule *m) {
    char *s;
    LOCKED(m, s = graft_module_layers_json(m->m));
    return s;
}

char *graft_irmodule_signature_json(const graft_irmodule *m) {
    char *s;
    LOCKED(m, s = graft_module_signature_json(m->m));
    return s;
}

/* A derived module in m's context, or the error. Under m's lock (refs). */
static graft_status irmodule_derived(const graft_irmodule *m, gr_status st, ir_module *res, const gr_diag *d,
                                     graft_irmodule **out, graft_error **err) {
    if (st) return fail_diag(err, d);
    *out = irmodule_new(m->c, res);
    return GRAFT_OK;
}

graft_status graft_irmodule_optimize(const graft_irmodule *m, const char *passes, int opt_level, graft_irmodule **out,
                                     graft_error **err) {
    if (!m || !out) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_optimize: no module");
    *out = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *res = NULL;
    graft_status st;
    LOCKED(m, {
        gr_status gs = graft_module_optimize(m->m, passes, opt_level, &res, &d);
        st = irmodule_derived(m, gs, res, &d, out, err);
    });
    return st;
}

graft_status graft_irmodule_partition(const graft_irmodule *m, const graft_session_options *o, const char *patterns,
                                      graft_irmodule **out, char **report, graft_error **err) {
    if (!m || !out) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_partition: no module");
    *out = NULL;
    if (report) *report = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *res = NULL;
    graft_status st;
    LOCKED(m, {
        gr_status gs = graft_module_partition(m->c->ctx, m->m, o ? o->backends : NULL, o ? o->nbackends : 0, patterns,
                                              o ? o->opts : NULL, &res, report, &d);
        st = irmodule_derived(m, gs, res, &d, out, err);
    });
    return st;
}

graft_status graft_session_from_irmodule(const graft_irmodule *m, const graft_session_options *o, graft_session **out,
                                         graft_error **err) {
    if (!m || !out) return fail(err, GRAFT_ERR_INVALID, "graft_session_from_irmodule: no module");
    *out = NULL;
    uint8_t *art = NULL;
    size_t len = 0;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    LOCKED(m, st = graft_model_build(m->m, &art, &len, &d));
    if (st) return fail_diag(err, &d);
    graft_status gs = session_from(NULL, art, len, "graft", o, out, err);
    free(art); /* session_from keeps its own copy for graft_session_save */
    return gs;
}

char *graft_onnx_io_names_json(const char *path, graft_error **err) {
    if (!path) {
        fail(err, GRAFT_ERR_INVALID, "graft_onnx_io_names_json: no path");
        return NULL;
    }
    gr_diag d;
    gr_diag_clear(&d);
    char *s = onnx_model_io_names(path, &d);
    if (!s) {
        if (!d.file[0]) gr_diag_set_file(&d, path);
        fail_diag(err, &d);
    }
    return s;
}

/* The toolkit's perturbation over graft_tensor (the same object). */
typedef struct {
    graft_inspect_perturb_fn fn;
    void *user;
} perturb_thunk;

static bool perturb_call(const char *layer, rt_tensor *t, void *user) {
    const perturb_thunk *p = user;
    return p->fn(layer, (graft_tensor *)t, p->user) != 0;
}

/* graft_module_inspect on module m under its lock, the inputs borrowed */
static graft_status inspect_run(const graft_irmodule *m, const graft_session_options *o, const graft_inspect_opts *io,
                                graft_tensor *const *inputs, uint32_t nin, char **diff, char **doc, graft_error **err) {
    rt_value *ins = gr_xcalloc(nin + 1, sizeof(*ins));
    for (uint32_t i = 0; i < nin; i++) ins[i] = rt_value_tensor(T(inputs[i])); /* borrowed: not cleared */
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    LOCKED(m, st = graft_module_inspect(m->c->ctx, m->m, o ? o->backends : NULL, o ? o->nbackends : 0,
                                        o ? o->opts : NULL, io, ins, nin, diff, doc, &d));
    free(ins);
    return st ? fail_diag(err, &d) : GRAFT_OK;
}

graft_status graft_irmodule_inspect(const graft_irmodule *m, const graft_session_options *o, unsigned flags,
                                    const char *against, double rtol, double atol, double atol_scale,
                                    graft_tensor *const *inputs, uint32_t nin, graft_inspect_perturb_fn perturb,
                                    void *perturb_user, char **diff, char **doc, graft_error **err) {
    if (diff) *diff = NULL;
    if (doc) *doc = NULL;
    if (!m || (nin && !inputs)) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_inspect: no module or inputs");
    perturb_thunk pt = {perturb, perturb_user};
    graft_inspect_opts io = {
        .observe = flags & GRAFT_INSPECT_OBSERVE, .profile = flags & GRAFT_INSPECT_PROFILE,
        .diff = flags & GRAFT_INSPECT_DIFF,       .rtol = rtol,
        .atol = atol,                             .atol_scale = atol_scale,
        .against = against,                       .perturb = perturb ? perturb_call : NULL,
        .perturb_user = &pt,
    };
    return inspect_run(m, o, &io, inputs, nin, io.diff ? diff : NULL, doc, err);
}

graft_status graft_irmodule_diff_values(const graft_irmodule *m, const graft_session_options *o, double rtol,
                                        double atol, double atol_scale, double atol_steps, const char *qparams_onnx,
                                        graft_tensor *const *inputs, uint32_t nin, const char *const *ref_layers,
                                        graft_tensor *const *refs, uint32_t nrefs, char **diff, char **doc,
                                        graft_error **err) {
    if (diff) *diff = NULL;
    if (doc) *doc = NULL;
    if (!m || (nin && !inputs) || (nrefs && (!ref_layers || !refs)))
        return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_diff_values: no module, inputs or references");
    for (uint32_t i = 0; i < nrefs; i++)
        if (!ref_layers[i] || !refs[i]) return fail(err, GRAFT_ERR_INVALID, "graft_irmodule_diff_values: reference %u is NULL", i);
    graft_inspect_opts io = {.diff = true, .rtol = rtol, .atol = atol, .atol_scale = atol_scale, .ref_layers = ref_layers,
                             .refs = (rt_tensor *const *)refs, .nrefs = nrefs, .qparams_onnx = qparams_onnx,
                             .atol_steps = atol_steps};
    return inspect_run(m, o, &io, inputs, nin, diff, doc, err);
}
