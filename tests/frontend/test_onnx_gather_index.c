/* ONNX Gather of one constant index (ViT's class token x[:, 0]) imports as a slice of one and a
 * squeeze, which backends read as a view (take is a gather): the ops, the shape, the span, a
 * negative index counted from the end, and an index out of range refused naming the node. */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/frontend/onnx_test_util.h"

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

static tm *gather_model(int64_t index) {
    tm *t = tm_new(13);
    static const char *const xd[] = {"2", "5", "4"};
    tm_input(t, "x", F32, 3, xd);
    tm_init(t, tm_tensor(t, "i", I64, 0, NULL, 1, &index));
    Onnx__NodeProto *g = tm_node(t, "Gather", "cls", "x,i", "y");
    tm_attr_int(t, g, "axis", 1);
    tm_output(t, "y");
    return t;
}

Test(onnx_gather_index, scalar_constant_index_is_a_slice_and_a_squeeze) {
    for (int k = 0; k < 2; k++) {
        tm *t = gather_model(k ? -2 : 3);
        ir_ctx_t *ctx = ir_ctx_new();
        ir_module *m = NULL;
        gr_diag d;
        cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
        const ir_binding *bs[4];
        uint32_t n = t_bindings(m, bs, 4);
        cr_assert_geq(n, 2);
        cr_expect_str_eq(t_op_name(bs[0]->value), "relax.strided_slice");
        cr_expect_str_eq(t_op_name(bs[1]->value), "relax.squeeze");
        const ir_call *sl = (const ir_call *)bs[0]->value;
        /* begin: the index, counted from the end when negative (5 - 2 = 3) */
        const ir_tuple *beg = (const ir_tuple *)sl->args[2];
        int64_t b = -1;
        cr_assert_eq(beg->n, 1);
        cr_expect(ir_prim_is_int(((const ir_primval *)beg->fields[0])->value, &b) && b == 3, "begin %lld", (long long)b);
        int64_t s[2];
        cr_expect(ir_sinfo_static_shape(t_ret(m), s) && t_ret(m)->ndim == 2 && s[0] == 2 && s[1] == 4);
        cr_expect(t_layer_seen(m, "cls", true));
        ir_ctx_free(ctx);
        tm_free(t);
    }
}

Test(onnx_gather_index, index_out_of_range_names_the_node) {
    tm *t = gather_model(5);
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_expect_eq(tm_import(t, ctx, NULL, &m, &d), GR_ERR_INVALID);
    cr_expect(strstr(d.msg, "cls") && strstr(d.msg, "out of range"), "%s", d.msg);
    ir_ctx_free(ctx);
    tm_free(t);
}
