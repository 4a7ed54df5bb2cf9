/* graft diff, graft trace --backend and graft explore: inspecting a partition (inspect/inspect.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "frontend/onnx/onnx_import.h"
#include "inspect/inspect.h"
#include "runtime/exec/executor.h"
#include "runtime/npy.h"
#include "tools/cli.h"
#include "tools/cmd_inspect.h"

#define MAX_INPUTS 64
#define MAX_BACKENDS 8

typedef struct insp_args {
    const char *input, *against, *against_model, *against_dumps, *json_out, *out, *layer;
    const char *backends[MAX_BACKENDS];
    uint32_t nbackends;
    struct {
        char name[256];
        const char *source;
    } specs[MAX_INPUTS];
    uint32_t nspecs;
    double rtol, atol, atol_scale, atol_steps;
    bool profile, diff;
    cli_load_opts lo;
} insp_args;

static bool parse_tol(const char *s, double *out) {
    char *end;
    *out = s ? strtod(s, &end) : -1;
    return s && end != s && *end == '\0' && *out >= 0;
}

/* --atol A (absolute) or --atol Ax (A times the layer's largest reference magnitude) */
static bool parse_atol(const char *s, insp_args *a) {
    char buf[64];
    size_t n = s ? strlen(s) : 0;
    bool scaled = n > 1 && n < sizeof buf && s[n - 1] == 'x';
    if (!scaled) {
        a->atol_scale = 0;
        return parse_tol(s, &a->atol);
    }
    memcpy(buf, s, n - 1);
    buf[n - 1] = 0;
    a->atol = 0;
    return parse_tol(buf, &a->atol_scale);
}

/* The options of the three commands; `allowed` lists the ones cmd takes beyond INPUT,
 * --backend, --backend-opt, --input and --input-shape. */
static int parse(const char *cmd, const char *allowed, int argc, char **argv, insp_args *a) {
    const char *v;
    a->rtol = 1e-3;
    a->atol = 0;
    a->atol_scale = 1e-5;
    a->lo.optimize = true; /* what `graft build` and `graft run` offload */
    int br;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        const char *opt = argv[i];
        if (opt[0] == '-' && opt[1] && strncmp(opt, "--backend", 9) != 0 && strncmp(opt, "--input", 7) != 0) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(opt, "="), opt);
            if (!strstr(allowed, name)) return cli_usage_error(cmd, "unknown option '%s'", opt);
        }
        if (strcmp(opt, "--no-opt") == 0) {
            a->lo.optimize = false;
        } else if ((br = cli_backend_opt_arg(argc, argv, &i, cmd)) >= 0) {
            if (br) return br;
        } else if (cli_backend_lib_arg(argc, argv, &i)) {
            /* loaded before the command ran */
        } else if (cli_opt(argc, argv, &i, "--backend", &v, &missing)) {
            if (missing || a->nbackends == MAX_BACKENDS) return cli_usage_error(cmd, "--backend takes a backend name");
            if (!byoc_backend_find(v)) return cli_usage_error(cmd, "unknown backend '%s' (see graft backends)", v);
            a->backends[a->nbackends++] = v;
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&a->lo, v)) return cli_usage_error(cmd, "--input-shape takes NAME=DIMxDIM...");
        } else if (cli_opt(argc, argv, &i, "--input", &v, &missing)) {
            const char *eq = v ? strrchr(v, '=') : NULL;
            if (missing || !eq || eq == v || a->nspecs == MAX_INPUTS || (size_t)(eq - v) >= 256)
                return cli_usage_error(cmd, "--input takes NAME=FILE.npy or NAME=random");
            memcpy(a->specs[a->nspecs].name, v, (size_t)(eq - v));
            a->specs[a->nspecs].name[eq - v] = '\0';
            a->specs[a->nspecs++].source = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--rtol", &v, &missing)) {
            if (missing || !parse_tol(v, &a->rtol)) return cli_usage_error(cmd, "--rtol takes a number >= 0");
        } else if (cli_opt(argc, argv, &i, "--atol", &v, &missing)) {
            if (missing || !parse_atol(v, a))
                return cli_usage_error(cmd, "--atol takes a number >= 0, or Nx: N times each layer's largest magnitude");
        } else if (cli_opt(argc, argv, &i, "--atol-steps", &v, &missing)) {
            if (missing || !parse_tol(v, &a->atol_steps))
                return cli_usage_error(cmd, "--atol-steps takes a number >= 0 (quantization steps of each layer)");
        } else if (cli_opt(argc, argv, &i, "--against", &a->against, &missing) ||
                   cli_opt(argc, argv, &i, "--against-dumps", &a->against_dumps, &missing) ||
                   cli_opt(argc, argv, &i, "--against-model", &a->against_model, &missing) ||
                   cli_opt(argc, argv, &i, "--json", &a->json_out, &missing) ||
                   cli_opt(argc, argv, &i, "--layer", &a->layer, &missing) ||
                   cli_opt(argc, argv, &i, "-o", &a->out, &missing)) {
            if (missing) return cli_usage_error(cmd, "%s needs a value", opt);
        } else if (strcmp(opt, "--profile") == 0) {
            a->profile = true;
        } else if (strcmp(opt, "--diff") == 0) {
            a->diff = true;
        } else if (opt[0] == '-' && opt[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", opt);
        } else if (!a->input) {
            a->input = opt;
        } else {
            return cli_usage_error(cmd, "more than one input ('%s')", opt);
        }
    }
    if (!a->input) return cli_usage_error(cmd, "no input model");
    if (!a->nbackends) return cli_usage_error(cmd, "--backend NAME is required (see graft backends)");
    if (a->against_dumps && (a->against || a->against_model))
        return cli_usage_error(cmd, "--against-dumps DIR is the reference: it takes no --against or --against-model");
    if (a->against && strcmp(a->against, "reference") != 0) {
        if (!byoc_backend_find(a->against)) return cli_usage_error(cmd, "unknown backend '%s' for --against", a->against);
        /* the same backend on another model (--against-model) is no self-comparison */
        for (uint32_t i = 0; i < a->nbackends && !a->against_model; i++)
            if (strcmp(a->backends[i], a->against) == 0)
                return cli_usage_error(cmd, "--against %s compares a backend with itself", a->against);
    }
    return CLI_OK;
}

