/* RunCodegen: calls of region functions {Codegen} become
 * R.call_dps_packed(R.ExternFunc(symbol), (args...), out_sinfo=<the call's struct info>); each
 * backend compiles its regions into one runtime module appended to `external_mods`; constants
 * of the regions are named `<symbol>_const_<i>` in `const_name_to_constant` (appended).
 *
 * Beyond TVM: the new call carries the SequentialSpan of every frontend layer inside the region,
 * with the output marks only of the ops whose results leave the region. */
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "byoc/byoc_impl.h"
#include "ir/op.h"


/* ---- region spans ---- */

typedef struct span_ctx {
    ir_ctx_t *ctx;
    GR_VEC(const ir_span *) parts;
    gr_map outs;               /* vars whose values leave the region */
} span_ctx;

/* The var(s) a function returns, through tuples. */
static void mark_returned(span_ctx *sc, const ir_expr *e) {
    if (!e) return;
    if (ir_is_var(e)) gr_map_put(&sc->outs, GR_MAP_PTR(e), 1);
    else if (e->kind == IR_TUPLE)
        for (uint32_t i = 0; i < IR_AS(e, ir_tuple)->n; i++) mark_returned(sc, IR_AS(e, ir_tuple)->fields[i]);
}

/* Collects op spans of f's body; `out_vars` of the caller tell which of f's results leave. */
static void collect_spans(span_ctx *sc, const ir_func *f, bool result_leaves) {
    const ir_seq *s = f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    if (!s) return;
    if (result_leaves) mark_returned(sc, s->body);
    /* propagate "leaves" backwards through projections, tuples and aliases */
    for (int32_t b = (int32_t)s->nblocks - 1; b >= 0; b--)
        for (int32_t i = (int32_t)s->blocks[b]->n - 1; i >= 0; i--) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (!gr_map_get(&sc->outs, GR_MAP_PTR(bd->var), NULL)) continue;
            if (bd->value->kind == IR_TGI) mark_returned(sc, IR_AS(bd->value, ir_tgi)->tuple);
            else mark_returned(sc, bd->value);
        }
    gr_map lambdas;
    gr_map_init(&lambdas);
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->value->kind == IR_FUNC) {
                gr_map_put(&lambdas, GR_MAP_PTR(bd->var), GR_MAP_PTR(bd->value));
                continue;
            }
            bool leaves = gr_map_get(&sc->outs, GR_MAP_PTR(bd->var), NULL);
            if (bd->value->kind == IR_CALL) {
                const ir_call *c = IR_AS(bd->value, ir_call);
                uint64_t lf;
                if (gr_map_get(&lambdas, GR_MAP_PTR(c->callee), &lf)) {
                    /* FuseOps gave the call site the layers of the composite's ops and constants
                     * (the lambda may be shared by several calls); only a call without a span
                     * needs the lambda's own */
                    if (bd->value->span)
                        gr_vec_push(&sc->parts, leaves ? bd->value->span : ir_span_with_output(sc->ctx, bd->value->span, false));
                    else
                        collect_spans(sc, (const ir_func *)(uintptr_t)lf, leaves);
                    continue;
                }
            }
            /* constants (initializers) used here travel into the runtime module: keep their
             * layers on the call too */
            if (bd->value->kind == IR_CALL) {
                const ir_call *c = IR_AS(bd->value, ir_call);
                for (uint32_t k = 0; k < c->nargs; k++) {
                    const ir_expr *a = c->args[k];
                    uint32_t nf = a->kind == IR_TUPLE ? IR_AS(a, ir_tuple)->n : 1;
                    for (uint32_t q = 0; q < nf; q++) {
                        const ir_expr *x = a->kind == IR_TUPLE ? IR_AS(a, ir_tuple)->fields[q] : a;
                        if (!ir_is_var(x) && x->span)
                            gr_vec_push(&sc->parts, ir_span_with_output(sc->ctx, x->span, false));
                    }
                }
            }
            const ir_span *sp = bd->value->span ? bd->value->span : bd->var->base.span;
            if (sp) gr_vec_push(&sc->parts, leaves ? sp : ir_span_with_output(sc->ctx, sp, false));
        }
    gr_map_free(&lambdas);
}

static const ir_span *region_span(ir_ctx_t *ctx, const ir_func *f) {
    span_ctx sc = {ctx, {0}, {0}};
    gr_map_init(&sc.outs);
    collect_spans(&sc, f, true);
    const ir_span *r = ir_span_seq(ctx, sc.parts.data, sc.parts.len);
    gr_vec_free(&sc.parts);
    gr_map_free(&sc.outs);
    return r;
}

