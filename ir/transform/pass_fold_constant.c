/* FoldConstant: an op call whose arguments are all known (constants, static shapes, scalars)
 * (or tuples of constants) is evaluated by the evaluator the pass context or the module's IR context gives
 * (ir_const_eval_fn, ir/transform/transform.h: the runtime has one on its reference kernels) and
 * replaced by the resulting constant; an `if` whose condition is a constant becomes the branch
 * it takes. The new constant carries the
 * SequentialSpan of the folded call and of the constants it consumed; the taken branch carries
 * SequentialSpan(branch, if) (seed 001's FoldConstant example). */
#include <stdlib.h>

#include "base/map.h"
#include "base/sys.h"
#include "base/tensor.h"
#include "ir/op.h"
#include "ir/transform/pass_impl.h"
#include "ir/transform/si_builder.h"

enum { FOLD_MAX_ELEMS = 1 << 24 };  /* do not materialize huge constants */

/* The evaluator of this run (ir_pass_ctx_const_eval); levels: FoldLevels, with the tensors it
 * made and the var each replaced (0 once let go). */
typedef struct fold_state {
    ir_const_eval_fn eval;
    void *user;
    bool levels;
    gr_map made;
} fold_state;

/* A tuple of constants (concat's operands) is known like a constant. */
static bool const_tuple(const ir_expr *e) {
    if (e->kind != IR_TUPLE) return false;
    const ir_tuple *t = (const ir_tuple *)e;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->fields[i]->kind != IR_CONST) return false;
    return t->n > 0;
}

/* The float32 cast of a large 8-bit integer constant (a quantized weight's DequantizeLinear):
 * left unfolded, so the dequantize stays ops on the int8 levels (the levels and their scales
 * are what an int8 backend reads, and a backend that needs the float32 weight computes it
 * once when it prepares) and no float32 copy four times the weight's size is held. Small
 * ones (zero points, scales) fold. FoldLevels folds them too: the executor runs it on what the
 * host runs (runtime/exec/executor.c). */
enum { KEEP_LEVELS_MIN_ELEMS = 4096 };

static bool keeps_levels(const ir_call *c, const ir_op_def *def) {
    if (def->index != IR_OP_ASTYPE || c->nargs != 1 || c->args[0]->kind != IR_CONST) return false;
    const ir_sinfo *in = c->args[0]->sinfo, *out = c->base.sinfo;
    bool i8 = in && in->kind == IR_SINFO_TENSOR && in->dtype.bits == 8 && (in->dtype.code == kDLInt || in->dtype.code == kDLUInt);
    return i8 && out && ir_dtype_eq(out->dtype, IR_DTYPE_F32) && ir_sinfo_numel(in) >= KEEP_LEVELS_MIN_ELEMS;
}

static bool foldable(const fold_state *fs, const ir_call *c) {
    if (c->callee->kind != IR_OP) return false;
    const ir_op_def *def = ((const ir_op *)c->callee)->def;
    if (!fs->levels && keeps_levels(c, def)) return false;
    if (def->flags & (IR_OPF_IMPURE | IR_OPF_CALL_LIKE)) return false;
    if (!c->base.sinfo || c->base.sinfo->kind != IR_SINFO_TENSOR) return false;
    int64_t n = ir_sinfo_numel(c->base.sinfo);
    if (n < 0 || n > FOLD_MAX_ELEMS) return false;
    bool has_tensor = false;
    for (uint32_t i = 0; i < c->nargs; i++) {
        ir_expr_kind k = (ir_expr_kind)c->args[i]->kind;
        if (const_tuple(c->args[i])) {
            has_tensor = true;
            continue;
        }
        if (k != IR_CONST && k != IR_SHAPE && k != IR_PRIMVAL && k != IR_STR) return false;
        has_tensor |= k == IR_CONST;
    }
    /* Creation ops (zeros/ones/full from a shape) fold too; anything else needs a constant. */
    return has_tensor || (def->flags & IR_OPF_CREATION);
}

/* Evaluates c; NULL (no error) when it cannot be folded here. */
static ir_expr *fold_call(pu_rewriter *r, const ir_binding *b, ir_call *c) {
    const fold_state *fs = r->user;
    if (c->nargs > 16) return NULL;
    rt_tensor *t = fs->eval(fs->user, c);
    if (!t) return NULL;
    uint32_t np = 2;
    for (uint32_t i = 0; i < c->nargs; i++)
        np += 1 + (c->args[i]->kind == IR_TUPLE ? ((const ir_tuple *)c->args[i])->n : 0);
    const ir_span **parts = gr_xcalloc(np, sizeof(*parts));
    uint32_t k = 0;
    parts[k++] = c->base.span;
    parts[k++] = b->var->base.span;
    for (uint32_t i = 0; i < c->nargs; i++) {
        parts[k++] = c->args[i]->span;
        if (c->args[i]->kind != IR_TUPLE) continue;
        const ir_tuple *tu = (const ir_tuple *)c->args[i];
        for (uint32_t j = 0; j < tu->n; j++) parts[k++] = tu->fields[j]->span;
    }
    const ir_span *sp = ir_si_enabled() ? ir_span_seq(r->ctx, parts, k) : c->base.span;
    free(parts);
    ir_const *cst = ir_const_new(r->ctx, t, sp);
    rt_tensor_release(t);
    if (cst->base.sinfo == c->base.sinfo || ir_sinfo_is_base_of(b->var->base.sinfo, cst->base.sinfo))
        return &cst->base;
    return NULL;
}

