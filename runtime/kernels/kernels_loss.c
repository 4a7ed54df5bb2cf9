/* Losses and attention: nn.nll_loss (weights, reduction none/mean/sum, ignore_index) and
 * nn.cross_entropy_with_logits (TVM: -sum(pred * labels) / batch for 2-D input). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static gr_status k_nll_loss(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *p, *t, *w = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 3, d)) || (st = rt_arg_tensor(c, 0, &p, d)) ||
        (st = rt_arg_tensor(c, 1, &t, d)) || (c->nargs == 3 && c->args[2].kind != RT_VAL_NONE &&
                                              (st = rt_arg_tensor(c, 2, &w, d))))
        return st;
    int pn = p->dl.ndim;
    bool single = pn == 1;
    int64_t N = single ? 1 : p->dl.shape[0], C = single ? p->dl.shape[0] : p->dl.shape[1];
    int64_t S = single ? 1 : rt_numel(pn - 2, p->dl.shape + 2);
    bool ok = pn >= 1 && !rt_is_floatish(t->dl.dtype) && rt_is_floatish(p->dl.dtype) &&
              rt_tensor_numel(t) == N * S && t->dl.ndim == (single ? 0 : pn - 1);
    for (int i = 0; ok && !single && i < t->dl.ndim; i++)
        ok = t->dl.shape[i] == p->dl.shape[i == 0 ? 0 : i + 1];
    if (w) ok = ok && w->dl.ndim == 1 && w->dl.shape[0] == C;
    if (!ok)
        return rt_kerr(c, d, GR_ERR_INVALID, "predictions %s, targets %s, weights %s do not match",
                       RT_SHAPE_STR(p), RT_SHAPE_STR(t), RT_SHAPE_STR(w));
    const char *red = rt_attr_str(c->attrs, "reduction", "mean");
    int mode = strcmp(red, "none") == 0 ? 0 : strcmp(red, "sum") == 0 ? 1
             : strcmp(red, "mean") == 0 ? 2 : -1;
    if (mode < 0) return rt_kerr(c, d, GR_ERR_INVALID, "bad reduction \"%s\"", red);
    int64_t ignore = ir_attrs_get_int(c->attrs, "ignore_index", -100);
    rt_tensor *o;
    if ((st = rt_out_new(c, p->dl.dtype, mode == 0 ? t->dl.ndim : 0, t->dl.shape, &o, d))) return st;
    double total = 0, wsum = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            int64_t ti = (int64_t)rt_tensor_get_f64(t, n * S + s);
            double l = 0, wt = 0;
            if (ti != ignore) {
                if (ti < 0 || ti >= C) {
                    rt_tensor_release(o);
                    return rt_kerr(c, d, GR_ERR_INVALID, "target %lld out of range [0, %lld)",
                                   (long long)ti, (long long)C);
                }
                wt = w ? rt_tensor_get_f64(w, ti) : 1.0;
                l = -wt * rt_tensor_get_f64(p, (n * C + ti) * S + s);
            }
            if (mode == 0) rt_tensor_set_f64(o, n * S + s, l);
            total += l;
            wsum += wt;
        }
    if (mode == 1) rt_tensor_set_f64(o, 0, total);
    if (mode == 2) rt_tensor_set_f64(o, 0, wsum != 0 ? total / wsum : NAN);
    *out = rt_value_tensor(o);
    return GR_OK;
}

static gr_status k_cross_entropy(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *p, *l;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &p, d)) ||
        (st = rt_arg_tensor(c, 1, &l, d)))
        return st;
    if (!rt_tensor_same_shape(p, l) || !rt_is_floatish(p->dl.dtype) || p->dl.ndim < 1 || p->dl.ndim > 2)
        return rt_kerr(c, d, GR_ERR_INVALID, "predictions %s and labels %s must be equal 1-D/2-D",
                       RT_SHAPE_STR(p), RT_SHAPE_STR(l));
    double s = 0;
    for (int64_t i = 0, n = rt_tensor_numel(p); i < n; i++)
        s += rt_tensor_get_f64(p, i) * rt_tensor_get_f64(l, i);
    double batch = p->dl.ndim == 2 ? (double)p->dl.shape[0] : 1.0;
    rt_tensor *o;
    if ((st = rt_out_new(c, p->dl.dtype, 0, NULL, &o, d))) return st;
    rt_tensor_set_f64(o, 0, batch != 0 ? -s / batch : NAN);
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_loss[] = {
    RT_K(NLL_LOSS, k_nll_loss),
    RT_K_OFF("relax.nn.cross_entropy_with_logits", k_cross_entropy),
};
RT_FAMILY_COUNT(loss, rt_kernels_loss);

/* nn.attention(q, k, v[, bias]; scale, causal_mask): q (B, S, N, H), k (B, T, N, H),
 * v (B, T, N, Hv) -> (B, S, N, Hv); softmax(q k^T * scale + bias) v, scale default 1/sqrt(H),
 * causal_mask "TopLeft" (t <= s) or "BottomRight" (t <= s + T - S). */
