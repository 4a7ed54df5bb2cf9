/* The deployable artifact: build (plan + LLVM object + text, constants streamed to the file)
 * and load (the file mapped, constants read in place; deploy/graft_model.h, artifact_impl.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byoc/byoc.h"
#include "backends/llvm/llvm_host.h"
#include "backends/plugin.h"
#include "deploy/artifact_impl.h"
#include "deploy/graft_model.h"
#include "graft/graft_artifact.pb-c.h"
#include "ir/text/printer.h"
#include "runtime/json/json_runtime.h"
#include "runtime/module.h"
#include "runtime/exec/plan.h"

typedef struct gm_region {
    char *name, *kind, *layers;
} gm_region;

/* The artifact's bytes: a private read-only mapping of the file, or a heap copy of a caller's
 * buffer. Constants point into it; each holds a reference, so it outlives every tensor. */
typedef struct art_map {
    _Atomic int32_t refs;
    uint8_t *base;
    size_t len;
    bool mapped;
} art_map;

static art_map *map_retain(art_map *m) {
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

static void map_release(art_map *m) {
    if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    if (m->mapped) munmap(m->base, m->len);
    else free(m->base);
    free(m);
}

/* Hands the pages of [p, p + n) back to the kernel: they are clean file pages of a private,
 * read-only mapping, so a later read faults them in again from the page cache. A backend that
 * keeps its own copy of a constant (oneDNN's reordered weights) lets the original go, and the
 * process does not keep both resident. */
static void map_drop(const art_map *m, const uint8_t *p, size_t n) {
    if (!m->mapped || !n) return;
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(GR_ART_PAGE - 1);
    uintptr_t e = ((uintptr_t)p + n + GR_ART_PAGE - 1) & ~(uintptr_t)(GR_ART_PAGE - 1);
    madvise((void *)a, e - a, MADV_DONTNEED);
}

typedef struct map_tensor {
    rt_tensor t;
    art_map *map;
} map_tensor;

static void map_tensor_delete(gr_object *obj) {
    map_tensor *mt = (map_tensor *)obj;
    map_drop(mt->map, rt_tensor_data(&mt->t), rt_tensor_nbytes(&mt->t));
    map_release(mt->map);
    free(mt);
}

/* A tensor over data inside m (read in place, never copied). */
static rt_tensor *map_tensor_new(art_map *m, DLDataType dt, int32_t ndim, const int64_t *shape, uint8_t *data) {
    rt_tensor *w = rt_tensor_wrap(dt, ndim, shape, data);
    if (!w) return NULL;
    map_tensor *mt = gr_xcalloc(1, sizeof *mt);
    mt->t = *w;
    free(w);
    mt->t.dl.shape = mt->t.shape;
    mt->t.obj.deleter = map_tensor_delete;
    mt->map = map_retain(m);
    return &mt->t;
}

static const char *const PHASE_NAMES[GRAFT_MODEL_NPHASES] = {"map", "verify", "decode", "modules", "link", "prepare"};

const char *graft_model_phase_name(uint32_t i) { return i < GRAFT_MODEL_NPHASES ? PHASE_NAMES[i] : NULL; }

struct graft_model {
    ir_ctx_t *ctx;
    ir_module *m;
    gr_llvm_host *host;
    rt_px *px;
    art_map *map;
    uint64_t load_ns;
    uint64_t phase_ns[GRAFT_MODEL_NPHASES], phase_cpu_ns[GRAFT_MODEL_NPHASES];
    size_t const_bytes;
    size_t obj_len;
    char *cpu;
    uint32_t nregions;
    gm_region *regions;
    uint32_t next;                 /* external modules: name and the engine they loaded on */
    char **ext_name, **ext_engine;
    const byoc_backend **ext_ld;   /* ... its loader, and the module (borrowed: gm->m holds it) */
    rt_module **ext_mod;
    uint32_t nout;                 /* the stored output signatures' names */
    char **out_name;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the file: header, checksum (artifact_impl.h) ---- */

static uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool gr_art_header_read(const uint8_t *buf, size_t len, gr_art_header *h) {
    if (len < GR_ART_HEADER || memcmp(buf, GR_ART_MAGIC, 8) != 0) return false;
    uint32_t hl;
    memcpy(&h->version, buf + 8, 4);
    memcpy(&hl, buf + 12, 4);
    h->body_len = rd64(buf + 16);
    h->data_off = rd64(buf + 24);
    h->data_len = rd64(buf + 32);
    h->checksum = rd64(buf + 40);
    memcpy(&h->flags, buf + 48, 4);
    h->body_off = rd64(buf + 56);
    if (hl != GR_ART_HEADER) return false;
    if (h->version != GRAFT_MODEL_FORMAT_VERSION) return true;
    return h->body_len <= UINT64_MAX / 4 && h->data_len <= UINT64_MAX / 4 && h->data_off <= UINT64_MAX / 4 &&
           h->body_off <= UINT64_MAX / 4 && h->data_off >= GR_ART_HEADER && h->data_off % GR_ART_PAGE == 0 &&
           h->body_off >= h->data_off + h->data_len;
}

void gr_art_header_write(uint8_t out[GR_ART_HEADER], const gr_art_header *h) {
    uint32_t hl = GR_ART_HEADER;
    memset(out, 0, GR_ART_HEADER);
    memcpy(out, GR_ART_MAGIC, 8);
    memcpy(out + 8, &h->version, 4);
    memcpy(out + 12, &hl, 4);
    memcpy(out + 16, &h->body_len, 8);
    memcpy(out + 24, &h->data_off, 8);
    memcpy(out + 32, &h->data_len, 8);
    memcpy(out + 40, &h->checksum, 8);
    memcpy(out + 48, &h->flags, 4);
    memcpy(out + 56, &h->body_off, 8);
}

/* The end of the chain: the body, then the header but its checksum (bytes 40..47). */
static uint64_t hash_tail(const uint8_t *hdr, const uint8_t *body, size_t blen, uint64_t seed) {
    uint64_t hsh = gr_hash_bytes(body, blen, seed);
    return gr_hash_bytes(hdr + 48, GR_ART_HEADER - 48, gr_hash_bytes(hdr, 40, hsh));
}

/* One piece of the data section: four FNV-1a lanes over interleaved 8-byte words (one chain's
 * multiply latency bounds gr_hash_bytes to a few GB/s; four independent ones run at memory
 * speed), then the tail and the lanes folded into the chain. */
static inline uint64_t lane(uint64_t h, const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return (h ^ w) * 0x100000001b3ull;
}

/* Lanes h over the whole 32-byte blocks of p (n a multiple of 32). */
static void hash_lanes(uint64_t h[4], const uint8_t *p, size_t n) {
    /* the lanes in locals: kept in an array, they went through memory on every word */
    uint64_t h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3];
    for (size_t i = 0; i + 32 <= n; i += 32) {
        h0 = lane(h0, p + i);
        h1 = lane(h1, p + i + 8);
        h2 = lane(h2, p + i + 16);
        h3 = lane(h3, p + i + 24);
    }
    h[0] = h0, h[1] = h1, h[2] = h2, h[3] = h3;
}

static uint64_t hash_fold(const uint64_t h[4], const uint8_t *tail, size_t n, uint64_t seed) {
    uint64_t r = gr_hash_bytes(tail, n, seed);
    return gr_hash_mix(gr_hash_mix(gr_hash_mix(gr_hash_mix(r, h[0]), h[1]), h[2]), h[3]);
}

static uint64_t hash_chunk(const uint8_t *p, size_t n, uint64_t seed) {
    uint64_t h[4] = {seed ^ 1, seed ^ 2, seed ^ 3, seed ^ 4};
    size_t whole = n / 32 * 32;
    hash_lanes(h, p, whole);
    return hash_fold(h, p + whole, n - whole, seed);
}

/* The data section's part of the chain; with m, each verified chunk's pages are let go (a
 * section with prepacked weights holds them twice, and a model reads one form: the pages it
 * reads fault in again; without, they stay for the first run). */
static uint64_t hash_data(const uint8_t *data, uint64_t len, uint64_t hsh, const art_map *m) {
    for (uint64_t off = 0; off < len; off += GR_ART_CHUNK) {
        size_t n = len - off < GR_ART_CHUNK ? (size_t)(len - off) : GR_ART_CHUNK;
        hsh = hash_chunk(data + off, n, hsh);
        if (m) map_drop(m, data + off, n);
    }
    return hsh;
}

uint64_t gr_art_checksum(const uint8_t *buf, const gr_art_header *h) {
    uint64_t hsh = hash_data(buf + h->data_off, h->data_len, GR_ART_SEED, NULL);
    return hash_tail(buf, buf + h->body_off, h->body_len, hsh);
}

bool gr_art_sections_in(const gr_art_header *h, size_t len) {
    return h->data_off <= len && h->data_len <= len - h->data_off && h->body_off <= len && h->body_len <= len - h->body_off;
}

void gr_art_reseal(uint8_t *buf, size_t len) {
    gr_art_header h;
    if (!gr_art_header_read(buf, len, &h) || !gr_art_sections_in(&h, len)) return;
    h.checksum = gr_art_checksum(buf, &h);
    gr_art_header_write(buf, &h);
}

uint8_t *gr_art_with_body(const uint8_t *buf, size_t len, const uint8_t *body, size_t blen, size_t *out_len) {
    gr_art_header h;
    if (!gr_art_header_read(buf, len, &h) || h.data_off > len || h.data_len > len - h.data_off) return NULL;
    h.body_len = blen;
    h.body_off = h.data_off + h.data_len;
    *out_len = (size_t)(h.body_off + blen);
    uint8_t *o = gr_xcalloc(*out_len, 1);
    memcpy(o + h.data_off, buf + h.data_off, h.data_len);
    memcpy(o + h.body_off, body, blen);
    gr_art_header_write(o, &h);
    gr_art_reseal(o, *out_len);
    return o;
}

/* ---- the writer: a file or a growing buffer; the data section is hashed as it streams ---- */

typedef struct art_sink {
    FILE *f;
    uint8_t *mem;
    size_t len, cap;
    bool err;
    uint64_t hash;                 /* the chain up to the current piece of GR_ART_CHUNK bytes */
    uint64_t lanes[4];             /* ... the current piece's lanes (hash_chunk, streamed) */
    size_t at;                     /* its bytes in the lanes (whole 32-byte blocks) */
    uint8_t part[32];              /* its bytes past them */
    size_t npart;
    uint64_t data_at;              /* data-section bytes written */
} art_sink;

static void sink_raw(art_sink *s, const void *p, size_t n) {
    if (s->err || !n) return;
    if (s->f) {
        s->err = fwrite(p, 1, n, s->f) != n;
        return;
    }
    if (s->len + n > s->cap) {
        while (s->len + n > s->cap) s->cap = s->cap ? s->cap * 2 : 1 << 16;
        s->mem = gr_xrealloc(s->mem, s->cap);
    }
    memcpy(s->mem + s->len, p, n);
    s->len += n;
}

/* The current piece's end: folded into the chain as hash_chunk does. */
static void sink_piece_end(art_sink *s) {
    if (!s->at && !s->npart) return;
    s->hash = hash_fold(s->lanes, s->part, s->npart, s->hash);
    s->at = s->npart = 0;
}

/* Data-section bytes (p NULL: zeros, fewer than GR_ART_ALIGN), hashed and written straight
 * from the caller's memory: the chain is the same as hash_chunk over every GR_ART_CHUNK piece,
 * wherever the constants' edges fall. */
static void sink_data(art_sink *s, const uint8_t *p, size_t n) {
    static const uint8_t zeros[GR_ART_ALIGN];
    if (!p) p = zeros;
    /* written in the pieces it is hashed in: one write of a large weight puts it in the page
     * cache as 2 MiB folios, which the loader's mapping then maps whole (R3D-18's graft run
     * of a fresh artifact peaked at 157 MB instead of 120) */
    for (size_t w = 0; w < n;) {
        size_t k = GR_ART_CHUNK - (size_t)(s->data_at % GR_ART_CHUNK);
        k = k < n - w ? k : n - w;
        sink_raw(s, p + w, k);
        s->data_at += k;
        w += k;
    }
    while (n) {
        if (!s->at && !s->npart)
            for (int k = 0; k < 4; k++) s->lanes[k] = s->hash ^ (uint64_t)(k + 1);
        size_t k = GR_ART_CHUNK - s->at - s->npart < n ? GR_ART_CHUNK - s->at - s->npart : n, used = 0;
        if (s->npart) {
            used = 32 - s->npart < k ? 32 - s->npart : k;
            memcpy(s->part + s->npart, p, used);
            s->npart += used;
            if (s->npart == 32) {
                hash_lanes(s->lanes, s->part, 32);
                s->at += 32;
                s->npart = 0;
            }
        }
        if (!s->npart) {
            size_t whole = (k - used) / 32 * 32;
            hash_lanes(s->lanes, p + used, whole);
            s->at += whole;
            memcpy(s->part, p + used + whole, k - used - whole);
            s->npart = k - used - whole;
        }
        p += k;
        n -= k;
        if (s->at + s->npart == GR_ART_CHUNK) sink_piece_end(s);
    }
}

/* One constant: its bytes, then the zeros to the next one's alignment. */
static void sink_const(art_sink *s, const void *p, size_t n) {
    sink_data(s, p, n);
    sink_data(s, NULL, (size_t)(align_up(n, GR_ART_ALIGN) - n));
}

/* A prepacked weight as its engine makes it (rt_json_module_stream_packs): written at its
 * place in the data section at once, and listed there by add_packs. */
static void stream_pack(void *user, const void *data, size_t bytes) { sink_const(user, data, bytes); }

static Graft__TensorSig *make_sig(const char *name, const ir_sinfo *s) {
    Graft__TensorSig *t = gr_xcalloc(1, sizeof *t);
    graft__tensor_sig__init(t);
    t->name = gr_xstrdup(name ? name : "");
    const char *dt = s && s->kind == IR_SINFO_TENSOR ? ir_dtype_name(s->dtype) : NULL;
    t->dtype = gr_xstrdup(dt ? dt : "");
    if (s && s->kind == IR_SINFO_TENSOR && s->ndim > 0) {
        t->n_shape = (size_t)s->ndim;
        t->shape = gr_xcalloc(t->n_shape, sizeof(int64_t));
        for (int32_t k = 0; k < s->ndim; k++)
            if (!s->dims || !ir_prim_is_int(s->dims[k], &t->shape[k])) t->shape[k] = -1;
    }
    return t;
}

static void free_sig(Graft__TensorSig *t) {
    free(t->name);
    free(t->dtype);
    free(t->shape);
    free(t);
}

/* ---- external modules: blobs by kind, constants by name ---- */

/* The constants of the data section, in its order; each is written when its bytes are known
 * (written counts those that are). */
typedef struct art_const {
    const void *data;
    size_t bytes;
    char *name;                    /* heap (a pack's), else NULL */
    int64_t *shape;
} art_const;
typedef struct art_consts {
    uint32_t n, written;
    art_const *c;
    uint64_t data_len;
    bool packed;                   /* some are prepacked weights */
} art_consts;

/* A constant to stream: its NamedTensor goes to the body's consts, or to its host_consts. */
static Graft__NamedTensor *add_const(Graft__ArtifactBody *body, art_consts *out, bool host, const char *name,
                                     const char *dtype, int32_t ndim, int64_t *shape, const void *data, size_t bytes) {
    Graft__NamedTensor *nt = gr_xcalloc(1, sizeof *nt);
    graft__named_tensor__init(nt);
    nt->name = (char *)name;
    nt->dtype = (char *)dtype;
    nt->n_shape = (size_t)ndim;
    nt->shape = shape;
    nt->has_offset = 1;
    nt->offset = out->data_len;
    out->data_len = align_up(out->data_len + bytes, GR_ART_ALIGN);
    out->c = gr_xrealloc(out->c, sizeof *out->c * (out->n + 1));
    out->c[out->n++] = (art_const){data, bytes, NULL, NULL};
    Graft__NamedTensor ***list = host ? &body->host_consts : &body->consts;
    size_t *n = host ? &body->n_host_consts : &body->n_consts;
    *list = gr_xrealloc(*list, sizeof(void *) * (*n + 1));
    (*list)[(*n)++] = nt;
    return nt;
}

/* A tensor's bytes, streamed as a constant. */
static void add_tensor(Graft__ArtifactBody *body, art_consts *out, bool host, const char *name, rt_tensor *t) {
    const char *dt = ir_dtype_name(t->dl.dtype);
    add_const(body, out, host, name, dt ? dt : "", t->dl.ndim, t->dl.shape, rt_tensor_data(t), rt_tensor_nbytes(t));
}

/* Whether the constant `name` is stored only as a prepacked weight: some graph of m defers it
 * (json_runtime.h) and none reads it plain. */
static bool const_deferred(const ir_module *m, const char *name) {
    bool deferred = false;
    for (uint32_t i = 0; i < rt_module_count(m); i++) {
        rt_json_graph *g;
        for (uint32_t j = 0; (g = rt_json_module_graph(rt_module_at(m, i), j)); j++)
            for (uint32_t c = 0; c < rt_json_graph_num_consts(g); c++) {
                if (strcmp(rt_json_graph_const_name(g, c), name) != 0) continue;
                if (!rt_json_graph_const_deferred(g, c)) return false;
                deferred = true;
            }
    }
    return deferred;
}

/* The external modules' constants (const_name_to_constant) but those stored only prepacked. */
static void add_region_consts(const ir_module *m, Graft__ArtifactBody *body, art_consts *out) {
    const ir_attr *cm = ir_attrs_get(m->attrs, "const_name_to_constant");
    uint32_t nc = cm && cm->kind == IR_ATTR_MAP ? cm->u.arr.n : 0;
    for (uint32_t i = 0; i < nc; i++) {
        const ir_attr *k = &cm->u.arr.items[2 * i], *v = &cm->u.arr.items[2 * i + 1];
        if (k->kind != IR_ATTR_STR || v->kind != IR_ATTR_EXPR || !v->u.expr ||
            v->u.expr->kind != IR_CONST || const_deferred(m, k->u.s))
            continue;
        add_tensor(body, out, false, k->u.s, ((ir_const *)v->u.expr)->data);
    }
}

/* The prepacked constants of the modules' graphs (json_runtime.h): one uint8 constant each,
 * named as the module blob lists them. The streamed ones (no data: already written by
 * stream_pack, in this order) come first, at the places they were written; held ones after. */
static void add_packs(const ir_module *m, Graft__ArtifactBody *body, art_consts *out) {
    for (int held = 0; held < 2; held++)
        for (uint32_t i = 0; i < rt_module_count(m); i++) {
            rt_json_graph *g;
            for (uint32_t j = 0; (g = rt_json_module_graph(rt_module_at(m, i), j)); j++) {
                const void *data;
                size_t bytes;
                for (uint32_t k = 0; rt_json_graph_pack_at(g, k, &data, &bytes); k++) {
                    if ((data != NULL) != held) continue;
                    char name[512];
                    rt_json_graph_pack_name(g, k, name, sizeof name);
                    int64_t *shape = gr_xmalloc(sizeof *shape);
                    *shape = (int64_t)bytes;
                    char *nm = gr_xstrdup(name);
                    add_const(body, out, false, nm, "uint8", 1, shape, data, bytes);
                    out->c[out->n - 1].name = nm;
                    out->c[out->n - 1].shape = shape;
                    out->packed = true;
                    if (!held) out->written++;
                }
            }
        }
}

/* What find_loader (below) reads: a json module's engine, as its blob names it (asked of the
 * module rather than parsed again from the blob). */
static void set_engine(Graft__ExternalModule *e, rt_module *mod) {
    const char *k = NULL, *v = NULL;
    if (!rt_json_module_engine(mod, &k, &v)) return;
    e->engine = k ? gr_xstrdup(k) : NULL;
    e->engine_version = v ? gr_xstrdup(v) : NULL;
}

static gr_status add_externals(const ir_module *m, Graft__ArtifactBody *body, gr_diag *diag) {
    uint32_t n = rt_module_count(m);
    body->external = gr_xcalloc(n + 1, sizeof(void *));
    for (uint32_t i = 0; i < n; i++) {
        rt_module *mod = rt_module_at(m, i);
        if (!mod) continue;
        if (!mod->iface->serialize)
            return gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                               "graft build: runtime module '%s' (kind %s) cannot be serialized",
                               mod->name ? mod->name : "", mod->iface->kind);
        Graft__ExternalModule *e = gr_xcalloc(1, sizeof *e);
        graft__external_module__init(e);
        body->external[body->n_external++] = e;
        e->kind = (char *)mod->iface->kind;
        e->name = (char *)(mod->name ? mod->name : "");
        e->has_blob = 1;
        gr_status st = mod->iface->serialize(mod, &e->blob.data, &e->blob.len, diag);
        if (st) return st;
        set_engine(e, mod);
    }
    return GR_OK;
}

