"""The training text for one example, rendered as evaluation renders it, with its mask proven.

Evaluation (lm-eval's ``HFLM.apply_chat_template``) renders the prompt with
``add_generation_prompt=True`` and the chat-template settings in
:data:`~tide_bench.tasks.prompts.CHAT_TEMPLATE_KWARGS` (thinking off); when the template
raises a jinja ``TemplateError`` (Gemma's "System role not supported") it drops the system
message. tide-bench folds it into the first user turn instead, at evaluation and here alike
(:mod:`tide_bench.tasks.placement`); training then renders the whole conversation with the
reference reply as the assistant turn.

Reply-only loss is right only if that evaluation prompt is the exact beginning of the
conversation, and what follows it is the reply plus the template's end-of-turn marker.
Templates do not promise this: Mistral's moves the system prompt into the *last* user turn
(so it vanishes once a reply follows), Qwen3 without ``enable_thinking=False`` inserts an
empty think block before the reply. :func:`render_example` checks every example and raises
:class:`TemplateMismatch`, naming what the template does, instead of training on a wrong mask.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.core.hashing import sha256_text
from tide_bench.tasks.placement import DROPPED, SYSTEM, place_system, probe_placement
from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS, render_plain

SNIPPET = 40  # characters of context shown around a mismatch (the text is sensitive: keep it short)


class TemplateMismatch(ConfigError):
    """The model's chat template cannot give reply-only labels that match the evaluation prompt."""


@dataclass(frozen=True)
class RenderedExample:
    """``prompt`` is byte-for-byte what evaluation sends; ``completion`` is what the model must learn."""

    prompt: str
    completion: str
    end_of_turn: str
    placement: str  # where the system prompt went: system | first_user_turn | dropped

    @property
    def system_dropped(self) -> bool:
        return self.placement == DROPPED


def uses_chat_template(tokenizer: Any, chat_template: bool) -> bool:
    return bool(chat_template and getattr(tokenizer, "chat_template", None))


def template_text(tokenizer: Any) -> str | None:
    """The exact template the tokenizer applies (a named default resolved), for the card."""
    try:
        return str(tokenizer.get_chat_template())
    except (ValueError, AttributeError):
        return getattr(tokenizer, "chat_template", None)


def template_sha256(tokenizer: Any) -> str | None:
    text = template_text(tokenizer)
    return sha256_text(text) if text else None


def _apply(tokenizer: Any, messages: Sequence[Mapping[str, str]], generation_prompt: bool) -> str:
    return str(
        tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt, **CHAT_TEMPLATE_KWARGS
        )
    )


def render_prompt(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[str, str]:
    """The evaluation prompt and where its system prompt went (``system``, ``first_user_turn``,
    ``dropped``: :mod:`tide_bench.tasks.placement`, the same decision `tide-bench eval` makes)."""
    import jinja2

    placement = probe_placement(lambda m: _apply(tokenizer, m, True))
    placed = place_system(messages, placement)
    if placement == DROPPED:
        placed = [m for m in placed if m["role"] != "system"]
    try:
        return _apply(tokenizer, placed, True), placement
    except jinja2.exceptions.TemplateError as exc:
        raise ConfigError(f"the model's chat template fails on the TIDE prompt: {exc}") from None


def _divergence(prompt: str, full: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(prompt, full, strict=False)) if a != b), min(len(prompt), len(full)))
    return (
        f"at character {at} the evaluation prompt reads {prompt[at : at + SNIPPET]!r} "
        f"but the conversation with the reply reads {full[at : at + SNIPPET]!r}"
    )


def render_example(
    tokenizer: Any, messages: list[dict[str, str]], reply: str, chat_template: bool, item_id: str = ""
) -> RenderedExample:
    """Prompt and completion for one example; raises :class:`TemplateMismatch` when the mask would be wrong."""
    if not uses_chat_template(tokenizer, chat_template):
        eos = tokenizer.eos_token
        if not eos:
            raise ConfigError(
                "the tokenizer has no end-of-sequence token: the model could never learn to stop",
                hint="use a tokenizer with eos_token, or the model's chat template",
            )
        return RenderedExample(render_plain(messages), f" {reply.strip()}{eos}", eos, SYSTEM)
    prompt, placement = render_prompt(tokenizer, messages)
    kept = place_system(messages, placement)
    if placement == DROPPED:
        kept = [m for m in kept if m["role"] != "system"]
    import jinja2

    try:
        full = _apply(tokenizer, [*kept, {"role": "assistant", "content": reply}], False)
    except jinja2.exceptions.TemplateError as exc:
        raise ConfigError(
            f"the model's chat template fails on a conversation with the reply ({item_id}): {exc}"
        ) from None
    where = f" (example {item_id})" if item_id else ""
    if not full.startswith(prompt):
        raise TemplateMismatch(
            f"the chat template does not keep the evaluation prompt as the start of the conversation{where}: "
            f"{_divergence(prompt, full)}. Reply-only labels would train on a prompt the model never sees "
            "at evaluation",
            hint="templates that move the system prompt into the last user turn (Mistral v0.3/Nemo style) do this; "
            "use --no-chat-template, or a model whose template renders earlier turns the same with or without a reply",
        )
    completion = full[len(prompt) :]
    target = reply.strip()
    start = completion.find(target)
    if start < 0:
        raise TemplateMismatch(
            f"the chat template changes the reply text{where}: the rendered assistant turn does not "
            f"contain it verbatim (it begins {completion[:SNIPPET]!r})"
        )
    if completion[:start].strip():
        raise TemplateMismatch(
            f"the chat template puts {completion[:start].strip()[:SNIPPET]!r} between the evaluation prompt and the "
            f"reply{where}: the model would learn to write it, and evaluation would score it",
            hint="thinking templates must render with enable_thinking=False at training and evaluation alike",
        )
    end_of_turn = completion[start + len(target) :]
    if not end_of_turn.strip():
        raise TemplateMismatch(
            f"the chat template adds no end-of-turn marker after the reply{where}: the model would never learn to stop"
        )
    return RenderedExample(prompt, completion, end_of_turn, placement)
