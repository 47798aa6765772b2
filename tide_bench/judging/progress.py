"""Progress events the engine reports to its caller (the CLI turns them into a progress bar)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Progress:
    done: int
    total: int
    unscored: int
    spent_usd: float | None
