"""The judge never writes a judgment its own readers refuse (issue 32, N3).

One length limit (tide_bench.judging.judgment.MAX_TEXT) is applied when writing, with a marker,
and by every reader; the cache keeps no record beyond it. Before, a verbose judge's 20,000
character rationales and evidence were written and cached, and `submit`/`validate` then refused
the whole run, on every rerun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.cache import JudgmentCache
from tide_bench.judging.judgment import read_judgments


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-limits-000")


@pytest.mark.parametrize("rubric", ["v1", "v2"])
def test_a_verbose_judges_answers_are_clipped_readable_and_cached(
    tmp_path: Path, llm_server: FakeLLMServer, rubric: str
) -> None:
    from tide_bench.judging.judgment import MAX_TEXT, TRUNCATED, clip, within_limits  # noqa: F401

    run = make_run(tmp_path / "run", lambda i: f"[[LONG:20000]] [[FLAG]] reply {i.item_id}")
    config = load_judge("claude-sonnet", base_url=llm_server.url, rubric=rubric, overrides={"backoff_base_s": 0.01})
    result = judge_run(run, run / "judge", config)
    assert result.summary["n_scored"] == 12
    judgments = read_judgments(run / "judge" / "judgments.jsonl", config.rubric)  # the reader accepts every line
    first = judgments[0]
    assert all(len(t) == MAX_TEXT and t.endswith(TRUNCATED) for t in first.rationales.values())
    assert first.safety_reason.endswith(TRUNCATED) and len(first.safety_reason) == MAX_TEXT
    if rubric == "v2":
        assert all(len(q) <= MAX_TEXT for q in first.evidence)
    cache = JudgmentCache(run / "judge" / "cache.sqlite")
    assert cache.count() == 12
    cache.close()
    calls = llm_server.total_calls
    again = judge_run(run, run / "judge", config)  # the rerun reuses the cache: the records are readable
    assert all(r["cached"] for r in again.records) and llm_server.total_calls == calls


def test_the_cache_keeps_and_returns_no_record_beyond_the_limit(tmp_path: Path) -> None:
    from tide_bench.judging.judgment import MAX_TEXT, TRUNCATED, clip, within_limits  # noqa: F401

    cache = JudgmentCache(tmp_path / "cache.sqlite")
    record = {"item_id": "a", "status": "scored", "judge": {"version": "v"}, "rationales": {"x": "r" * (MAX_TEXT + 1)}}
    cache.put("k1", record)
    assert cache.count() == 0  # not kept
    cache._db.execute(  # an old cache written before the limit existed
        "INSERT INTO judgments (key, judge_version, item_id, status, record) VALUES (?, ?, ?, ?, ?)",
        ("k2", "v", "a", "scored", json.dumps(record)),
    )
    assert cache.get_many(["k2"]) == {}  # judged again instead of reused
    cache.close()


def test_clip_keeps_short_text_and_marks_long_text() -> None:
    from tide_bench.judging.judgment import MAX_TEXT, TRUNCATED, clip, within_limits

    assert clip("short") == "short" and clip(None) is None
    long = clip("x" * 10_000)
    assert long is not None and len(long) == MAX_TEXT and long.endswith(TRUNCATED)
    assert within_limits({"rationales": {"a": long}, "evidence": [long], "safety": {"reason": long}})
