/* The dnnl backend's pattern table: fused composites first, then single ops.
 *
 * A fused composite is an anchor (conv1d, conv2d, conv2d_transpose, matmul, dense = matmul of
 * permute_dims(w)) followed by the posts its name lists: "dnnl.conv2d_bias_hardswish_add" is a
 * convolution, its bias, hard-swish in any of the exporters' forms, then a residual add. Names
 * are generated from backends/dnnl/dnnl.h's tables by the grammar
 *     anchor [bias] [affine] ( [eltwise] | [eltwise] binary | binary eltwise | eltwise affine )
 * (affine for convolutions only; binary = add | mul); every name is one pattern, several forms of one post are
 * alternatives inside it. Longer composites come first, so a chain is taken whole; what no
 * composite takes falls to the single-op patterns ("dnnl.relu", "dnnl.nn.max_pool2d", ...).
 * Each composite's pattern names its parts ("anchor", "p<i>" for post i, "p<i>.clip", ...,
 * as TVM's patterns.py annotates "bias", "activation"); the check of a composite (dc_analyze)
 * reads them from the match and keeps only the value checks, rejecting with a reason the
 * partition report prints: a bias that is not per-output-channel, hard-swish constants that are
 * not 3 and 6, more eltwise post-ops than oneDNN 2.6 computes correctly, an intermediate used
 * outside the composite, ... The single-op patterns are the rows of backends/dnnl/dnnl_op_table.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "backends/dnnl/dnnl_codegen.h"
#include "backends/dnnl/dnnl_pattern_impl.h"
#include "backends/dnnl/dnnl_q_impl.h"
#include "ir/dtype.h"
#include "ir/op.h"
#include "ir/sinfo.h"
#include "backends/dnnl/dnnl_op_table.h"

/* ---- checks ---- */

typedef const char *(*op_check)(const ir_call *c, ir_ctx_t *ctx);

/* A float32 tensor of known rank and dims. A symbolic dim reads as a stand-in value: equal
 * for equal expressions, never 1 (so never a broadcast axis), small enough that products of a
 * few stay far from overflow. The engine creates its primitives for the concrete shapes of each
 * run (runtime/json/json_specialize.c), so a check only has to hold for every value of the dim. */
#define SYM_DIM_BASE 4099
static int64_t sym_dim(const ir_prim *p) {
    char buf[256];
    ir_prim_snprint(p, buf, sizeof buf);
    return SYM_DIM_BASE + (int64_t)(gr_hash_bytes(buf, strlen(buf), 0x5eed) % 4093);
}

static bool f32_static(const ir_sinfo *s, int64_t *shape, int32_t *nd) {
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM || !ir_dtype_eq(s->dtype, IR_DTYPE_F32) ||
        (s->ndim > 0 && !s->dims))
        return false;
    if (nd) *nd = s->ndim;
    for (int32_t k = 0; k < s->ndim && shape; k++)
        if (!ir_prim_is_int(s->dims[k], &shape[k])) shape[k] = sym_dim(s->dims[k]);
    return true;
}

static bool is_tensor_leaf(const ir_expr *a) { return a && (ir_is_var(a) || a->kind == IR_CONST); }

static bool scalar_expr(const ir_expr *a) {
    int64_t s[RT_MAX_NDIM];
    int32_t nd;
    if (!a || a->kind != IR_CONST || !f32_static(a->sinfo, s, &nd)) return false;
    int64_t n = 1;
    for (int32_t i = 0; i < nd; i++) n *= s[i];
    return n == 1;
}

static bool same_shape(const ir_sinfo *a, const ir_sinfo *b) {
    int64_t sa[RT_MAX_NDIM], sb[RT_MAX_NDIM];
    int32_t na, nb;
    return f32_static(a, sa, &na) && f32_static(b, sb, &nb) && na == nb && !memcmp(sa, sb, sizeof(int64_t) * (size_t)na);
}

static const char *chk_none(const ir_call *c, ir_ctx_t *ctx) {
    (void)c;
    (void)ctx;
    return NULL;
}

static const char *chk_binary(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    const ir_expr *a = c->args[0], *b = c->args[1];
    if (scalar_expr(a) || scalar_expr(b)) return NULL;
    if (same_shape(b->sinfo, c->base.sinfo) && !same_shape(a->sinfo, c->base.sinfo) &&
        c->base.sinfo->ndim == 1 && ir_op_id_of(&c->base) == IR_OP_DIVIDE)
        /* y / x runs as x^-1 with a broadcast multiply post-op; oneDNN 2.6 gets that wrong
         * on 1-D tensors (2-D and up are right; tests/dnnl) */
        return "1-D divide with a broadcast numerator";
    if (same_shape(a->sinfo, c->base.sinfo) || same_shape(b->sinfo, c->base.sinfo)) return NULL;
    return "both operands broadcast to a larger shape";
}

static const char *chk_power(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    return scalar_expr(c->args[1]) ? NULL : "power needs a scalar constant exponent";
}

static const char *chk_clip(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    for (uint32_t i = 1; i < 3; i++)
        if (c->nargs < 3 || c->args[i]->kind != IR_PRIMVAL ||
            (IR_AS(c->args[i], ir_primval)->value && !ir_prim_is_int(IR_AS(c->args[i], ir_primval)->value, NULL)))
            return "clip bounds are not constants";
    return NULL;
}

/* The layout attribute `key` (default canon) is a permutation of canon's letters: the engine
 * reads NHWC, OHWI, HWIO, ... tensors in place through strided memory descriptors. */
static const char *layout_ok(const ir_call *c, ir_ctx_t *ctx, const char *key, const char *canon) {
    const char *v = ir_attrs_get_str(c->attrs, key);
    if (!v) return NULL;
    bool ok = strlen(v) == strlen(canon);
    for (const char *p = canon; ok && *p; p++) {
        const char *q = strchr(v, *p);
        ok = q && !strchr(q + 1, *p);
    }
    return ok ? NULL : ir_internf(ctx, "%s \"%s\" is not a permutation of %s", key, v, canon);
}

static const char *chk_conv(const ir_call *c, ir_ctx_t *ctx, const char *dcanon, const char *kcanon) {
    const char *r = layout_ok(c, ctx, "data_layout", dcanon);
    if (!r) r = layout_ok(c, ctx, "kernel_layout", kcanon);
    const char *dl = ir_attrs_get_str(c->attrs, "data_layout"), *ol = ir_attrs_get_str(c->attrs, "out_layout");
    if (!r && ol && strcmp(ol, dl ? dl : dcanon)) r = "out_layout other than data_layout";
    return r;
}

static const char *chk_conv2d(const ir_call *c, ir_ctx_t *ctx) {
    return chk_conv(c, ctx, "NCHW", "OIHW");
}

static const char *chk_conv1d(const ir_call *c, ir_ctx_t *ctx) {
    return chk_conv(c, ctx, "NCW", "OIW");
}

static const char *chk_deconv2d(const ir_call *c, ir_ctx_t *ctx) {
    const char *r = chk_conv(c, ctx, "NCHW", "IOHW");
    if (!r && c->args[1]->kind != IR_CONST) r = "transposed convolution weights must be constant";
    return r;
}

