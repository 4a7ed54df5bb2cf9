/* The artifact's module in binary (artifact_impl.h): what the build's IR already was, so that a
 * loader rebuilds it without tokenizing or parsing text.
 *
 * One stream of records, each a tag and a payload; a record refers to earlier ones by index
 * (0: none, k: record k - 1), so the writer emits a node's parts before the node and a shared
 * node (a var, a struct info, a span) once. Integers are LEB128 varints (signed ones zigzag).
 * The stream ends with one module record. The decoder checks every tag, index, count and kind
 * a reader of the nodes relies on, and infers op calls' struct info again (as the parser does),
 * so a damaged stream is an error, never a crash. */
#include <stdio.h>
#include <string.h>

#include "deploy/artifact_impl.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "runtime/value.h"

#define IRB_MAGIC "GRIR"
#define IRB_VERSION 1u
#define IRB_MAX_DEPTH 32

enum { R_STR = 1, R_PRIM, R_SINFO, R_SPAN, R_ATTRS, R_EXPR, R_MODULE };

/* ---- the writer ---- */

typedef struct enc {
    uint8_t *buf;
    size_t len, cap;
    uint32_t nrec;
    gr_map memo[R_MODULE];         /* per tag: node pointer -> record index + 1 */
    GR_VEC(struct rt_tensor *) consts;
    const char *bad;               /* what cannot be stored, when something cannot */
} enc;

static void put(enc *e, const void *p, size_t n) {
    if (e->len + n > e->cap) {
        while (e->len + n > e->cap) e->cap = e->cap ? e->cap * 2 : 4096;
        e->buf = gr_xrealloc(e->buf, e->cap);
    }
    memcpy(e->buf + e->len, p, n);
    e->len += n;
}

static void put_u(enc *e, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        b[n++] |= v ? 0x80 : 0;
    } while (v);
    put(e, b, n);
}

static void put_s(enc *e, int64_t v) { put_u(e, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static void put_dtype(enc *e, ir_dtype t) {
    put_u(e, t.code);
    put_u(e, t.bits);
    put_u(e, t.lanes);
}

/* Starts record `tag` for node p; false when p already has one (*ref set either way). */
static bool rec_begin(enc *e, int tag, const void *p, uint64_t *ref) {
    if (gr_map_get(&e->memo[tag - 1], GR_MAP_PTR(p), ref)) return false;
    *ref = ++e->nrec;
    gr_map_put(&e->memo[tag - 1], GR_MAP_PTR(p), *ref);
    return true;
}

/* Each emitter returns the node's reference (0 for NULL), emitting its parts first. */
static uint64_t e_str(enc *e, const char *s) {
    uint64_t r;
    if (!s) return 0;
    if (!rec_begin(e, R_STR, s, &r)) return r;
    size_t n = strlen(s);
    put_u(e, R_STR);
    put_u(e, n);
    put(e, s, n);
    return r;
}

static uint64_t e_prim(enc *e, const ir_prim *p) {
    if (!p) return 0;
    uint64_t r, a = 0, b = 0, name = 0;
    if (gr_map_get(&e->memo[R_PRIM - 1], GR_MAP_PTR(p), &r)) return r;
    if (p->kind == IR_PRIM_VAR) name = e_str(e, p->name);
    if (p->kind == IR_PRIM_FLOORDIV || p->kind == IR_PRIM_FLOORMOD) {
        a = e_prim(e, p->a);
        b = e_prim(e, p->b);
    }
    uint64_t *fr = NULL;
    size_t nf = 0;
    for (uint32_t t = 0; p->kind == IR_PRIM_POLY && t < p->nterms; t++) nf += p->terms[t].nfactors;
    if (nf) fr = gr_xmalloc(sizeof *fr * nf);
    nf = 0;
    for (uint32_t t = 0; p->kind == IR_PRIM_POLY && t < p->nterms; t++)
        for (uint32_t f = 0; f < p->terms[t].nfactors; f++) fr[nf++] = e_prim(e, p->terms[t].factors[f]);
    rec_begin(e, R_PRIM, p, &r);
    put_u(e, R_PRIM);
    put_u(e, p->kind);
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: put_s(e, p->value); break;
    case IR_PRIM_VAR: put_u(e, name); break;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        put_u(e, a);
        put_u(e, b);
        break;
    case IR_PRIM_POLY:
        put_s(e, p->value);
        put_u(e, p->nterms);
        nf = 0;
        for (uint32_t t = 0; t < p->nterms; t++) {
            put_s(e, p->terms[t].coef);
            put_u(e, p->terms[t].nfactors);
            for (uint32_t f = 0; f < p->terms[t].nfactors; f++) put_u(e, fr[nf++]);
        }
        break;
    }
    free(fr);
    return r;
}

static uint64_t e_sinfo(enc *e, const ir_sinfo *s) {
    if (!s) return 0;
    uint64_t r;
    if (gr_map_get(&e->memo[R_SINFO - 1], GR_MAP_PTR(s), &r)) return r;
    uint32_t nd = (s->kind == IR_SINFO_TENSOR || s->kind == IR_SINFO_SHAPE) && s->dims && s->ndim > 0 ? (uint32_t)s->ndim : 0;
    uint32_t nf = s->kind == IR_SINFO_TUPLE || s->kind == IR_SINFO_FUNC ? s->n : 0;
    uint64_t *sub = gr_xmalloc(sizeof *sub * (nd + nf + 2));
    for (uint32_t i = 0; i < nd; i++) sub[i] = e_prim(e, s->dims[i]);
    for (uint32_t i = 0; i < nf; i++) sub[nd + i] = e_sinfo(e, s->fields[i]);
    sub[nd + nf] = s->kind == IR_SINFO_PRIM ? e_prim(e, s->value) : 0;
    sub[nd + nf + 1] = s->kind == IR_SINFO_FUNC ? e_sinfo(e, s->ret) : 0;
    rec_begin(e, R_SINFO, s, &r);
    put_u(e, R_SINFO);
    put_u(e, s->kind);
    put_u(e, s->opaque);
    put_dtype(e, s->dtype);
    put_s(e, s->ndim);
    put_u(e, s->dims != NULL);
    put_u(e, nd);
    put_u(e, nf);
    for (uint32_t i = 0; i < nd + nf + 2; i++) put_u(e, sub[i]);
    free(sub);
    return r;
}

static uint64_t e_span(enc *e, const ir_span *s) {
    if (!s) return 0;
    uint64_t r;
    if (gr_map_get(&e->memo[R_SPAN - 1], GR_MAP_PTR(s), &r)) return r;
    uint64_t *src = gr_xmalloc(sizeof *src * s->n);
    for (uint32_t i = 0; i < s->n; i++) src[i] = e_str(e, s->locs[i].source);
    rec_begin(e, R_SPAN, s, &r);
    put_u(e, R_SPAN);
    put_u(e, s->n);
    for (uint32_t i = 0; i < s->n; i++) {
        const ir_loc *l = &s->locs[i];
        put_u(e, src[i]);
        put_s(e, l->line);
        put_s(e, l->col);
        put_s(e, l->end_line);
        put_s(e, l->end_col);
        put_u(e, l->is_output);
    }
    free(src);
    return r;
}

static uint64_t e_expr(enc *e, const ir_expr *x);

/* An attribute value's parts (strings, prims, exprs) first ... */
static void e_attr_parts(enc *e, const ir_attr *a) {
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_STR: e_str(e, a->u.s); break;
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP:
        for (uint32_t i = 0; i < (a->kind == IR_ATTR_MAP ? 2 : 1) * a->u.arr.n; i++) e_attr_parts(e, &a->u.arr.items[i]);
        break;
    case IR_ATTR_EXPR: e_expr(e, a->u.expr); break;
    case IR_ATTR_PRIM: e_prim(e, a->u.prim); break;
    case IR_ATTR_OBJ: e->bad = "a runtime object attribute"; break;
    default: break;
    }
}

