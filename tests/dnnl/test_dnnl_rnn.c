/* Recurrent layers on oneDNN (backends/dnnl/dnnl_rnn.c) against the reference kernels
 * (runtime/kernels/kernels_rnn.c): LSTM (peepholes, initial states, every direction), GRU with and
 * without linear_before_reset, vanilla RNN; every output (Y, Y_h, Y_c) compared with
 * dnnl_test_util.h's tolerance (1e-4 absolute + 1e-4 relative: T <= 9 steps of H <= 24 sums).
 * Then the two exported models of scripts/fetch_rnn_models.sh (an LSTM tagger and a GRU
 * recognizer head, random weights, PyTorch's exporter) with the dnnl backend: their recurrent
 * layers must land in dnnl regions and the result must match ONNX Runtime (1e-4 absolute +
 * 1e-3 relative, as tests/models). Skipped only when the model cache is absent. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"
#include "tests/dnnl/dnnl_test_util.h"

/* A float32 constant of zero elements: an optional input left out before a given one. */
static int empty_const(dt_graph *g) { return dt_const(g, 1, S1(0)); }

/* An RNN kernel node with its nout outputs (Y (T, D, N, H), Y_h and Y_c (D, N, H)), all heads. */
static void rnn_node(dt_graph *g, const char *op, const char *attrs, int nin, const int *ins, int nout, int64_t T, int64_t D,
                     int64_t N, int64_t H) {
    int64_t y[4] = {T, D, N, H}, s[3] = {D, N, H};
    int id = dt_op(g, op, attrs, nin, ins, NULL, 4, y, op);
    json_t *at = json_object_get(json_array_get(g->nodes, (size_t)id), "attrs");
    json_t *sh = json_object_get(at, "shape"), *dt = json_object_get(at, "dtype");
    for (int o = 1; o < nout; o++) {
        json_array_append_new(sh, dt_shape(3, s));
        json_array_append_new(dt, json_string("float32"));
    }
    /* one row per output */
    for (int o = 1; o < nout; o++) {
        g->nrows++;
        json_array_set_new(g->rows, json_array_size(g->rows) - 1, json_integer(g->nrows));
    }
    for (int o = 0; o < nout; o++) {
        json_t *e = json_array();
        json_array_append_new(e, json_integer(id));
        json_array_append_new(e, json_integer(o));
        json_array_append_new(e, json_integer(0));
        json_array_append_new(g->heads, e);
        g->out_nd[g->nheads] = o ? 3 : 4;
        memcpy(g->out_shapes[g->nheads], o ? s : y, sizeof(int64_t) * (o ? 3 : 4));
        g->nheads++;
    }
}

typedef struct rnn_case {
    const char *op, *dir;
    bool lbr, bias, h0, c0, peep;
    int64_t T, N, I, H;
} rnn_case;

static void check_case(const rnn_case *c, uint32_t seed) {
    dt_graph g;
    dt_init(&g, seed);
    bool lstm = !strcmp(c->op, "relax.nn.lstm");
    int64_t G = lstm ? 4 : !strcmp(c->op, "relax.nn.gru") ? 3 : 1, D = !strcmp(c->dir, "bidirectional") ? 2 : 1;
    int ins[8], n = 0;
    ins[n++] = dt_input(&g, 3, S3(c->T, c->N, c->I));
    ins[n++] = dt_const(&g, 3, S3(D, G * c->H, c->I));
    ins[n++] = dt_const(&g, 3, S3(D, G * c->H, c->H));
    int b = c->bias ? dt_const(&g, 2, S2(D, 2 * G * c->H)) : empty_const(&g);
    int h0 = c->h0 ? dt_input(&g, 3, S3(D, c->N, c->H)) : empty_const(&g);
    int c0 = c->c0 ? dt_input(&g, 3, S3(D, c->N, c->H)) : empty_const(&g);
    int p = c->peep ? dt_const(&g, 2, S2(D, 3 * c->H)) : empty_const(&g);
    ins[n++] = b;
    ins[n++] = empty_const(&g); /* sequence_lens */
    ins[n++] = h0;
    if (lstm) {
        ins[n++] = c0;
        ins[n++] = p;
    }
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             "{\"hidden_size\": %lld, \"direction\": \"%s\", \"layout\": 0, \"clip\": 0.0, \"input_forget\": false, "
             "\"linear_before_reset\": %s}",
             (long long)c->H, c->dir, c->lbr ? "true" : "false");
    rnn_node(&g, c->op, attrs, n, ins, lstm ? 3 : 2, c->T, D, c->N, c->H);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_eq(dt_stats(&g, &st, &d), GR_OK, "%s %s: %s", c->op, c->dir, d.msg);
    cr_expect_geq(st.nprims, 1);
    dt_check(&g);
    dt_free(&g);
}

