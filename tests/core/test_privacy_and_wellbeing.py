"""Rater wellbeing and privacy at run time (issue 44, clinical re-check V14, V15).

V14: before any text goes to a hosted API, stderr says how many conversations go where and that
they are subject to the provider's retention terms; the first run from an output folder to an
endpoint and model needs a confirmation (a terminal's prompt, or ``--yes``), else nothing is sent.
V15: a risk item is announced before it is shown (with Skip), ``annotate build --exclude-risk``
leaves risk items out (reading the risk labels), the end screen is a debrief that repeats the
support contact, and consent says how to withdraw ratings already sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers import make_run
from tide_bench.annotation import AssignmentOptions, build_annotation
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError
from tide_bench.core.hosted import CONSENT_FILE, confirm_hosted, is_hosted

RISK_ITEMS = {"10/conversation_3/turn1", "2/conversation_3/turn1"}  # the sample's labelled risk items (test split)
SUPPORT = "Dr C. Support, +44 20 0000 0000, or Samaritans 116 123"


@pytest.mark.parametrize(
    ("url", "hosted"),
    [
        ("https://api.anthropic.com/", True),
        ("https://api.openai.com/v1", True),
        ("http://gpu-box.example.org:8000/v1", True),
        ("http://127.0.0.1:8000/v1", False),
        ("http://localhost:8000/v1", False),
        ("http://[::1]:8000/v1", False),
        ("http://10.1.2.3/v1", False),
        ("http://192.168.0.7:8080", False),
        ("http://vllm.local:8000/v1", False),
        ("http://8.8.8.8/v1", True),
    ],
)
def test_what_counts_as_hosted(url: str, hosted: bool) -> None:
    assert is_hosted(url) is hosted


def _confirm(folder: Path, seen: list[str], **kw: Any) -> bool:
    settings = {
        "n": 12,
        "provider": "anthropic",
        "endpoint": "https://api.anthropic.com/",
        "model": "claude-sonnet-4-5-20250929",
        "yes": False,
        "interactive": False,
        "echo": seen.append,
        "ask": lambda question: False,
    }
    return confirm_hosted(folder, **(settings | kw))


def test_the_first_hosted_run_needs_a_confirmation_and_later_runs_show_the_notice(tmp_path: Path) -> None:
    seen: list[str] = []
    notice = (
        "Sending 12 conversations to anthropic (claude-sonnet-4-5-20250929); they are subject to its retention terms "
        "(docs/privacy.md)."
    )
    with pytest.raises(ConfigError) as info:
        _confirm(tmp_path / "out", seen)  # no one at a terminal, no --yes: stopped
    assert "nothing was sent" in str(info.value) and "--yes" in str(info.value)
    assert seen == [notice] and not (tmp_path / "out").exists()
    with pytest.raises(ConfigError):
        _confirm(tmp_path / "out", seen, interactive=True)  # at a terminal, answered no
    assert _confirm(tmp_path / "out", seen, interactive=True, ask=lambda q: True) is True  # answered yes
    assert _confirm(tmp_path / "out", seen) is True  # not the first run any more: notice only
    assert seen.count(notice) == 4
    with pytest.raises(ConfigError):
        _confirm(tmp_path / "out", seen, model="claude-opus-4-1")  # another model: first again
    assert _confirm(tmp_path / "other", seen, yes=True) is True  # --yes: recorded in that folder
    record = json.loads((tmp_path / "other" / CONSENT_FILE).read_text())
    assert record[0]["endpoint"] == "https://api.anthropic.com/" and "confirmed_at" in record[0]
    assert _confirm(tmp_path / "local", seen, endpoint="http://127.0.0.1:9/v1") is False  # not hosted: silent
    assert _confirm(tmp_path / "none", seen, n=0) is False  # nothing to send
    assert not (tmp_path / "local").exists() and not (tmp_path / "none").exists()


def test_judge_stops_before_a_first_hosted_run_without_yes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-HOSTED-0123456789")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    run = make_run(tmp_path / "run")
    result = CliRunner().invoke(cli, ["judge", str(run), "--out", str(tmp_path / "judge")])
    assert result.exit_code == 2, result.output
    assert re.search(r"Sending \d+ conversations to anthropic \(claude-[^)]+\); they are subject to its", result.output)
    assert "pass --yes" in result.output
    assert not (tmp_path / "judge" / "judgments.jsonl").exists() and not (tmp_path / "judge" / CONSENT_FILE).exists()


def test_eval_with_a_hosted_api_backend_stops_before_a_first_run_without_yes(tmp_path: Path) -> None:
    pytest.importorskip("lm_eval")
    out = tmp_path / "run"
    args = ["eval", "--data", "sample", "--model", "anthropic-chat", "--model-args", "model=claude-x"]
    result = CliRunner().invoke(cli, [*args, "--limit", "3", "--output-dir", str(out)])
    assert result.exit_code == 2, result.output
    assert "Sending 3 conversations to anthropic-chat (claude-x)" in result.output and "--yes" in result.output
    assert not (out / "run.json").exists()
    sampled = CliRunner().invoke(cli, [*args, "--limit", "3", "--samples", "2", "--output-dir", str(out)])
    assert "Sending 6 conversations to anthropic-chat (claude-x)" in sampled.output  # each sample sends them again
    assert sampled.exit_code == 2 and not (out / "sample-1").exists()


def _page_data(page: Path) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    assert found
    return json.loads(found.group(1).replace("\\u003c", "<"))


def test_risk_items_are_announced_before_they_are_shown_and_the_end_is_a_debrief(tmp_path: Path) -> None:
    runs = [make_run(tmp_path / f"run-{m}", f"Reply of {m}.") for m in ("a", "b")]
    options = AssignmentOptions(per_rater=12, raters=2, overlap=2, repeats=0, support=SUPPORT)
    assignment = build_annotation(runs, tmp_path / "ann", options)
    data = _page_data(tmp_path / "ann" / "rater-1.html")
    notices = {u["unit_id"]: u["notice"] for u in data["units"]}
    risky = {uid for uid, u in assignment["units"].items() if u["item_id"] in RISK_ITEMS}
    assert risky and all(notices[uid] for uid in risky if uid in notices)
    assert {notices[uid] for uid in risky if uid in notices} <= {
        "This conversation mentions suicide or self-harm.",
        "This conversation describes someone who may be in danger right now.",
    }
    assert all(notices[uid] is None for uid in notices if uid not in risky)
    page = (tmp_path / "ann" / "rater-1.html").read_text()
    assert 'id="item-notice"' in page and 'id="notice-skip"' in page and "skipping is always fine" in page
    debrief = page[page.index('id="debrief"') :]
    assert SUPPORT in debrief and "Your rater id is <b>rater-1</b>" in debrief
    assert "withdraw" in debrief and "deleted and left out of every analysis" in debrief
    intro = page[page.index('id="intro"') : page.index('id="rate"')]
    assert "After you have sent it you can still withdraw" in intro


def test_exclude_risk_leaves_every_risk_item_out(tmp_path: Path) -> None:
    runs = [make_run(tmp_path / f"run-{m}", f"Reply of {m}.") for m in ("a", "b")]
    result = CliRunner().invoke(
        cli,
        ["annotate", "build", *map(str, runs), "--per-rater", "10", "--raters", "2", "--overlap", "2",
         "--repeats", "0", "--exclude-risk", "--support", SUPPORT, "--out", str(tmp_path / "ann")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "left out 4 risk item(s) (--exclude-risk)" in result.output
    assignment = json.loads((tmp_path / "ann" / "assignment.json").read_text())
    assert assignment["excluded_risk_items"] == 4
    assert not {u["item_id"] for u in assignment["units"].values()} & RISK_ITEMS
    assert all(u["notice"] is None for u in assignment["units"].values())


def test_exclude_risk_without_labels_is_refused(tmp_path: Path) -> None:
    from tests.leaderboard_helpers import stand_in_dataset, tide_run

    run = tide_run(tmp_path / "run", "A reply.", stand_in_dataset(tmp_path))  # a local snapshot: no labels ship
    with pytest.raises(ConfigError) as info:
        build_annotation(
            [run], tmp_path / "ann", AssignmentOptions(per_rater=4, raters=1, overlap=1, exclude_risk=True)
        )
    assert "--exclude-risk needs the risk labels" in str(info.value) and "--risk-labels" in str(info.value)


def test_a_study_with_a_hosted_judge_stops_before_any_stage_without_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-HOSTED-0123456789")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    study = {
        "name": "hosted",
        "data": "sample",
        "models": [{"id": "chat", "model": "demo"}],
        "conditions": {"zero-shot": {}},
        "eval": {"backend": "hf", "device": "cpu", "max_gen_toks": 8},
        "judge": {"name": "claude-sonnet"},
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["study", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "Sending 24 conversations to anthropic" in result.output  # 12 test items x 2 cells (model, reference)
    assert "pass --yes" in result.output and not (out / "cells").exists()
