/* The pass manager: running passes of each kind, Sequential with required passes, the pass
 * context (opt level, forced passes, typed config) and the registry. Instruments live in
 * ir/transform/transform_instr.c. */
#include "ir/transform/transform.h"

#include <string.h>

#include "ir/transform/transform_impl.h"
#include "ir/ctx_impl.h"
#include "ir/var_map.h"

/* ---- Config options (process-global declarations) ---- */

typedef struct config_decl {
    const char *key;        /* heap copy */
    ir_config_value dflt;
} config_decl;

static GR_VEC(config_decl) g_config;

static int config_find(const char *key) {
    for (uint32_t i = 0; i < g_config.len; i++)
        if (strcmp(g_config.data[i].key, key) == 0) return (int)i;
    return -1;
}

void ir_config_declare(const char *key, ir_config_value dflt) {
    if (config_find(key) >= 0) return;
    config_decl d = {gr_xstrdup(key), dflt};
    gr_vec_push(&g_config, d);
}

static void config_builtin(void) {
    static bool done;
    if (done) return;
    done = true;
    ir_config_declare(IR_CONFIG_SI_BUILDER, (ir_config_value){.kind = IR_CONFIG_BOOL, .u.b = true});
    ir_config_declare(IR_CONFIG_MERGE_SIBLING_MATMULS, (ir_config_value){.kind = IR_CONFIG_BOOL, .u.b = false});
}

/* ---- Pass context ---- */

void ir_ctx_set_const_eval(ir_ctx_t *ctx, ir_const_eval_fn fn, void *user) {
    ctx->const_eval = fn;
    ctx->const_eval_user = user;
}

void ir_pass_ctx_set_const_eval(ir_pass_ctx_t *pc, ir_const_eval_fn fn, void *user) {
    pc->const_eval_set = true;
    pc->const_eval = fn;
    pc->const_eval_user = user;
}

ir_const_eval_fn ir_pass_ctx_const_eval(const ir_pass_ctx_t *pc, const ir_ctx_t *ctx, void **user) {
    ir_const_eval_fn fn = NULL;
    void *u = NULL;
    if (pc && pc->const_eval_set) fn = pc->const_eval, u = pc->const_eval_user;
    else if (ctx) fn = ctx->const_eval, u = ctx->const_eval_user;
    if (user) *user = u;
    return fn;
}

ir_pass_ctx_t *ir_pass_ctx_new(void) {
    config_builtin();
    ir_pass_ctx_t *pc = gr_xcalloc(1, sizeof(*pc));
    pc->opt_level = 2;
    pc->si_enabled = true;
    gr_map_init(&pc->var_notes);
    return pc;
}

void ir_pass_ctx_free(ir_pass_ctx_t *pc) {
    if (!pc) return;
    for (uint32_t i = 0; i < pc->instruments.len; i++) {
        ir_instrument *ins = pc->instruments.data[i];
        if (ins->destroy) ins->destroy(ins);
    }
    gr_vec_free(&pc->instruments);
    for (uint32_t i = 0; i < pc->forced.len; i++) free(pc->forced.data[i].name);
    gr_vec_free(&pc->forced);
    for (uint32_t i = 0; i < pc->config.len; i++) {
        free(pc->config.data[i].key);
        free(pc->config.data[i].str);
    }
    gr_vec_free(&pc->config);
    gr_map_free(&pc->var_notes);
    free(pc);
}

void ir_pass_ctx_set_opt_level(ir_pass_ctx_t *pc, int opt_level) { pc->opt_level = opt_level; }
int ir_pass_ctx_opt_level(const ir_pass_ctx_t *pc) { return pc ? pc->opt_level : 2; }

static void force(ir_pass_ctx_t *pc, const char *name, bool on) {
    for (uint32_t i = 0; i < pc->forced.len; i++) {
        if (strcmp(pc->forced.data[i].name, name) == 0) {
            pc->forced.data[i].on = on;
            return;
        }
    }
    forced_pass f = {gr_xstrdup(name), on};
    gr_vec_push(&pc->forced, f);
}

void ir_pass_ctx_force_on(ir_pass_ctx_t *pc, const char *name) { force(pc, name, true); }
void ir_pass_ctx_force_off(ir_pass_ctx_t *pc, const char *name) { force(pc, name, false); }

