/* Pattern constructors (arena nodes, immutable once returned). */
#include "patterns/pattern.h"

#include <string.h>

#include "ir/op.h"

static pat_t *pnew(ir_ctx_t *ctx, pat_kind k) {
    pat_t *p = IR_NEW(ctx, pat_t);
    p->kind = (uint8_t)k;
    p->id = ir_ctx_next_id(ctx);
    p->index = -1;
    p->ndim = -1;
    return p;
}

static const pat_t *const *copy_pats(ir_ctx_t *ctx, uint32_t n, const pat_t *const *ps) {
    if (!n) return NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!ps[i]) return NULL;
    return ir_alloc_copy(ctx, ps, sizeof(*ps) * n);
}

static bool pats_ok(uint32_t n, const pat_t *const *ps) {
    for (uint32_t i = 0; i < n; i++)
        if (!ps || !ps[i]) return false;
    return true;
}

static const char *istr(ir_ctx_t *ctx, const char *s) { return s ? ir_intern(ctx, s) : NULL; }

pat_t *pat_wildcard(ir_ctx_t *ctx) { return pnew(ctx, PAT_WILDCARD); }

pat_t *pat_expr(ir_ctx_t *ctx, const ir_expr *e) {
    if (!e) return NULL;
    pat_t *p = pnew(ctx, PAT_EXPR);
    p->expr = e;
    return p;
}

pat_t *pat_op_any(ir_ctx_t *ctx, uint32_t n, const char *const *names) {
    if (!n) return NULL;
    const char **ns = IR_NEW_ARRAY(ctx, const char *, n);
    for (uint32_t i = 0; i < n; i++) {
        const ir_op_def *d = ir_op_def_find(names[i]);
        if (!d) return NULL;
        ns[i] = d->name;
    }
    pat_t *p = pnew(ctx, PAT_OP);
    p->n = n;
    p->names = ns;
    return p;
}

pat_t *pat_op(ir_ctx_t *ctx, const char *name) { return pat_op_any(ctx, 1, &name); }

pat_t *pat_const(ir_ctx_t *ctx) { return pnew(ctx, PAT_CONST); }

static pat_t *named_leaf(ir_ctx_t *ctx, pat_kind k, const char *s) {
    pat_t *p = pnew(ctx, k);
    p->str = (s && *s) ? istr(ctx, s) : NULL;
    return p;
}

pat_t *pat_var(ir_ctx_t *ctx, const char *name) { return named_leaf(ctx, PAT_VAR, name); }
pat_t *pat_dfvar(ir_ctx_t *ctx, const char *name) { return named_leaf(ctx, PAT_DFVAR, name); }
pat_t *pat_gvar(ir_ctx_t *ctx, const char *substr) { return named_leaf(ctx, PAT_GVAR, substr); }
pat_t *pat_extern(ir_ctx_t *ctx, const char *symbol) { return named_leaf(ctx, PAT_EXTERN, symbol); }

pat_t *pat_shape(ir_ctx_t *ctx, uint32_t ndims, const ir_prim *const *dims) {
    pat_t *p = pnew(ctx, PAT_SHAPE);
    p->n = ndims;
    p->ndim = (int32_t)ndims;
    p->dims = ndims ? ir_alloc_copy(ctx, dims, sizeof(*dims) * ndims) : NULL;
    return p;
}

static pat_t *call_new(ir_ctx_t *ctx, const pat_t *callee, uint32_t nargs,
                       const pat_t *const *args, bool varargs) {
    if (!callee || !pats_ok(nargs, args)) return NULL;
    pat_t *p = pnew(ctx, PAT_CALL);
    p->a = callee;
    p->n = nargs;
    p->subs = copy_pats(ctx, nargs, args);
    p->varargs = varargs;
    return p;
}

pat_t *pat_call(ir_ctx_t *ctx, const pat_t *callee, uint32_t nargs, const pat_t *const *args) {
    return call_new(ctx, callee, nargs, args, false);
}

pat_t *pat_call_varargs(ir_ctx_t *ctx, const pat_t *callee, uint32_t nargs,
                        const pat_t *const *args) {
    return call_new(ctx, callee, nargs, args, true);
}

