/* Helpers shared by the pattern tests: parse a module, find blocks and bindings by var name. */
#ifndef GRAFT_TESTS_PATTERNS_PAT_TEST_UTIL_H
#define GRAFT_TESTS_PATTERNS_PAT_TEST_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "ir/builder.h"
#include "ir/op.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/wellformed.h"
#include "patterns/match.h"
#include "patterns/rewrite.h"

#define MOD_HEAD "@I.ir_module\nclass Module:\n    @R.function\n"

static inline ir_module *pt_parse(ir_ctx_t *ctx, const char *text) {
    gr_diag d;
    gr_diag_clear(&d);
    ir_module *m = NULL;
    gr_status st = ir_parse_module(ctx, "test.relax", text, strlen(text), &m, &d);
    cr_assert_eq(st, GR_OK, "parse: %s", d.msg);
    return m;
}

static inline ir_func *pt_main(const ir_module *m) { return ir_module_func(m, "main"); }

static inline const ir_block *pt_block(const ir_func *f, uint32_t i) {
    const ir_seq *s = (const ir_seq *)f->body;
    cr_assert(f->body->kind == IR_SEQ && i < s->nblocks);
    return s->blocks[i];
}

/* The binding of the var named `name` in f (first block that has it), or NULL. */
static inline const ir_binding *pt_binding(const ir_func *f, const char *name) {
    const ir_seq *s = (const ir_seq *)f->body;
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++)
            if (strcmp(s->blocks[b]->bindings[i].var->name, name) == 0) return &s->blocks[b]->bindings[i];
    return NULL;
}

static inline ir_expr *pt_var(const ir_func *f, const char *name) {
    const ir_binding *b = pt_binding(f, name);
    if (b) return &b->var->base;
    for (uint32_t i = 0; i < f->nparams; i++)
        if (strcmp(f->params[i]->name, name) == 0) return &f->params[i]->base;
    return NULL;
}

static inline void pt_wellformed(ir_ctx_t *ctx, ir_func *f) {
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "main", &f->base);
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = ir_wellformed_check(m, &d);
    if (st != GR_OK) ir_print_expr(&f->base, stderr, NULL);
    cr_assert_eq(st, GR_OK, "wellformed: %s", d.msg);
}

/* Number of bindings whose value is a call of op `name` in f. */
static inline uint32_t pt_count_op(const ir_func *f, const char *op) {
    const ir_seq *s = (const ir_seq *)f->body;
    uint32_t n = 0;
    for (uint32_t b = 0; b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++)
            n += ir_is_op_call(s->blocks[b]->bindings[i].value, op);
    return n;
}

static inline uint32_t pt_nbindings(const ir_func *f) {
    const ir_seq *s = (const ir_seq *)f->body;
    uint32_t n = 0;
    for (uint32_t b = 0; b < s->nblocks; b++) n += s->blocks[b]->n;
    return n;
}

#endif
