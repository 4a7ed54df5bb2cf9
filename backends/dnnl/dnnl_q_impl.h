/* Internal to backends/dnnl: quantized composites, shared by their patterns (dnnl_q_patterns.c)
 * and the engine (dnnl_op_quant.c).
 *
 * ONNX's QuantizeLinear -> DequantizeLinear pair imports (frontend/onnx/onnx_convert_quant.c)
 * as the bindings
 *     divide(x, s) -> round -> [add(zp)] -> clip(lo, hi) -> astype(u8 | i8)      quantize
 *     -> astype(f32) -> [subtract(zp)] -> multiply(s)                           dequantize
 * and constant folding turns the dequantized int8 weights into float32 constants that are
 * level * scale. The composites:
 *   dnnl.qdq                 such a pair alone: one oneDNN eltwise primitive (linear, round,
 *                            clip, linear), no host round / cast
 *   dnnl.qconv2d[_bias][_relu|_clip], dnnl.qmatmul[_bias][_relu|_clip]
 *                            a pair feeding a convolution / matmul with constant weights on an
 *                            int8 grid: the source is quantized by a reorder (u8 or s8, zero
 *                            point), the weights are their s8 levels (recovered once), the
 *                            primitive accumulates in s32 and writes float32 with the scales
 *                            src_scale * weight_scale[c] as oneDNN output scales (per tensor or
 *                            per output channel), the bias in the accumulator's units and the
 *                            activation as a post-op; its result is the levels of the
 *                            quantize that alone reads it when there is one (requantization in
 *                            the output scales and dst zero point), else float32
 *   dnnl.q_quantize, dnnl.q_dequantize
 *                            a quantize or a dequantize alone (a QOperator model's uint8 tensor
 *                            that several ops read): one reorder each; a convolution reading a
 *                            dequantize's result reads its levels
 *   dnnl.q_cast               the cast of levels to float32 alone (ops after it that are no
 *                            dequantize of it run as float ops): one reorder
 *   dnnl.qmax_pool2d, dnnl.qreshape
 *                            max pooling and reshape of uint8 / int8 levels (exact: the scale and
 *                            zero point pass through), in int8 */
#ifndef GRAFT_BACKENDS_DNNL_DNNL_Q_IMPL_H
#define GRAFT_BACKENDS_DNNL_DNNL_Q_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The composite names start with this; dnnl_q_kind gives which one. */
#define DNNL_Q_PREFIX "dnnl.q"
typedef enum dnnl_q_kind {
    DNNL_Q_NONE,
    DNNL_Q_QDQ,
    DNNL_Q_CONV2D,
    DNNL_Q_MATMUL,
    DNNL_Q_QUANT,
    DNNL_Q_DEQUANT,
    DNNL_Q_MAXPOOL,
    DNNL_Q_RESHAPE,
    DNNL_Q_CAST
} dnnl_q_kind;
dnnl_q_kind dnnl_q_kind_of(const char *composite);

/* Weights w viewed as [outer][C][inner] (OIHW: 1, O, I*H*W; matmul K x N: K, N, 1) as
 * level * scale[c] with levels in [-127, 127]: the levels into q (may be NULL) and one scale
 * per c into scale. A scale for the whole tensor is tried first (*per_tensor then true), then
 * one per c; with q, the fewest levels (halved, their scale doubled, while all are even). false when w is not on such a grid (a weight zero point other than 0 shifts it
 * off, asymmetric ranges need more than 8 bits). */
bool dnnl_q_weights(const float *w, int64_t outer, int64_t C, int64_t inner, int8_t *q, float *scale, bool *per_tensor);

/* dnnl_q_lut.c: the kernels of the engine's byte table (dst[i] = table[src[i]], an element-wise
 * chain between int8 levels), each named in profiles (`lut:c`, ...). A kernel is ok where the CPU
 * has its instructions and oneDNN's ISA (ONEDNN_MAX_CPU_ISA) allows them; the scalar one always;
 * the engine takes the best ok. dnnl_lut_apply runs kernel k (ok) over oneDNN's threads. */
typedef enum dnnl_lut_kernel { DNNL_LUT_C, DNNL_LUT_AVX2, DNNL_LUT_AVX512_VBMI, DNNL_LUT_NKERNELS } dnnl_lut_kernel;
bool dnnl_lut_kernel_ok(dnnl_lut_kernel k);
const char *dnnl_lut_kernel_name(dnnl_lut_kernel k);
dnnl_lut_kernel dnnl_lut_kernel_best(void);
void dnnl_lut_apply(dnnl_lut_kernel k, const uint8_t table[256], const uint8_t *src, uint8_t *dst, size_t n);

#endif
