/* The partition report: regions (symbol, backend, composites and their ops, frontend layers,
 * inputs, outputs), host ops with the reason they stayed, coverage by node, by op type and by
 * FLOPs. */
#include <jansson.h>
#include <string.h>

#include "base/tensor.h"
#include "byoc/byoc_impl.h"
#include "ir/op.h"

/* Dims for counting FLOPs: static ones, and symbolic ones evaluated with every var at
 * FLOPS_SYM_AT (a model's dynamic dims get one nominal size; the offloaded share is what the
 * report is for). */
#define FLOPS_SYM_AT 64
static void put_var(const ir_prim *v, void *user) { gr_map_put(user, GR_MAP_PTR(v), FLOPS_SYM_AT); }

static bool dims_of(const ir_sinfo *s, int64_t *d) {
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM || (s->ndim > 0 && !s->dims))
        return false;
    if (ir_sinfo_static_shape(s, d)) return true;
    gr_map vars;
    gr_map_init(&vars);
    bool ok = true;
    for (int32_t k = 0; k < s->ndim && ok; k++) {
        ir_prim_visit_vars(s->dims[k], put_var, &vars);
        ok = ir_prim_eval(s->dims[k], &vars, &d[k]) && d[k] >= 0;
    }
    gr_map_free(&vars);
    return ok;
}

static double numel_dims(const ir_sinfo *s) {
    int64_t d[RT_MAX_NDIM];
    if (!dims_of(s, d)) return -1;
    double n = 1;
    for (int32_t k = 0; k < s->ndim; k++) n *= (double)d[k];
    return n;
}

static double numel_of(const ir_sinfo *s) {
    if (!s) return -1;
    if (s->kind == IR_SINFO_TUPLE) {
        double t = 0;
        for (uint32_t i = 0; i < s->n; i++) {
            double k = numel_of(s->fields[i]);
            if (k < 0) return -1;
            t += k;
        }
        return t;
    }
    return numel_dims(s);
}

/* 1 + the output-channel dim of a conv's weight (O of OIHW; of IOHW for the transposed convs);
 * 0: not a conv. A conv does weight size / output channels multiply-adds per output element. */
static const uint8_t CONV_OUT_DIM[IR_OP_COUNT] = {
    [IR_OP_CONV1D] = 1, [IR_OP_CONV2D] = 1, [IR_OP_CONV3D] = 1,
    [IR_OP_CONV1D_TRANSPOSE] = 2, [IR_OP_CONV2D_TRANSPOSE] = 2, [IR_OP_CONV3D_TRANSPOSE] = 2};

double byoc_call_flops(const ir_call *call) {
    double out = numel_of(call->base.sinfo);
    if (out < 0 || call->callee->kind != IR_OP) return out;
    ir_op_id op = ir_op_id_of(&call->base);
    int odim = op != IR_OP_NONE ? CONV_OUT_DIM[op] - 1 : -1;
    int64_t w[RT_MAX_NDIM];
    if (odim >= 0 && call->nargs >= 2 && call->args[1]->sinfo &&
        call->args[1]->sinfo->kind == IR_SINFO_TENSOR && call->args[1]->sinfo->ndim >= 2 &&
        dims_of(call->args[1]->sinfo, w)) {
        double wn = numel_dims(call->args[1]->sinfo);
        return 2.0 * out * (wn / (double)(w[odim] ? w[odim] : 1));
    }
    if (op == IR_OP_MATMUL && call->nargs >= 1 && call->args[0]->sinfo &&
        call->args[0]->sinfo->kind == IR_SINFO_TENSOR && call->args[0]->sinfo->ndim >= 1 &&
        dims_of(call->args[0]->sinfo, w))
        return 2.0 * out * (double)w[call->args[0]->sinfo->ndim - 1];
    return out;
}

/* What a region's call sites say about the bindings they replaced, for the near misses: the
 * vars bound at its composite calls (copies of the composites' output vars: same name and span)
 * and the spans of those calls (their members' spans). */
typedef struct rep_region {
    json_t *obj;               /* the region's report object (borrowed) */
    GR_VEC(const ir_var *) vars;
    GR_VEC(const ir_span *) spans;
} rep_region;

