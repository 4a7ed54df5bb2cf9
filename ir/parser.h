/* The text format parser. Errors are GR_ERR_PARSE (syntax) or GR_ERR_TYPE (struct info) with
 * the diag message "file:line:col: message", then the offending line and a caret. */
#ifndef GRAFT_IR_PARSER_H
#define GRAFT_IR_PARSER_H

#include <stddef.h>

#include "ir/expr.h"

/* Parses a module; *out lives in ctx. `name` is used in messages (e.g. the file name). */
gr_status ir_parse_module(ir_ctx_t *ctx, const char *name, const char *text, size_t len,
                          ir_module **out, gr_diag *diag);
gr_status ir_parse_file(ir_ctx_t *ctx, const char *path, ir_module **out, gr_diag *diag);

#endif
