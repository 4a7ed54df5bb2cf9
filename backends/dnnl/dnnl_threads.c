/* oneDNN's thread team: how many threads, and pinning them one per CPU (see dnnl.h).
 *
 * Debian's oneDNN runs on OpenMP (libgomp comes in through libdnnl) and splits each primitive
 * statically over the team, so a primitive ends when its slowest thread does. On a VM an
 * idle vCPU looks busy to the scheduler, and a worker woken after an idle spell lands on
 * the caller's CPU: both halves then run on one core while the caller spins at the barrier
 * (mobilenet_v3 at 2 threads: 3.7 ms back to back, 15 ms when a run follows 100 ms of idle).
 * Pinning thread k of the team to the k-th allowed CPU keeps them apart, as
 * OMP_PROC_BIND=true would, but it must be done from inside the team since libgomp reads
 * that variable only when it loads. The workers stay pinned; the calling thread only while
 * it runs a region. We reach libgomp through dlsym so as not to link it.
 *
 * The team size is each region's own (its model's dnnl.threads): OpenMP's nthreads-var is a
 * per-thread setting, which oneDNN reads when it creates a primitive and when it runs one, so
 * a region sets it on the calling thread around its prepare and its run and puts the caller's
 * back afterwards. Two models with different counts can so share a process, and a thread. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_impl.h"

/* What the process has: set once, read by every region. */
static int g_cpus[CPU_SETSIZE]; /* the CPUs this process may use, in order */
static int g_ncpus;
static int g_default;           /* threads when a model asks for 0: every CPU it may use */
static void (*g_set_n)(int);
static int (*g_get_max)(void);
static void (*g_gomp_parallel)(void (*)(void *), void *, unsigned, unsigned);
static int (*g_thread_num)(void);
static int (*g_team_size)(void);
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* workers of the calling thread's libgomp team pinned so far (libgomp keeps one team per
 * calling thread and reuses its workers in order) */
static _Thread_local int tl_pinned;

/* a bound on what a model may ask for: libgomp would try to start them all */
enum { RT_DNNL_MAX_THREADS = 1024 };

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

/* ISO C has no object -> function pointer conversion */
#define LOAD(fp, name)                                                                                                 \
    do {                                                                                                               \
        void *p_ = sym(name);                                                                                          \
        memcpy(&(fp), &p_, sizeof(fp));                                                                                \
    } while (0)

static void threads_init(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) g_cpus[g_ncpus++] = c;
    long n = g_ncpus > 0 ? g_ncpus : sysconf(_SC_NPROCESSORS_ONLN);
    g_default = n > 0 ? (int)n : 1;
    LOAD(g_set_n, "omp_set_num_threads");
    LOAD(g_get_max, "omp_get_max_threads");
    LOAD(g_gomp_parallel, "GOMP_parallel");
    LOAD(g_thread_num, "omp_get_thread_num");
    LOAD(g_team_size, "omp_get_num_threads");
}

int rt_dnnl_threads(const rt_dnnl_opts *o) {
    pthread_once(&g_once, threads_init);
    if (!o || o->threads <= 0) return g_default;
    return o->threads < RT_DNNL_MAX_THREADS ? (int)o->threads : RT_DNNL_MAX_THREADS;
}

int rt_dnnl_team_threads(void) {
    pthread_once(&g_once, threads_init);
    return g_get_max ? g_get_max() : 1;
}

static void pin_cpu(int k) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(g_cpus[k % g_ncpus], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void pin_worker(void *unused) {
    (void)unused;
    int k = g_thread_num();
    if (k > 0) pin_cpu(k);
}

void rt_dnnl_team_begin(rt_dnnl_team *t, int threads, bool single, bool bind) {
    pthread_once(&g_once, threads_init);
    t->pinned = false;
    t->saved_n = 0;
    int want = single ? 1 : threads;
    /* the fast path: a thread that keeps running regions of one model sets nothing */
    if (g_set_n && g_get_max && (t->saved_n = g_get_max()) != want) g_set_n(want);
    /* more threads than CPUs would pile two on one CPU for good: leave those to the scheduler */
    if (!bind || !g_set_n || !g_gomp_parallel || !g_thread_num || threads < 2 || threads > g_ncpus) return;
    if (tl_pinned < threads) g_gomp_parallel(pin_worker, NULL, (unsigned)threads, 0);
    if (tl_pinned < threads) tl_pinned = threads;
    /* the caller is the team's thread 0; its own mask comes back at rt_dnnl_team_end, so what
     * it does (or forks) outside a run is not confined */
    if (pthread_getaffinity_np(pthread_self(), sizeof t->saved_mask, &t->saved_mask)) return;
    pin_cpu(0);
    t->pinned = true;
}

void rt_dnnl_team_end(rt_dnnl_team *t) {
    if (t->pinned) pthread_setaffinity_np(pthread_self(), sizeof t->saved_mask, &t->saved_mask);
    if (t->saved_n > 0 && g_get_max() != t->saved_n) g_set_n(t->saved_n);
}

typedef struct par_job {
    void (*fn)(void *, int, int);
    void *ctx;
} par_job;

static void par_body(void *arg) {
    const par_job *j = arg;
    j->fn(j->ctx, g_thread_num(), g_team_size());
}

void rt_dnnl_parallel(void (*fn)(void *ctx, int ithr, int nthr), void *ctx) {
    pthread_once(&g_once, threads_init);
    if (!g_gomp_parallel || !g_thread_num || !g_team_size) {
        fn(ctx, 0, 1);
        return;
    }
    par_job j = {fn, ctx};
    /* 0 threads: the calling thread's team size, the one oneDNN's primitives get (set by
     * rt_dnnl_team_begin) */
    g_gomp_parallel(par_body, &j, 0, 0);
}
