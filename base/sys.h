/* Memory and OS helpers every layer uses: allocation that aborts on failure (the bookkeeping
 * half of the out-of-memory policy in base/status.h), big zeroed blocks on huge pages, and a
 * directory check for opened files. */
#ifndef GRAFT_BASE_SYS_H
#define GRAFT_BASE_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* malloc/realloc that abort on failure (for heap scratch space; user input never triggers it). */
void *gr_xmalloc(size_t n);
void *gr_xcalloc(size_t n, size_t size);
void *gr_xrealloc(void *p, size_t n);
char *gr_xstrdup(const char *s);
/* True when the open stream is a directory (fopen accepts one; every read then fails). */
bool gr_is_dir(FILE *f);
/* Transparent-huge-page advice for the 2 MiB-aligned part of a big heap block (>= 8 MiB): far
 * fewer first-touch page faults on multi-megabyte buffers. Advice only. */
void gr_advise_huge(void *p, size_t n);
/* Zeroed n bytes (aborts when out of memory); blocks of 2 MiB and more are huge-page-advised
 * anonymous mappings. Free with gr_free_big and the same n. */
void *gr_zalloc_big(size_t n);
void gr_free_big(void *p, size_t n);

#endif
