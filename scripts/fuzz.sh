#!/usr/bin/env bash
# make fuzz: makes the seed corpora, then for each libFuzzer target first replays every
# regression input (fuzz/regress/<target>/) and every seed as a fixed run, then fuzzes it for
# SECONDS; fails on any finding (crash, ASan / UBSan report, leak, timeout, out-of-memory, a
# differential or round-trip mismatch) and prints the input's path and the command that replays
# it. Seeds and the growing corpora live under BUILD (never in git): the golden modules, the
# ONNX backend test data, artifacts / graphs / pattern tables / .npy files this build writes
# (fuzz/seeds.c); the regression inputs are part of the corpus too. Findings are saved as
# BUILD/findings/<target>-*.
# oneDNN reads its ISA cap once per process, so a target that runs oneDNN runs once natively and
# once under ONEDNN_MAX_CPU_ISA=AVX2: TARGET_native and TARGET_avx2 (each with its own corpus,
# findings and log; same seeds and regression inputs), and plain TARGET means both.
# FUZZ_RUNS=N also stops each target after N executions (for campaigns counted in executions).
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

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GRAFT_FUZZ_KNOWN=$seeds/artifact
ISA_TARGETS=" json_graph "  # run oneDNN: fuzzed at both ISAs
runs=()
for t in "$@"; do
  if [[ $ISA_TARGETS == *" $t "* ]]; then runs+=("${t}_native" "${t}_avx2"); else runs+=("$t"); fi
done

# the command that replays INPUT on run R (binary, ISA cap, environment)
replay_cmd() {
  local r=$1 input=$2 isa=
  [[ $r == *_avx2 ]] && isa="ONEDNN_MAX_CPU_ISA=AVX2 "
  echo "${isa}GRAFT_FUZZ_KNOWN=$GRAFT_FUZZ_KNOWN ASAN_OPTIONS=$ASAN_OPTIONS UBSAN_OPTIONS=$UBSAN_OPTIONS $bin $input"
}

pass=0 fail=0
for r in "${runs[@]}"; do
  t=${r%_native}
  t=${t%_avx2}
  bin=$BUILD/fuzz/fuzz_$t
  isa=()
  [[ $r == *_avx2 ]] && isa=(env ONEDNN_MAX_CPU_ISA=AVX2)
  mkdir -p "$corpus/$r" "$seeds/$t"
  log=$logs/$r.log
  # fixed run: each regression input and seed once, in a stable order (libFuzzer prints
  # "Running: FILE" before each, so the last one names the input of a finding)
  mapfile -t fixed < <(find "fuzz/regress/$t" "$seeds/$t" -type f 2>/dev/null | sort)
  if [ "${#fixed[@]}" -gt 0 ]; then
    "${isa[@]}" "$bin" -timeout=60 -rss_limit_mb=4096 "${fixed[@]}" >"$logs/$r.replay.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
      fail=$((fail + 1))
      input=$(grep '^Running: ' "$logs/$r.replay.log" | tail -1 | cut -d' ' -f2-)
      echo "fuzz $r: FAILED replaying $input (exit $rc); log $logs/$r.replay.log:"
      grep -E -A30 'ERROR: |runtime error:|==ERROR|SUMMARY|^fuzz_[a-z_]*: ' "$logs/$r.replay.log" | head -60
      echo "fuzz $r: replay with: $(replay_cmd "$r" "$input")"
      continue
    fi
  fi
  start=$SECONDS
  "${isa[@]}" "$bin" -max_total_time="$SECS" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} -timeout=60 -rss_limit_mb=4096 -max_len=1048576 \
    -print_final_stats=1 -artifact_prefix="$findings/$r-" "$corpus/$r" "$seeds/$t" \
    $([ -d "fuzz/regress/$t" ] && echo "fuzz/regress/$t") >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  files=$(find "$corpus/$r" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "fuzz $r: ok, ${#fixed[@]} inputs replayed, ${execs:-?} executions in $((SECONDS - start)) s, corpus $files files"
  else
    fail=$((fail + 1))
    echo "fuzz $r: FAILED (exit $rc) after ${execs:-?} executions; log $log:"
    grep -E -A30 'ERROR: |runtime error:|==ERROR|SUMMARY|^fuzz_[a-z_]*: ' "$log" | head -60
    input=$(sed -n 's/.*Test unit written to \([^ ]*\).*/\1/p' "$log" | tail -1)
    if [ -n "$input" ]; then
      echo "fuzz $r: input saved as $input; replay with: $(replay_cmd "$r" "$input")"
    fi
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
