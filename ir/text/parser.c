/* The text format parser: recursive descent over the tokens of ir/text/lexer.c, building nodes
 * through the block builder (ir/builder.h) so struct info is inferred as the file is read.
 * This file: the module (class body, decorators, the metadata section, TIR blocks) and the entry
 * points; the parts below it are in ir/parse_*.c. Syntax reference: docs/text-format.md. */
#include "ir/text/parser.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/text/parse_impl.h"

/* ---- metadata section ---- */

/* One pass over the lines: the metadata section's start (NULL: none), and the line count. */
static const char *find_metadata(parser *p, uint32_t *nlines) {
    const char *s = p->src, *end = p->src + p->len, *meta = NULL;
    uint32_t lines = 0;
    while (s < end) {
        lines++;
        if (!meta && *s == 'm' && (size_t)(end - s) >= 8 && memcmp(s, "metadata", 8) == 0) {
            const char *q = s + 8;
            while (q < end && *q == ' ') q++;
            if (q < end && *q == '=') meta = s;
        }
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl) break;
        s = nl + 1;
    }
    *nlines = lines;
    return meta;
}

static int line_of(parser *p, const char *at) {
    int line = 1;
    for (const char *s = p->src; s < at; s++) line += *s == '\n';
    return line;
}


static bool const_item(parser *p, const_vec *out) {
    ir_tok at = *peek(p, 0);
    if (!ps_expect_dotted(p, "R", "const_data") || !ps_expect_p(p, '(', "after R.const_data")) return false;
    ir_dtype dt;
    ir_tok dtok = *peek(p, 0);
    if (!ps_dtype_lit(p, &dt) || !ps_expect_p(p, ',', "after the dtype")) return false;
    if (ir_dtype_is_void(dt) || !ir_dtype_bytes(dt))
        return ps_perr(p, &dtok, GR_ERR_PARSE, "constants need a concrete dtype"), false;
    if (!ps_expect_p(p, '(', "for the shape")) return false;
    int64_t shape[RT_MAX_NDIM];
    int ndim = 0;
    uint64_t numel = 1;
    while (!is_p(peek(p, 0), ')')) {
        ir_tok t = *peek(p, 0);
        if (!ps_expect_kind(p, TK_INT, "a dimension")) return false;
        int64_t d;
        if (!ps_int_value(p, &t, false, &d)) return false;
        if (ndim >= RT_MAX_NDIM) return ps_perr(p, &t, GR_ERR_PARSE, "constants have at most %d dimensions", RT_MAX_NDIM), false;
        if (d > ((int64_t)1 << 40) || (d && numel > ((uint64_t)1 << 40) / (uint64_t)d))
            return ps_perr(p, &t, GR_ERR_PARSE, "constant too large"), false;
        numel *= (uint64_t)d;
        shape[ndim++] = d;
        if (!accept_p(p, ',')) break;
    }
    if (!ps_expect_p(p, ')', "to close the shape") || !ps_expect_p(p, ',', "before the data")) return false;
    ir_tok data_tok = *peek(p, 0);
    if (!ps_string_lit(p, true)) return false;
    uint64_t nbytes = numel * ir_dtype_bytes(dt);
    if (p->sbuf.len != ir_base64_enc_len(nbytes))
        return ps_perr(p, &data_tok, GR_ERR_PARSE,
                    "constant data has %zu base64 characters, expected %zu for %" PRIu64 " bytes",
                    p->sbuf.len, ir_base64_enc_len(nbytes), nbytes), false;
    unsigned char *raw = gr_xmalloc(p->sbuf.len / 4 * 3 + 4);
    long got = ir_base64_decode(p->sbuf.data, p->sbuf.len, raw);
    if (got != (long)nbytes) {
        free(raw);
        return ps_perr(p, &data_tok, GR_ERR_PARSE, "malformed base64 constant data"), false;
    }
    const ir_span *span = NULL;
    if (accept_p(p, ',') && ps_kw_at(p, "span")) {
        skip(p), skip(p);
        bool ok;
        span = ps_parse_span(p, &ok);
        if (!ok) {
            free(raw);
            return false;
        }
        accept_p(p, ',');
    }
    if (!ps_expect_p(p, ')', "to close R.const_data(")) {
        free(raw);
        return false;
    }
    rt_tensor *t = rt_tensor_new(dt, ndim, shape);
    if (!t) {
        free(raw);
        return ps_perr(p, &at, GR_ERR_NOMEM, "cannot allocate the constant"), false;
    }
    memcpy(rt_tensor_data(t), raw, nbytes);
    free(raw);
    ir_const *c = ir_const_new(p->ctx, t, span);
    rt_tensor_release(t);
    gr_vec_push(out, c);
    return true;
}

