/* A node of the engine's graph as the handlers read it: its input and argument entries, its
 * attributes, float32 entries and scalar constants. */
#include <string.h>

#include "backends/dnnl/dnnl_impl.h"

int dn_in_entry(dn_state *S, const rt_json_node *n, uint32_t k) {
    return k < n->ninputs ? (int)rt_json_graph_entry_id(S->g, n->inputs[k]) : -1;
}

/* Entry of call argument k when it is a node input ({"in": i}), else -1. */
int dn_arg_entry(dn_state *S, const rt_json_node *n, uint32_t k) {
    json_t *args = json_object_get(n->attrs, "args");
    json_t *a = json_array_get(args, k);
    json_t *in = a ? json_object_get(a, "in") : NULL;
    if (!json_is_integer(in)) return -1;
    return dn_in_entry(S, n, (uint32_t)json_integer_value(in));
}

bool dn_arg_num(const rt_json_node *n, uint32_t k, double *v) {
    json_t *a = json_array_get(json_object_get(n->attrs, "args"), k);
    if (!a) return false;
    json_t *x = json_object_get(a, "float");
    if (!x) x = json_object_get(a, "int");
    if (!json_is_number(x)) return false;
    *v = json_number_value(x);
    return true;
}

uint32_t dn_nargs(const rt_json_node *n) { return (uint32_t)json_array_size(json_object_get(n->attrs, "args")); }

json_t *dn_attr(const rt_json_node *n, const char *key) {
    return json_object_get(json_object_get(n->attrs, "op_attrs"), key);
}

int64_t dn_attr_int(const rt_json_node *n, const char *key, int64_t dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_integer(v) ? json_integer_value(v) : json_is_real(v) ? (int64_t)json_real_value(v) : dflt;
}

double dn_attr_float(const rt_json_node *n, const char *key, double dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

bool dn_attr_bool(const rt_json_node *n, const char *key, bool dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_boolean(v) ? json_is_true(v) : json_is_integer(v) ? json_integer_value(v) != 0 : dflt;
}

const char *dn_attr_str(const rt_json_node *n, const char *key, const char *dflt) {
    json_t *v = dn_attr(n, key);
    return json_is_string(v) ? json_string_value(v) : dflt;
}

/* Integer list attribute (a bare int counts as one element); returns the count, -1 if absent. */
int dn_attr_ints(const rt_json_node *n, const char *key, int64_t *out, int max) {
    json_t *v = dn_attr(n, key);
    if (json_is_integer(v)) {
        out[0] = json_integer_value(v);
        return 1;
    }
    if (!json_is_array(v)) return -1;
    int c = (int)json_array_size(v);
    if (c > max) return -1;
    for (int i = 0; i < c; i++) {
        json_t *x = json_array_get(v, (size_t)i);
        if (!json_is_number(x)) return -1;
        out[i] = json_is_integer(x) ? json_integer_value(x) : (int64_t)json_real_value(x);
    }
    return c;
}

bool dn_entry_f32(dn_state *S, int e) {
    (void)S;
    const rt_json_node *n = S->ent_node[e].node;
    DLDataType t = n->dtypes[S->ent_node[e].index];
    return t.code == kDLFloat && t.bits == 32 && t.lanes == 1;
}

int dn_entry_ndim(dn_state *S, int e) { return S->ent_node[e].node->ndims[S->ent_node[e].index]; }
const int64_t *dn_entry_shape(dn_state *S, int e) { return S->ent_node[e].node->shapes[S->ent_node[e].index]; }

/* A scalar float32 constant (one element). */
bool dn_scalar_const(dn_state *S, int e, float *v) {
    if (e < 0 || S->ent_node[e].node->kind != RT_JSON_CONST || !dn_entry_f32(S, e)) return false;
    int val = S->ent_val[e];
    if (val < 0) return false;
    const dnnl_memory_desc_t *md = &S->vals.data[val].md;
    /* ptr NULL: released once its consumers were built (const_settle) */
    const char *p = dnnl_memory_desc_get_size(md) == sizeof(float) ? dn_const_data(S, val) : NULL;
    if (!p) return false;
    *v = *(const float *)(p + dn_val_boff(S, val));
    return true;
}

bool dn_in_composite(const rt_json_node *n) { return json_object_get(n->attrs, "dnnl_group") != NULL; }
