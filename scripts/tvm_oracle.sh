#!/bin/sh
# Installs Apache TVM (the apache-tvm wheel from PyPI) into build/third_party/tvm, for the
# TVM-oracle tests (tests/tvm_oracle/). Idempotent; prints the TVM version when it imports.
# Usage: scripts/tvm_oracle.sh [PYTHON]   (default: python3)
set -eu
PY=${1:-python3}
DEST=build/third_party/tvm
VERSION=0.27.0
if [ -f "$DEST/.installed-$VERSION" ]; then
    PYTHONPATH="$DEST" "$PY" -c 'import tvm; print("tvm", tvm.__version__)'
    exit 0
fi
mkdir -p "$DEST"
"$PY" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$DEST" "apache-tvm==$VERSION"
PYTHONPATH="$DEST" "$PY" -c 'import tvm; from tvm import relax; print("tvm", tvm.__version__)'
touch "$DEST/.installed-$VERSION"
