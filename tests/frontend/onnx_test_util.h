/* Helpers for the ONNX importer tests: build small ONNX models with protobuf-c, walk main's
 * bindings, read the declared outputs of a model file. */
#ifndef GRAFT_TESTS_FRONTEND_ONNX_TEST_UTIL_H
#define GRAFT_TESTS_FRONTEND_ONNX_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"
#include "ir/op.h"
#include "onnx/onnx.pb-c.h"
#include "tests/test_util.h"

#define ONNX_NODE_DIR "/usr/share/libonnx-testdata/data/node"
#define ONNX_DATA_DIR "/usr/share/libonnx-testdata/data"

/* ---- a model under construction (every allocation is freed by tm_free) ---- */
enum { TM_MAX = 32 };

typedef struct tm {
    void *allocs[1024];
    int nallocs;
    Onnx__ModelProto *m;
    Onnx__GraphProto *g;
} tm;

static inline void *tm_alloc(tm *t, size_t size) {
    void *p = calloc(1, size);
    if (t->nallocs < 1024) t->allocs[t->nallocs++] = p;
    return p;
}

static inline char *tm_str(tm *t, const char *s) {
    char *p = tm_alloc(t, strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static inline tm *tm_new(int64_t opset) {
    tm *t = calloc(1, sizeof(*t));
    t->m = tm_alloc(t, sizeof(*t->m));
    onnx__model_proto__init(t->m);
    t->m->has_ir_version = 1;
    t->m->ir_version = 8;
    Onnx__OperatorSetIdProto *o = tm_alloc(t, sizeof(*o));
    onnx__operator_set_id_proto__init(o);
    o->has_version = 1;
    o->version = opset;
    o->domain = tm_str(t, "");
    t->m->opset_import = tm_alloc(t, sizeof(void *));
    t->m->opset_import[0] = o;
    t->m->n_opset_import = 1;
    t->g = tm_alloc(t, sizeof(*t->g));
    onnx__graph_proto__init(t->g);
    t->g->name = tm_str(t, "g");
    t->g->node = tm_alloc(t, sizeof(void *) * TM_MAX);
    t->g->input = tm_alloc(t, sizeof(void *) * TM_MAX);
    t->g->output = tm_alloc(t, sizeof(void *) * TM_MAX);
    t->g->initializer = tm_alloc(t, sizeof(void *) * TM_MAX);
    t->m->graph = t->g;
    return t;
}

static inline void tm_free(tm *t) {
    for (int i = 0; i < t->nallocs; i++) free(t->allocs[i]);
    free(t);
}

/* A value info; dims are "3" (value), "N" (dim_param) or "?" (unknown); ndim -1: no shape. */
static inline Onnx__ValueInfoProto *tm_value(tm *t, const char *name, int32_t elem, int ndim,
                                             const char *const *dims) {
    Onnx__ValueInfoProto *v = tm_alloc(t, sizeof(*v));
    onnx__value_info_proto__init(v);
    v->name = tm_str(t, name);
    if (elem == 0) return v;
    Onnx__TypeProto *tp = tm_alloc(t, sizeof(*tp));
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = tm_alloc(t, sizeof(*tt));
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->type = tp;
    if (ndim < 0) return v;
    Onnx__TensorShapeProto *sp = tm_alloc(t, sizeof(*sp));
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)ndim;
    sp->dim = tm_alloc(t, sizeof(void *) * (size_t)(ndim ? ndim : 1));
    for (int i = 0; i < ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = tm_alloc(t, sizeof(*d));
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i][0] >= '0' && dims[i][0] <= '9') {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = atoll(dims[i]);
        } else if (strcmp(dims[i], "?")) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = tm_str(t, dims[i]);
        }
        sp->dim[i] = d;
    }
    tt->shape = sp;
    return v;
}

static inline void tm_input(tm *t, const char *name, int32_t elem, int ndim, const char *const *dims) {
    t->g->input[t->g->n_input++] = tm_value(t, name, elem, ndim, dims);
}

static inline void tm_output(tm *t, const char *name) {
    t->g->output[t->g->n_output++] = tm_value(t, name, 0, -1, NULL);
}

/* Node with comma-separated inputs/outputs ("x,,w": an empty optional input). */
static inline char **tm_split(tm *t, const char *list, size_t *n) {
    char **v = tm_alloc(t, sizeof(char *) * TM_MAX);
    *n = 0;
    if (!list) return v;
    const char *s = list;
    for (;;) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        char *p = tm_alloc(t, len + 1);
        memcpy(p, s, len);
        v[(*n)++] = p;
        if (!c) break;
        s = c + 1;
    }
    return v;
}

static inline Onnx__NodeProto *tm_node(tm *t, const char *op, const char *name, const char *ins,
                                       const char *outs) {
    Onnx__NodeProto *n = tm_alloc(t, sizeof(*n));
    onnx__node_proto__init(n);
    n->op_type = tm_str(t, op);
    n->name = tm_str(t, name ? name : "");
    n->input = tm_split(t, ins, &n->n_input);
    n->output = tm_split(t, outs, &n->n_output);
    n->attribute = tm_alloc(t, sizeof(void *) * TM_MAX);
    t->g->node[t->g->n_node++] = n;
    return n;
}

