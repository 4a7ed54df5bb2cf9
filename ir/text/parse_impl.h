/* The text-format parser's state and the helpers its files share (ir/text/parser.c, ir/parse_*.c):
 * the parser struct, token access (inline: the hot path), and the functions one file uses of
 * another. */
#ifndef GRAFT_IR_TEXT_PARSE_IMPL_H
#define GRAFT_IR_TEXT_PARSE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/builder.h"
#include "ir/ctx_impl.h"
#include "ir/op.h"
#include "ir/text/parser.h"
#include "ir/text/parser_impl.h"
#include "ir/text/text_impl.h"

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

/* A file mapped by ir_parse_file is read once, front to back: the pages well behind the
 * cursor are given back (MADV_DONTNEED on a clean private file mapping only drops them; a later
 * read, e.g. for an error message, faults them in again from the page cache), so a big file
 * does not stay resident while the IR built from it grows. */
enum { DROP_STEP = 4 << 20, DROP_MARGIN = 1 << 20 };
#define LEAVE(p) ((p)->depth--)
typedef struct lexsave {
    ir_lexer lx;
    ir_tok la[8];
    int nla;
} lexsave;

/* A number with an optional sign, or True/False, or float("inf"/"nan"). */
typedef struct num {
    bool is_float, is_bool;
    int64_t i;
    double f;
} num;

/* Keys are interned names, slotted by a multiplicative hash of the address: slots taken
 * straight from address bits (k >> 4 % cap) kept neighbouring lines in neighbouring slots, but
 * the arena's chunk placement then decides the clustering, and some layouts made probe runs
 * thousands long (a 100k-binding parse 30x slower). Fresh names reach the table in prefetched
 * batches (ptab_flush), so a random slot costs no stall. Any capacity (not a power of two): 1M
 * names take 1.5M slots, not 2M (memory per binding). */
#define PTAB_PTR ((((uint64_t)1) << 48) - 1)
/* A fresh name (one this parse just interned) is bound in no scope, so binding it needs no
 * probe of the big table: its var waits in a small cache-resident table (pend) and enters s
 * with PTAB_PEND_MAX others in one batch, with prefetches (at 1M bindings each probe of s is a
 * cache miss). Lookups check the waiting vars first: they are the recent definitions. */
#define PTAB_PEND_SLOTS 2048u
#define PTAB_PEND_MAX 512u
typedef struct span_fields {
    bool has_span, has_var, has_seq;
    const ir_span *span, *var, *seq;
    ir_tok tok;
} span_fields;

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

/* `R.func_attr({...})` into heap arrays. */
typedef struct fattrs {
    GR_VEC(const char *) keys;
    GR_VEC(ir_attr) vals;
} fattrs;

typedef struct param_info {
    ir_tok tok;
    const char *name;
    const ir_sinfo *sinfo;
    const ir_span *span;
} param_info;

typedef GR_VEC(param_info) param_vec;
typedef GR_VEC(ir_const *) const_vec;

void *ps_perr(parser *p, const ir_tok *t, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ps_drop_behind(parser *p);
void *ps_unexpected(parser *p, const ir_tok *t, const char *what);
bool ps_expect_p(parser *p, char c, const char *what);
bool ps_expect_kind(parser *p, ir_tok_kind k, const char *what);
bool ps_expect_name(parser *p, const char *s);
bool ps_at_dotted(parser *p, const char *a, const char *b);
bool ps_expect_dotted(parser *p, const char *a, const char *b);
bool ps_enter(parser *p, const ir_tok *t);
const char *ps_line_start_of(parser *p, const char *s);
void ps_push_sub(parser *p, lexsave *sv, const char *s, const char *e, const ir_tok *at);
void ps_pop_lex(parser *p, const lexsave *sv);
bool ps_string_lit(parser *p, bool concat);
const char *ps_string_interned(parser *p, bool concat);
bool ps_int_value(parser *p, const ir_tok *t, bool neg, int64_t *out);
bool ps_number(parser *p, num *out);
const char *ps_tok_intern(parser *p, const ir_tok *t);
void ps_ptab_flush(struct ptab *t);
void ps_ptab_init(struct ptab *t, uint32_t want);
void ps_scope_bind(parser *p, const char *name, ir_var *v);
void ps_scope_restore(parser *p, uint32_t mark);
void ps_restore(gr_map *m, void *vec_, uint32_t mark);
ir_var *ps_scope_get(parser *p, const char *name);
void ps_sym_define(parser *p, const char *name, const ir_prim *v);
const ir_prim *ps_sym_get(parser *p, const char *name);
const ir_span *ps_parse_span(parser *p, bool *ok);
bool ps_parse_span_comment(parser *p, const ir_tok *t, span_fields *f);
bool ps_end_line(parser *p, span_fields *f);
bool ps_set_span(parser *p, const ir_tok *at, ir_expr *e, const ir_span *s);
const ir_prim *ps_prim_expr(parser *p, bool define);
int ps_prim_list(parser *p, char open, char close);
bool ps_dtype_lit(parser *p, ir_dtype *out);
const ir_sinfo *ps_parse_sinfo(parser *p);
bool ps_kw_at(parser *p, const char *name);
const ir_sinfo *ps_sinfo_list(parser *p, char close, uint32_t *n);
ir_expr *ps_parse_expr(parser *p);
bool ps_parse_attr(parser *p, ir_attr *out);
ir_func *ps_parse_def(parser *p, bool module_level, bool is_private, fsig *sig,
                      span_fields *sf_out, ir_tok *name_out);
const ir_sinfo *ps_annotation(parser *p);
bool ps_parse_header(parser *p, ir_tok *name_tok, param_vec *params, const ir_sinfo **ret);

static inline ir_tok *peek(parser *p, int k) {
    if (k < p->nla) return &p->la[k];
    while (p->nla <= k) {
        ir_tok *t = &p->la[p->nla++];
        ir_lex_next(&p->lx, t);
        if (t->kind == TK_ERROR) ps_perr(p, t, GR_ERR_PARSE, "%s", t->msg);
    }
    return &p->la[k];
}
/* Drops the current token (next() without the copy, for callers that ignore it). */
static inline void skip(parser *p) {
    const ir_tok *t = peek(p, 0);
    p->last_end = t->s + t->len;
    if (--p->nla > 0) /* usually the lookahead holds one token: nothing to shift */
        memmove(p->la, p->la + 1, sizeof(ir_tok) * (size_t)p->nla);
}
static inline ir_tok next(parser *p) {
    ir_tok t = *peek(p, 0);
    skip(p);
    return t;
}
static inline bool is_p(const ir_tok *t, char c) { return t->kind == TK_PUNCT && t->ch == c; }
static inline bool tok_is(const ir_tok *t, const char *s) {
    size_t n = strlen(s);
    return t->kind == TK_NAME && t->len == n && memcmp(t->s, s, n) == 0;
}
static inline bool accept_p(parser *p, char c) {
    if (is_p(peek(p, 0), c)) {
        skip(p);
        return true;
    }
    return false;
}

#endif
