/* The ONNX importer's driver: parse the model, check every node is supported, turn initializers
 * into constants and graph inputs into params, convert the nodes in dependency order with spans
 * named after the nodes, and return main. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

/* ---- values ---- */

static onnx_val *val_get(onnx_importer *imp, const char *name) {
    uint64_t v = 0;
    if (!gr_map_get(&imp->vals, GR_MAP_PTR(ir_intern(imp->ctx, name)), &v)) return NULL;
    return (onnx_val *)(uintptr_t)v;
}

static onnx_val *val_new(onnx_importer *imp, const char *name) {
    onnx_val *v = gr_xcalloc(1, sizeof(*v));
    v->name = ir_intern(imp->ctx, name);
    gr_vec_push(&imp->all, v);
    gr_map_put(&imp->vals, GR_MAP_PTR(v->name), GR_MAP_PTR(v));
    return v;
}

static void importer_free(onnx_importer *imp) {
    for (uint32_t i = 0; i < imp->all.len; i++) {
        rt_tensor_release(imp->all.data[i]->known);
        free(imp->all.data[i]);
    }
    gr_vec_free(&imp->all);
    gr_map_free(&imp->vals);
    gr_map_free(&imp->dim_vars);
    if (imp->bb) ir_bb_free(imp->bb);
    free(imp->dir);
}

static const ir_span *imp_span(onnx_importer *imp, const char *source, bool out) {
    if (imp->opts && imp->opts->no_spans) return NULL;
    return ir_span_named(imp->ctx, source, out);
}

const char *onnx_sanitize(ir_ctx_t *ctx, const char *name) {
    size_t n = strlen(name);
    char *buf = gr_xmalloc(n + 2);
    size_t k = 0;
    if (n == 0 || isdigit((unsigned char)name[0])) buf[k++] = '_';
    for (size_t i = 0; i < n; i++)
        buf[k++] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    buf[k] = 0;
    const char *s = ir_intern(ctx, buf);
    free(buf);
    return s;
}

/* ---- graph inputs ---- */

static const ir_prim *dim_var(onnx_importer *imp, const char *param) {
    const char *key = ir_intern(imp->ctx, param);
    uint64_t v = 0;
    if (gr_map_get(&imp->dim_vars, GR_MAP_PTR(key), &v)) return (const ir_prim *)(uintptr_t)v;
    const ir_prim *p = ir_prim_var(imp->ctx, onnx_sanitize(imp->ctx, param));
    gr_map_put(&imp->dim_vars, GR_MAP_PTR(key), GR_MAP_PTR(p));
    return p;
}

static const onnx_input_shape *bound_shape(const onnx_importer *imp, const char *name) {
    if (!imp->opts) return NULL;
    for (uint32_t i = 0; i < imp->opts->nshapes; i++)
        if (imp->opts->shapes[i].name && !strcmp(imp->opts->shapes[i].name, name))
            return &imp->opts->shapes[i];
    return NULL;
}

static const onnx_input_seq *bound_seq(const onnx_importer *imp, const char *name) {
    for (uint32_t i = 0; imp->opts && i < imp->opts->nseqs; i++)
        if (imp->opts->seqs[i].name && !strcmp(imp->opts->seqs[i].name, name)) return &imp->opts->seqs[i];
    return NULL;
}

static gr_status tensor_sinfo(onnx_importer *imp, const char *name, const Onnx__TypeProto__Tensor *tt,
                              const onnx_input_shape *bind, const ir_sinfo **out);

/* The tensor type inside a sequence or optional type (NULL when it holds something else). */
static const Onnx__TypeProto *inner_type(const Onnx__TypeProto *tp) {
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
        return tp->sequence_type ? tp->sequence_type->elem_type : NULL;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
        return tp->optional_type ? tp->optional_type->elem_type : NULL;
    return NULL;
}

/* A sequence (or optional) input as a tuple of `n` tensors shaped by elems. */
static gr_status seq_fields(onnx_importer *imp, const char *name, const Onnx__TypeProto *elem, uint32_t n,
                            const onnx_input_shape *elems, const ir_sinfo **out) {
    if (!elem || elem->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !elem->tensor_type)
        return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED, "graph input '%s': only sequences of tensors", name);
    const ir_sinfo **f = IR_NEW_ARRAY(imp->ctx, const ir_sinfo *, n ? n : 1);
    for (uint32_t k = 0; k < n; k++) {
        gr_status st = tensor_sinfo(imp, name, elem->tensor_type, elems ? &elems[k] : NULL, &f[k]);
        if (st != GR_OK) return st;
    }
    *out = ir_sinfo_tuple(imp->ctx, n, f);
    return GR_OK;
}

