/* graft run: run a model (imported and compiled here, or a built .graft artifact through the
 * loader, with no compiler in the loop), write outputs as .npy, time repeated runs, profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "byoc/byoc.h"
#include "runtime/exec/executor.h"
#include "deploy/graft_model.h"
#include "runtime/json/json_runtime.h"
#include "runtime/npy.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/profile.h"

#define MAX_INPUTS 64

typedef struct input_spec {
    char name[256];
    const char *source; /* a .npy path, "random", or a list "a.npy,b.npy" (a sequence) */
    rt_value seq;       /* a list: the tuple of its tensors */
    onnx_input_shape *shapes;
} input_spec;

/* A sequence (or optional) input is given as a comma-separated list of .npy files: "a.npy,b.npy",
 * "a.npy," (one element: a present optional), "" (empty: an empty sequence, an absent optional). */
static bool is_list(const char *src) { return !*src || strchr(src, ','); }

static gr_status load_list(input_spec *sp, onnx_input_seq *q, gr_diag *d) {
    sp->seq = rt_value_tuple(0);
    const char *p = sp->source;
    uint32_t n = 0;
    for (const char *c = p; *c; c++) n += *c == ',';
    sp->shapes = gr_xcalloc(n + 2, sizeof(onnx_input_shape));
    sp->seq.u.tuple.items = gr_xcalloc(n + 2, sizeof(rt_value));
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char path[4096];
        if (len == 0 || len >= sizeof(path)) return gr_diag_set(d, GR_ERR_INVALID, "--input %s: an empty or too long file name", sp->name);
        memcpy(path, p, len);
        path[len] = 0;
        rt_tensor *t = NULL;
        gr_status st = rt_npy_load(path, &t, d);
        if (st != GR_OK) return st;
        uint32_t k = sp->seq.u.tuple.n++;
        sp->seq.u.tuple.items[k] = rt_value_tensor(t);
        sp->shapes[k].ndim = t->dl.ndim;
        for (int32_t j = 0; j < t->dl.ndim; j++) sp->shapes[k].dims[j] = t->dl.shape[j];
        p = end ? end + 1 : p + len;
    }
    *q = (onnx_input_seq){.name = sp->name, .n = sp->seq.u.tuple.n, .inner = -1, .elems = sp->shapes};
    return GR_OK;
}

/* What runs: a loaded artifact, or a model compiled here (and its runtime modules). */
typedef struct runner {
    graft_model *gm;
    rt_exec_t *x;
    const ir_module *m;
} runner;

static uint32_t rn_num_inputs(const runner *r) {
    return r->gm ? graft_model_num_inputs(r->gm) : rt_exec_num_inputs(r->x);
}
static const char *rn_input_name(const runner *r, uint32_t i) {
    return r->gm ? graft_model_input_name(r->gm, i) : rt_exec_input_name(r->x, i);
}
static const ir_sinfo *rn_input_sinfo(const runner *r, uint32_t i) {
    return r->gm ? graft_model_input_sinfo(r->gm, i) : rt_exec_input_sinfo(r->x, i);
}
static gr_status rn_run(runner *r, const rt_value *args, uint32_t n, rt_value *out, gr_diag *d) {
    return r->gm ? graft_model_run(r->gm, args, n, out, d) : rt_exec_run(r->x, args, n, out, d);
}

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* graft run --profile on an artifact: where start-up went, phase by phase, then the first run
 * (which pays the first touch of the activations). */
static void print_load(const char *path, const graft_model *gm, double first_ms, double first_cpu) {
    graft_model_info in;
    graft_model_get_info(gm, &in);
    fprintf(stderr, "load %s (%.1f MB, constants %.1f MB mapped): %.1f ms:", path, (double)in.file_bytes / 1e6,
            (double)in.const_bytes / 1e6, (double)in.load_ns / 1e6);
    for (uint32_t i = 0; i < GRAFT_MODEL_NPHASES; i++)
        fprintf(stderr, "%s %s %.1f ms (cpu %.1f)", i ? "," : "", graft_model_phase_name(i), (double)in.phase_ns[i] / 1e6,
                (double)in.phase_cpu_ns[i] / 1e6);
    fprintf(stderr, "; first run %.1f ms (cpu %.1f)", first_ms, first_cpu);
    if (in.npacked)
        fprintf(stderr, "; prepacked weights: %u used in place, %u laid out again (%u from their prepacked form)",
                in.npacked_used, in.nrepacked, in.nunpacked);
    fputc('\n', stderr);
}

/* Profiling on (ps) or off (NULL): the executor's events, each primitive of this model's
 * regions, and region prepares. */
