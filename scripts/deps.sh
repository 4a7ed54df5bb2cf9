#!/usr/bin/env bash
# Installs what graft needs on a Debian machine. Idempotent: does nothing when all is present.
set -euo pipefail
PKGS=(build-essential pkg-config libdnnl-dev llvm-14-dev libprotobuf-c-dev protobuf-c-compiler
      libonnx-dev libonnx-testdata libjansson-dev libdlpack-dev libcriterion-dev valgrind
      clang libclang-rt-14-dev     # clang build, fuzzing
      python3-torch python3-torchvision   # the model zoo, the recurrent test models
      python3-onnx                        # the QDQ test model (scripts/make_qdq_cnn.py)
      python3-venv python3-dev            # the Python package (make pytest) and tritonserver (scripts/triton_env.sh): venvs; headers
      libgraphviz-dev chromium            # graft explore's graph layout, its browser test
      libxnnpack-dev libpthreadpool-dev)  # the xnnpack backend plugin (plugins/xnnpack)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
# Node.js (for test data from npm) may come from elsewhere; only ask Debian when it is absent.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
