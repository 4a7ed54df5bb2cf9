/* Struct info inference of neural-network ops: convolutions, pooling, normalization, softmax,
 * matmul, pad, dropout and resize. Spatial sizes are computed with symbolic arithmetic
 * (floordiv), so `n` in gives `(n - 1) // 2 + 1` out. Convolutions and pools take any
 * reordering of the canonical layout letters (NHWC data, OHWI / HWIO kernels, ...): the dims
 * are read in canonical order and the result written in the out layout. Blocked layouts
 * (NCHW16c) are reported as "unsupported layout". */
#include <string.h>

#include "ir/ops/op_impl.h"

static const ir_prim *pint(ir_ctx_t *ctx, int64_t v) { return ir_prim_int(ctx, v); }

/* Requires a string attr to equal `want`. */
static bool check_layout(const ir_call *call, const char *key, const char *want, gr_diag *diag) {
    const char *got = ir__attr_str(call, key);
    if (got && strcmp(got, want) == 0) return true;
    ir__op_err(call, diag, "unsupported layout %s=\"%s\" (only \"%s\")", key, got ? got : "None",
               want);
    return false;
}

/* p[k] = position in `l` of canon[k]; false unless l reorders canon's letters. */
static bool layout_perm(const char *l, const char *canon, int *p) {
    size_t n = strlen(canon);
    if (!l || strlen(l) != n) return false;
    for (size_t k = 0; k < n; k++) {
        const char *at = strchr(l, canon[k]);
        if (!at) return false;
        p[k] = (int)(at - l);
    }
    return true;
}

/* The layout attr `key` (empty: `dflt`) as a permutation of `canon`, or an error. */
static bool layout_attr(const ir_call *call, const char *key, const char *dflt, const char *canon,
                        int *p, gr_diag *diag) {
    const char *got = ir__attr_str(call, key);
    if (!got || !got[0]) got = dflt;
    if (layout_perm(got, canon, p)) return true;
    ir__op_err(call, diag, "unsupported layout %s=\"%s\" (a reordering of \"%s\")", key, got ? got : "None",
               canon);
    return false;
}