/* ... then the value, referring to them */
static void e_attr_val(enc *e, const ir_attr *a) {
    uint64_t r = 0;
    put_u(e, a->kind);
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_BOOL: put_u(e, a->u.b); break;
    case IR_ATTR_INT: put_s(e, a->u.i); break;
    case IR_ATTR_FLOAT: put(e, &a->u.f, 8); break;
    case IR_ATTR_STR: put_u(e, e_str(e, a->u.s)); break;
    case IR_ATTR_DTYPE: put_dtype(e, a->u.dtype); break;
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP:
        put_u(e, a->u.arr.n);
        for (uint32_t i = 0; i < (a->kind == IR_ATTR_MAP ? 2 : 1) * a->u.arr.n; i++) e_attr_val(e, &a->u.arr.items[i]);
        break;
    case IR_ATTR_EXPR:
        gr_map_get(&e->memo[R_EXPR - 1], GR_MAP_PTR(a->u.expr), &r);
        put_u(e, a->u.expr ? r : 0);
        break;
    case IR_ATTR_PRIM: put_u(e, e_prim(e, a->u.prim)); break;
    default: break;
    }
}

static uint64_t e_attrs(enc *e, const ir_attrs *as) {
    if (!as) return 0;
    uint64_t r;
    if (gr_map_get(&e->memo[R_ATTRS - 1], GR_MAP_PTR(as), &r)) return r;
    for (uint32_t i = 0; i < as->n; i++) {
        e_str(e, as->keys[i]);
        e_attr_parts(e, &as->vals[i]);
    }
    rec_begin(e, R_ATTRS, as, &r);
    put_u(e, R_ATTRS);
    put_u(e, as->n);
    for (uint32_t i = 0; i < as->n; i++) {
        put_u(e, e_str(e, as->keys[i]));
        e_attr_val(e, &as->vals[i]);
    }
    return r;
}

