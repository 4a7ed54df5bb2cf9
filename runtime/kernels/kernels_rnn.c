/* Recurrent layers (nn.lstm, nn.gru, nn.rnn: ONNX LSTM / GRU / RNN)
 * and reverse_sequence. float32. Activations are ONNX's list (Sigmoid, Tanh, Relu, Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus) with their alpha / beta.
 *
 * Per direction, the input projection X W^T (+ biases) of every time step is one GEMM; each step
 * then adds H_{t-1} R^T and applies the gates. sequence_lens (per batch entry) stops a sequence
 * early: Y is 0 past its end, Y_h / Y_c hold the state after its last step, and the reverse
 * direction starts at its last step. Gate order is ONNX's: lstm i, o, f, c; gru z, r, h. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "runtime/kernels/kernels_impl.h"

enum { K_LSTM, K_GRU, K_RNN };

typedef struct rnn_dims {
    int64_t T, N, I, H, D, G;
} rnn_dims;

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* An activation of ONNX's list for recurrent layers, with its alpha / beta. */
enum { A_SIGMOID, A_TANH, A_RELU, A_AFFINE, A_LEAKY, A_THRESH, A_SCALED_TANH, A_HARD_SIGMOID, A_ELU, A_SOFTSIGN, A_SOFTPLUS };
typedef struct rnn_act {
    int kind;
    float alpha, beta;
} rnn_act;

static const struct {
    const char *name;
    int kind;
    float alpha, beta; /* ONNX's defaults */
} ACTS[] = {
    {"Sigmoid", A_SIGMOID, 0, 0},      {"Tanh", A_TANH, 0, 0},
    {"Relu", A_RELU, 0, 0},            {"Affine", A_AFFINE, 1.0f, 0.0f},
    {"LeakyRelu", A_LEAKY, 0.01f, 0},  {"ThresholdedRelu", A_THRESH, 1.0f, 0},
    {"ScaledTanh", A_SCALED_TANH, 1.0f, 1.0f}, {"HardSigmoid", A_HARD_SIGMOID, 0.2f, 0.5f},
    {"Elu", A_ELU, 1.0f, 0},           {"Softsign", A_SOFTSIGN, 0, 0},
    {"Softplus", A_SOFTPLUS, 0, 0},
};

static float act(const rnn_act *a, float x) {
    switch (a->kind) {
    case A_SIGMOID: return sigm(x);
    case A_TANH: return tanhf(x);
    case A_RELU: return x > 0 ? x : 0;
    case A_AFFINE: return a->alpha * x + a->beta;
    case A_LEAKY: return x >= 0 ? x : a->alpha * x;
    case A_THRESH: return x > a->alpha ? x : 0;
    case A_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
    case A_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, a->alpha * x + a->beta));
    case A_ELU: return x >= 0 ? x : a->alpha * (expf(x) - 1);
    case A_SOFTSIGN: return x / (1 + fabsf(x));
    default: return x > 20 ? x : log1pf(expf(x));
    }
}

static float clipf(float x, float c) { return c > 0 ? (x < -c ? -c : x > c ? c : x) : x; }

/* Optional argument i: NULL when left out or empty. */
static gr_status opt_arg(const rt_kernel_call *c, uint32_t i, const rt_tensor **t, gr_diag *d) {
    *t = NULL;
    if (i >= c->nargs) return GR_OK;
    const rt_tensor *x;
    gr_status st = rt_arg_tensor(c, i, &x, d);
    if (st) return st;
    if (rt_tensor_numel(x) > 0) *t = x;
    return GR_OK;
}

static gr_status want_f32(const rt_kernel_call *c, const rt_tensor *t, const char *what, int ndim,
                          const int64_t *shape, gr_diag *d) {
    if (!t) return GR_OK;
    bool ok = rt_is_f32(t->dl.dtype) && t->dl.ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->dl.shape[i] == shape[i];
    if (!ok)
        return rt_kerr(c, d, GR_ERR_INVALID, "%s is %s, expected %s float32", what, RT_SHAPE_STR(t),
                       RT_DIMS_STR(ndim, shape));
    return GR_OK;
}

/* One direction over the whole sequence. xp: (T, N, G*H) input projections with every bias
 * that adds before the gates already in; rw: R of this direction (G*H, H); rb: R's bias (G*H)
 * (GRU: used for the h gate only); p: LSTM peepholes (3H) or NULL; h, cst: state (N, H), in
 * and out; y: this direction's Y slice, element (t, n, k) at y[t * ys_t + n * ys_n + k]. */
