/* A damaged or hand-edited host object inside an artifact (checksum recomputed, as an editor
 * would) is refused with a clear error before LLVM's linker sees it. Before the check, each of
 * these crashed the process inside RuntimeDyld (SEGV, or report_fatal_error: "invalid section
 * index", "Relocation type not implemented yet!"). */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/llvm/elf_check.h"
#include "deploy/graft_model.h"
#include "deploy/artifact_impl.h"
#include "graft/graft_artifact.pb-c.h"
#include "ir/text/parser.h"

static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: R.Tensor((4, 64), dtype=\"float32\"), y: R.Tensor((4, 64), dtype=\"float32\")) -> R.Tensor((4, 64), dtype=\"float32\"):\n"
    "        with R.dataflow():\n"
    "            lv: R.Tensor((4, 64), dtype=\"float32\") = R.add(x, y)\n"
    "            lv1: R.Tensor((4, 64), dtype=\"float32\") = R.exp(lv)\n"
    "            gv: R.Tensor((4, 64), dtype=\"float32\") = R.sigmoid(lv1)\n"
    "            R.output(gv)\n"
    "        return gv\n";

/* The artifact of k_mod, unpacked: its body and the host object inside it. */
typedef struct art {
    uint8_t *file;
    size_t file_len;
    Graft__ArtifactBody *body;
    uint8_t *obj;
    size_t len;
} art;

static art make_art(void) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(ir_parse_module(ctx, "t.relax", k_mod, strlen(k_mod), &m, &d), GR_OK, "%s", d.msg);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(graft_model_build(m, &buf, &len, &d), GR_OK, "%s", d.msg);
    ir_ctx_free(ctx);
    gr_art_header h;
    cr_assert(gr_art_header_read(buf, len, &h));
    art r;
    r.file = buf;
    r.file_len = len;
    r.body = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    cr_assert_not_null(r.body);
    cr_assert_gt(r.body->host_object.len, 0, "the model has host code");
    r.len = r.body->host_object.len;
    r.obj = malloc(r.len);
    memcpy(r.obj, r.body->host_object.data, r.len);
    return r;
}

/* The artifact with `obj` (len bytes) as its host object, the checksum recomputed (heap). */
static uint8_t *pack_with(const art *a, const uint8_t *obj, size_t len, size_t *out_len) {
    ProtobufCBinaryData keep = a->body->host_object;
    a->body->host_object.data = (uint8_t *)obj;
    a->body->host_object.len = len;
    size_t bl = graft__artifact_body__get_packed_size(a->body);
    uint8_t *bb = malloc(bl);
    graft__artifact_body__pack(a->body, bb);
    a->body->host_object = keep;
    uint8_t *nb = gr_art_with_body(a->file, a->file_len, bb, bl, out_len);
    free(bb);
    return nb;
}

/* Loads the artifact with `obj` (len bytes) as its host object, the checksum recomputed. */
static gr_status load_with(const art *a, const uint8_t *obj, size_t len, gr_diag *d) {
    size_t nl;
    uint8_t *nb = pack_with(a, obj, len, &nl);
    graft_model *gm = NULL;
    gr_diag_clear(d);
    gr_status st = graft_model_load_buffer(nb, nl, &gm, d);
    graft_model_free(gm);
    free(nb);
    return st;
}

static void free_art(art *a) {
    graft__artifact_body__free_unpacked(a->body, NULL);
    free(a->obj);
    free(a->file);
}

static Elf64_Shdr *shdr(uint8_t *obj, uint32_t i) {
    Elf64_Ehdr *h = (Elf64_Ehdr *)obj;
    return (Elf64_Shdr *)(obj + h->e_shoff) + i;
}

static uint32_t find_section(uint8_t *obj, uint32_t type) {
    Elf64_Ehdr *h = (Elf64_Ehdr *)obj;
    for (uint32_t i = 0; i < h->e_shnum; i++)
        if (shdr(obj, i)->sh_type == type) return i;
    cr_assert_fail("no section of type %u", type);
    return 0;
}

static void expect_refused(const art *a, const uint8_t *obj, size_t len, const char *needle) {
    gr_diag d;
    cr_assert_eq(load_with(a, obj, len, &d), GR_ERR_INVALID, "loaded: %s", d.msg);
    cr_assert(strstr(d.msg, "host object is malformed"), "%s", d.msg);
    cr_assert(strstr(d.msg, needle), "message '%s' lacks '%s'", d.msg, needle);
}

