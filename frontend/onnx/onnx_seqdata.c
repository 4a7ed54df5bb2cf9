/* SequenceProto / OptionalProto (onnx-data.proto) of the ONNX backend test data, read into
 * runtime values: a sequence is a tuple of its tensors, an optional a tuple of 0 or 1 values.
 * onnx-data.proto is not among Debian's generated bindings, so the two small messages are
 * walked here in wire format (field 1 name, 2 elem_type, 3 tensor value(s), 5 sequence
 * value(s), 7 optional value(s)); tensors go through the TensorProto unpacker. Also: the kinds
 * of a model's graph inputs and outputs (tensor, sequence, optional), so a caller knows which
 * reader a data file needs, and their names (for bindings that feed by ONNX name). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_impl.h"

#define SEQ_MAX_ITEMS 4096
#define SEQ_MAX_DEPTH 4

typedef struct wire {
    const uint8_t *p, *end;
} wire;

static bool varint(wire *w, uint64_t *v) {
    *v = 0;
    for (int s = 0; s < 64 && w->p < w->end; s += 7) {
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* Skips a field of wire type wt; false when malformed. */
static bool skip(wire *w, uint32_t wt) {
    uint64_t v;
    switch (wt) {
    case 0: return varint(w, &v);
    case 1: if (w->end - w->p < 8) return false; w->p += 8; return true;
    case 5: if (w->end - w->p < 4) return false; w->p += 4; return true;
    case 2:
        if (!varint(w, &v) || v > (uint64_t)(w->end - w->p)) return false;
        w->p += v;
        return true;
    default: return false;
    }
}

static gr_status push(rt_value *tup, rt_value v, gr_diag *diag) {
    if (tup->u.tuple.n >= SEQ_MAX_ITEMS) {
        rt_value_clear(&v);
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "more than %d sequence items", SEQ_MAX_ITEMS);
    }
    rt_value *items = gr_xrealloc(tup->u.tuple.items, (tup->u.tuple.n + 1) * sizeof(rt_value));
    items[tup->u.tuple.n++] = v;
    tup->u.tuple.items = items;
    return GR_OK;
}

static gr_status msg_value(const uint8_t *buf, size_t len, bool optional, int depth, const char *dir,
                           const char *path, rt_value *out, char **name, gr_diag *diag);

/* One field payload: 3 a TensorProto, 5 a SequenceProto, 7 an OptionalProto. */
static gr_status item(uint32_t field, const uint8_t *p, size_t n, int depth, const char *dir, const char *path,
                      rt_value *tup, gr_diag *diag) {
    rt_value v = {0};
    gr_status st;
    if (field == 3) {
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, n, p);
        if (!tp) return gr_diag_set(diag, GR_ERR_INVALID, "a corrupt TensorProto item");
        rt_tensor *t = NULL;
        st = onnx_tensor_from_proto(tp, dir, path, &t, diag);
        onnx__tensor_proto__free_unpacked(tp, NULL);
        if (st != GR_OK) return st;
        v = rt_value_tensor(t);
    } else {
        st = msg_value(p, n, field == 7, depth + 1, dir, path, &v, NULL, diag);
        if (st != GR_OK) return st;
    }
    return push(tup, v, diag);
}