Test(dnnl_rnn, lstm_every_direction) {
    static const char *dirs[] = {"forward", "reverse", "bidirectional"};
    for (int i = 0; i < 3; i++) {
        rnn_case full = {"relax.nn.lstm", dirs[i], false, true, true, true, true, 7, 3, 10, 16};
        check_case(&full, 11u + (uint32_t)i);
        rnn_case bare = {"relax.nn.lstm", dirs[i], false, false, false, false, false, 5, 2, 6, 8};
        check_case(&bare, 21u + (uint32_t)i);
    }
}

Test(dnnl_rnn, gru_linear_before_reset_and_not) {
    static const char *dirs[] = {"forward", "reverse", "bidirectional"};
    for (int i = 0; i < 3; i++)
        for (int lbr = 0; lbr < 2; lbr++) {
            rnn_case c = {"relax.nn.gru", dirs[i], lbr, true, i != 1, false, false, 9, 2, 12, 24};
            check_case(&c, 31u + (uint32_t)(2 * i + lbr));
        }
    rnn_case nobias = {"relax.nn.gru", "forward", true, false, false, false, false, 4, 1, 5, 7};
    check_case(&nobias, 41);
}

Test(dnnl_rnn, vanilla_rnn) {
    rnn_case a = {"relax.nn.rnn", "forward", false, true, true, false, false, 6, 3, 8, 12};
    check_case(&a, 51);
    rnn_case b = {"relax.nn.rnn", "bidirectional", false, false, false, false, false, 3, 2, 4, 5};
    check_case(&b, 52);
}

/* A layer the primitive does not compute is refused with a reason, not run wrong. */
Test(dnnl_rnn, refuses_clip) {
    dt_graph g;
    dt_init(&g, 61);
    int ins[3] = {dt_input(&g, 3, S3(2, 1, 3)), dt_const(&g, 3, S3(1, 4, 3)), dt_const(&g, 3, S3(1, 4, 4))};
    rnn_node(&g, "relax.nn.rnn", "{\"hidden_size\": 4, \"direction\": \"forward\", \"clip\": 1.5}", 3, ins, 2, 2, 1, 1, 4);
    rt_dnnl_stats st;
    gr_diag d = {0};
    cr_assert_neq(dt_stats(&g, &st, &d), GR_OK);
    cr_expect(strstr(d.msg, "clip"), "%s", d.msg);
    gr_diag_clear(&d);
    dt_free(&g);
}

/* ---- the exported models against ONNX Runtime ---- */

#define MODEL_ATOL 1e-4
#define MODEL_RTOL 1e-3

static int count_op(const ir_module *m, const char *op) {
    const ir_func *f = ir_module_func(m, "main");
    const ir_seq *s = f && f->body->kind == IR_SEQ ? IR_AS(f->body, ir_seq) : NULL;
    int k = 0;
    for (uint32_t b = 0; s && b < s->nblocks; b++)
        for (uint32_t i = 0; i < s->blocks[b]->n; i++) k += ir_is_op_call(s->blocks[b]->bindings[i].value, op);
    return k;
}

/* Implementations of the primitives that ran: the recurrent ones, and any other on ref. */
typedef struct impls {
    int nrnn, nrnn_ref, nother_ref;
    char last_other[160];
} impls;