typedef struct rep_state {
    ir_ctx_t *ctx;
    const ir_module *m;
    const char *const *names;
    uint32_t n;
    const byoc_notes *notes;
    json_t *regions, *host, *by_op;
    double nodes_total, nodes_off, flops_total, flops_off;
    gr_map tgi_of;             /* tuple var -> json array of projection var names */
    gr_map host_vars;          /* vars of the ops left on the host */
    GR_VEC(struct rep_region) rmeta;
} rep_state;

static void add_layers(json_t *arr, gr_map *seen, const ir_span *s) {
    for (uint32_t i = 0; s && i < s->n; i++) {
        if (gr_map_get(seen, GR_MAP_PTR(s->locs[i].source), NULL)) continue;
        gr_map_put(seen, GR_MAP_PTR(s->locs[i].source), 1);
        json_array_append_new(arr, json_string(s->locs[i].source));
    }
}

static void count_op(rep_state *r, const char *op, bool off, double flops) {
    json_t *o = json_object_get(r->by_op, op);
    if (!o) {
        o = json_pack("{s:i,s:i}", "offloaded", 0, "host", 0);
        json_object_set_new(r->by_op, op, o);
    }
    const char *k = off ? "offloaded" : "host";
    json_object_set_new(o, k, json_integer(json_integer_value(json_object_get(o, k)) + 1));
    r->nodes_total++;
    if (off) r->nodes_off++;
    if (flops > 0) {
        r->flops_total += flops;
        if (off) r->flops_off += flops;
    }
}

/* composite function -> {"name", "ops"}, counting its ops as offloaded */
static json_t *composite_json(rep_state *r, const ir_func *f, json_t *layers, gr_map *seen, double *flops) {
    json_t *ops = json_array();
    const ir_seq *s = f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_expr *v = s->blocks[b]->bindings[i].value;
            if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
            const char *op = IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name;
            json_array_append_new(ops, json_string(op));
            add_layers(layers, seen, v->span);
            double fl = byoc_call_flops(IR_AS(v, ir_call));
            if (fl > 0) *flops += fl;
            count_op(r, op, true, fl);
        }
    const char *comp = ir_attrs_get_str(f->attrs, BYOC_ATTR_COMPOSITE);
    return json_pack("{s:s,s:o}", "name", comp ? comp : "", "ops", ops);
}

static const char *arg_name(const ir_expr *a) {
    if (ir_is_var(a)) return IR_AS(a, ir_var)->name;
    return a->kind == IR_CONST ? "const" : ir_expr_kind_name((ir_expr_kind)a->kind);
}

static void region_entry(rep_state *r, const ir_binding *b, const ir_func *f, const char *gname) {
    const ir_call *call = IR_AS(b->value, ir_call);
    rep_region meta = {NULL, {0}, {0}};
    gr_vec_push(&meta.vars, b->var);
    json_t *layers = json_array(), *comps = json_array(), *inputs = json_array(), *outputs = json_array();
    gr_map seen;
    gr_map_init(&seen);
    double flops = 0;
    const char *backend = ir_attrs_get_str(f->attrs, BYOC_ATTR_CODEGEN);
    if (backend) {
        const ir_seq *s = f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
        gr_map lam;
        gr_map_init(&lam);
        for (uint32_t bb = 0; s && bb < s->nblocks; bb++)
            for (uint32_t i = 0; i < s->blocks[bb]->n; i++) {
                const ir_binding *x = &s->blocks[bb]->bindings[i];
                uint64_t v;
                gr_vec_push(&meta.vars, x->var);
                if (x->value->kind == IR_FUNC) gr_map_put(&lam, GR_MAP_PTR(x->var), GR_MAP_PTR(x->value));
                else if (x->value->kind == IR_CALL && gr_map_get(&lam, GR_MAP_PTR(IR_AS(x->value, ir_call)->callee), &v)) {
                    add_layers(layers, &seen, x->value->span);  /* call site: shared composites */
                    if (x->value->span) gr_vec_push(&meta.spans, x->value->span);
                    json_array_append_new(comps, composite_json(r, (const ir_func *)(uintptr_t)v, layers, &seen, &flops));
                }
            }
        gr_map_free(&lam);
    } else {
        const char *comp = ir_attrs_get_str(f->attrs, BYOC_ATTR_COMPOSITE);
        backend = comp ? byoc_backend_of(r->ctx, comp) : "?";
        if (b->value->span) gr_vec_push(&meta.spans, b->value->span);
        json_array_append_new(comps, composite_json(r, f, layers, &seen, &flops));
    }
    for (uint32_t i = 0; i < call->nargs; i++) json_array_append_new(inputs, json_string(arg_name(call->args[i])));
    uint64_t tv;
    if (gr_map_get(&r->tgi_of, GR_MAP_PTR(b->var), &tv)) json_array_extend(outputs, (json_t *)(uintptr_t)tv);
    else json_array_append_new(outputs, json_string(b->var->name));
    const char *sym = ir_attrs_get_str(f->attrs, BYOC_ATTR_GLOBAL_SYMBOL);
    meta.obj = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:f,s:[]}", "symbol", sym ? sym : gname, "backend", backend,
                         "composites", comps, "layers", layers, "inputs", inputs, "outputs", outputs, "flops", flops,
                         "not_fused");
    json_array_append_new(r->regions, meta.obj);
    gr_vec_push(&r->rmeta, meta);
    gr_map_free(&seen);
}

