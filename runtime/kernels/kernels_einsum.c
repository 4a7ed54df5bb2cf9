/* einsum(operands: tuple, subscripts): explicit ("ij,jk->ik") and implicit ("ij,jk") forms,
 * repeated labels (diagonals, traces), "..." broadcast dims. A direct loop over the output and
 * the contracted labels with double accumulation: a reference, not a fast path. */
#include <ctype.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

#define EIN_MAX_OPS 8
#define EIN_LABELS 64  /* 52 letters + up to RT_MAX_NDIM ellipsis dims */

static int label_of(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Parses one term into labels (ellipsis dims become labels 52 + k, right-aligned to `nell`).
 * Returns the number of labels or -1. */
static int parse_term(const char *s, size_t len, int ndim_or_neg, int nell_total, int *labels,
                      int *nell_out) {
    int n = 0, nl = 0;
    bool has_ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (has_ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.') return -1;
            has_ell = true;
            i += 2;
            continue;
        }
        if (label_of(s[i]) < 0) return -1;
        nl++;
    }
    int nell = has_ell ? (ndim_or_neg >= 0 ? ndim_or_neg - nl : nell_total) : 0;
    if (nell < 0 || nl + nell > RT_MAX_NDIM) return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            for (int k = 0; k < nell; k++) labels[n++] = 52 + (nell_total - nell) + k;
            i += 2;
            continue;
        }
        labels[n++] = label_of(s[i]);
    }
    *nell_out = nell;
    return n;
}

