"""Each call of the graft package on PP-OCR and a zoo model, against ONNX Runtime's outputs and
the CLI's. Tolerances: outputs within atol 1e-4 + rtol 1e-3 of ORT (float32 models; oneDNN's
kernels sum in another order)."""
import json
import os
import subprocess

import numpy as np
import pytest

import graft
from conftest import SMALL, ort_run

RTOL, ATOL = 1e-3, 1e-4


def test_version_matches_cli(cli):
    out = subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"graft {graft.__version__}"


def test_backends_with_options_and_patterns():
    bs = graft.backends()
    assert "dnnl" in bs and "json" in bs
    dnnl = bs[bs.index("dnnl")]
    assert "threads" in [o.name for o in dnnl.options]
    assert any(p.startswith("dnnl.conv2d") for p in dnnl.patterns)


def test_import_print_parse_roundtrip(det, tmp_path):
    mod = graft.import_onnx(det, shapes={"x": [1, 3, 64, 64]})
    text = str(mod)
    assert "@I.ir_module" in text and '# span: ["p2o.Conv.0"!' in text
    layers = mod.layers()
    assert layers[0] == "x" or "p2o.Conv.0" in layers
    assert mod.get_inputs()[0].shape == [1, 3, 64, 64]
    again = graft.parse(text)
    assert str(again) == text and again.layers() == layers
    path = tmp_path / "det.relax"
    mod.save(path)
    assert str(graft.load_module(path)) == text
    assert "# span" not in mod.script(spans=False)


def test_symbolic_dims_are_strings(det):
    ins = graft.import_onnx(det).get_inputs()
    assert ins[0].shape[0:2] == [ins[0].shape[0], 3] and any(isinstance(d, str) for d in ins[0].shape)


def test_optimize_default_and_named(det):
    mod = graft.import_onnx(det, shapes={"x": [1, 3, 64, 64]})
    opt = graft.optimize(mod)
    assert "R.nn.batch_norm(" in str(mod) and "R.nn.batch_norm(" not in str(opt)
    named = graft.optimize(mod, passes=["Normalize", "DeadCodeElimination"])
    assert "R.nn.batch_norm(" in str(named)
    with pytest.raises(graft.GraftError, match="NoSuchPass"):
        graft.optimize(mod, passes=["NoSuchPass"])


def test_partition_report_regions_query(det):
    mod = graft.optimize(graft.import_onnx(det, shapes={"x": [1, 3, 64, 64]}))
    part = graft.partition(mod, backends=["dnnl"], options={"dnnl.threads": 2})
    assert "R.call_dps_packed" in str(part.module)
    assert set(part.report) >= {"regions", "host", "coverage"}
    assert part.regions and all(r.backend == "dnnl" for r in part.regions)
    assert "relax.nn.conv2d" in part.regions[0].ops
    q = part.query()
    assert set(q) == set(mod.layers()) and set(q.values()) <= {"dnnl", "host"}
    assert q["p2o.Conv.0"] == "dnnl"
    # the same partition as the CLI's report
    assert part.report["coverage"]["nodes"]["offloaded"] > 0


def test_session_det_dnnl_vs_ort(det, rng):
    x = rng.uniform(-1, 1, (1, 3, 128, 128)).astype(np.float32)
    sess = graft.InferenceSession(det, backends=["dnnl"], shapes={"x": [1, 3, 128, 128]})
    assert [i.name for i in sess.get_inputs()] == ["x"]
    out_name = sess.get_outputs()[0].name
    assert out_name == "sigmoid_0.tmp_0" and sess.get_outputs()[0].type == "tensor(float)"
    (y,) = sess.run(None, {"x": x})
    (ref,) = ort_run(det, {"x": x})
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)
    (y2,) = sess.run([out_name], {"x": x})
    np.testing.assert_array_equal(y, y2)


