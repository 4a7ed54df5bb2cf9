/* The backend registry, the json backend's pattern table, and the partition driver. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "byoc/byoc_impl.h"
#include "codegen/dnnl/dnnl_codegen.h"
#include "codegen/json/json_codegen.h"
#include "ir/op.h"
#include "patterns/pattern_text.h"
#include "runtime/json_runtime.h"
#include "runtime/kernels.h"

/* ---- registry ---- */

#define MAX_BACKENDS 32
static const byoc_backend *g_backends[MAX_BACKENDS];
static uint32_t g_nbackends;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Built-in backends: json, and dnnl (codegen/dnnl) once that folder is built. */
static void registry_init(void) {
    g_backends[g_nbackends++] = &byoc_json_backend;
    g_backends[g_nbackends++] = &byoc_dnnl_backend;
}

void byoc_backend_register(const byoc_backend *b) {
    pthread_once(&g_once, registry_init);
    for (uint32_t i = 0; i < g_nbackends; i++)
        if (strcmp(g_backends[i]->name, b->name) == 0) {
            g_backends[i] = b;
            return;
        }
    if (g_nbackends < MAX_BACKENDS) g_backends[g_nbackends++] = b;
}

const byoc_backend *byoc_backend_find(const char *name) {
    pthread_once(&g_once, registry_init);
    for (uint32_t i = 0; i < g_nbackends; i++)
        if (strcmp(g_backends[i]->name, name) == 0) return g_backends[i];
    return NULL;
}

uint32_t byoc_backend_count(void) {
    pthread_once(&g_once, registry_init);
    return g_nbackends;
}

const byoc_backend *byoc_backend_at(uint32_t i) {
    pthread_once(&g_once, registry_init);
    return i < g_nbackends ? g_backends[i] : NULL;
}

/* ---- the json backend ---- */

/* Known dtype, rank and dims; a dim may be symbolic (the JSON graph records its expression and
 * the runtime specializes the graph to each call's shapes). */
static bool static_tensor(const ir_sinfo *s) {
    return s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && s->ndim <= RT_MAX_NDIM && !ir_dtype_is_void(s->dtype) &&
           ir_dtype_name(s->dtype) && (s->ndim == 0 || s->dims);
}

static bool static_result(const ir_sinfo *s) {
    if (s && s->kind == IR_SINFO_TUPLE) {
        for (uint32_t i = 0; i < s->n; i++)
            if (!static_tensor(s->fields[i])) return false;
        return s->n > 0;
    }
    return static_tensor(s);
}

static const char *check_arg(ir_ctx_t *ctx, const ir_expr *a, uint32_t i) {
    switch (a->kind) {
    case IR_VAR:
    case IR_DFVAR:
    case IR_CONST:
        return static_tensor(a->sinfo) ? NULL : ir_internf(ctx, "argument %u is not a tensor of known dtype and rank", i);
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(a, ir_tuple);
        for (uint32_t k = 0; k < t->n; k++) {
            const ir_expr *f = t->fields[k];
            if (f->kind == IR_TUPLE) return ir_internf(ctx, "argument %u holds a nested tuple", i);
            const char *r = check_arg(ctx, f, i);
            if (r) return r;
        }
        return NULL;
    }
    case IR_SHAPE:
        return NULL; /* symbolic dims are written as expressions */
    case IR_PRIMVAL:
        return IR_AS(a, ir_primval)->value && !ir_prim_is_int(IR_AS(a, ir_primval)->value, NULL)
                   ? ir_internf(ctx, "argument %u is a symbolic value", i)
                   : NULL;
    case IR_STR:
        return NULL;
    default:
        return ir_internf(ctx, "argument %u is a %s", i, ir_expr_kind_name((ir_expr_kind)a->kind));
    }
}

static bool json_check(const pat_check_ctx *c, const char **reason, void *user) {
    (void)user;
    const ir_expr *e = c->matched_expr;
    if (!e || e->kind != IR_CALL) {
        *reason = "not a call";
        return false;
    }
    const ir_call *call = IR_AS(e, ir_call);
    if (!static_result(e->sinfo)) {
        *reason = "result is not a tensor of known dtype and rank";
        return false;
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        const char *r = check_arg(c->ctx, call->args[i], i);
        if (r) {
            *reason = r;
            return false;
        }
    }
    return true;
}

/* The table lives in ctx's arena (patterns are arena nodes of ctx). */
static gr_status json_patterns(ir_ctx_t *ctx, const byoc_pattern **out, uint32_t *n, gr_diag *diag) {
    (void)diag;
    uint32_t nops = ir_op_def_count(), k = 0;
    byoc_pattern *pats = IR_NEW_ARRAY(ctx, byoc_pattern, nops + 1);
    for (uint32_t i = 0; i < nops; i++) {
        const ir_op_def *def = ir_op_def_at(i);
        if ((def->flags & (IR_OPF_CALL_LIKE | IR_OPF_IMPURE)) || !rt_kernel_find(def)) continue;
        pat_t *p = pat_call_varargs(ctx, pat_op(ctx, def->name), 0, NULL);
        if (!p) continue;
        const char *short_name = strncmp(def->name, "relax.", 6) == 0 ? def->name + 6 : def->name;
        pats[k++] = (byoc_pattern){ir_internf(ctx, "json.%s", short_name), p, json_check, NULL};
    }
    *out = pats;
    *n = k;
    return GR_OK;
}

