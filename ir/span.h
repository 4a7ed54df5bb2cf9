/* Spans: where an expression came from.
 *
 * An ir_loc is one source location: a source name (a frontend layer name, an initializer name or
 * a file), an optional line/column range, and the output mark (seed 002: this expression
 * produces that layer's output). An ir_span is an ordered list of locs: one loc is TVM's Span,
 * several are a SequentialSpan. Spans are hash-consed and immutable; NULL means "no span".
 *
 * ir_span_seq() builds the canonical SequentialSpan the way MLIR's FusedLoc canonicalizes: nested
 * lists are flattened, empty spans dropped, duplicates (same source and range) removed keeping
 * the first occurrence (a duplicate's output mark is OR-ed into the kept one), and a list of one
 * loc is that loc's plain span. */
#ifndef GRAFT_IR_SPAN_H
#define GRAFT_IR_SPAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ctx.h"

typedef struct ir_loc {
    const char *source;             /* interned; never NULL in a span */
    int32_t line, col;              /* 1-based start, 0 when unknown */
    int32_t end_line, end_col;      /* 0 when unknown */
    uint8_t is_output;              /* produces the output of layer `source` */
    uint8_t pad_[3];                /* zero (spans are hash-consed bytewise) */
} ir_loc;

typedef struct ir_span {
    uint32_t n;                     /* >= 1 */
    ir_loc locs[];
} ir_span;

/* A span with one loc named `source` (interned here); NULL/empty source gives NULL. */
const ir_span *ir_span_named(ir_ctx_t *ctx, const char *source, bool is_output);
const ir_span *ir_span_from_loc(ir_ctx_t *ctx, const ir_loc *loc);
/* Canonical SequentialSpan of `n` spans (NULLs allowed); NULL when nothing is left. */
const ir_span *ir_span_seq(ir_ctx_t *ctx, const ir_span *const *parts, uint32_t n);
const ir_span *ir_span_concat(ir_ctx_t *ctx, const ir_span *a, const ir_span *b);
/* The same span with every output mark set (or cleared). */
const ir_span *ir_span_with_output(ir_ctx_t *ctx, const ir_span *s, bool is_output);
bool ir_span_has_source(const ir_span *s, const char *source);
bool ir_span_is_output_of(const ir_span *s, const char *source);

/* The frontend layer a span names first (its first loc's source); NULL for no span. Error paths
 * use it for gr_fail's layer instead of reaching into locs[]. */
const char *ir_span_layer(const ir_span *s);

/* Text form, used by the printer and the parser (see README "Spans"):
 *   "conv1"                   a layer
 *   "conv1"!                  ... whose output this expression produces
 *   "model.py":3:5-3:20       a source range (":line:col" alone is fine)
 *   ["conv1", "bn1"!]          a SequentialSpan */
void ir_span_print(const ir_span *s, FILE *out);

#endif
