#!/usr/bin/env bash
# make tsan: the concurrency checks (tests/concurrency_main.c over
# tests/artifact/concurrency_impl.h: one loaded model run from 4 threads, host / oneDNN /
# JSON-runtime artifacts) under ThreadSanitizer. Fails on a failed check or on any race report
# (libraries TSan cannot see into are suppressed in scripts/tsan.supp; a race with graft frames
# always counts).
#
# TSan of LLVM 14 maps its shadow at fixed addresses and dies at start ("unexpected memory
# mapping") when the kernel randomizes mmap with more entropy than it expects
# (vm.mmap_rnd_bits > 28, the default on recent kernels), so the binary runs with address-space
# randomization off for this process only (setarch -R).
set -uo pipefail
BUILD=${1:-build/tsan}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run=()
if command -v setarch >/dev/null 2>&1 && setarch "$(uname -m)" -R true 2>/dev/null; then
  run=(setarch "$(uname -m)" -R)
fi
TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=0 second_deadlock_stack=1 history_size=4" \
  "${run[@]}" "$BUILD/tests/concurrency" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
races=$(grep -c 'WARNING: ThreadSanitizer' "$log")
fatal=$(grep -c 'FATAL: ThreadSanitizer' "$log")
echo "tsan: exit $rc, race reports: $races, TSan failures: $fatal"
[ "$rc" -eq 0 ] && [ "$races" -eq 0 ] && [ "$fatal" -eq 0 ]