static bool parse_metadata(parser *p, const char *at) {
    ir_lex_init(&p->lx, p->src, at, p->src + p->len, line_of(p, at));
    p->nla = 0;
    const_vec cs = {0};
    bool ok = ps_expect_name(p, "metadata") && ps_expect_p(p, '=', "after metadata");
    if (ok && tok_is(peek(p, 0), "tvm")) {
        /* show_meta=True: an opaque JSON blob of TVM's object graph (and TVM 0.27 crashes
         * writing it); graft reads its own section instead */
        ps_perr(p, peek(p, 0), GR_ERR_UNSUPPORTED,
             "TVM's JSON metadata (metadata = tvm.ir.load_json(...)) is not supported; write the "
             "constants as graft's `metadata = {\"relax.expr.Constant\": [R.const_data(...), ...]}` "
             "section (docs/text-format.md)");
        ok = false;
    }
    ok = ok && ps_expect_p(p, '{', "to open the metadata dict");
    while (ok && !is_p(peek(p, 0), '}')) {
        ir_tok kt = *peek(p, 0);
        ok = ps_string_lit(p, false);
        if (!ok) break;
        if (strcmp(p->sbuf.data, "relax.expr.Constant") != 0 && strcmp(p->sbuf.data, "ir.GenericConst") != 0) {
            ps_perr(p, &kt, GR_ERR_PARSE, "unsupported metadata kind \"%s\"", p->sbuf.data);
            ok = false;
            break;
        }
        ok = ps_expect_p(p, ':', "after the metadata kind") && ps_expect_p(p, '[', "to open the constant list");
        while (ok && !is_p(peek(p, 0), ']')) {
            ok = const_item(p, &cs);
            if (!ok || !accept_p(p, ',')) break;
        }
        ok = ok && ps_expect_p(p, ']', "to close the constant list");
        if (!ok || !accept_p(p, ',')) break;
    }
    ok = ok && ps_expect_p(p, '}', "to close the metadata dict");
    if (ok && peek(p, 0)->kind == TK_NEWLINE) next(p);
    ok = ok && ps_expect_kind(p, TK_EOF, "the end of the file after the metadata section");
    if (ok) {
        p->nconsts = cs.len;
        p->consts = IR_NEW_ARRAY(p->ctx, ir_const *, cs.len ? cs.len : 1);
        if (cs.len) memcpy(p->consts, cs.data, sizeof(ir_const *) * cs.len);
        p->have_meta = true;
    }
    gr_vec_free(&cs);
    return ok;
}

/* ---- TIR functions ---- */

static bool line_blank(const char *s, const char *le) {
    while (s < le && *s == ' ') s++;
    return s == le || *s == '#' || *s == '\r';
}

/* Paren depth change over [s, le), skipping string literals and comments. */
static int paren_delta(const char *s, const char *le) {
    int d = 0;
    char q = 0;
    for (; s < le; s++) {
        if (q) {
            if (*s == '\\') s++;
            else if (*s == q) q = 0;
        } else if (*s == '"' || *s == '\'') q = *s;
        else if (*s == '#') break;
        else if (*s == '(' || *s == '[' || *s == '{') d++;
        else if (*s == ')' || *s == ']' || *s == '}') d--;
    }
    return d;
}

/* graft does not model TIR: each `@T.prim_func` block (decorator, def, and its indented body) is
 * cut out of the text the lexer sees (replaced by blank lines, so line numbers stay) and kept as
 * text, dedented, for a placeholder function (ir_func_tir_new). */
