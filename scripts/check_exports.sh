#!/bin/sh
# Checks that libgraft.so exports exactly its public API: the functions declared with GR_API
# (base/api.h) and GRAFT_API (include/graft/graft.h) in the headers, no more and no fewer. The expectation is read from the headers, so
# marking a function public is one edit there. Then builds examples/load_and_run.c against the
# shared library through pkg-config (graft-uninstalled.pc), which proves the exported API is
# enough for a program that loads and runs a model.
# Usage (from the repository root): scripts/check_exports.sh [BUILD_DIR]
set -eu
build=${1:-build}
lib=$build/libgraft.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A public declaration starts its line with GR_API; the function name is the identifier right
# before the first '('.
find . -path ./build -prune -o -path "./$build" -prune -o -name '*.h' -print |
    xargs grep -h -E '^(GR_API|GRAFT_API) ' | sed -e 's/(.*//' -e 's/.*[ *]//' | sort -u > "$tmp/api"
nm -D --defined-only "$lib" | awk '{ print $NF }' | grep -v -x -e _init -e _fini | sort -u > "$tmp/exported"
if ! cmp -s "$tmp/api" "$tmp/exported"; then
    echo "check_exports: $lib's exports differ from the GR_API declarations in the headers" >&2
    echo "  (< declared GR_API but not exported, > exported but not declared GR_API)" >&2
    diff "$tmp/api" "$tmp/exported" | grep '^[<>]' | sed 's/^/  /' >&2
    exit 1
fi
cc_flags=$(pkg-config --with-path="$build" --cflags --libs graft-uninstalled)
${CC:-cc} -std=c11 -Wall -Werror -o "$tmp/load_and_run" examples/load_and_run.c $cc_flags \
    -Wl,-rpath,"$(cd "$build" && pwd)"
echo "check_exports: $lib exports the $(wc -l < "$tmp/api") GR_API functions and nothing else;" \
     "examples/load_and_run.c links against it through pkg-config"
