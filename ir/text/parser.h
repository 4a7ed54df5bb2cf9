/* The text format parser. Errors are GR_ERR_PARSE (syntax) or GR_ERR_TYPE (struct info) with
 * the diag message "file:line:col: message", then the offending line and a caret. */
#ifndef GRAFT_IR_TEXT_PARSER_H
#define GRAFT_IR_TEXT_PARSER_H

#include "base/api.h"

#include <stddef.h>

#include "ir/expr.h"

/* Parses a module; *out lives in ctx. `name` is used in messages (e.g. the file name). */
GR_API gr_status ir_parse_module(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                                 ir_module **out, gr_diag *diag);
GR_API gr_status ir_parse_file(ir_ctx_t *ctx, const char *path, ir_module **out, gr_diag *diag);

/* Options for tools that need more than the module (all fields optional). */
typedef struct ir_parse_opts {
    /* When set: every op call that had attributes written in the text gets an entry
     * GR_MAP_PTR(ir_call *) -> GR_MAP_PTR(const ir_attrs *) holding the attrs as written (before
     * the op's defaults are filled in). Pattern files use it: written attrs must match. */
    gr_map *written_attrs;
    /* Pattern files: required attributes may be left out, and an op call whose struct info
     * cannot be inferred (an argument is a wildcard R.Object) gets R.Object instead of an
     * error. */
    bool lenient;
} ir_parse_opts;
gr_status ir_parse_module_opts(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                               const ir_parse_opts *opts, ir_module **out, gr_diag *diag);

#endif
