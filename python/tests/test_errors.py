"""Every error is a Python exception carrying graft's message with the file, layer and op."""
import numpy as np
import pytest

import graft
from conftest import SMALL


def test_missing_file_names_it(tmp_path):
    path = str(tmp_path / "nope.onnx")
    with pytest.raises(graft.GraftError) as e:
        graft.import_onnx(path)
    assert e.value.file == path and path in str(e.value) and e.value.status == "GR_ERR_IO"


def test_truncated_onnx(det, tmp_path):
    bad = tmp_path / "trunc.onnx"
    bad.write_bytes(open(det, "rb").read()[:5000])
    with pytest.raises(graft.GraftError) as e:
        graft.import_onnx(str(bad))
    assert str(bad) in str(e.value)


def test_parse_error_has_line():
    with pytest.raises(graft.GraftError) as e:
        graft.parse(SMALL.replace("R.add(x, y)", "R.add(x, undefined_var)"), "m.relax")
    assert e.value.file == "m.relax" and e.value.line > 0 and "undefined_var" in str(e.value)


def test_unknown_backend_and_option(det):
    mod = graft.import_onnx(det, shapes={"x": [1, 3, 64, 64]})
    with pytest.raises(graft.GraftError, match="nosuch"):
        graft.partition(mod, backends=["nosuch"])
    with pytest.raises(graft.GraftError, match="dnnl.bogus"):
        graft.partition(mod, backends=["dnnl"], options={"dnnl.bogus": 1})
    with pytest.raises(graft.GraftError, match="threads"):
        graft.InferenceSession(det, backends=["dnnl"], options={"dnnl.threads": "many"}, shapes={"x": [1, 3, 64, 64]})


def test_run_errors():
    sess = graft.InferenceSession(graft.parse(SMALL))
    ok = np.zeros((1, 16), np.float32)
    with pytest.raises(graft.GraftError) as e:
        sess.run(None, {"x": np.zeros((2, 16), np.float32), "y": ok})
    assert e.value.status != "GR_OK" and str(e.value)
    with pytest.raises(TypeError, match="float32"):
        sess.run(None, {"x": np.zeros((1, 16), np.int32), "y": ok})
    with pytest.raises(ValueError, match="missing"):
        sess.run(None, {"x": ok})
    with pytest.raises(ValueError, match="no input"):
        sess.run(None, {"x": ok, "y": ok, "z": ok})
    with pytest.raises(ValueError, match="no output"):
        sess.run(["nope"], {"x": ok, "y": ok})


def test_bad_artifact(tmp_path):
    bad = tmp_path / "bad.graft"
    bad.write_bytes(b"not an artifact")
    with pytest.raises(graft.GraftError) as e:
        graft.InferenceSession(str(bad))
    assert str(bad) in str(e.value)


def _pb(field, value):
    """One protobuf field: bytes/str as length-delimited, int as varint."""
    def varint(n):
        out = b""
        while True:
            b, n = n & 0x7F, n >> 7
            out += bytes([b | (0x80 if n else 0)])
            if not n:
                return out
    if isinstance(value, int):
        return varint(field << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(field << 3 | 2) + varint(len(data)) + data


def _value_info(name):
    dim = _pb(1, _pb(1, 4))                                   # TensorShapeProto.dim {dim_value: 4}
    tensor = _pb(1, 1) + _pb(2, dim)                          # elem_type FLOAT, shape
    return _pb(1, name) + _pb(2, _pb(1, tensor))              # ValueInfoProto {name, type {tensor_type}}


def test_unsupported_op_names_layer_and_op(tmp_path):
    """An ONNX node graft cannot import: the error names the file, the node (layer) and its op."""
    node = _pb(1, "x") + _pb(2, "y") + _pb(3, "bad_node") + _pb(4, "NoSuchOp")
    graph = _pb(1, node) + _pb(2, "g") + _pb(11, _value_info("x")) + _pb(12, _value_info("y"))
    model = _pb(1, 7) + _pb(7, graph) + _pb(8, _pb(2, 13))
    path = tmp_path / "unsupported.onnx"
    path.write_bytes(model)
    with pytest.raises(graft.GraftError) as e:
        graft.import_onnx(str(path))
    msg = str(e.value)
    assert e.value.status == "GR_ERR_UNSUPPORTED"
    assert str(path) in msg and "bad_node" in msg and "NoSuchOp" in msg
    assert e.value.layer == "bad_node" and e.value.op == "NoSuchOp"
