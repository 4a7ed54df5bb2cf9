#!/usr/bin/env bash
# make fuzz: makes the seed corpora and runs each libFuzzer target for SECONDS; fails on any
# finding (crash, ASan / UBSan report, leak, timeout, out-of-memory). Seeds and the growing
# corpora live under BUILD (never in git): the golden modules, the ONNX backend test data,
# artifacts / graphs / pattern tables / .npy files this build writes (fuzz/seeds.c), plus the
# regression inputs kept in fuzz/regress/<target>. Findings are saved as BUILD/findings/<target>-*.
#     scripts/fuzz.sh BUILD SECONDS TARGET...
set -uo pipefail
BUILD=$1 SECS=$2
shift 2
seeds=$BUILD/seeds corpus=$BUILD/corpus findings=$BUILD/findings logs=$BUILD/logs
rm -rf "$seeds"
mkdir -p "$seeds/parse" "$seeds/onnx" "$findings" "$logs"

# copy FILES... into DIR under unique names
put() {
  local dir=$1 i=0 f
  shift
  mkdir -p "$dir"
  for f in "$@"; do cp "$f" "$dir/$(printf %05d "$i")_$(basename "$f")"; i=$((i + 1)); done
}
mapfile -t relax < <(find tests/golden -name '*.relax' | sort)
put "$seeds/parse" "${relax[@]}"
onnx_dir=$(dpkg -L libonnx-testdata 2>/dev/null | grep -m1 '/data/node$' || true)
if [ -n "$onnx_dir" ]; then
  mapfile -t models < <(find "$onnx_dir" -name model.onnx | sort)
  put "$seeds/onnx" "${models[@]}"
fi
# artifacts, region graphs, pattern tables, .npy files of this build (modules: the golden ones
# that build; the bad_* inputs do not)
mapfile -t good < <(find tests/golden -maxdepth 1 -name '*.relax' ! -name 'bad_*' | sort)
"$BUILD/fuzz/seeds" "$seeds" "${good[@]}" tests/golden/byoc/*.relax >/dev/null 2>"$logs/seeds.err" ||
  { cat "$logs/seeds.err"; echo "fuzz: seed generation failed"; exit 1; }
for d in fuzz/regress/*/; do
  t=$(basename "$d")
  mkdir -p "$seeds/$t"
  cp "$d"* "$seeds/$t/"
done

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GRAFT_FUZZ_KNOWN=$seeds/artifact
pass=0 fail=0
for t in "$@"; do
  mkdir -p "$corpus/$t" "$seeds/$t"
  log=$logs/$t.log
  "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECS" -timeout=60 -rss_limit_mb=4096 -max_len=1048576 \
    -print_final_stats=1 -artifact_prefix="$findings/$t-" "$corpus/$t" "$seeds/$t" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  files=$(find "$corpus/$t" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "fuzz $t: ok, ${execs:-?} executions in ${SECS} s, corpus $files files"
  else
    fail=$((fail + 1))
    echo "fuzz $t: FAILED (exit $rc) after ${execs:-?} executions; log $log:"
    grep -E -A30 'ERROR: |runtime error:|==ERROR|SUMMARY|Test unit written' "$log" | head -60
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
