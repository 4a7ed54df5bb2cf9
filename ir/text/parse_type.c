/* The parser's type-level forms: symbolic integer expressions, struct info, attribute values. */
#include <inttypes.h>

#include "ir/text/parse_impl.h"

/* ---- symbolic integer expressions ---- */


static const ir_prim *prim_quoted(parser *p) {
    ir_tok t = next(p);
    lexsave sv;
    ps_push_sub(p, &sv, t.s + 1, t.s + t.len - 1, &t);
    const ir_prim *r = ps_prim_expr(p, true);
    if (r && peek(p, 0)->kind != TK_EOF) r = ps_unexpected(p, peek(p, 0), "end of the dimension");
    ps_pop_lex(p, &sv);
    return r;
}

static const ir_prim *prim_atom(parser *p, bool define) {
    ir_tok t = *peek(p, 0);
    if (t.kind == TK_INT) {
        skip(p);
        int64_t v;
        return ps_int_value(p, &t, false, &v) ? ir_prim_int(p->ctx, v) : NULL;
    }
    if (t.kind == TK_STRING) {
        p->sym_lookups++;
        return prim_quoted(p);
    }
    if (is_p(&t, '(')) {
        skip(p);
        const ir_prim *r = ps_prim_expr(p, define);
        if (!r || !ps_expect_p(p, ')', "to close the parenthesis")) return NULL;
        return r;
    }
    if (t.kind == TK_NAME) {
        if (tok_is(&t, "T") && is_p(peek(p, 1), '.')) {
            /* T.int64(expr) */
            skip(p);
            skip(p);
            if (!ps_expect_name(p, "int64") || !ps_expect_p(p, '(', "after T.int64")) return NULL;
            const ir_prim *r = ps_prim_expr(p, define);
            if (!r || !ps_expect_p(p, ')', "after the value")) return NULL;
            return r;
        }
        skip(p);
        p->sym_lookups++;
        const char *name = ps_tok_intern(p, &t);
        const ir_prim *v = ps_sym_get(p, name);
        if (!v) {
            if (!define && !p->sig_mode && !gr_map_get(&p->typevars, GR_MAP_PTR(name), NULL))
                return ps_perr(p, &t, GR_ERR_PARSE,
                            "undefined symbolic variable '%s' (declare it with `%s = T.int64()`)",
                            name, name);
            v = ir_prim_var(p->ctx, name);
            ps_sym_define(p, name, v);
        }
        return v;
    }
    return ps_unexpected(p, &t, "a dimension");
}

static const ir_prim *prim_unary(parser *p, bool define) {
    ir_tok t = *peek(p, 0);
    if (is_p(&t, '-')) {
        skip(p);
        if (peek(p, 0)->kind == TK_INT) { /* -9223372036854775808 */
            ir_tok n = next(p);
            int64_t v;
            return ps_int_value(p, &n, true, &v) ? ir_prim_int(p->ctx, v) : NULL;
        }
        if (!ps_enter(p, &t)) return NULL;
        const ir_prim *a = prim_unary(p, define);
        LEAVE(p);
        return a ? ir_prim_sub(p->ctx, ir_prim_int(p->ctx, 0), a) : NULL;
    }
    if (!ps_enter(p, &t)) return NULL;
    const ir_prim *r = prim_atom(p, define);
    LEAVE(p);
    return r;
}

static const ir_prim *prim_term(parser *p, bool define) {
    const ir_prim *a = prim_unary(p, define);
    while (a) {
        ir_tok t = *peek(p, 0);
        int op = is_p(&t, '*') ? 1 : t.kind == TK_DSLASH ? 2 : is_p(&t, '%') ? 3 : 0;
        if (!op) break;
        skip(p);
        const ir_prim *b = prim_unary(p, define);
        if (!b) return NULL;
        if (op == 1) a = ir_prim_mul(p->ctx, a, b);
        else {
            a = op == 2 ? ir_prim_floordiv(p->ctx, a, b) : ir_prim_floormod(p->ctx, a, b);
            if (!a) return ps_perr(p, &t, GR_ERR_PARSE, "division by zero in a dimension");
        }
    }
    return a;
}

const ir_prim *ps_prim_expr(parser *p, bool define) {
    const ir_prim *a = prim_term(p, define);
    while (a) {
        ir_tok t = *peek(p, 0);
        if (!is_p(&t, '+') && !is_p(&t, '-')) break;
        skip(p);
        const ir_prim *b = prim_term(p, define);
        if (!b) return NULL;
        a = is_p(&t, '+') ? ir_prim_add(p->ctx, a, b) : ir_prim_sub(p->ctx, a, b);
    }
    return a;
}