static const char *host_reason(rep_state *r, const ir_binding *b, const char *op) {
    uint64_t v;
    if (r->notes && gr_map_get(&r->notes->reason, GR_MAP_PTR(b->var), &v)) return (const char *)(uintptr_t)v;
    for (uint32_t i = 0; i < byoc_backend_count(); i++) {
        const byoc_backend *be = byoc_backend_at(i);
        bool enabled = false;
        for (uint32_t k = 0; k < r->n; k++) enabled |= strcmp(r->names[k], be->name) == 0;
        if (enabled) continue;
        const byoc_pattern *ps = NULL;
        uint32_t np = 0;
        if (be->get_patterns(r->ctx, NULL, &ps, &np, NULL)) continue;
        for (uint32_t p = 0; p < np; p++) {
            const char *roots[16];
            int nr = pat_root_ops(ps[p].pattern, roots, 16);
            for (int q = 0; q < nr; q++)
                if (strcmp(roots[q], op) == 0) return ir_internf(r->ctx, "backend disabled: %s (pattern %s)", be->name, ps[p].name);
        }
    }
    return "no pattern matched";
}

static void visit_seq(rep_state *r, const ir_expr *body) {
    if (!body || body->kind != IR_SEQ) return;
    const ir_seq *s = IR_AS(body, ir_seq);
    for (uint32_t bb = 0; bb < s->nblocks; bb++) {
        const ir_block *blk = s->blocks[bb];
        for (uint32_t i = 0; i < blk->n; i++) {
            const ir_binding *b = &blk->bindings[i];
            if (b->value->kind == IR_TGI && ir_is_var(IR_AS(b->value, ir_tgi)->tuple)) {
                const ir_expr *t = IR_AS(b->value, ir_tgi)->tuple;
                uint64_t v;
                if (!gr_map_get(&r->tgi_of, GR_MAP_PTR(t), &v)) {
                    v = GR_MAP_PTR(json_array());
                    gr_map_put(&r->tgi_of, GR_MAP_PTR(t), v);
                }
                json_array_append_new((json_t *)(uintptr_t)v, json_string(b->var->name));
            }
        }
        for (uint32_t i = 0; i < blk->n; i++) {
            const ir_binding *b = &blk->bindings[i];
            if (b->value->kind == IR_IF) {
                visit_seq(r, IR_AS(b->value, ir_if)->then_branch);
                visit_seq(r, IR_AS(b->value, ir_if)->else_branch);
                continue;
            }
            if (b->value->kind != IR_CALL) continue;
            const ir_call *c = IR_AS(b->value, ir_call);
            if (c->callee->kind == IR_GVAR) {
                const ir_func *f = ir_module_func(r->m, IR_AS(c->callee, ir_gvar)->name);
                if (f && (ir_attrs_get(f->attrs, BYOC_ATTR_CODEGEN) || ir_attrs_get(f->attrs, BYOC_ATTR_COMPOSITE)))
                    region_entry(r, b, f, IR_AS(c->callee, ir_gvar)->name);
                continue;
            }
            if (c->callee->kind != IR_OP) continue;
            const ir_op_def *def = IR_AS(c->callee, ir_op)->def;
            if (def->flags & IR_OPF_CALL_LIKE) continue;  /* calls into other code, not graph nodes */
            json_t *layers = json_array();
            gr_map seen;
            gr_map_init(&seen);
            add_layers(layers, &seen, b->value->span);
            gr_map_free(&seen);
            gr_map_put(&r->host_vars, GR_MAP_PTR(b->var), 1);
            json_array_append_new(r->host, json_pack("{s:s,s:s,s:o,s:s}", "var", b->var->name, "op", def->name, "layers",
                                                     layers, "reason", host_reason(r, b, def->name)));
            count_op(r, def->name, false, byoc_call_flops(c));
        }
    }
}

