/* The ONNX backend conformance run through the CLI (`$GRAFT conformance`): no crash, no
 * failure among the tests the importer and executor support, and every test the committed
 * floor names still passing (tests/conformance/floor.json: per path, the names of the tests that
 * pass; it only grows), on the reference path ("host"), with `--backend json`, with
 * `--backend dnnl` and through artifacts (`--host llvm`). A pass the floor does not name is
 * printed, so the list can grow. Another test checks that the runner does report a failure when
 * the expected data is wrong. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TESTDATA "/usr/share/libonnx-testdata/data"
#define FLOOR_FILE "tests/conformance/floor.json"

static bool path_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The CLI under test: $GRAFT (set by `make test`), else build/graft. */
static const char *graft_cli(void) {
    const char *g = getenv("GRAFT");
    if (g && *g) return g;
    if (path_is_file("build/graft")) return "build/graft";
    cr_skip("GRAFT is not set and build/graft does not exist: run through `make test`");
    return NULL;
}

/* Runs `graft conformance ARGS... --json OUT` with its stdout/stderr in `log` (so a failure
 * message can point at it). Returns the exit status (-1 when killed). */
static int run_conformance(const char *const *args, size_t nargs, const char *json, const char *log) {
    const char *argv[32];
    size_t k = 0;
    argv[k++] = graft_cli();
    argv[k++] = "conformance";
    for (size_t i = 0; i < nargs && k < 28; i++) argv[k++] = args[i];
    argv[k++] = "--json";
    argv[k++] = json;
    argv[k] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) {}
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static json_int_t count(json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    cr_assert(json_is_integer(v), "report has no integer '%s'", key);
    return json_integer_value(v);
}

/* Prints the non-passing tests of one status (at most 20) to stderr. */
static void list_status(json_t *tests, const char *status) {
    size_t i, shown = 0;
    json_t *t;
    json_array_foreach(tests, i, t) {
        if (strcmp(json_string_value(json_object_get(t, "status")), status) != 0) continue;
        if (shown++ < 20)
            fprintf(stderr, "  %s %s/%s: %s\n", status, json_string_value(json_object_get(t, "dir")),
                    json_string_value(json_object_get(t, "name")),
                    json_string_value(json_object_get(t, "reason")));
    }
}

/* The report's entry of each test by "dir/name" (borrowed from the report). */
static json_t *index_tests(json_t *tests) {
    json_t *by_name = json_object(), *t;
    size_t i;
    json_array_foreach(tests, i, t) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s", json_string_value(json_object_get(t, "dir")),
                 json_string_value(json_object_get(t, "name")));
        json_object_set(by_name, key, t);
    }
    return by_name;
}

/* Holds a run's report (its "tests") to the floor in floor_file for `path`: *lost gets
 * "dir/name: status: reason" of each test the floor names that did not pass, *gained the names
 * of passes it does not name (printed, so the list can grow). Both new references. */
static void check_floor(const char *floor_file, const char *path, json_t *tests, json_t **lost, json_t **gained) {
    json_error_t jerr;
    json_t *floor = json_load_file(floor_file, 0, &jerr);
    cr_assert_not_null(floor, "%s: %s", floor_file, jerr.text);
    json_t *names = json_object_get(json_object_get(floor, "pass"), path);
    cr_assert(json_is_array(names) && json_array_size(names) > 0, "%s names no passes for path '%s'", floor_file, path);
    json_t *by_name = index_tests(tests), *in_floor = json_object(), *v;
    *lost = json_array();
    *gained = json_array();
    size_t i;
    json_array_foreach(names, i, v) {
        const char *name = json_string_value(v);
        cr_assert_not_null(name, "%s: pass.%s[%zu] is not a string", floor_file, path, i);
        json_object_set_new(in_floor, name, json_true());
        json_t *t = json_object_get(by_name, name);
        const char *status = t ? json_string_value(json_object_get(t, "status")) : "not run";
        if (strcmp(status, "pass") == 0) continue;
        char line[2400];
        snprintf(line, sizeof line, "%s: %s%s%s", name, status, t ? ": " : "",
                 t ? json_string_value(json_object_get(t, "reason")) : "");
        json_array_append_new(*lost, json_string(line));
    }
    const char *name;
    json_object_foreach(by_name, name, v) {
        if (strcmp(json_string_value(json_object_get(v, "status")), "pass") != 0 || json_object_get(in_floor, name))
            continue;
        fprintf(stderr, "conformance %s: new pass %s (add it to %s)\n", path, name, floor_file);
        json_array_append_new(*gained, json_string(name));
    }
    if (json_array_size(*gained))
        fprintf(stderr, "conformance %s: %zu passes not in %s\n", path, json_array_size(*gained), floor_file);
    json_decref(in_floor);
    json_decref(by_name);
    json_decref(floor);
}

