/* Printing a pattern table in the text form pat_table_read accepts: every call, tuple and
 * projection becomes a binding, every leaf wildcard a param, written attrs are the has_attr
 * keys. Patterns the text form cannot express are GR_ERR_UNSUPPORTED. */
#include <ctype.h>
#include <string.h>

#include "ir/op.h"
#include "ir/text/printer.h"
#include "patterns/pattern_text.h"

typedef struct printer {
    ir_ctx_t *ctx;
    FILE *out;                       /* body text */
    gr_diag *diag;
    const char *entry;
    GR_VEC(const pat_t *) params;    /* leaf nodes printed as params (outermost constraint) */
    GR_VEC(const char *) names;      /* names used so far (params and bindings) */
    gr_map done;                     /* pattern -> interned var name */
    uint32_t tmp;
    uint32_t ndims;                  /* fresh symbolic dim names */
    const pat_t *root;
} printer;

static gr_status unsupported(printer *p, const pat_t *n) {
    return gr_diag_set(p->diag, GR_ERR_UNSUPPORTED, "pattern '%s': a %s pattern has no text form",
                       p->entry, pat_kind_name((pat_kind)n->kind));
}

static bool ident_ok(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

static const char *fresh_name(printer *p, const char *want, const char *prefix) {
    const char *n = ident_ok(want) ? want : NULL;
    for (;;) {
        if (!n) n = ir_internf(p->ctx, "%s%u", prefix, p->tmp++);
        bool used = false;
        for (uint32_t i = 0; i < p->names.len && !used; i++) used = strcmp(p->names.data[i], n) == 0;
        if (!used) break;
        n = NULL;
    }
    n = ir_intern(p->ctx, n);
    gr_vec_push(&p->names, n);
    return n;
}

/* A param leaf: a wildcard under has_sinfo / has_dtype / has_shape / names. */
static bool is_param_leaf(const pat_t *n) {
    while (n->kind == PAT_HAS_SINFO || n->kind == PAT_HAS_DTYPE || n->kind == PAT_HAS_SHAPE) n = n->a;
    return n->kind == PAT_WILDCARD;
}

static void print_param_sinfo(printer *p, const pat_t *n, FILE *out) {
    ir_dtype dt = IR_DTYPE_VOID;
    int32_t ndim = -1;
    const ir_prim *const *dims = NULL;
    const ir_sinfo *other = NULL;
    bool tensor = false;
    for (; n->kind != PAT_WILDCARD; n = n->a) {
        if (n->kind == PAT_HAS_DTYPE) dt = n->dtype, tensor = true;
        else if (n->kind == PAT_HAS_SHAPE) ndim = n->ndim, dims = n->dims, tensor = true;
        else if (n->sinfo->kind == IR_SINFO_TENSOR && n->sinfo->ndim < 0 && ir_dtype_is_void(n->sinfo->dtype)) tensor = true;
        else other = n->sinfo;
    }
    if (other && !tensor) { ir_sinfo_print(other, out); return; }
    if (!tensor) { fputs("R.Object", out); return; }
    if (ndim < 0 && ir_dtype_is_void(dt)) { fputs("R.Tensor", out); return; }
    fputs("R.Tensor(", out);
    const char *sep = "";
    if (ndim >= 0 && dims) {
        fputc('(', out);
        for (int32_t i = 0; i < ndim; i++) {
            if (i) fputs(", ", out);
            if (dims[i]) ir_prim_print(dims[i], out);
            else fprintf(out, "\"d%u\"", p->ndims++);
        }
        fputs(ndim == 1 ? ",)" : ")", out);
        sep = ", ";
    } else if (ndim >= 0) {
        fprintf(out, "ndim=%d", ndim);
        sep = ", ";
    }
    if (!ir_dtype_is_void(dt)) fprintf(out, "%sdtype=\"%s\"", sep, ir_dtype_name(dt));
    fputc(')', out);
}

static gr_status emit(printer *p, const pat_t *n, const char **name);

/* The text of an argument: a var name, or an inline leaf (constant, shape, extern). */
static gr_status arg_text(printer *p, const pat_t *n, char **buf, size_t *len) {
    FILE *f = open_memstream(buf, len);
    gr_status st = GR_OK;
    switch (n->kind) {
    case PAT_CONST: fputs("R.const(0, \"float32\")", f); break;
    case PAT_EXTERN:
        if (!n->str) st = unsupported(p, n);
        else fprintf(f, "R.ExternFunc(\"%s\")", n->str);
        break;
    case PAT_SHAPE:
        fputs("R.shape([", f);
        for (uint32_t i = 0; i < n->n && st == GR_OK; i++) {
            if (i) fputs(", ", f);
            if (!n->dims[i]) st = unsupported(p, n);
            else ir_prim_print(n->dims[i], f);
        }
        fputs("])", f);
        break;
    case PAT_EXPR:
        if (n->expr->kind == IR_PRIMVAL || n->expr->kind == IR_STR) {
            char *s = ir_print_expr_str(n->expr, NULL);
            fputs(s, f);
            free(s);
        } else {
            st = unsupported(p, n);
        }
        break;
    case PAT_TUPLE: {
        fputc('(', f);
        for (uint32_t i = 0; i < n->n && st == GR_OK; i++) {
            char *b = NULL;
            size_t l = 0;
            st = arg_text(p, n->subs[i], &b, &l);
            if (st == GR_OK) fprintf(f, "%s%s", i ? ", " : "", b);
            free(b);
        }
        fputs(n->n == 1 ? ",)" : ")", f);
        break;
    }
    default: {
        const char *nm = NULL;
        st = emit(p, n, &nm);
        if (st == GR_OK) fputs(nm, f);
        break;
    }
    }
    fclose(f);
    return st;
}

/* Emits the bindings for n (producers first) and returns the var naming it. */
static gr_status emit(printer *p, const pat_t *n, const char **name) {
    uint64_t d = gr_map_get_or(&p->done, GR_MAP_PTR(n), 0);
    if (d) { *name = (const char *)(uintptr_t)d; return GR_OK; }
    if (is_param_leaf(n)) {
        *name = fresh_name(p, n->name, "p");
        gr_vec_push(&p->params, n);
        gr_map_put(&p->done, GR_MAP_PTR(n), GR_MAP_PTR(*name));
        return GR_OK;
    }
    const pat_t *call = n;
    const ir_attrs *attrs = NULL;
    if (n->kind == PAT_HAS_ATTR) { attrs = n->attrs; call = n->a; }
    gr_status st = GR_OK;
    char *rhs = NULL;
    size_t rlen = 0;
    FILE *f = open_memstream(&rhs, &rlen);
    if (call->kind == PAT_CALL && call->a->kind == PAT_OP && call->a->n == 1 && !call->varargs) {
        const ir_op_def *def = ir_op_def_find(call->a->names[0]);
        if (def->flags & IR_OPF_CALL_LIKE) st = unsupported(p, call);
        fprintf(f, "%s(", def->text_name);
        for (uint32_t i = 0; i < call->n && st == GR_OK; i++) {
            char *b = NULL;
            size_t l = 0;
            st = arg_text(p, call->subs[i], &b, &l);
            if (st == GR_OK) fprintf(f, "%s%s", i ? ", " : "", b);
            free(b);
        }
        for (uint32_t i = 0; attrs && i < attrs->n; i++) {
            fprintf(f, "%s%s=", call->n || i ? ", " : "", attrs->keys[i]);
            ir_attr_print(&attrs->vals[i], f);
        }
        fputc(')', f);
    } else if (!attrs && (call->kind == PAT_TUPLE || call->kind == PAT_TGI)) {
        if (call->kind == PAT_TUPLE) {
            char *b = NULL;
            size_t l = 0;
            st = arg_text(p, call, &b, &l);
            if (st == GR_OK) fputs(b, f);
            free(b);
        } else if (call->index < 0) {
            st = unsupported(p, call);
        } else {
            const char *tn = NULL;
            st = emit(p, call->a, &tn);
            if (st == GR_OK) fprintf(f, "%s[%d]", tn, call->index);
        }
    } else {
        st = unsupported(p, call);
    }
    fclose(f);
    if (st == GR_OK) {
        *name = fresh_name(p, n->name && strcmp(n->name, "root") ? n->name
                              : n == p->root ? "gv" : NULL, "lv");
        gr_map_put(&p->done, GR_MAP_PTR(n), GR_MAP_PTR(*name));
        fprintf(p->out, "            %s = %s\n", *name, rhs);
    }
    free(rhs);
    return st;
}

static void py_name(const char *s, FILE *out) {
    for (; *s; s++) fputc(isalnum((unsigned char)*s) ? *s : '_', out);
}

static gr_status print_entry(ir_ctx_t *ctx, const pat_table_entry *e, uint32_t idx, FILE *out,
                             gr_diag *diag) {
    printer p = {.ctx = ctx, .diag = diag, .entry = e->name, .root = e->pattern};
    gr_map_init(&p.done);
    char *body = NULL;
    size_t blen = 0;
    p.out = open_memstream(&body, &blen);
    /* Declared params first, in their order (unused ones too). */
    for (uint32_t i = 0; i < e->nparams; i++) {
        const char *nm = NULL;
        if (is_param_leaf(e->params[i])) emit(&p, e->params[i], &nm);
    }
    const char *root = NULL;
    gr_status st = emit(&p, e->pattern, &root);
    fclose(p.out);
    if (st == GR_OK && is_param_leaf(e->pattern))
        st = gr_diag_set(diag, GR_ERR_UNSUPPORTED, "pattern '%s': a bare wildcard has no text form", e->name);
    if (st == GR_OK) {
        fputs("    @R.function(private=True)\n    def ", out);
        if (e->func_name && ident_ok(e->func_name)) fputs(e->func_name, out);
        else { fprintf(out, "pattern%u_", idx); py_name(e->name, out); }
        fputc('(', out);
        for (uint32_t i = 0; i < p.params.len; i++) {
            fprintf(out, "%s%s: ", i ? ", " : "", (const char *)(uintptr_t)gr_map_get_or(&p.done, GR_MAP_PTR(p.params.data[i]), 0));
            print_param_sinfo(&p, p.params.data[i], out);
        }
        fputs("):\n", out);
        fprintf(out, "        R.func_attr({\"Composite\": \"%s\"})\n", e->name);
        fprintf(out, "        with R.dataflow():\n%s            R.output(%s)\n        return %s\n", body, root, root);
    }
    free(body);
    gr_vec_free(&p.params);
    gr_vec_free(&p.names);
    gr_map_free(&p.done);
    return st;
}

char *pat_print_table_str(const pat_table *t, gr_diag *diag) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("# graft pattern table: one pattern per function, earlier wins\n"
          "@I.ir_module\nclass Module:\n", f);
    ir_ctx_t *ctx = ir_ctx_new();
    gr_status st = GR_OK;
    for (uint32_t i = 0; i < t->n && st == GR_OK; i++) {
        if (i) fputc('\n', f);
        st = print_entry(ctx, &t->entries[i], i, f, diag);
    }
    /* a class needs a body: an empty table reads back only with one */
    if (!t->n) fputs("    pass\n", f);
    ir_ctx_free(ctx);
    fclose(f);
    if (st != GR_OK) { free(buf); return NULL; }
    return buf;
}