static gr_status json_load(const uint8_t *buf, size_t len, struct rt_tensor *(*consts)(const char *name, void *user),
                           void *user, rt_module **out, gr_diag *diag) {
    return rt_json_module_load(buf, len, &rt_json_reference_engine, consts, user, out, diag);
}

const byoc_backend byoc_json_backend = {
    "json", "JSON graph runtime running the reference kernels (one pattern per op of the op table)",
    json_patterns, json_cg_compile, json_load, "json"};

/* ---- pattern files ---- */

typedef struct file_check {
    const pat_table_entry *entry;
    uint32_t n;
    const byoc_pattern *named[];   /* backend patterns whose checks apply */
} file_check;

static bool run_file_check(const pat_check_ctx *c, const char **reason, void *user) {
    const file_check *fc = user;
    if (!pat_table_entry_check(c, reason, (void *)fc->entry)) return false;
    for (uint32_t i = 0; i < fc->n; i++)
        if (fc->named[i]->check && !fc->named[i]->check(c, reason, fc->named[i]->check_user)) return false;
    return true;
}

gr_status byoc_patterns_from_table(ir_ctx_t *ctx, const pat_table *t, byoc_pattern **out, gr_diag *diag) {
    byoc_pattern *ps = gr_xcalloc(t->n + 1, sizeof(*ps));
    for (uint32_t i = 0; i < t->n; i++) {
        const pat_table_entry *e = &t->entries[i];
        ps[i] = (byoc_pattern){e->name, e->pattern, NULL, NULL};
        if (!e->nonly && !e->nnamed) continue;
        file_check *fc = ir_alloc(ctx, sizeof(file_check) + sizeof(byoc_pattern *) * (e->nnamed + 1));
        fc->entry = e;
        fc->n = e->nnamed;
        for (uint32_t k = 0; k < e->nnamed; k++) {
            const byoc_pattern *found = NULL;
            for (uint32_t b = 0; b < byoc_backend_count() && !found; b++) {
                const byoc_pattern *bp = NULL;
                uint32_t nb = 0;
                if (byoc_backend_at(b)->get_patterns(ctx, &bp, &nb, diag)) {
                    free(ps);
                    return diag ? diag->code : GR_ERR_INVALID;
                }
                for (uint32_t j = 0; j < nb && !found; j++)
                    if (strcmp(bp[j].name, e->named[k]) == 0) found = &bp[j];
            }
            if (!found) {
                free(ps);
                return gr_diag_set(diag, GR_ERR_NOT_FOUND,
                                   "pattern '%s': [\"check\", \"%s\"] names no pattern of a backend "
                                   "(see graft backends)", e->name, e->named[k]);
            }
            fc->named[k] = found;
        }
        ps[i].check = run_file_check;
        ps[i].check_user = fc;
    }
    *out = ps;
    return GR_OK;
}

/* ---- driver ---- */

gr_status byoc_partition(ir_ctx_t *ctx, const ir_module *m, const char *const *names, uint32_t n,
                         byoc_partition_opts *opts, ir_module **out, gr_diag *diag) {
    *out = (ir_module *)m;
    byoc_partition_opts dflt = {0};
    if (!opts) opts = &dflt;
    GR_VEC(byoc_pattern) pats = {0};
    for (uint32_t i = 0; i < opts->nextra; i++) gr_vec_push(&pats, opts->extra[i]);
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < n && !st; i++) {
        const byoc_backend *b = byoc_backend_find(names[i]);
        if (!b) {
            char known[512] = "";
            for (uint32_t k = 0; k < byoc_backend_count(); k++) {
                size_t len = strlen(known);
                snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "", byoc_backend_at(k)->name);
            }
            st = gr_diag_set(diag, GR_ERR_NOT_FOUND, "unknown backend '%s' (known: %s)", names[i], known);
            break;
        }
        const byoc_pattern *bp = NULL;
        uint32_t nb = 0;
        if ((st = b->get_patterns(ctx, &bp, &nb, diag))) break;
        for (uint32_t k = 0; k < nb; k++) gr_vec_push(&pats, bp[k]);
    }
    ir_module *cur = (ir_module *)m, *next = NULL;
    byoc_fuse_opts fo = {true, false, 0, NULL};
    if (opts->fuse) fo = *opts->fuse;
    if (!st) st = byoc_fuse_ops_by_pattern(ctx, cur, pats.data, pats.len, &fo, opts->notes, &next, diag);
    gr_vec_free(&pats);
    if (st) return st;
    opts->after_fuse = cur = next;
    if (opts->stop_after == BYOC_STOP_FUSE) {
        *out = cur;
        return GR_OK;
    }
    if (!fo.annotate_codegen) {
        if ((st = byoc_merge_composite_functions(ctx, cur, opts->notes, &next, diag))) return st;
        opts->after_merge = cur = next;
    }
    if (opts->stop_after == BYOC_STOP_MERGE) {
        *out = cur;
        return GR_OK;
    }
    if ((st = byoc_run_codegen(ctx, cur, NULL, &next, diag))) return st;
    *out = next;
    return GR_OK;
}

gr_status byoc_partition_for_backends(ir_ctx_t *ctx, const ir_module *m, const char *const *names,
                                      uint32_t n, ir_module **out, gr_diag *diag) {
    return byoc_partition(ctx, m, names, n, NULL, out, diag);
}
