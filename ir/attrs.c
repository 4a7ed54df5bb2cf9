/* Typed attributes. */
#include "ir/attrs.h"

#include <inttypes.h>
#include <string.h>

#include "ir/ctx_impl.h"

ir_attr ir_attr_str(ir_ctx_t *ctx, const char *s) {
    ir_attr a = {.kind = IR_ATTR_STR, .u.s = ir_intern(ctx, s)};
    return a;
}

ir_attr ir_attr_array(ir_ctx_t *ctx, uint32_t n, const ir_attr *items) {
    ir_attr a = {.kind = IR_ATTR_ARRAY};
    a.u.arr.n = n;
    a.u.arr.items = n ? ir_alloc_copy(ctx, items, sizeof(ir_attr) * n) : NULL;
    return a;
}

ir_attr ir_attr_ints(ir_ctx_t *ctx, uint32_t n, const int64_t *v) {
    ir_attr *items = n ? IR_NEW_ARRAY(ctx, ir_attr, n) : NULL;
    for (uint32_t i = 0; i < n; i++) items[i] = ir_attr_int(v[i]);
    ir_attr a = {.kind = IR_ATTR_ARRAY};
    a.u.arr.n = n;
    a.u.arr.items = items;
    return a;
}

ir_attr ir_attr_expr(struct ir_expr *e) {
    ir_attr a = {.kind = IR_ATTR_EXPR, .u.expr = e};
    return a;
}

ir_attr ir_attr_obj(ir_ctx_t *ctx, gr_object *obj) {
    ir__ctx_keep(ctx, obj);
    ir_attr a = {.kind = IR_ATTR_OBJ, .u.obj = obj};
    return a;
}

const ir_attrs *ir_attrs_new(ir_ctx_t *ctx, uint32_t n, const char *const *keys,
                             const ir_attr *vals) {
    if (n == 0) return NULL;
    ir_attrs *a = IR_NEW(ctx, ir_attrs);
    const char **k = IR_NEW_ARRAY(ctx, const char *, n);
    for (uint32_t i = 0; i < n; i++) k[i] = ir_intern(ctx, keys[i]);
    a->n = n;
    a->keys = k;
    a->vals = ir_alloc_copy(ctx, vals, sizeof(ir_attr) * n);
    return a;
}

static int find_key(const ir_attrs *attrs, const char *key) {
    if (!attrs) return -1;
    for (uint32_t i = 0; i < attrs->n; i++)
        if (attrs->keys[i] == key || strcmp(attrs->keys[i], key) == 0) return (int)i;
    return -1;
}

const ir_attrs *ir_attrs_set(ir_ctx_t *ctx, const ir_attrs *attrs, const char *key, ir_attr val) {
    uint32_t n = attrs ? attrs->n : 0;
    int at = find_key(attrs, key);
    uint32_t m = at >= 0 ? n : n + 1;
    const char **keys = gr_xmalloc(sizeof(char *) * m);
    ir_attr *vals = gr_xmalloc(sizeof(ir_attr) * m);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = attrs->keys[i];
        vals[i] = attrs->vals[i];
    }
    uint32_t slot = at >= 0 ? (uint32_t)at : n;
    keys[slot] = key;
    vals[slot] = val;
    const ir_attrs *r = ir_attrs_new(ctx, m, keys, vals);
    free(keys);
    free(vals);
    return r;
}

const ir_attrs *ir_attrs_remove(ir_ctx_t *ctx, const ir_attrs *attrs, const char *key) {
    int at = find_key(attrs, key);
    if (at < 0) return attrs;
    const char **keys = gr_xmalloc(sizeof(char *) * attrs->n);
    ir_attr *vals = gr_xmalloc(sizeof(ir_attr) * attrs->n);
    uint32_t m = 0;
    for (uint32_t i = 0; i < attrs->n; i++) {
        if ((int)i == at) continue;
        keys[m] = attrs->keys[i];
        vals[m++] = attrs->vals[i];
    }
    const ir_attrs *r = ir_attrs_new(ctx, m, keys, vals);
    free(keys);
    free(vals);
    return r;
}

const ir_attr *ir_attrs_get(const ir_attrs *attrs, const char *key) {
    int at = find_key(attrs, key);
    return at >= 0 ? &attrs->vals[at] : NULL;
}

int64_t ir_attrs_get_int(const ir_attrs *attrs, const char *key, int64_t dflt) {
    const ir_attr *a = ir_attrs_get(attrs, key);
    if (!a) return dflt;
    if (a->kind == IR_ATTR_INT) return a->u.i;
    if (a->kind == IR_ATTR_BOOL) return a->u.b;
    return dflt;
}

double ir_attrs_get_float(const ir_attrs *attrs, const char *key, double dflt) {
    const ir_attr *a = ir_attrs_get(attrs, key);
    if (!a) return dflt;
    if (a->kind == IR_ATTR_FLOAT) return a->u.f;
    if (a->kind == IR_ATTR_INT) return (double)a->u.i;
    return dflt;
}

