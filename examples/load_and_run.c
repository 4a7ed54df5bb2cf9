/* Loads a .graft artifact (written by `graft build MODEL -o MODEL.graft`) and runs it once on
 * inputs filled with a constant, printing the first values of each output.
 *
 *   make BUILD=build build/examples/load_and_run
 *   build/examples/load_and_run MODEL.graft */
#include <stdio.h>

#include "deploy/graft_model.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.graft\n", argv[0]);
        return 2;
    }
    gr_diag d;
    gr_diag_clear(&d);
    graft_model *gm = NULL;
    if (graft_model_load(argv[1], &gm, &d) != GR_OK) {
        gr_diag_print(&d);
        return 1;
    }
    uint32_t n = graft_model_num_inputs(gm);
    rt_value in[16] = {0}, out = {0};
    int rc = 1;
    if (n > 16) goto done;
    for (uint32_t i = 0; i < n; i++) {
        const ir_sinfo *s = graft_model_input_sinfo(gm, i);
        int64_t shape[RT_MAX_NDIM];
        if (!s || s->kind != IR_SINFO_TENSOR || !ir_sinfo_static_shape(s, shape)) {
            fprintf(stderr, "input '%s' has no static shape\n", graft_model_input_name(gm, i));
            goto done;
        }
        rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
        for (int64_t k = 0; k < rt_tensor_numel(t); k++) rt_tensor_set_f64(t, k, 0.5);
        in[i] = rt_value_tensor(t);
    }
    if (graft_model_run(gm, in, n, &out, &d) != GR_OK) {
        gr_diag_print(&d);
        goto done;
    }
    uint32_t nout = out.kind == RT_VAL_TUPLE ? out.u.tuple.n : 1;
    for (uint32_t o = 0; o < nout; o++) {
        const rt_value *v = out.kind == RT_VAL_TUPLE ? &out.u.tuple.items[o] : &out;
        if (v->kind != RT_VAL_TENSOR) continue;
        printf("output %u:", o);
        for (int64_t k = 0; k < rt_tensor_numel(v->u.t) && k < 8; k++)
            printf(" %g", rt_tensor_get_f64(v->u.t, k));
        printf("%s\n", rt_tensor_numel(v->u.t) > 8 ? " ..." : "");
    }
    rc = 0;
done:
    rt_value_clear(&out);
    for (uint32_t i = 0; i < n && i < 16; i++) rt_value_clear(&in[i]);
    graft_model_free(gm);
    return rc;
}
