#!/usr/bin/env bash
# make demo: the main job on a bundled default. Today: parse, check and print the bundled
# module, then run it on the reference path. Later issues extend this to the full pipeline.
set -euo pipefail
GRAFT=${1:-build/graft}
EX=examples/demo.relax
echo "== graft fmt $EX (parse, well-formedness check, print)"
"$GRAFT" fmt "$EX"
out=$(mktemp -d)
echo "== graft run $EX --input x=random --output-dir $out"
"$GRAFT" run "$EX" --output-dir "$out" --repeat 5
ls -l "$out"
rm -rf "$out"
