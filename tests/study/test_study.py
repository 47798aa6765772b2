"""`tide-bench study`: the grid from a study file, resumable, with the paper's report."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import read_figure, write_study
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.demo.model import resolve_model
from tide_bench.study import load_study, make_plan, run_study
from tide_bench.study import runner as study_runner

STUDY = {
    "name": "mini",
    "data": "sample",
    "split": "validation",  # one persona, four items: small, and a full split (the board refuses --limit)
    "models": [
        {"id": "chat", "model": "demo", "model_args": {"dtype": "float32"}},
        {"id": "plain", "model": "demo", "model_args": {"dtype": "float32"}, "chat_template": False},
    ],
    # a large learning rate, so that two steps change the replies (a board refuses two entries with identical replies)
    "conditions": {
        "zero-shot": {},
        "fine-tuned": {
            "lora": {
                "max_steps": 2,
                "eval_steps": 2,
                "batch_size": 1,
                "grad_accum": 1,
                "max_length": 384,
                "learning_rate": 0.02,
            }
        },
    },
    "eval": {"backend": "hf", "device": "cpu", "batch_size": 4, "max_gen_toks": 8},
}


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (lambda s: s.update(colour="blue"), "colour", "unknown key 'colour'"),
        (lambda s: s["models"][1].update(id="chat"), "models[1].id", "model id 'chat' appears twice"),
        (lambda s: s["models"][0].update(id="Chat Model"), "models[0].id", "must be folder-safe"),
        (lambda s: s["models"][0].pop("model"), "models[0].model", "model is required"),
        (lambda s: s["conditions"].update(distilled={}), "conditions.distilled", "unknown condition"),
        (lambda s: s.update(prompt="rubric"), "prompt", "prompt must be one of neutral, guided"),
        (lambda s: s["eval"].update(temperature=1), "eval.temperature", "unknown key 'temperature'"),
        (lambda s: s["models"][0].update(parameters="0.5B"), "models[0].parameters", "must be an integer or null"),
        (lambda s: s["models"][0].update(parameters=-5), "models[0].parameters", "positive integer"),
    ],
)
def test_a_bad_study_file_is_refused_with_file_line_and_field(tmp_path: Path, edit, where: str, message: str) -> None:
    study = json.loads(json.dumps(STUDY))
    edit(study)
    path = write_study(tmp_path, study)
    with pytest.raises(ConfigError) as err:
        load_study(path)
    text = str(err.value)
    assert re.match(rf"{re.escape(str(path))}:\d+, field '{re.escape(where)}': ", text) and message in text, text


def test_the_line_named_is_the_line_of_the_key(tmp_path: Path) -> None:
    path = write_study(tmp_path, STUDY | {"colour": "blue"})
    line = next(n for n, text in enumerate(path.read_text().splitlines(), start=1) if text.startswith("colour:"))
    with pytest.raises(ConfigError, match=rf"study\.yaml:{line}, field 'colour'"):
        load_study(path)


def test_the_shipped_study_files_load() -> None:
    root = Path(__file__).resolve().parents[2] / "studies"
    poe = load_study(root / "pursuit_of_empathy.yaml")
    assert len(poe.models) == 8 and not any(m.verified for m in poe.models)  # not checked against the paper
    assert set(poe.conditions) == {"zero-shot", "fine-tuned"} and poe.reference and poe.judge["name"] == "claude-sonnet"
    demo = load_study(root / "demo.yaml")
    assert demo.data == "sample" and demo.models[0].model == "demo"


def test_a_plan_before_the_data_is_at_hand_says_what_it_assumed(tmp_path: Path) -> None:
    """TIDE is gated: the plan (GPU time, judge cost) is wanted before access is granted."""
    study = json.loads(json.dumps(STUDY)) | {"data": str(tmp_path / "not-downloaded-yet"), "split": "test"}
    study["judge"] = {"name": "claude-sonnet", "mode": "batch"}
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(write_study(tmp_path, study)), "--dry-run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "(2000 items)" in result.output and "note: the data could not be loaded" in result.output
    assert "per-item cost of the built-in sample's items, times 2000" in result.output
    cost = re.search(r"judge \(batch\): \$([0-9.,]+) per cell", result.output)
    assert cost and float(cost.group(1).replace(",", "")) > 0


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(write_study(tmp_path, STUDY)), "--out", str(out), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "chat-fine-tuned" in result.output and "plain-zero-shot" in result.output and "reference" in result.output
    assert (
        "stages to run: 12 of 12" in result.output
    )  # 2 x (eval, submit) + 2 x (finetune, eval, submit) + 2 (reference)
    assert not out.exists()


@pytest.mark.slow
def test_a_study_resumes_after_an_interruption_and_redoes_only_what_a_change_affects(
    tmp_path: Path, demo_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeLLMServer().start()
    try:
        study = json.loads(json.dumps(STUDY)) | {
            "judge": {"name": "local", "model": "fake-judge", "base_url": server.url + "/v1"}
        }
        spec = load_study(write_study(tmp_path, study))
        out = tmp_path / "out"

        # 1. Interrupted (Ctrl-C) during the third generation: what finished is kept. Cells run most
        # expensive first: both fine-tuned cells, then the zero-shot ones.
        real_eval, calls = study_runner.StudyRunner.eval, []

        def interrupted_eval(self, stage):
            calls.append(stage.cell.id)
            if len(calls) == 3:
                raise KeyboardInterrupt
            return real_eval(self, stage)

        monkeypatch.setattr(study_runner.StudyRunner, "eval", interrupted_eval)
        with pytest.raises(KeyboardInterrupt):
            run_study(spec, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        done_before = {f"{s.cell.id}/{s.stage}" for s in make_plan(spec, out).stages if s.done}
        assert {"chat-fine-tuned/eval", "plain-fine-tuned/eval"} <= done_before
        assert "chat-zero-shot/eval" not in done_before and "plain-zero-shot/eval" not in done_before
        assert not list((out / ".study" / "claims").glob("*.json"))  # the interrupted worker released its claim
        monkeypatch.setattr(study_runner.StudyRunner, "eval", real_eval)

        # 2. Resumed: only the stages not yet done run, then the board and the report.
        result = run_study(spec, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        assert not set(result.ran) & done_before and result.failed == {}
        assert set(result.skipped) == done_before and len(result.ran) + len(result.skipped) == 17
        calls_after = server.total_calls
        assert calls_after == 5 * 4  # five judged cells x four items, each judged once, in one judge stage
        assert json.loads((out / "judge" / "judge_summary.json").read_text())["run"]["n_generations"] == 20

        # 3. Nothing changed: nothing runs.
        assert make_plan(spec, out).pending() == []

        # 4. A changed LoRA setting redoes the fine-tuned cells' chains, and nothing else.
        changed = replace(
            spec, conditions=spec.conditions | {"fine-tuned": {"lora": spec.lora() | {"learning_rate": 0.03}}}
        )
        pending = {(s.cell.id, s.stage) for s in make_plan(changed, out).pending()}
        assert {cell for cell, _ in pending} == {"chat-fine-tuned", "plain-fine-tuned"}
        assert {stage for _, stage in pending} == {"finetune", "eval", "judge", "submit"}
        again = run_study(changed, out, resolve_model=resolve_model, echo=lambda _: None, progress=False)
        assert {label.split("/")[0] for label in again.ran} == {"chat-fine-tuned", "plain-fine-tuned"}
        assert {"chat-fine-tuned/judge", "plain-fine-tuned/judge"} <= set(again.ran)
        assert (
            server.total_calls <= calls_after + 2 * 4
        )  # new replies judged; unchanged ones come from the judge's cache

        # The board: the reference row is the anchor, and the report's figures are written.
        rows = json.loads((out / "site" / "leaderboard.json").read_text())["rows"]
        assert {r["condition"] for r in rows} == {"zero-shot", "fine-tuned", "reference"} and len(rows) == 5
        report = json.loads((out / "report" / "report.json").read_text())
        assert {m["model"] for m in report["models"]} == {"chat", "plain"}
        gain = report["models"][0]["empathy"]["gain"]
        assert gain["n"] == 4 and gain["difference"] is not None and report["reference"]["empathy"]["n"] == 4
        names = [figure["name"] for figure in report["figures"]]
        assert {"gain_empathy.svg", "gain_vs_size_empathy.svg", "scenario_gains_empathy.svg"} <= set(names)
        for figure in report["figures"]:  # each an SVG with its caption as title, every model's points marked
            title, _, marks = read_figure((out / "report" / figure["name"]).read_text())
            assert title == figure["caption"] and not title.endswith(".svg") and len(marks) >= 2
        assert len(read_figure((out / "report" / "gain_empathy.svg").read_text())[2]) == 2 * 3  # zs, ft, gain
        assert (
            "![Zero-shot and fine-tuned judged empathy (1-5) per model (95% intervals)](gain_empathy.svg)"
            in (out / "report" / "report.md").read_text()
        )
        assert "| chat |" in (out / "report" / "report.md").read_text()
        # equity per judged cell (issue 49): the sample's few personas make every group too small to compare
        assert len(report["equity"]) == 5 and all(
            e["verdict"]["text"].startswith("not estimable: no attribute has two groups of at least 10 personas")
            for e in report["equity"].values()
        )
        assert "## Equity across personas" in (out / "report" / "report.md").read_text()
        # the reference is named after the study's data (issue 34.11): the sample's, not TIDE's
        assert report["reference"]["label"] == "sample reference (written for tide-bench)"
        assert "sample reference (written for tide-bench): " in (out / "report" / "report.md").read_text()
        assert "Claude 3.5 Sonnet" not in (out / "report" / "report.md").read_text()
        assert {r["model_name"] for r in rows if r["condition"] == "reference"} == {
            "sample reference (written for tide-bench)"
        }
        index = (out / "site" / "index.html").read_text()  # the report is a section of the study's board
        assert '<section id="study-report"' in index and index.count("<figure><svg ") == len(names) >= 3  # inline

        # Human ratings for the whole grid: the study folder stands for its cells' runs.
        built = CliRunner().invoke(
            cli,
            [
                "annotate",
                "build",
                str(out),
                "--per-rater",
                "4",
                "--raters",
                "2",
                "--overlap",
                "2",
                "--repeats",
                "0",
                "--out",
                str(tmp_path / "annotation"),
            ],
        )
        assert built.exit_code == 0, built.output
        assignment = json.loads((tmp_path / "annotation" / "assignment.json").read_text())
        # each run is named by its cell (every cell's folder is called "run"), in the ratings table and in the audit
        assert sorted(assignment["runs"]) == [
            "chat-fine-tuned",
            "chat-zero-shot",
            "plain-fine-tuned",
            "plain-zero-shot",
            "reference",
        ]
        from tide_bench.agreement.ratings import Rating, RatingsTable, annotation_prefix

        unit = next(iter(assignment["units"].values()))
        table = RatingsTable(rows=[Rating(f"{unit['run']}/{unit['item_id']}", "rater-1", "emotion_recognition", 4.0)])
        judgments = out / "cells" / unit["run"] / "run" / "judge" / "judgments.jsonl"
        assert annotation_prefix(judgments, table) == f"{unit['run']}/"
    finally:
        server.stop()


def test_a_study_folder_stands_for_its_generated_runs(tmp_path: Path) -> None:
    from tide_bench.generation import run_label
    from tide_bench.study import study_run_dirs

    out = tmp_path / "out"
    for cell, generated in (("b-zero-shot", True), ("a-zero-shot", True), ("c-fine-tuned", False)):
        (out / "cells" / cell / "run").mkdir(parents=True)
        if generated:
            (out / "cells" / cell / "run" / "run.json").write_text("{}")
    assert study_run_dirs(out) == [out / "cells" / "a-zero-shot" / "run", out / "cells" / "b-zero-shot" / "run"]
    assert study_run_dirs(out / "cells" / "a-zero-shot" / "run") is None  # a run folder is itself
    assert study_run_dirs(tmp_path) is None
    assert (
        run_label(out / "cells" / "a-zero-shot" / "run") == "a-zero-shot" and run_label(tmp_path / "runs" / "x") == "x"
    )
    empty = tmp_path / "empty"
    (empty / "cells").mkdir(parents=True)
    refused = CliRunner().invoke(cli, ["annotate", "build", str(empty), "--out", str(tmp_path / "ann")])
    assert refused.exit_code == 2 and "study folder without generated runs" in refused.output


def test_the_report_becomes_a_section_of_the_board_built_from_its_results(tmp_path: Path) -> None:
    """The board's section is rendered from report.json (nothing parsed back from report.md), every
    text escaped, the figures inline with their captions, the synthetic banner in the data's words."""
    import json

    from tide_bench.study.report import markdown, report_html

    gain = {"difference": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n": 12, "n_personas": 3}
    result = {
        "study": "x", "data": "sample", "split": "test", "prompt": "neutral", "synthetic_sample": True,
        "synthetic": "tide-bench's built-in synthetic sample (not TIDE)",
        "models": [{"model": "<script>alert(1)</script>", "verified": True, "parameters": None,
                    "empathy": {"gain": gain, "zero-shot": {"mean": 3.0, "ci_low": 2.5, "ci_high": 3.5, "n": 12}}}],
        "figures": [{"name": "gain_empathy.svg", "caption": "Zero-shot and fine-tuned empathy"},
                    {"name": "missing.svg", "caption": "a figure not written"}],
    }  # fmt: skip
    (tmp_path / "report.json").write_text(json.dumps(result))
    (tmp_path / "report.md").write_text(markdown(result))
    page = report_html(tmp_path / "report.md")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<th scope="col">model</th>' in page and '<td class="num">+0.50 [0.10, 0.90]</td>' in page
    assert "---" not in page and "**" not in page
    assert "Built on tide-bench&#x27;s built-in synthetic sample (not TIDE) and the demo model" in page
    assert "<code>sample</code>" in page
    assert page.count("<figure><svg ") == 1 and "<figcaption>Zero-shot and fine-tuned empathy" in page
    assert page.count("<g><title>") == 2  # the zero-shot mean and the gain, drawn from report.json
    assert "missing.svg" not in page  # a figure that was not written is left out
    assert "<h3>Judged empathy (1-5)</h3>" in page and "Study x" not in page
    text = (tmp_path / "report.md").read_text()
    assert "|---|---:|---:|" in text and "> **Built on tide-bench's built-in synthetic sample" in text
