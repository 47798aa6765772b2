"""Issue 30's small follow-ups: one bootstrap resample count, the study's dry run priced with the
study's own judge options, and the new-user trial's leftovers (a reason for a "fine-tuned n/a",
a "did you mean" for a misspelt condition). The refused ``submit``'s exit status is checked in
tests/leaderboard/test_files.py::test_a_refused_submit_leaves_nothing_behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.validation_fixtures import annomi
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.core.resources import resource_dir
from tide_bench.core.stats import DEFAULT_RESAMPLES
from tide_bench.study import load_study
from tide_bench.validation import fetch_pack, report_pack
from tide_bench.validation.manifest import PACKS_ENV


def test_validation_reports_resample_as_often_as_every_other_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`validation report` and `report_pack` used 1000 resamples where the judge summary, the board
    and the audit use core.stats.DEFAULT_RESAMPLES (2000): the same judgments got other intervals."""
    monkeypatch.setenv(PACKS_ENV, str(tmp_path / "manifests"))
    monkeypatch.setenv("TIDE_BENCH_CACHE", str(tmp_path / "cache"))
    annomi(tmp_path / "am", tmp_path / "manifests", turns=12)
    fetch_pack("fx-annomi", accept_licence=True, source=tmp_path / "am")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["validation", "report", "fx-annomi", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["packs"]["fx-annomi"]["bootstrap"]["resamples"] == DEFAULT_RESAMPLES
    assert report_pack("fx-annomi")["bootstrap"]["resamples"] == DEFAULT_RESAMPLES


def _study(tmp_path: Path, judge: dict, **changes: object) -> Path:
    raw = yaml.safe_load((resource_dir("studies") / "demo.yaml").read_text())
    raw |= {"name": "followup", "judge": judge, **changes}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_the_study_dry_run_prices_the_judge_as_the_study_configures_it(tmp_path: Path) -> None:
    """The judge's time was priced at 8 calls at once whatever the judge configuration said
    (claude-sonnet runs 16), and the options came from JudgeOptions(), not the study file."""
    concurrency = load_study(_study(tmp_path, {"name": "claude-sonnet"})).judge_config().concurrency
    assert concurrency != 8
    for judge, expected in (
        ({"name": "claude-sonnet"}, "judge (sync): "),
        ({"name": "claude-sonnet", "concurrency": 3}, "judge (sync): "),
        ({"name": "claude-sonnet", "mode": "batch"}, "judge (batch): "),
    ):
        study = _study(tmp_path, judge)
        result = CliRunner().invoke(cli, ["study", str(study), "--dry-run", "--out", str(tmp_path / "out")])
        assert result.exit_code == 0, result.output
        (line,) = [x for x in result.output.splitlines() if x.startswith("judge (")]
        assert line.startswith(expected), line
        if judge.get("mode") != "batch":
            assert f"at {judge.get('concurrency', concurrency)} calls at once" in line, line
    assert not (tmp_path / "out").exists()


def test_the_demo_summary_says_why_the_fine_tuned_cell_has_no_number() -> None:
    """`tide-bench demo --finetune 0` printed "fine-tuned n/a" with no reason."""
    from tide_bench.demo.pipeline import demo_study, summary_table

    report = {"models": [{"model": "smollm2-135m", "empathy": {"zero-shot": {"mean": 2.5}}}]}
    text = summary_table(report, demo_study(finetune_steps=0).conditions)
    why = "not run (--finetune 0 leaves the fine-tuned cell out)"
    assert text == f"smollm2-135m empathy: zero-shot 2.500, fine-tuned n/a: {why}"
    assert summary_table(report, demo_study().conditions) == "smollm2-135m empathy: zero-shot 2.500, fine-tuned n/a"


@pytest.mark.parametrize(
    ("changes", "field", "guess"),
    [
        ({"conditions": {"zero-shot": {}, "fine-tuend": {}}}, "conditions.fine-tuend", "fine-tuned"),
        ({"conditions": {"zeroshot": {}}}, "conditions.zeroshot", "zero-shot"),
        ({"prompt": "nuetral"}, "prompt", "neutral"),
        ({"split": "tset"}, "split", "test"),
    ],
)
def test_a_misspelt_condition_prompt_or_split_in_a_study_file_gets_a_did_you_mean(
    tmp_path: Path, changes: dict, field: str, guess: str
) -> None:
    path = _study(tmp_path, None, **changes)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=f"did you mean '{guess}'") as refused:
        load_study(path)
    assert refused.value.field == field and refused.value.line is not None
    result = CliRunner().invoke(cli, ["study", str(path), "--dry-run", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and f"did you mean '{guess}'" in result.output
