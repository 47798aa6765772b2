"""Progress events the engine reports to its caller (the CLI turns them into a progress bar)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Progress:
    """Items done of total, unscored so far, spend so far, and the transient failures retried so
    far with the latest one's reason (counted as each retry starts: a rate-limit storm shows as
    retries mounting, not as a stalled bar)."""

    done: int
    total: int
    unscored: int
    spent_usd: float | None
    retries: int = 0
    last_retry: str = ""
