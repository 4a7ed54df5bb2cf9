/* The parser's groundwork: error reports with a position, tokens, literals, scopes and span
 * comments. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ir/text/parse_impl.h"

/* ---- errors ---- */


void *ps_perr(parser *p, const ir_tok *t, gr_status code, const char *fmt, ...) {
    if (p->failed) return NULL;
    p->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *at = t ? t->s : p->src;
    if (at < p->src) at = p->src;
    if (at > p->src + p->len) at = p->src + p->len;
    const char *ls = at;
    while (ls > p->src && ls[-1] != '\n') ls--;
    const char *le = memchr(ls, '\n', (size_t)(p->src + p->len - ls));
    if (!le) le = p->src + p->len;
    if (le > ls && le[-1] == '\r') le--;
    int line = t ? t->line : 1, col = t ? t->col : 1;
    int show = (int)(le - ls) > 300 ? 300 : (int)(le - ls);
    int caret = col - 1 < show ? col - 1 : show;
    if (caret < 0) caret = 0;
    gr_diag_set(p->diag, code, "%s:%d:%d: %s\n%.*s\n%*s^", p->file, line, col, msg, show, ls,
                caret, "");
    if (p->diag) {
        p->diag->line = line;
        p->diag->col = col;
        gr_diag_set_file(p->diag, p->file);
    }
    return NULL;
}

/* ---- tokens ---- */




void ps_drop_behind(parser *p) {
    if (!p->drop_from) return;
    const char *at = p->nla ? p->la[0].s : p->lx.p;
    if (at - p->drop_from < DROP_STEP + DROP_MARGIN || at < p->src || at > p->src + p->len) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const char *lim = (const char *)((uintptr_t)(at - DROP_MARGIN) & ~(page - 1));
    if (lim <= p->drop_from) return;
    madvise((void *)(uintptr_t)p->drop_from, (size_t)(lim - p->drop_from), MADV_DONTNEED);
    p->drop_from = lim;
}


static const char *tok_desc(const ir_tok *t) {
    switch ((ir_tok_kind)t->kind) {
    case TK_EOF: return "end of input";
    case TK_NEWLINE: return "end of line";
    case TK_INDENT: return "indentation";
    case TK_DEDENT: return "end of block";
    case TK_SPANC: return "span comment";
    default: return NULL;
    }
}

void *ps_unexpected(parser *p, const ir_tok *t, const char *what) {
    const char *d = tok_desc(t);
    if (d) return ps_perr(p, t, GR_ERR_PARSE, "expected %s, found %s", what, d);
    return ps_perr(p, t, GR_ERR_PARSE, "expected %s, found '%.*s'", what,
                (int)(t->len > 40 ? 40 : t->len), t->s);
}

bool ps_expect_p(parser *p, char c, const char *what) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (!is_p(t, c)) {
        char buf[64];
        snprintf(buf, sizeof(buf), "'%c' %s", c, what);
        ps_unexpected(p, t, buf);
        return false;
    }
    skip(p);
    return true;
}


bool ps_expect_kind(parser *p, ir_tok_kind k, const char *what) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (t->kind != k) {
        ps_unexpected(p, t, what);
        return false;
    }
    skip(p);
    return true;
}

bool ps_expect_name(parser *p, const char *s) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (!tok_is(t, s)) {
        char buf[80];
        snprintf(buf, sizeof(buf), "'%s'", s);
        ps_unexpected(p, t, buf);
        return false;
    }
    skip(p);
    return true;
}

/* `X.Y` at the cursor: two names joined by a dot. */
bool ps_at_dotted(parser *p, const char *a, const char *b) {
    return tok_is(peek(p, 0), a) && is_p(peek(p, 1), '.') && tok_is(peek(p, 2), b);
}

bool ps_expect_dotted(parser *p, const char *a, const char *b) {
    return ps_expect_name(p, a) && ps_expect_p(p, '.', "") && ps_expect_name(p, b);
}

