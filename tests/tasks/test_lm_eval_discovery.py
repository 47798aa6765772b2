"""The literal `lm_eval --tasks tide_empathy` with no --include_path, and adopting its output.

The wheel installs tasks/tide_empathy into lm-eval's own task tree (lm_eval/tasks/tide_empathy),
which lm-eval 0.4.13 always scans; an editable install puts live `include:` stubs there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tide_bench.cli.main import cli
from tide_bench.tasks import registry
from tide_bench.tasks.registry import (
    GUIDED_TASK,
    PERSONA_SWAP_TASK,
    TASK,
    TURN_TASKS,
    installed_tasks_dir,
    lm_eval_copy_status,
    tasks_path,
)

NAMES = {TASK, GUIDED_TASK, PERSONA_SWAP_TASK, *TURN_TASKS}


def test_lm_eval_s_own_copy_of_the_tasks_is_current() -> None:
    status, explanation = lm_eval_copy_status()
    assert status == "current", f"{explanation}: re-run `pip install -e .` (or reinstall tide-bench)"


def test_lm_eval_index_of_its_own_tree_sees_the_tasks() -> None:
    from lm_eval.tasks._index import TaskIndex

    assert set(TaskIndex.build([installed_tasks_dir()])) == NAMES  # milliseconds, not the 14k scan


@pytest.mark.parametrize("layout", ["wheel-copy", "editable-stubs", "stale-copy", "stale-stub", "missing"])
def test_copy_status_tells_current_from_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    source = tasks_path() / TASK
    installed = tmp_path / "lm_eval" / "tasks" / TASK
    if layout != "missing":
        installed.mkdir(parents=True)
    if layout in ("wheel-copy", "stale-copy"):
        for path in source.iterdir():
            shutil.copy2(path, installed / path.name)
    if layout in ("editable-stubs", "stale-stub"):
        for path in source.glob("*.yaml"):
            target = path if layout == "editable-stubs" else tmp_path / "old-checkout" / path.name
            (installed / path.name).write_text(
                f"{registry.STUB_HEADER}: the real file is in the checkout\ninclude: {target}\n"
            )
    if layout == "stale-copy":
        (installed / "tide_empathy_turn2.yaml").write_text("task: tide_empathy_turn2\n# an old version\n")
    monkeypatch.setattr(registry, "installed_tasks_dir", lambda: installed)
    status, explanation = lm_eval_copy_status()
    expected = {
        "wheel-copy": "current",
        "editable-stubs": "current",
        "stale-copy": "stale",
        "stale-stub": "stale",
        "missing": "missing",
    }
    assert status == expected[layout], explanation
    result = CliRunner().invoke(cli, ["tasks-path", "--check"])
    assert result.exit_code == (0 if status == "current" else 1)
    assert result.output.startswith(status)
    printed = CliRunner().invoke(cli, ["tasks-path"]).stdout.strip()
    assert printed == str(registry.NOTHING_TO_INCLUDE if status == "current" else tasks_path())


def _lm_eval(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lm_eval", *args], capture_output=True, text=True, timeout=timeout)


def test_literal_lm_eval_validate_and_ls_without_include_path() -> None:
    proc = _lm_eval("validate", "--tasks", ",".join(sorted(NAMES)))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    assert "All tasks found and valid" in proc.stdout
    listing = _lm_eval("ls", "tasks")
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert all(f"|{name} " in listing.stdout or f"|{name}|" in listing.stdout for name in NAMES), listing.stdout[-3000:]


@pytest.mark.slow
def test_literal_lm_eval_run_imports_into_a_run_that_judge_and_submit_accept(
    tmp_path: Path, demo_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lm_eval --tasks tide_empathy (no include path) -> tide-bench import -> judge --dry-run -> submit."""
    proc = _lm_eval(
        "--tasks",
        "tide_empathy",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={demo_model_dir},dtype=float32",
        "--metadata",
        json.dumps({"tide_data": "sample", "tide_split": "validation"}),
        "--device",
        "cpu",
        "--batch_size",
        "4",
        "--gen_kwargs",
        "max_gen_toks=8",
        "--apply_chat_template",
        "--log_samples",
        "--output_path",
        str(tmp_path / "lm-out"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "overrides existing task" not in proc.stderr
    runner = CliRunner()
    imported = runner.invoke(cli, ["import", str(tmp_path / "lm-out"), "--out", str(tmp_path / "run")])
    assert imported.exit_code == 0, imported.output
    assert "verified against the data" in imported.output
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["data"]["split"] == "validation" and manifest["data"]["verified"] is True
    assert manifest["n_generations"] == 4 and manifest["model"]["num_parameters"] > 100_000_000
    assert manifest["command"] is None and "command" in manifest["import"]["unknown"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-import-000")
    dry = runner.invoke(cli, ["judge", str(tmp_path / "run"), "--out", str(tmp_path / "run" / "judge"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "calls to make: 4" in dry.output
    board = tmp_path / "board.yaml"
    board.write_text(
        yaml.safe_dump(
            {
                "name": "validation board",
                "split": "validation",
                "require_judgments": False,
                "spot_check_items": 0,
                "demo": True,
            }
        )
    )  # the sample joins demo boards only
    meta = tmp_path / "meta.yaml"
    meta.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "id": "imported-demo",
                "model_name": "SmolLM2 via plain lm_eval",
                "model": {"hub_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "revision": "abc123"},
                "parameters": manifest["model"]["num_parameters"],
                "condition": "zero-shot",
                "license": "apache-2.0",
                "contact": "dev@example.org",
            }
        )
    )
    submitted = runner.invoke(
        cli,
        ["submit", str(tmp_path / "run"), "--meta", str(meta), "--out", str(tmp_path / "subs"), "--board", str(board)],
    )
    assert submitted.exit_code == 0, submitted.output
    assert (tmp_path / "subs" / "imported-demo" / "run" / "run.json").is_file()


# ------------------------------------------------------------------ import: refusals
from tests.helpers import make_lm_eval_output  # noqa: E402


def _import(source: Path, out: Path, *extra: str):
    return CliRunner().invoke(cli, ["import", str(source), "--out", str(out), *extra])


def test_import_of_a_well_formed_output(tmp_path: Path) -> None:
    out = make_lm_eval_output(tmp_path)
    result = _import(out, tmp_path / "run")
    assert result.exit_code == 0, result.output
    from tide_bench.generation import load_run

    run = load_run(tmp_path / "run")
    assert len(run.generations) == 12 and run.manifest["model"]["name"] == "org/fake-model"
    assert run.manifest["data"]["verified"] and run.manifest["generation"]["apply_chat_template"] is True


def _results(out: Path) -> Path:
    return next(out.rglob("results_*.json"))


def _samples(out: Path) -> Path:
    return next(out.rglob("samples_*.jsonl"))


def _edit_samples(out: Path, edit) -> None:
    path = _samples(out)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_results(out: Path, edit) -> None:
    path = _results(out)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("another-task", "not of tide-bench's tasks"),
        ("no-samples", "run lm_eval with --log_samples"),
        ("partial", "an interrupted or edited run"),
        ("not-tide-docs", "field 'doc.item_id': is missing"),
        ("rewritten-client-turn", "the doc's texts were changed"),
        ("other-data", "other data, or a changed snapshot"),
        ("no-results", "no lm-eval results_*.json here"),
    ],
)
def test_import_refuses_bad_input_with_a_clear_error(tmp_path: Path, case: str, expected: str) -> None:
    out = make_lm_eval_output(tmp_path)
    if case == "another-task":
        _edit_results(out, lambda d: d.update(configs={"arc_easy": {"task": "arc_easy"}}))
    elif case == "no-samples":
        _samples(out).unlink()
    elif case == "partial":
        _edit_samples(out, lambda rows: rows.pop())
    elif case == "not-tide-docs":
        _edit_samples(out, lambda rows: [r["doc"].pop("item_id") for r in rows])
    elif case == "rewritten-client-turn":
        _edit_samples(out, lambda rows: rows[3]["doc"].update(client_utterance="Something else entirely."))
    elif case == "other-data":
        _edit_samples(out, lambda rows: [r["doc"].update(split_sha256="f" * 64) for r in rows])
    elif case == "no-results":
        _results(out).unlink()
    result = _import(out, tmp_path / "run")
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run" / "run.json").exists()


def test_import_without_readable_data_keeps_the_claims_unverified(tmp_path: Path) -> None:
    out = make_lm_eval_output(tmp_path)
    _edit_samples(out, lambda rows: [r["doc"].update(tide_source="hub:yenopoya/TIDE@abc") for r in rows])
    result = _import(out, tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert "NOT verified" in result.output
    data = json.loads((tmp_path / "run" / "run.json").read_text())["data"]
    assert data["verified"] is False and data["n_items"] is None and data["source"] == "hub:yenopoya/TIDE@abc"


def test_import_computes_metrics_lm_eval_skipped(tmp_path: Path) -> None:
    """A --predict_only run has no per-item metrics: import computes them."""
    out = make_lm_eval_output(tmp_path)
    _edit_samples(out, lambda rows: [r.pop("rouge_l") for r in rows])
    result = _import(out, tmp_path / "run")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["import"]["added_metrics"] == ["rouge_l"]
    copied = [
        json.loads(x)
        for x in (tmp_path / "run" / manifest["files"]["samples"]["tide_empathy"]).read_text().splitlines()
    ]
    assert all(0.0 <= r["rouge_l"] <= 1.0 for r in copied)
    assert manifest["reference_metrics"]["overall"]["rouge_l"]["n"] == 12


def test_import_masks_tokens_in_the_model_args_lm_eval_recorded(tmp_path: Path) -> None:
    out = make_lm_eval_output(tmp_path)
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    _edit_results(
        out,
        lambda d: [
            d["config"]["model_args"].update(token=token, add_bos_token=True),
            d["configs"]["tide_empathy"]["metadata"].update(token=token),
        ],
    )
    result = _import(out, tmp_path / "run")
    assert result.exit_code == 0, result.output
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert token not in path.read_text(), path
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert "token=[REDACTED]" in manifest["model"]["args"] and "add_bos_token=True" in manifest["model"]["args"]
