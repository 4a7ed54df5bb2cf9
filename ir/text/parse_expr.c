/* The parser's expressions: constants, prim values, op calls, dotted names, calls. */
#include <inttypes.h>

#include "ir/text/parse_impl.h"

/* ---- expressions ---- */

static ir_expr *metadata_ref(parser *p) {
    ir_tok at = next(p); /* metadata */
    if (!ps_expect_p(p, '[', "after metadata")) return NULL;
    ir_tok kt = *peek(p, 0);
    if (!ps_string_lit(p, false)) return NULL;
    /* "ir.GenericConst" is TVM 0.27's name for the same table */
    if (strcmp(p->sbuf.data, "relax.expr.Constant") != 0 && strcmp(p->sbuf.data, "ir.GenericConst") != 0)
        return ps_perr(p, &kt, GR_ERR_PARSE, "unsupported metadata kind \"%s\"", p->sbuf.data);
    if (!ps_expect_p(p, ']', "after the metadata kind") || !ps_expect_p(p, '[', "for the constant index"))
        return NULL;
    ir_tok it = *peek(p, 0);
    if (!ps_expect_kind(p, TK_INT, "a constant index")) return NULL;
    int64_t idx;
    if (!ps_int_value(p, &it, false, &idx) || !ps_expect_p(p, ']', "after the constant index")) return NULL;
    if (!p->have_meta && memmem(p->src, p->len, "# Metadata omitted", 18))
        return ps_perr(p, &at, GR_ERR_PARSE,
                    "constant data omitted: TVM printed this module without its metadata (\"# Metadata "
                    "omitted\"), so the value of metadata[...][%" PRId64 "] is unknown; add graft's "
                    "`metadata = {...}` section (docs/text-format.md)", idx);
    if (!p->have_meta)
        return ps_perr(p, &at, GR_ERR_PARSE,
                    "metadata section missing: the module refers to metadata[\"relax.expr.Constant\"] "
                    "but has no `metadata = {...}` section");
    if (idx >= (int64_t)p->nconsts)
        return ps_perr(p, &it, GR_ERR_PARSE, "metadata index %" PRId64 " out of range (%u constants)",
                    idx, p->nconsts);
    return &p->consts[idx]->base;
}

static ir_expr *r_const(parser *p, const ir_tok *at) {
    if (!ps_expect_p(p, '(', "after R.const")) return NULL;
    num n;
    if (!ps_number(p, &n)) return NULL;
    ir_dtype dt = n.is_float ? IR_DTYPE_F32 : n.is_bool ? IR_DTYPE_BOOL : IR_DTYPE_I64;
    if (accept_p(p, ',')) {
        if (ps_kw_at(p, "dtype")) skip(p), skip(p);
        if (!is_p(peek(p, 0), ')') && !ps_dtype_lit(p, &dt)) return NULL;
    }
    if (!ps_expect_p(p, ')', "to close R.const(")) return NULL;
    if (ir_dtype_is_void(dt) || dt.lanes != 1 || !ir_dtype_bytes(dt))
        return ps_perr(p, at, GR_ERR_PARSE, "R.const needs a scalar dtype");
    rt_tensor *t = rt_tensor_new(dt, 0, NULL);
    if (!t) return ps_perr(p, at, GR_ERR_NOMEM, "out of memory");
    if (dt.code == kDLInt && dt.bits == 64 && !n.is_float) *(int64_t *)rt_tensor_data(t) = n.i;
    else rt_tensor_set_f64(t, 0, n.is_float ? n.f : (double)n.i);
    ir_const *c = ir_const_new(p->ctx, t, NULL);
    rt_tensor_release(t);
    return &c->base;
}

