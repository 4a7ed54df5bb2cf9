/* graft_model_run from 4 threads on one loaded model (tests/artifact/concurrency_impl.h): a
 * host-code (LLVM) artifact, a oneDNN artifact and a JSON-runtime artifact. `make tsan` runs
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

static void check_sym(const char *backend) {
    char err[512];
    int bad = conc_check_mode(backend, true, err, sizeof err);
    cr_assert_eq(bad, 0, "symbolic %s", err);
}

Test(concurrency, symbolic_host_artifact_at_mixed_batches, .timeout = 300) { check_sym(NULL); }
Test(concurrency, symbolic_dnnl_artifact_at_mixed_batches, .timeout = 300) { check_sym("dnnl"); }
Test(concurrency, symbolic_json_artifact_at_mixed_batches, .timeout = 300) { check_sym("json"); }

/* Two oneDNN models with dnnl.threads 1 and 3, each run from 2 threads at once: each keeps its own team. */
Test(concurrency, dnnl_models_keep_their_own_threads, .timeout = 300) {
    char err[512];
    int bad = conc_check_teams(err, sizeof err);
    cr_assert_eq(bad, 0, "%s", err);
}
