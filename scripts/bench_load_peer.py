"""One process of a peer runtime's start-up for scripts/bench_load.sh: create an ONNX Runtime
session, or compile a model with OpenVINO (from its model cache when CACHE_DIR holds it), then
run it once on zeros. Prints one line, `load_ms=<wall> load_cpu_ms=<cpu> run_ms=<wall>
run_cpu_ms=<cpu>`, measured inside the process, so that the interpreter's own start-up (which
/usr/bin/time sees) can be told apart.

    python bench_load_peer.py ort MODEL.onnx [NAME=1x3x224x224 ...]
    python bench_load_peer.py ov MODEL.onnx CACHE_DIR [NAME=1x3x224x224 ...]

Run it with the venv that has the runtime: build/third_party/pyvenv (onnxruntime) or the one
scripts/openvino_env.sh makes (openvino). THREADS=N (environment) caps the runtime's threads
(ORT's intra- and inter-op pools, OpenVINO's INFERENCE_NUM_THREADS). OpenVINO is asked for
float32 inference, as graft and ORT run it."""
import os
import sys
import time

import numpy as np


def clocks():
    return time.perf_counter(), time.process_time()


def shapes_from(args):
    out = {}
    for a in args:
        name, _, dims = a.partition("=")
        out[name] = [int(d) for d in dims.split("x")]
    return out


def zeros(shape, dtype, given):
    dims = given if given is not None else [d if isinstance(d, int) and d > 0 else 1 for d in shape]
    return np.zeros(dims, dtype=dtype)


def main():
    kind, model = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    threads = int(os.environ.get("THREADS", "0") or 0)
    if kind == "ort":
        import onnxruntime as ort

        given = shapes_from(rest)
        w0, c0 = clocks()
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = so.inter_op_num_threads = threads
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        w1, c1 = clocks()
        types = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
                 "tensor(bool)": np.bool_}
        feeds = {i.name: zeros(i.shape, types.get(i.type, np.float32), given.get(i.name)) for i in sess.get_inputs()}
        w2, c2 = clocks()
        sess.run(None, feeds)
        w3, c3 = clocks()
    elif kind == "ov":
        import openvino as ov

        cache, given = rest[0], shapes_from(rest[1:])
        w0, c0 = clocks()
        core = ov.Core()
        core.set_property({"CACHE_DIR": cache})
        # float32 like the others (on a CPU with AMX or AVX512-BF16 its default is bfloat16)
        cfg = {"INFERENCE_PRECISION_HINT": "f32"}
        if threads:
            cfg["INFERENCE_NUM_THREADS"] = threads
        compiled = core.compile_model(model, "CPU", cfg)
        w1, c1 = clocks()
        feeds = {}
        for p in compiled.inputs:
            name = p.get_any_name()
            shape = [d.get_length() if d.is_static else 1 for d in p.get_partial_shape()]
            feeds[name] = zeros(shape, p.get_element_type().to_dtype(), given.get(name))
        w2, c2 = clocks()
        compiled.create_infer_request().infer(feeds)
        w3, c3 = clocks()
    else:
        sys.exit("usage: bench_load_peer.py ort|ov MODEL.onnx [CACHE_DIR] [NAME=SHAPE ...]")
    print("load_ms=%.1f load_cpu_ms=%.1f run_ms=%.1f run_cpu_ms=%.1f"
          % ((w1 - w0) * 1e3, (c1 - c0) * 1e3, (w3 - w2) * 1e3, (c3 - c2) * 1e3))


if __name__ == "__main__":
    main()
