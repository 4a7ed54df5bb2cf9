/* Helpers every test may use: reading a whole file. */
#ifndef GRAFT_TESTS_TEST_UTIL_H
#define GRAFT_TESTS_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file at path, with a NUL after its bytes (text files read as C strings; binary ones
 * use *len), its length in *len when len is not NULL. NULL when the file cannot be opened or
 * read. The caller frees it. */
static inline char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) != NULL) {
        size_t got = fread(s, 1, (size_t)n, f);
        if (got != (size_t)n) {
            free(s);
            s = NULL;
        } else {
            s[got] = 0;
            if (len) *len = got;
        }
    }
    fclose(f);
    return s;
}

/* The file at path into buf (at most cap - 1 bytes, NUL-terminated): for a command's captured
 * output, read once per run into a fixed buffer. Returns buf, or NULL (buf "") when the file
 * cannot be read. */
static inline char *tu_read_into(const char *path, char *buf, size_t cap) {
    size_t n = 0;
    char *s = tu_read_file(path, &n);
    n = !s ? 0 : n < cap ? n : cap - 1;
    if (s) memcpy(buf, s, n);
    buf[n] = 0;
    free(s);
    return s ? buf : NULL;
}

#endif