static const char *chk_deconv1d(const ir_call *c, ir_ctx_t *ctx) {
    const char *r = chk_conv(c, ctx, "NCW", "IOW");
    if (!r && c->args[1]->kind != IR_CONST) r = "transposed convolution weights must be constant";
    return r;
}

static const char *chk_matmul(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    int32_t na = 0, nb = 0;
    f32_static(c->args[0]->sinfo, NULL, &na);
    f32_static(c->args[1]->sinfo, NULL, &nb);
    return na < 2 || nb < 2 ? "matmul with a 1-D operand" : NULL;
}

/* Position of the channel axis of a conv / pool result: 'C' of its data layout (1 for NCHW). */
static int chan_axis(const ir_call *c, const char *key) {
    const char *v = ir_attrs_get_str(c->attrs, key), *q = v ? strchr(v, 'C') : NULL;
    return q ? (int)(q - v) : 1;
}

static const char *chk_pool(const ir_call *c, ir_ctx_t *ctx) {
    int32_t nd = 0;
    f32_static(c->args[0]->sinfo, NULL, &nd);
    const char *r = layout_ok(c, ctx, "layout", nd == 3 ? "NCW" : "NCHW");
    const char *lay = ir_attrs_get_str(c->attrs, "layout"), *ol = ir_attrs_get_str(c->attrs, "out_layout");
    if (!r && ol && lay && strcmp(ol, lay)) r = "out_layout other than layout";
    if (!r && ir_op_id_of(&c->base) != IR_OP_MAX_POOL2D && ir_op_id_of(&c->base) != IR_OP_MAX_POOL1D &&
        ir_attrs_get_bool(c->attrs, "ceil_mode", false) && ir_attrs_get_bool(c->attrs, "count_include_pad", false))
        r = "avg pooling with ceil_mode and count_include_pad (oneDNN would count the implicit right padding too)";
    return r;
}

static const char *chk_adaptive(const ir_call *c, ir_ctx_t *ctx) {
    const char *r = chk_pool(c, ctx);
    if (r) return r;
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int32_t xn, on;
    if (!f32_static(c->args[0]->sinfo, xs, &xn) || !f32_static(c->base.sinfo, os, &on) || xn != on) return "shapes";
    int ca = chan_axis(c, "layout");
    for (int32_t i = 1; i < xn; i++)
        if (i != ca && (!os[i] || xs[i] % os[i])) return "adaptive pooling with uneven windows";
    return NULL;
}

static const char *chk_layer_norm(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    int64_t axes[8];
    int n = ir_attrs_get_ints(c->attrs, "axes", axes, 8);
    int32_t nd = 0;
    f32_static(c->args[0]->sinfo, NULL, &nd);
    if (nd < 2) return "layer_norm of a 1-D tensor (oneDNN normalizes rows of 2-D and up)";
    return n == 1 && (axes[0] == -1 || axes[0] == nd - 1) ? NULL : "layer_norm over axes other than the last";
}

static const char *chk_batch_norm(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    return ir_attrs_get_int(c->attrs, "axis", 1) == 1 ? NULL : "batch_norm on an axis other than 1";
}

/* out = k * in for a whole k >= 1: by value, or for symbolic dims as expressions (prims are
 * canonical and interned, so k * in is the very node out is when they are equal). */
static bool whole_multiple(ir_ctx_t *ctx, const ir_prim *in, const ir_prim *out) {
    int64_t a, b;
    if (ir_prim_is_int(in, &a) && ir_prim_is_int(out, &b)) return a > 0 && b % a == 0;
    for (int64_t k = 1; k <= 64; k++)
        if (ir_prim_mul(ctx, in, ir_prim_int(ctx, k)) == out) return true;
    return false;
}

static const char *chk_resize(const ir_call *c, ir_ctx_t *ctx) {
    const char *m = ir_attrs_get_str(c->attrs, "method"), *ctm = ir_attrs_get_str(c->attrs, "coordinate_transformation_mode");
    const char *rnd = ir_attrs_get_str(c->attrs, "rounding_method");
    const char *lay = ir_attrs_get_str(c->attrs, "layout");
    if (lay && strcmp(lay, "NCHW")) return "layout other than NCHW";
    const ir_attr *sc = ir_attrs_get(c->attrs, "scales");
    if (sc && sc->kind != IR_ATTR_NONE) return "scales other than output / input (ONNX fractional scales)";
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int32_t xn, on;
    if (!f32_static(c->args[0]->sinfo, xs, &xn) || !f32_static(c->base.sinfo, os, &on) || xn != 4) return "shapes";
    if (m && !strcmp(m, "linear")) {
        if (ctm && strcmp(ctm, "half_pixel") && !(strcmp(ctm, "pytorch_half_pixel") == 0 && os[2] > 1 && os[3] > 1))
            return "linear resize with coordinates other than half_pixel";
        return NULL;
    }
    if (m && (!strcmp(m, "nearest_neighbor") || !strcmp(m, "nearest"))) {
        const ir_sinfo *is = c->args[0]->sinfo, *us = c->base.sinfo;
        if (!whole_multiple(ctx, is->dims[2], us->dims[2]) || !whole_multiple(ctx, is->dims[3], us->dims[3]))
            return "nearest resize that is not an integer up-scaling";
        bool ok = (ctm && !strcmp(ctm, "asymmetric") && (!rnd || !strcmp(rnd, "floor") || !rnd[0])) ||
                  (ctm && !strcmp(ctm, "half_pixel") &&
                   (!rnd || !strcmp(rnd, "round") || !strcmp(rnd, "round_prefer_ceil") || !strcmp(rnd, "round_prefer_floor")));
        return ok ? NULL : "nearest resize with this coordinate mode / rounding";
    }
    return "resize method other than linear / nearest";
}

static const char *chk_concat(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    if (c->nargs != 1 || c->args[0]->kind != IR_TUPLE) return "concat of a non-literal tuple";
    const ir_tuple *t = IR_AS(c->args[0], ir_tuple);
    for (uint32_t i = 0; i < t->n; i++)
        if (!is_tensor_leaf(t->fields[i]) || !f32_static(t->fields[i]->sinfo, NULL, NULL)) return "concat field is not a float32 tensor";
    return t->n > 0 && t->n <= 64 ? NULL : "concat arity";
}

/* constant axes and strides, strides > 0 (a strided view of the input); begin and end
 * integers, constant or symbolic (a window crop x[:, :h, :w] of a symbolic size: the JSON graph
 * writes the expression, evaluated when the graph is specialized to a call's shapes) */
