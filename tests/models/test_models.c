/* Real models: the PaddleOCR det / rec / cls ONNX models fetched by scripts/fetch_models.sh,
 * imported, checked for span coverage (every ONNX node name appears in some span of main), run
 * on the reference executor with the saved input, and compared with ONNX Runtime's outputs
 * (scripts/ort_reference.js). Skipped only when the model cache is absent. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/visit.h"
#include "runtime/exec/executor.h"
#include "runtime/npy.h"
#include "tests/compare_util.h"
#include "tests/test_util.h"

/* Tolerances against ORT. ORT (optimization level "all") folds BatchNorm into the conv weights
 * and fuses activations, and MLAS sums convolutions in another order than the reference
 * kernels, so float32 activations drift by ~1e-6 relative per layer; after the ~100-200 layers
 * of these models that stays below ~1e-5. All three outputs are probabilities (det: sigmoid,
 * rec/cls: softmax) bounded by 1, so 1e-4 absolute + 1e-3 relative sits well above that
 * noise and far below what any wrong op does (errors of 1e-2 and more). */
#define MODEL_ATOL 1e-4
#define MODEL_RTOL 1e-3

typedef struct model_case {
    const char *name;       /* det, rec, cls: also the refs subdirectory */
    const char *env_key;    /* key in models.env */
    int64_t shape[4];       /* the fixed input shape the refs were made with */
} model_case;

static const model_case CASES[] = {
    {"det", "GRAFT_MODEL_DET", {1, 3, 640, 640}},
    {"rec", "GRAFT_MODEL_REC", {1, 3, 48, 320}},
    {"cls", "GRAFT_MODEL_CLS", {1, 3, 48, 192}},
};

/* ---------------------------------------------------------------- models.env ---- */

/* Value of KEY from the environment, else from build/third_party/models.env (or the file
 * named by GRAFT_MODELS_ENV). Returns false when absent. */
static bool env_lookup(const char *key, char *out, size_t n) {
    const char *v = getenv(key);
    if (v && *v) {
        snprintf(out, n, "%s", v);
        return true;
    }
    const char *file = getenv("GRAFT_MODELS_ENV");
    FILE *f = fopen(file && *file ? file : "build/third_party/models.env", "r");
    if (!f) return false;
    char line[4096];
    size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) != 0 || line[klen] != '=') continue;
        char *val = line + klen + 1;
        val[strcspn(val, "\r\n")] = '\0';
        snprintf(out, n, "%s", val);
        found = *val != '\0';
    }
    fclose(f);
    return found;
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ------------------------------------------- ONNX node names (protobuf wire format) ---- */
/* A few lines of wire-format reading are enough for ModelProto.graph (7) -> GraphProto.node (1)
 * -> NodeProto.name (3), and keep this test independent of the importer it checks. */

typedef struct pb_buf {
    const uint8_t *p, *end;
} pb_buf;

static bool pb_varint(pb_buf *b, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

/* Reads the next field: number, wire type and, for length-delimited fields, the payload. */
static bool pb_field(pb_buf *b, uint32_t *num, pb_buf *payload) {
    uint64_t key, v;
    if (!pb_varint(b, &key)) return false;
    *num = (uint32_t)(key >> 3);
    payload->p = payload->end = NULL;
    switch (key & 7) {
    case 0: return pb_varint(b, &v);
    case 1: if (b->end - b->p < 8) return false; b->p += 8; return true;
    case 5: if (b->end - b->p < 4) return false; b->p += 4; return true;
    case 2:
        if (!pb_varint(b, &v) || v > (uint64_t)(b->end - b->p)) return false;
        payload->p = b->p;
        payload->end = b->p + v;
        b->p += v;
        return true;
    default: return false;
    }
}

typedef struct node_names {
    char **names;            /* heap strings: the layer name of each node */
    bool *named;             /* false: the node has no name, names[i] is derived */
    uint32_t n, cap;
} node_names;

static void node_names_free(node_names *nn) {
    for (uint32_t i = 0; i < nn->n; i++) free(nn->names[i]);
    free(nn->names);
    free(nn->named);
}

static char *pb_str(const pb_buf *f) {
    return strndup((const char *)f->p, (size_t)(f->end - f->p));
}

/* Layer names of the graph's nodes: NodeProto.name (3), or for an unnamed node the importer's
 * documented stand-in "<op_type>_<first output>" (op_type 4, output 2). */
static bool read_node_names(const char *path, node_names *out) {
    memset(out, 0, sizeof(*out));
    size_t size = 0;
    uint8_t *data = (uint8_t *)tu_read_file(path, &size);
    bool ok = data && size > 0;
    pb_buf model = {data, data + (ok ? size : 0)}, field;
    uint32_t num;
    while (ok && model.p < model.end) {
        if (!(ok = pb_field(&model, &num, &field))) break;
        if (num != 7 || !field.p) continue;
        pb_buf graph = field, node;
        while (ok && graph.p < graph.end) {
            if (!(ok = pb_field(&graph, &num, &node))) break;
            if (num != 1 || !node.p) continue;
            char *name = NULL, *op = NULL, *out0 = NULL;
            pb_buf nf;
            while (ok && node.p < node.end) {
                if (!(ok = pb_field(&node, &num, &nf))) break;
                if (!nf.p) continue;
                if (num == 3) free(name), name = pb_str(&nf);
                else if (num == 4) free(op), op = pb_str(&nf);
                else if (num == 2 && !out0) out0 = pb_str(&nf);
            }
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 64;
                out->names = realloc(out->names, sizeof(char *) * out->cap);
                out->named = realloc(out->named, sizeof(bool) * out->cap);
            }
            out->named[out->n] = name && *name;
            if (!out->named[out->n]) {
                free(name);
                size_t len = strlen(op ? op : "node") + strlen(out0 ? out0 : "") + 2;
                name = malloc(len);
                snprintf(name, len, "%s_%s", op ? op : "node", out0 ? out0 : "");
            }
            out->names[out->n++] = name;
            free(op);
            free(out0);
        }
    }
    free(data);
    return ok && out->n > 0;
}