/* The model's inputs from --input specs (random when not given). */
static gr_status load_inputs(const insp_args *a, const ir_module *m, rt_value *args, uint32_t *nargs, const char **bad,
                             gr_diag *d) {
    rt_exec_t *x = NULL;
    *nargs = 0;
    *bad = a->input;
    gr_status st = rt_exec_new(m, "main", &x, d);
    uint32_t nin = st ? 0 : rt_exec_num_inputs(x);
    if (nin > MAX_INPUTS) st = gr_diag_set(d, GR_ERR_INVALID, "too many inputs (%u)", nin);
    for (uint32_t s = 0; !st && s < a->nspecs; s++) {
        bool found = false;
        for (uint32_t i = 0; i < nin; i++) found |= strcmp(rt_exec_input_name(x, i), a->specs[s].name) == 0;
        if (!found) st = gr_diag_set(d, GR_ERR_INVALID, "the model has no input '%s'", a->specs[s].name);
    }
    for (uint32_t i = 0; !st && i < nin; i++) {
        const char *name = rt_exec_input_name(x, i), *src = "random";
        for (uint32_t s = 0; s < a->nspecs; s++)
            if (strcmp(a->specs[s].name, name) == 0) src = a->specs[s].source;
        rt_tensor *t = NULL;
        bool rnd = strcmp(src, "random") == 0;
        st = rnd ? cli_random_input(name, rt_exec_input_sinfo(x, i), NULL, i + 1, &t, d) : rt_npy_load(src, &t, d);
        if (st && !rnd) *bad = src;
        if (!st) args[(*nargs)++] = rt_value_tensor(t);
    }
    rt_exec_free(x);
    return st;
}

typedef struct session {
    ir_ctx_t *ctx;
    ir_module *m;
    insp_model *im;
    rt_value args[MAX_INPUTS];
    uint32_t nargs;
} session;

