/* Detection and sampling ops with ONNX's semantics: vision.non_max_suppression (per batch and
 * class, greedy by score), vision.roi_align (rois carry their batch index in column 0; avg or
 * max over bilinear samples), image.grid_sample (bilinear / nearest / bicubic; zeros / border /
 * reflection padding), nn.max_pool2d_with_indices (argmax as a flat index into the input) and
 * nn.max_unpool2d (scatter to those indices). float32 compute. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

static double f64_at(const rt_tensor *t, int64_t i) { return rt_tensor_get_f64(t, i); }

/* ---- non_max_suppression ---- */

typedef struct nms_cand {
    float score;
    int64_t box;
} nms_cand;

static int cand_cmp(const void *a, const void *b) {
    const nms_cand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return x->box < y->box ? -1 : x->box > y->box;
}

/* corners (y1, x1, y2, x2) ordered, from either box format */
static void box_corners(const float *b, bool center, float *o) {
    if (center) {
        o[0] = b[1] - b[3] / 2, o[1] = b[0] - b[2] / 2, o[2] = b[1] + b[3] / 2, o[3] = b[0] + b[2] / 2;
    } else {
        o[0] = fminf(b[0], b[2]), o[1] = fminf(b[1], b[3]), o[2] = fmaxf(b[0], b[2]), o[3] = fmaxf(b[1], b[3]);
    }
}

static bool suppressed(const float *a, const float *b, float thr) {
    float ih = fminf(a[2], b[2]) - fmaxf(a[0], b[0]), iw = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    float aa = (a[2] - a[0]) * (a[3] - a[1]), ab = (b[2] - b[0]) * (b[3] - b[1]);
    if (aa <= 0 || ab <= 0 || ih <= 0 || iw <= 0) return false;
    float inter = ih * iw;
    return inter / (aa + ab - inter) > thr;
}

static gr_status k_nms(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *bx, *sc;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 5, d)) || (st = rt_arg_tensor(c, 0, &bx, d)) || (st = rt_arg_tensor(c, 1, &sc, d)))
        return st;
    double v[3] = {0, 0, -INFINITY};
    bool have[3] = {false, false, false};
    for (uint32_t i = 2; i < c->nargs; i++) {
        const rt_tensor *t;
        if ((st = rt_arg_tensor(c, i, &t, d))) return st;
        if (rt_tensor_numel(t) > 0) v[i - 2] = f64_at(t, 0), have[i - 2] = true;
    }
    if (bx->dl.ndim != 3 || bx->dl.shape[2] != 4 || sc->dl.ndim != 3 || sc->dl.shape[0] != bx->dl.shape[0] ||
        sc->dl.shape[2] != bx->dl.shape[1])
        return rt_kerr(c, d, GR_ERR_INVALID, "boxes %s and scores %s do not match (N, B, 4) and (N, C, B)", RT_SHAPE_STR(bx),
                       RT_SHAPE_STR(sc));
    int64_t N = bx->dl.shape[0], B = bx->dl.shape[1], C = sc->dl.shape[1];
    int64_t maxout = have[0] && v[0] > 0 ? (v[0] < (double)B ? (int64_t)v[0] : B) : 0;
    float iou = (float)v[1], sthr = (float)v[2];
    bool center = ir_attrs_get_int(c->attrs, "center_point_box", 0) == 1;
    size_t cap = (size_t)(N * C * (maxout < B ? (maxout > 0 ? maxout : 0) : B));
    int64_t *sel = malloc(sizeof(int64_t) * 3 * (cap ? cap : 1));
    nms_cand *cand = malloc(sizeof(nms_cand) * (size_t)(B ? B : 1));
    float *corn = malloc(sizeof(float) * 4 * (size_t)(B ? B : 1));
    int64_t *keep = malloc(sizeof(int64_t) * (size_t)(B ? B : 1));
    float *bf = malloc(sizeof(float) * 4 * (size_t)(B ? B : 1));
    if (!sel || !cand || !corn || !keep || !bf) {
        free(sel), free(cand), free(corn), free(keep), free(bf);
        return rt_kerr(c, d, GR_ERR_NOMEM, "out of memory");
    }
    int64_t k = 0;
    for (int64_t n = 0; n < N && maxout > 0; n++) {
        for (int64_t b = 0; b < B; b++) {
            for (int j = 0; j < 4; j++) bf[b * 4 + j] = (float)f64_at(bx, (n * B + b) * 4 + j);
            box_corners(bf + b * 4, center, corn + b * 4);
        }
        for (int64_t cl = 0; cl < C; cl++) {
            int64_t nc = 0, nk = 0;
            for (int64_t b = 0; b < B; b++) {
                float s = (float)f64_at(sc, (n * C + cl) * B + b);
                if (!have[2] || s > sthr) cand[nc++] = (nms_cand){s, b};
            }
            qsort(cand, (size_t)nc, sizeof *cand, cand_cmp);
            for (int64_t i = 0; i < nc && nk < maxout; i++) {
                bool drop = false;
                for (int64_t j = 0; j < nk && !drop; j++) drop = suppressed(corn + cand[i].box * 4, corn + keep[j] * 4, iou);
                if (drop) continue;
                keep[nk++] = cand[i].box;
                sel[k * 3] = n, sel[k * 3 + 1] = cl, sel[k * 3 + 2] = cand[i].box;
                k++;
            }
        }
    }
    free(cand), free(corn), free(keep), free(bf);
    int64_t os[2] = {k, 3};
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, (DLDataType){kDLInt, 64, 1}, 2, os, &o, d))) {
        free(sel);
        return st;
    }
    memcpy(rt_tensor_data(o), sel, sizeof(int64_t) * (size_t)(3 * k));
    free(sel);
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- roi_align ---- */

