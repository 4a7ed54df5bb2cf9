/* The deployable artifact: build (plan + LLVM object + text) and load (deploy/graft_model.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "byoc/byoc.h"
#include "backends/llvm/llvm_host.h"
#include "deploy/graft_model.h"
#include "graft/graft_artifact.pb-c.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "runtime/module.h"
#include "runtime/json/json_runtime.h"
#include "runtime/exec/plan.h"

#define ART_SEED 0x67726166ull

typedef struct gm_region {
    char *name, *kind, *layers;
} gm_region;

struct graft_model {
    ir_ctx_t *ctx;
    ir_module *m;
    gr_llvm_host *host;
    rt_px *px;
    uint64_t load_ns;
    size_t obj_len;
    char *cpu;
    uint32_t nregions;
    gm_region *regions;
    uint32_t next;                 /* external modules: name and the engine they loaded on */
    char **ext_name, **ext_engine;
    uint32_t nout;                 /* the stored output signatures' names */
    char **out_name;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
    }
    const ir_attr *cm = ir_attrs_get(m->attrs, "const_name_to_constant");
    uint32_t nc = cm && cm->kind == IR_ATTR_MAP ? cm->u.arr.n : 0;
    body->consts = gr_xcalloc(nc + 1, sizeof(void *));
    for (uint32_t i = 0; i < nc; i++) {
        const ir_attr *k = &cm->u.arr.items[2 * i], *v = &cm->u.arr.items[2 * i + 1];
        if (k->kind != IR_ATTR_STR || v->kind != IR_ATTR_EXPR || !v->u.expr ||
            v->u.expr->kind != IR_CONST)
            continue;
        rt_tensor *t = ((ir_const *)v->u.expr)->data;
        Graft__NamedTensor *nt = gr_xcalloc(1, sizeof *nt);
        graft__named_tensor__init(nt);
        nt->name = (char *)k->u.s;
        const char *dt = ir_dtype_name(t->dl.dtype);
        nt->dtype = (char *)(dt ? dt : "");
        nt->n_shape = (size_t)t->dl.ndim;
        nt->shape = t->dl.shape;
        nt->has_data = 1;
        nt->data.data = rt_tensor_data(t);
        nt->data.len = rt_tensor_nbytes(t);
        body->consts[body->n_consts++] = nt;
    }
    return GR_OK;
}

static void free_externals(Graft__ArtifactBody *body) {
    for (size_t i = 0; i < body->n_external; i++) {
        free(body->external[i]->blob.data);
        free(body->external[i]);
    }
    free(body->external);
    body->external = NULL;
    body->n_external = 0;
    for (size_t i = 0; i < body->n_consts; i++) free(body->consts[i]);
    free(body->consts);
    body->consts = NULL;
    body->n_consts = 0;
}

/* Every JSON-graph module has the interface kind "json"; the engine that runs it (reference,
 * oneDNN, ...) is the blob's own "kind". Without this, a dnnl region would load onto the
 * reference engine: same outputs, several times slower. */
