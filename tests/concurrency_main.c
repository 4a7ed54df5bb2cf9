/* `make tsan`: the concurrency checks of tests/artifact/concurrency_impl.h as a plain program
 * (Criterion's runner aborts at start under ThreadSanitizer: its inheritable arena cannot be
 * mapped, Criterion issue #274). Prints one line per artifact kind, one for two oneDNN models
 * with their own thread counts, and a closing count. */
#include "tests/artifact/concurrency_impl.h"

int main(void) {
    static const char *const kinds[] = {NULL, "dnnl", "json"};
    int pass = 0, fail = 0;
    for (int sym = 0; sym < 2; sym++)
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            char err[512];
            int bad = conc_check_mode(kinds[i], sym, err, sizeof err);
            printf("concurrency %s%s: %s%s\n", sym ? "symbolic " : "", kinds[i] ? kinds[i] : "host", bad ? "FAILED: " : "ok",
                   bad ? err : "");
            bad ? fail++ : pass++;
        }
    char err[512];
    int bad = conc_check_teams(err, sizeof err);
    printf("concurrency dnnl teams of 1 and 3 threads: %s%s\n", bad ? "FAILED: " : "ok", bad ? err : "");
    bad ? fail++ : pass++;
    printf("concurrency: %d passed, %d failed\n", pass, fail);
    return fail != 0;
}