static void free_consts(art_consts *cs) {
    for (uint32_t i = 0; i < cs->n; i++) {
        free(cs->c[i].name);
        free(cs->c[i].shape);
    }
    free(cs->c);
}

static void free_externals(Graft__ArtifactBody *body) {
    for (size_t i = 0; i < body->n_external; i++) {
        free(body->external[i]->blob.data);
        free(body->external[i]->engine);
        free(body->external[i]->engine_version);
        free(body->external[i]);
    }
    free(body->external);
    body->external = NULL;
    body->n_external = 0;
    for (size_t i = 0; i < body->n_consts; i++) free(body->consts[i]);
    free(body->consts);
    body->consts = NULL;
    body->n_consts = 0;
    for (size_t i = 0; i < body->n_host_consts; i++) free(body->host_consts[i]);
    free(body->host_consts);
    body->host_consts = NULL;
    body->n_host_consts = 0;
}

/* Every JSON-graph module has the interface kind "json"; the engine that runs it (reference,
 * oneDNN, ...) is the blob's own "kind", which the build copies beside the blob (engine), so
 * that loading parses the graph once, in its module's loader. Without it, a dnnl region would
 * load onto the reference engine: same outputs, several times slower. A module made by a
 * backend plugin (kind "plugin:<name>", backends/plugin.h) names the plugin and its version in
 * *plugin ("" for other kinds), for the error when that plugin is not loaded. */