static int open_session(const insp_args *a, session *s, bool inputs) {
    memset(s, 0, sizeof(*s));
    gr_diag d;
    gr_diag_clear(&d);
    s->ctx = ir_ctx_new();
    const char *bad = a->input;
    if (cli_load_model(s->ctx, a->input, &a->lo, &s->m, &d) != GR_OK ||
        insp_model_build(s->ctx, s->m, a->backends, a->nbackends, cli_backend_options(), &s->im, &d) != GR_OK ||
        (inputs && load_inputs(a, s->m, s->args, &s->nargs, &bad, &d) != GR_OK))
        return cli_fail(&d, bad);
    return CLI_OK;
}

static void close_session(session *s) {
    for (uint32_t i = 0; i < s->nargs; i++) rt_value_clear(&s->args[i]);
    insp_model_free(s->im);
    ir_ctx_free(s->ctx);
}

static const char *jstr(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Short region names in tables: "region 0" (the legend above the table gives the symbols). */
static int region_no(json_t *regions, const char *sym) {
    size_t i;
    json_t *r;
    json_array_foreach(regions, i, r) if (strcmp(jstr(r, "symbol"), sym) == 0) return (int)i;
    return -1;
}

/* "region 0, composite C, primitive 3 convolution (impl)", "host op relax.add" */
static void describe_place(json_t *regions, json_t *r, char *buf, size_t n) {
    const char *where = jstr(r, "where");
    if (!*where && !*jstr(r, "region")) {
        snprintf(buf, n, "host%s%s", *jstr(r, "reason") ? ": " : "", jstr(r, "reason"));
        return;
    }
    if (strcmp(where, "host") == 0) {
        snprintf(buf, n, "host op %s", jstr(r, "node_op"));
        return;
    }
    int k = snprintf(buf, n, "region %d", region_no(regions, *where ? where : jstr(r, "region")));
    if (*jstr(r, "composite") && k < (int)n) k += snprintf(buf + k, n - (size_t)k, ", composite %s", jstr(r, "composite"));
    if (*jstr(r, "unobservable") && k < (int)n)
        snprintf(buf + k, n - (size_t)k, ", fused into %s%s%s%s", jstr(r, "unobservable"), *jstr(r, "prim_impl") ? " (" : "",
                 jstr(r, "prim_impl"), *jstr(r, "prim_impl") ? ")" : "");
    else if (json_object_get(r, "prim") && k < (int)n)
        snprintf(buf + k, n - (size_t)k, ", primitive %lld %s (%s)", (long long)json_integer_value(json_object_get(r, "prim")),
                 jstr(r, "prim_kind"), jstr(r, "prim_impl"));
    else if (*jstr(r, "node_op") && k < (int)n)
        snprintf(buf + k, n - (size_t)k, ", node %s", jstr(r, "node_op"));
}

static bool write_json(json_t *doc, const char *path) {
    if (json_dump_file(doc, path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "error: %s: cannot write\n", path);
        return false;
    }
    return true;
}

/* A QDQ model's scales and zero points by layer (onnx_model_qparams), NULL for other inputs. */
static json_t *quant_params(const char *input) {
    if (!cli_ends_with(input, ".onnx")) return NULL;
    gr_diag d;
    gr_diag_clear(&d);
    char *text = onnx_model_qparams(input, &d);
    json_t *qp = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (qp && !json_object_size(qp)) {
        json_decref(qp);
        qp = NULL;
    }
    return qp;
}

/* "      input 0: uint8 scale 0.0187 zp 128 | input 1: int8 scale 0.0021..0.0093 (64 channels) zp 0" */
static void print_qparams(json_t *lq) {
    size_t i;
    json_t *q;
    printf("%7s", "");
    json_array_foreach(lq, i, q) {
        printf("%s%s: %s", i ? " | " : "", jstr(q, "role"), jstr(q, "type"));
        json_t *ch = json_object_get(q, "channels");
        if (json_object_get(q, "scale")) printf(" scale %.4g", json_number_value(json_object_get(q, "scale")));
        else if (json_object_get(q, "scale_min"))
            printf(" scale %.4g..%.4g (%lld channels)", json_number_value(json_object_get(q, "scale_min")),
                   json_number_value(json_object_get(q, "scale_max")), (long long)json_integer_value(ch));
        if (json_object_get(q, "zero_point")) printf(" zp %lld", (long long)json_integer_value(json_object_get(q, "zero_point")));
        else if (json_object_get(q, "zero_point_min")) {
            long long lo = json_integer_value(json_object_get(q, "zero_point_min")),
                      hi = json_integer_value(json_object_get(q, "zero_point_max"));
            if (lo == hi) printf(" zp %lld", lo);
            else printf(" zp %lld..%lld", lo, hi);
        } else {
            printf(" zp 0");
        }
    }
    printf("\n");
}

/* ONNX Runtime's intermediate tensors (scripts/ort_dump.py): DIR/index.json names, per tensor,
 * its file and the node that writes it; a node's first output is that layer's value, any
 * output also the layer named as the tensor. */
typedef struct dumps {
    json_t *index;
    GR_VEC(insp_layer_value) vals;
    char inputs[MAX_INPUTS][4096];  /* the files of the inputs ORT ran on */
} dumps;

static void dumps_free(dumps *dd) {
    for (uint32_t i = 0; i < dd->vals.len; i++) rt_tensor_release((rt_tensor *)dd->vals.data[i].value);
    gr_vec_free(&dd->vals);
    json_decref(dd->index);
}

static gr_status dumps_load(const char *dir, insp_args *a, dumps *dd, char *bad, size_t nbad, gr_diag *d) {
    snprintf(bad, nbad, "%s/index.json", dir);
    json_error_t je;
    dd->index = json_load_file(bad, 0, &je);
    json_t *vals = json_object_get(dd->index, "values"), *ins = json_object_get(dd->index, "inputs"), *e;
    if (!json_is_array(vals) || !json_is_array(ins))
        return gr_diag_set(d, GR_ERR_INVALID, "not an index of scripts/ort_dump.py (%s)", dd->index ? "no values / inputs" : je.text);
    size_t i;
    /* ORT's inputs, unless --input gives them */
    json_array_foreach(ins, i, e) {
        const char *name = json_string_value(json_object_get(e, "name")), *file = json_string_value(json_object_get(e, "file"));
        if (!name || !file || strlen(name) >= sizeof a->specs[0].name || i >= MAX_INPUTS)
            return gr_diag_set(d, GR_ERR_INVALID, "input %zu: needs a name and a file", i);
        bool given = false;
        for (uint32_t k = 0; k < a->nspecs; k++) given |= strcmp(a->specs[k].name, name) == 0;
        if (given || a->nspecs == MAX_INPUTS) continue;
        snprintf(dd->inputs[i], sizeof dd->inputs[i], "%s/%s", dir, file);
        snprintf(a->specs[a->nspecs].name, sizeof a->specs[0].name, "%s", name);
        a->specs[a->nspecs++].source = dd->inputs[i];
    }
    json_array_foreach(vals, i, e) {
        const char *node = json_string_value(json_object_get(e, "node")), *tensor = json_string_value(json_object_get(e, "tensor")),
                   *file = json_string_value(json_object_get(e, "file"));
        if (!tensor || !file) {
            snprintf(bad, nbad, "%s/index.json", dir);
            return gr_diag_set(d, GR_ERR_INVALID, "value %zu: needs a tensor and a file", i);
        }
        rt_tensor *t = NULL;
        snprintf(bad, nbad, "%s/%s", dir, file);
        gr_status st = rt_npy_load(bad, &t, d);
        if (st) return st;
        if (node && *node && json_integer_value(json_object_get(e, "output")) == 0) {
            insp_layer_value v = {node, rt_tensor_retain(t)};
            gr_vec_push(&dd->vals, v);
        }
        insp_layer_value v = {tensor, t};
        gr_vec_push(&dd->vals, v);
    }
    return GR_OK;
}

int cmd_diff(int argc, char **argv) {
    static insp_args a;
    static dumps dd;
    memset(&a, 0, sizeof(a));
    memset(&dd, 0, sizeof(dd));
    int rc = parse("diff", "--against --against-model --against-dumps --rtol --atol --atol-steps --json --no-opt", argc, argv, &a);
    if (rc != CLI_OK) return rc;
    gr_diag d;
    gr_diag_clear(&d);
    char bad[4200];
    if (a.against_dumps && dumps_load(a.against_dumps, &a, &dd, bad, sizeof bad, &d) != GR_OK) {
        rc = cli_fail(&d, bad);
        dumps_free(&dd);
        return rc;
    }
    session s;
    if ((rc = open_session(&a, &s, true)) != CLI_OK) {
        close_session(&s);
        dumps_free(&dd);
        return rc;
    }
    json_t *doc = NULL;
    json_t *qp = quant_params(a.input);
    insp_diff_opts o = {.rtol = a.rtol, .atol = a.atol, .atol_scale = a.atol_scale, .against = a.against,
                        .against_values = dd.vals.data, .nagainst_values = dd.vals.len,
                        .qparams = qp, .atol_steps = a.atol_steps};
    /* the float32 model a quantized one was made from: loaded as INPUT was, layers by name */
    ir_module *fm = NULL;
    const char *failed = NULL;
    if (a.against_model && cli_load_model(s.ctx, a.against_model, &a.lo, &fm, &d) != GR_OK) failed = a.against_model;
    o.against_module = fm;
    if (!failed && insp_diff(s.im, &o, s.args, s.nargs, &doc, &d) != GR_OK) failed = a.input;
    if (failed) {
        rc = cli_fail(&d, failed);
        json_decref(qp);
        close_session(&s);
        dumps_free(&dd);
        return rc;
    }
    json_t *sum = json_object_get(doc, "summary");
    char atol[128];
    int k = a.atol_scale > 0 ? snprintf(atol, sizeof atol, "%g + %g x max|ref| per layer", a.atol, a.atol_scale)
                             : snprintf(atol, sizeof atol, "%g", a.atol);
    if (a.atol_steps > 0) snprintf(atol + k, sizeof atol - (size_t)k, " + %g quantization steps", a.atol_steps);
    char against[4200];
    if (a.against_model) snprintf(against, sizeof against, "%s (%s)", a.against_model, jstr(doc, "against"));
    else if (a.against_dumps) snprintf(against, sizeof against, "the tensors in %s (%s)", a.against_dumps, jstr(dd.index, "model"));
    else snprintf(against, sizeof against, "%s", jstr(doc, "against"));
    printf("graft diff: %s vs %s on %s, rtol %g atol %s: %lld layers, %lld ok, %lld diverging, %lld unobservable, %lld other\n",
           a.backends[0], against, a.input, a.rtol, atol, json_integer_value(json_object_get(sum, "layers")),
           json_integer_value(json_object_get(sum, "ok")), json_integer_value(json_object_get(sum, "diverging")),
           json_integer_value(json_object_get(sum, "unobservable")), json_integer_value(json_object_get(sum, "other")));
    json_t *regions = json_object_get(insp_model_json(s.im), "regions");
    size_t ri;
    json_t *rj;
    json_array_foreach(regions, ri, rj) printf("region %zu: %s (backend %s)\n", ri, jstr(rj, "symbol"), jstr(rj, "backend"));
    /* a quantized model's errors also in steps of each layer's scale */
    printf("%5s  %-34s %-12s %10s %10s %s%14s  %s\n", "order", "layer", "status", "max_abs", "max_rel", qp ? "     steps" : "",
           "bad/values", "computed by");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "layers"), i, r) {
        char where[1024];
        describe_place(regions, r, where, sizeof where);
        char cnt[64] = "";
        if (json_object_get(r, "numel"))
            snprintf(cnt, sizeof cnt, "%lld/%lld", json_integer_value(json_object_get(r, "bad")),
                     json_integer_value(json_object_get(r, "numel")));
        char steps[32] = "";
        if (qp && json_object_get(r, "max_steps")) snprintf(steps, sizeof steps, " %9.3g", json_real_value(json_object_get(r, "max_steps")));
        else if (qp) snprintf(steps, sizeof steps, " %9s", "-");
        if (json_object_get(r, "max_abs"))
            printf("%5zu  %-34s %-12s %10.3g %10.3g%s %14s  %s\n", i, jstr(r, "name"), jstr(r, "status"),
                   json_real_value(json_object_get(r, "max_abs")), json_real_value(json_object_get(r, "max_rel")), steps, cnt, where);
        else
            printf("%5zu  %-34s %-12s %10s %10s%s %14s  %s\n", i, jstr(r, "name"), jstr(r, "status"), "-", "-", steps, "", where);
        json_t *lq = json_object_get(qp, jstr(r, "name"));
        if (lq) {
            json_object_set(r, "qparams", lq);
            print_qparams(lq);
        }
    }
    json_t *first = json_object_get(doc, "first_divergence");
    if (json_is_object(first)) {
        char where[1024];
        describe_place(regions, first, where, sizeof where);
        printf("first divergence: layer %s (%s): %s", jstr(first, "name"), jstr(first, "op"), where);
        if (*jstr(first, "region")) printf(" [%s]", jstr(first, "region"));
        if (json_object_get(first, "max_abs"))
            printf(": max abs %.3g, max rel %.3g, %lld of %lld values out of tolerance", json_real_value(json_object_get(first, "max_abs")),
                   json_real_value(json_object_get(first, "max_rel")), json_integer_value(json_object_get(first, "bad")),
                   json_integer_value(json_object_get(first, "numel")));
        if (json_object_get(first, "max_steps"))
            printf(", %.3g steps of %.4g", json_real_value(json_object_get(first, "max_steps")), json_real_value(json_object_get(first, "step")));
        printf("\n");
        rc = CLI_ERR;
    } else {
        printf("every observable layer is within tolerance\n");
    }
    if (a.json_out && !write_json(doc, a.json_out)) rc = CLI_ERR;
    json_decref(qp);
    json_decref(doc);
    close_session(&s);
    dumps_free(&dd);
    return rc;
}

