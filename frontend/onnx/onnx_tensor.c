/* ONNX TensorProto -> rt_tensor: typed fields, raw_data, external data; .pb tensor files; model
 * files mapped (or read) for the importer. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx/onnx_impl.h"

/* ONNX DataType code -> dtype (index = code). Unsupported codes are {0,0,0}. */
static const ir_dtype elem_dtypes[] = {
    [ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT] = {kDLFloat, 32, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__UINT8] = {kDLUInt, 8, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__INT8] = {kDLInt, 8, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__UINT16] = {kDLUInt, 16, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__INT16] = {kDLInt, 16, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__INT32] = {kDLInt, 32, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__INT64] = {kDLInt, 64, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__BOOL] = {kDLUInt, 1, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16] = {kDLFloat, 16, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE] = {kDLFloat, 64, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__UINT32] = {kDLUInt, 32, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__UINT64] = {kDLUInt, 64, 1},
    [ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16] = {kDLBfloat, 16, 1},
};

bool onnx_dtype_from_elem(int32_t elem, ir_dtype *out) {
    if (elem <= 0 || elem >= (int32_t)(sizeof(elem_dtypes) / sizeof(elem_dtypes[0]))) return false;
    if (elem_dtypes[elem].bits == 0) return false;
    *out = elem_dtypes[elem];
    return true;
}

/* ONNX coverage: names of the element types graft does not take, for messages. */
const char *onnx_elem_unsupported_name(int32_t elem) {
    switch (elem) {
    case 8: return "string: string tensors are not supported";
    case 14: return "complex64: complex tensors are not supported";
    case 15: return "complex128: complex tensors are not supported";
    default: return "not supported";
    }
}

int64_t onnx_tensor_get_i64(const rt_tensor *t, int64_t i) {
    const void *p = t->dl.data;
    DLDataType d = t->dl.dtype;
    if (d.code == kDLInt) {
        switch (d.bits) {
        case 8: return ((const int8_t *)p)[i];
        case 16: return ((const int16_t *)p)[i];
        case 32: return ((const int32_t *)p)[i];
        case 64: return ((const int64_t *)p)[i];
        }
    } else if (d.code == kDLUInt) {
        switch (d.bits) {
        case 1: case 8: return ((const uint8_t *)p)[i];
        case 16: return ((const uint16_t *)p)[i];
        case 32: return ((const uint32_t *)p)[i];
        case 64: {
            uint64_t v = ((const uint64_t *)p)[i];
            return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
        }
        }
    }
    double v = rt_tensor_get_f64(t, i);
    if (isnan(v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

static int64_t sat(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void onnx_tensor_set_i64(rt_tensor *t, int64_t i, int64_t v) {
    void *p = t->dl.data;
    DLDataType d = t->dl.dtype;
    if (d.code == kDLInt) {
        switch (d.bits) {
        case 8: ((int8_t *)p)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); return;
        case 16: ((int16_t *)p)[i] = (int16_t)sat(v, INT16_MIN, INT16_MAX); return;
        case 32: ((int32_t *)p)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); return;
        case 64: ((int64_t *)p)[i] = v; return;
        }
    } else if (d.code == kDLUInt) {
        switch (d.bits) {
        case 1: ((uint8_t *)p)[i] = v != 0; return;
        case 8: ((uint8_t *)p)[i] = (uint8_t)sat(v, 0, UINT8_MAX); return;
        case 16: ((uint16_t *)p)[i] = (uint16_t)sat(v, 0, UINT16_MAX); return;
        case 32: ((uint32_t *)p)[i] = (uint32_t)sat(v, 0, UINT32_MAX); return;
        case 64: ((uint64_t *)p)[i] = v < 0 ? 0 : (uint64_t)v; return;
        }
    }
    rt_tensor_set_f64(t, i, (double)v);
}

void onnx_tensor_set_f64(rt_tensor *t, int64_t i, double v) {
    if (t->dl.dtype.code == kDLInt || t->dl.dtype.code == kDLUInt) {
        if (t->dl.dtype.bits == 1) {
            ((uint8_t *)t->dl.data)[i] = v != 0.0;
            return;
        }
        int64_t iv = isnan(v) ? 0 : v >= 9.2233720368547758e18 ? INT64_MAX
                     : v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v;
        onnx_tensor_set_i64(t, i, iv);
        return;
    }
    rt_tensor_set_f64(t, i, v);
}

/* Reads `len` bytes at `offset` of `path` into dst; GR_OK or an error message. */
static gr_status read_external(const char *path, int64_t offset, size_t len, void *dst,
                               const char *file, const char *tname, gr_diag *diag) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: external data file '%s' of tensor '%s': %s",
                           file, path, tname, strerror(errno));
    gr_status st = GR_OK;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || offset < 0 || offset > size || (uint64_t)(size - offset) < len) {
        st = gr_diag_set(diag, GR_ERR_INVALID,
                         "%s: external data of tensor '%s': '%s' has %ld bytes, need %zu at "
                         "offset %lld",
                         file, tname, path, size, len, (long long)offset);
    } else if (fseek(f, (long)offset, SEEK_SET) != 0 || fread(dst, 1, len, f) != len) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "%s: external data of tensor '%s': short read of '%s'",
                         file, tname, path);
    }
    fclose(f);
    return st;
}