typedef struct rnn_dir {
    int kind;
    const rnn_act *f, *g, *ho;    /* this direction's activations (gates, candidate, output) */
    bool reverse, lbr, input_forget;
    float clip;
    const float *xp, *rw, *rb, *p;
    float *h, *cst, *y;
    int64_t ys_t, ys_n;
    const int64_t *lens;
    float *hr, *tmp;              /* scratch (N, G*H), (N, H) */
} rnn_dir;

static void run_dir(const rnn_dims *dm, const rnn_dir *r) {
    int64_t N = dm->N, H = dm->H, G = dm->G, GH = G * H;
    for (int64_t s = 0; s < dm->T; s++) {
        /* hr = H_{t-1} R^T; for a plain GRU only the z and r columns (h needs r first) */
        int64_t cols = r->kind == K_GRU && !r->lbr ? 2 * H : GH;
        rt_sgemm(N, cols, H, r->h, H, 1, r->rw, 1, H, r->hr, GH, false);
        if (r->kind == K_GRU && !r->lbr) {
            for (int64_t n = 0; n < N; n++) {
                int64_t t = r->reverse ? r->lens[n] - 1 - s : s;
                if (s >= r->lens[n]) continue;
                const float *x = r->xp + (t * N + n) * GH;
                float *hr = r->hr + n * GH;
                for (int64_t k = 0; k < H; k++) {
                    float rg = act(r->f, clipf(x[H + k] + hr[H + k], r->clip));
                    r->tmp[n * H + k] = rg * r->h[n * H + k];
                }
            }
            rt_sgemm(N, H, H, r->tmp, H, 1, r->rw + 2 * H * H, 1, H, r->hr + 2 * H, GH, false);
        }
        for (int64_t n = 0; n < N; n++) {
            if (s >= r->lens[n]) continue;
            int64_t t = r->reverse ? r->lens[n] - 1 - s : s;
            const float *x = r->xp + (t * N + n) * GH;
            const float *hr = r->hr + n * GH;
            float *h = r->h + n * H, *y = r->y + t * r->ys_t + n * r->ys_n;
            if (r->kind == K_LSTM) {
                float *cs = r->cst + n * H;
                const float *p = r->p;
                for (int64_t k = 0; k < H; k++) {
                    float c0 = cs[k];
                    float ig = act(r->f, clipf(x[k] + hr[k] + (p ? p[k] * c0 : 0), r->clip));
                    float fg = r->input_forget ? 1.0f - ig
                                               : act(r->f, clipf(x[2 * H + k] + hr[2 * H + k] + (p ? p[2 * H + k] * c0 : 0), r->clip));
                    float cg = act(r->g, clipf(x[3 * H + k] + hr[3 * H + k], r->clip));
                    float c1 = fg * c0 + ig * cg;
                    float og = act(r->f, clipf(x[H + k] + hr[H + k] + (p ? p[H + k] * c1 : 0), r->clip));
                    cs[k] = c1;
                    h[k] = og * act(r->ho, c1);
                }
            } else if (r->kind == K_GRU) {
                for (int64_t k = 0; k < H; k++) {
                    float z = act(r->f, clipf(x[k] + hr[k], r->clip));
                    float hh;
                    if (r->lbr) {
                        float rg = act(r->f, clipf(x[H + k] + hr[H + k], r->clip));
                        hh = act(r->g, clipf(x[2 * H + k] + rg * (hr[2 * H + k] + r->rb[2 * H + k]), r->clip));
                    } else {
                        hh = act(r->g, clipf(x[2 * H + k] + hr[2 * H + k], r->clip));
                    }
                    h[k] = (1.0f - z) * hh + z * h[k];
                }
            } else {
                for (int64_t k = 0; k < H; k++) h[k] = act(r->f, clipf(x[k] + hr[k], r->clip));
            }
            memcpy(y, h, sizeof(float) * (size_t)H);
        }
    }
}