/* 1: forced on, -1: forced off, 0: not mentioned. */
static int forced_state(const ir_pass_ctx_t *pc, const char *name) {
    if (!pc || !name) return 0;
    for (uint32_t i = 0; i < pc->forced.len; i++)
        if (strcmp(pc->forced.data[i].name, name) == 0) return pc->forced.data[i].on ? 1 : -1;
    return 0;
}

bool ir_pass_ctx_pass_enabled(const ir_pass_ctx_t *pc, const ir_pass *p) {
    int f = forced_state(pc, p->name);
    if (f) return f > 0;
    return p->opt_level <= ir_pass_ctx_opt_level(pc);
}

static const char *const KIND_NAMES[] = {"bool", "int", "float", "str"};

gr_status ir_pass_ctx_set_config(ir_pass_ctx_t *pc, const char *key, ir_config_value v,
                                 gr_diag *diag) {
    config_builtin();
    int d = config_find(key);
    if (d < 0) return gr_diag_set(diag, GR_ERR_NOT_FOUND, "unknown pass config option '%s'", key);
    ir_config_kind want = g_config.data[d].dflt.kind;
    if (v.kind != want)
        return gr_diag_set(diag, GR_ERR_INVALID, "pass config option '%s' takes a %s, not a %s", key,
                           KIND_NAMES[want], KIND_NAMES[v.kind]);
    config_entry *e = NULL;
    for (uint32_t i = 0; i < pc->config.len; i++)
        if (strcmp(pc->config.data[i].key, key) == 0) e = &pc->config.data[i];
    if (!e) {
        config_entry ne = {gr_xstrdup(key), {0}, NULL};
        gr_vec_push(&pc->config, ne);
        e = &pc->config.data[pc->config.len - 1];
    }
    free(e->str);
    e->str = NULL;
    e->val = v;
    if (v.kind == IR_CONFIG_STR) {
        e->str = gr_xstrdup(v.u.s ? v.u.s : "");
        e->val.u.s = e->str;
    }
    if (strcmp(key, IR_CONFIG_SI_BUILDER) == 0) pc->si_enabled = v.u.b;
    return GR_OK;
}

gr_status ir_pass_ctx_set_config_str(ir_pass_ctx_t *pc, const char *kv, gr_diag *diag) {
    config_builtin();
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return gr_diag_set(diag, GR_ERR_INVALID, "pass config '%s': expected KEY=VALUE", kv);
    char key[256];
    size_t klen = (size_t)(eq - kv);
    if (klen >= sizeof(key)) return gr_diag_set(diag, GR_ERR_INVALID, "pass config key too long");
    memcpy(key, kv, klen);
    key[klen] = 0;
    const char *val = eq + 1;
    int d = config_find(key);
    if (d < 0) return gr_diag_set(diag, GR_ERR_NOT_FOUND, "unknown pass config option '%s'", key);
    ir_config_value v = {.kind = g_config.data[d].dflt.kind};
    char *end = NULL;
    switch (v.kind) {
    case IR_CONFIG_BOOL:
        if (!strcmp(val, "true") || !strcmp(val, "1") || !strcmp(val, "True")) v.u.b = true;
        else if (!strcmp(val, "false") || !strcmp(val, "0") || !strcmp(val, "False")) v.u.b = false;
        else return gr_diag_set(diag, GR_ERR_INVALID, "pass config '%s': '%s' is not a bool", key, val);
        break;
    case IR_CONFIG_INT:
        v.u.i = strtoll(val, &end, 0);
        if (!*val || *end) return gr_diag_set(diag, GR_ERR_INVALID, "pass config '%s': '%s' is not an int", key, val);
        break;
    case IR_CONFIG_FLOAT:
        v.u.f = strtod(val, &end);
        if (!*val || *end) return gr_diag_set(diag, GR_ERR_INVALID, "pass config '%s': '%s' is not a number", key, val);
        break;
    case IR_CONFIG_STR: v.u.s = val; break;
    }
    return ir_pass_ctx_set_config(pc, key, v, diag);
}

