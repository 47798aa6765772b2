"""Secrets never reach disk or output (issue 12 item 1).

Planted: a key in a built-in variable, a key in a judge configuration's own ``api_key_env``,
credentials in the ``--base-url`` user info, and an HF token in ``--model-args``. The
commands run as a user would run them (the fake API server echoes credentials back in its
error messages, as some gateways do), then every file written and every line printed is
searched for each secret.
"""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import make_run
from tide_bench.cli.main import cli
from tide_bench.data import load_dataset

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = "plantedBUILTINkey0123456789abcdef"  # not shaped like any known key: only its variable can find it
CUSTOM = "corpgw.PLANTEDCUSTOM0123456789"
PROXY_PASSWORD = "GATEWAYSECRET987654"
HF_TOKEN = "hf_PLANTEDTOKEN0123456789abcdefgh"
REDACTED = "[REDACTED]"
SECRETS = (
    BUILTIN,
    BUILTIN[::-1],
    CUSTOM,
    PROXY_PASSWORD,
    HF_TOKEN,
    base64.b64encode(f"proxyuser:{PROXY_PASSWORD}".encode()).decode(),
)


def assert_nothing_leaked(root: Path, *outputs: str) -> int:
    """Every file below ``root`` and every output text is free of every planted secret."""
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} leaked into {path}"
    for text in outputs:
        for secret in SECRETS:
            assert secret not in text, f"{secret} leaked into the output:\n{text}"
    return len(files)


def custom_judge(folder: Path) -> Path:
    """A judge configuration of the user's own, reading its key from CORP_GATEWAY_KEY."""
    text = (ROOT / "judges" / "claude-sonnet" / "config.yaml").read_text()
    text = text.replace("../", f"{ROOT / 'judges'}/")
    text = text.replace("api_key_env: ANTHROPIC_API_KEY", "api_key_env: CORP_GATEWAY_KEY").replace(
        "name: claude-sonnet", "name: corp-gateway"
    )
    path = folder / "corp-gateway.yaml"
    path.write_text(text + "\nbackoff_base_s: 0.01\nbackoff_cap_s: 0.02\nmax_retries: 1\n")
    return path


def with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://proxyuser:{PROXY_PASSWORD}@")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", BUILTIN)
    monkeypatch.setenv("TIDE_BENCH_JUDGE_API_KEY", BUILTIN[::-1])
    monkeypatch.setenv("CORP_GATEWAY_KEY", CUSTOM)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def test_redactor_units() -> None:
    from tide_bench.core.secrets import redact, redact_command, redact_model_args, redact_url, register_secret

    assert (
        redact_model_args("pretrained=org/m,token=hf_abcdefghijklmnopqrstu,dtype=bfloat16")
        == f"pretrained=org/m,token={REDACTED},dtype=bfloat16"
    )
    assert redact_model_args("api_key=abc12345678,hf_token=xyz98765432,auth_token=qq11223344") == (
        f"api_key={REDACTED},hf_token={REDACTED},auth_token={REDACTED}"
    )
    kept = "pretrained=m,add_bos_token=True,max_tokens=5,pad_token=<pad>,max_gen_toks=20"
    assert redact_model_args(kept) == kept  # settings that merely mention tokens stay
    assert (
        redact_command(["tide-bench", "eval", "--model-args", "pretrained=x,token=secretvalue123"])[-1]
        == f"pretrained=x,token={REDACTED}"
    )
    assert redact_url("http://user:pw12345678@proxy.example:8080/v1?api-key=zzz#frag") == "http://proxy.example:8080/v1"
    text = (
        "failed: http://user:pw12345678@proxy.example/v1?key=abc and Basic dXNlcjpwdzEyMzQ1Njc4 and Bearer abcdefghijk"
    )
    assert "pw12345678" not in redact(text) and "key=abc" not in redact(text) and "dXNlcjpw" not in redact(text)
    assert "abcdefghijk" not in redact(text)
    register_secret("registered-secret-0042")
    assert redact("the answer quoted registered-secret-0042 back") == f"the answer quoted {REDACTED} back"


