/* MergeCompositeFunctions: calls of composites of one backend are grouped into
 * regions, functions {Codegen, global_symbol} whose composites are inlined as local lambdas.
 *
 * Bindings are visited in order (TVM's CompositeGroupsBuilder). A composite call joins the
 * groups of its arguments that have the same backend and are not among the (transitive)
 * dependencies of any argument group (joining those would close a cycle through another
 * group); it starts its own group otherwise. Projections of a region's tuple output join that
 * region. A composite returning a tuple that is used other than through projections stays a
 * region of its own (its tuple cannot be one output among several). Every function is
 * processed, not only main; the grouping is verified on the contracted graph before it is
 * applied (a cycle falls back to one region per composite). */
#include <stdio.h>
#include <string.h>

#include "byoc/byoc_impl.h"
#include "ir/builder.h"
#include "ir/equal.h"
#include "ir/idtab_impl.h"

typedef struct merge_state {
    ir_ctx_t *ctx;
    ir_module *mod;
    const ir_module *in;
    byoc_notes *notes;
    ir_idtab uses;             /* var id -> uses */
    gr_map leaves;             /* current function: byoc_static_leaves */
    gr_map callee_backend;     /* composite gvar -> interned backend (memo) */
    const char **gbackend;     /* compact group -> backend */
    gr_map region_dedup;       /* struct hash of a region (before naming) -> region_seen */
} merge_state;

/* A region function made so far, before its global_symbol: structurally equal regions share
 * one function, called twice (TVM's BlockBuilder dedups AddFunction the same way). */
typedef struct region_seen {
    struct region_seen *next;
    const ir_func *unnamed;
    ir_gvar *gv;
} region_seen;

/* union-find over binding indices */
static uint32_t uf_find(uint32_t *par, uint32_t x) {
    while (par[x] != x) {
        par[x] = par[par[x]];
        x = par[x];
    }
    return x;
}

static const char *composite_backend(merge_state *st, const ir_expr *v) {
    if (v->kind != IR_CALL) return NULL;
    const ir_call *c = IR_AS(v, ir_call);
    if (c->callee->kind != IR_GVAR) return NULL;
    uint64_t memo;
    if (gr_map_get(&st->callee_backend, GR_MAP_PTR(c->callee), &memo))
        return memo == 1 ? NULL : (const char *)(uintptr_t)memo;
    const ir_func *f = ir_module_func(st->in, IR_AS(c->callee, ir_gvar)->name);
    const char *comp = f ? ir_attrs_get_str(f->attrs, BYOC_ATTR_COMPOSITE) : NULL;
    const char *be = comp ? byoc_backend_of(st->ctx, comp) : NULL;
    gr_map_put(&st->callee_backend, GR_MAP_PTR(c->callee), be ? GR_MAP_PTR(be) : 1);
    return be;
}

typedef struct args_ctx {
    const ir_idtab *vidx;      /* binding var id -> index + 1 */
    GR_VEC(uint32_t) idx;
} args_ctx;

static void arg_leaf(ir_expr *leaf, void *user) {
    args_ctx *a = user;
    uint64_t j;
    if (leaf->kind != IR_CONST && (j = ir_idtab_get(a->vidx, leaf->id))) gr_vec_push(&a->idx, (uint32_t)(j - 1));
}

static void set_union(gr_map *dst, const gr_map *src) {
    for (uint32_t k = 0; k < src->cap; k++)
        if (src->keys[k]) gr_map_put(dst, src->keys[k], 1);
}

/* ---- region functions ---- */

/* Each composite a region calls becomes a local lambda, bound right before its first call
 * (byoc_build_group_func_ex's callee hook). */
static ir_expr *local_composite(void *user, ir_gvar *g, ir_binding_vec *pre, gr_diag *diag) {
    merge_state *st = user;
    ir_ctx_t *ctx = st->ctx;
    ir_func *cf = ir_module_func(st->in, g->name);
    if (!cf || !ir_attrs_get(cf->attrs, BYOC_ATTR_COMPOSITE)) return NULL;
    ir_func *lam = byoc_copy_func_fresh(ctx, cf, diag);
    if (!lam) {
        if (diag && !diag->code) gr_diag_set(diag, GR_ERR_INVALID, "MergeCompositeFunctions: cannot copy %s", g->name);
        return NULL;
    }
    lam = ir_func_with_attrs(ctx, lam, ir_attrs_remove(ctx, cf->attrs, BYOC_ATTR_PRIMITIVE));
    if (!lam->base.sinfo) ir_expr_set_sinfo(&lam->base, cf->base.sinfo);
    ir_var *lv = ir_var_new(ctx, g->name, lam->base.sinfo, NULL);
    gr_vec_push(pre, ((ir_binding){lv, &lam->base, NULL}));
    return &lv->base;
}