/* Reads an int array attr of exactly n entries, each >= min. */
static bool ints_attr(const ir_call *call, const char *key, int n, int64_t min, int64_t *out,
                      gr_diag *diag) {
    int got = ir__attr_ints(call, key, out, 8);
    if (got != n) {
        ir__op_err(call, diag, "%s must have %d entries, got %d", key, n, got < 0 ? 0 : got);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (out[i] < min) {
            ir__op_err(call, diag, "%s must be >= %lld, got %lld", key, (long long)min,
                       (long long)out[i]);
            return false;
        }
    return true;
}

bool ir__common_dtype(const ir_call *call, const ir_sinfo *a, const ir_sinfo *b, ir_dtype *out,
                      gr_diag *diag) {
    *out = IR_DTYPE_VOID;
    if (ir_dtype_is_void(a->dtype) || ir_dtype_is_void(b->dtype)) return true;
    if (!ir_dtype_eq(a->dtype, b->dtype)) {
        ir__op_err(call, diag, "data types %s and %s must be equal in %s and %s",
                   ir_dtype_name(a->dtype), ir_dtype_name(b->dtype), ir__sinfo_str(a),
                   ir__sinfo_str(b));
        return false;
    }
    *out = a->dtype;
    return true;
}

/* Checks the rank of a tensor arg; returns 1 when its dims are known, 0 when unknown, -1 after
 * reporting a wrong rank. */
static int check_rank(const ir_call *call, const ir_sinfo *s, int32_t want, const char *what,
                      gr_diag *diag) {
    if (s->ndim >= 0 && s->ndim != want) {
        ir__op_err(call, diag, "%s must be %d-D, got %s", what, want, ir__sinfo_str(s));
        return -1;
    }
    return s->ndim == want && (want == 0 || s->dims) ? 1 : 0;
}

static bool both_int_differ(const ir_prim *a, const ir_prim *b) {
    return a->kind == IR_PRIM_INT && b->kind == IR_PRIM_INT && a->value != b->value;
}

/* ---- convolutions ---- */

static const ir_sinfo *conv(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, int nsp,
                            bool transpose) {
    static const char *const dls[4] = {"", "NCW", "NCHW", "NCDHW"}, *const kls[4] = {"", "OIW", "OIHW", "OIDHW"},
                             *const tkls[4] = {"", "IOW", "IOHW", "IODHW"};
    const char *dl = dls[nsp], *kl = transpose ? tkls[nsp] : kls[nsp];
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *w = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    int pd[5], pk[5], po[5];
    const char *data_l = ir__attr_str(call, "data_layout");
    if (!w || !layout_attr(call, "data_layout", dl, dl, pd, diag) ||
        !layout_attr(call, "kernel_layout", kl, kl, pk, diag) ||
        !layout_attr(call, "out_layout", data_l, dl, po, diag))
        return NULL;
    ir_dtype dt = ir__attr_dtype(call, "out_dtype");
    if (ir_dtype_is_void(dt) && !ir__common_dtype(call, x, w, &dt, diag)) return NULL;
    int rank = nsp + 2;
    int kx = check_rank(call, x, rank, "data", diag);
    int kw = kx < 0 ? -1 : check_rank(call, w, rank, "weight", diag);
    if (kw < 0) return NULL;
    int64_t strides[8], pad[8], dil[8], opad[8] = {0, 0};
    int64_t groups = ir__attr_int(call, "groups", 1);
    if (!ints_attr(call, "strides", nsp, 1, strides, diag) ||
        !ints_attr(call, "padding", 2 * nsp, 0, pad, diag) ||
        !ints_attr(call, "dilation", nsp, 1, dil, diag))
        return NULL;
    if (transpose && !ints_attr(call, "output_padding", nsp, 0, opad, diag)) return NULL;
    if (groups < 1) return ir__op_err(call, diag, "groups must be >= 1, got %lld", (long long)groups);
    if (!kx || !kw) return ir_sinfo_tensor(ctx, dt, rank, NULL);

    /* data and weight dims in canonical (NC..., OI... / IO...) order */
    const ir_prim *xd[5], *wd[5];
    for (int k = 0; k < rank; k++) {
        xd[k] = x->dims[pd[k]];
        wd[k] = w->dims[pk[k]];
    }
    const ir_prim *g = pint(ctx, groups), *dims[5];
    const ir_prim *cin = xd[1];
    const ir_prim *wcin = transpose ? wd[0] : ir_prim_mul(ctx, wd[1], g);
    if (both_int_differ(cin, wcin))
        return ir__op_err(call, diag, "input channels of %s do not match weight %s with groups=%lld",
                          ir__sinfo_str(x), ir__sinfo_str(w), (long long)groups);
    const ir_prim *cout = transpose ? ir_prim_mul(ctx, wd[1], g) : wd[0];
    if (!transpose && cout->kind == IR_PRIM_INT && cout->value % groups != 0)
        return ir__op_err(call, diag, "output channels %lld are not divisible by groups=%lld",
                          (long long)cout->value, (long long)groups);
    dims[0] = xd[0];
    dims[1] = cout;
    for (int i = 0; i < nsp; i++) {
        const ir_prim *in = xd[2 + i], *k = wd[2 + i];
        int64_t padsum = pad[i] + pad[i + nsp];
        /* dil * (k - 1) */
        const ir_prim *span = ir_prim_mul(ctx, pint(ctx, dil[i]), ir_prim_sub(ctx, k, pint(ctx, 1)));
        const ir_prim *o;
        if (!transpose) {
            const ir_prim *num =
                ir_prim_sub(ctx, ir_prim_add(ctx, in, pint(ctx, padsum - 1)), span);
            o = ir_prim_add(ctx, ir_prim_floordiv(ctx, num, pint(ctx, strides[i])), pint(ctx, 1));
        } else {
            const ir_prim *base = ir_prim_mul(ctx, ir_prim_sub(ctx, in, pint(ctx, 1)),
                                              pint(ctx, strides[i]));
            o = ir_prim_add(ctx, ir_prim_add(ctx, base, span),
                            pint(ctx, opad[i] + 1 - padsum));
        }
        if (o->kind == IR_PRIM_INT && o->value <= 0)
            return ir__op_err(call, diag, "output size %lld is not positive for %s and %s",
                              (long long)o->value, ir__sinfo_str(x), ir__sinfo_str(w));
        dims[2 + i] = o;
    }
    const ir_prim *od[5];
    for (int k = 0; k < rank; k++) od[po[k]] = dims[k];
    return ir_sinfo_tensor(ctx, dt, rank, od);
}

IR__INFER(ir__infer_conv1d) { return conv(ctx, call, diag, 1, false); }
IR__INFER(ir__infer_conv2d) { return conv(ctx, call, diag, 2, false); }
IR__INFER(ir__infer_conv1d_transpose) { return conv(ctx, call, diag, 1, true); }
IR__INFER(ir__infer_conv2d_transpose) { return conv(ctx, call, diag, 2, true); }
IR__INFER(ir__infer_conv3d) { return conv(ctx, call, diag, 3, false); }
IR__INFER(ir__infer_conv3d_transpose) { return conv(ctx, call, diag, 3, true); }

/* ---- pooling ---- */

static const ir_sinfo *pool(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, int nsp) {
    const char *layout = nsp == 1 ? "NCW" : nsp == 2 ? "NCHW" : "NCDHW";
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    int pl[5], po[5];
    if (!x || !layout_attr(call, "layout", layout, layout, pl, diag) ||
        !layout_attr(call, "out_layout", ir__attr_str(call, "layout"), layout, po, diag))
        return NULL;
    int k = check_rank(call, x, nsp + 2, "data", diag);
    if (k < 0) return NULL;
    int64_t ps[8], st[8], dil[8], pad[8];
    if (!ints_attr(call, "pool_size", nsp, 1, ps, diag) ||
        !ints_attr(call, "strides", nsp, 1, st, diag) ||
        !ints_attr(call, "dilation", nsp, 1, dil, diag) ||
        !ints_attr(call, "padding", 2 * nsp, 0, pad, diag))
        return NULL;
    if (!k) return ir_sinfo_tensor(ctx, x->dtype, nsp + 2, NULL);
    bool ceil_mode = ir__attr_bool(call, "ceil_mode");
    const ir_prim *xd[5];
    for (int q = 0; q < nsp + 2; q++) xd[q] = x->dims[pl[q]];
    const ir_prim *dims[5] = {xd[0], xd[1], NULL, NULL, NULL};
    for (int i = 0; i < nsp; i++) {
        int64_t c = pad[i] + pad[i + nsp] - dil[i] * (ps[i] - 1) - 1 + (ceil_mode ? st[i] - 1 : 0);
        const ir_prim *num = ir_prim_add(ctx, xd[2 + i], pint(ctx, c));
        const ir_prim *o =
            ir_prim_add(ctx, ir_prim_floordiv(ctx, num, pint(ctx, st[i])), pint(ctx, 1));
        /* ceil mode drops a last window that would start past the input and its left padding
         * (ONNX / PyTorch, as the kernels compute it) */
        if (ceil_mode && o->kind == IR_PRIM_INT && xd[2 + i]->kind == IR_PRIM_INT &&
            (o->value - 1) * st[i] >= xd[2 + i]->value + pad[i])
            o = pint(ctx, o->value - 1);
        if (o->kind == IR_PRIM_INT && o->value <= 0)
            return ir__op_err(call, diag, "output size %lld is not positive for %s",
                              (long long)o->value, ir__sinfo_str(x));
        dims[2 + i] = o;
    }
    const ir_prim *od[5];
    for (int q = 0; q < nsp + 2; q++) od[po[q]] = dims[q];
    return ir_sinfo_tensor(ctx, x->dtype, nsp + 2, od);
}

IR__INFER(ir__infer_pool1d) { return pool(ctx, call, diag, 1); }
IR__INFER(ir__infer_pool2d) { return pool(ctx, call, diag, 2); }
IR__INFER(ir__infer_pool3d) { return pool(ctx, call, diag, 3); }

static const ir_sinfo *adaptive_pool(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag, int nsp) {
    const char *layout = nsp == 1 ? "NCW" : nsp == 2 ? "NCHW" : "NCDHW";
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    int pl[5], po[5];
    if (!x || !layout_attr(call, "layout", layout, layout, pl, diag) ||
        !layout_attr(call, "out_layout", ir__attr_str(call, "layout"), layout, po, diag))
        return NULL;
    int k = check_rank(call, x, nsp + 2, "data", diag);
    if (k < 0) return NULL;
    int64_t os[8];
    int n = ir__attr_ints(call, "output_size", os, 8);
    if (n == -2 || n == 0 || n > nsp)
        return ir__op_err(call, diag, "output_size must have 1 to %d entries", nsp);
    if (n == 1) os[1] = os[0];
    if (!k) return ir_sinfo_tensor(ctx, x->dtype, nsp + 2, NULL);
    const ir_prim *dims[5];
    for (int q = 0; q < nsp + 2; q++) dims[q] = x->dims[pl[q]];
    for (int i = 0; n > 0 && i < nsp; i++) {
        if (os[i] < 1) return ir__op_err(call, diag, "output_size must be positive");
        dims[2 + i] = pint(ctx, os[i]);
    }
    const ir_prim *od[5];
    for (int q = 0; q < nsp + 2; q++) od[po[q]] = dims[q];
    return ir_sinfo_tensor(ctx, x->dtype, nsp + 2, od);
}

IR__INFER(ir__infer_adaptive_pool1d) { return adaptive_pool(ctx, call, diag, 1); }
IR__INFER(ir__infer_adaptive_pool2d) { return adaptive_pool(ctx, call, diag, 2); }

/* ---- softmax / normalization ---- */

IR__INFER(ir__infer_softmax) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    if (!ir_dtype_is_void(x->dtype) && !ir_dtype_is_float(x->dtype))
        return ir__op_err(call, diag, "requires a float tensor, got %s", ir__sinfo_str(x));
    int64_t axis = ir__attr_int(call, "axis", -1);
    int32_t a;
    if (x->ndim >= 0 && !ir__norm_axis(axis, x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(x));
    return x;
}

IR__INFER(ir__infer_layer_norm) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *g = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    const ir_sinfo *b = g ? ir__arg_tensor(ctx, call, 2, false, diag) : NULL;
    if (!b) return NULL;
    ir_dtype dt;
    if (!ir__common_dtype(call, x, g, &dt, diag) || !ir__common_dtype(call, x, b, &dt, diag))
        return NULL;
    int64_t axes[IR__MAX_DIMS];
    int n = ir__attr_ints(call, "axes", axes, IR__MAX_DIMS);
    if (n < 0 || n > IR__MAX_DIMS) return ir__op_err(call, diag, "axes must be a list of ints");
    if (x->ndim < 0) return x;
    bool seen[IR__MAX_DIMS] = {0};
    int32_t norm[IR__MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (!ir__norm_axis(axes[i], x->ndim, &norm[i]))
            return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axes[i],
                              ir__sinfo_str(x));
        if (seen[norm[i]]) return ir__op_err(call, diag, "axis %lld repeats", (long long)axes[i]);
        seen[norm[i]] = true;
    }
    const ir_sinfo *gb[2] = {g, b};
    for (int j = 0; j < 2; j++) {
        if (gb[j]->ndim >= 0 && gb[j]->ndim != n)
            return ir__op_err(call, diag, "%s must be %d-D to match axes of %s, got %s",
                              j ? "beta" : "gamma", n, ir__sinfo_str(x), ir__sinfo_str(gb[j]));
        if (gb[j]->ndim == n && gb[j]->dims && x->dims)
            for (int i = 0; i < n; i++)
                if (both_int_differ(gb[j]->dims[i], x->dims[norm[i]]))
                    return ir__op_err(call, diag, "%s %s does not match %s on the normalized axes",
                                      j ? "beta" : "gamma", ir__sinfo_str(gb[j]), ir__sinfo_str(x));
    }
    return x;
}