/* Sequence / optional inputs: tuples whose lengths the caller gives (opts.seqs). */
static gr_status seq_sinfo(onnx_importer *imp, const char *name, const Onnx__TypeProto *tp, const ir_sinfo **out) {
    const onnx_input_seq *b = bound_seq(imp, name);
    onnx_io_kind kind = onnx_type_kind(tp);
    if (!b)
        return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED,
                           "graph input '%s' is %s: its length must be given (a sequence or optional input is "
                           "specialized to the value it is run with)",
                           name, kind == ONNX_IO_SEQUENCE ? "a sequence" : "an optional");
    const Onnx__TypeProto *elem = inner_type(tp);
    if (kind == ONNX_IO_SEQUENCE) return seq_fields(imp, name, elem, b->n, b->elems, out);
    if (b->n > 1)
        return gr_diag_set(imp->diag, GR_ERR_INVALID, "graph input '%s': an optional holds 0 or 1 value, not %u",
                           name, b->n);
    if (!elem || b->n == 0 || onnx_type_kind(elem) == ONNX_IO_TENSOR)
        return b->n == 0 ? (*out = ir_sinfo_tuple(imp->ctx, 0, NULL), GR_OK)
                         : seq_fields(imp, name, elem, 1, b->elems, out);
    if (onnx_type_kind(elem) != ONNX_IO_SEQUENCE || b->inner < 0)
        return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED, "graph input '%s': an optional of this type", name);
    const ir_sinfo *inner = NULL;
    gr_status st = seq_fields(imp, name, inner_type(elem), (uint32_t)b->inner, b->elems, &inner);
    if (st == GR_OK) *out = ir_sinfo_tuple(imp->ctx, 1, &inner);
    return st;
}

static gr_status input_sinfo(onnx_importer *imp, const Onnx__ValueInfoProto *vi,
                             const ir_sinfo **out) {
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    onnx_io_kind kind = onnx_type_kind(tp);
    if (kind == ONNX_IO_SEQUENCE || kind == ONNX_IO_OPTIONAL) return seq_sinfo(imp, name, tp, out);
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED, "graph input '%s' is not a tensor", name);
    return tensor_sinfo(imp, name, tp->tensor_type, bound_shape(imp, name), out);
}

static gr_status tensor_sinfo(onnx_importer *imp, const char *name, const Onnx__TypeProto__Tensor *tt,
                              const onnx_input_shape *bind, const ir_sinfo **out) {
    ir_dtype dt;
    if (!onnx_dtype_from_elem(tt->elem_type, &dt))
        return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED,
                           "graph input '%s': unsupported element type %d (%s)", name,
                           (int)tt->elem_type, onnx_elem_unsupported_name(tt->elem_type));
    const Onnx__TensorShapeProto *sp = tt->shape;
    int32_t ndim = sp ? (int32_t)sp->n_dim : -1;
    if (sp && sp->n_dim > RT_MAX_NDIM)
        return gr_diag_set(imp->diag, GR_ERR_INVALID, "graph input '%s': rank %zu exceeds %d",
                           name, sp->n_dim, RT_MAX_NDIM);
    if (bind) {
        if (bind->ndim < 0 || bind->ndim > RT_MAX_NDIM || (ndim >= 0 && bind->ndim != ndim))
            return gr_diag_set(imp->diag, GR_ERR_INVALID,
                               "--input-shape %s: rank %d, but the model's input has rank %d",
                               name, (int)bind->ndim, (int)ndim);
        ndim = bind->ndim;
    }
    if (ndim < 0) {
        *out = ir_sinfo_tensor(imp->ctx, dt, -1, NULL);
        return GR_OK;
    }
    const ir_prim **dims = IR_NEW_ARRAY(imp->ctx, const ir_prim *, ndim ? ndim : 1);
    for (int32_t i = 0; i < ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp ? sp->dim[i] : NULL;
        bool has_val = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                       d->dim_value >= 0;
        if (has_val && d->dim_value > ONNX_DIM_MAX)
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "graph input '%s': dim %d is %lld",
                               name, (int)i, (long long)d->dim_value);
        if (bind) {
            if (bind->dims[i] < 0 || bind->dims[i] > ONNX_DIM_MAX)
                return gr_diag_set(imp->diag, GR_ERR_INVALID,
                                   "--input-shape %s: dim %lld out of range", name,
                                   (long long)bind->dims[i]);
            if (has_val && d->dim_value != bind->dims[i])
                return gr_diag_set(imp->diag, GR_ERR_INVALID,
                                   "--input-shape %s: dim %d is %lld, but the model fixes it to "
                                   "%lld",
                                   name, (int)i, (long long)bind->dims[i],
                                   (long long)d->dim_value);
            dims[i] = ir_prim_int(imp->ctx, bind->dims[i]);
        } else if (has_val) {
            dims[i] = ir_prim_int(imp->ctx, d->dim_value);
        } else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param) {
            dims[i] = dim_var(imp, d->dim_param);
        } else {
            /* An unnamed dynamic dim: a var of its own. */
            char buf[300];
            snprintf(buf, sizeof(buf), "%s_dim%d", name, (int)i);
            dims[i] = ir_prim_var(imp->ctx, onnx_sanitize(imp->ctx, buf));
        }
    }
    *out = ir_sinfo_tensor(imp->ctx, dt, ndim, dims);
    return GR_OK;
}

