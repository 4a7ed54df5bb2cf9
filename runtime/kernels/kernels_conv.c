/* Convolutions: conv1d, conv2d, conv1d_transpose, conv2d_transpose (NCHW / OIHW / IOHW).
 * conv2d runs as im2col + blocked GEMM over column chunks (bounded scratch), 1x1 stride-1
 * convs as one GEMM on the input, depthwise convs with a direct loop. Transposed convs run as
 * GEMM + col2im. conv1d is conv2d with H = 1. */
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

#define COL_BUDGET_FLOATS (1 << 20)  /* 4 MB of im2col scratch per chunk */

typedef struct conv_geom {
    int64_t N, C, H, W;          /* input */
    int64_t O, KH, KW;           /* output channels, kernel */
    int64_t OH, OW;              /* output */
    int64_t sh, sw, dh, dw;
    int64_t pt, pl, pb, pr;
    int64_t oph, opw;            /* output_padding (transposed) */
    int64_t groups;
} conv_geom;

/* Reads strides/padding/dilation/groups (and output_padding) for `sp` spatial dims (1 or 2).
 * Padding takes TVM's forms: one value, one per dim, or begin..., end.... */
static gr_status conv_attrs(const rt_kernel_call *c, int sp, conv_geom *g, bool transposed,
                            gr_diag *d) {
    int64_t v[8];
    int n;
    g->sh = g->sw = g->dh = g->dw = 1;
    g->pt = g->pl = g->pb = g->pr = g->oph = g->opw = 0;
    if ((n = rt_attr_ints(c->attrs, "strides", v, 8)) > 0) {
        if (n != 1 && n != sp) return rt_kerr(c, d, GR_ERR_INVALID, "strides needs %d values", sp);
        g->sw = v[n - 1];
        g->sh = sp == 2 ? v[0] : 1;
    }
    if ((n = rt_attr_ints(c->attrs, "dilation", v, 8)) > 0) {
        if (n != 1 && n != sp) return rt_kerr(c, d, GR_ERR_INVALID, "dilation needs %d values", sp);
        g->dw = v[n - 1];
        g->dh = sp == 2 ? v[0] : 1;
    }
    if ((n = rt_attr_ints(c->attrs, "padding", v, 8)) > 0) {
        if (sp == 2) {
            if (n == 1) g->pt = g->pl = g->pb = g->pr = v[0];
            else if (n == 2) { g->pt = g->pb = v[0]; g->pl = g->pr = v[1]; }
            else if (n == 4) { g->pt = v[0]; g->pl = v[1]; g->pb = v[2]; g->pr = v[3]; }
            else return rt_kerr(c, d, GR_ERR_INVALID, "padding needs 1, 2 or 4 values, got %d", n);
        } else {
            if (n == 1) g->pl = g->pr = v[0];
            else if (n == 2) { g->pl = v[0]; g->pr = v[1]; }
            else return rt_kerr(c, d, GR_ERR_INVALID, "padding needs 1 or 2 values, got %d", n);
        }
    }
    if (transposed && (n = rt_attr_ints(c->attrs, "output_padding", v, 8)) > 0) {
        if (n != 1 && n != sp)
            return rt_kerr(c, d, GR_ERR_INVALID, "output_padding needs %d values", sp);
        g->opw = v[n - 1];
        g->oph = sp == 2 ? v[0] : 0;
    }
    g->groups = ir_attrs_get_int(c->attrs, "groups", 1);
    if (g->sh <= 0 || g->sw <= 0 || g->dh <= 0 || g->dw <= 0 || g->groups <= 0 || g->pt < 0 ||
        g->pl < 0 || g->pb < 0 || g->pr < 0 || g->oph < 0 || g->opw < 0)
        return rt_kerr(c, d, GR_ERR_INVALID,
                       "strides, dilation and groups must be positive, padding non-negative");
    return GR_OK;
}

