/* Symbolic integer expressions: hash-consed canonical polynomials.
 *
 * A canonical prim is INT (constant), an atom (VAR, FLOORDIV, FLOORMOD) or a POLY
 * (constant + terms). Terms are sorted by degree (descending), then by their factor lists;
 * factors (atoms) are sorted by atom order: vars by creation seq, then div/mod atoms
 * structurally. Only vars carry a seq (a fresh one each, which also makes every var a distinct
 * hash-consed node); other nodes have seq 0, so equal values hash-cons to one pointer. Factor
 * and term arrays are interned separately, so two equal factor lists are one pointer too. */
#include "ir/prim.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "ir/ctx_impl.h"

enum { PRIM_TAG = 0x5052494d, FACT_TAG = 0x46414354, TERM_TAG = 0x5445524d };

/* Wrapping arithmetic: user shapes may overflow int64, which must not be UB. */
static int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static int64_t floordiv_i(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a); /* INT64_MIN / -1 wraps */
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static int64_t floormod_i(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static const ir_prim *intern_node(ir_ctx_t *ctx, const ir_prim *key) {
    return ir_hashcons(ctx, PRIM_TAG, key, sizeof(*key));
}

static ir_prim blank(ir_prim_kind kind) {
    ir_prim p;
    memset(&p, 0, sizeof(p)); /* padding must be zero: hash-consing compares bytes */
    p.kind = (uint8_t)kind;
    return p;
}

const ir_prim *ir_prim_int(ir_ctx_t *ctx, int64_t v) {
    ir_prim p = blank(IR_PRIM_INT);
    p.value = v;
    return intern_node(ctx, &p);
}

const ir_prim *ir_prim_var(ir_ctx_t *ctx, const char *name) {
    ir_prim p = blank(IR_PRIM_VAR);
    p.seq = ir__ctx_next_seq(ctx);
    p.name = ir_intern(ctx, name ? name : "v");
    return intern_node(ctx, &p);
}

bool ir_prim_is_int(const ir_prim *p, int64_t *value) {
    if (!p || p->kind != IR_PRIM_INT) return false;
    if (value) *value = p->value;
    return true;
}

/* ---- ordering ---- */

static int cmp_prim(const ir_prim *a, const ir_prim *b);

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

static int cmp_factors(uint32_t na, const ir_prim *const *fa, uint32_t nb,
                       const ir_prim *const *fb) {
    if (fa == fb && na == nb) return 0;
    if (na != nb) return na > nb ? -1 : 1; /* higher degree first */
    for (uint32_t i = 0; i < na; i++) {
        int c = cmp_prim(fa[i], fb[i]);
        if (c) return c;
    }
    return 0;
}

/* A total order on canonical prims (pointer-equal iff 0). */
static int cmp_prim(const ir_prim *a, const ir_prim *b) {
    if (a == b) return 0;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    switch ((ir_prim_kind)a->kind) {
    case IR_PRIM_INT: return cmp_i64(a->value, b->value);
    case IR_PRIM_VAR: return a->seq < b->seq ? -1 : a->seq > b->seq;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD: {
        int c = cmp_prim(a->a, b->a);
        return c ? c : cmp_prim(a->b, b->b);
    }
    case IR_PRIM_POLY: {
        uint32_t n = a->nterms < b->nterms ? a->nterms : b->nterms;
        for (uint32_t i = 0; i < n; i++) {
            const ir_prim_term *x = &a->terms[i], *y = &b->terms[i];
            int c = cmp_factors(x->nfactors, x->factors, y->nfactors, y->factors);
            if (c) return c;
            if (x->coef != y->coef) return cmp_i64(x->coef, y->coef);
        }
        if (a->nterms != b->nterms) return a->nterms < b->nterms ? -1 : 1;
        return cmp_i64(a->value, b->value);
    }
    }
    return 0;
}

/* ---- scratch polynomials ---- */

typedef struct pterm {
    int64_t coef;
    uint32_t nf;
    const ir_prim *const *f; /* interned factor list */
} pterm;

typedef struct poly {
    int64_t cst;
    uint32_t n, cap;
    pterm *t;
    pterm small[8];
} poly;

static void poly_init(poly *p) {
    p->cst = 0;
    p->n = 0;
    p->cap = 8;
    p->t = p->small;
}

static void poly_free(poly *p) {
    if (p->t != p->small) free(p->t);
}

static void poly_push(poly *p, int64_t coef, uint32_t nf, const ir_prim *const *f) {
    if (coef == 0) return;
    if (p->n == p->cap) {
        uint32_t ncap = p->cap * 2;
        pterm *nt = gr_xmalloc(sizeof(pterm) * ncap);
        memcpy(nt, p->t, sizeof(pterm) * p->n);
        if (p->t != p->small) free(p->t);
        p->t = nt;
        p->cap = ncap;
    }
    p->t[p->n++] = (pterm){coef, nf, f};
}

static const ir_prim *const *intern_factors(ir_ctx_t *ctx, uint32_t n, const ir_prim *const *f) {
    return ir_hashcons(ctx, FACT_TAG, f, sizeof(*f) * n);
}

/* Adds k * p into acc. */
static void poly_add_prim(ir_ctx_t *ctx, poly *acc, const ir_prim *p, int64_t k) {
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: acc->cst = wadd(acc->cst, wmul(k, p->value)); return;
    case IR_PRIM_POLY:
        acc->cst = wadd(acc->cst, wmul(k, p->value));
        for (uint32_t i = 0; i < p->nterms; i++)
            poly_push(acc, wmul(k, p->terms[i].coef), p->terms[i].nfactors, p->terms[i].factors);
        return;
    default: {
        const ir_prim *one[1] = {p};
        poly_push(acc, k, 1, intern_factors(ctx, 1, one));
        return;
    }
    }
}