/* ---- nodes ---- */

static const char *node_layer(onnx_importer *imp, const Onnx__NodeProto *n) {
    if (n->name && *n->name) return ir_intern(imp->ctx, n->name);
    return ir_internf(imp->ctx, "%s_%s", n->op_type ? n->op_type : "node",
                      n->n_output && n->output[0] ? n->output[0] : "");
}

static bool node_domain_ok(const Onnx__NodeProto *n) {
    return !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
}

/* Every unsupported node, all at once. */
static gr_status check_supported(onnx_importer *imp, const Onnx__GraphProto *g) {
    char list[1536];
    size_t k = 0;
    uint32_t count = 0;
    list[0] = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!n->op_type || !*n->op_type)
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "node %zu has no op_type", i);
        if (onnx_op_find_node(n, imp->opset)) continue;
        count++;
        if (k < sizeof(list) - 1) {
            int w;
            const char *why = onnx_op_unsupported_reason(n->op_type);
            if (node_domain_ok(n))
                w = snprintf(list + k, sizeof(list) - k, "%s'%s' (%s, opset %lld)%s%s", count > 1 ? ", " : "",
                             node_layer(imp, n), n->op_type, (long long)imp->opset, why ? ": " : "",
                             why ? why : "");
            else if (why)
                w = snprintf(list + k, sizeof(list) - k, "%s'%s' (%s, domain %s): %s", count > 1 ? ", " : "",
                             node_layer(imp, n), n->op_type, n->domain, why);
            else
                w = snprintf(list + k, sizeof(list) - k, "%s'%s' (%s, domain %s)", count > 1 ? ", " : "",
                             node_layer(imp, n), n->op_type, n->domain);
            if (w > 0) k += (size_t)w;
            if (k >= sizeof(list)) k = sizeof(list) - 1;
        }
    }
    if (!count) return GR_OK;
    if (count == 1) {
        const Onnx__NodeProto *first = NULL;
        for (size_t i = 0; i < g->n_node && !first; i++)
            if (!onnx_op_find_node(g->node[i], imp->opset))
                first = g->node[i];
        gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED, "1 unsupported node: %s", list);
        gr_diag_set_layer(imp->diag, node_layer(imp, first));
        gr_diag_set_op(imp->diag, first->op_type);
        return GR_ERR_UNSUPPORTED;
    }
    return gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED, "%u unsupported nodes: %s", count, list);
}

static void node_fail_context(onnx_importer *imp, const char *layer, const char *op) {
    gr_diag_set_layer(imp->diag, layer);
    gr_diag_set_op(imp->diag, op);
}

/* The spans folded into a node's inputs (seed 001's span filler): each input's `folded` set with
 * its output marks cleared, in input order. The node's spans are its own loc followed by these
 * (consumer first, then producers, depth-first), so a constant or shape subgraph that became an
 * attribute, a prim value or an R.shape of this node is still named by the node's expressions. */
static const ir_span *absorbed_span(onnx_importer *imp, onnx_val *const *in, uint32_t nin) {
    const ir_span *acc = NULL;
    for (uint32_t i = 0; i < nin; i++)
        if (in[i] && in[i]->folded)
            acc = ir_span_concat(imp->ctx, acc, ir_span_with_output(imp->ctx, in[i]->folded, false));
    return acc;
}