/* ---- near misses: offloaded ops whose larger composite a check (or the cycle test) refused ---- */

/* "check rejected P: why" / "P would create a cycle through X" -> P and why; other notes (merge
 * fallbacks, dropped composites) are not about a composite that could have taken the op. */
static bool split_rejection(ir_ctx_t *ctx, const char *note, const char **comp, const char **why) {
    static const char pre[] = "check rejected ";
    if (strncmp(note, pre, sizeof pre - 1) == 0) {
        const char *p = note + sizeof pre - 1, *sep = strstr(p, ": ");
        if (!sep) return false;
        *comp = ir_internf(ctx, "%.*s", (int)(sep - p), p);
        *why = sep + 2;
        return true;
    }
    const char *cyc = strstr(note, " would create a cycle");
    if (!cyc || strchr(note, ' ') != cyc) return false;
    *comp = ir_internf(ctx, "%.*s", (int)(cyc - note), note);
    *why = cyc + 1;
    return true;
}

static bool loc_eq(const ir_loc *a, const ir_loc *b) {
    return strcmp(a->source, b->source) == 0 && a->line == b->line && a->col == b->col &&
           a->end_line == b->end_line && a->end_col == b->end_col;
}

/* every loc of s is in one of the region's call-site spans */
static bool region_covers(const rep_region *g, const ir_span *s) {
    for (uint32_t i = 0; i < s->n; i++) {
        bool found = false;
        for (uint32_t k = 0; k < g->spans.len && !found; k++)
            for (uint32_t j = 0; j < g->spans.data[k]->n && !found; j++) found = loc_eq(&s->locs[i], &g->spans.data[k]->locs[j]);
        if (!found) return false;
    }
    return true;
}

static int cmp_var_id(const void *a, const void *b) {
    uint32_t x = (*(const ir_var *const *)a)->base.id, y = (*(const ir_var *const *)b)->base.id;
    return (x > y) - (x < y);
}

/* The region of a noted var that is not on the host: the one binding it or a copy of it (same
 * name and hash-consed span: a composite's output), else the first whose composite calls carry
 * every loc of its span (a member inside a composite; ONNX names are not unique, layers are).
 * NULL: neither (the op was removed, or has no span). */
static rep_region *region_of(rep_state *r, const ir_var *v) {
    for (uint32_t k = 0; k < r->rmeta.len; k++)
        for (uint32_t j = 0; j < r->rmeta.data[k].vars.len; j++) {
            const ir_var *x = r->rmeta.data[k].vars.data[j];
            if (x == v || (x->base.span == v->base.span && strcmp(x->name, v->name) == 0)) return &r->rmeta.data[k];
        }
    const ir_span *s = v->base.span;
    for (uint32_t k = 0; s && k < r->rmeta.len; k++)
        if (region_covers(&r->rmeta.data[k], s)) return &r->rmeta.data[k];
    return NULL;
}

