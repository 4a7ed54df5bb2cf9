/* The parser's statements and functions: bindings, if/else, dataflow blocks, function headers
 * and bodies. */
#include <inttypes.h>

#include "ir/text/parse_impl.h"

/* ---- statements ---- */



static void *type_err(parser *p, const ir_tok *at) {
    const char *m = p->tmp.msg[0] ? p->tmp.msg : "struct info inference failed";
    return ps_perr(p, at, GR_ERR_TYPE, "%s", m);
}

static bool check_annot(parser *p, const ir_tok *at, const ir_sinfo *annot, const ir_sinfo *got) {
    if (ir_sinfo_is_base_of(annot, got)) return true;
    char a[512], g[512];
    ir_sinfo_snprint(annot, a, sizeof(a));
    ir_sinfo_snprint(got, g, sizeof(g));
    ps_perr(p, at, GR_ERR_TYPE, "annotation %s does not match the value's struct info %s", a, g);
    return false;
}

static bool emit(parser *p, body_ctx *bc, const ir_tok *ntok, const char *name,
                 const ir_sinfo *annot, ir_expr *value, const ir_sinfo *match,
                 const span_fields *sf, const ir_tok *vtok) {
    if (sf->has_seq)
        return ps_perr(p, &sf->tok, GR_ERR_PARSE, "seq_span belongs on a return line"), false;
    if (sf->has_span && !ps_set_span(p, &sf->tok, value, sf->span)) return false;
    const ir_sinfo *vs = NULL;
    CLEAR_TMP(p);
    if (match) {
        if (annot && !check_annot(p, ntok, annot, match)) return false;
        vs = match;
    } else if (annot) {
        vs = annot;
    }
    const ir_span *vspan = sf->has_var ? sf->var : value->span;
    ir_var *v = bc->in_df ? ir_dfvar_new(p->ctx, name, vs, vspan) : ir_var_new(p->ctx, name, vs, vspan);
    if (!bc->in_df && !bc->plain_open) {
        ir_bb_begin_block(bc->bb);
        bc->plain_open = true;
    }
    /* normalized once, in the builder; the annotation is checked before the binding is made */
    ir_expr *nv = ir_bb_normalize(bc->bb, value);
    if (!nv) return type_err(p, vtok), false;
    if (annot && !match && !check_annot(p, ntok, annot, nv->sinfo)) return false;
    ir_bb_emit_normalized(bc->bb, v, nv, match);
    ps_scope_bind(p, name, v);
    return true;
}



static bool parse_func_attr(parser *p, fattrs *fa) {
    ir_tok at = *peek(p, 0);
    skip(p), skip(p), skip(p);
    if (!ps_expect_p(p, '(', "after R.func_attr")) return false;
    ir_attr a;
    ir_tok dt = *peek(p, 0);
    if (!is_p(&dt, '{')) return ps_unexpected(p, &dt, "a dict"), false;
    if (!ps_parse_attr(p, &a) || !ps_expect_p(p, ')', "to close R.func_attr(")) return false;
    for (uint32_t i = 0; i < a.u.arr.n; i++) {
        const ir_attr *k = &a.u.arr.items[2 * i];
        if (k->kind != IR_ATTR_STR) return ps_perr(p, &at, GR_ERR_PARSE, "function attribute keys must be strings"), false;
        for (uint32_t j = 0; j < fa->keys.len; j++)
            if (fa->keys.data[j] == k->u.s)
                return ps_perr(p, &at, GR_ERR_PARSE, "function attribute \"%s\" given twice", k->u.s), false;
        gr_vec_push(&fa->keys, k->u.s);
        gr_vec_push(&fa->vals, a.u.arr.items[2 * i + 1]);
    }
    span_fields sf;
    return ps_end_line(p, &sf);
}

static bool parse_stmt_list(parser *p, body_ctx *bc, bool branch, result_stmt *res,
                            fattrs *fa, ir_expr **ret, span_fields *ret_sf, ir_tok *ret_tok);