static const byoc_backend *find_loader(const Graft__ExternalModule *e, char *plugin, size_t cap) {
    const char *kind = e->engine && *e->engine ? e->engine : e->kind;
    plugin[0] = '\0';
    size_t np = strlen(BYOC_PLUGIN_KIND_PREFIX);
    if (kind && strncmp(kind, BYOC_PLUGIN_KIND_PREFIX, np) == 0)
        snprintf(plugin, cap, "'%s' version %s", kind + np, e->engine_version ? e->engine_version : "(unknown)");
    return byoc_backend_for_kind(kind);
}

typedef struct const_table {
    ir_ctx_t *ctx;
    uint32_t n;
    const char **names;
    rt_tensor **tensors;
} const_table;

static rt_tensor *find_const(const char *name, void *user) {
    const_table *ct = user;
    for (uint32_t i = 0; i < ct->n; i++)
        if (strcmp(ct->names[i], name) == 0) return ct->tensors[i];
    return NULL;
}

/* Constant i (nt) as a tensor over the mapped data section (data, data_len bytes), or NULL and
 * diag when it is malformed or does not lie inside the section. */
static rt_tensor *map_const(graft_model *gm, const Graft__NamedTensor *nt, size_t i, uint8_t *data, uint64_t data_len,
                            gr_diag *diag) {
    ir_dtype dt;
    int64_t shape[RT_MAX_NDIM];
    if (!nt->name || !nt->dtype || !ir_dtype_parse(nt->dtype, &dt) || nt->n_shape > RT_MAX_NDIM || !nt->has_offset ||
        nt->offset % GR_ART_ALIGN) {
        gr_diag_set(diag, GR_ERR_INVALID, "artifact constant %zu is malformed", i);
        return NULL;
    }
    /* the size its shape says, without overflow, inside the section */
    uint64_t nb = (uint64_t)(dt.bits < 8 ? 1 : dt.bits / 8u) * (dt.lanes ? dt.lanes : 1u);
    bool fits = nt->offset <= data_len;
    for (size_t k = 0; k < nt->n_shape; k++) {
        shape[k] = nt->shape[k];
        fits &= shape[k] >= 0 && !__builtin_mul_overflow(nb, (uint64_t)shape[k], &nb);
    }
    fits = fits && nb <= data_len - nt->offset;
    rt_tensor *t = fits ? map_tensor_new(gm->map, dt, (int32_t)nt->n_shape, shape, data + nt->offset) : NULL;
    if (!t)
        gr_diag_set(diag, GR_ERR_INVALID, "artifact constant '%s': its shape runs past the constants section", nt->name);
    return t;
}

