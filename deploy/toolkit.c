/* The toolkit's calls for bindings (deploy/toolkit.h): the CLI's commands over public types,
 * structured results as JSON text. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "inspect/inspect.h"
#include "deploy/toolkit.h"
#include "ir/span.h"
#include "ir/transform/transform.h"
#include "ir/visit.h"
#include "ir/wellformed.h"
#include "patterns/pattern_text.h"
#include "backends/dnnl/dnnl.h"

static char *dump(json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

char *graft_backends_json(void) {
    ir_ctx_t *ctx = ir_ctx_new();
    json_t *all = json_array();
    for (uint32_t i = 0; all && i < byoc_backend_count(); i++) {
        const byoc_backend *b = byoc_backend_at(i);
        json_t *opts = json_array(), *pats = json_array();
        for (uint32_t k = 0; k < b->noptions; k++) {
            const byoc_option *o = &b->options[k];
            json_array_append_new(opts, json_pack("{s:s, s:s, s:s, s:s, s:s?}", "name", o->name, "type", byoc_opt_type_name(o->type),
                                                  "default", o->dflt, "help", o->help, "choices", o->choices));
        }
        const byoc_pattern *ps = NULL;
        uint32_t np = 0;
        gr_diag d;
        gr_diag_clear(&d);
        if (b->get_patterns(ctx, NULL, &ps, &np, &d) != GR_OK) {
            json_decref(opts);
            json_decref(pats);
            json_decref(all);
            all = NULL;
            break;
        }
        for (uint32_t k = 0; k < np; k++) json_array_append_new(pats, json_string(ps[k].name));
        json_array_append_new(all, json_pack("{s:s, s:s, s:s?, s:o, s:o, s:s?, s:s?}", "name", b->name, "description",
                                             b->description ? b->description : "", "runtime_kind", b->runtime_kind,
                                             "options", opts, "patterns", pats, "version", b->version, "path",
                                             b->path));
    }
    ir_ctx_free(ctx);
    return dump(all);
}

typedef struct layers_walk {
    gr_map seen;
    json_t *names;
} layers_walk;

static void add_sources(layers_walk *lw, const ir_span *s) {
    for (uint32_t i = 0; s && i < s->n; i++) {
        if (gr_map_get_or(&lw->seen, GR_MAP_PTR(s->locs[i].source), 0)) continue;
        gr_map_put(&lw->seen, GR_MAP_PTR(s->locs[i].source), 1);
        json_array_append_new(lw->names, json_string(s->locs[i].source));
    }
}

static ir_walk_result layers_binding(ir_walker *w, const ir_binding *b, const ir_block *blk) {
    (void)blk;
    add_sources(w->user, b->value->span);
    add_sources(w->user, b->var->base.span);
    return IR_WALK_CONTINUE;
}

char *graft_module_layers_json(const ir_module *m) {
    layers_walk lw = {.names = json_array()};
    gr_map_init(&lw.seen);
    ir_walker w = {.visit_binding = layers_binding, .user = &lw};
    ir_walk_module(&w, m);
    gr_map_free(&lw.seen);
    return dump(lw.names);
}

/* {"name", "shape", "dtype"} of a tensor's struct info; shape null when the rank is unknown */
static json_t *tensor_sig(const char *name, const ir_sinfo *s) {
    json_t *o = json_pack("{s:s}", "name", name ? name : "");
    bool tensor = s && s->kind == IR_SINFO_TENSOR;
    json_t *shape = tensor && s->ndim >= 0 ? json_array() : json_null();
    for (int32_t k = 0; tensor && k < s->ndim; k++) {
        int64_t v;
        char buf[128];
        if (!s->dims) json_array_append_new(shape, json_null());
        else if (ir_prim_is_int(s->dims[k], &v)) json_array_append_new(shape, json_integer(v));
        else if (ir_prim_snprint(s->dims[k], buf, sizeof buf) > 0) json_array_append_new(shape, json_string(buf));
        else json_array_append_new(shape, json_null());
    }
    json_object_set_new(o, "shape", shape);
    const char *dt = tensor && !ir_dtype_is_void(s->dtype) ? ir_dtype_name(s->dtype) : NULL;
    json_object_set_new(o, "dtype", dt ? json_string(dt) : json_null());
    return o;
}

static json_t *outputs_sig(const ir_sinfo *os) {
    json_t *outs = json_array();
    bool tup = os && os->kind == IR_SINFO_TUPLE;
    for (uint32_t i = 0; i < (tup ? os->n : 1); i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "output_%u", i);
        json_array_append_new(outs, tensor_sig(nm, tup ? os->fields[i] : os));
    }
    return outs;
}

char *graft_module_signature_json(const ir_module *m) {
    const ir_func *f = ir_module_func(m, "main");
    if (!f) return NULL;
    json_t *ins = json_array();
    for (uint32_t i = 0; i < f->nparams; i++)
        json_array_append_new(ins, tensor_sig(f->params[i]->name, f->params[i]->base.sinfo));
    const ir_sinfo *os = f->ret_sinfo ? f->ret_sinfo : f->body ? f->body->sinfo : NULL;
    return dump(json_pack("{s:o, s:o}", "inputs", ins, "outputs", outputs_sig(os)));
}

char *graft_model_signature_json(const graft_model *gm) {
    json_t *ins = json_array();
    for (uint32_t i = 0; i < graft_model_num_inputs(gm); i++)
        json_array_append_new(ins, tensor_sig(graft_model_input_name(gm, i), graft_model_input_sinfo(gm, i)));
    json_t *outs = json_array();
    for (uint32_t i = 0; i < graft_model_num_outputs(gm); i++)
        json_array_append_new(outs, tensor_sig(graft_model_output_name(gm, i), graft_model_output_sinfo(gm, i)));
    return dump(json_pack("{s:o, s:o}", "inputs", ins, "outputs", outs));
}

