#!/usr/bin/env bash
# The model zoo (scripts/zoo_export.py: torchvision / BERT-style architectures, random weights,
# exported to ONNX by Debian's python3-torch) and its ONNX Runtime reference outputs, cached in
# build/third_party/zoo (never in the tree). Idempotent: what exists is kept.
#
#   scripts/fetch_zoo.sh            export what is missing, write missing / stale refs
#   scripts/fetch_zoo.sh --refs     rewrite the reference outputs
#
# Environment: GRAFT_ZOO  cache directory (default build/third_party/zoo); refs in $GRAFT_ZOO/refs.
# Needs scripts/fetch_models.sh first (onnxruntime-node, build/third_party/models.env).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ZOO="${GRAFT_ZOO:-$ROOT/build/third_party/zoo}"
ENV_FILE="$ROOT/build/third_party/models.env"
PY=/usr/bin/python3   # Debian's interpreter: python3-torch belongs to it

force=no
for a in "$@"; do
  case "$a" in
    --refs) force=yes ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "fetch_zoo: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  echo "fetch_zoo: $PY cannot import torch / torchvision; run scripts/deps.sh (make deps)" >&2
  exit 1
fi
[ -f "$ENV_FILE" ] || { echo "fetch_zoo: $ENV_FILE missing; run scripts/fetch_models.sh" >&2; exit 1; }
ORT_VER=$(sed -n 's/^GRAFT_ORT_VERSION=//p' "$ENV_FILE")

mkdir -p "$ZOO/refs"
# torch's exporter warns about every traced size computation; errors still go to stderr
"$PY" -W ignore "$ROOT/scripts/zoo_export.py" --out "$ZOO"

"$PY" "$ROOT/scripts/zoo_export.py" --list | while read -r name shape; do
  made_by=""
  [ -f "$ZOO/refs/$name/meta.json" ] &&
    made_by=$(node -e 'process.stdout.write(String(require(process.argv[1]).ort_version))' \
              "$ZOO/refs/$name/meta.json" 2>/dev/null || true)
  if [ "$force" = yes ] || [ "$made_by" != "$ORT_VER" ]; then
    node "$ROOT/scripts/ort_reference.js" --env "$ENV_FILE" --out "$ZOO/refs" \
      --onnx "$ZOO/$name.onnx" --shape "$shape" --name "$name" >&2
  fi
done
echo "fetch_zoo: $ZOO ($(du -sh "$ZOO" | cut -f1))" >&2
# int8 variants of some of these from ONNX Runtime's quantizer (tests/dnnl/test_dnnl_int8.c)
bash "$ROOT/scripts/fetch_int8_zoo.sh"
