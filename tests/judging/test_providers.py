"""Judge providers: the registry and what every provider obeys on the wire.

* Providers by registry (A3-5): a provider's name is compared nowhere outside
  ``judging/providers/``; the registry refuses a class without capabilities or a name claimed
  twice. (The one-file recipe for a new protocol is tests/project/test_recipes.py's.)
* Answers read up to a cap (R3-3): for every provider, over HTTP, a body over
  ``max_answer_bytes`` (announced or not, plain or gzip) leaves the item unscored "answer too
  large", and one at the cap or under is read as before.
* Credentials to the configured origin only (R3-2, R3-8): a cross-origin redirect stops the run
  naming both hosts; allowed, it is followed without the key or the URL's user info; a redirect
  within the origin is followed with them.
"""

from __future__ import annotations

import ast
import asyncio
import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.core.errors import ConfigError
from tide_bench.data.sources import load_dataset
from tide_bench.judging import judge_run, load_judge
from tide_bench.judging.capabilities import Capabilities, provider_names, register_provider
from tide_bench.judging.providers import make_provider
from tide_bench.judging.providers.transport import RedirectRefused, check_redirect
from tide_bench.judging.retry import FatalJudgeError

PACKAGE = Path(__file__).resolve().parents[2] / "tide_bench"
KEY = "sk-providers-test-0123456789"
FAST = {
    "timeout_s": 60.0,
    "backoff_base_s": 0.01,
    "backoff_cap_s": 0.05,
    "concurrency": 2,
    "max_retries": 1,
}  # a generous bound: a loaded machine (load 12) took over 5 s for one SDK call
JUDGES = ("claude-sonnet", "openai-gpt", "local")
CAP = 20_000


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TIDE_BENCH_JUDGE_API_KEY"):
        monkeypatch.setenv(var, KEY)
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def server():
    fake = FakeLLMServer().start()
    yield fake
    fake.stop()


def _url(judge: str, root: str) -> str:
    return root if judge == "claude-sonnet" else root + "/v1"


def _config(judge: str, root: str, **overrides: Any):
    return load_judge(
        judge, model="m" if judge == "local" else None, base_url=_url(judge, root), overrides=FAST | overrides
    )


# ------------------------------------------------------------------ the registry


def _provider_comparisons(path: Path) -> list[str]:
    names = set(provider_names())
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            values = [node.left, *node.comparators]
            constants = [v.value for v in values if isinstance(v, ast.Constant)]
            for v in values:
                if isinstance(v, ast.Tuple | ast.List | ast.Set):
                    constants += [e.value for e in v.elts if isinstance(e, ast.Constant)]
            if names & {c for c in constants if isinstance(c, str)}:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_provider_is_known_by_name_outside_its_own_module() -> None:
    outside = [p for p in PACKAGE.rglob("*.py") if "providers" not in p.relative_to(PACKAGE).parts]
    assert [hit for path in outside for hit in _provider_comparisons(path)] == []
    assert {"anthropic", "openai", "openai-compatible"} <= set(provider_names())


def test_the_registry_refuses_a_class_without_capabilities_or_a_name_claimed_twice() -> None:
    with pytest.raises(TypeError, match="declares no Capabilities"):
        register_provider("no-caps")(type("NoCaps", (), {}))
    with pytest.raises(ValueError, match="registered twice"):
        register_provider("anthropic")(type("Other", (), {"capabilities": Capabilities(api="x")}))
    with pytest.raises(ConfigError, match="provider must be one of"):
        make_provider(load_judge("local", model="m", base_url="http://127.0.0.1:9/v1", overrides={"provider": "nope"}))


def test_the_capabilities_decide_batch_caching_and_prices() -> None:
    claude, local = (
        load_judge("claude-sonnet", prices=(1.0, 2.0)),
        load_judge("local", model="m", base_url="http://x/v1"),
    )
    assert claude.prices is not None and claude.prices.batch == 0.5
    assert load_judge("local", model="m", base_url="http://x/v1", prices=(1.0, 2.0)).prices.batch == 1.0  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="needs a server URL"):
        load_judge("local", model="m")
    from tide_bench.judging.engine import check_judge_options
    from tide_bench.judging.session import JudgeOptions

    check_judge_options(claude, JudgeOptions(mode="batch"))
    with pytest.raises(ConfigError, match="batch mode is not implemented for the openai-compatible provider"):
        check_judge_options(local, JudgeOptions(mode="batch"))


# ------------------------------------------------------------------ answers read up to a cap


def _rate(config: Any, marker: str) -> Any:
    async def once() -> Any:
        provider = make_provider(config)
        try:
            return await provider.rate("rules", f"<candidate_reply>{marker}</candidate_reply>")
        finally:
            await provider.aclose()

    return asyncio.run(once())


