/* The JSON graph serializer and the json codegen (see json_codegen.h).
 *
 * The graph is written straight as JSON text into one growing buffer (what a Jansson document
 * would dump, byte for byte: same key order, number and string formats), while the typed nodes
 * go to the runtime graph builder. No JSON value is built per node: on a 100k-node region that
 * was ~30 small allocations a node, most of the codegen time. The runtime parses the text only
 * when a node's attrs are first needed. */
#include "backends/json/json_codegen.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "base/sys.h"
#include "ir/idtab_impl.h"
#include "ir/op.h"
#include "runtime/json/json_runtime.h"

/* ---- JSON text writer ---- */

typedef struct jw {
    char *p;
    size_t len, cap;
} jw;

static void jw_grow(jw *w, size_t n) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n + 1) cap *= 2;
    w->p = gr_xrealloc(w->p, cap);
    w->cap = cap;
    gr_advise_huge(w->p, cap);
}

static inline void jw_raw(jw *w, const char *s, size_t n) {
    if (!n) return;
    if (w->len + n + 1 > w->cap) jw_grow(w, n);
    memcpy(w->p + w->len, s, n);
    w->len += n;
}

#define JW_LIT(w, s) jw_raw(w, s, sizeof(s) - 1)

static inline void jw_ch(jw *w, char c) {
    if (w->len + 2 > w->cap) jw_grow(w, 1);
    w->p[w->len++] = c;
}

static void jw_int(jw *w, int64_t v) {
    char buf[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) buf[sizeof buf - 1 - n++] = '-';
    jw_raw(w, buf + sizeof buf - n, (size_t)n);
}

/* Jansson's real format: %.17g, always a '.' or an exponent, no '+' or leading zeros in the
 * exponent. Non-finite values have no JSON form: false (the caller leaves the value out, as
 * Jansson does). */
static bool jw_real(jw *w, double v) {
    if (!isfinite(v)) return false;
    char buf[48];
    int n = snprintf(buf, sizeof buf, "%.17g", v);
    if (n <= 0 || n >= (int)sizeof buf - 3) return false;
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(buf, 'e');
    if (e) {
        char *start = e + 1, *end = start + 1;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) {
            memmove(start, end, strlen(end) + 1);
            n = (int)strlen(buf);
        }
    }
    jw_raw(w, buf, (size_t)n);
    return true;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF), as Jansson checks. */
static bool utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) k = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) k = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) k = 3, cp = c & 0x07;
        else return false;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* A JSON string; false (nothing written) for NULL or invalid UTF-8, which Jansson refuses.
 * One pass finds the length and whether anything needs escaping or checking (rarely). */
static bool jw_str(jw *w, const char *s) {
    if (!s) return false;
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    unsigned char special = 0, high = 0;
    for (unsigned char c; (c = u[n]); n++) {
        special |= c < 0x20 || c == '"' || c == '\\';
        high |= c & 0x80;
    }
    if (high && !utf8_ok(u, n)) return false;
    if (!special) {
        if (w->len + n + 3 > w->cap) jw_grow(w, n + 2);
        w->p[w->len++] = '"';
        memcpy(w->p + w->len, s, n);
        w->len += n;
        w->p[w->len++] = '"';
        return true;
    }
    size_t i = 0;
    jw_ch(w, '"');
    while (i < n) {
        size_t run = i;
        while (run < n && u[run] >= 0x20 && u[run] != '"' && u[run] != '\\') run++;
        jw_raw(w, s + i, run - i);
        if (run == n) break;
        unsigned char c = u[run];
        char esc[8];
        switch (c) {
        case '"': JW_LIT(w, "\\\""); break;
        case '\\': JW_LIT(w, "\\\\"); break;
        case '\b': JW_LIT(w, "\\b"); break;
        case '\f': JW_LIT(w, "\\f"); break;
        case '\n': JW_LIT(w, "\\n"); break;
        case '\r': JW_LIT(w, "\\r"); break;
        case '\t': JW_LIT(w, "\\t"); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            jw_raw(w, esc, 6);
        }
        i = run + 1;
    }
    jw_ch(w, '"');
    return true;
}

/* `,"key":` (comma unless first) */
static void jw_key(jw *w, bool *first, const char *key, size_t n) {
    if (!*first) jw_ch(w, ',');
    *first = false;
    jw_ch(w, '"');
    jw_raw(w, key, n);
    JW_LIT(w, "\":");
}

#define JW_KEY(w, first, k) jw_key(w, first, k, sizeof(k) - 1)

/* ---- codegen state ---- */

/* A serialized value: one entry (a tensor) or a tuple of values. */
typedef struct cg_val cg_val;
struct cg_val {
    bool tuple;
    uint32_t nid, index;
    uint32_t n;
    const cg_val *const *items;
};

/* Shape/dtype of one (hash-consed) struct info, shared by the nodes of that type: the text
 * `"shape":[...],"dtype":[...]` and the typed arrays. */
