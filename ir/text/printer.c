/* The text format printer: TVMScript as TVM prints Relax, plus span comments and a metadata
 * section (docs/text-format.md). Output goes to one heap buffer (no stdio per token); struct
 * info text is cached per hash-consed pointer, var names are de-duplicated with hash maps.
 * The leaves (prims, struct info, attributes, constants) are in ir/text/print_leaf.c. */
#include "ir/text/printer.h"

#include "ir/text/print_impl.h"

static void p_func(pr *p, const ir_func *f, const char *name, int ind, bool module_level,
                   const ir_var *bound);


/* ---- names ---- */

static uint64_t name_key(const char *s) {
    uint64_t h = gr_hash_bytes(s, strlen(s), 0x9e3779b97f4a7c15ull);
    return h ? h : 1;
}

/* The printed-name table: open addressing on the (already mixed) name hash, presized from the
 * function's binding count by p_func so a big function does not rehash it as it goes. */
static void ntab_init(struct ntab *t, uint32_t cap) {
    t->s = gr_zalloc_big(sizeof(*t->s) * cap);
    t->cap = cap;
    t->len = 0;
}

static void ntab_free(struct ntab *t) {
    gr_free_big(t->s, sizeof(*t->s) * t->cap);
    memset(t, 0, sizeof(*t));
}

static uint64_t ntab_get(const struct ntab *t, uint64_t key) {
    if (!t->cap) return 0;
    uint32_t mask = t->cap - 1;
    for (uint32_t i = (uint32_t)key & mask; t->s[i].key; i = (i + 1) & mask)
        if (t->s[i].key == key) return t->s[i].owner;
    return 0;
}

static void ntab_put(struct ntab *t, uint64_t key, uint64_t owner);

/* Room for n names without growing. */
static void ntab_reserve(struct ntab *t, uint64_t n) {
    uint64_t want = 64;
    while (want * 3 <= n * 4 + 4) want *= 2;
    if (want <= t->cap || want > ((uint64_t)1 << 31)) return;
    struct ntab old = *t;
    ntab_init(t, (uint32_t)want);
    for (uint32_t i = 0; i < old.cap; i++)
        if (old.s[i].key) ntab_put(t, old.s[i].key, old.s[i].owner);
    ntab_free(&old);
}

static void ntab_put(struct ntab *t, uint64_t key, uint64_t owner) {
    if ((uint64_t)(t->len + 1) * 4 >= (uint64_t)t->cap * 3) ntab_reserve(t, (uint64_t)t->cap + 1);
    uint32_t mask = t->cap - 1, i = (uint32_t)key & mask;
    while (t->s[i].key && t->s[i].key != key) i = (i + 1) & mask;
    if (!t->s[i].key) t->len++;
    t->s[i].key = key;
    t->s[i].owner = owner;
}

/* Forgets every name; a big table from a big function is dropped, not cleared per function. */
static void ntab_clear(struct ntab *t) {
    if (t->cap > 4096) ntab_free(t);
    else if (t->len) memset(t->s, 0, sizeof(*t->s) * t->cap);
    t->len = 0;
}


static uint64_t *aset_page(struct aset *a, const void *ptr, bool create) {
    uintptr_t key = (uintptr_t)ptr >> APAGE_SHIFT;
    if (key == a->last_key && a->last) return a->last;
    uint32_t mask = a->cap - 1, i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 40);
    if (a->cap)
        for (i &= mask; a->pg[i].bits; i = (i + 1) & mask)
            if (a->pg[i].key == key) return a->last_key = key, a->last = a->pg[i].bits;
    if (!create) return NULL;
    if ((a->len + 1) * 2 > a->cap) {
        struct aset old = *a;
        a->cap = old.cap ? old.cap * 2 : 64;
        a->pg = gr_xcalloc(a->cap, sizeof(*a->pg));
        a->len = 0;
        mask = a->cap - 1;
        for (uint32_t k = 0; k < old.cap; k++) {
            if (!old.pg[k].bits) continue;
            uint32_t j = (uint32_t)(old.pg[k].key * 0x9e3779b97f4a7c15ull >> 40) & mask;
            while (a->pg[j].bits) j = (j + 1) & mask;
            a->pg[j] = old.pg[k];
            a->len++;
        }
        free(old.pg);
        i = (uint32_t)(key * 0x9e3779b97f4a7c15ull >> 40) & mask;
        while (a->pg[i].bits) i = (i + 1) & mask;
    }
    a->pg[i].key = key;
    a->pg[i].bits = gr_xcalloc(APAGE_WORDS, sizeof(uint64_t));
    a->len++;
    return a->last_key = key, a->last = a->pg[i].bits;
}

static size_t aset_bit(const void *ptr) {
    return ((uintptr_t)ptr & (((uintptr_t)1 << APAGE_SHIFT) - 1)) >> 3;
}

