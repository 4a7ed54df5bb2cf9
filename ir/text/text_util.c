/* Buffers, number formatting and base64 for the text printer and parser. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/text/text_impl.h"

void ir_sbuf_grow(ir_sbuf *b, size_t extra) {
    size_t need = b->len + extra;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    b->data = gr_xrealloc(b->data, cap);
    b->cap = cap;
}

void ir_sbuf_printf(ir_sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof(tmp)) {
        ir_sbuf_putn(b, tmp, (size_t)n);
        return;
    }
    ir_sbuf_grow(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ir_sbuf_int(ir_sbuf *b, int64_t v) {
    char tmp[24];
    char *p = tmp + sizeof(tmp);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    ir_sbuf_putn(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

void ir_sbuf_quoted(ir_sbuf *b, const char *s) {
    ir_sbuf_putc(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            ir_sbuf_putc(b, '\\');
            ir_sbuf_putc(b, (char)c);
        } else if (c == '\n') {
            ir_sbuf_puts(b, "\\n");
        } else if (c == '\t') {
            ir_sbuf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            ir_sbuf_printf(b, "\\x%02x", c);
        } else {
            ir_sbuf_putc(b, (char)c);
        }
    }
    ir_sbuf_putc(b, '"');
}

void ir_sbuf_double(ir_sbuf *b, double v) {
    if (isnan(v)) {
        ir_sbuf_puts(b, "float(\"nan\")");
        return;
    }
    if (isinf(v)) {
        ir_sbuf_puts(b, v < 0 ? "float(\"-inf\")" : "float(\"inf\")");
        return;
    }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* Python repr: exponent form only below 1e-4 or from 1e16. */
    char *e = strchr(buf, 'e');
    if (e) {
        int ex = atoi(e + 1);
        if (ex >= -4 && ex < 16) {
            for (int prec = 1; prec <= 24; prec++) {
                snprintf(buf, sizeof(buf), "%.*f", prec, v);
                if (strtod(buf, NULL) == v) break;
            }
        }
    }
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    ir_sbuf_puts(b, buf);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ir_base64_enc_len(size_t n) { return (n + 2) / 3 * 4; }

void ir_base64_encode(const unsigned char *src, size_t n, char *dst) {
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
        *dst++ = B64[v >> 18];
        *dst++ = B64[(v >> 12) & 63];
        *dst++ = B64[(v >> 6) & 63];
        *dst++ = B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)src[i] << 16;
        *dst++ = B64[v >> 18];
        *dst++ = B64[(v >> 12) & 63];
        *dst++ = '=';
        *dst++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;
        *dst++ = B64[v >> 18];
        *dst++ = B64[(v >> 12) & 63];
        *dst++ = B64[(v >> 6) & 63];
        *dst++ = '=';
    }
}

static int b64_val(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

long ir_base64_decode(const char *src, size_t n, unsigned char *dst) {
    if (n % 4) return -1;
    long out = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            char c = src[i + k];
            if (c == '=') {
                if (i + 4 != n || k < 2) return -1;
                v[k] = 0;
                pad++;
            } else {
                if (pad) return -1;
                v[k] = b64_val(c);
                if (v[k] < 0) return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        dst[out++] = (unsigned char)(w >> 16);
        if (pad < 2) dst[out++] = (unsigned char)(w >> 8);
        if (pad < 1) dst[out++] = (unsigned char)w;
    }
    return out;
}
