/* Structural check of an artifact's host object (elf_check.h). Every field is read with memcpy
 * (the buffer comes from a protobuf field: no alignment) and every offset is checked with
 * overflow-safe arithmetic before use. */
#include "backends/llvm/elf_check.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"

#define MAX_SECTIONS 65280u           /* below SHN_LORESERVE: no extended numbering */
#define MAX_ALIGN 4096u
#define MAX_NOBITS (256u << 20)        /* zero-fill a section may ask the linker for */

/* fmt takes up to two unsigned long long (unused ones are ignored). */
static gr_status bad(gr_diag *d, const char *fmt, unsigned long long a, unsigned long long b) {
    char what[160];
    snprintf(what, sizeof what, fmt, a, b);
    return gr_diag_set(d, GR_ERR_INVALID, "artifact host object is malformed (%s): refusing to link it",
                       what);
}

/* [off, off + n) inside [0, len) */
static bool within(uint64_t off, uint64_t n, uint64_t len) { return off <= len && n <= len - off; }

/* Relocation types compile mode emits, with the bytes each patches. */
typedef struct reloc_kind {
    uint32_t type;
    uint32_t width;
} reloc_kind;
static const reloc_kind reloc_kinds[] = {
    {R_X86_64_64, 8},        {R_X86_64_PC32, 4},        {R_X86_64_PLT32, 4},
    {R_X86_64_GOTPCREL, 4},  {R_X86_64_GOTPCRELX, 4},   {R_X86_64_REX_GOTPCRELX, 4},
};

static uint32_t reloc_width(uint32_t type) {
    for (size_t i = 0; i < sizeof reloc_kinds / sizeof reloc_kinds[0]; i++)
        if (reloc_kinds[i].type == type) return reloc_kinds[i].width;
    return 0;
}

/* Section types compile mode emits (SHT_LLVM_ADDRSIG: the address-significance table). */
static const uint32_t section_types[] = {SHT_NULL,   SHT_PROGBITS, SHT_NOBITS,        SHT_SYMTAB,
                                         SHT_STRTAB, SHT_RELA,     SHT_X86_64_UNWIND, SHT_NOTE,
                                         0x6fff4c03u};

static bool known_section_type(uint32_t t) {
    for (size_t i = 0; i < sizeof section_types / sizeof section_types[0]; i++)
        if (section_types[i] == t) return true;
    return false;
}

typedef struct elf_view {
    const uint8_t *p;
    size_t len;
    uint32_t nsec;
    Elf64_Shdr *sh;                /* nsec, copied out */
} elf_view;

/* A string table: present, with its last byte a NUL (so every in-range name ends). */
static bool strtab_ok(const elf_view *e, uint32_t i) {
    const Elf64_Shdr *s = &e->sh[i];
    return s->sh_type == SHT_STRTAB && s->sh_size > 0 && e->p[s->sh_offset + s->sh_size - 1] == 0;
}

static gr_status check_sections(elf_view *e, gr_diag *d, uint32_t *symtab) {
    *symtab = 0;
    for (uint32_t i = 1; i < e->nsec; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (!known_section_type(s->sh_type))
            return bad(d, "section %llu has type 0x%llx, which the emitter does not produce", i, s->sh_type);
        if (s->sh_type == SHT_NULL) continue;
        if (s->sh_flags & (SHF_COMPRESSED | SHF_TLS | SHF_GROUP))
            return bad(d, "section %llu has flags 0x%llx (compressed, TLS or group)", i, s->sh_flags);
        if (s->sh_addralign > MAX_ALIGN || (s->sh_addralign & (s->sh_addralign - 1)))
            return bad(d, "section %llu has alignment %llu", i, s->sh_addralign);
        if (s->sh_type == SHT_NOBITS) {
            if (s->sh_size > MAX_NOBITS) return bad(d, "section %llu asks for %llu zero bytes", i, s->sh_size);
        } else if (!within(s->sh_offset, s->sh_size, e->len)) {
            return bad(d, "section %llu lies outside the object (offset %llu)", i, s->sh_offset);
        }
        if ((s->sh_flags & SHF_LINK_ORDER) && (s->sh_link == 0 || s->sh_link >= e->nsec))
            return bad(d, "section %llu links to section %llu, which does not exist", i, s->sh_link);
        if (s->sh_type == SHT_SYMTAB) {
            if (*symtab) return bad(d, "a second symbol table (section %llu)", i, 0);
            *symtab = i;
        }
    }
    if (!*symtab) return bad(d, "no symbol table", 0, 0);
    return GR_OK;
}