bool ps_enter(parser *p, const ir_tok *t) {
    if (++p->depth > MAX_DEPTH) {
        ps_perr(p, t, GR_ERR_PARSE, "nesting too deep (limit %d)", MAX_DEPTH);
        return false;
    }
    return true;
}


const char *ps_line_start_of(parser *p, const char *s) {
    while (s > p->src && s[-1] != '\n') s--;
    return s;
}

void ps_push_sub(parser *p, lexsave *sv, const char *s, const char *e, const ir_tok *at) {
    sv->lx = p->lx;
    memcpy(sv->la, p->la, sizeof(p->la));
    sv->nla = p->nla;
    ir_lex_init_sub(&p->lx, p->src, s, e, at->line, ps_line_start_of(p, s));
    p->nla = 0;
}

void ps_pop_lex(parser *p, const lexsave *sv) {
    p->lx = sv->lx;
    memcpy(p->la, sv->la, sizeof(p->la));
    p->nla = sv->nla;
}

/* ---- literals ---- */

/* Decodes a string token (adjacent literals concatenated when `concat`) into p->sbuf. */
bool ps_string_lit(parser *p, bool concat) {
    p->sbuf.len = 0;
    bool first = true;
    while (peek(p, 0)->kind == TK_STRING && (first || concat)) {
        ir_tok t = next(p);
        first = false;
        for (const char *s = t.s + 1; s < t.s + t.len - 1; s++) {
            char c = *s;
            if (c == '\\') {
                s++;
                switch (*s) {
                case 'n': c = '\n'; break;
                case 't': c = '\t'; break;
                case 'r': c = '\r'; break;
                case '\\': c = '\\'; break;
                case '"': c = '"'; break;
                case '\'': c = '\''; break;
                case 'x': {
                    int v = 0;
                    for (int k = 1; k <= 2; k++) {
                        char h = s + k < t.s + t.len - 1 ? s[k] : 0;
                        int d = h >= '0' && h <= '9' ? h - '0'
                              : h >= 'a' && h <= 'f' ? h - 'a' + 10
                              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                        if (d < 0) {
                            ir_tok at = t;
                            at.col += (int)(s - t.s);
                            at.s = s;
                            return ps_perr(p, &at, GR_ERR_PARSE, "bad \\x escape in string"), false;
                        }
                        v = v * 16 + d;
                    }
                    s += 2;
                    if (v == 0) return ps_perr(p, &t, GR_ERR_PARSE, "NUL character in string"), false;
                    c = (char)v;
                    break;
                }
                default: {
                    ir_tok at = t;
                    at.col += (int)(s - t.s);
                    at.s = s;
                    return ps_perr(p, &at, GR_ERR_PARSE, "unknown escape in string"), false;
                }
                }
            }
            ir_sbuf_putc(&p->sbuf, c);
        }
    }
    if (first) return ps_unexpected(p, peek(p, 0), "a string"), false;
    ir_sbuf_cstr(&p->sbuf);
    return true;
}

const char *ps_string_interned(parser *p, bool concat) {
    if (!ps_string_lit(p, concat)) return NULL;
    return ir_intern_n(p->ctx, p->sbuf.data, p->sbuf.len);
}

bool ps_int_value(parser *p, const ir_tok *t, bool neg, int64_t *out) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < t->len; i++) {
        unsigned d = (unsigned)(t->s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) goto big;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) goto big;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
big:
    ps_perr(p, t, GR_ERR_PARSE, "integer literal out of range");
    return false;
}

static double float_value(const ir_tok *t) {
    char buf[128];
    size_t n = t->len < sizeof(buf) - 1 ? t->len : sizeof(buf) - 1;
    memcpy(buf, t->s, n);
    buf[n] = 0;
    return strtod(buf, NULL);
}


