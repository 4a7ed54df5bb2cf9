#!/usr/bin/env bash
# Counts and names the tests a Criterion run skipped, from its TAP report (--tap=FILE):
# Criterion exits 0 when a test skips, so a missing model cache or tool would pass unseen.
# With CI=true a skip fails the run unless tests/skips_allowed.txt lists the test for this run,
# with its reason; elsewhere the skips are only printed.
#
#   scripts/check_skips.sh TAP RUN ['GLOB ...']
#
# RUN names the run (unit, avx2, asan) for the list's run column. GLOBs (one argument, the
# run's --filter patterns as suite/test shell globs) select the tests the run was asked for:
# Criterion reports the tests a filter leaves out as skipped too.
set -euo pipefail
tap=$1 run=$2 globs=${3:-*}
list=${SKIPS_ALLOWED:-tests/skips_allowed.txt}
[ -s "$tap" ] || { echo "check_skips: no TAP report $tap" >&2; exit 1; }

selected() {
  local g
  set -f
  for g in $globs; do
    # shellcheck disable=SC2053  # a glob on purpose
    [[ $1 == $g ]] && { set +f; return 0; }
  done
  set +f
  return 1
}

# listed RUN NAME: the reason the list gives for NAME in RUN, or nothing.
listed() {
  awk -v run="$1" -v name="$2" '
    /^[ \t]*(#|$)/ { next }
    $1 == name { n = split($2, runs, ","); for (i = 1; i <= n; i++) if (runs[i] == run || runs[i] == "*") {
                   sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+/, ""); print; exit } }' "$list"
}

# Each listed test must exist and carry a reason: a misspelt name would silently allow nothing.
if [ -f "$list" ]; then
  bad=$(awk '/^[ \t]*(#|$)/ { next } NF < 3 { print FILENAME ":" FNR ": want `suite/test RUNS reason`" }' "$list")
  while read -r name _; do
    grep -q "^\(not \)\?ok - ${name/\//::} " "$tap" || bad+=$'\n'"$list: $name is not a test"
  done < <(grep -v '^[[:space:]]*\(#\|$\)' "$list")
  if [ -n "${bad#$'\n'}" ]; then echo "check_skips: ${bad#$'\n'}" >&2; exit 1; fi
fi

n=0 unlisted=0
while IFS= read -r line; do
  rest=${line#ok - }
  name=${rest%% *}
  name=${name/:://}
  selected "$name" || continue
  n=$((n + 1))
  why=${line#*# SKIP }
  reason=""
  [ -f "$list" ] && reason=$(listed "$run" "$name")
  if [ -n "$reason" ]; then
    echo "  skipped $name: $why (listed in $list)"
  else
    unlisted=$((unlisted + 1))
    echo "  skipped $name: $why"
  fi
done < <(grep '^ok - .* # SKIP ' "$tap")

echo "skips ($run): $n, of which $unlisted not in $list"
if [ "${CI:-}" = true ] && [ "$unlisted" -gt 0 ]; then
  echo "check_skips: CI=true and $unlisted test(s) skipped that $list does not allow for '$run'" >&2
  exit 1
fi