static int cmp_pterm(const void *x, const void *y) {
    const pterm *a = x, *b = y;
    return cmp_factors(a->nf, a->f, b->nf, b->f);
}

/* Sorts and combines the terms, then builds the canonical node. */
static const ir_prim *poly_finish(ir_ctx_t *ctx, poly *p) {
    if (p->n > 1) qsort(p->t, p->n, sizeof(pterm), cmp_pterm);
    uint32_t m = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (m > 0 && p->t[m - 1].f == p->t[i].f && p->t[m - 1].nf == p->t[i].nf) {
            p->t[m - 1].coef = wadd(p->t[m - 1].coef, p->t[i].coef);
        } else {
            if (m > 0 && p->t[m - 1].coef == 0) m--;
            p->t[m++] = p->t[i];
        }
    }
    if (m > 0 && p->t[m - 1].coef == 0) m--;
    const ir_prim *r;
    if (m == 0) {
        r = ir_prim_int(ctx, p->cst);
    } else if (m == 1 && p->cst == 0 && p->t[0].coef == 1 && p->t[0].nf == 1) {
        r = p->t[0].f[0];
    } else {
        ir_prim_term stack[8];
        ir_prim_term *terms = m <= 8 ? stack : gr_xmalloc(sizeof(ir_prim_term) * m);
        memset(terms, 0, sizeof(ir_prim_term) * m);
        for (uint32_t i = 0; i < m; i++) {
            terms[i].coef = p->t[i].coef;
            terms[i].nfactors = p->t[i].nf;
            terms[i].factors = p->t[i].f;
        }
        ir_prim key = blank(IR_PRIM_POLY);
        key.value = p->cst;
        key.nterms = m;
        key.terms = ir_hashcons(ctx, TERM_TAG, terms, sizeof(ir_prim_term) * m);
        if (terms != stack) free(terms);
        r = intern_node(ctx, &key);
    }
    poly_free(p);
    return r;
}

const ir_prim *ir_prim_add(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return NULL;
    if (a->kind == IR_PRIM_INT && b->kind == IR_PRIM_INT)
        return ir_prim_int(ctx, wadd(a->value, b->value));
    if (ir_prim_is_int(b, NULL) && b->value == 0) return a;
    if (ir_prim_is_int(a, NULL) && a->value == 0) return b;
    poly p;
    poly_init(&p);
    poly_add_prim(ctx, &p, a, 1);
    poly_add_prim(ctx, &p, b, 1);
    return poly_finish(ctx, &p);
}