static const ir_config_value *config_get(const ir_pass_ctx_t *pc, const char *key, ir_config_kind kind) {
    config_builtin();
    if (pc) {
        for (uint32_t i = 0; i < pc->config.len; i++)
            if (strcmp(pc->config.data[i].key, key) == 0) return &pc->config.data[i].val;
    }
    int d = config_find(key);
    if (d < 0 || g_config.data[d].dflt.kind != kind) return NULL;
    return &g_config.data[d].dflt;
}

bool ir_pass_ctx_config_bool(const ir_pass_ctx_t *pc, const char *key) {
    const ir_config_value *v = config_get(pc, key, IR_CONFIG_BOOL);
    return v ? v->u.b : false;
}
int64_t ir_pass_ctx_config_int(const ir_pass_ctx_t *pc, const char *key) {
    const ir_config_value *v = config_get(pc, key, IR_CONFIG_INT);
    return v ? v->u.i : 0;
}
const char *ir_pass_ctx_config_str(const ir_pass_ctx_t *pc, const char *key) {
    const ir_config_value *v = config_get(pc, key, IR_CONFIG_STR);
    return v ? v->u.s : NULL;
}

static _Thread_local ir_pass_ctx_t *g_current;

ir_pass_ctx_t *ir_pass_ctx_current(void) { return g_current; }

bool ir__si_enabled_slow(void) { return g_current ? g_current->si_enabled : true; }

void ir__pass_ctx_note_remap(ir_pass_ctx_t *pc, const gr_map *remap) {
    if (!pc || !remap) return;
    for (uint32_t i = 0; i < remap->cap; i++)
        if (remap->keys[i]) gr_map_put(&pc->var_notes, remap->keys[i], remap->vals[i]);
}

ir_instrument *ir_pass_ctx_add_instrument(ir_pass_ctx_t *pc, ir_instrument *ins) {
    if (ins) gr_vec_push(&pc->instruments, ins);
    return ins;
}

/* ---- Pass objects ---- */

enum { OWN_DESC = 1u, OWN_LIST = 2u };

ir_pass *ir_pass_new(const ir_pass *tmpl) {
    ir_pass *p = gr_xmalloc(sizeof(*p));
    *p = *tmpl;
    p->owned_ = OWN_DESC;
    return p;
}

ir_pass *ir_pass_sequential_new(const char *name, int opt_level, uint32_t n,
                                const ir_pass *const *passes) {
    ir_pass *p = gr_xcalloc(1, sizeof(*p));
    p->name = name ? name : "Sequential";
    p->kind = IR_PASS_SEQUENTIAL;
    p->opt_level = opt_level;
    p->npasses = n;
    if (n) {
        const ir_pass **list = gr_xmalloc(sizeof(*list) * n);
        memcpy(list, passes, sizeof(*list) * n);
        p->passes = list;
    }
    p->owned_ = OWN_DESC | OWN_LIST;
    return p;
}

void ir_pass_free(ir_pass *p) {
    if (!p || !(p->owned_ & OWN_DESC)) return;
    if (p->user_free) p->user_free(p->user);
    if (p->owned_ & OWN_LIST) free((void *)p->passes);
    free(p);
}

gr_status ir_pass_sequential_from_names(const char *csv, ir_pass **out, gr_diag *diag) {
    *out = NULL;
    GR_VEC(const ir_pass *) list = {0};
    const char *s = csv;
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        while (len && (*s == ' ')) s++, len--;
        while (len && s[len - 1] == ' ') len--;
        if (len) {
            char name[128];
            if (len >= sizeof(name)) {
                gr_vec_free(&list);
                return gr_diag_set(diag, GR_ERR_INVALID, "pass name too long");
            }
            memcpy(name, s, len);
            name[len] = 0;
            const ir_pass *p = ir_pass_find(name);
            if (!p) {
                char known[1024] = "";
                size_t k = 0;
                for (uint32_t i = 0; i < ir_pass_registry_count() && k < sizeof(known) - 64; i++)
                    k += (size_t)snprintf(known + k, sizeof(known) - k, "%s%s", i ? ", " : "",
                                          ir_pass_registry_at(i)->name);
                gr_vec_free(&list);
                return gr_diag_set(diag, GR_ERR_NOT_FOUND, "unknown pass '%s' (known: %s)", name, known);
            }
            gr_vec_push(&list, p);
        }
        s = e ? e + 1 : NULL;
    }
    *out = ir_pass_sequential_new("Sequential", 0, list.len, list.data);
    gr_vec_free(&list);
    return GR_OK;
}

