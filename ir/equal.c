/* Structural equality and hashing up to renaming of vars.
 *
 * Expression vars pair up where they are defined (params, bindings); symbolic dim vars pair up
 * the first time they appear as a whole dim or prim value (for well-formed IR that is their
 * definition: a param's or a match_cast's struct info). Inside compound dims (n * 2, n // 4)
 * vars compare through that pairing, else by identity. Polynomials are compared term by term
 * without regard to term or factor order, since the canonical order follows var creation order,
 * which renaming does not preserve. The hash walks the same structure, numbering vars in
 * definition order, and combines terms commutatively, so equal things hash equal. */
#include "ir/equal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/idtab_impl.h"
#include "ir/op.h"

/* ---- equality state ---- */

typedef struct eq_st {
    unsigned flags;
    ir_idtab va, vb;        /* expression vars by id: a -> b's id and b -> a's id */
    gr_map pa, pb;          /* symbolic vars: a -> b and b -> a */
    bool var_identity;      /* every var pair so far is (v, v) */
    bool prim_identity;     /* every prim var pair so far is (v, v) */
    /* explain */
    char *buf;
    size_t size;
    bool failed;
    const char *fn;
    int block, binding;
    const char *var;
} eq_st;

static void st_init(eq_st *st, unsigned flags, char *buf, size_t size) {
    memset(st, 0, sizeof(*st));
    st->flags = flags;
    ir_idtab_init(&st->va);
    ir_idtab_init(&st->vb);
    gr_map_init(&st->pa);
    gr_map_init(&st->pb);
    st->var_identity = st->prim_identity = true;
    st->buf = buf;
    st->size = size;
    st->block = st->binding = -1;
}

static void st_reset_maps(eq_st *st) {
    ir_idtab_clear(&st->va);
    ir_idtab_clear(&st->vb);
    gr_map_clear(&st->pa);
    gr_map_clear(&st->pb);
    st->var_identity = st->prim_identity = true;
}

static void st_free(eq_st *st) {
    ir_idtab_free(&st->va);
    ir_idtab_free(&st->vb);
    gr_map_free(&st->pa);
    gr_map_free(&st->pb);
}

