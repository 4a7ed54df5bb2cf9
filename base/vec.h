/* Growable heap array of any element type (free with gr_vec_free). */
#ifndef GRAFT_BASE_VEC_H
#define GRAFT_BASE_VEC_H

#include <stdint.h>
#include <stdlib.h>

#include "base/sys.h"

#define GR_VEC(T) struct { T *data; uint32_t len, cap; }
#define gr_vec_push(v, x)                                                                     \
    do {                                                                                      \
        if ((v)->len == (v)->cap) {                                                           \
            (v)->cap = (v)->cap ? (v)->cap * 2 : 8;                                           \
            (v)->data = gr_xrealloc((v)->data, sizeof(*(v)->data) * (size_t)(v)->cap);        \
        }                                                                                     \
        (v)->data[(v)->len++] = (x);                                                          \
    } while (0)
/* &v.data[i], or NULL while v has never held anything (NULL + 0 is undefined behaviour). */
#define gr_vec_at(v, i) ((v).data ? (v).data + (i) : NULL)
#define gr_vec_free(v) do { free((v)->data); (v)->data = NULL; (v)->len = (v)->cap = 0; } while (0)

#endif
