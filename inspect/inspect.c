/* Partition inspection: the layer index of a model and its partition (insp_model_build), what
 * computed each layer (insp_observe) and layer-by-layer numeric diffs (insp_diff). See
 * inspect/inspect.h. */
#include "inspect/inspect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/compare.h"
#include "ir/text/printer.h"
#include "backends/dnnl/dnnl.h"
#include "runtime/exec/executor.h"
#include "runtime/json/json_runtime.h"
#include "runtime/module.h"

struct insp_model {
    ir_ctx_t *ctx;
    const ir_module *m, *part, *merged;
    const char *const *backends;
    uint32_t nbackends;
    const byoc_options *options;  /* borrowed: the caller keeps them alive */
    json_t *doc, *layers;         /* doc owns layers */
    gr_map index;                 /* interned layer name -> index + 1 */
    GR_VEC(const char *) names;   /* interned, by index */
    byoc_notes notes;
};

/* ------------------------------------------------------------------ layer index ---- */

static const ir_func *entry_func(const ir_module *m) {
    const ir_func *f = ir_module_func(m, "main");
    for (uint32_t i = 0; !f && i < m->nfuncs; i++) {
        if (m->funcs[i]->kind != IR_FUNC) continue;
        const ir_func *g = IR_AS(m->funcs[i], ir_func);
        if (!ir_attrs_get_str(g->attrs, BYOC_ATTR_COMPOSITE) && !ir_attrs_get_str(g->attrs, BYOC_ATTR_CODEGEN)) f = g;
    }
    return f;
}

typedef void (*binding_fn)(insp_model *im, const ir_binding *b, void *user);

/* Every binding of a function body in order, branches of ifs included. */
static void each_binding(insp_model *im, const ir_expr *body, binding_fn fn, void *user) {
    if (!body || body->kind != IR_SEQ) return;
    const ir_seq *s = IR_AS(body, ir_seq);
    for (uint32_t i = 0; i < s->nblocks; i++)
        for (uint32_t j = 0; j < s->blocks[i]->n; j++) {
            const ir_binding *b = &s->blocks[i]->bindings[j];
            fn(im, b, user);
            if (b->value->kind == IR_IF) {
                each_binding(im, IR_AS(b->value, ir_if)->then_branch, fn, user);
                each_binding(im, IR_AS(b->value, ir_if)->else_branch, fn, user);
            }
        }
}

static int layer_idx(const insp_model *im, const char *interned) {
    uint64_t v;
    return interned && gr_map_get(&im->index, GR_MAP_PTR(interned), &v) ? (int)v - 1 : -1;
}

int insp_model_find(const insp_model *im, const char *layer) {
    return layer ? layer_idx(im, ir_intern(im->ctx, layer)) : -1;
}

static json_t *layer_obj(insp_model *im, int i) { return json_array_get(im->layers, (size_t)i); }

/* "var = expr" on one line, without spans and metadata. */
static char *binding_text(const ir_binding *b) {
    ir_print_opts po = {.no_spans = true, .no_metadata = true};
    char *text = ir_print_expr_str(b->value, &po);
    if (!text) return NULL;
    text[strcspn(text, "\n")] = 0;
    size_t n = strlen(b->var->name) + strlen(text) + 8;
    char *line = malloc(n);
    snprintf(line, n, "%s = %s", b->var->name, text);
    free(text);
    return line;
}

static void append_text(json_t *o, const char *key, const char *prefix, const char *line) {
    json_t *old = json_object_get(o, key);
    const char *was = json_is_string(old) ? json_string_value(old) : "";
    size_t n = strlen(was) + strlen(prefix) + strlen(line) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s%s%s\n", was, prefix, line);
    json_object_set_new(o, key, json_string(s));
    free(s);
}

static const char *op_name(const ir_expr *v) {
    if (v->kind == IR_CALL && IR_AS(v, ir_call)->callee->kind == IR_OP)
        return IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name;
    if (v->kind == IR_TGI) return "TupleGetItem";
    return ir_expr_kind_name((ir_expr_kind)v->kind);
}

/* pass 1: layers from output marks, in binding order */
static void find_layers(insp_model *im, const ir_binding *b, void *user) {
    (void)user;
    const ir_span *sp[2] = {b->var->base.span, b->value->span};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; sp[k] && i < sp[k]->n; i++) {
            const ir_loc *l = &sp[k]->locs[i];
            if (!l->is_output || layer_idx(im, l->source) >= 0) continue;
            if (b->value->kind == IR_CONST) continue;
            gr_map_put(&im->index, GR_MAP_PTR(l->source), im->names.len + 1);
            json_t *o = json_object();
            char ty[256] = "";
            if (b->var->base.sinfo) ir_sinfo_snprint(b->var->base.sinfo, ty, sizeof ty);
            json_object_set_new(o, "name", json_string(l->source));
            json_object_set_new(o, "order", json_integer(im->names.len));
            json_object_set_new(o, "op", json_string(op_name(b->value)));
            json_object_set_new(o, "var", json_string(b->var->name));
            json_object_set_new(o, "type", json_string(ty));
            json_object_set_new(o, "inputs", json_array());
            json_object_set_new(o, "place", json_string("host"));
            json_array_append_new(im->layers, o);
            gr_vec_push(&im->names, l->source);
        }
}