static ir_expr *make_region(void *user, uint32_t g, const ir_block *blk, const byoc_group_info *gi,
                            gr_diag *diag) {
    merge_state *st = user;
    ir_ctx_t *ctx = st->ctx;
    const char *backend = st->gbackend[g];
    char name[160] = "fused";
    uint32_t shown = 0, total = 0;
    for (uint32_t k = 0; k < gi->nmembers; k++) {
        const ir_expr *v = blk->bindings[gi->members[k]].value;
        if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_GVAR) continue;
        const char *cn = IR_AS(IR_AS(v, ir_call)->callee, ir_gvar)->name;
        if (strncmp(cn, "fused_", 6) == 0) cn += 6;
        total++;
        if (strlen(name) + strlen(cn) + 40 < sizeof name) {
            byoc_append_op_name(name, sizeof name, cn);
            shown++;
        }
    }
    if (shown < total) {
        size_t len = strlen(name);
        snprintf(name + len, sizeof name - len, "_and_%u_more", total - shown);
    }
    const char *key = BYOC_ATTR_CODEGEN;
    ir_attr val = ir_attr_str(ctx, backend);
    gr_diag local;  /* the callee hook reports failures through a diag */
    if (!diag) {
        gr_diag_clear(&local);
        diag = &local;
    }
    ir_func *rf = byoc_build_group_func_ex(ctx, st->in, blk, gi, false, ir_attrs_new(ctx, 1, &key, &val),
                                           local_composite, st, diag);
    if (!rf) return NULL;
    uint64_t h = ir_struct_hash(&rf->base, 0) | 1, v = 0;
    gr_map_get(&st->region_dedup, h, &v);
    for (region_seen *r = (region_seen *)(uintptr_t)v; r; r = r->next)
        if (ir_struct_equal(&rf->base, &r->unnamed->base, 0)) return &r->gv->base;
    const char *base = byoc_unique_name(ctx, st->mod, name);
    const char *fname = byoc_unique_name(ctx, st->mod, ir_internf(ctx, "%s_%s", base, backend));
    ir_func *named = ir_func_with_attrs(ctx, rf, ir_attrs_set(ctx, rf->attrs, BYOC_ATTR_GLOBAL_SYMBOL, ir_attr_str(ctx, fname)));
    region_seen *r = IR_NEW(ctx, region_seen);
    r->next = (region_seen *)(uintptr_t)v;
    r->unnamed = rf;
    r->gv = ir_module_set_func(st->mod, fname, &named->base);
    gr_map_put(&st->region_dedup, h, GR_MAP_PTR(r));
    return &r->gv->base;
}

