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
} pat_table_entry;

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

/* The table in the text form above (reads back to the same patterns), on the heap (free()).
 * Patterns that have no text form (or/not/optional, unordered tuples, ...) give NULL and
 * GR_ERR_UNSUPPORTED naming the entry. */
char *pat_print_table_str(const pat_table *t, gr_diag *diag);

#endif
