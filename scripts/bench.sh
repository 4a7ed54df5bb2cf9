#!/usr/bin/env bash
# make bench: runs every benchmark binary built from bench/*.c and notes the machine.
set -euo pipefail
BUILD=${1:-build}
echo "machine: $(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
for b in "$BUILD"/bench/*; do
  [ -x "$b" ] || continue
  echo
  echo "== $(basename "$b")"
  "$b"
done