/* The layer a binding belongs to: its first output mark, else its first source that is a
 * layer. */
static int binding_layer(insp_model *im, const ir_binding *b) {
    const ir_span *sp[2] = {b->var->base.span, b->value->span};
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < 2; k++)
            for (uint32_t i = 0; sp[k] && i < sp[k]->n; i++) {
                if (pass == 0 && !sp[k]->locs[i].is_output) continue;
                int x = layer_idx(im, sp[k]->locs[i].source);
                if (x >= 0) return x;
            }
    return -1;
}

typedef struct walk2 {
    gr_map var_layer;             /* var -> layer + 1 */
    GR_VEC(int) owner;            /* layer -> the layer whose binding carries its mark, + 1 */
    GR_VEC(bool) owns;            /* layer -> some binding belongs to it */
} walk2;

/* A constant argument (a weight) in its layer's "weights": the name of its initializer (the
 * first source of its span that is not a layer), its struct info. */
static void add_weight(insp_model *im, int to, const ir_expr *c) {
    const ir_span *s = c->span;
    const char *name = s && s->n ? s->locs[0].source : NULL;
    for (uint32_t i = 0; s && i < s->n; i++)
        if (layer_idx(im, s->locs[i].source) < 0) {
            name = s->locs[i].source;
            break;
        }
    char ty[256] = "";
    if (c->sinfo) ir_sinfo_snprint(c->sinfo, ty, sizeof ty);
    json_t *o = layer_obj(im, to), *ws = json_object_get(o, "weights");
    if (!ws) json_object_set_new(o, "weights", ws = json_array());
    json_array_append_new(ws, json_pack("{s:s?, s:s}", "name", name, "type", ty));
}

static void add_input(insp_model *im, int to, const ir_expr *a, walk2 *w) {
    uint64_t v;
    if (a->kind == IR_TUPLE) {
        for (uint32_t k = 0; k < IR_AS(a, ir_tuple)->n; k++) add_input(im, to, IR_AS(a, ir_tuple)->fields[k], w);
        return;
    }
    if (a->kind == IR_CONST) {
        add_weight(im, to, a);
        return;
    }
    if (!ir_is_var(a) || !gr_map_get(&w->var_layer, GR_MAP_PTR(a), &v) || (int)v - 1 == to) return;
    json_t *ins = json_object_get(layer_obj(im, to), "inputs");
    size_t k;
    json_t *x;
    json_array_foreach(ins, k, x) if (json_integer_value(x) == (json_int_t)v - 1) return;
    json_array_append_new(ins, json_integer((json_int_t)v - 1));
}

/* pass 2: IR before partitioning and the edges between layers */
static void link_layers(insp_model *im, const ir_binding *b, void *user) {
    walk2 *w = user;
    int L = binding_layer(im, b);
    if (L < 0) return;
    gr_map_put(&w->var_layer, GR_MAP_PTR(b->var), (uint64_t)L + 1);
    w->owns.data[L] = true;
    /* the other layers this binding produces (a pass folded them into it) */
    const ir_span *sp[2] = {b->var->base.span, b->value->span};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; sp[k] && i < sp[k]->n; i++) {
            int x = sp[k]->locs[i].is_output ? layer_idx(im, sp[k]->locs[i].source) : -1;
            if (x >= 0 && x != L && !w->owner.data[x]) w->owner.data[x] = L + 1;
        }
    const ir_expr *v = b->value;
    if (v->kind == IR_CALL)
        for (uint32_t k = 0; k < IR_AS(v, ir_call)->nargs; k++) add_input(im, L, IR_AS(v, ir_call)->args[k], w);
    else if (v->kind == IR_TGI)
        add_input(im, L, IR_AS(v, ir_tgi)->tuple, w);
    else
        add_input(im, L, v, w);
    char *line = binding_text(b);
    if (line) {
        /* every layer the binding names, not only its own (a fused import keeps several) */
        const ir_span *s = b->value->span ? b->value->span : b->var->base.span;
        for (uint32_t i = 0; s && i < s->n; i++) {
            int x = layer_idx(im, s->locs[i].source);
            if (x >= 0) append_text(layer_obj(im, x), "before", "", line);
        }
    }
    free(line);
}

/* ---- placement: regions and composites of the merged module, host ops ---- */

typedef struct place_ctx {
    const char *region, *backend, *composite;
    const ir_span *site;          /* the composite call's span */
    gr_map lambdas;               /* var -> composite lambda */
} place_ctx;

static void place_span(insp_model *im, const ir_span *s, place_ctx *pc, const char *line, const char *prefix) {
    for (uint32_t i = 0; s && i < s->n; i++) {
        int x = layer_idx(im, s->locs[i].source);
        if (x < 0) continue;
        json_t *o = layer_obj(im, x);
        if (pc->region) {
            bool own = s->locs[i].is_output || !json_object_get(o, "composite");
            json_object_set_new(o, "place", json_string("region"));
            json_object_set_new(o, "region", json_string(pc->region));
            json_object_set_new(o, "backend", json_string(pc->backend));
            if (pc->composite && own) json_object_set_new(o, "composite", json_string(pc->composite));
        }
        if (line) append_text(o, "after", prefix, line);
    }
}