/* Depthwise: groups == C, one input channel per group. */
static void conv_depthwise(const conv_geom *g, const float *x, const float *w, float *y) {
    int64_t mult = g->O / g->C;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++) {
            const float *xc = x + (n * g->C + oc / mult) * g->H * g->W;
            const float *wc = w + oc * g->KH * g->KW;
            float *yc = y + (n * g->O + oc) * g->OH * g->OW;
            for (int64_t oh = 0; oh < g->OH; oh++) {
                float *yr = yc + oh * g->OW;
                for (int64_t kh = 0; kh < g->KH; kh++) {
                    int64_t ih = oh * g->sh - g->pt + kh * g->dh;
                    if (ih < 0 || ih >= g->H) continue;
                    const float *xr = xc + ih * g->W;
                    for (int64_t kw = 0; kw < g->KW; kw++) {
                        float wv = wc[kh * g->KW + kw];
                        int64_t off = kw * g->dw - g->pl;  /* iw = ow*sw + off */
                        int64_t lo = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
                        int64_t hi = g->W - 1 - off < 0 ? 0 : (g->W - 1 - off) / g->sw + 1;
                        if (hi > g->OW) hi = g->OW;
                        if (g->sw == 1)
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow + off];
                        else
                            for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * g->sw + off];
                    }
                }
            }
        }
}

/* im2col of columns [p0, p0 + nc) of one group's input (Cg channels) into col[K x nc]; runs of
 * one output row are filled at once (zeros outside the input, a copy or strided gather inside). */
static void im2col(const conv_geom *g, const float *xg, int64_t Cg, int64_t p0, int64_t nc,
                   float *col) {
    for (int64_t ci = 0; ci < Cg; ci++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                float *dst = col + ((ci * g->KH + kh) * g->KW + kw) * nc;
                const float *xc = xg + ci * g->H * g->W;
                int64_t off = kw * g->dw - g->pl; /* iw = ow * sw + off */
                int64_t lo = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
                int64_t hi = g->W - 1 - off < 0 ? 0 : (g->W - 1 - off) / g->sw + 1;
                if (hi > g->OW) hi = g->OW;
                if (lo > hi) lo = hi;
                int64_t j = 0, p = p0;
                while (j < nc) {
                    int64_t oh = p / g->OW, ow = p % g->OW;
                    int64_t run = g->OW - ow < nc - j ? g->OW - ow : nc - j;
                    int64_t ih = oh * g->sh - g->pt + kh * g->dh;
                    float *d = dst + j;
                    if (ih < 0 || ih >= g->H) {
                        memset(d, 0, sizeof(float) * (size_t)run);
                    } else {
                        const float *xr = xc + ih * g->W + off;
                        int64_t a = lo > ow ? lo : ow, b = hi < ow + run ? hi : ow + run;
                        if (a > b) a = b;
                        for (int64_t q = ow; q < a; q++) d[q - ow] = 0.0f;
                        if (g->sw == 1) memcpy(d + (a - ow), xr + a, sizeof(float) * (size_t)(b - a));
                        else for (int64_t q = a; q < b; q++) d[q - ow] = xr[q * g->sw];
                        for (int64_t q = b; q < ow + run; q++) d[q - ow] = 0.0f;
                    }
                    j += run;
                    p += run;
                }
            }
}

static int64_t chunk_cols(int64_t K, int64_t P) {
    int64_t nc = COL_BUDGET_FLOATS / (K > 0 ? K : 1);
    nc = nc / 16 * 16;
    if (nc < 64) nc = 64;
    return nc < P ? nc : P;
}