IR__INFER(ir__infer_batch_norm) {
    const ir_sinfo *s[5];
    for (uint32_t i = 0; i < 5; i++)
        if (!(s[i] = ir__arg_tensor(ctx, call, i, false, diag))) return NULL;
    const ir_sinfo *x = s[0];
    ir_dtype dt;
    for (int i = 1; i < 5; i++)
        if (!ir__common_dtype(call, x, s[i], &dt, diag)) return NULL;
    int64_t axis = ir__attr_int(call, "axis", 1);
    int32_t a = -1;
    if (x->ndim >= 0 && !ir__norm_axis(axis, x->ndim, &a))
        return ir__op_err(call, diag, "axis %lld is out of range for %s", (long long)axis,
                          ir__sinfo_str(x));
    static const char *const names[5] = {"data", "gamma", "beta", "moving_mean", "moving_var"};
    for (int i = 1; i < 5; i++) {
        if (s[i]->ndim >= 0 && s[i]->ndim != 1)
            return ir__op_err(call, diag, "%s must be 1-D, got %s", names[i], ir__sinfo_str(s[i]));
        if (a >= 0 && x->dims && s[i]->ndim == 1 && s[i]->dims &&
            both_int_differ(s[i]->dims[0], x->dims[a]))
            return ir__op_err(call, diag, "%s %s does not match the channels of %s", names[i],
                              ir__sinfo_str(s[i]), ir__sinfo_str(x));
    }
    const ir_sinfo *fields[3] = {x, s[3], s[4]};
    return ir_sinfo_tuple(ctx, 3, fields);
}

