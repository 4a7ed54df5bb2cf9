/* Pad of zero widths imports as its input (torch writes one before DenseNet's transition
 * average pools), in every mode; a Pad of any nonzero width stays a relax.nn.pad. */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/frontend/onnx_test_util.h"

#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* The count of relax.nn.pad bindings of X -> Pad(pads) -> Relu in `mode`. */
static int pads_left(const int64_t *pads, const char *mode) {
    static const char *const dims[] = {"1", "2", "3", "3"};
    tm *t = tm_new(13);
    tm_input(t, "x", F32, 4, dims);
    tm_init(t, tm_tensor(t, "pads", I64, 1, (const int64_t[]){8}, 8, pads));
    Onnx__NodeProto *p = tm_node(t, "Pad", "pad", "x,pads", "p");
    Onnx__AttributeProto *a = tm_attr(t, p, "mode");
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.len = strlen(mode);
    a->s.data = (uint8_t *)tm_str(t, mode);
    tm_node(t, "Relu", "relu", "p", "y");
    tm_output(t, "y");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    cr_assert_eq(tm_import(t, ctx, NULL, &m, &d), GR_OK, "%s", d.msg);
    const ir_binding *bs[16];
    uint32_t n = t_bindings(m, bs, 16);
    int left = 0;
    for (uint32_t i = 0; i < n; i++) left += !strcmp(t_op_name(bs[i]->value), "relax.nn.pad");
    ir_ctx_free(ctx);
    tm_free(t);
    return left;
}

Test(onnx_pad, zero_widths_are_the_input) {
    static const int64_t zero[8] = {0}, one[8] = {0, 0, 0, 1, 0, 0, 0, 0};
    static const char *const modes[] = {"constant", "reflect", "edge"};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(pads_left(zero, modes[i]), 0, "%s: a zero pad kept", modes[i]);
        cr_expect_eq(pads_left(one, modes[i]), 1, "%s: a one-column pad dropped", modes[i]);
    }
}
