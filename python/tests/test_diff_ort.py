"""graft.diff(..., against="onnxruntime"): each layer against ONNX Runtime's value of it, run
in-process (python/graft/_ort.py), the same rows as `graft diff --against-dumps` on the dumps
scripts/ort_dump.py writes from the same module (docs/inspection.md)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import graft
from conftest import ROOT, _need

INT8 = os.path.join(ROOT, "build", "third_party", "int8")
pytest.importorskip("onnxruntime")


def _input(name):
    return np.load(_need(os.path.join(INT8, "refs", name, "input_0.npy")))


def test_dnnl_qdq_against_onnxruntime_matches_the_cli(cli, tmp_path):
    """Python and the CLI give each layer the same error in steps and name the same first
    divergence (the CLI's perturbation test, tests/tools/test_diff_quant.c, shows it finds the
    right layer)."""
    model = _need(os.path.join(INT8, "resnet18_qdq_pc.onnx"))
    x = _input("resnet18_qdq_pc")
    r = graft.diff(model, "dnnl", against="onnxruntime", inputs={"x": x}, atol_steps=1)
    stepped = [row for row in r.rows if "max_steps" in row]
    assert len(stepped) >= 20, r.table()
    assert all(np.isfinite(row["max_abs"]) and row["max_abs"] < 1e300 for row in stepped)
    assert "steps" in r.table().splitlines()[0]
    np.save(tmp_path / "x.npy", x)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "ort_dump.py"), model, "--out", str(tmp_path / "d"),
                    "--input", f"x={tmp_path / 'x.npy'}"], check=True)
    out = subprocess.run([cli, "diff", model, "--backend", "dnnl", "--against-dumps", str(tmp_path / "d"),
                          "--atol-steps", "1", "--json", str(tmp_path / "d.json")], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    rows = {row["name"]: row for row in json.load(open(tmp_path / "d.json"))["layers"]}
    for row in stepped:
        assert rows[row["name"]].get("max_steps") == pytest.approx(row["max_steps"]), row["name"]
    first = r.first_divergence
    assert (first or {}).get("name") == (json.load(open(tmp_path / "d.json"))["first_divergence"] or {}).get("name")


def test_dnnl_float_against_onnxruntime_every_output():
    """The float32 resnet18, every node output exposed: each observable layer within graft
    diff's default tolerance of ORT's."""
    model = _need(os.path.join(ROOT, "build", "third_party", "zoo", "resnet18.onnx"))
    r = graft.diff(model, "dnnl", against="onnxruntime", inputs={"x": _input("resnet18_qdq_pc")}, ort_tensors="all")
    assert sum("max_abs" in row for row in r.rows) >= 20, r.table()
    assert r.ok, r.describe_first()


def test_against_onnxruntime_needs_an_onnx_model():
    mod = graft.parse(open(os.path.join(ROOT, "tests", "golden", "inspect", "conv_host_conv.relax")).read())
    with pytest.raises(ValueError, match="ONNX model"):
        graft.diff(mod, "dnnl", against="onnxruntime")