static ir_expr *r_prim_value(parser *p) {
    if (!ps_expect_p(p, '(', "after R.prim_value")) return NULL;
    ir_expr *r = NULL;
    if (tok_is(peek(p, 0), "T") && is_p(peek(p, 1), '.') && peek(p, 2)->kind == TK_NAME) {
        skip(p), skip(p);
        ir_tok dtok = next(p);
        char dn[32];
        snprintf(dn, sizeof(dn), "%.*s", (int)(dtok.len > 31 ? 31 : dtok.len), dtok.s);
        ir_dtype dt;
        if (!ir_dtype_parse(dn, &dt) || ir_dtype_is_void(dt))
            return ps_perr(p, &dtok, GR_ERR_PARSE, "unknown dtype T.%s", dn);
        if (!ps_expect_p(p, '(', "after the dtype")) return NULL;
        if (ir_dtype_is_float(dt)) {
            num n;
            if (!ps_number(p, &n)) return NULL;
            r = &ir_primval_float(p->ctx, dt, n.is_float ? n.f : (double)n.i, NULL)->base;
        } else {
            const ir_prim *v = ps_prim_expr(p, false);
            if (!v) return NULL;
            ir_primval *pv = ir_primval_int(p->ctx, v, NULL);
            pv->dtype = dt; /* fresh node, not yet published */
            if (pv->base.sinfo) pv->base.sinfo = ir_sinfo_prim(p->ctx, dt, v);
            r = &pv->base;
        }
        if (!ps_expect_p(p, ')', "to close the typed value")) return NULL;
    } else if (peek(p, 0)->kind == TK_FLOAT ||
               (is_p(peek(p, 0), '-') && peek(p, 1)->kind == TK_FLOAT)) {
        num n;
        if (!ps_number(p, &n)) return NULL;
        r = &ir_primval_float(p->ctx, IR_DTYPE_F64, n.f, NULL)->base;
    } else {
        const ir_prim *v = ps_prim_expr(p, false);
        if (!v) return NULL;
        r = &ir_primval_int(p->ctx, v, NULL)->base;
    }
    return ps_expect_p(p, ')', "to close R.prim_value(") ? r : NULL;
}

static ir_expr *call_args_generic(parser *p, ir_expr *callee) {
    /* `(` already consumed */
    uint32_t mark = p->estack.len;
    while (!is_p(peek(p, 0), ')')) {
        ir_expr *a = ps_parse_expr(p);
        if (!a) return NULL;
        gr_vec_push(&p->estack, a);
        if (!accept_p(p, ',')) break;
    }
    if (!ps_expect_p(p, ')', "to close the call")) return NULL;
    ir_call *c = ir_call_new(p->ctx, callee, p->estack.len - mark, gr_vec_at(p->estack, mark), NULL, 0,
                             NULL, NULL);
    p->estack.len = mark;
    return &c->base;
}

static const ir_op_def *find_op(parser *p, const char *name, size_t n) {
    uint64_t h = gr_hash_bytes(name, n, 77) | 1;
    uint64_t v;
    if (gr_map_get(&p->opcache, h, &v)) {
        const ir_op_def *d = (const ir_op_def *)(uintptr_t)v;
        if (strcmp(d->text_name, name) == 0) return d;
    }
    const ir_op_def *d = ir_op_def_find(name);
    if (d) gr_map_put(&p->opcache, h, GR_MAP_PTR(d));
    return d;
}

