/* What int8 can gain over float32 at each oneDNN ISA: the sustained throughput of oneDNN's
 * float32 and u8 x s8 convolutions and matmuls on a few large shapes of the int8 zoo models,
 * one thread, at the native ISA and capped with ONEDNN_MAX_CPU_ISA.
 *
 *   build/bench/bench_int8_bound [--isa NAME]... [--ms N]
 *
 * --isa: native (oneDNN's choice on this CPU), or a value of ONEDNN_MAX_CPU_ISA (AVX512_CORE_AMX,
 * AVX512_CORE_VNNI, AVX512_CORE, AVX2, ...); default native, AVX512_CORE_VNNI, AVX512_CORE,
 * AVX2. Each ISA runs in a child process of its own (the cap is read once, when oneDNN starts),
 * with OMP_NUM_THREADS=1. Per shape and precision: primitive made with `any` layouts (src and
 * weights reordered once, outside the timing), run for --ms ms of the thread's CPU time
 * (default 150) after two warm-up runs; the figure is the best run's, in GOPS (2 x
 * multiply-adds per second of thread CPU time, which a loaded machine moves less than wall
 * time). int8: u8 source, s8 weights, s32 sums, float32 result with one output scale per
 * channel (graft's int8 convolutions). Below VNNI oneDNN's int8 kernels add pairs of products
 * in saturating 16-bit lanes, so graft runs 8-bit weights (ORT's quantizer) as two such
 * primitives (backends/dnnl/dnnl_op_quant.c): the `exact` column is half the int8 one there.
 * Prints the CPU model, each ISA's effective name and the implementations. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

typedef struct shape {
    const char *name;
    bool matmul;
    int64_t n, c, h, w, o, k, stride, pad; /* conv: NCHW source, O x C x k x k; matmul: M = n, K = c, N = o */
} shape;

