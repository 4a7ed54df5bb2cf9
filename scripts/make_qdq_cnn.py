#!/usr/bin/python3
"""Writes a small QDQ-quantized CNN (the format ONNX Runtime's quantizer emits: activations
QuantizeLinear -> DequantizeLinear as uint8, weights int8 with per-channel scales, biases int32
with scale input_scale * weight_scale) with seeded random weights, built with Debian's
python3-onnx. Run with /usr/bin/python3 (Debian's numpy and onnx).

    /usr/bin/python3 scripts/make_qdq_cnn.py OUT.onnx

Layers: Q/DQ input -> conv 3x3 (8) + relu -> conv 3x3 stride 2 (16) + relu -> max pool 2x2 ->
depthwise conv 3x3 (16) + relu, added to its input (residual) -> global average pool ->
flatten -> matmul (16x10) + bias -> Q/DQ logits. Outputs: the logits (int8 grid, 1/64) and
the residual block's re-quantized feature map (uint8 grid, 8/255). Every activation is re-quantized between
layers, so graft must run QuantizeLinear/DequantizeLinear (per tensor and per axis) exactly.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(20261125)
nodes, inits = [], []


def const(name, arr):
    inits.append(numpy_helper.from_array(arr, name))
    return name


def qdq(x, scale, zp, tag):
    """x -> QuantizeLinear -> DequantizeLinear (uint8, per tensor)."""
    s = const(tag + "_scale", np.array(scale, np.float32))
    z = const(tag + "_zp", np.array(zp, np.uint8))
    nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [tag + "_q"], name=tag + "_Q"))
    nodes.append(helper.make_node("DequantizeLinear", [tag + "_q", s, z], [tag + "_dq"], name=tag + "_DQ"))
    return tag + "_dq", scale


def qweight(shape, tag, in_scale, axis=0):
    """int8 weights with per-channel scales along axis, the int32 bias at in_scale * w_scale."""
    fan_in = int(np.prod(shape)) // shape[axis]
    w = rng.randint(-127, 128, size=shape).astype(np.int8)
    ws = (rng.uniform(0.6, 1.4, size=shape[axis]) / (127.0 * np.sqrt(fan_in) / 2)).astype(np.float32)
    wz = np.zeros(shape[axis], np.int8)
    nodes.append(helper.make_node("DequantizeLinear", [const(tag + "_w", w), const(tag + "_ws", ws),
                                                      const(tag + "_wz", wz)],
                                  [tag + "_wdq"], name=tag + "_wDQ", axis=axis))
    bs = (ws * np.float32(in_scale)).astype(np.float32)
    b = rng.randint(-200, 200, size=shape[axis]).astype(np.int32)
    nodes.append(helper.make_node("DequantizeLinear", [const(tag + "_b", b), const(tag + "_bs", bs),
                                                      const(tag + "_bz", np.zeros(shape[axis], np.int32))],
                                  [tag + "_bdq"], name=tag + "_bDQ", axis=0))
    return tag + "_wdq", tag + "_bdq"


def conv(x, in_scale, cout, cin, tag, stride=1, group=1, out_scale=4.0 / 255):
    w, b = qweight((cout, cin // group, 3, 3), tag, in_scale)
    nodes.append(helper.make_node("Conv", [x, w, b], [tag + "_y"], name=tag, pads=[1, 1, 1, 1],
                                  strides=[stride, stride], group=group))
    nodes.append(helper.make_node("Relu", [tag + "_y"], [tag + "_r"], name=tag + "_relu"))
    return qdq(tag + "_r", out_scale, 0, tag + "_out")


def main():
    out = sys.argv[1]
    x, s = qdq("x", 2.0 / 255, 128, "in")
    x, s = conv(x, s, 8, 3, "conv1")
    x, s = conv(x, s, 16, 8, "conv2", stride=2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool_y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]))
    x, s = qdq("pool_y", s, 0, "pool_out")
    d, _ = conv(x, s, 16, 16, "dw", group=16)
    nodes.append(helper.make_node("Add", [x, d], ["res_y"], name="residual"))
    x, s = qdq("res_y", 8.0 / 255, 0, "res_out")
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap_y"], name="gap"))
    x, s = qdq("gap_y", s, 0, "gap_out")
    nodes.append(helper.make_node("Flatten", [x], ["flat_y"], name="flatten"))
    w = rng.randint(-127, 128, size=(16, 10)).astype(np.int8)
    ws = np.float32(1.0 / (127 * 2))
    nodes.append(helper.make_node("DequantizeLinear", [const("fc_w", w), const("fc_ws", np.array(ws)),
                                                      const("fc_wz", np.array(0, np.int8))],
                                  ["fc_wdq"], name="fc_wDQ"))
    nodes.append(helper.make_node("MatMul", ["flat_y", "fc_wdq"], ["fc_mm"], name="fc"))
    b = rng.uniform(-0.5, 0.5, size=10).astype(np.float32)
    nodes.append(helper.make_node("Add", ["fc_mm", const("fc_b", b)], ["fc_y"], name="fc_bias"))
    s_out = const("out_scale", np.array(1.0 / 64, np.float32))
    z_out = const("out_zp", np.array(0, np.int8))
    nodes.append(helper.make_node("QuantizeLinear", ["fc_y", s_out, z_out], ["logits_q"], name="out_Q"))
    nodes.append(helper.make_node("DequantizeLinear", ["logits_q", s_out, z_out], ["logits"], name="out_DQ"))
    graph = helper.make_graph(
        nodes, "qdq_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("res_out_dq", TensorProto.FLOAT, [1, 16, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="graft scripts/make_qdq_cnn.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