/* `(d, d, ...)` or `[d, ...]` onto pstack; returns the count or -1. */
int ps_prim_list(parser *p, char open, char close) {
    if (!ps_expect_p(p, open, "to open the dimension list")) return -1;
    int n = 0;
    while (!is_p(peek(p, 0), close)) {
        const ir_prim *d = ps_prim_expr(p, false);
        if (!d) return -1;
        if (n >= MAX_DIMS) return ps_perr(p, peek(p, 0), GR_ERR_PARSE, "too many dimensions (limit %d)", MAX_DIMS), -1;
        gr_vec_push(&p->pstack, d);
        n++;
        if (!accept_p(p, ',')) break;
    }
    if (!ps_expect_p(p, close, "to close the dimension list")) return -1;
    return n;
}

/* ---- struct info ---- */

bool ps_dtype_lit(parser *p, ir_dtype *out) {
    ir_tok t = *peek(p, 0);
    if (!ps_string_lit(p, false)) return false;
    if (!ir_dtype_parse(p->sbuf.data, out))
        return ps_perr(p, &t, GR_ERR_PARSE, "unknown dtype \"%s\"", p->sbuf.data), false;
    return true;
}


bool ps_kw_at(parser *p, const char *name) {
    return tok_is(peek(p, 0), name) && is_p(peek(p, 1), '=');
}

static const ir_sinfo *sinfo_tensor(parser *p, const ir_tok *at) {
    ir_dtype dt = IR_DTYPE_VOID;
    int64_t ndim = -1;
    int ndims = -1;
    uint32_t mark = p->pstack.len;
    if (accept_p(p, '(')) {
        bool pos_done = false;
        while (!is_p(peek(p, 0), ')')) {
            if (ps_kw_at(p, "ndim")) {
                skip(p), skip(p);
                num n;
                if (!ps_number(p, &n)) return NULL;
                if (n.is_float || n.is_bool || n.i < -1 || n.i > MAX_DIMS)
                    return ps_perr(p, at, GR_ERR_PARSE, "bad ndim");
                ndim = n.i;
            } else if (ps_kw_at(p, "dtype")) {
                skip(p), skip(p);
                if (!ps_dtype_lit(p, &dt)) return NULL;
            } else if (peek(p, 0)->kind == TK_STRING && (pos_done || ndims >= 0)) {
                if (!ps_dtype_lit(p, &dt)) return NULL;
            } else if (!pos_done && is_p(peek(p, 0), '(')) {
                ndims = ps_prim_list(p, '(', ')');
                if (ndims < 0) return NULL;
                pos_done = true;
            } else if (!pos_done && tok_is(peek(p, 0), "None")) {
                skip(p);
                pos_done = true;
            } else {
                return ps_unexpected(p, peek(p, 0), "a shape, ndim= or dtype=");
            }
            if (!accept_p(p, ',')) break;
        }
        if (!ps_expect_p(p, ')', "to close R.Tensor(")) return NULL;
    }
    const ir_sinfo *r;
    if (ndims >= 0) {
        if (ndim >= 0 && ndim != ndims)
            return ps_perr(p, at, GR_ERR_PARSE, "ndim=%" PRId64 " does not match a shape of rank %d", ndim, ndims);
        r = ir_sinfo_tensor(p->ctx, dt, ndims, gr_vec_at(p->pstack, mark));
    } else {
        r = ir_sinfo_tensor(p->ctx, dt, (int32_t)ndim, NULL);
    }
    p->pstack.len = mark;
    return r;
}

const ir_sinfo *ps_sinfo_list(parser *p, char close, uint32_t *n) {
    uint32_t mark = p->sstack.len;
    while (!is_p(peek(p, 0), close)) {
        const ir_sinfo *s = ps_parse_sinfo(p);
        if (!s) return NULL;
        gr_vec_push(&p->sstack, s);
        if (!accept_p(p, ',')) break;
    }
    if (!ps_expect_p(p, close, "to close the list")) return NULL;
    *n = p->sstack.len - mark;
    return (const ir_sinfo *)1; /* items on sstack from mark */
}

/* A purity flag after R.Callable's return: `, True` or `, purity=True` (TVM prints it; graft
 * does not model impure function types, so only True is accepted). */
