/* The text format parser: recursive descent over the tokens of ir/lexer.c, building nodes
 * through the block builder (ir/builder.h) so struct info is inferred as the file is read.
 * Syntax reference: docs/text-format.md. */
#include "ir/parser.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/ctx_impl.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "ir/parser_impl.h"
#include "ir/text_impl.h"
#include "base/tensor.h"

enum { MAX_DEPTH = 200, MAX_DIMS = 64 };

typedef struct undo_ent {
    uint64_t key, old;
    bool had;
} undo_ent;

typedef struct fsig {
    ir_gvar *gvar;
    uint32_t sym_start, sym_n;   /* into sigsyms: symbolic vars made by the signature */
} fsig;

typedef struct psym {
    const char *name;
    const ir_prim *var;
} psym;

typedef struct parser {
    ir_ctx_t *ctx;
    const char *file;
    const char *src;
    size_t len;
    gr_diag *diag;
    gr_diag tmp;                 /* builder / op-table messages, re-reported with a position */
    ir_lexer lx;
    ir_tok la[8];
    int nla;
    bool failed;
    int depth;
    ir_module *mod;
    struct ptab {                /* scope: ir_vars by their interned name (open addressing) */
        uint64_t *s;             /* name tag << 48 | ir_var * (0 = empty) */
        uint32_t cap, len;       /* len counts the waiting vars too */
        uint32_t npend;          /* vars of fresh names waiting to enter s (ptab_put_fresh) */
        ir_var *pend[2048];      /* ... by a hash of their name */
        ir_var *porder[512];     /* ... in arrival order */
        uint16_t ppos[512];      /* ... and their index in pend */
    } scope;
    const char *fresh;           /* the last name tok_intern made (in no scope yet) */
    GR_VEC(undo_ent) undo;
    int log_scope;               /* > 0: record scope changes for restoring */
    gr_map syms;                 /* interned name -> symbolic var */
    GR_VEC(undo_ent) sym_undo;
    bool sig_mode;               /* in a signature: unknown dim names define symbolic vars */
    gr_map opcache;              /* hash of dotted name -> op def */
    GR_VEC(ir_expr *) estack;
    GR_VEC(const char *) kstack;
    GR_VEC(ir_attr) vstack;
    GR_VEC(const ir_sinfo *) sstack;
    GR_VEC(const ir_prim *) pstack;
    GR_VEC(ir_var *) vars;
    ir_const **consts;
    uint32_t nconsts;
    bool have_meta;
    GR_VEC(fsig) sigs;
    GR_VEC(psym) sigsyms;
    gr_map sigmap;               /* interned function name -> index + 1 in sigs */
    ir_sbuf sbuf;
    char name[256];              /* dotted names */
    gr_map *written_attrs;       /* ir_parse_opts.written_attrs (NULL: not recorded) */
    bool lenient;                /* ir_parse_opts.lenient */
    const char *last_end;        /* end of the last consumed token */
    const char *drop_from;       /* non-NULL: src is a file mapping; pages before this are
                                    still resident (see drop_behind) */
    uint64_t sym_lookups;        /* symbolic names resolved so far */
    const char *icache[256];     /* recently interned names, by a hash of their text */
    uint32_t icache_h[256];      /* ... and that hash */
    struct annot_cache {         /* recent annotation texts without symbolic names */
        const char *text;
        uint32_t len;
        const ir_sinfo *sinfo;
    } acache[4];
    uint32_t acache_next;
    struct tir_fn {              /* `@T.prim_func` blocks, kept verbatim (extract_tir) */
        const char *name, *text;
        int line;
        bool priv;
    } *tirs;
    uint32_t ntirs, next_tir;
    char *own_src;               /* a copy of the text with the TIR blocks blanked */
    gr_map typevars;             /* names declared `n = TypeVar("n")` before the class */
    const char *cls_name;        /* the class name: `cls = Module` and `Module.f(...)` */
    const char *cls_alias[4];    /* names bound to the class (`cls = Module`) */
    uint32_t ncls_alias;
} parser;

/* The scratch diag is only ever set on an error; clearing it is a no-op otherwise. */
#define CLEAR_TMP(p) do { if ((p)->tmp.code != GR_OK || (p)->tmp.msg[0]) gr_diag_clear(&(p)->tmp); } while (0)

/* ---- errors ---- */

static void *perr(parser *p, const ir_tok *t, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void *perr(parser *p, const ir_tok *t, gr_status code, const char *fmt, ...) {
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

static ir_tok *peek(parser *p, int k) {
    if (k < p->nla) return &p->la[k];
    while (p->nla <= k) {
        ir_tok *t = &p->la[p->nla++];
        ir_lex_next(&p->lx, t);
        if (t->kind == TK_ERROR) perr(p, t, GR_ERR_PARSE, "%s", t->msg);
    }
    return &p->la[k];
}

/* Drops the current token (next() without the copy, for callers that ignore it). */
static void skip(parser *p) {
    const ir_tok *t = peek(p, 0);
    p->last_end = t->s + t->len;
    if (--p->nla > 0) /* usually the lookahead holds one token: nothing to shift */
        memmove(p->la, p->la + 1, sizeof(ir_tok) * (size_t)p->nla);
}

static ir_tok next(parser *p) {
    ir_tok t = *peek(p, 0);
    skip(p);
    return t;
}

/* A file mapped by ir_parse_file is read once, front to back: the pages well behind the
 * cursor are given back (MADV_DONTNEED on a clean private file mapping only drops them; a later
 * read, e.g. for an error message, faults them in again from the page cache), so a big file
 * does not stay resident while the IR built from it grows. */
enum { DROP_STEP = 4 << 20, DROP_MARGIN = 1 << 20 };
static void drop_behind(parser *p) {
    if (!p->drop_from) return;
    const char *at = p->nla ? p->la[0].s : p->lx.p;
    if (at - p->drop_from < DROP_STEP + DROP_MARGIN || at < p->src || at > p->src + p->len) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const char *lim = (const char *)((uintptr_t)(at - DROP_MARGIN) & ~(page - 1));
    if (lim <= p->drop_from) return;
    madvise((void *)(uintptr_t)p->drop_from, (size_t)(lim - p->drop_from), MADV_DONTNEED);
    p->drop_from = lim;
}

static bool is_p(const ir_tok *t, char c) { return t->kind == TK_PUNCT && t->ch == c; }
static bool tok_is(const ir_tok *t, const char *s) {
    size_t n = strlen(s);
    return t->kind == TK_NAME && t->len == n && memcmp(t->s, s, n) == 0;
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

static void *unexpected(parser *p, const ir_tok *t, const char *what) {
    const char *d = tok_desc(t);
    if (d) return perr(p, t, GR_ERR_PARSE, "expected %s, found %s", what, d);
    return perr(p, t, GR_ERR_PARSE, "expected %s, found '%.*s'", what,
                (int)(t->len > 40 ? 40 : t->len), t->s);
}

static bool expect_p(parser *p, char c, const char *what) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (!is_p(t, c)) {
        char buf[64];
        snprintf(buf, sizeof(buf), "'%c' %s", c, what);
        unexpected(p, t, buf);
        return false;
    }
    skip(p);
    return true;
}

static bool accept_p(parser *p, char c) {
    if (is_p(peek(p, 0), c)) {
        skip(p);
        return true;
    }
    return false;
}

static bool expect_kind(parser *p, ir_tok_kind k, const char *what) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (t->kind != k) {
        unexpected(p, t, what);
        return false;
    }
    skip(p);
    return true;
}

static bool expect_name(parser *p, const char *s) {
    if (p->failed) return false;
    ir_tok *t = peek(p, 0);
    if (!tok_is(t, s)) {
        char buf[80];
        snprintf(buf, sizeof(buf), "'%s'", s);
        unexpected(p, t, buf);
        return false;
    }
    skip(p);
    return true;
}

/* `X.Y` at the cursor: two names joined by a dot. */
static bool at_dotted(parser *p, const char *a, const char *b) {
    return tok_is(peek(p, 0), a) && is_p(peek(p, 1), '.') && tok_is(peek(p, 2), b);
}

static bool expect_dotted(parser *p, const char *a, const char *b) {
    return expect_name(p, a) && expect_p(p, '.', "") && expect_name(p, b);
}

static bool enter(parser *p, const ir_tok *t) {
    if (++p->depth > MAX_DEPTH) {
        perr(p, t, GR_ERR_PARSE, "nesting too deep (limit %d)", MAX_DEPTH);
        return false;
    }
    return true;
}
#define LEAVE(p) ((p)->depth--)

typedef struct lexsave {
    ir_lexer lx;
    ir_tok la[8];
    int nla;
} lexsave;

static const char *line_start_of(parser *p, const char *s) {
    while (s > p->src && s[-1] != '\n') s--;
    return s;
}

static void push_sub(parser *p, lexsave *sv, const char *s, const char *e, const ir_tok *at) {
    sv->lx = p->lx;
    memcpy(sv->la, p->la, sizeof(p->la));
    sv->nla = p->nla;
    ir_lex_init_sub(&p->lx, p->src, s, e, at->line, line_start_of(p, s));
    p->nla = 0;
}

static void pop_lex(parser *p, const lexsave *sv) {
    p->lx = sv->lx;
    memcpy(p->la, sv->la, sizeof(p->la));
    p->nla = sv->nla;
}

/* ---- literals ---- */

/* Decodes a string token (adjacent literals concatenated when `concat`) into p->sbuf. */
static bool string_lit(parser *p, bool concat) {
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
                            return perr(p, &at, GR_ERR_PARSE, "bad \\x escape in string"), false;
                        }
                        v = v * 16 + d;
                    }
                    s += 2;
                    if (v == 0) return perr(p, &t, GR_ERR_PARSE, "NUL character in string"), false;
                    c = (char)v;
                    break;
                }
                default: {
                    ir_tok at = t;
                    at.col += (int)(s - t.s);
                    at.s = s;
                    return perr(p, &at, GR_ERR_PARSE, "unknown escape in string"), false;
                }
                }
            }
            ir_sbuf_putc(&p->sbuf, c);
        }
    }
    if (first) return unexpected(p, peek(p, 0), "a string"), false;
    ir_sbuf_cstr(&p->sbuf);
    return true;
}

