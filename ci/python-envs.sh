#!/usr/bin/env bash
# The second torch the Python tests run under: a virtual environment with torch 2.13.0 (the
# CPU build; pip takes the wheel this kind of machine keeps on disk) and pytorch_lightning
# 2.6.6, beside Debian's python3-torch 1.13 that ci/install-deps.sh installs. Prints the
# environment's python, for ci/build.sh's RV_PYTHONS. Idempotent: an environment that already
# has both is kept.
#   VENV overrides the folder (default build-venv/torch-2.13).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-"$root/build-venv/torch-2.13"}
# The versions are pinned with ==: a range would let pip fetch a CUDA build of torch (GBs).
packages=(torch==2.13.0 pytorch_lightning==2.6.6)
if ! "$venv/bin/python" -c "import torch, pytorch_lightning" >/dev/null 2>&1 ||
   [[ $("$venv/bin/python" -c "import torch, pytorch_lightning as pl; \
        print(torch.__version__.split('+')[0], pl.__version__)") != "2.13.0 2.6.6" ]]; then
  echo "python-envs: creating $venv (${packages[*]})" >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${packages[@]}" >&2
fi
echo "$venv/bin/python"
