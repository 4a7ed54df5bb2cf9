/* Seed corpora for the fuzz targets that read what graft itself writes (run by scripts/fuzz.sh,
 * output under build/, never in git):
 *
 *     seeds OUTDIR MODULE.relax...
 *
 * OUTDIR/artifact:   the artifact of each module with host code only, with json regions and
 *                    with dnnl regions (graft_model_build)
 * OUTDIR/json_graph: the graph text of every json / dnnl region of those modules
 * OUTDIR/pattern:    every backend's pattern table, printed (pat_print_table_str)
 * OUTDIR/npy:        .npy files of several dtypes and ranks (rt_npy_save) */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "ir/text/parser.h"
#include "patterns/pattern_text.h"
#include "runtime/module.h"
#include "runtime/npy.h"

static const char *out_dir;
static unsigned nfiles;

static void write_file(const char *kind, const char *ext, const void *data, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_dir, kind);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed_%04u.%s", out_dir, kind, nfiles++, ext);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "seeds: cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

/* The graph texts of the JSON-graph modules of m. */
static void graphs_of(const ir_module *m) {
    for (uint32_t i = 0; i < rt_module_count(m); i++) {
        rt_module *mod = rt_module_at(m, i);
        uint8_t *blob;
        size_t len;
        gr_diag d;
        gr_diag_clear(&d);
        if (!mod || !mod->iface->serialize || mod->iface->serialize(mod, &blob, &len, &d)) continue;
        json_t *root = json_loadb((const char *)blob, len, 0, NULL);
        json_t *gs = json_object_get(root, "graphs");
        for (size_t k = 0; k < json_array_size(gs); k++) {
            json_t *t = json_object_get(json_array_get(gs, k), "graph");
            if (json_is_string(t)) write_file("json_graph", "json", json_string_value(t), json_string_length(t));
        }
        json_decref(root);
        free(blob);
    }
}

static void module_seeds(const char *path) {
    static const char *const backends[] = {NULL, "json", "dnnl"};
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL, *part = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        if (ir_parse_file(ctx, path, &m, &d) == GR_OK &&
            (!backends[b] || byoc_partition_for_backends(ctx, m, &backends[b], 1, &part, &d) == GR_OK)) {
            const ir_module *use = part ? part : m;
            uint8_t *buf;
            size_t len;
            if (graft_model_build(use, &buf, &len, &d) == GR_OK) {
                if (len < (1u << 20)) write_file("artifact", "graft", buf, len);
                free(buf);
            }
            graphs_of(use);
        }
        ir_ctx_free(ctx);
    }
}

static void pattern_seeds(void) {
    for (uint32_t i = 0; i < byoc_backend_count(); i++) {
        const byoc_backend *be = byoc_backend_at(i);
        ir_ctx_t *ctx = ir_ctx_new();
        const byoc_pattern *pats;
        uint32_t n;
        gr_diag d;
        gr_diag_clear(&d);
        if (be->get_patterns && be->get_patterns(ctx, NULL, &pats, &n, &d) == GR_OK) {
            pat_table *all = pat_table_new();
            for (uint32_t k = 0; k < n; k++) {
                pat_table *one = pat_table_new();
                pat_table_add(ctx, one, pats[k].name, pats[k].pattern);
                char *s = pat_print_table_str(one, &d);
                if (s) pat_table_add(ctx, all, pats[k].name, pats[k].pattern);
                free(s);
                pat_table_free(one);
            }
            char *s = pat_print_table_str(all, &d);
            if (s) write_file("pattern", "relax", s, strlen(s));
            free(s);
            pat_table_free(all);
        }
        ir_ctx_free(ctx);
    }
}

static void npy_seeds(void) {
    static const struct { const char *dtype; int32_t ndim; int64_t shape[4]; } ts[] = {
        {"float32", 2, {2, 3}}, {"float64", 4, {1, 2, 2, 1}}, {"int64", 0, {0}}, {"int32", 1, {5}},
        {"uint8", 3, {2, 1, 3}}, {"bool", 1, {4}}, {"float16", 2, {3, 0}}, {"int8", 1, {7}},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        ir_dtype dt;
        if (!ir_dtype_parse(ts[i].dtype, &dt)) continue;
        rt_tensor *t = rt_tensor_new(dt, ts[i].ndim, ts[i].shape);
        uint8_t *p = rt_tensor_data(t);
        for (size_t k = 0; k < rt_tensor_nbytes(t); k++) p[k] = (uint8_t)(k * 37 % (dt.bits == 1 ? 2 : 61));
        char path[4096];
        snprintf(path, sizeof path, "%s/npy", out_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/npy/seed_%04u.npy", out_dir, nfiles++);
        gr_diag d;
        gr_diag_clear(&d);
        if (rt_npy_save(path, t, &d) != GR_OK) {
            gr_diag_print(&d);
            exit(1);
        }
        rt_tensor_release(t);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: seeds OUTDIR [MODULE.relax]...\n");
        return 2;
    }
    out_dir = argv[1];
    mkdir(out_dir, 0755);
    for (int i = 2; i < argc; i++) module_seeds(argv[i]);
    pattern_seeds();
    npy_seeds();
    printf("seeds: %u files in %s\n", nfiles, out_dir);
    return 0;
}