static void place_in_composite(insp_model *im, const ir_binding *b, void *user) {
    place_ctx *pc = user;
    char *line = binding_text(b);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "[%s] ", pc->composite ? pc->composite : "");
    const ir_span *s = b->value->span ? b->value->span : b->var->base.span;
    /* a lambda shared by structurally equal composites names the first call's layers: its
     * lines then belong to this call's layers */
    bool own = true;
    for (uint32_t i = 0; s && i < s->n; i++) own &= !pc->site || ir_span_has_source(pc->site, s->locs[i].source);
    if (!own) s = pc->site;
    for (uint32_t i = 0; s && line && i < s->n; i++) {
        int x = layer_idx(im, s->locs[i].source);
        if (x >= 0) append_text(layer_obj(im, x), "after", prefix, line);
    }
    free(line);
}

static const ir_func *callee_func(const insp_model *im, const ir_expr *v, const gr_map *lambdas) {
    if (v->kind != IR_CALL) return NULL;
    const ir_expr *c = IR_AS(v, ir_call)->callee;
    uint64_t f;
    if (c->kind == IR_GVAR) return ir_module_func(im->merged, IR_AS(c, ir_gvar)->name);
    if (lambdas && ir_is_var(c) && gr_map_get(lambdas, GR_MAP_PTR(c), &f)) return (const ir_func *)(uintptr_t)f;
    return NULL;
}

static void place_in_region(insp_model *im, const ir_binding *b, void *user) {
    place_ctx *pc = user;
    if (b->value->kind == IR_FUNC) {
        gr_map_put(&pc->lambdas, GR_MAP_PTR(b->var), GR_MAP_PTR(b->value));
        return;
    }
    const ir_func *f = callee_func(im, b->value, &pc->lambdas);
    const char *comp = f ? ir_attrs_get_str(f->attrs, BYOC_ATTR_COMPOSITE) : NULL;
    const ir_span *s = b->var->base.span ? ir_span_concat(im->ctx, b->value->span, b->var->base.span) : b->value->span;
    pc->composite = comp;
    pc->site = s;
    char *line = binding_text(b);
    place_span(im, s, pc, line, "[region] ");
    free(line);
    if (comp) each_binding(im, f->body, place_in_composite, pc);
    pc->composite = NULL;
    pc->site = NULL;
}

static void place_top(insp_model *im, const ir_binding *b, void *user) {
    (void)user;
    const ir_func *f = callee_func(im, b->value, NULL);
    const char *cg = f ? ir_attrs_get_str(f->attrs, BYOC_ATTR_CODEGEN) : NULL;
    if (cg) {
        place_ctx pc = {0};
        const char *sym = ir_attrs_get_str(f->attrs, BYOC_ATTR_GLOBAL_SYMBOL);
        pc.region = sym ? sym : IR_AS(IR_AS(b->value, ir_call)->callee, ir_gvar)->name;
        pc.backend = cg;
        gr_map_init(&pc.lambdas);
        each_binding(im, f->body, place_in_region, &pc);
        gr_map_free(&pc.lambdas);
        return;
    }
    place_ctx host = {0};
    char *line = binding_text(b);
    place_span(im, b->value->span ? b->value->span : b->var->base.span, &host, line, "");
    free(line);
}

/* Host reasons and near misses from the partition report, by layer name. */
static void merge_report(insp_model *im, json_t *report) {
    size_t i, k;
    json_t *h, *l;
    json_array_foreach(json_object_get(report, "host"), i, h) {
        json_array_foreach(json_object_get(h, "layers"), k, l) {
            int x = insp_model_find(im, json_string_value(l));
            if (x < 0) continue;
            json_t *o = layer_obj(im, x);
            if (!json_object_get(o, "reason") && json_object_get(h, "reason"))
                json_object_set(o, "reason", json_object_get(h, "reason"));
        }
    }
    json_t *r;
    json_array_foreach(json_object_get(report, "regions"), i, r) {
        size_t q;
        json_t *nf;
        json_array_foreach(json_object_get(r, "not_fused"), q, nf) {
            json_array_foreach(json_object_get(nf, "layers"), k, l) {
                int x = insp_model_find(im, json_string_value(l));
                if (x < 0) continue;
                char buf[1024];
                snprintf(buf, sizeof buf, "%s: %s", json_string_value(json_object_get(nf, "composite")),
                         json_string_value(json_object_get(nf, "reason")));
                json_object_set_new(layer_obj(im, x), "near_miss", json_string(buf));
            }
        }
    }
}

