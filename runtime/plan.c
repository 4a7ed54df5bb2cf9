/* The planned executor (runtime/plan.h): flat instruction list, fused host groups, static
 * memory plan. */
#include "runtime/plan.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/op.h"
#include "runtime/kernels.h"
#include "runtime/module.h"

enum { OPD_SLOT, OPD_CONST, OPD_TUPLE };
typedef struct px_opd {
    uint8_t kind;
    uint32_t slot;
    rt_value cval;                 /* CONST: owned by the plan */
    uint32_t n;                    /* TUPLE */
    struct px_opd *items;
    uint32_t soff;                 /* TUPLE: its n borrowed items in px_state.scratch */
} px_opd;

enum { INS_KERNEL, INS_HOST, INS_EXTERN, INS_TUPLE, INS_TGI, INS_MOVE };
static const char *const ins_kind_name[] = {"op", "host", "extern", "other", "other", "other"};

typedef struct px_instr {
    uint8_t kind;
    uint32_t dst;                  /* slot */
    const char *name;              /* op text name, group symbol or extern symbol */
    const char *var;
    const ir_span *span;
    uint32_t nargs;
    px_opd *args;
    /* KERNEL */
    rt_kernel_fn kernel;
    rt_kernel_call call;
    /* HOST */
    const rt_fuse_group *group;
    rt_host_fn fn;
    /* EXTERN */
    rt_module *mod;
    uint32_t nout;
    bool out_tuple;
    DLDataType *out_dtype;
    int32_t *out_ndim;
    int64_t (*out_shape)[RT_MAX_NDIM];
    /* TGI */
    int32_t index;
    /* slots whose last use is this instruction */
    uint32_t nfree;
    uint32_t *frees;
} px_instr;

typedef struct px_slot {
    const ir_var *var;
    const ir_sinfo *sinfo;
    uint32_t def, end;            /* instruction interval; end == ninstr: escapes to the result */
    int32_t buf;                  /* planned buffer index, -1 when heap */
} px_slot;

/* The execution state of one run: everything a run writes. The rt_px itself (instructions,
 * plan, constants, compiled code) is read-only while runs are in flight, so runs on different
 * states may go on concurrently. States are pooled: a run takes one (or makes one) and gives it
 * back, so a model run from N threads keeps at most N arenas. */
typedef struct px_state {
    struct px_state *next;        /* the pool's free list */
    rt_value *values;             /* nslots */
    void *arena;                  /* arena_bytes */
    rt_tensor **views;            /* nslots: planned slots' tensors over this arena */
    rt_value *scratch;            /* nscratch: tuple operands' borrowed items */
    rt_value *argv;               /* max_args: a kernel's arguments */
    void **bufs;                  /* max_args + 1: a host kernel's buffers */
} px_state;

struct rt_px {
    const ir_module *m;
    const ir_func *fn;
    ir_ctx_t *ctx;
    const rt_host_lowering *host;
    uint32_t nparams, nslots, ninstr;
    px_slot *slots;
    px_instr *ins;
    px_opd result;
    uint32_t nscratch, max_args;
    GR_VEC(rt_fuse_group *) groups;
    uint32_t nfused_ops;
    /* memory plan */
    uint32_t nbuf;
    size_t *buf_off, *buf_size;
    uint32_t *buf_slot;
    size_t arena_bytes, sum_bytes;
    pthread_mutex_t pool_lock;
    px_state *pool;
    rt_exec_profile_fn prof;
    void *prof_user;
};

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

/* ---------------- compile ---------------- */

typedef struct px_build {
    rt_px *x;
    gr_diag *diag;
    gr_map slot_of;               /* var -> slot + 1 */
    uint32_t nb;
    const ir_binding **b;         /* bindings in order */
    uint32_t *uses;               /* per slot */
    int32_t *group_of;            /* per binding: group index or -1 */
    GR_VEC(px_instr) ins;
} px_build;

static const char *span_layer(const ir_span *s) { return s && s->n ? s->locs[0].source : NULL; }

static gr_status bfail(px_build *pb, const ir_span *span, gr_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gr_status bfail(px_build *pb, const ir_span *span, gr_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gr_status st = gr_diag_vset(pb->diag, code, fmt, ap);
    va_end(ap);
    const char *layer = span_layer(span);
    if (layer) gr_diag_set_layer(pb->diag, layer);
    return st;
}

static void count_uses(px_build *pb, const ir_expr *e) {
    uint64_t s;
    if (ir_is_var(e)) {
        if (gr_map_get(&pb->slot_of, GR_MAP_PTR(e), &s)) pb->uses[s - 1]++;
    } else if (e->kind == IR_TUPLE) {
        const ir_tuple *t = (const ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) count_uses(pb, t->fields[i]);
    } else if (e->kind == IR_CALL) {
        const ir_call *c = (const ir_call *)e;
        for (uint32_t i = 0; i < c->nargs; i++) count_uses(pb, c->args[i]);
    } else if (e->kind == IR_TGI) {
        count_uses(pb, ((const ir_tgi *)e)->tuple);
    }
}

static bool static_f32(const ir_sinfo *s) {
    return s && s->kind == IR_SINFO_TENSOR && ir_dtype_eq(s->dtype, IR_DTYPE_F32) && s->ndim >= 0 &&
           s->ndim <= RT_MAX_NDIM && ir_sinfo_static_shape(s, (int64_t[RT_MAX_NDIM]){0});
}

static gr_status compile_opd(px_build *pb, const ir_expr *e, px_opd *o, const ir_span *span) {
    memset(o, 0, sizeof *o);
    uint64_t s;
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR:
        if (!gr_map_get(&pb->slot_of, GR_MAP_PTR(e), &s))
            return bfail(pb, span, GR_ERR_UNSUPPORTED, "var '%s' is not defined before its use",
                         ((const ir_var *)e)->name);
        o->kind = OPD_SLOT;
        o->slot = (uint32_t)(s - 1);
        return GR_OK;
    case IR_CONST:
        o->kind = OPD_CONST;
        o->cval = rt_value_tensor(rt_tensor_retain(((const ir_const *)e)->data));
        return GR_OK;
    case IR_SHAPE: {
        const ir_shape_expr *se = (const ir_shape_expr *)e;
        if (se->n > RT_MAX_NDIM)
            return bfail(pb, span, GR_ERR_UNSUPPORTED, "shape of rank %u", se->n);
        o->kind = OPD_CONST;
        o->cval.kind = RT_VAL_SHAPE;
        o->cval.u.shape.ndim = (int32_t)se->n;
        for (uint32_t i = 0; i < se->n; i++)
            if (!ir_prim_is_int(se->dims[i], &o->cval.u.shape.dims[i]))
                return bfail(pb, span, GR_ERR_UNSUPPORTED,
                             "symbolic shape value (the planned executor runs static shapes only)");
        return GR_OK;
    }
    case IR_PRIMVAL: {
        const ir_primval *pv = (const ir_primval *)e;
        o->kind = OPD_CONST;
        if (!pv->value) {
            o->cval.kind = RT_VAL_FLOAT;
            o->cval.u.f = pv->fvalue;
        } else if (ir_prim_is_int(pv->value, &o->cval.u.i)) {
            o->cval.kind = RT_VAL_INT;
        } else {
            return bfail(pb, span, GR_ERR_UNSUPPORTED, "symbolic prim value");
        }
        return GR_OK;
    }
    case IR_STR:
        o->kind = OPD_CONST;
        o->cval.kind = RT_VAL_STR;
        o->cval.u.s = ((const ir_str *)e)->value;
        return GR_OK;
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        o->kind = OPD_TUPLE;
        o->n = t->n;
        o->items = gr_xcalloc(t->n ? t->n : 1, sizeof(px_opd));
        o->soff = pb->x->nscratch;
        pb->x->nscratch += t->n;
        for (uint32_t i = 0; i < t->n; i++) {
            gr_status st = compile_opd(pb, t->fields[i], &o->items[i], span);
            if (st) return st;
        }
        return GR_OK;
    }
    default:
        return bfail(pb, span, GR_ERR_UNSUPPORTED,
                     "a %s argument (the planned executor needs A-normal form)",
                     ir_expr_kind_name((ir_expr_kind)e->kind));
    }
}

