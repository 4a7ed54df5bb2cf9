/* FuseOpsByPattern: every accepted match in a dataflow block becomes a private
 * composite function {Composite, Primitive} called at the match's place.
 *
 * Patterns are tried in priority order, every binding of a block in order. A match is kept when
 * (1) none of its bindings belongs to a composite of an earlier pattern, (2) a composite of the
 * same pattern that it overlaps is contained in it (maximal match wins), (3) the check function
 * accepts it, (4) it would not close a cycle: no path leaves the match and comes back through
 * other bindings or composites. A rejected match backtracks into the pattern's other choices
 * (the smaller optional form, the other | branch). After all patterns the grouping is checked
 * once more on the contracted graph (cycles through several composites), dropping the latest
 * composite on a cycle until none is left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc_impl.h"
#include "ir/builder.h"
#include "ir/equal.h"
#include "ir/op.h"

typedef struct fgroup {
    int32_t pat;
    bool dead;
    uint32_t off, n;            /* members: st->members.data[off .. off + n) */
} fgroup;

typedef GR_VEC(fgroup) fgroup_vec;
typedef GR_VEC(uint64_t) u64_vec;

typedef struct fuse_state {
    ir_ctx_t *ctx;
    ir_module *mod;             /* output module (composites appended) */
    const byoc_pattern *pats;
    uint32_t npats;
    const byoc_fuse_opts *opts;
    byoc_notes *notes;
    ir_idtab uses;              /* current function: var id -> uses */
    gr_map leaves;              /* current function: byoc_static_leaves */
    gr_map dedup;               /* struct hash -> composite gvar */
    gr_map sigs;                /* group signature hash -> sig_entry chain */
    u64_vec sig;                /* scratch */
    gr_map wrappers;            /* composite gvar -> Codegen wrapper gvar */
    /* current block */
    const ir_block *blk;
    pat_block_info *info;
    int32_t *grp;
    uint8_t *in_s;
    fgroup_vec groups;
    GR_VEC(uint32_t) members;   /* every group's binding indices, one block (no allocation a group) */
    uint32_t cur;
    GR_VEC(uint32_t) queue;
    uint8_t *seen;
} fuse_state;

static void note(fuse_state *st, const ir_var *v, const char *reason) {
    if (st->notes && v && !gr_map_get(&st->notes->reason, GR_MAP_PTR(v), NULL))
        gr_map_put(&st->notes->reason, GR_MAP_PTR(v), GR_MAP_PTR(ir_intern(st->ctx, reason)));
}

/* Why backend `backend` did not take binding v (the first reason per backend stays). */
static void note_backend(fuse_state *st, const ir_var *v, const char *backend, const char *why) {
    if (!st->notes || !v || !backend) return;
    uint64_t h = 0;
    gr_map_get(&st->notes->why_not, GR_MAP_PTR(v), &h);
    for (const byoc_why_not *w = (const byoc_why_not *)(uintptr_t)h; w; w = w->next)
        if (strcmp(w->backend, backend) == 0) return;
    byoc_why_not *w = gr_xmalloc(sizeof *w);
    *w = (byoc_why_not){(byoc_why_not *)(uintptr_t)h, ir_intern(st->ctx, backend), ir_intern(st->ctx, why)};
    gr_map_put(&st->notes->why_not, GR_MAP_PTR(v), GR_MAP_PTR(w));
}

/* Is there a path from the match (in_s) back into it through other bindings? Returns the
 * binding the path re-enters from (its index + 1), or 0. Plain bindings after the root cannot
 * lead back (the block is in order); composites are followed as one node. */