static const char *chk_strided_slice(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    if (c->nargs < 4) return "strided_slice without axes / begin / end";
    for (uint32_t i = 1; i < c->nargs; i++) {
        if (c->args[i]->kind != IR_TUPLE) return "strided_slice bounds are not constant tuples";
        const ir_tuple *t = IR_AS(c->args[i], ir_tuple);
        for (uint32_t k = 0; k < t->n; k++) {
            int64_t v = 1;
            const ir_primval *pv = t->fields[k]->kind == IR_PRIMVAL ? IR_AS(t->fields[k], ir_primval) : NULL;
            bool bound = i == 2 || i == 3;
            if (!pv || !pv->value || (!ir_prim_is_int(pv->value, &v) && !bound))
                return bound ? "strided_slice bounds are not integers" : "strided_slice axes or steps are not constant integers";
            if (i == 4 && v <= 0) return "strided_slice with a negative step";
        }
    }
    /* the slice is a strided view of the plain input; oneDNN's reorder rejects views whose
     * dims interleave (each dim's extent, step x size, must stay within the stride of the next
     * larger one: x[..., ::2] of rows of 3 picks 0 and 2, and the next row starts at 3) */
    int64_t xs[RT_MAX_NDIM], os[RT_MAX_NDIM], vs[RT_MAX_NDIM], ps = 1;
    int32_t xn, on;
    if (!f32_static(c->args[0]->sinfo, xs, &xn) || !f32_static(c->base.sinfo, os, &on) || xn != on) return NULL;
    for (int32_t i = xn - 1; i >= 0; i--) {
        vs[i] = ps;
        ps *= xs[i];
    }
    if (c->nargs > 4) {
        const ir_tuple *ax = IR_AS(c->args[1], ir_tuple), *st = IR_AS(c->args[4], ir_tuple);
        for (uint32_t k = 0; k < ax->n && k < st->n; k++) {
            int64_t a, v;
            ir_prim_is_int(IR_AS(ax->fields[k], ir_primval)->value, &a);
            ir_prim_is_int(IR_AS(st->fields[k], ir_primval)->value, &v);
            if (a < 0) a += xn;
            if (a >= 0 && a < xn) {
                vs[a] *= v;
                /* a slice spans at most its input (symbolic dims read as unrelated stand-ins) */
                if (v > 0 && os[a] > (xs[a] + v - 1) / v) os[a] = (xs[a] + v - 1) / v;
            }
        }
    }
    for (int32_t i = 0; i < xn; i++)
        if (os[i] > xs[i]) os[i] = xs[i];
    for (int32_t i = 0; i < xn; i++)
        for (int32_t j = 0; j < xn; j++)
            if (i != j && os[i] > 1 && os[j] > 1 && vs[i] <= vs[j] && vs[i] * os[i] > vs[j])
                return "strided_slice whose view interleaves its dims (a step past the end of a row)";
    return NULL;
}

/* where(c, x, y) as the engine builds it (dn_op_where): a constant condition c that broadcasts
 * to the result, one branch a one-element float32 constant, the other a float32 tensor of the
 * result's shape (GPT-2's causal mask: where(tril, scores, finfo.min)) */
static const char *chk_where(const ir_call *c, ir_ctx_t *ctx) {
    (void)ctx;
    if (c->nargs != 3) return "where without three arguments";
    const ir_expr *cond = c->args[0];
    int64_t cs[RT_MAX_NDIM], os[RT_MAX_NDIM];
    int32_t cn, on;
    if (!f32_static(c->base.sinfo, os, &on)) return "result is not a float32 tensor of known rank";
    const ir_sinfo *ci = cond->sinfo;
    if (cond->kind != IR_CONST || !ci || ci->kind != IR_SINFO_TENSOR || ci->ndim < 0 || ci->ndim > on)
        return "where whose condition is not a constant (a select oneDNN 2.6 does not have)";
    cn = ci->ndim;
    for (int32_t i = 0; i < cn; i++)
        if (!ir_prim_is_int(ci->dims[i], &cs[i]) || (cs[i] != 1 && cs[i] != os[on - cn + i]))
            return "where whose condition does not broadcast to the result";
    int k = scalar_expr(c->args[2]) ? 1 : scalar_expr(c->args[1]) ? 2 : 0;
    if (!k) return "where with no one-element constant branch";
    if (!is_tensor_leaf(c->args[k]) || !same_shape(c->args[k]->sinfo, c->base.sinfo))
        return "where whose tensor branch is not a float32 tensor of the result's shape";
    return NULL;
}

typedef struct dnnl_op_entry {
    ir_op_id op;
    int kind;                     /* DN_K_* (backends/dnnl/dnnl_op_table.h) */
    op_check check;
} dnnl_op_entry;

/* The rows of backends/dnnl/dnnl_op_table.h, in its priority order. */
static const dnnl_op_entry OPS[] = {
#define X(op, kind, check, handler, alg, alpha, beta) {IR_OP_##op, kind, check},
    DNNL_OPS(X)
#undef X
};

static bool dnnl_check(const pat_check_ctx *pc, const char **reason, void *user) {
    const dnnl_op_entry *ent = user;
    const ir_expr *e = pc->matched_expr;
    if (ent->kind == DN_K_OWN) {
        const char *r = !e || e->kind != IR_CALL ? "not a call" : ent->check(IR_AS(e, ir_call), pc->ctx);
        if (r) *reason = r;
        return r == NULL;
    }
    if (!e || e->kind != IR_CALL) {
        *reason = "not a call";
        return false;
    }
    const ir_call *c = IR_AS(e, ir_call);
    const ir_sinfo *rs = e->sinfo;
    bool ok_result = f32_static(rs, NULL, NULL);
    if (rs && rs->kind == IR_SINFO_TUPLE) { /* batch_norm */
        ok_result = rs->n > 0;
        for (uint32_t i = 0; i < rs->n; i++) ok_result &= f32_static(rs->fields[i], NULL, NULL);
    }
    if (!ok_result) {
        *reason = "result is not a float32 tensor of known rank";
        return false;
    }
    for (uint32_t i = 0; i < c->nargs; i++) {
        const ir_expr *a = c->args[i];
        if (a->kind == IR_TUPLE || a->kind == IR_PRIMVAL || a->kind == IR_SHAPE) continue;
        if (!is_tensor_leaf(a) || !f32_static(a->sinfo, NULL, NULL)) {
            *reason = ir_internf(pc->ctx, "argument %u is not a float32 tensor of known rank", i);
            return false;
        }
    }
    const char *r = ent->check(c, pc->ctx);
    if (r) {
        *reason = r;
        return false;
    }
    return true;
}


/* ================================================================ composites ==== */

static bool op_is(const ir_call *c, ir_op_id op) { return c && ir_op_id_of(&c->base) == op; }

/* The name of op id (patterns are built from names). */
#define OPN(id) (ir_op_def_at(IR_OP_##id)->name)

static bool scalar_value(const ir_expr *a, float *v) {
    if (!scalar_expr(a)) return false;
    *v = (float)rt_tensor_get_f64(IR_AS(a, ir_const)->data, 0);
    return true;
}

static bool prim_float(const ir_expr *a, float *v) {
    if (!a || a->kind != IR_PRIMVAL) return false;
    const ir_primval *p = IR_AS(a, ir_primval);
    int64_t iv;
    if (p->value) {
        if (!ir_prim_is_int(p->value, &iv)) return false;
        *v = (float)iv;
        return true;
    }
    *v = (float)p->fvalue;
    return true;
}

/* The analysis reads a composite's parts from its match: the patterns below name them
 * "anchor", "perm" (dense's permute_dims), "p<i>" for post i and "p<i>.<part>" inside it. */
static const char *part_name(ir_ctx_t *ctx, int i, const char *what) {
    return what ? ir_internf(ctx, "p%d.%s", i, what) : ir_internf(ctx, "p%d", i);
}

typedef struct dc_read {
    ir_ctx_t *ctx;
    const pat_match_result *m;
    const dc_bind *bs;
    uint32_t n;
} dc_read;

static const ir_call *as_call(const ir_expr *e) { return e && e->kind == IR_CALL ? IR_AS(e, ir_call) : NULL; }

