/* The text-format lexer (ir/text/lexer.c), shared with the parser (ir/text/parser.c). */
#ifndef GRAFT_IR_TEXT_PARSER_IMPL_H
#define GRAFT_IR_TEXT_PARSER_IMPL_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ir_tok_kind {
    TK_EOF,
    TK_NEWLINE,
    TK_INDENT,
    TK_DEDENT,
    TK_NAME,
    TK_INT,
    TK_FLOAT,
    TK_STRING,   /* s/len cover the quotes */
    TK_SPANC,    /* a `# span: ...` comment: s/len cover the text after '#' */
    TK_PUNCT,    /* ch: one of ()[]{},:.=+-*%@!; */
    TK_DSLASH,   /* // */
    TK_ARROW,    /* -> */
    TK_ERROR,    /* lexer error: msg holds the reason */
} ir_tok_kind;

typedef struct ir_tok {
    uint8_t kind;
    char ch;
    uint32_t len;
    const char *s;
    int line, col;
    const char *msg;  /* TK_ERROR */
} ir_tok;

enum { IR_LEX_MAX_INDENT = 100 };

typedef struct ir_lexer {
    const char *src, *p, *end;      /* whole text (for line display), cursor, limit */
    int line;
    const char *line_start;
    int paren;                      /* bracket depth: newlines and indentation ignored inside */
    bool sub;                       /* a fragment (comment, quoted dims): no lines */
    bool at_bol;                    /* at the beginning of a logical line */
    bool need_newline;              /* a logical line is open (emit NEWLINE before EOF) */
    int pending;                    /* >0: INDENT pending; <0: that many DEDENTs pending */
    int nindent;
    int indents[IR_LEX_MAX_INDENT];
} ir_lexer;

/* A lexer over src[0..len), starting at `start` (a line start) for whole files. */
void ir_lex_init(ir_lexer *lx, const char *src, const char *start, const char *end, int line);
/* A lexer over a fragment [s, e) of one line (inside a comment or a string). */
void ir_lex_init_sub(ir_lexer *lx, const char *src, const char *s, const char *e, int line,
                     const char *line_start);
void ir_lex_next(ir_lexer *lx, ir_tok *t);

#endif