/* Converts one node whose inputs are all available. */
static gr_status convert_node(onnx_importer *imp, const Onnx__NodeProto *n) {
    ir_ctx_t *ctx = imp->ctx;
    const onnx_op_entry *ent = onnx_op_find_node(n, imp->opset);
    const char *layer = node_layer(imp, n);
    onnx_cv cv = {.imp = imp, .ctx = ctx, .node = n, .layer = layer, .opset = imp->opset};
    cv.nin = (uint32_t)n->n_input;
    onnx_val **in = gr_xcalloc(cv.nin + 1, sizeof(*in));
    for (uint32_t i = 0; i < cv.nin; i++)
        in[i] = n->input[i] && *n->input[i] ? val_get(imp, n->input[i]) : NULL;
    cv.in = in;
    const ir_span *absorbed = absorbed_span(imp, in, cv.nin);
    cv.span = ir_span_concat(ctx, imp_span(imp, layer, false), absorbed);
    cv.out_span = ir_span_concat(ctx, imp_span(imp, layer, true), absorbed);
    cv.nout = (uint32_t)n->n_output;
    uint32_t no = cv.nout + 1;
    cv.out = gr_xcalloc(no, sizeof(*cv.out));
    cv.out_known = gr_xcalloc(no, sizeof(*cv.out_known));
    cv.out_sym = gr_xcalloc(no, sizeof(*cv.out_sym));
    cv.out_nsym = gr_xcalloc(no, sizeof(*cv.out_nsym));
    cv.out_sym_ndim = gr_xcalloc(no, sizeof(*cv.out_sym_ndim));
    cv.out_sym_shape = gr_xcalloc(no, sizeof(*cv.out_sym_shape));
    cv.out_sym_dtype = gr_xcalloc(no, sizeof(*cv.out_sym_dtype));

    gr_status st = GR_OK;
    cv.folding = true;
    int folded = ent->fold ? ent->fold(&cv) : 0;
    cv.folding = false;
    if (folded < 0) {
        st = (gr_status)folded;
    } else if (folded == 0) {
        for (uint32_t i = 0; i < cv.nout; i++) {
            rt_tensor_release(cv.out_known[i]);
            cv.out_known[i] = NULL;
            cv.out_sym[i] = NULL;
        }
        st = ent->convert(&cv);
    }
    for (uint32_t i = 0; st == GR_OK && i < cv.nout; i++) {
        if (!n->output[i] || !*n->output[i]) continue;
        onnx_val *v = val_new(imp, n->output[i]);
        if (cv.out_known[i]) {
            v->known = cv.out_known[i];
            cv.out_known[i] = NULL;
            v->span = v->folded = cv.out_span;
        } else if (cv.out_sym[i]) {
            v->sym = cv.out_sym[i];
            v->nsym = cv.out_nsym[i];
            v->sym_ndim = cv.out_sym_ndim[i];
            memcpy(v->sym_shape, cv.out_sym_shape[i], sizeof(v->sym_shape));
            v->sym_dtype = cv.out_sym_dtype[i];
            v->span = v->folded = cv.out_span;
        } else if (cv.out[i]) {
            ir_expr *e = cv.out[i];
            /* A leaf (the input itself: Identity, a no-op Reshape; or a constant) is no binding
             * of this node: its consumers carry the node's span. */
            if (ir_is_leaf(e)) v->folded = cv.out_span;
            if (!ir_is_leaf(e)) {
                e = ir_expr_with_span(ctx, e, cv.out_span);
                e = (ir_expr *)ir_bb_emit(imp->bb, e, NULL);
                if (!e) {
                    st = imp->diag->code ? imp->diag->code : GR_ERR_TYPE;
                    break;
                }
            }
            v->expr = e;
        }
        /* else: an output the converter does not produce (cv_in reports it when used). */
    }
    for (uint32_t i = 0; i < cv.nout; i++) rt_tensor_release(cv.out_known[i]);
    free(in);
    free(cv.out);
    free(cv.out_known);
    free(cv.out_sym);
    free(cv.out_nsym);
    free(cv.out_sym_ndim);
    free(cv.out_sym_shape);
    free(cv.out_sym_dtype);
    if (st != GR_OK) {
        if (!imp->diag->code) gr_diag_set(imp->diag, st, "conversion failed");
        node_fail_context(imp, layer, n->op_type);
    }
    return st;
}