/* graft trace INPUT --layer L --backend B: the layer through FuseOps, Merge and RunCodegen. */
int cmd_trace_backend(int argc, char **argv) {
    static insp_args a;
    memset(&a, 0, sizeof(a));
    int rc = parse("trace", "--layer --no-opt", argc, argv, &a);
    if (rc == CLI_OK && !a.layer) rc = cli_usage_error("trace", "--layer NAME is required");
    if (rc != CLI_OK) return rc;
    session s;
    if ((rc = open_session(&a, &s, false)) != CLI_OK) {
        close_session(&s);
        return rc;
    }
    int L = insp_model_find(s.im, a.layer);
    if (L < 0) {
        fprintf(stderr, "error: %s: no binding produces the output of layer '%s' (no output mark names it)\n", a.input,
                a.layer);
        close_session(&s);
        return CLI_ERR;
    }
    /* what ran it: one run in debug mode on the given (or random) inputs */
    gr_diag d;
    gr_diag_clear(&d);
    const char *bad = a.input;
    bool ran = load_inputs(&a, s.m, s.args, &s.nargs, &bad, &d) == GR_OK && insp_observe(s.im, s.args, s.nargs, true, &d) == GR_OK;
    json_t *o = json_array_get(json_object_get(insp_model_json(s.im), "layers"), (size_t)L);
    printf("layer %s: output of %s %s : %s\n", a.layer, jstr(o, "op"), jstr(o, "var"), jstr(o, "type"));
    printf("before partitioning:\n");
    for (const char *p = jstr(o, "before"); *p;) {
        size_t n = strcspn(p, "\n");
        printf("    %.*s\n", (int)n, p);
        p += n + (p[n] ? 1 : 0);
    }
    if (strcmp(jstr(o, "place"), "region") == 0) {
        printf("FuseOps:    composite %s\n", *jstr(o, "composite") ? jstr(o, "composite") : "?");
        printf("Merge:      region %s (backend %s)\n", jstr(o, "region"), jstr(o, "backend"));
        printf("RunCodegen: R.call_dps_packed(\"%s\", ...) into the %s runtime module\n", jstr(o, "region"), jstr(o, "backend"));
        printf("after partitioning:\n");
        for (const char *p = jstr(o, "after"); *p;) {
            size_t n = strcspn(p, "\n");
            printf("    %.*s\n", (int)n, p);
            p += n + (p[n] ? 1 : 0);
        }
        if (*jstr(o, "near_miss")) printf("near miss:  %s\n", jstr(o, "near_miss"));
        if (!ran)
            printf("runtime:    not run (%s)\n", d.msg);
        else if (*jstr(o, "unobservable"))
            printf("runtime:    no buffer of its own: fused into %s%s%s\n", jstr(o, "unobservable"),
                   *jstr(o, "prim_impl") ? ", impl " : "", jstr(o, "prim_impl"));
        else if (json_object_get(o, "prim"))
            printf("runtime:    primitive %lld: %s (impl %s) writes its output\n", json_integer_value(json_object_get(o, "prim")),
                   jstr(o, "prim_kind"), jstr(o, "prim_impl"));
        else
            printf("runtime:    node %s of the region's graph (%s engine)\n", jstr(o, "node_op"), jstr(o, "backend"));
        /* every primitive whose nodes carry the layer (reorders included), from one profiled run */
        json_t *prims = json_object_get(insp_model_json(s.im), "primitives"), *x;
        size_t k;
        json_array_foreach(json_object_get(o, "prims"), k, x) {
            json_t *p = json_array_get(prims, (size_t)json_integer_value(x));
            printf("%s #%lld %s (%s), %.3f ms%s%s\n", k ? "            " : "primitives:", (long long)json_integer_value(json_object_get(p, "index")),
                   jstr(p, "kind"), jstr(p, "impl"), json_real_value(json_object_get(p, "ms")),
                   *jstr(p, "ref_reason") ? ": on oneDNN's reference kernel: " : "", jstr(p, "ref_reason"));
        }
    } else {
        printf("stays on the host: %s: %s\n", jstr(o, "op"), *jstr(o, "reason") ? jstr(o, "reason") : "no pattern matched");
        if (*jstr(o, "near_miss")) printf("near miss:  %s\n", jstr(o, "near_miss"));
        printf("after partitioning:\n");
        for (const char *p = jstr(o, "after"); *p;) {
            size_t n = strcspn(p, "\n");
            printf("    %.*s\n", (int)n, p);
            p += n + (p[n] ? 1 : 0);
        }
        if (ran) printf("runtime:    host kernel %s\n", jstr(o, "node_op"));
    }
    close_session(&s);
    return CLI_OK;
}