static gr_status merge_block(void *user, const ir_block *blk, const ir_block **out, gr_diag *diag) {
    merge_state *st = user;
    *out = blk;
    uint32_t n = blk->n;
    if (n == 0) return GR_OK;
    ir_idtab vidx, tgi_uses;  /* by expression id (locality on big blocks) */
    ir_idtab_init(&vidx);
    ir_idtab_init(&tgi_uses);
    const char **backend = gr_xcalloc(n, sizeof(char *));
    bool any = false;
    for (uint32_t i = 0; i < n; i++) {
        const ir_binding *b = &blk->bindings[i];
        ir_idtab_put(&vidx, b->var->base.id, i + 1);
        backend[i] = b->match_sinfo ? NULL : composite_backend(st, b->value);
        any |= backend[i] != NULL;
        if (b->value->kind == IR_TGI) {
            ir_expr *t = IR_AS(b->value, ir_tgi)->tuple;
            ir_idtab_put(&tgi_uses, t->id, ir_idtab_get(&tgi_uses, t->id) + 1);
        }
    }
    if (!any) {
        free(backend);
        ir_idtab_free(&vidx);
        ir_idtab_free(&tgi_uses);
        return GR_OK;
    }
    uint32_t *par = gr_xmalloc(sizeof(uint32_t) * n);
    const char **tag = gr_xcalloc(n, sizeof(char *));   /* by root */
    bool *solo = gr_xcalloc(n, sizeof(bool));
    gr_map **deps = gr_xcalloc(n, sizeof(gr_map *));
    args_ctx ac = {&vidx, {0}};
    gr_map dunion;
    gr_map_init(&dunion);
    for (uint32_t i = 0; i < n; i++) {
        par[i] = i;
        const ir_binding *b = &blk->bindings[i];
        ac.idx.len = 0;
        byoc_each_leaf(b->value, arg_leaf, &ac);
        gr_map_clear(&dunion);
        for (uint32_t k = 0; k < ac.idx.len; k++) {
            uint32_t ag = uf_find(par, ac.idx.data[k]);
            ac.idx.data[k] = ag;
            if (deps[ag])
                for (uint32_t s = 0; s < deps[ag]->cap; s++)
                    if (deps[ag]->keys[s]) gr_map_put(&dunion, uf_find(par, (uint32_t)(deps[ag]->keys[s] - 1)) + 1, 1);
        }
        const char *B = backend[i];
        if (B) {
            const ir_sinfo *si = b->var->base.sinfo;
            if (si && si->kind == IR_SINFO_TUPLE &&
                ir_idtab_get(&st->uses, b->var->base.id) > ir_idtab_get(&tgi_uses, b->var->base.id))
                solo[i] = true;
            tag[i] = B;
            if (!solo[i]) {
                for (uint32_t k = 0; k < ac.idx.len; k++) {
                    uint32_t ag = uf_find(par, ac.idx.data[k]);
                    if (ag == uf_find(par, i) || tag[ag] != B || solo[ag] || gr_map_get(&dunion, ag + 1, NULL))
                        continue;
                    /* merge ag into i's group */
                    uint32_t r = uf_find(par, i);
                    par[ag] = r;
                    if (deps[ag]) {
                        if (!deps[r]) {
                            deps[r] = gr_xcalloc(1, sizeof(gr_map));
                            gr_map_init(deps[r]);
                        }
                        set_union(deps[r], deps[ag]);
                        gr_map_free(deps[ag]);
                        free(deps[ag]);
                        deps[ag] = NULL;
                    }
                }
            }
        } else if (b->value->kind == IR_TGI) {
            uint64_t j;
            ir_expr *t = IR_AS(b->value, ir_tgi)->tuple;
            if ((j = ir_idtab_get(&vidx, t->id))) {
                uint32_t pg = uf_find(par, (uint32_t)(j - 1));
                if (tag[pg] && !solo[pg]) par[i] = pg;
            }
        } else if (b->value->kind == IR_TUPLE && b->var->base.kind == IR_DFVAR &&
                   ir_idtab_get(&st->uses, b->var->base.id) == ir_idtab_get(&tgi_uses, b->var->base.id)) {
            /* a tuple re-packing one group's values, only projected from: it joins that group
             * (TVM's MergeCompositeFunctions tuple rule), so ops reached through `(a, b)[i]`
             * merge too */
            const ir_tuple *tp = IR_AS(b->value, ir_tuple);
            int64_t pg = -1;
            for (uint32_t k = 0; k < tp->n && pg != -2; k++) {
                uint64_t j = ir_is_var(tp->fields[k]) ? ir_idtab_get(&vidx, tp->fields[k]->id) : 0;
                uint32_t g = j ? uf_find(par, (uint32_t)(j - 1)) : 0;
                if (!j || !tag[g] || solo[g] || (pg >= 0 && (uint32_t)pg != g)) pg = -2;
                else pg = g;
            }
            if (pg >= 0) par[i] = (uint32_t)pg;
        }
        uint32_t r = uf_find(par, i);
        for (uint32_t k = 0; k < ac.idx.len; k++) {
            uint32_t ag = uf_find(par, ac.idx.data[k]);
            if (ag == r) continue;
            if (!deps[r]) {
                deps[r] = gr_xcalloc(1, sizeof(gr_map));
                gr_map_init(deps[r]);
            }
            gr_map_put(deps[r], ag + 1, 1);
        }
        for (uint32_t s = 0; s < dunion.cap; s++)
            if (dunion.keys[s] && dunion.keys[s] - 1 != r) {
                if (!deps[r]) {
                    deps[r] = gr_xcalloc(1, sizeof(gr_map));
                    gr_map_init(deps[r]);
                }
                gr_map_put(deps[r], dunion.keys[s], 1);
            }
    }
    /* compact tagged groups */
    int32_t *grp = gr_xmalloc(sizeof(int32_t) * n);
    int32_t *cid = gr_xmalloc(sizeof(int32_t) * n);
    st->gbackend = gr_xmalloc(sizeof(char *) * n);
    uint32_t ng = 0;
    for (uint32_t i = 0; i < n; i++) cid[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = uf_find(par, i);
        if (!tag[r]) {
            grp[i] = -1;
            continue;
        }
        if (cid[r] < 0) {
            cid[r] = (int32_t)ng;
            st->gbackend[ng++] = tag[r];
        }
        grp[i] = cid[r];
    }
    const ir_block *nb = NULL;
    int32_t cyc = -1;
    gr_status rc = byoc_apply_groups(st->ctx, blk, grp, ng, &st->uses, &st->leaves, false, make_region, st, &nb, &cyc, diag);
    if (!rc && cyc >= 0) {
        /* fallback: one region per composite (never cyclic) */
        ng = 0;
        for (uint32_t i = 0; i < n; i++) {
            grp[i] = -1;
            if (backend[i]) {
                st->gbackend[ng] = backend[i];
                grp[i] = (int32_t)ng++;
                if (st->notes)
                    gr_map_put(&st->notes->reason, GR_MAP_PTR(blk->bindings[i].var),
                               GR_MAP_PTR(ir_intern(st->ctx, "merge blocked by a cycle: one region per composite")));
            }
        }
        rc = byoc_apply_groups(st->ctx, blk, grp, ng, &st->uses, &st->leaves, false, make_region, st, &nb, &cyc, diag);
    }
    if (!rc && nb) *out = nb;
    for (uint32_t i = 0; i < n; i++)
        if (deps[i]) {
            gr_map_free(deps[i]);
            free(deps[i]);
        }
    free(deps);
    free(st->gbackend);
    st->gbackend = NULL;
    free(grp);
    free(cid);
    free(solo);
    free(tag);
    free(par);
    free(backend);
    gr_vec_free(&ac.idx);
    gr_map_free(&dunion);
    ir_idtab_free(&vidx);
    ir_idtab_free(&tgi_uses);
    return rc;
}