static void opd_free(px_opd *o) {
    if (o->kind == OPD_CONST) rt_value_clear(&o->cval);
    if (o->kind == OPD_TUPLE) {
        for (uint32_t i = 0; i < o->n; i++) opd_free(&o->items[i]);
        free(o->items);
    }
}

/* Borrowed view of an operand's value (no references taken). */
static rt_value opd_view(const px_state *st, const px_opd *o) {
    if (o->kind == OPD_SLOT) return st->values[o->slot];
    if (o->kind == OPD_CONST) return o->cval;
    rt_value *items = st->scratch + o->soff;
    for (uint32_t i = 0; i < o->n; i++) items[i] = opd_view(st, &o->items[i]);
    rt_value v = {.kind = RT_VAL_TUPLE};
    v.u.tuple.n = o->n;
    v.u.tuple.items = items;
    return v;
}

static void opd_uses(const px_opd *o, uint32_t at, uint32_t *end) {
    if (o->kind == OPD_SLOT && end[o->slot] < at) end[o->slot] = at;
    if (o->kind == OPD_TUPLE)
        for (uint32_t i = 0; i < o->n; i++) opd_uses(&o->items[i], at, end);
}

static void opd_alias(const px_opd *o, uint32_t dst_end, uint32_t *end) {
    if (o->kind == OPD_SLOT && end[o->slot] < dst_end) end[o->slot] = dst_end;
    if (o->kind == OPD_TUPLE)
        for (uint32_t i = 0; i < o->n; i++) opd_alias(&o->items[i], dst_end, end);
}

static px_instr *push(px_build *pb, uint8_t kind, uint32_t dst, const ir_binding *b) {
    px_instr in;
    memset(&in, 0, sizeof in);
    in.kind = kind;
    in.dst = dst;
    in.var = b->var->name ? b->var->name : "";
    in.span = b->value->span ? b->value->span : b->var->base.span;
    gr_vec_push(&pb->ins, in);
    return &pb->ins.data[pb->ins.len - 1];
}

/* "relax.nn.relu" -> "relu" into the name buffer. */
static void append_ident(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    for (; *s && n + 1 < cap; s++) buf[n++] = isalnum((unsigned char)*s) ? *s : '_';
    buf[n] = '\0';
}

static const char *group_name(rt_px *x, const rt_fuse_group *g, uint32_t idx) {
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
    return ir_internf(x->ctx, "%s_%u", buf, idx);
}

/* ---------------- group tails ---------------- */