static bool aset_has(struct aset *a, const void *ptr) {
    const uint64_t *w = aset_page(a, ptr, false);
    size_t b = aset_bit(ptr);
    return w && (w[b >> 6] >> (b & 63) & 1);
}

static void aset_put(struct aset *a, const void *ptr, bool on) {
    uint64_t *w = aset_page(a, ptr, on);
    if (!w) return;
    size_t b = aset_bit(ptr);
    if (on) w[b >> 6] |= (uint64_t)1 << (b & 63);
    else w[b >> 6] &= ~((uint64_t)1 << (b & 63));
}

static void aset_free(struct aset *a) {
    for (uint32_t i = 0; i < a->cap; i++) free(a->pg[i].bits);
    free(a->pg);
    memset(a, 0, sizeof(*a));
}

static void gen_activate(pr *p) {
    if (p->gen_active) return;
    p->gen_active = true;
    for (uint32_t i = 0; i < p->claimed.len; i++) {
        const ir_var *v = p->claimed.data[i];
        if (aset_has(&p->own, v)) ntab_put(&p->used, name_key(v->name), GR_MAP_PTR(v));
    }
}

/* Gives back the names vars claimed inside a local function (from base_log[mark] on). */
static void unclaim_since(pr *p, uint32_t mark) {
    while (p->base_log.len > mark) {
        const ir_var *v = p->base_log.data[--p->base_log.len];
        aset_put(&p->taken, v->name, false);
        aset_put(&p->own, v, false);
        if (p->gen_active) ntab_put(&p->used, name_key(v->name), 0); /* copied there on activation */
    }
}

static const char *var_name(pr *p, const ir_var *v) {
    const char *base = v->name && v->name[0] ? v->name : NULL;
    if (base) {
        if (aset_has(&p->own, v)) return base;
        if (!p->gen_active && !aset_has(&p->taken, base)) {
            aset_put(&p->taken, base, true);
            aset_put(&p->own, v, true);
            gr_vec_push(&p->claimed, v);
            if (p->local_depth) gr_vec_push(&p->base_log, v);
            return base;
        }
    } else {
        base = "v";
    }
    gen_activate(p);
    uint64_t key = name_key(base);
    uint64_t owner = ntab_get(&p->used, key);
    if (owner == GR_MAP_PTR(v)) return base;
    uint64_t got;
    if (owner && gr_map_get(&p->var_names, GR_MAP_PTR(v), &got)) return (const char *)(uintptr_t)got;
    const char *name = base;
    if (owner) {
        size_t bl = strlen(base);
        char *cand = gr_xmalloc(bl + 24);
        for (uint64_t i = 1;; i++) {
            snprintf(cand, bl + 24, "%s_%" PRIu64, base, i);
            key = name_key(cand);
            if (!ntab_get(&p->used, key)) break;
        }
        gr_vec_push(&p->owned, cand);
        name = cand;
        gr_map_put(&p->var_names, GR_MAP_PTR(v), GR_MAP_PTR(name));
    }
    ntab_put(&p->used, key, GR_MAP_PTR(v));
    if (p->local_depth) gr_vec_push(&p->used_log, key);
    return name;
}

/* ---- spans ---- */

static void p_loc(pr *p, const ir_loc *l) {
    ir_sbuf_quoted(&p->out, l->source);
    if (l->line) {
        ir_sbuf_putc(&p->out, ':');
        ir_sbuf_int(&p->out, l->line);
        ir_sbuf_putc(&p->out, ':');
        ir_sbuf_int(&p->out, l->col);
        if (l->end_line) {
            ir_sbuf_putc(&p->out, '-');
            ir_sbuf_int(&p->out, l->end_line);
            ir_sbuf_putc(&p->out, ':');
            ir_sbuf_int(&p->out, l->end_col);
        }
    }
    if (l->is_output) ir_sbuf_putc(&p->out, '!');
}

void pp_span(pr *p, const ir_span *s) {
    if (!s) {
        ir_sbuf_puts(&p->out, "none");
        return;
    }
    if (s->n == 1) {
        p_loc(p, &s->locs[0]);
        return;
    }
    ir_sbuf_putc(&p->out, '[');
    for (uint32_t i = 0; i < s->n; i++) {
        if (i) ir_sbuf_puts(&p->out, ", ");
        p_loc(p, &s->locs[i]);
    }
    ir_sbuf_putc(&p->out, ']');
}


static void p_span_comment(pr *p, const span_comment *c) {
    if (!p->spans || !(c->has_span || c->has_var || c->has_seq)) return;
    ir_sbuf_puts(&p->out, "  # ");
    bool first = true;
    if (c->has_span) {
        ir_sbuf_puts(&p->out, "span: ");
        pp_span(p, c->span);
        first = false;
    }
    if (c->has_var) {
        ir_sbuf_puts(&p->out, first ? "var_span: " : "; var_span: ");
        pp_span(p, c->var);
        first = false;
    }
    if (c->has_seq) {
        ir_sbuf_puts(&p->out, first ? "seq_span: " : "; seq_span: ");
        pp_span(p, c->seq);
    }
}