/* gvar names referenced from the functions of m */
static ir_walk_result ref_visit(ir_walker *w, ir_expr *e) {
    if (e->kind == IR_GVAR) gr_map_put(w->user, GR_MAP_PTR(IR_AS(e, ir_gvar)->name), 1);
    return IR_WALK_CONTINUE;
}

/* Removes every unreferenced composite per walk of the module (not one per walk: the walk is
 * over the whole program); repeats while a removal may have orphaned another. Functions that
 * `keep` has (NULL: none) stay. */
void byoc_remove_dead_composites(ir_module *m, const ir_module *keep) {
    GR_VEC(const char *) dead = {0};
    for (;;) {
        gr_map refs;
        gr_map_init(&refs);
        ir_walker w = {.visit_expr = ref_visit, .user = &refs};
        ir_walk_module(&w, m);
        dead.len = 0;
        for (uint32_t i = 0; i < m->nfuncs; i++) {
            if (m->funcs[i]->kind != IR_FUNC) continue;
            const ir_func *f = IR_AS(m->funcs[i], ir_func);
            if ((ir_attrs_get(f->attrs, BYOC_ATTR_COMPOSITE) || ir_attrs_get(f->attrs, BYOC_ATTR_PRIMITIVE)) &&
                !gr_map_get(&refs, GR_MAP_PTR(m->gvars[i]->name), NULL) &&
                !(keep && ir_module_gvar(keep, m->gvars[i]->name)))
                gr_vec_push(&dead, m->gvars[i]->name);
        }
        gr_map_free(&refs);
        for (uint32_t k = 0; k < dead.len; k++) ir_module_remove(m, dead.data[k]);
        if (!dead.len) break;
    }
    gr_vec_free(&dead);
}

gr_status byoc_merge_composite_functions(ir_ctx_t *ctx, const ir_module *m, byoc_notes *notes,
                                         ir_module **out, gr_diag *diag) {
    *out = (ir_module *)m;
    merge_state st = {0};
    st.ctx = ctx;
    st.in = m;
    st.mod = ir_module_copy(m);
    st.notes = notes;
    gr_map_init(&st.callee_backend);
    gr_map_init(&st.region_dedup);
    gr_status rc = GR_OK;
    bool changed = false;
    for (uint32_t i = 0; i < m->nfuncs && !rc; i++) {
        ir_expr *fe = m->funcs[i];
        if (fe->kind != IR_FUNC || !byoc_is_entry_func(IR_AS(fe, ir_func))) continue;
        ir_func *f = IR_AS(fe, ir_func);
        ir_idtab_init(&st.uses);
        gr_map_init(&st.leaves);
        byoc_static_leaves(IR_AS(fe, ir_func), &st.leaves);
        byoc_count_uses(f, &st.uses, NULL, m->gvars[i]->name, diag);
        ir_expr *nb = f->body;
        rc = byoc_rewrite_blocks(ctx, f->body, merge_block, &st, &nb, diag);
        if (!rc && nb != f->body) {
            ir_func *nf = ir_func_new(ctx, f->nparams, f->params, nb, f->ret_sinfo, f->attrs, fe->span);
            ir_expr_set_sinfo(&nf->base, fe->sinfo);
            ir_module_set(st.mod, m->gvars[i], &nf->base);
            changed = true;
        }
        ir_idtab_free(&st.uses);
        gr_map_free(&st.leaves);
    }
    gr_map_free(&st.callee_backend);
    gr_map_free(&st.region_dedup);
    if (rc) return rc;
    if (changed) {
        byoc_remove_dead_composites(st.mod, NULL);
        *out = st.mod;
    }
    return GR_OK;
}
