"""benchmarks/gpu_check.sh, the one GPU check: its CPU dry mode runs the same phases end to end
(tiny shapes, no installs, no vLLM) and writes what a GPU run writes; its summary's rates feed
`tide-bench study --dry-run --rates`. The full dry run takes a few minutes on 2 cores: slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def test_the_script_parses_and_replaces_the_one_purpose_scripts() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    assert not list((ROOT / "benchmarks").glob("gpu_eval.*")) and not (ROOT / "benchmarks" / "_gpu_env.sh").exists()
    text = SCRIPT.read_text()
    assert '-e ".[eval,qlora]"' in text  # H1: the documented install with the model stack, not the plain one
    assert "import tide_bench.finetune, lm_eval, gguf" in text  # and nothing runs on a half-installed stack
    assert "--upgrade torch" in text and '".[eval,vllm]"' in text  # TIDE_TORCH_INDEX can replace a CPU torch; ray


@pytest.mark.slow
def test_the_cpu_dry_mode_runs_every_phase_and_writes_the_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = os.environ | {
        "GPU_CHECK_DRY": "1",
        "PYTHON": sys.executable,
        "OUT": str(out),
        "TMPDIR": str(tmp_path),
        "OMP_NUM_THREADS": "2",
    }
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["check.log", "results.json", "summary.md"]
    assert "FAILED" not in log and "Traceback" not in log, log[-3000:]
    results = json.loads((out / "results.json").read_text())
    train = {r["variant"] + "|" + r["size"]: r for r in results["train"]["results"]}
    assert train["bf16 4x4 (default), validation on|0.5B"]["tokens_per_s"] > 0
    assert train["bf16 4x4 (default)|3B"]["tokens_per_s"] > 0
    qlora = train.get("QLoRA nf4 4x4|3B", {})
    if "skipped" not in qlora:  # bitsandbytes' CPU backend: the QLoRA path runs in the dry mode too
        assert qlora["base_weight"].startswith("Params4bit") and qlora["tokens_per_s"] > 0
    runs = {r["run"]: r for r in results["hf_eval"]}
    assert runs["hf-base"]["items_per_s"] > 0 and runs["hf-base"]["system_prompt_placement"] == "system"
    assert runs["hf-lora"]["run_json_adapter"]["loaded_via"] == "peft" and runs["hf-lora"]["run_json_adapter"]["sha256"]
    assert results["rates"]["devices"]["cpu"]["finetune_tokens_per_s"]
    assert any(line.startswith("GPU time still to run: fine-tuning") for line in results["grid_estimate"])
    summary = (out / "summary.md").read_text()
    assert "CPU dry run" in summary and "## The paper's grid, estimated from these rates" in summary
    assert not list(tmp_path.glob("tide-gpu-check-*"))  # its scratch folder is removed
