/* Attribute normalization against an op's schema, parsing of the schema's default literals,
 * and attribute access helpers for the inference functions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx_impl.h"
#include "ir/ops/op_impl.h"

static ir_attr canon_attr(ir_ctx_t *ctx, const ir_attr *a);

/* An array attr whose items are hash-consed (no arena growth for repeated values). */
static ir_attr make_array(ir_ctx_t *ctx, uint32_t n, const ir_attr *items) {
    ir_attr tmp = {.kind = IR_ATTR_ARRAY};
    tmp.u.arr.n = n;
    tmp.u.arr.items = items;
    return canon_attr(ctx, &tmp);
}

/* ---- default literals: None, True, False, ints, floats, "str", [ints] ---- */

static const char *skip_ws(const char *s) {
    while (*s == ' ') s++;
    return s;
}

/* Parses one literal at *ps; returns false on a malformed literal (a table bug). */
static bool parse_literal(ir_ctx_t *ctx, const char **ps, uint8_t kind, ir_attr *out) {
    const char *s = skip_ws(*ps);
    if (strncmp(s, "None", 4) == 0) {
        *out = ir_attr_none();
        *ps = s + 4;
        return true;
    }
    if (strncmp(s, "True", 4) == 0 || strncmp(s, "False", 5) == 0) {
        *out = ir_attr_bool(s[0] == 'T');
        *ps = s + (s[0] == 'T' ? 4 : 5);
        return true;
    }
    if (*s == '"') {
        const char *e = strchr(s + 1, '"');
        if (!e) return false;
        const char *str = ir_intern_n(ctx, s + 1, (size_t)(e - s - 1));
        if (kind == IR_ATTR_DTYPE) {
            ir_dtype t;
            if (!ir_dtype_parse(str, &t)) return false;
            *out = ir_attr_dtype(t);
        } else {
            *out = (ir_attr){.kind = IR_ATTR_STR, .u.s = str};
        }
        *ps = e + 1;
        return true;
    }
    if (*s == '[') {
        ir_attr items[16];
        uint32_t n = 0;
        s = skip_ws(s + 1);
        while (*s != ']') {
            if (n == 16 || !parse_literal(ctx, &s, IR_ATTR_INT, &items[n])) return false;
            n++;
            s = skip_ws(s);
            if (*s == ',') s = skip_ws(s + 1);
            else if (*s != ']') return false;
        }
        *out = make_array(ctx, n, items);
        *ps = s + 1;
        return true;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end != s && *end != '.' && *end != 'e' && errno == 0) {
        *out = kind == IR_ATTR_FLOAT ? ir_attr_float((double)v) : ir_attr_int(v);
        *ps = end;
        return true;
    }
    double f = strtod(s, &end);
    if (end == s) return false;
    *out = ir_attr_float(f);
    *ps = end;
    return true;
}

static ir_attr parse_default(ir_ctx_t *ctx, const ir_op_def *def, const ir_attr_field *f) {
    const char *s = f->dflt;
    ir_attr a;
    if (!parse_literal(ctx, &s, f->kind, &a) || *skip_ws(s) != '\0')
        gr_abort(__FILE__, __LINE__, "op table: bad default %s for %s.%s", f->dflt, def->name,
                 f->name);
    return a;
}

/* ---- hash-consed attr values ----
 * Normalized attrs are hash-consed, so a million calls with the same attrs share one copy and
 * normalizing costs no arena memory after the first. Values are rebuilt field by field into
 * zeroed storage because hash-consing compares raw bytes (padding included). */
enum { ITEMS_TAG = 0x4154494d, KEYS_TAG = 0x41544b59, ATTRS_TAG = 0x41545253 };