static bool eq_fail(eq_st *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool eq_fail(eq_st *st, const char *fmt, ...) {
    if (!st->buf || st->failed || !st->size) {
        st->failed = true;
        return false;
    }
    st->failed = true;
    char where[600] = "";
    int n = 0;
    if (st->fn) n += snprintf(where + n, sizeof(where) - (size_t)n, "function '%s'", st->fn);
    if (st->block >= 0 && n < (int)sizeof(where))
        n += snprintf(where + n, sizeof(where) - (size_t)n, "%sblock %d", n ? ", " : "", st->block);
    if (st->block >= 0 && st->binding >= 0 && n < (int)sizeof(where))
        n += snprintf(where + n, sizeof(where) - (size_t)n, ", binding %d", st->binding);
    if (st->var && n < (int)sizeof(where))
        snprintf(where + n, sizeof(where) - (size_t)n, " (var '%s')", st->var);
    char what[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(st->buf, st->size, "%s%s%s", where, where[0] ? ": " : "", what);
    return false;
}

static bool str_eq(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool span_eq(const ir_span *a, const ir_span *b) {
    if (a == b) return true;
    if (!a || !b || a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
        const ir_loc *x = &a->locs[i], *y = &b->locs[i];
        if (!str_eq(x->source, y->source) || x->line != y->line || x->col != y->col ||
            x->end_line != y->end_line || x->end_col != y->end_col || x->is_output != y->is_output)
            return false;
    }
    return true;
}

static bool dtype_eq(ir_dtype a, ir_dtype b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

/* ---- symbolic dims ---- */

/* Pairs prim vars a and b (first sight defines the pair). */
static bool pvar_pair(eq_st *st, const ir_prim *a, const ir_prim *b, bool may_define) {
    uint64_t x;
    if (gr_map_get(&st->pa, GR_MAP_PTR(a), &x)) return x == GR_MAP_PTR(b);
    if (gr_map_get(&st->pb, GR_MAP_PTR(b), &x)) return false;
    if (!may_define) return a == b;
    gr_map_put(&st->pa, GR_MAP_PTR(a), GR_MAP_PTR(b));
    gr_map_put(&st->pb, GR_MAP_PTR(b), GR_MAP_PTR(a));
    if (a != b) st->prim_identity = false;
    return true;
}

static bool prim_in(eq_st *st, const ir_prim *a, const ir_prim *b);

static bool factors_match(eq_st *st, const ir_prim_term *x, const ir_prim_term *y) {
    if (x->coef != y->coef || x->nfactors != y->nfactors) return false;
    uint64_t used = 0; /* factor lists are short; longer ones compare in order */
    if (x->nfactors > 64) {
        for (uint32_t i = 0; i < x->nfactors; i++)
            if (!prim_in(st, x->factors[i], y->factors[i])) return false;
        return true;
    }
    for (uint32_t i = 0; i < x->nfactors; i++) {
        bool found = false;
        for (uint32_t j = 0; j < y->nfactors && !found; j++)
            if (!(used & (1ull << j)) && prim_in(st, x->factors[i], y->factors[j])) {
                used |= 1ull << j;
                found = true;
            }
        if (!found) return false;
    }
    return true;
}

/* A prim inside a compound dim: vars never define new pairs here. */
static bool prim_in(eq_st *st, const ir_prim *a, const ir_prim *b) {
    if (a == b && st->prim_identity) return true;
    if (a->kind != b->kind) return false;
    switch ((ir_prim_kind)a->kind) {
    case IR_PRIM_INT: return a->value == b->value;
    case IR_PRIM_VAR: return pvar_pair(st, a, b, false);
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD: return prim_in(st, a->a, b->a) && prim_in(st, a->b, b->b);
    case IR_PRIM_POLY: {
        if (a->value != b->value || a->nterms != b->nterms) return false;
        for (uint32_t i = 0; i < a->nterms; i++) {
            if (factors_match(st, &a->terms[i], &b->terms[i])) continue; /* usual case: same order */
            bool found = false;
            for (uint32_t j = 0; j < b->nterms && !found; j++)
                found = j != i && factors_match(st, &a->terms[i], &b->terms[j]);
            if (!found) return false;
        }
        return true;
    }
    }
    return false;
}

/* A whole dim or prim value: a bare var may define a pair. */
static bool prim_eq(eq_st *st, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return a == b;
    if (a->kind == IR_PRIM_VAR && b->kind == IR_PRIM_VAR) return pvar_pair(st, a, b, true);
    return prim_in(st, a, b);
}

static bool sinfo_eq_rec(eq_st *st, const ir_sinfo *a, const ir_sinfo *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->opaque != b->opaque) return false;
    switch ((ir_sinfo_kind)a->kind) {
    case IR_SINFO_OBJECT: return true;
    case IR_SINFO_PRIM: return dtype_eq(a->dtype, b->dtype) && prim_eq(st, a->value, b->value);
    case IR_SINFO_TENSOR:
        if (!dtype_eq(a->dtype, b->dtype)) return false;
        __attribute__((fallthrough));
    case IR_SINFO_SHAPE:
        if (a->ndim != b->ndim || !a->dims != !b->dims) return false;
        if (a->dims)
            for (int32_t i = 0; i < a->ndim; i++)
                if (!prim_eq(st, a->dims[i], b->dims[i])) return false;
        return true;
    case IR_SINFO_TUPLE:
    case IR_SINFO_FUNC:
        if (a->n != b->n) return false;
        for (uint32_t i = 0; i < a->n; i++)
            if (!sinfo_eq_rec(st, a->fields[i], b->fields[i])) return false;
        return a->kind == IR_SINFO_TUPLE || sinfo_eq_rec(st, a->ret, b->ret);
    }
    return false;
}

/* The failure report of sinfo_eq (a and b differ). */
static bool sinfo_fail(eq_st *st, const ir_sinfo *a, const ir_sinfo *b, const char *what) {
    if (!st->buf) return eq_fail(st, "struct info"); /* no message wanted: skip the printing */
    char sa[300] = "(none)", sb[300] = "(none)";
    if (a) ir_sinfo_snprint(a, sa, sizeof(sa));
    if (b) ir_sinfo_snprint(b, sb, sizeof(sb));
    return eq_fail(st, "%s struct info differs: %s vs %s", what, sa, sb);
}

static bool sinfo_eq(eq_st *st, const ir_sinfo *a, const ir_sinfo *b, const char *what) {
    return sinfo_eq_rec(st, a, b) || sinfo_fail(st, a, b, what);
}

/* ---- attrs ---- */

static bool expr_eq(eq_st *st, const ir_expr *a, const ir_expr *b);

static bool attr_eq(eq_st *st, const ir_attr *a, const ir_attr *b) {
    if (a->kind != b->kind) return false;
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_STR: return str_eq(a->u.s, b->u.s);
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP:
        if (a->u.arr.n != b->u.arr.n) return false;
        for (uint32_t i = 0; i < a->u.arr.n; i++)
            if (!attr_eq(st, &a->u.arr.items[i], &b->u.arr.items[i])) return false;
        return true;
    case IR_ATTR_EXPR: {
        if (!a->u.expr || !b->u.expr) return a->u.expr == b->u.expr;
        return expr_eq(st, a->u.expr, b->u.expr);
    }
    case IR_ATTR_PRIM: return prim_eq(st, a->u.prim, b->u.prim);
    case IR_ATTR_OBJ: return a->u.obj == b->u.obj;
    default: return ir_attr_equal(a, b);
    }
}

static bool attrs_eq(eq_st *st, const ir_attrs *a, const ir_attrs *b, const char *what) {
    uint32_t na = a ? a->n : 0, nb = b ? b->n : 0;
    if (na != nb) return eq_fail(st, "%s: %u vs %u attributes", what, na, nb);
    for (uint32_t i = 0; i < na; i++) {
        if (!str_eq(a->keys[i], b->keys[i]))
            return eq_fail(st, "%s: attribute %u is '%s' vs '%s'", what, i, a->keys[i], b->keys[i]);
        if (!attr_eq(st, &a->vals[i], &b->vals[i])) {
            if (st->failed) return false;
            return eq_fail(st, "%s: attribute '%s' differs", what, a->keys[i]);
        }
    }
    return true;
}

/* ---- expressions ---- */

static const char *var_name(const ir_var *v) { return v->name; }

static bool var_def(eq_st *st, ir_var *a, ir_var *b) {
    if (a->base.kind != b->base.kind)
        return eq_fail(st, "var '%s' is a %s, '%s' a %s", a->name, ir_expr_kind_name(a->base.kind),
                       b->name, ir_expr_kind_name(b->base.kind));
    if ((st->flags & IR_EQ_NAMES) && !str_eq(a->name, b->name))
        return eq_fail(st, "var names differ: '%s' vs '%s'", a->name, b->name);
    if ((st->flags & IR_EQ_SPANS) && !span_eq(a->base.span, b->base.span))
        return eq_fail(st, "spans of var '%s' differ", a->name);
    uint64_t xa = ir_idtab_get(&st->va, a->base.id), xb = ir_idtab_get(&st->vb, b->base.id);
    if (xa || xb) {
        if (xa != b->base.id || xb != a->base.id)
            return eq_fail(st, "var '%s' / '%s' defined twice differently", a->name, b->name);
    } else {
        ir_idtab_put(&st->va, a->base.id, b->base.id);
        ir_idtab_put(&st->vb, b->base.id, a->base.id);
        if (a != b) st->var_identity = false;
    }
    if (sinfo_eq_rec(st, a->base.sinfo, b->base.sinfo)) return true;
    char what[300];  /* formatted only for the failure report */
    snprintf(what, sizeof(what), "var '%s'", a->name);
    return sinfo_fail(st, a->base.sinfo, b->base.sinfo, what);
}

static bool var_use(eq_st *st, const ir_var *a, const ir_var *b) {
    uint64_t x = ir_idtab_get(&st->va, a->base.id);
    if (x) {
        if (x == b->base.id && ir_idtab_get(&st->vb, b->base.id) == a->base.id) return true;
    } else if (a == b && !ir_idtab_get(&st->vb, b->base.id)) {
        return true; /* the same free var */
    }
    return eq_fail(st, "var '%s' used where '%s' is expected", var_name(a), var_name(b));
}

static bool const_eq(const ir_const *a, const ir_const *b) {
    const rt_tensor *x = a->data, *y = b->data;
    if (x == y) return true;
    if (!dtype_eq(x->dl.dtype, y->dl.dtype) || x->dl.ndim != y->dl.ndim) return false;
    for (int i = 0; i < x->dl.ndim; i++)
        if (x->dl.shape[i] != y->dl.shape[i]) return false;
    size_t n = rt_tensor_nbytes(x);
    return n == rt_tensor_nbytes(y) && (n == 0 || memcmp(rt_tensor_data(x), rt_tensor_data(y), n) == 0);
}

static bool seq_eq(eq_st *st, const ir_seq *a, const ir_seq *b) {
    if (a->nblocks != b->nblocks) return eq_fail(st, "%u vs %u binding blocks", a->nblocks, b->nblocks);
    int sblock = st->block, sbinding = st->binding;
    const char *svar = st->var;
    for (uint32_t i = 0; i < a->nblocks; i++) {
        const ir_block *x = a->blocks[i], *y = b->blocks[i];
        st->block = (int)i;
        st->binding = -1;
        if (x->dataflow != y->dataflow) return eq_fail(st, "dataflow block vs plain block");
        /* With different counts, the first differing binding is the more useful report. */
        uint32_t n = x->n < y->n ? x->n : y->n;
        for (uint32_t j = 0; j < n; j++) {
            const ir_binding *p = &x->bindings[j], *q = &y->bindings[j];
            st->binding = (int)j;
            st->var = p->var->name;
            if (!p->match_sinfo != !q->match_sinfo) return eq_fail(st, "match_cast vs plain binding");
            if (!expr_eq(st, p->value, q->value)) return false;
            if (p->match_sinfo && !sinfo_eq(st, p->match_sinfo, q->match_sinfo, "match_cast"))
                return false;
            if (!var_def(st, p->var, q->var)) return false;
        }
        if (x->n != y->n) {
            st->binding = (int)n;
            st->var = NULL;
            return eq_fail(st, "%u vs %u bindings (the first %u are equal)", x->n, y->n, n);
        }
    }
    st->block = sblock;
    st->binding = sbinding;
    st->var = svar;
    if (!expr_eq(st, a->body, b->body)) return false;
    return true;
}

static bool func_eq(eq_st *st, const ir_func *a, const ir_func *b) {
    if (a->nparams != b->nparams) return eq_fail(st, "%u vs %u parameters", a->nparams, b->nparams);
    for (uint32_t i = 0; i < a->nparams; i++)
        if (!var_def(st, a->params[i], b->params[i])) return false;
    /* A declared return is compared when both sides declare one (the other is the body's). */
    if (a->ret_sinfo && b->ret_sinfo && !sinfo_eq(st, a->ret_sinfo, b->ret_sinfo, "return"))
        return false;
    if (!attrs_eq(st, a->attrs, b->attrs, "function attrs")) return false;
    return expr_eq(st, a->body, b->body);
}

static bool expr_eq(eq_st *st, const ir_expr *a, const ir_expr *b) {
    if (!a || !b) return a == b ? true : eq_fail(st, "missing expression");
    if (a == b && st->var_identity && st->prim_identity && !ir_is_var(a)) return true;
    if (a->kind != b->kind) {
        if (ir_is_var(a) && ir_is_var(b))
            return eq_fail(st, "%s '%s' used where %s '%s' is expected", ir_expr_kind_name(a->kind),
                           ((const ir_var *)a)->name, ir_expr_kind_name(b->kind), ((const ir_var *)b)->name);
        return eq_fail(st, "%s vs %s", ir_expr_kind_name(a->kind), ir_expr_kind_name(b->kind));
    }
    if ((st->flags & IR_EQ_SPANS) && !ir_is_var(a) && !span_eq(a->span, b->span))
        return eq_fail(st, "spans of a %s differ", ir_expr_kind_name(a->kind));
    switch ((ir_expr_kind)a->kind) {
    case IR_VAR:
    case IR_DFVAR: return var_use(st, (const ir_var *)a, (const ir_var *)b);
    case IR_CONST:
        if (!const_eq((const ir_const *)a, (const ir_const *)b)) return eq_fail(st, "constants differ");
        return true;
    case IR_TUPLE: {
        const ir_tuple *x = (const ir_tuple *)a, *y = (const ir_tuple *)b;
        if (x->n != y->n) return eq_fail(st, "tuples of %u vs %u fields", x->n, y->n);
        for (uint32_t i = 0; i < x->n; i++)
            if (!expr_eq(st, x->fields[i], y->fields[i])) return false;
        break;
    }
    case IR_TGI: {
        const ir_tgi *x = (const ir_tgi *)a, *y = (const ir_tgi *)b;
        if (x->index != y->index) return eq_fail(st, "tuple index %d vs %d", x->index, y->index);
        if (!expr_eq(st, x->tuple, y->tuple)) return false;
        break;
    }
    case IR_CALL: {
        const ir_call *x = (const ir_call *)a, *y = (const ir_call *)b;
        if (!expr_eq(st, x->callee, y->callee)) return false;
        if (x->nargs != y->nargs) return eq_fail(st, "calls with %u vs %u arguments", x->nargs, y->nargs);
        for (uint32_t i = 0; i < x->nargs; i++)
            if (!expr_eq(st, x->args[i], y->args[i])) return false;
        if (!attrs_eq(st, x->attrs, y->attrs, "call")) return false;
        if (x->nsinfo_args != y->nsinfo_args) return eq_fail(st, "call sinfo_args count differs");
        for (uint32_t i = 0; i < x->nsinfo_args; i++)
            if (!sinfo_eq(st, x->sinfo_args[i], y->sinfo_args[i], "call sinfo_args")) return false;
        break;
    }
    case IR_OP:
        if (((const ir_op *)a)->def != ((const ir_op *)b)->def)
            return eq_fail(st, "op %s vs %s", ((const ir_op *)a)->def->text_name,
                           ((const ir_op *)b)->def->text_name);
        return true;
    case IR_GVAR:
        if (!str_eq(((const ir_gvar *)a)->name, ((const ir_gvar *)b)->name))
            return eq_fail(st, "@%s vs @%s", ((const ir_gvar *)a)->name, ((const ir_gvar *)b)->name);
        return true;
    case IR_EXTERN:
        if (!str_eq(((const ir_extern *)a)->symbol, ((const ir_extern *)b)->symbol))
            return eq_fail(st, "extern '%s' vs '%s'", ((const ir_extern *)a)->symbol,
                           ((const ir_extern *)b)->symbol);
        return true;
    case IR_FUNC: return func_eq(st, (const ir_func *)a, (const ir_func *)b);
    case IR_SEQ:
        if (!seq_eq(st, (const ir_seq *)a, (const ir_seq *)b)) return false;
        break;
    case IR_IF: {
        const ir_if *x = (const ir_if *)a, *y = (const ir_if *)b;
        if (!expr_eq(st, x->cond, y->cond) || !expr_eq(st, x->then_branch, y->then_branch) ||
            !expr_eq(st, x->else_branch, y->else_branch))
            return false;
        break;
    }
    case IR_SHAPE: {
        const ir_shape_expr *x = (const ir_shape_expr *)a, *y = (const ir_shape_expr *)b;
        if (x->n != y->n) return eq_fail(st, "shapes of rank %u vs %u", x->n, y->n);
        for (uint32_t i = 0; i < x->n; i++)
            if (!prim_eq(st, x->dims[i], y->dims[i])) return eq_fail(st, "shape dim %u differs", i);
        return true;
    }
    case IR_PRIMVAL: {
        const ir_primval *x = (const ir_primval *)a, *y = (const ir_primval *)b;
        if (!dtype_eq(x->dtype, y->dtype) || !prim_eq(st, x->value, y->value) ||
            memcmp(&x->fvalue, &y->fvalue, sizeof(double)) != 0)
            return eq_fail(st, "prim values differ");
        return true;
    }
    case IR_STR:
        if (!str_eq(((const ir_str *)a)->value, ((const ir_str *)b)->value))
            return eq_fail(st, "strings \"%s\" vs \"%s\"", ((const ir_str *)a)->value,
                           ((const ir_str *)b)->value);
        return true;
    default:
        return eq_fail(st, "unknown expression kind %d", a->kind);
    }
    /* Compound nodes: their struct info when both sides have it (normalization state aside). */
    if (a->sinfo && b->sinfo && !sinfo_eq(st, a->sinfo, b->sinfo, ir_expr_kind_name(a->kind))) return false;
    return true;
}

bool ir_struct_equal(const ir_expr *a, const ir_expr *b, unsigned flags) {
    eq_st st;
    st_init(&st, flags, NULL, 0);
    bool r = expr_eq(&st, a, b);
    st_free(&st);
    return r;
}

static const ir_expr *func_named(const ir_module *m, const char *name) {
    for (uint32_t i = 0; i < m->nfuncs; i++)
        if (str_eq(m->gvars[i]->name, name)) return m->funcs[i];
    return NULL;
}

static bool module_eq(eq_st *st, const ir_module *a, const ir_module *b) {
    if (a->nfuncs != b->nfuncs) return eq_fail(st, "modules have %u vs %u functions", a->nfuncs, b->nfuncs);
    bool by_name = (st->flags & IR_EQ_FUNCS_BY_NAME) != 0;
    for (uint32_t i = 0; i < a->nfuncs; i++) {
        if (by_name ? !func_named(b, a->gvars[i]->name) : !str_eq(a->gvars[i]->name, b->gvars[i]->name))
            return by_name ? eq_fail(st, "function '%s' is missing from the second module", a->gvars[i]->name)
                           : eq_fail(st, "function %u is '%s' vs '%s'", i, a->gvars[i]->name, b->gvars[i]->name);
    }
    for (uint32_t i = 0; i < a->nfuncs; i++) {
        st_reset_maps(st);
        st->fn = a->gvars[i]->name;
        st->block = st->binding = -1;
        st->var = NULL;
        if (!expr_eq(st, a->funcs[i], by_name ? func_named(b, a->gvars[i]->name) : b->funcs[i])) {
            if (!st->failed) eq_fail(st, "functions differ");
            return false;
        }
    }
    st_reset_maps(st);
    st->fn = NULL;
    st->block = -1;
    st->var = NULL;
    return attrs_eq(st, a->attrs, b->attrs, "module attrs");
}

bool ir_module_struct_equal(const ir_module *a, const ir_module *b, unsigned flags) {
    eq_st st;
    st_init(&st, flags, NULL, 0);
    bool r = module_eq(&st, a, b);
    st_free(&st);
    return r;
}

bool ir_module_struct_equal_explain(const ir_module *a, const ir_module *b, unsigned flags,
                                    char *buf, size_t size) {
    if (size) buf[0] = '\0';
    eq_st st;
    st_init(&st, flags, buf, size);
    bool r = module_eq(&st, a, b);
    st_free(&st);
    return r;
}

/* ---- hashing ---- */

typedef struct hs {
    unsigned flags;
    ir_idtab vidx;  /* var id -> definition number (from 1) */
    uint64_t nv;
    gr_map pidx;    /* prim var -> first-sight number + 1 */
    uint64_t np;
} hs;

static uint64_t fin(uint64_t x) { /* splitmix64 finalizer: spreads bits before commutative sums */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hstr(const char *s) { return s ? gr_hash_bytes(s, strlen(s), 0x5157) : 0; }

static uint64_t hprim(hs *h, const ir_prim *p, bool bare) {
    if (!p) return 0x11;
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: return gr_hash_mix(1, (uint64_t)p->value);
    case IR_PRIM_VAR: {
        uint64_t i = gr_map_get_or(&h->pidx, GR_MAP_PTR(p), 0);
        if (!i && bare) gr_map_put(&h->pidx, GR_MAP_PTR(p), i = ++h->np);
        return i ? gr_hash_mix(2, i) : gr_hash_mix(3, GR_MAP_PTR(p));
    }
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        return gr_hash_mix(gr_hash_mix(p->kind, hprim(h, p->a, false)), hprim(h, p->b, false));
    case IR_PRIM_POLY: {
        uint64_t sum = 0;
        for (uint32_t i = 0; i < p->nterms; i++) {
            const ir_prim_term *t = &p->terms[i];
            uint64_t fs = 0;
            for (uint32_t j = 0; j < t->nfactors; j++) fs += fin(hprim(h, t->factors[j], false));
            sum += fin(gr_hash_mix(gr_hash_mix((uint64_t)t->coef, t->nfactors), fs));
        }
        return gr_hash_mix(gr_hash_mix(4, (uint64_t)p->value), gr_hash_mix(p->nterms, sum));
    }
    }
    return 0;
}

static uint64_t hsinfo(hs *h, const ir_sinfo *s) {
    if (!s) return 0x22;
    uint64_t x = gr_hash_mix(0x100 + s->kind, s->opaque);
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_OBJECT: return x;
    case IR_SINFO_PRIM:
        x = gr_hash_mix(x, ((uint64_t)s->dtype.code << 24) | ((uint64_t)s->dtype.bits << 16) | s->dtype.lanes);
        return gr_hash_mix(x, hprim(h, s->value, true));
    case IR_SINFO_TENSOR:
        x = gr_hash_mix(x, ((uint64_t)s->dtype.code << 24) | ((uint64_t)s->dtype.bits << 16) | s->dtype.lanes);
        __attribute__((fallthrough));
    case IR_SINFO_SHAPE:
        x = gr_hash_mix(x, (uint64_t)(int64_t)s->ndim);
        x = gr_hash_mix(x, s->dims != NULL);
        if (s->dims)
            for (int32_t i = 0; i < s->ndim; i++) x = gr_hash_mix(x, hprim(h, s->dims[i], true));
        return x;
    case IR_SINFO_TUPLE:
    case IR_SINFO_FUNC:
        x = gr_hash_mix(x, s->n);
        for (uint32_t i = 0; i < s->n; i++) x = gr_hash_mix(x, hsinfo(h, s->fields[i]));
        if (s->kind == IR_SINFO_FUNC) x = gr_hash_mix(x, hsinfo(h, s->ret));
        return x;
    }
    return x;
}

static uint64_t hspan(const ir_span *s) {
    if (!s) return 0x33;
    uint64_t x = s->n;
    for (uint32_t i = 0; i < s->n; i++) {
        const ir_loc *l = &s->locs[i];
        x = gr_hash_mix(x, hstr(l->source));
        x = gr_hash_mix(x, ((uint64_t)(uint32_t)l->line << 32) | (uint32_t)l->col);
        x = gr_hash_mix(x, ((uint64_t)(uint32_t)l->end_line << 32) | (uint32_t)l->end_col);
        x = gr_hash_mix(x, l->is_output);
    }
    return x;
}

static uint64_t hexpr(hs *h, const ir_expr *e);

static uint64_t hattr(hs *h, const ir_attr *a) {
    uint64_t x = gr_hash_mix(0x200, a->kind);
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_NONE: return x;
    case IR_ATTR_BOOL: return gr_hash_mix(x, a->u.b);
    case IR_ATTR_INT: return gr_hash_mix(x, (uint64_t)a->u.i);
    case IR_ATTR_FLOAT: {
        double f = a->u.f;
        if (f == 0) f = 0; /* -0.0 == 0.0 */
        uint64_t bits;
        memcpy(&bits, &f, sizeof(bits));
        return gr_hash_mix(x, bits);
    }
    case IR_ATTR_STR: return gr_hash_mix(x, hstr(a->u.s));
    case IR_ATTR_DTYPE:
        return gr_hash_mix(x, ((uint64_t)a->u.dtype.code << 24) | ((uint64_t)a->u.dtype.bits << 16) | a->u.dtype.lanes);
    case IR_ATTR_ARRAY:
    case IR_ATTR_MAP:
        x = gr_hash_mix(x, a->u.arr.n);
        for (uint32_t i = 0; i < a->u.arr.n; i++) x = gr_hash_mix(x, hattr(h, &a->u.arr.items[i]));
        return x;
    case IR_ATTR_EXPR: return gr_hash_mix(x, a->u.expr ? hexpr(h, a->u.expr) : 0);
    case IR_ATTR_PRIM: return gr_hash_mix(x, hprim(h, a->u.prim, true));
    case IR_ATTR_OBJ: return gr_hash_mix(x, GR_MAP_PTR(a->u.obj));
    }
    return x;
}

