/* The text printer's leaves: symbolic prims, struct info (cached per pointer), attributes,
 * constants and the metadata section. */
#include "ir/text/print_impl.h"

/* ---- prims, struct info ---- */

void pp_prim_to(pr *p, ir_sbuf *b, const ir_prim *x, bool quoted) {
    int64_t v;
    if (ir_prim_is_int(x, &v)) {
        ir_sbuf_int(b, v);
        return;
    }
    p->uses_t = true;
    char tmp[256];
    int n = ir_prim_snprint(x, tmp, sizeof(tmp));
    if (quoted) ir_sbuf_putc(b, '"');
    if (n < (int)sizeof(tmp)) {
        ir_sbuf_putn(b, tmp, (size_t)n);
    } else {
        char *big = gr_xmalloc((size_t)n + 1);
        ir_prim_snprint(x, big, (size_t)n + 1);
        ir_sbuf_putn(b, big, (size_t)n);
        free(big);
    }
    if (quoted) ir_sbuf_putc(b, '"');
}

const char *pp_dtype_str(ir_dtype t) {
    const char *n = ir_dtype_name(t);
    return n ? n : "void";
}

static void sinfo_to(pr *p, ir_sbuf *b, const ir_sinfo *s, bool q) {
    if (!s) {
        ir_sbuf_puts(b, "R.Object");
        return;
    }
    switch ((ir_sinfo_kind)s->kind) {
    case IR_SINFO_OBJECT: ir_sbuf_puts(b, "R.Object"); return;
    case IR_SINFO_PRIM:
        if (s->value && !ir_dtype_eq(s->dtype, IR_DTYPE_I64)) {
            ir_sbuf_puts(b, "R.Prim(\"");
            ir_sbuf_puts(b, pp_dtype_str(s->dtype));
            ir_sbuf_puts(b, "\", value=");
            pp_prim_to(p, b, s->value, q);
            ir_sbuf_putc(b, ')');
        } else if (s->value) {
            ir_sbuf_puts(b, "R.Prim(value=");
            pp_prim_to(p, b, s->value, q);
            ir_sbuf_putc(b, ')');
        } else {
            ir_sbuf_puts(b, "R.Prim(\"");
            ir_sbuf_puts(b, pp_dtype_str(s->dtype));
            ir_sbuf_puts(b, "\")");
        }
        return;
    case IR_SINFO_SHAPE:
        if ((s->dims || s->ndim == 0) && s->ndim >= 0) {
            ir_sbuf_puts(b, "R.Shape([");
            for (int32_t i = 0; i < s->ndim; i++) {
                if (i) ir_sbuf_puts(b, ", ");
                pp_prim_to(p, b, s->dims[i], q);
            }
            ir_sbuf_puts(b, "])");
        } else if (s->ndim >= 0) {
            ir_sbuf_printf(b, "R.Shape(ndim=%d)", s->ndim);
        } else {
            ir_sbuf_puts(b, "R.Shape");
        }
        return;
    case IR_SINFO_TENSOR: {
        bool dt = !ir_dtype_is_void(s->dtype);
        if ((s->dims || s->ndim == 0) && s->ndim >= 0) {
            ir_sbuf_puts(b, "R.Tensor((");
            for (int32_t i = 0; i < s->ndim; i++) {
                if (i) ir_sbuf_puts(b, ", ");
                pp_prim_to(p, b, s->dims[i], q);
            }
            if (s->ndim == 1) ir_sbuf_putc(b, ',');
            ir_sbuf_putc(b, ')');
            if (dt) {
                ir_sbuf_puts(b, ", dtype=\"");
                ir_sbuf_puts(b, pp_dtype_str(s->dtype));
                ir_sbuf_putc(b, '"');
            }
            ir_sbuf_putc(b, ')');
        } else if (s->ndim >= 0 || dt) {
            ir_sbuf_puts(b, "R.Tensor(");
            if (s->ndim >= 0) ir_sbuf_printf(b, "ndim=%d", s->ndim);
            if (dt) {
                ir_sbuf_puts(b, s->ndim >= 0 ? ", dtype=\"" : "dtype=\"");
                ir_sbuf_puts(b, pp_dtype_str(s->dtype));
                ir_sbuf_putc(b, '"');
            }
            ir_sbuf_putc(b, ')');
        } else {
            ir_sbuf_puts(b, "R.Tensor");
        }
        return;
    }
    case IR_SINFO_TUPLE:
        if (s->n == 0) {
            ir_sbuf_puts(b, "R.Tuple");
            return;
        }
        ir_sbuf_puts(b, "R.Tuple(");
        for (uint32_t i = 0; i < s->n; i++) {
            if (i) ir_sbuf_puts(b, ", ");
            sinfo_to(p, b, s->fields[i], q);
        }
        ir_sbuf_putc(b, ')');
        return;
    case IR_SINFO_FUNC:
        if (s->opaque) {
            if (!s->ret || s->ret->kind == IR_SINFO_OBJECT) {
                ir_sbuf_puts(b, "R.Callable");
                return;
            }
            ir_sbuf_puts(b, "R.Callable(ret=");
            sinfo_to(p, b, s->ret, q);
            ir_sbuf_putc(b, ')');
            return;
        }
        ir_sbuf_puts(b, "R.Callable((");
        for (uint32_t i = 0; i < s->n; i++) {
            if (i) ir_sbuf_puts(b, ", ");
            sinfo_to(p, b, s->fields[i], q);
        }
        if (s->n == 1) ir_sbuf_putc(b, ',');
        ir_sbuf_puts(b, "), ");
        sinfo_to(p, b, s->ret, q);
        ir_sbuf_puts(b, ", True)"); /* TVM writes the purity; graft's typed callables are pure */
        return;
    }
}

