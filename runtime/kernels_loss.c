/* Losses: nn.nll_loss (weights, reduction none/mean/sum, ignore_index) and
 * nn.cross_entropy_with_logits (TVM: -sum(pred * labels) / batch for 2-D input). */
#include <math.h>
#include <string.h>

#include "runtime/kernels_impl.h"

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
    {"relax.nn.nll_loss", k_nll_loss},
    {"relax.nn.cross_entropy_with_logits", k_cross_entropy},
};
RT_FAMILY_COUNT(loss, rt_kernels_loss);
