"""A regression suite written with graft.testing: every backend matches ONNX Runtime on the
PP-OCR classifier; a perturbed backend fails with the first diverging layer, its region and its
primitive named, and the pytest plugin adds the layer table to the report."""
import os

import numpy as np
import pytest

import graft
from graft.testing import BackendMismatch, assert_backend_matches, matrix
from conftest import ENV

pytest_plugins = ["pytester"]

CLS = ENV.get("GRAFT_MODEL_CLS", "")
SHAPES = {"x": [1, 3, 48, 192]}
needs_cls = pytest.mark.skipif(not os.path.exists(CLS), reason="PP-OCR not fetched (make models)")


@needs_cls
@matrix(backends=["dnnl", "json"], models=[CLS])
def test_backend_matches_onnxruntime(backend, model):
    assert_backend_matches(model, backend, reference="onnxruntime", shapes=SHAPES, rtol=1e-3, atol=1e-4)


@needs_cls
def test_backend_matches_reference_per_layer():
    assert_backend_matches(CLS, "dnnl", reference="reference", shapes=SHAPES, per_layer=True)


@needs_cls
def test_perturbed_backend_fails_naming_layer_region_primitive():
    target = "p2o.Relu.1"

    def perturb(layer, value):
        if layer != target:
            return False
        value += 0.5
        return True

    with pytest.raises(BackendMismatch) as e:
        assert_backend_matches(CLS, "dnnl", reference="onnxruntime", shapes=SHAPES, perturb=perturb)
    msg = str(e.value)
    assert f"layer {target}" in msg and "region 0" in msg
    assert "primitive" in msg or "fused into" in msg
    first = e.value.diff.first_divergence
    assert first["name"] == target and first["status"] == "diverges"


@needs_cls
def test_patched_output_fails(monkeypatch):
    """A backend whose outputs are off (patched after the run) fails on the outputs."""
    real = graft.InferenceSession.run

    def patched(self, names, feeds, run_options=None):
        return [y + np.float32(1e-2) for y in real(self, names, feeds, run_options)]

    monkeypatch.setattr(graft.InferenceSession, "run", patched)
    with pytest.raises(BackendMismatch, match="values out of tolerance"):
        assert_backend_matches(CLS, "dnnl", reference="onnxruntime", shapes=SHAPES, rtol=1e-3, atol=1e-4)


@needs_cls
def test_plugin_reports_layer_table(pytester):
    pytester.makepyfile(f"""
        import numpy as np
        from graft.testing import assert_backend_matches

        def test_off():
            def perturb(layer, v):
                if layer == "p2o.Relu.1":
                    v += 0.5
                    return True
                return False
            assert_backend_matches({CLS!r}, "dnnl", shapes={{"x": [1, 3, 48, 192]}}, perturb=perturb)
    """)
    result = pytester.runpytest_subprocess()  # the plugin loads through its entry point
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*graft diff layers*", "*order*layer*status*", "*p2o.Relu.1*diverges*"])


def test_fixtures_cover_every_backend(graft_backend):
    assert graft_backend in graft.backends()