static const shape SHAPES[] = {
    {"conv 7x7/2 3->64 @224 (resnet18 stem)", false, 1, 3, 224, 224, 64, 7, 2, 3},
    {"conv 3x3 64->64 @56 (resnet18 layer1)", false, 1, 64, 56, 56, 64, 3, 1, 1},
    {"conv 3x3 256->256 @14 (resnet18 layer3)", false, 1, 256, 14, 14, 256, 3, 1, 1},
    {"conv 3x3 512->512 @7 (resnet18 layer4)", false, 1, 512, 7, 7, 512, 3, 1, 1},
    {"conv 1x1 112->672 @14 (mobilenet_v3)", false, 1, 112, 14, 14, 672, 1, 1, 0},
    {"matmul 128x768 . 768x768", true, 128, 768, 0, 0, 768, 0, 0, 0},
};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        dnnl_status_t s_ = (x);                                                                    \
        if (s_ != dnnl_success) {                                                                  \
            fprintf(stderr, "bench_int8_bound: %s failed (%d)\n", #x, (int)s_);                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double thread_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double macs_of(const shape *s) {
    if (s->matmul) return (double)s->n * (double)s->c * (double)s->o;
    int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
    return (double)s->n * (double)s->o * (double)(oh * ow) * (double)(s->c * s->k * s->k);
}

/* A memory of md filled with a byte pattern (levels in range for u8 / s8, small floats). */
static dnnl_memory_t filled(dnnl_engine_t eng, const dnnl_memory_desc_t *md) {
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
    void *p;
    CHECK(dnnl_memory_get_data_handle(m, &p));
    size_t n = dnnl_memory_desc_get_size(md);
    if (md->data_type == dnnl_f32)
        for (size_t i = 0; i < n / 4; i++) ((float *)p)[i] = (float)(i % 13) * 0.01f;
    else
        for (size_t i = 0; i < n; i++) ((uint8_t *)p)[i] = (uint8_t)(i * 37 % 251);
    return m;
}

/* The primitive of shape s in precision int8 or float32, timed; its GOPS and implementation. */
static double run_one(dnnl_engine_t eng, dnnl_stream_t strm, const shape *s, bool int8, double budget_ms, const char **impl) {
    dnnl_data_type_t st = int8 ? dnnl_u8 : dnnl_f32, wt = int8 ? dnnl_s8 : dnnl_f32;
    dnnl_memory_desc_t src, wei, dst;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_attr_t attr;
    CHECK(dnnl_primitive_attr_create(&attr));
    int64_t O = s->o;
    float *scales = malloc(sizeof(float) * (size_t)O);
    for (int64_t i = 0; i < O; i++) scales[i] = 1e-3f * (float)(1 + i % 7);
    if (int8) CHECK(dnnl_primitive_attr_set_output_scales(attr, O, 1 << 1, scales));
    if (s->matmul) {
        dnnl_dims_t sd = {s->n, s->c}, wd = {s->c, s->o}, dd = {s->n, s->o};
        dnnl_memory_desc_init_by_tag(&src, 2, sd, st, dnnl_ab);
        dnnl_memory_desc_init_by_tag(&wei, 2, wd, wt, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab);
        dnnl_matmul_desc_t md;
        CHECK(dnnl_matmul_desc_init(&md, &src, &wei, NULL, &dst));
        CHECK(dnnl_primitive_desc_create(&pd, &md, attr, eng, NULL));
    } else {
        int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1, ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
        dnnl_dims_t sd = {s->n, s->c, s->h, s->w}, wd = {s->o, s->c, s->k, s->k}, dd = {s->n, s->o, oh, ow};
        dnnl_dims_t str = {s->stride, s->stride}, pad = {s->pad, s->pad};
        dnnl_memory_desc_init_by_tag(&src, 4, sd, st, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&wei, 4, wd, wt, dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any);
        dnnl_convolution_desc_t cd;
        CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei, NULL, &dst, str,
                                                 pad, pad));
        CHECK(dnnl_primitive_desc_create(&pd, &cd, attr, eng, NULL));
    }
    free(scales);
    dnnl_primitive_attr_destroy(attr);
    CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl));
    dnnl_memory_t ms = filled(eng, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
    dnnl_memory_t mw = filled(eng, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    dnnl_memory_t md = filled(eng, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    dnnl_memory_t mscr = NULL;
    if (smd && dnnl_memory_desc_get_size(smd)) CHECK(dnnl_memory_create(&mscr, smd, eng, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_t p;
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}, {DNNL_ARG_SCRATCHPAD, mscr}};
    int na = mscr ? 4 : 3;
    double best = 1e30, spent = 0;
    for (int it = 0; it < 2 || (spent < budget_ms && it < 2000); it++) {
        double t0 = thread_ms();
        CHECK(dnnl_primitive_execute(p, strm, na, args));
        CHECK(dnnl_stream_wait(strm));
        double t = thread_ms() - t0;
        if (it >= 2) {
            spent += t;
            if (t < best) best = t;
        }
    }
    dnnl_primitive_destroy(p);
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(md);
    if (mscr) dnnl_memory_destroy(mscr);
    /* the name lives in pd: copied before it goes */
    static char names[2][64];
    snprintf(names[int8], sizeof names[int8], "%s", *impl);
    *impl = names[int8];
    dnnl_primitive_desc_destroy(pd);
    return 2 * macs_of(s) / (best * 1e6);
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
    static const struct {
        dnnl_cpu_isa_t isa;
        const char *name;
    } t[] = {{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},   {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
             {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"}, {dnnl_cpu_isa_avx512_core, "avx512_core"},
             {dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},               {dnnl_cpu_isa_avx2, "avx2"},
             {dnnl_cpu_isa_avx, "avx"},                           {dnnl_cpu_isa_sse41, "sse41"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].isa == isa) return t[i].name;
    return "other";
}

/* The child: every shape at this process's ISA, one line each. */
static int child(const char *label, double budget_ms) {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    bool vnni = (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
                (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
    for (int i = 0; i < NSHAPES; i++) {
        const char *fi, *qi;
        double f = run_one(eng, strm, &SHAPES[i], false, budget_ms, &fi);
        double q = run_one(eng, strm, &SHAPES[i], true, budget_ms, &qi);
        double exact = vnni ? q : q / 2;
        printf("%-40s %-17s %-16s %9.1f  %-28s %9.1f %9.1f %6.2f\n", SHAPES[i].name, label, isa_name(dnnl_get_effective_cpu_isa()),
               f, qi, q, exact, exact / f);
        (void)fi;
        fflush(stdout);
    }
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return 0;
}

static void cpu_model(char *out, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    snprintf(out, n, "unknown CPU");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(out, n, "%s", strchr(line, ':') + 2);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    const char *isas[8];
    int nisa = 0;
    double budget = 150;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 1 < argc) return child(argv[i + 1], argc > i + 2 ? atof(argv[i + 2]) : budget);
        if (!strcmp(argv[i], "--isa") && i + 1 < argc && nisa < 8) isas[nisa++] = argv[++i];
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc) budget = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_int8_bound [--isa native|AVX512_CORE_AMX|AVX512_CORE_VNNI|AVX512_CORE|AVX2]... [--ms N]\n");
            return 2;
        }
    }
    if (!nisa) {
        static const char *dflt[] = {"native", "AVX512_CORE_VNNI", "AVX512_CORE", "AVX2"};
        for (int i = 0; i < 4; i++) isas[nisa++] = dflt[i];
    }
    char cpu[160];
    cpu_model(cpu, sizeof cpu);
    double load[3] = {0, 0, 0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(lf);
    }
    printf("oneDNN float32 vs u8 x s8 throughput, one thread, %s; GOPS = 2 x multiply-adds per second of thread CPU time, best "
           "run of %g ms; load average %.2f\n",
           cpu, budget, load[0]);
    printf("%-40s %-17s %-16s %9s  %-28s %9s %9s %6s\n", "shape", "cap", "isa", "f32_GOPS", "int8_impl", "int8_GOPS", "exact", "ex/f32");
    char ms[32];
    snprintf(ms, sizeof ms, "%g", budget);
    for (int i = 0; i < nisa; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            if (strcmp(isas[i], "native")) setenv("ONEDNN_MAX_CPU_ISA", isas[i], 1);
            else unsetenv("ONEDNN_MAX_CPU_ISA");
            setenv("OMP_NUM_THREADS", "1", 1);
            execl("/proc/self/exe", argv[0], "--child", isas[i], ms, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "bench_int8_bound: the %s run failed\n", isas[i]);
            return 1;
        }
    }
    return 0;
}