void pp_sinfo(pr *p, const ir_sinfo *s, bool quoted) {
    uint64_t key = GR_MAP_PTR(s) | (quoted ? 1u : 0u), got;
    if (s && gr_map_get(&p->sinfo_cache, key, &got)) {
        got -= 1;
        ir_sbuf_putn(&p->out, p->cache.data + (got >> 24), (size_t)(got & 0xffffff));
        return;
    }
    size_t start = p->cache.len;
    sinfo_to(p, &p->cache, s, quoted);
    size_t len = p->cache.len - start;
    ir_sbuf_putn(&p->out, p->cache.data + start, len);
    if (s && len < 0xffffff) gr_map_put(&p->sinfo_cache, key, ((uint64_t)start << 24 | len) + 1);
}

/* ---- attrs ---- */

void pp_attr(pr *p, const ir_attr *a) {
    switch ((ir_attr_kind)a->kind) {
    case IR_ATTR_NONE: ir_sbuf_puts(&p->out, "None"); break;
    case IR_ATTR_BOOL: ir_sbuf_puts(&p->out, a->u.b ? "True" : "False"); break;
    case IR_ATTR_INT: ir_sbuf_int(&p->out, a->u.i); break;
    case IR_ATTR_FLOAT: ir_sbuf_double(&p->out, a->u.f); break;
    case IR_ATTR_STR: ir_sbuf_quoted(&p->out, a->u.s ? a->u.s : ""); break;
    case IR_ATTR_DTYPE:
        /* an unset dtype is None, as TVM 0.27 writes and reads it ("void" is ill-formed there) */
        if (ir_dtype_is_void(a->u.dtype)) ir_sbuf_puts(&p->out, "None");
        else ir_sbuf_quoted(&p->out, pp_dtype_str(a->u.dtype));
        break;
    case IR_ATTR_ARRAY:
        ir_sbuf_putc(&p->out, '[');
        for (uint32_t i = 0; i < a->u.arr.n; i++) {
            if (i) ir_sbuf_puts(&p->out, ", ");
            pp_attr(p, &a->u.arr.items[i]);
        }
        ir_sbuf_putc(&p->out, ']');
        break;
    case IR_ATTR_MAP:
        ir_sbuf_putc(&p->out, '{');
        for (uint32_t i = 0; i < a->u.arr.n; i++) {
            if (i) ir_sbuf_puts(&p->out, ", ");
            pp_attr(p, &a->u.arr.items[2 * i]);
            ir_sbuf_puts(&p->out, ": ");
            pp_attr(p, &a->u.arr.items[2 * i + 1]);
        }
        ir_sbuf_putc(&p->out, '}');
        break;
    case IR_ATTR_EXPR:
        if (a->u.expr) pp_expr(p, a->u.expr, false);
        else ir_sbuf_puts(&p->out, "None");
        break;
    case IR_ATTR_PRIM: pp_prim_to(p, &p->out, a->u.prim, false); break;
    case IR_ATTR_OBJ: {
        /* Runtime objects have no text form: a placeholder string (does not parse back). */
        const char *t = a->u.obj && a->u.obj->type ? a->u.obj->type : "object";
        ir_sbuf_puts(&p->out, "\"<");
        ir_sbuf_puts(&p->out, t);
        ir_sbuf_puts(&p->out, ">\"");
        break;
    }
    }
}

static int cmp_key_idx(const void *x, const void *y, void *keys) {
    const char *const *k = keys;
    return strcmp(k[*(const uint32_t *)x], k[*(const uint32_t *)y]);
}