typedef struct cg_types {
    int nout;
    char *txt;
    size_t txtlen;
    DLDataType *dtypes;
    int32_t *ndims;
    int64_t (*shapes)[RT_MAX_NDIM];
} cg_types;

/* Scratch of one node under construction (nodes nest: an argument may create nodes first). */
typedef struct cg_level {
    jw inputs, args;           /* "inputs" items; "op_attrs"/"ops", "args", "composite" */
    GR_VEC(rt_json_entry) ins;
} cg_level;

typedef struct cg {
    ir_ctx_t *ctx;
    const byoc_region *r;
    json_cg_mode mode;
    jw out;                    /* the document up to the last finished node */
    rt_json_graph *g;          /* typed nodes */
    GR_VEC(uint32_t) arg_nodes, rows;
    uint32_t nnodes, nrows;
    ir_idtab vals;             /* var id -> cg_val (id tables: local on big regions) */
    ir_idtab lambdas;          /* var id -> ir_func */
    gr_map consts;             /* const -> cg_val */
    gr_map types;              /* sinfo (hash-consed) -> cg_types */
    gr_diag *diag;
    gr_status st;
    const ir_span *site;       /* span of the composite call being inlined (NULL: none) */
    jw louts;                  /* "layer_outputs" items: [nid, index, "layer"] */
    const ir_span *site_own;   /* the inlined lambda's own layers, in the order its call site
                                  lists them (NULL: its ops name the site's layers already) */
    cg_level **levels;
    uint32_t nlevels, depth;
} cg;

static cg_level *level_push(cg *c) {
    if (c->depth == c->nlevels) {
        c->levels = gr_xrealloc(c->levels, sizeof(*c->levels) * (c->nlevels + 1));
        c->levels[c->nlevels++] = gr_xcalloc(1, sizeof(cg_level));
    }
    cg_level *lv = c->levels[c->depth++];
    lv->inputs.len = lv->args.len = 0;
    lv->ins.len = 0;
    return lv;
}

static void level_pop(cg *c) { c->depth--; }

static cg_val *val_entry(cg *c, uint32_t nid, uint32_t index) {
    cg_val *v = IR_NEW(c->ctx, cg_val);
    v->nid = nid;
    v->index = index;
    return v;
}

static gr_status fail(cg *c, const ir_span *sp, const char *fmt, const char *what) {
    if (!c->st) {
        c->st = gr_fail(c->diag, GR_ERR_UNSUPPORTED, ir_span_layer(sp), NULL, "json codegen, region %s: %s %s",
                        c->r->symbol, fmt, what ? what : "");
    }
    return c->st;
}

/* An attribute value; false when it has no JSON form (left out, as before). */
static bool attr_text(jw *w, const ir_attr *a) {
    switch (a->kind) {
    case IR_ATTR_BOOL:
        if (a->u.b) JW_LIT(w, "true");
        else JW_LIT(w, "false");
        return true;
    case IR_ATTR_INT: jw_int(w, a->u.i); return true;
    case IR_ATTR_FLOAT: return jw_real(w, a->u.f);
    case IR_ATTR_STR: return jw_str(w, a->u.s);
    case IR_ATTR_DTYPE: return jw_str(w, ir_dtype_name(a->u.dtype) ? ir_dtype_name(a->u.dtype) : "void");
    case IR_ATTR_ARRAY: {
        jw_ch(w, '[');
        bool first = true;
        for (uint32_t i = 0; i < a->u.arr.n; i++) {
            size_t mark = w->len;
            if (!first) jw_ch(w, ',');
            if (attr_text(w, &a->u.arr.items[i])) first = false;
            else w->len = mark;
        }
        jw_ch(w, ']');
        return true;
    }
    case IR_ATTR_PRIM: {
        int64_t v;
        if (ir_prim_is_int(a->u.prim, &v)) jw_int(w, v);
        else JW_LIT(w, "null");
        return true;
    }
    default: JW_LIT(w, "null"); return true;
    }
}

static void op_attrs_text(jw *w, const ir_attrs *attrs) {
    jw_ch(w, '{');
    bool first = true;
    for (uint32_t i = 0; attrs && i < attrs->n; i++) {
        size_t mark = w->len;
        if (!first) jw_ch(w, ',');
        if (!jw_str(w, attrs->keys[i])) {
            w->len = mark;
            continue;
        }
        jw_ch(w, ':');
        if (!attr_text(w, &attrs->vals[i])) {
            w->len = mark;
            continue;
        }
        first = false;
    }
    jw_ch(w, '}');
}

/* [[source, output], ...]; a loc with a source range adds [line, col]. *layer: the first
 * source (what the runtime reads back as the node's layer). */
static void span_text(jw *w, const ir_span *s, const char **layer) {
    *layer = "";
    jw_ch(w, '[');
    for (uint32_t i = 0; s && i < s->n; i++) {
        if (i) jw_ch(w, ',');
        jw_ch(w, '[');
        bool src = jw_str(w, s->locs[i].source);
        if (src && i == 0) *layer = s->locs[i].source;
        if (src) jw_ch(w, ',');
        if (s->locs[i].is_output) JW_LIT(w, "true");
        else JW_LIT(w, "false");
        if (s->locs[i].line) {
            jw_ch(w, ',');
            jw_int(w, s->locs[i].line);
            jw_ch(w, ',');
            jw_int(w, s->locs[i].col);
        }
        jw_ch(w, ']');
    }
    jw_ch(w, ']');
}