static bool callable_purity(parser *p) {
    if (!accept_p(p, ',')) return true;
    if (is_p(peek(p, 0), ')')) return true;
    if (ps_kw_at(p, "purity")) skip(p), skip(p);
    ir_tok t = *peek(p, 0);
    num n;
    if (!ps_number(p, &n)) return false;
    if (!n.is_bool) return ps_unexpected(p, &t, "True or False (the purity)"), false;
    if (!n.i) return ps_perr(p, &t, GR_ERR_UNSUPPORTED, "impure callables (R.Callable(..., False)) are not supported"), false;
    accept_p(p, ',');
    return true;
}

static const ir_sinfo *parse_sinfo_inner(parser *p) {
    ir_tok at = *peek(p, 0);
    if (tok_is(&at, "T") && is_p(peek(p, 1), '.') && peek(p, 2)->kind == TK_NAME) {
        /* `T.int64` as struct info: R.Prim("int64") */
        ir_tok dt = *peek(p, 2);
        char buf[32];
        ir_dtype d;
        if (dt.len < sizeof buf) {
            memcpy(buf, dt.s, dt.len);
            buf[dt.len] = 0;
            if (ir_dtype_parse(buf, &d) && !ir_dtype_is_void(d) && !is_p(peek(p, 3), '(')) {
                skip(p), skip(p), skip(p);
                return ir_sinfo_prim(p->ctx, d, NULL);
            }
        }
        return ps_perr(p, &dt, GR_ERR_PARSE, "unknown struct info 'T.%.*s'", (int)dt.len, dt.s);
    }
    if (!tok_is(&at, "R") || !is_p(peek(p, 1), '.') || peek(p, 2)->kind != TK_NAME)
        return ps_unexpected(p, &at, "a struct info ps_annotation (R.Tensor, R.Tuple, ...)");
    skip(p);
    skip(p);
    ir_tok k = next(p);
    if (tok_is(&k, "Tensor")) return sinfo_tensor(p, &at);
    if (tok_is(&k, "Object") || tok_is(&k, "Any")) return ir_sinfo_object(p->ctx);
    if (tok_is(&k, "Tuple")) {
        uint32_t mark = p->sstack.len, n = 0;
        if (accept_p(p, '(') && !ps_sinfo_list(p, ')', &n)) return NULL;
        const ir_sinfo *r = ir_sinfo_tuple(p->ctx, n, gr_vec_at(p->sstack, mark));
        p->sstack.len = mark;
        return r;
    }
    if (tok_is(&k, "Shape")) {
        if (!accept_p(p, '(')) return ir_sinfo_shape(p->ctx, -1, NULL);
        const ir_sinfo *r = NULL;
        if (ps_kw_at(p, "ndim")) {
            skip(p), skip(p);
            num n;
            if (!ps_number(p, &n)) return NULL;
            if (n.is_float || n.is_bool || n.i < -1 || n.i > MAX_DIMS) return ps_perr(p, &at, GR_ERR_PARSE, "bad ndim");
            r = ir_sinfo_shape(p->ctx, (int32_t)n.i, NULL);
        } else {
            uint32_t mark = p->pstack.len;
            int nd = ps_prim_list(p, '[', ']');
            if (nd < 0) return NULL;
            r = ir_sinfo_shape(p->ctx, nd, gr_vec_at(p->pstack, mark));
            p->pstack.len = mark;
        }
        accept_p(p, ',');
        return ps_expect_p(p, ')', "to close R.Shape(") ? r : NULL;
    }
    if (tok_is(&k, "Prim")) {
        if (!ps_expect_p(p, '(', "after R.Prim")) return NULL;
        const ir_sinfo *r = NULL;
        ir_dtype dt = IR_DTYPE_I64;
        const ir_prim *v = NULL;
        bool have_dt = false;
        while (!is_p(peek(p, 0), ')')) {
            if (ps_kw_at(p, "value") && !v) {
                skip(p), skip(p);
                v = ps_prim_expr(p, false);
                if (!v) return NULL;
            } else if (!have_dt && !v) {
                if (ps_kw_at(p, "dtype")) skip(p), skip(p);
                if (!ps_dtype_lit(p, &dt)) return NULL;
                have_dt = true;
            } else {
                return ps_unexpected(p, peek(p, 0), "dtype or value= in R.Prim");
            }
            if (!accept_p(p, ',')) break;
        }
        if (!have_dt && !v) return ps_unexpected(p, peek(p, 0), "a dtype or value= in R.Prim");
        r = ir_sinfo_prim(p->ctx, dt, v);
        return ps_expect_p(p, ')', "to close R.Prim(") ? r : NULL;
    }
    if (tok_is(&k, "Callable")) {
        if (!accept_p(p, '(')) return ir_sinfo_func_opaque(p->ctx, NULL);
        if (ps_kw_at(p, "ret")) {
            skip(p), skip(p);
            const ir_sinfo *ret = ps_parse_sinfo(p);
            if (!ret || !callable_purity(p) || !ps_expect_p(p, ')', "to close R.Callable(")) return NULL;
            return ir_sinfo_func_opaque(p->ctx, ret);
        }
        uint32_t mark = p->sstack.len, n = 0;
        if (!ps_expect_p(p, '(', "for the parameter list") || !ps_sinfo_list(p, ')', &n)) return NULL;
        if (!ps_expect_p(p, ',', "before the return struct info")) return NULL;
        const ir_sinfo *ret = ps_parse_sinfo(p);
        if (!ret || !callable_purity(p)) return NULL;
        if (!ps_expect_p(p, ')', "to close R.Callable(")) return NULL;
        const ir_sinfo *r = ir_sinfo_func(p->ctx, n, gr_vec_at(p->sstack, mark), ret);
        p->sstack.len = mark;
        return r;
    }
    return ps_perr(p, &k, GR_ERR_PARSE, "unknown struct info 'R.%.*s'", (int)k.len, k.s);
}

