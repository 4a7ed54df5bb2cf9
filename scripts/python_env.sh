#!/bin/sh
# The Python package's test environment: a virtual environment under build/third_party (never
# the system Python) with numpy, pytest and onnxruntime from PyPI, and graft itself installed
# from this repository (`pip install .`, which runs make for libgraft). Prints the venv's python.
# Usage (from the repository root): scripts/python_env.sh [VENV_DIR]
set -eu
venv=${1:-build/third_party/pyvenv}
py=${PYTHON:-/usr/bin/python3}
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" >&2
fi
stamp="$venv/.deps-1"
if [ ! -f "$stamp" ]; then
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q "numpy>=1.22" "pytest>=7" onnxruntime setuptools wheel >&2
    touch "$stamp"
fi
"$venv/bin/python" -m pip install -q --no-build-isolation --force-reinstall --no-deps . >&2
echo "$venv/bin/python"
