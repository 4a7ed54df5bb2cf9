/* Pattern tables in the text format (DESIGN.md "Pattern files").
 *
 * Each function of a .relax module is one pattern, in file order (earlier wins). Its
 * `Composite` attribute is the pattern name ("A.conv2d_relu": backend "A"); its params are
 * wildcards (plain R.Tensor matches any tensor; a dtype or shape constrains, symbolic dims match
 * any dim); its dataflow body is the pattern rooted at the returned var. Op attributes written
 * in the body must match; attributes left out match anything. A var used twice is one
 * sub-pattern (it must match one expression). The root binding is the annotation "root"; every
 * other binding is annotated with its var name.
 *
 * Functions with the same Composite name are one pattern: their alternatives, tried in file
 * order (TVM's `a | b`). A param of struct info R.Object is a wildcard of any struct info; an
 * op's required attributes may be left out (they then match anything).
 *
 * The Composite function's attribute "check" is a list of predicates, each a list naming a
 * param or a binding var of the body:
 *     ["const", x]            x is a constant
 *     ["dtype", x, "float16"] x's dtype                 ["ndim", x, 4]     x's rank
 *     ["shape", x, [1, -1, 8]] x's shape (-1: any dim)
 *     ["attr", v, "groups", 1] binding v's op attribute equals the value
 *     ["not_shape", x, [2, 3, 3]]  (and not_const, not_dtype, not_ndim, not_attr): negated
 *     ["only_used_by", a, b]  a's only user is b (TVM's a >> b)
 *     ["used_by", a, b]       a is used by b (what the body says already; accepted)
 *     ["check", "dnnl.nn.conv2d"]  the C check of that backend pattern (byoc resolves it)
 * e.g. R.func_attr({"Composite": "A.conv_f16", "check": [["dtype", "x", "float16"], ["const", "w"]]}).
 *
 *     pat_table *t = NULL;
 *     if (pat_table_read_file(ctx, "dnnl.relax", &t, &diag) == GR_OK) {
 *         for (uint32_t i = 0; i < t->n; i++) use(t->entries[i].name, t->entries[i].pattern);
 *         pat_table_free(t);
 *     }
 */
#ifndef GRAFT_PATTERNS_PATTERN_TEXT_H
#define GRAFT_PATTERNS_PATTERN_TEXT_H

#include "patterns/match.h"

typedef struct pat_table_entry {
    const char *name;          /* "A.conv2d_relu" (interned) */
    const char *backend;       /* "A" (interned; the part before the first '.') */
    const char *func_name;     /* the function's global name */
    const pat_t *pattern;      /* root pattern (annotated "root") */
    uint32_t nparams;
    const pat_t *const *params;  /* the param wildcards, in order */
    const ir_span *span;       /* the function's span (NULL when none) */
    /* match-time checks the file asks for ("check" attribute, below): */
    uint32_t nonly;            /* ["only_used_by", a, b]: a's var has exactly one user */
    const char *const *only;   /* ... the names a */
    uint32_t nnamed;           /* ["check", "dnnl.nn.conv2d"]: a backend's C check, by the */
    const char *const *named;  /* name of the backend pattern that carries it (byoc resolves) */
} pat_table_entry;

/* The check of the entry's "only_used_by" predicates (user: the entry); accepts when it has
 * none. */
bool pat_table_entry_check(const pat_check_ctx *c, const char **reason, void *user);

/* Heap table (pair with pat_table_free); the patterns live in the ir_ctx_t. */
typedef struct pat_table {
    uint32_t n, cap;
    pat_table_entry *entries;
} pat_table;

pat_table *pat_table_new(void);
void pat_table_free(pat_table *t);
/* Appends an entry (name interned; backend derived from it). */
void pat_table_add(ir_ctx_t *ctx, pat_table *t, const char *name, const pat_t *pattern);

/* Reads a table from text / a file. Errors (GR_ERR_PARSE, GR_ERR_INVALID) name the file, the
 * function and the construct that cannot be a pattern. */
gr_status pat_table_read(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                         pat_table **out, gr_diag *diag);
gr_status pat_table_read_file(ir_ctx_t *ctx, const char *path, pat_table **out, gr_diag *diag);
/* Reads a table from a parsed module whose op calls' written attrs are in `written` (call ->
 * ir_attrs as written, see ir_parse_opts.written_attrs; NULL: every attr must match). */
gr_status pat_table_from_module(ir_ctx_t *ctx, const ir_module *m, const gr_map *written,
                                pat_table **out, gr_diag *diag);

/* Prints the table in the text form above (reads back to the same patterns). Patterns that have
 * no text form (or/not/optional, unordered tuples, ...) are GR_ERR_UNSUPPORTED naming the entry. */
gr_status pat_print_table(const pat_table *t, FILE *out, gr_diag *diag);
char *pat_print_table_str(const pat_table *t, gr_diag *diag);   /* heap; free() */

#endif
