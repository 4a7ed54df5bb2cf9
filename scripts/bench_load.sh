#!/bin/sh
# Start-up of one process that loads a model and runs it once (docs/artifacts.md, issue 28):
# `graft run MODEL.onnx --backend dnnl` (import, partition, prepare, 1 run) against
# `graft run MODEL.graft` (the artifact of the same), and `graft build` itself; beside them
# ONNX Runtime's session creation + 1 run and OpenVINO's compile + 1 run, first and from its
# model cache (CACHE_DIR), each one Python process (scripts/bench_load_peer.py, which also
# prints the load and the run as timed inside the process, without the interpreter's start-up).
# Wall time, CPU time (user + system) and peak RSS from /usr/bin/time, the run with the least
# wall time of REPEAT. Peak RSS barely moves between runs; wall time does on a shared machine
# (read it with the load average printed), CPU time much less. A peer whose Python is missing
# is left out (ORT_PY: a python with onnxruntime, default build/third_party/pyvenv; OV_PY: one
# with openvino, scripts/openvino_env.sh makes build/third_party/ovvenv). THREADS=N runs every
# side with N threads (graft's dnnl.threads, ORT's thread pools, OpenVINO's
# INFERENCE_NUM_THREADS): on a busy machine an OpenMP team's threads spin at each barrier while
# a sibling waits for a CPU, which CPU time then counts, so THREADS=1 measures the work alone.
#
#   sh scripts/bench_load.sh MODEL.onnx [NAME=1x3x224x224]
#   GRAFT=/path/to/graft REPEAT=3 OUT=/tmp/dir sh scripts/bench_load.sh ...
set -eu
model=${1:?usage: bench_load.sh MODEL.onnx [INPUT=SHAPE]}
shape=${2:-}
graft=${GRAFT:-build/graft}
ort_py=${ORT_PY:-build/third_party/pyvenv/bin/python}
ov_py=${OV_PY:-build/third_party/ovvenv/bin/python}
peer=$(dirname "$0")/bench_load_peer.py
repeat=${REPEAT:-3}
out=${OUT:-$(mktemp -d)}
art=$out/$(basename "$model" .onnx).graft
shape_arg=${shape:+--input-shape $shape}
threads=${THREADS:-}
opt_arg=${threads:+--backend-opt dnnl.threads=$threads}
export THREADS="$threads"

# the best wall time, with its CPU time and peak RSS (MB), over $repeat runs of "$@" (and what
# that run printed as load_ms=..., a peer's own timing)
measure() {
    best=""
    i=0
    while [ "$i" -lt "$repeat" ]; do
        /usr/bin/time -f '%e %U %S %M' -o "$out/time" "$@" >"$out/stdout.$i" 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
        r="$(tail -1 "$out/time") $i"
        best=$(printf '%s\n%s\n' "$best" "$r" | awk 'NF == 5' | sort -n | head -1)
        i=$((i + 1))
    done
    own=$(grep -o 'load_ms=.*' "$out/stdout.$(echo "$best" | awk '{ print $5 }')" || true)
    echo "$best" | awk -v own="$own" '{ printf "%6.2f s wall  %6.2f s cpu  %6.0f MB  %s", $1, $2 + $3, $4 / 1024, own }'
}

weights=$(stat -c %s "$model")
printf '%s (%.0f MB file), %s, %s threads, load average %s\n' "$model" "$(echo "$weights" | awk '{ print $1 / 1e6 }')" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "${threads:-default}" "$(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
printf '  %-44s %s\n' "graft run MODEL.onnx --backend dnnl" "$(measure "$graft" run "$model" --backend dnnl $shape_arg $opt_arg)"
# shellcheck disable=SC2086
printf '  %-44s %s\n' "graft build --backend dnnl" "$(measure "$graft" build "$model" --backend dnnl $shape_arg $opt_arg -o "$art")"
# shellcheck disable=SC2086
printf '  %-44s %s\n' "graft run MODEL.graft" "$(measure "$graft" run "$art" $opt_arg)"
# shellcheck disable=SC2086
if [ -x "$ort_py" ]; then
    printf '  %-44s %s\n' "ONNX Runtime session + 1 run" "$(measure "$ort_py" "$peer" ort "$model" $shape)"
fi
if [ -x "$ov_py" ]; then
    rm -rf "$out/ovcache"
    # shellcheck disable=SC2086
    printf '  %-44s %s\n' "OpenVINO compile + 1 run, first" "$(repeat=1 measure "$ov_py" "$peer" ov "$model" "$out/ovcache" $shape)"
    # shellcheck disable=SC2086
    printf '  %-44s %s\n' "OpenVINO compile + 1 run, from its cache" "$(measure "$ov_py" "$peer" ov "$model" "$out/ovcache" $shape)"
fi
# shellcheck disable=SC2086
"$graft" run "$art" $opt_arg --profile 2>&1 | grep '^load ' | sed 's/^/  /' || true