int cmd_explore(int argc, char **argv) {
    static insp_args a;
    memset(&a, 0, sizeof(a));
    int rc = parse("explore", "--profile --diff --rtol --atol --against --no-opt -o", argc, argv, &a);
    if (rc == CLI_OK && !a.out) rc = cli_usage_error("explore", "-o REPORT.html is required");
    if (rc != CLI_OK) return rc;
    session s;
    bool run = a.profile || a.diff;
    if ((rc = open_session(&a, &s, run)) != CLI_OK) {
        close_session(&s);
        return rc;
    }
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = GR_OK;
    if (run) st = insp_observe(s.im, s.args, s.nargs, a.profile, &d);
    if (!st && a.diff) {
        json_t *doc = NULL;
        insp_diff_opts o = {.rtol = a.rtol, .atol = a.atol, .atol_scale = a.atol_scale, .against = a.against};
        st = insp_diff(s.im, &o, s.args, s.nargs, &doc, &d);
        if (!st) {
            json_object_set(insp_model_json(s.im), "diff", json_object_get(doc, "first_divergence"));
            json_object_set_new(insp_model_json(s.im), "tolerance", json_pack("{s:f, s:f, s:f}", "rtol", a.rtol, "atol", a.atol, "atol_scale", a.atol_scale));
        }
        json_decref(doc);
    }
    if (st) {
        rc = cli_fail(&d, a.input);
    } else {
        json_object_set_new(insp_model_json(s.im), "model", json_string(a.input));
        rc = explore_write_html(insp_model_json(s.im), a.out) ? CLI_OK : CLI_ERR;
    }
    close_session(&s);
    return rc;
}