/* The children of x, emitted before x (their references are looked up again when x is). */
static void e_children(enc *e, const ir_expr *x) {
    switch ((ir_expr_kind)x->kind) {
    case IR_VAR:
    case IR_DFVAR: e_str(e, ((const ir_var *)x)->name); break;
    case IR_TUPLE:
        for (uint32_t i = 0; i < ((const ir_tuple *)x)->n; i++) e_expr(e, ((const ir_tuple *)x)->fields[i]);
        break;
    case IR_TGI: e_expr(e, ((const ir_tgi *)x)->tuple); break;
    case IR_CALL: {
        const ir_call *c = (const ir_call *)x;
        e_expr(e, c->callee);
        for (uint32_t i = 0; i < c->nargs; i++) e_expr(e, c->args[i]);
        e_attrs(e, c->attrs);
        for (uint32_t i = 0; i < c->nsinfo_args; i++) e_sinfo(e, c->sinfo_args[i]);
        break;
    }
    case IR_OP: e_str(e, ((const ir_op *)x)->def->name); break;
    case IR_GVAR: e_str(e, ((const ir_gvar *)x)->name); break;
    case IR_EXTERN: e_str(e, ((const ir_extern *)x)->symbol); break;
    case IR_FUNC: {
        const ir_func *f = (const ir_func *)x;
        for (uint32_t i = 0; i < f->nparams; i++) e_expr(e, &f->params[i]->base);
        e_expr(e, f->body);
        e_sinfo(e, f->ret_sinfo);
        e_attrs(e, f->attrs);
        break;
    }
    case IR_SEQ: {
        const ir_seq *q = (const ir_seq *)x;
        for (uint32_t b = 0; b < q->nblocks; b++)
            for (uint32_t i = 0; i < q->blocks[b]->n; i++) {
                const ir_binding *bd = &q->blocks[b]->bindings[i];
                e_expr(e, bd->value);
                e_expr(e, &bd->var->base);
                e_sinfo(e, bd->match_sinfo);
            }
        e_expr(e, q->body);
        break;
    }
    case IR_IF: {
        const ir_if *f = (const ir_if *)x;
        e_expr(e, f->cond);
        e_expr(e, f->then_branch);
        e_expr(e, f->else_branch);
        break;
    }
    case IR_SHAPE:
        for (uint32_t i = 0; i < ((const ir_shape_expr *)x)->n; i++) e_prim(e, ((const ir_shape_expr *)x)->dims[i]);
        break;
    case IR_PRIMVAL: e_prim(e, ((const ir_primval *)x)->value); break;
    case IR_STR: e_str(e, ((const ir_str *)x)->value); break;
    default: break;
    }
}

static uint64_t e_expr(enc *e, const ir_expr *x) {
    if (!x) return 0;
    uint64_t r;
    if (gr_map_get(&e->memo[R_EXPR - 1], GR_MAP_PTR(x), &r)) return r;
    e_children(e, x);
    uint64_t span = e_span(e, x->span), si = e_sinfo(e, x->sinfo);
    rec_begin(e, R_EXPR, x, &r);
    put_u(e, R_EXPR);
    put_u(e, x->kind);
    put_u(e, span);
    put_u(e, si);
    switch ((ir_expr_kind)x->kind) {
    case IR_VAR:
    case IR_DFVAR: put_u(e, e_str(e, ((const ir_var *)x)->name)); break;
    case IR_CONST:
        put_u(e, e->consts.len);
        gr_vec_push(&e->consts, ((const ir_const *)x)->data);
        break;
    case IR_TUPLE:
        put_u(e, ((const ir_tuple *)x)->n);
        for (uint32_t i = 0; i < ((const ir_tuple *)x)->n; i++) put_u(e, e_expr(e, ((const ir_tuple *)x)->fields[i]));
        break;
    case IR_TGI:
        put_u(e, e_expr(e, ((const ir_tgi *)x)->tuple));
        put_s(e, ((const ir_tgi *)x)->index);
        break;
    case IR_CALL: {
        const ir_call *c = (const ir_call *)x;
        put_u(e, e_expr(e, c->callee));
        put_u(e, c->nargs);
        for (uint32_t i = 0; i < c->nargs; i++) put_u(e, e_expr(e, c->args[i]));
        put_u(e, e_attrs(e, c->attrs));
        put_u(e, c->nsinfo_args);
        for (uint32_t i = 0; i < c->nsinfo_args; i++) put_u(e, e_sinfo(e, c->sinfo_args[i]));
        break;
    }
    case IR_OP: put_u(e, e_str(e, ((const ir_op *)x)->def->name)); break;
    case IR_GVAR: put_u(e, e_str(e, ((const ir_gvar *)x)->name)); break;
    case IR_EXTERN: put_u(e, e_str(e, ((const ir_extern *)x)->symbol)); break;
    case IR_FUNC: {
        const ir_func *f = (const ir_func *)x;
        put_u(e, f->nparams);
        for (uint32_t i = 0; i < f->nparams; i++) put_u(e, e_expr(e, &f->params[i]->base));
        put_u(e, e_expr(e, f->body));
        put_u(e, e_sinfo(e, f->ret_sinfo));
        put_u(e, e_attrs(e, f->attrs));
        break;
    }
    case IR_SEQ: {
        const ir_seq *q = (const ir_seq *)x;
        put_u(e, q->nblocks);
        for (uint32_t b = 0; b < q->nblocks; b++) {
            put_u(e, q->blocks[b]->dataflow);
            put_u(e, q->blocks[b]->n);
            for (uint32_t i = 0; i < q->blocks[b]->n; i++) {
                const ir_binding *bd = &q->blocks[b]->bindings[i];
                put_u(e, e_expr(e, &bd->var->base));
                put_u(e, e_expr(e, bd->value));
                put_u(e, e_sinfo(e, bd->match_sinfo));
            }
        }
        put_u(e, e_expr(e, q->body));
        break;
    }
    case IR_IF: {
        const ir_if *f = (const ir_if *)x;
        put_u(e, e_expr(e, f->cond));
        put_u(e, e_expr(e, f->then_branch));
        put_u(e, e_expr(e, f->else_branch));
        break;
    }
    case IR_SHAPE:
        put_u(e, ((const ir_shape_expr *)x)->n);
        for (uint32_t i = 0; i < ((const ir_shape_expr *)x)->n; i++) put_u(e, e_prim(e, ((const ir_shape_expr *)x)->dims[i]));
        break;
    case IR_PRIMVAL: {
        const ir_primval *p = (const ir_primval *)x;
        put_dtype(e, p->dtype);
        put_u(e, e_prim(e, p->value));
        put(e, &p->fvalue, 8);
        break;
    }
    case IR_STR: put_u(e, e_str(e, ((const ir_str *)x)->value)); break;
    default: e->bad = "an expression kind the binary form does not know"; break;
    }
    return r;
}

