"""The judge at scale (issue 33): requests encoded once per configuration, SDKs imported only
when a call is made, the lean path for OpenAI-compatible servers, and a cost estimate that
applies caching to batches, gives ranges where caching is best effort and derives output
tokens from the rubric's schema. Speed itself is measured by benchmarks/bench_judge.py, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.core.resources import resource_dir
from tide_bench.generation.run_dir import load_run
from tide_bench.judging import JudgeOptions, dry_run, judge_run, load_judge
from tide_bench.judging import plan as plan_module
from tide_bench.judging.answer_size import DEFAULT_LENGTHS, output_schema, typical_answer, typical_output_tokens
from tide_bench.judging.parse import parse_rating
from tide_bench.judging.plan import make_plan, output_tokens_per_call
from tide_bench.judging.prompt import output_spec, rating_schema, system_text, user_text
from tide_bench.judging.providers import make_provider
from tide_bench.judging.providers.body import RequestBody
from tide_bench.judging.providers.compatible_api import StatusError, _env_proxy, status_message
from tide_bench.judging.providers.openai_api import chat_params
from tide_bench.judging.retry import retry_after_seconds

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-scale-test-0123456789"
FAST = {"timeout_s": 2.0, "backoff_base_s": 0.01, "backoff_cap_s": 0.05, "concurrency": 4}
PURE = settings(max_examples=60, derandomize=True, deadline=None, database=None)
RUBRICS = sorted(p.stem.removeprefix("rubric_") for p in resource_dir("judges").glob("rubric_v*.yaml"))


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TIDE_BENCH_JUDGE_API_KEY"):
        monkeypatch.setenv(var, KEY)
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)


def _generation():
    return load_run(make_run(Path(tempfile.mkdtemp()) / "run")).generations[0]


# ------------------------------------------------------------------ request bodies encoded once


@PURE
@given(user=st.text(max_size=200), fixed=st.dictionaries(st.text(max_size=8), st.text(max_size=20), min_size=1))
def test_a_request_body_is_the_json_object_it_stands_for(user: str, fixed: dict[str, str]) -> None:
    fixed.pop("messages", None)
    if not fixed:
        return
    before = [{"role": "system", "content": "rules"}]
    decoded = json.loads(RequestBody(fixed, before).render(user))
    assert decoded == fixed | {"messages": [*before, {"role": "user", "content": user}]}


def test_a_lone_surrogate_in_item_text_is_sent_escaped_not_refused() -> None:
    body = RequestBody({"model": "m"}).render("a \ud800 b")
    assert json.loads(body)["messages"][0]["content"] == "a \ud800 b" and b"\\ud800" in body


def test_the_lean_path_sends_the_chat_completions_request_encoded_once() -> None:
    """The local judge's pre-encoded body is exactly the request the OpenAI SDK path builds."""
    config = load_judge("local", model="m", base_url="http://127.0.0.1:9/v1")
    provider = make_provider(config)
    system, user = system_text(config), user_text(config, _generation())
    sent = json.loads(provider.body(system, user))  # type: ignore[attr-defined]
    assert sent == chat_params(config, provider.messages(system, user))
    assert sent == {
        "model": "m",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "response_format": output_spec(config),
        "max_tokens": int(config.decoding["max_tokens"]),
        "temperature": float(config.decoding["temperature"]),
    }


@pytest.mark.parametrize("judge", ["claude-sonnet", "openai-gpt"])
def test_the_sdk_paths_send_their_typed_request_with_temperature(judge: str, tmp_path: Path) -> None:
    """Hosted judges call the SDK's typed method (messages.create, chat.completions.create); the
    server receives every parameter, temperature included (Anthropic: through extra_body)."""
    srv = FakeLLMServer().start()
    try:
        config = load_judge(judge, base_url=srv.url + ("/v1" if judge == "openai-gpt" else ""), overrides=FAST)
        provider = make_provider(config)
        result = judge_run(make_run(tmp_path / "run"), tmp_path / "j", config)
        assert result.summary["n_scored"] > 0
        received = dict(srv.last_rating or {})
        system = system_text(config)
        expected = (
            provider.params(system, "")  # type: ignore[attr-defined]
            if judge == "claude-sonnet"
            else chat_params(config, provider.messages(system, ""))
        )
        for params in (received, expected):
            params["messages"] = params["messages"][:-1]  # the item's own message differs per call
        assert received == expected and received["temperature"] == float(config.decoding["temperature"])
    finally:
        srv.stop()


