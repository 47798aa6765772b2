"""Judge requests: the fixed (cacheable) system block, the per-item user message, and the
output schema that forces one structured rating of all three factors plus safety.

The data fence: every item field (history, client turn, reference, reply) is written with
``&``, ``<`` and ``>`` as ``&amp;``, ``&lt;`` and ``&gt;`` before it enters the message, so
no text from a conversation or a reply can open or close a tag, in any casing, spacing or
with zero-width characters: the only ``<`` in the message are the template's own. Fields
are substituted in one pass, so a ``{reply}`` typed inside a client turn stays literal.
"""

from __future__ import annotations

import html
import re
from typing import Any

from tide_bench.generation.run_dir import Generation
from tide_bench.judging.config import JudgeConfig

TOOL_NAME = "submit_rating"
TOOL_DESCRIPTION = "Submit the rating of the candidate reply: a 1-5 score and rationale per factor, and the safety flag."
_FIELD = re.compile(r"\{(history|client_utterance|reference_block|reply|reference)\}")


def system_text(config: JudgeConfig) -> str:
    return config.prompt.system.replace("{rubric}", config.rubric.render()).strip()


def fence(text: str) -> str:
    """Item text as data: ``&``, ``<`` and ``>`` escaped, so it cannot form a tag."""
    return html.escape(text, quote=False)


def _fill(template: str, fields: dict[str, str]) -> str:
    """Substitute ``{name}`` placeholders in one pass (values are never scanned again)."""
    return _FIELD.sub(lambda m: fields.get(m.group(1), m.group(0)), template)


def _history(gen: Generation) -> str:
    lines = []
    for m in gen.history:
        speaker = "Client" if m.get("role") == "user" else "Supporter"
        lines.append(f"{speaker}: {fence(str(m.get('content', '')))}")
    return "\n".join(lines) if lines else "(this is the client's first message)"


def user_text(config: JudgeConfig, gen: Generation) -> str:
    """The item-specific message; every item field is fenced as data."""
    reference = _fill(config.prompt.reference_block, {"reference": fence(gen.reference_reply)}).strip() if config.reference else ""
    fields = {
        "history": _history(gen),
        "client_utterance": fence(gen.client_utterance),
        "reference_block": reference,
        "reply": fence(gen.reply),
    }
    return _fill(config.prompt.user, fields).strip()


def rating_schema(config: JudgeConfig) -> dict[str, Any]:
    """JSON schema of a rating (strict-mode compatible: enums, no min/max keywords)."""
    levels = list(range(config.rubric.scale_min, config.rubric.scale_max + 1))
    factor = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "enum": levels},
            "rationale": {"type": "string"},
        },
        "required": ["score", "rationale"],
        "additionalProperties": False,
    }
    properties: dict[str, Any] = {key: factor for key in config.rubric.factor_keys}
    properties["safety"] = {
        "type": "object",
        "properties": {"flagged": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["flagged", "reason"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": properties,
        "required": [*config.rubric.factor_keys, "safety"],
        "additionalProperties": False,
    }


def output_spec(config: JudgeConfig) -> dict[str, Any]:
    """What every call sends besides the messages to force a structured rating: the tool
    (Anthropic) or the response format (OpenAI and compatible servers). The cost estimate
    counts it too, since it is billed as input on every call."""
    if config.provider == "anthropic":
        return {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": rating_schema(config)}
    return {"type": "json_schema", "json_schema": {"name": "tide_rating", "strict": True, "schema": rating_schema(config)}}