const ir_prim *ir_prim_sub(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return NULL;
    if (a->kind == IR_PRIM_INT && b->kind == IR_PRIM_INT)
        return ir_prim_int(ctx, (int64_t)((uint64_t)a->value - (uint64_t)b->value));
    if (a == b) return ir_prim_int(ctx, 0);
    poly p;
    poly_init(&p);
    poly_add_prim(ctx, &p, a, 1);
    poly_add_prim(ctx, &p, b, -1);
    return poly_finish(ctx, &p);
}

/* Views p as constant + terms without building anything. */
typedef struct pview {
    int64_t cst;
    uint32_t n;
    const ir_prim_term *t;
    ir_prim_term one;
} pview;

/* ctx NULL: only the constant and coefficients are read (factors of an atom stay NULL). */
static void pview_of(ir_ctx_t *ctx, const ir_prim *p, pview *v) {
    memset(v, 0, sizeof(*v));
    if (p->kind == IR_PRIM_INT) {
        v->cst = p->value;
    } else if (p->kind == IR_PRIM_POLY) {
        v->cst = p->value;
        v->n = p->nterms;
        v->t = p->terms;
    } else {
        v->one.coef = 1;
        v->one.nfactors = 1;
        v->one.factors = ctx ? intern_factors(ctx, 1, &p) : NULL;
        v->n = 1;
        v->t = &v->one;
    }
}

/* Merges two sorted factor lists and interns the product. */
static const ir_prim *const *mul_factors(ir_ctx_t *ctx, const ir_prim_term *x,
                                         const ir_prim_term *y) {
    uint32_t n = x->nfactors + y->nfactors;
    const ir_prim *stack[16];
    const ir_prim **f = n <= 16 ? stack : gr_xmalloc(sizeof(*f) * n);
    uint32_t i = 0, j = 0, k = 0;
    while (i < x->nfactors && j < y->nfactors)
        f[k++] = cmp_prim(x->factors[i], y->factors[j]) <= 0 ? x->factors[i++] : y->factors[j++];
    while (i < x->nfactors) f[k++] = x->factors[i++];
    while (j < y->nfactors) f[k++] = y->factors[j++];
    const ir_prim *const *r = intern_factors(ctx, n, f);
    if (f != stack) free(f);
    return r;
}

const ir_prim *ir_prim_mul(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return NULL;
    if (a->kind == IR_PRIM_INT && b->kind == IR_PRIM_INT)
        return ir_prim_int(ctx, wmul(a->value, b->value));
    if (b->kind == IR_PRIM_INT && b->value == 1) return a;
    if (a->kind == IR_PRIM_INT && a->value == 1) return b;
    pview va, vb;
    pview_of(ctx, a, &va);
    pview_of(ctx, b, &vb);
    poly p;
    poly_init(&p);
    p.cst = wmul(va.cst, vb.cst);
    for (uint32_t i = 0; i < va.n; i++) {
        poly_push(&p, wmul(va.t[i].coef, vb.cst), va.t[i].nfactors, va.t[i].factors);
        for (uint32_t j = 0; j < vb.n; j++)
            poly_push(&p, wmul(va.t[i].coef, vb.t[j].coef),
                      va.t[i].nfactors + vb.t[j].nfactors, mul_factors(ctx, &va.t[i], &vb.t[j]));
    }
    for (uint32_t j = 0; j < vb.n; j++)
        poly_push(&p, wmul(vb.t[j].coef, va.cst), vb.t[j].nfactors, vb.t[j].factors);
    return poly_finish(ctx, &p);
}

/* True when every coefficient and the constant of a are multiples of c (c != 0). */
static bool divisible_by(const ir_prim *a, int64_t c) {
    if (c == -1 || c == 1) return true;
    pview v;
    pview_of(NULL, a, &v);
    if (v.cst % c != 0) return false;
    for (uint32_t i = 0; i < v.n; i++)
        if (v.t[i].coef % c != 0) return false;
    return true;
}