bool ir_attrs_get_bool(const ir_attrs *attrs, const char *key, bool dflt) {
    const ir_attr *a = ir_attrs_get(attrs, key);
    if (!a) return dflt;
    if (a->kind == IR_ATTR_BOOL) return a->u.b;
    if (a->kind == IR_ATTR_INT) return a->u.i != 0;
    return dflt;
}

const char *ir_attrs_get_str(const ir_attrs *attrs, const char *key) {
    const ir_attr *a = ir_attrs_get(attrs, key);
    return a && a->kind == IR_ATTR_STR ? a->u.s : NULL;
}

int ir_attrs_get_ints(const ir_attrs *attrs, const char *key, int64_t *out, int max) {
    const ir_attr *a = ir_attrs_get(attrs, key);
    if (!a || a->kind != IR_ATTR_ARRAY) return -1;
    for (uint32_t i = 0; i < a->u.arr.n && (int)i < max; i++) {
        const ir_attr *it = &a->u.arr.items[i];
        out[i] = it->kind == IR_ATTR_INT ? it->u.i : 0;
    }
    return (int)a->u.arr.n;
}

bool ir_attr_equal(const ir_attr *a, const ir_attr *b) {
    if (a->kind != b->kind) return false;
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_NONE: return true;
    case IR_ATTR_BOOL: return a->u.b == b->u.b;
    case IR_ATTR_INT: return a->u.i == b->u.i;
    case IR_ATTR_FLOAT: return a->u.f == b->u.f || (a->u.f != a->u.f && b->u.f != b->u.f);
    case IR_ATTR_STR: return a->u.s == b->u.s || strcmp(a->u.s, b->u.s) == 0;
    case IR_ATTR_DTYPE: return ir_dtype_eq(a->u.dtype, b->u.dtype);
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP: {
        if (a->u.arr.n != b->u.arr.n) return false;
        uint32_t n = a->u.arr.n * (a->kind == IR_ATTR_MAP ? 2 : 1);
        for (uint32_t i = 0; i < n; i++)
            if (!ir_attr_equal(&a->u.arr.items[i], &b->u.arr.items[i])) return false;
        return true;
    }
    case IR_ATTR_EXPR: return a->u.expr == b->u.expr;
    case IR_ATTR_PRIM: return a->u.prim == b->u.prim;
    case IR_ATTR_OBJ: return a->u.obj == b->u.obj;
    }
    return false;
}

void ir_print_str_literal(const char *s, FILE *out) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c == '\n') fputs("\\n", out);
        else if (c == '\t') fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}

void ir_attr_print(const ir_attr *a, FILE *out) {
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_NONE: fputs("None", out); break;
    case IR_ATTR_BOOL: fputs(a->u.b ? "True" : "False", out); break;
    case IR_ATTR_INT: fprintf(out, "%" PRId64, a->u.i); break;
    case IR_ATTR_FLOAT: {
        /* Shortest text that reads back to the same double. */
        char buf[64];
        for (int prec = 6; prec <= 17; prec++) {
            snprintf(buf, sizeof(buf), "%.*g", prec, a->u.f);
            if (strtod(buf, NULL) == a->u.f) break;
        }
        if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
        if (strcmp(buf, "inf") == 0) strcpy(buf, "float(\"inf\")");
        else if (strcmp(buf, "-inf") == 0) strcpy(buf, "float(\"-inf\")");
        else if (strstr(buf, "nan")) strcpy(buf, "float(\"nan\")");
        fputs(buf, out);
        break;
    }
    case IR_ATTR_STR: ir_print_str_literal(a->u.s, out); break;
    case IR_ATTR_DTYPE: ir_print_str_literal(ir_dtype_name(a->u.dtype) ? ir_dtype_name(a->u.dtype) : "?", out); break;
    case IR_ATTR_ARRAY:
        fputc('[', out);
        for (uint32_t i = 0; i < a->u.arr.n; i++) {
            if (i) fputs(", ", out);
            ir_attr_print(&a->u.arr.items[i], out);
        }
        fputc(']', out);
        break;
    case IR_ATTR_MAP:
        fputc('{', out);
        for (uint32_t i = 0; i < a->u.arr.n; i++) {
            if (i) fputs(", ", out);
            ir_attr_print(&a->u.arr.items[2 * i], out);
            fputs(": ", out);
            ir_attr_print(&a->u.arr.items[2 * i + 1], out);
        }
        fputc('}', out);
        break;
    case IR_ATTR_PRIM: ir_prim_print(a->u.prim, out); break;
    case IR_ATTR_EXPR: fputs("<expr>", out); break; /* the IR printer prints these */
    case IR_ATTR_OBJ: fprintf(out, "<%s>", a->u.obj && a->u.obj->type ? a->u.obj->type : "object"); break;
    }
}