static uint32_t find_cycle(fuse_state *st, const uint32_t *S, uint32_t ns, uint32_t root) {
    const ir_block *blk = st->blk;
    st->queue.len = 0;
    uint32_t hit = 0;
    GR_VEC(uint32_t) touched = {0};
    for (uint32_t k = 0; k < ns; k++) {
        uint32_t nu;
        const uint32_t *us = pat_block_users(st->info, &blk->bindings[S[k]].var->base, &nu);
        for (uint32_t j = 0; j < nu; j++)
            if (!st->in_s[us[j]] && !st->seen[us[j]] && us[j] < root) {
                st->seen[us[j]] = 1;
                gr_vec_push(&touched, us[j]);
                gr_vec_push(&st->queue, us[j]);
            }
    }
    for (uint32_t qi = 0; qi < st->queue.len && !hit; qi++) {
        uint32_t x = st->queue.data[qi];
        /* a composite is one node: all its members' users follow */
        int32_t g = st->grp[x];
        uint32_t nm = 1;
        const uint32_t *mem = &x;
        if (g >= 0 && !st->groups.data[g].dead) {
            nm = st->groups.data[g].n;
            mem = st->members.data + st->groups.data[g].off;
        }
        for (uint32_t k = 0; k < nm && !hit; k++) {
            uint32_t y = mem[k];
            if (y != x && !st->seen[y]) {
                st->seen[y] = 1;
                gr_vec_push(&touched, y);
            }
            uint32_t nu;
            const uint32_t *us = pat_block_users(st->info, &blk->bindings[y].var->base, &nu);
            for (uint32_t j = 0; j < nu; j++) {
                uint32_t z = us[j];
                if (st->in_s[z]) {
                    hit = x + 1;
                    break;
                }
                if (st->seen[z] || z >= root) continue;
                st->seen[z] = 1;
                gr_vec_push(&touched, z);
                gr_vec_push(&st->queue, z);
            }
        }
    }
    for (uint32_t k = 0; k < touched.len; k++) st->seen[touched.data[k]] = 0;
    gr_vec_free(&touched);
    return hit;
}

static const char *binding_desc(ir_ctx_t *ctx, const ir_binding *b) {
    const char *op = "";
    if (b->value->kind == IR_CALL && IR_AS(b->value, ir_call)->callee->kind == IR_OP)
        op = IR_AS(IR_AS(b->value, ir_call)->callee, ir_op)->def->name;
    const ir_span *s = b->value->span ? b->value->span : b->var->base.span;
    return ir_internf(ctx, "%s%s%s (layer %s)", b->var->name, *op ? " = " : "", op,
                      s ? ir_span_layer(s) : "?");
}

