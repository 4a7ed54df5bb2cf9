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
 * it runs a region. We reach libgomp through dlsym so as not to link it. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/dnnl/dnnl.h"
#include "backends/dnnl/dnnl_impl.h"

static int g_threads;
static bool g_bind;
static int g_cpus[CPU_SETSIZE]; /* the CPUs this process may use, in order */
static int g_ncpus;
static void (*g_set_n)(int);
static void (*g_gomp_parallel)(void (*)(void *), void *, unsigned, unsigned);
static int (*g_thread_num)(void);
static int (*g_team_size)(void);
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local bool tl_pinned;
static rt_dnnl_thread_opts g_opts = {0, true};

void rt_dnnl_set_thread_options(const rt_dnnl_thread_opts *o) { g_opts = *o; }
const rt_dnnl_thread_opts *rt_dnnl_thread_options(void) { return &g_opts; }

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static void threads_init(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) g_cpus[g_ncpus++] = c;
    long n = g_ncpus > 0 ? g_ncpus : sysconf(_SC_NPROCESSORS_ONLN);
    const rt_dnnl_thread_opts *o = rt_dnnl_thread_options();
    if (o->threads > 0) n = o->threads;
    g_threads = n > 0 ? (int)n : 1;
    void *set_threads = sym("omp_set_num_threads"), *par = sym("GOMP_parallel"), *num = sym("omp_get_thread_num");
    memcpy(&g_set_n, &set_threads, sizeof g_set_n); /* ISO C has no object -> function pointer conversion */
    if (g_set_n) g_set_n(g_threads);
    memcpy(&g_gomp_parallel, &par, sizeof par);
    memcpy(&g_thread_num, &num, sizeof num);
    void *size = sym("omp_get_num_threads");
    memcpy(&g_team_size, &size, sizeof size);
    /* more threads than CPUs would pile two on one CPU for good: leave those to the scheduler */
    g_bind = o->bind && g_set_n && g_gomp_parallel && g_thread_num && g_threads > 1 && g_threads <= g_ncpus;
}

int rt_dnnl_num_threads(void) {
    pthread_once(&g_once, threads_init);
    return g_threads;
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

void rt_dnnl_pin_begin(rt_dnnl_pin *p) {
    p->on = false;
    rt_dnnl_num_threads();
    if (!g_bind) return;
    /* libgomp keeps one team per calling thread and reuses its workers: pin them once */
    if (!tl_pinned) g_gomp_parallel(pin_worker, NULL, (unsigned)g_threads, 0);
    tl_pinned = true;
    /* the caller is the team's thread 0; its own mask comes back at rt_dnnl_pin_end, so what
     * it does (or forks) outside a run is not confined */
    if (pthread_getaffinity_np(pthread_self(), sizeof p->saved, &p->saved)) return;
    pin_cpu(0);
    p->on = true;
}

void rt_dnnl_pin_end(rt_dnnl_pin *p) {
    if (p->on) pthread_setaffinity_np(pthread_self(), sizeof p->saved, &p->saved);
}

void rt_dnnl_team_single(bool on) {
    rt_dnnl_num_threads();
    if (g_set_n && g_threads > 1) g_set_n(on ? 1 : g_threads);
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
    rt_dnnl_num_threads();
    if (!g_gomp_parallel || !g_thread_num || !g_team_size) {
        fn(ctx, 0, 1);
        return;
    }
    par_job j = {fn, ctx};
    /* 0 threads: the team size oneDNN's primitives get (rt_dnnl_team_single included) */
    g_gomp_parallel(par_body, &j, 0, 0);
}