gr_status gr_art_ir_encode(const ir_module *m, uint8_t **out, size_t *len, struct rt_tensor ***consts,
                           uint32_t *nconsts, gr_diag *diag) {
    enc e = {0};
    for (int t = 0; t < R_MODULE; t++) gr_map_init(&e.memo[t]);
    put(&e, IRB_MAGIC, 4);
    put_u(&e, IRB_VERSION);
    uint64_t *names = gr_xcalloc(2 * (size_t)m->nfuncs + 1, sizeof *names);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        names[2 * i] = e_str(&e, m->gvars[i]->name);
        names[2 * i + 1] = e_expr(&e, m->funcs[i]);
    }
    uint64_t attrs = e_attrs(&e, m->attrs);
    put_u(&e, R_MODULE);
    put_u(&e, m->nfuncs);
    for (uint32_t i = 0; i < 2 * m->nfuncs; i++) put_u(&e, names[i]);
    put_u(&e, attrs);
    free(names);
    for (int t = 0; t < R_MODULE; t++) gr_map_free(&e.memo[t]);
    if (e.bad) {
        free(e.buf);
        gr_vec_free(&e.consts);
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "graft build: the module holds %s, which an artifact cannot store", e.bad);
    }
    *out = e.buf;
    *len = e.len;
    *consts = e.consts.data;
    *nconsts = e.consts.len;
    return GR_OK;
}

/* ---- the reader ---- */

typedef struct dec {
    ir_ctx_t *ctx;
    const uint8_t *p, *end;
    uint32_t nrec, cap;
    uint8_t *tag;                  /* per record */
    void **node;
    struct rt_tensor *const *consts;
    uint32_t nconsts;
    ir_module *m;
    const char *why;               /* the first problem */
    bool okr;                      /* REF's last result */
    char msg[320];                 /* a formatted problem */
} dec;

static bool bad(dec *d, const char *why) {
    if (!d->why) d->why = why;
    return false;
}

static bool get_u(dec *d, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64; s += 7) {
        if (d->p >= d->end) return bad(d, "it ends inside a number");
        uint8_t b = *d->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return bad(d, "a number is too long");
}

static bool get_s(dec *d, int64_t *v) {
    uint64_t u;
    if (!get_u(d, &u)) return false;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return true;
}

static bool get_u32(dec *d, uint32_t *v, uint64_t max) {
    uint64_t u;
    if (!get_u(d, &u)) return false;
    if (u > max) return bad(d, "a count or value is out of range");
    *v = (uint32_t)u;
    return true;
}

/* A count of items of at least one byte each: never more than the bytes left. */
static bool get_n(dec *d, uint32_t *n) {
    uint64_t u;
    if (!get_u(d, &u)) return false;
    /* the bytes left after the count itself */
    if (u > (uint64_t)(d->end - d->p) || u > UINT32_MAX) return bad(d, "a count is larger than the bytes left");
    *n = (uint32_t)u;
    return true;
}

static bool get_i32(dec *d, int32_t *v) {
    int64_t s;
    if (!get_s(d, &s)) return false;
    if (s < INT32_MIN || s > INT32_MAX) return bad(d, "a value is out of range");
    *v = (int32_t)s;
    return true;
}

static bool get_f64(dec *d, double *v) {
    if (d->end - d->p < 8) return bad(d, "it ends inside a number");
    memcpy(v, d->p, 8);
    d->p += 8;
    return true;
}