/* ------------------------------------------------------------- span coverage ---- */

typedef struct span_walk {
    ir_walker w;
    gr_map sources;          /* interned source pointer -> 1 */
} span_walk;

static void note_span(span_walk *sw, const ir_span *s) {
    for (uint32_t i = 0; s && i < s->n; i++) gr_map_put(&sw->sources, GR_MAP_PTR(s->locs[i].source), 1);
}

static ir_walk_result visit_expr(ir_walker *w, ir_expr *e) {
    note_span((span_walk *)w, e->span);
    return IR_WALK_CONTINUE;
}

static ir_walk_result visit_binding(ir_walker *w, const ir_binding *b, const ir_block *blk) {
    (void)blk;
    note_span((span_walk *)w, b->var->base.span);
    return IR_WALK_CONTINUE;
}

/* Every named ONNX node must be some span's source in main. Returns the number missing. */
static uint32_t check_spans(ir_ctx_t *ctx, const ir_module *m, const char *model_path,
                            const char *label) {
    node_names nn;
    cr_assert(read_node_names(model_path, &nn), "%s: cannot read the node list of %s", label,
              model_path);
    ir_func *main_fn = ir_module_func(m, "main");
    cr_assert_not_null(main_fn, "%s: no main function", label);
    span_walk sw = {0};
    sw.w.visit_expr = visit_expr;
    sw.w.visit_binding = visit_binding;
    gr_map_init(&sw.sources);
    ir_walk_expr(&sw.w, &main_fn->base);
    uint32_t missing = 0, unnamed = 0;
    for (uint32_t i = 0; i < nn.n; i++) {
        unnamed += !nn.named[i];
        const char *src = ir_intern(ctx, nn.names[i]);
        if (!gr_map_get(&sw.sources, GR_MAP_PTR(src), NULL)) {
            if (missing < 10)
                fprintf(stderr, "%s: ONNX node %s'%s' is in no span of main\n", label,
                        nn.named[i] ? "" : "(unnamed) ", src);
            missing++;
        }
    }
    fprintf(stderr, "%s: %u ONNX nodes (%u unnamed), %u span sources in main, %u nodes missing\n",
            label, nn.n, unnamed, sw.sources.len, missing);
    gr_map_free(&sw.sources);
    node_names_free(&nn);
    return missing;
}

/* -------------------------------------------------------------- run vs ORT ---- */

