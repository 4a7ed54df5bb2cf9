/* Fused elementwise groups -> LLVM IR -> O3 for the host -> object file -> ORC LLJIT
 * (backends/llvm/llvm_host.h). */
#include "backends/llvm/llvm_host.h"
#include "backends/llvm/elf_check.h"
#include "backends/llvm/llvm_api_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/attrs.h"

struct gr_llvm_host {
    rt_host_lowering iface;
    bool link_mode;
    LLVMContextRef lctx;
    LLVMModuleRef mod;
    LLVMTargetMachineRef tm;
    LLVMOrcLLJITRef jit;
    uint8_t *obj;
    size_t obj_len;
    char cpu[1024];
    uint64_t compile_ns;
    bool finalized;
};

/* ---------------- op table ---------------- */

typedef LLVMValueRef (*emit_fn)(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *nd,
                                LLVMValueRef *a);

static LLVMTypeRef f32t(gr_llvm_host *h) { return gr_llvm.LLVMFloatTypeInContext(h->lctx); }
static LLVMValueRef fc(gr_llvm_host *h, double v) { return gr_llvm.LLVMConstReal(f32t(h), v); }

/* A float(float...) function: an LLVM intrinsic ("llvm.exp.f32") or a libm symbol ("tanhf"). */
static LLVMValueRef call_f(LLVMBuilderRef b, gr_llvm_host *h, const char *name, unsigned n,
                           LLVMValueRef *args) {
    LLVMTypeRef ps[2] = {f32t(h), f32t(h)};
    LLVMTypeRef ft = gr_llvm.LLVMFunctionType(f32t(h), ps, n, 0);
    LLVMValueRef f = gr_llvm.LLVMGetNamedFunction(h->mod, name);
    if (!f) f = gr_llvm.LLVMAddFunction(h->mod, name, ft);
    return gr_llvm.LLVMBuildCall2(b, ft, f, args, n, "");
}
static LLVMValueRef call1(LLVMBuilderRef b, gr_llvm_host *h, const char *name, LLVMValueRef a) {
    return call_f(b, h, name, 1, &a);
}

static LLVMValueRef e_add(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFAdd(b, a[0], a[1], "");
}
static LLVMValueRef e_sub(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFSub(b, a[0], a[1], "");
}
static LLVMValueRef e_mul(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFMul(b, a[0], a[1], "");
}
static LLVMValueRef e_div(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFDiv(b, a[0], a[1], "");
}
static LLVMValueRef e_pow(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return call_f(b, h, "powf", 2, a);
}
/* (a > b || a != a) ? a : b, as the reference kernel (NaN in a wins). */
static LLVMValueRef e_max(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    LLVMValueRef c = gr_llvm.LLVMBuildOr(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOGT, a[0], a[1], ""),
                                         gr_llvm.LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], ""), "");
    return gr_llvm.LLVMBuildSelect(b, c, a[0], a[1], "");
}
static LLVMValueRef e_min(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    LLVMValueRef c = gr_llvm.LLVMBuildOr(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOLT, a[0], a[1], ""),
                                         gr_llvm.LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], ""), "");
    return gr_llvm.LLVMBuildSelect(b, c, a[0], a[1], "");
}
#define UNARY_CALL(fname, sym)                                                                  \
    static LLVMValueRef fname(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n,        \
                              LLVMValueRef *a) {                                               \
        (void)n;                                                                                \
        return call1(b, h, sym, a[0]);                                                          \
    }
/* exp in straight-line float code the loop vectorizer can widen (llvm.exp.f32 becomes a scalar
 * expf call per element): x = n ln2 + r, |r| <= ln2/2 (ln2 split in two so n * ln2_hi is
 * exact), e^r by its degree-7 Taylor polynomial (truncation below 1e-8 relative), times 2^n
 * built in the exponent bits as two factors 2^(n/2) 2^(n - n/2) so results near overflow and
 * in the denormal range scale correctly. Within 2 ulp of expf; inf, -inf and NaN as expf. */
static LLVMValueRef vexp(LLVMBuilderRef b, gr_llvm_host *h, LLVMValueRef x) {
    LLVMTypeRef i32 = gr_llvm.LLVMInt32TypeInContext(h->lctx);
    LLVMValueRef hi = fc(h, 89.0), lo = fc(h, -104.0); /* beyond: inf / 0 anyway */
    LLVMValueRef xc = gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealUGT, x, hi, ""), hi, x, "");
    xc = gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOLT, xc, lo, ""), lo, xc, "");
    LLVMValueRef n = call1(b, h, "llvm.rint.f32", gr_llvm.LLVMBuildFMul(b, xc, fc(h, 1.44269504088896341), ""));
    LLVMValueRef r = gr_llvm.LLVMBuildFSub(b, xc, gr_llvm.LLVMBuildFMul(b, n, fc(h, 0.693145751953125), ""), "");
    r = gr_llvm.LLVMBuildFSub(b, r, gr_llvm.LLVMBuildFMul(b, n, fc(h, 1.42860682030941723212e-6), ""), "");
    static const double c[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
    LLVMValueRef p = fc(h, c[0]);
    for (int k = 1; k < 8; k++) p = gr_llvm.LLVMBuildFAdd(b, gr_llvm.LLVMBuildFMul(b, p, r, ""), fc(h, c[k]), "");
    LLVMValueRef ni = gr_llvm.LLVMBuildFPToSI(b, n, i32, "");
    LLVMValueRef n1 = gr_llvm.LLVMBuildAShr(b, ni, gr_llvm.LLVMConstInt(i32, 1, 0), "");
    LLVMValueRef n2 = gr_llvm.LLVMBuildSub(b, ni, n1, "");
    LLVMValueRef bias = gr_llvm.LLVMConstInt(i32, 127, 0), sh = gr_llvm.LLVMConstInt(i32, 23, 0);
    LLVMValueRef s1 = gr_llvm.LLVMBuildBitCast(
        b, gr_llvm.LLVMBuildShl(b, gr_llvm.LLVMBuildAdd(b, n1, bias, ""), sh, ""), f32t(h), "");
    LLVMValueRef s2 = gr_llvm.LLVMBuildBitCast(
        b, gr_llvm.LLVMBuildShl(b, gr_llvm.LLVMBuildAdd(b, n2, bias, ""), sh, ""), f32t(h), "");
    LLVMValueRef res = gr_llvm.LLVMBuildFMul(b, gr_llvm.LLVMBuildFMul(b, p, s1, ""), s2, "");
    return gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, res, "");
}
static LLVMValueRef e_exp(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return vexp(b, h, a[0]);
}
UNARY_CALL(e_log, "llvm.log.f32")
UNARY_CALL(e_sqrt, "llvm.sqrt.f32")
UNARY_CALL(e_abs, "llvm.fabs.f32")
UNARY_CALL(e_floor, "llvm.floor.f32")
UNARY_CALL(e_ceil, "llvm.ceil.f32")
UNARY_CALL(e_sin, "llvm.sin.f32")
UNARY_CALL(e_cos, "llvm.cos.f32")
UNARY_CALL(e_tanh, "tanhf")
UNARY_CALL(e_erf, "erff")
static LLVMValueRef e_rsqrt(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return gr_llvm.LLVMBuildFDiv(b, fc(h, 1.0), call1(b, h, "llvm.sqrt.f32", a[0]), "");
}
static LLVMValueRef e_neg(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFNeg(b, a[0], "");
}
static LLVMValueRef e_square(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFMul(b, a[0], a[0], "");
}
static LLVMValueRef sigmoid(LLVMBuilderRef b, gr_llvm_host *h, LLVMValueRef x) {
    LLVMValueRef e = vexp(b, h, gr_llvm.LLVMBuildFNeg(b, x, ""));
    return gr_llvm.LLVMBuildFDiv(b, fc(h, 1.0), gr_llvm.LLVMBuildFAdd(b, fc(h, 1.0), e, ""), "");
}
static LLVMValueRef e_sigmoid(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return sigmoid(b, h, a[0]);
}
static LLVMValueRef e_silu(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return gr_llvm.LLVMBuildFMul(b, a[0], sigmoid(b, h, a[0]), "");
}
static LLVMValueRef e_relu(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOGT, a[0], fc(h, 0), ""), a[0], fc(h, 0), "");
}
/* a < lo ? lo : a > hi ? hi : a */
static LLVMValueRef clamp(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef lo, LLVMValueRef hi) {
    LLVMValueRef up = gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x, "");
    return gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, up, "");
}
static LLVMValueRef e_relu6(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    return clamp(b, a[0], fc(h, 0), fc(h, 6));
}
static LLVMValueRef e_clip(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    /* max everywhere when min > max (ONNX's min(max(x, min), max)) */
    double lo = n->scalars[1] < n->scalars[2] ? n->scalars[1] : n->scalars[2];
    return clamp(b, a[0], fc(h, (float)lo), fc(h, (float)n->scalars[2]));
}
static LLVMValueRef e_leaky(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    LLVMValueRef al = fc(h, (float)ir_attrs_get_float(n->attrs, "alpha", 0.01));
    return gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOGT, a[0], fc(h, 0), ""), a[0],
                           gr_llvm.LLVMBuildFMul(b, al, a[0], ""), "");
}
static LLVMValueRef e_gelu(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    LLVMValueRef e = call1(b, h, "erff", gr_llvm.LLVMBuildFMul(b, a[0], fc(h, 0.70710678118654752f), ""));
    return gr_llvm.LLVMBuildFMul(b, gr_llvm.LLVMBuildFMul(b, fc(h, 0.5), a[0], ""),
                         gr_llvm.LLVMBuildFAdd(b, fc(h, 1.0), e, ""), "");
}