/* ---- expressions ---- */

static void p_args(pr *p, uint32_t n, ir_expr *const *args, bool first) {
    for (uint32_t i = 0; i < n; i++) {
        if (!first || i) ir_sbuf_puts(&p->out, ", ");
        pp_expr(p, args[i], false);
    }
}

static void p_call_attrs(pr *p, const ir_attrs *a) {
    if (!a) return;
    for (uint32_t i = 0; i < a->n; i++) {
        ir_sbuf_puts(&p->out, ", ");
        ir_sbuf_puts(&p->out, a->keys[i]);
        ir_sbuf_putc(&p->out, '=');
        pp_attr(p, &a->vals[i]);
    }
}

static void p_sinfo_list(pr *p, uint32_t n, const ir_sinfo *const *s) {
    if (n == 1 && s[0]->kind == IR_SINFO_TUPLE) {
        /* a tuple result is written as the list of its fields (TVM: out_ty=[A, B]) */
        n = s[0]->n;
        s = s[0]->fields;
    } else if (n == 1) {
        pp_sinfo(p, s[0], false);
        return;
    }
    ir_sbuf_putc(&p->out, '[');
    for (uint32_t i = 0; i < n; i++) {
        if (i) ir_sbuf_puts(&p->out, ", ");
        pp_sinfo(p, s[i], false);
    }
    ir_sbuf_putc(&p->out, ']');
}

static void p_call(pr *p, const ir_call *c) {
    const ir_expr *callee = c->callee;
    if (callee->kind == IR_OP) {
        const ir_op_def *def = ((const ir_op *)callee)->def;
        ir_sbuf_puts(&p->out, def->text_name);
        ir_sbuf_putc(&p->out, '(');
        if ((def->flags & IR_OPF_CALL_LIKE) && c->nargs >= 1) {
            const ir_expr *f = c->args[0];
            if (f->kind == IR_EXTERN && !(p->spans && f->span))
                ir_sbuf_quoted(&p->out, ((const ir_extern *)f)->symbol);
            else
                pp_expr(p, f, false);
            p_args(p, c->nargs - 1, c->args + 1, false);
            p_call_attrs(p, c->attrs);
            if (c->nsinfo_args) {
                ir_sbuf_puts(&p->out, ", out_ty=");  /* TVM 0.27's name (out_sinfo before) */
                p_sinfo_list(p, c->nsinfo_args, c->sinfo_args);
            }
        } else {
            for (uint32_t i = 0; i < c->nargs; i++) {
                /* an integer PrimValue argument prints bare, `R.clip(x, 0, 4)`, as TVM prints it */
                const ir_expr *a = c->args[i];
                int64_t iv;
                if (i) ir_sbuf_puts(&p->out, ", ");
                if (a->kind == IR_PRIMVAL && !(p->spans && a->span) &&
                    ir_dtype_eq(((const ir_primval *)a)->dtype, IR_DTYPE_I64) && ((const ir_primval *)a)->value &&
                    ir_prim_is_int(((const ir_primval *)a)->value, &iv))
                    ir_sbuf_int(&p->out, iv);
                else
                    pp_expr(p, a, false);
            }
            p_call_attrs(p, c->attrs);
            if (c->nsinfo_args) {
                ir_sbuf_puts(&p->out, c->nargs || (c->attrs && c->attrs->n) ? ", ty_args=(" : "ty_args=(");
                for (uint32_t i = 0; i < c->nsinfo_args; i++) {
                    if (i) ir_sbuf_puts(&p->out, ", ");
                    pp_sinfo(p, c->sinfo_args[i], false);
                }
                ir_sbuf_puts(&p->out, c->nsinfo_args == 1 ? ",)" : ")");
            }
        }
        ir_sbuf_putc(&p->out, ')');
        return;
    }
    pp_expr(p, callee, false);
    ir_sbuf_putc(&p->out, '(');
    p_args(p, c->nargs, c->args, true);
    ir_sbuf_putc(&p->out, ')');
}