static bool parse_if(parser *p, body_ctx *bc) {
    ir_tok at = next(p); /* if */
    ir_expr *cond = ps_parse_expr(p);
    if (!cond || !ps_expect_p(p, ':', "after the if condition")) return false;
    span_fields isf;
    if (!ps_end_line(p, &isf) || !ps_expect_kind(p, TK_INDENT, "an indented block")) return false;
    if (isf.has_seq) return ps_perr(p, &isf.tok, GR_ERR_PARSE, "seq_span belongs on the branch result line"), false;
    ir_seq *br[2] = {NULL, NULL};
    result_stmt rs[2];
    memset(rs, 0, sizeof(rs));
    for (int k = 0; k < 2; k++) {
        if (k == 1) {
            if (!ps_expect_name(p, "else") || !ps_expect_p(p, ':', "after else")) return false;
            span_fields esf;
            if (!ps_end_line(p, &esf) || !ps_expect_kind(p, TK_INDENT, "an indented block")) return false;
            if (esf.has_span || esf.has_var || esf.has_seq)
                return ps_perr(p, &esf.tok, GR_ERR_PARSE, "spans of an if go on the `if` line"), false;
        }
        body_ctx inner = {ir_bb_new(p->ctx, &p->tmp), false, false, 0};
        ir_bb_set_module(inner.bb, p->mod);
        uint32_t umark = p->undo.len;
        p->log_scope++;
        bool ok = parse_stmt_list(p, &inner, true, &rs[k], NULL, NULL, NULL, NULL);
        if (ok && !rs[k].have) {
            ps_perr(p, peek(p, 0), GR_ERR_PARSE, "an if branch must end with a binding of the result variable");
            ok = false;
        }
        if (ok && rs[k].sf.has_var) {
            ps_perr(p, &rs[k].sf.tok, GR_ERR_PARSE, "var_span of an if result goes on the `if` line");
            ok = false;
        }
        if (ok && rs[k].sf.has_span) ok = ps_set_span(p, &rs[k].sf.tok, rs[k].value, rs[k].sf.span);
        if (ok) {
            CLEAR_TMP(p);
            br[k] = ir_bb_finish(inner.bb, rs[k].value, rs[k].sf.seq);
            if (!br[k]) {
                type_err(p, &rs[k].vtok);
                ok = false;
            }
        }
        ir_bb_free(inner.bb);
        ps_scope_restore(p, umark);
        p->log_scope--;
        if (!ok || !ps_expect_kind(p, TK_DEDENT, "the end of the branch")) return false;
    }
    if (rs[0].name != rs[1].name)
        return ps_perr(p, &rs[1].tok, GR_ERR_PARSE, "both if branches must bind the same variable ('%s' vs '%s')",
                    rs[0].name, rs[1].name), false;
    ir_if *x = ir_if_new(p->ctx, cond, &br[0]->base, &br[1]->base, isf.has_span ? isf.span : NULL);
    span_fields sf = {0};
    sf.has_var = isf.has_var;
    sf.var = isf.var;
    sf.tok = isf.tok;
    const ir_sinfo *annot = rs[0].annot ? rs[0].annot : rs[1].annot;
    return emit(p, bc, &rs[0].tok, rs[0].name, annot, &x->base, NULL, &sf, &at);
}

static bool parse_dataflow(parser *p, body_ctx *bc) {
    skip(p); /* with */
    if (!ps_expect_dotted(p, "R", "dataflow") || !ps_expect_p(p, '(', "after R.dataflow") ||
        !ps_expect_p(p, ')', "after R.dataflow(") || !ps_expect_p(p, ':', "after R.dataflow()"))
        return false;
    span_fields sf;
    if (!ps_end_line(p, &sf) || !ps_expect_kind(p, TK_INDENT, "an indented block")) return false;
    if (sf.has_span || sf.has_var || sf.has_seq)
        return ps_perr(p, &sf.tok, GR_ERR_PARSE, "a dataflow block has no span"), false;
    if (bc->plain_open) {
        ir_bb_end_block(bc->bb);
        bc->plain_open = false;
    }
    ir_bb_begin_dataflow(bc->bb);
    bc->in_df = true;
    bc->df_first_id = ir_ctx_id_bound(p->ctx);
    bool ok = true;
    for (;;) {
        ps_drop_behind(p);
        ir_tok t = *peek(p, 0);
        if (t.kind == TK_DEDENT) break;
        if (ps_at_dotted(p, "R", "output")) {
            skip(p), skip(p), skip(p);
            if (!ps_expect_p(p, '(', "after R.output")) return false;
            while (!is_p(peek(p, 0), ')')) {
                ir_tok nt = *peek(p, 0);
                if (!ps_expect_kind(p, TK_NAME, "a variable name")) return false;
                const char *name = ps_tok_intern(p, &nt);
                ir_var *v = ps_scope_get(p, name);
                if (!v) return ps_perr(p, &nt, GR_ERR_PARSE, "R.output of undefined variable '%s'", name), false;
                if (v->base.id < bc->df_first_id)
                    return ps_perr(p, &nt, GR_ERR_PARSE, "R.output of '%s', which is not bound in this dataflow block", name), false;
                /* The var was made as a DataflowVar before its R.output was seen; it is ours and
                 * its block is still open, so turning it into a Var here is its final kind. */
                v->base.kind = IR_VAR;
                if (!accept_p(p, ',')) break;
            }
            if (!ps_expect_p(p, ')', "to close R.output(")) return false;
            if (!ps_end_line(p, &sf)) return false;
            if (peek(p, 0)->kind != TK_DEDENT)
                return ps_unexpected(p, peek(p, 0), "the end of the dataflow block after R.output"), false;
            break;
        }
        if (t.kind != TK_NAME || !(is_p(peek(p, 1), ':') || is_p(peek(p, 1), '=')))
            return ps_unexpected(p, &t, "a binding or R.output(...) in a dataflow block"), false;
        ok = parse_stmt_list(p, bc, false, NULL, NULL, NULL, NULL, NULL);
        if (!ok) return false;
    }
    skip(p); /* DEDENT */
    ir_bb_end_block(bc->bb);
    bc->in_df = false;
    return !p->failed;
}