/* ONNX coverage: more unary math through libm, rounding, C and floor remainders */
UNARY_CALL(e_tan, "tanf")
UNARY_CALL(e_asin, "asinf")
UNARY_CALL(e_acos, "acosf")
UNARY_CALL(e_atan, "atanf")
UNARY_CALL(e_sinh, "sinhf")
UNARY_CALL(e_cosh, "coshf")
UNARY_CALL(e_asinh, "asinhf")
UNARY_CALL(e_acosh, "acoshf")
UNARY_CALL(e_atanh, "atanhf")
UNARY_CALL(e_round, "llvm.rint.f32") /* half to even in the default rounding mode, as nearbyintf */
UNARY_CALL(e_trunc, "llvm.trunc.f32")
/* mod: C fmod (frem); floor_mod: the remainder takes the divisor's sign */
static LLVMValueRef e_mod(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)h, (void)n;
    return gr_llvm.LLVMBuildFRem(b, a[0], a[1], "");
}
static LLVMValueRef e_floor_mod(LLVMBuilderRef b, gr_llvm_host *h, const rt_fuse_node *n, LLVMValueRef *a) {
    (void)n;
    LLVMValueRef r = gr_llvm.LLVMBuildFRem(b, a[0], a[1], "");
    LLVMValueRef nz = gr_llvm.LLVMBuildFCmp(b, LLVMRealONE, r, fc(h, 0), "");
    LLVMValueRef diff = gr_llvm.LLVMBuildXor(b, gr_llvm.LLVMBuildFCmp(b, LLVMRealOLT, r, fc(h, 0), ""),
                                     gr_llvm.LLVMBuildFCmp(b, LLVMRealOLT, a[1], fc(h, 0), ""), "");
    return gr_llvm.LLVMBuildSelect(b, gr_llvm.LLVMBuildAnd(b, nz, diff, ""), gr_llvm.LLVMBuildFAdd(b, r, a[1], ""),
                                   r, "");
}

typedef struct low_row {
    emit_fn emit;
    bool libm; /* calls into libm: the loops stay scalar */
} low_row;
/* by op id (emit NULL: not lowered) */
static const low_row low_table[IR_OP_COUNT] = {
    [IR_OP_ADD] = {e_add},         [IR_OP_SUBTRACT] = {e_sub},     [IR_OP_MULTIPLY] = {e_mul},
    [IR_OP_DIVIDE] = {e_div},      [IR_OP_POWER] = {e_pow, true},  [IR_OP_MAXIMUM] = {e_max},
    [IR_OP_MINIMUM] = {e_min},     [IR_OP_EXP] = {e_exp},          [IR_OP_LOG] = {e_log},
    [IR_OP_SQRT] = {e_sqrt},       [IR_OP_RSQRT] = {e_rsqrt},      [IR_OP_ABS] = {e_abs},
    [IR_OP_FLOOR] = {e_floor},     [IR_OP_CEIL] = {e_ceil},        [IR_OP_SIN] = {e_sin},
    [IR_OP_COS] = {e_cos},         [IR_OP_TANH] = {e_tanh, true},  [IR_OP_ERF] = {e_erf, true},
    [IR_OP_NEGATIVE] = {e_neg},    [IR_OP_SQUARE] = {e_square},    [IR_OP_SIGMOID] = {e_sigmoid},
    [IR_OP_SILU] = {e_silu},    [IR_OP_RELU] = {e_relu},     [IR_OP_RELU6] = {e_relu6},
    [IR_OP_CLIP] = {e_clip},       [IR_OP_LEAKYRELU] = {e_leaky}, [IR_OP_GELU] = {e_gelu, true},
    /* ONNX coverage */
    [IR_OP_TAN] = {e_tan, true},   [IR_OP_ASIN] = {e_asin, true},  [IR_OP_ACOS] = {e_acos, true},
    [IR_OP_ATAN] = {e_atan, true}, [IR_OP_SINH] = {e_sinh, true},  [IR_OP_COSH] = {e_cosh, true},
    [IR_OP_ASINH] = {e_asinh, true}, [IR_OP_ACOSH] = {e_acosh, true}, [IR_OP_ATANH] = {e_atanh, true},
    [IR_OP_ROUND] = {e_round},     [IR_OP_TRUNC] = {e_trunc},      [IR_OP_MOD] = {e_mod},
    [IR_OP_FLOOR_MOD] = {e_floor_mod},
};

static const low_row *find_row(const ir_op_def *def) {
    ir_op_id id = ir_op_def_id(def);
    return id != IR_OP_NONE && low_table[id].emit ? &low_table[id] : NULL;
}

static emit_fn find_emit(const ir_op_def *def) {
    const low_row *r = find_row(def);
    return r ? r->emit : NULL;
}

bool gr_llvm_can_lower(const ir_call *call) {
    if (call->callee->kind != IR_OP) return false;
    const ir_op_def *def = ((const ir_op *)call->callee)->def;
    uint32_t mask;
    if (rt_fuse_tail_of(call, &mask) != RT_TAIL_NONE) {
        /* the end of a group: a float32 input whose reduced (normalized) axes are static and not
         * empty (max / min of nothing is an error of the reference kernel; an empty loop would
         * write nothing); kept axes may be symbolic (the kernel then takes its extents at run
         * time, and an empty kept axis means an empty output: no call) */
        const ir_sinfo *s = call->args[0]->sinfo;
        if (!ir_dtype_eq(s->dtype, IR_DTYPE_F32) || s->ndim > RT_MAX_NDIM || (s->ndim > 0 && !s->dims))
            return false;
        for (uint32_t a = 1; a < call->nargs; a++) /* gamma, beta */
            if (!ir_dtype_eq(call->args[a]->sinfo->dtype, IR_DTYPE_F32)) return false;
        bool all_static = ir_sinfo_static_shape(s, NULL);
        for (int32_t d = 0; d < s->ndim; d++) {
            int64_t v;
            bool known = s->dims[d] && ir_prim_is_int(s->dims[d], &v);
            if (known && v <= 0) return false;
            if (!known && (all_static || (mask >> d & 1))) return false;
        }
        return true;
    }
    if (!find_emit(def)) return false;
    bool clip = ir_op_def_id(def) == IR_OP_CLIP;
    if (clip && call->nargs != 3) return false;
    for (uint32_t a = 0; a < call->nargs; a++) {
        const ir_expr *e = call->args[a];
        if (clip && a > 0) {
            if (e->kind != IR_PRIMVAL) return false;
            continue;
        }
        if (!e->sinfo || e->sinfo->kind != IR_SINFO_TENSOR || !ir_dtype_eq(e->sinfo->dtype, IR_DTYPE_F32))
            return false;
    }
    return true;
}