/* map_const for n constants into out; on an error the ones made are released (out NULLed). */
static gr_status map_consts(graft_model *gm, Graft__NamedTensor *const *nts, size_t n, uint8_t *data,
                            uint64_t data_len, rt_tensor **out, gr_diag *diag) {
    for (size_t i = 0; i < n; i++) {
        if (!(out[i] = map_const(gm, nts[i], i, data, data_len, diag))) {
            while (i--) {
                rt_tensor_release(out[i]);
                out[i] = NULL;
            }
            return GR_ERR_INVALID;
        }
        gm->const_bytes += rt_tensor_nbytes(out[i]);
    }
    return GR_OK;
}

/* The external modules, their constants as tensors over the mapped data section. */
static gr_status load_externals(graft_model *gm, const Graft__ArtifactBody *body, uint8_t *data, uint64_t data_len,
                                const byoc_options *opts, gr_diag *diag) {
    const_table ct = {gm->ctx, 0, NULL, NULL};
    ct.names = gr_xcalloc(body->n_consts + 1, sizeof(char *));
    ct.tensors = gr_xcalloc(body->n_consts + 1, sizeof(rt_tensor *));
    gr_status st = map_consts(gm, body->consts, body->n_consts, data, data_len, ct.tensors, diag);
    if (!st) {
        ct.n = (uint32_t)body->n_consts;
        for (uint32_t i = 0; i < ct.n; i++) ct.names[i] = ir_intern(gm->ctx, body->consts[i]->name);
    }
    for (size_t i = 0; i < body->n_external && !st; i++) {
        const Graft__ExternalModule *e = body->external[i];
        char plugin[256];
        const byoc_backend *ld = find_loader(e, plugin, sizeof plugin);
        if (!ld && plugin[0]) {
            st = gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                             "artifact module '%s' was made by backend plugin %s, which is not loaded: load it "
                             "(graft --backend-lib PATH/libgraft_<name>.so, GRAFT_BACKEND_PATH, graft_backend_load)",
                             e->name ? e->name : "", plugin);
            break;
        }
        if (!ld) {
            st = gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                             "artifact module '%s' has kind '%s', which this runtime cannot load",
                             e->name ? e->name : "", e->kind ? e->kind : "");
            break;
        }
        if (ld->runtime_kind && strcmp(ld->runtime_kind, "json") == 0 && !(e->engine && *e->engine)) {
            /* not the reference engine in its place: same outputs, many times slower */
            st = gr_diag_set(diag, GR_ERR_INVALID, "artifact module '%s' does not name its engine (rebuild it with this graft)",
                             e->name ? e->name : "");
            break;
        }
        rt_module *mod = NULL;
        st = ld->load(e->blob.data, e->blob.len, find_const, &ct, opts, &mod, diag);
        if (st) break;
        uint32_t k = gm->next++;
        gm->ext_name = gr_xrealloc(gm->ext_name, sizeof(char *) * gm->next);
        gm->ext_engine = gr_xrealloc(gm->ext_engine, sizeof(char *) * gm->next);
        gm->ext_ld = gr_xrealloc(gm->ext_ld, sizeof(void *) * gm->next);
        gm->ext_mod = gr_xrealloc(gm->ext_mod, sizeof(void *) * gm->next);
        gm->ext_name[k] = gr_xstrdup(e->name ? e->name : "");
        gm->ext_engine[k] = gr_xstrdup(ld->runtime_kind);
        gm->ext_ld[k] = ld;
        gm->ext_mod[k] = mod;
        rt_module_attach(gm->m, mod);
        rt_module_release(mod);
    }
    for (uint32_t i = 0; i < ct.n; i++) rt_tensor_release(ct.tensors[i]);
    free(ct.names);
    free(ct.tensors);
    return st;
}