IR__INFER(ir__infer_dropout) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    double rate = ir_attrs_get_float(call->attrs, "rate", 0.5);
    if (!(rate >= 0.0 && rate < 1.0))
        return ir__op_err(call, diag, "rate must be in [0, 1), got %g", rate);
    const ir_sinfo *fields[2] = {x, x};
    return ir_sinfo_tuple(ctx, 2, fields);
}

IR__INFER(ir__infer_pad) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x) return NULL;
    int64_t pw[2 * IR__MAX_DIMS];
    int n = ir__attr_ints(call, "pad_width", pw, 2 * IR__MAX_DIMS);
    if (n < 0 || n > 2 * IR__MAX_DIMS)
        return ir__op_err(call, diag, "pad_width must be a list of ints");
    const char *mode = ir__attr_str(call, "pad_mode");
    if (!mode || (strcmp(mode, "constant") && strcmp(mode, "edge") && strcmp(mode, "reflect")))
        return ir__op_err(call, diag, "unsupported pad_mode \"%s\"", mode ? mode : "None");
    if (x->ndim < 0) return x;
    if (n != 2 * x->ndim)
        return ir__op_err(call, diag, "pad_width needs %d entries for %s, got %d", 2 * x->ndim,
                          ir__sinfo_str(x), n);
    if (!x->dims) return x;
    const ir_prim *dims[IR__MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++) {
        dims[i] = ir_prim_add(ctx, x->dims[i], pint(ctx, pw[2 * i] + pw[2 * i + 1]));
        if (dims[i]->kind == IR_PRIM_INT && dims[i]->value < 0)
            return ir__op_err(call, diag, "negative output size for %s", ir__sinfo_str(x));
    }
    return ir_sinfo_tensor(ctx, x->dtype, x->ndim, dims);
}

