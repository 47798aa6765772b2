"""Cost before spending: calls, tokens and dollars for sync and batch modes, without calling.

Token counts are **estimates** at ~4 characters per token (a heuristic for English; the dry
run says so). Neither SDK offers a token counter that works offline (Anthropic's
``count_tokens`` is an API call; ``tiktoken`` downloads its tables), so none is used. The
fixed part of every call is the system block *plus* the output definition (the rating tool
or JSON schema, about a fifth of each call's input); output tokens use the configuration's
``expected_output_tokens``. With prompt caching (Anthropic) the fixed part is written once
and read by every later call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tide_bench.judging.config import JudgeConfig
from tide_bench.judging.usage import Usage

CHARS_PER_TOKEN = 4.0


def estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN))


@dataclass
class Estimate:
    n_items: int
    n_cached: int
    n_calls: int
    system_tokens: int  # the system block's text
    tool_tokens: int  # the tool / JSON-schema definition sent with every call
    user_tokens: int
    output_tokens: int
    config: JudgeConfig

    @property
    def fixed_tokens(self) -> int:
        """Input every call repeats: the system block and the output definition."""
        return self.system_tokens + self.tool_tokens

    def _usage(self, *, caching: bool) -> Usage:
        system_total = self.fixed_tokens * self.n_calls
        usage = Usage(input_tokens=self.user_tokens, output_tokens=self.output_tokens, calls=self.n_calls)
        if caching and self.n_calls:
            usage.cache_write_tokens = self.fixed_tokens
            usage.cache_read_tokens = system_total - self.fixed_tokens
        else:
            usage.input_tokens += system_total
        return usage

    def per_call_cost(self) -> float:
        """Upper-bound cost of one call (no cache reads), used to stop before a budget is exceeded."""
        p = self.config.prices
        if p is None or not self.n_calls:
            return 0.0
        return (
            (self.fixed_tokens + self.user_tokens / self.n_calls) * p.input
            + self.output_tokens / self.n_calls * p.output
        ) / 1e6

    def as_dict(self) -> dict[str, Any]:
        caching = self.config.prompt_caching and self.config.provider == "anthropic"
        sync = self._usage(caching=caching)
        batch = self._usage(caching=False)
        return {
            "judge": self.config.identity(),
            "n_items": self.n_items,
            "n_cached": self.n_cached,
            "n_calls": self.n_calls,
            "calls_per_item": 1,
            "token_estimate_method": (
                f"estimate: ~{CHARS_PER_TOKEN:g} characters per token (no offline token counter for this provider); "
                f"input per call includes the rating tool/schema ({self.tool_tokens} tokens) but not the provider's "
                "own "
                f"tool-use preamble; output {self.config.expected_output_tokens} tokens per call"
            ),
            "tokens_per_call": {
                "system": self.system_tokens,
                "tool_definition": self.tool_tokens,
                "item": round(self.user_tokens / self.n_calls) if self.n_calls else 0,
            },
            "sync": {"usage": sync.as_dict(), "cost_usd": sync.cost(self.config.prices), "prompt_caching": caching},
            "sync_without_caching": {
                "usage": self._usage(caching=False).as_dict(),
                "cost_usd": self._usage(caching=False).cost(self.config.prices),
            },
            "batch": {"usage": batch.as_dict(), "cost_usd": batch.cost(self.config.prices, batch=True)}
            if self.config.provider == "anthropic"
            else None,
            "prices_usd_per_mtok": None if self.config.prices is None else vars(self.config.prices),
        }


def format_estimate(est: dict[str, Any]) -> str:
    def usd(x: float | None) -> str:
        return "unknown (no price entry for this model)" if x is None else f"${x:,.2f}"

    lines = [
        f"judge: {est['judge']['name']} ({est['judge']['provider']} {est['judge']['model']}, config "
        f"{est['judge']['version']})",
        f"items: {est['n_items']}   already judged (cache): {est['n_cached']}   calls to make: {est['n_calls']} (1 per "
        "item)",
        f"tokens: {est['token_estimate_method']}",
        "",
        f"{'mode':<28}{'input':>12}{'cache write':>13}{'cache read':>13}{'output':>10}   cost",
    ]
    rows = [("sync", est["sync"]), ("sync, no prompt caching", est["sync_without_caching"])]
    if est["batch"]:
        rows.append(("batch (Message Batches)", est["batch"]))
    for label, row in rows:
        u = row["usage"]
        lines.append(
            f"{label:<28}{u['input_tokens']:>12,}{u['cache_write_tokens']:>13,}{u['cache_read_tokens']:>13,}"
            f"{u['output_tokens']:>10,}   {usd(row['cost_usd'])}"
        )
    return "\n".join(lines)
