"""ONNX Runtime's intermediate tensors for `graft diff --against-dumps DIR`: runs the model with
its node outputs added to the graph's outputs and writes one .npy per tensor, the inputs it ran
on, and DIR/index.json naming, per tensor, the node that writes it (graft's layer name).

    python scripts/ort_dump.py MODEL.onnx --out DIR [--input NAME=FILE.npy]... [--seed N]
                               [--tensors ort|all] [--threads N]

Needs numpy and onnxruntime (PyPI), e.g. the venv scripts/fetch_int8_zoo.sh makes
(build/third_party/quantvenv) or scripts/python_env.sh's; the model is edited at the protobuf
wire level, so the onnx package is not needed. Inputs not given are seeded uniform [-1, 1)
(floats) or 0..9 (integers); their shapes must be fixed in the model.

--tensors ort (the default) keeps what ORT runs: an output that a fusion removes cannot be a
graph output, so exposing it would stop ORT fusing DequantizeLinear -> op -> QuantizeLinear into
its integer kernels. It adds the outputs of QuantizeLinear nodes (the u8/s8 levels ORT's integer
kernels write) and of every node that feeds no QuantizeLinear and is no DequantizeLinear. A
DequantizeLinear of an added tensor, and a node whose output a QuantizeLinear quantizes, are
listed with that tensor's file ("levels_of"): their values as levels at that scale. --tensors all adds every node output (ORT then runs the QDQ graph in
float32 between the quantize and dequantize steps).
"""
import argparse
import json
import os
import sys

import numpy as np
import onnxruntime as ort


# ---- protobuf wire format: just enough of ModelProto / GraphProto / NodeProto ----

def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(buf):
    """(field number, wire type, value or bytes, start, end) of each top-level field."""
    i = 0
    while i < len(buf):
        start = i
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wt}")
        yield num, wt, v, start, i


def ld_field(num, payload):
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_OUTPUT, GRAPH_VALUE_INFO = 1, 12, 13
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP = 1, 2, 3, 4
VALUE_INFO_NAME = 1


def parse_nodes(graph):
    nodes, outputs, value_info = [], set(), {}
    for num, _, v, _, _ in fields(graph):
        if num == GRAPH_NODE:
            n = {"inputs": [], "outputs": [], "name": "", "op": ""}
            for f, _, x, _, _ in fields(v):
                if f == NODE_INPUT:
                    n["inputs"].append(x.decode())
                elif f == NODE_OUTPUT:
                    n["outputs"].append(x.decode())
                elif f == NODE_NAME:
                    n["name"] = x.decode()
                elif f == NODE_OP:
                    n["op"] = x.decode()
            nodes.append(n)
        elif num in (GRAPH_OUTPUT, GRAPH_VALUE_INFO):
            name = next((x.decode() for f, _, x, _, _ in fields(v) if f == VALUE_INFO_NAME), "")
            if num == GRAPH_OUTPUT:
                outputs.add(name)
            else:
                value_info[name] = bytes(v)
    return nodes, outputs, value_info


def with_outputs(model, names):
    """The model's bytes with these tensors appended to its graph's outputs (their value_info
    where the model has one, else the name alone: ORT infers the type)."""
    out = bytearray()
    for num, _, v, start, end in fields(model):
        if num != MODEL_GRAPH:
            out += model[start:end]
            continue
        _, _, value_info = parse_nodes(v)
        graph = bytearray(v)
        for n in names:
            graph += ld_field(GRAPH_OUTPUT, value_info.get(n) or ld_field(VALUE_INFO_NAME, n.encode()))
        out += ld_field(MODEL_GRAPH, bytes(graph))
    return bytes(out)


def graph_of(model):
    return next(v for num, _, v, _, _ in fields(model) if num == MODEL_GRAPH)


# ---- which tensors ----