static gr_status msg_value(const uint8_t *buf, size_t len, bool optional, int depth, const char *dir,
                           const char *path, rt_value *out, char **name, gr_diag *diag) {
    if (depth > SEQ_MAX_DEPTH)
        return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "sequences nested deeper than %d", SEQ_MAX_DEPTH);
    wire w = {buf, buf + len};
    rt_value tup = rt_value_tuple(0);
    gr_status st = GR_OK;
    while (w.p < w.end && st == GR_OK) {
        uint64_t key, n;
        if (!varint(&w, &key)) break;
        uint32_t field = (uint32_t)(key >> 3), wt = (uint32_t)(key & 7);
        if (wt != 2 || (field != 1 && field != 3 && field != 5 && field != 7)) {
            if (!skip(&w, wt)) st = gr_diag_set(diag, GR_ERR_INVALID, "corrupt %s", optional ? "OptionalProto" : "SequenceProto");
            continue;
        }
        if (!varint(&w, &n) || n > (uint64_t)(w.end - w.p)) {
            st = gr_diag_set(diag, GR_ERR_INVALID, "truncated %s", optional ? "OptionalProto" : "SequenceProto");
            break;
        }
        if (field == 1) {
            if (name && !*name) {
                *name = gr_xmalloc(n + 1);
                memcpy(*name, w.p, n);
                (*name)[n] = 0;
            }
        } else {
            st = item(field, w.p, (size_t)n, depth, dir, path, &tup, diag);
            if (st == GR_OK && optional && tup.u.tuple.n > 1)
                st = gr_diag_set(diag, GR_ERR_INVALID, "an OptionalProto with more than one value");
        }
        w.p += n;
    }
    if (st == GR_OK && w.p != w.end) st = gr_diag_set(diag, GR_ERR_INVALID, "truncated protobuf");
    if (st != GR_OK) {
        rt_value_clear(&tup);
        return st;
    }
    *out = tup;
    return GR_OK;
}

gr_status onnx_value_load_pb(const char *path, onnx_io_kind kind, rt_value *out, char **name, gr_diag *diag) {
    *out = (rt_value){0};
    if (name) *name = NULL;
    if (kind == ONNX_IO_TENSOR) {
        rt_tensor *t = NULL;
        gr_status st = onnx_tensor_load_pb(path, &t, name, diag);
        if (st == GR_OK) *out = rt_value_tensor(t);
        return st;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    gr_status st = onnx_read_file(path, &buf, &len, diag);
    if (st != GR_OK) return st;
    char *dir = onnx_dirname(path);
    st = msg_value(buf, len, kind == ONNX_IO_OPTIONAL, 0, dir, path, out, name, diag);
    free(dir);
    free(buf);
    if (st != GR_OK) {
        if (name) {
            free(*name);
            *name = NULL;
        }
        gr_diag_set_file(diag, path);
    }
    return st;
}

onnx_io_kind onnx_type_kind(const Onnx__TypeProto *tp) {
    if (!tp) return ONNX_IO_OTHER;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return ONNX_IO_TENSOR;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return ONNX_IO_SEQUENCE;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return ONNX_IO_OPTIONAL;
    default: return ONNX_IO_OTHER;
    }
}


/* A graph input that an initializer gives a value (not one the caller feeds). */
static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t j = 0; name && j < g->n_initializer; j++)
        if (g->initializer[j]->name && !strcmp(name, g->initializer[j]->name)) return true;
    return false;
}

gr_status onnx_model_io_kinds(const char *path, onnx_io_kind *ins, uint32_t *nin, onnx_io_kind *outs, uint32_t *nout,
                              uint32_t max, gr_diag *diag) {
    Onnx__ModelProto *m = onnx_read_model(path, diag);
    if (!m) return diag ? diag->code : GR_ERR_INVALID;
    const Onnx__GraphProto *g = m->graph;
    *nin = *nout = 0;
    for (size_t i = 0; i < g->n_input && *nin < max; i++)
        if (!is_initializer(g, g->input[i]->name)) ins[(*nin)++] = onnx_type_kind(g->input[i]->type);
    for (size_t i = 0; i < g->n_output && *nout < max; i++) outs[(*nout)++] = onnx_type_kind(g->output[i]->type);
    onnx__model_proto__free_unpacked(m, NULL);
    return GR_OK;
}

char *onnx_model_io_names(const char *path, gr_diag *diag) {
    Onnx__ModelProto *m = onnx_read_model(path, diag);
    if (!m) return NULL;
    const Onnx__GraphProto *g = m->graph;
    json_t *ins = json_array(), *outs = json_array();
    for (size_t i = 0; i < g->n_input; i++)
        if (!is_initializer(g, g->input[i]->name)) json_array_append_new(ins, json_string(g->input[i]->name ? g->input[i]->name : ""));
    for (size_t i = 0; i < g->n_output; i++) json_array_append_new(outs, json_string(g->output[i]->name ? g->output[i]->name : ""));
    onnx__model_proto__free_unpacked(m, NULL);
    json_t *o = json_pack("{s:o, s:o}", "inputs", ins, "outputs", outs);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}
