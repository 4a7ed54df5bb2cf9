/* The ONNX importer on the ONNX backend test models (Debian's libonnx-testdata): main's result
 * matches the dtype and static shape each model declares for its outputs. */
#include <criterion/criterion.h>

#include "ir/text/printer.h"
#include "tests/frontend/onnx_test_util.h"

/* Which inputs of test_data_set_0 become constants: shape-like inputs (Reshape's shape,
 * Slice's starts, Resize's sizes, ...) are graph inputs in these tests. */
enum { BIND_NONE, BIND_ALL_BUT_FIRST, BIND_ALL };

typedef struct model_case {
    const char *dir;   /* under ONNX_DATA_DIR */
    int bind;
} model_case;

static const model_case cases[] = {
    {"node/test_conv_with_strides_padding", BIND_NONE},
    {"node/test_conv_with_strides_and_asymmetric_padding", BIND_NONE},
    {"node/test_conv_with_autopad_same", BIND_NONE},
    {"node/test_convtranspose", BIND_NONE},
    {"node/test_convtranspose_pads", BIND_NONE},
    {"node/test_convtranspose_output_shape", BIND_NONE},
    {"node/test_convtranspose_autopad_same", BIND_NONE},
    {"node/test_convtranspose_dilations", BIND_NONE},
    {"pytorch-converted/test_Conv1d_stride", BIND_NONE},
    {"pytorch-converted/test_Conv2d_depthwise_padded", BIND_NONE},
    {"pytorch-converted/test_Conv2d_groups", BIND_NONE},
    {"node/test_gemm_all_attributes", BIND_NONE},
    {"node/test_gemm_default_no_bias", BIND_NONE},
    {"node/test_gemm_transposeA", BIND_NONE},
    {"pytorch-converted/test_Linear", BIND_NONE},
    {"node/test_batchnorm_example", BIND_NONE},
    {"pytorch-converted/test_BatchNorm2d_eval", BIND_NONE},
    {"node/test_resize_upsample_scales_nearest", BIND_ALL_BUT_FIRST},
    {"node/test_resize_downsample_sizes_nearest", BIND_ALL_BUT_FIRST},
    {"node/test_resize_upsample_scales_linear_align_corners", BIND_ALL_BUT_FIRST},
    {"node/test_resize_upsample_sizes_cubic", BIND_ALL_BUT_FIRST},
    {"node/test_resize_downsample_sizes_linear_pytorch_half_pixel", BIND_ALL_BUT_FIRST},
    {"node/test_resize_tf_crop_and_resize", BIND_ALL_BUT_FIRST},
    {"node/test_upsample_nearest", BIND_ALL_BUT_FIRST},
    {"node/test_slice", BIND_ALL_BUT_FIRST},
    {"node/test_slice_neg_steps", BIND_ALL_BUT_FIRST},
    {"node/test_slice_end_out_of_bounds", BIND_ALL_BUT_FIRST},
    {"node/test_slice_start_out_of_bounds", BIND_ALL_BUT_FIRST},
    {"node/test_slice_negative_axes", BIND_ALL_BUT_FIRST},
    {"node/test_reshape_negative_dim", BIND_ALL_BUT_FIRST},
    {"node/test_reshape_zero_and_negative_dim", BIND_ALL_BUT_FIRST},
    {"node/test_reshape_allowzero_reordered", BIND_ALL_BUT_FIRST},
    {"node/test_reshape_extended_dims", BIND_ALL_BUT_FIRST},
    {"node/test_split_equal_parts_2d", BIND_NONE},
    {"node/test_split_variable_parts_2d", BIND_ALL_BUT_FIRST},
    {"node/test_split_variable_parts_default_axis", BIND_ALL_BUT_FIRST},
    {"node/test_constant_pad", BIND_ALL_BUT_FIRST},
    {"node/test_reflect_pad", BIND_ALL_BUT_FIRST},
    {"node/test_edge_pad", BIND_ALL_BUT_FIRST},
    {"pytorch-converted/test_ReflectionPad2d", BIND_NONE},
    {"node/test_reduce_mean_keepdims_example", BIND_NONE},
    {"node/test_reduce_mean_default_axes_keepdims_example", BIND_NONE},
    {"node/test_reduce_sum_do_not_keepdims_example", BIND_ALL_BUT_FIRST},
    {"node/test_reduce_sum_empty_axes_input_noop_example", BIND_ALL_BUT_FIRST},
    {"node/test_reduce_max_negative_axes_keepdims_example", BIND_NONE},
    {"node/test_softmax_axis_1", BIND_NONE},
    {"node/test_softmax_axis_1_expanded", BIND_NONE},
    {"pytorch-converted/test_Softmax", BIND_NONE},
    {"pytorch-converted/test_log_softmax_dim3", BIND_NONE},
    {"node/test_maxpool_2d_same_upper", BIND_NONE},
    {"node/test_maxpool_2d_same_lower", BIND_NONE},
    {"node/test_maxpool_2d_ceil", BIND_NONE},
    {"node/test_maxpool_2d_dilations", BIND_NONE},
    {"node/test_maxpool_1d_default", BIND_NONE},
    {"node/test_averagepool_2d_pads_count_include_pad", BIND_NONE},
    {"node/test_averagepool_2d_precomputed_same_upper", BIND_NONE},
    {"node/test_globalaveragepool", BIND_NONE},
    {"node/test_flatten_negative_axis2", BIND_NONE},
    {"node/test_flatten_axis0", BIND_NONE},
    {"node/test_transpose_all_permutations_3", BIND_NONE},
    {"node/test_squeeze_negative_axes", BIND_ALL_BUT_FIRST},
    {"node/test_unsqueeze_unsorted_axes", BIND_ALL_BUT_FIRST},
    {"node/test_gather_2d_indices", BIND_NONE},
    {"node/test_expand_dim_changed", BIND_ALL_BUT_FIRST},
    {"node/test_tile", BIND_ALL_BUT_FIRST},
    {"node/test_range_int32_type_negative_delta", BIND_ALL},
    {"node/test_range_float_type_positive_delta", BIND_ALL},
    {"node/test_where_long_example", BIND_NONE},
    {"node/test_clip_splitbounds", BIND_ALL_BUT_FIRST},
    {"node/test_clip_default_int8_min", BIND_ALL_BUT_FIRST},
    {"node/test_layer_normalization_4d_axis1", BIND_NONE},
    {"node/test_layer_normalization_4d_axis1_expanded", BIND_NONE},
    {"node/test_prelu_broadcast", BIND_NONE},
    {"pytorch-converted/test_PReLU_2d_multiparam", BIND_NONE},
    {"pytorch-converted/test_GLU", BIND_NONE},  /* opset 6 Mul with legacy broadcast */
    {"node/test_hardswish", BIND_NONE},
    {"node/test_hardsigmoid", BIND_NONE},
    {"node/test_elu", BIND_NONE},
    {"node/test_softplus", BIND_NONE},
    {"node/test_leakyrelu", BIND_NONE},
    {"node/test_constantofshape_int_zeros", BIND_ALL},
    {"node/test_shape_start_1_end_negative_1", BIND_NONE},
    {"node/test_cast_FLOAT_to_FLOAT16", BIND_NONE},
    {"node/test_dropout_default_mask", BIND_NONE},
    {"node/test_max_example", BIND_NONE},
    {"node/test_sum_example", BIND_NONE},
    {"node/test_pow_types_float32_int64", BIND_NONE},
};