/* A binding's annotation. Files repeat the same annotation text on many lines, so texts that
 * name no symbolic var (whose meaning depends on the scope) are remembered and skipped. */
const ir_sinfo *ps_annotation(parser *p) {
    const char *s = NULL;
    if (p->nla == 0 && !p->lx.sub && p->lx.paren == 0) {
        s = p->lx.p;
        while (s < p->lx.end && *s == ' ') s++;
        for (int i = 0; i < 4; i++) {
            const struct annot_cache *c = &p->acache[i];
            if (c->text && (size_t)(p->lx.end - s) > c->len && memcmp(s, c->text, c->len) == 0 &&
                (s[c->len] == ' ' || s[c->len] == '=')) {
                p->lx.p = s + c->len;
                return c->sinfo;
            }
        }
    }
    uint64_t before = p->sym_lookups;
    const ir_sinfo *r = ps_parse_sinfo(p);
    if (r && s && p->sym_lookups == before && p->last_end > s && p->last_end - s < 4096 &&
        !memchr(s, '\n', (size_t)(p->last_end - s))) {
        struct annot_cache *c = &p->acache[p->acache_next++ % 4];
        c->text = s;
        c->len = (uint32_t)(p->last_end - s);
        c->sinfo = r;
    }
    return r;
}

/* One binding statement (or a `n = T.int64()` declaration). With `res`, a binding followed by
 * the end of the block is returned there instead of being emitted. */
