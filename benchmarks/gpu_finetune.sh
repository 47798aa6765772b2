#!/usr/bin/env bash
# One prepared GPU check for LoRA training: a ~0.5B model in bf16 for 300 steps per variant,
# warm-up excluded, tokens/s and peak CUDA memory (results also in $OUT/gpu_finetune.json when
# OUT is set). About 5 minutes on an H200. Pass --model HUB_ID_OR_DIR for a real model.
. "$(dirname "$0")/_gpu_env.sh"
"$PYBIN" benchmarks/gpu_finetune.py "$@"