pat_t *pat_call_op(ir_ctx_t *ctx, const char *op, uint32_t nargs, const pat_t *const *args) {
    pat_t *o = pat_op(ctx, op);
    return o ? pat_call(ctx, o, nargs, args) : NULL;
}

pat_t *pat_call1(ir_ctx_t *ctx, const char *op, const pat_t *a0) {
    return pat_call_op(ctx, op, 1, &a0);
}

pat_t *pat_call2(ir_ctx_t *ctx, const char *op, const pat_t *a0, const pat_t *a1) {
    const pat_t *a[2] = {a0, a1};
    return pat_call_op(ctx, op, 2, a);
}

pat_t *pat_call_dps_packed(ir_ctx_t *ctx, const char *symbol, uint32_t nargs,
                           const pat_t *const *args) {
    if (!pats_ok(nargs, args)) return NULL;
    const pat_t *a[2] = {pat_extern(ctx, symbol), pat_tuple(ctx, nargs, args)};
    return pat_call_op(ctx, ir_op_def_at(IR_OP_CALL_DPS_PACKED)->name, 2, a);
}

pat_t *pat_call_tir(ir_ctx_t *ctx, const char *gvar_substr, uint32_t nargs,
                    const pat_t *const *args) {
    if (!pats_ok(nargs, args)) return NULL;
    const pat_t *a[2] = {pat_gvar(ctx, gvar_substr), pat_tuple(ctx, nargs, args)};
    return pat_call_op(ctx, ir_op_def_at(IR_OP_CALL_TIR)->name, 2, a);
}

static pat_t *tuple_new(ir_ctx_t *ctx, pat_kind k, uint32_t n, const pat_t *const *fields) {
    if (!pats_ok(n, fields)) return NULL;
    pat_t *p = pnew(ctx, k);
    p->n = n;
    p->subs = copy_pats(ctx, n, fields);
    return p;
}

pat_t *pat_tuple(ir_ctx_t *ctx, uint32_t n, const pat_t *const *fields) {
    return tuple_new(ctx, PAT_TUPLE, n, fields);
}

pat_t *pat_tuple_unordered(ir_ctx_t *ctx, uint32_t n, const pat_t *const *fields) {
    return tuple_new(ctx, PAT_TUPLE_UNORDERED, n, fields);
}

pat_t *pat_tgi(ir_ctx_t *ctx, const pat_t *tuple, int32_t index) {
    if (!tuple) return NULL;
    pat_t *p = pnew(ctx, PAT_TGI);
    p->a = tuple;
    p->index = index < 0 ? -1 : index;
    return p;
}

pat_t *pat_func(ir_ctx_t *ctx, uint32_t nparams, const pat_t *const *params, const pat_t *body) {
    if (!body || !pats_ok(nparams, params)) return NULL;
    pat_t *p = pnew(ctx, PAT_FUNC);
    p->a = body;
    p->n = nparams;
    p->subs = copy_pats(ctx, nparams, params);
    return p;
}

static pat_t *wrap(ir_ctx_t *ctx, pat_kind k, const pat_t *a) {
    if (!a) return NULL;
    pat_t *p = pnew(ctx, k);
    p->a = a;
    return p;
}

pat_t *pat_has_dtype(ir_ctx_t *ctx, const pat_t *p, ir_dtype dtype) {
    pat_t *r = wrap(ctx, PAT_HAS_DTYPE, p);
    if (r) r->dtype = dtype;
    return r;
}

pat_t *pat_has_shape(ir_ctx_t *ctx, const pat_t *p, int32_t ndim, const ir_prim *const *dims) {
    pat_t *r = wrap(ctx, PAT_HAS_SHAPE, p);
    if (!r) return NULL;
    r->ndim = ndim < 0 ? -1 : ndim;
    if (ndim > 0 && dims) {
        r->n = (uint32_t)ndim;
        r->dims = ir_alloc_copy(ctx, dims, sizeof(*dims) * (size_t)ndim);
    }
    return r;
}

pat_t *pat_has_sinfo(ir_ctx_t *ctx, const pat_t *p, const ir_sinfo *sinfo) {
    if (!sinfo) return NULL;
    pat_t *r = wrap(ctx, PAT_HAS_SINFO, p);
    if (r) r->sinfo = sinfo;
    return r;
}