/* One whole run on `path` with `args` (none: the reference path): no crash, failure or
 * timeout, and every test the floor names for that path passes. Each run takes seconds to
 * half a minute on 2 cores. */
static void check_run(const char *path, const char *const *args, size_t nargs) {
    if (!path_is_file(TESTDATA "/node/test_abs/model.onnx"))
        cr_skip("libonnx-testdata is not installed (make deps)");
    char json_path[] = "/tmp/graft_conformance_XXXXXX";
    int fd = mkstemp(json_path);
    cr_assert(fd >= 0);
    close(fd);
    char log_path[sizeof(json_path) + 8];
    snprintf(log_path, sizeof(log_path), "%s.log", json_path);
    int rc = run_conformance(args, nargs, json_path, log_path);
    cr_assert(rc == 0 || rc == 1, "graft conformance exited with %d (log: %s)", rc, log_path);

    json_error_t jerr;
    json_t *report = json_load_file(json_path, 0, &jerr);
    cr_assert_not_null(report, "%s: %s", json_path, jerr.text);
    json_t *summary = json_object_get(report, "summary"), *tests = json_object_get(report, "tests");
    cr_assert(json_is_object(summary) && json_is_array(tests));
    json_int_t pass = count(summary, "pass"), fail = count(summary, "fail"),
               crash = count(summary, "crash"), timeout = count(summary, "timeout"),
               unsup = count(summary, "unsupported"), skipped = count(summary, "skipped"),
               total = count(summary, "total");
    fprintf(stderr, "conformance %s: %lld tests: %lld pass, %lld fail, %lld unsupported, %lld crash, "
            "%lld timeout, %lld skipped (report %s)\n", path, (long long)total, (long long)pass,
            (long long)fail, (long long)unsup, (long long)crash, (long long)timeout,
            (long long)skipped, json_path);
    cr_assert_eq(pass + fail + crash + timeout + unsup + skipped, total);
    /* Skipping is only for the few tests whose data contradicts their model. */
    cr_expect_leq(skipped, 5, "%lld tests skipped", (long long)skipped);
    cr_assert_eq((json_int_t)json_array_size(tests), total);
    list_status(tests, "crash");
    list_status(tests, "fail");
    list_status(tests, "timeout");
    cr_expect_eq(crash, 0, "%lld conformance tests crashed", (long long)crash);
    cr_expect_eq(fail, 0, "%lld conformance tests with supported ops failed", (long long)fail);
    cr_expect_eq(timeout, 0, "%lld conformance tests timed out", (long long)timeout);
    json_t *lost, *gained, *v;
    check_floor(FLOOR_FILE, path, tests, &lost, &gained);
    size_t i, nlost = json_array_size(lost);
    json_array_foreach(lost, i, v) cr_expect_fail("%s: %s left the floor (%s)", path, json_string_value(v), FLOOR_FILE);
    json_decref(lost);
    json_decref(gained);
    json_decref(report);
    if (!crash && !fail && !timeout && !nlost) {
        remove(json_path);
        remove(log_path);
    }
}

Test(conformance, onnx_backend_tests, .timeout = 600) { check_run("host", NULL, 0); }

/* Partitioned for a backend: what the backend does not take stays on the host. */
Test(conformance, backend_json, .timeout = 600) { check_run("json", (const char *[]){"--backend", "json"}, 2); }
Test(conformance, backend_dnnl, .timeout = 600) { check_run("dnnl", (const char *[]){"--backend", "dnnl"}, 2); }
/* Through `graft build` -> load -> run: LLVM-compiled host kernels, planned memory. */
Test(conformance, host_llvm, .timeout = 600) { check_run("llvm", (const char *[]){"--host", "llvm"}, 2); }

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    cr_assert(in && out, "copy %s -> %s", from, to);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0) cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

/* A test directory under root: test_relu's model and input with `output`'s expected data. */
static void make_relu_test(const char *root, const char *name, const char *output) {
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", root, name);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/%s/test_data_set_0", root, name);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/%s/model.onnx", root, name);
    copy_file(TESTDATA "/node/test_relu/model.onnx", p);
    snprintf(p, sizeof(p), "%s/%s/test_data_set_0/input_0.pb", root, name);
    copy_file(TESTDATA "/node/test_relu/test_data_set_0/input_0.pb", p);
    snprintf(p, sizeof(p), "%s/%s/test_data_set_0/output_0.pb", root, name);
    copy_file(output, p);
}

