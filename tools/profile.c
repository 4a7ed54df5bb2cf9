/* graft run --profile / --profile-json (tools/profile.h). */
#include "tools/profile.h"

#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl.h"
#include "runtime/json/json_runtime.h"
#include "tools/cli.h"

void prof_init(prof_state *ps, const graft_model *gm) {
    memset(ps, 0, sizeof *ps);
    ps->gm = gm;
    ps->first = true;
}

bool prof_open_trace(prof_state *ps, const char *json) {
    ps->trace = fopen(json, "w");
    if (!ps->trace) {
        fprintf(stderr, "error: %s: cannot open for writing\n", json);
        return false;
    }
    fputc('[', ps->trace);
    ps->origin_us = cli_now_ms() * 1e3;
    return true;
}

static const char *region_layers(const graft_model *gm, const char *name) {
    for (uint32_t r = 0; gm && r < graft_model_num_regions(gm); r++) {
        const char *n, *l;
        graft_model_region(gm, r, &n, NULL, &l);
        if (strcmp(n, name) == 0) return l;
    }
    return "";
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void row_add(prof_state *ps, prof_row *row, uint64_t ns) {
    row->ns += ns;
    row->count++;
    if (row->per_run.len && row->last_run == ps->run) {
        row->per_run.data[row->per_run.len - 1] += ns;
    } else {
        gr_vec_push(&row->per_run, ns);
        row->last_run = ps->run;
    }
}

/* a complete event ("ph": "X") ending now */
static void trace_event(prof_state *ps, const char *cat, const char *name, uint64_t ns) {
    double end_us = cli_now_ms() * 1e3 - ps->origin_us;
    fprintf(ps->trace, "%s\n{\"cat\":\"%s\",\"pid\":0,\"tid\":0,\"dur\":%.3f,\"ts\":%.3f,\"ph\":\"X\",\"name\":",
            ps->first ? "" : ",", cat, (double)ns / 1e3, end_us - (double)ns / 1e3);
    ps->first = false;
    json_str(ps->trace, name);
}

void prof_on_event(const rt_exec_event *ev, void *user) {
    prof_state *ps = user;
    if (strcmp(ev->kind, "other") == 0) return;
    /* reference ops aggregate per op and layer list, host kernels and externs per symbol */
    char layers[512] = "";
    for (uint32_t i = 0; ev->span && i < ev->span->n; i++) {
        size_t n = strlen(layers);
        snprintf(layers + n, sizeof layers - n, "%s%s", i ? "," : "", ev->span->locs[i].source);
    }
    uint64_t ns = ev->ns;
    if (strcmp(ev->kind, "extern") == 0) { /* its prepare has a row of its own */
        ns = ns > ps->pending_prep ? ns - ps->pending_prep : 0;
        ps->pending_prep = 0;
    }
    prof_row *row = NULL;
    for (uint32_t i = 0; i < ps->rows.len && !row; i++)
        if (ps->rows.data[i].name == ev->name && strcmp(ps->rows.data[i].layers, layers) == 0)
            row = &ps->rows.data[i];
    if (!row) {
        prof_row r;
        memset(&r, 0, sizeof r);
        r.kind = ev->kind;
        r.name = ev->name;
        r.layers = gr_xstrdup(layers);
        gr_vec_push(&ps->rows, r);
        row = &ps->rows.data[ps->rows.len - 1];
    }
    row_add(ps, row, ns);
    if (ps->trace) {
        trace_event(ps, "Node", ev->name, ns);
        fprintf(ps->trace, ",\"args\":{\"op_name\":");
        json_str(ps->trace, ev->kind);
        fprintf(ps->trace, ",\"var\":");
        json_str(ps->trace, ev->var ? ev->var : "");
        fprintf(ps->trace, ",\"layers\":");
        json_str(ps->trace, layers);
        fprintf(ps->trace, ",\"run\":\"%u\"}}", ps->run);
    }
}

/* One primitive (oneDNN): a row per (region, index), under its region's row. */
void prof_on_prim(const rt_prim_event *ev, void *user) {
    prof_state *ps = user;
    prof_row *row = NULL;
    for (uint32_t i = 0; i < ps->prims.len && !row; i++)
        if (ps->prims.data[i].index == ev->index && strcmp(ps->prims.data[i].name, ev->region) == 0)
            row = &ps->prims.data[i];
    if (!row) {
        char layers[1024] = "";
        for (uint32_t i = 0; i < ev->info->nlayers; i++) {
            size_t n = strlen(layers);
            snprintf(layers + n, sizeof layers - n, "%s%s", i ? "," : "", ev->info->layers[i]);
        }
        prof_row r;
        memset(&r, 0, sizeof r);
        r.kind = "prim";
        r.name = gr_xstrdup(ev->region);
        r.layers = gr_xstrdup(layers);
        r.index = ev->index;
        r.pkind = ev->info->kind;
        r.impl = gr_xstrdup(ev->info->impl);
        gr_vec_push(&ps->prims, r);
        row = &ps->prims.data[ps->prims.len - 1];
    }
    row_add(ps, row, ev->ns);
    if (ps->trace) {
        char name[160];
        snprintf(name, sizeof name, "%s %s", row->pkind, row->impl);
        trace_event(ps, "Primitive", name, ev->ns);
        fprintf(ps->trace, ",\"args\":{\"region\":");
        json_str(ps->trace, ev->region);
        fprintf(ps->trace, ",\"index\":\"%u\",\"impl\":", ev->index);
        json_str(ps->trace, row->impl);
        fprintf(ps->trace, ",\"layers\":");
        json_str(ps->trace, row->layers);
        if (ev->info->ref_reason) {
            fprintf(ps->trace, ",\"ref_reason\":");
            json_str(ps->trace, ev->info->ref_reason);
        }
        fprintf(ps->trace, ",\"run\":\"%u\"}}", ps->run);
    }
}

void prof_on_prepare(const char *symbol, const char *engine, uint64_t ns, void *user) {
    prof_state *ps = user;
    (void)engine;
    ps->pending_prep += ns;
    const char *name = NULL;
    for (uint32_t i = 0; i < ps->names.len && !name; i++)
        if (!strcmp(ps->names.data[i], symbol)) name = ps->names.data[i];
    if (!name) {
        gr_vec_push(&ps->names, gr_xstrdup(symbol));
        name = ps->names.data[ps->names.len - 1];
    }
    rt_exec_event ev = {"prep", name, "", NULL, ns};
    prof_on_event(&ev, ps);
}

static int cmp_row(const void *a, const void *b) {
    const prof_row *x = a, *y = b;
    return (x->ns < y->ns) - (x->ns > y->ns);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median of a row's per-run times: a VM's occasional page-fault storm (tens of ms on one run)
 * moves the mean, not the median. */
static double row_median_ms(prof_row *r) {
    uint32_t n = r->per_run.len;
    if (!n) return 0;
    qsort(r->per_run.data, n, sizeof(uint64_t), cmp_u64);
    double m = n % 2 ? (double)r->per_run.data[n / 2]
                     : ((double)r->per_run.data[n / 2 - 1] + (double)r->per_run.data[n / 2]) / 2;
    return m / 1e6;
}

void prof_print(prof_state *ps, uint32_t runs) {
    uint64_t total = 0;
    uint32_t nr = runs ? runs : 1;
    for (uint32_t i = 0; i < ps->rows.len; i++) total += ps->rows.data[i].ns;
    /* (qsort's array must not be NULL, even empty) */
    if (ps->rows.len) qsort(ps->rows.data, ps->rows.len, sizeof(prof_row), cmp_row);
    if (ps->prims.len) qsort(ps->prims.data, ps->prims.len, sizeof(prof_row), cmp_row);
    fprintf(stderr, "profile (%u run%s, %.3f ms per run):\n", runs, runs == 1 ? "" : "s", (double)total / 1e6 / nr);
    fprintf(stderr, "  %9s %9s %6s  %-6s %-40s %s\n", "ms/run", "median", "%", "kind", "region", "layers");
    for (uint32_t i = 0; i < ps->rows.len; i++) {
        prof_row *r = &ps->rows.data[i];
        const char *layers = r->layers[0] ? r->layers : region_layers(ps->gm, r->name);
        /* long layer lists (whole BYOC regions) are cut; the trace JSON keeps them whole */
        int cut = (int)strlen(layers) > 160 ? 160 : (int)strlen(layers);
        fprintf(stderr, "  %9.3f %9.3f %5.1f%%  %-6s %-40.120s %.*s%s\n", (double)r->ns / 1e6 / nr, row_median_ms(r),
                total ? 100.0 * (double)r->ns / (double)total : 0.0, r->kind, r->name, cut, layers,
                layers[cut] ? "..." : "");
        /* a oneDNN region: its primitives, slowest first, with their implementations; the
         * region's time includes waiting for each primitive while profiling */
        for (uint32_t j = 0; j < ps->prims.len; j++) {
            prof_row *p = &ps->prims.data[j];
            if (strcmp(p->name, r->name) != 0 || strcmp(r->kind, "extern") != 0) continue;
            int pc = (int)strlen(p->layers) > 120 ? 120 : (int)strlen(p->layers);
            char what[200];
            snprintf(what, sizeof what, "#%u %s %s", p->index, p->pkind, p->impl);
            fprintf(stderr, "    %9.3f %9.3f %5.1f%%  %-4s %-40s %.*s%s\n", (double)p->ns / 1e6 / nr, row_median_ms(p),
                    total ? 100.0 * (double)p->ns / (double)total : 0.0, "prim", what, pc, p->layers,
                    p->layers[pc] ? "..." : "");
        }
    }
}

static void rows_free(prof_row *rows, uint32_t n, bool prims) {
    for (uint32_t i = 0; i < n; i++) {
        free((char *)rows[i].layers);
        gr_vec_free(&rows[i].per_run);
        if (prims) {
            free((char *)rows[i].name);
            free((char *)rows[i].impl);
        }
    }
}

bool prof_finish(prof_state *ps) {
    bool ok = true;
    if (ps->trace) {
        fputs("\n]\n", ps->trace);
        ok = fclose(ps->trace) == 0;
        ps->trace = NULL;
    }
    rows_free(ps->rows.data, ps->rows.len, false);
    rows_free(ps->prims.data, ps->prims.len, true);
    gr_vec_free(&ps->rows);
    gr_vec_free(&ps->prims);
    for (uint32_t i = 0; i < ps->names.len; i++) free(ps->names.data[i]);
    gr_vec_free(&ps->names);
    return ok;
}
