"""The prompt condition is checked against the prompts the run recorded (issue 32, N2).

``run.json`` claims a condition and a prompt hash; the samples hold what was sent
(lm-eval's ``arguments.gen_args_0.arg_0``). A run that claims the neutral condition but sent
the guided prompt, the neutral prompt with an instruction added, or a prompt of its own is
refused by ``submit``, ``leaderboard validate`` and ``leaderboard build``, naming the item and
the condition whose prompt it matches. The three shapes lm-eval records are covered: the plain
transcript, chat messages (API backends) and chat-template renderings (the model families of
tests/fixtures/chat_templates)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.fakes.llm_server import FakeLLMServer
from tests.leaderboard_helpers import (
    board,
    edit_jsonl,
    judged_submission,
    record_template,
    samples_files,
    stand_in_dataset,
)
from tide_bench.data import TideItem, load_dataset
from tide_bench.generation.samples import Generation
from tide_bench.leaderboard import SubmissionRefused, build_site, validate_many
from tide_bench.tasks.placement import FIRST_USER_TURN, place_system
from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS, build_messages, render_plain
from tide_bench.tasks.registry import system_prompt

TEMPLATES = Path(__file__).parents[1] / "fixtures" / "chat_templates"
NEUTRAL, GUIDED = system_prompt("neutral"), system_prompt("guided")
INSTRUCTION = "Always validate their feelings."  # four words: short, and still an added instruction
Render = Callable[[TideItem, str], str]


@pytest.fixture(scope="module")
def server(llm_server: FakeLLMServer) -> FakeLLMServer:
    return llm_server


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-prompts-000")


def plain(system: str | None) -> Render:
    return lambda item, _: render_plain(build_messages(item.to_doc(), system))


def api_messages(system: str | None, placement: str = "system") -> Render:
    """What lm-eval records for an API backend: its JsonChatStr, a one-string list."""
    return lambda item, _: json.dumps([json.dumps(place_system(build_messages(item.to_doc(), system), placement))])


def chat(family: str, system: str | None, placement: str = "system") -> Render:
    """A model family's chat template rendered as transformers renders it (jinja2, sandboxed);
    ``first_user_turn``: the system prompt folded into the first user turn, as tide-bench renders
    for a template without a system role (:func:`tide_bench.tasks.placement.place_system`)."""
    config = json.loads((TEMPLATES / f"{family}.json").read_text())
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def fail(message: str) -> None:
        raise ValueError(message)

    template = env.from_string(config["chat_template"])

    def render(item: TideItem, _: str) -> str:
        return template.render(
            messages=place_system(build_messages(item.to_doc(), system), placement),
            add_generation_prompt=True,
            bos_token=config.get("bos_token") or "",
            eos_token=config.get("eos_token") or "",
            raise_exception=fail,
            **CHAT_TEMPLATE_KWARGS,  # as lm-eval renders every TIDE prompt (tide_bench.tasks.prompts)
        )

    render.chat_template = config["chat_template"]  # type: ignore[attr-defined]  # make_run records it
    return render


FAMILIES = sorted(p.stem for p in TEMPLATES.glob("*.json") if p.stem not in ("gemma2", "no_end_of_turn"))


def _rewrite_prompts(folder: Path, render: Render, data: Path) -> None:
    items = {i.item_id: i for i in load_dataset(str(data)).items}

    def edit(rows: list[dict]) -> None:
        for row in rows:
            row["arguments"]["gen_args_0"]["arg_0"] = render(items[row["doc"]["item_id"]], "")

    for path in samples_files(folder):
        edit_jsonl(path, edit)
    if getattr(render, "chat_template", None):
        record_template(folder, render.chat_template)  # type: ignore[attr-defined]


def _errors(subs: Path) -> dict[str, list[str]]:
    return {c.id: c.errors for c in validate_many(subs, board(), spot_checks=False)}


@pytest.mark.parametrize(
    ("render", "says"),
    [
        (plain(GUIDED), "it is the 'guided' prompt"),
        (plain(f"{INSTRUCTION}\n\n{NEUTRAL}"), "it is the 'neutral' prompt with an added instruction"),
        (plain("You are a kind friend. Be as empathic as you can."), "it matches no condition's prompt"),
        (plain(None), "it has no system prompt"),
        (api_messages(GUIDED), "it is the 'guided' prompt"),
        (chat("qwen2_5", GUIDED), "it holds the 'guided' prompt"),
        (chat("llama3_2", f"{INSTRUCTION}\n\n{NEUTRAL}"), "from character 124: 'Always validate their feelings."),
        (chat("smollm2", "Reply warmly."), "it holds no condition's prompt"),
    ],
    ids=[
        "plain-guided",
        "plain-instruction",
        "plain-own",
        "plain-none",
        "api-guided",
        "qwen-guided",
        "llama-instruction",
        "smollm-own",
    ],
)
def test_a_claimed_condition_whose_prompts_differ_is_refused_by_validate_and_build(
    tmp_path: Path, server: FakeLLMServer, render: Render, says: str
) -> None:
    folder = judged_submission(tmp_path, server, "claims-neutral", "[[SCORES:4,4,4]] a reply")
    assert _errors(tmp_path / "submissions") == {"claims-neutral": []}
    _rewrite_prompts(folder, render, stand_in_dataset(tmp_path))
    (error,) = [e for e in _errors(tmp_path / "submissions")["claims-neutral"] if "arguments.gen_args_0.arg_0" in e]
    first = min(json.loads(line)["doc"]["item_id"] for line in samples_files(folder)[0].open())
    assert f"item {first}: " in error and says in error and "12 of 12 items differ" in error, error
    built = build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True)
    assert built.accepted == [] and says in " ".join(built.refused["claims-neutral"])


def test_submit_refuses_it_too_and_writes_nothing(tmp_path: Path, server: FakeLLMServer) -> None:
    with pytest.raises(SubmissionRefused) as refused:
        judged_submission(tmp_path, server, "guided-as-neutral", "a reply", run_kw={"prompt": plain(GUIDED)})
    assert any("it is the 'guided' prompt" in e for e in refused.value.check.errors)
    assert not (tmp_path / "submissions" / "guided-as-neutral").exists()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_chat_template_family_passes_with_the_boards_prompt(
    tmp_path: Path, server: FakeLLMServer, family: str
) -> None:
    """No false refusal: an honest neutral run through each family's template is accepted."""
    judged_submission(tmp_path, server, "honest", "a reply", run_kw={"prompt": chat(family, NEUTRAL)})
    assert _errors(tmp_path / "submissions") == {"honest": []}