static ir_expr *op_call(parser *p, const ir_op_def *def, const ir_tok *at) {
    skip(p); /* ( */
    uint32_t emark = p->estack.len, kmark = p->kstack.len, vmark = p->vstack.len,
             smark = p->sstack.len;
    bool call_like = (def->flags & IR_OPF_CALL_LIKE) != 0;
    bool kw_seen = false;
    ir_expr *result = NULL;
    while (!is_p(peek(p, 0), ')')) {
        if (peek(p, 0)->kind == TK_NAME && is_p(peek(p, 1), '=')) {
            ir_tok k = next(p);
            skip(p);
            kw_seen = true;
            if (tok_is(&k, "out_sinfo") || tok_is(&k, "sinfo_args") || tok_is(&k, "out_ty") ||
                tok_is(&k, "ty_args")) {
                if (p->sstack.len != smark) {
                    ps_perr(p, &k, GR_ERR_PARSE, "struct info arguments given twice");
                    goto out;
                }
                char close = accept_p(p, '[') ? ']' : accept_p(p, '(') ? ')' : 0;
                if (close) {
                    uint32_t n;
                    if (!ps_sinfo_list(p, close, &n)) goto out;
                    if (call_like && close == ']') {
                        /* out_ty=[A, B]: one tuple struct info, as TVM holds it */
                        const ir_sinfo *t = ir_sinfo_tuple(p->ctx, n, p->sstack.data + smark);
                        p->sstack.len = smark;
                        gr_vec_push(&p->sstack, t);
                    }
                } else {
                    const ir_sinfo *s = ps_parse_sinfo(p);
                    if (!s) goto out;
                    gr_vec_push(&p->sstack, s);
                }
            } else {
                ir_attr a;
                if (!ps_parse_attr(p, &a)) goto out;
                gr_vec_push(&p->kstack, ps_tok_intern(p, &k));
                gr_vec_push(&p->vstack, a);
            }
        } else {
            if (kw_seen) {
                ps_perr(p, peek(p, 0), GR_ERR_PARSE, "positional argument after a keyword argument");
                goto out;
            }
            ir_expr *a;
            const ir_tok *n0 = peek(p, is_p(peek(p, 0), '-') ? 1 : 0);
            if (n0->kind == TK_INT || n0->kind == TK_FLOAT) {
                /* a bare number, `R.clip(x, 0, 4)`: a PrimValue as TVM's parser makes it */
                num n;
                if (!ps_number(p, &n)) goto out;
                a = n.is_float ? &ir_primval_float(p->ctx, IR_DTYPE_F64, n.f, NULL)->base
                               : &ir_primval_int(p->ctx, ir_prim_int(p->ctx, n.i), NULL)->base;
            } else if (call_like && p->estack.len == emark && peek(p, 0)->kind == TK_STRING) {
                const char *sym = ps_string_interned(p, false);
                if (!sym) goto out;
                a = &ir_extern_new(p->ctx, sym, NULL)->base;
            } else {
                a = ps_parse_expr(p);
                if (!a) goto out;
            }
            gr_vec_push(&p->estack, a);
        }
        if (!accept_p(p, ',')) break;
    }
    if (!ps_expect_p(p, ')', "to close the op call")) goto out;
    uint32_t nargs = p->estack.len - emark;
    if ((int)nargs < def->min_args || (def->max_args >= 0 && (int)nargs > def->max_args)) {
        if (def->min_args == def->max_args)
            ps_perr(p, at, GR_ERR_PARSE, "%s takes %d argument%s, got %u", def->text_name,
                 def->min_args, def->min_args == 1 ? "" : "s", nargs);
        else
            ps_perr(p, at, GR_ERR_PARSE, "%s takes %d to %d arguments, got %u", def->text_name,
                 def->min_args, def->max_args, nargs);
        goto out;
    }
    const ir_attrs *attrs = NULL;
    uint32_t nk = p->kstack.len - kmark;
    if (nk || def->nattrs) {
        const ir_attrs *given = nk ? ir_attrs_new(p->ctx, nk, gr_vec_at(p->kstack, kmark),
                                                  gr_vec_at(p->vstack, vmark)) : NULL;
        CLEAR_TMP(p);
        if (ir_op_attrs_normalize_ex(p->ctx, def, given, p->lenient, &attrs, &p->tmp) != GR_OK) {
            ps_perr(p, at, GR_ERR_PARSE, "%s", p->tmp.msg);
            goto out;
        }
    }
    ir_call *c = ir_call_new(p->ctx, &ir_op_get_def(p->ctx, def)->base, nargs,
                             gr_vec_at(p->estack, emark), attrs, p->sstack.len - smark,
                             gr_vec_at(p->sstack, smark), NULL);
    if (p->lenient && !(def->flags & IR_OPF_CALL_LIKE)) {
        /* a pattern: where the wildcards leave the result unknown, it is R.Object */
        bool ready = true;
        for (uint32_t i = 0; i < nargs; i++) ready &= c->args[i]->sinfo != NULL;
        if (ready) {
            gr_diag scratch;
            gr_diag_clear(&scratch);
            const ir_sinfo *s = ir_op_infer(p->ctx, c, &scratch);
            ir_expr_set_sinfo(&c->base, s ? s : ir_sinfo_object(p->ctx));
        }
    }
    if (p->written_attrs && nk)
        gr_map_put(p->written_attrs, GR_MAP_PTR(c),
                   GR_MAP_PTR(ir_attrs_new(p->ctx, nk, gr_vec_at(p->kstack, kmark), gr_vec_at(p->vstack, vmark))));
    result = &c->base;
out:
    p->estack.len = emark;
    p->kstack.len = kmark;
    p->vstack.len = vmark;
    p->sstack.len = smark;
    return result;
}

