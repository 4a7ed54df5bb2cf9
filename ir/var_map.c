/* The var_map function attribute (see ir/var_map.h). */
#include "ir/var_map.h"

#include <string.h>

/* Collects the vars defined in f (params, then bindings in order, nested seqs too). */
typedef GR_VEC(ir_var *) var_vec;

static void defs_expr(const ir_expr *e, var_vec *out) {
    if (!e) return;
    if (e->kind == IR_SEQ) {
        const ir_seq *q = (const ir_seq *)e;
        for (uint32_t i = 0; i < q->nblocks; i++) {
            for (uint32_t j = 0; j < q->blocks[i]->n; j++) {
                const ir_binding *b = &q->blocks[i]->bindings[j];
                gr_vec_push(out, b->var);
                defs_expr(b->value, out);
            }
        }
    } else if (e->kind == IR_IF) {
        defs_expr(((const ir_if *)e)->then_branch, out);
        defs_expr(((const ir_if *)e)->else_branch, out);
    }
}

static void func_defs(const ir_func *f, var_vec *out) {
    for (uint32_t i = 0; i < f->nparams; i++) gr_vec_push(out, f->params[i]);
    defs_expr(f->body, out);
}

static ir_var *find_name(const var_vec *v, const char *name) {
    for (uint32_t i = 0; i < v->len; i++)
        if (strcmp(v->data[i]->name, name) == 0) return v->data[i];
    return NULL;
}

ir_func *ir_var_map_init(ir_ctx_t *ctx, ir_func *f) {
    if (ir_attrs_get(f->attrs, IR_VAR_MAP_ATTR)) return f;
    var_vec defs = {0};
    func_defs(f, &defs);
    ir_attr *items = gr_xmalloc(sizeof(ir_attr) * (2 * (size_t)defs.len + 1));
    uint32_t n = 0;
    gr_map seen;
    gr_map_init(&seen);
    for (uint32_t i = 0; i < defs.len; i++) {
        const char *name = defs.data[i]->name;   /* interned: one entry per name */
        if (gr_map_get(&seen, GR_MAP_PTR(name), NULL)) continue;
        gr_map_put(&seen, GR_MAP_PTR(name), 1);
        items[2 * n] = ir_attr_str(ctx, name);
        items[2 * n + 1] = ir_attr_str(ctx, name);
        n++;
    }
    gr_map_free(&seen);
    ir_attr map = {.kind = IR_ATTR_MAP};
    map.u.arr.n = n;
    map.u.arr.items = ir_alloc_copy(ctx, items, sizeof(ir_attr) * 2 * (n ? n : 1));
    free(items);
    gr_vec_free(&defs);
    return ir_func_with_attrs(ctx, f, ir_attrs_set(ctx, f->attrs, IR_VAR_MAP_ATTR, map));
}

ir_module *ir_var_map_init_module(const ir_module *m) {
    ir_module *out = ir_module_copy(m);
    for (uint32_t i = 0; i < out->nfuncs; i++) {
        if (out->funcs[i]->kind != IR_FUNC) continue;
        ir_func *f = (ir_func *)out->funcs[i];
        if (ir_attrs_get(f->attrs, "Codegen")) continue;
        out->funcs[i] = &ir_var_map_init(m->ctx, f)->base;
    }
    return out;
}

/* name (interned pointer) -> first var of that name; var -> 1 for the defined set. */
static void index_defs(const var_vec *v, gr_map *by_name, gr_map *set) {
    for (uint32_t i = 0; i < v->len; i++) {
        if (by_name && !gr_map_get(by_name, GR_MAP_PTR(v->data[i]->name), NULL))
            gr_map_put(by_name, GR_MAP_PTR(v->data[i]->name), GR_MAP_PTR(v->data[i]));
        if (set) gr_map_put(set, GR_MAP_PTR(v->data[i]), 1);
    }
}