static uint64_t hattrs(hs *h, const ir_attrs *a) {
    if (!a) return 0x44;
    uint64_t x = a->n;
    for (uint32_t i = 0; i < a->n; i++) {
        x = gr_hash_mix(x, hstr(a->keys[i]));
        x = gr_hash_mix(x, hattr(h, &a->vals[i]));
    }
    return x;
}

static uint64_t hvar_def(hs *h, const ir_var *v) {
    uint64_t x = gr_hash_mix(0x300, v->base.kind);
    if (!ir_idtab_get(&h->vidx, v->base.id)) ir_idtab_put(&h->vidx, v->base.id, ++h->nv);
    if (h->flags & IR_EQ_NAMES) x = gr_hash_mix(x, hstr(v->name));
    if (h->flags & IR_EQ_SPANS) x = gr_hash_mix(x, hspan(v->base.span));
    return gr_hash_mix(x, hsinfo(h, v->base.sinfo));
}

/* A constant's bytes, for bucketing only (equality compares them all): a large one by its head,
 * its tail and 64 words between, so that hashing a partitioned model's composites and regions
 * (byoc fuse and merge) does not read every weight of the model twice. */
static uint64_t hdata(const uint8_t *p, size_t n) {
    enum { EDGE = 2048, WORDS = 64 };
    if (n <= 2 * EDGE + 8 * WORDS) return gr_hash_bytes(p, n, 0x77);
    uint64_t x = gr_hash_mix(gr_hash_bytes(p, EDGE, 0x77), gr_hash_bytes(p + n - EDGE, EDGE, 0x78));
    for (size_t k = 1; k < WORDS; k++) {
        uint64_t w;
        memcpy(&w, p + (n - 8) / WORDS * k, 8);
        x = gr_hash_mix(x, w);
    }
    return gr_hash_mix(x, n);
}