/* Writes constants [cs->written, cs->n) of cs to s. */
static void sink_consts(art_sink *s, art_consts *cs) {
    for (; cs->written < cs->n; cs->written++) sink_const(s, cs->c[cs->written].data, cs->c[cs->written].bytes);
}

/* Writes the artifact of m to s: the header's place, then every constant straight from its
 * tensor (no serialized copy of the weights is ever held): first each prepacked weight as its
 * region is prepared, so it is written once, at its place, then the module's constants but
 * those stored only prepacked; then the body that lists them all, and the header again with
 * the checksum (a file is rewound; a buffer patched). */
static gr_status write_artifact(const ir_module *m, art_sink *s, gr_diag *diag) {
    if (ir_attrs_get(m->attrs, BYOC_ATTR_CONSTS_RELEASED))
        return gr_diag_set(diag, GR_ERR_INVALID, "graft_model_build: the module's region constants were handed to its "
                           "runtime modules (byoc_partition_opts.release_consts); partition without it to build an artifact");
    gr_llvm_host *h = NULL;
    rt_px *x = NULL;
    char *text = NULL;
    uint8_t *bin = NULL;
    Graft__ArtifactBody body;
    graft__artifact_body__init(&body);
    art_consts cs = {0};
    rt_tensor **hc = NULL;
    uint32_t nh = 0;
    ir_module *mc = NULL;
    static const uint8_t zeros[GR_ART_PAGE];
    sink_raw(s, zeros, GR_ART_PAGE); /* the header's place and its padding: data at one page */
    s->hash = GR_ART_SEED;
    /* the prepacked weights first, each written as its region is prepared: which constants
     * are stored only prepacked is known once every region is */
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < rt_module_count(m) && !st; i++)
        st = rt_json_module_stream_packs(rt_module_at(m, i), stream_pack, s, diag);
    if (!st) st = gr_llvm_host_new(&h, diag);
    if (!st) st = rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, diag);
    if (!st) st = add_externals(m, &body, diag);
    if (st) goto out;
    add_packs(m, &body, &cs);
    {
        /* the streamed packs lie where add_packs listed them */
        uint64_t listed = 0;
        for (uint32_t i = 0; i < cs.written; i++) listed = align_up(listed + cs.c[i].bytes, GR_ART_ALIGN);
        if (listed != s->data_at)
            st = gr_diag_set(diag, GR_ERR_RUNTIME, "graft build: the prepacked weights streamed (%llu bytes) are not "
                             "the ones the modules list (%llu)", (unsigned long long)s->data_at, (unsigned long long)listed);
    }
    if (st) goto out;
    add_region_consts(m, &body, &cs);
    /* the module holds the IR only: runtime modules and their constants travel beside it; the
     * loader reads the binary form, the text is there for inspection */
    mc = ir_module_copy(m);
    mc->attrs = ir_attrs_remove(m->ctx, ir_attrs_remove(m->ctx, m->attrs, "external_mods"), "const_name_to_constant");
    text = ir_print_module_str(mc, NULL);
    st = gr_art_ir_encode(mc, &bin, &body.module_bin.len, &hc, &nh, diag);
    body.has_module_bin = 1;
    body.module_bin.data = bin;
    for (uint32_t i = 0; !st && i < nh; i++) add_tensor(&body, &cs, true, "", hc[i]);
    free(hc);
    if (st) goto out;
    sink_consts(s, &cs);
    sink_piece_end(s);

    rt_px_stats ps;
    rt_px_get_stats(x, &ps);
    body.module_text = text;
    size_t olen = 0;
    const uint8_t *obj = gr_llvm_host_object(h, &olen);
    body.has_host_object = 1;
    body.host_object.data = (uint8_t *)obj;
    body.host_object.len = olen;
    body.host_cpu = (char *)gr_llvm_host_cpu(h);
    body.has_arena_bytes = 1;
    body.arena_bytes = ps.arena_bytes;
    body.n_plan = ps.nplanned;
    body.plan = gr_xcalloc(ps.nplanned + 1, sizeof(void *));
    for (uint32_t i = 0; i < ps.nplanned; i++) {
        Graft__PlanBuffer *pb = gr_xcalloc(1, sizeof *pb);
        graft__plan_buffer__init(pb);
        size_t off, sz;
        const char *var;
        rt_px_buffer(x, i, &off, &sz, &var);
        pb->var = (char *)var;
        pb->has_offset = pb->has_size = 1;
        pb->offset = off;
        pb->size = sz;
        body.plan[i] = pb;
    }
    body.n_inputs = rt_exec_num_inputs(x);
    body.inputs = gr_xcalloc(body.n_inputs + 1, sizeof(void *));
    for (uint32_t i = 0; i < body.n_inputs; i++)
        body.inputs[i] = make_sig(rt_exec_input_name(x, i), rt_exec_input_sinfo(x, i));
    const ir_sinfo *os = rt_px_output_sinfo(x);
    bool tup = os && os->kind == IR_SINFO_TUPLE;
    body.n_outputs = tup ? os->n : 1;
    body.outputs = gr_xcalloc(body.n_outputs + 1, sizeof(void *));
    for (uint32_t i = 0; i < body.n_outputs; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "output_%u", i);
        body.outputs[i] = make_sig(nm, tup ? os->fields[i] : os);
    }
    uint32_t ni = rt_px_num_instrs(x);
    body.spans = gr_xcalloc(ni + 1, sizeof(void *));
    for (uint32_t k = 0; k < ni; k++) {
        const char *kind, *name;
        const ir_span *sp;
        rt_px_instr(x, k, &kind, &name, NULL, &sp);
        if (strcmp(kind, "other") == 0) continue;
        Graft__SpanEntry *e = gr_xcalloc(1, sizeof *e);
        graft__span_entry__init(e);
        e->region = (char *)name;
        e->kind = (char *)kind;
        e->n_layers = sp ? sp->n : 0;
        e->layers = gr_xcalloc(e->n_layers + 1, sizeof(char *));
        for (size_t l = 0; l < e->n_layers; l++) e->layers[l] = (char *)sp->locs[l].source;
        body.spans[body.n_spans++] = e;
    }
    size_t blen = graft__artifact_body__get_packed_size(&body);
    uint8_t *bbuf = gr_xmalloc(blen + 1);
    graft__artifact_body__pack(&body, bbuf);
    sink_raw(s, bbuf, blen);
    gr_art_header hd = {GRAFT_MODEL_FORMAT_VERSION, blen, GR_ART_PAGE, cs.data_len, 0, cs.packed ? GR_ART_PACKED : 0,
                        GR_ART_PAGE + cs.data_len};
    uint8_t hb[GR_ART_HEADER];
    gr_art_header_write(hb, &hd);
    hd.checksum = hash_tail(hb, bbuf, blen, s->hash);
    free(bbuf);
    gr_art_header_write(hb, &hd);
    if (s->f && !s->err) s->err = fseek(s->f, 0, SEEK_SET) != 0 || fwrite(hb, 1, sizeof hb, s->f) != sizeof hb;
    else if (!s->f && !s->err) memcpy(s->mem, hb, sizeof hb);
