/* The text printer's state and the functions its two files share (ir/text/printer.c: names, spans,
 * expressions, statements, functions, the module; ir/text/print_leaf.c: prims, struct info,
 * attributes, constants and the metadata section). */
#ifndef GRAFT_IR_TEXT_PRINT_IMPL_H
#define GRAFT_IR_TEXT_PRINT_IMPL_H

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/tensor.h"
#include "ir/ctx_impl.h"
#include "ir/op.h"
#include "ir/text/printer.h"
#include "ir/text/text_impl.h"
#include "ir/visit.h"

typedef GR_VEC(const ir_prim *) prim_vec;
typedef GR_VEC(const ir_const *) const_vec;
typedef GR_VEC(char *) str_vec;

typedef struct pr {
    ir_sbuf out;
    FILE *sink;         /* non-NULL: out is flushed here as it fills */
    bool spans, meta;
    bool uses_t;
    gr_map var_names;   /* var -> printed name (const char *) */
    struct ntab {       /* hash of a printed name -> owner var (0: free again) */
        struct nslot { uint64_t key, owner; } *s; /* key and value in one slot: one cache
                                                     miss a new name on big functions */
        uint32_t cap, len;
    } used;
    GR_VEC(uint64_t) used_log; /* names taken inside local functions (freed after them) */
    /* names printed as they are (see var_name): which interned names are taken, which vars
     * print under their own name, and those vars in claim order */
    struct aset {
        struct apage { uintptr_t key; uint64_t *bits; } *pg;
        uint32_t cap, len;
        uintptr_t last_key;
        uint64_t *last;
    } taken, own;
    GR_VEC(const ir_var *) claimed;
    bool gen_active;    /* a var was renamed: `used` holds every printed name (see var_name) */
    GR_VEC(const ir_var *) base_log; /* vars that claimed their name inside local functions */
    int local_depth;
    str_vec owned;      /* generated names */
    gr_map sinfo_cache; /* sinfo ptr (| 1 when quoted) -> (offset << 24 | len) + 1 in cache */
    ir_sbuf cache;
    gr_map const_idx;   /* const -> index + 1 */
    const_vec consts;
    /* symbolic var declarations of the function being printed */
    gr_map decl_seen;   /* prim var / sinfo -> 1 */
    prim_vec decls;
    /* decls of module functions already collected by module_uses_t: function -> (start << 32 |
     * count) + 1 in memo_decls (p_func then skips a second pass over a big body) */
    gr_map decl_memo;
    prim_vec memo_decls;
    GR_VEC(const ir_var *) outs; /* R.output vars of the dataflow blocks being printed */
} pr;

/* A var prints under its own (interned, so pointer-unique) name unless another var took that
 * name first. Which names are taken and which vars own theirs are bit sets over arena
 * addresses (a bit per 8 bytes, in 1 KB pages per 64 KB of address space): vars and names
 * defined one after another sit next to each other in the arena, so a big function's claims
 * walk a few cache lines sequentially, where any table indexed by a hash misses the cache on
 * every new var. Only once some var must be renamed (`lv_1`) are names needed by their text:
 * then every claimed name goes into `used` (hash of the text -> owner), which from then on
 * decides; `var_names` holds the renamed vars. */
enum { APAGE_SHIFT = 16, APAGE_WORDS = (1 << APAGE_SHIFT) / 8 / 64 };
/* Trailing "  # span: a; var_span: b; seq_span: c" with the fields that are set. */
typedef struct span_comment {
    bool has_span, has_var, has_seq;
    const ir_span *span, *var, *seq;
} span_comment;

void pp_expr(pr *p, const ir_expr *e, bool top);
void pp_span(pr *p, const ir_span *s);
void pp_prim_to(pr *p, ir_sbuf *b, const ir_prim *x, bool quoted);
const char *pp_dtype_str(ir_dtype t);
void pp_sinfo(pr *p, const ir_sinfo *s, bool quoted);
void pp_attr(pr *p, const ir_attr *a);
uint32_t *pp_sorted_attr_order(const ir_attrs *a);
void pp_const(pr *p, const ir_const *c);
void pp_metadata(pr *p);

static inline void pp_indent(pr *p, int ind) {
    for (int i = 0; i < ind; i++) ir_sbuf_putn(&p->out, "    ", 4);
}

#endif