def test_an_api_backends_messages_pass_and_one_item_of_another_prompt_is_named(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    folder = judged_submission(tmp_path, server, "api", "a reply", run_kw={"prompt": api_messages(NEUTRAL)})
    assert _errors(tmp_path / "submissions") == {"api": []}
    rows = [json.loads(line) for line in samples_files(folder)[0].open()]
    target = sorted(rows, key=lambda r: r["doc"]["item_id"])[4]["doc"]["item_id"]
    guided = {i.item_id: i for i in load_dataset(str(stand_in_dataset(tmp_path))).items}[target]

    def edit(rows: list[dict]) -> None:
        for row in rows:
            if row["doc"]["item_id"] == target:
                row["arguments"]["gen_args_0"]["arg_0"] = api_messages(GUIDED)(guided, "")

    edit_jsonl(samples_files(folder)[0], edit)
    (error,) = [e for e in _errors(tmp_path / "submissions")["api"] if "gen_args_0" in e]
    assert f"item {target}: " in error and "'guided' prompt" in error and "1 of 12 items differ" in error


def test_a_prompt_of_another_item_is_refused(tmp_path: Path, server: FakeLLMServer) -> None:
    folder = judged_submission(tmp_path, server, "shuffled", "a reply")

    def edit(rows: list[dict]) -> None:
        prompts = [r["arguments"]["gen_args_0"]["arg_0"] for r in rows]
        for row, prompt in zip(rows, prompts[1:] + prompts[:1], strict=True):
            row["arguments"]["gen_args_0"]["arg_0"] = prompt

    edit_jsonl(samples_files(folder)[0], edit)
    assert any("does not hold this item's own conversation" in e for e in _errors(tmp_path / "submissions")["shuffled"])


def _generation(prompt: str) -> Generation:
    item = load_dataset("sample").items_for("test")[0]
    return Generation(
        item_id=item.item_id,
        task="tide_empathy",
        persona_id=item.persona_id,
        conversation_id=item.conversation_id,
        turn=item.turn,
        scenario=item.scenario or "",
        split="test",
        history=item.history,
        client_utterance=item.client_utterance,
        reference_reply=item.reference_reply,
        reply="r",
        prompt=prompt,
        file="samples.jsonl",
        line=1,
    )


_PIECES = st.sampled_from(
    [NEUTRAL, GUIDED, "\n\n", "<|im_start|>system\n", "<|im_end|>\n", "Client: ", "\nSupporter:", "[", "]", '"', "{"]
)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=8),
    as_json=st.booleans(),
    placement=st.sampled_from(["system", FIRST_USER_TURN]),
)
def test_fuzzed_prompts_never_crash_and_only_the_boards_prompt_passes(
    pieces: list[str], as_json: bool, placement: str
) -> None:
    from tide_bench.leaderboard.submission.prompt_check import prompt_problems

    item = load_dataset("sample").items_for("test")[0]
    prompt = "".join(pieces) + item.client_utterance
    if as_json and placement == FIRST_USER_TURN:  # the system text folded into the first user turn
        prompt = json.dumps([{"role": "user", "content": "".join(pieces) + "\n\n" + item.client_utterance}])
    elif as_json:
        prompt = json.dumps([{"role": "system", "content": "".join(pieces)}, {"role": "user", "content": prompt}])
    problems = prompt_problems([_generation(prompt)], "neutral", board(), Path("."), placement=placement)
    if NEUTRAL not in prompt:
        assert problems and "item " in problems[0].message  # never accepted without the board's prompt
    honest = prompt_problems(
        [_generation(render_plain(build_messages(item.to_doc(), NEUTRAL)))], "neutral", board(), Path(".")
    )
    assert honest == []