bool ps_number(parser *p, num *out) {
    memset(out, 0, sizeof(*out));
    bool neg = false;
    if (is_p(peek(p, 0), '-')) {
        skip(p);
        neg = true;
    }
    ir_tok *t = peek(p, 0);
    if (t->kind == TK_INT) {
        ir_tok tt = next(p);
        return ps_int_value(p, &tt, neg, &out->i);
    }
    if (t->kind == TK_FLOAT) {
        out->is_float = true;
        out->f = float_value(t) * (neg ? -1 : 1);
        skip(p);
        return true;
    }
    if (!neg && (tok_is(t, "True") || tok_is(t, "False"))) {
        out->is_bool = true;
        out->i = tok_is(t, "True");
        skip(p);
        return true;
    }
    if (tok_is(t, "float") && is_p(peek(p, 1), '(')) {
        ir_tok at = *t;
        skip(p);
        skip(p);
        if (!ps_string_lit(p, false)) return false;
        const char *s = p->sbuf.data;
        out->is_float = true;
        if (strcmp(s, "inf") == 0) out->f = INFINITY;
        else if (strcmp(s, "-inf") == 0) out->f = -INFINITY;
        else if (strcmp(s, "nan") == 0) out->f = NAN;
        else return ps_perr(p, &at, GR_ERR_PARSE, "unknown float constant \"%s\"", s), false;
        if (neg) out->f = -out->f;
        return ps_expect_p(p, ')', "after float(...)");
    }
    ps_unexpected(p, t, "a number");
    return false;
}

/* ---- scopes ---- */

/* A use usually names a var defined a line or two before: the small direct-mapped cache finds
 * its interned copy without a probe of the context's big string table (a cache miss). */
const char *ps_tok_intern(parser *p, const ir_tok *t) {
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < t->len; i++) h = (h ^ (unsigned char)t->s[i]) * 16777619u;
    uint32_t k = (h ^ h >> 8) & 255;
    const char *c = p->icache[k];
    /* the hash first: a new name (a definition) then reads no old, cold string */
    if (c && p->icache_h[k] == h && strncmp(c, t->s, t->len) == 0 && c[t->len] == 0) return c;
    p->icache_h[k] = h;
    bool created = false;
    c = p->icache[k] = ir__intern_new(p->ctx, t->s, t->len, &created);
    if (created) p->fresh = c;
    return c;
}

/* The scope table: a slot is the var itself, keyed by its name pointer (8 bytes a slot, not a
 * key and a value: memory per binding on big functions), sized from the line count up front
 * so it never rehashes for one-function files. Lookups mostly find vars made a line or two
 * before, still in cache. The slot's top 16 bits (above the 48-bit address) hold a tag of the
 * name, so probing past other names reads no var (at 1M bindings those are cache misses). */
