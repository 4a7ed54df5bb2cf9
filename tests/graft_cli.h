/* What the CLI tests share: the graft binary they run, a scratch directory per test, and a
 * runner of `graft ARGS` that keeps its stdout and stderr there. */
#ifndef GRAFT_TESTS_GRAFT_CLI_H
#define GRAFT_TESTS_GRAFT_CLI_H

#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_util.h"

/* GRAFT (made absolute, since tests run it from a temporary directory), else the graft next to
 * this test binary's directory (build/X/tests/run_tests -> build/X/graft), else build/graft;
 * skips the test when none. */
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

/* The test's scratch directory: made by cli_mkdtemp (a suite's .init), removed by cli_rmdir
 * (its .fini). */
static inline char *cli_dir(void) {
    static char dir[64];
    return dir;
}
static inline void cli_mkdtemp(const char *tag) {
    snprintf(cli_dir(), 64, "/tmp/graft_%s_XXXXXX", tag);
    cr_assert_not_null(mkdtemp(cli_dir()), "cannot make a scratch directory");
}
static inline void cli_rmdir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cli_dir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cli_dir());
}

/* Runs `ENV graft ARGS` in directory WHERE (NULL: the current one, the repository root), its
 * stdout into the scratch directory's file out and its stderr into err. ENV is "" or
 * assignments for env(1). Returns the exit status, -1 when graft did not exit. */
static inline int cli_vrun(const char *where, const char *env, const char *fmt, va_list ap) {
    char args[4096], cmd[2 * PATH_MAX + 8192];
    vsnprintf(args, sizeof args, fmt, ap);
    const char *g = graft();
    snprintf(cmd, sizeof cmd, "%s%s%s env %s '%s' %s > '%s/out' 2> '%s/err'", where ? "cd '" : "", where ? where : "",
             where ? "' &&" : "", env, g, args, cli_dir(), cli_dir());
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ENV graft ARGS in directory WHERE */
__attribute__((format(printf, 3, 4))) static inline int cli_run_in(const char *where, const char *env, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cli_vrun(where, env, fmt, ap);
    va_end(ap);
    return rc;
}

/* graft ARGS in the repository root */
__attribute__((format(printf, 1, 2))) static inline int cli_run(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cli_vrun(NULL, "", fmt, ap);
    va_end(ap);
    return rc;
}

/* graft ARGS in the scratch directory (paths relative to it) */
__attribute__((format(printf, 1, 2))) static inline int cli_run_here(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cli_vrun(cli_dir(), "", fmt, ap);
    va_end(ap);
    return rc;
}

/* The scratch directory's file NAME as a string (cut at 8 MB; "" when missing), into one of
 * three buffers: out and err each keep theirs, so both can be printed in one message. */
static inline char *cli_read(const char *name) {
    static char bufs[3][8 << 20];
    char path[256];
    int k = strcmp(name, "out") == 0 ? 0 : strcmp(name, "err") == 0 ? 1 : 2;
    snprintf(path, sizeof path, "%s/%s", cli_dir(), name);
    tu_read_into(path, bufs[k], sizeof bufs[k]);
    return bufs[k];
}
static inline char *cli_out(void) { return cli_read("out"); }
static inline char *cli_err(void) { return cli_read("err"); }

/* writes TEXT to the scratch directory's file NAME */
static inline void cli_write(const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", cli_dir(), name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

#endif