typedef struct tail_row {
    const char *op;
    rt_fuse_tail kind;
} tail_row;
static const tail_row tail_table[] = {
    {"relax.sum", RT_TAIL_SUM},
    {"relax.mean", RT_TAIL_MEAN},
    {"relax.max", RT_TAIL_MAX},
    {"relax.min", RT_TAIL_MIN},
    {"relax.nn.softmax", RT_TAIL_SOFTMAX},
    {"relax.nn.log_softmax", RT_TAIL_LOG_SOFTMAX},
    {"relax.nn.adaptive_avg_pool2d", RT_TAIL_MEAN},
    {"relax.nn.layer_norm", RT_TAIL_LAYER_NORM},
    {"relax.nn.rms_norm", RT_TAIL_RMS_NORM},
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
    if (n <= 0 || n > nd || !ir_sinfo_static_shape(call->args[0]->sinfo, xs)) return 0;
    uint32_t mask = 0;
    for (int i = 0; i < n; i++) {
        if (!norm_axis(&ax[i], nd) || (mask >> ax[i] & 1)) return 0;
        mask |= 1u << ax[i];
    }
    if (mask != ((1u << nd) - 1) - ((1u << (nd - n)) - 1)) return 0;
    int64_t numel = 1;
    for (int32_t d = nd - n; d < nd; d++) numel *= xs[d];
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
    const tail_row *row = NULL;
    for (size_t i = 0; i < sizeof tail_table / sizeof tail_table[0] && !row; i++)
        if (strcmp(tail_table[i].op, def->name) == 0) row = &tail_table[i];
    const ir_sinfo *s = call->args[0]->sinfo;
    if (!row || !s || s->kind != IR_SINFO_TENSOR || s->ndim <= 0 || s->ndim > RT_MAX_NDIM)
        return RT_TAIL_NONE;
    bool norm = row->kind == RT_TAIL_LAYER_NORM || row->kind == RT_TAIL_RMS_NORM;
    if (call->nargs != (norm ? (row->kind == RT_TAIL_LAYER_NORM ? 3u : 2u) : 1u)) return RT_TAIL_NONE;
    int32_t nd = s->ndim;
    const ir_attr *ax = ir_attrs_get(call->attrs, "axis");
    if (norm) {
        *mask = norm_mask(call, nd);
    } else if (strcmp(def->name, "relax.nn.adaptive_avg_pool2d") == 0) {
        *mask = global_pool_mask(call, nd);
    } else if (row->kind == RT_TAIL_SOFTMAX || row->kind == RT_TAIL_LOG_SOFTMAX) {
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
    return *mask ? row->kind : RT_TAIL_NONE;
}

/* Forms fused groups over the bindings: a lowerable call joins the group whose tail it consumes
 * when that tail has no other use; it runs where its last member stands. */
static gr_status form_groups(px_build *pb) {
    rt_px *x = pb->x;
    const rt_host_lowering *h = x->host;
    int32_t *tail = gr_xmalloc(sizeof(int32_t) * (pb->nb + 1)); /* group -> tail binding */
    uint32_t ng = 0;
    for (uint32_t i = 0; i < pb->nb; i++) {
        pb->group_of[i] = -1;
        const ir_binding *b = pb->b[i];
        if (!h || b->value->kind != IR_CALL) continue;
        const ir_call *c = (const ir_call *)b->value;
        if (c->callee->kind != IR_OP) continue;
        const ir_op_def *def = ((const ir_op *)c->callee)->def;
        uint32_t mask;
        bool red = rt_fuse_tail_of(c, &mask) != RT_TAIL_NONE;
        if ((!(def->flags & IR_OPF_ELEMWISE) && !red) || c->nargs > RT_FUSE_MAX_ARGS) continue;
        if (!static_f32(c->base.sinfo) || !static_f32(b->var->base.sinfo)) continue;
        bool ok = true;
        for (uint32_t a = 0; a < c->nargs && ok; a++) {
            const ir_expr *e = c->args[a];
            if (e->kind == IR_PRIMVAL) ok = a > 0;
            else ok = (ir_is_var(e) || e->kind == IR_CONST) && static_f32(e->sinfo);
        }
        if (!ok || !h->can_lower(h->self, c)) continue;
        int32_t g = -1;
        for (uint32_t a = 0; a < c->nargs && g < 0; a++) {
            uint64_t s;
            if (!ir_is_var(c->args[a]) || !gr_map_get(&pb->slot_of, GR_MAP_PTR(c->args[a]), &s))
                continue;
            uint32_t slot = (uint32_t)(s - 1);
            if (slot < x->nparams || pb->uses[slot] != 1) continue;
            uint32_t j = slot - x->nparams;
            if (pb->group_of[j] >= 0 && tail[pb->group_of[j]] == (int32_t)j) g = pb->group_of[j];
        }
        if (g < 0) g = (int32_t)ng++;  /* a tail on its own is a group too */
        /* other args that end open groups used only here: those groups merge into this one (a
         * DAG, e.g. add(sigmoid(a), relu(b))); the group runs where its last member stands */
        for (uint32_t a = 0; a < c->nargs; a++) {
            uint64_t s;
            if (!ir_is_var(c->args[a]) || !gr_map_get(&pb->slot_of, GR_MAP_PTR(c->args[a]), &s))
                continue;
            uint32_t slot = (uint32_t)(s - 1);
            if (slot < x->nparams || pb->uses[slot] != 1) continue;
            int32_t g2 = pb->group_of[slot - x->nparams];
            if (g2 < 0 || g2 == g || tail[g2] != (int32_t)(slot - x->nparams)) continue;
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
        rt_fuse_group *fg = IR_NEW(x->ctx, rt_fuse_group);
        uint32_t nmem = 0;
        for (uint32_t i = 0; i < pb->nb; i++) nmem += pb->group_of[i] == (int32_t)g;
        fg->nodes = IR_NEW_ARRAY(x->ctx, rt_fuse_node, nmem);
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
        fg->span = ir_span_seq(x->ctx, spans, fg->nnodes);
        fg->nin = nin;
        fg->in_ndim = IR_NEW_ARRAY(x->ctx, int32_t, nin ? nin : 1);
        fg->in_shape = ir_alloc(x->ctx, sizeof(*fg->in_shape) * (nin ? nin : 1));
        for (uint32_t k = 0; k < nin; k++) {
            fg->in_ndim[k] = inputs[k]->sinfo->ndim;
            ir_sinfo_static_shape(inputs[k]->sinfo, fg->in_shape[k]);
        }
        const ir_sinfo *os = pb->b[member[fg->nnodes - 1]]->var->base.sinfo;
        fg->ndim = os->ndim;
        ir_sinfo_static_shape(os, fg->shape);
        const ir_call *last = (const ir_call *)pb->b[member[fg->nnodes - 1]]->value;
        const ir_sinfo *is = os;
        fg->tail = (uint8_t)rt_fuse_tail_of(last, &fg->reduce_mask);
        if (fg->tail != RT_TAIL_NONE) is = last->args[0]->sinfo;
        fg->iter_ndim = is->ndim;
        ir_sinfo_static_shape(is, fg->iter_shape);
        fg->name = group_name(x, fg, g);
        gr_vec_push(&x->groups, fg);
        x->nfused_ops += fg->nnodes;
        /* the input expressions are recorded in the instruction by the caller: keep them */
        free(member);
        free(spans);
        /* stash inputs on the tail binding's slot via the map (group g -> inputs) */
        gr_map_put(&pb->slot_of, ((uint64_t)1 << 63) | g, GR_MAP_PTR(inputs));
    }
    free(tail);
    return GR_OK;
}

static gr_status compile_binding(px_build *pb, uint32_t i) {
    rt_px *x = pb->x;
    const ir_binding *b = pb->b[i];
    uint32_t dst = x->nparams + i;
    const ir_expr *v = b->value;
    const ir_span *span = v->span ? v->span : b->var->base.span;
    gr_status st;
    if (b->match_sinfo)
        return bfail(pb, span, GR_ERR_UNSUPPORTED, "match_cast binding '%s'", b->var->name);
    int32_t g = pb->group_of[i];
    if (g >= 0) {
        /* emit at the last member only */
        for (uint32_t j = i + 1; j < pb->nb; j++)
            if (pb->group_of[j] == g) return GR_OK;
        const rt_fuse_group *fg = x->groups.data[g];
        uint64_t p = 0;
        gr_map_get(&pb->slot_of, ((uint64_t)1 << 63) | (uint32_t)g, &p);
        const ir_expr **inputs = (const ir_expr **)(uintptr_t)p;
        px_instr *in = push(pb, INS_HOST, dst, b);
        in->span = fg->span;
        in->name = fg->name;
        in->group = fg;
        in->nargs = fg->nin;
        in->args = gr_xcalloc(fg->nin ? fg->nin : 1, sizeof(px_opd));
        if (x->max_args < fg->nin) x->max_args = fg->nin;
        for (uint32_t k = 0; k < fg->nin; k++)
            if ((st = compile_opd(pb, inputs[k], &pb->ins.data[pb->ins.len - 1].args[k], span)))
                return st;
        return GR_OK;
    }
    if (v->kind == IR_CALL) {
        const ir_call *c = (const ir_call *)v;
        if (c->callee->kind != IR_OP)
            return bfail(pb, span, GR_ERR_UNSUPPORTED,
                         "binding '%s' calls a %s (the planned executor runs op calls and "
                         "R.call_dps_packed only)", b->var->name,
                         ir_expr_kind_name((ir_expr_kind)c->callee->kind));
        const ir_op_def *def = ((const ir_op *)c->callee)->def;
        if (strcmp(def->name, "relax.call_dps_packed") == 0) {
            if (c->nargs != 2 || c->args[0]->kind != IR_EXTERN || c->nsinfo_args < 1)
                return bfail(pb, span, GR_ERR_INVALID, "malformed R.call_dps_packed in '%s'",
                             b->var->name);
            const char *sym = ((const ir_extern *)c->args[0])->symbol;
            rt_module *mod = rt_module_find_function(x->m, sym);
            if (!mod)
                return bfail(pb, span, GR_ERR_NOT_FOUND,
                             "R.call_dps_packed: symbol '%s' is not defined by any runtime module "
                             "of external_mods", sym);
            const ir_sinfo *os = c->sinfo_args[0];
            bool tup = os->kind == IR_SINFO_TUPLE;
            uint32_t nout = tup ? os->n : 1;
            px_instr *in = push(pb, INS_EXTERN, dst, b);
            in->name = sym;
            in->mod = mod;
            in->nout = nout;
            in->out_tuple = tup;
            in->out_dtype = gr_xcalloc(nout ? nout : 1, sizeof(DLDataType));
            in->out_ndim = gr_xcalloc(nout ? nout : 1, sizeof(int32_t));
            in->out_shape = gr_xcalloc(nout ? nout : 1, sizeof(*in->out_shape));
            for (uint32_t k = 0; k < nout; k++) {
                const ir_sinfo *s = tup ? os->fields[k] : os;
                if (!s || s->kind != IR_SINFO_TENSOR || ir_dtype_is_void(s->dtype) || s->ndim < 0 ||
                    s->ndim > RT_MAX_NDIM || !ir_sinfo_static_shape(s, in->out_shape[k]))
                    return bfail(pb, span, GR_ERR_UNSUPPORTED,
                                 "R.call_dps_packed('%s'): output %u needs a static shape", sym, k);
                in->out_dtype[k] = s->dtype;
                in->out_ndim[k] = s->ndim;
            }
            in->nargs = 1;
            in->args = gr_xcalloc(1, sizeof(px_opd));
            return compile_opd(pb, c->args[1], in->args, span);
        }
        if (strcmp(def->name, "relax.call_tir") == 0) {
            char why[256];
            return bfail(pb, span, GR_ERR_UNSUPPORTED, "%s", ir_call_tir_refusal(pb->x->m, c, why, sizeof why));
        }
        rt_kernel_fn k = (def->flags & IR_OPF_CALL_LIKE) ? NULL : rt_kernel_find(def);
        if (!k)
            return bfail(pb, span, GR_ERR_UNSUPPORTED, "op %s has no reference kernel",
                         def->text_name);
        px_instr *in = push(pb, INS_KERNEL, dst, b);
        in->kernel = k;
        in->name = def->text_name;
        in->call.op = def;
        in->call.attrs = c->attrs;
        in->call.nargs = c->nargs;
        in->call.out_sinfo = c->base.sinfo;
        in->call.span = span;
        in->nargs = c->nargs;
        in->args = gr_xcalloc(c->nargs ? c->nargs : 1, sizeof(px_opd));
        if (x->max_args < c->nargs) x->max_args = c->nargs;
        for (uint32_t a = 0; a < c->nargs; a++)
            if ((st = compile_opd(pb, c->args[a], &pb->ins.data[pb->ins.len - 1].args[a], span)))
                return st;
        return GR_OK;
    }
    if (v->kind == IR_TGI) {
        const ir_tgi *t = (const ir_tgi *)v;
        px_instr *in = push(pb, INS_TGI, dst, b);
        in->name = "tuple_get";
        in->index = t->index;
        in->nargs = 1;
        in->args = gr_xcalloc(1, sizeof(px_opd));
        return compile_opd(pb, t->tuple, in->args, span);
    }
    if (v->kind == IR_IF || v->kind == IR_SEQ || v->kind == IR_FUNC)
        return bfail(pb, span, GR_ERR_UNSUPPORTED,
                     "binding '%s' holds a %s (control flow and local functions run on the "
                     "reference executor)", b->var->name, ir_expr_kind_name((ir_expr_kind)v->kind));
    px_instr *in = push(pb, v->kind == IR_TUPLE ? INS_TUPLE : INS_MOVE, dst, b);
    in->name = v->kind == IR_TUPLE ? "tuple" : "move";
    in->nargs = 1;
    in->args = gr_xcalloc(1, sizeof(px_opd));
    return compile_opd(pb, v, in->args, span);
}

static gr_status compile_func(px_build *pb) {
    rt_px *x = pb->x;
    const ir_func *fn = x->fn;
    if (!fn->body || fn->body->kind != IR_SEQ)
        return bfail(pb, fn->base.span, GR_ERR_UNSUPPORTED, "function body is not a SeqExpr");
    const ir_seq *seq = (const ir_seq *)fn->body;
    uint32_t nb = 0;
    for (uint32_t k = 0; k < seq->nblocks; k++) nb += seq->blocks[k]->n;
    pb->nb = nb;
    pb->b = gr_xcalloc(nb ? nb : 1, sizeof(void *));
    nb = 0;
    for (uint32_t k = 0; k < seq->nblocks; k++)
        for (uint32_t j = 0; j < seq->blocks[k]->n; j++) pb->b[nb++] = &seq->blocks[k]->bindings[j];
    x->nparams = fn->nparams;
    x->nslots = fn->nparams + nb;
    x->slots = gr_xcalloc(x->nslots ? x->nslots : 1, sizeof(px_slot));
    pb->uses = gr_xcalloc(x->nslots ? x->nslots : 1, sizeof(uint32_t));
    pb->group_of = gr_xcalloc(nb ? nb : 1, sizeof(int32_t));
    for (uint32_t i = 0; i < fn->nparams; i++) {
        gr_map_put(&pb->slot_of, GR_MAP_PTR(fn->params[i]), i + 1);
        x->slots[i].var = fn->params[i];
        x->slots[i].sinfo = fn->params[i]->base.sinfo;
    }
    for (uint32_t i = 0; i < nb; i++) {
        count_uses(pb, pb->b[i]->value);
        if (gr_map_get(&pb->slot_of, GR_MAP_PTR(pb->b[i]->var), NULL))
            return bfail(pb, pb->b[i]->var->base.span, GR_ERR_UNSUPPORTED,
                         "var '%s' is bound twice", pb->b[i]->var->name);
        gr_map_put(&pb->slot_of, GR_MAP_PTR(pb->b[i]->var), x->nparams + i + 1);
        x->slots[x->nparams + i].var = pb->b[i]->var;
        x->slots[x->nparams + i].sinfo = pb->b[i]->var->base.sinfo;
    }
    count_uses(pb, seq->body);
    /* the result counts as a second use so it never fuses away */
    count_uses(pb, seq->body);
    gr_status st = form_groups(pb);
    for (uint32_t i = 0; i < nb && !st; i++) st = compile_binding(pb, i);
    if (!st) st = compile_opd(pb, seq->body, &x->result, seq->base.span);
    for (uint32_t g = 0; g < x->groups.len; g++) {
        uint64_t p = 0;
        if (gr_map_get(&pb->slot_of, ((uint64_t)1 << 63) | g, &p)) free((void *)(uintptr_t)p);
    }
    x->ins = pb->ins.data;
    x->ninstr = pb->ins.len;
    pb->ins.data = NULL;
    return st;
}

/* Lifetimes, planned buffers, free lists, the arena. */
static gr_status plan_memory(rt_px *x) {
    uint32_t n = x->nslots, ni = x->ninstr;
    uint32_t *end = gr_xcalloc(n ? n : 1, sizeof(uint32_t));
    for (uint32_t s = 0; s < n; s++) x->slots[s].def = UINT32_MAX;
    for (uint32_t k = 0; k < ni; k++) {
        x->slots[x->ins[k].dst].def = k;
        end[x->ins[k].dst] = k;
        for (uint32_t a = 0; a < x->ins[k].nargs; a++) opd_uses(&x->ins[k].args[a], k, end);
    }
    opd_uses(&x->result, ni, end);
    /* tuples, indexing and moves share tensors: sources live as long as the alias */
    for (uint32_t k = ni; k-- > 0;) {
        const px_instr *in = &x->ins[k];
        if (in->kind == INS_TUPLE || in->kind == INS_TGI || in->kind == INS_MOVE)
            opd_alias(&in->args[0], end[in->dst], end);
    }
    uint32_t *nfree = gr_xcalloc(ni + 1, sizeof(uint32_t));
    x->nbuf = 0;
    for (uint32_t s = 0; s < n; s++) {
        px_slot *sl = &x->slots[s];
        sl->end = end[s];
        sl->buf = -1;
        if (s >= x->nparams && sl->def == UINT32_MAX) continue; /* fused away */
        if (s >= x->nparams && end[s] < ni) nfree[end[s]]++;
        if (s < x->nparams || end[s] >= ni) continue;
        const px_instr *di = &x->ins[sl->def];
        int64_t numel = ir_sinfo_numel(sl->sinfo);
        /* extern calls are destination-passing: a single-tensor result is planned too */
        bool plannable = di->kind == INS_KERNEL || di->kind == INS_HOST;
        if (di->kind == INS_EXTERN && !di->out_tuple && sl->sinfo && sl->sinfo->kind == IR_SINFO_TENSOR &&
            sl->sinfo->ndim == di->out_ndim[0] && ir_dtype_eq(sl->sinfo->dtype, di->out_dtype[0])) {
            int64_t vs[RT_MAX_NDIM];
            plannable = sl->sinfo->ndim <= RT_MAX_NDIM && ir_sinfo_static_shape(sl->sinfo, vs) &&
                        memcmp(vs, di->out_shape[0], sizeof(int64_t) * (size_t)sl->sinfo->ndim) == 0;
        }
        if (!plannable || numel < 0 || ir_dtype_is_void(sl->sinfo->dtype) ||
            sl->sinfo->ndim > RT_MAX_NDIM)
            continue;
        sl->buf = (int32_t)x->nbuf++;
    }
    x->buf_off = gr_xcalloc(x->nbuf + 1, sizeof(size_t));
    x->buf_size = gr_xcalloc(x->nbuf + 1, sizeof(size_t));
    x->buf_slot = gr_xcalloc(x->nbuf + 1, sizeof(uint32_t));
    uint32_t *bs = gr_xcalloc(x->nbuf + 1, sizeof(uint32_t)), *be = gr_xcalloc(x->nbuf + 1, sizeof(uint32_t));
    x->sum_bytes = 0;
    for (uint32_t s = 0; s < n; s++) {
        px_slot *sl = &x->slots[s];
        if (sl->buf < 0) continue;
        uint32_t b = (uint32_t)sl->buf;
        size_t bytes = (size_t)ir_sinfo_numel(sl->sinfo) * ir_dtype_bytes(sl->sinfo->dtype);
        x->buf_size[b] = bytes;
        x->buf_slot[b] = s;
        bs[b] = sl->def;
        be[b] = sl->end;
        x->sum_bytes += bytes;
    }
    x->arena_bytes = rt_plan_memory(x->nbuf, x->buf_size, bs, be, x->buf_off);
    free(bs);
    free(be);
    for (uint32_t k = 0; k < ni; k++) x->ins[k].frees = gr_xcalloc(nfree[k] + 1, sizeof(uint32_t));
    for (uint32_t s = x->nparams; s < n; s++) {
        px_slot *sl = &x->slots[s];
        if (sl->def == UINT32_MAX || sl->end >= ni) continue;
        px_instr *in = &x->ins[sl->end];
        in->frees[in->nfree++] = s;
    }
    free(nfree);
    free(end);
    return GR_OK;
}

/* ---------------- execution states ---------------- */

static void state_free(const rt_px *x, px_state *st) {
    if (!st) return;
    for (uint32_t s = 0; s < x->nslots; s++) {
        rt_value_clear(&st->values[s]);
        rt_tensor_release(st->views[s]);
    }
    free(st->values);
    free(st->views);
    free(st->scratch);
    free(st->argv);
    free(st->bufs);
    free(st->arena);
    free(st);
}

static gr_status state_new(const rt_px *x, px_state **out, gr_diag *diag) {
    *out = NULL;
    px_state *st = gr_xcalloc(1, sizeof *st);
    uint32_t n = x->nslots ? x->nslots : 1;
    st->values = gr_xcalloc(n, sizeof(rt_value));
    st->views = gr_xcalloc(n, sizeof(rt_tensor *));
    st->scratch = gr_xcalloc(x->nscratch + 1, sizeof(rt_value));
    st->argv = gr_xcalloc(x->max_args + 1, sizeof(rt_value));
    st->bufs = gr_xcalloc(x->max_args + 2, sizeof(void *));
    if (x->arena_bytes) {
        st->arena = aligned_alloc(64, (x->arena_bytes + 63) & ~(size_t)63);
        if (!st->arena) {
            state_free(x, st);
            return gr_diag_set(diag, GR_ERR_NOMEM, "cannot allocate the %zu-byte arena",
                               x->arena_bytes);
        }
    }
    for (uint32_t s = 0; s < x->nslots; s++) {
        const px_slot *sl = &x->slots[s];
        if (sl->buf < 0) continue;
        int64_t shape[RT_MAX_NDIM];
        ir_sinfo_static_shape(sl->sinfo, shape);
        st->views[s] = rt_tensor_wrap(sl->sinfo->dtype, sl->sinfo->ndim, shape,
                                      (char *)st->arena + x->buf_off[sl->buf]);
        if (!st->views[s]) {
            state_free(x, st);
            return gr_diag_set(diag, GR_ERR_NOMEM, "cannot allocate a tensor view");
        }
    }
    *out = st;
    return GR_OK;
}

/* A state from the pool, or a new one. */
static gr_status state_take(rt_px *x, px_state **out, gr_diag *diag) {
    pthread_mutex_lock(&x->pool_lock);
    px_state *st = x->pool;
    if (st) x->pool = st->next;
    pthread_mutex_unlock(&x->pool_lock);
    if (st) {
        st->next = NULL;
        *out = st;
        return GR_OK;
    }
    return state_new(x, out, diag);
}

static void state_give(rt_px *x, px_state *st) {
    pthread_mutex_lock(&x->pool_lock);
    st->next = x->pool;
    x->pool = st;
    pthread_mutex_unlock(&x->pool_lock);
}

gr_status rt_px_new(const ir_module *m, const char *func, const rt_host_lowering *host,
                    rt_px **out, gr_diag *diag) {
    *out = NULL;
    const ir_func *fn = ir_module_func(m, func);
    if (!fn || fn->base.kind != IR_FUNC)
        return gr_diag_set(diag, GR_ERR_NOT_FOUND, "the module has no function '%s'", func);
    rt_px *x = gr_xcalloc(1, sizeof *x);
    x->m = m;
    x->fn = fn;
    x->ctx = m->ctx;
    x->host = host;
    pthread_mutex_init(&x->pool_lock, NULL);
    px_build pb;
    memset(&pb, 0, sizeof pb);
    pb.x = x;
    pb.diag = diag;
    gr_map_init(&pb.slot_of);
    gr_status st = compile_func(&pb);
    gr_map_free(&pb.slot_of);
    free(pb.b);
    free(pb.uses);
    free(pb.group_of);
    if (!st && host) {
        for (uint32_t g = 0; g < x->groups.len && !st; g++)
            st = host->add_group(host->self, x->groups.data[g], diag);
        if (!st) st = host->finalize(host->self, diag);
        for (uint32_t k = 0; k < x->ninstr && !st; k++) {
            px_instr *in = &x->ins[k];
            if (in->kind != INS_HOST) continue;
            in->fn = host->lookup(host->self, in->name);
            if (!in->fn)
                st = gr_diag_set(diag, GR_ERR_NOT_FOUND, "host kernel '%s' was not compiled",
                                 in->name);
        }
    }
    if (!st) st = plan_memory(x);
    /* one state up front: an arena that cannot be had fails here, not at the first run */
    px_state *first = NULL;
    if (!st) st = state_new(x, &first, diag);
    if (!st) x->pool = first;
    if (st) {
        rt_px_free(x);
        return st;
    }
    *out = x;
    return GR_OK;
}

void rt_px_free(rt_px *x) {
    if (!x) return;
    for (uint32_t k = 0; k < x->ninstr; k++) {
        px_instr *in = &x->ins[k];
        for (uint32_t a = 0; a < in->nargs; a++) opd_free(&in->args[a]);
        free(in->args);
        free(in->out_dtype);
        free(in->out_ndim);
        free(in->out_shape);
        free(in->frees);
    }
    free(x->ins);
    opd_free(&x->result);
    while (x->pool) {
        px_state *st = x->pool;
        x->pool = st->next;
        state_free(x, st);
    }
    pthread_mutex_destroy(&x->pool_lock);
    free(x->slots);
    gr_vec_free(&x->groups);
    free(x->buf_off);
    free(x->buf_size);
    free(x->buf_slot);
    free(x);
}

uint32_t rt_px_num_inputs(const rt_px *x) { return x->fn->nparams; }
const char *rt_px_input_name(const rt_px *x, uint32_t i) { return x->fn->params[i]->name; }
const ir_sinfo *rt_px_input_sinfo(const rt_px *x, uint32_t i) { return x->fn->params[i]->base.sinfo; }
const ir_sinfo *rt_px_output_sinfo(const rt_px *x) {
    return x->fn->ret_sinfo ? x->fn->ret_sinfo : x->fn->body->sinfo;
}
void rt_px_set_profiler(rt_px *x, rt_exec_profile_fn fn, void *user) {
    x->prof = fn;
    x->prof_user = user;
}
uint32_t rt_px_num_groups(const rt_px *x) { return x->groups.len; }
const rt_fuse_group *rt_px_group(const rt_px *x, uint32_t i) { return x->groups.data[i]; }
void rt_px_buffer(const rt_px *x, uint32_t i, size_t *offset, size_t *size, const char **var) {
    if (offset) *offset = x->buf_off[i];
    if (size) *size = x->buf_size[i];
    if (var) *var = x->slots[x->buf_slot[i]].var->name;
}

uint32_t rt_px_num_instrs(const rt_px *x) { return x->ninstr; }
void rt_px_instr(const rt_px *x, uint32_t k, const char **kind, const char **name,
                 const char **var, const ir_span **span) {
    const px_instr *in = &x->ins[k];
    if (kind) *kind = ins_kind_name[in->kind];
    if (name) *name = in->name;
    if (var) *var = in->var;
    if (span) *span = in->span;
}

void rt_px_get_stats(const rt_px *x, rt_px_stats *o) {
    memset(o, 0, sizeof *o);
    o->ninstr = x->ninstr;
    for (uint32_t k = 0; k < x->ninstr; k++) {
        uint8_t kd = x->ins[k].kind;
        o->nkernel += kd == INS_KERNEL;
        o->nhost += kd == INS_HOST;
        o->nextern += kd == INS_EXTERN;
        if (kd == INS_KERNEL || kd == INS_HOST || kd == INS_EXTERN)
            o->nunplanned += x->slots[x->ins[k].dst].buf < 0;
    }
    o->nfused_ops = x->nfused_ops;
    o->nplanned = x->nbuf;
    o->arena_bytes = x->arena_bytes;
    o->intermediate_bytes = x->sum_bytes;
}

/* ---------------- run ---------------- */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static gr_status check_input(const rt_px *x, uint32_t i, const rt_value *v, gr_diag *d) {
    const char *name = rt_px_input_name(x, i);
    const ir_sinfo *s = rt_px_input_sinfo(x, i);
    if (!s || s->kind != IR_SINFO_TENSOR) return GR_OK;
    if (v->kind != RT_VAL_TENSOR)
        return gr_diag_set(d, GR_ERR_INVALID, "input '%s' must be a tensor", name);
    const DLTensor *t = &v->u.t->dl;
    if (!ir_dtype_is_void(s->dtype) && !ir_dtype_eq(s->dtype, t->dtype))
        return gr_diag_set(d, GR_ERR_INVALID, "input '%s' has dtype %s, expected %s", name,
                           ir_dtype_name(t->dtype) ? ir_dtype_name(t->dtype) : "?",
                           ir_dtype_name(s->dtype) ? ir_dtype_name(s->dtype) : "?");
    if (s->ndim >= 0 && s->ndim != t->ndim)
        return gr_diag_set(d, GR_ERR_INVALID, "input '%s' has rank %d, expected %d", name, t->ndim,
                           s->ndim);
    if (s->dims)
        for (int32_t k = 0; k < s->ndim; k++) {
            int64_t dv;
            if (ir_prim_is_int(s->dims[k], &dv) && dv != t->shape[k])
                return gr_diag_set(d, GR_ERR_INVALID,
                                   "input '%s' has dim %d = %lld, expected %lld", name, k,
                                   (long long)t->shape[k], (long long)dv);
        }
    return GR_OK;
}

static bool same_dims(const rt_tensor *t, int32_t ndim, const int64_t *shape) {
    if (t->dl.ndim != ndim) return false;
    for (int32_t k = 0; k < ndim; k++)
        if (t->dl.shape[k] != shape[k]) return false;
    return true;
}

typedef GR_VEC(DLTensor *) dl_vec;
static void flatten_dl(const rt_value *v, dl_vec *out, bool *ok) {
    if (v->kind == RT_VAL_TENSOR) gr_vec_push(out, &v->u.t->dl);
    else if (v->kind == RT_VAL_TUPLE)
        for (uint32_t i = 0; i < v->u.tuple.n; i++) flatten_dl(&v->u.tuple.items[i], out, ok);
    else *ok = false;
}

/* A kernel may hand back one of its inputs (e.g. a cast to the same dtype): an unplanned value
 * must not point into the arena, whose storage is reused. */
static gr_status detach_arena(const rt_px *x, const px_state *s, rt_value *v) {
    if (v->kind == RT_VAL_TUPLE) {
        for (uint32_t i = 0; i < v->u.tuple.n; i++) {
            gr_status st = detach_arena(x, s, &v->u.tuple.items[i]);
            if (st) return st;
        }
        return GR_OK;
    }
    if (v->kind != RT_VAL_TENSOR || !s->arena) return GR_OK;
    const char *p = rt_tensor_data(v->u.t), *a = s->arena;
    if (p < a || p >= a + x->arena_bytes) return GR_OK;
    rt_tensor *c = rt_tensor_new(v->u.t->dl.dtype, v->u.t->dl.ndim, v->u.t->dl.shape);
    if (!c) return GR_ERR_NOMEM;
    memcpy(rt_tensor_data(c), p, rt_tensor_nbytes(c));
    rt_value_clear(v);
    *v = rt_value_tensor(c);
    return GR_OK;
}

/* The output tensor of instruction in: the planned view, or a new heap tensor. */
static rt_tensor *out_tensor(const rt_px *x, const px_state *s, const px_instr *in,
                             DLDataType dt, int32_t ndim, const int64_t *shape) {
    const px_slot *sl = &x->slots[in->dst];
    if (sl->buf >= 0) return rt_tensor_retain(s->views[in->dst]);
    return rt_tensor_new(dt, ndim, shape);
}

static gr_status run_instr(const rt_px *x, px_state *s, const px_instr *in, gr_diag *d) {
    rt_value *dst = &s->values[in->dst];
    switch (in->kind) {
    case INS_KERNEL: {
        for (uint32_t a = 0; a < in->nargs; a++) s->argv[a] = opd_view(s, &in->args[a]);
        rt_kernel_call call = in->call;
        call.args = s->argv;
        rt_value out = {0};
        const px_slot *sl = &x->slots[in->dst];
        rt_tensor *view = s->views[in->dst];
        /* let the kernel allocate its output in the slot itself (no copy) */
        if (sl->buf >= 0) rt_kernel_out_hint(rt_tensor_data(view), rt_tensor_nbytes(view));
        gr_status st = in->kernel(&call, &out, d);
        rt_kernel_out_hint(NULL, 0);
        if (st) return st;
        if (sl->buf >= 0 && out.kind == RT_VAL_TENSOR &&
            rt_tensor_data(out.u.t) == rt_tensor_data(view) &&
            ir_dtype_eq(out.u.t->dl.dtype, view->dl.dtype) &&
            same_dims(out.u.t, view->dl.ndim, view->shape)) {
            rt_value_clear(&out);
            out = rt_value_tensor(rt_tensor_retain(view));
        } else if (sl->buf >= 0) {
            if (out.kind != RT_VAL_TENSOR || !ir_dtype_eq(out.u.t->dl.dtype, view->dl.dtype) ||
                !same_dims(out.u.t, view->dl.ndim, view->shape)) {
                rt_value_clear(&out);
                return gr_diag_set(d, GR_ERR_RUNTIME,
                                   "%s: the kernel's output does not match the planned struct info "
                                   "of '%s'", in->name, in->var);
            }
            memcpy(rt_tensor_data(view), rt_tensor_data(out.u.t), rt_tensor_nbytes(view));
            rt_value_clear(&out);
            out = rt_value_tensor(rt_tensor_retain(view));
        } else if (detach_arena(x, s, &out) != GR_OK) {
            rt_value_clear(&out);
            return gr_diag_set(d, GR_ERR_NOMEM, "%s: cannot copy the output", in->name);
        }
        *dst = out;
        return GR_OK;
    }
    case INS_HOST: {
        const rt_fuse_group *g = in->group;
        for (uint32_t a = 0; a < in->nargs; a++) {
            rt_value v = opd_view(s, &in->args[a]);
            if (v.kind != RT_VAL_TENSOR || !ir_dtype_eq(v.u.t->dl.dtype, IR_DTYPE_F32) ||
                !same_dims(v.u.t, g->in_ndim[a], g->in_shape[a]))
                return gr_diag_set(d, GR_ERR_RUNTIME, "%s: input %u is not the planned float32 "
                                   "tensor", g->name, a);
            s->bufs[a] = rt_tensor_data(v.u.t);
        }
        rt_tensor *o = out_tensor(x, s, in, IR_DTYPE_F32, g->ndim, g->shape);
        if (!o) return gr_diag_set(d, GR_ERR_NOMEM, "%s: cannot allocate the output", g->name);
        s->bufs[in->nargs] = rt_tensor_data(o);
        in->fn(s->bufs);
        *dst = rt_value_tensor(o);
        return GR_OK;
    }
    case INS_EXTERN: {
        rt_value argv = opd_view(s, &in->args[0]);
        dl_vec dl = {0};
        bool ok = true;
        flatten_dl(&argv, &dl, &ok);
        if (!ok) {
            gr_vec_free(&dl);
            return gr_diag_set(d, GR_ERR_INVALID, "R.call_dps_packed('%s'): an argument is not a "
                               "tensor", in->name);
        }
        uint32_t nin = dl.len;
        rt_value out = in->out_tuple ? rt_value_tuple(in->nout) : (rt_value){0};
        gr_status st = GR_OK;
        for (uint32_t k = 0; k < in->nout && !st; k++) {
            rt_tensor *t = in->out_tuple ? rt_tensor_new(in->out_dtype[k], in->out_ndim[k], in->out_shape[k])
                                         : out_tensor(x, s, in, in->out_dtype[k], in->out_ndim[k], in->out_shape[k]);
            if (!t) {
                st = gr_diag_set(d, GR_ERR_NOMEM, "R.call_dps_packed('%s'): cannot allocate output",
                                 in->name);
                break;
            }
            if (in->out_tuple) out.u.tuple.items[k] = rt_value_tensor(t);
            else out = rt_value_tensor(t);
            gr_vec_push(&dl, &t->dl);
        }
        if (!st) st = rt_module_call(in->mod, in->name, dl.data, nin, in->nout, d);
        gr_vec_free(&dl);
        if (st) {
            rt_value_clear(&out);
            return st;
        }
        *dst = out;
        return GR_OK;
    }
    case INS_TGI: {
        rt_value t = opd_view(s, &in->args[0]);
        if (t.kind != RT_VAL_TUPLE || in->index < 0 || (uint32_t)in->index >= t.u.tuple.n)
            return gr_diag_set(d, GR_ERR_INVALID, "'%s': tuple index %d out of range", in->var,
                               in->index);
        *dst = rt_value_copy(&t.u.tuple.items[in->index]);
        return GR_OK;
    }
    default: {
        rt_value v = opd_view(s, &in->args[0]);
        *dst = rt_value_copy(&v);
        return GR_OK;
    }
    }
}

gr_status rt_px_run(rt_px *x, const rt_value *inputs, uint32_t nin, rt_value *result,
                    gr_diag *diag) {
    memset(result, 0, sizeof *result);
    if (nin != x->nparams)
        return gr_diag_set(diag, GR_ERR_INVALID, "the function takes %u inputs, got %u",
                           x->nparams, nin);
    for (uint32_t i = 0; i < nin; i++) {
        gr_status st = check_input(x, i, &inputs[i], diag);
        if (st) return st;
    }
    px_state *s;
    gr_status st = state_take(x, &s, diag);
    if (st) return st;
    for (uint32_t i = 0; i < nin; i++) s->values[i] = rt_value_copy(&inputs[i]);
    for (uint32_t k = 0; k < x->ninstr && !st; k++) {
        const px_instr *in = &x->ins[k];
        uint64_t t0 = x->prof ? now_ns() : 0;
        st = run_instr(x, s, in, diag);
        if (st) {
            const char *layer = span_layer(in->span);
            if (layer) gr_diag_set_layer(diag, layer);
            if (in->kind == INS_KERNEL) gr_diag_set_op(diag, in->name);
            break;
        }
        if (x->prof) {
            rt_exec_event ev = {ins_kind_name[in->kind], in->name, in->var, in->span, now_ns() - t0};
            x->prof(&ev, x->prof_user);
        }
        for (uint32_t f = 0; f < in->nfree; f++) rt_value_clear(&s->values[in->frees[f]]);
    }
    if (!st) {
        rt_value r = opd_view(s, &x->result);
        *result = rt_value_copy(&r);
    }
    for (uint32_t k = 0; k < x->nslots; k++) rt_value_clear(&s->values[k]);
    state_give(x, s);
    return st;
}
