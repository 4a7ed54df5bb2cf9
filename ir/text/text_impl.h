/* Helpers shared by the text printer and parser (ir/ only). */
#ifndef GRAFT_IR_TEXT_TEXT_IMPL_H
#define GRAFT_IR_TEXT_TEXT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir/ctx.h"
#include "ir/expr.h"

/* Expressions whose span is written with them (a span comment or R.with_span); vars, constants,
 * ops and global vars keep theirs elsewhere (definition, metadata section) or have none. */
static inline bool ir_text_own_span(const ir_expr *e) {
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR: case IR_DFVAR: case IR_CONST: case IR_OP: case IR_GVAR: return false;
    default: return true;
    }
}

/* A growable byte buffer (heap). */
typedef struct ir_sbuf {
    char *data;
    size_t len, cap;
} ir_sbuf;

void ir_sbuf_grow(ir_sbuf *b, size_t extra);
static inline void ir_sbuf_putn(ir_sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) ir_sbuf_grow(b, n + 1);
    memcpy(b->data + b->len, s, n);
    b->len += n;
}
static inline void ir_sbuf_puts(ir_sbuf *b, const char *s) { ir_sbuf_putn(b, s, strlen(s)); }
static inline void ir_sbuf_putc(ir_sbuf *b, char c) {
    if (b->len + 2 > b->cap) ir_sbuf_grow(b, 2);
    b->data[b->len++] = c;
}
void ir_sbuf_printf(ir_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ir_sbuf_int(ir_sbuf *b, int64_t v);
/* A Python-style string literal with escapes. */
void ir_sbuf_quoted(ir_sbuf *b, const char *s);
/* Shortest decimal text that reads back to v ("1.0", "1e-05", "float(\"inf\")"). */
void ir_sbuf_double(ir_sbuf *b, double v);
static inline void ir_sbuf_free(ir_sbuf *b) { free(b->data); b->data = NULL; b->len = b->cap = 0; }
/* NUL-terminates and returns data. */
static inline const char *ir_sbuf_cstr(ir_sbuf *b) {
    if (b->len + 1 > b->cap) ir_sbuf_grow(b, 1);
    b->data[b->len] = 0;
    return b->data;
}

/* Base64 (RFC 4648, with padding). */
size_t ir_base64_enc_len(size_t n);
void ir_base64_encode(const unsigned char *src, size_t n, char *dst);
/* Decodes; returns the decoded length, or -1 for malformed input. dst holds >= 3*(n/4). */
long ir_base64_decode(const char *src, size_t n, unsigned char *dst);

#endif