SIZES = settings(
    max_examples=12, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


@pytest.mark.parametrize("judge", JUDGES)
@SIZES
@given(
    size=st.one_of(st.integers(CAP - 64, CAP + 64), st.integers(1, 4 * CAP)),
    chunked=st.booleans(),
    gzipped=st.booleans(),
)
def test_an_answer_over_the_cap_is_refused_and_one_under_it_is_read(
    judge: str, size: int, chunked: bool, gzipped: bool, server: FakeLLMServer
) -> None:
    """Whatever the transport (SDK or lean), announced or chunked, plain or gzip (counted as it
    inflates): over ``max_answer_bytes`` is "answer too large", at or under it is read (here an
    answer that is not the API's, refused for that reason instead)."""
    body = b"{" + b" " * (size - 2) + b"}" if size >= 2 else b"{"
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    marker = server.script(gzip.compress(body) if gzipped else body, headers=headers, chunked=chunked)
    outcome = _rate(_config(judge, server.url, max_answer_bytes=CAP), marker)
    assert outcome.rejected is not None
    assert ("answer too large" in outcome.rejected) == (size > CAP), outcome.rejected


@pytest.mark.parametrize("judge", JUDGES)
def test_a_huge_answer_leaves_its_item_unscored_and_counted(judge: str, server: FakeLLMServer, tmp_path: Path) -> None:
    marker = server.script(b'{"x": "' + b"a" * 6_000_000 + b'"}', chunked=True)
    picked = {i.item_id for i in load_dataset("sample").items_for("test")[::2]}
    run = make_run(
        tmp_path / "run", lambda item: f"reply {item.item_id} {marker}" if item.item_id in picked else "fine"
    )
    result = judge_run(run, tmp_path / "j", _config(judge, server.url))  # the default cap: a few MB
    unscored = [r for r in result.records if r["status"] == "unscored"]
    assert unscored and all("answer too large" in r["unscored_reason"] for r in unscored)
    assert result.summary["n_unscored"] == len(unscored) and result.summary["n_scored"] > 0


def test_the_cap_and_the_redirect_rule_are_judge_configuration_keys() -> None:
    def local(**overrides: Any):
        return load_judge("local", model="m", base_url="http://127.0.0.1:9/v1", overrides=overrides)

    assert local().max_answer_bytes == 4 * 1024 * 1024 and local().allow_cross_origin_redirects is False
    assert local(max_answer_bytes=1000).max_answer_bytes == 1000
    assert local(allow_cross_origin_redirects=True).snapshot()["allow_cross_origin_redirects"] is True
    for bad in (0, -1, 1.5, "many", True):
        with pytest.raises(ConfigError, match="max_answer_bytes"):
            local(max_answer_bytes=bad)
    for bad in ("yes", 1, "true"):
        with pytest.raises(ConfigError, match="allow_cross_origin_redirects"):
            local(allow_cross_origin_redirects=bad)


# ------------------------------------------------------------------ redirects and credentials


@pytest.mark.parametrize(
    ("location", "same"),
    [
        ("/elsewhere", True),
        ("HTTP://127.0.0.1:8000/v1/x", True),
        ("http://127.0.0.1:8001/v1/x", False),
        ("https://127.0.0.1:8000/v1/x", False),
        ("http://localhost:8000/v1/x", False),
        ("//evil.example/v1", False),
        ("http://127.0.0.1:8000@evil.example/v1", False),
        ("http://127.0.0.1.evil.example:8000/v1", False),
        ("http://user:pw@127.0.0.1:8000/v1/x", True),
    ],
)
def test_the_origin_is_scheme_host_and_port(location: str, same: bool) -> None:
    from urllib.parse import urljoin

    configured = "http://127.0.0.1:8000/v1/"
    target = urljoin(configured + "chat/completions", location)
    assert check_redirect(configured, configured, target, allowed=True) is same
    if not same:
        with pytest.raises(RedirectRefused):
            check_redirect(configured, configured, target, allowed=False)
    assert check_redirect("https://api.example/", "https://api.example/", "https://api.example:443/v1", allowed=False)


def _with_user(url: str) -> str:
    return url.replace("http://", "http://ruser:rt-PASSWORD-42@")


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("userinfo", [False, True])
def test_a_cross_origin_redirect_is_refused_naming_both_hosts(judge: str, userinfo: bool, tmp_path: Path) -> None:
    home, away = FakeLLMServer().start(), FakeLLMServer().start()
    try:
        home.redirect_to = away.url
        root = _with_user(home.url) if userinfo else home.url
        with pytest.raises(FatalJudgeError) as refused:
            judge_run(make_run(tmp_path / "run"), tmp_path / "j", _config(judge, root))
        message = str(refused.value)
        assert f"127.0.0.1:{home.port}" in message and f"127.0.0.1:{away.port}" in message
        assert "--allow-cross-origin-redirects" in message and "rt-PASSWORD" not in message
        assert away.credentials == []  # nothing, not even the request, reached the other host
    finally:
        home.stop()
        away.stop()


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("userinfo", [False, True])
def test_an_allowed_cross_origin_redirect_carries_no_credentials(judge: str, userinfo: bool, tmp_path: Path) -> None:
    home, away = FakeLLMServer().start(), FakeLLMServer().start()
    try:
        home.redirect_to = away.url
        root = _with_user(home.url) if userinfo else home.url
        config = _config(judge, root, allow_cross_origin_redirects=True)
        result = judge_run(make_run(tmp_path / "run"), tmp_path / "j", config)
        assert result.summary["n_scored"] > 0 and away.credentials
        assert all(c == "" for c in away.credentials), away.credentials  # no key, no basic auth
        assert all(c for c in home.credentials)  # the configured origin got them
    finally:
        home.stop()
        away.stop()


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("userinfo", [False, True])
def test_a_redirect_within_the_origin_is_followed_with_credentials(judge: str, userinfo: bool, tmp_path: Path) -> None:
    home = FakeLLMServer().start()
    try:
        home.redirect_to = home.url + "/moved"
        root = _with_user(home.url) if userinfo else home.url
        result = judge_run(make_run(tmp_path / "run"), tmp_path / "j", _config(judge, root))
        assert result.summary["n_scored"] > 0
        moved = [r for r in home.routes if r.startswith("POST /moved/")]
        assert moved and all(c for c in home.credentials)
        assert all(c.startswith("Basic ") for c in home.credentials) or not userinfo or judge != "local"
    finally:
        home.stop()


def test_the_cli_refuses_a_cross_origin_redirect_unless_its_flag_allows_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tide_bench.cli.main import cli

    home, away = FakeLLMServer().start(), FakeLLMServer().start()
    try:
        home.redirect_to = away.url
        run = make_run(tmp_path / "run")
        args = ["judge", str(run), "--judge", "local", "--model", "m", "--base-url", home.url + "/v1"]
        refused = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "a")])
        assert refused.exit_code != 0 and "Traceback" not in refused.output
        assert f"127.0.0.1:{home.port}" in refused.output and f"127.0.0.1:{away.port}" in refused.output
        allowed = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "b"), "--allow-cross-origin-redirects"])
        assert allowed.exit_code == 0, allowed.output
        assert away.credentials and all(c == "" for c in away.credentials)
    finally:
        home.stop()
        away.stop()


