"""The reference row is derived from the data, not declared (issue 32, N1; issue 34 item 11).

A submission that calls itself the reference (``prompt.condition: reference`` with
``model.is_reference: true``) becomes the board's anchor only if its replies are the data's
reference replies item for item; otherwise it is refused, naming the first differing item.
Replies that are all the references under a model's name are refused too, a board has one
anchor, and the anchor is named after its data source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import (
    board,
    edit_jsonl,
    judged_submission,
    reference_submission,
    samples_files,
)
from tide_bench.core.resources import resource_dir
from tide_bench.generation import reference
from tide_bench.leaderboard import build_site, load_board, validate_many


@pytest.fixture(scope="module")
def server(llm_server: FakeLLMServer) -> FakeLLMServer:
    return llm_server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-reference-000")


def _errors(subs: Path, the_board) -> dict[str, list[str]]:
    return {c.id: c.errors for c in validate_many(subs, the_board, spot_checks=False)}


def test_a_declared_reference_with_other_replies_is_refused_naming_the_first_differing_item(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    judged_submission(tmp_path, server, "model-a", "[[SCORES:3,3,3]] a reply")
    forged = reference_submission(tmp_path, server, reply="[[SCORES:5,5,5]] any reply at all", submit=False)
    errors = _errors(tmp_path / "submissions", board())
    assert errors["model-a"] == []
    first = sorted(json.loads(line)["doc"]["item_id"] for f in samples_files(forged) for line in f.open())[0]
    message = next(e for e in errors["tide-reference"] if "not the data's reference reply" in e)
    assert f"item {first}:" in message and "12 of 12 items differ" in message and "--model reference" in message
    built = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    assert "tide-reference" in built.refused and built.accepted == ["model-a"]
    assert not any(r.get("is_reference") for r in built.board["rows"])  # no anchor from a forged row


def test_one_changed_reply_is_enough_and_is_named(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = reference_submission(tmp_path, server)
    assert _errors(tmp_path / "submissions", board()) == {"tide-reference": []}
    changed = {}

    def edit(rows: list[dict]) -> None:
        row = rows[5]
        changed["id"] = row["doc"]["item_id"]
        row["filtered_resps"] = [row["filtered_resps"][0] + " And you are very brave."]
        row["resps"] = [row["filtered_resps"]]

    edit_jsonl(samples_files(folder)[0], edit)
    errors = _errors(tmp_path / "submissions", board())["tide-reference"]
    assert any(f"item {changed['id']}: the reply is not the data's reference reply" in e for e in errors), errors
    assert any("1 of 12 items differ" in e for e in errors)


def test_replies_that_are_all_the_references_under_a_models_name_are_refused(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    from tide_bench.leaderboard import SubmissionRefused

    with pytest.raises(SubmissionRefused) as refused:
        judged_submission(tmp_path, server, "copycat", lambda item: item.reference_reply)
    errors = refused.value.check.errors
    assert any("every reply is the data's reference reply" in e and "--model reference" in e for e in errors), errors
    assert not (tmp_path / "submissions" / "copycat").exists()


def test_a_board_has_one_anchor(tmp_path: Path, server: FakeLLMServer) -> None:
    judged_submission(tmp_path, server, "model-a", "[[SCORES:3,3,3]] a reply")
    reference_submission(tmp_path, server, "ref-one")
    reference_submission(tmp_path, server, "ref-two", out=tmp_path / "second")
    (tmp_path / "second" / "ref-two").rename(tmp_path / "submissions" / "ref-two")
    errors = _errors(tmp_path / "submissions", board())
    assert errors["model-a"] == []
    assert any("a second reference row (also ref-two)" in e for e in errors["ref-one"]), errors
    assert any("a second reference row (also ref-one)" in e for e in errors["ref-two"]), errors


def test_the_demo_board_compares_the_reference_with_its_own_data(tmp_path: Path, server: FakeLLMServer) -> None:
    """The demo board names its data (the built-in sample): the reference row is checked against it."""
    demo = load_board(resource_dir("leaderboard") / "demo.yaml")
    assert demo.data_source == "sample"
    reference_submission(tmp_path, server, data=Path("sample"), the_board=demo)  # `--data sample`
    built = build_site(tmp_path / "submissions", tmp_path / "site", demo, allow_risk_gate_off=True)
    assert built.refused == {}
    (row,) = built.board["rows"]
    assert row["model_name"] == "sample reference (written for tide-bench)" and row["is_reference"] is True
    # the board's items exactly: a reference without one of them is refused, naming the gap
    edit_jsonl(samples_files(tmp_path / "submissions" / "tide-reference")[0], lambda rows: rows.pop(3))
    errors = _errors(tmp_path / "submissions", demo)["tide-reference"]
    assert any("1 item(s) of the board's data have no reply" in e for e in errors), errors


def test_the_reference_label_comes_from_the_data_source() -> None:
    reference_label, LABEL, SAMPLE_LABEL = reference.reference_label, reference.LABEL, reference.SAMPLE_LABEL
    assert reference_label("hub:yenopoya/TIDE@abc123") == LABEL
    assert reference_label("sample (synthetic, not TIDE)", is_sample=True) == SAMPLE_LABEL
    assert reference_label("local:/data/snapshots/TIDE-v2") == "reference replies of TIDE-v2"
    assert reference_label("<local>/tide-stand-in") == "reference replies of tide-stand-in"
    assert reference_label("hub:someone/other-set@1") == "reference replies of someone/other-set"
    # a board's release label wins over what the run says
    assert reference_label("<local>/x", release="hub:yenopoya/TIDE@abc") == LABEL
