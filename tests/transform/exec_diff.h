/* Two modules' main run on the same random inputs by the reference executor: the largest
 * difference of their outputs (a tensor or a tuple of them; NaN counts as infinitely off). */
#ifndef GRAFT_TESTS_TRANSFORM_EXEC_DIFF_H
#define GRAFT_TESTS_TRANSFORM_EXEC_DIFF_H

#include <criterion/criterion.h>
#include <math.h>

#include "base/tensor.h"
#include "ir/text/printer.h"
#include "runtime/exec/executor.h"
#include "runtime/value.h"

/* A tensor of sinfo s (static shape) filled by draw. */
static inline rt_tensor *ed_random_tensor(const ir_sinfo *s, double (*draw)(void)) {
    int64_t shape[8];
    cr_assert(s->ndim <= 8 && ir_sinfo_static_shape(s, shape));
    rt_tensor *t = rt_tensor_new(s->dtype, s->ndim, shape);
    for (int64_t k = 0; k < rt_tensor_numel(t); k++) rt_tensor_set_f64(t, k, draw());
    return t;
}

static inline double ed_max_diff(const ir_module *a, const ir_module *b, double (*draw)(void), gr_diag *diag) {
    rt_exec_t *xa = NULL, *xb = NULL;
    cr_assert_eq(rt_exec_new(a, "main", &xa, diag), GR_OK, "%s", diag->msg);
    cr_assert_eq(rt_exec_new(b, "main", &xb, diag), GR_OK, "%s", diag->msg);
    uint32_t n = rt_exec_num_inputs(xa);
    rt_value in[4];
    cr_assert_leq(n, 4);
    for (uint32_t i = 0; i < n; i++) in[i] = rt_value_tensor(ed_random_tensor(rt_exec_input_sinfo(xa, i), draw));
    rt_value ra = {0}, rb = {0};
    cr_assert_eq(rt_exec_run(xa, in, n, &ra, diag), GR_OK, "%s\n%s", diag->msg, ir_print_module_str(a, NULL));
    cr_assert_eq(rt_exec_run(xb, in, n, &rb, diag), GR_OK, "%s\n%s", diag->msg, ir_print_module_str(b, NULL));
    const rt_value *va = ra.kind == RT_VAL_TUPLE ? ra.u.tuple.items : &ra, *vb = rb.kind == RT_VAL_TUPLE ? rb.u.tuple.items : &rb;
    uint32_t nv = ra.kind == RT_VAL_TUPLE ? ra.u.tuple.n : 1;
    cr_assert_eq(nv, rb.kind == RT_VAL_TUPLE ? rb.u.tuple.n : 1);
    double worst = 0;
    for (uint32_t v = 0; v < nv; v++) {
        cr_assert(rt_tensor_same_shape(va[v].u.t, vb[v].u.t));
        for (int64_t k = 0; k < rt_tensor_numel(va[v].u.t); k++) {
            double d = fabs(rt_tensor_get_f64(va[v].u.t, k) - rt_tensor_get_f64(vb[v].u.t, k));
            if (d != d) d = INFINITY;
            if (d > worst) worst = d;
        }
    }
    rt_value_clear(&ra);
    rt_value_clear(&rb);
    for (uint32_t i = 0; i < n; i++) rt_value_clear(&in[i]);
    rt_exec_free(xa);
    rt_exec_free(xb);
    return worst;
}

#endif
