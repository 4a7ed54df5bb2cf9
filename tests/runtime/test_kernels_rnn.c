/* Recurrent reference kernels on hand-computed cases: ONNX activations other than the defaults
 * (Relu, HardSigmoid with its alpha / beta), sequence_lens in both directions (Y zero past a
 * sequence's end, Y_h the state after its last step), and reverse_sequence. The ONNX backend
 * tests cover the default activations, peepholes, bidirectional and batch-major layers. */
#include "tests/runtime/kernels_test_util.h"

TestSuite(kernels_rnn, .init = kt_setup, .fini = kt_teardown);

static ir_attr strs(const char *s) { return ir_attr_str(kt_ctx, s); }

static ir_attr flts(int n, const double *v) {
    ir_attr it[6];
    for (int i = 0; i < n; i++) it[i] = ir_attr_float(v[i]);
    return ir_attr_array(kt_ctx, (uint32_t)n, it);
}

Test(kernels_rnn, relu_rnn_and_sequence_lens) {
    /* h_t = relu(x_t * 1 + h_{t-1} * 0): each step's output is relu(x_t) */
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(3, 2, 1), KVALS(1, -1, 2, 5, -3, 7));
    rt_tensor *w = kt_tensor(KT_F32, KSHAPE(1, 1, 1), KVALS(1)), *r = kt_tensor(KT_F32, KSHAPE(1, 1, 1), KVALS(0));
    rt_tensor *b = kt_tensor(KT_F32, KSHAPE(1, 2), KVALS(0, 0)), *lens = kt_tensor(KT_I32, KSHAPE(2), KVALS(3, 2));
    for (int rev = 0; rev < 2; rev++) {
        rt_value o;
        kt_ok("relax.nn.rnn", 3,
              KV({"hidden_size", ir_attr_int(1)}, {"direction", ir_attr_str(kt_ctx, rev ? "reverse" : "forward")},
                 {"activations", strs("Relu")}),
              KARGS(kt_val(x), kt_val(w), kt_val(r), kt_val(b), kt_val(lens)), 5, &o);
        cr_assert_eq(o.kind, RT_VAL_TUPLE);
        /* Y (T, 1, N, 1): batch 1 stops after 2 steps (its t = 2 is 0) */
        kt_assert_close(o.u.tuple.items[0].u.t, KVALS(1, 0, 2, 5, 0, 0), 6, 0, 0);
        /* Y_h: forward the last step of each (t = 2, t = 1), reverse t = 0 */
        if (rev) kt_assert_close(o.u.tuple.items[1].u.t, KVALS(1, 0), 2, 0, 0);
        else kt_assert_close(o.u.tuple.items[1].u.t, KVALS(0, 5), 2, 0, 0);
        rt_value_clear(&o);
    }
    rt_tensor_release(x), rt_tensor_release(w), rt_tensor_release(r), rt_tensor_release(b), rt_tensor_release(lens);
}

Test(kernels_rnn, lstm_hard_sigmoid_gates) {
    /* one step, one unit, gates (i, o, f, c) with input weights 1, 2, 3, 4 and x = 1:
     * i = hs(1) = 0.7, o = hs(2) = 0.9, f = hs(3) = 1, c = 0.7 * tanh(4), h = 0.9 * tanh(c) */
    static const double alpha[3] = {0.2, 0, 0}, beta[3] = {0.5, 0, 0};
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(1, 1, 1), KVALS(1));
    rt_tensor *w = kt_tensor(KT_F32, KSHAPE(1, 4, 1), KVALS(1, 2, 3, 4)), *r = kt_tensor(KT_F32, KSHAPE(1, 4, 1), KVALS(0, 0, 0, 0));
    rt_value o;
    kt_ok("relax.nn.lstm", 4,
          KV({"hidden_size", ir_attr_int(1)}, {"activations", strs("HardSigmoid,Tanh,Tanh")}, {"activation_alpha", flts(3, alpha)},
             {"activation_beta", flts(3, beta)}),
          KARGS(kt_val(x), kt_val(w), kt_val(r)), 3, &o);
    double c = 0.7 * tanh(4.0), h = 0.9 * tanh(c);
    kt_assert_close(o.u.tuple.items[1].u.t, KVALS(h), 1, 1e-6, 1e-6);
    kt_assert_close(o.u.tuple.items[2].u.t, KVALS(c), 1, 1e-6, 1e-6);
    rt_value_clear(&o);
    /* an unknown activation is refused */
    gr_diag d;
    cr_assert_neq(kt_run("relax.nn.lstm", 2, KV({"hidden_size", ir_attr_int(1)}, {"activations", strs("Swish,Tanh,Tanh")}),
                         KARGS(kt_val(x), kt_val(w), kt_val(r)), 3, &o, &d),
                  GR_OK);
    rt_tensor_release(x), rt_tensor_release(w), rt_tensor_release(r);
}

Test(kernels_rnn, reverse_sequence_batch_major) {
    /* batch_axis 0: row b reverses its first lens[b] steps */
    rt_tensor *x = kt_tensor(KT_F32, KSHAPE(2, 3), KVALS(1, 2, 3, 4, 5, 6));
    rt_tensor *lens = kt_tensor(KT_I64, KSHAPE(2), KVALS(2, 3));
    rt_value o;
    rt_tensor *y = kt_ok("relax.reverse_sequence", 2, KV({"batch_axis", ir_attr_int(0)}, {"time_axis", ir_attr_int(1)}),
                         KARGS(kt_val(x), kt_val(lens)), 2, &o);
    kt_assert_vals(y, 6, KVALS(2, 1, 3, 6, 5, 4));
    rt_value_clear(&o);
    rt_tensor_release(x), rt_tensor_release(lens);
}