Test(host_object, the_emitted_object_passes) {
    art a = make_art();
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(gr_elf_check(a.obj, a.len, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(load_with(&a, a.obj, a.len, &d), GR_OK, "%s", d.msg);
    free_art(&a);
}

/* RuntimeDyld: report_fatal_error("Relocation type not implemented yet!") */
Test(host_object, unknown_relocation_type_is_refused) {
    art a = make_art();
    uint8_t *o = malloc(a.len);
    memcpy(o, a.obj, a.len);
    Elf64_Shdr *rs = shdr(o, find_section(o, SHT_RELA));
    cr_assert_gt(rs->sh_size, 0);
    Elf64_Rela *r = (Elf64_Rela *)(o + rs->sh_offset);
    r->r_info = ELF64_R_INFO(ELF64_R_SYM(r->r_info), R_X86_64_TPOFF32);
    expect_refused(&a, o, a.len, "relocation type 23");
    free(o);
    free_art(&a);
}

/* RuntimeDyld: report_fatal_error("invalid section index") */
Test(host_object, symbol_in_missing_section_is_refused) {
    art a = make_art();
    uint8_t *o = malloc(a.len);
    memcpy(o, a.obj, a.len);
    Elf64_Shdr *ss = shdr(o, find_section(o, SHT_SYMTAB));
    Elf64_Sym *sym = (Elf64_Sym *)(o + ss->sh_offset);
    uint64_t n = ss->sh_size / sizeof *sym, k = 0;
    while (k < n && ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC) k++;
    cr_assert_lt(k, n, "a function symbol");
    sym[k].st_shndx = 0x7777;
    expect_refused(&a, o, a.len, "does not exist");
    free(o);
    free_art(&a);
}

/* RuntimeDyldELF::processRelocationRef: SEGV on a symbol index past the table */
Test(host_object, relocation_of_missing_symbol_is_refused) {
    art a = make_art();
    uint8_t *o = malloc(a.len);
    memcpy(o, a.obj, a.len);
    Elf64_Shdr *rs = shdr(o, find_section(o, SHT_RELA));
    Elf64_Rela *r = (Elf64_Rela *)(o + rs->sh_offset);
    r->r_info = ELF64_R_INFO(0x00ffffffu, ELF64_R_TYPE(r->r_info));
    expect_refused(&a, o, a.len, "symbol");
    /* and one patching bytes past its section */
    memcpy(o, a.obj, a.len);
    r->r_offset = shdr(o, rs->sh_info)->sh_size - 1;
    expect_refused(&a, o, a.len, "outside its section");
    free(o);
    free_art(&a);
}

/* Through the CLI (GRAFT): `graft run` of such a file exits 1 with the message, no crash. */
Test(host_object, the_cli_exits_1) {
    const char *g = getenv("GRAFT");
    if (!g || !*g) cr_skip("GRAFT is not set: run through `make test`");
    art a = make_art();
    uint8_t *o = malloc(a.len);
    memcpy(o, a.obj, a.len);
    Elf64_Shdr *rs = shdr(o, find_section(o, SHT_RELA));
    Elf64_Rela *r = (Elf64_Rela *)(o + rs->sh_offset);
    r->r_info = ELF64_R_INFO(ELF64_R_SYM(r->r_info), R_X86_64_TPOFF32);
    size_t nl;
    uint8_t *nb = pack_with(&a, o, a.len, &nl);
    char path[] = "/tmp/graft_hostobj_XXXXXX.graft";
    int fd = mkstemps(path, 6);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "wb");
    cr_assert_eq(fwrite(nb, 1, nl, f), nl);
    fclose(f);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' run '%s' --input x=random --input y=random 2>&1", g, path);
    FILE *p = popen(cmd, "r");
    char out[4096] = {0};
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    remove(path);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, out);
    cr_assert(strstr(out, "host object is malformed"), "%s", out);
    free(nb);
    free(o);
    free_art(&a);
}

Test(host_object, tables_outside_the_object_are_refused) {
    art a = make_art();
    uint8_t *o = malloc(a.len);
    memcpy(o, a.obj, a.len);
    ((Elf64_Ehdr *)o)->e_shoff = a.len - 8;
    expect_refused(&a, o, a.len, "section table");
    memcpy(o, a.obj, a.len);
    shdr(o, find_section(o, SHT_SYMTAB))->sh_size = (uint64_t)1 << 40;
    expect_refused(&a, o, a.len, "outside the object");
    memcpy(o, a.obj, a.len);
    shdr(o, find_section(o, SHT_RELA))->sh_info = 999;
    expect_refused(&a, o, a.len, "does not exist");
    memcpy(o, a.obj, a.len);
    ((Elf64_Ehdr *)o)->e_machine = EM_AARCH64;
    expect_refused(&a, o, a.len, "x86-64");
    /* truncated anywhere: refused (the section table sits at the end) */
    for (size_t cut = 1; cut < a.len; cut += a.len / 29 + 1) {
        gr_diag d;
        cr_assert_eq(load_with(&a, a.obj, cut, &d), GR_ERR_INVALID, "cut at %zu loaded", cut);
    }
    free(o);
    free_art(&a);
}

/* Every single-byte change in the headers and tables: refused or linked, never a crash. */
Test(host_object, flipped_bytes_in_the_tables_never_crash, .timeout = 120) {
    art a = make_art();
    uint8_t *o = malloc(a.len);
    Elf64_Ehdr *h = (Elf64_Ehdr *)a.obj;
    size_t lo[3] = {0, h->e_shoff, 0}, hi[3] = {sizeof *h, h->e_shoff + (size_t)h->e_shnum * sizeof(Elf64_Shdr), 0};
    Elf64_Shdr *rs = shdr(a.obj, find_section(a.obj, SHT_RELA));
    lo[2] = rs->sh_offset;
    hi[2] = rs->sh_offset + (rs->sh_size < 96 ? rs->sh_size : 96);
    int refused = 0, tried = 0;
    for (int z = 0; z < 3; z++)
        for (size_t i = lo[z]; i < hi[z]; i += 3) {
            memcpy(o, a.obj, a.len);
            o[i] ^= (uint8_t)(0x5a + i);
            gr_diag d;
            refused += load_with(&a, o, a.len, &d) != GR_OK;
            tried++;
        }
    cr_assert_gt(refused, tried / 4, "%d of %d refused", refused, tried);
    free(o);
    free_art(&a);
}