static bool accept_match(const pat_match_result *m, void *user) {
    fuse_state *st = user;
    const uint32_t *S = m->binding_idx.data;
    uint32_t ns = m->binding_idx.len;
    if (ns == 0) return false;
    uint32_t root = S[ns - 1];
    for (uint32_t k = 0; k < ns; k++) {
        if (st->blk->bindings[S[k]].match_sinfo) return false;
        if (S[k] > root) root = S[k];
    }
    /* an unused root still makes a region (TVM: its used members are the outputs) */
    const ir_binding *rb = &st->blk->bindings[root];
    for (uint32_t k = 0; k < ns; k++) st->in_s[S[k]] = 1;
    bool ok = true;
    int32_t claimed = -1;          /* a group of an earlier pattern holding a member */
    for (uint32_t k = 0; k < ns && ok; k++) {
        int32_t g = st->grp[S[k]];
        if (g < 0) continue;
        fgroup *G = &st->groups.data[g];
        if (G->pat != (int32_t)st->cur) {
            ok = false;
            claimed = g;
            break;
        }
        for (uint32_t j = 0; j < G->n && ok; j++) ok = st->in_s[st->members.data[G->off + j]];
    }
    const byoc_pattern *bp = &st->pats[st->cur];
    const char *mine = st->notes ? byoc_backend_of(st->ctx, bp->name) : NULL;
    pat_check_ctx c = {st->ctx, bp->pattern, m->root, m->root_var, m, st->info};
    char buf[512];
    if (claimed >= 0 && mine) {
        /* for the report: another backend's pattern was first; would this one's check take it? */
        const char *theirs = st->pats[st->groups.data[claimed].pat].name, *reason = NULL;
        if (strcmp(byoc_backend_of(st->ctx, theirs), mine) != 0) {
            if (bp->check && !bp->check(&c, &reason, bp->check_user)) {
                snprintf(buf, sizeof buf, "check rejected %s: %s", bp->name, reason ? reason : "(no reason)");
                note_backend(st, rb->var, mine, buf);
            }
            snprintf(buf, sizeof buf, "%s claimed it first (pattern %s, ahead of %s in priority)",
                     byoc_backend_of(st->ctx, theirs), theirs, bp->name);
            for (uint32_t k = 0; k < ns; k++) {
                int32_t g = st->grp[S[k]];
                if (g >= 0 && strcmp(byoc_backend_of(st->ctx, st->pats[st->groups.data[g].pat].name), mine) != 0)
                    note_backend(st, st->blk->bindings[S[k]].var, mine, buf);
            }
        }
    }
    if (ok && bp->check) {
        const char *reason = NULL;
        if (!bp->check(&c, &reason, bp->check_user)) {
            ok = false;
            snprintf(buf, sizeof buf, "check rejected %s: %s", bp->name, reason ? reason : "(no reason)");
            note(st, rb->var, buf);
            note_backend(st, rb->var, mine, buf);
        }
    }
    if (ok) {
        uint32_t via = find_cycle(st, S, ns, root);
        if (via) {
            ok = false;
            snprintf(buf, sizeof buf, "%s would create a cycle through %s", bp->name,
                     binding_desc(st->ctx, &st->blk->bindings[via - 1]));
            note(st, rb->var, buf);
            note_backend(st, rb->var, mine, buf);
        }
    }
    if (ok) {
        for (uint32_t k = 0; k < ns; k++) {
            int32_t g = st->grp[S[k]];
            if (g >= 0) st->groups.data[g].dead = true;
        }
        fgroup ng = {(int32_t)st->cur, false, st->members.len, ns};
        for (uint32_t k = 0; k < ns; k++) gr_vec_push(&st->members, S[k]);
        gr_vec_push(&st->groups, ng);
        for (uint32_t k = 0; k < ns; k++) st->grp[S[k]] = (int32_t)st->groups.len - 1;
    }
    for (uint32_t k = 0; k < ns; k++) st->in_s[S[k]] = 0;
    return ok;
}

/* ---- building composites ---- */

/* A group's dedup signature, read off its bindings before any function is built: the members'
 * ops, attrs, struct infos and argument wiring (input k / member j) as a uint64 sequence. Every
 * pointer in it stands for an object compared by identity or hash-consed (struct infos, op
 * defs, attrs, constants, literals), so equal signatures mean structurally equal composites:
 * most groups of a big model then reuse a composite without building a function, hashing and
 * comparing it. Anything else (a nested function, an if) gets no signature: the slow path. */
typedef struct sig_entry sig_entry;
struct sig_entry {
    sig_entry *next;
    uint32_t n;
    const uint64_t *sig;
    ir_gvar *gv;
};

enum { SIG_IN = 1, SIG_MEM, SIG_CONST, SIG_LEAF, SIG_CALL, SIG_TUPLE, SIG_TGI };

