#!/usr/bin/env bash
# One prepared GPU check for `tide-bench study`: seconds and rate per cell and stage on one CUDA GPU.
. "$(dirname "$0")/_gpu_env.sh"
"$PYBIN" benchmarks/gpu_study.py "$@"
