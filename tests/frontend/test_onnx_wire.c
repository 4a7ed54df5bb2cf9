/* The ONNX importer's split unpack (frontend/onnx/onnx_wire.c): the model without its graph's
 * nodes and initializers, then each of them, gives exactly what protobuf-c's whole-buffer unpack
 * gives, on real models and on crafted buffers cut at every byte; anything malformed is refused
 * (the importer then unpacks the whole buffer); and importing a real model grows the peak RSS by
 * about the file's size, not twice it. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/text/printer.h"
#include "tests/frontend/onnx_test_util.h"
#include "tests/models_env.h"
#include "tests/test_util.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT };


static uint8_t *pack(const Onnx__ModelProto *m, size_t *len) {
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *b = malloc(*len ? *len : 1);
    onnx__model_proto__pack(m, b);
    return b;
}

/* Checks the release callback's promise: offsets only grow and stay inside the buffer. */
typedef struct {
    size_t len, last, calls;
    bool ok;
} release_log;

static void log_release(void *arg, size_t upto) {
    release_log *r = arg;
    if (upto < r->last || upto > r->len) r->ok = false;
    r->last = upto;
    r->calls++;
}

/* The split unpack of buf: NULL, or a model that packs to the same bytes as the whole unpack.
 * Returns whether it took buf. */
static bool split_matches_whole(const uint8_t *buf, size_t len, const char *what) {
    release_log log = {len, 0, 0, true};
    Onnx__ModelProto *s = onnx_wire_unpack_model(buf, len, log_release, &log);
    Onnx__ModelProto *w = onnx__model_proto__unpack(NULL, len, buf);
    cr_expect(log.ok, "%s: release offsets out of order or range", what);
    if (s) {
        cr_assert(w != NULL, "%s: split unpack took what protobuf-c refuses", what);
        size_t ls, lw;
        uint8_t *ps = pack(s, &ls), *pw = pack(w, &lw);
        cr_expect(ls == lw && !memcmp(ps, pw, ls), "%s: split unpack differs from the whole one", what);
        cr_expect_eq(log.calls, s->graph->n_node + s->graph->n_initializer, "%s", what);
        free(ps);
        free(pw);
        onnx__model_proto__free_unpacked(s, NULL);
    }
    if (w) onnx__model_proto__free_unpacked(w, NULL);
    return s != NULL;
}

/* x -> Add(x, w) -> Mul(., c): w a raw_data initializer, c a Constant node's tensor, a typed
 * (float_data) initializer u, and a doc string after the graph. */
static uint8_t *crafted(size_t *len) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"4"};
    tm_input(t, "x", F32, 1, xd);
    int64_t d4[1] = {4};
    Onnx__TensorProto *w = tm_init(t, tm_tensor(t, "w", F32, 1, d4, 0, NULL));
    float wv[4] = {1, 2, 3, 4};
    w->has_raw_data = 1;
    w->raw_data.len = sizeof wv;
    w->raw_data.data = tm_alloc(t, sizeof wv);
    memcpy(w->raw_data.data, wv, sizeof wv);
    float uv[4] = {5, 6, 7, 8};
    tm_init(t, tm_tensor(t, "u", F32, 1, d4, 4, uv));
    Onnx__NodeProto *c = tm_node(t, "Constant", "c", NULL, "c");
    Onnx__AttributeProto *a = tm_attr(t, c, "value");
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    a->t = tm_tensor(t, "cv", F32, 1, d4, 4, uv);
    tm_node(t, "Add", "add", "x,w", "s");
    tm_node(t, "Mul", "mul", "s,c", "y");
    tm_output(t, "y");
    t->m->doc_string = tm_str(t, "after the graph");
    uint8_t *b = tm_pack(t, len);
    tm_free(t);
    return b;
}