typedef GR_VEC(const ir_sinfo *) sinfo_vec;

/* A dim: its value, or a symbolic one as its expression in the text format ("n", "(w - 1) // 2
 * + 1"); the runtime binds the vars from a call's tensors and evaluates the rest. */
static void dim_text(jw *w, const ir_prim *d) {
    int64_t v;
    if (ir_prim_is_int(d, &v)) {
        jw_int(w, v);
        return;
    }
    char stack[256];
    int n = ir_prim_snprint(d, stack, sizeof stack);
    if (n < (int)sizeof stack) {
        jw_str(w, stack);
        return;
    }
    /* a long expression (Swin's window dims after three patch merges) is written whole */
    char *heap = gr_xmalloc((size_t)n + 1);
    ir_prim_snprint(d, heap, (size_t)n + 1);
    jw_str(w, heap);
    free(heap);
}

/* per output of a tensor or a tuple of tensors: shape text, dtype text, typed; -1 when not
 * static tensors */
static int types_rec(const ir_sinfo *s, jw *sh, jw *dt, sinfo_vec *outs) {
    if (!s) return -1;
    if (s->kind == IR_SINFO_TUPLE) {
        int n = 0;
        for (uint32_t i = 0; i < s->n; i++) {
            int k = types_rec(s->fields[i], sh, dt, outs);
            if (k != 1) return -1;
            n += k;
        }
        return n;
    }
    if (s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM || (s->ndim > 0 && !s->dims) ||
        ir_dtype_is_void(s->dtype) || !ir_dtype_name(s->dtype))
        return -1;
    if (outs->len) jw_ch(sh, ',');
    jw_ch(sh, '[');
    for (int32_t k = 0; k < s->ndim; k++) {
        if (k) jw_ch(sh, ',');
        dim_text(sh, s->dims[k]);
    }
    jw_ch(sh, ']');
    size_t mark = dt->len;
    if (outs->len) jw_ch(dt, ',');
    if (!jw_str(dt, ir_dtype_name(s->dtype))) dt->len = mark;
    gr_vec_push(outs, s);
    return 1;
}

static const cg_types *node_types(cg *c, const ir_sinfo *s) {
    uint64_t cached;
    if (s && gr_map_get(&c->types, GR_MAP_PTR(s), &cached)) return (const cg_types *)(uintptr_t)cached;
    cg_types *ty = IR_NEW(c->ctx, cg_types);
    jw sh = {0}, dt = {0};
    sinfo_vec outs = {0};
    ty->nout = types_rec(s, &sh, &dt, &outs);
    if (ty->nout >= 0) {
        jw t = {0};
        JW_LIT(&t, "\"shape\":[");
        jw_raw(&t, sh.p, sh.len);
        JW_LIT(&t, "],\"dtype\":[");
        jw_raw(&t, dt.p, dt.len);
        jw_ch(&t, ']');
        ty->txt = ir_alloc(c->ctx, t.len);
        memcpy(ty->txt, t.p, t.len);
        ty->txtlen = t.len;
        free(t.p);
        uint32_t n = (uint32_t)ty->nout;
        ty->dtypes = IR_NEW_ARRAY(c->ctx, DLDataType, n ? n : 1);
        ty->ndims = IR_NEW_ARRAY(c->ctx, int32_t, n ? n : 1);
        ty->shapes = ir_alloc(c->ctx, sizeof(*ty->shapes) * (n ? n : 1));
        for (uint32_t o = 0; o < n; o++) {
            const ir_sinfo *ts = outs.data[o];
            /* what the runtime reads back from the dtype name */
            if (!ir_dtype_parse(ir_dtype_name(ts->dtype), &ty->dtypes[o])) ty->nout = -1;
            ty->ndims[o] = ts->ndim;
            for (int32_t k = 0; k < ts->ndim; k++)
                if (!ir_prim_is_int(ts->dims[k], &ty->shapes[o][k])) ty->shapes[o][k] = -1; /* symbolic */
        }
    }
    free(sh.p);
    free(dt.p);
    gr_vec_free(&outs);
    if (s) gr_map_put(&c->types, GR_MAP_PTR(s), GR_MAP_PTR(ty));
    return ty;
}

/* Appends a node (lv: the kernel scratch, NULL for inputs and consts); returns its id, or -1
 * (c->st set) when its type is not a static tensor. */