static gr_status run_rnn(const rt_kernel_call *c, rt_value *out, gr_diag *d, int kind) {
    gr_status st;
    uint32_t maxargs = kind == K_LSTM ? 8 : 6;
    if ((st = rt_check_nargs(c, 3, maxargs, d))) return st;
    const rt_tensor *X, *W, *R, *B, *L, *H0, *C0 = NULL, *P = NULL;
    if ((st = rt_arg_tensor(c, 0, &X, d)) || (st = rt_arg_tensor(c, 1, &W, d)) ||
        (st = rt_arg_tensor(c, 2, &R, d)) || (st = opt_arg(c, 3, &B, d)) ||
        (st = opt_arg(c, 4, &L, d)) || (st = opt_arg(c, 5, &H0, d)))
        return st;
    if (kind == K_LSTM && ((st = opt_arg(c, 6, &C0, d)) || (st = opt_arg(c, 7, &P, d)))) return st;
    const char *dir = rt_attr_str(c->attrs, "direction", "forward");
    int64_t layout = 0, Hs = 0;
    rt_attr_ints(c->attrs, "layout", &layout, 1);
    rt_attr_ints(c->attrs, "hidden_size", &Hs, 1);
    const ir_attr *ca = ir_attrs_get(c->attrs, "clip");
    float clip = ca && ca->kind == IR_ATTR_FLOAT ? (float)ca->u.f : 0.0f;
    const ir_attr *lb = ir_attrs_get(c->attrs, "linear_before_reset");
    const ir_attr *inf = ir_attrs_get(c->attrs, "input_forget");
    bool lbr = lb && lb->kind == IR_ATTR_BOOL && lb->u.b;
    bool input_forget = inf && inf->kind == IR_ATTR_BOOL && inf->u.b;
    /* activations: (f, g, h) per direction for lstm, (f, g) gru, (f) rnn; ONNX's defaults */
    int nact = kind == K_LSTM ? 3 : kind == K_GRU ? 2 : 1;
    rnn_act acts[6];
    for (int i = 0; i < 6; i++) acts[i] = (rnn_act){i % nact == 0 && kind != K_RNN ? A_SIGMOID : A_TANH, 0, 0};
    const char *names = rt_attr_str(c->attrs, "activations", NULL);
    if (names && *names) {
        const ir_attr *al = ir_attrs_get(c->attrs, "activation_alpha"), *be = ir_attrs_get(c->attrs, "activation_beta");
        uint32_t n = 0;
        for (const char *p = names; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p), k = 0;
            if (n == 6) return rt_kerr(c, d, GR_ERR_INVALID, "more than 6 activations in \"%s\"", names);
            while (k < sizeof ACTS / sizeof ACTS[0] && !(strlen(ACTS[k].name) == len && !strncasecmp(p, ACTS[k].name, len))) k++;
            if (k == sizeof ACTS / sizeof ACTS[0])
                return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "activation %u of \"%s\" is not one of ONNX's", n, names);
            uint32_t i = n++;
            acts[i] = (rnn_act){ACTS[k].kind, ACTS[k].alpha, ACTS[k].beta};
            if (al && al->kind == IR_ATTR_ARRAY && i < al->u.arr.n && al->u.arr.items[i].kind == IR_ATTR_FLOAT)
                acts[i].alpha = (float)al->u.arr.items[i].u.f;
            if (be && be->kind == IR_ATTR_ARRAY && i < be->u.arr.n && be->u.arr.items[i].kind == IR_ATTR_FLOAT)
                acts[i].beta = (float)be->u.arr.items[i].u.f;
            p = e ? e + 1 : p + len;
        }
        if (n == (uint32_t)nact) /* one set for both directions */
            for (int i = 0; i < nact; i++) acts[nact + i] = acts[i];
        else if (n != (uint32_t)(2 * nact))
            return rt_kerr(c, d, GR_ERR_INVALID, "%u activations for %d per direction", n, nact);
    }
    rnn_dims dm;
    dm.G = kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1;
    dm.D = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool rev1 = !strcmp(dir, "reverse");
    if (!rt_is_f32(X->dl.dtype) || X->dl.ndim != 3)
        return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "X must be 3-D float32, got %s", RT_SHAPE_STR(X));
    dm.T = X->dl.shape[layout ? 1 : 0];
    dm.N = X->dl.shape[layout ? 0 : 1];
    dm.I = X->dl.shape[2];
    dm.H = Hs;
    int64_t GH = dm.G * dm.H;
    if (dm.H <= 0) return rt_kerr(c, d, GR_ERR_INVALID, "hidden_size must be positive");
    int64_t ws[3] = {dm.D, GH, dm.I}, rs[3] = {dm.D, GH, dm.H}, bs[2] = {dm.D, 2 * GH};
    int64_t hs[3] = {dm.D, dm.N, dm.H}, hsb[3] = {dm.N, dm.D, dm.H}, ps[2] = {dm.D, 3 * dm.H};
    if ((st = want_f32(c, W, "W", 3, ws, d)) || (st = want_f32(c, R, "R", 3, rs, d)) ||
        (st = want_f32(c, B, "B", 2, bs, d)) || (st = want_f32(c, H0, "initial_h", 3, layout ? hsb : hs, d)) ||
        (st = want_f32(c, C0, "initial_c", 3, layout ? hsb : hs, d)) || (st = want_f32(c, P, "P", 2, ps, d)))
        return st;
    if (L && (L->dl.ndim != 1 || L->dl.shape[0] != dm.N || rt_is_floatish(L->dl.dtype)))
        return rt_kerr(c, d, GR_ERR_INVALID, "sequence_lens is %s, expected (%lld,) integers", RT_SHAPE_STR(L),
                       (long long)dm.N);
    int64_t *lens = rt_scratch_get(sizeof(int64_t) * (size_t)(dm.N ? dm.N : 1));
    if (!lens) return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    for (int64_t n = 0; n < dm.N; n++) {
        lens[n] = L ? (int64_t)rt_tensor_get_f64(L, n) : dm.T;
        if (lens[n] < 0 || lens[n] > dm.T) {
            rt_scratch_put(lens);
            return rt_kerr(c, d, GR_ERR_INVALID, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)n,
                           (long long)lens[n], (long long)dm.T);
        }
    }
    /* outputs */
    uint32_t nout = kind == K_LSTM ? 3 : 2;
    int64_t ys[4] = {dm.T, dm.D, dm.N, dm.H}, ysb[4] = {dm.N, dm.T, dm.D, dm.H};
    rt_value res = rt_value_tuple(nout);
    rt_tensor *o[3] = {NULL, NULL, NULL};
    for (uint32_t i = 0; i < nout && !st; i++) {
        st = i ? rt_out_new(c, X->dl.dtype, 3, layout ? hsb : hs, &o[i], d)
               : rt_out_new(c, X->dl.dtype, 4, layout ? ysb : ys, &o[i], d);
        if (!st) res.u.tuple.items[i] = rt_value_tensor(o[i]);
    }
    /* scratch: x in (T, N, I) order, projections (T, N, GH), hr (N, GH), tmp / h / c (N, H) */
    size_t nx = (size_t)(dm.T * dm.N * dm.I), nxp = (size_t)(dm.T * dm.N * GH), nst = (size_t)(dm.N * dm.H);
    float *ws_ = st ? NULL : rt_scratch_get(sizeof(float) * (nx + nxp + (size_t)(dm.N * GH) + 3 * nst + 1));
    if (!st && !ws_) st = rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    if (st) {
        rt_value_clear(&res);
        rt_scratch_put(lens);
        return st;
    }
    float *xs = ws_, *xp = xs + nx, *hr = xp + nxp, *tmp = hr + dm.N * GH, *h = tmp + nst, *cs = h + nst;
    const float *xd = rt_tensor_data(X);
    for (int64_t t = 0; t < dm.T; t++)
        for (int64_t n = 0; n < dm.N; n++)
            memcpy(xs + (t * dm.N + n) * dm.I, xd + (layout ? n * dm.T + t : t * dm.N + n) * dm.I,
                   sizeof(float) * (size_t)dm.I);
    for (int64_t dd = 0; dd < dm.D; dd++) {
        const float *w = (const float *)rt_tensor_data(W) + dd * GH * dm.I;
        rt_sgemm(dm.T * dm.N, GH, dm.I, xs, dm.I, 1, w, 1, dm.I, xp, GH, false);
        const float *b = B ? (const float *)rt_tensor_data(B) + dd * 2 * GH : NULL;
        static const float zero = 0;
        float *rbz = NULL;
        if (b) {
            /* W's bias always adds; R's too, except GRU's h gate with linear_before_reset */
            int64_t rcols = kind == K_GRU && lbr ? 2 * dm.H : GH;
            for (int64_t row = 0; row < dm.T * dm.N; row++) {
                float *x = xp + row * GH;
                for (int64_t k = 0; k < GH; k++) x[k] += b[k] + (k < rcols ? b[GH + k] : 0);
            }
        } else if (kind == K_GRU && lbr) {
            rbz = rt_scratch_get(sizeof(float) * (size_t)GH);
            if (!rbz) {
                rt_value_clear(&res);
                rt_scratch_put(ws_);
                rt_scratch_put(lens);
                return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
            }
            memset(rbz, 0, sizeof(float) * (size_t)GH);
        }
        for (int64_t n = 0; n < dm.N; n++)
            for (int64_t k = 0; k < dm.H; k++) {
                int64_t hi = layout ? (n * dm.D + dd) * dm.H + k : (dd * dm.N + n) * dm.H + k;
                h[n * dm.H + k] = H0 ? ((const float *)rt_tensor_data(H0))[hi] : 0;
                cs[n * dm.H + k] = C0 ? ((const float *)rt_tensor_data(C0))[hi] : 0;
            }
        rnn_dir r = {
            .kind = kind, .f = &acts[dd * nact], .g = &acts[dd * nact + (nact > 1)], .ho = &acts[dd * nact + (nact > 2 ? 2 : 0)],
            .reverse = dd == 1 || rev1, .lbr = lbr, .input_forget = input_forget, .clip = clip,
            .xp = xp, .rw = (const float *)rt_tensor_data(R) + dd * GH * dm.H,
            .rb = b ? b + GH : rbz ? rbz : &zero, .p = P ? (const float *)rt_tensor_data(P) + dd * 3 * dm.H : NULL,
            .h = h, .cst = cs, .lens = lens, .hr = hr, .tmp = tmp,
        };
        float *y = rt_tensor_data(o[0]);
        if (layout) {
            r.y = y + dd * dm.H;
            r.ys_t = dm.D * dm.H;
            r.ys_n = dm.T * dm.D * dm.H;
        } else {
            r.y = y + dd * dm.N * dm.H;
            r.ys_t = dm.D * dm.N * dm.H;
            r.ys_n = dm.H;
        }
        run_dir(&dm, &r);
        if (rbz) rt_scratch_put(rbz);
        for (uint32_t i = 1; i < nout; i++) {
            float *dst = rt_tensor_data(o[i]);
            const float *src = i == 1 ? h : cs;
            for (int64_t n = 0; n < dm.N; n++)
                memcpy(dst + (layout ? n * dm.D + dd : dd * dm.N + n) * dm.H, src + n * dm.H,
                       sizeof(float) * (size_t)dm.H);
        }
    }
    rt_scratch_put(ws_);
    rt_scratch_put(lens);
    *out = res;
    return GR_OK;
}