static bool conv2d_f32(const conv_geom *g, const float *x, const float *w, float *y) {
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, P = g->OH * g->OW;
    int64_t K = Cg * g->KH * g->KW;
    if (g->groups == g->C && Cg == 1 && g->O % g->C == 0 && g->groups > 1) {
        conv_depthwise(g, x, w, y);
        return true;
    }
    bool direct = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                  g->pl == 0 && g->pb == 0 && g->pr == 0;
    int64_t nc = chunk_cols(K, P);
    float *col = direct ? NULL : rt_scratch_get(sizeof(float) * (size_t)(K * nc));
    if (!direct && !col) return false;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gi = 0; gi < g->groups; gi++) {
            const float *xg = x + (n * g->C + gi * Cg) * g->H * g->W;
            const float *wg = w + gi * Og * K;
            float *yg = y + (n * g->O + gi * Og) * P;
            if (direct) {
                rt_sgemm(Og, P, K, wg, K, 1, xg, P, 1, yg, P, false);
                continue;
            }
            for (int64_t p0 = 0; p0 < P; p0 += nc) {
                int64_t m = P - p0 < nc ? P - p0 : nc;
                im2col(g, xg, Cg, p0, m, col);
                rt_sgemm(Og, m, K, wg, K, 1, col, m, 1, yg + p0, P, false);
            }
        }
    rt_scratch_put(col);
    return true;
}

/* Transposed: per group col[Og*KH*KW x HW] = W_g^T x X_g, then scatter-add into y. */
static bool conv2d_transpose_f32(const conv_geom *g, const float *x, const float *w, float *y) {
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, HW = g->H * g->W;
    int64_t K = Og * g->KH * g->KW;
    int64_t nc = chunk_cols(K, HW);
    float *col = rt_scratch_get(sizeof(float) * (size_t)(K * nc));
    if (!col) return false;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gi = 0; gi < g->groups; gi++) {
            const float *xg = x + (n * g->C + gi * Cg) * HW;
            const float *wg = w + gi * Cg * K;
            float *yg = y + (n * g->O + gi * Og) * g->OH * g->OW;
            for (int64_t p0 = 0; p0 < HW; p0 += nc) {
                int64_t m = HW - p0 < nc ? HW - p0 : nc;
                rt_sgemm(K, m, Cg, wg, 1, K, xg + p0, HW, 1, col, m, false);
                for (int64_t oc = 0; oc < Og; oc++)
                    for (int64_t kh = 0; kh < g->KH; kh++)
                        for (int64_t kw = 0; kw < g->KW; kw++) {
                            const float *src = col + ((oc * g->KH + kh) * g->KW + kw) * m;
                            float *yc = yg + oc * g->OH * g->OW;
                            int64_t ih = (p0) / g->W, iw = p0 % g->W;
                            for (int64_t j = 0; j < m; j++) {
                                int64_t oh = ih * g->sh - g->pt + kh * g->dh;
                                int64_t ow = iw * g->sw - g->pl + kw * g->dw;
                                if (oh >= 0 && oh < g->OH && ow >= 0 && ow < g->OW)
                                    yc[oh * g->OW + ow] += src[j];
                                if (++iw == g->W) { iw = 0; ih++; }
                            }
                        }
            }
        }
    rt_scratch_put(col);
    return true;
}

/* Integer convolution (ONNX ConvInteger): exact, int64 accumulation, direct loops; the
 * result converted to out_dtype (the data's dtype when void). */
static gr_status conv_int(const rt_kernel_call *c, const conv_geom *g, const rt_tensor *x,
                          const rt_tensor *w, int rank, const int64_t *oshape, rt_value *out, gr_diag *d) {
    const DLDataType i64 = {kDLInt, 64, 1};
    rt_tensor *cx = rt_tensor_cast(x, i64), *cw = rt_tensor_cast(w, i64), *o = NULL;
    gr_status st = GR_OK;
    if (!cx || !cw) {
        st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = rt_out_new_raw(c, i64, rank, oshape, &o, d))) goto done;
    const int64_t *X = cx->dl.data, *Wt = cw->dl.data;
    int64_t *Y = o->dl.data, cg = g->C / g->groups, og = g->O / g->groups;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    int64_t acc = 0;
                    for (int64_t ci = 0; ci < cg; ci++) {
                        int64_t ic = oc / og * cg + ci;
                        for (int64_t kh = 0; kh < g->KH; kh++) {
                            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
                            if (ih < 0 || ih >= g->H) continue;
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                                if (iw < 0 || iw >= g->W) continue;
                                acc += X[((n * g->C + ic) * g->H + ih) * g->W + iw] *
                                       Wt[((oc * cg + ci) * g->KH + kh) * g->KW + kw];
                            }
                        }
                    }
                    Y[((n * g->O + oc) * g->OH + oh) * g->OW + ow] = acc;
                }
    ir_dtype odt = rt_attr_dtype(c->attrs, "out_dtype", x->dl.dtype);
    st = rt_kout_as(c, o, odt, out, d);
    o = NULL;