static gr_status check_symbols(const elf_view *e, uint32_t st, uint64_t *nsyms, gr_diag *d) {
    const Elf64_Shdr *s = &e->sh[st];
    if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_size % sizeof(Elf64_Sym))
        return bad(d, "symbol table entries of %llu bytes (size %llu)", s->sh_entsize, s->sh_size);
    if (s->sh_link == 0 || s->sh_link >= e->nsec || !strtab_ok(e, s->sh_link))
        return bad(d, "the symbol table's string table (section %llu) is missing or unterminated",
                   s->sh_link, 0);
    *nsyms = s->sh_size / sizeof(Elf64_Sym);
    if (s->sh_info > *nsyms) return bad(d, "symbol table: first global %llu of %llu", s->sh_info, *nsyms);
    uint64_t strsz = e->sh[s->sh_link].sh_size;
    for (uint64_t k = 0; k < *nsyms; k++) {
        Elf64_Sym sym;
        memcpy(&sym, e->p + s->sh_offset + k * sizeof sym, sizeof sym);
        if (sym.st_name >= strsz) return bad(d, "symbol %llu: name offset %llu out of range", k, sym.st_name);
        uint32_t type = ELF64_ST_TYPE(sym.st_info);
        if (type != STT_NOTYPE && type != STT_OBJECT && type != STT_FUNC && type != STT_SECTION &&
            type != STT_FILE)
            return bad(d, "symbol %llu has type %llu (TLS, ifunc or unknown)", k, type);
        uint16_t ndx = sym.st_shndx;
        if (ndx == SHN_UNDEF || ndx == SHN_ABS) continue;
        if (ndx >= e->nsec || e->sh[ndx].sh_type == SHT_NULL)
            return bad(d, "symbol %llu refers to section %llu, which does not exist", k, ndx);
        const Elf64_Shdr *in = &e->sh[ndx];
        if (in->sh_type != SHT_PROGBITS && in->sh_type != SHT_NOBITS && in->sh_type != SHT_X86_64_UNWIND)
            return bad(d, "symbol %llu is defined in section %llu, which holds no code or data", k, ndx);
        if (type != STT_SECTION && !within(sym.st_value, sym.st_size, in->sh_size))
            return bad(d, "symbol %llu lies outside its section (value %llu)", k, sym.st_value);
    }
    return GR_OK;
}

