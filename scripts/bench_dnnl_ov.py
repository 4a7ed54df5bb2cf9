#!/usr/bin/env python3
"""OpenVINO side of bench/bench_dnnl: a small server driven over stdin, like
scripts/bench_dnnl_ort.js, so the C benchmark can rotate graft, ONNX Runtime and OpenVINO runs.

  <venv python> scripts/bench_dnnl_ov.py --onnx PATH --shape 1x3x640x640 [--threads N]
                                         [--input FILE.npy] [--ref FILE.npy]
  stdout first line: "ready <maxabs>" (max |OpenVINO - reference| over the first output on the
                     input; inf when a value is NaN / Inf or the shapes differ; nan without --ref)
  stdin lines:  run -> prints "<ms>"   mem -> prints "<peak KB above the baseline>"   quit

The baseline is the resident size after openvino is imported and before the model is read, so
the memory figure counts the model, its compiled form and its runs only. Compiled for the CPU
plugin with PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32 (no bf16 / fp16 on CPUs that
have them: every engine computes in f32) and INFERENCE_NUM_THREADS N. The venv comes from
scripts/openvino_env.sh. stderr gets one line saying how many of the compiled model's
convolutions / matmuls run on int8 (their runtime precision): a QDQ model runs on OpenVINO's
int8 kernels, as it does on ONNX Runtime's, and the line shows it.
"""
import argparse
import re
import sys
import time

import numpy as np
import openvino as ov


def status_kb(key):
    with open("/proc/self/status") as f:
        m = re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M)
    return int(m.group(1)) if m else 0


def int8_layers(compiled):
    """(convolution / matmul layers of the compiled model, those of them on int8)"""
    def text(info, key):  # an rt_info value (OVAny) as text
        v = info[key] if key in set(info.keys()) else ""
        return v.astype(str) if hasattr(v, "astype") else str(v)

    n = q = 0
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if text(info, "layerType") in ("Convolution", "FullyConnected", "MatMul", "GroupConvolution"):
            n += 1
            q += text(info, "runtimePrecision").lower() in ("i8", "u8")
    return n, q


def main():
    ap = argparse.ArgumentParser(prog="bench_dnnl_ov")
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--input")
    ap.add_argument("--ref")
    a = ap.parse_args()
    shape = [int(d) for d in a.shape.split("x")]
    if a.input:
        x = np.load(a.input).astype(np.float32).reshape(shape)
    else:
        x = (np.sin(np.arange(int(np.prod(shape)), dtype=np.float64)) * 0.5).astype(np.float32).reshape(shape)
    base = status_kb("VmRSS")
    core = ov.Core()
    model = core.read_model(a.onnx)
    model.reshape({model.inputs[0].get_any_name(): ov.PartialShape(shape)})
    compiled = core.compile_model(model, "CPU", {
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": str(a.threads),
    })
    n, q = int8_layers(compiled)
    sys.stderr.write("bench_dnnl_ov: %s: %d of %d convolution / matmul layers on int8\n" % (a.onnx, q, n))
    req = compiled.create_infer_request()
    req.set_input_tensor(0, ov.Tensor(np.ascontiguousarray(x)))
    req.infer()
    maxabs = float("nan")
    if a.ref:
        ref = np.load(a.ref)
        out = req.get_output_tensor(0).data
        if out.size != ref.size:
            maxabs = float("inf")
        else:
            d = np.abs(out.reshape(-1).astype(np.float64) - ref.reshape(-1).astype(np.float64))
            maxabs = float(d.max()) if d.size and np.all(np.isfinite(d)) else (0.0 if not d.size else float("inf"))
    sys.stdout.write("ready %r\n" % maxabs)
    sys.stdout.flush()
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "run":
            t0 = time.perf_counter()
            req.infer()
            sys.stdout.write("%r\n" % ((time.perf_counter() - t0) * 1e3))
        elif cmd == "mem":
            sys.stdout.write("%d\n" % max(0, status_kb("VmHWM") - base))
        elif cmd == "quit":
            break
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # reported on stderr; the benchmark sees no "ready" line
        sys.stderr.write("bench_dnnl_ov: %s\n" % e)
        sys.exit(1)
