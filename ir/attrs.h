/* Typed attributes of ops, functions and modules: an ordered list of (key, value). */
#ifndef GRAFT_IR_ATTRS_H
#define GRAFT_IR_ATTRS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/object.h"
#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/prim.h"

struct ir_expr;

typedef enum ir_attr_kind {
    IR_ATTR_NONE,   /* None */
    IR_ATTR_BOOL,
    IR_ATTR_INT,
    IR_ATTR_FLOAT,
    IR_ATTR_STR,
    IR_ATTR_DTYPE,  /* printed as a string: "float32" */
    IR_ATTR_ARRAY,  /* [a, b, ...] */
    IR_ATTR_MAP,    /* {k: v, ...}: items holds 2*n entries k0, v0, k1, v1, ... */
    IR_ATTR_EXPR,   /* an IR expression (e.g. var_map values, const_name_to_constant) */
    IR_ATTR_PRIM,   /* a symbolic integer */
    IR_ATTR_OBJ,    /* a refcounted runtime object (external_mods); held by the context */
} ir_attr_kind;

typedef struct ir_attr ir_attr;
struct ir_attr {
    uint8_t kind;
    union {
        bool b;
        int64_t i;
        double f;
        const char *s;      /* interned */
        ir_dtype dtype;
        struct { uint32_t n; const ir_attr *items; } arr;
        struct ir_expr *expr;
        const ir_prim *prim;
        gr_object *obj;
    } u;
};

typedef struct ir_attrs {
    uint32_t n;
    const char *const *keys;  /* interned */
    const ir_attr *vals;
} ir_attrs;

static inline ir_attr ir_attr_none(void) { ir_attr a = {.kind = IR_ATTR_NONE}; return a; }
static inline ir_attr ir_attr_bool(bool b) { ir_attr a = {.kind = IR_ATTR_BOOL, .u.b = b}; return a; }
static inline ir_attr ir_attr_int(int64_t i) { ir_attr a = {.kind = IR_ATTR_INT, .u.i = i}; return a; }
static inline ir_attr ir_attr_float(double f) { ir_attr a = {.kind = IR_ATTR_FLOAT, .u.f = f}; return a; }
static inline ir_attr ir_attr_dtype(ir_dtype t) { ir_attr a = {.kind = IR_ATTR_DTYPE, .u.dtype = t}; return a; }
ir_attr ir_attr_str(ir_ctx_t *ctx, const char *s);
ir_attr ir_attr_ints(ir_ctx_t *ctx, uint32_t n, const int64_t *v);
ir_attr ir_attr_array(ir_ctx_t *ctx, uint32_t n, const ir_attr *items);  /* copies items */
ir_attr ir_attr_expr(struct ir_expr *e);
/* Retains obj; the context releases it when freed. */
ir_attr ir_attr_obj(ir_ctx_t *ctx, gr_object *obj);

/* Builds attrs from parallel arrays (copied; keys interned). n == 0 gives NULL. */
const ir_attrs *ir_attrs_new(ir_ctx_t *ctx, uint32_t n, const char *const *keys, const ir_attr *vals);
/* A copy with `key` set (replaced in place, or appended). */
const ir_attrs *ir_attrs_set(ir_ctx_t *ctx, const ir_attrs *attrs, const char *key, ir_attr val);
/* A copy without `key`. */
const ir_attrs *ir_attrs_remove(ir_ctx_t *ctx, const ir_attrs *attrs, const char *key);

/* Lookups (attrs may be NULL). */
const ir_attr *ir_attrs_get(const ir_attrs *attrs, const char *key);
int64_t ir_attrs_get_int(const ir_attrs *attrs, const char *key, int64_t dflt);
double ir_attrs_get_float(const ir_attrs *attrs, const char *key, double dflt);
bool ir_attrs_get_bool(const ir_attrs *attrs, const char *key, bool dflt);
const char *ir_attrs_get_str(const ir_attrs *attrs, const char *key);  /* NULL when absent */
/* Copies up to `max` ints of an int array; returns the array length, or -1 when absent/None. */
int ir_attrs_get_ints(const ir_attrs *attrs, const char *key, int64_t *out, int max);

bool ir_attr_equal(const ir_attr *a, const ir_attr *b);
/* A double-quoted string literal with \" \\ \n \t and \xNN escapes (attrs and spans). */
void ir_print_str_literal(const char *s, FILE *out);
/* Text form as in TVMScript: 1, 1.5, True, None, "s", [1, 2], {"k": v}. */
void ir_attr_print(const ir_attr *a, FILE *out);

#endif