done:
    rt_tensor_release(cx);
    rt_tensor_release(cw);
    rt_tensor_release(o);
    return st;
}

/* The conv on canonical layouts (NC[H]W data, O/I-major weights). */
static gr_status conv_canon(const rt_kernel_call *c, const rt_tensor *x, const rt_tensor *w,
                            rt_value *out, gr_diag *d, int sp, bool transposed) {
    gr_status st;
    int rank = sp + 2;
    if (x->dl.ndim != rank || w->dl.ndim != rank)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects rank-%d data and weight, got %s and %s",
                       rank, RT_SHAPE_STR(x), RT_SHAPE_STR(w));
    bool fx = rt_is_floatish(x->dl.dtype), fw = rt_is_floatish(w->dl.dtype);
    if (fx != fw || (!fx && transposed))
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "float inputs, or integer inputs of a convolution, got %s and %s",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(w));
    conv_geom g;
    if ((st = conv_attrs(c, sp, &g, transposed, d))) return st;
    g.N = x->dl.shape[0];
    g.C = x->dl.shape[1];
    g.H = sp == 2 ? x->dl.shape[2] : 1;
    g.W = x->dl.shape[rank - 1];
    g.KH = sp == 2 ? w->dl.shape[2] : 1;
    g.KW = w->dl.shape[rank - 1];
    int64_t wc = transposed ? w->dl.shape[0] : w->dl.shape[1];
    g.O = transposed ? w->dl.shape[1] * g.groups : w->dl.shape[0];
    bool ok = g.C % g.groups == 0 && g.O % g.groups == 0 && g.KH > 0 && g.KW > 0;
    ok = ok && (transposed ? wc == g.C : wc * g.groups == g.C);
    if (!ok)
        return rt_kerr(c, d, GR_ERR_INVALID, "data %s and weight %s do not match (groups=%lld)",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(w), (long long)g.groups);
    if (transposed) {
        g.OH = (g.H - 1) * g.sh - g.pt - g.pb + g.dh * (g.KH - 1) + g.oph + 1;
        g.OW = (g.W - 1) * g.sw - g.pl - g.pr + g.dw * (g.KW - 1) + g.opw + 1;
    } else {
        g.OH = (g.H + g.pt + g.pb - g.dh * (g.KH - 1) - 1) / g.sh + 1;
        g.OW = (g.W + g.pl + g.pr - g.dw * (g.KW - 1) - 1) / g.sw + 1;
        if (g.H + g.pt + g.pb - g.dh * (g.KH - 1) - 1 < 0 ||
            g.W + g.pl + g.pr - g.dw * (g.KW - 1) - 1 < 0)
            g.OH = 0;
    }
    if (g.OH <= 0 || g.OW <= 0)
        return rt_kerr(c, d, GR_ERR_INVALID, "kernel %s is larger than the padded input %s",
                       RT_SHAPE_STR(w), RT_SHAPE_STR(x));
    const DLDataType f32 = {kDLFloat, 32, 1};
    int64_t oshape[4] = {g.N, g.O, g.OH, g.OW};
    if (sp == 1) oshape[2] = g.OW;
    if (!fx) return conv_int(c, &g, x, w, rank, oshape, out, d);
    rt_tensor *cx = rt_tensor_cast(x, f32), *cw = rt_tensor_cast(w, f32), *o = NULL;
    if (!cx || !cw) {
        st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* the direct depthwise loop and col2im accumulate into the output; GEMM overwrites it */
    bool accumulates = transposed || (g.groups == g.C && g.groups > 1 && g.O % g.C == 0);
    if ((st = (accumulates ? rt_out_new : rt_out_new_raw)(c, f32, rank, oshape, &o, d))) goto done;
    if (!(transposed ? conv2d_transpose_f32 : conv2d_f32)(&g, cx->dl.data, cw->dl.data, o->dl.data)) {
        st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory for scratch");
        goto done;
    }
    ir_dtype odt = rt_attr_dtype(c->attrs, "out_dtype", x->dl.dtype);
    st = rt_kout_as(c, o, odt, out, d);
    o = NULL;
done:
    rt_tensor_release(cx);
    rt_tensor_release(cw);
    rt_tensor_release(o);
    return st;
}