/* The call part `what` of post i matched (what NULL: the post's own call), or NULL. */
static const ir_call *part(const dc_read *r, int i, const char *what) {
    return as_call(pat_match_named(r->m, part_name(r->ctx, i, what)));
}

/* The binding index of matched call c in bs, or -1. */
static int bind_of(const dc_read *r, const ir_call *c) {
    for (uint32_t j = 0; c && j < r->n; j++)
        if (r->bs[j].call == c) return (int)j;
    return -1;
}

/* How many bindings of the composite use var. The pattern fixes the ops; an intermediate read
 * by a further op of the composite is the one thing it does not say (a post whose input is
 * used again is not applied to that result alone). */
static int uses(const dc_read *r, const ir_expr *var) {
    int k = 0;
    for (uint32_t j = 0; var && j < r->n; j++) {
        const ir_call *c = r->bs[j].call;
        bool u = false;
        for (uint32_t a = 0; a < c->nargs; a++) u |= c->args[a] == var;
        k += u;
    }
    return k;
}

/* The var bound to matched call c (NULL when c is not a binding of bs). */
static const ir_expr *var_of(const dc_read *r, const ir_call *c) {
    int j = bind_of(r, c);
    return j >= 0 ? r->bs[j].var : NULL;
}

/* Argument index of binary call c's operand that is not var (-1 unless var is one operand). */
static int other_arg(const ir_call *c, const ir_expr *var) {
    if (c->nargs < 2) return -1;
    if (c->args[0] == var && c->args[1] != var) return 1;
    if (c->args[1] == var && c->args[0] != var) return 0;
    return -1;
}

/* A constant varying along `axis` of an nd-dim result only, with C values there. */
static bool per_channel(const ir_expr *k, int axis, int nd, int64_t C) {
    int64_t s[RT_MAX_NDIM];
    int32_t r;
    if (!k || k->kind != IR_CONST || !f32_static(k->sinfo, s, &r) || r > nd || r < nd - axis) return false;
    for (int i = 0; i < r; i++)
        if (s[i] != (nd - r + i == axis ? C : 1)) return false;
    return true;
}

/* c = var (+ - * /) scalar constant, as x -> A x + B. */
static bool scalar_linear(const ir_call *c, const ir_expr *var, float *A, float *B) {
    int o = other_arg(c, var);
    float k;
    if (o < 0 || !scalar_value(c->args[o], &k)) return false;
    *A = 1.f;
    *B = 0.f;
    if (op_is(c, IR_OP_ADD)) *B = k;
    else if (op_is(c, IR_OP_SUBTRACT)) {
        *A = o == 1 ? 1.f : -1.f;
        *B = o == 1 ? -k : k;
    } else if (op_is(c, IR_OP_MULTIPLY)) *A = k;
    else if (op_is(c, IR_OP_DIVIDE) && o == 1 && k != 0.f) *A = 1.f / k;
    else return false;
    return true;
}

static bool near(float a, float b) { return fabsf(a - b) <= 1e-5f * fmaxf(1.f, fabsf(b)); }

/* x * clip(A x + B, lo, hi) * C == x * clip(x / 6 + 1/2, 0, 1) */
static bool hswish_ok(float lo, float hi, float A, float B, float C) {
    return near(lo, 0.f) && near((hi - lo) * C, 1.f) && near(A * C, 1.f / 6.f) && near(B * C, 0.5f);
}

static bool same_dims(const ir_sinfo *s, int32_t nd, const int64_t *dims) {
    int64_t d[RT_MAX_NDIM];
    int32_t n;
    return f32_static(s, d, &n) && n == nd && !memcmp(d, dims, sizeof(int64_t) * (size_t)nd);
}

/* the op of a single-op eltwise post */
static const ir_op_id UNARY_OP[RT_DNNL_NPOSTS] = {
    [RT_DNNL_RELU] = IR_OP_RELU,           [RT_DNNL_LEAKY_RELU] = IR_OP_LEAKYRELU, [RT_DNNL_RELU6] = IR_OP_RELU6,
    [RT_DNNL_CLIP] = IR_OP_CLIP,           [RT_DNNL_SIGMOID] = IR_OP_SIGMOID,      [RT_DNNL_GELU] = IR_OP_GELU,
    [RT_DNNL_GELU_TANH] = IR_OP_GELU_TANH, [RT_DNNL_TANH] = IR_OP_TANH,
};

static const char *hardswish_read(const dc_read *r, int i, const ir_expr *x, dc_post *p) {
    static const char *bad = "hard-swish is not x * clip(x + 3, 0, 6) / 6 or x * hardsigmoid(x)";
    const ir_call *l0 = part(r, i, "l0"), *l1 = part(r, i, "l1"), *cl = part(r, i, "clip"), *sc = part(r, i, "scale");
    const ir_call *prod = part(r, i, "prod"), *after = part(r, i, "after");
    if (!l1 || !cl || !prod || uses(r, x) != 2) return bad;
    float A = 1.f, B = 0.f, a, b, lo, hi, C = 1.f;
    const ir_expr *v = x;
    if (l0) {
        if (!scalar_linear(l0, v, &a, &b)) return bad;
        A *= a;
        B = B * a + b;
        v = var_of(r, l0);
        if (uses(r, v) != 1) return bad;
    }
    if (!scalar_linear(l1, v, &a, &b) || uses(r, var_of(r, l1)) != 1) return bad;
    A *= a;
    B = B * a + b;
    if (!prim_float(cl->args[1], &lo) || !prim_float(cl->args[2], &hi) || uses(r, var_of(r, cl)) != 1) return bad;
    if (sc) { /* clip(...) / 6 before the product */
        if (!scalar_linear(sc, var_of(r, cl), &a, &b) || b != 0.f || uses(r, var_of(r, sc)) != 1) return bad;
        C = a;
    }
    p->out = bind_of(r, prod);
    if (!hswish_ok(lo, hi, A, B, C)) { /* (x * clip(x + 3, 0, 6)) / 6 */
        if (!after || uses(r, var_of(r, prod)) != 1 || !scalar_linear(after, var_of(r, prod), &a, &b) || b != 0.f ||
            !hswish_ok(lo, hi, A, B, C * a))
            return "hard-swish constants are not 3 and 6";
        p->out = bind_of(r, after);
    } else if (after) {
        return "the composite holds ops its name does not name";
    }
    return NULL;
}

static const char *elu_read(const dc_read *r, int i, const ir_expr *x, dc_post *p) {
    static const char *bad = "elu is not where(x > 0, x, alpha * (exp(x) - 1))";
    const ir_call *e = part(r, i, "exp"), *g = part(r, i, "gt"), *sb = part(r, i, "sub"), *mu = part(r, i, "mul");
    float zero, one, a, b;
    if (!e || !g || !sb || !mu || uses(r, x) != 3 || uses(r, var_of(r, e)) != 1 || uses(r, var_of(r, sb)) != 1 ||
        !scalar_value(g->args[1], &zero) || !scalar_value(sb->args[1], &one) || !scalar_linear(mu, var_of(r, sb), &a, &b))
        return bad;
    if (zero != 0.f || one != 1.f) return "elu constants are not 0 and 1";
    p->alpha = a;
    return NULL;
}