static int add_node(cg *c, rt_json_node_kind kind, const char *name, cg_level *lv, const ir_sinfo *s,
                    const ir_span *sp) {
    const cg_types *ty = node_types(c, s);
    if (ty->nout < 0) {
        char buf[256] = "?";
        if (s) ir_sinfo_snprint(s, buf, sizeof buf);
        fail(c, sp, "needs static tensor types, got", buf);
        return -1;
    }
    static const char *const prefix[] = {"{\"op\":\"input\",\"name\":", "{\"op\":\"const\",\"name\":",
                                         "{\"op\":\"kernel\",\"name\":"};
    jw *w = &c->out;
    size_t mark = w->len;
    if (c->nnodes) jw_ch(w, ',');
    jw_raw(w, prefix[kind], strlen(prefix[kind]));
    if (!jw_str(w, name)) {
        w->len = mark;
        fail(c, sp, "node name is not valid UTF-8:", kind == RT_JSON_KERNEL ? "kernel" : "input or constant");
        return -1;
    }
    if (lv) {
        JW_LIT(w, ",\"inputs\":[");
        jw_raw(w, lv->inputs.p, lv->inputs.len);
        jw_ch(w, ']');
    }
    JW_LIT(w, ",\"attrs\":{");
    if (lv) {
        jw_raw(w, lv->args.p, lv->args.len);  /* "op_attrs"/"ops", "args", "composite" */
        jw_ch(w, ',');
    }
    jw_raw(w, ty->txt, ty->txtlen);
    JW_LIT(w, ",\"span\":");
    const char *layer;
    span_text(w, sp, &layer);
    if (lv) {
        JW_LIT(w, ",\"num_inputs\":");
        jw_int(w, lv->ins.len);
        JW_LIT(w, ",\"num_outputs\":");
        jw_int(w, ty->nout);
    }
    JW_LIT(w, "}}");
    if (c->g)
        rt_json_graph_add_node(c->g, kind, name, lv ? lv->ins.len : 0, lv ? lv->ins.data : NULL, (uint32_t)ty->nout,
                               ty->dtypes, ty->ndims, (const int64_t(*)[RT_MAX_NDIM])ty->shapes, layer);
    c->nrows += (uint32_t)ty->nout;
    gr_vec_push(&c->rows, c->nrows);
    return (int)c->nnodes++;
}

static const cg_val *node_val(cg *c, int nid, const ir_sinfo *s) {
    if (s->kind != IR_SINFO_TUPLE) return val_entry(c, (uint32_t)nid, 0);
    cg_val *t = IR_NEW(c->ctx, cg_val);
    t->tuple = true;
    t->n = s->n;
    const cg_val **items = IR_NEW_ARRAY(c->ctx, const cg_val *, s->n ? s->n : 1);
    for (uint32_t i = 0; i < s->n; i++) items[i] = val_entry(c, (uint32_t)nid, i);
    t->items = items;
    return t;
}

static const cg_val *visit(cg *c, ir_expr *e);

static const cg_val *const_val(cg *c, ir_expr *e) {
    uint64_t v;
    if (gr_map_get(&c->consts, GR_MAP_PTR(e), &v)) return (const cg_val *)(uintptr_t)v;
    const char *name = NULL;
    for (uint32_t i = 0; i < c->r->nconsts; i++)
        if (&c->r->consts[i]->base == e) name = c->r->const_names[i];
    if (!name) {
        fail(c, e->span, "constant without a name", NULL);
        return NULL;
    }
    int nid = add_node(c, RT_JSON_CONST, name, NULL, e->sinfo, e->span);
    if (nid < 0) return NULL;
    gr_vec_push(&c->arg_nodes, (uint32_t)nid);
    const cg_val *cv = val_entry(c, (uint32_t)nid, 0);
    gr_map_put(&c->consts, GR_MAP_PTR(e), GR_MAP_PTR(cv));
    return cv;
}

/* {"in":k} for the next input, which is entry v */
static void add_input(cg_level *lv, jw *w, const cg_val *v) {
    JW_LIT(w, "{\"in\":");
    jw_int(w, lv->ins.len);
    jw_ch(w, '}');
    if (lv->ins.len) jw_ch(&lv->inputs, ',');
    jw_ch(&lv->inputs, '[');
    jw_int(&lv->inputs, v->nid);
    jw_ch(&lv->inputs, ',');
    jw_int(&lv->inputs, v->index);
    JW_LIT(&lv->inputs, ",0]");
    gr_vec_push(&lv->ins, ((rt_json_entry){v->nid, v->index}));
}

/* One argument into level li's args: tensors become inputs of the level, leaves are inlined.
 * Visiting an argument may build other nodes first, on deeper levels (cg_level objects stay
 * where they are). */
