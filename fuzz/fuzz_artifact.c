/* libFuzzer target: the artifact loader (deploy/graft_model.h), host-object validation
 * included, and a run of what loads.
 *
 * The checksum is recomputed over the fuzzed file (as a hand editor would), so mutations reach
 * the body's decoder, the binary module (deploy/artifact_ir.c), the plan check, the external
 * modules and the ELF check instead of stopping at "checksum mismatch".
 *
 * An artifact is code (README: trust model): a loaded model whose host object or module was
 * changed may execute changed machine code, or code compiled for other shapes, which no loader
 * can rule out. So a model is run only when it has no host code, or when its host object and
 * binary module (what loads; the text is not read) are both byte-identical to those of a seed
 * artifact (GRAFT_FUZZ_KNOWN: a directory of the seed .graft files; scripts/fuzz.sh sets it).
 * Everything else (constants, external modules and their graphs, plan, signatures, spans) may
 * be mutated and still runs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/artifact_impl.h"
#include "deploy/graft_model.h"
#include "fuzz/fuzz_util.h"
#include "graft/graft_artifact.pb-c.h"
#define MAX_KNOWN 256

static uint64_t known[MAX_KNOWN];  /* hash(host object) ^ 31 * hash(module) of the seeds */
static uint32_t nknown;

static uint64_t pair_hash(const Graft__ArtifactBody *b) {
    uint64_t h = gr_hash_bytes(b->host_object.data, b->has_host_object ? b->host_object.len : 0, 1);
    return h ^ (gr_hash_bytes(b->module_bin.data, b->has_module_bin ? b->module_bin.len : 0, 2) * 31);
}

static void learn(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    static uint8_t buf[16 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    gr_art_header h;
    if (!gr_art_header_read(buf, n, &h) || !gr_art_sections_in(&h, n)) return;
    Graft__ArtifactBody *b = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    if (b && nknown < MAX_KNOWN) known[nknown++] = pair_hash(b);
    if (b) graft__artifact_body__free_unpacked(b, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("GRAFT_FUZZ_KNOWN");
    DIR *dp = dir ? opendir(dir) : NULL;
    for (struct dirent *e; dp && (e = readdir(dp));) {
        char path[4096];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        learn(path);
    }
    if (dp) closedir(dp);
    return 0;
}

static bool may_run(const Graft__ArtifactBody *b) {
    if (!b->has_host_object || b->host_object.len == 0) return true;
    uint64_t h = pair_hash(b);
    for (uint32_t i = 0; i < nknown; i++)
        if (known[i] == h) return true;
    return false;
}

static void run(graft_model *gm) {
    uint32_t n = graft_model_num_inputs(gm);
    rt_value *in = calloc(n + 1, sizeof(rt_value));
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        const ir_sinfo *s = graft_model_input_sinfo(gm, i);
        int64_t shape[RT_MAX_NDIM];
        ok = s && s->kind == IR_SINFO_TENSOR && s->ndim >= 0 && s->ndim <= RT_MAX_NDIM &&
             ir_sinfo_static_shape(s, shape);
        rt_tensor *t = ok ? fuzz_tensor(s->dtype, s->ndim, shape) : NULL;
        ok = t != NULL;
        if (t) in[i] = rt_value_tensor(t);
    }
    if (ok) {
        rt_value out = {0};
        gr_diag d;
        gr_diag_clear(&d);
        graft_model_run(gm, in, n, &out, &d);
        rt_value_clear(&out);
    }
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gr_art_header h;
    if (!gr_art_header_read(data, size, &h) || !gr_art_sections_in(&h, size)) return 0;
    uint8_t *buf = malloc(size);
    memcpy(buf, data, size);
    gr_art_reseal(buf, size);
    Graft__ArtifactBody *b = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    graft_model *gm = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (graft_model_load_buffer(buf, size, &gm, &d) == GR_OK && b && may_run(b)) run(gm);
    graft_model_free(gm);
    if (b) graft__artifact_body__free_unpacked(b, NULL);
    free(buf);
    return 0;
}
