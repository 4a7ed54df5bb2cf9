#!/bin/sh
# The Python package's test environment: a venv (scripts/venv.sh) with numpy, pytest and
# onnxruntime from PyPI, and graft itself installed from this repository (`pip install .`, which
# runs make for libgraft). Prints the venv's python.
# Usage (from the repository root): scripts/python_env.sh [VENV_DIR]
set -eu
venv=${1:-build/third_party/pyvenv}
py=$(sh scripts/venv.sh "$venv" "numpy>=1.22" "pytest>=7" onnxruntime setuptools wheel)
"$py" -m pip install -q --no-build-isolation --force-reinstall --no-deps . >&2
echo "$py"