static bool sig_expr(fuse_state *st, const ir_block *blk, const byoc_group_info *gi, const ir_expr *e) {
    u64_vec *sg = &st->sig;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
    case IR_CONST:
        for (uint32_t k = 0; k < gi->ninputs; k++)
            if (gi->inputs[k] == e) {
                gr_vec_push(sg, SIG_IN);
                gr_vec_push(sg, k);
                return true;
            }
        if (e->kind == IR_CONST) {
            gr_vec_push(sg, SIG_CONST);
            gr_vec_push(sg, GR_MAP_PTR(e));
            return true;
        }
        for (uint32_t j = 0; j < gi->nmembers; j++)
            if (&blk->bindings[gi->members[j]].var->base == e) {
                gr_vec_push(sg, SIG_MEM);
                gr_vec_push(sg, j);
                return true;
            }
        return false;
    case IR_OP:
        gr_vec_push(sg, SIG_LEAF);
        gr_vec_push(sg, GR_MAP_PTR(IR_AS(e, ir_op)->def));
        return true;
    case IR_GVAR:
    case IR_EXTERN:
    case IR_SHAPE:
    case IR_PRIMVAL:
    case IR_STR:
        gr_vec_push(sg, SIG_LEAF);
        gr_vec_push(sg, GR_MAP_PTR(e));
        return true;
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        gr_vec_push(sg, SIG_TUPLE);
        gr_vec_push(sg, t->n);
        gr_vec_push(sg, GR_MAP_PTR(e->sinfo));
        for (uint32_t i = 0; i < t->n; i++)
            if (!sig_expr(st, blk, gi, t->fields[i])) return false;
        return true;
    }
    case IR_TGI:
        gr_vec_push(sg, SIG_TGI);
        gr_vec_push(sg, (uint64_t)(int64_t)IR_AS(e, ir_tgi)->index);
        gr_vec_push(sg, GR_MAP_PTR(e->sinfo));
        return sig_expr(st, blk, gi, IR_AS(e, ir_tgi)->tuple);
    case IR_CALL: {
        const ir_call *c = IR_AS(e, ir_call);
        gr_vec_push(sg, SIG_CALL);
        gr_vec_push(sg, c->nargs);
        gr_vec_push(sg, GR_MAP_PTR(c->attrs));
        gr_vec_push(sg, GR_MAP_PTR(e->sinfo));
        gr_vec_push(sg, c->nsinfo_args);
        for (uint32_t i = 0; i < c->nsinfo_args; i++) gr_vec_push(sg, GR_MAP_PTR(c->sinfo_args[i]));
        if (!sig_expr(st, blk, gi, c->callee)) return false;
        for (uint32_t i = 0; i < c->nargs; i++)
            if (!sig_expr(st, blk, gi, c->args[i])) return false;
        return true;
    }
    default:
        return false;
    }
}

/* Fills st->sig for group g; false when the group has no signature. */
static bool group_signature(fuse_state *st, uint32_t g, const ir_block *blk, const byoc_group_info *gi) {
    u64_vec *sg = &st->sig;
    sg->len = 0;
    gr_vec_push(sg, (uint64_t)st->groups.data[g].pat);
    gr_vec_push(sg, gi->ninputs);
    for (uint32_t k = 0; k < gi->ninputs; k++) gr_vec_push(sg, GR_MAP_PTR(gi->inputs[k]->sinfo));
    gr_vec_push(sg, gi->noutputs);
    for (uint32_t o = 0; o < gi->noutputs; o++) {
        uint32_t j = 0;
        while (j < gi->nmembers && blk->bindings[gi->members[j]].var != gi->outputs[o]) j++;
        gr_vec_push(sg, j);
    }
    gr_vec_push(sg, gi->nmembers);
    for (uint32_t j = 0; j < gi->nmembers; j++) {
        const ir_binding *b = &blk->bindings[gi->members[j]];
        gr_vec_push(sg, GR_MAP_PTR(b->var->base.sinfo));
        gr_vec_push(sg, GR_MAP_PTR(b->match_sinfo));
        if (!sig_expr(st, blk, gi, b->value)) return false;
    }
    return true;
}

static sig_entry *sig_find(fuse_state *st, uint64_t h) {
    uint64_t v;
    if (!gr_map_get(&st->sigs, h, &v)) return NULL;
    for (sig_entry *e = (sig_entry *)(uintptr_t)v; e; e = e->next)
        if (e->n == st->sig.len && memcmp(e->sig, st->sig.data, sizeof(uint64_t) * e->n) == 0) return e;
    return NULL;
}

static void sig_add(fuse_state *st, uint64_t h, ir_gvar *gv) {
    uint64_t v = 0;
    gr_map_get(&st->sigs, h, &v);
    sig_entry *e = IR_NEW(st->ctx, sig_entry);
    e->next = (sig_entry *)(uintptr_t)v;
    e->n = st->sig.len;
    e->sig = ir_alloc_copy(st->ctx, st->sig.data, sizeof(uint64_t) * (st->sig.len ? st->sig.len : 1));
    e->gv = gv;
    gr_map_put(&st->sigs, h, GR_MAP_PTR(e));
}