/* ---- matmul ---- */

IR__INFER(ir__infer_matmul) {
    const ir_sinfo *a = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *b = a ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!b) return NULL;
    ir_dtype dt = ir__attr_dtype(call, "out_dtype");
    if (ir_dtype_is_void(dt) && !ir__common_dtype(call, a, b, &dt, diag)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return ir__op_err(call, diag, "operands must be at least 1-D, got %s and %s",
                          ir__sinfo_str(a), ir__sinfo_str(b));
    if (a->ndim < 0 || b->ndim < 0) return ir_sinfo_tensor(ctx, dt, -1, NULL);
    if (a->ndim > IR__MAX_DIMS || b->ndim > IR__MAX_DIMS)
        return ir__op_err(call, diag, "rank above %d", IR__MAX_DIMS);
    bool a1 = a->ndim == 1, b1 = b->ndim == 1;
    int32_t ba = a1 ? 0 : a->ndim - 2, bb = b1 ? 0 : b->ndim - 2;
    int32_t nb = ba > bb ? ba : bb;
    int32_t ndim = nb + (a1 ? 0 : 1) + (b1 ? 0 : 1);
    if (!a->dims || !b->dims) return ir_sinfo_tensor(ctx, dt, ndim, NULL);
    const ir_prim *ka = a->dims[a->ndim - 1], *kb = b->dims[b1 ? 0 : b->ndim - 2];
    if (both_int_differ(ka, kb))
        return ir__op_err(call, diag, "reduction dims of %s and %s do not match",
                          ir__sinfo_str(a), ir__sinfo_str(b));
    /* Broadcast the batch dims as two tensors of those dims. */
    const ir_prim *dims[IR__MAX_DIMS + 2];
    int32_t bnd = 0;
    int r = 1;
    if (nb > 0) {
        const ir_sinfo *sa = ir_sinfo_tensor(ctx, dt, ba, ba ? a->dims : NULL);
        const ir_sinfo *sb = ir_sinfo_tensor(ctx, dt, bb, bb ? b->dims : NULL);
        r = ir__broadcast(ctx, sa, sb, dims, &bnd);
        if (r < 0)
            return ir__op_err(call, diag, "cannot broadcast the batch dims of %s and %s",
                              ir__sinfo_str(a), ir__sinfo_str(b));
    }
    if (r == 0) return ir_sinfo_tensor(ctx, dt, ndim, NULL);
    int32_t k = nb;
    if (!a1) dims[k++] = a->dims[a->ndim - 2];
    if (!b1) dims[k++] = b->dims[b->ndim - 1];
    return ir_sinfo_tensor(ctx, dt, ndim, dims);
}