out:
    for (size_t i = 0; i < body.n_plan; i++) free(body.plan[i]);
    free(body.plan);
    for (size_t i = 0; i < body.n_inputs; i++) free_sig(body.inputs[i]);
    free(body.inputs);
    for (size_t i = 0; i < body.n_outputs; i++) free_sig(body.outputs[i]);
    free(body.outputs);
    for (size_t i = 0; i < body.n_spans; i++) {
        free(body.spans[i]->layers);
        free(body.spans[i]);
    }
    free(body.spans);
    free_externals(&body);
    free_consts(&cs);
    free(text);
    free(bin);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    if (!st && s->err) st = gr_diag_set(diag, GR_ERR_IO, "graft build: write failed");
    return st;
}

gr_status graft_model_build(const ir_module *m, uint8_t **buf, size_t *len, gr_diag *diag) {
    art_sink s = {0};
    gr_status st = write_artifact(m, &s, diag);
    if (st) free(s.mem);
    *buf = st ? NULL : s.mem;
    *len = st ? 0 : s.len;
    return st;
}

/* The file tmp put at path, atomically. Renamed over an old file, ext4 (auto_da_alloc)
 * allocates and starts writing out all of tmp's blocks within the call (R3D-18's 134 MB: a
 * rename of 50-90 ms); exchanged with the old file, nothing waits for that, and tmp names the
 * old file (*exchanged). Plain rename where there is no old file or the file system cannot
 * exchange. */
static int replace_file(const char *tmp, const char *path, bool *exchanged) {
    *exchanged = false;
#ifdef RENAME_EXCHANGE
    struct stat sb;
    /* only a regular file: rename refuses a directory, an exchange would not */
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
        *exchanged = true;
        return 0;
    }
#endif
    return rename(tmp, path);
}

gr_status gr_art_build_file(const ir_module *m, const char *path, char **old, gr_diag *diag) {
    *old = NULL;
    size_t pl = strlen(path);
    char *tmp = gr_xmalloc(pl + 16);
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        gr_status st = gr_diag_set(diag, GR_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            remove(tmp);
        }
        free(tmp);
        return st;
    }
    art_sink s = {.f = f};
    gr_status st = write_artifact(m, &s, diag);
    bool ok = !s.err, exchanged = false;
    ok &= fchmod(fd, 0644) == 0;
    ok &= fclose(f) == 0;
    if (!st && !ok) st = gr_diag_set(diag, GR_ERR_IO, "%s: write failed", path);
    if (!st && replace_file(tmp, path, &exchanged) != 0) st = gr_diag_set(diag, GR_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (st) remove(tmp);
    if (exchanged) *old = tmp;
    else free(tmp);
    return st;
}

/* Written beside path and put in its place (replace_file): a process that has the old file
 * mapped keeps its bytes (a file truncated under a mapping faults its readers, as a shared
 * library would). */
gr_status graft_model_build_file(const ir_module *m, const char *path, gr_diag *diag) {
    char *old;
    gr_status st = gr_art_build_file(m, path, &old, diag);
    if (old) unlink(old);
    free(old);
    return st;
}

/* The object uses the build host's CPU features: refuse (instead of faulting on an illegal
 * instruction) when the build host had a feature this host lacks. Both strings are
 * "cpu +f1,-f2,...". */
static gr_status check_cpu(const char *built, const char *here, gr_diag *diag) {
    if (!built || !*built) return GR_OK;
    const char *f = strchr(built, ' ');
    while (f && *f) {
        f += strspn(f, " ,");
        size_t n = strcspn(f, ",");
        if (n > 1 && n < 64 && f[0] == '+') {
            char neg[72];
            snprintf(neg, sizeof neg, "-%.*s", (int)(n - 1), f + 1);
            const char *h = strstr(here, neg);
            if (h && (h[n] == ',' || h[n] == '\0'))
                return gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                                   "the artifact's host code needs CPU feature '%.*s', which this "
                                   "CPU lacks (rebuild it here with graft build)", (int)(n - 1), f + 1);
        }
        f += n;
    }
    return GR_OK;
}

gr_status graft_model_load_buffer(const uint8_t *buf, size_t len, graft_model **out, gr_diag *diag) {
    return graft_model_load_buffer_opts(buf, len, NULL, out, diag);
}