/* ---- Registry ---- */

static GR_VEC(const ir_pass *) g_registry;

static const ir_pass *const *default_list(uint32_t *n);

static void registry_builtin(void) {
    static bool done;
    if (done) return;
    done = true;
    static const ir_pass *const builtins[] = {
        &ir_pass_normalize, &ir_pass_canonicalize_bindings, &ir_pass_dce, &ir_pass_cse,
        &ir_pass_decompose_inference, &ir_pass_fold_bn_conv, &ir_pass_simplify_expr, &ir_pass_fuse_norm_gelu,
        &ir_pass_pool_before_conv1x1, &ir_pass_merge_siblings,
        &ir_pass_to_non_dataflow, &ir_pass_bind_params_attr, &ir_pass_fold_constant,
    };
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        gr_vec_push(&g_registry, builtins[i]);
    gr_vec_push(&g_registry, ir_pass_default_pipeline());
}

void ir_pass_register(const ir_pass *p) {
    registry_builtin();
    for (uint32_t i = 0; i < g_registry.len; i++) {
        if (strcmp(g_registry.data[i]->name, p->name) == 0) {
            g_registry.data[i] = p;
            return;
        }
    }
    gr_vec_push(&g_registry, p);
}

const ir_pass *ir_pass_find(const char *name) {
    registry_builtin();
    for (uint32_t i = 0; i < g_registry.len; i++)
        if (strcmp(g_registry.data[i]->name, name) == 0) return g_registry.data[i];
    return NULL;
}

uint32_t ir_pass_registry_count(void) {
    registry_builtin();
    return g_registry.len;
}

const ir_pass *ir_pass_registry_at(uint32_t i) {
    registry_builtin();
    return i < g_registry.len ? g_registry.data[i] : NULL;
}

/* The inference pipeline: fold batch norms into convs before decomposing the rest, evaluate
 * what became constant, simplify, fuse exported layer norms and erf GELUs back into one op,
 * pool before pointwise convs (biases are constants by then), then clean up. */
static const ir_pass *const DEFAULT_PASSES[] = {
    &ir_pass_normalize,     &ir_pass_fold_bn_conv, &ir_pass_decompose_inference,
    &ir_pass_fold_constant, &ir_pass_simplify_expr, &ir_pass_fuse_norm_gelu,
    &ir_pass_pool_before_conv1x1, &ir_pass_cse, &ir_pass_merge_siblings, &ir_pass_canonicalize_bindings,
    &ir_pass_dce,
};

static const ir_pass *const *default_list(uint32_t *n) {
    *n = sizeof(DEFAULT_PASSES) / sizeof(DEFAULT_PASSES[0]);
    return DEFAULT_PASSES;
}

const ir_pass *ir_pass_default_pipeline(void) {
    static ir_pass seq;
    if (!seq.name) {
        uint32_t n;
        seq.passes = default_list(&n);
        seq.npasses = n;
        seq.kind = IR_PASS_SEQUENTIAL;
        seq.opt_level = 0;
        seq.name = "default";
    }
    return &seq;
}

/* ---- Running ---- */

static bool is_external(const ir_func *f) { return ir_attrs_get(f->attrs, "Codegen") != NULL; }

/* Rewrites each dataflow block of a seq (and of seqs nested in if branches and bindings). */
static gr_status blocks_in_expr(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                                ir_expr *e, ir_expr **out, gr_diag *diag);

