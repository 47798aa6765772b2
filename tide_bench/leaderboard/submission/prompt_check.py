"""The prompt condition, checked against what was run rather than against ``run.json``'s word.

``run.json`` says which prompt condition a run used and hashes the system prompt
(``prompt.prompt_sha256``); the board holds each condition to its pin. Both are claims. The
per-sample records hold what the model was actually sent (lm-eval's ``arguments``:
``gen_args_0.arg_0``), so every item's prompt is read back and compared with the board's
prompt for the claimed condition. Three shapes of prompt, as lm-eval records them:

* **chat messages** (API backends: a JSON list of ``{role, content}``): the system message
  is read exactly;
* **the plain transcript** (no chat template, :func:`tide_bench.tasks.prompts.render_plain`):
  the text before the item's own transcript is the system prompt, read exactly;
* **a chat template's rendering** (hf, vllm, ...: one string in the model's own markup).
  A template cannot be undone in general, so it is run forwards instead: the board renders its
  own messages (the condition's system prompt, the item's history and the client's turn) through
  the run's recorded chat template, and the recorded prompt must equal that rendering
  (:mod:`tide_bench.tasks.chat_render`). The recorded template is the submitter's own file, so
  it is used only when the board pins it by hash, with the special tokens the pin names
  (:mod:`tide_bench.leaderboard.submission.chat_templates`): a template carrying an instruction in a Jinja
  comment, or printing one as text, is not pinned and is refused, naming its hash.

For an exactly read system prompt the hash is recomputed (also split as an added
instruction plus the task's prompt, as ``--system-instruction`` builds it) and compared with
the board's pin; otherwise the pin's text must be one this tide-bench knows. Any item whose
prompt differs refuses the entry, naming the item and the condition whose prompt it matches,
if any.

What this cannot prove: that the recorded prompts are what a model was given, rather than
records rewritten to look so (docs/leaderboard.md, "What a submission is not checked for").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Any

from tide_bench.core.errors import TideBenchError
from tide_bench.generation.samples import Generation
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.submission.chat_templates import PinnedTemplate, load_pinned_templates, template_sha256
from tide_bench.leaderboard.submission.problems import Problem, relative
from tide_bench.tasks.chat_render import Rendering, TemplateRenderError, render_chat
from tide_bench.tasks.placement import FIRST_USER_TURN, SEPARATOR, SYSTEM, place_system
from tide_bench.tasks.prompts import PROMPT_CONDITIONS, build_messages, prompt_sha256, render_plain


@lru_cache(maxsize=8)
def condition_text(condition: str) -> str:
    """The system prompt of a condition as this tide-bench's task YAMLs define it."""
    from tide_bench.tasks.registry import system_prompt

    return system_prompt(condition).strip()


@lru_cache(maxsize=16)
def installed_prompt_hash(condition: str, placement: str = SYSTEM) -> str:
    """The prompt hash of a condition as this tide-bench's task YAMLs define it (no extra
    instruction), with the system prompt at ``placement`` (:mod:`tide_bench.tasks.placement`)."""
    return prompt_sha256(condition_text(condition), placement=placement)


def board_prompt_hash(board: BoardConfig, condition: str, placement: str = SYSTEM) -> str:
    """The prompt hash a board holds a condition to: its pin, else this tide-bench's prompt. For a
    model whose template has no system role (the prompt folded into the first user turn), the
    same words placed there, when the pin is this tide-bench's prompt."""
    pinned = (board.prompt_sha256 or {}).get(condition) or installed_prompt_hash(condition)
    if placement != SYSTEM and pinned == installed_prompt_hash(condition):
        return installed_prompt_hash(condition, placement)
    return pinned


@dataclass(frozen=True)
class ReadPrompt:
    """One item's prompt as read back: ``system`` is the exact system text when the shape
    allows it (``messages``, ``plain``; None when it has none), ``text`` the raw prompt."""

    kind: str  # "messages" | "plain" | "chat"
    text: str
    system: str | None = None
    own_turns: bool = True  # the prompt holds this item's own conversation
    system_message: bool = False  # chat messages that open with a system message


def _messages(raw: str) -> list[dict[str, Any]] | None:
    """A prompt recorded as chat messages (JSON, possibly inside a one-string list)."""
    if not raw.startswith("["):
        return None
    try:
        value: Any = json.loads(raw)
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            value = json.loads(value[0])
    except (ValueError, RecursionError):
        return None
    ok = isinstance(value, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
    )
    return value if ok and value else None


def _doc(g: Generation) -> dict[str, Any]:
    return {"history": g.history, "client_utterance": g.client_utterance}