static ir_expr *wrap_codegen(fuse_state *st, ir_gvar *comp, ir_func *cf, const char *backend,
                             gr_diag *diag) {
    uint64_t v;
    if (gr_map_get(&st->wrappers, GR_MAP_PTR(comp), &v)) return (ir_expr *)(uintptr_t)v;
    ir_ctx_t *ctx = st->ctx;
    ir_func *lam = byoc_copy_func_fresh(ctx, cf, diag);
    if (!lam) return NULL;
    lam = ir_func_with_attrs(ctx, lam, ir_attrs_remove(ctx, cf->attrs, BYOC_ATTR_PRIMITIVE));
    if (!lam->base.sinfo) ir_expr_set_sinfo(&lam->base, cf->base.sinfo);
    ir_var **params = IR_NEW_ARRAY(ctx, ir_var *, cf->nparams ? cf->nparams : 1);
    for (uint32_t i = 0; i < cf->nparams; i++)
        params[i] = ir_var_new(ctx, cf->params[i]->name, cf->params[i]->base.sinfo, NULL);
    ir_var *lv = ir_var_new(ctx, "local_func", lam->base.sinfo, NULL);
    ir_call *call = ir_call_new(ctx, &lv->base, cf->nparams, (ir_expr *const *)params, NULL, 0, NULL, NULL);
    const ir_sinfo *ret = cf->base.sinfo->ret;
    ir_expr_set_sinfo(&call->base, ret);
    ir_var *gv = ir_var_new(ctx, "gv", ret, NULL);
    ir_binding bs[2] = {{lv, &lam->base, NULL}, {gv, &call->base, NULL}};
    const ir_block *blk = ir_block_new(ctx, false, 2, bs);
    ir_seq *seq = ir_seq_new(ctx, 1, &blk, &gv->base, NULL);
    const char *name = byoc_unique_name(ctx, st->mod, ir_internf(ctx, "%s_%s", comp->name, backend));
    const char *keys[2] = {BYOC_ATTR_CODEGEN, BYOC_ATTR_GLOBAL_SYMBOL};
    ir_attr vals[2] = {ir_attr_str(ctx, backend), ir_attr_str(ctx, name)};
    ir_func *w = ir_func_new(ctx, cf->nparams, params, &seq->base, ret, ir_attrs_new(ctx, 2, keys, vals), NULL);
    if (!ir_normalize(ctx, &w->base, diag)) return NULL;
    ir_gvar *g = ir_module_set_func(st->mod, name, &w->base);
    gr_map_put(&st->wrappers, GR_MAP_PTR(comp), GR_MAP_PTR(g));
    return &g->base;
}

