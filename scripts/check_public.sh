#!/bin/sh
# Checks that the public headers (include/graft: graft.h, backend_plugin.h) are all a program or
# a backend plugin needs, and all that is installed:
#   - examples/load_and_run.c, the Triton backend (serve/triton), the backend plugins
#     (plugins/*, the test plugin) and the Python extension (python/graft/_graft.c, with
#     Python's and numpy's headers) compile with the Cflags of graft-uninstalled.pc alone
#     (-I include, not the tree's root);
#   - `make install` into a temporary prefix installs exactly include/graft/*.h, and
#     `pkg-config --cflags graft` names only that folder;
#   - the guide's sample plugin (examples/plugin/hello_plugin.c, docs/writing-a-backend.md),
#     copied out of the tree, builds with `pkg-config graft`, loads and runs like the host, and
#     load_and_run links against the installed libgraft.so.
# Usage (from the repository root): scripts/check_public.sh [BUILD_DIR]
set -eu
build=${1:-build}
root=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
flags="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Werror"

inc=$(pkg-config --with-path="$build" --cflags graft-uninstalled)
[ "$(echo $inc)" = "-I$root/include" ] ||
    { echo "check_public: graft-uninstalled.pc gives '$inc', not -I$root/include alone" >&2; exit 1; }
for f in examples/load_and_run.c serve/triton/graft_backend.c plugins/*/*.c tests/plugin/testplugin/testplugin.c \
         examples/plugin/*.c; do
    [ -f "$f" ] || continue
    $cc $flags $inc -fPIC -c "$f" -o "$tmp/obj.o" ||
        { echo "check_public: $f does not build against include/graft alone" >&2; exit 1; }
done

# The Python extension too: include/graft plus Python's and numpy's headers (and jansson, a
# system header), with setup.py's warnings (numpy's headers are not -Wpedantic clean).
py=
for p in ${PYTHON:-} "$build/third_party/pyvenv/bin/python" /usr/bin/python3 python3; do
    command -v "$p" > /dev/null 2>&1 && "$p" -c 'import numpy' 2> /dev/null && { py=$p; break; }
done
if [ -n "$py" ]; then
    pyinc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    npinc=$("$py" -c 'import numpy; print(numpy.get_include())')
    $cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-cast-function-type $inc \
        -I"$pyinc" -I"$npinc" -fPIC -c python/graft/_graft.c -o "$tmp/obj.o" ||
        { echo "check_public: python/graft/_graft.c does not build against include/graft alone" >&2; exit 1; }
    pynote="python/graft/_graft.c,"
else
    echo "check_public: no Python with numpy (PYTHON=...): python/graft/_graft.c not checked" >&2
    [ "${CI:-}" = true ] && exit 1  # in CI a check not made is a failure, as a skipped test is
    pynote=
fi

prefix=$tmp/prefix
make --no-print-directory -s install BUILD="$build" PREFIX="$prefix" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; echo "check_public: make install failed" >&2; exit 1; }
installed=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
expected=$(ls include/graft/*.h | sed 's#^include#.#' | sort | tr '\n' ' ')
[ "$installed" = "$expected" ] ||
    { echo "check_public: make install put '$installed' under include/, not '$expected'" >&2; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags graft)
[ "$(echo $cflags)" = "-I$prefix/include" ] ||
    { echo "check_public: pkg-config --cflags graft gives '$cflags', not -I$prefix/include" >&2; exit 1; }

mkdir "$tmp/src"
cp examples/plugin/hello_plugin.c examples/load_and_run.c "$tmp/src/"
(cd "$tmp/src" &&
    $cc $flags -shared -fPIC -o libgraft_hello.so hello_plugin.c $(pkg-config --cflags graft) -lm &&
    $cc $flags -o load_and_run load_and_run.c $(pkg-config --cflags --libs graft) -Wl,-rpath,"$prefix/lib")
g=$root/$build/graft
model=$root/examples/plugin/hello_model.relax
(cd "$tmp/src" &&
    "$g" run "$model" --backend-lib ./libgraft_hello.so --backend hello --input x=random --input y=random \
        --output-dir plugin > /dev/null &&
    "$g" run "$model" --input x=random --input y=random --output-dir host > /dev/null &&
    "$g" compare plugin/output_0.npy host/output_0.npy --atol 1e-6 --rtol 1e-6 > /dev/null &&
    ./load_and_run "$model" > /dev/null) ||
    { echo "check_public: the out-of-tree sample plugin or load_and_run failed" >&2; exit 1; }
echo "check_public: the examples, ${pynote:+$pynote }and plugins build against include/graft alone; make install installs" \
     "only it; the sample plugin builds out of tree with pkg-config graft and runs like the host"
