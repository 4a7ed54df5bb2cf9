/* The executor: the one engine behind `graft run MODEL`, `graft run M.graft` and the library
 * API (runtime/exec/executor.h, runtime/exec/plan.h, deploy/graft_model.h).
 *
 * rt_exec_new() / rt_px_new() compile a function once into instructions: every var gets a dense
 * slot index, every binding an instruction whose operands are slots or prepared constants,
 * kernels and extern symbols are resolved, symbolic dims are compiled into tiny stack programs
 * over dense symbol indices, and liveness says which slots to release after each instruction.
 * if/else branches are nested sequences; calls of other functions run their own plan in a frame
 * of their own. With a host lowering, chains of elementwise float32 ops of the entry function
 * become fused host kernels (runtime/exec/exec_fuse.c).
 *
 * Memory: the results of the entry function's kernels, host kernels and single-output extern
 * calls that do not escape get planned buffers in one arena. Their sizes are expressions of the
 * symbolic vars the inputs bind; the offsets (the plan) are computed once per distinct binding
 * of those vars and cached (a bounded cache), so a model with symbolic dims runs at any input
 * size without reallocating per run.
 *
 * Runs are thread-safe: everything a run writes lives in frames (slots, symbol values, the arena
 * and its tensor views) taken from per-function pools under a lock; the compiled instructions
 * are read-only while runs are in flight. */
#include "runtime/exec/executor.h"

#include "runtime/exec/executor_impl.h"

#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"


/* Public API                                                                                */
/* ======================================================================================== */

static void free_seq(rt_seq *s) {
    for (uint32_t i = 0; i < s->n; i++) {
        gr_vec_free(&s->instrs[i].frees);
        if (s->instrs[i].kind == INS_IF) {
            free_seq(s->instrs[i].then_s);
            free_seq(s->instrs[i].else_s);
        }
    }
    gr_vec_free(&s->free_end);
}

/* m with what FoldConstant left of its large quantized weights' dequantizes (float32 casts of
 * int8 levels, kept for an int8 backend's regions) evaluated once, in the functions the host
 * runs (FoldLevels skips the regions): else every run would dequantize them again. */
static gr_status fold_levels(const ir_module *m, const ir_module **out, gr_diag *diag) {
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_const_eval(pc, rt_const_eval, NULL);
    ir_module *fm = NULL;
    gr_status st = ir_pass_run(&ir_pass_fold_levels, pc, m, &fm, diag);
    ir_pass_ctx_free(pc);
    *out = st ? m : fm;
    return st;
}

