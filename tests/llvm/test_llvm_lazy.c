/* libLLVM is loaded only when host code is compiled or linked (backends/llvm/llvm_api_impl.h): a
 * model whose every op a backend took never maps it; one with a fused host kernel does. Each
 * test is its own process (Criterion forks), so /proc/self/maps shows what that test loaded. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "include/graft/graft.h"

static bool llvm_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, "libLLVM") != NULL;
    fclose(f);
    return found;
}

#define T4(n) "R.Tensor((1, " #n ", 8, 8), dtype=\"float32\")"
static const char *k_mod =
    "@I.ir_module\n"
    "class Module:\n"
    "    @R.function\n"
    "    def main(x: " T4(3) ", w: R.Tensor((4, 3, 1, 1), dtype=\"float32\")) -> " T4(4) ":\n"
    "        with R.dataflow():\n"
    "            lv: " T4(4) " = R.nn.conv2d(x, w)\n"
    "            lv1: " T4(4) " = R.nn.relu(lv)\n"
    "            gv: " T4(4) " = R.sigmoid(lv1)\n"
    "            R.output(gv)\n"
    "        return gv\n";

/* Loads k_mod (through an artifact in memory, as every load), runs it once; counts its host
 * kernels. */
static uint32_t load_and_run(const char *backend) {
    graft_session_options *o = graft_session_options_new();
    graft_error *err = NULL;
    if (backend) cr_assert_eq(graft_session_options_add_backend(o, backend, &err), GRAFT_OK);
    graft_session *s = NULL;
    cr_assert_eq(graft_session_load_buffer(k_mod, strlen(k_mod), "relax", o, &s, &err), GRAFT_OK, "%s",
                 err ? graft_error_message(err) : "");
    uint32_t nhost = 0;
    for (uint32_t i = 0; i < graft_session_num_regions(s); i++)
        nhost += strcmp(graft_session_region_kind(s, i), "host") == 0;
    int64_t sx[4] = {1, 3, 8, 8}, sw[4] = {4, 3, 1, 1};
    graft_tensor *in[2] = {graft_tensor_new(GRAFT_FLOAT32, 4, sx), graft_tensor_new(GRAFT_FLOAT32, 4, sw)};
    float *x = graft_tensor_data(in[0]), *w = graft_tensor_data(in[1]);
    for (int i = 0; i < 192; i++) x[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 12; i++) w[i] = 0.25f * (float)(i % 5) - 0.5f;
    graft_tensor *out = NULL;
    cr_assert_eq(graft_session_run(s, in, 2, &out, 1, &err), GRAFT_OK, "%s", err ? graft_error_message(err) : "");
    /* sigmoid(relu(.)) lies in [0.5, 1) */
    const float *y = graft_tensor_data(out);
    for (int i = 0; i < 256; i++) cr_assert(y[i] >= 0.5f && y[i] < 1.0f, "y[%d] = %g", i, (double)y[i]);
    graft_tensor_release(out);
    graft_tensor_release(in[0]);
    graft_tensor_release(in[1]);
    graft_session_free(s);
    graft_session_options_free(o);
    return nhost;
}

Test(llvm_lazy, all_offloaded_never_maps_llvm) {
    cr_assert_not(llvm_mapped(), "libLLVM mapped before any model");
    cr_assert_eq(load_and_run("dnnl"), 0, "every op offloaded: no host kernel");
    cr_assert_not(llvm_mapped(), "a model without host code mapped libLLVM");
}

Test(llvm_lazy, host_code_maps_llvm) {
    cr_assert_not(llvm_mapped(), "libLLVM mapped before any model");
    cr_assert_gt(load_and_run(NULL), 0, "on the host, the relu and sigmoid fuse into a host kernel");
    cr_assert(llvm_mapped(), "host code compiled without libLLVM mapped");
}
