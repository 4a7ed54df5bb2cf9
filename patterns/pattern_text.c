/* Pattern tables from / to the text format (DESIGN.md "Pattern files"). */
#include "patterns/pattern_text.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "ir/op.h"
#include "ir/text/parser.h"

/* ---- table ---- */

pat_table *pat_table_new(void) { return gr_xcalloc(1, sizeof(pat_table)); }

void pat_table_free(pat_table *t) {
    if (!t) return;
    free(t->entries);
    free(t);
}

static pat_table_entry *table_push(ir_ctx_t *ctx, pat_table *t, const char *name, const pat_t *p) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->entries = gr_xrealloc(t->entries, sizeof(*t->entries) * t->cap);
    }
    pat_table_entry *e = &t->entries[t->n++];
    memset(e, 0, sizeof(*e));
    e->name = ir_intern(ctx, name);
    const char *dot = strchr(name, '.');
    e->backend = dot ? ir_intern_n(ctx, name, (size_t)(dot - name)) : e->name;
    e->pattern = p;
    return e;
}

void pat_table_add(ir_ctx_t *ctx, pat_table *t, const char *name, const pat_t *pattern) {
    table_push(ctx, t, name, pattern);
}

/* ---- reading ---- */

typedef struct reader {
    ir_ctx_t *ctx;
    const gr_map *written;
    gr_map vars;              /* var -> pattern */
    gr_diag *diag;
    const char *fname;
} reader;

static gr_status rerr(reader *r, const char *what) {
    return gr_diag_set(r->diag, GR_ERR_INVALID, "pattern '%s': %s", r->fname, what);
}

/* A param: wildcard constrained by its struct info (plain R.Tensor: any tensor). */
static pat_t *param_pattern(ir_ctx_t *ctx, const ir_sinfo *s) {
    pat_t *p = pat_wildcard(ctx);
    if (!s || s->kind == IR_SINFO_OBJECT) return p;
    if (s->kind != IR_SINFO_TENSOR) return pat_has_sinfo(ctx, p, s);
    p = pat_has_sinfo(ctx, p, ir_sinfo_tensor(ctx, IR_DTYPE_VOID, -1, NULL));
    if (!ir_dtype_is_void(s->dtype)) p = pat_has_dtype(ctx, p, s->dtype);
    if (s->ndim >= 0) {
        const ir_prim *dims[s->ndim + 1];
        bool any = false;
        for (int32_t i = 0; i < s->ndim; i++) {
            dims[i] = s->dims && ir_prim_is_int(s->dims[i], NULL) ? s->dims[i] : NULL;
            any |= dims[i] != NULL;
        }
        p = pat_has_shape(ctx, p, s->ndim, any ? dims : NULL);
    }
    return p;
}

/* The written subset of a call's attrs, normalized by the op schema (e.g. padding [1, 1] is
 * compared in the model's normalized form). */
static const ir_attrs *written_attrs(reader *r, const ir_call *c, const ir_op_def *def) {
    if (!r->written) return c->attrs;
    uint64_t w = gr_map_get_or(r->written, GR_MAP_PTR(c), 0);
    if (!w) return NULL;
    const ir_attrs *given = (const ir_attrs *)(uintptr_t)w;
    const ir_attrs *norm = NULL;
    gr_diag tmp;
    gr_diag_clear(&tmp);
    if (ir_op_attrs_normalize(r->ctx, def, given, &norm, &tmp) != GR_OK) return given;
    const char *keys[given->n + 1];
    ir_attr vals[given->n + 1];
    uint32_t n = 0;
    for (uint32_t i = 0; i < given->n; i++) {
        const ir_attr *v = ir_attrs_get(norm, given->keys[i]);
        keys[n] = given->keys[i];
        vals[n++] = v ? *v : given->vals[i];
    }
    return ir_attrs_new(r->ctx, n, keys, vals);
}