# ------------------------------------------------------------------ what neither review pass sent (item 7)

TRANSPORT = {
    # case: (status, body, headers, chunked, drip_s) -> every item scored or unscored with a reason
    "deep-json": (200, b"[" * 100_000 + b"]" * 100_000, {}, False, 0.0),
    "error-500-over-the-cap": (500, b"e" * 6_000_000, {}, True, 0.0),
    "error-400-over-the-cap": (400, b"e" * 6_000_000, {}, False, 0.0),
    "length-lie": (200, b'{"x": 1}', {"Content-Length": "100000"}, False, 0.0),
    "redirect-to-itself": (307, b"", {"Location": "/v1/messages"}, False, 0.0),
    "drip": (200, b"{" + b" " * 400 + b"}", {}, False, 0.05),  # 20 s, a byte at a time: past timeout_s
    "gzip-bomb": (200, gzip.compress(b" " * 50_000_000), {"Content-Encoding": "gzip"}, False, 0.0),
    "brotli-claimed": (200, b"\x00" * 100, {"Content-Encoding": "br"}, False, 0.0),
}


@pytest.mark.parametrize("case", sorted(TRANSPORT))
@pytest.mark.parametrize("judge", JUDGES)
def test_a_hostile_transport_costs_one_item_never_the_run(judge: str, case: str, tmp_path: Path) -> None:
    status, body, headers, chunked, drip = TRANSPORT[case]
    srv = FakeLLMServer().start()
    try:
        if case == "redirect-to-itself" and judge != "claude-sonnet":
            headers = {"Location": "/v1/chat/completions"}
        marker = srv.script(body, status=status, headers=headers, chunked=chunked, drip_s=drip)
        items = load_dataset("sample").items_for("test")[:2]
        run = make_run(
            tmp_path / "run", lambda i: f"{marker} odd" if i == items[0] else f"Fine {i.item_id}", items=items
        )
        config = _config(judge, srv.url, timeout_s=2.0, max_retries=1)
        result = judge_run(run, tmp_path / "j", config)
        odd = next(r for r in result.records if r["item_id"] == items[0].item_id)
        assert odd["status"] == "unscored" and odd["unscored_reason"], odd
        if case == "drip":  # the call's whole time is bounded, not each read's (the SDKs' own timeout)
            assert odd["unscored_kind"] == "transient_failure" and "within 2 s" in odd["unscored_reason"], odd
        if case == "gzip-bomb" or (case == "error-400-over-the-cap" and judge != "local"):  # local: 64 KB read
            assert "answer too large" in odd["unscored_reason"], odd
        assert result.summary["n_scored"] == 1 and result.summary["n_unscored"] == 1
        assert KEY not in (tmp_path / "j" / "judgments.jsonl").read_text()
    finally:
        srv.stop()