/* The R.* names dotted() handles itself; any other dotted name is an op. Compared by length
 * first so an op call costs no strcmp chain. */
static bool special_r_name(const char *nm, size_t n) {
    static const char *const names[] = {"R.const", "R.prim_value", "R.shape",     "R.str",
                                        "R.ExternFunc", "R.with_span", "R.tuple", "R.match_cast"};
    static const uint8_t lens[] = {7, 12, 7, 5, 12, 11, 7, 12};
    for (size_t i = 0; i < sizeof(lens); i++)
        if (lens[i] == n && memcmp(nm, names[i], n) == 0) return true;
    return false;
}

/* Length of "cls." (or of another name bound to the class, or of the class name itself and
 * its dot) at the start of nm; 0 when nm does not name a global function. */
static size_t cls_prefix(const parser *p, const char *nm) {
    if (strncmp(nm, "cls.", 4) == 0) return 4;
    const char *dot = strchr(nm, '.');
    if (!dot || strchr(dot + 1, '.')) return 0;
    size_t n = (size_t)(dot - nm);
    for (uint32_t i = 0; i <= p->ncls_alias; i++) {
        const char *a = i < p->ncls_alias ? p->cls_alias[i] : p->cls_name;
        if (a && strlen(a) == n && memcmp(a, nm, n) == 0) return n + 1;
    }
    return 0;
}

/* Dotted names: R.*, cls.*, and op names. */
static ir_expr *dotted(parser *p) {
    ir_tok at = *peek(p, 0);
    size_t n = 0;
    for (;;) {
        ir_tok t = next(p);
        if (n + t.len + 2 >= sizeof(p->name))
            return ps_perr(p, &t, GR_ERR_PARSE, "name too long");
        memcpy(p->name + n, t.s, t.len);
        n += t.len;
        p->name[n] = 0;
        if (!(is_p(peek(p, 0), '.') && peek(p, 1)->kind == TK_NAME)) break;
        skip(p);
        p->name[n++] = '.';
    }
    const char *nm = p->name;
    size_t pre = cls_prefix(p, nm);
    if (pre) {
        const char *g = ir_intern(p->ctx, nm + pre);
        uint64_t idx;
        if (!gr_map_get(&p->sigmap, GR_MAP_PTR(g), &idx))
            return ps_perr(p, &at, GR_ERR_PARSE, "unknown global function '%s'", nm);
        return &p->sigs.data[idx - 1].gvar->base;
    }
    if (!special_r_name(nm, n)) goto op;
    if (strcmp(nm, "R.const") == 0) return r_const(p, &at);
    if (strcmp(nm, "R.prim_value") == 0) return r_prim_value(p);
    if (strcmp(nm, "R.shape") == 0) {
        if (!ps_expect_p(p, '(', "after R.shape")) return NULL;
        uint32_t mark = p->pstack.len;
        int nd = ps_prim_list(p, '[', ']');
        if (nd < 0 || !ps_expect_p(p, ')', "to close R.shape(")) return NULL;
        ir_shape_expr *s = ir_shape_expr_new(p->ctx, (uint32_t)nd, gr_vec_at(p->pstack, mark), NULL);
        p->pstack.len = mark;
        return &s->base;
    }
    if (strcmp(nm, "R.str") == 0 || strcmp(nm, "R.ExternFunc") == 0) {
        bool ext = nm[2] == 'E';
        if (!ps_expect_p(p, '(', "after the name")) return NULL;
        const char *s = ps_string_interned(p, true);
        if (!s || !ps_expect_p(p, ')', "to close the call")) return NULL;
        return ext ? &ir_extern_new(p->ctx, s, NULL)->base : &ir_str_new(p->ctx, s, NULL)->base;
    }
    if (strcmp(nm, "R.with_span") == 0) {
        if (!ps_expect_p(p, '(', "after R.with_span")) return NULL;
        ir_tok et = *peek(p, 0);
        ir_expr *e = ps_parse_expr(p);
        if (!e || !ps_expect_p(p, ',', "before the span")) return NULL;
        bool ok;
        const ir_span *s = ps_parse_span(p, &ok);
        if (!ok || !ps_expect_p(p, ')', "to close R.with_span(")) return NULL;
        return ps_set_span(p, &et, e, s) ? e : NULL;
    }
    if (strcmp(nm, "R.tuple") == 0) {
        if (!ps_expect_p(p, '(', "after R.tuple")) return NULL;
        uint32_t mark = p->estack.len;
        while (!is_p(peek(p, 0), ')')) {
            ir_expr *a = ps_parse_expr(p);
            if (!a) return NULL;
            gr_vec_push(&p->estack, a);
            if (!accept_p(p, ',')) break;
        }
        if (!ps_expect_p(p, ')', "to close R.tuple(")) return NULL;
        ir_tuple *t = ir_tuple_new(p->ctx, p->estack.len - mark, gr_vec_at(p->estack, mark), NULL);
        p->estack.len = mark;
        return &t->base;
    }
    if (strcmp(nm, "R.match_cast") == 0)
        return ps_perr(p, &at, GR_ERR_PARSE, "R.match_cast is only allowed as the value of a binding");
op:;
    const ir_op_def *def = find_op(p, nm, n);
    if (!def) return ps_perr(p, &at, GR_ERR_PARSE, "unknown op '%s'", nm);
    if (is_p(peek(p, 0), '(')) return op_call(p, def, &at);
    return &ir_op_get_def(p->ctx, def)->base;
}

