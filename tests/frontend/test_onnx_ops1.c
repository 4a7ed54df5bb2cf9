/* ONNX ops of issue 17 that the ONNX 1.12 backend data does not cover: the opset-18 bitwise
 * ops, Mod's two remainders on integers, BitShift right, imported and run against
 * hand-computed values; refusals that name the node (Mod fmod=0 on floats, the ops that stay
 * out on purpose). */
#include <criterion/criterion.h>
#include <string.h>

#include "base/tensor.h"
#include "runtime/exec/executor.h"
#include "tests/frontend/onnx_test_util.h"

#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

static void attr_str(tm *t, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = tm_attr(t, n, name);
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)tm_str(t, v);
}

static rt_tensor *i64_vec(int64_t n, const int64_t *v) {
    rt_tensor *t = rt_tensor_new((DLDataType){kDLInt, 64, 1}, 1, &n);
    memcpy(rt_tensor_data(t), v, sizeof(int64_t) * (size_t)n);
    return t;
}

Test(onnx_ops1, bitwise_mod_shift_on_integers) {
    static const char *const d4[] = {"4"};
    tm *t = tm_new(18);
    tm_input(t, "a", I64, 1, d4);
    tm_input(t, "b", I64, 1, d4);
    tm_input(t, "c", I64, 1, d4);
    tm_input(t, "s", I64, 1, d4);
    tm_node(t, "BitwiseAnd", "and", "a,b", "y_and");
    tm_node(t, "BitwiseOr", "or", "a,b", "y_or");
    tm_node(t, "BitwiseXor", "xor", "a,b", "y_xor");
    tm_node(t, "BitwiseNot", "not", "a", "y_not");
    tm_node(t, "Mod", "floor_mod", "a,b", "y_mod");
    tm_attr_int(t, tm_node(t, "Mod", "c_mod", "a,b", "y_fmod"), "fmod", 1);
    attr_str(t, tm_node(t, "BitShift", "shr", "c,s", "y_shr"), "direction", "RIGHT");
    const char *outs[] = {"y_and", "y_or", "y_xor", "y_not", "y_mod", "y_fmod", "y_shr"};
    for (int i = 0; i < 7; i++) tm_output(t, outs[i]);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_assert(t_layer_seen(m, "and", true) && t_layer_seen(m, "shr", true), "layers as spans");
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value in[4] = {rt_value_tensor(i64_vec(4, (int64_t[]){12, -7, 7, 255})),
                      rt_value_tensor(i64_vec(4, (int64_t[]){10, 3, -3, 4})),
                      rt_value_tensor(i64_vec(4, (int64_t[]){12, 7, 255, 1})),
                      rt_value_tensor(i64_vec(4, (int64_t[]){1, 2, 4, 0}))};
    rt_value out = {0};
    cr_assert_eq(rt_exec_run(x, in, 4, &out, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(out.kind, RT_VAL_TUPLE);
    cr_assert_eq(out.u.tuple.n, 7);
    static const int64_t want[7][4] = {
        {12 & 10, -7 & 3, 7 & -3, 255 & 4}, {12 | 10, -7 | 3, 7 | -3, 255 | 4},
        {12 ^ 10, -7 ^ 3, 7 ^ -3, 255 ^ 4}, {~12, ~-7, ~7, ~255},
        {2, 2, -2, 3},   /* floor: the remainder takes the divisor's sign */
        {2, -1, 1, 3},   /* C fmod: the dividend's */
        {6, 1, 15, 1}};
    for (int k = 0; k < 7; k++) {
        const rt_tensor *o = out.u.tuple.items[k].u.t;
        for (int i = 0; i < 4; i++)
            cr_expect_eq(((const int64_t *)rt_tensor_data((rt_tensor *)o))[i], want[k][i], "%s[%d] = %lld, want %lld",
                         outs[k], i, (long long)((const int64_t *)rt_tensor_data((rt_tensor *)o))[i], (long long)want[k][i]);
    }
    rt_value_clear(&out);
    for (int i = 0; i < 4; i++) rt_value_clear(&in[i]);
    rt_exec_free(x);
    ir_ctx_free(ctx);
    tm_free(t);
}

Test(onnx_ops1, refusals_name_the_node_and_the_reason) {
    static const char *const d2[] = {"2"};
    tm *t = tm_new(13);
    tm_input(t, "a", F32, 1, d2);
    tm_node(t, "Mod", "float_mod", "a,a", "y");
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "'float_mod' (Mod, opset 13)") && strstr(d.msg, "fmod=0"), "%s", d.msg);
    tm_free(t);
    t = tm_new(15);
    tm_input(t, "a", F32, 1, d2);
    tm_node(t, "Bernoulli", "coin", "a", "y");
    tm_output(t, "y");
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_UNSUPPORTED);
    cr_expect(strstr(d.msg, "'coin' (Bernoulli, opset 15): random number generation is not supported"), "%s", d.msg);
    cr_expect_str_eq(d.op, "Bernoulli");
    tm_free(t);
    ir_ctx_free(ctx);
}