Test(onnx_wire, split_unpack_equals_protobuf_c_on_real_models) {
    const char *keys[] = {"GRAFT_MODEL_DET", "GRAFT_MODEL_REC", "GRAFT_MODEL_CLS"};
    const char *files[] = {ONNX_NODE_DIR "/test_conv_with_strides_padding/model.onnx",
                           ONNX_NODE_DIR "/test_if/model.onnx", ONNX_NODE_DIR "/test_loop11/model.onnx",
                           "build/third_party/zoo/resnet18.onnx", "build/third_party/zoo/bert_encoder.onnx"};
    int seen = 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) + sizeof(files) / sizeof(files[0]); i++) {
        size_t nk = sizeof(keys) / sizeof(keys[0]);
        char *path = i < nk ? model_path(keys[i]) : strdup(files[i - nk]);
        size_t len = 0;
        uint8_t *b = path ? (uint8_t *)tu_read_file(path, &len) : NULL;
        if (b) {
            onnx_wire_layout lay;
            cr_expect(onnx_wire_split(b, len, &lay), "%s: the walker refused a valid model", path);
            cr_expect(split_matches_whole(b, len, path), "%s: split unpack failed", path);
            onnx_wire_layout_free(&lay);
            seen++;
        }
        free(b);
        free(path);
    }
    cr_expect_geq(seen, 3);
}