/* ---------------- IR generation ---------------- */

typedef struct loop_nest {
    int32_t nd;
    int64_t ext[RT_MAX_NDIM];
    int64_t ost[RT_MAX_NDIM];                  /* output strides */
    int64_t *ist;                              /* nin * RT_MAX_NDIM input strides (0 = broadcast) */
    int32_t nkept;                             /* tail: levels >= nkept are reduced */
    rt_fuse_tail tail;
    double count;                              /* reduced elements (mean) */
    bool dyn;                                  /* extents and strides are run-time args */
} loop_nest;

/* A dyn group's nest: one level per axis of iter_shape (rt_fuse_loop_order); extents and strides
 * come from the args buffer. The reduced axes are static (gr_llvm_can_lower), so is count. */
static void plan_dyn_loops(const rt_fuse_group *g, loop_nest *L) {
    int32_t order[RT_MAX_NDIM];
    L->dyn = true;
    L->tail = (rt_fuse_tail)g->tail;
    L->nd = g->iter_ndim;
    L->nkept = rt_fuse_loop_order(g, order);
    L->count = 1;
    for (int32_t l = L->nkept; l < L->nd; l++) L->count *= (double)g->iter_shape[order[l]];
    L->ist = gr_xcalloc((size_t)(g->nin ? g->nin : 1) * RT_MAX_NDIM, sizeof(int64_t));
}

/* Tails whose output has the input's shape (normalizations along the reduced axes). */
static bool row_tail(rt_fuse_tail t) {
    return t == RT_TAIL_SOFTMAX || t == RT_TAIL_LOG_SOFTMAX || t == RT_TAIL_LAYER_NORM || t == RT_TAIL_RMS_NORM;
}

/* Tails: loops over the kept axes of iter_shape, then over the reduced ones. A reduction's
 * output does not move along the reduced axes (stride 0); a row tail's output has the input's
 * shape. */
static void plan_reduce_loops(const rt_fuse_group *g, loop_nest *L) {
    int32_t R = g->iter_ndim;
    int64_t st[RT_MAX_NDIM];
    L->ist = gr_xcalloc((size_t)(g->nin ? g->nin : 1) * RT_MAX_NDIM, sizeof(int64_t));
    L->tail = (rt_fuse_tail)g->tail;
    bool row = row_tail(L->tail);
    L->count = 1;
    int32_t order[RT_MAX_NDIM], n = 0;
    for (int32_t d = 0; d < R; d++)
        if (!(g->reduce_mask >> d & 1)) order[n++] = d;
    L->nkept = n;
    for (int32_t d = 0; d < R; d++)
        if (g->reduce_mask >> d & 1) {
            order[n++] = d;
            L->count *= (double)g->iter_shape[d];
        }
    L->nd = R;
    int64_t os[RT_MAX_NDIM], s = 1;
    for (int32_t d = R - 1; d >= 0; d--) {
        bool red = !row && (g->reduce_mask >> d & 1);
        os[d] = red ? 0 : s;
        if (!red) s *= g->iter_shape[d];
    }
    for (int32_t l = 0; l < R; l++) {
        L->ext[l] = g->iter_shape[order[l]];
        L->ost[l] = os[order[l]];
    }
    for (uint32_t k = 0; k < g->nin; k++) {
        int32_t r = g->in_ndim[k];
        int64_t acc = 1;
        for (int32_t d = R - 1; d >= 0; d--) {
            int32_t j = d - (R - r);
            int64_t dim = j >= 0 ? g->in_shape[k][j] : 1;
            st[d] = dim == 1 ? 0 : acc;
            acc *= dim;
        }
        for (int32_t l = 0; l < R; l++) L->ist[k * RT_MAX_NDIM + l] = st[order[l]];
    }
}

/* Collapses the output's dims into the fewest loops: adjacent dims merge when every input
 * indexes them as one (both strides chain), and extent-1 dims vanish. */