static gr_status k_attention(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *q, *k, *v, *bias = NULL;
    gr_status st;
    if ((st = rt_check_nargs(c, 3, 4, d)) || (st = rt_arg_tensor(c, 0, &q, d)) ||
        (st = rt_arg_tensor(c, 1, &k, d)) || (st = rt_arg_tensor(c, 2, &v, d)) ||
        (c->nargs == 4 && c->args[3].kind != RT_VAL_NONE && (st = rt_arg_tensor(c, 3, &bias, d))))
        return st;
    bool ok = q->dl.ndim == 4 && k->dl.ndim == 4 && v->dl.ndim == 4 && rt_is_floatish(q->dl.dtype);
    int64_t B = 0, S = 0, N = 0, H = 0, T = 0, Hv = 0;
    if (ok) {
        B = q->dl.shape[0], S = q->dl.shape[1], N = q->dl.shape[2], H = q->dl.shape[3];
        T = k->dl.shape[1], Hv = v->dl.shape[3];
        ok = k->dl.shape[0] == B && k->dl.shape[2] == N && k->dl.shape[3] == H &&
             v->dl.shape[0] == B && v->dl.shape[1] == T && v->dl.shape[2] == N;
    }
    if (!ok)
        return rt_kerr(c, d, GR_ERR_INVALID, "query %s, key %s, value %s do not match",
                       RT_SHAPE_STR(q), RT_SHAPE_STR(k), RT_SHAPE_STR(v));
    /* bias broadcasts to (B, N, S, T) */
    int64_t bst[4] = {0, 0, 0, 0}, full[4] = {B, N, S, T};
    if (bias) {
        int bn = bias->dl.ndim;
        int64_t s = 1;
        for (int i = 3; i >= 0; i--) {
            int j = i - (4 - bn);
            int64_t e = j >= 0 ? bias->dl.shape[j] : 1;
            if (e != 1 && e != full[i])
                return rt_kerr(c, d, GR_ERR_INVALID, "bias %s does not broadcast to (B, N, S, T) = %s",
                               RT_SHAPE_STR(bias), RT_DIMS_STR(4, full));
            bst[i] = e == 1 ? 0 : s;
            s *= e;
        }
        if (bn > 4) return rt_kerr(c, d, GR_ERR_INVALID, "bias rank > 4");
    }
    double scale = rt_attr_is_none(c->attrs, "scale") ? 1.0 / sqrt((double)(H ? H : 1))
                                                      : ir_attrs_get_float(c->attrs, "scale", 1.0);
    const char *cm = rt_attr_str(c->attrs, "causal_mask", "");
    int causal = strcmp(cm, "TopLeft") == 0 ? 1 : strcmp(cm, "BottomRight") == 0 ? 2 : 0;
    if (cm[0] && !causal) return rt_kerr(c, d, GR_ERR_INVALID, "bad causal_mask \"%s\"", cm);
    int64_t oshape[4] = {B, S, N, Hv};
    rt_tensor *o;
    if ((st = rt_out_new(c, q->dl.dtype, 4, oshape, &o, d))) return st;
    double *sc = malloc(sizeof(double) * (size_t)(T ? T : 1));
    if (!sc) {
        rt_tensor_release(o);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t s = 0; s < S; s++) {
                double mx = -INFINITY;
                int64_t limit = causal == 1 ? s : causal == 2 ? s + T - S : T - 1;
                for (int64_t t = 0; t < T; t++) {
                    if (t > limit) {
                        sc[t] = -INFINITY;
                        continue;
                    }
                    double acc = 0;
                    for (int64_t h = 0; h < H; h++)
                        acc += rt_tensor_get_f64(q, ((b * S + s) * N + n) * H + h) *
                               rt_tensor_get_f64(k, ((b * T + t) * N + n) * H + h);
                    acc *= scale;
                    if (bias) acc += rt_tensor_get_f64(bias, b * bst[0] + n * bst[1] + s * bst[2] + t * bst[3]);
                    sc[t] = acc;
                    if (acc > mx) mx = acc;
                }
                double sum = 0;
                for (int64_t t = 0; t < T; t++) {
                    sc[t] = sc[t] == -INFINITY ? 0 : exp(sc[t] - mx);
                    sum += sc[t];
                }
                for (int64_t h = 0; h < Hv; h++) {
                    double acc = 0;
                    for (int64_t t = 0; t < T; t++)
                        if (sc[t] != 0) acc += sc[t] * rt_tensor_get_f64(v, ((b * T + t) * N + n) * Hv + h);
                    rt_tensor_set_f64(o, ((b * S + s) * N + n) * Hv + h, sum > 0 ? acc / sum : 0);
                }
            }
    free(sc);
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_attention[] = {
    RT_K_OFF("relax.nn.attention", k_attention),
};
RT_FAMILY_COUNT(attention, rt_kernels_attention);
