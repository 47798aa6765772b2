#!/usr/bin/env bash
# One prepared GPU check for the local EPITOME scorer (issue 35): inference replies/s and a
# fine-tuning epoch's pairs/s on the GPU (bench_epitome.py --device cuda), then, when
# EPITOME_DIR points at the user's copy of the authors' files (carried to the machine, never
# committed), the full grouped 5-fold training there, its card copied to $OUT. About 5 minutes
# on an H200 (the CPU run takes hours on 2 shared cores).
. "$(dirname "$0")/_gpu_env.sh"
"$PYBIN" benchmarks/bench_epitome.py --device cuda --threads 4 --n 3000 --train-pairs 1024 "$@" \
    | tee "${OUT:-.}/bench_epitome_gpu.txt"
if [ -n "${EPITOME_DIR:-}" ]; then
    model="$(mktemp -d)/epitome"
    { time "$PYBIN" -m tide_bench epitome train --from "$EPITOME_DIR" --out "$model" --device cuda; } \
        2> "${OUT:-.}/epitome_train_time.txt"
    cp "$model/card.json" "${OUT:-.}/epitome_card_gpu.json"
fi