def _unfold(turns: list[dict[str, str]], own: list[dict[str, str]]) -> tuple[str | None, list[dict[str, str]]]:
    """A system prompt folded into the first user turn (:func:`tide_bench.tasks.placement.place_system`),
    taken back out: (the system text, the turns without it); (None, turns) when none is folded."""
    first = next((k for k, m in enumerate(turns) if m["role"] == "user"), None)
    mine = next((m["content"] for m in own if m["role"] == "user"), None)
    if first is None or mine is None or not turns[first]["content"].endswith(SEPARATOR + mine):
        return None, turns
    content = turns[first]["content"]
    unfolded = [*turns[:first], {"role": "user", "content": mine}, *turns[first + 1 :]]
    return content[: -len(mine) - len(SEPARATOR)].strip() or None, unfolded


def read_prompt(g: Generation, placement: str = SYSTEM) -> ReadPrompt:
    """Read one item's recorded prompt into its shape (see the module docstring). With the
    ``first_user_turn`` placement, chat messages without a system message have the system prompt
    at the start of the first user turn, and it is read from there."""
    raw = g.prompt
    messages = _messages(raw)
    if messages is not None:
        has_system = messages[0]["role"] == "system"
        turns = [{"role": m["role"], "content": m["content"].strip()} for m in messages[1 if has_system else 0 :]]
        own = [{"role": m["role"], "content": m["content"].strip()} for m in build_messages(_doc(g), None)]
        system = messages[0]["content"].strip() if has_system else None
        if placement == FIRST_USER_TURN and not has_system:
            system, turns = _unfold(turns, own)
        return ReadPrompt("messages", raw, system, turns == own, has_system)
    tail = render_plain(build_messages(_doc(g), None))
    if raw == tail:
        return ReadPrompt("plain", raw, None)
    if raw.endswith("\n\n" + tail):
        return ReadPrompt("plain", raw, raw[: -len(tail) - 2].strip())
    return ReadPrompt("chat", raw)


def _splits(system: str) -> list[tuple[str, str | None]]:
    """(task prompt, extra instruction) readings of a system text: ``--system-instruction``
    puts the instruction first, a blank line, then the task's prompt."""
    readings: list[tuple[str, str | None]] = [(system, None)]
    start = 0
    while (k := system.find("\n\n", start)) != -1:
        readings.append((system[k + 2 :].strip(), system[:k].strip()))
        start = k + 2
    return readings


def _matching_condition(system: str | None) -> str:
    """Which condition an exactly read system text is, in words."""
    if system is None:
        return "it has no system prompt"
    for condition in PROMPT_CONDITIONS:
        text = condition_text(condition)
        if system == text:
            return f"it is the {condition!r} prompt"
        if system.endswith("\n\n" + text):
            return f"it is the {condition!r} prompt with an added instruction"
    return "it matches no condition's prompt"


@dataclass(frozen=True)
class ChatTemplate:
    """The chat template a run recorded, as the board may use it: ``pinned`` when the board's list
    holds its hash (then rendered with the pin's special tokens), else ``problem`` says why not."""

    text: str | None
    pinned: PinnedTemplate | None = None
    problem: str | None = None


def board_template(board: BoardConfig, recorded: str | None) -> ChatTemplate:
    """The run's recorded chat template checked against the board's pins."""
    if recorded is None:
        return ChatTemplate(
            None,
            problem="the prompt is a chat template's rendering, but the run records no chat template (lm-eval's "
            "results file, chat_template), so the board cannot render its own prompt to compare",
        )
    try:
        pins = load_pinned_templates(board.chat_templates_path())
    except TideBenchError as exc:
        return ChatTemplate(recorded, problem=f"the board's list of chat templates cannot be read: {exc}")
    digest = template_sha256(recorded)
    if digest not in pins:
        return ChatTemplate(
            recorded,
            problem=f"the run's chat template (sha256 {digest[:16]}...) is not one this board pins: a maintainer "
            "adds it after reading it in the model's tokenizer_config.json at the recorded revision "
            '(`tide-bench leaderboard template-hash`, docs/leaderboard.md "Chat templates")',
        )
    return ChatTemplate(recorded, pins[digest])


@lru_cache(maxsize=8192)
def _rendering(template: str, messages: str, tokens: str) -> Rendering | str:
    """A pinned template's rendering of one conversation (JSON arguments: hashable, and equal for
    equal conversations, so a board's entries share the renderings of its items); the reason as
    text when the template refuses the conversation."""
    try:
        return render_chat(template, json.loads(messages), json.loads(tokens))
    except TemplateRenderError as exc:
        return str(exc)


def _render(template: ChatTemplate, g: Generation, system: str | None, placement: str) -> Rendering | str:
    assert template.text is not None and template.pinned is not None
    messages = place_system(build_messages(_doc(g), system), placement)
    return _rendering(template.text, json.dumps(messages), json.dumps(template.pinned.tokens, sort_keys=True))


def _holds_in_order(text: str, turns: Sequence[str]) -> bool:
    """Whether every turn's text appears in ``text``, in the conversation's order."""
    at = 0
    for turn in turns:
        found = text.find(turn.strip(), at)
        if found < 0:
            return False
        at = found + len(turn.strip())
    return True