static void arg_text(cg *c, uint32_t li, ir_expr *a, const ir_span *sp) {
    cg_level *lv = c->levels[li];
    jw *w = &lv->args;
    if (a->kind == IR_SHAPE) {
        const ir_shape_expr *s = IR_AS(a, ir_shape_expr);
        JW_LIT(w, "{\"shape\":[");
        for (uint32_t k = 0; k < s->n; k++) {
            if (k) jw_ch(w, ',');
            dim_text(w, s->dims[k]);
        }
        JW_LIT(w, "]}");
        return;
    }
    if (a->kind == IR_PRIMVAL) {
        const ir_primval *p = IR_AS(a, ir_primval);
        bool first = true;
        jw_ch(w, '{');
        if (p->value) {
            /* a symbolic one as its expression, evaluated when the graph is specialized */
            JW_KEY(w, &first, "int");
            dim_text(w, p->value);
        } else {
            size_t mark = w->len;
            JW_KEY(w, &first, "float");
            if (!jw_real(w, p->fvalue)) {
                w->len = mark;
                first = true;
            }
        }
        JW_KEY(w, &first, "dtype");
        jw_str(w, ir_dtype_name(p->dtype) ? ir_dtype_name(p->dtype) : "void");
        jw_ch(w, '}');
        return;
    }
    if (a->kind == IR_STR) {
        jw_ch(w, '{');
        size_t mark = w->len;
        JW_LIT(w, "\"str\":");
        if (!jw_str(w, IR_AS(a, ir_str)->value)) w->len = mark;
        jw_ch(w, '}');
        return;
    }
    if (a->kind == IR_TUPLE) {  /* a literal tuple: fields may be tensors or inline leaves */
        const ir_tuple *t = IR_AS(a, ir_tuple);
        JW_LIT(w, "{\"tuple\":[");
        for (uint32_t k = 0; k < t->n && !c->st; k++) {
            if (k) jw_ch(&lv->args, ',');
            arg_text(c, li, t->fields[k], sp);
        }
        JW_LIT(&lv->args, "]}");
        return;
    }
    const cg_val *v = visit(c, a);
    if (!v) {
        JW_LIT(w, "{}");
        return;
    }
    if (!v->tuple) {
        add_input(lv, w, v);
        return;
    }
    JW_LIT(w, "{\"tuple\":[");
    for (uint32_t k = 0; k < v->n; k++) {
        const cg_val *it = v->items[k];
        if (it->tuple) {
            fail(c, sp, "nested tuple argument", NULL);
            break;
        }
        if (k) jw_ch(w, ',');
        add_input(lv, w, it);
    }
    JW_LIT(w, "]}");
}

/* "args":[...] of a call into level li */
static void call_args(cg *c, uint32_t li, const ir_call *call) {
    JW_LIT(&c->levels[li]->args, "\"args\":[");
    for (uint32_t i = 0; i < call->nargs && !c->st; i++) {
        if (i) jw_ch(&c->levels[li]->args, ',');
        arg_text(c, li, call->args[i], call->base.span);
    }
    jw_ch(&c->levels[li]->args, ']');
}

static const cg_val *visit_func_body(cg *c, const ir_func *f, const cg_val *const *args);
static const ir_span *lambda_span(ir_ctx_t *ctx, const ir_func *f);

static const cg_val *visit_op_call(cg *c, const ir_call *call, const char *composite) {
    const ir_op_def *def = IR_AS(call->callee, ir_op)->def;
    cg_level *lv = level_push(c);
    uint32_t li = c->depth - 1;
    JW_LIT(&lv->args, "\"op_attrs\":");
    op_attrs_text(&lv->args, call->attrs);
    jw_ch(&lv->args, ',');
    call_args(c, li, call);
    if (composite) {
        size_t mark = lv->args.len;
        JW_LIT(&lv->args, ",\"composite\":");
        if (!jw_str(&lv->args, composite)) lv->args.len = mark;
    }
    int nid = -1;
    /* structurally equal composites are shared: the call site names the layers */
    if (!c->st)
        nid = add_node(c, RT_JSON_KERNEL, def->name, lv, call->base.sinfo, c->site ? c->site : call->base.span);
    level_pop(c);
    return nid < 0 ? NULL : node_val(c, nid, call->base.sinfo);
}

/* per-composite mode: one node for the whole lambda */
static const cg_val *visit_composite_node(cg *c, const ir_call *call, const ir_func *lam) {
    const char *comp = ir_attrs_get_str(lam->attrs, BYOC_ATTR_COMPOSITE);
    cg_level *lv = level_push(c);
    uint32_t li = c->depth - 1;
    const ir_span *parts[64];
    uint32_t np = 0;
    JW_LIT(&lv->args, "\"ops\":[");
    const ir_seq *s = lam->body->kind == IR_SEQ ? IR_AS(lam->body, ir_seq) : NULL;
    bool firstop = true;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_expr *v = s->blocks[b]->bindings[i].value;
            if (v->kind != IR_CALL || IR_AS(v, ir_call)->callee->kind != IR_OP) continue;
            if (!firstop) jw_ch(&lv->args, ',');
            firstop = false;
            bool first = true;
            jw_ch(&lv->args, '{');
            size_t mark = lv->args.len;
            JW_KEY(&lv->args, &first, "name");
            if (!jw_str(&lv->args, IR_AS(IR_AS(v, ir_call)->callee, ir_op)->def->name)) {
                lv->args.len = mark;
                first = true;
            }
            JW_KEY(&lv->args, &first, "op_attrs");
            op_attrs_text(&lv->args, IR_AS(v, ir_call)->attrs);
            jw_ch(&lv->args, '}');
            if (np < 64) parts[np++] = v->span;
        }
    JW_LIT(&lv->args, "],");
    call_args(c, li, call);
    size_t mark = lv->args.len;
    JW_LIT(&lv->args, ",\"composite\":");
    if (!jw_str(&lv->args, comp ? comp : "")) lv->args.len = mark;
    int nid = -1;
    if (!c->st) {
        const ir_span *sp = call->base.span ? call->base.span : ir_span_seq(c->ctx, parts, np);
        nid = add_node(c, RT_JSON_KERNEL, comp ? comp : "composite", lv, call->base.sinfo, sp);
    }
    level_pop(c);
    return nid < 0 ? NULL : node_val(c, nid, call->base.sinfo);
}