gr_status insp_model_build(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t nbackends,
                           const byoc_options *options, insp_model **out, gr_diag *diag) {
    *out = NULL;
    const ir_func *main_fn = entry_func(m);
    if (!main_fn) return gr_diag_set(diag, GR_ERR_INVALID, "the module has no entry function");
    insp_model *im = calloc(1, sizeof(*im));
    im->ctx = ctx;
    im->m = m;
    im->backends = backends;
    im->nbackends = nbackends;
    gr_map_init(&im->index);
    byoc_notes_init(&im->notes);
    byoc_partition_opts po = {0};
    po.notes = &im->notes;
    po.options = im->options = options;
    ir_module *part = NULL;
    gr_status st = byoc_partition(ctx, m, backends, nbackends, &po, &part, diag);
    if (st) {
        insp_model_free(im);
        return st;
    }
    im->part = part;
    im->merged = po.after_merge ? po.after_merge : part;
    im->doc = json_object();
    im->layers = json_array();
    json_object_set_new(im->doc, "layers", im->layers);
    json_t *bs = json_array();
    for (uint32_t i = 0; i < nbackends; i++) json_array_append_new(bs, json_string(backends[i]));
    json_object_set_new(im->doc, "backends", bs);
    each_binding(im, main_fn->body, find_layers, NULL);
    walk2 w = {0};
    gr_map_init(&w.var_layer);
    for (size_t i = 0; i < im->names.len; i++) {
        gr_vec_push(&w.owner, 0);
        gr_vec_push(&w.owns, false);
    }
    each_binding(im, main_fn->body, link_layers, &w);
    /* A layer no binding belongs to (an Identity of a weight, a batch norm folded into its
     * convolution) is computed by the binding that carries its mark: "folded_into" that layer,
     * which lists it in "folds". */
    for (size_t i = 0; i < im->names.len; i++) {
        if (w.owns.data[i] || !w.owner.data[i]) continue;
        json_t *host = layer_obj(im, w.owner.data[i] - 1), *folds = json_object_get(host, "folds");
        if (!folds) json_object_set_new(host, "folds", folds = json_array());
        json_array_append_new(folds, json_integer((json_int_t)i));
        json_object_set_new(layer_obj(im, (int)i), "folded_into", json_integer(w.owner.data[i] - 1));
    }
    gr_map_free(&w.var_layer);
    gr_vec_free(&w.owner);
    gr_vec_free(&w.owns);
    const ir_func *mf = entry_func(im->merged);
    if (mf) each_binding(im, mf->body, place_top, NULL);
    json_t *report = byoc_report_json(ctx, im->merged, backends, nbackends, &im->notes);
    merge_report(im, report);
    json_object_set(im->doc, "regions", json_object_get(report, "regions"));
    json_object_set(im->doc, "host", json_object_get(report, "host"));
    json_object_set(im->doc, "coverage", json_object_get(report, "coverage"));
    json_decref(report);
    *out = im;
    return GR_OK;
}

void insp_model_free(insp_model *im) {
    if (!im) return;
    json_decref(im->doc);
    gr_map_free(&im->index);
    gr_vec_free(&im->names);
    byoc_notes_free(&im->notes);
    free(im);
}

json_t *insp_model_json(insp_model *im) { return im->doc; }

/* ------------------------------------------------------------------ observation ---- */

/* Which layers a region graph's entries produce (its "layer_outputs"): (nid, index) -> layer,
 * one chain per entry. */
typedef struct gtab_item {
    uint64_t key;
    int layer;
    int next;
} gtab_item;

typedef struct gtab {
    const char *symbol;           /* the graph's own pointer (tap points carry it) */
    gr_map first;                 /* key -> item + 1 */
    GR_VEC(gtab_item) items;
} gtab;

enum { OBS_INFO, OBS_COLLECT, OBS_COMPARE };

typedef struct obs {
    insp_model *im;
    int mode;
    bool *seen;                   /* per layer, this run */
    rt_tensor **vals;             /* OBS_COLLECT: per layer */
    json_t **res;                 /* OBS_COMPARE: per layer result object */
    double rtol, atol, atol_scale, atol_steps;
    double *step;                 /* per layer: its quantization step, 0 when none */
    int64_t *zero_point;
    insp_perturb_fn perturb;
    void *perturb_user;
    GR_VEC(gtab) graphs;
    json_t *info;                 /* OBS_INFO target: the model's layers */
} obs;

static uint64_t ekey(uint32_t nid, uint32_t index) { return ((uint64_t)nid << 16 | index) + 1; }

static void load_tables(obs *ob, const ir_module *m) {
    for (uint32_t k = 0; k < rt_module_count(m); k++) {
        rt_json_graph *g;
        for (uint32_t i = 0; (g = rt_json_module_graph(rt_module_at(m, k), i)); i++) {
            gtab t = {0};
            t.symbol = rt_json_graph_symbol(g);
            gr_map_init(&t.first);
            const char *text = rt_json_graph_text(g);
            json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
            size_t q;
            json_t *it;
            json_array_foreach(json_object_get(doc, "layer_outputs"), q, it) {
                int L = layer_idx(ob->im, ir_intern(ob->im->ctx, json_string_value(json_array_get(it, 2))));
                if (L < 0) continue;
                uint64_t key = ekey((uint32_t)json_integer_value(json_array_get(it, 0)),
                                    (uint32_t)json_integer_value(json_array_get(it, 1)));
                uint64_t head = gr_map_get_or(&t.first, key, 0);
                bool dup = false;
                for (uint64_t x = head; x && !dup; x = (uint64_t)(t.items.data[x - 1].next + 1))
                    dup = t.items.data[x - 1].layer == L;
                if (dup) continue;
                gtab_item gi = {key, L, (int)head - 1};
                gr_vec_push(&t.items, gi);
                gr_map_put(&t.first, key, t.items.len);
            }
            json_decref(doc);
            gr_vec_push(&ob->graphs, t);
        }
    }
}

