/* NumPy .npy reader and writer.
 *
 * Layout (numpy.lib.format): "\x93NUMPY", major, minor, header length (uint16 LE for 1.0,
 * uint32 LE for 2.0/3.0), then a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), } padded with spaces and ended by '\n', then the raw C-order data.
 * Every malformed input is reported as GR_ERR_INVALID naming the file; nothing is trusted
 * before it is checked against the file size. */
#include "runtime/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"
#include "ir/dtype.h"

#define NPY_MAX_HEADER (1u << 20) /* a real header is < 1 KiB; bigger means garbage */

typedef struct npy_dtype_row {
    const char *code;   /* type letter + size, without the byte-order char */
    ir_dtype dtype;
} npy_dtype_row;

static const npy_dtype_row npy_dtypes[] = {
    {"f4", {kDLFloat, 32, 1}}, {"f8", {kDLFloat, 64, 1}}, {"f2", {kDLFloat, 16, 1}},
    {"i1", {kDLInt, 8, 1}},    {"i2", {kDLInt, 16, 1}},   {"i4", {kDLInt, 32, 1}},
    {"i8", {kDLInt, 64, 1}},   {"u1", {kDLUInt, 8, 1}},   {"u2", {kDLUInt, 16, 1}},
    {"u4", {kDLUInt, 32, 1}},  {"u8", {kDLUInt, 64, 1}},  {"b1", {kDLUInt, 1, 1}},
};
#define NPY_NDTYPES (sizeof(npy_dtypes) / sizeof(npy_dtypes[0]))

static gr_status npy_fail(gr_diag *diag, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static gr_status npy_fail(gr_diag *diag, const char *path, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    gr_diag_set_file(diag, path);
    return gr_diag_set(diag, GR_ERR_INVALID, "%s: invalid .npy file: %s", path, what);
}

/* ---- header dict parser (a tiny subset of Python literals) ---- */

typedef struct npy_hdr {
    const char *p, *end;
    char descr[16];
    int fortran;            /* -1 = missing */
    int32_t ndim;           /* -1 = missing */
    int64_t shape[RT_MAX_NDIM];
    char err[200];
} npy_hdr;

static void hdr_ws(npy_hdr *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static bool hdr_eat(npy_hdr *h, char c) {
    hdr_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

static bool hdr_string(npy_hdr *h, char *out, size_t cap) {
    hdr_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) {
        snprintf(h->err, sizeof h->err, "expected a quoted string in the header");
        return false;
    }
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (n + 1 >= cap) {
            snprintf(h->err, sizeof h->err, "string too long in the header");
            return false;
        }
        out[n++] = *h->p++;
    }
    if (h->p >= h->end) {
        snprintf(h->err, sizeof h->err, "unterminated string in the header");
        return false;
    }
    h->p++;
    out[n] = '\0';
    return true;
}

static bool hdr_word(npy_hdr *h, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
        h->p += n;
        return true;
    }
    return false;
}

static bool hdr_shape(npy_hdr *h) {
    if (!hdr_eat(h, '(')) {
        snprintf(h->err, sizeof h->err, "'shape' is not a tuple");
        return false;
    }
    int32_t nd = 0;
    for (;;) {
        if (hdr_eat(h, ')')) break;
        hdr_ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9') {
            snprintf(h->err, sizeof h->err, "'shape' holds something other than a non-negative "
                                            "integer");
            return false;
        }
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            if (v > (INT64_MAX - 9) / 10) {
                snprintf(h->err, sizeof h->err, "a dimension of 'shape' overflows int64");
                return false;
            }
            v = v * 10 + (*h->p++ - '0');
        }
        if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) h->p++; /* Python 2 long */
        if (nd >= RT_MAX_NDIM) {
            snprintf(h->err, sizeof h->err, "rank exceeds the maximum of %d", RT_MAX_NDIM);
            return false;
        }
        h->shape[nd++] = v;
        if (hdr_eat(h, ',')) continue;
        if (hdr_eat(h, ')')) break;
        snprintf(h->err, sizeof h->err, "malformed 'shape' tuple");
        return false;
    }
    h->ndim = nd;
    return true;
}