/* A test whose expected output is another op's output must fail (with its error), and one
 * whose model is garbage must fail at import: the runner can tell a wrong answer. The floor
 * then names the failing test as lost and the passing one it does not list as a new pass. */
Test(conformance, runner_reports_failures, .timeout = 60) {
    if (!path_is_file(TESTDATA "/node/test_relu/model.onnx"))
        cr_skip("libonnx-testdata is not installed (make deps)");
    char root[] = "/tmp/graft_conf_runner_XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char p[512], q[512];
    make_relu_test(root, "test_relu_ok", TESTDATA "/node/test_relu/test_data_set_0/output_0.pb");
    /* test_abs's expected output (also 3x4x5 float32, other values) */
    make_relu_test(root, "test_relu_wrong", TESTDATA "/node/test_abs/test_data_set_0/output_0.pb");
    /* A model file that is not protobuf. */
    snprintf(p, sizeof(p), "%s/test_garbage", root);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/test_garbage/model.onnx", root);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fputs("\xff\xff\xff\xff not an onnx model", f);
    fclose(f);

    char json_path[600], log_path[600];
    snprintf(json_path, sizeof(json_path), "%s/report.json", root);
    snprintf(log_path, sizeof(log_path), "%s/log.txt", root);
    const char *args[] = {root};
    int rc = run_conformance(args, 1, json_path, log_path);
    cr_assert_eq(rc, 1, "a run with failures must exit 1, got %d (log %s)", rc, log_path);
    json_error_t jerr;
    json_t *report = json_load_file(json_path, 0, &jerr);
    cr_assert_not_null(report, "%s: %s", json_path, jerr.text);
    json_t *tests = json_object_get(report, "tests");
    cr_assert_eq(json_array_size(tests), 3);
    size_t i;
    json_t *t;
    json_array_foreach(tests, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *status = json_string_value(json_object_get(t, "status"));
        const char *reason = json_string_value(json_object_get(t, "reason"));
        if (strcmp(name, "test_garbage") == 0) {
            cr_expect_str_eq(status, "fail", "garbage model: %s (%s)", status, reason);
            cr_expect(strstr(reason, "import") != NULL, "garbage model reason: %s", reason);
        } else if (strcmp(name, "test_relu_ok") == 0) {
            cr_expect_str_eq(status, "pass", "test_relu with its own data: %s (%s)", status, reason);
        } else {
            cr_assert_str_eq(name, "test_relu_wrong");
            cr_expect_str_eq(status, "fail", "wrong expected data: %s (%s)", status, reason);
            json_t *err = json_object_get(t, "max_abs_err");
            /* two unrelated standard-normal draws: some value differs by far more than 0.1 */
            cr_expect(json_is_number(err) && json_number_value(err) > 0.1,
                      "max_abs_err should be large, reason: %s", reason);
        }
    }
    /* a floor that names test_relu_wrong (as if it had passed before) and not test_relu_ok */
    const char *dir = strrchr(root, '/') + 1;
    char floor_path[600];
    snprintf(floor_path, sizeof(floor_path), "%s/floor.json", root);
    json_t *floor = json_pack("{s:{s:[s+]}}", "pass", "host", dir, "/test_relu_wrong");
    cr_assert_eq(json_dump_file(floor, floor_path, 0), 0);
    json_decref(floor);
    json_t *lost, *gained;
    check_floor(floor_path, "host", tests, &lost, &gained);
    snprintf(p, sizeof(p), "%s/test_relu_wrong: fail: ", dir);
    cr_expect(json_array_size(lost) == 1 && strncmp(json_string_value(json_array_get(lost, 0)), p, strlen(p)) == 0,
              "lost: %s", json_dumps(lost, 0));
    snprintf(p, sizeof(p), "%s/test_relu_ok", dir);
    cr_expect(json_array_size(gained) == 1 && strcmp(json_string_value(json_array_get(gained, 0)), p) == 0,
              "gained: %s", json_dumps(gained, 0));
    json_decref(lost);
    json_decref(gained);
    json_decref(report);
    snprintf(q, sizeof(q), "rm -rf '%s'", root);
    cr_expect_eq(system(q), 0);
}
