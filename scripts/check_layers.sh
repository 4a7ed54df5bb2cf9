#!/bin/sh
# Checks that every #include "..." points down the layer table below (DESIGN.md's layer
# picture): a file may include headers of its own folder and of folders on lower lines; folders
# on one line are siblings and may not include each other. The programs (from the tools line
# up) may include any line below them, and no library layer includes them; the Python
# extension sits above the tools, whose explorer page writer it reuses. A folder missing from
# the table, a library folder missing from the Makefile's LAYERS (or the other way round) and
# an include that points up or sideways all fail. `make test` runs it.
# Usage (from anywhere): scripts/check_layers.sh
set -eu
cd "$(dirname "$0")/.."

# Bottom to top.
LEVELS='
include
base
ir
ir/ops
ir/text
ir/transform
patterns runtime
runtime/kernels
runtime/exec runtime/json
byoc frontend/onnx
backends/json backends/llvm
backends/dnnl
backends inspect
deploy
tools tests bench fuzz examples serve plugins
python/graft
'
# Headers generated into $(BUILD)/gen, by the folder of their source.
GENERATED='graft=deploy onnx=frontend/onnx'
# Includes that point the wrong way and are being removed: "file=included header", each with
# the reason. A pending entry that no longer matches fails too, so it is deleted with the fix.
PENDING='
'

makefile_layers=$(sed -n 's/^LAYERS *= *//p' Makefile)

. scripts/sources.sh

sources | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done |
    awk -v levels="$LEVELS" -v generated="$GENERATED" -v pending="$PENDING" \
        -v makefile_layers="$makefile_layers" '
function layer_of(path,    best, f) {
    best = ""
    for (f in level)
        if (index(path, f "/") == 1 && length(f) > length(best)) best = f
    return best
}
BEGIN {
    nl = split(levels, lines, "\n")
    n = 0
    for (i = 1; i <= nl; i++) {
        if (lines[i] == "") continue
        n++
        top = n
        nf = split(lines[i], fs, " ")
        for (j = 1; j <= nf; j++) level[fs[j]] = n
    }
    prog = level["tools"]   # the first line of programs; the library is below it
    ng = split(generated, gs, " ")
    for (i = 1; i <= ng; i++) { split(gs[i], kv, "="); gen[kv[1]] = kv[2] }
    np = split(pending, ps, "\n")
    for (i = 1; i <= np; i++) if (ps[i] != "") { allow[ps[i]] = 1; used[ps[i]] = 0 }
    bad = 0
    # The library is every folder below the programs: exactly the Makefile LAYERS.
    nm = split(makefile_layers, ms, " ")
    for (i = 1; i <= nm; i++) {
        inmake[ms[i]] = 1
        if (!(ms[i] in level) || level[ms[i]] >= prog) {
            printf "check_layers: Makefile LAYERS has %s, which is not a library folder of the layer table\n", ms[i]
            bad = 1
        }
    }
    for (f in level)
        if (level[f] < prog && !(f in inmake)) {
            printf "check_layers: %s is in the layer table but not in the Makefile LAYERS\n", f
            bad = 1
        }
}
{
    file = $0
    from = layer_of(file)
    if (from == "") {
        printf "check_layers: %s is in no folder of the layer table (scripts/check_layers.sh)\n", file
        bad = 1
        next
    }
    nfiles++
    lineno = 0
    while ((getline line < file) > 0) {
        lineno++
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        inc = line
        sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
        sub(/".*/, "", inc)
        if (index(inc, "/") == 0) continue          # next to the including file
        first = inc
        sub(/\/.*/, "", first)
        to = (first in gen) ? gen[first] : layer_of(inc)
        if (to == "") {
            printf "%s:%d: includes \"%s\", which is in no folder of the layer table\n", file, lineno, inc
            bad = 1
            continue
        }
        nincs++
        if (to == from || (level[to] < level[from] && level[to] < top)) continue
        if ((file "=" inc) in allow) { used[file "=" inc] = 1; continue }
        how = level[to] == level[from] ? "a sibling" : "above it"
        printf "%s:%d: includes \"%s\": layer %s is %s (layers include only themselves and lower lines)\n", \
            file, lineno, inc, to, how
        bad = 1
    }
    close(file)
}
END {
    for (p in used)
        if (!used[p]) {
            printf "check_layers: the pending exception %s no longer matches: delete it\n", p
            bad = 1
        }
    if (bad) {
        print "check_layers: includes must point down the layer table in scripts/check_layers.sh" > "/dev/stderr"
        exit 1
    }
    printf "check_layers: %d includes of %d files point down the %d levels\n", nincs, nfiles, top
}'