static ir_expr *make_composite(void *user, uint32_t g, const ir_block *blk,
                               const byoc_group_info *gi, gr_diag *diag) {
    fuse_state *st = user;
    ir_ctx_t *ctx = st->ctx;
    const char *pname = st->pats[st->groups.data[g].pat].name;
    bool has_sig = group_signature(st, g, blk, gi);
    uint64_t sh = has_sig ? gr_hash_bytes(st->sig.data, sizeof(uint64_t) * st->sig.len, 0x5167) | 1 : 0;
    sig_entry *se = has_sig ? sig_find(st, sh) : NULL;
    if (se) {
        if (st->opts && st->opts->annotate_codegen)
            return wrap_codegen(st, se->gv, ir_module_func(st->mod, se->gv->name), byoc_backend_of(ctx, pname), diag);
        return &se->gv->base;
    }
    const char *keys[2] = {BYOC_ATTR_COMPOSITE, BYOC_ATTR_PRIMITIVE};
    ir_attr vals[2] = {ir_attr_str(ctx, pname), ir_attr_bool(true)};
    ir_func *f = byoc_build_group_func(ctx, st->mod, blk, gi, true, ir_attrs_new(ctx, 2, keys, vals), diag);
    if (!f) return NULL;
    uint64_t h = ir_struct_hash(&f->base, 0) | 1, v;
    ir_gvar *gv = NULL;
    if (gr_map_get(&st->dedup, h, &v)) {
        ir_gvar *cand = (ir_gvar *)(uintptr_t)v;
        if (ir_struct_equal(&f->base, &ir_module_func(st->mod, cand->name)->base, 0)) gv = cand;
    }
    if (!gv) {
        char name[200] = "";
        byoc_append_op_name(name, sizeof name, "fused");
        for (uint32_t k = 0; k < gi->nmembers; k++) {
            const ir_expr *val = blk->bindings[gi->members[k]].value;
            if (val->kind == IR_CALL && IR_AS(val, ir_call)->callee->kind == IR_OP)
                byoc_append_op_name(name, sizeof name, IR_AS(IR_AS(val, ir_call)->callee, ir_op)->def->name);
        }
        gv = ir_module_set_func(st->mod, byoc_unique_name(ctx, st->mod, name), &f->base);
        if (!gr_map_get(&st->dedup, h, NULL)) gr_map_put(&st->dedup, h, GR_MAP_PTR(gv));
    }
    /* later groups with this signature get what this one got, as long as that is what the
     * hash lookup above would give them (not so after a hash collision) */
    if (has_sig && gr_map_get(&st->dedup, h, &v) && v == GR_MAP_PTR(gv)) sig_add(st, sh, gv);
    if (st->opts && st->opts->annotate_codegen)
        return wrap_codegen(st, gv, ir_module_func(st->mod, gv->name), byoc_backend_of(ctx, pname), diag);
    return &gv->base;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static gr_status fuse_block(void *user, const ir_block *blk, const ir_block **out, gr_diag *diag) {
    fuse_state *st = user;
    *out = blk;
    if (!blk->dataflow || blk->n == 0) return GR_OK;
    st->blk = blk;
    st->info = pat_block_info_build(st->ctx, blk);
    st->grp = gr_xmalloc(sizeof(int32_t) * blk->n);
    for (uint32_t i = 0; i < blk->n; i++) st->grp[i] = -1;
    st->in_s = gr_xcalloc(blk->n, 1);
    st->seen = gr_xcalloc(blk->n, 1);
    st->groups.len = 0;
    st->members.len = 0;
    pat_match_result res;
    pat_match_result_init(&res);
    /* bindings by root op (CSR over op names), so a pattern rooted at an op visits only the
     * calls of that op */
    gr_map op_slot;
    gr_map_init(&op_slot);
    uint32_t nslots = 0;
    uint32_t *slot_of = gr_xmalloc(sizeof(uint32_t) * blk->n);
    for (uint32_t i = 0; i < blk->n; i++) {
        const ir_expr *v = blk->bindings[i].value;
        slot_of[i] = UINT32_MAX;
        if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
        const char *opn = IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name;
        uint64_t sl;
        if (!gr_map_get(&op_slot, GR_MAP_PTR(opn), &sl)) {
            sl = nslots++;
            gr_map_put(&op_slot, GR_MAP_PTR(opn), sl);
        }
        slot_of[i] = (uint32_t)sl;
    }
    uint32_t *soff = gr_xcalloc(nslots + 2, sizeof(uint32_t)), *sfill = gr_xcalloc(nslots + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < blk->n; i++)
        if (slot_of[i] != UINT32_MAX) soff[slot_of[i] + 1]++;
    for (uint32_t k = 0; k < nslots; k++) soff[k + 1] += soff[k];
    uint32_t *sidx = gr_xmalloc(sizeof(uint32_t) * (soff[nslots] + 1));
    for (uint32_t i = 0; i < blk->n; i++)
        if (slot_of[i] != UINT32_MAX) sidx[soff[slot_of[i]] + sfill[slot_of[i]]++] = i;
    GR_VEC(uint32_t) cand = {0};
    for (st->cur = 0; st->cur < st->npats; st->cur++) {
        const pat_t *p = st->pats[st->cur].pattern;
        const char *roots[64];
        int nroots = pat_root_ops(p, roots, 64);
        cand.len = 0;
        if (nroots >= 0) {
            for (int k = 0; k < nroots; k++) {
                uint64_t sl;
                if (!gr_map_get(&op_slot, GR_MAP_PTR(roots[k]), &sl)) continue;
                for (uint32_t q = soff[sl]; q < soff[sl + 1]; q++) gr_vec_push(&cand, sidx[q]);
            }
            if (nroots > 1 && cand.len > 1) qsort(cand.data, cand.len, sizeof(uint32_t), cmp_u32);  /* block order */
        } else {
            for (uint32_t i = 0; i < blk->n; i++) gr_vec_push(&cand, i);
        }
        for (uint32_t ci = 0; ci < cand.len; ci++) {
            uint32_t i = cand.data[ci];
            const ir_binding *b = &blk->bindings[i];
            if (b->value->kind != IR_CALL || b->match_sinfo) continue;
            int32_t g = st->grp[i];
            /* a binding an earlier pattern took: skipped, but with notes a pattern of another
             * backend still tries it, so that the report can say why that backend did not get it */
            if (g >= 0 && st->groups.data[g].pat != (int32_t)st->cur &&
                !(st->notes && strcmp(byoc_backend_of(st->ctx, st->pats[st->groups.data[g].pat].name),
                                      byoc_backend_of(st->ctx, st->pats[st->cur].name)) != 0))
                continue;
            pat_match_each(p, &b->var->base, st->info, &res, accept_match, st);
        }
    }
    gr_vec_free(&cand);
    free(sidx);
    free(soff);
    free(sfill);
    free(slot_of);
    gr_map_free(&op_slot);
    pat_match_result_free(&res);
    gr_status rc = GR_OK;
    for (;;) {
        /* compact live groups */
        int32_t *grp = gr_xmalloc(sizeof(int32_t) * blk->n);
        int32_t *gmap = gr_xmalloc(sizeof(int32_t) * (st->groups.len + 1));
        int32_t *ginv = gr_xmalloc(sizeof(int32_t) * (st->groups.len + 1));
        uint32_t ng = 0;
        for (uint32_t g = 0; g < st->groups.len; g++) {
            gmap[g] = st->groups.data[g].dead ? -1 : (int32_t)ng;
            if (!st->groups.data[g].dead) ginv[ng++] = (int32_t)g;
        }
        for (uint32_t i = 0; i < blk->n; i++) grp[i] = st->grp[i] >= 0 ? gmap[st->grp[i]] : -1;
        /* make_composite reads groups by compact id: remap the pattern table view */
        fgroup_vec saved = st->groups;
        fgroup *compact = gr_xmalloc(sizeof(fgroup) * (ng + 1));
        for (uint32_t g = 0; g < ng; g++) compact[g] = saved.data[ginv[g]];
        st->groups.data = compact;
        st->groups.len = ng;
        const ir_block *nb = NULL;
        int32_t cyc = -1;
        if (ng) rc = byoc_apply_groups(st->ctx, blk, grp, ng, &st->uses, &st->leaves, st->opts && !st->opts->bind_constants,
                                       make_composite, st, &nb, &cyc, diag);
        st->groups = saved;
        free(compact);
        free(grp);
        free(gmap);
        if (rc || ng == 0) {
            free(ginv);
            break;
        }
        if (cyc < 0) {
            free(ginv);
            *out = nb;
            break;
        }
        /* drop the latest composite on the cycle and try again */
        fgroup *G = &st->groups.data[ginv[cyc]];
        G->dead = true;
        const uint32_t *mem = st->members.data + G->off;
        note(st, blk->bindings[mem[G->n - 1]].var, "dropped: the composites around it would form a cycle");
        for (uint32_t k = 0; k < G->n && st->notes; k++)
            note_backend(st, blk->bindings[mem[k]].var, byoc_backend_of(st->ctx, st->pats[G->pat].name),
                         "dropped: the composites around it would form a cycle");
        for (uint32_t k = 0; k < G->n; k++) st->grp[mem[k]] = -1;
        free(ginv);
    }
    for (uint32_t i = 0; i < blk->n && st->notes && !rc; i++) {
        const ir_expr *v = blk->bindings[i].value;
        if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
        const ir_op_def *def = IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def;
        if (def->flags & IR_OPF_CALL_LIKE) continue;
        int32_t g = st->grp[i];
        const ir_span *sp = v->span ? v->span : blk->bindings[i].var->base.span;
        byoc_layer_note ln = {blk->bindings[i].var, def->name, sp ? ir_span_layer(sp) : NULL,
                              g >= 0 ? st->pats[st->groups.data[g].pat].name : NULL};
        gr_vec_push(&st->notes->layers, ln);
    }
    st->members.len = 0;
    free(st->grp);
    free(st->in_s);
    free(st->seen);
    pat_block_info_free(st->info);
    st->info = NULL;
    return rc;
}

static bool in_list(const char *name, uint32_t n, const char *const *names) {
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return true;
    return false;
}

gr_status byoc_fuse_ops_by_pattern(ir_ctx_t *ctx, const ir_module *m, const byoc_pattern *pats,
                                   uint32_t npats, const byoc_fuse_opts *opts, byoc_notes *notes,
                                   ir_module **out, gr_diag *diag) {
    *out = (ir_module *)m;
    if (npats == 0) return GR_OK;
    fuse_state st = {0};
    st.ctx = ctx;
    st.mod = ir_module_copy(m);
    st.pats = pats;
    st.npats = npats;
    st.opts = opts;
    st.notes = notes;
    gr_map_init(&st.dedup);
    gr_map_init(&st.sigs);
    gr_map_init(&st.wrappers);
    ir_idtab bound;
    ir_idtab_init(&bound);
    gr_status rc = GR_OK;
    bool changed = false;
    uint32_t nf = m->nfuncs;
    for (uint32_t i = 0; i < nf && !rc; i++) {
        ir_expr *fe = m->funcs[i];
        if (fe->kind != IR_FUNC) continue;
        ir_func *f = IR_AS(fe, ir_func);
        const char *fname = m->gvars[i]->name;
        ir_idtab_init(&st.uses);
        gr_map_init(&st.leaves);
        byoc_static_leaves(IR_AS(fe, ir_func), &st.leaves);
        if (!byoc_count_uses(f, &st.uses, &bound, fname, diag)) rc = GR_ERR_INVALID;
        bool entry = opts && opts->nentry ? in_list(fname, opts->nentry, opts->entry) : byoc_is_entry_func(f);
        ir_expr *nb = f->body;
        if (!rc && entry) rc = byoc_rewrite_blocks(ctx, f->body, fuse_block, &st, &nb, diag);
        if (!rc && nb != f->body) {
            ir_func *nf2 = ir_func_new(ctx, f->nparams, f->params, nb, f->ret_sinfo, f->attrs, fe->span);
            ir_expr_set_sinfo(&nf2->base, fe->sinfo);
            ir_module_set(st.mod, m->gvars[i], &nf2->base);
            changed = true;
        }
        ir_idtab_free(&st.uses);
        gr_map_free(&st.leaves);
    }
    ir_idtab_free(&bound);
    gr_vec_free(&st.groups);
    gr_vec_free(&st.members);
    gr_vec_free(&st.queue);
    gr_map_free(&st.dedup);
    gr_map_free(&st.sigs);
    gr_vec_free(&st.sig);
    gr_map_free(&st.wrappers);
    if (rc) return rc;
    /* with annotate_codegen the wrappers hold the composites as lambdas: the global copies go,
     * as in TVM */
    if (changed && opts && opts->annotate_codegen) byoc_remove_dead_composites(st.mod, m);
    if (changed) *out = st.mod;
    return GR_OK;
}

void byoc_notes_init(byoc_notes *n) {
    gr_map_init(&n->reason);
    gr_map_init(&n->why_not);
    memset(&n->layers, 0, sizeof n->layers);
}

void byoc_notes_free(byoc_notes *n) {
    gr_map_free(&n->reason);
    for (uint32_t k = 0; k < n->why_not.cap; k++)
        for (byoc_why_not *w = (byoc_why_not *)(uintptr_t)(n->why_not.keys[k] ? n->why_not.vals[k] : 0), *nx; w; w = nx) {
            nx = w->next;
            free(w);
        }
    gr_map_free(&n->why_not);
    gr_vec_free(&n->layers);
}