pat_t *pat_has_attr(ir_ctx_t *ctx, const pat_t *p, const ir_attrs *attrs) {
    pat_t *r = wrap(ctx, PAT_HAS_ATTR, p);
    if (r) r->attrs = attrs;
    return r;
}

static pat_t *binop(ir_ctx_t *ctx, pat_kind k, const pat_t *a, const pat_t *b) {
    if (!a || !b) return NULL;
    pat_t *p = pnew(ctx, k);
    p->a = a;
    p->b = b;
    return p;
}

pat_t *pat_or(ir_ctx_t *ctx, const pat_t *a, const pat_t *b) { return binop(ctx, PAT_OR, a, b); }
pat_t *pat_and(ir_ctx_t *ctx, const pat_t *a, const pat_t *b) { return binop(ctx, PAT_AND, a, b); }
pat_t *pat_not(ir_ctx_t *ctx, const pat_t *a) { return wrap(ctx, PAT_NOT, a); }
pat_t *pat_optional(ir_ctx_t *ctx, const pat_t *base, const pat_t *with) {
    return binop(ctx, PAT_OPTIONAL, base, with);
}

pat_t *pat_name(ir_ctx_t *ctx, const pat_t *p, const char *name) {
    if (!p) return NULL;
    pat_t *r = ir_alloc_copy(ctx, p, sizeof(*p));
    r->id = ir_ctx_next_id(ctx);
    r->name = istr(ctx, name);
    return r;
}

/* Root ops: union over the alternatives; -1 when some alternative is not an op call. */
static int root_ops(const pat_t *p, const char **out, int max, int n) {
    if (n < 0) return n;
    switch (p->kind) {
    case PAT_CALL:
        if (p->a->kind == PAT_OP) {
            for (uint32_t i = 0; i < p->a->n; i++) {
                bool seen = false;
                for (int j = 0; j < n && j < max; j++) seen |= out[j] == p->a->names[i];
                if (seen) continue;
                if (n < max) out[n] = p->a->names[i];
                n++;
            }
            return n;
        }
        return -1;
    case PAT_HAS_DTYPE: case PAT_HAS_SHAPE: case PAT_HAS_SINFO: case PAT_HAS_ATTR:
        return root_ops(p->a, out, max, n);
    case PAT_OR:
    case PAT_OPTIONAL:
        return root_ops(p->b, out, max, root_ops(p->a, out, max, n));
    case PAT_AND: {
        /* Either side constrains; take the one that is an op call. */
        int l = root_ops(p->a, out, max, n);
        return l >= 0 ? l : root_ops(p->b, out, max, n);
    }
    default:
        return -1;
    }
}

int pat_root_ops(const pat_t *p, const char **out, int max) {
    if (!p) return -1;
    return root_ops(p, out, max, 0);
}

static const char *const kind_names[PAT_KIND_COUNT] = {
    [PAT_WILDCARD] = "wildcard", [PAT_EXPR] = "expr", [PAT_OP] = "op", [PAT_CALL] = "call",
    [PAT_CONST] = "const", [PAT_VAR] = "var", [PAT_DFVAR] = "dfvar", [PAT_GVAR] = "gvar",
    [PAT_EXTERN] = "extern", [PAT_TUPLE] = "tuple", [PAT_TUPLE_UNORDERED] = "tuple_unordered",
    [PAT_TGI] = "tuple_get_item", [PAT_SHAPE] = "shape", [PAT_HAS_DTYPE] = "has_dtype",
    [PAT_HAS_SHAPE] = "has_shape", [PAT_HAS_SINFO] = "has_sinfo", [PAT_HAS_ATTR] = "has_attr",
    [PAT_OR] = "or", [PAT_AND] = "and", [PAT_NOT] = "not", [PAT_OPTIONAL] = "optional",
    [PAT_FUNC] = "func",
};

const char *pat_kind_name(pat_kind k) {
    return (unsigned)k < PAT_KIND_COUNT ? kind_names[k] : "?";
}

/* pat_dump prints a pattern as a DAG: a sub-pattern used more than once (composite tables share
 * their prefixes, so the tree can be exponentially larger) prints in full once as `#k=...` and
 * as `#k` afterwards. */
typedef struct dump_node {
    const pat_t *p;
    uint32_t uses, id;
} dump_node;