static void p_expr_inner(pr *p, const ir_expr *e) {
    switch ((ir_expr_kind)e->kind) {
    case IR_VAR:
    case IR_DFVAR: ir_sbuf_puts(&p->out, var_name(p, (const ir_var *)e)); return;
    case IR_CONST: pp_const(p, (const ir_const *)e); return;
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        ir_sbuf_putc(&p->out, '(');
        p_args(p, t->n, t->fields, true);
        if (t->n == 1) ir_sbuf_putc(&p->out, ',');
        ir_sbuf_putc(&p->out, ')');
        return;
    }
    case IR_TGI: {
        const ir_tgi *t = (const ir_tgi *)e;
        pp_expr(p, t->tuple, false);
        ir_sbuf_putc(&p->out, '[');
        ir_sbuf_int(&p->out, t->index);
        ir_sbuf_putc(&p->out, ']');
        return;
    }
    case IR_CALL: p_call(p, (const ir_call *)e); return;
    case IR_OP: ir_sbuf_puts(&p->out, ((const ir_op *)e)->def->text_name); return;
    case IR_GVAR:
        ir_sbuf_puts(&p->out, "cls.");
        ir_sbuf_puts(&p->out, ((const ir_gvar *)e)->name);
        return;
    case IR_EXTERN:
        ir_sbuf_puts(&p->out, "R.ExternFunc(");
        ir_sbuf_quoted(&p->out, ((const ir_extern *)e)->symbol);
        ir_sbuf_putc(&p->out, ')');
        return;
    case IR_SHAPE: {
        const ir_shape_expr *s = (const ir_shape_expr *)e;
        ir_sbuf_puts(&p->out, "R.shape([");
        for (uint32_t i = 0; i < s->n; i++) {
            if (i) ir_sbuf_puts(&p->out, ", ");
            pp_prim_to(p, &p->out, s->dims[i], false);
        }
        ir_sbuf_puts(&p->out, "])");
        return;
    }
    case IR_PRIMVAL: {
        const ir_primval *v = (const ir_primval *)e;
        ir_sbuf_puts(&p->out, "R.prim_value(");
        if (v->value && ir_dtype_eq(v->dtype, IR_DTYPE_I64)) {
            pp_prim_to(p, &p->out, v->value, false);
        } else {
            p->uses_t = true;
            ir_sbuf_puts(&p->out, "T.");
            ir_sbuf_puts(&p->out, pp_dtype_str(v->dtype));
            ir_sbuf_putc(&p->out, '(');
            if (v->value) pp_prim_to(p, &p->out, v->value, false);
            else ir_sbuf_double(&p->out, v->fvalue);
            ir_sbuf_putc(&p->out, ')');
        }
        ir_sbuf_putc(&p->out, ')');
        return;
    }
    case IR_STR:
        ir_sbuf_puts(&p->out, "R.str(");
        ir_sbuf_quoted(&p->out, ((const ir_str *)e)->value);
        ir_sbuf_putc(&p->out, ')');
        return;
    case IR_FUNC:
    case IR_SEQ:
    case IR_IF:
    case IR_EXPR_KIND_COUNT:
        /* Not expressible inline (the printer binds them as statements). */
        ir_sbuf_puts(&p->out, "R.__unprintable_");
        ir_sbuf_puts(&p->out, ir_expr_kind_name((ir_expr_kind)e->kind));
        return;
    }
}

void pp_expr(pr *p, const ir_expr *e, bool top) {
    if (!top && p->spans && e->span && ir_text_own_span(e)) {
        ir_sbuf_puts(&p->out, "R.with_span(");
        p_expr_inner(p, e);
        ir_sbuf_puts(&p->out, ", ");
        pp_span(p, e->span);
        ir_sbuf_putc(&p->out, ')');
        return;
    }
    p_expr_inner(p, e);
}

/* ---- `cls = Module`: TVM's printer binds the module before any `cls.f` of a function ---- */

static ir_walk_result gvar_seen(ir_walker *w, ir_expr *e) {
    if (e->kind != IR_GVAR) return IR_WALK_CONTINUE;
    *(bool *)w->user = true;
    return IR_WALK_ABORT;
}

static bool refers_to_globals(const ir_func *f) {
    bool seen = false;
    ir_walker w = {0};
    w.visit_expr = gvar_seen;
    w.user = &seen;
    ir_walk_expr(&w, (ir_expr *)f);
    return seen;
}

/* ---- symbolic var declarations (`n = T.int64()`) ---- */

static void decl_var(const ir_prim *v, void *user) {
    pr *p = user;
    if (gr_map_get(&p->decl_seen, GR_MAP_PTR(v), NULL)) return;
    gr_map_put(&p->decl_seen, GR_MAP_PTR(v), 1);
    gr_vec_push(&p->decls, v);
}

static void decl_prim(pr *p, const ir_prim *x) {
    if (x && !ir_prim_is_int(x, NULL)) ir_prim_visit_vars(x, decl_var, p);
}

static void decl_sinfo(pr *p, const ir_sinfo *s) {
    if (!s || gr_map_get(&p->decl_seen, GR_MAP_PTR(s) | 1, NULL)) return;
    gr_map_put(&p->decl_seen, GR_MAP_PTR(s) | 1, 1);
    if (s->dims)
        for (int32_t i = 0; i < s->ndim; i++) decl_prim(p, s->dims[i]);
    decl_prim(p, s->value);
    for (uint32_t i = 0; i < s->n; i++) decl_sinfo(p, s->fields[i]);
    decl_sinfo(p, s->ret);
}