static bool node_ready(onnx_importer *imp, const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i] && *n->input[i] && !val_get(imp, n->input[i])) return false;
    return true;
}

/* Frees a TensorProto's raw bytes once a tensor holds them (protobuf-c's allocator is malloc). */
static void drop_raw_data(Onnx__TensorProto *tp) {
    if (tp && tp->has_raw_data && tp->raw_data.data) {
        free(tp->raw_data.data);
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        tp->has_raw_data = 0;
    }
}

/* Converts g's nodes in dependency order (ONNX graphs are sorted; tolerate ones that are not).
 * consume: g is the model's graph, each node converted once, so a Constant's tensor bytes go once
 * they are a tensor (peak memory: exporters such as paddle2onnx put every weight in a Constant);
 * a subgraph may be converted again (Loop). */
static gr_status convert_nodes(onnx_importer *imp, const Onnx__GraphProto *g, bool consume) {
    size_t n = g->n_node;
    bool *done = gr_xcalloc(n + 1, sizeof(bool));
    size_t left = n;
    gr_status st = GR_OK;
    while (left && st == GR_OK) {
        size_t progress = 0;
        for (size_t i = 0; i < n && st == GR_OK; i++) {
            if (done[i] || !node_ready(imp, g->node[i])) continue;
            st = convert_node(imp, g->node[i]);
            done[i] = true;
            if (st == GR_OK && consume && g->node[i]->op_type && !strcmp(g->node[i]->op_type, "Constant"))
                for (size_t j = 0; j < g->node[i]->n_attribute; j++)
                    drop_raw_data(g->node[i]->attribute[j]->t);
            progress++;
            left--;
        }
        if (st == GR_OK && !progress) {
            for (size_t i = 0; i < n; i++) {
                if (done[i]) continue;
                const Onnx__NodeProto *nd = g->node[i];
                for (size_t j = 0; j < nd->n_input; j++) {
                    if (!nd->input[j] || !*nd->input[j] || val_get(imp, nd->input[j])) continue;
                    st = gr_diag_set(imp->diag, GR_ERR_INVALID,
                                     "input '%s' of node '%s' is never produced (or the graph "
                                     "has a cycle)",
                                     nd->input[j], node_layer(imp, nd));
                    node_fail_context(imp, node_layer(imp, nd), nd->op_type);
                    break;
                }
                break;
            }
        }
    }
    free(done);
    return st;
}

/* ---- subgraphs inlined at import (ONNX coverage) ---- */

gr_status onnx_subgraph_inline(onnx_importer *imp, const Onnx__GraphProto *g, const onnx_val *const *ins, uint32_t nin,
                               onnx_val **outs) {
    if (!g) return gr_diag_set(imp->diag, GR_ERR_INVALID, "missing subgraph");
    if (g->n_input != nin)
        return gr_diag_set(imp->diag, GR_ERR_INVALID, "subgraph '%s' has %zu inputs, %u given", g->name ? g->name : "",
                               g->n_input, nin);
    gr_status st = check_supported(imp, g);
    if (st) return st;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        rt_tensor *t = NULL;
        if ((st = onnx_tensor_from_proto(tp, imp->dir, imp->file, &t, imp->diag))) return st;
        onnx_val *v = val_new(imp, tp->name ? tp->name : "");
        v->known = t;
    }
    for (uint32_t i = 0; i < nin; i++) {
        onnx_val *v = val_new(imp, g->input[i]->name ? g->input[i]->name : "");
        const onnx_val *src = ins[i];
        v->expr = src->expr;
        v->known = src->known ? rt_tensor_retain(src->known) : NULL;
        v->sym = src->sym;
        v->nsym = src->nsym;
        v->sym_ndim = src->sym_ndim;
        memcpy(v->sym_shape, src->sym_shape, sizeof(v->sym_shape));
        v->sym_dtype = src->sym_dtype;
        v->span = src->span;
        v->folded = src->folded;
        v->is_param = src->is_param;
    }
    if ((st = convert_nodes(imp, g, false))) return st;
    for (size_t i = 0; i < g->n_output; i++) {
        outs[i] = g->output[i]->name ? val_get(imp, g->output[i]->name) : NULL;
        if (!outs[i])
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "subgraph output '%s' is never produced",
                               g->output[i]->name ? g->output[i]->name : "");
    }
    return GR_OK;
}