typedef struct dumper {
    FILE *out;
    dump_node *nodes;
    uint32_t n, cap, next_id;
} dumper;

static dump_node *dump_find(dumper *d, const pat_t *p) {
    for (uint32_t i = 0; i < d->n; i++)
        if (d->nodes[i].p == p) return &d->nodes[i];
    return NULL;
}

/* Counts uses of every node (children visited on a node's first use only). */
static void dump_count(dumper *d, const pat_t *p) {
    if (!p) return;
    dump_node *e = dump_find(d, p);
    if (e) {
        e->uses++;
        return;
    }
    if (d->n == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        dump_node *nn = realloc(d->nodes, sizeof(*nn) * cap);
        if (!nn) return; /* printing only: an unshared print is still correct */
        d->nodes = nn;
        d->cap = cap;
    }
    d->nodes[d->n++] = (dump_node){p, 1, 0};
    switch (p->kind) {
    case PAT_OR: case PAT_AND: case PAT_OPTIONAL:
        dump_count(d, p->b);
        /* fall through */
    case PAT_TGI: case PAT_NOT: case PAT_HAS_DTYPE: case PAT_HAS_SHAPE: case PAT_HAS_SINFO: case PAT_HAS_ATTR:
        dump_count(d, p->a);
        break;
    case PAT_CALL:
        dump_count(d, p->a);
        /* fall through */
    case PAT_TUPLE: case PAT_TUPLE_UNORDERED:
        for (uint32_t i = 0; i < p->n; i++) dump_count(d, p->subs[i]);
        break;
    default:
        break;
    }
}

static void dump_rec(dumper *d, const pat_t *p);

static void dump_list(dumper *d, const pat_t *const *s, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (i) fputs(", ", d->out);
        dump_rec(d, s[i]);
    }
}

static void dump_rec(dumper *d, const pat_t *p) {
    FILE *out = d->out;
    if (!p) { fputs("<null>", out); return; }
    /* leaves are short: repeating them is clearer than a reference */
    bool leaf = p->kind == PAT_WILDCARD || p->kind == PAT_OP || p->kind == PAT_CONST;
    dump_node *e = leaf ? NULL : dump_find(d, p);
    if (e && e->id) {
        fprintf(out, "#%u", e->id);
        return;
    }
    if (e && e->uses > 1) {
        e->id = ++d->next_id;
        fprintf(out, "#%u=", e->id);
    }
    if (p->name) fprintf(out, "%s=", p->name);
    switch (p->kind) {
    case PAT_WILDCARD: fputs("*", out); break;
    case PAT_OP:
        for (uint32_t i = 0; i < p->n; i++) fprintf(out, "%s%s", i ? "|" : "", p->names[i] + 6);
        break;
    case PAT_CALL:
        dump_rec(d, p->a);
        fputc('(', out);
        dump_list(d, p->subs, p->n);
        fputs(!p->varargs ? ")" : p->n ? ", ...)" : "...)", out);
        break;
    case PAT_TUPLE: case PAT_TUPLE_UNORDERED:
        fputs(p->kind == PAT_TUPLE ? "(" : "{", out);
        dump_list(d, p->subs, p->n);
        fputs(p->kind == PAT_TUPLE ? ")" : "}", out);
        break;
    case PAT_TGI: dump_rec(d, p->a); fprintf(out, "[%d]", p->index); break;
    case PAT_OR: case PAT_AND: case PAT_OPTIONAL:
        fprintf(out, "%s(", kind_names[p->kind]);
        dump_rec(d, p->a);
        fputs(", ", out);
        dump_rec(d, p->b);
        fputc(')', out);
        break;
    case PAT_NOT: case PAT_HAS_DTYPE: case PAT_HAS_SHAPE: case PAT_HAS_SINFO: case PAT_HAS_ATTR:
        fprintf(out, "%s(", kind_names[p->kind]);
        dump_rec(d, p->a);
        fputc(')', out);
        break;
    default:
        fputs(kind_names[p->kind], out);
        if (p->str) fprintf(out, "(\"%s\")", p->str);
        break;
    }
}

void pat_dump(const pat_t *p, FILE *out) {
    dumper d = {out, NULL, 0, 0, 0};
    dump_count(&d, p);
    dump_rec(&d, p);
    free(d.nodes);
}
