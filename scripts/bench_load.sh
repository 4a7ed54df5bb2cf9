#!/bin/sh
# Start-up of one process that loads a model and runs it once (docs/artifacts.md, issue 28):
# `graft run MODEL.onnx --backend dnnl` (import, partition, prepare, 1 run) against
# `graft run MODEL.graft` (the artifact of the same), and `graft build` itself: wall time, CPU
# time (user + system) and peak RSS from /usr/bin/time, the run with the least wall time of
# REPEAT. Peak RSS barely moves between runs; wall time does on a shared machine (read it with
# the load average printed), CPU time much less.
#
#   sh scripts/bench_load.sh MODEL.onnx [NAME=1x3x224x224]
#   GRAFT=/path/to/graft REPEAT=3 OUT=/tmp/dir sh scripts/bench_load.sh ...
set -eu
model=${1:?usage: bench_load.sh MODEL.onnx [INPUT=SHAPE]}
shape=${2:-}
graft=${GRAFT:-build/graft}
repeat=${REPEAT:-3}
out=${OUT:-$(mktemp -d)}
art=$out/$(basename "$model" .onnx).graft
shape_arg=${shape:+--input-shape $shape}

# the best wall time, with its CPU time and peak RSS (MB), over $repeat runs of "$@"
measure() {
    best=""
    i=0
    while [ "$i" -lt "$repeat" ]; do
        /usr/bin/time -f '%e %U %S %M' -o "$out/time" "$@" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
        r=$(cat "$out/time")
        best=$(printf '%s\n%s\n' "$best" "$r" | awk 'NF == 4' | sort -n | head -1)
        i=$((i + 1))
    done
    echo "$best" | awk '{ printf "%6.2f s wall  %6.2f s cpu  %6.0f MB", $1, $2 + $3, $4 / 1024 }'
}

weights=$(stat -c %s "$model")
printf '%s (%.0f MB file), %s, load average %s\n' "$model" "$(echo "$weights" | awk '{ print $1 / 1e6 }')" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
printf '  %-44s %s\n' "graft run MODEL.onnx --backend dnnl" "$(measure "$graft" run "$model" --backend dnnl $shape_arg)"
# shellcheck disable=SC2086
printf '  %-44s %s\n' "graft build --backend dnnl" "$(measure "$graft" build "$model" --backend dnnl $shape_arg -o "$art")"
printf '  %-44s %s\n' "graft run MODEL.graft" "$(measure "$graft" run "$art")"
"$graft" run "$art" --profile 2>&1 | grep '^load ' | sed 's/^/  /' || true
