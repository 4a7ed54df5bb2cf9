/* Status names and diagnostics. */
#include "base/status.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gr_status_name(gr_status s) {
    switch (s) {
#define GR_STATUS_NAME(name, code, msg) case GR_##name: return "GR_" #name;
        GR_STATUS_MAP(GR_STATUS_NAME)
#undef GR_STATUS_NAME
    }
    return "GR_UNKNOWN";
}

const char *gr_status_str(gr_status s) {
    switch (s) {
#define GR_STATUS_STR(name, code, msg) case GR_##name: return msg;
        GR_STATUS_MAP(GR_STATUS_STR)
#undef GR_STATUS_STR
    }
    return "unknown status";
}

void gr_diag_clear(gr_diag *d) {
    if (d) memset(d, 0, sizeof(*d));
}

gr_status gr_diag_vset(gr_diag *d, gr_status code, const char *fmt, va_list ap) {
    if (!d || d->code != GR_OK) return code;
    d->code = code;
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    return code;
}

gr_status gr_diag_set(gr_diag *d, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr_diag_vset(d, code, fmt, ap);
    va_end(ap);
    return code;
}

static void copy_if_empty(char *dst, size_t size, const char *src) {
    if (dst[0] == '\0' && src) snprintf(dst, size, "%s", src);
}

gr_status gr_vfail(gr_diag *d, gr_status code, const char *layer, const char *op, const char *fmt,
                   va_list ap) {
    if (!d) return code;
    gr_diag_vset(d, code, fmt, ap);
    copy_if_empty(d->layer, sizeof(d->layer), layer);
    copy_if_empty(d->op, sizeof(d->op), op);
    return code;
}

gr_status gr_fail(gr_diag *d, gr_status code, const char *layer, const char *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr_vfail(d, code, layer, op, fmt, ap);
    va_end(ap);
    return code;
}

void gr_diag_set_file(gr_diag *d, const char *file) {
    if (d) copy_if_empty(d->file, sizeof(d->file), file);
}
void gr_diag_set_layer(gr_diag *d, const char *layer) {
    if (d) copy_if_empty(d->layer, sizeof(d->layer), layer);
}
void gr_diag_set_op(gr_diag *d, const char *op) {
    if (d) copy_if_empty(d->op, sizeof(d->op), op);
}

void gr_diag_format(const gr_diag *d, char *buf, size_t n) {
    /* many messages already start with "FILE:" (the reader's own wording): print it once */
    size_t fl = strlen(d->file);
    bool named = fl && strncmp(d->msg, d->file, fl) == 0 && d->msg[fl] == ':';
    char layer[sizeof d->layer + 16] = "", op[sizeof d->op + 8] = "";
    if (d->layer[0]) snprintf(layer, sizeof layer, "layer '%s'%s", d->layer, d->op[0] ? " " : "");
    if (d->op[0]) snprintf(op, sizeof op, "(op %s)", d->op);
    snprintf(buf, n, "%s%s%s%s%s%s", d->file[0] && !named ? d->file : "", d->file[0] && !named ? ": " : "", layer, op,
             layer[0] || op[0] ? ": " : "", d->msg[0] ? d->msg : gr_status_str(d->code));
}

void gr_diag_print(const gr_diag *d) {
    char text[sizeof d->msg + sizeof d->file + sizeof d->layer + sizeof d->op + 32];
    gr_diag_format(d, text, sizeof text);
    fprintf(stderr, "error: %s\n", text);
}

_Noreturn void gr_abort(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "graft: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}
