/* Sequence and optional graph inputs / outputs (onnx_import_opts.seqs) and the SequenceProto /
 * OptionalProto reader, on the ONNX backend test data. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "frontend/onnx/onnx_import.h"
#include "runtime/exec/executor.h"

#define NODE "/usr/share/libonnx-testdata/data/node/"

Test(onnx_seq, a_sequence_input_without_its_length_is_refused_with_the_reason) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = onnx_import_file(ctx, NODE "test_sequence_insert_at_back/model.onnx", NULL, &m, &d);
    cr_assert_eq(st, GR_ERR_UNSUPPORTED);
    cr_assert(strstr(d.msg, "graph input 'sequence' is a sequence: its length must be given"), "%s", d.msg);
    ir_ctx_free(ctx);
}

Test(onnx_seq, io_kinds_and_sequence_data_are_read) {
    onnx_io_kind in[8], out[8];
    uint32_t nin = 0, nout = 0;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_model_io_kinds(NODE "test_sequence_insert_at_back/model.onnx", in, &nin, out, &nout, 8, &d), GR_OK);
    cr_assert_eq(nin, 2);
    cr_assert_eq(in[0], ONNX_IO_SEQUENCE);
    cr_assert_eq(in[1], ONNX_IO_TENSOR);
    cr_assert_eq(nout, 1);
    cr_assert_eq(out[0], ONNX_IO_SEQUENCE);
    rt_value v;
    char *name = NULL;
    cr_assert_eq(onnx_value_load_pb(NODE "test_sequence_insert_at_back/test_data_set_0/input_0.pb", ONNX_IO_SEQUENCE,
                                    &v, &name, &d), GR_OK, "%s", d.msg);
    cr_assert_str_eq(name, "sequence");
    cr_assert_eq(v.kind, RT_VAL_TUPLE);
    cr_assert_eq(v.u.tuple.n, 3);
    cr_assert_eq(v.u.tuple.items[1].u.t->dl.shape[0], 3);
    free(name);
    rt_value_clear(&v);
    /* an empty optional */
    cr_assert_eq(onnx_value_load_pb(NODE "test_optional_has_element_empty/test_data_set_0/input_0.pb",
                                    ONNX_IO_OPTIONAL, &v, NULL, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(v.kind, RT_VAL_TUPLE);
    cr_assert_eq(v.u.tuple.n, 0);
    rt_value_clear(&v);
}

Test(onnx_seq, corrupt_sequence_data_is_an_error_not_a_crash) {
    char path[] = "/tmp/graft_seq_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    /* field 3 (a TensorProto) claiming 100 bytes, 2 given; then a tag with wire type 7 */
    const unsigned char bad[][6] = {{0x1a, 100, 1, 2}, {0x0f, 1, 2, 3}, {0x1a, 2, 0xff, 0xff}};
    gr_diag d;
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        cr_assert_eq(ftruncate(fd, 0), 0);
        cr_assert_eq(pwrite(fd, bad[k], 4, 0), 4);
        rt_value v;
        gr_diag_clear(&d);
        gr_status st = onnx_value_load_pb(path, ONNX_IO_SEQUENCE, &v, NULL, &d);
        cr_assert_eq(st, GR_ERR_INVALID, "case %zu: %d %s", k, st, d.msg);
    }
    close(fd);
    unlink(path);
}

/* The sequence input specialized to the data set's lengths: imports, runs, and its sequence
 * output equals the SequenceProto of the data set. */
Test(onnx_seq, a_specialized_sequence_input_runs_and_its_output_is_a_tuple) {
    const char *dir = NODE "test_sequence_insert_at_back/";
    char path[512];
    gr_diag d;
    gr_diag_clear(&d);
    rt_value seq, tens, want;
    snprintf(path, sizeof(path), "%stest_data_set_0/input_0.pb", dir);
    cr_assert_eq(onnx_value_load_pb(path, ONNX_IO_SEQUENCE, &seq, NULL, &d), GR_OK);
    snprintf(path, sizeof(path), "%stest_data_set_0/input_1.pb", dir);
    cr_assert_eq(onnx_value_load_pb(path, ONNX_IO_TENSOR, &tens, NULL, &d), GR_OK);
    snprintf(path, sizeof(path), "%stest_data_set_0/output_0.pb", dir);
    cr_assert_eq(onnx_value_load_pb(path, ONNX_IO_SEQUENCE, &want, NULL, &d), GR_OK);
    onnx_input_shape shapes[3] = {{0}};
    for (uint32_t k = 0; k < 3; k++) {
        shapes[k].ndim = 1;
        shapes[k].dims[0] = seq.u.tuple.items[k].u.t->dl.shape[0];
    }
    onnx_input_seq q = {.name = "sequence", .n = 3, .inner = -1, .elems = shapes};
    onnx_import_opts o = {.seqs = &q, .nseqs = 1};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    snprintf(path, sizeof(path), "%smodel.onnx", dir);
    cr_assert_eq(onnx_import_file(ctx, path, &o, &m, &d), GR_OK, "%s", d.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(m, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value args[2] = {seq, tens}, res = {0};
    cr_assert_eq(rt_exec_run(x, args, 2, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TUPLE);
    cr_assert_eq(res.u.tuple.n, want.u.tuple.n);
    for (uint32_t k = 0; k < want.u.tuple.n; k++) {
        const rt_tensor *g = res.u.tuple.items[k].u.t, *w = want.u.tuple.items[k].u.t;
        cr_assert(rt_tensor_same_shape(g, w));
        for (int64_t i = 0; i < rt_tensor_numel(w); i++)
            cr_assert_eq(rt_tensor_get_f64(g, i), rt_tensor_get_f64(w, i));
    }
    /* an optional input holds 0 or 1 element */
    onnx_input_seq two = {.name = "opt_in", .n = 2, .inner = -1};
    onnx_import_opts o2 = {.seqs = &two, .nseqs = 1};
    ir_module *m2 = NULL;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_import_file(ctx, NODE "test_identity_opt/model.onnx", &o2, &m2, &d), GR_ERR_INVALID);
    cr_assert(strstr(d.msg, "holds 0 or 1 value"), "%s", d.msg);
    rt_value_clear(&res);
    rt_exec_free(x);
    rt_value_clear(&seq), rt_value_clear(&tens), rt_value_clear(&want);
    ir_ctx_free(ctx);
}
