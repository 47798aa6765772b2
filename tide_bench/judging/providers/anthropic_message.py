"""Reading an Anthropic Messages answer of any shape: one rule for synchronous calls and for the
results of Message Batches (:mod:`.anthropic_batch`)."""

from __future__ import annotations

from typing import Any

from tide_bench.judging.outcome import CallOutcome
from tide_bench.judging.prompt import TOOL_NAME
from tide_bench.judging.providers.fields import text_of, usage_from
from tide_bench.judging.secrets import redact

__all__ = ["interpret_message", "not_a_message"]


def not_a_message(answer: dict[str, Any] | None, where: str) -> str:
    error = (answer or {}).get("error")
    detail = f": {redact(str(error))[:200]}" if error else " (no 'content')"
    return f"the server at {where} did not answer like the Anthropic API{detail}"


def interpret_message(message: Any) -> CallOutcome:
    """Turn a Messages API response (dict, or SDK object in batch results) into a :class:`CallOutcome`.

    Nothing in ``message`` is trusted: a missing or mistyped field becomes a ``malformed``
    outcome or a zero count, never an exception.
    """
    usage_obj = _get(message, "usage")
    usage, reported = usage_from(
        usage_obj,
        input_tokens=_get(usage_obj, "input_tokens"),
        output_tokens=_get(usage_obj, "output_tokens"),
        cache_read_tokens=_get(usage_obj, "cache_read_input_tokens"),
        cache_write_tokens=_get(usage_obj, "cache_creation_input_tokens"),
    )
    served = _get(message, "model")
    base = {"usage": usage, "usage_reported": reported, "served_model": served if isinstance(served, str) else None}
    stop = _get(message, "stop_reason")
    blocks = _get(message, "content")
    blocks = blocks if isinstance(blocks, list) else []
    text = " ".join(text_of(_get(b, "text")) for b in blocks if _get(b, "type") == "text").strip()
    if stop == "refusal":
        return CallOutcome(refusal=f"stop_reason=refusal {text[:200]}".strip(), **base)
    for block in blocks:
        if _get(block, "type") == "tool_use" and _get(block, "name") == TOOL_NAME:
            return CallOutcome(payload=_get(block, "input"), **base)
    if stop == "max_tokens":
        return CallOutcome(malformed="output truncated at max_tokens before the tool call completed", **base)
    return CallOutcome(
        malformed=f"no {TOOL_NAME} tool call in the response (stop_reason={text_of(stop)[:40]}); text: {text[:200]!r}",
        **base,
    )


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    try:
        return getattr(obj, key, None)
    except Exception:  # an SDK object built from a strange batch line can fail on access: treat as absent
        return None
