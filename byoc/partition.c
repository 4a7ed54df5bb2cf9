/* The partition driver (FuseOpsByPattern + MergeCompositeFunctions + RunCodegen for named
 * backends) and byoc patterns from a pattern file. */
#include <stdio.h>
#include <string.h>

#include "byoc/byoc_impl.h"
#include "patterns/pattern_text.h"

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

gr_status byoc_patterns_from_table(ir_ctx_t *ctx, const pat_table *t, const byoc_options *options, byoc_pattern **out,
                                   gr_diag *diag) {
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
                if (byoc_backend_at(b)->get_patterns(ctx, options, &bp, &nb, diag)) {
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
        if ((st = b->get_patterns(ctx, opts->options, &bp, &nb, diag))) break;
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
    if ((st = byoc_run_codegen_ex(ctx, cur, opts->options, opts->release_consts, opts->defer_prepare, &next, diag))) return st;
    *out = next;
    return GR_OK;
}

gr_status byoc_partition_for_backends(ir_ctx_t *ctx, const ir_module *m, const char *const *names,
                                      uint32_t n, ir_module **out, gr_diag *diag) {
    return byoc_partition(ctx, m, names, n, NULL, out, diag);
}
