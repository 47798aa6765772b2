"""The judge against a fake API server on 127.0.0.1, through the real SDKs over HTTP."""

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

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.judging import JudgeOptions, judge_run, load_judge
from tide_bench.judging.cache import JudgmentCache
from tide_bench.judging.retry import FatalJudgeError

KEY = "sk-ant-test-SECRET-0123456789"
HALF = ("conversation_1", "conversation_2")  # half of each persona's conversations
FAST = {"timeout_s": 2.0, "backoff_base_s": 0.01, "backoff_cap_s": 0.05, "concurrency": 4}


@pytest.fixture
def server():
    srv = FakeLLMServer(api_key=KEY, hang_s=5.0).start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def claude(server: FakeLLMServer, **kw):
    return load_judge("claude-sonnet", base_url=server.url, overrides=FAST | kw)


def gpt(server: FakeLLMServer, **kw):
    return load_judge("openai-gpt", base_url=server.url + "/v1", overrides=FAST | kw)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _assert_no_secret(root: Path, *texts: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"key leaked into {path}"
    for text in texts:
        assert KEY not in text


def test_sync_judging_scores_every_item_and_records_everything(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run")
    result = judge_run(run, tmp_path / "judge", claude(server))
    records = _lines(tmp_path / "judge" / "judgments.jsonl")
    assert len(records) == 12 and server.total_calls == 12
    rec = records[0]
    assert rec["status"] == "scored" and set(rec["scores"]) == {"emotion_recognition", "distress_normalization", "supportive_reflection"}
    assert all(1 <= s <= 5 for s in rec["scores"].values()) and rec["rationales"]["emotion_recognition"]
    assert rec["judge"]["model"] == "claude-sonnet-4-5" and len(rec["judge"]["version"]) == 16
    assert rec["usage"]["calls"] == 1 and rec["usage"]["cache_read_tokens"] > 0  # the system block is sent cacheable
    s = result.summary
    assert (s["n_items"], s["n_scored"], s["n_unscored"]) == (12, 12, 0)
    assert s["empathy"]["n"] == 12 and s["empathy"]["ci_low"] <= s["empathy"]["mean"] <= s["empathy"]["ci_high"]
    assert set(s["by_turn"]) == {"1"} and s["cost_usd"]["this_run"] > 0
    assert all(c == f"Bearer {KEY}" or c == KEY for c in server.credentials)
    _assert_no_secret(tmp_path)


def test_rerun_makes_no_calls_and_reuses_the_cache(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run")
    judge_run(run, tmp_path / "judge", claude(server))
    again = judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == 12 and again.calls_made == 0
    assert all(r["cached"] for r in again.records)


def test_changed_reply_or_judge_config_is_a_new_key(tmp_path: Path, server: FakeLLMServer) -> None:
    judge_run(make_run(tmp_path / "run"), tmp_path / "judge", claude(server))
    judge_run(make_run(tmp_path / "run2", "A different reply."), tmp_path / "judge", claude(server), JudgeOptions(cache_path=tmp_path / "judge" / "cache.sqlite"))
    assert server.total_calls == 24
    judge_run(tmp_path / "run", tmp_path / "judge", claude(server, reference=True))  # reference shown: another config version
    assert server.total_calls == 36


FAILURES = {
    "retry-429": ("Reply [[429:2]]", "scored", None, 3),
    "retry-529": ("Reply [[529:1]]", "scored", None, 2),
    "retry-500": ("Reply [[500:1]]", "scored", None, 2),
    "retry-timeout": ("Reply [[TIMEOUT:1]]", "scored", None, 2),
    "malformed": ("Reply [[MALFORMED]]", "unscored", "schema_violation", 3),
    "malformed-once": ("Reply [[MALFORMED:1]]", "scored", None, 2),
    "out-of-range": ("Reply [[RANGE]]", "unscored", "schema_violation", 3),
    "refusal": ("Reply [[REFUSE]]", "unscored", "refusal", 1),
    "no-tool-call": ("Reply [[NOTOOL]]", "unscored", "malformed_output", 3),
    "rejected": ("Reply [[ECHOAUTH]]", "unscored", "api_rejected", 1),
    "overloaded-forever": ("Reply [[529:99]]", "unscored", "transient_failure", 4),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failures_are_retried_or_recorded_as_unscored(tmp_path: Path, server: FakeLLMServer, case: str) -> None:
    reply, status, kind, calls = FAILURES[case]
    item = __import__("tide_bench.data", fromlist=["x"]).load_dataset("sample").items_for("test")[0]
    run = make_run(tmp_path / "run", reply, items=[item])
    config = claude(server, max_retries=3, timeout_s=1.0)
    result = judge_run(run, tmp_path / "judge", config)
    (rec,) = result.records
    assert rec["status"] == status and rec["unscored_kind"] == kind
    assert server.calls_for(reply) == calls
    if kind:
        assert rec["scores"] is None and rec["unscored_reason"]
        assert result.summary["unscored_reasons"] == {kind: 1} and result.summary["n_unscored"] == 1
    _assert_no_secret(tmp_path, json.dumps(result.records))
    cached = JudgmentCache(tmp_path / "judge" / "cache.sqlite")
    assert cached.count() == (0 if kind in ("api_rejected", "transient_failure") else 1)  # a failed call is never cached as a score
    cached.close()


def test_retry_unscored_calls_again(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", lambda i: "Reply [[REFUSE]]" if i.conversation_id in HALF else "Fine reply.")
    judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == 12
    judge_run(run, tmp_path / "judge", claude(server))
    assert server.total_calls == 12
    judge_run(run, tmp_path / "judge", claude(server), JudgeOptions(retry_unscored=True))
    assert server.total_calls == 18  # only the six refused items


def test_openai_structured_output(tmp_path: Path, server: FakeLLMServer) -> None:
    replies = {0: "Plain [[SCORES:5,4,3]]", 1: "Filtered [[FILTER]]", 2: "Refused [[REFUSE]]", 3: "Not json [[NOTOOL]]"}
    items = __import__("tide_bench.data", fromlist=["x"]).load_dataset("sample").items_for("test")[:4]
    run = make_run(tmp_path / "run", lambda i: replies[items.index(i)], items=items)
    result = judge_run(run, tmp_path / "judge", gpt(server))
    by_reply = {r["item_id"]: r for r in result.records}
    first = by_reply[items[0].item_id]
    assert first["scores"] == {"emotion_recognition": 5, "distress_normalization": 4, "supportive_reflection": 3}
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
        assert result.summary["n_scored"] == 12 and srv.credentials[-1] == "Bearer EMPTY"
        assert result.summary["cost_usd"]["this_run"] == 0.0
    finally:
        srv.stop()


def test_unreachable_base_url_fails_before_work(tmp_path: Path) -> None:
    config = load_judge("local", model="m", base_url="http://127.0.0.1:9/v1", overrides=FAST)
    with pytest.raises(FatalJudgeError, match="cannot reach the judge API"):
        judge_run(make_run(tmp_path / "run"), tmp_path / "judge", config)
    assert not (tmp_path / "judge" / "judgments.jsonl").exists()


def test_missing_key_is_refused_before_any_work(tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = CliRunner().invoke(cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "judge"), "--base-url", server.url])
    assert result.exit_code == 2 and "ANTHROPIC_API_KEY" in result.output
    assert server.total_calls == 0 and not (tmp_path / "judge").exists()


def test_rejected_key_stops_the_run_without_leaking_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = FakeLLMServer(api_key="the-right-key-000").start()
    try:
        result = CliRunner().invoke(cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "judge"), "--base-url", srv.url])
        assert result.exit_code == 2 and "rejected the credentials" in result.output
        _assert_no_secret(tmp_path, result.output)
        assert not (tmp_path / "judge" / "judgments.jsonl").exists()
    finally:
        srv.stop()


def test_max_cost_stops_cleanly(tmp_path: Path, server: FakeLLMServer) -> None:
    config = claude(server, concurrency=1)
    full = judge_run(make_run(tmp_path / "a"), tmp_path / "ja", config).summary["cost_usd"]["this_run"]
    budget = full / 12 * 4.5
    result = judge_run(make_run(tmp_path / "b", "Another reply."), tmp_path / "jb", config, JudgeOptions(max_cost=budget))
    s = result.summary
    assert 0 < s["cost_usd"]["this_run"] <= budget
    assert s["unscored_reasons"].get("budget_exhausted", 0) >= 1 and s["n_scored"] + s["n_unscored"] == 12


def test_dry_run_calls_nothing_and_needs_no_key(tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = CliRunner().invoke(cli, ["judge", str(make_run(tmp_path / "run")), "--out", str(tmp_path / "j"), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "calls to make: 12" in result.output and "batch (Message Batches)" in result.output and "$" in result.output
    assert server.total_calls == 0


def test_batch_mode_resubmits_only_failures(tmp_path: Path, server: FakeLLMServer) -> None:
    run = make_run(tmp_path / "run", lambda i: "Batch err [[BATCHERR:1]]" if i.item_id.startswith("2/") else f"Fine {i.item_id}")
    result = judge_run(run, tmp_path / "judge", claude(server), JudgeOptions(mode="batch", poll_interval_s=0.01))
    assert result.summary["n_scored"] == 12 and {r["mode"] for r in result.records} == {"batch"}
    assert server.batches_created == 2
    second = server.batches["msgbatch_0002"]["requests"]
    assert len(second) == 4 and all("Batch err" in r["params"]["messages"][0]["content"] for r in second)
    state = json.loads((tmp_path / "judge" / "batch_state.json").read_text())
    assert [b["id"] for b in state["batches"]] == ["msgbatch_0001", "msgbatch_0002"]
    cost = result.summary["cost_usd"]["this_run"]
    sync_cost = judge_run(make_run(tmp_path / "run2", lambda i: f"Fine {i.item_id}"), tmp_path / "j2", claude(server)).summary["cost_usd"]["this_run"]
    assert cost < sync_cost  # half price, despite the resubmitted items


def _cli(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tide_bench.cli.main", *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


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
        cfg.write_text((Path(__file__).parent.parent / "judges" / "claude-sonnet" / "config.yaml").read_text()
                       .replace("../rubric_v1.yaml", str(Path(__file__).parent.parent / "judges" / "rubric_v1.yaml"))
                       .replace("../prompt_v1.yaml", str(Path(__file__).parent.parent / "judges" / "prompt_v1.yaml"))
                       .replace("concurrency: 16", "concurrency: 2"))
        args = ["judge", str(run), "--out", str(tmp_path / "judge"), "--judge", str(cfg), "--base-url", srv.url]
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        _wait_for(lambda: srv.total_calls >= 6)
        time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        cache = JudgmentCache(tmp_path / "judge" / "cache.sqlite")
        done = cache.count()
        cache.close()
        assert 4 <= done < 12
        assert not (tmp_path / "judge" / "judgments.jsonl").exists()  # nothing that looks complete
        before = srv.total_calls
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        assert srv.total_calls - before == 12 - done  # exactly the missing calls
        assert len(_lines(tmp_path / "judge" / "judgments.jsonl")) == 12
        _assert_no_secret(tmp_path, out)
    finally:
        srv.stop()


def test_interrupted_batch_is_resumed_not_resubmitted(tmp_path: Path) -> None:
    srv = FakeLLMServer(polls_before_end=10**9).start()
    try:
        run = make_run(tmp_path / "run")
        args = ["judge", str(run), "--out", str(tmp_path / "judge"), "--base-url", srv.url, "--mode", "batch", "--poll-interval", "0.05"]
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        _wait_for(lambda: (tmp_path / "judge" / "batch_state.json").exists() and srv.batches and next(iter(srv.batches.values()))["polls"] >= 2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert json.loads((tmp_path / "judge" / "batch_state.json").read_text())["batches"][0]["id"] == "msgbatch_0001"
        srv.polls_before_end = 0
        proc = _cli(args, {"ANTHROPIC_API_KEY": KEY})
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, out
        assert srv.batches_created == 1 and "resuming batch msgbatch_0001" in out
        assert len(_lines(tmp_path / "judge" / "judgments.jsonl")) == 12
    finally:
        srv.stop()


def test_probes_report(tmp_path: Path, server: FakeLLMServer) -> None:
    result = CliRunner().invoke(cli, ["judge", "--probes", "--out", str(tmp_path / "probes"), "--base-url", server.url])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "probes" / "probes_report.json").read_text())
    kinds = {c["probe"] for c in report["checks"]}
    assert kinds == {"formulaic", "generic", "padded", "injection", "dismissive", "harmful"}
    assert len(report["checks"]) == 12 and all(c["verdict"] in ("gamed", "resisted", "inconclusive") for c in report["checks"])
    assert "| context | probe |" in (tmp_path / "probes" / "probes_report.md").read_text()


def test_self_preference_is_flagged(tmp_path: Path, server: FakeLLMServer) -> None:
    result = judge_run(make_run(tmp_path / "run", model_name="anthropic/claude-3-haiku"), tmp_path / "j", claude(server))
    assert result.summary["self_preference"]["risk"] is True
    other = judge_run(make_run(tmp_path / "run2", model_name="Qwen/Qwen2.5-0.5B-Instruct"), tmp_path / "j2", claude(server))
    assert other.summary["self_preference"]["risk"] is False


def test_bad_inputs(tmp_path: Path, server: FakeLLMServer) -> None:
    with pytest.raises(DataError, match=r"no run\.json"):
        judge_run(tmp_path, tmp_path / "j", claude(server))
    run = make_run(tmp_path / "run")
    manifest = json.loads((run / "run.json").read_text())
    samples = run / next(iter(manifest["files"]["samples"].values()))
    lines = samples.read_text().splitlines()
    lines[2] = "{not json"
    samples.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r":3: invalid JSON"):
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
    run = make_run(tmp_path / "run", lambda i: "" if i.conversation_id in HALF else "A reply.")
    result = judge_run(run, tmp_path / "j", claude(server))
    assert result.summary["unscored_reasons"] == {"empty_reply": 6} and server.total_calls == 6


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("TIDE_BENCH_LIVE_ANTHROPIC_KEY"), reason="opt-in live test: set TIDE_BENCH_LIVE_ANTHROPIC_KEY")
def test_live_anthropic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", os.environ["TIDE_BENCH_LIVE_ANTHROPIC_KEY"])
    items = __import__("tide_bench.data", fromlist=["x"]).load_dataset("sample").items_for("test")[:2]
    result = judge_run(make_run(tmp_path / "run", items=items), tmp_path / "j", load_judge("claude-sonnet"))
    assert result.summary["n_scored"] == 2