static gr_status convert(reader *r, ir_expr *e, const pat_t **out);

static gr_status convert_list(reader *r, uint32_t n, ir_expr *const *es, const pat_t **out) {
    for (uint32_t i = 0; i < n; i++) {
        gr_status st = convert(r, es[i], &out[i]);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

static gr_status convert(reader *r, ir_expr *e, const pat_t **out) {
    ir_ctx_t *ctx = r->ctx;
    *out = NULL;
    switch (e->kind) {
    case IR_VAR: case IR_DFVAR: {
        uint64_t p = gr_map_get_or(&r->vars, GR_MAP_PTR(e), 0);
        if (!p) return rerr(r, "uses a var that is neither a param nor bound in the body");
        *out = (const pat_t *)(uintptr_t)p;
        return GR_OK;
    }
    case IR_CALL: {
        ir_call *c = (ir_call *)e;
        const pat_t *callee = NULL;
        gr_status st = convert(r, c->callee, &callee);
        if (st != GR_OK) return st;
        const pat_t *args[c->nargs + 1];
        if ((st = convert_list(r, c->nargs, c->args, args)) != GR_OK) return st;
        pat_t *p = pat_call(ctx, callee, c->nargs, args);
        if (c->callee->kind == IR_OP) {
            const ir_attrs *a = written_attrs(r, c, ((ir_op *)c->callee)->def);
            if (a && a->n) p = pat_has_attr(ctx, p, a);
        }
        *out = p;
        return GR_OK;
    }
    case IR_TUPLE: {
        ir_tuple *t = (ir_tuple *)e;
        const pat_t *fs[t->n + 1];
        gr_status st = convert_list(r, t->n, t->fields, fs);
        if (st != GR_OK) return st;
        *out = pat_tuple(ctx, t->n, fs);
        return GR_OK;
    }
    case IR_TGI: {
        const pat_t *tu = NULL;
        gr_status st = convert(r, ((ir_tgi *)e)->tuple, &tu);
        if (st != GR_OK) return st;
        *out = pat_tgi(ctx, tu, ((ir_tgi *)e)->index);
        return GR_OK;
    }
    case IR_OP: *out = pat_op(ctx, ((ir_op *)e)->def->name); return GR_OK;
    case IR_CONST: *out = pat_const(ctx); return GR_OK;
    case IR_EXTERN: *out = pat_extern(ctx, ((ir_extern *)e)->symbol); return GR_OK;
    case IR_GVAR: *out = pat_gvar(ctx, ((ir_gvar *)e)->name); return GR_OK;
    case IR_SHAPE: {
        ir_shape_expr *s = (ir_shape_expr *)e;
        const ir_prim *dims[s->n + 1];
        for (uint32_t i = 0; i < s->n; i++) dims[i] = ir_prim_is_int(s->dims[i], NULL) ? s->dims[i] : NULL;
        *out = pat_shape(ctx, s->n, dims);
        return GR_OK;
    }
    case IR_PRIMVAL: case IR_STR: *out = pat_expr(ctx, e); return GR_OK;
    default:
        return rerr(r, ir_internf(ctx, "a %s cannot be part of a pattern", ir_expr_kind_name(e->kind)));
    }
}

/* ---- the "check" attribute ---- */

typedef struct pred {
    const char *kind, *name;
    const ir_attr *args;   /* the items after the name */
    uint32_t nargs;
    bool used;
} pred;

static const char *attr_s(const ir_attr *a) { return a->kind == IR_ATTR_STR ? a->u.s : NULL; }

static gr_status read_preds(reader *r, const ir_attr *chk, pred *ps, uint32_t *n) {
    *n = 0;
    if (!chk) return GR_OK;
    if (chk->kind != IR_ATTR_ARRAY) return rerr(r, "\"check\" must be a list of predicates");
    static const struct { const char *kind; uint32_t nargs; } known[] = {
        {"const", 0}, {"dtype", 1}, {"ndim", 1}, {"shape", 1}, {"attr", 2},
        {"only_used_by", 1}, {"used_by", 1}, {"check", 0},
    };
    for (uint32_t i = 0; i < chk->u.arr.n; i++) {
        const ir_attr *it = &chk->u.arr.items[i];
        if (it->kind != IR_ATTR_ARRAY || it->u.arr.n < 2 || !attr_s(&it->u.arr.items[0]) ||
            !attr_s(&it->u.arr.items[1]))
            return rerr(r, "each \"check\" predicate is a list [kind, name, ...]");
        pred p = {attr_s(&it->u.arr.items[0]), attr_s(&it->u.arr.items[1]), it->u.arr.items + 2,
                  it->u.arr.n - 2, false};
        bool ok = false;
        const char *base = strncmp(p.kind, "not_", 4) == 0 ? p.kind + 4 : p.kind;
        for (size_t k = 0; k < 5 && !ok; k++)  /* the first five have a not_ form */
            ok = strcmp(known[k].kind, base) == 0 && known[k].nargs == p.nargs;
        for (size_t k = 0; k < sizeof known / sizeof known[0] && !ok; k++)
            ok = strcmp(known[k].kind, p.kind) == 0 && known[k].nargs == p.nargs;
        if (!ok)
            return rerr(r, ir_internf(r->ctx, "unknown check predicate [\"%s\", ...] with %u values "
                                      "(known: const, dtype, ndim, shape, attr, their not_ forms, "
                                      "only_used_by, used_by, check)", p.kind, p.nargs));
        ps[(*n)++] = p;
    }
    return GR_OK;
}

/* Wraps the pattern of `name` (a param or a binding) in the predicates that constrain it. */
static gr_status apply_preds(reader *r, pred *ps, uint32_t n, const char *name, pat_t **p) {
    ir_ctx_t *ctx = r->ctx;
    for (uint32_t i = 0; i < n; i++) {
        pred *q = &ps[i];
        if (strcmp(q->name, name) != 0 || !strcmp(q->kind, "check") || !strcmp(q->kind, "only_used_by") ||
            !strcmp(q->kind, "used_by"))
            continue;
        q->used = true;
        if (!strncmp(q->kind, "not_", 4)) {
            /* ["not_shape", x, ...]: x must not satisfy ["shape", x, ...] */
            pred base = *q;
            base.kind = q->kind + 4;
            pat_t *w = pat_wildcard(ctx);
            gr_status st = apply_preds(r, &base, 1, name, &w);
            if (st != GR_OK) return st;
            *p = pat_and(ctx, pat_not(ctx, w), *p);
        } else if (!strcmp(q->kind, "const")) {
            *p = pat_and(ctx, pat_const(ctx), *p);
        } else if (!strcmp(q->kind, "dtype")) {
            ir_dtype dt;
            if (!attr_s(&q->args[0]) || !ir_dtype_parse(attr_s(&q->args[0]), &dt))
                return rerr(r, "[\"dtype\", x, D]: D must be a dtype name");
            *p = pat_has_dtype(ctx, *p, dt);
        } else if (!strcmp(q->kind, "ndim")) {
            if (q->args[0].kind != IR_ATTR_INT || q->args[0].u.i < 0 || q->args[0].u.i > 8)
                return rerr(r, "[\"ndim\", x, N]: N must be an integer 0..8");
            *p = pat_has_shape(ctx, *p, (int32_t)q->args[0].u.i, NULL);
        } else if (!strcmp(q->kind, "shape")) {
            const ir_attr *a = &q->args[0];
            if (a->kind != IR_ATTR_ARRAY || a->u.arr.n > 8) return rerr(r, "[\"shape\", x, [d, ...]]: a list of dims");
            const ir_prim *dims[9];
            for (uint32_t k = 0; k < a->u.arr.n; k++) {
                if (a->u.arr.items[k].kind != IR_ATTR_INT) return rerr(r, "[\"shape\", x, [d, ...]]: dims are integers");
                int64_t d = a->u.arr.items[k].u.i;
                dims[k] = d < 0 ? NULL : ir_prim_int(ctx, d);
            }
            *p = pat_has_shape(ctx, *p, (int32_t)a->u.arr.n, dims);
        } else if (!strcmp(q->kind, "attr")) {
            const char *key = attr_s(&q->args[0]);
            if (!key) return rerr(r, "[\"attr\", v, KEY, VALUE]: KEY must be a string");
            *p = pat_has_attr(ctx, *p, ir_attrs_new(ctx, 1, &key, &q->args[1]));
        }
    }
    return GR_OK;
}

bool pat_table_entry_check(const pat_check_ctx *c, const char **reason, void *user) {
    const pat_table_entry *e = user;
    for (uint32_t i = 0; i < e->nonly; i++) {
        ir_expr *v = pat_match_named_reached(c->match, e->only[i]);
        if (!v || !ir_is_var(v)) continue;   /* not part of this alternative */
        uint32_t nu = 0;
        pat_block_users(c->block, v, &nu);
        if (nu != 1) {
            *reason = ir_internf(c->ctx, "%s has %u users (only_used_by wants one)", e->only[i], nu);
            return false;
        }
    }
    return true;
}

static gr_status read_func(reader *r, pat_table *t, const char *gname, const ir_func *f) {
    ir_ctx_t *ctx = r->ctx;
    r->fname = gname;
    const char *comp = ir_attrs_get_str(f->attrs, "Composite");
    if (!comp || !*comp) return rerr(r, "has no \"Composite\" attribute (the pattern name)");
    gr_map_clear(&r->vars);
    const ir_attr *chk = ir_attrs_get(f->attrs, "check");
    uint32_t npred = 0;
    pred *preds = IR_NEW_ARRAY(ctx, pred, chk && chk->kind == IR_ATTR_ARRAY ? chk->u.arr.n + 1 : 1);
    gr_status pst = read_preds(r, chk, preds, &npred);
    if (pst != GR_OK) return pst;
    const pat_t **params = IR_NEW_ARRAY(ctx, const pat_t *, f->nparams + 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        pat_t *pp = param_pattern(ctx, f->params[i]->base.sinfo);
        if ((pst = apply_preds(r, preds, npred, f->params[i]->name, &pp)) != GR_OK) return pst;
        params[i] = pat_name(ctx, pp, f->params[i]->name);
        gr_map_put(&r->vars, GR_MAP_PTR(f->params[i]), GR_MAP_PTR(params[i]));
    }
    if (f->body->kind != IR_SEQ) return rerr(r, "body is not a dataflow body");
    const ir_seq *s = (const ir_seq *)f->body;
    const ir_expr *root_var = s->body;
    if (!ir_is_var(root_var)) return rerr(r, "must return a var bound in its body");
    const pat_t *root = NULL;
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) {
            const ir_binding *bd = &s->blocks[b]->bindings[i];
            if (bd->match_sinfo) return rerr(r, "match_cast cannot be part of a pattern");
            const pat_t *p = NULL;
            gr_status st = convert(r, bd->value, &p);
            if (st != GR_OK) return st;
            pat_t *pw = (pat_t *)p;
            if ((st = apply_preds(r, preds, npred, bd->var->name, &pw)) != GR_OK) return st;
            p = pw;
            bool is_root = &bd->var->base == root_var;
            p = pat_name(ctx, p, is_root ? "root" : bd->var->name);
            gr_map_put(&r->vars, GR_MAP_PTR(bd->var), GR_MAP_PTR(p));
            if (is_root) root = p;
        }
    if (!root) return rerr(r, "must return a var bound in its body");
    /* match-time predicates; every other one must have named a param or a binding */
    const char **only = IR_NEW_ARRAY(ctx, const char *, npred + 1), **named = IR_NEW_ARRAY(ctx, const char *, npred + 1);
    uint32_t nonly = 0, nnamed = 0;
    for (uint32_t i = 0; i < npred; i++) {
        if (!strcmp(preds[i].kind, "check")) named[nnamed++] = preds[i].name;
        else if (!strcmp(preds[i].kind, "only_used_by")) only[nonly++] = ir_intern(ctx, preds[i].name);
        else if (!strcmp(preds[i].kind, "used_by")) continue;
        else if (!preds[i].used)
            return rerr(r, ir_internf(ctx, "check predicate [\"%s\", \"%s\", ...] names no param or binding",
                                      preds[i].kind, preds[i].name));
    }
    /* an earlier function of the same Composite name: this one is its next alternative */
    for (uint32_t i = 0; i < t->n; i++) {
        pat_table_entry *e = &t->entries[i];
        if (strcmp(e->name, comp) != 0) continue;
        e->pattern = pat_or(ctx, e->pattern, root);
        const char **o2 = IR_NEW_ARRAY(ctx, const char *, e->nonly + nonly + 1);
        const char **n2 = IR_NEW_ARRAY(ctx, const char *, e->nnamed + nnamed + 1);
        memcpy(o2, e->only, sizeof(char *) * e->nonly);
        memcpy(o2 + e->nonly, only, sizeof(char *) * nonly);
        memcpy(n2, e->named, sizeof(char *) * e->nnamed);
        memcpy(n2 + e->nnamed, named, sizeof(char *) * nnamed);
        e->only = o2, e->nonly += nonly;
        e->named = n2, e->nnamed += nnamed;
        return GR_OK;
    }
    pat_table_entry *e = table_push(ctx, t, comp, root);
    e->func_name = ir_intern(ctx, gname);
    e->nparams = f->nparams;
    e->params = params;
    e->span = f->base.span;
    e->nonly = nonly;
    e->only = only;
    e->nnamed = nnamed;
    e->named = named;
    return GR_OK;
}

gr_status pat_table_from_module(ir_ctx_t *ctx, const ir_module *m, const gr_map *written,
                                pat_table **out, gr_diag *diag) {
    *out = NULL;
    reader r = {ctx, written, {0}, diag, NULL};
    gr_map_init(&r.vars);
    pat_table *t = pat_table_new();
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < m->nfuncs && st == GR_OK; i++) {
        if (m->funcs[i]->kind != IR_FUNC) continue;
        st = read_func(&r, t, m->gvars[i]->name, (const ir_func *)m->funcs[i]);
    }
    gr_map_free(&r.vars);
    if (st != GR_OK) { pat_table_free(t); return st; }
    *out = t;
    return GR_OK;
}

gr_status pat_table_read(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                         pat_table **out, gr_diag *diag) {
    *out = NULL;
    gr_map written;
    gr_map_init(&written);
    ir_parse_opts opts = {.written_attrs = &written, .lenient = true};
    ir_module *m = NULL;
    gr_status st = ir_parse_module_opts(ctx, name, text, len, &opts, &m, diag);
    if (st == GR_OK) {
        st = pat_table_from_module(ctx, m, &written, out, diag);
        if (st != GR_OK) gr_diag_set_file(diag, name ? name : "<input>");
    }
    gr_map_free(&written);
    return st;
}

gr_status pat_table_read_file(ir_ctx_t *ctx, const char *path, pat_table **out, gr_diag *diag) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return gr_diag_set(diag, GR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (gr_is_dir(f)) {
        fclose(f);
        return gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            buf = gr_xrealloc(buf, cap);
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    gr_status st = err ? gr_diag_set(diag, GR_ERR_IO, "%s: read error", path)
                       : pat_table_read(ctx, path, buf, len, out, diag);
    free(buf);
    return st;
}