static inline Onnx__AttributeProto *tm_attr(tm *t, Onnx__NodeProto *n, const char *name) {
    Onnx__AttributeProto *a = tm_alloc(t, sizeof(*a));
    onnx__attribute_proto__init(a);
    a->name = tm_str(t, name);
    n->attribute[n->n_attribute++] = a;
    return a;
}

static inline void tm_attr_int(tm *t, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = tm_attr(t, n, name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
}

static inline void tm_attr_ints(tm *t, Onnx__NodeProto *n, const char *name, size_t k,
                                const int64_t *v) {
    Onnx__AttributeProto *a = tm_attr(t, n, name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->n_ints = k;
    a->ints = tm_alloc(t, sizeof(int64_t) * (k ? k : 1));
    memcpy(a->ints, v, sizeof(int64_t) * k);
}

/* A tensor proto with float or int64 typed data (data NULL: none). */
static inline Onnx__TensorProto *tm_tensor(tm *t, const char *name, int32_t elem, int ndim,
                                           const int64_t *dims, size_t n, const void *data) {
    Onnx__TensorProto *tp = tm_alloc(t, sizeof(*tp));
    onnx__tensor_proto__init(tp);
    tp->name = tm_str(t, name);
    tp->has_data_type = 1;
    tp->data_type = elem;
    tp->n_dims = (size_t)ndim;
    tp->dims = tm_alloc(t, sizeof(int64_t) * (size_t)(ndim ? ndim : 1));
    if (ndim) memcpy(tp->dims, dims, sizeof(int64_t) * (size_t)ndim);
    if (data && elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        tp->n_float_data = n;
        tp->float_data = tm_alloc(t, sizeof(float) * (n ? n : 1));
        memcpy(tp->float_data, data, sizeof(float) * n);
    } else if (data && elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        tp->n_int64_data = n;
        tp->int64_data = tm_alloc(t, sizeof(int64_t) * (n ? n : 1));
        memcpy(tp->int64_data, data, sizeof(int64_t) * n);
    }
    return tp;
}

static inline Onnx__TensorProto *tm_init(tm *t, Onnx__TensorProto *tp) {
    t->g->initializer[t->g->n_initializer++] = tp;
    return tp;
}

/* Serializes the model (heap buffer, caller frees). */
static inline uint8_t *tm_pack(tm *t, size_t *len) {
    *len = onnx__model_proto__get_packed_size(t->m);
    uint8_t *buf = malloc(*len ? *len : 1);
    onnx__model_proto__pack(t->m, buf);
    return buf;
}

static inline gr_status tm_import(tm *t, ir_ctx_t *ctx, const onnx_import_opts *o, ir_module **m,
                                  gr_diag *d) {
    size_t len;
    uint8_t *buf = tm_pack(t, &len);
    gr_diag_clear(d);
    gr_status st = onnx_import_buffer(ctx, "test.onnx", buf, len, o, m, d);
    free(buf);
    return st;
}

/* ---- walking main ---- */

static inline ir_func *t_main(ir_module *m) { return ir_module_func(m, "main"); }

/* Bindings of main (all blocks) into out (max entries); returns the count. */
static inline uint32_t t_bindings(ir_module *m, const ir_binding **out, uint32_t max) {
    const ir_seq *s = (const ir_seq *)t_main(m)->body;
    uint32_t n = 0;
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++)
            if (n < max) out[n++] = &s->blocks[b]->bindings[i];
    return n;
}

static inline const ir_sinfo *t_ret(ir_module *m) {
    return ((const ir_seq *)t_main(m)->body)->body->sinfo;
}

static inline const char *t_op_name(const ir_expr *e) {
    if (!e || e->kind != IR_CALL) return "";
    const ir_call *c = (const ir_call *)e;
    return c->callee->kind == IR_OP ? ((const ir_op *)c->callee)->def->name : "";
}

/* Does some binding value (or a constant argument of one) carry `layer` in its span? */
static inline bool t_layer_seen(ir_module *m, const char *layer, bool want_output) {
    const ir_binding *bs[512];
    uint32_t n = t_bindings(m, bs, 512);
    for (uint32_t i = 0; i < n; i++) {
        const ir_expr *v = bs[i]->value;
        if (want_output ? ir_span_is_output_of(v->span, layer) : ir_span_has_source(v->span, layer))
            return true;
        if (want_output || v->kind != IR_CALL) continue;
        const ir_call *c = (const ir_call *)v;
        for (uint32_t a = 0; a < c->nargs; a++)
            if (ir_span_has_source(c->args[a]->span, layer)) return true;
    }
    return false;
}

/* ---- declared outputs of a model file ---- */

static inline Onnx__ModelProto *t_load_model(const char *path) {
    size_t n = 0;
    uint8_t *buf = (uint8_t *)tu_read_file(path, &n);
    Onnx__ModelProto *mp = buf ? onnx__model_proto__unpack(NULL, n, buf) : NULL;
    free(buf);
    return mp;
}

#endif
