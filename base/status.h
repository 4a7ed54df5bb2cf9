/* Status codes and diagnostics shared by every layer of graft.
 *
 * Public functions that can fail return a gr_status (0 = success, negative = error) and, when
 * given a gr_diag, fill it with a message that names the file, the frontend layer and the op.
 * The codes, their names and their messages come from one table (libuv's UV_ERRNO_MAP). */
#ifndef GRAFT_BASE_STATUS_H
#define GRAFT_BASE_STATUS_H

#include "base/api.h"

#include <stdarg.h>
#include <stddef.h>

#define GR_STATUS_MAP(X)                                          \
    X(OK, 0, "success")                                           \
    X(ERR_PARSE, -1, "syntax error")                              \
    X(ERR_TYPE, -2, "struct info error")                          \
    X(ERR_INVALID, -3, "invalid input")                           \
    X(ERR_UNSUPPORTED, -4, "unsupported")                         \
    X(ERR_IO, -5, "i/o error")                                    \
    X(ERR_NOMEM, -6, "out of memory")                             \
    X(ERR_RUNTIME, -7, "runtime error")                           \
    X(ERR_NOT_FOUND, -8, "not found")                             \
    X(ERR_WELLFORMED, -9, "ill-formed IR")

typedef enum gr_status {
#define GR_STATUS_ENUM(name, code, msg) GR_##name = code,
    GR_STATUS_MAP(GR_STATUS_ENUM)
#undef GR_STATUS_ENUM
} gr_status;

/* "GR_ERR_PARSE" and "syntax error"; static strings. */
GR_API const char *gr_status_name(gr_status s);
GR_API const char *gr_status_str(gr_status s);

/* A diagnostic: the first error reported wins unless cleared. Caller-owned storage, no heap. */
typedef struct gr_diag {
    gr_status code;
    char msg[2048];   /* full message, already prefixed with file:line:col when known */
    char file[256];   /* input file, "" when unknown */
    char layer[256];  /* frontend layer (span source), "" when unknown */
    char op[64];      /* op name, "" when unknown */
    int line, col;    /* 1-based, 0 when unknown */
} gr_diag;

GR_API void gr_diag_clear(gr_diag *d);
/* Records an error and returns `code`, so callers write `return gr_diag_set(d, GR_ERR_X, ...)`.
 * A NULL `d` is allowed (the message is dropped). Keeps the first error when one is set. */
gr_status gr_diag_set(gr_diag *d, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
gr_status gr_diag_vset(gr_diag *d, gr_status code, const char *fmt, va_list ap);
/* Context setters: fill only fields that are still empty. */
void gr_diag_set_file(gr_diag *d, const char *file);
void gr_diag_set_layer(gr_diag *d, const char *layer);
void gr_diag_set_op(gr_diag *d, const char *op);
/* The one way to fail: records `code` and the message (first error wins, as gr_diag_set), then
 * the frontend layer and the op (each may be NULL; fields already filled stay), and returns
 * `code`. With a span at hand, pass ir_span_layer(span) (ir/span.h). Per-layer helpers (rt_kerr,
 * cv_fail, dn_fail, ...) only add their own message prefix and call this. */
gr_status gr_fail(gr_diag *d, gr_status code, const char *layer, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
gr_status gr_vfail(gr_diag *d, gr_status code, const char *layer, const char *op, const char *fmt,
                   va_list ap);

/* Out of memory, one policy by the kind of allocation:
 * - bookkeeping whose size the program bounds (IR nodes and the context arena, containers,
 *   strings, plans, pattern and codegen state) goes through the ctx arena or gr_xmalloc /
 *   gr_xcalloc / gr_xrealloc (base/sys.h), which print and abort: such a failure means the process
 *   is out of memory, and no caller could do anything useful with an error;
 * - data whose size comes from the model or its inputs (tensors, activations, arenas, kernel
 *   scratch, oneDNN memories, copies of a loaded graph) is allocated with malloc and a NULL is
 *   reported as GR_ERR_NOMEM through gr_fail, naming the op and layer, so a model too big for the
 *   machine is an error (exit 1), never a crash.
 * New code follows the same split; nothing returns GR_ERR_NOMEM for a bookkeeping allocation. */

/* "<file>: layer '<layer>' (op <op>): <msg>" (the parts d knows; the file once when the message
 * already starts with it) into buf, cut to n bytes. */
void gr_diag_format(const gr_diag *d, char *buf, size_t n);
/* Prints "error: " and gr_diag_format's text to stderr. */
GR_API void gr_diag_print(const gr_diag *d);

/* Internal invariant check (programmer error, never user input): prints and aborts. */
_Noreturn void gr_abort(const char *file, int line, const char *fmt, ...);
#define GR_ASSERT(x) \
    do { if (!(x)) gr_abort(__FILE__, __LINE__, "assertion failed: %s", #x); } while (0)

#endif
