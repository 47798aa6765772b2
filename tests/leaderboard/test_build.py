"""Submissions, validation, recomputation and the static site."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import board, judged_submission, meta, stand_in_dataset, tide_run
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, TideBenchError
from tide_bench.judging import judge_run, load_judge
from tide_bench.leaderboard import SubmissionRefused, build_site, create_submission, load_board, validate_folder

XSS_NAME = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
__all__ = ["XSS_NAME", "board", "judged_submission"]


@pytest.fixture(scope="module")
def server():
    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-leaderboard-000")


@pytest.fixture
def two_entries(tmp_path: Path, server: FakeLLMServer) -> Path:
    judged_submission(
        tmp_path, server, "good-model", lambda i: f"Good reply [[SCORES:5,5,4]] {i.item_id}", params=1_500_000_000
    )
    judged_submission(
        tmp_path,
        server,
        "weak-model",
        lambda i: f"Weak reply [[SCORES:2,1,2]] {i.item_id}",
        model_name=XSS_NAME,
        params=135_000_000,
    )
    return tmp_path / "submissions"


def test_valid_submissions_build_a_site_with_recomputed_numbers(tmp_path: Path, two_entries: Path) -> None:
    result = build_site(two_entries, tmp_path / "site", board(), allow_risk_gate_off=True)
    assert result.accepted == ["good-model", "weak-model"] and result.refused == {}
    rows = json.loads((tmp_path / "site" / "leaderboard.json").read_text())["rows"]
    good = rows[0]
    assert good["rank"] == 1 and rows[1]["rank"] == 2
    assert good["empathy"]["mean"] == pytest.approx((5 + 5 + 4) / 3)
    assert (
        good["factors"]["supportive_reflection"]["mean"] == 4 and good["n_items"] == 12 and good["unscored_rate"] == 0
    )
    summary = json.loads((two_entries / "good-model" / "judge" / "judge_summary.json").read_text())
    assert good["empathy"]["mean"] == pytest.approx(summary["empathy"]["mean"])
    csv_text = (tmp_path / "site" / "leaderboard.csv").read_text()
    assert "good-model" in csv_text and f"{good['empathy']['mean']}" in csv_text
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    assert "&lt;script\\>" in md and "<script" not in md
    html = (tmp_path / "site" / "index.html").read_text()
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned" in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html  # nothing fetched
    assert (tmp_path / "site" / "models" / "good-model.html").is_file()


def test_models_not_shown_to_differ_share_a_rank(tmp_path: Path, server: FakeLLMServer) -> None:
    """a and b are equal on average (each better on half the items); c is clearly worse."""
    from tide_bench.data import load_dataset

    half = {
        item.item_id: k % 2
        for k, item in enumerate(sorted(load_dataset("sample").items_for("test"), key=lambda i: i.item_id))
    }
    judged_submission(
        tmp_path, server, "a-model", lambda i: f"Reply [[SCORES:{4 if half[i.item_id] else 3},4,4]] {i.item_id}"
    )
    judged_submission(
        tmp_path, server, "b-model", lambda i: f"Reply [[SCORES:{3 if half[i.item_id] else 4},4,4]] {i.item_id}"
    )
    judged_submission(
        tmp_path, server, "c-model", lambda i: f"Reply [[SCORES:2,2,{2 if half[i.item_id] else 1}]] {i.item_id}"
    )
    rows = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True).board["rows"]
    assert {r["id"]: r["rank"] for r in rows} == {"a-model": 1, "b-model": 1, "c-model": 3}


def _edit_jsonl(path: Path, edit) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def _samples(folder: Path) -> Path:
    return sorted((folder / "run").rglob("samples_tide_empathy*.jsonl"))[0]


def test_tampered_score_is_refused(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "cheat", lambda i: f"Reply [[SCORES:2,2,2]] {i.item_id}")
    _edit_jsonl(folder / "judge" / "judgments.jsonl", lambda rows: rows[0]["scores"].update(emotion_recognition=5))
    check = validate_folder(folder, board(), spot_checks=False)
    assert not check.ok and any(
        "judge/judge_summary.json, field 'factors.emotion_recognition.mean': claims" in e for e in check.errors
    )


def test_swapped_reply_is_refused(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "swap", lambda i: f"Reply {i.item_id}")
    _edit_jsonl(_samples(folder), lambda rows: rows[0].update(filtered_resps=["A much better reply written later."]))
    errors = " ".join(validate_folder(folder, board(), spot_checks=False).errors)
    assert "do not match the submitted reply" in errors and "field 'rouge_l': stored" in errors


def test_tampered_reference_metric_is_caught_by_the_spot_check(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "metric", lambda i: f"Reply {i.item_id}")
    _edit_jsonl(_samples(folder), lambda rows: [r.update(rouge_l=0.99) for r in rows])
    check = validate_folder(folder, board(), spot_checks=False)
    assert any("field 'rouge_l': stored 0.99, recomputed from the reply" in e for e in check.errors)


def test_judge_mismatch_is_refused_with_the_reason(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "other-judge", lambda i: f"Reply {i.item_id}")
    check = validate_folder(folder, board(judge_version="0123456789abcdef"), spot_checks=False)
    assert any("mixing judges is refused" in e for e in check.errors)


def test_minority_judge_is_refused_when_the_board_is_not_pinned(tmp_path: Path, server: FakeLLMServer) -> None:
    judged_submission(tmp_path, server, "m1", lambda i: f"R1 {i.item_id}")
    judged_submission(tmp_path, server, "m2", lambda i: f"R2 {i.item_id}")
    run = tide_run(tmp_path / "run-m3", lambda i: f"R3 {i.item_id}", stand_in_dataset(tmp_path), model_name="org/m3")
    judge_run(run, run / "judge", load_judge("claude-sonnet", base_url=server.url, reference=True))
    (tmp_path / "m3.yaml").write_text(yaml.safe_dump(meta("m3")))
    with pytest.raises(SubmissionRefused, match=r"majority \(m1, m2\)"):  # submit checks it with the entries there
        create_submission(run, tmp_path / "m3.yaml", tmp_path / "submissions", board=board(), spot_checks=False)
    create_submission(run, tmp_path / "m3.yaml", tmp_path / "alone", board=board(), spot_checks=False)
    (tmp_path / "alone" / "m3").rename(tmp_path / "submissions" / "m3")
    result = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    assert sorted(result.accepted) == ["m1", "m2"]
    assert (
        "judge configuration differs from the board's other entries" in result.refused["m3"][0]
        and "majority (m1, m2)" in result.refused["m3"][0]
    )


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda f: (f / "submission.yaml").write_text("id: x\n  bad: [indent\n"),
            r"submission.yaml:\d+: malformed YAML",
        ),
        (lambda f: (f / "run" / "run.json").unlink(), "run/run.json: file not found"),
        (
            lambda f: _edit_jsonl(f / "judge" / "judgments.jsonl", lambda rows: rows.pop()),
            "have a reply but no judgment",
        ),
        (
            lambda f: (f / "submission.yaml").write_text(
                (f / "submission.yaml").read_text().replace("zero-shot", "finetuned")
            ),
            "field 'condition'",
        ),
        (
            lambda f: (f / "submission.yaml").write_text(
                (f / "submission.yaml").read_text().replace("id: bad-entry", "id: other-id")
            ),
            "must equal the folder name",
        ),
    ],
    ids=["malformed-yaml", "missing-file", "incomplete", "schema", "id-mismatch"],
)
def test_bad_submissions_say_what_to_fix(tmp_path: Path, server: FakeLLMServer, mutate, expected: str) -> None:
    import re

    folder = judged_submission(tmp_path, server, "bad-entry", lambda i: f"Reply {i.item_id}")
    mutate(folder)
    check = validate_folder(folder, board(), spot_checks=False)
    assert not check.ok and any(re.search(expected, e) for e in check.errors), check.errors


def test_unsafe_paths_and_limit_are_refused(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "paths", lambda i: f"Reply {i.item_id}")
    manifest = json.loads((folder / "run" / "run.json").read_text())
    task = next(iter(manifest["files"]["samples"]))
    manifest["files"]["samples"][task] = "../../../../etc/passwd"
    manifest["generation"]["limit"] = 2
    (folder / "run" / "run.json").write_text(json.dumps(manifest))
    errors = " ".join(validate_folder(folder, board(), spot_checks=False).errors)
    assert (
        f"field 'files.samples.{task}': names a file that is not a regular file inside the submission" in errors
        and "--limit" in errors
    )


def test_id_clash_and_strict_build(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "clash", lambda i: f"Reply {i.item_id}")
    with pytest.raises(ConfigError, match="already exists"):
        create_submission(tmp_path / "run-clash", tmp_path / "clash.yaml", tmp_path / "submissions", board=board())
    shutil.copytree(folder, tmp_path / "submissions" / "broken")
    (tmp_path / "submissions" / "broken" / "run" / "run.json").unlink()
    result = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    assert result.accepted == ["clash"] and "broken" in result.refused  # one bad entry does not stop the others
    with pytest.raises(TideBenchError, match="--strict"):
        build_site(tmp_path / "submissions", tmp_path / "site2", board(), strict=True, allow_risk_gate_off=True)


def test_shipped_board_configs_load() -> None:
    assert load_board().require_judgments is True
    from tide_bench.core.resources import resource_dir

    assert load_board(resource_dir("leaderboard") / "demo.yaml").demo is True


def test_validate_json_for_ci_scripts(tmp_path: Path, two_entries: Path) -> None:
    shutil.copytree(two_entries / "good-model", two_entries / "broken")
    (two_entries / "broken" / "run" / "run.json").unlink()
    board_file = tmp_path / "board.yaml"  # the helpers' board: the stand-in has fewer conversations than TIDE
    board_file.write_text(yaml.safe_dump({"name": "t", "conversations_per_persona": board().conversations_per_persona}))
    args = ["leaderboard", "validate", str(two_entries), "--json", "--no-embedding-check", "--board", str(board_file)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    document = json.loads(result.output)  # nothing but the JSON document on stdout
    assert document["ok"] is False
    assert [s["id"] for s in document["submissions"]] == ["broken", "good-model", "weak-model"]
    broken, good = document["submissions"][0], document["submissions"][1]
    assert not broken["ok"] and broken["n_items"] is None
    problem = {"message": "file not found: a submission holds the run's run.json", "path": "run/run.json"}
    assert problem | {"line": None, "field": None} in broken["problems"], broken["problems"]
    located = [{k: p[k] for k in ("path", "field")} for p in broken["problems"]]
    assert {"path": "submission.yaml", "field": "id"} in located, located
    assert good["ok"] and good["n_items"] == 12 and good["problems"] == [] and good["spot_check"] is None, good


def test_csv_downloads_keep_formulas_as_text(tmp_path: Path, server: FakeLLMServer) -> None:
    """A model name or a reply written as a spreadsheet formula opens as text (OWASP CSV injection)."""
    name = '=HYPERLINK("https://evil.example/x","Model A")'
    judged_submission(
        tmp_path, server, "formula", lambda i: f"=cmd|' /C calc'!A0 [[SCORES:3,3,3]] {i.item_id}", model_name=name
    )
    build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    (row,) = csv.DictReader((tmp_path / "site" / "leaderboard.csv").read_text().splitlines())
    assert row["model_name"] == "'" + name and float(row["empathy"]) == 3  # numbers stay numbers
    items = list(csv.DictReader((tmp_path / "site" / "downloads" / "formula" / "items.csv").read_text().splitlines()))
    assert items and all(r["reply"].startswith("'=cmd|") for r in items)
    assert all(r["overall"] == "3.0" for r in items)
    model = (tmp_path / "site" / "instances" / "formula.js").read_text()
    assert "=cmd|' /C calc'!A0" in model and "'=cmd" not in model  # the exact text, where no spreadsheet reads it
