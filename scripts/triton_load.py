#!/usr/bin/env python3
"""A bounded load check of graft models served by Triton (docs/serving.md's table).

Triton's perf_analyzer does not come with the PyPI packages, so this is its small version:
C client threads (each with its own HTTP connection) share R requests per level, each thread
waiting for its answer before sending the next, and the run reports throughput (requests/s) and p50 / p99
latency. Every answer is checked against a reference output (tolerance below).

    scripts/triton_load.py [--requests R] [--model rec|cls|...] [--concurrency 1,4,16]

starts its own server on loopback (the model twice: dynamic batching on and off), prints the table as markdown
and checks the goal: throughput at the highest concurrency with dynamic batching >= 1.5x the
throughput at concurrency 1. Run with the venv's python (scripts/triton_env.sh).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import tritonclient.http as httpclient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graft_serve  # noqa: E402

# An answer matches the reference when max|a - b| <= TOL * max(1, max|b|): batching a request
# with others changes the oneDNN primitive's shape, so the rows may differ in the last bits.
TOL = 1e-4


def close(a, b):
    return a.shape == b.shape and np.all(np.isfinite(a)) and \
        float(np.max(np.abs(a - b))) <= TOL * max(1.0, float(np.max(np.abs(b))))


def models_env():
    """build/third_party/models.env (scripts/fetch_models.sh) as a dict."""
    with open(os.path.join(graft_serve.ROOT, "build", "third_party", "models.env")) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line and not line.startswith("#"))


def run_load(port, model, x, ref, concurrency, requests, out="output_0"):
    """Sends `requests` requests of input x from `concurrency` threads; returns
    (throughput/s, p50 ms, p99 ms, bad answers)."""
    lat, bad = [], []
    lock = threading.Lock()
    counter = iter(range(requests))
    clients = [httpclient.InferenceServerClient(f"127.0.0.1:{port}", connection_timeout=60, network_timeout=120)
               for _ in range(concurrency)]
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    outs = [httpclient.InferRequestedOutput(out, binary_data=True)]
    start = threading.Barrier(concurrency + 1)

    def worker(c):
        start.wait()
        while True:
            with lock:
                if next(counter, None) is None:
                    break
            t0 = time.perf_counter()
            try:
                y = c.infer(model, [inp], outputs=outs).as_numpy(out)
                ok = close(y, ref)
            except Exception as e:  # an error answer is a bad answer
                ok, y = False, e
            t1 = time.perf_counter()
            with lock:
                lat.append(t1 - t0)
                if not ok:
                    bad.append(y)

    # one client per thread (tritonclient's HTTP client is not thread-safe), connected before
    # the clock starts
    threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for c in clients:
        c.close()
    lat_ms = np.array(lat) * 1e3
    return len(lat) / wall, float(np.percentile(lat_ms, 50)), float(np.percentile(lat_ms, 99)), len(bad)


def add_models(repo, model, graft_path, max_batch, instances):
    """The two settings of the table as two models of one repository: MODEL_dyn (dynamic
    batching up to max_batch) and MODEL_single (each request runs alone)."""
    graft_serve.add_model(repo, model + "_dyn", graft_path, max_batch=max_batch, instances=instances)
    graft_serve.add_model(repo, model + "_single", graft_path, max_batch=max_batch, dynamic_batching=False,
                          instances=instances)
    return [model + "_dyn", model + "_single"]


def table(port, model, x, ref, levels, requests):
    """Rows (dynamic batching, concurrency, throughput, p50, p99, bad) of add_models' models."""
    rows = []
    for dyn in (True, False):
        name = model + ("_dyn" if dyn else "_single")
        for c in levels:
            # warm-up: the first run of each batch size creates its oneDNN primitives
            run_load(port, name, x, ref, c, 2 * c)
            rows.append((dyn, c) + run_load(port, name, x, ref, c, max(requests, c)))
    return rows


def markdown(rows):
    lines = ["| dynamic batching | concurrency | throughput (req/s) | p50 (ms) | p99 (ms) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for dyn, c, thr, p50, p99, _ in rows:
        lines.append(f"| {'on' if dyn else 'off'} | {c} | {thr:.1f} | {p50:.1f} | {p99:.1f} |")
    return "\n".join(lines)


def speedup(rows):
    """Throughput with dynamic batching at the highest concurrency over concurrency 1's."""
    on = {c: thr for dyn, c, thr, *_ in rows if dyn}
    return on[max(on)] / on[min(on)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="rec", help="rec or cls (PP-OCR, from build/third_party/models.env)")
    ap.add_argument("--requests", type=int, default=200, help="requests per concurrency level")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--max-batch", type=int, default=16)
    ap.add_argument("--instances", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(graft_serve.ROOT, "build"),
                    help="the build folder (graft, triton/graft/libtriton_graft.so)")
    ap.add_argument("--graft", help="the graft CLI (default: BUILD/graft)")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # unwinds through finally: the server stops
    a.build = os.path.abspath(a.build)
    graft = a.graft or os.path.join(a.build, "graft")
    onnx = models_env()[f"GRAFT_MODEL_{a.model.upper()}"]
    shape = {"rec": (1, 3, 48, 320), "cls": (1, 3, 48, 192)}[a.model]
    tmp = tempfile.mkdtemp(prefix="graft_load_")
    try:
        art = os.path.join(tmp, a.model + ".graft")
        subprocess.run([graft, "build", onnx, "--backend", "dnnl", "-o", art], check=True, stdout=subprocess.DEVNULL)
        x = np.random.default_rng(0).random(shape, dtype=np.float32)
        np.save(os.path.join(tmp, "x.npy"), x)
        subprocess.run([graft, "run", art, "--input", f"x={tmp}/x.npy", "--output-dir", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        ref = np.load(os.path.join(tmp, "output_0.npy"))
        levels = [int(c) for c in a.concurrency.split(",")]
        repo = os.path.join(tmp, "models")
        names = add_models(repo, a.model, art, a.max_batch, a.instances)
        srv = graft_serve.Server(repo, graft_serve.free_port_base(), build=a.build)
        try:
            if not srv.wait_ready(names):
                raise SystemExit(f"triton_load: {', '.join(names)} did not become ready")
            rows = table(srv.port, a.model, x, ref, levels, a.requests)
        finally:
            srv.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"PP-OCR {a.model} {'x'.join(map(str, shape))}, {a.requests} requests per level, "
          f"{a.instances} instances, max_batch_size {a.max_batch}, {os.cpu_count()} CPUs")
    print(markdown(rows))
    s = speedup(rows)
    bad = sum(r[-1] for r in rows)
    print(f"throughput at concurrency {max(levels)} with dynamic batching: {s:.2f}x concurrency 1's (goal >= 1.5x); "
          f"{bad} wrong answers")
    return 0 if s >= 1.5 and bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
