/* The oneDNN engine's volumetric ops: relax.nn.conv3d / conv3d_transpose (NCDHW data,
 * OIDHW / IODHW weights, groups, dilation) as one (de)convolution primitive each, with the
 * layouts oneDNN picks (src / weights / dst `any`; constants reordered once at prepare), and
 * relax.nn.max_pool3d / avg_pool3d as one pooling primitive over channels-last input (oneDNN's
 * jit pooling takes blocked or channels-last, not plain NCDHW). The exclusive chain of
 * elementwise / broadcast ops after either (a bias add, an activation) becomes its post-ops,
 * as many as oneDNN takes without falling back to a reference kernel. */
#include <string.h>

#include "backends/dnnl/dnnl_impl.h"

static gr_status layouts(dn_state *S, const rt_json_node *n, const char *const *keys, const char *const *want, int k) {
    for (int i = 0; i < k; i++)
        if (strcmp(dn_attr_str(n, keys[i], want[i]), want[i]))
            return dn_fail(S, n, dnnl_success, "layouts other than NCDHW / OIDHW (IODHW) are not supported");
    return GR_OK;
}

/* strides / dilation (1 or 3 values) and padding (1, 3 or 6) from the attributes. */
static void window(const rt_json_node *n, int64_t *s, int64_t *dil, int64_t *p0, int64_t *p1) {
    int64_t v[6];
    int c;
    for (int i = 0; i < 3; i++) s[i] = dil[i] = 1, p0[i] = p1[i] = 0;
    if ((c = dn_attr_ints(n, "strides", v, 3)) > 0)
        for (int i = 0; i < 3; i++) s[i] = v[c == 1 ? 0 : i];
    if ((c = dn_attr_ints(n, "dilation", v, 3)) > 0)
        for (int i = 0; i < 3; i++) dil[i] = v[c == 1 ? 0 : i];
    if ((c = dn_attr_ints(n, "padding", v, 6)) > 0)
        for (int i = 0; i < 3; i++) {
            p0[i] = v[c == 1 ? 0 : i];
            p1[i] = v[c == 1 ? 0 : c == 3 ? i : 3 + i];
        }
}

/* The post-op chain after n and the dst md to ask for: `any` (oneDNN's plain-NCDHW kernels are
 * its slow ones; a region output is reordered to plain at the end). */
typedef struct vol_chain {
    dn_step steps[DN_MAX_STEPS];
    int k;
    dnnl_memory_desc_t dst;
} vol_chain;

static void chain(dn_state *S, const rt_json_node *n, vol_chain *c) {
    int out = (int)S->row_ptr_of[n - S->node0];
    c->k = dn_collect_chain(S, out, c->steps, DN_MAX_STEPS);
    dnnl_dims_t d;
    for (int i = 0; i < 5; i++) d[i] = n->shapes[0][i];
    dnnl_memory_desc_init_by_tag(&c->dst, 5, d, dnnl_f32, dnnl_format_tag_any);
}

/* The primitive with the longest prefix of the chain oneDNN accepts as post-ops without a
 * reference kernel; binary post-op sources appended to args. */