static bool parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0) return false;
    *out = v;
    return true;
}

/* Reads the external_data entries: location, offset, length. */
static gr_status external_entries(const Onnx__TensorProto *tp, const char *file, const char *tname,
                                  const char **loc, int64_t *offset, int64_t *length,
                                  gr_diag *diag) {
    *loc = NULL;
    *offset = 0;
    *length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e || !e->key) continue;
        if (!strcmp(e->key, "location")) *loc = e->value;
        else if (!strcmp(e->key, "offset") && !parse_i64(e->value, offset))
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': bad external data offset",
                               file, tname);
        else if (!strcmp(e->key, "length") && !parse_i64(e->value, length))
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': bad external data length",
                               file, tname);
    }
    if (!*loc || !**loc)
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': external data without location",
                           file, tname);
    /* The location is relative to the model's directory and may not leave it. */
    const char *l = *loc;
    size_t n = strlen(l);
    if (l[0] == '/' || !strcmp(l, "..") || !strncmp(l, "../", 3) || strstr(l, "/../") ||
        (n >= 3 && !strcmp(l + n - 3, "/..")))
        return gr_diag_set(diag, GR_ERR_INVALID,
                           "%s: tensor '%s': external data location '%s' leaves the model's "
                           "directory",
                           file, tname, l);
    return GR_OK;
}

static char *external_path(const char *dir, const char *loc) {
    size_t plen = strlen(dir ? dir : ".") + strlen(loc) + 2;
    char *path = gr_xmalloc(plen);
    snprintf(path, plen, "%s/%s", dir ? dir : ".", loc);
    return path;
}

/* The external file exists and holds `need` bytes at the offset (checked before allocating). */
static gr_status check_external(const Onnx__TensorProto *tp, const char *dir, const char *file,
                                size_t need, const char *tname, gr_diag *diag) {
    const char *loc;
    int64_t offset, length;
    gr_status st = external_entries(tp, file, tname, &loc, &offset, &length, diag);
    if (st != GR_OK) return st;
    if (length >= 0 && (uint64_t)length != need)
        return gr_diag_set(diag, GR_ERR_INVALID,
                           "%s: tensor '%s': external data length %lld, the tensor needs %zu bytes",
                           file, tname, (long long)length, need);
    char *path = external_path(dir, loc);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "%s: external data file '%s' of tensor '%s': %s",
                         file, path, tname, strerror(errno));
    } else if ((uint64_t)sb.st_size < (uint64_t)offset || (uint64_t)sb.st_size - (uint64_t)offset < need) {
        st = gr_diag_set(diag, GR_ERR_INVALID,
                         "%s: external data of tensor '%s': '%s' has %lld bytes, need %zu at "
                         "offset %lld",
                         file, tname, path, (long long)sb.st_size, need, (long long)offset);
    }
    free(path);
    return st;
}

static gr_status load_external(const Onnx__TensorProto *tp, const char *dir, const char *file,
                               rt_tensor *t, const char *tname, gr_diag *diag) {
    const char *loc;
    int64_t offset, length;
    gr_status st = external_entries(tp, file, tname, &loc, &offset, &length, diag);
    if (st != GR_OK) return st;
    char *path = external_path(dir, loc);
    st = read_external(path, offset, rt_tensor_nbytes(t), rt_tensor_data(t), file, tname, diag);
    free(path);
    return st;
}

/* Copies n typed-field values into t, converting to its dtype. */
static void fill_from_i32(rt_tensor *t, const int32_t *v, int64_t n) {
    DLDataType d = t->dl.dtype;
    for (int64_t i = 0; i < n; i++) {
        if ((d.code == kDLFloat && d.bits == 16) || d.code == kDLBfloat)
            ((uint16_t *)t->dl.data)[i] = (uint16_t)v[i];  /* bit patterns */
        else
            onnx_tensor_set_i64(t, i, v[i]);
    }
}