/* Layouts that reorder the canonical letters (NHWC, HWIO, OHWI, ...) run through transposed
 * copies; blocked layouts (NCHW16c) are unsupported. */
static gr_status run_conv(const rt_kernel_call *c, rt_value *out, gr_diag *d, int sp,
                          bool transposed) {
    const rt_tensor *x, *w;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) ||
        (st = rt_arg_tensor(c, 1, &w, d)))
        return st;
    const char *cd = sp == 2 ? "NCHW" : "NCW";
    const char *ck = transposed ? (sp == 2 ? "IOHW" : "IOW") : (sp == 2 ? "OIHW" : "OIW");
    const char *dl = rt_attr_str(c->attrs, "data_layout", cd);
    const char *kl = rt_attr_str(c->attrs, "kernel_layout", ck);
    const char *ol = rt_attr_str(c->attrs, "out_layout", "");
    if (!ol[0]) ol = dl;
    int pd[4], pk[4], po[4];
    if (!rt_layout_perm(dl, cd, pd) || !rt_layout_perm(kl, ck, pk) || !rt_layout_perm(cd, ol, po))
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED,
                       "layouts data=%s kernel=%s out=%s (the reference kernel supports "
                       "reorderings of %s/%s)", dl, kl, ol, cd, ck);
    if (x->dl.ndim != sp + 2 || w->dl.ndim != sp + 2)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects rank-%d data and weight, got %s and %s",
                       sp + 2, RT_SHAPE_STR(x), RT_SHAPE_STR(w));
    bool id_d = strcmp(dl, cd) == 0, id_k = strcmp(kl, ck) == 0, id_o = strcmp(ol, cd) == 0;
    rt_tensor *xc = id_d ? rt_tensor_retain((rt_tensor *)x) : rt_tensor_permute(x, pd);
    rt_tensor *wc = id_k ? rt_tensor_retain((rt_tensor *)w) : rt_tensor_permute(w, pk);
    if (!xc || !wc) {
        rt_tensor_release(xc);
        rt_tensor_release(wc);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    st = conv_canon(c, xc, wc, out, d, sp, transposed);
    rt_tensor_release(xc);
    rt_tensor_release(wc);
    if (st || id_o) return st;
    rt_tensor *y = rt_tensor_permute(out->u.t, po);
    rt_value_clear(out);
    if (!y) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    *out = rt_value_tensor(y);
    return GR_OK;
}

static gr_status k_conv1d(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv(c, o, d, 1, false); }
static gr_status k_conv2d(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv(c, o, d, 2, false); }
static gr_status k_conv1d_t(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv(c, o, d, 1, true); }
static gr_status k_conv2d_t(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_conv(c, o, d, 2, true); }

const rt_kernel_entry rt_kernels_conv[] = {
    RT_K(CONV1D, k_conv1d),
    RT_K(CONV2D, k_conv2d),
    RT_K(CONV1D_TRANSPOSE, k_conv1d_t),
    RT_K(CONV2D_TRANSPOSE, k_conv2d_t),
};
RT_FAMILY_COUNT(conv, rt_kernels_conv);