/* ---- the model ---- */

static int64_t model_opset(const Onnx__ModelProto *m) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (o && (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")))
            return o->has_version ? o->version : 1;
    }
    return 1;  /* IR version 2 models without opset_import are opset 1 */
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return true;
    return false;
}

static const Onnx__ValueInfoProto *graph_input(const Onnx__GraphProto *g, const char *name) {
    for (size_t j = 0; name && j < g->n_input; j++)
        if (g->input[j]->name && !strcmp(g->input[j]->name, name) && !is_initializer(g, name))
            return g->input[j];
    return NULL;
}

/* Inputs given as constants: checked against the input's declared type, then kept like
 * initializers. */
static gr_status bind_values(onnx_importer *imp, const Onnx__GraphProto *g) {
    for (uint32_t i = 0; imp->opts && i < imp->opts->nvalues; i++) {
        const onnx_input_value *iv = &imp->opts->values[i];
        const Onnx__ValueInfoProto *vi = graph_input(g, iv->name);
        if (!vi || !iv->value)
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "input value %s: %s",
                               iv->name ? iv->name : "(null)",
                               vi ? "no tensor given" : "the model has no such input");
        const ir_sinfo *si = NULL;
        gr_status st = input_sinfo(imp, vi, &si);
        if (st != GR_OK) return st;
        const rt_tensor *t = iv->value;
        bool ok = ir_dtype_eq(si->dtype, t->dl.dtype) && (si->ndim < 0 || si->ndim == t->dl.ndim);
        for (int32_t d = 0; ok && si->ndim > 0 && si->dims && d < si->ndim; d++) {
            int64_t v;
            ok = !ir_prim_is_int(si->dims[d], &v) || v == t->shape[d];
        }
        if (!ok) {
            char buf[256];
            ir_sinfo_snprint(si, buf, sizeof(buf));
            return gr_diag_set(imp->diag, GR_ERR_INVALID,
                               "input value %s: a %s tensor of rank %d does not fit %s", iv->name,
                               ir_dtype_name(t->dl.dtype) ? ir_dtype_name(t->dl.dtype) : "?",
                               (int)t->dl.ndim, buf);
        }
        onnx_val *v = val_new(imp, iv->name);
        v->known = rt_tensor_retain(iv->value);
        v->span = imp_span(imp, iv->name, false);
    }
    return GR_OK;
}

/* Every --input-shape names a graph input; a bound dim that the model names (dim_param) binds
 * that name for every input sharing it. */
static gr_status check_bound_shapes(onnx_importer *imp, const Onnx__GraphProto *g) {
    if (!imp->opts) return GR_OK;
    for (uint32_t i = 0; i < imp->opts->nshapes; i++) {
        const onnx_input_shape *b = &imp->opts->shapes[i];
        const Onnx__ValueInfoProto *vi = graph_input(g, b->name);
        if (!vi)
            return gr_diag_set(imp->diag, GR_ERR_INVALID,
                               "--input-shape %s: the model has no input named '%s'",
                               b->name ? b->name : "(null)", b->name ? b->name : "(null)");
        const Onnx__TypeProto *tp = vi->type;
        const Onnx__TensorShapeProto *sp =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
                ? tp->tensor_type->shape : NULL;
        if (!sp || b->ndim != (int32_t)sp->n_dim) continue;  /* input_sinfo reports the rank */
        for (int32_t d = 0; d < b->ndim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
            if (dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                !dim->dim_param || !*dim->dim_param || b->dims[d] < 0)
                continue;
            const char *key = ir_intern(imp->ctx, dim->dim_param);
            const ir_prim *val = ir_prim_int(imp->ctx, b->dims[d]);
            uint64_t old = 0;
            if (gr_map_get(&imp->dim_vars, GR_MAP_PTR(key), &old) && (const ir_prim *)(uintptr_t)old != val)
                return gr_diag_set(imp->diag, GR_ERR_INVALID,
                                   "--input-shape %s: dim '%s' bound to %lld and to another value",
                                   b->name, key, (long long)b->dims[d]);
            gr_map_put(&imp->dim_vars, GR_MAP_PTR(key), GR_MAP_PTR(val));
        }
    }
    return GR_OK;
}

/* opts.wanted: params whose value a converter asked for and no op used as a tensor, in graph
 * input order. */
