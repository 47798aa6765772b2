"""`tide-bench eval` end to end with the offline demo model, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.generation import load_run
from tide_bench.metrics.reference import METRIC_NAMES

pytestmark = pytest.mark.slow


def _invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, demo_model_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("runs") / "demo"
    result = _invoke(
        "eval", "--data", "sample", "--model", "hf",
        "--model-args", f"pretrained={demo_model_dir},dtype=float32",
        "--device", "cpu", "--batch-size", "2", "--limit", "2",
        "--gen-kwargs", "max_gen_toks=20", "--output-dir", str(out),
    )
    assert result.exit_code == 0, result.output
    return out


def test_run_directory_holds_real_generations_and_metrics(finished_run: Path) -> None:
    run = load_run(finished_run)
    assert len(run.generations) == 4  # limit 2 per subtask x 2 turns
    assert {g.turn for g in run.generations} == {1, 2}
    for gen in run.generations:
        assert len(gen.reply.split()) >= 3, gen.reply  # real text, not an empty stub
        assert "<|im_start|>assistant" in gen.prompt  # the chat template was applied
        assert set(METRIC_NAMES) <= set(gen.metrics)
        assert 0.0 <= gen.metrics["rouge_l"] <= 1.0 and -1.0 <= gen.metrics["cosine_sim"] <= 1.0
    turn2 = next(g for g in run.generations if g.turn == 2)
    assert turn2.prompt.count("<|im_start|>user") == 2  # history + current client turn


def test_manifest_records_what_produced_the_run(finished_run: Path) -> None:
    m = json.loads((finished_run / "run.json").read_text())
    assert m["data"]["source"] == "sample (synthetic, not TIDE)" and m["data"]["is_synthetic_sample"]
    assert m["data"]["split"] == "test" and len(m["data"]["split_sha256"]) == 64
    assert m["prompt"]["prompt_sha256"] and m["prompt"]["task_version"] == 1.0
    assert m["model"]["backend"] == "hf" and m["model"]["num_parameters"] > 100_000_000
    assert m["generation"]["gen_kwargs"]["tide_empathy_turn1"]["max_gen_toks"] == 20
    assert m["environment"]["packages"]["lm_eval"].startswith("0.4.")
    assert m["n_generations"] == 4
    cos = m["reference_metrics"]["overall"]["cosine_sim"]
    assert cos["n"] == 4 and cos["n_clusters"] == len({g.persona_id for g in load_run(finished_run).generations})
    if cos["n_clusters"] >= 2:  # the interval resamples personas: one persona cannot give an honest interval
        assert cos["ci_low"] <= cos["mean"] <= cos["ci_high"]
    else:
        assert cos["ci_low"] is None and cos["ci_high"] is None
    # lm-eval's own files are there, as the lm_eval CLI writes them.
    results = json.loads((finished_run / m["files"]["results"]).read_text())
    assert "tide_empathy" in results["results"]
    assert results["config"]["model"] == "hf"


def test_finished_run_is_not_overwritten_silently(finished_run: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model-args", "pretrained=x", "--output-dir", str(finished_run)])
    assert result.exit_code == 2
    assert "already holds a finished run" in result.output


def test_unknown_task_is_refused_before_loading_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--tasks", "tide_nope", "--output-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "unknown task(s): tide_nope" in result.output and "tide_empathy_turn1" in result.output
    assert not (tmp_path / "r" / "run.json").exists()


def test_model_that_fails_to_load_leaves_no_manifest(tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model-args", f"pretrained={tmp_path}/missing-model", "--output-dir", str(out)])
    assert result.exit_code == 2
    assert "model failed to load" in result.output
    assert "Traceback" not in result.output
    assert not (out / "run.json").exists()


def test_unknown_backend(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "--data", "sample", "--model", "nope", "--output-dir", str(tmp_path / "r")])
    assert result.exit_code == 2 and "unknown model backend 'nope'" in result.output