static void decl_expr(pr *p, const ir_expr *e);

static void decl_seq(pr *p, const ir_expr *e) {
    if (e->kind != IR_SEQ) {
        decl_expr(p, e);
        return;
    }
    const ir_seq *s = (const ir_seq *)e;
    for (uint32_t b = 0; b < s->nblocks; b++) {
        const ir_block *blk = s->blocks[b];
        for (uint32_t i = 0; i < blk->n; i++) {
            const ir_binding *bd = &blk->bindings[i];
            decl_sinfo(p, bd->var->base.sinfo);
            decl_sinfo(p, bd->match_sinfo);
            decl_expr(p, bd->value);
        }
    }
    decl_expr(p, s->body);
}

static void decl_expr(pr *p, const ir_expr *e) {
    switch ((ir_expr_kind)e->kind) {
    case IR_TUPLE: {
        const ir_tuple *t = (const ir_tuple *)e;
        for (uint32_t i = 0; i < t->n; i++) decl_expr(p, t->fields[i]);
        return;
    }
    case IR_TGI: decl_expr(p, ((const ir_tgi *)e)->tuple); return;
    case IR_CALL: {
        const ir_call *c = (const ir_call *)e;
        for (uint32_t i = 0; i < c->nargs; i++) decl_expr(p, c->args[i]);
        for (uint32_t i = 0; i < c->nsinfo_args; i++) decl_sinfo(p, c->sinfo_args[i]);
        return;
    }
    case IR_FUNC: {
        const ir_func *f = (const ir_func *)e;
        for (uint32_t i = 0; i < f->nparams; i++) decl_sinfo(p, f->params[i]->base.sinfo);
        decl_sinfo(p, f->ret_sinfo);
        if (f->body) decl_seq(p, f->body);
        return;
    }
    case IR_SEQ: decl_seq(p, e); return;
    case IR_IF: {
        const ir_if *x = (const ir_if *)e;
        decl_expr(p, x->cond);
        decl_seq(p, x->then_branch);
        decl_seq(p, x->else_branch);
        return;
    }
    case IR_SHAPE: {
        const ir_shape_expr *s = (const ir_shape_expr *)e;
        for (uint32_t i = 0; i < s->n; i++) decl_prim(p, s->dims[i]);
        return;
    }
    case IR_PRIMVAL: {
        const ir_primval *v = (const ir_primval *)e;
        if (!v->value || !ir_dtype_eq(v->dtype, IR_DTYPE_I64)) p->uses_t = true;
        decl_prim(p, v->value);
        return;
    }
    default: return;
    }
}

/* ---- statements ---- */

static void p_block_bindings(pr *p, const ir_block *blk, int ind);

/* `name: S = ` prefix of a binding or an if-branch result. */
static void p_lhs(pr *p, const char *name, const ir_sinfo *s) {
    ir_sbuf_puts(&p->out, name);
    if (s) {
        ir_sbuf_puts(&p->out, ": ");
        pp_sinfo(p, s, false);
    }
    ir_sbuf_puts(&p->out, " = ");
}

/* Blocks of a seq, then its result as `return x` (or `name: S = x` for if branches). */
static void p_seq_stmts(pr *p, const ir_expr *body, int ind, const char *result_name,
                        const ir_sinfo *result_sinfo) {
    const ir_expr *res = body;
    const ir_span *seq_span = NULL;
    bool is_seq = body->kind == IR_SEQ;
    if (is_seq) {
        const ir_seq *s = (const ir_seq *)body;
        for (uint32_t b = 0; b < s->nblocks; b++) p_block_bindings(p, s->blocks[b], ind);
        res = s->body;
        seq_span = s->base.span;
    }
    pp_indent(p, ind);
    if (result_name) p_lhs(p, result_name, result_sinfo);
    else ir_sbuf_puts(&p->out, "return ");
    pp_expr(p, res, true);
    span_comment c = {0};
    if (ir_text_own_span(res) && res->span) {
        c.has_span = true;
        c.span = res->span;
    }
    if (seq_span) {
        c.has_seq = true;
        c.seq = seq_span;
    }
    p_span_comment(p, &c);
    ir_sbuf_putc(&p->out, '\n');
}

static void flush(pr *p) {
    if (p->sink && p->out.len > (1u << 16)) {
        fwrite(p->out.data, 1, p->out.len, p->sink);
        p->out.len = 0;
    }
}