static uint64_t hexpr(hs *h, const ir_expr *e) {
    if (!e) return 0x55;
    uint64_t x = gr_hash_mix(0x400, e->kind);
    if ((h->flags & IR_EQ_SPANS) && !ir_is_var(e)) x = gr_hash_mix(x, hspan(e->span));
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR: {
        uint64_t i = ir_idtab_get(&h->vidx, e->id);
        return gr_hash_mix(x, i ? i : fin(GR_MAP_PTR(e)));
    }
    case IR_CONST: {
        const rt_tensor *t = ((const ir_const *)e)->data;
        x = gr_hash_mix(x, ((uint64_t)t->dl.dtype.code << 24) | ((uint64_t)t->dl.dtype.bits << 16) | t->dl.dtype.lanes);
        for (int i = 0; i < t->dl.ndim; i++) x = gr_hash_mix(x, (uint64_t)t->dl.shape[i]);
        return gr_hash_mix(x, hdata(rt_tensor_data(t), rt_tensor_nbytes(t)));
    }
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        x = gr_hash_mix(x, t->n);
        for (uint32_t i = 0; i < t->n; i++) x = gr_hash_mix(x, hexpr(h, t->fields[i]));
        return x;
    }
    case IR_TGI:
        return gr_hash_mix(gr_hash_mix(x, (uint64_t)(int64_t)((const ir_tgi *)e)->index),
                           hexpr(h, ((const ir_tgi *)e)->tuple));
    case IR_CALL: {
        const ir_call *c = (const ir_call *)e;
        x = gr_hash_mix(x, hexpr(h, c->callee));
        x = gr_hash_mix(x, c->nargs);
        for (uint32_t i = 0; i < c->nargs; i++) x = gr_hash_mix(x, hexpr(h, c->args[i]));
        x = gr_hash_mix(x, hattrs(h, c->attrs));
        x = gr_hash_mix(x, c->nsinfo_args);
        for (uint32_t i = 0; i < c->nsinfo_args; i++) x = gr_hash_mix(x, hsinfo(h, c->sinfo_args[i]));
        return x;
    }
    case IR_OP: return gr_hash_mix(x, hstr(((const ir_op *)e)->def->name));
    case IR_GVAR: return gr_hash_mix(x, hstr(((const ir_gvar *)e)->name));
    case IR_EXTERN: return gr_hash_mix(x, hstr(((const ir_extern *)e)->symbol));
    case IR_FUNC: {
        const ir_func *f = (const ir_func *)e;
        x = gr_hash_mix(x, f->nparams);
        for (uint32_t i = 0; i < f->nparams; i++) x = gr_hash_mix(x, hvar_def(h, f->params[i]));
        /* The declared return is left out: equality tolerates one side leaving it implicit. */
        x = gr_hash_mix(x, hattrs(h, f->attrs));
        return gr_hash_mix(x, hexpr(h, f->body));
    }
    case IR_SEQ: {
        const ir_seq *s = (const ir_seq *)e;
        x = gr_hash_mix(x, s->nblocks);
        for (uint32_t i = 0; i < s->nblocks; i++) {
            const ir_block *b = s->blocks[i];
            x = gr_hash_mix(x, ((uint64_t)b->dataflow << 32) | b->n);
            for (uint32_t j = 0; j < b->n; j++) {
                const ir_binding *bd = &b->bindings[j];
                x = gr_hash_mix(x, hexpr(h, bd->value));
                x = gr_hash_mix(x, bd->match_sinfo ? hsinfo(h, bd->match_sinfo) : 0x66);
                x = gr_hash_mix(x, hvar_def(h, bd->var));
            }
        }
        return gr_hash_mix(x, hexpr(h, s->body));
    }
    case IR_IF: {
        const ir_if *c = (const ir_if *)e;
        x = gr_hash_mix(x, hexpr(h, c->cond));
        x = gr_hash_mix(x, hexpr(h, c->then_branch));
        return gr_hash_mix(x, hexpr(h, c->else_branch));
    }
    case IR_SHAPE: {
        const ir_shape_expr *s = (const ir_shape_expr *)e;
        x = gr_hash_mix(x, s->n);
        for (uint32_t i = 0; i < s->n; i++) x = gr_hash_mix(x, hprim(h, s->dims[i], true));
        return x;
    }
    case IR_PRIMVAL: {
        const ir_primval *p = (const ir_primval *)e;
        uint64_t bits;
        memcpy(&bits, &p->fvalue, sizeof(bits));
        x = gr_hash_mix(x, ((uint64_t)p->dtype.code << 24) | ((uint64_t)p->dtype.bits << 16) | p->dtype.lanes);
        return gr_hash_mix(gr_hash_mix(x, hprim(h, p->value, true)), bits);
    }
    case IR_STR: return gr_hash_mix(x, hstr(((const ir_str *)e)->value));
    default: return x;
    }
}

static void hs_init(hs *h, unsigned flags) {
    memset(h, 0, sizeof(*h));
    h->flags = flags;
    ir_idtab_init(&h->vidx);
    gr_map_init(&h->pidx);
}

static void hs_reset(hs *h) {
    ir_idtab_clear(&h->vidx);
    gr_map_clear(&h->pidx);
    h->nv = h->np = 0;
}

static void hs_free(hs *h) {
    ir_idtab_free(&h->vidx);
    gr_map_free(&h->pidx);
}

uint64_t ir_struct_hash(const ir_expr *e, unsigned flags) {
    hs h;
    hs_init(&h, flags);
    uint64_t r = hexpr(&h, e);
    hs_free(&h);
    return r;
}

uint64_t ir_module_struct_hash(const ir_module *m, unsigned flags) {
    hs h;
    hs_init(&h, flags);
    uint64_t x = gr_hash_mix(0x500, m->nfuncs);
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        hs_reset(&h);
        x = gr_hash_mix(x, hstr(m->gvars[i]->name));
        x = gr_hash_mix(x, hexpr(&h, m->funcs[i]));
    }
    hs_reset(&h);
    x = gr_hash_mix(x, hattrs(&h, m->attrs));
    hs_free(&h);
    return x;
}