static void near_misses(rep_state *r) {
    if (!r->notes || r->rmeta.len == 0) return;
    GR_VEC(const ir_var *) vars = {0};
    for (uint32_t k = 0; k < r->notes->reason.cap; k++)
        if (r->notes->reason.keys[k] && !gr_map_get(&r->host_vars, r->notes->reason.keys[k], NULL))
            gr_vec_push(&vars, (const ir_var *)(uintptr_t)r->notes->reason.keys[k]);
    if (vars.len > 1) qsort(vars.data, vars.len, sizeof(*vars.data), cmp_var_id);  /* binding order */
    for (uint32_t k = 0; k < vars.len; k++) {
        const ir_var *v = vars.data[k];
        const char *note = (const char *)(uintptr_t)gr_map_get_or(&r->notes->reason, GR_MAP_PTR(v), 0), *comp, *why;
        if (!note || !split_rejection(r->ctx, note, &comp, &why)) continue;
        rep_region *g = region_of(r, v);
        if (!g) continue;
        json_t *layers = json_array();
        gr_map seen;
        gr_map_init(&seen);
        add_layers(layers, &seen, v->base.span);
        gr_map_free(&seen);
        json_array_append_new(json_object_get(g->obj, "not_fused"),
                              json_pack("{s:s,s:o,s:s,s:s}", "var", v->name, "layers", layers, "composite", comp,
                                        "reason", why));
    }
    gr_vec_free(&vars);
}

/* ---- a partition over several backends: per op, the backend that took it and why each other
 * listed backend did not ---- */

static json_t *layers_json(ir_ctx_t *ctx, const char *const *names, uint32_t n, const byoc_notes *notes) {
    json_t *out = json_array();
    for (uint32_t i = 0; i < notes->layers.len; i++) {
        const byoc_layer_note *ln = &notes->layers.data[i];
        const char *taker = ln->taken ? byoc_backend_of(ctx, ln->taken) : NULL;
        json_t *others = json_array();
        uint64_t h = 0;
        gr_map_get(&notes->why_not, GR_MAP_PTR(ln->var), &h);
        for (uint32_t k = 0; k < n; k++) {
            if (taker && strcmp(taker, names[k]) == 0) continue;
            const char *why = NULL;
            for (const byoc_why_not *w = (const byoc_why_not *)(uintptr_t)h; w && !why; w = w->next)
                if (strcmp(w->backend, names[k]) == 0) why = w->why;
            json_array_append_new(others, json_pack("{s:s,s:s}", "backend", names[k], "reason",
                                                    why ? why : ir_internf(ctx, "no %s pattern matched", names[k])));
        }
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s?,s:s?,s:o}", "var", ln->var->name, "op", ln->op, "layer",
                                             ln->layer ? ln->layer : "-", "backend", taker, "composite", ln->taken,
                                             "not_taken", others));
    }
    return out;
}

json_t *byoc_report_json(ir_ctx_t *ctx, const ir_module *part, const char *const *names, uint32_t n,
                         const byoc_notes *notes) {
    rep_state r = {ctx, part, names, n, notes, json_array(), json_array(), json_object(), 0, 0, 0, 0, {0}, {0}, {0}};
    gr_map_init(&r.tgi_of);
    gr_map_init(&r.host_vars);
    for (uint32_t i = 0; i < part->nfuncs; i++) {
        if (part->funcs[i]->kind != IR_FUNC || !byoc_is_entry_func(IR_AS(part->funcs[i], ir_func))) continue;
        visit_seq(&r, IR_AS(part->funcs[i], ir_func)->body);
    }
    near_misses(&r);
    for (uint32_t k = 0; k < r.rmeta.len; k++) {
        gr_vec_free(&r.rmeta.data[k].vars);
        gr_vec_free(&r.rmeta.data[k].spans);
    }
    gr_vec_free(&r.rmeta);
    gr_map_free(&r.host_vars);
    for (uint32_t k = 0; k < r.tgi_of.cap; k++)
        if (r.tgi_of.keys[k]) json_decref((json_t *)(uintptr_t)r.tgi_of.vals[k]);
    gr_map_free(&r.tgi_of);
    json_t *cov = json_pack("{s:{s:f,s:f,s:f},s:o,s:{s:f,s:f,s:f}}", "nodes", "total", r.nodes_total, "offloaded",
                            r.nodes_off, "share", r.nodes_total > 0 ? r.nodes_off / r.nodes_total : 0.0, "by_op",
                            r.by_op, "flops", "total", r.flops_total, "offloaded", r.flops_off, "share",
                            r.flops_total > 0 ? r.flops_off / r.flops_total : 0.0);
    json_t *rep = json_pack("{s:o,s:o,s:o}", "regions", r.regions, "host", r.host, "coverage", cov);
    if (n >= 2 && notes && notes->layers.len) json_object_set_new(rep, "layers", layers_json(ctx, names, n, notes));
    return rep;
}