def test_requests_are_json_with_their_content_type_and_the_concurrency_is_kept(tmp_path: Path) -> None:
    srv = FakeLLMServer(latency=0.05).start()
    try:
        run = make_run(tmp_path / "run", lambda i: f"reply {i.item_id}", split="all")
        for name, config in {
            "claude": load_judge("claude-sonnet", base_url=srv.url, overrides=FAST | {"concurrency": 3}),
            "local": load_judge("local", model="m", base_url=srv.url + "/v1", overrides=FAST | {"concurrency": 3}),
        }.items():
            srv.max_in_flight = 0
            result = judge_run(run, tmp_path / name, config)
            assert result.summary["n_scored"] == len(load_run(run).generations)
            assert srv.max_in_flight == 3, name  # the workers keep exactly `concurrency` calls in flight
        assert set(srv.content_types) == {"application/json"}
    finally:
        srv.stop()


# ------------------------------------------------------------------ imports only where used

PROBE = """
import json, sys
from pathlib import Path
{body}
heavy = ("anthropic", "openai", "httpx2", "aiohttp")
print(json.dumps({{m: m in sys.modules for m in heavy}}))
"""


def _imported(body: str, tmp_path: Path) -> dict[str, bool]:
    env = {"PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": KEY, "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=textwrap.dedent(body))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_dry_run_and_every_help_import_no_sdk(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    imported = _imported(
        f"""
        from click.testing import CliRunner
        from tide_bench.cli.main import cli
        runner = CliRunner()
        dry = runner.invoke(cli, ["judge", {str(run)!r}, "--out", {str(tmp_path / "j")!r}, "--dry-run"])
        assert dry.exit_code == 0 and "calls to make" in dry.output, dry.output
        def commands(group, path):
            yield path
            for name, command in getattr(group, "commands", {{}}).items():
                yield from commands(command, [*path, name])
        for path in commands(cli, []):
            shown = runner.invoke(cli, [*path, "--help"])
            assert shown.exit_code == 0, (path, shown.output)
        """,
        tmp_path,
    )
    assert not any(imported.values()), imported