gr_status rt_px_new_stored(const ir_module *m, const char *func, const rt_host_lowering *host,
                           const rt_px_stored_plan *plan, rt_px **out, gr_diag *diag) {
    *out = NULL;
    gr_status fst = fold_levels(m, &m, diag);
    if (fst) return fst;
    ir_func *fn = ir_module_func(m, func);
    if (!fn || fn->base.kind != IR_FUNC)
        return gr_diag_set(diag, GR_ERR_NOT_FOUND, "the module has no function '%s'", func);
    rt_exec_t *x = gr_xcalloc(1, sizeof(*x));
    x->m = m;
    x->host = host;
    x->cdiag = diag;
    x->entry_fn = fn;
    pthread_mutex_init(&x->lock, NULL);
    gr_map_init(&x->plan_of);
    ir_gvar *gv = ir_module_gvar(m, func);
    x->entry = rt_x_compile_func(x, fn, gv ? gv->name : func);
    rt_x_fuse_done(x);
    x->cdiag = NULL;
    gr_status st = GR_OK;
    if (!x->entry) {
        if (diag && diag->code == GR_OK)
            gr_diag_set(diag, GR_ERR_INVALID, "cannot prepare function '%s'", func);
        st = diag ? diag->code : GR_ERR_INVALID;
    }
    if (!st && host) {
        for (uint32_t g = 0; g < x->groups.len && !st; g++)
            st = host->add_group(host->self, x->groups.data[g], diag);
        if (!st) st = host->finalize(host->self, diag);
        rt_seq *body = x->entry->body;
        for (uint32_t k = 0; k < body->n && !st; k++) {
            rt_instr *in = &body->instrs[k];
            if (in->kind != INS_HOST) continue;
            in->hostfn = host->lookup(host->self, in->name);
            if (!in->hostfn)
                st = gr_diag_set(diag, GR_ERR_NOT_FOUND, "host kernel '%s' was not compiled", in->name);
        }
    }
    bool stat = true;
    for (uint32_t b = 0; !st && b < x->nbuf; b++) stat &= x->bufs[b].static_bytes != SIZE_MAX;
    if (!st && x->nbuf && stat) {
        st = rt_x_splan_make(x, NULL, NULL, plan, &x->static_plan, diag);
        /* one arena up front: an arena that cannot be had fails here, not at the first run */
        if (!st) {
            rt_frame *f = rt_x_frame_get(x, x->entry);
            f->arena = aligned_alloc(64, (x->static_plan->arena + 63) & ~(size_t)63);
            if (!f->arena && x->static_plan->arena)
                st = gr_diag_set(diag, GR_ERR_NOMEM, "cannot allocate the %zu-byte arena",
                                 x->static_plan->arena);
            else f->arena_cap = x->static_plan->arena;
            f->next_free = x->entry->frames;
            x->entry->frames = f;
        }
    }
    if (st) {
        rt_exec_free(x);
        return st;
    }
    *out = x;
    return GR_OK;
}

gr_status rt_px_new(const ir_module *m, const char *func, const rt_host_lowering *host,
                    rt_px **out, gr_diag *diag) {
    return rt_px_new_stored(m, func, host, NULL, out, diag);
}

gr_status rt_exec_new(const ir_module *m, const char *func, rt_exec_t **out, gr_diag *diag) {
    return rt_px_new(m, func, NULL, out, diag);
}

static void frame_free(rt_exec_t *x, rt_frame *f) {
    free(f->slots);
    free(f->syms);
    free(f->sym_from);
    for (uint32_t b = 0; f->views && b < x->nbuf; b++) rt_tensor_release(f->views[b]);
    free(f->views);
    free(f->bufs);
    free(f->dyn_args);
    free(f->dyn_dims);
    free(f->dyn_ins);
    free(f->arena);
    rt_x_splan_unref(f->vplan);
    free(f);
}