void byoc_report_print(const json_t *report, FILE *out) {
    json_t *rep = (json_t *)report;
    json_t *regions = json_object_get(rep, "regions"), *host = json_object_get(rep, "host");
    json_t *cov = json_object_get(rep, "coverage");
    size_t i;
    json_t *v;
    fprintf(out, "regions: %zu\n", json_array_size(regions));
    json_array_foreach(regions, i, v) {
        json_t *comps = json_object_get(v, "composites"), *layers = json_object_get(v, "layers");
        fprintf(out, "  %s [%s]: %zu composites, %zu layers, inputs", json_string_value(json_object_get(v, "symbol")),
                json_string_value(json_object_get(v, "backend")), json_array_size(comps), json_array_size(layers));
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(v, "inputs"), k, x) fprintf(out, " %s", json_string_value(x));
        fprintf(out, ", outputs");
        json_array_foreach(json_object_get(v, "outputs"), k, x) fprintf(out, " %s", json_string_value(x));
        fprintf(out, "\n    layers:");
        json_array_foreach(layers, k, x) {
            if (k == 12) {
                fprintf(out, " ... (%zu more)", json_array_size(layers) - 12);
                break;
            }
            fprintf(out, " %s", json_string_value(x));
        }
        fprintf(out, "\n");
        json_t *nf = json_object_get(v, "not_fused");
        json_array_foreach(nf, k, x) {
            if (k == 20) {
                fprintf(out, "    ... (%zu more not fused)\n", json_array_size(nf) - 20);
                break;
            }
            json_t *nl = json_object_get(x, "layers");
            fprintf(out, "    not fused: %s (layer %s): %s: %s\n", json_string_value(json_object_get(x, "var")),
                    json_array_size(nl) ? json_string_value(json_array_get(nl, 0)) : "-",
                    json_string_value(json_object_get(x, "composite")), json_string_value(json_object_get(x, "reason")));
        }
    }
    json_t *lays = json_object_get(rep, "layers");
    if (lays) fprintf(out, "ops by backend: %zu (the backend that took each; why each other did not)\n", json_array_size(lays));
    json_array_foreach(lays, i, v) {
        const char *be = json_string_value(json_object_get(v, "backend"));
        fprintf(out, "  %s = %s (layer %s): %s", json_string_value(json_object_get(v, "var")),
                json_string_value(json_object_get(v, "op")), json_string_value(json_object_get(v, "layer")),
                be ? be : "host");
        if (be) fprintf(out, " (%s)", json_string_value(json_object_get(v, "composite")));
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(v, "not_taken"), k, x)
            fprintf(out, "; %s: %s", json_string_value(json_object_get(x, "backend")),
                    json_string_value(json_object_get(x, "reason")));
        fprintf(out, "\n");
    }
    fprintf(out, "host ops: %zu\n", json_array_size(host));
    json_array_foreach(host, i, v) {
        json_t *layers = json_object_get(v, "layers");
        fprintf(out, "  %s = %s (layer %s): %s\n", json_string_value(json_object_get(v, "var")),
                json_string_value(json_object_get(v, "op")),
                json_array_size(layers) ? json_string_value(json_array_get(layers, 0)) : "-",
                json_string_value(json_object_get(v, "reason")));
    }
    json_t *nodes = json_object_get(cov, "nodes"), *fl = json_object_get(cov, "flops");
    fprintf(out, "coverage: %.0f/%.0f ops offloaded (%.1f%%), FLOPs %.1f%% offloaded\n",
            json_number_value(json_object_get(nodes, "offloaded")), json_number_value(json_object_get(nodes, "total")),
            100.0 * json_number_value(json_object_get(nodes, "share")), 100.0 * json_number_value(json_object_get(fl, "share")));
    const char *op;
    json_object_foreach(json_object_get(cov, "by_op"), op, v)
        fprintf(out, "  %-28s offloaded %lld, host %lld\n", op, (long long)json_integer_value(json_object_get(v, "offloaded")),
                (long long)json_integer_value(json_object_get(v, "host")));
}
