/* The artifact file (format version 5), for the loader, its tests and its fuzz target.
 *
 *   [0, 64)                 header: "GRAFTART", u32 version, u32 header bytes (64), u64 body
 *                           bytes, u64 data offset, u64 data bytes, u64 checksum, u32 flags,
 *                           4 zero bytes, u64 body offset (little-endian)
 *   [data offset, + data)   the constants section: page-aligned, each constant 64-aligned at
 *                           its NamedTensor.offset, zero padding between them
 *   [body offset, + body)   ArtifactBody (deploy/graft_artifact.proto), weights not included;
 *                           at or after the constants' end
 *
 * The body follows the constants so that a build writes every constant, prepacked weights
 * included, once at its place as it is made: the body lists them, so it is known last.
 * The checksum chains the data section in GR_ART_CHUNK pieces (each hashed in four
 * interleaved lanes, artifact.c) from GR_ART_SEED, then gr_hash_bytes over the body and the
 * header (all but the checksum), so that a writer hashes as it streams and a loader verifies
 * the mapped section one piece at a time (and lets each piece's pages go). */
#ifndef GRAFT_DEPLOY_ARTIFACT_IMPL_H
#define GRAFT_DEPLOY_ARTIFACT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/expr.h"

#define GR_ART_MAGIC "GRAFTART"
#define GR_ART_HEADER 64u
#define GR_ART_PAGE 4096u
#define GR_ART_ALIGN 64u
#define GR_ART_CHUNK ((size_t)1 << 20)
#define GR_ART_SEED 0x67726166ull

/* flags: the data section holds prepacked weights too (so a loader lets the pages it verified
 * go: a model reads a weight's prepacked form or its plain one, and a pack only on the CPU it
 * was made for) */
#define GR_ART_PACKED 1u

typedef struct gr_art_header {
    uint32_t version;
    uint64_t body_len, data_off, data_len, checksum;
    uint32_t flags;
    uint64_t body_off;
} gr_art_header;

/* Reads the header of buf (len bytes); false when it is not one (magic; for this format
 * version, sizes in bounds of a 64-bit file, a page-aligned data section after the header and
 * a body after it; the file's length is not checked here). Another version's header is read
 * (true) so that its loader names the version. */
bool gr_art_header_read(const uint8_t *buf, size_t len, gr_art_header *h);
void gr_art_header_write(uint8_t out[GR_ART_HEADER], const gr_art_header *h);
/* Whether h's data section and body lie within len bytes (another version's header is not
 * bounded by gr_art_header_read: its sums may wrap). */
bool gr_art_sections_in(const gr_art_header *h, size_t len);
/* The checksum of a complete file whose header is h (reads every data byte once). */
uint64_t gr_art_checksum(const uint8_t *buf, const gr_art_header *h);
/* A copy of the file buf (len bytes, header valid) with `body` as its body and the checksum
 * recomputed (heap, *out_len bytes): tests and the fuzz target edit bodies with it. */
uint8_t *gr_art_with_body(const uint8_t *buf, size_t len, const uint8_t *body, size_t blen, size_t *out_len);
/* The checksum of buf (a complete file) recomputed in place. */
void gr_art_reseal(uint8_t *buf, size_t len);

/* graft_model_build_file, but an old file at path, once replaced, is left under the name *old
 * (heap; NULL when there was none) for the caller to unlink: letting go of a large file's
 * pages takes tens of ms (R3D-18's 134 MB: 26-38), which graft build does beside its check
 * load. */
struct ir_module;
gr_status gr_art_build_file(const struct ir_module *m, const char *path, char **old, gr_diag *diag);

/* graft_model_load_opts but the checksum, for the file a build has just written and hashed as
 * it wrote it (graft build's check load): every other check holds; hashing would read every
 * byte of the file again (R3D-18: 266 MB, a tenth of its build). Its json modules' regions are
 * prepared to check them and released (rt_json_module_check): the model loads but prepares
 * them again if it runs. */
struct byoc_options;
struct graft_model;
gr_status gr_art_load_written(const char *path, const struct byoc_options *opts, struct graft_model **out,
                              gr_diag *diag);

/* The module in binary (artifact_ir.c): what the body's module_bin holds. Encoding lists the
 * module's constants (tensors borrowed from m, *consts heap) in the order the stream names them
 * by index; decoding takes them in that order (each gets a reference of its own) and builds the
 * module in ctx. A stream that does not decode is GR_ERR_INVALID naming the byte. */
gr_status gr_art_ir_encode(const ir_module *m, uint8_t **out, size_t *len, struct rt_tensor ***consts,
                           uint32_t *nconsts, gr_diag *diag);
gr_status gr_art_ir_decode(ir_ctx_t *ctx, const uint8_t *p, size_t len, struct rt_tensor *const *consts,
                           uint32_t nconsts, ir_module **out, gr_diag *diag);

#endif
