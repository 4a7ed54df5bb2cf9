/* Runtime module objects and the `external_mods` attribute helpers. */
#include "runtime/module.h"

#include <stdlib.h>
#include <string.h>

#include "ir/expr.h"

#define RT_MODULE_TYPE "rt.module"

static void module_delete(gr_object *obj) {
    rt_module *m = (rt_module *)obj;
    if (m->iface && m->iface->destroy) m->iface->destroy(m);
    free((char *)m->name);
    free(m);
}

rt_module *rt_module_new(const rt_module_i *iface, void *context, const char *name) {
    rt_module *m = gr_xcalloc(1, sizeof(*m));
    m->obj.refcount = 1;
    m->obj.type = RT_MODULE_TYPE;
    m->obj.deleter = module_delete;
    m->iface = iface;
    m->context = context;
    m->name = gr_xstrdup(name ? name : "");
    return m;
}

void rt_module_release(rt_module *m) {
    if (m) gr_object_release(&m->obj);
}

rt_module *rt_module_from_object(gr_object *obj) {
    /* type strings are static; compare contents so a copy from another unit still matches */
    if (!obj || !obj->type || strcmp(obj->type, RT_MODULE_TYPE) != 0) return NULL;
    return (rt_module *)obj;
}

gr_status rt_module_call(rt_module *m, const char *symbol, DLTensor *const *args, uint32_t nin,
                         uint32_t nout, gr_diag *diag) {
    if (!m->iface || m->iface->api_version != RT_MODULE_API_VERSION || !m->iface->call)
        return gr_diag_set(diag, GR_ERR_RUNTIME,
                           "runtime module '%s' has an incompatible interface (api version %d, "
                           "expected %d)",
                           m->name, m->iface ? m->iface->api_version : -1, RT_MODULE_API_VERSION);
    return m->iface->call(m, symbol, args, nin, nout, diag);
}

bool rt_module_set_profiler(rt_module *m, rt_prim_profile_fn fn, void *user) {
    if (!m || !m->iface || m->iface->api_version != RT_MODULE_API_VERSION || !m->iface->set_profiler) return false;
    m->iface->set_profiler(m, fn, user);
    return true;
}

static const ir_attr *external_mods(const ir_module *m) {
    const ir_attr *a = ir_attrs_get(m->attrs, "external_mods");
    return a && a->kind == IR_ATTR_ARRAY ? a : NULL;
}

uint32_t rt_module_count(const ir_module *m) {
    const ir_attr *a = external_mods(m);
    return a ? a->u.arr.n : 0;
}

rt_module *rt_module_at(const ir_module *m, uint32_t i) {
    const ir_attr *a = external_mods(m);
    if (!a || i >= a->u.arr.n || a->u.arr.items[i].kind != IR_ATTR_OBJ) return NULL;
    return rt_module_from_object(a->u.arr.items[i].u.obj);
}

uint32_t rt_module_set_profilers(const ir_module *m, rt_prim_profile_fn fn, void *user) {
    uint32_t n = rt_module_count(m), took = 0;
    for (uint32_t i = 0; i < n; i++) took += rt_module_set_profiler(rt_module_at(m, i), fn, user);
    return took;
}

rt_module *rt_module_find_function(const ir_module *m, const char *symbol) {
    uint32_t n = rt_module_count(m);
    for (uint32_t i = 0; i < n; i++) {
        rt_module *mod = rt_module_at(m, i);
        if (mod && mod->iface && mod->iface->has_function && mod->iface->has_function(mod, symbol))
            return mod;
    }
    return NULL;
}

void rt_module_attach(ir_module *m, rt_module *mod) {
    const ir_attr *a = external_mods(m);
    uint32_t n = a ? a->u.arr.n : 0;
    ir_attr *items = gr_xmalloc(sizeof(ir_attr) * (n + 1));
    if (n) memcpy(items, a->u.arr.items, sizeof(ir_attr) * n);
    items[n] = ir_attr_obj(m->ctx, &mod->obj);
    ir_module_set_attr(m, "external_mods", ir_attr_array(m->ctx, n + 1, items));
    free(items);
}
