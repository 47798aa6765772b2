#!/usr/bin/env bash
# One prepared GPU check for `tide-bench eval`: tokens/s per batch size on one CUDA GPU.
. "$(dirname "$0")/_gpu_env.sh"
"$PYBIN" benchmarks/gpu_eval.py "$@"
