/* Element data types: the DLPack layout (code, bits, lanes), plus "void" for unknown. */
#ifndef GRAFT_IR_DTYPE_H
#define GRAFT_IR_DTYPE_H

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>

typedef DLDataType ir_dtype;

/* Unknown dtype ("void" in the text format): code 0, bits 0, lanes 0. */
#define IR_DTYPE_VOID ((ir_dtype){0, 0, 0})
#define IR_DTYPE_F32 ((ir_dtype){kDLFloat, 32, 1})
#define IR_DTYPE_F16 ((ir_dtype){kDLFloat, 16, 1})
#define IR_DTYPE_F64 ((ir_dtype){kDLFloat, 64, 1})
#define IR_DTYPE_BF16 ((ir_dtype){kDLBfloat, 16, 1})
#define IR_DTYPE_I8 ((ir_dtype){kDLInt, 8, 1})
#define IR_DTYPE_I16 ((ir_dtype){kDLInt, 16, 1})
#define IR_DTYPE_I32 ((ir_dtype){kDLInt, 32, 1})
#define IR_DTYPE_I64 ((ir_dtype){kDLInt, 64, 1})
#define IR_DTYPE_U8 ((ir_dtype){kDLUInt, 8, 1})
/* bool is (kDLUInt, 1 bit) as in TVM and DLPack 0.6; stored one byte per element. */
#define IR_DTYPE_BOOL ((ir_dtype){kDLUInt, 1, 1})

bool ir_dtype_eq(ir_dtype a, ir_dtype b);
bool ir_dtype_is_void(ir_dtype t);
bool ir_dtype_is_float(ir_dtype t);   /* float or bfloat */
bool ir_dtype_is_int(ir_dtype t);     /* signed or unsigned integer, not bool */
/* "float32", "int64", "bool", "void", ...; static string, NULL for a dtype with no name. */
const char *ir_dtype_name(ir_dtype t);
/* Parses a name; returns false for an unknown one. */
bool ir_dtype_parse(const char *name, ir_dtype *out);
/* Bytes per element (bool: 1; void: 0). */
size_t ir_dtype_bytes(ir_dtype t);

#endif
