/* A model of a cache in build/third_party (the zoo, the int8 zoo) with the ONNX Runtime
 * reference its fetch script wrote: DIR/NAME.onnx, DIR/refs/NAME/input_0.npy and output_0.npy. */
#ifndef GRAFT_TESTS_CACHED_MODEL_H
#define GRAFT_TESTS_CACHED_MODEL_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/transform/transform.h"
#include "runtime/kernels/const_eval.h"
#include "runtime/npy.h"

/* The model's path into path, its reference input and output into *input and *ref (the caller
 * releases them). false, with the test skipped naming `fetch`, when the cache lacks them. */
static inline bool cached_model_load(const char *dir, const char *name, const char *fetch, char *path, size_t n,
                                     rt_tensor **input, rt_tensor **ref) {
    char in_path[4200], out_path[4200];
    snprintf(path, n, "%s/%s.onnx", dir, name);
    snprintf(in_path, sizeof in_path, "%s/refs/%s/input_0.npy", dir, name);
    snprintf(out_path, sizeof out_path, "%s/refs/%s/output_0.npy", dir, name);
    FILE *probe = fopen(out_path, "rb");
    if (!probe) {
        cr_skip_test("%s: not in %s (%s)", name, dir, fetch);
        return false;
    }
    fclose(probe);
    gr_diag d = {0};
    cr_assert_eq(rt_npy_load(in_path, input, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(rt_npy_load(out_path, ref, &d), GR_OK, "%s", d.msg);
    return true;
}

/* The model at path imported into ctx (its constant evaluator attached), with input "x" fixed to
 * the shape of `input` (NULL: the file's own shapes), through the default pipeline. */
static inline ir_module *cached_model_import(ir_ctx_t *ctx, const char *path, const rt_tensor *input) {
    gr_diag d = {0};
    rt_const_eval_attach(ctx);
    onnx_input_shape sh = {"x", input ? input->dl.ndim : 0, {0}};
    if (input) memcpy(sh.dims, input->shape, sizeof(int64_t) * (size_t)input->dl.ndim);
    onnx_import_opts io = {&sh, 1, NULL, 0, false};
    ir_module *m = NULL, *opt = NULL;
    cr_assert_eq(onnx_import_file(ctx, path, input ? &io : NULL, &m, &d), GR_OK, "%s", d.msg);
    cr_assert_eq(ir_pass_run(ir_pass_default_pipeline(), NULL, m, &opt, &d), GR_OK, "%s", d.msg);
    return opt;
}

#endif
