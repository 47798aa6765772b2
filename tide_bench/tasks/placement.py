"""Where the system prompt goes when a chat template has no system role (issue 29, M2).

Gemma-2's template raises on a system message; lm-eval then drops the message and renders
again, so the task's instruction (the crisis-services sentence included) silently vanished
for such models while run.json recorded the same prompt hash as for every other model.
Some templates do not raise but leave a system message out all the same.

tide-bench decides once per model, by rendering a probe conversation through the very
function that renders the prompts (lm-eval's ``apply_chat_template`` at evaluation, the
tokenizer's at fine-tuning), where the system prompt can go:

``system``           the template renders it (the probe's text is in the output);
``first_user_turn``  it is folded into the start of the first user turn, separated by a blank
                     line, as Gemma-3's own template does; training and evaluation alike;
``dropped``          neither works: the model never sees the instruction. Recorded, hashed, and
                     refused by the boards.

The placement is part of the prompt hash (:func:`tide_bench.tasks.prompts.prompt_sha256`), so
a folded or dropped prompt can never pass for the plain one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

SYSTEM, FIRST_USER_TURN, DROPPED = "system", "first_user_turn", "dropped"
PLACEMENTS = (SYSTEM, FIRST_USER_TURN, DROPPED)
SEPARATOR = "\n\n"
_PROBE_SYSTEM = "tide-bench placement probe: system 7f3a9c"
_PROBE_USER = "tide-bench placement probe: user 7f3a9c"

Render = Callable[[list[dict[str, str]]], Any]


def place_system(messages: Sequence[Mapping[str, str]], placement: str) -> list[dict[str, str]]:
    """The messages as the template gets them: unchanged (``system``, and ``dropped``, which the
    renderer drops itself), or with the system text folded into the first user turn."""
    out = [dict(m) for m in messages]
    if placement != FIRST_USER_TURN:
        return out
    system = "\n\n".join(m["content"] for m in out if m["role"] == "system")
    rest = [m for m in out if m["role"] != "system"]
    if not system:
        return rest
    for m in rest:
        if m["role"] == "user":
            m["content"] = f"{system}{SEPARATOR}{m['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]


def _shows(render: Render, messages: list[dict[str, str]], needle: str) -> bool:
    try:
        rendered = render(messages)
    except Exception:  # a template that raises (jinja's TemplateError, or a renderer's own check)
        return False
    return needle in (rendered if isinstance(rendered, str) else str(rendered))


def probe_placement(render: Render) -> str:
    """Where this renderer can put a system prompt: ``system``, ``first_user_turn`` or ``dropped``."""
    probe = [{"role": "system", "content": _PROBE_SYSTEM}, {"role": "user", "content": _PROBE_USER}]
    if _shows(render, probe, _PROBE_SYSTEM):
        return SYSTEM
    if _shows(render, place_system(probe, FIRST_USER_TURN), _PROBE_SYSTEM):
        return FIRST_USER_TURN
    return DROPPED