static bool get_dtype(dec *d, ir_dtype *t) {
    uint32_t code, bits, lanes;
    if (!get_u32(d, &code, 255) || !get_u32(d, &bits, 255) || !get_u32(d, &lanes, 65535)) return false;
    t->code = (uint8_t)code;
    t->bits = (uint8_t)bits;
    t->lanes = (uint16_t)lanes;
    return ir_dtype_is_void(*t) || ir_dtype_name(*t) ? true : bad(d, "a dtype is unknown");
}

/* A reference to an earlier record of tag `tag`: its node (NULL for 0, an error unless
 * optional); *ok false on an error. */
static void *ref_(dec *d, int tag, bool required, bool *ok) {
    uint64_t r;
    *ok = false;
    if (!get_u(d, &r)) return NULL;
    if (r == 0) {
        if (required) return bad(d, "a required part is missing"), NULL;
        *ok = true;
        return NULL;
    }
    if (r > d->nrec || d->tag[r - 1] != tag) return bad(d, "a reference points to no earlier record of its kind"), NULL;
    *ok = true;
    return d->node[r - 1];
}

/* Reads a reference into *out (a pointer of the record's type); true when it was one. */
#define REF(d, tag, req, out) ((*(out) = ref_((d), (tag), (req), &(d)->okr)), (d)->okr)

#define ANY_EXPR 0xffffffffu
#define VAR_KINDS ((1u << IR_VAR) | (1u << IR_DFVAR))

/* An expression of a kind in mask. */
static bool kind_in(dec *d, const ir_expr *e, uint32_t mask) {
    return !e || ((mask >> e->kind) & 1u) ? true : bad(d, "an expression has the wrong kind");
}

/* n required references of tag into arr, a new array in the context's arena; `return NULL`
 * from the caller on an error. */
#define REFS(d, tag, n, arr, mask)                                                                      \
    do {                                                                                                \
        (arr) = ir_alloc((d)->ctx, sizeof *(arr) * ((n) ? (n) : 1));                                    \
        for (uint32_t i_ = 0; i_ < (n); i_++)                                                           \
            if (!REF((d), (tag), true, &(arr)[i_]) || ((tag) == R_EXPR && !kind_in((d), (const void *)(arr)[i_], (mask)))) \
                return NULL;                                                                            \
    } while (0)

static void *d_str(dec *d) {
    uint32_t n;
    if (!get_n(d, &n)) return NULL;
    if (memchr(d->p, 0, n)) return bad(d, "a string holds a NUL byte"), NULL;
    const char *s = ir_intern_n(d->ctx, (const char *)d->p, n);
    d->p += n;
    return (void *)s;
}

static void *d_prim(dec *d) {
    uint32_t kind;
    if (!get_u32(d, &kind, IR_PRIM_POLY)) return NULL;
    const ir_prim *a, *b;
    const char *name;
    int64_t v;
    switch ((ir_prim_kind)kind) {
    case IR_PRIM_INT: return get_s(d, &v) ? (void *)ir_prim_int(d->ctx, v) : NULL;
    case IR_PRIM_VAR: return REF(d, R_STR, true, &name) ? (void *)ir_prim_var(d->ctx, name) : NULL;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        if (!REF(d, R_PRIM, true, &a) || !REF(d, R_PRIM, true, &b)) return NULL;
        a = kind == IR_PRIM_FLOORDIV ? ir_prim_floordiv(d->ctx, a, b) : ir_prim_floormod(d->ctx, a, b);
        return a ? (void *)a : (bad(d, "a symbolic dim divides by 0"), NULL);
    case IR_PRIM_POLY: {
        uint32_t nt, nf;
        int64_t coef;
        if (!get_s(d, &v) || !get_n(d, &nt)) return NULL;
        const ir_prim *sum = ir_prim_int(d->ctx, v);
        for (uint32_t t = 0; t < nt; t++) {
            if (!get_s(d, &coef) || !get_n(d, &nf)) return NULL;
            const ir_prim *prod = ir_prim_int(d->ctx, coef);
            for (uint32_t f = 0; f < nf; f++) {
                if (!REF(d, R_PRIM, true, &a)) return NULL;
                prod = ir_prim_mul(d->ctx, prod, a);
            }
            sum = ir_prim_add(d->ctx, sum, prod);
        }
        return (void *)sum;
    }
    }
    return NULL;
}