static const char *string_interned(parser *p, bool concat) {
    if (!string_lit(p, concat)) return NULL;
    return ir_intern_n(p->ctx, p->sbuf.data, p->sbuf.len);
}

static bool int_value(parser *p, const ir_tok *t, bool neg, int64_t *out) {
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
    perr(p, t, GR_ERR_PARSE, "integer literal out of range");
    return false;
}

static double float_value(const ir_tok *t) {
    char buf[128];
    size_t n = t->len < sizeof(buf) - 1 ? t->len : sizeof(buf) - 1;
    memcpy(buf, t->s, n);
    buf[n] = 0;
    return strtod(buf, NULL);
}

/* A number with an optional sign, or True/False, or float("inf"/"nan"). */
typedef struct num {
    bool is_float, is_bool;
    int64_t i;
    double f;
} num;

static bool number(parser *p, num *out) {
    memset(out, 0, sizeof(*out));
    bool neg = false;
    if (is_p(peek(p, 0), '-')) {
        skip(p);
        neg = true;
    }
    ir_tok *t = peek(p, 0);
    if (t->kind == TK_INT) {
        ir_tok tt = next(p);
        return int_value(p, &tt, neg, &out->i);
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
        if (!string_lit(p, false)) return false;
        const char *s = p->sbuf.data;
        out->is_float = true;
        if (strcmp(s, "inf") == 0) out->f = INFINITY;
        else if (strcmp(s, "-inf") == 0) out->f = -INFINITY;
        else if (strcmp(s, "nan") == 0) out->f = NAN;
        else return perr(p, &at, GR_ERR_PARSE, "unknown float constant \"%s\"", s), false;
        if (neg) out->f = -out->f;
        return expect_p(p, ')', "after float(...)");
    }
    unexpected(p, t, "a number");
    return false;
}

/* ---- scopes ---- */

/* A use usually names a var defined a line or two before: the small direct-mapped cache finds
 * its interned copy without a probe of the context's big string table (a cache miss). */