static void p_binding(pr *p, const ir_binding *bd, int ind) {
    flush(p);
    const ir_var *v = bd->var;
    const ir_expr *val = bd->value;
    const char *name = var_name(p, v);
    span_comment c = {0};
    if (ir_text_own_span(val) && val->span) {
        c.has_span = true;
        c.span = val->span;
    }
    if (v->base.span != val->span) {
        c.has_var = true;
        c.var = v->base.span;
    }
    if (val->kind == IR_FUNC && !bd->match_sinfo) {
        /* names inside a local function are free again after it */
        const ir_func *f = (const ir_func *)val;
        uint32_t mark = p->used_log.len, bmark = p->base_log.len;
        p->local_depth++;
        p_func(p, f, name, ind, false, v);
        p->local_depth--;
        while (p->used_log.len > mark) ntab_put(&p->used, p->used_log.data[--p->used_log.len], 0);
        unclaim_since(p, bmark);
        return;
    }
    pp_indent(p, ind);
    if (val->kind == IR_IF && !bd->match_sinfo) {
        const ir_if *x = (const ir_if *)val;
        ir_sbuf_puts(&p->out, "if ");
        pp_expr(p, x->cond, false);
        ir_sbuf_putc(&p->out, ':');
        p_span_comment(p, &c);
        ir_sbuf_putc(&p->out, '\n');
        p_seq_stmts(p, x->then_branch, ind + 1, name, v->base.sinfo);
        pp_indent(p, ind);
        ir_sbuf_puts(&p->out, "else:\n");
        p_seq_stmts(p, x->else_branch, ind + 1, name, v->base.sinfo);
        return;
    }
    if (bd->match_sinfo) {
        p_lhs(p, name, bd->match_sinfo);
        ir_sbuf_puts(&p->out, "R.match_cast(");
        pp_expr(p, val, true);
        ir_sbuf_puts(&p->out, ", ");
        pp_sinfo(p, bd->match_sinfo, false);
        ir_sbuf_putc(&p->out, ')');
    } else {
        p_lhs(p, name, v->base.sinfo);
        pp_expr(p, val, true);
    }
    p_span_comment(p, &c);
    ir_sbuf_putc(&p->out, '\n');
}

static void p_block_bindings(pr *p, const ir_block *blk, int ind) {
    if (!blk || blk->n == 0) return;
    if (!blk->dataflow) {
        for (uint32_t i = 0; i < blk->n; i++) p_binding(p, &blk->bindings[i], ind);
        return;
    }
    pp_indent(p, ind);
    ir_sbuf_puts(&p->out, "with R.dataflow():\n");
    /* the output vars are noted while their bindings print (a second pass over a big block
     * would read every var again, long out of cache) */
    uint32_t omark = p->outs.len;
    for (uint32_t i = 0; i < blk->n; i++) {
        p_binding(p, &blk->bindings[i], ind + 1);
        if (blk->bindings[i].var->base.kind == IR_VAR) gr_vec_push(&p->outs, blk->bindings[i].var);
    }
    pp_indent(p, ind + 1);
    ir_sbuf_puts(&p->out, "R.output(");
    bool first = true;
    for (uint32_t i = omark; i < p->outs.len; i++) {
        const ir_var *v = p->outs.data[i];
        /* a name re-bound later in the block is listed once, for its last binding */
        bool later = false;
        for (uint32_t j = i + 1; j < p->outs.len && !later; j++) later = p->outs.data[j] == v;
        if (later) continue;
        if (!first) ir_sbuf_puts(&p->out, ", ");
        ir_sbuf_puts(&p->out, var_name(p, v));
        first = false;
    }
    p->outs.len = omark;
    ir_sbuf_puts(&p->out, ")\n");
}

/* quoted: symbolic dims as "n" (a module function's signature defines them); a local
 * function's signature uses the vars its enclosing function declared with T.int64(), so
 * they are written bare there (TVM reads a quoted name as a new var) */
static void p_param(pr *p, const ir_var *v, bool quoted) {
    ir_sbuf_puts(&p->out, var_name(p, v));
    if (v->base.sinfo) {
        ir_sbuf_puts(&p->out, ": ");
        pp_sinfo(p, v->base.sinfo, quoted);
    }
}