static void report_wanted(onnx_importer *imp, const Onnx__GraphProto *g) {
    onnx_wanted_inputs *w = imp->opts ? imp->opts->wanted : NULL;
    if (!w) return;
    w->n = 0;
    for (size_t i = 0; i < g->n_input && w->n < ONNX_MAX_WANTED; i++) {
        onnx_val *v = g->input[i]->name ? val_get(imp, g->input[i]->name) : NULL;
        if (v && v->is_param && v->value_asked && !v->as_tensor) w->names[w->n++] = v->name;
    }
}

static gr_status import_graph(onnx_importer *imp, const Onnx__GraphProto *g, ir_module **out) {
    ir_ctx_t *ctx = imp->ctx;
    gr_status st = check_supported(imp, g);
    if (st == GR_OK) st = check_bound_shapes(imp, g);
    if (st != GR_OK) return st;

    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        if (!tp->name || !*tp->name)
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "initializer %zu has no name", i);
        rt_tensor *t = NULL;
        st = onnx_tensor_take_proto(g->initializer[i], imp->dir, imp->file, &t, imp->diag);
        if (st != GR_OK) {
            gr_diag_set_layer(imp->diag, tp->name);
            return st;
        }
        onnx_val *v = val_new(imp, tp->name);
        v->known = t;
        v->span = imp_span(imp, tp->name, false);
        /* the tensor has the bytes now (taken, or copied when unaligned): the model's copy goes,
         * so the import holds about one copy of the weights at a time, not two (nothing reads an
         * initializer's data again) */
        drop_raw_data(g->initializer[i]);
    }

    st = bind_values(imp, g);
    if (st != GR_OK) return st;

    GR_VEC(ir_var *) params = {0};
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !*vi->name) {
            gr_vec_free(&params);
            return gr_diag_set(imp->diag, GR_ERR_INVALID, "graph input %zu has no name", i);
        }
        if (val_get(imp, vi->name)) continue;  /* an initializer or bound value: a constant */
        const ir_sinfo *si = NULL;
        st = input_sinfo(imp, vi, &si);
        if (st != GR_OK) {
            gr_vec_free(&params);
            gr_diag_set_layer(imp->diag, vi->name);
            return st;
        }
        ir_var *var = ir_var_new(ctx, onnx_sanitize(ctx, vi->name), si, imp_span(imp, vi->name, false));
        onnx_val *v = val_new(imp, vi->name);
        v->expr = (ir_expr *)var;
        v->is_param = true;
        gr_vec_push(&params, var);
    }

    imp->bb = ir_bb_new(ctx, imp->diag);
    ir_bb_begin_dataflow(imp->bb);
    st = convert_nodes(imp, g, true);

    ir_expr *result = NULL;
    if (st == GR_OK && g->n_output == 0)
        st = gr_diag_set(imp->diag, GR_ERR_INVALID, "the graph has no outputs");
    if (st == GR_OK) {
        ir_expr **outs = gr_xcalloc(g->n_output, sizeof(*outs));
        for (size_t i = 0; i < g->n_output && st == GR_OK; i++) {
            const char *name = g->output[i]->name ? g->output[i]->name : "";
            onnx_val *v = val_get(imp, name);
            if (!v) {
                st = gr_diag_set(imp->diag, GR_ERR_INVALID, "graph output '%s' is never produced",
                                 name);
                break;
            }
            if (!v->expr && v->known) v->expr = (ir_expr *)ir_const_new(ctx, v->known, v->span);
            if (!v->expr) {
                st = gr_diag_set(imp->diag, GR_ERR_UNSUPPORTED,
                                 v->sym ? "graph output '%s' is a shape with dynamic dims"
                                        : "graph output '%s' is an output the importer does "
                                          "not produce", name);
                gr_diag_set_layer(imp->diag, name);
                break;
            }
            /* a sequence or optional output is a tuple: its holder gets the elements */
            outs[i] = v->expr;
        }
        if (st == GR_OK) {
            ir_expr *o = g->n_output == 1 ? outs[0]
                                          : (ir_expr *)ir_tuple_new(ctx, (uint32_t)g->n_output,
                                                                    outs, NULL);
            result = (ir_expr *)ir_bb_emit_output(imp->bb, o, "gv");
            if (!result) st = imp->diag->code ? imp->diag->code : GR_ERR_TYPE;
        }
        free(outs);
    }
    ir_seq *body = NULL;
    if (st == GR_OK) {
        ir_bb_end_block(imp->bb);
        body = ir_bb_finish(imp->bb, result, NULL);
        if (!body) st = imp->diag->code ? imp->diag->code : GR_ERR_TYPE;
    }
    if (st == GR_OK) {
        /* Public like TVM's from_onnx main: global_symbol "main". */
        const char *keys[2] = {"global_symbol", "num_input"};
        ir_attr vals[2] = {ir_attr_str(ctx, "main"), ir_attr_int(params.len)};
        const ir_attrs *attrs = ir_attrs_new(ctx, 2, keys, vals);
        ir_func *f = ir_func_new(ctx, params.len, params.data, (ir_expr *)body, NULL, attrs, NULL);
        ir_module *m = ir_module_new(ctx);
        ir_module_set_func(m, "main", (ir_expr *)f);
        *out = m;
    }
    gr_vec_free(&params);
    report_wanted(imp, g);
    return st;
}