char *graft_model_info_json(const graft_model *gm) {
    graft_model_info mi;
    graft_model_get_info(gm, &mi);
    json_t *ext = json_array();
    for (uint32_t i = 0; i < graft_model_num_externals(gm); i++) {
        const char *name = "", *engine = "";
        graft_model_external(gm, i, &name, &engine);
        json_array_append_new(ext, json_pack("[s, s]", name ? name : "", engine ? engine : ""));
    }
    return dump(json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:s, s:o}", "arena_bytes",
                          (json_int_t)mi.arena_bytes, "intermediate_bytes", (json_int_t)mi.intermediate_bytes,
                          "host_object_bytes", (json_int_t)mi.host_object_bytes, "host_kernels", (json_int_t)mi.nhost,
                          "kernels", (json_int_t)mi.nkernel, "externs", (json_int_t)mi.nextern, "fused_ops",
                          (json_int_t)mi.nfused_ops, "planned", (json_int_t)mi.nplanned, "load_ms",
                          (double)mi.load_ns / 1e6, "host_cpu", mi.host_cpu ? mi.host_cpu : "", "external_modules",
                          ext));
}

gr_status graft_module_optimize(const ir_module *m, const char *passes, int opt_level, ir_module **out,
                                gr_diag *diag) {
    ir_pass *seq = NULL;
    if (passes && ir_pass_sequential_from_names(passes, &seq, diag) != GR_OK) return diag->code;
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    if (opt_level >= 0) ir_pass_ctx_set_opt_level(pc, opt_level);
    gr_status st = ir_pass_run(seq ? seq : ir_pass_default_pipeline(), pc, m, out, diag);
    if (st == GR_OK) st = ir_wellformed_check(*out, diag);
    ir_pass_ctx_free(pc);
    ir_pass_free(seq);
    return st;
}

gr_status graft_module_partition(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t n,
                                 const char *patterns, const byoc_options *options, ir_module **out,
                                 char **report, gr_diag *diag) {
    byoc_notes notes;
    byoc_notes_init(&notes);
    byoc_partition_opts po = {.notes = &notes, .options = options};
    pat_table *table = NULL;
    byoc_pattern *extra = NULL;
    gr_status st = GR_OK;
    if (report) *report = NULL;
    if (patterns) {
        st = pat_table_read_file(ctx, patterns, &table, diag);
        if (st == GR_OK) st = byoc_patterns_from_table(ctx, table, options, &extra, diag);
        if (st == GR_OK) {
            po.extra = extra;
            po.nextra = table->n;
        } else {
            gr_diag_set_file(diag, patterns);
        }
    }
    if (st == GR_OK) st = byoc_partition(ctx, m, backends, n, &po, out, diag);
    if (st == GR_OK) st = ir_wellformed_check(*out, diag);
    if (st == GR_OK && report)
        *report = dump(byoc_report_json(ctx, po.after_merge ? po.after_merge : *out, backends, n, &notes));
    byoc_notes_free(&notes);
    free(extra);
    pat_table_free(table);
    return st;
}

gr_status graft_module_inspect(ir_ctx_t *ctx, const ir_module *m, const char *const *backends, uint32_t n,
                               const byoc_options *options, const graft_inspect_opts *o,
                               const rt_value *inputs, uint32_t nin, char **diff, char **doc, gr_diag *diag) {
    insp_model *im = NULL;
    json_t *dj = NULL;
    if (diff) *diff = NULL;
    if (doc) *doc = NULL;
    gr_status st = insp_model_build(ctx, m, backends, n, options, &im, diag);
    if (st == GR_OK && (o->observe || o->profile)) st = insp_observe(im, inputs, nin, o->profile, diag);
    json_t *qp = NULL;
    insp_layer_value *refs = gr_xcalloc(o->nrefs + 1, sizeof(*refs));
    for (uint32_t i = 0; i < o->nrefs; i++) refs[i] = (insp_layer_value){o->ref_layers[i], o->refs[i]};
    if (st == GR_OK && o->diff && o->qparams_onnx) {
        char *text = onnx_model_qparams(o->qparams_onnx, diag);
        qp = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
        if (!qp) st = diag->code ? diag->code : gr_diag_set(diag, GR_ERR_INVALID, "%s: no quantization parameters", o->qparams_onnx);
    }
    if (st == GR_OK && o->diff) {
        insp_diff_opts io = {o->rtol, o->atol, o->atol_scale, o->against, o->perturb, o->perturb_user};
        io.against_values = refs;
        io.nagainst_values = o->nrefs;
        io.qparams = qp;
        io.atol_steps = o->atol_steps;
        st = insp_diff(im, &io, inputs, nin, &dj, diag);
        if (st == GR_OK) {
            /* what graft explore --diff adds to its page */
            json_object_set(insp_model_json(im), "diff", json_object_get(dj, "first_divergence"));
            json_object_set_new(insp_model_json(im), "tolerance", json_pack("{s:f, s:f, s:f}", "rtol", o->rtol, "atol",
                                                                            o->atol, "atol_scale", o->atol_scale));
        }
    }
    if (st == GR_OK && diff && dj) *diff = dump(json_incref(dj));
    if (st == GR_OK && doc) *doc = json_dumps(insp_model_json(im), JSON_COMPACT);
    free(refs);
    json_decref(qp);
    json_decref(dj);
    insp_model_free(im);
    return st;
}