/* What a file that is not version 2 is: version 1 was one protobuf Artifact message. */
static gr_status not_v2(const uint8_t *buf, size_t len, gr_diag *diag) {
    Graft__Artifact *old = len >= 8 && memcmp(buf, GR_ART_MAGIC, 8) != 0 ? graft__artifact__unpack(NULL, len, buf) : NULL;
    if (!old)
        return gr_diag_set(diag, GR_ERR_INVALID,
                           "not a graft artifact (corrupt or truncated: the header does not decode)");
    gr_status st = gr_diag_set(diag, GR_ERR_INVALID,
                               "artifact format version %u, this runtime reads version %d (rebuild it with this graft)",
                               old->format_version, GRAFT_MODEL_FORMAT_VERSION);
    graft__artifact__free_unpacked(old, NULL);
    return st;
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Ends phase i begun at wall time t and CPU time c (both restarted). */
#define PHASE(gm, i, t, c)                                                                                         \
    ((gm)->phase_ns[i] += now_ns() - (t), (gm)->phase_cpu_ns[i] += cpu_ns() - (c), (t) = now_ns(), (c) = cpu_ns())

/* Loads from map (one reference taken over by the model); written: the file a build has just
 * written and hashed (its check load): the checksum is not computed again, and the regions are
 * prepared only to check them (rt_json_module_check), not to run. */
static gr_status load_map(art_map *map, uint64_t t0, uint64_t c0, const byoc_options *opts, bool written,
                          graft_model **out, gr_diag *diag) {
    *out = NULL;
    graft_model *gm = gr_xcalloc(1, sizeof *gm);
    gm->map = map;
    uint64_t t = t0, c = c0;
    PHASE(gm, GRAFT_MODEL_PHASE_MAP, t, c);
    const uint8_t *buf = map->base;
    size_t len = map->len;
    gr_art_header h;
    gr_status st = GR_OK;
    Graft__ArtifactBody *body = NULL;
    if (!gr_art_header_read(buf, len, &h)) {
        st = not_v2(buf, len, diag);
        goto done;
    }
    if (h.version != GRAFT_MODEL_FORMAT_VERSION) {
        st = gr_diag_set(diag, GR_ERR_INVALID,
                         "artifact format version %u, this runtime reads version %d (rebuild it with this graft)",
                         h.version, GRAFT_MODEL_FORMAT_VERSION);
        goto done;
    }
    if (h.body_off + h.body_len > len) { /* the body is last */
        st = gr_diag_set(diag, GR_ERR_INVALID, "artifact truncated: %zu bytes, its header says %llu", len,
                         (unsigned long long)(h.body_off + h.body_len));
        goto done;
    }
    /* every byte is read once, in place */
    if (!written && hash_tail(buf, buf + h.body_off, h.body_len,
                            hash_data(buf + h.data_off, h.data_len, GR_ART_SEED, h.flags & GR_ART_PACKED ? map : NULL)) !=
                      h.checksum) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "artifact checksum mismatch (the file is damaged)");
        goto done;
    }
    PHASE(gm, GRAFT_MODEL_PHASE_VERIFY, t, c);
    body = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    if (!body) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "artifact body does not decode");
        goto done;
    }
    gm->ctx = ir_ctx_new();
    if (!body->has_module_bin) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "artifact has no module");
        goto done;
    }
    {
        /* the module as the build had it, its constants read in place: no text is parsed */
        uint8_t *data = map->base + h.data_off;
        rt_tensor **hc = gr_xcalloc(body->n_host_consts + 1, sizeof *hc);
        st = map_consts(gm, body->host_consts, body->n_host_consts, data, h.data_len, hc, diag);
        if (!st)
            st = gr_art_ir_decode(gm->ctx, body->module_bin.data, body->module_bin.len, hc, (uint32_t)body->n_host_consts,
                                  &gm->m, diag);
        for (size_t i = 0; i < body->n_host_consts; i++)
            if (hc[i]) rt_tensor_release(hc[i]);
        free(hc);
        if (st) goto done;
    }
    PHASE(gm, GRAFT_MODEL_PHASE_DECODE, t, c);
    if ((st = load_externals(gm, body, map->base + h.data_off, h.data_len, opts, diag))) goto done;
    PHASE(gm, GRAFT_MODEL_PHASE_MODULES, t, c);
    gm->obj_len = body->has_host_object ? body->host_object.len : 0;
    if ((st = gr_llvm_host_load(body->host_object.data, gm->obj_len, &gm->host, diag))) goto done;
    if (gm->obj_len && (st = check_cpu(body->host_cpu, gr_llvm_host_cpu(gm->host), diag))) goto done;
    PHASE(gm, GRAFT_MODEL_PHASE_LINK, t, c);
    {
        /* the build's memory plan, taken as it is (checked to fit) rather than planned again */
        size_t *off = gr_xcalloc(2 * body->n_plan + 1, sizeof(size_t));
        for (size_t i = 0; i < body->n_plan; i++) {
            off[i] = (size_t)body->plan[i]->offset;
            off[body->n_plan + i] = (size_t)body->plan[i]->size;
        }
        rt_px_stored_plan sp = {(uint32_t)body->n_plan, off, off + body->n_plan, (size_t)body->arena_bytes};
        st = rt_px_new_stored(gm->m, "main", gr_llvm_host_lowering(gm->host), &sp, &gm->px, diag);
        free(off);
        if (st) goto done;
    }
    rt_px_stats ps;
    rt_px_get_stats(gm->px, &ps);
    bool same = ps.arena_bytes == body->arena_bytes && ps.nplanned == body->n_plan;
    for (uint32_t i = 0; same && i < ps.nplanned; i++) {
        size_t off, sz;
        rt_px_buffer(gm->px, i, &off, &sz, NULL);
        same = off == body->plan[i]->offset && sz == body->plan[i]->size;
    }
    if (!same) {
        st = gr_diag_set(diag, GR_ERR_INVALID,
                         "artifact memory plan does not match its module (arena %zu vs stored %llu "
                         "bytes): built by another graft version?",
                         ps.arena_bytes, (unsigned long long)body->arena_bytes);
        goto done;
    }
    PHASE(gm, GRAFT_MODEL_PHASE_DECODE, t, c);
    gm->cpu = gr_xstrdup(body->host_cpu ? body->host_cpu : "");
    gm->nout = (uint32_t)body->n_outputs;
    gm->out_name = gr_xcalloc(gm->nout + 1, sizeof(char *));
    for (uint32_t i = 0; i < gm->nout; i++)
        gm->out_name[i] = gr_xstrdup(body->outputs[i]->name ? body->outputs[i]->name : "");
    gm->nregions = (uint32_t)body->n_spans;
    gm->regions = gr_xcalloc(gm->nregions + 1, sizeof(gm_region));
    for (uint32_t i = 0; i < gm->nregions; i++) {
        const Graft__SpanEntry *e = body->spans[i];
        gm->regions[i].name = gr_xstrdup(e->region ? e->region : "");
        gm->regions[i].kind = gr_xstrdup(e->kind ? e->kind : "");
        size_t n = 1;
        for (size_t l = 0; l < e->n_layers; l++) n += strlen(e->layers[l]) + 1;
        gm->regions[i].layers = gr_xcalloc(n, 1);
        for (size_t l = 0; l < e->n_layers; l++) {
            if (l) strcat(gm->regions[i].layers, ",");
            strcat(gm->regions[i].layers, e->layers[l]);
        }
    }
    /* the regions' primitives (and their weights in the layouts they want) now, not in the
     * first run, so that the load profile shows what start-up costs */
    for (uint32_t i = 0; i < gm->next && !st; i++) {
        const char *kind, *version;
        if (written && rt_json_module_engine(gm->ext_mod[i], &kind, &version))
            st = rt_json_module_check(gm->ext_mod[i], diag);
        else if (gm->ext_ld[i]->prepare)
            st = gm->ext_ld[i]->prepare(gm->ext_mod[i], diag);
    }
    PHASE(gm, GRAFT_MODEL_PHASE_PREPARE, t, c);
    gm->load_ns = now_ns() - t0;
done:
    if (body) graft__artifact_body__free_unpacked(body, NULL);
    if (st) {
        graft_model_free(gm);
        return st;
    }
    *out = gm;
    return GR_OK;
}