static ir_attr canon_attr(ir_ctx_t *ctx, const ir_attr *a) {
    ir_attr c;
    memset(&c, 0, sizeof(c));
    c.kind = a->kind;
    switch (a->kind) {
    case IR_ATTR_NONE: break;
    case IR_ATTR_BOOL: c.u.b = a->u.b; break;
    case IR_ATTR_INT: c.u.i = a->u.i; break;
    case IR_ATTR_FLOAT: c.u.f = a->u.f; break;
    case IR_ATTR_STR: c.u.s = a->u.s; break;
    case IR_ATTR_DTYPE: c.u.dtype = a->u.dtype; break;
    case IR_ATTR_PRIM: c.u.prim = a->u.prim; break;
    case IR_ATTR_EXPR: c.u.expr = a->u.expr; break;
    case IR_ATTR_OBJ: c.u.obj = a->u.obj; break;
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP: {
        uint32_t n = a->u.arr.n;
        c.u.arr.n = n;
        if (!n) break;
        ir_attr stack[16];
        ir_attr *items = n <= 16 ? stack : gr_xmalloc(sizeof(ir_attr) * n);
        for (uint32_t i = 0; i < n; i++) items[i] = canon_attr(ctx, &a->u.arr.items[i]);
        c.u.arr.items = ir_hashcons(ctx, ITEMS_TAG, items, sizeof(ir_attr) * n);
        if (items != stack) free(items);
        break;
    }
    default: c.u = a->u; break;
    }
    return c;
}

/* Per-context cache of one op's parsed defaults (ctx->op_dflt[row], freed with the context):
 * canonical default values, the interned key list and the all-defaults attrs. */
struct ir_op_dflt {
    const ir_attr *vals;       /* nattrs entries; a required field holds kind NONE */
    const char *const *keys;   /* interned, hash-consed */
    const ir_attrs *all;       /* every field at its default; NULL when a field is required */
};

static ir_attr parse_default(ir_ctx_t *ctx, const ir_op_def *def, const ir_attr_field *f);

static struct ir_op_dflt *op_defaults(ir_ctx_t *ctx, const ir_op_def *def) {
    if (def->index >= ir_op_def_count() || ir_op_def_at(def->index) != def) return NULL;
    if (!ctx->op_dflt) ctx->op_dflt = gr_xcalloc(ir_op_def_count(), sizeof(*ctx->op_dflt));
    struct ir_op_dflt *e = &ctx->op_dflt[def->index];
    if (e->vals) return e;
    ir_attr *v = IR_NEW_ARRAY(ctx, ir_attr, def->nattrs);
    const char *ik[64];
    bool complete = true;
    for (uint16_t j = 0; j < def->nattrs; j++) {
        const ir_attr_field *f = &def->attrs[j];
        ik[j] = ir_intern(ctx, f->name);
        if (f->dflt) {
            ir_attr d = parse_default(ctx, def, f);
            v[j] = canon_attr(ctx, &d);
        } else {
            complete = false;
        }
    }
    e->keys = ir_hashcons(ctx, KEYS_TAG, ik, sizeof(ik[0]) * def->nattrs);
    e->vals = v;
    if (complete) {
        ir_attrs key;
        memset(&key, 0, sizeof(key));
        key.n = def->nattrs;
        key.keys = e->keys;
        key.vals = ir_hashcons(ctx, ITEMS_TAG, v, sizeof(ir_attr) * def->nattrs);
        e->all = ir_hashcons(ctx, ATTRS_TAG, &key, sizeof(key));
    }
    return e;
}

/* Hash-consed attrs from interned keys and canonical values. */
static const ir_attrs *intern_attrs(ir_ctx_t *ctx, uint32_t n, const char *const *keys,
                                    const ir_attr *vals) {
    ir_attrs key;
    memset(&key, 0, sizeof(key));
    key.n = n;
    key.keys = keys;
    key.vals = ir_hashcons(ctx, ITEMS_TAG, vals, sizeof(vals[0]) * n);
    return ir_hashcons(ctx, ATTRS_TAG, &key, sizeof(key));
}

/* ---- normalization ---- */