static const cg_val *visit(cg *c, ir_expr *e) {
    if (c->st) return NULL;
    uint64_t v;
    switch (e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        if ((v = ir_idtab_get(&c->vals, e->id))) return (const cg_val *)(uintptr_t)v;
        fail(c, e->span, "unbound var", IR_AS(e, ir_var)->name);
        return NULL;
    case IR_CONST:
        return const_val(c, e);
    case IR_TUPLE: {
        const ir_tuple *t = IR_AS(e, ir_tuple);
        cg_val *tv = IR_NEW(c->ctx, cg_val);
        tv->tuple = true;
        tv->n = t->n;
        const cg_val **items = IR_NEW_ARRAY(c->ctx, const cg_val *, t->n ? t->n : 1);
        for (uint32_t i = 0; i < t->n; i++)
            if (!(items[i] = visit(c, t->fields[i]))) return NULL;
        tv->items = items;
        return tv;
    }
    case IR_TGI: {
        const cg_val *t = visit(c, IR_AS(e, ir_tgi)->tuple);
        int32_t i = IR_AS(e, ir_tgi)->index;
        if (!t) return NULL;
        if (!t->tuple || i < 0 || (uint32_t)i >= t->n) {
            fail(c, e->span, "bad tuple projection", NULL);
            return NULL;
        }
        return t->items[i];
    }
    case IR_CALL: {
        const ir_call *call = IR_AS(e, ir_call);
        if (call->callee->kind == IR_OP) {
            const ir_op_def *def = IR_AS(call->callee, ir_op)->def;
            if (def->flags & (IR_OPF_CALL_LIKE | IR_OPF_IMPURE)) {
                fail(c, e->span, "op not supported by the json runtime:", def->name);
                return NULL;
            }
            return visit_op_call(c, call, NULL);
        }
        if ((v = ir_idtab_get(&c->lambdas, call->callee->id))) {
            const ir_func *lam = (const ir_func *)(uintptr_t)v;
            if (c->mode == JSON_CG_PER_COMPOSITE) return visit_composite_node(c, call, lam);
            const cg_val **args = IR_NEW_ARRAY(c->ctx, const cg_val *, call->nargs ? call->nargs : 1);
            for (uint32_t i = 0; i < call->nargs; i++)
                if (!(args[i] = visit(c, call->args[i]))) return NULL;
            const ir_span *saved = c->site, *saved_own = c->site_own;
            if (e->span) c->site = e->span;
            c->site_own = e->span ? lambda_span(c->ctx, lam) : NULL;
            const cg_val *rv = visit_func_body(c, lam, args);
            c->site = saved;
            c->site_own = saved_own;
            return rv;
        }
        fail(c, e->span, "call of something that is neither an op nor a composite", NULL);
        return NULL;
    }
    default:
        fail(c, e->span, "unsupported expression:", ir_expr_kind_name((ir_expr_kind)e->kind));
        return NULL;
    }
}

/* Records which entry produces which frontend layer's output (the output marks of the
 * binding's span, seed 002), for debug taps (graft diff). Inside an inlined composite the
 * op's own span counts only when its layers are the call site's (a lambda shared between
 * structurally equal composites names another site's layers); the call site's binding then
 * names the composite's output. */
/* The span FuseOps gives a call of lambda f (byoc_group_span): per binding, the spans of its
 * non-var arguments, then its own. */
static const ir_span *lambda_span(ir_ctx_t *ctx, const ir_func *f) {
    if (f->body->kind != IR_SEQ) return NULL;
    const ir_seq *s = IR_AS(f->body, ir_seq);
    GR_VEC(const ir_span *) parts = {0};
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->value->kind == IR_CALL)
                for (uint32_t k = 0; k < IR_AS(bd->value, ir_call)->nargs; k++) {
                    const ir_expr *a = IR_AS(bd->value, ir_call)->args[k];
                    if (!ir_is_var(a) && a->span) gr_vec_push(&parts, a->span);
                }
            const ir_span *sp = bd->value->span ? bd->value->span : bd->var->base.span;
            if (sp) gr_vec_push(&parts, sp);
        }
    const ir_span *r = ir_span_seq(ctx, parts.data, parts.len);
    gr_vec_free(&parts);
    return r;
}