static void *d_sinfo(dec *d) {
    uint32_t kind, opaque, hasdims, nd, nf;
    ir_dtype dt;
    int32_t ndim;
    if (!get_u32(d, &kind, IR_SINFO_FUNC) || !get_u32(d, &opaque, 1) || !get_dtype(d, &dt) || !get_i32(d, &ndim) ||
        !get_u32(d, &hasdims, 1) || !get_n(d, &nd) || !get_n(d, &nf))
        return NULL;
    bool dimmed = kind == IR_SINFO_TENSOR || kind == IR_SINFO_SHAPE;
    if (ndim < -1 || ndim > RT_MAX_NDIM || (hasdims && ndim < 0) || (dimmed && hasdims && (uint32_t)(ndim > 0 ? ndim : 0) != nd) ||
        (!(dimmed && hasdims) && nd) || (kind != IR_SINFO_TUPLE && kind != IR_SINFO_FUNC && nf))
        return bad(d, "a struct info is inconsistent"), NULL;
    const ir_prim **dims;
    const ir_sinfo **fields;
    REFS(d, R_PRIM, nd, dims, 0);
    REFS(d, R_SINFO, nf, fields, 0);
    const ir_prim *value;
    const ir_sinfo *ret;
    if (!REF(d, R_PRIM, false, &value) || !REF(d, R_SINFO, false, &ret)) return NULL;
    switch ((ir_sinfo_kind)kind) {
    case IR_SINFO_OBJECT: return (void *)ir_sinfo_object(d->ctx);
    case IR_SINFO_PRIM: return (void *)ir_sinfo_prim(d->ctx, dt, value);
    case IR_SINFO_SHAPE: return (void *)ir_sinfo_shape(d->ctx, ndim, hasdims ? dims : NULL);
    case IR_SINFO_TENSOR: return (void *)ir_sinfo_tensor(d->ctx, dt, ndim, hasdims ? dims : NULL);
    case IR_SINFO_TUPLE: return (void *)ir_sinfo_tuple(d->ctx, nf, fields);
    case IR_SINFO_FUNC:
        if (!ret) return bad(d, "a function struct info has no return"), NULL;
        return (void *)(opaque ? ir_sinfo_func_opaque(d->ctx, ret) : ir_sinfo_func(d->ctx, nf, fields, ret));
    }
    return NULL;
}

static void *d_span(dec *d) {
    uint32_t n;
    if (!get_n(d, &n)) return NULL;
    if (n == 0) return bad(d, "a span has no location"), NULL;
    const ir_span **parts = ir_alloc(d->ctx, sizeof(void *) * n);
    for (uint32_t i = 0; i < n; i++) {
        ir_loc l;
        memset(&l, 0, sizeof l);
        uint32_t out;
        if (!REF(d, R_STR, true, &l.source) || !get_i32(d, &l.line) || !get_i32(d, &l.col) || !get_i32(d, &l.end_line) ||
            !get_i32(d, &l.end_col) || !get_u32(d, &out, 1))
            return NULL;
        if (!l.source[0]) return bad(d, "a span location has no source"), NULL;
        l.is_output = (uint8_t)out;
        parts[i] = ir_span_from_loc(d->ctx, &l);
    }
    return (void *)ir_span_seq(d->ctx, parts, n);
}

static bool d_attr_val(dec *d, ir_attr *a, int depth) {
    uint32_t kind;
    memset(a, 0, sizeof *a);
    if (depth > IRB_MAX_DEPTH) return bad(d, "attributes nest too deeply");
    if (!get_u32(d, &kind, IR_ATTR_PRIM)) return false;
    a->kind = (uint8_t)kind;
    uint32_t b, n;
    switch ((ir_attr_kind)kind) {
    case IR_ATTR_NONE: return true;
    case IR_ATTR_BOOL:
        if (!get_u32(d, &b, 1)) return false;
        a->u.b = b;
        return true;
    case IR_ATTR_INT: return get_s(d, &a->u.i);
    case IR_ATTR_FLOAT: return get_f64(d, &a->u.f);
    case IR_ATTR_STR: return REF(d, R_STR, true, &a->u.s);
    case IR_ATTR_DTYPE: return get_dtype(d, &a->u.dtype);
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP: {
        if (!get_n(d, &n)) return false;
        uint32_t k = (kind == IR_ATTR_MAP ? 2 : 1) * n;
        ir_attr *items = ir_alloc(d->ctx, sizeof *items * (k ? k : 1));
        for (uint32_t i = 0; i < k; i++)
            if (!d_attr_val(d, &items[i], depth + 1)) return false;
        a->u.arr.n = n;
        a->u.arr.items = items;
        return true;
    }
    case IR_ATTR_EXPR: return REF(d, R_EXPR, true, &a->u.expr);
    case IR_ATTR_PRIM: return REF(d, R_PRIM, true, &a->u.prim);
    default: return bad(d, "an attribute has a kind an artifact cannot hold");
    }
}

static void *d_attrs(dec *d) {
    uint32_t n;
    if (!get_n(d, &n)) return NULL;
    const char **keys = ir_alloc(d->ctx, sizeof(char *) * (n ? n : 1));
    ir_attr *vals = ir_alloc(d->ctx, sizeof(ir_attr) * (n ? n : 1));
    for (uint32_t i = 0; i < n; i++)
        if (!REF(d, R_STR, true, &keys[i]) || !d_attr_val(d, &vals[i], 0)) return NULL;
    return (void *)ir_attrs_new(d->ctx, n, keys, vals);
}

static void set_sinfo(ir_expr *e, const ir_sinfo *s) {
    if (e && s && !e->sinfo) ir_expr_set_sinfo(e, s);
}

/* An op call: its attributes normalized to the op's schema and its struct info inferred, as
 * the parser makes them (a call the op refuses is an error here, not in a kernel). */