static uint32_t ptab_slot_of(const char *name, uint32_t cap) {
    uint64_t k = (uint64_t)(uintptr_t)name * 0xd6e8feb86659fd93ull;
    return (uint32_t)(((k >> 32) * cap) >> 32);
}
static uint64_t ptab_tag(const char *name) {
    return ((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) & ~PTAB_PTR;
}
static ir_var *ptab_var(uint64_t slot) { return (ir_var *)(uintptr_t)(slot & PTAB_PTR); }

static uint32_t ptab_pend_slot(const char *name) {
    return (uint32_t)(((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) >> 53);
}

void ps_ptab_flush(struct ptab *t) {
    uint32_t cap = t->cap, n = t->npend;
    enum { AHEAD = 16 };
    for (uint32_t k = 0; k < n && k < AHEAD; k++)
        __builtin_prefetch(&t->s[ptab_slot_of(t->porder[k]->name, cap)], 1);
    for (uint32_t k = 0; k < n; k++) {
        if (k + AHEAD < n) __builtin_prefetch(&t->s[ptab_slot_of(t->porder[k + AHEAD]->name, cap)], 1);
        ir_var *v = t->porder[k];
        uint32_t i = ptab_slot_of(v->name, cap);
        while (t->s[i]) i = i + 1 == cap ? 0 : i + 1; /* a fresh name: not in s */
        t->s[i] = ptab_tag(v->name) | (uintptr_t)v;
        t->pend[t->ppos[k]] = NULL;
    }
    t->npend = 0;
}

static ir_var *ptab_pend_get(const struct ptab *t, const char *name) {
    for (uint32_t i = ptab_pend_slot(name); t->pend[i]; i = (i + 1) & (PTAB_PEND_SLOTS - 1))
        if (t->pend[i]->name == name) return t->pend[i];
    return NULL;
}

void ps_ptab_init(struct ptab *t, uint32_t want) {
    uint32_t cap = want < 64 ? 64 : want > (1u << 27) ? (1u << 27) : want;
    t->s = gr_zalloc_big(sizeof(*t->s) * cap);
    t->cap = cap;
    t->len = 0;
}

static void ptab_put(struct ptab *t, ir_var *v) {
    if (t->npend) ps_ptab_flush(t);
    if ((uint64_t)(t->len + 1) * 4 >= (uint64_t)t->cap * 3) {
        struct ptab old = *t;
        ps_ptab_init(t, old.cap * 2);
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.s[i]) ptab_put(t, ptab_var(old.s[i]));
        gr_free_big(old.s, sizeof(*old.s) * old.cap);
    }
    GR_ASSERT(((uintptr_t)v & ~PTAB_PTR) == 0);
    uint64_t tag = ptab_tag(v->name);
    uint32_t cap = t->cap, i = ptab_slot_of(v->name, cap);
    while (t->s[i] && !((t->s[i] & ~PTAB_PTR) == tag && ptab_var(t->s[i])->name == v->name))
        i = i + 1 == cap ? 0 : i + 1;
    if (!t->s[i]) t->len++;
    t->s[i] = tag | (uintptr_t)v;
}

static uint32_t ptab_find(const struct ptab *t, const char *name) {
    uint64_t tag = ptab_tag(name);
    uint32_t cap = t->cap, i = ptab_slot_of(name, cap);
    for (; t->s[i]; i = i + 1 == cap ? 0 : i + 1)
        if ((t->s[i] & ~PTAB_PTR) == tag && ptab_var(t->s[i])->name == name) return i;
    return UINT32_MAX;
}

/* Binds a name no scope has bound yet (see ptab_flush). */
static void ptab_put_fresh(struct ptab *t, ir_var *v) {
    if ((uint64_t)(t->len + 1) * 4 >= (uint64_t)t->cap * 3) {
        ptab_put(t, v); /* grows (after flushing) */
        return;
    }
    GR_ASSERT(((uintptr_t)v & ~PTAB_PTR) == 0);
    uint32_t i = ptab_pend_slot(v->name);
    while (t->pend[i]) i = (i + 1) & (PTAB_PEND_SLOTS - 1);
    t->pend[i] = v;
    t->ppos[t->npend] = (uint16_t)i;
    t->porder[t->npend++] = v;
    t->len++;
    if (t->npend == PTAB_PEND_MAX) ps_ptab_flush(t);
}

static ir_var *ptab_get(const struct ptab *t, const char *name) {
    if (t->npend) {
        ir_var *v = ptab_pend_get(t, name);
        if (v) return v;
    }
    uint32_t i = ptab_find(t, name);
    return i == UINT32_MAX ? NULL : ptab_var(t->s[i]);
}

/* Unbinds a name: linear-probing deletion that shifts later members of the run back. */
static void ptab_del(struct ptab *t, const char *name) {
    if (t->npend) ps_ptab_flush(t);
    uint32_t cap = t->cap, i = ptab_find(t, name);
    if (i == UINT32_MAX) return;
    for (uint32_t j = i;;) {
        j = j + 1 == cap ? 0 : j + 1;
        if (!t->s[j]) break;
        uint32_t k = ptab_slot_of(ptab_var(t->s[j])->name, cap);
        bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j); /* home in (i, j] */
        if (!stays) {
            t->s[i] = t->s[j];
            i = j;
        }
    }
    t->s[i] = 0;
    t->len--;
}