static bool extract_tir(parser *p) {
    if (!memmem(p->src, p->len, "@T.prim_func", 12)) return true;
    char *cp = gr_xmalloc(p->len + 1);
    memcpy(cp, p->src, p->len);
    cp[p->len] = 0;
    p->own_src = cp;
    p->src = cp;
    p->drop_from = NULL;
    char *end = cp + p->len, *s = cp;
    int line = 1;
    GR_VEC(struct tir_fn) v = {0};
    ir_sbuf tb = {0};
    bool ok = true;
    while (s < end && ok) {
        char *le = memchr(s, '\n', (size_t)(end - s));
        if (!le) le = end;
        int w = 0;
        while (s + w < le && s[w] == ' ') w++;
        if (!(le - (s + w) >= 12 && memcmp(s + w, "@T.prim_func", 12) == 0)) {
            s = le < end ? le + 1 : end;
            line++;
            continue;
        }
        struct tir_fn t = {NULL, NULL, line, memmem(s + w, (size_t)(le - s - w), "private=True", 12) != NULL};
        char *bstart = s, *last = le, *q = le < end ? le + 1 : end;
        int qline = line + 1, depth = 0;
        bool in_head = true, seen_def = false;
        while (q < end) {
            char *qe = memchr(q, '\n', (size_t)(end - q));
            if (!qe) qe = end;
            int qw = 0;
            while (q + qw < qe && q[qw] == ' ') qw++;
            bool blank = line_blank(q, qe);
            if (in_head) {
                if (!blank) {
                    if (!seen_def) {
                        if (qw != w || qe - (q + qw) < 4 || memcmp(q + qw, "def ", 4) != 0) break;
                        seen_def = true;
                        const char *n0 = q + qw + 4, *n1 = n0;
                        while (n1 < qe && (*n1 == '_' || (*n1 >= 'a' && *n1 <= 'z') || (*n1 >= 'A' && *n1 <= 'Z') ||
                                           (*n1 >= '0' && *n1 <= '9')))
                            n1++;
                        if (n1 > n0) t.name = ir_intern_n(p->ctx, n0, (size_t)(n1 - n0));
                    }
                    depth += paren_delta(q, qe);
                    last = qe;
                    if (depth <= 0) in_head = false;
                }
            } else if (!blank) {
                if (qw <= w) break;
                last = qe;
            }
            q = qe < end ? qe + 1 : end;
            qline++;
        }
        if (!t.name) {
            ir_tok at = {0};
            at.line = line;
            at.col = w + 1;
            at.s = s + w;
            at.len = 12;
            ps_perr(p, &at, GR_ERR_PARSE, "@T.prim_func must be followed by `def NAME(...):`");
            ok = false;
            break;
        }
        /* the text is kept as a C string: a NUL would cut it (and the print) short */
        char *nul = memchr(bstart, 0, (size_t)(last - bstart));
        if (nul) {
            ir_tok at = {0};
            char *bol = bstart;
            at.line = line;
            for (char *r = bstart; r < nul; r++)
                if (*r == '\n') at.line++, bol = r + 1;
            at.col = (int)(nul - bol) + 1;
            at.s = nul;
            at.len = 1;
            ps_perr(p, &at, GR_ERR_PARSE, "NUL character in a TIR function (@T.prim_func)");
            ok = false;
            break;
        }
        tb.len = 0;
        for (char *r = bstart; r < last;) {
            char *re = memchr(r, '\n', (size_t)(last - r));
            if (!re) re = last;
            int rw = 0;
            while (r + rw < re && rw < w && r[rw] == ' ') rw++;
            if (r != bstart) ir_sbuf_putc(&tb, '\n');
            ir_sbuf_putn(&tb, r + rw, (size_t)(re - r - rw));
            r = re < last ? re + 1 : last;
        }
        ir_sbuf_cstr(&tb);
        t.text = ir_intern(p->ctx, tb.data);
        for (char *r = bstart; r < last; r++)
            if (*r != '\n') *r = ' ';
        gr_vec_push(&v, t);
        for (char *r = s; r < last; r++) line += *r == '\n';
        s = last;
        (void)qline;
    }
    ir_sbuf_free(&tb);
    p->tirs = v.data;
    p->ntirs = v.len;
    return ok;
}