static void on_prim(const rt_prim_event *ev, void *user) {
    impls *m = user;
    bool ref = !strncmp(ev->info->impl, "ref", 3);
    if (!strcmp(ev->info->kind, "rnn")) {
        m->nrnn++;
        m->nrnn_ref += ref;
    } else if (ref) {
        m->nother_ref++;
        snprintf(m->last_other, sizeof m->last_other, "%s %s", ev->info->kind, ev->info->impl);
    }
}

static void check_model(const char *name, const char *op, int nlayers) {
    const char *dir = getenv("GRAFT_RNN_MODELS");
    char path[4096], in_path[4200], out_path[4200];
    snprintf(path, sizeof path, "%s/%s.onnx", dir && *dir ? dir : "build/third_party/rnn", name);
    snprintf(in_path, sizeof in_path, "%s/refs/%s/input_0.npy", dir && *dir ? dir : "build/third_party/rnn", name);
    snprintf(out_path, sizeof out_path, "%s/refs/%s/output_0.npy", dir && *dir ? dir : "build/third_party/rnn", name);
    FILE *probe = fopen(out_path, "rb");
    if (!probe) {
        cr_skip_test("%s: no model cache (scripts/fetch_rnn_models.sh)", name);
        return;
    }
    fclose(probe);
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *opt = NULL, *part = NULL;
    onnx_import_opts io = {0};
    cr_assert_eq(onnx_import_file(ctx, path, &io, &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(count_op(m, op), nlayers, "%s: %d %s layers imported", name, count_op(m, op), op);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
    byoc_partition_opts po = {0};
    const char *be[1] = {"dnnl"};
    cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &part, &d), GR_OK, "%s", d.msg);
    cr_expect_eq(count_op(part, op), 0, "%s: %d recurrent layers left on the host", name, count_op(part, op));
    rt_tensor *input = NULL, *ref = NULL;
    cr_assert_eq(rt_npy_load(in_path, &input, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_npy_load(out_path, &ref, &d), GR_OK, "%s", d.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(part, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    impls im = {0};
    cr_assert_gt(rt_module_set_profilers(part, on_prim, &im), 0);
    gr_status rs = rt_exec_run(x, &arg, 1, &res, &d);
    rt_module_set_profilers(part, NULL, NULL);
    cr_assert_eq(rs, GR_OK, "%s", d.msg);
    /* every recurrent layer is one oneDNN RNN primitive; nothing else on a reference kernel; the
     * LSTM on brgemm where oneDNN has it (AVX-512). oneDNN 2.6's only GRU kernel is its
     * GEMM-based driver, which it names "ref". */
    cr_expect_eq(im.nrnn, nlayers, "%s: %d RNN primitives ran", name, im.nrnn);
    cr_expect_eq(im.nother_ref, 0, "%s: %d primitives on ref, last %s", name, im.nother_ref, im.last_other);
    if (!strcmp(op, "relax.nn.lstm") && !strncmp(rt_dnnl_isa(), "avx512", 6))
        cr_expect_eq(im.nrnn_ref, 0, "%s: LSTM on ref with ISA %s", name, rt_dnnl_isa());
    cr_assert_eq(res.kind, RT_VAL_TENSOR);
    cr_assert_eq(rt_tensor_numel(res.u.t), rt_tensor_numel(ref));
    gr_cmp_result e =
        tc_expect_tensor(res.u.t, ref, (gr_cmp_opts){.atol = MODEL_ATOL, .rtol = MODEL_RTOL}, "%s: dnnl against ORT", name);
    fprintf(stderr, "dnnl_rnn %s: %d %s layers in dnnl, max |dnnl - ORT| = %.3g\n", name, nlayers, op, e.max_abs);
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_tensor_release(ref);
    rt_exec_free(x);
    ir_ctx_free(ctx);
}

Test(dnnl_rnn, lstm_model_matches_ort, .timeout = 120) { check_model("lstm_tagger", "relax.nn.lstm", 2); }
Test(dnnl_rnn, gru_model_matches_ort, .timeout = 120) { check_model("gru_ctc", "relax.nn.gru", 2); }
