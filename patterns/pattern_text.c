/* Pattern tables from / to the text format (DESIGN.md "Pattern files"). */
#include "patterns/pattern_text.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "ir/op.h"
#include "ir/parser.h"

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

static gr_status read_func(reader *r, pat_table *t, const char *gname, const ir_func *f) {
    ir_ctx_t *ctx = r->ctx;
    r->fname = gname;
    const char *comp = ir_attrs_get_str(f->attrs, "Composite");
    if (!comp || !*comp) return rerr(r, "has no \"Composite\" attribute (the pattern name)");
    gr_map_clear(&r->vars);
    const pat_t **params = IR_NEW_ARRAY(ctx, const pat_t *, f->nparams + 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        params[i] = pat_name(ctx, param_pattern(ctx, f->params[i]->base.sinfo), f->params[i]->name);
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
            bool is_root = &bd->var->base == root_var;
            p = pat_name(ctx, p, is_root ? "root" : bd->var->name);
            gr_map_put(&r->vars, GR_MAP_PTR(bd->var), GR_MAP_PTR(p));
            if (is_root) root = p;
        }
    if (!root) return rerr(r, "must return a var bound in its body");
    pat_table_entry *e = table_push(ctx, t, comp, root);
    e->func_name = ir_intern(ctx, gname);
    e->nparams = f->nparams;
    e->params = params;
    e->span = f->base.span;
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
