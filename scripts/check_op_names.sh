#!/bin/sh
# Checks that C code names ops by id (IR_OP_CONV2D, from ir/op_list.h), not by a "relax.*"
# string: a misspelt id fails to compile, a misspelt string only at run time. Names stay where
# they are the data: the op table, the text format (parser, printer) and the serializers (the
# JSON graph writer and reader, the artifact). Kernel rows of ops the table does not have yet
# (RT_K_OFF) have no id to use. Tests and benchmarks build IR through the by-name API on
# purpose and are not checked; backend plugins (plugins/, examples/plugin/) see graft through
# include/graft only, where an op is its name in the region's graph. Comments do not count. Each literal found is listed with the id
# to write instead. `make test` runs it.
# Usage (from anywhere): scripts/check_op_names.sh
set -eu
cd "$(dirname "$0")/.."

# Files (or folders, ending in /) where op names are data.
ALLOWED='
ir/op_list.h ir/ops/op_table.c
ir/text/
backends/json/ runtime/json/json_ deploy/
tests/ bench/ fuzz/
plugins/ examples/plugin/
'
# Lines allowed anywhere: kernels of ops outside the op table.
ALLOWED_LINE='RT_K_OFF('

. scripts/sources.sh

allowed() {
    for a in $ALLOWED; do
        case "$1" in "$a"*) return 0 ;; esac
    done
    return 1
}

# "relax.nn.conv2d" -> IR_OP_CONV2D, from the op list's rows X(CONV2D, "nn.conv2d", ...).
ids=$(sed -n 's/.*X(\([A-Z0-9_]*\), "\([a-z0-9_.]*\)".*/\2 \1/p' ir/op_list.h)

found=$(
    sources | while read -r f; do
        [ -f "$f" ] && ! allowed "$f" || continue
        grep -q '"relax\.[A-Za-z_]' "$f" || continue
        # Comments are dropped (string and char literals kept), line by line so the numbers hold.
        awk -v f="$f" -v skip="$ALLOWED_LINE" '
            {
                o = ""; str = 0; n = length($0)
                for (i = 1; i <= n; i++) {
                    c = substr($0, i, 1); d = substr($0, i, 2)
                    if (blk) { if (d == "*/") { blk = 0; i++ } continue }
                    if (str) {
                        o = o c
                        if (c == "\\") { o = o substr($0, i + 1, 1); i++ }
                        else if (c == q) str = 0
                        continue
                    }
                    if (d == "/*") { blk = 1; i++; o = o " "; continue }
                    if (d == "//") break
                    if (c == "\"" || c == "\047") { str = 1; q = c }
                    o = o c
                }
                if (index(o, skip)) next
                while (match(o, /"relax\.[A-Za-z0-9_.]+"/)) {
                    print f ":" FNR ": " substr(o, RSTART + 7, RLENGTH - 8)
                    o = substr(o, RSTART + RLENGTH)
                }
            }' "$f"
    done
)

[ -z "$found" ] && exit 0
echo "check_op_names: op names as strings (write the op id instead):" >&2
echo "$found" | while read -r loc name; do
    id=$(echo "$ids" | awk -v n="$name" '$1 == n { print "IR_OP_" $2 }')
    echo "  $loc \"relax.$name\" -> ${id:-(not in ir/op_list.h)}" >&2
done
exit 1
