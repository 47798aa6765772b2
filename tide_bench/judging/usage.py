"""Token usage and its price: actual cost from the API's usage fields and the price table."""

from __future__ import annotations

from dataclasses import dataclass

from tide_bench.core.records import Count
from tide_bench.judging.config import Prices

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "calls")


@dataclass(slots=True)
class Usage:
    """Tokens of one or more calls. ``input_tokens`` excludes cached prompt tokens."""

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    calls: Count = 0

    def add(self, other: Usage) -> Usage:
        for key in USAGE_KEYS:
            setattr(self, key, getattr(self, key) + getattr(other, key))
        return self

    def as_dict(self) -> dict[str, int]:
        return {  # spelled out: dataclasses.asdict deep-copies, and every record asks
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "calls": self.calls,
        }

    def cost(self, prices: Prices | None, *, batch: bool = False) -> float | None:
        """USD, or None when the model has no price entry (never a made-up number)."""
        if prices is None:
            return None
        usd = (
            self.input_tokens * prices.input
            + self.output_tokens * prices.output
            + self.cache_read_tokens * prices.cache_read
            + self.cache_write_tokens * prices.cache_write
        ) / 1e6
        return usd * (prices.batch if batch else 1.0)
