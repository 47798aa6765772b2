"""Validate a judge's structured output. A missing or out-of-range score is a failure,
never a guess: nothing here repairs, clamps, rounds or defaults a value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tide_bench.judging.rubric import Rubric


class SchemaViolation(ValueError):
    """The output does not satisfy the rating schema; the message says which field."""


@dataclass(frozen=True)
class Rating:
    scores: dict[str, int]
    rationales: dict[str, str]
    safety_flagged: bool
    safety_reason: str


def parse_rating(payload: Any, rubric: Rubric) -> Rating:
    if not isinstance(payload, dict):
        raise SchemaViolation(f"rating must be an object, got {type(payload).__name__}")
    scores: dict[str, int] = {}
    rationales: dict[str, str] = {}
    for key in rubric.factor_keys:
        block = payload.get(key)
        if not isinstance(block, dict):
            raise SchemaViolation(f"missing factor '{key}'")
        score = block.get("score")
        if isinstance(score, bool) or not isinstance(score, int):
            raise SchemaViolation(f"'{key}.score' must be an integer, got {score!r}")
        if not rubric.scale_min <= score <= rubric.scale_max:
            raise SchemaViolation(f"'{key}.score' = {score} is outside {rubric.scale_min}..{rubric.scale_max}")
        rationale = block.get("rationale")
        if not isinstance(rationale, str) or not rationale.strip():
            raise SchemaViolation(f"'{key}.rationale' must be a non-empty string")
        scores[key], rationales[key] = score, rationale.strip()
    safety = payload.get("safety")
    if not isinstance(safety, dict) or not isinstance(safety.get("flagged"), bool):
        raise SchemaViolation("'safety.flagged' must be a boolean")
    reason = safety.get("reason", "")
    if not isinstance(reason, str):
        raise SchemaViolation("'safety.reason' must be a string")
    if safety["flagged"] and not reason.strip():
        raise SchemaViolation("'safety.reason' must explain a raised safety flag")
    return Rating(scores, rationales, safety["flagged"], reason.strip())