/* a followed by the locs of b whose source a lacks (the region call made by Merge already holds
 * the region's layers: skipping them keeps this linear) */
static const ir_span *merge_spans(ir_ctx_t *ctx, const ir_span *a, const ir_span *b) {
    if (!a || !b) return a ? a : b;
    if (a == b) return a;  /* hash-consed: the usual case (Merge gave the call the region's span) */
    gr_map seen;
    gr_map_init(&seen);
    for (uint32_t i = 0; i < a->n; i++) gr_map_put(&seen, GR_MAP_PTR(a->locs[i].source), 1);
    GR_VEC(const ir_span *) parts = {0};
    gr_vec_push(&parts, a);
    for (uint32_t i = 0; i < b->n; i++)
        if (!gr_map_get(&seen, GR_MAP_PTR(b->locs[i].source), NULL)) gr_vec_push(&parts, ir_span_from_loc(ctx, &b->locs[i]));
    const ir_span *r = parts.len == 1 ? a : ir_span_seq(ctx, parts.data, parts.len);
    gr_vec_free(&parts);
    gr_map_free(&seen);
    return r;
}

/* ---- call rewriting ---- */

typedef struct cg_state {
    ir_ctx_t *ctx;
    const ir_module *in;
    ir_op *dps;
    gr_map spans;              /* gvar -> span */
    gr_map externs;            /* gvar -> ir_extern */
    gr_map used;               /* region gvar name -> 1 */
} cg_state;

static ir_expr *cg_post(ir_mutator *mu, ir_expr *e) {
    cg_state *st = mu->user;
    if (e->kind != IR_CALL) return e;
    const ir_call *c = IR_AS(e, ir_call);
    if (c->callee->kind != IR_GVAR) return e;
    ir_gvar *g = IR_AS(c->callee, ir_gvar);
    const ir_func *f = ir_module_func(st->in, g->name);
    if (!f || !ir_attrs_get(f->attrs, BYOC_ATTR_CODEGEN)) return e;
    ir_ctx_t *ctx = st->ctx;
    uint64_t v;
    if (!gr_map_get(&st->externs, GR_MAP_PTR(g), &v)) {
        const char *sym = ir_attrs_get_str(f->attrs, BYOC_ATTR_GLOBAL_SYMBOL);
        ir_extern *x = ir_extern_new(ctx, sym ? sym : g->name, NULL);
        ir_expr_set_sinfo(&x->base, ir_sinfo_func_opaque(ctx, ir_sinfo_object(ctx)));
        v = GR_MAP_PTR(x);
        gr_map_put(&st->externs, GR_MAP_PTR(g), v);
        gr_map_put(&st->spans, GR_MAP_PTR(g), GR_MAP_PTR(region_span(ctx, f)));
    }
    gr_map_put(&st->used, GR_MAP_PTR(g->name), 1);
    ir_tuple *args = ir_tuple_new(ctx, c->nargs, c->args, NULL);
    const ir_sinfo **fs = IR_NEW_ARRAY(ctx, const ir_sinfo *, c->nargs ? c->nargs : 1);
    for (uint32_t i = 0; i < c->nargs; i++) fs[i] = c->args[i]->sinfo;
    ir_expr_set_sinfo(&args->base, ir_sinfo_tuple(ctx, c->nargs, fs));
    ir_expr *cargs[2] = {(ir_expr *)(uintptr_t)v, &args->base};
    const ir_sinfo *out = e->sinfo;
    const ir_span *sp = (const ir_span *)(uintptr_t)gr_map_get_or(&st->spans, GR_MAP_PTR(g), 0);
    ir_call *nc = ir_call_new(ctx, &st->dps->base, 2, cargs, NULL, 1, &out, merge_spans(ctx, e->span, sp));
    ir_expr_set_sinfo(&nc->base, out);
    return &nc->base;
}

/* ---- constants ---- */

typedef struct const_ctx {
    gr_map seen;
    GR_VEC(const ir_const *) consts;
} const_ctx;

static ir_walk_result const_visit(ir_walker *w, ir_expr *e) {
    const_ctx *cc = w->user;
    if (e->kind == IR_CONST && !gr_map_get(&cc->seen, GR_MAP_PTR(e), NULL)) {
        gr_map_put(&cc->seen, GR_MAP_PTR(e), 1);
        gr_vec_push(&cc->consts, IR_AS(e, ir_const));
    }
    return IR_WALK_CONTINUE;
}