/* adopt: tp's raw_data, aligned, to become the tensor's data (NULL: copy). */
static gr_status tensor_from_proto(const Onnx__TensorProto *tp, const char *dir, const char *file, void *adopt,
                                   rt_tensor **out, gr_diag *diag) {
    *out = NULL;
    const char *tname = tp->name && *tp->name ? tp->name : "<unnamed>";
    ir_dtype dt;
    if (!onnx_dtype_from_elem(tp->data_type, &dt))
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': unsupported data type %d", file,
                           tname, (int)tp->data_type);
    if (tp->n_dims > RT_MAX_NDIM)
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': rank %zu exceeds %d", file,
                           tname, tp->n_dims, RT_MAX_NDIM);
    if (tp->segment)
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': segmented tensors unsupported",
                           file, tname);
    int64_t numel = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0 || (tp->dims[i] && numel > (INT64_C(1) << 40) / tp->dims[i]))
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': bad dims", file, tname);
        numel *= tp->dims[i];
    }
    /* The data must be there before memory is taken for it (a corrupt header must not make us
     * allocate gigabytes). */
    size_t nbytes = (size_t)numel * ir_dtype_bytes(dt);
    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (!external && tp->has_raw_data && tp->raw_data.len != nbytes)
        return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': raw_data has %zu bytes, expected %zu",
                           file, tname, tp->raw_data.len, nbytes);
    if (!external && !tp->has_raw_data) {
        size_t have_n = tp->n_float_data + tp->n_double_data + tp->n_int64_data + tp->n_uint64_data +
                        tp->n_int32_data;
        if ((int64_t)have_n != numel)
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': %zu values for %lld elements",
                               file, tname, have_n, (long long)numel);
    }
    if (external) {
        gr_status est = check_external(tp, dir, file, nbytes, tname, diag);
        if (est != GR_OK) return est;
    }
    if (external || !tp->has_raw_data || !nbytes) adopt = NULL;
    rt_tensor *t = adopt ? rt_tensor_adopt(dt, (int32_t)tp->n_dims, tp->dims, adopt)
                         : rt_tensor_new(dt, (int32_t)tp->n_dims, tp->dims);
    if (!t)
        return gr_diag_set(diag, GR_ERR_NOMEM, "%s: tensor '%s': out of memory", file, tname);
    gr_status st = GR_OK;
    int64_t have = -1;  /* typed-field element count */
    if (external) {
        st = load_external(tp, dir, file, t, tname, diag);
    } else if (tp->has_raw_data) {
        if (nbytes && !adopt) memcpy(rt_tensor_data(t), tp->raw_data.data, nbytes);
    } else if (dt.code == kDLFloat && dt.bits == 32) {
        have = (int64_t)tp->n_float_data;
        if (have == numel && numel) memcpy(rt_tensor_data(t), tp->float_data, nbytes);
    } else if (dt.code == kDLFloat && dt.bits == 64) {
        have = (int64_t)tp->n_double_data;
        if (have == numel && numel) memcpy(rt_tensor_data(t), tp->double_data, nbytes);
    } else if (dt.code == kDLInt && dt.bits == 64) {
        have = (int64_t)tp->n_int64_data;
        if (have == numel && numel) memcpy(rt_tensor_data(t), tp->int64_data, nbytes);
    } else if (dt.code == kDLUInt && dt.bits >= 32) {
        have = (int64_t)tp->n_uint64_data;
        if (have == numel)
            for (int64_t i = 0; i < numel; i++)
                onnx_tensor_set_i64(t, i, tp->uint64_data[i] > (uint64_t)INT64_MAX
                                              ? INT64_MAX : (int64_t)tp->uint64_data[i]);
        if (have == numel && dt.bits == 64 && numel)
            memcpy(rt_tensor_data(t), tp->uint64_data, nbytes);
    } else {
        have = (int64_t)tp->n_int32_data;
        if (have == numel) fill_from_i32(t, tp->int32_data, numel);
    }
    if (st == GR_OK && have >= 0 && have != numel)
        st = gr_diag_set(diag, GR_ERR_INVALID, "%s: tensor '%s': %lld values for %lld elements",
                         file, tname, (long long)have, (long long)numel);
    if (st != GR_OK) {
        rt_tensor_release(t);
        return st;
    }
    *out = t;
    return GR_OK;
}