/* Indices of attrs sorted by key (insertion sort: attr lists are short). */
uint32_t *pp_sorted_attr_order(const ir_attrs *a) {
    uint32_t *idx = gr_xmalloc(sizeof(uint32_t) * (a->n ? a->n : 1));
    for (uint32_t i = 0; i < a->n; i++) {
        uint32_t j = i;
        while (j > 0 && cmp_key_idx(&idx[j - 1], &i, (void *)a->keys) > 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return idx;
}

/* ---- constants ---- */

static bool scalar_printable(const ir_const *c) {
    const rt_tensor *t = c->data;
    if (!t || t->dl.ndim != 0) return false;
    ir_dtype d = t->dl.dtype;
    if (d.lanes != 1) return false;
    if (d.code == kDLFloat) return d.bits == 32 || d.bits == 64;
    if (d.code == kDLInt) return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64;
    if (d.code == kDLUInt) return d.bits == 1 || d.bits == 8 || d.bits == 16 || d.bits == 32;
    return false;
}

void pp_const(pr *p, const ir_const *c) {
    if ((!p->spans || !c->base.span) && scalar_printable(c)) {
        const rt_tensor *t = c->data;
        ir_dtype d = t->dl.dtype;
        ir_sbuf_puts(&p->out, "R.const(");
        if (d.code == kDLFloat) {
            ir_sbuf_double(&p->out, rt_tensor_get_f64(t, 0));
        } else if (d.code == kDLUInt && d.bits == 1) {
            ir_sbuf_puts(&p->out, *(const uint8_t *)rt_tensor_data(t) ? "True" : "False");
        } else if (d.code == kDLInt && d.bits == 64) {
            ir_sbuf_int(&p->out, *(const int64_t *)rt_tensor_data(t));
        } else {
            ir_sbuf_int(&p->out, (int64_t)rt_tensor_get_f64(t, 0));
        }
        ir_sbuf_puts(&p->out, ", \"");
        ir_sbuf_puts(&p->out, pp_dtype_str(d));
        ir_sbuf_puts(&p->out, "\")");
        return;
    }
    uint64_t idx;
    if (!gr_map_get(&p->const_idx, GR_MAP_PTR(c), &idx)) {
        gr_vec_push(&p->consts, c);
        idx = p->consts.len;
        gr_map_put(&p->const_idx, GR_MAP_PTR(c), idx);
    }
    ir_sbuf_puts(&p->out, "metadata[\"relax.expr.Constant\"][");
    ir_sbuf_int(&p->out, (int64_t)idx - 1);
    ir_sbuf_putc(&p->out, ']');
}

void pp_metadata(pr *p) {
    if (!p->consts.len) return;
    if (!p->meta) {
        ir_sbuf_puts(&p->out, "\n# Metadata omitted. Use show_meta=True in script() method to show it.\n");
        return;
    }
    ir_sbuf_puts(&p->out, "\n# Metadata\nmetadata = {\"relax.expr.Constant\": [\n");
    for (uint32_t i = 0; i < p->consts.len; i++) {
        const ir_const *c = p->consts.data[i];
        const rt_tensor *t = c->data;
        ir_sbuf_puts(&p->out, "    R.const_data(\"");
        ir_sbuf_puts(&p->out, pp_dtype_str(t->dl.dtype));
        ir_sbuf_puts(&p->out, "\", (");
        for (int32_t k = 0; k < t->dl.ndim; k++) {
            if (k) ir_sbuf_puts(&p->out, ", ");
            ir_sbuf_int(&p->out, t->dl.shape[k]);
        }
        if (t->dl.ndim == 1) ir_sbuf_putc(&p->out, ',');
        ir_sbuf_puts(&p->out, "),");
        size_t nbytes = rt_tensor_nbytes(t);
        size_t elen = ir_base64_enc_len(nbytes);
        char *enc = gr_xmalloc(elen + 1);
        ir_base64_encode(rt_tensor_data(t), nbytes, enc);
        enum { CHUNK = 96 };
        if (elen <= CHUNK) {
            ir_sbuf_puts(&p->out, " \"");
            ir_sbuf_putn(&p->out, enc, elen);
            ir_sbuf_putc(&p->out, '"');
        } else {
            for (size_t off = 0; off < elen; off += CHUNK) {
                size_t n = elen - off < CHUNK ? elen - off : CHUNK;
                ir_sbuf_puts(&p->out, "\n        \"");
                ir_sbuf_putn(&p->out, enc + off, n);
                ir_sbuf_putc(&p->out, '"');
            }
        }
        free(enc);
        if (p->spans && c->base.span) {
            ir_sbuf_puts(&p->out, ", span=");
            pp_span(p, c->base.span);
        }
        ir_sbuf_puts(&p->out, "),\n");
    }
    ir_sbuf_puts(&p->out, "]}\n");
}