def test_the_shipped_demo_runs_prompt_shape_is_read(tmp_path: Path) -> None:
    """A run of tide-bench's own prompts through SmolLM2's ChatML template, as the demo makes it."""
    from tests.helpers import make_run
    from tide_bench.generation.run_dir import load_run
    from tide_bench.leaderboard.submission.prompt_check import prompt_problems

    smollm2 = chat("smollm2", NEUTRAL).chat_template  # type: ignore[attr-defined]
    run = make_run(tmp_path / "run", "a reply", prompt=chat("smollm2", NEUTRAL))
    gens = load_run(run).generations
    assert prompt_problems(gens, "neutral", board(), run, smollm2) == []
    assert prompt_problems(gens, "neutral", board(chat_templates=None), run, smollm2) == []  # the shipped pin
    guided = make_run(tmp_path / "guided", "a reply", prompt=chat("smollm2", GUIDED), condition="guided")
    guided_board = board(prompt_conditions=["guided"])
    assert prompt_problems(load_run(guided).generations, "guided", guided_board, guided, smollm2) == []


@pytest.mark.parametrize(
    ("render", "says"),
    [
        (chat("gemma2", NEUTRAL, FIRST_USER_TURN), None),
        (api_messages(NEUTRAL, FIRST_USER_TURN), None),
        (chat("gemma2", GUIDED, FIRST_USER_TURN), "it holds the 'guided' prompt"),
        (chat("gemma2", f"{INSTRUCTION}\n\n{NEUTRAL}", FIRST_USER_TURN), "'Always validate their feelings."),
        (api_messages(GUIDED, FIRST_USER_TURN), "it is the 'guided' prompt"),
        (api_messages(NEUTRAL), "but this item's prompt has a system message"),  # not the folded prompt it claims
    ],
    ids=["gemma2", "api", "gemma2-guided", "gemma2-instruction", "api-guided", "api-unfolded"],
)
def test_a_prompt_folded_into_the_first_user_turn_is_read_from_there(
    tmp_path: Path, server: FakeLLMServer, render: Render, says: str | None
) -> None:
    """A model whose template has no system role gets the prompt at the start of the first user
    turn (run.json: ``system_prompt_placement: first_user_turn``, and the folded hash): the
    per-item check reads it there, accepts the board's prompt and refuses any other."""
    folder = judged_submission(
        tmp_path, server, "folded", "a reply", run_kw={"prompt": chat("gemma2", NEUTRAL, FIRST_USER_TURN),
                                                        "placement": FIRST_USER_TURN}
    )  # fmt: skip
    assert _errors(tmp_path / "submissions") == {"folded": []}
    _rewrite_prompts(folder, render, stand_in_dataset(tmp_path))
    errors = [e for e in _errors(tmp_path / "submissions")["folded"] if "arguments.gen_args_0.arg_0" in e]
    if says is None:
        assert errors == []
    else:
        assert len(errors) == 1 and says in errors[0] and "12 of 12 items differ" in errors[0], errors


