"""The judge against a fake API server on 127.0.0.1, through the real SDKs over HTTP.

Counts are taken from the built-in sample (not typed in), so these tests hold whatever shape
the sample has.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.llm_server import ALT_MODEL, FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.data import load_dataset
from tide_bench.generation.run_dir import load_run
from tide_bench.judging import JudgeOptions, judge_run, load_judge
from tide_bench.judging.cache import JudgmentCache
from tide_bench.judging.estimate import estimate_tokens
from tide_bench.judging.plan import make_plan
from tide_bench.judging.progress import Progress
from tide_bench.judging.retry import FatalJudgeError

KEY = "sk-ant-test-SECRET-0123456789"
FAST = {"timeout_s": 2.0, "backoff_base_s": 0.01, "backoff_cap_s": 0.05, "concurrency": 4}
ITEMS = load_dataset("sample").items_for("test")
N = len(ITEMS)
FIRST_HALF = {i.item_id for i in ITEMS[: N // 2]}


SERVER_OPTIONS = {"hang_s": 5.0}  # for conftest's `server` fixture


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("TIDE_BENCH_JUDGE_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


SONNET = "claude-sonnet-4-5-20250929"  # the dated snapshot judges/claude-sonnet pins
UNPRICED = "claude-sonnet-4-5-20991231"  # a snapshot judges/prices.yaml has no row for


def claude(server: FakeLLMServer, **kw):
    return load_judge("claude-sonnet", base_url=server.url, overrides=FAST | kw)


def gpt(server: FakeLLMServer, **kw):
    return load_judge("openai-gpt", base_url=server.url + "/v1", overrides=FAST | kw)


def local(server: FakeLLMServer, **kw):
    """An OpenAI-compatible server, through the lean aiohttp path (not the SDK)."""
    return load_judge("local", model="fake-local-judge", base_url=server.url + "/v1", overrides=FAST | kw)


JUDGES = {"claude": claude, "local": local}


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _assert_no_secret(root: Path, *texts: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"key leaked into {path}"
    for text in texts:
        assert KEY not in text


def one_item_run(root: Path, reply: str) -> Path:
    return make_run(root, reply, items=ITEMS[:1])


def test_sync_judging_scores_every_item_and_records_everything(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run")
    result = judge_run(run, tmp_path / "judge", claude(server))
    records = _lines(tmp_path / "judge" / "judgments.jsonl")
    assert len(records) == N and server.total_calls == N
    rec = records[0]
    assert rec["status"] == "scored" and set(rec["scores"]) == {
        "emotion_recognition",
        "distress_normalization",
        "supportive_reflection",
    }
    assert all(1 <= s <= 5 for s in rec["scores"].values()) and rec["rationales"]["emotion_recognition"]
    assert rec["judge"]["model"] == SONNET and len(rec["judge"]["version"]) == 16
    assert rec["served_model"] == SONNET and rec["attempts"] == 1
    assert rec["usage"]["calls"] == 1 and rec["usage"]["cache_read_tokens"] > 0  # the system block is sent cacheable
    s = result.summary
    assert (s["n_items"], s["n_scored"], s["n_unscored"]) == (N, N, 0)
    assert s["empathy"]["n"] == N and s["empathy"]["ci_low"] <= s["empathy"]["mean"] <= s["empathy"]["ci_high"]
    assert set(s["by_turn"]) == {str(i.turn) for i in ITEMS} and s["cost_usd"]["this_run"] > 0
    assert s["served_models"] == {SONNET: N} and result.warnings == []
    assert s["served_model"] == SONNET  # one served model, named for comparison across runs and boards
    assert all(c == f"Bearer {KEY}" or c == KEY for c in server.credentials)
    _assert_no_secret(tmp_path)


def test_rerun_makes_no_calls_and_reuses_the_cache(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run")
    judge_run(run, tmp_path / "judge", claude(server))
    again = judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == N and again.calls_made == 0
    assert all(r["cached"] for r in again.records)


def test_changed_reply_or_judge_config_is_a_new_key(tmp_path: Path, server: FakeLLMServer) -> None:
    judge_run(make_run(tmp_path / "run"), tmp_path / "judge", claude(server))
    shared = JudgeOptions(cache_path=tmp_path / "judge" / "cache.sqlite")
    judge_run(make_run(tmp_path / "run2", "A different reply."), tmp_path / "judge2", claude(server), shared)
    assert server.total_calls == 2 * N
    judge_run(
        tmp_path / "run", tmp_path / "judge3", claude(server, reference=True), shared
    )  # reference shown: another version
    assert server.total_calls == 3 * N


FAILURES = {
    # case: (reply, status, unscored kind, calls made, attempts recorded)
    "retry-429": ("Reply [[429:2]]", "scored", None, 3, 3),
    "retry-529": ("Reply [[529:1]]", "scored", None, 2, 2),
    "retry-500": ("Reply [[500:1]]", "scored", None, 2, 2),
    "retry-timeout": ("Reply [[TIMEOUT:1]]", "scored", None, 2, 2),
    "malformed": ("Reply [[MALFORMED]]", "unscored", "schema_violation", 3, 3),
    "malformed-once": ("Reply [[MALFORMED:1]]", "scored", None, 2, 2),
    "out-of-range": ("Reply [[RANGE]]", "unscored", "schema_violation", 3, 3),
    "refusal": ("Reply [[REFUSE]]", "unscored", "refusal", 1, 1),
    "no-tool-call": ("Reply [[NOTOOL]]", "unscored", "malformed_output", 3, 3),
    "rejected": ("Reply [[ECHOAUTH]]", "unscored", "api_rejected", 1, 1),
    "overloaded-forever": ("Reply [[529:99]]", "unscored", "transient_failure", 4, 4),
    "html-page": ("Reply [[HTML]]", "unscored", "api_rejected", 1, 1),
}


@pytest.mark.parametrize("judge", sorted(JUDGES))
@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failures_are_retried_or_recorded_as_unscored(
    tmp_path: Path, server: FakeLLMServer, case: str, judge: str
) -> None:
    reply, status, kind, calls, attempts = FAILURES[case]
    run = one_item_run(tmp_path / "run", reply)
    config = JUDGES[judge](server, max_retries=3, timeout_s=1.0)
    result = judge_run(run, tmp_path / "judge", config)
    (rec,) = result.records
    assert rec["status"] == status and rec["unscored_kind"] == kind
    assert server.calls_for(reply) == calls
    assert rec["attempts"] == attempts  # every request counted, the failed ones too
    if kind:
        assert rec["scores"] is None and rec["unscored_reason"]
        assert result.summary["unscored_reasons"] == {kind: 1} and result.summary["n_unscored"] == 1
    _assert_no_secret(tmp_path, json.dumps(result.records))
    cached = JudgmentCache(tmp_path / "judge" / "cache.sqlite")
    assert cached.count() == (
        0 if kind in ("api_rejected", "transient_failure") else 1
    )  # a failed call is never cached as a score
    cached.close()


def test_retry_unscored_calls_again(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", lambda i: "Reply [[REFUSE]]" if i.item_id in FIRST_HALF else "Fine reply.")
    judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == N
    judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == N
    judge_run(run, tmp_path / "judge", claude(server), JudgeOptions(retry_unscored=True))
    assert server.total_calls == N + len(FIRST_HALF)  # only the refused items


def test_openai_structured_output(tmp_path: Path, server: FakeLLMServer) -> None:
    replies = {0: "Plain [[SCORES:5,4,3]]", 1: "Filtered [[FILTER]]", 2: "Refused [[REFUSE]]", 3: "Not json [[NOTOOL]]"}
    items = ITEMS[:4]
    run = make_run(tmp_path / "run", lambda i: replies[items.index(i)], items=items)
    result = judge_run(run, tmp_path / "judge", gpt(server))
    by_reply = {r["item_id"]: r for r in result.records}
    first = by_reply[items[0].item_id]
    assert first["scores"] == {"emotion_recognition": 5, "distress_normalization": 4, "supportive_reflection": 3}
    assert first["served_model"] == "gpt-4.1-2025-04-14"
    assert by_reply[items[1].item_id]["unscored_kind"] == "content_filtered"
    assert by_reply[items[2].item_id]["unscored_kind"] == "refusal"
    assert by_reply[items[3].item_id]["unscored_kind"] == "malformed_output"
    _assert_no_secret(tmp_path)


def test_local_openai_compatible_judge_needs_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = FakeLLMServer().start()
    try:
        monkeypatch.delenv("TIDE_BENCH_JUDGE_API_KEY", raising=False)
        config = load_judge("local", model="my-local-model", base_url=srv.url + "/v1", overrides=FAST)
        result = judge_run(make_run(tmp_path / "run"), tmp_path / "judge", config)
        assert result.summary["n_scored"] == N and srv.credentials[-1] == "Bearer EMPTY"
        assert result.summary["cost_usd"]["this_run"] == 0.0
    finally:
        srv.stop()


def test_unreachable_base_url_fails_before_work(tmp_path: Path) -> None:
    config = load_judge("local", model="m", base_url="http://127.0.0.1:9/v1", overrides=FAST)
    with pytest.raises(FatalJudgeError, match="cannot reach the judge API"):
        judge_run(make_run(tmp_path / "run"), tmp_path / "judge", config)
    assert not (tmp_path / "judge" / "judgments.jsonl").exists()


def test_missing_key_is_refused_before_any_work(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = CliRunner().invoke(
        cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "judge"), "--base-url", server.url]
    )
    assert result.exit_code == 2 and "ANTHROPIC_API_KEY" in result.output
    assert server.total_calls == 0 and not (tmp_path / "judge").exists()


@pytest.mark.parametrize("judge", ["claude-sonnet", "local"])
def test_rejected_key_stops_the_run_without_leaking_it(tmp_path: Path, judge: str) -> None:
    srv = FakeLLMServer(api_key="the-right-key-000").start()
    try:
        where = ["--base-url", srv.url] if judge == "claude-sonnet" else ["--base-url", srv.url + "/v1", "--model", "m"]
        result = CliRunner().invoke(
            cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "judge"), "--judge", judge, *where]
        )
        assert result.exit_code == 2 and "rejected the credentials" in result.output
        _assert_no_secret(tmp_path, result.output)
        assert not (tmp_path / "judge" / "judgments.jsonl").exists()
    finally:
        srv.stop()


# ------------------------------------------------------------------ budget (issue 12 item 3)


def test_max_cost_stops_cleanly(tmp_path: Path, server: FakeLLMServer) -> None:
    config = claude(server, concurrency=1)
    run = make_run(tmp_path / "b", "Another reply.")
    # room for the first call's upper bound and a little more: the spend check stops before the budget
    budget = 1.5 * make_plan(load_run(run), config, None, False).estimate(config).per_call_cost()
    result = judge_run(run, tmp_path / "jb", config, JudgeOptions(max_cost=budget))
    s = result.summary
    assert 0 < s["cost_usd"]["this_run"] <= budget
    assert s["unscored_reasons"].get("budget_exhausted", 0) >= 1 and s["n_scored"] + s["n_unscored"] == N


def test_max_cost_without_a_price_is_refused_not_ignored(tmp_path: Path, server: FakeLLMServer) -> None:
    snapshot = load_judge("claude-sonnet", model=UNPRICED, base_url=server.url, overrides=FAST)
    assert snapshot.prices is None
    with pytest.raises(ConfigError, match="cannot be enforced") as info:
        judge_run(make_run(tmp_path / "run"), tmp_path / "j", snapshot, JudgeOptions(max_cost=0.01))
    assert "--price-in" in str(info.value) and "claude-sonnet-4-5" in str(info.value)
    assert server.total_calls == 0 and not (tmp_path / "j").exists()
    args = [
        "judge",
        str(tmp_path / "run"),
        "--out",
        str(tmp_path / "j"),
        "--base-url",
        server.url,
        "--model",
        UNPRICED,
    ]
    refused = CliRunner().invoke(cli, [*args, "--max-cost", "0.01"])
    assert refused.exit_code == 2 and "cannot be enforced" in refused.output and "Traceback" not in refused.output
    priced = CliRunner().invoke(
        cli, [*args, "--max-cost", "0.1", "--price-in", "3", "--price-out", "15"]
    )  # v3: ~$0.03 a call
    assert priced.exit_code == 3, priced.output  # stopped by the budget: a distinct exit status
    assert "budget_exhausted: " in priced.output and '{"budget_exhausted"' not in priced.output
    assert 0 < server.total_calls < N


def test_budget_counts_calls_whose_answer_has_no_usage(tmp_path: Path, server: FakeLLMServer) -> None:
    no_usage = {
        "id": "x",
        "object": "chat.completion",
        "model": "gpt-4.1",
        "usage": None,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": json.dumps(
                        {
                            "risk_cue": {"present": False, "kind": "none", "severity": "none"},
                            "evidence": [],
                            "judge_directed_text": False,
                            "over_escalation": False,
                            "safety": {"category": "none", "reason": "", "flagged": False},
                        }
                        | {
                            f: {"rationale": "ok", "score": 4}
                            for f in ("emotion_recognition", "distress_normalization", "supportive_reflection")
                        }
                    ),
                },
            }
        ],
    }
    marker = server.script(no_usage)
    run = make_run(tmp_path / "run", lambda i: f"{marker} {i.item_id}")
    config = gpt(server, concurrency=1)
    per_call = (
        make_plan(load_run(run), config, None, False).estimate(config).per_call_cost()
    )  # what a call without usage is charged
    result = judge_run(run, tmp_path / "j", config, JudgeOptions(max_cost=per_call * 2.5))
    s = result.summary
    assert s["n_scored"] >= 1 and s["unscored_reasons"].get("budget_exhausted", 0) >= 1  # null usage is not free
    assert s["n_scored"] + s["n_unscored"] == N


# ------------------------------------------------------------------ dry run (issue 12 item 7, issue 15 item 7)


def test_dry_run_calls_nothing_and_needs_no_key(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = CliRunner().invoke(
        cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "j"), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"calls to make: {N}" in result.output and "batch (Message Batches)" in result.output and "$" in result.output
    )
    assert "estimate" in result.output and "rating tool/schema" in result.output
    probes = CliRunner().invoke(cli, ["judge", "--probes", "--out", str(tmp_path / "p"), "--dry-run"])
    assert probes.exit_code == 0 and "calls to make:" in probes.output
    assert server.total_calls == 0


def test_dry_run_counts_the_tool_definition(tmp_path: Path, server: FakeLLMServer) -> None:
    from tide_bench.judging import dry_run

    run = make_run(tmp_path / "run")
    est = dry_run(run, tmp_path / "j", claude(server), JudgeOptions())
    per_call = est["tokens_per_call"]
    assert per_call["tool_definition"] > 100  # the rating schema is sent with every call
    no_cache = est["sync_without_caching"]["usage"]["input_tokens"]
    assert no_cache == N * (per_call["system"] + per_call["tool_definition"]) + sum(
        estimate_tokens(t) for t in _user_texts(run, server)
    )
    share = per_call["tool_definition"] / (per_call["system"] + per_call["tool_definition"] + per_call["item"])
    assert 0.04 < share < 0.4  # rubric v4's long system block: about a twelfth of each call's input


def _user_texts(run: Path, server: FakeLLMServer) -> list[str]:
    from tide_bench.generation import load_run
    from tide_bench.judging.given_labels import with_item_labels
    from tide_bench.judging.prompt import user_text

    loaded = load_run(run)
    config = with_item_labels(claude(server), loaded, None)  # the sample's labels, as a judge run shows them
    return [user_text(config, g) for g in loaded.generations]


# ------------------------------------------------------------------ batches (issue 12 item 4)


def test_batch_mode_resubmits_only_failures(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(
        tmp_path / "run", lambda i: "Batch err [[BATCHERR:1]]" if i.item_id in FIRST_HALF else f"Fine {i.item_id}"
    )
    result = judge_run(run, tmp_path / "judge", claude(server), JudgeOptions(mode="batch", poll_interval_s=0.01))
    assert result.summary["n_scored"] == N and {r["mode"] for r in result.records} == {"batch"}
    assert server.batches_created == 2
    second = server.batches["msgbatch_0002"]["requests"]
    assert len(second) == len(FIRST_HALF) and all("Batch err" in r["params"]["messages"][0]["content"] for r in second)
    state = json.loads((tmp_path / "judge" / "batch_state.json").read_text())
    version = result.records[0]["judge"]["version"]
    assert [b["id"] for b in state["jobs"][version]] == ["msgbatch_0001", "msgbatch_0002"]
    cost = result.summary["cost_usd"]["this_run"]
    sync_cost = judge_run(
        make_run(tmp_path / "run2", lambda i: f"Fine {i.item_id}"), tmp_path / "j2", claude(server)
    ).summary["cost_usd"]["this_run"]
    assert cost < sync_cost  # half price, despite the resubmitted items


class _Interrupted(Exception):
    pass


def _stop_after_submission(text: str) -> None:
    if text.startswith("submitted batch"):
        raise _Interrupted(text)


def test_a_paid_batch_is_never_forgotten_when_the_config_changes(tmp_path: Path, server: FakeLLMServer) -> None:
    run, out = make_run(tmp_path / "run"), tmp_path / "judge"
    config_a, config_b = claude(server), claude(server, reference=True)
    with pytest.raises(_Interrupted):
        judge_run(run, out, config_a, JudgeOptions(mode="batch", poll_interval_s=0.01, on_event=_stop_after_submission))
    for options in (JudgeOptions(mode="batch", poll_interval_s=0.01), JudgeOptions(mode="sync")):
        with pytest.raises(ConfigError, match="uncollected, paid Message Batch: msgbatch_0001") as info:
            judge_run(run, out, config_b, options)
        assert "--abandon-batch" in str(info.value)
    with pytest.raises(ConfigError, match="--mode batch"):
        judge_run(run, out, config_a)  # the same configuration in sync mode would pay twice
    state = json.loads((out / "batch_state.json").read_text())
    assert [b["id"] for b in state["jobs"][config_a.version]] == ["msgbatch_0001"]
    resumed = judge_run(run, out, config_a, JudgeOptions(mode="batch", poll_interval_s=0.01))
    assert resumed.summary["n_scored"] == N and server.batches_created == 1  # collected, not resubmitted


def test_abandon_batch_gives_up_deliberately_and_keeps_the_record(tmp_path: Path, server: FakeLLMServer) -> None:
    run, out = make_run(tmp_path / "run"), tmp_path / "judge"
    config_a, config_b = claude(server), claude(server, reference=True)
    with pytest.raises(_Interrupted):
        judge_run(run, out, config_a, JudgeOptions(mode="batch", poll_interval_s=0.01, on_event=_stop_after_submission))
    result = judge_run(run, out, config_b, JudgeOptions(abandon_batch=True))
    assert result.summary["n_scored"] == N and any("msgbatch_0001" in w for w in result.warnings)
    state = json.loads((out / "batch_state.json").read_text())
    (entry,) = state["jobs"][config_a.version]
    assert entry["id"] == "msgbatch_0001" and entry["abandoned_at"]


def test_batch_state_of_schema_1_is_read(tmp_path: Path, server: FakeLLMServer) -> None:
    out = tmp_path / "judge"
    out.mkdir()
    (out / "batch_state.json").write_text(
        json.dumps(
            {
                "judge_version": "0123456789abcdef",
                "batches": [{"id": "msgbatch_old", "keys": ["k"], "submitted_at": "2026-01-01T00:00:00+00:00"}],
            }
        )
    )
    with pytest.raises(ConfigError, match="msgbatch_old"):
        judge_run(make_run(tmp_path / "run"), out, claude(server))


# ------------------------------------------------------------------ provenance (issue 12 items 5 and 7)


def test_out_holding_another_run_or_config_is_refused_unless_overwrite(tmp_path: Path, server: FakeLLMServer) -> None:
    out = tmp_path / "judge"
    judge_run(make_run(tmp_path / "a", "Reply A."), out, claude(server))
    before = (out / "judgments.jsonl").read_bytes()
    with pytest.raises(ConfigError, match="another run"):
        judge_run(make_run(tmp_path / "b", "Reply B."), out, claude(server))
    with pytest.raises(ConfigError, match="another judge configuration"):
        judge_run(tmp_path / "a", out, claude(server, reference=True))
    assert (out / "judgments.jsonl").read_bytes() == before
    cli_refused = CliRunner().invoke(cli, ["judge", str(tmp_path / "b"), "--out", str(out), "--base-url", server.url])
    assert cli_refused.exit_code == 2 and "--overwrite" in cli_refused.output
    replaced = judge_run(tmp_path / "b", out, claude(server), JudgeOptions(overwrite=True))
    assert replaced.summary["run"]["folder"] == str(tmp_path / "b")


def test_summary_records_the_run_folder_and_run_json_hash(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run")
    summary = judge_run(run, tmp_path / "j", claude(server)).summary
    assert summary["run"]["folder"] == str(run)
    assert summary["run"]["run_json_sha256"] == sha256_file(run / "run.json")
    on_disk = json.loads((tmp_path / "j" / "judge_summary.json").read_text())
    assert on_disk["run"]["run_json_sha256"] == summary["run"]["run_json_sha256"]


def test_served_model_is_recorded_and_a_different_one_warned(tmp_path: Path, server: FakeLLMServer) -> None:
    server.served_model = SONNET  # the pinned snapshot answered: recorded, no warning
    result = judge_run(make_run(tmp_path / "run"), tmp_path / "j", claude(server))
    assert {r["served_model"] for r in result.records} == {"claude-sonnet-4-5-20250929"} and result.warnings == []
    server.served_model = None
    mixed = make_run(
        tmp_path / "mixed", lambda i: f"[[ALTMODEL]] {i.item_id}" if i.item_id in FIRST_HALF else f"Fine {i.item_id}"
    )
    result = judge_run(mixed, tmp_path / "jm", claude(server))
    assert result.summary["served_models"] == {SONNET: N - len(FIRST_HALF), ALT_MODEL: len(FIRST_HALF)}
    assert result.summary["served_model"] is None  # several answered: none can stand for the run
    assert any("2 different models" in w for w in result.warnings) and any(ALT_MODEL in w for w in result.warnings)
    again = judge_run(mixed, tmp_path / "jm", claude(server))  # the cache remembers who answered
    assert (
        again.calls_made == 0 and again.summary["served_models"] == result.summary["served_models"] and again.warnings
    )
    shown = CliRunner().invoke(cli, ["judge", str(mixed), "--out", str(tmp_path / "jm"), "--base-url", server.url])
    assert shown.exit_code == 0 and "warning: these judgments were served by 2 different models" in shown.output


def test_config_snapshot_records_the_endpoint_from_the_environment(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    judge_run(make_run(tmp_path / "run"), tmp_path / "j", load_judge("claude-sonnet", overrides=FAST))
    snapshot = json.loads((tmp_path / "j" / "judge_config.json").read_text())
    assert snapshot["base_url"].rstrip("/") == server.url


def test_rerun_prints_the_total_spent_so_far(tmp_path: Path, server: FakeLLMServer) -> None:
    args = ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "j"), "--base-url", server.url]
    CliRunner().invoke(cli, args)
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0 and "cost this run: $0.0000" in again.output
    total = json.loads((tmp_path / "j" / "judge_summary.json").read_text())["cost_usd"]["all_judgments"]
    assert total > 0 and f"total spent on these judgments: ${total:.4f}" in again.output


# ------------------------------------------------------------------ resume and probes


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tide_bench.cli.main", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.02)


def test_kill_9_mid_run_loses_nothing_and_rerun_makes_exactly_the_missing_calls(tmp_path: Path) -> None:
    srv = FakeLLMServer(latency=0.3).start()
    try:
        run = make_run(tmp_path / "run")
        cfg = tmp_path / "judge.yaml"
        judges = Path(__file__).parents[2] / "judges"
        cfg.write_text(
            (judges / "claude-sonnet" / "config.yaml")
            .read_text()
            .replace("../", f"{judges}/")
            .replace("concurrency: 16", "concurrency: 2")
        )
        args = ["judge", str(run), "--out", str(tmp_path / "judge"), "--judge", str(cfg), "--base-url", srv.url]
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        _wait_for(lambda: srv.total_calls >= N // 2)
        time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        cache = JudgmentCache(tmp_path / "judge" / "cache.sqlite")
        done = cache.count()
        cache.close()
        assert 1 <= done < N
        assert not (tmp_path / "judge" / "judgments.jsonl").exists()  # nothing that looks complete
        before = srv.total_calls
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        assert srv.total_calls - before == N - done  # exactly the missing calls
        assert len(_lines(tmp_path / "judge" / "judgments.jsonl")) == N
        _assert_no_secret(tmp_path, out)
    finally:
        srv.stop()


def test_interrupted_batch_is_resumed_not_resubmitted(tmp_path: Path) -> None:
    srv = FakeLLMServer(polls_before_end=10**9).start()
    try:
        run = make_run(tmp_path / "run")
        args = [
            "judge",
            str(run),
            "--out",
            str(tmp_path / "judge"),
            "--base-url",
            srv.url,
            "--mode",
            "batch",
            "--poll-interval",
            "0.05",
        ]
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        _wait_for(
            lambda: (
                (tmp_path / "judge" / "batch_state.json").exists()
                and srv.batches
                and next(iter(srv.batches.values()))["polls"] >= 2
            )
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        state = json.loads((tmp_path / "judge" / "batch_state.json").read_text())
        assert [b["id"] for entries in state["jobs"].values() for b in entries] == ["msgbatch_0001"]
        srv.polls_before_end = 0
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        assert srv.batches_created == 1 and "resuming batch msgbatch_0001" in out
        assert len(_lines(tmp_path / "judge" / "judgments.jsonl")) == N
    finally:
        srv.stop()


def test_self_preference_is_flagged(tmp_path: Path, server: FakeLLMServer) -> None:
    result = judge_run(
        make_run(tmp_path / "run", model_name="anthropic/claude-3-haiku"), tmp_path / "j", claude(server)
    )
    assert result.summary["self_preference"]["risk"] is True
    other = judge_run(
        make_run(tmp_path / "run2", model_name="Qwen/Qwen2.5-0.5B-Instruct"), tmp_path / "j2", claude(server)
    )
    assert other.summary["self_preference"]["risk"] is False


def test_bad_inputs(tmp_path: Path, server: FakeLLMServer) -> None:
    with pytest.raises(DataError, match=r"no run\.json"):
        judge_run(tmp_path, tmp_path / "j", claude(server))
    run = make_run(tmp_path / "run")
    manifest = json.loads((run / "run.json").read_text())
    samples = run / next(iter(manifest["files"]["samples"].values()))
    lines = samples.read_text().splitlines()
    lines[0] = "{not json"
    samples.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r":1: invalid JSON"):
        judge_run(run, tmp_path / "j", claude(server))
    other = make_run(tmp_path / "other")
    m = json.loads((other / "run.json").read_text())
    m["files"]["samples"] = {"arc_easy": next(iter(m["files"]["samples"].values()))}
    (other / "run.json").write_text(json.dumps(m))
    with pytest.raises(DataError, match="not a tide-bench task"):
        judge_run(other, tmp_path / "j", claude(server))
    with pytest.raises(ConfigError, match="unknown judge 'nope'"):
        load_judge("nope")
    with pytest.raises(ConfigError, match="needs a server URL"):
        load_judge("local", model="x")


def test_empty_reply_is_unscored_without_a_call(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", lambda i: "" if i.item_id in FIRST_HALF else "A reply.")
    result = judge_run(run, tmp_path / "j", claude(server))
    assert result.summary["unscored_reasons"] == {"empty_reply": len(FIRST_HALF)} and server.total_calls == N - len(
        FIRST_HALF
    )


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("TIDE_BENCH_LIVE_ANTHROPIC_KEY"), reason="opt-in live test: set TIDE_BENCH_LIVE_ANTHROPIC_KEY"
)
def test_live_anthropic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", os.environ["TIDE_BENCH_LIVE_ANTHROPIC_KEY"])
    result = judge_run(make_run(tmp_path / "run", items=ITEMS[:2]), tmp_path / "j", load_judge("claude-sonnet"))
    assert result.summary["n_scored"] == 2


def test_progress_shows_each_retry_as_it_starts(tmp_path: Path, server: FakeLLMServer) -> None:
    run = one_item_run(tmp_path / "run", "Reply [[429:2]]")
    seen: list[Progress] = []
    judge_run(run, tmp_path / "judge", claude(server, max_retries=3), JudgeOptions(on_progress=seen.append))
    before_done = [p.retries for p in seen if p.done == 0 and p.retries]
    assert before_done == [1, 2]  # each retry shown while the item is still in flight, not after it
    assert "429" in next(p.last_retry for p in seen if p.retries)
    assert (seen[-1].done, seen[-1].total, seen[-1].retries) == (1, 1, 2)


def test_ctrl_c_says_how_many_judgments_are_saved_and_the_rerun_says_how_many_come_from_the_cache(
    tmp_path: Path,
) -> None:
    """U11 (new-user round 3): Ctrl-C printed only "Aborted!", and the resumed run's bar started at
    0 without a word on the items taken from the cache."""
    import re
    import sqlite3

    from tests.fakes.llm_server import FakeLLMServer
    from tests.helpers import make_run

    run = make_run(tmp_path / "run", lambda item: f"Reply to {item.item_id}")
    # after three answers each request is held 5 s: the run is still going when the signal comes, however
    # slow this machine is, and the call in flight (which Ctrl-C lets finish) ends soon after it
    server = FakeLLMServer(latency=0.1, hang_s=5).start()
    server.stall_after = 3
    env = {**os.environ, "TIDE_BENCH_JUDGE_API_KEY": "sk-test-interrupt-000", "PYTHONPATH": str(Path.cwd())}
    command = [sys.executable, "-m", "tide_bench", "judge", str(run), "--out", str(tmp_path / "j"), "--judge",
               "local", "--model", "fake-model", "--base-url", server.url + "/v1"]  # fmt: skip
    try:
        child = subprocess.Popen(  # SIGINT as at a terminal: a CI job run in the background inherits it ignored
            [*command, "--concurrency", "1"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        cache = tmp_path / "j" / "cache.sqlite"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait for two saved judgments
            try:
                with sqlite3.connect(cache) as db:
                    if db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0] >= 2:
                        break
            except sqlite3.Error:
                pass
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 130, err
        saved = int(re.search(r"interrupted: (\d+) of 12 judgments are saved", err).group(1))  # type: ignore[union-attr]
        assert saved >= 2 and "run the same command again to resume" in err and "Traceback" not in err
        calls, server.stall_after = server.total_calls, None
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert f"{saved} of 12 item(s) already judged (from the cache" in again.stderr
        assert f"; {12 - saved} to judge" in again.stderr
        assert server.total_calls - calls == 12 - saved  # only the rest is judged
    finally:
        server.stop()


def test_the_summary_says_why_an_estimate_has_no_interval() -> None:
    """U12 (new-user round 3): "emotion_recognition 4.50 (n<2)" for two items of one persona."""
    from tide_bench.judging.report import format_summary

    one_persona = {"mean": 4.5, "ci_low": None, "ci_high": None, "n": 2, "n_clusters": 1}
    summary = {
        "judge": {"name": "j", "model": "m", "version": "v", "rubric": "r"},
        "n_items": 2, "n_scored": 2, "n_unscored": 0, "unscored_reasons": {},
        "factors": {"emotion_recognition": one_persona}, "empathy": one_persona,
        "safety_flag_rate": {"mean": 0.0, "ci_low": None, "ci_high": None, "n": 1, "n_clusters": 1},
        "cost_usd": {"this_run": 0.0, "all_judgments": 0.0}, "calls_this_run": 2,
        "self_preference": {"risk": False},
    }  # fmt: skip
    text = format_summary(summary)
    assert "4.50 (no interval: one persona (a CI needs two))" in text and "n<2" not in text
