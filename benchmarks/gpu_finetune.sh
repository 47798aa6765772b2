#!/usr/bin/env bash
# One prepared GPU check for LoRA training throughput; pass --model for a realistic local model.
. "$(dirname "$0")/_gpu_env.sh"
python benchmarks/bench_finetune.py --steps 30 --batch-size 16 --repeats 2 "$@"
