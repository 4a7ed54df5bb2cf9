#!/usr/bin/env python3
"""ONNX Runtime's per-op throughput on the shapes of bench/bench_int8_bound.c: a one-op model
each (float32 Conv / MatMul, and QLinearConv / QLinearMatMul: u8 source, s8 weights per output
channel, u8 result), one intra-op thread, graph optimizations on, best run of --ms ms of the
process's CPU time after two warm-up runs; GOPS = 2 x multiply-adds per second. ORT picks its
kernels by the CPU (no cap like ONEDNN_MAX_CPU_ISA).

    python scripts/bench_int8_ort.py [--ms N]

Needs onnx and onnxruntime (build/third_party/quantvenv has both, scripts/fetch_int8_zoo.sh)."""
import argparse
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# name, matmul, (N, C, H, W, O, k, stride, pad) as bench_int8_bound.c; matmul: M = N, K = C, N = O
SHAPES = [
    ("conv 7x7/2 3->64 @224 (resnet18 stem)", False, (1, 3, 224, 224, 64, 7, 2, 3)),
    ("conv 3x3 64->64 @56 (resnet18 layer1)", False, (1, 64, 56, 56, 64, 3, 1, 1)),
    ("conv 3x3 256->256 @14 (resnet18 layer3)", False, (1, 256, 14, 14, 256, 3, 1, 1)),
    ("conv 3x3 512->512 @7 (resnet18 layer4)", False, (1, 512, 7, 7, 512, 3, 1, 1)),
    ("conv 1x1 112->672 @14 (mobilenet_v3)", False, (1, 112, 14, 14, 672, 1, 1, 0)),
    ("matmul 128x768 . 768x768", True, (128, 768, 0, 0, 768, 0, 0, 0)),
]


def macs(matmul, d):
    n, c, h, w, o, k, s, p = d
    if matmul:
        return n * c * o
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    return n * o * oh * ow * c * k * k


def model(matmul, d, int8):
    n, c, h, w, o, k, s, p = d
    rng = np.random.default_rng(0)
    xshape = [n, c] if matmul else [n, c, h, w]
    wshape = [c, o] if matmul else [o, c, k, k]
    inits, nodes = [], []
    xt = TensorProto.UINT8 if int8 else TensorProto.FLOAT
    if int8:
        wq = rng.integers(-127, 128, size=wshape, dtype=np.int8)
        inits += [numpy_helper.from_array(wq, "w"),
                  numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
                  numpy_helper.from_array(np.array(3, np.uint8), "xz"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
                  numpy_helper.from_array(np.array(128, np.uint8), "yz")]
        if matmul:
            inits += [numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
                      numpy_helper.from_array(np.array(0, np.int8), "wz")]
            nodes.append(helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"]))
        else:
            inits += [numpy_helper.from_array(np.full([o], 0.01, np.float32), "ws"),
                      numpy_helper.from_array(np.zeros([o], np.int8), "wz")]
            nodes.append(helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
                                          kernel_shape=[k, k], strides=[s, s], pads=[p] * 4))
        yt = TensorProto.UINT8
    else:
        inits.append(numpy_helper.from_array(rng.standard_normal(wshape).astype(np.float32) * 0.01, "w"))
        if matmul:
            nodes.append(helper.make_node("MatMul", ["x", "w"], ["y"]))
        else:
            nodes.append(helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4))
        yt = TensorProto.FLOAT
    g = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", xt, xshape)],
                          [helper.make_tensor_value_info("y", yt, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    x = rng.integers(0, 256, size=xshape, dtype=np.uint8) if int8 else rng.standard_normal(xshape).astype(np.float32)
    return m.SerializeToString(), x


def gops(matmul, d, int8, budget_ms):
    blob, x = model(matmul, d, int8)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])
    feed = {"x": x}
    for _ in range(2):
        sess.run(None, feed)
    best, spent = 1e30, 0.0
    while spent < budget_ms / 1e3:
        t0 = time.process_time()
        sess.run(None, feed)
        t = time.process_time() - t0
        spent += t
        best = min(best, t) if t > 0 else best
    return 2 * macs(matmul, d) / best / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ms", type=float, default=150)
    a = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
    print(f"ONNX Runtime {ort.__version__} float32 vs QLinear int8 throughput, one thread, {cpu}; "
          f"best run of {a.ms:g} ms CPU time; load average {open('/proc/loadavg').read().split()[0]}")
    print(f"{'shape':40s} {'f32_GOPS':>9s} {'int8_GOPS':>9s} {'int8/f32':>8s}")
    for name, mm, d in SHAPES:
        f, q = gops(mm, d, False, a.ms), gops(mm, d, True, a.ms)
        print(f"{name:40s} {f:9.1f} {q:9.1f} {q / f:8.2f}", flush=True)


if __name__ == "__main__":
    main()
