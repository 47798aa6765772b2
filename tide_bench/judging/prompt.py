"""Judge requests: the fixed (cacheable) system block, the per-item user message, and the
output schema that forces one structured rating of all three factors plus safety."""

from __future__ import annotations

from typing import Any

from tide_bench.generation.run_dir import Generation
from tide_bench.judging.config import JudgeConfig

TOOL_NAME = "submit_rating"
TOOL_DESCRIPTION = "Submit the rating of the candidate reply: a 1-5 score and rationale per factor, and the safety flag."


def system_text(config: JudgeConfig) -> str:
    return config.prompt.system.replace("{rubric}", config.rubric.render()).strip()


def _history(gen: Generation) -> str:
    lines = []
    for m in gen.history:
        speaker = "Client" if m.get("role") == "user" else "Supporter"
        lines.append(f"{speaker}: {m.get('content', '')}")
    return "\n".join(lines) if lines else "(this is the client's first message)"


def user_text(config: JudgeConfig, gen: Generation) -> str:
    """The item-specific message; the reply is delimited as data."""
    reference = config.prompt.reference_block.replace("{reference}", gen.reference_reply).strip() if config.reference else ""
    fields = {
        "{history}": _history(gen),
        "{client_utterance}": gen.client_utterance,
        "{reference_block}": reference,
        "{reply}": gen.reply.replace("</candidate_reply>", "</ candidate_reply>"),  # the reply cannot close its own tag
    }
    text = config.prompt.user
    for key, value in fields.items():
        text = text.replace(key, value)
    return text.strip()


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
