"""Shared fixtures: the models of build/third_party/models.env (PP-OCR det/rec/cls, ONNX Runtime's
reference outputs) and the zoo; the CLI (GRAFT, default build/graft) for comparisons."""
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _models_env():
    env = {}
    path = os.path.join(ROOT, "build", "third_party", "models.env")
    if os.path.exists(path):
        for line in open(path):
            if "=" in line and not line.startswith("#"):
                k, v = line.strip().split("=", 1)
                env[k] = v
    return env


ENV = _models_env()
ZOO = os.path.join(ROOT, "build", "third_party", "zoo")

# A small model in the text format: the session-overhead and zero-copy checks need no file.
SMALL = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16), dtype="float32"), y: R.Tensor((1, 16), dtype="float32")) -> R.Tensor((1, 16), dtype="float32"):
        with R.dataflow():
            a = R.add(x, y)  # span: "add0"!
            b = R.nn.relu(a)  # span: "relu0"!
            R.output(b)
        return b
"""


def _need(path):
    if not path or not os.path.exists(path):
        pytest.skip(f"model not fetched: {path} (make models)")
    return path


@pytest.fixture(scope="session")
def det():
    return _need(ENV.get("GRAFT_MODEL_DET"))


@pytest.fixture(scope="session")
def cls_model():
    return _need(ENV.get("GRAFT_MODEL_CLS"))


@pytest.fixture(scope="session")
def rec():
    return _need(ENV.get("GRAFT_MODEL_REC"))


@pytest.fixture(scope="session")
def refs():
    return _need(ENV.get("GRAFT_REFS"))


@pytest.fixture(scope="session")
def resnet18():
    return _need(os.path.join(ZOO, "resnet18.onnx"))


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("GRAFT", os.path.join(ROOT, "build", "graft"))
    return _need(path)


@pytest.fixture
def rng():
    return np.random.default_rng(20240521)


def ort_run(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
