/* A QDQ-quantized CNN (scripts/make_qdq_cnn.py: uint8 activations re-quantized after every
 * layer, int8 per-channel weights, int32 biases, a residual add, int8 logits) against ONNX
 * Runtime (scripts/ort_reference.js, graph optimizations on: ORT fuses the Q/DQ pairs into its
 * integer QLinearConv / QLinearAdd kernels). graft runs QuantizeLinear / DequantizeLinear as
 * float computations on the host with the default pipeline; partitioned for dnnl, everything
 * runs on oneDNN (int8 convolutions, scaled reorders: checked in the partition report).
 *
 * Outputs: the logits (grid 1/64) and the residual block's re-quantized feature map (1x16x8x8,
 * grid 8/255). Tolerance: values equal to ORT's within float32 error (FLOAT_TOL), except at a
 * rounding tie, where ORT and graft may pick the two neighbours one grid step apart: ORT
 * requantizes integer sums with a float multiplier, graft divides a float32 sum by the scale
 * and rounds half to even, so a tie lands a float error to either side in each. A tie is a
 * value whose pre-rounding value (the model's fc_y and res_y, added as outputs of graft's run)
 * lies within TIE_EPS of a half step. A value may be one step off only at a tie, so the cap on
 * one-step-off values is the number of ties, and every other value must match.
 * Measured (2026-11-28, host and dnnl, AVX-512 and AVX2): logits all equal (no ties); of the
 * feature map's 1024 values 478 are ties (the residual sum of two values on the 4/255 grid is
 * an exact tie on the 8/255 grid when their levels add up to an odd number) and 23 are one step
 * off, all at ties. ORT with graph optimizations off (float Q/DQ as written) equals graft's
 * output exactly. Skipped when the model or its reference outputs are absent
 * (scripts/fetch_models.sh builds both). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/compare.h"
#include "byoc/byoc.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "onnx/onnx.pb-c.h"
#include "runtime/exec/executor.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"
#include "tests/test_util.h"

#define QDQ_DIR "build/third_party/qdq"
#define QDQ_MODEL QDQ_DIR "/qdq_cnn.onnx"
#define QDQ_REFS QDQ_DIR "/refs/qdq_cnn"
/* per output (logits, feature map): its quantization step, its levels (zero point 0) and the
 * tensor it rounds */
static const struct {
    double step, qmin, qmax;
    const char *pre;
    int64_t shape[4];
    int32_t ndim;
} OUTS[2] = {{1.0 / 64, -128, 127, "fc_y", {1, 10}, 2}, {8.0 / 255, 0, 255, "res_y", {1, 16, 8, 8}, 4}};
/* float32 error of a dequantized value (level * scale, up to 255 * 8/255) */
#define FLOAT_TOL 1e-6
/* a pre-rounding value within this many steps of a half step is a tie: float32 sums of up to
 * 144 terms err by ~1e-5 steps; a value off a tie by chance is this close with odds 2e-4 */