/* matched binding of bs? */
static bool in_match(const pat_match_result *m, const ir_call *c) {
    for (uint32_t k = 0; k < m->bindings.len; k++)
        if (m->bindings.data[k]->value == &c->base) return true;
    return false;
}

const char *dc_analyze(ir_ctx_t *ctx, const rt_dnnl_composite *spec, const pat_match_result *m, const dc_bind *bs,
                       uint32_t n, dc_comp *out) {
    memset(out, 0, sizeof(*out));
    out->spec = *spec;
    out->anchor = out->perm = -1;
    int nelt = 0;
    for (int i = 0; i < spec->npost; i++) nelt += rt_dnnl_post_eltwise(spec->post[i]);
    if (nelt > RT_DNNL_MAX_ELTWISE)
        return ir_internf(ctx, "post-op chain longer than oneDNN 2.6 allows (%d eltwise post-ops, at most %d)", nelt,
                          RT_DNNL_MAX_ELTWISE);
    bool after_eltwise = false;
    if (n > DC_MAX_BINDS) return "composite too large";
    dc_read rd = {ctx, m, bs, n};
    bool dense = spec->anchor == RT_DNNL_DENSE;
    out->anchor = bind_of(&rd, as_call(pat_match_named(m, ir_intern(ctx, "anchor"))));
    if (dense) {
        out->perm = bind_of(&rd, as_call(pat_match_named(m, ir_intern(ctx, "perm"))));
        if (out->perm < 0) out->anchor = -1;
    }
    if (out->anchor < 0) return "the composite has no anchor op";
    const ir_call *ac = bs[out->anchor].call;
    int64_t os[RT_MAX_NDIM];
    int32_t ond;
    if (!f32_static(ac->base.sinfo, os, &ond)) return "result is not a float32 tensor of known rank";
    const ir_expr *wt = dense ? bs[out->perm].call->args[0] : ac->args[1];
    if (!is_tensor_leaf(ac->args[0]) || !f32_static(ac->args[0]->sinfo, NULL, NULL) || !is_tensor_leaf(wt) ||
        !f32_static(wt->sinfo, NULL, NULL))
        return "an operand is not a float32 tensor of known rank";
    const char *r = NULL;
    bool conv = spec->anchor <= RT_DNNL_CONV2D_TRANSPOSE;
    switch (spec->anchor) {
    case RT_DNNL_CONV1D: r = ond != 3 ? "conv1d result is not 3-D" : chk_conv1d(ac, ctx); break;
    case RT_DNNL_CONV2D: r = ond != 4 ? "conv2d result is not 4-D" : chk_conv2d(ac, ctx); break;
    case RT_DNNL_CONV2D_TRANSPOSE: r = ond != 4 ? "conv2d_transpose result is not 4-D" : chk_deconv2d(ac, ctx); break;
    default: {
        int32_t na = 0, nb = 0;
        f32_static(ac->args[0]->sinfo, NULL, &na);
        f32_static(wt->sinfo, NULL, &nb);
        if (na < 2 || nb < 2) r = "matmul with a 1-D operand";
        if (!r && dense) {
            int64_t ax[RT_MAX_NDIM];
            int c = ir_attrs_get_ints(bs[out->perm].call->attrs, "axes", ax, RT_MAX_NDIM);
            bool ok = c == nb;
            for (int i = 0; ok && i < nb - 2; i++) ok = ax[i] == i;
            if (!ok || ax[nb - 2] != nb - 1 || ax[nb - 1] != nb - 2) r = "weight permutation is not a transpose of the last two axes";
        }
    }
    }
    if (r) return r;
    if (conv) {
        int64_t G = ir_attrs_get_int(ac->attrs, "groups", 1);
        if (G <= 0 || os[chan_axis(ac, "data_layout")] % G) return "groups do not divide the output channels";
    }
    int axis = conv ? chan_axis(ac, "data_layout") : ond - 1;
    int64_t C = os[axis];
    const ir_expr *cur = bs[out->anchor].var;
    for (int i = 0; i < spec->npost; i++) {
        dc_post *p = &out->post[i];
        rt_dnnl_post t = spec->post[i];
        p->mid = p->src_b = p->src_a = -1;
        const ir_call *pc = part(&rd, i, NULL);
        int u = bind_of(&rd, pc), o;
        if (u < 0) return ir_internf(ctx, "the match has no %s", rt_dnnl_post_name(t));
        float a, b;
        switch (t) {
        case RT_DNNL_BIAS:
            if (uses(&rd, cur) != 1) return "bias is not an add";
            o = other_arg(pc, cur);
            if (o < 0 || pc->args[o]->kind != IR_CONST) return "bias is not a constant";
            if (!per_channel(pc->args[o], axis, ond, C)) {
                char sh[96] = "?";
                ir_sinfo_snprint(pc->args[o]->sinfo, sh, sizeof sh);
                return ir_internf(ctx, "bias is not per-output-channel (%s, %lld channels)", sh, (long long)C);
            }
            p->src_b = u;
            p->src_a = o;
            break;
        case RT_DNNL_AFFINE: {
            /* (x - mean) / std * scale + shift (r0..r3) or x * scale + shift (s0, s1) */
            static const char *const RAW[] = {"r0", "r1", "r2", "r3"}, *const SHORT[] = {"s0", "s1"};
            if (!conv) return "affine post-op after a matmul";
            if (uses(&rd, cur) != 1) return "affine is not applied to the result alone";
            bool f2 = part(&rd, i, "r3") != NULL;
            int cnt = f2 ? 4 : 2;
            for (int k = 0; k < cnt; k++) {
                const ir_call *c = part(&rd, i, f2 ? RAW[k] : SHORT[k]);
                if ((u = bind_of(&rd, c)) < 0 || uses(&rd, cur) != 1)
                    return "affine is not x * scale + shift or (x - mean) / std * scale + shift";
                o = other_arg(c, cur);
                if (o < 0 || ((k == 0 || k == 1) && f2 && o != 1)) return "affine operand order";
                p->aff_lin[k] = scalar_linear(c, cur, &p->aff_alpha[k], &p->aff_beta[k]);
                if (!p->aff_lin[k] && !per_channel(c->args[o], axis, ond, C)) {
                    char sh[96] = "?";
                    ir_sinfo_snprint(c->args[o]->sinfo, sh, sizeof sh);
                    return ir_internf(ctx, "affine scale / shift are not per-output-channel or scalar constants (%s, %lld channels)",
                                      sh, (long long)C);
                }
                p->aff_b[k] = u;
                p->aff_a[k] = o;
                cur = bs[u].var;
            }
            p->naff = cnt;
            p->out = u;
            /* after an activation nothing folds into the weights: scalar parts are one linear
             * eltwise post-op more */
            bool lin = false;
            for (int k = 0; k < cnt; k++) lin |= p->aff_lin[k];
            if (after_eltwise && lin && ++nelt > RT_DNNL_MAX_ELTWISE)
                return ir_internf(ctx, "post-op chain longer than oneDNN 2.6 allows (%d eltwise post-ops, at most %d)", nelt,
                                  RT_DNNL_MAX_ELTWISE);
            continue;
        }
        case RT_DNNL_HARDSIGMOID: {
            static const char *bad = "hard-sigmoid is not clip(a * x + b, 0, 1)";
            const ir_call *lc = part(&rd, i, "lin"), *mc = part(&rd, i, "mid");
            float a2, b2, lo, hi;
            if (!lc || uses(&rd, cur) != 1 || !scalar_linear(lc, cur, &a, &b) || b != 0.f) return bad;
            if (!mc || uses(&rd, var_of(&rd, lc)) != 1 || !scalar_linear(mc, var_of(&rd, lc), &a2, &b2)) return bad;
            if (uses(&rd, var_of(&rd, mc)) != 1) return bad;
            if (!prim_float(pc->args[1], &lo) || !prim_float(pc->args[2], &hi)) return bad;
            if (lo != 0.f || hi != 1.f) return "hard-sigmoid clip bounds are not 0 and 1";
            p->alpha = a;
            p->beta = b2;
            p->mid = bind_of(&rd, mc);
            break;
        }
        case RT_DNNL_HARDSWISH:
            if ((r = hardswish_read(&rd, i, cur, p))) return r;
            u = p->out;
            break;
        case RT_DNNL_SWISH: /* silu(x) or x * sigmoid(x): x * sigmoid(1 * x) */
            p->alpha = 1.f;
            if (uses(&rd, cur) != (part(&rd, i, "silu") ? 1 : 2)) return "swish is not silu(x) or x * sigmoid(x)";
            break;
        case RT_DNNL_ELU:
            if ((r = elu_read(&rd, i, cur, p))) return r;
            break;
        case RT_DNNL_ADD:
        case RT_DNNL_MUL: {
            if (uses(&rd, cur) != 1 || (o = other_arg(pc, cur)) < 0)
                return t == RT_DNNL_ADD ? "residual add is not on the result alone" : "multiply is not on the result alone";
            const ir_expr *y = pc->args[o];
            int64_t ys[RT_MAX_NDIM];
            int32_t yn;
            if (!is_tensor_leaf(y) || !f32_static(y->sinfo, ys, &yn)) return "post-op operand is not a float32 tensor of known rank";
            if (yn > ond) return "post-op operand has a higher rank than the result";
            for (uint32_t j = 0; j < n; j++)
                if (bs[j].var == y) return "post-op operand is computed inside the composite";
            for (int k = 0; k < yn; k++)
                if (ys[k] != 1 && ys[k] != os[ond - yn + k]) return "post-op operand does not broadcast to the result";
            p->src_b = u;
            p->src_a = o;
            break;
        }
        default: /* single-op eltwise posts */
            if (uses(&rd, cur) != 1 || pc->args[0] != cur) return ir_internf(ctx, "%s is not applied to the result alone", rt_dnnl_post_name(t));
            p->alpha = p->beta = 0.f;
            if (t == RT_DNNL_LEAKY_RELU) p->alpha = (float)ir_attrs_get_float(pc->attrs, "alpha", 0.01);
            if (t == RT_DNNL_RELU6) p->beta = 6.f;
            if (t == RT_DNNL_CLIP && (!prim_float(pc->args[1], &p->alpha) || !prim_float(pc->args[2], &p->beta)))
                return "clip bounds are not constants";
        }
        if (u < 0 || !same_dims(bs[u].call->base.sinfo, ond, os))
            return ir_internf(ctx, "%s changes the result's shape (its other operand is larger)", rt_dnnl_post_name(t));
        p->out = u;
        cur = bs[u].var;
        after_eltwise |= rt_dnnl_post_eltwise(t) > 0;
    }
    for (uint32_t j = 0; j < n; j++)
        if (!in_match(m, bs[j].call)) return "the composite holds ops its name does not name";
    return NULL;
}

