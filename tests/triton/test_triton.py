#!/usr/bin/env python3
"""Serving graft artifacts with Triton (make triton-test; docs/serving.md).

Builds PP-OCR cls and rec and two zoo models (resnet18 with a symbolic batch, mobilenet_v3_large
with a fixed one) into a temporary folder, lays out one model repository with them plus two
models that must fail to load, starts tritonserver on 127.0.0.1 with the graft backend and checks
over HTTP and gRPC (tritonclient) that the answers are `graft run`'s, that bad requests get errors
while the server keeps serving, and a small load run. The server is stopped at the end and its
ports checked closed. Run with the venv's python (scripts/triton_env.sh):

    python tests/triton/test_triton.py [--build build] [--requests N]
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import graft_serve  # noqa: E402
import triton_load  # noqa: E402
from triton_load import close  # noqa: E402  (the tolerance, stated there)

# name: (the ONNX model: a models.env variable or a path in build/third_party, the requests' shape)
MODELS = {
    "cls": ("GRAFT_MODEL_CLS", (1, 3, 48, 192)),
    "rec": ("GRAFT_MODEL_REC", (1, 3, 48, 320)),
    "resnet18": ("symbolic/resnet18_dynbatch.onnx", (1, 3, 224, 224)),
    "mobilenet": ("zoo/mobilenet_v3_large.onnx", (1, 3, 224, 224)),
}


class Env:
    pass


def sh(*args):
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")


def setup(env, build, tmp):
    third = os.path.join(ROOT, "build", "third_party")
    menv = triton_load.models_env()
    graft = os.path.join(build, "graft")
    env.inputs, env.refs, env.arts = {}, {}, {}
    rng = np.random.default_rng(30)
    for name, (src, shape) in MODELS.items():
        onnx = menv[src] if src in menv else os.path.join(third, src)
        art = env.arts[name] = os.path.join(tmp, name + ".graft")
        sh(graft, "build", onnx, "--backend", "dnnl", "-o", art)
        # two inputs per model: the second for batches of two requests
        env.inputs[name] = [rng.random(shape, dtype=np.float32) for _ in range(2)]
        env.refs[name] = []
        for k, x in enumerate(env.inputs[name]):
            d = os.path.join(tmp, f"{name}_{k}")
            os.makedirs(d)
            np.save(os.path.join(d, "x.npy"), x)
            sh(graft, "run", art, "--input", f"x={d}/x.npy", "--output-dir", d)
            env.refs[name].append(np.load(os.path.join(d, "output_0.npy")))
    repo = env.repo = os.path.join(tmp, "models")
    graft_serve.add_model(repo, "rec", env.arts["rec"], instances=2)
    graft_serve.add_model(repo, "cls", env.arts["cls"], params={"dnnl.threads": "1"})
    # a queue delay makes the concurrent requests of the batching test meet in one batch
    graft_serve.add_model(repo, "resnet18", env.arts["resnet18"], max_batch=4, instances=2, queue_delay_us=20000)
    graft_serve.add_model(repo, "mobilenet", env.arts["mobilenet"])
    env.load_models = triton_load.add_models(repo, "cls_load", env.arts["cls"], max_batch=16, instances=2)
    # a damaged artifact: the first half of cls.graft
    graft_serve.add_model(repo, "broken", env.arts["cls"])
    data = open(env.arts["cls"], "rb").read()
    bad = os.path.join(repo, "broken", "1", "model.graft")
    os.remove(bad)
    with open(bad, "wb") as f:
        f.write(data[:len(data) // 2])
    graft_serve.add_model(repo, "badopt", env.arts["cls"], params={"dnnl.no_such_option": "1"})
    env.good = ["cls", "rec", "resnet18", "mobilenet"] + env.load_models
    env.log_path = os.path.join(tmp, "server.log")
    env.log = open(env.log_path, "w")
    env.srv = graft_serve.Server(repo, graft_serve.free_port_base(), build=build, log=env.log)
    env.port = env.srv.port
    if not env.srv.wait_ready(env.good, timeout=300):
        raise RuntimeError("the server or its models did not become ready; log: " + open(env.log_path).read()[-3000:])
    env.http = httpclient.InferenceServerClient(f"127.0.0.1:{env.port}", network_timeout=120)
    env.grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{env.port + 1}")


def infer_http(env, model, x, client=None):
    i = httpclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return (client or env.http).infer(model, [i]).as_numpy("output_0")


def infer_grpc(env, model, x):
    i = grpcclient.InferInput("x", list(x.shape), "FP32")
    i.set_data_from_numpy(x)
    return env.grpc.infer(model, [i]).as_numpy("output_0")


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def expect_close(y, ref, what):
    expect(close(y, ref), f"{what}: {y.shape} vs graft run's {ref.shape}, "
           f"max |diff| {float(np.max(np.abs(y - ref))) if y.shape == ref.shape else float('nan'):.3g}")


def test_damaged_artifact_fails_its_load_only(env):
    index = {m["name"]: m for m in env.http.get_model_repository_index()}
    for name in ("broken", "badopt"):
        expect(index[name].get("state") == "UNAVAILABLE", f"{name}: {index[name]}")
        expect(not env.http.is_model_ready(name), f"{name} is ready")
    expect("graft" in index["broken"].get("reason", "") and "model.graft" in index["broken"]["reason"],
           f"broken's reason does not name the artifact: {index['broken']}")
    expect("dnnl.no_such_option" in index["badopt"].get("reason", ""),
           f"badopt's reason does not name the option: {index['badopt']}")
    for name in env.good:
        expect(env.http.is_model_ready(name), f"{name} is not ready")


def test_config_completed_from_the_artifact(env):
    rec = env.http.get_model_config("rec")
    expect(rec["max_batch_size"] == 4 and "dynamic_batching" in rec, f"rec: {rec}")
    expect([(i["name"], i["data_type"], i["dims"]) for i in rec["input"]] == [("x", "TYPE_FP32", [3, 48, -1])],
           f"rec inputs: {rec['input']}")
    expect([(o["name"], o["data_type"]) for o in rec["output"]] == [("output_0", "TYPE_FP32")], f"rec: {rec['output']}")
    mob = env.http.get_model_config("mobilenet")  # fixed batch 1: no batching
    expect(mob.get("max_batch_size", 0) == 0 and mob["input"][0]["dims"] == [1, 3, 224, 224], f"mobilenet: {mob}")


def test_one_load_shared_by_instances(env):
    rec = env.http.get_model_config("rec")
    expect(sum(g["count"] for g in rec["instance_group"]) == 2, f"rec instances: {rec['instance_group']}")
    env.log.flush()
    loads = re.findall(r"model 'rec': loaded", open(env.log_path).read())
    expect(len(loads) == 1, f"rec loaded {len(loads)} times")


def test_http_matches_graft_run(env):
    for name in MODELS:
        expect_close(infer_http(env, name, env.inputs[name][0]), env.refs[name][0], f"{name} over HTTP")


def test_grpc_matches_graft_run(env):
    for name in MODELS:
        expect_close(infer_grpc(env, name, env.inputs[name][1]), env.refs[name][1], f"{name} over gRPC")


def test_batch_of_two_in_one_request(env):
    for name in ("rec", "resnet18"):
        y = infer_http(env, name, np.concatenate(env.inputs[name]))
        for k in range(2):
            expect_close(y[k:k + 1], env.refs[name][k], f"{name} row {k}")


def test_dynamic_batching_joins_concurrent_requests(env):
    before = env.http.get_inference_statistics("resnet18")["model_stats"][0]
    results, errors = [None] * 8, []

    def one(k):
        # tritonclient's HTTP client is not thread-safe: one per thread
        c = httpclient.InferenceServerClient(f"127.0.0.1:{env.port}", network_timeout=120)
        try:
            results[k] = infer_http(env, "resnet18", env.inputs["resnet18"][k % 2], c)
        except Exception as e:
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(not errors, f"errors: {errors}")
    for k in range(8):
        expect_close(results[k], env.refs["resnet18"][k % 2], f"resnet18 request {k}")
    after = env.http.get_inference_statistics("resnet18")["model_stats"][0]
    runs = int(after["execution_count"]) - int(before["execution_count"])
    done = int(after["inference_count"]) - int(before["inference_count"])
    expect(done == 8 and runs < 8, f"8 requests in {runs} executions ({done} inferences): none batched")


def test_bad_requests_get_errors_and_the_server_keeps_serving(env):
    x = env.inputs["rec"][0]
    bad = {
        "wrong shape": ("x", np.zeros((1, 3, 40, 320), np.float32), "FP32"),
        "wrong dtype": ("x", x.astype(np.float64), "FP64"),
        "missing input": ("y", x, "FP32"),
        # graft's own error, naming the layer: PP-OCR rec's pooling cannot take a width of 4
        "graft error": ("x", np.zeros((1, 3, 48, 4), np.float32), "FP32"),
    }
    for what, (name, data, dt) in bad.items():
        for client, mod in ((env.http, httpclient), (env.grpc, grpcclient)):
            i = mod.InferInput(name, list(data.shape), dt)
            i.set_data_from_numpy(data)
            try:
                client.infer("rec", [i])
                raise AssertionError(f"{what}: no error")
            except InferenceServerException as e:
                msg = str(e)
            if what == "graft error":
                expect("layer 'p2o.AveragePool.0'" in msg, f"{what}: the error does not name the layer: {msg}")
            expect_close(infer_http(env, "rec", x), env.refs["rec"][0], f"rec after a request with a {what}")
    expect(env.srv.proc.poll() is None and env.http.is_server_live(), "the server stopped")


def test_load_check(env):
    x, ref = env.inputs["cls"][0], env.refs["cls"][0]
    rows = triton_load.table(env.port, "cls_load", x, ref, [1, 4, 16], env.requests)
    print(triton_load.markdown(rows))
    print(f"  concurrency 16 with dynamic batching: {triton_load.speedup(rows):.2f}x concurrency 1's throughput")
    expect(sum(r[-1] for r in rows) == 0, f"wrong or failed answers: {[r for r in rows if r[-1]]}")


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]


def closed(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--requests", type=int, default=32, help="requests per level of the load check")
    a = ap.parse_args()
    # a stopped run (timeout, Ctrl-C) still stops its server: SIGTERM unwinds through finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    env = Env()
    env.requests = a.requests
    env.srv = None
    tmp = tempfile.mkdtemp(prefix="graft_triton_test_")
    passed = failed = 0
    t0 = time.monotonic()
    try:
        setup(env, os.path.abspath(a.build), tmp)
        for t in TESTS:
            try:
                t(env)
                passed += 1
                print(f"[PASS] triton::{t.__name__}", flush=True)
            except Exception as e:
                failed += 1
                print(f"[FAIL] triton::{t.__name__}: {e}", flush=True)
                if not isinstance(e, AssertionError):
                    traceback.print_exc()
    except Exception as e:
        failed += 1
        print(f"[FAIL] triton::setup: {e}", flush=True)
        traceback.print_exc()
    finally:
        if env.srv:
            # an open client connection would hold up the server's exit
            for c in (getattr(env, "http", None), getattr(env, "grpc", None)):
                if c:
                    c.close()
            rc = env.srv.stop()
            ports = [env.port + k for k in range(3)]
            if rc != 0 or not all(closed(p) for p in ports):
                failed += 1
                print(f"[FAIL] triton::stopped: exit status {rc}, ports {ports} closed: "
                      f"{[closed(p) for p in ports]}", flush=True)
            else:
                passed += 1
                print("[PASS] triton::stopped", flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"triton ({time.monotonic() - t0:.0f} s): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
