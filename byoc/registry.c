/* The backend registry: the built-in backends (backends/builtin.c's list), plus any a program
 * registers at start-up. The passes, the artifact loader and `graft backends` find a backend
 * here. */
#include <pthread.h>
#include <string.h>

#include "byoc/byoc.h"

#define MAX_BACKENDS 32
static const byoc_backend *g_backends[MAX_BACKENDS];
static uint32_t g_nbackends;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void registry_init(void) {
    for (size_t i = 0; byoc_builtin_backends[i] && g_nbackends < MAX_BACKENDS; i++)
        g_backends[g_nbackends++] = byoc_builtin_backends[i];
}

void byoc_backend_register(const byoc_backend *b) {
    pthread_once(&g_once, registry_init);
    for (uint32_t i = 0; i < g_nbackends; i++)
        if (strcmp(g_backends[i]->name, b->name) == 0) {
            g_backends[i] = b;
            return;
        }
    if (g_nbackends < MAX_BACKENDS) g_backends[g_nbackends++] = b;
}

const byoc_backend *byoc_backend_find(const char *name) {
    pthread_once(&g_once, registry_init);
    for (uint32_t i = 0; i < g_nbackends; i++)
        if (strcmp(g_backends[i]->name, name) == 0) return g_backends[i];
    return NULL;
}

const byoc_backend *byoc_backend_for_kind(const char *kind) {
    pthread_once(&g_once, registry_init);
    for (uint32_t i = 0; i < g_nbackends && kind; i++)
        if (g_backends[i]->runtime_kind && g_backends[i]->load && strcmp(g_backends[i]->runtime_kind, kind) == 0)
            return g_backends[i];
    return NULL;
}

uint32_t byoc_backend_count(void) {
    pthread_once(&g_once, registry_init);
    return g_nbackends;
}

const byoc_backend *byoc_backend_at(uint32_t i) {
    pthread_once(&g_once, registry_init);
    return i < g_nbackends ? g_backends[i] : NULL;
}
