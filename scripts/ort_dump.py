"""ONNX Runtime's intermediate tensors for `graft diff --against-dumps DIR`: runs the model with
its node outputs added to the graph's outputs (python/graft/_ort.py, which graft.diff(...,
against="onnxruntime") uses too) and writes one .npy per tensor, the inputs it ran on, and
DIR/index.json naming, per tensor, the node that writes it (graft's layer name).

    python scripts/ort_dump.py MODEL.onnx --out DIR [--input NAME=FILE.npy]... [--seed N]
                               [--tensors ort|all] [--threads N]

Needs numpy and onnxruntime (PyPI), e.g. the venv scripts/fetch_int8_zoo.sh makes
(build/third_party/quantvenv) or scripts/python_env.sh's. Inputs not given are seeded uniform
[-1, 1) (floats) or 0..9 (integers); their shapes must be fixed in the model. --tensors ort (the
default) keeps ORT's QDQ fusions; --tensors all exposes every node output (see _ort.py).
"""
import argparse
import importlib.util
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def load_ort_module():
    """python/graft/_ort.py by path: the graft package itself (and its C extension) is not needed."""
    spec = importlib.util.spec_from_file_location("graft_ort", os.path.join(ROOT, "python", "graft", "_ort.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--out", required=True)
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tensors", choices=("ort", "all"), default="ort")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    given = {}
    for s in a.input:
        name, eq, path = s.rpartition("=")
        if not eq or not name:
            sys.exit(f"ort_dump: --input takes NAME=FILE.npy, not '{s}'")
        given[name] = np.load(path)
    ort_mod = load_ort_module()
    try:
        feeds, entries = ort_mod.run(a.model, given, a.seed, a.tensors, a.threads)
    except (OSError, ValueError) as e:
        sys.exit(f"ort_dump: {e}")
    import onnxruntime
    os.makedirs(a.out, exist_ok=True)
    index = {"model": os.path.abspath(a.model), "onnxruntime": onnxruntime.__version__, "tensors": a.tensors,
             "graph_optimization": "all", "intra_op_threads": a.threads, "inputs": [], "values": []}
    for k, (name, x) in enumerate(feeds.items()):
        fn = f"input_{k}.npy"
        np.save(os.path.join(a.out, fn), x)
        index["inputs"].append({"name": name, "file": fn})
    files = {}
    for e in entries:
        fn = files.get(e["tensor"])
        if fn is None:
            fn = files[e["tensor"]] = f"t{len(files):04d}.npy"
            np.save(os.path.join(a.out, fn), e["value"])
        row = {k: v for k, v in e.items() if k != "value"}
        row.update(file=fn, dtype=str(e["value"].dtype), shape=list(e["value"].shape))
        index["values"].append(row)
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"ort_dump: {len(index['values'])} tensors of {a.model} in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