const ir_sinfo *ps_parse_sinfo(parser *p) {
    ir_tok at = *peek(p, 0);
    if (!ps_enter(p, &at)) return NULL;
    const ir_sinfo *r = parse_sinfo_inner(p);
    LEAVE(p);
    return r;
}

/* ---- attribute values ---- */


bool ps_parse_attr(parser *p, ir_attr *out) {
    ir_tok t = *peek(p, 0);
    if (!ps_enter(p, &t)) return false;
    bool ok = false;
    if (t.kind == TK_STRING) {
        const char *s = ps_string_interned(p, true);
        if (s) *out = ir_attr_str(p->ctx, s), ok = true;
    } else if (t.kind == TK_INT || t.kind == TK_FLOAT || is_p(&t, '-') || tok_is(&t, "True") ||
               tok_is(&t, "False") || (tok_is(&t, "float") && is_p(peek(p, 1), '('))) {
        num n;
        if (ps_number(p, &n)) {
            *out = n.is_bool ? ir_attr_bool(n.i != 0) : n.is_float ? ir_attr_float(n.f) : ir_attr_int(n.i);
            ok = true;
        }
    } else if (tok_is(&t, "None")) {
        skip(p);
        *out = ir_attr_none();
        ok = true;
    } else if (is_p(&t, '[') || is_p(&t, '(')) {
        char close = is_p(&t, '[') ? ']' : ')';
        skip(p);
        uint32_t mark = p->vstack.len;
        ok = true;
        while (!is_p(peek(p, 0), close)) {
            ir_attr a;
            if (!ps_parse_attr(p, &a)) {
                ok = false;
                break;
            }
            gr_vec_push(&p->vstack, a);
            if (!accept_p(p, ',')) break;
        }
        if (ok) ok = ps_expect_p(p, close, "to close the list");
        if (ok) *out = ir_attr_array(p->ctx, p->vstack.len - mark, gr_vec_at(p->vstack, mark));
        p->vstack.len = mark;
    } else if (is_p(&t, '{')) {
        skip(p);
        uint32_t mark = p->vstack.len;
        ok = true;
        while (!is_p(peek(p, 0), '}')) {
            ir_attr k, v;
            if (!ps_parse_attr(p, &k) || !ps_expect_p(p, ':', "after a dict key") || !ps_parse_attr(p, &v)) {
                ok = false;
                break;
            }
            gr_vec_push(&p->vstack, k);
            gr_vec_push(&p->vstack, v);
            if (!accept_p(p, ',')) break;
        }
        if (ok) ok = ps_expect_p(p, '}', "to close the dict");
        if (ok) {
            uint32_t n = p->vstack.len - mark;
            *out = ir_attr_array(p->ctx, n, gr_vec_at(p->vstack, mark));
            out->kind = IR_ATTR_MAP;
            out->u.arr.n = n / 2;
        }
        p->vstack.len = mark;
    } else if (t.kind == TK_NAME) {
        ir_expr *e = ps_parse_expr(p);
        if (e) {
            if (!ir_normalize_in(p->ctx, p->mod, e, &p->tmp))
                ps_perr(p, &t, GR_ERR_TYPE, "%s", p->tmp.msg);
            else
                *out = ir_attr_expr(e), ok = true;
        }
    } else {
        ps_unexpected(p, &t, "an attribute value");
    }
    LEAVE(p);
    return ok && !p->failed;
}