static void plan_loops(const rt_fuse_group *g, loop_nest *L) {
    int32_t R = g->ndim;
    int64_t *st = gr_xcalloc((size_t)(g->nin ? g->nin : 1) * RT_MAX_NDIM, sizeof(int64_t));
    for (uint32_t k = 0; k < g->nin; k++) {
        int32_t r = g->in_ndim[k];
        int64_t s = 1;
        for (int32_t d = R - 1; d >= 0; d--) {
            int32_t j = d - (R - r);
            int64_t dim = j >= 0 ? g->in_shape[k][j] : 1;
            st[k * RT_MAX_NDIM + d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    L->nd = 0;
    L->ist = gr_xcalloc((size_t)(g->nin ? g->nin : 1) * RT_MAX_NDIM, sizeof(int64_t));
    for (int32_t d = 0; d < R; d++) {
        if (g->shape[d] == 1) continue;
        int32_t cur = L->nd - 1;
        bool merge = cur >= 0;
        for (uint32_t k = 0; k < g->nin && merge; k++)
            merge = L->ist[k * RT_MAX_NDIM + cur] == st[k * RT_MAX_NDIM + d] * g->shape[d];
        if (merge) {
            L->ext[cur] *= g->shape[d];
            for (uint32_t k = 0; k < g->nin; k++) L->ist[k * RT_MAX_NDIM + cur] = st[k * RT_MAX_NDIM + d];
            continue;
        }
        L->ext[L->nd] = g->shape[d];
        for (uint32_t k = 0; k < g->nin; k++) L->ist[k * RT_MAX_NDIM + L->nd] = st[k * RT_MAX_NDIM + d];
        L->nd++;
    }
    int64_t s = 1;
    for (int32_t d = L->nd - 1; d >= 0; d--) {
        L->ost[d] = s;
        s *= L->ext[d];
    }
    free(st);
}

/* The likely stride of each tensor (0 output, 1 + k input k) along the innermost level of each
 * part of a dyn nest (guess[t * 2 + part], part 0 kept, 1 reduced), -1 when there is no good
 * guess. A wrong guess only costs speed: the kernel checks the run's args and takes the general
 * nest when they differ. The innermost level of a part is its last axis a (rt_fuse_loop_order);
 * along the tensor's own last axis it moves by 1, where it has no dim or a static 1 it
 * broadcasts (0). */
static void guess_strides(const rt_fuse_group *g, const loop_nest *L, int8_t *guess) {
    int32_t order[RT_MAX_NDIM], R = g->iter_ndim;
    rt_fuse_loop_order(g, order);
    bool row = L->tail == RT_TAIL_SOFTMAX || L->tail == RT_TAIL_LOG_SOFTMAX || L->tail == RT_TAIL_LAYER_NORM ||
               L->tail == RT_TAIL_RMS_NORM;
    for (int part = 0; part < 2; part++) {
        int32_t lvl = part ? L->nd - 1 : L->nkept - 1;
        for (uint32_t t = 0; t <= g->nin; t++) guess[t * 2 + (uint32_t)part] = -1;
        if (lvl < 0 || (part == 1 && L->nkept == L->nd)) continue;
        int32_t a = order[lvl];
        /* output: a reduction does not move along reduced axes; otherwise contiguous */
        if (part == 1 && !row) guess[0 * 2 + 1] = 0;
        /* contiguous along the last axis, and a reduction's along its last kept axis (the axes
         * after it are reduced) */
        else if (a == R - 1 || (L->tail != RT_TAIL_NONE && !row)) guess[0 * 2 + (uint32_t)part] = 1;
        for (uint32_t k = 0; k < g->nin; k++) {
            int32_t j = a - (R - g->in_ndim[k]);
            if (j < 0 || g->in_shape[k][j] == 1) guess[(k + 1) * 2 + (uint32_t)part] = 0;
            else if (j == g->in_ndim[k] - 1) guess[(k + 1) * 2 + (uint32_t)part] = 1;
        }
    }
}


typedef struct gen {
    gr_llvm_host *h;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    const rt_fuse_group *g;
    const loop_nest *L;
    LLVMValueRef *in;        /* nin float* */
    LLVMValueRef out;
    LLVMValueRef *vals;      /* per node */
    LLVMValueRef acc;        /* tail: double accumulator (alloca; sums) */
    LLVMValueRef facc;       /* tail: float accumulator (alloca; max / min) */
    bool in_tail;            /* emitting the reduced loops of a tail */
    int pass;                /* row tails: 0 max / mean, 1 exp-sum / variance, 2 write */
    LLVMValueRef mx, scale;  /* row tails: the row's max (mean); 1/sum, log(sum) or 1/std */
    LLVMValueRef mean;       /* layer_norm: the row's mean in double */
    bool sum_pass;           /* the reduced loops being emitted only sum (may be reordered) */
    bool libm;               /* the group calls libm (powf, tanhf, erff): loops stay scalar */
    LLVMValueRef dext[RT_MAX_NDIM], dost[RT_MAX_NDIM]; /* dyn: extents, output strides */
    LLVMValueRef *dist;      /* dyn: nin * RT_MAX_NDIM input strides */
    int8_t *guess;           /* dyn: per tensor (output, inputs) its stride along the innermost
                              * level of each part (kept [0], reduced [1]): 0, 1, or -1 unknown */
    bool fast;               /* dyn: emitting the nest that assumes the guessed strides */
} gen;

static LLVMTypeRef i64t(gr_llvm_host *h) { return gr_llvm.LLVMInt64TypeInContext(h->lctx); }

static LLVMTypeRef f64t(gr_llvm_host *h) { return gr_llvm.LLVMDoubleTypeInContext(h->lctx); }

/* A double(double) intrinsic ("llvm.log.f64"). */
static LLVMValueRef call_d(LLVMBuilderRef b, gr_llvm_host *h, const char *name, LLVMValueRef x) {
    LLVMTypeRef dt = f64t(h);
    LLVMTypeRef ft = gr_llvm.LLVMFunctionType(dt, &dt, 1, 0);
    LLVMValueRef f = gr_llvm.LLVMGetNamedFunction(h->mod, name);
    if (!f) f = gr_llvm.LLVMAddFunction(h->mod, name, ft);
    return gr_llvm.LLVMBuildCall2(b, ft, f, &x, 1, "");
}

/* acc += (double)v */
static void acc_add(gen *G, LLVMValueRef v) {
    LLVMBuilderRef b = G->b;
    LLVMValueRef cur = gr_llvm.LLVMBuildLoad2(b, f64t(G->h), G->acc, "");
    gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildFAdd(b, cur, gr_llvm.LLVMBuildFPExt(b, v, f64t(G->h), ""), ""), G->acc);
}

/* layer_norm / rms_norm, as the reference kernel: mean and variance in double (two passes),
 * then (x - (float)mean) * (float)(1 / sqrt(var + eps)) * gamma + beta in float. */
static void emit_norm_step(gen *G, LLVMValueRef *a, LLVMValueRef p) {
    LLVMBuilderRef b = G->b;
    gr_llvm_host *h = G->h;
    if (G->pass == 0) {
        acc_add(G, a[0]);
    } else if (G->pass == 1) {
        LLVMValueRef d = gr_llvm.LLVMBuildFSub(b, gr_llvm.LLVMBuildFPExt(b, a[0], f64t(h), ""), G->mean, "");
        LLVMValueRef cur = gr_llvm.LLVMBuildLoad2(b, f64t(h), G->acc, "");
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildFAdd(b, cur, gr_llvm.LLVMBuildFMul(b, d, d, ""), ""), G->acc);
    } else {
        const rt_fuse_node *nd = &G->g->nodes[G->g->nnodes - 1];
        LLVMValueRef v = gr_llvm.LLVMBuildFMul(b, gr_llvm.LLVMBuildFSub(b, a[0], G->mx, ""), G->scale, "");
        bool ln = G->L->tail == RT_TAIL_LAYER_NORM;
        if (!ln || ir_attrs_get_bool(nd->attrs, "scale", true)) v = gr_llvm.LLVMBuildFMul(b, v, a[1], "");
        if (ln && ir_attrs_get_bool(nd->attrs, "center", true)) v = gr_llvm.LLVMBuildFAdd(b, v, a[2], "");
        gr_llvm.LLVMBuildStore(b, v, p);
    }
}

/* One element of a tail: a holds the tail's args at this element (a[0] its input), p is the
 * output element. */
static void emit_tail_step(gen *G, LLVMValueRef *a, LLVMValueRef p) {
    LLVMBuilderRef b = G->b;
    gr_llvm_host *h = G->h;
    LLVMValueRef v = a ? a[0] : NULL;
    switch (G->L->tail) {
    case RT_TAIL_LAYER_NORM:
    case RT_TAIL_RMS_NORM:
        emit_norm_step(G, a, p);
        return;
    case RT_TAIL_SUM:
    case RT_TAIL_MEAN:
        acc_add(G, v); /* in double, as the reference kernel */
        return;
    case RT_TAIL_MAX:
    case RT_TAIL_MIN: {
        /* v wins when beyond the accumulator or NaN (a NaN sticks), as the reference kernel */
        LLVMValueRef m = gr_llvm.LLVMBuildLoad2(b, f32t(h), G->facc, "");
        LLVMValueRef c = gr_llvm.LLVMBuildOr(
            b, gr_llvm.LLVMBuildFCmp(b, G->L->tail == RT_TAIL_MAX ? LLVMRealOGT : LLVMRealOLT, v, m, ""),
            gr_llvm.LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), "");
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildSelect(b, c, v, m, ""), G->facc);
        return;
    }
    default:
        break;
    }
    /* softmax / log_softmax, numerically stable: max, then sum of exp(v - max), then scale */
    if (G->pass == 0) {
        LLVMValueRef m = gr_llvm.LLVMBuildLoad2(b, f32t(h), G->facc, "");
        LLVMValueRef gt = gr_llvm.LLVMBuildFCmp(b, LLVMRealOGT, v, m, "");
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildSelect(b, gt, v, m, ""), G->facc);
    } else if (G->pass == 1) {
        LLVMValueRef e = vexp(b, h, gr_llvm.LLVMBuildFSub(b, v, G->mx, ""));
        acc_add(G, e);
        if (G->L->tail == RT_TAIL_SOFTMAX) gr_llvm.LLVMBuildStore(b, e, p);
    } else if (G->L->tail == RT_TAIL_SOFTMAX) {
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildFMul(b, gr_llvm.LLVMBuildLoad2(b, f32t(h), p, ""), G->scale, ""), p);
    } else {
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildFSub(b, gr_llvm.LLVMBuildFSub(b, v, G->mx, ""), G->scale, ""), p);
    }
}

