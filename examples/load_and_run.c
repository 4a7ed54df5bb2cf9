/* Loads a model (a .graft artifact written by `graft build MODEL -o MODEL.graft`, or an .onnx /
 * .relax model compiled on load) and runs it once on inputs filled with 0.5, printing the
 * first values of each output. Built against the public API alone:
 *
 *   cc -o load_and_run examples/load_and_run.c $(pkg-config --cflags --libs graft)
 *   ./load_and_run MODEL.graft [BACKEND]... */
#include <stdio.h>

#include <graft/graft.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [BACKEND]...\n", argv[0]);
        return 2;
    }
    if (graft_api_version() >> 16 != GRAFT_API_VERSION_MAJOR) {
        fprintf(stderr, "libgraft speaks API %u.%u, this program was built for %d.%d\n", graft_api_version() >> 16,
                graft_api_version() & 0xffff, GRAFT_API_VERSION_MAJOR, GRAFT_API_VERSION_MINOR);
        return 1;
    }
    graft_error *err = NULL;
    graft_session_options *o = graft_session_options_new();
    for (int i = 2; i < argc; i++)
        if (graft_session_options_add_backend(o, argv[i], &err)) goto fail;
    graft_session *s = NULL;
    if (graft_session_load(argv[1], o, &s, &err)) goto fail;
    uint32_t n = graft_session_num_inputs(s), nout = graft_session_num_outputs(s);
    graft_tensor *in[16] = {0}, *out[16] = {0};
    int rc = 1;
    if (n > 16 || nout > 16) goto done;
    for (uint32_t i = 0; i < n; i++) {
        int nd = graft_session_input_ndim(s, i);
        int64_t shape[8];
        for (int k = 0; k < nd && k < 8; k++) shape[k] = graft_session_input_dim(s, i, k);
        in[i] = graft_session_input_dtype(s, i) == GRAFT_FLOAT32 ? graft_tensor_new(GRAFT_FLOAT32, nd, shape) : NULL;
        if (!in[i]) {
            fprintf(stderr, "input '%s' is not a float32 tensor of static shape\n", graft_session_input_name(s, i));
            goto done;
        }
        float *x = graft_tensor_data(in[i]);
        for (size_t k = 0; k < graft_tensor_numel(in[i]); k++) x[k] = 0.5f;
    }
    if (graft_session_run(s, in, n, out, nout, &err)) {
        fprintf(stderr, "%s\n", graft_error_message(err));
        goto done;
    }
    for (uint32_t i = 0; i < nout; i++) {
        printf("%s:", graft_session_output_name(s, i));
        if (graft_tensor_dtype(out[i]) == GRAFT_FLOAT32) {
            const float *y = graft_tensor_data(out[i]);
            for (size_t k = 0; k < graft_tensor_numel(out[i]) && k < 8; k++) printf(" %g", y[k]);
        }
        printf("%s\n", graft_tensor_numel(out[i]) > 8 ? " ..." : "");
    }
    rc = 0;
done:
    for (uint32_t i = 0; i < 16; i++) graft_tensor_release(in[i]), graft_tensor_release(out[i]);
    graft_error_free(err);
    graft_session_free(s);
    graft_session_options_free(o);
    return rc;
fail:
    fprintf(stderr, "%s\n", graft_error_message(err));
    graft_error_free(err);
    graft_session_options_free(o);
    return 1;
}
