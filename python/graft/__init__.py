"""graft from Python: import ONNX or Relax text, partition it for oneDNN / JSON, build and run it.

The names follow ONNX Runtime (``InferenceSession``, ``run``, ``get_inputs``) and TVM
(``IRModule``, ``optimize``, ``partition``) so that users of either find their way::

    import graft, numpy as np
    sess = graft.InferenceSession("det.onnx", backends=["dnnl"], shapes={"x": [1, 3, 640, 640]})
    (probs,) = sess.run(None, {"x": np.zeros((1, 3, 640, 640), np.float32)})

Every call that does work releases the GIL; numpy arrays go in and come out without copies
(an input that is not C-contiguous is copied once); every error graft reports is a
:class:`GraftError` naming the file, the frontend layer and the op.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _graft
from ._graft import GraftError

__version__ = "0.1.0"

__all__ = [
    "__version__", "GraftError", "Backend", "BackendOption", "IRModule", "Region", "PartitionResult",
    "NodeArg", "InferenceSession", "DiffResult", "backends", "import_onnx", "parse", "load_module", "load",
    "optimize", "partition", "build", "diff", "explore",
]

PathLike = Union[str, "os.PathLike[str]"]
Options = Optional[Mapping[str, Any]]


# ---- backends -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BackendOption:
    """One option a backend accepts, set as ``options={"<backend>.<name>": value}``."""
    name: str
    type: str
    default: str
    help: str
    choices: Optional[List[str]] = None


class Backend(str):
    """A backend's name (it compares equal to the string) with its description, options and
    patterns in priority order."""
    description: str
    runtime_kind: Optional[str]
    options: List[BackendOption]
    patterns: List[str]

    def __new__(cls, info: Dict[str, Any]) -> "Backend":
        self = super().__new__(cls, info["name"])
        self.description = info.get("description", "")
        self.runtime_kind = info.get("runtime_kind")
        self.options = [BackendOption(o["name"], o["type"], o["default"], o["help"],
                                      o["choices"].split("|") if o.get("choices") else None)
                        for o in info.get("options", [])]
        self.patterns = list(info.get("patterns", []))
        self.version = info.get("version")
        self.path = info.get("path")
        return self


def load_backend(path: PathLike) -> None:
    """Loads a backend plugin library (``build/plugins/libgraft_xnnpack.so``; writing one:
    docs/writing-a-backend.md) for the whole process: its name then works as a backend
    everywhere. A plugin built for another major version of graft's plugin ABI is refused
    with a :class:`GraftError` saying so."""
    _graft.load_backend(os.fspath(path))


def backends() -> List[Backend]:
    """The registered backends (``["json", "dnnl"]``), each with ``.options`` and ``.patterns``
    (what ``graft backends`` lists)."""
    return [Backend(b) for b in json.loads(_graft.backends_json())]


def _option_list(options: Options) -> Optional[List[str]]:
    """``{"dnnl.threads": 2}`` or ``{"dnnl": {"threads": 2}}`` -> ``["dnnl.threads=2"]``."""
    if not options:
        return None
    out = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            out += _option_list({f"{key}.{k}": v for k, v in value.items()}) or []
            continue
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        out.append(f"{key}={value}")
    return out


def _backend_list(names: Optional[Union[str, Sequence[str]]]) -> List[str]:
    if names is None:
        return []
    return [names] if isinstance(names, str) else [str(n) for n in names]


# ---- IRModule -------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeArg:
    """An input or output of a model, as ONNX Runtime's ``NodeArg``: ``shape`` holds ints, a
    symbolic dim as its expression (``"n"``), or None when unknown; ``type`` is ORT's
    (``"tensor(float)"``); ``dtype`` the numpy dtype."""
    name: str
    shape: List[Union[int, str, None]]
    type: str
    dtype: Optional[np.dtype] = None


_ORT_TYPES = {"float32": "float", "float64": "double", "float16": "float16", "int64": "int64", "int32": "int32",
              "int16": "int16", "int8": "int8", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
              "uint64": "uint64", "bool": "bool"}


def _node_args(sig: List[Dict[str, Any]], names: Optional[List[str]] = None) -> List[NodeArg]:
    out = []
    for i, s in enumerate(sig):
        dt = s.get("dtype")
        name = names[i] if names and i < len(names) else s["name"]
        out.append(NodeArg(name, list(s["shape"]) if s["shape"] is not None else [],
                           f"tensor({_ORT_TYPES.get(dt, dt)})", np.dtype(dt) if dt in _ORT_TYPES else None))
    return out


class IRModule:
    """An IRModule: ``str(mod)`` is its TVMScript text with spans (the frontend layers each
    expression came from); ``mod.layers()`` the frontend layer names in model order."""

    def __init__(self, handle: "_graft.Module", source: Optional[str] = None) -> None:
        self._h = handle
        self.source = source  #: the file it came from, if any

    def __str__(self) -> str:
        return self._h.text(True, True)

    def __repr__(self) -> str:
        sig = self.signature()
        ins = ", ".join(f"{a.name}: {a.shape}" for a in sig[0])
        return f"<graft.IRModule main({ins}){' from ' + self.source if self.source else ''}>"

    def script(self, spans: bool = True, metadata: bool = True) -> str:
        """The TVMScript text (TVM's ``mod.script()``); spans and the metadata section optional."""
        return self._h.text(spans, metadata)

    def show(self) -> None:
        """Prints the module (TVM's ``mod.show()``)."""
        print(self.script())

    def save(self, path: PathLike) -> None:
        """Writes the text form (``graft.load_module`` reads it back)."""
        with open(path, "w") as f:
            f.write(str(self))

    def layers(self) -> List[str]:
        """The frontend layers that the spans name, each once, in binding order."""
        return json.loads(self._h.layers_json())

    def signature(self) -> Tuple[List[NodeArg], List[NodeArg]]:
        """main's inputs and outputs as :class:`NodeArg` lists."""
        sig = json.loads(self._h.signature_json())
        return _node_args(sig["inputs"]), _node_args(sig["outputs"])

    def get_inputs(self) -> List[NodeArg]:
        return self.signature()[0]

    def get_outputs(self) -> List[NodeArg]:
        return self.signature()[1]


def import_onnx(path: PathLike, shapes: Optional[Mapping[str, Sequence[int]]] = None, spans: bool = True) -> IRModule:
    """Imports an ONNX model; ``shapes`` binds dynamic input dims (``{"x": [1, 3, 224, 224]}``)."""
    path = os.fspath(path)
    shp = {k: [int(d) for d in v] for k, v in shapes.items()} if shapes else None
    return IRModule(_graft.import_onnx(path, shp, not spans), path)


def parse(text: str, name: str = "<string>") -> IRModule:
    """Parses a module in the text format (TVMScript as TVM prints Relax)."""
    return IRModule(_graft.parse(text, name))


def load_module(path: PathLike) -> IRModule:
    """Reads a ``.relax`` text file (``graft.import_onnx`` for ``.onnx``)."""
    path = os.fspath(path)
    if path.endswith(".onnx"):
        return import_onnx(path)
    return IRModule(_graft.load_module(path), path)


def _as_module(model: Union[PathLike, IRModule], shapes: Optional[Mapping[str, Sequence[int]]] = None) -> IRModule:
    if isinstance(model, IRModule):
        return model
    path = os.fspath(model)
    return import_onnx(path, shapes) if path.endswith(".onnx") else load_module(path)


def optimize(mod: IRModule, passes: Optional[Sequence[str]] = None, opt_level: Optional[int] = None) -> IRModule:
    """Runs the default pipeline (what ``graft build`` runs first), or the named passes in order
    (``["Normalize", "FoldConstant"]``, as ``graft opt --passes``)."""
    csv = ",".join(passes) if passes is not None else None
    out = IRModule(mod._h.optimize(csv, -1 if opt_level is None else int(opt_level)), mod.source)
    return out


# ---- partition ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """An offloaded region: its symbol, backend, frontend layers and ops (composite by composite)."""
    name: str
    backend: str
    layers: List[str]
    ops: List[str]
    composites: List[str] = field(default_factory=list)


class PartitionResult:
    """What ``graft.partition`` returns: ``.module`` (the partitioned IRModule), ``.report`` (the
    JSON report of ``graft partition --report json`` as dicts), ``.regions`` and ``.query()``."""

    def __init__(self, module: IRModule, report: Dict[str, Any], source: IRModule) -> None:
        self.module = module
        self.report = report
        self._source = source
        self.regions = [Region(r["symbol"], r["backend"], list(r.get("layers", [])),
                               [op for c in r.get("composites", []) for op in c.get("ops", [])],
                               [c["name"] for c in r.get("composites", [])]) for r in report.get("regions", [])]

    @property
    def coverage(self) -> Dict[str, Any]:
        return self.report.get("coverage", {})

    @property
    def host(self) -> List[Dict[str, Any]]:
        """The ops that stayed on the host, each with the reason."""
        return self.report.get("host", [])

    def query(self) -> Dict[str, str]:
        """``{layer: backend or "host"}`` for every frontend layer of the input module
        (OpenVINO's ``query_model``)."""
        where = {}
        for r in self.regions:
            for layer in r.layers:
                where.setdefault(layer, r.backend)
        return {layer: where.get(layer, "host") for layer in self._source.layers()}

    def __repr__(self) -> str:
        share = self.coverage.get("nodes", {}).get("share")
        return f"<graft.PartitionResult {len(self.regions)} regions, node share {share}>"


def partition(mod: Union[IRModule, PathLike], backends: Union[str, Sequence[str]] = ("json",),
              patterns: Optional[PathLike] = None, options: Options = None) -> PartitionResult:
    """Offloads regions to the backends (``graft partition``): FuseOpsByPattern,
    MergeCompositeFunctions, RunCodegen. ``patterns`` is a pattern file (text format) tried
    before the backends' own; ``options`` the backends' options (``{"dnnl.threads": 2}``)."""
    src = _as_module(mod)
    h, report = src._h.partition(_backend_list(backends), os.fspath(patterns) if patterns else None,
                                 _option_list(options))
    return PartitionResult(IRModule(h, src.source), json.loads(report), src)


# ---- sessions -------------------------------------------------------------------------------

def _compile(model: Union[PathLike, IRModule], backends: Sequence[str], options: Options,
             shapes: Optional[Mapping[str, Sequence[int]]], optimize_first: bool,
             path: Optional[str] = None) -> "_graft.Model":
    mod = _as_module(model, shapes)
    if optimize_first:
        mod = optimize(mod)
    if backends:
        mod = partition(mod, backends, options=options).module
    return _graft.Model.from_module(mod._h, _option_list(options), path)


class InferenceSession:
    """Runs a model like ONNX Runtime's ``InferenceSession``.

    ``path_or_model`` is an ``.onnx`` or ``.relax`` file, an :class:`IRModule`, a built ``.graft``
    artifact, or an artifact's bytes. Models are optimized (the default pipeline, unless
    ``optimize=False``), partitioned for ``backends`` (none: everything on the host) and built
    into an artifact in memory. ``run`` may be called from several threads at once.
    ``profile=True`` records every instruction (host kernel, region, reference op) and every
    oneDNN primitive with its frontend layers; ``end_profiling()`` writes the Chrome trace and
    returns its path. While any session profiles, oneDNN regions run their primitives one at a
    time (the primitive profiler is process-wide)."""

    def __init__(self, path_or_model: Union[PathLike, IRModule, bytes], backends: Optional[Sequence[str]] = None,
                 options: Options = None, shapes: Optional[Mapping[str, Sequence[int]]] = None,
                 profile: bool = False, optimize: bool = True, profile_file_prefix: str = "graft_profile") -> None:
        self._backends = _backend_list(backends)
        self._options = dict(options or {})
        names_in = names_out = None
        if isinstance(path_or_model, (bytes, bytearray)):
            self._model = _graft.Model.load(bytes(path_or_model), _option_list(options))
            self._path = None
        elif isinstance(path_or_model, IRModule):
            self._model = _compile(path_or_model, self._backends, options, shapes, optimize)
            self._path = path_or_model.source
        else:
            path = os.fspath(path_or_model)
            self._path = path
            if path.endswith(".graft"):
                self._model = _graft.Model.load(path, _option_list(options))
            else:
                self._model = _compile(path, self._backends, options, shapes, optimize)
                if path.endswith(".onnx"):
                    io = json.loads(_graft.onnx_io_names(path))
                    names_in, names_out = io["inputs"], io["outputs"]
        sig = json.loads(self._model.signature_json())
        self._inputs = _node_args(sig["inputs"], names_in)
        self._outputs = _node_args(sig["outputs"], names_out)
        self._in_index = {a.name: i for i, a in enumerate(self._inputs)}
        # the IR's (sanitized) names are accepted too
        for i, s in enumerate(sig["inputs"]):
            self._in_index.setdefault(s["name"], i)
        self._out_index = {a.name: i for i, a in enumerate(self._outputs)}
        for i, s in enumerate(sig["outputs"]):
            self._out_index.setdefault(s["name"], i)
        self._in_dtypes = [a.dtype for a in self._inputs]
        self._profile_prefix = profile_file_prefix
        self._profile_start = time.time()
        if profile:
            self.start_profiling()

    # ORT's introspection
    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """The backends the session offloads to (ORT's execution providers), then "host"."""
        return self._backends + ["host"]

    def get_provider_options(self) -> Dict[str, Any]:
        return dict(self._options)

    def get_modelmeta(self) -> Dict[str, Any]:
        """The plan summary: arena and object sizes, kernels, external modules and engines."""
        return self._model.info()

    def regions(self) -> List[Tuple[str, str, List[str]]]:
        """The artifact's span table: (region or kernel name, kind, frontend layers)."""
        return [(n, k, [x for x in layers.split(",") if x]) for n, k, layers in self._model.regions()]

    def _feeds(self, input_feed: Mapping[str, Any]) -> List[np.ndarray]:
        args: List[Any] = [None] * len(self._inputs)
        for name, value in input_feed.items():
            i = self._in_index.get(name)
            if i is None:
                raise ValueError(f"the model has no input '{name}' (inputs: {[a.name for a in self._inputs]})")
            if type(value) is not np.ndarray:
                value = np.from_dlpack(value) if hasattr(value, "__dlpack__") else np.asarray(value, self._in_dtypes[i])
            args[i] = value
        if any(a is None for a in args):
            missing = [self._inputs[i].name for i, a in enumerate(args) if a is None]
            raise ValueError(f"missing inputs: {missing}")
        return args

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[np.ndarray]:
        """Runs the model (ORT's ``run``): ``output_names`` None for every output, or a list of
        names; ``input_feed`` maps input names to numpy arrays (or objects with ``__dlpack__``).
        The outputs are numpy arrays over graft's result memory (no copy)."""
        outs = self._model.run(self._feeds(input_feed))
        if output_names is None:
            return outs
        try:
            return [outs[self._out_index[n]] for n in output_names]
        except KeyError as e:
            raise ValueError(f"the model has no output {e} (outputs: {[a.name for a in self._outputs]})") from None

    def run_with_list(self, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
        """Runs with the inputs in the model's order (no name lookup)."""
        return self._model.run(list(inputs))

    def start_profiling(self) -> None:
        self._model.set_profiling(True)
        self._profile_start = time.time()
        self._model.take_profile()

    def end_profiling(self) -> str:
        """Stops profiling and writes the Chrome trace (ONNX Runtime's profile format: "X"
        events, "Node" for each instruction with its kind, name and frontend layers, "Primitive"
        for each oneDNN primitive with its region, index, implementation and layers); returns
        its path."""
        self._model.set_profiling(False)
        events = self._model.take_profile()
        regions = {n: layers for n, _, layers in self._model.regions()}
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(self._profile_start))
        path = os.path.abspath(f"{self._profile_prefix}_{stamp}_{os.getpid()}_{id(self):x}.json")
        origin = min((e[3] for e in events), default=0.0)
        trace = []
        for kind, name, layers, start, dur, tid, prim in events:
            ev = {"cat": "Node", "ph": "X", "name": name or kind, "pid": os.getpid(), "tid": tid,
                  "ts": round(start - origin, 3), "dur": round(dur, 3),
                  "args": {"kind": kind, "layers": regions.get(name) or layers or ""}}
            if prim is not None:
                index, pkind, impl = prim
                ev.update(cat="Primitive", name=f"{pkind} {impl}")
                ev["args"].update(region=name, index=index, impl=impl, layers=layers)
            trace.append(ev)
        with open(path, "w") as f:
            json.dump(trace, f)
        return path


def load(path: PathLike, options: Options = None) -> InferenceSession:
    """Loads a built ``.graft`` artifact (``InferenceSession(path)``)."""
    return InferenceSession(path, options=options)


def build(src: Union[PathLike, IRModule], dst: PathLike, backends: Optional[Sequence[str]] = None,
          options: Options = None, shapes: Optional[Mapping[str, Sequence[int]]] = None,
          optimize: bool = True) -> str:
    """Builds the deployable artifact (``graft build``): the default pipeline, a partition for
    the backends, host code by LLVM; writes it to ``dst`` and returns the path."""
    dst = os.fspath(dst)
    _compile(src, _backend_list(backends), options, shapes, optimize, dst)
    return dst


# ---- diff and explore -----------------------------------------------------------------------

class DiffResult:
    """graft diff's per-layer rows (``.rows``, model order) and the first layer out of tolerance
    (``.first_divergence``, None when every observable layer is within it)."""

    def __init__(self, doc: Dict[str, Any], document: Dict[str, Any]) -> None:
        self.doc = doc
        self.rows: List[Dict[str, Any]] = doc.get("layers", [])
        self.first_divergence: Optional[Dict[str, Any]] = doc.get("first_divergence") or None
        self.summary: Dict[str, Any] = doc.get("summary", {})
        self.regions: List[Dict[str, Any]] = document.get("regions", [])

    @property
    def ok(self) -> bool:
        return self.first_divergence is None

    def where(self, row: Dict[str, Any]) -> str:
        """"region 0 (symbol), composite C, primitive 3 convolution (impl)" or "host op X"."""
        w = row.get("where") or row.get("region") or ""
        if not w:
            return "host" + (f": {row['reason']}" if row.get("reason") else "")
        if w == "host":
            return f"host op {row.get('node_op', '')}"
        syms = [r.get("symbol") for r in self.regions]
        text = f"region {syms.index(w) if w in syms else '?'} ({w})"
        if row.get("composite"):
            text += f", composite {row['composite']}"
        if row.get("unobservable"):
            text += f", fused into {row['unobservable']}"
        elif "prim" in row:
            text += f", primitive {row['prim']} {row.get('prim_kind', '')} ({row.get('prim_impl', '')})"
        elif row.get("node_op"):
            text += f", node {row['node_op']}"
        return text

    def table(self, limit: Optional[int] = None) -> str:
        """The layer table of ``graft diff``."""
        steps = any("max_steps" in r for r in self.rows)  # a quantized model: errors in steps too
        lines = [f"{'order':>5}  {'layer':<34} {'status':<12} {'max_abs':>10} {'max_rel':>10}"
                 f"{'     steps' if steps else ''} {'bad/values':>14}  computed by"]
        rows = self.rows if limit is None else self.rows[:limit]
        for i, r in enumerate(rows):
            cnt = f"{r.get('bad')}/{r.get('numel')}" if "numel" in r else ""
            ma = f"{r['max_abs']:10.3g}" if "max_abs" in r else f"{'-':>10}"
            mr = f"{r['max_rel']:10.3g}" if "max_rel" in r else f"{'-':>10}"
            st = (f" {r['max_steps']:9.3g}" if "max_steps" in r else f" {'-':>9}") if steps else ""
            lines.append(f"{i:5}  {r.get('name', ''):<34} {r.get('status', ''):<12} {ma} {mr}{st} {cnt:>14}  {self.where(r)}")
        if limit is not None and len(self.rows) > limit:
            lines.append(f"  ... {len(self.rows) - limit} more layers")
        return "\n".join(lines)

    def describe_first(self) -> str:
        f = self.first_divergence
        if not f:
            return "every observable layer is within tolerance"
        text = f"layer {f.get('name')} ({f.get('op', '')}): {self.where(f)}"
        if "max_abs" in f:
            text += (f": max abs {f['max_abs']:.3g}, max rel {f['max_rel']:.3g}, "
                     f"{f.get('bad')} of {f.get('numel')} values out of tolerance")
        if "max_steps" in f:
            text += f", {f['max_steps']:.3g} steps of {f['step']:.4g}"
        return text

    def __repr__(self) -> str:
        return f"<graft.DiffResult {self.summary}>"


def _random_arrays(args: Sequence[NodeArg], seed: int = 0) -> List[np.ndarray]:
    """Seeded inputs for these NodeArgs: uniform in [-1, 1) for floats, 0..9 for integers."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if any(not isinstance(d, int) for d in a.shape):
            raise ValueError(f"input '{a.name}' has dims {a.shape}: give shapes= or inputs=")
        dt = a.dtype or np.dtype(np.float32)
        if dt.kind == "f":
            out.append(rng.uniform(-1, 1, a.shape).astype(dt))
        else:
            out.append(rng.integers(0, 10, a.shape).astype(dt))
    return out


def _ordered_inputs(mod: IRModule, inputs: Optional[Mapping[str, Any]], onnx_names: Optional[List[str]]) -> List[np.ndarray]:
    if inputs is None:
        return _random_arrays(mod.get_inputs())
    ins = mod.get_inputs()
    index = {a.name: i for i, a in enumerate(ins)}
    for i, n in enumerate(onnx_names or []):
        index.setdefault(n, i)
    args: List[Any] = [None] * len(ins)
    for k, v in inputs.items():
        if k not in index:
            raise ValueError(f"the model has no input '{k}'")
        args[index[k]] = np.ascontiguousarray(v)
    if any(a is None for a in args):
        raise ValueError(f"missing inputs: {[ins[i].name for i, a in enumerate(args) if a is None]}")
    return args


def _inspect(model: Union[PathLike, IRModule], backend: Union[str, Sequence[str]], *, inputs, shapes, options,
             optimize_first: bool, run: bool = True, **kw) -> Tuple[Optional[Dict[str, Any]], Dict[str, Any]]:
    mod = _as_module(model, shapes)
    onnx_names = None
    if mod.source and mod.source.endswith(".onnx"):
        onnx_names = json.loads(_graft.onnx_io_names(mod.source))["inputs"]
    if optimize_first:
        mod = optimize(mod)
    args = _ordered_inputs(mod, inputs, onnx_names) if run else None
    d, doc = mod._h.inspect(_backend_list(backend), _option_list(options), args, **kw)
    return (json.loads(d) if d else None), json.loads(doc)


def diff(model: Union[PathLike, IRModule], backend: Union[str, Sequence[str]] = "dnnl", against: str = "reference",
         inputs: Optional[Mapping[str, Any]] = None, rtol: float = 1e-3, atol: float = 0.0,
         atol_scale: float = 1e-5, shapes: Optional[Mapping[str, Sequence[int]]] = None, options: Options = None,
         optimize: bool = True, perturb: Any = None, atol_steps: float = 0.0, ort_tensors: str = "ort") -> DiffResult:
    """``graft diff``: runs the backend path and the ``against`` path ("reference": the model on
    the host, or another backend) on the same inputs (random when None) and compares every
    frontend layer's output, layers inside offloaded regions too. A value is out of tolerance
    when ``|a - b| > atol + atol_scale * max|B| + rtol * |b|``. ``perturb(layer, array) -> bool``
    may change a backend-path output in place (fault injection for tests).

    ``against="onnxruntime"`` (an ONNX model) compares each layer with ONNX Runtime's value of it
    (``graft diff --against-dumps``): ORT runs the model with its node outputs exposed
    (``ort_tensors``: "ort" keeps its QDQ fusions, "all" exposes every node output), layers
    matched by node name. A QDQ model's layers compare u8/s8 levels at their scale, give the
    error in steps of it (row "max_steps") and add ``atol_steps`` steps to their atol."""
    if against == "onnxruntime":
        return _diff_onnxruntime(model, backend, inputs, rtol, atol, atol_scale, atol_steps, shapes, options,
                                 optimize, ort_tensors)
    d, document = _inspect(model, backend, inputs=inputs, shapes=shapes, options=options, optimize_first=optimize,
                           diff=True, rtol=rtol, atol=atol, atol_scale=atol_scale,
                           against=None if against == "reference" else against, perturb=perturb)
    return DiffResult(d or {}, document)


def _diff_onnxruntime(model, backend, inputs, rtol, atol, atol_scale, atol_steps, shapes, options, optimize_first,
                      ort_tensors) -> DiffResult:
    mod = _as_module(model, shapes)
    if not (mod.source and mod.source.endswith(".onnx")):
        raise ValueError('against="onnxruntime" needs an ONNX model (a path, or a module imported from one)')
    from . import _ort
    onnx_names = json.loads(_graft.onnx_io_names(mod.source))["inputs"]
    if optimize_first:
        mod = optimize(mod)
    args = _ordered_inputs(mod, inputs, onnx_names)
    _, entries = _ort.run(mod.source, dict(zip(onnx_names, args)), tensors=ort_tensors)
    d, doc = mod._h.diff_values(_backend_list(backend), _option_list(options), args, _ort.layer_values(entries),
                                rtol, atol, atol_scale, atol_steps, mod.source)
    return DiffResult(json.loads(d), json.loads(doc))


def explore(model: Union[PathLike, IRModule], backend: Union[str, Sequence[str]] = "dnnl",
            output: PathLike = "explore.html", profile: bool = False, diff: bool = False,
            against: str = "reference", inputs: Optional[Mapping[str, Any]] = None, rtol: float = 1e-3,
            atol: float = 0.0, atol_scale: float = 1e-5, shapes: Optional[Mapping[str, Sequence[int]]] = None,
            options: Options = None, optimize: bool = True) -> str:
    """``graft explore``: one self-contained HTML page of the partition (the graph by layer,
    coloured by region; host ops and why; per layer its IR, placement, primitives, time and
    error with ``profile`` / ``diff``). Returns the page's path."""
    run = profile or diff
    _, document = _inspect(model, backend, inputs=inputs, shapes=shapes, run=run,
                           options=options, optimize_first=optimize, observe=run, profile=profile, diff=diff,
                           rtol=rtol, atol=atol, atol_scale=atol_scale,
                           against=None if against == "reference" else against)
    src = model.source if isinstance(model, IRModule) else os.fspath(model)
    document["model"] = src or "<module>"
    out = os.fspath(output)
    _graft.write_explore_html(json.dumps(document), out)
    return out


from . import testing  # noqa: E402  (graft.testing uses the names above)