/* Does the struct info match the value info's dtype and static dims? Writes why not. */
static bool matches(const ir_sinfo *got, const Onnx__ValueInfoProto *vi, char *why, size_t n) {
    const Onnx__TypeProto__Tensor *tt = vi->type ? vi->type->tensor_type : NULL;
    ir_dtype dt;
    if (!tt || !onnx_dtype_from_elem(tt->elem_type, &dt)) {
        snprintf(why, n, "no tensor type");
        return false;
    }
    if (!got || got->kind != IR_SINFO_TENSOR || !ir_dtype_eq(got->dtype, dt)) {
        snprintf(why, n, "dtype");
        return false;
    }
    if (!tt->shape) return true;
    if (got->ndim != (int32_t)tt->shape->n_dim) {
        snprintf(why, n, "rank %d, expected %zu", (int)got->ndim, tt->shape->n_dim);
        return false;
    }
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        int64_t v;
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) continue;
        if (!got->dims || !ir_prim_is_int(got->dims[i], &v) || v != d->dim_value) {
            snprintf(why, n, "dim %zu, expected %lld", i, (long long)d->dim_value);
            return false;
        }
    }
    return true;
}

static void check_case(const model_case *c) {
    char path[512], pb[600];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", ONNX_DATA_DIR, c->dir);
    onnx_input_value vals[8];
    rt_tensor *ts[8];
    char *names[8];
    uint32_t nv = 0;
    for (int i = c->bind == BIND_ALL ? 0 : 1; c->bind != BIND_NONE && i < 8; i++) {
        snprintf(pb, sizeof(pb), "%s/%s/test_data_set_0/input_%d.pb", ONNX_DATA_DIR, c->dir, i);
        gr_diag d;
        gr_diag_clear(&d);
        if (onnx_tensor_load_pb(pb, &ts[nv], &names[nv], &d) != GR_OK) break;
        vals[nv].name = names[nv];
        vals[nv].value = ts[nv];
        nv++;
    }
    onnx_import_opts o = {.values = vals, .nvalues = nv};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = onnx_import_file(ctx, path, &o, &m, &d);
    cr_expect_eq(st, GR_OK, "%s: %s (layer %s, op %s)", c->dir, d.msg, d.layer, d.op);
    if (st == GR_OK) {
        Onnx__ModelProto *mp = t_load_model(path);
        cr_assert_not_null(mp);
        const Onnx__GraphProto *g = mp->graph;
        const ir_sinfo *ret = t_ret(m);
        char why[128] = "";
        for (size_t i = 0; i < g->n_output; i++) {
            const ir_sinfo *s = g->n_output == 1 ? ret : ret->kind == IR_SINFO_TUPLE ? ret->fields[i] : NULL;
            char buf[256] = "";
            if (s) ir_sinfo_snprint(s, buf, sizeof(buf));
            cr_expect(matches(s, g->output[i], why, sizeof(why)), "%s: output %zu is %s: %s", c->dir,
                      i, buf, why);
        }
        onnx__model_proto__free_unpacked(mp, NULL);
    }
    ir_ctx_free(ctx);
    for (uint32_t i = 0; i < nv; i++) {
        rt_tensor_release(ts[i]);
        free(names[i]);
    }
}