static void free_tables(obs *ob) {
    for (uint32_t i = 0; i < ob->graphs.len; i++) {
        gr_map_free(&ob->graphs.data[i].first);
        gr_vec_free(&ob->graphs.data[i].items);
    }
    gr_vec_free(&ob->graphs);
}

static bool is_levels(const rt_tensor *t) {
    return (t->dl.dtype.code == kDLInt || t->dl.dtype.code == kDLUInt) && t->dl.dtype.bits == 8;
}

/* u8/s8 levels as the values they stand for, (q - zp) * scale, in float32. New reference. */
static rt_tensor *dequantize(const rt_tensor *t, double scale, int64_t zp) {
    rt_tensor *f = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, t->dl.ndim, t->dl.shape);
    float *o = f ? rt_tensor_data(f) : NULL;
    for (int64_t i = 0, n = o ? rt_tensor_numel(t) : 0; i < n; i++)
        o[i] = (float)((rt_tensor_get_f64(t, i) - (double)zp) * scale);
    return f;
}

/* A float value compared with levels, quantized to them as the QuantizeLinear after it would
 * (round half to even, saturate: a Relu the quantizer left to the zero point), back in float32.
 * New reference. */
static rt_tensor *requantize(const rt_tensor *t, const rt_tensor *levels, double scale, int64_t zp) {
    double lo = levels->dl.dtype.code == kDLUInt ? 0 : -128, hi = levels->dl.dtype.code == kDLUInt ? 255 : 127;
    rt_tensor *f = rt_tensor_new((DLDataType){kDLFloat, 32, 1}, t->dl.ndim, t->dl.shape);
    float *o = f ? rt_tensor_data(f) : NULL;
    for (int64_t i = 0, n = o ? rt_tensor_numel(t) : 0; i < n; i++) {
        double q = nearbyint(rt_tensor_get_f64(t, i) / scale) + (double)zp;
        o[i] = (float)(((q < lo ? lo : q > hi ? hi : q) - (double)zp) * scale); /* NaN stays NaN */
    }
    return f;
}

/* max abs / rel error and the count out of tolerance of layer L's got against want
 * (base/compare.h): |a - b| > atol + rtol * |b|, atol = atol_abs + atol_scale * max |b| (the
 * layer's largest magnitude: float32 sums taken in another order differ by ulps of their
 * largest terms, not of each result) + atol_steps * its quantization step; a NaN on either path
 * diverges. A layer with a step compares u8/s8 levels as the values they stand for, and a float
 * value with levels as those levels. */
static void compare(const rt_tensor *got, const rt_tensor *want, const obs *ob, int L, json_t *r) {
    double step = ob->step ? ob->step[L] : 0;
    rt_tensor *gq = NULL, *wq = NULL;
    if (step > 0 && is_levels(want) && !is_levels(got) && got->dl.dtype.code == kDLFloat)
        got = gq = requantize(got, want, step, ob->zero_point[L]);
    else if (step > 0 && is_levels(got))
        got = gq = dequantize(got, step, ob->zero_point[L]);
    if (step > 0 && is_levels(want)) want = wq = dequantize(want, step, ob->zero_point[L]);
    bool same = got && want && got->dl.dtype.code == want->dl.dtype.code && got->dl.dtype.bits == want->dl.dtype.bits &&
                rt_tensor_same_shape(got, want);
    if (!same) {
        json_object_set_new(r, "status", json_string("mismatch"));
    } else {
        gr_cmp_opts o = {.atol = ob->atol + ob->atol_steps * step, .atol_scale = ob->atol_scale, .rtol = ob->rtol};
        gr_cmp_result e;
        bool ok = gr_cmp_tensor(got, want, &o, &e);
        json_object_set_new(r, "status", json_string(ok ? "ok" : "diverges"));
        json_object_set_new(r, "max_abs", json_real(isinf(e.max_abs) ? 1e308 : e.max_abs));
        json_object_set_new(r, "max_rel", json_real(isinf(e.max_rel) ? 1e308 : e.max_rel));
        json_object_set_new(r, "max_ref", json_real(e.max_ref));
        json_object_set_new(r, "bad", json_integer(e.bad));
        json_object_set_new(r, "numel", json_integer(e.numel));
        if (step > 0) {
            json_object_set_new(r, "step", json_real(step));
            json_object_set_new(r, "max_steps", json_real(isinf(e.max_abs) ? 1e308 : e.max_abs / step));
        }
    }
    if (gq) rt_tensor_release(gq);
    if (wq) rt_tensor_release(wq);
}

