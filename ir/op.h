/* The op table: one row per op drives its name, attribute schema (with defaults), struct info
 * inference and printing. Rows live in ir/ops/op_table.c; shape inference in ir/ops/op_infer_*.c. */
#ifndef GRAFT_IR_OP_H
#define GRAFT_IR_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/expr.h"
#include "ir/op_list.h"

/* Op ids: one per row of the op list, in its order (IR_OP_CONV2D, IR_OP_ADD, ...). Tables of
 * other layers index by them, so a misspelt op is a compile error. */
typedef enum ir_op_id {
#define IR_OP_ID_(id, ...) IR_OP_##id,
    IR_OPS(IR_OP_ID_)
#undef IR_OP_ID_
    IR_OP_COUNT,
    IR_OP_NONE = -1              /* not an op of the table (a composite, an input, ...) */
} ir_op_id;

/* Op flags (bit set). */
enum {
    IR_OPF_ELEMWISE = 1u << 0,   /* output shape = input shape, one output per element */
    IR_OPF_BROADCAST = 1u << 1,  /* numpy broadcasting of the tensor args */
    IR_OPF_REDUCE = 1u << 2,     /* reduction over `axis` */
    IR_OPF_IMPURE = 1u << 3,     /* side effects (call_dps_packed is not; kept for later ops) */
    IR_OPF_CALL_LIKE = 1u << 4,  /* call_dps_packed / call_tir: first arg is the callee, then a
                                    tuple of args, result from sinfo_args (out_sinfo=...) */
    IR_OPF_CREATION = 1u << 5,   /* zeros/ones/full: output from a shape argument */
};

typedef struct ir_attr_field {
    const char *name;
    uint8_t kind;                /* ir_attr_kind expected (IR_ATTR_ARRAY: a list of ints) */
    const char *dflt;            /* default in text form ("[1, 1]", "None", "\"NCHW\""); NULL =
                                    required */
} ir_attr_field;

/* Infers the struct info of an op call whose args are normalized (have struct info).
 * Returns NULL and fills diag on error; the message names the op, the span's layer and the
 * shapes involved. */
typedef const ir_sinfo *(*ir_infer_fn)(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag);

typedef struct ir_op_def {
    const char *name;            /* "relax.nn.conv2d" */
    const char *text_name;       /* "R.nn.conv2d" */
    int16_t min_args, max_args;  /* max_args -1: variadic */
    uint32_t flags;              /* IR_OPF_* */
    const ir_attr_field *attrs;  /* schema, in printing order */
    uint16_t nattrs;
    ir_infer_fn infer;
    uint16_t index;              /* row number in the table: its ir_op_id */
} ir_op_def;

/* Looks an op up by "relax.x", "R.x" or "x" relative to relax ("nn.conv2d"); NULL if none. */
const ir_op_def *ir_op_def_find(const char *name);
uint32_t ir_op_def_count(void);
const ir_op_def *ir_op_def_at(uint32_t i);

/* Checks `given` against the op's schema and returns attrs in schema order with defaults filled
 * in (every field present). Unknown keys, wrong kinds and missing required fields are errors. */
gr_status ir_op_attrs_normalize(ir_ctx_t *ctx, const ir_op_def *def, const ir_attrs *given,
                                const ir_attrs **out, gr_diag *diag);
/* Same; with `partial`, a required field left out is None instead of an error (pattern files:
 * an attribute not written does not constrain the match). */
gr_status ir_op_attrs_normalize_ex(ir_ctx_t *ctx, const ir_op_def *def, const ir_attrs *given,
                                   bool partial, const ir_attrs **out, gr_diag *diag);

/* The Op node of op `id` (IR_OP_CONV2D, ...); NULL for an id outside the table. */
ir_op *ir_op_get_id(ir_ctx_t *ctx, ir_op_id id);
/* A call of op `id`, as the importers and passes build them: the nattrs key/value pairs are
 * checked against the op's schema and the other fields defaulted. No struct info yet. NULL and
 * diag on an id outside the table or a bad attribute. */
ir_call *ir_call_op(ir_ctx_t *ctx, ir_op_id id, uint32_t nargs, ir_expr *const *args,
                    uint32_t nattrs, const char *const *keys, const ir_attr *vals,
                    const ir_span *span, gr_diag *diag);

/* Struct info of an op call (calls def->infer). */
/* The inference of the broadcasting arithmetic ops (add, subtract, ...), which the builder
 * memoizes on its operands' struct info. */
const ir_sinfo *ir__infer_binary_arith(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag);
const ir_sinfo *ir_op_infer(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag);

/* The id of an op name ("relax.add", "R.add" or "add"); IR_OP_NONE when the table has none. */
ir_op_id ir_op_id_find(const char *name);
/* The id of a row of the table; IR_OP_NONE for any other def (a test's stand-in). */
ir_op_id ir_op_def_id(const ir_op_def *d);
/* The id of the op e calls; IR_OP_NONE when e is not a call of an op. */
ir_op_id ir_op_id_of(const ir_expr *e);

/* True when e is a call of the op named `name` ("relax.add" or "R.add"). Code that knows the
 * op compares ids instead (ir_op_id_of(e) == IR_OP_ADD): scripts/check_op_names.sh. */
bool ir_is_op_call(const ir_expr *e, const char *name);

#endif