Test(onnx_models, backend_models_match_declared_outputs) {
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) check_case(&cases[i]);
}

/* A fractional output size from scales (4 x 0.6): the output is floor(in * scale) and the
 * resize carries the scales, since ONNX maps coordinates with them rather than out / in. */
Test(onnx_models, resize_with_fractional_output_size_keeps_the_scales) {
    model_case c = {"node/test_resize_downsample_scales_linear", BIND_ALL_BUT_FIRST};
    char path[512], pb[600];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", ONNX_DATA_DIR, c.dir);
    snprintf(pb, sizeof(pb), "%s/%s/test_data_set_0/input_1.pb", ONNX_DATA_DIR, c.dir);
    rt_tensor *scales;
    char *name;
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(onnx_tensor_load_pb(pb, &scales, &name, &d), GR_OK, "%s", d.msg);
    onnx_input_value v = {.name = name, .value = scales};
    onnx_import_opts o = {.values = &v, .nvalues = 1};
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, &o, &m, &d), GR_OK, "%s", d.msg);
    char *text = ir_print_module_str(m, NULL);
    cr_expect(strstr(text, "R.Tensor((1, 1, 1, 2), dtype=\"float32\") = R.image.resize2d(") != NULL, "%s", text);
    cr_expect(strstr(text, "scales=[0.6") != NULL, "%s", text);
    free(text);
    ir_ctx_free(ctx);
    rt_tensor_release(scales);
    free(name);
}

/* Every ONNX backend model either imports or fails cleanly (unsupported / invalid), never
 * crashes. */
Test(onnx_models, every_backend_model_imports_or_fails_cleanly) {
    static const char *const sets[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    int ok = 0;
    for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "ls %s/%s", ONNX_DATA_DIR, sets[s]);
        FILE *p = popen(cmd, "r");
        cr_assert_not_null(p);
        char line[256];
        while (fgets(line, sizeof(line), p)) {
            line[strcspn(line, "\n")] = 0;
            char path[600];
            snprintf(path, sizeof(path), "%s/%s/%s/model.onnx", ONNX_DATA_DIR, sets[s], line);
            ir_ctx_t *ctx = ir_ctx_new();
            ir_module *m = NULL;
            gr_diag d;
            gr_diag_clear(&d);
            gr_status st = onnx_import_file(ctx, path, NULL, &m, &d);
            if (st == GR_OK) {
                ok++;
                cr_expect_not_null(t_main(m));
            } else {
                cr_expect(st == GR_ERR_UNSUPPORTED || st == GR_ERR_INVALID, "%s: %s: %s", path,
                          gr_status_name(st), d.msg);
                cr_expect_str_eq(d.file, path);
                cr_expect(d.msg[0] != 0);
            }
            ir_ctx_free(ctx);
        }
        pclose(p);
    }
    cr_expect_gt(ok, 300);
}