/* One observed output of layer L (value NULL: unobservable). info: what computed it. */
static bool observe(obs *ob, int L, rt_tensor *value, json_t *info) {
    if (ob->seen[L]) {
        json_decref(info);
        return false;
    }
    ob->seen[L] = true;
    bool changed = false;
    json_t *target = ob->mode == OBS_INFO ? layer_obj(ob->im, L) : ob->mode == OBS_COMPARE ? ob->res[L] : NULL;
    if (target) json_object_update(target, info);
    json_decref(info);
    if (ob->mode != OBS_INFO && value && ob->perturb && ob->mode == OBS_COMPARE)
        changed = ob->perturb(ob->im->names.data[L], value, ob->perturb_user);
    if (ob->mode == OBS_COLLECT && value) {
        /* a copy: host values may live in planned buffers that later ops reuse */
        rt_tensor *c = rt_tensor_new(value->dl.dtype, value->dl.ndim, value->dl.shape);
        if (c) memcpy(rt_tensor_data(c), rt_tensor_data(value), rt_tensor_nbytes(value));
        ob->vals[L] = c;
    }
    if (ob->mode == OBS_COMPARE) {
        if (!value) json_object_set_new(ob->res[L], "status", json_string("unobservable"));
        else if (ob->vals[L]) compare(value, ob->vals[L], ob, L, ob->res[L]);
        else json_object_set_new(ob->res[L], "status", json_string("missing"));
        json_object_set_new(ob->res[L], "observed", json_true());
    }
    return changed;
}

static void host_tap(const rt_exec_event *ev, rt_value *value, void *user) {
    obs *ob = user;
    if (value->kind != RT_VAL_TENSOR || !ev->span) return;
    for (uint32_t i = 0; i < ev->span->n; i++) {
        if (!ev->span->locs[i].is_output) continue;
        int L = layer_idx(ob->im, ev->span->locs[i].source);
        if (L < 0) continue;
        json_t *info = json_pack("{s:s, s:s}", "where", "host", "node_op", ev->name);
        observe(ob, L, value->u.t, info);
    }
}

static bool region_tap(const rt_json_tap_point *p, rt_tensor *value, void *user) {
    obs *ob = user;
    gtab *t = NULL;
    for (uint32_t i = 0; i < ob->graphs.len && !t; i++)
        if (ob->graphs.data[i].symbol == p->symbol) t = &ob->graphs.data[i];
    if (!t) return false;
    bool changed = false;
    for (uint64_t x = gr_map_get_or(&t->first, ekey(p->nid, p->index), 0); x; x = (uint64_t)(t->items.data[x - 1].next + 1)) {
        json_t *info = json_pack("{s:s, s:s}", "where", p->symbol, "node_op", p->node->name);
        if (p->prim >= 0) json_object_set_new(info, "prim", json_integer(p->prim));
        if (p->prim_kind) json_object_set_new(info, "prim_kind", json_string(p->prim_kind));
        if (p->prim_impl) json_object_set_new(info, "prim_impl", json_string(p->prim_impl));
        if (p->fused_into) json_object_set_new(info, "unobservable", json_string(p->fused_into));
        changed |= observe(ob, t->items.data[x - 1].layer, value, info);
    }
    return changed;
}

typedef struct prof_acc {
    insp_model *im;
    gr_map region_ns;             /* interned symbol -> ns */
    double *host_ms;
} prof_acc;

static void prof_cb(const rt_exec_event *ev, void *user) {
    prof_acc *pa = user;
    if (strcmp(ev->kind, "extern") == 0) {
        const char *sym = ir_intern(pa->im->ctx, ev->name);
        gr_map_put(&pa->region_ns, GR_MAP_PTR(sym), gr_map_get_or(&pa->region_ns, GR_MAP_PTR(sym), 0) + ev->ns);
    } else if (strcmp(ev->kind, "op") == 0 && ev->span) {
        for (uint32_t i = 0; i < ev->span->n; i++) {
            int L = ev->span->locs[i].is_output ? layer_idx(pa->im, ev->span->locs[i].source) : -1;
            if (L >= 0) pa->host_ms[L] += (double)ev->ns / 1e6;
        }
    }
}

/* The regions' per-primitive profile (rt_module_set_profiler: backends with primitives, such
 * as oneDNN): one entry per primitive of the timed run in the document's "primitives", and its
 * index in each of its layers' "prims". */
static void prim_cb(const rt_prim_event *ev, void *user) {
    insp_model *im = user;
    json_t *prims = json_object_get(im->doc, "primitives");
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:f}", "region", ev->region, "index", (int)ev->index, "kind",
                          ev->info->kind ? ev->info->kind : "", "impl", ev->info->impl ? ev->info->impl : "", "ms",
                          (double)ev->ns / 1e6);
    if (ev->info->ref_reason) json_object_set_new(o, "ref_reason", json_string(ev->info->ref_reason));
    json_t *ls = json_array();
    for (uint32_t k = 0; k < ev->info->nlayers; k++) {
        int L = insp_model_find(im, ev->info->layers[k]);
        if (L < 0) continue;
        json_array_append_new(ls, json_integer(L));
        json_t *lo = layer_obj(im, L), *lp = json_object_get(lo, "prims");
        if (!lp) json_object_set_new(lo, "prims", lp = json_array());
        json_array_append_new(lp, json_integer((json_int_t)json_array_size(prims)));
    }
    json_object_set_new(o, "layers", ls);
    json_array_append_new(prims, o);
}