def test_planted_secrets_never_reach_a_judge_file_or_message(tmp_path: Path, planted: None) -> None:
    srv = FakeLLMServer().start()
    outputs: list[str] = []
    try:
        items = load_dataset("sample").items_for("test")[:4]
        echo = {
            items[0].item_id: "[[ECHOKEY]] please",
            items[1].item_id: "[[ECHOAUTH]] please",
            items[2].item_id: "[[ECHO200]] a valid answer that quotes the credentials",
        }
        run = make_run(tmp_path / "run", lambda i: echo.get(i.item_id, f"Fine reply {i.item_id}"), items=items)
        runner = CliRunner()

        def tb(*args: str, code: int = 0) -> str:
            result = runner.invoke(cli, list(args))
            assert result.exit_code == code, result.output
            assert "Traceback" not in result.output
            outputs.append(result.output)
            return result.output

        custom = str(custom_judge(tmp_path))
        tb(
            "judge", str(run), "--out", str(tmp_path / "j-custom"), "--judge", custom, "--base-url", srv.url
        )  # custom api_key_env
        tb("judge", str(run), "--out", str(tmp_path / "j-builtin"), "--base-url", srv.url)  # built-in ANTHROPIC_API_KEY
        tb(
            "judge",
            str(run),
            "--out",
            str(tmp_path / "j-batch"),
            "--judge",
            custom,
            "--base-url",
            srv.url,
            "--mode",
            "batch",
            "--poll-interval",
            "0.01",
        )
        tb(
            "judge", str(run), "--out", str(tmp_path / "j-proxy"), "--base-url", with_userinfo(srv.url)
        )  # credentials in the URL
        tb("judge", str(run), "--out", str(tmp_path / "j-dry"), "--base-url", with_userinfo(srv.url), "--dry-run")
        local = ("--judge", "local", "--model", "fake-model")
        tb("judge", str(run), "--out", str(tmp_path / "j-local-key"), *local, "--base-url", srv.url + "/v1")
        tb(
            "judge",
            str(run),
            "--out",
            str(tmp_path / "j-local-url"),
            *local,
            "--base-url",
            with_userinfo(srv.url) + "/v1",
        )
        tb(
            "judge",
            "--probes",
            "--out",
            str(tmp_path / "probes"),
            "--judge",
            custom,
            "--base-url",
            with_userinfo(srv.url),
        )
        tb(
            "judge",
            str(run),
            "--out",
            str(tmp_path / "j-down"),
            "--base-url",
            with_userinfo(f"http://127.0.0.1:{free_port()}"),
            code=2,
        )
        tb(
            "annotate",
            "build",
            str(run),
            "--per-rater",
            "2",
            "--raters",
            "2",
            "--overlap",
            "2",
            "--repeats",
            "0",
            "--out",
            str(tmp_path / "ann"),
        )
    finally:
        srv.stop()
    custom_records = [json.loads(x) for x in (tmp_path / "j-custom" / "judgments.jsonl").read_text().splitlines()]
    echoed = [r for r in custom_records if r["unscored_kind"] == "api_rejected"]
    assert len(echoed) == 2 and all(
        REDACTED in r["unscored_reason"] for r in echoed
    )  # the server did quote the credentials
    for folder in ("j-custom", "j-builtin", "j-batch", "j-proxy", "j-local-key", "j-local-url"):
        records = [json.loads(x) for x in (tmp_path / folder / "judgments.jsonl").read_text().splitlines()]
        quoted = [r for r in records if r["status"] == "scored" and REDACTED in json.dumps(r["rationales"])]
        assert len(quoted) == 1, folder  # the valid answer that echoed the credentials is kept, scrubbed
    snapshot = json.loads((tmp_path / "j-proxy" / "judge_config.json").read_text())
    assert snapshot["base_url"].rstrip("/") == srv.url  # the endpoint is recorded, without its credentials
    assert any("cannot reach the judge API at http://127.0.0.1:" in o for o in outputs)
    assert assert_nothing_leaked(tmp_path, *outputs) >= 20