static void emit_body(gen *G, LLVMValueRef *ioff, LLVMValueRef ooff) {
    LLVMBuilderRef b = G->b;
    gr_llvm_host *h = G->h;
    const rt_fuse_group *g = G->g;
    LLVMValueRef p = gr_llvm.LLVMBuildInBoundsGEP2(b, f32t(h), G->out, &ooff, 1, "");
    if (G->L->tail == RT_TAIL_SOFTMAX && G->pass == 2) { /* scales the stored exps */
        emit_tail_step(G, NULL, p);
        return;
    }
    LLVMValueRef *loaded = gr_xcalloc(g->nin ? g->nin : 1, sizeof(LLVMValueRef));
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const rt_fuse_node *nd = &g->nodes[n];
        LLVMValueRef a[RT_FUSE_MAX_ARGS] = {0};
        for (uint32_t k = 0; k < nd->nargs; k++) {
            int32_t r = nd->args[k];
            if (r == RT_FUSE_SCALAR) {
                a[k] = fc(h, (float)nd->scalars[k]);
            } else if (r < 0) {
                a[k] = G->vals[-r - 1];
            } else {
                if (!loaded[r]) {
                    LLVMValueRef ip = gr_llvm.LLVMBuildInBoundsGEP2(b, f32t(h), G->in[r], &ioff[r], 1, "");
                    loaded[r] = gr_llvm.LLVMBuildLoad2(b, f32t(h), ip, "");
                }
                a[k] = loaded[r];
            }
        }
        if (G->L->tail != RT_TAIL_NONE && n == g->nnodes - 1) {
            emit_tail_step(G, a, p);
            free(loaded);
            return;
        }
        G->vals[n] = find_emit(nd->op)(b, h, nd, a);
    }
    gr_llvm.LLVMBuildStore(b, G->vals[g->nnodes - 1], p);
    free(loaded);
}

static void emit_loop(gen *G, int32_t lvl, LLVMValueRef *ioff, LLVMValueRef ooff);

/* The reduced loops of a tail at level lvl (offsets of the kept index in ioff / ooff): init,
 * the loop(s), the result. */
static void emit_tail(gen *G, int32_t lvl, LLVMValueRef *ioff, LLVMValueRef ooff) {
    LLVMBuilderRef b = G->b;
    gr_llvm_host *h = G->h;
    const loop_nest *L = G->L;
    G->in_tail = true;
    if (L->tail == RT_TAIL_SUM || L->tail == RT_TAIL_MEAN) {
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMConstReal(f64t(h), 0.0), G->acc);
        G->sum_pass = true;
        emit_loop(G, lvl, ioff, ooff);
        G->sum_pass = false;
        LLVMValueRef v = gr_llvm.LLVMBuildLoad2(b, f64t(h), G->acc, "");
        if (L->tail == RT_TAIL_MEAN) v = gr_llvm.LLVMBuildFDiv(b, v, gr_llvm.LLVMConstReal(f64t(h), L->count), "");
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildFPTrunc(b, v, f32t(h), ""),
                       gr_llvm.LLVMBuildInBoundsGEP2(b, f32t(h), G->out, &ooff, 1, ""));
    } else if (L->tail == RT_TAIL_MAX || L->tail == RT_TAIL_MIN) {
        gr_llvm.LLVMBuildStore(b, fc(h, L->tail == RT_TAIL_MAX ? -HUGE_VAL : HUGE_VAL), G->facc);
        emit_loop(G, lvl, ioff, ooff);
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMBuildLoad2(b, f32t(h), G->facc, ""),
                       gr_llvm.LLVMBuildInBoundsGEP2(b, f32t(h), G->out, &ooff, 1, ""));
    } else if (L->tail == RT_TAIL_LAYER_NORM || L->tail == RT_TAIL_RMS_NORM) {
        LLVMValueRef n = gr_llvm.LLVMConstReal(f64t(h), L->count);
        G->mean = gr_llvm.LLVMConstReal(f64t(h), 0.0);
        if (L->tail == RT_TAIL_LAYER_NORM) {
            gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMConstReal(f64t(h), 0.0), G->acc);
            G->pass = 0;
            G->sum_pass = true;
            emit_loop(G, lvl, ioff, ooff);
            G->mean = gr_llvm.LLVMBuildFDiv(b, gr_llvm.LLVMBuildLoad2(b, f64t(h), G->acc, ""), n, "");
        }
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMConstReal(f64t(h), 0.0), G->acc);
        G->pass = 1;
        G->sum_pass = true;
        emit_loop(G, lvl, ioff, ooff);
        G->sum_pass = false;
        double eps = ir_attrs_get_float(G->g->nodes[G->g->nnodes - 1].attrs, "epsilon", 1e-5);
        LLVMValueRef var = gr_llvm.LLVMBuildFDiv(b, gr_llvm.LLVMBuildLoad2(b, f64t(h), G->acc, ""), n, "");
        LLVMValueRef sd =
            call_d(b, h, "llvm.sqrt.f64", gr_llvm.LLVMBuildFAdd(b, var, gr_llvm.LLVMConstReal(f64t(h), eps), ""));
        G->scale = gr_llvm.LLVMBuildFPTrunc(b, gr_llvm.LLVMBuildFDiv(b, gr_llvm.LLVMConstReal(f64t(h), 1.0), sd, ""),
                                            f32t(h), "");
        G->mx = gr_llvm.LLVMBuildFPTrunc(b, G->mean, f32t(h), "");
        G->pass = 2;
        emit_loop(G, lvl, ioff, ooff);
        G->pass = 0;
    } else {
        gr_llvm.LLVMBuildStore(b, fc(h, -HUGE_VAL), G->facc);
        G->pass = 0;
        emit_loop(G, lvl, ioff, ooff);
        G->mx = gr_llvm.LLVMBuildLoad2(b, f32t(h), G->facc, "");
        gr_llvm.LLVMBuildStore(b, gr_llvm.LLVMConstReal(f64t(h), 0.0), G->acc);
        G->pass = 1;
        G->sum_pass = true;
        emit_loop(G, lvl, ioff, ooff);
        G->sum_pass = false;
        LLVMValueRef sum = gr_llvm.LLVMBuildLoad2(b, f64t(h), G->acc, "");
        if (L->tail == RT_TAIL_SOFTMAX) {
            G->scale = gr_llvm.LLVMBuildFPTrunc(
                b, gr_llvm.LLVMBuildFDiv(b, gr_llvm.LLVMConstReal(f64t(h), 1.0), sum, ""), f32t(h), "");
        } else {
            G->scale = gr_llvm.LLVMBuildFPTrunc(b, call_d(b, h, "llvm.log.f64", sum), f32t(h), "");
        }
        G->pass = 2;
        emit_loop(G, lvl, ioff, ooff);
        G->pass = 0;
    }
    G->in_tail = false;
}

/* True when every input and the output move by 0 or 1 element along loop level lvl. */
static bool unit_stride(const gen *G, int32_t lvl) {
    if (G->L->dyn) return true; /* strides known at run time: the vectorizer versions on them */
    for (uint32_t k = 0; k < G->g->nin; k++)
        if (G->L->ist[k * RT_MAX_NDIM + lvl] > 1) return false;
    return G->L->ost[lvl] <= 1;
}

/* llvm.loop !{self, !{"llvm.loop.vectorize.enable", i1 true}} on a loop's latch branch: with it,
 * the vectorizer may reorder the loop's floating-point sums (partial sums per lane, added at
 * the end); without it a float reduction stays scalar and sequential. Only on unit-stride
 * reduced loops, where the vector loads are contiguous. Sums are in double, so the reordering
 * changes results by about 1e-16 relative before they are rounded to float. */
static void allow_reorder(gr_llvm_host *h, LLVMValueRef br) {
    LLVMContextRef c = h->lctx;
    LLVMMetadataRef kv[2] = {
        gr_llvm.LLVMMDStringInContext2(c, "llvm.loop.vectorize.enable", strlen("llvm.loop.vectorize.enable")),
        gr_llvm.LLVMValueAsMetadata(gr_llvm.LLVMConstInt(gr_llvm.LLVMInt1TypeInContext(c), 1, 0))};
    LLVMMetadataRef tmp = gr_llvm.LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef ops[2] = {tmp, gr_llvm.LLVMMDNodeInContext2(c, kv, 2)};
    LLVMMetadataRef id = gr_llvm.LLVMMDNodeInContext2(c, ops, 2);
    gr_llvm.LLVMMetadataReplaceAllUsesWith(tmp, id); /* the loop id refers to itself */
    gr_llvm.LLVMSetMetadata(br, gr_llvm.LLVMGetMDKindIDInContext(c, "llvm.loop", strlen("llvm.loop")),
                            gr_llvm.LLVMMetadataAsValue(c, id));
}

