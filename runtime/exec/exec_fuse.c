/* Host fusion for the executor (runtime/exec/executor.c): which bindings form fused elementwise
 * groups (rt_fuse_group, compiled by a host lowering such as backends/llvm), their tails
 * (reductions, row normalizations), and the packing of planned buffers into one arena. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ir/op.h"
#include "runtime/exec/exec_impl.h"

/* ---------------- memory plan ---------------- */

typedef struct mp_item {
    uint32_t id;
    size_t size;
} mp_item;

static int mp_cmp(const void *a, const void *b) {
    const mp_item *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

typedef struct mp_range {
    size_t lo, hi;
} mp_range;

static int range_cmp(const void *a, const void *b) {
    const mp_range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Greedy by size: the largest buffers are placed first, each at the lowest offset that does not
 * collide with an already placed buffer whose interval overlaps. */
size_t rt_plan_memory(uint32_t n, const size_t *size, const uint32_t *start, const uint32_t *end,
                      size_t *offset) {
    mp_item *items = gr_xmalloc(sizeof(mp_item) * (n ? n : 1));
    mp_range *busy = gr_xmalloc(sizeof(mp_range) * (n ? n : 1));
    bool *placed = gr_xcalloc(n ? n : 1, sizeof(bool));
    for (uint32_t i = 0; i < n; i++) items[i] = (mp_item){i, (size[i] + 63) & ~(size_t)63};
    qsort(items, n, sizeof *items, mp_cmp);
    size_t total = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = items[k].id;
        uint32_t nb = 0;
        for (uint32_t j = 0; j < n; j++)
            if (placed[j] && start[j] <= end[i] && start[i] <= end[j])
                busy[nb++] = (mp_range){offset[j], offset[j] + ((size[j] + 63) & ~(size_t)63)};
        qsort(busy, nb, sizeof *busy, range_cmp);
        size_t at = 0;
        for (uint32_t b = 0; b < nb; b++) {
            if (busy[b].lo >= at + items[k].size) break;
            if (busy[b].hi > at) at = busy[b].hi;
        }
        offset[i] = at;
        placed[i] = true;
        if (at + items[k].size > total) total = at + items[k].size;
    }
    free(items);
    free(busy);
    free(placed);
    return total;
}

/* ---------------- group tails ---------------- */

/* by op id (RT_TAIL_NONE: not a tail) */
static const rt_fuse_tail tail_table[IR_OP_COUNT] = {
    [IR_OP_SUM] = RT_TAIL_SUM,
    [IR_OP_MEAN] = RT_TAIL_MEAN,
    [IR_OP_MAX] = RT_TAIL_MAX,
    [IR_OP_MIN] = RT_TAIL_MIN,
    [IR_OP_SOFTMAX] = RT_TAIL_SOFTMAX,
    [IR_OP_LOG_SOFTMAX] = RT_TAIL_LOG_SOFTMAX,
    [IR_OP_ADAPTIVE_AVG_POOL2D] = RT_TAIL_MEAN,
    [IR_OP_LAYER_NORM] = RT_TAIL_LAYER_NORM,
    [IR_OP_RMS_NORM] = RT_TAIL_RMS_NORM,
};

static bool norm_axis(int64_t *a, int32_t nd) {
    if (*a < 0) *a += nd;
    return *a >= 0 && *a < nd;
}

/* Global average pooling: output_size 1 (or [1, 1]) in NCHW is a mean over axes 2 and 3. */
static uint32_t global_pool_mask(const ir_call *call, int32_t nd) {
    const char *lay = ir_attrs_get_str(call->attrs, "layout");
    const char *olay = ir_attrs_get_str(call->attrs, "out_layout");
    if (nd != 4 || (lay && strcmp(lay, "NCHW")) || (olay && strcmp(olay, "NCHW"))) return 0;
    int64_t os[2];
    int n = ir_attrs_get_ints(call->attrs, "output_size", os, 2);
    if (n < 1 || n > 2 || os[0] != 1 || os[n - 1] != 1) return 0;
    return (1u << 2) | (1u << 3);
}

/* The dims of a tensor of known rank, RT_FUSE_DYN where a dim is not a constant; false when the
 * rank or the dims are unknown. */
static bool group_dims(const ir_sinfo *s, int64_t *shape) {
    if (!s || s->kind != IR_SINFO_TENSOR || s->ndim < 0 || s->ndim > RT_MAX_NDIM) return false;
    if (s->ndim > 0 && !s->dims) return false;
    for (int32_t i = 0; i < s->ndim; i++) {
        int64_t v;
        if (!s->dims[i]) return false;
        shape[i] = ir_prim_is_int(s->dims[i], &v) ? v : RT_FUSE_DYN;
    }
    return true;
}

/* layer_norm / rms_norm: axes must be the trailing dims (as the reference kernel requires), and
 * gamma / beta the trailing dims' shape (leading 1s of it may be dropped), so right-aligned
 * broadcast indexing reads them as the kernel does. */
static uint32_t norm_mask(const ir_call *call, int32_t nd) {
    int64_t ax[RT_MAX_NDIM], xs[RT_MAX_NDIM], ps[RT_MAX_NDIM];
    int n = ir_attrs_get_ints(call->attrs, "axes", ax, RT_MAX_NDIM);
    if (n < 0) {
        ax[0] = -1;
        n = 1;
    }
    if (n <= 0 || n > nd || !group_dims(call->args[0]->sinfo, xs)) return 0;
    uint32_t mask = 0;
    for (int i = 0; i < n; i++) {
        if (!norm_axis(&ax[i], nd) || (mask >> ax[i] & 1)) return 0;
        mask |= 1u << ax[i];
    }
    if (mask != ((1u << nd) - 1) - ((1u << (nd - n)) - 1)) return 0;
    int64_t numel = 1;
    for (int32_t d = nd - n; d < nd; d++) {
        if (xs[d] == RT_FUSE_DYN) return 0; /* the normalized dims are static (leading ones may not be) */
        numel *= xs[d];
    }
    for (uint32_t a = 1; a < call->nargs; a++) {
        const ir_sinfo *p = call->args[a]->sinfo;
        if (!p || p->kind != IR_SINFO_TENSOR || p->ndim > n || !ir_sinfo_static_shape(p, ps)) return 0;
        int64_t pn = 1;
        for (int32_t k = 0; k < p->ndim; k++) {
            if (ps[k] != xs[nd - p->ndim + k]) return 0;
            pn *= ps[k];
        }
        if (pn != numel) return 0;
    }
    return mask;
}

rt_fuse_tail rt_fuse_tail_of(const ir_call *call, uint32_t *mask) {
    *mask = 0;
    if (call->callee->kind != IR_OP || call->nargs < 1) return RT_TAIL_NONE;
    const ir_op_def *def = ((const ir_op *)call->callee)->def;
    ir_op_id id = ir_op_def_id(def);
    rt_fuse_tail kind = id != IR_OP_NONE ? tail_table[id] : RT_TAIL_NONE;
    const ir_sinfo *s = call->args[0]->sinfo;
    if (kind == RT_TAIL_NONE || !s || s->kind != IR_SINFO_TENSOR || s->ndim <= 0 || s->ndim > RT_MAX_NDIM)
        return RT_TAIL_NONE;
    bool norm = kind == RT_TAIL_LAYER_NORM || kind == RT_TAIL_RMS_NORM;
    if (call->nargs != (norm ? (kind == RT_TAIL_LAYER_NORM ? 3u : 2u) : 1u)) return RT_TAIL_NONE;
    int32_t nd = s->ndim;
    const ir_attr *ax = ir_attrs_get(call->attrs, "axis");
    if (norm) {
        *mask = norm_mask(call, nd);
    } else if (id == IR_OP_ADAPTIVE_AVG_POOL2D) {
        *mask = global_pool_mask(call, nd);
    } else if (kind == RT_TAIL_SOFTMAX || kind == RT_TAIL_LOG_SOFTMAX) {
        int64_t a = ax && ax->kind == IR_ATTR_INT ? ax->u.i : -1;
        if (norm_axis(&a, nd)) *mask = 1u << a;
    } else if (!ax || ax->kind == IR_ATTR_NONE) {
        *mask = (1u << nd) - 1;
    } else if (ax->kind == IR_ATTR_ARRAY) {
        for (uint32_t k = 0; k < ax->u.arr.n; k++) {
            int64_t a = ax->u.arr.items[k].kind == IR_ATTR_INT ? ax->u.arr.items[k].u.i : INT64_MAX;
            if (!norm_axis(&a, nd)) {
                *mask = 0;
                break;
            }
            *mask |= 1u << a;
        }
    }
    return *mask ? kind : RT_TAIL_NONE;
}

/* A float32 tensor of known rank (symbolic dims allowed: the group's kernel then takes its
 * extents at run time). */
static bool f32_known_rank(const ir_sinfo *s) {
    return s && s->kind == IR_SINFO_TENSOR && ir_dtype_eq(s->dtype, IR_DTYPE_F32) &&
           group_dims(s, (int64_t[RT_MAX_NDIM]){0});
}

/* "relax.nn.relu" -> "relu" into the name buffer. */
static void append_ident(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    for (; *s && n + 1 < cap; s++) buf[n++] = isalnum((unsigned char)*s) ? *s : '_';
    buf[n] = '\0';
}

static const char *group_name(ir_ctx_t *ctx, const rt_fuse_group *g, uint32_t idx) {
    char buf[160] = "fused";
    for (uint32_t i = 0; i < g->nnodes && i < 5; i++) {
        const char *nm = g->nodes[i].op->name;
        const char *dot = strrchr(nm, '.');
        append_ident(buf, sizeof buf, "_");
        append_ident(buf, sizeof buf, dot ? dot + 1 : nm);
    }
    if (g->nnodes > 5) append_ident(buf, sizeof buf, "_more");
    if (g->span) {
        append_ident(buf, sizeof buf, "_");
        for (uint32_t i = 0; i < g->span->n && i < 3 && strlen(buf) < 100; i++) {
            append_ident(buf, sizeof buf, "_");
            append_ident(buf, sizeof buf, g->span->locs[i].source);
        }
    }
    return ir_internf(ctx, "%s_%u", buf, idx);
}

/* Forms fused groups over the bindings: a lowerable call joins the group whose tail it consumes
 * when that tail has no other use; it runs where its last member stands. */
gr_status rt_fuse_form(rt_fuse_form_in *pb, const rt_host_lowering *h) {
    int32_t *tail = gr_xmalloc(sizeof(int32_t) * (pb->nb + 1)); /* group -> tail binding */
    uint32_t ng = 0;
    for (uint32_t i = 0; i < pb->nb; i++) {
        pb->group_of[i] = -1;
        const ir_binding *b = pb->b[i];
        if (!h || b->match_sinfo || b->value->kind != IR_CALL) continue;
        const ir_call *c = (const ir_call *)b->value;
        if (c->callee->kind != IR_OP) continue;
        const ir_op_def *def = ((const ir_op *)c->callee)->def;
        uint32_t mask;
        bool red = rt_fuse_tail_of(c, &mask) != RT_TAIL_NONE;
        if ((!(def->flags & IR_OPF_ELEMWISE) && !red) || c->nargs > RT_FUSE_MAX_ARGS) continue;
        if (!f32_known_rank(c->base.sinfo) || !f32_known_rank(b->var->base.sinfo)) continue;
        bool ok = true;
        for (uint32_t a = 0; a < c->nargs && ok; a++) {
            const ir_expr *e = c->args[a];
            if (e->kind == IR_PRIMVAL) ok = a > 0;
            else ok = (ir_is_var(e) || e->kind == IR_CONST) && f32_known_rank(e->sinfo);
        }
        if (!ok || !h->can_lower(h->self, c)) continue;
        int32_t g = -1;
        for (uint32_t a = 0; a < c->nargs && g < 0; a++) {
            uint64_t s;
            if (!ir_is_var(c->args[a]) || !gr_map_get(pb->index_of, GR_MAP_PTR(c->args[a]), &s))
                continue;
            uint32_t j = (uint32_t)(s - 1);
            if (pb->uses[j] != 1) continue;
            if (pb->group_of[j] >= 0 && tail[pb->group_of[j]] == (int32_t)j) g = pb->group_of[j];
        }
        if (g < 0) g = (int32_t)ng++;  /* a tail on its own is a group too */
        /* other args that end open groups used only here: those groups merge into this one (a
         * DAG, e.g. add(sigmoid(a), relu(b))); the group runs where its last member stands */
        for (uint32_t a = 0; a < c->nargs; a++) {
            uint64_t s;
            if (!ir_is_var(c->args[a]) || !gr_map_get(pb->index_of, GR_MAP_PTR(c->args[a]), &s))
                continue;
            uint32_t j0 = (uint32_t)(s - 1);
            if (pb->uses[j0] != 1) continue;
            int32_t g2 = pb->group_of[j0];
            if (g2 < 0 || g2 == g || tail[g2] != (int32_t)j0) continue;
            for (uint32_t j = 0; j < i; j++)
                if (pb->group_of[j] == g2) pb->group_of[j] = g;
            tail[g2] = -1;
        }
        tail[g] = red ? -1 : (int32_t)i; /* nothing joins after a tail */
        pb->group_of[i] = g;
    }
    /* build descriptors */
    /* renumber densely (merged groups leave holes) */
    int32_t *dense = gr_xmalloc(sizeof(int32_t) * (ng + 1));
    for (uint32_t g = 0; g < ng; g++) dense[g] = -1;
    uint32_t ndense = 0;
    for (uint32_t i = 0; i < pb->nb; i++)
        if (pb->group_of[i] >= 0 && dense[pb->group_of[i]] < 0) dense[pb->group_of[i]] = (int32_t)ndense++;
    for (uint32_t i = 0; i < pb->nb; i++)
        if (pb->group_of[i] >= 0) pb->group_of[i] = dense[pb->group_of[i]];
    free(dense);
    ng = ndense;
    for (uint32_t g = 0; g < ng; g++) {
        rt_fuse_group *fg = IR_NEW(pb->ctx, rt_fuse_group);
        uint32_t nmem = 0;
        for (uint32_t i = 0; i < pb->nb; i++) nmem += pb->group_of[i] == (int32_t)g;
        fg->nodes = IR_NEW_ARRAY(pb->ctx, rt_fuse_node, nmem);
        const ir_expr **inputs = gr_xmalloc(sizeof(void *) * nmem * RT_FUSE_MAX_ARGS);
        uint32_t *member = gr_xmalloc(sizeof(uint32_t) * nmem);
        const ir_span **spans = gr_xmalloc(sizeof(void *) * nmem);
        uint32_t nin = 0;
        for (uint32_t i = 0; i < pb->nb; i++) {
            if (pb->group_of[i] != (int32_t)g) continue;
            const ir_call *c = (const ir_call *)pb->b[i]->value;
            rt_fuse_node *nd = &fg->nodes[fg->nnodes];
            nd->op = ((const ir_op *)c->callee)->def;
            nd->attrs = c->attrs;
            nd->nargs = c->nargs;
            for (uint32_t a = 0; a < c->nargs; a++) {
                const ir_expr *e = c->args[a];
                if (e->kind == IR_PRIMVAL) {
                    const ir_primval *pv = (const ir_primval *)e;
                    int64_t iv = 0;
                    nd->args[a] = RT_FUSE_SCALAR;
                    nd->scalars[a] = pv->value ? (ir_prim_is_int(pv->value, &iv), (double)iv) : pv->fvalue;
                    continue;
                }
                int32_t ref = INT32_MAX;
                for (uint32_t k = 0; k < fg->nnodes; k++)
                    if ((const ir_expr *)pb->b[member[k]]->var == e) ref = -(int32_t)k - 1;
                if (ref == INT32_MAX) {
                    uint32_t k = 0;
                    while (k < nin && inputs[k] != e) k++;
                    if (k == nin) inputs[nin++] = e;
                    ref = (int32_t)k;
                }
                nd->args[a] = ref;
            }
            spans[fg->nnodes] = pb->b[i]->value->span ? pb->b[i]->value->span : pb->b[i]->var->base.span;
            member[fg->nnodes++] = i;
        }
        fg->span = ir_span_seq(pb->ctx, spans, fg->nnodes);
        fg->nin = nin;
        fg->in_ndim = IR_NEW_ARRAY(pb->ctx, int32_t, nin ? nin : 1);
        fg->in_shape = ir_alloc(pb->ctx, sizeof(*fg->in_shape) * (nin ? nin : 1));
        for (uint32_t k = 0; k < nin; k++) {
            fg->in_ndim[k] = inputs[k]->sinfo->ndim;
            group_dims(inputs[k]->sinfo, fg->in_shape[k]);
        }
        const ir_sinfo *os = pb->b[member[fg->nnodes - 1]]->var->base.sinfo;
        fg->ndim = os->ndim;
        group_dims(os, fg->shape);
        fg->out_sinfo = os;
        const ir_call *last = (const ir_call *)pb->b[member[fg->nnodes - 1]]->value;
        const ir_sinfo *is = os;
        fg->tail = (uint8_t)rt_fuse_tail_of(last, &fg->reduce_mask);
        if (fg->tail != RT_TAIL_NONE) is = last->args[0]->sinfo;
        fg->iter_ndim = is->ndim;
        group_dims(is, fg->iter_shape);
        fg->dyn = !ir_sinfo_static_shape(os, NULL) || !ir_sinfo_static_shape(is, NULL);
        for (uint32_t k = 0; k < nin; k++) fg->dyn |= !ir_sinfo_static_shape(inputs[k]->sinfo, NULL);
        fg->name = group_name(pb->ctx, fg, g);
        gr_vec_push(&pb->groups, fg);
        gr_vec_push(&pb->inputs, inputs); /* the caller compiles them into the instruction */
        pb->nfused_ops += fg->nnodes;
        free(member);
        free(spans);
    }
    free(tail);
    return GR_OK;
}


int32_t rt_fuse_loop_order(const rt_fuse_group *g, int32_t *order) {
    int32_t n = 0;
    for (int32_t d = 0; d < g->iter_ndim; d++)
        if (!(g->reduce_mask >> d & 1)) order[n++] = d;
    int32_t nkept = n;
    for (int32_t d = 0; d < g->iter_ndim; d++)
        if (g->reduce_mask >> d & 1) order[n++] = d;
    return nkept;
}

/* Levels [lo, hi) of an args buffer (ntab tables of R: extents, then strides): extent-1 levels
 * go, a level merges into the next inner one when every stride chains (s_outer == s_inner *
 * ext_inner), and what is left moves innermost, the outer levels padded with extent 1. */
static void collapse(int64_t *args, int32_t R, uint32_t ntab, int32_t lo, int32_t hi) {
    int64_t ext[RT_MAX_NDIM], st[RT_FUSE_MAX_ARGS * 8 + 2][RT_MAX_NDIM];
    int64_t (*sv)[RT_MAX_NDIM] = ntab - 1 <= sizeof st / sizeof st[0] ? st : gr_xmalloc(sizeof(*sv) * (ntab - 1));
    int32_t n = 0;
    for (int32_t l = lo; l < hi; l++) {
        int64_t e = args[l];
        if (e == 1) continue;
        bool merge = n > 0;
        for (uint32_t t = 1; t < ntab && merge; t++)
            merge = sv[t - 1][n - 1] == args[t * R + l] * e;
        if (merge) {
            ext[n - 1] *= e;
            for (uint32_t t = 1; t < ntab; t++) sv[t - 1][n - 1] = args[t * R + l];
            continue;
        }
        ext[n] = e;
        for (uint32_t t = 1; t < ntab; t++) sv[t - 1][n] = args[t * R + l];
        n++;
    }
    int32_t pad = hi - lo - n;
    for (int32_t l = lo; l < hi; l++) {
        int32_t j = l - lo - pad;
        args[l] = j < 0 ? 1 : ext[j];
        for (uint32_t t = 1; t < ntab; t++) args[t * R + l] = j < 0 ? 0 : sv[t - 1][j];
    }
    if (sv != st) free(sv);
}

gr_status rt_fuse_dyn_args(const rt_fuse_group *g, const int64_t *const *ins, int64_t *args,
                           int64_t *out_shape, int64_t *numel, gr_diag *diag) {
    int32_t R = g->iter_ndim, order[RT_MAX_NDIM];
    int64_t it[RT_MAX_NDIM];
    for (int32_t d = 0; d < R; d++) it[d] = 1;
    /* the iteration shape: the inputs broadcast (the tail's input is the broadcast of the
     * prefix's inputs; gamma / beta index its trailing axes) */
    for (uint32_t k = 0; k < g->nin; k++)
        for (int32_t j = 0; j < g->in_ndim[k]; j++) {
            int64_t v = ins[k][j], want = g->in_shape[k][j];
            int32_t d = R - g->in_ndim[k] + j;
            if (v < 0 || (want != RT_FUSE_DYN && v != want) || d < 0)
                return gr_diag_set(diag, GR_ERR_RUNTIME, "%s: input %u dim %d is %lld, the group wants %lld",
                                   g->name, k, j, (long long)v, (long long)want);
            if (v == 1) continue;
            if (it[d] != 1 && it[d] != v)
                return gr_diag_set(diag, GR_ERR_RUNTIME, "%s: input %u dim %d (%lld) does not broadcast to %lld",
                                   g->name, k, j, (long long)v, (long long)it[d]);
            it[d] = v;
        }
    for (int32_t d = 0; d < R; d++)
        if (g->iter_shape[d] != RT_FUSE_DYN && it[d] != g->iter_shape[d])
            return gr_diag_set(diag, GR_ERR_RUNTIME, "%s: axis %d is %lld, the group wants %lld", g->name,
                               d, (long long)it[d], (long long)g->iter_shape[d]);
    /* the output: iter_shape, less the reduced axes of a reduction (1s when it keeps them) */
    bool row = g->tail == RT_TAIL_SOFTMAX || g->tail == RT_TAIL_LOG_SOFTMAX ||
               g->tail == RT_TAIL_LAYER_NORM || g->tail == RT_TAIL_RMS_NORM;
    bool keep = g->ndim == R;
    int32_t no = 0;
    for (int32_t d = 0; d < R; d++) {
        bool red = !row && (g->reduce_mask >> d & 1);
        if (!red) out_shape[no++] = it[d];
        else if (keep) out_shape[no++] = 1;
    }
    if (no != g->ndim)
        return gr_diag_set(diag, GR_ERR_RUNTIME, "%s: output rank %d, the group wants %d", g->name, no, g->ndim);
    int32_t nkept = rt_fuse_loop_order(g, order);
    int64_t os[RT_MAX_NDIM], s = 1, n = 1;
    for (int32_t d = R - 1; d >= 0; d--) {
        bool red = !row && (g->reduce_mask >> d & 1);
        os[d] = red ? 0 : s;
        if (!red) s *= it[d];
        n *= it[d];
    }
    for (int32_t l = 0; l < R; l++) {
        args[l] = it[order[l]];
        args[R + l] = os[order[l]];
    }
    for (uint32_t k = 0; k < g->nin; k++) {
        int64_t st[RT_MAX_NDIM], acc = 1;
        for (int32_t d = R - 1; d >= 0; d--) {
            int32_t j = d - (R - g->in_ndim[k]);
            int64_t dim = j >= 0 ? ins[k][j] : 1;
            st[d] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
        for (int32_t l = 0; l < R; l++) args[(2 + k) * R + l] = st[order[l]];
    }
    /* the levels of each part (kept, reduced) are interchangeable: collapse them as the static
     * nests do, innermost last, and pad the outer levels with extent 1 */
    collapse(args, R, 2 + g->nin, 0, nkept);
    collapse(args, R, 2 + g->nin, nkept, R);
    *numel = n;
    return GR_OK;
}

void rt_fuse_form_free(rt_fuse_form_in *pb) {
    for (uint32_t g = 0; g < pb->inputs.len; g++) free(pb->inputs.data[g]);
    gr_vec_free(&pb->inputs);
    gr_vec_free(&pb->groups);
}
