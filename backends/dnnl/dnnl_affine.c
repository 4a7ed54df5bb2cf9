/* The engine's own per-channel affine y = op(x * scale[c] + shift[c]) on the 8-channel blocked
 * layout (nChw8c and its 3-D / 5-D kin), for ISAs below avx512_core: a batch norm left after a
 * concat or a pool and the activation after it (DenseNet's 62 norm -> relu pairs, which
 * dn_op_elemwise's affine fold has made one multiply with an add and a relu post-op). oneDNN
 * 2.6's jit:uni binary with a per-channel operand and two post-ops runs 2.7-3.2x slower than
 * this loop on the same data (DenseNet's 224 x 56 x 56 and 480 x 28 x 28 maps, one thread: 0.51
 * and 0.26 ms against 0.19 and 0.08). Each thread of oneDNN's OpenMP team (rt_dnnl_parallel)
 * takes a range of the (image, channel block, position) vectors; the padding lanes of the last
 * block stay 0.
 *
 * Compiled for AVX2 (AVX2_FN); dn_own_affine emits it only when the CPU has AVX2 and FMA
 * (dn_avx2_kernels_ok). */
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_avx2_impl.h"
#include "backends/dnnl/dnnl_ops_impl.h"

typedef struct dn_affine {
    int64_t NCb, Cb, HW, C;       /* vectors: NCb * HW, channel block of vector i: (i / HW) % Cb */
    float *scale, *shift;         /* Cb * 8 floats each (padding 0) */
    int nops;
    dn_vop ops[DN_VOP_MAX];
} dn_affine;

typedef struct affine_run {
    const dn_affine *p;
    const float *x;
    float *y;
} affine_run;

AVX2_FN static void work(void *ctx, int ithr, int nthr) {
    const affine_run *R = ctx;
    const dn_affine *p = R->p;
    int64_t lo, hi;
    dn_split(p->NCb * p->HW, ithr, nthr, &lo, &hi);
    for (int64_t i = lo; i < hi;) {
        int64_t row = i / p->HW, cb = row % p->Cb, end = (row + 1) * p->HW < hi ? (row + 1) * p->HW : hi;
        v8 s = _mm256_loadu_ps(p->scale + cb * 8), b = _mm256_loadu_ps(p->shift + cb * 8);
        __m256i keep = dn_lanes(p->C - cb * 8);
        for (; i < end; i++) {
            v8 y = dn_vop_apply(p->ops, p->nops, _mm256_fmadd_ps(_mm256_loadu_ps(R->x + i * 8), s, b), NULL);
            _mm256_storeu_ps(R->y + i * 8, _mm256_and_ps(y, _mm256_castsi256_ps(keep)));
        }
    }
}

static dnnl_status_t affine_fn(void *ctx, void *const *ptrs) {
    affine_run R = {ctx, ptrs[0], ptrs[1]};
    rt_dnnl_parallel(work, &R);
    return dnnl_success;
}

static void affine_free(void *ctx) {
    dn_affine *p = ctx;
    free(p->scale);
    free(p);
}

/* The constant per-channel vector (C values along axis 1 of an nd-dim result) of entry e. */
static const float *chan_vec(dn_state *S, int e, int nd, int64_t C) {
    if (e < 0 || S->ent_val[e] < 0) return NULL;
    int v = S->ent_val[e], cnd = dn_entry_ndim(S, e);
    const int64_t *cs = dn_entry_shape(S, e);
    if (!dn_is_plain(&S->vals.data[v].md) || cnd > nd || cnd < nd - 1) return NULL;
    for (int i = 0; i < cnd; i++)
        if (cs[i] != (nd - cnd + i == 1 ? C : 1)) return NULL;
    const char *p = dn_const_data(S, v);
    return p ? (const float *)(p + dn_val_boff(S, v)) : NULL;
}

gr_status dn_own_affine(dn_state *S, const rt_json_node *n, const dn_step *first, int xv, const dn_step *steps, int k,
                        bool *done) {
    *done = false;
    const dnnl_memory_desc_t *xmd = &S->vals.data[xv].md;
    int nd = xmd->ndims;
    if (!dn_avx2_kernels_ok() || (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ||
        nd < 3 || nd > 5 || first->kind != STEP_BINARY || xmd->data_type != dnnl_f32)
        return GR_OK;
    static const dnnl_format_tag_t TAG8[] = {dnnl_aBc8b, dnnl_aBcd8b, dnnl_aBcde8b};
    dnnl_memory_desc_t bmd;
    if (dnnl_memory_desc_init_by_tag(&bmd, nd, xmd->dims, dnnl_f32, TAG8[nd - 3]) != dnnl_success ||
        !dnnl_memory_desc_equal(&bmd, xmd))
        return GR_OK;
    int64_t C = xmd->dims[1];
    const float *sc = NULL, *sh = NULL;
    int used = 0;
    if (first->alg == dnnl_binary_mul) sc = chan_vec(S, first->src1, nd, C);
    else if (first->alg == dnnl_binary_add) sh = chan_vec(S, first->src1, nd, C);
    if (!sc && !sh) return GR_OK;
    if (sc && k > 0 && steps[0].kind == STEP_BINARY && steps[0].alg == dnnl_binary_add &&
        (sh = chan_vec(S, steps[0].src1, nd, C)))
        used = 1;
    dn_affine q = {0};
    while (used < k && q.nops < DN_VOP_MAX && dn_eltwise_vop(&steps[used], &q.ops[q.nops])) {
        used++;
        q.nops++;
    }
    int oe = used ? steps[used - 1].out : first->out;
    if (oe < 0 || S->is_head[oe]) return GR_OK;
    dn_affine *p = malloc(sizeof *p);
    float *vec = calloc((size_t)((C + 7) / 8 * 16), sizeof(float));
    if (!p || !vec) {
        free(p);
        free(vec);
        return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
    }
    q.Cb = (C + 7) / 8;
    q.NCb = xmd->dims[0] * q.Cb;
    q.HW = 1;
    for (int i = 2; i < nd; i++) q.HW *= xmd->dims[i];
    q.C = C;
    q.scale = vec;
    q.shift = vec + q.Cb * 8;
    for (int64_t c = 0; c < C; c++) {
        q.scale[c] = sc ? sc[c] : 1.f;
        q.shift[c] = sh ? sh[c] : 0.f;
    }
    *p = q;
    dn_consume(S, first, 1);
    S->stats.npostops--; /* the first step is the primitive itself */
    S->stats.nfused_nodes -= (uint32_t)first->nnodes > 0 ? 1 : 0;
    dn_consume(S, steps, used);
    dnnl_memory_desc_t slot;
    int ov = dn_slot_md(S, oe, &slot) && dnnl_memory_desc_equal(&slot, &bmd) ? dn_slot_val(S, oe) : dn_val_new(S, V_TMP, &bmd);
    dn_arg args[2] = {{DNNL_ARG_SRC, xv, bmd, NULL}, {DNNL_ARG_DST, ov, bmd, NULL}};
    *done = true;
    gr_status st = dn_emit_fn(S, n, affine_fn, p, affine_free, "binary", "graft_affine:avx2", args, 2);
    if (!st) S->ent_val[oe] = ov;
    return st;
}