/* The stride of tensor t (0 output, 1 + k input k) at level lvl of a dyn nest: the guessed
 * constant on the innermost level of a part in the fast nest, else the run-time argument. */
static LLVMValueRef dyn_stride(const gen *G, uint32_t t, int32_t lvl) {
    const loop_nest *L = G->L;
    int part = lvl == L->nd - 1 ? (L->nkept < L->nd ? 1 : 0) : lvl == L->nkept - 1 ? 0 : -1;
    if (G->fast && part >= 0 && G->guess[t * 2 + (uint32_t)part] >= 0)
        return gr_llvm.LLVMConstInt(i64t(G->h), (unsigned long long)G->guess[t * 2 + (uint32_t)part], 0);
    return t == 0 ? G->dost[lvl] : G->dist[(t - 1) * RT_MAX_NDIM + lvl];
}

/* args[i] of a dyn group's args buffer. */
static LLVMValueRef load_arg(LLVMBuilderRef b, gr_llvm_host *h, LLVMValueRef args, int64_t i) {
    LLVMValueRef idx = gr_llvm.LLVMConstInt(i64t(h), (unsigned long long)i, 0);
    return gr_llvm.LLVMBuildLoad2(b, i64t(h), gr_llvm.LLVMBuildInBoundsGEP2(b, i64t(h), args, &idx, 1, ""), "");
}

/* Loop `lvl` of the nest; offsets so far in ioff (per input) and ooff. */
static void emit_loop(gen *G, int32_t lvl, LLVMValueRef *ioff, LLVMValueRef ooff) {
    const loop_nest *L = G->L;
    if (lvl == L->nd) {
        emit_body(G, ioff, ooff);
        return;
    }
    if (L->tail != RT_TAIL_NONE && lvl == L->nkept && !G->in_tail) {
        emit_tail(G, lvl, ioff, ooff);
        return;
    }
    gr_llvm_host *h = G->h;
    LLVMBuilderRef b = G->b;
    uint32_t nin = G->g->nin;
    LLVMBasicBlockRef pre = gr_llvm.LLVMGetInsertBlock(b);
    LLVMBasicBlockRef loop = gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, G->fn, "loop");
    LLVMBasicBlockRef exit = gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, G->fn, "exit");
    gr_llvm.LLVMBuildBr(b, loop);
    gr_llvm.LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = gr_llvm.LLVMBuildPhi(b, i64t(h), "i");
    LLVMValueRef *sub = gr_xcalloc(nin ? nin : 1, sizeof(LLVMValueRef));
    for (uint32_t k = 0; k < nin; k++) {
        int64_t s = L->ist[k * RT_MAX_NDIM + lvl];
        LLVMValueRef sv = L->dyn ? dyn_stride(G, k + 1, lvl) : gr_llvm.LLVMConstInt(i64t(h), (unsigned long long)s, 0);
        sub[k] = !L->dyn && s == 0 ? ioff[k] : gr_llvm.LLVMBuildAdd(b, ioff[k], gr_llvm.LLVMBuildMul(b, i, sv, ""), "");
    }
    LLVMValueRef ost =
        L->dyn ? dyn_stride(G, 0, lvl) : gr_llvm.LLVMConstInt(i64t(h), (unsigned long long)L->ost[lvl], 0);
    LLVMValueRef o = gr_llvm.LLVMBuildAdd(b, ooff, gr_llvm.LLVMBuildMul(b, i, ost, ""), "");
    emit_loop(G, lvl + 1, sub, o);
    free(sub);
    LLVMValueRef next = gr_llvm.LLVMBuildAdd(b, i, gr_llvm.LLVMConstInt(i64t(h), 1, 0), "");
    LLVMValueRef ext = L->dyn ? G->dext[lvl] : gr_llvm.LLVMConstInt(i64t(h), (unsigned long long)L->ext[lvl], 0);
    LLVMValueRef done = gr_llvm.LLVMBuildICmp(b, LLVMIntEQ, next, ext, "");
    LLVMBasicBlockRef latch = gr_llvm.LLVMGetInsertBlock(b);
    LLVMValueRef br = gr_llvm.LLVMBuildCondBr(b, done, exit, loop);
    if (G->in_tail && G->sum_pass && !G->libm && lvl == L->nd - 1 && unit_stride(G, lvl)) allow_reorder(h, br);
    LLVMValueRef zero = gr_llvm.LLVMConstInt(i64t(h), 0, 0);
    gr_llvm.LLVMAddIncoming(i, &zero, &pre, 1);
    gr_llvm.LLVMAddIncoming(i, &next, &latch, 1);
    gr_llvm.LLVMPositionBuilderAtEnd(b, exit);
}

static unsigned attr_kind(const char *name) { return gr_llvm.LLVMGetEnumAttributeKindForName(name, strlen(name)); }

/* body(float *noalias out, const float *noalias in0, ...) internal, always inlined into the
 * exported wrapper(void **bufs): the inlined noalias scopes tell the vectorizer that the output
 * overlaps no input (the memory plan guarantees it). */
static gr_status make_module(gr_llvm_host *h, gr_diag *diag);