/* Adds the TIR functions that come before `line` to the module (all: line < 0). */
static bool add_tir_before(parser *p, int line) {
    while (p->next_tir < p->ntirs && (line < 0 || p->tirs[p->next_tir].line < line)) {
        const struct tir_fn *t = &p->tirs[p->next_tir++];
        uint64_t idx = 0;
        gr_map_get(&p->sigmap, GR_MAP_PTR(t->name), &idx);
        ir_gvar *g = p->sigs.data[idx - 1].gvar;
        ir_func *f = ir_func_tir_new(p->ctx, t->name, t->text, t->priv);
        if (!g->base.sinfo) ir_expr_set_sinfo(&g->base, f->base.sinfo);
        ir_module_set(p->mod, g, &f->base);
    }
    return true;
}

/* ---- module ---- */

/* Pre-pass: the signature of every function of the class (so calls may precede definitions). */
static bool prescan_functions(parser *p, const char *body, const char *end, int width, int line) {
    lexsave sv;
    sv.lx = p->lx;
    memcpy(sv.la, p->la, sizeof(p->la));
    sv.nla = p->nla;
    bool ok = true;
    bool relax_deco = false; /* the last decorator at class level was @R.function */
    for (const char *s = body; s < end && ok;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        int w = 0;
        while (s + w < le && s[w] == ' ') w++;
        if (w == width && s + w < le && s[w] == '@')
            relax_deco = le - (s + w) >= 11 && memcmp(s + w, "@R.function", 11) == 0;
        if (w == width && relax_deco && le - (s + w) > 4 && memcmp(s + w, "def ", 4) == 0) {
            ir_lex_init(&p->lx, p->src, s, end, line);
            p->nla = 0;
            if (peek(p, 0)->kind == TK_INDENT) next(p);
            ir_tok nt;
            param_vec params = {0};
            const ir_sinfo *ret = NULL;
            gr_map_clear(&p->syms);
            p->sym_undo.len = 0;
            ok = ps_parse_header(p, &nt, &params, &ret);
            if (ok) {
                const char *name = ps_tok_intern(p, &nt);
                if (gr_map_get(&p->sigmap, GR_MAP_PTR(name), NULL)) {
                    ps_perr(p, &nt, GR_ERR_PARSE, "duplicate function '%s'", name);
                    ok = false;
                } else {
                    fsig sg = {ir_gvar_new(p->ctx, name), p->sigsyms.len, 0};
                    for (uint32_t i = 0; i < p->sym_undo.len; i++) {
                        const char *sn = (const char *)(uintptr_t)p->sym_undo.data[i].key;
                        psym ps = {sn, ps_sym_get(p, sn)};
                        gr_vec_push(&p->sigsyms, ps);
                        sg.sym_n++;
                    }
                    if (ret) {
                        const ir_sinfo *ps[64];
                        const ir_sinfo **pa = params.len <= 64 ? ps : gr_xmalloc(sizeof(*pa) * params.len);
                        for (uint32_t i = 0; i < params.len; i++) pa[i] = params.data[i].sinfo;
                        ir_expr_set_sinfo(&sg.gvar->base, ir_sinfo_func(p->ctx, params.len, pa, ret));
                        if (pa != ps) free(pa);
                    }
                    gr_vec_push(&p->sigs, sg);
                    gr_map_put(&p->sigmap, GR_MAP_PTR(name), p->sigs.len);
                }
            }
            gr_vec_free(&params);
        }
        s = nl ? nl + 1 : end;
        line++;
    }
    gr_map_clear(&p->syms);
    p->sym_undo.len = 0;
    p->lx = sv.lx;
    memcpy(p->la, sv.la, sizeof(p->la));
    p->nla = sv.nla;
    return ok;
}