/* Runs module m with taps feeding ob. */
static gr_status run_path(obs *ob, const ir_module *m, const rt_value *inputs, uint32_t nin, gr_diag *d) {
    rt_exec_t *x = NULL;
    rt_value res = {0};
    load_tables(ob, m);
    gr_status st = rt_exec_new(m, "main", &x, d);
    if (!st) {
        rt_exec_set_tap(x, host_tap, ob);
        rt_json_module_set_taps(m, region_tap, ob);
        st = rt_exec_run(x, inputs, nin, &res, d);
        rt_json_module_set_taps(m, NULL, NULL);
    }
    rt_value_clear(&res);
    rt_exec_free(x);
    free_tables(ob);
    return st;
}

static void obs_init(obs *ob, insp_model *im, int mode) {
    memset(ob, 0, sizeof(*ob));
    ob->im = im;
    ob->mode = mode;
    ob->seen = calloc(im->names.len + 1, sizeof(bool));
}

gr_status insp_observe(insp_model *im, const rt_value *inputs, uint32_t nin, bool profile, gr_diag *diag) {
    obs ob;
    obs_init(&ob, im, OBS_INFO);
    gr_status st = run_path(&ob, im->part, inputs, nin, diag);
    free(ob.seen);
    if (st || !profile) return st;
    /* timed without taps: the tapped run above warmed it up */
    prof_acc pa = {im, {0}, calloc(im->names.len + 1, sizeof(double))};
    gr_map_init(&pa.region_ns);
    rt_exec_t *x = NULL;
    rt_value res = {0};
    st = rt_exec_new(im->part, "main", &x, diag);
    if (!st) {
        json_object_set_new(im->doc, "primitives", json_array());
        rt_exec_set_profiler(x, prof_cb, &pa);
        rt_module_set_profilers(im->part, prim_cb, im);
        st = rt_exec_run(x, inputs, nin, &res, diag);
        rt_module_set_profilers(im->part, NULL, NULL);
    }
    rt_value_clear(&res);
    rt_exec_free(x);
    for (uint32_t L = 0; !st && L < im->names.len; L++) {
        json_t *o = layer_obj(im, (int)L);
        const char *where = json_string_value(json_object_get(o, "where"));
        if (where && strcmp(where, "host") == 0) {
            json_object_set_new(o, "ms", json_real(pa.host_ms[L]));
            json_object_set_new(o, "time_of", json_string("op"));
        } else if (where) {
            uint64_t ns = gr_map_get_or(&pa.region_ns, GR_MAP_PTR(ir_intern(im->ctx, where)), 0);
            json_object_set_new(o, "ms", json_real((double)ns / 1e6));
            json_object_set_new(o, "time_of", json_string("region"));
        }
    }
    json_t *r;
    size_t i;
    json_array_foreach(json_object_get(im->doc, "regions"), i, r) {
        const char *sym = json_string_value(json_object_get(r, "symbol"));
        uint64_t ns = sym ? gr_map_get_or(&pa.region_ns, GR_MAP_PTR(ir_intern(im->ctx, sym)), 0) : 0;
        json_object_set_new(r, "ms", json_real((double)ns / 1e6));
    }
    gr_map_free(&pa.region_ns);
    free(pa.host_ms);
    return st;
}

/* --------------------------------------------------------------------- diff ---- */

/* Each layer's quantization step from its own scale (a Q/DQ layer) or its output's: per tensor
 * only (a per-channel step has no one value). */
static void steps_of(insp_model *im, const json_t *qp, double *step, int64_t *zp) {
    const char *layer;
    json_t *lq;
    json_object_foreach((json_t *)qp, layer, lq) {
        int L = insp_model_find(im, layer);
        json_t *pick = NULL, *q;
        size_t i;
        json_array_foreach(lq, i, q) {
            const char *role = json_string_value(json_object_get(q, "role"));
            if (!role || !json_object_get(q, "scale")) continue;
            if (strcmp(role, "self") == 0) pick = q;
            else if (!pick && strcmp(role, "output 0") == 0) pick = q;
        }
        double s = json_number_value(json_object_get(pick, "scale"));
        if (L < 0 || !(s > 0)) continue;
        step[L] = s;
        zp[L] = json_integer_value(json_object_get(pick, "zero_point"));
    }
}