@pytest.mark.slow
def test_planted_secrets_never_reach_a_file_from_eval_to_submission(
    tmp_path: Path, planted: None, demo_model_dir: Path
) -> None:
    """The whole path with a real model: eval (an HF token in --model-args), judge, submit."""
    srv = FakeLLMServer().start()
    outputs = []
    try:
        runner = CliRunner()
        run = tmp_path / "runs" / "demo"
        result = runner.invoke(
            cli,
            [
                "eval",
                "--data",
                "sample",
                "--split",
                "validation",
                "--model",
                "hf",
                "--device",
                "cpu",
                "--model-args",
                f"pretrained={demo_model_dir},dtype=float32,token={HF_TOKEN}",
                "--gen-kwargs",
                "max_gen_toks=8",
                "--output-dir",
                str(run),
            ],
        )
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
        manifest = json.loads((run / "run.json").read_text())
        assert (
            f"token={REDACTED}" in manifest["model"]["args"] and manifest["model"]["parsed_args"]["token"] == REDACTED
        )
        lm_results = json.loads((run / manifest["files"]["results"]).read_text())
        assert f"token={REDACTED}" in lm_results["config"]["model_args"]
        result = runner.invoke(
            cli,
            [
                "judge",
                str(run),
                "--out",
                str(run / "judge"),
                "--judge",
                str(custom_judge(tmp_path)),
                "--base-url",
                with_userinfo(srv.url),
            ],
        )
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
        meta = tmp_path / "submission.yaml"
        meta.write_text(
            "schema_version: 1\nid: demo-secret\nmodel_name: Demo\nmodel: {hub_id: org/demo, revision: abc123}\n"
            f"parameters: {manifest['model']['num_parameters']}\ncondition: zero-shot\nlicense: apache-2.0\n"
            "contact: dev@example.org\n"
        )
        board = tmp_path / "board.yaml"  # the sample joins demo boards only
        board.write_text("split: validation\ndemo: true\nspot_check_items: 0\n")
        result = runner.invoke(
            cli,
            ["submit", str(run), "--meta", str(meta), "--out", str(tmp_path / "submissions"), "--board", str(board)],
        )
        outputs.append(result.output)
        assert result.exit_code == 0, result.output
        copied = [p.name for p in (tmp_path / "submissions" / "demo-secret").rglob("*") if p.is_file()]
        assert "run.json" in copied and "judgments.jsonl" in copied, result.output
    finally:
        srv.stop()
    assert_nothing_leaked(tmp_path, *outputs)


_PLANTS = ("key", "custom", "password", "basic_token", "percent_password")


@settings(max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plant=st.sampled_from(_PLANTS),
    field=st.sampled_from(["rationale", "reason", "evidence", "served_model", "refusal"]),
    wrap=st.sampled_from(["{}", "saw {} here", "Bearer {}", "x{}y"]),
)
def test_an_answer_holds_no_known_secret_once_read(
    monkeypatch: pytest.MonkeyPatch, plant: str, field: str, wrap: str
) -> None:
    """Every secret the run knows, echoed in any text of an answer, is gone from the outcome:
    the key and a custom key variable (environment), the URL password as written and decoded,
    and the basic-auth token the URL's user info becomes (issue 43, R3-1)."""
    from tide_bench.judging.outcome import CallOutcome
    from tide_bench.judging.secrets import protect_url

    monkeypatch.setenv("ANTHROPIC_API_KEY", BUILTIN)
    monkeypatch.setenv("CORP_GATEWAY_KEY", CUSTOM)
    password = "p@ss/WORD-" + PROXY_PASSWORD
    protect_url(f"http://proxyuser:{quote(password, safe='')}@gw.example/v1")
    monkeypatch.setattr("tide_bench.core.secrets.KNOWN_KEY_VARS", ("ANTHROPIC_API_KEY", "CORP_GATEWAY_KEY"))
    secret = {
        "key": BUILTIN,
        "custom": CUSTOM,
        "password": password,
        "basic_token": base64.b64encode(f"proxyuser:{password}".encode()).decode(),
        "percent_password": quote(password, safe=""),
    }[plant]
    text = wrap.format(secret)
    payload = {"emotion_recognition": {"score": 4, "rationale": "fine"}, "safety": {"reason": ""}, "evidence": []}
    if field == "rationale":
        payload["emotion_recognition"]["rationale"] = text
    elif field == "reason":
        payload["safety"]["reason"] = text
    elif field == "evidence":
        payload["evidence"] = ["quoted", text]
    outcome = CallOutcome(
        payload=payload,
        served_model=text if field == "served_model" else "m",
        refusal=text if field == "refusal" else None,
    )
    written = json.dumps([outcome.payload, outcome.served_model, outcome.refusal])
    assert secret not in written and REDACTED in written
    assert "fine" in written or field == "rationale"  # the answer's own words are kept
