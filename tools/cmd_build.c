/* graft build / graft run MODEL.graft (tools/cmd_build.h). */
#include "tools/cmd_build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "byoc/byoc.h"
#include "deploy/graft_model.h"
#include "ir/transform/transform.h"
#include "runtime/npy.h"
#include "tools/cli.h"
#include "tools/profile.h"

#define MAX_INPUTS 64

int cmd_build(int argc, char **argv) {
    static cli_load_opts lo;
    memset(&lo, 0, sizeof lo);
    const char *input = NULL, *output = NULL, *v;
    const char *backends[8];
    uint32_t nbackends = 0;
    bool opt = true;
    cli_fuse_args fa = {0};
    int fr;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (strcmp(argv[i], "--no-opt") == 0) {
            opt = false;
        } else if (cli_opt(argc, argv, &i, "-o", &output, &missing) ||
            cli_opt(argc, argv, &i, "--output", &output, &missing)) {
            if (missing) return cli_usage_error("build", "-o needs a file");
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error("build", "--input-shape takes NAME=DIMxDIM...");
        } else if (cli_opt(argc, argv, &i, "--backend", &v, &missing)) {
            if (missing || !byoc_backend_find(v) || nbackends == 8)
                return cli_usage_error("build", "--backend needs a registered backend (see graft backends)");
            backends[nbackends++] = v;
        } else if ((fr = cli_fuse_arg(argc, argv, &i, &fa, "build")) != 0) {
            if (fr < 0) return CLI_USAGE;
        } else if ((fr = cli_backend_opt_arg(argc, argv, &i, "build")) >= 0) {
            if (fr) return fr;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("build", "unknown option '%s'", argv[i]);
        } else if (!input) {
            input = argv[i];
        } else {
            return cli_usage_error("build", "more than one input ('%s')", argv[i]);
        }
    }
    if (!input) return cli_usage_error("build", "no input model");
    if (!output) return cli_usage_error("build", "no output file (-o MODEL.graft)");
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    int rc = CLI_OK;
    double t0 = cli_now_ms(), t_opt = 0;
    ir_module *part = NULL;
    /* The default pipeline first (batch norms folded into convs or decomposed into elementwise
     * ops the host kernels fuse, constants folded, dead code gone), as relax.build does;
     * --no-opt builds the module as imported. */
    gr_status st = cli_load_model(ctx, input, &lo, &m, &d);
    if (!st && opt) {
        double a = cli_now_ms();
        st = ir_pass_run(ir_pass_default_pipeline(), NULL, m, &m, &d);
        t_opt = cli_now_ms() - a;
    }
    byoc_fuse_opts fo = cli_fuse_opts(&fa);
    byoc_partition_opts po = {0};
    po.fuse = &fo;
    po.options = cli_backend_options();
    if (st || (nbackends && byoc_partition(ctx, m, backends, nbackends, &po, &part, &d) != GR_OK)) {
        rc = cli_fail(&d, input);
    } else {
        if (part) m = part;
        double t1 = cli_now_ms();
        if (graft_model_build_file(m, output, &d) != GR_OK) {
            rc = cli_fail(&d, input);
        } else {
            double t2 = cli_now_ms();
            graft_model *gm = NULL;
            if (graft_model_load_opts(output, cli_backend_options(), &gm, &d) != GR_OK) {
                rc = cli_fail(&d, output);
            } else {
                graft_model_info in;
                graft_model_get_info(gm, &in);
                fprintf(stderr,
                        "built %s: %u host kernels (%u fused ops), %u reference ops, %u extern calls, arena %zu bytes "
                        "(intermediates %zu bytes, %u planned buffers), host object %zu bytes; import "
                        "+ %s + partition %.1f ms (passes %.1f ms), build %.1f ms, load %.1f ms\n",
                        output, in.nhost, in.nfused_ops, in.nkernel, in.nextern, in.arena_bytes,
                        in.intermediate_bytes, in.nplanned, in.host_object_bytes,
                        opt ? "default pipeline" : "no passes", t1 - t0, t_opt, t2 - t1,
                        (double)in.load_ns / 1e6);
                graft_model_free(gm);
            }
        }
    }
    ir_ctx_free(ctx);
    return rc;
}

/* ---- run ---- */

