#!/bin/sh
# OpenVINO for the benchmark (bench/bench_dnnl.c times its CPU runtime beside ONNX Runtime): a
# virtual environment under build/third_party (never the system Python) with numpy and
# openvino from PyPI. Idempotent: a stamp file records a finished install. Prints the venv's
# python. Usage (from the repository root): scripts/openvino_env.sh [VENV_DIR]
set -eu
venv=${1:-build/third_party/ovvenv}
py=${PYTHON:-/usr/bin/python3}
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" >&2
fi
stamp="$venv/.deps-1"
if [ ! -f "$stamp" ]; then
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q "numpy>=1.22" openvino >&2
    touch "$stamp"
fi
echo "$venv/bin/python"