static void *d_op_call(dec *d, ir_expr *callee, uint32_t nargs, ir_expr **args, const ir_attrs *attrs, uint32_t nsi,
                       const ir_sinfo **sis, const ir_span *span) {
    const ir_op_def *def = ((ir_op *)callee)->def;
    gr_diag tmp;
    gr_diag_clear(&tmp);
    const ir_attrs *norm = attrs;
    if ((int)nargs < def->min_args || (def->max_args >= 0 && (int)nargs > def->max_args))
        return bad(d, "an op call has the wrong number of arguments"), NULL;
    ir_call *c = NULL;
    const ir_sinfo *s = NULL;
    if (ir_op_attrs_normalize(d->ctx, def, attrs, &norm, &tmp) == GR_OK) {
        c = ir_call_new(d->ctx, callee, nargs, args, norm, nsi, sis, span);
        s = ir_infer_call_in(d->ctx, d->m, c, &tmp);
    }
    if (!s) {
        snprintf(d->msg, sizeof d->msg, "a call of %.60s does not fit the op: %.200s", def->text_name, tmp.msg);
        return bad(d, d->msg), NULL;
    }
    set_sinfo(&c->base, s);
    return c;
}

static void *d_expr(dec *d) {
    uint32_t kind;
    const ir_span *span;
    const ir_sinfo *si;
    if (!get_u32(d, &kind, IR_EXPR_KIND_COUNT - 1) || !REF(d, R_SPAN, false, &span) || !REF(d, R_SINFO, false, &si)) return NULL;
    ir_expr *e = NULL;
    const char *s;
    uint32_t n;
    switch ((ir_expr_kind)kind) {
    case IR_VAR:
    case IR_DFVAR:
        if (!REF(d, R_STR, true, &s)) return NULL;
        return kind == IR_VAR ? (void *)ir_var_new(d->ctx, s, si, span) : (void *)ir_dfvar_new(d->ctx, s, si, span);
    case IR_CONST:
        if (!get_u32(d, &n, UINT32_MAX)) return NULL;
        if (n >= d->nconsts) return bad(d, "a constant is not among the artifact's host constants"), NULL;
        return ir_const_new(d->ctx, d->consts[n], span);
    case IR_TUPLE: {
        if (!get_n(d, &n)) return NULL;
        ir_expr **f;
        REFS(d, R_EXPR, n, f, ANY_EXPR);
        e = &ir_tuple_new(d->ctx, n, f, span)->base;
        break;
    }
    case IR_TGI: {
        ir_expr *t;
        int32_t idx;
        if (!REF(d, R_EXPR, true, &t) || !get_i32(d, &idx)) return NULL;
        if (idx < 0) return bad(d, "a tuple index is negative"), NULL;
        e = &ir_tgi_new(d->ctx, t, idx, span)->base;
        break;
    }
    case IR_CALL: {
        ir_expr *callee;
        const ir_attrs *attrs;
        uint32_t nsi;
        if (!REF(d, R_EXPR, true, &callee) || !get_n(d, &n)) return NULL;
        ir_expr **args;
        REFS(d, R_EXPR, n, args, ANY_EXPR);
        if (!REF(d, R_ATTRS, false, &attrs) || !get_n(d, &nsi)) return NULL;
        const ir_sinfo **sis;
        REFS(d, R_SINFO, nsi, sis, 0);
        if (callee->kind == IR_OP) return d_op_call(d, callee, n, args, attrs, nsi, sis, span);
        if (!si) return bad(d, "a call has no struct info"), NULL;
        e = &ir_call_new(d->ctx, callee, n, args, attrs, nsi, sis, span)->base;
        break;
    }
    case IR_OP: {
        if (!REF(d, R_STR, true, &s)) return NULL;
        ir_op *op = ir_op_get(d->ctx, s);
        return op ? (void *)op : (bad(d, "an op is not one this graft knows"), NULL);
    }
    case IR_GVAR: return REF(d, R_STR, true, &s) ? (void *)ir_gvar_new(d->ctx, s) : NULL;
    case IR_EXTERN: return REF(d, R_STR, true, &s) ? (void *)ir_extern_new(d->ctx, s, span) : NULL;
    case IR_FUNC: {
        ir_expr *body;
        const ir_sinfo *ret;
        const ir_attrs *attrs;
        if (!get_n(d, &n)) return NULL;
        ir_var **params;
        REFS(d, R_EXPR, n, params, VAR_KINDS);
        if (!REF(d, R_EXPR, true, &body) || !REF(d, R_SINFO, false, &ret) || !REF(d, R_ATTRS, false, &attrs)) return NULL;
        e = &ir_func_new(d->ctx, n, params, body, ret, attrs, span)->base;
        break;
    }
    case IR_SEQ: {
        if (!get_n(d, &n)) return NULL;
        const ir_block **blocks = ir_alloc(d->ctx, sizeof(void *) * (n ? n : 1));
        for (uint32_t b = 0; b < n; b++) {
            uint32_t df, nb;
            if (!get_u32(d, &df, 1) || !get_n(d, &nb)) return NULL;
            ir_binding *bs = ir_alloc(d->ctx, sizeof *bs * (nb ? nb : 1));
            for (uint32_t i = 0; i < nb; i++) {
                ir_expr *v;
                if (!REF(d, R_EXPR, true, &v) || !kind_in(d, v, VAR_KINDS) || !REF(d, R_EXPR, true, &bs[i].value) ||
                    !REF(d, R_SINFO, false, &bs[i].match_sinfo))
                    return NULL;
                bs[i].var = (ir_var *)v;
            }
            blocks[b] = ir_block_new(d->ctx, df, nb, bs);
        }
        ir_expr *body;
        if (!REF(d, R_EXPR, true, &body)) return NULL;
        e = &ir_seq_new(d->ctx, n, blocks, body, span)->base;
        break;
    }
    case IR_IF: {
        ir_expr *c, *t, *f;
        if (!REF(d, R_EXPR, true, &c) || !REF(d, R_EXPR, true, &t) || !REF(d, R_EXPR, true, &f)) return NULL;
        e = &ir_if_new(d->ctx, c, t, f, span)->base;
        break;
    }
    case IR_SHAPE: {
        if (!get_n(d, &n)) return NULL;
        const ir_prim **dims;
        REFS(d, R_PRIM, n, dims, 0);
        e = &ir_shape_expr_new(d->ctx, n, dims, span)->base;
        break;
    }
    case IR_PRIMVAL: {
        ir_dtype dt;
        const ir_prim *v;
        double f;
        if (!get_dtype(d, &dt) || !REF(d, R_PRIM, false, &v) || !get_f64(d, &f)) return NULL;
        ir_primval *pv = v ? ir_primval_int(d->ctx, v, span) : ir_primval_float(d->ctx, dt, f, span);
        pv->dtype = dt; /* an int32 value keeps its dtype and struct info */
        if (si) pv->base.sinfo = si;
        return pv;
    }
    case IR_STR:
        if (!REF(d, R_STR, true, &s)) return NULL;
        e = &ir_str_new(d->ctx, s, span)->base;
        break;
    default: return bad(d, "an expression kind is unknown"), NULL;
    }
    set_sinfo(e, si);
    return e;
}