/* Source `src` of an op inside the inlined lambda, as its call site names it: itself, or (a
 * lambda shared by structurally equal composites names another site's layers) the site's
 * source at the same position. NULL when there is none. */
static const char *site_source(cg *c, const char *src) {
    if (!c->site || ir_span_has_source(c->site, src)) return src;
    if (!c->site_own || c->site_own->n != c->site->n) return NULL;
    for (uint32_t i = 0; i < c->site_own->n; i++)
        if (c->site_own->locs[i].source == src) return c->site->locs[i].source;
    return NULL;
}

static void note_layer_outputs(cg *c, const ir_binding *bd, const cg_val *v) {
    const ir_span *s = bd->value->span ? bd->value->span : bd->var->base.span;
    if (!s || v->tuple) return;
    for (uint32_t k = 0; k < s->n; k++) {
        if (!s->locs[k].is_output) continue;
        const char *src = site_source(c, s->locs[k].source);
        if (!src) continue;
        size_t mark = c->louts.len;
        if (mark) jw_ch(&c->louts, ',');
        jw_ch(&c->louts, '[');
        jw_int(&c->louts, v->nid);
        jw_ch(&c->louts, ',');
        jw_int(&c->louts, v->index);
        jw_ch(&c->louts, ',');
        if (!jw_str(&c->louts, src)) {
            c->louts.len = mark;
            continue;
        }
        jw_ch(&c->louts, ']');
    }
}

static const cg_val *visit_func_body(cg *c, const ir_func *f, const cg_val *const *args) {
    for (uint32_t i = 0; i < f->nparams; i++) ir_idtab_put(&c->vals, f->params[i]->base.id, GR_MAP_PTR(args[i]));
    if (f->body->kind != IR_SEQ) return visit(c, f->body);
    const ir_seq *s = IR_AS(f->body, ir_seq);
    for (uint32_t b = 0; b < s->nblocks && !c->st; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n && !c->st; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->match_sinfo) {
                fail(c, bd->value->span, "match_cast is not supported", NULL);
                break;
            }
            if (bd->value->kind == IR_FUNC) {
                ir_idtab_put(&c->lambdas, bd->var->base.id, GR_MAP_PTR(bd->value));
                continue;
            }
            const cg_val *v = visit(c, bd->value);
            if (v) ir_idtab_put(&c->vals, bd->var->base.id, GR_MAP_PTR(v));
            if (v) note_layer_outputs(c, bd, v);
        }
    return c->st ? NULL : visit(c, s->body);
}

static void add_heads(cg *c, jw *w, const cg_val *v, bool *first) {
    if (v->tuple) {
        for (uint32_t i = 0; i < v->n; i++) add_heads(c, w, v->items[i], first);
        return;
    }
    if (!*first) jw_ch(w, ',');
    *first = false;
    jw_ch(w, '[');
    jw_int(w, v->nid);
    jw_ch(w, ',');
    jw_int(w, v->index);
    JW_LIT(w, ",0]");
    if (c->g) rt_json_graph_add_head(c->g, (rt_json_entry){v->nid, v->index});
}

static void u32_list(jw *w, const uint32_t *v, uint32_t n) {
    jw_ch(w, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) jw_ch(w, ',');
        jw_int(w, v[i]);
    }
    jw_ch(w, ']');
}

/* Bindings of f and of the functions nested in it: about the node count of its graph (each
 * composite call inlines one lambda), to size the buffers once. */
static size_t count_bindings(const ir_expr *e) {
    if (!e) return 0;
    if (e->kind == IR_FUNC) return IR_AS(e, ir_func)->nparams + count_bindings(IR_AS(e, ir_func)->body);
    if (e->kind != IR_SEQ) return 0;
    const ir_seq *s = IR_AS(e, ir_seq);
    size_t n = 0;
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) n += 1 + count_bindings(s->blocks[b]->bindings[i].value);
    return n;
}

/* The region's document text (*text, heap, NUL-terminated) and, when graph is not NULL, its
 * typed graph (not finished: the caller hands it the text). */