static bool parse_decorator(parser *p, bool *is_private) {
    *is_private = false;
    if (is_p(peek(p, 0), '@') && tok_is(peek(p, 1), "T") && is_p(peek(p, 2), '.')) {
        ir_tok at = *peek(p, 1);
        return ps_perr(p, &at, GR_ERR_UNSUPPORTED,
                    "TIR functions (@T.prim_func) are not supported; only Relax functions"), false;
    }
    if (!ps_expect_p(p, '@', "(a decorated function)") || !ps_expect_dotted(p, "R", "function")) return false;
    if (accept_p(p, '(')) {
        while (!is_p(peek(p, 0), ')')) {
            ir_tok k = *peek(p, 0);
            if (!(tok_is(&k, "private") || tok_is(&k, "pure")) || !is_p(peek(p, 1), '='))
                return ps_unexpected(p, &k, "private= or pure="), false;
            skip(p), skip(p);
            num n;
            if (!ps_number(p, &n)) return false;
            if (tok_is(&k, "private")) *is_private = n.i != 0;
            if (!accept_p(p, ',')) break;
        }
        if (!ps_expect_p(p, ')', "to close the decorator")) return false;
    }
    return ps_expect_kind(p, TK_NEWLINE, "end of line after the decorator");
}

static bool parse_module_body(parser *p, const char *meta) {
    if (meta && !parse_metadata(p, meta)) return false;
    const char *end = meta ? meta : p->src + p->len;
    ir_lex_init(&p->lx, p->src, p->src, end, 1);
    p->nla = 0;
    /* `from tvm.script import ir as I`, `import tvm`: the header of user-written TVMScript;
     * `n = TypeVar("n")`: TVM 0.27 declares the symbolic dims of the module so */
    for (;;) {
        if (tok_is(peek(p, 0), "from") || tok_is(peek(p, 0), "import")) {
            while (peek(p, 0)->kind != TK_NEWLINE && peek(p, 0)->kind != TK_EOF) skip(p);
            if (!ps_expect_kind(p, TK_NEWLINE, "end of line")) return false;
            continue;
        }
        if (peek(p, 0)->kind == TK_NAME && is_p(peek(p, 1), '=') && tok_is(peek(p, 2), "TypeVar")) {
            ir_tok nt = next(p);
            skip(p), skip(p);
            if (!ps_expect_p(p, '(', "after TypeVar") || !ps_string_lit(p, false) ||
                !ps_expect_p(p, ')', "to close TypeVar(") || !ps_expect_kind(p, TK_NEWLINE, "end of line"))
                return false;
            gr_map_put(&p->typevars, GR_MAP_PTR(ps_tok_intern(p, &nt)), 1);
            continue;
        }
        break;
    }
    if (!ps_expect_p(p, '@', "(the module starts with @I.ir_module)")) return false;
    if (!(ps_at_dotted(p, "tvm", "script") && is_p(peek(p, 3), '.') && tok_is(peek(p, 4), "ir_module"))) {
        if (!ps_expect_dotted(p, "I", "ir_module")) return false;
    } else {
        for (int i = 0; i < 5; i++) skip(p);
    }
    if (accept_p(p, '(')) {
        /* @I.ir_module(s_tir=True), (check_well_formed=False): options of TVM's parser */
        while (!is_p(peek(p, 0), ')')) {
            ir_tok k = *peek(p, 0);
            if (k.kind != TK_NAME || !is_p(peek(p, 1), '=')) return ps_unexpected(p, &k, "an option name="), false;
            skip(p), skip(p);
            num n;
            if (!ps_number(p, &n)) return false;
            if (!accept_p(p, ',')) break;
        }
        if (!ps_expect_p(p, ')', "to close the decorator")) return false;
    }
    if (!ps_expect_kind(p, TK_NEWLINE, "end of line") || !ps_expect_name(p, "class")) return false;
    ir_tok ct = *peek(p, 0);
    if (!ps_expect_kind(p, TK_NAME, "a class name") || !ps_expect_p(p, ':', "after the class name") ||
        !ps_expect_kind(p, TK_NEWLINE, "end of line"))
        return false;
    p->cls_name = ps_tok_intern(p, &ct);
    ir_tok it = *peek(p, 0);
    if (!ps_expect_kind(p, TK_INDENT, "an indented class body")) return false;
    for (uint32_t i = 0; i < p->ntirs; i++) {
        const char *name = p->tirs[i].name;
        if (gr_map_get(&p->sigmap, GR_MAP_PTR(name), NULL)) {
            ir_tok at = {0};
            at.line = p->tirs[i].line;
            at.col = 1;
            return ps_perr(p, &at, GR_ERR_PARSE, "duplicate function '%s'", name), false;
        }
        fsig sg = {ir_gvar_new(p->ctx, name), p->sigsyms.len, 0};
        /* typed now, so Relax functions above the PrimFunc may call it */
        ir_expr_set_sinfo(&sg.gvar->base, ir_func_tir_sinfo(p->ctx, p->tirs[i].text));
        gr_vec_push(&p->sigs, sg);
        gr_map_put(&p->sigmap, GR_MAP_PTR(name), p->sigs.len);
    }
    if (!prescan_functions(p, ps_line_start_of(p, it.s), end, it.col - 1, it.line)) return false;
    if (ps_at_dotted(p, "I", "module_attrs")) {
        skip(p), skip(p), skip(p);
        ir_tok dt = *peek(p, 0);
        ir_attr a;
        if (!ps_expect_p(p, '(', "after I.module_attrs")) return false;
        if (!is_p(peek(p, 0), '{')) return ps_unexpected(p, peek(p, 0), "a dict"), false;
        if (!ps_parse_attr(p, &a) || !ps_expect_p(p, ')', "to close I.module_attrs(")) return false;
        for (uint32_t i = 0; i < a.u.arr.n; i++) {
            const ir_attr *k = &a.u.arr.items[2 * i];
            if (k->kind != IR_ATTR_STR) return ps_perr(p, &dt, GR_ERR_PARSE, "module attribute keys must be strings"), false;
            ir_module_set_attr(p->mod, k->u.s, a.u.arr.items[2 * i + 1]);
        }
        span_fields sf;
        if (!ps_end_line(p, &sf)) return false;
    }
    while (!p->failed && peek(p, 0)->kind != TK_DEDENT && peek(p, 0)->kind != TK_EOF) {
        if (tok_is(peek(p, 0), "pass")) {
            skip(p);
            span_fields sf;
            if (!ps_end_line(p, &sf)) return false;
            continue;
        }
        add_tir_before(p, peek(p, 0)->line);
        bool priv;
        if (!parse_decorator(p, &priv)) return false;
        ir_tok dt = *peek(p, 0);
        if (!tok_is(&dt, "def")) return ps_unexpected(p, &dt, "def"), false;
        ir_tok nt = *peek(p, 1);
        const char *name = nt.kind == TK_NAME ? ps_tok_intern(p, &nt) : NULL;
        uint64_t idx = 0;
        if (!name || !gr_map_get(&p->sigmap, GR_MAP_PTR(name), &idx))
            return ps_unexpected(p, &nt, "a function name"), false;
        fsig *sg = &p->sigs.data[idx - 1];
        if (ir_module_gvar(p->mod, name))
            return ps_perr(p, &nt, GR_ERR_PARSE, "duplicate function '%s'", name), false;
        span_fields sf;
        ir_tok nt2;
        ir_func *f = ps_parse_def(p, true, priv, sg, &sf, &nt2);
        if (!f) return false;
        sg = &p->sigs.data[idx - 1];
        if (!sg->gvar->base.sinfo) ir_expr_set_sinfo(&sg->gvar->base, f->base.sinfo);
        ir_module_set(p->mod, sg->gvar, &f->base);
    }
    if (p->failed) return false;
    add_tir_before(p, -1);
    if (peek(p, 0)->kind == TK_DEDENT) next(p);
    return ps_expect_kind(p, TK_EOF, "the end of the module");
}

