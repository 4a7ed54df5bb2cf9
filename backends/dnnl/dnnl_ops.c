/* The oneDNN engine's op table: a node goes to its handler by op id (backends/dnnl/dnnl_op_table.h's
 * handler column); the handlers are in dnnl_op_*.c, the recurrent ones in dnnl_rnn.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/dnnl/dnnl_ops_impl.h"

/* ---------------------------------------------------------------- table ---- */

typedef gr_status (*op_fn)(dn_state *S, const rt_json_node *n, const dn_comp *comp);

/* the handlers of the other files */
static gr_status op_rnn(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    (void)comp;
    return dn_rnn(S, n);
}

/* backends/dnnl/dnnl_op_table.h's handlers by op id (NULL: not a oneDNN op) */
static const op_fn HANDLER[IR_OP_COUNT] = {
#define X(op, kind, check, handler, alg, alpha, beta) [IR_OP_##op] = handler,
    DNNL_OPS(X)
#undef X
};

gr_status dn_node(dn_state *S, const rt_json_node *n, const dn_comp *comp) {
    op_fn fn = n->op >= 0 && n->op < IR_OP_COUNT ? HANDLER[n->op] : NULL;
    if (!fn) return dn_fail(S, n, dnnl_success, "not an op of the oneDNN backend");
    if (!comp && (n->op == IR_OP_ADD || n->op == IR_OP_MAX_POOL2D || n->op == IR_OP_ADAPTIVE_AVG_POOL2D)) {
        /* an add / pooling of dequantized levels that a quantize reads: int8 (dnnl_op_quant.c) */
        int used;
        bool done;
        gr_status st = dn_q_levels_op(S, n, NULL, 0, &used, &done);
        if (st) return st;
        /* done: the float op too, which only a tapped run computes (nothing reads it: pruned,
         * dnnl_engine.c), so graft diff observes n's float result */
    }
    /* weights kept as their levels: the ops dequantizing them build nothing; an op reading
     * one gets the float32 weight, made now and let go when it keeps a copy */
    if ((!comp || !comp->k) && dn_q_weight_node(S, n)) return GR_OK;
    int made[DN_FN_MAX_ARGS + 1], nmade = 0;
    for (uint32_t a = 0; a <= dn_nargs(n) && nmade <= DN_FN_MAX_ARGS; a++) {
        int e = a < dn_nargs(n) ? dn_arg_entry(S, n, a) : comp ? comp->b : -1;
        if (e >= 0 && S->ent_val[e] < 0 && dn_q_weight_levels(S, e) >= 0) {
            if (dn_q_weight_val(S, e) < 0) return gr_diag_set(S->diag, GR_ERR_NOMEM, "dnnl: out of memory");
            made[nmade++] = e;
        }
    }
    gr_status st = fn(S, n, comp);
    for (int i = 0; i < nmade; i++) dn_q_weight_done(S, made[i]);
    return st;
}
