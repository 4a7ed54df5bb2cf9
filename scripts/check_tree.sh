#!/bin/sh
# Checks the shape of the library's tree (the Makefile's LAYERS folders): no file over MAX_LINES
# lines, and no include circle between files -- a.c including b.h while b.c includes a.h, or a
# longer loop of such pairs (x.h belongs to x.c in the same folder; a header no .c file is named
# after, e.g. an *_impl.h shared by a subsystem's files, belongs to none). `make test` runs it.
# Usage (from anywhere): scripts/check_tree.sh
set -eu
cd "$(dirname "$0")/.."
MAX_LINES=1200
layers=$(sed -n 's/^LAYERS *= *//p' Makefile)
files=$(for d in $layers; do ls "$d"/*.c "$d"/*.h 2>/dev/null || true; done | sort -u)
echo "$files" | xargs wc -l | awk -v max="$MAX_LINES" '
    $2 != "total" && $1 > max { printf "check_tree: %s has %d lines (at most %d)\n", $2, $1, max; bad = 1 }
    END { exit bad }' || { echo "check_tree: split the files above by what they do" >&2; exit 1; }
echo "$files" | awk -v max="$MAX_LINES" '
function owner(h,    c) { c = h; sub(/\.h$/, ".c", c); return (c in isc) ? c : "" }
function visit(v,    i, w) {
    state[v] = 1; stack[++sp] = v
    for (i = 1; i <= nedge[v]; i++) {
        w = edge[v, i]
        if (state[w] == 1) { loop = w; for (j = sp; j >= 1 && stack[j] != w; j--) loop = stack[j] " -> " loop; loop = w " -> " loop; return 1 }
        if (!state[w] && visit(w)) return 1
    }
    state[v] = 2; sp--
    return 0
}
{ all[++n] = $0; if ($0 ~ /\.c$/) isc[$0] = 1 }
END {
    for (k = 1; k <= n; k++) {
        f = all[k]
        if (!(f in isc)) continue
        while ((getline line < f) > 0) {
            if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
            inc = line; sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc); sub(/".*/, "", inc)
            if (index(inc, "/") == 0) { d = f; sub(/[^\/]*$/, "", d); inc = d inc }
            o = owner(inc)
            if (o != "" && o != f && !((f, o) in seen)) { seen[f, o] = 1; edge[f, ++nedge[f]] = o }
        }
        close(f)
    }
    for (k = 1; k <= n; k++)
        if ((all[k] in isc) && !state[all[k]] && visit(all[k])) {
            printf "check_tree: include circle: %s\n", loop
            exit 1
        }
    printf "check_tree: %d files, none over %d lines, no include circle\n", n, max
}'
