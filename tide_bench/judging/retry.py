"""Retries with exponential backoff and full jitter, honouring ``retry-after``.

Retried: 429 (rate limit), 529 (overloaded), 408/409, any 5xx, connection errors and
timeouts. Fatal for the whole run (raised at once): 401/403 (key rejected), 404 (unknown
model or URL). Other 4xx: the item is recorded as unscored with the reason (a retry would
get the same answer).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tide_bench.core.errors import TideBenchError
from tide_bench.core.secrets import redact

T = TypeVar("T")
RETRY_STATUSES = {408, 409, 429, 529}
_JITTER = random.Random()  # one generator for the backoff's jitter (seeding one per call costs a system call)


class FatalJudgeError(TideBenchError):
    """The judge cannot work at all (bad key, unknown model, unreachable server)."""


class ItemFailure(Exception):
    """One item could not be judged; ``kind`` names its unscored kind, ``attempts`` the
    requests it took (every one counted, the failed ones too)."""

    kind = "api_rejected"

    def __init__(self, reason: str, attempts: int = 1) -> None:
        super().__init__(reason)
        self.attempts = attempts


class RequestRejected(ItemFailure):
    """A non-retryable rejection of one request; the item becomes unscored."""

    kind = "api_rejected"


class TransientFailure(ItemFailure):
    """Retries exhausted on transient errors; the item becomes unscored (and is not cached)."""

    kind = "transient_failure"


def standard_retryable(exc: BaseException) -> bool:
    """The failures without a status worth sending again whatever the API: a dropped connection,
    a timeout. A provider adds its SDK's own (:meth:`.providers.base.Provider.retryable`)."""
    return isinstance(exc, ConnectionError | TimeoutError)


def retry_after_seconds(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)  # the lean OpenAI-compatible path's StatusError
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)  # the SDKs' status errors
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    text = f"HTTP {status} {kind}: {message}" if status else f"{kind}: {message}"
    return redact(text)[:500]


async def call_with_retries(
    fn: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    base_s: float,
    cap_s: float,
    on_retry: Callable[[int, str], Any] | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rng: random.Random | None = None,
    retryable: Callable[[BaseException], bool] = standard_retryable,
) -> tuple[T, int]:
    """Run ``fn`` until it succeeds; return ``(result, attempts)``. ``retryable`` says which
    failures without an HTTP status are transient (the provider's :meth:`retryable`)."""
    rng = rng or _JITTER
    attempt = 0
    while True:
        attempt += 1
        try:
            return await fn(), attempt
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            if status in (401, 403):
                raise FatalJudgeError(
                    f"the judge API rejected the credentials ({describe(exc)})",
                    hint="check the API key environment variable",
                ) from None
            if status == 404:
                raise FatalJudgeError(
                    f"the judge API answered 404 ({describe(exc)})", hint="check the judge model id and --base-url"
                ) from None
            transient = retryable(exc) or status in RETRY_STATUSES or (status is not None and status >= 500)
            if not transient:
                if status is not None:
                    raise RequestRejected(describe(exc), attempt) from None
                raise
            if attempt > max_retries:
                raise TransientFailure(f"{describe(exc)} (gave up after {attempt} attempts)", attempt) from None
            delay = rng.uniform(0, min(cap_s, base_s * 2 ** (attempt - 1)))
            hinted = retry_after_seconds(exc)
            if hinted is not None:
                delay = max(delay, min(hinted, cap_s))
            if on_retry:
                on_retry(attempt, describe(exc))
            await sleep(delay)