/* Imports an unpacked model (consumed: its initializers' bytes are released as they become
 * tensors; the caller frees it). */
static gr_status import_model(ir_ctx_t *ctx, const char *name, const char *file, Onnx__ModelProto *m,
                              const onnx_import_opts *opts, ir_module **out, gr_diag *diag) {
    gr_status st;
    if (!m->graph) {
        st = gr_diag_set(diag, GR_ERR_INVALID, "the model has no graph");
    } else {
        onnx_importer imp = {.ctx = ctx, .diag = diag, .file = file, .opts = opts};
        imp.dir = onnx_dirname(name);
        imp.opset = model_opset(m);
        gr_map_init(&imp.vals);
        gr_map_init(&imp.dim_vars);
        st = import_graph(&imp, m->graph, out);
        importer_free(&imp);
    }
    if (st != GR_OK) {
        gr_diag_set_file(diag, file);
        *out = NULL;
    }
    return st;
}

static void drop_pages(void *arg, size_t upto) { onnx_file_drop(arg, upto); }

/* Unpacks buf (NULL and a located error when it is not a model). The graph's nodes and
 * initializers are unpacked one at a time (onnx_wire.c), so the file's bytes and the unpacked
 * copy are not both resident: of, when buf is its mapping, drops the pages already unpacked. Whatever the walker does not
 * take goes to protobuf-c whole, which reports the error. */
static Onnx__ModelProto *unpack(const char *file, const uint8_t *buf, size_t len, onnx_file *of,
                                gr_diag *diag) {
    if (len == 0) {
        gr_diag_set(diag, GR_ERR_INVALID, "empty file (0 bytes): not an ONNX model");
        gr_diag_set_file(diag, file);
        return NULL;
    }
    Onnx__ModelProto *m = onnx_wire_unpack_model(buf, len, of ? drop_pages : NULL, of);
    if (!m) m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        gr_diag_set(diag, GR_ERR_INVALID, "not a valid ONNX model (truncated or corrupt protobuf)");
        gr_diag_set_file(diag, file);
    }
    return m;
}

gr_status onnx_import_buffer(ir_ctx_t *ctx, const char *name, const uint8_t *buf, size_t len,
                             const onnx_import_opts *opts, ir_module **out, gr_diag *diag) {
    gr_diag local;
    if (!diag) {
        gr_diag_clear(&local);
        diag = &local;
    }
    *out = NULL;
    if (opts && opts->wanted) opts->wanted->n = 0;
    const char *file = name ? name : "<buffer>";
    Onnx__ModelProto *m = unpack(file, buf, len, NULL, diag);
    if (!m) return diag->code;
    gr_status st = import_model(ctx, name, file, m, opts, out, diag);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}

gr_status onnx_import_file(ir_ctx_t *ctx, const char *path, const onnx_import_opts *opts,
                           ir_module **out, gr_diag *diag) {
    gr_diag local;
    if (!diag) {
        gr_diag_clear(&local);
        diag = &local;
    }
    *out = NULL;
    onnx_file of;
    gr_status st = onnx_file_open(path, &of, diag);
    if (st != GR_OK) {
        gr_diag_set_file(diag, path);
        return st;
    }
    if (opts && opts->wanted) opts->wanted->n = 0;
    /* the file's bytes go as soon as they are unpacked (peak memory) */
    Onnx__ModelProto *m = unpack(path, of.data, of.len, &of, diag);
    onnx_file_close(&of);
    if (!m) return diag->code;
    st = import_model(ctx, path, path, m, opts, out, diag);
    onnx__model_proto__free_unpacked(m, NULL);
    return st;
}
