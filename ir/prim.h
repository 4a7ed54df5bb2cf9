/* Symbolic integer expressions for shape dimensions: constants, vars, + - * // and %.
 *
 * Every ir_prim is hash-consed in its context and kept in a canonical form (a sum of
 * coefficient * product-of-atoms terms plus a constant, atoms being vars and floordiv/floormod
 * nodes), so two expressions that are equal after simplification are the same pointer:
 * `n + m` and `m + n` are one node, `n * 2 // 2` is `n`. Compare with `==`.
 * Vars have identity: ir_prim_var() makes a fresh var every call, even for a name seen before. */
#ifndef GRAFT_IR_PRIM_H
#define GRAFT_IR_PRIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir/ctx.h"

typedef enum ir_prim_kind {
    IR_PRIM_INT,       /* value */
    IR_PRIM_VAR,       /* name, var_id */
    IR_PRIM_FLOORDIV,  /* a // b, not further simplifiable */
    IR_PRIM_FLOORMOD,  /* a % b, not further simplifiable */
    IR_PRIM_POLY,      /* value + sum(terms[i].coef * prod(terms[i].factors)) */
} ir_prim_kind;

typedef struct ir_prim ir_prim;

typedef struct ir_prim_term {
    int64_t coef;                  /* never 0 */
    uint32_t nfactors;             /* >= 1, factors sorted by seq (repeats = powers) */
    const ir_prim *const *factors; /* each a VAR, FLOORDIV or FLOORMOD */
} ir_prim_term;

struct ir_prim {
    uint8_t kind;             /* ir_prim_kind */
    uint32_t seq;             /* creation order in the context; the canonical order of atoms */
    int64_t value;            /* INT: the value; POLY: the constant term */
    const char *name;         /* VAR: interned name */
    const ir_prim *a, *b;     /* FLOORDIV / FLOORMOD operands */
    uint32_t nterms;          /* POLY: >= 1 (a lone var with coef 1 and no constant is a VAR) */
    const ir_prim_term *terms;/* POLY: sorted by the factor lists */
};

const ir_prim *ir_prim_int(ir_ctx_t *ctx, int64_t v);
/* A fresh symbolic var (int64). */
const ir_prim *ir_prim_var(ir_ctx_t *ctx, const char *name);
const ir_prim *ir_prim_add(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b);
const ir_prim *ir_prim_sub(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b);
const ir_prim *ir_prim_mul(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b);
/* Floor division / modulo; a constant zero divisor returns NULL (the caller reports it). */
const ir_prim *ir_prim_floordiv(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b);
const ir_prim *ir_prim_floormod(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b);

bool ir_prim_is_int(const ir_prim *p, int64_t *value); /* value may be NULL */

/* Replaces vars by `map` (key: var pointer, value: replacement prim pointer; vars absent from
 * the map stay) and re-canonicalizes. */
const ir_prim *ir_prim_subst(ir_ctx_t *ctx, const ir_prim *p, const gr_map *map);
/* Evaluates with var values from `map` (key: var pointer, value: int64 bits). Returns false when
 * a var is unbound or a division by zero happens. */
bool ir_prim_eval(const ir_prim *p, const gr_map *var_values, int64_t *out);
/* A lower bound of p over every value >= 1 of its vars (dims); false when none is found. */
bool ir_prim_lower_bound(const ir_prim *p, int64_t *out);
/* Calls fn for each distinct var in p (in canonical order). */
void ir_prim_visit_vars(const ir_prim *p, void (*fn)(const ir_prim *var, void *user), void *user);

/* Prints in the text format (TVMScript precedence, e.g. `n * 2 + m`, `(n + 1) // 2`). */
void ir_prim_print(const ir_prim *p, FILE *out);
/* Same into buf (always NUL-terminated); returns the length it needed. */
int ir_prim_snprint(const ir_prim *p, char *buf, size_t size);

#endif
