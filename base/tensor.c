/* Refcounted CPU tensors. */
#include "base/tensor.h"

#include <stdlib.h>
#include <string.h>

static void tensor_delete(gr_object *obj) {
    rt_tensor *t = (rt_tensor *)obj;
    free(t->owner);
    free(t);
}

static rt_tensor *tensor_header(DLDataType dtype, int32_t ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > RT_MAX_NDIM) return NULL;
    for (int32_t i = 0; i < ndim; i++)
        if (shape[i] < 0) return NULL;
    rt_tensor *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    t->obj.refcount = 1;
    t->obj.type = "rt.tensor";
    t->obj.deleter = tensor_delete;
    t->dl.device = (DLDevice){kDLCPU, 0};
    t->dl.dtype = dtype;
    t->dl.ndim = ndim;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->dl.shape = t->shape;
    return t;
}

rt_tensor *rt_tensor_new(DLDataType dtype, int32_t ndim, const int64_t *shape) {
    rt_tensor *t = tensor_header(dtype, ndim, shape);
    if (!t) return NULL;
    size_t n = rt_tensor_nbytes(t);
    size_t alloc = (n + 63) / 64 * 64;
    t->owner = aligned_alloc(64, alloc ? alloc : 64);
    if (!t->owner) {
        free(t);
        return NULL;
    }
    memset(t->owner, 0, alloc ? alloc : 64);
    t->dl.data = t->owner;
    return t;
}

rt_tensor *rt_tensor_wrap(DLDataType dtype, int32_t ndim, const int64_t *shape, void *data) {
    rt_tensor *t = tensor_header(dtype, ndim, shape);
    if (t) t->dl.data = data;
    return t;
}

rt_tensor *rt_tensor_adopt(DLDataType dtype, int32_t ndim, const int64_t *shape, void *data) {
    rt_tensor *t = tensor_header(dtype, ndim, shape);
    if (t) t->dl.data = t->owner = data;
    return t;
}

rt_tensor *rt_tensor_retain(rt_tensor *t) {
    if (t) gr_object_retain(&t->obj);
    return t;
}

void rt_tensor_release(rt_tensor *t) {
    if (t) gr_object_release(&t->obj);
}

int64_t rt_tensor_numel(const rt_tensor *t) {
    int64_t n = 1;
    for (int32_t i = 0; i < t->dl.ndim; i++) n *= t->dl.shape[i];
    return n;
}

size_t rt_tensor_nbytes(const rt_tensor *t) {
    size_t elem = t->dl.dtype.bits < 8 ? 1 : t->dl.dtype.bits / 8u;
    return (size_t)rt_tensor_numel(t) * elem * (t->dl.dtype.lanes ? t->dl.dtype.lanes : 1u);
}

bool rt_tensor_same_shape(const rt_tensor *a, const rt_tensor *b) {
    if (a->dl.ndim != b->dl.ndim) return false;
    for (int32_t i = 0; i < a->dl.ndim; i++)
        if (a->dl.shape[i] != b->dl.shape[i]) return false;
    return true;
}

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
    return (uint16_t)half;
}

double rt_tensor_get_f64(const rt_tensor *t, int64_t i) {
    const void *p = t->dl.data;
    DLDataType d = t->dl.dtype;
    switch (d.code) {
    case kDLFloat:
        if (d.bits == 32) return ((const float *)p)[i];
        if (d.bits == 64) return ((const double *)p)[i];
        if (d.bits == 16) return f16_to_f32(((const uint16_t *)p)[i]);
        break;
    case kDLBfloat: return bf16_to_f32(((const uint16_t *)p)[i]);
    case kDLInt:
        switch (d.bits) {
        case 8: return ((const int8_t *)p)[i];
        case 16: return ((const int16_t *)p)[i];
        case 32: return ((const int32_t *)p)[i];
        case 64: return (double)((const int64_t *)p)[i];
        }
        break;
    case kDLUInt:
        switch (d.bits) {
        case 1: case 8: return ((const uint8_t *)p)[i];
        case 16: return ((const uint16_t *)p)[i];
        case 32: return ((const uint32_t *)p)[i];
        case 64: return (double)((const uint64_t *)p)[i];
        }
        break;
    }
    return 0.0;
}

void rt_tensor_set_f64(rt_tensor *t, int64_t i, double v) {
    void *p = t->dl.data;
    DLDataType d = t->dl.dtype;
    switch (d.code) {
    case kDLFloat:
        if (d.bits == 32) ((float *)p)[i] = (float)v;
        else if (d.bits == 64) ((double *)p)[i] = v;
        else if (d.bits == 16) ((uint16_t *)p)[i] = f32_to_f16((float)v);
        break;
    case kDLBfloat: ((uint16_t *)p)[i] = f32_to_bf16((float)v); break;
    case kDLInt:
        switch (d.bits) {
        case 8: ((int8_t *)p)[i] = (int8_t)v; break;
        case 16: ((int16_t *)p)[i] = (int16_t)v; break;
        case 32: ((int32_t *)p)[i] = (int32_t)v; break;
        case 64: ((int64_t *)p)[i] = (int64_t)v; break;
        }
        break;
    case kDLUInt:
        switch (d.bits) {
        case 1: ((uint8_t *)p)[i] = v != 0.0; break;
        case 8: ((uint8_t *)p)[i] = (uint8_t)v; break;
        case 16: ((uint16_t *)p)[i] = (uint16_t)v; break;
        case 32: ((uint32_t *)p)[i] = (uint32_t)v; break;
        case 64: ((uint64_t *)p)[i] = (uint64_t)v; break;
        }
        break;
    }
}
