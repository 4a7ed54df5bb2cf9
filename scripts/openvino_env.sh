#!/bin/sh
# OpenVINO for the benchmark (bench/bench_dnnl.c times its CPU runtime beside ONNX Runtime): a
# venv (scripts/venv.sh) with numpy and openvino from PyPI. Prints the venv's python.
# Usage (from the repository root): scripts/openvino_env.sh [VENV_DIR]
set -eu
exec sh scripts/venv.sh "${1:-build/third_party/ovvenv}" "numpy>=1.22" openvino
