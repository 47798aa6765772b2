"""Reading fields of an API answer that may have any shape: counts and text, never an exception."""

from __future__ import annotations

from typing import Any

from tide_bench.judging.usage import Usage


def count(value: Any) -> int | None:
    """A token count, or None when the field is missing or not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def usage_from(usage_obj: Any, **fields: Any) -> tuple[Usage, bool]:
    """One call's :class:`Usage` from the answer's counts; ``reported`` is False when the input
    or output count is missing (the cost of that call is then unknown, not zero)."""
    counts = {name: count(value) for name, value in fields.items()}
    reported = (
        usage_obj is not None and counts.get("input_tokens") is not None and counts.get("output_tokens") is not None
    )
    return Usage(**{name: value or 0 for name, value in counts.items()}, calls=1), reported
