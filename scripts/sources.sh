# Sourced by the check scripts, from the repository root. `sources` lists the C sources and
# headers: tracked and new files in a git checkout (whatever the build directory), else every
# .c and .h outside build/.
sources() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard -- '*.c' '*.h'
    else
        find . -path ./build -prune -o -path './.*' -prune -o \( -name '*.c' -o -name '*.h' \) -print |
            sed 's#^\./##'
    fi
}