typedef struct backend_regions {
    const char *backend;
    GR_VEC(byoc_region) regions;
} backend_regions;

/* Hand-off (release_consts): the context's references to the region constants that no function
 * left in nm uses; the runtime modules hold their own. */
static ir_walk_result host_const_visit(ir_walker *w, ir_expr *e) {
    if (e->kind == IR_CONST) gr_map_put(w->user, GR_MAP_PTR(IR_AS(e, ir_const)->data), 1);
    return IR_WALK_CONTINUE;
}

static size_t hand_off_consts(ir_ctx_t *ctx, const ir_module *nm, const backend_regions *groups, uint32_t ngroups) {
    gr_map host;
    gr_map_init(&host);
    for (uint32_t i = 0; i < nm->nfuncs; i++) {
        ir_walker w = {.visit_expr = host_const_visit, .user = &host};
        ir_walk_expr(&w, nm->funcs[i]);
    }
    size_t bytes = 0;
    for (uint32_t gi = 0; gi < ngroups; gi++)
        for (uint32_t r = 0; r < groups[gi].regions.len; r++) {
            const byoc_region *rg = &groups[gi].regions.data[r];
            for (uint32_t k = 0; k < rg->nconsts; k++) {
                rt_tensor *t = rg->consts[k]->data;
                if (gr_map_get(&host, GR_MAP_PTR(t), NULL)) continue;
                gr_map_put(&host, GR_MAP_PTR(t), 1);   /* once, if two regions share it */
                size_t nb = rt_tensor_nbytes(t);
                if (ir_ctx_disown(ctx, &t->obj)) bytes += nb;
            }
        }
    gr_map_free(&host);
    return bytes;
}

gr_status byoc_run_codegen(ir_ctx_t *ctx, const ir_module *m, const byoc_options *options,
                           ir_module **out, gr_diag *diag) {
    return byoc_run_codegen_ex(ctx, m, options, false, false, out, diag);
}

