"""What one API answer means for an item: one rule, shared by synchronous and batch judging.

A provider adapter turns an HTTP answer into a :class:`CallOutcome` (never raising on an
odd shape); :func:`settle` then decides, for both modes alike:

==============================  =====================================================
the answer                      what happens to the item
==============================  =====================================================
not an API answer (HTML, ...)   unscored ``api_rejected`` (not cached: the next run asks again)
the judge refused               unscored ``refusal``
the provider's filter stopped   unscored ``content_filtered``
no tool call / not JSON         ask again (up to ``schema_retries``), then ``malformed_output``
a rating that fails the schema  ask again (up to ``schema_retries``), then ``schema_violation``
a valid rating                  scored
==============================  =====================================================

An answer holds no secret once read: :class:`CallOutcome` scrubs every secret the process knows
(the judge's key, a custom key variable, the base URL's credentials and the header token they
become) from everything the server sent, whichever provider, mode or command read it. A server
that echoes its request headers into a rationale therefore writes ``[REDACTED]`` to the
judgments, the cache, the risk labels and every page built from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tide_bench.core.secrets import scrub_json
from tide_bench.judging.parse import Rating, SchemaViolation, parse_rating
from tide_bench.judging.rubric import Rubric
from tide_bench.judging.usage import Usage


@dataclass
class CallOutcome:
    """One API answer, interpreted: a payload to validate, or why there is none."""

    payload: Any | None = None
    refusal: str | None = None  # the model declined
    filtered: str | None = None  # the provider's content filter stopped it
    malformed: str | None = None  # an API answer without a usable tool call / JSON
    rejected: str | None = None  # not an answer of this API at all (HTML, an error object, ...)
    usage: Usage = field(default_factory=lambda: Usage(calls=1))
    usage_reported: bool = True  # False: the answer carried no token counts (the budget then assumes the worst)
    served_model: str | None = None  # the model the API says answered (message.model / completion.model)

    def __post_init__(self) -> None:
        for name in ("payload", "refusal", "filtered", "malformed", "rejected", "served_model"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, scrub_json(value))


@dataclass(frozen=True)
class Unscored:
    """A final outcome without scores; ``kind`` is one of ``records.UNSCORED_KINDS``."""

    kind: str
    reason: str


@dataclass(frozen=True)
class Retry:
    """Worth asking again (the judge may answer properly next time); the kind if it never does."""

    kind: str
    reason: str


def settle(outcome: CallOutcome, rubric: Rubric) -> Rating | Unscored | Retry:
    if outcome.rejected:
        return Unscored("api_rejected", outcome.rejected)
    if outcome.refusal:
        return Unscored("refusal", outcome.refusal)
    if outcome.filtered:
        return Unscored("content_filtered", outcome.filtered)
    if outcome.malformed:
        return Retry("malformed_output", outcome.malformed)
    try:
        return parse_rating(outcome.payload, rubric)
    except SchemaViolation as exc:
        return Retry("schema_violation", str(exc))
