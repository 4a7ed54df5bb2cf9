/* The quantization parameters of a QDQ model's layers (onnx_model_qparams, onnx_import.h), read
 * from the ONNX graph itself: the importer turns QuantizeLinear / DequantizeLinear into
 * float arithmetic whose constants folding may merge, so the scales are taken where they are
 * written. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"
#include "frontend/onnx/onnx_import.h"

/* The layer name the importer gives node n (onnx_import.c node_layer). */
static char *layer_name(const Onnx__NodeProto *n) {
    if (n->name && *n->name) return strdup(n->name);
    const char *op = n->op_type ? n->op_type : "node", *o = n->n_output && n->output[0] ? n->output[0] : "";
    size_t len = strlen(op) + strlen(o) + 2;
    char *s = malloc(len);
    if (s) snprintf(s, len, "%s_%s", op, o);
    return s;
}

/* The constant named `name`: an initializer or a Constant node's value; NULL when neither. */
static const Onnx__TensorProto *constant(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; name && i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return g->initializer[i];
    for (size_t i = 0; name && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!n->op_type || strcmp(n->op_type, "Constant") || !n->n_output || strcmp(n->output[0], name)) continue;
        for (size_t a = 0; a < n->n_attribute; a++)
            if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, "value")) return n->attribute[a]->t;
    }
    return NULL;
}

/* One tensor's summary: its single value, or "n", "min", "max" of several; false when it is
 * not a readable constant. */
static bool summarize(const Onnx__GraphProto *g, const char *name, const char *dir, const char *path, json_t *o,
                      const char *key, bool integer) {
    const Onnx__TensorProto *tp = constant(g, name);
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (!tp || onnx_tensor_from_proto(tp, dir, path, &t, &d) != GR_OK) return false;
    int64_t n = rt_tensor_numel(t);
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = integer ? (double)onnx_tensor_get_i64(t, i) : rt_tensor_get_f64(t, i);
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
    }
    if (n == 1) {
        json_object_set_new(o, key, integer ? json_integer((json_int_t)lo) : json_real(lo));
    } else if (n > 1) {
        char k[64];
        snprintf(k, sizeof k, "%s_min", key);
        json_object_set_new(o, k, integer ? json_integer((json_int_t)lo) : json_real(lo));
        snprintf(k, sizeof k, "%s_max", key);
        json_object_set_new(o, k, integer ? json_integer((json_int_t)hi) : json_real(hi));
        json_object_set_new(o, "channels", json_integer(n));
    }
    if (integer) {
        ir_dtype dt;
        json_object_set_new(o, "type", json_string(onnx_dtype_from_elem(tp->data_type, &dt) && ir_dtype_name(dt)
                                                       ? ir_dtype_name(dt) : "?"));
    }
    rt_tensor_release(t);
    return true;
}

/* Appends {"role", "tensor", "scale"..., "zero_point"..., "type"} of Q/DQ node q to layer's list. */
static void add(json_t *doc, const char *layer, const char *role, const Onnx__GraphProto *g, const Onnx__NodeProto *q,
                const char *dir, const char *path) {
    json_t *o = json_object();
    json_object_set_new(o, "role", json_string(role));
    json_object_set_new(o, "by", json_string(q->op_type));
    bool dq = !strcmp(q->op_type, "DequantizeLinear");
    json_object_set_new(o, "tensor", json_string(dq ? q->input[0] : q->output[0]));
    if (q->n_input > 1) summarize(g, q->input[1], dir, path, o, "scale", false);
    if (!(q->n_input > 2 && q->input[2][0] && summarize(g, q->input[2], dir, path, o, "zero_point", true)))
        json_object_set_new(o, "type", json_string("uint8")); /* no zero point: 0, uint8 (the spec's default) */
    json_t *l = json_object_get(doc, layer);
    if (!l) json_object_set_new(doc, layer, l = json_array());
    json_array_append_new(l, o);
}

char *onnx_model_qparams(const char *path, gr_diag *diag) {
    Onnx__ModelProto *m = onnx_read_model(path, diag);
    if (!m) return NULL;
    const Onnx__GraphProto *g = m->graph;
    char *dir = onnx_dirname(path);
    json_t *doc = json_object();
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *q = g->node[i];
        if (!q->op_type || (strcmp(q->op_type, "QuantizeLinear") && strcmp(q->op_type, "DequantizeLinear")) ||
            !q->n_input || !q->n_output)
            continue;
        bool dq = !strcmp(q->op_type, "DequantizeLinear");
        char *self = layer_name(q);
        if (self) add(doc, self, "self", g, q, dir, path);
        free(self);
        /* a DQ's readers take it as an input, a Q's producer gives it as an output */
        const char *link = dq ? q->output[0] : q->input[0];
        for (size_t j = 0; j < g->n_node; j++) {
            const Onnx__NodeProto *n = g->node[j];
            if (n == q) continue;
            size_t cnt = dq ? n->n_input : n->n_output;
            for (size_t k = 0; k < cnt; k++) {
                const char *x = dq ? n->input[k] : n->output[k];
                if (!x || strcmp(x, link)) continue;
                char role[32];
                snprintf(role, sizeof role, "%s %zu", dq ? "input" : "output", k);
                char *ln = layer_name(n);
                if (ln) add(doc, ln, role, g, q, dir, path);
                free(ln);
            }
        }
    }
    free(dir);
    onnx__model_proto__free_unpacked(m, NULL);
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}