/* Bilinear sample of plane p (H, W) at (y, x); the four weighted corners in w4. false when the
 * point is outside [-1, H] x [-1, W]. */
static bool bilinear4(const float *p, int64_t H, int64_t W, float y, float x, float *w4) {
    if (!(y >= -1.0f && y <= (float)H && x >= -1.0f && x <= (float)W)) return false; /* NaN too */
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= H - 1) y0 = y1 = H - 1, y = (float)y0;
    else y1 = y0 + 1;
    if (x0 >= W - 1) x0 = x1 = W - 1, x = (float)x0;
    else x1 = x0 + 1;
    float ly = y - (float)y0, lx = x - (float)x0, hy = 1 - ly, hx = 1 - lx;
    w4[0] = hy * hx * p[y0 * W + x0];
    w4[1] = hy * lx * p[y0 * W + x1];
    w4[2] = ly * hx * p[y1 * W + x0];
    w4[3] = ly * lx * p[y1 * W + x1];
    return true;
}

static gr_status k_roi_align(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *r;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) || (st = rt_arg_tensor(c, 1, &r, d))) return st;
    if (x->dl.ndim != 4 || !rt_is_f32(x->dl.dtype) || r->dl.ndim != 2 || r->dl.shape[1] != 5)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects float32 (N, C, H, W) data and (R, 5) rois, got %s and %s",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(r));
    int64_t ps[2] = {1, 1}, sr = -1;
    rt_attr_ints(c->attrs, "pooled_size", ps, 2);
    rt_attr_ints(c->attrs, "sample_ratio", &sr, 1);
    const ir_attr *sa = ir_attrs_get(c->attrs, "spatial_scale");
    float scale = sa && sa->kind == IR_ATTR_FLOAT ? (float)sa->u.f : 1.0f;
    bool aligned = ir_attrs_get_bool(c->attrs, "aligned", false);
    bool is_max = !strcmp(rt_attr_str(c->attrs, "mode", "avg"), "max");
    int64_t N = x->dl.shape[0], C = x->dl.shape[1], H = x->dl.shape[2], W = x->dl.shape[3], R = r->dl.shape[0];
    int64_t os[4] = {R, C, ps[0], ps[1]};
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, x->dl.dtype, 4, os, &o, d))) return st;
    float *y = rt_tensor_data(o);
    const float *xd = rt_tensor_data(x);
    float off = aligned ? 0.5f : 0.0f;
    for (int64_t ri = 0; ri < R; ri++) {
        int64_t b = (int64_t)f64_at(r, ri * 5);
        if (b < 0 || b >= N) {
            rt_tensor_release(o);
            return rt_kerr(c, d, GR_ERR_INVALID, "roi %lld has batch index %lld outside [0, %lld)", (long long)ri,
                           (long long)b, (long long)N);
        }
        float x1 = (float)f64_at(r, ri * 5 + 1) * scale - off, y1 = (float)f64_at(r, ri * 5 + 2) * scale - off;
        float x2 = (float)f64_at(r, ri * 5 + 3) * scale - off, y2 = (float)f64_at(r, ri * 5 + 4) * scale - off;
        float rw = x2 - x1, rh = y2 - y1;
        if (!aligned) rw = fmaxf(rw, 1.0f), rh = fmaxf(rh, 1.0f);
        float bh = rh / (float)ps[0], bw = rw / (float)ps[1];
        /* samples per bin: sample_ratio, or adaptive; bounded for a huge (or NaN) roi */
        float fgh = sr > 0 ? (float)sr : ceilf(rh / (float)ps[0]), fgw = sr > 0 ? (float)sr : ceilf(rw / (float)ps[1]);
        int64_t gh = fgh >= 1 ? (fgh < 4096 ? (int64_t)fgh : 4096) : 1, gw = fgw >= 1 ? (fgw < 4096 ? (int64_t)fgw : 4096) : 1;
        float cnt = (float)(gh * gw);
        for (int64_t ch = 0; ch < C; ch++) {
            const float *p = xd + (b * C + ch) * H * W;
            for (int64_t py = 0; py < ps[0]; py++)
                for (int64_t px = 0; px < ps[1]; px++) {
                    float acc = 0, mx = -INFINITY;
                    bool any = false;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        float sy = y1 + (float)py * bh + ((float)iy + 0.5f) * bh / (float)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            float sx = x1 + (float)px * bw + ((float)ix + 0.5f) * bw / (float)gw, w4[4];
                            if (!bilinear4(p, H, W, sy, sx, w4)) {
                                mx = fmaxf(mx, 0.0f);
                                continue;
                            }
                            any = true;
                            acc += w4[0] + w4[1] + w4[2] + w4[3];
                            /* max mode as ONNX Runtime: the largest weighted corner */
                            mx = fmaxf(mx, fmaxf(fmaxf(w4[0], w4[1]), fmaxf(w4[2], w4[3])));
                        }
                    }
                    *y++ = is_max ? (any || mx > -INFINITY ? mx : 0.0f) : acc / cnt;
                }
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- grid_sample ---- */