void rt_exec_free(rt_exec_t *x) {
    if (!x) return;
    for (uint32_t i = 0; i < x->plans.len; i++) {
        rt_plan *p = x->plans.data[i];
        if (p->body) free_seq(p->body);
        gr_vec_free(&p->free_start);
        gr_vec_free(&p->code);
        gr_vec_free(&p->defs);
        gr_vec_free(&p->sym_names_v);
        gr_map_free(&p->slot_of);
        gr_map_free(&p->sym_of);
        gr_map_free(&p->fn_of);
        gr_map_free(&p->group_of);
        for (rt_frame *f = p->frames, *nx; f; f = nx) {
            nx = f->next_free;
            frame_free(x, f);
        }
        free(p);
    }
    for (shape_plan *c = x->splans, *nx; c; c = nx) {
        nx = c->next;
        rt_x_splan_free(c);
    }
    if (x->static_plan) rt_x_splan_free(x->static_plan);
    gr_vec_free(&x->plans);
    gr_vec_free(&x->groups);
    for (uint32_t i = 0; i < x->consts.len; i++) rt_tensor_release(x->consts.data[i]);
    gr_vec_free(&x->consts);
    gr_map_free(&x->plan_of);
    pthread_mutex_destroy(&x->lock);
    for (pa_chunk *c = x->chunks, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    free(x);
}

uint32_t rt_exec_num_inputs(const rt_exec_t *x) { return x->entry->nparams; }

const char *rt_exec_input_name(const rt_exec_t *x, uint32_t i) {
    return i < x->entry->nparams ? x->entry->params[i]->name : NULL;
}

const ir_sinfo *rt_exec_input_sinfo(const rt_exec_t *x, uint32_t i) {
    return i < x->entry->nparams ? x->entry->params[i]->base.sinfo : NULL;
}

gr_status rt_exec_run(rt_exec_t *x, const rt_value *inputs, uint32_t nin, rt_value *result,
                      gr_diag *diag) {
    memset(result, 0, sizeof *result);
    rt_run r = {.x = x, .prof = x->prof, .prof_user = x->prof_user};
    gr_status st = rt_x_run_plan(&r, x->entry, inputs, nin, true, result, diag);
    if (st) rt_value_clear(result);
    __atomic_store_n(&x->last_peak, r.peak, __ATOMIC_RELAXED);
    return st;
}

void rt_exec_set_tap(rt_exec_t *x, rt_exec_tap_fn fn, void *user) {
    x->tap = fn;
    x->tap_user = user;
}

void rt_exec_set_profiler(rt_exec_t *x, rt_exec_profile_fn fn, void *user) {
    x->prof = fn;
    x->prof_user = user;
}

uint32_t rt_exec_peak_live(const rt_exec_t *x) { return __atomic_load_n(&x->last_peak, __ATOMIC_RELAXED); }

/* ---- the planned-executor view (runtime/exec/plan.h) ---- */

const ir_sinfo *rt_px_output_sinfo(const rt_px *x) {
    const ir_func *fn = x->entry->fn;
    return fn->ret_sinfo ? fn->ret_sinfo : fn->body->sinfo;
}
uint32_t rt_px_num_groups(const rt_px *x) { return x->groups.len; }
const rt_fuse_group *rt_px_group(const rt_px *x, uint32_t i) { return x->groups.data[i]; }

void rt_px_buffer(const rt_px *x, uint32_t i, size_t *offset, size_t *size, const char **var) {
    const mbuf *mb = &x->bufs[i];
    if (offset) *offset = x->static_plan ? x->static_plan->off[i] : 0;
    if (size) *size = mb->static_bytes == SIZE_MAX ? 0 : mb->static_bytes;
    if (var) *var = x->entry->body->instrs[mb->start].var;
}

uint32_t rt_px_num_instrs(const rt_px *x) { return x->entry->body->n; }
void rt_px_instr(const rt_px *x, uint32_t k, const char **kind, const char **name,
                 const char **var, const ir_span **span) {
    const rt_instr *in = &x->entry->body->instrs[k];
    if (kind) *kind = rt_x_ins_kind_name[in->kind];
    if (name) *name = in->name ? in->name : "";
    if (var) *var = in->var;
    if (span) *span = in->span;
}

void rt_px_get_stats(const rt_px *x, rt_px_stats *o) {
    memset(o, 0, sizeof *o);
    const rt_seq *body = x->entry->body;
    o->ninstr = body->n;
    for (uint32_t k = 0; k < body->n; k++) {
        const rt_instr *in = &body->instrs[k];
        o->nkernel += in->kind == INS_OP;
        o->nhost += in->kind == INS_HOST;
        o->nextern += in->kind == INS_DPS;
        if (in->kind == INS_OP || in->kind == INS_HOST || in->kind == INS_DPS) o->nunplanned += in->buf < 0;
    }
    o->nfused_ops = x->nfused_ops;
    o->nplanned = x->nbuf;
    o->arena_bytes = x->static_plan ? x->static_plan->arena : 0;
    for (uint32_t b = 0; b < x->nbuf; b++)
        if (x->bufs[b].static_bytes != SIZE_MAX) o->intermediate_bytes += x->bufs[b].static_bytes;
}