static bool hdr_parse(npy_hdr *h) {
    h->fortran = -1;
    h->ndim = -1;
    h->descr[0] = '\0';
    if (!hdr_eat(h, '{')) {
        snprintf(h->err, sizeof h->err, "header is not a dict literal");
        return false;
    }
    for (;;) {
        if (hdr_eat(h, '}')) break;
        char key[32];
        if (!hdr_string(h, key, sizeof key)) return false;
        if (!hdr_eat(h, ':')) {
            snprintf(h->err, sizeof h->err, "expected ':' after key '%s'", key);
            return false;
        }
        hdr_ws(h);
        if (strcmp(key, "descr") == 0) {
            if (!hdr_string(h, h->descr, sizeof h->descr)) return false;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (hdr_word(h, "True")) h->fortran = 1;
            else if (hdr_word(h, "False")) h->fortran = 0;
            else {
                snprintf(h->err, sizeof h->err, "'fortran_order' is not True or False");
                return false;
            }
        } else if (strcmp(key, "shape") == 0) {
            if (!hdr_shape(h)) return false;
        } else {
            snprintf(h->err, sizeof h->err, "unexpected header key '%s'", key);
            return false;
        }
        if (hdr_eat(h, ',')) continue;
        if (hdr_eat(h, '}')) break;
        snprintf(h->err, sizeof h->err, "expected ',' or '}' in the header dict");
        return false;
    }
    if (!h->descr[0] || h->fortran < 0 || h->ndim < 0) {
        snprintf(h->err, sizeof h->err, "header lacks %s",
                 !h->descr[0] ? "'descr'" : h->fortran < 0 ? "'fortran_order'" : "'shape'");
        return false;
    }
    return true;
}

/* Maps a descr ("<f4", "|u1", ...) to a dtype; a reason in err when refused. */
static bool descr_dtype(const char *descr, ir_dtype *out, char *err, size_t errcap) {
    size_t n = strlen(descr);
    if (n != 3) {
        snprintf(err, errcap, "unsupported dtype descr '%s'", descr);
        return false;
    }
    char order = descr[0];
    for (size_t i = 0; i < NPY_NDTYPES; i++) {
        if (strcmp(descr + 1, npy_dtypes[i].code) != 0) continue;
        bool one_byte = npy_dtypes[i].code[1] == '1';
        /* byte order matters only for multi-byte types */
        bool ok = order == '<' || order == '=' || (one_byte && (order == '|' || order == '>'));
        if (!ok) {
            snprintf(err, errcap, "%s dtype descr '%s' (only little-endian is supported)",
                     order == '>' ? "big-endian" : "bad byte order in", descr);
            return false;
        }
        *out = npy_dtypes[i].dtype;
        return true;
    }
    snprintf(err, errcap, "unsupported dtype descr '%s'", descr);
    return false;
}

