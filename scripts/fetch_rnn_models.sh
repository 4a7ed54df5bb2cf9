#!/usr/bin/env bash
# The recurrent test models (scripts/rnn_export.py: an LSTM tagger and a GRU recognizer head,
# random weights, exported by Debian's python3-torch) and their ONNX Runtime reference outputs,
# cached in build/third_party/rnn (never in the tree). Idempotent: what exists is kept.
# Needs scripts/fetch_models.sh first (onnxruntime-node, build/third_party/models.env).
# Environment: GRAFT_RNN_MODELS  cache directory (default build/third_party/rnn).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${GRAFT_RNN_MODELS:-$ROOT/build/third_party/rnn}"
ENV_FILE="$ROOT/build/third_party/models.env"
PY=/usr/bin/python3   # Debian's interpreter: python3-torch belongs to it

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "fetch_rnn_models: $PY cannot import torch; run scripts/deps.sh (make deps)" >&2
  exit 1
fi
[ -f "$ENV_FILE" ] || { echo "fetch_rnn_models: $ENV_FILE missing; run scripts/fetch_models.sh" >&2; exit 1; }
mkdir -p "$DIR/refs"
# torch's exporter warns about every traced size computation; errors still go to stderr
"$PY" -W ignore "$ROOT/scripts/rnn_export.py" --out "$DIR"
"$PY" "$ROOT/scripts/rnn_export.py" --list | while read -r name shape; do
  if [ ! -f "$DIR/refs/$name/output_0.npy" ] || [ "$DIR/$name.onnx" -nt "$DIR/refs/$name/output_0.npy" ]; then
    node "$ROOT/scripts/ort_reference.js" --env "$ENV_FILE" --out "$DIR/refs" \
      --onnx "$DIR/$name.onnx" --shape "$shape" --name "$name" >&2
  fi
done