static gr_status blocks_in_seq(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                               ir_seq *seq, ir_expr **out, gr_diag *diag) {
    *out = (ir_expr *)seq;
    const ir_block **nb = NULL;
    for (uint32_t i = 0; i < seq->nblocks; i++) {
        const ir_block *blk = seq->blocks[i];
        const ir_block *res = blk;
        if (blk->dataflow) {
            gr_status st = p->block_fn(p, pc, mod, blk, &res, diag);
            if (st != GR_OK) {
                free(nb);
                return st;
            }
        } else {
            /* Plain blocks may hold ifs whose branches have dataflow blocks. */
            ir_binding *nbind = NULL;
            for (uint32_t j = 0; j < blk->n; j++) {
                ir_expr *v = blk->bindings[j].value, *nv = v;
                if (v->kind == IR_IF || v->kind == IR_SEQ) {
                    gr_status st = blocks_in_expr(p, pc, mod, v, &nv, diag);
                    if (st != GR_OK) {
                        free(nbind);
                        free(nb);
                        return st;
                    }
                }
                if (nv != v && !nbind) {
                    nbind = gr_xmalloc(sizeof(*nbind) * blk->n);
                    memcpy(nbind, blk->bindings, sizeof(*nbind) * blk->n);
                }
                if (nbind) nbind[j].value = nv;
            }
            if (nbind) {
                res = ir_block_new(mod->ctx, false, blk->n, nbind);
                free(nbind);
            }
        }
        if (res != blk && !nb) {
            nb = gr_xmalloc(sizeof(*nb) * seq->nblocks);
            memcpy(nb, seq->blocks, sizeof(*nb) * seq->nblocks);
        }
        if (nb) nb[i] = res;
    }
    if (nb) {
        ir_seq *ns = ir_seq_new(mod->ctx, seq->nblocks, nb, seq->body, seq->base.span);
        free(nb);
        if (seq->base.sinfo) ir_expr_set_sinfo(&ns->base, seq->base.sinfo);
        *out = (ir_expr *)ns;
    }
    return GR_OK;
}

static gr_status blocks_in_expr(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                                ir_expr *e, ir_expr **out, gr_diag *diag) {
    *out = e;
    if (e->kind == IR_SEQ) return blocks_in_seq(p, pc, mod, (ir_seq *)e, out, diag);
    if (e->kind == IR_IF) {
        ir_if *f = (ir_if *)e;
        ir_expr *t = f->then_branch, *el = f->else_branch;
        gr_status st = blocks_in_expr(p, pc, mod, f->then_branch, &t, diag);
        if (st == GR_OK) st = blocks_in_expr(p, pc, mod, f->else_branch, &el, diag);
        if (st != GR_OK) return st;
        if (t != f->then_branch || el != f->else_branch) {
            ir_if *nf = ir_if_new(mod->ctx, f->cond, t, el, e->span);
            if (e->sinfo) ir_expr_set_sinfo(&nf->base, e->sinfo);
            *out = (ir_expr *)nf;
        }
    }
    return GR_OK;
}

/* Runs a function-level pass over every non-external function. */
static gr_status run_per_func(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                              ir_module **out, gr_diag *diag) {
    ir_module *res = NULL;
    for (uint32_t i = 0; i < mod->nfuncs; i++) {
        if (mod->funcs[i]->kind != IR_FUNC) continue;
        ir_func *f = (ir_func *)mod->funcs[i];
        if (is_external(f)) continue;
        ir_func *nf = f;
        gr_status st;
        bool track = ir_attrs_get(f->attrs, IR_VAR_MAP_ATTR) != NULL;
        if (track) gr_map_clear(&pc->var_notes);
        if (p->kind == IR_PASS_FUNCTION) {
            st = p->func_fn(p, pc, mod, mod->gvars[i]->name, f, &nf, diag);
        } else {
            ir_expr *body = f->body;
            st = blocks_in_expr(p, pc, mod, f->body, &body, diag);
            if (st == GR_OK && body != f->body) {
                nf = ir_func_new(mod->ctx, f->nparams, f->params, body, f->ret_sinfo, f->attrs,
                                 f->base.span);
                /* Block passes keep the exported vars, so the function's type is unchanged. */
                if (f->base.sinfo) ir_expr_set_sinfo(&nf->base, f->base.sinfo);
            }
        }
        if (st != GR_OK) {
            gr_diag_set(diag, st, "in function '%s'", mod->gvars[i]->name);
            return st;
        }
        if (nf != f && track) nf = ir_var_map_update(mod->ctx, f, nf, &pc->var_notes);
        if (nf != f) {
            if (!res) res = ir_module_copy(mod);
            res->funcs[i] = (ir_expr *)nf;
        }
    }
    *out = res ? res : (ir_module *)(uintptr_t)mod;
    return GR_OK;
}

