/* Allocation that aborts on failure, big zeroed blocks, huge-page advice, and a file check. */
#include "base/sys.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "base/status.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *gr_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) gr_abort(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return p;
}
void *gr_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) gr_abort(__FILE__, __LINE__, "out of memory (%zu x %zu bytes)", n, size);
    return p;
}
void gr_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (n < 4 * huge) return;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}
void *gr_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) gr_abort(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return q;
}
bool gr_is_dir(FILE *f) {
    struct stat sb;
    return f && fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode);
}

char *gr_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(gr_xmalloc(n), s, n);
}

/* Zeroed memory of n bytes: big blocks are fresh anonymous pages, 2 MiB-aligned and advised
 * MADV_HUGEPAGE (fewer first-touch faults and TLB misses on the big random-access tables). */
void *gr_zalloc_big(size_t n) {
    if (n >= HUGE_PAGE) {
        size_t len = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        unsigned char *m = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) gr_abort(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
        uintptr_t a = ((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        unsigned char *al = (unsigned char *)a, *end = m + len + HUGE_PAGE;
        if (al > m) munmap(m, (size_t)(al - m));
        if (al + len < end) munmap(al + len, (size_t)(end - (al + len)));
#ifdef MADV_HUGEPAGE
        madvise(al, len, MADV_HUGEPAGE);
#endif
        return al;
    }
    return gr_xcalloc(1, n);
}

void gr_free_big(void *p, size_t n) {
    if (!p) return;
    if (n >= HUGE_PAGE) munmap(p, (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    else free(p);
}