gr_status ir_parse_module(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                          ir_module **out, gr_diag *diag) {
    return ir_parse_module_opts(ctx, name, text, len, NULL, out, diag);
}

static gr_status parse_text(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                            const ir_parse_opts *opts, bool mapped, ir_module **out,
                            gr_diag *diag) {
    *out = NULL;
    parser *p = gr_xcalloc(1, sizeof(*p));
    p->ctx = ctx;
    p->file = name ? name : "<input>";
    p->src = text ? text : "";
    p->len = text ? len : 0;
    if (mapped && text) p->drop_from = text;
    p->diag = diag;
    if (!extract_tir(p)) {
        gr_status est = diag && diag->code != GR_OK ? diag->code : GR_ERR_PARSE;
        free(p->own_src);
        free(p->tirs);
        free(p);
        return est;
    }
    uint32_t lines;
    const char *meta = find_metadata(p, &lines);
    ir__ctx_expect(ctx, (size_t)lines * 200); /* a binding line makes ~200 B of IR */
    ps_ptab_init(&p->scope, lines / 2 * 3 + 64);
    gr_map_init(&p->syms);
    gr_map_init(&p->opcache);
    gr_map_init(&p->sigmap);
    gr_map_init(&p->typevars);
    p->mod = ir_module_new(ctx);
    p->written_attrs = opts ? opts->written_attrs : NULL;
    p->lenient = opts && opts->lenient;
    bool ok = parse_module_body(p, meta);
    if (!ok && !p->failed) ps_perr(p, NULL, GR_ERR_PARSE, "parse failed");
    gr_status st = ok ? GR_OK : (diag && diag->code != GR_OK ? diag->code : GR_ERR_PARSE);
    if (ok) *out = p->mod;
    gr_free_big(p->scope.s, sizeof(*p->scope.s) * p->scope.cap);
    gr_map_free(&p->syms);
    gr_map_free(&p->opcache);
    gr_map_free(&p->sigmap);
    gr_map_free(&p->typevars);
    gr_vec_free(&p->undo);
    gr_vec_free(&p->sym_undo);
    gr_vec_free(&p->estack);
    gr_vec_free(&p->kstack);
    gr_vec_free(&p->vstack);
    gr_vec_free(&p->sstack);
    gr_vec_free(&p->pstack);
    gr_vec_free(&p->vars);
    gr_vec_free(&p->sigs);
    gr_vec_free(&p->sigsyms);
    ir_sbuf_free(&p->sbuf);
    free(p->tirs);
    free(p->own_src);
    free(p);
    return st;
}

