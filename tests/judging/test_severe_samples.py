"""Severe risk items judged k times, flagged on the majority (issue 44, clinical re-check V3): the repeat
calls are distinct requests with keys of their own (cached, so a rerun resumes and never pays twice),
the dry run prices them, and ``severe_samples.jsonl`` is checked line by line. The adjudication file
and the severe-samples file are fuzzed: a clear error naming the line, or a correct result."""

from __future__ import annotations

import json
import math
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.data.risk_labels import read_risk_labels
from tide_bench.data.sources import RISK_SUPPLEMENT_DIR
from tide_bench.judging import JudgeOptions, judge_run, load_judge
from tide_bench.judging import dry_run as estimate
from tide_bench.judging.estimate import format_cost_estimate
from tide_bench.judging.rubric import load_rubric
from tide_bench.judging.severe_samples import majority, read_severe_samples, sample_key
from tide_bench.leaderboard.scoring.adjudication import read_adjudication

KEY = "sk-ant-test-SEVERESAMPLES-0123456789"
FLAG = list(load_rubric().safety_categories).index("risk_mishandled")
LABELS = read_risk_labels(RISK_SUPPLEMENT_DIR / "risk_labels.json")
SEVERE = sorted(i for i, label in LABELS.labels.items() if label.severe)
N_ITEMS = len(LABELS.labels)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _judge(server: FakeLLMServer) -> Any:
    return load_judge("claude-sonnet", base_url=server.url, overrides={"backoff_base_s": 0.01})


def _run(tmp_path: Path) -> Path:
    markers = {SEVERE[0]: f"[[FLAGFIRST:1,{FLAG}]]", SEVERE[1]: f"[[FLAG:{FLAG}]]", SEVERE[2]: "[[FLAGFIRST:2]]"}
    return make_run(
        tmp_path / "run",
        lambda i: f"Reply {markers.get(i.item_id, '')} {i.item_id}",
        split="all",
        data="risk-supplement",
    )


def test_severe_items_are_judged_k_times_and_the_majority_decides(tmp_path: Path, server: FakeLLMServer) -> None:
    run = _run(tmp_path)
    options = JudgeOptions(severe_samples=3)
    planned = estimate(run, tmp_path / "judge", _judge(server), options)
    extra = 2 * len(SEVERE)
    assert planned["n_calls"] == N_ITEMS + extra and planned["severe_samples"]["extra_calls"] == extra
    text = format_cost_estimate(planned)
    assert f"and {extra} more for the {len(SEVERE)} severe risk items judged 3 times (majority)" in text
    once = estimate(run, tmp_path / "judge", _judge(server), JudgeOptions(severe_samples=1))
    assert planned["sync"]["cost_usd"] > once["sync"]["cost_usd"] and once["n_calls"] == N_ITEMS

    result = judge_run(run, tmp_path / "judge", _judge(server), options)
    assert server.total_calls == N_ITEMS + 2 * len(SEVERE) == result.calls_made
    judgments = [json.loads(line) for line in (tmp_path / "judge" / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == N_ITEMS  # one judgment per item; the repeats are votes, not judgments
    votes = read_severe_samples(tmp_path / "judge" / "severe_samples.jsonl")
    assert sorted(votes) == SEVERE and {v.k for v in votes.values()} == {3}
    assert votes[SEVERE[0]].votes == (1.0, 0.0, 0.0) and votes[SEVERE[0]].majority == "not_flagged"  # outvoted
    assert votes[SEVERE[1]].votes == (1.0, 1.0, 1.0) and votes[SEVERE[1]].majority == "flagged"
    assert votes[SEVERE[2]].majority == "flagged"
    first = next(j for j in judgments if j["item_id"] == SEVERE[0])
    assert first["safety"]["flagged"] is True and votes[SEVERE[0]].key == first["key"]
    line = json.loads((tmp_path / "judge" / "severe_samples.jsonl").read_text().splitlines()[0])
    assert [v["key"] for v in line["votes"][1:]] == [sample_key(line["key"], s) for s in (2, 3)]

    again = judge_run(run, tmp_path / "judge", _judge(server), options)  # resumed from the cache: no call
    assert again.calls_made == 0 and server.total_calls == N_ITEMS + extra
    five = judge_run(run, tmp_path / "judge", _judge(server), JudgeOptions(severe_samples=5))
    assert five.calls_made == 2 * len(SEVERE)  # only calls 4 and 5 are new
    assert estimate(run, tmp_path / "judge", _judge(server), JudgeOptions(severe_samples=5))["n_calls"] == 0


def test_sample_keys_are_distinct_64_hex_keys() -> None:
    keys = {sample_key("a" * 64, s) for s in range(2, 16)} | {sample_key("b" * 64, 2)}
    assert len(keys) == 15 and all(re.fullmatch(r"[0-9a-f]{64}", k) for k in keys)
    with pytest.raises(ValueError):
        sample_key("a" * 64, 1)


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ((1.0, 0.0, 0.0), "not_flagged"),
        ((1.0, 1.0, 0.0), "flagged"),
        ((1.0, math.nan, 0.0), "undecided"),
        ((1.0, math.nan, math.nan), "undecided"),
        ((1.0,), "flagged"),
        ((1.0, 0.0), "undecided"),
        ((0.0, 0.0, math.nan), "not_flagged"),
    ],
)
def test_the_majority_rule(votes: tuple[float, ...], expected: str) -> None:
    assert majority(votes, len(votes)) == expected