typedef struct gs_geom {
    int64_t H, W;
    int pad;                      /* 0 zeros, 1 border, 2 reflection */
    float xmin, xmax, ymin, ymax; /* the reflection / bounds box in pixels */
} gs_geom;

static float reflect(float v, float lo, float hi) {
    float range = hi - lo;
    if (range <= 0) return lo;
    if (v < lo) {
        float dx = lo - v;
        int64_t n = (int64_t)(dx / range);
        float r = dx - (float)n * range;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (v > hi) {
        float dx = v - hi;
        int64_t n = (int64_t)(dx / range);
        float r = dx - (float)n * range;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return v;
}

static float pixel(const float *p, const gs_geom *g, int64_t yy, int64_t xx) {
    if (g->pad == 0) return yy >= 0 && yy < g->H && xx >= 0 && xx < g->W ? p[yy * g->W + xx] : 0.0f;
    if (g->pad == 1) {
        xx = xx < 0 ? 0 : xx >= g->W ? g->W - 1 : xx;
        yy = yy < 0 ? 0 : yy >= g->H ? g->H - 1 : yy;
        return p[yy * g->W + xx];
    }
    xx = (int64_t)reflect((float)xx, g->xmin, g->xmax);
    yy = (int64_t)reflect((float)yy, g->ymin, g->ymax);
    xx = xx < 0 ? 0 : xx >= g->W ? g->W - 1 : xx;
    yy = yy < 0 ? 0 : yy >= g->H ? g->H - 1 : yy;
    return p[yy * g->W + xx];
}

static void cubic_coeffs(float t, float *c4) {
    const float A = -0.75f;
    float x = fabsf(t);
    c4[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c4[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c4[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c4[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

static gr_status k_grid_sample(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *gr;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) || (st = rt_arg_tensor(c, 1, &gr, d))) return st;
    if (x->dl.ndim != 4 || !rt_is_f32(x->dl.dtype) || gr->dl.ndim != 4 || gr->dl.shape[3] != 2 ||
        gr->dl.shape[0] != x->dl.shape[0])
        return rt_kerr(c, d, GR_ERR_INVALID, "expects float32 (N, C, H, W) data and an (N, Ho, Wo, 2) grid, got %s and %s",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(gr));
    const char *method = rt_attr_str(c->attrs, "method", "bilinear"), *pm = rt_attr_str(c->attrs, "padding_mode", "zeros");
    int mode = !strcmp(method, "nearest") ? 1 : !strcmp(method, "bicubic") ? 2 : !strcmp(method, "bilinear") ? 0 : -1;
    gs_geom g;
    g.pad = !strcmp(pm, "zeros") ? 0 : !strcmp(pm, "border") ? 1 : !strcmp(pm, "reflection") ? 2 : -1;
    if (mode < 0 || g.pad < 0) return rt_kerr(c, d, GR_ERR_UNSUPPORTED, "method %s / padding_mode %s", method, pm);
    bool ac = ir_attrs_get_bool(c->attrs, "align_corners", true);
    int64_t N = x->dl.shape[0], C = x->dl.shape[1], Ho = gr->dl.shape[1], Wo = gr->dl.shape[2];
    g.H = x->dl.shape[2], g.W = x->dl.shape[3];
    g.xmin = ac ? 0 : -0.5f, g.ymin = g.xmin;
    g.xmax = ac ? (float)g.W - 1 : (float)g.W - 0.5f, g.ymax = ac ? (float)g.H - 1 : (float)g.H - 0.5f;
    int64_t os[4] = {N, C, Ho, Wo};
    rt_tensor *o;
    if ((st = rt_out_new_raw(c, x->dl.dtype, 4, os, &o, d))) return st;
    float *y = rt_tensor_data(o);
    const float *xd = rt_tensor_data(x);
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            const float *p = xd + (n * C + ch) * g.H * g.W;
            for (int64_t i = 0; i < Ho; i++)
                for (int64_t j = 0; j < Wo; j++) {
                    float gx = (float)f64_at(gr, ((n * Ho + i) * Wo + j) * 2), gy = (float)f64_at(gr, ((n * Ho + i) * Wo + j) * 2 + 1);
                    float px = ac ? (gx + 1) / 2 * (float)(g.W - 1) : ((gx + 1) * (float)g.W - 1) / 2;
                    float py = ac ? (gy + 1) / 2 * (float)(g.H - 1) : ((gy + 1) * (float)g.H - 1) / 2;
                    /* far outside (or NaN): no pixel; kept in a range the int casts below hold */
                    if (!isfinite(px) || !isfinite(py)) px = py = -1e7f;
                    px = fminf(fmaxf(px, -1e7f), 1e7f), py = fminf(fmaxf(py, -1e7f), 1e7f);
                    if (mode == 1) px = nearbyintf(px), py = nearbyintf(py);
                    if (mode != 2 && (px < g.xmin || px > g.xmax || py < g.ymin || py > g.ymax)) {
                        if (g.pad == 1) {
                            px = fminf(fmaxf(px, 0), (float)g.W - 1);
                            py = fminf(fmaxf(py, 0), (float)g.H - 1);
                        } else if (g.pad == 2) {
                            px = reflect(px, g.xmin, g.xmax);
                            py = reflect(py, g.ymin, g.ymax);
                        }
                    }
                    float v;
                    if (mode == 1) {
                        v = pixel(p, &g, (int64_t)py, (int64_t)px);
                    } else if (mode == 0) {
                        float x0 = floorf(px), y0 = floorf(py), dx = px - x0, dy = py - y0;
                        int64_t ix = (int64_t)x0, iy = (int64_t)y0;
                        v = (1 - dy) * ((1 - dx) * pixel(p, &g, iy, ix) + dx * pixel(p, &g, iy, ix + 1)) +
                            dy * ((1 - dx) * pixel(p, &g, iy + 1, ix) + dx * pixel(p, &g, iy + 1, ix + 1));
                    } else {
                        float x0 = floorf(px) - 1, y0 = floorf(py) - 1, cx[4], cy[4];
                        cubic_coeffs(px - x0 - 1, cx);
                        cubic_coeffs(py - y0 - 1, cy);
                        v = 0;
                        for (int a = 0; a < 4; a++) {
                            float row = 0;
                            for (int b = 0; b < 4; b++) row += cx[b] * pixel(p, &g, (int64_t)y0 + a, (int64_t)x0 + b);
                            v += cy[a] * row;
                        }
                    }
                    *y++ = v;
                }
        }
    *out = rt_value_tensor(o);
    return GR_OK;
}

/* ---- max_pool2d_with_indices / max_unpool2d ---- */

static gr_status k_max_pool_idx(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x;
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d)) || (st = rt_arg_tensor(c, 0, &x, d))) return st;
    if (x->dl.ndim != 4 || !rt_is_f32(x->dl.dtype))
        return rt_kerr(c, d, GR_ERR_INVALID, "expects a float32 (N, C, H, W) tensor, got %s", RT_SHAPE_STR(x));
    int64_t k[2] = {1, 1}, s[2] = {1, 1}, dl[2] = {1, 1}, p[4] = {0, 0, 0, 0}, so = 0;
    rt_attr_ints(c->attrs, "pool_size", k, 2);
    rt_attr_ints(c->attrs, "strides", s, 2);
    rt_attr_ints(c->attrs, "dilation", dl, 2);
    rt_attr_ints(c->attrs, "padding", p, 4);
    rt_attr_ints(c->attrs, "storage_order", &so, 1);
    bool ceil_mode = ir_attrs_get_bool(c->attrs, "ceil_mode", false);
    int64_t N = x->dl.shape[0], C = x->dl.shape[1], H = x->dl.shape[2], W = x->dl.shape[3], o2[2];
    for (int i = 0; i < 2; i++) {
        /* ONNX / PyTorch: in ceil mode a window must start inside the input or the left padding */
        int64_t in = x->dl.shape[2 + i], span = in + p[i] + p[i + 2] - dl[i] * (k[i] - 1) - 1;
        if (k[i] <= 0 || s[i] <= 0 || dl[i] <= 0 || span < 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "window larger than the padded input %s", RT_SHAPE_STR(x));
        o2[i] = (ceil_mode ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
        if (ceil_mode && (o2[i] - 1) * s[i] >= in + p[i]) o2[i]--;
    }
    int64_t OH = o2[0], OW = o2[1], oshape[4] = {N, C, OH, OW};
    rt_tensor *yv, *yi;
    if ((st = rt_out_new_raw(c, x->dl.dtype, 4, oshape, &yv, d))) return st;
    if ((st = rt_out_new_raw(c, (DLDataType){kDLInt, 64, 1}, 4, oshape, &yi, d))) {
        rt_tensor_release(yv);
        return st;
    }
    const float *xd = rt_tensor_data(x);
    float *vd = rt_tensor_data(yv);
    int64_t *id = rt_tensor_data(yi);
    for (int64_t nc = 0; nc < N * C; nc++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float best = -INFINITY;
                int64_t bi = -1;
                for (int64_t i = 0; i < k[0]; i++) {
                    int64_t ih = oh * s[0] - p[0] + i * dl[0];
                    if (ih < 0 || ih >= H) continue;
                    for (int64_t j = 0; j < k[1]; j++) {
                        int64_t iw = ow * s[1] - p[1] + j * dl[1];
                        if (iw < 0 || iw >= W) continue;
                        float v = xd[(nc * H + ih) * W + iw];
                        if (bi < 0 || v > best) best = v, bi = so ? nc * H * W + iw * H + ih : (nc * H + ih) * W + iw;
                    }
                }
                *vd++ = best;
                *id++ = bi < 0 ? 0 : bi;
            }
    rt_value res = rt_value_tuple(2);
    res.u.tuple.items[0] = rt_value_tensor(yv);
    res.u.tuple.items[1] = rt_value_tensor(yi);
    *out = res;
    return GR_OK;
}

static gr_status k_max_unpool(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    const rt_tensor *x, *ix;
    gr_status st;
    if ((st = rt_check_nargs(c, 2, 2, d)) || (st = rt_arg_tensor(c, 0, &x, d)) || (st = rt_arg_tensor(c, 1, &ix, d))) return st;
    int64_t os[2];
    if (x->dl.ndim != 4 || rt_tensor_numel(ix) != rt_tensor_numel(x) || rt_attr_ints(c->attrs, "output_size", os, 2) != 2)
        return rt_kerr(c, d, GR_ERR_INVALID, "expects (N, C, H, W) data, indices like it and a 2-value output_size, got %s and %s",
                       RT_SHAPE_STR(x), RT_SHAPE_STR(ix));
    int64_t oshape[4] = {x->dl.shape[0], x->dl.shape[1], os[0], os[1]};
    rt_tensor *o;
    if ((st = rt_out_new(c, x->dl.dtype, 4, oshape, &o, d))) return st;
    /* indices are flat over (N, C, index_size); each lands at its (n, c, h, w) in the output */
    int64_t is[2] = {os[0], os[1]};
    if (rt_attr_ints(c->attrs, "index_size", is, 2) != 2) is[0] = os[0], is[1] = os[1];
    int64_t plane = is[0] * is[1], nc = oshape[0] * oshape[1];
    size_t es = rt_dtype_size(x->dl.dtype);
    for (int64_t i = 0; i < rt_tensor_numel(x); i++) {
        int64_t at = (int64_t)f64_at(ix, i), p = plane > 0 ? at / plane : -1, h = plane > 0 ? at % plane / is[1] : 0;
        int64_t w = plane > 0 ? at % is[1] : 0;
        if (at < 0 || p >= nc || h >= os[0] || w >= os[1]) {
            rt_tensor_release(o);
            return rt_kerr(c, d, GR_ERR_INVALID, "index %lld is outside the output %s", (long long)at, RT_SHAPE_STR(o));
        }
        size_t to = (size_t)((p * os[0] + h) * os[1] + w);
        memcpy((char *)rt_tensor_data(o) + to * es, (const char *)rt_tensor_data(x) + (size_t)i * es, es);
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_vision[] = {
    RT_K(NMS, k_nms),
    RT_K(ROI_ALIGN, k_roi_align),
    RT_K(GRID_SAMPLE, k_grid_sample),
    RT_K(MAX_POOL2D_INDICES, k_max_pool_idx),
    RT_K(MAX_UNPOOL2D, k_max_unpool),
};
RT_FAMILY_COUNT(vision, rt_kernels_vision);