/* ---- image ---- */

IR__INFER(ir__infer_resize2d) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    if (!x || !check_layout(call, "layout", "NCHW", diag)) return NULL;
    int k = check_rank(call, x, 4, "data", diag);
    if (k < 0) return NULL;
    int32_t sn;
    bool known;
    const ir_prim *size[IR__MAX_DIMS];
    if (!ir__shape_arg(call, 1, &sn, size, &known, diag)) return NULL;
    if (sn >= 0 && sn != 1 && sn != 2)
        return ir__op_err(call, diag, "size must have 1 or 2 entries, got %d", sn);
    ir_dtype dt = ir__attr_dtype(call, "out_dtype");
    if (ir_dtype_is_void(dt)) dt = x->dtype;
    if (!k || !known) return ir_sinfo_tensor(ctx, dt, 4, NULL);
    const ir_prim *dims[4] = {x->dims[0], x->dims[1], size[0], size[sn == 2 ? 1 : 0]};
    return ir_sinfo_tensor(ctx, dt, 4, dims);
}

/* ---- more normalizations and activations ---- */

/* Checks that a per-channel parameter (gamma, beta, alpha) is 1-D of x's size on axis a. */
static bool check_channel_param(const ir_call *call, const ir_sinfo *x, int32_t a,
                                const ir_sinfo *p, const char *what, gr_diag *diag) {
    if (p->ndim >= 0 && p->ndim != 1) {
        ir__op_err(call, diag, "%s must be 1-D, got %s", what, ir__sinfo_str(p));
        return false;
    }
    if (a >= 0 && x->dims && p->ndim == 1 && p->dims && both_int_differ(p->dims[0], x->dims[a])) {
        ir__op_err(call, diag, "%s %s does not match the channels of %s", what, ir__sinfo_str(p),
                   ir__sinfo_str(x));
        return false;
    }
    return true;
}

