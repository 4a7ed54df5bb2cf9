#!/bin/sh
# Installs Triton Inference Server for `scripts/graft_serve.py` and the serving tests: a venv
# with PyPI's nvidia-pytriton (it ships the tritonserver program, 2.51, and the libraries it
# needs), tritonclient and numpy. Idempotent: once installed, it only prints where things are,
# as shell assignments:
#   TRITON_SERVER   the tritonserver program (made executable: the wheel does not mark it)
#   TRITON_PYTHON   the venv's python (tritonclient, numpy)
#   TRITON_LIBS     the wheel's bundled library folder (for LD_LIBRARY_PATH)
# Usage (from anywhere): scripts/triton_env.sh [VENV]   (default build/third_party/tritonvenv)
set -eu
cd "$(dirname "$0")/.."
venv=${1:-build/third_party/tritonvenv}
py=$venv/bin/python
# (the check runs without a caller's LD_PRELOAD, e.g. a sanitizer runtime meant for the server)
if ! env -u LD_PRELOAD "$py" -c 'import pytriton, tritonclient.http, tritonclient.grpc, numpy' 2>/dev/null; then
    mkdir -p "$(dirname "$venv")"
    env -u LD_PRELOAD python3 -m venv --clear "$venv" >&2
    env -u LD_PRELOAD "$py" -m pip install -q --disable-pip-version-check nvidia-pytriton 'tritonclient[http,grpc]' numpy >&2
fi
site=$("$py" -c 'import os, pytriton; print(os.path.dirname(os.path.dirname(os.path.abspath(pytriton.__file__))))')
server=$site/pytriton/tritonserver/bin/tritonserver
[ -x "$server" ] || chmod +x "$server"
echo "TRITON_SERVER=$server"
echo "TRITON_PYTHON=$(cd "$(dirname "$py")" && pwd)/python"
echo "TRITON_LIBS=$site/nvidia_pytriton.libs"