gr_status graft_model_load_buffer_opts(const uint8_t *buf, size_t len, const byoc_options *opts, graft_model **out,
                                       gr_diag *diag) {
    *out = NULL;
    uint64_t t0 = now_ns(), c0 = cpu_ns();
    /* the caller keeps its buffer: one aligned copy the constants point into */
    art_map *m = gr_xcalloc(1, sizeof *m);
    m->refs = 1;
    m->len = len;
    m->base = aligned_alloc(GR_ART_PAGE, align_up(len ? len : 1, GR_ART_PAGE));
    if (!m->base) {
        free(m);
        return gr_diag_set(diag, GR_ERR_NOMEM, "artifact: out of memory for %zu bytes", len);
    }
    if (len) memcpy(m->base, buf, len);
    return load_map(m, t0, c0, opts, false, out, diag);
}

gr_status graft_model_load(const char *path, graft_model **out, gr_diag *diag) {
    return graft_model_load_opts(path, NULL, out, diag);
}

static gr_status load_file(const char *path, const byoc_options *opts, bool written, graft_model **out, gr_diag *diag) {
    *out = NULL;
    uint64_t t0 = now_ns(), c0 = cpu_ns();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return gr_diag_set(diag, GR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || S_ISDIR(sb.st_mode)) {
        close(fd);
        return gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size < (off_t)GR_ART_HEADER) {
        close(fd);
        gr_status st = gr_diag_set(diag, GR_ERR_INVALID, "not a graft artifact (%s)",
                                   S_ISREG(sb.st_mode) ? "shorter than its header" : "not a regular file");
        gr_diag_set_file(diag, path);
        return st;
    }
    /* read-only and private: the weights are read where they lie, never written */
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return gr_diag_set(diag, GR_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
    art_map *m = gr_xcalloc(1, sizeof *m);
    m->refs = 1;
    m->base = p;
    m->len = (size_t)sb.st_size;
    m->mapped = true;
    gr_status st = load_map(m, t0, c0, opts, written, out, diag);
    if (st) gr_diag_set_file(diag, path);
    return st;
}

gr_status graft_model_load_opts(const char *path, const byoc_options *opts, graft_model **out, gr_diag *diag) {
    return load_file(path, opts, false, out, diag);
}

gr_status gr_art_load_written(const char *path, const byoc_options *opts, graft_model **out, gr_diag *diag) {
    return load_file(path, opts, true, out, diag);
}

void graft_model_free(graft_model *gm) {
    if (!gm) return;
    rt_exec_free(gm->px);
    gr_llvm_host_free(gm->host);
    ir_ctx_free(gm->ctx);
    for (uint32_t i = 0; i < gm->nregions; i++) {
        free(gm->regions[i].name);
        free(gm->regions[i].kind);
        free(gm->regions[i].layers);
    }
    free(gm->regions);
    for (uint32_t i = 0; i < gm->next; i++) {
        free(gm->ext_name[i]);
        free(gm->ext_engine[i]);
    }
    free(gm->ext_name);
    free(gm->ext_engine);
    free(gm->ext_ld);
    free(gm->ext_mod);
    for (uint32_t i = 0; i < gm->nout; i++) free(gm->out_name[i]);
    free(gm->out_name);
    free(gm->cpu);
    map_release(gm->map);
    free(gm);
}

uint32_t graft_model_num_inputs(const graft_model *gm) { return rt_exec_num_inputs(gm->px); }
const char *graft_model_input_name(const graft_model *gm, uint32_t i) {
    return rt_exec_input_name(gm->px, i);
}
const ir_sinfo *graft_model_input_sinfo(const graft_model *gm, uint32_t i) {
    return rt_exec_input_sinfo(gm->px, i);
}
uint32_t graft_model_num_outputs(const graft_model *gm) { return gm->nout; }
const char *graft_model_output_name(const graft_model *gm, uint32_t i) { return gm->out_name[i]; }
const ir_sinfo *graft_model_output_sinfo(const graft_model *gm, uint32_t i) {
    const ir_sinfo *s = rt_px_output_sinfo(gm->px);
    if (s && s->kind == IR_SINFO_TUPLE) return i < s->n ? s->fields[i] : NULL;
    return i == 0 ? s : NULL;
}
gr_status graft_model_run(graft_model *gm, const rt_value *inputs, uint32_t nin, rt_value *result,
                          gr_diag *diag) {
    return rt_exec_run(gm->px, inputs, nin, result, diag);
}
void graft_model_set_profiler(graft_model *gm, rt_exec_profile_fn fn, void *user) {
    rt_exec_set_profiler(gm->px, fn, user);
}
void graft_model_set_prim_profiler(graft_model *gm, rt_prim_profile_fn fn, void *user) {
    rt_module_set_profilers(gm->m, fn, user);
}
void graft_model_set_prepare_observer(graft_model *gm, rt_json_prepare_fn fn, void *user) {
    rt_json_set_prepare_observers(gm->m, fn, user);
}
void graft_model_get_info(const graft_model *gm, graft_model_info *o) {
    memset(o, 0, sizeof *o);
    rt_px_stats ps;
    rt_px_get_stats(gm->px, &ps);
    o->arena_bytes = ps.arena_bytes;
    o->intermediate_bytes = ps.intermediate_bytes;
    o->host_object_bytes = gm->obj_len;
    o->nhost = ps.nhost;
    o->nkernel = ps.nkernel;
    o->nextern = ps.nextern;
    o->nfused_ops = ps.nfused_ops;
    o->nplanned = ps.nplanned;
    o->load_ns = gm->load_ns;
    memcpy(o->phase_ns, gm->phase_ns, sizeof o->phase_ns);
    memcpy(o->phase_cpu_ns, gm->phase_cpu_ns, sizeof o->phase_cpu_ns);
    o->const_bytes = gm->const_bytes;
    o->file_bytes = gm->map ? gm->map->len : 0;
    for (uint32_t i = 0; i < rt_module_count(gm->m); i++) {
        rt_json_graph *g;
        for (uint32_t j = 0; (g = rt_json_module_graph(rt_module_at(gm->m, i), j)); j++) {
            uint32_t p, u, r;
            rt_json_graph_pack_counts(g, &p, &u, &r);
            o->npacked += p;
            o->npacked_used += u;
            o->nrepacked += r;
            o->nunpacked += rt_json_graph_pack_recovered(g);
        }
    }
    o->host_cpu = gm->cpu;
}
uint32_t graft_model_num_regions(const graft_model *gm) { return gm->nregions; }
void graft_model_region(const graft_model *gm, uint32_t i, const char **name, const char **kind,
                        const char **layers) {
    if (name) *name = gm->regions[i].name;
    if (kind) *kind = gm->regions[i].kind;
    if (layers) *layers = gm->regions[i].layers;
}

uint32_t graft_model_num_externals(const graft_model *gm) { return gm->next; }
void graft_model_external(const graft_model *gm, uint32_t i, const char **name, const char **engine) {
    if (name) *name = gm->ext_name[i];
    if (engine) *engine = gm->ext_engine[i];
}
