#!/usr/bin/env bash
# Models and ONNX Runtime references for the symbolic-shape tests (tests/dnnl/test_symbolic.c),
# cached in build/third_party/symbolic (never in the tree). Idempotent: what exists is kept.
#   - resnet18_dynbatch.onnx: the zoo's resnet18 (scripts/zoo_export.py, same weights) exported
#     with a dynamic batch axis by Debian's python3-torch;
#   - refs/<name>/{input_0,output_0}.npy + meta.json by scripts/ort_reference.js: PP-OCRv4 rec
#     at widths 80..1280, det at 320x320, 640x640, 544x960 (HxW), resnet18_dynbatch at batch 1, 4.
#
#   scripts/fetch_symbolic.sh [--refs]     (--refs rewrites the references)
# Needs scripts/fetch_models.sh first (models.env, onnxruntime-node).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${GRAFT_SYMBOLIC:-$ROOT/build/third_party/symbolic}"
ENV_FILE="$ROOT/build/third_party/models.env"
PY=/usr/bin/python3   # Debian's interpreter: python3-torch belongs to it

force=no
for a in "$@"; do
  case "$a" in
    --refs) force=yes ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "fetch_symbolic: unknown argument '$a'" >&2; exit 2 ;;
  esac
done
[ -f "$ENV_FILE" ] || { echo "fetch_symbolic: $ENV_FILE missing; run scripts/fetch_models.sh" >&2; exit 1; }
# shellcheck disable=SC1090
source "$ENV_FILE"
mkdir -p "$OUT/refs"

if [ ! -f "$OUT/resnet18_dynbatch.onnx" ]; then
  if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
    echo "fetch_symbolic: $PY cannot import torch / torchvision; run scripts/deps.sh (make deps)" >&2
    exit 1
  fi
  "$PY" -W ignore - "$ROOT/scripts" "$OUT/resnet18_dynbatch.onnx" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
import zoo_export as z
z.export('resnet18', sys.argv[2], 20240521 + 100 * list(z.ZOO).index('resnet18'), z.architectures(),
         dynamic_batch=True)
PYEOF
fi

ref() { # name model shape
  if [ "$force" = yes ] || [ ! -f "$OUT/refs/$1/output_0.npy" ]; then
    node "$ROOT/scripts/ort_reference.js" --env "$ENV_FILE" --out "$OUT/refs" --onnx "$2" --shape "$3" --name "$1" >&2
  fi
}
for w in 80 160 320 640 1280; do ref "rec_w$w" "$GRAFT_MODEL_REC" "1x3x48x$w"; done
for s in 320x320 640x640 544x960; do ref "det_$s" "$GRAFT_MODEL_DET" "1x3x$s"; done
for b in 1 4; do ref "resnet18_dynbatch_b$b" "$OUT/resnet18_dynbatch.onnx" "${b}x3x224x224"; done
echo "fetch_symbolic: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
