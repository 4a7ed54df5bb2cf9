"""ONNX Runtime's intermediate tensors for graft diff (graft.diff(..., against="onnxruntime"),
scripts/ort_dump.py for `graft diff --against-dumps`): runs an ONNX model in ORT with its node
outputs added to the graph's outputs. The model is edited at the protobuf wire level, so only
numpy and onnxruntime are needed (not the onnx package).

tensors="ort" keeps what ORT runs: an output that a fusion removes cannot be a graph output, so
exposing it would stop ORT fusing DequantizeLinear -> op -> QuantizeLinear into its integer
kernels. It adds the outputs of QuantizeLinear nodes (the u8/s8 levels ORT's integer kernels
write) and of every node that feeds no QuantizeLinear and is no DequantizeLinear. A
DequantizeLinear of an added tensor, and a node whose output a QuantizeLinear quantizes, are
listed with that tensor ("levels_of"): their values as levels at that scale. tensors="all" adds
every node output (ORT then runs a QDQ graph in float32 between its quantize and dequantize
steps).
"""
import numpy as np


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
            feeds[i.name] = np.asarray(given[i.name])
            continue
        if any(not isinstance(d, int) for d in i.shape):
            raise ValueError(f"input '{i.name}' has dims {i.shape}: give it")
        dt = np.dtype({"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
                       "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8,
                       "tensor(int8)": np.int8, "tensor(bool)": np.bool_}.get(i.type, np.float32))
        if dt.kind == "f":
            feeds[i.name] = rng.uniform(-1, 1, i.shape).astype(dt)
        else:
            feeds[i.name] = rng.integers(0, 10, i.shape).astype(dt)
    unknown = set(given) - set(feeds)
    if unknown:
        raise ValueError(f"the model has no input {sorted(unknown)}")
    return feeds


def run(model_path, inputs=None, seed=0, tensors="ort", threads=1):
    """Runs the model; returns (feeds {input name: array}, entries [{"node", "op", "output",
    "tensor", "value": array, and "levels_of" for a node read as levels of another's tensor}]).
    inputs: {name: array}; the others are seeded uniform [-1, 1) (floats) or 0..9 (integers)."""
    import onnxruntime as ort
    if tensors not in ("ort", "all"):
        raise ValueError(f"tensors must be 'ort' or 'all', not {tensors!r}")
    with open(model_path, "rb") as f:
        model = f.read()
    try:
        nodes, outputs, _ = parse_nodes(graph_of(model))
    except (StopIteration, IndexError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{model_path}: not an ONNX model with a graph ({e})") from None
    chosen, levels = pick(nodes, tensors)
    new = [t for _, _, t in chosen if t not in outputs]
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(with_outputs(model, new), so, providers=["CPUExecutionProvider"])
    feeds = make_inputs(sess, inputs or {}, seed)
    names = [o.name for o in sess.get_outputs()]
    values = dict(zip(names, sess.run(names, feeds)))
    entries = []
    for n, idx, t in chosen:
        if isinstance(values.get(t), np.ndarray):
            entries.append({"node": n["name"], "op": n["op"], "output": idx, "tensor": t,
                            "value": np.ascontiguousarray(values[t])})
    ops = {n["name"] or n["outputs"][0]: n["op"] for n in nodes if n["outputs"]}
    for node, t in levels.items():
        if isinstance(values.get(t), np.ndarray):
            entries.append({"node": node, "op": ops[node], "output": 0, "tensor": t, "value": values[t],
                            "levels_of": t})
    return feeds, entries


def layer_values(entries):
    """{graft layer name: array}: a node's first output under the node's name, every tensor
    under its own (the first entry of a name wins)."""
    out = {}
    for e in entries:
        if e["node"] and e["output"] == 0:
            out.setdefault(e["node"], e["value"])
        out.setdefault(e["tensor"], e["value"])
    return out