gr_status ir_parse_module_opts(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                               const ir_parse_opts *opts, ir_module **out, gr_diag *diag) {
    return parse_text(ctx, name, text, len, opts, false, out, diag);
}

/* A regular file is mapped read-only and parsed in place (parse_text gives pages back behind
 * the cursor); other files (pipes), and files whose size is a whole number of pages (no byte
 * after the text to read safely), are read into memory. */
static bool parse_mapped(ir_ctx_t *ctx, const char *path, ir_module **out, gr_diag *diag,
                         gr_status *st) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    struct stat sb;
    long page = sysconf(_SC_PAGESIZE);
    bool ok = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && page > 0 &&
              sb.st_size % page != 0;
    void *m = ok ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0) : MAP_FAILED;
    fclose(f);
    if (m == MAP_FAILED) return false;
    madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
    *st = parse_text(ctx, path, m, (size_t)sb.st_size, NULL, true, out, diag);
    munmap(m, (size_t)sb.st_size);
    return true;
}

gr_status ir_parse_file(ir_ctx_t *ctx, const char *path, ir_module **out, gr_diag *diag) {
    *out = NULL;
    gr_status mst;
    if (parse_mapped(ctx, path, out, diag, &mst)) return mst;
    FILE *f = fopen(path, "rb");
    if (!f) {
        gr_diag_set(diag, GR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        gr_diag_set_file(diag, path);
        return GR_ERR_IO;
    }
    if (gr_is_dir(f)) {
        fclose(f);
        gr_diag_set(diag, GR_ERR_IO, "%s: is a directory, not a file", path);
        gr_diag_set_file(diag, path);
        return GR_ERR_IO;
    }
    ir_sbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) ir_sbuf_putn(&b, chunk, n);
    bool err = ferror(f);
    fclose(f);
    if (err) {
        ir_sbuf_free(&b);
        gr_diag_set(diag, GR_ERR_IO, "%s: read error", path);
        gr_diag_set_file(diag, path);
        return GR_ERR_IO;
    }
    gr_status st = ir_parse_module(ctx, path, b.data ? b.data : "", b.len, out, diag);
    ir_sbuf_free(&b);
    return st;
}
