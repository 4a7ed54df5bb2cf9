/* Hand-written lexer for the text format: Python's indentation rules (INDENT/DEDENT, newlines
 * ignored inside brackets), tokens point into the source (no allocation). Comments are skipped
 * except trailing `# span: ...` / `# var_span: ...` / `# seq_span: ...` comments. */
#include <string.h>

#include "ir/text/parser_impl.h"

void ir_lex_init(ir_lexer *lx, const char *src, const char *start, const char *end, int line) {
    memset(lx, 0, sizeof(*lx));
    lx->src = src;
    lx->p = start;
    lx->end = end;
    lx->line = line;
    lx->line_start = start;
    lx->at_bol = true;
    lx->nindent = 1;
}

void ir_lex_init_sub(ir_lexer *lx, const char *src, const char *s, const char *e, int line,
                     const char *line_start) {
    memset(lx, 0, sizeof(*lx));
    lx->src = src;
    lx->p = s;
    lx->end = e;
    lx->line = line;
    lx->line_start = line_start;
    lx->sub = true;
    lx->nindent = 1;
}

static void mk(ir_lexer *lx, ir_tok *t, ir_tok_kind k, const char *s, uint32_t len) {
    t->kind = (uint8_t)k;
    t->ch = 0;
    t->s = s;
    t->len = len;
    t->line = lx->line;
    t->col = (int)(s - lx->line_start) + 1;
    t->msg = NULL;
}

static void err(ir_lexer *lx, ir_tok *t, const char *at, const char *msg) {
    mk(lx, t, TK_ERROR, at, 1);
    t->msg = msg;
    lx->p = lx->end; /* stop */
    lx->pending = 0;
    lx->need_newline = false;
    lx->nindent = 1;
}

/* Character classes by table: the hot loops test one byte each. */
enum { CC_NAME0 = 1, CC_DIGIT = 2, CC_PUNCT = 4, CC_SPACE = 8 };
/* ASCII 0-127 (1 name start, 2 digit, 4 punctuation, 8 blank); bytes >= 128 are 0. */
static const uint8_t CCLASS[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 8, 8, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    8, 4, 0, 0, 0, 4, 0, 0, 4, 4, 4, 4, 4, 4, 4, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 0, 4, 0, 0,
    4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 0, 4, 0, 1,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 0, 4, 0, 0,
};
static bool cc_is(char c, uint8_t cls) { return (CCLASS[(unsigned char)c] & cls) != 0; }
static bool is_name0(char c) { return cc_is(c, CC_NAME0); }
static bool is_digit(char c) { return cc_is(c, CC_DIGIT); }

static const char *eol(const ir_lexer *lx, const char *p) {
    const char *q = memchr(p, '\n', (size_t)(lx->end - p));
    return q ? q : lx->end;
}

static void newline_at(ir_lexer *lx, const char *nl) {
    lx->p = nl < lx->end ? nl + 1 : lx->end;
    lx->line++;
    lx->line_start = lx->p;
}

static bool span_comment(const char *s, const char *e) {
    while (s < e && *s == ' ') s++;
    static const char *const keys[] = {"span:", "var_span:", "seq_span:"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(keys[i]);
        if ((size_t)(e - s) >= n && memcmp(s, keys[i], n) == 0) return true;
    }
    return false;
}

/* At a line start outside brackets: skip blank and comment-only lines, then emit the
 * indentation change. Returns true when a token was produced. */
static bool indentation(ir_lexer *lx, ir_tok *t) {
    for (;;) {
        const char *q = lx->p;
        while (lx->end - q >= 8 && memcmp(q, "        ", 8) == 0) q += 8; /* deep indents */
        while (q < lx->end && *q == ' ') q++;
        int w = (int)(q - lx->p);
        if (q < lx->end && *q == '\t') {
            err(lx, t, q, "tab in indentation (use spaces)");
            return true;
        }
        if (q >= lx->end) {
            lx->p = q;
            lx->at_bol = false;
            return false; /* EOF handling in the caller */
        }
        if (*q == '\r' && q + 1 < lx->end && q[1] == '\n') q++;
        if (*q == '\n') {
            newline_at(lx, q);
            continue;
        }
        if (*q == '#') {
            newline_at(lx, eol(lx, q));
            continue;
        }
        lx->p = q;
        lx->at_bol = false;
        int top = lx->indents[lx->nindent - 1];
        if (w > top) {
            if (lx->nindent >= IR_LEX_MAX_INDENT) {
                err(lx, t, q, "indentation nested too deeply");
                return true;
            }
            lx->indents[lx->nindent++] = w;
            mk(lx, t, TK_INDENT, q, 0);
            return true;
        }
        if (w < top) {
            int n = 0;
            while (lx->nindent > 1 && lx->indents[lx->nindent - 1] > w) lx->nindent--, n++;
            if (lx->indents[lx->nindent - 1] != w) {
                err(lx, t, q, "unindent does not match any outer indentation level");
                return true;
            }
            lx->pending = -(n - 1);
            mk(lx, t, TK_DEDENT, q, 0);
            return true;
        }
        return false;
    }
}

