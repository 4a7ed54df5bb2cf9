/* Specializing a JSON graph with symbolic dims to the shapes of one call
 * (rt_json_graph_specialize, runtime/json/json_runtime.h).
 *
 * A symbolic dim is written by backends/json as its expression in the text format: a var ("n"),
 * or integers and vars under + - * // % and parentheses. The vars are bound from the dims of
 * the call's tensors that are a plain var, or solved from a computed one; every other dim is
 * evaluated and checked. The copy has the same document with every "shape" array's strings,
 * and every symbolic integer argument's, replaced by their values. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json/json_runtime.h"

#define SYM_MAX 32
#define SYM_NAME 64

typedef struct sym_env {
    uint32_t n;
    char names[SYM_MAX][SYM_NAME];
    int64_t vals[SYM_MAX];
} sym_env;

typedef struct sym_parse {
    const char *p;
    const sym_env *env;
    bool ok;
} sym_parse;

static void skip_ws(sym_parse *s) {
    while (*s->p == ' ') s->p++;
}

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t p_expr(sym_parse *s);

static int64_t p_atom(sym_parse *s) {
    skip_ws(s);
    if (*s->p == '(') {
        s->p++;
        int64_t v = p_expr(s);
        skip_ws(s);
        if (*s->p != ')') s->ok = false;
        else s->p++;
        return v;
    }
    if (*s->p == '-') {
        s->p++;
        return -p_atom(s);
    }
    if (isdigit((unsigned char)*s->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*s->p)) v = v * 10 + (*s->p++ - '0');
        return v;
    }
    if (isalpha((unsigned char)*s->p) || *s->p == '_') {
        const char *b = s->p;
        while (isalnum((unsigned char)*s->p) || *s->p == '_') s->p++;
        size_t len = (size_t)(s->p - b);
        for (uint32_t i = 0; i < s->env->n; i++)
            if (strlen(s->env->names[i]) == len && !memcmp(s->env->names[i], b, len)) return s->env->vals[i];
    }
    s->ok = false;
    return 0;
}

static int64_t p_term(sym_parse *s) {
    int64_t v = p_atom(s);
    for (;;) {
        skip_ws(s);
        if (s->p[0] == '*') {
            s->p++;
            v *= p_atom(s);
        } else if (s->p[0] == '/' && s->p[1] == '/') {
            s->p += 2;
            int64_t b = p_atom(s);
            if (b == 0) s->ok = false;
            else v = floordiv(v, b);
        } else if (s->p[0] == '%') {
            s->p++;
            int64_t b = p_atom(s);
            if (b == 0) s->ok = false;
            else v -= floordiv(v, b) * b;
        } else {
            return v;
        }
        if (!s->ok) return 0;
    }
}

static int64_t p_expr(sym_parse *s) {
    int64_t v = p_term(s);
    for (;;) {
        skip_ws(s);
        if (*s->p == '+') {
            s->p++;
            v += p_term(s);
        } else if (*s->p == '-') {
            s->p++;
            v -= p_term(s);
        } else {
            return v;
        }
        if (!s->ok) return 0;
    }
}

static bool sym_eval(const char *text, const sym_env *env, int64_t *out) {
    sym_parse s = {text, env, true};
    *out = p_expr(&s);
    skip_ws(&s);
    return s.ok && *s.p == '\0';
}

static bool plain_var(const char *t) {
    if (!isalpha((unsigned char)*t) && *t != '_') return false;
    for (; *t; t++)
        if (!isalnum((unsigned char)*t) && *t != '_') return false;
    return true;
}

static json_t *node_shape(json_t *nodes, uint32_t nid, uint32_t index) {
    json_t *attrs = json_object_get(json_array_get(nodes, nid), "attrs");
    return json_array_get(json_object_get(attrs, "shape"), index);
}

/* Binds the plain-var dims of one argument's declared shape. */
static gr_status bind_arg(const char *sym, json_t *shape, const DLTensor *t, const char *what, uint32_t idx,
                          sym_env *env, gr_diag *d) {
    if (!t || (size_t)t->ndim != json_array_size(shape))
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %s %u has rank %d, expected %zu", sym, what, idx,
                           t ? t->ndim : -1, json_array_size(shape));
    for (int32_t k = 0; k < t->ndim; k++) {
        const char *e = json_string_value(json_array_get(shape, (size_t)k));
        if (!e || !plain_var(e)) continue;
        uint32_t i = 0;
        while (i < env->n && strcmp(env->names[i], e)) i++;
        if (i < env->n) continue; /* checked below with the other expressions */
        if (env->n == SYM_MAX || strlen(e) >= SYM_NAME)
            return gr_diag_set(d, GR_ERR_UNSUPPORTED, "json runtime '%s': too many symbolic vars", sym);
        snprintf(env->names[env->n], SYM_NAME, "%s", e);
        env->vals[env->n++] = t->shape[k];
    }
    return GR_OK;
}