static gr_status check_relocations(const elf_view *e, uint32_t st, uint64_t nsyms, gr_diag *d) {
    for (uint32_t i = 1; i < e->nsec; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_RELA) continue;
        if (s->sh_entsize != sizeof(Elf64_Rela) || s->sh_size % sizeof(Elf64_Rela))
            return bad(d, "relocation section %llu has entries of %llu bytes", i, s->sh_entsize);
        if (s->sh_link != st) return bad(d, "relocation section %llu uses symbol table %llu", i, s->sh_link);
        if (s->sh_info == 0 || s->sh_info >= e->nsec)
            return bad(d, "relocation section %llu applies to section %llu, which does not exist", i, s->sh_info);
        const Elf64_Shdr *to = &e->sh[s->sh_info];
        if (to->sh_type != SHT_PROGBITS && to->sh_type != SHT_X86_64_UNWIND)
            return bad(d, "relocation section %llu applies to section %llu, which holds no code or data", i,
                       s->sh_info);
        uint64_t n = s->sh_size / sizeof(Elf64_Rela);
        for (uint64_t k = 0; k < n; k++) {
            Elf64_Rela r;
            memcpy(&r, e->p + s->sh_offset + k * sizeof r, sizeof r);
            uint32_t type = (uint32_t)ELF64_R_TYPE(r.r_info);
            uint64_t sym = ELF64_R_SYM(r.r_info);
            uint32_t w = reloc_width(type);
            if (!w) return bad(d, "relocation type %llu (entry %llu) is not one the emitter produces", type, k);
            if (sym == 0 || sym >= nsyms)
                return bad(d, "relocation %llu refers to symbol %llu, which does not exist", k, sym);
            if (!within(r.r_offset, w, to->sh_size))
                return bad(d, "relocation %llu patches offset %llu, outside its section", k, r.r_offset);
        }
    }
    return GR_OK;
}

gr_status gr_elf_check(const uint8_t *obj, size_t len, gr_diag *d) {
    Elf64_Ehdr h;
    if (len < sizeof h) return bad(d, "%llu bytes, shorter than an ELF header", len, 0);
    memcpy(&h, obj, sizeof h);
    if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) return bad(d, "no ELF magic", 0, 0);
    if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != ELFDATA2LSB ||
        h.e_ident[EI_VERSION] != EV_CURRENT || h.e_version != EV_CURRENT)
        return bad(d, "not a little-endian ELF64 file (class %llu, data %llu)", h.e_ident[EI_CLASS],
                   h.e_ident[EI_DATA]);
    if (h.e_type != ET_REL || h.e_machine != EM_X86_64)
        return bad(d, "ELF type %llu for machine %llu (expected a relocatable x86-64 object)", h.e_type,
                   h.e_machine);
    if (h.e_ehsize != sizeof h || h.e_shentsize != sizeof(Elf64_Shdr) || h.e_phnum != 0)
        return bad(d, "header size %llu, section header size %llu", h.e_ehsize, h.e_shentsize);
    if (h.e_shnum == 0 || h.e_shnum > MAX_SECTIONS)
        return bad(d, "%llu sections", h.e_shnum, 0);
    if (!within(h.e_shoff, (uint64_t)h.e_shnum * sizeof(Elf64_Shdr), len))
        return bad(d, "section table at %llu lies outside the object (%llu bytes)", h.e_shoff, len);
    if (h.e_shstrndx == SHN_UNDEF || h.e_shstrndx >= h.e_shnum)
        return bad(d, "section name table %llu of %llu sections", h.e_shstrndx, h.e_shnum);
    elf_view e = {obj, len, h.e_shnum, gr_xcalloc(h.e_shnum, sizeof(Elf64_Shdr))};
    memcpy(e.sh, obj + h.e_shoff, (size_t)h.e_shnum * sizeof(Elf64_Shdr));
    uint32_t symtab = 0;
    uint64_t nsyms = 0;
    gr_status st = e.sh[0].sh_type == SHT_NULL ? GR_OK : bad(d, "section 0 is not null", 0, 0);
    if (!st) st = check_sections(&e, d, &symtab);
    if (!st && !strtab_ok(&e, h.e_shstrndx))
        st = bad(d, "the section name table (section %llu) is missing or unterminated", h.e_shstrndx, 0);
    for (uint32_t i = 0; i < e.nsec && !st; i++)
        if (e.sh[i].sh_name >= e.sh[h.e_shstrndx].sh_size)
            st = bad(d, "section %llu: name offset %llu out of range", i, e.sh[i].sh_name);
    if (!st) st = check_symbols(&e, symtab, &nsyms, d);
    if (!st) st = check_relocations(&e, symtab, nsyms, d);
    free(e.sh);
    return st;
}