/* ---- composite patterns ---- */

static pat_t *cst(ir_ctx_t *ctx) { return pat_const(ctx); }

static pat_t *clip_of(ir_ctx_t *ctx, const pat_t *x) {
    const pat_t *a[3] = {x, pat_wildcard(ctx), pat_wildcard(ctx)};
    return pat_call_op(ctx, OPN(CLIP), 3, a);
}

static pat_t *or3(ir_ctx_t *ctx, const pat_t *a, const pat_t *b, const pat_t *c) {
    return pat_or(ctx, a, pat_or(ctx, b, c));
}

/* The post t applied to x, as post i of its composite: its parts are named "p<i>.<part>"
 * (the caller names the post itself "p<i>"), which dc_analyze reads. */
static pat_t *post_pat(ir_ctx_t *ctx, rt_dnnl_post t, const pat_t *x, int i) {
#define N(p, what) pat_name(ctx, (p), part_name(ctx, i, (what)))
    switch (t) {
    case RT_DNNL_BIAS: return pat_call2(ctx, OPN(ADD), x, cst(ctx));
    case RT_DNNL_AFFINE: {
        pat_t *raw = N(pat_call2(ctx, OPN(SUBTRACT), x, cst(ctx)), "r0");
        raw = N(pat_call2(ctx, OPN(DIVIDE), raw, cst(ctx)), "r1");
        raw = N(pat_call2(ctx, OPN(ADD), N(pat_call2(ctx, OPN(MULTIPLY), raw, cst(ctx)), "r2"), cst(ctx)), "r3");
        return pat_or(ctx, raw, N(pat_call2(ctx, OPN(ADD), N(pat_call2(ctx, OPN(MULTIPLY), x, cst(ctx)), "s0"), cst(ctx)), "s1"));
    }
    case RT_DNNL_HARDSIGMOID: {
        pat_t *lin = pat_or(ctx, N(pat_call2(ctx, OPN(MULTIPLY), x, cst(ctx)), "lin"), N(pat_call2(ctx, OPN(DIVIDE), x, cst(ctx)), "lin"));
        return clip_of(ctx, N(pat_call2(ctx, OPN(ADD), lin, cst(ctx)), "mid"));
    }
    case RT_DNNL_HARDSWISH: {
        /* linear parts l0 (optional), l1; clip; an optional scale; the product with x; an
         * optional scaling after it */
        pat_t *lin = or3(ctx, N(pat_call2(ctx, OPN(ADD), x, cst(ctx)), "l1"),
                         N(pat_call2(ctx, OPN(ADD), N(pat_call2(ctx, OPN(MULTIPLY), x, cst(ctx)), "l0"), cst(ctx)), "l1"),
                         N(pat_call2(ctx, OPN(ADD), N(pat_call2(ctx, OPN(DIVIDE), x, cst(ctx)), "l0"), cst(ctx)), "l1"));
        pat_t *cl = N(clip_of(ctx, lin), "clip");
        pat_t *scaled = or3(ctx, N(pat_call2(ctx, OPN(DIVIDE), cl, cst(ctx)), "scale"),
                            N(pat_call2(ctx, OPN(MULTIPLY), cl, cst(ctx)), "scale"), cl);
        pat_t *prod = N(pat_call2(ctx, OPN(MULTIPLY), x, cl), "prod");
        pat_t *after = pat_or(ctx, N(pat_call2(ctx, OPN(DIVIDE), prod, cst(ctx)), "after"),
                              N(pat_call2(ctx, OPN(MULTIPLY), prod, cst(ctx)), "after"));
        return pat_or(ctx, after, N(pat_call2(ctx, OPN(MULTIPLY), x, scaled), "prod"));
    }
    case RT_DNNL_SWISH:
        return pat_or(ctx, N(pat_call1(ctx, OPN(SILU), x), "silu"),
                      pat_call2(ctx, OPN(MULTIPLY), x, N(pat_call1(ctx, OPN(SIGMOID), x), "sig")));
    case RT_DNNL_ELU: {
        pat_t *neg = N(pat_call2(ctx, OPN(MULTIPLY), N(pat_call2(ctx, OPN(SUBTRACT), N(pat_call1(ctx, OPN(EXP), x), "exp"), cst(ctx)), "sub"),
                                 cst(ctx)), "mul");
        const pat_t *a[3] = {N(pat_call2(ctx, OPN(GREATER), x, cst(ctx)), "gt"), x, neg};
        return pat_call_op(ctx, OPN(WHERE), 3, a);
    }
    case RT_DNNL_CLIP: return clip_of(ctx, x);
    case RT_DNNL_ADD: return pat_call2(ctx, OPN(ADD), x, pat_wildcard(ctx));
    case RT_DNNL_MUL: return pat_call2(ctx, OPN(MULTIPLY), x, pat_wildcard(ctx));
    default: return pat_call1(ctx, ir_op_def_at((uint32_t)UNARY_OP[t])->name, x);
    }
#undef N
}