static void p_func(pr *p, const ir_func *f, const char *name, int ind, bool module_level,
                   const ir_var *bound) {
    const ir_attr *gs = ir_attrs_get(f->attrs, "global_symbol");
    bool gs_is_name = gs && gs->kind == IR_ATTR_STR && gs->u.s && strcmp(gs->u.s, name) == 0;
    pp_indent(p, ind);
    ir_sbuf_puts(&p->out, module_level && !gs ? "@R.function(private=True)\n" : "@R.function\n");
    /* symbolic vars: collected before the params are named (decl order = first appearance) */
    if (module_level) {
        gr_map_clear(&p->decl_seen);
        p->decls.len = 0;
        uint64_t memo = gr_map_get_or(&p->decl_memo, GR_MAP_PTR(f), 0);
        if (memo) {
            memo--;
            for (uint32_t k = 0; k < (uint32_t)memo; k++)
                gr_vec_push(&p->decls, p->memo_decls.data[(memo >> 32) + k]);
        } else {
            decl_expr(p, (const ir_expr *)f);
        }
    }
    pp_indent(p, ind);
    ir_sbuf_puts(&p->out, "def ");
    ir_sbuf_puts(&p->out, name);
    ir_sbuf_putc(&p->out, '(');
    bool multiline = false;
    if (p->spans)
        for (uint32_t i = 0; i < f->nparams; i++) multiline |= f->params[i]->base.span != NULL;
    for (uint32_t i = 0; i < f->nparams; i++) {
        if (multiline) {
            ir_sbuf_putc(&p->out, '\n');
            pp_indent(p, ind + 1);
            p_param(p, f->params[i], module_level);
            ir_sbuf_putc(&p->out, ',');
            if (f->params[i]->base.span) {
                ir_sbuf_puts(&p->out, "  # span: ");
                pp_span(p, f->params[i]->base.span);
            }
        } else {
            if (i) ir_sbuf_puts(&p->out, ", ");
            p_param(p, f->params[i], module_level);
        }
    }
    if (multiline) {
        ir_sbuf_putc(&p->out, '\n');
        pp_indent(p, ind);
    }
    ir_sbuf_putc(&p->out, ')');
    if (f->ret_sinfo) {
        ir_sbuf_puts(&p->out, " -> ");
        pp_sinfo(p, f->ret_sinfo, module_level);
    }
    ir_sbuf_putc(&p->out, ':');
    span_comment c = {0};
    if (f->base.span) {
        c.has_span = true;
        c.span = f->base.span;
    }
    if (bound && bound->base.span != f->base.span) {
        c.has_var = true;
        c.var = bound->base.span;
    }
    p_span_comment(p, &c);
    ir_sbuf_putc(&p->out, '\n');
    /* attrs, sorted by key; global_symbol equal to the name is implied by @R.function */
    const ir_attrs *a = f->attrs;
    uint32_t shown = 0;
    if (a)
        for (uint32_t i = 0; i < a->n; i++)
            shown += !(module_level && gs_is_name && strcmp(a->keys[i], "global_symbol") == 0);
    if (shown) {
        uint32_t *ord = pp_sorted_attr_order(a);
        pp_indent(p, ind + 1);
        ir_sbuf_puts(&p->out, "R.func_attr({");
        bool first = true;
        for (uint32_t k = 0; k < a->n; k++) {
            uint32_t i = ord[k];
            if (module_level && gs_is_name && strcmp(a->keys[i], "global_symbol") == 0) continue;
            if (!first) ir_sbuf_puts(&p->out, ", ");
            ir_sbuf_quoted(&p->out, a->keys[i]);
            ir_sbuf_puts(&p->out, ": ");
            pp_attr(p, &a->vals[i]);
            first = false;
        }
        ir_sbuf_puts(&p->out, "})\n");
        free(ord);
    }
    if (module_level) {
        for (uint32_t i = 0; i < p->decls.len; i++) {
            pp_indent(p, ind + 1);
            pp_prim_to(p, &p->out, p->decls.data[i], false);
            ir_sbuf_puts(&p->out, " = T.int64()\n");
        }
    }
    if (module_level && refers_to_globals(f)) {
        pp_indent(p, ind + 1);
        ir_sbuf_puts(&p->out, "cls = Module\n");
    }
    if (f->body) p_seq_stmts(p, f->body, ind + 1, NULL, NULL);
    else {
        pp_indent(p, ind + 1);
        ir_sbuf_puts(&p->out, "pass\n");
    }
}

/* ---- entry points ---- */

static void pr_init(pr *p, const ir_print_opts *opts) {
    memset(p, 0, sizeof(*p));
    p->spans = !(opts && opts->no_spans);
    p->meta = !(opts && opts->no_metadata);
    gr_map_init(&p->var_names);
    gr_map_init(&p->sinfo_cache);
    gr_map_init(&p->const_idx);
    gr_map_init(&p->decl_seen);
    gr_map_init(&p->decl_memo);
}

static void pr_free(pr *p) {
    gr_map_free(&p->var_names);
    ntab_free(&p->used);
    aset_free(&p->taken);
    aset_free(&p->own);
    gr_vec_free(&p->claimed);
    gr_vec_free(&p->base_log);
    gr_map_free(&p->sinfo_cache);
    gr_map_free(&p->const_idx);
    gr_map_free(&p->decl_seen);
    gr_map_free(&p->decl_memo);
    gr_vec_free(&p->memo_decls);
    gr_vec_free(&p->outs);
    for (uint32_t i = 0; i < p->owned.len; i++) free(p->owned.data[i]);
    gr_vec_free(&p->owned);
    gr_vec_free(&p->consts);
    gr_vec_free(&p->decls);
    gr_vec_free(&p->used_log);
    ir_sbuf_free(&p->cache);
    ir_sbuf_free(&p->out);
}

