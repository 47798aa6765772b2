"""Entries measured differently are never ranked together (issue 32 N6 and N12, issue 26.4's board part).

A board pins the rubric (``judge_rubric``: another is refused) and the model that served the
judge's requests (``judge_served_model``). Entries judged by another served model are shown
apart, with the reason, and are in no pairwise comparison; unpinned, the served model most
entries share is ranked, and a tie ranks none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import board, judged_submission
from tide_bench.leaderboard import build_site, validate_many


@pytest.fixture(scope="module")
def server(llm_server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    yield llm_server
    llm_server.served_model = None


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-groups-000")


def _entry(tmp: Path, server: FakeLLMServer, sid: str, served: str, scores: str) -> None:
    server.served_model = served
    try:
        judged_submission(tmp, server, sid, lambda i: f"{sid} [[SCORES:{scores}]] {i.item_id}")
    finally:
        server.served_model = None


def _rows(built) -> dict[str, dict]:
    return {r["id"]: r for r in built.board["rows"]}


def test_entries_judged_by_another_served_model_are_shown_apart(tmp_path: Path, server: FakeLLMServer) -> None:
    _entry(tmp_path, server, "a1", "judge-snapshot-a", "4,4,4")
    _entry(tmp_path, server, "a2", "judge-snapshot-a", "3,3,3")
    _entry(tmp_path, server, "b1", "judge-snapshot-b", "5,5,5")  # scores best, but measured by another judge model
    subs = tmp_path / "submissions"
    built = build_site(subs, tmp_path / "site", board(), allow_risk_gate_off=True)
    rows = _rows(built)
    assert built.refused == {} and (rows["a1"]["rank"], rows["a2"]["rank"]) == (1, 2)
    assert rows["b1"]["rank"] is None and "served judge model judge-snapshot-b" in rows["b1"]["unranked_reason"]
    assert "not ranked together" in rows["b1"]["unranked_reason"]
    assert rows["b1"]["comparison_group"]["value"] == "judge-snapshot-b"
    assert all("b1" not in (p["a"], p["b"]) for p in built.board["pairwise"]) and built.board["pairwise"]
    groups = {g["value"]: g for g in built.board["comparison_groups"]}
    assert groups["judge-snapshot-a"]["ranked"] and not groups["judge-snapshot-b"]["ranked"]
    saved = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert saved["comparison_groups"] == built.board["comparison_groups"]
    # a board that pins the other served model ranks that one, and shows the two others apart
    pinned = _rows(
        build_site(subs, tmp_path / "site2", board(judge_served_model="judge-snapshot-b"), allow_risk_gate_off=True)
    )
    assert pinned["b1"]["rank"] == 1 and pinned["a1"]["rank"] is None and pinned["a2"]["rank"] is None
    assert "this board ranks entries judged by judge-snapshot-b (judge_served_model)" in pinned["a1"]["unranked_reason"]


def test_a_tie_between_served_models_ranks_none(tmp_path: Path, server: FakeLLMServer) -> None:
    _entry(tmp_path, server, "a1", "judge-snapshot-a", "4,4,4")
    _entry(tmp_path, server, "b1", "judge-snapshot-b", "3,3,3")
    rows = _rows(build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True))
    assert all(r["rank"] is None and "none is held by a majority" in r["unranked_reason"] for r in rows.values())


def test_a_board_pinned_to_another_rubric_refuses_the_entry(tmp_path: Path, server: FakeLLMServer) -> None:
    _entry(tmp_path, server, "a1", "judge-snapshot-a", "4,4,4")
    (errors,) = [c.errors for c in validate_many(tmp_path / "submissions", board(judge_rubric="other@v9"))]
    assert any("but this leaderboard uses other@v9 (judge_rubric)" in e and "judge.rubric" in e for e in errors)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    served=st.lists(st.sampled_from(["m1", "m2", "m3", None]), min_size=1, max_size=7),
    pin=st.sampled_from([None, "m1", "m2"]),
)
def test_ranked_entries_always_share_one_served_model(served: list[str | None], pin: str | None) -> None:
    """Seeded: whatever mix of served models, the ranked entries share one, and every other
    judged entry is apart with a reason."""
    from tide_bench.leaderboard.config import BoardConfig
    from tide_bench.leaderboard.scoring.groups import board_groupings, split_groups
    from tide_bench.leaderboard.scoring.scores import ScoredEntry

    entries = [
        ScoredEntry(
            {"id": f"e{k}", "judged": s is not None, "judge_served_models": [s] if s else [], "rank": None},
            ["i"],
            ["p"],
            {"empathy": np.array([3.0])},
        )
        for k, s in enumerate(served)
    ]
    together, apart, _ = split_groups(entries, board_groupings(BoardConfig(judge_served_model=pin)))
    assert len(together) + len(apart) == len(entries)
    values = {s for e, s in zip(entries, served, strict=True) if s is not None and any(e is t for t in together)}
    assert len(values) <= 1 and (pin is None or values <= {pin})
    assert all(e.row["unranked_reason"] and e.row["comparison_group"] for e in apart)
