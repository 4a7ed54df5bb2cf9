/* libFuzzer target: the .npy reader (runtime/npy.h). It reads files, so each input goes into
 * one in-memory file (memfd) opened by its /proc path. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/npy.h"

static volatile uint8_t sink;  /* keeps the read below */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("graft_fuzz.npy", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    rt_tensor *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (rt_npy_load(path, &t, &d) == GR_OK) {
        /* what loaded is readable to its last byte */
        uint8_t sum = 0;
        const uint8_t *p = rt_tensor_data(t);
        for (size_t i = 0; i < rt_tensor_nbytes(t); i++) sum += p[i];
        sink = sum;
        rt_tensor_release(t);
    }
    return 0;
}