void ir_lex_next(ir_lexer *lx, ir_tok *t) {
again:
    if (lx->pending < 0) {
        lx->pending++;
        mk(lx, t, TK_DEDENT, lx->p, 0);
        return;
    }
    if (!lx->sub && lx->at_bol && lx->paren == 0 && indentation(lx, t)) return;
    const char *p = lx->p;
    while (p < lx->end && cc_is(*p, CC_SPACE)) p++;
    lx->p = p;
    if (p >= lx->end) {
        if (lx->sub || lx->paren > 0) {
            mk(lx, t, TK_EOF, p, 0);
        } else if (lx->need_newline) {
            lx->need_newline = false;
            mk(lx, t, TK_NEWLINE, p, 0);
        } else if (lx->nindent > 1 && lx->paren == 0) {
            lx->nindent--;
            mk(lx, t, TK_DEDENT, p, 0);
        } else {
            mk(lx, t, TK_EOF, p, 0);
        }
        return;
    }
    char c = *p;
    if (c == '\n') {
        if (lx->sub) {
            err(lx, t, p, "unexpected end of line");
            return;
        }
        const char *ls = lx->line_start; /* start of p's line, unless lexing began mid-line */
        newline_at(lx, p);
        if (lx->paren > 0) goto again;
        lx->at_bol = true;
        if (lx->need_newline) {
            lx->need_newline = false;
            t->kind = TK_NEWLINE;
            t->ch = 0;
            t->s = p;
            t->len = 1;
            t->line = lx->line - 1;
            t->col = 0;
            t->msg = NULL;
            /* column of the newline on its own line (a backward scan only for a mid-line start) */
            if (ls > lx->src && ls[-1] != '\n')
                while (ls > lx->src && ls[-1] != '\n') ls--;
            t->col = (int)(p - ls) + 1;
            return;
        }
        goto again;
    }
    if (c == '#') {
        const char *e = eol(lx, p);
        const char *te = e;
        while (te > p + 1 && (te[-1] == '\r' || te[-1] == ' ')) te--;
        if (span_comment(p + 1, te)) {
            mk(lx, t, TK_SPANC, p + 1, (uint32_t)(te - p - 1));
            lx->p = e;
            return;
        }
        lx->p = e;
        goto again;
    }
    lx->need_newline = true;
    if (is_name0(c)) {
        const char *q = p + 1;
        while (q < lx->end && cc_is(*q, CC_NAME0 | CC_DIGIT)) q++;
        mk(lx, t, TK_NAME, p, (uint32_t)(q - p));
        lx->p = q;
        return;
    }
    if (is_digit(c)) {
        const char *q = p;
        bool flt = false;
        while (q < lx->end && is_digit(*q)) q++;
        if (q < lx->end && *q == '.' && !(q + 1 < lx->end && is_name0(q[1]))) {
            flt = true;
            q++;
            while (q < lx->end && is_digit(*q)) q++;
        }
        if (q < lx->end && (*q == 'e' || *q == 'E')) {
            const char *r = q + 1;
            if (r < lx->end && (*r == '+' || *r == '-')) r++;
            if (r < lx->end && is_digit(*r)) {
                flt = true;
                q = r;
                while (q < lx->end && is_digit(*q)) q++;
            }
        }
        mk(lx, t, flt ? TK_FLOAT : TK_INT, p, (uint32_t)(q - p));
        lx->p = q;
        return;
    }
    if (c == '"' || c == '\'') {
        const char *q = p + 1;
        while (q < lx->end && *q != c) {
            if (*q == '\n' || *q == '\0') break;
            if (*q == '\\' && q + 1 < lx->end && q[1] != '\n' && q[1] != '\0') q++;
            q++;
        }
        if (q < lx->end && *q == '\0') {
            /* strings are kept as C strings: a NUL would cut one short (and its print) */
            err(lx, t, q, "NUL character in a string");
            return;
        }
        if (q >= lx->end || *q != c) {
            err(lx, t, p, "unterminated string");
            return;
        }
        mk(lx, t, TK_STRING, p, (uint32_t)(q + 1 - p));
        lx->p = q + 1;
        return;
    }
    if (c == '/' && p + 1 < lx->end && p[1] == '/') {
        mk(lx, t, TK_DSLASH, p, 2);
        lx->p = p + 2;
        return;
    }
    if (c == '-' && p + 1 < lx->end && p[1] == '>') {
        mk(lx, t, TK_ARROW, p, 2);
        lx->p = p + 2;
        return;
    }
    if (cc_is(c, CC_PUNCT)) {
        mk(lx, t, TK_PUNCT, p, 1);
        t->ch = c;
        lx->p = p + 1;
        if (c == '(' || c == '[' || c == '{') lx->paren++;
        else if ((c == ')' || c == ']' || c == '}') && lx->paren > 0) lx->paren--;
        return;
    }
    err(lx, t, p, (unsigned char)c >= 0x80 ? "non-ASCII character outside a string"
                                            : "unexpected character");
}