static const ir_prim *exact_div(ir_ctx_t *ctx, const ir_prim *a, int64_t c) {
    if (c == 1) return a;
    pview v;
    pview_of(ctx, a, &v);
    poly p;
    poly_init(&p);
    p.cst = c == -1 ? (int64_t)(0 - (uint64_t)v.cst) : v.cst / c;
    for (uint32_t i = 0; i < v.n; i++)
        poly_push(&p, c == -1 ? (int64_t)(0 - (uint64_t)v.t[i].coef) : v.t[i].coef / c,
                  v.t[i].nfactors, v.t[i].factors);
    return poly_finish(ctx, &p);
}

static const ir_prim *binary_atom(ir_ctx_t *ctx, ir_prim_kind kind, const ir_prim *a,
                                  const ir_prim *b) {
    ir_prim key = blank(kind);
    key.a = a;
    key.b = b;
    return intern_node(ctx, &key);
}

/* Splits a = c * quot + rest, where quot gathers the terms whose coefficient is a multiple of
 * c (c not 0, 1 or -1) and rest keeps the other terms and the constant. Exact for all integers,
 * so (c*k + r) // c = k + r // c and (c*k + r) % c = r % c. */
static void split_multiples(ir_ctx_t *ctx, const ir_prim *a, int64_t c, const ir_prim **quot,
                            const ir_prim **rest) {
    pview v;
    pview_of(ctx, a, &v);
    poly q, r;
    poly_init(&q);
    poly_init(&r);
    r.cst = v.cst;
    for (uint32_t i = 0; i < v.n; i++) {
        const ir_prim_term *t = &v.t[i];
        if (t->coef % c == 0) poly_push(&q, t->coef / c, t->nfactors, t->factors);
        else poly_push(&r, t->coef, t->nfactors, t->factors);
    }
    *quot = poly_finish(ctx, &q);
    *rest = poly_finish(ctx, &r);
}

const ir_prim *ir_prim_floordiv(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return NULL;
    if (b->kind == IR_PRIM_INT) {
        int64_t c = b->value;
        if (c == 0) return NULL;
        if (a->kind == IR_PRIM_INT) return ir_prim_int(ctx, floordiv_i(a->value, c));
        if (divisible_by(a, c)) return exact_div(ctx, a, c);
        const ir_prim *quot, *rest;
        split_multiples(ctx, a, c, &quot, &rest);
        if (quot != ir_prim_int(ctx, 0)) return ir_prim_add(ctx, quot, ir_prim_floordiv(ctx, rest, b));
    } else if (ir_prim_is_int(a, NULL) && a->value == 0) {
        return a;
    } else if (a == b) {
        return ir_prim_int(ctx, 1);  /* a symbolic divisor is a dim or a product of dims: never 0 */
    }
    return binary_atom(ctx, IR_PRIM_FLOORDIV, a, b);
}

const ir_prim *ir_prim_floormod(ir_ctx_t *ctx, const ir_prim *a, const ir_prim *b) {
    if (!a || !b) return NULL;
    if (b->kind == IR_PRIM_INT) {
        int64_t c = b->value;
        if (c == 0) return NULL;
        if (a->kind == IR_PRIM_INT) return ir_prim_int(ctx, floormod_i(a->value, c));
        if (divisible_by(a, c)) return ir_prim_int(ctx, 0);
        const ir_prim *quot, *rest;
        split_multiples(ctx, a, c, &quot, &rest);
        if (quot != ir_prim_int(ctx, 0)) return ir_prim_floormod(ctx, rest, b);
    } else if (ir_prim_is_int(a, NULL) && a->value == 0) {
        return a;
    } else if (a == b) {
        return ir_prim_int(ctx, 0);
    }
    return binary_atom(ctx, IR_PRIM_FLOORMOD, a, b);
}

/* ---- substitution and evaluation ---- */