def test_det_equals_cli_on_reference_input(det, refs, cli, tmp_path):
    """The README's example: PP-OCR det on oneDNN from Python; its output equals the CLI's
    (graft build + graft run of the same artifact: bit for bit) and ORT's (within tolerance)."""
    x = np.load(os.path.join(refs, "det", "input_0.npy"))
    art = str(tmp_path / "det.graft")
    graft.build(det, art, backends=["dnnl"], shapes={"x": list(x.shape)})
    (y,) = graft.InferenceSession(art).run(None, {"x": x})
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli, "run", art, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path)],
                   check=True, capture_output=True)
    np.testing.assert_array_equal(y, np.load(tmp_path / "output_0.npy"))
    np.testing.assert_allclose(y, np.load(os.path.join(refs, "det", "output_0.npy")), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("backend", ["json", "dnnl", None])
def test_session_cls_vs_ort(cls_model, backend, rng):
    x = rng.uniform(-1, 1, (2, 3, 48, 192)).astype(np.float32)
    sess = graft.InferenceSession(cls_model, backends=[backend] if backend else None, shapes={"x": [2, 3, 48, 192]})
    (y,) = sess.run(None, {"x": x})
    (ref,) = ort_run(cls_model, {"x": x})
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


def test_session_rec_vs_ort(rec, rng):
    x = rng.uniform(-1, 1, (1, 3, 48, 160)).astype(np.float32)
    sess = graft.InferenceSession(rec, backends=["dnnl"], shapes={"x": [1, 3, 48, 160]})
    (y,) = sess.run(None, {"x": x})
    (ref,) = ort_run(rec, {"x": x})
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


def test_zoo_resnet18_vs_ort_refs(resnet18):
    refdir = os.path.join(os.path.dirname(resnet18), "refs", "resnet18")
    meta = json.load(open(os.path.join(refdir, "meta.json")))
    x = np.load(os.path.join(refdir, "input_0.npy"))
    sess = graft.InferenceSession(resnet18, backends=["dnnl"], shapes={meta["inputs"][0]["name"]: list(x.shape)})
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(y, np.load(os.path.join(refdir, "output_0.npy")), rtol=RTOL, atol=ATOL)


def test_artifact_bytes_and_modelmeta(cls_model, tmp_path):
    art = graft.build(cls_model, tmp_path / "cls.graft", backends=["dnnl"], shapes={"x": [1, 3, 48, 192]})
    sess = graft.InferenceSession(open(art, "rb").read())
    meta = sess.get_modelmeta()
    assert meta["externs"] >= 1 and meta["external_modules"][0][1] == "dnnl_json"
    assert any(kind == "extern" for _, kind, _ in sess.regions()) or sess.regions()
    x = np.zeros((1, 3, 48, 192), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], graft.load(art).run(None, {"x": x})[0])


def test_profile_chrome_trace(cls_model):
    sess = graft.InferenceSession(cls_model, backends=["dnnl"], shapes={"x": [1, 3, 48, 192]}, profile=True)
    sess.run(None, {"x": np.zeros((1, 3, 48, 192), np.float32)})
    path = sess.end_profiling()
    try:
        trace = json.load(open(path))
        assert trace and all(e["ph"] == "X" and e["dur"] >= 0 for e in trace)
        assert any(e["args"]["kind"] == "extern" and e["args"]["layers"] for e in trace)
        prims = [e for e in trace if e["cat"] == "Primitive"]
        assert prims and any("convolution" in e["name"] and "p2o.Conv" in e["args"]["layers"] for e in prims)
        # the primitives run inside the region's extern event
        ext = [e for e in trace if e["args"]["kind"] == "extern"]
        assert sum(e["dur"] for e in prims) <= sum(e["dur"] for e in ext) * 1.01 + 1
    finally:
        os.remove(path)


def test_diff_rows_and_first_divergence(cls_model):
    d = graft.diff(cls_model, backend="dnnl", against="reference", shapes={"x": [1, 3, 48, 192]}, rtol=1e-3)
    assert d.ok, d.describe_first()
    assert d.rows and {"name", "status"} <= set(d.rows[0])
    assert "layer" in d.table().splitlines()[0]
    assert d.summary["layers"] == len(d.rows)


def test_explore_page(cls_model, tmp_path):
    out = graft.explore(cls_model, backend="dnnl", output=tmp_path / "cls.html", shapes={"x": [1, 3, 48, 192]},
                        diff=True)
    page = open(out).read()
    assert page.startswith("<!DOCTYPE html>") or "<html" in page[:200]
    assert "<svg" in page and "p2o.Conv.0" in page


def test_small_module_session():
    sess = graft.InferenceSession(graft.parse(SMALL))
    x = np.arange(16, dtype=np.float32).reshape(1, 16) - 8
    (y,) = sess.run(None, {"x": x, "y": np.ones((1, 16), np.float32)})
    np.testing.assert_array_equal(y, np.maximum(x + 1, 0))


def test_session_symbolic_rec_any_width(rec):
    """One session for every input size: symbolic dims stay symbolic (as str in the NodeArgs)."""
    sess = graft.InferenceSession(rec, backends=["dnnl"])
    shape = sess.get_inputs()[0].shape
    assert isinstance(shape[0], str) and shape[1:3] == [3, 48] and isinstance(shape[3], str)
    assert any(isinstance(d, str) for d in sess.get_outputs()[0].shape)
    for w in (160, 320):
        x = np.random.default_rng(w).uniform(-1, 1, (1, 3, 48, w)).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        (ref,) = ort_run(rec, {"x": x})
        np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


def test_load_backend_plugin():
    """A backend plugin loads from Python as from the CLI (--backend-lib) and lists with its
    version; one built for another plugin ABI major is refused."""
    build = os.path.dirname(os.environ["GRAFT"])
    plugin = os.path.join(build, "plugins", "libgraft_xnnpack.so")
    if not os.path.exists(plugin):
        pytest.skip(f"{plugin} is not built (make plugins)")
    graft.load_backend(plugin)
    xnn = next(b for b in graft.backends() if b == "xnnpack")
    assert xnn.version == "0.1.0" and xnn.path.endswith("libgraft_xnnpack.so")
    assert "xnnpack.conv2d" in xnn.patterns
    assert all(b.path is None for b in graft.backends() if b in ("json", "dnnl"))
    with pytest.raises(graft.GraftError, match="another major version"):
        graft.load_backend(os.path.join(build, "tests", "plugins", "abi2", "libgraft_testplugin.so"))