static gr_status run_pass(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                          ir_module **out, int depth, gr_diag *diag);

static gr_status run_required(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                              ir_module **out, int depth, gr_diag *diag) {
    *out = (ir_module *)(uintptr_t)mod;
    if (!p->required) return GR_OK;
    if (depth > 16)
        return gr_diag_set(diag, GR_ERR_INVALID, "pass '%s': required passes nest too deep (a cycle?)",
                           p->name);
    for (const char *const *r = p->required; *r; r++) {
        const ir_pass *q = ir_pass_find(*r);
        if (!q)
            return gr_diag_set(diag, GR_ERR_NOT_FOUND, "pass '%s' requires unknown pass '%s'", p->name, *r);
        if (forced_state(pc, q->name) < 0)
            return gr_diag_set(diag, GR_ERR_INVALID, "pass '%s' requires pass '%s', which is disabled",
                               p->name, q->name);
        ir_module *m2 = NULL;
        gr_status st = run_required(q, pc, *out, &m2, depth + 1, diag);
        if (st == GR_OK) st = run_pass(q, pc, m2, out, depth + 1, diag);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

/* Runs one pass with instruments (no enablement check: callers decide). */
static gr_status run_pass(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod,
                          ir_module **out, int depth, gr_diag *diag) {
    *out = (ir_module *)(uintptr_t)mod;
    bool leaf = p->kind != IR_PASS_SEQUENTIAL;
    if (leaf && pc) {
        for (uint32_t i = 0; i < pc->instruments.len; i++) {
            ir_instrument *ins = pc->instruments.data[i];
            if (ins->should_run && !ins->should_run(ins, p, mod)) return GR_OK;
        }
        for (uint32_t i = 0; i < pc->instruments.len; i++) {
            ir_instrument *ins = pc->instruments.data[i];
            if (ins->before) ins->before(ins, p, mod);
        }
    }
    gr_status st = GR_OK;
    ir_module *res = (ir_module *)(uintptr_t)mod;
    switch (p->kind) {
    case IR_PASS_MODULE:
        st = p->module_fn(p, pc, mod, &res, diag);
        break;
    case IR_PASS_FUNCTION:
    case IR_PASS_DATAFLOW:
        st = run_per_func(p, pc, mod, &res, diag);
        break;
    case IR_PASS_SEQUENTIAL:
        for (uint32_t i = 0; i < p->npasses && st == GR_OK; i++) {
            const ir_pass *q = p->passes[i];
            if (!ir_pass_ctx_pass_enabled(pc, q)) continue;
            ir_module *m2 = NULL;
            st = run_required(q, pc, res, &m2, depth + 1, diag);
            if (st == GR_OK) st = run_pass(q, pc, m2, &res, depth + 1, diag);
        }
        break;
    }
    if (st != GR_OK) {
        if (leaf) gr_diag_set(diag, st, "pass '%s' failed", p->name);
        return st;
    }
    if (!res) return gr_diag_set(diag, GR_ERR_INVALID, "pass '%s' returned no module", p->name);
    if (leaf && pc) {
        for (uint32_t i = 0; i < pc->instruments.len && st == GR_OK; i++) {
            ir_instrument *ins = pc->instruments.data[i];
            if (ins->after) st = ins->after(ins, p, res, diag);
        }
        if (st != GR_OK) return st;
    }
    *out = res;
    return GR_OK;
}

gr_status ir_pass_run(const ir_pass *p, ir_pass_ctx_t *pc, const ir_module *mod, ir_module **out,
                      gr_diag *diag) {
    *out = NULL;
    ir_pass_ctx_t *own = NULL;
    if (!pc) pc = own = ir_pass_ctx_new();
    ir_pass_ctx_t *saved = g_current;
    g_current = pc;
    gr_status st = GR_OK;
    ir_module *res = (ir_module *)(uintptr_t)mod;
    if (ir_pass_ctx_pass_enabled(pc, p)) {
        ir_module *m2 = NULL;
        st = run_required(p, pc, mod, &m2, 0, diag);
        if (st == GR_OK) st = run_pass(p, pc, m2, &res, 0, diag);
    }
    g_current = saved;
    ir_pass_ctx_free(own);
    if (st == GR_OK) *out = res;
    return st;
}