static const char *kind_name(uint8_t k) {
    static const char *const names[] = {"None", "bool", "int", "float", "string", "dtype",
                                        "array", "map", "expr", "prim", "object"};
    return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* Coerces `v` to the field's kind; false when it does not fit. */
static bool coerce(ir_ctx_t *ctx, const ir_attr_field *f, const ir_attr *dflt, const ir_attr *v,
                   ir_attr *out) {
    if (v->kind == IR_ATTR_NONE && f->kind == IR_ATTR_DTYPE) {
        /* TVM 0.27 prints an unset dtype as None (older versions "void") */
        *out = ir_attr_dtype(IR_DTYPE_VOID);
        return true;
    }
    if (v->kind == IR_ATTR_NONE) {
        *out = *v;
        return f->dflt && strcmp(f->dflt, "None") == 0;
    }
    if (v->kind == IR_ATTR_PRIM && v->u.prim && v->u.prim->kind == IR_PRIM_INT) {
        ir_attr iv = ir_attr_int(v->u.prim->value);
        return coerce(ctx, f, dflt, &iv, out);
    }
    switch (f->kind) {
    case IR_ATTR_INT:
        if (v->kind == IR_ATTR_INT) { *out = *v; return true; }
        if (v->kind == IR_ATTR_BOOL) { *out = ir_attr_int(v->u.b); return true; }
        if (v->kind == IR_ATTR_PRIM) { *out = *v; return true; }
        return false;
    case IR_ATTR_FLOAT:
        if (v->kind == IR_ATTR_FLOAT) { *out = *v; return true; }
        if (v->kind == IR_ATTR_INT) { *out = ir_attr_float((double)v->u.i); return true; }
        return false;
    case IR_ATTR_BOOL:
        if (v->kind == IR_ATTR_BOOL) { *out = *v; return true; }
        if (v->kind == IR_ATTR_INT && (v->u.i == 0 || v->u.i == 1)) {
            *out = ir_attr_bool(v->u.i != 0);
            return true;
        }
        return false;
    case IR_ATTR_STR:
        if (v->kind == IR_ATTR_STR) { *out = *v; return true; }
        return false;
    case IR_ATTR_DTYPE:
        if (v->kind == IR_ATTR_DTYPE) { *out = *v; return true; }
        if (v->kind == IR_ATTR_STR) {
            ir_dtype t;
            if (!ir_dtype_parse(v->u.s, &t)) return false;
            *out = ir_attr_dtype(t);
            return true;
        }
        return false;
    case IR_ATTR_ARRAY: {
        /* split's indices_or_sections is an int (sections) or a list (indices). */
        bool int_ok = strcmp(f->name, "indices_or_sections") == 0;
        if (v->kind == IR_ATTR_INT && int_ok) { *out = *v; return true; }
        uint32_t want = dflt && dflt->kind == IR_ATTR_ARRAY ? dflt->u.arr.n : 0;
        if (v->kind == IR_ATTR_INT) {
            /* A single int stands for the whole list, as TVM's Python wrappers allow
             * (strides=2 -> [2, 2]; axis=1 -> [1]). */
            uint32_t n = want ? want : 1;
            ir_attr items[16];
            if (n > 16) n = 16;
            for (uint32_t i = 0; i < n; i++) items[i] = *v;
            *out = make_array(ctx, n, items);
            return true;
        }
        if (v->kind != IR_ATTR_ARRAY) return false;
        for (uint32_t i = 0; i < v->u.arr.n; i++) {
            uint8_t k = v->u.arr.items[i].kind;
            if (k != IR_ATTR_INT && k != IR_ATTR_PRIM && k != IR_ATTR_FLOAT) return false;
        }
        uint32_t n = v->u.arr.n;
        if (want > 1 && n >= 1 && n < want && want <= 16 &&
            (n == 1 || (strcmp(f->name, "padding") == 0 && n * 2 == want))) {
            /* TVM completes short lists: padding [p] -> [p, p, p, p], [t, l] -> [t, l, t, l];
             * strides [s] -> [s, s]. */
            ir_attr items[16];
            for (uint32_t i = 0; i < want; i++) items[i] = v->u.arr.items[i % n];
            *out = make_array(ctx, want, items);
            return true;
        }
        *out = *v;
        return true;
    }
    default:
        if (v->kind == f->kind) { *out = *v; return true; }
        return false;
    }
}

gr_status ir_op_attrs_normalize(ir_ctx_t *ctx, const ir_op_def *def, const ir_attrs *given,
                                const ir_attrs **out, gr_diag *diag) {
    return ir_op_attrs_normalize_ex(ctx, def, given, false, out, diag);
}

ir_call *ir_call_op(ir_ctx_t *ctx, ir_op_id id, uint32_t nargs, ir_expr *const *args,
                    uint32_t nattrs, const char *const *keys, const ir_attr *vals,
                    const ir_span *span, gr_diag *diag) {
    const ir_op_def *def = ir_op_def_at((uint32_t)id);
    if (!def) {
        gr_diag_set(diag, GR_ERR_UNSUPPORTED, "op id %d is not in the op table", (int)id);
        return NULL;
    }
    const ir_attrs *given = nattrs ? ir_attrs_new(ctx, nattrs, keys, vals) : NULL;
    const ir_attrs *attrs = NULL;
    if (ir_op_attrs_normalize(ctx, def, given, &attrs, diag) != GR_OK) return NULL;
    return ir_call_new(ctx, &ir_op_get_def(ctx, def)->base, nargs, args, attrs, 0, NULL, span);
}

gr_status ir_op_attrs_normalize_ex(ir_ctx_t *ctx, const ir_op_def *def, const ir_attrs *given,
                                   bool partial, const ir_attrs **out, gr_diag *diag) {
    *out = NULL;
    if (!def) return gr_diag_set(diag, GR_ERR_INVALID, "ir_op_attrs_normalize: no op");
    /* Unknown keys first: the message names the op and the key. */
    for (uint32_t i = 0; given && i < given->n; i++) {
        bool known = false;
        for (uint16_t j = 0; j < def->nattrs && !known; j++)
            known = strcmp(def->attrs[j].name, given->keys[i]) == 0;
        if (!known) {
            gr_diag_set_op(diag, def->text_name);
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: unknown attribute '%s'",
                               def->text_name, given->keys[i]);
        }
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(given->keys[k], given->keys[i]) == 0) {
                gr_diag_set_op(diag, def->text_name);
                return gr_diag_set(diag, GR_ERR_INVALID, "%s: attribute '%s' given twice",
                                   def->text_name, given->keys[i]);
            }
    }
    if (def->nattrs == 0) return GR_OK;
    GR_ASSERT(def->nattrs <= 64);
    const struct ir_op_dflt *e = op_defaults(ctx, def);
    if (e && e->all && (!given || given->n == 0)) {
        *out = e->all;
        return GR_OK;
    }
    const char *keys[64];
    ir_attr vals[64];
    for (uint16_t j = 0; j < def->nattrs; j++) {
        const ir_attr_field *f = &def->attrs[j];
        const ir_attr *v = ir_attrs_get(given, f->name);
        keys[j] = e ? e->keys[j] : ir_intern(ctx, f->name);
        ir_attr dflt = {0};
        bool have_dflt = f->dflt != NULL;
        if (have_dflt && e) {
            dflt = e->vals[j];
        } else if (have_dflt) {
            ir_attr d = parse_default(ctx, def, f);
            dflt = canon_attr(ctx, &d);
        }
        if (!v) {
            if (!have_dflt && partial) {
                vals[j].kind = IR_ATTR_NONE;
                continue;
            }
            if (!have_dflt) {
                gr_diag_set_op(diag, def->text_name);
                return gr_diag_set(diag, GR_ERR_INVALID, "%s: missing required attribute '%s'",
                                   def->text_name, f->name);
            }
            vals[j] = dflt;
            continue;
        }
        ir_attr c;
        if (!coerce(ctx, f, have_dflt ? &dflt : NULL, v, &c)) {
            gr_diag_set_op(diag, def->text_name);
            return gr_diag_set(diag, GR_ERR_INVALID, "%s: attribute '%s' expects %s, got %s",
                               def->text_name, f->name, kind_name(f->kind), kind_name(v->kind));
        }
        vals[j] = canon_attr(ctx, &c);
    }
    /* out_layout left out follows the input layout (TVM: out_layout=None means data_layout) */
    if (!ir_attrs_get(given, "out_layout")) {
        int jo = -1, ji = -1;
        for (uint16_t j = 0; j < def->nattrs; j++) {
            if (strcmp(def->attrs[j].name, "out_layout") == 0) jo = j;
            if (strcmp(def->attrs[j].name, "data_layout") == 0 || strcmp(def->attrs[j].name, "layout") == 0) ji = j;
        }
        if (jo >= 0 && ji >= 0 && ir_attrs_get(given, def->attrs[ji].name)) vals[jo] = vals[ji];
    }
    *out = intern_attrs(ctx, def->nattrs,
                        e ? e->keys : ir_hashcons(ctx, KEYS_TAG, keys, sizeof(keys[0]) * def->nattrs),
                        vals);
    return GR_OK;
}