def test_a_local_judge_imports_neither_sdk_and_an_anthropic_one_only_when_it_calls(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    common = f"""
        from tests.fakes.llm_server import FakeLLMServer
        from tide_bench.judging import judge_run, load_judge
        srv = FakeLLMServer().start()
        fast = {{"timeout_s": 5.0, "concurrency": 4}}
        run = {str(run)!r}
    """
    local = _imported(
        common
        + """
        config = load_judge("local", model="m", base_url=srv.url + "/v1", overrides=fast)
        assert judge_run(run, Path("local"), config).summary["n_scored"] > 0
        """,
        tmp_path,
    )
    assert not local["anthropic"] and not local["openai"], local
    claude = """
        config = load_judge("claude-sonnet", base_url=srv.url, overrides=fast)
        result = judge_run(run, Path("claude"), config)
        print(json.dumps({"calls": result.calls_made}))
    """
    first = _imported(common + claude, tmp_path)
    assert first["anthropic"]  # it made its calls through the SDK
    cached = _imported(common + claude, tmp_path)
    assert not cached["anthropic"] and not cached["openai"], cached  # every judgment cached: no SDK needed
    built = _imported(
        """
        from tide_bench.judging import load_judge
        from tide_bench.judging.providers import make_provider
        provider = make_provider(load_judge("claude-sonnet"))  # checks the key; sends nothing
        assert provider.public_endpoint == "https://api.anthropic.com/"
        """,
        tmp_path,
    )
    assert not built["anthropic"], built


# ------------------------------------------------------------------ the lean path's transport rules


def test_a_status_error_names_the_api_message_never_a_page_and_honours_retry_after() -> None:
    assert status_message(429, "application/json", b'{"error": {"message": "slow down"}}') == (
        "Error code: 429 - slow down"
    )
    page = status_message(502, "text/html", b"<html><body>Bad gateway</body></html>")
    assert "<" not in page and "text/html" in page
    assert retry_after_seconds(StatusError(429, {"retry-after": "3"}, "x")) == 3.0


def test_the_environment_proxy_is_honoured_and_no_proxy_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert str(_env_proxy("http://10.1.2.3:8000/v1/")["proxy"]) == "http://proxy.example:3128"
    assert _env_proxy("http://127.0.0.1:8000/v1/") == {}


def test_url_credentials_go_as_basic_auth_and_are_never_shown(tmp_path: Path) -> None:
    srv = FakeLLMServer().start()
    try:
        url = srv.url.replace("http://", "http://proxyuser:pro%40xy-pass-42@") + "/v1"
        config = load_judge("local", model="m", base_url=url, overrides=FAST)
        result = judge_run(make_run(tmp_path / "run"), tmp_path / "j", config)
        assert result.summary["n_scored"] > 0
        assert all(c.startswith("Basic ") for c in srv.credentials)
        written = b"".join(p.read_bytes() for p in (tmp_path / "j").iterdir() if p.suffix in (".json", ".jsonl"))
        assert b"pro@xy-pass-42" not in written and b"pro%40xy" not in written
    finally:
        srv.stop()


# ------------------------------------------------------------------ the cost estimate


def _estimate(judge: str = "claude-sonnet", **kw: Any):
    config = load_judge(judge, **kw)
    run = load_run(make_run(Path(tempfile.mkdtemp()) / "run", split="all"))
    return config, make_plan(run, config, None, False).estimate(config)


def test_the_batch_estimate_applies_caching_as_a_range() -> None:
    config, est = _estimate(overrides={"concurrency": 4})
    d = est.as_dict()
    batch, sync = d["batch"], d["sync"]
    n, fixed, p = est.n_calls, est.fixed_tokens, config.prices
    assert n > 4
    low = est.usage("low", batch=True)
    assert (low.cache_write_tokens, low.cache_read_tokens) == (fixed, fixed * (n - 1))
    high = est.usage("high", batch=True)
    assert (high.cache_write_tokens, high.cache_read_tokens) == (fixed * n, 0)
    assert batch["cost_low_usd"] == pytest.approx(low.cost(p) * p.batch)
    assert batch["cost_low_usd"] < batch["cost_high_usd"] == batch["cost_usd"]  # plan for the high end
    assert sync["usage"]["cache_write_tokens"] == 4 * fixed  # the first wave of 4 concurrent calls writes
    assert sync["usage"]["cache_read_tokens"] == (n - 4) * fixed
    assert 0 < batch["output_share"] < 1 and 0 < sync["output_share"] < 1


def test_max_cost_reserves_the_high_end_of_the_range() -> None:
    _, est = _estimate()
    d = est.as_dict()
    assert est.per_call_cost() * est.n_calls == pytest.approx(d["sync"]["cost_high_usd"])
    assert d["sync"]["cost_high_usd"] > d["sync_without_caching"]["cost_usd"]  # a cache write costs 1.25x input


def test_openai_caching_is_best_effort_and_local_is_free() -> None:
    _, est = _estimate("openai-gpt")
    sync = est.as_dict()["sync"]
    assert sync["prompt_caching"] == "automatic" and sync["cost_low_usd"] < sync["cost_usd"] == sync["cost_high_usd"]
    _, local = _estimate("local", model="m", base_url="http://127.0.0.1:9/v1")
    assert local.as_dict()["sync"]["cost_usd"] == 0.0 and local.as_dict()["batch"] is None


@pytest.mark.parametrize("rubric", RUBRICS)
def test_a_typical_answer_is_schema_valid_for_every_rubric_file(rubric: str) -> None:
    for judge in ("claude-sonnet", "openai-gpt"):
        config = load_judge(judge, rubric=rubric)
        schema = rating_schema(config)
        answer = typical_answer(output_schema(output_spec(config)), config.prompt.typical_answer, ["word"] * 5)
        jsonschema.Draft202012Validator(schema).validate(answer)
        parse_rating(answer, config.rubric)  # and it passes the judge's own validation


def test_output_tokens_come_from_the_schema_not_a_constant() -> None:
    config = load_judge("claude-sonnet")
    spec, lengths, words = output_spec(config), config.prompt.typical_answer, config.rubric.render()
    derived, method, _ = output_tokens_per_call(config, [])
    assert method == "derived" and derived == typical_output_tokens(spec, lengths, words)
    longer = typical_output_tokens(spec, lengths | {"rationale_words": 2 * lengths["rationale_words"]}, words)
    assert longer > derived  # the rationale length drives it
    schema = output_schema(spec)
    fourth = schema["properties"]["emotion_recognition"]
    wider = {"input_schema": schema | {"properties": schema["properties"] | {"fourth_factor": fourth}}}
    assert typical_output_tokens(wider, lengths, words) > derived  # so does every field of the schema
    v1, _, _ = output_tokens_per_call(load_judge("claude-sonnet", rubric="v1"), [])
    assert v1 < derived  # v1: shorter rationales, no evidence or risk cue
    assert set(lengths) == set(DEFAULT_LENGTHS)


def test_measured_output_tokens_replace_the_derived_ones(tmp_path: Path, server: FakeLLMServer) -> None:
    """Half a run already judged: the other half is estimated from what those calls produced."""
    config = load_judge("claude-sonnet", base_url=server.url, overrides=FAST)
    first = make_run(tmp_path / "a", lambda i: f"reply {i.item_id}", split="all")
    judge_run(first, tmp_path / "j", config)
    half = {g.item_id for g in load_run(first).generations[::2]}
    second = make_run(
        tmp_path / "b", lambda i: f"reply {i.item_id}" + ("" if i.item_id in half else " (new)"), split="all"
    )
    est = dry_run(second, tmp_path / "j", config, JudgeOptions())
    assert est["n_cached"] == len(half) >= plan_module.MIN_MEASURED and est["n_calls"] > 0
    assert est["tokens_per_call"]["output_method"] == "measured"
    assert est["tokens_per_call"]["output"] == 120  # what the fake server reports per call
    fresh = dry_run(second, tmp_path / "other", config, JudgeOptions())
    assert fresh["tokens_per_call"]["output_method"] == "derived"


@pytest.fixture
def server() -> Any:
    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


def test_a_lone_surrogate_in_an_answer_is_cached_and_written_not_a_crash(tmp_path: Path, server: FakeLLMServer) -> None:
    """JSON may escape half a surrogate pair ("\\ud800"); such text cannot be stored as UTF-8."""
    usage = b'"usage": {"input_tokens": 5, "output_tokens": 5}'
    refusal = server.script(
        b'{"type": "message", "model": "m", "stop_reason": "refusal", '
        + usage
        + b', "content": [{"type": "text", "text": "no \\ud800 thanks"}]}'
    )
    run = make_run(tmp_path / "run", lambda i: f"{refusal} {i.item_id}")
    config = load_judge("claude-sonnet", base_url=server.url, overrides=FAST)
    for _ in range(2):  # the rerun reads it back from the cache
        result = judge_run(run, tmp_path / "j", config)
        assert {r["unscored_kind"] for r in result.records} == {"refusal"}
        assert all("\ud800" not in r["unscored_reason"] for r in result.records)
    assert result.calls_made == 0 and (tmp_path / "j" / "judgments.jsonl").is_file()
