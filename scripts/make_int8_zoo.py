"""int8 variants of zoo CNNs made with ONNX Runtime's own quantizer (onnxruntime.quantization
.quantize_static), and ONNX Runtime's outputs for them (graph optimizations on: ORT runs its
integer kernels). Run by the venv scripts/fetch_int8_zoo.sh makes (PyPI onnxruntime, onnx).

    python make_int8_zoo.py --zoo build/third_party/zoo --out build/third_party/int8 [--force]
    python make_int8_zoo.py --list        names, one a line, with the input shape

Per base model (the zoo's float32 export) three variants:
  <m>_qdq_pc   QDQ, per-channel int8 weights, uint8 activations (ORT's default static setting)
  <m>_qdq_pt   QDQ, per-tensor int8 weights, uint8 activations
  <m>_qop      QOperator (QLinearConv, QLinearMatMul, QLinearAdd, ...), per-channel weights
Calibration: 4 seeded uniform [-1, 1) inputs, MinMax. Reference: one more seeded input
(refs/<name>/input_0.npy) and ORT's outputs (output_<i>.npy), one intra-op thread.
Idempotent: a variant whose model and reference exist is kept (--force remakes them).
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

BASES = {"resnet18": (1, 3, 224, 224), "mobilenet_v3_large": (1, 3, 224, 224)}
VARIANTS = {
    "qdq_pc": dict(quant_format=QuantFormat.QDQ, per_channel=True),
    "qdq_pt": dict(quant_format=QuantFormat.QDQ, per_channel=False),
    "qop": dict(quant_format=QuantFormat.QOperator, per_channel=True),
}
CALIB_SEED, REF_SEED, NCALIB = 20261128, 20261129, 4


class Reader(CalibrationDataReader):
    def __init__(self, name, shape):
        rng = np.random.RandomState(CALIB_SEED)
        self.items = iter([{name: rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(NCALIB)])

    def get_next(self):
        return next(self.items, None)


def input_name(path):
    return onnx.load(path, load_external_data=False).graph.input[0].name


def make(zoo, out, base, shape, variant, force):
    name = f"{base}_{variant}"
    model = os.path.join(out, name + ".onnx")
    refs = os.path.join(out, "refs", name)
    if not force and os.path.exists(model) and os.path.exists(os.path.join(refs, "meta.json")):
        return
    src = os.path.join(zoo, base + ".onnx")
    if not os.path.exists(src):
        sys.exit(f"make_int8_zoo: {src} missing: run scripts/fetch_zoo.sh first")
    iname = input_name(src)
    quantize_static(src, model, Reader(iname, shape), activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, **VARIANTS[variant])
    x = np.random.RandomState(REF_SEED).uniform(-1, 1, shape).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    outs = sess.run(None, {iname: x})
    os.makedirs(refs, exist_ok=True)
    np.save(os.path.join(refs, "input_0.npy"), x)
    for i, y in enumerate(outs):
        np.save(os.path.join(refs, f"output_{i}.npy"), y)
    meta = {"model": name, "base": base, "variant": variant, "ort_version": ort.__version__,
            "graph_optimization": "all", "intra_op_threads": 1, "calibration": f"{NCALIB} x uniform [-1, 1), seed {CALIB_SEED}",
            "input_seed": REF_SEED, "inputs": [{"name": iname, "shape": list(shape), "dtype": "float32"}],
            "outputs": [{"name": o.name, "shape": list(y.shape), "dtype": str(y.dtype)} for o, y in zip(sess.get_outputs(), outs)]}
    with open(os.path.join(refs, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print(f"make_int8_zoo: {model}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo")
    ap.add_argument("--out")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for b, s in BASES.items():
            for v in VARIANTS:
                print(f"{b}_{v} {'x'.join(map(str, s))}")
        return
    if not a.zoo or not a.out:
        ap.error("--zoo and --out are required")
    os.makedirs(a.out, exist_ok=True)
    for b, s in BASES.items():
        for v in VARIANTS:
            make(a.zoo, a.out, b, s, v, a.force)


if __name__ == "__main__":
    main()
