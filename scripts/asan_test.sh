#!/usr/bin/env bash
# make asan: runs the test binary built with AddressSanitizer + UBSan and fails on any test
# failure, sanitizer report or leak, and on a skip CI does not allow (scripts/check_skips.sh).
# Every process writes its reports to a file of its own (log_path), read here: Criterion's
# workers, whose leak report does not fail their test, and the CLI the tests start, whose
# stderr the tests capture. Every leak counts but Criterion's own: in the runner process's
# report, blocks that libcriterion allocated itself (frame #1 in libcriterion; its runner
# leaks 48-byte blocks at exit). A leak a test makes is allocated below the test's frames, in
# a worker, and always counts.
# redzone=256: oneDNN 2.6 (not instrumented) reads up to a few hundred bytes past a heap object
# while it creates an AMX int8 brgconv primitive (resnet18_qdq_pt on Sapphire Rapids); with the
# default 16-byte redzones that read can cross into an unmapped page and the process dies
# (SEGV inside dnnl_primitive_create), with 256 it stays in the redzone. Wider redzones only
# make ASan stricter for graft's own code.
#
#   scripts/asan_test.sh [BUILD] ['GLOB ...']   (suite/test globs, default all)
set -uo pipefail
BUILD=${1:-build/asan}
globs=${2:-*}
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
set -f
pats=($globs)
set +f
filter="@($(IFS='|'; echo "${pats[*]}"))"
ASAN_OPTIONS="detect_leaks=1:redzone=256:log_path=$reports/san" LSAN_OPTIONS=exitcode=0 \
UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/san" \
  GRAFT="$BUILD/graft" "$BUILD/tests/run_tests" --tap="$BUILD/tests/asan.tap" --filter "$filter" ${TEST_ARGS:-} &
runner=$!
wait $runner
rc=$?
shopt -s nullglob
logs=("$reports"/san.*)
[ ${#logs[@]} -eq 0 ] || cat "${logs[@]}" >&2
count() { [ ${#logs[@]} -eq 0 ] && echo 0 || cat "${logs[@]}" | grep -c "$1"; }
leaks=0
[ ${#logs[@]} -eq 0 ] || leaks=$(awk -v runner="$reports/san.$runner" '
  /^(Direct|Indirect) leak/ { n++; frame1 = 1; next }
  frame1 && /^ +#1 / { if (FILENAME == runner && /\/libcriterion\.so/) n--; frame1 = 0 }
  /^$/ { frame1 = 0 }
  END { print n + 0 }' "${logs[@]}")
ub=$(count 'runtime error:')
asan=$(count 'ERROR: AddressSanitizer')
echo "asan: test exit $rc, leak reports (Criterion's own excluded): $leaks, UB reports: $ub, ASan errors: $asan"
bash scripts/check_skips.sh "$BUILD/tests/asan.tap" asan "$globs"
skips=$?
[ "$rc" -eq 0 ] && [ "$leaks" -eq 0 ] && [ "$ub" -eq 0 ] && [ "$asan" -eq 0 ] && [ "$skips" -eq 0 ]