static gr_status serialize(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, rt_json_graph *graph,
                           char **text, size_t *len, gr_diag *diag) {
    *text = NULL;
    *len = 0;
    cg c = {0};
    c.ctx = ctx;
    c.r = r;
    c.mode = mode;
    c.diag = diag;
    c.g = graph;
    gr_vec_push(&c.rows, 0);
    gr_map_init(&c.types);
    ir_idtab_init(&c.vals);
    ir_idtab_init(&c.lambdas);
    gr_map_init(&c.consts);
    /* Reserving generously costs nothing: untouched pages are never faulted in; regrowing
     * a big buffer by copying touched twice the memory (most of the codegen's page faults). */
    size_t est = count_bindings(&r->func->base) + 16;
    if (est < (size_t)UINT32_MAX / 512) {
        jw_grow(&c.out, est * 320);
        if (graph) rt_json_graph_reserve(graph, (uint32_t)est);
    }
    JW_LIT(&c.out, "{\"symbol\":");
    if (!jw_str(&c.out, r->symbol)) fail(&c, NULL, "symbol is not valid UTF-8", NULL);
    JW_LIT(&c.out, ",\"nodes\":[");
    const ir_func *f = r->func;
    const cg_val **args = IR_NEW_ARRAY(ctx, const cg_val *, f->nparams ? f->nparams : 1);
    for (uint32_t i = 0; i < f->nparams && !c.st; i++) {
        int nid = add_node(&c, RT_JSON_INPUT, f->params[i]->name, NULL, f->params[i]->base.sinfo, f->params[i]->base.span);
        if (nid < 0) break;
        if (f->params[i]->base.sinfo->kind == IR_SINFO_TUPLE) {
            fail(&c, NULL, "tuple parameter", f->params[i]->name);
            break;
        }
        gr_vec_push(&c.arg_nodes, (uint32_t)nid);
        args[i] = val_entry(&c, (uint32_t)nid, 0);
    }
    const cg_val *res = c.st ? NULL : visit_func_body(&c, f, args);
    gr_status st = c.st;
    if (!st && res) {
        JW_LIT(&c.out, "],\"arg_nodes\":");
        u32_list(&c.out, c.arg_nodes.data, c.arg_nodes.len);
        JW_LIT(&c.out, ",\"heads\":[");
        bool first = true;
        add_heads(&c, &c.out, res, &first);
        JW_LIT(&c.out, "],\"node_row_ptr\":");
        u32_list(&c.out, c.rows.data, c.rows.len);
        if (c.louts.len) {
            JW_LIT(&c.out, ",\"layer_outputs\":[");
            jw_raw(&c.out, c.louts.p, c.louts.len);
            jw_ch(&c.out, ']');
        }
        jw_ch(&c.out, '}');
        jw_ch(&c.out, '\0');
        *text = c.out.p;
        *len = c.out.len - 1;
        c.out.p = NULL;
    } else if (!st) {
        st = fail(&c, NULL, "region without a result", NULL);
    }
    free(c.out.p);
    free(c.louts.p);
    for (uint32_t k = 0; k < c.nlevels; k++) {
        free(c.levels[k]->inputs.p);
        free(c.levels[k]->args.p);
        gr_vec_free(&c.levels[k]->ins);
        free(c.levels[k]);
    }
    free(c.levels);
    gr_vec_free(&c.arg_nodes);
    gr_vec_free(&c.rows);
    gr_map_free(&c.types);
    ir_idtab_free(&c.vals);
    ir_idtab_free(&c.lambdas);
    gr_map_free(&c.consts);
    return st;
}

gr_status json_cg_serialize(ir_ctx_t *ctx, const byoc_region *r, json_cg_mode mode, char **out, gr_diag *diag) {
    size_t len;
    return serialize(ctx, r, mode, NULL, out, &len, diag);
}

gr_status json_cg_build_graphs(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, json_cg_mode mode,
                               rt_json_graph **graphs, gr_diag *diag) {
    gr_status st = GR_OK;
    uint32_t made = 0;
    for (uint32_t i = 0; i < n && !st; i++) {
        rt_json_graph *g = rt_json_graph_begin(regions[i].symbol);
        if (!g) {
            st = gr_diag_set(diag, GR_ERR_NOMEM, "json codegen: out of memory");
            break;
        }
        char *text = NULL;
        size_t len = 0;
        if ((st = serialize(ctx, &regions[i], mode, g, &text, &len, diag))) {
            rt_json_graph_free(g);
            break;
        }
        if ((st = rt_json_graph_finish(g, text, len, diag))) break;
        graphs[i] = g;
        made++;
        uint32_t nc = rt_json_graph_num_consts(graphs[i]);
        rt_tensor **ts = gr_xcalloc(nc + 1, sizeof(*ts));
        for (uint32_t k = 0; k < nc; k++) {
            const char *cn = rt_json_graph_const_name(graphs[i], k);
            for (uint32_t q = 0; q < regions[i].nconsts; q++)
                if (strcmp(regions[i].const_names[q], cn) == 0) ts[k] = regions[i].consts[q]->data;
        }
        st = rt_json_graph_init(graphs[i], ts, nc, diag);
        free(ts);
    }
    if (st)
        for (uint32_t i = 0; i < made; i++) {
            rt_json_graph_free(graphs[i]);
            graphs[i] = NULL;
        }
    return st;
}

gr_status json_cg_compile(ir_ctx_t *ctx, const byoc_region *regions, uint32_t n, const byoc_options *options,
                          rt_module **out, gr_diag *diag) {
    (void)options;
    *out = NULL;
    rt_json_graph **graphs = gr_xcalloc(n + 1, sizeof(*graphs));
    gr_status st = json_cg_build_graphs(ctx, regions, n, JSON_CG_PER_OP, graphs, diag);
    if (!st) *out = rt_json_module_new("json", &rt_json_reference_engine, NULL, graphs, n);
    free(graphs);
    return st;
}