void ps_scope_bind(parser *p, const char *name, ir_var *v) {
    GR_ASSERT(v->name == name);
    if (name == p->fresh) {
        p->fresh = NULL;
        if (p->log_scope > 0) {
            undo_ent u = {GR_MAP_PTR(name), 0, false};
            gr_vec_push(&p->undo, u);
        }
        ptab_put_fresh(&p->scope, v);
        return;
    }
    if (p->log_scope > 0) {
        undo_ent u = {GR_MAP_PTR(name), 0, false};
        u.old = GR_MAP_PTR(ptab_get(&p->scope, name));
        u.had = u.old != 0;
        gr_vec_push(&p->undo, u);
    }
    ptab_put(&p->scope, v);
}

void ps_scope_restore(parser *p, uint32_t mark) {
    while (p->undo.len > mark) {
        undo_ent u = p->undo.data[--p->undo.len];
        if (u.old) ptab_put(&p->scope, (ir_var *)(uintptr_t)u.old);
        else ptab_del(&p->scope, (const char *)(uintptr_t)u.key);
    }
}

void ps_restore(gr_map *m, void *vec_, uint32_t mark) {
    GR_VEC(undo_ent) *vec = vec_;
    while (vec->len > mark) {
        undo_ent u = vec->data[--vec->len];
        if (u.had) gr_map_put(m, u.key, u.old);
        else gr_map_put(m, u.key, 0); /* 0 = unbound */
    }
}

ir_var *ps_scope_get(parser *p, const char *name) { return ptab_get(&p->scope, name); }

void ps_sym_define(parser *p, const char *name, const ir_prim *v) {
    undo_ent u = {GR_MAP_PTR(name), 0, false};
    u.had = gr_map_get(&p->syms, u.key, &u.old);
    gr_vec_push(&p->sym_undo, u);
    gr_map_put(&p->syms, GR_MAP_PTR(name), GR_MAP_PTR(v));
}

const ir_prim *ps_sym_get(parser *p, const char *name) {
    return (const ir_prim *)(uintptr_t)gr_map_get_or(&p->syms, GR_MAP_PTR(name), 0);
}

/* ---- spans ---- */

const ir_span *ps_parse_span(parser *p, bool *ok) {
    *ok = false;
    if (tok_is(peek(p, 0), "none")) {
        skip(p);
        *ok = true;
        return NULL;
    }
    bool list = accept_p(p, '[');
    const ir_span *parts_local[16];
    GR_VEC(const ir_span *) parts = {0};
    const ir_span *result = NULL;
    uint32_t n = 0;
    for (;;) {
        ir_loc l;
        memset(&l, 0, sizeof(l));
        ir_tok at = *peek(p, 0);
        const char *src = ps_string_interned(p, false);
        if (!src) goto out;
        if (!src[0]) {
            ps_perr(p, &at, GR_ERR_PARSE, "empty span source");
            goto out;
        }
        l.source = src;
        if (accept_p(p, ':')) {
            int64_t v[4] = {0};
            int nv = 0;
            for (;;) {
                ir_tok t = *peek(p, 0);
                if (!ps_expect_kind(p, TK_INT, "a line or column number")) goto out;
                if (!ps_int_value(p, &t, false, &v[nv])) goto out;
                if (v[nv] > INT32_MAX) {
                    ps_perr(p, &t, GR_ERR_PARSE, "line or column number out of range");
                    goto out;
                }
                nv++;
                if (nv == 1 || nv == 3) {
                    if (!ps_expect_p(p, ':', "in a span location")) goto out;
                } else if (nv == 2 && is_p(peek(p, 0), '-')) {
                    skip(p);
                } else {
                    break;
                }
            }
            l.line = (int32_t)v[0];
            l.col = (int32_t)v[1];
            l.end_line = (int32_t)v[2];
            l.end_col = (int32_t)v[3];
        }
        if (accept_p(p, '!')) l.is_output = 1;
        const ir_span *s = ir__span_interned(p->ctx, &l);
        if (n < 16) parts_local[n] = s;
        else {
            if (n == 16)
                for (int k = 0; k < 16; k++) gr_vec_push(&parts, parts_local[k]);
            gr_vec_push(&parts, s);
        }
        n++;
        if (!list) break;
        if (accept_p(p, ',')) {
            if (is_p(peek(p, 0), ']')) break;
            continue;
        }
        break;
    }
    if (list && !ps_expect_p(p, ']', "to close the span list")) goto out;
    result = ir_span_seq(p->ctx, n <= 16 ? parts_local : parts.data, n);
    *ok = true;
out:
    gr_vec_free(&parts);
    return result;
}