def test_labels_for_other_data_are_refused_before_any_call(tmp_path: Path, server: FakeLLMServer) -> None:
    run = _run(tmp_path)
    labels = tmp_path / "risk_labels.json"
    labels.write_text(
        json.dumps(json.loads((RISK_SUPPLEMENT_DIR / "risk_labels.json").read_text()) | {"dataset_sha256": "f" * 64})
    )
    with pytest.raises(ConfigError) as info:
        judge_run(run, tmp_path / "judge", _judge(server), JudgeOptions(risk_labels=labels))
    assert info.value.field == "dataset_sha256" and info.value.path == str(labels)
    assert server.total_calls == 0


def _good_line(k: int = 3) -> dict[str, Any]:
    key = "c" * 64
    votes = [
        {"sample": s, "key": key if s == 1 else sample_key(key, s), "status": "scored", "flagged": s == 1}
        for s in range(1, k + 1)
    ]
    return {
        "item_id": "rs01/c1/turn1",
        "key": key,
        "k": k,
        "votes": votes,
        "majority": majority([float(s == 1) for s in range(1, k + 1)], k),
    }


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d.update(majority="flagged"), "majority"),
        (lambda d: d.update(k=2), "votes"),
        (lambda d: d["votes"][1].update(key="d" * 64), "votes[1].key"),
        (lambda d: d["votes"][2].update(sample=7), "votes[2].sample"),
        (lambda d: d["votes"][0].update(flagged="yes"), "votes[0].flagged"),
        (lambda d: d.update(k=99), "k"),
    ],
)
def test_a_malformed_severe_samples_line_names_its_field(tmp_path: Path, edit: Any, field: str) -> None:
    line = _good_line()
    edit(line)
    path = tmp_path / "severe_samples.jsonl"
    path.write_text(json.dumps(_good_line() | {"item_id": "other"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(DataError) as info:
        read_severe_samples(path)
    assert (info.value.line, info.value.field) == (2, field)


# ------------------------------------------------ fuzz: a clear error or a correct result, never a traceback

_TEXT = st.text(string.printable + "é\u2028", max_size=12)
_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 20) | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_RECORD = st.fixed_dictionaries(
    {
        "item_id": st.sampled_from(["rs01/c1/turn1", "", "x" * 301]) | _TEXT,
        "reply_sha256": st.sampled_from(["a" * 64, "A" * 64, "a" * 63]) | _TEXT,
        "verdict": st.sampled_from(["confirmed", "cleared", "Confirmed"]) | _VALUE,
        "reviewer": st.sampled_from(["Dr B", " "]) | _VALUE,
        "date": st.sampled_from(["2026-12-10", "2026-02-30", "2026-1-1"]) | _VALUE,
    },
    optional={"note": _VALUE, "extra": _VALUE},
)


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_RECORD | _VALUE, min_size=1, max_size=4), junk=st.binary(max_size=20))
def test_fuzz_the_adjudication_file(tmp_path: Path, lines: list[Any], junk: bytes) -> None:
    path = tmp_path / "adjudication.jsonl"
    raw = "".join(json.dumps(line) + "\n" for line in lines).encode()
    for content in (raw, raw + junk):
        path.write_bytes(content)
        try:
            found = read_adjudication(path)
        except DataError as exc:
            assert exc.path == str(path) and exc.line is not None and str(exc)
            continue
        for (item, digest), verdict in found.verdicts.items():
            assert re.fullmatch(r"[0-9a-f]{64}", digest) and verdict.verdict in ("confirmed", "cleared") and item
        assert len(found.verdicts) == sum(1 for line in content.splitlines() if line.strip())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adjudication.jsonl"]  # nothing else read or written


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(edits=st.lists(st.tuples(st.sampled_from(["item_id", "key", "k", "votes", "majority"]), _VALUE), max_size=3))
def test_fuzz_the_severe_samples_file(tmp_path: Path, edits: list[tuple[str, Any]]) -> None:
    line = _good_line()
    for name, value in edits:
        line[name] = value
    path = tmp_path / "severe_samples.jsonl"
    path.write_text(json.dumps(line) + "\n")
    try:
        found = read_severe_samples(path)
    except DataError as exc:
        assert exc.path == str(path) and exc.line == 1 and exc.field
        return
    (votes,) = found.values()
    assert votes.majority == majority(votes.votes, votes.k)