/* The one var of expression e that env does not bind (into name); false when there is none or
 * more than one. */
static bool one_unbound(const char *e, const sym_env *env, char *name) {
    bool found = false;
    for (const char *p = e; *p;) {
        if (!isalpha((unsigned char)*p) && *p != '_') {
            p++;
            continue;
        }
        const char *b = p;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        size_t len = (size_t)(p - b);
        bool bound = false;
        for (uint32_t i = 0; i < env->n && !bound; i++) bound = strlen(env->names[i]) == len && !memcmp(env->names[i], b, len);
        if (bound) continue;
        if (len >= SYM_NAME) return false;
        if (found && (strlen(name) != len || memcmp(name, b, len))) return false;
        memcpy(name, b, len);
        name[len] = '\0';
        found = true;
    }
    return found;
}

/* Binds var `name` so that e evaluates to want: the least value that does, found by bisection
 * (dim expressions, sums and floor divisions of vars with nonnegative coefficients, do not
 * decrease as a var grows). Any such value gives the region the same shapes: its dims are
 * functions of its inputs' dims. */
static bool solve(const char *e, sym_env *env, const char *name, int64_t want) {
    if (env->n == SYM_MAX) return false;
    snprintf(env->names[env->n], SYM_NAME, "%s", name);
    env->n++;
    int64_t lo = 0, hi = (int64_t)1 << 32, v;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        env->vals[env->n - 1] = mid;
        if (!sym_eval(e, env, &v)) break;
        if (v >= want) hi = mid;
        else lo = mid + 1;
    }
    env->vals[env->n - 1] = lo;
    if (sym_eval(e, env, &v) && v == want) return true;
    env->n--;
    return false;
}

/* Binds the vars only computed dims mention (e.g. h in (h - 1) // 16 + 1). */
static void bind_solved(json_t *nodes, rt_json_graph *g, DLTensor *const *args, uint32_t nin, uint32_t nout,
                        sym_env *env) {
    for (bool progress = true; progress;) {
        progress = false;
        for (uint32_t a = 0; a < nin + nout; a++) {
            rt_json_entry en = a < nin ? (rt_json_entry){rt_json_graph_input_nid(g, a), 0} : rt_json_graph_head(g, a - nin);
            json_t *shape = node_shape(nodes, en.nid, en.index);
            for (int32_t k = 0; args[a] && k < args[a]->ndim && (size_t)k < json_array_size(shape); k++) {
                const char *e = json_string_value(json_array_get(shape, (size_t)k));
                char name[SYM_NAME];
                if (e && one_unbound(e, env, name) && solve(e, env, name, args[a]->shape[k])) progress = true;
            }
        }
    }
}

static gr_status check_arg(const char *sym, json_t *shape, const DLTensor *t, const char *what, uint32_t idx,
                           const sym_env *env, gr_diag *d) {
    for (int32_t k = 0; k < t->ndim; k++) {
        json_t *v = json_array_get(shape, (size_t)k);
        int64_t want = json_integer_value(v);
        if (json_is_string(v) && !sym_eval(json_string_value(v), env, &want))
            return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %s %u dim %d: cannot evaluate '%s'", sym, what,
                               idx, k, json_string_value(v));
        if (want != t->shape[k])
            return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': %s %u dim %d is %lld, expected %lld%s%s%s", sym,
                               what, idx, k, (long long)t->shape[k], (long long)want,
                               json_is_string(v) ? " (" : "", json_is_string(v) ? json_string_value(v) : "",
                               json_is_string(v) ? ")" : "");
    }
    return GR_OK;
}