/* ---- access helpers for inference ---- */

const ir_attr *ir__attr(const ir_call *call, const char *key) {
    return ir_attrs_get(call->attrs, key);
}

int64_t ir__attr_int(const ir_call *call, const char *key, int64_t dflt) {
    const ir_attr *a = ir__attr(call, key);
    if (!a) return dflt;
    if (a->kind == IR_ATTR_INT) return a->u.i;
    if (a->kind == IR_ATTR_BOOL) return a->u.b;
    if (a->kind == IR_ATTR_PRIM && a->u.prim && a->u.prim->kind == IR_PRIM_INT)
        return a->u.prim->value;
    return dflt;
}

bool ir__attr_bool(const ir_call *call, const char *key) {
    const ir_attr *a = ir__attr(call, key);
    if (!a) return false;
    if (a->kind == IR_ATTR_BOOL) return a->u.b;
    if (a->kind == IR_ATTR_INT) return a->u.i != 0;
    return false;
}

const char *ir__attr_str(const ir_call *call, const char *key) {
    const ir_attr *a = ir__attr(call, key);
    if (!a) return NULL;
    if (a->kind == IR_ATTR_STR) return a->u.s;
    if (a->kind == IR_ATTR_DTYPE) return ir_dtype_name(a->u.dtype);
    return NULL;
}

ir_dtype ir__attr_dtype(const ir_call *call, const char *key) {
    const ir_attr *a = ir__attr(call, key);
    ir_dtype t = IR_DTYPE_VOID;
    if (!a) return t;
    if (a->kind == IR_ATTR_DTYPE) return a->u.dtype;
    if (a->kind == IR_ATTR_STR && ir_dtype_parse(a->u.s, &t)) return t;
    return IR_DTYPE_VOID;
}

int ir__attr_ints(const ir_call *call, const char *key, int64_t *out, int max) {
    const ir_attr *a = ir__attr(call, key);
    if (!a || a->kind == IR_ATTR_NONE) return -1;
    if (a->kind == IR_ATTR_INT) {
        if (max > 0) out[0] = a->u.i;
        return 1;
    }
    if (a->kind != IR_ATTR_ARRAY) return -1;
    int n = (int)a->u.arr.n;
    for (int i = 0; i < n; i++) {
        const ir_attr *it = &a->u.arr.items[i];
        int64_t v;
        if (it->kind == IR_ATTR_INT) v = it->u.i;
        else if (it->kind == IR_ATTR_PRIM && ir_prim_is_int(it->u.prim, &v)) {
        } else return -2;
        if (i < max) out[i] = v;
    }
    return n;
}