static gr_status add_group(void *self, const rt_fuse_group *g, gr_diag *diag) {
    gr_llvm_host *h = self;
    if (h->link_mode) return GR_OK;
    if (h->finalized)
        return gr_diag_set(diag, GR_ERR_INVALID, "llvm host: group '%s' added after finalize", g->name);
    for (uint32_t n = 0; n + (g->tail != RT_TAIL_NONE ? 1 : 0) < g->nnodes; n++)
        if (!find_emit(g->nodes[n].op))
            return gr_diag_set(diag, GR_ERR_UNSUPPORTED, "llvm host: no lowering for %s",
                               g->nodes[n].op->text_name);
    gr_status mst = make_module(h, diag);
    if (mst) return mst;
    LLVMTypeRef fp = gr_llvm.LLVMPointerType(f32t(h), 0);
    LLVMTypeRef ip = gr_llvm.LLVMPointerType(i64t(h), 0);
    uint32_t np = g->nin + 1 + (g->dyn ? 1 : 0); /* dyn: the args buffer last */
    LLVMTypeRef *pts = gr_xcalloc(np, sizeof(LLVMTypeRef));
    for (uint32_t k = 0; k < np; k++) pts[k] = k == g->nin + 1 ? ip : fp;
    LLVMTypeRef voidt = gr_llvm.LLVMVoidTypeInContext(h->lctx);
    LLVMTypeRef bt = gr_llvm.LLVMFunctionType(voidt, pts, np, 0);
    char bname[512];
    snprintf(bname, sizeof bname, "%s.body", g->name);
    LLVMValueRef body = gr_llvm.LLVMAddFunction(h->mod, bname, bt);
    gr_llvm.LLVMSetLinkage(body, LLVMInternalLinkage);
    gr_llvm.LLVMAddAttributeAtIndex(body, LLVMAttributeFunctionIndex,
                            gr_llvm.LLVMCreateEnumAttribute(h->lctx, attr_kind("alwaysinline"), 0));
    gr_llvm.LLVMAddAttributeAtIndex(body, LLVMAttributeFunctionIndex,
                            gr_llvm.LLVMCreateEnumAttribute(h->lctx, attr_kind("nounwind"), 0));
    for (uint32_t k = 0; k < np; k++)
        gr_llvm.LLVMAddAttributeAtIndex(body, k + 1, gr_llvm.LLVMCreateEnumAttribute(h->lctx, attr_kind("noalias"), 0));

    loop_nest L;
    memset(&L, 0, sizeof L);
    if (g->dyn) plan_dyn_loops(g, &L);
    else if (g->tail != RT_TAIL_NONE) plan_reduce_loops(g, &L);
    else plan_loops(g, &L);
    LLVMBuilderRef b = gr_llvm.LLVMCreateBuilderInContext(h->lctx);
    gr_llvm.LLVMPositionBuilderAtEnd(b, gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, body, "entry"));
    gen G = {.h = h, .b = b, .fn = body, .g = g, .L = &L, .out = gr_llvm.LLVMGetParam(body, 0)};
    G.in = gr_xcalloc(g->nin ? g->nin : 1, sizeof(LLVMValueRef));
    G.vals = gr_xcalloc(g->nnodes, sizeof(LLVMValueRef));
    LLVMValueRef *ioff = gr_xcalloc(g->nin ? g->nin : 1, sizeof(LLVMValueRef));
    for (uint32_t k = 0; k < g->nin; k++) {
        G.in[k] = gr_llvm.LLVMGetParam(body, k + 1);
        ioff[k] = gr_llvm.LLVMConstInt(i64t(h), 0, 0);
    }
    for (uint32_t n = 0; n < g->nnodes; n++) {
        const low_row *r = find_row(g->nodes[n].op);
        G.libm |= r && r->libm;
    }
    if (L.tail != RT_TAIL_NONE) {
        G.acc = gr_llvm.LLVMBuildAlloca(b, f64t(h), "acc");
        G.facc = gr_llvm.LLVMBuildAlloca(b, f32t(h), "facc");
    }
    G.dist = gr_xcalloc((size_t)(g->nin ? g->nin : 1) * RT_MAX_NDIM, sizeof(LLVMValueRef));
    int64_t numel = 1;
    if (L.dyn) { /* the args buffer (runtime/exec/plan.h, RT_FUSE_DYN_ARGS); the caller skips empty nests */
        LLVMValueRef args = gr_llvm.LLVMGetParam(body, np - 1);
        int32_t R = L.nd;
        for (int32_t l = 0; l < R; l++) {
            G.dext[l] = load_arg(b, h, args, l);
            G.dost[l] = load_arg(b, h, args, R + l);
            for (uint32_t k = 0; k < g->nin; k++)
                G.dist[k * RT_MAX_NDIM + l] = load_arg(b, h, args, (int64_t)(2 + k) * R + l);
        }
    } else {
        for (int32_t d = 0; d < g->iter_ndim; d++) numel *= g->iter_shape[d];
    }
    if (L.dyn) {
        /* two nests: one with the likely strides of the innermost levels as constants (so the
         * vectorizer sees unit-stride and broadcast loads), taken when the run's args match,
         * and the general one */
        G.guess = gr_xcalloc((size_t)(g->nin + 1) * 2, sizeof(int8_t));
        guess_strides(g, &L, G.guess);
        LLVMValueRef ok = gr_llvm.LLVMConstInt(gr_llvm.LLVMInt1TypeInContext(h->lctx), 1, 0);
        for (uint32_t t = 0; t <= g->nin; t++)
            for (int part = 0; part < 2; part++) {
                int32_t lvl = part ? L.nd - 1 : L.nkept - 1;
                if (G.guess[t * 2 + (uint32_t)part] < 0 || lvl < 0 || (part == 1 && L.nkept == L.nd)) continue;
                G.fast = false;
                LLVMValueRef want = gr_llvm.LLVMConstInt(i64t(h), (unsigned long long)G.guess[t * 2 + (uint32_t)part], 0);
                LLVMValueRef eq = gr_llvm.LLVMBuildICmp(b, LLVMIntEQ, dyn_stride(&G, t, lvl), want, "");
                ok = gr_llvm.LLVMBuildAnd(b, ok, eq, "");
            }
        LLVMBasicBlockRef fastb = gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, body, "fast");
        LLVMBasicBlockRef slowb = gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, body, "general");
        LLVMBasicBlockRef done = gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, body, "done");
        gr_llvm.LLVMBuildCondBr(b, ok, fastb, slowb);
        gr_llvm.LLVMPositionBuilderAtEnd(b, fastb);
        G.fast = true;
        emit_loop(&G, 0, ioff, gr_llvm.LLVMConstInt(i64t(h), 0, 0));
        gr_llvm.LLVMBuildBr(b, done);
        gr_llvm.LLVMPositionBuilderAtEnd(b, slowb);
        G.fast = false;
        emit_loop(&G, 0, ioff, gr_llvm.LLVMConstInt(i64t(h), 0, 0));
        gr_llvm.LLVMBuildBr(b, done);
        gr_llvm.LLVMPositionBuilderAtEnd(b, done);
        free(G.guess);
    } else if (numel > 0) {
        emit_loop(&G, 0, ioff, gr_llvm.LLVMConstInt(i64t(h), 0, 0));
    }
    gr_llvm.LLVMBuildRetVoid(b);

    /* wrapper(void **bufs) */
    LLVMTypeRef pp = gr_llvm.LLVMPointerType(fp, 0);
    LLVMTypeRef wt = gr_llvm.LLVMFunctionType(voidt, &pp, 1, 0);
    LLVMValueRef w = gr_llvm.LLVMAddFunction(h->mod, g->name, wt);
    gr_llvm.LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex,
                            gr_llvm.LLVMCreateEnumAttribute(h->lctx, attr_kind("nounwind"), 0));
    gr_llvm.LLVMPositionBuilderAtEnd(b, gr_llvm.LLVMAppendBasicBlockInContext(h->lctx, w, "entry"));
    LLVMValueRef *args = gr_xcalloc(np, sizeof(LLVMValueRef));
    LLVMValueRef bufs = gr_llvm.LLVMGetParam(w, 0);
    for (uint32_t k = 0; k < np; k++) {
        /* bufs[0..nin-1] inputs, bufs[nin] output, bufs[nin + 1] the args of a dyn group; body
         * takes the output first */
        LLVMValueRef idx = gr_llvm.LLVMConstInt(i64t(h), k, 0);
        LLVMValueRef p = gr_llvm.LLVMBuildLoad2(b, fp, gr_llvm.LLVMBuildInBoundsGEP2(b, fp, bufs, &idx, 1, ""), "");
        if (k == g->nin + 1) p = gr_llvm.LLVMBuildBitCast(b, p, ip, "");
        args[k == g->nin ? 0 : k <= g->nin ? k + 1 : k] = p;
    }
    gr_llvm.LLVMBuildCall2(b, bt, body, args, np, "");
    gr_llvm.LLVMBuildRetVoid(b);
    gr_llvm.LLVMDisposeBuilder(b);
    free(args);
    free(pts);
    free(G.in);
    free(G.vals);
    free(G.dist);
    free(ioff);
    free(L.ist);
    return GR_OK;
}

/* ---------------- target, JIT ---------------- */

static gr_status err_to_diag(LLVMErrorRef e, gr_diag *diag, const char *what) {
    char *msg = gr_llvm.LLVMGetErrorMessage(e);
    gr_status st = gr_diag_set(diag, GR_ERR_RUNTIME, "llvm host: %s: %s", what, msg);
    gr_llvm.LLVMDisposeErrorMessage(msg);
    return st;
}

static gr_status make_jit(gr_llvm_host *h, gr_diag *diag) {
    LLVMOrcJITTargetMachineBuilderRef jtmb;
    LLVMErrorRef e = gr_llvm.LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
    if (e) return err_to_diag(e, diag, "detect host");
    LLVMOrcLLJITBuilderRef jb = gr_llvm.LLVMOrcCreateLLJITBuilder();
    gr_llvm.LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, jtmb);
    e = gr_llvm.LLVMOrcCreateLLJIT(&h->jit, jb);
    if (e) return err_to_diag(e, diag, "create LLJIT");
    LLVMOrcDefinitionGeneratorRef gen_ref;
    e = gr_llvm.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen_ref, gr_llvm.LLVMOrcLLJITGetGlobalPrefix(h->jit),
                                                                     NULL, NULL);
    if (e) return err_to_diag(e, diag, "process symbols");
    gr_llvm.LLVMOrcJITDylibAddGenerator(gr_llvm.LLVMOrcLLJITGetMainJITDylib(h->jit), gen_ref);
    return GR_OK;
}

