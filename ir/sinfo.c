/* Struct info constructors (hash-consed), relations and printing. */
#include "ir/sinfo.h"

#include <inttypes.h>
#include <string.h>

enum { SINFO_TAG = 0x53494e46, PTRS_TAG = 0x50545253 };

static const void *intern_ptrs(ir_ctx_t *ctx, const void *const *p, uint32_t n) {
    if (!p || n == 0) return NULL;
    return ir_hashcons(ctx, PTRS_TAG, p, sizeof(void *) * n);
}

static const ir_sinfo *intern(ir_ctx_t *ctx, ir_sinfo *key) {
    return ir_hashcons(ctx, SINFO_TAG, key, sizeof(*key));
}

static ir_sinfo blank(ir_sinfo_kind kind) {
    ir_sinfo s;
    memset(&s, 0, sizeof(s)); /* padding must be zero: hash-consing compares bytes */
    s.kind = (uint8_t)kind;
    s.ndim = -1;
    return s;
}

const ir_sinfo *ir_sinfo_object(ir_ctx_t *ctx) {
    ir_sinfo s = blank(IR_SINFO_OBJECT);
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_prim(ir_ctx_t *ctx, ir_dtype dtype, const ir_prim *value) {
    ir_sinfo s = blank(IR_SINFO_PRIM);
    s.dtype = dtype;
    s.value = value;
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_shape(ir_ctx_t *ctx, int32_t ndim, const ir_prim *const *dims) {
    ir_sinfo s = blank(IR_SINFO_SHAPE);
    s.ndim = ndim < 0 ? -1 : ndim;
    s.dims = ndim > 0 ? intern_ptrs(ctx, (const void *const *)dims, (uint32_t)ndim) : NULL;
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_tensor(ir_ctx_t *ctx, ir_dtype dtype, int32_t ndim,
                                const ir_prim *const *dims) {
    ir_sinfo s = blank(IR_SINFO_TENSOR);
    s.dtype = dtype;
    s.ndim = ndim < 0 ? -1 : ndim;
    s.dims = ndim > 0 ? intern_ptrs(ctx, (const void *const *)dims, (uint32_t)ndim) : NULL;
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_tensor_static(ir_ctx_t *ctx, ir_dtype dtype, int32_t ndim,
                                       const int64_t *shape) {
    const ir_prim *dims[64];
    GR_ASSERT(ndim >= 0 && ndim <= 64);
    for (int32_t i = 0; i < ndim; i++) dims[i] = ir_prim_int(ctx, shape[i]);
    return ir_sinfo_tensor(ctx, dtype, ndim, dims);
}

const ir_sinfo *ir_sinfo_tuple(ir_ctx_t *ctx, uint32_t n, const ir_sinfo *const *fields) {
    ir_sinfo s = blank(IR_SINFO_TUPLE);
    s.n = n;
    s.fields = intern_ptrs(ctx, (const void *const *)fields, n);
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_func(ir_ctx_t *ctx, uint32_t nparams, const ir_sinfo *const *params,
                              const ir_sinfo *ret) {
    ir_sinfo s = blank(IR_SINFO_FUNC);
    s.n = nparams;
    s.fields = intern_ptrs(ctx, (const void *const *)params, nparams);
    s.ret = ret ? ret : ir_sinfo_object(ctx);
    return intern(ctx, &s);
}

const ir_sinfo *ir_sinfo_func_opaque(ir_ctx_t *ctx, const ir_sinfo *ret) {
    ir_sinfo s = blank(IR_SINFO_FUNC);
    s.opaque = 1;
    s.ret = ret ? ret : ir_sinfo_object(ctx);
    return intern(ctx, &s);
}

/* Rank 0 has nothing unknown: R.Tensor((), ...) and R.Tensor(ndim=0, ...) are one thing. */
static bool dims_known(const ir_sinfo *s) { return s->ndim >= 0 && (s->ndim == 0 || s->dims); }

bool ir_sinfo_is_base_of(const ir_sinfo *base, const ir_sinfo *derived) {
    if (base == derived) return true;
    if (base->kind == IR_SINFO_OBJECT) return true;
    if (base->kind != derived->kind) return false;
    switch ((ir_sinfo_kind)base->kind) {
    case IR_SINFO_OBJECT: return true;
    case IR_SINFO_PRIM:
        if (!ir_dtype_is_void(base->dtype) && !ir_dtype_eq(base->dtype, derived->dtype)) return false;
        return !base->value || base->value == derived->value;
    case IR_SINFO_TENSOR:
        if (!ir_dtype_is_void(base->dtype) && !ir_dtype_eq(base->dtype, derived->dtype)) return false;
        /* rank and dims as for shapes */
        __attribute__((fallthrough));
    case IR_SINFO_SHAPE:
        if (base->ndim >= 0 && base->ndim != derived->ndim) return false;
        if (base->dims && base->ndim > 0) {
            if (!derived->dims) return false;
            for (int32_t i = 0; i < base->ndim; i++)
                if (base->dims[i] != derived->dims[i]) return false;
        }
        return true;
    case IR_SINFO_TUPLE:
        if (base->n != derived->n) return false;
        for (uint32_t i = 0; i < base->n; i++)
            if (!ir_sinfo_is_base_of(base->fields[i], derived->fields[i])) return false;
        return true;
    case IR_SINFO_FUNC:
        if (!ir_sinfo_is_base_of(base->ret, derived->ret)) return false;
        if (base->opaque) return true;
        if (derived->opaque || base->n != derived->n) return false;
        /* Params are contravariant. */
        for (uint32_t i = 0; i < base->n; i++)
            if (!ir_sinfo_is_base_of(derived->fields[i], base->fields[i])) return false;
        return true;
    }
    return false;
}

bool ir_sinfo_static_shape(const ir_sinfo *s, int64_t *shape) {
    if (!s || s->kind != IR_SINFO_TENSOR || !dims_known(s)) return false;
    for (int32_t i = 0; i < s->ndim; i++) {
        int64_t v;
        if (!ir_prim_is_int(s->dims[i], &v)) return false;
        if (shape) shape[i] = v;
    }
    return true;
}

int64_t ir_sinfo_numel(const ir_sinfo *s) {
    int64_t shape[64];
    if (!s || s->ndim > 64 || !ir_sinfo_static_shape(s, shape)) return -1;
    int64_t n = 1;
    for (int32_t i = 0; i < s->ndim; i++) n *= shape[i];
    return n;
}

const ir_sinfo *ir_sinfo_subst(ir_ctx_t *ctx, const ir_sinfo *s, const gr_map *var_map) {
    if (!s || !var_map || var_map->len == 0) return s;
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_OBJECT: return s;
    case IR_SINFO_PRIM:
        return s->value ? ir_sinfo_prim(ctx, s->dtype, ir_prim_subst(ctx, s->value, var_map)) : s;
    case IR_SINFO_SHAPE:
    case IR_SINFO_TENSOR: {
        if (!s->dims || s->ndim <= 0) return s;
        const ir_prim **d = gr_xmalloc(sizeof(*d) * (size_t)s->ndim);
        for (int32_t i = 0; i < s->ndim; i++) d[i] = ir_prim_subst(ctx, s->dims[i], var_map);
        const ir_sinfo *r = s->kind == IR_SINFO_SHAPE ? ir_sinfo_shape(ctx, s->ndim, d)
                                                      : ir_sinfo_tensor(ctx, s->dtype, s->ndim, d);
        free(d);
        return r;
    }
    case IR_SINFO_TUPLE:
    case IR_SINFO_FUNC: {
        const ir_sinfo **f = gr_xmalloc(sizeof(*f) * (s->n + 1));
        for (uint32_t i = 0; i < s->n; i++) f[i] = ir_sinfo_subst(ctx, s->fields[i], var_map);
        const ir_sinfo *r;
        if (s->kind == IR_SINFO_TUPLE) r = ir_sinfo_tuple(ctx, s->n, f);
        else if (s->opaque) r = ir_sinfo_func_opaque(ctx, ir_sinfo_subst(ctx, s->ret, var_map));
        else r = ir_sinfo_func(ctx, s->n, f, ir_sinfo_subst(ctx, s->ret, var_map));
        free(f);
        return r;
    }
    }
    return s;
}

static void print_dims(const ir_sinfo *s, FILE *out) {
    fputc('(', out);
    for (int32_t i = 0; i < s->ndim; i++) {
        if (i) fputs(", ", out);
        ir_prim_print(s->dims[i], out);
    }
    if (s->ndim == 1) fputc(',', out);
    fputc(')', out);
}

void ir_sinfo_print(const ir_sinfo *s, FILE *out) {
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_OBJECT: fputs("R.Object", out); return;
    case IR_SINFO_PRIM:
        if (s->value) {
            fputs("R.Prim(value=", out);
            ir_prim_print(s->value, out);
            fputc(')', out);
        } else {
            fprintf(out, "R.Prim(\"%s\")", ir_dtype_name(s->dtype) ? ir_dtype_name(s->dtype) : "void");
        }
        return;
    case IR_SINFO_SHAPE:
        if (dims_known(s)) {
            fputs("R.Shape([", out);
            for (int32_t i = 0; i < s->ndim; i++) {
                if (i) fputs(", ", out);
                ir_prim_print(s->dims[i], out);
            }
            fputs("])", out);
        } else if (s->ndim >= 0) {
            fprintf(out, "R.Shape(ndim=%d)", s->ndim);
        } else {
            fputs("R.Shape", out);
        }
        return;
    case IR_SINFO_TENSOR: {
        bool dt = !ir_dtype_is_void(s->dtype);
        const char *dn = dt ? ir_dtype_name(s->dtype) : NULL;
        if (dims_known(s)) {
            fputs("R.Tensor(", out);
            print_dims(s, out);
            if (dt) fprintf(out, ", dtype=\"%s\"", dn ? dn : "?");
            fputc(')', out);
        } else if (s->ndim >= 0 || dt) {
            fputs("R.Tensor(", out);
            if (s->ndim >= 0) fprintf(out, "ndim=%d", s->ndim);
            if (dt) fprintf(out, "%sdtype=\"%s\"", s->ndim >= 0 ? ", " : "", dn ? dn : "?");
            fputc(')', out);
        } else {
            fputs("R.Tensor", out);
        }
        return;
    }
    case IR_SINFO_TUPLE:
        fputs("R.Tuple(", out);
        for (uint32_t i = 0; i < s->n; i++) {
            if (i) fputs(", ", out);
            ir_sinfo_print(s->fields[i], out);
        }
        fputc(')', out);
        return;
    case IR_SINFO_FUNC:
        fputs("R.Callable(", out);
        if (s->opaque) {
            fputs("ret=", out);
            ir_sinfo_print(s->ret, out);
        } else {
            fputc('(', out);
            for (uint32_t i = 0; i < s->n; i++) {
                if (i) fputs(", ", out);
                ir_sinfo_print(s->fields[i], out);
            }
            if (s->n == 1) fputc(',', out);
            fputs("), ", out);
            ir_sinfo_print(s->ret, out);
        }
        fputc(')', out);
        return;
    }
}

int ir_sinfo_snprint(const ir_sinfo *s, char *buf, size_t size) {
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    if (!f) {
        if (size) buf[0] = '\0';
        return 0;
    }
    ir_sinfo_print(s, f);
    fclose(f);
    if (size) snprintf(buf, size, "%s", mem);
    free(mem);
    return (int)len;
}
