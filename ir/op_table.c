/* The op table: TVM Relax op names, attribute schemas (TVM_ATTR_FIELD order, which is also the
 * printing order) with defaults in text form, and the inference function of each op. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/op_impl.h"

/* ---- attribute schemas ---- */
#define F(name, kind, dflt) {name, IR_ATTR_##kind, dflt}

static const ir_attr_field A_axis_m1[] = {F("axis", INT, "-1")};
static const ir_attr_field A_leakyrelu[] = {F("alpha", FLOAT, "0.01")};
static const ir_attr_field A_astype[] = {F("dtype", DTYPE, NULL)};


#undef F

/* ---- the table ---- */
#define NOATTRS NULL, 0
#define ATTRS(a) a, (uint16_t)(sizeof(a) / sizeof((a)[0]))
#define EW IR_OPF_ELEMWISE
#define BC (IR_OPF_ELEMWISE | IR_OPF_BROADCAST)

/* X(id, name relative to relax, min args, max args, flags, attrs, infer) */
#define IR_OPS(X)                                                                           \
    X(ADD, "add", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                                \
    X(SUBTRACT, "subtract", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                      \
    X(MULTIPLY, "multiply", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                      \
    X(DIVIDE, "divide", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                          \
    X(POWER, "power", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                            \
    X(MAXIMUM, "maximum", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                        \
    X(MINIMUM, "minimum", 2, 2, BC, NOATTRS, ir__infer_binary_arith)                        \
    X(FLOOR_DIVIDE, "floor_divide", 2, 2, BC, NOATTRS, ir__infer_binary_arith)              \
    X(EQUAL, "equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                              \
    X(NOT_EQUAL, "not_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                      \
    X(GREATER, "greater", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                          \
    X(GREATER_EQUAL, "greater_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)              \
    X(LESS, "less", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                                \
    X(LESS_EQUAL, "less_equal", 2, 2, BC, NOATTRS, ir__infer_binary_cmp)                    \
    X(EXP, "exp", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(LOG, "log", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(SQRT, "sqrt", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(RSQRT, "rsqrt", 1, 1, EW, NOATTRS, ir__infer_unary_float)                             \
    X(ERF, "erf", 1, 1, EW, NOATTRS, ir__infer_unary_float)                                 \
    X(TANH, "tanh", 1, 1, EW, NOATTRS, ir__infer_unary_float)                               \
    X(SIGMOID, "sigmoid", 1, 1, EW, NOATTRS, ir__infer_unary_float)                         \
    X(NEGATIVE, "negative", 1, 1, EW, NOATTRS, ir__infer_unary)                             \
    X(ABS, "abs", 1, 1, EW, NOATTRS, ir__infer_unary)                                       \
    X(RELU, "nn.relu", 1, 1, EW, NOATTRS, ir__infer_unary)                                  \
    X(SOFTMAX, "nn.softmax", 1, 1, EW, ATTRS(A_axis_m1), ir__infer_unary_float)             \
    X(LEAKYRELU, "nn.leakyrelu", 1, 1, EW, ATTRS(A_leakyrelu), ir__infer_unary_float)       \
    X(ASTYPE, "astype", 1, 1, EW, ATTRS(A_astype), ir__infer_astype)                        \
    X(CALL_DPS_PACKED, "call_dps_packed", 1, 2, IR_OPF_CALL_LIKE, NOATTRS, ir__infer_call_like) \
    X(CALL_TIR, "call_tir", 1, 3, IR_OPF_CALL_LIKE, NOATTRS, ir__infer_call_like)

enum {
#define X(id, name, mn, mx, fl, at, inf) OP_##id,
    IR_OPS(X)
#undef X
    OP_COUNT
};

static const ir_op_def op_table[OP_COUNT] = {
#define X(id, name, mn, mx, fl, at, inf) \
    [OP_##id] = {"relax." name, "R." name, mn, mx, fl, at, inf, OP_##id},
    IR_OPS(X)
#undef X
};

uint32_t ir_op_def_count(void) { return OP_COUNT; }

const ir_op_def *ir_op_def_at(uint32_t i) { return i < OP_COUNT ? &op_table[i] : NULL; }

/* Name lookup: a small hash index over the relax-relative names, built on first use (the
 * table is constant, so a racing second build writes the same values). */
enum { INDEX_CAP = 512 };
static uint16_t op_index[INDEX_CAP]; /* row + 1; 0 = empty */
static volatile int op_index_ready;

static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void build_index(void) {
    _Static_assert(OP_COUNT < INDEX_CAP / 2, "op index too small");
    for (uint32_t r = 0; r < OP_COUNT; r++) {
        const char *rel = op_table[r].name + 6; /* after "relax." */
        uint32_t i = name_hash(rel, strlen(rel)) & (INDEX_CAP - 1);
        while (op_index[i]) i = (i + 1) & (INDEX_CAP - 1);
        op_index[i] = (uint16_t)(r + 1);
    }
    op_index_ready = 1;
}

const ir_op_def *ir_op_def_find(const char *name) {
    if (!name) return NULL;
    if (!op_index_ready) build_index();
    if (strncmp(name, "relax.", 6) == 0) name += 6;
    else if (strncmp(name, "R.", 2) == 0) name += 2;
    size_t n = strlen(name);
    for (uint32_t i = name_hash(name, n) & (INDEX_CAP - 1); op_index[i];
         i = (i + 1) & (INDEX_CAP - 1)) {
        const ir_op_def *d = &op_table[op_index[i] - 1];
        if (strcmp(d->name + 6, name) == 0) return d;
    }
    return NULL;
}

bool ir_is_op_call(const ir_expr *e, const char *name) {
    if (!e || e->kind != IR_CALL) return false;
    const ir_op_def *d = ir__call_op((const ir_call *)e);
    if (!d || !name) return false;
    if (strncmp(name, "relax.", 6) == 0) return strcmp(d->name, name) == 0;
    if (strncmp(name, "R.", 2) == 0) return strcmp(d->text_name, name) == 0;
    return strcmp(d->name + 6, name) == 0;
}

const ir_op_def *ir__call_op(const ir_call *call) {
    if (!call || !call->callee || call->callee->kind != IR_OP) return NULL;
    return ((const ir_op *)call->callee)->def;
}

/* ---- diagnostics ---- */

const char *ir__sinfo_str(const ir_sinfo *s) {
    static char bufs[4][512];
    static unsigned next;
    char *b = bufs[next++ % 4];
    if (!s) snprintf(b, 512, "(no struct info)");
    else ir_sinfo_snprint(s, b, 512);
    return b;
}

const ir_sinfo *ir__op_err(const ir_call *call, gr_diag *diag, const char *fmt, ...) {
    const ir_op_def *d = ir__call_op(call);
    const char *op = d ? d->text_name : "call";
    const char *layer = call && call->base.span && call->base.span->n
                            ? call->base.span->locs[0].source : NULL;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (layer) gr_diag_set(diag, GR_ERR_TYPE, "%s: %s (layer '%s')", op, msg, layer);
    else gr_diag_set(diag, GR_ERR_TYPE, "%s: %s", op, msg);
    gr_diag_set_layer(diag, layer);
    gr_diag_set_op(diag, op);
    return NULL;
}

/* ---- inference entry ---- */

const ir_sinfo *ir_op_infer(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag) {
    const ir_op_def *d = ir__call_op(call);
    if (!d) {
        gr_diag_set(diag, GR_ERR_INVALID, "ir_op_infer: callee is not an op");
        return NULL;
    }
    if ((int)call->nargs < d->min_args || (d->max_args >= 0 && (int)call->nargs > d->max_args)) {
        if (d->min_args == d->max_args)
            return ir__op_err(call, diag, "expects %d argument%s, got %u", d->min_args,
                              d->min_args == 1 ? "" : "s", call->nargs);
        return ir__op_err(call, diag, "expects %d to %d arguments, got %u", d->min_args,
                          d->max_args, call->nargs);
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        if (!call->args[i]) return ir__op_err(call, diag, "argument %u is missing", i);
        /* Call-like ops take a callee (a gvar or extern func) that may lack struct info. */
        if (!call->args[i]->sinfo && !((d->flags & IR_OPF_CALL_LIKE) && i == 0))
            return ir__op_err(call, diag, "argument %u has no struct info", i);
    }
    return d->infer(ctx, call, diag);
}