static void rn_profile(runner *r, prof_state *ps) {
    rt_exec_profile_fn ev = ps ? prof_on_event : NULL;
    rt_prim_profile_fn prim = ps ? prof_on_prim : NULL;
    rt_json_prepare_fn prep = ps ? prof_on_prepare : NULL;
    if (r->gm) {
        graft_model_set_profiler(r->gm, ev, ps);
        graft_model_set_prim_profiler(r->gm, prim, ps);
        graft_model_set_prepare_observer(r->gm, prep, ps);
    } else if (r->x) {
        rt_exec_set_profiler(r->x, ev, ps);
        rt_module_set_profilers(r->m, prim, ps);
        rt_json_set_prepare_observers(r->m, prep, ps);
    }
}

int cmd_run(int argc, char **argv) {
    static cli_load_opts lo;
    const char *backends[CLI_MAX_BACKENDS];
    uint32_t nbackends = 0;
    static input_spec specs[MAX_INPUTS];
    static onnx_input_seq seqs[MAX_INPUTS];
    memset(&lo, 0, sizeof(lo));
    lo.optimize = true;
    memset(specs, 0, sizeof(specs));
    uint32_t nspecs = 0;
    const char *input = NULL, *out_dir = NULL, *json = NULL, *v;
    bool profile = false;
    long repeat = 0;
    int br;
    for (int i = 0; i < argc; i++) {
        bool missing = false;
        if (cli_opt(argc, argv, &i, "--output-dir", &out_dir, &missing)) {
            if (missing) return cli_usage_error("run", "--output-dir needs a directory");
        } else if (cli_opt(argc, argv, &i, "--input-shape", &v, &missing)) {
            if (missing || !cli_add_input_shape(&lo, v))
                return cli_usage_error("run", "--input-shape takes NAME=DIMxDIM...");
        } else if (cli_opt(argc, argv, &i, "--input", &v, &missing)) {
            const char *eq = v ? strrchr(v, '=') : NULL;
            if (missing || !eq || eq == v || nspecs == MAX_INPUTS || (size_t)(eq - v) >= 256)
                return cli_usage_error("run", "--input takes NAME=FILE.npy, NAME=A.npy,B.npy (a sequence) or NAME=random");
            memcpy(specs[nspecs].name, v, (size_t)(eq - v));
            specs[nspecs].name[eq - v] = '\0';
            specs[nspecs++].source = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--repeat", &v, &missing)) {
            char *end;
            repeat = missing ? -1 : strtol(v, &end, 10);
            if (missing || *end || repeat < 1 || repeat > 100000)
                return cli_usage_error("run", "--repeat takes a count from 1 to 100000");
        } else if ((br = cli_backend_arg(argc, argv, &i, backends, &nbackends, "run")) != 0) {
            if (br < 0) return CLI_USAGE;
        } else if ((br = cli_backend_opt_arg(argc, argv, &i, "run")) >= 0) {
            if (br) return br;
        } else if (cli_opt(argc, argv, &i, "--profile-json", &json, &missing)) {
            if (missing) return cli_usage_error("run", "--profile-json needs a file");
        } else if (strcmp(argv[i], "--profile") == 0) {
            profile = true;
        } else if (strcmp(argv[i], "--no-opt") == 0) {
            lo.optimize = false;
        } else if ((br = cli_input_arg(argv[i], &input, "run")) != CLI_OK) {
            return br;
        }
    }
    if (!input) return cli_usage_error("run", "no input model");
    /* an artifact was partitioned and optimized when it was built */
    bool artifact = cli_ends_with(input, ".graft");
    if (artifact && (nbackends || !lo.optimize))
        return cli_usage_error("run", "%s for a .graft model: it was chosen when the model was built",
                               nbackends ? "--backend" : "--no-opt");

    int rc = CLI_ERR;
    ir_ctx_t *ctx = NULL;
    ir_module *m = NULL;
    runner rn = {0};
    rt_value args[MAX_INPUTS];
    uint32_t nargs = 0;
    rt_value result = {0};
    double *times = NULL, compile_ms[4] = {0, 0, 0, 0}; /* import, the rest: wall, cpu */
    gr_diag d;
    gr_diag_clear(&d);
    prof_state ps;
    prof_init(&ps, NULL);
    byoc_partition_opts po = {0};
    po.options = cli_backend_options();
    /* the regions' weights belong to their runtime modules: not held twice */
    po.release_consts = true;
    for (uint32_t s = 0; s < nspecs; s++) {
        if (!is_list(specs[s].source)) continue;
        if (load_list(&specs[s], &seqs[lo.nseqs++], &d) != GR_OK) {
            rc = cli_fail(&d, input);
            goto done;
        }
    }
    lo.seqs = seqs;
    if (artifact) {
        if (graft_model_load_opts(input, cli_backend_options(), &rn.gm, &d) != GR_OK) {
            rc = cli_fail(&d, input);
            goto done;
        }
        prof_init(&ps, rn.gm);
        graft_model_info in;
        graft_model_get_info(rn.gm, &in);
        if (in.nrepacked)
            fprintf(stderr, "note: %s: %u weights laid out again at load: the artifact's prepacked forms were made "
                    "for another CPU, oneDNN or dnnl.precision (rebuild it here, or load it with its options, to skip this)\n", input, in.nrepacked);
    } else {
        ctx = ir_ctx_new();
        double c0 = cli_now_ms(), u0 = cpu_ms();
        gr_status st = cli_load_model(ctx, input, &lo, &m, &d);
        double c1 = cli_now_ms(), u1 = cpu_ms();
        if (st != GR_OK || (nbackends && byoc_partition(ctx, m, backends, nbackends, &po, &m, &d) != GR_OK) ||
            rt_exec_new(m, "main", &rn.x, &d) != GR_OK) {
            rc = cli_fail(&d, input);
            goto done;
        }
        compile_ms[0] = c1 - c0;
        compile_ms[1] = cli_now_ms() - c1;
        compile_ms[2] = u1 - u0;
        compile_ms[3] = cpu_ms() - u1;
        rn.m = m;
    }
    uint32_t nin = rn_num_inputs(&rn);
    if (nin > MAX_INPUTS) {
        fprintf(stderr, "error: %s: too many inputs (%u)\n", input, nin);
        goto done;
    }
    for (uint32_t s = 0; s < nspecs; s++) {
        bool found = false;
        for (uint32_t i = 0; i < nin; i++) found |= strcmp(rn_input_name(&rn, i), specs[s].name) == 0;
        if (!found) {
            fprintf(stderr, "error: %s: the model has no input '%s'\n", input, specs[s].name);
            goto done;
        }
    }
    for (uint32_t i = 0; i < nin; i++) {
        const char *name = rn_input_name(&rn, i), *src = "random";
        const input_spec *list = NULL;
        for (uint32_t s = 0; s < nspecs; s++)
            if (strcmp(specs[s].name, name) == 0) src = specs[s].source, list = is_list(src) ? &specs[s] : NULL;
        if (list) {
            args[nargs++] = rt_value_copy(&list->seq);
            continue;
        }
        rt_tensor *t = NULL;
        bool rnd = strcmp(src, "random") == 0;
        /* an artifact's symbolic dims take their random size from --input-shape */
        gr_status st = rnd ? cli_random_input(name, rn_input_sinfo(&rn, i), artifact ? &lo : NULL, i + 1, &t, &d)
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
    bool prof_on = profile || json;
    if (prof_on && repeat == 0) rn_profile(&rn, &ps);
    double first0 = cli_now_ms(), firstc = cpu_ms();
    if (rn_run(&rn, args, nargs, &result, &d) != GR_OK) {
        rc = cli_fail(&d, input);
        goto done;
    }
    if (profile && rn.gm) print_load(input, rn.gm, cli_now_ms() - first0, cpu_ms() - firstc);
    else if (profile)
        fprintf(stderr, "compile %s: import %.1f ms (cpu %.1f), partition + prepare + plan %.1f ms (cpu %.1f); first run %.1f ms (cpu %.1f)\n",
                input, compile_ms[0], compile_ms[2], compile_ms[1], compile_ms[3], cli_now_ms() - first0, cpu_ms() - firstc);
    if (out_dir && cli_write_outputs(&result, out_dir, &d) != CLI_OK) goto done;
    uint32_t profiled = repeat ? 0 : 1;
    if (prof_on && repeat > 0) rn_profile(&rn, &ps);
    if (repeat > 0) {
        times = malloc(sizeof(double) * (size_t)repeat);
        if (!times) goto done;
        for (long r = 0; r < repeat; r++, profiled++) {
            ps.run = (uint32_t)r + 1;
            rt_value again = {0};
            double t0 = cli_now_ms();
            gr_status st = rn_run(&rn, args, nargs, &again, &d);
            times[r] = cli_now_ms() - t0;
            rt_value_clear(&again);
            if (st != GR_OK) {
                rc = cli_fail(&d, input);
                goto done;
            }
        }
        cli_print_latency(times, repeat);
    }
    rn_profile(&rn, NULL);
    if (profile) prof_print(&ps, profiled);
    rc = CLI_OK;
done:
    free(times);
    rn_profile(&rn, NULL);
    if (!prof_finish(&ps)) rc = CLI_ERR;
    rt_value_clear(&result);
    for (uint32_t i = 0; i < nargs; i++) rt_value_clear(&args[i]);
    for (uint32_t s = 0; s < nspecs; s++) {
        rt_value_clear(&specs[s].seq);
        free(specs[s].shapes);
    }
    rt_exec_free(rn.x);
    graft_model_free(rn.gm);
    ir_ctx_free(ctx);
    return rc;
}