/* Validates a list-of-axes attr against x's rank (duplicates are errors). */
static bool check_axes_attr(const ir_call *call, const char *key, const ir_sinfo *x, int32_t *norm,
                            int *n, gr_diag *diag) {
    int64_t axes[IR__MAX_DIMS];
    *n = ir__attr_ints(call, key, axes, IR__MAX_DIMS);
    if (*n == -2 || *n > IR__MAX_DIMS) {
        ir__op_err(call, diag, "%s must be a list of ints", key);
        return false;
    }
    if (x->ndim < 0 || *n < 0) return true;
    bool seen[IR__MAX_DIMS] = {0};
    for (int i = 0; i < *n; i++) {
        if (!ir__norm_axis(axes[i], x->ndim, &norm[i]) || seen[norm[i]]) {
            ir__op_err(call, diag, "axis %lld is out of range or repeated for %s",
                       (long long)axes[i], ir__sinfo_str(x));
            return false;
        }
        seen[norm[i]] = true;
    }
    return true;
}

static const ir_sinfo *channel_norm(ir_ctx_t *ctx, const ir_call *call, gr_diag *diag,
                                    bool grouped) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *g = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    const ir_sinfo *b = g ? ir__arg_tensor(ctx, call, 2, false, diag) : NULL;
    if (!b) return NULL;
    ir_dtype dt;
    if (!ir__common_dtype(call, x, g, &dt, diag) || !ir__common_dtype(call, x, b, &dt, diag))
        return NULL;
    int64_t cax = ir__attr_int(call, "channel_axis", 1);
    int32_t c = -1, norm[IR__MAX_DIMS];
    int n;
    if (x->ndim >= 0 && !ir__norm_axis(cax, x->ndim, &c))
        return ir__op_err(call, diag, "channel_axis %lld is out of range for %s", (long long)cax,
                          ir__sinfo_str(x));
    if (!check_axes_attr(call, "axes", x, norm, &n, diag)) return NULL;
    for (int i = 0; i < n && c >= 0; i++)
        if (norm[i] == c) return ir__op_err(call, diag, "axes must not contain the channel axis");
    if (grouped) {
        int64_t groups = ir__attr_int(call, "num_groups", 1);
        if (groups < 1) return ir__op_err(call, diag, "num_groups must be >= 1");
        int64_t cv;
        if (c >= 0 && x->dims && ir_prim_is_int(x->dims[c], &cv) && cv % groups != 0)
            return ir__op_err(call, diag, "%lld channels are not divisible by num_groups=%lld",
                              (long long)cv, (long long)groups);
    }
    if (!check_channel_param(call, x, c, g, "gamma", diag) ||
        !check_channel_param(call, x, c, b, "beta", diag))
        return NULL;
    return x;
}

IR__INFER(ir__infer_group_norm) { return channel_norm(ctx, call, diag, true); }
IR__INFER(ir__infer_instance_norm) { return channel_norm(ctx, call, diag, false); }

IR__INFER(ir__infer_rms_norm) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *w = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!w) return NULL;
    ir_dtype dt;
    if (!ir__common_dtype(call, x, w, &dt, diag)) return NULL;
    int32_t norm[IR__MAX_DIMS];
    int n;
    if (!check_axes_attr(call, "axes", x, norm, &n, diag)) return NULL;
    if (x->ndim < 0 || n < 0) return x;
    if (w->ndim >= 0 && w->ndim != n)
        return ir__op_err(call, diag, "weight must be %d-D to match axes of %s, got %s", n,
                          ir__sinfo_str(x), ir__sinfo_str(w));
    if (w->ndim == n && w->dims && x->dims)
        for (int i = 0; i < n; i++)
            if (both_int_differ(w->dims[i], x->dims[norm[i]]))
                return ir__op_err(call, diag, "weight %s does not match %s on the normalized axes",
                                  ir__sinfo_str(w), ir__sinfo_str(x));
    return x;
}