static void run_model(const model_case *mc) {
    char model[4096], refs[4096], path[4200];
    if (!env_lookup(mc->env_key, model, sizeof(model)) || !file_exists(model) ||
        !env_lookup("GRAFT_REFS", refs, sizeof(refs))) {
        cr_skip("%s: model cache absent (no %s in build/third_party/models.env): run "
                "scripts/fetch_models.sh", mc->name, mc->env_key);
    }
    snprintf(path, sizeof(path), "%s/%s/input_0.npy", refs, mc->name);
    if (!file_exists(path))
        cr_skip("%s: ORT reference outputs absent (%s): run scripts/fetch_models.sh", mc->name, path);

    gr_diag d;
    gr_diag_clear(&d);
    ir_ctx_t *ctx = ir_ctx_new();
    onnx_input_shape shape = {.name = "x", .ndim = 4};
    memcpy(shape.dims, mc->shape, sizeof(mc->shape));
    onnx_import_opts opts = {.shapes = &shape, .nshapes = 1};
    ir_module *m = NULL;
    gr_status st = onnx_import_file(ctx, model, &opts, &m, &d);
    cr_assert_eq(st, GR_OK, "%s: import failed: %s", mc->name, d.msg);

    uint32_t missing = check_spans(ctx, m, model, mc->name);
    cr_expect_eq(missing, 0, "%s: %u ONNX node names appear in no span of main", mc->name, missing);

    rt_exec_t *x = NULL;
    st = rt_exec_new(m, "main", &x, &d);
    cr_assert_eq(st, GR_OK, "%s: rt_exec_new: %s", mc->name, d.msg);
    cr_assert_eq(rt_exec_num_inputs(x), 1, "%s: main takes %u inputs", mc->name,
                 rt_exec_num_inputs(x));
    rt_tensor *in = NULL;
    st = rt_npy_load(path, &in, &d);
    cr_assert_eq(st, GR_OK, "%s: %s", path, d.msg);
    rt_value arg = rt_value_tensor(in), result = {0};
    st = rt_exec_run(x, &arg, 1, &result, &d);
    cr_assert_eq(st, GR_OK, "%s: run failed: %s", mc->name, d.msg);

    bool tuple = result.kind == RT_VAL_TUPLE;
    uint32_t nout = tuple ? result.u.tuple.n : 1;
    const rt_value *items = tuple ? result.u.tuple.items : &result;
    uint32_t nref = 0;
    for (;; nref++) {
        snprintf(path, sizeof(path), "%s/%s/output_%u.npy", refs, mc->name, nref);
        if (!file_exists(path)) break;
    }
    cr_assert_eq(nout, nref, "%s: %u outputs, ORT gave %u", mc->name, nout, nref);
    for (uint32_t i = 0; i < nout; i++) {
        snprintf(path, sizeof(path), "%s/%s/output_%u.npy", refs, mc->name, i);
        rt_tensor *want = NULL;
        st = rt_npy_load(path, &want, &d);
        cr_assert_eq(st, GR_OK, "%s: %s", path, d.msg);
        cr_assert_eq(items[i].kind, RT_VAL_TENSOR, "%s: output %u is not a tensor", mc->name, i);
        const rt_tensor *got = items[i].u.t;
        cr_assert(rt_tensor_same_shape(got, want), "%s: output %u has another shape than ORT's",
                  mc->name, i);
        gr_cmp_result e = tc_expect_tensor(got, want, (gr_cmp_opts){.atol = MODEL_ATOL, .rtol = MODEL_RTOL},
                                           "%s: output %u against ORT", mc->name, i);
        fprintf(stderr, "%s: output %u: %lld values, max abs err %.3g, max rel err %.3g (where |ORT| >= "
                "atol), %lld out of tolerance (atol %g + rtol %g)\n", mc->name, i,
                (long long)e.numel, e.max_abs, e.max_rel, (long long)e.bad, MODEL_ATOL, MODEL_RTOL);
        rt_tensor_release(want);
    }
    rt_value_clear(&result);
    rt_value_clear(&arg);
    rt_exec_free(x);
    ir_ctx_free(ctx);
}

/* det is by far the largest (640x640); give it room on a slow reference path. */
Test(models, ppocr_det, .timeout = 300) { run_model(&CASES[0]); }
Test(models, ppocr_rec, .timeout = 120) { run_model(&CASES[1]); }
Test(models, ppocr_cls, .timeout = 60) { run_model(&CASES[2]); }

/* The wire reader itself, on a hand-made ModelProto:
 * graph { node { name: "a" op_type: "" } node { output: "y" op_type: "Relu" } }. */
Test(models, node_name_reader) {
    const uint8_t bytes[] = {
        0x08, 0x07,                           /* ir_version: 7 */
        0x3a, 0x12,                           /* graph (field 7), 18 bytes */
        0x0a, 0x05, 0x1a, 0x01, 'a', 0x22, 0x00, /* node: name "a", op_type "" */
        0x0a, 0x09, 0x12, 0x01, 'y',          /* node: output "y", */
        0x22, 0x04, 'R', 'e', 'l', 'u',       /*       op_type "Relu" */
    };
    char tmpl[] = "/tmp/graft_models_XXXXXX";
    int fd = mkstemp(tmpl);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fwrite(bytes, 1, sizeof(bytes), f);
    fclose(f);
    node_names nn;
    cr_assert(read_node_names(tmpl, &nn));
    remove(tmpl);
    cr_assert_eq(nn.n, 2);
    cr_expect_str_eq(nn.names[0], "a");
    cr_expect(nn.named[0]);
    cr_expect_str_eq(nn.names[1], "Relu_y");
    cr_expect(!nn.named[1]);
    node_names_free(&nn);
}