Test(onnx_wire, every_cut_is_refused_or_equal_to_protobuf_c) {
    size_t len;
    uint8_t *b = crafted(&len);
    onnx_wire_layout lay;
    cr_assert(onnx_wire_split(b, len, &lay));
    /* two initializers and three nodes, in file order (nodes come first: field 1) */
    cr_expect_eq(lay.count[ONNX_WIRE_NODE], 3);
    cr_expect_eq(lay.count[ONNX_WIRE_INITIALIZER], 2);
    for (size_t i = 1; i < lay.nparts; i++) cr_expect_gt(lay.parts[i].off, lay.parts[i - 1].off);
    onnx_wire_layout_free(&lay);
    cr_expect(split_matches_whole(b, len, "crafted"));
    char what[64];
    for (size_t n = 0; n < len; n++) {
        snprintf(what, sizeof what, "cut at %zu of %zu", n, len);
        split_matches_whole(b, n, what);
    }
    /* the import of the crafted model computes (x + w) * c */
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_expect_eq(onnx_import_buffer(ctx, "crafted.onnx", b, len, NULL, &m, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    free(b);
}

/* Appends bytes to a copy of buf. */
static uint8_t *with_tail(const uint8_t *buf, size_t len, const uint8_t *tail, size_t n, size_t *out) {
    uint8_t *b = malloc(len + n);
    memcpy(b, buf, len);
    memcpy(b + len, tail, n);
    *out = len + n;
    return b;
}

Test(onnx_wire, malformed_or_unexpected_buffers_are_left_to_protobuf_c) {
    size_t len;
    uint8_t *b = crafted(&len);
    static const struct {
        const char *what;
        uint8_t bytes[12];
        size_t n;
    } tails[] = {
        {"a second graph field (protobuf merges it)", {0x3a, 0x00}, 2},
        {"graph as a varint", {0x38, 0x01}, 2},
        {"a varint of 11 bytes", {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 11},
        {"a truncated varint", {0x08, 0x80}, 2},
        {"a length past the end", {0x32, 0x7f, 0x41}, 3},
        {"a start group", {0x0b}, 1},
        {"field number 0", {0x00, 0x01}, 2},
    };
    for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        size_t n;
        uint8_t *t = with_tail(b, len, tails[i].bytes, tails[i].n, &n);
        onnx_wire_layout lay;
        cr_expect_not(onnx_wire_split(t, n, &lay), "%s: taken", tails[i].what);
        cr_expect_null(onnx_wire_unpack_model(t, n, NULL, NULL), "%s", tails[i].what);
        /* the importer still answers as protobuf-c does: the merged graph imports */
        Onnx__ModelProto *w = onnx__model_proto__unpack(NULL, n, t);
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL;
        gr_diag d;
        gr_diag_clear(&d);
        gr_status st = onnx_import_buffer(ctx, "bad.onnx", t, n, NULL, &m, &d);
        if (w) cr_expect_eq(st, GR_OK, "%s: %s", tails[i].what, d.msg);
        else cr_expect(st == GR_ERR_INVALID && strstr(d.msg, "truncated or corrupt"), "%s: %s", tails[i].what, d.msg);
        if (w) onnx__model_proto__free_unpacked(w, NULL);
        ir_ctx_free(ctx);
        free(t);
    }
    /* no graph at all */
    static const uint8_t nograph[] = {0x08, 0x07};
    onnx_wire_layout lay;
    cr_expect_not(onnx_wire_split(nograph, sizeof nograph, &lay));
    free(b);
}

Test(onnx_wire, non_minimal_keys_and_lengths_split_like_protobuf_c) {
    /* ModelProto{ir_version 8, graph{initializer (key 0x2a as 0xaa 0x00, length 3 as 0x83 0x00)
     * {name "w"}, name "g"}} */
    static const uint8_t b[] = {0x08, 0x08, 0x3a, 0x0a, 0xaa, 0x00, 0x83, 0x00, 0x0a, 0x01, 'w', 0x12, 0x01, 'g'};
    onnx_wire_layout lay;
    cr_assert(onnx_wire_split(b, sizeof b, &lay));
    cr_expect_eq(lay.count[ONNX_WIRE_INITIALIZER], 1);
    cr_expect_eq(lay.parts[0].field, 4);
    cr_expect_eq(lay.parts[0].off, 8);
    cr_expect_eq(lay.parts[0].len, 3);
    onnx_wire_layout_free(&lay);
    split_matches_whole(b, sizeof b, "non-minimal");
}

/* The file mapped and its pages dropped as they are unpacked imports the same module as the
 * buffer API on the same bytes. */
Test(onnx_wire, file_and_buffer_imports_print_the_same) {
    char *path = model_path("GRAFT_MODEL_DET");
    size_t len = 0;
    uint8_t *b = path ? (uint8_t *)tu_read_file(path, &len) : NULL;
    if (!b) {
        free(path);
        cr_skip_test("PP-OCR det not cached (scripts/fetch_models.sh)");
        return;
    }
    ir_ctx_t *c1 = ir_ctx_new(), *c2 = ir_ctx_new();
    ir_module *m1 = NULL, *m2 = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_import_file(c1, path, NULL, &m1, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(onnx_import_buffer(c2, path, b, len, NULL, &m2, &d), GR_OK, "%s", d.msg);
    char *p1 = ir_print_module_str(m1, NULL), *p2 = ir_print_module_str(m2, NULL);
    cr_expect(p1 && p2 && !strcmp(p1, p2));
    free(p1);
    free(p2);
    ir_ctx_free(c1);
    ir_ctx_free(c2);
    free(b);
    free(path);
}

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t kl = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1);
    if (f) fclose(f);
    return v;
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Importing a real model raises the peak RSS by less than 1.5x its file (about 1.1-1.2x on the
 * zoo; the whole-buffer unpack held the file and its copy at once, 2x). */
Test(onnx_wire, import_peak_rss_is_about_one_copy_of_the_weights) {
#ifdef UNDER_ASAN
    cr_skip_test("ASan's quarantine keeps freed blocks resident");
    return;
#endif
    const char *zoo = getenv("GRAFT_ZOO") ? getenv("GRAFT_ZOO") : "build/third_party/zoo";
    char path[4096];
    snprintf(path, sizeof path, "%s/resnet18.onnx", zoo);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        cr_skip_test("no zoo cache (scripts/fetch_zoo.sh)");
        return;
    }
    /* reset VmHWM to the current RSS (Linux >= 4.0) */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    bool reset = f && fputs("5", f) >= 0;
    if (f) reset = fclose(f) == 0 && reset;
    if (!reset) {
        cr_skip_test("cannot reset the peak RSS (/proc/self/clear_refs)");
        return;
    }
    long base = status_kb("VmRSS");
    cr_assert_geq(base, 0);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_import_file(ctx, path, NULL, &m, &d), GR_OK, "%s", d.msg);
    long peak = status_kb("VmHWM") - base;
    double file_kb = (double)sb.st_size / 1024.0;
    cr_expect_lt(peak, 1.5 * file_kb, "import peak %ld KiB for a %.0f KiB file", peak, file_kb);
    /* and the weights are all there: the module holds about the file's size */
    cr_expect_gt(status_kb("VmRSS") - base, 0.9 * file_kb);
    ir_ctx_free(ctx);
}