const ir_prim *ir_prim_subst(ir_ctx_t *ctx, const ir_prim *p, const gr_map *map) {
    if (!p) return NULL;
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: return p;
    case IR_PRIM_VAR: {
        uint64_t v;
        return map && gr_map_get(map, GR_MAP_PTR(p), &v) ? (const ir_prim *)(uintptr_t)v : p;
    }
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD: {
        const ir_prim *a = ir_prim_subst(ctx, p->a, map), *b = ir_prim_subst(ctx, p->b, map);
        if (a == p->a && b == p->b) return p;
        return p->kind == IR_PRIM_FLOORDIV ? ir_prim_floordiv(ctx, a, b)
                                           : ir_prim_floormod(ctx, a, b);
    }
    case IR_PRIM_POLY: {
        const ir_prim *acc = ir_prim_int(ctx, p->value);
        for (uint32_t i = 0; i < p->nterms && acc; i++) {
            const ir_prim_term *t = &p->terms[i];
            const ir_prim *prod = ir_prim_int(ctx, t->coef);
            for (uint32_t j = 0; j < t->nfactors && prod; j++)
                prod = ir_prim_mul(ctx, prod, ir_prim_subst(ctx, t->factors[j], map));
            acc = ir_prim_add(ctx, acc, prod);
        }
        return acc;
    }
    }
    return p;
}

bool ir_prim_eval(const ir_prim *p, const gr_map *var_values, int64_t *out) {
    if (!p) return false;
    int64_t a, b;
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: *out = p->value; return true;
    case IR_PRIM_VAR: {
        uint64_t v;
        if (!var_values || !gr_map_get(var_values, GR_MAP_PTR(p), &v)) return false;
        *out = (int64_t)v;
        return true;
    }
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        if (!ir_prim_eval(p->a, var_values, &a) || !ir_prim_eval(p->b, var_values, &b) || b == 0)
            return false;
        *out = p->kind == IR_PRIM_FLOORDIV ? floordiv_i(a, b) : floormod_i(a, b);
        return true;
    case IR_PRIM_POLY: {
        int64_t acc = p->value;
        for (uint32_t i = 0; i < p->nterms; i++) {
            int64_t prod = p->terms[i].coef;
            for (uint32_t j = 0; j < p->terms[i].nfactors; j++) {
                if (!ir_prim_eval(p->terms[i].factors[j], var_values, &a)) return false;
                prod = wmul(prod, a);
            }
            acc = wadd(acc, prod);
        }
        *out = acc;
        return true;
    }
    }
    return false;
}

bool ir_prim_lower_bound(const ir_prim *p, int64_t *out) {
    int64_t a;
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: *out = p->value; return true;
    case IR_PRIM_VAR: *out = 1; return true;
    case IR_PRIM_FLOORMOD: *out = 0; return p->b->kind == IR_PRIM_INT && p->b->value > 0;
    case IR_PRIM_FLOORDIV:
        /* nondecreasing in a for a positive constant divisor */
        if (p->b->kind != IR_PRIM_INT || p->b->value <= 0 || !ir_prim_lower_bound(p->a, &a)) return false;
        *out = floordiv_i(a, p->b->value);
        return true;
    case IR_PRIM_POLY: {
        int64_t acc = p->value;
        for (uint32_t i = 0; i < p->nterms; i++) {
            int64_t prod = p->terms[i].coef;
            if (prod < 0) return false; /* would need an upper bound */
            for (uint32_t j = 0; j < p->terms[i].nfactors; j++) {
                if (!ir_prim_lower_bound(p->terms[i].factors[j], &a) || a < 0) return false;
                prod = wmul(prod, a);
            }
            acc = wadd(acc, prod);
        }
        *out = acc;
        return true;
    }
    }
    return false;
}

/* ---- vars ---- */

typedef GR_VEC(const ir_prim *) prim_vec;

static void collect_vars(const ir_prim *p, prim_vec *out) {
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: return;
    case IR_PRIM_VAR:
        for (uint32_t i = 0; i < out->len; i++)
            if (out->data[i] == p) return;
        gr_vec_push(out, p);
        return;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        collect_vars(p->a, out);
        collect_vars(p->b, out);
        return;
    case IR_PRIM_POLY:
        for (uint32_t i = 0; i < p->nterms; i++)
            for (uint32_t j = 0; j < p->terms[i].nfactors; j++)
                collect_vars(p->terms[i].factors[j], out);
        return;
    }
}

