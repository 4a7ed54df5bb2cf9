/* graft build (tools/cmd_build.h). */
#include "tools/cmd_build.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "byoc/byoc.h"
#include "deploy/artifact_impl.h"
#include "deploy/graft_model.h"
#include "ir/transform/transform.h"
#include "runtime/npy.h"
#include "tools/cli.h"

/* Removes the old artifact a build replaced (its name: arg); best effort, as the new one is in
 * place. */
static void *unlink_old(void *arg) {
    if (unlink(arg) != 0) fprintf(stderr, "graft build: warning: the replaced artifact stays as %s: %s\n", (char *)arg, strerror(errno));
    return NULL;
}

int cmd_build(int argc, char **argv) {
    static cli_load_opts lo;
    memset(&lo, 0, sizeof lo);
    const char *input = NULL, *output = NULL, *v;
    const char *backends[CLI_MAX_BACKENDS];
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
        } else if ((fr = cli_backend_arg(argc, argv, &i, backends, &nbackends, "build")) != 0) {
            if (fr < 0) return CLI_USAGE;
        } else if ((fr = cli_fuse_arg(argc, argv, &i, &fa, "build")) != 0) {
            if (fr < 0) return CLI_USAGE;
        } else if ((fr = cli_backend_opt_arg(argc, argv, &i, "build")) >= 0) {
            if (fr) return fr;
        } else if ((fr = cli_input_arg(argv[i], &input, "build")) != CLI_OK) {
            return fr;
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
    po.defer_prepare = true; /* the build prepares each region as it writes it */
    if (st || (nbackends && byoc_partition(ctx, m, backends, nbackends, &po, &part, &d) != GR_OK)) {
        rc = cli_fail(&d, input);
    } else {
        if (part) m = part;
        double t1 = cli_now_ms();
        char *old = NULL;
        pthread_t unlinker;
        bool unlinking = false;
        if (gr_art_build_file(m, output, &old, &d) != GR_OK) {
            rc = cli_fail(&d, input);
        } else {
            double t2 = cli_now_ms();
            /* the artifact it replaced goes on the other CPU, beside the check load */
            unlinking = old && pthread_create(&unlinker, NULL, unlink_old, old) == 0;
            if (old && !unlinking) unlink_old(old);
            /* the model and its prepared regions go before the check load (which reads the
             * whole file): not held twice, their pages handed back */
            ir_ctx_free(ctx);
            ctx = NULL;
#ifdef __GLIBC__
            malloc_trim(0);
#endif
            graft_model *gm = NULL;
            /* the check load: the file decodes, plans, links and prepares (its checksum was
             * computed as it was written) */
            if (gr_art_load_written(output, cli_backend_options(), &gm, &d) != GR_OK) {
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
        if (unlinking) pthread_join(unlinker, NULL);
        free(old);
    }
    ir_ctx_free(ctx);
    return rc;
}
