/* The text format printer (TVMScript as TVM prints Relax; README "Text format"). */
#ifndef GRAFT_IR_TEXT_PRINTER_H
#define GRAFT_IR_TEXT_PRINTER_H

#include <stdbool.h>
#include <stdio.h>

#include "base/api.h"
#include "ir/expr.h"

typedef struct ir_print_opts {
    bool no_spans;      /* omit spans */
    bool no_metadata;   /* omit the metadata section (constants print as references only) */
} ir_print_opts;

/* opts may be NULL (defaults: spans and metadata printed). */
GR_API void ir_print_module(const ir_module *m, FILE *out, const ir_print_opts *opts);
void ir_print_expr(const ir_expr *e, FILE *out, const ir_print_opts *opts);
/* Into a heap string; caller frees with free(). */
char *ir_print_module_str(const ir_module *m, const ir_print_opts *opts);
char *ir_print_expr_str(const ir_expr *e, const ir_print_opts *opts);

#endif