#define TIE_EPS 1e-4

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* The model with the pre-rounding tensors (OUTS[].pre) as extra graph outputs. */
static void import_with_pre(ir_ctx_t *ctx, ir_module **m) {
    size_t len = 0;
    uint8_t *buf = (uint8_t *)tu_read_file(QDQ_MODEL, &len);
    cr_assert_not_null(buf, "%s", QDQ_MODEL);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    cr_assert_not_null(mp);
    Onnx__GraphProto *g = mp->graph;
    size_t nout = g->n_output;
    Onnx__ValueInfoProto vi[2], **outs = calloc(nout + 2, sizeof *outs);
    Onnx__TypeProto tp[2];
    Onnx__TypeProto__Tensor tt[2];
    Onnx__TensorShapeProto sp[2];
    Onnx__TensorShapeProto__Dimension dims[2][4], *dimp[2][4];
    memcpy(outs, g->output, nout * sizeof *outs);
    for (int k = 0; k < 2; k++) {
        onnx__value_info_proto__init(&vi[k]);
        onnx__type_proto__init(&tp[k]);
        onnx__type_proto__tensor__init(&tt[k]);
        onnx__tensor_shape_proto__init(&sp[k]);
        for (int i = 0; i < OUTS[k].ndim; i++) {
            onnx__tensor_shape_proto__dimension__init(&dims[k][i]);
            dims[k][i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dims[k][i].dim_value = OUTS[k].shape[i];
            dimp[k][i] = &dims[k][i];
        }
        sp[k].n_dim = (size_t)OUTS[k].ndim;
        sp[k].dim = dimp[k];
        tt[k].has_elem_type = 1;
        tt[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        tt[k].shape = &sp[k];
        tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp[k].tensor_type = &tt[k];
        vi[k].name = (char *)OUTS[k].pre;
        vi[k].type = &tp[k];
        outs[nout + (size_t)k] = &vi[k];
    }
    Onnx__ValueInfoProto **own = g->output;
    g->output = outs;
    g->n_output = nout + 2;
    size_t plen = onnx__model_proto__get_packed_size(mp);
    uint8_t *packed = malloc(plen);
    onnx__model_proto__pack(mp, packed);
    g->output = own;
    g->n_output = nout;
    free(outs);
    onnx__model_proto__free_unpacked(mp, NULL);
    gr_diag d = {0};
    cr_assert_eq(onnx_import_buffer(ctx, QDQ_MODEL, packed, plen, NULL, m, &d), GR_OK, "%s", d.msg);
    free(packed);
}

/* dnnl: every op offloaded, the quantize / dequantize steps too (backends/dnnl/dnnl_q_impl.h):
 * the convolutions after a quantize -> dequantize pair of their own as int8 composites; the
 * pairs a residual shares, and the one a reshape separates from the matmul, as scaled
 * reorders */
static void check_offload(ir_ctx_t *ctx, const ir_module *merged, byoc_notes *notes) {
    json_t *r = byoc_report_json(ctx, merged, (const char *[]){"dnnl"}, 1, notes);
    json_t *by_op = json_object_get(json_object_get(r, "coverage"), "by_op");
    static const struct {
        const char *op;
        json_int_t offloaded, host;
    } want[] = {{"relax.nn.conv2d", 3, 0}, {"relax.matmul", 1, 0}, {"relax.round", 8, 0}, {"relax.astype", 16, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *o = json_object_get(by_op, want[i].op);
        json_int_t off = json_integer_value(json_object_get(o, "offloaded")), host = json_integer_value(json_object_get(o, "host"));
        cr_expect(off == want[i].offloaded && host == want[i].host, "%s: %lld offloaded, %lld on the host; expected %lld, %lld",
                  want[i].op, (long long)off, (long long)host, (long long)want[i].offloaded, (long long)want[i].host);
    }
    cr_expect_geq(json_array_size(json_object_get(r, "regions")), 1);
    json_decref(r);
}

/* Imports the model (and partitions it for dnnl when asked), runs it on ORT's input and
 * compares with ORT's outputs. */
static void run_qdq(bool dnnl) {
    if (!exists(QDQ_MODEL) || !exists(QDQ_REFS "/output_0.npy"))
        cr_skip("%s or its ORT outputs are absent: run scripts/fetch_models.sh", QDQ_MODEL);
    ir_ctx_t *ctx = ir_ctx_new();
    rt_const_eval_attach(ctx);
    gr_diag d = {0};
    ir_module *m = NULL, *opt = NULL, *run = NULL;
    import_with_pre(ctx, &m);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
    run = opt;
    if (dnnl) {
        byoc_notes notes;
        byoc_notes_init(&notes);
        byoc_partition_opts po = {.notes = &notes};
        const char *be[1] = {"dnnl"};
        cr_assert_eq(byoc_partition(ctx, opt, be, 1, &po, &run, &d), GR_OK, "%s", d.msg);
        check_offload(ctx, po.after_merge, &notes);
        byoc_notes_free(&notes);
    }
    rt_tensor *input = NULL;
    cr_assert_eq(rt_npy_load(QDQ_REFS "/input_0.npy", &input, &d), GR_OK, "%s", d.msg);
    rt_exec_t *x = NULL;
    cr_assert_eq(rt_exec_new(run, "main", &x, &d), GR_OK, "%s", d.msg);
    rt_value arg = rt_value_tensor(input), res = {0};
    cr_assert_eq(rt_exec_run(x, &arg, 1, &res, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(res.kind, RT_VAL_TUPLE);
    cr_assert_eq(res.u.tuple.n, 4, "the two outputs and the two pre-rounding tensors");
    for (uint32_t k = 0; k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, QDQ_REFS "/output_%u.npy", k);
        rt_tensor *ref = NULL;
        cr_assert_eq(rt_npy_load(path, &ref, &d), GR_OK, "%s", d.msg);
        const rt_tensor *got = res.u.tuple.items[k].u.t, *pre = res.u.tuple.items[2 + k].u.t;
        cr_assert(rt_tensor_same_shape(got, ref), "output %u: shape differs from ORT's", k);
        cr_assert_eq(rt_tensor_numel(pre), rt_tensor_numel(ref));
        double step = OUTS[k].step;
        int64_t n = rt_tensor_numel(ref), ties = 0, off = 0, wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            double g = rt_tensor_get_f64(got, i), w = rt_tensor_get_f64(ref, i), v = rt_tensor_get_f64(pre, i) / step;
            bool tie = fabs(v - floor(v) - 0.5) <= TIE_EPS && v > OUTS[k].qmin && v < OUTS[k].qmax;
            ties += tie;
            if (gr_cmp_value(g, w, FLOAT_TOL, FLOAT_TOL, false)) continue;
            off++;
            if (tie && gr_cmp_value(g, w, step + FLOAT_TOL, 0, false)) continue;
            if (wrong++ < 5)
                cr_expect_fail("output %u elem %lld: %.9g, ORT %.9g (pre-rounding %.9g steps: %s)", k, (long long)i, g, w, v,
                               tie ? "a tie, but more than one step off" : "no tie");
        }
        fprintf(stderr, "qdq_cnn%s: output %u: %lld of %lld values off ORT's (%lld of them not one step at a tie); %lld ties\n",
                dnnl ? " (dnnl)" : "", k, (long long)off, (long long)n, (long long)wrong, (long long)ties);
        cr_expect_eq(wrong, 0, "output %u: %lld values off ORT's where no tie allows it", k, (long long)wrong);
        rt_tensor_release(ref);
    }
    rt_value_clear(&res);
    rt_value_clear(&arg);
    rt_exec_free(x);
    ir_ctx_free(ctx);
}

Test(qdq_cnn, host_matches_ort) { run_qdq(false); }
Test(qdq_cnn, dnnl_matches_ort) { run_qdq(true); }