static const byoc_backend *find_loader(const Graft__ExternalModule *e) {
    const char *kind = e->kind;
    json_t *root = NULL;
    if (kind && strcmp(kind, "json") == 0 && e->blob.len) {
        root = json_loadb((const char *)e->blob.data, e->blob.len, 0, NULL);
        const char *inner = json_string_value(json_object_get(root, "kind"));
        if (inner) kind = inner;
    }
    const byoc_backend *b = byoc_backend_for_kind(kind);
    json_decref(root);
    return b;
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

static gr_status load_externals(graft_model *gm, const Graft__ArtifactBody *body, const byoc_options *opts,
                                gr_diag *diag) {
    const_table ct = {gm->ctx, 0, NULL, NULL};
    gr_status st = GR_OK;
    ct.names = gr_xcalloc(body->n_consts + 1, sizeof(char *));
    ct.tensors = gr_xcalloc(body->n_consts + 1, sizeof(rt_tensor *));
    for (size_t i = 0; i < body->n_consts && !st; i++) {
        const Graft__NamedTensor *nt = body->consts[i];
        ir_dtype dt;
        int64_t shape[RT_MAX_NDIM];
        if (!nt->name || !nt->dtype || !ir_dtype_parse(nt->dtype, &dt) || nt->n_shape > RT_MAX_NDIM) {
            st = gr_diag_set(diag, GR_ERR_INVALID, "artifact constant %zu is malformed", i);
            break;
        }
        for (size_t k = 0; k < nt->n_shape; k++) shape[k] = nt->shape[k];
        rt_tensor *t = rt_tensor_new(dt, (int32_t)nt->n_shape, shape);
        if (!t || rt_tensor_nbytes(t) != nt->data.len) {
            rt_tensor_release(t);
            st = gr_diag_set(diag, GR_ERR_INVALID, "artifact constant '%s': %zu data bytes do not "
                             "match its shape", nt->name, nt->data.len);
            break;
        }
        if (nt->data.len) memcpy(rt_tensor_data(t), nt->data.data, nt->data.len);
        ct.names[ct.n] = ir_intern(gm->ctx, nt->name);
        ct.tensors[ct.n++] = t;
    }
    for (size_t i = 0; i < body->n_external && !st; i++) {
        const Graft__ExternalModule *e = body->external[i];
        const byoc_backend *ld = find_loader(e);
        if (!ld) {
            st = gr_diag_set(diag, GR_ERR_UNSUPPORTED,
                             "artifact module '%s' has kind '%s', which this runtime cannot load",
                             e->name ? e->name : "", e->kind ? e->kind : "");
            break;
        }
        gm->ext_name = gr_xrealloc(gm->ext_name, sizeof(char *) * (gm->next + 1));
        gm->ext_engine = gr_xrealloc(gm->ext_engine, sizeof(char *) * (gm->next + 1));
        gm->ext_name[gm->next] = gr_xstrdup(e->name ? e->name : "");
        gm->ext_engine[gm->next++] = gr_xstrdup(ld->runtime_kind);
        rt_module *mod = NULL;
        st = ld->load(e->blob.data, e->blob.len, find_const, &ct, opts, &mod, diag);
        if (!st) {
            rt_module_attach(gm->m, mod);
            rt_module_release(mod);
        }
    }
    for (uint32_t i = 0; i < ct.n; i++) rt_tensor_release(ct.tensors[i]);
    free(ct.names);
    free(ct.tensors);
    return st;
}

gr_status graft_model_build(const ir_module *m, uint8_t **buf, size_t *len, gr_diag *diag) {
    *buf = NULL;
    *len = 0;
    if (ir_attrs_get(m->attrs, BYOC_ATTR_CONSTS_RELEASED))
        return gr_diag_set(diag, GR_ERR_INVALID, "graft_model_build: the module's region constants were handed to its "
                           "runtime modules (byoc_partition_opts.release_consts); partition without it to build an artifact");
    gr_llvm_host *h = NULL;
    rt_px *x = NULL;
    char *text = NULL;
    gr_status st = gr_llvm_host_new(&h, diag);
    if (!st) st = rt_px_new(m, "main", gr_llvm_host_lowering(h), &x, diag);
    if (st) goto out;
    rt_px_stats ps;
    rt_px_get_stats(x, &ps);
    Graft__ArtifactBody body;
    graft__artifact_body__init(&body);
    if ((st = add_externals(m, &body, diag))) {
        free_externals(&body);
        goto out;
    }
    {
        /* the text holds the IR only: runtime modules and their constants travel beside it */
        ir_module *mc = ir_module_copy(m);
        mc->attrs = ir_attrs_remove(m->ctx, ir_attrs_remove(m->ctx, m->attrs, "external_mods"),
                                    "const_name_to_constant");
        text = ir_print_module_str(mc, NULL);
    }
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
    uint8_t *bbuf = gr_xmalloc(blen ? blen : 1);
    graft__artifact_body__pack(&body, bbuf);
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

    Graft__Artifact art;
    graft__artifact__init(&art);
    art.format_version = GRAFT_MODEL_FORMAT_VERSION;
    art.checksum = gr_hash_bytes(bbuf, blen, ART_SEED);
    art.body.data = bbuf;
    art.body.len = blen;
    *len = graft__artifact__get_packed_size(&art);
    *buf = gr_xmalloc(*len);
    graft__artifact__pack(&art, *buf);
    free(bbuf);
out:
    free(text);
    rt_exec_free(x);
    gr_llvm_host_free(h);
    return st;
}

gr_status graft_model_build_file(const ir_module *m, const char *path, gr_diag *diag) {
    uint8_t *buf;
    size_t len;
    gr_status st = graft_model_build(m, &buf, &len, diag);
    if (st) return st;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return gr_diag_set(diag, GR_ERR_IO, "%s: cannot open for writing", path);
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    ok &= fclose(f) == 0;
    free(buf);
    return ok ? GR_OK : gr_diag_set(diag, GR_ERR_IO, "%s: write failed", path);
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

gr_status graft_model_load_buffer_opts(const uint8_t *buf, size_t len, const byoc_options *opts, graft_model **out,
                                       gr_diag *diag) {
    *out = NULL;
    uint64_t t0 = now_ns();
    Graft__Artifact *art = graft__artifact__unpack(NULL, len, buf);
    if (!art)
        return gr_diag_set(diag, GR_ERR_INVALID,
                           "not a graft artifact (corrupt or truncated: the container does not "
                           "decode)");
    if (art->format_version != GRAFT_MODEL_FORMAT_VERSION) {
        gr_status st = gr_diag_set(diag, GR_ERR_INVALID,
                                   "artifact format version %u, this runtime reads version %d "
                                   "(rebuild it with this graft)",
                                   art->format_version, GRAFT_MODEL_FORMAT_VERSION);
        graft__artifact__free_unpacked(art, NULL);
        return st;
    }
    if (gr_hash_bytes(art->body.data, art->body.len, ART_SEED) != art->checksum) {
        graft__artifact__free_unpacked(art, NULL);
        return gr_diag_set(diag, GR_ERR_INVALID, "artifact checksum mismatch (the file is damaged)");
    }
    Graft__ArtifactBody *body = graft__artifact_body__unpack(NULL, art->body.len, art->body.data);
    graft__artifact__free_unpacked(art, NULL);
    if (!body)
        return gr_diag_set(diag, GR_ERR_INVALID, "artifact body does not decode");
    gr_status st = GR_OK;
    graft_model *gm = gr_xcalloc(1, sizeof *gm);
    gm->ctx = ir_ctx_new();
    if (!body->module_text) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "artifact has no module");
        goto done;
    }
    if ((st = ir_parse_module(gm->ctx, "<artifact>", body->module_text, strlen(body->module_text),
                              &gm->m, diag)))
        goto done;
    if ((st = load_externals(gm, body, opts, diag))) goto done;
    gm->obj_len = body->has_host_object ? body->host_object.len : 0;
    if ((st = gr_llvm_host_load(body->host_object.data, gm->obj_len, &gm->host, diag))) goto done;
    if (gm->obj_len && (st = check_cpu(body->host_cpu, gr_llvm_host_cpu(gm->host), diag))) goto done;
    if ((st = rt_px_new(gm->m, "main", gr_llvm_host_lowering(gm->host), &gm->px, diag))) goto done;
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
    gm->load_ns = now_ns() - t0;
done:
    graft__artifact_body__free_unpacked(body, NULL);
    if (st) {
        graft_model_free(gm);
        return st;
    }
    *out = gm;
    return GR_OK;
}

gr_status graft_model_load(const char *path, graft_model **out, gr_diag *diag) {
    return graft_model_load_opts(path, NULL, out, diag);
}

gr_status graft_model_load_opts(const char *path, const byoc_options *opts, graft_model **out, gr_diag *diag) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return gr_diag_set(diag, GR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (gr_is_dir(f)) {
        fclose(f);
        return gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len == cap) buf = gr_xrealloc(buf, cap = cap ? cap * 2 : 1 << 20);
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return gr_diag_set(diag, GR_ERR_IO, "%s: read failed", path);
    }
    gr_status st = graft_model_load_buffer_opts(buf, len, opts, out, diag);
    free(buf);
    if (st) gr_diag_set_file(diag, path);
    return st;
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
    for (uint32_t i = 0; i < gm->nout; i++) free(gm->out_name[i]);
    free(gm->out_name);
    free(gm->cpu);
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
