"""A chat template rendered as transformers renders it, in a sandbox, to check a recorded prompt.

The hf and vllm backends of lm-eval record each prompt as the model's chat template rendered it
(``tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)``). A
leaderboard that holds a run to a prompt condition renders the board's own messages (the
condition's system prompt, the item's history and the client's turn) through the same template
and requires the recorded prompt to equal the rendering: an added instruction, a missing turn or
another condition's prompt then cannot pass, wherever in the markup it sits.

The environment is transformers' own (``utils/chat_template_utils.py``): jinja2's
``ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks`` and ``loopcontrols``,
its ``tojson`` (no HTML escaping), ``raise_exception`` and ``strftime_now``; the template sees
``messages``, ``add_generation_prompt``, the special tokens and the chat-template settings every
TIDE prompt is rendered with (:data:`tide_bench.tasks.prompts.CHAT_TEMPLATE_KWARGS`). A test holds
this rendering equal to transformers' for every template family in ``tests/fixtures``.

Templates that print today's date (Llama 3.x: ``strftime_now('%d %b %Y')``) render differently on
the day a run was made; the date is therefore matched by the shape its format gives (``%d`` two
digits, ``%b`` a month abbreviation, ...), and nothing else in the prompt may differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tide_bench.tasks.prompts import CHAT_TEMPLATE_KWARGS

_DATE_MARK = "\x00strftime:{}\x00"
_DATE_SPLIT = re.compile("\x00strftime:(.*?)\x00", re.S)
# What each strftime directive can print (C locale), as a regular expression.
_DIRECTIVES = {
    "d": r"\d{2}",
    "-d": r"\d{1,2}",
    "e": r"[ \d]\d",
    "m": r"\d{2}",
    "-m": r"\d{1,2}",
    "y": r"\d{2}",
    "Y": r"\d{4}",
    "b": r"[A-Z][a-z]{2}",
    "h": r"[A-Z][a-z]{2}",
    "B": r"[A-Z][a-z]{2,8}",
    "a": r"[A-Z][a-z]{2}",
    "A": r"[A-Z][a-z]{5,8}",
    "H": r"\d{2}",
    "I": r"\d{2}",
    "M": r"\d{2}",
    "S": r"\d{2}",
    "p": r"[AP]M",
    "j": r"\d{3}",
    "%": "%",
}


class TemplateRenderError(ValueError):
    """The template could not be rendered (a syntax error, a sandbox refusal, ``raise_exception``)."""


@dataclass(frozen=True)
class Rendering:
    """What a template renders for one conversation: exact text, or a pattern where it prints a date."""

    text: str
    pattern: re.Pattern[str] | None = None

    def matches(self, recorded: str) -> bool:
        if self.pattern is None:
            return recorded == self.text
        return self.pattern.fullmatch(recorded) is not None

    def first_difference(self, recorded: str) -> int:
        """Where ``recorded`` first departs from the rendering (a printed date read by its shape)."""
        at = 0
        for k, piece in enumerate(_DATE_SPLIT.split(self.text)):
            if k % 2:  # a date: its shape, however long the date printed
                found = re.compile(_date_pattern(piece)).match(recorded, at)
                if found is None:
                    return at
                at = found.end()
                continue
            n = 0
            while n < len(piece) and at + n < len(recorded) and piece[n] == recorded[at + n]:
                n += 1
            if n < len(piece):
                return at + n
            at += n
        return at


def _date_pattern(fmt: str) -> str:
    out, k = [], 0
    while k < len(fmt):
        if fmt[k] != "%":
            out.append(re.escape(fmt[k]))
            k += 1
            continue
        code = fmt[k + 1 : k + 3] if fmt[k + 1 : k + 2] == "-" else fmt[k + 1 : k + 2]
        if code not in _DIRECTIVES:
            raise TemplateRenderError(f"the template prints a date as {fmt!r}: this check cannot read '%{code}'")
        out.append(_DIRECTIVES[code])
        k += 1 + len(code)
    return "".join(out)


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(
    x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@lru_cache(maxsize=32)
def _compiled(template: str) -> Any:
    from jinja2.exceptions import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: _DATE_MARK.format(fmt)
    try:
        return env.from_string(template)
    except TemplateError as exc:
        raise TemplateRenderError(f"the chat template does not compile: {exc}") from None


def render_chat(
    template: str, messages: Sequence[Mapping[str, str]], special_tokens: Mapping[str, str | None]
) -> Rendering:
    """``messages`` through ``template`` with a generation prompt, as lm-eval's hf backend renders
    them; raises :class:`TemplateRenderError` when the template refuses them."""
    from jinja2.exceptions import TemplateError

    try:
        text = _compiled(template).render(
            messages=[dict(m) for m in messages],
            tools=None,
            documents=None,
            add_generation_prompt=True,
            **{k: v for k, v in special_tokens.items() if v is not None},
            **CHAT_TEMPLATE_KWARGS,
        )
    except (TemplateError, TypeError, ValueError, RecursionError) as exc:
        raise TemplateRenderError(f"the chat template cannot render this conversation: {exc}") from None
    if "\x00strftime:" not in text:
        return Rendering(text)
    pieces = _DATE_SPLIT.split(text)
    regex = "".join(re.escape(p) if k % 2 == 0 else _date_pattern(p) for k, p in enumerate(pieces))
    return Rendering(text, re.compile(regex, re.S))