gr_status byoc_run_codegen_ex(ir_ctx_t *ctx, const ir_module *m, const byoc_options *options, bool release_consts,
                              bool defer_prepare, ir_module **out, gr_diag *diag) {
    *out = (ir_module *)m;
    bool any = false;
    for (uint32_t i = 0; i < m->nfuncs; i++)
        any |= m->funcs[i]->kind == IR_FUNC && ir_attrs_get(IR_AS(m->funcs[i], ir_func)->attrs, BYOC_ATTR_CODEGEN);
    if (!any) return GR_OK;
    cg_state st = {ctx, m, ir_op_get_id(ctx, IR_OP_CALL_DPS_PACKED), {0}, {0}, {0}};
    gr_map_init(&st.spans);
    gr_map_init(&st.externs);
    gr_map_init(&st.used);
    ir_module *nm = ir_module_copy(m);
    gr_status rc = GR_OK;
    /* 1. rewrite calls in the entry functions */
    for (uint32_t i = 0; i < m->nfuncs && !rc; i++) {
        if (m->funcs[i]->kind != IR_FUNC || !byoc_is_entry_func(IR_AS(m->funcs[i], ir_func))) continue;
        ir_mutator mu;
        ir_mutator_init(&mu, ctx, diag);
        mu.user = &st;
        mu.post_expr = cg_post;
        mu.module = m;
        ir_expr *nf = ir_mutate_expr(&mu, m->funcs[i]);
        ir_mutator_deinit(&mu);
        if (!nf) rc = diag && diag->code ? diag->code : GR_ERR_INVALID;
        else if (nf != m->funcs[i]) ir_module_set(nm, m->gvars[i], nf);
    }
    /* 2. run the codegens, backend by backend in module order */
    GR_VEC(backend_regions) groups = {0};
    GR_VEC(ir_attr) cmap = {0};
    const ir_attr *old = ir_attrs_get(m->attrs, "const_name_to_constant");
    if (old && old->kind == IR_ATTR_MAP)
        for (uint32_t k = 0; k < 2 * old->u.arr.n; k++) gr_vec_push(&cmap, old->u.arr.items[k]);
    GR_VEC(const_ctx) cctxs = {0};
    for (uint32_t i = 0; i < m->nfuncs && !rc; i++) {
        if (m->funcs[i]->kind != IR_FUNC) continue;
        const ir_func *f = IR_AS(m->funcs[i], ir_func);
        const char *cg = ir_attrs_get_str(f->attrs, BYOC_ATTR_CODEGEN);
        if (!cg) continue;
        uint32_t gi = 0;
        while (gi < groups.len && strcmp(groups.data[gi].backend, cg) != 0) gi++;
        if (gi == groups.len) gr_vec_push(&groups, ((backend_regions){cg, {0}}));
        const char *sym = ir_attrs_get_str(f->attrs, BYOC_ATTR_GLOBAL_SYMBOL);
        if (!sym) sym = m->gvars[i]->name;
        const_ctx cc;
        gr_map_init(&cc.seen);
        cc.consts.data = NULL;
        cc.consts.len = cc.consts.cap = 0;
        ir_walker w = {.visit_expr = const_visit, .user = &cc};
        ir_walk_expr(&w, m->funcs[i]);
        const char **names = IR_NEW_ARRAY(ctx, const char *, cc.consts.len + 1);
        const ir_const **consts = IR_NEW_ARRAY(ctx, const ir_const *, cc.consts.len + 1);
        for (uint32_t k = 0; k < cc.consts.len; k++) {
            names[k] = ir_internf(ctx, "%s_const_%u", sym, k);
            consts[k] = cc.consts.data[k];
            gr_vec_push(&cmap, ir_attr_str(ctx, names[k]));
            gr_vec_push(&cmap, ir_attr_expr((ir_expr *)&consts[k]->base));
        }
        byoc_region r = {sym, f, cc.consts.len, names, consts};
        if (release_consts) cmap.len -= 2 * cc.consts.len;   /* they go to the runtime modules */
        gr_vec_push(&groups.data[gi].regions, r);
        gr_map_free(&cc.seen);
        gr_vec_free(&cc.consts);
    }
    gr_vec_free(&cctxs);
    rt_module **mods = gr_xcalloc(groups.len + 1, sizeof(rt_module *));
    for (uint32_t gi = 0; gi < groups.len && !rc; gi++) {
        const byoc_backend *b = byoc_backend_find(groups.data[gi].backend);
        if (!b || !b->compile) {
            rc = gr_diag_set(diag, GR_ERR_NOT_FOUND, "RunCodegen: no codegen registered for '%s' (region %s)",
                             groups.data[gi].backend, groups.data[gi].regions.data[0].symbol);
            break;
        }
        rc = b->compile(ctx, groups.data[gi].regions.data, groups.data[gi].regions.len, options, &mods[gi], diag);
    }
    if (!rc) {
        ir_attr mv = ir_attr_array(ctx, cmap.len, cmap.data);
        mv.kind = IR_ATTR_MAP;
        mv.u.arr.n = cmap.len / 2;
        if (cmap.len) ir_module_set_attr(nm, "const_name_to_constant", mv);
        /* 3. drop the compiled regions and the composites nobody calls any more */
        for (uint32_t i = 0; i < m->nfuncs; i++)
            if (m->funcs[i]->kind == IR_FUNC && ir_attrs_get(IR_AS(m->funcs[i], ir_func)->attrs, BYOC_ATTR_CODEGEN))
                ir_module_remove(nm, m->gvars[i]->name);
        byoc_remove_dead_composites(nm, NULL);
    }
    /* 4. the constants go to the runtime modules (release_consts), then the modules build what
     * their first call would (oneDNN's primitives and reordered weights: an engine that copies a
     * constant lets its original go while it builds, see runtime/json/json_runtime.h) */
    if (!rc && release_consts)
        ir_module_set_attr(nm, BYOC_ATTR_CONSTS_RELEASED,
                           ir_attr_int((int64_t)hand_off_consts(ctx, nm, groups.data, groups.len)));
    for (uint32_t gi = 0; gi < groups.len && !rc && !defer_prepare; gi++) {
        const byoc_backend *b = byoc_backend_find(groups.data[gi].backend);
        if (b && b->prepare) rc = b->prepare(mods[gi], diag);
    }
    for (uint32_t gi = 0; gi < groups.len; gi++) {
        if (mods[gi] && !rc) rt_module_attach(nm, mods[gi]);
        if (mods[gi]) rt_module_release(mods[gi]);
    }
    free(mods);
    if (!rc) *out = nm;
    for (uint32_t gi = 0; gi < groups.len; gi++) gr_vec_free(&groups.data[gi].regions);
    gr_vec_free(&groups);
    gr_vec_free(&cmap);
    gr_map_free(&st.spans);
    gr_map_free(&st.externs);
    gr_map_free(&st.used);
    return rc;
}