gr_status onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *dir, const char *file,
                                 rt_tensor **out, gr_diag *diag) {
    return tensor_from_proto(tp, dir, file, NULL, out, diag);
}

gr_status onnx_tensor_take_proto(Onnx__TensorProto *tp, const char *dir, const char *file, rt_tensor **out,
                                 gr_diag *diag) {
    void *raw = tp->has_raw_data && ((uintptr_t)tp->raw_data.data & 63) == 0 ? tp->raw_data.data : NULL;
    gr_status st = tensor_from_proto(tp, dir, file, raw, out, diag);
    if (!st && raw && rt_tensor_data(*out) == raw) {
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        tp->has_raw_data = 0;
    }
    return st;
}

/* Reads the rest of f into a heap buffer (f stays open). */
static gr_status read_stream(FILE *f, const char *path, uint8_t **buf, size_t *len, gr_diag *diag) {
    uint8_t *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            b = gr_xrealloc(b, cap);
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    if (ferror(f)) {
        free(b);
        return gr_diag_set(diag, GR_ERR_IO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    return GR_OK;
}

static FILE *open_file(const char *path, gr_diag *diag) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        gr_diag_set(diag, GR_ERR_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (gr_is_dir(f)) {
        fclose(f);
        gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
        return NULL;
    }
    return f;
}

/* Reads a whole file into a heap buffer. */
static gr_status read_file(const char *path, uint8_t **buf, size_t *len, gr_diag *diag) {
    FILE *f = open_file(path, diag);
    if (!f) return diag->code;
    gr_status st = read_stream(f, path, buf, len, diag);
    fclose(f);
    return st;
}

gr_status onnx_file_open(const char *path, onnx_file *of, gr_diag *diag) {
    memset(of, 0, sizeof(*of));
    FILE *f = open_file(path, diag);
    if (!f) return diag->code;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t)sb.st_size <= SIZE_MAX) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        if (p != MAP_FAILED) {
            fclose(f);
            of->data = p;
            of->len = (size_t)sb.st_size;
            of->mapped = true;
            return GR_OK;
        }
    }
    /* a pipe, an empty or special file, or a mapping refused: read it */
    uint8_t *b = NULL;
    gr_status st = read_stream(f, path, &b, &of->len, diag);
    fclose(f);
    of->data = b;
    return st;
}

void onnx_file_drop(onnx_file *of, size_t upto) {
    if (!of->mapped || upto > of->len) return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t end = upto / page * page;
    if (end <= of->dropped) return;
    /* a read-only private mapping has no dirty pages: this only unmaps them (they come back
     * from the file if read again) */
    madvise((uint8_t *)of->data + of->dropped, end - of->dropped, MADV_DONTNEED);
    of->dropped = end;
}

void onnx_file_close(onnx_file *of) {
    if (of->mapped) munmap((void *)of->data, of->len);
    else free((void *)of->data);
    memset(of, 0, sizeof(*of));
}

gr_status onnx_read_file(const char *path, uint8_t **buf, size_t *len, gr_diag *diag) {
    return read_file(path, buf, len, diag);
}

Onnx__ModelProto *onnx_read_model(const char *path, gr_diag *diag) {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (read_file(path, &buf, &len, diag) != GR_OK) return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        gr_diag_set_file(diag, path);
        gr_diag_set(diag, GR_ERR_INVALID, "not a valid ONNX model");
        return NULL;
    }
    return m;
}

char *onnx_dirname(const char *path) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash) return gr_xstrdup(".");
    if (slash == path) return gr_xstrdup("/");
    size_t n = (size_t)(slash - path);
    char *d = gr_xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

gr_status onnx_tensor_load_pb(const char *path, rt_tensor **out, char **name, gr_diag *diag) {
    *out = NULL;
    if (name) *name = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    gr_status st = read_file(path, &buf, &len, diag);
    if (st != GR_OK) return st;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    free(buf);
    if (!tp) {
        gr_diag_set_file(diag, path);
        return gr_diag_set(diag, GR_ERR_INVALID, "not a valid ONNX TensorProto (truncated or "
                           "corrupt)");
    }
    char *dir = onnx_dirname(path);
    st = onnx_tensor_from_proto(tp, dir, path, out, diag);
    free(dir);
    if (st == GR_OK && name) *name = gr_xstrdup(tp->name ? tp->name : "");
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (st != GR_OK) gr_diag_set_file(diag, path);
    return st;
}
