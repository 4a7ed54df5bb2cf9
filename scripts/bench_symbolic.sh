#!/usr/bin/env bash
# Symbolic shapes benchmark (issue 14): PP-OCRv4 rec and det and the dynamic-batch resnet18, each
# built ONCE without --input-shape (--backend dnnl), run at every size, against a build
# specialized to that size (--input-shape) and ONNX Runtime on the same dynamic model.
# Prints one markdown row per size: median latency (ms) of the symbolic build, the specialized
# build, ORT, the ratios, and the first-run cost at that size (oneDNN primitives created for the
# new shapes + memory plan: the "prep" and "plan" rows of graft run --profile).
#
#   scripts/bench_symbolic.sh [RUNS]        (default 10; threads: GRAFT_NUM_THREADS, default 1,
#                                            the same count for ORT)
# Needs build/graft and scripts/fetch_symbolic.sh's cache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS=${1:-10}
THREADS=${GRAFT_NUM_THREADS:-1}
OPT=(--backend-opt "dnnl.threads=$THREADS")
G="$ROOT/build/graft"
S="${GRAFT_SYMBOLIC:-$ROOT/build/third_party/symbolic}"
# shellcheck disable=SC1091
source "$ROOT/build/third_party/models.env"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

lat() { "$G" run "$1" "${OPT[@]}" --input "x=$2" --repeat "$RUNS" --output-dir "$T/o" 2>&1 >/dev/null | sed -n 's/.*median=\([0-9.]*\).*/\1/p'; }
first() { # prep + plan ms of one profiled first run
  "$G" run "$1" "${OPT[@]}" --input "x=$2" --profile --output-dir "$T/o" 2>&1 >/dev/null |
    awk '$4 == "prep" || $4 == "plan" { s += $1 } END { printf "%.1f", s }'
}
ort() { node "$ROOT/scripts/ort_reference.js" --bench "$RUNS" --threads "$THREADS" --onnx "$1" --shape "$2" 2>/dev/null |
          sed -n 's/.*"run_ms":{"median":\([0-9.]*\).*/\1/p'; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), threads $THREADS, $RUNS runs, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| model | input | symbolic ms | specialized ms | sym/spec | ORT ms | sym/ORT | first run at new size ms |"
echo "|---|---|---|---|---|---|---|---|"
row() { # label onnx dyn.graft shape ref
  local label=$1 onnx=$2 dyn=$3 shape=$4 in=$5
  "$G" build "$onnx" --backend dnnl "${OPT[@]}" --input-shape "x=$shape" -o "$T/spec.graft" >/dev/null 2>&1
  local f s p o
  f=$(first "$dyn" "$in")
  s=$(lat "$dyn" "$in")
  p=$(lat "$T/spec.graft" "$in")
  o=$(ort "$onnx" "$shape")
  awk -v l="$label" -v sh="$shape" -v s="$s" -v p="$p" -v o="$o" -v f="$f" \
    'BEGIN { printf "| %s | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %s |\n", l, sh, s, p, s / p, o, s / o, f }'
}
"$G" build "$GRAFT_MODEL_REC" --backend dnnl "${OPT[@]}" -o "$T/rec.graft" >/dev/null 2>&1
for w in 80 160 320 640 1280; do row rec "$GRAFT_MODEL_REC" "$T/rec.graft" "1x3x48x$w" "$S/refs/rec_w$w/input_0.npy"; done
"$G" build "$GRAFT_MODEL_DET" --backend dnnl "${OPT[@]}" -o "$T/det.graft" >/dev/null 2>&1
for s in 320x320 640x640 544x960; do row det "$GRAFT_MODEL_DET" "$T/det.graft" "1x3x$s" "$S/refs/det_$s/input_0.npy"; done
"$G" build "$S/resnet18_dynbatch.onnx" --backend dnnl "${OPT[@]}" -o "$T/r18.graft" >/dev/null 2>&1
for b in 1 4; do row resnet18_dynbatch "$S/resnet18_dynbatch.onnx" "$T/r18.graft" "${b}x3x224x224" "$S/refs/resnet18_dynbatch_b$b/input_0.npy"; done