ir_func *ir_var_map_update(ir_ctx_t *ctx, const ir_func *before, ir_func *after, const gr_map *remap) {
    const ir_attr *vm = ir_attrs_get(before->attrs, IR_VAR_MAP_ATTR);
    if (!vm || vm->kind != IR_ATTR_MAP) return after;
    var_vec old_defs = {0}, new_defs = {0};
    func_defs(before, &old_defs);
    func_defs(after, &new_defs);
    gr_map old_names, new_set;
    gr_map_init(&old_names);
    gr_map_init(&new_set);
    index_defs(&old_defs, &old_names, NULL);
    index_defs(&new_defs, NULL, &new_set);
    uint32_t n = vm->u.arr.n;
    ir_attr *items = gr_xmalloc(sizeof(ir_attr) * (2 * (size_t)n + 1));
    bool changed = false;
    for (uint32_t i = 0; i < n; i++) {
        items[2 * i] = vm->u.arr.items[2 * i];
        ir_attr val = vm->u.arr.items[2 * i + 1];
        if (val.kind == IR_ATTR_STR) {
            ir_expr *cur = (ir_expr *)(uintptr_t)gr_map_get_or(&old_names, GR_MAP_PTR(ir_intern(ctx, val.u.s)), 0);
            /* Follow the pass's replacements (bounded: chains are short). */
            for (int guard = 0; cur && ir_is_var(cur) && !gr_map_get(&new_set, GR_MAP_PTR(cur), NULL); guard++) {
                uint64_t nx;
                if (guard > 64 || !remap || !gr_map_get(remap, GR_MAP_PTR(cur), &nx)) {
                    cur = NULL;
                    break;
                }
                cur = (ir_expr *)(uintptr_t)nx;
            }
            ir_attr nv;
            if (cur && ir_is_var(cur) && gr_map_get(&new_set, GR_MAP_PTR(cur), NULL))
                nv = ir_attr_str(ctx, ((ir_var *)cur)->name);
            else
                nv = ir_attr_none();
            if (!ir_attr_equal(&nv, &val)) changed = true;
            val = nv;
        }
        items[2 * i + 1] = val;
    }
    ir_func *res = after;
    if (changed || !ir_attrs_get(after->attrs, IR_VAR_MAP_ATTR)) {
        ir_attr map = {.kind = IR_ATTR_MAP};
        map.u.arr.n = n;
        map.u.arr.items = ir_alloc_copy(ctx, items, sizeof(ir_attr) * 2 * (n ? n : 1));
        res = ir_func_with_attrs(ctx, after, ir_attrs_set(ctx, after->attrs, IR_VAR_MAP_ATTR, map));
    }
    free(items);
    gr_map_free(&old_names);
    gr_map_free(&new_set);
    gr_vec_free(&old_defs);
    gr_vec_free(&new_defs);
    return res;
}

ir_var_map_state ir_var_map_lookup(const ir_func *f, const char *name, ir_var **out) {
    *out = NULL;
    const ir_attr *vm = ir_attrs_get(f->attrs, IR_VAR_MAP_ATTR);
    if (!vm || vm->kind != IR_ATTR_MAP) return IR_VAR_MAP_UNKNOWN;
    for (uint32_t i = 0; i < vm->u.arr.n; i++) {
        const ir_attr *k = &vm->u.arr.items[2 * i], *v = &vm->u.arr.items[2 * i + 1];
        if (k->kind != IR_ATTR_STR || strcmp(k->u.s, name) != 0) continue;
        if (v->kind != IR_ATTR_STR) return IR_VAR_MAP_ELIMINATED;
        var_vec defs = {0};
        func_defs(f, &defs);
        *out = find_name(&defs, v->u.s);
        gr_vec_free(&defs);
        return *out ? IR_VAR_MAP_PRESENT : IR_VAR_MAP_UNKNOWN;
    }
    return IR_VAR_MAP_UNKNOWN;
}