/* `if` on a constant: the taken branch's bindings join the current (plain) block and the
 * expression producing its result gets SequentialSpan(its span, the if's span). */
static bool inline_branch(pu_rewriter *r, const ir_binding *b, ir_if *f) {
    const rt_tensor *t = ((ir_const *)f->cond)->data;
    if (rt_tensor_numel(t) != 1 || r->dataflow) return false;
    ir_expr *taken = rt_tensor_get_f64(t, 0) != 0 ? f->then_branch : f->else_branch;
    if (taken->kind != IR_SEQ) return false;
    ir_seq *q = (ir_seq *)taken;
    for (uint32_t i = 0; i < q->nblocks; i++)
        if (q->blocks[i]->dataflow) return false;
    for (uint32_t i = 0; i < q->nblocks; i++)
        for (uint32_t j = 0; j < q->blocks[i]->n; j++) {
            const ir_binding *x = &q->blocks[i]->bindings[j];
            pu_push(r, x->var, pu_subst(r, x->value), x->match_sinfo);
        }
    ir_expr *res = pu_subst(r, q->body);
    int i = ir_is_var(res) ? pu_out_index(r, (ir_var *)res) : -1;
    if (ir_si_enabled() && i >= 0) {
        pu_merge_span(r, i, taken->span);
        pu_merge_span(r, i, f->base.span);
    } else if (ir_si_enabled() && !ir_is_var(res)) {
        const ir_span *parts[3] = {res->span, taken->span, f->base.span};
        res = ir_expr_with_span(r->ctx, res, ir_span_seq(r->ctx, parts, 3));
    }
    pu_push(r, b->var, res, NULL);
    return true;
}

/* FoldLevels: the constants it made that call c read and that nothing else reads (their var
 * has no use left) are let go, so that a dequantize chain (cast, subtract, multiply) does not
 * hold a float32 copy of the weights per step until the context goes. */
static void let_go_spent(pu_rewriter *r, fold_state *fs, const ir_call *c) {
    for (uint32_t i = 0; i < c->nargs; i++) {
        if (c->args[i]->kind != IR_CONST) continue;
        rt_tensor *t = ((const ir_const *)c->args[i])->data;
        uint64_t v = gr_map_get_or(&fs->made, GR_MAP_PTR(t), 0);
        if (!v) continue;
        uint64_t left = gr_map_get_or(&r->uses, v, 0);
        gr_map_put(&r->uses, v, left ? left - 1 : 0);
        if (left > 1) continue;
        gr_map_put(&fs->made, GR_MAP_PTR(t), 0);
        ir_ctx_disown(r->ctx, &t->obj);
    }
}

static bool fold_binding(pu_rewriter *r, const ir_binding *b, ir_expr *value, bool dataflow) {
    (void)dataflow;
    fold_state *fs = r->user;
    if (!b->match_sinfo && fs->eval && value->kind == IR_CALL && foldable(fs, (ir_call *)value)) {
        ir_expr *cst = fold_call(r, b, (ir_call *)value);
        if (cst && fs->levels) {
            let_go_spent(r, fs, (ir_call *)value);
            gr_map_put(&fs->made, GR_MAP_PTR(((ir_const *)cst)->data), GR_MAP_PTR(b->var));
        }
        if (cst) {
            /* Uses read the constant, which carries the layer's span. */
            gr_map_put(&r->remap, GR_MAP_PTR(b->var), GR_MAP_PTR(cst));
            gr_map_put(&r->defs, GR_MAP_PTR(b->var), GR_MAP_PTR(cst));
            return true;
        }
    }
    if (!b->match_sinfo && value->kind == IR_IF && ((ir_if *)value)->cond->kind == IR_CONST &&
        inline_branch(r, b, (ir_if *)value))
        return true;
    pu_push(r, b->var, value, b->match_sinfo);
    return true;
}

static bool fold_prepare(pu_rewriter *r, ir_pass_ctx_t *pc, const ir_module *mod, const ir_func *func) {
    (void)func;
    fold_state *fs = r->user;
    fs->eval = ir_pass_ctx_const_eval(pc, mod->ctx, &fs->user);
    return true;
}

PU_FUNC_PASS(ir_pass_fold_constant, "FoldConstant", 0, .binding = fold_binding,
             .state_size = sizeof(fold_state), .prepare = fold_prepare);

static bool fold_levels_prepare(pu_rewriter *r, ir_pass_ctx_t *pc, const ir_module *mod, const ir_func *func) {
    fold_state *fs = r->user;
    fs->levels = true;
    gr_map_init(&fs->made);
    return fold_prepare(r, pc, mod, func);
}

static void fold_levels_release(void *state) { gr_map_free(&((fold_state *)state)->made); }

PU_FUNC_PASS(ir_pass_fold_levels, "FoldLevels", 0, .binding = fold_binding, .state_size = sizeof(fold_state),
             .count_uses = true, .prepare = fold_levels_prepare, .release = fold_levels_release);
