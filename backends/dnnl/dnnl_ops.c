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
    return fn(S, n, comp);
}
