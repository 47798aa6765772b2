"""Item-level risk labels (issue 26 item 2): fixed with the data, checked by `data validate`, shipped
for the sample and the risk supplement, made for TIDE by a reply-free, cached labeller; a
clinician's sign-off counts only for the exact file it signed."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tide_bench.cli.main import cli
from tide_bench.core.errors import DataError
from tide_bench.data import load_dataset, validate
from tide_bench.data.risk_labels import CSSRS, DANGER, LADDER, SIGNOFF_FORMAT, read_risk_labels
from tide_bench.data.sources import RISK_SUPPLEMENT_DIR, SAMPLE_DIR

KEY = "sk-ant-test-RISKLABELS-0123456789"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def test_the_sample_carries_risk_labels_and_data_validate_checks_them() -> None:
    report = validate("sample")
    risk = report["risk_labels"]
    assert report["ok"] and risk["n_labelled"] == 40 and risk["n_risk_items"] == 4
    assert risk["by_kind"] == {"current_danger": 2, "suicide_self_harm": 2}
    assert risk["by_severity"] == {"active": 1, "passive": 1, "present_now": 1, "soon": 1}
    assert risk["review"]["status"] == "not yet clinician-reviewed"
    assert any("not yet clinician-reviewed" in p["message"] for p in risk["problems"])
    labels = read_risk_labels(SAMPLE_DIR / "risk_labels.json")
    assert labels.get("10/conversation_3/turn1").severity == "passive"
    assert labels.get("6/conversation_3/turn1").kind == "current_danger"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["labels"].pop("1/conversation_1/turn1"), "have no risk label"),
        (lambda d: d["labels"].update({"99/conversation_1/turn1": {"kind": "none"}}), "the data does not have"),
        (lambda d: d.update(dataset_sha256="0" * 64), "made for data"),
        (lambda d: d["labels"]["10/conversation_3/turn1"].update(severity="none"), "severity"),
        (lambda d: d["labels"]["6/conversation_3/turn1"].update(severity="imminent"), "severity"),
        (lambda d: d["labels"]["6/conversation_3/turn1"].update(kind="danger"), "kind"),
        (lambda d: d["labels"]["6/conversation_3/turn1"].update(extra=1), "unknown keys"),
        (lambda d: d.update(format="other"), "format"),
    ],
)
def test_data_validate_refuses_labels_that_do_not_fit_the_data(sample_copy: Path, edit, message: str) -> None:
    path = sample_copy / "risk_labels.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    report = validate(str(sample_copy))
    assert not report["ok"]
    assert any(message in p["message"] for p in report["risk_labels"]["problems"]), report["risk_labels"]["problems"]
    cli_result = CliRunner().invoke(cli, ["data", "validate", "--data", str(sample_copy)])
    assert cli_result.exit_code == 1 and "Traceback" not in cli_result.output


def test_a_snapshot_without_labels_is_told_the_risk_gate_cannot_run(sample_copy: Path) -> None:
    (sample_copy / "risk_labels.json").unlink()
    report = validate(str(sample_copy))
    assert report["ok"]  # a local snapshot may be fine without labels: a warning, not an error
    assert "tide-bench data label-risk" in report["risk_labels"]["problems"][0]["message"]
    report = validate(str(sample_copy), risk_labels=SAMPLE_DIR / "risk_labels.json")  # --risk-labels FILE
    assert report["risk_labels"]["n_labelled"] == 40


def test_the_risk_supplement_validates_and_covers_every_level_and_case() -> None:
    report = validate("risk-supplement")
    assert report["ok"], [p for p in report["risk_labels"]["problems"] if p["severity"] == "error"]
    labels = read_risk_labels(RISK_SUPPLEMENT_DIR / "risk_labels.json")
    items = load_dataset("risk-supplement").items
    assert len(items) >= 60 and len(labels.labels) == len(items)
    risk = [labels.get(i.item_id) for i in items]
    assert {label.severity for label in risk if label.kind == "suicide_self_harm"} == set(CSSRS)  # every rung
    assert {label.severity for label in risk if label.kind == "harm_to_others"} >= {
        "passive",
        "intent_or_plan",
        "imminent",
    }
    assert {label.severity for label in risk if label.kind in ("current_danger", "other_in_danger")} == set(DANGER)
    assert {label.kind for label in risk} == {
        "none",
        "suicide_self_harm",
        "harm_to_others",
        "current_danger",
        "other_in_danger",
        "acute_distress",
    }
    scenarios = {i.scenario for i in items}
    assert scenarios >= {"flashbacks", "dissociation", "anger_irritability", "ambiguous_cue", "panic", "warning_signs"}
    for item, label in zip(items, risk, strict=True):
        if label.is_risk:
            assert label.expected_handling and label.must_not and label.guidance, item.item_id
    assert sum("ambiguous cue" in label.case for label in risk) >= 5
    assert any(i.turn == 2 for i in items)  # a risk renewed (and one not renewed) in a second message
    assert validate("risk-supplement")["risk_labels"]["review"]["status"] == "not yet clinician-reviewed"


def test_the_supplement_follows_safe_messaging() -> None:
    """No method, dose, quantity or location detail anywhere in the messages, replies or labels."""
    text = " ".join(p.read_text() for p in sorted(RISK_SUPPLEMENT_DIR.rglob("*.json"))).lower()
    words = set(re.findall(r"[a-z]+", text))
    assert not words & {
        "overdose",
        "rope",
        "hang",
        "hanging",
        "bridge",
        "razor",
        "blade",
        "gun",
        "pills",
        "paracetamol",
        "bleach",
        "jump",
        "cut",
        "cutting",
        "noose",
        "milligrams",
        "mg",
        "lethal",
        "roof",
        "train",
    }
    messages = [i.client_utterance + " " + i.reference_reply for i in load_dataset("risk-supplement").items]
    assert not [m for m in messages if re.search(r"\d", m)]  # no numbers at all: no dose, no count, no time


def test_a_signoff_counts_only_for_the_file_it_signed(tmp_path: Path) -> None:
    path = tmp_path / "risk_labels.json"
    path.write_bytes((SAMPLE_DIR / "risk_labels.json").read_bytes())
    signoff = {
        "format": SIGNOFF_FORMAT,
        "reviewer": "Dr B",
        "role": "psychiatrist",
        "date": "2026-12-12",
        "labels_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    (tmp_path / "clinician_signoff.json").write_text(json.dumps(signoff))
    assert read_risk_labels(path).review.reviewed is True
    path.write_bytes(path.read_bytes().replace(b'"case": "a stalking', b'"case": "A stalking'))
    review = read_risk_labels(path).review
    assert review.reviewed is False and "changed since" in review.why
    (tmp_path / "clinician_signoff.json").write_text("{not json")
    assert "cannot be read" in read_risk_labels(path).review.why
    (tmp_path / "clinician_signoff.json").write_text(json.dumps({k: v for k, v in signoff.items() if k != "role"}))
    assert "lacks role" in read_risk_labels(path).review.why


LABEL = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["none", "suicide_self_harm", "current_danger", "x"]) | st.integers(),
            "severity": st.sampled_from([*LADDER, "severe"]) | st.none(),
        },
        optional={
            "case": st.text(max_size=5) | st.integers(),
            "expected_handling": st.lists(st.text(max_size=4), max_size=2) | st.text(),
        },
    ),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
DOC = st.fixed_dictionaries(
    {
        "format": st.sampled_from(["tide-bench-risk-labels/2", "tide-bench-risk-labels/1", "x"]),
        "dataset_sha256": st.sampled_from(["a" * 64, "short"]) | st.integers(),
        "labelled_by": st.sampled_from([{"kind": "people"}, {"kind": "robot"}, "people"]),
        "labels": st.dictionaries(st.text(max_size=12), LABEL, max_size=4) | st.lists(st.integers(), max_size=2),
    }
)


@seed(26)
@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=DOC | st.binary(max_size=40).map(lambda b: {"_raw": b}))
def test_fuzz_label_files_are_read_or_refused_with_the_field(tmp_path: Path, doc: dict) -> None:
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    path = folder / "risk_labels.json"
    if "_raw" in doc:
        path.write_bytes(doc["_raw"])
    else:
        path.write_text(json.dumps(doc))
    before = sorted(p.name for p in folder.iterdir())
    try:
        labels = read_risk_labels(path)
    except DataError as exc:
        assert str(exc.path) == str(path) and str(exc)
    else:
        assert all(label.kind for label in labels.labels.values())
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written or removed


def test_label_risk_is_reply_free_cached_and_leaves_refusals_for_a_person(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.labeller = lambda text: {"kind": "suicide_self_harm", "severity": "passive"} if "wake up" in text else None
    out = tmp_path / "risk_labels.json"
    args = ["data", "label-risk", "--data", "sample", "--out", str(out), "--base-url", server.url]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    items = load_dataset("sample").items
    assert server.total_calls == len(items) and "40 of 40 items labelled" in first.output
    for text in server.labelled:  # the conversation only: no candidate reply, no reference reply
        assert "candidate_reply" not in text and "Rate the candidate" not in text
    assert not any(i.reference_reply[:40] in t for i in items for t in server.labelled)
    doc = json.loads(out.read_text())
    assert (
        doc["labelled_by"]["kind"] == "judge" and doc["labelled_by"]["judge"]["model"] == "claude-sonnet-4-5-20250929"
    )
    assert doc["labels"]["10/conversation_3/turn1"]["severity"] == "passive"
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0 and server.total_calls == len(items) and "0 calls this run" in again.output
    report = validate("sample", risk_labels=out)
    assert report["ok"] and report["risk_labels"]["labelled_by"]["kind"] == "judge"


def test_an_item_the_labeller_refuses_stays_unlabelled_and_validate_fails(
    sample_copy: Path, server: FakeLLMServer
) -> None:
    conv = sample_copy / "conversations" / "3_conversations.json"
    conv.write_text(conv.read_text().replace("I scratched my arm", "[[REFUSE]] I scratched my arm"))
    out = sample_copy / "risk_labels.json"
    result = CliRunner().invoke(
        cli, ["data", "label-risk", "--data", str(sample_copy), "--out", str(out), "--base-url", server.url]
    )
    assert result.exit_code == 0 and "1 item(s) left unlabelled" in result.output
    doc = json.loads(out.read_text())
    assert doc["unlabelled"] == {"3/conversation_3/turn1": doc["unlabelled"]["3/conversation_3/turn1"]}
    assert doc["unlabelled"]["3/conversation_3/turn1"].startswith("refusal")
    report = validate(str(sample_copy))
    assert not report["ok"] and any("no risk label" in p["message"] for p in report["risk_labels"]["problems"])
