/* Symbolic dims: canonical forms, hash-consing, floordiv/floormod rules, subst/eval, printing. */
#include <criterion/criterion.h>
#include <string.h>

#include "ir/prim.h"

static ir_ctx_t *ctx;
static const ir_prim *n, *m;

static void setup(void) {
    ctx = ir_ctx_new();
    n = ir_prim_var(ctx, "n");
    m = ir_prim_var(ctx, "m");
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(prim, .init = setup, .fini = teardown);

static const ir_prim *I(int64_t v) { return ir_prim_int(ctx, v); }
static const ir_prim *add(const ir_prim *a, const ir_prim *b) { return ir_prim_add(ctx, a, b); }
static const ir_prim *sub(const ir_prim *a, const ir_prim *b) { return ir_prim_sub(ctx, a, b); }
static const ir_prim *mul(const ir_prim *a, const ir_prim *b) { return ir_prim_mul(ctx, a, b); }
static const ir_prim *fdiv(const ir_prim *a, const ir_prim *b) { return ir_prim_floordiv(ctx, a, b); }
static const ir_prim *fmod_(const ir_prim *a, const ir_prim *b) { return ir_prim_floormod(ctx, a, b); }

static const char *str(const ir_prim *p) {
    static char buf[256];
    ir_prim_snprint(p, buf, sizeof(buf));
    return buf;
}

Test(prim, constants_are_hash_consed) {
    cr_assert_eq(I(7), I(7));
    cr_assert_neq(I(7), I(8));
    int64_t v = 0;
    cr_assert(ir_prim_is_int(I(-3), &v));
    cr_assert_eq(v, -3);
    cr_assert_not(ir_prim_is_int(n, NULL));
    cr_assert_eq(add(I(2), I(3)), I(5));
    cr_assert_eq(mul(I(4), I(-3)), I(-12));
    cr_assert_eq(sub(I(4), I(9)), I(-5));
}

Test(prim, vars_have_identity) {
    const ir_prim *n2 = ir_prim_var(ctx, "n");
    cr_assert_neq(n, n2);
    cr_assert_eq(n->kind, IR_PRIM_VAR);
    cr_assert_str_eq(n->name, "n");
    cr_assert_lt(n->seq, m->seq);
    cr_assert_neq(add(n, I(1)), add(n2, I(1)));
}

Test(prim, addition_is_commutative_and_canonical) {
    cr_assert_eq(add(n, m), add(m, n));
    cr_assert_eq(add(add(n, I(1)), m), add(add(m, I(1)), n));
    cr_assert_eq(sub(add(n, m), m), n);          /* n + m - m = n (a lone var) */
    cr_assert_eq(sub(n, n), I(0));
    cr_assert_eq(add(n, n), mul(n, I(2)));
    cr_assert_eq(add(n, I(0)), n);
    cr_assert_eq(mul(n, I(1)), n);
    cr_assert_eq(mul(n, I(0)), I(0));
    cr_assert_eq(add(n, m)->kind, IR_PRIM_POLY);
}

Test(prim, multiplication_distributes) {
    /* (n + 1) * (n - 1) == n * n - 1 */
    const ir_prim *lhs = mul(add(n, I(1)), sub(n, I(1)));
    const ir_prim *rhs = sub(mul(n, n), I(1));
    cr_assert_eq(lhs, rhs);
    cr_assert_str_eq(str(lhs), "n * n - 1");
    cr_assert_eq(mul(n, m), mul(m, n));
    cr_assert_eq(mul(mul(n, I(2)), I(3)), mul(n, I(6)));
    /* (n + m) * 2 = n * 2 + m * 2 */
    cr_assert_eq(mul(add(n, m), I(2)), add(mul(n, I(2)), mul(m, I(2))));
}

Test(prim, floordiv_and_floormod_rules) {
    /* constant folding with floor semantics (like Python) */
    cr_assert_eq(fdiv(I(7), I(2)), I(3));
    cr_assert_eq(fdiv(I(-7), I(2)), I(-4));
    cr_assert_eq(fdiv(I(7), I(-2)), I(-4));
    cr_assert_eq(fmod_(I(-7), I(2)), I(1));
    cr_assert_eq(fmod_(I(7), I(-2)), I(-1));
    cr_assert_eq(fmod_(I(6), I(3)), I(0));
    /* exact division */
    cr_assert_eq(fdiv(add(mul(n, I(4)), I(8)), I(4)), add(n, I(2)));
    cr_assert_eq(fdiv(mul(n, I(2)), I(2)), n);
    cr_assert_eq(fmod_(add(mul(n, I(4)), I(8)), I(4)), I(0));
    cr_assert_eq(fdiv(n, I(1)), n);
    /* multiples of the divisor move out of the division (exact for every integer) */
    cr_assert_eq(fdiv(add(mul(n, I(2)), I(1)), I(2)), n);
    cr_assert_eq(fdiv(add(mul(n, I(4)), add(m, I(1))), I(4)), add(n, fdiv(add(m, I(1)), I(4))));
    cr_assert_eq(fmod_(add(mul(n, I(4)), I(5)), I(4)), I(1));
    cr_assert_eq(fmod_(add(mul(n, I(4)), m), I(4)), fmod_(m, I(4)));
    cr_assert_eq(fdiv(sub(n, I(1)), I(2))->kind, IR_PRIM_FLOORDIV); /* (n - 1) // 2 stays */
    cr_assert_eq(fmod_(n, I(1)), I(0));
    /* otherwise an atom, itself hash-consed */
    const ir_prim *q = fdiv(add(n, I(1)), I(2));
    cr_assert_eq(q->kind, IR_PRIM_FLOORDIV);
    cr_assert_eq(q, fdiv(add(I(1), n), I(2)));
    cr_assert_eq(fmod_(n, I(3))->kind, IR_PRIM_FLOORMOD);
    cr_assert_eq(fdiv(n, m)->kind, IR_PRIM_FLOORDIV);
    /* division by a constant zero */
    cr_assert_null(fdiv(n, I(0)));
    cr_assert_null(fmod_(I(3), I(0)));
    cr_assert_null(fdiv(I(3), I(0)));
}

Test(prim, atoms_combine_in_polynomials) {
    const ir_prim *q = fdiv(n, I(2));
    cr_assert_eq(sub(add(q, I(1)), q), I(1));
    cr_assert_eq(add(q, q), mul(q, I(2)));
    cr_assert_eq(mul(q, m), mul(m, q));
}

Test(prim, substitution) {
    gr_map map;
    gr_map_init(&map);
    gr_map_put(&map, GR_MAP_PTR(n), GR_MAP_PTR(I(6)));
    const ir_prim *e = add(mul(n, m), fdiv(n, I(4)));
    const ir_prim *r = ir_prim_subst(ctx, e, &map);
    cr_assert_eq(r, add(mul(m, I(6)), I(1)));
    gr_map_put(&map, GR_MAP_PTR(m), GR_MAP_PTR(n));
    gr_map_put(&map, GR_MAP_PTR(n), GR_MAP_PTR(m));
    cr_assert_eq(ir_prim_subst(ctx, sub(n, mul(m, I(2))), &map), sub(m, mul(n, I(2))));
    /* a divisor becoming zero */
    gr_map_clear(&map);
    gr_map_put(&map, GR_MAP_PTR(m), GR_MAP_PTR(I(0)));
    cr_assert_null(ir_prim_subst(ctx, fdiv(n, m), &map));
    cr_assert_eq(ir_prim_subst(ctx, n, NULL), n);
    gr_map_free(&map);
}

Test(prim, evaluation) {
    gr_map vals;
    gr_map_init(&vals);
    gr_map_put(&vals, GR_MAP_PTR(n), (uint64_t)(int64_t)-7);
    gr_map_put(&vals, GR_MAP_PTR(m), 3);
    int64_t out = 0;
    cr_assert(ir_prim_eval(add(mul(n, m), I(1)), &vals, &out));
    cr_assert_eq(out, -20);
    cr_assert(ir_prim_eval(fdiv(n, I(2)), &vals, &out));
    cr_assert_eq(out, -4);
    cr_assert(ir_prim_eval(fmod_(n, m), &vals, &out));
    cr_assert_eq(out, 2);
    const ir_prim *k = ir_prim_var(ctx, "k");
    cr_assert_not(ir_prim_eval(add(k, I(1)), &vals, &out));
    gr_map_put(&vals, GR_MAP_PTR(k), 0);
    cr_assert_not(ir_prim_eval(fdiv(n, k), &vals, &out));
    gr_map_free(&vals);
}

static void collect(const ir_prim *v, void *user) {
    char *s = user;
    strcat(s, v->name);
}

Test(prim, visit_vars_in_order_once) {
    char seen[16] = "";
    ir_prim_visit_vars(add(mul(m, n), add(fdiv(n, m), n)), collect, seen);
    cr_assert_str_eq(seen, "nm");
    seen[0] = '\0';
    ir_prim_visit_vars(I(3), collect, seen);
    cr_assert_str_eq(seen, "");
}

Test(prim, printing) {
    cr_assert_str_eq(str(I(-5)), "-5");
    cr_assert_str_eq(str(n), "n");
    cr_assert_str_eq(str(add(m, n)), "n + m");
    cr_assert_str_eq(str(mul(n, I(2))), "n * 2");
    cr_assert_str_eq(str(add(add(mul(n, m), mul(n, I(2))), I(1))), "n * m + n * 2 + 1");
    cr_assert_str_eq(str(sub(n, mul(m, I(3)))), "n - m * 3");
    cr_assert_str_eq(str(sub(n, I(4))), "n - 4");
    cr_assert_str_eq(str(sub(I(1), n)), "-n + 1");
    cr_assert_str_eq(str(add(fdiv(sub(n, I(1)), I(2)), I(1))), "(n - 1) // 2 + 1");
    cr_assert_str_eq(str(fmod_(add(n, m), I(3))), "(n + m) % 3");
    cr_assert_str_eq(str(fdiv(n, add(m, I(1)))), "n // (m + 1)");
    cr_assert_str_eq(str(mul(m, fdiv(n, I(2)))), "m * (n // 2)");
    cr_assert_str_eq(str(mul(fdiv(n, I(2)), I(3))), "n // 2 * 3");
    /* a leading negative atom keeps its coefficient: a prefix minus would bind to n */
    cr_assert_str_eq(str(sub(I(1), fdiv(n, I(2)))), "n // 2 * -1 + 1");
    cr_assert_str_eq(str(sub(I(0), mul(n, I(3)))), "-n * 3");
    cr_assert_str_eq(str(fdiv(mul(n, m), I(2))), "n * m // 2");
    cr_assert_str_eq(str(fdiv(n, fdiv(m, I(2)))), "n // (m // 2)");
    /* truncation still reports the full length */
    char small[4];
    int len = ir_prim_snprint(add(mul(n, m), I(10)), small, sizeof(small));
    cr_assert_eq(len, (int)strlen("n * m + 10"));
    cr_assert_str_eq(small, "n *");
}

Test(prim, many_constants_are_cheap) {
    /* The IR benchmark's pattern: a million constant dims all hash-cons to few nodes. */
    size_t before = ir_ctx_arena_bytes(ctx);
    for (int i = 0; i < 200000; i++) cr_assert_eq(I(i % 64), I(i % 64));
    cr_assert_lt(ir_ctx_arena_bytes(ctx) - before, (size_t)64 * 1024);
}

/* A symbolic divisor is a dim or a product of dims (never 0): x // x is 1, x % x is 0 (Swin's
 * batch * windows / windows). */
Test(prim, an_expression_divided_by_itself) {
    const ir_prim *w = mul(fdiv(add(n, I(6)), I(7)), fdiv(add(m, I(6)), I(7)));
    cr_expect_eq(fdiv(w, w), I(1), "%s", str(fdiv(w, w)));
    cr_expect_eq(fmod_(w, w), I(0), "%s", str(fmod_(w, w)));
    cr_expect_neq(fdiv(n, m), I(1));
}
