/* Data type names. */
#include "ir/dtype.h"

#include <string.h>

static const struct { const char *name; ir_dtype t; } DTYPES[] = {
    {"float32", {kDLFloat, 32, 1}}, {"float16", {kDLFloat, 16, 1}},
    {"float64", {kDLFloat, 64, 1}}, {"bfloat16", {kDLBfloat, 16, 1}},
    {"int8", {kDLInt, 8, 1}},       {"int16", {kDLInt, 16, 1}},
    {"int32", {kDLInt, 32, 1}},     {"int64", {kDLInt, 64, 1}},
    {"uint8", {kDLUInt, 8, 1}},     {"uint16", {kDLUInt, 16, 1}},
    {"uint32", {kDLUInt, 32, 1}},   {"uint64", {kDLUInt, 64, 1}},
    {"bool", {kDLUInt, 1, 1}},      {"void", {0, 0, 0}},
};

bool ir_dtype_eq(ir_dtype a, ir_dtype b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
bool ir_dtype_is_void(ir_dtype t) { return t.bits == 0; }
bool ir_dtype_is_float(ir_dtype t) {
    return t.bits && (t.code == kDLFloat || t.code == kDLBfloat);
}
bool ir_dtype_is_int(ir_dtype t) {
    return t.bits > 1 && (t.code == kDLInt || t.code == kDLUInt);
}

const char *ir_dtype_name(ir_dtype t) {
    for (size_t i = 0; i < sizeof(DTYPES) / sizeof(DTYPES[0]); i++)
        if (ir_dtype_eq(DTYPES[i].t, t)) return DTYPES[i].name;
    return NULL;
}

bool ir_dtype_parse(const char *name, ir_dtype *out) {
    for (size_t i = 0; i < sizeof(DTYPES) / sizeof(DTYPES[0]); i++) {
        if (strcmp(DTYPES[i].name, name) == 0) {
            *out = DTYPES[i].t;
            return true;
        }
    }
    return false;
}

size_t ir_dtype_bytes(ir_dtype t) {
    if (t.bits == 0) return 0;
    return t.bits < 8 ? 1 : (size_t)t.bits / 8 * (t.lanes ? t.lanes : 1);
}