static void reset_names(pr *p) {
    gr_map_clear(&p->var_names);
    ntab_clear(&p->used);
    aset_free(&p->taken);
    aset_free(&p->own);
    p->claimed.len = 0;
    p->gen_active = false;
    p->used_log.len = 0;
    p->base_log.len = 0;
    for (uint32_t i = 0; i < p->owned.len; i++) free(p->owned.data[i]);
    p->owned.len = 0;
}

/* True when the module mentions T (symbolic vars, typed prim values): the header imports it. */
static bool module_uses_t(pr *p, const ir_module *m) {
    for (uint32_t i = 0; i < m->nfuncs && !p->uses_t; i++) {
        if (m->funcs[i]->kind != IR_FUNC) continue;
        if (ir_func_tir_text(m->funcs[i])) {
            p->uses_t = true;
            break;
        }
        gr_map_clear(&p->decl_seen);
        p->decls.len = 0;
        decl_expr(p, m->funcs[i]);
        if (p->decls.len) p->uses_t = true;
        gr_map_put(&p->decl_memo, GR_MAP_PTR(m->funcs[i]),
                   ((uint64_t)p->memo_decls.len << 32 | p->decls.len) + 1);
        for (uint32_t k = 0; k < p->decls.len; k++) gr_vec_push(&p->memo_decls, p->decls.data[k]);
    }
    return p->uses_t;
}

static void print_module(pr *p, const ir_module *m) {
    ir_sbuf_puts(&p->out, "# from tvm.script import ir as I\n");
    if (module_uses_t(p, m)) ir_sbuf_puts(&p->out, "# from tvm.script import tir as T\n");
    ir_sbuf_puts(&p->out, "# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n");
    if (m->attrs && m->attrs->n) {
        ir_sbuf_puts(&p->out, "    I.module_attrs({");
        for (uint32_t i = 0; i < m->attrs->n; i++) {
            if (i) ir_sbuf_puts(&p->out, ", ");
            ir_sbuf_quoted(&p->out, m->attrs->keys[i]);
            ir_sbuf_puts(&p->out, ": ");
            pp_attr(p, &m->attrs->vals[i]);
        }
        ir_sbuf_puts(&p->out, "})\n");
    }
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (i) ir_sbuf_putc(&p->out, '\n');
        reset_names(p);
        const ir_expr *f = m->funcs[i];
        const char *tir = ir_func_tir_text(f);
        if (tir) {
            /* a TIR function: its text as read, re-indented into the class */
            for (const char *s = tir; *s;) {
                const char *e = strchr(s, '\n');
                size_t n = e ? (size_t)(e - s) : strlen(s);
                if (n) ir_sbuf_puts(&p->out, "    ");
                ir_sbuf_putn(&p->out, s, n);
                ir_sbuf_putc(&p->out, '\n');
                s = e ? e + 1 : s + n;
            }
        } else if (f->kind == IR_FUNC) {
            p_func(p, (const ir_func *)f, m->gvars[i]->name, 1, true, NULL);
        } else {
            ir_sbuf_puts(&p->out, "    # unprintable global ");
            ir_sbuf_puts(&p->out, m->gvars[i]->name);
            ir_sbuf_putc(&p->out, '\n');
        }
    }
    if (m->nfuncs == 0 && !(m->attrs && m->attrs->n)) ir_sbuf_puts(&p->out, "    pass\n");
    pp_metadata(p);
}

char *ir_print_module_str(const ir_module *m, const ir_print_opts *opts) {
    pr p;
    pr_init(&p, opts);
    print_module(&p, m);
    ir_sbuf_cstr(&p.out);
    char *s = p.out.data;
    p.out.data = NULL;
    pr_free(&p);
    return s;
}

void ir_print_module(const ir_module *m, FILE *out, const ir_print_opts *opts) {
    pr p;
    pr_init(&p, opts);
    p.sink = out;
    print_module(&p, m);
    fwrite(p.out.data ? p.out.data : "", 1, p.out.len, out);
    pr_free(&p);
}

char *ir_print_expr_str(const ir_expr *e, const ir_print_opts *opts) {
    pr p;
    pr_init(&p, opts);
    if (e->kind == IR_FUNC) {
        p_func(&p, (const ir_func *)e, "func", 0, true, NULL);
    } else if (e->kind == IR_SEQ) {
        p_seq_stmts(&p, e, 0, NULL, NULL);
    } else {
        pp_expr(&p, e, false);
    }
    pp_metadata(&p);
    ir_sbuf_cstr(&p.out);
    char *s = p.out.data;
    p.out.data = NULL;
    pr_free(&p);
    return s;
}

void ir_print_expr(const ir_expr *e, FILE *out, const ir_print_opts *opts) {
    char *s = ir_print_expr_str(e, opts);
    fputs(s, out);
    free(s);
}