int cmd_run_artifact(int argc, char **argv) {
    static cli_load_opts lo; /* only its --input-shape entries: random inputs of that shape */
    memset(&lo, 0, sizeof lo);
    static char names[MAX_INPUTS][256];
    static const char *sources[MAX_INPUTS];
    uint32_t nspecs = 0;
    const char *input = NULL, *out_dir = NULL, *json = NULL, *v;
    bool profile = false;
    long repeat = 0;
    double *times = NULL;
    int br;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "--output-dir", &out_dir, &missing)) {
            if (missing) return cli_usage_error("run", "--output-dir needs a directory");
        } else if (cli_opt(argc, argv, &i, "--profile-json", &json, &missing)) {
            if (missing) return cli_usage_error("run", "--profile-json needs a file");
        } else if (strcmp(argv[i], "--profile") == 0) {
            profile = true;
        } else if (cli_opt(argc, argv, &i, "--input", &v, &missing)) {
            const char *eq = v ? strrchr(v, '=') : NULL;
            if (missing || !eq || eq == v || nspecs == MAX_INPUTS || (size_t)(eq - v) >= 256)
                return cli_usage_error("run", "--input takes NAME=FILE.npy or NAME=random");
            memcpy(names[nspecs], v, (size_t)(eq - v));
            names[nspecs][eq - v] = '\0';
            sources[nspecs++] = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error("run", "--input-shape takes NAME=DIMxDIM...");
        } else if (cli_opt(argc, argv, &i, "--repeat", &v, &missing)) {
            char *end;
            repeat = missing ? -1 : strtol(v, &end, 10);
            if (missing || *end || repeat < 1 || repeat > 100000)
                return cli_usage_error("run", "--repeat takes a count from 1 to 100000");
        } else if ((br = cli_backend_opt_arg(argc, argv, &i, "run")) >= 0) {
            if (br) return br;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("run", "unknown option '%s' for a .graft model", argv[i]);
        } else if (!input) {
            input = argv[i];
        } else {
            return cli_usage_error("run", "more than one input ('%s')", argv[i]);
        }
    }
    if (!input) return cli_usage_error("run", "no input model");
    gr_diag d;
    gr_diag_clear(&d);
    graft_model *gm = NULL;
    if (graft_model_load_opts(input, cli_backend_options(), &gm, &d) != GR_OK) return cli_fail(&d, input);
    int rc = CLI_ERR;
    rt_value args[MAX_INPUTS], result = {0};
    uint32_t nargs = 0, nin = graft_model_num_inputs(gm);
    prof_state ps;
    prof_init(&ps, gm);
    if (nin > MAX_INPUTS) {
        fprintf(stderr, "error: %s: too many inputs (%u)\n", input, nin);
        goto done;
    }
    for (uint32_t s = 0; s < nspecs; s++) {
        bool found = false;
        for (uint32_t i = 0; i < nin; i++) found |= strcmp(graft_model_input_name(gm, i), names[s]) == 0;
        if (!found) {
            fprintf(stderr, "error: %s: the model has no input '%s'\n", input, names[s]);
            goto done;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        const char *name = graft_model_input_name(gm, i), *src = "random";
        for (uint32_t s = 0; s < nspecs; s++)
            if (strcmp(names[s], name) == 0) src = sources[s];
        rt_tensor *t = NULL;
        bool rnd = strcmp(src, "random") == 0;
        gr_status st = rnd ? cli_random_input(name, graft_model_input_sinfo(gm, i), &lo, i + 1, &t, &d)
                           : rt_npy_load(src, &t, &d);
        if (st != GR_OK) {
            rc = cli_fail(&d, rnd ? input : src);
            goto done;
        }
        args[nargs++] = rt_value_tensor(t);
    }
    if (json && !prof_open_trace(&ps, json)) goto done;
    /* With --repeat the first run is a warm-up and stays out of the profile: it pays the first
     * touch of every fresh output page (tens of ms on a VM), which would swamp the means. */
    if ((profile || json) && repeat == 0) {
        graft_model_set_profiler(gm, prof_on_event, &ps);
        prof_dnnl(&ps);
    }
    /* One run gives the outputs (and warms up); --repeat N times N more, like graft run. */
    if (graft_model_run(gm, args, nargs, &result, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    uint32_t runs = 1, profiled = repeat ? 0 : 1;
    if ((profile || json) && repeat > 0) {
        graft_model_set_profiler(gm, prof_on_event, &ps);
        prof_dnnl(&ps);
    }
    if (repeat > 0) {
        times = malloc(sizeof(double) * (size_t)repeat);
        if (!times) goto done;
        for (long r = 0; r < repeat; r++, runs++, profiled++) {
            rt_value again = {0};
            ps.run = runs;
            double t0 = cli_now_ms();
            gr_status st = graft_model_run(gm, args, nargs, &again, &d);
            times[r] = cli_now_ms() - t0;
            rt_value_clear(&again);
            if (st != GR_OK) {
                rc = cli_fail(&d, input);
                goto done;
            }
        }
        cli_print_latency(times, repeat);
    }
    if (out_dir && cli_write_outputs(&result, out_dir, &d) != CLI_OK) goto done;
    prof_dnnl(NULL);
    if (profile) prof_print(&ps, profiled);
    rc = CLI_OK;
done:
    free(times);
    prof_dnnl(NULL);
    if (!prof_finish(&ps)) rc = CLI_ERR;
    rt_value_clear(&result);
    for (uint32_t i = 0; i < nargs; i++) rt_value_clear(&args[i]);
    graft_model_free(gm);
    return rc;
}