static const char *tok_intern(parser *p, const ir_tok *t) {
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
/* Keys are interned names, slotted by a multiplicative hash of the address: slots taken
 * straight from address bits (k >> 4 % cap) kept neighbouring lines in neighbouring slots, but
 * the arena's chunk placement then decides the clustering, and some layouts made probe runs
 * thousands long (a 100k-binding parse 30x slower). Fresh names reach the table in prefetched
 * batches (ptab_flush), so a random slot costs no stall. Any capacity (not a power of two): 1M
 * names take 1.5M slots, not 2M (memory per binding). */
#define PTAB_PTR ((((uint64_t)1) << 48) - 1)
static uint32_t ptab_slot_of(const char *name, uint32_t cap) {
    uint64_t k = (uint64_t)(uintptr_t)name * 0xd6e8feb86659fd93ull;
    return (uint32_t)(((k >> 32) * cap) >> 32);
}
static uint64_t ptab_tag(const char *name) {
    return ((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) & ~PTAB_PTR;
}
static ir_var *ptab_var(uint64_t slot) { return (ir_var *)(uintptr_t)(slot & PTAB_PTR); }

/* A fresh name (one this parse just interned) is bound in no scope, so binding it needs no
 * probe of the big table: its var waits in a small cache-resident table (pend) and enters s
 * with PTAB_PEND_MAX others in one batch, with prefetches (at 1M bindings each probe of s is a
 * cache miss). Lookups check the waiting vars first: they are the recent definitions. */
#define PTAB_PEND_SLOTS 2048u
#define PTAB_PEND_MAX 512u
static uint32_t ptab_pend_slot(const char *name) {
    return (uint32_t)(((uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull) >> 53);
}

static void ptab_flush(struct ptab *t) {
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

static void ptab_init(struct ptab *t, uint32_t want) {
    uint32_t cap = want < 64 ? 64 : want > (1u << 27) ? (1u << 27) : want;
    t->s = gr_zalloc_big(sizeof(*t->s) * cap);
    t->cap = cap;
    t->len = 0;
}

static void ptab_put(struct ptab *t, ir_var *v) {
    if (t->npend) ptab_flush(t);
    if ((uint64_t)(t->len + 1) * 4 >= (uint64_t)t->cap * 3) {
        struct ptab old = *t;
        ptab_init(t, old.cap * 2);
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
    if (t->npend == PTAB_PEND_MAX) ptab_flush(t);
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
    if (t->npend) ptab_flush(t);
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

static void scope_bind(parser *p, const char *name, ir_var *v) {
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

static void scope_restore(parser *p, uint32_t mark) {
    while (p->undo.len > mark) {
        undo_ent u = p->undo.data[--p->undo.len];
        if (u.old) ptab_put(&p->scope, (ir_var *)(uintptr_t)u.old);
        else ptab_del(&p->scope, (const char *)(uintptr_t)u.key);
    }
}

static void restore(gr_map *m, void *vec_, uint32_t mark) {
    GR_VEC(undo_ent) *vec = vec_;
    while (vec->len > mark) {
        undo_ent u = vec->data[--vec->len];
        if (u.had) gr_map_put(m, u.key, u.old);
        else gr_map_put(m, u.key, 0); /* 0 = unbound */
    }
}

static ir_var *scope_get(parser *p, const char *name) { return ptab_get(&p->scope, name); }

static void sym_define(parser *p, const char *name, const ir_prim *v) {
    undo_ent u = {GR_MAP_PTR(name), 0, false};
    u.had = gr_map_get(&p->syms, u.key, &u.old);
    gr_vec_push(&p->sym_undo, u);
    gr_map_put(&p->syms, GR_MAP_PTR(name), GR_MAP_PTR(v));
}

static const ir_prim *sym_get(parser *p, const char *name) {
    return (const ir_prim *)(uintptr_t)gr_map_get_or(&p->syms, GR_MAP_PTR(name), 0);
}

/* ---- spans ---- */

static const ir_span *parse_span(parser *p, bool *ok) {
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
        const char *src = string_interned(p, false);
        if (!src) goto out;
        if (!src[0]) {
            perr(p, &at, GR_ERR_PARSE, "empty span source");
            goto out;
        }
        l.source = src;
        if (accept_p(p, ':')) {
            int64_t v[4] = {0};
            int nv = 0;
            for (;;) {
                ir_tok t = *peek(p, 0);
                if (!expect_kind(p, TK_INT, "a line or column number")) goto out;
                if (!int_value(p, &t, false, &v[nv])) goto out;
                if (v[nv] > INT32_MAX) {
                    perr(p, &t, GR_ERR_PARSE, "line or column number out of range");
                    goto out;
                }
                nv++;
                if (nv == 1 || nv == 3) {
                    if (!expect_p(p, ':', "in a span location")) goto out;
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
    if (list && !expect_p(p, ']', "to close the span list")) goto out;
    result = ir_span_seq(p->ctx, n <= 16 ? parts_local : parts.data, n);
    *ok = true;
out:
    gr_vec_free(&parts);
    return result;
}

typedef struct span_fields {
    bool has_span, has_var, has_seq;
    const ir_span *span, *var, *seq;
    ir_tok tok;
} span_fields;

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

static bool parse_span_comment(parser *p, const ir_tok *t, span_fields *f) {
    if (span_comment_fast(p, t, f)) return true;
    lexsave sv;
    push_sub(p, &sv, t->s, t->s + t->len, t);
    bool ok = true;
    for (;;) {
        ir_tok k = *peek(p, 0);
        bool *has;
        const ir_span **dst;
        if (tok_is(&k, "span")) has = &f->has_span, dst = &f->span;
        else if (tok_is(&k, "var_span")) has = &f->has_var, dst = &f->var;
        else if (tok_is(&k, "seq_span")) has = &f->has_seq, dst = &f->seq;
        else {
            unexpected(p, &k, "span, var_span or seq_span");
            ok = false;
            break;
        }
        skip(p);
        if (*has) {
            perr(p, &k, GR_ERR_PARSE, "span field given twice");
            ok = false;
            break;
        }
        if (!expect_p(p, ':', "after the span field name")) {
            ok = false;
            break;
        }
        *dst = parse_span(p, &ok);
        if (!ok) break;
        *has = true;
        if (!accept_p(p, ';')) break;
    }
    if (ok && peek(p, 0)->kind != TK_EOF) {
        unexpected(p, peek(p, 0), "end of the span comment");
        ok = false;
    }
    pop_lex(p, &sv);
    return ok && !p->failed;
}

/* An optional trailing span comment, then the end of the line. */
static bool end_line(parser *p, span_fields *f) {
    memset(f, 0, sizeof(*f));
    if (peek(p, 0)->kind == TK_SPANC) {
        ir_tok t = next(p);
        f->tok = t;
        if (!parse_span_comment(p, &t, f)) return false;
    }
    return expect_kind(p, TK_NEWLINE, "end of line");
}


/* Sets the span of a node this parse just built. */
static bool set_span(parser *p, const ir_tok *at, ir_expr *e, const ir_span *s) {
    if (!ir_text_own_span(e))
        return perr(p, at, GR_ERR_PARSE,
                    "a %s keeps its span elsewhere (variables at their definition, constants in "
                    "the metadata section)", ir_expr_kind_name(e->kind)), false;
    e->span = s;
    return true;
}

/* ---- symbolic integer expressions ---- */

static const ir_prim *prim_expr(parser *p, bool define);

static const ir_prim *prim_quoted(parser *p) {
    ir_tok t = next(p);
    lexsave sv;
    push_sub(p, &sv, t.s + 1, t.s + t.len - 1, &t);
    const ir_prim *r = prim_expr(p, true);
    if (r && peek(p, 0)->kind != TK_EOF) r = unexpected(p, peek(p, 0), "end of the dimension");
    pop_lex(p, &sv);
    return r;
}

static const ir_prim *prim_atom(parser *p, bool define) {
    ir_tok t = *peek(p, 0);
    if (t.kind == TK_INT) {
        skip(p);
        int64_t v;
        return int_value(p, &t, false, &v) ? ir_prim_int(p->ctx, v) : NULL;
    }
    if (t.kind == TK_STRING) {
        p->sym_lookups++;
        return prim_quoted(p);
    }
    if (is_p(&t, '(')) {
        skip(p);
        const ir_prim *r = prim_expr(p, define);
        if (!r || !expect_p(p, ')', "to close the parenthesis")) return NULL;
        return r;
    }
    if (t.kind == TK_NAME) {
        if (tok_is(&t, "T") && is_p(peek(p, 1), '.')) {
            /* T.int64(expr) */
            skip(p);
            skip(p);
            if (!expect_name(p, "int64") || !expect_p(p, '(', "after T.int64")) return NULL;
            const ir_prim *r = prim_expr(p, define);
            if (!r || !expect_p(p, ')', "after the value")) return NULL;
            return r;
        }
        skip(p);
        p->sym_lookups++;
        const char *name = tok_intern(p, &t);
        const ir_prim *v = sym_get(p, name);
        if (!v) {
            if (!define && !p->sig_mode && !gr_map_get(&p->typevars, GR_MAP_PTR(name), NULL))
                return perr(p, &t, GR_ERR_PARSE,
                            "undefined symbolic variable '%s' (declare it with `%s = T.int64()`)",
                            name, name);
            v = ir_prim_var(p->ctx, name);
            sym_define(p, name, v);
        }
        return v;
    }
    return unexpected(p, &t, "a dimension");
}

static const ir_prim *prim_unary(parser *p, bool define) {
    ir_tok t = *peek(p, 0);
    if (is_p(&t, '-')) {
        skip(p);
        if (peek(p, 0)->kind == TK_INT) { /* -9223372036854775808 */
            ir_tok n = next(p);
            int64_t v;
            return int_value(p, &n, true, &v) ? ir_prim_int(p->ctx, v) : NULL;
        }
        if (!enter(p, &t)) return NULL;
        const ir_prim *a = prim_unary(p, define);
        LEAVE(p);
        return a ? ir_prim_sub(p->ctx, ir_prim_int(p->ctx, 0), a) : NULL;
    }
    if (!enter(p, &t)) return NULL;
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
            if (!a) return perr(p, &t, GR_ERR_PARSE, "division by zero in a dimension");
        }
    }
    return a;
}

static const ir_prim *prim_expr(parser *p, bool define) {
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
static int prim_list(parser *p, char open, char close) {
    if (!expect_p(p, open, "to open the dimension list")) return -1;
    int n = 0;
    while (!is_p(peek(p, 0), close)) {
        const ir_prim *d = prim_expr(p, false);
        if (!d) return -1;
        if (n >= MAX_DIMS) return perr(p, peek(p, 0), GR_ERR_PARSE, "too many dimensions (limit %d)", MAX_DIMS), -1;
        gr_vec_push(&p->pstack, d);
        n++;
        if (!accept_p(p, ',')) break;
    }
    if (!expect_p(p, close, "to close the dimension list")) return -1;
    return n;
}

/* ---- struct info ---- */

static bool dtype_lit(parser *p, ir_dtype *out) {
    ir_tok t = *peek(p, 0);
    if (!string_lit(p, false)) return false;
    if (!ir_dtype_parse(p->sbuf.data, out))
        return perr(p, &t, GR_ERR_PARSE, "unknown dtype \"%s\"", p->sbuf.data), false;
    return true;
}

static const ir_sinfo *parse_sinfo(parser *p);

static bool kw_at(parser *p, const char *name) {
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
            if (kw_at(p, "ndim")) {
                skip(p), skip(p);
                num n;
                if (!number(p, &n)) return NULL;
                if (n.is_float || n.is_bool || n.i < -1 || n.i > MAX_DIMS)
                    return perr(p, at, GR_ERR_PARSE, "bad ndim");
                ndim = n.i;
            } else if (kw_at(p, "dtype")) {
                skip(p), skip(p);
                if (!dtype_lit(p, &dt)) return NULL;
            } else if (peek(p, 0)->kind == TK_STRING && (pos_done || ndims >= 0)) {
                if (!dtype_lit(p, &dt)) return NULL;
            } else if (!pos_done && is_p(peek(p, 0), '(')) {
                ndims = prim_list(p, '(', ')');
                if (ndims < 0) return NULL;
                pos_done = true;
            } else if (!pos_done && tok_is(peek(p, 0), "None")) {
                skip(p);
                pos_done = true;
            } else {
                return unexpected(p, peek(p, 0), "a shape, ndim= or dtype=");
            }
            if (!accept_p(p, ',')) break;
        }
        if (!expect_p(p, ')', "to close R.Tensor(")) return NULL;
    }
    const ir_sinfo *r;
    if (ndims >= 0) {
        if (ndim >= 0 && ndim != ndims)
            return perr(p, at, GR_ERR_PARSE, "ndim=%" PRId64 " does not match a shape of rank %d", ndim, ndims);
        r = ir_sinfo_tensor(p->ctx, dt, ndims, gr_vec_at(p->pstack, mark));
    } else {
        r = ir_sinfo_tensor(p->ctx, dt, (int32_t)ndim, NULL);
    }
    p->pstack.len = mark;
    return r;
}

static const ir_sinfo *sinfo_list(parser *p, char close, uint32_t *n) {
    uint32_t mark = p->sstack.len;
    while (!is_p(peek(p, 0), close)) {
        const ir_sinfo *s = parse_sinfo(p);
        if (!s) return NULL;
        gr_vec_push(&p->sstack, s);
        if (!accept_p(p, ',')) break;
    }
    if (!expect_p(p, close, "to close the list")) return NULL;
    *n = p->sstack.len - mark;
    return (const ir_sinfo *)1; /* items on sstack from mark */
}

/* A purity flag after R.Callable's return: `, True` or `, purity=True` (TVM prints it; graft
 * does not model impure function types, so only True is accepted). */
static bool callable_purity(parser *p) {
    if (!accept_p(p, ',')) return true;
    if (is_p(peek(p, 0), ')')) return true;
    if (kw_at(p, "purity")) skip(p), skip(p);
    ir_tok t = *peek(p, 0);
    num n;
    if (!number(p, &n)) return false;
    if (!n.is_bool) return unexpected(p, &t, "True or False (the purity)"), false;
    if (!n.i) return perr(p, &t, GR_ERR_UNSUPPORTED, "impure callables (R.Callable(..., False)) are not supported"), false;
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
        return perr(p, &dt, GR_ERR_PARSE, "unknown struct info 'T.%.*s'", (int)dt.len, dt.s);
    }
    if (!tok_is(&at, "R") || !is_p(peek(p, 1), '.') || peek(p, 2)->kind != TK_NAME)
        return unexpected(p, &at, "a struct info annotation (R.Tensor, R.Tuple, ...)");
    skip(p);
    skip(p);
    ir_tok k = next(p);
    if (tok_is(&k, "Tensor")) return sinfo_tensor(p, &at);
    if (tok_is(&k, "Object") || tok_is(&k, "Any")) return ir_sinfo_object(p->ctx);
    if (tok_is(&k, "Tuple")) {
        uint32_t mark = p->sstack.len, n = 0;
        if (accept_p(p, '(') && !sinfo_list(p, ')', &n)) return NULL;
        const ir_sinfo *r = ir_sinfo_tuple(p->ctx, n, gr_vec_at(p->sstack, mark));
        p->sstack.len = mark;
        return r;
    }
    if (tok_is(&k, "Shape")) {
        if (!accept_p(p, '(')) return ir_sinfo_shape(p->ctx, -1, NULL);
        const ir_sinfo *r = NULL;
        if (kw_at(p, "ndim")) {
            skip(p), skip(p);
            num n;
            if (!number(p, &n)) return NULL;
            if (n.is_float || n.is_bool || n.i < -1 || n.i > MAX_DIMS) return perr(p, &at, GR_ERR_PARSE, "bad ndim");
            r = ir_sinfo_shape(p->ctx, (int32_t)n.i, NULL);
        } else {
            uint32_t mark = p->pstack.len;
            int nd = prim_list(p, '[', ']');
            if (nd < 0) return NULL;
            r = ir_sinfo_shape(p->ctx, nd, gr_vec_at(p->pstack, mark));
            p->pstack.len = mark;
        }
        accept_p(p, ',');
        return expect_p(p, ')', "to close R.Shape(") ? r : NULL;
    }
    if (tok_is(&k, "Prim")) {
        if (!expect_p(p, '(', "after R.Prim")) return NULL;
        const ir_sinfo *r = NULL;
        ir_dtype dt = IR_DTYPE_I64;
        const ir_prim *v = NULL;
        bool have_dt = false;
        while (!is_p(peek(p, 0), ')')) {
            if (kw_at(p, "value") && !v) {
                skip(p), skip(p);
                v = prim_expr(p, false);
                if (!v) return NULL;
            } else if (!have_dt && !v) {
                if (kw_at(p, "dtype")) skip(p), skip(p);
                if (!dtype_lit(p, &dt)) return NULL;
                have_dt = true;
            } else {
                return unexpected(p, peek(p, 0), "dtype or value= in R.Prim");
            }
            if (!accept_p(p, ',')) break;
        }
        if (!have_dt && !v) return unexpected(p, peek(p, 0), "a dtype or value= in R.Prim");
        r = ir_sinfo_prim(p->ctx, dt, v);
        return expect_p(p, ')', "to close R.Prim(") ? r : NULL;
    }
    if (tok_is(&k, "Callable")) {
        if (!accept_p(p, '(')) return ir_sinfo_func_opaque(p->ctx, NULL);
        if (kw_at(p, "ret")) {
            skip(p), skip(p);
            const ir_sinfo *ret = parse_sinfo(p);
            if (!ret || !callable_purity(p) || !expect_p(p, ')', "to close R.Callable(")) return NULL;
            return ir_sinfo_func_opaque(p->ctx, ret);
        }
        uint32_t mark = p->sstack.len, n = 0;
        if (!expect_p(p, '(', "for the parameter list") || !sinfo_list(p, ')', &n)) return NULL;
        if (!expect_p(p, ',', "before the return struct info")) return NULL;
        const ir_sinfo *ret = parse_sinfo(p);
        if (!ret || !callable_purity(p)) return NULL;
        if (!expect_p(p, ')', "to close R.Callable(")) return NULL;
        const ir_sinfo *r = ir_sinfo_func(p->ctx, n, gr_vec_at(p->sstack, mark), ret);
        p->sstack.len = mark;
        return r;
    }
    return perr(p, &k, GR_ERR_PARSE, "unknown struct info 'R.%.*s'", (int)k.len, k.s);
}

static const ir_sinfo *parse_sinfo(parser *p) {
    ir_tok at = *peek(p, 0);
    if (!enter(p, &at)) return NULL;
    const ir_sinfo *r = parse_sinfo_inner(p);
    LEAVE(p);
    return r;
}

/* ---- attribute values ---- */

static ir_expr *parse_expr(parser *p);

static bool parse_attr(parser *p, ir_attr *out) {
    ir_tok t = *peek(p, 0);
    if (!enter(p, &t)) return false;
    bool ok = false;
    if (t.kind == TK_STRING) {
        const char *s = string_interned(p, true);
        if (s) *out = ir_attr_str(p->ctx, s), ok = true;
    } else if (t.kind == TK_INT || t.kind == TK_FLOAT || is_p(&t, '-') || tok_is(&t, "True") ||
               tok_is(&t, "False") || (tok_is(&t, "float") && is_p(peek(p, 1), '('))) {
        num n;
        if (number(p, &n)) {
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
            if (!parse_attr(p, &a)) {
                ok = false;
                break;
            }
            gr_vec_push(&p->vstack, a);
            if (!accept_p(p, ',')) break;
        }
        if (ok) ok = expect_p(p, close, "to close the list");
        if (ok) *out = ir_attr_array(p->ctx, p->vstack.len - mark, gr_vec_at(p->vstack, mark));
        p->vstack.len = mark;
    } else if (is_p(&t, '{')) {
        skip(p);
        uint32_t mark = p->vstack.len;
        ok = true;
        while (!is_p(peek(p, 0), '}')) {
            ir_attr k, v;
            if (!parse_attr(p, &k) || !expect_p(p, ':', "after a dict key") || !parse_attr(p, &v)) {
                ok = false;
                break;
            }
            gr_vec_push(&p->vstack, k);
            gr_vec_push(&p->vstack, v);
            if (!accept_p(p, ',')) break;
        }
        if (ok) ok = expect_p(p, '}', "to close the dict");
        if (ok) {
            uint32_t n = p->vstack.len - mark;
            *out = ir_attr_array(p->ctx, n, gr_vec_at(p->vstack, mark));
            out->kind = IR_ATTR_MAP;
            out->u.arr.n = n / 2;
        }
        p->vstack.len = mark;
    } else if (t.kind == TK_NAME) {
        ir_expr *e = parse_expr(p);
        if (e) {
            if (!ir_normalize_in(p->ctx, p->mod, e, &p->tmp))
                perr(p, &t, GR_ERR_TYPE, "%s", p->tmp.msg);
            else
                *out = ir_attr_expr(e), ok = true;
        }
    } else {
        unexpected(p, &t, "an attribute value");
    }
    LEAVE(p);
    return ok && !p->failed;
}

/* ---- expressions ---- */

static ir_expr *metadata_ref(parser *p) {
    ir_tok at = next(p); /* metadata */
    if (!expect_p(p, '[', "after metadata")) return NULL;
    ir_tok kt = *peek(p, 0);
    if (!string_lit(p, false)) return NULL;
    /* "ir.GenericConst" is TVM 0.27's name for the same table */
    if (strcmp(p->sbuf.data, "relax.expr.Constant") != 0 && strcmp(p->sbuf.data, "ir.GenericConst") != 0)
        return perr(p, &kt, GR_ERR_PARSE, "unsupported metadata kind \"%s\"", p->sbuf.data);
    if (!expect_p(p, ']', "after the metadata kind") || !expect_p(p, '[', "for the constant index"))
        return NULL;
    ir_tok it = *peek(p, 0);
    if (!expect_kind(p, TK_INT, "a constant index")) return NULL;
    int64_t idx;
    if (!int_value(p, &it, false, &idx) || !expect_p(p, ']', "after the constant index")) return NULL;
    if (!p->have_meta && memmem(p->src, p->len, "# Metadata omitted", 18))
        return perr(p, &at, GR_ERR_PARSE,
                    "constant data omitted: TVM printed this module without its metadata (\"# Metadata "
                    "omitted\"), so the value of metadata[...][%" PRId64 "] is unknown; add graft's "
                    "`metadata = {...}` section (docs/text-format.md)", idx);
    if (!p->have_meta)
        return perr(p, &at, GR_ERR_PARSE,
                    "metadata section missing: the module refers to metadata[\"relax.expr.Constant\"] "
                    "but has no `metadata = {...}` section");
    if (idx >= (int64_t)p->nconsts)
        return perr(p, &it, GR_ERR_PARSE, "metadata index %" PRId64 " out of range (%u constants)",
                    idx, p->nconsts);
    return &p->consts[idx]->base;
}

static ir_expr *r_const(parser *p, const ir_tok *at) {
    if (!expect_p(p, '(', "after R.const")) return NULL;
    num n;
    if (!number(p, &n)) return NULL;
    ir_dtype dt = n.is_float ? IR_DTYPE_F32 : n.is_bool ? IR_DTYPE_BOOL : IR_DTYPE_I64;
    if (accept_p(p, ',')) {
        if (kw_at(p, "dtype")) skip(p), skip(p);
        if (!is_p(peek(p, 0), ')') && !dtype_lit(p, &dt)) return NULL;
    }
    if (!expect_p(p, ')', "to close R.const(")) return NULL;
    if (ir_dtype_is_void(dt) || dt.lanes != 1 || !ir_dtype_bytes(dt))
        return perr(p, at, GR_ERR_PARSE, "R.const needs a scalar dtype");
    rt_tensor *t = rt_tensor_new(dt, 0, NULL);
    if (!t) return perr(p, at, GR_ERR_NOMEM, "out of memory");
    if (dt.code == kDLInt && dt.bits == 64 && !n.is_float) *(int64_t *)rt_tensor_data(t) = n.i;
    else rt_tensor_set_f64(t, 0, n.is_float ? n.f : (double)n.i);
    ir_const *c = ir_const_new(p->ctx, t, NULL);
    rt_tensor_release(t);
    return &c->base;
}

static ir_expr *r_prim_value(parser *p) {
    if (!expect_p(p, '(', "after R.prim_value")) return NULL;
    ir_expr *r = NULL;
    if (tok_is(peek(p, 0), "T") && is_p(peek(p, 1), '.') && peek(p, 2)->kind == TK_NAME) {
        skip(p), skip(p);
        ir_tok dtok = next(p);
        char dn[32];
        snprintf(dn, sizeof(dn), "%.*s", (int)(dtok.len > 31 ? 31 : dtok.len), dtok.s);
        ir_dtype dt;
        if (!ir_dtype_parse(dn, &dt) || ir_dtype_is_void(dt))
            return perr(p, &dtok, GR_ERR_PARSE, "unknown dtype T.%s", dn);
        if (!expect_p(p, '(', "after the dtype")) return NULL;
        if (ir_dtype_is_float(dt)) {
            num n;
            if (!number(p, &n)) return NULL;
            r = &ir_primval_float(p->ctx, dt, n.is_float ? n.f : (double)n.i, NULL)->base;
        } else {
            const ir_prim *v = prim_expr(p, false);
            if (!v) return NULL;
            ir_primval *pv = ir_primval_int(p->ctx, v, NULL);
            pv->dtype = dt; /* fresh node, not yet published */
            if (pv->base.sinfo) pv->base.sinfo = ir_sinfo_prim(p->ctx, dt, v);
            r = &pv->base;
        }
        if (!expect_p(p, ')', "to close the typed value")) return NULL;
    } else if (peek(p, 0)->kind == TK_FLOAT ||
               (is_p(peek(p, 0), '-') && peek(p, 1)->kind == TK_FLOAT)) {
        num n;
        if (!number(p, &n)) return NULL;
        r = &ir_primval_float(p->ctx, IR_DTYPE_F64, n.f, NULL)->base;
    } else {
        const ir_prim *v = prim_expr(p, false);
        if (!v) return NULL;
        r = &ir_primval_int(p->ctx, v, NULL)->base;
    }
    return expect_p(p, ')', "to close R.prim_value(") ? r : NULL;
}

static ir_expr *call_args_generic(parser *p, ir_expr *callee) {
    /* `(` already consumed */
    uint32_t mark = p->estack.len;
    while (!is_p(peek(p, 0), ')')) {
        ir_expr *a = parse_expr(p);
        if (!a) return NULL;
        gr_vec_push(&p->estack, a);
        if (!accept_p(p, ',')) break;
    }
    if (!expect_p(p, ')', "to close the call")) return NULL;
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
                    perr(p, &k, GR_ERR_PARSE, "struct info arguments given twice");
                    goto out;
                }
                char close = accept_p(p, '[') ? ']' : accept_p(p, '(') ? ')' : 0;
                if (close) {
                    uint32_t n;
                    if (!sinfo_list(p, close, &n)) goto out;
                    if (call_like && close == ']') {
                        /* out_ty=[A, B]: one tuple struct info, as TVM holds it */
                        const ir_sinfo *t = ir_sinfo_tuple(p->ctx, n, p->sstack.data + smark);
                        p->sstack.len = smark;
                        gr_vec_push(&p->sstack, t);
                    }
                } else {
                    const ir_sinfo *s = parse_sinfo(p);
                    if (!s) goto out;
                    gr_vec_push(&p->sstack, s);
                }
            } else {
                ir_attr a;
                if (!parse_attr(p, &a)) goto out;
                gr_vec_push(&p->kstack, tok_intern(p, &k));
                gr_vec_push(&p->vstack, a);
            }
        } else {
            if (kw_seen) {
                perr(p, peek(p, 0), GR_ERR_PARSE, "positional argument after a keyword argument");
                goto out;
            }
            ir_expr *a;
            const ir_tok *n0 = peek(p, is_p(peek(p, 0), '-') ? 1 : 0);
            if (n0->kind == TK_INT || n0->kind == TK_FLOAT) {
                /* a bare number, `R.clip(x, 0, 4)`: a PrimValue as TVM's parser makes it */
                num n;
                if (!number(p, &n)) goto out;
                a = n.is_float ? &ir_primval_float(p->ctx, IR_DTYPE_F64, n.f, NULL)->base
                               : &ir_primval_int(p->ctx, ir_prim_int(p->ctx, n.i), NULL)->base;
            } else if (call_like && p->estack.len == emark && peek(p, 0)->kind == TK_STRING) {
                const char *sym = string_interned(p, false);
                if (!sym) goto out;
                a = &ir_extern_new(p->ctx, sym, NULL)->base;
            } else {
                a = parse_expr(p);
                if (!a) goto out;
            }
            gr_vec_push(&p->estack, a);
        }
        if (!accept_p(p, ',')) break;
    }
    if (!expect_p(p, ')', "to close the op call")) goto out;
    uint32_t nargs = p->estack.len - emark;
    if ((int)nargs < def->min_args || (def->max_args >= 0 && (int)nargs > def->max_args)) {
        if (def->min_args == def->max_args)
            perr(p, at, GR_ERR_PARSE, "%s takes %d argument%s, got %u", def->text_name,
                 def->min_args, def->min_args == 1 ? "" : "s", nargs);
        else
            perr(p, at, GR_ERR_PARSE, "%s takes %d to %d arguments, got %u", def->text_name,
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
            perr(p, at, GR_ERR_PARSE, "%s", p->tmp.msg);
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
            return perr(p, &t, GR_ERR_PARSE, "name too long");
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
            return perr(p, &at, GR_ERR_PARSE, "unknown global function '%s'", nm);
        return &p->sigs.data[idx - 1].gvar->base;
    }
    if (!special_r_name(nm, n)) goto op;
    if (strcmp(nm, "R.const") == 0) return r_const(p, &at);
    if (strcmp(nm, "R.prim_value") == 0) return r_prim_value(p);
    if (strcmp(nm, "R.shape") == 0) {
        if (!expect_p(p, '(', "after R.shape")) return NULL;
        uint32_t mark = p->pstack.len;
        int nd = prim_list(p, '[', ']');
        if (nd < 0 || !expect_p(p, ')', "to close R.shape(")) return NULL;
        ir_shape_expr *s = ir_shape_expr_new(p->ctx, (uint32_t)nd, gr_vec_at(p->pstack, mark), NULL);
        p->pstack.len = mark;
        return &s->base;
    }
    if (strcmp(nm, "R.str") == 0 || strcmp(nm, "R.ExternFunc") == 0) {
        bool ext = nm[2] == 'E';
        if (!expect_p(p, '(', "after the name")) return NULL;
        const char *s = string_interned(p, true);
        if (!s || !expect_p(p, ')', "to close the call")) return NULL;
        return ext ? &ir_extern_new(p->ctx, s, NULL)->base : &ir_str_new(p->ctx, s, NULL)->base;
    }
    if (strcmp(nm, "R.with_span") == 0) {
        if (!expect_p(p, '(', "after R.with_span")) return NULL;
        ir_tok et = *peek(p, 0);
        ir_expr *e = parse_expr(p);
        if (!e || !expect_p(p, ',', "before the span")) return NULL;
        bool ok;
        const ir_span *s = parse_span(p, &ok);
        if (!ok || !expect_p(p, ')', "to close R.with_span(")) return NULL;
        return set_span(p, &et, e, s) ? e : NULL;
    }
    if (strcmp(nm, "R.tuple") == 0) {
        if (!expect_p(p, '(', "after R.tuple")) return NULL;
        uint32_t mark = p->estack.len;
        while (!is_p(peek(p, 0), ')')) {
            ir_expr *a = parse_expr(p);
            if (!a) return NULL;
            gr_vec_push(&p->estack, a);
            if (!accept_p(p, ',')) break;
        }
        if (!expect_p(p, ')', "to close R.tuple(")) return NULL;
        ir_tuple *t = ir_tuple_new(p->ctx, p->estack.len - mark, gr_vec_at(p->estack, mark), NULL);
        p->estack.len = mark;
        return &t->base;
    }
    if (strcmp(nm, "R.match_cast") == 0)
        return perr(p, &at, GR_ERR_PARSE, "R.match_cast is only allowed as the value of a binding");
op:;
    const ir_op_def *def = find_op(p, nm, n);
    if (!def) return perr(p, &at, GR_ERR_PARSE, "unknown op '%s'", nm);
    if (is_p(peek(p, 0), '(')) return op_call(p, def, &at);
    return &ir_op_get_def(p->ctx, def)->base;
}

static ir_expr *primary(parser *p) {
    ir_tok t = *peek(p, 0);
    if (t.kind == TK_NAME) {
        if (is_p(peek(p, 1), '.')) return dotted(p);
        if (tok_is(&t, "metadata") && is_p(peek(p, 1), '[')) return metadata_ref(p);
        skip(p);
        const char *name = tok_intern(p, &t);
        ir_var *v = scope_get(p, name);
        if (!v) return perr(p, &t, GR_ERR_PARSE, "undefined variable '%s'", name);
        return &v->base;
    }
    if (is_p(&t, '(')) {
        skip(p);
        uint32_t mark = p->estack.len;
        bool tuple = false;
        while (!is_p(peek(p, 0), ')')) {
            ir_expr *a = parse_expr(p);
            if (!a) return NULL;
            gr_vec_push(&p->estack, a);
            if (!accept_p(p, ',')) break;
            tuple = true;
        }
        if (!expect_p(p, ')', "to close the parenthesis")) return NULL;
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
    return unexpected(p, &t, "an expression");
}

static ir_expr *parse_expr(parser *p) {
    ir_tok at = *peek(p, 0);
    if (!enter(p, &at)) return NULL;
    ir_expr *e = primary(p);
    while (e) {
        ir_tok t = *peek(p, 0);
        if (is_p(&t, '[')) {
            skip(p);
            ir_tok it = *peek(p, 0);
            int64_t idx;
            if (!expect_kind(p, TK_INT, "a tuple index") || !int_value(p, &it, false, &idx)) e = NULL;
            else if (idx > INT32_MAX) e = perr(p, &it, GR_ERR_PARSE, "tuple index out of range");
            else if (!expect_p(p, ']', "after the tuple index")) e = NULL;
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

/* ---- statements ---- */

typedef struct body_ctx {
    ir_bb_t *bb;
    bool in_df, plain_open;
    uint32_t df_first_id;
} body_ctx;

typedef struct result_stmt {
    bool have;
    ir_tok tok;              /* the name */
    const char *name;
    const ir_sinfo *annot;
    ir_expr *value;
    ir_tok vtok;
    span_fields sf;
} result_stmt;

static void *type_err(parser *p, const ir_tok *at) {
    const char *m = p->tmp.msg[0] ? p->tmp.msg : "struct info inference failed";
    return perr(p, at, GR_ERR_TYPE, "%s", m);
}

static bool check_annot(parser *p, const ir_tok *at, const ir_sinfo *annot, const ir_sinfo *got) {
    if (ir_sinfo_is_base_of(annot, got)) return true;
    char a[512], g[512];
    ir_sinfo_snprint(annot, a, sizeof(a));
    ir_sinfo_snprint(got, g, sizeof(g));
    perr(p, at, GR_ERR_TYPE, "annotation %s does not match the value's struct info %s", a, g);
    return false;
}

static bool emit(parser *p, body_ctx *bc, const ir_tok *ntok, const char *name,
                 const ir_sinfo *annot, ir_expr *value, const ir_sinfo *match,
                 const span_fields *sf, const ir_tok *vtok) {
    if (sf->has_seq)
        return perr(p, &sf->tok, GR_ERR_PARSE, "seq_span belongs on a return line"), false;
    if (sf->has_span && !set_span(p, &sf->tok, value, sf->span)) return false;
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
    scope_bind(p, name, v);
    return true;
}

static ir_func *parse_def(parser *p, bool module_level, bool is_private, fsig *sig,
                          span_fields *sf_out, ir_tok *name_out);

/* `R.func_attr({...})` into heap arrays. */
typedef struct fattrs {
    GR_VEC(const char *) keys;
    GR_VEC(ir_attr) vals;
} fattrs;

static bool parse_func_attr(parser *p, fattrs *fa) {
    ir_tok at = *peek(p, 0);
    skip(p), skip(p), skip(p);
    if (!expect_p(p, '(', "after R.func_attr")) return false;
    ir_attr a;
    ir_tok dt = *peek(p, 0);
    if (!is_p(&dt, '{')) return unexpected(p, &dt, "a dict"), false;
    if (!parse_attr(p, &a) || !expect_p(p, ')', "to close R.func_attr(")) return false;
    for (uint32_t i = 0; i < a.u.arr.n; i++) {
        const ir_attr *k = &a.u.arr.items[2 * i];
        if (k->kind != IR_ATTR_STR) return perr(p, &at, GR_ERR_PARSE, "function attribute keys must be strings"), false;
        for (uint32_t j = 0; j < fa->keys.len; j++)
            if (fa->keys.data[j] == k->u.s)
                return perr(p, &at, GR_ERR_PARSE, "function attribute \"%s\" given twice", k->u.s), false;
        gr_vec_push(&fa->keys, k->u.s);
        gr_vec_push(&fa->vals, a.u.arr.items[2 * i + 1]);
    }
    span_fields sf;
    return end_line(p, &sf);
}

static bool parse_stmt_list(parser *p, body_ctx *bc, bool branch, result_stmt *res,
                            fattrs *fa, ir_expr **ret, span_fields *ret_sf, ir_tok *ret_tok);

static bool parse_if(parser *p, body_ctx *bc) {
    ir_tok at = next(p); /* if */
    ir_expr *cond = parse_expr(p);
    if (!cond || !expect_p(p, ':', "after the if condition")) return false;
    span_fields isf;
    if (!end_line(p, &isf) || !expect_kind(p, TK_INDENT, "an indented block")) return false;
    if (isf.has_seq) return perr(p, &isf.tok, GR_ERR_PARSE, "seq_span belongs on the branch result line"), false;
    ir_seq *br[2] = {NULL, NULL};
    result_stmt rs[2];
    memset(rs, 0, sizeof(rs));
    for (int k = 0; k < 2; k++) {
        if (k == 1) {
            if (!expect_name(p, "else") || !expect_p(p, ':', "after else")) return false;
            span_fields esf;
            if (!end_line(p, &esf) || !expect_kind(p, TK_INDENT, "an indented block")) return false;
            if (esf.has_span || esf.has_var || esf.has_seq)
                return perr(p, &esf.tok, GR_ERR_PARSE, "spans of an if go on the `if` line"), false;
        }
        body_ctx inner = {ir_bb_new(p->ctx, &p->tmp), false, false, 0};
        ir_bb_set_module(inner.bb, p->mod);
        uint32_t umark = p->undo.len;
        p->log_scope++;
        bool ok = parse_stmt_list(p, &inner, true, &rs[k], NULL, NULL, NULL, NULL);
        if (ok && !rs[k].have) {
            perr(p, peek(p, 0), GR_ERR_PARSE, "an if branch must end with a binding of the result variable");
            ok = false;
        }
        if (ok && rs[k].sf.has_var) {
            perr(p, &rs[k].sf.tok, GR_ERR_PARSE, "var_span of an if result goes on the `if` line");
            ok = false;
        }
        if (ok && rs[k].sf.has_span) ok = set_span(p, &rs[k].sf.tok, rs[k].value, rs[k].sf.span);
        if (ok) {
            CLEAR_TMP(p);
            br[k] = ir_bb_finish(inner.bb, rs[k].value, rs[k].sf.seq);
            if (!br[k]) {
                type_err(p, &rs[k].vtok);
                ok = false;
            }
        }
        ir_bb_free(inner.bb);
        scope_restore(p, umark);
        p->log_scope--;
        if (!ok || !expect_kind(p, TK_DEDENT, "the end of the branch")) return false;
    }
    if (rs[0].name != rs[1].name)
        return perr(p, &rs[1].tok, GR_ERR_PARSE, "both if branches must bind the same variable ('%s' vs '%s')",
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
    if (!expect_dotted(p, "R", "dataflow") || !expect_p(p, '(', "after R.dataflow") ||
        !expect_p(p, ')', "after R.dataflow(") || !expect_p(p, ':', "after R.dataflow()"))
        return false;
    span_fields sf;
    if (!end_line(p, &sf) || !expect_kind(p, TK_INDENT, "an indented block")) return false;
    if (sf.has_span || sf.has_var || sf.has_seq)
        return perr(p, &sf.tok, GR_ERR_PARSE, "a dataflow block has no span"), false;
    if (bc->plain_open) {
        ir_bb_end_block(bc->bb);
        bc->plain_open = false;
    }
    ir_bb_begin_dataflow(bc->bb);
    bc->in_df = true;
    bc->df_first_id = ir_ctx_id_bound(p->ctx);
    bool ok = true;
    for (;;) {
        drop_behind(p);
        ir_tok t = *peek(p, 0);
        if (t.kind == TK_DEDENT) break;
        if (at_dotted(p, "R", "output")) {
            skip(p), skip(p), skip(p);
            if (!expect_p(p, '(', "after R.output")) return false;
            while (!is_p(peek(p, 0), ')')) {
                ir_tok nt = *peek(p, 0);
                if (!expect_kind(p, TK_NAME, "a variable name")) return false;
                const char *name = tok_intern(p, &nt);
                ir_var *v = scope_get(p, name);
                if (!v) return perr(p, &nt, GR_ERR_PARSE, "R.output of undefined variable '%s'", name), false;
                if (v->base.id < bc->df_first_id)
                    return perr(p, &nt, GR_ERR_PARSE, "R.output of '%s', which is not bound in this dataflow block", name), false;
                /* The var was made as a DataflowVar before its R.output was seen; it is ours and
                 * its block is still open, so turning it into a Var here is its final kind. */
                v->base.kind = IR_VAR;
                if (!accept_p(p, ',')) break;
            }
            if (!expect_p(p, ')', "to close R.output(")) return false;
            if (!end_line(p, &sf)) return false;
            if (peek(p, 0)->kind != TK_DEDENT)
                return unexpected(p, peek(p, 0), "the end of the dataflow block after R.output"), false;
            break;
        }
        if (t.kind != TK_NAME || !(is_p(peek(p, 1), ':') || is_p(peek(p, 1), '=')))
            return unexpected(p, &t, "a binding or R.output(...) in a dataflow block"), false;
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
static const ir_sinfo *annotation(parser *p) {
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
    const ir_sinfo *r = parse_sinfo(p);
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
    const char *name = tok_intern(p, &nt);
    const ir_sinfo *annot = NULL;
    if (accept_p(p, ':')) {
        annot = annotation(p);
        if (!annot) return false;
    }
    if (!expect_p(p, '=', "in a binding")) return false;
    if (!annot && p->cls_name && tok_is(peek(p, 0), p->cls_name) && peek(p, 1)->kind != TK_PUNCT) {
        /* `cls = Module`: TVM's printer names the module this way before `cls.f(...)` */
        skip(p);
        span_fields sf;
        if (!end_line(p, &sf)) return false;
        bool known = false;
        for (uint32_t i = 0; i < p->ncls_alias; i++) known |= p->cls_alias[i] == name;
        if (!known && p->ncls_alias < 4) p->cls_alias[p->ncls_alias++] = name;
        return true;
    }
    if (!annot && at_dotted(p, "T", "int64") && is_p(peek(p, 3), '(') && is_p(peek(p, 4), ')')) {
        for (int i = 0; i < 5; i++) next(p);
        span_fields sf;
        if (!end_line(p, &sf)) return false;
        if (!sym_get(p, name)) sym_define(p, name, ir_prim_var(p->ctx, name));
        return true;
    }
    ir_tok vt = *peek(p, 0);
    ir_expr *value;
    const ir_sinfo *match = NULL;
    if (at_dotted(p, "R", "match_cast")) {
        skip(p), skip(p), skip(p);
        if (!expect_p(p, '(', "after R.match_cast")) return false;
        value = parse_expr(p);
        if (!value || !expect_p(p, ',', "before the struct info")) return false;
        match = parse_sinfo(p);
        if (!match || !expect_p(p, ')', "to close R.match_cast(")) return false;
    } else {
        value = parse_expr(p);
        if (!value) return false;
        if (is_p(peek(p, 0), ',')) {
            /* `t = a, b`: TVM 0.27 prints a tuple value without parentheses */
            uint32_t mark = p->estack.len;
            gr_vec_push(&p->estack, value);
            while (accept_p(p, ',')) {
                if (peek(p, 0)->kind == TK_NEWLINE || peek(p, 0)->kind == TK_SPANC) break;
                ir_expr *a = parse_expr(p);
                if (!a) return false;
                gr_vec_push(&p->estack, a);
            }
            value = &ir_tuple_new(p->ctx, p->estack.len - mark, gr_vec_at(p->estack, mark), NULL)->base;
            p->estack.len = mark;
        }
    }
    span_fields sf;
    if (!end_line(p, &sf)) return false;
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
        drop_behind(p);
        ir_tok t = *peek(p, 0);
        if (t.kind == TK_DEDENT || t.kind == TK_EOF) {
            if (branch) return true;
            return unexpected(p, &t, "a return statement"), false;
        }
        if (t.kind == TK_NAME && (is_p(peek(p, 1), ':') || is_p(peek(p, 1), '='))) {
            if (res && res->have) {
                /* the previous statement looked like a result but more follows: impossible
                 * (a result is only taken before DEDENT) */
                return unexpected(p, &t, "the end of the branch"), false;
            }
            if (!parse_binding(p, bc, branch ? res : NULL)) return false;
            if (single) return true;
            continue;
        }
        if (single) return unexpected(p, &t, "a binding"), false;
        if (res && res->have) return unexpected(p, &t, "the end of the branch"), false;
        if (fa && at_dotted(p, "R", "func_attr")) {
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
            if (!expect_dotted(p, "R", "function")) return false;
            if (is_p(peek(p, 0), '(')) {
                skip(p);
                while (!is_p(peek(p, 0), ')')) {
                    ir_tok k = *peek(p, 0);
                    if (!tok_is(&k, "pure") || !is_p(peek(p, 1), '='))
                        return unexpected(p, &k, "pure=... in a local function decorator"), false;
                    skip(p), skip(p);
                    num n;
                    if (!number(p, &n)) return false;
                    if (!accept_p(p, ',')) break;
                }
                if (!expect_p(p, ')', "to close the decorator")) return false;
            }
            if (!expect_kind(p, TK_NEWLINE, "end of line after the decorator")) return false;
            ir_func *f = parse_def(p, false, false, NULL, &sf, &nt);
            if (!f) return false;
            const char *name = tok_intern(p, &nt);
            span_fields bsf = {0};
            bsf.has_var = sf.has_var;
            bsf.var = sf.var;
            bsf.tok = sf.tok;
            if (bc->in_df) return perr(p, &t, GR_ERR_PARSE, "local functions are not allowed in a dataflow block"), false;
            if (!emit(p, bc, &nt, name, NULL, &f->base, NULL, &bsf, &nt)) return false;
            continue;
        }
        if (tok_is(&t, "return") && ret) {
            skip(p);
            *ret_tok = *peek(p, 0);
            ir_expr *v = parse_expr(p);
            if (!v || !end_line(p, ret_sf)) return false;
            if (ret_sf->has_var)
                return perr(p, &ret_sf->tok, GR_ERR_PARSE, "var_span is not allowed on a return line"), false;
            if (ret_sf->has_span && !set_span(p, &ret_sf->tok, v, ret_sf->span)) return false;
            *ret = v;
            if (peek(p, 0)->kind != TK_DEDENT)
                return unexpected(p, peek(p, 0), "the end of the function after return"), false;
            return true;
        }
        return unexpected(p, &t, branch ? "a binding" : "a statement");
    }
}

typedef struct param_info {
    ir_tok tok;
    const char *name;
    const ir_sinfo *sinfo;
    const ir_span *span;
} param_info;
typedef GR_VEC(param_info) param_vec;

/* `def NAME(params) -> ret:` up to the colon. */
static bool parse_header(parser *p, ir_tok *name_tok, param_vec *params, const ir_sinfo **ret) {
    if (!expect_name(p, "def")) return false;
    *name_tok = *peek(p, 0);
    if (!expect_kind(p, TK_NAME, "a function name") || !expect_p(p, '(', "after the function name"))
        return false;
    bool saved = p->sig_mode;
    p->sig_mode = true;
    bool ok = true;
    while (ok && !is_p(peek(p, 0), ')')) {
        ir_tok t = *peek(p, 0);
        if (!expect_kind(p, TK_NAME, "a parameter name") || !expect_p(p, ':', "after the parameter name")) {
            ok = false;
            break;
        }
        param_info pi = {t, tok_intern(p, &t), NULL, NULL};
        pi.sinfo = parse_sinfo(p);
        if (!pi.sinfo) {
            ok = false;
            break;
        }
        bool comma = accept_p(p, ',');
        if (peek(p, 0)->kind == TK_SPANC) {
            ir_tok st = next(p);
            span_fields sf = {0};
            if (!parse_span_comment(p, &st, &sf)) {
                ok = false;
                break;
            }
            if (sf.has_var || sf.has_seq || !sf.has_span) {
                perr(p, &st, GR_ERR_PARSE, "a parameter takes only `# span: ...`");
                ok = false;
                break;
            }
            pi.span = sf.span;
            if (!comma) comma = accept_p(p, ',');
        }
        gr_vec_push(params, pi);
        if (!comma) break;
    }
    ok = ok && expect_p(p, ')', "to close the parameter list");
    *ret = NULL;
    if (ok && peek(p, 0)->kind == TK_ARROW) {
        skip(p);
        *ret = parse_sinfo(p);
        ok = *ret != NULL;
    }
    p->sig_mode = saved;
    return ok && expect_p(p, ':', "after the function signature");
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static ir_func *parse_def(parser *p, bool module_level, bool is_private, fsig *sig,
                          span_fields *sf_out, ir_tok *name_out) {
    ir_tok at = *peek(p, 0);
    if (!enter(p, &at)) return NULL;
    ir_func *result = NULL;
    param_vec params = {0};
    fattrs fa = {0};
    ir_bb_t *bb = NULL;
    uint32_t umark = p->undo.len, smark = p->sym_undo.len;
    p->log_scope++;
    if (module_level) {
        if (p->scope.len) {
            ptab_flush(&p->scope);
            memset(p->scope.s, 0, sizeof(*p->scope.s) * p->scope.cap);
            p->scope.len = 0;
        }
        gr_map_clear(&p->syms);
        p->sym_undo.len = smark = 0;
        p->undo.len = umark = 0;
        p->log_scope--; /* nothing outside to restore */
        for (uint32_t i = 0; sig && i < sig->sym_n; i++) {
            const psym *s = &p->sigsyms.data[sig->sym_start + i];
            sym_define(p, s->name, s->var);
        }
    }
    const ir_sinfo *ret = NULL;
    if (!parse_header(p, name_out, &params, &ret)) goto out;
    span_fields sf;
    if (!end_line(p, &sf)) goto out;
    if (sf.has_seq) {
        perr(p, &sf.tok, GR_ERR_PARSE, "seq_span belongs on the return line");
        goto out;
    }
    if (sf.has_var && module_level) {
        perr(p, &sf.tok, GR_ERR_PARSE, "var_span is only meaningful for local functions");
        goto out;
    }
    *sf_out = sf;
    if (!expect_kind(p, TK_INDENT, "an indented function body")) goto out;
    uint32_t first_id = ir_ctx_id_bound(p->ctx);
    p->vars.len = 0;
    for (uint32_t i = 0; i < params.len; i++) {
        param_info *pi = &params.data[i];
        ir_var *old = scope_get(p, pi->name);
        if (old && old->base.id >= first_id) {
            perr(p, &pi->tok, GR_ERR_PARSE, "duplicate parameter '%s'", pi->name);
            goto out;
        }
        ir_var *v = ir_var_new(p->ctx, pi->name, pi->sinfo, pi->span);
        scope_bind(p, pi->name, v);
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
        perr(p, &rtok, GR_ERR_TYPE, "returns %s, but the function is annotated to return %s", g, a);
        goto out;
    }
    if (!expect_kind(p, TK_DEDENT, "the end of the function")) goto out;
    /* attributes sorted by key; public module functions get global_symbol = name */
    const char *fname = tok_intern(p, name_out);
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
        scope_restore(p, umark);
        restore(&p->syms, &p->sym_undo, smark);
        p->log_scope--;
    }
    LEAVE(p);
    return result;
}

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

typedef GR_VEC(ir_const *) const_vec;

static bool const_item(parser *p, const_vec *out) {
    ir_tok at = *peek(p, 0);
    if (!expect_dotted(p, "R", "const_data") || !expect_p(p, '(', "after R.const_data")) return false;
    ir_dtype dt;
    ir_tok dtok = *peek(p, 0);
    if (!dtype_lit(p, &dt) || !expect_p(p, ',', "after the dtype")) return false;
    if (ir_dtype_is_void(dt) || !ir_dtype_bytes(dt))
        return perr(p, &dtok, GR_ERR_PARSE, "constants need a concrete dtype"), false;
    if (!expect_p(p, '(', "for the shape")) return false;
    int64_t shape[RT_MAX_NDIM];
    int ndim = 0;
    uint64_t numel = 1;
    while (!is_p(peek(p, 0), ')')) {
        ir_tok t = *peek(p, 0);
        if (!expect_kind(p, TK_INT, "a dimension")) return false;
        int64_t d;
        if (!int_value(p, &t, false, &d)) return false;
        if (ndim >= RT_MAX_NDIM) return perr(p, &t, GR_ERR_PARSE, "constants have at most %d dimensions", RT_MAX_NDIM), false;
        if (d > ((int64_t)1 << 40) || (d && numel > ((uint64_t)1 << 40) / (uint64_t)d))
            return perr(p, &t, GR_ERR_PARSE, "constant too large"), false;
        numel *= (uint64_t)d;
        shape[ndim++] = d;
        if (!accept_p(p, ',')) break;
    }
    if (!expect_p(p, ')', "to close the shape") || !expect_p(p, ',', "before the data")) return false;
    ir_tok data_tok = *peek(p, 0);
    if (!string_lit(p, true)) return false;
    uint64_t nbytes = numel * ir_dtype_bytes(dt);
    if (p->sbuf.len != ir_base64_enc_len(nbytes))
        return perr(p, &data_tok, GR_ERR_PARSE,
                    "constant data has %zu base64 characters, expected %zu for %" PRIu64 " bytes",
                    p->sbuf.len, ir_base64_enc_len(nbytes), nbytes), false;
    unsigned char *raw = gr_xmalloc(p->sbuf.len / 4 * 3 + 4);
    long got = ir_base64_decode(p->sbuf.data, p->sbuf.len, raw);
    if (got != (long)nbytes) {
        free(raw);
        return perr(p, &data_tok, GR_ERR_PARSE, "malformed base64 constant data"), false;
    }
    const ir_span *span = NULL;
    if (accept_p(p, ',') && kw_at(p, "span")) {
        skip(p), skip(p);
        bool ok;
        span = parse_span(p, &ok);
        if (!ok) {
            free(raw);
            return false;
        }
        accept_p(p, ',');
    }
    if (!expect_p(p, ')', "to close R.const_data(")) {
        free(raw);
        return false;
    }
    rt_tensor *t = rt_tensor_new(dt, ndim, shape);
    if (!t) {
        free(raw);
        return perr(p, &at, GR_ERR_NOMEM, "cannot allocate the constant"), false;
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
    bool ok = expect_name(p, "metadata") && expect_p(p, '=', "after metadata");
    if (ok && tok_is(peek(p, 0), "tvm")) {
        /* show_meta=True: an opaque JSON blob of TVM's object graph (and TVM 0.27 crashes
         * writing it); graft reads its own section instead */
        perr(p, peek(p, 0), GR_ERR_UNSUPPORTED,
             "TVM's JSON metadata (metadata = tvm.ir.load_json(...)) is not supported; write the "
             "constants as graft's `metadata = {\"relax.expr.Constant\": [R.const_data(...), ...]}` "
             "section (docs/text-format.md)");
        ok = false;
    }
    ok = ok && expect_p(p, '{', "to open the metadata dict");
    while (ok && !is_p(peek(p, 0), '}')) {
        ir_tok kt = *peek(p, 0);
        ok = string_lit(p, false);
        if (!ok) break;
        if (strcmp(p->sbuf.data, "relax.expr.Constant") != 0 && strcmp(p->sbuf.data, "ir.GenericConst") != 0) {
            perr(p, &kt, GR_ERR_PARSE, "unsupported metadata kind \"%s\"", p->sbuf.data);
            ok = false;
            break;
        }
        ok = expect_p(p, ':', "after the metadata kind") && expect_p(p, '[', "to open the constant list");
        while (ok && !is_p(peek(p, 0), ']')) {
            ok = const_item(p, &cs);
            if (!ok || !accept_p(p, ',')) break;
        }
        ok = ok && expect_p(p, ']', "to close the constant list");
        if (!ok || !accept_p(p, ',')) break;
    }
    ok = ok && expect_p(p, '}', "to close the metadata dict");
    if (ok && peek(p, 0)->kind == TK_NEWLINE) next(p);
    ok = ok && expect_kind(p, TK_EOF, "the end of the file after the metadata section");
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
            perr(p, &at, GR_ERR_PARSE, "@T.prim_func must be followed by `def NAME(...):`");
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
            perr(p, &at, GR_ERR_PARSE, "NUL character in a TIR function (@T.prim_func)");
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
            ok = parse_header(p, &nt, &params, &ret);
            if (ok) {
                const char *name = tok_intern(p, &nt);
                if (gr_map_get(&p->sigmap, GR_MAP_PTR(name), NULL)) {
                    perr(p, &nt, GR_ERR_PARSE, "duplicate function '%s'", name);
                    ok = false;
                } else {
                    fsig sg = {ir_gvar_new(p->ctx, name), p->sigsyms.len, 0};
                    for (uint32_t i = 0; i < p->sym_undo.len; i++) {
                        const char *sn = (const char *)(uintptr_t)p->sym_undo.data[i].key;
                        psym ps = {sn, sym_get(p, sn)};
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
        return perr(p, &at, GR_ERR_UNSUPPORTED,
                    "TIR functions (@T.prim_func) are not supported; only Relax functions"), false;
    }
    if (!expect_p(p, '@', "(a decorated function)") || !expect_dotted(p, "R", "function")) return false;
    if (accept_p(p, '(')) {
        while (!is_p(peek(p, 0), ')')) {
            ir_tok k = *peek(p, 0);
            if (!(tok_is(&k, "private") || tok_is(&k, "pure")) || !is_p(peek(p, 1), '='))
                return unexpected(p, &k, "private= or pure="), false;
            skip(p), skip(p);
            num n;
            if (!number(p, &n)) return false;
            if (tok_is(&k, "private")) *is_private = n.i != 0;
            if (!accept_p(p, ',')) break;
        }
        if (!expect_p(p, ')', "to close the decorator")) return false;
    }
    return expect_kind(p, TK_NEWLINE, "end of line after the decorator");
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
            if (!expect_kind(p, TK_NEWLINE, "end of line")) return false;
            continue;
        }
        if (peek(p, 0)->kind == TK_NAME && is_p(peek(p, 1), '=') && tok_is(peek(p, 2), "TypeVar")) {
            ir_tok nt = next(p);
            skip(p), skip(p);
            if (!expect_p(p, '(', "after TypeVar") || !string_lit(p, false) ||
                !expect_p(p, ')', "to close TypeVar(") || !expect_kind(p, TK_NEWLINE, "end of line"))
                return false;
            gr_map_put(&p->typevars, GR_MAP_PTR(tok_intern(p, &nt)), 1);
            continue;
        }
        break;
    }
    if (!expect_p(p, '@', "(the module starts with @I.ir_module)")) return false;
    if (!(at_dotted(p, "tvm", "script") && is_p(peek(p, 3), '.') && tok_is(peek(p, 4), "ir_module"))) {
        if (!expect_dotted(p, "I", "ir_module")) return false;
    } else {
        for (int i = 0; i < 5; i++) skip(p);
    }
    if (accept_p(p, '(')) {
        /* @I.ir_module(s_tir=True), (check_well_formed=False): options of TVM's parser */
        while (!is_p(peek(p, 0), ')')) {
            ir_tok k = *peek(p, 0);
            if (k.kind != TK_NAME || !is_p(peek(p, 1), '=')) return unexpected(p, &k, "an option name="), false;
            skip(p), skip(p);
            num n;
            if (!number(p, &n)) return false;
            if (!accept_p(p, ',')) break;
        }
        if (!expect_p(p, ')', "to close the decorator")) return false;
    }
    if (!expect_kind(p, TK_NEWLINE, "end of line") || !expect_name(p, "class")) return false;
    ir_tok ct = *peek(p, 0);
    if (!expect_kind(p, TK_NAME, "a class name") || !expect_p(p, ':', "after the class name") ||
        !expect_kind(p, TK_NEWLINE, "end of line"))
        return false;
    p->cls_name = tok_intern(p, &ct);
    ir_tok it = *peek(p, 0);
    if (!expect_kind(p, TK_INDENT, "an indented class body")) return false;
    for (uint32_t i = 0; i < p->ntirs; i++) {
        const char *name = p->tirs[i].name;
        if (gr_map_get(&p->sigmap, GR_MAP_PTR(name), NULL)) {
            ir_tok at = {0};
            at.line = p->tirs[i].line;
            at.col = 1;
            return perr(p, &at, GR_ERR_PARSE, "duplicate function '%s'", name), false;
        }
        fsig sg = {ir_gvar_new(p->ctx, name), p->sigsyms.len, 0};
        gr_vec_push(&p->sigs, sg);
        gr_map_put(&p->sigmap, GR_MAP_PTR(name), p->sigs.len);
    }
    if (!prescan_functions(p, line_start_of(p, it.s), end, it.col - 1, it.line)) return false;
    if (at_dotted(p, "I", "module_attrs")) {
        skip(p), skip(p), skip(p);
        ir_tok dt = *peek(p, 0);
        ir_attr a;
        if (!expect_p(p, '(', "after I.module_attrs")) return false;
        if (!is_p(peek(p, 0), '{')) return unexpected(p, peek(p, 0), "a dict"), false;
        if (!parse_attr(p, &a) || !expect_p(p, ')', "to close I.module_attrs(")) return false;
        for (uint32_t i = 0; i < a.u.arr.n; i++) {
            const ir_attr *k = &a.u.arr.items[2 * i];
            if (k->kind != IR_ATTR_STR) return perr(p, &dt, GR_ERR_PARSE, "module attribute keys must be strings"), false;
            ir_module_set_attr(p->mod, k->u.s, a.u.arr.items[2 * i + 1]);
        }
        span_fields sf;
        if (!end_line(p, &sf)) return false;
    }
    while (!p->failed && peek(p, 0)->kind != TK_DEDENT && peek(p, 0)->kind != TK_EOF) {
        if (tok_is(peek(p, 0), "pass")) {
            skip(p);
            span_fields sf;
            if (!end_line(p, &sf)) return false;
            continue;
        }
        add_tir_before(p, peek(p, 0)->line);
        bool priv;
        if (!parse_decorator(p, &priv)) return false;
        ir_tok dt = *peek(p, 0);
        if (!tok_is(&dt, "def")) return unexpected(p, &dt, "def"), false;
        ir_tok nt = *peek(p, 1);
        const char *name = nt.kind == TK_NAME ? tok_intern(p, &nt) : NULL;
        uint64_t idx = 0;
        if (!name || !gr_map_get(&p->sigmap, GR_MAP_PTR(name), &idx))
            return unexpected(p, &nt, "a function name"), false;
        fsig *sg = &p->sigs.data[idx - 1];
        if (ir_module_gvar(p->mod, name))
            return perr(p, &nt, GR_ERR_PARSE, "duplicate function '%s'", name), false;
        span_fields sf;
        ir_tok nt2;
        ir_func *f = parse_def(p, true, priv, sg, &sf, &nt2);
        if (!f) return false;
        sg = &p->sigs.data[idx - 1];
        if (!sg->gvar->base.sinfo) ir_expr_set_sinfo(&sg->gvar->base, f->base.sinfo);
        ir_module_set(p->mod, sg->gvar, &f->base);
    }
    if (p->failed) return false;
    add_tir_before(p, -1);
    if (peek(p, 0)->kind == TK_DEDENT) next(p);
    return expect_kind(p, TK_EOF, "the end of the module");
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
    ptab_init(&p->scope, lines / 2 * 3 + 64);
    gr_map_init(&p->syms);
    gr_map_init(&p->opcache);
    gr_map_init(&p->sigmap);
    gr_map_init(&p->typevars);
    p->mod = ir_module_new(ctx);
    p->written_attrs = opts ? opts->written_attrs : NULL;
    p->lenient = opts && opts->lenient;
    bool ok = parse_module_body(p, meta);
    if (!ok && !p->failed) perr(p, NULL, GR_ERR_PARSE, "parse failed");
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