def _chat_problem(
    g: Generation, condition: str, known: Sequence[str], template: ChatTemplate, placement: str
) -> str | None:
    """Why a chat-template prompt is not the pinned template's rendering of the board's messages."""
    if not _holds_in_order(g.prompt, [*(m["content"] for m in g.history), g.client_utterance]):
        return "the recorded prompt does not hold this item's own conversation"
    if template.problem is not None:
        return template.problem
    rendering = _render(template, g, "\n\n".join(known), placement)
    if isinstance(rendering, str):
        return rendering
    if rendering.matches(g.prompt):
        return None
    for other in PROMPT_CONDITIONS:
        found = _render(template, g, condition_text(other), placement)
        if other != condition and not isinstance(found, str) and found.matches(g.prompt):
            return f"the prompt does not hold this board's {condition!r} system prompt: it holds the {other!r} prompt"
    if any(text not in g.prompt for text in known):
        found_in = [c for c in PROMPT_CONDITIONS if condition_text(c) in g.prompt]
        held = f"it holds the {found_in[0]!r} prompt" if found_in else "it holds no condition's prompt"
        return f"the prompt does not hold this board's {condition!r} system prompt: {held}"
    at = rendering.first_difference(g.prompt)
    return (
        f"besides this board's {condition!r} system prompt and the conversation, the prompt holds text the chat "
        f"template does not render (from character {at}: {g.prompt[at : at + 60]!r}): an added instruction, or "
        "turns out of order"
    )


def _item_problem(
    g: Generation,
    condition: str,
    expected: str,
    known: Sequence[str] | None,
    template: ChatTemplate,
    placement: str = SYSTEM,
) -> str | None:
    """Why one item's prompt is not the board's prompt for ``condition`` (None: it is). ``known``:
    the texts the pinned prompt is made of (the task prompt, and the pinned extra instruction if
    any), when this tide-bench can name them."""
    read = read_prompt(g, placement)
    if not read.own_turns:
        return "the recorded prompt does not hold this item's own conversation"
    if placement == FIRST_USER_TURN and read.system_message:
        return (
            "run.json says the system prompt was folded into the first user turn (prompt.system_prompt_placement), "
            "but this item's prompt has a system message"
        )
    if read.kind != "chat":
        if read.system is not None and any(
            prompt_sha256(s, i, placement=placement) == expected for s, i in _splits(read.system)
        ):
            return None
        return f"the system prompt is not this board's {condition!r} prompt: {_matching_condition(read.system)}"
    if known is None:
        return (
            f"the board pins a {condition!r} prompt whose text this tide-bench does not have, so a chat-template "
            "prompt cannot be compared with it: validate with the tide-bench release that pinned the board"
        )
    return _chat_problem(g, condition, known, template, placement)


def _known_texts(expected: str, system_instruction: str | None, placement: str = SYSTEM) -> tuple[str, ...] | None:
    """The texts a pinned prompt hash is made of: one condition's task prompt, or (a board that
    pins a prompt with an extra instruction) the instruction the run recorded and the task prompt,
    when exactly they hash to the pin (at the run's ``placement``). None when this tide-bench
    cannot name them."""
    for c in PROMPT_CONDITIONS:
        if installed_prompt_hash(c, placement) == expected:
            return (condition_text(c),)
    instruction = (system_instruction or "").strip()
    for c in PROMPT_CONDITIONS if instruction else ():
        if prompt_sha256(condition_text(c), instruction, placement=placement) == expected:
            return (instruction, condition_text(c))
    return None


def prompt_problems(
    gens: Sequence[Generation],
    condition: str,
    board: BoardConfig,
    root: Path,
    chat_template: str | None = None,
    system_instruction: str | None = None,
    placement: str = SYSTEM,
) -> list[Problem]:
    """One problem naming the first item whose recorded prompt is not the board's prompt for
    the claimed ``condition`` (with how many items differ), or none. ``system_instruction``: the
    extra instruction run.json records, which only a board that pins it accepts. ``placement`` is
    where the run put the system prompt (run.json's ``prompt.system_prompt_placement``): a prompt
    folded into the first user turn is read from there and hashed as folded."""
    expected = board_prompt_hash(board, condition, placement)
    known = _known_texts(expected, system_instruction, placement)
    template = board_template(board, chat_template)
    differing: list[tuple[Generation, str]] = []
    for g in sorted(gens, key=attrgetter("item_id")):
        why = _item_problem(g, condition, expected, known, template, placement)
        if why is not None:
            differing.append((g, why))
    if not differing:
        return []
    g, why = differing[0]
    return [
        Problem(
            f"item {g.item_id}: {why} ({len(differing)} of {len(gens)} items differ): the condition is checked "
            "against the prompts the run recorded; evaluate with the board's prompt and no extra instruction",
            relative(g.file, root),
            g.line,
            "arguments.gen_args_0.arg_0",
        )
    ]