static gr_status k_einsum(const rt_kernel_call *c, rt_value *out, gr_diag *d) {
    gr_status st;
    if ((st = rt_check_nargs(c, 1, 1, d))) return st;
    const rt_value *tup = &c->args[0];
    if (tup->kind != RT_VAL_TUPLE || tup->u.tuple.n == 0 || tup->u.tuple.n > EIN_MAX_OPS)
        return rt_kerr(c, d, GR_ERR_INVALID, "argument 0 must be a tuple of 1 to %d tensors", EIN_MAX_OPS);
    uint32_t nops = tup->u.tuple.n;
    const rt_tensor *ops[EIN_MAX_OPS];
    for (uint32_t i = 0; i < nops; i++) {
        if (tup->u.tuple.items[i].kind != RT_VAL_TENSOR)
            return rt_kerr(c, d, GR_ERR_INVALID, "tuple field %u is not a tensor", i);
        ops[i] = tup->u.tuple.items[i].u.t;
    }
    const char *sub = rt_attr_str(c->attrs, "subscripts", NULL);
    if (!sub) return rt_kerr(c, d, GR_ERR_INVALID, "missing subscripts");
    const char *arrow = strstr(sub, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - sub) : strlen(sub);
    /* split the operand terms */
    const char *term[EIN_MAX_OPS];
    size_t tlen[EIN_MAX_OPS];
    uint32_t nt = 0;
    for (const char *p = sub; nt < EIN_MAX_OPS;) {
        const char *comma = memchr(p, ',', lhs_len - (size_t)(p - sub));
        term[nt] = p;
        tlen[nt++] = comma ? (size_t)(comma - p) : lhs_len - (size_t)(p - sub);
        if (!comma) break;
        p = comma + 1;
    }
    if (nt != nops)
        return rt_kerr(c, d, GR_ERR_INVALID, "subscripts \"%s\" name %u operands, got %u", sub, nt, nops);
    int labels[EIN_MAX_OPS][RT_MAX_NDIM], nlab[EIN_MAX_OPS], nell_max = 0;
    int64_t size[EIN_LABELS];
    int count[EIN_LABELS] = {0};
    for (int i = 0; i < EIN_LABELS; i++) size[i] = -1;
    /* first pass: ellipsis width */
    for (uint32_t i = 0; i < nops; i++) {
        int ne;
        if (parse_term(term[i], tlen[i], ops[i]->dl.ndim, RT_MAX_NDIM, labels[i], &ne) < 0)
            return rt_kerr(c, d, GR_ERR_INVALID, "bad subscripts \"%s\" for operand %u %s", sub, i,
                           RT_SHAPE_STR(ops[i]));
        if (ne > nell_max) nell_max = ne;
    }
    for (uint32_t i = 0; i < nops; i++) {
        int ne;
        nlab[i] = parse_term(term[i], tlen[i], ops[i]->dl.ndim, nell_max, labels[i], &ne);
        if (nlab[i] != ops[i]->dl.ndim)
            return rt_kerr(c, d, GR_ERR_INVALID, "term %u of \"%s\" does not match %s", i, sub,
                           RT_SHAPE_STR(ops[i]));
        for (int k = 0; k < nlab[i]; k++) {
            int l = labels[i][k];
            int64_t e = ops[i]->dl.shape[k];
            count[l]++;
            if (size[l] < 0 || size[l] == 1) size[l] = (size[l] == 1 && l >= 52) ? e : (size[l] < 0 ? e : size[l]);
            if (size[l] != e && !(l >= 52 && e == 1))
                return rt_kerr(c, d, GR_ERR_INVALID, "label size mismatch in \"%s\" at operand %u %s",
                               sub, i, RT_SHAPE_STR(ops[i]));
        }
    }
    /* output labels */
    int olab[RT_MAX_NDIM], on = 0;
    if (arrow) {
        int ne;
        on = parse_term(arrow + 2, strlen(arrow + 2), -1, nell_max, olab, &ne);
        if (on < 0) return rt_kerr(c, d, GR_ERR_INVALID, "bad output subscripts in \"%s\"", sub);
        for (int k = 0; k < on; k++)
            if (size[olab[k]] < 0)
                return rt_kerr(c, d, GR_ERR_INVALID, "output label not in any input: \"%s\"", sub);
    } else {
        for (int l = 52; l < 52 + nell_max; l++)
            if (size[l] >= 0) olab[on++] = l;
        for (int a = 0; a < 52; a++) { /* ASCII order: uppercase first, as numpy */
            int l = a < 26 ? 26 + a : a - 26;
            if (count[l] == 1 && on < RT_MAX_NDIM) olab[on++] = l;
        }
    }
    bool in_out[EIN_LABELS] = {0};
    for (int k = 0; k < on; k++) in_out[olab[k]] = true;
    int clab[EIN_LABELS], cn = 0;
    for (int l = 0; l < EIN_LABELS; l++)
        if (size[l] >= 0 && !in_out[l]) clab[cn++] = l;
    /* per operand, the element stride of each label (0 when absent or broadcast) */
    int64_t lstride[EIN_MAX_OPS][EIN_LABELS];
    memset(lstride, 0, sizeof(lstride));
    for (uint32_t i = 0; i < nops; i++) {
        int64_t s[RT_MAX_NDIM];
        rt_strides(ops[i]->dl.ndim, ops[i]->dl.shape, s);
        for (int k = 0; k < nlab[i]; k++)
            if (ops[i]->dl.shape[k] != 1 || size[labels[i][k]] == 1) lstride[i][labels[i][k]] += s[k];
    }
    int64_t oshape[RT_MAX_NDIM];
    for (int k = 0; k < on; k++) oshape[k] = size[olab[k]];
    rt_tensor *o;
    if ((st = rt_out_new(c, ops[0]->dl.dtype, on, oshape, &o, d))) return st;
    int64_t ototal = rt_numel(on, oshape), ctotal = 1;
    for (int k = 0; k < cn; k++) ctotal *= size[clab[k]];
    int64_t oidx[RT_MAX_NDIM] = {0}, base[EIN_MAX_OPS] = {0};
    for (int64_t oi = 0; oi < ototal; oi++) {
        double acc = 0;
        int64_t cidx[EIN_LABELS] = {0}, off[EIN_MAX_OPS];
        for (uint32_t i = 0; i < nops; i++) off[i] = base[i];
        for (int64_t ci = 0; ci < ctotal; ci++) {
            double prod = 1;
            for (uint32_t i = 0; i < nops; i++) prod *= rt_tensor_get_f64(ops[i], off[i]);
            acc += prod;
            for (int k = cn - 1; k >= 0; k--) {
                int l = clab[k];
                for (uint32_t i = 0; i < nops; i++) off[i] += lstride[i][l];
                if (++cidx[k] < size[l]) break;
                for (uint32_t i = 0; i < nops; i++) off[i] -= lstride[i][l] * cidx[k];
                cidx[k] = 0;
            }
        }
        rt_tensor_set_f64(o, oi, acc);
        for (int k = on - 1; k >= 0; k--) {
            int l = olab[k];
            for (uint32_t i = 0; i < nops; i++) base[i] += lstride[i][l];
            if (++oidx[k] < oshape[k]) break;
            for (uint32_t i = 0; i < nops; i++) base[i] -= lstride[i][l] * oidx[k];
            oidx[k] = 0;
        }
    }
    *out = rt_value_tensor(o);
    return GR_OK;
}

const rt_kernel_entry rt_kernels_einsum[] = {
    RT_K(EINSUM, k_einsum),
};
RT_FAMILY_COUNT(einsum, rt_kernels_einsum);