static bool parse_binding(parser *p, body_ctx *bc, result_stmt *res) {
    ir_tok nt = next(p);
    const char *name = ps_tok_intern(p, &nt);
    const ir_sinfo *annot = NULL;
    if (accept_p(p, ':')) {
        annot = ps_annotation(p);
        if (!annot) return false;
    }
    if (!ps_expect_p(p, '=', "in a binding")) return false;
    if (!annot && p->cls_name && tok_is(peek(p, 0), p->cls_name) && peek(p, 1)->kind != TK_PUNCT) {
        /* `cls = Module`: TVM's printer names the module this way before `cls.f(...)` */
        skip(p);
        span_fields sf;
        if (!ps_end_line(p, &sf)) return false;
        bool known = false;
        for (uint32_t i = 0; i < p->ncls_alias; i++) known |= p->cls_alias[i] == name;
        if (!known && p->ncls_alias < 4) p->cls_alias[p->ncls_alias++] = name;
        return true;
    }
    if (!annot && ps_at_dotted(p, "T", "int64") && is_p(peek(p, 3), '(') && is_p(peek(p, 4), ')')) {
        for (int i = 0; i < 5; i++) next(p);
        span_fields sf;
        if (!ps_end_line(p, &sf)) return false;
        if (!ps_sym_get(p, name)) ps_sym_define(p, name, ir_prim_var(p->ctx, name));
        return true;
    }
    ir_tok vt = *peek(p, 0);
    ir_expr *value;
    const ir_sinfo *match = NULL;
    if (ps_at_dotted(p, "R", "match_cast")) {
        skip(p), skip(p), skip(p);
        if (!ps_expect_p(p, '(', "after R.match_cast")) return false;
        value = ps_parse_expr(p);
        if (!value || !ps_expect_p(p, ',', "before the struct info")) return false;
        match = ps_parse_sinfo(p);
        if (!match || !ps_expect_p(p, ')', "to close R.match_cast(")) return false;
    } else {
        value = ps_parse_expr(p);
        if (!value) return false;
        if (is_p(peek(p, 0), ',')) {
            /* `t = a, b`: TVM 0.27 prints a tuple value without parentheses */
            uint32_t mark = p->estack.len;
            gr_vec_push(&p->estack, value);
            while (accept_p(p, ',')) {
                if (peek(p, 0)->kind == TK_NEWLINE || peek(p, 0)->kind == TK_SPANC) break;
                ir_expr *a = ps_parse_expr(p);
                if (!a) return false;
                gr_vec_push(&p->estack, a);
            }
            value = &ir_tuple_new(p->ctx, p->estack.len - mark, gr_vec_at(p->estack, mark), NULL)->base;
            p->estack.len = mark;
        }
    }
    span_fields sf;
    if (!ps_end_line(p, &sf)) return false;
    if (res && !match && peek(p, 0)->kind == TK_DEDENT) {
        res->have = true;
        res->tok = nt;
        res->name = name;
        res->annot = annot;
        res->value = value;
        res->vtok = vt;
        res->sf = sf;
        return true;
    }
    return emit(p, bc, &nt, name, annot, value, match, &sf, &vt);
}

/* Statements up to the end of the block. Function bodies end with `return` (ret != NULL);
 * if branches with a result binding (branch). */
static bool parse_stmt_list(parser *p, body_ctx *bc, bool branch, result_stmt *res,
                            fattrs *fa, ir_expr **ret, span_fields *ret_sf, ir_tok *ret_tok) {
    bool single = !branch && !ret; /* one binding (dataflow blocks call this per binding) */
    for (;;) {
        if (p->failed) return false;
        ps_drop_behind(p);
        ir_tok t = *peek(p, 0);
        if (t.kind == TK_DEDENT || t.kind == TK_EOF) {
            if (branch) return true;
            return ps_unexpected(p, &t, "a return statement"), false;
        }
        if (t.kind == TK_NAME && (is_p(peek(p, 1), ':') || is_p(peek(p, 1), '='))) {
            if (res && res->have) {
                /* the previous statement looked like a result but more follows: impossible
                 * (a result is only taken before DEDENT) */
                return ps_unexpected(p, &t, "the end of the branch"), false;
            }
            if (!parse_binding(p, bc, branch ? res : NULL)) return false;
            if (single) return true;
            continue;
        }
        if (single) return ps_unexpected(p, &t, "a binding"), false;
        if (res && res->have) return ps_unexpected(p, &t, "the end of the branch"), false;
        if (fa && ps_at_dotted(p, "R", "func_attr")) {
            if (!parse_func_attr(p, fa)) return false;
            continue;
        }
        if (tok_is(&t, "with")) {
            if (!parse_dataflow(p, bc)) return false;
            continue;
        }
        if (tok_is(&t, "if")) {
            if (!parse_if(p, bc)) return false;
            continue;
        }
        if (is_p(&t, '@')) {
            span_fields sf;
            ir_tok nt;
            skip(p);
            if (!ps_expect_dotted(p, "R", "function")) return false;
            if (is_p(peek(p, 0), '(')) {
                skip(p);
                while (!is_p(peek(p, 0), ')')) {
                    ir_tok k = *peek(p, 0);
                    if (!tok_is(&k, "pure") || !is_p(peek(p, 1), '='))
                        return ps_unexpected(p, &k, "pure=... in a local function decorator"), false;
                    skip(p), skip(p);
                    num n;
                    if (!ps_number(p, &n)) return false;
                    if (!accept_p(p, ',')) break;
                }
                if (!ps_expect_p(p, ')', "to close the decorator")) return false;
            }
            if (!ps_expect_kind(p, TK_NEWLINE, "end of line after the decorator")) return false;
            ir_func *f = ps_parse_def(p, false, false, NULL, &sf, &nt);
            if (!f) return false;
            const char *name = ps_tok_intern(p, &nt);
            span_fields bsf = {0};
            bsf.has_var = sf.has_var;
            bsf.var = sf.var;
            bsf.tok = sf.tok;
            if (bc->in_df) return ps_perr(p, &t, GR_ERR_PARSE, "local functions are not allowed in a dataflow block"), false;
            if (!emit(p, bc, &nt, name, NULL, &f->base, NULL, &bsf, &nt)) return false;
            continue;
        }
        if (tok_is(&t, "return") && ret) {
            skip(p);
            *ret_tok = *peek(p, 0);
            ir_expr *v = ps_parse_expr(p);
            if (!v || !ps_end_line(p, ret_sf)) return false;
            if (ret_sf->has_var)
                return ps_perr(p, &ret_sf->tok, GR_ERR_PARSE, "var_span is not allowed on a return line"), false;
            if (ret_sf->has_span && !ps_set_span(p, &ret_sf->tok, v, ret_sf->span)) return false;
            *ret = v;
            if (peek(p, 0)->kind != TK_DEDENT)
                return ps_unexpected(p, peek(p, 0), "the end of the function after return"), false;
            return true;
        }
        return ps_unexpected(p, &t, branch ? "a binding" : "a statement");
    }
}