static gr_status create(dn_state *S, const rt_json_node *n, const_dnnl_op_desc_t desc, vol_chain *c,
                        dnnl_primitive_desc_t *pd, int *used, dn_arg *args, int *nargs) {
    dnnl_status_t ds = dnnl_unimplemented;
    for (int k = c->k; k >= 0; k--) {
        int m = *nargs;
        dnnl_primitive_attr_t attr;
        gr_status st = dn_make_attr(S, n, c->steps, k, 5, &attr, args, &m);
        if (st) return st;
        ds = dnnl_primitive_desc_create(pd, desc, attr, S->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        const char *impl = NULL;
        if (ds == dnnl_success && k > 0 &&
            ((dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl && !strncmp(impl, "ref", 3)) ||
             !dn_src1_in_dst_layout(S, *pd, c->steps, k))) {
            dnnl_primitive_desc_destroy(*pd);
            continue;
        }
        if (ds == dnnl_success) {
            *used = k;
            *nargs = m;
            return GR_OK;
        }
    }
    return dn_fail(S, n, ds, "oneDNN rejects the primitive");
}

/* Emits pd with its dst and binds the output to the last folded entry. */
static gr_status finish(dn_state *S, const rt_json_node *n, dnnl_primitive_desc_t pd, dn_arg *args, int na,
                        const vol_chain *c, int used) {
    dnnl_memory_desc_t dmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int yv = dn_val_new(S, V_TMP, &dmd);
    args[na++] = (dn_arg){DNNL_ARG_DST, yv, dmd, NULL};
    gr_status st = dn_emit(S, n, pd, args, na, false);
    if (st) return st;
    dn_consume(S, c->steps, used);
    S->ent_val[used ? c->steps[used - 1].out : (int)S->row_ptr_of[n - S->node0]] = yv;
    return GR_OK;
}

gr_status dn_conv3d(dn_state *S, const rt_json_node *n) {
    bool deconv = n->op == IR_OP_CONV3D_TRANSPOSE;
    static const char *const keys[3] = {"data_layout", "kernel_layout", "out_layout"};
    const char *const want[3] = {"NCDHW", deconv ? "IODHW" : "OIDHW", "NCDHW"};
    gr_status st = layouts(S, n, keys, want, 3);
    if (st) return st;
    int x = dn_arg_entry(S, n, 0), w = dn_arg_entry(S, n, 1);
    if (x < 0 || w < 0 || S->ent_val[x] < 0 || S->ent_val[w] < 0 || dn_entry_ndim(S, x) != 5 || dn_entry_ndim(S, w) != 5)
        return dn_fail(S, n, dnnl_success, "data and weight must be 5-D float32 tensors of the region");
    int xv = S->ent_val[x], wv = S->ent_val[w];
    const int64_t *xs = dn_entry_shape(S, x), *ws = dn_entry_shape(S, w), *os = n->shapes[0];
    int64_t G = dn_attr_int(n, "groups", 1), s[3], dil[3], p0[3], p1[3], opad[3] = {0, 0, 0}, v[3];
    window(n, s, dil, p0, p1);
    int c = deconv ? dn_attr_ints(n, "output_padding", v, 3) : -1;
    for (int i = 0; i < 3 && c > 0; i++) opad[i] = v[c == 1 ? 0 : i];
    int64_t O = os[1], I = xs[1], K = ws[2] * ws[3] * ws[4];
    if (G <= 0 || O % G || I % G) return dn_fail(S, n, dnnl_success, "groups do not divide the channels");
    /* weights as oneDNN sees them, ([G,] O/G, I/G, kd, kh, kw), over the tensor's own memory */
    int64_t og = O / G, ig = I / G;
    dnnl_dims_t wd, wstr;
    int wn = 0;
    if (G > 1) wd[wn] = G, wstr[wn++] = og * ig * K;
    wd[wn] = og, wstr[wn++] = deconv ? K : ig * K;
    wd[wn] = ig, wstr[wn++] = deconv ? og * K : K;
    for (int i = 0; i < 3; i++) wd[wn + i] = ws[2 + i];
    wstr[wn + 2] = 1, wstr[wn + 1] = ws[4], wstr[wn] = ws[3] * ws[4];
    wn += 3;
    dnnl_dims_t sd, dd, pl, pr, xd;
    for (int i = 0; i < 3; i++) {
        sd[i] = s[i];
        dd[i] = dil[i] - 1;
        pl[i] = p0[i];
        pr[i] = p1[i] - opad[i];
    }
    for (int i = 0; i < 5; i++) xd[i] = xs[i];
    dnnl_memory_desc_t wuser, wany, xany;
    dnnl_memory_desc_init_by_strides(&wuser, wn, wd, dnnl_f32, wstr);
    dnnl_memory_desc_init_by_tag(&wany, wn, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&xany, 5, xd, dnnl_f32, dnnl_format_tag_any);
    vol_chain ch;
    chain(S, n, &ch);
    union {
        dnnl_convolution_desc_t c;
        dnnl_deconvolution_desc_t d;
    } desc;
    dnnl_status_t ds =
        deconv ? dnnl_dilated_deconvolution_forward_desc_init(&desc.d, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                              &xany, &wany, NULL, &ch.dst, sd, dd, pl, pr)
               : dnnl_dilated_convolution_forward_desc_init(&desc.c, dnnl_forward_inference, dnnl_convolution_direct, &xany,
                                                            &wany, NULL, &ch.dst, sd, dd, pl, pr);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid 3-D convolution");
    dnnl_primitive_desc_t pd;
    dn_arg args[3 + DN_MAX_STEPS];
    int na = 0, used = 0;
    if ((st = create(S, n, &desc, &ch, &pd, &used, args, &na))) return st;
    if ((st = dn_src_weights(S, n, pd, xv, dn_alias_new(S, wv, &wuser), args, &na))) return st;
    return finish(S, n, pd, args, na, &ch, used);
}

gr_status dn_pool3d(dn_state *S, const rt_json_node *n) {
    static const char *const keys[2] = {"layout", "out_layout"};
    static const char *const want[2] = {"NCDHW", "NCDHW"};
    gr_status st = layouts(S, n, keys, want, 2);
    if (st) return st;
    bool is_max = n->op == IR_OP_MAX_POOL3D;
    int x = dn_arg_entry(S, n, 0);
    if (x < 0 || S->ent_val[x] < 0 || dn_entry_ndim(S, x) != 5)
        return dn_fail(S, n, dnnl_success, "input must be a 5-D float32 tensor of the region");
    int xv = S->ent_val[x];
    const int64_t *xs = dn_entry_shape(S, x), *os = n->shapes[0];
    int64_t s[3], dil[3], p0[3], p1[3], ks[3] = {1, 1, 1}, v[3];
    window(n, s, dil, p0, p1);
    int c = dn_attr_ints(n, "pool_size", v, 3);
    for (int i = 0; i < 3 && c > 0; i++) ks[i] = v[c == 1 ? 0 : i];
    bool incl = !is_max && dn_attr_bool(n, "count_include_pad", false);
    if (incl && dn_attr_bool(n, "ceil_mode", false))
        return dn_fail(S, n, dnnl_success, "avg pooling with ceil_mode and count_include_pad is not supported");
    dnnl_dims_t sd, kd, dd, pl, pr, xd;
    for (int i = 0; i < 3; i++) {
        sd[i] = s[i];
        kd[i] = ks[i];
        dd[i] = dil[i] - 1;
        pl[i] = p0[i];
        /* ceil_mode: the output size decides the right padding */
        pr[i] = (os[2 + i] - 1) * s[i] + (ks[i] - 1) * dil[i] + 1 - xs[2 + i] - p0[i];
        if (pr[i] < 0) pr[i] = 0;
    }
    /* plain NCDHW input goes channels-last (a blocked one stays as it is) */
    if (dn_is_plain(&S->vals.data[xv].md)) {
        dnnl_memory_desc_t cl;
        for (int i = 0; i < 5; i++) xd[i] = xs[i];
        dnnl_memory_desc_init_by_tag(&cl, 5, xd, dnnl_f32, dnnl_acdeb);
        if ((st = dn_as(S, n, xv, &cl, &xv))) return st;
    }
    vol_chain ch;
    chain(S, n, &ch);
    dnnl_pooling_v2_desc_t desc;
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max : incl ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_status_t ds = dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &S->vals.data[xv].md, &ch.dst,
                                                         sd, kd, dd, pl, pr);
    if (ds != dnnl_success) return dn_fail(S, n, ds, "invalid 3-D pooling");
    dnnl_primitive_desc_t pd;
    dn_arg args[2 + DN_MAX_STEPS];
    int na = 0, used = 0;
    if ((st = create(S, n, &desc, &ch, &pd, &used, args, &na))) return st;
    args[na++] = (dn_arg){DNNL_ARG_SRC, xv, S->vals.data[xv].md, NULL};
    return finish(S, n, pd, args, na, &ch, used);
}
