#!/usr/bin/env bash
# int8 variants of zoo CNNs from ONNX Runtime's quantizer (scripts/make_int8_zoo.py: QDQ
# per-channel, QDQ per-tensor, QOperator) and ORT's outputs for them, cached in
# build/third_party/int8. The quantizer needs PyPI's onnxruntime and onnx (with ml_dtypes), in a
# venv of their own (build/third_party/quantvenv), so the Python package's test venv
# (scripts/python_env.sh) keeps its pins. Idempotent: what exists is kept.
#
#   scripts/fetch_int8_zoo.sh            make what is missing
#   scripts/fetch_int8_zoo.sh --force    remake the models and their references
#
# Environment: GRAFT_ZOO (default build/third_party/zoo: the float32 models, scripts/fetch_zoo.sh),
# GRAFT_INT8 (default build/third_party/int8).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZOO="${GRAFT_ZOO:-$ROOT/build/third_party/zoo}"
OUT="${GRAFT_INT8:-$ROOT/build/third_party/int8}"
VENV="$ROOT/build/third_party/quantvenv"
args=()
for a in "$@"; do
  case "$a" in
    --force) args+=(--force) ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fetch_int8_zoo: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

py=$(sh "$ROOT/scripts/venv.sh" "$VENV" "numpy>=1.22" "onnxruntime>=1.17" "onnx>=1.16")
"$py" -W ignore "$ROOT/scripts/make_int8_zoo.py" --zoo "$ZOO" --out "$OUT" ${args[@]+"${args[@]}"}
# ORT's intermediate tensors for graft diff --against-dumps (tests/tools/test_diff_quant.c):
# two QDQ models as ORT runs them, and the float32 resnet18 with every node output, each on the
# int8 reference input.
for spec in resnet18_qdq_pc:int8:ort mobilenet_v3_large_qdq_pc:int8:ort resnet18:zoo:all; do
  IFS=: read -r name from tensors <<< "$spec"
  model="$OUT/$name.onnx" dumps="$OUT/dumps/$name"
  [ "$from" = zoo ] && model="$ZOO/$name.onnx" && dumps="$OUT/dumps/${name}_f32"
  [ -f "$dumps/index.json" ] && [ "${args[0]:-}" != --force ] && continue
  rm -rf "$dumps"
  "$py" "$ROOT/scripts/ort_dump.py" "$model" --out "$dumps" --tensors "$tensors" \
    --input "x=$OUT/refs/${name%_qdq_pc}_qdq_pc/input_0.npy"
done
echo "fetch_int8_zoo: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