/* Replaces the strings of every "shape" array under v, and symbolic integer arguments
 * ({"int": "h // 4"}, any sign), by their values. */
static bool subst(json_t *v, const sym_env *env, bool in_shape) {
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_t *iv = json_object_get(v, "int");
        if (json_is_string(iv)) {
            int64_t x;
            if (!sym_eval(json_string_value(iv), env, &x)) return false;
            json_object_set_new(v, "int", json_integer(x));
        }
        json_object_foreach(v, k, c) if (!subst(c, env, strcmp(k, "shape") == 0)) return false;
        return true;
    }
    if (!json_is_array(v)) return true;
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *c = json_array_get(v, i);
        if (in_shape && json_is_string(c)) {
            int64_t x;
            if (!sym_eval(json_string_value(c), env, &x) || x < 0) return false;
            json_array_set_new(v, i, json_integer(x));
        } else if (!subst(c, env, in_shape && json_is_array(c))) {
            return false;
        }
    }
    return true;
}

gr_status rt_json_graph_specialize(rt_json_graph *g, DLTensor *const *args, uint32_t nin, uint32_t nout,
                                   rt_json_graph **out, gr_diag *d) {
    *out = NULL;
    const char *sym = rt_json_graph_symbol(g);
    if (nin != rt_json_graph_num_inputs(g) || nout != rt_json_graph_num_heads(g))
        return gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': called with %u inputs and %u outputs, expects %u and %u",
                           sym, nin, nout, rt_json_graph_num_inputs(g), rt_json_graph_num_heads(g));
    const char *text = rt_json_graph_text(g);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    if (!doc) return gr_diag_set(d, GR_ERR_NOMEM, "json runtime '%s': cannot copy the graph", sym);
    json_t *nodes = json_object_get(doc, "nodes");
    sym_env env;
    env.n = 0;
    gr_status st = GR_OK;
    for (uint32_t a = 0; a < nin + nout && !st; a++) {
        bool in = a < nin;
        rt_json_entry e = in ? (rt_json_entry){rt_json_graph_input_nid(g, a), 0} : rt_json_graph_head(g, a - nin);
        st = bind_arg(sym, node_shape(nodes, e.nid, e.index), args[a], in ? "input" : "output", in ? a : a - nin, &env, d);
    }
    if (!st) bind_solved(nodes, g, args, nin, nout, &env);
    for (uint32_t a = 0; a < nin + nout && !st; a++) {
        bool in = a < nin;
        rt_json_entry e = in ? (rt_json_entry){rt_json_graph_input_nid(g, a), 0} : rt_json_graph_head(g, a - nin);
        st = check_arg(sym, node_shape(nodes, e.nid, e.index), args[a], in ? "input" : "output", in ? a : a - nin, &env, d);
    }
    if (!st && !subst(nodes, &env, false))
        st = gr_diag_set(d, GR_ERR_INVALID, "json runtime '%s': a dim does not evaluate for these shapes", sym);
    if (st) {
        json_decref(doc);
        return st;
    }
    rt_json_graph *cg = NULL;
    if ((st = rt_json_graph_load_doc(sym, doc, &cg, d))) return st;
    uint32_t nc = rt_json_graph_num_consts(g);
    rt_tensor **cs = calloc(nc + 1, sizeof(*cs));
    for (uint32_t c = 0; c < nc; c++) cs[c] = rt_json_graph_const(g, c);
    st = rt_json_graph_init(cg, cs, nc, d);
    free(cs);
    rt_json_graph_set_root(cg, g);
    if (st) {
        rt_json_graph_free(cg);
        return st;
    }
    *out = cg;
    return GR_OK;
}