/* The anchor, named "anchor" (dense: its permute_dims of the weights "perm"). */
static pat_t *anchor_pat(ir_ctx_t *ctx, rt_dnnl_anchor a) {
    const pat_t *args[2] = {pat_wildcard(ctx), pat_wildcard(ctx)};
    if (a == RT_DNNL_DENSE)
        args[1] = pat_name(ctx, pat_call_varargs(ctx, pat_op(ctx, OPN(PERMUTE_DIMS)), 1, (const pat_t *[]){pat_wildcard(ctx)}),
                           "perm");
    return pat_name(ctx, pat_call_varargs(ctx, pat_op(ctx, ir_op_def_at((uint32_t)rt_dnnl_anchor_op(a))->name), 2, args),
                    "anchor");
}

/* post j of a composite on the pattern p of the posts before it */
static pat_t *named_post(ir_ctx_t *ctx, rt_dnnl_post t, const pat_t *p, int j) {
    pat_t *q = post_pat(ctx, t, p, j);
    return q ? pat_name(ctx, q, part_name(ctx, j, NULL)) : NULL;
}

const pat_t *dc_pattern(ir_ctx_t *ctx, const rt_dnnl_composite *spec) {
    const pat_t *p = anchor_pat(ctx, spec->anchor);
    for (int j = 0; j < spec->npost && p; j++) p = named_post(ctx, spec->post[j], p, j);
    return p;
}

typedef struct func_read {
    ir_ctx_t *ctx;
    const rt_dnnl_composite *spec;
    const dc_bind *bs;
    uint32_t n;
    dc_comp *out;
    const char *why;
} func_read;

static bool accept_read(const pat_match_result *m, void *user) {
    func_read *r = user;
    const char *why = dc_analyze(r->ctx, r->spec, m, r->bs, r->n, r->out);
    if (!r->why) r->why = why;
    return why == NULL;
}

const char *dc_analyze_func(ir_ctx_t *ctx, const rt_dnnl_composite *spec, const ir_func *f, const dc_bind *bs, uint32_t n,
                            dc_comp *out) {
    const ir_seq *s = f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    const ir_block *blk = NULL;
    for (uint32_t b = 0; s && b < s->nblocks && !blk; b++)
        for (uint32_t k = 0; k < s->blocks[b]->n && !blk; k++)
            if (&s->blocks[b]->bindings[k].var->base == s->body) blk = s->blocks[b];
    const pat_t *p = blk ? dc_pattern(ctx, spec) : NULL;
    if (!p) return "the composite's result is not bound in its body";
    pat_block_info *info = pat_block_info_build(ctx, blk);
    pat_match_result m;
    pat_match_result_init(&m);
    func_read r = {ctx, spec, bs, n, out, NULL};
    bool ok = pat_match_each(p, s->body, info, &m, accept_read, &r);
    pat_match_result_free(&m);
    pat_block_info_free(info);
    if (ok) return NULL;
    return r.why ? r.why : "the composite does not match its pattern";
}

/* ops a post usually takes: the priority of longer composites */
static const int POST_OPS[RT_DNNL_NPOSTS] = {
    [RT_DNNL_BIAS] = 1, [RT_DNNL_AFFINE] = 2,    [RT_DNNL_RELU] = 1,    [RT_DNNL_LEAKY_RELU] = 1, [RT_DNNL_RELU6] = 1,
    [RT_DNNL_CLIP] = 1, [RT_DNNL_HARDSIGMOID] = 3, [RT_DNNL_HARDSWISH] = 4, [RT_DNNL_SIGMOID] = 1, [RT_DNNL_SWISH] = 2,
    [RT_DNNL_GELU] = 1, [RT_DNNL_GELU_TANH] = 1, [RT_DNNL_TANH] = 1,    [RT_DNNL_ELU] = 5,        [RT_DNNL_ADD] = 1,
    [RT_DNNL_MUL] = 1,
};

static bool comp_check(const pat_check_ctx *pc, const char **reason, void *user) {
    const rt_dnnl_composite *spec = user;
    if (!pat_check_no_leaking_intermediates(pc, reason, NULL)) return false;
    dc_bind bs[DC_MAX_BINDS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < pc->match->bindings.len; i++) {
        const ir_binding *b = pc->match->bindings.data[i];
        if (n == DC_MAX_BINDS || b->value->kind != IR_CALL) {
            *reason = "composite with a binding that is not an op call";
            return false;
        }
        bs[n++] = (dc_bind){&b->var->base, IR_AS(b->value, ir_call)};
    }
    dc_comp c;
    const char *r = dc_analyze(pc->ctx, spec, pc->match, bs, n, &c);
    if (r) *reason = r;
    return r == NULL;
}

typedef struct comp_entry {
    rt_dnnl_composite spec;
    int weight;
} comp_entry;

static int cmp_weight(const void *a, const void *b) {
    const comp_entry *x = a, *y = b;
    return y->weight - x->weight;
}

static const rt_dnnl_post ELT[] = {RT_DNNL_RELU,    RT_DNNL_LEAKY_RELU, RT_DNNL_RELU6, RT_DNNL_CLIP,      RT_DNNL_HARDSIGMOID,
                                   RT_DNNL_HARDSWISH, RT_DNNL_SIGMOID,  RT_DNNL_SWISH, RT_DNNL_GELU,      RT_DNNL_GELU_TANH,
                                   RT_DNNL_TANH,    RT_DNNL_ELU};
#define NELT ((int)(sizeof(ELT) / sizeof(ELT[0])))

/* Every composite of the grammar in the header comment, heaviest first (qsort is not stable:
 * the generation order is kept in `weight`'s low bits). */
#define MAX_COMPOSITES 2048

