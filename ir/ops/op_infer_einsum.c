/* Struct info of einsum(operands: tuple, subscripts) (explicit "ij,jk->ik" and implicit "ij,jk"
 * forms, repeated labels, "..." broadcast dims) and reverse_sequence(x, seq_lens). */
#include <string.h>

#include "ir/ops/op_impl.h"

#define EIN_MAX_OPS 8
#define EIN_LABELS (52 + IR__MAX_DIMS)

static int label_of(char ch) {
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return -1;
}

/* Labels of one term; "..." becomes `nell` labels 52 + (total - nell) + k (right-aligned over
 * the widest ellipsis `total`). ndim < 0: an output term (nell = total). -1 on a bad term. */
static int parse_term(const char *s, size_t len, int ndim, int total, int *labels, int *nell_out) {
    int named = 0;
    bool ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (ell || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.') return -1;
            ell = true;
            i += 2;
        } else if (label_of(s[i]) < 0) {
            return -1;
        } else {
            named++;
        }
    }
    int nell = ell ? (ndim >= 0 ? ndim - named : total) : 0;
    if (nell < 0 || named + nell > IR__MAX_DIMS) return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            for (int k = 0; k < nell; k++) labels[n++] = 52 + (total - nell) + k;
            i += 2;
        } else {
            labels[n++] = label_of(s[i]);
        }
    }
    *nell_out = nell;
    return n;
}

IR__INFER(ir__infer_einsum) {
    const ir_sinfo *t = call->args[0]->sinfo;
    if (t->kind != IR_SINFO_TUPLE || t->n == 0 || t->n > EIN_MAX_OPS)
        return ir__op_err(call, diag, "the first argument must be a tuple of 1 to %d tensors, got %s",
                          EIN_MAX_OPS, ir__sinfo_str(t));
    const char *sub = ir__attr_str(call, "subscripts");
    if (!sub) return ir__op_err(call, diag, "subscripts are required");
    ir_dtype dt = IR_DTYPE_VOID;
    for (uint32_t i = 0; i < t->n; i++) {
        const ir_sinfo *f = t->fields[i];
        if (f->kind != IR_SINFO_TENSOR)
            return ir__op_err(call, diag, "field %u must be a tensor, got %s", i, ir__sinfo_str(f));
        if (!ir_dtype_is_void(f->dtype)) {
            if (!ir_dtype_is_void(dt) && !ir_dtype_eq(dt, f->dtype))
                return ir__op_err(call, diag, "data types %s and %s must be equal",
                                  ir_dtype_name(dt), ir_dtype_name(f->dtype));
            dt = f->dtype;
        }
    }
    const char *arrow = strstr(sub, "->");
    size_t lhs = arrow ? (size_t)(arrow - sub) : strlen(sub);
    const char *term[EIN_MAX_OPS];
    size_t tlen[EIN_MAX_OPS];
    uint32_t nt = 0;
    for (const char *p = sub;;) {
        const char *comma = memchr(p, ',', lhs - (size_t)(p - sub));
        if (nt == EIN_MAX_OPS) return ir__op_err(call, diag, "too many terms in \"%s\"", sub);
        term[nt] = p;
        tlen[nt++] = comma ? (size_t)(comma - p) : lhs - (size_t)(p - sub);
        if (!comma) break;
        p = comma + 1;
    }
    if (nt != t->n)
        return ir__op_err(call, diag, "subscripts \"%s\" name %u operands, got %u", sub, nt, t->n);
    /* unknown ranks: the output rank is unknown too */
    for (uint32_t i = 0; i < t->n; i++)
        if (t->fields[i]->ndim < 0 || !t->fields[i]->dims) return ir_sinfo_tensor(ctx, dt, -1, NULL);
    int labels[IR__MAX_DIMS], nell_max = 0, ne;
    for (uint32_t i = 0; i < t->n; i++) {
        if (parse_term(term[i], tlen[i], t->fields[i]->ndim, IR__MAX_DIMS, labels, &ne) < 0)
            return ir__op_err(call, diag, "bad subscripts \"%s\" for operand %u %s", sub, i,
                              ir__sinfo_str(t->fields[i]));
        if (ne > nell_max) nell_max = ne;
    }
    const ir_prim *size[EIN_LABELS] = {0};
    int count[EIN_LABELS] = {0};
    for (uint32_t i = 0; i < t->n; i++) {
        const ir_sinfo *f = t->fields[i];
        int n = parse_term(term[i], tlen[i], f->ndim, nell_max, labels, &ne);
        if (n != f->ndim)
            return ir__op_err(call, diag, "term %u of \"%s\" does not match %s", i, sub, ir__sinfo_str(f));
        for (int k = 0; k < n; k++) {
            int l = labels[k];
            int64_t a, b;
            count[l]++;
            bool e_one = ir_prim_is_int(f->dims[k], &b) && b == 1;
            if (!size[l] || (l >= 52 && ir_prim_is_int(size[l], &a) && a == 1)) {
                size[l] = f->dims[k];
            } else if (ir_prim_is_int(size[l], &a) && ir_prim_is_int(f->dims[k], &b) && a != b &&
                       !(l >= 52 && e_one)) {
                return ir__op_err(call, diag, "label sizes %lld and %lld differ in \"%s\"",
                                  (long long)a, (long long)b, sub);
            }
        }
    }
    int olab[IR__MAX_DIMS], on = 0;
    if (arrow) {
        on = parse_term(arrow + 2, strlen(arrow + 2), -1, nell_max, olab, &ne);
        if (on < 0) return ir__op_err(call, diag, "bad output subscripts in \"%s\"", sub);
        for (int k = 0; k < on; k++)
            if (!size[olab[k]])
                return ir__op_err(call, diag, "output label not in any input in \"%s\"", sub);
    } else {
        for (int l = 52; l < 52 + nell_max; l++)
            if (size[l]) olab[on++] = l;
        for (int a = 0; a < 52; a++) { /* ASCII order: uppercase first, as numpy */
            int l = a < 26 ? 26 + a : a - 26;
            if (count[l] == 1 && on < IR__MAX_DIMS) olab[on++] = l;
        }
    }
    const ir_prim *dims[IR__MAX_DIMS];
    for (int k = 0; k < on; k++) dims[k] = size[olab[k]];
    return ir_sinfo_tensor(ctx, dt, on, dims);
}

IR__INFER(ir__infer_reverse_sequence) {
    const ir_sinfo *x = ir__arg_tensor(ctx, call, 0, false, diag);
    const ir_sinfo *l = x ? ir__arg_tensor(ctx, call, 1, false, diag) : NULL;
    if (!l) return NULL;
    if (!ir_dtype_is_void(l->dtype) && !ir_dtype_is_int(l->dtype))
        return ir__op_err(call, diag, "seq_lens must be an integer tensor, got %s", ir__sinfo_str(l));
    if (l->ndim >= 0 && l->ndim != 1)
        return ir__op_err(call, diag, "seq_lens must be 1-D, got %s", ir__sinfo_str(l));
    int64_t ba = ir__attr_int(call, "batch_axis", 1), ta = ir__attr_int(call, "time_axis", 0);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
        return ir__op_err(call, diag, "batch_axis and time_axis must be 0 and 1 in some order");
    if (x->ndim >= 0 && x->ndim < 2)
        return ir__op_err(call, diag, "x must have rank 2 or more, got %s", ir__sinfo_str(x));
    return x;
}