gr_status insp_diff(insp_model *im, const insp_diff_opts *o, const rt_value *inputs, uint32_t nin, json_t **out,
                    gr_diag *diag) {
    *out = NULL;
    uint32_t n = im->names.len;
    const char *against = o->against && strcmp(o->against, "reference") != 0 ? o->against : NULL;
    const ir_module *am = o->against_module ? o->against_module : im->m;
    if (against) {
        ir_module *p = NULL;
        byoc_partition_opts po = {0};
        po.options = im->options;
        gr_status st = byoc_partition(im->ctx, am, &against, 1, &po, &p, diag);
        if (st) return st;
        am = p;
    }
    obs a, b;
    obs_init(&a, im, OBS_COLLECT);
    a.vals = calloc(n + 1, sizeof(rt_tensor *));
    gr_status st = GR_OK;
    if (o->nagainst_values) {
        for (uint32_t i = 0; i < o->nagainst_values; i++) {
            int L = insp_model_find(im, o->against_values[i].layer);
            if (L >= 0 && !a.vals[L]) a.vals[L] = rt_tensor_retain((rt_tensor *)o->against_values[i].value);
        }
    } else {
        st = run_path(&a, am, inputs, nin, diag);
    }
    obs_init(&b, im, OBS_COMPARE);
    b.vals = a.vals;
    b.rtol = o->rtol;
    b.atol = o->atol;
    b.atol_scale = o->atol_scale;
    b.atol_steps = o->atol_steps;
    b.step = calloc(n + 1, sizeof(double));
    b.zero_point = calloc(n + 1, sizeof(int64_t));
    steps_of(im, o->qparams, b.step, b.zero_point);
    b.perturb = o->perturb;
    b.perturb_user = o->perturb_user;
    b.res = calloc(n + 1, sizeof(json_t *));
    for (uint32_t L = 0; L < n; L++) b.res[L] = json_object();
    if (!st) st = run_path(&b, im->part, inputs, nin, diag);
    json_t *doc = NULL;
    if (!st) {
        doc = json_object();
        json_object_set_new(doc, "against", json_string(o->nagainst_values ? "values" : against ? against : "reference"));
        json_object_set_new(doc, "against_module", json_boolean(o->against_module != NULL));
        json_object_set_new(doc, "rtol", json_real(o->rtol));
        json_object_set_new(doc, "atol", json_real(o->atol));
        json_object_set_new(doc, "atol_scale", json_real(o->atol_scale));
        json_object_set_new(doc, "atol_steps", json_real(o->atol_steps));
        json_t *arr = json_array(), *first = json_null();
        uint32_t nok = 0, nbad = 0, nunobs = 0, nmiss = 0;
        for (uint32_t L = 0; L < n; L++) {
            json_t *r = b.res[L], *lo = layer_obj(im, (int)L);
            json_object_set(r, "name", json_object_get(lo, "name"));
            json_object_set(r, "order", json_object_get(lo, "order"));
            json_object_set(r, "op", json_object_get(lo, "op"));
            const char *keys[] = {"region", "composite", "reason"};
            for (int k = 0; k < 3; k++)
                if (json_object_get(lo, keys[k])) json_object_set(r, keys[k], json_object_get(lo, keys[k]));
            if (!json_object_get(r, "status"))
                json_object_set_new(r, "status", json_string(a.vals[L] ? "missing" : "not computed"));
            if (!a.vals[L] && strcmp(json_string_value(json_object_get(r, "status")), "unobservable") != 0)
                json_object_set_new(r, "status", json_string("not computed"));
            json_object_del(r, "observed");
            const char *s = json_string_value(json_object_get(r, "status"));
            if (strcmp(s, "ok") == 0) nok++;
            else if (strcmp(s, "diverges") == 0 || strcmp(s, "mismatch") == 0) {
                nbad++;
                if (json_is_null(first)) first = json_incref(r);
            } else if (strcmp(s, "unobservable") == 0) nunobs++;
            else nmiss++;
            json_t *d = json_object();
            json_object_set(d, "status", json_object_get(r, "status"));
            if (json_object_get(r, "max_abs")) {
                json_object_set(d, "max_abs", json_object_get(r, "max_abs"));
                json_object_set(d, "max_rel", json_object_get(r, "max_rel"));
                json_object_set(d, "bad", json_object_get(r, "bad"));
                if (json_object_get(r, "max_steps")) json_object_set(d, "max_steps", json_object_get(r, "max_steps"));
            }
            json_object_set_new(lo, "diff", d);
            /* what computed it also goes to the model document */
            const char *info[] = {"where", "node_op", "prim", "prim_kind", "prim_impl", "unobservable"};
            for (int k = 0; k < 6; k++)
                if (json_object_get(r, info[k])) json_object_set(lo, info[k], json_object_get(r, info[k]));
            json_array_append(arr, r);
        }
        json_object_set_new(doc, "layers", arr);
        json_object_set_new(doc, "first_divergence", first);
        json_object_set_new(doc, "summary", json_pack("{s:i, s:i, s:i, s:i, s:i}", "layers", (int)n, "ok", (int)nok,
                                                      "diverging", (int)nbad, "unobservable", (int)nunobs,
                                                      "other", (int)nmiss));
    }
    for (uint32_t L = 0; L < n; L++) {
        if (a.vals[L]) rt_tensor_release(a.vals[L]);
        json_decref(b.res[L]);
    }
    free(a.vals);
    free(a.seen);
    free(b.seen);
    free(b.step);
    free(b.zero_point);
    free(b.res);
    *out = doc;
    return st;
}