static uint32_t all_composites(comp_entry *out) {
    uint32_t n = 0;
    for (int a = 0; a < RT_DNNL_NANCHORS; a++) {
        bool conv = a <= RT_DNNL_CONV2D_TRANSPOSE;
        for (int pre = 0; pre < (conv ? 4 : 2); pre++) {
            rt_dnnl_composite base = {(rt_dnnl_anchor)a, 0, {0}};
            if (pre & 1) base.post[base.npost++] = RT_DNNL_BIAS;
            if (pre & 2) base.post[base.npost++] = RT_DNNL_AFFINE;
            /* suffixes: none, e, b, e b, b e, and for convolutions e affine (an affine after
             * the activation, as PP-LCNet's learnable affine blocks) */
            for (int e1 = -1; e1 < NELT; e1++)
                for (int b = -1; b < 3; b++)
                    for (int e2 = -1; e2 < NELT; e2++) {
                        if (b < 0 && e2 >= 0) continue;
                        if (e1 >= 0 && e2 >= 0) continue;
                        if (b == 2 && (!conv || e1 < 0 || e2 >= 0)) continue;
                        rt_dnnl_composite c = base;
                        if (e1 >= 0) c.post[c.npost++] = ELT[e1];
                        if (b >= 0) c.post[c.npost++] = b == 2 ? RT_DNNL_AFFINE : b ? RT_DNNL_MUL : RT_DNNL_ADD;
                        if (e2 >= 0) c.post[c.npost++] = ELT[e2];
                        if ((!c.npost && a != RT_DNNL_DENSE) || n == MAX_COMPOSITES) continue;
                        /* more ops first; then a bias / affine reading before a residual
                         * add / multiply reading of the same ops; then generation order */
                        int w = a == RT_DNNL_DENSE ? 2 : 1, special = (pre & 1) + (pre >> 1);
                        for (int i = 0; i < c.npost; i++) w += POST_OPS[c.post[i]];
                        out[n].spec = c;
                        out[n].weight = (w * 4 + special) * 2048 + 2047 - (int)n;
                        n++;
                    }
        }
    }
    qsort(out, n, sizeof(comp_entry), cmp_weight);
    return n;
}


/* ---- dnnl.disable ---- */

static bool disabled_check(const pat_check_ctx *pc, const char **reason, void *user) {
    (void)pc;
    *reason = user;
    return false;
}

/* item names pattern "dnnl.<p>": as p, as "relax.<p>" (an op's name), or without an op's
 * "nn." ("conv2d" for "nn.conv2d"); "composites" names every fused composite, the quantized ones too */
static bool names_pattern(const char *item, size_t l, const byoc_pattern *bp) {
    const char *p = bp->name + 5;
    if (l == 10 && strncmp(item, "composites", l) == 0) return bp->check == comp_check || dnnl_q_kind_of(bp->name) != DNNL_Q_NONE;
    if (strlen(p) == l && strncmp(p, item, l) == 0) return true;
    if (l > 6 && strncmp(item, "relax.", 6) == 0 && strlen(p) == l - 6 && strncmp(p, item + 6, l - 6) == 0) return true;
    return strncmp(p, "nn.", 3) == 0 && strlen(p + 3) == l && strncmp(p + 3, item, l) == 0;
}

/* The patterns the dnnl.disable list names keep their place but fail their check, so the
 * partition report says why those ops stayed on the host. A name that is no pattern is an
 * error (a typo would silently disable nothing). */
static gr_status apply_disable(ir_ctx_t *ctx, const char *list, byoc_pattern *pats, uint32_t n, gr_diag *diag) {
    if (!list || !*list) return GR_OK;
    bool *off = gr_xcalloc(n + 1, sizeof(bool));
    for (const char *item = list; item;) {
        const char *end = strchr(item, ',');
        size_t l = end ? (size_t)(end - item) : strlen(item);
        bool hit = false;
        for (uint32_t i = 0; i < n; i++)
            if (l && names_pattern(item, l, &pats[i])) off[i] = hit = true;
        if (!hit) {
            free(off);
            return gr_diag_set(diag, GR_ERR_INVALID, "backend option 'dnnl.disable': '%.*s' names no dnnl pattern "
                               "(see graft backends)", (int)l, item);
        }
        item = end ? end + 1 : NULL;
    }
    const char *why = ir_internf(ctx, "disabled by the option dnnl.disable=%s", list);
    for (uint32_t i = 0; i < n; i++)
        if (off[i]) pats[i] = (byoc_pattern){pats[i].name, pats[i].pattern, disabled_check, (void *)why};
    free(off);
    return GR_OK;
}

gr_status dnnl_patterns(ir_ctx_t *ctx, const byoc_options *opts, const byoc_pattern **out, uint32_t *n,
                        gr_diag *diag) {
    comp_entry *comps = malloc(sizeof(comp_entry) * MAX_COMPOSITES);
    if (!comps) return gr_diag_set(diag, GR_ERR_NOMEM, "dnnl patterns: out of memory");
    uint32_t nc = all_composites(comps), nops = sizeof(OPS) / sizeof(OPS[0]), k = 0;
    byoc_pattern *pats = IR_NEW_ARRAY(ctx, byoc_pattern, nc + nops + dnnl_q_npatterns() + 1);
    /* quantized composites first: they hold more ops than any float one */
    k = dnnl_q_patterns(ctx, pats);
    /* composites sharing a prefix share its pattern nodes (the table is a trie): interned
     * prefix name -> pattern */
    gr_map built;
    gr_map_init(&built);
    for (uint32_t i = 0; i < nc; i++) {
        rt_dnnl_composite *spec = IR_NEW(ctx, rt_dnnl_composite);
        *spec = comps[i].spec;
        rt_dnnl_composite pre = *spec;
        const pat_t *p = NULL;
        char name[160];
        int have = spec->npost;
        uint64_t v = 0;
        for (; have >= 0; have--) {  /* the longest prefix built so far */
            pre.npost = have;
            if (gr_map_get(&built, GR_MAP_PTR(ir_intern(ctx, rt_dnnl_composite_name(&pre, name, sizeof name))), &v)) break;
        }
        p = have >= 0 ? (const pat_t *)(uintptr_t)v : anchor_pat(ctx, spec->anchor);
        if (have < 0) {
            have = 0;
            pre.npost = 0;
            gr_map_put(&built, GR_MAP_PTR(ir_intern(ctx, rt_dnnl_composite_name(&pre, name, sizeof name))), GR_MAP_PTR(p));
        }
        for (int j = have; j < spec->npost && p; j++) {
            p = named_post(ctx, spec->post[j], p, j);
            pre.npost = j + 1;
            if (p) gr_map_put(&built, GR_MAP_PTR(ir_intern(ctx, rt_dnnl_composite_name(&pre, name, sizeof name))), GR_MAP_PTR(p));
        }
        if (!p) continue;
        pats[k++] = (byoc_pattern){ir_intern(ctx, rt_dnnl_composite_name(spec, name, sizeof name)), p, comp_check, spec};
    }
    gr_map_free(&built);
    free(comps);
    for (uint32_t i = 0; i < nops; i++) {
        const ir_op_def *def = ir_op_def_at((uint32_t)OPS[i].op);
        pat_t *p = pat_call_varargs(ctx, pat_op(ctx, def->name), 0, NULL);
        if (!p) continue;
        pats[k++] = (byoc_pattern){ir_internf(ctx, "dnnl.%s", def->name + 6), p, dnnl_check, (void *)&OPS[i]};
    }
    gr_status st = apply_disable(ctx, byoc_option_str(opts, &byoc_dnnl_backend, "disable"), pats, k, diag);
    if (st) return st;
    *out = pats;
    *n = k;
    return GR_OK;
}