static gr_status link_object(gr_llvm_host *h, gr_diag *diag) {
    if (!h->obj_len) return GR_OK;
    gr_status st = make_jit(h, diag);
    if (st) return st;
    LLVMMemoryBufferRef mb = gr_llvm.LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)h->obj, h->obj_len,
                                                                       "graft_host.o");
    LLVMErrorRef e = gr_llvm.LLVMOrcLLJITAddObjectFile(h->jit, gr_llvm.LLVMOrcLLJITGetMainJITDylib(h->jit), mb);
    if (e) return err_to_diag(e, diag, "link object file");
    return GR_OK;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static gr_status finalize(void *self, gr_diag *diag) {
    gr_llvm_host *h = self;
    if (h->finalized) return GR_OK;
    h->finalized = true;
    uint64_t t0 = now_ns();
    gr_status st = GR_OK;
    if (!h->link_mode && h->mod && gr_llvm.LLVMGetFirstFunction(h->mod)) {
        char *err = NULL;
        LLVMPassBuilderOptionsRef po = gr_llvm.LLVMCreatePassBuilderOptions();
        LLVMErrorRef e = gr_llvm.LLVMRunPasses(h->mod, "default<O3>", h->tm, po);
        gr_llvm.LLVMDisposePassBuilderOptions(po);
        if (e) return err_to_diag(e, diag, "optimize");
        LLVMMemoryBufferRef mb = NULL;
        if (gr_llvm.LLVMTargetMachineEmitToMemoryBuffer(h->tm, h->mod, LLVMObjectFile, &err, &mb)) {
            st = gr_diag_set(diag, GR_ERR_RUNTIME, "llvm host: emit object: %s", err ? err : "?");
            gr_llvm.LLVMDisposeMessage(err);
            return st;
        }
        h->obj_len = gr_llvm.LLVMGetBufferSize(mb);
        h->obj = gr_xmalloc(h->obj_len ? h->obj_len : 1);
        memcpy(h->obj, gr_llvm.LLVMGetBufferStart(mb), h->obj_len);
        gr_llvm.LLVMDisposeMemoryBuffer(mb);
    }
    st = link_object(h, diag);
    h->compile_ns = now_ns() - t0;
    return st;
}

static rt_host_fn lookup(void *self, const char *name) {
    gr_llvm_host *h = self;
    if (!h->jit) return NULL;
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef e = gr_llvm.LLVMOrcLLJITLookup(h->jit, &addr, name);
    if (e) {
        gr_llvm.LLVMConsumeError(e);
        return NULL;
    }
    rt_host_fn fn;
    uintptr_t a = (uintptr_t)addr;
    memcpy(&fn, &a, sizeof fn);
    return fn;
}

static bool can_lower(void *self, const ir_call *call) {
    (void)self;
    return gr_llvm_can_lower(call);
}

static gr_llvm_host *host_alloc(void) {
    gr_llvm_host *h = gr_xcalloc(1, sizeof *h);
    h->iface = (rt_host_lowering){h, can_lower, add_group, finalize, lookup};
    return h;
}

/* Loads LLVM and records the host CPU: only once host code is compiled or linked, so a model
 * without any never maps libLLVM (llvm_api_impl.h). */
static gr_status host_cpu(gr_llvm_host *h, gr_diag *diag) {
    if (h->cpu[0]) return GR_OK;
    gr_status st = gr_llvm_load(diag);
    if (st) return st;
    char *cpu = gr_llvm.LLVMGetHostCPUName(), *feat = gr_llvm.LLVMGetHostCPUFeatures();
    snprintf(h->cpu, sizeof h->cpu, "%s %s", cpu, feat);
    gr_llvm.LLVMDisposeMessage(cpu);
    gr_llvm.LLVMDisposeMessage(feat);
    return GR_OK;
}

/* Compile mode's module and target machine, made by the first group. */
static gr_status make_module(gr_llvm_host *h, gr_diag *diag) {
    if (h->mod) return GR_OK;
    gr_status st = host_cpu(h, diag);
    if (st) return st;
    char *triple = gr_llvm.LLVMGetDefaultTargetTriple(), *err = NULL;
    LLVMTargetRef target;
    if (gr_llvm.LLVMGetTargetFromTriple(triple, &target, &err)) {
        st = gr_diag_set(diag, GR_ERR_RUNTIME, "llvm host: target %s: %s", triple, err);
        gr_llvm.LLVMDisposeMessage(err);
        gr_llvm.LLVMDisposeMessage(triple);
        return st;
    }
    h->lctx = gr_llvm.LLVMContextCreate();
    h->mod = gr_llvm.LLVMModuleCreateWithNameInContext("graft_host", h->lctx);
    char *cpu = gr_llvm.LLVMGetHostCPUName(), *feat = gr_llvm.LLVMGetHostCPUFeatures();
    h->tm = gr_llvm.LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive,
                                            LLVMRelocPIC, LLVMCodeModelDefault);
    gr_llvm.LLVMDisposeMessage(cpu);
    gr_llvm.LLVMDisposeMessage(feat);
    gr_llvm.LLVMSetTarget(h->mod, triple);
    gr_llvm.LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = gr_llvm.LLVMCreateTargetDataLayout(h->tm);
    char *dl = gr_llvm.LLVMCopyStringRepOfTargetData(td);
    gr_llvm.LLVMSetDataLayout(h->mod, dl);
    gr_llvm.LLVMDisposeMessage(dl);
    gr_llvm.LLVMDisposeTargetData(td);
    return GR_OK;
}

gr_status gr_llvm_host_new(gr_llvm_host **out, gr_diag *diag) {
    (void)diag;
    *out = host_alloc();
    return GR_OK;
}

gr_status gr_llvm_host_load(const uint8_t *obj, size_t len, gr_llvm_host **out, gr_diag *diag) {
    *out = NULL;
    /* RuntimeDyld trusts the object: a damaged one must be an error here, not a crash there */
    if (len) {
        gr_status st = gr_elf_check(obj, len, diag);
        if (st) return st;
    }
    gr_llvm_host *h = host_alloc();
    h->link_mode = true;
    if (len) {
        gr_status st = host_cpu(h, diag);
        if (st) {
            free(h);
            return st;
        }
    }
    h->obj_len = len;
    h->obj = gr_xmalloc(len ? len : 1);
    if (len) memcpy(h->obj, obj, len);
    *out = h;
    return GR_OK;
}

void gr_llvm_host_free(gr_llvm_host *h) {
    if (!h) return;
    if (h->jit) gr_llvm.LLVMOrcDisposeLLJIT(h->jit);
    if (h->mod) gr_llvm.LLVMDisposeModule(h->mod);
    if (h->tm) gr_llvm.LLVMDisposeTargetMachine(h->tm);
    if (h->lctx) gr_llvm.LLVMContextDispose(h->lctx);
    free(h->obj);
    free(h);
}

const rt_host_lowering *gr_llvm_host_lowering(gr_llvm_host *h) { return &h->iface; }
const uint8_t *gr_llvm_host_object(const gr_llvm_host *h, size_t *len) {
    *len = h->obj_len;
    return h->obj_len ? h->obj : NULL;
}
const char *gr_llvm_host_cpu(const gr_llvm_host *h) { return h->cpu; }
uint64_t gr_llvm_host_compile_ns(const gr_llvm_host *h) { return h->compile_ns; }