def pick(nodes, mode):
    """[(node, output index, tensor)] to expose, and {node name: exposed tensor} for the nodes
    read as levels of another node's output: a DequantizeLinear of an exposed tensor, and a
    node whose output a QuantizeLinear quantizes (its value as ORT's fused kernel stores it)."""
    quantized = {}
    for n in nodes:
        if n["op"] == "QuantizeLinear" and n["inputs"] and n["outputs"]:
            quantized.setdefault(n["inputs"][0], n["outputs"][0])
    chosen, levels = [], {}
    for n in nodes:
        for k, t in enumerate(n["outputs"]):
            if not t:
                continue
            if mode == "all" or n["op"] == "QuantizeLinear" or (n["op"] != "DequantizeLinear" and t not in quantized):
                chosen.append((n, k, t))
    exposed = {t for _, _, t in chosen}
    if mode == "ort":
        for n in nodes:
            if not n["outputs"]:
                continue
            key = n["name"] or n["outputs"][0]
            if n["op"] == "DequantizeLinear" and n["inputs"] and n["inputs"][0] in exposed:
                levels[key] = n["inputs"][0]
            elif n["op"] != "DequantizeLinear" and quantized.get(n["outputs"][0]) in exposed:
                levels[key] = quantized[n["outputs"][0]]
    return chosen, levels


def make_inputs(sess, given, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.name in given:
            feeds[i.name] = np.load(given[i.name])
            continue
        if any(not isinstance(d, int) for d in i.shape):
            sys.exit(f"ort_dump: input '{i.name}' has dims {i.shape}: give --input {i.name}=FILE.npy")
        dt = np.dtype({"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
                       "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
                       "tensor(int8)": np.int8, "tensor(bool)": np.bool_}.get(i.type, np.float32))
        if dt.kind == "f":
            feeds[i.name] = rng.uniform(-1, 1, i.shape).astype(dt)
        else:
            feeds[i.name] = rng.integers(0, 10, i.shape).astype(dt)
    unknown = set(given) - set(feeds)
    if unknown:
        sys.exit(f"ort_dump: the model has no input {sorted(unknown)}")
    return feeds


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
        given[name] = path
    with open(a.model, "rb") as f:
        model = f.read()
    try:
        nodes, outputs, _ = parse_nodes(graph_of(model))
    except (StopIteration, IndexError, ValueError, UnicodeDecodeError) as e:
        sys.exit(f"ort_dump: {a.model}: not an ONNX model with a graph ({e})")
    chosen, levels = pick(nodes, a.tensors)
    new = [t for _, _, t in chosen if t not in outputs]
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(with_outputs(model, new), so, providers=["CPUExecutionProvider"])
    feeds = make_inputs(sess, given, a.seed)
    names = [o.name for o in sess.get_outputs()]
    values = dict(zip(names, sess.run(names, feeds)))
    os.makedirs(a.out, exist_ok=True)
    index = {"model": os.path.abspath(a.model), "onnxruntime": ort.__version__, "tensors": a.tensors,
             "graph_optimization": "all", "intra_op_threads": a.threads, "inputs": [], "values": []}
    for k, (name, x) in enumerate(feeds.items()):
        fn = f"input_{k}.npy"
        np.save(os.path.join(a.out, fn), x)
        index["inputs"].append({"name": name, "file": fn})
    files = {}
    for k, (n, idx, t) in enumerate(chosen):
        x = values.get(t)
        if not isinstance(x, np.ndarray):
            continue
        fn = files[t] = f"t{k:04d}.npy"
        np.save(os.path.join(a.out, fn), np.ascontiguousarray(x))
        index["values"].append({"node": n["name"], "op": n["op"], "output": idx, "tensor": t, "file": fn,
                                "dtype": str(x.dtype), "shape": list(x.shape)})
    ops = {n["name"] or n["outputs"][0]: n["op"] for n in nodes if n["outputs"]}
    for node, t in levels.items():
        if t in files:
            index["values"].append({"node": node, "op": ops[node], "output": 0, "tensor": t, "file": files[t],
                                    "levels_of": t})
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print(f"ort_dump: {len(index['values'])} tensors of {a.model} in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
