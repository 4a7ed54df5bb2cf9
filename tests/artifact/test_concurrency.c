/* graft_model_run from 4 threads on one loaded model (tests/artifact/concurrency_impl.h): a
 * host-code (LLVM) artifact, a oneDNN artifact, a JSON-runtime artifact, and one with a symbolic
 * dim whose runs each lay out their own arena. `make tsan` runs
 * the same checks under ThreadSanitizer (tests/concurrency_main.c). */
#include <criterion/criterion.h>

#include "tests/artifact/concurrency_impl.h"

static void check(const char *backend) {
    char err[512];
    int bad = conc_check(backend, err, sizeof err);
    cr_assert_eq(bad, 0, "%s", err);
}

Test(concurrency, host_artifact_runs_from_4_threads, .timeout = 300) { check(NULL); }
Test(concurrency, dnnl_artifact_runs_from_4_threads, .timeout = 300) { check("dnnl"); }
Test(concurrency, json_artifact_runs_from_4_threads, .timeout = 300) { check("json"); }
Test(concurrency, symbolic_artifact_runs_from_4_threads, .timeout = 300) { check("symbolic"); }
