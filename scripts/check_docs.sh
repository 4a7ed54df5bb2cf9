#!/usr/bin/env bash
# Runs every shell command the documentation shows, so that none goes stale: the lines of each
# fenced ```sh block of README.md and docs/*.md (or of the FILEs given), in order, one shell per
# file, in a fresh temporary directory where `build` is this tree's build directory and `tests`,
# `examples`, `scripts` are the tree's (read them, write elsewhere). build/third_party/models.env
# is sourced first, so $GRAFT_MODEL_DET and the others name the cached models.
#
# A block that must not run says why in its info string: ```sh norun: REASON (a long benchmark,
# a command that installs packages). A command expected to fail is written `! COMMAND`. Shell
# transcripts ("$ command" lines) belong in ```sh blocks, not in other blocks: such a line
# outside a ```sh block is an error, so no command escapes the check.
#
# Fails naming the file, the line and the command that failed, with the tail of its output, and
# when a relative link names no file or README.md is over 15 KB.
#
#   scripts/check_docs.sh [FILE.md...]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
[ -x build/graft ] || { echo "check_docs: build/graft missing (make first)" >&2; exit 2; }
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/*.md)

bad=0 total=0
# the README is the front door; the details live in docs/
readme_max=15360
if [ "$(wc -c < README.md)" -gt $readme_max ]; then
    echo "check_docs: README.md is $(wc -c < README.md) bytes, more than $readme_max: move details to docs/" >&2
    bad=1
fi
for md in "${files[@]}"; do
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/graft_docs.XXXXXX")
    for d in build tests examples scripts; do ln -s "$root/$d" "$tmp/$d"; done
    script="$tmp/.commands.sh" log="$tmp/.log"
    {
        echo "cd '$tmp' || exit 2"
        echo "[ -f build/third_party/models.env ] && . build/third_party/models.env"
    } > "$script"
    n=0 in_sh=0 fence="" cmd="" cmd_line=0 lineno=0 err=""
    while IFS= read -r line || [ -n "$line" ]; do
        lineno=$((lineno + 1))
        if [ -z "$fence" ]; then
            if [[ $line =~ ^[[:space:]]*(\`\`\`+)(.*)$ ]]; then
                fence=${BASH_REMATCH[1]}
                info=${BASH_REMATCH[2]}
                in_sh=0
                if [[ $info =~ ^sh([[:space:]]|$) ]]; then
                    in_sh=1
                    if [[ $info =~ ^sh[[:space:]]+norun ]]; then
                        in_sh=2
                        [[ $info =~ ^sh[[:space:]]+norun:[[:space:]]*[^[:space:]] ]] ||
                            err+="check_docs: $md:$lineno: \`\`\`sh norun needs a reason: \`\`\`sh norun: REASON"$'\n'
                    fi
                fi
            fi
            continue
        fi
        if [[ $line =~ ^[[:space:]]*\`\`\`+[[:space:]]*$ ]]; then
            fence=""
            continue
        fi
        if [ $in_sh = 0 ]; then
            [[ $line =~ ^\$\  ]] && err+="check_docs: $md:$lineno: a shell transcript outside a \`\`\`sh block: $line"$'\n'
            continue
        fi
        [ $in_sh = 2 ] && continue
        [ -z "$cmd" ] && cmd_line=$lineno
        if [[ $line =~ \\$ ]]; then
            cmd+="${line%\\}"
            continue
        fi
        cmd+="$line"
        [[ $cmd =~ ^[[:space:]]*(#.*)?$ ]] && { cmd=""; continue; }
        n=$((n + 1))
        printf 'echo %q >> %q\n{ %s\n} >> %q 2>&1\n' "+ $cmd" "$log" "$cmd" "$log" >> "$script"
        printf 'rc=$?; [ $rc = 0 ] || { echo %q"exit status $rc: "%q >&2; tail -n 20 %q >&2; exit 1; }\n' \
            "check_docs: $md:$cmd_line: " "$cmd" "$log" >> "$script"
        cmd=""
    done < "$md"
    [ -n "$fence" ] && err+="check_docs: $md: a fenced block is not closed"$'\n'
    # relative links must name files of the tree
    while IFS= read -r target; do
        target=${target%%#*}
        [ -z "$target" ] || [ -e "$(dirname "$md")/$target" ] ||
            err+="check_docs: $md: link to a missing file: $target"$'\n'
    done < <(grep -o '\](\([^)#:]*\)\(#[^)]*\)\?)' "$md" | sed 's/^](//; s/)$//')
    if [ -n "$err" ]; then
        printf "%s" "$err" >&2
        bad=$((bad + 1))
    elif [ $n -gt 0 ]; then
        if timeout 900 bash "$script"; then
            echo "check_docs: $md: $n commands ok"
        else
            bad=$((bad + 1))
        fi
    fi
    total=$((total + n))
    rm -rf "$tmp"
done
if [ $bad -gt 0 ]; then
    echo "check_docs: $bad file(s) failed" >&2
    exit 1
fi
echo "check_docs: ${#files[@]} files, $total commands ok"