static ir_expr *primary(parser *p) {
    ir_tok t = *peek(p, 0);
    if (t.kind == TK_NAME) {
        if (is_p(peek(p, 1), '.')) return dotted(p);
        if (tok_is(&t, "metadata") && is_p(peek(p, 1), '[')) return metadata_ref(p);
        skip(p);
        const char *name = ps_tok_intern(p, &t);
        ir_var *v = ps_scope_get(p, name);
        if (!v) return ps_perr(p, &t, GR_ERR_PARSE, "undefined variable '%s'", name);
        return &v->base;
    }
    if (is_p(&t, '(')) {
        skip(p);
        uint32_t mark = p->estack.len;
        bool tuple = false;
        while (!is_p(peek(p, 0), ')')) {
            ir_expr *a = ps_parse_expr(p);
            if (!a) return NULL;
            gr_vec_push(&p->estack, a);
            if (!accept_p(p, ',')) break;
            tuple = true;
        }
        if (!ps_expect_p(p, ')', "to close the parenthesis")) return NULL;
        uint32_t n = p->estack.len - mark;
        if (n == 1 && !tuple) {
            ir_expr *e = p->estack.data[mark];
            p->estack.len = mark;
            return e;
        }
        ir_tuple *tp = ir_tuple_new(p->ctx, n, gr_vec_at(p->estack, mark), NULL);
        p->estack.len = mark;
        return &tp->base;
    }
    return ps_unexpected(p, &t, "an expression");
}

ir_expr *ps_parse_expr(parser *p) {
    ir_tok at = *peek(p, 0);
    if (!ps_enter(p, &at)) return NULL;
    ir_expr *e = primary(p);
    while (e) {
        ir_tok t = *peek(p, 0);
        if (is_p(&t, '[')) {
            skip(p);
            ir_tok it = *peek(p, 0);
            int64_t idx;
            if (!ps_expect_kind(p, TK_INT, "a tuple index") || !ps_int_value(p, &it, false, &idx)) e = NULL;
            else if (idx > INT32_MAX) e = ps_perr(p, &it, GR_ERR_PARSE, "tuple index out of range");
            else if (!ps_expect_p(p, ']', "after the tuple index")) e = NULL;
            else e = &ir_tgi_new(p->ctx, e, (int32_t)idx, NULL)->base;
        } else if (is_p(&t, '(')) {
            skip(p);
            e = call_args_generic(p, e);
        } else {
            break;
        }
    }
    LEAVE(p);
    return e;
}
