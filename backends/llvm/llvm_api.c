/* libLLVM loaded on first use (llvm_api_impl.h). */
#include "backends/llvm/llvm_api_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define GR_STR_(x) #x
#define GR_STR(x) GR_STR_(x)
#define GR_LLVM_MAJOR_STR GR_STR(LLVM_VERSION_MAJOR)

/* The library's soname (Debian's, then upstream's), then the folder llvm-config named at build
 * time (GR_LLVM_LIBDIR, for a libLLVM outside the loader's path). */
#ifndef GR_LLVM_LIBDIR
#define GR_LLVM_LIBDIR "/usr/lib/llvm-" GR_LLVM_MAJOR_STR "/lib"
#endif
static const char *const lib_names[] = {
    "libLLVM-" GR_LLVM_MAJOR_STR ".so.1",
    "libLLVM-" GR_LLVM_MAJOR_STR ".so",
    GR_LLVM_LIBDIR "/libLLVM-" GR_LLVM_MAJOR_STR ".so",
};

gr_llvm_api gr_llvm;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool load_ok;
static char load_err[512];

/* dlsym returns void *; ISO C has no conversion to a function pointer, so its bits are copied. */
static bool sym(void *lib, const char *name, void *fp, size_t fp_size) {
    void *p = dlsym(lib, name);
    if (!p) {
        const char *e = dlerror();
        snprintf(load_err, sizeof load_err, "libLLVM-%s lacks %s (%s)", GR_LLVM_MAJOR_STR, name, e ? e : "?");
        return false;
    }
    memcpy(fp, &p, fp_size);
    return true;
}

static void load(void) {
    void *lib = NULL;
    char first[256] = "";
    for (size_t i = 0; i < sizeof lib_names / sizeof *lib_names && !lib; i++) {
        lib = dlopen(lib_names[i], RTLD_NOW | RTLD_LOCAL);
        const char *e = lib ? NULL : dlerror();
        if (i == 0 && e) snprintf(first, sizeof first, "%s", e);
    }
    if (!lib) {
        snprintf(load_err, sizeof load_err, "cannot load libLLVM-%s, which host code needs (install LLVM %s's "
                 "shared library): %s", GR_LLVM_MAJOR_STR, GR_LLVM_MAJOR_STR, first);
        return;
    }
#define GR_LLVM_SYM(f) if (!sym(lib, #f, &gr_llvm.f, sizeof gr_llvm.f)) return;
    GR_LLVM_FUNCTIONS(GR_LLVM_SYM)
#undef GR_LLVM_SYM
    /* LLVMInitializeNativeTarget / AsmPrinter are inline in Target.h; their parts by name */
    static const char *const init[] = {GR_STR(LLVM_NATIVE_TARGETINFO), GR_STR(LLVM_NATIVE_TARGET),
                                       GR_STR(LLVM_NATIVE_TARGETMC), GR_STR(LLVM_NATIVE_ASMPRINTER)};
    void (*fns[sizeof init / sizeof *init])(void);
    for (size_t i = 0; i < sizeof init / sizeof *init; i++)
        if (!sym(lib, init[i], &fns[i], sizeof fns[i])) return;
    for (size_t i = 0; i < sizeof init / sizeof *init; i++) fns[i]();
    load_ok = true; /* the library stays loaded for the process's life (its JITs' code lives there) */
}

gr_status gr_llvm_load(gr_diag *diag) {
    pthread_once(&load_once, load);
    return load_ok ? GR_OK : gr_diag_set(diag, GR_ERR_UNSUPPORTED, "llvm host: %s", load_err);
}