static gr_status k_lstm(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_rnn(c, o, d, K_LSTM); }
static gr_status k_gru(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_rnn(c, o, d, K_GRU); }
static gr_status k_rnn(const rt_kernel_call *c, rt_value *o, gr_diag *d) { return run_rnn(c, o, d, K_RNN); }

/* ---- reverse_sequence: x's first seq_lens[b] steps along time_axis reversed, per batch b ---- */

static gr_status k_reverse_sequence(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *l;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) || (st = rt_arg_tensor(c, 1, &l, d)))
        return st;
    int64_t ba = 1, ta = 0;
    rt_attr_ints(c->attrs, "batch_axis", &ba, 1);
    rt_attr_ints(c->attrs, "time_axis", &ta, 1);
    if (x->dl.ndim < 2 || (ba != 0 && ba != 1) || ta != 1 - ba)
        return rt_kerr(c, d, GR_ERR_INVALID, "bad axes for %s", RT_SHAPE_STR(x));
    int64_t Bn = x->dl.shape[ba], Tn = x->dl.shape[ta];
    if (l->dl.ndim != 1 || l->dl.shape[0] != Bn || rt_is_floatish(l->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "sequence_lens %s does not match batch %lld", RT_SHAPE_STR(l),
                       (long long)Bn);
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, x->dl.dtype, x->dl.ndim, x->dl.shape, &o, d))) return st;
    size_t row = rt_dtype_size(x->dl.dtype) * (size_t)rt_numel(x->dl.ndim - 2, x->dl.shape + 2);
    int64_t sb = ba ? 1 : Tn, stt = ba ? Bn : 1; /* row strides of batch and time */
    for (int64_t b = 0; b < Bn; b++) {
        int64_t len = (int64_t)rt_tensor_get_f64(l, b);
        if (len < 0 || len > Tn) {
            rt_tensor_release(o);
            return rt_kerr(c, d, GR_ERR_INVALID, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                           (long long)len, (long long)Tn);
        }
        for (int64_t t = 0; t < Tn; t++) {
            int64_t src = t < len ? len - 1 - t : t;
            memcpy((char *)rt_tensor_data(o) + (size_t)(b * sb + t * stt) * row,
                   (const char *)rt_tensor_data(x) + (size_t)(b * sb + src * stt) * row, row);
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_rnn[] = {
    RT_K(LSTM, k_lstm),
    RT_K(GRU, k_gru),
    RT_K(RNN, k_rnn),
    RT_K(REVERSE_SEQUENCE, k_reverse_sequence),
};
RT_FAMILY_COUNT(rnn, rt_kernels_rnn);