/* `span: "name"` or `span: "name"!` alone: the common form (one per imported layer),
 * read without a sub-lexer. */
static bool span_comment_fast(parser *p, const ir_tok *t, span_fields *f) {
    const char *s = t->s, *e = t->s + t->len;
    while (s < e && *s == ' ') s++;
    if (e - s < 8 || memcmp(s, "span:", 5) != 0) return false;
    s += 5;
    while (s < e && *s == ' ') s++;
    if (s >= e || *s != '"') return false;
    const char *q = ++s;
    while (q < e && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (q >= e || *q != '"' || q == s) return false;
    const char *r = q + 1;
    bool out = r < e && *r == '!';
    if (out) r++;
    while (r < e && *r == ' ') r++;
    if (r != e) return false;
    f->has_span = true;
    f->span = ir__span_named_n(p->ctx, s, (size_t)(q - s), out);
    return true;
}

bool ps_parse_span_comment(parser *p, const ir_tok *t, span_fields *f) {
    if (span_comment_fast(p, t, f)) return true;
    lexsave sv;
    ps_push_sub(p, &sv, t->s, t->s + t->len, t);
    bool ok = true;
    for (;;) {
        ir_tok k = *peek(p, 0);
        bool *has;
        const ir_span **dst;
        if (tok_is(&k, "span")) has = &f->has_span, dst = &f->span;
        else if (tok_is(&k, "var_span")) has = &f->has_var, dst = &f->var;
        else if (tok_is(&k, "seq_span")) has = &f->has_seq, dst = &f->seq;
        else {
            ps_unexpected(p, &k, "span, var_span or seq_span");
            ok = false;
            break;
        }
        skip(p);
        if (*has) {
            ps_perr(p, &k, GR_ERR_PARSE, "span field given twice");
            ok = false;
            break;
        }
        if (!ps_expect_p(p, ':', "after the span field name")) {
            ok = false;
            break;
        }
        *dst = ps_parse_span(p, &ok);
        if (!ok) break;
        *has = true;
        if (!accept_p(p, ';')) break;
    }
    if (ok && peek(p, 0)->kind != TK_EOF) {
        ps_unexpected(p, peek(p, 0), "end of the span comment");
        ok = false;
    }
    ps_pop_lex(p, &sv);
    return ok && !p->failed;
}

/* An optional trailing span comment, then the end of the line. */
bool ps_end_line(parser *p, span_fields *f) {
    memset(f, 0, sizeof(*f));
    if (peek(p, 0)->kind == TK_SPANC) {
        ir_tok t = next(p);
        f->tok = t;
        if (!ps_parse_span_comment(p, &t, f)) return false;
    }
    return ps_expect_kind(p, TK_NEWLINE, "end of line");
}


/* Sets the span of a node this parse just built. */
bool ps_set_span(parser *p, const ir_tok *at, ir_expr *e, const ir_span *s) {
    if (!ir_text_own_span(e))
        return ps_perr(p, at, GR_ERR_PARSE,
                    "a %s keeps its span elsewhere (variables at their definition, constants in "
                    "the metadata section)", ir_expr_kind_name(e->kind)), false;
    e->span = s;
    return true;
}