static bool d_module(dec *d) {
    uint32_t n;
    if (!get_n(d, &n)) return false;
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        ir_expr *f;
        if (!REF(d, R_STR, true, &name) || !REF(d, R_EXPR, true, &f) || !kind_in(d, f, (1u << IR_FUNC) | (1u << IR_EXTERN)))
            return false;
        if (ir_module_gvar(d->m, name)) return bad(d, "a function name is there twice");
        ir_module_set_func(d->m, name, f);
    }
    const ir_attrs *attrs;
    if (!REF(d, R_ATTRS, false, &attrs)) return false;
    d->m->attrs = attrs;
    return d->p == d->end ? true : bad(d, "bytes follow the module");
}

gr_status gr_art_ir_decode(ir_ctx_t *ctx, const uint8_t *p, size_t len, struct rt_tensor *const *consts,
                           uint32_t nconsts, ir_module **out, gr_diag *diag) {
    *out = NULL;
    dec d = {.ctx = ctx, .p = p, .end = p + len, .consts = consts, .nconsts = nconsts};
    d.m = ir_module_new(ctx);
    uint64_t ver = 0;
    bool ok = len >= 4 && memcmp(p, IRB_MAGIC, 4) == 0;
    d.p += ok ? 4 : 0;
    if (!ok) bad(&d, "it does not start with its magic");
    else if (get_u(&d, &ver) && ver != IRB_VERSION) ok = bad(&d, "its version is not one this graft reads");
    ok = ok && !d.why;
    bool done = false;
    while (ok && !done) {
        uint32_t tag;
        if (!get_u32(&d, &tag, R_MODULE) || tag == 0) {
            ok = bad(&d, "a record has an unknown tag");
            break;
        }
        if (tag == R_MODULE) {
            ok = d_module(&d);
            done = true;
            break;
        }
        void *node = NULL;
        switch (tag) {
        case R_STR: node = d_str(&d); break;
        case R_PRIM: node = d_prim(&d); break;
        case R_SINFO: node = d_sinfo(&d); break;
        case R_SPAN: node = d_span(&d); break;
        case R_ATTRS: node = d_attrs(&d); break;
        case R_EXPR: node = d_expr(&d); break;
        }
        if (!node) {
            ok = bad(&d, "a record does not decode");
            break;
        }
        if (d.nrec == d.cap) {
            d.cap = d.cap ? d.cap * 2 : 256;
            d.tag = gr_xrealloc(d.tag, d.cap);
            d.node = gr_xrealloc(d.node, sizeof(void *) * d.cap);
        }
        d.tag[d.nrec] = (uint8_t)tag;
        d.node[d.nrec++] = node;
    }
    if (ok && !done) ok = bad(&d, "it ends before its module");
    free(d.tag);
    free(d.node);
    if (!ok)
        return gr_diag_set(diag, GR_ERR_INVALID, "artifact module (binary, byte %zu of %zu): %s", (size_t)(d.p - p), len,
                           d.why ? d.why : "it does not decode");
    *out = d.m;
    return GR_OK;
}
