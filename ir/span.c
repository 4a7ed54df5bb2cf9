/* Spans and SequentialSpans (hash-consed lists of locs). */
#include "ir/span.h"

#include <string.h>

#include "ir/attrs.h"
#include "ir/ctx_impl.h"

static const ir_span *span_intern(ir_ctx_t *ctx, const ir_loc *locs, uint32_t n) {
    if (n == 0) return NULL;
    size_t size = sizeof(ir_span) + sizeof(ir_loc) * n;
    /* The key must be fully zeroed (bytewise hashing): the header has padding after n. */
    _Alignas(16) unsigned char small[sizeof(ir_span) + sizeof(ir_loc) * 4];
    ir_span *tmp = n <= 4 ? (ir_span *)(void *)small : gr_xmalloc(size);
    memset(tmp, 0, size);
    tmp->n = n;
    memcpy(tmp->locs, locs, sizeof(ir_loc) * n);
    const ir_span *s = ir_hashcons(ctx, IR_HC_SPAN_TAG, tmp, size);
    if (n > 4) free(tmp);
    return s;
}

const ir_span *ir__span_interned(ir_ctx_t *ctx, const ir_loc *loc) {
    if (!loc->source[0]) return NULL;
    ir_loc l;
    memset(&l, 0, sizeof(l));
    l.source = loc->source;
    l.line = loc->line;
    l.col = loc->col;
    l.end_line = loc->end_line;
    l.end_col = loc->end_col;
    l.is_output = loc->is_output ? 1 : 0;
    return span_intern(ctx, &l, 1);
}

const ir_span *ir_span_from_loc(ir_ctx_t *ctx, const ir_loc *loc) {
    if (!loc || !loc->source || !loc->source[0]) return NULL;
    if (!loc->line && !loc->col && !loc->end_line && !loc->end_col) /* a layer name */
        return ir__span_named_n(ctx, loc->source, strlen(loc->source), loc->is_output);
    ir_loc l;
    memset(&l, 0, sizeof(l));
    l.source = ir_intern(ctx, loc->source);
    l.line = loc->line;
    l.col = loc->col;
    l.end_line = loc->end_line;
    l.end_col = loc->end_col;
    l.is_output = loc->is_output ? 1 : 0;
    return span_intern(ctx, &l, 1);
}

const ir_span *ir_span_named(ir_ctx_t *ctx, const char *source, bool is_output) {
    ir_loc l = {.source = source, .is_output = is_output};
    return ir_span_from_loc(ctx, &l);
}

static bool same_place(const ir_loc *a, const ir_loc *b) {
    return a->source == b->source && a->line == b->line && a->col == b->col &&
           a->end_line == b->end_line && a->end_col == b->end_col;
}

const ir_span *ir_span_seq(ir_ctx_t *ctx, const ir_span *const *parts, uint32_t n) {
    uint32_t total = 0;
    const ir_span *only = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!parts[i]) continue;
        total += parts[i]->n;
        only = parts[i];
    }
    if (total == 0) return NULL;
    /* Already canonical parts (spans are only ever built here) need no work when alone. */
    if (total == only->n) return only;
    /* Small lists (the common case: a pass merging a few layers) stay on the stack and dedupe
     * by a linear scan; the seen map only pays off for long ones. */
    enum { SMALL_SEQ = 16 };
    ir_loc small[SMALL_SEQ];
    bool big = total > SMALL_SEQ;
    ir_loc *locs = big ? gr_xmalloc(sizeof(ir_loc) * total) : small;
    uint32_t k = 0;
    gr_map seen; /* source pointer -> 1 (fast reject before the linear check) */
    gr_map_init(&seen);
    for (uint32_t i = 0; i < n; i++) {
        if (!parts[i]) continue;
        for (uint32_t j = 0; j < parts[i]->n; j++) {
            const ir_loc *l = &parts[i]->locs[j];
            bool dup = false;
            if (!big || gr_map_get(&seen, GR_MAP_PTR(l->source), NULL)) {
                for (uint32_t q = 0; q < k; q++) {
                    if (same_place(&locs[q], l)) {
                        locs[q].is_output |= l->is_output;
                        dup = true;
                        break;
                    }
                }
            }
            if (!dup) {
                locs[k++] = *l;
                if (big) gr_map_put(&seen, GR_MAP_PTR(l->source), 1);
            }
        }
    }
    const ir_span *s = span_intern(ctx, locs, k);
    gr_map_free(&seen);
    if (big) free(locs);
    return s;
}

const ir_span *ir_span_concat(ir_ctx_t *ctx, const ir_span *a, const ir_span *b) {
    const ir_span *parts[2] = {a, b};
    return ir_span_seq(ctx, parts, 2);
}

const ir_span *ir_span_with_output(ir_ctx_t *ctx, const ir_span *s, bool is_output) {
    if (!s) return NULL;
    ir_loc *locs = gr_xmalloc(sizeof(ir_loc) * s->n);
    memcpy(locs, s->locs, sizeof(ir_loc) * s->n);
    for (uint32_t i = 0; i < s->n; i++) locs[i].is_output = is_output ? 1 : 0;
    const ir_span *r = span_intern(ctx, locs, s->n);
    free(locs);
    return r;
}

bool ir_span_has_source(const ir_span *s, const char *source) {
    if (!s) return false;
    for (uint32_t i = 0; i < s->n; i++)
        if (strcmp(s->locs[i].source, source) == 0) return true;
    return false;
}

bool ir_span_is_output_of(const ir_span *s, const char *source) {
    if (!s) return false;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->locs[i].is_output && strcmp(s->locs[i].source, source) == 0) return true;
    return false;
}

static void print_loc(const ir_loc *l, FILE *out) {
    ir_print_str_literal(l->source, out);
    if (l->line) {
        fprintf(out, ":%d:%d", l->line, l->col);
        if (l->end_line) fprintf(out, "-%d:%d", l->end_line, l->end_col);
    }
    if (l->is_output) fputc('!', out);
}

const char *ir_span_layer(const ir_span *s) { return s && s->n ? s->locs[0].source : NULL; }

void ir_span_print(const ir_span *s, FILE *out) {
    if (!s) return;
    if (s->n == 1) {
        print_loc(&s->locs[0], out);
        return;
    }
    fputc('[', out);
    for (uint32_t i = 0; i < s->n; i++) {
        if (i) fputs(", ", out);
        print_loc(&s->locs[i], out);
    }
    fputc(']', out);
}