static int cmp_seq(const void *x, const void *y) {
    const ir_prim *a = *(const ir_prim *const *)x, *b = *(const ir_prim *const *)y;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void ir_prim_visit_vars(const ir_prim *p, void (*fn)(const ir_prim *var, void *user), void *user) {
    if (!p || p->kind == IR_PRIM_INT) return;
    if (p->kind == IR_PRIM_VAR) {
        fn(p, user);
        return;
    }
    prim_vec vars = {0};
    collect_vars(p, &vars);
    if (vars.len > 1) qsort(vars.data, vars.len, sizeof(*vars.data), cmp_seq);
    for (uint32_t i = 0; i < vars.len; i++) fn(vars.data[i], user);
    gr_vec_free(&vars);
}

/* ---- printing ---- */

typedef struct pbuf {
    char *buf;
    size_t size, len; /* len counts every byte needed, even past size */
} pbuf;

static void pb_puts(pbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len < b->size) {
        size_t room = b->size - b->len - 1;
        memcpy(b->buf + b->len, s, n < room ? n : room);
    }
    b->len += n;
}

static void pb_int(pbuf *b, int64_t v) {
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%" PRId64, v);
    pb_puts(b, tmp);
}

static void print_prim(pbuf *b, const ir_prim *p);

/* Operand of *, // or %: parenthesized when it is a sum (or, on the right, anything compound). */
static void print_operand(pbuf *b, const ir_prim *p, bool right) {
    bool paren;
    if (p->kind == IR_PRIM_POLY)
        paren = right || p->nterms > 1 || p->value != 0;
    else
        paren = right && (p->kind == IR_PRIM_FLOORDIV || p->kind == IR_PRIM_FLOORMOD);
    if (paren) pb_puts(b, "(");
    print_prim(b, p);
    if (paren) pb_puts(b, ")");
}

static void print_term(pbuf *b, const ir_prim_term *t, int64_t coef) {
    for (uint32_t j = 0; j < t->nfactors; j++) {
        if (j) pb_puts(b, " * ");
        print_operand(b, t->factors[j], j > 0);
    }
    if (coef != 1) {
        pb_puts(b, " * ");
        pb_int(b, coef);
    }
}

static void print_prim(pbuf *b, const ir_prim *p) {
    switch ((ir_prim_kind)p->kind) {
    case IR_PRIM_INT: pb_int(b, p->value); return;
    case IR_PRIM_VAR: pb_puts(b, p->name); return;
    case IR_PRIM_FLOORDIV:
    case IR_PRIM_FLOORMOD:
        print_operand(b, p->a, false);
        pb_puts(b, p->kind == IR_PRIM_FLOORDIV ? " // " : " % ");
        print_operand(b, p->b, true);
        return;
    case IR_PRIM_POLY:
        for (uint32_t i = 0; i < p->nterms; i++) {
            int64_t c = p->terms[i].coef;
            bool neg = c < 0 && c != INT64_MIN;
            if (i == 0 && neg && p->terms[i].factors[0]->kind != IR_PRIM_VAR) {
                print_term(b, &p->terms[i], c); /* `n // 2 * -1`: a prefix minus would bind to n */
                continue;
            }
            if (i == 0 && neg) pb_puts(b, "-");
            else if (i > 0) pb_puts(b, neg ? " - " : " + ");
            print_term(b, &p->terms[i], neg ? -c : c);
        }
        if (p->value > 0) {
            pb_puts(b, " + ");
            pb_int(b, p->value);
        } else if (p->value < 0 && p->value != INT64_MIN) {
            pb_puts(b, " - ");
            pb_int(b, -p->value);
        } else if (p->value == INT64_MIN) {
            pb_puts(b, " + ");
            pb_int(b, p->value);
        }
        return;
    }
}

int ir_prim_snprint(const ir_prim *p, char *buf, size_t size) {
    pbuf b = {buf, size, 0};
    if (size) buf[0] = '\0';
    if (!p) pb_puts(&b, "?");
    else print_prim(&b, p);
    if (size) buf[b.len < size ? b.len : size - 1] = '\0';
    return (int)b.len;
}

void ir_prim_print(const ir_prim *p, FILE *out) {
    char stack[256];
    int n = ir_prim_snprint(p, stack, sizeof(stack));
    if ((size_t)n < sizeof(stack)) {
        fputs(stack, out);
        return;
    }
    char *big = gr_xmalloc((size_t)n + 1);
    ir_prim_snprint(p, big, (size_t)n + 1);
    fputs(big, out);
    free(big);
}
