"""graft.testing: per-backend regression checks for test suites.

    from graft.testing import assert_backend_matches
    assert_backend_matches("det.onnx", "dnnl", reference="onnxruntime", rtol=1e-3, atol=1e-4)

On a mismatch the AssertionError (a :class:`BackendMismatch`) names the first diverging frontend
layer, its region and its primitive, from graft diff; the pytest plugin (graft.pytest_plugin)
adds the layer table to the failure report."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

import graft

__all__ = ["BackendMismatch", "assert_backend_matches", "reference_outputs", "compare_outputs", "matrix"]


class BackendMismatch(AssertionError):
    """A backend's outputs differ from the reference's. ``.diff`` is graft diff's result (layer
    rows, first divergence), ``.mismatches`` the outputs out of tolerance."""

    def __init__(self, message: str, diff: Optional["graft.DiffResult"], mismatches: List[Dict[str, Any]]) -> None:
        super().__init__(message)
        self.diff = diff
        self.mismatches = mismatches


def _inputs_for(sess: "graft.InferenceSession", inputs: Optional[Mapping[str, Any]], seed: int) -> Dict[str, np.ndarray]:
    if inputs is not None:
        return {k: np.ascontiguousarray(v) for k, v in inputs.items()}
    args = sess.get_inputs()
    return dict(zip([a.name for a in args], graft._random_arrays(args, seed)))


def reference_outputs(model: str, reference: str, inputs: Mapping[str, np.ndarray],
                      shapes: Optional[Mapping[str, Sequence[int]]] = None,
                      options: Optional[Mapping[str, Any]] = None) -> List[np.ndarray]:
    """The reference's outputs: "onnxruntime" (CPU provider), "reference" (graft on the host),
    or a backend name."""
    if reference == "onnxruntime":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        return ort.InferenceSession(os.fspath(model), so, providers=["CPUExecutionProvider"]).run(None, dict(inputs))
    backends = [] if reference == "reference" else [reference]
    return graft.InferenceSession(model, backends=backends, options=options, shapes=shapes).run(None, inputs)


def compare_outputs(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float, atol: float,
                    names: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """The outputs out of tolerance: |a - b| > atol + rtol * |b| anywhere, NaN or Inf on either
    side counting as a mismatch, or a shape that differs."""
    bad = []
    if len(actual) != len(expected):
        return [{"output": "*", "reason": f"{len(actual)} outputs, the reference has {len(expected)}"}]
    for i, (a, b) in enumerate(zip(actual, expected)):
        name = names[i] if names and i < len(names) else f"output_{i}"
        a = np.asarray(a)
        b = np.asarray(b)
        if a.shape != b.shape:
            bad.append({"output": name, "reason": f"shape {a.shape}, the reference's {b.shape}"})
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(a64 - b64)
        over = ~(err <= atol + rtol * np.abs(b64))  # NaN compares false: a mismatch
        if over.any():
            idx = np.unravel_index(int(np.argmax(np.where(np.isnan(err), np.inf, err))), a.shape)
            bad.append({"output": name, "bad": int(over.sum()), "numel": int(a.size),
                        "max_abs": float(np.nanmax(err)) if not np.isnan(err).all() else float("nan"),
                        "at": tuple(int(x) for x in idx), "actual": float(a64[idx]), "expected": float(b64[idx])})
    return bad


def assert_backend_matches(model: Union[str, "os.PathLike[str]"], backend: str, reference: str = "onnxruntime",
                           inputs: Optional[Mapping[str, Any]] = None, rtol: float = 1e-3, atol: float = 1e-4,
                           shapes: Optional[Mapping[str, Sequence[int]]] = None,
                           options: Optional[Mapping[str, Any]] = None, seed: int = 0,
                           per_layer: bool = False, perturb: Optional[Callable[[str, np.ndarray], bool]] = None,
                           diff_rtol: Optional[float] = None, diff_atol_scale: float = 1e-5) -> None:
    """Asserts that ``backend`` runs ``model`` like ``reference`` ("onnxruntime", "reference":
    graft on the host, or another backend) on ``inputs`` (seeded random when None): every
    output within ``atol + rtol * |ref|``, NaN and Inf counting as mismatches.

    On a mismatch it runs graft diff (the backend against graft's host path, or against the
    reference backend) and raises :class:`BackendMismatch` naming the first diverging layer,
    its region and its primitive. ``per_layer=True`` also fails when any layer diverges in
    graft diff (``diff_rtol``, default ``rtol``; ``diff_atol_scale`` times the layer's largest
    magnitude). ``perturb(layer, array) -> bool`` changes a layer's output on the backend path
    (fault injection): the check is then the per-layer one, on the perturbed run."""
    model = os.fspath(model)
    sess = graft.InferenceSession(model, backends=[backend], options=options, shapes=shapes)
    feeds = _inputs_for(sess, inputs, seed)
    names = [o.name for o in sess.get_outputs()]
    mismatches: List[Dict[str, Any]] = []
    if perturb is None:
        actual = sess.run(None, feeds)
        expected = reference_outputs(model, reference, feeds, shapes, options)
        mismatches = compare_outputs(actual, expected, rtol, atol, names)
        if not mismatches and not per_layer:
            return
    against = "reference" if reference in ("onnxruntime", "reference") else reference
    d = graft.diff(model, backend, against=against, inputs=feeds, rtol=diff_rtol if diff_rtol is not None else rtol,
                   atol=0.0, atol_scale=diff_atol_scale, shapes=shapes, options=options, perturb=perturb)
    if not mismatches and d.ok:
        return
    lines = [f"{backend} does not match {reference} on {model}"]
    for m in mismatches:
        if "reason" in m:
            lines.append(f"  {m['output']}: {m['reason']}")
        else:
            lines.append(f"  {m['output']}: {m['bad']} of {m['numel']} values out of tolerance (rtol {rtol}, atol "
                         f"{atol}), max abs error {m['max_abs']:.3g}; at {m['at']}: {m['actual']:.6g} vs "
                         f"{m['expected']:.6g}")
    lines.append(f"first diverging layer (graft diff vs {against}): {d.describe_first()}")
    if d.ok and mismatches:
        lines.append("  (no layer diverges in graft diff: the difference is in the reference, or below the "
                     "per-layer tolerance at every layer)")
    raise BackendMismatch("\n".join(lines), d, mismatches)


def matrix(backends: Optional[Sequence[str]] = None, models: Sequence[str] = ()):
    """One decorator that parametrizes a pytest test over (backend, model) pairs
    (graft.pytest_plugin.matrix)."""
    from graft.pytest_plugin import matrix as m
    return m(backends, models)
