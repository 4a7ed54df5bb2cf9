/* The graft binary the CLI tests run: GRAFT (made absolute, since the tests run it from a
 * temporary directory), else the graft next to this test binary's directory
 * (build/X/tests/run_tests -> build/X/graft), else build/graft; skips the test when none. */
#ifndef GRAFT_TESTS_GRAFT_CLI_H
#define GRAFT_TESTS_GRAFT_CLI_H

#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *graft(void) {
    static char path[PATH_MAX];
    const char *g = getenv("GRAFT");
    struct stat st;
    if (g && *g) return realpath(g, path) ? path : g;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(path, sizeof path, "%s/graft", dirname(dirname(exe)));
        if (stat(path, &st) == 0) return path;
    }
    if (stat("build/graft", &st) == 0 && realpath("build/graft", path)) return path;
    cr_skip("GRAFT is not set and no graft binary was found: run through `make test`");
    return NULL;
}

#endif
