/* Backend option values: "dnnl.threads=2" assignments checked against the option tables of
 * the registered backends (byoc/backend.h), read back by the backends with their defaults. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"

typedef struct opt_value {
    const byoc_backend *backend;
    const byoc_option *def;
    char *value;
} opt_value;

struct byoc_options {
    GR_VEC(opt_value) v;
};

byoc_options *byoc_options_new(void) { return gr_xcalloc(1, sizeof(byoc_options)); }

void byoc_options_free(byoc_options *o) {
    if (!o) return;
    for (uint32_t i = 0; i < o->v.len; i++) free(o->v.data[i].value);
    gr_vec_free(&o->v);
    free(o);
}

static const byoc_option *find_def(const byoc_backend *b, const char *name, size_t len) {
    for (uint32_t i = 0; i < b->noptions; i++)
        if (strlen(b->options[i].name) == len && strncmp(b->options[i].name, name, len) == 0) return &b->options[i];
    return NULL;
}

static bool parse_bool(const char *s, bool *out) {
    static const struct { const char *text; bool v; } WORDS[] = {{"1", true}, {"true", true}, {"0", false}, {"false", false}};
    for (size_t i = 0; i < sizeof WORDS / sizeof WORDS[0]; i++)
        if (strcmp(s, WORDS[i].text) == 0) {
            *out = WORDS[i].v;
            return true;
        }
    return false;
}

static bool parse_int(const char *s, int64_t *out) {
    if (*s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return false;
    *out = v;
    return true;
}

/* val is one of the '|'-separated choices */
static bool one_of(const char *choices, const char *val) {
    size_t l = strlen(val);
    for (const char *c = choices; c; c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL)
        if (strncmp(c, val, l) == 0 && (c[l] == '|' || c[l] == 0)) return true;
    return false;
}

static const char *TYPE_NAMES[] = {[BYOC_OPT_BOOL] = "1 or 0", [BYOC_OPT_INT] = "a non-negative integer",
                                   [BYOC_OPT_STR] = "text"};

gr_status byoc_options_set(byoc_options *o, const char *a, gr_diag *diag) {
    const char *dot = strchr(a, '.'), *eq = strchr(a, '=');
    if (!dot || !eq || dot > eq)
        return gr_diag_set(diag, GR_ERR_INVALID, "backend option '%s': expected BACKEND.NAME=VALUE (e.g. dnnl.threads=2)", a);
    char backend[64];
    size_t bl = (size_t)(dot - a);
    if (bl >= sizeof backend) bl = sizeof backend - 1;
    memcpy(backend, a, bl);
    backend[bl] = 0;
    const byoc_backend *b = byoc_backend_find(backend);
    if (!b) return gr_diag_set(diag, GR_ERR_INVALID, "backend option '%.*s': no backend '%s' (see graft backends)",
                               (int)(eq - a), a, backend);
    const byoc_option *def = find_def(b, dot + 1, (size_t)(eq - dot - 1));
    if (!def) {
        char known[512] = "";
        for (uint32_t i = 0; i < b->noptions; i++) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", b->options[i].name);
        }
        return gr_diag_set(diag, GR_ERR_INVALID, "backend option '%.*s': backend %s has no option '%.*s' (its options: %s)",
                           (int)(eq - a), a, b->name, (int)(eq - dot - 1), dot + 1, b->noptions ? known : "none");
    }
    const char *val = eq + 1;
    bool bv;
    int64_t iv;
    if ((def->type == BYOC_OPT_BOOL && !parse_bool(val, &bv)) || (def->type == BYOC_OPT_INT && !parse_int(val, &iv)))
        return gr_diag_set(diag, GR_ERR_INVALID, "backend option '%s.%s': '%s' is not %s", b->name, def->name, val,
                           TYPE_NAMES[def->type]);
    if (def->type == BYOC_OPT_STR && def->choices && !one_of(def->choices, val))
        return gr_diag_set(diag, GR_ERR_INVALID, "backend option '%s.%s': '%s' is not one of %s", b->name, def->name, val,
                           def->choices);
    for (uint32_t i = 0; i < o->v.len; i++)
        if (o->v.data[i].def == def) {
            free(o->v.data[i].value);
            o->v.data[i].value = gr_xstrdup(val);
            return GR_OK;
        }
    gr_vec_push(&o->v, ((opt_value){b, def, gr_xstrdup(val)}));
    return GR_OK;
}

static const opt_value *find_value(const byoc_options *o, const byoc_backend *b, const char *name) {
    for (uint32_t i = 0; o && i < o->v.len; i++)
        if (o->v.data[i].backend == b && strcmp(o->v.data[i].def->name, name) == 0) return &o->v.data[i];
    return NULL;
}

const char *byoc_option_str(const byoc_options *o, const byoc_backend *b, const char *name) {
    const opt_value *v = find_value(o, b, name);
    if (v) return v->value;
    const byoc_option *def = find_def(b, name, strlen(name));
    return def ? def->dflt : NULL;
}

int64_t byoc_option_int(const byoc_options *o, const byoc_backend *b, const char *name) {
    const char *s = byoc_option_str(o, b, name);
    int64_t v = 0;
    return s && parse_int(s, &v) ? v : 0;
}

bool byoc_option_bool(const byoc_options *o, const byoc_backend *b, const char *name) {
    const char *s = byoc_option_str(o, b, name);
    bool v = false;
    return s && parse_bool(s, &v) && v;
}

bool byoc_option_given(const byoc_options *o, const byoc_backend *b, const char *name) {
    return find_value(o, b, name) != NULL;
}

const char *byoc_opt_type_name(byoc_opt_type t) {
    static const char *const NAMES[] = {[BYOC_OPT_BOOL] = "bool", [BYOC_OPT_INT] = "int", [BYOC_OPT_STR] = "string"};
    return (size_t)t < sizeof NAMES / sizeof NAMES[0] ? NAMES[t] : "?";
}
