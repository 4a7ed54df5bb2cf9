#!/usr/bin/env bash
# make asan: runs the test binary built with AddressSanitizer + UBSan and fails on any test
# failure, UB report or leak. Criterion runs each test in a worker process whose leak report
# does not fail the test by itself, so the reports are read here instead. The one leak ignored is
# Criterion's own (allocated directly by libcriterion, not by a test).
set -uo pipefail
BUILD=${1:-build/asan}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=exitcode=0 UBSAN_OPTIONS=print_stacktrace=1 \
  GRAFT="$BUILD/graft" "$BUILD/tests/run_tests" ${TEST_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
ours=$(awk '/^(Direct|Indirect) leak/ { want = 1; next }
            want && /^ +#1 / { if ($0 !~ /libcriterion/) n++; want = 0 }
            END { print n + 0 }' "$log")
ub=$(grep -c 'runtime error:' "$log")
asan=$(grep -c 'ERROR: AddressSanitizer' "$log")
echo "asan: test exit $rc, leak reports from graft code: $ours, UB reports: $ub, ASan errors: $asan"
[ "$rc" -eq 0 ] && [ "$ours" -eq 0 ] && [ "$ub" -eq 0 ] && [ "$asan" -eq 0 ]
