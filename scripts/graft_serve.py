#!/usr/bin/env python3
"""Serves graft artifacts with Triton Inference Server (docs/serving.md).

    scripts/graft_serve.py MODEL.graft|DIR [--port N] [options]

MODEL.graft: a model repository with that one model (named after the file) is laid out in a
temporary folder. DIR: a folder of *.graft files (one model each) or a Triton model repository
already laid out (NAME/config.pbtxt + NAME/1/model.graft). tritonserver, installed by
scripts/triton_env.sh from PyPI, then serves it with the graft backend (make triton-backend) on
127.0.0.1: HTTP on N (default 8000), gRPC on N+1, metrics on N+2. The script waits until every
model is ready, prints the endpoints and stays in the foreground; Ctrl-C stops the server.

Also a module: the tests and the load bench lay out, start and stop servers through it.
Standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triton_env():
    """scripts/triton_env.sh's assignments (it installs on first use)."""
    out = subprocess.run(["sh", os.path.join(ROOT, "scripts", "triton_env.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def config_text(name, max_batch=None, dynamic_batching=True, instances=1, params=None,
                queue_delay_us=None):
    """config.pbtxt of a graft model. Inputs, outputs and (max_batch None) max_batch_size are
    left out: the backend fills them in from the artifact, with dynamic batching when the
    artifact has a symbolic batch dim. dynamic_batching False: each request runs alone."""
    lines = [f'name: "{name}"', 'backend: "graft"']
    if max_batch is not None:
        lines.append(f"max_batch_size: {max_batch}")
    if dynamic_batching:
        delay = f" max_queue_delay_microseconds: {queue_delay_us}" if queue_delay_us else ""
        lines.append("dynamic_batching {" + delay + " }")
    lines.append(f"instance_group [ {{ count: {instances} kind: KIND_CPU }} ]")
    for k, v in (params or {}).items():
        lines.append(f'parameters {{ key: "{k}" value: {{ string_value: "{v}" }} }}')
    return "\n".join(lines) + "\n"


def add_model(repo, name, graft_path, **config):
    """repo/name/config.pbtxt and repo/name/1/model.graft (a link to graft_path)."""
    d = os.path.join(repo, name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(config_text(name, **config))
    dst = os.path.join(d, "1", "model.graft")
    if os.path.lexists(dst):
        os.remove(dst)
    os.symlink(os.path.abspath(graft_path), dst)


def model_names(repo):
    return sorted(n for n in os.listdir(repo) if os.path.isfile(os.path.join(repo, n, "config.pbtxt")))


def backend_dir(build="build"):
    """BUILD/triton, Triton's --backend-directory (BUILD relative to the repository root)."""
    d = os.path.join(ROOT, build, "triton")
    if not os.path.isfile(os.path.join(d, "graft", "libtriton_graft.so")):
        raise SystemExit(f"graft_serve: {d}/graft/libtriton_graft.so is missing: run `make triton-backend`")
    return d


class Server:
    """A tritonserver on 127.0.0.1: HTTP on port, gRPC on port + 1, metrics on port + 2."""

    def __init__(self, repo, port, build="build", log=None, extra=()):
        env = triton_env()
        self.port = port
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = env["TRITON_LIBS"] + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
        args = [env["TRITON_SERVER"], f"--model-repository={repo}", f"--backend-directory={backend_dir(build)}",
                "--http-address=127.0.0.1", f"--http-port={port}",
                "--grpc-address=127.0.0.1", f"--grpc-port={port + 1}",
                "--allow-metrics=true", "--allow-gpu-metrics=false", "--metrics-address=127.0.0.1",
                f"--metrics-port={port + 2}",
                # a model that fails to load leaves the others serving
                "--exit-on-error=false", *extra]
        self.log = log
        self.proc = subprocess.Popen(args, env=e, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def status(self, path):
        try:
            with urllib.request.urlopen(self.url(path), timeout=2) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, OSError):
            return None

    def index(self):
        """The repository index: {model name: {"state": ..., "reason": ...}}; {} when down."""
        req = urllib.request.Request(self.url("/v2/repository/index"), data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                return {m["name"]: m for m in json.load(r)}
        except (urllib.error.URLError, OSError, ValueError):
            return {}

    def wait_ready(self, models, timeout=120):
        """Waits until the server is live and each model is ready; False on timeout, on exit or
        as soon as one of them failed to load."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            if self.status("/v2/health/live") == 200:
                if all(self.status(f"/v2/models/{m}/ready") == 200 for m in models):
                    return True
                index = self.index()
                if any(index.get(m, {}).get("state") == "UNAVAILABLE" for m in models):
                    return False
            time.sleep(0.25)
        return False

    def stop(self, timeout=60):
        """SIGTERM (Triton finishes its requests in flight), SIGKILL after timeout seconds."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def free_port_base(n=3):
    """A port p with p .. p + n - 1 free on 127.0.0.1 (checked, then released)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p + n > 65535:
            continue
        try:
            socks = []
            for k in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p + k))
            return p
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports on 127.0.0.1")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="MODEL.graft, a folder of *.graft files or a Triton model repository")
    ap.add_argument("--port", type=int, default=8000, help="HTTP port; gRPC on N+1, metrics on N+2")
    ap.add_argument("--name", help="the model's name (one MODEL.graft; default: the file's name)")
    ap.add_argument("--max-batch", type=int, help="max_batch_size (default: the backend's, 4)")
    ap.add_argument("--no-dynamic-batching", action="store_true", help="run each request alone")
    ap.add_argument("--instances", type=int, default=2, help="model instances (share one loaded artifact)")
    ap.add_argument("--backend-opt", action="append", default=[], metavar="BACKEND.NAME=VALUE",
                    help="a graft backend option, e.g. dnnl.threads=1")
    ap.add_argument("--build", default="build", help="the build folder with triton/graft/libtriton_graft.so")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for the models")
    a = ap.parse_args()
    params = dict(o.split("=", 1) for o in a.backend_opt if "=" in o)
    tmp = None
    src = os.path.abspath(a.model)
    if os.path.isdir(src) and model_names(src):
        repo = src
    else:
        tmp = tempfile.mkdtemp(prefix="graft_serve_")
        repo = os.path.join(tmp, "models")
        os.makedirs(repo)
        files = [src] if os.path.isfile(src) else sorted(
            os.path.join(src, f) for f in os.listdir(src) if f.endswith(".graft")) if os.path.isdir(src) else []
        if not files:
            raise SystemExit(f"graft_serve: {a.model}: no .graft file or model repository")
        for f in files:
            name = a.name if a.name and len(files) == 1 else os.path.splitext(os.path.basename(f))[0]
            add_model(repo, name, f, max_batch=a.max_batch, dynamic_batching=not a.no_dynamic_batching,
                      instances=a.instances, params=params)
    names = model_names(repo)
    srv = Server(repo, a.port, build=a.build, log=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        if not srv.wait_ready(names, a.timeout):
            index = srv.index()
            for m in names:
                st = index.get(m, {})
                print(f"graft_serve: {m}: {st.get('state', 'not loaded')} {st.get('reason', '')}", file=sys.stderr)
            print(f"graft_serve: not every model is ready (waited at most {a.timeout:g} s)", file=sys.stderr)
            return 1
        print(f"graft_serve: serving {', '.join(names)} from {repo}\n"
              f"  HTTP  http://127.0.0.1:{a.port}/v2/models/{names[0]}/infer\n"
              f"  gRPC  127.0.0.1:{a.port + 1}\n  metrics http://127.0.0.1:{a.port + 2}/metrics", flush=True)
        srv.proc.wait()
        return srv.proc.returncode
    except KeyboardInterrupt:
        return 0
    finally:
        srv.stop()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
