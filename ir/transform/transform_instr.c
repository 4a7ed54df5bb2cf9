/* Built-in pass instruments: timing, IR dumps, snapshots and well-formedness checks. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ir/text/printer.h"
#include "ir/transform/transform.h"
#include "ir/wellformed.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- Timing ---- */

typedef struct timing_rec {
    const char *name;
    double seconds;
} timing_rec;

typedef struct timing_state {
    ir_instrument ins;
    double start;
    GR_VEC(timing_rec) recs;
} timing_state;

static void timing_before(ir_instrument *ins, const ir_pass *p, const ir_module *m) {
    (void)p, (void)m;
    ((timing_state *)ins)->start = now_seconds();
}

static gr_status timing_after(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    (void)m, (void)d;
    timing_state *t = (timing_state *)ins;
    timing_rec r = {p->name, now_seconds() - t->start};
    gr_vec_push(&t->recs, r);
    return GR_OK;
}

static void timing_destroy(ir_instrument *ins) {
    timing_state *t = (timing_state *)ins;
    gr_vec_free(&t->recs);
    free(t);
}

ir_instrument *ir_instrument_timing_new(void) {
    timing_state *t = gr_xcalloc(1, sizeof(*t));
    t->ins.name = "timing";
    t->ins.before = timing_before;
    t->ins.after = timing_after;
    t->ins.destroy = timing_destroy;
    return &t->ins;
}

uint32_t ir_instrument_timing_count(const ir_instrument *ins) {
    return ((const timing_state *)ins)->recs.len;
}

void ir_instrument_timing_get(const ir_instrument *ins, uint32_t i, const char **name, double *seconds) {
    const timing_state *t = (const timing_state *)ins;
    GR_ASSERT(i < t->recs.len);
    if (name) *name = t->recs.data[i].name;
    if (seconds) *seconds = t->recs.data[i].seconds;
}

void ir_instrument_timing_print(const ir_instrument *ins, FILE *out) {
    const timing_state *t = (const timing_state *)ins;
    double total = 0;
    for (uint32_t i = 0; i < t->recs.len; i++) total += t->recs.data[i].seconds;
    for (uint32_t i = 0; i < t->recs.len; i++)
        fprintf(out, "%-28s %10.3f ms %5.1f%%\n", t->recs.data[i].name, t->recs.data[i].seconds * 1e3,
                total > 0 ? 100.0 * t->recs.data[i].seconds / total : 0.0);
    fprintf(out, "%-28s %10.3f ms\n", "total", total * 1e3);
}

/* ---- IR dumps ---- */

typedef struct dump_state {
    ir_instrument ins;
    char *dir;
    bool no_spans;
    uint32_t count;
} dump_state;

static gr_status dump_after(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    dump_state *s = (dump_state *)ins;
    if (s->count == 0 && mkdir(s->dir, 0777) != 0 && errno != EEXIST)
        return gr_diag_set(d, GR_ERR_IO, "%s: cannot create directory: %s", s->dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof(path), "%s/%02u_%s.relax", s->dir, s->count++, p->name);
    FILE *f = fopen(path, "w");
    if (!f) return gr_diag_set(d, GR_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    ir_print_opts opts = {.no_spans = s->no_spans};
    ir_print_module(m, f, &opts);
    if (fclose(f) != 0) return gr_diag_set(d, GR_ERR_IO, "%s: write failed", path);
    return GR_OK;
}

static void dump_destroy(ir_instrument *ins) {
    dump_state *s = (dump_state *)ins;
    free(s->dir);
    free(s);
}

ir_instrument *ir_instrument_dump_ir_new(const char *dir, bool no_spans) {
    dump_state *s = gr_xcalloc(1, sizeof(*s));
    s->ins.name = "dump_ir";
    s->ins.after = dump_after;
    s->ins.destroy = dump_destroy;
    s->dir = gr_xstrdup(dir);
    s->no_spans = no_spans;
    return &s->ins;
}

/* ---- Snapshots ---- */

typedef struct snap_rec {
    const char *pass;
    const ir_module *mod;
} snap_rec;

typedef struct snap_state {
    ir_instrument ins;
    GR_VEC(snap_rec) recs;
} snap_state;

static gr_status snap_after(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    (void)d;
    snap_state *s = (snap_state *)ins;
    snap_rec r = {p->name, m};
    gr_vec_push(&s->recs, r);
    return GR_OK;
}

static void snap_destroy(ir_instrument *ins) {
    snap_state *s = (snap_state *)ins;
    gr_vec_free(&s->recs);
    free(s);
}

ir_instrument *ir_instrument_snapshots_new(void) {
    snap_state *s = gr_xcalloc(1, sizeof(*s));
    s->ins.name = "snapshots";
    s->ins.after = snap_after;
    s->ins.destroy = snap_destroy;
    return &s->ins;
}

uint32_t ir_instrument_snapshot_count(const ir_instrument *ins) {
    return ((const snap_state *)ins)->recs.len;
}

const ir_module *ir_instrument_snapshot_get(const ir_instrument *ins, uint32_t i, const char **pass_name) {
    const snap_state *s = (const snap_state *)ins;
    if (i >= s->recs.len) return NULL;
    if (pass_name) *pass_name = s->recs.data[i].pass;
    return s->recs.data[i].mod;
}

/* ---- Well-formedness ---- */

static gr_status wf_after(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    (void)ins;
    gr_diag local;
    gr_diag_clear(&local);
    if (ir_wellformed_check(m, &local) == GR_OK) return GR_OK;
    gr_status st = gr_diag_set(d, GR_ERR_WELLFORMED, "ill-formed IR after pass '%s': %s", p->name, local.msg);
    if (d) {
        gr_diag_set_layer(d, local.layer);
        gr_diag_set_op(d, local.op);
    }
    return st;
}

static void wf_destroy(ir_instrument *ins) { free(ins); }

ir_instrument *ir_instrument_wellformed_new(void) {
    ir_instrument *ins = gr_xcalloc(1, sizeof(*ins));
    ins->name = "wellformed";
    ins->after = wf_after;
    ins->destroy = wf_destroy;
    return ins;
}