gr_status rt_npy_load(const char *path, rt_tensor **out, gr_diag *diag) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        gr_diag_set_file(diag, path);
        return gr_diag_set(diag, GR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    if (gr_is_dir(f)) {
        fclose(f);
        gr_diag_set_file(diag, path);
        return gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
    }
    gr_status st = GR_OK;
    char *hdr = NULL;
    rt_tensor *t = NULL;
    long fsize = -1;
    if (fseek(f, 0, SEEK_END) == 0) fsize = ftell(f);
    if (fsize < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = gr_diag_set(diag, GR_ERR_IO, "%s: cannot seek", path);
        goto done;
    }
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = npy_fail(diag, path, "bad magic (not a .npy file)");
        goto done;
    }
    unsigned major = pre[6];
    size_t lenbytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
    if (!lenbytes) {
        st = npy_fail(diag, path, "unsupported format version %u.%u", major, pre[7]);
        goto done;
    }
    if (fread(pre + 8, 1, lenbytes, f) != lenbytes) {
        st = npy_fail(diag, path, "truncated before the header length");
        goto done;
    }
    uint32_t hlen = pre[8] | (uint32_t)pre[9] << 8;
    if (lenbytes == 4) hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    size_t data_off = 8 + lenbytes + (size_t)hlen;
    if (hlen > NPY_MAX_HEADER || data_off > (size_t)fsize) {
        st = npy_fail(diag, path, "header length %u exceeds the file", hlen);
        goto done;
    }
    hdr = gr_xmalloc(hlen + 1);
    if (fread(hdr, 1, hlen, f) != hlen) {
        st = npy_fail(diag, path, "truncated header");
        goto done;
    }
    hdr[hlen] = '\0';
    if (memchr(hdr, '\0', hlen)) {
        st = npy_fail(diag, path, "NUL byte in the header");
        goto done;
    }
    npy_hdr h = {.p = hdr, .end = hdr + hlen};
    if (!hdr_parse(&h)) {
        st = npy_fail(diag, path, "%s", h.err);
        goto done;
    }
    ir_dtype dt;
    char why[128];
    if (!descr_dtype(h.descr, &dt, why, sizeof why)) {
        st = npy_fail(diag, path, "%s", why);
        goto done;
    }
    if (h.fortran) {
        st = npy_fail(diag, path, "fortran_order True is not supported (C order only)");
        goto done;
    }
    size_t nbytes = ir_dtype_bytes(dt);
    for (int32_t i = 0; i < h.ndim; i++) {
        if (h.shape[i] < 0 || (uint64_t)h.shape[i] > SIZE_MAX ||
            __builtin_mul_overflow(nbytes, (size_t)h.shape[i], &nbytes)) {
            st = npy_fail(diag, path, "shape is too large (size overflows)");
            goto done;
        }
    }
    size_t avail = (size_t)fsize - data_off;
    if (nbytes > avail) {
        st = npy_fail(diag, path, "truncated data: shape needs %zu bytes, file has %zu", nbytes,
                      avail);
        goto done;
    }
    t = rt_tensor_new(dt, h.ndim, h.shape);
    if (!t) {
        st = gr_diag_set(diag, GR_ERR_NOMEM, "%s: out of memory for %zu bytes", path, nbytes);
        goto done;
    }
    if (nbytes && fread(rt_tensor_data(t), 1, nbytes, f) != nbytes) {
        st = npy_fail(diag, path, "truncated data");
        goto done;
    }
    *out = t;
    t = NULL;
done:
    if (st != GR_OK) gr_diag_set_file(diag, path);
    rt_tensor_release(t);
    free(hdr);
    fclose(f);
    return st;
}

gr_status rt_npy_save(const char *path, const rt_tensor *t, gr_diag *diag) {
    const char *code = NULL;
    ir_dtype dt = t->dl.dtype;
    for (size_t i = 0; i < NPY_NDTYPES && !code; i++)
        if (ir_dtype_eq(npy_dtypes[i].dtype, dt)) code = npy_dtypes[i].code;
    if (!code || dt.lanes != 1) {
        gr_diag_set_file(diag, path);
        const char *nm = ir_dtype_name(dt);
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "%s: dtype %s cannot be written as .npy",
                           path, nm ? nm : "?");
    }
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     code[1] == '1' ? '|' : '<', code);
    for (int32_t i = 0; i < t->dl.ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)t->dl.shape[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->dl.ndim == 1 ? "," : "");
    /* pad with spaces so magic + length + header (ending in '\n') is a multiple of 64 */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    unsigned char head[640];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memcpy(head + 10, dict, (size_t)n);
    memset(head + 10 + n, ' ', hlen - (size_t)n - 1);
    head[padded - 1] = '\n';

    FILE *f = fopen(path, "wb");
    if (!f) {
        gr_diag_set_file(diag, path);
        return gr_diag_set(diag, GR_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    size_t nbytes = rt_tensor_nbytes(t);
    bool ok = fwrite(head, 1, padded, f) == padded &&
              (nbytes == 0 || fwrite(rt_tensor_data(t), 1, nbytes, f) == nbytes);
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        gr_diag_set_file(diag, path);
        return gr_diag_set(diag, GR_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    return GR_OK;
}