/* `def NAME(params) -> ret:` up to the colon. */
bool ps_parse_header(parser *p, ir_tok *name_tok, param_vec *params, const ir_sinfo **ret) {
    if (!ps_expect_name(p, "def")) return false;
    *name_tok = *peek(p, 0);
    if (!ps_expect_kind(p, TK_NAME, "a function name") || !ps_expect_p(p, '(', "after the function name"))
        return false;
    bool saved = p->sig_mode;
    p->sig_mode = true;
    bool ok = true;
    while (ok && !is_p(peek(p, 0), ')')) {
        ir_tok t = *peek(p, 0);
        if (!ps_expect_kind(p, TK_NAME, "a parameter name") || !ps_expect_p(p, ':', "after the parameter name")) {
            ok = false;
            break;
        }
        param_info pi = {t, ps_tok_intern(p, &t), NULL, NULL};
        pi.sinfo = ps_parse_sinfo(p);
        if (!pi.sinfo) {
            ok = false;
            break;
        }
        bool comma = accept_p(p, ',');
        if (peek(p, 0)->kind == TK_SPANC) {
            ir_tok st = next(p);
            span_fields sf = {0};
            if (!ps_parse_span_comment(p, &st, &sf)) {
                ok = false;
                break;
            }
            if (sf.has_var || sf.has_seq || !sf.has_span) {
                ps_perr(p, &st, GR_ERR_PARSE, "a parameter takes only `# span: ...`");
                ok = false;
                break;
            }
            pi.span = sf.span;
            if (!comma) comma = accept_p(p, ',');
        }
        gr_vec_push(params, pi);
        if (!comma) break;
    }
    ok = ok && ps_expect_p(p, ')', "to close the parameter list");
    *ret = NULL;
    if (ok && peek(p, 0)->kind == TK_ARROW) {
        skip(p);
        *ret = ps_parse_sinfo(p);
        ok = *ret != NULL;
    }
    p->sig_mode = saved;
    return ok && ps_expect_p(p, ':', "after the function signature");
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

ir_func *ps_parse_def(parser *p, bool module_level, bool is_private, fsig *sig,
                      span_fields *sf_out, ir_tok *name_out) {
    ir_tok at = *peek(p, 0);
    if (!ps_enter(p, &at)) return NULL;
    ir_func *result = NULL;
    param_vec params = {0};
    fattrs fa = {0};
    ir_bb_t *bb = NULL;
    uint32_t umark = p->undo.len, smark = p->sym_undo.len;
    p->log_scope++;
    if (module_level) {
        if (p->scope.len) {
            ps_ptab_flush(&p->scope);
            memset(p->scope.s, 0, sizeof(*p->scope.s) * p->scope.cap);
            p->scope.len = 0;
        }
        gr_map_clear(&p->syms);
        p->sym_undo.len = smark = 0;
        p->undo.len = umark = 0;
        p->log_scope--; /* nothing outside to restore */
        for (uint32_t i = 0; sig && i < sig->sym_n; i++) {
            const psym *s = &p->sigsyms.data[sig->sym_start + i];
            ps_sym_define(p, s->name, s->var);
        }
    }
    const ir_sinfo *ret = NULL;
    if (!ps_parse_header(p, name_out, &params, &ret)) goto out;
    span_fields sf;
    if (!ps_end_line(p, &sf)) goto out;
    if (sf.has_seq) {
        ps_perr(p, &sf.tok, GR_ERR_PARSE, "seq_span belongs on the return line");
        goto out;
    }
    if (sf.has_var && module_level) {
        ps_perr(p, &sf.tok, GR_ERR_PARSE, "var_span is only meaningful for local functions");
        goto out;
    }
    *sf_out = sf;
    if (!ps_expect_kind(p, TK_INDENT, "an indented function body")) goto out;
    uint32_t first_id = ir_ctx_id_bound(p->ctx);
    p->vars.len = 0;
    for (uint32_t i = 0; i < params.len; i++) {
        param_info *pi = &params.data[i];
        ir_var *old = ps_scope_get(p, pi->name);
        if (old && old->base.id >= first_id) {
            ps_perr(p, &pi->tok, GR_ERR_PARSE, "duplicate parameter '%s'", pi->name);
            goto out;
        }
        ir_var *v = ir_var_new(p->ctx, pi->name, pi->sinfo, pi->span);
        ps_scope_bind(p, pi->name, v);
        gr_vec_push(&p->vars, v);
    }
    ir_var **pv = IR_NEW_ARRAY(p->ctx, ir_var *, params.len ? params.len : 1);
    if (params.len) memcpy(pv, p->vars.data, sizeof(ir_var *) * params.len); /* data is NULL when empty */
    body_ctx bc = {ir_bb_new(p->ctx, &p->tmp), false, false, 0};
    bb = bc.bb;
    ir_bb_set_module(bb, p->mod);
    ir_expr *rv = NULL;
    span_fields rsf;
    ir_tok rtok;
    if (!parse_stmt_list(p, &bc, false, NULL, &fa, &rv, &rsf, &rtok)) goto out;
    CLEAR_TMP(p);
    ir_seq *body = ir_bb_finish(bb, rv, rsf.has_seq ? rsf.seq : NULL);
    if (!body) {
        type_err(p, &rtok);
        goto out;
    }
    if (ret && !ir_sinfo_is_base_of(ret, body->base.sinfo)) {
        char a[512], g[512];
        ir_sinfo_snprint(ret, a, sizeof(a));
        ir_sinfo_snprint(body->base.sinfo, g, sizeof(g));
        ps_perr(p, &rtok, GR_ERR_TYPE, "returns %s, but the function is annotated to return %s", g, a);
        goto out;
    }
    if (!ps_expect_kind(p, TK_DEDENT, "the end of the function")) goto out;
    /* attributes sorted by key; public module functions get global_symbol = name */
    const char *fname = ps_tok_intern(p, name_out);
    bool has_gs = false;
    for (uint32_t i = 0; i < fa.keys.len; i++) has_gs |= strcmp(fa.keys.data[i], "global_symbol") == 0;
    if (module_level && !is_private && !has_gs) {
        gr_vec_push(&fa.keys, ir_intern(p->ctx, "global_symbol"));
        gr_vec_push(&fa.vals, ir_attr_str(p->ctx, fname));
    }
    const ir_attrs *attrs = NULL;
    if (fa.keys.len) {
        uint32_t n = fa.keys.len;
        const char **ks = gr_xmalloc(sizeof(char *) * n);
        ir_attr *vs = gr_xmalloc(sizeof(ir_attr) * n);
        memcpy(ks, fa.keys.data, sizeof(char *) * n);
        qsort(ks, n, sizeof(char *), cmp_str_ptr);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                if (fa.keys.data[j] == ks[i]) vs[i] = fa.vals.data[j];
        attrs = ir_attrs_new(p->ctx, n, ks, vs);
        free(ks);
        free(vs);
    }
    ir_func *f = ir_func_new(p->ctx, params.len, pv, &body->base, ret, attrs, sf.has_span ? sf.span : NULL);
    ir_expr_set_sinfo(&f->base, ir_func_sinfo(p->ctx, f));
    result = f;
out:
    if (bb) ir_bb_free(bb);
    gr_vec_free(&params);
    gr_vec_free(&fa.keys);
    gr_vec_free(&fa.vals);
    if (!module_level) {
        ps_scope_restore(p, umark);
        ps_restore(&p->syms, &p->sym_undo, smark);
        p->log_scope--;
    }
    LEAVE(p);
    return result;
}
