#!/bin/sh
# A virtual environment under build/third_party (never the system Python) holding the given PyPI
# packages. Idempotent: a stamp named after the package list records a finished install, so
# changing the list installs again. Prints the venv's python.
# Usage (from the repository root): scripts/venv.sh VENV_DIR PACKAGE...
set -eu
venv=$1
shift
py=${PYTHON:-/usr/bin/python3}
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv" >&2
stamp="$venv/.deps-$(echo "$*" | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >&2
    touch "$stamp"
fi
echo "$venv/bin/python"
