"""Generation through an API backend docs/tasks.md documents (issue 34.10).

``tide-bench eval --model local-chat-completions`` against a fake OpenAI-compatible server on
127.0.0.1, over a real HTTP connection: genuine system + user chat reaches the server and its
answers become the run's replies. And the packages these backends need come with the [eval]
extra (lm-eval's [api] packages), or the error names the extra.
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.llm_server import FakeLLMServer
from tests.helpers import MULTI_EXCHANGE
from tide_bench.cli.main import cli
from tide_bench.data import load_dataset
from tide_bench.generation import load_run
from tide_bench.tasks.registry import system_prompt

ROOT = Path(__file__).resolve().parents[2]


def _eval_requirements() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["eval"]


def test_the_eval_extra_brings_lm_evals_api_packages() -> None:
    """A clean `pip install tide-bench[eval]` must run the documented API backends: the extra asks
    for lm-eval's [api] packages, and (installed from the extras, as tox does) they import."""
    lm_eval = next(r for r in _eval_requirements() if re.match(r"lm-eval\b", r))
    extras = set(re.search(r"\[([^\]]*)\]", lm_eval).group(1).replace(" ", "").split(","))
    assert {"hf", "api"} <= extras, lm_eval
    needed = [
        re.split(r"[ ;<>=!\[]", req, maxsplit=1)[0]
        for req in metadata.requires("lm_eval") or []
        if re.search(r"""extra\s*==\s*["']api["']""", req)
    ]
    assert "tenacity" in needed
    missing = [name for name in needed if find_spec(name.replace("-", "_")) is None]
    assert missing == [], f"lm-eval's [api] packages not installed: {missing}"


def test_a_missing_api_package_is_named_with_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the packages are missing anyway (an older install), the error says which extra brings
    them, not "check the model path or hub id"."""
    import lm_eval.models.api_models as api_models

    real = api_models.find_spec
    monkeypatch.setattr(api_models, "find_spec", lambda name, *a: None if name == "tenacity" else real(name, *a))
    result = CliRunner().invoke(
        cli,
        [
            "eval",
            "--data",
            "sample",
            "--model",
            "local-chat-completions",
            "--model-args",
            "model=m,base_url=http://127.0.0.1:9/v1/chat/completions",
            "--output-dir",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "tenacity" in result.output and "[eval] extra" in result.output and "lm-eval[api]" in result.output
    assert "model path or hub id" not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()  # a refused command leaves no folder


@pytest.mark.slow
def test_generation_through_local_chat_completions_sends_genuine_chat(tmp_path: Path) -> None:
    """On two-exchange data (turn 1 and turn 2 items): each request is the chat itself, the task's
    system prompt as the system message, the earlier exchange as user/assistant turns, the client's
    latest message as the last user turn, each verbatim; not a flattened transcript."""
    server = FakeLLMServer().start()
    try:
        server.chat_reply = lambda messages: f"That sounds really hard. ({len(messages)} messages)"
        out = tmp_path / "api-run"
        result = CliRunner().invoke(
            cli,
            [
                "eval",
                "--data",
                str(MULTI_EXCHANGE),
                "--split",
                "validation",
                "--model",
                "local-chat-completions",
                "--model-args",
                f"model=served-model,base_url={server.url}/v1/chat/completions,num_concurrent=1,max_retries=1",
                "--gen-kwargs",
                "max_gen_toks=64",
                "--output-dir",
                str(out),
            ],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
    finally:
        server.stop()
    items = {i.client_utterance: i for i in load_dataset(str(MULTI_EXCHANGE)).items_for("validation")}
    assert {i.turn for i in items.values()} == {1, 2}
    assert len(server.chat_requests) == len(items)
    seen = set()
    for request in server.chat_requests:
        messages = request["messages"]
        item = items[messages[-1]["content"]]  # the client's latest message, verbatim, as the last user turn
        seen.add(item.item_id)
        expected = [
            {"role": "system", "content": system_prompt("neutral")},
            *item.history,
            {"role": "user", "content": item.client_utterance},
        ]
        assert messages == expected, (item.item_id, messages)
        assert request["model"] == "served-model"
        # the task's decoding reaches the server: greedy, the cap asked for, the turn delimiter as a stop
        assert request["max_tokens"] == 64 and request["temperature"] == 0, request
        assert "\nClient:" in request["stop"], request
    assert seen == {i.item_id for i in items.values()}
    run = load_run(out)
    replies = {g.turn: g.reply for g in run.generations}
    assert replies == {1: "That sounds really hard. (2 messages)", 2: "That sounds really hard. (4 messages)"}
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["model"]["backend"] == "local-chat-completions" and manifest["model"]["name"] == "served-model"
    assert "| cosine similarity" in result.output  # the results table