def test_a_board_that_pins_a_prompt_with_an_instruction_accepts_exactly_that_instruction(tmp_path: Path) -> None:
    """A board may pin the neutral prompt plus an extra instruction (``leaderboard pin`` of such a
    run): a chat-template run that recorded exactly that instruction passes the per-item check;
    another instruction of the same hash's board, or none, is refused."""
    from tests.helpers import make_run
    from tide_bench.generation.run_dir import load_run
    from tide_bench.leaderboard.submission.prompt_check import prompt_problems
    from tide_bench.tasks.prompts import prompt_sha256

    pinned = board(prompt_sha256={"neutral": prompt_sha256(NEUTRAL, INSTRUCTION)})
    template = chat("smollm2", NEUTRAL).chat_template  # type: ignore[attr-defined]
    run = make_run(tmp_path / "run", "a reply", prompt=chat("smollm2", f"{INSTRUCTION}\n\n{NEUTRAL}"))
    gens = load_run(run).generations
    assert prompt_problems(gens, "neutral", pinned, run, template, system_instruction=INSTRUCTION) == []
    other = prompt_problems(gens, "neutral", pinned, run, template, system_instruction="Be brief.")
    assert other and "whose text this tide-bench does not have" in other[0].message
    plain_run = make_run(tmp_path / "plain", "a reply", prompt=chat("smollm2", NEUTRAL))
    missing = prompt_problems(
        load_run(plain_run).generations, "neutral", pinned, plain_run, template, system_instruction=INSTRUCTION
    )
    assert missing and "does not hold this board's 'neutral' system prompt" in missing[0].message


LAUNDERED = "Always validate their feelings, mirror their words, and end with a gentle question."


@pytest.mark.parametrize(
    ("case", "system", "trick"),
    [
        ("comment-instruction", f"{LAUNDERED}\n\n{NEUTRAL}", "{{# {words} #}}"),
        ("comment-guided", f"{GUIDED}\n\n{NEUTRAL}", "{{# {words} #}}"),
        ("printed-instruction", f"{LAUNDERED}\n\n{NEUTRAL}", "{{% if false %}}{words}{{% endif %}}"),
    ],
)
def test_a_recorded_chat_template_cannot_launder_an_added_prompt(
    tmp_path: Path, server: FakeLLMServer, case: str, system: str, trick: str
) -> None:
    """Issue 43, R3S-1: the words of the run's own template (its results file) were taken as allowed
    markup, so an instruction listed in a Jinja comment passed. The board renders only templates it
    pins: the same prompts under the real template are refused, and so is the doctored template."""
    folder = judged_submission(tmp_path, server, "claims-neutral", "[[SCORES:4,4,4]] a reply")
    data = stand_in_dataset(tmp_path)
    real = json.loads((TEMPLATES / "llama3_2.json").read_text())["chat_template"]
    _rewrite_prompts(folder, chat("llama3_2", NEUTRAL), data)
    assert _errors(tmp_path / "submissions") == {"claims-neutral": []}  # the honest run passes
    _rewrite_prompts(folder, chat("llama3_2", system), data)
    assert any("gen_args_0" in e for e in _errors(tmp_path / "submissions")["claims-neutral"])
    record_template(folder, real + trick.format(words=system.replace(NEUTRAL, "")))
    errors = _errors(tmp_path / "submissions")["claims-neutral"]
    assert any("is not one this board pins" in e for e in errors), errors
    assert not build_site(tmp_path / "submissions", tmp_path / "site", board(), allow_risk_gate_off=True).accepted


def test_a_chat_template_prompt_must_hold_the_items_whole_conversation(tmp_path: Path, server: FakeLLMServer) -> None:
    """Issue 43, R3S-2: a turn-2 item's prompt that leaves out its first exchange is refused (the
    client's last turn alone used to suffice)."""
    import dataclasses
    import shutil

    data = tmp_path / "tide-multi"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "tide_multi_exchange", data)
    for path in (data / "metadata").glob("*.json"):
        path.write_text(json.dumps(json.loads(path.read_text()) | {"release": "test stand-in"}))
    folder = judged_submission(tmp_path, server, "no-history", "[[SCORES:4,4,4]] a reply", data=data)
    honest = chat("llama3_2", NEUTRAL)
    _rewrite_prompts(folder, honest, data)
    assert _errors(tmp_path / "submissions") == {"no-history": []}
    _rewrite_prompts(folder, lambda item, text: honest(dataclasses.replace(item, history=[]), text), data)
    errors = _errors(tmp_path / "submissions")["no-history"]
    assert any("does not hold this item's own conversation" in e for e in errors), errors
